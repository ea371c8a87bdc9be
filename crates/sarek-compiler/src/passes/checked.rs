//! Checked mode: every vector, shared- and local-array access is bounds-checked and every
//! integer division or `mod` checks its divisor, on every target, through the existing trap
//! mechanism ([`StmtKind::Trap`]: the generators record the code in the trap status word and
//! the runtime turns it into a located fault after the launch).
//!
//! One IR-to-IR pass serves every generator, so the checks mean the same everywhere. Before a
//! statement that evaluates `a.(e)` (read, store or atomic) the pass writes
//!
//! ```text
//! let chk = e;                                  (unless e is already a variable or literal)
//! let chk_ok = 0 <= chk && chk < length a;
//! if not chk_ok then trap "out-of-bounds access to `a`";
//! ```
//!
//! and the access becomes `a.(if chk_ok then chk else 0)`: a trap does not stop the thread
//! (see [`StmtKind::Trap`]), so the access that follows must stay inside the array. A
//! divisor gets `if d = 0 then trap`; the division itself already has a defined result on
//! every target (`x / 0 = 0`, `x mod 0 = x`).
//!
//! Only what a statement evaluates unconditionally is checked before it: the right operand
//! of `&&`/`||` and the arms of a `Select` are conditional, and lowering keeps element reads
//! and divisions out of them (`lower::expr::selectable`). A `while` condition that needs a
//! check is moved into the body (`while true do checks; if not c then break; ...`). An index
//! or divisor computed by a helper call, an atomic or a warp operation is not hoisted (it
//! would change the order of effects) and stays unchecked; such kernels are rare and the
//! interpreter still checks them.
//!
//! The pass is deterministic: trap codes are numbered after the kernel's own traps in code
//! order, so the runtime finds a reported code's site in the checked kernel it launched.

use crate::diag::Span;
use crate::intrinsics::Intrinsic;
use crate::ir::{Block, Expr, ExprKind, Kernel, LValue, Stmt, StmtKind, Trap, Ty, VarId, VarInfo};
use crate::types::{BinOp, Literal, Scalar, UnOp};
use std::collections::HashMap;

/// `kernel` with bounds and division checks (see the module docs).
pub fn insert_checks(kernel: &Kernel) -> Kernel {
    let mut k = kernel.clone();
    let first_code = kernel
        .traps()
        .iter()
        .map(|(t, _)| t.code)
        .max()
        .unwrap_or(0)
        + 1;
    let mut c = Checker {
        vars: std::mem::take(&mut k.vars),
        next_code: first_code,
        codes: HashMap::new(),
    };
    k.body = c.block(std::mem::take(&mut k.body));
    for f in &mut k.functions {
        f.body = c.block(std::mem::take(&mut f.body));
    }
    k.vars = c.vars;
    k
}

struct Checker {
    vars: Vec<VarInfo>,
    next_code: u32,
    /// One code per (statement, message): a site is reported once however often it runs.
    codes: HashMap<(Span, String), u32>,
}

impl Checker {
    fn block(&mut self, b: Block) -> Block {
        let mut out = Vec::with_capacity(b.len());
        for s in b {
            self.stmt(s, &mut out);
        }
        out
    }

    fn stmt(&mut self, mut s: Stmt, out: &mut Block) {
        let span = s.span;
        match &mut s.kind {
            StmtKind::Let { init: Some(e), .. } | StmtKind::Expr(e) => self.expr(e, span, out),
            StmtKind::Return(Some(e)) => self.expr(e, span, out),
            StmtKind::Assign { place, value } => {
                self.place(place, span, out);
                self.expr(value, span, out);
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                self.expr(cond, span, out);
                *then_block = self.block(std::mem::take(then_block));
                *else_block = self.block(std::mem::take(else_block));
            }
            StmtKind::For {
                start, end, body, ..
            } => {
                self.expr(start, span, out);
                self.expr(end, span, out);
                *body = self.block(std::mem::take(body));
            }
            StmtKind::While { cond, body, .. } => {
                let mut pre = Vec::new();
                self.expr(cond, span, &mut pre);
                let rest = self.block(std::mem::take(body));
                if pre.is_empty() {
                    *body = rest;
                } else {
                    // The condition runs every iteration: its checks move into the body.
                    let c = std::mem::replace(cond, Expr::lit(Literal::Bool(true)));
                    pre.push(Stmt {
                        kind: StmtKind::If {
                            cond: not(c),
                            then_block: vec![Stmt {
                                kind: StmtKind::Break,
                                span,
                            }],
                            else_block: Vec::new(),
                        },
                        span,
                    });
                    pre.extend(rest);
                    *body = pre;
                }
            }
            StmtKind::Match {
                scrutinee, arms, ..
            } => {
                self.expr(scrutinee, span, out);
                for arm in arms {
                    arm.body = self.block(std::mem::take(&mut arm.body));
                }
            }
            StmtKind::Block(b) => *b = self.block(std::mem::take(b)),
            _ => {}
        }
        out.push(s);
    }

    fn place(&mut self, place: &mut LValue, span: Span, out: &mut Block) {
        match place {
            LValue::Var(_) => {}
            LValue::Index { base, index } => {
                self.expr(index, span, out);
                self.bounds(*base, index, span, out);
            }
            LValue::Field { base, .. } => self.place(base, span, out),
        }
    }

    /// Check what `e` evaluates unconditionally, in evaluation order (operands first).
    fn expr(&mut self, e: &mut Expr, span: Span, out: &mut Block) {
        match &mut e.kind {
            ExprKind::Lit(_) | ExprKind::Var(_) => {}
            ExprKind::Binary { op, lhs, rhs, .. } => {
                self.expr(lhs, span, out);
                if matches!(op, BinOp::And | BinOp::Or) {
                    return; // the right operand is conditional (and never faults)
                }
                self.expr(rhs, span, out);
                let int = lhs.ty.scalar().is_some_and(Scalar::is_int);
                if int && matches!(op, BinOp::Div | BinOp::Rem) && !nonzero_literal(rhs) {
                    let message = if *op == BinOp::Div {
                        "integer division by zero"
                    } else {
                        "integer `mod` by zero"
                    };
                    if let Some(d) = self.hoist(rhs, span, out) {
                        let zero = Expr::lit(zero_of(rhs.ty.scalar()));
                        let cond =
                            binary(BinOp::Eq, Expr::new(ExprKind::Var(d), rhs.ty.clone()), zero);
                        self.trap_if(cond, message, span, out);
                    }
                }
            }
            ExprKind::Unary { operand, .. } => self.expr(operand, span, out),
            ExprKind::Index { base, index } => {
                self.expr(index, span, out);
                self.bounds(*base, index, span, out);
            }
            ExprKind::Field { base, .. } | ExprKind::Tag(base) => self.expr(base, span, out),
            ExprKind::Payload { value, .. } => self.expr(value, span, out),
            ExprKind::Record { fields, .. } | ExprKind::Ctor { fields, .. } => {
                for f in fields {
                    self.expr(f, span, out);
                }
            }
            // Both arms are effect-free and cannot fault (lowering's guarantee).
            ExprKind::Select { cond, .. } => self.expr(cond, span, out),
            ExprKind::Call { args, .. } => {
                for a in args {
                    self.expr(a, span, out);
                }
            }
            ExprKind::Intrinsic { op, args } => {
                let atomic = matches!(op, Intrinsic::Atomic(_));
                for a in args.iter_mut().skip(usize::from(atomic)) {
                    self.expr(a, span, out);
                }
                if atomic
                    && let [
                        Expr {
                            kind: ExprKind::Var(base),
                            ..
                        },
                        index,
                        ..,
                    ] = &mut args[..]
                {
                    self.bounds(*base, index, span, out);
                }
            }
        }
    }

    /// Check `index` against the length of `base` and replace it by an in-bounds index.
    fn bounds(&mut self, base: VarId, index: &mut Expr, span: Span, out: &mut Block) {
        if index.ty != Ty::I32 {
            return;
        }
        let Some(i) = self.hoist(index, span, out) else {
            return;
        };
        let iv = Expr::new(ExprKind::Var(i), Ty::I32);
        let base_ty = self.vars[base.0 as usize].ty.clone();
        let length = Expr::new(
            ExprKind::Intrinsic {
                op: Intrinsic::Length,
                args: vec![Expr::new(ExprKind::Var(base), base_ty)],
            },
            Ty::I32,
        );
        let in_bounds = binary(
            BinOp::And,
            binary(BinOp::Ge, iv.clone(), Expr::i32(0)),
            binary(BinOp::Lt, iv.clone(), length),
        );
        let ok = self.temp("chk_ok", Ty::BOOL, in_bounds, span, out);
        let okv = Expr::new(ExprKind::Var(ok), Ty::BOOL);
        let name = self.vars[base.0 as usize].name.clone();
        self.trap_if(
            not(okv.clone()),
            &format!("out-of-bounds access to `{name}`"),
            span,
            out,
        );
        *index = Expr::new(
            ExprKind::Select {
                cond: Box::new(okv),
                then_value: Box::new(iv),
                else_value: Box::new(Expr::i32(0)),
            },
            Ty::I32,
        );
    }

    /// Bind `e` to a fresh immutable variable before the statement (a variable is used as
    /// it is) and make `e` read it. `None` when `e` has effects: moving it would reorder them.
    fn hoist(&mut self, e: &mut Expr, span: Span, out: &mut Block) -> Option<VarId> {
        // Nothing inside one statement assigns a variable, so a mutable one can be read twice.
        if let ExprKind::Var(v) = e.kind {
            return Some(v);
        }
        if !e.is_effect_free() {
            return None;
        }
        let ty = e.ty.clone();
        let value = std::mem::replace(e, Expr::i32(0));
        let v = self.temp("chk", ty.clone(), value, span, out);
        *e = Expr::new(ExprKind::Var(v), ty);
        Some(v)
    }

    fn temp(&mut self, name: &str, ty: Ty, init: Expr, span: Span, out: &mut Block) -> VarId {
        let v = VarId(self.vars.len() as u32);
        self.vars.push(VarInfo {
            name: name.to_string(),
            ty,
            mutable: false,
            span,
        });
        out.push(Stmt {
            kind: StmtKind::Let {
                var: v,
                init: Some(init),
            },
            span,
        });
        v
    }

    fn trap_if(&mut self, cond: Expr, message: &str, span: Span, out: &mut Block) {
        let message = format!("{message} (checked mode)");
        let next = self.next_code;
        let code = *self.codes.entry((span, message.clone())).or_insert(next);
        if code == next {
            self.next_code += 1;
        }
        out.push(Stmt {
            kind: StmtKind::If {
                cond,
                then_block: vec![Stmt {
                    kind: StmtKind::Trap(Trap { code, message }),
                    span,
                }],
                else_block: Vec::new(),
            },
            span,
        });
    }
}

fn nonzero_literal(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Lit(Literal::I32(d)) if d != 0
    ) || matches!(e.kind, ExprKind::Lit(Literal::I64(d)) if d != 0)
}

fn zero_of(s: Option<Scalar>) -> Literal {
    match s {
        Some(Scalar::I64) => Literal::I64(0),
        _ => Literal::I32(0),
    }
}

fn binary(op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
    let ty = if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) {
        Ty::BOOL
    } else {
        lhs.ty.clone()
    };
    Expr::new(
        ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
            nowrap: false,
        },
        ty,
    )
}

fn not(e: Expr) -> Expr {
    Expr::new(
        ExprKind::Unary {
            op: UnOp::Not,
            operand: Box::new(e),
        },
        Ty::BOOL,
    )
}
