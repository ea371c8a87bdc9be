//! A mutable post-order walk over every expression of a block: the one traversal the
//! rewriting passes share (each only says what to do with one expression node).

use std::collections::HashSet;

use crate::ir::{Block, Expr, ExprKind, Kernel, LValue, StmtKind, VarId, visit};

/// The kernel's body and its helpers' bodies.
pub fn bodies(kernel: &Kernel) -> impl Iterator<Item = &Block> {
    std::iter::once(&kernel.body).chain(kernel.functions.iter().map(|f| &f.body))
}

/// Every variable some assignment targets (the root variable of each assigned place).
pub fn assigned_vars(kernel: &Kernel) -> HashSet<VarId> {
    fn root(place: &LValue) -> VarId {
        match place {
            LValue::Var(v) | LValue::Index { base: v, .. } => *v,
            LValue::Field { base, .. } => root(base),
        }
    }
    let mut out = HashSet::new();
    for body in bodies(kernel) {
        visit::for_each_stmt(body, &mut |s| {
            if let StmtKind::Assign { place, .. } = &s.kind {
                out.insert(root(place));
            }
        });
    }
    out
}

/// Call `f` on every expression of `block`, nested statements included, children before
/// their parent (so `f` sees operands already rewritten).
pub fn exprs_mut(block: &mut Block, f: &mut impl FnMut(&mut Expr)) {
    for s in block {
        match &mut s.kind {
            StmtKind::Let { init, .. } => {
                if let Some(e) = init {
                    expr_mut(e, f);
                }
            }
            StmtKind::Assign { place, value } => {
                place_mut(place, f);
                expr_mut(value, f);
            }
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) => expr_mut(e, f),
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                expr_mut(cond, f);
                exprs_mut(then_block, f);
                exprs_mut(else_block, f);
            }
            StmtKind::For {
                start, end, body, ..
            } => {
                expr_mut(start, f);
                expr_mut(end, f);
                exprs_mut(body, f);
            }
            StmtKind::While { cond, body, .. } => {
                expr_mut(cond, f);
                exprs_mut(body, f);
            }
            StmtKind::Match {
                scrutinee, arms, ..
            } => {
                expr_mut(scrutinee, f);
                for arm in arms {
                    exprs_mut(&mut arm.body, f);
                }
            }
            StmtKind::Block(b) => exprs_mut(b, f),
            StmtKind::Array { .. }
            | StmtKind::Barrier
            | StmtKind::Fence { .. }
            | StmtKind::Return(None)
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Native(_)
            | StmtKind::Trap(_) => {}
        }
    }
}

fn place_mut(place: &mut LValue, f: &mut impl FnMut(&mut Expr)) {
    match place {
        LValue::Var(_) => {}
        LValue::Index { index, .. } => expr_mut(index, f),
        LValue::Field { base, .. } => place_mut(base, f),
    }
}

/// Post-order walk of one expression tree.
pub fn expr_mut(e: &mut Expr, f: &mut impl FnMut(&mut Expr)) {
    match &mut e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => {}
        ExprKind::Binary { lhs, rhs, .. } => {
            expr_mut(lhs, f);
            expr_mut(rhs, f);
        }
        ExprKind::Unary { operand, .. } => expr_mut(operand, f),
        ExprKind::Index { index, .. } => expr_mut(index, f),
        ExprKind::Field { base, .. } => expr_mut(base, f),
        ExprKind::Tag(v) => expr_mut(v, f),
        ExprKind::Payload { value, .. } => expr_mut(value, f),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => {
            expr_mut(cond, f);
            expr_mut(then_value, f);
            expr_mut(else_value, f);
        }
        ExprKind::Record { fields: args, .. }
        | ExprKind::Ctor { fields: args, .. }
        | ExprKind::Call { args, .. }
        | ExprKind::Intrinsic { args, .. } => args.iter_mut().for_each(|a| expr_mut(a, f)),
    }
    f(e);
}
