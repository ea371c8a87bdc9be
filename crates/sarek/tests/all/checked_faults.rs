//! Checked mode on every backend (issue 17): each kernel of `tests/reliability/faults/`
//! names, in an `@fault LINE TEXT` line, the statement that must fault and a phrase of the
//! message; every backend reports that located fault after the launch (`interp` and `cpu`
//! with their own checks, the GPU backends through the checks `launch::run_checked`
//! inserts), never a corrupted process or a made-up value. `@fault none` kernels must run
//! and agree with `interp` (the checks never fire on correct code).
//!
//! Backends without their runtime skip with a printed reason, unless `SAREK_REQUIRE_BACKENDS`
//! names them.

use sarek::Program;
use sarek_harness::{self as harness, Inputs};
use sarek_runtime::{ArgValue, Backend, RuntimeError, discover};

const BACKENDS: [Backend; 7] = [
    Backend::Interp,
    Backend::Cpu,
    Backend::Wgpu,
    Backend::Vulkan,
    Backend::OpenCl,
    Backend::Cuda,
    Backend::Ptx,
];

fn faults_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/reliability/faults")
}

fn vectors(args: &[ArgValue]) -> Vec<String> {
    args.iter()
        .filter_map(|a| match a {
            ArgValue::Vector(v) => Some(format!("{:?}", v.columns)),
            _ => None,
        })
        .collect()
}

#[test]
fn every_backend_reports_each_fault_located_in_checked_mode() {
    let mut files: Vec<_> = std::fs::read_dir(faults_dir())
        .expect("tests/reliability/faults")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sarek"))
        .collect();
    files.sort();
    assert!(files.len() >= 8);
    let devices: Vec<_> = BACKENDS
        .iter()
        .filter_map(|&b| match discover::open(b) {
            Ok(d) => Some((b, d)),
            Err(e) => {
                assert!(
                    !sarek_testkit::backends::required(b.name()),
                    "{b} is required but unavailable: {e}"
                );
                eprintln!("skipping {b}: {e}");
                None
            }
        })
        .collect();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let expect = text
            .lines()
            .find_map(|l| {
                l.split_once("@fault ")
                    .map(|(_, e)| e.trim().trim_end_matches("*)").trim().to_string())
            })
            .unwrap_or_else(|| panic!("{name}: no @fault line"));
        let program = Program::compile(&name, &text).expect("compiles");
        let kernel = program.kernel("k").expect("kernel k").ir().clone();
        let mut inputs = Inputs::new(256, 11);
        inputs.args.push(("n".into(), "200".into()));
        let config = harness::launch_config(256, None, None);
        let mut reference = None;
        for (backend, device) in &devices {
            let mut args = harness::build_args(&kernel, &inputs).expect("arguments");
            let out = sarek_runtime::launch::run_checked(
                device.as_ref(),
                &kernel,
                config,
                &mut args,
                true,
            );
            match (expect.split_once(' '), out) {
                (None, Ok(_)) if expect == "none" => {
                    let got = vectors(&args);
                    match &reference {
                        None => reference = Some(got),
                        Some(r) => assert_eq!(r, &got, "{name} on {backend}: differs from interp"),
                    }
                }
                (Some((line, phrase)), Err(RuntimeError::Fault { span, message })) => {
                    let (l, _) = program.sources().line_col(span.file, span.start);
                    assert_eq!(l.to_string(), line, "{name} on {backend}: {message}");
                    assert!(message.contains(phrase), "{name} on {backend}: {message}");
                }
                (_, other) => panic!("{name} on {backend}: expected {expect}, got {other:?}"),
            }
        }
    }
}
