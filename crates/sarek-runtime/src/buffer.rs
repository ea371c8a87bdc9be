//! Buffers: device memory a program holds across launches, and host vectors that move only
//! when needed.
//!
//! - [`DeviceVector`]: a vector in one device's memory, for any element type (its layout is
//!   the device's, from the ABI rules; a scalar column moves as one bulk copy, records and
//!   variants pack column by column). Launches take it and move nothing.
//! - [`Buffer<T>`]: the typed form for scalar elements: create, upload, download, fill, copy,
//!   with lengths checked.
//! - [`Vector<T>`]: the host vector of the SPOC model. It remembers where its current copy
//!   lives: a launch uploads it only if the launching device's copy is stale, and reading it
//!   on the host downloads only if a device wrote it since. A pipeline of launches on one
//!   device therefore moves it once each way.
//! - [`Launch`]: a launch being assembled from any of these.
//!
//! See docs/memory-model.md for who owns what and when data moves.

use crate::bind::BindArg;
use crate::device::{Device, LaunchConfig, LaunchStats, RuntimeError};
use crate::kernel::KernelHandle;
use crate::launch;
use crate::memory::Mem;
use crate::pack;
use crate::signature::ParamKind;
use crate::value::{ArgValue, Column, HostVector};
use sarek_compiler::abi::{AbiParamKind, ElemLayout, Leaf, Stored};
use sarek_compiler::types::{Literal, Scalar};
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A device handle as buffers keep it.
pub type DeviceRef = Arc<dyn Device>;

/// Anything that names a device: `&device` for an `Arc<dyn Device>` as well as `&*device`.
pub trait AsDevice {
    fn as_device(&self) -> &dyn Device;
}

impl AsDevice for dyn Device + '_ {
    fn as_device(&self) -> &dyn Device {
        self
    }
}

impl<T: AsDevice + ?Sized> AsDevice for Arc<T> {
    fn as_device(&self) -> &dyn Device {
        (**self).as_device()
    }
}

#[derive(Debug, PartialEq)]
struct ElemInfo {
    layout: ElemLayout,
    scalars: Vec<Scalar>,
}

/// A vector of `len` elements in one device's memory.
#[derive(Clone, Debug)]
pub struct DeviceVector {
    mem: Mem,
    len: usize,
    elem: Arc<ElemInfo>,
}

impl DeviceVector {
    /// Allocate `len` elements laid out as `layout` (contents unspecified). More than
    /// [`crate::limits::MAX_VECTOR_LEN`] elements is refused before allocating: no kernel
    /// could index them (lengths and indices are int32).
    pub fn alloc<D: Device + ?Sized>(
        device: &D,
        scalars: Vec<Scalar>,
        layout: ElemLayout,
        len: usize,
    ) -> Result<DeviceVector, RuntimeError> {
        check_vector_len(len)?;
        let bytes =
            (layout.stride as usize)
                .checked_mul(len)
                .ok_or_else(|| RuntimeError::OutOfMemory {
                    device: device.core().name().to_string(),
                    bytes: usize::MAX,
                })?;
        // Every API refuses empty buffers, and wgpu wants whole 4-byte words.
        let size = bytes.max(4).next_multiple_of(4);
        let raw = device.alloc(size)?;
        Ok(DeviceVector {
            mem: Mem::new(device.core(), size, raw),
            len,
            elem: Arc::new(ElemInfo { layout, scalars }),
        })
    }

    /// Allocate for `host`'s element type and upload it.
    pub fn from_host<D: Device + ?Sized>(
        device: &D,
        host: &HostVector,
        layout: ElemLayout,
        name: &str,
    ) -> Result<DeviceVector, RuntimeError> {
        pack::check_columns(host, &layout, name)?;
        let scalars = host.columns.iter().map(Column::scalar).collect();
        let v = DeviceVector::alloc(device, scalars, layout, host.len)?;
        v.upload(device, host, name)?;
        Ok(v)
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn mem(&self) -> &Mem {
        &self.mem
    }
    pub fn layout(&self) -> &ElemLayout {
        &self.elem.layout
    }
    /// The scalar type of each leaf.
    pub fn scalars(&self) -> &[Scalar] {
        &self.elem.scalars
    }
    /// Bytes of the elements (`stride * len`).
    pub fn byte_len(&self) -> usize {
        self.elem.layout.stride as usize * self.len
    }

    fn check_device<D: Device + ?Sized>(&self, device: &D, what: &str) -> Result<(), RuntimeError> {
        if self.mem.device() != device.core().id() {
            return Err(RuntimeError::WrongDevice {
                param: what.to_string(),
                buffer_device: self.mem.device_name().to_string(),
                launch_device: device.core().name().to_string(),
            });
        }
        Ok(())
    }

    fn check_len(&self, given: usize, what: &str) -> Result<(), RuntimeError> {
        if given != self.len {
            return Err(RuntimeError::Arguments(format!(
                "{what}: the buffer holds {} elements, {given} given",
                self.len
            )));
        }
        Ok(())
    }

    /// Copy `host` (same length and element type) into the buffer: one bulk copy for a
    /// dense scalar column, else packed column by column.
    pub fn upload<D: Device + ?Sized>(
        &self,
        device: &D,
        host: &HostVector,
        name: &str,
    ) -> Result<(), RuntimeError> {
        self.check_device(device, name)?;
        self.check_len(host.len, &format!("upload to `{name}`"))?;
        match host
            .columns
            .first()
            .and_then(|c| pack::dense_bytes(c, self.layout()))
        {
            Some(bytes) if host.columns.len() == 1 => self.upload_bytes(device, bytes),
            _ => self.upload_bytes(device, &pack::pack_vector(host, self.layout(), name)?),
        }
    }

    /// Copy raw device-layout bytes (at most [`DeviceVector::byte_len`]) to the buffer.
    pub fn upload_bytes<D: Device + ?Sized>(
        &self,
        device: &D,
        bytes: &[u8],
    ) -> Result<(), RuntimeError> {
        self.check_device(device, "upload")?;
        device.upload(&self.mem, bytes)?;
        device.core().count_upload(bytes.len());
        Ok(())
    }

    /// Copy the buffer into `host` (same length; columns of the element's leaves).
    pub fn download<D: Device + ?Sized>(
        &self,
        device: &D,
        host: &mut HostVector,
    ) -> Result<(), RuntimeError> {
        self.check_device(device, "download")?;
        self.check_len(host.len, "download")?;
        if let [col] = host.columns.as_mut_slice()
            && pack::is_dense(self.layout())
        {
            let bytes: &mut [u8] = match col {
                Column::I32(x) => bytemuck::cast_slice_mut(x),
                Column::I64(x) => bytemuck::cast_slice_mut(x),
                Column::F32(x) => bytemuck::cast_slice_mut(x),
                Column::F64(x) => bytemuck::cast_slice_mut(x),
                Column::Bool(_) => unreachable!("bool columns are never dense"),
            };
            return self.download_bytes(device, bytes);
        }
        let mut bytes = vec![0u8; self.byte_len()];
        self.download_bytes(device, &mut bytes)?;
        pack::unpack_vector(&bytes, host, self.layout());
        Ok(())
    }

    /// Copy the start of the buffer's bytes into `out`.
    pub fn download_bytes<D: Device + ?Sized>(
        &self,
        device: &D,
        out: &mut [u8],
    ) -> Result<(), RuntimeError> {
        self.check_device(device, "download")?;
        device.download(&self.mem, out)?;
        device.core().count_download(out.len());
        Ok(())
    }

    /// Copy `src` (same device, length and element layout) into this buffer on the device:
    /// no host memory involved, ordered after the launches enqueued before it and before
    /// those after it; both buffers stay alive until the next synchronisation.
    pub fn copy_from<D: Device + ?Sized>(
        &self,
        device: &D,
        src: &DeviceVector,
    ) -> Result<(), RuntimeError> {
        self.check_device(device, "copy destination")?;
        src.check_device(device, "copy source")?;
        self.check_len(src.len, "copy")?;
        if self.layout() != src.layout() || self.scalars() != src.scalars() {
            return Err(RuntimeError::Arguments(format!(
                "copy: the source holds ({}), the destination ({})",
                scalar_names(src.scalars()),
                scalar_names(self.scalars())
            )));
        }
        if self.mem.same(&src.mem) || self.byte_len() == 0 {
            return Ok(());
        }
        launch::enqueue_copy(device, &src.mem, &self.mem, self.byte_len())
    }

    /// Copy `src`, a buffer of `src_device`, into this buffer of `device`: on the device when
    /// they are the same ([`DeviceVector::copy_from`]), else through host memory (one
    /// download from `src_device`, one upload to `device`, each in its own layout), since
    /// devices share no memory.
    pub fn copy_from_device<D: Device + ?Sized, S: Device + ?Sized>(
        &self,
        device: &D,
        src_device: &S,
        src: &DeviceVector,
    ) -> Result<(), RuntimeError> {
        if src_device.core().id() == device.core().id() {
            return self.copy_from(device, src);
        }
        self.check_len(src.len, "copy")?;
        if self.scalars() != src.scalars() {
            return Err(RuntimeError::Arguments(format!(
                "copy: the source holds ({}), the destination ({})",
                scalar_names(src.scalars()),
                scalar_names(self.scalars())
            )));
        }
        let host = src.to_host(src_device)?;
        self.upload(device, &host, "copy")
    }

    /// A host copy with one column per leaf.
    pub fn to_host<D: Device + ?Sized>(&self, device: &D) -> Result<HostVector, RuntimeError> {
        let mut host = HostVector {
            len: self.len,
            columns: self
                .scalars()
                .iter()
                .map(|s| Column::zeros(*s, self.len))
                .collect(),
        };
        self.download(device, &mut host)?;
        Ok(host)
    }
}

/// A vector length a kernel can index: at most [`crate::limits::MAX_VECTOR_LEN`] elements.
pub fn check_vector_len(len: usize) -> Result<(), RuntimeError> {
    if len as u64 > crate::limits::MAX_VECTOR_LEN {
        return Err(RuntimeError::Arguments(format!(
            "a vector of {len} elements: vectors have at most {} (lengths and indices are int32)",
            crate::limits::MAX_VECTOR_LEN
        )));
    }
    Ok(())
}

fn scalar_names(scalars: &[Scalar]) -> String {
    let names: Vec<&str> = scalars.iter().map(|s| s.name()).collect();
    names.join(", ")
}

/// Scalar types a [`Vector`] or [`Buffer`] can hold.
pub trait Element: Copy + Send + Sync + 'static {
    const SCALAR: Scalar;
    fn column(data: Vec<Self>) -> Column;
    fn slice(column: &Column) -> &[Self];
    fn slice_mut(column: &mut Column) -> &mut [Self];
    /// The column's elements, moved out.
    fn take(column: Column) -> Vec<Self>;
    fn literal(self) -> Literal;
    /// The elements' bytes when they are plain data (every type but bool).
    fn bytes(data: &[Self]) -> Option<&[u8]>;
    fn bytes_mut(data: &mut [Self]) -> Option<&mut [u8]>;
}

macro_rules! element {
    ($t:ty, $scalar:ident, $variant:ident, $bytes:ident, $bytes_mut:ident) => {
        impl Element for $t {
            const SCALAR: Scalar = Scalar::$scalar;
            fn column(data: Vec<Self>) -> Column {
                Column::$variant(data)
            }
            fn slice(column: &Column) -> &[Self] {
                match column {
                    Column::$variant(v) => v,
                    _ => unreachable!("a Vector's column always has its element type"),
                }
            }
            fn slice_mut(column: &mut Column) -> &mut [Self] {
                match column {
                    Column::$variant(v) => v,
                    _ => unreachable!("a Vector's column always has its element type"),
                }
            }
            fn take(column: Column) -> Vec<Self> {
                match column {
                    Column::$variant(v) => v,
                    _ => unreachable!("a Vector's column always has its element type"),
                }
            }
            fn literal(self) -> Literal {
                Literal::$variant(self)
            }
            fn bytes(data: &[Self]) -> Option<&[u8]> {
                $bytes(data)
            }
            fn bytes_mut(data: &mut [Self]) -> Option<&mut [u8]> {
                $bytes_mut(data)
            }
        }
    };
}

fn pod<T: bytemuck::Pod>(d: &[T]) -> Option<&[u8]> {
    Some(bytemuck::cast_slice(d))
}
fn pod_mut<T: bytemuck::Pod>(d: &mut [T]) -> Option<&mut [u8]> {
    Some(bytemuck::cast_slice_mut(d))
}
fn not_pod(_: &[bool]) -> Option<&[u8]> {
    None
}
fn not_pod_mut(_: &mut [bool]) -> Option<&mut [u8]> {
    None
}

element!(bool, Bool, Bool, not_pod, not_pod_mut);
element!(i32, I32, I32, pod, pod_mut);
element!(i64, I64, I64, pod, pod_mut);
element!(f32, F32, F32, pod, pod_mut);
element!(f64, F64, F64, pod, pod_mut);

/// The layout of a scalar element on a device with `rules`.
pub fn scalar_layout(scalar: Scalar, rules: sarek_compiler::abi::LayoutRules) -> ElemLayout {
    use sarek_compiler::abi::LayoutRules;
    let stored = match (scalar, rules) {
        (Scalar::Bool, LayoutRules::C { bool_repr }) => bool_repr,
        (Scalar::Bool, LayoutRules::Std430) => Stored::BoolAsU32,
        (s, _) => Stored::Native(s),
    };
    ElemLayout {
        stride: stored.size(),
        leaves: vec![(0, stored)],
    }
}

/// A typed buffer of scalars on one device.
#[derive(Clone, Debug)]
pub struct Buffer<T: Element> {
    vector: DeviceVector,
    _t: PhantomData<T>,
}

impl<T: Element> Buffer<T> {
    /// `len` elements, contents unspecified.
    pub fn alloc(device: &dyn Device, len: usize) -> Result<Self, RuntimeError> {
        let layout = scalar_layout(T::SCALAR, device.layout_rules());
        Ok(Buffer {
            vector: DeviceVector::alloc(device, vec![T::SCALAR], layout, len)?,
            _t: PhantomData,
        })
    }

    /// A buffer holding `data`.
    pub fn from_slice(device: &dyn Device, data: &[T]) -> Result<Self, RuntimeError> {
        let b = Self::alloc(device, data.len())?;
        b.upload(device, data)?;
        Ok(b)
    }

    /// `len` copies of `value`.
    pub fn filled(device: &dyn Device, value: T, len: usize) -> Result<Self, RuntimeError> {
        let b = Self::alloc(device, len)?;
        b.fill(device, value)?;
        Ok(b)
    }

    pub fn len(&self) -> usize {
        self.vector.len()
    }
    pub fn is_empty(&self) -> bool {
        self.vector.is_empty()
    }
    /// The untyped vector (what a launch binds).
    pub fn vector(&self) -> &DeviceVector {
        &self.vector
    }

    /// Copy `data` (exactly [`Buffer::len`] elements) to the device.
    pub fn upload(&self, device: &dyn Device, data: &[T]) -> Result<(), RuntimeError> {
        self.vector.check_len(data.len(), "upload")?;
        match T::bytes(data).filter(|_| pack::is_dense(self.vector.layout())) {
            Some(bytes) => self.vector.upload_bytes(device, bytes),
            None => self.vector.upload(
                device,
                &HostVector {
                    len: data.len(),
                    columns: vec![T::column(data.to_vec())],
                },
                "upload",
            ),
        }
    }

    /// Copy the buffer into `out` (exactly [`Buffer::len`] elements).
    pub fn download_into(&self, device: &dyn Device, out: &mut [T]) -> Result<(), RuntimeError> {
        self.vector.check_len(out.len(), "download")?;
        if pack::is_dense(self.vector.layout())
            && let Some(bytes) = T::bytes_mut(out)
        {
            return self.vector.download_bytes(device, bytes);
        }
        let host = self.vector.to_host(device)?;
        out.copy_from_slice(T::slice(&host.columns[0]));
        Ok(())
    }

    /// The buffer's contents.
    pub fn download(&self, device: &dyn Device) -> Result<Vec<T>, RuntimeError> {
        // Zeroed memory the allocator has not touched yet: the copy writes each page once.
        let mut out = T::take(Column::zeros(T::SCALAR, self.len()));
        self.download_into(device, &mut out)?;
        Ok(out)
    }

    /// Set every element to `value`.
    pub fn fill(&self, device: &dyn Device, value: T) -> Result<(), RuntimeError> {
        self.upload(device, &vec![value; self.len()])
    }

    /// Copy `src` (same length, same device) into this buffer, on the device
    /// ([`DeviceVector::copy_from`]).
    pub fn copy_from(&self, device: &dyn Device, src: &Buffer<T>) -> Result<(), RuntimeError> {
        self.vector.copy_from(device, &src.vector)
    }

    /// A copy of this buffer (of `from`) on device `to`, through host memory: one download,
    /// one upload. On one device, [`Buffer::copy_from`] copies without the host.
    pub fn to_device(&self, from: &dyn Device, to: &dyn Device) -> Result<Buffer<T>, RuntimeError> {
        Buffer::from_slice(to, &self.download(from)?)
    }
}

/// Anything a [`Launch`] passes as a vector that lives on the host between launches.
pub trait Mirrored {
    fn len(&self) -> usize;
    /// The scalar type of each column.
    fn scalars(&self) -> Vec<Scalar>;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A copy on `device` laid out as `layout`, current (uploaded now if it was stale there).
    fn device_copy(
        &mut self,
        device: &DeviceRef,
        layout: &ElemLayout,
        name: &str,
    ) -> Result<DeviceVector, RuntimeError>;
    /// A launch that may write `copy` was enqueued; `done` when it has also finished
    /// successfully (a synchronous launch). Not called for a launch of a kernel that only
    /// reads the vector.
    fn written(
        &mut self,
        device: &DeviceRef,
        copy: &DeviceVector,
        done: bool,
    ) -> Result<(), RuntimeError>;
    /// The launch failed: the device copy may hold partial results.
    fn failed(&mut self);
}

/// A raw host vector passed to a launch moves every time: uploaded before, and downloaded
/// after when the kernel may write it.
impl Mirrored for HostVector {
    fn len(&self) -> usize {
        self.len
    }
    fn scalars(&self) -> Vec<Scalar> {
        self.columns.iter().map(Column::scalar).collect()
    }
    fn device_copy(
        &mut self,
        device: &DeviceRef,
        layout: &ElemLayout,
        name: &str,
    ) -> Result<DeviceVector, RuntimeError> {
        DeviceVector::from_host(&**device, self, layout.clone(), name)
    }
    fn written(
        &mut self,
        device: &DeviceRef,
        copy: &DeviceVector,
        _: bool,
    ) -> Result<(), RuntimeError> {
        copy.download(&**device, self)
    }
    fn failed(&mut self) {}
}

/// Where a [`Vector`]'s current copy lives.
struct Residency {
    /// The host copy is current.
    host: bool,
    /// The device copy, and whether it is current.
    device: Option<(DeviceRef, DeviceVector, bool)>,
}

/// A host vector of scalars for kernel parameters of type `T vector`, in the SPOC model:
/// it keeps a copy on the last device that used it and remembers which copies are current.
/// A launch uploads only when that device's copy is stale; reading on the host downloads
/// only when a device wrote since.
pub struct Vector<T: Element> {
    /// The host copy. Written through `&self` only by a download while `host` is false,
    /// which no outstanding `&[T]` can observe: borrows are handed out only while the host
    /// copy is current, and it becomes stale only through `&mut self`.
    host: UnsafeCell<HostVector>,
    state: Mutex<Residency>,
    _t: PhantomData<T>,
}

// SAFETY: see the `host` field: the mutex serialises downloads into the host copy, and no
// shared borrow of it exists while one can happen.
unsafe impl<T: Element> Sync for Vector<T> {}

impl<T: Element> Clone for Vector<T> {
    fn clone(&self) -> Self {
        Vector::from_vec(self.as_slice().to_vec())
    }
}

impl<T: Element + std::fmt::Debug> std::fmt::Debug for Vector<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<T: Element> Vector<T> {
    pub fn from_vec(data: Vec<T>) -> Self {
        Vector {
            host: UnsafeCell::new(HostVector {
                len: data.len(),
                columns: vec![T::column(data)],
            }),
            state: Mutex::new(Residency {
                host: true,
                device: None,
            }),
            _t: PhantomData,
        }
    }

    pub fn filled(value: T, len: usize) -> Self {
        Self::from_vec(vec![value; len])
    }

    pub fn len(&self) -> usize {
        // SAFETY: the length never changes after construction.
        unsafe { (*self.host.get()).len }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Make the host copy current (downloading if a device wrote since).
    fn sync_host(&self) -> Result<(), RuntimeError> {
        let mut state = crate::memory::lock(&self.state);
        if state.host {
            return Ok(());
        }
        let Some((device, copy, true)) = &state.device else {
            unreachable!("a stale host copy always has a current device copy");
        };
        // SAFETY: the host copy is stale, so no borrow of it exists (see the field).
        copy.download(&**device, unsafe { &mut *self.host.get() })?;
        state.host = true;
        Ok(())
    }

    /// The host copy, downloaded first if a device wrote the vector since.
    pub fn read(&self) -> Result<&[T], RuntimeError> {
        self.sync_host()?;
        // SAFETY: current and never written again while `&self` is borrowed.
        let host: &HostVector = unsafe { &*self.host.get() };
        Ok(T::slice(&host.columns[0]))
    }

    /// As [`Vector::read`]; panics only if the device fails the copy (a lost device).
    pub fn as_slice(&self) -> &[T] {
        self.read()
            .unwrap_or_else(|e| panic!("downloading a vector failed: {e}"))
    }

    /// Mutable host access: downloads if needed, then marks every device copy stale.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.as_slice();
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some((_, _, current)) = &mut state.device {
            *current = false;
        }
        T::slice_mut(&mut self.host.get_mut().columns[0])
    }

    pub fn to_vec(&self) -> Vec<T> {
        self.as_slice().to_vec()
    }

    /// The backend holding the vector's device copy, if any.
    pub fn last_device(&self) -> Option<crate::device::Backend> {
        let state = crate::memory::lock(&self.state);
        state.device.as_ref().map(|(d, _, _)| d.info().backend)
    }

    /// Whether the host copy is current.
    pub fn host_is_current(&self) -> bool {
        crate::memory::lock(&self.state).host
    }

    /// Whether the copy on the vector's device is current.
    pub fn device_is_current(&self) -> bool {
        crate::memory::lock(&self.state)
            .device
            .as_ref()
            .is_some_and(|d| d.2)
    }
}

impl<T: Element> From<Vec<T>> for Vector<T> {
    fn from(v: Vec<T>) -> Self {
        Self::from_vec(v)
    }
}

impl<T: Element> Mirrored for Vector<T> {
    fn len(&self) -> usize {
        Vector::len(self)
    }
    fn scalars(&self) -> Vec<Scalar> {
        vec![T::SCALAR]
    }

    fn device_copy(
        &mut self,
        device: &DeviceRef,
        layout: &ElemLayout,
        name: &str,
    ) -> Result<DeviceVector, RuntimeError> {
        let here = device.core().id();
        let same = {
            let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
            matches!(&state.device, Some((_, copy, _)) if copy.mem().device() == here && copy.layout() == layout)
        };
        if !same {
            // Moving to another device: through the host.
            self.sync_host()?;
            let host = self.host.get_mut();
            let copy = DeviceVector::from_host(&**device, host, layout.clone(), name)?;
            let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
            state.device = Some((device.clone(), copy.clone(), true));
            return Ok(copy);
        }
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        let Some((_, copy, current)) = &mut state.device else {
            unreachable!("checked above")
        };
        if !*current {
            copy.upload(&**device, self.host.get_mut(), name)?;
            *current = true;
        }
        Ok(copy.clone())
    }

    fn written(&mut self, _: &DeviceRef, _: &DeviceVector, _: bool) -> Result<(), RuntimeError> {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        state.host = false;
        Ok(())
    }

    fn failed(&mut self) {
        // The host copy stays what it was before the launch when it was current; the
        // device copy may hold partial results and is re-uploaded next time.
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        if state.host
            && let Some((_, _, current)) = &mut state.device
        {
            *current = false;
        }
    }
}

enum LaunchArg<'a> {
    Value(ArgValue),
    Mirrored(&'a mut dyn Mirrored),
    Device(&'a DeviceVector),
}

/// A launch being assembled: arguments in the kernel's parameter order, then
/// [`Launch::run`] (synchronous) or [`Launch::enqueue`] (asynchronous).
pub struct Launch<'a> {
    kernel: &'a KernelHandle,
    config: Option<LaunchConfig>,
    args: Vec<LaunchArg<'a>>,
    timed: bool,
}

impl<'a> Launch<'a> {
    pub fn new(kernel: &'a KernelHandle) -> Self {
        Launch {
            kernel,
            config: None,
            args: Vec::new(),
            timed: false,
        }
    }

    /// Time an enqueued launch with the device's timer: the next [`launch::synchronize`]
    /// adds its kernel time to what it returns ([`Launch::run`] always times).
    pub fn timed(mut self) -> Self {
        self.timed = true;
        self
    }

    /// Grid and block; without it, the default 1-D launch over the first vector's length.
    pub fn config(mut self, config: LaunchConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// Pass a host vector ([`Vector`], or a [`HostVector`] that moves every time).
    pub fn arg(mut self, v: &'a mut dyn Mirrored) -> Self {
        self.args.push(LaunchArg::Mirrored(v));
        self
    }

    /// Pass a device buffer (nothing moves).
    pub fn buffer(mut self, v: &'a DeviceVector) -> Self {
        self.args.push(LaunchArg::Device(v));
        self
    }

    /// Pass a scalar.
    pub fn scalar<T: Element>(mut self, v: T) -> Self {
        self.args
            .push(LaunchArg::Value(ArgValue::Scalar(v.literal())));
        self
    }

    /// Pass a scalar given as a [`Literal`].
    pub fn value(mut self, v: Literal) -> Self {
        self.args.push(LaunchArg::Value(ArgValue::Scalar(v)));
        self
    }

    /// Pass a record/variant/tuple by value (its leaves in order).
    pub fn aggregate(mut self, leaves: Vec<Literal>) -> Self {
        self.args
            .push(LaunchArg::Value(ArgValue::Aggregate(leaves)));
        self
    }

    /// Enqueue the launch and return; faults surface at [`launch::synchronize`]. Host
    /// vectors passed are uploaded if stale; those the kernel may write are marked as
    /// written by the device.
    pub fn enqueue<D: AsDevice + ?Sized>(self, device: &D) -> Result<(), RuntimeError> {
        let device = device.as_device().core().handle()?;
        self.go(&device, false).map(|_| ())
    }

    /// Launch, synchronise and report. Vectors read on the host afterwards download then.
    pub fn run<D: AsDevice + ?Sized>(self, device: &D) -> Result<LaunchStats, RuntimeError> {
        let device = device.as_device().core().handle()?;
        self.go(&device, true)
    }

    fn go(mut self, device: &DeviceRef, wait: bool) -> Result<LaunchStats, RuntimeError> {
        let total = Instant::now();
        let params = self.kernel.params();
        if params.len() != self.args.len() {
            return Err(RuntimeError::Arguments(format!(
                "kernel `{}` takes {} arguments, {} given",
                self.kernel.name(),
                params.len(),
                self.args.len()
            )));
        }
        let config = self.config.unwrap_or_else(|| {
            let n = self
                .args
                .iter()
                .find_map(|a| match a {
                    LaunchArg::Mirrored(v) => Some(v.len()),
                    LaunchArg::Device(v) => Some(v.len()),
                    LaunchArg::Value(_) => None,
                })
                .unwrap_or(1);
            LaunchConfig::linear(u32::try_from(n).unwrap_or(u32::MAX))
        });
        let built = launch::build_for(&**device, self.kernel, config)?;
        // Device copies of the host vectors (uploaded where stale).
        let mut copies: Vec<Option<DeviceVector>> = Vec::with_capacity(self.args.len());
        for ((arg, abi), p) in self.args.iter_mut().zip(&built.abi.params).zip(params) {
            copies.push(match (arg, &abi.kind) {
                (LaunchArg::Mirrored(v), AbiParamKind::Vector { elem, .. }) => {
                    let given = v.scalars();
                    if let ParamKind::Vector { leaves, .. } = &p.kind
                        && (given.len() != leaves.len()
                            || given.iter().zip(leaves).any(|(s, l)| *s != l.scalar))
                    {
                        let names: Vec<&str> = given.iter().map(|s| s.name()).collect();
                        return Err(RuntimeError::Arguments(format!(
                            "parameter `{}` has type {}, but the vector given has columns ({})",
                            p.name,
                            p.type_name,
                            names.join(", ")
                        )));
                    }
                    Some(v.device_copy(device, elem, &p.name)?)
                }
                (LaunchArg::Mirrored(_), _) => {
                    return Err(RuntimeError::Arguments(format!(
                        "parameter `{}` has type {}, but a vector was given",
                        p.name, p.type_name
                    )));
                }
                _ => None,
            });
        }
        let bind_args: Vec<BindArg<'_>> = self
            .args
            .iter()
            .zip(&copies)
            .map(|(a, c)| match (a, c) {
                (_, Some(copy)) => BindArg::Vector(copy),
                (LaunchArg::Device(v), _) => BindArg::Vector(v),
                (LaunchArg::Value(ArgValue::Scalar(l)), _) => BindArg::Scalar(*l),
                (LaunchArg::Value(ArgValue::Aggregate(ls)), _) => BindArg::Aggregate(ls),
                _ => unreachable!("vectors have copies"),
            })
            .collect();
        let enqueued =
            launch::enqueue_built(&**device, &built, config, &bind_args, wait || self.timed);
        drop(bind_args);
        let outcome = enqueued.and_then(|()| {
            if wait {
                launch::synchronize(&**device)
            } else {
                Ok(std::time::Duration::ZERO)
            }
        });
        // Only what the kernel may write comes back: an input it only reads stays current
        // on the host (a `Vector`) or is not downloaded again (a `HostVector`).
        let uses = self.kernel.uses();
        for ((arg, copy), usage) in self.args.iter_mut().zip(&copies).zip(uses) {
            if let (LaunchArg::Mirrored(v), Some(copy)) = (arg, copy) {
                match &outcome {
                    Ok(_) if usage.writes => v.written(device, copy, wait)?,
                    Ok(_) => {}
                    Err(_) => v.failed(),
                }
            }
        }
        let kernel_time = outcome?;
        Ok(LaunchStats {
            kernel_time,
            total_time: total.elapsed(),
        })
    }
}

/// The parameter kinds of a kernel that a launch passes as vectors.
pub fn vector_leaves(kernel: &KernelHandle, param: &str) -> Option<Vec<Leaf>> {
    kernel
        .params()
        .iter()
        .find(|p| p.name == param)
        .and_then(|p| match &p.kind {
            ParamKind::Vector { leaves, .. } => Some(leaves.clone()),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_layouts_follow_the_rules() {
        use sarek_compiler::abi::LayoutRules;
        let c8 = LayoutRules::C {
            bool_repr: Stored::BoolAsU8,
        };
        assert_eq!(scalar_layout(Scalar::Bool, c8).stride, 1);
        assert_eq!(scalar_layout(Scalar::Bool, LayoutRules::Std430).stride, 4);
        assert_eq!(scalar_layout(Scalar::F64, c8).stride, 8);
    }

    #[test]
    fn host_edits_make_device_copies_stale() {
        let mut v = Vector::from_vec(vec![1.0f32, 2.0]);
        assert!(v.host_is_current());
        assert!(!v.device_is_current());
        v.as_mut_slice()[0] = 5.0;
        assert_eq!(v.to_vec(), vec![5.0, 2.0]);
    }
}
