//! Devices and launches: the interface every backend implements.

use crate::bind::LaunchPlan;
use crate::kernel::{Built, KernelHandle};
use crate::memory::{Allocation, DeviceCore, Mem};
use crate::value::ArgValue;
use sarek_compiler::abi::LayoutRules;
use sarek_compiler::ir::Kernel;
use sarek_compiler::{Diagnostic, Target};
use std::fmt;
use std::time::Duration;

/// The runtime backends (command-line spellings in [`Backend::name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
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
        if s == "hip" {
            // The compiler writes HIP (`back::cfamily::Dialect::Hip`), but nothing here runs it.
            return Err(
                "backend `hip` is not available: HIP is a source dialect of the \
                        compiler library only, with no runtime backend (on an NVIDIA GPU use \
                        `cuda` or `ptx`; `sarek devices` lists the backends)"
                    .into(),
            );
        }
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

pub use sarek_compiler::host::LaunchConfig;

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

/// A runtime failure: unavailable device, a kernel the target or device cannot run, rejected
/// source, launch error, or (on the interpreter) a located fault in the kernel.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    #[error("backend `{backend}` is unavailable: {reason}")]
    Unavailable { backend: Backend, reason: String },
    /// The device's own compiler (NVRTC, glslang, naga, the OpenCL driver, the CUDA driver)
    /// rejected the source Sarek generated: a Sarek bug. The message carries its log.
    #[error("{0}")]
    Compile(String),
    /// The kernel cannot run here: the generator for `target` refused it (float64 on WGSL), or
    /// the device lacks a capability the kernel needs (no shaderInt64, no subgroups). The
    /// diagnostics are located in the kernel source, merged so that each reason appears once
    /// (see [`RuntimeError::refused`]). Callers with the source map render them.
    #[error("{}", refusal_summary(*target, kernel, diagnostics))]
    Refused {
        target: Target,
        kernel: String,
        diagnostics: Vec<Diagnostic>,
    },
    #[error("{0}")]
    Arguments(String),
    #[error("{0}")]
    Launch(String),
    /// A buffer passed to a launch on another device than the one holding it.
    #[error(
        "buffer for `{param}` lives on {buffer_device}, but the launch is on {launch_device}: \
         copy it to the host and back, or allocate it on {launch_device}"
    )]
    WrongDevice {
        param: String,
        buffer_device: String,
        launch_device: String,
    },
    /// The device could not allocate `bytes` bytes.
    #[error("out of device memory on {device}: could not allocate {bytes} bytes")]
    OutOfMemory { device: String, bytes: usize },
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

impl RuntimeError {
    /// A refusal of `kernel` for `target`, each reason once: diagnostics with the same message
    /// merge into the first, whose other places become secondary labels (at most
    /// [`MAX_EXTRA_PLACES`], then a note counting the rest), so a kernel using float64 in ten
    /// statements gets one error pointing at all of them rather than ten errors.
    pub fn refused(
        target: Target,
        kernel: &str,
        diagnostics: impl IntoIterator<Item = Diagnostic>,
    ) -> RuntimeError {
        let mut merged: Vec<(Diagnostic, usize)> = Vec::new();
        for d in diagnostics {
            let Some((first, hidden)) = merged
                .iter_mut()
                .find(|(m, _)| m.message == d.message && m.severity == d.severity)
            else {
                merged.push((d, 0));
                continue;
            };
            let places = std::iter::once(sarek_compiler::diag::Label {
                span: d.span,
                message: d.label,
            })
            .chain(d.secondary);
            for place in places {
                let known = place.span == first.span
                    || first.secondary.iter().any(|l| l.span == place.span);
                if place.span.is_dummy() || known {
                    continue;
                }
                if first.secondary.len() < MAX_EXTRA_PLACES {
                    first.secondary.push(place);
                } else {
                    *hidden += 1;
                }
            }
            for n in d.notes {
                if !first.notes.contains(&n) {
                    first.notes.push(n);
                }
            }
            for h in d.help {
                if !first.help.contains(&h) {
                    first.help.push(h);
                }
            }
        }
        let diagnostics = merged
            .into_iter()
            .map(|(mut d, hidden)| {
                if hidden > 0 {
                    let s = if hidden == 1 { "" } else { "s" };
                    d.notes.push(format!("and {hidden} more place{s}"));
                }
                d
            })
            .collect();
        RuntimeError::Refused {
            target,
            kernel: kernel.to_string(),
            diagnostics,
        }
    }
}

/// How many other places of the same refusal [`RuntimeError::refused`] labels.
pub const MAX_EXTRA_PLACES: usize = 4;

/// A refusal without its source map: `WGSL cannot run kernel `k`: message (note); message`.
fn refusal_summary(target: Target, kernel: &str, diagnostics: &[Diagnostic]) -> String {
    let reasons: Vec<String> = diagnostics
        .iter()
        .map(|d| {
            let notes: String = d.notes.iter().map(|n| format!(" ({n})")).collect();
            format!("{}{notes}", d.message)
        })
        .collect();
    format!(
        "{} cannot run kernel `{kernel}`: {}",
        target.display_name(),
        reasons.join("; ")
    )
}

/// A device: the one narrow interface every backend implements (build, alloc, upload,
/// download, copy, dispatch, sync), plus the [`DeviceCore`] it embeds.
///
/// Ordering: the device has one in-order queue. `dispatch` only enqueues; `upload` returns
/// once the bytes have left the caller's slice and is ordered after earlier dispatches
/// (a backend whose memory the host writes directly waits for them first); `download`
/// waits for every earlier dispatch. `sync` waits for everything and returns the device-timed
/// kernel time of the timed dispatches since the previous `sync`. Faults (traps, interpreter
/// faults) are found by [`crate::launch::synchronize`], which wraps `sync`.
///
/// Callers use the free functions of [`crate::launch`] (checked, cached, keeping buffers
/// alive) rather than these methods.
pub trait Device: Send + Sync {
    fn info(&self) -> DeviceInfo;
    /// Identity, build cache, launches in flight, transfer counters.
    fn core(&self) -> &DeviceCore;
    /// How vector elements are laid out in this device's buffers (the ABI of its code).
    fn layout_rules(&self) -> LayoutRules;
    /// Generate and build `kernel` (uncached: [`crate::launch::build`] caches per
    /// [`crate::kernel::BuildKey`]). A refusal is a located [`RuntimeError::Refused`].
    fn build(&self, kernel: &KernelHandle) -> Result<Built, RuntimeError>;
    /// Build `kernels` ahead of their first launch where the backend can share work among
    /// them (OpenCL: one program for all); each launch then finds its build in the cache.
    /// Best effort: a kernel left out, refused or failing is built alone on first use, so
    /// errors are the same as without it. The default does nothing.
    fn prebuild(&self, _kernels: &[KernelHandle]) {}
    /// Allocate `bytes` bytes (at least 4) of device memory. Contents are unspecified.
    fn alloc(&self, bytes: usize) -> Result<Box<dyn Allocation>, RuntimeError>;
    /// Copy `bytes` to the start of `mem`.
    fn upload(&self, mem: &Mem, bytes: &[u8]) -> Result<(), RuntimeError>;
    /// Copy the start of `mem` into `out`, after every earlier dispatch.
    fn download(&self, mem: &Mem, out: &mut [u8]) -> Result<(), RuntimeError>;
    /// Copy the first `bytes` bytes of `src` to the start of `dst`, both allocations of
    /// this device and distinct, ordered after earlier dispatches and before later ones.
    /// The default goes through host memory; backends override it with their own
    /// device-to-device copy.
    fn copy(&self, src: &Mem, dst: &Mem, bytes: usize) -> Result<(), RuntimeError> {
        let mut staging = vec![0u8; bytes];
        self.download(src, &mut staging)?;
        self.upload(dst, &staging)
    }
    /// Shared memory one block may declare on this device, in bytes (`None`: no limit). The
    /// default is the backend's documented figure ([`crate::limits::max_shared_bytes`]);
    /// backends that can ask their device (wgpu, Vulkan) return its own limit.
    fn max_shared_bytes(&self) -> Option<u64> {
        crate::limits::max_shared_bytes(self.info().backend)
    }
    /// Whether every launch on this device checks its accesses and divisors itself (`interp`
    /// and `cpu`; devices whose memory is the host's, see
    /// [`crate::limits::check_on_host`]), so that checked mode adds nothing.
    fn always_checked(&self) -> bool {
        false
    }
    /// Enqueue one launch of `built` as `plan` says.
    fn dispatch(&self, built: &Built, plan: &LaunchPlan) -> Result<(), RuntimeError>;
    /// Wait for every dispatch; the device-timed kernel time of the timed ones.
    fn sync(&self) -> Result<Duration, RuntimeError>;

    /// Run `kernel` once with host values (vectors uploaded, launched, synchronised,
    /// downloaded back into `args`): the convenience of tests and `sarek run`.
    fn launch(
        &self,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &mut [ArgValue],
    ) -> Result<LaunchStats, RuntimeError> {
        crate::launch::run_host(self, kernel, config, args)
    }
}
