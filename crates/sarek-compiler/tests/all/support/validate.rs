//! Shared plumbing of the C-family validation tests: the cases (hand-built IR kernels and
//! every kernel of the `tests/kernels` corpus) and the check that a refusal is a located diagnostic naming the target.
#![allow(dead_code)]

use sarek_compiler::Target;
use sarek_compiler::diag::{Diagnostic, SourceMap};
use sarek_compiler::ir::Kernel;

/// One kernel to generate and validate.
pub struct Case {
    /// `<file stem>.<kernel>` for corpus kernels, `ir.<kernel>` for hand-built ones.
    pub name: String,
    pub kernel: Kernel,
    /// Corpus kernels carry real spans: their refusals must be located.
    pub from_source: bool,
    pub sources: SourceMap,
}

pub use sarek_testkit::backends::unavailable as skip;
pub use sarek_testkit::files::workspace_root;

/// Hand-built kernels and every kernel of the corpus the front end accepts. Corpus files
/// the front end rejects are reported and left out (their owners' tests fail on them).
pub fn cases() -> Vec<Case> {
    let mut out = hand_built_cases("ir", sarek_testkit::ir_kernels::all());
    for path in sarek_testkit::files::corpus() {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).expect("readable corpus file");
        out.extend(source_cases(
            &stem,
            &format!("tests/kernels/{stem}.sarek"),
            text,
        ));
    }
    out
}

/// Hand-built kernels as cases named `<prefix>.<kernel>`.
pub fn hand_built_cases(prefix: &str, kernels: Vec<Kernel>) -> Vec<Case> {
    kernels
        .into_iter()
        .map(|k| Case {
            name: format!("{prefix}.{}", k.name),
            kernel: k,
            from_source: false,
            sources: SourceMap::new(),
        })
        .collect()
}

/// Every kernel of one source text (registered as `file_name`), as cases named
/// `<prefix>.<kernel>`. A text the front end rejects, or a kernel that does not lower, is
/// reported and left out.
pub fn source_cases(prefix: &str, file_name: &str, text: String) -> Vec<Case> {
    let mut sources = SourceMap::new();
    let file = sources.add(file_name.to_string(), text);
    let program = match sarek_compiler::check(&sources, file) {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "{file_name}: front end refused it ({}); not validated here",
                first(&e)
            );
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for k in &program.kernels {
        match sarek_compiler::lower_kernel(&program, &k.name) {
            Ok(kernel) => out.push(Case {
                name: format!("{prefix}.{}", k.name),
                kernel,
                from_source: true,
                sources: sources.clone(),
            }),
            Err(e) => eprintln!(
                "{file_name}/{}: lowering failed ({}); not validated here",
                k.name,
                first(&e)
            ),
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
pub fn assert_refusal(case: &Case, target: Target, diags: &[Diagnostic]) {
    assert_refusal_named(case, target.display_name(), diags);
}

/// As [`assert_refusal`], for a dialect that is not a `--target` (HIP): `name` is the name
/// its refusals must carry.
pub fn assert_refusal_named(case: &Case, name: &str, diags: &[Diagnostic]) {
    assert!(!diags.is_empty(), "{}: empty refusal", case.name);
    for d in diags {
        assert!(
            d.message.contains(name),
            "{}: refusal by {name} does not name the target: {}",
            case.name,
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
