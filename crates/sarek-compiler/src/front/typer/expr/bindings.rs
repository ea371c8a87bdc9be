//! Names and bindings: variable references, `let` forms, local arrays and helpers, assignment.

use super::constfold::const_eval;
use super::{err_expr, mk};
use crate::diag::{Diagnostic, Span, closest};
use crate::front::ast::{self, ExprKind as A};
use crate::front::tast::{self, Expr, ExprKind as T, Ty, VarDecl};
use crate::front::typer::builtins::{self, Builtin};
use crate::front::typer::env::TyMode;
use crate::front::typer::messages::did_you_mean;
use crate::front::typer::unify::is_error;
use crate::front::typer::{CaptureFrame, Checker, Global, LocalKind};
use crate::intrinsics::Intrinsic;
use crate::types::{Literal, MemSpace};

impl Checker {
    /// Scope index of the innermost local called `name`.
    pub(super) fn find_local(&self, name: &str) -> Option<usize> {
        self.scope.find(name)
    }

    /// The id and type under which local `idx` is visible here: inside local helpers a
    /// captured variable is read through the helper's extra parameter.
    pub(super) fn local_ref(&mut self, idx: usize) -> (tast::VarId, Ty) {
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
                id: crate::front::typer::VarId(0),
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

    pub(super) fn var(&mut self, path: &[ast::Ident], name: &ast::Ident, span: Span) -> Expr {
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
            Some(Global::Refused) => return err_expr(span),
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

    pub(super) fn not_applied(&mut self, name: &str, span: Span, what: &str) -> Expr {
        self.diags.push(
            Diagnostic::error(
                span,
                format!("the {what} `{name}` must be applied to its arguments"),
            )
            .with_label("used as a value")
            .with_note("functions are not values in Sarek")
            .with_help(format!(
                "apply it where it is chosen instead of binding it to a name: `{name} args`, or `if c then {name} args else other args`"
            )),
        );
        err_expr(span)
    }

    pub(super) fn lookup_builtin(&self, path: &[ast::Ident], name: &ast::Ident) -> Option<Builtin> {
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

    pub(super) fn unknown_name(&mut self, path: &[ast::Ident], name: &ast::Ident, what: &str) {
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
        if let Some(&defined) = self.top_level.get(name.name.as_str())
            && !self.globals.contains_key(name.name.as_str())
        {
            d = d
                .with_secondary(defined, "defined here, after its use")
                .with_note("a helper or kernel can use only the helpers and constants defined before it")
                .with_help(format!(
                    "move `{}` above this use; helpers that call each other are mutual recursion, which GPU code cannot run",
                    name.name
                ));
        } else if let Some(k) = self.kernels.iter().find(|k| k.name == name.name) {
            d = d
                .with_secondary(k.span, "a kernel of this name is defined here")
                .with_note("a kernel is launched from the host; kernels cannot call each other")
                .with_help("move the code they share into a helper (`let f ... = ...`) and call it from both");
        } else if let Some(h) = did_you_mean(closest(&name.name, cands)) {
            d = d.with_help(h);
        }
        self.diags.push(d);
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn let_(
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
    pub(super) fn let_local_array(
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
            A::Ctor { name: ctor, .. } if ctor.name == "Shared" => {
                // The help declares the array under its own name and element type.
                let elem = match ann.map(|t| &t.kind) {
                    Some(ast::TypeExprKind::App(elem, _)) => match &elem.kind {
                        ast::TypeExprKind::Named(t) => t.name.to_string(),
                        _ => "ELEM".to_string(),
                    },
                    _ => "ELEM".to_string(),
                };
                self.diags.push(
                    Diagnostic::error(args[1].span, "shared arrays are declared with `let%shared`")
                        .with_label("`create_array` makes per-thread arrays only")
                        .with_help(format!(
                            "write `let%shared ({} : {elem}) = SIZE in ...`",
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
    pub(super) fn const_size(&mut self, e: &Expr, what: &str) -> Option<u32> {
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

    pub(super) fn let_fun(
        &mut self,
        decl: &ast::FunDecl,
        body: &ast::Expr,
        expected: Option<&Ty>,
    ) -> Expr {
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
        self.scope.push(crate::front::typer::Local {
            name: decl.name.name.clone(),
            id: crate::front::typer::VarId(u32::MAX),
            ty: Ty::Unit,
            mutable: false,
            kind: LocalKind::Fun { fun: id, captures },
            span: decl.name.span,
        });
        let body = self.infer(body, expected);
        self.scope.truncate(mark);
        body
    }

    pub(super) fn assign(&mut self, target: &ast::Ident, value: &ast::Expr, span: Span) -> Expr {
        let Some(idx) = self.find_local(&target.name) else {
            let value = self.infer(value, None);
            if self.globals.contains_key(target.name.as_str()) {
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
            } else if self.lookup_builtin(&[], target).is_some() {
                // Not "unknown variable `global_thread_id`": the name is known, and fixed.
                self.diags.push(
                    Diagnostic::error(
                        target.span,
                        format!("cannot assign to `{}`, a built-in", target.name),
                    )
                    .with_label("built-in values and functions cannot be assigned")
                    .with_help(format!(
                        "copy it into a mutable local: `let mut {0}' = {0} in`",
                        target.name
                    )),
                );
            } else {
                self.unknown_name(&[], target, "variable");
            }
            let _ = value;
            return mk(T::Unit, Ty::Unit, span);
        };
        if !self.assignable(idx, target.span, false, false) {
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
    /// Whether the local at `idx` may be assigned (`field`: one of its fields is stored;
    /// `mutable_field`: that field is declared `mutable`, which OCaml lets any `let` store).
    pub(super) fn assignable(
        &mut self,
        idx: usize,
        span: Span,
        field: bool,
        mutable_field: bool,
    ) -> bool {
        let local = self.scope[idx].clone();
        let what = if field {
            format!("a field of `{}`", local.name)
        } else {
            format!("`{}`", local.name)
        };
        let d = match &local.kind {
            LocalKind::Param => {
                let d = Diagnostic::error(
                    span,
                    format!("cannot assign to {what}: `{}` is a parameter", local.name),
                )
                .with_label("assignment to a parameter")
                .with_secondary(local.span, "parameter declared here");
                // Even a `mutable` field: in OCaml the store would reach the caller's record,
                // and a record parameter here is the helper's own copy.
                let d = if field {
                    d.with_note("records are passed by value: a store through a parameter would change the helper's copy, never the caller's record (as it would in OCaml)")
                        .with_help(format!(
                            "return the changed record, or copy it into a mutable local first: `let mut {0} = {0} in`",
                            local.name
                        ))
                } else {
                    d.with_help(format!(
                        "copy it into a mutable local first: `let mut {0} = {0} in`",
                        local.name
                    ))
                };
                Some(d)
            }
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
            LocalKind::Let if !local.mutable && !mutable_field => Some(
                Diagnostic::error(
                    span,
                    format!("cannot assign to {what}: `{}` is immutable", local.name),
                )
                .with_label("assignment to an immutable variable")
                .with_secondary(local.span, "declared here without `mut`")
                .with_help(if field {
                    format!(
                        "declare it mutable: `let mut {} = ...`, or declare the field `mutable` in its record type",
                        local.name
                    )
                } else {
                    format!("declare it mutable: `let mut {} = ...`", local.name)
                }),
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
}
