//! Every generator's output for every case, kept as plain files under `tests/out/<target>/`:
//! `<case>.<ext>` for generated source (`.ir`, `.wgsl`, `.comp`, `.cl`, `.cu`, `.metal`,
//! `.ptx`), `<case>.refused` for a refusal's rendered diagnostics. A case is
//! `<corpus file stem>.<kernel>`, `ir.<kernel>` (hand-built, `ir_kernels::all`),
//! `ir_wgsl.<kernel>` (hand-built, `ir_kernels::wgsl`) or `glsl_sample.<kernel>`.
//!
//! The `outputs` test compares these files with the generators' output (`SAREK_BLESS=1`
//! rewrites them); the validator tests read the files directly, so a reviewer sees exactly
//! the text each tool checked.
#![allow(dead_code)]

use super::validate::{Case, assert_refusal, cases, hand_built_cases, render, source_cases};
use sarek_compiler::{Target, TargetOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `tests/out` at the workspace root.
pub fn out_dir() -> PathBuf {
    sarek_testkit::files::tests_dir("out")
}

/// The file extension of a target's generated source.
pub fn ext(target: Target) -> &'static str {
    match target {
        Target::Ir => "ir",
        Target::Wgsl => "wgsl",
        Target::Glsl => "comp",
        Target::OpenCl => "cl",
        Target::Cuda => "cu",
        Target::Metal => "metal",
        Target::Ptx => "ptx",
    }
}

/// The generated-source files of `target` under `tests/out/<target>/` (refusals left out),
/// sorted.
///
/// # Panics
/// When the folder cannot be read or holds none: a validator must not pass by finding
/// nothing.
pub fn files(target: Target) -> Vec<PathBuf> {
    let dir = out_dir().join(target.name());
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == ext(target)))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "{}: no .{} files",
        dir.display(),
        ext(target)
    );
    files
}

/// The case name of an output file (`histogram.histogram` for `histogram.histogram.cl`).
pub fn case_name(path: &Path) -> String {
    path.file_stem().unwrap().to_string_lossy().into_owned()
}

/// Kernels written here for GLSL features the corpus may not cover (float atomics, int64
/// atomics, subgroups, helpers taking vectors, records and variants in push constants); they
/// must generate.
const GLSL_SAMPLES: [(&str, &str); 2] = [
    ("features.sarek", include_str!("glsl_features.sarek")),
    ("warp.sarek", include_str!("glsl_warp.sarek")),
];

/// Every case with [`sarek_compiler::generate_many`] over its set's targets, against
/// [`sarek_compiler::generate`] target by target: the cases whose results differ.
pub fn generate_many_disagreements() -> Vec<String> {
    let options = TargetOptions::default();
    let mut problems = Vec::new();
    for set in case_sets() {
        for case in &set.cases {
            let many = sarek_compiler::generate_many(&case.kernel, set.targets, &options);
            for (&target, got) in set.targets.iter().zip(many) {
                let one = sarek_compiler::generate(&case.kernel, target, &options);
                let same = match (&one, &got) {
                    (Ok(a), Ok(b)) => a == b,
                    (Err(a), Err(b)) => render(case, a) == render(case, b),
                    _ => false,
                };
                if !same {
                    problems.push(format!("{} on {target}", case.name));
                }
            }
        }
    }
    problems
}

/// Which targets a set of cases goes through, and whether a refusal is a failure.
struct CaseSet {
    cases: Vec<Case>,
    targets: &'static [Target],
    must_generate: bool,
}

fn case_sets() -> Vec<CaseSet> {
    let (hand_built, corpus): (Vec<Case>, Vec<Case>) =
        cases().into_iter().partition(|c| !c.from_source);
    let samples = GLSL_SAMPLES
        .iter()
        .flat_map(|(file, text)| source_cases("glsl_sample", file, text.to_string()))
        .collect();
    vec![
        CaseSet {
            cases: corpus,
            targets: &Target::ALL,
            must_generate: false,
        },
        CaseSet {
            cases: hand_built,
            targets: &[Target::OpenCl, Target::Cuda, Target::Metal, Target::Ptx],
            must_generate: false,
        },
        CaseSet {
            cases: hand_built_cases("ir_wgsl", sarek_testkit::ir_kernels::wgsl::expressible()),
            targets: &[Target::Wgsl],
            must_generate: true,
        },
        CaseSet {
            cases: samples,
            targets: &[Target::Glsl],
            must_generate: true,
        },
    ]
}

/// Every output, by its path relative to `tests/out`. Refusals are checked on the way: each
/// diagnostic names the target and, for kernels from source, is located.
pub fn expected() -> BTreeMap<PathBuf, String> {
    let options = TargetOptions::default();
    let mut out = BTreeMap::new();
    for set in case_sets() {
        for case in &set.cases {
            for &target in set.targets {
                let dir = Path::new(target.name());
                let (file, text) = match sarek_compiler::generate(&case.kernel, target, &options) {
                    Ok(g) => (format!("{}.{}", case.name, ext(target)), g.source),
                    Err(diags) => {
                        assert!(
                            !set.must_generate,
                            "{}: refused by {target}:\n{}",
                            case.name,
                            render(case, &diags)
                        );
                        assert_refusal(case, target, &diags);
                        (format!("{}.refused", case.name), render(case, &diags))
                    }
                };
                let previous = out.insert(dir.join(file), text);
                assert!(previous.is_none(), "{}: two cases of that name", case.name);
            }
        }
    }
    out
}
