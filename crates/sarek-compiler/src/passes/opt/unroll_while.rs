//! Unrolling of counted `while` loops (`while i < n do ...; i := i + s done`, the grid-stride
//! shape) by four (eight for bodies of a few statements), with the original loop left for
//! the remaining iterations:
//!
//! ```text
//! while i < n && i + s < n && i + s + s < n && i + s + s + s < n do
//!   B; B; B; B                  (each copy ends with `i := i + s`)
//! done;
//! while i < n do B done         (at most three more iterations, marked not to unroll)
//! ```
//!
//! Why: ptxas does not unroll a loop whose trip count it cannot compute, so a grid-stride
//! sum keeps one load in flight per thread; NVRTC's output unrolls it by four, with a trip
//! count, which ptxas then unrolls four times more (16 loads in flight). In the unrolled body
//! all loads are unconditional, so ptxas issues them together.
//!
//! Exact for every value, overflow included: `i + k*s` is computed with the same wrapping
//! additions the original loop performs, so the guard is true exactly when the original
//! would run the next ones, and those run in the same order. Loops with an
//! unroll hint, or a constant bound and step (ptxas counts those trips), are left alone.
//! Only bodies that
//! end with the step, assign `i` nowhere else, leave `n` and `s` unchanged (plain values of
//! variables the body does not touch), and hold only small straight-line code qualify: no
//! nested loop, jump, barrier, fence, warp operation or helper call.

use std::collections::{HashMap, HashSet};

use super::unroll::{collect_lets, rename_block};
use super::walk::{changed_in, is_pure_value, place_root, vars_read};
use crate::intrinsics::Intrinsic;
use crate::ir::{Block, Expr, ExprKind, Kernel, LValue, Stmt, StmtKind, Ty, VarId, VarInfo};
use crate::types::{BinOp, Scalar};

/// How many copies of the body the unrolled loop runs per test.
const FACTOR: usize = 4;

/// The copies for bodies of at most [`SMALL_BODY_STATEMENTS`] statements.
const SMALL_BODY_FACTOR: usize = 8;
const SMALL_BODY_STATEMENTS: usize = 4;

/// Bodies larger than this (statements, nested ones included) stay rolled.
const MAX_BODY_STATEMENTS: usize = 8;

/// Unroll every counted `while` loop of `kernel` that qualifies; returns whether anything
/// changed.
pub fn unroll_counted_loops(kernel: &mut Kernel) -> bool {
    let vars = &mut kernel.vars;
    let mut changed = rewrite_block(&mut kernel.body, vars);
    for f in &mut kernel.functions {
        changed |= rewrite_block(&mut f.body, vars);
    }
    changed
}

fn rewrite_block(block: &mut Block, vars: &mut Vec<VarInfo>) -> bool {
    let mut changed = false;
    for s in block.iter_mut() {
        changed |= match &mut s.kind {
            StmtKind::If {
                then_block,
                else_block,
                ..
            } => rewrite_block(then_block, vars) | rewrite_block(else_block, vars),
            StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::Block(body) => {
                rewrite_block(body, vars)
            }
            StmtKind::Match { arms, .. } => arms
                .iter_mut()
                .fold(false, |c, arm| rewrite_block(&mut arm.body, vars) | c),
            _ => false,
        };
        if let Some(unrolled) = unrolled(s, vars) {
            *s = unrolled;
            changed = true;
        }
    }
    changed
}

/// A loop condition that is one bound test of a counter: `i < n`, `i <= n`, `n > i` or
/// `n >= i`.
struct BoundTest<'e> {
    counter: VarId,
    op: BinOp,
    counter_left: bool,
    bound: &'e Expr,
}

impl BoundTest<'_> {
    fn of(cond: &Expr) -> Option<BoundTest<'_>> {
        let ExprKind::Binary { op, lhs, rhs, .. } = &cond.kind else {
            return None;
        };
        let (counter, counter_left, bound) = match (op, &lhs.kind, &rhs.kind) {
            (BinOp::Lt | BinOp::Le, ExprKind::Var(i), _) => (*i, true, &**rhs),
            (BinOp::Gt | BinOp::Ge, _, ExprKind::Var(i)) => (*i, false, &**lhs),
            _ => return None,
        };
        is_pure_value(bound).then_some(BoundTest {
            counter,
            op: *op,
            counter_left,
            bound,
        })
    }

    /// The same test of another value of the counter.
    fn of_value(&self, i: Expr) -> Expr {
        let (l, r) = if self.counter_left {
            (i, self.bound.clone())
        } else {
            (self.bound.clone(), i)
        };
        Expr::new(
            ExprKind::Binary {
                op: self.op,
                lhs: Box::new(l),
                rhs: Box::new(r),
                nowrap: false,
            },
            Ty::BOOL,
        )
    }
}

/// The unrolled form of `s` when it is a qualifying counted `while`.
fn unrolled(s: &Stmt, vars: &mut Vec<VarInfo>) -> Option<Stmt> {
    let StmtKind::While { cond, body, unroll } = &s.kind else {
        return None;
    };
    // A loop with an unroll hint is the programmer's call (the target honours it).
    if unroll.is_some() || cond.ty != Ty::BOOL {
        return None;
    }
    let test = BoundTest::of(cond)?;
    let i = test.counter;
    if vars[i.0 as usize].ty != Ty::Scalar(Scalar::I32) {
        return None;
    }
    let step = step_of(body.last()?, i)?;
    // With a constant bound and step, ptxas counts the trips itself once it knows the start.
    if matches!(test.bound.kind, ExprKind::Lit(_)) && matches!(step.kind, ExprKind::Lit(_)) {
        return None;
    }
    // `n` and `s` keep their values through the body; `i` changes only at the end.
    let mut changed = HashSet::new();
    changed_in(body, &mut changed);
    let mut operands = HashSet::new();
    vars_read(cond, &mut operands);
    operands.remove(&i);
    vars_read(step, &mut operands);
    if operands.contains(&i) || !operands.is_disjoint(&changed) {
        return None;
    }
    let mut size = 0;
    if assignments_to(body, i) != 1 || !straight_line(body, &mut size) {
        return None;
    }
    let factor = if size <= SMALL_BODY_STATEMENTS {
        SMALL_BODY_FACTOR
    } else {
        FACTOR
    };
    // The guard: the original test of each of the next `factor` counter values.
    let mut guard = cond.clone();
    let mut value = Expr::new(ExprKind::Var(i), Ty::Scalar(Scalar::I32));
    for _ in 1..factor {
        value = add(value, step.clone());
        guard = Expr::new(
            ExprKind::Binary {
                op: BinOp::And,
                lhs: Box::new(guard),
                rhs: Box::new(test.of_value(value.clone())),
                nowrap: false,
            },
            Ty::BOOL,
        );
    }
    let mut lets = Vec::new();
    collect_lets(body, &mut lets);
    let mut copies = Vec::with_capacity(body.len() * factor);
    for _ in 0..factor {
        let mut copy = body.clone();
        let fresh: HashMap<VarId, VarId> = lets
            .iter()
            .map(|&v| {
                vars.push(vars[v.0 as usize].clone());
                (v, VarId((vars.len() - 1) as u32))
            })
            .collect();
        rename_block(&mut copy, &fresh);
        copies.extend(copy);
    }
    let span = s.span;
    Some(Stmt {
        kind: StmtKind::Block(vec![
            Stmt {
                kind: StmtKind::While {
                    cond: guard,
                    body: copies,
                    unroll: None,
                },
                span,
            },
            Stmt {
                kind: StmtKind::While {
                    cond: cond.clone(),
                    body: body.clone(),
                    unroll: Some(1),
                },
                span,
            },
        ]),
        span,
    })
}

/// `s` when `stmt` is `i := i + s` (or `i := s + i`) with `s` a plain value.
fn step_of(stmt: &Stmt, i: VarId) -> Option<&Expr> {
    let StmtKind::Assign {
        place: LValue::Var(v),
        value,
    } = &stmt.kind
    else {
        return None;
    };
    let ExprKind::Binary {
        op: BinOp::Add,
        lhs,
        rhs,
        ..
    } = &value.kind
    else {
        return None;
    };
    let step = match (&lhs.kind, &rhs.kind) {
        (ExprKind::Var(x), _) if *x == i => rhs,
        (_, ExprKind::Var(x)) if *x == i => lhs,
        _ => return None,
    };
    (*v == i && is_pure_value(step)).then_some(step)
}

fn assignments_to(body: &Block, i: VarId) -> usize {
    let mut n = 0;
    crate::ir::visit::for_each_stmt(body, &mut |s| {
        if let StmtKind::Assign { place, .. } = &s.kind {
            n += usize::from(place_root(place) == i);
        }
    });
    n
}

/// Whether `block` is small straight-line code (conditionals allowed) that may be copied:
/// no loop, jump, array, barrier, fence, native code, helper call or warp operation.
fn straight_line(block: &Block, count: &mut usize) -> bool {
    block.iter().all(|s| {
        *count += 1;
        if *count > MAX_BODY_STATEMENTS {
            return false;
        }
        match &s.kind {
            StmtKind::Let { init, .. } => init.as_ref().is_none_or(copyable),
            StmtKind::Assign { place, value } => copyable_place(place) && copyable(value),
            StmtKind::Expr(e) => copyable(e),
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                copyable(cond)
                    && straight_line(then_block, count)
                    && straight_line(else_block, count)
            }
            StmtKind::Block(b) => straight_line(b, count),
            StmtKind::Trap(_) => true,
            _ => false,
        }
    })
}

fn copyable_place(place: &LValue) -> bool {
    match place {
        LValue::Var(_) => true,
        LValue::Index { index, .. } => copyable(index),
        LValue::Field { base, .. } => copyable_place(base),
    }
}

/// No helper call (each copy would inline it again) and no warp operation.
fn copyable(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Call { .. } => false,
        ExprKind::Intrinsic {
            op: Intrinsic::Warp(_),
            ..
        } => false,
        ExprKind::Lit(_) | ExprKind::Var(_) => true,
        ExprKind::Binary { lhs, rhs, .. } => copyable(lhs) && copyable(rhs),
        ExprKind::Unary { operand: x, .. }
        | ExprKind::Index { index: x, .. }
        | ExprKind::Field { base: x, .. }
        | ExprKind::Tag(x)
        | ExprKind::Payload { value: x, .. } => copyable(x),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => copyable(cond) && copyable(then_value) && copyable(else_value),
        ExprKind::Record { fields: xs, .. }
        | ExprKind::Ctor { fields: xs, .. }
        | ExprKind::Intrinsic { args: xs, .. } => xs.iter().all(copyable),
    }
}

fn add(a: Expr, b: Expr) -> Expr {
    Expr::new(
        ExprKind::Binary {
            op: BinOp::Add,
            lhs: Box::new(a),
            rhs: Box::new(b),
            nowrap: false,
        },
        Ty::Scalar(Scalar::I32),
    )
}
