//! The library API as a user meets it: compile a source, launch kernels with arguments of
//! every kind on every backend available, read the results back, and get clear errors
//! (unknown kernel, wrong arguments, unavailable backend, located faults and refusals).
//!
//! Backends without their runtime are skipped with a printed reason, unless
//! `SAREK_REQUIRE_BACKENDS` names them.

use crate::{BACKENDS, device};
use sarek::{Backend, Column, Error, HostVector, Literal, Program, RuntimeError, Vector};

sarek::kernel_module!(mod mix = "tests/kernels/api.sarek");
sarek::kernel_module!(mod traps = "../../tests/traps/inline_depth.sarek");

fn column_f32(c: &Column) -> &[f32] {
    match c {
        Column::F32(v) => v,
        other => panic!("float32 column expected, found {other:?}"),
    }
}

fn column_i32(c: &Column) -> &[i32] {
    match c {
        Column::I32(v) => v,
        other => panic!("int32 column expected, found {other:?}"),
    }
}

/// The host's `area`, for the expected values.
fn area(tag: i32, circle_r: f32, rect_w: f32, rect_h: f32) -> f32 {
    match tag {
        0 => 3.0 * circle_r * circle_r,
        1 => rect_w * rect_h,
        _ => 0.0,
    }
}

#[test]
fn vectors_of_records_variants_and_tuples_and_aggregates_by_value() {
    let program = mix::program().unwrap();
    let kernel = program.kernel("mix").unwrap();
    let n = 300usize;
    let names: Vec<_> = kernel.params().into_iter().map(|p| p.type_name).collect();
    assert_eq!(
        names,
        [
            "point vector",
            "shape vector",
            "(int32 * float32) vector",
            "float32 vector",
            "point",
            "shape",
            "int32",
            "int32"
        ]
    );
    for backend in BACKENDS {
        let Some(device) = device(backend) else {
            continue;
        };
        // Small integers and halves: every operation below is exact in float32.
        let mut pts = kernel.vector("pts", n).unwrap();
        pts.columns[0] = Column::F32((0..n).map(|i| i as f32).collect());
        pts.columns[1] = Column::F32((0..n).map(|i| (i % 7) as f32).collect());
        // shape: tag, Circle_0, Rect_0, Rect_1.
        let mut shapes = kernel.vector("shapes", n).unwrap();
        assert_eq!(shapes.columns.len(), 4);
        shapes.columns[0] = Column::I32((0..n).map(|i| (i % 3) as i32).collect());
        shapes.columns[1] = Column::F32((0..n).map(|i| (i % 4) as f32).collect());
        shapes.columns[2] = Column::F32((0..n).map(|i| (i % 5) as f32).collect());
        shapes.columns[3] = Column::F32((0..n).map(|i| 0.5 * (i % 2) as f32).collect());
        let mut pairs = HostVector {
            len: n,
            columns: vec![
                Column::I32((0..n).map(|i| i as i32 - 100).collect()),
                Column::F32((0..n).map(|i| 0.25 * (i % 8) as f32).collect()),
            ],
        };
        let mut out = Vector::filled(-1.0f32, n);
        let before = (pts.clone(), shapes.clone(), pairs.clone());
        let origin = kernel.value("origin", "x=1.0,y=2.0").unwrap();
        assert_eq!(origin, [Literal::F32(1.0), Literal::F32(2.0)]);
        let s = kernel.value("s", "Rect,2.0,3.0").unwrap();
        // The typed launcher: the same argument kinds, by Rust type.
        let stats = mix::mix(
            &kernel,
            &mut pts,
            &mut shapes,
            &mut pairs,
            &mut out,
            origin,
            s,
            3,
            n as i32 - 1,
        )
        .run(&*device)
        .unwrap_or_else(|e| panic!("{backend}: {e}"));
        assert!(
            stats.total_time >= stats.kernel_time,
            "{backend}: {stats:?}"
        );

        let (p0, s0, t0) = before;
        let (px, py) = (column_f32(&p0.columns[0]), column_f32(&p0.columns[1]));
        let tag = column_i32(&s0.columns[0]);
        let (cr, rw, rh) = (
            column_f32(&s0.columns[1]),
            column_f32(&s0.columns[2]),
            column_f32(&s0.columns[3]),
        );
        let (ta, tb) = (column_i32(&t0.columns[0]), column_f32(&t0.columns[1]));
        for i in 0..n - 1 {
            let want = (px[i] - 1.0)
                + 10.0 * (py[i] - 2.0)
                + area(tag[i], cr[i], rw[i], rh[i])
                + 6.0
                + (ta[i] * 3) as f32
                + tb[i];
            assert_eq!(out.as_slice()[i], want, "{backend}: out[{i}]");
            assert_eq!(
                pts.columns[0].get(i),
                Literal::F32(py[i]),
                "{backend}: x[{i}]"
            );
            assert_eq!(
                pts.columns[1].get(i),
                Literal::F32(px[i]),
                "{backend}: y[{i}]"
            );
            assert_eq!(
                pairs.columns[0].get(i),
                Literal::I32(ta[i] + 1),
                "{backend}"
            );
            assert_eq!(
                pairs.columns[1].get(i),
                Literal::F32(2.0 * tb[i]),
                "{backend}"
            );
            let new_tag = column_i32(&shapes.columns[0])[i];
            match tag[i] {
                // Circle r -> Rect (r, 1.0)
                0 => {
                    assert_eq!(new_tag, 1, "{backend}: tag[{i}]");
                    assert_eq!(shapes.columns[2].get(i), Literal::F32(cr[i]));
                    assert_eq!(shapes.columns[3].get(i), Literal::F32(1.0));
                }
                // Rect (w, _) -> Circle w
                1 => {
                    assert_eq!(new_tag, 0, "{backend}: tag[{i}]");
                    assert_eq!(shapes.columns[1].get(i), Literal::F32(rw[i]));
                }
                _ => assert_eq!(new_tag, 2, "{backend}: tag[{i}]"),
            }
        }
        // The guard `i < n` leaves the last element alone.
        assert_eq!(out.as_slice()[n - 1], -1.0, "{backend}");
        assert_eq!(out.last_device(), Some(backend));
    }
}

#[test]
fn typed_launchers_rename_parameters_rust_cannot_take() {
    let program = mix::program().unwrap();
    assert_eq!(program.kernel_names(), ["mix", "scale"]);
    let kernel = program.kernel("scale").unwrap();
    let device = sarek::open(Backend::Cpu).unwrap();
    let mut v = Vector::from_vec(vec![1.0f32, 2.0, 3.0]);
    mix::scale(&kernel, &mut v, 2.0, 2).run(&*device).unwrap();
    assert_eq!(v.to_vec(), [2.0, 4.0, 3.0]);
}

#[test]
fn the_dynamic_api_takes_the_same_arguments() {
    let program = mix::program().unwrap();
    let kernel = program.kernel("mix").unwrap();
    let device = sarek::open(Backend::Interp).unwrap();
    let mut pts = kernel.vector("pts", 4).unwrap();
    let mut shapes = kernel.vector("shapes", 4).unwrap();
    let mut pairs = kernel.vector("pairs", 4).unwrap();
    let mut out = Vector::filled(0.0f32, 4);
    // Empty shapes, zero points and pairs: out = -1 - 20 + area (Circle 1) = -18.
    kernel
        .launch()
        .arg(&mut pts)
        .arg(&mut shapes)
        .arg(&mut pairs)
        .arg(&mut out)
        .aggregate(vec![Literal::F32(1.0), Literal::F32(2.0)])
        .aggregate(kernel.value("s", "Circle,1.0").unwrap())
        .value(Literal::I32(5))
        .scalar(4i32)
        .run(&*device)
        .unwrap();
    assert_eq!(out.to_vec(), [-18.0; 4]);
    // Empty -> Empty: the tags stay 2.
    shapes.columns[0] = Column::I32(vec![2; 4]);
    kernel
        .launch()
        .arg(&mut pts)
        .arg(&mut shapes)
        .arg(&mut pairs)
        .arg(&mut out)
        .aggregate(kernel.value("origin", "0,0").unwrap())
        .aggregate(kernel.value("s", "Empty").unwrap())
        .scalar(1i32)
        .scalar(4i32)
        .run(&*device)
        .unwrap();
    assert_eq!(shapes.columns[0], Column::I32(vec![2; 4]));
    // pairs went (0, 0.0) -> (1, 0.0) -> (2, 0.0); out = 0 + 0 + 0 + 0 + 1 * 1 + 0.
    assert_eq!(out.to_vec(), [1.0; 4]);
}

#[test]
fn argument_mistakes_are_clear_errors() {
    let program = mix::program().unwrap();
    let kernel = program.kernel("mix").unwrap();
    let device = sarek::open(Backend::Interp).unwrap();
    let e = kernel.value("s", "Square,1.0").unwrap_err().to_string();
    assert!(
        e.contains("parameter `s` (shape)") && e.contains("Square"),
        "{e}"
    );
    let e = kernel.value("s", "Rect,1.0").unwrap_err().to_string();
    assert!(e.contains("too few values"), "{e}");
    let e = kernel.value("origni", "1,2").unwrap_err().to_string();
    assert_eq!(
        e,
        "kernel `mix` has no parameter `origni`; did you mean `origin`?"
    );
    let e = kernel.vector("k", 4).unwrap_err().to_string();
    assert_eq!(e, "parameter `k` has type int32, not a vector type");
    let e = kernel.value("pts", "1,2").unwrap_err().to_string();
    assert_eq!(e, "parameter `pts` is a point vector: pass a vector");

    let mut pts = kernel.vector("pts", 4).unwrap();
    let mut out = Vector::filled(0.0f32, 4);
    let e = kernel
        .launch()
        .arg(&mut pts)
        .arg(&mut out)
        .run(&*device)
        .unwrap_err();
    assert!(
        matches!(e, Error::Runtime(RuntimeError::Arguments(_))),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "kernel `mix` takes 8 arguments, 2 given");
    // A float32 vector where the tuple vector goes.
    let mut shapes = kernel.vector("shapes", 4).unwrap();
    let mut wrong = Vector::filled(0.0f32, 4);
    let e = kernel
        .launch()
        .arg(&mut pts)
        .arg(&mut shapes)
        .arg(&mut wrong)
        .arg(&mut out)
        .aggregate(vec![Literal::F32(0.0), Literal::F32(0.0)])
        .aggregate(kernel.value("s", "Empty").unwrap())
        .scalar(1i32)
        .scalar(4i32)
        .run(&*device)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "parameter `pairs` has type (int32 * float32) vector, but the vector given has columns (float32)"
    );
    // A record given as an int32.
    let mut pairs = kernel.vector("pairs", 4).unwrap();
    let e = kernel
        .launch()
        .arg(&mut pts)
        .arg(&mut shapes)
        .arg(&mut pairs)
        .arg(&mut out)
        .scalar(0i32)
        .aggregate(kernel.value("s", "Empty").unwrap())
        .scalar(1i32)
        .scalar(4i32)
        .run(&*device)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "parameter `origin` has type point, but int32 was given"
    );
    // The vectors are handed back after a refused launch.
    assert_eq!((pts.len, pairs.len, out.len()), (4, 4, 4));
}

#[test]
fn compile_errors_and_unknown_kernels() {
    let source = "let%kernel k (v : int32 vector) =\n  v.(0) <- 1.5\n";
    let e = Program::compile("bad.sarek", source)
        .err()
        .expect("a type error");
    let Error::Compile {
        rendered: text,
        diagnostics,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert!(text.starts_with("error: mismatched types"), "{text}");
    assert!(text.contains("bad.sarek:2:12"), "{text}");
    // The same report as a value: the span covers the float written into the int32 vector.
    assert_eq!(e.diagnostics(), diagnostics.as_slice());
    let first = &diagnostics[0];
    assert!(first.message.starts_with("mismatched types"), "{first:?}");
    assert_eq!(
        first.span.start as usize,
        source.find("1.5").unwrap(),
        "{first:?}"
    );
    let program = mix::program().unwrap();
    let e = program.kernel("mxi").unwrap_err();
    assert!(matches!(e, Error::UnknownKernel(_)));
    assert_eq!(
        e.to_string(),
        "no kernel `mxi` in tests/kernels/api.sarek; did you mean `mix`?"
    );
}

#[test]
fn unavailable_backends_say_why() {
    // No backend is compiled out of the default features; CUDA needs a driver. Either it
    // opens (on an NVIDIA machine) or it says why not.
    for backend in [Backend::Cuda, Backend::Ptx] {
        if let Err(e) = sarek::open(backend) {
            let RuntimeError::Unavailable { backend: b, reason } = &e else {
                panic!("{e:?}")
            };
            assert_eq!(*b, backend);
            assert!(!reason.is_empty());
            assert!(
                e.to_string()
                    .starts_with(&format!("backend `{backend}` is unavailable: ")),
                "{e}"
            );
        }
    }
    let listed: Vec<Backend> = sarek::available().into_iter().map(|(b, _)| b).collect();
    assert_eq!(listed, Backend::ALL);
}

#[test]
fn an_interpreter_fault_is_located() {
    let program = Program::compile(
        "oob.sarek",
        "let%kernel oob (v : int32 vector) =\n  let i = global_thread_id in\n  v.(i + 1) <- i\n",
    )
    .unwrap();
    let kernel = program.kernel("oob").unwrap();
    let device = sarek::open(Backend::Interp).unwrap();
    let mut v = Vector::filled(0i32, 8);
    let e = kernel.launch().arg(&mut v).run(&*device).unwrap_err();
    let Error::Located { rendered, error } = &e else {
        panic!("{e:?}")
    };
    assert!(matches!(error, RuntimeError::Fault { .. }), "{error:?}");
    assert!(rendered.starts_with("error: "), "{rendered}");
    assert!(rendered.contains("oob.sarek:3:3"), "{rendered}");
    assert!(rendered.contains("v.(i + 1) <- i"), "{rendered}");
    assert_eq!(e.runtime(), Some(error));
}

#[test]
fn inline_depth_exceeded_is_located_on_every_backend() {
    let program = traps::program().unwrap();
    let kernel = program.kernel("chain").unwrap();
    for backend in BACKENDS {
        let Some(device) = device(backend) else {
            continue;
        };
        // depth (a mod m) recurses a mod m levels; 4 are inlined.
        let mut a = Vector::from_vec((0..64).collect::<Vec<i32>>());
        let mut out = Vector::filled(-1i32, 64);
        let within = traps::chain(&kernel, &mut a, &mut out, 5, 64).run(&*device);
        within.unwrap_or_else(|e| panic!("{backend}: {e}"));
        assert_eq!(out.to_vec(), (0..64).map(|i| i % 5).collect::<Vec<_>>());
        let e = traps::chain(&kernel, &mut a, &mut out, 64, 64)
            .run(&*device)
            .unwrap_err();
        let Error::Located { rendered, .. } = &e else {
            panic!("{backend}: {e:?}")
        };
        assert!(
            rendered.starts_with(
                "error: `depth` recursed deeper than the 4 levels its `[@sarek.inline 4]` mark allows"
            ),
            "{backend}: {rendered}"
        );
        assert!(
            rendered.contains("inline_depth.sarek:7:29"),
            "{backend}: {rendered}"
        );
    }
}

#[test]
fn a_refusal_is_located() {
    let Some(device) = device(Backend::Wgpu) else {
        return;
    };
    let program = Program::compile(
        "f64.sarek",
        "let%kernel twice (v : float64 vector) =\n  let i = global_thread_id in\n  if i < length v then v.(i) <- 2.0 *. v.(i)\n",
    )
    .unwrap();
    let kernel = program.kernel("twice").unwrap();
    let mut v = Vector::filled(1.0f64, 4);
    let e = kernel.launch().arg(&mut v).run(&*device).unwrap_err();
    let Error::Located { rendered, error } = &e else {
        panic!("{e:?}")
    };
    assert!(matches!(error, RuntimeError::Refused { .. }), "{error:?}");
    assert!(rendered.contains("f64.sarek:"), "{rendered}");
    assert!(rendered.to_lowercase().contains("wgsl"), "{rendered}");
    assert_eq!(v.to_vec(), [1.0; 4], "nothing ran");
}

/// `with_fma` contracts `a *. x +. y` (and `c -. a *. b`) into fused multiply-adds: the result
/// is the host's `mul_add` (one rounding) on interp, cpu and opencl, and without it the
/// two-rounding value everywhere. The inputs are chosen so that the two differ. On vulkan and
/// wgpu a SPIR-V `Fma` is fused only if the driver chooses to (lavapipe does not always), so
/// there the fused kernel is held to 2 ulps (docs/backends.md).
#[test]
fn fma_contraction_is_one_rounding_on_every_backend() {
    const SRC: &str = "let%kernel axpy (x : float32 vector) (y : float32 vector) (o : float32 vector) (a : float32) (n : int32) =
  let i = global_thread_id in
  if i < n then o.(i) <- a *. x.(i) +. y.(i) -. (x.(i) *. x.(i))
";
    let program = Program::compile("axpy.sarek", SRC).unwrap();
    let plain = program.kernel("axpy").unwrap();
    let fused = plain.with_fma();
    let n = 256usize;
    let a = 1.0f32 + f32::EPSILON;
    let xs: Vec<f32> = (0..n).map(|i| 1.0 + (i as f32) * 1.0e-3).collect();
    let ys: Vec<f32> = (0..n).map(|i| -1.0 - (i as f32) * 0.7e-3).collect();
    // `t - x*x` with `t = a*x + y`: fused, `fma (-x) x (fma a x y)`.
    let want_fused: Vec<f32> = (0..n)
        .map(|i| (-xs[i]).mul_add(xs[i], a.mul_add(xs[i], ys[i])))
        .collect();
    let want_plain: Vec<f32> = (0..n)
        .map(|i| (a * xs[i] + ys[i]) - xs[i] * xs[i])
        .collect();
    assert_ne!(want_fused, want_plain, "inputs must tell the two apart");
    let mut failures = Vec::new();
    for b in BACKENDS {
        let Some(d) = device(b) else { continue };
        for (kernel, want) in [(&plain, &want_plain), (&fused, &want_fused)] {
            let mut o = Vector::filled(0.0f32, n);
            kernel
                .launch()
                .arg(&mut Vector::from(xs.clone()))
                .arg(&mut Vector::from(ys.clone()))
                .arg(&mut o)
                .scalar(a)
                .scalar(n as i32)
                .run(&*d)
                .unwrap();
            let got = o.to_vec();
            let driver_fused =
                std::ptr::eq(kernel, &fused) && matches!(b, Backend::Wgpu | Backend::Vulkan);
            let slack = if driver_fused { 2 } else { 0 };
            let differ = (0..n)
                .filter(|&i| (got[i].to_bits() as i64 - want[i].to_bits() as i64).abs() > slack)
                .count();
            if differ > 0 {
                failures.push(format!(
                    "{b} ({}): {differ} of {n} differ",
                    if std::ptr::eq(kernel, &fused) {
                        "fma"
                    } else {
                        "plain"
                    }
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
