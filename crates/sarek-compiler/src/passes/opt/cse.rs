//! Common subexpressions across a `while` loop's back edge: a value the condition computes
//! and the body computes again before changing its operands.
//!
//! `while k < max_iter && zx *. zx +. zy *. zy <= 4.0 do let t = zx *. zx -. zy *. zy ...`
//! squares `zx` and `zy` twice per iteration. Inside one basic block ptxas merges such
//! repeats itself, but here the two copies sit on either side of the loop's back edge
//! (the condition is tested at the bottom, the body starts at the top), where it does not
//! look. The pass carries the value in a variable instead:
//!
//! ```text
//! let mut t = e in
//! while cond[t] do
//!   body[t where the operands of e are still unchanged];
//!   t := e                      (also before every `continue` of this loop)
//! done
//! ```
//!
//! `e` is evaluated once per iteration instead of twice. Only plain values qualify
//! ([`is_pure_value`]: no effect, no memory read, no fault), so evaluating `e` where a
//! short-circuit `&&` would have skipped it changes nothing. A body occurrence is replaced
//! only in the statements before the first one that assigns an operand of `e` (and in that
//! statement's assigned value, evaluated before the store).

use std::collections::HashSet;

use super::walk::{
    assigns_any, insert_before_each, is_computation, is_pure_value, place_mut, replace_in,
    same_expr, stmt_exprs_mut, vars_read,
};
use crate::diag::Span;
use crate::ir::{Block, Expr, ExprKind, Kernel, LValue, Stmt, StmtKind, VarId, VarInfo};

/// Carry every `while` condition's values that the body recomputes; returns whether
/// anything changed.
pub fn reuse_loop_conditions(kernel: &mut Kernel) -> bool {
    let vars = &mut kernel.vars;
    let mut changed = rewrite_block(&mut kernel.body, vars);
    for f in &mut kernel.functions {
        changed |= rewrite_block(&mut f.body, vars);
    }
    changed
}

fn rewrite_block(block: &mut Block, vars: &mut Vec<VarInfo>) -> bool {
    let mut changed = false;
    insert_before_each(block, |s| {
        changed |= rewrite_nested(s, vars);
        let span = s.span;
        let StmtKind::While { cond, body, .. } = &mut s.kind else {
            return Vec::new();
        };
        let lets = carry_condition(cond, body, vars, span);
        changed |= !lets.is_empty();
        lets
    });
    changed
}

/// Rewrite the loops nested in `s` (inner loops first).
fn rewrite_nested(s: &mut Stmt, vars: &mut Vec<VarInfo>) -> bool {
    match &mut s.kind {
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
    }
}

/// Rewrite one loop; returns the `let`s to place before it.
fn carry_condition(
    cond: &mut Expr,
    body: &mut Block,
    vars: &mut Vec<VarInfo>,
    span: Span,
) -> Vec<Stmt> {
    let mut picked: Vec<Expr> = Vec::new();
    pick(cond, body, &mut picked);
    let mut lets = Vec::new();
    for e in picked {
        vars.push(VarInfo {
            name: "carried".into(),
            ty: e.ty.clone(),
            mutable: true,
            span: Span::DUMMY,
        });
        let t = VarId((vars.len() - 1) as u32);
        replace_in(cond, &e, t);
        replace_available(body, &e, Some(t));
        let update = || Stmt {
            kind: StmtKind::Assign {
                place: LValue::Var(t),
                value: e.clone(),
            },
            span,
        };
        update_before_continue(body, &update);
        body.push(update());
        lets.push(Stmt {
            kind: StmtKind::Let {
                var: t,
                init: Some(e.clone()),
            },
            span,
        });
    }
    lets
}

/// The largest computations of `e` that the body recomputes, each once.
fn pick(e: &Expr, body: &mut Block, out: &mut Vec<Expr>) {
    if is_computation(e)
        && is_pure_value(e)
        && matches!(e.ty, crate::ir::Ty::Scalar(_))
        && (out.iter().any(|p| same_expr(p, e)) || replace_available(body, e, None) > 0)
    {
        if !out.iter().any(|p| same_expr(p, e)) {
            out.push(e.clone());
        }
        return;
    }
    match &e.kind {
        ExprKind::Binary { lhs, rhs, .. } => {
            pick(lhs, body, out);
            pick(rhs, body, out);
        }
        ExprKind::Unary { operand: x, .. }
        | ExprKind::Field { base: x, .. }
        | ExprKind::Tag(x)
        | ExprKind::Payload { value: x, .. } => pick(x, body, out),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => {
            pick(cond, body, out);
            pick(then_value, body, out);
            pick(else_value, body, out);
        }
        ExprKind::Intrinsic { args, .. } => args.iter().for_each(|a| pick(a, body, out)),
        _ => {}
    }
}

/// Count the occurrences of `e` in `body` that still hold the value computed at the top of
/// the body, and replace them by `var` when given.
fn replace_available(body: &mut Block, e: &Expr, var: Option<VarId>) -> usize {
    let mut operands = HashSet::new();
    vars_read(e, &mut operands);
    let mut n = 0;
    // The walk visits every node once, children first.
    let mut visit_expr = |x: &mut Expr| {
        if same_expr(x, e) {
            n += 1;
            if let Some(t) = var {
                *x = Expr::new(ExprKind::Var(t), x.ty.clone());
            }
        }
    };
    for s in body.iter_mut() {
        if !assigns_any(s, &operands) {
            stmt_exprs_mut(s, &mut |x| visit_expr(x));
            continue;
        }
        // The first statement changing an operand: its value and place index are
        // evaluated before the store.
        if let StmtKind::Assign { place, value } = &mut s.kind {
            place_mut(place, &mut |x| visit_expr(x));
            super::walk::expr_mut(value, &mut |x| visit_expr(x));
        }
        break;
    }
    n
}

/// Put `update()` before every `continue` that belongs to this loop (not to a nested one).
fn update_before_continue(block: &mut Block, update: &impl Fn() -> Stmt) {
    for s in block.iter_mut() {
        match &mut s.kind {
            StmtKind::Continue => {
                let span = s.span;
                *s = Stmt {
                    kind: StmtKind::Block(vec![
                        update(),
                        Stmt {
                            kind: StmtKind::Continue,
                            span,
                        },
                    ]),
                    span,
                };
            }
            StmtKind::If {
                then_block,
                else_block,
                ..
            } => {
                update_before_continue(then_block, update);
                update_before_continue(else_block, update);
            }
            StmtKind::Block(b) => update_before_continue(b, update),
            StmtKind::Match { arms, .. } => arms
                .iter_mut()
                .for_each(|a| update_before_continue(&mut a.body, update)),
            StmtKind::For { .. } | StmtKind::While { .. } => {}
            _ => {}
        }
    }
}
