//! The C-family writer: one pass over a legalized kernel, producing source text and the ABI.
//!
//! Emission goes bottom-up into separate buffers (types, generated helpers, user helpers, the
//! kernel) that [`Writer::finish`] concatenates behind a prelude, because what the prelude
//! needs (extension pragmas, fallback helpers) is only known once every body is written.
//! Whatever differs between the C dialects is asked of the dialect's [`Rules`]: the writer
//! never matches on a dialect.

use super::dialect::{AtomicCall, Emit, Rules};
use crate::abi::{self, Abi, AbiParam, AbiParamKind, ArgSlot, ElemLayout, LayoutRules, Stored};
use crate::back::loops;
use crate::back::names::Namer;
use crate::back::text;
use crate::diag::{Diagnostic, Span};
use crate::hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use crate::intrinsics::{AtomicOp, Geometry, Intrinsic, WarpOp};
use crate::ir::{Block, Expr, ExprKind, FuncId, Kernel, LValue, Stmt, StmtKind, Ty, VarId};
use crate::passes::legalize::Renames;
use crate::target::Generated;
use crate::types::{BinOp, Literal, MemSpace, Scalar, UnOp};
use std::borrow::Cow;
use std::fmt::Write as _;

/// How a bool is stored in buffers, struct fields and kernel arguments: OpenCL forbids
/// `bool` there (its size is implementation-defined), so every dialect uses a 32-bit `int`
/// holding 0 or 1 and the ABI says so.
pub const LAYOUT: LayoutRules = LayoutRules::C {
    bool_repr: Stored::BoolAsU32,
};

pub(super) use crate::back::text::INDENT;

/// Names of the geometry plumbing of a dialect that receives thread indices only as
/// attributed kernel parameters ([`Rules::geometry_inputs`], Metal): helpers that need them
/// receive a struct.
struct GeometryStruct {
    ty: String,
    var: String,
}

/// Which optional device features the generated source relies on (the OpenCL pragmas), with
/// the first statement that needed each.
#[derive(Default)]
pub(super) struct Features {
    pub(super) float64: Option<Span>,
    pub(super) int64_atomics_base: Option<Span>,
    pub(super) int64_atomics_extended: Option<Span>,
    pub(super) subgroups: Option<Span>,
}

pub(super) struct Writer<'a> {
    k: &'a Kernel,
    d: &'static dyn Rules,
    /// Every identifier of the kernel and every name generated so far, with the dialect's
    /// reserved words: generated names come from here.
    namer: Namer<'a>,
    var_names: Vec<Cow<'a, str>>,
    /// Length expression of each vector/array variable in scope of the current function.
    lens: HashMap<VarId, String>,
    record_names: Vec<String>,
    record_fields: Vec<Vec<String>>,
    record_makers: Vec<String>,
    variant_names: Vec<String>,
    /// Per constructor, per payload component: the struct member name (`Rect_1`).
    variant_fields: Vec<Vec<Vec<String>>>,
    ctor_makers: Vec<Vec<String>>,
    func_names: Vec<String>,
    /// Whether a helper takes the geometry struct.
    func_geom: Vec<bool>,
    geom: Option<GeometryStruct>,
    /// Name of the trap status pointer, when the kernel has traps. It is passed to the
    /// helpers that trap (directly or through a call), like the Metal geometry struct.
    trap: Option<String>,
    /// Whether a helper takes the trap status pointer.
    func_trap: Vec<bool>,
    /// Whether the function being written traps.
    cur_trap: bool,
    /// Generated helpers by key -> (name, definition), in first-use order.
    helpers: Vec<(String, String, String)>,
    features: Features,
    diags: Vec<Diagnostic>,
    /// Span of the statement being written (expressions carry none).
    span: Span,
    /// Whether the function being written reads the geometry struct.
    cur_geom: bool,
    /// Whether the function being written is the kernel (shared arrays are hoisted there).
    in_kernel: bool,
    hoisted: HashSet<VarId>,
    out: String,
    indent: usize,
}

impl<'a> Writer<'a> {
    /// A writer for `k` whose binders and helpers are named as `k` names them, but for
    /// `renames` (legalize's, kept out of the kernel so that it is not copied).
    pub fn new(k: &'a Kernel, d: &'static dyn Rules, renames: Renames) -> Self {
        // Names are borrowed from the kernel unless legalize renamed them.
        let mut var_names: Vec<Cow<'a, str>> = k
            .vars
            .iter()
            .map(|v| Cow::Borrowed(v.name.as_str()))
            .collect();
        let mut func_names: Vec<String> = k.functions.iter().map(|f| f.name.clone()).collect();
        renames.apply_to(&mut var_names, &mut func_names, Cow::to_mut, |n| n);
        let mut namer = Namer::new(d.keywords());
        namer.reserve(k.vars.len() + k.functions.len());
        for name in &var_names {
            match name {
                Cow::Borrowed(name) => namer.avoid_borrowed(name),
                Cow::Owned(name) => namer.avoid(name),
            }
        }
        for name in &func_names {
            namer.avoid(name);
        }
        let mut w = Writer {
            k,
            d,
            namer,
            var_names,
            lens: HashMap::default(),
            record_names: Vec::new(),
            record_fields: Vec::new(),
            record_makers: Vec::new(),
            variant_names: Vec::new(),
            variant_fields: Vec::new(),
            ctor_makers: Vec::new(),
            func_names,
            func_geom: vec![false; k.functions.len()],
            geom: None,
            trap: None,
            func_trap: vec![false; k.functions.len()],
            cur_trap: false,
            helpers: Vec::new(),
            features: Features::default(),
            diags: Vec::new(),
            span: k.span,
            cur_geom: false,
            in_kernel: false,
            hoisted: HashSet::default(),
            out: String::new(),
            indent: 0,
        };
        w.name_types();
        if !k.traps().is_empty() {
            w.trap = Some(w.fresh("sarek_trap"));
        }
        if !d.geometry_inputs().is_empty() {
            w.geom = Some(GeometryStruct {
                ty: w.fresh("sarek_geom"),
                var: w.fresh("geom"),
            });
        }
        w
    }

    /// A global name based on `base` that no kernel identifier, keyword or earlier
    /// generated name uses ([`Namer::claim`]).
    fn fresh(&mut self, base: &str) -> String {
        self.namer.claim(base)
    }

    fn name_types(&mut self) {
        let k = self.k;
        for r in &k.records {
            let name = self.fresh(&r.name);
            self.record_names.push(name);
            // Members live in their struct's own namespace: one namer per struct.
            let mut members = self.namer.sibling();
            let fields = r.fields.iter().map(|f| members.claim(&f.name)).collect();
            self.record_fields.push(fields);
        }
        for r in &k.records {
            let maker = self.fresh(&format!("new_{}", r.name));
            self.record_makers.push(maker);
        }
        for v in &k.variants {
            let name = self.fresh(&v.name);
            self.variant_names.push(name);
            let mut members = self.namer.sibling();
            members.avoid("tag");
            let fields = v
                .ctors
                .iter()
                .map(|c| {
                    (0..c.fields.len())
                        .map(|i| members.claim(&format!("{}_{i}", c.name)))
                        .collect()
                })
                .collect();
            self.variant_fields.push(fields);
        }
        for v in &k.variants {
            let makers = v
                .ctors
                .iter()
                .map(|c| self.fresh(&format!("new_{}_{}", v.name, c.name)))
                .collect();
            self.ctor_makers.push(makers);
        }
    }

    /// IR this writer cannot express although the analysis let it through: a Sarek bug.
    fn error(&mut self, message: String, label: &str, note: &str) {
        let d = crate::ir::analysis::internal_in(self.span, self.d.display_name(), message)
            .with_label(label)
            .with_note(note);
        if !self
            .diags
            .iter()
            .any(|x| x.message == d.message && x.span == d.span)
        {
            self.diags.push(d);
        }
    }

    // ---------------------------------------------------------------- types

    fn scalar(&mut self, s: Scalar) -> &'static str {
        if s == Scalar::F64 && self.features.float64.is_none() {
            self.features.float64 = Some(self.span);
        }
        self.d.scalar(s)
    }

    /// Type of a value held in a variable or passed to a helper.
    fn value_ty(&mut self, ty: &Ty) -> Cow<'static, str> {
        match ty {
            Ty::Unit => "void".into(),
            Ty::Scalar(s) => self.scalar(*s).into(),
            Ty::Record(id) => self.record_names[id.0 as usize].clone().into(),
            Ty::Variant(id) => self.variant_names[id.0 as usize].clone().into(),
            Ty::Vector(_) | Ty::Array { .. } => {
                // Lowering binds vectors and arrays only as parameters and array statements.
                self.error(
                    format!(
                        "{} cannot copy a vector or array into a variable",
                        self.d.display_name()
                    ),
                    "vector or array used as a value",
                    "index it, or pass it to a helper",
                );
                "void".into()
            }
        }
    }

    /// Type of a value in memory another party sees: buffers, struct members, kernel
    /// arguments (bool widened to int, see [`LAYOUT`]).
    fn storage_ty(&mut self, ty: &Ty) -> Cow<'static, str> {
        match ty {
            Ty::Scalar(Scalar::Bool) => "int".into(),
            _ => self.value_ty(ty),
        }
    }

    /// Element type and address space of a vector/array type (shared and local arrays hold
    /// plain values; global buffers hold storage types).
    fn pointer(&mut self, ty: &Ty) -> String {
        match ty {
            Ty::Vector(elem) => format!(
                "{}{}*",
                self.d.pointer_space(MemSpace::Global),
                self.storage_ty(elem)
            ),
            Ty::Array { elem, space, .. } => {
                format!("{}{}*", self.d.pointer_space(*space), self.value_ty(elem))
            }
            _ => unreachable!(),
        }
    }

    fn write_types(&mut self) -> String {
        let mut order = Vec::new();
        let mut state = HashMap::default();
        for i in 0..self.k.records.len() {
            self.type_order(
                &Ty::Record(crate::ir::RecordId(i as u32)),
                &mut state,
                &mut order,
            );
        }
        for i in 0..self.k.variants.len() {
            self.type_order(
                &Ty::Variant(crate::ir::VariantId(i as u32)),
                &mut state,
                &mut order,
            );
        }
        let q = self.d.helper_qualifier();
        let mut out = String::new();
        for ty in order {
            match ty {
                Ty::Record(id) => {
                    let i = id.0 as usize;
                    let r = &self.k.records[i];
                    let _ = writeln!(out, "typedef struct {{");
                    for (j, f) in r.fields.iter().enumerate() {
                        let t = self.storage_ty(&f.ty);
                        let _ = writeln!(out, "{INDENT}{t} {};", self.record_fields[i][j]);
                    }
                    let name = &self.record_names[i];
                    let _ = writeln!(out, "}} {name};");
                    let _ = write!(out, "{q}{name} {}(", self.record_makers[i]);
                    self.maker_params(&mut out, r.fields.iter().map(|f| &f.ty));
                    let name = &self.record_names[i];
                    let _ = writeln!(out, ") {{\n{INDENT}{name} _r;");
                    for (j, fname) in self.record_fields[i].iter().enumerate() {
                        let _ = writeln!(out, "{INDENT}_r.{fname} = _{j};");
                    }
                    let _ = writeln!(out, "{INDENT}return _r;\n}}\n");
                }
                Ty::Variant(id) => {
                    let i = id.0 as usize;
                    let v = &self.k.variants[i];
                    let _ = writeln!(out, "typedef struct {{\n{INDENT}int tag;");
                    for (ci, c) in v.ctors.iter().enumerate() {
                        for (j, f) in c.fields.iter().enumerate() {
                            let t = self.storage_ty(f);
                            let _ = writeln!(out, "{INDENT}{t} {};", self.variant_fields[i][ci][j]);
                        }
                    }
                    let _ = writeln!(out, "}} {};", self.variant_names[i]);
                    for (ci, c) in v.ctors.iter().enumerate() {
                        let (name, maker) = (&self.variant_names[i], &self.ctor_makers[i][ci]);
                        let _ = write!(out, "{q}{name} {maker}(");
                        self.maker_params(&mut out, c.fields.iter());
                        let name = &self.variant_names[i];
                        // Inactive payload fields are zero so buffers compare equal everywhere.
                        let _ = writeln!(
                            out,
                            ") {{\n{INDENT}{name} _r = {{0}};\n{INDENT}_r.tag = {ci};"
                        );
                        for (j, fname) in self.variant_fields[i][ci].iter().enumerate() {
                            let _ = writeln!(out, "{INDENT}_r.{fname} = _{j};");
                        }
                        let _ = writeln!(out, "{INDENT}return _r;\n}}\n");
                    }
                }
                _ => unreachable!(),
            }
        }
        out
    }

    /// A record or constructor maker's parameters `T0 _0, T1 _1, ...`.
    fn maker_params(&mut self, out: &mut String, fields: impl Iterator<Item = &'a Ty>) {
        for (j, f) in fields.enumerate() {
            if j > 0 {
                out.push_str(", ");
            }
            let t = self.value_ty(f);
            let _ = write!(out, "{t} _{j}");
        }
    }

    /// Depth-first order so that a struct is declared before any struct containing it.
    fn type_order(&self, ty: &Ty, state: &mut HashMap<Ty, bool>, order: &mut Vec<Ty>) {
        if !matches!(ty, Ty::Record(_) | Ty::Variant(_)) || state.contains_key(ty) {
            return;
        }
        state.insert(ty.clone(), false);
        let members: Vec<Ty> = match ty {
            Ty::Record(id) => self
                .k
                .record(*id)
                .fields
                .iter()
                .map(|f| f.ty.clone())
                .collect(),
            Ty::Variant(id) => self
                .k
                .variant(*id)
                .ctors
                .iter()
                .flat_map(|c| c.fields.clone())
                .collect(),
            _ => Vec::new(),
        };
        for m in &members {
            self.type_order(m, state, order);
        }
        state.insert(ty.clone(), true);
        order.push(ty.clone());
    }

    // ---------------------------------------------------------------- output helpers

    fn line(&mut self, text: &str) {
        text::line(&mut self.out, self.indent, text);
    }

    /// [`Self::line`] of formatted text, written straight into the output.
    fn line_fmt(&mut self, text: std::fmt::Arguments<'_>) {
        text::line_fmt(&mut self.out, self.indent, text);
    }

    /// The output buffer with the current indentation written, for a line built in place;
    /// [`Self::end_line`] gives it back.
    fn begin_line(&mut self) -> String {
        let mut out = std::mem::take(&mut self.out);
        text::indent(&mut out, self.indent);
        out
    }

    fn end_line(&mut self, mut out: String) {
        out.push('\n');
        self.out = out;
    }

    /// The line `{before}{e}{after}`, `e` written bare.
    fn expr_line(&mut self, before: std::fmt::Arguments<'_>, e: &Expr, after: &str) {
        let mut out = self.begin_line();
        let _ = out.write_fmt(before);
        self.put_bare(&mut out, e);
        out.push_str(after);
        self.end_line(out);
    }

    /// `v`'s name: borrowed from the kernel unless legalize renamed it, so not copied.
    fn var(&self, v: VarId) -> Cow<'a, str> {
        self.var_names[v.0 as usize].clone()
    }

    fn var_ty(&self, v: VarId) -> &'a Ty {
        &self.k.vars[v.0 as usize].ty
    }

    // ---------------------------------------------------------------- functions

    /// Write everything and return the source and ABI (or internal errors).
    pub fn finish(mut self, original: &Kernel) -> Result<Generated, Vec<Diagnostic>> {
        let types = self.write_types();
        let mut functions = String::new();
        // Helpers a dialect keeps out of line (CUDA: NVRTC inlined a chain of helpers that
        // call the next twice, bounded recursion, into minutes of compilation).
        let outlined = match self.d.outlined_helper_qualifier() {
            "" => Vec::new(),
            _ => crate::ir::analysis::outlined_helpers(self.k),
        };
        for i in 0..self.k.functions.len() {
            let out_of_line = outlined.get(i).copied().unwrap_or(false);
            self.write_function(FuncId(i as u32), out_of_line, &mut functions);
        }
        let mut kernel = String::new();
        let abi = self.write_kernel(original, &mut kernel);
        if !self.diags.is_empty() {
            return Err(self.diags);
        }
        let prelude = self.d.prelude(&self.features);
        let helpers = || self.helpers.iter().map(|h| h.2.as_str());
        // One buffer sized for everything (the header and the geometry struct are short):
        // the output was reallocated and copied as it grew.
        let mut src = String::with_capacity(
            256 + prelude.len()
                + types.len()
                + helpers().map(str::len).sum::<usize>()
                + functions.len()
                + kernel.len()
                + 4,
        );
        self.write_prelude(&original.name, &prelude, &mut src);
        // Each non-empty part is followed by a blank line.
        let end_part = |src: &mut String, start: usize| {
            if src.len() > start && !src.ends_with("\n\n") {
                src.push('\n');
            }
        };
        let start = src.len();
        src.push_str(&types);
        end_part(&mut src, start);
        let start = src.len();
        helpers().for_each(|h| src.push_str(h));
        end_part(&mut src, start);
        for part in [functions, kernel] {
            let start = src.len();
            src.push_str(&part);
            end_part(&mut src, start);
        }
        while src.ends_with("\n\n") {
            src.pop();
        }
        Ok(Generated { source: src, abi })
    }

    /// The header comment, the dialect's `prelude` and the geometry struct, appended to `p`.
    fn write_prelude(&self, kernel_name: &str, prelude: &str, p: &mut String) {
        let _ = writeln!(
            p,
            "// Generated by sarek from kernel `{kernel_name}` ({}).",
            self.d.display_name()
        );
        p.push_str(prelude);
        p.push('\n');
        if let Some(g) = &self.geom {
            let _ = writeln!(p, "struct {} {{", g.ty);
            for input in self.d.geometry_inputs() {
                let _ = writeln!(p, "{INDENT}{} {};", input.ty, input.field);
            }
            let _ = writeln!(p, "}};\n");
        }
    }

    /// Register the lengths of the vector/array parameters of a function (pointer + int).
    fn param_decls(&mut self, params: &[VarId]) -> Vec<String> {
        let mut out = Vec::new();
        for &p in params {
            let ty = self.var_ty(p);
            let name = self.var(p);
            match ty {
                Ty::Vector(_) | Ty::Array { .. } => {
                    let ptr = self.pointer(ty);
                    let len = self.fresh(&format!("{name}_len"));
                    out.push(format!("{ptr} {name}"));
                    out.push(format!("int {len}"));
                    self.lens.insert(p, len);
                }
                _ => {
                    let t = self.value_ty(ty);
                    out.push(format!("{t} {name}"));
                }
            }
        }
        out
    }

    /// Helper `id`, appended to `dest` (its body is written first: the parameters depend on
    /// what it reads); `out_of_line`: with the dialect's qualifier that keeps it so.
    fn write_function(&mut self, id: FuncId, out_of_line: bool, dest: &mut String) {
        let f = self.k.function(id);
        self.span = f.span;
        self.in_kernel = false;
        self.cur_geom = false;
        self.cur_trap = false;
        let mut params = self.param_decls(&f.params);
        let ret = self.value_ty(&f.ret);
        self.out.clear();
        self.indent = 1;
        self.block_body(&f.body);
        if self.cur_geom {
            self.func_geom[id.0 as usize] = true;
            let g = self.geom.as_ref().expect("a dialect with geometry inputs");
            params.insert(0, format!("{} {}", g.ty, g.var));
        }
        if self.cur_trap {
            self.func_trap[id.0 as usize] = true;
            let ptr = self.trap.clone().unwrap_or_default();
            params.insert(0, format!("{} {ptr}", self.d.trap_pointer()));
        }
        let _ = writeln!(
            dest,
            "{}{}{} {}({}) {{",
            self.d.helper_qualifier(),
            if out_of_line {
                self.d.outlined_helper_qualifier()
            } else {
                ""
            },
            ret,
            self.func_names[id.0 as usize],
            params.join(", "),
        );
        dest.push_str(&self.out);
        dest.push_str("}\n\n");
    }

    /// The kernel function, appended to `dest`, and its ABI.
    fn write_kernel(&mut self, original: &Kernel, dest: &mut String) -> Abi {
        let k = self.k;
        self.span = k.span;
        self.in_kernel = true;
        // The entry point is spelled as on every target ([`Namer::escape`]).
        let entry = {
            let spelled = self.namer.escape(&k.name);
            self.namer.unique(spelled)
        };
        let mut params = Vec::new();
        let mut abi_params = Vec::new();
        let mut slot = 0u32;
        for &p in &k.params {
            let info = &k.vars[p.0 as usize];
            self.span = info.span;
            let name = self.var(p);
            let src_name = original
                .vars
                .get(p.0 as usize)
                .map_or_else(|| name.to_string(), |v| v.name.clone());
            match &info.ty {
                Ty::Vector(elem) => {
                    let ptr = self.pointer(&info.ty);
                    let len = self.fresh(&format!("{name}_len"));
                    params.push(self.d.buffer_param(format!("{ptr} {name}"), slot));
                    params.push(self.d.value_param("int", &len, slot + 1));
                    self.lens.insert(p, len);
                    abi_params.push(AbiParam {
                        name: src_name,
                        ty: info.ty.clone(),
                        kind: AbiParamKind::Vector {
                            elem: abi::elem_layout(k, elem, LAYOUT),
                            buffer: ArgSlot::Argument(slot),
                            length: ArgSlot::Argument(slot + 1),
                        },
                    });
                    slot += 2;
                }
                ty => {
                    let t = self.storage_ty(ty);
                    params.push(self.d.value_param(&t, &name, slot));
                    abi_params.push(AbiParam {
                        name: src_name,
                        ty: ty.clone(),
                        kind: AbiParamKind::Value {
                            layout: value_layout(k, ty),
                            slot: ArgSlot::Argument(slot),
                        },
                    });
                    slot += 1;
                }
            }
        }
        self.out.clear();
        self.indent = 1;
        if let Some(g) = &self.geom {
            let (gty, gvar) = (g.ty.clone(), g.var.clone());
            let mut inits = Vec::new();
            for input in self.d.geometry_inputs() {
                let pname = self.fresh(&format!("sarek_{}", input.field));
                params.push(self.d.geometry_param(input, &pname));
                inits.push(pname);
            }
            self.line_fmt(format_args!(
                "const {gty} {gvar} = {{{}}};",
                inits.join(", ")
            ));
        }
        let trap_status = self.trap.clone().map(|ptr| {
            let ptr_ty = self.d.trap_pointer();
            params.push(self.d.buffer_param(format!("{ptr_ty} {ptr}"), slot));
            ArgSlot::Argument(slot)
        });
        self.hoist_shared(&k.body);
        self.block_body(&k.body);
        let params_text = self.d.param_list(&params);
        let _ = writeln!(
            dest,
            "{} {entry}({params_text}) {{",
            self.d.kernel_qualifier()
        );
        dest.push_str(&self.out);
        dest.push_str("}\n");
        Abi {
            entry_point: entry,
            params: abi_params,
            uniform_size: None,
            uniform_binding: None,
            block_size_in_source: false,
            trap_status,
        }
    }

    /// Shared arrays are declared at the top of the kernel: OpenCL C and Metal require
    /// block-local memory at kernel function scope. A hoisted name that another variable
    /// of the kernel also uses gets a fresh one, since it is now in scope everywhere.
    fn hoist_shared(&mut self, body: &Block) {
        let mut found = Vec::new();
        collect_shared(body, &mut found);
        found.retain(|(v, _)| {
            matches!(
                self.var_ty(*v),
                Ty::Array {
                    space: MemSpace::Shared,
                    ..
                }
            )
        });
        let mut counts: HashMap<&str, usize> = HashMap::default();
        for name in &self.var_names {
            *counts.entry(name.as_ref()).or_default() += 1;
        }
        let mut renamed = Vec::new();
        for &(var, _) in &found {
            let name = self.var_names[var.0 as usize].as_ref();
            if counts.get(name).copied().unwrap_or(0) > 1 {
                renamed.push((var, name.to_string()));
            }
        }
        for (var, name) in renamed {
            let n = self.fresh(&name);
            self.var_names[var.0 as usize] = Cow::Owned(n);
        }
        for (var, span) in found {
            self.span = span;
            let decl = self.array_decl(var);
            self.line(&decl);
            self.hoisted.insert(var);
        }
    }

    fn array_decl(&mut self, var: VarId) -> String {
        let name = self.var(var);
        let Ty::Array { elem, space, size } = self.var_ty(var) else {
            unreachable!("array statement on a non-array")
        };
        let n = size.unwrap_or(1);
        self.lens.insert(var, n.to_string());
        let t = self.value_ty(elem);
        match space {
            MemSpace::Shared => format!("{}{t} {name}[{n}];", self.d.shared_decl()),
            // Per-thread arrays start zeroed, as in the interpreter.
            _ => format!("{t} {name}[{n}] = {{0}};"),
        }
    }

    // ---------------------------------------------------------------- statements

    fn block_body(&mut self, block: &Block) {
        for s in block {
            self.stmt(s);
        }
    }

    /// `{before}{cond}) {` and the indented block.
    fn nested_on(&mut self, before: &str, cond: &Expr, block: &Block) {
        self.expr_line(format_args!("{before}"), cond, ") {");
        self.indent += 1;
        self.block_body(block);
        self.indent -= 1;
    }

    fn nested(&mut self, head: &str, block: &Block) {
        self.line(&if head.is_empty() {
            "{".to_string()
        } else {
            format!("{head} {{")
        });
        self.indent += 1;
        self.block_body(block);
        self.indent -= 1;
    }

    fn stmt(&mut self, s: &Stmt) {
        self.span = s.span;
        match &s.kind {
            StmtKind::Let { var, init } => {
                let ty = self.var_ty(*var);
                if *ty == Ty::Unit {
                    if let Some(e) = init {
                        self.expr_line(format_args!(""), e, ";");
                    }
                    return;
                }
                let t = self.value_ty(ty);
                let name = self.var(*var);
                match init {
                    Some(e) => self.expr_line(format_args!("{t} {name} = "), e, ";"),
                    None => self.line_fmt(format_args!("{t} {name};")),
                }
            }
            StmtKind::Array { var } => {
                let Ty::Array { space, .. } = self.var_ty(*var) else {
                    return;
                };
                if *space == MemSpace::Shared {
                    if self.hoisted.contains(var) {
                        return;
                    }
                    if !self.d.shared_arrays_in_helpers() {
                        self.error(
                            format!("shared arrays inside helper functions are not supported by {}", self.d.display_name()),
                            "shared array declared in a helper",
                            "block-local memory must be declared at kernel function scope; declare it in the kernel",
                        );
                        return;
                    }
                }
                let decl = self.array_decl(*var);
                self.line(&decl);
            }
            StmtKind::Assign { place, value } => {
                let mut out = self.begin_line();
                self.put_place(&mut out, place);
                out.push_str(" = ");
                self.put_bare(&mut out, value);
                out.push(';');
                self.end_line(out);
            }
            StmtKind::Expr(e) => self.expr_line(format_args!(""), e, ";"),
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                self.nested_on("if (", cond, then_block);
                // `else if` chains stay flat.
                let mut rest = else_block;
                while let [
                    Stmt {
                        kind:
                            StmtKind::If {
                                cond,
                                then_block,
                                else_block,
                            },
                        span,
                    },
                ] = rest.as_slice()
                {
                    self.span = *span;
                    self.nested_on("} else if (", cond, then_block);
                    rest = else_block;
                }
                if !rest.is_empty() {
                    self.nested("} else", rest);
                }
                self.line("}");
            }
            StmtKind::For {
                var,
                start,
                end,
                downto,
                body,
                unroll,
            } => self.for_loop(*var, start, end, *downto, body, *unroll),
            StmtKind::While { cond, body, unroll } => {
                if let Some(p) = unroll.and_then(|n| self.d.unroll_pragma(n)) {
                    self.line(&p);
                }
                self.nested_on("while (", cond, body);
                self.line("}");
            }
            StmtKind::Match {
                scrutinee,
                variant,
                arms,
            } => self.match_stmt(scrutinee, *variant, arms),
            StmtKind::Block(b) => {
                self.nested("", b);
                self.line("}");
            }
            StmtKind::Barrier => self.line(self.d.barrier()),
            StmtKind::Fence { device } => self.line(self.d.fence(*device)),
            StmtKind::Return(e) => match e {
                Some(e) => self.expr_line(format_args!("return "), e, ";"),
                None => self.line("return;"),
            },
            StmtKind::Break => self.line("break;"),
            StmtKind::Continue => self.line("continue;"),
            StmtKind::Native(text) => {
                for l in text.lines() {
                    self.line(l);
                }
            }
            StmtKind::Trap(t) => {
                self.cur_trap = true;
                let ptr = self.trap.clone().unwrap_or_default();
                self.line(&self.d.trap_store(&ptr, t.code));
            }
        }
    }

    /// `for var = start to|downto end` in the shape shared with GLSL ([`loops`]).
    fn for_loop(
        &mut self,
        var: VarId,
        start: &Expr,
        end: &Expr,
        downto: bool,
        body: &Block,
        unroll: Option<u32>,
    ) {
        let name = self.var(var);
        let it = self.fresh(&format!("{name}_it"));
        let last = self.fresh(&format!("{name}_end"));
        let a = self.expr(start);
        let b = self.expr(end);
        let u = self.d.unsigned(Scalar::I32);
        // A name or a literal needs no parentheses under the cast.
        let convert = |t: &str, e: &str| {
            let e = strip(e);
            if e.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
                format!("({t}){e}")
            } else {
                format!("({t})({e})")
            }
        };
        let hint = match unroll.and_then(|n| self.d.unroll_pragma(n)) {
            Some(p) => loops::Hint::Line(p),
            None => loops::Hint::None,
        };
        let names = loops::Names {
            index: &name,
            counter: &it,
            last: &last,
        };
        let spelling = loops::Spelling {
            unsigned: u,
            convert: &convert,
        };
        let shape = loops::rotated_for(&names, &a, &b, downto, hint, &spelling);
        let base = self.indent;
        for (depth, line) in &shape.head {
            self.indent = base + depth;
            self.line(line);
        }
        self.indent = base + shape.body_depth;
        self.block_body(body);
        for (depth, line) in &shape.tail {
            self.indent = base + depth;
            self.line(line);
        }
        self.indent = base;
    }

    /// A match is an `if` chain on the tag (a `switch` would capture `break`).
    fn match_stmt(
        &mut self,
        scrutinee: &Expr,
        variant: crate::ir::VariantId,
        arms: &[crate::ir::MatchArm],
    ) {
        let vi = variant.0 as usize;
        let (subject, scoped) = match &scrutinee.kind {
            ExprKind::Var(v) => (self.var(*v), false),
            _ => {
                let t = self.variant_names[vi].clone();
                let tmp = self.fresh("scrutinee");
                let e = self.expr(scrutinee);
                self.line("{");
                self.indent += 1;
                self.line_fmt(format_args!("{t} {tmp} = {};", strip(&e)));
                (tmp.into(), true)
            }
        };
        let mut first = true;
        let mut default = None;
        // Without a default arm the constructor arms are exhaustive: the last one is a plain
        // `else`, so C sees no path out of a helper without a `return` (-Wreturn-type).
        let last = if arms.iter().any(|a| a.ctor.is_none()) {
            None
        } else {
            arms.len().checked_sub(1)
        };
        for (k, arm) in arms.iter().enumerate() {
            let Some(c) = arm.ctor else {
                default = Some(arm);
                continue;
            };
            let head = match (first, Some(k) == last) {
                (true, true) => format!("{{ // {subject}.tag == {c}"),
                (true, false) => format!("if ({subject}.tag == {c}) {{"),
                (false, true) => format!("}} else {{ // {subject}.tag == {c}"),
                (false, false) => format!("}} else if ({subject}.tag == {c}) {{"),
            };
            first = false;
            self.line(&head);
            self.indent += 1;
            let ctor = &self.k.variants[vi].ctors[c as usize];
            for (j, b) in arm.bindings.iter().enumerate() {
                if let Some(b) = b {
                    let t = self.value_ty(&ctor.fields[j]);
                    let field = self.variant_fields[vi][c as usize][j].clone();
                    let read = bool_read(&ctor.fields[j], format!("{subject}.{field}"));
                    let name = self.var(*b);
                    self.line_fmt(format_args!("{t} {name} = {};", strip(&read)));
                }
            }
            self.block_body(&arm.body);
            self.indent -= 1;
        }
        if let Some(arm) = default {
            if first {
                self.nested("", &arm.body);
            } else {
                self.nested("} else", &arm.body);
            }
            self.line("}");
        } else if !first {
            self.line("}");
        }
        if scoped {
            self.indent -= 1;
            self.line("}");
        }
    }

    fn put_place(&mut self, out: &mut String, p: &LValue) {
        match p {
            LValue::Var(v) => out.push_str(&self.var_names[v.0 as usize]),
            LValue::Index { base, index } => {
                out.push_str(&self.var_names[base.0 as usize]);
                out.push('[');
                self.put_bare(out, index);
                out.push(']');
            }
            LValue::Field { base, field } => {
                let ty = lvalue_ty(self.k, base);
                self.put_place(out, base);
                out.push('.');
                out.push_str(&self.field_name(&ty, *field));
            }
        }
    }

    fn field_name(&self, ty: &Ty, field: u32) -> String {
        match ty {
            Ty::Record(id) => self.record_fields[id.0 as usize][field as usize].clone(),
            _ => unreachable!("field of a non-record"),
        }
    }

    // ---------------------------------------------------------------- expressions

    /// An expression as C text, for the few spellings a dialect composes from strings.
    fn expr(&mut self, e: &Expr) -> String {
        let mut out = String::new();
        self.put(&mut out, e);
        out
    }

    /// `e` written bare at the end of `out`: statement, argument and index positions, where
    /// the outer pair of parentheses [`Self::put`] gives compound results is not needed.
    fn put_bare(&mut self, out: &mut String, e: &Expr) {
        let start = out.len();
        self.put(out, e);
        strip_from(out, start);
    }

    /// `e` written as C text at the end of `out`. Compound results are parenthesised, so
    /// any result is safe as an operand. Every expression of a line goes into the one
    /// buffer; where a generated helper's name precedes operands that may create helpers of
    /// their own, the name is inserted after them, so helpers keep their first-use order.
    fn put(&mut self, out: &mut String, e: &Expr) {
        match &e.kind {
            ExprKind::Lit(l) => self.literal(out, *l),
            ExprKind::Var(v) => out.push_str(&self.var_names[v.0 as usize]),
            ExprKind::Binary {
                op,
                lhs,
                rhs,
                nowrap,
            } => self.binary(out, *op, lhs, rhs, *nowrap),
            ExprKind::Unary { op, operand } => match (op, operand.ty.scalar()) {
                (UnOp::Neg, Some(s)) if s.is_int() => {
                    let u = self.d.unsigned(s);
                    let t = self.scalar(s);
                    let _ = write!(out, "(({t})(0 - ({u})");
                    self.put(out, operand);
                    out.push_str("))");
                }
                (op, _) => {
                    out.push_str(match op {
                        UnOp::Neg => "(-",
                        UnOp::Not => "(!",
                        UnOp::BitNot => "(~",
                    });
                    self.put(out, operand);
                    out.push(')');
                }
            },
            ExprKind::Index { base, index } => {
                let base_ty = self.var_ty(*base);
                let read_bool =
                    matches!(base_ty, Ty::Vector(_)) && base_ty.elem() == Some(&Ty::BOOL);
                if read_bool {
                    out.push('(');
                }
                out.push_str(&self.var_names[base.0 as usize]);
                out.push('[');
                self.put_bare(out, index);
                out.push(']');
                if read_bool {
                    out.push_str(" != 0)");
                }
            }
            ExprKind::Field { base, field } => {
                let read_bool = e.ty == Ty::BOOL;
                if read_bool {
                    out.push('(');
                }
                self.put(out, base);
                let Ty::Record(id) = &base.ty else {
                    unreachable!("field of a non-record")
                };
                out.push('.');
                out.push_str(&self.record_fields[id.0 as usize][*field as usize]);
                if read_bool {
                    out.push_str(" != 0)");
                }
            }
            ExprKind::Record { record, fields } => {
                let maker = &self.record_makers[record.0 as usize];
                out.push_str(maker);
                self.put_args(out, fields);
            }
            ExprKind::Ctor {
                variant,
                ctor,
                fields,
            } => {
                let maker = &self.ctor_makers[variant.0 as usize][*ctor as usize];
                out.push_str(maker);
                self.put_args(out, fields);
            }
            ExprKind::Tag(v) => {
                self.put(out, v);
                out.push_str(".tag");
            }
            ExprKind::Payload { value, ctor, field } => {
                let Ty::Variant(id) = &value.ty else {
                    unreachable!("payload of a non-variant")
                };
                let read_bool = e.ty == Ty::BOOL;
                if read_bool {
                    out.push('(');
                }
                self.put(out, value);
                out.push('.');
                out.push_str(&self.variant_fields[id.0 as usize][*ctor as usize][*field as usize]);
                if read_bool {
                    out.push_str(" != 0)");
                }
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                out.push('(');
                self.put(out, cond);
                out.push_str(" ? ");
                self.put(out, then_value);
                out.push_str(" : ");
                self.put(out, else_value);
                out.push(')');
            }
            ExprKind::Call { func, args } => self.call(out, *func, args),
            ExprKind::Intrinsic { op, args } => self.intrinsic(out, *op, args, &e.ty),
        }
    }

    /// `(a, b, ...)`, each argument bare.
    fn put_args(&mut self, out: &mut String, args: &[Expr]) {
        text::put_list(self, out, args, Self::put_bare);
    }

    fn literal(&mut self, out: &mut String, l: Literal) {
        let _ = match l {
            Literal::Bool(b) => write!(out, "{b}"),
            Literal::I32(i32::MIN) => write!(out, "(-2147483647 - 1)"),
            Literal::I32(v) if v < 0 => write!(out, "({v})"),
            Literal::I32(v) => write!(out, "{v}"),
            Literal::I64(v) => {
                let sfx = self.d.i64_suffix();
                if v == i64::MIN {
                    write!(out, "(-9223372036854775807{sfx} - 1{sfx})")
                } else if v < 0 {
                    write!(out, "({v}{sfx})")
                } else {
                    write!(out, "{v}{sfx}")
                }
            }
            Literal::F32(v) => {
                self.float_literal(out, v as f64, Scalar::F32);
                Ok(())
            }
            Literal::F64(v) => {
                self.float_literal(out, v, Scalar::F64);
                Ok(())
            }
        };
    }

    /// A float literal: `{:?}` of the literal's own type is the shortest text that
    /// round-trips, always with `.` or an exponent.
    fn float_literal(&mut self, out: &mut String, v: f64, s: Scalar) {
        self.scalar(s);
        if v.is_nan() {
            out.push_str(&self.d.nan(s));
            return;
        }
        if v.is_infinite() {
            out.push_str(&self.d.infinity(s, v < 0.0));
            return;
        }
        let _ = match (s, v.is_sign_negative()) {
            (Scalar::F32, false) => write!(out, "{:?}f", v as f32),
            (Scalar::F32, true) => write!(out, "({:?}f)", v as f32),
            (_, false) => write!(out, "{v:?}"),
            (_, true) => write!(out, "({v:?})"),
        };
    }

    fn binary(&mut self, out: &mut String, op: BinOp, lhs: &Expr, rhs: &Expr, nowrap: bool) {
        if let (ExprKind::Lit(a), ExprKind::Lit(b)) = (&lhs.kind, &rhs.kind)
            && let Some(folded) = non_finite_constant(op, *a, *b)
        {
            // A constant float operation without a finite result (`0.0f / 0.0f`) is
            // undefined in a C constant expression: NVRTC and NVIDIA's OpenCL compiler fold
            // `(0.0f / 0.0f) == (0.0f / 0.0f)` to true. Its IEEE value is written instead.
            self.literal(out, folded);
            return;
        }
        let operand = lhs.ty.scalar().unwrap_or(Scalar::I32);
        // Signed overflow is undefined in C; the language wraps, so go through unsigned,
        // unless the operation is proven not to overflow (`passes::loop_step`): then plain
        // signed arithmetic, which lets the C compiler count a loop's trips and unroll it.
        if operand.is_int()
            && !nowrap
            && matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Shl)
        {
            let t = self.scalar(operand);
            let _ = write!(out, "(({t})");
            self.wrapping(out, op, lhs, rhs, operand);
            out.push(')');
            return;
        }
        if op == BinOp::AShr
            && self.d.negation_under_asr_miscompiles()
            && let ExprKind::Unary {
                op: UnOp::Neg,
                operand: x,
            } = &lhs.kind
        {
            // `(-x) asr n` as `~((x - 1) asr n)`: equal for every x (-x = ~(x - 1) in two's
            // complement, and `asr` commutes with `~`), with no negation left to fold.
            let t = self.scalar(operand);
            let u = self.d.unsigned(operand);
            let one = if operand == Scalar::I64 {
                self.d.u64_suffix()
            } else {
                "u"
            };
            let _ = write!(out, "(~((({t})(({u})");
            self.put(out, x);
            let _ = write!(out, " - 1{one})) >> ");
            self.shift_count(out, rhs, operand);
            out.push_str("))");
            return;
        }
        match op {
            BinOp::LShr => {
                let u = self.d.unsigned(operand);
                let t = self.scalar(operand);
                let _ = write!(out, "(({t})(({u})");
                self.put(out, lhs);
                out.push_str(" >> ");
                self.shift_count(out, rhs, operand);
                out.push_str("))");
            }
            BinOp::AShr => {
                out.push('(');
                self.put(out, lhs);
                out.push_str(" >> ");
                self.shift_count(out, rhs, operand);
                out.push(')');
            }
            BinOp::Rem if operand.is_float() => {
                out.push_str(self.d.fmod(operand));
                self.put_operands(out, lhs, rhs);
            }
            BinOp::Div | BinOp::Rem if operand.is_int() && !safe_divisor(rhs) => {
                text::name_before(
                    self,
                    out,
                    |w, out| w.put_operands(out, lhs, rhs),
                    |w| w.int_division(op == BinOp::Div, operand),
                );
            }
            _ => {
                out.push('(');
                self.put(out, lhs);
                out.push(' ');
                out.push_str(op.c_symbol());
                out.push(' ');
                self.put(out, rhs);
                out.push(')');
            }
        }
    }

    /// `(a, b)`, both bare: the arguments of a two-operand call.
    fn put_operands(&mut self, out: &mut String, a: &Expr, b: &Expr) {
        out.push('(');
        self.put_bare(out, a);
        out.push_str(", ");
        self.put_bare(out, b);
        out.push(')');
    }

    /// A shift count masked to the operand width, as the interpreter and OpenCL C define it
    /// (C leaves counts >= the width undefined; CUDA and Metal give 0 or garbage).
    fn shift_count(&mut self, out: &mut String, count: &Expr, operand: Scalar) {
        out.push('(');
        self.put(out, count);
        out.push_str(if operand == Scalar::I64 {
            " & 63)"
        } else {
            " & 31)"
        });
    }

    /// Signed `/` or `mod` as a helper with the language's meaning where C has undefined
    /// behaviour (which lets compilers delete the surrounding code): `min_int / -1` wraps to
    /// `min_int` and `min_int mod -1` is 0, as in OCaml and the interpreter. A zero divisor,
    /// a located fault on the interpreter and in checked mode, has the one result every
    /// generator gives it (docs/language-notes.md): `x / 0 = 0` and `x mod 0 = x`.
    fn int_division(&mut self, div: bool, s: Scalar) -> String {
        let t = self.scalar(s);
        let u = self.d.unsigned(s);
        let q = self.d.helper_qualifier();
        let (key, base) = if div {
            (format!("div:{t}"), format!("sarek_div_{}", s.name()))
        } else {
            (format!("rem:{t}"), format!("sarek_rem_{}", s.name()))
        };
        self.helper(&key, &base, |name| {
            let body = if div {
                format!("d == 0 ? 0 : d == -1 ? ({t})(({u})0 - ({u})n) : n / d")
            } else {
                "d == 0 ? n : d == -1 ? 0 : n % d".to_string()
            };
            format!("{q}{t} {name}({t} n, {t} d) {{\n{INDENT}return {body};\n}}\n\n")
        })
    }

    /// Float to int conversion as the interpreter defines it (Rust's `as`): truncation toward
    /// zero, saturation at the bounds, NaN -> 0. The bounds are powers of two, exact in
    /// every float type, so the comparisons decide without rounding.
    fn float_to_int(&mut self, from: Scalar, to: Scalar) -> String {
        let f = self.scalar(from);
        let t = self.scalar(to);
        let q = self.d.helper_qualifier();
        let (hi, max, min) = if to == Scalar::I64 {
            let sfx = self.d.i64_suffix();
            (
                "9223372036854775808.0",
                format!("9223372036854775807{sfx}"),
                format!("(-9223372036854775807{sfx} - 1)"),
            )
        } else {
            (
                "2147483648.0",
                "2147483647".to_string(),
                "(-2147483647 - 1)".to_string(),
            )
        };
        let sfx = if from == Scalar::F32 { "f" } else { "" };
        let key = format!("f2i:{f}:{t}");
        let base = format!("sarek_{}_to_{}", from.name(), to.name());
        self.helper(&key, &base, |name| {
            format!(
                "{q}{t} {name}({f} x) {{\n{INDENT}if (isnan(x)) return 0;\n\
                 {INDENT}if (x >= {hi}{sfx}) return {max};\n\
                 {INDENT}if (x <= -{hi}{sfx}) return {min};\n\
                 {INDENT}return ({t})x;\n}}\n\n"
            )
        })
    }

    /// A wrapping integer operation computed in the unsigned type of the same width. Nested
    /// wrapping operations stay unsigned, so one cast back to signed suffices.
    fn wrapping(&mut self, out: &mut String, op: BinOp, lhs: &Expr, rhs: &Expr, s: Scalar) {
        let sym = match op {
            BinOp::Add => " + ",
            BinOp::Sub => " - ",
            BinOp::Mul => " * ",
            _ => " << ",
        };
        out.push('(');
        self.unsigned_operand(out, lhs, s);
        out.push_str(sym);
        // The shift count is not wrapped: it only needs to be an integer.
        if op == BinOp::Shl {
            self.shift_count(out, rhs, s);
        } else {
            self.unsigned_operand(out, rhs, s);
        }
        out.push(')');
    }

    fn unsigned_operand(&mut self, out: &mut String, e: &Expr, s: Scalar) {
        match &e.kind {
            ExprKind::Binary {
                op: op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Shl),
                lhs,
                rhs,
                ..
            } => self.wrapping(out, *op, lhs, rhs, s),
            ExprKind::Lit(Literal::I32(v)) if *v >= 0 => {
                let _ = write!(out, "{v}u");
            }
            ExprKind::Lit(Literal::I64(v)) if *v >= 0 => {
                let _ = write!(out, "{v}{}", self.d.u64_suffix());
            }
            _ => {
                let _ = write!(out, "({})", self.d.unsigned(s));
                self.put(out, e);
            }
        }
    }

    fn call(&mut self, out: &mut String, func: FuncId, args: &[Expr]) {
        let f = self.k.function(func);
        out.push_str(&self.func_names[func.0 as usize]);
        out.push('(');
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !std::mem::take(&mut first) {
                out.push_str(", ");
            }
        };
        if self.func_trap[func.0 as usize] {
            self.cur_trap = true;
            sep(out);
            out.push_str(self.trap.as_deref().unwrap_or_default());
        }
        if self.func_geom[func.0 as usize] {
            self.cur_geom = true;
            sep(out);
            out.push_str(self.geom.as_ref().map_or("", |g| g.var.as_str()));
        }
        for (a, &p) in args.iter().zip(&f.params) {
            sep(out);
            match (self.var_ty(p), &a.kind) {
                (Ty::Vector(_) | Ty::Array { .. }, ExprKind::Var(v)) => {
                    out.push_str(&self.var_names[v.0 as usize]);
                    out.push_str(", ");
                    out.push_str(self.lens.get(v).map_or("0", String::as_str));
                }
                _ => self.put_bare(out, a),
            }
        }
        out.push(')');
    }

    fn geometry(&mut self, g: Geometry) -> String {
        if g == Geometry::WarpSize {
            self.features.subgroups.get_or_insert(self.span);
        }
        let d = self.d;
        d.geometry(g, self)
    }

    fn intrinsic(&mut self, out: &mut String, op: Intrinsic, args: &[Expr], ty: &Ty) {
        let rs = ty.scalar().unwrap_or(Scalar::I32);
        let arg_scalar = args.first().and_then(|a| a.ty.scalar()).unwrap_or(rs);
        match op {
            Intrinsic::Geometry(g) => {
                let text = self.geometry(g);
                out.push_str(&text);
            }
            // Statements in the IR; tolerated here for kernels built by hand.
            Intrinsic::BlockBarrier => out.push_str(strip_semicolon(self.d.barrier())),
            Intrinsic::FenceBlock => out.push_str(strip_semicolon(self.d.fence(false))),
            Intrinsic::FenceDevice => out.push_str(strip_semicolon(self.d.fence(true))),
            Intrinsic::Warp(w) => {
                let text = self.warp(w, args, rs);
                out.push_str(&text);
            }
            Intrinsic::Atomic(a) => {
                let text = self.atomic(a, args, rs);
                out.push_str(&text);
            }
            Intrinsic::Math(f) => {
                let d = self.d;
                text::name_before(
                    self,
                    out,
                    |w, out| w.put_args(out, args),
                    |w| d.math(f, rs, w),
                );
            }
            Intrinsic::Abs => {
                let x = self.expr(&args[0]);
                self.scalar(rs);
                let d = self.d;
                out.push_str(&d.abs(rs, strip(&x), self));
            }
            Intrinsic::Min | Intrinsic::Max => {
                let max = op == Intrinsic::Max;
                out.push_str(if rs.is_float() {
                    self.d.fminmax(max, rs)
                } else if max {
                    "max"
                } else {
                    "min"
                });
                self.put_operands(out, &args[0], &args[1]);
            }
            Intrinsic::Clz | Intrinsic::Popcount => {
                let x = self.expr(&args[0]);
                let t = self.scalar(rs);
                let wide = arg_scalar == Scalar::I64;
                let call = if op == Intrinsic::Clz {
                    self.d.clz(&x, wide)
                } else {
                    self.d.popcount(&x, wide)
                };
                let _ = write!(out, "(({t}){call})");
            }
            Intrinsic::Convert => {
                if arg_scalar == rs {
                    return self.put(out, &args[0]);
                }
                // A C cast of a NaN or out-of-range float is undefined (NVRTC and Metal fold
                // it to anything); the interpreter truncates and saturates, NaN -> 0.
                if arg_scalar.is_float() && rs.is_int() {
                    text::name_before(
                        self,
                        out,
                        |w, out| w.put_args(out, &args[..1]),
                        |w| w.float_to_int(arg_scalar, rs),
                    );
                } else {
                    let t = self.scalar(rs);
                    let _ = write!(out, "(({t})");
                    self.put(out, &args[0]);
                    out.push(')');
                }
            }
            Intrinsic::Length => out.push_str(match &args[0].kind {
                ExprKind::Var(v) => self.lens.get(v).map_or("0", String::as_str),
                _ => "0",
            }),
        }
    }

    /// Name of a generated helper, emitting its definition on first use.
    fn helper(&mut self, key: &str, base: &str, def: impl FnOnce(&str) -> String) -> String {
        if let Some(h) = self.helpers.iter().find(|h| h.0 == key) {
            return h.1.clone();
        }
        let name = self.fresh(base);
        let text = def(&name);
        self.helpers.push((key.to_string(), name.clone(), text));
        name
    }

    fn warp(&mut self, w: WarpOp, args: &[Expr], rs: Scalar) -> String {
        let xs: Vec<String> = args
            .iter()
            .map(|a| strip(&self.expr(a)).to_string())
            .collect();
        let x_ty = args.first().and_then(|a| a.ty.scalar()).unwrap_or(rs);
        // Shuffling a bool goes through int (none of the dialects shuffles bool everywhere).
        let (x, unbool) = if x_ty == Scalar::Bool
            && !matches!(w, WarpOp::VoteAll | WarpOp::VoteAny | WarpOp::Ballot)
        {
            (format!("(int)({})", xs[0]), true)
        } else {
            (xs[0].clone(), false)
        };
        self.features.subgroups.get_or_insert(self.span);
        let lane = xs.get(1).map_or("", String::as_str);
        let call = self.d.warp(w, &x, lane);
        if unbool {
            format!("({call} != 0)")
        } else {
            call
        }
    }

    fn atomic(&mut self, op: AtomicOp, args: &[Expr], rs: Scalar) -> String {
        let target = self.d.display_name();
        let ExprKind::Var(base) = &args[0].kind else {
            self.error(
                format!("{target}: an atomic needs a vector or array variable"),
                "not a variable",
                "the first argument of an atomic names the vector or shared array",
            );
            return "0".into();
        };
        let (elem, space) = match self.var_ty(*base) {
            Ty::Vector(e) => ((**e).clone(), MemSpace::Global),
            Ty::Array { elem, space, .. } => ((**elem).clone(), *space),
            _ => (Ty::Unit, MemSpace::Global),
        };
        let s = elem.scalar().unwrap_or(rs);
        if space == MemSpace::Local {
            self.error(
                format!("atomics on per-thread arrays are not supported by {target}"),
                "atomic on a per-thread array",
                "atomics apply to vectors and shared arrays",
            );
            return "0".into();
        }
        if !(s.is_int() || (s == Scalar::F32 && op == AtomicOp::Add)) {
            self.error(
                format!(
                    "atomic_{} on {s} is not supported by {target}",
                    format!("{op:?}").to_lowercase()
                ),
                "unsupported atomic",
                "atomics take int32 and int64 elements; atomic_add also takes float32",
            );
            return "0".into();
        }
        if s == Scalar::I64 {
            let slot = match op {
                AtomicOp::Min | AtomicOp::Max | AtomicOp::And | AtomicOp::Or | AtomicOp::Xor => {
                    &mut self.features.int64_atomics_extended
                }
                _ => &mut self.features.int64_atomics_base,
            };
            slot.get_or_insert(self.span);
        }
        let idx = self.expr(&args[1]);
        let vals: Vec<String> = args[2..]
            .iter()
            .map(|a| strip(&self.expr(a)).to_string())
            .collect();
        let ptr = format!("&{}[{}]", self.var(*base), strip(&idx));
        self.scalar(s);
        let call = AtomicCall {
            op,
            scalar: s,
            space,
            ptr: &ptr,
            operands: &vals,
        };
        let d = self.d;
        d.atomic(&call, self)
    }
}

impl Emit for Writer<'_> {
    fn helper(&mut self, key: &str, base: &str, define: &dyn Fn(&str) -> String) -> String {
        Writer::helper(self, key, base, define)
    }

    fn geometry_struct(&mut self) -> String {
        self.cur_geom = true;
        self.geom
            .as_ref()
            .map(|g| g.var.clone())
            .unwrap_or_default()
    }
}

/// Layout of a by-value kernel argument (scalars too, so the runtime packs everything alike).
fn value_layout(k: &Kernel, ty: &Ty) -> ElemLayout {
    abi::elem_layout(k, ty, LAYOUT)
}

/// Reading a bool from storage (int 0/1): compare, so the C expression has bool meaning.
fn bool_read(ty: &Ty, text: String) -> String {
    if *ty == Ty::BOOL {
        format!("({text} != 0)")
    } else {
        text
    }
}

fn lvalue_ty(k: &Kernel, p: &LValue) -> Ty {
    match p {
        LValue::Var(v) => k.var(*v).ty.clone(),
        LValue::Index { base, .. } => k.var(*base).ty.elem().cloned().unwrap_or(Ty::Unit),
        LValue::Field { base, field } => match lvalue_ty(k, base) {
            Ty::Record(id) => k.record(id).fields[*field as usize].ty.clone(),
            _ => Ty::Unit,
        },
    }
}

fn collect_shared(block: &Block, out: &mut Vec<(VarId, Span)>) {
    crate::ir::visit::for_each_stmt(block, &mut |s| {
        if let StmtKind::Array { var } = s.kind {
            out.push((var, s.span));
        }
    });
}

/// A literal divisor other than 0 and -1: C's `/` and `%` are defined for every dividend.
fn safe_divisor(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Lit(Literal::I32(d)) if d != 0 && d != -1
    ) || matches!(e.kind, ExprKind::Lit(Literal::I64(d)) if d != 0 && d != -1)
}

/// Remove one pair of parentheses enclosing the whole text.
pub(super) fn strip(s: &str) -> &str {
    let b = s.as_bytes();
    if b.first() != Some(&b'(') || b.last() != Some(&b')') {
        return s;
    }
    let mut depth = 0i32;
    for (i, c) in b.iter().enumerate() {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 && i + 1 != b.len() {
                    return s;
                }
            }
            _ => {}
        }
    }
    &s[1..s.len() - 1]
}

/// [`strip`] of the text written into `out` from `start` on, in place.
fn strip_from(out: &mut String, start: usize) {
    if strip(&out[start..]).len() + 2 == out.len() - start {
        out.pop();
        out.remove(start);
    }
}

fn strip_semicolon(s: &str) -> &str {
    s.trim_end_matches(';')
}

/// `a op b` for float literals whose IEEE result is NaN or infinite, computed in the
/// literals' own precision; `None` for every other operation.
fn non_finite_constant(op: BinOp, a: Literal, b: Literal) -> Option<Literal> {
    fn apply<
        T: std::ops::Add<Output = T>
            + std::ops::Sub<Output = T>
            + std::ops::Mul<Output = T>
            + std::ops::Div<Output = T>,
    >(
        op: BinOp,
        a: T,
        b: T,
    ) -> Option<T> {
        Some(match op {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a * b,
            BinOp::Div => a / b,
            _ => return None,
        })
    }
    let folded = match (a, b) {
        (Literal::F32(a), Literal::F32(b)) => Literal::F32(apply(op, a, b)?),
        (Literal::F64(a), Literal::F64(b)) => Literal::F64(apply(op, a, b)?),
        _ => return None,
    };
    let finite = match folded {
        Literal::F32(v) => v.is_finite(),
        Literal::F64(v) => v.is_finite(),
        _ => true,
    };
    (!finite).then_some(folded)
}
