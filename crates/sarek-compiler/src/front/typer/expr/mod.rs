//! Expression inference.
//!
//! `infer` takes an optional expected type used only as a hint (to pick a record by its field
//! set or a constructor declared by several variants); `check` infers then unifies with the
//! expected type and reports a mismatch at the sub-expression itself.
//!
//! This file holds the dispatch and the control forms (`if`, loops, sequences, supersteps,
//! pragmas, literals); the other concerns have a file each: [`bindings`] (names, `let` forms,
//! assignment), [`places`] (indexing, fields), [`aggregates`] (tuples, records,
//! constructors), [`matching`] (`match` and the desugaring of `when` guards), [`calls`]
//! (helpers, built-ins, atomics), [`operators`], and [`constfold`] (constant expressions).

use super::builtins;
use super::env::TyMode;
use super::messages::{aggregate_equality_help, aggregate_equality_message, did_you_mean};
use super::unify::{Reason, ScalarSet, UnifyError, error_ty};
use super::{Checker, LocalKind};
use crate::diag::{Diagnostic, Span, closest};
use crate::front::ast::{self, ExprKind as A, Lit};
use crate::front::tast::{Expr, ExprKind as T, LoopHints, Ty};
use crate::types::{Literal, MemSpace, Scalar};

mod aggregates;
mod bindings;
mod calls;
mod constfold;
mod int_power;
mod matching;
mod operators;
mod places;

use constfold::{int32_of, int64_of};

pub(super) use constfold::const_eval;

impl Checker {
    /// Infer `e`, then unify its type with `expected` (reporting at `e`).
    pub(super) fn check(&mut self, e: &ast::Expr, expected: &Ty) -> Expr {
        let te = self.infer(e, Some(expected));
        self.expect(&te, expected);
        te
    }

    /// Unify `te.ty` with `expected`; on failure report at `te`.
    pub(super) fn expect(&mut self, te: &Expr, expected: &Ty) -> bool {
        match self.subst.unify(expected, &te.ty) {
            Ok(()) => true,
            Err(err) => {
                self.report_unify(err, te.span, expected, &te.ty);
                // An integer literal where a float is wanted (`f.(0) <- 1`): the literal is
                // what is wrong, as F14 says of a float literal where an integer is wanted.
                if let T::Lit(Literal::I32(n)) = te.kind
                    && let Ty::Scalar(want) = self.subst.resolve(expected)
                    && want.is_float()
                    && let Some(d) = self.diags.last_mut()
                {
                    d.help = vec![format!(
                        "write a float literal such as `{n}.0`, or convert: `{} (...)`",
                        want.name()
                    )];
                }
                false
            }
        }
    }

    pub(super) fn report_unify(&mut self, err: UnifyError, span: Span, expected: &Ty, found: &Ty) {
        let d = match err {
            UnifyError::Mismatch | UnifyError::Occurs => {
                let (e, f) = (self.show(expected), self.show(found));
                let mut d = Diagnostic::error(span, "mismatched types")
                    .with_label(format!("expected `{e}`, found `{f}`"));
                if let (Ty::Scalar(a), Ty::Scalar(b)) =
                    (self.subst.resolve(expected), self.subst.resolve(found))
                    && a.is_numeric()
                    && b.is_numeric()
                {
                    d = d
                        .with_note("there are no implicit conversions between numeric types")
                        .with_help(format!("convert explicitly: `{} (...)`", a.name()));
                }
                d
            }
            UnifyError::NotInSet {
                ty,
                set,
                reason,
                origin,
            } => self.constraint_error(span, &ty, set, &reason, origin),
        };
        self.diags.push(d);
    }

    fn constraint_error(
        &self,
        span: Span,
        ty: &Ty,
        set: ScalarSet,
        reason: &Reason,
        origin: Span,
    ) -> Diagnostic {
        let shown = self.show(ty);
        match reason {
            Reason::Equality => {
                let is_variant = matches!(self.subst.resolve(ty), Ty::Variant(_));
                let mut d = Diagnostic::error(span, aggregate_equality_message(&shown))
                    .with_label(format!("this has type `{shown}`"))
                    .with_help(aggregate_equality_help(is_variant));
                if shows_origin(origin, span) {
                    d = d.with_secondary(origin, "compared with `=` here");
                }
                d
            }
            // A float literal where the context wants an integer (`o.(i) <- 1.0` on an int32
            // vector): the literal is what is wrong, not the context.
            Reason::FloatLiteral if matches!(self.subst.resolve(ty), Ty::Scalar(s) if !s.is_float()) =>
            {
                let mut d = Diagnostic::error(span, "mismatched types")
                    .with_label(format!("expected `{shown}`, found a float literal"));
                if shows_origin(origin, span) {
                    d = d.with_secondary(origin, format!("`{shown}` is required here"));
                }
                let example = match self.subst.resolve(ty) {
                    Ty::Scalar(Scalar::I64) => Some("2L"),
                    Ty::Scalar(s) if s.is_int() => Some("2"),
                    _ => None,
                };
                if let Some(example) = example {
                    d = d.with_help(format!(
                        "write an integer literal such as `{example}`, or convert: `{shown} (...)`"
                    ));
                }
                d
            }
            Reason::Operation(_) | Reason::FloatLiteral => {
                let op = reason.describe();
                let mut d = Diagnostic::error(
                    span,
                    format!("{op} cannot be used on a value of type `{shown}`"),
                )
                .with_label(format!("expected {}, found `{shown}`", set.describe()));
                if shows_origin(origin, span) {
                    d = d.with_secondary(origin, format!("required by {op} here"));
                }
                let want_float = set.intersect(ScalarSet::INT).is_empty();
                if want_float && matches!(self.subst.resolve(ty), Ty::Scalar(s) if s.is_int()) {
                    d = d.with_help(
                        "convert it with `float32 (...)`, or write a float literal such as `2.0`",
                    );
                }
                d
            }
        }
    }

    /// Restrict `te.ty` to `set` (reporting at `te`).
    fn require(&mut self, te: &Expr, set: ScalarSet, reason: Reason, origin: Span) -> bool {
        match self.subst.require_scalar(&te.ty, set, reason, origin) {
            Ok(()) => true,
            Err(err) => {
                let d = match err {
                    UnifyError::NotInSet {
                        ty,
                        set,
                        reason,
                        origin,
                    } => self.constraint_error(te.span, &ty, set, &reason, origin),
                    _ => Diagnostic::error(te.span, "mismatched types"),
                };
                self.diags.push(d);
                false
            }
        }
    }

    pub(super) fn infer(&mut self, e: &ast::Expr, expected: Option<&Ty>) -> Expr {
        let span = e.span;
        match &e.kind {
            A::Lit(lit) => self.literal(lit, span),
            A::Var { path, name } => self.var(path, name, span),
            A::Let {
                pattern,
                mutable,
                ty,
                value,
                body,
            } => self.let_(
                pattern,
                *mutable,
                ty.as_deref(),
                value,
                body,
                expected,
                span,
            ),
            A::LetFun { decl, body } => self.let_fun(decl, body, expected),
            A::LetShared { .. } => self.infer_let_shared(e, expected),
            A::LetSuperstep { .. } => self.infer_let_superstep(e, expected),
            A::LetOpen { .. } => self.infer_let_open(e, expected),
            A::Assign { target, value } => self.assign(target, value, span),
            A::If { .. } => self.infer_if(e, expected),
            A::For { .. } => self.infer_for(e),
            A::While { .. } => self.infer_while(e),
            A::Seq(_) => self.infer_seq(e, expected),
            A::Match { scrutinee, arms } => self.match_(scrutinee, arms, expected, span),
            A::Index { .. } => self.infer_index(e),
            A::IndexSet { .. } => self.infer_index_set(e),
            A::Field { .. } => self.infer_field(e),
            A::FieldSet { .. } => self.infer_field_set(e),
            A::Record(fields) => self.record(fields, expected, span),
            A::Ctor { name, args } => self.ctor(name, args, expected, span),
            A::Tuple(_) => self.infer_tuple(e, expected),
            A::App { func, args } => self.app(func, args, span),
            A::Binary { op, lhs, rhs } => self.binary(*op, lhs, rhs, span),
            A::Unary { .. } => self.infer_unary(e, expected),
            A::Annot { .. } => self.infer_annot(e),
            A::Pragma { .. } => self.infer_pragma(e, expected),
            A::Attributed { .. } => self.infer_attributed(e, expected),
            A::Extension { .. } => self.infer_extension(e),
        }
    }

    #[inline(never)]
    fn infer_let_shared(&mut self, e: &ast::Expr, expected: Option<&Ty>) -> Expr {
        let span = e.span;
        let A::LetShared {
            name,
            elem,
            size,
            body,
        } = &e.kind
        else {
            unreachable!("dispatched on the kind")
        };
        let elem = self.ty_of(elem, TyMode::Data);
        // `= ()`: upstream's default size, the block's x dimension, fixed per launch.
        let n = if matches!(size.kind, ast::ExprKind::Lit(ast::Lit::Unit)) {
            Some(crate::ir::SIZE_BLOCK_DIM_X)
        } else {
            let size_e = self.check(size, &Ty::I32);
            self.const_size(&size_e, "shared array")
        };
        let ty = Ty::Array {
            elem: Box::new(elem),
            space: MemSpace::Shared,
            size: n,
        };
        let var = self.decl(&name.name, ty, false, name.span);
        let mark = self.scope.len();
        self.push_local(&var, LocalKind::Array);
        let body = self.infer(body, expected);
        self.scope.truncate(mark);
        let ty = body.ty.clone();
        mk(
            T::LetShared {
                var,
                body: Box::new(body),
            },
            ty,
            span,
        )
    }

    #[inline(never)]
    fn infer_let_superstep(&mut self, e: &ast::Expr, expected: Option<&Ty>) -> Expr {
        let span = e.span;
        let A::LetSuperstep {
            name,
            divergent,
            step,
            rest,
        } = &e.kind
        else {
            unreachable!("dispatched on the kind")
        };
        let step = self.check(step, &Ty::Unit);
        let rest = self.infer(rest, expected);
        let ty = rest.ty.clone();
        mk(
            T::Superstep {
                name: name.name.to_string(),
                divergent: *divergent,
                step: Box::new(step),
                rest: Box::new(rest),
            },
            ty,
            span,
        )
    }

    #[inline(never)]
    fn infer_let_open(&mut self, e: &ast::Expr, expected: Option<&Ty>) -> Expr {
        let A::LetOpen { module, body } = &e.kind else {
            unreachable!("dispatched on the kind")
        };
        if let Some(full) = self.resolve_module(&module.name) {
            self.opens.push(full);
            let body = self.infer(body, expected);
            self.opens.pop();
            return body;
        }
        if !builtins::MODULES.contains(&module.name.as_str()) {
            let mut d = Diagnostic::error(module.span, format!("unknown module `{}`", module.name))
                .with_label("not a module")
                .with_note(format!(
                    "the modules are {}",
                    builtins::MODULES.map(|m| format!("`{m}`")).join(", ")
                ));
            if let Some(h) = did_you_mean(closest(&module.name, builtins::MODULES)) {
                d = d.with_help(h);
            }
            self.diags.push(d);
        }
        self.opens.push(module.name.to_string());
        let body = self.infer(body, expected);
        self.opens.pop();
        body
    }

    #[inline(never)]
    fn infer_if(&mut self, e: &ast::Expr, expected: Option<&Ty>) -> Expr {
        let span = e.span;
        let A::If {
            cond,
            then_branch,
            else_branch,
        } = &e.kind
        else {
            unreachable!("dispatched on the kind")
        };
        let cond = self.check_cond(cond);
        match else_branch {
            None => {
                let t = self.infer(then_branch, Some(&Ty::Unit));
                if self.subst.unify(&t.ty, &Ty::Unit).is_err() {
                    let found = self.show(&t.ty);
                    self.diags.push(
                        Diagnostic::error(t.span, "an `if` without `else` must have type `unit`")
                            .with_label(format!("this has type `{found}`"))
                            .with_help("add an `else` branch to produce a value"),
                    );
                }
                let kind = T::If {
                    cond: Box::new(cond),
                    then_branch: Box::new(t),
                    else_branch: None,
                };
                mk(kind, Ty::Unit, span)
            }
            Some(els) => {
                let t = self.infer(then_branch, expected);
                let el = self.infer(els, Some(&t.ty));
                if let Err(err) = self.subst.unify(&t.ty, &el.ty) {
                    match err {
                        UnifyError::Mismatch | UnifyError::Occurs => {
                            let (a, b) = (self.show(&t.ty), self.show(&el.ty));
                            self.diags.push(
                                Diagnostic::error(el.span, "`if` and `else` have different types")
                                    .with_label(format!("expected `{a}`, found `{b}`"))
                                    .with_secondary(t.span, format!("this branch has type `{a}`")),
                            );
                        }
                        other => self.report_unify(other, el.span, &t.ty, &el.ty),
                    }
                }
                let ty = t.ty.clone();
                let kind = T::If {
                    cond: Box::new(cond),
                    then_branch: Box::new(t),
                    else_branch: Some(Box::new(el)),
                };
                mk(kind, ty, span)
            }
        }
    }

    #[inline(never)]
    fn infer_for(&mut self, e: &ast::Expr) -> Expr {
        let span = e.span;
        let A::For {
            var,
            start,
            end,
            downto,
            body,
            attrs,
        } = &e.kind
        else {
            unreachable!("dispatched on the kind")
        };
        let start = self.check(start, &Ty::I32);
        let end = self.check(end, &Ty::I32);
        let var = self.decl(&var.name, Ty::I32, false, var.span);
        let mark = self.scope.len();
        self.push_local(&var, LocalKind::LoopIndex);
        let body = self.check_unit_body(body, "a `for` loop body");
        self.scope.truncate(mark);
        let hints = self.hints(attrs);
        let kind = T::For {
            var,
            start: Box::new(start),
            end: Box::new(end),
            downto: *downto,
            body: Box::new(body),
            hints,
        };
        mk(kind, Ty::Unit, span)
    }

    #[inline(never)]
    fn infer_while(&mut self, e: &ast::Expr) -> Expr {
        let span = e.span;
        let A::While { cond, body, attrs } = &e.kind else {
            unreachable!("dispatched on the kind")
        };
        let cond = self.check_cond(cond);
        let body = self.check_unit_body(body, "a `while` loop body");
        let hints = self.hints(attrs);
        mk(
            T::While {
                cond: Box::new(cond),
                body: Box::new(body),
                hints,
            },
            Ty::Unit,
            span,
        )
    }

    #[inline(never)]
    fn infer_seq(&mut self, e: &ast::Expr, expected: Option<&Ty>) -> Expr {
        let span = e.span;
        let A::Seq(es) = &e.kind else {
            unreachable!("dispatched on the kind")
        };
        let mut out = Vec::new();
        for (i, s) in es.iter().enumerate() {
            if i + 1 == es.len() {
                out.push(self.infer(s, expected));
            } else {
                let te = self.infer(s, Some(&Ty::Unit));
                if self.subst.unify(&te.ty, &Ty::Unit).is_err() {
                    let found = self.show(&te.ty);
                    // `x = e` as a statement on a mutable local is an assignment written as
                    // a comparison, not a value to discard.
                    let help = match &s.kind {
                        A::Binary {
                            op: ast::BinaryOp::Eq,
                            lhs,
                            ..
                        } if matches!(&lhs.kind, A::Var { path, name } if path.is_empty()
                            && self.find_local(&name.name).is_some_and(|i| self.scope[i].mutable)) =>
                        {
                            "`=` compares: assign the mutable local with `:=`".to_string()
                        }
                        _ => "discard the value explicitly with `ignore (...)`".to_string(),
                    };
                    self.diags.push(
                        Diagnostic::error(te.span, "this expression's value is unused")
                            .with_label(format!(
                                "this has type `{found}`, but a statement must have type `unit`"
                            ))
                            .with_help(help),
                    );
                }
                out.push(te);
            }
        }
        let ty = out.last().map_or(Ty::Unit, |e| e.ty.clone());
        mk(T::Seq(out), ty, span)
    }

    #[inline(never)]
    fn infer_annot(&mut self, e: &ast::Expr) -> Expr {
        let A::Annot { expr, ty } = &e.kind else {
            unreachable!("dispatched on the kind")
        };
        let t = self.ty_of(ty, TyMode::Local);
        self.check(expr, &t)
    }

    #[inline(never)]
    fn infer_pragma(&mut self, e: &ast::Expr, expected: Option<&Ty>) -> Expr {
        let A::Pragma { args, body } = &e.kind else {
            unreachable!("dispatched on the kind")
        };
        let mut b = self.infer(body, expected);
        for a in args {
            let mut words = a.split_whitespace();
            if words.next() == Some("unroll") {
                // `pragma ["unroll"]` without a count asks for a full unroll (upstream's meaning).
                let n = match words.next() {
                    None => Some(crate::ir::UNROLL_FULL),
                    Some(count) => {
                        self.parse_count(count, e.span, "unroll", "pragma [\"unroll 4\"]")
                    }
                };
                set_unroll(&mut b, n);
            }
        }
        b
    }

    #[inline(never)]
    fn infer_attributed(&mut self, e: &ast::Expr, expected: Option<&Ty>) -> Expr {
        let A::Attributed { expr, attrs } = &e.kind else {
            unreachable!("dispatched on the kind")
        };
        let mut b = self.infer(expr, expected);
        let hints = self.hints(attrs);
        if hints.unroll.is_some() {
            set_unroll(&mut b, hints.unroll);
        }
        b
    }

    #[inline(never)]
    fn infer_extension(&mut self, e: &ast::Expr) -> Expr {
        let span = e.span;
        let A::Extension { name } = &e.kind else {
            unreachable!("dispatched on the kind")
        };
        let d = if name == "native" {
            Diagnostic::error(span, "`[%native ...]` is not supported in Sarek source")
                .with_label("opaque target code cannot be checked or translated to every target")
                .with_note("target-specific source can only be injected through the Rust IR API")
                .with_help("write the computation in Sarek, or use an intrinsic")
        } else {
            Diagnostic::error(
                span,
                format!("the extension `[%{name}]` is not allowed in an expression"),
            )
            .with_label("unexpected extension node")
        };
        self.diags.push(d);
        err_expr(span)
    }

    fn check_cond(&mut self, cond: &ast::Expr) -> Expr {
        let c = self.infer(cond, Some(&Ty::BOOL));
        if self.subst.unify(&c.ty, &Ty::BOOL).is_err() {
            let found = self.show(&c.ty);
            self.diags.push(
                Diagnostic::error(c.span, "mismatched types")
                    .with_label(format!("expected `bool`, found `{found}`"))
                    .with_note("a condition must have type `bool`"),
            );
        }
        c
    }

    fn check_unit_body(&mut self, body: &ast::Expr, what: &str) -> Expr {
        let b = self.infer(body, Some(&Ty::Unit));
        if self.subst.unify(&b.ty, &Ty::Unit).is_err() {
            let found = self.show(&b.ty);
            self.diags.push(
                Diagnostic::error(b.span, format!("{what} must have type `unit`"))
                    .with_label(format!("this has type `{found}`"))
                    .with_help("discard the value with `ignore (...)`"),
            );
        }
        b
    }

    /// `[@unroll N]`; a bare `[@unroll]` is accepted and carries no count (targets decide).
    fn hints(&mut self, attrs: &[ast::Attribute]) -> LoopHints {
        let mut hints = LoopHints::default();
        for a in attrs {
            if (a.name == "unroll" || a.name == "sarek.unroll") && !a.payload.trim().is_empty() {
                let at = if a.outer { "@@" } else { "@" };
                let example = format!("[{at}{} 4]", a.name);
                hints.unroll = self.parse_count(&a.payload, a.span, &a.name, &example);
            }
        }
        hints
    }

    pub(super) fn literal(&mut self, lit: &Lit, span: Span) -> Expr {
        match lit {
            Lit::Unit => mk(T::Unit, Ty::Unit, span),
            Lit::Bool(b) => mk(T::Lit(Literal::Bool(*b)), Ty::BOOL, span),
            Lit::Int(v) => match int32_of(*v) {
                Some(v) => mk(T::Lit(Literal::I32(v)), Ty::I32, span),
                None => {
                    self.diags.push(
                        Diagnostic::error(span, "integer literal out of range for `int32`")
                            .with_label(format!("`{v}` is outside [-2147483648, 2147483647]"))
                            .with_help("write an int64 literal with the `L` suffix"),
                    );
                    mk(T::Lit(Literal::I32(0)), Ty::I32, span)
                }
            },
            Lit::Int64(v) => match int64_of(*v) {
                Some(v) => mk(T::Lit(Literal::I64(v)), Ty::I64, span),
                None => {
                    self.diags.push(
                        Diagnostic::error(span, "integer literal out of range for `int64`")
                            .with_label(format!(
                                "`{v}` is outside [-9223372036854775808, 9223372036854775807]"
                            )),
                    );
                    mk(T::Lit(Literal::I64(0)), Ty::I64, span)
                }
            },
            Lit::Float(x) => {
                let (ty, v) = self.subst.fresh_float_literal(span);
                self.item.lit_vars.push(v);
                mk(T::Lit(Literal::F64(*x)), ty, span)
            }
            Lit::Float64(x) => mk(T::Lit(Literal::F64(*x)), Ty::F64, span),
        }
    }
}

fn mk(kind: T, ty: Ty, span: Span) -> Expr {
    Expr { kind, ty, span }
}

fn err_expr(span: Span) -> Expr {
    mk(T::Unit, error_ty(), span)
}

/// A secondary label at the constraint's origin helps only when it is somewhere else.
fn shows_origin(origin: Span, span: Span) -> bool {
    let contains = origin.file == span.file && origin.start <= span.start && span.end <= origin.end;
    !origin.is_dummy() && !contains
}

fn set_unroll(e: &mut Expr, n: Option<u32>) {
    match &mut e.kind {
        T::For { hints, .. } | T::While { hints, .. } => hints.unroll = n,
        _ => {}
    }
}
