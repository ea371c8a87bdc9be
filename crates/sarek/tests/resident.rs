//! Data that stays on the device: builds made once, buffers, vectors that move only when
//! stale, asynchronous launches, and the mistakes around them (issue 12).
//!
//! Backends without their runtime skip with a printed reason, unless
//! `SAREK_REQUIRE_BACKENDS` names them.

use sarek::{Backend, Buffer, Error, Program, RuntimeError, Vector};
use std::sync::Arc;

const STEP: &str = "\
let%kernel step (v : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then v.(i) <- v.(i) +. 1.0

let%kernel saxpy (x : float32 vector) (y : float32 vector) (a : float32) =
  let i = global_thread_id in
  if i < length y then y.(i) <- a *. x.(i) +. y.(i)

let%kernel total (x : float32 vector) (out : float32 vector) =
  let i = global_thread_id in
  if i = 0 then begin
    let mut s = 0.0 in
    for k = 0 to length x - 1 do s := s +. x.(k) done;
    out.(0) <- s
  end

let%kernel oob (v : int32 vector) =
  v.(length v) <- 1
";

fn device(backend: Backend) -> Option<Arc<dyn sarek::Device>> {
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

const HOST_AND_SOFTWARE: [Backend; 5] = [
    Backend::Interp,
    Backend::Cpu,
    Backend::Wgpu,
    Backend::Vulkan,
    Backend::OpenCl,
];

/// The tests share the process's devices (OpenCL's is one per process) and count their
/// transfers: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn program() -> Program {
    Program::compile("resident.sarek", STEP).expect("compiles")
}

/// 1000 launches of one kernel on one vector: one upload before the first, one download
/// when the host reads it, one build.
#[test]
fn a_pipeline_of_1000_launches_moves_data_once_each_way() {
    let _serial = serial();
    let program = program();
    let step = program.kernel("step").unwrap();
    let n = 256usize;
    let start: Vec<f32> = (0..n).map(|i| i as f32).collect();
    for backend in HOST_AND_SOFTWARE {
        let Some(device) = device(backend) else {
            continue;
        };
        let before = sarek::transfers(&device);
        let builds = device.core().builds();
        let mut v = Vector::from_vec(start.clone());
        let launches = if backend == Backend::Interp {
            100
        } else {
            1000
        };
        for _ in 0..launches {
            step.launch()
                .arg(&mut v)
                .scalar(n as i32)
                .enqueue(&device)
                .unwrap();
        }
        sarek::synchronize(&device).unwrap();
        assert!(
            !v.host_is_current(),
            "{backend}: the device copy is current"
        );
        let got = v.to_vec();
        let expected: Vec<f32> = start.iter().map(|x| x + launches as f32).collect();
        assert_eq!(got, expected, "{backend}");
        let t = sarek::transfers(&device);
        assert_eq!(t.uploads - before.uploads, 1, "{backend}: uploads {t:?}");
        assert_eq!(
            t.downloads - before.downloads,
            1,
            "{backend}: downloads {t:?}"
        );
        assert_eq!(
            t.upload_bytes - before.upload_bytes,
            4 * n as u64,
            "{backend}"
        );
        assert_eq!(device.core().builds() - builds, 1, "{backend}: one build");
        // Reading again moves nothing; writing on the host makes the next launch upload.
        assert_eq!(v.to_vec(), expected);
        v.as_mut_slice()[0] = -1.0;
        step.launch()
            .arg(&mut v)
            .scalar(n as i32)
            .run(&device)
            .unwrap();
        assert_eq!(v.as_slice()[0], 0.0, "{backend}");
        let t2 = sarek::transfers(&device);
        assert_eq!((t2.uploads - t.uploads, t2.downloads - t.downloads), (1, 1));
    }
}

/// Typed buffers: launches on them move nothing; the host reads them when it asks.
#[test]
fn buffers_stay_on_the_device() {
    let _serial = serial();
    let program = program();
    let saxpy = program.kernel("saxpy").unwrap();
    let total = program.kernel("total").unwrap();
    for backend in HOST_AND_SOFTWARE {
        let Some(device) = device(backend) else {
            continue;
        };
        let x = Buffer::from_slice(device.as_ref(), &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
        let y = Buffer::filled(device.as_ref(), 1.0f32, 4).unwrap();
        let out = Buffer::<f32>::alloc(device.as_ref(), 1).unwrap();
        let before = sarek::transfers(&device);
        for _ in 0..3 {
            saxpy
                .launch()
                .buffer(x.vector())
                .buffer(y.vector())
                .scalar(2.0f32)
                .enqueue(&device)
                .unwrap();
        }
        // A 1-element output next to a longer input.
        total
            .launch()
            .buffer(y.vector())
            .buffer(out.vector())
            .config(sarek::LaunchConfig::linear(1))
            .run(&device)
            .unwrap();
        assert_eq!(
            sarek::transfers(&device),
            before,
            "{backend}: launches move nothing"
        );
        // y = 1 + 3 * 2x
        assert_eq!(
            y.download(device.as_ref()).unwrap(),
            [7.0, 13.0, 19.0, 25.0]
        );
        assert_eq!(out.download(device.as_ref()).unwrap(), [64.0], "{backend}");
    }
}

#[test]
fn a_buffer_on_another_device_is_refused_naming_both() {
    let _serial = serial();
    let program = program();
    let step = program.kernel("step").unwrap();
    let interp = sarek::open(Backend::Interp).unwrap();
    let cpu = sarek::open(Backend::Cpu).unwrap();
    let v = Buffer::filled(interp.as_ref(), 0.0f32, 8).unwrap();
    let e = step
        .launch()
        .buffer(v.vector())
        .scalar(8i32)
        .run(&cpu)
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e.runtime(), Some(RuntimeError::WrongDevice { .. })),
        "{msg}"
    );
    assert!(msg.contains("interp (reference interpreter"), "{msg}");
    assert!(msg.contains("cpu (host CPU"), "{msg}");
    // Downloading through the wrong device is refused the same way.
    let e = v.download(cpu.as_ref()).unwrap_err();
    assert!(matches!(e, RuntimeError::WrongDevice { .. }), "{e}");
}

#[test]
fn length_mismatches_are_clear_errors() {
    let _serial = serial();
    let device = sarek::open(Backend::Cpu).unwrap();
    let b = Buffer::filled(device.as_ref(), 0i32, 4).unwrap();
    let e = b.upload(device.as_ref(), &[1, 2, 3]).unwrap_err();
    assert!(
        e.to_string()
            .contains("the buffer holds 4 elements, 3 given"),
        "{e}"
    );
    let mut out = [0i32; 5];
    assert!(b.download_into(device.as_ref(), &mut out).is_err());
    // A kernel vector where a scalar goes: the parameter and its type are named.
    let program = program();
    let step = program.kernel("step").unwrap();
    let e = step
        .launch()
        .buffer(b.vector())
        .scalar(4i32)
        .run(&device)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("parameter `v` has type float32 vector, but the buffer given holds (int32)"),
        "{e}"
    );
}

/// The launch keeps its buffers alive: dropping them before the synchronisation frees
/// nothing the kernel still uses, and the results are those of the kernel.
#[test]
fn a_buffer_dropped_while_its_launch_is_in_flight_stays_alive() {
    let _serial = serial();
    let program = program();
    let saxpy = program.kernel("saxpy").unwrap();
    for backend in HOST_AND_SOFTWARE {
        let Some(device) = device(backend) else {
            continue;
        };
        let n = 1 << 12;
        let y = Buffer::filled(device.as_ref(), 1.0f32, n).unwrap();
        {
            let x = Buffer::filled(device.as_ref(), 2.0f32, n).unwrap();
            saxpy
                .launch()
                .buffer(x.vector())
                .buffer(y.vector())
                .scalar(3.0f32)
                .enqueue(&device)
                .unwrap();
            // `x` is dropped here, with the launch possibly still running.
        }
        sarek::synchronize(&device).unwrap();
        assert!(
            y.download(device.as_ref())
                .unwrap()
                .iter()
                .all(|&v| v == 7.0),
            "{backend}"
        );
    }
}

#[test]
fn out_of_device_memory_is_an_error() {
    let _serial = serial();
    for backend in HOST_AND_SOFTWARE {
        let Some(device) = device(backend) else {
            continue;
        };
        // More than any of these devices has (the host: an exabyte): elements of 1 GiB
        // each, since more than int32's count of elements is refused before allocating.
        let layout = sarek_compiler::abi::ElemLayout {
            stride: 1 << 30,
            leaves: vec![(0, sarek_compiler::abi::Stored::Native(sarek::Scalar::F64))],
        };
        let e =
            sarek::DeviceVector::alloc(device.as_ref(), vec![sarek::Scalar::F64], layout, 1 << 27)
                .unwrap_err();
        assert!(
            matches!(e, RuntimeError::OutOfMemory { .. }),
            "{backend}: {e}"
        );
        assert!(e.to_string().contains("out of device memory"), "{e}");
        let e = Buffer::<f64>::alloc(device.as_ref(), 1 << 57).unwrap_err();
        assert!(matches!(e, RuntimeError::Arguments(_)), "{backend}: {e}");
    }
}

/// A fault in an asynchronous launch is reported by the next synchronisation, located.
#[test]
fn an_async_fault_surfaces_at_synchronize_with_its_location() {
    let _serial = serial();
    let program = program();
    let oob = program.kernel("oob").unwrap();
    for backend in [Backend::Interp, Backend::Cpu] {
        let device = sarek::open(backend).unwrap();
        let mut v = Vector::filled(0i32, 4);
        oob.launch()
            .arg(&mut v)
            .config(sarek::LaunchConfig::linear(1))
            .enqueue(&device)
            .expect("enqueueing succeeds; the fault comes later");
        let e = oob.error(sarek::synchronize(&device).unwrap_err());
        assert!(matches!(e, Error::Located { .. }), "{e}");
        assert!(
            e.to_string().contains("resident.sarek:18:3"),
            "{backend}: {e}"
        );
        // The next synchronisation is clean.
        sarek::synchronize(&device).unwrap();
    }
    // A device trap (bounded recursion) on every GPU-API backend here.
    let traps = Program::compile(
        "inline_depth.sarek",
        include_str!("../../../tests/traps/inline_depth.sarek"),
    )
    .unwrap();
    let chain = traps.kernel("chain").unwrap();
    for backend in [Backend::Wgpu, Backend::Vulkan, Backend::OpenCl] {
        let Some(device) = device(backend) else {
            continue;
        };
        let a = Buffer::from_slice(device.as_ref(), &(0..64).collect::<Vec<i32>>()).unwrap();
        let out = Buffer::<i32>::alloc(device.as_ref(), 64).unwrap();
        chain
            .launch()
            .buffer(a.vector())
            .buffer(out.vector())
            .scalar(9i32)
            .scalar(64i32)
            .enqueue(&device)
            .unwrap();
        let e = chain.error(sarek::synchronize(&device).unwrap_err());
        assert!(
            e.to_string().contains("inline_depth.sarek:7:29"),
            "{backend}: {e}"
        );
    }
}

/// Two threads launching on one device, each on its own vectors.
#[test]
fn two_threads_launch_on_one_device() {
    let _serial = serial();
    let program = program();
    let step = program.kernel("step").unwrap();
    for backend in HOST_AND_SOFTWARE {
        let Some(device) = device(backend) else {
            continue;
        };
        let results: Vec<Vec<f32>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|t| {
                    let device = device.clone();
                    let step = &step;
                    s.spawn(move || {
                        let mut v = Vector::filled(t as f32 * 100.0, 64);
                        for _ in 0..50 {
                            step.launch()
                                .arg(&mut v)
                                .scalar(64i32)
                                .run(&device)
                                .unwrap();
                        }
                        v.to_vec()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(results[0].iter().all(|&x| x == 50.0), "{backend}");
        assert!(results[1].iter().all(|&x| x == 150.0), "{backend}");
    }
}

/// A trap belongs to the launch that hit it: two threads share one device, one launching a
/// kernel that traps and the other one that does not, their launches interleaved on the
/// device before either synchronises. Each synchronisation reports its own thread's launch:
/// the trap, located, to the first thread; nothing to the second.
#[test]
fn a_fault_is_reported_to_the_thread_whose_launch_caused_it() {
    let _serial = serial();
    let traps = Program::compile(
        "inline_depth.sarek",
        include_str!("../../../tests/traps/inline_depth.sarek"),
    )
    .unwrap();
    let chain = traps.kernel("chain").unwrap();
    for backend in HOST_AND_SOFTWARE {
        let Some(device) = device(backend) else {
            continue;
        };
        // `depth` is inlined 4 levels: `a mod 8` reaches 7 and traps, `a mod 5` never does.
        let turns = std::sync::Barrier::new(2);
        let outcomes: Vec<Result<(), String>> = std::thread::scope(|s| {
            let handles: Vec<_> = [8i32, 5]
                .into_iter()
                .enumerate()
                .map(|(t, m)| {
                    let (device, chain, turns) = (device.clone(), &chain, &turns);
                    s.spawn(move || {
                        let a = Buffer::from_slice(device.as_ref(), &(0..64).collect::<Vec<i32>>())
                            .unwrap();
                        let out = Buffer::<i32>::alloc(device.as_ref(), 64).unwrap();
                        let mut outcome = Ok(());
                        for _ in 0..10 {
                            // Thread 0 enqueues, then thread 1; thread 1 synchronises first,
                            // when both launches are on the device.
                            if t == 1 {
                                turns.wait();
                            }
                            chain
                                .launch()
                                .buffer(a.vector())
                                .buffer(out.vector())
                                .scalar(m)
                                .scalar(64i32)
                                .enqueue(&device)
                                .unwrap();
                            if t == 0 {
                                turns.wait();
                            }
                            turns.wait();
                            let first = (t == 1).then(|| sarek::synchronize(&device));
                            turns.wait();
                            let synced = first.unwrap_or_else(|| sarek::synchronize(&device));
                            let this = match (t, synced) {
                                (0, Err(e)) => {
                                    let e = chain.error(e).to_string();
                                    if e.contains("inline_depth.sarek:7:29") {
                                        Ok(())
                                    } else {
                                        Err(format!("the trap is not located at the call: {e}"))
                                    }
                                }
                                (0, Ok(_)) => Err("the trapping launch reported nothing".into()),
                                (_, Err(e)) => Err(format!("the other thread's trap leaked: {e}")),
                                (_, Ok(_)) => Ok(()),
                            };
                            // Keep going on failure: the other thread waits at the barriers.
                            outcome = outcome.and(this);
                        }
                        outcome
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (t, o) in outcomes.into_iter().enumerate() {
            if let Err(e) = o {
                panic!("{backend}, thread {t}: {e}");
            }
        }
    }
}

/// Records in a device buffer: laid out per the device's ABI, read back as columns.
#[test]
fn record_buffers_round_trip_on_every_layout() {
    let _serial = serial();
    let program = Program::compile(
        "rec.sarek",
        "type p = { x : float32; ok : bool; k : int32 }\n\
         let%kernel bump (v : p vector) =\n  \
           let i = global_thread_id in\n  \
           if i < length v then v.(i) <- { x = v.(i).x *. 2.0; ok = not v.(i).ok; k = v.(i).k + i }\n",
    )
    .unwrap();
    let bump = program.kernel("bump").unwrap();
    for backend in HOST_AND_SOFTWARE {
        let Some(device) = device(backend) else {
            continue;
        };
        let mut host = bump.vector("v", 3).unwrap();
        host.columns[0] = sarek::Column::F32(vec![1.0, 2.0, 3.0]);
        host.columns[1] = sarek::Column::Bool(vec![true, false, true]);
        host.columns[2] = sarek::Column::I32(vec![10, 20, 30]);
        let buf = bump.buffer(&device, "v", 3).unwrap();
        buf.upload(device.as_ref(), &host, "v").unwrap();
        bump.launch().buffer(&buf).run(&device).unwrap();
        let back = buf.to_host(device.as_ref()).unwrap();
        assert_eq!(
            back.columns[0],
            sarek::Column::F32(vec![2.0, 4.0, 6.0]),
            "{backend}"
        );
        assert_eq!(
            back.columns[1],
            sarek::Column::Bool(vec![false, true, false]),
            "{backend}"
        );
        assert_eq!(
            back.columns[2],
            sarek::Column::I32(vec![10, 21, 32]),
            "{backend}"
        );
    }
}

const PIPELINE: &str = "\
let%kernel stage1 (a : float32 vector) (t1 : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then t1.(i) <- 1.5 *. a.(i) +. 0.25

let%kernel stage2 (t1 : float32 vector) (b : float32 vector) (t2 : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then t2.(i) <- t1.(i) *. b.(i) -. 1.0

let%kernel stage3 (t2 : float32 vector) (out : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then out.(i) <- fmax t2.(i) (-2.0) *. 0.5
";

/// Issue 18: a 3-kernel pipeline on resident buffers, unfused and fused, on every local
/// backend: the inputs go up once, the output comes back once, the intermediates never
/// move, whatever the number of runs; both agree with the same arithmetic done here.
#[test]
fn a_pipeline_moves_its_inputs_up_once_and_its_output_back_once() {
    let _serial = serial();
    let program = Program::compile("pipeline.sarek", PIPELINE).unwrap();
    let stages: Vec<_> = ["stage1", "stage2", "stage3"]
        .iter()
        .map(|k| program.kernel(k).unwrap())
        .collect();
    let fused = program.fuse(&["stage1", "stage2", "stage3"]).unwrap();
    let n = 1000usize;
    let a: Vec<f32> = (0..n).map(|i| (i % 97) as f32 / 10.0 - 4.0).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 13) as f32 / 4.0).collect();
    // The same float32 operations, in the same order, on the host.
    let expected: Vec<f32> = a
        .iter()
        .zip(&b)
        .map(|(&a, &b)| ((1.5f32 * a + 0.25) * b - 1.0).max(-2.0) * 0.5)
        .collect();
    for backend in HOST_AND_SOFTWARE {
        let Some(device) = device(backend) else {
            continue;
        };
        for (label, kernels) in [
            ("unfused", stages.clone()),
            ("fused", vec![fused.kernel.clone()]),
        ] {
            let before = sarek::transfers(&device);
            let mut pipe = kernels
                .iter()
                .fold(sarek::Pipeline::new(&device, n).unwrap(), |p, k| p.stage(k))
                .scalar("n", n as i32);
            pipe.upload("a", &a).unwrap();
            pipe.upload("b", &b).unwrap();
            let runs = 10;
            let mut stats = None;
            for _ in 0..runs {
                stats = Some(pipe.run().unwrap());
            }
            let got: Vec<f32> = pipe.download("out").unwrap();
            assert_eq!(got, expected, "{backend} {label}");
            let t = sarek::transfers(&device);
            assert_eq!(
                (t.uploads - before.uploads, t.downloads - before.downloads),
                (2, 1),
                "{backend} {label}: {t:?}"
            );
            assert_eq!(t.upload_bytes - before.upload_bytes, 8 * n as u64);
            assert_eq!(t.download_bytes - before.download_bytes, 4 * n as u64);
            let stats = stats.unwrap();
            // Unfused: a in, t1 out; t1, b in, t2 out; t2 in, out out. Fused: a, b in, out out.
            let (launches, bytes) = if label == "fused" { (1, 12) } else { (3, 28) };
            assert_eq!(stats.launches, launches, "{backend} {label}");
            assert_eq!(stats.bytes, bytes * n as u64, "{backend} {label}");
            if label == "fused" {
                assert!(pipe.buffer("t1").is_none(), "the fused pipeline has no t1");
            }
        }
    }
}

#[test]
fn pipeline_mistakes_are_clear_errors() {
    let _serial = serial();
    let program = Program::compile("pipeline.sarek", PIPELINE).unwrap();
    let device = sarek::open(Backend::Cpu).unwrap();
    let stage2 = program.kernel("stage2").unwrap();
    let stage3 = program.kernel("stage3").unwrap();
    // stage2 reads t1 and b, which nothing wrote.
    let mut pipe = sarek::Pipeline::new(&device, 8)
        .unwrap()
        .stage(&stage2)
        .stage(&stage3)
        .scalar("n", 8i32);
    let e = pipe.run().unwrap_err().to_string();
    assert!(
        e.contains("stage `stage2` reads vector `t1` before any stage writes it"),
        "{e}"
    );
    let e = pipe.upload("tl", &[0.0f32; 8]).unwrap_err().to_string();
    assert!(
        e.contains("no stage of the pipeline has a vector parameter `tl`; did you mean `t1`?"),
        "{e}"
    );
    let e = pipe.upload("t1", &[0i32; 8]).unwrap_err().to_string();
    assert!(e.contains("holds (float32)"), "{e}");
    let e = pipe.upload("n", &[0i32; 8]).unwrap_err().to_string();
    assert!(e.contains("not a vector"), "{e}");
    let mut missing = sarek::Pipeline::new(&device, 8).unwrap().stage(&stage3);
    missing.upload("t2", &[0.0f32; 8]).unwrap();
    let e = missing.run().unwrap_err().to_string();
    assert!(
        e.contains("stage `stage3` needs a value for parameter `n` (int32)"),
        "{e}"
    );
}

/// A launch brings back only what the kernel may write: an input it only reads stays
/// current on the host (a `Vector`), is not downloaded again (a `HostVector`, a launch with
/// host values).
#[test]
fn read_only_inputs_are_not_downloaded() {
    let _serial = serial();
    let program = program();
    let saxpy = program.kernel("saxpy").unwrap();
    let n = 64;
    for backend in HOST_AND_SOFTWARE {
        let Some(device) = device(backend) else {
            continue;
        };
        let mut x = Vector::from_vec((0..n).map(|i| i as f32).collect::<Vec<_>>());
        let mut y = Vector::filled(1.0f32, n);
        let before = sarek::transfers(&device);
        for _ in 0..3 {
            saxpy
                .launch()
                .arg(&mut x)
                .arg(&mut y)
                .scalar(2.0f32)
                .run(&device)
                .unwrap();
        }
        assert!(x.host_is_current(), "{backend}: x is only read");
        assert!(!y.host_is_current(), "{backend}: y was written");
        assert_eq!(x.as_slice()[5], 5.0);
        assert_eq!(y.as_slice()[5], 1.0 + 3.0 * 10.0, "{backend}");
        let t = sarek::transfers(&device);
        assert_eq!(
            (t.uploads - before.uploads, t.downloads - before.downloads),
            (2, 1),
            "{backend}: {t:?}"
        );
        // A HostVector moves every launch, but only back when written.
        let mut hx = sarek::HostVector {
            len: n,
            columns: vec![sarek::Column::F32(vec![1.0; n])],
        };
        let mut hy = hx.clone();
        let before = sarek::transfers(&device);
        saxpy
            .launch()
            .arg(&mut hx)
            .arg(&mut hy)
            .scalar(2.0f32)
            .run(&device)
            .unwrap();
        let t = sarek::transfers(&device);
        assert_eq!(
            (t.uploads - before.uploads, t.downloads - before.downloads),
            (2, 1),
            "{backend}: {t:?}"
        );
        assert_eq!(hy.columns[0], sarek::Column::F32(vec![3.0; n]), "{backend}");
        // Host values through `Device::launch` (tests, `sarek run`): the same.
        let mut args = vec![
            sarek::ArgValue::Vector(hx.clone()),
            sarek::ArgValue::Vector(hy.clone()),
            sarek::ArgValue::Scalar(sarek::Literal::F32(2.0)),
        ];
        let before = sarek::transfers(&device);
        device
            .launch(saxpy.ir(), sarek::LaunchConfig::linear(n as u32), &mut args)
            .unwrap();
        let t = sarek::transfers(&device);
        assert_eq!(t.downloads - before.downloads, 1, "{backend}: {t:?}");
        let sarek::ArgValue::Vector(out) = &args[1] else {
            unreachable!()
        };
        assert_eq!(
            out.columns[0],
            sarek::Column::F32(vec![5.0; n]),
            "{backend}"
        );
    }
}

/// Device-to-device copies: no host transfer, ordered with the launches around them, for
/// scalars and records; across devices through the host.
#[test]
fn device_copies_stay_on_the_device_and_keep_launch_order() {
    let _serial = serial();
    let program = program();
    let step = program.kernel("step").unwrap();
    let n = 300usize;
    let start: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    for backend in HOST_AND_SOFTWARE {
        let Some(device) = device(backend) else {
            continue;
        };
        let src = Buffer::from_slice(device.as_ref(), &start).unwrap();
        let dst = Buffer::<f32>::alloc(device.as_ref(), n).unwrap();
        let before = sarek::transfers(&device);
        // step(src); copy src -> dst; step(src) twice: dst sees exactly one step.
        let launch_step = || {
            step.launch()
                .buffer(src.vector())
                .scalar(n as i32)
                .enqueue(&device)
                .unwrap()
        };
        launch_step();
        dst.copy_from(device.as_ref(), &src).unwrap();
        launch_step();
        launch_step();
        sarek::synchronize(&device).unwrap();
        let t = sarek::transfers(&device);
        assert_eq!(
            (t.uploads, t.downloads),
            (before.uploads, before.downloads),
            "{backend}: no host transfer"
        );
        assert_eq!(t.device_copies - before.device_copies, 1);
        assert_eq!(t.device_copy_bytes - before.device_copy_bytes, 4 * n as u64);
        let plus = |k: f32| start.iter().map(|x| x + k).collect::<Vec<_>>();
        assert_eq!(
            dst.download(device.as_ref()).unwrap(),
            plus(1.0),
            "{backend}"
        );
        assert_eq!(
            src.download(device.as_ref()).unwrap(),
            plus(3.0),
            "{backend}"
        );
        // Mistakes: another length, another element type.
        let short = Buffer::<f32>::alloc(device.as_ref(), n - 1).unwrap();
        let e = short.copy_from(device.as_ref(), &src).unwrap_err();
        assert!(
            e.to_string().contains("holds 299 elements, 300 given"),
            "{e}"
        );
        let ints = Buffer::<i32>::alloc(device.as_ref(), n).unwrap();
        let e = ints
            .vector()
            .copy_from(device.as_ref(), src.vector())
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("the source holds (float32), the destination (int32)"),
            "{e}"
        );
    }
    // Records: copied in the device's own layout.
    let rec = Program::compile(
        "rec.sarek",
        "type p = { x : float32; ok : bool; k : int64 }\n\
         let%kernel touch (v : p vector) = ()\n",
    )
    .unwrap();
    let touch = rec.kernel("touch").unwrap();
    for backend in HOST_AND_SOFTWARE {
        let Some(device) = device(backend) else {
            continue;
        };
        let mut host = touch.vector("v", 3).unwrap();
        host.columns[0] = sarek::Column::F32(vec![1.5, -2.0, 3.25]);
        host.columns[1] = sarek::Column::Bool(vec![true, false, true]);
        host.columns[2] = sarek::Column::I64(vec![1 << 40, -7, 9]);
        let a = touch.buffer(&device, "v", 3).unwrap();
        a.upload(device.as_ref(), &host, "v").unwrap();
        let b = touch.buffer(&device, "v", 3).unwrap();
        b.copy_from(device.as_ref(), &a).unwrap();
        sarek::synchronize(&device).unwrap();
        assert_eq!(b.to_host(device.as_ref()).unwrap(), host, "{backend}");
    }
    // Across devices: through the host, one download and one upload.
    let interp = sarek::open(Backend::Interp).unwrap();
    let cpu = sarek::open(Backend::Cpu).unwrap();
    let on_interp = Buffer::from_slice(interp.as_ref(), &start).unwrap();
    let (i0, c0) = (sarek::transfers(&interp), sarek::transfers(&cpu));
    let on_cpu = on_interp.to_device(interp.as_ref(), cpu.as_ref()).unwrap();
    let other = Buffer::<f32>::alloc(cpu.as_ref(), n).unwrap();
    other
        .vector()
        .copy_from_device(cpu.as_ref(), interp.as_ref(), on_interp.vector())
        .unwrap();
    let (i1, c1) = (sarek::transfers(&interp), sarek::transfers(&cpu));
    assert_eq!(
        (i1.downloads - i0.downloads, c1.uploads - c0.uploads),
        (2, 2)
    );
    assert_eq!(on_cpu.download(cpu.as_ref()).unwrap(), start);
    assert_eq!(other.download(cpu.as_ref()).unwrap(), start);
    // A same-device copy given the wrong device is refused naming both.
    let e = other.copy_from(interp.as_ref(), &on_cpu).unwrap_err();
    assert!(matches!(e, RuntimeError::WrongDevice { .. }), "{e}");
}

/// A stencil iterated in place: each run reads what the previous one wrote, by swapping the
/// two buffers' names; nothing moves between the runs.
#[test]
fn a_pipeline_iterates_by_swapping_buffers() {
    let _serial = serial();
    let program = Program::compile(
        "blur.sarek",
        "let%kernel blur (src : float32 vector) (dst : float32 vector) (n : int32) =\n\
         let i = global_thread_id in\n\
         if i < n then begin\n\
           let l = if i > 0 then src.(i - 1) else src.(i) in\n\
           let r = if i < n - 1 then src.(i + 1) else src.(i) in\n\
           dst.(i) <- (l +. src.(i) +. r) /. 4.0\n\
         end\n",
    )
    .unwrap();
    let blur = program.kernel("blur").unwrap();
    let n = 200usize;
    let start: Vec<f32> = (0..n)
        .map(|i| if i % 17 == 0 { 64.0 } else { 0.0 })
        .collect();
    let steps = 25;
    // The same arithmetic on the host.
    let mut expected = start.clone();
    for _ in 0..steps {
        expected = (0..n)
            .map(|i| {
                let l = if i > 0 { expected[i - 1] } else { expected[i] };
                let r = if i < n - 1 {
                    expected[i + 1]
                } else {
                    expected[i]
                };
                (l + expected[i] + r) / 4.0
            })
            .collect();
    }
    for backend in HOST_AND_SOFTWARE {
        let Some(device) = device(backend) else {
            continue;
        };
        let before = sarek::transfers(&device);
        let mut pipe = sarek::Pipeline::new(&device, n)
            .unwrap()
            .stage(&blur)
            .scalar("n", n as i32);
        pipe.upload("src", &start).unwrap();
        for _ in 0..steps {
            pipe.run().unwrap();
            pipe.swap("src", "dst").unwrap();
        }
        assert_eq!(pipe.download::<f32>("src").unwrap(), expected, "{backend}");
        let t = sarek::transfers(&device);
        assert_eq!(
            (t.uploads - before.uploads, t.downloads - before.downloads),
            (1, 1),
            "{backend}"
        );
        let e = pipe.swap("src", "nope").unwrap_err().to_string();
        assert!(e.contains("no buffer `nope` to swap"), "{e}");
        assert!(
            pipe.buffer("src").is_some(),
            "a failed swap keeps the bindings"
        );
    }
}
