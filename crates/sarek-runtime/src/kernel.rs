//! Kernels as the runtime keeps them: an IR kernel with a process-unique identity, the key a
//! device caches its builds under, and what a build leaves behind.
//!
//! A kernel is generated and built once per [`BuildKey`] and kept by the device
//! ([`crate::memory::DeviceCore`]); a later launch looks the key up (a hash of a few
//! integers) and never runs legalize, a generator or a source-text hash again.

use crate::access::{VectorUse, vector_uses};
use crate::signature::{Param, signature};
use sarek_compiler::abi::Abi;
use sarek_compiler::ir;
use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A process-unique kernel identity: equal for clones of one [`KernelHandle`], different
/// for every [`KernelHandle::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelId(u64);

/// An IR kernel ready to launch: cheap to clone, with its identity and its parameters.
#[derive(Clone, Debug)]
pub struct KernelHandle {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    id: KernelId,
    ir: ir::Kernel,
    params: Vec<Param>,
    uses: Vec<VectorUse>,
}

impl KernelHandle {
    pub fn new(ir: ir::Kernel) -> KernelHandle {
        // Identities only need to be distinct; the counter is not observable state.
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let params = signature(&ir);
        let uses = vector_uses(&ir);
        KernelHandle {
            inner: Arc::new(Inner {
                id: KernelId(NEXT.fetch_add(1, Ordering::Relaxed)),
                ir,
                params,
                uses,
            }),
        }
    }

    pub fn id(&self) -> KernelId {
        self.inner.id
    }

    pub fn ir(&self) -> &ir::Kernel {
        &self.inner.ir
    }

    pub fn name(&self) -> &str {
        &self.inner.ir.name
    }

    /// The parameters in order (computed once).
    pub fn params(&self) -> &[Param] {
        &self.inner.params
    }

    /// What the kernel does with each parameter, in order (computed once): a launch moves
    /// back only the vectors it may write.
    pub fn uses(&self) -> &[VectorUse] {
        &self.inner.uses
    }
}

/// What a build is specific to. Devices fix their target options when they open, so today
/// the kernel alone decides; the struct is `#[non_exhaustive]` so that options a launch can
/// vary (a block size baked into the code, a checked mode) become fields without touching
/// the backends' caches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct BuildKey {
    pub kernel: KernelId,
}

impl BuildKey {
    pub fn new(kernel: &KernelHandle) -> BuildKey {
        BuildKey {
            kernel: kernel.id(),
        }
    }
}

/// A kernel built for one device: the ABI the binder follows and the backend's executable
/// (a CUDA function, an OpenCL kernel, a WGSL module and its pipelines, ...).
pub struct Built {
    pub kernel: KernelHandle,
    pub abi: Abi,
    pub exe: Box<dyn Any + Send + Sync>,
}

impl Built {
    /// The backend's executable, as the type it stored.
    pub fn exe<T: 'static>(&self) -> &T {
        self.exe
            .downcast_ref()
            .expect("a device only dispatches what it built")
    }
}

impl std::fmt::Debug for Built {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Built")
            .field("kernel", &self.kernel.name())
            .field("abi", &self.abi)
            .finish_non_exhaustive()
    }
}
