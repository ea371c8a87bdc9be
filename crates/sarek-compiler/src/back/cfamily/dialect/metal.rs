//! Metal Shading Language: C++ with `device`/`threadgroup`/`thread` address spaces, every
//! kernel argument an attributed `[[buffer(n)]]` parameter, thread geometry only as attributed
//! kernel parameters (gathered in a struct the writer passes to helpers that read it), `simd_*`
//! warp operations, `atomic_*_explicit` atomics, no float64 and no 64-bit atomics.

use super::{AtomicCall, Emit, GeometryInput, Rules};
use crate::back::cfamily::keywords;
use crate::back::cfamily::writer::{Features, INDENT};
use crate::back::names::Keywords;
use crate::intrinsics::{AtomicOp, Geometry, MathFn, WarpOp};
use crate::ir::analysis::Support;
use crate::target::{Target, TargetOptions};
use crate::types::{MemSpace, Scalar};

pub(super) struct Metal;

impl Rules for Metal {
    fn target(&self) -> Option<Target> {
        Some(Target::Metal)
    }

    fn display_name(&self) -> &'static str {
        Target::Metal.display_name()
    }

    fn keywords(&self) -> &'static Keywords {
        &keywords::METAL
    }

    fn support(&self, _options: &TargetOptions) -> Support {
        crate::back::support::metal()
    }

    fn pointer_space(&self, space: MemSpace) -> &'static str {
        match space {
            MemSpace::Global => "device ",
            MemSpace::Shared => "threadgroup ",
            MemSpace::Local => "thread ",
        }
    }

    fn kernel_qualifier(&self) -> &'static str {
        "[[kernel]] void"
    }

    fn helper_qualifier(&self) -> &'static str {
        "static "
    }

    fn shared_decl(&self) -> &'static str {
        "threadgroup "
    }

    fn prelude(&self, _features: &Features) -> String {
        "// Compile with fast math disabled (MTLMathModeSafe) and no FMA contraction.\n\
         #include <metal_stdlib>\nusing namespace metal;\n"
            .into()
    }

    fn buffer_param(&self, decl: String, slot: u32) -> String {
        format!("{decl} [[buffer({slot})]]")
    }

    fn value_param(&self, ty: &str, name: &str, slot: u32) -> String {
        format!("constant {ty}& {name} [[buffer({slot})]]")
    }

    /// One parameter per line: with the attributes, a kernel's list is long.
    fn param_list(&self, params: &[String]) -> String {
        format!("\n{INDENT}{}", params.join(&format!(",\n{INDENT}")))
    }

    fn geometry_inputs(&self) -> &'static [GeometryInput] {
        const INPUTS: &[GeometryInput] = &[
            GeometryInput {
                field: "thread_idx",
                ty: "uint3",
                builtin: "thread_position_in_threadgroup",
            },
            GeometryInput {
                field: "block_idx",
                ty: "uint3",
                builtin: "threadgroup_position_in_grid",
            },
            GeometryInput {
                field: "block_dim",
                ty: "uint3",
                builtin: "threads_per_threadgroup",
            },
            GeometryInput {
                field: "grid_dim",
                ty: "uint3",
                builtin: "threadgroups_per_grid",
            },
            GeometryInput {
                field: "warp_size",
                ty: "uint",
                builtin: "threads_per_simdgroup",
            },
        ];
        INPUTS
    }

    fn geometry_param(&self, input: &GeometryInput, name: &str) -> String {
        format!("{} {name} [[{}]]", input.ty, input.builtin)
    }

    fn geometry(&self, g: Geometry, emit: &mut dyn Emit) -> String {
        let v = emit.geometry_struct();
        match g {
            Geometry::ThreadIdx(a) => format!("((int){v}.thread_idx.{})", a.letter()),
            Geometry::BlockIdx(a) => format!("((int){v}.block_idx.{})", a.letter()),
            Geometry::BlockDim(a) => format!("((int){v}.block_dim.{})", a.letter()),
            Geometry::GridDim(a) => format!("((int){v}.grid_dim.{})", a.letter()),
            Geometry::GlobalIdx(a) => {
                let l = a.letter();
                format!("((int)({v}.block_idx.{l} * {v}.block_dim.{l} + {v}.thread_idx.{l}))")
            }
            Geometry::WarpSize => format!("((int){v}.warp_size)"),
        }
    }

    fn barrier(&self) -> &'static str {
        "threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);"
    }

    fn fence(&self, device: bool) -> &'static str {
        if device {
            "atomic_thread_fence(mem_flags::mem_device | mem_flags::mem_threadgroup, memory_order_seq_cst, thread_scope_device);"
        } else {
            "atomic_thread_fence(mem_flags::mem_threadgroup, memory_order_seq_cst, thread_scope_threadgroup);"
        }
    }

    fn trap_pointer(&self) -> &'static str {
        "device atomic_int*"
    }

    fn trap_store(&self, ptr: &str, code: u32) -> String {
        format!("atomic_fetch_max_explicit({ptr}, {code}, memory_order_relaxed);")
    }

    /// Metal overloads on the argument type; `expm1`, `log1p` and `hypot` are missing and
    /// become small helpers (approximations documented in them).
    fn math(&self, f: MathFn, _s: Scalar, emit: &mut dyn Emit) -> String {
        let body = match f {
            // exp(x) - 1 cancels near 0; the series keeps relative precision there.
            MathFn::Expm1 => "return fabs(x) < 1e-5f ? x + 0.5f * x * x : exp(x) - 1.0f;",
            MathFn::Log1p => "return fabs(x) < 1e-4f ? x - 0.5f * x * x : log(1.0f + x);",
            MathFn::Hypot => "",
            _ => return f.c_name().to_string(),
        };
        let key = format!("math:{f:?}");
        let base = format!("sarek_{}", f.c_name());
        emit.helper(&key, &base, &|name| match f {
            MathFn::Hypot => format!(
                "static float {name}(float x, float y) {{\n{INDENT}// Scaled to avoid overflow of x*x.\n\
                 {INDENT}float m = fmax(fabs(x), fabs(y));\n{INDENT}if (m == 0.0f || isinf(m)) return m;\n\
                 {INDENT}float a = x / m, b = y / m;\n{INDENT}return m * sqrt(a * a + b * b);\n}}\n\n"
            ),
            _ => format!("static float {name}(float x) {{\n{INDENT}{body}\n}}\n\n"),
        })
    }

    fn warp(&self, op: WarpOp, x: &str, lane: &str) -> String {
        match op {
            WarpOp::Shuffle => format!("simd_shuffle({x}, (ushort)({lane}))"),
            WarpOp::ShuffleDown => format!("simd_shuffle_down({x}, (ushort)({lane}))"),
            WarpOp::ShuffleUp => format!("simd_shuffle_up({x}, (ushort)({lane}))"),
            WarpOp::ShuffleXor => format!("simd_shuffle_xor({x}, (ushort)({lane}))"),
            WarpOp::VoteAll => format!("simd_all({x})"),
            WarpOp::VoteAny => format!("simd_any({x})"),
            WarpOp::Ballot => format!("((int)(ulong)simd_ballot({x}))"),
        }
    }

    fn atomic(&self, call: &AtomicCall, emit: &mut dyn Emit) -> String {
        use AtomicOp::*;
        let sp = self.pointer_space(call.space);
        let aty = if call.scalar == Scalar::F32 {
            "atomic_float"
        } else {
            "atomic_int"
        };
        let aptr = format!("({sp}{aty}*){}", call.ptr);
        let vals = call.operands;
        let f = match call.op {
            Add | Inc => "atomic_fetch_add_explicit",
            Sub | Dec => "atomic_fetch_sub_explicit",
            Min => "atomic_fetch_min_explicit",
            Max => "atomic_fetch_max_explicit",
            And => "atomic_fetch_and_explicit",
            Or => "atomic_fetch_or_explicit",
            Xor => "atomic_fetch_xor_explicit",
            Exch => "atomic_exchange_explicit",
            Cas => {
                let name = strong_cas(sp, call.space, emit);
                return format!("{name}({aptr}, {}, {})", vals[0], vals[1]);
            }
        };
        let v = match call.op {
            Inc | Dec => "1",
            _ => vals[0].as_str(),
        };
        format!("{f}({aptr}, {v}, memory_order_relaxed)")
    }
}

/// Metal has only a weak compare-exchange; a strong CAS returning the old value retries
/// spurious failures.
fn strong_cas(sp: &str, space: MemSpace, emit: &mut dyn Emit) -> String {
    let sname = if space == MemSpace::Shared {
        "threadgroup"
    } else {
        "device"
    };
    emit.helper(
        &format!("cas:{sname}"),
        &format!("sarek_atomic_cas_i32_{sname}"),
        &|name| {
            format!(
                "static int {name}({sp}atomic_int* p, int expected, int desired) {{\n\
                 {INDENT}int old = expected;\n\
                 {INDENT}while (!atomic_compare_exchange_weak_explicit(p, &old, desired, memory_order_relaxed, memory_order_relaxed)) {{\n\
                 {INDENT}{INDENT}if (old != expected) break;\n\
                 {INDENT}}}\n\
                 {INDENT}return old;\n}}\n\n"
            )
        },
    )
}
