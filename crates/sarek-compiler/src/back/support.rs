//! What each target supports, declared once: the input of the one refusal rule
//! ([`crate::ir::analysis`]). A runtime device starts from its target's declaration and
//! refines it with what the device lacks or limits; the options a runtime passes
//! ([`TargetOptions`]) are such a refinement, made here.

use super::glsl::Warps;
use crate::ir::analysis::{Feature, Limit, Support};
use crate::target::{Target, TargetOptions};

/// The declaration of `target` under `options` (GLSL with native warps).
pub fn support(target: Target, options: &TargetOptions) -> Support {
    match target {
        Target::Ir => Support::all(Target::Ir),
        Target::Wgsl => wgsl(options),
        Target::Glsl => glsl(options, Warps::Native),
        Target::OpenCl => opencl(options),
        Target::Cuda => cuda(),
        Target::Metal => metal(),
        Target::Ptx => ptx(),
    }
}

/// The WGSL limits naga (and so wgpu) enforces on every module, from WGSL's "Limits".
pub const WGSL_MAX_BRACE_NESTING: u64 = 127;
/// naga's parser refuses a module whose statements and expressions nest 200 calls deep; the
/// analysis's count ([`crate::ir::analysis::expr_depth`]) is an upper bound of naga's for the
/// WGSL writer's spelling, and a statement's own parentheses take a few more.
pub const WGSL_MAX_PARSER_NESTING: u64 = 190;

/// The notes below are literals (`concat!`): a support is built at every generation.
macro_rules! other_targets {
    () => {
        "other targets (OpenCL, CUDA, GLSL, PTX) still compile this kernel"
    };
}

macro_rules! cuda_supports_it {
    () => {
        "the `cuda` target (CUDA C through NVRTC) supports this kernel"
    };
}

pub fn wgsl(options: &TargetOptions) -> Support {
    Support::all(Target::Wgsl)
        .without(
            Feature::Float64,
            concat!("WGSL has no 64-bit floats; ", other_targets!()),
        )
        .without(
            Feature::Int64,
            concat!("WGSL has no 64-bit integers; ", other_targets!()),
        )
        .without(
            Feature::Int64Atomics,
            concat!("WGSL has no 64-bit integers; ", other_targets!()),
        )
        .without(
            Feature::AggregateEquality,
            "WGSL compares scalars and vectors of scalars only",
        )
        .without_if(
            !options.subgroups,
            Feature::Subgroups,
            "WGSL exposes warps as 32-lane subgroups (`enable subgroups;`); the device or the \
             options do not provide them",
        )
        .limit(
            Limit::BlockNesting,
            WGSL_MAX_BRACE_NESTING,
            "WGSL limits brace-enclosed statements to 127 levels per function",
        )
        .limit(
            Limit::ParserNesting,
            WGSL_MAX_PARSER_NESTING,
            "naga's WGSL parser stops at 200 levels of recursion",
        )
        .limit(
            Limit::LocalArrayBytes,
            SHADER_MAX_TYPE_BYTES,
            "naga lays out no type larger than 2^31 - 1 bytes",
        )
        .limit_if(
            options.portable,
            Limit::FunctionVarBytes,
            WGSL_PORTABLE_FUNCTION_VAR_BYTES,
            "portable WGSL (`compile --target wgsl`): WebGPU guarantees 8,192 bytes of \
             function-scope variables per function (Safari refuses more)",
        )
        .limit_if(
            options.portable,
            Limit::SharedBytes,
            WGSL_PORTABLE_WORKGROUP_BYTES,
            "portable WGSL (`compile --target wgsl`): WebGPU guarantees 16,384 bytes of \
             workgroup storage",
        )
        .limit_if(
            options.portable,
            Limit::StorageBuffers,
            WGSL_PORTABLE_STORAGE_BUFFERS,
            "portable WGSL (`compile --target wgsl`): WebGPU guarantees 8 storage buffers per \
             shader stage (`maxStorageBuffersPerShaderStage`); on a device, its own limit applies",
        )
        .limit_if(
            options.portable,
            Limit::ArrayElements,
            WGSL_PORTABLE_ARRAY_ELEMENTS,
            "portable WGSL (`compile --target wgsl`): Chrome's compiler (Tint) refuses arrays \
             of 65,536 elements or more",
        )
}

/// The WGSL specification's minimum limit on function-scope variables per function.
pub const WGSL_PORTABLE_FUNCTION_VAR_BYTES: u64 = 8192;
/// WebGPU's default `maxComputeWorkgroupStorageSize`.
pub const WGSL_PORTABLE_WORKGROUP_BYTES: u64 = 16384;
/// WebGPU's default `maxStorageBuffersPerShaderStage`.
pub const WGSL_PORTABLE_STORAGE_BUFFERS: u64 = 8;
/// Tint (Chrome, Edge) refuses arrays of 65,536 elements or more.
pub const WGSL_PORTABLE_ARRAY_ELEMENTS: u64 = 65535;

/// The largest type naga (WGSL) and SPIR-V tools lay out: sizes are 32-bit signed.
pub const SHADER_MAX_TYPE_BYTES: u64 = i32::MAX as u64;
/// Most statements and calls a kernel may have once the PTX writer has inlined its helper
/// calls ([`crate::ir::analysis::inlined_size`]: helpers taking vectors or arrays are inlined
/// at every call, so a chain of them that each call the previous one twice doubles per helper).
pub const PTX_INLINE_LIMIT: u64 = 500_000;
/// Most helpers the PTX writer emits as `.func`s ([`crate::ir::analysis::outlined_helpers`]):
/// ptxas's time grows about five-fold each time their number doubles (0.5 s for 100, 16 s for
/// 400 on one core), so past this a kernel is refused rather than left compiling for minutes.
pub const PTX_MAX_FUNCTIONS: u64 = 256;
/// CUDA's local memory per thread (compute capability 2.0 and later).
pub const CUDA_MAX_LOCAL_BYTES: u64 = 512 * 1024;

pub fn glsl(options: &TargetOptions, warps: Warps) -> Support {
    Support::all(Target::Glsl)
        .without_if(
            !options.float64,
            Feature::Float64,
            "the device (or these options) lacks shaderFloat64",
        )
        .without_if(
            !options.int64_atomics,
            Feature::Int64Atomics,
            "the device (or these options) lacks shaderBufferInt64Atomics / \
             shaderSharedInt64Atomics",
        )
        .without_if(
            warps == Warps::Native && !options.subgroups,
            Feature::Subgroups,
            "native warp operations need 32-lane subgroups (GL_KHR_shader_subgroup), which the \
             device (or these options) lacks",
        )
        .limit(
            Limit::LocalArrayBytes,
            SHADER_MAX_TYPE_BYTES,
            "SPIR-V array sizes and offsets are 32-bit",
        )
}

pub fn opencl(options: &TargetOptions) -> Support {
    Support::all(Target::OpenCl)
        .without_if(
            !options.float64,
            Feature::Float64,
            "the device (or these options) lacks the cl_khr_fp64 extension",
        )
        .without_if(
            !options.int64_atomics,
            Feature::Int64Atomics,
            "the device (or these options) lacks cl_khr_int64_base_atomics / \
             cl_khr_int64_extended_atomics",
        )
        .without_if(
            !options.subgroups,
            Feature::Subgroups,
            "OpenCL C 1.2 has warp operations only through cl_khr_subgroups (and \
             cl_khr_subgroup_shuffle, _shuffle_relative, _ballot), which the device (or these \
             options) lacks",
        )
        .without(
            Feature::HelperSharedArray,
            "OpenCL C declares `__local` arrays at kernel function scope only",
        )
}

/// Static `__shared__` arrays (and PTX `.shared` variables) are limited to 48 KiB per block;
/// more needs dynamic shared memory, which Sarek does not emit.
pub const CUDA_MAX_STATIC_SHARED: u64 = 48 * 1024;
/// `__global__` parameters since CUDA 12.1 on compute capability 7.0+: NVRTC reports "formal
/// parameter space overflowed" past it (its byte count is the analysis's).
pub const CUDA_MAX_PARAM_BYTES: u64 = 32_764;
/// Kernel parameters of a PTX ISA 8.0 module (this generator's `.version`): the documented
/// 4 KiB (ptxas 13 allows 0x1100 bytes and wants `.version 8.1` for more; a driver's JIT may
/// be older).
pub const PTX_MAX_PARAM_BYTES: u64 = 4_096;

pub fn cuda() -> Support {
    Support::all(Target::Cuda)
        .limit(
            Limit::SharedBytes,
            CUDA_MAX_STATIC_SHARED,
            "static shared memory is limited to 48 KiB per block",
        )
        .limit(
            Limit::ParamBytes,
            CUDA_MAX_PARAM_BYTES,
            "CUDA (12.1 and later, compute capability 7.0+) limits `__global__` parameters to \
             32,764 bytes",
        )
        .limit(
            Limit::LocalArrayBytes,
            CUDA_MAX_LOCAL_BYTES,
            "CUDA gives a thread at most 512 KiB of local memory",
        )
}

pub fn metal() -> Support {
    Support::all(Target::Metal)
        .without(
            Feature::Float64,
            "Metal Shading Language has no double type; use float32 or another target",
        )
        .without(
            Feature::Int64Atomics,
            "Metal has no signed 64-bit atomic read-modify-write operations",
        )
        .without(
            Feature::HelperSharedArray,
            "Metal declares `threadgroup` arrays at kernel function scope only",
        )
}

/// PTX supports every math function on both widths: float64 `exp`, `log`, `sin`, `atan`,
/// `pow` and their relatives are software routines (`back/softmath`), as is float
/// `mod`; the rest are instructions.
pub fn ptx() -> Support {
    Support::all(Target::Ptx)
        .limit(
            Limit::SharedBytes,
            CUDA_MAX_STATIC_SHARED,
            "static `.shared` memory is limited to 48 KiB per block",
        )
        .limit(
            Limit::ParamBytes,
            PTX_MAX_PARAM_BYTES,
            concat!(
                "PTX ISA 8.0 modules take at most 4 KiB of kernel parameters; ",
                cuda_supports_it!()
            ),
        )
        .limit(
            Limit::LocalArrayBytes,
            CUDA_MAX_LOCAL_BYTES,
            "CUDA gives a thread at most 512 KiB of local memory",
        )
        .limit(
            Limit::InlinedStatements,
            PTX_INLINE_LIMIT,
            concat!(
                "the PTX writer inlines helpers that take vectors or arrays at every call; ",
                cuda_supports_it!(),
                ", writing each helper once"
            ),
        )
        .limit(
            Limit::OutlinedFunctions,
            PTX_MAX_FUNCTIONS,
            "ptxas (and the driver's JIT) take time growing faster than the number of `.func`s: \
             3 s for 200, 16 s for 400, a minute for 800",
        )
}
