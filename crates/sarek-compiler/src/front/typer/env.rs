//! Type declarations (records and variants), their lookup tables, the recursive-type check and
//! the conversion of written types ([`ast::TypeExpr`]) to [`Ty`].

use crate::hash::FxHashMap as HashMap;

use super::Checker;
use super::messages::did_you_mean;
use super::unify::Constraint;
use crate::diag::{Diagnostic, Span, closest};
use crate::front::ast;
use crate::front::tast::{CtorDef, FieldDef, RecordDef, RecordId, Ty, VariantDef, VariantId};
use crate::types::Scalar;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TypeRef {
    Record(RecordId),
    Variant(VariantId),
}

/// Records, variants and the name tables that resolve fields and constructors.
#[derive(Default)]
pub(super) struct TypeEnv {
    pub records: Vec<RecordDef>,
    pub variants: Vec<VariantDef>,
    pub names: HashMap<String, TypeRef>,
    /// Field name -> every (record, index) declaring it, in declaration order.
    pub fields: HashMap<String, Vec<(RecordId, u32)>>,
    /// Constructor name -> every (variant, index) declaring it, in declaration order.
    pub ctors: HashMap<String, Vec<(VariantId, u32)>>,
}

impl TypeEnv {
    pub fn record(&self, id: RecordId) -> &RecordDef {
        &self.records[id.0 as usize]
    }
    pub fn variant(&self, id: VariantId) -> &VariantDef {
        &self.variants[id.0 as usize]
    }
}

/// Whether two declarations are the same, ignoring where they are written.
fn same_type_decl(a: &ast::TypeDeclKind, b: &ast::TypeDeclKind) -> bool {
    fn same_ty(a: &ast::TypeExpr, b: &ast::TypeExpr) -> bool {
        use ast::TypeExprKind as K;
        match (&a.kind, &b.kind) {
            (K::Named(x), K::Named(y)) | (K::Var(x), K::Var(y)) => x.name == y.name,
            (K::App(x, c), K::App(y, d)) => c.name == d.name && same_ty(x, y),
            (K::Tuple(xs), K::Tuple(ys)) => {
                xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_ty(x, y))
            }
            _ => false,
        }
    }
    match (a, b) {
        (ast::TypeDeclKind::Record(x), ast::TypeDeclKind::Record(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(f, g)| f.name.name == g.name.name && same_ty(&f.ty, &g.ty))
        }
        (ast::TypeDeclKind::Variant(x), ast::TypeDeclKind::Variant(y)) => {
            x.len() == y.len()
                && x.iter().zip(y).all(|(c, d)| {
                    c.name.name == d.name.name
                        && c.args.len() == d.args.len()
                        && c.args.iter().zip(&d.args).all(|(a, b)| same_ty(a, b))
                })
        }
        _ => false,
    }
}

/// Where a written type appears; decides what it may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TyMode {
    /// Record field, constructor argument, shared-array element.
    Data,
    KernelParam,
    /// Helper parameter or return type: vectors, arrays and `'a` allowed.
    HelperParam,
    /// `let x : t`, `(e : t)`: no vectors.
    Local,
    /// Top-level constant: scalars only.
    Const,
}

const SCALAR_NAMES: [(&str, Scalar); 8] = [
    ("int32", Scalar::I32),
    ("int", Scalar::I32),
    ("int64", Scalar::I64),
    ("float32", Scalar::F32),
    ("float", Scalar::F32),
    ("float64", Scalar::F64),
    ("bool", Scalar::Bool),
    ("double", Scalar::F64),
];

impl Checker {
    /// Register every type declaration of the file, then check them (two phases, so a type may
    /// mention one declared later: that is how indirect recursion gets its proper error).
    pub(super) fn declare_types(&mut self, program: &ast::Program) {
        fn gather<'a>(items: &'a [ast::Item], out: &mut Vec<(&'a ast::TypeDecl, bool)>) {
            for item in items {
                match &item.kind {
                    ast::ItemKind::Type(decl) => {
                        let prelude = item
                            .attrs
                            .iter()
                            .any(|a| a.name == crate::front::parser::PRELUDE_TYPE);
                        out.push((decl, prelude));
                    }
                    ast::ItemKind::Module { items, .. } => gather(items, out),
                    _ => {}
                }
            }
        }
        let mut all = Vec::new();
        gather(&program.items, &mut all);
        let mut decls: Vec<(&ast::TypeDecl, TypeRef)> = Vec::new();
        for (decl, prelude) in all {
            let name = &decl.name.name;
            // Kernels of one file often repeat the same `let module Types = struct ... end`.
            if prelude
                && decls
                    .iter()
                    .any(|(d, _)| d.name.name == *name && same_type_decl(&d.kind, &decl.kind))
            {
                continue;
            }
            if self.env.names.contains_key(name.as_str())
                || SCALAR_NAMES.iter().any(|(n, _)| n == name)
                || name == "unit"
            {
                self.diags.push(
                    Diagnostic::error(
                        decl.name.span,
                        format!("the type `{name}` is defined more than once"),
                    )
                    .with_label("redefined here"),
                );
                continue;
            }
            let r = match &decl.kind {
                ast::TypeDeclKind::Record(_) => {
                    self.env.records.push(RecordDef {
                        name: name.to_string(),
                        span: decl.name.span,
                        fields: vec![],
                    });
                    TypeRef::Record(RecordId(self.env.records.len() as u32 - 1))
                }
                ast::TypeDeclKind::Variant(_) => {
                    self.env.variants.push(VariantDef {
                        name: name.to_string(),
                        span: decl.name.span,
                        ctors: vec![],
                    });
                    TypeRef::Variant(VariantId(self.env.variants.len() as u32 - 1))
                }
            };
            self.env.names.insert(name.to_string(), r);
            decls.push((decl, r));
        }
        for (decl, r) in decls {
            match (&decl.kind, r) {
                (ast::TypeDeclKind::Record(fields), TypeRef::Record(id)) => {
                    let mut defs: Vec<FieldDef> = Vec::new();
                    for f in fields {
                        if defs.iter().any(|d| d.name == f.name.name) {
                            self.diags.push(
                                Diagnostic::error(
                                    f.name.span,
                                    format!("field `{}` is declared twice", f.name.name),
                                )
                                .with_label("declared again here"),
                            );
                            continue;
                        }
                        let ty = self.ty_of(&f.ty, TyMode::Data);
                        let idx = defs.len() as u32;
                        self.env
                            .fields
                            .entry(f.name.name.to_string())
                            .or_default()
                            .push((id, idx));
                        defs.push(FieldDef {
                            name: f.name.name.to_string(),
                            ty,
                            span: f.name.span,
                            mutable: f.mutable,
                        });
                    }
                    self.env.records[id.0 as usize].fields = defs;
                }
                (ast::TypeDeclKind::Variant(ctors), TypeRef::Variant(id)) => {
                    let mut defs: Vec<CtorDef> = Vec::new();
                    for c in ctors {
                        if defs.iter().any(|d| d.name == c.name.name) {
                            self.diags.push(
                                Diagnostic::error(
                                    c.name.span,
                                    format!("constructor `{}` is declared twice", c.name.name),
                                )
                                .with_label("declared again here"),
                            );
                            continue;
                        }
                        let args = c.args.iter().map(|a| self.ty_of(a, TyMode::Data)).collect();
                        let idx = defs.len() as u32;
                        self.env
                            .ctors
                            .entry(c.name.name.to_string())
                            .or_default()
                            .push((id, idx));
                        defs.push(CtorDef {
                            name: c.name.name.to_string(),
                            args,
                            span: c.span,
                        });
                    }
                    self.env.variants[id.0 as usize].ctors = defs;
                }
                _ => unreachable!("registered with its own kind"),
            }
        }
        self.check_recursive_types();
    }

    /// Refuse types that contain themselves (GPU data has a fixed size and layout).
    fn check_recursive_types(&mut self) {
        /// The member of a type through which it contains another: (type, member index).
        #[derive(Clone, Copy)]
        enum Via {
            Field(usize, usize),
            Ctor(usize, usize),
        }
        let n_rec = self.env.records.len();
        let node = |t: TypeRef| match t {
            TypeRef::Record(r) => r.0 as usize,
            TypeRef::Variant(v) => n_rec + v.0 as usize,
        };
        let total = n_rec + self.env.variants.len();
        let mut edges: Vec<Vec<(usize, Via)>> = vec![Vec::new(); total];
        fn contained(t: &Ty, out: &mut Vec<TypeRef>) {
            match t {
                Ty::Record(r) => out.push(TypeRef::Record(*r)),
                Ty::Variant(v) => out.push(TypeRef::Variant(*v)),
                Ty::Tuple(ts) => ts.iter().for_each(|t| contained(t, out)),
                Ty::Vector(e) | Ty::Array { elem: e, .. } => contained(e, out),
                _ => {}
            }
        }
        let mut out = Vec::new();
        for (i, r) in self.env.records.iter().enumerate() {
            for (j, f) in r.fields.iter().enumerate() {
                contained(&f.ty, &mut out);
                edges[i].extend(out.drain(..).map(|t| (node(t), Via::Field(i, j))));
            }
        }
        for (i, v) in self.env.variants.iter().enumerate() {
            for (j, c) in v.ctors.iter().enumerate() {
                c.args.iter().for_each(|a| contained(a, &mut out));
                edges[n_rec + i].extend(out.drain(..).map(|t| (node(t), Via::Ctor(i, j))));
            }
        }
        let name_span = |k: usize| {
            if k < n_rec {
                (self.env.records[k].name.clone(), self.env.records[k].span)
            } else {
                (
                    self.env.variants[k - n_rec].name.clone(),
                    self.env.variants[k - n_rec].span,
                )
            }
        };
        // Only a recursive type's path is put in words.
        let step = |from: usize, via: Via| {
            let member = match via {
                Via::Field(r, f) => format!("field `{}`", self.env.records[r].fields[f].name),
                Via::Ctor(v, c) => {
                    format!("constructor `{}`", self.env.variants[v].ctors[c].name)
                }
            };
            format!("{member} of `{}`", name_span(from).0)
        };
        // A type is recursive when it can reach itself; report each such type once. Depth
        // first; each type is reached along the path that found it first (`parent`).
        let mut stack = Vec::new();
        let mut seen = vec![false; total];
        let mut parent: Vec<Option<(usize, Via)>> = vec![None; total];
        let mut found = Vec::new();
        for start in 0..total {
            stack.clear();
            stack.push(start);
            seen.fill(false);
            parent.fill(None);
            let mut closing = None;
            'search: while let Some(k) = stack.pop() {
                for &(next, via) in &edges[k] {
                    if next == start {
                        closing = Some((k, via));
                        break 'search;
                    }
                    if !seen[next] {
                        seen[next] = true;
                        parent[next] = Some((k, via));
                        stack.push(next);
                    }
                }
            }
            if let Some((last, via)) = closing {
                let mut path = vec![step(last, via)];
                let mut k = last;
                while let Some((from, via)) = parent[k] {
                    path.push(step(from, via));
                    k = from;
                }
                path.reverse();
                found.push((start, path));
            }
        }
        for (start, path) in found {
            let (name, span) = name_span(start);
            self.diags.push(
                Diagnostic::error(span, format!("recursive type `{name}` is not supported"))
                    .with_label("this type contains itself")
                    .with_note(format!("`{name}` is reached again through {}", path.join(", then ")))
                    .with_help("kernel data needs a fixed size: store indices into a vector instead of nesting"),
            );
        }
    }

    /// Convert a written type. Errors are reported and give the error type.
    pub(super) fn ty_of(&mut self, t: &ast::TypeExpr, mode: TyMode) -> Ty {
        let ty = self.ty_of_inner(t, mode);
        self.validate_written(&ty, t.span, mode);
        ty
    }

    fn ty_of_inner(&mut self, t: &ast::TypeExpr, mode: TyMode) -> Ty {
        match &t.kind {
            ast::TypeExprKind::Named(id) => self.named_type(id),
            ast::TypeExprKind::Var(id) => {
                if matches!(mode, TyMode::Data | TyMode::KernelParam | TyMode::Const) {
                    let what = match mode {
                        TyMode::KernelParam => "kernel parameters must have concrete types",
                        TyMode::Const => "constants must have concrete types",
                        _ => "type declarations cannot have type parameters",
                    };
                    self.diags.push(
                        Diagnostic::error(
                            id.span,
                            format!("type variable `'{}` is not allowed here", id.name),
                        )
                        .with_label(what.to_string()),
                    );
                    return super::unify::error_ty();
                }
                if let Some(v) = self.item.tyvars.get(id.name.as_str()) {
                    return v.clone();
                }
                let v = self.subst.fresh_named(&id.name);
                self.item.tyvars.insert(id.name.to_string(), v.clone());
                v
            }
            ast::TypeExprKind::Tuple(parts) => {
                Ty::Tuple(parts.iter().map(|p| self.ty_of_inner(p, mode)).collect())
            }
            ast::TypeExprKind::App(arg, ctor) => {
                let elem = self.ty_of_inner(arg, mode);
                match ctor.name.as_str() {
                    "vector" => Ty::Vector(Box::new(elem)),
                    "array" => {
                        // An array's memory space is not written: the checker keeps it open
                        // (mono then instantiates per space).
                        self.subst.fresh_with(Constraint::Container {
                            elem,
                            vector: false,
                            array: true,
                        })
                    }
                    other => {
                        let help = did_you_mean(closest(other, ["vector", "array"]));
                        let mut d = Diagnostic::error(
                            ctor.span,
                            format!("unknown type constructor `{other}`"),
                        )
                        .with_label("not a type constructor")
                        .with_note("the type constructors are `vector` and `array`");
                        if let Some(h) = help {
                            d = d.with_help(h);
                        }
                        self.diags.push(d);
                        super::unify::error_ty()
                    }
                }
            }
        }
    }

    fn named_type(&mut self, id: &ast::Ident) -> Ty {
        if let Some((_, s)) = SCALAR_NAMES.iter().find(|(n, _)| *n == id.name) {
            return Ty::Scalar(*s);
        }
        if id.name == "unit" {
            return Ty::Unit;
        }
        match self.env.names.get(id.name.as_str()) {
            Some(TypeRef::Record(r)) => Ty::Record(*r),
            Some(TypeRef::Variant(v)) => Ty::Variant(*v),
            None => {
                let mut cands: Vec<&str> = SCALAR_NAMES.iter().map(|(n, _)| *n).collect();
                cands.push("unit");
                cands.extend(self.env.names.keys().map(|s| s.as_str()));
                let mut d = Diagnostic::error(id.span, format!("unknown type `{}`", id.name))
                    .with_label("not a known type");
                if let Some(h) = did_you_mean(closest(&id.name, cands)) {
                    d = d.with_help(h);
                }
                self.diags.push(d);
                super::unify::error_ty()
            }
        }
    }

    fn validate_written(&mut self, ty: &Ty, span: Span, mode: TyMode) {
        let bad = match mode {
            TyMode::Data => (!self.is_data(ty)).then_some(
                "record fields, constructor arguments and array elements must be scalars, records, variants or tuples of scalars",
            ),
            TyMode::KernelParam => match ty {
                Ty::Vector(e) if self.is_data(e) => None,
                // Say what is wrong with the element rather than that a vector is expected.
                Ty::Vector(_) => Some(
                    "a vector's elements must be scalars, records, variants or tuples of scalars",
                ),
                Ty::Scalar(_) | Ty::Record(_) | Ty::Variant(_) => None,
                t if super::unify::is_error(t) => None,
                _ => Some("a kernel parameter must be a scalar, a record, a variant or a `t vector`"),
            },
            TyMode::Const => match ty {
                Ty::Scalar(_) => None,
                t if super::unify::is_error(t) => None,
                _ => Some("a constant must have a scalar type"),
            },
            TyMode::Local => contains_vector(ty)
                .then_some("`vector` types are only allowed for kernel and helper parameters"),
            TyMode::HelperParam => None,
        };
        if let Some(msg) = bad {
            let shown = self.show(ty);
            let mut d = Diagnostic::error(span, format!("the type `{shown}` is not allowed here"))
                .with_label(msg.to_string());
            // `int32 * float32 vector` is `int32 * (float32 vector)`, as in OCaml.
            if let Ty::Tuple(ts) = ty
                && matches!(ts.last(), Some(Ty::Vector(_)))
            {
                d = d.with_help(
                    "`*` binds looser than `vector`: write a vector of tuples as `(t1 * t2) vector`",
                );
            }
            self.diags.push(d);
        }
    }

    /// Scalars, records, variants and tuples of scalars (what a buffer or field can hold).
    pub(super) fn is_data(&self, ty: &Ty) -> bool {
        match ty {
            Ty::Scalar(_) | Ty::Record(_) | Ty::Variant(_) => true,
            Ty::Tuple(ts) => ts
                .iter()
                .all(|t| matches!(t, Ty::Scalar(_)) || super::unify::is_error(t)),
            t => super::unify::is_error(t),
        }
    }

    /// A type as the user writes it (`float32 vector`, `point`, `(int32 * float32)`, `'a`).
    pub(super) fn show(&self, ty: &Ty) -> String {
        show_ty(ty, &self.env, Some(&self.subst))
    }
}

fn contains_vector(t: &Ty) -> bool {
    match t {
        Ty::Vector(_) => true,
        Ty::Tuple(ts) => ts.iter().any(contains_vector),
        Ty::Array { elem, .. } => contains_vector(elem),
        _ => false,
    }
}

/// Render a type; inference variables show as `'a`-style names (or their annotation name).
pub(super) fn show_ty(ty: &Ty, env: &TypeEnv, subst: Option<&super::unify::Subst>) -> String {
    use super::unify::{as_var, is_error};
    let ty = match subst {
        Some(s) => s.resolve(ty),
        None => ty.clone(),
    };
    let atom = |t: &Ty| {
        let s = show_ty(t, env, subst);
        // A variable bound to a tuple is a tuple too: `int32 * (int32 * int32)`.
        let resolved = subst.map_or_else(|| t.clone(), |sub| sub.resolve(t));
        if matches!(resolved, Ty::Tuple(_)) {
            format!("({s})")
        } else {
            s
        }
    };
    match &ty {
        Ty::Unit => "unit".into(),
        Ty::Scalar(s) => s.name().into(),
        Ty::Record(r) => env
            .records
            .get(r.0 as usize)
            .map_or("<record>".into(), |d| d.name.clone()),
        Ty::Variant(v) => env
            .variants
            .get(v.0 as usize)
            .map_or("<variant>".into(), |d| d.name.clone()),
        Ty::Tuple(ts) => ts.iter().map(atom).collect::<Vec<_>>().join(" * "),
        Ty::Vector(e) => format!("{} vector", atom(e)),
        Ty::Array { elem, .. } => format!("{} array", atom(elem)),
        t if is_error(t) => "{error}".into(),
        t => match (as_var(t), subst) {
            (Some(v), Some(s)) => {
                if let Some(Constraint::Container {
                    elem,
                    vector,
                    array,
                }) = s.constraint(v)
                {
                    let kind = match (vector, array) {
                        (true, true) => "vector or array",
                        (true, false) => "vector",
                        _ => "array",
                    };
                    return format!("{} {kind}", atom(elem));
                }
                match s.var_name(v) {
                    Some(n) => format!("'{n}"),
                    None => "'_".into(),
                }
            }
            _ => match t {
                Ty::Param(i) => format!("'{}", (b'a' + (*i % 26) as u8) as char),
                _ => "?".into(),
            },
        },
    }
}
