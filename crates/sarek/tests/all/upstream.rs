//! Kernels written as upstream (OCaml) Sarek writes them (`tests/upstream/`): preludes,
//! host scaffolding, supersteps branching on a let-bound thread index, shared arrays sized
//! by the block, programs of several files as modules.
//!
//! - `upstream_corpus_on_every_backend`: every `@run` directive on every backend against
//!   `interp` (absent backends skip with a reason unless `SAREK_REQUIRE_BACKENDS` names them).
//! - the other tests check results against values computed here in Rust, on every backend,
//!   and the multi-file program through the library and the command line.

use sarek::{Backend, Device, Program, Vector};
use sarek_harness::{self as harness, Outcome};
use sarek_runtime::device::LaunchConfig;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

const BACKENDS: [Backend; 5] = [
    Backend::Interp,
    Backend::Cpu,
    Backend::Wgpu,
    Backend::Vulkan,
    Backend::OpenCl,
];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/upstream")
}

fn device(backend: Backend) -> Option<Arc<dyn Device>> {
    match sarek::open(backend) {
        Ok(d) => Some(d),
        Err(e) => {
            assert!(
                !sarek_testkit::backends::required(backend.name()),
                "{backend} is required but unavailable: {e}"
            );
            eprintln!("skipping {backend}: {e}");
            None
        }
    }
}

fn program(file: &str) -> Program {
    let text = std::fs::read_to_string(dir().join(file)).unwrap();
    Program::compile(&format!("tests/upstream/{file}"), &text).unwrap()
}

#[test]
fn upstream_corpus_on_every_backend() {
    let mut failures = Vec::new();
    for backend in BACKENDS.into_iter().skip(1) {
        let report = harness::check_corpus_against_interp(backend, &dir());
        if let Some(why) = &report.unavailable {
            assert!(
                !sarek_testkit::backends::required(backend.name()),
                "{backend} required: {why}"
            );
            eprintln!("skip {backend}: {why}");
            continue;
        }
        eprint!("{report}");
        assert!(report.entries.len() >= 11, "{report}");
        for e in &report.entries {
            if !matches!(e.outcome, Outcome::Agree) {
                failures.push(format!(
                    "{backend} {}:{} {}: {:?}",
                    e.file.display(),
                    e.line,
                    e.kernel,
                    e.outcome
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn min_int_hex_literals() {
    let program = program("host_forms.sarek");
    let kernel = program.kernel("min_int").unwrap();
    for backend in BACKENDS {
        let Some(device) = device(backend) else {
            continue;
        };
        let mut out = Vector::filled(7i32, 4);
        kernel.launch().arg(&mut out).run(&*device).unwrap();
        // OCaml: -0x80000000l = min_int, -0xffffffffl = 1, min_int - 1 wraps to max_int.
        assert_eq!(out.to_vec(), [i32::MIN, 1, i32::MAX, i32::MIN], "{backend}");
    }
}

#[test]
fn block_sized_shared_array_follows_the_launch() {
    let program = program("reductions.sarek");
    let kernel = program.kernel("block_sum").unwrap();
    let n = 1000usize;
    let input: Vec<i32> = (0..n as i32).map(|i| (i * 7919) % 1009 - 500).collect();
    for backend in BACKENDS {
        let Some(device) = device(backend) else {
            continue;
        };
        for block in [32u32, 64, 256] {
            let grid = (n as u32).div_ceil(block);
            let mut inp = Vector::from_vec(input.clone());
            let mut out = Vector::filled(0i32, n);
            kernel
                .launch()
                .config(LaunchConfig {
                    grid: [grid, 1, 1],
                    block: [block, 1, 1],
                })
                .arg(&mut inp)
                .arg(&mut out)
                .scalar(n as i32)
                .run(&*device)
                .unwrap();
            let got = out.to_vec();
            for (b, chunk) in input.chunks(block as usize).enumerate() {
                let want: i32 = chunk.iter().sum();
                assert_eq!(got[b], want, "{backend} block {block}: block sum {b}");
            }
        }
    }
}

#[test]
fn prelude_helpers_compute_what_upstream_means() {
    let program = program("preludes.sarek");
    let kernel = program.kernel("prelude_helpers").unwrap();
    let n = 300usize;
    let a: Vec<i32> = (0..n as i32).map(|i| i * 37 - 4000).collect();
    for backend in BACKENDS {
        let Some(device) = device(backend) else {
            continue;
        };
        let mut av = Vector::from_vec(a.clone());
        let mut out = Vector::filled(0i32, n);
        kernel
            .launch()
            .config(LaunchConfig::linear(n as u32))
            .arg(&mut av)
            .arg(&mut out)
            .scalar(n as i32)
            .run(&*device)
            .unwrap();
        for (i, got) in out.to_vec().into_iter().enumerate() {
            let x = a[i] & 255;
            assert_eq!(got, x * x * 3 + (1 << (i & 7)), "{backend}: out[{i}]");
        }
    }
}

#[test]
fn modules_of_several_files() {
    let main = dir().join("modules/uses_geometry.sarek");
    let lib = dir().join("modules/geometry_lib.sarek");
    let text = std::fs::read_to_string(&main).unwrap();
    let lib_text = std::fs::read_to_string(&lib).unwrap();
    // Alone, the module is unknown: a located error naming it.
    let Err(alone) = Program::compile("uses_geometry.sarek", &text) else {
        panic!("the module is needed")
    };
    assert!(alone.to_string().contains("Geometry_lib"), "{alone}");
    let program = Program::check_with_modules(
        "uses_geometry.sarek",
        &text,
        &[("geometry_lib.sarek".to_string(), lib_text)],
    )
    .unwrap_or_else(|(s, d)| panic!("{}", sarek_compiler::diag::render_all(&d, &s, false)));
    // The module's kernels are not the program's; its helpers are.
    assert_eq!(program.kernel_names(), ["nearest", "opened"]);
    // The command line takes the module files after the program's file.
    let bin = env!("CARGO_BIN_EXE_sarek");
    let check = Command::new(bin)
        .args(["check"])
        .arg(&main)
        .arg(&lib)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let verify = Command::new(bin)
        .args(["verify"])
        .arg(&main)
        .arg(&lib)
        .args(["--backends", "cpu"])
        .output()
        .unwrap();
    assert!(
        verify.status.success(),
        "{}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
}

#[test]
fn compile_needs_a_block_for_block_sized_shared_arrays() {
    let bin = env!("CARGO_BIN_EXE_sarek");
    let file = dir().join("reductions.sarek");
    let refused = Command::new(bin)
        .arg("compile")
        .arg(&file)
        .args(["--target", "opencl", "--kernel", "block_sum"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("shared array `tile` takes its size from the launch's block"),
        "{err}"
    );
    let sized = Command::new(bin)
        .arg("compile")
        .arg(&file)
        .args([
            "--target",
            "opencl",
            "--kernel",
            "block_sum",
            "--block",
            "128",
        ])
        .output()
        .unwrap();
    assert!(
        sized.status.success(),
        "{}",
        String::from_utf8_lossy(&sized.stderr)
    );
    assert!(String::from_utf8_lossy(&sized.stdout).contains("__local int tile[128];"));
}
