//! Every `@run` directive of the corpus on the `opencl` backend (PoCL on CI) against the
//! reference interpreter, through the shared harness. A kernel the device cannot run (warp
//! operations without subgroups, float64 without cl_khr_fp64) is a refusal, not a failure.

use sarek_harness::check_corpus_against_interp;
use sarek_runtime::Backend;
use std::path::Path;

#[test]
fn corpus_agrees_with_interp() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/kernels");
    let report = check_corpus_against_interp(Backend::OpenCl, &dir);
    eprint!("{report}");
    if let Some(why) = &report.unavailable {
        sarek_testkit::backends::unavailable("opencl", &why.to_string());
        return;
    }
    assert!(
        !report.entries.is_empty(),
        "no corpus directives found in {}",
        dir.display()
    );
    let failures = report.failures();
    assert!(
        failures.is_empty(),
        "{} corpus directives disagree or fail on opencl",
        failures.len()
    );
}
