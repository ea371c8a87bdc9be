//! A sequence of kernels on resident device buffers: the intermediates a pipeline passes from
//! one kernel to the next never leave the device.
//!
//! Vectors are bound **by parameter name** across the stages (as [`Program::fuse`] names
//! the intermediates): `stage1 (a) (t)` then `stage2 (t) (out)` share `t`. The program
//! uploads the inputs once ([`Pipeline::upload`]); [`Pipeline::run`] allocates every other
//! vector on the device the first time (uninitialised, like [`Buffer::alloc`]: it must be
//! written by a stage before one reads it, which the pipeline checks from the kernels'
//! accesses), enqueues every stage in order with no transfer and no synchronisation between
//! them, and synchronises once; the program downloads what it wants ([`Pipeline::download`]).
//! A fused pipeline is the same helper with the one fused kernel as its stage.
//!
//! ```
//! use sarek::{Backend, Pipeline, Program};
//! let program = Program::compile("pipe.sarek", r#"
//!     let%kernel scale (a : float32 vector) (t : float32 vector) (n : int32) =
//!       let i = global_thread_id in if i < n then t.(i) <- 2.0 *. a.(i)
//!     let%kernel shift (t : float32 vector) (b : float32 vector) (n : int32) =
//!       let i = global_thread_id in if i < n then b.(i) <- t.(i) +. 1.0
//! "#)?;
//! let device = sarek::open(Backend::Cpu)?;
//! let mut pipe = Pipeline::new(&device, 3)?
//!     .stage(&program.kernel("scale")?)
//!     .stage(&program.kernel("shift")?)
//!     .scalar("n", 3i32);
//! pipe.upload("a", &[1.0f32, 2.0, 3.0])?;
//! let stats = pipe.run()?;                       // `t` stays on the device
//! assert_eq!(pipe.download::<f32>("b")?, [3.0, 5.0, 7.0]);
//! assert_eq!(stats.bytes, 4 * 12);               // a in, t out, t in, b out
//! # Ok::<(), sarek::Error>(())
//! ```
//!
//! [`Program::fuse`]: crate::Program::fuse
//! [`Buffer::alloc`]: crate::Buffer::alloc

use crate::{
    AsDevice, Device, DeviceVector, Element, Error, HostVector, Kernel, LaunchConfig, Literal,
    ParamKind, RuntimeError,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Kernels run in order on one device's buffers, bound by parameter name.
pub struct Pipeline {
    device: Arc<dyn Device>,
    /// The length of the vectors the pipeline allocates itself.
    len: usize,
    config: Option<LaunchConfig>,
    stages: Vec<(Kernel, Option<LaunchConfig>)>,
    buffers: BTreeMap<String, DeviceVector>,
    values: BTreeMap<String, Value>,
}

#[derive(Clone, Debug)]
enum Value {
    Scalar(Literal),
    Aggregate(Vec<Literal>),
}

/// What one [`Pipeline::run`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PipelineStats {
    /// Device-timed kernel time of all the stages.
    pub kernel_time: Duration,
    /// Wall-clock time of the run: enqueueing every stage and the one synchronisation.
    pub total_time: Duration,
    /// Launches made (one per stage).
    pub launches: usize,
    /// Bytes the stages move in device memory, from their accesses: each vector a stage
    /// reads counts once in, each it writes once out (as `sarek bench` counts).
    pub bytes: u64,
}

impl Pipeline {
    /// An empty pipeline on `device`; vectors it allocates itself get `len` elements.
    pub fn new<D: AsDevice + ?Sized>(device: &D, len: usize) -> Result<Pipeline, Error> {
        Ok(Pipeline {
            device: device.as_device().core().handle()?,
            len,
            config: None,
            stages: Vec::new(),
            buffers: BTreeMap::new(),
            values: BTreeMap::new(),
        })
    }

    /// Append a stage, launched with the pipeline's configuration.
    pub fn stage(mut self, kernel: &Kernel) -> Self {
        self.stages.push((kernel.clone(), None));
        self
    }

    /// Append a stage with its own grid and block.
    pub fn stage_with(mut self, kernel: &Kernel, config: LaunchConfig) -> Self {
        self.stages.push((kernel.clone(), Some(config)));
        self
    }

    /// Grid and block of every stage without its own; without it, each launch's default
    /// (1-D over its first vector's length).
    pub fn config(mut self, config: LaunchConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// The value of every scalar parameter named `name`, in every stage.
    pub fn scalar<T: Element>(self, name: &str, v: T) -> Self {
        self.value(name, v.literal())
    }

    /// As [`Pipeline::scalar`], given as a [`Literal`].
    pub fn value(mut self, name: &str, v: Literal) -> Self {
        self.values.insert(name.to_string(), Value::Scalar(v));
        self
    }

    /// A record, tuple or variant parameter passed by value: its leaves (see
    /// [`Kernel::value`]).
    pub fn aggregate(mut self, name: &str, leaves: Vec<Literal>) -> Self {
        self.values
            .insert(name.to_string(), Value::Aggregate(leaves));
        self
    }

    pub fn device(&self) -> &Arc<dyn Device> {
        &self.device
    }

    /// The device buffer bound to `name`, once uploaded, inserted or allocated by a run.
    pub fn buffer(&self, name: &str) -> Option<&DeviceVector> {
        self.buffers.get(name)
    }

    /// Bind an existing buffer of the pipeline's device to `name` (another pipeline's
    /// output, a [`crate::Buffer`]'s vector): nothing moves.
    pub fn insert(&mut self, name: &str, buffer: DeviceVector) -> Result<(), Error> {
        self.vector_param(name)?;
        if buffer.mem().device() != self.device.core().id() {
            return Err(Error::Runtime(RuntimeError::WrongDevice {
                param: name.to_string(),
                buffer_device: buffer.mem().device_name().to_string(),
                launch_device: self.device.core().name().to_string(),
            }));
        }
        self.buffers.insert(name.to_string(), buffer);
        Ok(())
    }

    /// Exchange the buffers bound to `a` and `b` (nothing moves): a stencil iterated in
    /// place reads last step's output as this step's input, `run` then `swap("src", "dst")`.
    pub fn swap(&mut self, a: &str, b: &str) -> Result<(), Error> {
        let missing = |n: &str| {
            Error::Runtime(RuntimeError::Arguments(format!(
                "the pipeline has no buffer `{n}` to swap yet: upload it, or run the pipeline first"
            )))
        };
        let x = self.buffers.remove(a).ok_or_else(|| missing(a))?;
        let Some(y) = self.buffers.remove(b) else {
            self.buffers.insert(a.to_string(), x);
            return Err(missing(b));
        };
        self.buffers.insert(a.to_string(), y);
        self.buffers.insert(b.to_string(), x);
        Ok(())
    }

    /// Upload `data` as vector `name` (one copy), allocating its buffer when it has none
    /// of that length.
    pub fn upload<T: Element>(&mut self, name: &str, data: &[T]) -> Result<(), Error> {
        self.upload_host(
            name,
            &HostVector {
                len: data.len(),
                columns: vec![T::column(data.to_vec())],
            },
        )
    }

    /// Upload a vector of any element type (records, tuples, variants: one column per leaf).
    pub fn upload_host(&mut self, name: &str, host: &HostVector) -> Result<(), Error> {
        let (kernel, leaves) = self.vector_param(name)?;
        let given: Vec<_> = host.columns.iter().map(|c| c.scalar()).collect();
        let expected: Vec<_> = leaves.iter().map(|l| l.scalar).collect();
        if given != expected {
            return Err(Error::Runtime(RuntimeError::Arguments(format!(
                "vector `{name}` holds ({}) in kernel `{}`, but the data given holds ({})",
                names(&expected),
                kernel.name(),
                names(&given)
            ))));
        }
        let buffer = self.buffer_of_len(name, host.len)?.clone();
        buffer
            .upload(self.device.as_ref(), host, name)
            .map_err(Error::Runtime)
    }

    /// Download vector `name` (one copy).
    pub fn download<T: Element>(&self, name: &str) -> Result<Vec<T>, Error> {
        let host = self.download_host(name)?;
        match host.columns.as_slice() {
            [c] if c.scalar() == T::SCALAR => Ok(T::slice(c).to_vec()),
            _ => Err(Error::Runtime(RuntimeError::Arguments(format!(
                "vector `{name}` holds ({}), not {}",
                names(&host.columns.iter().map(|c| c.scalar()).collect::<Vec<_>>()),
                T::SCALAR.name()
            )))),
        }
    }

    /// Download vector `name` with one column per leaf of its element type.
    pub fn download_host(&self, name: &str) -> Result<HostVector, Error> {
        let buffer = self.buffers.get(name).ok_or_else(|| {
            Error::Runtime(RuntimeError::Arguments(format!(
                "the pipeline has no buffer `{name}` yet: upload it, or run the pipeline first"
            )))
        })?;
        buffer.to_host(self.device.as_ref()).map_err(Error::Runtime)
    }

    /// Run every stage once, in order, on the device's buffers, then synchronise once.
    pub fn run(&mut self) -> Result<PipelineStats, Error> {
        let started = Instant::now();
        let Some((first, _)) = self.stages.first() else {
            return Err(Error::Runtime(RuntimeError::Arguments(
                "the pipeline has no stage".into(),
            )));
        };
        let first = first.clone();
        self.allocate_missing()?;
        let mut bytes = 0;
        for (kernel, config) in &self.stages {
            let mut launch = kernel.launch().timed();
            if let Some(c) = config.or(self.config) {
                launch = launch.config(c);
            }
            for (p, usage) in kernel.params().iter().zip(kernel.handle.uses()) {
                launch = match (&p.kind, self.values.get(&p.name)) {
                    (ParamKind::Vector { .. }, _) => {
                        let b = &self.buffers[&p.name];
                        bytes += b.byte_len() as u64
                            * (u64::from(usage.reads) + u64::from(usage.writes));
                        launch.buffer(b)
                    }
                    (_, Some(Value::Scalar(l))) => launch.value(*l),
                    (_, Some(Value::Aggregate(ls))) => launch.aggregate(ls.clone()),
                    (_, None) => {
                        return Err(Error::Runtime(RuntimeError::Arguments(format!(
                            "stage `{}` needs a value for parameter `{}` ({}): give it with \
                             `Pipeline::scalar` (or `value`, `aggregate`)",
                            kernel.name(),
                            p.name,
                            p.type_name
                        ))));
                    }
                };
            }
            launch.enqueue(&self.device)?;
        }
        // A fault of any stage surfaces here; every stage's kernel shares the program's
        // sources, so the first one locates it.
        let kernel_time =
            sarek_runtime::launch::synchronize(self.device.as_ref()).map_err(|e| first.error(e))?;
        Ok(PipelineStats {
            kernel_time,
            total_time: started.elapsed(),
            launches: self.stages.len(),
            bytes,
        })
    }

    /// The first stage with a vector parameter `name`, and its element's leaves.
    fn vector_param(&self, name: &str) -> Result<(&Kernel, Vec<sarek_compiler::abi::Leaf>), Error> {
        for (k, _) in &self.stages {
            if let Some(p) = k.params().into_iter().find(|p| p.name == name) {
                return match p.kind {
                    ParamKind::Vector { leaves, .. } => Ok((k, leaves)),
                    _ => Err(Error::Runtime(RuntimeError::Arguments(format!(
                        "parameter `{name}` of kernel `{}` is a {}, not a vector: give it \
                         with `Pipeline::scalar`",
                        k.name(),
                        p.type_name
                    )))),
                };
            }
        }
        let known: Vec<String> = self
            .stages
            .iter()
            .flat_map(|(k, _)| k.params())
            .filter(|p| matches!(p.kind, ParamKind::Vector { .. }))
            .map(|p| p.name)
            .collect();
        let mut msg = format!("no stage of the pipeline has a vector parameter `{name}`");
        if let Some(c) = sarek_compiler::diag::closest(name, known.iter().map(String::as_str)) {
            msg.push_str(&format!("; did you mean `{c}`?"));
        }
        Err(Error::Runtime(RuntimeError::Arguments(msg)))
    }

    /// The buffer of `name` holding `len` elements: the bound one, or a fresh one laid out
    /// as the first stage using it expects.
    fn buffer_of_len(&mut self, name: &str, len: usize) -> Result<&DeviceVector, Error> {
        if self.buffers.get(name).is_none_or(|b| b.len() != len) {
            let (kernel, _) = self.vector_param(name)?;
            let p = kernel
                .params()
                .into_iter()
                .find(|p| p.name == name)
                .expect("found by vector_param");
            let ParamKind::Vector { elem, .. } = &p.kind else {
                unreachable!("vector_param returns vectors")
            };
            let layout =
                sarek_compiler::abi::elem_layout(kernel.ir(), elem, self.device.layout_rules());
            let scalars = p_leaves(&p);
            let b = DeviceVector::alloc(self.device.as_ref(), scalars, layout, len)?;
            self.buffers.insert(name.to_string(), b);
        }
        Ok(&self.buffers[name])
    }

    /// Allocate every vector no one gave, refusing one a stage would read before any
    /// stage writes it.
    fn allocate_missing(&mut self) -> Result<(), Error> {
        let mut needed: Vec<String> = Vec::new();
        for (kernel, _) in &self.stages {
            for (p, usage) in kernel.params().iter().zip(kernel.handle.uses()) {
                if !matches!(p.kind, ParamKind::Vector { .. })
                    || self.buffers.contains_key(&p.name)
                    || needed.contains(&p.name)
                {
                    continue;
                }
                if usage.reads {
                    return Err(Error::Runtime(RuntimeError::Arguments(format!(
                        "stage `{}` reads vector `{}` before any stage writes it: upload it \
                         first (`Pipeline::upload`)",
                        kernel.name(),
                        p.name
                    ))));
                }
                needed.push(p.name.clone());
            }
        }
        for name in needed {
            self.buffer_of_len(&name, self.len)?;
        }
        Ok(())
    }
}

fn p_leaves(p: &crate::Param) -> Vec<crate::Scalar> {
    match &p.kind {
        ParamKind::Vector { leaves, .. } => leaves.iter().map(|l| l.scalar).collect(),
        _ => Vec::new(),
    }
}

fn names(scalars: &[crate::Scalar]) -> String {
    let n: Vec<&str> = scalars.iter().map(|s| s.name()).collect();
    n.join(", ")
}
