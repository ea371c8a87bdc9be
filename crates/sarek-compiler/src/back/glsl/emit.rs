//! The GLSL writer: one value per generation, holding everything the emission needs (no
//! module state). Module layout and naming are described in the parent module.

use super::{Bindings, Warps};
use crate::back::names::Namer;
use crate::back::text;
use crate::diag::{Diagnostic, Span};
use crate::hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use crate::intrinsics::{AtomicOp, Geometry, Intrinsic, MathFn, WarpOp};
use crate::ir::{Block, Expr, ExprKind, FuncId, Kernel, LValue, StmtKind, Ty, VarId};
use crate::target::Generated;
use crate::types::{BinOp, Literal, MemSpace, Scalar, UnOp};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// What a helper's array-like parameter is bound to in one specialisation.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum ArrArg {
    /// A module-scope array: a kernel vector (buffer) or a shared array.
    Global(VarId),
    /// A per-thread local array of this size, passed `inout`.
    Local(u32),
}

pub(super) struct Writer<'k> {
    pub(super) k: &'k Kernel,
    /// GLSL spelling of every variable, helper, record, field, variant and constructor,
    /// decided once by the namer ([`Namer::segment`]: escaped, and short enough that the
    /// names minted from them stay within glslang's identifier length).
    pub(super) names: Vec<String>,
    fn_names: Vec<String>,
    record_names: Vec<String>,
    field_names: Vec<Vec<String>>,
    variant_names: Vec<String>,
    ctor_names: Vec<Vec<String>>,
    /// Shared arrays (module scope), in declaration order.
    shared: Vec<VarId>,
    /// Shared float arrays stored as `uint` because a float atomic uses them.
    shared_as_uint: BTreeSet<VarId>,
    /// Arrays (buffers or shared) a float32 atomic add uses: they get a CAS helper.
    float_atomics: BTreeSet<VarId>,
    /// Built-in helper functions needed, by key.
    helpers: BTreeSet<String>,
    /// The float64 routines used (exp, log, sin, ...), written once each.
    soft_math: super::f64math::Library,
    zero_divisors: crate::back::ZeroDivisors,
    /// Per helper of the specialised kernel: whether it copies one with array parameters.
    has_arrays: &'k [bool],
    /// Helpers written so far: GLSL name; texts in emission order (callees first).
    instances: HashMap<FuncId, String>,
    instance_text: Vec<String>,
    counter: u32,
    /// Emitting a constant expression glslang would fold: float32 literals are spelled as bit
    /// patterns, which it does not fold through (see [`glslang_folds`]).
    opaque_f32: bool,
    span: Span,
    uses_i64: bool,
    uses_f64: bool,
    uses_i64_atomics: bool,
    uses_subgroups: bool,
    /// A native subgroup shuffle of an int64 (needs GL_EXT_shader_subgroup_extended_types_int64).
    uses_subgroup_i64: bool,
    /// A loop carries a `GL_EXT_control_flow_attributes` unroll attribute.
    uses_loop_attributes: bool,
    warps: Warps,
    /// Emulated warps: the shared scratch, and its high words for 64-bit values.
    uses_warp_scratch: bool,
    uses_warp_scratch_hi: bool,
    errors: Vec<Diagnostic>,
    refused: HashSet<String>,
}

impl<'k> Writer<'k> {
    /// A writer for a kernel whose helpers are specialised per array argument
    /// ([`crate::passes::specialize_helpers`]): helpers name buffers and shared arrays
    /// directly, and take per-thread arrays as sized `inout` parameters.
    pub(super) fn new(
        spec: &'k crate::passes::specialize_helpers::Specialized<'_>,
        warps: Warps,
    ) -> Writer<'k> {
        let k: &'k Kernel = &spec.kernel;
        let mut namer = Namer::new(&super::keywords::KEYWORDS);
        let mut shared = Vec::new();
        collect_shared(&k.body, &mut shared);
        for f in &k.functions {
            collect_shared(&f.body, &mut shared);
        }
        // Only shared arrays are module-scope; local arrays are declared in place.
        shared.retain(|v| {
            matches!(
                k.var(*v).ty,
                Ty::Array {
                    space: MemSpace::Shared,
                    ..
                }
            )
        });
        let names = (0..k.vars.len())
            .map(|i| {
                let name = spec.var_name(VarId(i as u32));
                if shared.contains(&VarId(i as u32)) {
                    // Module scope: sibling blocks may reuse a name, so the id makes it unique.
                    format!("sarek_sh{i}_{}", namer.segment(name))
                } else {
                    namer.segment(name)
                }
            })
            .collect();
        let fn_names = (0..k.functions.len())
            .map(|f| namer.segment(spec.function_name(FuncId(f as u32))))
            .collect();
        let record_names = k.records.iter().map(|r| namer.segment(&r.name)).collect();
        let field_names = k
            .records
            .iter()
            .map(|r| r.fields.iter().map(|f| namer.segment(&f.name)).collect())
            .collect();
        let variant_names = k.variants.iter().map(|v| namer.segment(&v.name)).collect();
        let ctor_names = k
            .variants
            .iter()
            .map(|v| v.ctors.iter().map(|c| namer.segment(&c.name)).collect())
            .collect();
        Writer {
            k,
            names,
            fn_names,
            record_names,
            field_names,
            variant_names,
            ctor_names,
            shared,
            shared_as_uint: BTreeSet::new(),
            float_atomics: BTreeSet::new(),
            helpers: BTreeSet::new(),
            soft_math: Default::default(),
            zero_divisors: Default::default(),
            has_arrays: &spec.has_arrays,
            instances: HashMap::default(),
            instance_text: Vec::new(),
            counter: 0,
            opaque_f32: false,
            span: k.span,
            uses_i64: false,
            uses_f64: false,
            uses_i64_atomics: false,
            uses_subgroups: false,
            uses_subgroup_i64: false,
            uses_loop_attributes: false,
            warps,
            uses_warp_scratch: false,
            uses_warp_scratch_hi: false,
            errors: Vec::new(),
            refused: HashSet::default(),
        }
    }

    /// IR this writer cannot express although the analysis let it through: a Sarek bug.
    fn internal(&mut self, what: String) {
        if self.refused.insert(what.clone()) {
            let d = crate::ir::analysis::internal(self.span, crate::target::Target::Glsl, what);
            self.errors.push(d);
        }
    }

    pub(super) fn generate(mut self) -> Result<Generated, Vec<Diagnostic>> {
        // Emission discovers which shared arrays a float atomic uses; those are stored as
        // `uint`, which changes how every access is spelled, so emit again once it is known.
        let mut main;
        loop {
            let before = self.shared_as_uint.clone();
            self.reset();
            main = String::new();
            let k = self.k;
            self.block(&k.body, 1, &mut main);
            if self.shared_as_uint == before {
                break;
            }
        }
        for p in &self.k.params {
            let ty = self.k.var(*p).ty.clone();
            self.note_type(&ty);
        }
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        let bindings = self.bindings();
        let source = self.assemble(&bindings, &main);
        Ok(Generated {
            source,
            abi: bindings.abi,
        })
    }

    fn reset(&mut self) {
        self.helpers.clear();
        self.soft_math = Default::default();
        self.instances.clear();
        self.instance_text.clear();
        self.float_atomics.clear();
        self.counter = 0;
        self.errors.clear();
        self.refused.clear();
    }

    // ----- types -----

    fn note_type(&mut self, ty: &Ty) {
        match ty {
            Ty::Scalar(Scalar::I64) => self.uses_i64 = true,
            Ty::Scalar(Scalar::F64) => self.uses_f64 = true,
            Ty::Record(id) => {
                let k = self.k;
                for f in &k.record(*id).fields {
                    self.note_type(&f.ty);
                }
            }
            Ty::Variant(id) => {
                let k = self.k;
                for c in &k.variant(*id).ctors {
                    for f in &c.fields {
                        self.note_type(f);
                    }
                }
            }
            Ty::Vector(e) | Ty::Array { elem: e, .. } => self.note_type(e),
            _ => {}
        }
    }

    pub(super) fn ty(&self, ty: &Ty) -> String {
        match ty {
            Ty::Unit => "void".into(),
            Ty::Scalar(s) => scalar_ty(*s).into(),
            Ty::Record(id) => format!("sarek_t_{}", self.record_names[id.0 as usize]),
            Ty::Variant(id) => format!("sarek_t_{}", self.variant_names[id.0 as usize]),
            Ty::Vector(e) | Ty::Array { elem: e, .. } => self.ty(e),
        }
    }

    fn field_name(&self, record: crate::ir::RecordId, field: usize) -> String {
        self.field_names[record.0 as usize][field].clone()
    }

    fn payload_name(&self, variant: crate::ir::VariantId, ctor: u32, field: u32) -> String {
        let c = &self.ctor_names[variant.0 as usize][ctor as usize];
        format!("{c}_{field}")
    }

    fn ctor_fn(&self, variant: crate::ir::VariantId, ctor: u32) -> String {
        let (v, c) = (variant.0 as usize, ctor as usize);
        format!(
            "sarek_mk_{}_{}",
            self.variant_names[v], self.ctor_names[v][c]
        )
    }

    /// A zero value of `ty` (payload fields of other constructors).
    fn zero(&self, ty: &Ty) -> String {
        match ty {
            Ty::Scalar(s) => zero_scalar(*s).into(),
            Ty::Record(id) => {
                let fields: Vec<String> = self
                    .k
                    .record(*id)
                    .fields
                    .iter()
                    .map(|f| self.zero(&f.ty))
                    .collect();
                format!("{}({})", self.ty(ty), fields.join(", "))
            }
            Ty::Variant(id) => {
                let v = self.k.variant(*id);
                let mut parts = vec!["0".to_string()];
                for c in &v.ctors {
                    parts.extend(c.fields.iter().map(|f| self.zero(f)));
                }
                format!("{}({})", self.ty(ty), parts.join(", "))
            }
            _ => "0".into(),
        }
    }

    // ----- module assembly -----

    fn assemble(&mut self, b: &Bindings, main: &str) -> String {
        let k = self.k;
        let mut out = String::new();
        out.push_str("#version 450\n");
        // The float64 routines compute on bit patterns in 64-bit integers.
        if self.uses_i64 || self.uses_i64_atomics || !self.soft_math.is_empty() {
            out.push_str("#extension GL_ARB_gpu_shader_int64 : require\n");
        }
        if self.uses_i64_atomics {
            out.push_str("#extension GL_EXT_shader_atomic_int64 : require\n");
        }
        if self.uses_loop_attributes {
            out.push_str("#extension GL_EXT_control_flow_attributes : enable\n");
        }
        if self.uses_subgroups {
            for ext in ["basic", "vote", "ballot", "shuffle"] {
                let _ = writeln!(out, "#extension GL_KHR_shader_subgroup_{ext} : require");
            }
        }
        if self.uses_subgroup_i64 {
            out.push_str("#extension GL_EXT_shader_subgroup_extended_types_int64 : require\n");
        }
        let _ = writeln!(out, "// Kernel `{}`: generated by sarek.", k.name);
        out.push_str(
            "layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;\n\n",
        );
        // Structs, dependencies first.
        let mut done = BTreeSet::new();
        for i in 0..k.records.len() {
            self.emit_struct(
                &Ty::Record(crate::ir::RecordId(i as u32)),
                &mut done,
                &mut out,
            );
        }
        for i in 0..k.variants.len() {
            self.emit_struct(
                &Ty::Variant(crate::ir::VariantId(i as u32)),
                &mut done,
                &mut out,
            );
        }
        for (i, v) in k.variants.iter().enumerate() {
            let id = crate::ir::VariantId(i as u32);
            for (c, ctor) in v.ctors.iter().enumerate() {
                let params: Vec<String> = ctor
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(j, t)| format!("{} p{j}", self.ty(t)))
                    .collect();
                let _ = writeln!(
                    out,
                    "{} {}({}) {{",
                    self.ty(&Ty::Variant(id)),
                    self.ctor_fn(id, c as u32),
                    params.join(", ")
                );
                let _ = writeln!(out, "    {} v;", self.ty(&Ty::Variant(id)));
                let _ = writeln!(out, "    v.tag = {c};");
                for (c2, ctor2) in v.ctors.iter().enumerate() {
                    for (j, t) in ctor2.fields.iter().enumerate() {
                        let value = if c2 == c {
                            format!("p{j}")
                        } else {
                            self.zero(t)
                        };
                        let _ = writeln!(
                            out,
                            "    v.{} = {value};",
                            self.payload_name(id, c2 as u32, j as u32)
                        );
                    }
                }
                out.push_str("    return v;\n}\n");
            }
        }
        for (binding, elem, name, p) in &b.buffers {
            let _ = writeln!(
                out,
                "layout(std430, set = 0, binding = {binding}) buffer sarek_buf{binding} {{ {elem} {name}[]; }};"
            );
            if self.float_atomics.contains(p) {
                // A uint view of the same binding, for the float32 compare-exchange loop.
                let _ = writeln!(
                    out,
                    "layout(std430, set = 0, binding = {binding}) buffer sarek_bufu{binding} {{ uint sarek_u{binding}[]; }};"
                );
            }
        }
        if let Some(crate::abi::ArgSlot::Binding { group, binding }) = b.abi.trap_status {
            let _ = writeln!(
                out,
                "layout(std430, set = {group}, binding = {binding}) buffer sarek_trap_buf {{ int sarek_trap; }};"
            );
        }
        if !b.push.is_empty() {
            match b.abi.uniform_binding {
                None => out.push_str("layout(push_constant, std430) uniform sarek_params {\n"),
                Some((set, binding)) => {
                    let _ = writeln!(
                        out,
                        "layout(std430, set = {set}, binding = {binding}) readonly buffer sarek_params {{"
                    );
                }
            }
            for m in &b.push {
                let _ = writeln!(
                    out,
                    "    layout(offset = {}) {} {};",
                    m.offset, m.ty, m.name
                );
            }
            out.push_str("} sarek_pc;\n");
        }
        if self.uses_warp_scratch {
            // One word per thread of a block of up to 1024 threads (every Vulkan device's
            // maxComputeWorkGroupInvocations that we know of; larger blocks are refused).
            out.push_str("shared uint sarek_ws[1024];\n");
            if self.uses_warp_scratch_hi {
                out.push_str("shared uint sarek_ws_hi[1024];\n");
            }
        }
        for v in self.shared.clone() {
            let Ty::Array {
                elem,
                size: Some(n),
                ..
            } = &k.var(v).ty
            else {
                continue;
            };
            let ty = if self.shared_as_uint.contains(&v) {
                "uint".to_string()
            } else {
                self.ty(elem)
            };
            let _ = writeln!(out, "shared {ty} {}[{n}];", self.names[v.0 as usize]);
        }
        out.push('\n');
        // Helpers other helpers call (pow -> fmod, acos -> asin, tanh -> expm1) come first.
        let mut helpers: Vec<String> = self.helpers.iter().cloned().collect();
        helpers.sort_by_key(|h| {
            let rank = u8::from(
                !(h.starts_with("fmod_") || h.starts_with("asin_") || h.starts_with("expm1_")),
            );
            (rank, h.clone())
        });
        for h in helpers {
            out.push_str(&builtin_helper(&h));
        }
        out.push_str(self.soft_math.text());
        for v in self.float_atomics.clone() {
            let view = self.uint_view(v);
            let _ = write!(
                out,
                "float sarek_h_fadd{id}(int i, float v) {{\n    uint cur = {view}[i];\n    while (true) {{\n        uint prev = atomicCompSwap({view}[i], cur, floatBitsToUint(uintBitsToFloat(cur) + v));\n        if (prev == cur) return uintBitsToFloat(cur);\n        cur = prev;\n    }}\n    return 0.0;\n}}\n",
                id = v.0
            );
        }
        for t in &self.instance_text {
            out.push_str(t);
        }
        out.push_str("void main() {\n");
        out.push_str(main);
        out.push_str("}\n");
        out
    }

    fn emit_struct(&self, ty: &Ty, done: &mut BTreeSet<String>, out: &mut String) {
        let name = self.ty(ty);
        if !done.insert(name.clone()) {
            return;
        }
        let members: Vec<(Ty, String)> = match ty {
            Ty::Record(id) => self
                .k
                .record(*id)
                .fields
                .iter()
                .enumerate()
                .map(|(j, f)| (f.ty.clone(), self.field_name(*id, j)))
                .collect(),
            Ty::Variant(id) => {
                let mut m = vec![(Ty::I32, "tag".to_string())];
                for (c, ctor) in self.k.variant(*id).ctors.iter().enumerate() {
                    for (j, t) in ctor.fields.iter().enumerate() {
                        m.push((t.clone(), self.payload_name(*id, c as u32, j as u32)));
                    }
                }
                m
            }
            _ => return,
        };
        for (t, _) in &members {
            self.emit_struct(t, done, out);
        }
        let _ = writeln!(out, "struct {name} {{");
        for (t, n) in &members {
            let _ = writeln!(out, "    {} {n};", self.ty(t));
        }
        out.push_str("};\n");
    }

    // ----- arrays -----

    /// What an array-typed variable is: after specialisation, a helper's array parameter is a
    /// sized per-thread array and every other array name is module-scope.
    fn resolve_array(&self, v: VarId) -> ArrArg {
        match &self.k.var(v).ty {
            Ty::Array {
                space: MemSpace::Local,
                size: Some(n),
                ..
            } => ArrArg::Local(*n),
            _ => ArrArg::Global(v),
        }
    }

    /// GLSL spelling of an array variable.
    fn array_name(&self, v: VarId) -> String {
        match self.resolve_array(v) {
            ArrArg::Global(g) => self.names[g.0 as usize].clone(),
            ArrArg::Local(_) => self.names[v.0 as usize].clone(),
        }
    }

    fn is_uint_shared(&self, v: VarId) -> bool {
        matches!(self.resolve_array(v), ArrArg::Global(g) if self.shared_as_uint.contains(&g))
    }

    fn uint_view(&self, g: VarId) -> String {
        if self.shared.contains(&g) {
            self.names[g.0 as usize].clone()
        } else {
            let binding = self
                .k
                .params
                .iter()
                .filter(|p| matches!(self.k.var(**p).ty, Ty::Vector(_)))
                .position(|p| *p == g);
            format!("sarek_u{}", binding.unwrap_or(0))
        }
    }

    fn length(&self, v: VarId) -> String {
        match self.resolve_array(v) {
            ArrArg::Global(g) => match &self.k.var(g).ty {
                Ty::Array { size: Some(n), .. } => n.to_string(),
                _ => format!("sarek_pc.{}", self.length_name(g)),
            },
            ArrArg::Local(n) => n.to_string(),
        }
    }

    // ----- statements -----

    fn line(out: &mut String, indent: usize, line: &str) {
        text::line(out, indent, line);
    }

    /// [`Self::line`] of formatted text, written straight into `out`.
    fn line_fmt(out: &mut String, indent: usize, line: std::fmt::Arguments<'_>) {
        text::line_fmt(out, indent, line);
    }

    fn indent(out: &mut String, indent: usize) {
        text::indent(out, indent);
    }

    /// The line `{before}{e}{after}`, `e` written straight into `out`.
    fn expr_line(
        &mut self,
        out: &mut String,
        indent: usize,
        before: std::fmt::Arguments<'_>,
        e: &Expr,
        after: &str,
    ) {
        Self::indent(out, indent);
        let _ = out.write_fmt(before);
        self.put(out, e);
        out.push_str(after);
        out.push('\n');
    }

    fn block(&mut self, b: &Block, indent: usize, out: &mut String) {
        for s in b {
            self.span = s.span;
            self.stmt(&s.kind, indent, out);
        }
    }

    fn var_decl(&mut self, v: VarId) -> String {
        let ty = self.k.var(v).ty.clone();
        self.note_type(&ty);
        format!("{} {}", self.ty(&ty), self.names[v.0 as usize])
    }

    fn stmt(&mut self, s: &StmtKind, ind: usize, out: &mut String) {
        match s {
            StmtKind::Let { var, init } => {
                let mutable = self.k.var(*var).mutable;
                self.zero_divisors.note_let(*var, mutable, init.as_ref());
                let decl = self.var_decl(*var);
                match init {
                    Some(e) => self.expr_line(out, ind, format_args!("{decl} = "), e, ";"),
                    None => Self::line_fmt(out, ind, format_args!("{decl};")),
                }
            }
            StmtKind::Array { var } => {
                let info = self.k.var(*var);
                if let Ty::Array {
                    elem,
                    space: MemSpace::Local,
                    size: Some(n),
                } = &info.ty
                {
                    let elem = (**elem).clone();
                    self.note_type(&elem);
                    let line = format!("{} {}[{n}];", self.ty(&elem), self.names[var.0 as usize]);
                    Self::line(out, ind, &line);
                } else {
                    let ty = info.ty.clone();
                    self.note_type(&ty);
                }
            }
            StmtKind::Assign { place, value } => {
                // The value first: helper instances are numbered in the order of their calls.
                let v = self.expr(value);
                Self::indent(out, ind);
                match place {
                    LValue::Index { base, index } if self.is_uint_shared(*base) => {
                        self.put_array_name(out, *base);
                        out.push('[');
                        self.index(out, *base, index);
                        let _ = writeln!(out, "] = floatBitsToUint({v});");
                    }
                    _ => {
                        self.put_place(out, place);
                        let _ = writeln!(out, " = {v};");
                    }
                }
            }
            StmtKind::Expr(e) => self.expr_line(out, ind, format_args!(""), e, ";"),
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                self.expr_line(out, ind, format_args!("if ("), cond, ") {");
                self.block(then_block, ind + 1, out);
                if else_block.is_empty() {
                    Self::line(out, ind, "}");
                } else {
                    Self::line(out, ind, "} else {");
                    self.block(else_block, ind + 1, out);
                    Self::line(out, ind, "}");
                }
            }
            StmtKind::For {
                var,
                start,
                end,
                downto,
                body,
                unroll,
            } => self.for_loop(*var, start, end, *downto, body, *unroll, ind, out),
            StmtKind::While { cond, body, unroll } => {
                let c = self.expr(cond);
                let attr = self.loop_attribute(*unroll, None);
                Self::line_fmt(out, ind, format_args!("{attr}while ({c}) {{"));
                self.block(body, ind + 1, out);
                Self::line(out, ind, "}");
            }
            StmtKind::Match {
                scrutinee,
                variant,
                arms,
            } => {
                // An if-chain on the tag rather than `switch`, so that `break`/`continue` in
                // an arm still reach the enclosing loop.
                let n = self.fresh();
                let e = self.expr(scrutinee);
                let t = self.ty(&Ty::Variant(*variant));
                Self::line(out, ind, "{");
                Self::line_fmt(out, ind + 1, format_args!("{t} sarek_m{n} = {e};"));
                let mut first = true;
                for arm in arms {
                    let head = match arm.ctor {
                        Some(c) if first => format!("if (sarek_m{n}.tag == {c}) {{"),
                        Some(c) => format!("}} else if (sarek_m{n}.tag == {c}) {{"),
                        None if first => "{".to_string(),
                        None => "} else {".to_string(),
                    };
                    let default = arm.ctor.is_none();
                    Self::line(out, ind + 1, &head);
                    if let Some(c) = arm.ctor {
                        for (j, b) in arm.bindings.iter().enumerate() {
                            if let Some(b) = b {
                                let decl = self.var_decl(*b);
                                let field = self.payload_name(*variant, c, j as u32);
                                Self::line_fmt(
                                    out,
                                    ind + 2,
                                    format_args!("{decl} = sarek_m{n}.{field};"),
                                );
                            }
                        }
                    }
                    self.block(&arm.body, ind + 2, out);
                    first = false;
                    if default {
                        break;
                    }
                }
                if !first {
                    Self::line(out, ind + 1, "}");
                }
                Self::line(out, ind, "}");
            }
            StmtKind::Block(b) => {
                Self::line(out, ind, "{");
                self.block(b, ind + 1, out);
                Self::line(out, ind, "}");
            }
            StmtKind::Barrier => {
                Self::line(out, ind, "memoryBarrierShared();");
                Self::line(out, ind, "groupMemoryBarrier();");
                Self::line(out, ind, "barrier();");
            }
            StmtKind::Fence { device: false } => {
                Self::line(out, ind, "memoryBarrierShared();");
                Self::line(out, ind, "groupMemoryBarrier();");
            }
            StmtKind::Fence { device: true } => Self::line(out, ind, "memoryBarrier();"),
            StmtKind::Return(None) => Self::line(out, ind, "return;"),
            StmtKind::Return(Some(e)) => self.expr_line(out, ind, format_args!("return "), e, ";"),
            StmtKind::Break => Self::line(out, ind, "break;"),
            StmtKind::Continue => Self::line(out, ind, "continue;"),
            StmtKind::Native(src) => Self::line(out, ind, src),
            StmtKind::Trap(t) => {
                Self::line_fmt(out, ind, format_args!("atomicMax(sarek_trap, {});", t.code))
            }
        }
    }

    /// `for var = start to|downto end` in the shape shared with the C family
    /// ([`crate::back::loops`]); GLSL integers wrap, so a plain `i <= end; i++` would never
    /// stop at `to max_int`.
    #[allow(clippy::too_many_arguments)]
    fn for_loop(
        &mut self,
        var: VarId,
        start: &Expr,
        end: &Expr,
        downto: bool,
        body: &Block,
        unroll: Option<u32>,
        ind: usize,
        out: &mut String,
    ) {
        use crate::back::loops;
        let n = self.fresh();
        let (a, b) = (self.expr(start), self.expr(end));
        let (it, last) = (format!("sarek_it{n}"), format!("sarek_end{n}"));
        let trip = loops::trip_count(start, end, downto);
        let hint = match self.loop_attribute(unroll, trip) {
            "" => loops::Hint::None,
            attr => loops::Hint::Prefix(attr),
        };
        let i = self.names[var.0 as usize].clone();
        let names = loops::Names {
            index: &i,
            counter: &it,
            last: &last,
        };
        let convert = |t: &str, e: &str| format!("{t}({e})");
        let spelling = loops::Spelling {
            unsigned: "uint",
            convert: &convert,
        };
        let shape = loops::rotated_for(&names, &a, &b, downto, hint, &spelling);
        for (depth, line) in &shape.head {
            Self::line(out, ind + depth, line);
        }
        self.block(body, ind + shape.body_depth, out);
        for (depth, line) in &shape.tail {
            Self::line(out, ind + depth, line);
        }
    }

    /// The `GL_EXT_control_flow_attributes` attribute (with its trailing space) that renders
    /// an `[@unroll N]` hint, or nothing. The extension has no unroll count (its count-taking
    /// attributes need SPIR-V 1.4, above the Vulkan 1.1 target), so: `N <= 1` is
    /// `[[dont_unroll]]`; a larger `N` is `[[unroll]]` (unroll completely) only where the loop
    /// has a constant trip count of at most `N`, so that full unrolling is what was asked;
    /// otherwise the hint is dropped rather than turned into an unbounded full unroll. A full
    /// unroll asked for (`pragma ["unroll"]`, [`crate::ir::UNROLL_FULL`]) is `[[unroll]]`.
    fn loop_attribute(&mut self, unroll: Option<u32>, trip: Option<i64>) -> &'static str {
        let attr = match (unroll, trip) {
            (Some(0 | 1), _) => "[[dont_unroll]] ",
            (Some(crate::ir::UNROLL_FULL), _) => "[[unroll]] ",
            (Some(n), Some(t)) if t <= i64::from(n) => "[[unroll]] ",
            _ => return "",
        };
        self.uses_loop_attributes = true;
        attr
    }

    fn fresh(&mut self) -> u32 {
        self.counter += 1;
        self.counter
    }

    fn put_place(&mut self, out: &mut String, p: &LValue) {
        match p {
            LValue::Var(v) => self.put_var(out, *v),
            LValue::Index { base, index } => {
                self.put_array_name(out, *base);
                out.push('[');
                self.index(out, *base, index);
                out.push(']');
            }
            LValue::Field { base, field } => {
                let ty = self.place_ty(base);
                self.put_place(out, base);
                out.push('.');
                self.put_member(out, &ty, *field);
            }
        }
    }

    fn place_ty(&self, p: &LValue) -> Ty {
        match p {
            LValue::Var(v) => self.k.var(*v).ty.clone(),
            LValue::Index { base, .. } => self.k.var(*base).ty.elem().cloned().unwrap_or(Ty::Unit),
            LValue::Field { base, field } => match self.place_ty(base) {
                Ty::Record(id) => self.k.record(id).fields[*field as usize].ty.clone(),
                _ => Ty::Unit,
            },
        }
    }

    // ----- expressions -----

    /// An expression as GLSL text, for the spellings composed from strings.
    fn expr(&mut self, e: &Expr) -> String {
        let mut out = String::new();
        self.put(&mut out, e);
        out
    }

    /// `e` written as GLSL text at the end of `out`; every expression of a line goes into
    /// the one buffer. Compound results are parenthesised, so any result is safe as an
    /// operand. A helper instance's name is inserted after its arguments are written, so
    /// instances keep the order of their first calls.
    fn put(&mut self, out: &mut String, e: &Expr) {
        let computes = matches!(
            e.kind,
            ExprKind::Binary { .. } | ExprKind::Unary { .. } | ExprKind::Intrinsic { .. }
        );
        if !self.opaque_f32 && computes && glslang_folds(e) {
            self.opaque_f32 = true;
            self.put(out, e);
            self.opaque_f32 = false;
            return;
        }
        self.note_type(&e.ty);
        match &e.kind {
            ExprKind::Lit(l) => self.literal(out, l),
            ExprKind::Var(v) => self.put_var(out, *v),
            ExprKind::Binary { op, lhs, rhs, .. } => self.binary(out, *op, lhs, rhs),
            ExprKind::Unary { op, operand } => {
                out.push_str(match op {
                    UnOp::Neg => "(-",
                    UnOp::Not => "(!",
                    UnOp::BitNot => "(~",
                });
                self.put(out, operand);
                out.push(')');
            }
            ExprKind::Index { base, index } => {
                let uint = self.is_uint_shared(*base);
                if uint {
                    out.push_str("uintBitsToFloat(");
                }
                self.put_array_name(out, *base);
                out.push('[');
                self.index(out, *base, index);
                out.push_str(if uint { "])" } else { "]" });
            }
            ExprKind::Field { base, field } => {
                self.put(out, base);
                out.push('.');
                self.put_member(out, &base.ty, *field);
            }
            ExprKind::Record { fields, .. } => {
                out.push_str(&self.ty(&e.ty));
                self.put_args(out, fields);
            }
            ExprKind::Ctor {
                variant,
                ctor,
                fields,
            } => {
                let (v, c) = (variant.0 as usize, *ctor as usize);
                let _ = write!(
                    out,
                    "sarek_mk_{}_{}",
                    self.variant_names[v], self.ctor_names[v][c]
                );
                self.put_args(out, fields);
            }
            ExprKind::Tag(v) => {
                self.put(out, v);
                out.push_str(".tag");
            }
            ExprKind::Payload { value, ctor, field } => {
                let Ty::Variant(id) = value.ty else {
                    out.push('0');
                    return;
                };
                self.put(out, value);
                let c = &self.ctor_names[id.0 as usize][*ctor as usize];
                let _ = write!(out, ".{c}_{field}");
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

    /// `(a, b, ...)`.
    fn put_args(&mut self, out: &mut String, args: &[Expr]) {
        text::put_list(self, out, args, Self::put);
    }

    /// `sarek_h_{h}(a, b, ...)`, the helper `h` recorded as needed.
    fn put_helper_call(&mut self, out: &mut String, h: &str, args: &[Expr]) {
        if !self.helpers.contains(h) {
            self.helpers.insert(h.to_string());
        }
        out.push_str("sarek_h_");
        out.push_str(h);
        self.put_args(out, args);
    }

    fn literal(&mut self, out: &mut String, l: &Literal) {
        let _ = match l {
            Literal::Bool(b) => write!(out, "{b}"),
            Literal::I32(v) if *v == i32::MIN => write!(out, "(-2147483647 - 1)"),
            Literal::I32(v) if *v < 0 => write!(out, "({v})"),
            Literal::I32(v) => write!(out, "{v}"),
            Literal::I64(v) => {
                self.uses_i64 = true;
                if *v == i64::MIN {
                    write!(out, "(-9223372036854775807l - 1l)")
                } else if *v < 0 {
                    write!(out, "({v}l)")
                } else {
                    write!(out, "{v}l")
                }
            }
            Literal::F32(v) if self.opaque_f32 && v.is_finite() => {
                write!(out, "uintBitsToFloat({:#010x}u)", v.to_bits())
            }
            Literal::F32(v) => {
                out.push_str(&float_lit(
                    *v as f64,
                    v.is_nan(),
                    v.is_infinite(),
                    f32_text(*v),
                    "",
                ));
                Ok(())
            }
            Literal::F64(v) => {
                self.uses_f64 = true;
                out.push_str(&float_lit(
                    *v,
                    v.is_nan(),
                    v.is_infinite(),
                    format!("{v:?}"),
                    "lf",
                ));
                Ok(())
            }
        };
    }

    fn binary(&mut self, out: &mut String, op: BinOp, lhs: &Expr, rhs: &Expr) {
        let s = lhs.ty.scalar().unwrap_or(Scalar::I32);
        let rhs_scalar = rhs.ty.scalar().unwrap_or(Scalar::I32);
        match op {
            // GLSL leaves `x / 0` and `min_int / -1` undefined: the helper gives every
            // target's result (`x / 0 = 0`, `min_int / -1 = min_int`).
            BinOp::Div if matches!(s, Scalar::I32 | Scalar::I64) => {
                let h = if s == Scalar::I32 {
                    "div_i32"
                } else {
                    "div_i64"
                };
                self.put_helper_call2(out, h, lhs, rhs);
            }
            BinOp::Div if let Some(inf) = self.zero_divisors.infinity(op, lhs, false, rhs) => {
                out.push('(');
                self.put(out, lhs);
                out.push_str(" * ");
                self.literal(out, &inf);
                out.push(')');
            }
            BinOp::Rem => {
                // GLSL `%` on negative ints is undefined (glslang emits OpSMod, the sign of the
                // divisor) and `mod` on floats is floor-based: both get C-remainder helpers.
                let h = match s {
                    Scalar::I32 => "rem_i32",
                    Scalar::I64 => "rem_i64",
                    Scalar::F32 => "fmod_f32",
                    _ => "fmod_f64",
                };
                self.put_helper_call2(out, h, lhs, rhs);
            }
            BinOp::Shl | BinOp::AShr | BinOp::LShr => {
                out.push_str(match (op, s) {
                    (BinOp::LShr, Scalar::I64) => "int64_t(uint64_t(",
                    (BinOp::LShr, _) => "int(uint(",
                    _ => "(",
                });
                self.put(out, lhs);
                out.push_str(match op {
                    BinOp::Shl => " << ",
                    BinOp::AShr => " >> ",
                    _ => ") >> ",
                });
                // Shift amounts are masked to the operand width, as the interpreter does.
                let bits = if s == Scalar::I64 { 63 } else { 31 };
                out.push_str(if rhs_scalar == Scalar::I64 {
                    "int("
                } else {
                    "("
                });
                self.put(out, rhs);
                let _ = if rhs_scalar == Scalar::I64 {
                    write!(out, " & {bits}l))")
                } else {
                    write!(out, " & {bits}))")
                };
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

    /// `sarek_h_{h}(a, b)`.
    fn put_helper_call2(&mut self, out: &mut String, h: &str, a: &Expr, b: &Expr) {
        if !self.helpers.contains(h) {
            self.helpers.insert(h.to_string());
        }
        out.push_str("sarek_h_");
        out.push_str(h);
        out.push('(');
        self.put(out, a);
        out.push_str(", ");
        self.put(out, b);
        out.push(')');
    }

    fn call(&mut self, out: &mut String, func: FuncId, args: &[Expr]) {
        let arguments = |w: &mut Self, out: &mut String| {
            text::put_list(w, out, args, |w, out, a| match (&a.kind, &a.ty) {
                // Specialisation left only per-thread arrays as arguments.
                (ExprKind::Var(v), Ty::Vector(_) | Ty::Array { .. }) => {
                    out.push_str(&w.array_name(*v))
                }
                _ => w.put(out, a),
            })
        };
        text::name_before(self, out, arguments, |w| w.instance(func));
    }

    fn intrinsic(&mut self, out: &mut String, op: Intrinsic, args: &[Expr], ty: &Ty) {
        let s = ty.scalar().unwrap_or(Scalar::I32);
        match op {
            // The block size is a specialization constant (`local_size_x_id`): glslang turns
            // an expression of it and literals into `OpSpecConstantOp`s, and for `a && b`
            // (a branch and a phi) and a `? :` over it it emitted a spec constant that refers
            // to the phi, which spirv-val rejects (difftest seed 409559). Read through the
            // opaque helper, block sizes are ordinary values; drivers inline the call.
            Intrinsic::Geometry(g @ Geometry::BlockDim(_)) => {
                if !self.helpers.contains("opaque_i32") {
                    self.helpers.insert("opaque_i32".into());
                }
                out.push_str("sarek_h_opaque_i32(");
                put_geometry(out, g);
                out.push(')');
            }
            Intrinsic::Geometry(g) => put_geometry(out, g),
            Intrinsic::BlockBarrier | Intrinsic::FenceBlock | Intrinsic::FenceDevice => {
                out.push('0')
            }
            Intrinsic::Warp(w) => {
                let text = self.warp(w, args);
                out.push_str(&text);
            }
            Intrinsic::Atomic(a) => {
                let text = self.atomic(a, args, s);
                out.push_str(&text);
            }
            Intrinsic::Math(m) => {
                let a: Vec<String> = args.iter().map(|x| self.expr(x)).collect();
                let text = self.math(m, s, a);
                out.push_str(&text);
            }
            Intrinsic::Abs => {
                out.push_str("abs(");
                self.put(out, &args[0]);
                out.push(')');
            }
            Intrinsic::Min | Intrinsic::Max => {
                let name = if op == Intrinsic::Min { "min" } else { "max" };
                if s.is_float() {
                    // GLSL leaves min/max with a NaN operand undefined; C fmin ignores it.
                    let h = format!("f{name}_{}", s.short());
                    self.put_helper_call2(out, &h, &args[0], &args[1]);
                } else {
                    out.push_str(name);
                    self.put_args(out, &args[..2]);
                }
            }
            Intrinsic::Clz | Intrinsic::Popcount => {
                let src = args[0].ty.scalar().unwrap_or(Scalar::I32);
                let base = if op == Intrinsic::Clz {
                    "clz"
                } else {
                    "popcount"
                };
                let h = format!("{base}_{}", src.short());
                if s == Scalar::I64 {
                    // The helper's int widened as `Convert` widens (see there).
                    self.helpers.insert("sext_i32".into());
                    out.push_str("sarek_h_sext_i32(");
                } else {
                    out.push_str(scalar_ty(s));
                    out.push('(');
                }
                self.put_helper_call(out, &h, &args[..1]);
                out.push(')');
            }
            Intrinsic::Convert => {
                let from = args[0].ty.scalar().unwrap_or(Scalar::I32);
                // GLSL leaves `int(x)` undefined for NaN and out-of-range x (lavapipe gives
                // min_int); the helper truncates and saturates as the interpreter does.
                if from.is_float() && matches!(s, Scalar::I32 | Scalar::I64) {
                    let h = format!(
                        "ftoi{}_{}",
                        if s == Scalar::I64 { 64 } else { 32 },
                        from.short()
                    );
                    return self.put_helper_call(out, &h, &args[..1]);
                }
                // `int64_t(i)` compared with a constant is miscompiled by Mesa (lavapipe);
                // the helper sign-extends through packInt2x32 instead.
                if from == Scalar::I32 && s == Scalar::I64 {
                    return self.put_helper_call(out, "sext_i32", &args[..1]);
                }
                if from == s {
                    return self.put(out, &args[0]);
                }
                match (from, s) {
                    (_, Scalar::Bool) => {
                        out.push('(');
                        self.put(out, &args[0]);
                        let _ = write!(out, " != {})", zero_scalar(from));
                    }
                    (Scalar::Bool, _) => {
                        let one = match s {
                            Scalar::I64 => "1l",
                            Scalar::F32 => "1.0",
                            Scalar::F64 => "1.0lf",
                            _ => "1",
                        };
                        out.push('(');
                        self.put(out, &args[0]);
                        let _ = write!(out, " ? {one} : {})", zero_scalar(s));
                    }
                    _ => {
                        out.push_str(scalar_ty(s));
                        out.push('(');
                        self.put(out, &args[0]);
                        out.push(')');
                    }
                }
            }
            Intrinsic::Length => {
                let ExprKind::Var(v) = args[0].kind else {
                    out.push('0');
                    return;
                };
                out.push_str(&self.length(v));
            }
        }
    }

    /// A variable read: kernel scalars live in the push-constant block.
    fn put_var(&self, out: &mut String, v: VarId) {
        if self.k.params.contains(&v) && !matches!(self.k.var(v).ty, Ty::Vector(_)) {
            out.push_str("sarek_pc.");
        }
        out.push_str(&self.names[v.0 as usize]);
    }

    fn put_member(&self, out: &mut String, ty: &Ty, field: u32) {
        match ty {
            Ty::Record(id) => out.push_str(&self.field_names[id.0 as usize][field as usize]),
            _ => {
                let _ = write!(out, "f{field}");
            }
        }
    }

    /// GLSL spelling of an array variable.
    fn put_array_name(&self, out: &mut String, v: VarId) {
        let name = match self.resolve_array(v) {
            ArrArg::Global(g) => &self.names[g.0 as usize],
            ArrArg::Local(_) => &self.names[v.0 as usize],
        };
        out.push_str(name);
    }

    /// An element index. glslang rejects a constant index outside a sized array, though the
    /// access may never run (or faults located in checked mode): such an index goes through
    /// an identity helper, which is not a constant expression.
    fn index(&mut self, out: &mut String, base: VarId, index: &Expr) {
        let real = match self.resolve_array(base) {
            ArrArg::Global(g) => g,
            ArrArg::Local(_) => base,
        };
        let size = match self.k.var(real).ty {
            Ty::Array { size: Some(n), .. } => Some(i64::from(n)),
            _ => None,
        };
        match (&index.kind, size) {
            (ExprKind::Lit(Literal::I32(k)), Some(n)) if !(0..n).contains(&i64::from(*k)) => {
                self.put_helper_call(out, "opaque_i32", std::slice::from_ref(index));
            }
            _ => self.put(out, index),
        }
    }

    /// The GLSL function for helper `func`, written at its first call so that helpers come
    /// before their callers and the numbering follows the calls.
    fn instance(&mut self, func: FuncId) -> String {
        if let Some(n) = self.instances.get(&func) {
            return n.clone();
        }
        let k = self.k;
        let f = k.function(func);
        let name = if self.has_arrays[func.0 as usize] {
            format!(
                "sarek_s{}_{}",
                self.instances.len(),
                self.fn_names[func.0 as usize]
            )
        } else {
            self.fn_names[func.0 as usize].clone()
        };
        self.instances.insert(func, name.clone());
        let saved_span = self.span;
        let mut params = Vec::new();
        for p in &f.params {
            let ty = self.k.var(*p).ty.clone();
            if let ArrArg::Local(n) = self.resolve_array(*p)
                && matches!(ty, Ty::Array { .. })
            {
                params.push(format!(
                    "inout {} {}[{n}]",
                    self.ty(&ty),
                    self.names[p.0 as usize]
                ));
            } else {
                params.push(self.var_decl(*p));
            }
        }
        let mut body = String::new();
        // Callees are written on first use: nests once per helper of a call chain.
        crate::stack::grow(|| self.block(&f.body, 1, &mut body));
        self.note_type(&f.ret);
        let text = format!(
            "{} {name}({}) {{\n{body}}}\n",
            self.ty(&f.ret),
            params.join(", ")
        );
        self.instance_text.push(text);
        self.span = saved_span;
        name
    }

    fn warp(&mut self, w: WarpOp, args: &[Expr]) -> String {
        let a: Vec<String> = args.iter().map(|x| self.expr(x)).collect();
        if self.warps == Warps::Emulated {
            return self.emulated_warp(w, &args[0].ty, &a);
        }
        self.uses_subgroups = true;
        if args[0].ty.scalar() == Some(Scalar::I64) {
            self.uses_subgroup_i64 = true;
        }
        match w {
            WarpOp::Shuffle => format!("subgroupShuffle({}, uint({} & 31))", a[0], a[1]),
            WarpOp::ShuffleDown | WarpOp::ShuffleUp | WarpOp::ShuffleXor => {
                let x = args[0].ty.scalar().unwrap_or(Scalar::I32);
                let kind = match w {
                    WarpOp::ShuffleDown => "down",
                    WarpOp::ShuffleUp => "up",
                    _ => "xor",
                };
                let h = format!("shfl_{kind}_{}", x.short());
                self.helpers.insert(h.clone());
                format!("sarek_h_{h}({}, {})", a[0], a[1])
            }
            WarpOp::VoteAll => format!("subgroupAll({})", a[0]),
            WarpOp::VoteAny => format!("subgroupAny({})", a[0]),
            WarpOp::Ballot => format!("int(subgroupBallot({}).x)", a[0]),
        }
    }

    /// A warp operation through shared memory: warps are 32 consecutive threads of the block
    /// in linear order, as in the interpreter. Valid because the convergence check only lets
    /// warp operations run where the whole block runs them, so the barriers are reached.
    fn emulated_warp(&mut self, w: WarpOp, ty: &Ty, a: &[String]) -> String {
        let x = ty.scalar().unwrap_or(Scalar::I32);
        self.uses_warp_scratch = true;
        if matches!(x, Scalar::I64 | Scalar::F64) {
            self.uses_warp_scratch_hi = true;
        }
        let name = match w {
            WarpOp::Shuffle => format!("wshfl_idx_{}", x.short()),
            WarpOp::ShuffleDown => format!("wshfl_down_{}", x.short()),
            WarpOp::ShuffleUp => format!("wshfl_up_{}", x.short()),
            WarpOp::ShuffleXor => format!("wshfl_xor_{}", x.short()),
            WarpOp::VoteAll => "wall_bool".into(),
            WarpOp::VoteAny => "wany_bool".into(),
            WarpOp::Ballot => "wballot_bool".into(),
        };
        self.helpers.insert(name.clone());
        format!("sarek_h_{name}({})", a.join(", "))
    }

    fn atomic(&mut self, op: AtomicOp, args: &[Expr], s: Scalar) -> String {
        let ExprKind::Var(v) = args[0].kind else {
            return "0".into();
        };
        let target = self.resolve_array(v);
        let ArrArg::Global(g) = target else {
            self.internal("atomics on a per-thread local array".into());
            return "0".into();
        };
        let i = self.expr(&args[1]);
        let vals: Vec<String> = args[2..].iter().map(|x| self.expr(x)).collect();
        let mem = format!("{}[{i}]", self.names[g.0 as usize]);
        if s == Scalar::F32 {
            if self.shared.contains(&g) {
                self.shared_as_uint.insert(g);
            }
            return match op {
                AtomicOp::Add => {
                    self.float_atomics.insert(g);
                    format!("sarek_h_fadd{}({i}, {})", g.0, vals[0])
                }
                _ => {
                    // Exchange: on the uint view, bit for bit.
                    if !self.shared.contains(&g) {
                        self.float_atomics.insert(g);
                    }
                    format!(
                        "uintBitsToFloat(atomicExchange({}[{i}], floatBitsToUint({})))",
                        self.uint_view(g),
                        vals[0]
                    )
                }
            };
        }
        if s == Scalar::I64 {
            self.uses_i64_atomics = true;
        }
        let one = if s == Scalar::I64 { "1l" } else { "1" };
        match op {
            AtomicOp::Add => format!("atomicAdd({mem}, {})", vals[0]),
            AtomicOp::Sub => format!("atomicAdd({mem}, -({}))", vals[0]),
            AtomicOp::Min => format!("atomicMin({mem}, {})", vals[0]),
            AtomicOp::Max => format!("atomicMax({mem}, {})", vals[0]),
            AtomicOp::And => format!("atomicAnd({mem}, {})", vals[0]),
            AtomicOp::Or => format!("atomicOr({mem}, {})", vals[0]),
            AtomicOp::Xor => format!("atomicXor({mem}, {})", vals[0]),
            AtomicOp::Exch => format!("atomicExchange({mem}, {})", vals[0]),
            AtomicOp::Cas => format!("atomicCompSwap({mem}, {}, {})", vals[0], vals[1]),
            AtomicOp::Inc => format!("atomicAdd({mem}, {one})"),
            AtomicOp::Dec => format!("atomicAdd({mem}, -{one})"),
        }
    }

    fn math(&mut self, m: MathFn, s: Scalar, a: Vec<String>) -> String {
        use MathFn::*;
        let f64 = s == Scalar::F64;
        let helper = |w: &mut Self, name: &str| {
            let h = format!("{name}_{}", s.short());
            w.helpers.insert(h.clone());
            format!("sarek_h_{h}({})", a.join(", "))
        };
        // GLSL 4.50 has float64 overloads only for these (§8): the rest are `f64math` routines.
        let f64_ok = matches!(
            m,
            Sqrt | Rsqrt
                | Floor
                | Ceil
                | Trunc
                | Round
                | Fabs
                | Fmin
                | Fmax
                | Fma
                | Copysign
                | Hypot
        );
        if f64 && !f64_ok {
            if let Some(function) = self.soft_math.function_for(m) {
                return format!("{function}({})", a.join(", "));
            }
            self.internal(format!("float64 `{}`", m.c_name()));
            return "0.0lf".into();
        }
        match m {
            Sqrt => format!("sqrt({})", a[0]),
            Rsqrt => format!("inversesqrt({})", a[0]),
            Exp => format!("exp({})", a[0]),
            Exp2 => format!("exp2({})", a[0]),
            Log => format!("log({})", a[0]),
            Log2 => format!("log2({})", a[0]),
            Sin => format!("sin({})", a[0]),
            Cos => format!("cos({})", a[0]),
            Tan => format!("tan({})", a[0]),
            // Vulkan lets asin/acos be as loose as atan2 (4096 ulps; lavapipe is that loose):
            // Cephes' float polynomials instead, within a few ulps.
            Asin => helper(self, "asin"),
            Acos => {
                self.helpers.insert(format!("asin_{}", s.short()));
                helper(self, "acos")
            }
            Atan => format!("atan({})", a[0]),
            Sinh => helper(self, "sinh"),
            Cosh => helper(self, "cosh"),
            Tanh => {
                self.helpers.insert(format!("expm1_{}", s.short()));
                helper(self, "tanh")
            }
            Floor => format!("floor({})", a[0]),
            Ceil => format!("ceil({})", a[0]),
            Trunc => format!("trunc({})", a[0]),
            Fabs => format!("abs({})", a[0]),
            // GLSL leaves atan(y, x) undefined at x = y = 0 (lavapipe gives 3pi/4).
            Atan2 => helper(self, "atan2"),
            Fma => format!("fma({}, {}, {})", a[0], a[1], a[2]),
            Expm1 => helper(self, "expm1"),
            Log10 => helper(self, "log10"),
            Log1p => helper(self, "log1p"),
            Round => helper(self, "round"),
            Pow => {
                // The pow helper uses fmod to test the parity of an integral exponent.
                self.helpers.insert(format!("fmod_{}", s.short()));
                helper(self, "pow")
            }
            Hypot => helper(self, "hypot"),
            Copysign => helper(self, "copysign"),
            Fmin => helper(self, "fmin"),
            Fmax => helper(self, "fmax"),
        }
    }
}

fn collect_shared(b: &Block, out: &mut Vec<VarId>) {
    crate::ir::visit::for_each_stmt(b, &mut |s| {
        if let StmtKind::Array { var } = s.kind {
            out.push(var);
        }
    });
}

pub(super) fn scalar_ty(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool => "bool",
        Scalar::I32 => "int",
        Scalar::I64 => "int64_t",
        Scalar::F32 => "float",
        Scalar::F64 => "double",
    }
}

fn zero_scalar(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool => "false",
        Scalar::I32 => "0",
        Scalar::I64 => "0l",
        Scalar::F32 => "0.0",
        Scalar::F64 => "0.0lf",
    }
}

/// Decimal text of a float32 that glslang reads back as exactly `v`. glslang parses a literal
/// as a double and rounds that to float32: the shortest round-trip text of `v` survives the
/// double rounding (checked for a 1-in-97 sample of all float32), but the check is cheap, and
/// the text of `v`'s exact double value always survives.
fn f32_text(v: f32) -> String {
    let short = format!("{v:?}");
    if short.parse::<f64>().is_ok_and(|d| d as f32 == v) {
        short
    } else {
        format!("{:?}", f64::from(v))
    }
}

/// Whether glslang constant-folds `e`: every leaf is a literal and every operation one it
/// evaluates at compile time (operators, constructors, built-in functions, conversions). It
/// folds in double precision, so [`crate::passes::constfold`] has already folded what it
/// can exactly; in what remains (transcendentals of constants, a constant integer division
/// by zero), [`Writer::expr`] spells the float32 literals of an operator or built-in call as
/// bit patterns glslang cannot see through, so the device computes it in float32.
fn glslang_folds(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_) => true,
        ExprKind::Binary { lhs, rhs, .. } => glslang_folds(lhs) && glslang_folds(rhs),
        ExprKind::Unary { operand, .. } => glslang_folds(operand),
        ExprKind::Field { base, .. } => glslang_folds(base),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => glslang_folds(cond) && glslang_folds(then_value) && glslang_folds(else_value),
        ExprKind::Record { fields, .. } => fields.iter().all(glslang_folds),
        ExprKind::Intrinsic {
            op:
                Intrinsic::Math(_)
                | Intrinsic::Abs
                | Intrinsic::Min
                | Intrinsic::Max
                | Intrinsic::Clz
                | Intrinsic::Popcount
                | Intrinsic::Convert,
            args,
        } => args.iter().all(glslang_folds),
        _ => false,
    }
}

fn float_lit(v: f64, nan: bool, inf: bool, text: String, suffix: &str) -> String {
    let base = if nan {
        "uintBitsToFloat(0x7fc00000u)".to_string()
    } else if inf {
        let s = if v < 0.0 {
            "0xff800000u"
        } else {
            "0x7f800000u"
        };
        format!("uintBitsToFloat({s})")
    } else {
        let t = if text.contains(['.', 'e', 'E']) {
            text
        } else {
            format!("{text}.0")
        };
        let t = format!("{t}{suffix}");
        return if v < 0.0 || t.starts_with('-') {
            format!("({t})")
        } else {
            t
        };
    };
    if suffix.is_empty() {
        base
    } else {
        format!("double({base})")
    }
}

fn put_geometry(out: &mut String, g: Geometry) {
    let (var, axis) = match g {
        Geometry::ThreadIdx(a) => ("gl_LocalInvocationID", a),
        Geometry::BlockIdx(a) => ("gl_WorkGroupID", a),
        Geometry::BlockDim(a) => ("gl_WorkGroupSize", a),
        Geometry::GridDim(a) => ("gl_NumWorkGroups", a),
        Geometry::GlobalIdx(a) => ("gl_GlobalInvocationID", a),
        // The language's warp size is 32 on every target; the runtime only offers subgroups
        // on devices whose subgroup size it can make 32.
        Geometry::WarpSize => return out.push_str("32"),
    };
    let _ = write!(out, "int({var}.{})", axis.letter());
}

/// GLSL source of a built-in helper, by key `<name>_<type>`.
fn builtin_helper(key: &str) -> String {
    let (name, short) = key.rsplit_once('_').unwrap_or((key, "f32"));
    let t = match short {
        "i32" => "int",
        "i64" => "int64_t",
        "f64" => "double",
        "bool" => "bool",
        _ => "float",
    };
    let one = if short == "f64" { "1.0lf" } else { "1.0" };
    let half = if short == "f64" { "0.5lf" } else { "0.5" };
    let zero = if short == "f64" { "0.0lf" } else { "0.0" };
    let nan = if short == "f64" {
        "double(uintBitsToFloat(0x7fc00000u))"
    } else {
        "uintBitsToFloat(0x7fc00000u)"
    };
    let mut templates: BTreeMap<&str, String> = BTreeMap::new();
    // C remainder: the sign of the dividend; `x mod -1` is 0 (also for the most negative x).
    // `x mod 0 = x` and `x / 0 = 0`: the result every generator gives a zero divisor (a
    // located fault on the interpreter and in checked mode).
    templates.insert("rem", "T sarek_h_rem_S(T a, T b) {\n    if (b == T(0)) return a;\n    if (b == T(-1)) return T(0);\n    return a - b * (a / b);\n}\n".into());
    templates.insert("div", "T sarek_h_div_S(T a, T b) {\n    if (b == T(0)) return T(0);\n    if (b == T(-1)) return T(0) - a;\n    return a / b;\n}\n".into());
    templates.insert(
        "opaque",
        "T sarek_h_opaque_S(T x) {\n    return x;\n}\n".into(),
    );
    // C fmod, exactly: scale |y| up by powers of two to the largest multiple not above |x|,
    // then subtract back down; every step is exact (seed 002's WGSL helper, in GLSL).
    templates.insert(
        "fmod",
        "T sarek_h_fmod_S(T x, T y) {\n    T ax = abs(x);\n    T ay = abs(y);\n    if (isnan(x) || isnan(y) || isinf(x) || ay == ZERO) return NAN;\n    if (isinf(ay) || ax < ay) return x;\n    T d = ay;\n    while (d * T(2) <= ax) d *= T(2);\n    T r = ax;\n    while (d >= ay) {\n        if (r >= d) r -= d;\n        d *= HALF;\n    }\n    return x < ZERO ? -r : r;\n}\n".into(),
    );
    // C round: half away from zero (GLSL `round` leaves the direction of .5 open).
    templates.insert("round", "T sarek_h_round_S(T x) {\n    T t = trunc(x);\n    return abs(x - t) >= HALF ? t + sign(x) : t;\n}\n".into());
    // expm1, log1p, sinh and tanh near 0 and sinh/cosh near the top of the range, within a
    // few ulps: Vulkan lets exp and log be off by an absolute 2^-21 near 1 and leaves
    // sinh/cosh/tanh "inherited from" their exp formulas, which lose every digit near 0
    // (lavapipe: sinh(1e-7) 6e6 ulps off) and overflow for |x| in (88.7, 89.4].
    // Taylor series without the leading 1 below 0.5 (truncation under 2^-26 there).
    templates.insert("expm1", "T sarek_h_expm1_S(T x) {\n    if (abs(x) < HALF) return x * (ONE + x * (HALF + x * (T(0.16666667) + x * (T(0.041666668) + x * (T(0.008333334) + x * (T(0.0013888889) + x * (T(0.0001984127) + x * (T(2.4801588e-5) + x * T(2.7557319e-6)))))))));\n    return exp(x) - ONE;\n}\n".into());
    // log1p(x) = 2 atanh(s), s = x / (2 + x), |s| <= 1/3 on [-0.5, 1].
    templates.insert("log1p", "T sarek_h_log1p_S(T x) {\n    if (x >= -HALF && x <= ONE) {\n        T s = x / (T(2) + x);\n        T z = s * s;\n        return T(2) * s * (ONE + z * (T(0.33333334) + z * (T(0.2) + z * (T(0.14285715) + z * (T(0.11111111) + z * (T(0.09090909) + z * (T(0.07692308) + z * T(0.06666667))))))));\n    }\n    return log(ONE + x);\n}\n".into());
    templates.insert("sinh", "T sarek_h_sinh_S(T x) {\n    T a = abs(x);\n    if (a < HALF) {\n        T z = x * x;\n        return x * (ONE + z * (T(0.16666667) + z * (T(0.008333334) + z * (T(0.0001984127) + z * T(2.7557319e-6)))));\n    }\n    T r;\n    if (a < T(88)) {\n        T e = exp(a);\n        r = HALF * (e - ONE / e);\n    } else {\n        T h = exp(HALF * a);\n        r = (HALF * h) * h;\n    }\n    return x < ZERO ? -r : r;\n}\n".into());
    templates.insert("cosh", "T sarek_h_cosh_S(T x) {\n    T a = abs(x);\n    if (a < T(88)) {\n        T e = exp(a);\n        return HALF * (e + ONE / e);\n    }\n    T h = exp(HALF * a);\n    return (HALF * h) * h;\n}\n".into());
    templates.insert("tanh", "T sarek_h_tanh_S(T x) {\n    T a = abs(x);\n    T r = ONE;\n    if (!(a >= T(10))) {\n        T e = sarek_h_expm1_S(T(2) * a);\n        r = e / (e + T(2));\n    }\n    if (r == ZERO) return x;\n    return x < ZERO ? -r : r;\n}\n".into());
    templates.insert(
        "log10",
        "T sarek_h_log10_S(T x) {\n    return log2(x) * T(0.30102999566398120);\n}\n".into(),
    );
    // C pow: negative bases with integral exponents, pow(x, 0) = pow(1, y) = pow(-1, ±inf) = 1
    // (GLSL leaves these undefined);
    // a zero base keeps its sign for odd integral exponents; an infinite exponent is even.
    templates.insert(
        "pow",
        "T sarek_h_pow_S(T x, T y) {\n    if (y == ZERO || x == ONE || (x == -ONE && abs(y) == INF)) return ONE;\n    if (x > ZERO) return pow(x, y);\n    bool odd = abs(sarek_h_fmod_S(y, T(2))) == ONE;\n    if (x == ZERO) {\n        T r = y > ZERO ? ZERO : INF;\n        return (odd && (floatBitsToUint(float(x)) & 0x80000000u) != 0u) ? -r : r;\n    }\n    if (trunc(y) != y) return NAN;\n    T r = pow(-x, y);\n    return odd ? -r : r;\n}\n".into(),
    );
    templates.insert("hypot", "T sarek_h_hypot_S(T x, T y) {\n    T a = abs(x);\n    T b = abs(y);\n    T m = max(a, b);\n    if (isinf(a) || isinf(b)) return INF;\n    if (m == ZERO) return ZERO;\n    T p = a / m;\n    T q = b / m;\n    return m * sqrt(p * p + q * q);\n}\n".into());
    templates.insert(
        "copysign",
        "T sarek_h_copysign_S(T x, T y) {\n    bool neg = y < ZERO || (y == ZERO && ONE / y < ZERO);\n    return neg ? -abs(x) : abs(x);\n}\n".into(),
    );
    templates.insert(
        "fmin",
        "T sarek_h_fmin_S(T a, T b) {\n    return isnan(a) ? b : (isnan(b) ? a : min(a, b));\n}\n"
            .into(),
    );
    templates.insert(
        "fmax",
        "T sarek_h_fmax_S(T a, T b) {\n    return isnan(a) ? b : (isnan(b) ? a : max(a, b));\n}\n"
            .into(),
    );
    // Cephes asinf: a polynomial on [0, 0.5], and asin(x) = pi/2 - 2 asin(sqrt((1 - x) / 2))
    // above, so no argument near 1 loses precision.
    templates.insert(
        "asin",
        "T sarek_h_asin_S(T x) {\n    T a = abs(x);\n    if (a > ONE) return NAN;\n    bool big = a > HALF;\n    T z = big ? HALF * (ONE - a) : a * a;\n    T t = big ? sqrt(z) : a;\n    T y = ((((T(4.2163199048e-2) * z + T(2.4181311049e-2)) * z + T(4.5470025998e-2)) * z + T(7.4953002686e-2)) * z + T(1.6666752422e-1)) * z * t + t;\n    if (big) y = T(1.5707963267948966) - (y + y);\n    return x < ZERO ? -y : y;\n}\n".into(),
    );
    // Cephes acosf: through asin of the half-angle on both ends.
    templates.insert(
        "acos",
        "T sarek_h_acos_S(T x) {\n    if (x < -HALF) return T(3.1415926535897932) - T(2) * sarek_h_asin_S(sqrt(HALF * (ONE + x)));\n    if (x > HALF) return T(2) * sarek_h_asin_S(sqrt(HALF * (ONE - x)));\n    return T(1.5707963267948966) - sarek_h_asin_S(x);\n}\n".into(),
    );
    // C's atan2f at (±0, ±0): ±0 for x = +0, ±pi for x = -0 (float32 only: float64 has
    // its own atan2 routine, see f64math).
    templates.insert(
        "atan2",
        "T sarek_h_atan2_S(T y, T x) {\n    if (x == ZERO && y == ZERO) {\n        T r = floatBitsToInt(x) < 0 ? T(3.1415927) : ZERO;\n        return floatBitsToInt(y) < 0 ? -r : r;\n    }\n    return atan(y, x);\n}\n".into(),
    );
    // Float to integer: truncate toward zero, saturate, NaN to 0 (the interpreter's rule).
    // The last `max` is a no-op (x is above the minimum there) that keeps Mesa from folding
    // `int(float(i))` to `i`, which it does for a bare `int(x)` although float32 rounds i
    // (findings/fixed/lavapipe_int_float_int_roundtrip.sarek).
    templates.insert(
        "ftoi32",
        "int sarek_h_ftoi32_S(T x) {\n    if (isnan(x)) return 0;\n    if (x >= T(2147483648.0)) return 2147483647;\n    if (x <= T(-2147483648.0)) return int(0x80000000u);\n    return int(max(x, T(-2147483648.0)));\n}\n".into(),
    );
    templates.insert(
        "ftoi64",
        "int64_t sarek_h_ftoi64_S(T x) {\n    if (isnan(x)) return 0l;\n    if (x >= T(9223372036854775808.0)) return 9223372036854775807l;\n    if (x <= T(-9223372036854775808.0)) return int64_t(0x8000000000000000ul);\n    return int64_t(max(x, T(-9223372036854775808.0)));\n}\n".into(),
    );
    // int32 -> int64 as the two halves: Mesa miscompiles `int64_t(i) < 3l` (false for
    // i = 0..2 on lavapipe: findings/fixed/lavapipe_int64_compare_of_index.sarek).
    templates.insert(
        "sext",
        "int64_t sarek_h_sext_S(T x) {\n    return packInt2x32(ivec2(x, x >> 31));\n}\n".into(),
    );
    templates.insert("clz", if short == "i64" {
        "int sarek_h_clz_S(int64_t x) {\n    uint hi = uint(uint64_t(x) >> 32);\n    uint lo = uint(uint64_t(x) & 0xffffffffUL);\n    return hi != 0u ? 31 - findMSB(hi) : 63 - findMSB(lo);\n}\n".into()
    } else {
        "int sarek_h_clz_S(int x) {\n    return 31 - findMSB(uint(x));\n}\n".into()
    });
    templates.insert("popcount", if short == "i64" {
        "int sarek_h_popcount_S(int64_t x) {\n    return bitCount(uint(uint64_t(x) >> 32)) + bitCount(uint(uint64_t(x) & 0xffffffffUL));\n}\n".into()
    } else {
        "int sarek_h_popcount_S(int x) {\n    return bitCount(x);\n}\n".into()
    });
    // Shuffles whose source lane is outside the warp return the caller's own value (CUDA's
    // rule, which the interpreter follows); GLSL leaves those undefined.
    let body = if let Some(kind) = name.strip_prefix("wshfl_") {
        let src = match kind {
            "down" => "lane + d",
            "up" => "lane - d",
            "xor" => "lane ^ d",
            _ => "d & 31",
        };
        let (store, load) = match short {
            "bool" => ("sarek_ws[t] = x ? 1u : 0u;", "sarek_ws[src] != 0u"),
            "i32" => ("sarek_ws[t] = uint(x);", "int(sarek_ws[src])"),
            "f32" => (
                "sarek_ws[t] = floatBitsToUint(x);",
                "uintBitsToFloat(sarek_ws[src])",
            ),
            "i64" => (
                "sarek_ws[t] = uint(uint64_t(x));\n    sarek_ws_hi[t] = uint(uint64_t(x) >> 32);",
                "int64_t((uint64_t(sarek_ws_hi[src]) << 32) | uint64_t(sarek_ws[src]))",
            ),
            _ => (
                "uvec2 w = unpackDouble2x32(x);\n    sarek_ws[t] = w.x;\n    sarek_ws_hi[t] = w.y;",
                "packDouble2x32(uvec2(sarek_ws[src], sarek_ws_hi[src]))",
            ),
        };
        format!(
            "T sarek_h_{name}_S(T x, int d) {{\n    uint t = gl_LocalInvocationIndex;\n    uint n = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;\n    memoryBarrierShared();\n    barrier();\n    {store}\n    memoryBarrierShared();\n    barrier();\n    int lane = int(t & 31u);\n    int s = {src};\n    int at = int(t) - lane + s;\n    uint src = (s >= 0 && s < 32 && uint(at) < n) ? uint(at) : t;\n    return {load};\n}}\n"
        )
    } else if matches!(name, "wall" | "wany" | "wballot") {
        let (ret, init, step, fin) = match name {
            "wall" => (
                "bool",
                "bool r = true;",
                "r = r && sarek_ws[base + k] != 0u;",
                "r",
            ),
            "wany" => (
                "bool",
                "bool r = false;",
                "r = r || sarek_ws[base + k] != 0u;",
                "r",
            ),
            _ => (
                "int",
                "uint r = 0u;",
                "if (sarek_ws[base + k] != 0u) r |= 1u << k;",
                "int(r)",
            ),
        };
        format!(
            "{ret} sarek_h_{name}_S(bool b) {{\n    uint t = gl_LocalInvocationIndex;\n    uint n = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;\n    memoryBarrierShared();\n    barrier();\n    sarek_ws[t] = b ? 1u : 0u;\n    memoryBarrierShared();\n    barrier();\n    uint base = t & ~31u;\n    {init}\n    for (uint k = 0u; k < 32u && base + k < n; k++) {{\n        {step}\n    }}\n    return {fin};\n}}\n"
        )
    } else if let Some(kind) = name.strip_prefix("shfl_") {
        let src = match kind {
            "down" => "int(l) + d",
            "up" => "int(l) - d",
            _ => "int(l) ^ d",
        };
        format!(
            "T sarek_h_{name}_S(T x, int d) {{\n    uint l = gl_SubgroupInvocationID;\n    int s = {src};\n    return subgroupShuffle(x, (s >= 0 && s < 32) ? uint(s) : l);\n}}\n"
        )
    } else {
        templates
            .get(name)
            .cloned()
            .unwrap_or_else(|| panic!("no GLSL helper template `{name}`"))
    };
    let inf = if short == "f64" {
        "double(uintBitsToFloat(0x7f800000u))"
    } else {
        "uintBitsToFloat(0x7f800000u)"
    };
    body.replace("NAN", nan)
        .replace("INF", inf)
        .replace("ZERO", zero)
        .replace("HALF", half)
        .replace("ONE", one)
        .replace("T(", &format!("{t}("))
        .replace("T ", &format!("{t} "))
        .replace("_S(", &format!("_{short}("))
}
