//! Every WGSL-expressible corpus kernel with `@run` directives runs on wgpu and agrees with
//! the interpreter (same seeded inputs, the harness's documented tolerance). Kernels WGSL
//! refuses (float64, int64) must be refused with located diagnostics naming WGSL; a device
//! compiler rejecting the generated WGSL is a failure. Skips with a printed
//! reason when no wgpu adapter exists, unless `SAREK_REQUIRE_BACKENDS` names `wgpu`.
#![cfg(feature = "wgpu")]

use sarek_harness::{
    Directive, Inputs, Tolerance, build_args, compare_args, parse_directives, render_error, run,
};
use sarek_runtime::{Backend, RuntimeError};
use std::path::PathBuf;

/// Directives, also where a file's header comment carries several `@run` lines (the corpus
/// writes them inside its description comment): each becomes its own `(* @run ... *)`.
fn directives(text: &str) -> Vec<Directive> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(at) = line.find("@run") {
            let rest = &line[at + 4..];
            let rest = rest.split("*)").next().unwrap_or(rest);
            let mut d = parse_directives(&format!("(* @run {rest} *)"))
                .unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
            for d in &mut d {
                d.line = i + 1;
            }
            out.extend(d);
        }
    }
    out
}

#[test]
fn corpus_agrees_with_interp_on_wgpu() {
    let device = match sarek_runtime::discover::open(Backend::Wgpu) {
        Ok(d) => d,
        Err(e) => {
            sarek_testkit::backends::unavailable("wgpu", &e.to_string());
            return;
        }
    };
    let interp = sarek_runtime::discover::open(Backend::Interp).expect("the interpreter");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/kernels");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sarek"))
        .collect();
    files.sort();
    let (mut agree, mut refused, mut failures) = (0, 0, Vec::new());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let ds = directives(&text);
        if ds.is_empty() {
            continue;
        }
        let name = format!(
            "tests/kernels/{}",
            file.file_name().unwrap().to_string_lossy()
        );
        let mut sources = sarek_compiler::SourceMap::new();
        let id = sources.add(&name, text);
        let program = sarek_compiler::check(&sources, id).unwrap_or_else(|d| {
            panic!(
                "{name}:\n{}",
                sarek_compiler::diag::render_all(&d, &sources, false)
            )
        });
        for d in &ds {
            let place = format!("{name}:{} {}", d.line, d.kernel);
            let kernel = sarek_compiler::lower_kernel(&program, &d.kernel).unwrap_or_else(|e| {
                panic!(
                    "{place}: {}",
                    sarek_compiler::diag::render_all(&e, &sources, false)
                )
            });
            let mut expected = build_args(&kernel, &Inputs::from_directive(d)).unwrap();
            let mut found = expected.clone();
            if let Err(e) = run(interp.as_ref(), &kernel, d.config(), &mut expected) {
                eprintln!(
                    "interp fails on {place} (not a wgpu problem): {}",
                    render_error(&e, &sources)
                );
                continue;
            }
            match run(device.as_ref(), &kernel, d.config(), &mut found) {
                Ok(_) => {}
                Err(
                    ref e @ RuntimeError::Refused {
                        target: sarek_compiler::Target::Wgsl,
                        ref diagnostics,
                        ..
                    },
                ) => {
                    let shown = render_error(e, &sources);
                    // Every reason located in the kernel source and naming WGSL.
                    if diagnostics
                        .iter()
                        .all(|d| !d.span.is_dummy() && d.message.contains("WGSL"))
                    {
                        eprintln!("refused  {place}: {shown}");
                        refused += 1;
                    } else {
                        failures.push(format!("UNLOCATED refusal {place}: {shown}"));
                    }
                    continue;
                }
                Err(e) => {
                    failures.push(format!("ERROR    {place}: {}", render_error(&e, &sources)));
                    continue;
                }
            }
            let diffs: Vec<String> =
                compare_args(&kernel, &expected, &found, &Tolerance::default())
                    .into_iter()
                    .filter(|c| !c.ok())
                    .map(|c| {
                        format!(
                            "{}: {} of {} differ, first {}",
                            c.param,
                            c.mismatches,
                            c.compared,
                            c.first.unwrap()
                        )
                    })
                    .collect();
            if diffs.is_empty() {
                agree += 1;
            } else {
                failures.push(format!("MISMATCH {place}: {}", diffs.join("; ")));
            }
        }
    }
    eprintln!(
        "wgpu vs interp: {agree} agree, {refused} refused, {} failed",
        failures.len()
    );
    for f in &failures {
        eprintln!("  {f}");
    }
    assert!(agree > 0, "nothing ran");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
