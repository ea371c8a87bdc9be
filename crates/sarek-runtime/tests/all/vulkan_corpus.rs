//! Every corpus kernel with `@run` directives runs on `vulkan` and agrees with `interp`
//! (kernels GLSL refuses, e.g. warp operations where the subgroup size is not 32, are listed
//! as refused). Skips with a printed reason when Vulkan or glslang is absent, unless
//! `SAREK_REQUIRE_BACKENDS` names `vulkan`.

use sarek_harness::check_corpus_against_interp;
use sarek_runtime::Backend;
use std::path::Path;

#[test]
fn corpus_agrees_with_interp() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/kernels");
    let report = check_corpus_against_interp(Backend::Vulkan, &dir);
    print!("{report}");
    if let Some(why) = &report.unavailable {
        sarek_testkit::backends::unavailable("vulkan", &why.to_string());
        return;
    }
    let failures = report.failures();
    assert!(
        failures.is_empty(),
        "{} corpus directives failed on vulkan:\n{report}",
        failures.len()
    );
}
