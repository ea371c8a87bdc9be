//! `sarek compile FILE --target T [--kernel K] [-o PATH]`.
//!
//! Without `--kernel`, every kernel of the file is compiled, in source order; when there are
//! several, each is preceded by a `// ==== kernel NAME ====` line (a comment in every target
//! language, PTX included).

use super::{CmdResult, Failure, color, kernel_name, load, lower};
use sarek::{Target, TargetOptions};
use std::path::Path;
use std::process::ExitCode;

pub fn run(file: &Path, target: &str, kernel: Option<&str>, output: Option<&Path>) -> CmdResult {
    // An unknown target is a usage error, like any other malformed option value.
    let target: Target = target.parse().map_err(Failure::io)?;
    let program = load(file)?;
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
    let mut out = String::new();
    let mut diags = Vec::new();
    for name in &names {
        let ir = lower(&program, name)?;
        match sarek::compiler::generate(&ir, target, &TargetOptions::default()) {
            Ok(g) => {
                if names.len() > 1 {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(&format!("// ==== kernel {name} ====\n"));
                }
                out.push_str(&g.source);
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
            Err(d) => diags.extend(d),
        }
    }
    if !diags.is_empty() {
        return Err(Failure::rendered(1, program.render(&diags, color())));
    }
    match output {
        Some(path) => std::fs::write(path, out).map_err(|e| {
            Failure::io(format!(
                "cannot write `{}`: {}",
                path.display(),
                super::io_reason(&e)
            ))
        })?,
        None => print!("{out}"),
    }
    Ok(ExitCode::SUCCESS)
}
