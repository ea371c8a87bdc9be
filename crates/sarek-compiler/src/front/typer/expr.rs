//! Expression inference.
//!
//! `infer` takes an optional expected type used only as a hint (to pick a record by its field
//! set or a constructor declared by several variants); `check` infers then unifies with the
//! expected type and reports a mismatch at the sub-expression itself.

use std::borrow::Cow;

use super::builtins::{self, Builtin};
use super::env::TyMode;
use super::messages::{aggregate_equality_help, aggregate_equality_message, did_you_mean, plural};
use super::unify::{Constraint, Reason, ScalarSet, UnifyError, error_ty, is_error};
use super::{CaptureFrame, Checker, Global, LocalKind};
use crate::diag::{Diagnostic, Span, closest};
use crate::front::ast::{self, BinaryOp, ExprKind as A, Lit, UnaryOp};
use crate::front::tast::{
    self, Expr, ExprKind as T, FunId, LoopHints, RecordId, Ty, VarDecl, VariantId,
};
use crate::intrinsics::{AtomicOp, Intrinsic, WarpOp};
use crate::types::{BinOp, Literal, MemSpace, Scalar, UnOp};

fn mk(kind: T, ty: Ty, span: Span) -> Expr {
    Expr { kind, ty, span }
}

fn err_expr(span: Span) -> Expr {
    mk(T::Unit, error_ty(), span)
}

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
            } => self.let_(pattern, *mutable, ty.as_ref(), value, body, expected, span),
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
                name: name.name.clone(),
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
        self.opens.push(module.name.clone());
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
                    self.diags.push(
                        Diagnostic::error(te.span, "this expression's value is unused")
                            .with_label(format!(
                                "this has type `{found}`, but a statement must have type `unit`"
                            ))
                            .with_help("discard the value explicitly with `ignore (...)`"),
                    );
                }
                out.push(te);
            }
        }
        let ty = out.last().map_or(Ty::Unit, |e| e.ty.clone());
        mk(T::Seq(out), ty, span)
    }

    #[inline(never)]
    fn infer_index(&mut self, e: &ast::Expr) -> Expr {
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
    fn infer_index_set(&mut self, e: &ast::Expr) -> Expr {
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
    fn infer_field(&mut self, e: &ast::Expr) -> Expr {
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
    fn infer_field_set(&mut self, e: &ast::Expr) -> Expr {
        let span = e.span;
        let A::FieldSet { base, field, value } = &e.kind else {
            unreachable!("dispatched on the kind")
        };
        self.check_place(base);
        let base_t = self.infer(base, None);
        match self.resolve_field(&base_t, field) {
            Some((record, idx, fty)) => {
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
                self.infer(value, None);
                mk(T::Unit, Ty::Unit, span)
            }
        }
    }

    #[inline(never)]
    fn infer_tuple(&mut self, e: &ast::Expr, expected: Option<&Ty>) -> Expr {
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

    #[inline(never)]
    fn infer_unary(&mut self, e: &ast::Expr, expected: Option<&Ty>) -> Expr {
        let span = e.span;
        let A::Unary { op, operand } = &e.kind else {
            unreachable!("dispatched on the kind")
        };
        let x = self.infer(operand, expected);
        let (uop, ty) = match op {
            UnaryOp::Neg | UnaryOp::NegF => {
                let name = if *op == UnaryOp::Neg { "-" } else { "-." };
                let ok = self.require(&x, ScalarSet::NUMERIC, Reason::Operation(name.into()), span);
                (UnOp::Neg, if ok { x.ty.clone() } else { error_ty() })
            }
            UnaryOp::Not => {
                self.expect(&x, &Ty::BOOL);
                (UnOp::Not, Ty::BOOL)
            }
            UnaryOp::Lnot => {
                let ok = self.require(&x, ScalarSet::INT, Reason::Operation("lnot".into()), span);
                (UnOp::BitNot, if ok { x.ty.clone() } else { error_ty() })
            }
        };
        // Fold `-` into a literal so constants and patterns see a literal.
        if uop == UnOp::Neg
            && let T::Lit(l) = &x.kind
            && let Some(n) = negate(*l)
        {
            return mk(T::Lit(n), ty, span);
        }
        mk(
            T::Unary {
                op: uop,
                operand: Box::new(x),
            },
            ty,
            span,
        )
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
                    Some(count) => self.parse_count(count, e.span, "unroll"),
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
                hints.unroll = self.parse_count(&a.payload, a.span, "unroll");
            }
        }
        hints
    }

    /// The count of an int64 shift may be an int32 (`x lsl 3`, as OCaml's `Int64.shift_left`):
    /// it is converted here, so both operands of every typed binary node share one type.
    fn widen_shift_count(&mut self, l: &Expr, r: Expr) -> Expr {
        if self.subst.resolve(&l.ty) != Ty::I64 || self.subst.resolve(&r.ty) != Ty::I32 {
            return r;
        }
        let span = r.span;
        match r.kind {
            T::Lit(Literal::I32(n)) => mk(T::Lit(Literal::I64(n as i64)), Ty::I64, span),
            _ => mk(
                T::Intrinsic {
                    op: Intrinsic::Convert,
                    args: vec![r],
                },
                Ty::I64,
                span,
            ),
        }
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

    /// Scope index of the innermost local called `name`.
    fn find_local(&self, name: &str) -> Option<usize> {
        self.scope.iter().rposition(|l| l.name == name)
    }

    /// The id and type under which local `idx` is visible here: inside local helpers a
    /// captured variable is read through the helper's extra parameter.
    fn local_ref(&mut self, idx: usize) -> (tast::VarId, Ty) {
        let (mut id, ty) = (self.scope[idx].id, self.scope[idx].ty.clone());
        for f in 0..self.frames.len() {
            if idx >= self.frames[f].boundary {
                continue;
            }
            if let Some((_, d)) = self.frames[f].captures.iter().find(|(i, _)| *i == idx) {
                id = d.id;
                continue;
            }
            let local = &self.scope[idx];
            let d = VarDecl {
                id: super::VarId(0),
                name: local.name.clone(),
                ty: ty.clone(),
                mutable: false,
                span: local.span,
            };
            let d = VarDecl {
                id: self.fresh_var_id(),
                ..d
            };
            id = d.id;
            self.frames[f].captures.push((idx, d));
        }
        (id, ty)
    }

    fn var(&mut self, path: &[ast::Ident], name: &ast::Ident, span: Span) -> Expr {
        if path.is_empty()
            && let Some(idx) = self.find_local(&name.name)
        {
            if let LocalKind::Fun { .. } = self.scope[idx].kind {
                return self.not_applied(&name.name, span, "helper");
            }
            let (id, ty) = self.local_ref(idx);
            return mk(T::Var(id), ty, span);
        }
        match self.find_global(path, &name.name) {
            Some(Global::Const { lit }) => {
                return mk(T::Lit(lit), Ty::Scalar(lit.scalar()), span);
            }
            Some(Global::Fun(_)) => return self.not_applied(&name.name, span, "helper"),
            None => {}
        }
        match self.lookup_builtin(path, name) {
            Some(Builtin::Geometry(g)) => mk(
                T::Intrinsic {
                    op: Intrinsic::Geometry(g),
                    args: vec![],
                },
                Ty::I32,
                span,
            ),
            Some(Builtin::Sync(_)) => {
                self.diags.push(
                    Diagnostic::error(span, format!("`{}` must be applied to `()`", name.name))
                        .with_label("a function used as a value")
                        .with_help(format!("write `{} ()`", name.name)),
                );
                err_expr(span)
            }
            Some(_) => self.not_applied(&name.name, span, "built-in function"),
            None => {
                self.unknown_name(path, name, "variable");
                err_expr(span)
            }
        }
    }

    fn not_applied(&mut self, name: &str, span: Span, what: &str) -> Expr {
        self.diags.push(
            Diagnostic::error(
                span,
                format!("the {what} `{name}` must be applied to its arguments"),
            )
            .with_label("used as a value")
            .with_note("functions are not values in Sarek"),
        );
        err_expr(span)
    }

    fn lookup_builtin(&self, path: &[ast::Ident], name: &ast::Ident) -> Option<Builtin> {
        if let Some(m) = path.last() {
            return builtins::lookup(Some(&m.name), &name.name);
        }
        for m in self.opens.iter().rev() {
            if let Some(b) = builtins::lookup(Some(m), &name.name) {
                return Some(b);
            }
        }
        builtins::lookup(None, &name.name)
    }

    fn unknown_name(&mut self, path: &[ast::Ident], name: &ast::Ident, what: &str) {
        let span = path.first().map_or(name.span, |p| p.span.to(name.span));
        if let Some(m) = path.last() {
            if let Some(full) = self.resolve_module(&m.name) {
                let prefix = format!("{full}.");
                let names = self
                    .globals
                    .keys()
                    .filter_map(|k| k.strip_prefix(&prefix))
                    .filter(|k| !k.contains('.'));
                let mut d =
                    Diagnostic::error(span, format!("`{}` has no member `{}`", m.name, name.name))
                        .with_label("not found in this module");
                if let Some(h) = did_you_mean(closest(&name.name, names)) {
                    d = d.with_help(h);
                }
                self.diags.push(d);
                return;
            }
            if !builtins::MODULES.contains(&m.name.as_str()) {
                let mut d = Diagnostic::error(m.span, format!("unknown module `{}`", m.name))
                    .with_label("not a module");
                if let Some(h) = did_you_mean(closest(&m.name, builtins::MODULES)) {
                    d = d.with_help(h);
                }
                self.diags.push(d);
                return;
            }
            let names = builtins::names_in_module(&m.name);
            let mut d =
                Diagnostic::error(span, format!("`{}` has no member `{}`", m.name, name.name))
                    .with_label("not found in this module");
            if let Some(h) = did_you_mean(closest(&name.name, names.iter().map(|s| s.as_str()))) {
                d = d.with_help(h);
            }
            self.diags.push(d);
            return;
        }
        let builtin_names = builtins::all_names();
        let mut cands: Vec<&str> = self.scope.iter().map(|l| l.name.as_str()).collect();
        cands.extend(self.globals.keys().map(|s| s.as_str()));
        cands.extend(builtin_names.iter().map(|s| s.as_str()));
        let mut d = Diagnostic::error(span, format!("unknown {what} `{}`", name.name))
            .with_label("not found in this scope");
        if let Some(&defined) = self.top_level.get(&name.name)
            && !self.globals.contains_key(&name.name)
        {
            d = d
                .with_secondary(defined, "defined here, after its use")
                .with_note("a helper or kernel can use only the helpers and constants defined before it")
                .with_help(format!(
                    "move `{}` above this use; helpers that call each other are mutual recursion, which GPU code cannot run",
                    name.name
                ));
        } else if let Some(h) = did_you_mean(closest(&name.name, cands)) {
            d = d.with_help(h);
        }
        self.diags.push(d);
    }

    #[allow(clippy::too_many_arguments)]
    fn let_(
        &mut self,
        pattern: &ast::Pattern,
        mutable: bool,
        ann: Option<&ast::TypeExpr>,
        value: &ast::Expr,
        body: &ast::Expr,
        expected: Option<&Ty>,
        span: Span,
    ) -> Expr {
        // `let a = create_array n Local in body`
        if let A::App { func, args } = &value.kind
            && let A::Var { path, name } = &func.kind
            && name.name == "create_array"
            && self.find_local(&name.name).is_none()
            && self.lookup_builtin(path, name) == Some(Builtin::CreateArray)
        {
            return self.let_local_array(pattern, ann, value, args, body, expected, span);
        }
        let ann_ty = ann.map(|t| self.ty_of(t, TyMode::Local));
        let value = match &ann_ty {
            Some(t) => self.check(value, t),
            None => self.infer(value, None),
        };
        if mutable && !matches!(pattern, ast::Pattern::Var(_)) {
            self.diags.push(
                Diagnostic::error(
                    pattern.span(),
                    "only a simple variable can be declared mutable",
                )
                .with_label("a pattern cannot be `mut`"),
            );
        }
        let mark = self.scope.len();
        let mut binds = Vec::new();
        let pat = self.check_pattern(pattern, &value.ty, mutable, &mut binds);
        self.check_irrefutable(&pat, &value.ty, pattern.span());
        for d in &binds {
            self.push_local(d, LocalKind::Let);
        }
        let body = self.infer(body, expected);
        self.scope.truncate(mark);
        let ty = body.ty.clone();
        mk(
            T::Let {
                pattern: pat,
                value: Box::new(value),
                body: Box::new(body),
            },
            ty,
            span,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn let_local_array(
        &mut self,
        pattern: &ast::Pattern,
        ann: Option<&ast::TypeExpr>,
        value: &ast::Expr,
        args: &[ast::Expr],
        body: &ast::Expr,
        expected: Option<&Ty>,
        span: Span,
    ) -> Expr {
        let ast::Pattern::Var(name) = pattern else {
            self.diags.push(
                Diagnostic::error(
                    pattern.span(),
                    "`create_array` must be bound to a simple name",
                )
                .with_label("expected a variable"),
            );
            return err_expr(span);
        };
        if args.len() != 2 {
            self.diags.push(
                Diagnostic::error(
                    value.span,
                    format!(
                        "`create_array` takes 2 arguments but {} were supplied",
                        args.len()
                    ),
                )
                .with_label("expected `create_array SIZE Local`"),
            );
            return err_expr(span);
        }
        let size_e = self.check(&args[0], &Ty::I32);
        let n = self.const_size(&size_e, "local array");
        match &args[1].kind {
            A::Ctor { name, args } if name.name == "Local" && args.is_empty() => {}
            A::Var { name, path } if name.name == "Local" && path.is_empty() => {}
            A::Ctor { name, .. } if name.name == "Shared" => {
                self.diags.push(
                    Diagnostic::error(args[1].span, "shared arrays are declared with `let%shared`")
                        .with_label("`create_array` makes per-thread arrays only")
                        .with_help(format!(
                            "write `let%shared ({} : float32) = SIZE in ...`",
                            name.name
                        )),
                );
            }
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        args[1].span,
                        "the second argument of `create_array` must be `Local`",
                    )
                    .with_label("expected `Local`"),
                );
            }
        }
        let elem = self.subst.fresh();
        let ty = Ty::Array {
            elem: Box::new(elem),
            space: MemSpace::Local,
            size: n,
        };
        if let Some(t) = ann {
            let a = self.ty_of(t, TyMode::Local);
            if let Err(err) = self.subst.unify(&a, &ty) {
                self.report_unify(err, t.span, &a, &ty);
            }
        }
        let var = self.decl(&name.name, ty, false, name.span);
        let mark = self.scope.len();
        self.push_local(&var, LocalKind::Array);
        let body = self.infer(body, expected);
        self.scope.truncate(mark);
        let bty = body.ty.clone();
        mk(
            T::LetLocalArray {
                var,
                body: Box::new(body),
            },
            bty,
            span,
        )
    }

    /// A compile-time array size.
    fn const_size(&mut self, e: &Expr, what: &str) -> Option<u32> {
        if is_error(&e.ty) {
            return None;
        }
        match const_eval(e) {
            Some(Literal::I32(n)) if n > 0 => Some(n as u32),
            Some(Literal::I32(n)) => {
                self.diags.push(
                    Diagnostic::error(e.span, format!("the size of a {what} must be positive"))
                        .with_label(format!("this evaluates to {n}")),
                );
                None
            }
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        e.span,
                        format!("the size of a {what} must be a compile-time constant"),
                    )
                    .with_label("not a constant")
                    .with_note("literals, top-level constants and arithmetic on them are constant")
                    .with_help(
                        "declare the size as a top-level constant: `let tile : int32 = 256`",
                    ),
                );
                None
            }
        }
    }

    fn let_fun(&mut self, decl: &ast::FunDecl, body: &ast::Expr, expected: Option<&Ty>) -> Expr {
        let id = self.new_fun_slot(decl.name.span);
        self.frames.push(CaptureFrame {
            boundary: self.scope.len(),
            captures: vec![],
        });
        let mut f = self.check_function_body(decl, id, true);
        let frame = self.frames.pop().expect("pushed above");
        let captures: Vec<usize> = frame.captures.iter().map(|(i, _)| *i).collect();
        let mut params: Vec<VarDecl> = frame.captures.into_iter().map(|(_, d)| d).collect();
        params.append(&mut f.params);
        f.params = params;
        // Lifted helpers are named after their enclosing item: `saxpy__scale`.
        f.name = format!("{}__{}", self.item.name, f.name);
        self.funs[id.0 as usize].scheme.params = f.params.iter().map(|p| p.ty.clone()).collect();
        self.funs[id.0 as usize].def = Some(f);
        self.item.lifted.push(id);
        let mark = self.scope.len();
        self.scope.push(super::Local {
            name: decl.name.name.clone(),
            id: super::VarId(u32::MAX),
            ty: Ty::Unit,
            mutable: false,
            kind: LocalKind::Fun { fun: id, captures },
            span: decl.name.span,
        });
        let body = self.infer(body, expected);
        self.scope.truncate(mark);
        body
    }

    fn assign(&mut self, target: &ast::Ident, value: &ast::Expr, span: Span) -> Expr {
        let Some(idx) = self.find_local(&target.name) else {
            let value = self.infer(value, None);
            if self.globals.contains_key(&target.name) {
                self.diags.push(
                    Diagnostic::error(
                        target.span,
                        format!(
                            "cannot assign to `{}`, which is not a local variable",
                            target.name
                        ),
                    )
                    .with_label("a top-level definition is immutable"),
                );
            } else {
                self.unknown_name(&[], target, "variable");
            }
            let _ = value;
            return mk(T::Unit, Ty::Unit, span);
        };
        if !self.assignable(idx, target.span, false) {
            self.infer(value, None);
            return mk(T::Unit, Ty::Unit, span);
        }
        let (id, ty) = self.local_ref(idx);
        let value = self.check(value, &ty);
        mk(
            T::Assign {
                var: id,
                value: Box::new(value),
            },
            Ty::Unit,
            span,
        )
    }

    /// Whether local `idx` may be assigned (or, `field`, have a field written); reports why not.
    fn assignable(&mut self, idx: usize, span: Span, field: bool) -> bool {
        let local = self.scope[idx].clone();
        let what = if field {
            format!("a field of `{}`", local.name)
        } else {
            format!("`{}`", local.name)
        };
        let d = match &local.kind {
            LocalKind::Param => Some(
                Diagnostic::error(
                    span,
                    format!("cannot assign to {what}: `{}` is a parameter", local.name),
                )
                .with_label("assignment to a parameter")
                .with_secondary(local.span, "parameter declared here")
                .with_help(format!(
                    "copy it into a mutable local first: `let mut {0} = {0} in`",
                    local.name
                )),
            ),
            LocalKind::LoopIndex => Some(
                Diagnostic::error(
                    span,
                    format!("cannot assign to {what}: `{}` is a loop index", local.name),
                )
                .with_label("assignment to a loop index")
                .with_secondary(local.span, "loop index declared here")
                .with_help("use a `while` loop with a `let mut` counter"),
            ),
            LocalKind::Array => Some(
                Diagnostic::error(span, format!("cannot assign to the array `{}`", local.name))
                    .with_label("arrays cannot be reassigned")
                    .with_help(format!("write its elements: `{}.(i) <- e`", local.name)),
            ),
            LocalKind::Fun { .. } => Some(
                Diagnostic::error(
                    span,
                    format!("cannot assign to the helper `{}`", local.name),
                )
                .with_label("not a variable"),
            ),
            LocalKind::Let if !local.mutable => Some(
                Diagnostic::error(
                    span,
                    format!("cannot assign to {what}: `{}` is immutable", local.name),
                )
                .with_label("assignment to an immutable variable")
                .with_secondary(local.span, "declared here without `mut`")
                .with_help(format!(
                    "declare it mutable: `let mut {} = ...`",
                    local.name
                )),
            ),
            LocalKind::Let => None,
        };
        if let Some(d) = d {
            self.diags.push(d);
            return false;
        }
        if let Some(frame) = self.frames.last()
            && idx < frame.boundary
        {
            self.diags.push(
                Diagnostic::error(
                    span,
                    format!("a local helper cannot assign to {what}, which it captures"),
                )
                .with_label("assignment to a captured variable")
                .with_secondary(local.span, "declared outside the helper here")
                .with_note("captured variables are passed to the helper by value")
                .with_help("return the new value from the helper and assign it at the call site"),
            );
            return false;
        }
        true
    }

    /// The target of `e.f <- v` must be a writable place.
    fn check_place(&mut self, base: &ast::Expr) {
        match &base.kind {
            A::Var { path, name } if path.is_empty() => {
                if let Some(idx) = self.find_local(&name.name) {
                    self.assignable(idx, base.span, true);
                }
            }
            A::Index { .. } => {}
            A::Field { base, .. } => self.check_place(base),
            _ => self.diags.push(
                Diagnostic::error(base.span, "cannot assign to a field of this expression")
                    .with_label("not a place")
                    .with_note("fields are written through a mutable variable or an element: `v.(i).x <- e`"),
            ),
        }
    }

    /// Element type of an indexable value (vector or array).
    /// `what` names the operation for the error message (built only on error).
    fn container_elem(&mut self, base: &Expr, what: impl FnOnce() -> String) -> Ty {
        match self.subst.resolve(&base.ty) {
            Ty::Vector(e) => *e,
            Ty::Array { elem, .. } => *elem,
            t if is_error(&t) => error_ty(),
            t if super::unify::as_var(&t).is_some() => {
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

    fn resolve_field(&mut self, base: &Expr, field: &ast::Ident) -> Option<(RecordId, u32, Ty)> {
        let t = self.subst.resolve(&base.ty);
        if is_error(&t) {
            return None;
        }
        let rid = match t {
            Ty::Record(r) => r,
            t if super::unify::as_var(&t).is_some() => {
                let Some(cands) = self.env.fields.get(&field.name) else {
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

    fn unknown_field(&mut self, field: &ast::Ident, record: Option<RecordId>) {
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

    fn record(
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

    fn diagnose_record_literal(&mut self, fields: &[(ast::Ident, ast::Expr)], span: Span) {
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
    pub(super) fn resolve_ctor(
        &mut self,
        name: &ast::Ident,
        expected: Option<&Ty>,
    ) -> Option<(VariantId, u32)> {
        let hint = match expected.map(|t| self.subst.resolve(t)) {
            Some(Ty::Variant(v)) => Some(v),
            _ => None,
        };
        match self.env.ctors.get(&name.name) {
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

    fn ctor(
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

    fn match_(
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
    fn desugar_guards(
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
    fn default_value(&mut self, ty: &Ty, var_ty: &Ty, span: Span) -> Expr {
        let kind = match ty {
            Ty::Unit => T::Unit,
            Ty::Scalar(Scalar::Bool) => T::Lit(Literal::Bool(false)),
            Ty::Scalar(Scalar::I32) => T::Lit(Literal::I32(0)),
            Ty::Scalar(Scalar::I64) => T::Lit(Literal::I64(0)),
            Ty::Scalar(Scalar::F32) => T::Lit(Literal::F32(0.0)),
            // Float64, and a float literal type decided later (carried as F64 until then).
            Ty::Scalar(Scalar::F64) => T::Lit(Literal::F64(0.0)),
            _ if super::unify::as_var(ty).is_some_and(|v| {
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

    fn app(&mut self, func: &ast::Expr, args: &[ast::Expr], span: Span) -> Expr {
        let A::Var { path, name } = &func.kind else {
            self.diags.push(
                Diagnostic::error(func.span, "only named helpers and built-ins can be applied")
                    .with_label("this is not a function name"),
            );
            for a in args {
                self.infer(a, None);
            }
            return err_expr(span);
        };
        if path.is_empty()
            && let Some(idx) = self.find_local(&name.name)
        {
            if let LocalKind::Fun { fun, captures } = self.scope[idx].kind.clone() {
                let captured: Vec<Expr> = captures
                    .iter()
                    .map(|i| {
                        let (id, ty) = self.local_ref(*i);
                        mk(T::Var(id), ty, func.span)
                    })
                    .collect();
                return self.call(fun, &name.name, captured, args, span);
            }
            let ty = self.scope[idx].ty.clone();
            if is_error(&self.subst.resolve(&ty)) {
                for a in args {
                    self.infer(a, None);
                }
                return err_expr(span);
            }
            let shown = self.show(&ty);
            self.diags.push(
                Diagnostic::error(func.span, format!("`{}` is not a function", name.name))
                    .with_label(format!("this has type `{shown}`"))
                    .with_secondary(self.scope[idx].span, "declared here"),
            );
            return err_expr(span);
        }
        match self.find_global(path, &name.name) {
            Some(Global::Fun(fun)) => return self.call(fun, &name.name, vec![], args, span),
            Some(Global::Const { .. }) => {
                self.diags.push(
                    Diagnostic::error(
                        func.span,
                        format!("the constant `{}` is not a function", name.name),
                    )
                    .with_label("applied to arguments"),
                );
                return err_expr(span);
            }
            None => {}
        }
        match self.lookup_builtin(path, name) {
            Some(b) => {
                if path.is_empty() {
                    return self.builtin_call(b, &name.name, func.span, args, span);
                }
                let shown = path
                    .iter()
                    .map(|p| p.name.as_str())
                    .chain([name.name.as_str()])
                    .collect::<Vec<_>>()
                    .join(".");
                self.builtin_call(b, &shown, func.span, args, span)
            }
            None => {
                self.unknown_name(path, name, "function");
                for a in args {
                    self.infer(a, None);
                }
                err_expr(span)
            }
        }
    }

    fn call(
        &mut self,
        fun: FunId,
        name: &str,
        captured: Vec<Expr>,
        args: &[ast::Expr],
        span: Span,
    ) -> Expr {
        let scheme = self.funs[fun.0 as usize].scheme.clone();
        let def_span = self.funs[fun.0 as usize].span;
        // Instantiate: fresh variables for the type parameters, with their constraints.
        let type_args: Vec<Ty> = (0..scheme.type_params)
            .map(|_| self.subst.fresh())
            .collect();
        for (i, c) in scheme.constraints.iter().enumerate() {
            if let Some(v) = super::unify::as_var(&type_args[i]) {
                let c = match c {
                    Constraint::Container {
                        elem,
                        vector,
                        array,
                    } => Constraint::Container {
                        elem: subst_params(elem, &type_args),
                        vector: *vector,
                        array: *array,
                    },
                    // The origin stays the operation inside the helper that imposed it.
                    c @ Constraint::Scalar { .. } => c.clone(),
                    Constraint::Any => Constraint::Any,
                };
                self.subst.set_constraint(v, c);
            }
        }
        let all_params: Vec<Ty> = scheme
            .params
            .iter()
            .map(|t| subst_params(t, &type_args))
            .collect();
        let ret = subst_params(&scheme.ret, &type_args);
        let user_params = &all_params[captured.len().min(all_params.len())..];
        // `f ()` for a helper without parameters.
        let args: &[ast::Expr] = if user_params.is_empty()
            && args.len() == 1
            && matches!(args[0].kind, A::Lit(Lit::Unit))
        {
            &[]
        } else {
            args
        };
        if args.len() != user_params.len() {
            self.diags.push(
                Diagnostic::error(
                    span,
                    format!(
                        "the helper `{name}` takes {} but {} supplied",
                        plural(user_params.len(), "argument"),
                        if args.len() == 1 {
                            "1 was".to_string()
                        } else {
                            format!("{} were", args.len())
                        }
                    ),
                )
                .with_label(format!(
                    "expected {}",
                    plural(user_params.len(), "argument")
                ))
                .with_secondary(def_span, format!("`{name}` defined here"))
                .with_note(if args.len() < user_params.len() {
                    "partial application is not supported: helpers must be applied to all \
                     their arguments at once"
                } else {
                    "helpers must be applied to all their arguments at once"
                }),
            );
            for a in args {
                self.infer(a, None);
            }
            // A partial application has no type Sarek can express: the error type keeps a
            // later use of it (`let g = f 1 in g 2`) from being reported again.
            return err_expr(span);
        }
        let mut targs = captured;
        for (a, t) in args.iter().zip(user_params) {
            targs.push(self.check(a, t));
        }
        mk(
            T::Call {
                func: fun,
                type_args,
                args: targs,
            },
            ret,
            span,
        )
    }

    fn arity_error(&mut self, name: &str, expected: usize, given: usize, span: Span) {
        self.diags.push(
            Diagnostic::error(
                span,
                format!(
                    "`{name}` takes {} but {} supplied",
                    plural(expected, "argument"),
                    if given == 1 {
                        "1 was".to_string()
                    } else {
                        format!("{given} were")
                    }
                ),
            )
            .with_label(format!("expected {}", plural(expected, "argument"))),
        );
    }

    fn builtin_call(
        &mut self,
        b: Builtin,
        name: &str,
        fspan: Span,
        args: &[ast::Expr],
        span: Span,
    ) -> Expr {
        if let Builtin::Geometry(_) = b {
            self.diags.push(
                Diagnostic::error(fspan, format!("`{name}` is a value, not a function"))
                    .with_label("applied to arguments")
                    .with_help(format!("use `{name}` without arguments")),
            );
            return err_expr(span);
        }
        if b == Builtin::CreateArray {
            self.diags.push(
                Diagnostic::error(span, "`create_array` must be bound directly by a `let`")
                    .with_label("used inside an expression")
                    .with_help("write `let a = create_array 16 Local in ...`"),
            );
            return err_expr(span);
        }
        if args.len() != b.arity() {
            self.arity_error(name, b.arity(), args.len(), span);
            for a in args {
                self.infer(a, None);
            }
            return err_expr(span);
        }
        let op_name = Cow::Owned(name.to_string());
        match b {
            Builtin::Geometry(_) | Builtin::CreateArray => unreachable!("handled above"),
            Builtin::Sync(op) => {
                self.check(&args[0], &Ty::Unit);
                mk(T::Intrinsic { op, args: vec![] }, Ty::Unit, span)
            }
            Builtin::Warp(op) => match op {
                WarpOp::VoteAll | WarpOp::VoteAny | WarpOp::Ballot => {
                    let x = self.check(&args[0], &Ty::BOOL);
                    let ty = if op == WarpOp::Ballot {
                        Ty::I32
                    } else {
                        Ty::BOOL
                    };
                    mk(
                        T::Intrinsic {
                            op: Intrinsic::Warp(op),
                            args: vec![x],
                        },
                        ty,
                        span,
                    )
                }
                _ => {
                    let x = self.infer(&args[0], None);
                    self.require(&x, ScalarSet::SHUFFLE, Reason::Operation(op_name), span);
                    let lane = self.check(&args[1], &Ty::I32);
                    let ty = x.ty.clone();
                    mk(
                        T::Intrinsic {
                            op: Intrinsic::Warp(op),
                            args: vec![x, lane],
                        },
                        ty,
                        span,
                    )
                }
            },
            Builtin::Atomic { op, elem, space } => self.atomic(op, elem, space, name, args, span),
            Builtin::Math { f, at } => self.same_type_args(
                Intrinsic::Math(f),
                ScalarSet::FLOAT,
                at,
                op_name,
                args,
                span,
            ),
            Builtin::Numeric { op, at, .. } => {
                self.same_type_args(op, ScalarSet::NUMERIC, at, op_name, args, span)
            }
            Builtin::Bits(op) => self.same_type_args(op, ScalarSet::INT, None, op_name, args, span),
            Builtin::Convert { to, from } => {
                let x = self.infer(&args[0], None);
                match from {
                    Some(s) => {
                        self.expect(&x, &Ty::Scalar(s));
                    }
                    None => match self.subst.resolve(&x.ty) {
                        Ty::Scalar(s) if s.is_numeric() => {}
                        t if is_error(&t) => {}
                        t if super::unify::as_var(&t).is_some() => {
                            self.require(&x, ScalarSet::NUMERIC, Reason::Operation(op_name), span);
                        }
                        t => {
                            let shown = self.show(&t);
                            let mut d = Diagnostic::error(x.span, format!("cannot convert a value of type `{shown}` to `{}`", to.name()))
                                .with_label(format!("this has type `{shown}`"))
                                .with_note("conversions work between the numeric types int32, int64, float32 and float64");
                            if t == Ty::BOOL {
                                d = d.with_help(
                                    "write `if b then 1 else 0` to turn a bool into a number"
                                        .to_string(),
                                );
                            }
                            self.diags.push(d);
                        }
                    },
                }
                mk(
                    T::Intrinsic {
                        op: Intrinsic::Convert,
                        args: vec![x],
                    },
                    Ty::Scalar(to),
                    span,
                )
            }
            Builtin::Length => {
                let v = self.infer(&args[0], None);
                self.container_elem(&v, || "take the length of".into());
                mk(
                    T::Intrinsic {
                        op: Intrinsic::Length,
                        args: vec![v],
                    },
                    Ty::I32,
                    span,
                )
            }
            Builtin::Ignore => {
                let x = self.infer(&args[0], None);
                mk(T::Ignore(Box::new(x)), Ty::Unit, span)
            }
            Builtin::Arith { f, at } => self.module_operator(f, at, args, span),
            Builtin::Step(op) => {
                // `incr r` is `r := r + 1`: the assignment's own checks apply (a mutable
                // int32 local).
                let target = match &args[0].kind {
                    A::Var { path, name } if path.is_empty() => name,
                    _ => {
                        self.diags.push(
                            Diagnostic::error(args[0].span, format!("`{name}` takes a variable"))
                                .with_label("not a mutable local")
                                .with_help(format!(
                                    "write `let r = ref 0 in ... {name} r` (or `let mut r = 0 in`)"
                                )),
                        );
                        self.infer(&args[0], None);
                        return err_expr(span);
                    }
                };
                let read = args[0].clone();
                let e = ast::Expr {
                    kind: A::Assign {
                        target: target.clone(),
                        value: Box::new(ast::Expr {
                            kind: A::Binary {
                                op,
                                lhs: Box::new(read),
                                rhs: Box::new(ast::Expr {
                                    kind: A::Lit(Lit::Int(1)),
                                    span,
                                }),
                            },
                            span,
                        }),
                    },
                    span,
                };
                self.infer(&e, None)
            }
            Builtin::Proj(k) => {
                // `fst e` is `let (%fst, _) = e in %fst` (`%fst` cannot be written).
                let var = |name: &str| ast::Ident {
                    name: name.into(),
                    span,
                };
                let mut parts = vec![ast::Pattern::Wildcard(span), ast::Pattern::Wildcard(span)];
                parts[k as usize] = ast::Pattern::Var(var("%proj"));
                let e = ast::Expr {
                    kind: A::Let {
                        pattern: ast::Pattern::Tuple(parts, span),
                        mutable: false,
                        ty: None,
                        value: Box::new(args[0].clone()),
                        body: Box::new(ast::Expr {
                            kind: A::Var {
                                path: Vec::new(),
                                name: var("%proj"),
                            },
                            span,
                        }),
                    },
                    span,
                };
                self.infer(&e, None)
            }
        }
    }

    /// `Int32.add a b` is `(a + b : int32)`: the operator's own typing rules apply
    /// (e.g. an int32 shift count on `Int64.shift_left`).
    fn module_operator(
        &mut self,
        f: builtins::ArithFn,
        at: Scalar,
        args: &[ast::Expr],
        span: Span,
    ) -> Expr {
        let boxed = |e: &ast::Expr| Box::new(e.clone());
        let kind = match f {
            builtins::ArithFn::Binary(op) => ast::ExprKind::Binary {
                op,
                lhs: boxed(&args[0]),
                rhs: boxed(&args[1]),
            },
            builtins::ArithFn::Unary(op) => ast::ExprKind::Unary {
                op,
                operand: boxed(&args[0]),
            },
            builtins::ArithFn::Step(op) => {
                let one = match at {
                    Scalar::I64 => ast::Lit::Int64(1),
                    Scalar::F32 => ast::Lit::Float(1.0),
                    Scalar::F64 => ast::Lit::Float64(1.0),
                    _ => ast::Lit::Int(1),
                };
                ast::ExprKind::Binary {
                    op,
                    lhs: boxed(&args[0]),
                    rhs: Box::new(ast::Expr {
                        kind: ast::ExprKind::Lit(one),
                        span,
                    }),
                }
            }
        };
        let e = self.infer(&ast::Expr { kind, span }, None);
        self.expect(&e, &Ty::Scalar(at));
        e
    }

    /// Built-ins whose arguments and result all share one type from `set`.
    fn same_type_args(
        &mut self,
        op: Intrinsic,
        set: ScalarSet,
        at: Option<Scalar>,
        op_name: Cow<'static, str>,
        args: &[ast::Expr],
        span: Span,
    ) -> Expr {
        let first = self.infer(&args[0], None);
        let ok = match at {
            Some(s) => self.expect(&first, &Ty::Scalar(s)),
            None => self.require(&first, set, Reason::Operation(op_name.clone()), span),
        };
        // After a reported error the result is the error type, so it cannot cascade.
        let ty = if ok { first.ty.clone() } else { error_ty() };
        let mut out = vec![first];
        for a in &args[1..] {
            out.push(self.check(a, &ty));
        }
        mk(T::Intrinsic { op, args: out }, ty, span)
    }

    fn atomic(
        &mut self,
        op: AtomicOp,
        elem: Option<Scalar>,
        space: Option<MemSpace>,
        name: &str,
        args: &[ast::Expr],
        span: Span,
    ) -> Expr {
        let arr = self.infer(&args[0], None);
        let elem_ty = self.container_elem(&arr, || format!("apply `{name}` to"));
        let arr_ty = self.subst.resolve(&arr.ty);
        let actual_space = match &arr_ty {
            Ty::Vector(_) => Some(MemSpace::Global),
            Ty::Array { space, .. } => Some(*space),
            _ => None,
        };
        if actual_space == Some(MemSpace::Local) {
            self.diags.push(
                Diagnostic::error(
                    arr.span,
                    format!("`{name}` needs a vector or a shared array"),
                )
                .with_label("this is a per-thread local array")
                .with_note("atomics only make sense on memory shared between threads"),
            );
        } else if let (Some(want), Some(have)) = (space, actual_space)
            && want != have
        {
            let w = if want == MemSpace::Global {
                "a vector (global memory)"
            } else {
                "a shared array"
            };
            self.diags.push(
                Diagnostic::error(arr.span, format!("`{name}` works on {w}"))
                    .with_label(format!("this has type `{}`", self.show(&arr_ty))),
            );
        }
        if let Some(s) = elem
            && let Err(err) = self.subst.unify(&Ty::Scalar(s), &elem_ty)
        {
            self.report_unify(err, arr.span, &Ty::Vector(Box::new(Ty::Scalar(s))), &arr.ty);
        }
        let allowed = if op == AtomicOp::Add {
            ScalarSet::of(&[Scalar::I32, Scalar::I64, Scalar::F32])
        } else {
            ScalarSet::INT
        };
        match self.subst.resolve(&elem_ty) {
            Ty::Scalar(s) if allowed.contains(s) => {}
            t if is_error(&t) => {}
            t if super::unify::as_var(&t).is_some() => {
                let _ = self.subst.require_scalar(
                    &t,
                    allowed,
                    Reason::Operation(Cow::Owned(name.to_string())),
                    span,
                );
            }
            t => {
                let shown = self.show(&t);
                let mut d = if t == Ty::F64 && op == AtomicOp::Add {
                    Diagnostic::error(
                        arr.span,
                        format!("`{name}` on float64 elements is not supported"),
                    )
                    .with_label(format!("the elements have type `{shown}`"))
                    .with_note("`atomic_add` works on int32, int64 and float32 elements")
                    .with_help("accumulate in float32, or use int64 fixed-point arithmetic")
                } else {
                    Diagnostic::error(
                        arr.span,
                        format!("`{name}` cannot operate on elements of type `{shown}`"),
                    )
                    .with_label(format!(
                        "expected elements of type {}, found `{shown}`",
                        allowed.describe()
                    ))
                };
                if op != AtomicOp::Add {
                    d = d.with_note(
                        "atomics other than `atomic_add` work on int32 and int64 elements only",
                    );
                }
                self.diags.push(d);
            }
        }
        let index = self.check(&args[1], &Ty::I32);
        let mut out = vec![arr, index];
        for a in &args[2..] {
            out.push(self.check(a, &elem_ty));
        }
        mk(
            T::Intrinsic {
                op: Intrinsic::Atomic(op),
                args: out,
            },
            elem_ty,
            span,
        )
    }

    fn binary(&mut self, op: BinaryOp, lhs: &ast::Expr, rhs: &ast::Expr, span: Span) -> Expr {
        use BinaryOp as B;
        let sym = binary_symbol(op);
        match op {
            B::And | B::Or => {
                let l = self.check(lhs, &Ty::BOOL);
                let r = self.check(rhs, &Ty::BOOL);
                let bop = if op == B::And { BinOp::And } else { BinOp::Or };
                return mk(
                    T::Binary {
                        op: bop,
                        lhs: Box::new(l),
                        rhs: Box::new(r),
                    },
                    Ty::BOOL,
                    span,
                );
            }
            _ => {}
        }
        let l = self.infer(lhs, None);
        let mut r = self.infer(rhs, Some(&l.ty));
        if matches!(op, B::Lsl | B::Lsr | B::Asr) {
            r = self.widen_shift_count(&l, r);
        }
        if let Err(err) = self.subst.unify(&l.ty, &r.ty) {
            match err {
                UnifyError::Mismatch | UnifyError::Occurs => {
                    let (a, b) = (self.show(&l.ty), self.show(&r.ty));
                    let mut d = Diagnostic::error(
                        r.span,
                        format!("`{sym}` needs operands of the same type, found `{a}` and `{b}`"),
                    )
                    .with_label(format!("expected `{a}`, found `{b}`"))
                    .with_secondary(l.span, format!("this has type `{a}`"));
                    let (la, rb) = (self.subst.resolve(&l.ty), self.subst.resolve(&r.ty));
                    if let (Ty::Scalar(x), Ty::Scalar(y)) = (&la, &rb)
                        && x.is_numeric()
                        && y.is_numeric()
                    {
                        d = d
                            .with_note("there are no implicit conversions between numeric types")
                            .with_help(format!(
                                "convert one side explicitly, e.g. `{} (...)`",
                                x.name()
                            ));
                    }
                    self.diags.push(d);
                }
                other => self.report_unify(other, r.span, &l.ty, &r.ty),
            }
            let bop = lower_binop(op);
            let ty = if bop.is_comparison() {
                Ty::BOOL
            } else {
                error_ty()
            };
            return mk(
                T::Binary {
                    op: bop,
                    lhs: Box::new(l),
                    rhs: Box::new(r),
                },
                ty,
                span,
            );
        }
        let reason = Reason::Operation(Cow::Borrowed(sym));
        let bop = lower_binop(op);
        let ty = match op {
            B::Eq | B::Ne => {
                if let Err(UnifyError::NotInSet {
                    ty,
                    set,
                    reason,
                    origin,
                }) = self
                    .subst
                    .require_scalar(&l.ty, ScalarSet::ALL, Reason::Equality, span)
                {
                    let d = self.constraint_error(l.span, &ty, set, &reason, origin);
                    self.diags.push(d);
                }
                Ty::BOOL
            }
            B::Lt | B::Le | B::Gt | B::Ge if self.subst.resolve(&l.ty) == Ty::BOOL => {
                // OCaml orders bools (`false < true`); targets compare numbers, so each
                // side becomes `if b then 1 else 0` (both still evaluated, in order).
                let as_int = |b: Expr| {
                    let sp = b.span;
                    let lit = |v| mk(T::Lit(Literal::I32(v)), Ty::I32, sp);
                    mk(
                        T::If {
                            cond: Box::new(b),
                            then_branch: Box::new(lit(1)),
                            else_branch: Some(Box::new(lit(0))),
                        },
                        Ty::I32,
                        sp,
                    )
                };
                return mk(
                    T::Binary {
                        op: bop,
                        lhs: Box::new(as_int(l)),
                        rhs: Box::new(as_int(r)),
                    },
                    Ty::BOOL,
                    span,
                );
            }
            B::Lt | B::Le | B::Gt | B::Ge => {
                self.require(&l, ScalarSet::NUMERIC, reason, span);
                Ty::BOOL
            }
            B::Land | B::Lor | B::Lxor | B::Lsl | B::Lsr | B::Asr => {
                if self.require(&l, ScalarSet::INT, reason, span) {
                    l.ty.clone()
                } else {
                    error_ty()
                }
            }
            _ => {
                if self.require(&l, ScalarSet::NUMERIC, reason, span) {
                    l.ty.clone()
                } else {
                    error_ty()
                }
            }
        };
        mk(
            T::Binary {
                op: bop,
                lhs: Box::new(l),
                rhs: Box::new(r),
            },
            ty,
            span,
        )
    }
}

/// Whether `p` matches every value of its type (no `_ ->` arm is needed after it).
fn irrefutable(p: &tast::Pattern) -> bool {
    match p {
        tast::Pattern::Wildcard | tast::Pattern::Bind(_) => true,
        tast::Pattern::Tuple(ps) => ps.iter().all(irrefutable),
        tast::Pattern::Or(ps) => ps.iter().any(irrefutable),
        _ => false,
    }
}

/// A secondary label at the constraint's origin helps only when it is somewhere else.
fn shows_origin(origin: Span, span: Span) -> bool {
    let contains = origin.file == span.file && origin.start <= span.start && span.end <= origin.end;
    !origin.is_dummy() && !contains
}

fn binary_symbol(op: BinaryOp) -> &'static str {
    use BinaryOp as B;
    match op {
        B::Add => "+",
        B::Sub => "-",
        B::Mul => "*",
        B::Div => "/",
        B::AddF => "+.",
        B::SubF => "-.",
        B::MulF => "*.",
        B::DivF => "/.",
        B::Mod => "mod",
        B::Eq => "=",
        B::Ne => "<>",
        B::Lt => "<",
        B::Le => "<=",
        B::Gt => ">",
        B::Ge => ">=",
        B::And => "&&",
        B::Or => "||",
        B::Land => "land",
        B::Lor => "lor",
        B::Lxor => "lxor",
        B::Lsl => "lsl",
        B::Lsr => "lsr",
        B::Asr => "asr",
    }
}

fn lower_binop(op: BinaryOp) -> BinOp {
    use BinaryOp as B;
    match op {
        B::Add | B::AddF => BinOp::Add,
        B::Sub | B::SubF => BinOp::Sub,
        B::Mul | B::MulF => BinOp::Mul,
        B::Div | B::DivF => BinOp::Div,
        B::Mod => BinOp::Rem,
        B::Eq => BinOp::Eq,
        B::Ne => BinOp::Ne,
        B::Lt => BinOp::Lt,
        B::Le => BinOp::Le,
        B::Gt => BinOp::Gt,
        B::Ge => BinOp::Ge,
        B::And => BinOp::And,
        B::Or => BinOp::Or,
        B::Land => BinOp::BitAnd,
        B::Lor => BinOp::BitOr,
        B::Lxor => BinOp::BitXor,
        B::Lsl => BinOp::Shl,
        B::Lsr => BinOp::LShr,
        B::Asr => BinOp::AShr,
    }
}

fn set_unroll(e: &mut Expr, n: Option<u32>) {
    match &mut e.kind {
        T::For { hints, .. } | T::While { hints, .. } => hints.unroll = n,
        _ => {}
    }
}

/// Substitute type parameters `Param(i)` by `args[i]`.
pub(super) fn subst_params(t: &Ty, args: &[Ty]) -> Ty {
    match t {
        Ty::Param(i) if (*i as usize) < args.len() => args[*i as usize].clone(),
        Ty::Tuple(ts) => Ty::Tuple(ts.iter().map(|t| subst_params(t, args)).collect()),
        Ty::Vector(e) => Ty::Vector(Box::new(subst_params(e, args))),
        Ty::Array { elem, space, size } => Ty::Array {
            elem: Box::new(subst_params(elem, args)),
            space: *space,
            size: *size,
        },
        other => other.clone(),
    }
}

/// `0xffffffff` is accepted as the int32 with that bit pattern (as OCaml's `0xffffffffl`).
/// The lexer already turned non-decimal literals into their signed value, so the signed
/// range is the whole check (`2147483648` is refused, `-2147483648` and `0xFFFFFFFF` are not).
fn int32_of(v: i128) -> Option<i32> {
    i32::try_from(v).ok()
}

fn int64_of(v: i128) -> Option<i64> {
    i64::try_from(v).ok()
}

fn negate(l: Literal) -> Option<Literal> {
    Some(match l {
        Literal::I32(v) => Literal::I32(v.wrapping_neg()),
        Literal::I64(v) => Literal::I64(v.wrapping_neg()),
        Literal::F32(v) => Literal::F32(-v),
        Literal::F64(v) => Literal::F64(-v),
        Literal::Bool(_) => return None,
    })
}

/// Fold a constant expression (literals, unary minus, arithmetic) to a literal.
pub(super) fn const_eval(e: &Expr) -> Option<Literal> {
    match &e.kind {
        T::Lit(l) => Some(*l),
        T::Unary {
            op: UnOp::Neg,
            operand,
        } => negate(const_eval(operand)?),
        T::Unary {
            op: UnOp::BitNot,
            operand,
        } => match const_eval(operand)? {
            Literal::I32(v) => Some(Literal::I32(!v)),
            Literal::I64(v) => Some(Literal::I64(!v)),
            _ => None,
        },
        T::Unary {
            op: UnOp::Not,
            operand,
        } => match const_eval(operand)? {
            Literal::Bool(b) => Some(Literal::Bool(!b)),
            _ => None,
        },
        T::Binary { op, lhs, rhs } => {
            let (a, b) = (const_eval(lhs)?, const_eval(rhs)?);
            match (a, b) {
                (Literal::I32(x), Literal::I32(y)) => {
                    int_op(*op, x as i64, y as i64, 32).map(|v| Literal::I32(v as i32))
                }
                (Literal::I64(x), Literal::I64(y)) => int_op(*op, x, y, 64).map(Literal::I64),
                (Literal::F32(x), Literal::F32(y)) => {
                    float_op(*op, x as f64, y as f64).map(|v| Literal::F32(v as f32))
                }
                (Literal::F64(x), Literal::F64(y)) => float_op(*op, x, y).map(Literal::F64),
                _ => None,
            }
        }
        _ => None,
    }
}

fn int_op(op: BinOp, x: i64, y: i64, bits: u32) -> Option<i64> {
    let r = match op {
        BinOp::Add => x.checked_add(y)?,
        BinOp::Sub => x.checked_sub(y)?,
        BinOp::Mul => x.checked_mul(y)?,
        BinOp::Div => x.checked_div(y)?,
        BinOp::Rem => x.checked_rem(y)?,
        BinOp::BitAnd => x & y,
        BinOp::BitOr => x | y,
        BinOp::BitXor => x ^ y,
        BinOp::Shl if (0..bits as i64).contains(&y) => x << y,
        BinOp::AShr if (0..bits as i64).contains(&y) => x >> y,
        _ => return None,
    };
    let fits = if bits == 32 {
        i32::try_from(r).is_ok()
    } else {
        true
    };
    fits.then_some(r)
}

fn float_op(op: BinOp, x: f64, y: f64) -> Option<f64> {
    Some(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        _ => return None,
    })
}
