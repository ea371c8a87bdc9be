//! A device's refinement of its target's support, checked before anything is built.
//!
//! Each backend starts from its target's declaration (`sarek_compiler::back::support`) and
//! adds what its device lacks or limits (Vulkan's `shaderInt64` / `shaderFloat64`, the storage
//! buffers one shader stage binds); [`check`] runs the compiler's one refusal rule
//! ([`sarek_compiler::ir::analysis`]) against it, so a missing capability is a
//! [`RuntimeError::Refused`] located at the kernel's uses and naming the device, worded as
//! `sarek compile` words a target's refusals, never a pipeline-creation failure.

use crate::device::RuntimeError;
use sarek_compiler::ir::Kernel;
use sarek_compiler::ir::analysis::{self, Limit, Needs, Support};

/// The kernel's needs when `support` (with [`every_device`]'s limits) covers them, else the
/// located refusal.
pub fn check(kernel: &Kernel, support: &Support) -> Result<Needs, RuntimeError> {
    let support = every_device(support.clone());
    analysis::check(kernel, &support)
        .map_err(|d| RuntimeError::refused(support.target, &kernel.name, d))
}

/// The largest per-thread (`Local`) array any device takes, in bytes: CUDA's local memory per
/// thread, as on `interp` and `cpu` ([`crate::limits::HOST_MAX_LOCAL_ARRAY_BYTES`]).
pub const DEVICE_MAX_LOCAL_ARRAY_BYTES: u64 = 512 << 10;

/// Limits every device has whatever its target declares. lavapipe, wgpu on it and PoCL
/// allocate a per-thread array for every thread of a launch at once: a kernel with a 400 MB
/// `create_array` used 23 GB before the kernel was killed (wgpu), hung (vulkan) or crashed
/// PoCL, where it must be refused like any other resource past a device's limit.
fn every_device(support: Support) -> Support {
    support.limit(
        Limit::LocalArrayBytes,
        DEVICE_MAX_LOCAL_ARRAY_BYTES,
        "a device gives a thread at most 512 KiB per array, as CUDA does",
    )
}

/// [`check`] for needs already computed (a backend that learnt more after generating, such as
/// a parameter buffer bound besides the vectors).
pub fn check_needs(needs: &Needs, support: &Support) -> Result<(), RuntimeError> {
    let refused = analysis::refusals(needs, &every_device(support.clone()));
    if refused.is_empty() {
        Ok(())
    } else {
        Err(RuntimeError::refused(
            support.target,
            &needs.kernel,
            refused,
        ))
    }
}

/// `support` limited to `max` storage buffers per shader stage, as a device reports it.
pub fn storage_buffers(support: Support, max: u32) -> Support {
    support.limit(
        Limit::StorageBuffers,
        u64::from(max),
        "the device's limit on storage buffers per shader stage",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use sarek_compiler::ir::analysis::Feature;
    use sarek_compiler::{Diagnostic, SourceMap, Span, Target};

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
        let needs = Needs::of(&kernel);
        let lines: Vec<String> = needs
            .uses(Feature::Int64)
            .iter()
            .map(|u| sources.location(u.span))
            .collect();
        // `let w = int64 i` (line 3) and the store computing `w + int64 n` (line 4).
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("k.sarek:3:"), "{lines:?}");
        assert!(lines[1].starts_with("k.sarek:4:"), "{lines:?}");
        assert!(needs.uses(Feature::Float64).is_empty());
    }

    /// A Vulkan-like device: GLSL without 64-bit floats, or without 64-bit integers.
    fn device_without(feature: Feature, vulkan_name: &str) -> Support {
        Support::all(Target::Glsl)
            .on_device("dev")
            .without(feature, format!("it lacks {vulkan_name}"))
    }

    #[test]
    fn a_missing_scalar_is_one_located_refusal_naming_target_and_device() {
        let (sources, kernel) = lower(INT64);
        assert!(check(&kernel, &device_without(Feature::Float64, "shaderFloat64")).is_ok());
        let Err(RuntimeError::Refused {
            target,
            kernel: name,
            diagnostics,
        }) = check(&kernel, &device_without(Feature::Int64, "shaderInt64"))
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
        for word in ["GLSL", "`dev`", "int64"] {
            assert!(d.message.contains(word), "{word}: {}", d.message);
        }
        let shown = sarek_compiler::diag::render_all(&diagnostics, &sources, false);
        assert_eq!(shown.matches("error:").count(), 1, "{shown}");
        assert!(shown.contains("k.sarek:3:"), "{shown}");
        assert!(shown.contains("it lacks shaderInt64"), "{shown}");
    }

    #[test]
    fn a_per_thread_array_past_512_kib_is_refused_on_every_device() {
        let src = |n: u32| {
            format!(
                "let%kernel k (o : int32 vector) =\n\
                 \x20 let a = create_array {n} Local in\n\
                 \x20 a.(0) <- 1; o.(0) <- a.(0)\n"
            )
        };
        let target = Support::all(Target::Glsl).on_device("dev");
        let (_, fits) = lower(&src(131_072));
        assert!(check(&fits, &target).is_ok());
        let (sources, kernel) = lower(&src(131_073));
        let Err(RuntimeError::Refused { diagnostics, .. }) = check(&kernel, &target) else {
            panic!("a 512 KiB + 4 bytes array was not refused")
        };
        let shown = sarek_compiler::diag::render_all(&diagnostics, &sources, false);
        assert!(shown.contains("k.sarek:2:"), "{shown}");
        assert!(
            shown.contains("524292 bytes") && shown.contains("524288"),
            "{shown}"
        );
    }

    #[test]
    fn too_many_vectors_are_refused_at_the_first_over_the_limit() {
        let src = "let%kernel k (a : int32 vector) (b : int32 vector) (c : int32 vector) =\n\
                   \x20 a.(0) <- b.(0) + c.(0)\n";
        let (sources, kernel) = lower(src);
        let device = |limit| storage_buffers(Support::all(Target::Wgsl).on_device("dev"), limit);
        assert!(check(&kernel, &device(3)).is_ok());
        for (extra, limit) in [(0, 2), (1, 3)] {
            let mut needs = Needs::of(&kernel);
            needs.extra_buffers = extra;
            let Err(RuntimeError::Refused { diagnostics, .. }) =
                check_needs(&needs, &device(limit))
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
