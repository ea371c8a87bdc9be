//! Type checker: the surface AST to the typed program ([`crate::front::tast`]).
//!
//! Hindley–Milner with let-polymorphism for top-level helpers. Items are checked in order,
//! each against the environment of the items before it:
//!
//! - type declarations first ([`env`]): records and variants, refused when recursive;
//! - constants are checked and folded to a literal, substituted at every use;
//! - a helper is inferred with monomorphic uses of itself, then generalised: float literals
//!   still undecided default to float32, every type variable left in its signature becomes a
//!   type parameter (`Ty::Param`), keeping its constraint ("numeric", "scalar for `=`", "array
//!   of t") so each call site checks its instance;
//! - a kernel is checked with annotated parameters and a unit body.
//!
//! Local helpers (`let f (a : t) = e in body`) are lifted to top-level [`tast::Function`]s
//! named `<item>__<name>`. The variables they capture become extra *leading* parameters,
//! passed by value at each call, so such a helper may not assign a captured variable. A local
//! helper inside a polymorphic helper shares that helper's type parameters. Local helpers are
//! monomorphic and not recursive (as `let` without `rec` in OCaml).
//!
//! Other decisions where LANGUAGE.md is silent: a statement in a sequence must have type
//! `unit` (use `ignore`); an unreachable match arm is an error; the count of an int64 shift
//! may be an int32 (converted); `'a` in an annotation is a unification variable as in OCaml,
//! generalised when it stays free; a helper parameter written `t array` is generic in the
//! array's memory space and size (mono instantiates per array type).
//!
//! `when` guards are desugared into plain matches (the typed AST has none), linearly: see
//! `desugar_guards`; a guarded arm covers nothing for exhaustiveness, as in OCaml.
//!
//! OCaml library spellings that abbreviate an expression (`Int32.add a b`, `fst p`,
//! `incr r`) are typed by rewriting them to that surface expression, so its own rules and
//! messages apply. The guide `docs/language-notes.md` lists every such decision.
//!
//! Errors are collected, never thrown: an ill-typed node gets the error type, which unifies
//! with everything, so one mistake does not cascade and every independent error of the file
//! is reported. Unsuffixed float literals carry their value as `Literal::F64` until the
//! item's final substitution picks float32 or float64.

mod builtins;
mod early_return;
mod env;
mod expr;
pub mod messages;
mod patterns;
mod scope;
mod unify;
pub(crate) mod visit;

use crate::hash::FxHashMap as HashMap;

use crate::diag::{Diagnostic, Span};
use crate::front::name::Name;
use crate::front::tast::{FunId, Ty, VarDecl, VarId};
use crate::front::{ast, tast};
use crate::types::{Literal, Scalar};

pub use messages::{aggregate_equality_help, aggregate_equality_message};

/// The built-in modules (`Std`, `Float32`, ...): a program's own module cannot take these names.
pub const BUILTIN_MODULES: [&str; 14] = builtins::MODULES;

/// Whether `module.name` is the intrinsic `name` already is (`Float.fma` and `fma`), perhaps
/// at a fixed type: a host alias `let fma = Float.fma` restates it.
pub fn restates_intrinsic(module: &str, name: &str) -> bool {
    builtins::restates(module, name)
}

use env::{TyMode, TypeEnv};
use unify::{Constraint, Subst, as_var, error_ty};
use visit::VisitMut;

/// Type-check a whole file; every independent error is reported.
pub fn check_program(program: &ast::Program) -> Result<tast::Program, Vec<Diagnostic>> {
    crate::stack::deep_if(program.tall, || {
        let mut typed = check_program_here(program)?;
        typed.tall = program.tall;
        Ok(typed)
    })
}

fn check_program_here(program: &ast::Program) -> Result<tast::Program, Vec<Diagnostic>> {
    let mut c = Checker::default();
    c.declare_types(program);
    for item in &program.items {
        let name = match &item.kind {
            ast::ItemKind::Fun(f) => &f.name,
            ast::ItemKind::Const { name, .. } => name,
            _ => continue,
        };
        c.top_level
            .entry(name.name.to_string())
            .or_insert(name.span);
    }
    c.check_items(&program.items);
    if !c.diags.is_empty() {
        return Err(c.diags);
    }
    Ok(c.into_program())
}

/// A helper's type: `Ty::Param(i)` stands for its i-th type parameter.
#[derive(Clone, Debug)]
struct Scheme {
    type_params: u32,
    /// What each type parameter may be instantiated with.
    constraints: Vec<Constraint>,
    params: Vec<Ty>,
    ret: Ty,
}

struct FunSlot {
    span: Span,
    scheme: Scheme,
    def: Option<tast::Function>,
}

#[derive(Clone, Debug)]
enum Global {
    Const {
        lit: Literal,
    },
    /// A constant whose type was refused (a record, a tuple): reported once at its
    /// definition, its uses are the error type instead of cascading.
    Refused,
    Fun(FunId),
}

#[derive(Clone, Debug, PartialEq)]
enum LocalKind {
    Param,
    Let,
    LoopIndex,
    /// Shared or local array.
    Array,
    /// A lifted local helper and the scope indices of the variables it captures.
    Fun {
        fun: FunId,
        captures: Vec<usize>,
    },
}

#[derive(Clone, Debug)]
struct Local {
    name: Name,
    id: VarId,
    ty: Ty,
    mutable: bool,
    kind: LocalKind,
    span: Span,
}

/// One local helper being checked: locals below `boundary` are captured.
struct CaptureFrame {
    boundary: usize,
    /// (scope index of the captured local, the lifted helper's parameter standing for it).
    captures: Vec<(usize, VarDecl)>,
}

/// Per-item state.
#[derive(Default)]
struct ItemCtx {
    /// Name of the helper or kernel being checked (prefix of its lifted helpers' names).
    name: String,
    tyvars: HashMap<String, Ty>,
    /// Float-literal variables created in this item (defaulted at its end).
    lit_vars: Vec<u32>,
    /// Local helpers lifted out of this item (they get its type parameters).
    lifted: Vec<FunId>,
}

#[derive(Default)]
pub(super) struct Checker {
    env: TypeEnv,
    subst: Subst,
    diags: Vec<Diagnostic>,
    globals: HashMap<String, Global>,
    funs: Vec<FunSlot>,
    kernels: Vec<tast::Kernel>,
    next_var: u32,
    scope: scope::Scope,
    frames: Vec<CaptureFrame>,
    opens: Vec<String>,
    item: ItemCtx,
    /// Every top-level helper and constant of the file, defined yet or not: a use before
    /// the definition gets a note saying so.
    top_level: HashMap<String, Span>,
    /// The module being checked (`["Geometry_lib"]`, or `["A", "B"]` for nested modules);
    /// its helpers and constants are stored in [`Checker::globals`] as `A.B.name`.
    module_path: Vec<String>,
    /// Full names (`A.B`) of the program's modules defined so far.
    modules: crate::hash::FxHashSet<String>,
    /// Modules opened by a top-level `open M` in the current module (full names).
    top_opens: Vec<String>,
    /// Immutable `let` locals written through a `mutable` field (`let e = v.(i) in e.p <- x`,
    /// as OCaml allows): their binders are made mutable when the item is finished, so the
    /// local is a copy of its own and the store never reaches what it was read from.
    field_stored: crate::hash::FxHashSet<VarId>,
}

impl Checker {
    fn fresh_var_id(&mut self) -> VarId {
        self.next_var += 1;
        VarId(self.next_var - 1)
    }

    fn decl(&mut self, name: impl Into<Name>, ty: Ty, mutable: bool, span: Span) -> VarDecl {
        VarDecl {
            id: self.fresh_var_id(),
            name: name.into(),
            ty,
            mutable,
            span,
        }
    }

    fn push_local(&mut self, d: &VarDecl, kind: LocalKind) {
        self.scope.push(Local {
            name: d.name.clone(),
            id: d.id,
            ty: d.ty.clone(),
            mutable: d.mutable,
            kind,
            span: d.span,
        });
    }

    fn begin_item(&mut self, name: &str) {
        self.item = ItemCtx {
            name: name.to_string(),
            ..ItemCtx::default()
        };
        self.scope.clear();
        self.frames.clear();
        self.opens = self.top_opens.clone();
    }

    /// Check items in order; a module's items are checked with its name as the prefix of
    /// their global names, and its top-level opens end with it.
    fn check_items(&mut self, items: &[ast::Item]) {
        for item in items {
            match &item.kind {
                ast::ItemKind::Type(_) => {}
                ast::ItemKind::Const { name, ty, value } => self.check_const(name, ty, value),
                ast::ItemKind::Fun(decl) => self.check_top_function(decl),
                ast::ItemKind::Kernel(k) => self.check_kernel(k),
                ast::ItemKind::Module { name, items } => {
                    self.module_path.push(name.name.to_string());
                    let full = self.module_path.join(".");
                    self.modules.insert(full);
                    let saved = std::mem::take(&mut self.top_opens);
                    self.check_items(items);
                    self.top_opens = saved;
                    self.module_path.pop();
                }
                ast::ItemKind::Open(m) => match self.resolve_module(&m.name) {
                    Some(full) => self.top_opens.push(full),
                    None => {
                        let known: Vec<&str> = self.modules.iter().map(|m| m.as_str()).collect();
                        let mut d = Diagnostic::error(m.span, format!("unknown module `{}`", m.name))
                            .with_label("not a module of this program")
                            .with_note("a module is a file given with the program (`geometry_lib.sarek` is `Geometry_lib`) or a `module M = struct ... end` defined above");
                        if let Some(h) =
                            messages::did_you_mean(crate::diag::closest(&m.name, known))
                        {
                            d = d.with_help(h);
                        }
                        self.diags.push(d);
                    }
                },
            }
        }
    }

    /// The global name of `name` defined in the current module.
    fn global_key(&self, name: &str) -> String {
        if self.module_path.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.module_path.join("."))
        }
    }

    /// The full name of module `name` as seen from the current module (innermost first),
    /// then from the opened modules.
    fn resolve_module(&self, name: &str) -> Option<String> {
        (0..=self.module_path.len())
            .rev()
            .find_map(|depth| {
                let mut parts = self.module_path[..depth].to_vec();
                parts.push(name.to_string());
                let full = parts.join(".");
                self.modules.contains(&full).then_some(full)
            })
            .or_else(|| {
                self.opens.iter().rev().find_map(|m| {
                    let full = format!("{m}.{name}");
                    self.modules.contains(&full).then_some(full)
                })
            })
    }

    /// A helper or constant named `path.name` seen from here: the current module and its
    /// parents (innermost first), then the opened modules (last opened first).
    fn find_global(&self, path: &[ast::Ident], name: &str) -> Option<Global> {
        // Every candidate key is built in one buffer (helpers are looked up at each call);
        // an unqualified name at the root is its own key.
        let mut key = String::new();
        for depth in (0..=self.module_path.len()).rev() {
            let found = if depth == 0 && path.is_empty() {
                self.globals.get(name)
            } else {
                key.clear();
                let modules = self.module_path[..depth].iter().map(String::as_str);
                for part in modules.chain(path.iter().map(|p| p.name.as_str())) {
                    key.push_str(part);
                    key.push('.');
                }
                key.push_str(name);
                self.globals.get(key.as_str())
            };
            if let Some(g) = found {
                return Some(g.clone());
            }
        }
        if path.is_empty() {
            for m in self.opens.iter().rev() {
                key.clear();
                key.push_str(m);
                key.push('.');
                key.push_str(name);
                if let Some(g) = self.globals.get(key.as_str()) {
                    return Some(g.clone());
                }
            }
        }
        None
    }

    fn check_const(&mut self, name: &ast::Ident, ty: &ast::TypeExpr, value: &ast::Expr) {
        self.begin_item(&name.name);
        let reported = self.diags.len();
        let ty = self.ty_of(ty, TyMode::Const);
        let mut value = self.check(value, &ty);
        if !matches!(ty, Ty::Scalar(_)) {
            // `ty_of` said why; "not a compile-time constant" and uses read as int32 ("the
            // type `int32` has no field `x`") would only repeat it wrongly.
            let shown = self.show(&ty);
            if let Some(d) = self.diags.get_mut(reported)
                && !unify::is_error(&ty)
            {
                d.help.push(format!(
                    "write a helper of `()` returning it, `let {n} () : {shown} = ...`, used as `{n} ()`",
                    n = name.name
                ));
            }
            self.globals
                .insert(self.global_key(&name.name), Global::Refused);
            return;
        }
        self.default_literals();
        let mut z = Zonker {
            c: self,
            params: None,
        };
        z.expr(&mut value);
        match expr::const_eval(&value) {
            Some(lit) => {
                self.globals
                    .insert(self.global_key(&name.name), Global::Const { lit });
            }
            None => {
                // Keep the name known so uses do not report it as unknown.
                if !unify::is_error(&value.ty) {
                    self.diags.push(
                        Diagnostic::error(value.span, format!("the value of constant `{}` is not a compile-time constant", name.name))
                            .with_label("not computable at compile time")
                            .with_note("a constant is a literal or arithmetic on literals and earlier constants"),
                    );
                }
                let lit = match ty {
                    Ty::Scalar(Scalar::F32) => Literal::F32(0.0),
                    Ty::Scalar(Scalar::F64) => Literal::F64(0.0),
                    Ty::Scalar(Scalar::I64) => Literal::I64(0),
                    Ty::Scalar(Scalar::Bool) => Literal::Bool(false),
                    _ => Literal::I32(0),
                };
                self.globals
                    .insert(self.global_key(&name.name), Global::Const { lit });
            }
        }
    }

    /// `[@sarek.inline N]` on the definition or a body `pragma ["sarek.inline N"] (...)`.
    fn inline_depth<'a>(
        &mut self,
        decl: &'a ast::FunDecl,
    ) -> (Option<tast::InlineMark>, &'a ast::Expr) {
        let mut mark = None;
        for a in &decl.attrs {
            if a.name == "sarek.inline" || a.name == "inline" {
                let form = tast::InlineForm::Attribute {
                    name: a.name.clone(),
                    outer: a.outer,
                };
                mark = self.inline_mark(&a.payload, a.span, form);
            }
        }
        let mut body = &decl.body;
        if let ast::ExprKind::Pragma { args, body: inner } = &body.kind {
            for arg in args {
                if let Some(n) = arg.trim().strip_prefix("sarek.inline") {
                    mark = self.inline_mark(n, body.span, tast::InlineForm::Pragma);
                    body = inner;
                }
            }
        }
        (mark, body)
    }

    /// The mark with its count, or a located error showing the count in the form written.
    fn inline_mark(
        &mut self,
        payload: &str,
        span: Span,
        form: tast::InlineForm,
    ) -> Option<tast::InlineMark> {
        match payload.trim().parse::<u32>() {
            Ok(depth) => Some(tast::InlineMark { depth, form }),
            Err(_) => {
                let example = tast::InlineMark { depth: 4, form };
                let what = match &example.form {
                    tast::InlineForm::Attribute { name, .. } => name.as_str(),
                    tast::InlineForm::Pragma => "sarek.inline",
                };
                self.diags.push(
                    Diagnostic::error(span, format!("`{what}` needs a non-negative integer count"))
                        .with_label(format!("found `{}`", payload.trim()))
                        .with_help(format!("write e.g. `{example}`")),
                );
                None
            }
        }
    }

    /// The count of a `what` hint; a bad one is an error whose help shows `example`, a good
    /// count in the form the user wrote.
    fn parse_count(&mut self, payload: &str, span: Span, what: &str, example: &str) -> Option<u32> {
        match payload.trim().parse::<u32>() {
            Ok(n) => Some(n),
            Err(_) => {
                self.diags.push(
                    Diagnostic::error(span, format!("`{what}` needs a non-negative integer count"))
                        .with_label(format!("found `{}`", payload.trim()))
                        .with_help(format!("write e.g. `{example}`")),
                );
                None
            }
        }
    }

    /// Two parameters of one kernel or helper with the same name (OCaml refuses it; the
    /// generators would emit two declarations of one name). `_` may repeat.
    fn refuse_duplicate_params(&mut self, params: &[ast::Param]) {
        for (i, p) in params.iter().enumerate() {
            let name = &p.name.name;
            if name == "_" {
                continue;
            }
            if let Some(first) = params[..i].iter().find(|q| &q.name.name == name) {
                self.diags.push(
                    Diagnostic::error(
                        p.name.span,
                        format!("the parameter `{name}` is bound more than once"),
                    )
                    .with_label("bound again here")
                    .with_secondary(first.name.span, "first bound here")
                    .with_help("rename one of them"),
                );
            }
        }
    }

    /// Check params, return type and body of a helper (top-level or local); the helper's own
    /// name is visible in its body when `recursive`. Returns the function with inferred types.
    fn check_function_body(
        &mut self,
        decl: &ast::FunDecl,
        id: FunId,
        local: bool,
    ) -> tast::Function {
        let scope_mark = self.scope.len();
        self.refuse_duplicate_params(&decl.params);
        let mut params = Vec::new();
        for p in &decl.params {
            let ty = match &p.ty {
                Some(t) => self.ty_of(t, TyMode::HelperParam),
                None => self.subst.fresh(),
            };
            let d = self.decl(&p.name.name, ty, false, p.name.span);
            params.push(d);
        }
        let ret = match &decl.ret {
            Some(t) => self.ty_of(t, TyMode::HelperParam),
            None => self.subst.fresh(),
        };
        let (inline_depth, body) = self.inline_depth(decl);
        let scheme = Scheme {
            type_params: 0,
            constraints: vec![],
            params: params.iter().map(|p| p.ty.clone()).collect(),
            ret: ret.clone(),
        };
        self.funs[id.0 as usize].scheme = scheme;
        if decl.recursive {
            if local {
                self.diags.push(
                    Diagnostic::error(
                        decl.name.span,
                        format!("local helper `{}` cannot be recursive", decl.name.name),
                    )
                    .with_label("declared with `let rec` inside an expression")
                    .with_help("define the recursive helper at top level"),
                );
            } else {
                self.globals
                    .insert(self.global_key(&decl.name.name), Global::Fun(id));
            }
        }
        for p in &params {
            self.push_local(p, LocalKind::Param);
        }
        let body = self.check(body, &ret);
        self.scope.truncate(scope_mark);
        tast::Function {
            id,
            name: decl.name.name.to_string(),
            source_name: decl.name.name.to_string(),
            span: decl.name.span,
            type_params: 0,
            params,
            ret,
            body,
            recursive: decl.recursive,
            inline_depth,
        }
    }

    /// Reserve a helper id (before its body, so it can call itself); `span` is its name.
    fn new_fun_slot(&mut self, span: Span) -> FunId {
        self.funs.push(FunSlot {
            span,
            scheme: Scheme {
                type_params: 0,
                constraints: vec![],
                params: vec![],
                ret: Ty::Unit,
            },
            def: None,
        });
        FunId(self.funs.len() as u32 - 1)
    }

    fn check_top_function(&mut self, decl: &ast::FunDecl) {
        self.begin_item(&decl.name.name);
        let id = self.new_fun_slot(decl.name.span);
        let mut f = self.check_function_body(decl, id, false);
        self.default_literals();

        // Generalise: the variables left in the signature become type parameters, in order.
        let mut order = Vec::new();
        for t in f
            .params
            .iter()
            .map(|p| &p.ty)
            .chain(std::iter::once(&f.ret))
        {
            self.collect_vars(t, &mut order);
        }
        let mut constraints = Vec::new();
        for (i, v) in order.iter().enumerate() {
            constraints.push(
                self.subst
                    .constraint(*v)
                    .cloned()
                    .unwrap_or(Constraint::Any),
            );
            self.subst.bind(*v, Ty::Param(i as u32));
        }
        let n = order.len() as u32;
        let constraints = constraints
            .into_iter()
            .map(|c| match c {
                Constraint::Container {
                    elem,
                    vector,
                    array,
                } => Constraint::Container {
                    elem: self.subst.zonk(&elem),
                    vector,
                    array,
                },
                other => other,
            })
            .collect();

        let lifted = std::mem::take(&mut self.item.lifted);
        let mut z = Zonker {
            c: self,
            params: Some((n, id, lifted.clone())),
        };
        z.function(&mut f);
        for l in &lifted {
            if let Some(mut lf) = z.c.funs[l.0 as usize].def.take() {
                z.function(&mut lf);
                lf.type_params = n;
                z.c.funs[l.0 as usize].def = Some(lf);
            }
        }
        f.type_params = n;
        self.funs[id.0 as usize].scheme = Scheme {
            type_params: n,
            constraints,
            params: f.params.iter().map(|p| p.ty.clone()).collect(),
            ret: f.ret.clone(),
        };
        self.funs[id.0 as usize].def = Some(f);
        self.globals
            .insert(self.global_key(&decl.name.name), Global::Fun(id));
    }

    fn collect_vars(&self, t: &Ty, out: &mut Vec<u32>) {
        let t = self.subst.resolve(t);
        if let Some(v) = as_var(&t) {
            if !out.contains(&v) {
                out.push(v);
                if let Some(Constraint::Container { elem, .. }) = self.subst.constraint(v) {
                    self.collect_vars(&elem.clone(), out);
                }
            }
            return;
        }
        match t {
            Ty::Tuple(ts) => ts.iter().for_each(|t| self.collect_vars(t, out)),
            Ty::Vector(e) | Ty::Array { elem: e, .. } => self.collect_vars(&e, out),
            _ => {}
        }
    }

    fn check_kernel(&mut self, k: &ast::KernelDecl) {
        // Prelude helpers are visible to this kernel only: the globals are restored after it.
        let saved_globals = (!k.prelude.is_empty()).then(|| self.globals.clone());
        for helper in &k.prelude {
            self.check_top_function(helper);
        }
        self.check_kernel_body(k);
        if let Some(globals) = saved_globals {
            self.globals = globals;
        }
    }

    fn check_kernel_body(&mut self, k: &ast::KernelDecl) {
        self.begin_item(&k.name.name);
        if self.kernels.iter().any(|x| x.name == k.name.name) {
            self.diags.push(
                Diagnostic::error(
                    k.name.span,
                    format!("the kernel `{}` is defined more than once", k.name.name),
                )
                .with_label("redefined here"),
            );
        }
        self.refuse_duplicate_params(&k.params);
        let mut params = Vec::new();
        for p in &k.params {
            let ty = match &p.ty {
                Some(t) => self.ty_of(t, TyMode::KernelParam),
                None => {
                    self.diags.push(
                        Diagnostic::error(p.span, format!("kernel parameter `{}` needs a type annotation", p.name.name))
                            .with_label("missing type")
                            .with_note("kernel parameters are what the host passes; their types cannot be inferred")
                            .with_help(format!("write `({} : float32 vector)` or the type it should have", p.name.name)),
                    );
                    error_ty()
                }
            };
            let d = self.decl(&p.name.name, ty, false, p.name.span);
            self.push_local(&d, LocalKind::Param);
            params.push(d);
        }
        // Upstream's `if c then return_unit ();` guards, unless the program names its own
        // `return_unit`.
        let guarded = if self.find_global(&[], "return_unit").is_none() {
            early_return::rewrite_guards(&k.body)
        } else {
            None
        };
        let mut body = self.infer(guarded.as_ref().unwrap_or(&k.body), Some(&Ty::Unit));
        if self.subst.unify(&body.ty, &Ty::Unit).is_err() {
            let found = self.show(&body.ty);
            self.diags.push(
                Diagnostic::error(
                    k.body.span,
                    format!("the body of kernel `{}` must have type `unit`", k.name.name),
                )
                .with_label(format!("this has type `{found}`"))
                .with_note("kernels return nothing: results are written into vector parameters")
                .with_help("write the result with `v.(i) <- e`, or discard it with `ignore (...)`"),
            );
        }
        self.default_literals();
        let lifted = std::mem::take(&mut self.item.lifted);
        let mut z = Zonker {
            c: self,
            params: Some((0, FunId(u32::MAX), lifted.clone())),
        };
        z.expr(&mut body);
        for d in &mut params {
            z.decl(d);
        }
        for l in &lifted {
            if let Some(mut lf) = z.c.funs[l.0 as usize].def.take() {
                z.function(&mut lf);
                z.c.funs[l.0 as usize].def = Some(lf);
            }
        }
        self.kernels.push(tast::Kernel {
            name: k.name.name.to_string(),
            span: k.name.span,
            params,
            body,
        });
    }

    /// Undecided float literals become float32 (float64 only where their constraint says so).
    fn default_literals(&mut self) {
        for v in std::mem::take(&mut self.item.lit_vars) {
            let t = self.subst.resolve(&unify::var_ty(v));
            if let Some(rep) = as_var(&t) {
                let s = match self.subst.constraint(rep) {
                    Some(Constraint::Scalar { set, .. }) => {
                        set.default_member().unwrap_or(Scalar::F32)
                    }
                    _ => Scalar::F32,
                };
                self.subst.bind(rep, Ty::Scalar(s));
            }
        }
    }

    /// Assemble the program; functions are renumbered so that `FunId(i)` is the i-th function
    /// and every helper precedes the helpers and kernels that call it.
    fn into_program(self) -> tast::Program {
        let mut order = Vec::new();
        let mut placed = vec![false; self.funs.len()];
        let mut defs: Vec<Option<tast::Function>> = self.funs.into_iter().map(|f| f.def).collect();
        let callees: Vec<Vec<FunId>> = defs
            .iter_mut()
            .map(|d| {
                d.as_mut()
                    .map(|f| collect_calls(&mut f.body))
                    .unwrap_or_default()
            })
            .collect();
        fn place(i: usize, callees: &[Vec<FunId>], placed: &mut [bool], order: &mut Vec<usize>) {
            if placed[i] {
                return;
            }
            placed[i] = true;
            for c in &callees[i] {
                place(c.0 as usize, callees, placed, order);
            }
            order.push(i);
        }
        for i in 0..defs.len() {
            place(i, &callees, &mut placed, &mut order);
        }
        let mut new_id = vec![FunId(0); defs.len()];
        for (k, i) in order.iter().enumerate() {
            new_id[*i] = FunId(k as u32);
        }
        // Helper names are made unique (a later top-level helper may shadow an earlier one, two
        // lifted helpers may share a name): a clash gets `_2`, `_3`, ... checked against every
        // name of the program, so generated code never declares one name twice.
        let mut taken: crate::hash::FxHashSet<String> =
            self.kernels.iter().map(|k| k.name.clone()).collect();
        taken.extend(self.env.records.iter().map(|r| r.name.clone()));
        taken.extend(self.env.variants.iter().map(|v| v.name.clone()));
        let all_names: Vec<String> = defs.iter().flatten().map(|f| f.name.clone()).collect();
        let mut functions = Vec::new();
        for i in order {
            if let Some(mut f) = defs[i].take() {
                f.id = new_id[i];
                if taken.contains(&f.name) {
                    let base = f.name.clone();
                    let mut k = 2;
                    while taken.contains(&f.name) || all_names.contains(&f.name) {
                        f.name = format!("{base}_{k}");
                        k += 1;
                    }
                }
                taken.insert(f.name.clone());
                renumber_calls(&mut f.body, &new_id);
                functions.push(f);
            }
        }
        let mut kernels = self.kernels;
        for k in &mut kernels {
            renumber_calls(&mut k.body, &new_id);
        }
        tast::Program {
            records: self.env.records,
            variants: self.env.variants,
            functions,
            kernels,
            tall: false,
        }
    }
}

/// Every function called in `e` (direct callees, first-call order).
fn collect_calls(e: &mut tast::Expr) -> Vec<FunId> {
    struct C(Vec<FunId>);
    impl VisitMut for C {
        fn expr(&mut self, e: &mut tast::Expr) {
            if let tast::ExprKind::Call { func, .. } = &e.kind
                && !self.0.contains(func)
            {
                self.0.push(*func);
            }
            visit::walk_expr(self, e);
        }
    }
    let mut c = C(Vec::new());
    c.expr(e);
    c.0
}

fn renumber_calls(e: &mut tast::Expr, map: &[FunId]) {
    struct R<'a>(&'a [FunId]);
    impl VisitMut for R<'_> {
        fn expr(&mut self, e: &mut tast::Expr) {
            if let tast::ExprKind::Call { func, .. } = &mut e.kind {
                *func = self.0[func.0 as usize];
            }
            visit::walk_expr(self, e);
        }
    }
    R(map).expr(e);
}

/// The final substitution of an item: resolves every type, defaults what is left, fixes float
/// literals to their decided width and gives calls to the item itself and to its lifted local
/// helpers the identity instantiation of its type parameters.
struct Zonker<'c> {
    c: &'c mut Checker,
    /// (type parameter count, the item's own FunId, its lifted helpers).
    params: Option<(u32, FunId, Vec<FunId>)>,
}

impl Zonker<'_> {
    fn function(&mut self, f: &mut tast::Function) {
        for p in &mut f.params {
            self.decl(p);
        }
        self.ty(&mut f.ret);
        self.expr(&mut f.body);
    }

    fn final_ty(&mut self, t: &Ty) -> Ty {
        if !self.c.subst.has_vars(t) {
            return self.c.subst.zonk(t);
        }
        let t = self.c.subst.zonk(t);
        self.default_vars(&t);
        self.c.subst.zonk(&t)
    }

    /// Bind every variable still free in `t` to its default.
    fn default_vars(&mut self, t: &Ty) {
        let mut vars = Vec::new();
        self.c.collect_vars(t, &mut vars);
        for v in vars {
            if as_var(&self.c.subst.resolve(&unify::var_ty(v))).is_none() {
                continue;
            }
            let d = match self.c.subst.constraint(v).cloned() {
                Some(Constraint::Scalar { set, .. }) => {
                    Ty::Scalar(set.default_member().unwrap_or(Scalar::I32))
                }
                Some(Constraint::Container { elem, vector, .. }) => {
                    if vector {
                        Ty::Vector(Box::new(elem))
                    } else {
                        Ty::Array {
                            elem: Box::new(elem),
                            space: crate::types::MemSpace::Local,
                            size: None,
                        }
                    }
                }
                _ => Ty::Unit,
            };
            self.c.subst.bind(v, d);
            let again = unify::var_ty(v);
            self.default_vars(&again);
        }
    }
}

impl VisitMut for Zonker<'_> {
    fn ty(&mut self, t: &mut Ty) {
        *t = self.final_ty(t);
    }

    fn decl(&mut self, d: &mut VarDecl) {
        self.ty(&mut d.ty);
        if self.c.field_stored.contains(&d.id) {
            d.mutable = true;
        }
    }

    fn expr(&mut self, e: &mut tast::Expr) {
        visit::walk_expr(self, e);
        match &mut e.kind {
            tast::ExprKind::Lit(lit) => fix_float_literal(lit, &e.ty),
            tast::ExprKind::Match { scrutinee, arms } => {
                for arm in arms {
                    fix_pattern_literals(&mut arm.pattern, &scrutinee.ty, &self.c.env);
                }
            }
            tast::ExprKind::Let { pattern, value, .. } => {
                fix_pattern_literals(pattern, &value.ty, &self.c.env)
            }
            tast::ExprKind::LetLocalArray { var, .. } => {
                if let Ty::Array { elem, .. } = &var.ty
                    && **elem == Ty::Unit
                {
                    self.c.diags.push(
                        Diagnostic::error(
                            var.span,
                            format!(
                                "cannot infer the element type of local array `{}`",
                                var.name
                            ),
                        )
                        .with_label("element type unknown")
                        .with_help(format!(
                            "annotate it: `let {} : float32 array = create_array ...`",
                            var.name
                        )),
                    );
                }
            }
            tast::ExprKind::Call {
                func, type_args, ..
            } => {
                if let Some((n, own, lifted)) = &self.params
                    && (*func == *own || lifted.contains(func))
                {
                    *type_args = (0..*n).map(Ty::Param).collect();
                }
            }
            _ => {}
        }
    }
}

fn fix_float_literal(lit: &mut Literal, ty: &Ty) {
    if let (Literal::F64(x), Ty::Scalar(Scalar::F32)) = (*lit, ty) {
        *lit = Literal::F32(x as f32);
    }
}

fn fix_pattern_literals(p: &mut tast::Pattern, ty: &Ty, env: &TypeEnv) {
    match p {
        tast::Pattern::Lit(l) => fix_float_literal(l, ty),
        tast::Pattern::Tuple(ps) => {
            if let Ty::Tuple(ts) = ty {
                for (p, t) in ps.iter_mut().zip(ts) {
                    fix_pattern_literals(p, t, env);
                }
            }
        }
        tast::Pattern::Or(ps) => ps.iter_mut().for_each(|p| fix_pattern_literals(p, ty, env)),
        tast::Pattern::Ctor {
            variant,
            ctor,
            args,
        } => {
            if let Some(c) = env
                .variants
                .get(variant.0 as usize)
                .and_then(|v| v.ctors.get(*ctor as usize))
            {
                for (p, t) in args.iter_mut().zip(&c.args) {
                    fix_pattern_literals(p, t, env);
                }
            }
        }
        tast::Pattern::Wildcard | tast::Pattern::Bind(_) => {}
    }
}
