//! The IR of every corpus kernel: lowered, validated, legalized for every target (the output
//! validated again). The printed IR is `tests/out/ir/` (the `outputs` test).

use sarek_compiler::back::names::Keywords;
use sarek_compiler::diag::{SourceMap, render_all};
use sarek_compiler::ir::{print::print_kernel, validate::validate};
use sarek_compiler::passes::legalize::{Params, legalize};
use sarek_compiler::target::Target;
use std::path::Path;

use sarek_testkit::files::corpus;

/// Lower every kernel of `path`, returning (kernel name, IR text) pairs.
fn lower_file(path: &Path) -> Vec<(String, String)> {
    let mut sources = SourceMap::new();
    let text = std::fs::read_to_string(path).unwrap();
    let file = sources.add(path.display().to_string(), text);
    let program = sarek_compiler::check(&sources, file).unwrap_or_else(|d| {
        panic!(
            "{} does not check:\n{}",
            path.display(),
            render_all(&d, &sources, false)
        )
    });
    let mut out = Vec::new();
    for k in &program.kernels {
        let name = k.name.clone();
        let ir = sarek_compiler::lower::lower_kernel(&program, &name).unwrap_or_else(|d| {
            panic!(
                "{name} does not lower:\n{}",
                render_all(&d, &sources, false)
            )
        });
        validate(&ir).unwrap_or_else(|e| panic!("{e}\n{}", print_kernel(&ir)));
        for target in [
            Target::OpenCl,
            Target::Cuda,
            Target::Metal,
            Target::Glsl,
            Target::Wgsl,
        ] {
            let keywords = Keywords::of(target);
            for params in [Params::Positional, Params::ModuleScope] {
                let legal = legalize(&ir, keywords, params);
                validate(&legal).unwrap_or_else(|e| panic!("after legalize for {target}: {e}"));
            }
        }
        out.push((name, print_kernel(&ir)));
    }
    out
}

#[test]
fn corpus_ir_validates_before_and_after_legalize() {
    let files = corpus();
    if files.is_empty() {
        eprintln!("skipping: no corpus kernels under tests/kernels");
        return;
    }
    for path in files {
        lower_file(&path);
    }
}

#[test]
#[ignore = "scratch: set SAREK_IR_FILE"]
fn print_one() {
    if let Ok(f) = std::env::var("SAREK_IR_FILE") {
        for (_, text) in lower_file(Path::new(&f)) {
            println!("{text}");
        }
    }
}
