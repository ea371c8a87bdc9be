//! Sarek: one kernel source for every GPU API.
//!
//! This facade re-exports the compiler ([`compiler`]) and the runtime ([`runtime`]) and adds
//! the few calls a program needs: compile a source ([`Program::compile`]), take a kernel
//! ([`Program::kernel`]), pick a device ([`default_device`], [`open`]) and launch with typed
//! buffers ([`Vector`], [`Kernel::launch`]).
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
//! saxpy.launch().arg(&mut x).arg(&mut y).scalar(3.0f32).scalar(1024i32).run(&*device)?;
//! assert_eq!(y.as_slice()[0], 5.0);
//! # Ok::<(), sarek::Error>(())
//! ```
//!
//! [`include_kernel!`], [`kernel_source!`] and [`kernel_module!`] check a kernel source while
//! the Rust program compiles: a Sarek error becomes a Rust compile error. `kernel_module!` also
//! writes one typed launcher per kernel.
//!
//! ```compile_fail
//! // `undefined_name` is not bound: this is a Rust compile error with the Sarek diagnostic.
//! const BAD: &str = sarek::kernel_source!("let%kernel k (v : int32 vector) = v.(0) <- undefined_name");
//! ```

pub use sarek_compiler as compiler;
pub use sarek_macros::{include_kernel, kernel_module, kernel_source};
pub use sarek_runtime as runtime;

pub use sarek_compiler::{Target, TargetOptions};
pub use sarek_runtime::buffer::{Launch, Vector};
pub use sarek_runtime::discover::{available, default_device, open};
pub use sarek_runtime::{
    ArgValue, Backend, Device, DeviceInfo, HostVector, LaunchConfig, LaunchStats, RuntimeError,
};

use sarek_compiler::diag::{self, Diagnostic};
use sarek_compiler::{FileId, SourceMap};

/// Errors of the high-level API; compile errors carry their rendered diagnostics.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Rendered diagnostics (`error: ...`, `--> file:line:col`, source excerpt).
    #[error("{0}")]
    Compile(String),
    #[error("{0}")]
    UnknownKernel(String),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// A checked source file: every kernel in it type-checks and passes the front-end passes.
pub struct Program {
    sources: SourceMap,
    file: FileId,
    checked: compiler::front::tast::Program,
}

impl Program {
    /// Parse and check `source`, registered as `name` for diagnostics.
    pub fn compile(name: &str, source: &str) -> Result<Program, Error> {
        let mut sources = SourceMap::new();
        let file = sources.add(name, source);
        match compiler::check(&sources, file) {
            Ok(checked) => Ok(Program {
                sources,
                file,
                checked,
            }),
            Err(diags) => Err(Error::Compile(diag::render_all(&diags, &sources, false))),
        }
    }

    /// Like [`Program::compile`], returning the diagnostics unrendered (with the source map
    /// they point into) for callers that render themselves.
    pub fn check(name: &str, source: &str) -> Result<Program, (SourceMap, Vec<Diagnostic>)> {
        let mut sources = SourceMap::new();
        let file = sources.add(name, source);
        match compiler::check(&sources, file) {
            Ok(checked) => Ok(Program {
                sources,
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
    pub fn checked(&self) -> &compiler::front::tast::Program {
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
            msg.push_str(&format!(" (kernels: {})", names.join(", ")));
        }
        msg
    }

    /// Lower kernel `name` to the IR, with diagnostics unrendered.
    pub fn lower(&self, name: &str) -> Result<compiler::ir::Kernel, Vec<Diagnostic>> {
        compiler::lower_kernel(&self.checked, name)
    }

    /// Lower kernel `name`, ready to launch.
    pub fn kernel(&self, name: &str) -> Result<Kernel, Error> {
        if !self.kernel_names().contains(&name) {
            return Err(Error::UnknownKernel(self.unknown_kernel(name)));
        }
        self.lower(name)
            .map(|ir| Kernel { ir })
            .map_err(|d| Error::Compile(self.render(&d, false)))
    }

    /// Render diagnostics against this program's sources.
    pub fn render(&self, diags: &[Diagnostic], color: bool) -> String {
        diag::render_all(diags, &self.sources, color)
    }

    /// Render a runtime error; interpreter faults get their `file:line:col` and source line,
    /// refusals their diagnostics as `sarek compile` renders them (each reason once).
    pub fn render_runtime_error(&self, e: &RuntimeError, color: bool) -> String {
        match e {
            RuntimeError::Fault { span, message } if !span.is_dummy() => {
                Diagnostic::error(*span, message.clone()).render(&self.sources, color)
            }
            RuntimeError::Refused { diagnostics, .. } if !diagnostics.is_empty() => {
                self.render(diagnostics, color)
            }
            other => format!("error: {other}\n"),
        }
    }
}

/// A kernel lowered to the IR.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub ir: compiler::ir::Kernel,
}

impl Kernel {
    pub fn name(&self) -> &str {
        &self.ir.name
    }

    /// Start a launch; add arguments in parameter order, then `.run(&*device)`.
    pub fn launch(&self) -> Launch<'_> {
        Launch::new(&self.ir)
    }

    /// Generate target source (for inspection; devices compile for themselves).
    pub fn generate(&self, target: Target) -> Result<compiler::Generated, Vec<Diagnostic>> {
        compiler::generate(&self.ir, target, &TargetOptions::default())
    }
}
