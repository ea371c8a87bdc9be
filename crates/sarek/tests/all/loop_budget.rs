//! Long loops on every backend (issue 17): llvmpipe (lavapipe, and wgpu on it) stops a
//! thread's loops after 65,535 iterations in all, so a 70,000-step loop used to return
//! 65,535. Here every kernel runs loops of 70,000 and 200,000 steps (`for`, `while`, an
//! early exit, a helper's loop, two loops in a row) and each result is either the right
//! value, computed here in Rust, or (only on a device with a loop budget, only when the
//! thread's loops run past it) a fault located at the loop: never a wrong value.
//!
//! A backend that is unavailable is skipped with the reason printed, unless
//! `SAREK_REQUIRE_BACKENDS` names it.

use sarek::{ArgValue, Column, HostVector, LaunchConfig};
use sarek::{Backend, Literal, Program};
use sarek_runtime::limits;

const SOURCE: &str = r#"
let count_to (n : int32) : int32 =
  let c = mut 0 in
  for k = 1 to n do
    c := c + 1
  done;
  c

let%kernel count_for (out : int32 vector) (n : int32) =
  let i = thread_idx_x + block_idx_x * block_dim_x in
  if i < length out then begin
    let acc = mut i in
    for k = 1 to n do
      acc := acc + 1
    done;
    out.(i) <- acc
  end

let%kernel count_while (out : int32 vector) (n : int32) =
  let i = thread_idx_x + block_idx_x * block_dim_x in
  if i < length out then begin
    let k = mut 0 in
    while k < n do
      k := k + 1
    done;
    out.(i) <- k + i
  end

let%kernel early_exit (out : int32 vector) (n : int32) (stop : int32) =
  let i = thread_idx_x + block_idx_x * block_dim_x in
  if i < length out then begin
    let k = mut 0 in
    let found = mut false in
    while k < n && not found do
      k := k + 1;
      if k = stop + i then found := true
    done;
    out.(i) <- k
  end

let%kernel helper_loop (out : int32 vector) (n : int32) =
  let i = thread_idx_x + block_idx_x * block_dim_x in
  if i < length out then out.(i) <- count_to n + i

let%kernel two_loops (out : int32 vector) (n : int32) =
  let i = thread_idx_x + block_idx_x * block_dim_x in
  if i < length out then begin
    let acc = mut 0 in
    for k = 1 to n do
      acc := acc + 1
    done;
    let j = mut 0 in
    while j < n do
      j := j + 1;
      acc := acc + 2
    done;
    out.(i) <- acc + i
  end
"#;

const THREADS: usize = 8;

/// One launch: the kernel, its scalar arguments, the values every thread must write, the
/// loop iterations each thread runs (all loops together), and the line of the loop a
/// budget fault must point at.
struct Case {
    kernel: &'static str,
    args: Vec<i32>,
    expect: fn(&[i32], i32) -> i32,
    iterations: fn(&[i32], i32) -> u64,
    loop_line: usize,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for n in [1_000, 70_000, 200_000] {
        out.push(Case {
            kernel: "count_for",
            args: vec![n],
            expect: |a, i| a[0] + i,
            iterations: |a, _| a[0] as u64,
            loop_line: 13,
        });
        out.push(Case {
            kernel: "count_while",
            args: vec![n],
            expect: |a, i| a[0] + i,
            iterations: |a, _| a[0] as u64,
            loop_line: 23,
        });
        out.push(Case {
            kernel: "helper_loop",
            args: vec![n],
            expect: |a, i| a[0] + i,
            iterations: |a, _| a[0] as u64,
            loop_line: 43,
        });
        out.push(Case {
            kernel: "two_loops",
            args: vec![n],
            expect: |a, i| 3 * a[0] + i,
            iterations: |a, _| 2 * a[0] as u64,
            loop_line: 0, // either loop: checked below
        });
        // A break-like exit after 1,000 steps of a 200,000-step bound, and one past the cap.
        for stop in [1_000, 100_000] {
            out.push(Case {
                kernel: "early_exit",
                args: vec![n, stop],
                expect: |a, i| a[0].min(a[1] + i),
                iterations: |a, i| a[0].min(a[1] + i) as u64,
                loop_line: 34,
            });
        }
    }
    out
}

fn required(b: Backend) -> bool {
    std::env::var("SAREK_REQUIRE_BACKENDS").is_ok_and(|v| {
        v.split(',')
            .any(|x| x.trim() == b.name() || x.trim() == "all")
    })
}

#[test]
fn long_loops_are_right_or_a_located_fault_on_every_backend() {
    let Ok(program) = Program::check("loops.sarek", SOURCE) else {
        panic!("the kernels do not check")
    };
    let mut budget_faults = 0;
    for backend in Backend::ALL {
        let device = match sarek::open(backend) {
            Ok(d) => d,
            Err(e) => {
                assert!(!required(backend), "{} is required: {e}", backend.name());
                eprintln!("skipping {}: {e}", backend.name());
                continue;
            }
        };
        let name = device.info().name;
        let budget = limits::loop_budget(&name);
        for case in cases() {
            let kernel = program.lower(case.kernel).expect("the kernel lowers");
            let mut args = vec![ArgValue::Vector(HostVector {
                len: THREADS,
                columns: vec![Column::I32(vec![-1; THREADS])],
            })];
            args.extend(case.args.iter().map(|&v| ArgValue::Scalar(Literal::I32(v))));
            let config = LaunchConfig {
                grid: [1, 1, 1],
                block: [THREADS as u32, 1, 1],
            };
            let what = format!("{} {:?} on {} ({name})", case.kernel, case.args, backend);
            let most = (0..THREADS as i32)
                .map(|i| (case.iterations)(&case.args, i))
                .max()
                .unwrap();
            match sarek_runtime::launch::run_checked(
                device.as_ref(),
                &kernel,
                config,
                &mut args,
                true,
            ) {
                Ok(_) => {
                    let ArgValue::Vector(v) = &args[0] else {
                        unreachable!()
                    };
                    let want: Vec<i32> = (0..THREADS as i32)
                        .map(|i| (case.expect)(&case.args, i))
                        .collect();
                    assert_eq!(v.columns[0], Column::I32(want), "{what}");
                    if let Some(b) = budget {
                        assert!(
                            most <= u64::from(b),
                            "{what}: {most} iterations passed a budget of {b}"
                        );
                    }
                }
                Err(e) => {
                    let Some(b) = budget else {
                        panic!("{what}: {e}");
                    };
                    // The canary takes two iterations of the budget itself.
                    assert!(
                        most + 2 > u64::from(b),
                        "{what}: {most} iterations fault: {e}"
                    );
                    let text = program.render_runtime_error(&e, false);
                    assert!(
                        text.contains("limit of 65535 loop iterations per thread")
                            && (case.loop_line == 0
                                && (text.contains("loops.sarek:49:")
                                    || text.contains("loops.sarek:53:"))
                                || text.contains(&format!("loops.sarek:{}:", case.loop_line))),
                        "{what}: not a located budget fault:\n{text}"
                    );
                    budget_faults += 1;
                }
            }
        }
    }
    let llvmpipe = [Backend::Wgpu, Backend::Vulkan]
        .into_iter()
        .any(|b| sarek::open(b).is_ok_and(|d| limits::loop_budget(&d.info().name).is_some()));
    if llvmpipe {
        assert!(budget_faults > 0, "no loop ran into llvmpipe's budget");
    }
}

/// A loop that never ends (`while true`, which Sarek cannot leave) on a device with a loop
/// budget: a located fault. On lavapipe the GLSL `while (true)` let the driver drop the code
/// after it as unreachable, canary included, and the launch finished silently.
#[test]
fn an_endless_loop_on_a_budgeted_device_is_a_located_fault() {
    let source = "let%kernel spin (v : int32 vector) =\n  let mut x = 0 in\n  while true do x := x + 1 done;\n  v.(0) <- x\n";
    let program = Program::compile("spin.sarek", source).unwrap();
    let kernel = program.kernel("spin").unwrap();
    for backend in [Backend::Wgpu, Backend::Vulkan] {
        let device = match sarek::open(backend) {
            Ok(d) if limits::loop_budget(&d.info().name).is_some() => d,
            Ok(d) => {
                eprintln!("skipping {backend}: {} has no loop budget", d.info().name);
                continue;
            }
            Err(e) => {
                assert!(!required(backend), "{} is required: {e}", backend.name());
                eprintln!("skipping {backend}: {e}");
                continue;
            }
        };
        let mut v = sarek::Vector::filled(0i32, 4);
        let e = kernel
            .launch()
            .config(LaunchConfig::linear(4))
            .arg(&mut v)
            .run(&*device)
            .expect_err("an endless loop cannot finish");
        let text = e.to_string();
        assert!(
            text.contains("limit of 65535 loop iterations") && text.contains("spin.sarek:3:3"),
            "{backend}: {text}"
        );
    }
}
