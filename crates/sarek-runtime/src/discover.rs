//! Device discovery and selection.
//!
//! Every backend module exposes `open()`; this module calls them, turns a backend compiled
//! out (cargo feature off) or not implemented into an `Unavailable` error with the reason, and
//! picks the default device:
//!
//! 1. `SAREK_BACKEND=<name>` if set (an unknown name or an unavailable backend is an error,
//!    never a silent fallback: the user asked for that backend);
//! 2. else the first *hardware* device in [`PREFERENCE`] order (cuda, ptx, vulkan, wgpu,
//!    opencl);
//! 3. else `cpu`, then `interp`.
//!
//! Software implementations of the GPU APIs (Mesa llvmpipe/lavapipe, PoCL, SwiftShader) are
//! skipped by step 2: they exist for testing, and the `cpu` backend runs the same kernels with
//! the interpreter's exact semantics. Ask for them by name (`--backend vulkan`).

use crate::device::{Backend, Device, DeviceInfo, RuntimeError};
use std::sync::Arc;

/// The environment variable that overrides the default backend.
pub const ENV_BACKEND: &str = "SAREK_BACKEND";

/// GPU backends in the order the default device is looked for.
pub const PREFERENCE: [Backend; 5] = [
    Backend::Cuda,
    Backend::Ptx,
    Backend::Vulkan,
    Backend::Wgpu,
    Backend::OpenCl,
];

/// Open the (best) device of `backend`.
///
/// A panic inside a backend's initialisation (a driver crate asserting, say) is reported as
/// the backend being unavailable rather than taking the caller down.
pub fn open(backend: Backend) -> Result<Arc<dyn Device>, RuntimeError> {
    let opener: fn() -> Result<Arc<dyn Device>, RuntimeError> = match backend {
        Backend::Interp => crate::interp::open,
        Backend::Cpu => crate::cpu::open,
        #[cfg(feature = "wgpu")]
        Backend::Wgpu => crate::wgpu_backend::open,
        #[cfg(feature = "vulkan")]
        Backend::Vulkan => crate::vulkan::open,
        #[cfg(feature = "opencl")]
        Backend::OpenCl => crate::opencl::open,
        #[cfg(feature = "cuda")]
        Backend::Cuda => crate::cuda::open,
        #[cfg(feature = "cuda")]
        Backend::Ptx => crate::cuda::open_ptx,
        #[allow(unreachable_patterns)]
        _ => {
            return Err(RuntimeError::Unavailable {
                backend,
                reason: format!(
                    "this build of Sarek was compiled without the `{}` cargo feature",
                    feature_name(backend)
                ),
            });
        }
    };
    crate::foreign::guard(opener).unwrap_or_else(|what| {
        Err(RuntimeError::Unavailable {
            backend,
            reason: format!("initialisation panicked: {what}"),
        })
    })
}

fn feature_name(backend: Backend) -> &'static str {
    match backend {
        Backend::Wgpu => "wgpu",
        Backend::Vulkan => "vulkan",
        Backend::OpenCl => "opencl",
        Backend::Cuda | Backend::Ptx => "cuda",
        Backend::Interp | Backend::Cpu => "default",
    }
}

/// Every backend in [`Backend::ALL`] order: its device, or why it is unavailable.
pub fn available() -> Vec<(Backend, Result<DeviceInfo, String>)> {
    Backend::ALL
        .iter()
        .map(|&b| {
            (
                b,
                open(b)
                    .map(|d| d.info())
                    .map_err(|e| unavailable_reason(&e)),
            )
        })
        .collect()
}

/// The reason part of an `Unavailable` error (the whole message for other errors).
pub fn unavailable_reason(e: &RuntimeError) -> String {
    match e {
        RuntimeError::Unavailable { reason, .. } => reason.clone(),
        other => other.to_string(),
    }
}

/// True for software implementations of a GPU API, by device name.
pub fn is_software(info: &DeviceInfo) -> bool {
    let name = info.name.to_ascii_lowercase();
    [
        "llvmpipe",
        "lavapipe",
        "softpipe",
        "swiftshader",
        "pocl",
        "pthread",
        "cpu-",
    ]
    .iter()
    .any(|s| name.contains(s))
}

/// The backend `SAREK_BACKEND` names, if set and non-empty.
pub fn env_backend() -> Result<Option<Backend>, RuntimeError> {
    match std::env::var(ENV_BACKEND) {
        Ok(s) if !s.trim().is_empty() => Backend::parse(s.trim())
            .map(Some)
            .map_err(|e| RuntimeError::Arguments(format!("{ENV_BACKEND}: {e}"))),
        _ => Ok(None),
    }
}

/// The default device: `SAREK_BACKEND`, else the best hardware GPU, else `cpu` (see the
/// module documentation).
pub fn default_device() -> Result<Arc<dyn Device>, RuntimeError> {
    if let Some(b) = env_backend()? {
        return open(b);
    }
    best_device()
}

/// The best device ignoring `SAREK_BACKEND`.
pub fn best_device() -> Result<Arc<dyn Device>, RuntimeError> {
    for b in PREFERENCE {
        if let Ok(d) = open(b)
            && !is_software(&d.info())
        {
            return Ok(d);
        }
    }
    open(Backend::Cpu).or_else(|cpu_err| open(Backend::Interp).map_err(|_| cpu_err))
}

/// Open `backend` if given, else the default device.
pub fn open_or_default(backend: Option<Backend>) -> Result<Arc<dyn Device>, RuntimeError> {
    match backend {
        Some(b) => open(b),
        None => default_device(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_backend_answers() {
        let all = available();
        assert_eq!(all.len(), Backend::ALL.len());
        for (b, r) in all {
            if let Err(reason) = r {
                assert!(!reason.is_empty(), "{b}: empty reason");
            }
        }
    }

    #[test]
    fn software_devices_are_recognised() {
        let info = |name: &str| DeviceInfo {
            backend: Backend::Vulkan,
            name: name.into(),
            max_threads_per_block: 1024,
            subgroups: true,
            float64: true,
        };
        assert!(is_software(&info("llvmpipe (LLVM 15.0.7, 256 bits)")));
        assert!(is_software(&info("pthread-Intel(R) Xeon(R)")));
        assert!(!is_software(&info("NVIDIA H200")));
    }
}
