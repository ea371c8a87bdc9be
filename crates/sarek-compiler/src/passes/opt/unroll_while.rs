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

use std::collections::HashSet;

use super::walk::{assigns_any, changed_in, is_pure_value, place_root, vars_read};
use crate::intrinsics::Intrinsic;
use crate::ir::fresh::{Scope, copy_block};
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
    let mut copies = Vec::with_capacity(body.len() * factor);
    for _ in 0..factor {
        copies.extend(fresh_copy(body, vars));
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

/// Loops that run a constant number of times are unrolled completely when at most this
/// many...
const MAX_CONSTANT_TRIPS: usize = 16;
/// ...and their copies hold at most this many statements in all.
const MAX_UNROLLED_STATEMENTS: usize = 160;

/// Unroll completely every `while` loop whose trip count is a constant: a counter bound to a
/// literal just before the loop (`let mut offset = 1`), a condition comparing it with a
/// literal (`offset < 256`), and a body that ends with the only change to it, by a literal
/// (`offset := offset * 2`). The counter's values follow from the interpreter's arithmetic
/// ([`crate::scalar::binary`], wrapping), so the loop is its body repeated that many times,
/// steps included. NVRTC unrolls the scan's and the reduction tree's loops this way; ptxas
/// does not, as their step is not an addition. Bodies with jumps, loops, arrays, `match`,
/// helper calls or native code stay loops; barriers are fine (every thread runs the same
/// copies). Returns whether anything changed.
pub fn unroll_constant_trip_loops(kernel: &mut Kernel) -> bool {
    let vars = &mut kernel.vars;
    let mut changed = unroll_trips_in(&mut kernel.body, vars);
    for f in &mut kernel.functions {
        changed |= unroll_trips_in(&mut f.body, vars);
    }
    changed
}

fn unroll_trips_in(block: &mut Block, vars: &mut Vec<VarInfo>) -> bool {
    let mut changed = false;
    for j in 0..block.len() {
        changed |= match &mut block[j].kind {
            StmtKind::If {
                then_block,
                else_block,
                ..
            } => unroll_trips_in(then_block, vars) | unroll_trips_in(else_block, vars),
            StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::Block(body) => {
                unroll_trips_in(body, vars)
            }
            StmtKind::Match { arms, .. } => arms
                .iter_mut()
                .fold(false, |c, arm| unroll_trips_in(&mut arm.body, vars) | c),
            _ => false,
        };
        if let Some(copies) = constant_trips(&block[..j], &block[j], vars) {
            block[j].kind = StmtKind::Block(copies);
            changed = true;
        }
    }
    changed
}

/// The copies replacing `s` when it is a `while` loop with a constant trip count; `before`
/// is what precedes it in its block.
fn constant_trips(before: &[Stmt], s: &Stmt, vars: &mut Vec<VarInfo>) -> Option<Block> {
    let StmtKind::While { cond, body, unroll } = &s.kind else {
        return None;
    };
    if matches!(unroll, Some(0 | 1)) {
        return None;
    }
    let ExprKind::Binary { op, lhs, rhs, .. } = &cond.kind else {
        return None;
    };
    let (counter, bound, counter_left) = match (&lhs.kind, &rhs.kind) {
        (ExprKind::Var(v), ExprKind::Lit(l)) => (*v, *l, true),
        (ExprKind::Lit(l), ExprKind::Var(v)) => (*v, *l, false),
        _ => return None,
    };
    if !op.is_comparison() {
        return None;
    }
    // The counter's value at the loop: the literal of its `let`, unchanged since.
    let only = HashSet::from([counter]);
    let start = before.iter().rev().find_map(|p| match &p.kind {
        StmtKind::Let {
            var,
            init: Some(init),
        } if *var == counter => Some(match init.kind {
            ExprKind::Lit(l) => Some(l),
            _ => None,
        }),
        _ if assigns_any(p, &only) => Some(None),
        _ => None,
    })??;
    let StmtKind::Assign {
        place: LValue::Var(v),
        value,
    } = &body.last()?.kind
    else {
        return None;
    };
    let ExprKind::Binary {
        op: step_op,
        lhs: step_lhs,
        rhs: step_rhs,
        ..
    } = &value.kind
    else {
        return None;
    };
    let (ExprKind::Var(x), ExprKind::Lit(step)) = (&step_lhs.kind, &step_rhs.kind) else {
        return None;
    };
    let mut size = 0;
    if *v != counter
        || *x != counter
        || assignments_to(body, counter) != 1
        || !repeatable(body, &mut size)
    {
        return None;
    }
    let mut value = start;
    let mut trips = 0;
    loop {
        let (a, b) = if counter_left {
            (value, bound)
        } else {
            (bound, value)
        };
        match crate::scalar::binary(*op, a, b)? {
            crate::types::Literal::Bool(true) => {}
            crate::types::Literal::Bool(false) => break,
            _ => return None,
        }
        trips += 1;
        if trips > MAX_CONSTANT_TRIPS || trips * size > MAX_UNROLLED_STATEMENTS {
            return None;
        }
        value = crate::scalar::binary(*step_op, value, *step)?;
    }
    let mut copies = Vec::with_capacity(body.len() * trips);
    for _ in 0..trips {
        copies.extend(fresh_copy(body, vars));
    }
    Some(copies)
}

/// Whether `block` may be repeated in straight-line code: no loop, jump, return, array,
/// `match`, native code, helper call; barriers, fences and warp operations are fine.
fn repeatable(block: &Block, count: &mut usize) -> bool {
    block.iter().all(|s| {
        *count += 1;
        let no_call = |e: &Expr| !has_call(e);
        match &s.kind {
            StmtKind::Let { init, .. } => init.as_ref().is_none_or(no_call),
            StmtKind::Assign { place, value } => !place_has_call(place) && no_call(value),
            StmtKind::Expr(e) => no_call(e),
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => no_call(cond) && repeatable(then_block, count) && repeatable(else_block, count),
            StmtKind::Block(b) => repeatable(b, count),
            StmtKind::Barrier | StmtKind::Fence { .. } | StmtKind::Trap(_) => true,
            _ => false,
        }
    })
}

fn place_has_call(place: &LValue) -> bool {
    match place {
        LValue::Var(_) => false,
        LValue::Index { index, .. } => has_call(index),
        LValue::Field { base, .. } => place_has_call(base),
    }
}

/// Whether `e` calls a helper (each copy would inline it again).
fn has_call(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Call { .. } => true,
        ExprKind::Lit(_) | ExprKind::Var(_) => false,
        ExprKind::Binary { lhs, rhs, .. } => has_call(lhs) || has_call(rhs),
        ExprKind::Unary { operand: x, .. }
        | ExprKind::Index { index: x, .. }
        | ExprKind::Field { base: x, .. }
        | ExprKind::Tag(x)
        | ExprKind::Payload { value: x, .. } => has_call(x),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => has_call(cond) || has_call(then_value) || has_call(else_value),
        ExprKind::Record { fields: xs, .. }
        | ExprKind::Ctor { fields: xs, .. }
        | ExprKind::Intrinsic { args: xs, .. } => xs.iter().any(has_call),
    }
}

/// A copy of `body` whose `let`s declare fresh variables (reads and assignments follow),
/// by the IR's one copier ([`crate::ir::fresh`]).
fn fresh_copy(body: &Block, vars: &mut Vec<VarInfo>) -> Block {
    copy_block(vars, &mut Scope::fresh(), body)
}
