//! What a kernel needs from a device that its generator does not check: 64-bit scalars
//! (Vulkan's `shaderInt64` / `shaderFloat64`) and the number of storage buffers one shader
//! stage may bind. A backend asks before it builds anything, so a missing capability is a
//! [`RuntimeError::Refused`] located at the kernel's uses and naming the device, not a
//! pipeline-creation failure.
//!
//! Generators already refuse what their target cannot express and what the
//! [`TargetOptions`](sarek_compiler::TargetOptions) rule out (float64 on WGSL, warp operations
//! without subgroups); this module covers the needs the options do not describe.

use crate::device::RuntimeError;
use sarek_compiler::ir::visit::{StmtVisitor, walk_block};
use sarek_compiler::ir::{Expr, ExprKind, Kernel, Ty, VarId};
use sarek_compiler::types::Scalar;
use sarek_compiler::{Diagnostic, Span, Target};

/// Every place `kernel` needs `scalar`, in source order: variables whose type contains it
/// (label names the variable), statements computing it, helpers returning it. One entry per
/// span.
pub fn scalar_uses(kernel: &Kernel, scalar: Scalar) -> Vec<(Span, String)> {
    let mut w = Uses {
        kernel,
        scalar,
        found: Vec::new(),
    };
    for &p in &kernel.params {
        w.var(p);
    }
    walk_block(&mut w, &kernel.body);
    for f in &kernel.functions {
        for &p in &f.params {
            w.var(p);
        }
        if contains(kernel, &f.ret, scalar) {
            w.add(
                f.span,
                format!("helper `{}` returns {}", f.name, scalar.name()),
            );
        }
        walk_block(&mut w, &f.body);
    }
    w.found.sort_by_key(|(s, _)| (s.file, s.start, s.end));
    w.found
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

/// The refusal of a kernel that uses `scalar` on a device without it: one diagnostic per use
/// (merged into one located error by [`RuntimeError::refused`]), `None` when the kernel does
/// not use it. `feature` names the missing device feature (`shaderInt64`).
pub fn refuse_scalar(
    kernel: &Kernel,
    scalar: Scalar,
    target: Target,
    device: &str,
    feature: &str,
) -> Option<RuntimeError> {
    let uses = scalar_uses(kernel, scalar);
    if uses.is_empty() {
        return None;
    }
    let what = match scalar {
        Scalar::F64 => "64-bit floats",
        Scalar::I64 => "64-bit integers",
        _ => "this scalar type",
    };
    let diags = uses.into_iter().map(|(span, label)| {
        Diagnostic::error(
            span,
            format!(
                "the device `{device}` has no {what} ({feature}): {} cannot use `{}` on it",
                target.display_name(),
                scalar.name()
            ),
        )
        .with_label(label)
        .with_note("backends whose device has them (cpu, opencl, cuda) still run this kernel")
    });
    Some(RuntimeError::refused(target, &kernel.name, diags))
}

/// The refusal of a kernel with more vector parameters than the device binds storage
/// buffers in one shader stage (`extra` buffers are bound besides the vectors), located at
/// the first vector over the limit.
pub fn refuse_buffer_count(
    kernel: &Kernel,
    extra: u32,
    limit: u32,
    target: Target,
    device: &str,
) -> Option<RuntimeError> {
    let vectors: Vec<VarId> = kernel
        .params
        .iter()
        .copied()
        .filter(|&p| matches!(kernel.var(p).ty, Ty::Vector(_)))
        .collect();
    let needed = vectors.len() as u32 + extra;
    if needed <= limit {
        return None;
    }
    let first_over = limit.saturating_sub(extra) as usize;
    let span = vectors
        .get(first_over)
        .map_or(kernel.span, |&v| kernel.var(v).span);
    let diag = Diagnostic::error(
        span,
        format!(
            "kernel `{}` needs {needed} storage buffers, the device `{device}` binds at most \
             {limit} per shader stage ({})",
            kernel.name,
            target.display_name()
        ),
    )
    .with_label("this vector is over the limit")
    .with_help("pass fewer vectors (pack several into a vector of records)");
    Some(RuntimeError::refused(target, &kernel.name, [diag]))
}

struct Uses<'k> {
    kernel: &'k Kernel,
    scalar: Scalar,
    found: Vec<(Span, String)>,
}

impl Uses<'_> {
    fn add(&mut self, span: Span, label: String) {
        if !span.is_dummy() && !self.found.iter().any(|(s, _)| *s == span) {
            self.found.push((span, label));
        }
    }
}

impl StmtVisitor for Uses<'_> {
    /// A wide variable is reported at its name; its initialiser only when narrow (a `let`
    /// statement spans the rest of its block).
    fn let_(&mut self, span: Span, var: VarId, init: Option<&Expr>) {
        if contains(self.kernel, &self.kernel.var(var).ty, self.scalar) {
            self.var(var);
        } else if let Some(e) = init {
            self.expr(span, e);
        }
    }

    fn var(&mut self, v: VarId) {
        let info = self.kernel.var(v);
        if contains(self.kernel, &info.ty, self.scalar) {
            let label = format!(
                "`{}` has a type containing {}",
                info.name,
                self.scalar.name()
            );
            self.add(info.span, label);
        }
    }

    fn expr(&mut self, span: Span, e: &Expr) {
        if contains(self.kernel, &e.ty, self.scalar) {
            let label = format!("this statement computes a {} value", self.scalar.name());
            self.add(span, label);
            // One place per statement is enough: its operands are at the same span.
            return;
        }
        match &e.kind {
            // A variable of a wide type is reported where it is declared.
            ExprKind::Lit(_) | ExprKind::Var(_) => {}
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(span, lhs);
                self.expr(span, rhs);
            }
            ExprKind::Unary { operand: x, .. }
            | ExprKind::Index { index: x, .. }
            | ExprKind::Field { base: x, .. }
            | ExprKind::Tag(x)
            | ExprKind::Payload { value: x, .. } => self.expr(span, x),
            ExprKind::Record { fields: xs, .. }
            | ExprKind::Ctor { fields: xs, .. }
            | ExprKind::Call { args: xs, .. }
            | ExprKind::Intrinsic { args: xs, .. } => xs.iter().for_each(|x| self.expr(span, x)),
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                self.expr(span, cond);
                self.expr(span, then_value);
                self.expr(span, else_value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sarek_compiler::SourceMap;

    fn lower(src: &str) -> (SourceMap, Kernel) {
        let mut sources = SourceMap::new();
        let file = sources.add("k.sarek", src);
        let program = sarek_compiler::check(&sources, file).unwrap();
        let kernel = sarek_compiler::lower_kernel(&program, "k").unwrap();
        (sources, kernel)
    }

    const INT64: &str = "let%kernel k (v : float32 vector) (n : int32) =\n\
                         \x20 let i = global_thread_id in\n\
                         \x20 let w = int64 i in\n\
                         \x20 if i < n then v.(i) <- float32 (w + int64 n)\n";

    #[test]
    fn int64_uses_are_found_in_source_order() {
        let (sources, kernel) = lower(INT64);
        let lines: Vec<String> = scalar_uses(&kernel, Scalar::I64)
            .iter()
            .map(|(s, _)| sources.location(*s))
            .collect();
        // `let w = int64 i` (line 3) and the store computing `w + int64 n` (line 4).
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("k.sarek:3:"), "{lines:?}");
        assert!(lines[1].starts_with("k.sarek:4:"), "{lines:?}");
        assert!(scalar_uses(&kernel, Scalar::F64).is_empty());
    }

    #[test]
    fn a_missing_scalar_is_one_located_refusal_naming_target_and_device() {
        let (sources, kernel) = lower(INT64);
        assert!(
            refuse_scalar(&kernel, Scalar::F64, Target::Glsl, "dev", "shaderFloat64").is_none()
        );
        let Some(RuntimeError::Refused {
            target,
            kernel: name,
            diagnostics,
        }) = refuse_scalar(&kernel, Scalar::I64, Target::Glsl, "dev", "shaderInt64")
        else {
            panic!("int64 not refused")
        };
        assert_eq!((target, name.as_str()), (Target::Glsl, "k"));
        // Both uses in one error: the first as its location, the second as a secondary label.
        assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
        let d = &diagnostics[0];
        assert!(sources.location(d.span).starts_with("k.sarek:3:"));
        assert_eq!(d.secondary.len(), 1);
        assert!(
            sources
                .location(d.secondary[0].span)
                .starts_with("k.sarek:4:")
        );
        for word in ["GLSL", "`dev`", "shaderInt64", "int64"] {
            assert!(d.message.contains(word), "{word}: {}", d.message);
        }
        let shown = sarek_compiler::diag::render_all(&diagnostics, &sources, false);
        assert_eq!(shown.matches("error:").count(), 1, "{shown}");
        assert!(shown.contains("k.sarek:3:"), "{shown}");
    }

    #[test]
    fn too_many_vectors_are_refused_at_the_first_over_the_limit() {
        let src = "let%kernel k (a : int32 vector) (b : int32 vector) (c : int32 vector) =\n\
                   \x20 a.(0) <- b.(0) + c.(0)\n";
        let (sources, kernel) = lower(src);
        assert!(refuse_buffer_count(&kernel, 0, 3, Target::Wgsl, "dev").is_none());
        for (extra, limit) in [(0, 2), (1, 3)] {
            let Some(RuntimeError::Refused { diagnostics, .. }) =
                refuse_buffer_count(&kernel, extra, limit, Target::Wgsl, "dev")
            else {
                panic!("not refused with {extra} extra and a limit of {limit}")
            };
            // `c` is the third vector: column of "(c" + 1 on line 1.
            let col = src.find("(c :").unwrap() + 2;
            assert_eq!(
                sources.location(diagnostics[0].span),
                format!("k.sarek:1:{col}")
            );
            let needs = format!("needs {} storage buffers", 3 + extra);
            assert!(
                diagnostics[0].message.contains(&needs),
                "{}",
                diagnostics[0].message
            );
        }
    }

    #[test]
    fn identical_reasons_merge_and_distinct_ones_stay() {
        let mut sources = SourceMap::new();
        let file = sources.add("m.sarek", "a\nb\nc\nd\ne\nf\ng\n");
        let at = |line: usize| Span::new(file, 2 * line, 2 * line + 1);
        let same = (0..7).map(|l| Diagnostic::error(at(l), "no floats").with_note("n"));
        let other = Diagnostic::error(at(1), "no warps");
        let RuntimeError::Refused { diagnostics, .. } =
            RuntimeError::refused(Target::Wgsl, "k", same.chain([other]))
        else {
            unreachable!()
        };
        assert_eq!(diagnostics.len(), 2);
        let d = &diagnostics[0];
        assert_eq!(d.span, at(0));
        // Six more places: four labelled, two counted; the shared note once.
        assert_eq!(d.secondary.len(), crate::device::MAX_EXTRA_PLACES);
        assert_eq!(
            d.notes,
            vec!["n".to_string(), "and 2 more places".to_string()]
        );
        assert_eq!(diagnostics[1].message, "no warps");
    }
}
