//! Kernel fusion through the facade: [`Program::fuse`] fuses a pipeline of the program's
//! kernels into one [`Kernel`] (the rules and the reasons for a refusal:
//! [`sarek_compiler::fusion`] and docs/fusion.md).
//!
//! ```
//! use sarek::{Backend, Program, Vector};
//! let program = Program::compile("pipe.sarek", r#"
//!     let%kernel scale (a : float32 vector) (t : float32 vector) (n : int32) =
//!       let i = global_thread_id in if i < n then t.(i) <- 2.0 *. a.(i)
//!     let%kernel shift (t : float32 vector) (b : float32 vector) (n : int32) =
//!       let i = global_thread_id in if i < n then b.(i) <- t.(i) +. 1.0
//! "#)?;
//! let fused = program.fuse(&["scale", "shift"])?;
//! assert_eq!(fused.eliminated, ["t"]);
//! // The fused kernel takes the producer's parameters, then the consumer's others: (a, n, b).
//! let mut a = Vector::from_vec(vec![1.0f32, 2.0, 3.0]);
//! let mut b = Vector::filled(0.0f32, 3);
//! fused.kernel.launch().arg(&mut a).scalar(3i32).arg(&mut b)
//!     .run(&*sarek::open(Backend::Interp)?)?;
//! assert_eq!(b.to_vec(), [3.0, 5.0, 7.0]);
//! # Ok::<(), sarek::Error>(())
//! ```

use crate::{Error, Kernel, Program};
use sarek_compiler::Diagnostic;
use sarek_compiler::fusion::{self, Decision};
use std::sync::Arc;

/// A fused pipeline: one kernel (launch it as the last kernel of the pipeline was launched),
/// the intermediates it no longer reads or writes, and each step's decision.
#[derive(Clone, Debug)]
pub struct Fused {
    pub kernel: Kernel,
    pub eliminated: Vec<String>,
    pub decisions: Vec<Decision>,
}

impl Program {
    /// Fuse `kernels` (names, in pipeline order) into one kernel; each step's intermediate is
    /// the vector the kernels so far write and the next one reads. A refusal is an
    /// [`Error::Compile`] saying which step and why, located at the statement it is about
    /// (the barrier, the store, the read of the intermediate).
    pub fn fuse(&self, kernels: &[&str]) -> Result<Fused, Error> {
        let irs = kernels
            .iter()
            .map(|k| self.kernel(k).map(|k| k.ir().clone()))
            .collect::<Result<Vec<_>, _>>()?;
        let f = fusion::fuse_pipeline(&irs).map_err(|r| self.refusal(r.diagnostic()))?;
        Ok(Fused {
            kernel: self.wrap(f.kernel),
            eliminated: f.eliminated,
            decisions: f.decisions,
        })
    }

    /// Fuse `producer` into `consumer` through their vector parameter `via`.
    pub fn fuse_via(&self, producer: &str, consumer: &str, via: &str) -> Result<Kernel, Error> {
        let (p, c) = (self.kernel(producer)?, self.kernel(consumer)?);
        fusion::fuse(p.ir(), c.ir(), via)
            .map(|k| self.wrap(k))
            .map_err(|r| {
                self.refusal(Diagnostic::error(
                    fusion::locate(p.ir(), c.ir(), &r),
                    format!("cannot fuse `{producer}` into `{consumer}`: {r}"),
                ))
            })
    }

    /// Whether `producer` fuses into `consumer` through `via`, and why (printable).
    pub fn can_fuse(&self, producer: &str, consumer: &str, via: &str) -> Result<Decision, Error> {
        let (p, c) = (self.kernel(producer)?, self.kernel(consumer)?);
        Ok(fusion::can_fuse(p.ir(), c.ir(), via))
    }

    /// A refusal as an [`Error::Compile`], rendered at the statement it is about.
    fn refusal(&self, d: Diagnostic) -> Error {
        if d.span.is_dummy() {
            Error::Compile {
                rendered: format!("error: {}\n", d.message),
                diagnostics: vec![d],
            }
        } else {
            Error::compile(vec![d], &self.sources)
        }
    }

    fn wrap(&self, ir: sarek_compiler::ir::Kernel) -> Kernel {
        Kernel {
            handle: sarek_runtime::KernelHandle::new(ir),
            sources: Arc::clone(&self.sources),
        }
    }
}
