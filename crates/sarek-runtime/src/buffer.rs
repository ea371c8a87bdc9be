//! Typed buffers for Rust callers, and the checked launch every caller goes through.
//!
//! The [`Device`] trait copies vectors to the device before a launch and back after it, so the
//! host copy is always current once a launch returns, and no device copy outlives a launch.
//! What a [`Vector`] tracks is therefore honest bookkeeping, not a cache: which device last
//! wrote it (`last_device`) and whether the host changed it since (`host_modified`). A
//! backend that keeps device memory alive across launches can use these to skip uploads;
//! none does today.
//!
//! [`launch`] checks a launch against the device (block size limit, empty grid) and the
//! arguments against the kernel's signature (count, kinds, scalar types, element layout,
//! column lengths) before the device sees them, so every backend reports those mistakes the
//! same way.

use crate::device::{Backend, Device, DeviceInfo, LaunchConfig, LaunchStats, RuntimeError};
use crate::harness::{ParamKind, signature};
use crate::value::{ArgValue, Column, HostVector};
use sarek_compiler::abi::Leaf;
use sarek_compiler::ir::Kernel;
use sarek_compiler::types::{Literal, Scalar};

/// Check that `config` can run on the device `info` describes.
pub fn check_config(info: &DeviceInfo, config: LaunchConfig) -> Result<(), RuntimeError> {
    if config.grid.contains(&0) || config.block.contains(&0) {
        return Err(RuntimeError::Arguments(format!(
            "grid {} and block {} must be positive on every axis",
            dims(config.grid),
            dims(config.block)
        )));
    }
    let threads = config.block.iter().map(|&d| u64::from(d)).product::<u64>();
    if threads > u64::from(info.max_threads_per_block) {
        return Err(RuntimeError::Arguments(format!(
            "block {} has {threads} threads, more than the {} allowed per block on {} ({})",
            dims(config.block),
            info.max_threads_per_block,
            info.backend,
            info.name
        )));
    }
    Ok(())
}

fn dims(d: [u32; 3]) -> String {
    format!("{}x{}x{}", d[0], d[1], d[2])
}

/// Check `args` against `kernel`'s parameters.
pub fn check_args(kernel: &Kernel, args: &[ArgValue]) -> Result<(), RuntimeError> {
    let sig = signature(kernel);
    let err = |m: String| Err(RuntimeError::Arguments(m));
    if sig.len() != args.len() {
        return err(format!(
            "kernel `{}` takes {} arguments, {} given",
            kernel.name,
            sig.len(),
            args.len()
        ));
    }
    for (p, a) in sig.iter().zip(args) {
        let what = |a: &ArgValue| match a {
            ArgValue::Scalar(l) => l.scalar().name().to_string(),
            ArgValue::Aggregate(_) => "an aggregate".to_string(),
            ArgValue::Vector(_) => "a vector".to_string(),
        };
        match (&p.kind, a) {
            (ParamKind::Scalar(s), ArgValue::Scalar(l)) if l.scalar() == *s => {}
            (ParamKind::Aggregate(leaves), ArgValue::Aggregate(vals))
                if vals.len() == leaves.len()
                    && vals.iter().zip(leaves).all(|(v, l)| v.scalar() == l.scalar) => {}
            (ParamKind::Vector { leaves, .. }, ArgValue::Vector(v)) => {
                check_vector(&p.name, &p.type_name, leaves, v)?
            }
            _ => {
                return err(format!(
                    "parameter `{}` has type {}, but {} was given",
                    p.name,
                    p.type_name,
                    what(a)
                ));
            }
        }
    }
    Ok(())
}

fn check_vector(
    name: &str,
    type_name: &str,
    leaves: &[Leaf],
    v: &HostVector,
) -> Result<(), RuntimeError> {
    let fits = v.columns.len() == leaves.len()
        && v.columns
            .iter()
            .zip(leaves)
            .all(|(c, l)| c.scalar() == l.scalar);
    if !fits {
        let given: Vec<&str> = v.columns.iter().map(|c| c.scalar().name()).collect();
        return Err(RuntimeError::Arguments(format!(
            "parameter `{name}` has type {type_name}, but the vector given has columns ({})",
            given.join(", ")
        )));
    }
    if let Some(c) = v.columns.iter().find(|c| c.len() != v.len) {
        return Err(RuntimeError::Arguments(format!(
            "vector `{name}` says it has {} elements but a column holds {}",
            v.len,
            c.len()
        )));
    }
    if v.len > i32::MAX as usize {
        return Err(RuntimeError::Arguments(format!(
            "vector `{name}` has {} elements; `length` is an int32, so at most {}",
            v.len,
            i32::MAX
        )));
    }
    Ok(())
}

/// Launch after [`check_config`] and [`check_args`].
pub fn launch(
    device: &dyn Device,
    kernel: &Kernel,
    config: LaunchConfig,
    args: &mut [ArgValue],
) -> Result<LaunchStats, RuntimeError> {
    check_config(&device.info(), config)?;
    check_args(kernel, args)?;
    // Issue 15 (port this with the runtime redesign): a shared array declared `= ()` has
    // `block_dim_x` elements, known only now. The kernel is specialised to this launch's block
    // x size before any backend builds it; backends cache by generated source, so only such
    // kernels get one build per block size.
    if sarek_compiler::ir::specialize::needs_block_size(kernel) {
        let sized = sarek_compiler::ir::specialize::block_size(kernel, config.block[0]);
        return device.launch(&sized, config, args);
    }
    device.launch(kernel, config, args)
}

/// Scalar types a [`Vector`] can hold.
pub trait Element: Copy + Send + Sync + 'static {
    const SCALAR: Scalar;
    fn column(data: Vec<Self>) -> Column;
    fn slice(column: &Column) -> &[Self];
    fn slice_mut(column: &mut Column) -> &mut [Self];
    fn literal(self) -> Literal;
}

macro_rules! element {
    ($t:ty, $scalar:ident, $variant:ident) => {
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
            fn literal(self) -> Literal {
                Literal::$variant(self)
            }
        }
    };
}

element!(bool, Bool, Bool);
element!(i32, I32, I32);
element!(i64, I64, I64);
element!(f32, F32, F32);
element!(f64, F64, F64);

/// A vector of scalars for kernel parameters of type `T vector`.
#[derive(Clone, Debug)]
pub struct Vector<T: Element> {
    host: HostVector,
    /// The device whose launch last wrote this vector, if any.
    last_device: Option<Backend>,
    /// True when the host copy changed after that launch (through `as_mut_slice`).
    host_modified: bool,
    _t: std::marker::PhantomData<T>,
}

impl<T: Element> Vector<T> {
    pub fn from_vec(data: Vec<T>) -> Self {
        let len = data.len();
        Vector {
            host: HostVector {
                len,
                columns: vec![T::column(data)],
            },
            last_device: None,
            host_modified: true,
            _t: std::marker::PhantomData,
        }
    }

    pub fn filled(value: T, len: usize) -> Self {
        Self::from_vec(vec![value; len])
    }

    pub fn len(&self) -> usize {
        self.host.len
    }

    pub fn is_empty(&self) -> bool {
        self.host.len == 0
    }

    /// The host copy (current whenever no launch is running: launches copy back).
    pub fn as_slice(&self) -> &[T] {
        T::slice(&self.host.columns[0])
    }

    /// Mutable host access; marks the host copy as newer than any device's.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.host_modified = true;
        T::slice_mut(&mut self.host.columns[0])
    }

    pub fn to_vec(&self) -> Vec<T> {
        self.as_slice().to_vec()
    }

    /// The backend whose launch last wrote this vector.
    pub fn last_device(&self) -> Option<Backend> {
        self.last_device
    }

    /// Whether the host copy changed since the last launch that used it.
    pub fn host_modified(&self) -> bool {
        self.host_modified
    }
}

impl<T: Element> From<Vec<T>> for Vector<T> {
    fn from(v: Vec<T>) -> Self {
        Self::from_vec(v)
    }
}

/// Any vector, typed or not, that a [`Launch`] can pass.
pub trait AsHostVector {
    fn host_vector(&mut self) -> &mut HostVector;
    fn launched_on(&mut self, backend: Backend);
}

impl<T: Element> AsHostVector for Vector<T> {
    fn host_vector(&mut self) -> &mut HostVector {
        &mut self.host
    }
    fn launched_on(&mut self, backend: Backend) {
        self.last_device = Some(backend);
        self.host_modified = false;
    }
}

impl AsHostVector for HostVector {
    fn host_vector(&mut self) -> &mut HostVector {
        self
    }
    fn launched_on(&mut self, _: Backend) {}
}

enum LaunchArg<'a> {
    Value(ArgValue),
    Vector(&'a mut dyn AsHostVector),
}

/// A launch being assembled: arguments in the kernel's parameter order.
///
/// ```ignore
/// let stats = Launch::new(&kernel).arg(&mut x).arg(&mut y).scalar(2.0f32).run(&*device)?;
/// ```
pub struct Launch<'a> {
    kernel: &'a Kernel,
    config: Option<LaunchConfig>,
    args: Vec<LaunchArg<'a>>,
}

impl<'a> Launch<'a> {
    pub fn new(kernel: &'a Kernel) -> Self {
        Launch {
            kernel,
            config: None,
            args: Vec::new(),
        }
    }

    /// Grid and block; without it, the default 1-D launch over the first vector's length.
    pub fn config(mut self, config: LaunchConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// Pass a vector (typed [`Vector`] or a raw [`HostVector`]); it is updated in place.
    pub fn arg(mut self, v: &'a mut dyn AsHostVector) -> Self {
        self.args.push(LaunchArg::Vector(v));
        self
    }

    /// Pass a scalar.
    pub fn scalar<T: Element>(mut self, v: T) -> Self {
        self.args
            .push(LaunchArg::Value(ArgValue::Scalar(v.literal())));
        self
    }

    /// Pass a record/variant/tuple by value (its leaves in order).
    pub fn aggregate(mut self, leaves: Vec<Literal>) -> Self {
        self.args
            .push(LaunchArg::Value(ArgValue::Aggregate(leaves)));
        self
    }

    /// Check and run; vectors are copied back into the caller's buffers.
    pub fn run(mut self, device: &dyn Device) -> Result<LaunchStats, RuntimeError> {
        // Move the vectors into the argument list (no copy) and back afterwards, also on error.
        let mut values: Vec<ArgValue> = self
            .args
            .iter_mut()
            .map(|a| match a {
                LaunchArg::Value(v) => v.clone(),
                LaunchArg::Vector(v) => ArgValue::Vector(std::mem::replace(
                    v.host_vector(),
                    HostVector {
                        len: 0,
                        columns: Vec::new(),
                    },
                )),
            })
            .collect();
        let config = self.config.unwrap_or_else(|| {
            let n = values
                .iter()
                .find_map(|v| match v {
                    ArgValue::Vector(h) => Some(h.len),
                    _ => None,
                })
                .unwrap_or(1);
            LaunchConfig::linear(u32::try_from(n).unwrap_or(u32::MAX))
        });
        let result = launch(device, self.kernel, config, &mut values);
        let backend = device.info().backend;
        for (a, v) in self.args.iter_mut().zip(values) {
            if let (LaunchArg::Vector(dst), ArgValue::Vector(h)) = (a, v) {
                *dst.host_vector() = h;
                if result.is_ok() {
                    dst.launched_on(backend);
                }
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_limit_is_checked() {
        let info = DeviceInfo {
            backend: Backend::Cpu,
            name: "test".into(),
            max_threads_per_block: 1024,
            subgroups: false,
            float64: true,
        };
        assert!(
            check_config(
                &info,
                LaunchConfig {
                    grid: [1, 1, 1],
                    block: [32, 32, 1]
                }
            )
            .is_ok()
        );
        let e = check_config(
            &info,
            LaunchConfig {
                grid: [1, 1, 1],
                block: [64, 32, 1],
            },
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("2048 threads, more than the 1024"),
            "{e}"
        );
        assert!(
            check_config(
                &info,
                LaunchConfig {
                    grid: [0, 1, 1],
                    block: [1, 1, 1]
                }
            )
            .is_err()
        );
    }

    #[test]
    fn typed_vector_bookkeeping() {
        let mut v = Vector::from_vec(vec![1.0f32, 2.0]);
        assert!(v.host_modified());
        v.launched_on(Backend::Cpu);
        assert!(!v.host_modified());
        assert_eq!(v.last_device(), Some(Backend::Cpu));
        v.as_mut_slice()[0] = 5.0;
        assert!(v.host_modified());
        assert_eq!(v.to_vec(), vec![5.0, 2.0]);
    }
}
