//! CUDA C (NVRTC): C++ with `__global__`/`__device__` qualifiers, one generic address space,
//! `threadIdx`-style geometry, `_sync` warp intrinsics over the full mask, native atomics
//! (64-bit ones on `unsigned long long`), and C's `f`-suffixed float32 math functions.

use super::{AtomicCall, Emit, Feature, Rules, Support, pragma_unroll};
use crate::back::cfamily::writer::{Features, strip};
use crate::intrinsics::{AtomicOp, Geometry, MathFn, WarpOp};
use crate::target::Target;
use crate::types::{MemSpace, Scalar};

pub(super) struct Cuda;

impl Rules for Cuda {
    fn target(&self) -> Option<Target> {
        Some(Target::Cuda)
    }

    fn display_name(&self) -> &'static str {
        Target::Cuda.display_name()
    }

    fn reserved(&self) -> Box<dyn Fn(&str) -> bool> {
        Box::new(crate::passes::reserved::reserved(Target::Cuda))
    }

    fn support(&self, _feature: Feature) -> Support {
        Support::Always
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

    fn shared_decl(&self) -> &'static str {
        "__shared__ "
    }

    fn shared_arrays_in_helpers(&self) -> bool {
        true
    }

    fn prelude(&self, _features: &Features) -> String {
        "// Compile with --fmad=false: a*b+c must round twice, as in the interpreter.\n".into()
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

    fn abs(&self, s: Scalar, x: &str, _emit: &mut dyn Emit) -> String {
        match s {
            Scalar::F32 => format!("fabsf({x})"),
            Scalar::F64 => format!("fabs({x})"),
            Scalar::I64 => format!("llabs({x})"),
            _ => format!("abs({x})"),
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

    fn warp(&self, op: WarpOp, x: &str, lane: &str) -> String {
        const MASK: &str = "0xffffffffu";
        match op {
            WarpOp::Shuffle => format!("__shfl_sync({MASK}, {x}, {lane})"),
            WarpOp::ShuffleDown => {
                format!("__shfl_down_sync({MASK}, {x}, (unsigned int)({lane}))")
            }
            WarpOp::ShuffleUp => format!("__shfl_up_sync({MASK}, {x}, (unsigned int)({lane}))"),
            WarpOp::ShuffleXor => format!("__shfl_xor_sync({MASK}, {x}, {lane})"),
            WarpOp::VoteAll => format!("(__all_sync({MASK}, {x}) != 0)"),
            WarpOp::VoteAny => format!("(__any_sync({MASK}, {x}) != 0)"),
            WarpOp::Ballot => format!("((int)__ballot_sync({MASK}, {x}))"),
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
