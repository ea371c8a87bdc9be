//! Kernels written as upstream (OCaml) Sarek writes them (`tests/upstream/`): preludes,
//! host scaffolding, supersteps branching on a let-bound thread index, shared arrays sized
//! by the block, programs of several files as modules.
//!
//! - `upstream_corpus_on_every_backend`: every `@run` directive on every backend against
//!   `interp` (absent backends skip with a reason unless `SAREK_REQUIRE_BACKENDS` names them;
//!   a backend's located refusal, float64 on WGSL, is accepted).
//! - the other tests check results against values computed here in Rust, on every backend,
//!   and the multi-file program through the library and the command line.

use crate::{BACKENDS, device};
use sarek::{Backend, Program, Vector};
use sarek_harness::{self as harness, Outcome};
use sarek_runtime::device::LaunchConfig;
use std::path::PathBuf;
use std::process::Command;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/upstream")
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
            // A located refusal (float64 on WGSL) is the documented outcome, not a failure.
            if !matches!(e.outcome, Outcome::Agree | Outcome::Refused(_)) {
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

/// Upstream's integer power (`spoc_powint`, `Math.pow` on int32), computed here
/// independently of the compiler: the wrapping product for `e >= 0`, the truncated real
/// power for `e < 0` (and `int32(+inf)` = max_int for `0 ** -k`).
fn int_power(b: i32, e: i32) -> i32 {
    if e >= 0 {
        return b.wrapping_pow(e as u32);
    }
    match b {
        1 => 1,
        -1 if e % 2 == 0 => 1,
        -1 => -1,
        0 => i32::MAX,
        _ => 0,
    }
}

/// A launch of `n` threads over int32 vectors and one trailing int32 `n`; `None` when the
/// backend is absent.
fn run_i32(
    kernel: &sarek::Kernel,
    backend: Backend,
    vectors: &[Vec<i32>],
) -> Option<Vec<Vec<i32>>> {
    let device = device(backend)?;
    let n = vectors[0].len();
    let mut vs: Vec<Vector<i32>> = vectors
        .iter()
        .map(|v| Vector::from_vec(v.clone()))
        .collect();
    let mut launch = kernel.launch().config(LaunchConfig::linear(n as u32));
    for v in &mut vs {
        launch = launch.arg(v);
    }
    launch.scalar(n as i32).run(&*device).unwrap();
    Some(vs.iter().map(|v| v.to_vec()).collect())
}

#[test]
fn spoc_powint_is_the_wrapping_integer_power() {
    // (base, exponent, value reasoned by hand)
    let cases = [
        (2, 10, 1024),
        (3, 4, 81),
        (-2, 3, -8),
        (0, 0, 1),
        (5, 0, 1),
        (-3, 5, -243),
        (2, 31, i32::MIN),
        (2, 32, 0),
        (i32::MIN, 2, 0),
        (1, -5, 1),
        (-1, -3, -1),
        (-1, -4, 1),
        (7, -2, 0),
        (0, -1, i32::MAX),
    ];
    for (b, e, want) in cases {
        assert_eq!(int_power(b, e), want, "{b} ** {e}");
    }
    let mut bases: Vec<i32> = cases.iter().map(|c| c.0).collect();
    let mut exps: Vec<i32> = cases.iter().map(|c| c.1).collect();
    // Large exponents: at most 31 squarings, the same wrapping product.
    bases.extend([3, -7, 10, 6]);
    exps.extend([40, i32::MAX, 1_000_000, -2]);
    let program = program("stdlib.sarek");
    let kernel = program.kernel("powint_table").unwrap();
    let n = bases.len();
    for backend in BACKENDS {
        let Some(out) = run_i32(
            &kernel,
            backend,
            &[bases.clone(), exps.clone(), vec![0; n], vec![0; n]],
        ) else {
            continue;
        };
        for i in 0..n {
            let want = int_power(bases[i], exps[i]);
            assert_eq!(
                out[2][i], want,
                "{backend}: spoc_powint {} {}",
                bases[i], exps[i]
            );
            assert_eq!(
                out[3][i], want,
                "{backend}: Math.pow {} {}",
                bases[i], exps[i]
            );
        }
    }
}

#[test]
fn int_library_names_mean_what_upstream_means() {
    let a: Vec<i32> = vec![
        0,
        1,
        -1,
        7,
        -9,
        255,
        1 << 20,
        i32::MIN,
        i32::MAX,
        12345,
        -54321,
        100,
    ];
    let b: Vec<i32> = vec![5, -3, 0, 9, 17, -256, 3, i32::MIN, 1, -77, 42, 15];
    let program = program("stdlib.sarek");
    let kernel = program.kernel("int_library").unwrap();
    let n = a.len();
    for backend in BACKENDS {
        let Some(out) = run_i32(&kernel, backend, &[a.clone(), b.clone(), vec![0; n]]) else {
            continue;
        };
        for i in 0..n {
            let (x, y) = (a[i], b[i]);
            let p = int_power(x % 9, (y & 15) - 3);
            let q = int_power(x & 7, y & 7);
            // Math.xor, Math.logical_and, Int32.mod_int32, Int32.add_int32 (abs_int32 ...)
            let bits = (x ^ y)
                .wrapping_add(x & 0xff)
                .wrapping_add(x % 7)
                .wrapping_add(y.wrapping_abs().wrapping_add(1));
            let counts = x.count_ones() as i32 + y.leading_zeros() as i32;
            let want = p
                .wrapping_add(q)
                .wrapping_add(bits)
                .wrapping_add(counts)
                .wrapping_add(x.min(y))
                .wrapping_sub(x.max(y));
            assert_eq!(out[2][i], want, "{backend}: a={x} b={y}");
        }
    }
}

/// The kernel of upstream's test_f64_scalar_conversions.ml: `let open Sarek_float64 in`,
/// `G` literals, `Float64.of_int32`/`to_int32`/`of_float32`/`cos`, with that test's own
/// expected values (bit for bit but the cosine). WGSL has no float64: a located refusal.
#[test]
fn float64_probe_of_upstream() {
    let program = program("stdlib.sarek");
    let kernel = program.kernel("probe_kernel").unwrap();
    let pi = std::f64::consts::PI;
    let want = [4.0, 2.0 * pi, 0.25, pi / 4.0, 2.0, 1.5, (pi / 2.0).cos()];
    for backend in BACKENDS {
        let Some(device) = device(backend) else {
            continue;
        };
        let mut out = Vector::filled(-1.0f64, 7);
        let run = kernel
            .launch()
            .config(LaunchConfig::linear(1))
            .arg(&mut out)
            .scalar(4i32)
            .run(&*device);
        if let Err(e) = run {
            let e = e.to_string();
            assert!(
                backend == Backend::Wgpu && e.contains("does not support 64-bit floats"),
                "{backend}: {e}"
            );
            continue;
        }
        let got = out.to_vec();
        for k in 0..6 {
            assert_eq!(got[k].to_bits(), want[k].to_bits(), "{backend}: slot {k}");
        }
        assert!(
            (got[6] - want[6]).abs() < 1e-15,
            "{backend}: cos {}",
            got[6]
        );
    }
}

/// `warp_active_mask ()` where the warp is converged: every existing lane. A block of 48
/// threads has a full warp and one of 16 lanes.
#[test]
fn warp_active_mask_is_the_converged_warp() {
    let program = program("stdlib.sarek");
    let kernel = program.kernel("active_mask").unwrap();
    let want: Vec<i32> = (0..96)
        .map(|t| if t % 48 < 32 { -1 } else { 0xffff })
        .collect();
    for backend in BACKENDS {
        let Some(device) = device(backend) else {
            continue;
        };
        let mut out = Vector::filled(0i32, 96);
        let run = kernel
            .launch()
            .config(LaunchConfig {
                grid: [2, 1, 1],
                block: [48, 1, 1],
            })
            .arg(&mut out)
            .run(&*device);
        if let Err(e) = run {
            // PoCL has no subgroups: refused, located, naming the device.
            let e = e.to_string();
            assert!(
                e.contains("does not support warp operations"),
                "{backend}: {e}"
            );
            continue;
        }
        assert_eq!(out.to_vec(), want, "{backend}");
    }
}

/// Upstream's `vector_dft` (test_dft.ml) on its own inputs (`a = b = [0, 1, ..., 15]`),
/// against the DFT computed here in float64. The tolerance is upstream's form (relative to
/// `|want| + 1`), tightened from its 12% (for 1,024 terms) to 1% for 16.
#[test]
fn upstream_dft_matches_a_float64_dft() {
    let program = program("e2e.sarek");
    let kernel = program.kernel("vector_dft").unwrap();
    let n = 16usize;
    let input: Vec<f32> = (0..n).map(|i| i as f32).collect();
    for backend in BACKENDS {
        let Some(device) = device(backend) else {
            continue;
        };
        let mut a = Vector::from_vec(input.clone());
        let mut b = Vector::from_vec(input.clone());
        let mut c = Vector::filled(-999.0f32, n);
        let mut d = Vector::filled(-999.0f32, n);
        kernel
            .launch()
            .config(LaunchConfig::linear(n as u32))
            .arg(&mut a)
            .arg(&mut b)
            .arg(&mut c)
            .arg(&mut d)
            .scalar(n as i32)
            .scalar(n as i32)
            .run(&*device)
            .unwrap();
        let (c, d) = (c.to_vec(), d.to_vec());
        for t in 0..n {
            let (mut re, mut im) = (0.0f64, 0.0f64);
            for k in 0..n {
                let angle = 2.0 * std::f64::consts::PI * (t * k) as f64 / n as f64;
                re += k as f64 * angle.cos();
                im -= k as f64 * angle.sin();
            }
            for (got, want, part) in [(c[t], re, "real"), (d[t], im, "imag")] {
                let err = (got as f64 - want).abs() / (want.abs() + 1.0);
                assert!(err <= 1e-2, "{backend}: {part}[{t}] = {got}, want {want}");
            }
        }
    }
}

/// `if i >= n then return_unit ();` leaves the threads past `n` without a write; a uniform
/// guard before a barrier (`uniform_exit`) is taken by whole blocks.
#[test]
fn return_unit_as_a_guard() {
    let program = program("stdlib.sarek");
    let early = program.kernel("early_exit").unwrap();
    let uniform = program.kernel("uniform_exit").unwrap();
    let a: Vec<i32> = (0..256).map(|i| i * 3 - 100).collect();
    for backend in BACKENDS {
        let Some(device) = device(backend) else {
            continue;
        };
        let mut out = Vector::filled(-7i32, 100);
        early
            .launch()
            .config(LaunchConfig::linear(100))
            .arg(&mut out)
            .scalar(90i32)
            .run(&*device)
            .unwrap();
        let want: Vec<i32> = (0..100).map(|i| if i < 90 { 2 * i } else { -7 }).collect();
        assert_eq!(out.to_vec(), want, "{backend}: early_exit");
        for n in [0i32, 5] {
            let mut av = Vector::from_vec(a.clone());
            let mut out = Vector::filled(9i32, 256);
            uniform
                .launch()
                .config(LaunchConfig {
                    grid: [2, 1, 1],
                    block: [128, 1, 1],
                })
                .arg(&mut av)
                .arg(&mut out)
                .scalar(n)
                .run(&*device)
                .unwrap();
            let want: Vec<i32> = (0..256usize)
                .map(|g| {
                    let (block, tid) = (g / 128, g % 128);
                    if n == 0 {
                        -1
                    } else {
                        a[block * 128 + 127 - tid] + n
                    }
                })
                .collect();
            assert_eq!(out.to_vec(), want, "{backend}: uniform_exit n={n}");
        }
    }
}
