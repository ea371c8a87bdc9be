//! Monomorphisation: one instance of each polymorphic helper per type-argument tuple reachable
//! from the kernels (and from the monomorphic helpers), including calls from one polymorphic
//! helper to another, which are followed with their type arguments substituted.
//!
//! Every monomorphic helper is kept as is. A polymorphic helper is replaced by its instances;
//! one never used is dropped (it cannot be represented without type parameters). Each
//! instance is a copy of the helper with `Ty::Param(i)` replaced by the i-th type argument and
//! every binder given a fresh [`VarId`], so ids stay unique across the program.
//!
//! Instance names are `<helper>__<arg>_<arg>...` with each argument mangled readably
//! (`f32`, `point`, `vec_point`, `tup_f32_i32`, `sharr_f32`). User identifiers may contain
//! `__`, so a candidate name is checked against every name the program declares (helpers,
//! kernels, records, variants) and every instance name already given; on a clash `_2`, `_3`,
//! ... is appended. Names are therefore unique by construction, and stable: they depend only
//! on the program text.
//!
//! After substitution the instance is checked again for what only its type arguments can
//! break: `=`/`<>` on an aggregate (the typer refuses this at the call site already; this is
//! the second gate seed 003 describes), arithmetic on non-numbers and non-scalar tuples.

use crate::hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::diag::{Diagnostic, Span};
use crate::front::tast::{Expr, ExprKind, FunId, Function, Program, Ty, VarDecl, VarId};
use crate::front::typer::messages::{aggregate_equality_help, aggregate_equality_message};
use crate::front::typer::visit::{self, VisitMut};
use crate::types::{BinOp, MemSpace};

pub fn monomorphise(mut program: Program) -> Result<Program, Vec<Diagnostic>> {
    // Fresh variables and instance names serve only the instances of polymorphic helpers:
    // without one, the walk for the largest variable and the set of names are not built.
    let polymorphic = program.functions.iter().any(|f| f.type_params > 0);
    let next_var = if polymorphic {
        max_var(&mut program) + 1
    } else {
        0
    };
    let mut names: HashSet<String> = HashSet::default();
    if polymorphic {
        names.extend(program.functions.iter().map(|f| f.name.clone()));
        names.extend(program.kernels.iter().map(|k| k.name.clone()));
        names.extend(program.records.iter().map(|r| r.name.clone()));
        names.extend(program.variants.iter().map(|v| v.name.clone()));
    }
    let monomorphic: Vec<FunId> = (program.functions.iter())
        .filter(|f| f.type_params == 0)
        .map(|f| f.id)
        .collect();
    let mut m = Mono {
        originals: std::mem::take(&mut program.functions)
            .into_iter()
            .map(|f| (f.id, f))
            .collect(),
        records: program.records.iter().map(|r| r.name.clone()).collect(),
        variants: program.variants.iter().map(|v| v.name.clone()).collect(),
        names,
        next_var,
        instances: HashMap::default(),
        slots: Vec::new(),
        order: Vec::new(),
        diags: Vec::new(),
    };
    for f in monomorphic {
        m.instance(f, &[], Span::DUMMY);
    }
    let mut kernels = std::mem::take(&mut program.kernels);
    for k in &mut kernels {
        m.resolve_calls(&mut k.body);
        m.check_instance(&k.body, None);
    }
    if !m.diags.is_empty() {
        return Err(m.diags);
    }
    // Renumber so FunId(i) is the i-th function; `order` is callee-first already.
    let mut new_id = vec![FunId(u32::MAX); m.slots.len()];
    for (pos, slot) in m.order.iter().enumerate() {
        new_id[*slot] = FunId(pos as u32);
    }
    let mut functions = Vec::new();
    for slot in m.order.clone() {
        let mut f = m.slots[slot].take().expect("each instance placed once");
        f.id = new_id[slot];
        renumber(&mut f.body, &new_id);
        functions.push(f);
    }
    for k in &mut kernels {
        renumber(&mut k.body, &new_id);
    }
    Ok(Program {
        records: std::mem::take(&mut program.records),
        variants: std::mem::take(&mut program.variants),
        functions,
        kernels,
        tall: program.tall,
    })
}

struct Mono {
    originals: HashMap<FunId, Function>,
    records: Vec<String>,
    variants: Vec<String>,
    names: HashSet<String>,
    next_var: u32,
    /// (helper, type arguments) -> instance slot.
    instances: HashMap<(FunId, Vec<Ty>), usize>,
    /// Instances by slot (taken when emitted).
    slots: Vec<Option<Function>>,
    /// Slots in emission order (callees before callers).
    order: Vec<usize>,
    diags: Vec<Diagnostic>,
}

impl Mono {
    /// The slot of `func` instantiated at `args`, creating (and emitting) it on first use
    /// (at the call `site`, which messages about the instance point to).
    fn instance(&mut self, func: FunId, args: &[Ty], site: Span) -> usize {
        let key = (func, args.to_vec());
        if let Some(slot) = self.instances.get(&key) {
            return *slot;
        }
        let slot = self.slots.len();
        self.slots.push(None);
        self.instances.insert(key, slot);
        // A monomorphic helper has one instance: its original moves there (no copy).
        let monomorphic = self
            .originals
            .get(&func)
            .is_some_and(|f| f.type_params == 0);
        let mut f = if monomorphic {
            self.originals.remove(&func)
        } else {
            self.originals.get(&func).cloned()
        }
        .expect("calls name existing helpers");
        if !args.is_empty() {
            debug_assert!(self.next_var > 0, "an instance of a polymorphic helper");
            f.name = self.instance_name(&f, args);
            let mut inst = Instantiate {
                args,
                renames: HashMap::default(),
                next_var: &mut self.next_var,
            };
            for p in &mut f.params {
                inst.decl(p);
            }
            inst.ty(&mut f.ret);
            inst.expr(&mut f.body);
            f.type_params = 0;
        }
        // Calls inside are resolved (and their instances emitted) before this one is placed;
        // a chain of helpers nests here once per helper.
        crate::stack::grow(|| self.resolve_calls(&mut f.body));
        if !args.is_empty() {
            let at: Vec<String> = args.iter().map(|t| self.show(t)).collect();
            let what = format!("`{}` used at `{}`", f.source_name, at.join("`, `"));
            self.check_instance(&f.body, Some((&what, site)));
        }
        self.slots[slot] = Some(f);
        self.order.push(slot);
        slot
    }

    /// Each type parameter is named by the first parameter (or the result) whose type mentions
    /// it, instantiated: `swap (a : 'a vector)` at `point` is `swap__vec_point`,
    /// `pick (c : bool) (a : 'a)` at float32 is `pick__f32`.
    fn instance_name(&mut self, f: &Function, args: &[Ty]) -> String {
        let sig: Vec<&Ty> = f
            .params
            .iter()
            .map(|p| &p.ty)
            .chain(std::iter::once(&f.ret))
            .collect();
        let mut parts: Vec<String> = Vec::new();
        for i in 0..args.len() as u32 {
            let part = match sig.iter().find(|t| mentions(t, i)) {
                Some(t) => self.mangle(&subst(t, args)),
                None => self.mangle(&args[i as usize]),
            };
            if !parts.contains(&part) {
                parts.push(part);
            }
        }
        let candidate = format!("{}__{}", f.name, parts.join("_"));
        let mut name = candidate.clone();
        let mut k = 2;
        while self.names.contains(&name) {
            name = format!("{candidate}_{k}");
            k += 1;
        }
        self.names.insert(name.clone());
        name
    }

    fn mangle(&self, t: &Ty) -> String {
        match t {
            Ty::Unit => "unit".into(),
            Ty::Scalar(s) => s.short().into(),
            Ty::Record(r) => self.records[r.0 as usize].clone(),
            Ty::Variant(v) => self.variants[v.0 as usize].clone(),
            Ty::Tuple(ts) => format!(
                "tup_{}",
                ts.iter()
                    .map(|t| self.mangle(t))
                    .collect::<Vec<_>>()
                    .join("_")
            ),
            Ty::Vector(e) => format!("vec_{}", self.mangle(e)),
            Ty::Array { elem, space, size } => {
                let sp = match space {
                    MemSpace::Shared => "sharr",
                    MemSpace::Local => "locarr",
                    MemSpace::Global => "arr",
                };
                // The size is part of the instance (a helper may take `length` of it).
                let n = size.map_or(String::new(), |n| n.to_string());
                format!("{sp}{n}_{}", self.mangle(elem))
            }
            Ty::Param(i) => format!("p{i}"),
        }
    }

    /// Point every call at its instance; type arguments are emptied.
    fn resolve_calls(&mut self, e: &mut Expr) {
        struct R<'m>(&'m mut Mono);
        impl VisitMut for R<'_> {
            fn expr(&mut self, e: &mut Expr) {
                visit::walk_expr(self, e);
                if let ExprKind::Call {
                    func, type_args, ..
                } = &mut e.kind
                {
                    let slot = self.0.instance(*func, type_args, e.span);
                    *func = FunId(slot as u32);
                    type_args.clear();
                }
            }
        }
        R(self).expr(e);
    }

    /// A type as the user writes it (for messages).
    fn show(&self, t: &Ty) -> String {
        show_ty(t, &self.records, &self.variants)
    }

    /// What only the type arguments can break (see the module docs). `instance` describes
    /// the instance (`` `dup` used at `point` ``) and where it was first called.
    fn check_instance(&mut self, body: &Expr, instance: Option<(&str, Span)>) {
        struct C<'a> {
            diags: &'a mut Vec<Diagnostic>,
            instance: Option<(&'a str, Span)>,
            records: &'a [String],
            variants: &'a [String],
        }
        impl C<'_> {
            fn show(&self, t: &Ty) -> String {
                show_ty(t, self.records, self.variants)
            }
            fn note(&self, d: Diagnostic) -> Diagnostic {
                match self.instance {
                    Some((what, site)) if site != Span::DUMMY => d
                        .with_secondary(site, "the helper is used at these types here")
                        .with_note(format!("refused after monomorphisation: {what}")),
                    Some((what, _)) => {
                        d.with_note(format!("refused after monomorphisation: {what}"))
                    }
                    None => d,
                }
            }
        }
        // Read-only, children first (the order the typer's walk reports in): no copy of
        // the body.
        impl C<'_> {
            fn expr(&mut self, e: &Expr) {
                for child in e.children() {
                    self.expr(child);
                }
                match &e.kind {
                    ExprKind::Binary {
                        op: BinOp::Eq | BinOp::Ne,
                        lhs,
                        ..
                    } if !matches!(lhs.ty, Ty::Scalar(_)) => {
                        let shown = self.show(&lhs.ty);
                        let d = Diagnostic::error(lhs.span, aggregate_equality_message(&shown))
                            .with_label(format!("this has type `{shown}`"))
                            .with_help(aggregate_equality_help(matches!(lhs.ty, Ty::Variant(_))));
                        let d = self.note(d);
                        self.diags.push(d);
                    }
                    ExprKind::Binary { op, lhs, .. }
                        if !matches!(op, BinOp::Eq | BinOp::Ne | BinOp::And | BinOp::Or)
                            && !matches!(lhs.ty, Ty::Scalar(s) if s.is_numeric()) =>
                    {
                        let shown = self.show(&lhs.ty);
                        let d = Diagnostic::error(
                            lhs.span,
                            format!(
                                "`{}` cannot be used on a value of type `{shown}`",
                                op.symbol()
                            ),
                        )
                        .with_label("expected a numeric type");
                        let d = self.note(d);
                        self.diags.push(d);
                    }
                    ExprKind::Tuple(parts)
                        if parts.iter().any(|p| !matches!(p.ty, Ty::Scalar(_))) =>
                    {
                        let d = Diagnostic::error(e.span, "tuple components must be scalars")
                            .with_label(format!("this tuple has type `{}`", self.show(&e.ty)))
                            .with_help("use a record for structured values");
                        let d = self.note(d);
                        self.diags.push(d);
                    }
                    _ => {}
                }
            }
        }
        C {
            diags: &mut self.diags,
            instance,
            records: &self.records,
            variants: &self.variants,
        }
        .expr(body);
    }
}

/// Substitutes type arguments and renames binders.
struct Instantiate<'a> {
    args: &'a [Ty],
    renames: HashMap<VarId, VarId>,
    next_var: &'a mut u32,
}

impl VisitMut for Instantiate<'_> {
    fn ty(&mut self, t: &mut Ty) {
        *t = subst(t, self.args);
    }
    fn decl(&mut self, d: &mut VarDecl) {
        self.ty(&mut d.ty);
        // The alternatives of an or-pattern declare the same variable: one new id for all.
        let next = &mut *self.next_var;
        let new = *self.renames.entry(d.id).or_insert_with(|| {
            *next += 1;
            VarId(*next - 1)
        });
        d.id = new;
    }
    fn var_use(&mut self, id: &mut VarId) {
        if let Some(n) = self.renames.get(id) {
            *id = *n;
        }
    }
}

fn mentions(t: &Ty, i: u32) -> bool {
    match t {
        Ty::Param(p) => *p == i,
        Ty::Tuple(ts) => ts.iter().any(|t| mentions(t, i)),
        Ty::Vector(e) | Ty::Array { elem: e, .. } => mentions(e, i),
        _ => false,
    }
}

fn subst(t: &Ty, args: &[Ty]) -> Ty {
    match t {
        Ty::Param(i) => args.get(*i as usize).cloned().unwrap_or_else(|| t.clone()),
        Ty::Tuple(ts) => Ty::Tuple(ts.iter().map(|t| subst(t, args)).collect()),
        Ty::Vector(e) => Ty::Vector(Box::new(subst(e, args))),
        Ty::Array { elem, space, size } => Ty::Array {
            elem: Box::new(subst(elem, args)),
            space: *space,
            size: *size,
        },
        other => other.clone(),
    }
}

fn renumber(e: &mut Expr, map: &[FunId]) {
    struct R<'a>(&'a [FunId]);
    impl VisitMut for R<'_> {
        fn expr(&mut self, e: &mut Expr) {
            if let ExprKind::Call { func, .. } = &mut e.kind {
                *func = self.0[func.0 as usize];
            }
            visit::walk_expr(self, e);
        }
    }
    R(map).expr(e);
}

/// The largest variable id declared in `p` (visited in place: the visitor only reads).
fn max_var(p: &mut Program) -> u32 {
    struct M(u32);
    impl VisitMut for M {
        fn decl(&mut self, d: &mut VarDecl) {
            self.0 = self.0.max(d.id.0);
        }
    }
    let mut m = M(0);
    for f in &mut p.functions {
        f.params.iter_mut().for_each(|d| m.decl(d));
        m.expr(&mut f.body);
    }
    for k in &mut p.kernels {
        k.params.iter_mut().for_each(|d| m.decl(d));
        m.expr(&mut k.body);
    }
    m.0
}

/// A type as the user writes it (for messages), with the program's record and variant names;
/// a tuple inside a tuple or a container keeps its parentheses.
fn show_ty(t: &Ty, records: &[String], variants: &[String]) -> String {
    let atom = |t: &Ty| match t {
        Ty::Tuple(_) => format!("({})", show_ty(t, records, variants)),
        _ => show_ty(t, records, variants),
    };
    match t {
        Ty::Unit => "unit".into(),
        Ty::Scalar(s) => s.name().into(),
        Ty::Record(r) => records[r.0 as usize].clone(),
        Ty::Variant(v) => variants[v.0 as usize].clone(),
        Ty::Tuple(ts) => ts.iter().map(atom).collect::<Vec<_>>().join(" * "),
        Ty::Vector(e) => format!("{} vector", atom(e)),
        Ty::Array { elem, .. } => format!("{} array", atom(elem)),
        Ty::Param(i) => format!("'{i}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;
    use crate::front::tast::{FieldDef, Kernel, RecordDef, RecordId};

    fn var(id: u32, ty: Ty) -> Expr {
        Expr {
            kind: ExprKind::Var(VarId(id)),
            ty,
            span: Span::DUMMY,
        }
    }

    fn decl(id: u32, name: &str, ty: Ty) -> VarDecl {
        VarDecl {
            id: VarId(id),
            name: name.into(),
            ty,
            mutable: false,
            span: Span::DUMMY,
        }
    }

    /// `let same (a : 'a) (b : 'a) = a = b` called at a record: the typer refuses the call,
    /// and when a program reaches mono anyway (built through the API), mono refuses the
    /// instance with the shared aggregate-equality text.
    #[test]
    fn aggregate_equality_after_instantiation_is_refused() {
        let point = RecordDef {
            name: "point".into(),
            span: Span::DUMMY,
            fields: vec![FieldDef {
                name: "x".into(),
                ty: Ty::F32,
                span: Span::DUMMY,
                mutable: false,
            }],
        };
        let same = Function {
            id: FunId(0),
            name: "same".into(),
            source_name: "same".into(),
            span: Span::DUMMY,
            type_params: 1,
            params: vec![decl(0, "a", Ty::Param(0)), decl(1, "b", Ty::Param(0))],
            ret: Ty::BOOL,
            body: Expr {
                kind: ExprKind::Binary {
                    op: BinOp::Eq,
                    lhs: Box::new(var(0, Ty::Param(0))),
                    rhs: Box::new(var(1, Ty::Param(0))),
                },
                ty: Ty::BOOL,
                span: Span::DUMMY,
            },
            recursive: false,
            inline_depth: None,
        };
        let rec = Ty::Record(RecordId(0));
        let call = |ty: Ty, a: u32, b: u32| Expr {
            kind: ExprKind::Call {
                func: FunId(0),
                type_args: vec![ty.clone()],
                args: vec![var(a, ty.clone()), var(b, ty)],
            },
            ty: Ty::BOOL,
            span: Span::DUMMY,
        };
        let kernel = |ty: Ty| Kernel {
            name: "k".into(),
            span: Span::DUMMY,
            params: vec![decl(2, "p", ty.clone()), decl(3, "q", ty.clone())],
            body: Expr {
                kind: ExprKind::Ignore(Box::new(call(ty, 2, 3))),
                ty: Ty::Unit,
                span: Span::DUMMY,
            },
        };
        let program = |ty: Ty| Program {
            records: vec![point.clone()],
            variants: vec![],
            functions: vec![same.clone()],
            kernels: vec![kernel(ty)],
            tall: false,
        };

        let ok = monomorphise(program(Ty::I32)).expect("scalar instance is fine");
        assert_eq!(ok.functions.len(), 1);
        assert_eq!(ok.functions[0].name, "same__i32");
        assert_eq!(ok.functions[0].params[0].ty, Ty::I32);
        // Binders were renamed away from the kernel's ids.
        assert!(ok.functions[0].params.iter().all(|p| p.id.0 > 3));

        let err = monomorphise(program(rec)).expect_err("record instance refused");
        assert_eq!(err.len(), 1);
        assert_eq!(err[0].message, aggregate_equality_message("point"));
        assert!(
            err[0]
                .notes
                .iter()
                .any(|n| n.contains("`same` used at `point`"))
        );
    }
}
