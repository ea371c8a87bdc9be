//! Snapshot of every C-family output (or refusal) for every validated case. The sources are
//! checked by real compilers in `opencl_validate`, `cuda_validate` and `metal_validate`;
//! this test pins them so a change to the emitter shows up in review.

mod support;

use sarek_compiler::TargetOptions;
use sarek_compiler::back::cfamily::{Dialect, generate};

#[test]
fn snapshots() {
    let options = TargetOptions::default();
    for case in support::validate::cases() {
        for (dialect, ext) in [
            (Dialect::OpenCl, "opencl"),
            (Dialect::Cuda, "cuda"),
            (Dialect::Metal, "metal"),
        ] {
            let text = match generate(&case.kernel, dialect, &options) {
                Ok(g) => g.source,
                Err(diags) => {
                    support::validate::assert_refusal(&case, dialect, &diags);
                    format!("refused:\n{}", support::validate::render(&case, &diags))
                }
            };
            insta::assert_snapshot!(format!("{}.{ext}", case.name), text);
        }
    }
}
