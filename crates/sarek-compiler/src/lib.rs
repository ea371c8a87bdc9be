//! The Sarek compiler: from `.sarek` source to target source plus an ABI descriptor.
//!
//! The pipeline (see ARCHITECTURE.md) is a chain of pure functions:
//! [`front::parser`] -> [`front::typer`] -> [`front::mono`] -> [`front::recursion`] ->
//! [`front::convergence`] -> [`lower`] -> [`ir::validate`] -> per target
//! [`passes::legalize`] and one generator under [`back`].

pub mod abi;
pub mod back;
pub mod diag;
pub mod front;
pub mod fusion;
pub mod hash;
pub mod host;
pub mod intrinsics;
pub mod ir;
pub mod lower;
pub mod passes;
pub mod scalar;
pub mod skeleton;
pub mod stack;
pub mod target;
pub mod types;

pub use diag::{Diagnostic, FileId, SourceMap, Span};
pub use target::{Generated, Target, TargetOptions};

/// Parse, type-check and run the front-end passes on one file of `sources`; the other files
/// of `sources` are the program's modules, included where the file uses them
/// ([`front::modules`]).
/// On success every kernel of the file is checked, monomorphic and convergence-safe, and
/// lowers to the IR (lowering's own refusals are user errors too, so `sarek check` reports
/// them; [`check_lowered`] keeps the lowered kernels, [`lower_kernel`] rebuilds one).
pub fn check(sources: &SourceMap, file: FileId) -> Result<front::tast::Program, Vec<Diagnostic>> {
    check_lowered(sources, file).map(|checked| checked.program)
}

/// A checked program and its kernels lowered to the IR.
#[derive(Clone, Debug)]
pub struct Checked {
    pub program: front::tast::Program,
    /// One per kernel of `program`, in the same order.
    pub kernels: Vec<ir::Kernel>,
}

/// [`check`], keeping the IR of every kernel (validated in debug builds), so that a caller
/// generating code lowers each kernel once.
pub fn check_lowered(sources: &SourceMap, file: FileId) -> Result<Checked, Vec<Diagnostic>> {
    let ast = front::modules::parse_program(sources, file)?;
    stack::deep_if(ast.tall, || check_lowered_here(ast))
}

fn check_lowered_here(ast: front::ast::Program) -> Result<Checked, Vec<Diagnostic>> {
    let typed = front::typer::check_program(&ast)?;
    let mono = front::mono::monomorphise(typed)?;
    let flat = front::recursion::eliminate(mono)?;
    front::convergence::check(&flat)?;
    let mut diags: Vec<Diagnostic> = Vec::new();
    let mut kernels = Vec::with_capacity(flat.kernels.len());
    for k in &flat.kernels {
        match lower_kernel(&flat, &k.name) {
            Ok(ir) => kernels.push(ir),
            Err(ds) => {
                // A helper shared by several kernels reports once.
                for d in ds {
                    if !diags
                        .iter()
                        .any(|e| e.span == d.span && e.message == d.message)
                    {
                        diags.push(d);
                    }
                }
            }
        }
    }
    if diags.is_empty() {
        Ok(Checked {
            program: flat,
            kernels,
        })
    } else {
        Err(diags)
    }
}

/// Lower one kernel of a checked program to the IR (validated in debug builds).
pub fn lower_kernel(
    program: &front::tast::Program,
    kernel: &str,
) -> Result<ir::Kernel, Vec<Diagnostic>> {
    let k = stack::deep_if(program.tall, || lower::lower_kernel(program, kernel))?;
    debug_assert_eq!(
        ir::validate::validate(&k),
        Ok(()),
        "lowering produced invalid IR"
    );
    Ok(k)
}

/// Generate source for `target` from a lowered kernel.
pub fn generate(
    kernel: &ir::Kernel,
    target: Target,
    options: &TargetOptions,
) -> Result<Generated, Vec<Diagnostic>> {
    back::generate(kernel, target, options)
}

/// [`generate`] for each of `targets` in order, sharing what does not depend on the target
/// (the option passes and the feature analysis, [`back::Prepared`]).
pub fn generate_many(
    kernel: &ir::Kernel,
    targets: &[Target],
    options: &TargetOptions,
) -> Vec<Result<Generated, Vec<Diagnostic>>> {
    back::generate_many(kernel, targets, options)
}
