//! Compilation targets and the common output of every generator.

use crate::abi::Abi;
use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    Ir,
    Wgsl,
    Glsl,
    OpenCl,
    Cuda,
    Metal,
    Ptx,
}

impl Target {
    pub const ALL: [Target; 7] = [
        Target::Ir,
        Target::Wgsl,
        Target::Glsl,
        Target::OpenCl,
        Target::Cuda,
        Target::Metal,
        Target::Ptx,
    ];

    /// The command-line spelling.
    pub fn name(self) -> &'static str {
        match self {
            Target::Ir => "ir",
            Target::Wgsl => "wgsl",
            Target::Glsl => "glsl",
            Target::OpenCl => "opencl",
            Target::Cuda => "cuda",
            Target::Metal => "metal",
            Target::Ptx => "ptx",
        }
    }

    /// The name used in diagnostics ("refused by WGSL: ...").
    pub fn display_name(self) -> &'static str {
        match self {
            Target::Ir => "IR",
            Target::Wgsl => "WGSL",
            Target::Glsl => "GLSL",
            Target::OpenCl => "OpenCL C",
            Target::Cuda => "CUDA C",
            Target::Metal => "Metal",
            Target::Ptx => "PTX",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Target::ALL
            .iter()
            .copied()
            .find(|t| t.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Target::ALL.iter().map(|t| t.name()).collect();
                format!(
                    "unknown target `{s}` (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

/// Options a runtime passes to a generator (the CLI uses the defaults).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TargetOptions {
    /// Whether the device supports subgroup / warp operations (WGSL, GLSL, OpenCL).
    pub subgroups: bool,
    /// Whether the device supports float64 (OpenCL `cl_khr_fp64`, Vulkan `shaderFloat64`).
    pub float64: bool,
    /// Whether the device supports 64-bit integer atomics.
    pub int64_atomics: bool,
    /// Checked mode: bounds checks on every vector, shared- and local-array access and
    /// divisor checks, reported as located faults through the trap status word
    /// ([`crate::passes::checked`]). Off by default (what `compile` prints).
    pub checked: bool,
    /// WGSL: hold the kernel to the limits every WebGPU implementation applies, so the
    /// module runs in every browser (the WGSL specification's minimum limits: 8,192 bytes of
    /// function-scope variables per function, 16,384 bytes of workgroup variables; Tint's
    /// arrays of fewer than 65,536 elements), refusing past them, located. On by default
    /// (what `sarek compile --target wgsl` prints); a `wgpu` device turns it off and checks
    /// its adapter's own limits instead. Other targets ignore it.
    pub portable: bool,
}

impl Default for TargetOptions {
    fn default() -> Self {
        TargetOptions {
            subgroups: true,
            float64: true,
            int64_atomics: true,
            checked: false,
            portable: true,
        }
    }
}

/// What every generator returns.
#[derive(Clone, Debug, PartialEq)]
pub struct Generated {
    pub source: String,
    pub abi: Abi,
}
