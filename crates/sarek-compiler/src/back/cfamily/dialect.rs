//! What differs between OpenCL C 1.2, CUDA C and Metal: spellings only.
//!
//! The writer asks the dialect for every token that is not plain C (qualifiers, address
//! spaces, type names, built-in functions, atomics, barriers); control flow, expressions and
//! declarations are shared. Capability questions (does the dialect have float64, native
//! float atomics, ...) live here too, so refusals name the same facts the spellings rely on.

use crate::intrinsics::{AtomicOp, MathFn};
use crate::target::Target;
use crate::types::{MemSpace, Scalar};

/// One of the three C-like targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    OpenCl,
    Cuda,
    Metal,
}

impl Dialect {
    pub fn target(self) -> Target {
        match self {
            Dialect::OpenCl => Target::OpenCl,
            Dialect::Cuda => Target::Cuda,
            Dialect::Metal => Target::Metal,
        }
    }

    /// The name used in diagnostics ("OpenCL C", "CUDA C", "Metal").
    pub fn display_name(self) -> &'static str {
        self.target().display_name()
    }

    /// C spelling of a scalar held in a register (a local, a helper parameter).
    pub fn scalar(self, s: Scalar) -> &'static str {
        match (self, s) {
            (_, Scalar::Bool) => "bool",
            (_, Scalar::I32) => "int",
            (Dialect::Cuda, Scalar::I64) => "long long",
            (_, Scalar::I64) => "long",
            (_, Scalar::F32) => "float",
            (_, Scalar::F64) => "double",
        }
    }

    /// The unsigned type of the same width as an integer scalar (wrapping arithmetic, `lsr`).
    pub fn unsigned(self, s: Scalar) -> &'static str {
        match (self, s) {
            (Dialect::Cuda, Scalar::I64) => "unsigned long long",
            (_, Scalar::I64) => "ulong",
            (Dialect::Cuda, _) => "unsigned int",
            _ => "uint",
        }
    }

    /// Suffix of an int64 literal.
    pub fn i64_suffix(self) -> &'static str {
        match self {
            Dialect::Cuda => "LL",
            _ => "L",
        }
    }

    /// Address-space qualifier (with a trailing space, or empty) of a pointer into `space`.
    pub fn pointer_space(self, space: MemSpace) -> &'static str {
        match (self, space) {
            (Dialect::OpenCl, MemSpace::Global) => "__global ",
            (Dialect::OpenCl, MemSpace::Shared) => "__local ",
            (Dialect::OpenCl, MemSpace::Local) => "",
            (Dialect::Cuda, _) => "",
            (Dialect::Metal, MemSpace::Global) => "device ",
            (Dialect::Metal, MemSpace::Shared) => "threadgroup ",
            (Dialect::Metal, MemSpace::Local) => "thread ",
        }
    }

    /// Type of the trap status word's pointer (see [`crate::ir::Trap`]).
    pub fn trap_pointer(self) -> &'static str {
        match self {
            Dialect::OpenCl => "volatile __global int*",
            Dialect::Cuda => "int*",
            Dialect::Metal => "device atomic_int*",
        }
    }

    /// Record trap `code` in the status word `ptr` (the highest code wins, deterministically).
    pub fn trap_store(self, ptr: &str, code: u32) -> String {
        match self {
            Dialect::OpenCl => format!("atomic_max({ptr}, {code});"),
            Dialect::Cuda => format!("atomicMax({ptr}, {code});"),
            Dialect::Metal => {
                format!("atomic_fetch_max_explicit({ptr}, {code}, memory_order_relaxed);")
            }
        }
    }

    /// Qualifier of a shared-array declaration.
    pub fn shared_decl(self) -> &'static str {
        match self {
            Dialect::OpenCl => "__local ",
            Dialect::Cuda => "__shared__ ",
            Dialect::Metal => "threadgroup ",
        }
    }

    /// Prefix of the entry point's declaration.
    pub fn kernel_qualifier(self) -> &'static str {
        match self {
            Dialect::OpenCl => "__kernel void",
            Dialect::Cuda => "extern \"C\" __global__ void",
            Dialect::Metal => "[[kernel]] void",
        }
    }

    /// Prefix of a helper function's declaration.
    pub fn helper_qualifier(self) -> &'static str {
        match self {
            Dialect::OpenCl => "",
            Dialect::Cuda => "__device__ ",
            Dialect::Metal => "static ",
        }
    }

    /// Block barrier with shared- and global-memory ordering.
    pub fn barrier(self) -> &'static str {
        match self {
            Dialect::OpenCl => "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);",
            Dialect::Cuda => "__syncthreads();",
            Dialect::Metal => {
                "threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);"
            }
        }
    }

    /// Memory fence at block (`device == false`) or device scope.
    pub fn fence(self, device: bool) -> &'static str {
        match (self, device) {
            (Dialect::OpenCl, false) => "mem_fence(CLK_LOCAL_MEM_FENCE);",
            (Dialect::OpenCl, true) => "mem_fence(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);",
            (Dialect::Cuda, false) => "__threadfence_block();",
            (Dialect::Cuda, true) => "__threadfence();",
            (Dialect::Metal, false) => {
                "atomic_thread_fence(mem_flags::mem_threadgroup, memory_order_seq_cst, thread_scope_threadgroup);"
            }
            (Dialect::Metal, true) => {
                "atomic_thread_fence(mem_flags::mem_device | mem_flags::mem_threadgroup, memory_order_seq_cst, thread_scope_device);"
            }
        }
    }

    /// The loop-unroll hint for `[@unroll N]`, placed right before the loop. CUDA documents
    /// `#pragma unroll N`; OpenCL C 1.2 has no standard spelling (`opencl_unroll_hint` is
    /// 2.0), but every OpenCL compiler in use (clang-based PoCL, NVIDIA, AMD, Intel) takes the
    /// same pragma, and C ignores a pragma it does not know. Metal documents none. A count of
    /// 0 means "do not unroll", which the pragma spells 1 (0 is rejected).
    pub fn unroll_pragma(self, n: u32) -> Option<String> {
        match self {
            Dialect::Cuda | Dialect::OpenCl if n == crate::ir::UNROLL_FULL => {
                Some("#pragma unroll".to_string())
            }
            Dialect::Cuda | Dialect::OpenCl => Some(format!("#pragma unroll {}", n.max(1))),
            Dialect::Metal => None,
        }
    }

    /// The name of a math function for a float type.
    ///
    /// OpenCL and Metal overload on the argument type; CUDA follows C, with an `f` suffix for
    /// float32. `None` for functions the dialect lacks (the writer emits a fallback helper).
    pub fn math(self, f: MathFn, s: Scalar) -> Option<String> {
        let base = f.c_name();
        match self {
            Dialect::OpenCl => Some(base.to_string()),
            Dialect::Metal => match f {
                MathFn::Expm1 | MathFn::Log1p | MathFn::Hypot => None,
                _ => Some(base.to_string()),
            },
            Dialect::Cuda => Some(if s == Scalar::F32 {
                format!("{base}f")
            } else {
                base.to_string()
            }),
        }
    }

    /// `fmod` for float `mod`.
    pub fn fmod(self, s: Scalar) -> &'static str {
        match (self, s) {
            (Dialect::Cuda, Scalar::F32) => "fmodf",
            _ => "fmod",
        }
    }

    /// Float min/max (NaN-ignoring, like the interpreter's `f32::min`).
    pub fn fminmax(self, max: bool, s: Scalar) -> &'static str {
        match (self, s, max) {
            (Dialect::Cuda, Scalar::F32, false) => "fminf",
            (Dialect::Cuda, Scalar::F32, true) => "fmaxf",
            (_, _, false) => "fmin",
            (_, _, true) => "fmax",
        }
    }

    /// Whether `atomic_add` on float32 has a native spelling (else a compare-and-swap loop).
    pub fn native_float_atomic_add(self) -> bool {
        matches!(self, Dialect::Cuda | Dialect::Metal)
    }

    /// Whether the dialect has float64 at all (Metal does not).
    pub fn has_float64(self) -> bool {
        self != Dialect::Metal
    }

    /// Name of a native int32/int64 OpenCL atomic, or of a CUDA one. Metal uses
    /// [`Dialect::metal_atomic`]. `None` where the operation is emulated.
    pub fn c_atomic(self, op: AtomicOp, s: Scalar) -> Option<&'static str> {
        use AtomicOp::*;
        match self {
            Dialect::OpenCl => {
                // int32: core `atomic_*` (1.1+); int64: `atom_*` of cl_khr_int64_*_atomics.
                let wide = s == Scalar::I64;
                Some(match (op, wide) {
                    (Add, false) => "atomic_add",
                    (Sub, false) => "atomic_sub",
                    (Min, false) => "atomic_min",
                    (Max, false) => "atomic_max",
                    (And, false) => "atomic_and",
                    (Or, false) => "atomic_or",
                    (Xor, false) => "atomic_xor",
                    (Exch, false) => "atomic_xchg",
                    (Cas, false) => "atomic_cmpxchg",
                    (Inc, false) => "atomic_inc",
                    (Dec, false) => "atomic_dec",
                    (Add, true) => "atom_add",
                    (Sub, true) => "atom_sub",
                    (Min, true) => "atom_min",
                    (Max, true) => "atom_max",
                    (And, true) => "atom_and",
                    (Or, true) => "atom_or",
                    (Xor, true) => "atom_xor",
                    (Exch, true) => "atom_xchg",
                    (Cas, true) => "atom_cmpxchg",
                    (Inc, true) => "atom_inc",
                    (Dec, true) => "atom_dec",
                })
            }
            Dialect::Cuda => Some(match op {
                Add | Inc => "atomicAdd",
                Sub | Dec => "atomicSub",
                Min => "atomicMin",
                Max => "atomicMax",
                And => "atomicAnd",
                Or => "atomicOr",
                Xor => "atomicXor",
                Exch => "atomicExch",
                Cas => "atomicCAS",
            }),
            Dialect::Metal => None,
        }
    }

    /// Metal `atomic_*_explicit` function of a read-modify-write operation (not CAS).
    pub fn metal_atomic(op: AtomicOp) -> &'static str {
        use AtomicOp::*;
        match op {
            Add | Inc => "atomic_fetch_add_explicit",
            Sub | Dec => "atomic_fetch_sub_explicit",
            Min => "atomic_fetch_min_explicit",
            Max => "atomic_fetch_max_explicit",
            And => "atomic_fetch_and_explicit",
            Or => "atomic_fetch_or_explicit",
            Xor => "atomic_fetch_xor_explicit",
            Exch => "atomic_exchange_explicit",
            Cas => "atomic_compare_exchange_weak_explicit",
        }
    }
}
