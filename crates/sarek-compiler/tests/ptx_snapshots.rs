//! Snapshot of the PTX output (or refusal) for every validated case: the hand-built IR
//! kernels and every corpus kernel. `ptx_ptxas` checks the same modules with the real
//! assembler; this test pins the text so a change to the writer or to the optimisation stage
//! shows up in review.

mod support;

use sarek_compiler::TargetOptions;
use sarek_compiler::back::ptx::generate;

#[test]
fn snapshots() {
    let options = TargetOptions::default();
    for case in support::validate::cases() {
        let text = match generate(&case.kernel, &options) {
            Ok(g) => g.source,
            Err(diags) => {
                for d in &diags {
                    assert!(
                        d.message.contains("PTX"),
                        "{}: refusal does not name PTX: {}",
                        case.name,
                        d.message
                    );
                    assert!(
                        !case.from_source || !d.span.is_dummy(),
                        "{}: refusal is not located: {}",
                        case.name,
                        d.message
                    );
                }
                format!("refused:\n{}", support::validate::render(&case, &diags))
            }
        };
        insta::assert_snapshot!(format!("{}.ptx", case.name), text);
    }
}
