//! Device memory and what every device keeps besides its backend state.
//!
//! - [`Mem`]: one allocation on one device, reference-counted. A launch in flight holds a
//!   clone of every allocation it uses until the next synchronisation, so dropping a buffer
//!   while a kernel still reads it frees nothing early (keep-alive rather than a borrow: a
//!   pipeline of launches must not tie up the caller's buffers).
//! - [`HostAllocation`]: the memory of the host backends (`interp`, `cpu`): plain bytes
//!   (8-byte aligned) that a host executor can take as a slice, so host "transfers" are
//!   memcpys and a compiled host kernel can run on the buffer in place.
//! - [`DeviceCore`]: the parts every backend shares: identity, the build cache, the
//!   launches in flight (what they keep alive, their trap status words, the faults a host
//!   backend found while dispatching) and transfer counters.
//!
//! Faults belong to launches, not to the device: every launch has its own trap status word
//! and its own deferred fault, and remembers the thread that enqueued it, so a
//! synchronisation reports the faults of the caller's launches only (another thread's trap
//! waits for that thread's synchronisation).

use crate::device::RuntimeError;
use crate::kernel::{BuildKey, Built, KernelHandle};
use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A process-unique device identity (two opens of one GPU are two devices: their memory
/// and caches are separate).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeviceId(u64);

impl DeviceId {
    fn fresh() -> DeviceId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        DeviceId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// A backend's allocation (freed by its `Drop`).
pub trait Allocation: Any + Send + Sync {
    fn as_any(&self) -> &dyn Any;
}

/// One allocation of `len` bytes on one device.
#[derive(Clone)]
pub struct Mem {
    inner: Arc<MemInner>,
}

struct MemInner {
    device: DeviceId,
    device_name: String,
    len: usize,
    raw: Box<dyn Allocation>,
}

impl Mem {
    pub fn new(core: &DeviceCore, len: usize, raw: Box<dyn Allocation>) -> Mem {
        Mem {
            inner: Arc::new(MemInner {
                device: core.id,
                device_name: core.name.clone(),
                len,
                raw,
            }),
        }
    }
    pub fn len(&self) -> usize {
        self.inner.len
    }
    pub fn is_empty(&self) -> bool {
        self.inner.len == 0
    }
    pub fn device(&self) -> DeviceId {
        self.inner.device
    }
    /// `backend (device name)` of the device holding this allocation.
    pub fn device_name(&self) -> &str {
        &self.inner.device_name
    }
    /// The backend's allocation, as the type it stored.
    pub fn raw<T: 'static>(&self) -> &T {
        self.inner
            .raw
            .as_any()
            .downcast_ref()
            .expect("an allocation is used only on the device that made it")
    }
    /// Whether `self` and `other` are the same allocation.
    pub fn same(&self, other: &Mem) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl std::fmt::Debug for Mem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mem({} bytes on {})", self.len(), self.device_name())
    }
}

/// Host memory of the `interp` and `cpu` devices: bytes in 8-byte words.
pub struct HostAllocation {
    words: Mutex<Vec<u64>>,
}

impl HostAllocation {
    pub fn new(len: usize) -> Result<HostAllocation, RuntimeError> {
        let n = len.div_ceil(8).max(1);
        let mut words = Vec::new();
        words
            .try_reserve_exact(n)
            .map_err(|_| RuntimeError::OutOfMemory {
                device: "host".into(),
                bytes: len,
            })?;
        words.resize(n, 0);
        Ok(HostAllocation {
            words: Mutex::new(words),
        })
    }

    /// The bytes, locked for the caller (a host executor runs on them in place).
    pub fn bytes(&self) -> HostBytes<'_> {
        HostBytes(self.words.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Allocation for HostAllocation {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Locked access to a [`HostAllocation`]'s bytes.
pub struct HostBytes<'a>(MutexGuard<'a, Vec<u64>>);

impl HostBytes<'_> {
    pub fn as_slice(&self) -> &[u8] {
        bytemuck::cast_slice(&self.0)
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(&mut self.0)
    }
}

/// How many bytes moved between host and device, and in how many copies; and the copies
/// made on the device itself (buffer to buffer, no host memory involved).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transfers {
    pub uploads: u64,
    pub upload_bytes: u64,
    pub downloads: u64,
    pub download_bytes: u64,
    pub device_copies: u64,
    pub device_copy_bytes: u64,
}

/// A launch's number on its device (in the order launches were numbered, before dispatch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LaunchId(u64);

/// A launch between dispatch and its thread's next synchronisation.
pub(crate) struct InFlight {
    pub id: LaunchId,
    /// The thread that enqueued it: the one whose synchronisation reports its fault.
    pub owner: std::thread::ThreadId,
    /// The kernel launched (none for a device-to-device copy).
    pub kernel: Option<KernelHandle>,
    /// Every allocation the launch uses, alive until it has finished (never read: holding
    /// them is the point).
    #[allow(dead_code)]
    pub keep: Vec<Mem>,
    /// The trap status word, when the kernel has traps.
    pub trap: Option<Mem>,
}

/// What every device keeps besides its backend state.
pub struct DeviceCore {
    id: DeviceId,
    /// The device itself, for buffers that must reach it later (a [`crate::Vector`]
    /// downloading on the host's demand); set by [`register`].
    this: std::sync::OnceLock<std::sync::Weak<dyn crate::device::Device>>,
    name: String,
    builds: Mutex<HashMap<BuildKey, Arc<Built>>>,
    /// IR kernels launched through [`crate::Device::launch`] (no handle): one handle per
    /// distinct IR, so they too build once.
    interned: Mutex<Vec<KernelHandle>>,
    pub(crate) in_flight: Mutex<Vec<InFlight>>,
    /// Faults host backends found while dispatching, by launch, reported at the
    /// synchronisation of the thread that enqueued the launch.
    pub(crate) deferred: Mutex<Vec<(LaunchId, RuntimeError)>>,
    next_launch: AtomicU64,
    uploads: AtomicU64,
    upload_bytes: AtomicU64,
    downloads: AtomicU64,
    download_bytes: AtomicU64,
    device_copies: AtomicU64,
    device_copy_bytes: AtomicU64,
    builds_done: AtomicU64,
}

impl DeviceCore {
    /// `name` is how errors name the device: `backend (device name)`.
    pub fn new(name: String) -> DeviceCore {
        DeviceCore {
            id: DeviceId::fresh(),
            this: std::sync::OnceLock::new(),
            name,
            builds: Mutex::new(HashMap::new()),
            interned: Mutex::new(Vec::new()),
            in_flight: Mutex::new(Vec::new()),
            deferred: Mutex::new(Vec::new()),
            next_launch: AtomicU64::new(1),
            uploads: AtomicU64::new(0),
            upload_bytes: AtomicU64::new(0),
            downloads: AtomicU64::new(0),
            download_bytes: AtomicU64::new(0),
            device_copies: AtomicU64::new(0),
            device_copy_bytes: AtomicU64::new(0),
            builds_done: AtomicU64::new(0),
        }
    }

    pub fn id(&self) -> DeviceId {
        self.id
    }

    /// A shared handle on the device (opened through [`register`]).
    pub fn handle(&self) -> Result<Arc<dyn crate::device::Device>, RuntimeError> {
        self.this
            .get()
            .and_then(std::sync::Weak::upgrade)
            .ok_or_else(|| {
                RuntimeError::Launch(format!(
                    "{} was not opened through `register`, so vectors cannot follow it",
                    self.name
                ))
            })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The build for `key`, made by `build` on first use.
    pub fn build_cached(
        &self,
        key: &BuildKey,
        build: impl FnOnce() -> Result<Built, RuntimeError>,
    ) -> Result<Arc<Built>, RuntimeError> {
        if let Some(b) = lock(&self.builds).get(key) {
            return Ok(b.clone());
        }
        // Built outside the lock: another thread may build the same key meanwhile; the
        // first insertion wins and both get it.
        let built = Arc::new(build()?);
        self.builds_done.fetch_add(1, Ordering::Relaxed);
        Ok(lock(&self.builds)
            .entry(key.clone())
            .or_insert(built)
            .clone())
    }

    /// Whether `key` is built already.
    pub fn is_built(&self, key: &BuildKey) -> bool {
        lock(&self.builds).contains_key(key)
    }

    /// Drop every build (a backend whose builds must go before its context does).
    pub fn clear_builds(&self) {
        lock(&self.builds).clear();
        lock(&self.interned).clear();
    }

    /// How many builds this device has made (cache misses).
    pub fn builds(&self) -> u64 {
        self.builds_done.load(Ordering::Relaxed)
    }

    /// The handle for an IR kernel launched without one.
    pub fn intern(&self, kernel: &sarek_compiler::ir::Kernel) -> KernelHandle {
        let mut known = lock(&self.interned);
        if let Some(h) = known.iter().find(|h| h.ir() == kernel) {
            return h.clone();
        }
        let h = KernelHandle::new(kernel.clone());
        known.push(h.clone());
        h
    }

    pub fn count_upload(&self, bytes: usize) {
        self.uploads.fetch_add(1, Ordering::Relaxed);
        self.upload_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub fn count_download(&self, bytes: usize) {
        self.downloads.fetch_add(1, Ordering::Relaxed);
        self.download_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub fn count_device_copy(&self, bytes: usize) {
        self.device_copies.fetch_add(1, Ordering::Relaxed);
        self.device_copy_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Transfers since the device opened.
    pub fn transfers(&self) -> Transfers {
        Transfers {
            uploads: self.uploads.load(Ordering::Relaxed),
            upload_bytes: self.upload_bytes.load(Ordering::Relaxed),
            downloads: self.downloads.load(Ordering::Relaxed),
            download_bytes: self.download_bytes.load(Ordering::Relaxed),
            device_copies: self.device_copies.load(Ordering::Relaxed),
            device_copy_bytes: self.device_copy_bytes.load(Ordering::Relaxed),
        }
    }

    /// A fresh launch number.
    pub(crate) fn next_launch(&self) -> LaunchId {
        LaunchId(self.next_launch.fetch_add(1, Ordering::Relaxed))
    }

    /// Record the fault `launch` hit while dispatching (host backends), for the
    /// synchronisation of the thread that enqueued it.
    pub fn defer_fault(&self, launch: LaunchId, e: RuntimeError) {
        lock(&self.deferred).push((launch, e));
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Share a freshly opened device, letting its core hand out handles on it.
pub fn register<D: crate::device::Device + 'static>(device: D) -> Arc<dyn crate::device::Device> {
    let shared: Arc<dyn crate::device::Device> = Arc::new(device);
    let _ = shared.core().this.set(Arc::downgrade(&shared));
    shared
}
