//! Aggregates: tuples, records and variant constructors.

use super::{err_expr, mk};
use crate::diag::{Diagnostic, Span, closest};
use crate::front::ast::{self, ExprKind as A};
use crate::front::tast::{Expr, ExprKind as T, RecordId, Ty, VariantId};
use crate::front::typer::Checker;
use crate::front::typer::messages::{did_you_mean, plural};

impl Checker {
    #[inline(never)]
    pub(super) fn infer_tuple(&mut self, e: &ast::Expr, expected: Option<&Ty>) -> Expr {
        let span = e.span;
        let A::Tuple(es) = &e.kind else {
            unreachable!("dispatched on the kind")
        };
        let hints: Vec<Option<Ty>> = match expected.map(|t| self.subst.resolve(t)) {
            Some(Ty::Tuple(ts)) if ts.len() == es.len() => ts.into_iter().map(Some).collect(),
            _ => vec![None; es.len()],
        };
        let parts: Vec<Expr> = es
            .iter()
            .zip(&hints)
            .map(|(e, h)| self.infer(e, h.as_ref()))
            .collect();
        let ty = Ty::Tuple(parts.iter().map(|p| p.ty.clone()).collect());
        mk(T::Tuple(parts), ty, span)
    }

    pub(super) fn record(
        &mut self,
        fields: &[(ast::Ident, ast::Expr)],
        expected: Option<&Ty>,
        span: Span,
    ) -> Expr {
        let mut names: Vec<&str> = Vec::new();
        for (f, _) in fields {
            if names.contains(&f.name.as_str()) {
                self.diags.push(
                    Diagnostic::error(f.span, format!("field `{}` is given twice", f.name))
                        .with_label("duplicate field"),
                );
            } else {
                names.push(&f.name);
            }
        }
        let exact: Vec<RecordId> = (0..self.env.records.len() as u32)
            .map(RecordId)
            .filter(|r| {
                let rec = self.env.record(*r);
                rec.fields.len() == names.len()
                    && rec.fields.iter().all(|f| names.contains(&f.name.as_str()))
            })
            .collect();
        let hinted = match expected.map(|t| self.subst.resolve(t)) {
            Some(Ty::Record(r)) if exact.contains(&r) => Some(r),
            _ => None,
        };
        let Some(rid) = hinted.or(exact.last().copied()) else {
            self.diagnose_record_literal(fields, span);
            for (_, e) in fields {
                self.infer(e, None);
            }
            return err_expr(span);
        };
        let decl_fields = self.env.record(rid).fields.clone();
        let mut out = Vec::new();
        for fd in &decl_fields {
            let (_, e) = fields
                .iter()
                .find(|(n, _)| n.name == fd.name)
                .expect("exact field set");
            out.push(self.check(e, &fd.ty));
        }
        mk(
            T::Record {
                record: rid,
                fields: out,
            },
            Ty::Record(rid),
            span,
        )
    }

    pub(super) fn diagnose_record_literal(
        &mut self,
        fields: &[(ast::Ident, ast::Expr)],
        span: Span,
    ) {
        // The record sharing most fields with the literal is the one the user meant.
        let best = (0..self.env.records.len() as u32)
            .map(RecordId)
            .map(|r| {
                let rec = self.env.record(r);
                let shared = fields
                    .iter()
                    .filter(|(n, _)| rec.fields.iter().any(|f| f.name == n.name))
                    .count();
                (shared, r)
            })
            .filter(|(s, _)| *s > 0)
            .max_by_key(|(s, r)| (*s, *r));
        let Some((_, rid)) = best else {
            match fields.first() {
                Some((f, _)) => self.unknown_field(f, None),
                None => self
                    .diags
                    .push(Diagnostic::error(span, "empty record literal").with_label("no fields")),
            }
            return;
        };
        let rec = self.env.record(rid).clone();
        let mut unknown = false;
        for (f, _) in fields {
            if !rec.fields.iter().any(|d| d.name == f.name) {
                self.unknown_field(f, Some(rid));
                unknown = true;
            }
        }
        // A misspelt field also leaves its real one missing: one error says it all.
        if unknown {
            return;
        }
        let missing: Vec<String> = rec
            .fields
            .iter()
            .filter(|d| !fields.iter().any(|(n, _)| n.name == d.name))
            .map(|d| format!("`{}`", d.name))
            .collect();
        if !missing.is_empty() {
            self.diags.push(
                Diagnostic::error(
                    span,
                    format!(
                        "missing {} in a literal of record `{}`",
                        if missing.len() == 1 {
                            "field"
                        } else {
                            "fields"
                        },
                        rec.name
                    ),
                )
                .with_label(format!("{} not given", missing.join(", ")))
                .with_secondary(rec.span, format!("`{}` declared here", rec.name)),
            );
        }
    }

    /// Pick the variant declaring constructor `name` (the expected type wins, then the latest).
    pub(in crate::front::typer) fn resolve_ctor(
        &mut self,
        name: &ast::Ident,
        expected: Option<&Ty>,
    ) -> Option<(VariantId, u32)> {
        let hint = match expected.map(|t| self.subst.resolve(t)) {
            Some(Ty::Variant(v)) => Some(v),
            _ => None,
        };
        match self.env.ctors.get(name.name.as_str()) {
            Some(cands) => Some(
                *cands
                    .iter()
                    .rev()
                    .find(|(v, _)| Some(*v) == hint)
                    .unwrap_or(cands.last().expect("non-empty")),
            ),
            None => {
                let all: Vec<String> = self.env.ctors.keys().cloned().collect();
                let mut d =
                    Diagnostic::error(name.span, format!("unknown constructor `{}`", name.name))
                        .with_label("not a constructor of any declared variant");
                if let Some(h) = did_you_mean(closest(&name.name, all.iter().map(|s| s.as_str()))) {
                    d = d.with_help(h);
                }
                self.diags.push(d);
                None
            }
        }
    }

    pub(super) fn ctor(
        &mut self,
        name: &ast::Ident,
        args: &[ast::Expr],
        expected: Option<&Ty>,
        span: Span,
    ) -> Expr {
        let Some((vid, ci)) = self.resolve_ctor(name, expected) else {
            for a in args {
                self.infer(a, None);
            }
            return err_expr(span);
        };
        let decl = self.env.variant(vid).ctors[ci as usize].clone();
        let n = decl.args.len();
        let out: Vec<Expr> = if args.len() == n {
            args.iter()
                .zip(&decl.args)
                .map(|(a, t)| self.check(a, t))
                .collect()
        } else if n == 1 && args.len() > 1 {
            // `C of (a * b)` given as `C (x, y)`: the components form the one tuple argument.
            let parts: Vec<Expr> = args.iter().map(|a| self.infer(a, None)).collect();
            let ty = Ty::Tuple(parts.iter().map(|p| p.ty.clone()).collect());
            let tup = mk(
                T::Tuple(parts),
                ty,
                args[0].span.to(args[args.len() - 1].span),
            );
            self.expect(&tup, &decl.args[0]);
            vec![tup]
        } else {
            self.diags.push(
                Diagnostic::error(
                    span,
                    format!(
                        "the constructor `{}` takes {} but {} supplied",
                        name.name,
                        plural(n, "argument"),
                        if args.len() == 1 {
                            "1 was".to_string()
                        } else {
                            format!("{} were", args.len())
                        }
                    ),
                )
                .with_label(format!("expected {}", plural(n, "argument")))
                .with_secondary(decl.span, format!("`{}` declared here", name.name)),
            );
            for a in args {
                self.infer(a, None);
            }
            return mk(T::Unit, Ty::Variant(vid), span);
        };
        mk(
            T::Ctor {
                variant: vid,
                ctor: ci,
                args: out,
            },
            Ty::Variant(vid),
            span,
        )
    }
}
