//! The corpus harness as the backend tests use it: every `@run` directive of
//! `tests/kernels/` on `cpu` against `interp` (both always available), and the same through
//! `sarek verify` for one file.

use sarek::Backend;
use sarek_harness::{self as harness, Outcome};
use std::path::PathBuf;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/kernels")
}

#[test]
fn cpu_agrees_with_interp_on_the_corpus() {
    if !corpus().is_dir() {
        eprintln!("skipping: no corpus at {}", corpus().display());
        return;
    }
    let report = harness::check_corpus_against_interp(Backend::Cpu, &corpus());
    println!("{report}");
    assert!(report.unavailable.is_none(), "{report}");
    assert!(
        report.entries.len() >= 25,
        "the corpus has directives: {report}"
    );
    assert!(report.failures().is_empty(), "{report}");
    assert_eq!(
        report.count(|o| matches!(o, Outcome::Refused(_))),
        0,
        "cpu refuses nothing: {report}"
    );
}

#[test]
fn harness_inputs_are_deterministic() {
    // Two reports over the same corpus are identical, entry by entry.
    let dir = corpus();
    if !dir.is_dir() {
        return;
    }
    let one = dir.join("saxpy.sarek");
    let text = std::fs::read_to_string(&one).unwrap();
    let program = sarek::Program::compile("saxpy.sarek", &text).unwrap();
    let d = &harness::parse_directives(&text).unwrap()[0];
    let kernel = program.kernel(&d.kernel).unwrap();
    let a = harness::build_args(kernel.ir(), &harness::Inputs::from_directive(d)).unwrap();
    let b = harness::build_args(kernel.ir(), &harness::Inputs::from_directive(d)).unwrap();
    assert_eq!(a, b);
}
