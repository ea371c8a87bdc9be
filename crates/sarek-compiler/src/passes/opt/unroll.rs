//! Full unrolling of the `for` loops a kernel asks to unroll (`[@unroll N]`, N at least the
//! trip count) when their bounds are constants and their body binds nothing.
//!
//! Why here and not in ptxas: a per-thread array indexed by a loop counter (`acc.(k) <- 0.0`)
//! lives in registers only once every index is a constant. ptxas usually unrolls such loops
//! and promotes the array, but not always: with `--fma` the 8×8 register-tiled matmul kept its
//! 64 accumulators in local memory, 26× slower. Unrolled here, the indices fold to literals
//! before the PTX writer sees them, and the promotion no longer depends on ptxas's budget.
//!
//! Only loops whose body declares nothing but `let`s (no array, no inner `for` left after
//! unrolling the inner loops first, no `match` binder) and has no `break`/`continue` are
//! unrolled: each copy gets fresh variables for its `let`s ([`crate::ir::fresh`]), and the
//! counter is replaced by its literal value.

use super::walk::exprs_mut;
use crate::ir::fresh::{Scope, copy_block};
use crate::ir::{Block, Expr, ExprKind, Kernel, Stmt, StmtKind, VarId, VarInfo};
use crate::types::Literal;

/// Loops with more iterations than this are left alone whatever their pragma says.
const MAX_TRIP: i64 = 64;

/// Unroll every eligible loop of `kernel` in place; returns whether anything changed.
pub fn unroll_constant_loops(kernel: &mut Kernel) -> bool {
    let vars = &mut kernel.vars;
    let mut changed = unroll_block(&mut kernel.body, vars);
    for f in &mut kernel.functions {
        changed |= unroll_block(&mut f.body, vars);
    }
    changed
}

fn unroll_block(block: &mut Block, vars: &mut Vec<VarInfo>) -> bool {
    let mut changed = false;
    let mut out = Vec::with_capacity(block.len());
    for mut s in std::mem::take(block) {
        changed |= unroll_nested(&mut s, vars);
        match unrolled(&s, vars) {
            Some(copies) => {
                changed = true;
                out.push(Stmt {
                    kind: StmtKind::Block(copies),
                    span: s.span,
                });
            }
            None => out.push(s),
        }
    }
    *block = out;
    changed
}

/// Unroll inside the blocks `s` contains (inner loops first).
fn unroll_nested(s: &mut Stmt, vars: &mut Vec<VarInfo>) -> bool {
    match &mut s.kind {
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => unroll_block(then_block, vars) | unroll_block(else_block, vars),
        StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::Block(body) => {
            unroll_block(body, vars)
        }
        StmtKind::Match { arms, .. } => arms
            .iter_mut()
            .fold(false, |c, arm| unroll_block(&mut arm.body, vars) | c),
        _ => false,
    }
}

/// The statements replacing `s` when it is an eligible loop.
fn unrolled(s: &Stmt, vars: &mut Vec<VarInfo>) -> Option<Block> {
    let StmtKind::For {
        var,
        start,
        end,
        downto,
        body,
        unroll: Some(n),
    } = &s.kind
    else {
        return None;
    };
    let (first, last) = (int_literal(start)?, int_literal(end)?);
    let trip = if *downto { first - last } else { last - first } + 1;
    if !(0..=MAX_TRIP).contains(&trip) || trip > i64::from(*n) || !only_lets(body) {
        return None;
    }
    let mut copies = Vec::new();
    for k in 0..trip {
        let value = if *downto { first - k } else { first + k };
        let mut copy = copy_block(vars, &mut Scope::fresh(), body);
        substitute(&mut copy, *var, value as i32);
        copies.extend(copy);
    }
    Some(copies)
}

fn int_literal(e: &Expr) -> Option<i64> {
    match e.kind {
        ExprKind::Lit(Literal::I32(v)) => Some(i64::from(v)),
        _ => None,
    }
}

/// Whether `block` declares nothing but `let`s and has no `break` or `continue` (a nested
/// `while` could own one, but is rare enough in unrolled bodies to be refused too).
fn only_lets(block: &Block) -> bool {
    block.iter().all(|s| match &s.kind {
        StmtKind::Array { .. }
        | StmtKind::For { .. }
        | StmtKind::Match { .. }
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Native(_) => false,
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => only_lets(then_block) && only_lets(else_block),
        StmtKind::While { body, .. } | StmtKind::Block(body) => only_lets(body),
        StmtKind::Let { .. }
        | StmtKind::Assign { .. }
        | StmtKind::Expr(_)
        | StmtKind::Barrier
        | StmtKind::Fence { .. }
        | StmtKind::Return(_)
        | StmtKind::Trap(_) => true,
    })
}

fn substitute(block: &mut Block, var: VarId, value: i32) {
    exprs_mut(block, &mut |e| {
        if matches!(e.kind, ExprKind::Var(v) if v == var) {
            *e = Expr::i32(value);
        }
    });
}
