//! `sarek fuse FILE [MODULE]... --kernels A,B[,C...] [--via T] [--target T] [-o PATH]`.
//!
//! Fuses the named kernels of FILE left to right and prints the fused kernel for `--target`
//! (default `ir`), preceded on stderr by one `note:` line per step saying what was fused
//! through which vector and how often the producer is recomputed. `--via` names the
//! intermediate of a two-kernel fusion (by default each step's intermediate is the one
//! vector the kernels so far write and the next one reads); with more kernels it must be
//! absent. A refusal is a user error (exit 1) saying which step and why; unknown kernels,
//! fewer than two kernels and a target's refusal are exit 1 too; an unknown `--target` and
//! an unreadable file exit 2, as for `compile`.

use super::{CmdResult, Failure, color, kernel_name, load};
use sarek::{Target, TargetOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn run(
    file: &Path,
    modules: &[PathBuf],
    kernels: &str,
    via: Option<&str>,
    target: &str,
    output: Option<&Path>,
) -> CmdResult {
    let target: Target = target.parse().map_err(Failure::io)?;
    let program = load(file, modules)?;
    let names: Vec<&str> = kernels.split(',').map(str::trim).collect();
    if names.len() > 1 && names.iter().any(|n| n.is_empty()) {
        // `p,,c` is a typo more often than a two-stage pipeline: never guess which stage.
        return Err(Failure::user(format!(
            "`--kernels` has an empty entry (got `{kernels}`): name each kernel of the pipeline, \
             separated by single commas"
        )));
    }
    if names.len() < 2 {
        return Err(Failure::user(format!(
            "`--kernels` needs at least two kernels to fuse, in pipeline order (got `{kernels}`)"
        )));
    }
    for n in &names {
        kernel_name(&program, n)?;
    }
    let (kernel, notes) = match via {
        Some(via) if names.len() == 2 => {
            let decision = program
                .can_fuse(names[0], names[1], via)
                .map_err(|e| Failure::user(e.to_string()))?;
            let kernel = program
                .fuse_via(names[0], names[1], via)
                .map_err(|e| Failure::rendered(1, e.to_string()))?;
            (kernel, vec![decision.to_string()])
        }
        Some(_) => {
            return Err(Failure::user(
                "`--via` names the intermediate of two kernels; with more, each step's intermediate is found by name (leave `--via` out)",
            ));
        }
        None => {
            let fused = program
                .fuse(&names)
                .map_err(|e| Failure::rendered(1, e.to_string()))?;
            let notes = fused.decisions.iter().map(|d| d.to_string()).collect();
            (fused.kernel, notes)
        }
    };
    debug_assert_eq!(
        sarek_compiler::ir::validate::validate(kernel.ir()),
        Ok(()),
        "fusion produced invalid IR"
    );
    for n in notes {
        eprintln!("note: {n}");
    }
    let generated = sarek_compiler::generate(kernel.ir(), target, &TargetOptions::default())
        .map_err(|d| Failure::rendered(1, program.render(&d, color())))?;
    let mut source = generated.source;
    if !source.ends_with('\n') {
        source.push('\n');
    }
    match output {
        Some(path) => super::files::write_atomically(path, source.as_bytes())?,
        None => print!("{source}"),
    }
    Ok(ExitCode::SUCCESS)
}
