//! Devices and launches: the interface every backend implements.

use crate::value::ArgValue;
use sarek_compiler::ir::Kernel;
use std::fmt;
use std::time::Duration;

/// The runtime backends (command-line spellings in [`Backend::name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    Interp,
    Cpu,
    Wgpu,
    Vulkan,
    OpenCl,
    Cuda,
    Ptx,
}

impl Backend {
    pub const ALL: [Backend; 7] = [
        Backend::Interp,
        Backend::Cpu,
        Backend::Wgpu,
        Backend::Vulkan,
        Backend::OpenCl,
        Backend::Cuda,
        Backend::Ptx,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Interp => "interp",
            Backend::Cpu => "cpu",
            Backend::Wgpu => "wgpu",
            Backend::Vulkan => "vulkan",
            Backend::OpenCl => "opencl",
            Backend::Cuda => "cuda",
            Backend::Ptx => "ptx",
        }
    }

    pub fn parse(s: &str) -> Result<Backend, String> {
        Backend::ALL
            .iter()
            .copied()
            .find(|b| b.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Backend::ALL.iter().map(|b| b.name()).collect();
                format!(
                    "unknown backend `{s}` (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Grid and block sizes in threads/blocks per axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

impl LaunchConfig {
    /// The default 1-D launch for `n` items: block 256 (or n if smaller), grid ceil(n / block).
    pub fn linear(n: u32) -> LaunchConfig {
        let b = n.clamp(1, 256);
        LaunchConfig {
            grid: [n.div_ceil(b).max(1), 1, 1],
            block: [b, 1, 1],
        }
    }
    pub fn threads_per_block(&self) -> u32 {
        self.block.iter().product()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    pub backend: Backend,
    /// Human-readable device name ("llvmpipe (LLVM 15.0.7, 256 bits)", "NVIDIA H200").
    pub name: String,
    pub max_threads_per_block: u32,
    pub subgroups: bool,
    pub float64: bool,
}

/// What one launch reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LaunchStats {
    /// Time of the kernel execution itself (device timer where available, else wall clock
    /// around the dispatch), excluding compilation and transfers.
    pub kernel_time: Duration,
    /// Wall-clock time of the whole launch call, including transfers and any compilation.
    pub total_time: Duration,
}

/// A runtime failure: unavailable device, rejected source, launch error, or (on the
/// interpreter) a located fault in the kernel.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RuntimeError {
    #[error("backend `{backend}` is unavailable: {reason}")]
    Unavailable { backend: Backend, reason: String },
    #[error("{0}")]
    Compile(String),
    #[error("{0}")]
    Arguments(String),
    #[error("{0}")]
    Launch(String),
    /// A fault found by the interpreter/cpu executor (out of bounds, division by zero, a
    /// barrier reached by part of a block, ...), or a trap a device reported. `span` is the
    /// kernel statement; `message` names the kernel (and, on the interpreter, the block and
    /// thread). Callers with the source map render the location.
    #[error("{message}")]
    Fault {
        span: sarek_compiler::Span,
        message: String,
    },
}

/// The error for a launch whose trap status word came back non-zero: the code names the
/// trap site ([`sarek_compiler::ir::Trap`]). Devices cannot say which thread trapped.
pub fn trap_fault(kernel: &Kernel, code: i32, backend: Backend) -> RuntimeError {
    match u32::try_from(code).ok().and_then(|c| kernel.trap(c)) {
        Some((trap, span)) => RuntimeError::Fault {
            span,
            message: format!(
                "{} in kernel `{}` (reported by the {backend} device)",
                trap.message, kernel.name
            ),
        },
        None => RuntimeError::Launch(format!(
            "kernel `{}` reported trap code {code}, which it does not contain",
            kernel.name
        )),
    }
}

/// A device that can run IR kernels. Implementations compile (and cache) per kernel and
/// launch configuration as they need; vectors in `args` are copied in before and out after.
pub trait Device: Send + Sync {
    fn info(&self) -> DeviceInfo;
    /// Run `kernel` over `config` with `args` in the kernel's parameter order.
    fn launch(
        &self,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &mut [ArgValue],
    ) -> Result<LaunchStats, RuntimeError>;
}
