//! What a kernel needs from a target and a device, and the one refusal rule.
//!
//! [`Needs::of`] walks a kernel once and records every optional feature it uses (float64,
//! int64, 64-bit atomics, warp operations, ...) with the places that use it, and the resources
//! it takes (shared bytes, kernel-parameter bytes, storage buffers, nesting depths). Each
//! target declares a [`Support`] (`back::<target>::support`) and each runtime device refines
//! it ([`Support::on_device`], [`Support::without`], [`Support::limit`]).
//!
//! [`refusals`] is the only place a user-facing refusal is decided and worded: a feature that
//! is needed and not supported, or a resource over its limit, is one located error naming the
//! target (and the device) and the feature. Generators call [`check`] before writing anything
//! and never refuse on their own; a writer's own error is an internal one (a Sarek bug).

use crate::abi::{self, LayoutRules, Stored};
use crate::diag::{Diagnostic, Label, Span};
use crate::intrinsics::{Geometry, Intrinsic, MathFn};
use crate::ir::{Block, Expr, ExprKind, FuncId, Kernel, LValue, Stmt, StmtKind, Ty, VarId};
use crate::target::Target;
use crate::types::{BinOp, MemSpace, Scalar};
use std::borrow::Cow;

/// An optional feature a kernel may need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Feature {
    /// `float64` anywhere (variables, values, helper results).
    Float64,
    /// `int64` anywhere.
    Int64,
    /// Atomics on int64 elements.
    Int64Atomics,
    /// Warp operations or `warp_size` (subgroups).
    Subgroups,
    /// `=`/`<>` on vectors, arrays, records or variants.
    AggregateEquality,
    /// Float `mod` (C's `fmod`).
    FloatMod,
    /// A float64 math function.
    Float64Math(MathFn),
    /// A shared array declared inside a helper function.
    HelperSharedArray,
}

impl Feature {
    /// What the feature is, as a refusal names it.
    pub fn describe(self) -> String {
        match self {
            Feature::Float64 => "64-bit floats (float64)".into(),
            Feature::Int64 => "64-bit integers (int64)".into(),
            Feature::Int64Atomics => "int64 atomics".into(),
            Feature::Subgroups => "warp operations (subgroups)".into(),
            Feature::AggregateEquality => {
                "`=`/`<>` on whole vectors, arrays, records or variants".into()
            }
            Feature::FloatMod => "float `mod` (fmod)".into(),
            Feature::Float64Math(m) => format!("float64 `{}`", m.c_name()),
            Feature::HelperSharedArray => "shared arrays inside helper functions".into(),
        }
    }

    /// What the user can do instead, when there is more to say than "another target".
    fn help(self) -> Option<&'static str> {
        match self {
            Feature::AggregateEquality => {
                Some("compare elements or fields one by one (use `match` for variants)")
            }
            Feature::HelperSharedArray => {
                Some("declare the shared array in the kernel and pass it to the helper")
            }
            _ => None,
        }
    }
}

/// A resource with a per-target or per-device limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    /// Bytes of shared arrays declared by the kernel and its helpers (C layout).
    SharedBytes,
    /// Bytes of kernel parameters in the C/PTX parameter space (each parameter at its
    /// alignment; a vector is a 64-bit pointer and a 32-bit length).
    ParamBytes,
    /// Storage buffers bound at once: one per vector parameter, the trap status word when the
    /// kernel has traps, and [`Needs::extra_buffers`].
    StorageBuffers,
    /// Nesting depth of brace-enclosed blocks in the generated function: one per block, a
    /// flat `else if` chain once, a `match` two levels (a scope and its chain), a `for` four.
    BlockNesting,
    /// Nesting depth of a statement's blocks plus its deepest expression ([`expr_depth`]):
    /// what a recursive-descent parser recurses over.
    ParserNesting,
    /// Bytes of the largest per-thread (`Local`) array (C layout).
    LocalArrayBytes,
    /// Statements and calls of the kernel with every helper call inlined ([`inlined_size`]),
    /// for writers that inline every call.
    InlinedStatements,
    /// Helpers written once as a function of their own ([`outlined_helpers`]).
    OutlinedFunctions,
    /// Bytes of function-scope variables of one function (the kernel or a helper): its
    /// per-thread arrays, mutable variables and loop counters (C layout).
    FunctionVarBytes,
    /// Elements of the largest shared or per-thread array.
    ArrayElements,
}

/// One place that needs a feature.
#[derive(Clone, Debug, PartialEq)]
pub struct Use {
    pub span: Span,
    pub label: String,
}

/// An amount of a resource and where it peaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Amount {
    pub value: u64,
    pub span: Span,
}

/// Everything a kernel needs, computed once by [`Needs::of`].
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Needs {
    pub kernel: String,
    pub span: Span,
    /// Each feature used, with its places in source order (first use first).
    pub features: Vec<(Feature, Vec<Use>)>,
    pub shared_bytes: Amount,
    pub param_bytes: Amount,
    /// The vector parameters' spans, in order (the storage buffers).
    pub vectors: Vec<Span>,
    /// Storage buffers the ABI binds besides the vectors (a runtime's parameter buffer).
    pub extra_buffers: u64,
    pub block_nesting: Amount,
    pub parser_nesting: Amount,
    /// The largest per-thread array.
    pub local_array_bytes: Amount,
    /// [`inlined_size`], at the kernel.
    pub inlined_statements: Amount,
    /// How many helpers [`outlined_helpers`] writes once, at the kernel.
    pub outlined_functions: Amount,
    /// The function with the most bytes of function-scope variables, at its largest one.
    pub function_var_bytes: Amount,
    /// The array with the most elements.
    pub array_elements: Amount,
    /// The traps' places (checked mode, bounded recursion).
    pub traps: Vec<Span>,
}

impl Needs {
    /// Walk `kernel` once.
    pub fn of(kernel: &Kernel) -> Needs {
        let mut w = Walker {
            kernel,
            needs: Needs {
                kernel: kernel.name.clone(),
                span: kernel.span,
                ..Needs::default()
            },
            wide: WideTypes::of(kernel),
            depth: 1,
            largest_shared: 0,
            in_helper: false,
            function_vars: FunctionVars::default(),
        };
        for &p in &kernel.params {
            w.var(p);
        }
        w.block(&kernel.body);
        w.end_function();
        for f in &kernel.functions {
            for &p in &f.params {
                w.var(p);
            }
            for s in [Scalar::F64, Scalar::I64] {
                if contains(kernel, &f.ret, s) {
                    // Not `f.name`: an IR helper is an instance (`id__i64`, `fib__depth2`),
                    // and the label already sits on the helper's name as written.
                    let article = if s == Scalar::I64 { "an" } else { "a" };
                    let label = format!("this helper returns {article} {} value", s.name());
                    w.add(wide_feature(s), f.span, label);
                }
            }
            w.depth = 1;
            w.in_helper = true;
            for &p in &f.params {
                if kernel.var(p).mutable {
                    w.function_var(p);
                }
            }
            w.block(&f.body);
            w.end_function();
        }
        w.needs.inlined_statements = Amount {
            value: inlined_size(kernel),
            span: kernel.span,
        };
        if !kernel.functions.is_empty() {
            w.needs.outlined_functions = Amount {
                value: outlined_helpers(kernel).iter().filter(|&&o| o).count() as u64,
                span: kernel.span,
            };
        }
        for (_, uses) in &mut w.needs.features {
            uses.sort_by_key(|u| (u.span.file, u.span.start, u.span.end));
        }
        let mut needs = w.needs;
        needs.param_bytes = param_bytes(kernel);
        needs.vectors = kernel
            .params
            .iter()
            .filter(|&&p| matches!(kernel.var(p).ty, Ty::Vector(_)))
            .map(|&p| kernel.var(p).span)
            .collect();
        needs
    }

    /// Storage buffers bound besides the vectors: the trap status word (a storage buffer on
    /// the shader targets, where a kernel in checked mode has traps) and the runtime's own.
    pub fn buffers_besides_vectors(&self) -> u64 {
        self.extra_buffers + u64::from(!self.traps.is_empty())
    }

    /// The places that need `feature` (empty when it is not needed).
    pub fn uses(&self, feature: Feature) -> &[Use] {
        self.features
            .iter()
            .find(|(f, _)| *f == feature)
            .map_or(&[], |(_, u)| u)
    }

    /// How much of `limit` the kernel takes.
    pub fn amount(&self, limit: Limit) -> Amount {
        match limit {
            Limit::SharedBytes => self.shared_bytes,
            Limit::ParamBytes => self.param_bytes,
            Limit::StorageBuffers => Amount {
                value: self.vectors.len() as u64 + self.buffers_besides_vectors(),
                span: self.span,
            },
            Limit::BlockNesting => self.block_nesting,
            Limit::ParserNesting => self.parser_nesting,
            Limit::LocalArrayBytes => self.local_array_bytes,
            Limit::InlinedStatements => self.inlined_statements,
            Limit::OutlinedFunctions => self.outlined_functions,
            Limit::FunctionVarBytes => self.function_var_bytes,
            Limit::ArrayElements => self.array_elements,
        }
    }
}

/// What a target, refined by a device, supports. Features are supported unless declared
/// missing; resources are unlimited unless declared limited.
#[derive(Clone, Debug, PartialEq)]
pub struct Support {
    pub target: Target,
    /// The language named in refusals when it is not the target's (HIP, written by the CUDA
    /// target's rules).
    pub language: Option<&'static str>,
    /// The device that refined the target's declaration, named in refusals.
    pub device: Option<String>,
    /// Notes are mostly literals: borrowed, as a support is built at every generation.
    missing: Vec<(Feature, Cow<'static, str>)>,
    limits: Vec<(Limit, u64, Cow<'static, str>)>,
}

impl Support {
    /// Everything supported, nothing limited.
    pub fn all(target: Target) -> Support {
        Support {
            target,
            language: None,
            device: None,
            missing: Vec::new(),
            limits: Vec::new(),
        }
    }

    /// Refusals name this language instead of the target's.
    pub fn in_language(mut self, name: &'static str) -> Support {
        self.language = Some(name);
        self
    }

    /// Refusals name this device.
    pub fn on_device(mut self, name: impl Into<String>) -> Support {
        self.device = Some(name.into());
        self
    }

    /// `feature` is missing; `why` says so in the refusal's note.
    pub fn without(mut self, feature: Feature, why: impl Into<Cow<'static, str>>) -> Support {
        if self.supports(feature) {
            self.missing.push((feature, why.into()));
        }
        self
    }

    /// `without` when `missing` holds.
    pub fn without_if(
        self,
        missing: bool,
        feature: Feature,
        why: impl Into<Cow<'static, str>>,
    ) -> Support {
        if missing {
            self.without(feature, why)
        } else {
            self
        }
    }

    /// At most `max` of `limit` (a tighter existing limit stays).
    pub fn limit(mut self, limit: Limit, max: u64, why: impl Into<Cow<'static, str>>) -> Support {
        match self.limits.iter_mut().find(|(l, _, _)| *l == limit) {
            Some(entry) if entry.1 <= max => {}
            Some(entry) => *entry = (limit, max, why.into()),
            None => self.limits.push((limit, max, why.into())),
        }
        self
    }

    /// `limit` when `limited` holds.
    pub fn limit_if(
        self,
        limited: bool,
        limit: Limit,
        max: u64,
        why: impl Into<Cow<'static, str>>,
    ) -> Support {
        if limited {
            self.limit(limit, max, why)
        } else {
            self
        }
    }

    pub fn supports(&self, feature: Feature) -> bool {
        !self.missing.iter().any(|(f, _)| *f == feature)
    }

    /// The limit on `limit`, if any.
    pub fn max(&self, limit: Limit) -> Option<u64> {
        self.limits
            .iter()
            .find(|(l, _, _)| *l == limit)
            .map(|(_, m, _)| *m)
    }

    /// "WGSL" or "the device `name` (GLSL)": the subject of a refusal.
    fn who(&self) -> String {
        let target = self.language.unwrap_or(self.target.display_name());
        match &self.device {
            Some(d) => format!("the device `{d}` ({target})"),
            None => target.to_string(),
        }
    }
}

/// At most this many places are labelled in one refusal; the rest are counted in a note.
pub const MAX_PLACES: usize = 5;

/// Every refusal of `needs` under `support`: one located error per missing feature (its first
/// use, further uses as secondary labels) and per exceeded limit.
pub fn refusals(needs: &Needs, support: &Support) -> Vec<Diagnostic> {
    let who = support.who();
    let mut out = Vec::new();
    for (feature, why) in &support.missing {
        let uses = needs.uses(*feature);
        let Some(first) = uses.first() else { continue };
        let mut d = Diagnostic::error(
            first.span,
            format!("{who} does not support {}", feature.describe()),
        )
        .with_label(first.label.clone())
        .with_note(why.clone());
        for u in uses[1..].iter().take(MAX_PLACES - 1) {
            d.secondary.push(Label {
                span: u.span,
                message: u.label.clone(),
            });
        }
        match uses.len().saturating_sub(MAX_PLACES) {
            0 => {}
            1 => d = d.with_note("and 1 more place"),
            n => d = d.with_note(format!("and {n} more places")),
        }
        if let Some(h) = feature.help() {
            d = d.with_help(h);
        }
        out.push(d);
    }
    for (limit, max, why) in &support.limits {
        let amount = needs.amount(*limit);
        if amount.value <= *max {
            continue;
        }
        out.push(limit_refusal(needs, *limit, amount, *max, &who, why));
    }
    // In source order, whatever order the support declares things in.
    out.sort_by_key(|d| (d.span.file, d.span.start, d.span.end));
    out
}

fn limit_refusal(
    needs: &Needs,
    limit: Limit,
    amount: Amount,
    max: u64,
    who: &str,
    why: &str,
) -> Diagnostic {
    let k = &needs.kernel;
    let n = amount.value;
    let (message, span, label, help) = match limit {
        Limit::SharedBytes => (
            format!("kernel `{k}` declares {n} bytes of shared arrays, {who} allows at most {max}"),
            amount.span,
            "the largest shared array".to_string(),
            "use smaller shared arrays, or keep the data in a vector",
        ),
        Limit::ParamBytes => (
            format!("kernel `{k}` takes {n} bytes of parameters, {who} allows at most {max}"),
            amount.span,
            "the parameter that goes over the limit".to_string(),
            "pass fewer parameters (pack scalars into a vector, or records into a vector of records)",
        ),
        Limit::StorageBuffers => {
            let first_over = max.saturating_sub(needs.buffers_besides_vectors()) as usize;
            (
                format!(
                    "kernel `{k}` needs {n} storage buffers, {who} binds at most {max} per shader stage"
                ),
                needs.vectors.get(first_over).copied().unwrap_or(needs.span),
                "this vector is over the limit".to_string(),
                "pass fewer vectors (pack several into a vector of records)",
            )
        }
        Limit::BlockNesting => (
            format!("kernel `{k}` nests blocks {n} deep, {who} allows at most {max}"),
            amount.span,
            "the deepest block".to_string(),
            "move inner blocks into helper functions",
        ),
        Limit::InlinedStatements => (
            format!("kernel `{k}` inlines to {n} statements, {who} allows at most {max}"),
            amount.span,
            "helper calls of this kernel are inlined (those taking vectors or arrays at every call)".to_string(),
            "call helpers fewer times over (each helper calling the previous one twice doubles the size)",
        ),
        Limit::OutlinedFunctions => (
            format!(
                "kernel `{k}` writes {n} helpers as functions of their own, {who} allows at most {max}"
            ),
            amount.span,
            "helpers this kernel's calls reach more than once are written once each".to_string(),
            "call fewer distinct helpers more than once (a chain of helpers each calling the previous one twice writes every one of them)",
        ),
        Limit::LocalArrayBytes => (
            format!(
                "kernel `{k}` declares a per-thread array of {n} bytes, {who} allows at most {max}"
            ),
            amount.span,
            "the largest per-thread array".to_string(),
            "use a smaller array, or keep the data in a vector",
        ),
        Limit::FunctionVarBytes => (
            format!(
                "kernel `{k}` declares {n} bytes of function-scope variables in one function, {who} allows at most {max}"
            ),
            amount.span,
            "the largest variable of that function".to_string(),
            "keep large arrays in a vector, or split the work over helpers",
        ),
        Limit::ArrayElements => (
            format!("kernel `{k}` declares an array of {n} elements, {who} allows at most {max}"),
            amount.span,
            "the largest array".to_string(),
            "use a smaller array, or keep the data in a vector",
        ),
        Limit::ParserNesting => (
            format!(
                "kernel `{k}` nests statements and expressions {n} deep, {who} allows at most {max}"
            ),
            amount.span,
            "the deepest statement".to_string(),
            "bind parts of the expression with `let`, or move inner blocks into helper functions",
        ),
    };
    Diagnostic::error(span, message)
        .with_label(label)
        .with_note(why.to_string())
        .with_help(help)
}

/// The one refusal rule: `Ok` with the kernel's needs when `support` covers them.
pub fn check(kernel: &Kernel, support: &Support) -> Result<Needs, Vec<Diagnostic>> {
    let needs = Needs::of(kernel);
    accept(&needs, support)?;
    Ok(needs)
}

/// [`check`] of needs already computed (several targets of one kernel share them).
pub fn accept(needs: &Needs, support: &Support) -> Result<(), Vec<Diagnostic>> {
    let refused = refusals(needs, support);
    if refused.is_empty() {
        Ok(())
    } else {
        Err(refused)
    }
}

/// An error for IR a writer cannot express although the analysis let it through: a Sarek bug,
/// never a refusal.
pub fn internal(span: Span, target: Target, what: impl std::fmt::Display) -> Diagnostic {
    internal_in(span, target.display_name(), what)
}

/// [`internal`] for a generator named `language` (a C dialect without a target of its own).
pub fn internal_in(span: Span, language: &str, what: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(
        span,
        format!(
            "internal error: the {language} generator cannot express {what} (a Sarek bug, please report it)"
        ),
    )
}

/// Whether `ty` holds a `scalar` anywhere (record fields, variant payloads, elements).
pub fn contains(kernel: &Kernel, ty: &Ty, scalar: Scalar) -> bool {
    match ty {
        Ty::Scalar(s) => *s == scalar,
        Ty::Unit => false,
        Ty::Record(id) => kernel
            .record(*id)
            .fields
            .iter()
            .any(|f| contains(kernel, &f.ty, scalar)),
        Ty::Variant(id) => kernel
            .variant(*id)
            .ctors
            .iter()
            .flat_map(|c| &c.fields)
            .any(|t| contains(kernel, t, scalar)),
        Ty::Vector(e) | Ty::Array { elem: e, .. } => contains(kernel, e, scalar),
    }
}

fn wide_feature(s: Scalar) -> Feature {
    if s == Scalar::F64 {
        Feature::Float64
    } else {
        Feature::Int64
    }
}

/// Kernel parameter bytes as CUDA C lays them out (each at its alignment, bool as a 32-bit
/// int, a vector as a pointer and an `int` length, the trap status word as a pointer), and the
/// parameter that first goes past each byte count.
fn param_bytes(kernel: &Kernel) -> Amount {
    let rules = C_RULES;
    let mut offset = 0u64;
    let mut span = kernel.span;
    let mut place = |size: u64, align: u64, at: Span, offset: &mut u64| {
        *offset = offset.div_ceil(align) * align + size;
        span = at;
    };
    for &p in &kernel.params {
        let info = kernel.var(p);
        match &info.ty {
            Ty::Vector(_) | Ty::Array { .. } => {
                place(8, 8, info.span, &mut offset);
                place(4, 4, info.span, &mut offset);
            }
            ty => {
                let layout = abi::elem_layout(kernel, ty, rules);
                let align = layout
                    .leaves
                    .iter()
                    .map(|(_, s)| s.size())
                    .max()
                    .unwrap_or(1);
                place(
                    u64::from(layout.stride.max(1)),
                    u64::from(align),
                    info.span,
                    &mut offset,
                );
            }
        }
    }
    if !kernel.traps().is_empty() {
        place(8, 8, kernel.span, &mut offset);
    }
    Amount {
        value: offset,
        span,
    }
}

struct Walker<'k> {
    kernel: &'k Kernel,
    /// [`contains`] for the scalars the walk asks about, records and variants decided once.
    wide: WideTypes,
    needs: Needs,
    /// Brace depth of the statement being walked (the function body is 1).
    depth: u64,
    /// Bytes of the largest shared array so far (the limit's refusal points at it).
    largest_shared: u64,
    /// Whether the statements walked are a helper's.
    in_helper: bool,
    /// Function-scope variables of the function being walked.
    function_vars: FunctionVars,
}

/// Bytes of function-scope variables of one function, and its largest one.
#[derive(Default)]
struct FunctionVars {
    bytes: u64,
    largest: u64,
    span: Span,
}

impl Walker<'_> {
    fn add(&mut self, feature: Feature, span: Span, label: String) {
        let span = if span.is_dummy() {
            self.needs.span
        } else {
            span
        };
        let uses = match self.needs.features.iter().position(|(f, _)| *f == feature) {
            Some(i) => &mut self.needs.features[i].1,
            None => {
                self.needs.features.push((feature, Vec::new()));
                &mut self.needs.features.last_mut().unwrap().1
            }
        };
        if !uses.iter().any(|u| u.span == span) {
            uses.push(Use { span, label });
        }
    }

    /// `var` is a function-scope variable of the function being walked.
    fn function_var(&mut self, var: VarId) {
        let info = self.kernel.var(var);
        let bytes = match &info.ty {
            Ty::Unit => 0,
            Ty::Array {
                elem,
                space: MemSpace::Local,
                size: Some(n),
            } => u64::from(abi::elem_layout(self.kernel, elem, C_RULES).stride)
                .saturating_mul(u64::from(*n)),
            Ty::Array { .. } | Ty::Vector(_) => 0,
            ty => u64::from(abi::elem_layout(self.kernel, ty, C_RULES).stride),
        };
        let f = &mut self.function_vars;
        f.bytes = f.bytes.saturating_add(bytes);
        if bytes > f.largest || f.span.is_dummy() {
            f.largest = bytes;
            f.span = info.span;
        }
    }

    /// The function walked is done: keep its function-scope bytes if they are the most.
    fn end_function(&mut self) {
        let f = std::mem::take(&mut self.function_vars);
        Self::peak(&mut self.needs.function_var_bytes, f.bytes, f.span);
    }

    fn peak(amount: &mut Amount, value: u64, span: Span) {
        if value > amount.value {
            *amount = Amount { value, span };
        }
    }

    /// Walk a block whose statements sit at `self.depth`, recording nesting on the way.
    fn block(&mut self, block: &Block) {
        for s in block {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        let depth = self.depth;
        Self::peak(&mut self.needs.block_nesting, depth, s.span);
        Self::peak(
            &mut self.needs.parser_nesting,
            depth + stmt_expr_depth(&s.kind),
            s.span,
        );
        self.own(s);
        match &s.kind {
            StmtKind::If {
                then_block,
                else_block,
                ..
            } => {
                self.depth = depth + 1;
                self.block(then_block);
                // A lone `if` in an `else` is written as a flat `else if`: same depth.
                let mut rest = else_block;
                while let [only] = rest.as_slice()
                    && let StmtKind::If {
                        cond,
                        then_block,
                        else_block,
                    } = &only.kind
                {
                    Self::peak(
                        &mut self.needs.parser_nesting,
                        depth + expr_depth(cond),
                        only.span,
                    );
                    self.expr(only.span, cond, true);
                    self.block(then_block);
                    rest = else_block;
                }
                self.block(rest);
            }
            // A scope for the bounds, the entry test, the loop, the body: the longest
            // spelling of a `for` (WGSL's); other targets take fewer levels.
            StmtKind::For { body, .. } => {
                self.depth = depth + 4;
                self.block(body);
            }
            StmtKind::While { body, .. } | StmtKind::Block(body) => {
                self.depth = depth + 1;
                self.block(body);
            }
            // A scope for the scrutinee around the arms' chain.
            StmtKind::Match { arms, .. } => {
                self.depth = depth + 2;
                for arm in arms {
                    self.block(&arm.body);
                }
            }
            _ => {}
        }
        self.depth = depth;
    }

    /// What one statement declares and evaluates itself (not its nested blocks).
    fn own(&mut self, s: &Stmt) {
        let span = s.span;
        match &s.kind {
            StmtKind::Let { var, init } => {
                self.var(*var);
                if self.kernel.var(*var).mutable || init.is_none() {
                    self.function_var(*var);
                }
                // A wide variable stands for its initialiser's wide value (a `let` statement
                // spans the rest of its block, a poor place to point at).
                let ty = &self.kernel.var(*var).ty;
                let narrow =
                    !self.wide.contains(ty, Scalar::F64) && !self.wide.contains(ty, Scalar::I64);
                if let Some(e) = init {
                    self.expr(span, e, narrow);
                }
            }
            StmtKind::Array { var } => {
                self.var(*var);
                self.function_var(*var);
                let shared = matches!(
                    self.kernel.var(*var).ty,
                    Ty::Array {
                        space: MemSpace::Shared,
                        ..
                    }
                );
                if shared && self.in_helper {
                    let label = "shared array declared in a helper".into();
                    self.add(Feature::HelperSharedArray, span, label);
                }
            }
            StmtKind::Assign { place, value } => {
                self.place(span, place);
                self.expr(span, value, true);
            }
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) => self.expr(span, e, true),
            StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => self.expr(span, cond, true),
            StmtKind::For {
                var, start, end, ..
            } => {
                self.var(*var);
                // The counter the loop advances (`var cur: i32`).
                self.function_var(*var);
                self.expr(span, start, true);
                self.expr(span, end, true);
            }
            StmtKind::Match {
                scrutinee, arms, ..
            } => {
                self.expr(span, scrutinee, true);
                for b in arms.iter().flat_map(|a| a.bindings.iter().flatten()) {
                    self.var(*b);
                }
            }
            StmtKind::Trap(_) => self.needs.traps.push(span),
            StmtKind::Block(_)
            | StmtKind::Barrier
            | StmtKind::Fence { .. }
            | StmtKind::Return(None)
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Native(_) => {}
        }
    }

    fn place(&mut self, span: Span, place: &LValue) {
        match place {
            LValue::Var(_) => {}
            LValue::Index { index, .. } => self.expr(span, index, true),
            LValue::Field { base, .. } => self.place(span, base),
        }
    }

    fn var(&mut self, v: VarId) {
        let info = self.kernel.var(v);
        for s in [Scalar::F64, Scalar::I64] {
            if self.wide.contains(&info.ty, s) {
                let label = format!("`{}` has a type containing {}", info.name, s.name());
                self.add(wide_feature(s), info.span, label);
            }
        }
        if let Ty::Array {
            elem,
            space: MemSpace::Shared,
            size: Some(n),
        } = &info.ty
            && *n != crate::ir::SIZE_BLOCK_DIM_X
        {
            let stride = abi::elem_layout(self.kernel, elem, C_RULES).stride;
            let bytes = u64::from(stride).saturating_mul(u64::from(*n));
            let shared = &mut self.needs.shared_bytes;
            shared.value = shared.value.saturating_add(bytes);
            if bytes > self.largest_shared || shared.span.is_dummy() {
                self.largest_shared = bytes;
                shared.span = info.span;
            }
        }
        if let Ty::Array { size: Some(n), .. } = &info.ty
            && *n != crate::ir::SIZE_BLOCK_DIM_X
        {
            Self::peak(&mut self.needs.array_elements, u64::from(*n), info.span);
        }
        if let Ty::Array {
            elem,
            space: MemSpace::Local,
            size: Some(n),
        } = &info.ty
        {
            let stride = abi::elem_layout(self.kernel, elem, C_RULES).stride;
            let bytes = u64::from(stride).saturating_mul(u64::from(*n));
            let local = &mut self.needs.local_array_bytes;
            if bytes > local.value {
                *local = Amount {
                    value: bytes,
                    span: info.span,
                };
            }
        }
    }

    /// Record what `e` needs, located at its statement. `wide`: whether a 64-bit value it
    /// computes counts as a use (not when a variable declared with it already does).
    fn expr(&mut self, span: Span, e: &Expr, wide: bool) {
        if wide {
            for s in [Scalar::F64, Scalar::I64] {
                if self.wide.contains(&e.ty, s) {
                    let article = if s == Scalar::I64 { "an" } else { "a" };
                    let label = format!("this statement computes {article} {} value", s.name());
                    self.add(wide_feature(s), span, label);
                }
            }
        }
        match &e.kind {
            ExprKind::Binary { op, lhs, .. } => {
                if matches!(op, BinOp::Eq | BinOp::Ne) && lhs.ty.scalar().is_none() {
                    let label = "`=`/`<>` applied to a non-scalar value".into();
                    self.add(Feature::AggregateEquality, span, label);
                }
                if *op == BinOp::Rem && lhs.ty.scalar().is_some_and(|s| s.is_float()) {
                    self.add(Feature::FloatMod, span, "float `mod` here".into());
                }
            }
            ExprKind::Intrinsic { op, args } => match op {
                Intrinsic::Warp(_) | Intrinsic::Geometry(Geometry::WarpSize) => {
                    self.add(Feature::Subgroups, span, "warp operation used here".into());
                }
                Intrinsic::Atomic(_) => {
                    let elem = args.first().and_then(|a| a.ty.elem()).and_then(Ty::scalar);
                    if elem == Some(Scalar::I64) || e.ty.scalar() == Some(Scalar::I64) {
                        self.add(Feature::Int64Atomics, span, "int64 atomic here".into());
                    }
                }
                Intrinsic::Math(m) if e.ty.scalar() == Some(Scalar::F64) => {
                    let label = format!("float64 `{}` here", m.c_name());
                    self.add(Feature::Float64Math(*m), span, label);
                }
                _ => {}
            },
            _ => {}
        }
        for sub in e.children() {
            self.expr(span, sub, wide);
        }
    }
}

/// Which records and variants hold a float64 or an int64 (the walk asks of every node).
struct WideTypes {
    records: Vec<[bool; 2]>,
    variants: Vec<[bool; 2]>,
}

impl WideTypes {
    fn of(kernel: &Kernel) -> Self {
        let both = |ty: Ty| [Scalar::F64, Scalar::I64].map(|s| contains(kernel, &ty, s));
        WideTypes {
            records: (0..kernel.records.len())
                .map(|i| both(Ty::Record(crate::ir::RecordId(i as u32))))
                .collect(),
            variants: (0..kernel.variants.len())
                .map(|i| both(Ty::Variant(crate::ir::VariantId(i as u32))))
                .collect(),
        }
    }

    /// [`contains`] for `scalar` float64 or int64.
    fn contains(&self, ty: &Ty, scalar: Scalar) -> bool {
        let slot = usize::from(scalar == Scalar::I64);
        match ty {
            Ty::Scalar(s) => *s == scalar,
            Ty::Unit => false,
            Ty::Record(id) => self.records.get(id.0 as usize).is_some_and(|w| w[slot]),
            Ty::Variant(id) => self.variants.get(id.0 as usize).is_some_and(|w| w[slot]),
            Ty::Vector(e) | Ty::Array { elem: e, .. } => self.contains(e, scalar),
        }
    }
}

const C_RULES: LayoutRules = LayoutRules::C {
    bool_repr: Stored::BoolAsU32,
};

/// Nesting depth of an expression tree as a recursive-descent parser of a C-like spelling
/// sees it: a leaf is 1, an operator, call, index or conversion 2 (its operand in parentheses
/// or as an argument, itself perhaps inside a conversion), a shift 3 (its count is converted
/// and masked as well).
pub fn expr_depth(e: &Expr) -> u64 {
    let own = match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => 1,
        ExprKind::Binary {
            op: BinOp::Shl | BinOp::LShr | BinOp::AShr,
            ..
        } => 3,
        _ => 2,
    };
    own + e.children().map(expr_depth).max().unwrap_or(0)
}

/// The deepest expression a statement evaluates itself (not in its nested blocks).
fn stmt_expr_depth(kind: &StmtKind) -> u64 {
    fn place(p: &LValue) -> u64 {
        match p {
            LValue::Var(_) => 0,
            LValue::Index { index, .. } => expr_depth(index),
            LValue::Field { base, .. } => place(base),
        }
    }
    match kind {
        StmtKind::Let { init, .. } => init.as_ref().map_or(0, expr_depth),
        StmtKind::Assign { place: p, value } => place(p).max(expr_depth(value)),
        StmtKind::Expr(e) | StmtKind::Return(Some(e)) => expr_depth(e),
        StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => expr_depth(cond),
        StmtKind::For { start, end, .. } => expr_depth(start).max(expr_depth(end)),
        StmtKind::Match { scrutinee, .. } => expr_depth(scrutinee),
        _ => 0,
    }
}

/// The statements and calls of `kernel` as the PTX writer emits it, saturating: each helper
/// inlined at its calls except those [`outlined_helpers`] writes once (a call of one counts
/// 1, its body once).
pub fn inlined_size(kernel: &Kernel) -> u64 {
    if kernel.functions.is_empty() {
        // No calls: most kernels, and every target asks.
        return statement_count(&kernel.body);
    }
    let plan = HelperPlan::of(kernel);
    let outlined = plan.outlined();
    let n = kernel.functions.len();
    // The size of each helper's body with its non-outlined calls expanded.
    let mut emitted = vec![0u64; n];
    let expanded = |callees: &[FuncId], statements: u64, emitted: &[u64]| {
        callees.iter().fold(statements, |acc, g| {
            let g = g.0 as usize;
            let body = match outlined.get(g) {
                Some(false) => emitted.get(g).copied().unwrap_or(0),
                _ => 0,
            };
            acc.saturating_add(body).saturating_add(1)
        })
    };
    for &f in &plan.order {
        emitted[f] = expanded(&plan.callees[f], plan.statements[f], &emitted);
    }
    let body = expanded(
        &calls_in(&kernel.body),
        statement_count(&kernel.body),
        &emitted,
    );
    (0..n)
        .filter(|&f| outlined[f])
        .fold(body, |acc, f| acc.saturating_add(emitted[f]))
}

/// Statements and calls a helper contributes with every call below it inlined, times its
/// copies, beyond which [`outlined_helpers`] writes it once.
pub const OUTLINE_LIMIT: u64 = 256;

/// Which helpers the PTX writer emits once as a `.func` instead of inlining at each call.
///
/// Inlining suits small helpers (ptxas optimises across the call, and most helpers are
/// called once), but bounded recursion makes chains where each level calls the next twice:
/// `fib` inlined 8 levels deep is 2^8 copies. A helper is outlined when it would be inlined
/// more than once and its copies together exceed [`OUTLINE_LIMIT`]; helpers taking vectors or
/// arrays stay inlined (their memory is bound at the call), as do those with native code.
pub fn outlined_helpers(kernel: &Kernel) -> Vec<bool> {
    HelperPlan::of(kernel).outlined()
}

/// The call graph facts [`outlined_helpers`] and [`inlined_size`] decide from.
struct HelperPlan<'k> {
    kernel: &'k Kernel,
    /// Each helper's calls, one entry per call site.
    callees: Vec<Vec<FuncId>>,
    /// Each helper's own statements.
    statements: Vec<u64>,
    /// Callees before callers (the IR has no recursion left).
    order: Vec<usize>,
}

impl<'k> HelperPlan<'k> {
    fn of(kernel: &'k Kernel) -> Self {
        let n = kernel.functions.len();
        let callees: Vec<Vec<FuncId>> =
            kernel.functions.iter().map(|f| calls_in(&f.body)).collect();
        let statements = kernel
            .functions
            .iter()
            .map(|f| statement_count(&f.body))
            .collect();
        // Depth-first post-order, iterative: helper chains can be thousands long.
        let mut order = Vec::with_capacity(n);
        let mut seen = vec![false; n];
        for root in 0..n {
            if seen[root] {
                continue;
            }
            seen[root] = true;
            let mut stack = vec![(root, 0usize)];
            while let Some((f, next)) = stack.pop() {
                match callees[f].get(next) {
                    Some(g) => {
                        stack.push((f, next + 1));
                        let g = g.0 as usize;
                        if g < n && !seen[g] {
                            seen[g] = true;
                            stack.push((g, 0));
                        }
                    }
                    None => order.push(f),
                }
            }
        }
        HelperPlan {
            kernel,
            callees,
            statements,
            order,
        }
    }

    fn outlined(&self) -> Vec<bool> {
        let (kernel, n) = (self.kernel, self.kernel.functions.len());
        // Size with every call below inlined.
        let mut size = vec![0u64; n];
        for &f in &self.order {
            size[f] = self.callees[f].iter().fold(self.statements[f], |acc, g| {
                let callee = size.get(g.0 as usize).copied().unwrap_or(0);
                acc.saturating_add(callee).saturating_add(1)
            });
        }
        let eligible = |f: &crate::ir::Function| {
            let mut native = false;
            crate::ir::visit::for_each_stmt(&f.body, &mut |s| {
                native |= matches!(s.kind, StmtKind::Native(_));
            });
            !native
                && f.params
                    .iter()
                    .all(|&p| !matches!(kernel.var(p).ty, Ty::Vector(_) | Ty::Array { .. }))
        };
        // Copies of each helper in the output, decided callers first.
        let mut copies = vec![0u64; n];
        for g in calls_in(&kernel.body) {
            if let Some(c) = copies.get_mut(g.0 as usize) {
                *c = c.saturating_add(1);
            }
        }
        let mut outlined = vec![false; n];
        for &f in self.order.iter().rev() {
            outlined[f] = copies[f] >= 2
                && copies[f].saturating_mul(size[f]) > OUTLINE_LIMIT
                && eligible(&kernel.functions[f]);
            let each = if outlined[f] { 1 } else { copies[f] };
            for g in &self.callees[f] {
                if let Some(c) = copies.get_mut(g.0 as usize) {
                    *c = c.saturating_add(each);
                }
            }
        }
        outlined
    }
}

/// The helper calls in `block`, one per call site, in order.
fn calls_in(block: &Block) -> Vec<FuncId> {
    use crate::ir::visit::{StmtVisitor, walk_block};
    struct Calls(Vec<FuncId>);
    impl Calls {
        fn expr(&mut self, e: &Expr) {
            if let ExprKind::Call { func, .. } = &e.kind {
                self.0.push(*func);
            }
            e.children().for_each(|c| self.expr(c));
        }
    }
    impl StmtVisitor for Calls {
        fn var(&mut self, _: VarId) {}
        fn expr(&mut self, _: Span, e: &Expr) {
            Calls::expr(self, e);
        }
    }
    let mut calls = Calls(Vec::new());
    walk_block(&mut calls, block);
    calls.0
}

fn statement_count(block: &Block) -> u64 {
    let mut statements = 0u64;
    crate::ir::visit::for_each_stmt(block, &mut |_| statements += 1);
    statements
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::SourceMap;

    fn lower(src: &str) -> (SourceMap, Kernel) {
        let mut sources = SourceMap::new();
        let file = sources.add("k.sarek", src);
        let program = crate::check(&sources, file)
            .unwrap_or_else(|d| panic!("{}", crate::diag::render_all(&d, &sources, false)));
        let kernel = crate::lower_kernel(&program, "k").unwrap();
        (sources, kernel)
    }

    fn lines(sources: &SourceMap, uses: &[Use]) -> Vec<usize> {
        uses.iter()
            .map(|u| sources.line_col(u.span.file, u.span.start).0)
            .collect()
    }

    const MIXED: &str = "\
let%kernel k (v : float64 vector) (h : int64 vector) (n : int32) =
  let i = global_thread_id in
  let s = warp_shuffle_xor n 1 in
  if i < n then begin
    v.(i) <- sqrt v.(i) +. sin v.(i);
    ignore (atomic_add h 0 1L);
    v.(i) <- v.(i) +. float64 s
  end
";

    #[test]
    fn every_feature_is_found_with_its_places_in_source_order() {
        let (sources, kernel) = lower(MIXED);
        let needs = Needs::of(&kernel);
        assert_eq!(lines(&sources, needs.uses(Feature::Float64)), [1, 5, 7]);
        // `h` (line 1) and the atomic's int64 result (line 6).
        assert_eq!(lines(&sources, needs.uses(Feature::Int64)), [1, 6]);
        assert_eq!(lines(&sources, needs.uses(Feature::Int64Atomics)), [6]);
        assert_eq!(lines(&sources, needs.uses(Feature::Subgroups)), [3]);
        assert_eq!(
            lines(&sources, needs.uses(Feature::Float64Math(MathFn::Sin))),
            [5]
        );
        assert_eq!(
            lines(&sources, needs.uses(Feature::Float64Math(MathFn::Sqrt))),
            [5]
        );
        assert!(needs.uses(Feature::FloatMod).is_empty());
        assert!(needs.uses(Feature::AggregateEquality).is_empty());
        // Two vectors (pointer + length each) and an int32, as CUDA lays them out.
        assert_eq!(needs.param_bytes.value, 12 + 4 + 12 + 4);
        assert_eq!(needs.vectors.len(), 2);
    }

    #[test]
    fn a_missing_feature_is_one_error_at_its_first_use_naming_target_and_device() {
        let (sources, kernel) = lower(MIXED);
        let support = Support::all(Target::Glsl)
            .on_device("tiny")
            .without(Feature::Float64, "it lacks shaderFloat64")
            .without(Feature::Int64Atomics, "it lacks shaderBufferInt64Atomics")
            // Declared but not needed: no error.
            .without(Feature::FloatMod, "no fmod");
        let err = check(&kernel, &support).unwrap_err();
        assert_eq!(err.len(), 2, "{err:?}");
        let (f64, atomics) = (&err[0], &err[1]);
        assert_eq!(
            f64.message,
            "the device `tiny` (GLSL) does not support 64-bit floats (float64)"
        );
        assert_eq!(sources.line_col(f64.span.file, f64.span.start).0, 1);
        assert_eq!(f64.secondary.len(), 2);
        assert_eq!(f64.notes, ["it lacks shaderFloat64"]);
        assert_eq!(
            atomics.message,
            "the device `tiny` (GLSL) does not support int64 atomics"
        );
        assert_eq!(sources.line_col(atomics.span.file, atomics.span.start).0, 6);
        // Without the device, the target is the subject.
        let target_only = Support::all(Target::Metal).without(Feature::Float64, "no double");
        let err = check(&kernel, &target_only).unwrap_err();
        assert_eq!(
            err[0].message,
            "Metal does not support 64-bit floats (float64)"
        );
        assert!(check(&kernel, &Support::all(Target::Cuda)).is_ok());
    }

    #[test]
    fn places_past_five_are_counted() {
        let body: String = (0..8)
            .map(|j| format!("  v.({j}) <- v.({j}) +. 1.0d;\n"))
            .collect();
        let (_, kernel) = lower(&format!(
            "let%kernel k (v : float64 vector) =\n{body}  v.(9) <- 0.0d\n"
        ));
        let err = check(
            &kernel,
            &Support::all(Target::Metal).without(Feature::Float64, "no double"),
        )
        .unwrap_err();
        // `v` and nine statements: one error, four more labels, five counted.
        assert_eq!(err.len(), 1);
        assert_eq!(err[0].secondary.len(), MAX_PLACES - 1);
        assert_eq!(err[0].notes, ["no double", "and 5 more places"]);
    }

    #[test]
    fn limits_keep_the_tighter_value_and_refuse_past_it() {
        let src = "\
let%kernel k (v : int32 vector) =
  let%shared (a : int32) = 1024 in
  let%shared (b : float64) = 2048 in
  v.(thread_idx_x) <- a.(0);
  b.(0) <- 1.0d
";
        let (sources, kernel) = lower(src);
        let needs = Needs::of(&kernel);
        assert_eq!(needs.shared_bytes.value, 4 * 1024 + 8 * 2048);
        // Located at the largest array, `b`.
        assert_eq!(
            sources
                .line_col(needs.shared_bytes.span.file, needs.shared_bytes.span.start)
                .0,
            3
        );
        let support = Support::all(Target::Cuda)
            .limit(Limit::SharedBytes, 48 * 1024, "target")
            .on_device("small")
            .limit(Limit::SharedBytes, 16 * 1024, "device")
            .limit(Limit::SharedBytes, 32 * 1024, "looser: ignored");
        assert_eq!(support.max(Limit::SharedBytes), Some(16 * 1024));
        let err = refusals(&needs, &support);
        assert_eq!(err.len(), 1);
        assert_eq!(
            err[0].message,
            "kernel `k` declares 20480 bytes of shared arrays, the device `small` (CUDA C) allows at most 16384"
        );
        assert_eq!(err[0].notes, ["device"]);
        let roomy = Support::all(Target::Cuda).limit(Limit::SharedBytes, 20480, "exactly");
        assert!(refusals(&needs, &roomy).is_empty());
    }

    /// An `if` chain of `n` statements written `else if`, and the same chain with a second
    /// statement in each `else` (so that every `if` nests in the previous one's block).
    fn chains(n: usize) -> (Needs, Needs) {
        let arms: Vec<String> = (0..n)
            .map(|j| format!("if x = {j} then v.(0) <- {j}"))
            .collect();
        let (_, flat) = lower(&format!(
            "let%kernel k (v : int32 vector) =\n  let x = v.(1) in\n  {}\n  else v.(0) <- 0\n",
            arms.join("\n  else ")
        ));
        // Nest by hand: the source's own nesting limit stops short of WGSL's.
        let mut nested = flat.clone();
        let [.., last] = nested.body.as_mut_slice() else {
            unreachable!()
        };
        fn nest(s: &mut crate::ir::Stmt) {
            if let StmtKind::If { else_block, .. } = &mut s.kind
                && let [only] = else_block.as_mut_slice()
            {
                nest(only);
                else_block.insert(
                    0,
                    crate::ir::Stmt {
                        kind: StmtKind::Barrier,
                        span: Span::DUMMY,
                    },
                );
            }
        }
        nest(last);
        (Needs::of(&flat), Needs::of(&nested))
    }

    #[test]
    fn an_else_if_chain_is_flat_and_real_nesting_counts() {
        let (flat, nested) = chains(40);
        // The kernel body is level 1, an `if`'s blocks level 2, however long the chain.
        assert_eq!(flat.block_nesting.value, 2);
        assert_eq!(nested.block_nesting.value, 41);
        let wgsl = crate::back::support::wgsl(&crate::TargetOptions::default());
        assert!(refusals(&flat, &wgsl).is_empty());
        let (flat, deep) = chains(130);
        assert!(refusals(&flat, &wgsl).is_empty());
        let err = refusals(&deep, &wgsl);
        assert_eq!(err.len(), 1, "{err:?}");
        assert_eq!(
            err[0].message,
            "kernel `k` nests blocks 131 deep, WGSL allows at most 127"
        );
    }

    #[test]
    fn expression_depth_counts_parser_levels() {
        let (_, kernel) = lower(
            "let%kernel k (v : int32 vector) =\n  let x = v.(0) in\n  v.(1) <- (x + 1) lsl (x - 1)\n",
        );
        let needs = Needs::of(&kernel);
        // Statement at level 1; shift 3 + subtraction 2 + leaf 1.
        assert_eq!(needs.parser_nesting.value, 1 + 3 + 2 + 1);
    }

    #[test]
    fn a_for_loop_counts_as_written_in_wgsl() {
        // WGSL: `{` bounds `if (..) {` `loop {` `{` body: the body's statements at level 5.
        let (_, kernel) = lower(
            "let%kernel k (v : int32 vector) =\n  for j = 0 to 3 do\n    v.(j) <- j\n  done\n",
        );
        assert_eq!(Needs::of(&kernel).block_nesting.value, 5);
    }
}
