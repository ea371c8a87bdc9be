//! The library API misused on purpose (issue 17, second round): hostile sources, launches
//! with wrong arguments, absurd sizes and geometries, buffers of another or a dropped
//! device, and concurrent launches from several threads, on every backend testable here.
//! Every misuse must come back as a typed error (never a panic, an abort or a hang), and
//! correct launches made alongside must still compute the right values.

use crate::{BACKENDS, device};
use sarek::{
    Backend, Buffer, Error, HostVector, LaunchConfig, Literal, Program, RuntimeError, Vector,
};

const SCALE: &str = "
let%kernel scale (x : float32 vector) (y : float32 vector) (a : float32) =
  let i = global_thread_id in
  if i < length x then y.(i) <- a *. x.(i)
";

fn scale() -> sarek::Kernel {
    Program::compile("scale.sarek", SCALE)
        .unwrap()
        .kernel("scale")
        .unwrap()
}

/// The runtime error of a failed launch, which must be `Arguments` or `Launch` (typed, not
/// located: it has no place in the source).
fn runtime(e: Error) -> RuntimeError {
    match e {
        Error::Runtime(r) => r,
        other => panic!("a runtime error expected, got {other:?}"),
    }
}

#[test]
fn hostile_sources_are_compile_errors_with_a_place() {
    let deep_parens = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let long_name = "x".repeat(1 << 20);
    let cases: Vec<(&str, String)> = vec![
        (
            "nul",
            "let%kernel k (v : int32 vector) = v.(0) <- 1\0".into(),
        ),
        ("truncated", "let%kernel".into()),
        ("unterminated comment", "(* let%kernel k () = ()".into()),
        (
            "unterminated string",
            "let%kernel k (v : int32 vector) = \"".into(),
        ),
        (
            "deep parentheses",
            format!("let%kernel k (v : int32 vector) = v.(0) <- {deep_parens}"),
        ),
        (
            "a megabyte name",
            format!("let%kernel k (v : int32 vector) = v.(0) <- {long_name}"),
        ),
        (
            "a huge literal",
            "let%kernel k (v : int32 vector) = v.(0) <- 99999999999999999999999999".into(),
        ),
        (
            "a lone surrogate escape",
            "let%kernel k (v : int32 vector) = v.(0) <- '\\u{d800}'".into(),
        ),
        (
            "unicode letters",
            "let%kernel k (v : int32 vector) = v.(0) <- λ".into(),
        ),
    ];
    for (what, source) in cases {
        let e = Program::compile("hostile.sarek", &source)
            .err()
            .unwrap_or_else(|| panic!("{what}: accepted"));
        let Error::Compile {
            rendered,
            diagnostics,
        } = &e
        else {
            panic!("{what}: {e:?}")
        };
        assert!(!diagnostics.is_empty(), "{what}");
        assert!(
            rendered.contains("hostile.sarek:") && rendered.starts_with("error"),
            "{what}: {}",
            &rendered[..rendered.len().min(400)]
        );
    }
    // Module files with names that are no module name, the main file again, and a module
    // with a syntax error: a compile error located in the module, or the module ignored.
    let main = "let%kernel k (v : int32 vector) = v.(0) <- Util.one";
    let modules = |m: &[(&str, &str)]| -> Vec<(String, String)> {
        m.iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect()
    };
    let util = ("util.sarek", "let one : int32 = 1");
    for odd in ["", "../x.sarek", "λ.sarek", ".sarek", "main.sarek"] {
        let p = Program::compile_with_modules(
            "main.sarek",
            main,
            &modules(&[(odd, "let one : int32 = 2"), util]),
        );
        assert!(p.is_ok(), "{odd:?}: {:?}", p.err());
    }
    let e = Program::compile_with_modules(
        "main.sarek",
        main,
        &modules(&[("util.sarek", "let one : int32 = (")]),
    )
    .err()
    .expect("a syntax error in the module");
    assert!(e.to_string().contains("util.sarek:1:"), "{e}");
    // A program without kernels compiles; asking for one names the problem.
    let p = Program::compile("empty.sarek", "").unwrap();
    assert!(p.kernel_names().is_empty());
    let e = p.kernel("k").unwrap_err();
    assert!(matches!(e, Error::UnknownKernel(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        "no kernel `k` in empty.sarek (it defines no kernel)"
    );
    let e = p.kernel("").unwrap_err();
    assert!(matches!(e, Error::UnknownKernel(_)), "{e:?}");
}

#[test]
fn wrong_arguments_are_typed_errors_on_every_backend() {
    let kernel = scale();
    for backend in BACKENDS {
        let Some(device) = device(backend) else {
            continue;
        };
        let mut x = Vector::from_vec(vec![1.0f32, 2.0, 3.0]);
        let mut y = Vector::filled(0.0f32, 3);
        let arguments = |e: Error, want: &str| {
            let r = runtime(e);
            assert!(matches!(r, RuntimeError::Arguments(_)), "{backend}: {r:?}");
            assert_eq!(r.to_string(), want, "{backend}");
        };
        // Too few, too many.
        let e = kernel.launch().arg(&mut x).run(&*device).unwrap_err();
        arguments(e, "kernel `scale` takes 3 arguments, 1 given");
        let e = kernel
            .launch()
            .arg(&mut x)
            .arg(&mut y)
            .scalar(2.0f32)
            .scalar(1i32)
            .run(&*device)
            .unwrap_err();
        arguments(e, "kernel `scale` takes 3 arguments, 4 given");
        // A scalar of another type, a literal, an aggregate, a vector for a scalar.
        let e = kernel
            .launch()
            .arg(&mut x)
            .arg(&mut y)
            .scalar(2.0f64)
            .run(&*device)
            .unwrap_err();
        arguments(e, "parameter `a` has type float32, but float64 was given");
        let e = kernel
            .launch()
            .arg(&mut x)
            .arg(&mut y)
            .aggregate(vec![Literal::F32(1.0), Literal::F32(2.0)])
            .run(&*device)
            .unwrap_err();
        assert!(
            runtime(e)
                .to_string()
                .starts_with("parameter `a` has type float32"),
            "{backend}"
        );
        let mut z = Vector::filled(0.0f32, 3);
        let e = kernel
            .launch()
            .arg(&mut x)
            .arg(&mut y)
            .arg(&mut z)
            .run(&*device)
            .unwrap_err();
        arguments(e, "parameter `a` has type float32, but a vector was given");
        // A scalar where a vector goes.
        let e = kernel
            .launch()
            .scalar(1.0f32)
            .arg(&mut y)
            .scalar(2.0f32)
            .run(&*device)
            .unwrap_err();
        assert!(
            runtime(e)
                .to_string()
                .starts_with("parameter `x` has type float32 vector"),
            "{backend}"
        );
        // Vectors of the wrong element type: host and device.
        let mut wide = Vector::from_vec(vec![1.0f64; 3]);
        let e = kernel
            .launch()
            .arg(&mut wide)
            .arg(&mut y)
            .scalar(2.0f32)
            .run(&*device)
            .unwrap_err();
        arguments(
            e,
            "parameter `x` has type float32 vector, but the vector given has columns (float64)",
        );
        let mut flags = Vector::from_vec(vec![true; 3]);
        let e = kernel
            .launch()
            .arg(&mut x)
            .arg(&mut flags)
            .scalar(2.0f32)
            .run(&*device)
            .unwrap_err();
        assert!(
            runtime(e).to_string().contains("columns (bool)"),
            "{backend}"
        );
        let ints = Buffer::from_slice(&*device, &[1i32, 2, 3]).unwrap();
        let e = kernel
            .launch()
            .buffer(ints.vector())
            .arg(&mut y)
            .scalar(2.0f32)
            .run(&*device)
            .unwrap_err();
        assert!(
            matches!(runtime(e), RuntimeError::Arguments(_)),
            "{backend}"
        );
        // A host vector whose columns disagree with its length.
        let mut lying = HostVector {
            len: 5,
            columns: vec![sarek::Column::F32(vec![1.0; 3])],
        };
        let e = kernel
            .launch()
            .arg(&mut lying)
            .arg(&mut y)
            .scalar(2.0f32)
            .run(&*device)
            .unwrap_err();
        assert!(
            matches!(runtime(e), RuntimeError::Arguments(_)),
            "{backend}"
        );
        let mut empty_columns = HostVector {
            len: 3,
            columns: Vec::new(),
        };
        let e = kernel
            .launch()
            .arg(&mut empty_columns)
            .arg(&mut y)
            .scalar(2.0f32)
            .run(&*device)
            .unwrap_err();
        assert!(
            matches!(runtime(e), RuntimeError::Arguments(_)),
            "{backend}"
        );
        // After all that, the same vectors still launch and compute.
        kernel
            .launch()
            .arg(&mut x)
            .arg(&mut y)
            .scalar(2.0f32)
            .run(&*device)
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        assert_eq!(y.to_vec(), [2.0, 4.0, 6.0], "{backend}");
    }
}

#[test]
fn empty_vectors_launch_and_write_nothing() {
    let kernel = scale();
    for backend in BACKENDS {
        let Some(device) = device(backend) else {
            continue;
        };
        let mut x = Vector::<f32>::from_vec(Vec::new());
        let mut y = Vector::<f32>::from_vec(Vec::new());
        kernel
            .launch()
            .arg(&mut x)
            .arg(&mut y)
            .scalar(2.0f32)
            .run(&*device)
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        assert!(y.to_vec().is_empty());
        let b = Buffer::<f32>::alloc(&*device, 0).unwrap();
        assert_eq!(b.download(&*device).unwrap(), Vec::<f32>::new());
        let host = kernel.vector("x", 0).unwrap();
        assert_eq!(host.len, 0);
    }
}

#[test]
fn absurd_geometries_and_sizes_are_refused_before_running() {
    let kernel = scale();
    for backend in BACKENDS {
        let Some(device) = device(backend) else {
            continue;
        };
        let mut x = Vector::from_vec(vec![1.0f32; 4]);
        let mut y = Vector::filled(0.0f32, 4);
        let configs = [
            ([0, 1, 1], [1, 1, 1]),
            ([1, 1, 1], [0, 1, 1]),
            ([1, 1, 1], [u32::MAX, u32::MAX, u32::MAX]),
            ([1, 1, 1], [65536, 65536, 1]),
            ([u32::MAX, u32::MAX, u32::MAX], [1, 1, 1]),
            ([u32::MAX, 1, 1], [256, 1, 1]),
            ([65536, 65536, 1], [256, 1, 1]),
            ([1, 65536, 65536], [1, 1, 1]),
        ];
        for (grid, block) in configs {
            let e = kernel
                .launch()
                .config(LaunchConfig { grid, block })
                .arg(&mut x)
                .arg(&mut y)
                .scalar(2.0f32)
                .run(&*device)
                .err()
                .unwrap_or_else(|| panic!("{backend}: grid {grid:?} block {block:?} ran"));
            let r = runtime(e);
            assert!(
                matches!(r, RuntimeError::Arguments(_) | RuntimeError::Launch(_)),
                "{backend}: grid {grid:?} block {block:?}: {r:?}"
            );
        }
        // Vectors past int32's length, and byte sizes past the address space: refused
        // before anything is allocated.
        for len in [1usize << 31, usize::MAX / 2, usize::MAX] {
            let e = Buffer::<f32>::alloc(&*device, len).unwrap_err();
            assert!(
                matches!(
                    e,
                    RuntimeError::Arguments(_) | RuntimeError::OutOfMemory { .. }
                ),
                "{backend}: {len}: {e:?}"
            );
            let e = kernel.vector("x", len).unwrap_err();
            assert!(
                matches!(e, Error::Runtime(RuntimeError::Arguments(_))),
                "{e:?}"
            );
            let e = kernel.buffer(&*device, "x", len).unwrap_err();
            assert!(matches!(e, Error::Runtime(_)), "{e:?}");
        }
        // Lengths that do not match.
        let b = Buffer::<f32>::alloc(&*device, 4).unwrap();
        assert!(matches!(
            b.upload(&*device, &[1.0; 5]),
            Err(RuntimeError::Arguments(_))
        ));
        let mut out = [0.0f32; 3];
        assert!(matches!(
            b.download_into(&*device, &mut out),
            Err(RuntimeError::Arguments(_))
        ));
        let c = Buffer::<f32>::alloc(&*device, 5).unwrap();
        assert!(matches!(
            c.vector().copy_from(&*device, b.vector()),
            Err(RuntimeError::Arguments(_))
        ));
        let d = Buffer::<i32>::alloc(&*device, 4).unwrap();
        assert!(matches!(
            d.vector().copy_from(&*device, b.vector()),
            Err(RuntimeError::Arguments(_))
        ));
    }
}

#[test]
fn buffers_of_another_or_a_dropped_device_are_refused() {
    let kernel = scale();
    for backend in BACKENDS {
        // A device of another backend (two opens of `opencl` share one device).
        let other = match backend {
            Backend::Interp => Backend::Cpu,
            _ => Backend::Interp,
        };
        let (Some(a), Some(b)) = (device(backend), device(other)) else {
            continue;
        };
        let on_a = Buffer::from_slice(&*a, &[1.0f32, 2.0]).unwrap();
        let mut y = Vector::filled(0.0f32, 2);
        let e = kernel
            .launch()
            .buffer(on_a.vector())
            .arg(&mut y)
            .scalar(1.0f32)
            .run(&*b)
            .unwrap_err();
        let e = runtime(e);
        assert!(
            matches!(e, RuntimeError::WrongDevice { .. }),
            "{backend}: {e:?}"
        );
        assert!(matches!(
            on_a.download(&*b),
            Err(RuntimeError::WrongDevice { .. })
        ));
        // Device `a` dropped: its buffers keep what they need, and using them elsewhere is
        // still a typed error; dropping them afterwards is safe.
        let kept = on_a.clone();
        drop(on_a);
        drop(a);
        assert!(matches!(
            kept.download(&*b),
            Err(RuntimeError::WrongDevice { .. })
        ));
        drop(kept);
        // A vector last used on a dropped device moves to the next one through the host.
        let mut x = Vector::from_vec(vec![1.0f32, 2.0]);
        {
            let c = device(backend).unwrap();
            kernel
                .launch()
                .arg(&mut x)
                .arg(&mut y)
                .scalar(3.0f32)
                .run(&*c)
                .unwrap();
        }
        let mut z = Vector::filled(0.0f32, 2);
        kernel
            .launch()
            .arg(&mut y)
            .arg(&mut z)
            .scalar(2.0f32)
            .run(&*b)
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        assert_eq!(z.to_vec(), [6.0, 12.0], "{backend}");
        assert_eq!(x.to_vec(), [1.0, 2.0], "{backend}");
    }
}

const OOB: &str = "
let%kernel oob (v : int32 vector) (at : int32) =
  v.(at) <- 7
";

#[test]
fn concurrent_launches_on_one_device_each_get_their_own_results_and_faults() {
    let kernel = scale();
    let oob = Program::compile("oob.sarek", OOB)
        .unwrap()
        .kernel("oob")
        .unwrap();
    for backend in BACKENDS {
        let Some(device) = device(backend) else {
            continue;
        };
        std::thread::scope(|s| {
            for t in 0..6 {
                let (kernel, oob, device) = (&kernel, &oob, &device);
                s.spawn(move || {
                    for round in 0..8 {
                        let n = 100 + 17 * t + round;
                        let mut x = Vector::from_vec((0..n).map(|i| i as f32).collect());
                        let mut y = Vector::filled(-1.0f32, n);
                        let a = (t + 1) as f32;
                        kernel
                            .launch()
                            .arg(&mut x)
                            .arg(&mut y)
                            .scalar(a)
                            .run(&**device)
                            .unwrap_or_else(|e| panic!("{backend} thread {t}: {e}"));
                        let want: Vec<f32> = (0..n).map(|i| a * i as f32).collect();
                        assert_eq!(y.to_vec(), want, "{backend} thread {t} round {round}");
                        // Odd threads also fault on the host backends (the others are
                        // unchecked: the index is clamped away from memory below).
                        if t % 2 == 1 && matches!(backend, Backend::Interp | Backend::Cpu) {
                            let mut v = Vector::filled(0i32, 4);
                            let e = oob
                                .launch()
                                .config(LaunchConfig::linear(1))
                                .arg(&mut v)
                                .scalar(4i32)
                                .run(&**device)
                                .unwrap_err();
                            assert!(
                                matches!(e, Error::Located { .. }),
                                "{backend} thread {t}: {e:?}"
                            );
                        }
                    }
                });
            }
        });
    }
}

/// The kernels of `tests/reliability/faults/` (each with its `@fault LINE TEXT` line).
fn fault_kernels() -> Vec<(String, String)> {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/reliability/faults");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sarek"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// Unchecked launches (the library's default) of kernels that index out of bounds or divide
/// by zero: a device whose memory is the process's own (`interp`, `cpu`, PoCL, llvmpipe)
/// always checks, so the fault is located; `wgpu` keeps every access inside its array (naga's
/// bounds checks), so the launch completes. Before, PoCL wrote the process's heap and died.
#[test]
fn unchecked_launches_never_reach_memory_outside_their_arrays() {
    for backend in BACKENDS {
        let Some(device) = device(backend) else {
            continue;
        };
        for (name, text) in fault_kernels() {
            let expect = text
                .lines()
                .find_map(|l| {
                    l.split_once("@fault ")
                        .map(|(_, e)| e.trim().trim_end_matches("*)").trim().to_string())
                })
                .unwrap_or_else(|| panic!("{name}: no @fault line"));
            let program = Program::compile(&name, &text).unwrap();
            let kernel = program.kernel("k").unwrap();
            let mut inputs = sarek_harness::Inputs::new(256, 11);
            inputs.args.push(("n".into(), "200".into()));
            let mut args = sarek_harness::build_args(kernel.ir(), &inputs).unwrap();
            let out = device.launch(kernel.ir(), LaunchConfig::linear(256), &mut args);
            match (expect.split_once(' '), out) {
                (None, Ok(_)) => assert_eq!(expect, "none", "{name} on {backend}"),
                (Some(_), Ok(_)) if !device.always_checked() => {}
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
