//! Applications: helper calls (with their type arguments), built-ins, module operators, atomics.

use std::borrow::Cow;

use super::{err_expr, mk};
use crate::diag::{Diagnostic, Span};
use crate::front::ast::{self, ExprKind as A, Lit};
use crate::front::tast::{Expr, ExprKind as T, FunId, Ty};
use crate::front::typer::builtins::{self, Builtin};
use crate::front::typer::messages::plural;
use crate::front::typer::unify::{Constraint, Reason, ScalarSet, error_ty, is_error};
use crate::front::typer::{Checker, Global, LocalKind};
use crate::intrinsics::{AtomicOp, Intrinsic, WarpOp};
use crate::types::{MemSpace, Scalar};

impl Checker {
    pub(super) fn app(&mut self, func: &ast::Expr, args: &[ast::Expr], span: Span) -> Expr {
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
            Some(Global::Refused) => return err_expr(span),
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

    pub(super) fn call(
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
            if let Some(v) = crate::front::typer::unify::as_var(&type_args[i]) {
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

    pub(super) fn arity_error(&mut self, name: &str, expected: usize, given: usize, span: Span) {
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

    pub(super) fn builtin_call(
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
        if let Builtin::Refused { why, note, help } = b {
            self.diags.push(
                Diagnostic::error(span, why)
                    .with_label(format!("`{name}` comes from OCaml Sarek's library"))
                    .with_note(note)
                    .with_help(help),
            );
            for a in args {
                self.infer(a, None);
            }
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
            Builtin::Geometry(_) | Builtin::CreateArray | Builtin::Refused { .. } => {
                unreachable!("handled above")
            }
            Builtin::PowInt => {
                // The operands are checked here, where a mismatch is reported once and
                // plainly; the expansion then types them again, well-typed and silent.
                let before = self.diags.len();
                self.check(&args[0], &Ty::I32);
                self.check(&args[1], &Ty::I32);
                if self.diags.len() > before {
                    return err_expr(span);
                }
                self.infer(&super::int_power::expand(&args[0], &args[1], span), None)
            }
            Builtin::Pow => {
                // Typed once to pick the instance; an int32 base is typed again inside the
                // expansion.
                let base = self.infer(&args[0], None);
                if self.subst.resolve(&base.ty) == Ty::I32 {
                    let before = self.diags.len();
                    self.check(&args[1], &Ty::I32);
                    if self.diags.len() > before {
                        return err_expr(span);
                    }
                    return self.infer(&super::int_power::expand(&args[0], &args[1], span), None);
                }
                let ok = self.require(&base, ScalarSet::FLOAT, Reason::Operation(op_name), span);
                let ty = if ok { base.ty.clone() } else { error_ty() };
                let exp = self.check(&args[1], &ty);
                mk(
                    T::Intrinsic {
                        op: Intrinsic::Math(crate::intrinsics::MathFn::Pow),
                        args: vec![base, exp],
                    },
                    ty,
                    span,
                )
            }
            Builtin::ActiveMask => {
                // Where the warp is converged (the only place a warp operation is accepted),
                // every existing lane is active: the ballot of `true`.
                self.check(&args[0], &Ty::Unit);
                let all = mk(T::Lit(crate::types::Literal::Bool(true)), Ty::BOOL, span);
                mk(
                    T::Intrinsic {
                        op: Intrinsic::Warp(WarpOp::Ballot),
                        args: vec![all],
                    },
                    Ty::I32,
                    span,
                )
            }
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
            Builtin::Bits { op, at } => {
                self.same_type_args(op, ScalarSet::INT, at, op_name, args, span)
            }
            Builtin::Convert { to, from } => {
                let x = self.infer(&args[0], None);
                match from {
                    Some(s) => {
                        self.expect(&x, &Ty::Scalar(s));
                    }
                    None => match self.subst.resolve(&x.ty) {
                        Ty::Scalar(s) if s.is_numeric() => {}
                        t if is_error(&t) => {}
                        t if crate::front::typer::unify::as_var(&t).is_some() => {
                            self.require(&x, ScalarSet::NUMERIC, Reason::Operation(op_name), span);
                        }
                        t => {
                            let shown = self.show(&t);
                            let mut d = Diagnostic::error(x.span, format!("cannot convert a value of type `{shown}` to `{}`", to.name()))
                                .with_label(format!("this has type `{shown}`"))
                                .with_note("conversions work between the numeric types int32, int64, float32 and float64");
                            if t == Ty::BOOL {
                                // Literals of the target type: `if b then 1 else 0` is no
                                // float32 (and `1 else 0` for int64 needs `L`).
                                let (one, zero) = match to {
                                    Scalar::F32 | Scalar::F64 => ("1.0", "0.0"),
                                    Scalar::I64 => ("1L", "0L"),
                                    _ => ("1", "0"),
                                };
                                d = d.with_help(format!(
                                    "write `if b then {one} else {zero}` to turn a bool into a number"
                                ));
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
                        pattern: Box::new(ast::Pattern::Tuple(parts, span)),
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
    pub(super) fn module_operator(
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
    pub(super) fn same_type_args(
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
        let mut ty = if ok { first.ty.clone() } else { error_ty() };
        let mut out = vec![first];
        let mut failed = false;
        for a in &args[1..] {
            let te = self.infer(a, Some(&ty));
            failed |= !self.expect(&te, &ty);
            out.push(te);
        }
        // Likewise after a later argument's error: `min 1.0 2` left the result int32 (the
        // literal's variable bound on the failed unification), and the store of it said
        // "expected `float32`, found `int32`" as a second error.
        if failed {
            ty = error_ty();
        }
        mk(T::Intrinsic { op, args: out }, ty, span)
    }

    pub(super) fn atomic(
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
            t if crate::front::typer::unify::as_var(&t).is_some() => {
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
}

/// Substitute type parameters `Param(i)` by `args[i]`.
pub(in crate::front::typer) fn subst_params(t: &Ty, args: &[Ty]) -> Ty {
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
