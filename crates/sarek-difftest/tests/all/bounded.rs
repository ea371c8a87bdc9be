//! The bounded differential run of CI: a fixed range of seeds through `check`, every
//! generator's validator and every local backend, compared with `interp`. Any rejected
//! module, mismatch or broken kernel fails the test with the seeds and the command that
//! shrinks them. Backends and validators not installed are skipped, unless
//! `SAREK_REQUIRE_BACKENDS` names the backend. `SAREK_DIFFTEST_COUNT` changes the number of
//! kernels (default 40: about a minute on two cores); the run also stops after 150 s so a
//! slow machine cannot stall CI (the summary says how many ran).

use sarek_difftest::exec::{self, Target};
use sarek_difftest::generator::{Options, Rng, generate};
use sarek_difftest::runner::{Harness, Job, Summary};
use sarek_difftest::shrink::launch_of;
use sarek_difftest::validate::TARGETS;
use std::time::{Duration, Instant};

/// The same per-seed knobs as the `sarek-difftest` binary's defaults.
fn options(seed: u64) -> Options {
    let mut r = Rng::new(seed.wrapping_mul(31).wrapping_add(7));
    Options {
        wide: r.pct(40),
        warps: r.pct(25),
        constant_ops: r.pct(20),
    }
}

#[test]
fn random_kernels_agree_on_every_local_backend() {
    let count: u64 = std::env::var("SAREK_DIFFTEST_COUNT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let backends = exec::all_backends();
    let targets: Vec<Target> = TARGETS.to_vec();
    let harness = Harness::new(&backends, &targets).expect("interp");
    for (b, d) in &harness.devices {
        if let Err(why) = d {
            sarek_testkit::backends::unavailable(exec::backend_name(*b), &why.to_string());
        }
    }
    let start = Instant::now();
    let mut summary = Summary::default();
    let mut failures = Vec::new();
    let first = 1u64;
    // Batches of 8, as the binary runs them: one NVRTC program, one clang, clang++ and
    // ptxas process per batch.
    let seeds: Vec<u64> = (first..first + count).collect();
    for batch in seeds.chunks(8) {
        if start.elapsed() > Duration::from_secs(150) {
            eprintln!("time cap reached after {} kernels", summary.kernels);
            break;
        }
        let cases: Vec<_> = batch.iter().map(|&s| generate(s, &options(s))).collect();
        let jobs: Vec<Job> = cases
            .iter()
            .map(|c| Job {
                source: c.source(),
                kernel: c.kernel.clone(),
                launch: launch_of(c),
            })
            .collect();
        for (case, report) in cases.iter().zip(harness.run_batch(&jobs, None)) {
            let seed = case.seed;
            let features: Vec<&'static str> = case.features.iter().copied().collect();
            summary.add(&report, &features);
            if let Some(b) = &report.broken {
                failures.push(format!("seed {seed}: broken kernel: {b:?}"));
            }
            for (col, f) in report.failures() {
                failures.push(format!(
                    "seed {seed}: {} {:?}: {}",
                    col.label(),
                    f.kind,
                    f.message.lines().next().unwrap_or("")
                ));
            }
        }
    }
    eprintln!("{summary}");
    assert!(
        summary.kernels >= 10,
        "only {} kernels ran",
        summary.kernels
    );
    assert!(
        failures.is_empty(),
        "{} failures; shrink and write them out with\n  cargo run -p sarek-difftest --release -- --seed SEED --count 1\n{}",
        failures.len(),
        failures.join("\n")
    );
}
