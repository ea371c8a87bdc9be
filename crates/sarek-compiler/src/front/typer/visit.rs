//! A mutable walk over the typed AST, used by the typer's final substitution and by
//! monomorphisation (type substitution, binder renaming).

use crate::front::tast::{Expr, ExprKind, Pattern, Ty, VarDecl, VarId};

/// Override what you need; `walk_expr` visits every child in evaluation order.
pub(crate) trait VisitMut {
    fn ty(&mut self, _ty: &mut Ty) {}
    /// A binder; the default visits its type.
    fn decl(&mut self, d: &mut VarDecl) {
        self.ty(&mut d.ty);
    }
    /// A use of a variable (`Var`, the target of `Assign`).
    fn var_use(&mut self, _id: &mut VarId) {}
    fn expr(&mut self, e: &mut Expr) {
        walk_expr(self, e);
    }
}

pub(crate) fn walk_pattern<V: VisitMut + ?Sized>(v: &mut V, p: &mut Pattern) {
    match p {
        Pattern::Wildcard | Pattern::Lit(_) => {}
        Pattern::Bind(d) => v.decl(d),
        Pattern::Ctor { args, .. } => args.iter_mut().for_each(|a| walk_pattern(v, a)),
        Pattern::Tuple(ps) | Pattern::Or(ps) => ps.iter_mut().for_each(|a| walk_pattern(v, a)),
    }
}

pub(crate) fn walk_expr<V: VisitMut + ?Sized>(v: &mut V, e: &mut Expr) {
    v.ty(&mut e.ty);
    match &mut e.kind {
        ExprKind::Unit | ExprKind::Lit(_) => {}
        ExprKind::Var(id) => v.var_use(id),
        ExprKind::Let {
            pattern,
            value,
            body,
        } => {
            v.expr(value);
            walk_pattern(v, pattern);
            v.expr(body);
        }
        ExprKind::Assign { var, value } => {
            v.var_use(var);
            v.expr(value);
        }
        ExprKind::If {
            cond,
            then_branch,
            else_branch,
        } => {
            v.expr(cond);
            v.expr(then_branch);
            if let Some(e) = else_branch {
                v.expr(e);
            }
        }
        ExprKind::For {
            var,
            start,
            end,
            body,
            ..
        } => {
            v.expr(start);
            v.expr(end);
            v.decl(var);
            v.expr(body);
        }
        ExprKind::While { cond, body, .. } => {
            v.expr(cond);
            v.expr(body);
        }
        ExprKind::Seq(es) | ExprKind::Tuple(es) => es.iter_mut().for_each(|e| v.expr(e)),
        ExprKind::Match { scrutinee, arms } => {
            v.expr(scrutinee);
            for arm in arms {
                walk_pattern(v, &mut arm.pattern);
                v.expr(&mut arm.body);
            }
        }
        ExprKind::Index { base, index } => {
            v.expr(base);
            v.expr(index);
        }
        ExprKind::IndexSet { base, index, value } => {
            v.expr(base);
            v.expr(index);
            v.expr(value);
        }
        ExprKind::Field { base, .. } => v.expr(base),
        ExprKind::FieldSet { base, value, .. } => {
            v.expr(base);
            v.expr(value);
        }
        ExprKind::Record { fields: args, .. }
        | ExprKind::Ctor { args, .. }
        | ExprKind::Intrinsic { args, .. } => args.iter_mut().for_each(|e| v.expr(e)),
        ExprKind::Call {
            type_args, args, ..
        } => {
            type_args.iter_mut().for_each(|t| v.ty(t));
            args.iter_mut().for_each(|e| v.expr(e));
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            v.expr(lhs);
            v.expr(rhs);
        }
        ExprKind::Unary { operand, .. } => v.expr(operand),
        ExprKind::LetShared { var, body } | ExprKind::LetLocalArray { var, body } => {
            v.decl(var);
            v.expr(body);
        }
        ExprKind::Superstep { step, rest, .. } => {
            v.expr(step);
            v.expr(rest);
        }
        ExprKind::Ignore(e) | ExprKind::Trap { fallback: e, .. } => v.expr(e),
    }
}
