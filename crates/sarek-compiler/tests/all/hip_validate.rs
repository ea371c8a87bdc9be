//! HIP validation: every case compiled by `hipcc` for `gfx90a` (device code only, through
//! the AMDGPU back end, as hiprtc would build it for a ROCm runtime), plain and, for the
//! hand-built kernels, in checked mode. No GPU is needed; `hipcc` is Debian's (ROCm 5.2).
//! Each compile parses the HIP headers (about half a second of CPU), so the cases run on
//! every core.

use crate::support;

use sarek_compiler::TargetOptions;
use sarek_compiler::back::cfamily::{Dialect, generate};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use support::validate::{assert_refusal_named, cases, skip};

#[test]
fn hipcc_gfx90a() {
    if Command::new("hipcc")
        .args(["--offload-arch=gfx90a", "--version"])
        .output()
        .is_err()
    {
        return skip("hip", "hipcc is not installed");
    }
    let dir = std::env::temp_dir().join(format!("sarek-hip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let checked = TargetOptions {
        checked: true,
        ..TargetOptions::default()
    };
    let mut sources: Vec<(String, String)> = Vec::new();
    for case in cases() {
        let mut modes = vec![("plain", TargetOptions::default())];
        if case.name.starts_with("ir.") {
            modes.push(("checked", checked.clone()));
        }
        for (mode, options) in modes {
            match generate(&case.kernel, Dialect::Hip, &options) {
                Ok(g) => sources.push((format!("{}.{mode}", case.name), g.source)),
                Err(d) => assert_refusal_named(&case, Dialect::Hip.display_name(), &d),
            }
        }
    }
    assert!(sources.len() > 50, "too few HIP cases: {}", sources.len());
    let failures = Mutex::new(Vec::new());
    let next = Mutex::new(sources.iter());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let Some((name, source)) = next.lock().unwrap().next() else {
                        break;
                    };
                    if let Err(log) = compile(&dir, name, source) {
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("{name}: hipcc rejected the HIP:\n{log}\n{source}"));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    std::fs::remove_dir_all(&dir).ok();
    eprintln!("hipcc compiled {} HIP kernels for gfx90a", sources.len());
}

fn compile(dir: &Path, name: &str, source: &str) -> Result<(), String> {
    let path: PathBuf = dir.join(format!("{name}.hip"));
    std::fs::write(&path, source).unwrap();
    let out = Command::new("hipcc")
        .args(["--offload-arch=gfx90a", "--cuda-device-only", "-c", "-o"])
        .arg(path.with_extension("o"))
        .arg(&path)
        .output()
        .expect("hipcc runs");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The dialect is a library one: no command-line target, and its own name in diagnostics.
#[test]
fn hip_is_a_library_dialect() {
    assert_eq!(Dialect::Hip.target(), None);
    assert_eq!(Dialect::Hip.display_name(), "HIP");
    assert_eq!(
        Dialect::Cuda.target(),
        Some(sarek_compiler::target::Target::Cuda)
    );
}

/// HIP's one limit: 64 KiB of shared memory per block (hipcc rejects more), refused by name,
/// while CUDA C (48 KiB) and HIP accept what fits.
#[test]
fn hip_refuses_shared_memory_past_lds() {
    let kernel = |floats: u32| {
        let text = format!(
            "let%kernel k (a : float32 vector) =\n\
             \x20 let%shared (s : float32) = {floats} in\n\
             \x20 let i = thread_idx_x in\n\
             \x20 s.(i) <- a.(i);\n\
             \x20 block_barrier ();\n\
             \x20 a.(i) <- s.(i)\n"
        );
        let mut sources = sarek_compiler::diag::SourceMap::new();
        let file = sources.add("k.sarek".to_string(), text);
        let program = sarek_compiler::check(&sources, file).expect("the kernel checks");
        sarek_compiler::lower_kernel(&program, "k").expect("the kernel lowers")
    };
    let options = TargetOptions::default();
    // 16,384 floats: 64 KiB, HIP's limit exactly.
    assert!(generate(&kernel(16_384), Dialect::Hip, &options).is_ok());
    let refused = generate(&kernel(16_385), Dialect::Hip, &options).expect_err("over 64 KiB");
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].message.contains("HIP allows at most 65536"),
        "{}",
        refused[0].message
    );
    assert!(!refused[0].span.is_dummy());
}
