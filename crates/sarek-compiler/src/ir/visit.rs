//! A walk over a kernel's statements for checks that look at what each statement declares
//! and computes: every declared variable is reported to [`StmtVisitor::var`], every
//! expression a statement evaluates (initialisers, conditions, bounds, indices of assigned
//! places, returned values) to [`StmtVisitor::expr`] with the statement's span. Nested blocks
//! are walked in source order; statements without expressions (barriers, jumps, traps,
//! native code) report nothing.

use super::{Block, Expr, LValue, Stmt, StmtKind, VarId};
use crate::diag::Span;

/// The hooks of [`walk_block`]; a visitor overrides [`StmtVisitor::let_`] to treat a
/// declaration and its initialiser together.
pub trait StmtVisitor {
    /// A variable declared by a statement (`let`, arrays, loop indices, match bindings).
    fn var(&mut self, var: VarId);
    /// An expression a statement evaluates, located at the statement.
    fn expr(&mut self, span: Span, e: &Expr);
    /// A `let`: by default its variable, then its initialiser.
    fn let_(&mut self, span: Span, var: VarId, init: Option<&Expr>) {
        self.var(var);
        if let Some(e) = init {
            self.expr(span, e);
        }
    }
}

/// Visit every statement of `block`, nested blocks included.
pub fn walk_block<V: StmtVisitor + ?Sized>(v: &mut V, block: &Block) {
    for s in block {
        walk_stmt(v, s);
    }
}

/// Visit one statement and the blocks nested in it.
pub fn walk_stmt<V: StmtVisitor + ?Sized>(v: &mut V, s: &Stmt) {
    let span = s.span;
    match &s.kind {
        StmtKind::Let { var, init } => v.let_(span, *var, init.as_ref()),
        StmtKind::Array { var } => v.var(*var),
        StmtKind::Assign { place, value } => {
            walk_place(v, span, place);
            v.expr(span, value);
        }
        StmtKind::Expr(e) | StmtKind::Return(Some(e)) => v.expr(span, e),
        StmtKind::If {
            cond,
            then_block,
            else_block,
        } => {
            v.expr(span, cond);
            walk_block(v, then_block);
            walk_block(v, else_block);
        }
        StmtKind::For {
            var,
            start,
            end,
            body,
            ..
        } => {
            v.var(*var);
            v.expr(span, start);
            v.expr(span, end);
            walk_block(v, body);
        }
        StmtKind::While { cond, body, .. } => {
            v.expr(span, cond);
            walk_block(v, body);
        }
        StmtKind::Match {
            scrutinee, arms, ..
        } => {
            v.expr(span, scrutinee);
            for arm in arms {
                for b in arm.bindings.iter().flatten() {
                    v.var(*b);
                }
                walk_block(v, &arm.body);
            }
        }
        StmtKind::Block(b) => walk_block(v, b),
        StmtKind::Barrier
        | StmtKind::Fence { .. }
        | StmtKind::Return(None)
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Native(_)
        | StmtKind::Trap(_) => {}
    }
}

/// The expressions an assigned place evaluates (its indices).
pub fn walk_place<V: StmtVisitor + ?Sized>(v: &mut V, span: Span, place: &LValue) {
    match place {
        LValue::Var(_) => {}
        LValue::Index { index, .. } => v.expr(span, index),
        LValue::Field { base, .. } => walk_place(v, span, base),
    }
}

/// Every statement of `block` and of the blocks nested in it, in source order (a statement
/// before the statements of its own blocks).
pub fn for_each_stmt<'b>(block: &'b Block, f: &mut impl FnMut(&'b Stmt)) {
    for s in block {
        f(s);
        match &s.kind {
            StmtKind::If {
                then_block,
                else_block,
                ..
            } => {
                for_each_stmt(then_block, f);
                for_each_stmt(else_block, f);
            }
            StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::Block(body) => {
                for_each_stmt(body, f)
            }
            StmtKind::Match { arms, .. } => arms.iter().for_each(|a| for_each_stmt(&a.body, f)),
            _ => {}
        }
    }
}
