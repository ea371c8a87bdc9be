//! Shared plumbing of the C-family validation tests: the cases (hand-built IR kernels and
//! every kernel of the `tests/kernels` corpus), the skip-or-fail policy for absent tools,
//! and the check that a refusal is a located diagnostic naming the target.
#![allow(dead_code)]

use sarek_compiler::back::cfamily::Dialect;
use sarek_compiler::diag::{Diagnostic, SourceMap};
use sarek_compiler::ir::Kernel;
use std::path::{Path, PathBuf};

/// One kernel to generate and validate.
pub struct Case {
    /// `<file stem>__<kernel>` for corpus kernels, `ir__<kernel>` for hand-built ones.
    pub name: String,
    pub kernel: Kernel,
    /// Corpus kernels carry real spans: their refusals must be located.
    pub from_source: bool,
    pub sources: SourceMap,
}

/// Whether `SAREK_REQUIRE_BACKENDS` names `backend` (then a missing tool is a failure).
pub fn required(backend: &str) -> bool {
    std::env::var("SAREK_REQUIRE_BACKENDS")
        .map(|v| {
            v.split(',')
                .any(|b| b.trim() == backend || b.trim() == "all")
        })
        .unwrap_or(false)
}

/// Print why a check is skipped, or fail when the backend is required.
pub fn skip(backend: &str, reason: &str) {
    assert!(
        !required(backend),
        "{backend} is required (SAREK_REQUIRE_BACKENDS) but unavailable: {reason}"
    );
    eprintln!("skipping {backend} validation: {reason}");
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// Hand-built kernels and every kernel of the corpus the front end accepts. Corpus files
/// the front end rejects are reported and left out (their owners' tests fail on them).
pub fn cases() -> Vec<Case> {
    let mut out: Vec<Case> = super::ir_kernels::all()
        .into_iter()
        .map(|k| Case {
            name: format!("ir__{}", k.name),
            kernel: k,
            from_source: false,
            sources: SourceMap::new(),
        })
        .collect();
    for path in super::files::corpus() {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).expect("readable corpus file");
        let mut sources = SourceMap::new();
        let file = sources.add(format!("tests/kernels/{stem}.sarek"), text);
        let program = match sarek_compiler::check(&sources, file) {
            Ok(p) => p,
            Err(e) => {
                eprintln!(
                    "corpus {stem}: front end refused it ({}); not validated here",
                    first(&e)
                );
                continue;
            }
        };
        for k in &program.kernels {
            match sarek_compiler::lower_kernel(&program, &k.name) {
                Ok(kernel) => out.push(Case {
                    name: format!("{stem}__{}", k.name),
                    kernel,
                    from_source: true,
                    sources: sources.clone(),
                }),
                Err(e) => eprintln!(
                    "corpus {stem}/{}: lowering failed ({}); not validated here",
                    k.name,
                    first(&e)
                ),
            }
        }
    }
    out
}

fn first(diags: &[Diagnostic]) -> String {
    diags
        .first()
        .map_or_else(|| "no message".into(), |d| d.message.clone())
}

/// A generator refusal must name the target and, for source kernels, point into the source.
pub fn assert_refusal(case: &Case, dialect: Dialect, diags: &[Diagnostic]) {
    assert!(!diags.is_empty(), "{}: empty refusal", case.name);
    for d in diags {
        assert!(
            d.message.contains(dialect.display_name()),
            "{}: refusal by {} does not name the target: {}",
            case.name,
            dialect.display_name(),
            d.message
        );
        if case.from_source {
            assert!(
                !d.span.is_dummy(),
                "{}: refusal is not located: {}",
                case.name,
                d.message
            );
        }
    }
}

pub fn render(case: &Case, diags: &[Diagnostic]) -> String {
    sarek_compiler::diag::render_all(diags, &case.sources, false)
}

/// Make `libnvrtc` loadable by cudarc, searched for as the CUDA backend does
/// (`SAREK_NVRTC_LIB`, `CUDA_PATH`/`CUDA_HOME`, `LD_LIBRARY_PATH`, the `nvidia` Python wheel:
/// see `sarek_runtime::cuda::nvrtc::candidates`). The runtime's cudarc is this crate's, so
/// the library it loads serves the validator's own calls.
pub fn load_nvrtc() -> Result<(), String> {
    sarek_runtime::cuda::nvrtc::load()
}
