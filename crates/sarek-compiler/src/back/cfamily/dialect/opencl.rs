//! OpenCL C 1.2: address-space qualifiers on every pointer, `get_*_id` geometry, warp
//! operations through the `cl_khr_subgroup*` extensions, float64 and int64 atomics only on
//! devices with their extensions (enabled by pragma in the prelude), and no float atomics (a
//! compare-and-swap loop).

use super::{AtomicCall, Emit, Rules, pragma_unroll};
use crate::back::cfamily::keywords;
use crate::back::cfamily::writer::{Features, INDENT};
use crate::back::names::Keywords;
use crate::intrinsics::{AtomicOp, Geometry, WarpOp};
use crate::ir::analysis::Support;
use crate::target::{Target, TargetOptions};
use crate::types::{MemSpace, Scalar};
use std::fmt::Write as _;

pub(super) struct OpenCl;

impl Rules for OpenCl {
    fn target(&self) -> Option<Target> {
        Some(Target::OpenCl)
    }

    fn display_name(&self) -> &'static str {
        Target::OpenCl.display_name()
    }

    fn keywords(&self) -> &'static Keywords {
        &keywords::OPENCL
    }

    fn support(&self, options: &TargetOptions) -> Support {
        crate::back::support::opencl(options)
    }

    fn pointer_space(&self, space: MemSpace) -> &'static str {
        match space {
            MemSpace::Global => "__global ",
            MemSpace::Shared => "__local ",
            MemSpace::Local => "",
        }
    }

    fn kernel_qualifier(&self) -> &'static str {
        "__kernel void"
    }

    fn helper_qualifier(&self) -> &'static str {
        ""
    }

    fn shared_decl(&self) -> &'static str {
        "__local "
    }

    fn prelude(&self, features: &Features) -> String {
        let mut p = String::from(
            "// Floating-point contraction is off: a*b+c rounds twice, as in the interpreter.\n\
             #pragma OPENCL FP_CONTRACT OFF\n",
        );
        let mut ext = Vec::new();
        if features.float64.is_some() {
            ext.push("cl_khr_fp64");
        }
        if features.int64_atomics_base.is_some() {
            ext.push("cl_khr_int64_base_atomics");
        }
        if features.int64_atomics_extended.is_some() {
            ext.push("cl_khr_int64_extended_atomics");
        }
        if features.subgroups.is_some() {
            ext.push("cl_khr_subgroups");
        }
        for e in ext {
            let _ = writeln!(p, "#pragma OPENCL EXTENSION {e} : enable");
        }
        p
    }

    fn geometry(&self, g: Geometry, _emit: &mut dyn Emit) -> String {
        match g {
            Geometry::ThreadIdx(a) => format!("((int)get_local_id({}))", a.index()),
            Geometry::BlockIdx(a) => format!("((int)get_group_id({}))", a.index()),
            Geometry::BlockDim(a) => format!("((int)get_local_size({}))", a.index()),
            Geometry::GridDim(a) => format!("((int)get_num_groups({}))", a.index()),
            Geometry::GlobalIdx(a) => format!("((int)get_global_id({}))", a.index()),
            Geometry::WarpSize => "((int)get_max_sub_group_size())".into(),
        }
    }

    fn barrier(&self) -> &'static str {
        "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"
    }

    fn fence(&self, device: bool) -> &'static str {
        if device {
            "mem_fence(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"
        } else {
            "mem_fence(CLK_LOCAL_MEM_FENCE);"
        }
    }

    /// OpenCL C 1.2 has no standard spelling (`opencl_unroll_hint` is 2.0), but every OpenCL
    /// compiler in use (clang-based PoCL, NVIDIA, AMD, Intel) takes CUDA's pragma, and C
    /// ignores a pragma it does not know.
    fn unroll_pragma(&self, n: u32) -> Option<String> {
        Some(pragma_unroll(n))
    }

    fn trap_pointer(&self) -> &'static str {
        "volatile __global int*"
    }

    /// NVIDIA's OpenCL compiles through the same ptxas as CUDA: on the H200 it got
    /// `tests/conformance/q06_intrinsic_aliases.sarek`'s `(-x) asr 1` wrong in 126 of 256
    /// values, as CUDA did before the spelling without the negation.
    fn negation_under_asr_miscompiles(&self) -> bool {
        true
    }

    fn trap_store(&self, ptr: &str, code: u32) -> String {
        format!("atomic_max({ptr}, {code});")
    }

    /// OpenCL's `abs` is undefined at the minimum (PoCL loses the store): a helper that wraps
    /// there, as the interpreter does.
    fn abs(&self, s: Scalar, x: &str, emit: &mut dyn Emit) -> String {
        if s.is_float() {
            return format!("fabs({x})");
        }
        super::wrapping_abs("static ", self.scalar(s), self.unsigned(s), x, emit)
    }

    fn warp(&self, op: WarpOp, x: &str, lane: &str) -> String {
        match op {
            WarpOp::Shuffle => format!("sub_group_shuffle({x}, (uint)({lane}))"),
            WarpOp::ShuffleXor => format!("sub_group_shuffle_xor({x}, (uint)({lane}))"),
            WarpOp::ShuffleDown => format!("sub_group_shuffle_down({x}, (uint)({lane}))"),
            WarpOp::ShuffleUp => format!("sub_group_shuffle_up({x}, (uint)({lane}))"),
            WarpOp::VoteAll => format!("(sub_group_all((int)({x})) != 0)"),
            WarpOp::VoteAny => format!("(sub_group_any((int)({x})) != 0)"),
            WarpOp::Ballot => format!("((int)sub_group_ballot((int)({x})).x)"),
        }
    }

    /// int32: the core `atomic_*` functions (1.1+); int64: `atom_*` of
    /// cl_khr_int64_*_atomics; float32 `add`: a compare-and-swap loop.
    fn atomic(&self, call: &AtomicCall, emit: &mut dyn Emit) -> String {
        use AtomicOp::*;
        let ptr = call.ptr;
        if call.scalar == Scalar::F32 {
            let name = float_cas_add(self.pointer_space(call.space), call.space, emit);
            return format!("{name}({ptr}, {})", call.operands[0]);
        }
        let f = match (call.op, call.scalar == Scalar::I64) {
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
        };
        let rest: String = call.operands.iter().map(|v| format!(", {v}")).collect();
        format!("{f}({ptr}{rest})")
    }
}

/// OpenCL C 1.2 has no float atomics: a compare-and-swap loop on the bits, one helper per
/// address space (1.2 has no generic pointers).
fn float_cas_add(sp: &str, space: MemSpace, emit: &mut dyn Emit) -> String {
    let sname = if space == MemSpace::Shared {
        "local"
    } else {
        "global"
    };
    emit.helper(
        &format!("fadd:{sname}"),
        &format!("sarek_atomic_add_f32_{sname}"),
        &|name| {
            format!(
                "float {name}(volatile {sp}float* p, float x) {{\n\
                 {INDENT}volatile {sp}uint* bits = (volatile {sp}uint*)p;\n\
                 {INDENT}uint old = *bits;\n\
                 {INDENT}for (;;) {{\n\
                 {INDENT}{INDENT}uint seen = atomic_cmpxchg(bits, old, as_uint(as_float(old) + x));\n\
                 {INDENT}{INDENT}if (seen == old) return as_float(old);\n\
                 {INDENT}{INDENT}old = seen;\n\
                 {INDENT}}}\n}}\n\n"
            )
        },
    )
}
