//! Loop budgets: a located fault instead of a silently shortened loop on devices that cap
//! the loop iterations of a thread (llvmpipe, under lavapipe and wgpu).
//!
//! llvmpipe gives each shader invocation one budget of 65,535 loop iterations shared by all
//! of its loops: its loop limiter counts down at the end of every iteration of every loop and
//! is never reset, and when it reaches zero the running loop exits as if its condition were
//! false (a 70,000-step `for` stops at 65,535; two loops of 40,000 stop together at 65,535).
//! Nesting a loop into an outer one therefore cannot help, and trip counts are rarely known
//! before the launch, so this pass makes an exhausted budget *visible*: after every
//! outermost loop of the kernel body, and after every statement calling a helper that loops,
//! it runs a *canary*
//!
//! ```text
//! let base = block_idx_x; let c = mut base;
//! while c < base + 2 do c := c + 1 done;        (bounds unknown to the device compiler,
//! if c <> base + 2 then trap "..."               so it stays a loop with the limiter)
//! ```
//!
//! A spent budget stops every later loop after one iteration, so the first canary after the
//! exhaustion traps, located at the loop (or call) before it; the runtime turns the trap
//! into a fault. A thread whose loops end within two iterations of the budget faults though
//! its values were right (the canary's own two iterations come out of the same budget).
//! Helpers are left alone: a canary inside a helper called in a loop would eat the budget.

use crate::intrinsics::{Axis, Geometry};
use crate::ir::build::{add, assign, geometry, lit_i32, while_};
use crate::ir::{Block, Expr, ExprKind, FuncId, Kernel, LValue, Stmt, StmtKind, Trap, Ty, VarId};
use crate::ir::{VarInfo, build};
use crate::types::BinOp;

/// llvmpipe's budget of loop iterations per thread (gallivm's `LP_MAX_TGSI_LOOP_ITERATIONS`).
pub const LLVMPIPE_LOOP_BUDGET: u32 = 65_535;

/// `kernel` with a canary after each outermost loop (see the module docs); a kernel without
/// loops comes back unchanged.
pub fn guard_loops(kernel: &Kernel, budget: u32) -> Kernel {
    let mut k = kernel.clone();
    let mut looping = vec![false; k.functions.len()];
    // Callees come before callers.
    for (i, f) in k.functions.iter().enumerate() {
        looping[i] = block_loops(&f.body, &looping);
    }
    let next_code = kernel
        .traps()
        .iter()
        .map(|(t, _)| t.code)
        .max()
        .unwrap_or(0)
        + 1;
    let mut g = Guard {
        vars: std::mem::take(&mut k.vars),
        looping,
        next_code,
        message: format!(
            "this loop reached the device's limit of {budget} loop iterations per thread \
             (all loops of a thread together; llvmpipe stops loops there, so the results \
             would be wrong)"
        ),
    };
    k.body = g.block(std::mem::take(&mut k.body));
    k.vars = g.vars;
    unknown_true_conditions(&mut k.body);
    for f in &mut k.functions {
        unknown_true_conditions(&mut f.body);
    }
    k
}

/// Every `while true` of `block` gets a condition the device compiler cannot prove true
/// (`block_idx_x <> -1`): after a `while true` without a `break` it removes the rest as
/// unreachable, canary included, so when llvmpipe's limiter ended the loop the kernel
/// finished silently (`while true do x := x + 1 done` returned on lavapipe).
fn unknown_true_conditions(block: &mut Block) {
    for s in block {
        match &mut s.kind {
            StmtKind::While { cond, body, .. } => {
                if matches!(cond.kind, ExprKind::Lit(crate::types::Literal::Bool(true))) {
                    *cond = build::bin(
                        BinOp::Ne,
                        geometry(Geometry::BlockIdx(Axis::X)),
                        lit_i32(-1),
                    );
                }
                unknown_true_conditions(body);
            }
            StmtKind::For { body, .. } | StmtKind::Block(body) => unknown_true_conditions(body),
            StmtKind::If {
                then_block,
                else_block,
                ..
            } => {
                unknown_true_conditions(then_block);
                unknown_true_conditions(else_block);
            }
            StmtKind::Match { arms, .. } => {
                for arm in arms {
                    unknown_true_conditions(&mut arm.body);
                }
            }
            _ => {}
        }
    }
}

struct Guard {
    vars: Vec<VarInfo>,
    /// Per helper: whether it runs a loop (directly or through a call).
    looping: Vec<bool>,
    next_code: u32,
    message: String,
}

impl Guard {
    fn block(&mut self, block: Block) -> Block {
        let mut out = Vec::with_capacity(block.len());
        for mut s in block {
            let span = s.span;
            let calls_loop = own_exprs(&s).iter().any(|e| expr_loops(e, &self.looping));
            let guarded = match &mut s.kind {
                StmtKind::For { .. } | StmtKind::While { .. } => true,
                _ if calls_loop => true,
                StmtKind::If {
                    then_block,
                    else_block,
                    ..
                } => {
                    *then_block = self.block(std::mem::take(then_block));
                    *else_block = self.block(std::mem::take(else_block));
                    false
                }
                StmtKind::Match { arms, .. } => {
                    for arm in arms {
                        arm.body = self.block(std::mem::take(&mut arm.body));
                    }
                    false
                }
                StmtKind::Block(b) => {
                    *b = self.block(std::mem::take(b));
                    false
                }
                _ => false,
            };
            out.push(s);
            if guarded {
                self.canary(span, &mut out);
            }
        }
        out
    }

    fn canary(&mut self, span: crate::diag::Span, out: &mut Block) {
        let base = self.fresh("loop_canary_base", false);
        let count = self.fresh("loop_canary", true);
        let read = |v: VarId| Expr::new(ExprKind::Var(v), Ty::I32);
        let block_idx = geometry(Geometry::BlockIdx(Axis::X));
        let end = || add(read(base), lit_i32(2));
        let at = |kind: StmtKind| Stmt { kind, span };
        out.push(at(StmtKind::Let {
            var: base,
            init: Some(block_idx),
        }));
        out.push(at(StmtKind::Let {
            var: count,
            init: Some(read(base)),
        }));
        let mut step = assign(count, add(read(count), lit_i32(1)));
        step.span = span;
        let mut lp = while_(build::lt(read(count), end()), vec![step]);
        lp.span = span;
        out.push(lp);
        let code = self.next_code;
        self.next_code += 1;
        out.push(at(StmtKind::If {
            cond: build::bin(BinOp::Ne, read(count), end()),
            then_block: vec![at(StmtKind::Trap(Trap {
                code,
                message: self.message.clone(),
            }))],
            else_block: Vec::new(),
        }));
    }

    fn fresh(&mut self, name: &str, mutable: bool) -> VarId {
        let v = VarId(self.vars.len() as u32);
        self.vars.push(VarInfo {
            name: name.to_string(),
            ty: Ty::I32,
            mutable,
            span: crate::diag::Span::DUMMY,
        });
        v
    }
}

/// The expressions a statement evaluates itself (not those of its nested blocks).
fn own_exprs(s: &Stmt) -> Vec<&Expr> {
    fn place<'e>(p: &'e LValue, out: &mut Vec<&'e Expr>) {
        match p {
            LValue::Var(_) => {}
            LValue::Index { index, .. } => out.push(index),
            LValue::Field { base, .. } => place(base, out),
        }
    }
    let mut out = Vec::new();
    match &s.kind {
        StmtKind::Let { init: Some(e), .. } | StmtKind::Expr(e) | StmtKind::Return(Some(e)) => {
            out.push(e)
        }
        StmtKind::Assign { place: p, value } => {
            place(p, &mut out);
            out.push(value);
        }
        StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => out.push(cond),
        StmtKind::For { start, end, .. } => out.extend([start, end]),
        StmtKind::Match { scrutinee, .. } => out.push(scrutinee),
        _ => {}
    }
    out
}

/// Whether evaluating `e` calls a helper that loops.
fn expr_loops(e: &Expr, looping: &[bool]) -> bool {
    let sub = |es: &[Expr]| es.iter().any(|x| expr_loops(x, looping));
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => false,
        ExprKind::Call {
            func: FuncId(f),
            args,
        } => looping[*f as usize] || sub(args),
        ExprKind::Binary { lhs, rhs, .. } => expr_loops(lhs, looping) || expr_loops(rhs, looping),
        ExprKind::Unary { operand: x, .. }
        | ExprKind::Index { index: x, .. }
        | ExprKind::Field { base: x, .. }
        | ExprKind::Tag(x)
        | ExprKind::Payload { value: x, .. } => expr_loops(x, looping),
        ExprKind::Record { fields, .. } | ExprKind::Ctor { fields, .. } => sub(fields),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => [cond, then_value, else_value]
            .iter()
            .any(|x| expr_loops(x, looping)),
        ExprKind::Intrinsic { args, .. } => sub(args),
    }
}

/// Whether running `block` may run a loop.
fn block_loops(block: &Block, looping: &[bool]) -> bool {
    let mut found = false;
    crate::ir::visit::for_each_stmt(block, &mut |s| {
        found |= matches!(s.kind, StmtKind::For { .. } | StmtKind::While { .. })
            || own_exprs(s).iter().any(|e| expr_loops(e, looping));
    });
    found
}
