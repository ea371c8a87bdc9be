//! The `opencl` backend on a real OpenCL device (PoCL on CI): hand-built IR kernels with
//! hand-computed expectations (records, variants, tuples, shared memory, barriers, atomics),
//! refusals surfacing as `RuntimeError::Refused`, and device properties.

use sarek_testkit::ir_kernels;

use sarek_compiler::Target;
use sarek_compiler::types::Literal;
use sarek_runtime::{ArgValue, Column, Device, HostVector, LaunchConfig, RuntimeError};
use std::sync::Arc;

fn device() -> Option<Arc<dyn Device>> {
    match sarek_runtime::opencl::open() {
        Ok(d) => Some(d),
        Err(e) => {
            sarek_testkit::backends::unavailable("opencl", &e.to_string());
            None
        }
    }
}

fn vector(columns: Vec<Column>) -> ArgValue {
    ArgValue::Vector(HostVector {
        len: columns[0].len(),
        columns,
    })
}

fn f32s(a: &ArgValue, col: usize) -> Vec<f32> {
    match a {
        ArgValue::Vector(v) => match &v.columns[col] {
            Column::F32(x) => x.clone(),
            c => panic!("not f32: {c:?}"),
        },
        _ => panic!("not a vector"),
    }
}

fn i32s(a: &ArgValue, col: usize) -> Vec<i32> {
    match a {
        ArgValue::Vector(v) => match &v.columns[col] {
            Column::I32(x) => x.clone(),
            c => panic!("not i32: {c:?}"),
        },
        _ => panic!("not a vector"),
    }
}

#[test]
fn saxpy_matches_hand_computation() {
    let Some(dev) = device() else { return };
    let n = 1000;
    let mut args = vec![
        vector(vec![Column::F32((0..1024).map(|i| i as f32).collect())]),
        vector(vec![Column::F32(vec![1.0; 1024])]),
        ArgValue::Scalar(Literal::F32(2.0)),
        ArgValue::Scalar(Literal::I32(n)),
    ];
    let stats = dev
        .launch(&ir_kernels::saxpy(), LaunchConfig::linear(1024), &mut args)
        .unwrap();
    let y = f32s(&args[1], 0);
    for (i, v) in y.iter().enumerate() {
        let want = if (i as i32) < n {
            2.0 * i as f32 + 1.0
        } else {
            1.0
        };
        assert_eq!(*v, want, "y[{i}]");
    }
    assert!(stats.kernel_time <= stats.total_time);
}

#[test]
fn records_variants_and_tuples() {
    let Some(dev) = device() else { return };
    let n = 64usize;
    // shape leaves: tag, Circle_0, Rect_0, Rect_1, At_0_x, At_0_y
    let tags: Vec<i32> = (0..n as i32).map(|i| i % 4).collect();
    let a: Vec<f32> = (0..n).map(|i| 0.25 * i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| 1.5 - 0.1 * i as f32).collect();
    let shape_cols = vec![
        Column::I32(tags.clone()),
        Column::F32(a.clone()),
        Column::F32(a.clone()),
        Column::F32(b.clone()),
        Column::F32(b.clone()),
        Column::F32(a.clone()),
    ];
    let px: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let py: Vec<f32> = (0..n).map(|i| -(i as f32)).collect();
    let mut args = vec![
        vector(shape_cols),
        vector(vec![Column::F32(vec![0.0; n])]),
        vector(vec![Column::F32(px.clone()), Column::F32(py.clone())]),
        vector(vec![Column::I32(vec![7; n]), Column::Bool(vec![false; n])]),
        ArgValue::Aggregate(vec![Literal::F32(0.5), Literal::F32(0.25)]),
    ];
    dev.launch(
        &ir_kernels::shapes(),
        LaunchConfig::linear(n as u32),
        &mut args,
    )
    .unwrap();
    let out = f32s(&args[1], 0);
    let ArgValue::Vector(s) = &args[0] else {
        unreachable!()
    };
    let ArgValue::Vector(t) = &args[3] else {
        unreachable!()
    };
    for i in 0..n {
        let area = match tags[i] {
            0 => 2.5f32 * a[i] * a[i],
            1 => a[i] * b[i],
            3 => b[i],
            _ => 0.0,
        };
        assert_eq!(out[i], area, "out[{i}]");
        let big = area > 1.0;
        assert_eq!(
            s.columns[0].get(i),
            Literal::I32(if big { 0 } else { 2 }),
            "tag[{i}]"
        );
        let circle = if big { area } else { 0.0 };
        assert_eq!(s.columns[1].get(i), Literal::F32(circle), "Circle_0[{i}]");
        for c in 2..6 {
            assert_eq!(
                s.columns[c].get(i),
                Literal::F32(0.0),
                "inactive payload {c} of [{i}]"
            );
        }
        assert_eq!(f32s(&args[2], 0)[i], px[i] + 0.5, "pts.x[{i}]");
        assert_eq!(f32s(&args[2], 1)[i], (py[i] - 0.25) + circle, "pts.y[{i}]");
        assert_eq!(
            t.columns[0].get(i),
            Literal::I32(if big { 0 } else { 2 }),
            "tags._0[{i}]"
        );
        assert_eq!(t.columns[1].get(i), Literal::Bool(big), "tags._1[{i}]");
    }
}

#[test]
fn shared_memory_barriers_and_atomics() {
    let Some(dev) = device() else { return };
    let blocks = 4;
    let mut args = vec![
        vector(vec![Column::F32(vec![1.0; 256 * blocks])]),
        vector(vec![Column::F32(vec![0.5])]),
        vector(vec![Column::I32(vec![0; 10])]),
    ];
    let config = LaunchConfig {
        grid: [blocks as u32, 1, 1],
        block: [256, 1, 1],
    };
    dev.launch(&ir_kernels::reduce(), config, &mut args)
        .unwrap();
    // Each block's tree sum is 256, added atomically (float CAS loop) to 0.5.
    assert_eq!(f32s(&args[1], 0), vec![0.5 + 256.0 * blocks as f32]);
    let c = i32s(&args[2], 0);
    assert_eq!(
        c[0],
        64 * blocks as i32,
        "atomic_add of hist[0] (64 threads with t&3 == 0 per block)"
    );
    assert_eq!(c[1], -2 * blocks as i32, "atomic_sub");
    assert_eq!(c[2], blocks as i32 - 1, "atomic_max of block indices");
    assert_eq!(c[3], 0, "atomic_min");
    assert_eq!(c[4], 1, "atomic_or");
    assert_eq!(c[5], 0, "atomic_and");
    assert_eq!(c[6], 0, "atomic_xor, an even number of times");
    assert_eq!(c[7], -(blocks as i32), "atomic_dec");
    assert_eq!(c[8], 1, "atomic_cas 0 -> 1 succeeds once");
    assert!(c[9] == 0 || c[9] == 1, "atomic_exch stores a cas result");
}

#[test]
fn int64_atomics_and_float64() {
    let Some(dev) = device() else { return };
    if !dev.info().float64 {
        return eprintln!("skipping: the device has no float64");
    }
    let n = 64;
    let mut args = vec![vector(vec![Column::I64(vec![
        0,
        i64::MIN,
        i64::MAX,
        0,
        0,
        0,
        0,
    ])])];
    match dev.launch(&ir_kernels::atomics64(), LaunchConfig::linear(n), &mut args) {
        Ok(_) => {
            let ArgValue::Vector(v) = &args[0] else {
                unreachable!()
            };
            let w = |i: i64| i * 3_000_000_000;
            assert_eq!(
                v.columns[0].get(0),
                Literal::I64((0..n as i64).map(w).sum())
            );
            assert_eq!(v.columns[0].get(1), Literal::I64(w(n as i64 - 1)));
            assert_eq!(v.columns[0].get(2), Literal::I64(0));
            assert_eq!(v.columns[0].get(3), Literal::I64(-(n as i64)));
            assert_eq!(v.columns[0].get(5), Literal::I64(n as i64));
        }
        Err(e @ RuntimeError::Refused { .. }) => assert!(e.to_string().contains("OpenCL C"), "{e}"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn refusal_is_a_located_refusal_naming_opencl() {
    let Some(dev) = device() else { return };
    if dev.info().subgroups {
        return eprintln!("skipping: this device has subgroups, warp kernels run");
    }
    let mut args = vec![
        vector(vec![Column::F32(vec![0.0; 32])]),
        vector(vec![Column::I32(vec![0; 32])]),
    ];
    match dev.launch(&ir_kernels::warp(), LaunchConfig::linear(32), &mut args) {
        Err(RuntimeError::Refused {
            target,
            kernel,
            diagnostics,
        }) => {
            assert_eq!((target, kernel.as_str()), (Target::OpenCl, "warp"));
            assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
            let m = &diagnostics[0].message;
            assert!(m.contains("OpenCL C") && m.contains("warp"), "{m}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// `prebuild` builds several kernels as one program and caches each kernel's build under its
/// own key: the launches that follow build nothing more and compute what they compute alone.
#[test]
fn prebuilt_kernels_share_one_program_and_run_as_alone() {
    let Some(dev) = device() else { return };
    // Renamed, so no other test of this process (one shared device) has built them.
    let renamed = |mut k: sarek_compiler::ir::Kernel| {
        k.name = format!("prebuilt_{}", k.name);
        k
    };
    let saxpy_ir = renamed(ir_kernels::saxpy());
    let saxpy = dev.core().intern(&saxpy_ir);
    let shapes = dev.core().intern(&renamed(ir_kernels::shapes()));
    dev.prebuild(&[saxpy.clone(), shapes.clone()]);
    for h in [&saxpy, &shapes] {
        assert!(
            dev.core()
                .is_built(&sarek_runtime::kernel::BuildKey::new(h)),
            "`{}` was not prebuilt",
            h.name()
        );
    }
    let n = 256;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let mut args = vec![
        vector(vec![Column::F32(x.clone())]),
        vector(vec![Column::F32(vec![1.0; n])]),
        ArgValue::Scalar(Literal::F32(2.0)),
        ArgValue::Scalar(Literal::I32(n as i32)),
    ];
    dev.launch(&saxpy_ir, LaunchConfig::linear(n as u32), &mut args)
        .unwrap();
    let y = f32s(&args[1], 0);
    for i in 0..n {
        assert_eq!(y[i], 2.0 * x[i] + 1.0, "y[{i}]");
    }
}
