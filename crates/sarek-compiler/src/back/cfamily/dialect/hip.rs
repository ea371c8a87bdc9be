//! HIP (AMD ROCm, compiled by hipcc or hiprtc): CUDA C's source language, so every rule not
//! written here is [`Cuda`]'s. The differences: `hip/hip_runtime.h` is included and
//! contraction turned off in the source (no runtime sets compiler options), warp intrinsics
//! have no `_sync` forms (a wavefront is 32 or 64 lanes; `warp_size` reads the device's
//! `warpSize`, and `warp_ballot`'s int32 mask holds lanes 0 to 31), and signed 64-bit
//! `atomic_min`/`atomic_max` are compare-and-swap loops (HIP declares them only on unsigned
//! types). HIP is a library dialect: no `--target` spelling, no runtime backend.

use super::cuda::{Cuda, unsigned_atomic64};
use super::{AtomicCall, Emit, Rules};
use crate::back::cfamily::keywords;
use crate::back::cfamily::writer::{Features, INDENT};
use crate::back::names::Keywords;
use crate::intrinsics::{AtomicOp, Geometry, MathFn, WarpOp};
use crate::ir::analysis::{Limit, Support};
use crate::target::{Target, TargetOptions};
use crate::types::{MemSpace, Scalar};

pub(super) struct Hip;

/// Static shared memory (LDS) per block on AMD GPUs.
const HIP_MAX_SHARED: u64 = 64 * 1024;

impl Rules for Hip {
    fn target(&self) -> Option<Target> {
        None
    }

    fn display_name(&self) -> &'static str {
        "HIP"
    }

    fn keywords(&self) -> &'static Keywords {
        &keywords::HIP
    }

    /// gfx9 and later have float64, 64-bit atomics and wavefront operations; a workgroup has
    /// 64 KiB of LDS (hipcc rejects more: "local memory (N) exceeds limit (65536)").
    fn support(&self, _options: &TargetOptions) -> Support {
        Support::all(Target::Cuda).in_language("HIP").limit(
            Limit::SharedBytes,
            HIP_MAX_SHARED,
            "AMD GPUs have 64 KiB of shared memory (LDS) per block",
        )
    }

    fn scalar(&self, s: Scalar) -> &'static str {
        Cuda.scalar(s)
    }

    fn unsigned(&self, s: Scalar) -> &'static str {
        Cuda.unsigned(s)
    }

    fn i64_suffix(&self) -> &'static str {
        Cuda.i64_suffix()
    }

    fn u64_suffix(&self) -> &'static str {
        Cuda.u64_suffix()
    }

    fn nan(&self, s: Scalar) -> String {
        Cuda.nan(s)
    }

    fn infinity(&self, s: Scalar, negative: bool) -> String {
        Cuda.infinity(s, negative)
    }

    fn pointer_space(&self, space: MemSpace) -> &'static str {
        Cuda.pointer_space(space)
    }

    fn kernel_qualifier(&self) -> &'static str {
        Cuda.kernel_qualifier()
    }

    fn helper_qualifier(&self) -> &'static str {
        Cuda.helper_qualifier()
    }

    fn outlined_helper_qualifier(&self) -> &'static str {
        Cuda.outlined_helper_qualifier()
    }

    fn shared_decl(&self) -> &'static str {
        Cuda.shared_decl()
    }

    fn shared_arrays_in_helpers(&self) -> bool {
        Cuda.shared_arrays_in_helpers()
    }

    /// hipcc and hiprtc contract `a*b+c` by default (`-ffp-contract=fast-honor-pragmas`); the
    /// pragma they honour turns it off for the whole file.
    fn prelude(&self, _features: &Features) -> String {
        "// Floating-point contraction is off: a*b+c rounds twice, as in the interpreter.\n\
         #include <hip/hip_runtime.h>\n\
         #pragma clang fp contract(off)\n"
            .into()
    }

    fn geometry(&self, g: Geometry, emit: &mut dyn Emit) -> String {
        Cuda.geometry(g, emit)
    }

    fn barrier(&self) -> &'static str {
        Cuda.barrier()
    }

    fn fence(&self, device: bool) -> &'static str {
        Cuda.fence(device)
    }

    fn unroll_pragma(&self, n: u32) -> Option<String> {
        Cuda.unroll_pragma(n)
    }

    fn trap_pointer(&self) -> &'static str {
        Cuda.trap_pointer()
    }

    fn trap_store(&self, ptr: &str, code: u32) -> String {
        Cuda.trap_store(ptr, code)
    }

    fn math(&self, f: MathFn, s: Scalar, emit: &mut dyn Emit) -> String {
        Cuda.math(f, s, emit)
    }

    fn fmod(&self, s: Scalar) -> &'static str {
        Cuda.fmod(s)
    }

    fn fminmax(&self, max: bool, s: Scalar) -> &'static str {
        Cuda.fminmax(max, s)
    }

    fn abs(&self, s: Scalar, x: &str, emit: &mut dyn Emit) -> String {
        Cuda.abs(s, x, emit)
    }

    fn clz(&self, x: &str, wide: bool) -> String {
        Cuda.clz(x, wide)
    }

    fn popcount(&self, x: &str, wide: bool) -> String {
        Cuda.popcount(x, wide)
    }

    /// The whole wavefront takes part (`width` defaults to `warpSize`).
    fn warp(&self, op: WarpOp, x: &str, lane: &str) -> String {
        match op {
            WarpOp::Shuffle => format!("__shfl({x}, {lane})"),
            WarpOp::ShuffleDown => format!("__shfl_down({x}, (unsigned int)({lane}))"),
            WarpOp::ShuffleUp => format!("__shfl_up({x}, (unsigned int)({lane}))"),
            WarpOp::ShuffleXor => format!("__shfl_xor({x}, {lane})"),
            WarpOp::VoteAll => format!("(__all({x}) != 0)"),
            WarpOp::VoteAny => format!("(__any({x}) != 0)"),
            WarpOp::Ballot => format!("((int)__ballot({x}))"),
        }
    }

    fn atomic(&self, call: &AtomicCall, emit: &mut dyn Emit) -> String {
        if call.scalar != Scalar::I64 {
            return Cuda.atomic(call, emit);
        }
        let (ptr, vals) = (call.ptr, call.operands);
        match call.op {
            AtomicOp::Min | AtomicOp::Max => {
                let name = signed_minmax64(call.op == AtomicOp::Max, emit);
                format!("{name}({ptr}, {})", vals[0])
            }
            op => {
                let f = match op {
                    AtomicOp::And => "atomicAnd",
                    AtomicOp::Or => "atomicOr",
                    AtomicOp::Xor => "atomicXor",
                    AtomicOp::Exch => "atomicExch",
                    _ => "atomicAdd",
                };
                format!(
                    "(({}){})",
                    self.scalar(Scalar::I64),
                    unsigned_atomic64(op, f, ptr, vals)
                )
            }
        }
    }
}

/// Signed 64-bit atomic min/max as a compare-and-swap loop on the bits, returning the old
/// value (one helper each; HIP pointers are generic, so it serves global and shared memory).
fn signed_minmax64(max: bool, emit: &mut dyn Emit) -> String {
    let (key, base, keep) = if max {
        ("amax:i64", "sarek_atomic_max_i64", ">")
    } else {
        ("amin:i64", "sarek_atomic_min_i64", "<")
    };
    emit.helper(key, base, &|name| {
        format!(
            "__device__ long long {name}(long long* p, long long x) {{\n\
             {INDENT}unsigned long long* bits = (unsigned long long*)p;\n\
             {INDENT}unsigned long long old = *bits;\n\
             {INDENT}for (;;) {{\n\
             {INDENT}{INDENT}long long seen_value = (long long)old;\n\
             {INDENT}{INDENT}long long next = x {keep} seen_value ? x : seen_value;\n\
             {INDENT}{INDENT}unsigned long long seen = atomicCAS(bits, old, (unsigned long long)next);\n\
             {INDENT}{INDENT}if (seen == old) return seen_value;\n\
             {INDENT}{INDENT}old = seen;\n\
             {INDENT}}}\n}}\n\n"
        )
    })
}
