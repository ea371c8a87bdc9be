//! `sarek compile FILE [MODULE...] --target T [--kernel K] [--block X] [--fma] [-o PATH]`.
//!
//! `--block` sizes the shared arrays declared `= ()` (`block_dim_x` elements); without it such
//! a kernel is refused with a located message, since its size is known only at launch.
//!
//! Without `--kernel`, every kernel of the file is compiled, in source order. On stdout, when
//! there are several, each is preceded by a `// ==== kernel NAME ====` line (a comment in every
//! target language, PTX included), for reading. A file must hold one valid module, so `-o`
//! with several kernels needs a directory (`-o DIR/` or an existing one): one file per
//! kernel, `DIR/<kernel>.<target>`; `-o FILE` is refused rather than writing two modules into
//! one file, which no target compiler accepts.

use super::{CmdResult, Failure, color, contracted, kernel_name, load, lower};
use sarek::{Target, TargetOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The most threads per block any target runs.
const MAX_BLOCK_THREADS: u32 = 1024;

pub fn run(
    file: &Path,
    modules: &[PathBuf],
    block: Option<&str>,
    target: &str,
    kernel: Option<&str>,
    fma: bool,
    output: Option<&Path>,
) -> CmdResult {
    // An unknown target is a usage error, like any other malformed option value.
    let target: Target = target.parse().map_err(Failure::io)?;
    let block = block
        .map(|b| sarek_harness::parse_dims(b).map_err(|e| Failure::io(format!("--block: {e}"))))
        .transpose()?;
    if let Some(b) = block {
        // No target runs more threads per block (CUDA, Vulkan and Metal devices: 1,024);
        // past it the size would not be a block any launch can have.
        let threads: u64 = b.iter().map(|&d| u64::from(d)).product();
        if threads > u64::from(MAX_BLOCK_THREADS) {
            return Err(Failure::user(format!(
                "--block {}x{}x{} has {threads} threads; no target runs more than {MAX_BLOCK_THREADS} per block",
                b[0], b[1], b[2]
            )));
        }
    }
    let program = load(file, modules)?;
    let names: Vec<String> = match kernel {
        Some(k) => vec![kernel_name(&program, k)?],
        None => program
            .kernel_names()
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    if names.is_empty() {
        return Err(Failure::user(format!(
            "`{}` defines no kernel",
            file.display()
        )));
    }
    let to_dir =
        output.is_some_and(|p| p.is_dir() || p.as_os_str().to_string_lossy().ends_with('/'));
    if let Some(path) = output
        && names.len() > 1
        && !to_dir
    {
        return Err(Failure::user(format!(
            "`{}` has {} kernels ({}) and {} {} file holds one module: give `--kernel K`, or `-o DIR/` to write one file per kernel (`{}` is not a directory)",
            file.display(),
            names.len(),
            sarek_compiler::diag::name_list(&names.iter().map(String::as_str).collect::<Vec<_>>()),
            // "an IR file", "a PTX file".
            if target == Target::Ir { "an" } else { "a" },
            target.display_name(),
            path.display()
        )));
    }
    let mut modules = Vec::new();
    let mut diags = Vec::new();
    for name in &names {
        let mut ir = contracted(lower(&program, name)?, fma);
        if let Some(b) = block {
            ir = sarek_compiler::ir::specialize::block_size(&ir, b[0]);
        }
        match sarek_compiler::generate(&ir, target, &TargetOptions::default()) {
            Ok(g) => {
                let mut source = g.source;
                if !source.ends_with('\n') {
                    source.push('\n');
                }
                modules.push((name, source));
            }
            Err(d) => diags.extend(d),
        }
    }
    if !diags.is_empty() {
        return Err(Failure::rendered(1, program.render(&diags, color())));
    }
    match output {
        Some(dir) if to_dir => {
            std::fs::create_dir_all(dir).map_err(|e| cannot_write(dir, &e))?;
            for (name, source) in &modules {
                let path = dir.join(format!("{name}.{}", target.name()));
                super::files::write_atomically(&path, source.as_bytes())?;
            }
        }
        Some(path) => {
            let source = modules.first().map_or("", |m| m.1.as_str());
            super::files::write_atomically(path, source.as_bytes())?;
        }
        None => {
            let mut out = String::new();
            for (name, source) in &modules {
                if modules.len() > 1 {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(&format!("// ==== kernel {name} ====\n"));
                }
                out.push_str(source);
            }
            print!("{out}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn cannot_write(path: &Path, e: &std::io::Error) -> Failure {
    Failure::io(format!(
        "cannot write `{}`: {}",
        path.display(),
        super::io_reason(e)
    ))
}
