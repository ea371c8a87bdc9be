//! `match`, and the desugaring of `when` guards into plain matches.

use super::{err_expr, mk};
use crate::diag::{Diagnostic, Span};
use crate::front::ast::{self};
use crate::front::tast::{self, Expr, ExprKind as T, Ty};
use crate::front::typer::unify::{Constraint, ScalarSet, UnifyError};
use crate::front::typer::{Checker, LocalKind};
use crate::types::{Literal, Scalar};

impl Checker {
    pub(super) fn match_(
        &mut self,
        scrutinee: &ast::Expr,
        arms: &[ast::MatchArm],
        expected: Option<&Ty>,
        span: Span,
    ) -> Expr {
        let scrut = self.infer(scrutinee, None);
        let result = self.subst.fresh();
        let mut out = Vec::new();
        // Per arm: the guard, checked against a second copy of the pattern's bindings.
        let mut guards: Vec<Option<(tast::Pattern, Expr)>> = Vec::new();
        let mut first_body: Option<Span> = None;
        // A pattern that failed to check was replaced by a wildcard: exhaustiveness and
        // redundancy would then report arms after it as unreachable, so they are skipped.
        let mut bad_pattern = false;
        for arm in arms {
            let mark = self.scope.len();
            let guard = arm.guard.as_ref().map(|g| {
                let mut binds = Vec::new();
                let pattern = self.check_pattern(&arm.pattern, &scrut.ty, false, &mut binds);
                for d in &binds {
                    self.push_local(d, LocalKind::Let);
                }
                let g = self.check(g, &Ty::BOOL);
                self.scope.truncate(mark);
                (pattern, g)
            });
            let diags_before = self.diags.len();
            let mut binds = Vec::new();
            let pattern = self.check_pattern(&arm.pattern, &scrut.ty, false, &mut binds);
            bad_pattern |= self.diags.len() > diags_before;
            if guard.is_some() {
                // The pattern was checked (and reported) with the guard already.
                self.diags.truncate(diags_before);
            }
            guards.push(guard);
            for d in &binds {
                self.push_local(d, LocalKind::Let);
            }
            let body = self.infer(&arm.body, expected.or(Some(&result)));
            if let Err(err) = self.subst.unify(&result, &body.ty) {
                match err {
                    UnifyError::Mismatch | UnifyError::Occurs => {
                        let (a, b) = (self.show(&result), self.show(&body.ty));
                        let mut d = Diagnostic::error(body.span, "match arms have different types")
                            .with_label(format!("expected `{a}`, found `{b}`"));
                        if let Some(s) = first_body {
                            d = d.with_secondary(s, format!("the first arm has type `{a}`"));
                        }
                        self.diags.push(d);
                    }
                    other => self.report_unify(other, body.span, &result, &body.ty),
                }
            }
            first_body.get_or_insert(body.span);
            self.scope.truncate(mark);
            out.push(tast::Arm {
                pattern,
                body,
                span: arm.span,
            });
        }
        let guarded: Vec<bool> = guards.iter().map(Option::is_some).collect();
        if !bad_pattern {
            self.check_match(&scrut.ty, &out, &guarded, span, scrut.span);
        }
        if guarded.contains(&true) {
            return self.desugar_guards(scrut, out, guards, result, span);
        }
        mk(
            T::Match {
                scrutinee: Box::new(scrut),
                arms: out,
            },
            result,
            span,
        )
    }

    /// A match with `when` guards as plain matches (the typed AST has no guards):
    /// `let s = scrutinee in E1` where, for arms i.. starting with a run of unguarded arms,
    /// `Ei = match s with <run> | _ -> Eg`, and for a guarded arm `p when g -> b`,
    /// `Eg = if (match s with p -> g | _ -> false) then (match s with p -> b | _ -> d)
    /// else E(g+1)`. `d` is a default value of the result type, never computed: the first
    /// match succeeded, and the last `E` is reached only by values some arm matches (the
    /// match is exhaustive without its guarded arms). Linear in the number of arms.
    pub(super) fn desugar_guards(
        &mut self,
        scrut: Expr,
        arms: Vec<tast::Arm>,
        guards: Vec<Option<(tast::Pattern, Expr)>>,
        result: Ty,
        span: Span,
    ) -> Expr {
        let result_ty = self.subst.zonk(&result);
        let (s_var, bind) = match &scrut.kind {
            T::Var(id) => (*id, None),
            _ => {
                let decl = tast::VarDecl {
                    id: self.fresh_var_id(),
                    name: "scrutinee".into(),
                    ty: scrut.ty.clone(),
                    mutable: false,
                    span: scrut.span,
                };
                (decl.id, Some(decl))
            }
        };
        let s_ty = scrut.ty.clone();
        let s = |sp: Span| mk(T::Var(s_var), s_ty.clone(), sp);
        let mut rest: Option<Expr> = None;
        let mut run: Vec<tast::Arm> = Vec::new();
        let close_run = |run: &mut Vec<tast::Arm>, rest: Option<Expr>| -> Option<Expr> {
            if run.is_empty() {
                return rest;
            }
            let mut arms: Vec<tast::Arm> = run.drain(..).rev().collect();
            if let Some(r) = rest {
                let sp = r.span;
                arms.push(tast::Arm {
                    pattern: tast::Pattern::Wildcard,
                    body: r,
                    span: sp,
                });
            }
            let sp = arms[0].span;
            Some(mk(
                T::Match {
                    scrutinee: Box::new(s(sp)),
                    arms,
                },
                result.clone(),
                sp,
            ))
        };
        for (arm, guard) in arms.into_iter().zip(guards).rev() {
            let Some((gpat, g)) = guard else {
                run.push(arm);
                continue;
            };
            rest = close_run(&mut run, rest);
            let sp = arm.span;
            let refutable = !irrefutable(&arm.pattern);
            let mut test_arms = vec![tast::Arm {
                pattern: gpat,
                body: g,
                span: sp,
            }];
            if refutable {
                test_arms.push(tast::Arm {
                    pattern: tast::Pattern::Wildcard,
                    body: mk(T::Lit(Literal::Bool(false)), Ty::BOOL, sp),
                    span: sp,
                });
            }
            let test = mk(
                T::Match {
                    scrutinee: Box::new(s(sp)),
                    arms: test_arms,
                },
                Ty::BOOL,
                sp,
            );
            let mut body_arms = vec![arm];
            if refutable {
                body_arms.push(tast::Arm {
                    pattern: tast::Pattern::Wildcard,
                    body: self.default_value(&result_ty, &result, sp),
                    span: sp,
                });
            }
            let taken = mk(
                T::Match {
                    scrutinee: Box::new(s(sp)),
                    arms: body_arms,
                },
                result.clone(),
                sp,
            );
            let otherwise = rest
                .take()
                .unwrap_or_else(|| self.default_value(&result_ty, &result, sp));
            rest = Some(mk(
                T::If {
                    cond: Box::new(test),
                    then_branch: Box::new(taken),
                    else_branch: Some(Box::new(otherwise)),
                },
                result.clone(),
                sp,
            ));
        }
        let body = close_run(&mut run, rest).expect("a match has arms");
        match bind {
            None => body,
            Some(decl) => mk(
                T::Let {
                    pattern: tast::Pattern::Bind(decl),
                    value: Box::new(scrut),
                    body: Box::new(body),
                },
                result,
                span,
            ),
        }
    }

    /// A value of type `ty` for a branch that never runs (see `desugar_guards`).
    pub(super) fn default_value(&mut self, ty: &Ty, var_ty: &Ty, span: Span) -> Expr {
        let kind = match ty {
            Ty::Unit => T::Unit,
            Ty::Scalar(Scalar::Bool) => T::Lit(Literal::Bool(false)),
            Ty::Scalar(Scalar::I32) => T::Lit(Literal::I32(0)),
            Ty::Scalar(Scalar::I64) => T::Lit(Literal::I64(0)),
            Ty::Scalar(Scalar::F32) => T::Lit(Literal::F32(0.0)),
            // Float64, and a float literal type decided later (carried as F64 until then).
            Ty::Scalar(Scalar::F64) => T::Lit(Literal::F64(0.0)),
            _ if crate::front::typer::unify::as_var(ty).is_some_and(|v| {
                matches!(
                    self.subst.constraint(v),
                    Some(Constraint::Scalar { set, .. }) if *set == ScalarSet::FLOAT
                )
            }) =>
            {
                T::Lit(Literal::F64(0.0))
            }
            Ty::Tuple(elems) => T::Tuple(
                elems
                    .iter()
                    .map(|t| self.default_value(t, t, span))
                    .collect(),
            ),
            Ty::Record(r) => {
                let fields: Vec<Ty> = self.env.records[r.0 as usize]
                    .fields
                    .iter()
                    .map(|f| f.ty.clone())
                    .collect();
                T::Record {
                    record: *r,
                    fields: fields
                        .iter()
                        .map(|t| self.default_value(t, t, span))
                        .collect(),
                }
            }
            Ty::Variant(v) => {
                let args: Vec<Ty> = self.env.variants[v.0 as usize].ctors[0].args.clone();
                T::Ctor {
                    variant: *v,
                    ctor: 0,
                    args: args
                        .iter()
                        .map(|t| self.default_value(t, t, span))
                        .collect(),
                }
            }
            _ => {
                self.diags.push(
                    Diagnostic::error(span, "this `when` guard is not supported here")
                        .with_label(format!("the match's value has type `{}`", self.show(ty)))
                        .with_note(
                            "a guard on a refutable pattern (or on the last arm) needs a match \
                             whose value is unit, a scalar, a record, a variant or a tuple",
                        )
                        .with_help("test the condition inside the arm with `if`"),
                );
                return err_expr(span);
            }
        };
        mk(kind, var_ty.clone(), span)
    }
}

/// Whether `p` matches every value of its type (no `_ ->` arm is needed after it).
pub(super) fn irrefutable(p: &tast::Pattern) -> bool {
    match p {
        tast::Pattern::Wildcard | tast::Pattern::Bind(_) => true,
        tast::Pattern::Tuple(ps) => ps.iter().all(irrefutable),
        tast::Pattern::Or(ps) => ps.iter().any(irrefutable),
        _ => false,
    }
}
