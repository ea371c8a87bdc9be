//! The WGSL writer: one value holding everything one generation needs.
//!
//! Function bodies are written first (entry point, then every helper specialisation), each into
//! its own string; support functions they need (`sarek_fmod`, atomic loops, ...) are collected
//! by name on the way; the module is assembled last, in a fixed order. WGSL module-scope
//! declarations may be used before they appear, so no dependency sort is needed, and the output
//! depends on the kernel alone.

use super::abi::{Bindings, GROUP, ParamBinding};
use super::names::{MirrorKey, Names};
use super::usage::{Root, Spec, Usage, own_root};
use crate::back::text::{self, INDENT};
use crate::diag::{Diagnostic, Span};
use crate::intrinsics::{AtomicOp, Geometry, Intrinsic, MathFn, WarpOp};
use crate::ir::{Block, Expr, ExprKind, Function, Kernel, LValue, Stmt, StmtKind, Ty, VarId};
use crate::types::{BinOp, Literal, Scalar, UnOp};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// How an array-typed name is accessed in the function being written.
#[derive(Clone, Debug)]
struct Access {
    root: Root,
    /// Indexable expression (`buf`, `sarek_wg_tile`, `a`, `(*a)`).
    expr: String,
    /// How to pass it to a helper (local arrays only: `&a`, or `a` when already a pointer).
    ptr: String,
}

pub(super) struct Writer<'a> {
    k: &'a Kernel,
    names: &'a Names<'a>,
    usage: &'a Usage,
    bindings: &'a Bindings,
    subgroups: bool,
    out: String,
    indent: usize,
    /// Support functions by name: emitted once, in name order.
    support: BTreeMap<String, String>,
    /// Geometry builtins read anywhere (`lid`, `wid`, `gid`, `nwg`, `sg_size`).
    builtins: BTreeSet<&'static str>,
    /// Array accesses of the function being written.
    env: BTreeMap<VarId, Access>,
    /// Kernel scalar parameters read from the uniform, in the entry point only: a helper never
    /// sees kernel parameters, which is the per-helper narrowing by construction.
    uniform: BTreeMap<VarId, (String, bool)>,
    counter: u32,
    /// How many enclosing constructs may be thread-dependent (decides what a fence becomes).
    divergent: u32,
    /// A `return`/`break`/`continue` under thread-dependent control flow was written: what
    /// follows is no longer reached by the whole workgroup.
    exited_divergently: bool,
    /// Immutable locals whose value is the same in every thread of a workgroup.
    uniform_vars: BTreeSet<VarId>,
    /// Immutable locals bound to a constant expression: naga evaluates operations on them
    /// at compile or pipeline-creation time (see [`Writer::is_const`]).
    const_lets: BTreeSet<VarId>,
    zero_divisors: crate::back::ZeroDivisors,
    span: Span,
    diags: Vec<Diagnostic>,
}

fn put_lit(out: &mut String, l: Literal) {
    let _ = match l {
        Literal::Bool(b) => write!(out, "{b}"),
        Literal::I32(i32::MIN) => write!(out, "i32(-2147483648)"),
        Literal::I32(v) if v < 0 => write!(out, "({v}i)"),
        Literal::I32(v) => write!(out, "{v}i"),
        Literal::F32(v) => put_f32(out, v),
        // Refused by the analysis (`support::wgsl`); kept total.
        Literal::I64(v) => write!(out, "{}i", v as i32),
        Literal::F64(v) => put_f32(out, v as f32),
    };
}

fn put_f32(out: &mut String, v: f32) -> std::fmt::Result {
    if !v.is_finite() {
        // WGSL has no literal for infinities or NaN.
        write!(out, "bitcast<f32>({:#x}u)", v.to_bits())
    } else if v.is_sign_negative() {
        write!(out, "({v:?}f)")
    } else {
        write!(out, "{v:?}f")
    }
}

fn axis(a: crate::intrinsics::Axis) -> char {
    a.letter()
}

impl<'a> Writer<'a> {
    pub fn new(
        k: &'a Kernel,
        names: &'a Names<'a>,
        usage: &'a Usage,
        bindings: &'a Bindings,
        subgroups: bool,
    ) -> Self {
        Writer {
            k,
            names,
            usage,
            bindings,
            subgroups,
            out: String::new(),
            indent: 0,
            support: BTreeMap::new(),
            builtins: BTreeSet::new(),
            env: BTreeMap::new(),
            uniform: BTreeMap::new(),
            counter: 0,
            divergent: 0,
            exited_divergently: false,
            uniform_vars: BTreeSet::new(),
            const_lets: BTreeSet::new(),
            zero_divisors: Default::default(),
            span: k.span,
            diags: Vec::new(),
        }
    }

    /// Write the whole module.
    pub fn write(mut self) -> Result<String, Vec<Diagnostic>> {
        let entry = self.entry();
        let helpers: Vec<String> = (0..self.usage.specs.len()).map(|i| self.spec(i)).collect();
        if !self.diags.is_empty() {
            return Err(self.diags);
        }
        let mut m = String::new();
        if self.subgroups {
            // The WGSL spelling is `enable subgroups;`, which naga 30 rejects as "not yet
            // supported" while accepting the subgroup built-ins under its SUBGROUP capability
            // (what wgpu enables with Features::SUBGROUP). Keep the directive as a comment.
            m.push_str("// enable subgroups;  (implied by naga's SUBGROUP capability)\n\n");
        }
        let _ = writeln!(
            m,
            "// Kernel `{}`, generated by sarek for WGSL.\n",
            self.k.name
        );
        self.types(&mut m);
        self.globals(&mut m);
        for s in self.support.values() {
            m.push_str(s);
            m.push('\n');
        }
        for h in helpers {
            m.push_str(&h);
            m.push('\n');
        }
        m.push_str(&entry);
        Ok(m)
    }

    // ---- types -------------------------------------------------------------------------

    fn ty(&self, ty: &Ty) -> String {
        match ty {
            // Unit values are never declared (unit `let`s become expression statements).
            Ty::Unit | Ty::Scalar(Scalar::Bool) => "bool".into(),
            Ty::Scalar(Scalar::F32 | Scalar::F64) => "f32".into(),
            Ty::Scalar(Scalar::I32 | Scalar::I64) => "i32".into(),
            Ty::Record(_) | Ty::Variant(_) => self.names.ty_name(ty).unwrap_or("i32").to_string(),
            Ty::Array {
                elem,
                size: Some(n),
                ..
            } => format!("array<{}, {n}>", self.ty(elem)),
            Ty::Vector(e)
            | Ty::Array {
                elem: e,
                size: None,
                ..
            } => format!("array<{}>", self.ty(e)),
        }
    }

    /// The host-shareable spelling of a storage element (bool as u32, mirrors for structs).
    fn storage_ty(&self, ty: &Ty) -> String {
        match ty {
            Ty::Scalar(Scalar::Bool) => "u32".into(),
            _ => self.names.mirror(ty).unwrap_or_else(|| self.ty(ty)),
        }
    }

    fn mirror_base(&self, ty: &Ty) -> Option<&str> {
        MirrorKey::of(ty)
            .and_then(|k| self.names.mirrors.get(&k))
            .map(String::as_str)
    }

    fn load_storage(&self, ty: &Ty, e: String) -> String {
        match ty {
            Ty::Scalar(Scalar::Bool) => format!("({e} != 0u)"),
            _ => match self.mirror_base(ty) {
                Some(b) => format!("sarek_load_{b}({e})"),
                None => e,
            },
        }
    }

    fn store_storage(&self, ty: &Ty, e: String) -> String {
        match ty {
            Ty::Scalar(Scalar::Bool) => format!("select(0u, 1u, {e})"),
            _ => match self.mirror_base(ty) {
                Some(b) => format!("sarek_store_{b}({e})"),
                None => e,
            },
        }
    }

    fn payload_field(&self, variant: u32, ctor: u32, k: usize) -> String {
        let c = &self.k.variants[variant as usize].ctors[ctor as usize];
        self.names.escape(&format!("{}_{k}", c.name))
    }

    /// Struct members of a record/variant as (WGSL name, IR type), in layout order.
    fn members(&self, ty: &Ty) -> Vec<(String, Ty)> {
        match ty {
            Ty::Record(id) => self
                .k
                .record(*id)
                .fields
                .iter()
                .map(|f| (self.names.escape(&f.name), f.ty.clone()))
                .collect(),
            Ty::Variant(id) => {
                let mut m = vec![("tag".to_string(), Ty::I32)];
                for (ci, c) in self.k.variant(*id).ctors.iter().enumerate() {
                    for (k, t) in c.fields.iter().enumerate() {
                        m.push((self.payload_field(id.0, ci as u32, k), t.clone()));
                    }
                }
                m
            }
            _ => Vec::new(),
        }
    }

    fn types(&self, m: &mut String) {
        let struct_decl = |m: &mut String, name: &str, members: &[(String, String)]| {
            let _ = writeln!(m, "struct {name} {{");
            if members.is_empty() {
                // WGSL has no empty structs.
                let _ = writeln!(m, "{INDENT}sarek_p: u32,");
            }
            for (n, t) in members {
                let _ = writeln!(m, "{INDENT}{n}: {t},");
            }
            m.push_str("}\n\n");
        };
        for (i, _) in self.k.records.iter().enumerate() {
            let ty = Ty::Record(crate::ir::RecordId(i as u32));
            let mem: Vec<_> = self
                .members(&ty)
                .into_iter()
                .map(|(n, t)| (n, self.ty(&t)))
                .collect();
            struct_decl(m, &self.names.records[i], &mem);
        }
        for (i, v) in self.k.variants.iter().enumerate() {
            let ty = Ty::Variant(crate::ir::VariantId(i as u32));
            let name = &self.names.variants[i];
            for (ci, _) in v.ctors.iter().enumerate() {
                let _ = writeln!(m, "const {}: i32 = {ci}i;", self.names.tags[i][ci]);
            }
            m.push('\n');
            let mem: Vec<_> = self
                .members(&ty)
                .into_iter()
                .map(|(n, t)| (n, self.ty(&t)))
                .collect();
            struct_decl(m, name, &mem);
            for (ci, c) in v.ctors.iter().enumerate() {
                let params: Vec<String> = c
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(k, t)| format!("sarek_p{k}: {}", self.ty(t)))
                    .collect();
                let mut args = vec![self.names.tags[i][ci].clone()];
                for (cj, c2) in v.ctors.iter().enumerate() {
                    for (k, t) in c2.fields.iter().enumerate() {
                        args.push(if cj == ci {
                            format!("sarek_p{k}")
                        } else {
                            format!("{}()", self.ty(t))
                        });
                    }
                }
                let _ = writeln!(
                    m,
                    "fn {}({}) -> {name} {{\n{INDENT}return {name}({});\n}}\n",
                    self.names.makes[i][ci],
                    params.join(", "),
                    args.join(", ")
                );
            }
        }
        for (key, base) in &self.names.mirrors {
            let ty = match key {
                MirrorKey::Record(i) => Ty::Record(crate::ir::RecordId(*i)),
                MirrorKey::Variant(i) => Ty::Variant(crate::ir::VariantId(*i)),
            };
            let members = self.members(&ty);
            let mem: Vec<_> = members
                .iter()
                .map(|(n, t)| (n.clone(), self.storage_ty(t)))
                .collect();
            let st = format!("sarek_st_{base}");
            struct_decl(m, &st, &mem);
            let load: Vec<_> = members
                .iter()
                .map(|(n, t)| self.load_storage(t, format!("sarek_p0.{n}")))
                .collect();
            let store: Vec<_> = members
                .iter()
                .map(|(n, t)| self.store_storage(t, format!("sarek_p0.{n}")))
                .collect();
            let _ = writeln!(
                m,
                "fn sarek_load_{base}(sarek_p0: {st}) -> {base} {{\n{INDENT}return {base}({});\n}}\n",
                load.join(", ")
            );
            let _ = writeln!(
                m,
                "fn sarek_store_{base}(sarek_p0: {base}) -> {st} {{\n{INDENT}return {st}({});\n}}\n",
                store.join(", ")
            );
        }
    }

    fn atomic_elem(&self, elem: &Ty) -> &'static str {
        if elem == &Ty::F32 {
            "atomic<u32>"
        } else {
            "atomic<i32>"
        }
    }

    fn globals(&self, m: &mut String) {
        if let Some(b) = self.bindings.uniform_binding {
            m.push_str("struct Params {\n");
            for f in &self.bindings.fields {
                let _ = writeln!(m, "{INDENT}{}: {},", f.name, f.wgsl_ty);
            }
            m.push_str("}\n\n");
            let _ = writeln!(
                m,
                "@group({GROUP}) @binding({b}) var<uniform> params: Params;"
            );
        }
        for (p, b) in &self.bindings.params {
            if let ParamBinding::Vector { binding, .. } = b {
                let elem = self.k.var(*p).ty.elem().cloned().unwrap_or(Ty::I32);
                let t = if self.usage.atomic.contains(&Root::Buffer(*p)) {
                    self.atomic_elem(&elem).to_string()
                } else {
                    self.storage_ty(&elem)
                };
                let _ = writeln!(
                    m,
                    "@group({GROUP}) @binding({binding}) var<storage, read_write> {}: array<{t}>;",
                    self.names.buffers[p]
                );
            }
        }
        if let Some(binding) = self.bindings.trap_binding {
            let _ = writeln!(
                m,
                "@group({GROUP}) @binding({binding}) var<storage, read_write> sarek_trap: atomic<i32>;"
            );
        }
        for s in &self.usage.shared {
            if let Ty::Array {
                elem,
                size: Some(n),
                ..
            } = &self.k.var(*s).ty
            {
                let t = if self.usage.atomic.contains(&Root::Shared(*s)) {
                    self.atomic_elem(elem).to_string()
                } else {
                    self.ty(elem)
                };
                let _ = writeln!(
                    m,
                    "var<workgroup> {}: array<{t}, {n}>;",
                    self.names.shared[s]
                );
            }
        }
        for b in &self.builtins {
            let t = if b.starts_with("sg") {
                "u32"
            } else {
                "vec3<u32>"
            };
            let _ = writeln!(m, "var<private> sarek_{b}: {t};");
        }
        m.push_str(
            "\n// The block size is a pipeline constant: one module serves every block size.\n",
        );
        for (a, d) in [('x', 64), ('y', 1), ('z', 1)] {
            let _ = writeln!(m, "override sarek_block_{a}: u32 = {d}u;");
        }
        m.push('\n');
    }

    // ---- functions ---------------------------------------------------------------------

    fn line(&mut self, s: impl AsRef<str>) {
        text::line(&mut self.out, self.indent, s.as_ref());
    }

    /// [`Self::line`] of formatted text, written straight into the output.
    fn line_fmt(&mut self, s: std::fmt::Arguments<'_>) {
        text::line_fmt(&mut self.out, self.indent, s);
    }

    /// The line `{before}{e}{after}`, `e` written straight into the output.
    fn expr_line(&mut self, before: std::fmt::Arguments<'_>, e: &Expr, after: &str) {
        let mut out = std::mem::take(&mut self.out);
        text::indent(&mut out, self.indent);
        let _ = out.write_fmt(before);
        self.put(&mut out, e);
        out.push_str(after);
        out.push('\n');
        self.out = out;
    }

    fn fresh(&mut self) -> u32 {
        self.counter += 1;
        self.counter
    }

    fn internal(&mut self, what: &str) -> String {
        self.diags.push(Diagnostic::error(
            self.span,
            format!("WGSL generator: internal error: {what}"),
        ));
        "0i".into()
    }

    fn internal_into(&mut self, out: &mut String, what: &str) {
        out.push_str(&self.internal(what));
    }

    fn entry(&mut self) -> String {
        self.out.clear();
        self.env.clear();
        self.uniform.clear();
        self.uniform_vars.clear();
        self.divergent = 0;
        self.exited_divergently = false;
        self.indent = 1;
        let mut aggregates = Vec::new();
        for (p, b) in &self.bindings.params {
            match b {
                ParamBinding::Scalar { field } => {
                    let is_bool = self.k.var(*p).ty == Ty::BOOL;
                    self.uniform.insert(
                        *p,
                        (
                            format!("params.{}", self.bindings.fields[*field].name),
                            is_bool,
                        ),
                    );
                }
                ParamBinding::Aggregate { fields } => aggregates.push((*p, fields.clone())),
                ParamBinding::Vector { .. } => {
                    let name = self.names.buffers[p].clone();
                    self.env.insert(
                        *p,
                        Access {
                            root: Root::Buffer(*p),
                            expr: name,
                            ptr: String::new(),
                        },
                    );
                }
                ParamBinding::None => {}
            }
        }
        // Rebuild by-value records/variants from their flattened uniform fields.
        for (p, fields) in &aggregates {
            self.uniform_vars.insert(*p);
            let ty = self.k.var(*p).ty.clone();
            let mut it = fields.iter().map(|f| {
                let f = &self.bindings.fields[*f];
                let e = format!("params.{}", f.name);
                if f.wgsl_ty == "u32" {
                    format!("({e} != 0u)")
                } else {
                    e
                }
            });
            let value = self.rebuild(&ty, &mut it);
            let line = format!("let {}: {} = {value};", self.names.local(*p), self.ty(&ty));
            self.line(line);
        }
        // A nested scope lets the body redeclare a by-value parameter's name.
        let nested = !aggregates.is_empty();
        if nested {
            self.line("{");
            self.indent += 1;
        }
        let k = self.k;
        self.block_stmts(&k.body);
        if nested {
            self.indent -= 1;
            self.line("}");
        }
        let body = std::mem::take(&mut self.out);
        let mut params = Vec::new();
        let mut copies = String::new();
        for (b, builtin) in [
            ("lid", "local_invocation_id"),
            ("wid", "workgroup_id"),
            ("gid", "global_invocation_id"),
            ("nwg", "num_workgroups"),
            ("sg_size", "subgroup_size"),
        ] {
            if self.builtins.contains(b) {
                let t = if b.starts_with("sg") {
                    "u32"
                } else {
                    "vec3<u32>"
                };
                params.push(format!("@builtin({builtin}) sarek_in_{b}: {t}"));
                let _ = writeln!(copies, "{INDENT}sarek_{b} = sarek_in_{b};");
            }
        }
        format!(
            "@compute @workgroup_size(sarek_block_x, sarek_block_y, sarek_block_z)\nfn {}({}) {{\n{copies}{body}}}\n",
            self.names.entry,
            params.join(", ")
        )
    }

    fn rebuild(&self, ty: &Ty, leaves: &mut dyn Iterator<Item = String>) -> String {
        match ty {
            Ty::Scalar(_) => leaves.next().unwrap_or_else(|| "0i".into()),
            Ty::Record(_) | Ty::Variant(_) => {
                let args: Vec<String> = self
                    .members(ty)
                    .iter()
                    .map(|(_, t)| self.rebuild(t, leaves))
                    .collect();
                format!("{}({})", self.ty(ty), args.join(", "))
            }
            _ => String::new(),
        }
    }

    fn spec(&mut self, i: usize) -> String {
        let Spec { func } = self.usage.specs[i].clone();
        let k = self.k;
        let f: &Function = k.function(func);
        self.out.clear();
        self.env.clear();
        self.uniform.clear();
        self.uniform_vars.clear();
        // A helper may be called from thread-dependent control flow: assume it is.
        self.divergent = 1;
        self.exited_divergently = false;
        self.indent = 1;
        self.span = f.span;
        let mut params = Vec::new();
        for p in &f.params {
            let info = self.k.var(*p);
            let name = self.names.local(*p).to_string();
            match own_root(self.k, *p) {
                // Specialisation left only per-thread arrays as parameters.
                Some(Root::Local(l)) => {
                    let t = self.ty(&self.k.var(l).ty);
                    params.push(format!("{name}: ptr<function, {t}>"));
                    self.env.insert(
                        *p,
                        Access {
                            root: Root::Local(l),
                            expr: format!("(*{name})"),
                            ptr: name,
                        },
                    );
                }
                _ if info.mutable => {
                    // WGSL parameters are immutable: copy into a local of the source name.
                    let t = self.ty(&info.ty);
                    params.push(format!("sarek_p_{name}: {t}"));
                    self.line_fmt(format_args!("var {name}: {t} = sarek_p_{name};"));
                }
                _ => params.push(format!("{name}: {}", self.ty(&info.ty))),
            }
        }
        self.block_stmts(&f.body);
        if f.ret != Ty::Unit
            && !matches!(
                f.body.last(),
                Some(Stmt {
                    kind: StmtKind::Return(_),
                    ..
                })
            )
        {
            // naga wants a final `return` even when every path already returned.
            let line = format!("return {}();", self.ty(&f.ret));
            self.line(line);
        }
        let body = std::mem::take(&mut self.out);
        let ret = if f.ret == Ty::Unit {
            String::new()
        } else {
            format!(" -> {}", self.ty(&f.ret))
        };
        format!(
            "fn {}({}){ret} {{\n{body}}}\n",
            self.names.specs[i],
            params.join(", ")
        )
    }

    // ---- statements --------------------------------------------------------------------

    fn block_stmts(&mut self, b: &Block) {
        for s in b {
            self.stmt(s);
        }
    }

    /// The `else` part of an `if`, closing it. A lone `if` there is written flat,
    /// `} else if (c) {`, when its condition needs no statements of its own: naga limits
    /// brace nesting to 127 levels but not the length of a chain.
    fn else_chain(&mut self, mut rest: &Block) {
        let mut divergent = 0;
        loop {
            if rest.is_empty() {
                self.line("}");
                break;
            }
            if let [only] = rest.as_slice()
                && let StmtKind::If {
                    cond,
                    then_block,
                    else_block,
                } = &only.kind
            {
                let (mark, counter) = (self.out.len(), self.counter);
                let diverges = u32::from(self.diverges(only));
                self.divergent += diverges;
                self.span = only.span;
                let c = self.expr(cond);
                if self.out.len() == mark {
                    self.nested(format!("}} else if ({c}) {{"), then_block);
                    divergent += diverges;
                    rest = else_block;
                    continue;
                }
                // The condition wrote statements: they belong inside the `else`.
                self.divergent -= diverges;
                self.out.truncate(mark);
                self.counter = counter;
            }
            self.line("} else {");
            self.indent += 1;
            self.block_stmts(rest);
            self.indent -= 1;
            self.line("}");
            break;
        }
        self.divergent -= divergent;
    }

    fn nested(&mut self, head: String, b: &Block) {
        self.line(head);
        self.indent += 1;
        self.block_stmts(b);
        self.indent -= 1;
    }

    fn access(&self, v: VarId) -> Option<Access> {
        if let Some(a) = self.env.get(&v) {
            return Some(a.clone());
        }
        let root = own_root(self.k, v)?;
        Some(match root {
            Root::Local(l) => {
                let n = self.names.local(l).to_string();
                Access {
                    root,
                    ptr: format!("&{n}"),
                    expr: n,
                }
            }
            r => Access {
                root: r,
                expr: self.names.root_global(r).unwrap_or_default().to_string(),
                ptr: String::new(),
            },
        })
    }

    fn is_atomic(&self, root: Root) -> bool {
        self.usage.atomic.contains(&root)
    }

    /// Whether `e` has the same value in every thread of a workgroup, judged syntactically:
    /// literals, kernel scalar parameters, immutable locals bound to such values, block and
    /// grid geometry, lengths, and pure operations on them.
    fn is_uniform(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Lit(_) => true,
            ExprKind::Var(v) => self.uniform.contains_key(v) || self.uniform_vars.contains(v),
            ExprKind::Binary { lhs, rhs, .. } => self.is_uniform(lhs) && self.is_uniform(rhs),
            ExprKind::Unary { operand: x, .. }
            | ExprKind::Field { base: x, .. }
            | ExprKind::Tag(x)
            | ExprKind::Payload { value: x, .. } => self.is_uniform(x),
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                self.is_uniform(cond) && self.is_uniform(then_value) && self.is_uniform(else_value)
            }
            ExprKind::Record { fields, .. } | ExprKind::Ctor { fields, .. } => {
                fields.iter().all(|f| self.is_uniform(f))
            }
            ExprKind::Intrinsic { op, args } => match op {
                Intrinsic::Geometry(g) => !g.is_thread_varying(),
                Intrinsic::Length => true,
                Intrinsic::Math(_)
                | Intrinsic::Abs
                | Intrinsic::Min
                | Intrinsic::Max
                | Intrinsic::Clz
                | Intrinsic::Popcount
                | Intrinsic::Convert => args.iter().all(|a| self.is_uniform(a)),
                _ => false,
            },
            ExprKind::Index { .. } | ExprKind::Call { .. } => false,
        }
    }

    /// Whether the control structure `s` may run differently in different threads.
    fn diverges(&self, s: &Stmt) -> bool {
        fn exits(b: &Block) -> bool {
            b.iter().any(|s| match &s.kind {
                StmtKind::Break | StmtKind::Continue | StmtKind::Return(_) => true,
                StmtKind::If {
                    then_block,
                    else_block,
                    ..
                } => exits(then_block) || exits(else_block),
                StmtKind::Block(b) => exits(b),
                StmtKind::Match { arms, .. } => arms.iter().any(|a| exits(&a.body)),
                // Exits of nested loops stay inside them (a `return` is found by the caller's
                // own check when that loop is visited).
                StmtKind::For { body, .. } | StmtKind::While { body, .. } => {
                    body.iter().any(|s| matches!(s.kind, StmtKind::Return(_)))
                }
                _ => false,
            })
        }
        match &s.kind {
            StmtKind::If { cond, .. } => !self.is_uniform(cond),
            StmtKind::Match { scrutinee, .. } => !self.is_uniform(scrutinee),
            StmtKind::For {
                start, end, body, ..
            } => !(self.is_uniform(start) && self.is_uniform(end)) || exits(body),
            StmtKind::While { cond, body, .. } => !self.is_uniform(cond) || exits(body),
            _ => false,
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        let diverges = self.diverges(s);
        self.divergent += u32::from(diverges);
        self.stmt_inner(s);
        self.divergent -= u32::from(diverges);
    }

    fn stmt_inner(&mut self, s: &Stmt) {
        self.span = s.span;
        if matches!(
            s.kind,
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(_)
        ) && self.divergent > 0
        {
            self.exited_divergently = true;
        }
        match &s.kind {
            StmtKind::Let { var, init } => {
                let info = self.k.var(*var).clone();
                if matches!(info.ty, Ty::Vector(_) | Ty::Array { .. }) {
                    // An alias of a vector/array: resolve it statically.
                    if let Some(Expr {
                        kind: ExprKind::Var(x),
                        ..
                    }) = init
                        && let Some(a) = self.access(*x)
                    {
                        self.env.insert(*var, a);
                        return;
                    }
                    self.internal("array-typed `let` that is not an alias");
                    return;
                }
                let name = self.names.local(*var).to_string();
                if info.ty == Ty::Unit {
                    if let Some(e) = init {
                        self.expr_stmt(e);
                    }
                    return;
                }
                let t = self.ty(&info.ty);
                if !info.mutable && init.as_ref().is_some_and(|e| self.is_uniform(e)) {
                    self.uniform_vars.insert(*var);
                }
                if !info.mutable && init.as_ref().is_some_and(|e| self.is_const(e)) {
                    self.const_lets.insert(*var);
                }
                self.zero_divisors
                    .note_let(*var, info.mutable, init.as_ref());
                match init {
                    Some(e) => {
                        // A `let` of a constant record or variant (`let p: pt = pt(0i, 0.5f);`)
                        // is a `var`: naga 30 evaluates it as a constant, and once the module
                        // has an `override` (the block size) its SPIR-V writer panicked on a
                        // field read of it ("Expression [25] is not cached!").
                        let constant_aggregate =
                            matches!(e.kind, ExprKind::Record { .. } | ExprKind::Ctor { .. })
                                && self.is_const(e);
                        let kw = if info.mutable || constant_aggregate {
                            "var"
                        } else {
                            "let"
                        };
                        self.expr_line(format_args!("{kw} {name}: {t} = "), e, ";");
                    }
                    None => self.line_fmt(format_args!("var {name}: {t};")),
                }
            }
            StmtKind::Array { var } => {
                if let Ty::Array {
                    space: crate::types::MemSpace::Local,
                    ..
                } = &self.k.var(*var).ty
                {
                    let t = self.ty(&self.k.var(*var).ty);
                    let line = format!("var {}: {t};", self.names.local(*var));
                    self.line(line);
                }
                // Shared arrays are module-scope `var<workgroup>` declarations.
            }
            StmtKind::Assign { place, value } => self.assign(place, value),
            StmtKind::Expr(e) => self.expr_stmt(e),
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                self.expr_line(format_args!("if ("), cond, ") {");
                self.indent += 1;
                self.block_stmts(then_block);
                self.indent -= 1;
                self.else_chain(else_block);
            }
            StmtKind::For {
                var,
                start,
                end,
                downto,
                body,
                ..
            } => {
                // Inclusive bounds evaluated once; the exit test runs before the step can
                // overflow (`for i = a to max_int` terminates), and `continue` reaches it.
                if self.is_uniform(start) && self.is_uniform(end) {
                    self.uniform_vars.insert(*var);
                }
                let k = self.fresh();
                let cur = format!("sarek_it{k}");
                let (s, e) = (self.expr(start), self.expr(end));
                self.line("{");
                self.indent += 1;
                self.line_fmt(format_args!("var {cur}: i32 = {s};"));
                self.line_fmt(format_args!("let {cur}_end: i32 = {e};"));
                let (cmp, step) = if *downto { (">=", "-") } else { ("<=", "+") };
                self.line_fmt(format_args!("if ({cur} {cmp} {cur}_end) {{"));
                self.indent += 1;
                self.line("loop {");
                self.indent += 1;
                let v = self.names.local(*var).to_string();
                self.line_fmt(format_args!("let {v}: i32 = {cur};"));
                self.nested("{".into(), body);
                self.line("}");
                self.line("continuing {");
                self.indent += 1;
                self.line_fmt(format_args!("let {cur}_last = {cur} == {cur}_end;"));
                self.line_fmt(format_args!(
                    "{cur} = select({cur} {step} 1i, {cur}, {cur}_last);"
                ));
                self.line_fmt(format_args!("break if {cur}_last;"));
                self.indent -= 1;
                self.line("}");
                self.indent -= 1;
                self.line("}");
                self.indent -= 1;
                self.line("}");
                self.indent -= 1;
                self.line("}");
            }
            StmtKind::While { cond, body, .. } => {
                // The condition may need support calls but never statements: a plain `while`.
                self.expr_line(format_args!("while ("), cond, ") {");
                self.indent += 1;
                self.block_stmts(body);
                self.indent -= 1;
                self.line("}");
            }
            StmtKind::Match {
                scrutinee,
                variant,
                arms,
            } => {
                // An if-chain on the tag rather than `switch`: a `break` inside an arm must
                // leave the enclosing loop, as in the source, not the switch.
                let k = self.fresh();
                let m = format!("sarek_scrut{k}");
                let t = self.ty(&scrutinee.ty);
                let e = self.expr(scrutinee);
                self.line("{");
                self.indent += 1;
                self.line_fmt(format_args!("let {m}: {t} = {e};"));
                let mut first = true;
                for arm in arms {
                    let head = match arm.ctor {
                        Some(c) => {
                            let cond = format!(
                                "{m}.tag == {}",
                                self.names.tags[variant.0 as usize][c as usize]
                            );
                            if first {
                                format!("if ({cond}) {{")
                            } else {
                                format!("}} else if ({cond}) {{")
                            }
                        }
                        None if first => "{".to_string(),
                        None => "} else {".to_string(),
                    };
                    self.line(head);
                    self.indent += 1;
                    if let Some(c) = arm.ctor {
                        for (fi, b) in arm.bindings.iter().enumerate() {
                            if let Some(b) = b {
                                let field = self.payload_field(variant.0, c, fi);
                                let bt = self.ty(&self.k.var(*b).ty);
                                // A binder stored through (a `mutable` field) is a `var`.
                                let kw = if self.k.var(*b).mutable { "var" } else { "let" };
                                let line =
                                    format!("{kw} {}: {bt} = {m}.{field};", self.names.local(*b));
                                self.line(line);
                            }
                        }
                    }
                    self.block_stmts(&arm.body);
                    self.indent -= 1;
                    first = false;
                    if arm.ctor.is_none() {
                        break;
                    }
                }
                if !first {
                    self.line("}");
                }
                self.indent -= 1;
                self.line("}");
            }
            StmtKind::Block(b) => {
                self.nested("{".into(), b);
                self.line("}");
            }
            StmtKind::Barrier => {
                // A block barrier orders shared and global memory within the block (as
                // CUDA's __syncthreads): WGSL splits that into two barriers.
                self.line("storageBarrier();");
                self.line("workgroupBarrier();");
            }
            // WGSL has no standalone fence. Where the whole workgroup reaches the fence, the
            // barrier of its scope is the closest (it orders memory, and synchronises too);
            // under thread-dependent control flow a barrier is undefined behaviour (it can hang
            // the workgroup), so the fence is dropped there, with a comment saying so.
            StmtKind::Fence { device } if self.divergent > 0 || self.exited_divergently => {
                let which = if *device {
                    "memory_fence_device"
                } else {
                    "memory_fence_block"
                };
                self.line_fmt(format_args!(
                    "// {which} (): no WGSL equivalent under thread-dependent control flow (barriers must be uniform)"
                ));
            }
            StmtKind::Fence { device: true } => self.line("storageBarrier();"),
            StmtKind::Fence { device: false } => self.line("workgroupBarrier();"),
            StmtKind::Return(None) => self.line("return;"),
            StmtKind::Return(Some(e)) => self.expr_line(format_args!("return "), e, ";"),
            StmtKind::Break => self.line("break;"),
            StmtKind::Continue => self.line("continue;"),
            StmtKind::Native(src) => {
                for l in src.lines() {
                    self.line(l);
                }
            }
            StmtKind::Trap(t) => self.line_fmt(format_args!("atomicMax(&sarek_trap, {});", t.code)),
        }
    }

    fn expr_stmt(&mut self, e: &Expr) {
        let before = if e.ty == Ty::Unit { "" } else { "_ = " };
        self.expr_line(format_args!("{before}"), e, ";");
    }

    fn assign(&mut self, place: &LValue, value: &Expr) {
        // Find the root of the place: a variable, or an element of an array.
        let mut path = Vec::new();
        let mut p = place;
        while let LValue::Field { base, field } = p {
            path.push(*field);
            p = base;
        }
        path.reverse();
        let (mut target, mut ty, storage, atomic) = match p {
            LValue::Var(v) => (
                self.names.local(*v).to_string(),
                self.k.var(*v).ty.clone(),
                false,
                None,
            ),
            LValue::Index { base, index } => {
                let Some(a) = self.access(*base) else {
                    self.internal("store into an unknown array");
                    return;
                };
                let i = self.index_text(*base, index);
                let elem = self.k.var(*base).ty.elem().cloned().unwrap_or(Ty::I32);
                let atomic = self.is_atomic(a.root).then(|| elem.clone());
                (
                    format!("{}[{i}]", a.expr),
                    elem,
                    matches!(a.root, Root::Buffer(_)),
                    atomic,
                )
            }
            LValue::Field { .. } => unreachable!("fields were peeled above"),
        };
        for f in path {
            let Ty::Record(id) = ty else {
                self.internal("field store on a non-record");
                return;
            };
            let field = &self.k.record(id).fields[f as usize];
            target = format!("{target}.{}", self.names.escape(&field.name));
            ty = field.ty.clone();
        }
        let v = self.expr(value);
        match atomic {
            Some(elem) if elem == Ty::F32 => {
                self.line_fmt(format_args!("atomicStore(&{target}, bitcast<u32>({v}));"))
            }
            Some(_) => self.line_fmt(format_args!("atomicStore(&{target}, {v});")),
            None if storage => {
                let v = self.store_storage(&ty, v);
                self.line_fmt(format_args!("{target} = {v};"));
            }
            None => self.line_fmt(format_args!("{target} = {v};")),
        }
    }

    // ---- expressions -------------------------------------------------------------------

    /// An expression as WGSL text, for the spellings composed from strings.
    fn expr(&mut self, e: &Expr) -> String {
        let mut out = String::new();
        self.put(&mut out, e);
        out
    }

    fn root_of(&self, v: VarId) -> Option<Root> {
        match self.env.get(&v) {
            Some(a) => Some(a.root),
            None => own_root(self.k, v),
        }
    }

    /// The indexable expression of an array-typed name (`buf`, `sarek_wg_tile`, `(*a)`)
    /// written into `out`, and its root.
    fn put_array(&self, out: &mut String, v: VarId) -> Option<Root> {
        if let Some(a) = self.env.get(&v) {
            out.push_str(&a.expr);
            return Some(a.root);
        }
        let root = own_root(self.k, v)?;
        out.push_str(match root {
            Root::Local(l) => self.names.local(l),
            r => self.names.root_global(r).unwrap_or_default(),
        });
        Some(root)
    }

    /// `e` written as WGSL text at the end of `out`; every expression of a line goes into
    /// the one buffer. Compound results are parenthesised, so any result is safe as an
    /// operand. Support functions are collected by name, so writing a call's name before
    /// its operands changes nothing in the output.
    fn put(&mut self, out: &mut String, e: &Expr) {
        match &e.kind {
            ExprKind::Lit(l) => put_lit(out, *l),
            ExprKind::Var(v) => match self.uniform.get(v) {
                Some((field, true)) => {
                    let _ = write!(out, "({field} != 0u)");
                }
                Some((field, false)) => out.push_str(field),
                None => out.push_str(self.names.local(*v)),
            },
            ExprKind::Binary { op, lhs, rhs, .. } => self.binary(out, *op, lhs, rhs),
            ExprKind::Unary { op, operand } => {
                out.push_str(match op {
                    UnOp::Neg => "(-",
                    UnOp::Not => "(!",
                    UnOp::BitNot => "(~",
                });
                let opaque = self.is_const(operand);
                self.operand(out, operand, opaque);
                out.push(')');
            }
            ExprKind::Index { base, index } => {
                let Some(root) = self.root_of(*base) else {
                    return self.internal_into(out, "read of an unknown array");
                };
                let elem = self.k.var(*base).ty.elem().unwrap_or(&Ty::I32);
                let close = if self.is_atomic(root) {
                    if *elem == Ty::F32 {
                        out.push_str("bitcast<f32>(atomicLoad(&");
                        "]))"
                    } else {
                        out.push_str("atomicLoad(&");
                        "])"
                    }
                } else if matches!(root, Root::Buffer(_)) {
                    match elem {
                        Ty::Scalar(Scalar::Bool) => {
                            out.push('(');
                            "] != 0u)"
                        }
                        _ => match self.mirror_base(elem) {
                            Some(b) => {
                                let _ = write!(out, "sarek_load_{b}(");
                                "])"
                            }
                            None => "]",
                        },
                    }
                } else {
                    "]"
                };
                self.put_array(out, *base);
                out.push('[');
                self.index(out, *base, index);
                out.push_str(close);
            }
            ExprKind::Field { base, field } => {
                let start = out.len();
                self.put(out, base);
                match &base.ty {
                    Ty::Record(id) => {
                        out.push('.');
                        let name = &self.k.record(*id).fields[*field as usize].name;
                        out.push_str(&self.names.escape(name));
                    }
                    _ => {
                        out.truncate(start);
                        self.internal_into(out, "field read on a non-record")
                    }
                }
            }
            ExprKind::Record { record, fields } => {
                out.push_str(&self.names.records[record.0 as usize]);
                self.put_args(out, fields);
            }
            ExprKind::Ctor {
                variant,
                ctor,
                fields,
            } => {
                out.push_str(&self.names.makes[variant.0 as usize][*ctor as usize]);
                self.put_args(out, fields);
            }
            ExprKind::Tag(v) => {
                self.put(out, v);
                out.push_str(".tag");
            }
            ExprKind::Payload { value, ctor, field } => {
                let Ty::Variant(id) = value.ty else {
                    return self.internal_into(out, "payload of a non-variant");
                };
                self.put(out, value);
                out.push('.');
                out.push_str(&self.payload_field(id.0, *ctor, *field as usize));
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                if e.ty.scalar().is_some() {
                    out.push_str("select(");
                } else {
                    // WGSL's select() takes scalars and vectors only.
                    let ty = self.ty(&e.ty);
                    let name = format!("sarek_pick_{ty}");
                    out.push_str(&name);
                    out.push('(');
                    self.support.entry(name).or_insert_with_key(|name| {
                        format!("fn {name}(sarek_p0: {ty}, sarek_p1: {ty}, sarek_p2: bool) -> {ty} {{\n{INDENT}if (sarek_p2) {{\n{INDENT}{INDENT}return sarek_p1;\n{INDENT}}}\n{INDENT}return sarek_p0;\n}}\n")
                    });
                }
                self.put(out, else_value);
                out.push_str(", ");
                self.put(out, then_value);
                out.push_str(", ");
                self.put(out, cond);
                out.push(')');
            }
            ExprKind::Call { func, args } => self.call(out, *func, args),
            ExprKind::Intrinsic { op, args } => self.intrinsic(out, *op, args, &e.ty),
        }
    }

    /// `(a, b, ...)`.
    fn put_args(&mut self, out: &mut String, args: &[Expr]) {
        text::put_list(self, out, args, Self::put);
    }

    fn binary(&mut self, out: &mut String, op: BinOp, lhs: &Expr, rhs: &Expr) {
        // An operation on constants only is evaluated by naga, which rejects what overflows
        // (`1 << 31`, `1.0 / 0.0`): one operand goes through an identity function instead.
        let opaque = self.is_const(lhs) && self.is_const(rhs);
        let float = lhs.ty == Ty::F32;
        let (open, middle, close) = match op {
            BinOp::Rem if float => {
                self.support_fn("sarek_fmod", FMOD);
                ("sarek_fmod(", ", ", ")")
            }
            // The count is masked as the interpreter does (naga rejects a constant count
            // >= 32 even on a run-time value).
            BinOp::Shl | BinOp::AShr => {
                out.push('(');
                self.operand(out, lhs, opaque);
                let _ = write!(out, " {} (u32(", op.c_symbol());
                self.put(out, rhs);
                out.push_str(") & 31u))");
                return;
            }
            BinOp::LShr => ("bitcast<i32>(bitcast<u32>(", ") >> (u32(", ") & 31u))"),
            // `x <> nan` is true (OCaml, C); lavapipe's WGSL `!=` is false with a NaN.
            BinOp::Ne if float => ("(!(", " == ", "))"),
            BinOp::Div
                if let Some(inf) =
                    self.zero_divisors
                        .infinity(op, lhs, self.is_const(lhs), rhs) =>
            {
                out.push('(');
                self.operand(out, lhs, opaque);
                out.push_str(" * ");
                put_lit(out, inf);
                out.push(')');
                return;
            }
            // Integer `/` and `mod` through functions: naga rejects a constant zero divisor,
            // and the language's results are spelled out (`x / 0 = 0`, `x mod 0 = x`, as on
            // every target; `min_int / -1 = min_int`, `min_int mod -1 = 0`).
            BinOp::Div | BinOp::Rem if !float && !safe_divisor(rhs) => {
                if op == BinOp::Div {
                    self.support_fn("sarek_div", DIV_I32);
                    ("sarek_div(", ", ", ")")
                } else {
                    self.support_fn("sarek_rem", REM_I32);
                    ("sarek_rem(", ", ", ")")
                }
            }
            _ => {
                out.push('(');
                self.operand(out, lhs, opaque);
                out.push(' ');
                out.push_str(op.c_symbol());
                out.push(' ');
                self.put(out, rhs);
                out.push(')');
                return;
            }
        };
        out.push_str(open);
        self.operand(out, lhs, opaque);
        out.push_str(middle);
        self.put(out, rhs);
        out.push_str(close);
    }

    /// Whether naga treats `e` as a constant (or override) expression and so evaluates it
    /// itself. Every operation whose operands are all constant is written with an opaque
    /// operand ([`Writer::operand`]), so an operation is never constant here.
    fn is_const(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Lit(_) => true,
            ExprKind::Var(v) => self.const_lets.contains(v),
            ExprKind::Field { base, .. } | ExprKind::Tag(base) => self.is_const(base),
            ExprKind::Payload { value, .. } => self.is_const(value),
            ExprKind::Record { fields, .. } | ExprKind::Ctor { fields, .. } => {
                fields.iter().all(|f| self.is_const(f))
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => self.is_const(cond) && self.is_const(then_value) && self.is_const(else_value),
            // `blockDim` reads a pipeline-overridable constant.
            ExprKind::Intrinsic {
                op: Intrinsic::Geometry(Geometry::BlockDim(_)),
                ..
            } => true,
            // The length of a shared or local array is its size, a literal.
            ExprKind::Intrinsic {
                op: Intrinsic::Length,
                args,
            } => matches!(&args[..], [Expr { kind: ExprKind::Var(v), .. }]
                if matches!(self.k.var(*v).ty, Ty::Array { size: Some(_), .. })),
            _ => false,
        }
    }

    /// `e`, through the identity function of its type when `opaque` (a function call is never
    /// a constant expression, and drivers inline it).
    fn operand(&mut self, out: &mut String, e: &Expr, opaque: bool) {
        if !opaque {
            return self.put(out, e);
        }
        let t = self.ty(&e.ty);
        let name = format!("sarek_rt_{t}");
        out.push_str(&name);
        out.push('(');
        self.support.entry(name).or_insert_with_key(|name| {
            format!("fn {name}(sarek_p0: {t}) -> {t} {{\n{INDENT}return sarek_p0;\n}}\n")
        });
        self.put(out, e);
        out.push(')');
    }

    /// `name(a, b, ...)` of a built-in function: naga evaluates a call on constants only,
    /// so the first argument is opaque when all are constant.
    fn builtin_call(&mut self, out: &mut String, name: &str, args: &[Expr]) {
        let opaque = args.iter().all(|a| self.is_const(a));
        out.push_str(name);
        out.push('(');
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            self.operand(out, a, opaque && i == 0);
        }
        out.push(')');
    }

    /// An element index: a constant one into a sized array, or a constant one that may be
    /// negative into any array (a vector too), is checked by naga, though the access may
    /// never run (or faults located in checked mode), so it goes through [`Writer::operand`].
    fn index(&mut self, out: &mut String, base: VarId, index: &Expr) {
        let sized = matches!(self.k.var(base).ty, Ty::Array { size: Some(_), .. })
            || matches!(self.root_of(base), Some(Root::Shared(_) | Root::Local(_)));
        let non_negative = matches!(
            index.kind,
            ExprKind::Lit(Literal::I32(0..) | Literal::I64(0..))
        );
        let opaque = self.is_const(index) && (sized || !non_negative);
        self.operand(out, index, opaque)
    }

    /// [`Self::index`] as a string.
    fn index_text(&mut self, base: VarId, index: &Expr) -> String {
        let mut out = String::new();
        self.index(&mut out, base, index);
        out
    }

    fn support_fn(&mut self, name: &str, src: &str) {
        if !self.support.contains_key(name) {
            self.support.insert(name.to_string(), src.to_string());
        }
    }

    fn call(&mut self, out: &mut String, func: crate::ir::FuncId, args: &[Expr]) {
        let start = out.len();
        let Some(i) = self.usage.spec_index(func) else {
            return self.internal_into(out, "call to a helper the analysis did not see");
        };
        out.push_str(&self.names.specs[i]);
        out.push('(');
        // After specialisation the only array arguments are per-thread arrays, by pointer.
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            match (&a.kind, &a.ty) {
                (ExprKind::Var(v), Ty::Vector(_) | Ty::Array { .. }) => match self.access(*v) {
                    Some(Access {
                        root: Root::Local(_),
                        ptr,
                        ..
                    }) => out.push_str(&ptr),
                    _ => {
                        out.truncate(start);
                        return self
                            .internal_into(out, "a helper called with a module-scope array");
                    }
                },
                _ => self.put(out, a),
            }
        }
        out.push(')');
    }

    fn geometry(&mut self, out: &mut String, g: Geometry) {
        let (b, a) = match g {
            Geometry::ThreadIdx(a) => ("lid", a),
            Geometry::BlockIdx(a) => ("wid", a),
            Geometry::GlobalIdx(a) => ("gid", a),
            Geometry::GridDim(a) => ("nwg", a),
            Geometry::BlockDim(a) => {
                let _ = write!(out, "i32(sarek_block_{})", axis(a));
                return;
            }
            Geometry::WarpSize => {
                self.builtins.insert("sg_size");
                out.push_str("i32(sarek_sg_size)");
                return;
            }
        };
        self.builtins.insert(b);
        let _ = write!(out, "i32(sarek_{b}.{})", axis(a));
    }

    fn intrinsic(&mut self, out: &mut String, op: Intrinsic, args: &[Expr], ty: &Ty) {
        match op {
            Intrinsic::Geometry(g) => self.geometry(out, g),
            Intrinsic::BlockBarrier | Intrinsic::FenceBlock | Intrinsic::FenceDevice => {
                self.internal_into(out, "barrier as an expression")
            }
            Intrinsic::Atomic(a) => {
                let text = self.atomic(a, args);
                out.push_str(&text);
            }
            Intrinsic::Warp(w) => {
                let text = self.warp(w, args);
                out.push_str(&text);
            }
            Intrinsic::Math(m) => {
                let name = self.math(m);
                self.builtin_call(out, name, args);
            }
            Intrinsic::Abs
            | Intrinsic::Min
            | Intrinsic::Max
            | Intrinsic::Clz
            | Intrinsic::Popcount => {
                let f = match op {
                    Intrinsic::Abs => "abs",
                    Intrinsic::Min => "min",
                    Intrinsic::Max => "max",
                    Intrinsic::Clz => "countLeadingZeros",
                    _ => "countOneBits",
                };
                self.builtin_call(out, f, args);
            }
            Intrinsic::Convert => {
                let (open, close) = match (args[0].ty.scalar(), ty.scalar()) {
                    (Some(from), Some(to)) if from == to => ("", ""),
                    (_, Some(Scalar::Bool)) => ("bool(", ")"),
                    (_, Some(Scalar::F32 | Scalar::F64)) => ("f32(", ")"),
                    // naga clamps at the largest f32 below 2^31 and leaves NaN to the driver;
                    // the interpreter saturates at max_int and gives 0 for NaN.
                    (Some(Scalar::F32), _) => {
                        self.support_fn("sarek_f32_to_i32", F32_TO_I32);
                        ("sarek_f32_to_i32(", ")")
                    }
                    _ => ("i32(", ")"),
                };
                let opaque = args.iter().all(|a| self.is_const(a));
                out.push_str(open);
                self.operand(out, &args[0], opaque);
                out.push_str(close);
            }
            Intrinsic::Length => {
                let Some(Expr {
                    kind: ExprKind::Var(v),
                    ..
                }) = args.first()
                else {
                    return self.internal_into(out, "`length` of a non-variable");
                };
                match self.root_of(*v) {
                    Some(Root::Buffer(p)) => {
                        let field = self.bindings.params.iter().find_map(|(q, b)| match b {
                            ParamBinding::Vector { length_field, .. } if *q == p => {
                                Some(*length_field)
                            }
                            _ => None,
                        });
                        match field {
                            Some(f) => {
                                out.push_str("params.");
                                out.push_str(&self.bindings.fields[f].name);
                            }
                            None => self.internal_into(out, "vector without a length field"),
                        }
                    }
                    Some(Root::Shared(a) | Root::Local(a)) => match self.k.var(a).ty {
                        Ty::Array { size: Some(n), .. } => {
                            let _ = write!(out, "{n}i");
                        }
                        _ => self.internal_into(out, "array without a size"),
                    },
                    None => self.internal_into(out, "`length` of an unknown array"),
                }
            }
        }
    }

    fn warp(&mut self, w: WarpOp, args: &[Expr]) -> String {
        let a: Vec<String> = args.iter().map(|x| self.expr(x)).collect();
        let x = a.first().cloned().unwrap_or_default();
        let n = a.get(1).cloned().unwrap_or_default();
        let shuffle = |f: &str| {
            if args[0].ty == Ty::BOOL {
                format!("({f}(select(0u, 1u, {x}), u32({n})) != 0u)")
            } else {
                format!("{f}({x}, u32({n}))")
            }
        };
        match w {
            WarpOp::Shuffle => shuffle("subgroupShuffle"),
            WarpOp::ShuffleDown => shuffle("subgroupShuffleDown"),
            WarpOp::ShuffleUp => shuffle("subgroupShuffleUp"),
            WarpOp::ShuffleXor => shuffle("subgroupShuffleXor"),
            WarpOp::VoteAll => format!("subgroupAll({x})"),
            WarpOp::VoteAny => format!("subgroupAny({x})"),
            // Lane k is bit k of the first word (subgroups of up to 32 lanes).
            WarpOp::Ballot => format!("bitcast<i32>(subgroupBallot({x}).x)"),
        }
    }

    /// The WGSL function computing `m`: a built-in, or a support function (added).
    fn math(&mut self, m: MathFn) -> &'static str {
        use MathFn::*;
        let (name, src) = match m {
            Sqrt => return "sqrt",
            Rsqrt => return "inverseSqrt",
            Exp => return "exp",
            Exp2 => return "exp2",
            Log => return "log",
            Log2 => return "log2",
            Sin => return "sin",
            Cos => return "cos",
            Tan => return "tan",
            // WGSL specifies asin/acos accuracy as inherited from atan2(x, sqrt(1 - x*x)):
            // spelled that way, because some drivers' asin/acos (llvmpipe's) are far coarser.
            Asin => ("sarek_arcsin", ASIN),
            Acos => ("sarek_arccos", ACOS),
            Atan => return "atan",
            Sinh => ("sarek_sinh", SINH),
            Cosh => ("sarek_cosh", COSH),
            Tanh => {
                self.support_fn("sarek_expm1", EXPM1);
                ("sarek_tanh", TANH)
            }
            Floor => return "floor",
            Ceil => return "ceil",
            Trunc => return "trunc",
            Fabs => return "abs",
            // WGSL's pow is exp2(y * log2(x)): undefined for x <= 0.
            Pow => ("sarek_pow", POW),
            // WGSL leaves atan2 undefined at (0, 0): C's value there instead.
            Atan2 => ("sarek_arctan2", ATAN2),
            Fmin => return "min",
            Fmax => return "max",
            Fma => return "fma",
            // WGSL's round() rounds half to even; C's round() half away from zero.
            Round => ("sarek_round_away", ROUND_AWAY),
            Expm1 => ("sarek_expm1", EXPM1),
            Log1p => ("sarek_log1p", LOG1P),
            Log10 => ("sarek_log10", LOG10),
            Hypot => ("sarek_hypot", HYPOT),
            Copysign => ("sarek_copysign", COPYSIGN),
        };
        self.support_fn(name, src);
        name
    }

    fn atomic(&mut self, op: AtomicOp, args: &[Expr]) -> String {
        let Some(Expr {
            kind: ExprKind::Var(v),
            ..
        }) = args.first()
        else {
            return self.internal("atomic on a non-variable");
        };
        let Some(acc) = self.access(*v) else {
            return self.internal("atomic on an unknown array");
        };
        let Some(g) = self.names.root_global(acc.root).map(str::to_string) else {
            return self.internal("atomic on a local array");
        };
        let elem = self.k.var(*v).ty.elem().cloned().unwrap_or(Ty::I32);
        // The index goes through `index` as for a plain access: naga checks a constant one.
        let vals: Vec<String> = args[1..]
            .iter()
            .enumerate()
            .map(|(k, x)| {
                if k == 0 {
                    self.index_text(*v, x)
                } else {
                    self.expr(x)
                }
            })
            .collect();
        let i = vals.first().cloned().unwrap_or_default();
        let x = vals.get(1).cloned().unwrap_or_default();
        let place = format!("&{}[{i}]", acc.expr);
        if elem == Ty::F32 {
            let fop = match op {
                AtomicOp::Exch => {
                    return format!("bitcast<f32>(atomicExchange({place}, bitcast<u32>({x})))");
                }
                AtomicOp::Cas => {
                    let name = format!("sarek_cas_{g}");
                    let src = format!(
                        "fn {name}(sarek_p0: i32, sarek_p1: f32, sarek_p2: f32) -> f32 {{\n\
                         {INDENT}loop {{\n\
                         {INDENT}{INDENT}let sarek_p3 = atomicCompareExchangeWeak(&{g}[sarek_p0], bitcast<u32>(sarek_p1), bitcast<u32>(sarek_p2));\n\
                         {INDENT}{INDENT}if (sarek_p3.exchanged || sarek_p3.old_value != bitcast<u32>(sarek_p1)) {{\n\
                         {INDENT}{INDENT}{INDENT}return bitcast<f32>(sarek_p3.old_value);\n\
                         {INDENT}{INDENT}}}\n\
                         {INDENT}}}\n\
                         {INDENT}return 0.0f;\n}}\n"
                    );
                    self.support.entry(name.clone()).or_insert(src);
                    return format!("{name}({})", vals.join(", "));
                }
                AtomicOp::Add => ("add", "sarek_p4 + sarek_p1"),
                AtomicOp::Sub => ("sub", "sarek_p4 - sarek_p1"),
                AtomicOp::Min => ("min", "min(sarek_p4, sarek_p1)"),
                AtomicOp::Max => ("max", "max(sarek_p4, sarek_p1)"),
                AtomicOp::Inc => ("inc", "sarek_p4 + 1.0f"),
                AtomicOp::Dec => ("dec", "sarek_p4 - 1.0f"),
                AtomicOp::And | AtomicOp::Or | AtomicOp::Xor => {
                    return self.internal("bitwise atomic on float32");
                }
            };
            // float32 atomics: a compare-exchange loop over the bits (WGSL atomics are integer).
            let name = format!("sarek_fatomic_{}_{g}", fop.0);
            let operand = if matches!(op, AtomicOp::Inc | AtomicOp::Dec) {
                ""
            } else {
                ", sarek_p1: f32"
            };
            let src = format!(
                "fn {name}(sarek_p0: i32{operand}) -> f32 {{\n\
                 {INDENT}var sarek_p2 = atomicLoad(&{g}[sarek_p0]);\n\
                 {INDENT}loop {{\n\
                 {INDENT}{INDENT}let sarek_p4 = bitcast<f32>(sarek_p2);\n\
                 {INDENT}{INDENT}let sarek_p3 = atomicCompareExchangeWeak(&{g}[sarek_p0], sarek_p2, bitcast<u32>({}));\n\
                 {INDENT}{INDENT}if (sarek_p3.exchanged) {{\n\
                 {INDENT}{INDENT}{INDENT}return sarek_p4;\n\
                 {INDENT}{INDENT}}}\n\
                 {INDENT}{INDENT}sarek_p2 = sarek_p3.old_value;\n\
                 {INDENT}}}\n\
                 {INDENT}return 0.0f;\n}}\n",
                fop.1
            );
            self.support.entry(name.clone()).or_insert(src);
            return format!("{name}({})", vals.join(", "));
        }
        match op {
            AtomicOp::Add => format!("atomicAdd({place}, {x})"),
            AtomicOp::Sub => format!("atomicSub({place}, {x})"),
            AtomicOp::Min => format!("atomicMin({place}, {x})"),
            AtomicOp::Max => format!("atomicMax({place}, {x})"),
            AtomicOp::And => format!("atomicAnd({place}, {x})"),
            AtomicOp::Or => format!("atomicOr({place}, {x})"),
            AtomicOp::Xor => format!("atomicXor({place}, {x})"),
            AtomicOp::Exch => format!("atomicExchange({place}, {x})"),
            AtomicOp::Inc => format!("atomicAdd({place}, 1i)"),
            AtomicOp::Dec => format!("atomicSub({place}, 1i)"),
            AtomicOp::Cas => {
                // atomicCompareExchangeWeak may fail spuriously: retry until the value differs
                // from `expected` or the exchange happened, so the old value is exact.
                let name = format!("sarek_cas_{g}");
                let src = format!(
                    "fn {name}(sarek_p0: i32, sarek_p1: i32, sarek_p2: i32) -> i32 {{\n\
                     {INDENT}loop {{\n\
                     {INDENT}{INDENT}let sarek_p3 = atomicCompareExchangeWeak(&{g}[sarek_p0], sarek_p1, sarek_p2);\n\
                     {INDENT}{INDENT}if (sarek_p3.exchanged || sarek_p3.old_value != sarek_p1) {{\n\
                     {INDENT}{INDENT}{INDENT}return sarek_p3.old_value;\n\
                     {INDENT}{INDENT}}}\n\
                     {INDENT}}}\n\
                     {INDENT}return 0i;\n}}\n"
                );
                self.support.entry(name.clone()).or_insert(src);
                format!("{name}({})", vals.join(", "))
            }
        }
    }
}

/// float32 -> int32 as the interpreter converts: truncation, saturation at both ends, NaN to
/// 0 (tested on the bits: WGSL implementations may assume `x != x` is false).
const F32_TO_I32: &str = "fn sarek_f32_to_i32(sarek_p0: f32) -> i32 {
    if ((bitcast<u32>(sarek_p0) & 0x7fffffffu) > 0x7f800000u) {
        return 0i;
    }
    if (sarek_p0 >= 2147483648.0f) {
        return 2147483647i;
    }
    if (sarek_p0 <= -2147483648.0f) {
        return -2147483647i - 1i;
    }
    return i32(sarek_p0);
}
";

/// C `fmod` for f32 (seed 002): an exact reduction by power-of-two scaling. `d` climbs from
/// |y| by exact doublings to the largest |y|*2^k <= |x|, then walks back down subtracting when
/// `r >= d`; each subtraction is exact (Sterbenz: d <= r < 2d), so `r` is the exact remainder,
/// in at most ~277 steps (the f32 exponent span). The dividend's sign is copied bitwise.
/// Special operands are told apart on the bits, which no float optimisation can reorder: NaN
/// for y = 0, an infinite x or a NaN operand, x itself for an infinite y or |x| < |y|. The
/// NaN is made at run time from x's bits (WGSL rejects a constant NaN).
/// `x / 0 = 0`; `min_int / -1 = min_int` (WGSL's own `/` already gives that).
const DIV_I32: &str = "fn sarek_div(sarek_p0: i32, sarek_p1: i32) -> i32 {
    if (sarek_p1 == 0i) {
        return 0i;
    }
    return sarek_p0 / sarek_p1;
}
";

/// `x mod 0 = x`; `min_int mod -1 = 0` (WGSL's own `%` already gives that).
const REM_I32: &str = "fn sarek_rem(sarek_p0: i32, sarek_p1: i32) -> i32 {
    if (sarek_p1 == 0i) {
        return sarek_p0;
    }
    return sarek_p0 % sarek_p1;
}
";

/// A literal divisor other than 0 and -1: plain `/` and `%` mean the language's.
fn safe_divisor(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Lit(Literal::I32(d)) if d != 0 && d != -1)
}

const FMOD: &str = "fn sarek_fmod(sarek_p0: f32, sarek_p1: f32) -> f32 {
    let ux = bitcast<u32>(sarek_p0) & 0x7fffffffu;
    let uy = bitcast<u32>(sarek_p1) & 0x7fffffffu;
    if (ux >= 0x7f800000u || uy > 0x7f800000u || uy == 0u) {
        return bitcast<f32>(ux | 0x7fc00000u);
    }
    let ax = bitcast<f32>(ux);
    let ay = bitcast<f32>(uy);
    if (uy == 0x7f800000u || ax < ay) {
        return sarek_p0;
    }
    var d = ay;
    loop {
        let d2 = d * 2.0f;
        if (d2 > ax) {
            break;
        }
        d = d2;
    }
    var r = ax;
    loop {
        if (r >= d) {
            r = r - d;
        }
        if (d == ay) {
            break;
        }
        d = d * 0.5f;
    }
    return bitcast<f32>(bitcast<u32>(r) | (bitcast<u32>(sarek_p0) & 0x80000000u));
}
";

const ASIN: &str = "fn sarek_arcsin(sarek_p0: f32) -> f32 {
    return atan2(sarek_p0, sqrt((1.0f - sarek_p0) * (1.0f + sarek_p0)));
}
";

const ACOS: &str = "fn sarek_arccos(sarek_p0: f32) -> f32 {
    return atan2(sqrt((1.0f - sarek_p0) * (1.0f + sarek_p0)), sarek_p0);
}
";

const ROUND_AWAY: &str = "fn sarek_round_away(sarek_p0: f32) -> f32 {
    let t = trunc(sarek_p0);
    return select(t, t + sign(sarek_p0), abs(sarek_p0 - t) >= 0.5f);
}
";

// expm1, log1p, sinh and tanh near 0 and sinh/cosh near the top of the range, within a few
// ulps: WGSL lets exp and log be off by an absolute 2^-21 near 1 and defines sinh, cosh and
// tanh as inherited from their exp formulas, which lose every digit near 0 (lavapipe:
// sinh(1e-7) 6e6 ulps off) and overflow for |x| in (88.7, 89.4]. Below 0.5, Taylor series
// without the leading 1 (truncation under 2^-26).
const EXPM1: &str = "fn sarek_expm1(sarek_p0: f32) -> f32 {
    let x = sarek_p0;
    if (abs(x) < 0.5f) {
        return x * (1.0f + x * (0.5f + x * (0.16666667f + x * (0.041666668f + x * (0.008333334f + x * (0.0013888889f + x * (0.0001984127f + x * (2.4801588e-5f + x * 2.7557319e-6f))))))));
    }
    return exp(x) - 1.0f;
}
";

/// log1p(x) = 2 atanh(s), s = x / (2 + x), |s| <= 1/3 on [-0.5, 1].
const LOG1P: &str = "fn sarek_log1p(sarek_p0: f32) -> f32 {
    let x = sarek_p0;
    if (x >= -0.5f && x <= 1.0f) {
        let s = x / (2.0f + x);
        let z = s * s;
        return 2.0f * s * (1.0f + z * (0.33333334f + z * (0.2f + z * (0.14285715f + z * (0.11111111f + z * (0.09090909f + z * (0.07692308f + z * 0.06666667f)))))));
    }
    return log(1.0f + x);
}
";

/// C's pow: negative bases with integral exponents, pow(x, 0) = pow(1, y) = pow(-1, ±inf) = 1
/// (the built-in's exp2(y * log2(x)) gives NaN for the last two; every float32 above 3.4e38 is an
/// even integer, so it counts as infinite there), pow(±0, y < 0) = inf and
/// pow(±0, y > 0) = 0, signed as the base when y is an odd integer. The infinity and the NaN
/// are built from the arguments' bits: Tint refuses a constant expression that is inf or NaN.
const POW: &str = "fn sarek_pow(sarek_p0: f32, sarek_p1: f32) -> f32 {
    let x = sarek_p0;
    let y = sarek_p1;
    if (y == 0.0f || x == 1.0f || (x == -1.0f && abs(y) > 3.4e38f)) {
        return 1.0f;
    }
    if (x > 0.0f) {
        return pow(x, y);
    }
    if (x == 0.0f) {
        let odd = fract(y * 0.5f) == 0.5f;
        let sign = select(0u, bitcast<u32>(x) & 0x80000000u, odd);
        return bitcast<f32>(sign | select(0x7f800000u, 0u, y > 0.0f));
    }
    if (trunc(y) != y) {
        return bitcast<f32>((bitcast<u32>(y) & 0u) | 0x7fc00000u);
    }
    let r = pow(-x, y);
    return select(r, -r, fract(y * 0.5f) == 0.5f);
}
";

const SINH: &str = "fn sarek_sinh(sarek_p0: f32) -> f32 {
    let x = sarek_p0;
    let a = abs(x);
    if (a < 0.5f) {
        let z = x * x;
        return x * (1.0f + z * (0.16666667f + z * (0.008333334f + z * (0.0001984127f + z * 2.7557319e-6f))));
    }
    var r: f32;
    if (a < 88.0f) {
        let e = exp(a);
        r = 0.5f * (e - 1.0f / e);
    } else {
        let h = exp(0.5f * a);
        r = (0.5f * h) * h;
    }
    return select(r, -r, x < 0.0f);
}
";

const COSH: &str = "fn sarek_cosh(sarek_p0: f32) -> f32 {
    let a = abs(sarek_p0);
    if (a < 88.0f) {
        let e = exp(a);
        return 0.5f * (e + 1.0f / e);
    }
    let h = exp(0.5f * a);
    return (0.5f * h) * h;
}
";

const TANH: &str = "fn sarek_tanh(sarek_p0: f32) -> f32 {
    let x = sarek_p0;
    let a = abs(x);
    var r = 1.0f;
    if (!(a >= 10.0f)) {
        let e = sarek_expm1(2.0f * a);
        r = e / (e + 2.0f);
    }
    if (r == 0.0f) {
        return x;
    }
    return select(r, -r, x < 0.0f);
}
";

const LOG10: &str = "fn sarek_log10(sarek_p0: f32) -> f32 {
    return log2(sarek_p0) * 0.30102999566398120f;
}
";

const HYPOT: &str = "fn sarek_hypot(sarek_p0: f32, sarek_p1: f32) -> f32 {
    let a = abs(sarek_p0);
    let b = abs(sarek_p1);
    let m = max(a, b);
    if (m == 0.0f || m > 0x1.fffffep+127f) {
        return m;
    }
    let q = min(a, b) / m;
    return m * sqrt(1.0f + q * q);
}
";

/// C's atan2f at (±0, ±0): ±0 for x = +0, ±pi for x = -0.
const ATAN2: &str = "fn sarek_arctan2(sarek_p0: f32, sarek_p1: f32) -> f32 {
    if (sarek_p0 == 0.0 && sarek_p1 == 0.0) {
        let r = select(0.0, 3.1415927, (bitcast<u32>(sarek_p1) & 0x80000000u) != 0u);
        return select(r, -r, (bitcast<u32>(sarek_p0) & 0x80000000u) != 0u);
    }
    return atan2(sarek_p0, sarek_p1);
}
";

const COPYSIGN: &str = "fn sarek_copysign(sarek_p0: f32, sarek_p1: f32) -> f32 {
    return bitcast<f32>((bitcast<u32>(sarek_p0) & 0x7fffffffu) | (bitcast<u32>(sarek_p1) & 0x80000000u));
}
";
