//! Hand-built kernels run on wgpu (lavapipe in CI) against results computed here by hand.
//! Skips with a printed reason when no adapter is found, unless `SAREK_REQUIRE_BACKENDS`
//! names `wgpu`.
#![cfg(feature = "wgpu")]

use sarek_compiler::Target;
use sarek_compiler::types::Literal;
use sarek_runtime::{ArgValue, Column, Device, HostVector, LaunchConfig, RuntimeError};
use sarek_testkit::ir_kernels::wgsl as k;
use std::sync::Arc;

fn device() -> Option<Arc<dyn Device>> {
    match sarek_runtime::wgpu_backend::open() {
        Ok(d) => Some(d),
        Err(e) => {
            sarek_testkit::backends::unavailable("wgpu", &e.to_string());
            None
        }
    }
}

fn vi(v: Vec<i32>) -> ArgValue {
    ArgValue::Vector(HostVector {
        len: v.len(),
        columns: vec![Column::I32(v)],
    })
}
fn vf(v: Vec<f32>) -> ArgValue {
    ArgValue::Vector(HostVector {
        len: v.len(),
        columns: vec![Column::F32(v)],
    })
}
fn col(a: &ArgValue, c: usize) -> &Column {
    match a {
        ArgValue::Vector(v) => &v.columns[c],
        _ => panic!("not a vector"),
    }
}
fn ints(a: &ArgValue) -> Vec<i32> {
    match col(a, 0) {
        Column::I32(v) => v.clone(),
        c => panic!("{c:?}"),
    }
}
fn floats(a: &ArgValue) -> Vec<f32> {
    match col(a, 0) {
        Column::F32(v) => v.clone(),
        c => panic!("{c:?}"),
    }
}

#[test]
fn saxpy_runs() {
    let Some(d) = device() else { return };
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| (2 * i) as f32).collect();
    let mut args = vec![
        vf(x.clone()),
        vf(y.clone()),
        ArgValue::Scalar(Literal::F32(3.0)),
        ArgValue::Scalar(Literal::I32(900)),
    ];
    d.launch(&k::saxpy(), LaunchConfig::linear(n as u32), &mut args)
        .unwrap();
    let out = floats(&args[1]);
    for i in 0..n {
        let want = if i < 900 { 3.0 * x[i] + y[i] } else { y[i] };
        assert_eq!(out[i], want, "y[{i}]");
    }
}

#[test]
fn escape_families_do_not_collide() {
    let Some(d) = device() else { return };
    let mut args = vec![vi(vec![0; 70])];
    d.launch(&k::escape_families(), LaunchConfig::linear(70), &mut args)
        .unwrap();
    assert_eq!(ints(&args[0]), vec![36; 70]);
}

#[test]
fn length_field_and_scalar_of_the_same_spelling() {
    let Some(d) = device() else { return };
    let v: Vec<i32> = (0..50).collect();
    let mut args = vec![vi(v), ArgValue::Scalar(Literal::I32(7)), vi(vec![-1; 64])];
    d.launch(&k::length_residual(), LaunchConfig::linear(64), &mut args)
        .unwrap();
    let out = ints(&args[2]);
    for (i, o) in out.iter().enumerate() {
        let want = if i < 50 { 50 * 1000 + 7 + i as i32 } else { -1 };
        assert_eq!(*o, want, "out[{i}]");
    }
}

#[test]
fn mutated_shadowing_local_reads_its_own_value() {
    let Some(d) = device() else { return };
    let mut args = vec![vi(vec![0; 10]), ArgValue::Scalar(Literal::I32(20))];
    d.launch(&k::shadowing_local(), LaunchConfig::linear(10), &mut args)
        .unwrap();
    assert_eq!(ints(&args[0]), vec![41; 10]);
}

#[test]
fn records_tuples_variants_and_bools_in_storage() {
    let Some(d) = device() else { return };
    let n = 6;
    // shape leaves: tag, Circle_0, Rect_0, Rect_1
    let tags = vec![0, 1, 2, 0, 1, 2];
    let c0 = vec![1.0f32, 0.0, 0.0, 2.0, 0.0, 0.0];
    let r0 = vec![0.0f32, 2.0, 0.0, 0.0, 4.0, 0.0];
    let r1 = vec![0.0f32, 3.0, 0.0, 0.0, 0.5, 0.0];
    let s = ArgValue::Vector(HostVector {
        len: n,
        columns: vec![
            Column::I32(tags.clone()),
            Column::F32(c0.clone()),
            Column::F32(r0.clone()),
            Column::F32(r1.clone()),
        ],
    });
    let px = vec![10.0f32, 20.0, 30.0, 40.0, 50.0, 60.0];
    let ok = vec![true, false, true, false, true, false];
    let p = ArgValue::Vector(HostVector {
        len: n,
        columns: vec![Column::F32(px.clone()), Column::Bool(ok.clone())],
    });
    let t0: Vec<i32> = (0..n as i32).collect();
    let t1: Vec<i32> = (0..n as i32).map(|i| 100 + i).collect();
    let t = ArgValue::Vector(HostVector {
        len: n,
        columns: vec![Column::I32(t0.clone()), Column::I32(t1.clone())],
    });
    let mut args = vec![s, p, t, vf(vec![0.0; n])];
    d.launch(&k::aggregates(), LaunchConfig::linear(n as u32), &mut args)
        .unwrap();
    let area = floats(&args[3]);
    for i in 0..n {
        let base = match tags[i] {
            0 => 3.0 * c0[i] * c0[i],
            1 => r0[i] * r1[i],
            _ => 0.0,
        };
        let bonus = if ok[i] { px[i] } else { 0.0 };
        assert_eq!(area[i], base + bonus, "area[{i}]");
    }
    let flipped: Vec<bool> = ok.iter().map(|b| !b).collect();
    assert_eq!(*col(&args[1], 1), Column::Bool(flipped));
    assert_eq!(*col(&args[1], 0), Column::F32(px));
    assert_eq!(*col(&args[2], 0), Column::I32(t1));
    assert_eq!(*col(&args[2], 1), Column::I32(t0));
}

#[test]
fn constructors_and_record_parameter() {
    let Some(d) = device() else { return };
    let mut args = vec![
        vf(vec![0.0; 9]),
        ArgValue::Aggregate(vec![Literal::F32(0.5), Literal::F32(-2.0)]),
    ];
    d.launch(
        &k::ctor_and_record_param(),
        LaunchConfig::linear(9),
        &mut args,
    )
    .unwrap();
    let want: Vec<f32> = (0..9)
        .map(|i| if i % 2 == 0 { i as f32 + 0.5 } else { -2.0 })
        .collect();
    assert_eq!(floats(&args[0]), want);
}

#[test]
fn atomics_including_float_add_and_cas() {
    let Some(d) = device() else { return };
    let n = 1000;
    let v: Vec<i32> = (0..n).map(|i| (i * 37 + 11) % 101).collect();
    let mut args = vec![
        vi(v.clone()),
        vi(vec![0; 4]),
        vf(vec![0.0]),
        vi(vec![i32::MIN]),
        vi(vec![0, 5]),
    ];
    d.launch(&k::atomics(), LaunchConfig::linear(n as u32), &mut args)
        .unwrap();
    let mut hist = vec![0; 4];
    for x in &v {
        hist[(x % 4) as usize] += 1;
    }
    assert_eq!(ints(&args[1]), hist);
    // Halves of small integers: every partial sum is exact in f32, whatever the order.
    let sum: f32 = v.iter().map(|x| *x as f32 * 0.5).sum();
    assert_eq!(floats(&args[2]), vec![sum]);
    assert_eq!(ints(&args[3]), vec![*v.iter().max().unwrap()]);
    assert_eq!(ints(&args[4]), vec![7, 5]);
}

#[test]
fn shared_memory_and_barrier() {
    let Some(d) = device() else { return };
    let n = 256;
    let v: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut args = vec![vf(v), vf(vec![0.0; n])];
    let cfg = LaunchConfig {
        grid: [4, 1, 1],
        block: [64, 1, 1],
    };
    d.launch(&k::shared_reverse(), cfg, &mut args).unwrap();
    let want: Vec<f32> = (0..n)
        .map(|i| ((i / 64) * 64 + 63 - i % 64) as f32)
        .collect();
    assert_eq!(floats(&args[1]), want);
}

#[test]
fn helpers_loops_and_local_arrays() {
    let Some(d) = device() else { return };
    let n = 20;
    let x: Vec<i32> = (0..n).map(|i| i * 3 + 1).collect();
    let y: Vec<i32> = vec![5, 6, 7, 8];
    let mut args = vec![vi(x.clone()), vi(y.clone()), vi(vec![0; n as usize])];
    d.launch(&k::helpers(), LaunchConfig::linear(n as u32), &mut args)
        .unwrap();
    let out = ints(&args[2]);
    for i in 0..n {
        let sum_x: i32 = x[..=(i as usize)].iter().sum();
        let count = (0..)
            .scan(i, |m, _| {
                if *m > 0 {
                    *m /= 2;
                    Some(())
                } else {
                    None
                }
            })
            .count() as i32;
        let want = sum_x * 10000 + (5 + 6 + 7) + 2 * 100 + count;
        assert_eq!(out[i as usize], want, "out[{i}]");
    }
}

/// C fmod, by the definition: x - trunc(x / y) * y computed exactly in f64.
fn fmod_ref(x: f32, y: f32) -> f32 {
    (x as f64 % y as f64) as f32
}

#[test]
fn float_mod_shifts_and_round() {
    let Some(d) = device() else { return };
    let a: Vec<f32> = vec![
        5.3,
        -5.3,
        0.75,
        -0.0,
        1e7,
        -123.456,
        0.1,
        2.5 / 4.0,
        -2.5 / 4.0,
        0.375,
    ];
    let v: Vec<i32> = vec![
        -1,
        i32::MIN,
        i32::MAX,
        0x7000_0000,
        -0x1000_0000,
        5,
        -5,
        123456789,
        -987654321,
        16,
    ];
    let n = a.len();
    let mut args = vec![
        vf(a.clone()),
        vi(v.clone()),
        vf(vec![0.0; n]),
        vi(vec![0; n]),
        vf(vec![0.0; n]),
    ];
    d.launch(&k::arith(), LaunchConfig::linear(n as u32), &mut args)
        .unwrap();
    let f = floats(&args[2]);
    let s = ints(&args[3]);
    let r = floats(&args[4]);
    for i in 0..n {
        assert_eq!(
            f[i].to_bits(),
            fmod_ref(a[i], 0.75).to_bits(),
            "fmod({}, 0.75) = {}",
            a[i],
            f[i]
        );
        let want = ((v[i] as u32) >> 28) as i32 + (v[i] >> 28) * 16;
        assert_eq!(s[i], want, "shifts of {}", v[i]);
        // C round: half away from zero.
        assert_eq!(r[i], (a[i] * 4.0).round(), "round({})", a[i] * 4.0);
    }
}

#[test]
fn warp_operations_through_subgroups() {
    if device().is_none() {
        return;
    }
    // Any subgroup size: the checks below hold for every even size.
    let d = sarek_runtime::wgpu_backend::WgpuDevice::new_allowing_any_subgroup_size().unwrap();
    if !d.info().subgroups {
        eprintln!("skipping: the wgpu adapter has no subgroups");
        return;
    }
    let n = 64;
    let v: Vec<i32> = (0..n).map(|i| if i < 32 { i % 4 } else { i }).collect();
    let mut args = vec![vi(v.clone()), vi(vec![0; n as usize])];
    d.launch(
        &k::warp(),
        LaunchConfig {
            grid: [1, 1, 1],
            block: [64, 1, 1],
        },
        &mut args,
    )
    .unwrap();
    let out = ints(&args[1]);
    // The vote depends on the subgroup size; the xor-1 shuffle does not (sizes are even).
    for i in 0..n as usize {
        let sh = v[i ^ 1];
        assert!(out[i] == sh || out[i] == sh + 1, "out[{i}] = {}", out[i]);
    }
    assert_eq!(out[40], v[41] + 1);
}

#[test]
fn warp_kernels_are_refused_without_32_lane_subgroups() {
    let Some(d) = device() else { return };
    if d.info().subgroups {
        return;
    }
    let mut args = vec![vi(vec![0; 64]), vi(vec![0; 64])];
    match d.launch(&k::warp(), LaunchConfig::linear(64), &mut args) {
        Err(RuntimeError::Refused {
            target: Target::Wgsl,
            diagnostics,
            ..
        }) => {
            assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
            // The target (and device) in the message, why in the note.
            let d = &diagnostics[0];
            let m = format!("{} {}", d.message, d.notes.join(" "));
            assert!(m.contains("WGSL") && m.contains("32-lane"), "{m}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn argument_errors_are_reported() {
    let Some(d) = device() else { return };
    let mut args = vec![vf(vec![0.0; 4])];
    match d.launch(&k::saxpy(), LaunchConfig::linear(4), &mut args) {
        Err(RuntimeError::Arguments(m)) => assert!(m.contains("takes 4 arguments"), "{m}"),
        other => panic!("{other:?}"),
    }
    let mut args = vec![vf(vec![0.0; 4])];
    match d.launch(&k::wide(), LaunchConfig::linear(4), &mut args) {
        // A refusal, not a device error: float64 and int64 each once, naming WGSL.
        Err(RuntimeError::Refused {
            target: Target::Wgsl,
            kernel,
            diagnostics,
        }) => {
            assert_eq!(kernel, "wide");
            let msgs: Vec<&str> = diagnostics.iter().map(|d| d.message.as_str()).collect();
            assert_eq!(msgs.len(), 2, "{msgs:?}");
            assert!(msgs.iter().any(|m| m.contains("64-bit floats")), "{msgs:?}");
            assert!(
                msgs.iter().any(|m| m.contains("64-bit integers")),
                "{msgs:?}"
            );
            assert!(msgs.iter().all(|m| m.contains("WGSL")), "{msgs:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn device_errors_become_runtime_errors() {
    let Some(d) = device() else { return };
    // Opaque target source that is not WGSL: wgpu rejects the module inside an error scope.
    let mut kernel = k::saxpy();
    kernel.body.push(k::st(sarek_compiler::ir::StmtKind::Native(
        "this is not wgsl;".into(),
    )));
    let mut args = vec![
        vf(vec![0.0; 4]),
        vf(vec![0.0; 4]),
        ArgValue::Scalar(Literal::F32(1.0)),
        ArgValue::Scalar(Literal::I32(4)),
    ];
    match d.launch(&kernel, LaunchConfig::linear(4), &mut args) {
        // The device's compiler rejecting generated source is `Compile`, never a refusal.
        // Its message is naga's, with the offending line: not only "Validation Error".
        Err(RuntimeError::Compile(m)) => {
            assert!(m.contains("wgpu"), "{m}");
            assert!(m.contains("this is not wgsl"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    // The device is still usable afterwards, and a repeated launch reuses the cached pipeline.
    for _ in 0..2 {
        d.launch(&k::saxpy(), LaunchConfig::linear(4), &mut args)
            .unwrap();
    }
}

/// Integer division is total on every GPU target (the interpreter and checked mode fault
/// instead): x / 0 = 0, x mod 0 = x (so x = (x / y) * y + x mod y still holds),
/// i32::MIN / -1 = i32::MIN, i32::MIN mod -1 = 0 (docs/language-notes.md).
#[test]
fn integer_division_is_total_in_wgsl() {
    let Some(d) = device() else { return };
    let a = vec![7, -7, 7, -7, 5, i32::MIN, i32::MIN, 0];
    let b = vec![2, 2, -2, -2, 0, -1, 1, 0];
    let n = a.len();
    let mut args = vec![vi(a.clone()), vi(b.clone()), vi(vec![9; n]), vi(vec![9; n])];
    d.launch(&k::int_div(), LaunchConfig::linear(n as u32), &mut args)
        .unwrap();
    assert_eq!(ints(&args[2]), vec![3, -3, -3, 3, 0, i32::MIN, i32::MIN, 0]);
    assert_eq!(ints(&args[3]), vec![1, -1, 1, -1, 5, 0, 0, 0]);
}

#[test]
fn shared_atomics_through_a_helper() {
    let Some(d) = device() else { return };
    let n = 256;
    let v: Vec<i32> = (0..n).map(|i| (i * 7 + 3) % 13).collect();
    let mut args = vec![vi(v.clone()), vi(vec![-1; 16])];
    d.launch(
        &k::shared_atomics(),
        LaunchConfig {
            grid: [4, 1, 1],
            block: [64, 1, 1],
        },
        &mut args,
    )
    .unwrap();
    let mut want = vec![0; 16];
    for (i, x) in v.iter().enumerate() {
        want[(i / 64) * 4 + (*x % 4) as usize] += 1;
    }
    assert_eq!(ints(&args[1]), want);
}

#[test]
fn variant_with_bool_payload_in_storage() {
    let Some(d) = device() else { return };
    // leaves: tag, On_0 (bool), On_1 (f32)
    let tag = vec![0, 1, 0, 1];
    let b = vec![true, false, false, true];
    let x = vec![1.5f32, 0.0, -2.0, 0.0];
    let mut args = vec![ArgValue::Vector(HostVector {
        len: 4,
        columns: vec![Column::I32(tag), Column::Bool(b), Column::F32(x)],
    })];
    d.launch(&k::bool_variant(), LaunchConfig::linear(4), &mut args)
        .unwrap();
    assert_eq!(*col(&args[0], 0), Column::I32(vec![0, 0, 0, 0]));
    assert_eq!(
        *col(&args[0], 1),
        Column::Bool(vec![false, true, true, true])
    );
    assert_eq!(*col(&args[0], 2), Column::F32(vec![3.0, 1.0, -4.0, 1.0]));
}
