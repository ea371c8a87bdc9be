//! Sarek: one kernel source for every GPU API.
//!
//! This facade wraps the compiler (`sarek-compiler`) and the runtime (`sarek-runtime`) in
//! the few calls and types a program needs: compile a source ([`Program::compile`]), take a kernel
//! ([`Program::kernel`]), pick a device ([`default_device`], [`open`]) and launch with typed
//! buffers ([`Vector`], [`Kernel::launch`]). A sequence of kernels keeping its intermediates
//! on the device is a [`Pipeline`].
//!
//! Errors come back as [`Error`]. A fault found while a kernel runs (an out-of-bounds access
//! on `interp`, a `[@sarek.inline N]` helper recursing deeper than `N` on any backend) and a
//! backend refusing a kernel are *located*: [`Error::Located`] displays the rendered
//! diagnostic (`error: ...`, `┌─ file:line:col`, the source line and carets) and keeps the
//! [`RuntimeError`] it came from.
//!
//! ```no_run
//! use sarek::{Program, Vector};
//! let program = Program::compile("saxpy.sarek", r#"
//!     let%kernel saxpy (x : float32 vector) (y : float32 vector) (a : float32) (n : int32) =
//!       let i = global_thread_id in
//!       if i < n then y.(i) <- a *. x.(i) +. y.(i)
//! "#)?;
//! let saxpy = program.kernel("saxpy")?;
//! let device = sarek::default_device()?;
//! let mut x = Vector::from_vec(vec![1.0f32; 1024]);
//! let mut y = Vector::from_vec(vec![2.0f32; 1024]);
//! saxpy.launch().arg(&mut x).arg(&mut y).scalar(3.0f32).scalar(1024i32).run(&device)?;
//! assert_eq!(y.as_slice()[0], 5.0);
//! # Ok::<(), sarek::Error>(())
//! ```
//!
//! [`include_kernel!`], [`kernel_source!`] and [`kernel_module!`] check a kernel source while
//! the Rust program compiles: a Sarek error becomes a Rust compile error. `kernel_module!` also
//! writes one typed launcher per kernel.
//! The file macros take a program's module files too:
//! `kernel_module!(mod k = "k.sarek", modules = ["geometry_lib.sarek"])` (module
//! `Geometry_lib`, see [`Program::check_with_modules`]).
//!
//! Vectors of records, tuples and variants are [`HostVector`]s, one [`Column`] per scalar leaf
//! of the element type ([`Kernel::vector`] makes a zeroed one); by-value records, tuples and
//! variants are passed as their leaves ([`Kernel::value`] parses the command line's spelling,
//! `Rect,2.0,3.0`).
//!
//! ```
//! use sarek::{Backend, Column, Error, Program, Vector};
//! let program = Program::compile("shapes.sarek", r#"
//!     type shape = Circle of float32 | Rect of float32 * float32
//!     let%kernel area (s : shape vector) (scale : shape) (out : float32 vector) =
//!       let i = global_thread_id in
//!       if i < length out then
//!         out.(i) <- (match s.(i) with Circle r -> 3.0 *. r *. r | Rect (w, h) -> w *. h)
//!                    *. (match scale with Circle k -> k | Rect (k, _) -> k)
//! "#)?;
//! let kernel = program.kernel("area")?;
//! let device = sarek::open(Backend::Cpu)?;
//! // A shape vector: the tag (the constructor's index), then Circle_0, Rect_0, Rect_1.
//! let mut shapes = kernel.vector("s", 2)?;
//! shapes.columns[0] = Column::I32(vec![0, 1]);
//! shapes.columns[1] = Column::F32(vec![1.0, 0.0]);
//! shapes.columns[2] = Column::F32(vec![0.0, 2.0]);
//! shapes.columns[3] = Column::F32(vec![0.0, 3.0]);
//! let mut out = Vector::filled(0.0f32, 2);
//! kernel.launch()
//!     .arg(&mut shapes)
//!     .aggregate(kernel.value("scale", "Circle,2.0")?)
//!     .arg(&mut out)
//!     .run(&*device)?;
//! assert_eq!(out.to_vec(), [6.0, 12.0]);
//!
//! // Reading one element past the end: a fault located in the source.
//! let oob = Program::compile("oob.sarek", "let%kernel oob (v : int32 vector) =\n  v.(length v) <- 1\n")?
//!     .kernel("oob")?;
//! let mut v = Vector::filled(0i32, 4);
//! let e = oob.launch().arg(&mut v).run(&*sarek::open(Backend::Interp)?).unwrap_err();
//! assert!(matches!(e, Error::Located { .. }));
//! assert!(e.to_string().contains("oob.sarek:2:3"), "{e}");
//! # Ok::<(), sarek::Error>(())
//! ```
//!
//! ```compile_fail
//! // `undefined_name` is not bound: this is a Rust compile error with the Sarek diagnostic.
//! const BAD: &str = sarek::kernel_source!("let%kernel k (v : int32 vector) = v.(0) <- undefined_name");
//! ```

mod fusion;
mod pipeline;
mod skeleton;

pub use fusion::Fused;
pub use pipeline::{Pipeline, PipelineStats};
pub use sarek_macros::{include_kernel, kernel_module, kernel_source, skeleton};
pub use skeleton::{Skeleton, SkeletonKind};

// The types a program using the facade meets, and no more: the compiler's and the runtime's
// internals (IR, generators, backends, packers) stay in their crates, for the tools that
// need them (`sarek-compiler`, `sarek-runtime`).
pub use sarek_compiler::types::{Literal, Scalar};
pub use sarek_compiler::{Diagnostic, FileId, SourceMap, Span, Target, TargetOptions};
pub use sarek_runtime::discover::{available, default_device, open};
pub use sarek_runtime::signature::{Param, ParamKind};
pub use sarek_runtime::{
    ArgValue, AsDevice, Backend, Buffer, Column, Device, DeviceInfo, DeviceVector, Element,
    HostVector, LaunchConfig, LaunchStats, Mirrored, RuntimeError, Transfers, Vector,
};

/// Wait for every launch enqueued on `device` ([`Launch::enqueue`]); the device-timed
/// kernel time of the timed ones, or the first fault among them (located by
/// [`Kernel::error`] or [`Program::render_runtime_error`]).
pub fn synchronize<D: AsDevice + ?Sized>(device: &D) -> Result<std::time::Duration, RuntimeError> {
    sarek_runtime::launch::synchronize(device.as_device())
}

/// How many copies and bytes moved between the host and `device` since it opened.
pub fn transfers<D: AsDevice + ?Sized>(device: &D) -> Transfers {
    device.as_device().core().transfers()
}

use sarek_compiler::diag;
use std::sync::Arc;

/// Errors of the high-level API; compile errors carry their rendered diagnostics.
///
/// `Debug` is the message itself (rendered diagnostics unescaped, on their lines), so that
/// `fn main() -> Result<(), sarek::Error>` prints a readable error; match the variants, or
/// [`Error::runtime`], for the structure.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The program was rejected: `rendered` is what `sarek compile` prints (`error: ...`,
    /// `┌─ file:line:col`, source excerpt), `diagnostics` the same reports as values
    /// (message, severity, span into [`Program::sources`]) for callers that place them
    /// themselves (an editor, a test).
    #[error("{rendered}")]
    Compile {
        rendered: String,
        diagnostics: Vec<Diagnostic>,
    },
    #[error("{0}")]
    UnknownKernel(String),
    /// A runtime error with no place in the source: an unavailable backend, wrong launch
    /// arguments, a device failure.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// A runtime error located in the kernel source (a fault or trap, a refusal), displayed
    /// as its rendered diagnostics; `error` is the runtime's own value.
    /// (`error` is not the `source()`: the rendering already says everything it says.)
    #[error("{rendered}")]
    Located {
        rendered: String,
        error: RuntimeError,
    },
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.to_string().trim_end())
    }
}

impl Error {
    /// The runtime error behind [`Error::Runtime`] and [`Error::Located`].
    pub fn runtime(&self) -> Option<&RuntimeError> {
        match self {
            Error::Runtime(e) | Error::Located { error: e, .. } => Some(e),
            Error::Compile { .. } | Error::UnknownKernel(_) => None,
        }
    }

    /// The diagnostics of an [`Error::Compile`] (empty for the other variants).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            Error::Compile { diagnostics, .. } => diagnostics,
            _ => &[],
        }
    }

    /// A compile error: `diagnostics`, rendered against `sources` without colour.
    fn compile(diagnostics: Vec<Diagnostic>, sources: &SourceMap) -> Error {
        Error::Compile {
            rendered: diag::render_all(&diagnostics, sources, false),
            diagnostics,
        }
    }

    /// A compile error with no place in any source (`error: MESSAGE`).
    fn unlocated(message: impl std::fmt::Display) -> Error {
        let message = message.to_string();
        Error::Compile {
            rendered: format!("error: {message}\n"),
            diagnostics: vec![Diagnostic::error(Span::DUMMY, message)],
        }
    }
}

/// A checked source file: every kernel in it type-checks and passes the front-end passes.
pub struct Program {
    sources: Arc<SourceMap>,
    file: FileId,
    checked: sarek_compiler::front::tast::Program,
}

impl Program {
    /// Parse and check `source`, registered as `name` for diagnostics.
    pub fn compile(name: &str, source: &str) -> Result<Program, Error> {
        Program::check(name, source).map_err(|(sources, diags)| Error::compile(diags, &sources))
    }

    /// Like [`Program::compile`], with other files as the program's modules (see
    /// [`Program::check_with_modules`]); what `kernel_module!(.., modules = [..])` calls.
    pub fn compile_with_modules(
        name: &str,
        source: &str,
        modules: &[(String, String)],
    ) -> Result<Program, Error> {
        Program::check_with_modules(name, source, modules)
            .map_err(|(sources, diags)| Error::compile(diags, &sources))
    }

    /// Like [`Program::compile`], returning the diagnostics unrendered (with the source map
    /// they point into) for callers that render themselves.
    pub fn check(name: &str, source: &str) -> Result<Program, (SourceMap, Vec<Diagnostic>)> {
        Program::check_with_modules(name, source, &[])
    }

    /// Like [`Program::check`], with other files as the program's modules: `(name, source)`
    /// where `geometry_lib.sarek` is module `Geometry_lib`, included where the program uses
    /// it (`Geometry_lib.f`, `open Geometry_lib`).
    pub fn check_with_modules(
        name: &str,
        source: &str,
        modules: &[(String, String)],
    ) -> Result<Program, (SourceMap, Vec<Diagnostic>)> {
        let mut sources = SourceMap::new();
        let file = sources.add(name, source);
        for (n, text) in modules {
            sources.add(n.as_str(), text.as_str());
        }
        match sarek_compiler::check(&sources, file) {
            Ok(checked) => Ok(Program {
                sources: Arc::new(sources),
                file,
                checked,
            }),
            Err(diags) => Err((sources, diags)),
        }
    }

    pub fn sources(&self) -> &SourceMap {
        &self.sources
    }

    pub fn file(&self) -> FileId {
        self.file
    }

    /// The typed program.
    pub fn checked(&self) -> &sarek_compiler::front::tast::Program {
        &self.checked
    }

    /// Kernel names in source order.
    pub fn kernel_names(&self) -> Vec<&str> {
        self.checked
            .kernels
            .iter()
            .map(|k| k.name.as_str())
            .collect()
    }

    /// Why `name` is not a kernel of this program, with the closest name as a suggestion.
    pub fn unknown_kernel(&self, name: &str) -> String {
        let names = self.kernel_names();
        let mut msg = format!("no kernel `{name}` in {}", self.sources.name(self.file));
        if let Some(c) = diag::closest(name, names.iter().copied()) {
            msg.push_str(&format!("; did you mean `{c}`?"));
        } else if names.is_empty() {
            msg.push_str(" (it defines no kernel)");
        } else {
            msg.push_str(&format!(" (kernels: {})", diag::name_list(&names)));
        }
        msg
    }

    /// Lower kernel `name` to the IR, with diagnostics unrendered.
    pub fn lower(&self, name: &str) -> Result<sarek_compiler::ir::Kernel, Vec<Diagnostic>> {
        sarek_compiler::lower_kernel(&self.checked, name)
    }

    /// Lower kernel `name`, ready to launch.
    pub fn kernel(&self, name: &str) -> Result<Kernel, Error> {
        if !self.kernel_names().contains(&name) {
            return Err(Error::UnknownKernel(self.unknown_kernel(name)));
        }
        self.lower(name)
            .map(|ir| Kernel {
                handle: sarek_runtime::KernelHandle::new(ir),
                sources: Arc::clone(&self.sources),
            })
            .map_err(|d| Error::compile(d, &self.sources))
    }

    /// Render diagnostics against this program's sources.
    pub fn render(&self, diags: &[Diagnostic], color: bool) -> String {
        diag::render_all(diags, &self.sources, color)
    }

    /// Render a runtime error; interpreter faults get their `file:line:col` and source line,
    /// refusals their diagnostics as `sarek compile` renders them (each reason once).
    pub fn render_runtime_error(&self, e: &RuntimeError, color: bool) -> String {
        render_runtime_error(&self.sources, e, color)
    }
}

fn render_runtime_error(sources: &SourceMap, e: &RuntimeError, color: bool) -> String {
    located(sources, e, color).unwrap_or_else(|| format!("error: {e}\n"))
}

/// The rendered diagnostics of a runtime error that has a place in the source.
fn located(sources: &SourceMap, e: &RuntimeError, color: bool) -> Option<String> {
    match e {
        RuntimeError::Fault { span, message } if !span.is_dummy() => {
            Some(Diagnostic::error(*span, message.clone()).render(sources, color))
        }
        RuntimeError::Refused { diagnostics, .. } if !diagnostics.is_empty() => {
            Some(diag::render_all(diagnostics, sources, color))
        }
        _ => None,
    }
}

/// A kernel lowered to the IR, with the sources its errors point into.
#[derive(Clone)]
pub struct Kernel {
    /// The IR and the identity devices cache its builds under (one value, so the IR cannot
    /// change under a build made from it).
    handle: sarek_runtime::KernelHandle,
    sources: Arc<SourceMap>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("ir", self.ir())
            .finish_non_exhaustive()
    }
}

impl Kernel {
    pub fn name(&self) -> &str {
        &self.ir().name
    }

    /// The kernel's IR (`sarek-compiler`'s `ir::Kernel`), for tools that go below the facade.
    pub fn ir(&self) -> &sarek_compiler::ir::Kernel {
        self.handle.ir()
    }

    /// This kernel with its float `a * b + c` contracted into fused multiply-adds (one
    /// rounding instead of two: faster, and no longer bit-identical to the uncontracted
    /// kernel). Every backend, `interp` included, runs the same contracted kernel, so they
    /// still agree with each other. See `sarek_compiler::passes::opt::contract_fma`.
    pub fn with_fma(&self) -> Kernel {
        let mut ir = self.ir().clone();
        sarek_compiler::passes::opt::contract_fma(&mut ir);
        Kernel {
            handle: sarek_runtime::KernelHandle::new(ir),
            sources: Arc::clone(&self.sources),
        }
    }

    /// The parameters in order: name, type, and how a launch passes them.
    pub fn params(&self) -> Vec<Param> {
        self.handle.params().to_vec()
    }

    fn param(&self, name: &str) -> Result<Param, Error> {
        let params = self.params();
        match params.iter().position(|p| p.name == name) {
            Some(i) => Ok(params.into_iter().nth(i).expect("index found above")),
            None => {
                let mut msg = format!("kernel `{}` has no parameter `{name}`", self.name());
                if let Some(c) = diag::closest(name, params.iter().map(|p| p.name.as_str())) {
                    msg.push_str(&format!("; did you mean `{c}`?"));
                }
                Err(Error::Runtime(RuntimeError::Arguments(msg)))
            }
        }
    }

    /// A zeroed vector of `len` elements for vector parameter `param`, one [`Column`] per
    /// scalar leaf of its element type (a record's fields in order; a tuple's components; a
    /// variant's tag then every constructor's payload), as the `.npy` mapping lays them out.
    pub fn vector(&self, param: &str, len: usize) -> Result<HostVector, Error> {
        let p = self.param(param)?;
        sarek_runtime::buffer::check_vector_len(len).map_err(Error::Runtime)?;
        match p {
            Param {
                kind: ParamKind::Vector { leaves, .. },
                ..
            } => Ok(HostVector::zeros(&leaves, len)),
            p => Err(Error::Runtime(RuntimeError::Arguments(format!(
                "parameter `{param}` has type {}, not a vector type",
                p.type_name
            )))),
        }
    }

    /// The leaves of a value for parameter `param`, written as on the command line
    /// (`sarek run --arg`): a scalar (`2.5`), a record or tuple (`1.0,2.0`, `x=1.0,y=2.0`), a
    /// variant (`Rect,2.0,3.0`, `Empty`). Pass it with [`Launch::aggregate`] (or, for a
    /// scalar, its single leaf with [`Launch::value`]).
    pub fn value(&self, param: &str, text: &str) -> Result<Vec<Literal>, Error> {
        let p = self.param(param)?;
        if let ParamKind::Vector { .. } = p.kind {
            return Err(Error::Runtime(RuntimeError::Arguments(format!(
                "parameter `{param}` is a {}: pass a vector",
                p.type_name
            ))));
        }
        sarek_harness::parse_value(self.ir(), &p.ty, text).map_err(|m| {
            Error::Runtime(RuntimeError::Arguments(format!(
                "parameter `{param}` ({}): {m}",
                p.type_name
            )))
        })
    }

    /// A device buffer of `len` elements for vector parameter `param`, laid out as
    /// `device`'s code expects (records, tuples and variants included), zeroed.
    pub fn buffer<D: AsDevice + ?Sized>(
        &self,
        device: &D,
        param: &str,
        len: usize,
    ) -> Result<DeviceVector, Error> {
        let device = device.as_device();
        let host = self.vector(param, len)?;
        let p = self.param(param)?;
        let ParamKind::Vector { elem, .. } = &p.kind else {
            unreachable!("`vector` checked the parameter is a vector");
        };
        let layout = sarek_compiler::abi::elem_layout(self.ir(), elem, device.layout_rules());
        DeviceVector::from_host(device, &host, layout, param).map_err(Error::Runtime)
    }

    /// Start a launch; add arguments in parameter order, then `.run(&device)`.
    pub fn launch(&self) -> Launch<'_> {
        Launch {
            kernel: self,
            inner: sarek_runtime::Launch::new(&self.handle),
        }
    }

    /// Generate target source (for inspection; devices compile for themselves).
    pub fn generate(&self, target: Target) -> Result<sarek_compiler::Generated, Vec<Diagnostic>> {
        sarek_compiler::generate(self.ir(), target, &TargetOptions::default())
    }

    /// `e` as an [`Error`]: located in this kernel's source when it has a place there.
    pub fn error(&self, e: RuntimeError) -> Error {
        match located(&self.sources, &e, false) {
            Some(rendered) => Error::Located { rendered, error: e },
            None => Error::Runtime(e),
        }
    }
}

/// A launch being assembled: arguments in the kernel's parameter order, then [`Launch::run`].
///
/// Arguments are checked against the kernel's signature when it runs (count, scalar types,
/// vector element types), so every backend reports a mistake the same way.
pub struct Launch<'a> {
    kernel: &'a Kernel,
    inner: sarek_runtime::Launch<'a>,
}

impl<'a> Launch<'a> {
    /// Grid and block; without it, the default 1-D launch over the first vector's length
    /// (block min(256, n), grid ceil(n / block)).
    pub fn config(mut self, config: LaunchConfig) -> Self {
        self.inner = self.inner.config(config);
        self
    }

    /// Pass a host vector: a [`Vector`] (moves only when its copy on the device is
    /// stale) or a [`HostVector`] (uploaded before and downloaded after every launch).
    pub fn arg(mut self, v: &'a mut dyn Mirrored) -> Self {
        self.inner = self.inner.arg(v);
        self
    }

    /// Time this launch with the device's timer when it is enqueued: [`synchronize`] then
    /// returns its kernel time too ([`Launch::run`] always times).
    pub fn timed(mut self) -> Self {
        self.inner = self.inner.timed();
        self
    }

    /// Pass a device buffer ([`Buffer::vector`], [`Kernel::buffer`]); nothing moves.
    pub fn buffer(mut self, v: &'a DeviceVector) -> Self {
        self.inner = self.inner.buffer(v);
        self
    }

    /// Pass a scalar.
    pub fn scalar<T: Element>(mut self, v: T) -> Self {
        self.inner = self.inner.scalar(v);
        self
    }

    /// Pass a scalar given as a [`Literal`].
    pub fn value(mut self, v: Literal) -> Self {
        self.inner = self.inner.value(v);
        self
    }

    /// Pass a record/variant/tuple by value: its leaves in order (see [`Kernel::value`]).
    pub fn aggregate(mut self, leaves: Vec<Literal>) -> Self {
        self.inner = self.inner.aggregate(leaves);
        self
    }

    /// Check, run on `device` and wait for it. Vectors stay on the device; reading one on
    /// the host downloads it then. A fault or a refusal is an [`Error::Located`] in the
    /// kernel's source.
    pub fn run<D: AsDevice + ?Sized>(self, device: &D) -> Result<LaunchStats, Error> {
        let kernel = self.kernel;
        self.inner.run(device).map_err(|e| kernel.error(e))
    }

    /// Check and enqueue on `device` without waiting: a fault surfaces at [`synchronize`].
    /// Arguments are checked now.
    pub fn enqueue<D: AsDevice + ?Sized>(self, device: &D) -> Result<(), Error> {
        let kernel = self.kernel;
        self.inner.enqueue(device).map_err(|e| kernel.error(e))
    }
}
