//! The generator's promises that need no device: kernels are reproducible from their seed,
//! every one is accepted by the front end and runs on the reference interpreter without a
//! fault, and the shrinker reduces a failing kernel while keeping its failure.

use sarek_difftest::exec::{self, BackendKind, Launch};
use sarek_difftest::generator::{Options, generate};
use sarek_difftest::shrink::{Budget, launch_of, shrink_with};
use std::time::Duration;

fn options(seed: u64) -> Options {
    Options {
        wide: seed.is_multiple_of(3),
        warps: seed.is_multiple_of(4),
        constant_ops: seed.is_multiple_of(5),
    }
}

#[test]
fn a_seed_is_a_kernel() {
    for seed in [0, 1, 42, 1 << 40] {
        let a = generate(seed, &options(seed)).source();
        let b = generate(seed, &options(seed)).source();
        assert_eq!(a, b, "seed {seed} gave two different kernels");
    }
    assert_ne!(
        generate(1, &options(1)).source(),
        generate(2, &options(1)).source()
    );
}

/// Every generated kernel type-checks, and the interpreter runs it without a fault (no
/// division by zero, no out-of-bounds index, no read of unwritten shared memory, no
/// recursion past its declared depth, no barrier in divergent flow).
#[test]
fn generated_kernels_check_and_run_on_interp() {
    let interp = exec::open(BackendKind::Interp).expect("interp");
    for seed in 0..150u64 {
        let case = generate(seed, &options(seed));
        let source = case.source();
        let lowered = exec::lower("gen.sarek", &source, &case.kernel)
            .unwrap_or_else(|e| panic!("seed {seed}: the front end refused:\n{e}\n{source}"));
        let launch: Launch = launch_of(&case);
        let args = exec::arguments(&lowered, &launch)
            .unwrap_or_else(|e| panic!("seed {seed}: arguments: {e}\n{source}"));
        match exec::run(interp.as_ref(), &lowered, &launch, &args) {
            exec::Ran::Ok { .. } => {}
            exec::Ran::Refused(m) | exec::Ran::Fault(m) | exec::Ran::Failed(m) => {
                panic!("seed {seed}: interp: {m}\n{source}")
            }
        }
    }
}

/// A synthetic failure ("the kernel still shifts something"): the shrinker keeps it while
/// removing everything else it can.
#[test]
fn shrinking_keeps_the_failure_and_removes_the_rest() {
    let case = (0..50u64)
        .map(|s| generate(s, &options(s)))
        .find(|c| c.source().contains(" lsl "))
        .expect("a kernel with a shift");
    let budget = Budget {
        attempts: 2000,
        time: Duration::from_secs(60),
    };
    let still = |c: &sarek_difftest::generator::Case| {
        let src = c.source();
        let ok = src.contains(" lsl ") && exec::lower("s.sarek", &src, &c.kernel).is_ok();
        ok.then(|| "shifts".to_string())
    };
    let shrunk = shrink_with(&case, "shifts", &budget, still);
    let out = shrunk.case.source();
    assert!(out.contains(" lsl "), "{out}");
    assert!(exec::lower("s.sarek", &out, "k").is_ok());
    assert!(
        shrunk.case.tree.size() * 3 < case.tree.size(),
        "from {} to only {} nodes:\n{out}",
        case.tree.size(),
        shrunk.case.tree.size()
    );
}
