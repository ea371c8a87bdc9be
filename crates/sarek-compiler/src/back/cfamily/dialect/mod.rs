//! What differs between the C-family languages, one file per dialect.
//!
//! The shared writer (`super::writer`) emits C's statements, expressions, structs and helper
//! functions; for every other token and decision it asks the dialect's [`Rules`]: types and
//! address spaces, declarations and kernel parameters, the prelude, thread geometry, warp
//! operations, atomics, math spellings, and what the dialect supports (its declaration for
//! the one refusal rule).
//! The writer never matches on [`Dialect`]: a new C dialect is one file implementing [`Rules`]
//! and its line in [`Dialect::rules`] (HIP was added that way).

mod cuda;
mod hip;
mod metal;
mod opencl;

use super::writer::{Features, INDENT};
use crate::back::names::Keywords;
use crate::intrinsics::{AtomicOp, Geometry, MathFn, WarpOp};
use crate::ir::analysis::Support;
use crate::target::{Target, TargetOptions};
use crate::types::{MemSpace, Scalar};

/// One of the C-like source languages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    OpenCl,
    Cuda,
    Metal,
    /// HIP (AMD ROCm), compiled by hipcc/hiprtc: a library-only dialect (no `--target`, no
    /// runtime backend).
    Hip,
}

impl Dialect {
    /// The dialect's rules: the one place that matches on the dialect.
    pub(super) fn rules(self) -> &'static dyn Rules {
        match self {
            Dialect::OpenCl => &opencl::OpenCl,
            Dialect::Cuda => &cuda::Cuda,
            Dialect::Metal => &metal::Metal,
            Dialect::Hip => &hip::Hip,
        }
    }

    /// The command-line target of the dialect (HIP has none).
    pub fn target(self) -> Option<Target> {
        self.rules().target()
    }

    /// The name used in diagnostics ("OpenCL C", "CUDA C", "Metal", "HIP").
    pub fn display_name(self) -> &'static str {
        self.rules().display_name()
    }
}

/// A thread-geometry value a dialect receives as an attributed kernel parameter (Metal); the
/// writer gathers them in a struct passed to the helpers that read them.
pub(super) struct GeometryInput {
    /// Member of the geometry struct (`thread_idx`).
    pub field: &'static str,
    pub ty: &'static str,
    /// The dialect's name of the built-in input (`thread_position_in_threadgroup`).
    pub builtin: &'static str,
}

/// An atomic read-modify-write the writer has checked (a vector or shared element of int32,
/// int64, or float32 for `Add`), ready to spell.
pub(super) struct AtomicCall<'a> {
    pub op: AtomicOp,
    pub scalar: Scalar,
    /// `Global` or `Shared`.
    pub space: MemSpace,
    /// `&base[index]`.
    pub ptr: &'a str,
    /// The operands after the index (one, or two for `Cas`; none for `Inc`/`Dec`), unparenthesised.
    pub operands: &'a [String],
}

/// What a dialect may ask of the writer while spelling an operation.
pub(super) trait Emit {
    /// The name of a generated helper function: `define(name)` is its definition, emitted once
    /// per `key` ahead of the user's functions.
    fn helper(&mut self, key: &str, base: &str, define: &dyn Fn(&str) -> String) -> String;
    /// The geometry struct's variable in the function being written (dialects with
    /// [`Rules::geometry_inputs`]); the function then takes the struct as a parameter.
    fn geometry_struct(&mut self) -> String;
}

/// Everything a C dialect decides. Defaults are OpenCL C's spellings where C has several.
pub(super) trait Rules: Sync {
    /// The command-line target this dialect serves, if any.
    fn target(&self) -> Option<Target>;
    fn display_name(&self) -> &'static str;
    /// The names a generated program cannot declare (`legalize` and the writer's namer avoid
    /// them), from [`crate::back::cfamily::keywords`].
    fn keywords(&self) -> &'static Keywords;
    /// What the dialect supports under `options` (the input of the one refusal rule,
    /// [`crate::ir::analysis`]).
    fn support(&self, options: &TargetOptions) -> Support;

    // ------------------------------------------------------------ types and literals

    /// C spelling of a scalar held in a register (a local, a helper parameter).
    fn scalar(&self, s: Scalar) -> &'static str {
        match s {
            Scalar::Bool => "bool",
            Scalar::I32 => "int",
            Scalar::I64 => "long",
            Scalar::F32 => "float",
            Scalar::F64 => "double",
        }
    }
    /// The unsigned type of the same width as an integer scalar (wrapping arithmetic, `lsr`).
    fn unsigned(&self, s: Scalar) -> &'static str {
        match s {
            Scalar::I64 => "ulong",
            _ => "uint",
        }
    }
    /// Suffix of an int64 literal.
    fn i64_suffix(&self) -> &'static str {
        "L"
    }
    /// Suffix of an unsigned 64-bit literal.
    fn u64_suffix(&self) -> &'static str {
        "ul"
    }
    /// A quiet NaN of a float type.
    fn nan(&self, s: Scalar) -> String {
        format!("(({})NAN)", self.scalar(s))
    }
    /// Infinity of a float type, negated when `negative`.
    fn infinity(&self, s: Scalar, negative: bool) -> String {
        let sign = if negative { "-" } else { "" };
        format!("({sign}({})INFINITY)", self.scalar(s))
    }
    /// Address-space qualifier (with a trailing space, or empty) of a pointer into `space`.
    fn pointer_space(&self, space: MemSpace) -> &'static str;

    // ------------------------------------------------------------ declarations

    /// Prefix of the entry point's declaration.
    fn kernel_qualifier(&self) -> &'static str;
    /// Prefix of a helper function's declaration (and of generated helpers).
    fn helper_qualifier(&self) -> &'static str;
    /// Written after [`Rules::helper_qualifier`] for the helpers
    /// [`crate::ir::analysis::outlined_helpers`] keeps out of line (called more than once,
    /// large together), where the dialect's compiler would otherwise inline them all; empty
    /// where it does not.
    fn outlined_helper_qualifier(&self) -> &'static str {
        ""
    }
    /// Qualifier of a shared-array declaration.
    fn shared_decl(&self) -> &'static str;
    /// Whether a helper may declare a shared array (else block-local memory must be declared at
    /// kernel scope and such a helper is refused).
    fn shared_arrays_in_helpers(&self) -> bool {
        false
    }
    /// Lines after the "Generated by" line: pragmas, includes, compile notes. `features` is
    /// what the written bodies rely on.
    fn prelude(&self, features: &Features) -> String;
    /// A kernel pointer parameter (`decl` is `type name`) bound to argument `slot`.
    fn buffer_param(&self, decl: String, _slot: u32) -> String {
        decl
    }
    /// A kernel by-value parameter of C type `ty` bound to argument `slot`.
    fn value_param(&self, ty: &str, name: &str, _slot: u32) -> String {
        format!("{ty} {name}")
    }
    /// The kernel's parameter list (between the parentheses).
    fn param_list(&self, params: &[String]) -> String {
        params.join(", ")
    }

    // ------------------------------------------------------------ geometry and synchronisation

    /// Geometry values received as kernel parameters (empty: the dialect has built-ins).
    fn geometry_inputs(&self) -> &'static [GeometryInput] {
        &[]
    }
    /// The kernel parameter receiving one of [`Rules::geometry_inputs`].
    fn geometry_param(&self, input: &GeometryInput, name: &str) -> String {
        format!("{} {name}", input.ty)
    }
    /// A geometry value as an `int` expression.
    fn geometry(&self, g: Geometry, emit: &mut dyn Emit) -> String;
    /// Block barrier with shared- and global-memory ordering.
    fn barrier(&self) -> &'static str;
    /// Memory fence at block (`device == false`) or device scope.
    fn fence(&self, device: bool) -> &'static str;
    /// The loop-unroll hint for `[@unroll N]`, placed right before the loop.
    fn unroll_pragma(&self, _n: u32) -> Option<String> {
        None
    }

    // ------------------------------------------------------------ traps

    /// Type of the trap status word's pointer (see [`crate::ir::Trap`]).
    fn trap_pointer(&self) -> &'static str;
    /// Record trap `code` in the status word `ptr` (the highest code wins, deterministically).
    fn trap_store(&self, ptr: &str, code: u32) -> String;

    // ------------------------------------------------------------ operations

    /// The name of a math function for a float type (a generated fallback where the dialect
    /// lacks it).
    fn math(&self, f: MathFn, _s: Scalar, _emit: &mut dyn Emit) -> String {
        f.c_name().to_string()
    }
    /// `fmod` for float `mod`.
    fn fmod(&self, _s: Scalar) -> &'static str {
        "fmod"
    }
    /// Float min/max (NaN-ignoring, like the interpreter's `f32::min`).
    fn fminmax(&self, max: bool, _s: Scalar) -> &'static str {
        if max { "fmax" } else { "fmin" }
    }
    /// `abs` of `x` (unparenthesised) of scalar `s`, wrapping at the integer minimum.
    /// C's integer `abs` is undefined there, and compilers use that: ptxas folded a later
    /// `mod` as if `abs` were non-negative. Hence a helper that wraps, as the interpreter does.
    fn abs(&self, s: Scalar, x: &str, emit: &mut dyn Emit) -> String {
        if s.is_float() {
            return format!("fabs({x})");
        }
        wrapping_abs(
            self.helper_qualifier(),
            self.scalar(s),
            self.unsigned(s),
            x,
            emit,
        )
    }
    /// Count of leading zeros of `x` (an operand), int64 when `wide`.
    fn clz(&self, x: &str, _wide: bool) -> String {
        format!("clz({})", super::writer::strip(x))
    }
    /// Count of set bits of `x` (an operand), int64 when `wide`.
    fn popcount(&self, x: &str, _wide: bool) -> String {
        format!("popcount({})", super::writer::strip(x))
    }
    /// Whether the dialect's compiler miscompiles an arithmetic shift right of a negation
    /// (the writer then spells `(-x) asr n` without the negation).
    fn negation_under_asr_miscompiles(&self) -> bool {
        false
    }
    /// A warp operation on `x` (an int or float value: bools are converted around it) with
    /// its lane or distance `lane` (shuffles only), as an expression of the result type.
    fn warp(&self, op: WarpOp, x: &str, lane: &str) -> String;
    /// An atomic read-modify-write returning the old value.
    fn atomic(&self, call: &AtomicCall, emit: &mut dyn Emit) -> String;
}

/// A call of the helper `sarek_abs_<t>`: integer `abs` of `x` that wraps at the minimum
/// (C's `abs` is undefined there); `q` qualifies the helper, `u` is `t`'s unsigned type.
pub(super) fn wrapping_abs(q: &str, t: &str, u: &str, x: &str, emit: &mut dyn Emit) -> String {
    let name = emit.helper(&format!("abs:{t}"), &format!("sarek_abs_{t}"), &|name| {
        format!(
            "{q}{t} {name}({t} x) {{\n{INDENT}return x < 0 ? ({t})(({u})0 - ({u})x) : x;\n}}\n\n"
        )
    });
    format!("{name}({x})")
}

/// `#pragma unroll [N]`, the spelling CUDA documents and every OpenCL compiler in use takes.
/// A count of 0 means "do not unroll", which the pragma spells 1 (0 is rejected).
fn pragma_unroll(n: u32) -> String {
    if n == crate::ir::UNROLL_FULL {
        "#pragma unroll".to_string()
    } else {
        format!("#pragma unroll {}", n.max(1))
    }
}
