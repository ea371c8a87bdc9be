//! Places: indexing and field access, read and assigned.

use super::{err_expr, mk};
use crate::diag::{Diagnostic, closest};
use crate::front::ast::{self, ExprKind as A};
use crate::front::tast::{Expr, ExprKind as T, RecordId, Ty};
use crate::front::typer::messages::did_you_mean;
use crate::front::typer::unify::{Constraint, error_ty, is_error};
use crate::front::typer::{Checker, LocalKind};

impl Checker {
    #[inline(never)]
    pub(super) fn infer_index(&mut self, e: &ast::Expr) -> Expr {
        let span = e.span;
        let A::Index { base, index } = &e.kind else {
            unreachable!("dispatched on the kind")
        };
        let base = self.infer(base, None);
        let elem = self.container_elem(&base, || "index".into());
        let index = self.check(index, &Ty::I32);
        mk(
            T::Index {
                base: Box::new(base),
                index: Box::new(index),
            },
            elem,
            span,
        )
    }

    #[inline(never)]
    pub(super) fn infer_index_set(&mut self, e: &ast::Expr) -> Expr {
        let span = e.span;
        let A::IndexSet { base, index, value } = &e.kind else {
            unreachable!("dispatched on the kind")
        };
        let base = self.infer(base, None);
        let elem = self.container_elem(&base, || "index".into());
        let index = self.check(index, &Ty::I32);
        let value = self.check(value, &elem);
        mk(
            T::IndexSet {
                base: Box::new(base),
                index: Box::new(index),
                value: Box::new(value),
            },
            Ty::Unit,
            span,
        )
    }

    #[inline(never)]
    pub(super) fn infer_field(&mut self, e: &ast::Expr) -> Expr {
        let span = e.span;
        let A::Field { base, field } = &e.kind else {
            unreachable!("dispatched on the kind")
        };
        let base = self.infer(base, None);
        match self.resolve_field(&base, field) {
            Some((record, idx, fty)) => mk(
                T::Field {
                    base: Box::new(base),
                    record,
                    field: idx,
                },
                fty,
                span,
            ),
            None => err_expr(span),
        }
    }

    #[inline(never)]
    pub(super) fn infer_field_set(&mut self, e: &ast::Expr) -> Expr {
        let span = e.span;
        let A::FieldSet { base, field, value } = &e.kind else {
            unreachable!("dispatched on the kind")
        };
        let base_t = self.infer(base, None);
        match self.resolve_field(&base_t, field) {
            Some((record, idx, fty)) => {
                let mutable_field =
                    self.env.records[record.0 as usize].fields[idx as usize].mutable;
                self.check_place(base, mutable_field);
                let value = self.check(value, &fty);
                let kind = T::FieldSet {
                    base: Box::new(base_t),
                    record,
                    field: idx,
                    value: Box::new(value),
                };
                mk(kind, Ty::Unit, span)
            }
            None => {
                self.check_place(base, false);
                self.infer(value, None);
                mk(T::Unit, Ty::Unit, span)
            }
        }
    }

    /// The target of `e.f <- v` must be a writable place: an element, a mutable local, or
    /// (OCaml's rule) any `let` local when the stored field `f` is declared `mutable`.
    pub(super) fn check_place(&mut self, base: &ast::Expr, mutable_field: bool) {
        match &base.kind {
            A::Var { path, name } if path.is_empty() => {
                if let Some(idx) = self.find_local(&name.name) {
                    let local = &self.scope[idx];
                    let through_field =
                        mutable_field && matches!(local.kind, LocalKind::Let) && !local.mutable;
                    // Only this store is allowed: the other fields stay read-only.
                    if self.assignable(idx, base.span, true, through_field) && through_field {
                        self.field_stored.insert(self.scope[idx].id);
                    }
                }
            }
            A::Index { .. } => {}
            A::Field { base, .. } => self.check_place(base, mutable_field),
            _ => self.diags.push(
                Diagnostic::error(base.span, "cannot assign to a field of this expression")
                    .with_label("not a place")
                    .with_note("fields are written through a mutable variable or an element: `v.(i).x <- e`"),
            ),
        }
    }

    /// Element type of an indexable value (vector or array).
    /// `what` names the operation for the error message (built only on error).
    pub(super) fn container_elem(&mut self, base: &Expr, what: impl FnOnce() -> String) -> Ty {
        match self.subst.resolve(&base.ty) {
            Ty::Vector(e) => *e,
            Ty::Array { elem, .. } => *elem,
            t if is_error(&t) => error_ty(),
            t if crate::front::typer::unify::as_var(&t).is_some() => {
                let elem = self.subst.fresh();
                let c = self.subst.fresh_with(Constraint::Container {
                    elem: elem.clone(),
                    vector: true,
                    array: true,
                });
                match self.subst.unify(&c, &t) {
                    Ok(()) => elem,
                    Err(_) => {
                        let shown = self.show(&t);
                        self.diags.push(
                            Diagnostic::error(
                                base.span,
                                format!("cannot {} a value of type `{shown}`", what()),
                            )
                            .with_label("expected a vector or an array"),
                        );
                        error_ty()
                    }
                }
            }
            t => {
                let shown = self.show(&t);
                self.diags.push(
                    Diagnostic::error(
                        base.span,
                        format!("cannot {} a value of type `{shown}`", what()),
                    )
                    .with_label("expected a vector or an array"),
                );
                error_ty()
            }
        }
    }

    pub(super) fn resolve_field(
        &mut self,
        base: &Expr,
        field: &ast::Ident,
    ) -> Option<(RecordId, u32, Ty)> {
        let t = self.subst.resolve(&base.ty);
        if is_error(&t) {
            return None;
        }
        let rid = match t {
            Ty::Record(r) => r,
            t if crate::front::typer::unify::as_var(&t).is_some() => {
                let Some(cands) = self.env.fields.get(field.name.as_str()) else {
                    self.unknown_field(field, None);
                    return None;
                };
                let r = cands.last().expect("non-empty").0;
                self.expect(base, &Ty::Record(r));
                r
            }
            other => {
                let shown = self.show(&other);
                let mut d = Diagnostic::error(
                    field.span,
                    format!("the type `{shown}` has no field `{}`", field.name),
                )
                .with_label("unknown field")
                .with_secondary(base.span, format!("this has type `{shown}`"));
                if let Ty::Tuple(_) = other {
                    d = d.with_help("destructure a tuple with `let (a, b) = ...`");
                }
                self.diags.push(d);
                return None;
            }
        };
        let rec = self.env.record(rid);
        match rec.fields.iter().position(|f| f.name == field.name) {
            Some(i) => Some((rid, i as u32, rec.fields[i].ty.clone())),
            None => {
                self.unknown_field(field, Some(rid));
                None
            }
        }
    }

    pub(super) fn unknown_field(&mut self, field: &ast::Ident, record: Option<RecordId>) {
        let (msg, cands): (String, Vec<String>) = match record {
            Some(r) => {
                let rec = self.env.record(r);
                (
                    format!("the record `{}` has no field `{}`", rec.name, field.name),
                    rec.fields.iter().map(|f| f.name.clone()).collect(),
                )
            }
            None => (
                format!("unknown field `{}`", field.name),
                self.env.fields.keys().cloned().collect(),
            ),
        };
        let mut d = Diagnostic::error(field.span, msg).with_label("unknown field");
        if let Some(r) = record {
            let rec = self.env.record(r);
            let list: Vec<String> = rec.fields.iter().map(|f| format!("`{}`", f.name)).collect();
            d = d.with_note(format!("`{}` has the fields {}", rec.name, list.join(", ")));
        }
        if let Some(h) = did_you_mean(closest(&field.name, cands.iter().map(|s| s.as_str()))) {
            d = d.with_help(h);
        }
        self.diags.push(d);
    }
}
