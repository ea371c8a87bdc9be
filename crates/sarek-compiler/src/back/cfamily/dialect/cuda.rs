//! CUDA C (NVRTC): C++ with `__global__`/`__device__` qualifiers, one generic address space,
//! `threadIdx`-style geometry, `_sync` warp intrinsics over the warp's live lanes, native atomics
//! (64-bit ones on `unsigned long long`), and C's `f`-suffixed float32 math functions.

use super::{AtomicCall, Emit, Rules, pragma_unroll};
use crate::back::cfamily::keywords;
use crate::back::cfamily::writer::{Features, strip};
use crate::back::names::Keywords;
use crate::intrinsics::{AtomicOp, Geometry, MathFn, WarpOp};
use crate::ir::analysis::Support;
use crate::target::{Target, TargetOptions};
use crate::types::{MemSpace, Scalar};

pub(super) struct Cuda;

impl Rules for Cuda {
    fn target(&self) -> Option<Target> {
        Some(Target::Cuda)
    }

    fn display_name(&self) -> &'static str {
        Target::Cuda.display_name()
    }

    fn keywords(&self) -> &'static Keywords {
        &keywords::CUDA
    }

    fn support(&self, _options: &TargetOptions) -> Support {
        crate::back::support::cuda()
    }

    fn scalar(&self, s: Scalar) -> &'static str {
        match s {
            Scalar::Bool => "bool",
            Scalar::I32 => "int",
            Scalar::I64 => "long long",
            Scalar::F32 => "float",
            Scalar::F64 => "double",
        }
    }

    fn unsigned(&self, s: Scalar) -> &'static str {
        match s {
            Scalar::I64 => "unsigned long long",
            _ => "unsigned int",
        }
    }

    fn i64_suffix(&self) -> &'static str {
        "LL"
    }

    fn u64_suffix(&self) -> &'static str {
        "ull"
    }

    /// By bit pattern: NVRTC has no `NAN`/`INFINITY` macros without the host headers.
    fn nan(&self, s: Scalar) -> String {
        if s == Scalar::F32 {
            "__int_as_float(0x7fc00000)".into()
        } else {
            "__longlong_as_double(0x7ff8000000000000LL)".into()
        }
    }

    fn infinity(&self, s: Scalar, negative: bool) -> String {
        let sign = if negative { "-" } else { "" };
        if s == Scalar::F32 {
            format!("({sign}__int_as_float(0x7f800000))")
        } else {
            format!("({sign}__longlong_as_double(0x7ff0000000000000LL))")
        }
    }

    fn pointer_space(&self, _space: MemSpace) -> &'static str {
        ""
    }

    fn kernel_qualifier(&self) -> &'static str {
        "extern \"C\" __global__ void"
    }

    fn helper_qualifier(&self) -> &'static str {
        "__device__ "
    }

    /// NVRTC inlines a chain of small helpers each calling the next twice (bounded
    /// recursion, `fib [@sarek.inline 24]`) all the way down: minutes of compilation, where
    /// the PTX generator writes those helpers once as `.func`.
    fn outlined_helper_qualifier(&self) -> &'static str {
        "__noinline__ "
    }

    fn shared_decl(&self) -> &'static str {
        "__shared__ "
    }

    fn shared_arrays_in_helpers(&self) -> bool {
        true
    }

    fn prelude(&self, features: &Features) -> String {
        let mut p = String::from(
            "// Compile with --fmad=false: a*b+c must round twice, as in the interpreter.\n",
        );
        if features.subgroups.is_some() {
            p.push_str(WARP_PRELUDE);
        }
        p
    }

    fn geometry(&self, g: Geometry, _emit: &mut dyn Emit) -> String {
        match g {
            Geometry::ThreadIdx(a) => format!("((int)threadIdx.{})", a.letter()),
            Geometry::BlockIdx(a) => format!("((int)blockIdx.{})", a.letter()),
            Geometry::BlockDim(a) => format!("((int)blockDim.{})", a.letter()),
            Geometry::GridDim(a) => format!("((int)gridDim.{})", a.letter()),
            Geometry::GlobalIdx(a) => {
                let l = a.letter();
                format!("((int)(blockIdx.{l} * blockDim.{l} + threadIdx.{l}))")
            }
            Geometry::WarpSize => "warpSize".into(),
        }
    }

    fn barrier(&self) -> &'static str {
        "__syncthreads();"
    }

    fn fence(&self, device: bool) -> &'static str {
        if device {
            "__threadfence();"
        } else {
            "__threadfence_block();"
        }
    }

    fn unroll_pragma(&self, n: u32) -> Option<String> {
        Some(pragma_unroll(n))
    }

    fn trap_pointer(&self) -> &'static str {
        "int*"
    }

    fn trap_store(&self, ptr: &str, code: u32) -> String {
        format!("atomicMax({ptr}, {code});")
    }

    fn math(&self, f: MathFn, s: Scalar, _emit: &mut dyn Emit) -> String {
        let base = f.c_name();
        if s == Scalar::F32 {
            format!("{base}f")
        } else {
            base.to_string()
        }
    }

    fn fmod(&self, s: Scalar) -> &'static str {
        if s == Scalar::F32 { "fmodf" } else { "fmod" }
    }

    fn fminmax(&self, max: bool, s: Scalar) -> &'static str {
        match (s, max) {
            (Scalar::F32, false) => "fminf",
            (Scalar::F32, true) => "fmaxf",
            (_, false) => "fmin",
            (_, true) => "fmax",
        }
    }

    fn abs(&self, s: Scalar, x: &str, emit: &mut dyn Emit) -> String {
        match s {
            Scalar::F32 => format!("fabsf({x})"),
            Scalar::F64 => format!("fabs({x})"),
            _ => super::wrapping_abs(
                self.helper_qualifier(),
                self.scalar(s),
                self.unsigned(s),
                x,
                emit,
            ),
        }
    }

    fn clz(&self, x: &str, wide: bool) -> String {
        if wide {
            format!("__clzll({})", strip(x))
        } else {
            format!("__clz({})", strip(x))
        }
    }

    fn popcount(&self, x: &str, wide: bool) -> String {
        if wide {
            format!("__popcll((unsigned long long){x})")
        } else {
            format!("__popc((unsigned int){x})")
        }
    }

    /// ptxas 13.0 for sm_90 folds `neg` into the `shr.s32` + `add` after it as
    /// `LEA.HI.SX32 d, -a, b, 0x1f`, which is off by one for odd negative `a` (seen on the
    /// H200 in a checked kernel; ptxas 13.5 no longer emits it). `~x + 1` reaches ptxas as the
    /// same `neg`; `~((x - 1) >> n)` does not.
    fn negation_under_asr_miscompiles(&self) -> bool {
        true
    }

    fn warp(&self, op: WarpOp, x: &str, lane: &str) -> String {
        match op {
            WarpOp::Shuffle => format!("sarek_shfl({x}, (unsigned int)({lane}) & 31u)"),
            WarpOp::ShuffleDown => {
                format!("sarek_shfl({x}, sarek_warp_lane() + (unsigned int)({lane}))")
            }
            WarpOp::ShuffleUp => {
                format!("sarek_shfl({x}, sarek_warp_lane() - (unsigned int)({lane}))")
            }
            WarpOp::ShuffleXor => {
                format!("sarek_shfl({x}, sarek_warp_lane() ^ (unsigned int)({lane}))")
            }
            WarpOp::VoteAll => format!("(__all_sync(sarek_warp_mask(), {x}) != 0)"),
            WarpOp::VoteAny => format!("(__any_sync(sarek_warp_mask(), {x}) != 0)"),
            WarpOp::Ballot => format!("((int)__ballot_sync(sarek_warp_mask(), {x}))"),
        }
    }

    fn atomic(&self, call: &AtomicCall, _emit: &mut dyn Emit) -> String {
        use AtomicOp::*;
        let (ptr, vals) = (call.ptr, call.operands);
        let f = match call.op {
            Add | Inc => "atomicAdd",
            Sub | Dec => "atomicSub",
            Min => "atomicMin",
            Max => "atomicMax",
            And => "atomicAnd",
            Or => "atomicOr",
            Xor => "atomicXor",
            Exch => "atomicExch",
            Cas => "atomicCAS",
        };
        if call.scalar != Scalar::I64 {
            return match call.op {
                Inc => format!("atomicAdd({ptr}, 1)"),
                Dec => format!("atomicSub({ptr}, 1)"),
                _ => {
                    let rest: String = vals.iter().map(|v| format!(", {v}")).collect();
                    format!("{f}({ptr}{rest})")
                }
            };
        }
        // CUDA's 64-bit atomics take unsigned long long, except min/max (long long).
        if matches!(call.op, Min | Max) {
            return format!("{f}({ptr}, {})", vals[0]);
        }
        format!(
            "(({}){})",
            self.scalar(Scalar::I64),
            unsigned_atomic64(call.op, f, ptr, vals)
        )
    }
}

/// A 64-bit atomic other than min/max on the `unsigned long long` CUDA and HIP declare it for
/// (two's complement makes the bits the same).
pub(super) fn unsigned_atomic64(op: AtomicOp, f: &str, ptr: &str, vals: &[String]) -> String {
    const U: &str = "unsigned long long";
    let uptr = format!("({U}*){ptr}");
    let u = |v: &str| format!("({U})({v})");
    match op {
        AtomicOp::Add => format!("atomicAdd({uptr}, {})", u(&vals[0])),
        AtomicOp::Sub => format!("atomicAdd({uptr}, 0ull - {})", u(&vals[0])),
        AtomicOp::Inc => format!("atomicAdd({uptr}, 1ull)"),
        AtomicOp::Dec => format!("atomicAdd({uptr}, ~0ull)"),
        AtomicOp::Cas => format!("atomicCAS({uptr}, {}, {})", u(&vals[0]), u(&vals[1])),
        _ => format!("{f}({uptr}, {})", u(&vals[0])),
    }
}

/// Partial warps (docs/language-notes.md): a warp is 32 consecutive threads of the block in
/// linear order; the last warp of a block of `n` threads has `min(32, n - (t & ~31))` live
/// lanes, and only those may be named in a `_sync` mask. A shuffle reads the source lane
/// the language computes when it is live, else the caller's own value. `src` is that lane in
/// 32-bit unsigned arithmetic: one compare with `live` rejects negative and past-the-end
/// sources alike, and no source outside [0, 32) wraps into it (|lane +- d| < 2^32).
const WARP_PRELUDE: &str = "\
__device__ __forceinline__ unsigned int sarek_warp_thread() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
__device__ __forceinline__ unsigned int sarek_warp_lane() {
    return sarek_warp_thread() & 31u;
}
__device__ __forceinline__ unsigned int sarek_warp_live() {
    unsigned int rest = blockDim.x * blockDim.y * blockDim.z - (sarek_warp_thread() & ~31u);
    return rest < 32u ? rest : 32u;
}
__device__ __forceinline__ unsigned int sarek_warp_mask() {
    unsigned int live = sarek_warp_live();
    return live == 32u ? 0xffffffffu : (1u << live) - 1u;
}
template <typename T>
__device__ __forceinline__ T sarek_shfl(T x, unsigned int src) {
    unsigned int live = sarek_warp_live();
    unsigned int mask = live == 32u ? 0xffffffffu : (1u << live) - 1u;
    return __shfl_sync(mask, x, (int)(src < live ? src : sarek_warp_lane()));
}
";

#[cfg(test)]
mod tests {
    use crate::back::cfamily::{Dialect, generate};
    use crate::diag::SourceMap;
    use crate::target::TargetOptions;

    /// The identity the CUDA spelling of `(-x) asr n` rests on, over the extremes and a
    /// sweep of each width, for every shift count.
    #[test]
    fn asr_of_negation_identity() {
        let mut xs32: Vec<i32> = vec![i32::MIN, i32::MIN + 1, -3, -2, -1, 0, 1, 2, 3, i32::MAX];
        xs32.extend((i32::MIN..=i32::MAX).step_by(65_521));
        for &x in &xs32 {
            for n in 0..32 {
                assert_eq!(
                    x.wrapping_neg() >> n,
                    !(x.wrapping_sub(1) >> n),
                    "{x} asr {n}"
                );
            }
        }
        let mut xs64: Vec<i64> = vec![i64::MIN, i64::MIN + 1, -3, -1, 0, 1, 3, i64::MAX];
        xs64.extend((i64::MIN..=i64::MAX).step_by(1 << 44));
        for &x in &xs64 {
            for n in 0..64 {
                assert_eq!(
                    x.wrapping_neg() >> n,
                    !(x.wrapping_sub(1) >> n),
                    "{x} asr {n}"
                );
            }
        }
    }

    fn source(dialect: Dialect) -> String {
        let text = "let%kernel k (a : int32 vector) (b : int64 vector) =\n\
                    \x20 let i = global_thread_id in\n\
                    \x20 a.(i) <- Int32.shift_right (Int32.neg a.(i)) 1;\n\
                    \x20 b.(i) <- Int64.shift_right (Int64.neg b.(i)) 3\n";
        let mut sources = SourceMap::new();
        let file = sources.add("k.sarek".to_string(), text.to_string());
        let program = crate::check(&sources, file).expect("the kernel checks");
        let kernel = crate::lower_kernel(&program, "k").expect("the kernel lowers");
        generate(&kernel, dialect, &TargetOptions::default())
            .expect("generated")
            .source
    }

    /// CUDA and OpenCL (NVIDIA's compiles through the same ptxas) spell `(-x) asr n` without
    /// a negation; HIP keeps the plain form.
    #[test]
    fn asr_of_negation_spelling() {
        let cuda = source(Dialect::Cuda);
        assert!(
            cuda.contains("a[i] = ~(((int)((unsigned int)a[i] - 1u)) >> (1 & 31));"),
            "{cuda}"
        );
        assert!(
            cuda.contains(
                "b[i] = ~(((long long)((unsigned long long)b[i] - 1ull)) >> (3LL & 63));"
            ),
            "{cuda}"
        );
        assert!(!cuda.contains("0 - "), "{cuda}");
        let opencl = source(Dialect::OpenCl);
        assert!(
            opencl.contains("a[i] = ~(((int)((uint)a[i] - 1u)) >> (1 & 31));"),
            "{opencl}"
        );
        assert!(!opencl.contains("0 - "), "{opencl}");
        let hip = source(Dialect::Hip);
        assert!(
            hip.contains("(0 - (unsigned int)a[i])) >> (1 & 31)"),
            "{hip}"
        );
    }
}
