//! The compiled `cpu` path itself, without the interpreter fallback
//! ([`JitCache::run_native`]): every kernel of the corpus (`tests/kernels/`) and of the
//! conformance suite (`tests/conformance/`) compiles to native code, and every `@run`
//! directive gives the interpreter's results exactly (bit for bit, floats included: the
//! generated code rounds like the interpreter); faults are located like the interpreter's;
//! barriers in loops and in both branches of a uniform `if`; a divergent barrier is left to
//! the interpreter; random int32 and float32 expressions agree with the interpreter.

use sarek_compiler::ir::Kernel;
use sarek_harness::{self as harness, Inputs, Tolerance};
use sarek_runtime::cpu::JitCache;
use sarek_runtime::{ArgValue, Column, HostVector, LaunchConfig, RuntimeError, interp};
use sarek_testkit::files::{sarek_files, tests_dir};

/// A checked program and its sources (for rendering faults).
struct Program {
    sources: sarek_compiler::SourceMap,
    checked: sarek_compiler::front::tast::Program,
}

impl Program {
    fn compile(name: &str, text: &str) -> Program {
        let mut sources = sarek_compiler::SourceMap::new();
        let id = sources.add(name.to_string(), text.to_string());
        let checked = sarek_compiler::check(&sources, id).unwrap_or_else(|d| {
            panic!("{}", sarek_compiler::diag::render_all(&d, &sources, false))
        });
        Program { sources, checked }
    }

    fn kernel_names(&self) -> Vec<String> {
        self.checked
            .kernels
            .iter()
            .map(|k| k.name.clone())
            .collect()
    }

    fn kernel(&self, name: &str) -> Kernel {
        sarek_compiler::lower_kernel(&self.checked, name).unwrap_or_else(|d| {
            panic!(
                "{}",
                sarek_compiler::diag::render_all(&d, &self.sources, false)
            )
        })
    }
}

const EXACT: Tolerance = Tolerance {
    f32_abs: 0.0,
    f32_ulps: 0,
    f64_abs: 0.0,
    f64_ulps: 0,
};

/// (kernels compiled, directives run) over one directory; failures collected.
fn check_dir(dir: &str, failures: &mut Vec<String>) -> (usize, usize) {
    let native = JitCache::default();
    let (mut kernels, mut runs) = (0, 0);
    for file in sarek_files(&tests_dir(dir)) {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let program = Program::compile(&name, &text);
        for k in program.kernel_names() {
            kernels += 1;
            if let Some(why) = native.note(&program.kernel(&k)) {
                failures.push(format!("{name}: {k} is not compiled: {why}"));
            }
        }
        for d in harness::parse_directives(&text).unwrap() {
            let kernel = program.kernel(&d.kernel);
            let mut expected = harness::build_args(&kernel, &Inputs::from_directive(&d)).unwrap();
            let mut found = expected.clone();
            interp::run(&kernel, d.config(), &mut expected).unwrap();
            runs += 1;
            if let Err(e) = native.run_native(&kernel, d.config(), &mut found) {
                failures.push(format!("{name} line {}: {}: {e}", d.line, d.kernel));
                continue;
            }
            for c in harness::compare_args(&kernel, &expected, &found, &EXACT) {
                if !c.ok() {
                    failures.push(format!(
                        "{name} line {}: {}: {}: {} of {} differ, first {}",
                        d.line,
                        d.kernel,
                        c.param,
                        c.mismatches,
                        c.compared,
                        c.first.unwrap()
                    ));
                }
            }
        }
    }
    (kernels, runs)
}

#[test]
fn corpus_runs_natively_and_exactly_like_interp() {
    let mut failures = Vec::new();
    let (kernels, runs) = check_dir("kernels", &mut failures);
    assert!(
        kernels >= 40 && runs >= 25,
        "{kernels} kernels, {runs} runs"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn conformance_runs_natively_and_exactly_like_interp() {
    let mut failures = Vec::new();
    let (kernels, runs) = check_dir("conformance", &mut failures);
    assert!(
        kernels >= 40 && runs >= 40,
        "{kernels} kernels, {runs} runs"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The program, then the interpreter's and the native path's results.
type Both = (
    Program,
    Result<Vec<ArgValue>, RuntimeError>,
    Result<Vec<ArgValue>, RuntimeError>,
);

fn ivec(v: Vec<i32>) -> ArgValue {
    ArgValue::Vector(HostVector {
        len: v.len(),
        columns: vec![Column::I32(v)],
    })
}

fn ints(a: &ArgValue) -> Vec<i32> {
    match a {
        ArgValue::Vector(HostVector { columns, .. }) => match &columns[0] {
            Column::I32(v) => v.clone(),
            c => panic!("not int32: {c:?}"),
        },
        a => panic!("not a vector: {a:?}"),
    }
}

fn scalar(x: i32) -> ArgValue {
    ArgValue::Scalar(sarek_compiler::types::Literal::I32(x))
}

/// Run `kernel` of `src` on interp and on the native cpu path with the same arguments.
fn both(src: &str, kernel: &str, config: LaunchConfig, args: Vec<ArgValue>) -> Both {
    let program = Program::compile("test.sarek", src);
    let k = program.kernel(kernel);
    run_both(program, &k, config, args)
}

fn run_both(program: Program, k: &Kernel, config: LaunchConfig, args: Vec<ArgValue>) -> Both {
    let mut a = args.clone();
    let interp = interp::run(k, config, &mut a).map(|_| a);
    let mut b = args;
    let native = JitCache::default().run_native(k, config, &mut b).map(|_| b);
    (program, interp, native)
}

#[test]
fn faults_are_located_like_the_interpreter() {
    let src = "let%kernel oob (a : int32 vector) (n : int32) =\n  let i = global_thread_id in\n  a.(i + n) <- 1\n\n\
               let%kernel div (a : int32 vector) (d : int32) =\n  let i = global_thread_id in\n  a.(i) <- 100 / (d - i)\n";
    for (kernel, extra, needle) in [
        ("oob", 1, "out-of-bounds write of `a` (index 64, length 64)"),
        ("div", 40, "integer division by zero"),
    ] {
        let (program, interp, native) = both(
            src,
            kernel,
            LaunchConfig::linear(64),
            vec![ivec(vec![7; 64]), scalar(extra)],
        );
        let (
            Err(RuntimeError::Fault {
                span: s1,
                message: m1,
            }),
            Err(e2),
        ) = (&interp, &native)
        else {
            panic!("{kernel}: both fault: {interp:?} / {native:?}");
        };
        let RuntimeError::Fault {
            span: s2,
            message: m2,
        } = e2
        else {
            panic!("{kernel}: a located fault, got {e2:?}");
        };
        assert!(m2.contains(needle), "{m2}");
        assert!(
            m2.contains(&format!("kernel `{kernel}`, block (0,0,0)")),
            "{m2}"
        );
        assert_eq!(s1, s2, "{kernel}: same statement");
        let rendered = harness::render_error(e2, &program.sources);
        assert!(rendered.starts_with("test.sarek:"), "{rendered}");
        // One thread faults (63 past the end; 40 divides by zero): both name it.
        assert_eq!(m1, m2);
    }
    // The default cpu device reports it the same way (no fallback for a real fault).
    let program = Program::compile("test.sarek", src);
    let k = program.kernel("oob");
    let mut args = vec![ivec(vec![7; 64]), scalar(1)];
    let before = args.clone();
    let e = sarek_runtime::cpu::open()
        .unwrap()
        .launch(&k, LaunchConfig::linear(64), &mut args)
        .unwrap_err();
    assert!(matches!(e, RuntimeError::Fault { .. }), "{e:?}");
    assert_eq!(
        args, before,
        "a failed launch leaves the arguments untouched"
    );
}

#[test]
fn barriers_in_loops_and_in_both_branches_of_a_uniform_if() {
    // Each round rotates the block's values by one through shared memory (two barriers per
    // round, in a loop); then a uniform `if` with a barrier in each branch either reverses
    // the block or doubles it.
    let src =
        "let%kernel rot (a : int32 vector) (out : int32 vector) (rounds : int32) (rev : bool) =
  let%shared (s : int32) = 64 in
  let t = thread_idx_x in
  let i = block_idx_x * block_dim_x + t in
  let mut v = a.(i) in
  for r = 1 to rounds do
    s.(t) <- v;
    block_barrier ();
    v := s.((t + 1) mod 64) + r;
    block_barrier ()
  done;
  let mut k = 0 in
  while k < 2 do
    s.(t) <- v;
    block_barrier ();
    v := s.(63 - t);
    block_barrier ();
    k := k + 1
  done;
  if rev then begin
    s.(t) <- v;
    block_barrier ();
    out.(i) <- s.(63 - t)
  end else begin
    s.(63 - t) <- v * 2;
    block_barrier ();
    out.(i) <- s.(63 - t)
  end
";
    let n = 256usize;
    let a: Vec<i32> = (0..n as i32).map(|x| x * 3 - 100).collect();
    for (rounds, rev) in [(0, true), (5, false), (70, true)] {
        let args = vec![
            ivec(a.clone()),
            ivec(vec![0; n]),
            scalar(rounds),
            ArgValue::Scalar(sarek_compiler::types::Literal::Bool(rev)),
        ];
        let (_, interp, native) = both(
            src,
            "rot",
            LaunchConfig {
                grid: [4, 1, 1],
                block: [64, 1, 1],
            },
            args,
        );
        let (interp, native) = (interp.unwrap(), native.unwrap());
        // Host model of the same computation.
        let mut want = vec![0; n];
        for b in 0..4 {
            let mut v: Vec<i32> = a[b * 64..b * 64 + 64].to_vec();
            for r in 1..=rounds {
                v = (0..64).map(|t| v[(t + 1) % 64] + r).collect();
            }
            for _ in 0..2 {
                v = (0..64).map(|t| v[63 - t]).collect();
            }
            let o: Vec<i32> = if rev {
                (0..64).map(|t| v[63 - t]).collect()
            } else {
                (0..64).map(|t| v[t] * 2).collect()
            };
            want[b * 64..b * 64 + 64].copy_from_slice(&o);
        }
        assert_eq!(ints(&interp[1]), want, "interp, rounds {rounds}");
        assert_eq!(ints(&native[1]), want, "cpu, rounds {rounds}");
    }
}

#[test]
fn divergent_barrier_falls_back_to_the_interpreter_diagnosis() {
    // The checker refuses a barrier under a thread-dependent condition, so the condition is
    // made thread-dependent in the IR (what a buggy front end or a Rust-built kernel could
    // hand the runtime).
    let src = "let%kernel bad (a : int32 vector) (n : int32) =
  let%shared (s : int32) = 64 in
  let t = thread_idx_x in
  if n > 5 then begin
    s.(t) <- 1;
    block_barrier ();
    a.(t) <- s.(0)
  end
";
    let (program, k) = with_thread_dependent_if(src);
    let args = vec![ivec(vec![0; 64]), scalar(9)];
    let (_, interp, native) = run_both(program, &k, LaunchConfig::linear(64), args.clone());
    let Err(RuntimeError::Launch(why)) = &native else {
        panic!("the native path reports the divergence: {native:?}");
    };
    assert!(why.contains("diverges"), "{why}");
    let Err(expected) = interp else {
        panic!("interp faults");
    };
    assert!(expected.to_string().contains("barrier"), "{expected}");
    let mut args = args;
    let got = sarek_runtime::cpu::open()
        .unwrap()
        .launch(&k, LaunchConfig::linear(64), &mut args)
        .unwrap_err();
    assert_eq!(
        got, expected,
        "the default cpu device gives the interpreter's fault"
    );
}

mod random {
    //! Random int32 and float32 expressions over a thread's input, its index and constants:
    //! the native cpu path computes exactly what the interpreter computes (or both fault).
    use super::*;
    use proptest::prelude::*;

    fn int_expr() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("x".to_string()),
            Just("i".to_string()),
            (-40i32..40).prop_map(|c| format!("({c})")),
            Just("(-2147483647 - 1)".to_string()),
        ];
        leaf.prop_recursive(4, 24, 3, |inner| {
            let ops = prop_oneof![
                Just("+"),
                Just("-"),
                Just("*"),
                Just("/"),
                Just("mod"),
                Just("land"),
                Just("lor"),
                Just("lxor"),
                Just("lsl"),
                Just("lsr"),
                Just("asr"),
            ];
            prop_oneof![
                (inner.clone(), ops, inner.clone()).prop_map(|(a, o, b)| format!("({a} {o} {b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("(min {a} {b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("(max {a} {b})")),
                inner.clone().prop_map(|a| format!("(abs {a})")),
                (inner.clone(), inner.clone(), inner.clone())
                    .prop_map(|(c, a, b)| format!("(if {c} < {a} then {a} else {b})")),
                inner
                    .clone()
                    .prop_map(|a| format!("(int_of_float (float_of_int {a} *. 0.37))")),
            ]
        })
    }

    fn float_expr() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("f".to_string()),
            Just("(float_of_int i)".to_string()),
            (-50i32..50).prop_map(|c| format!("({}.25)", c)),
        ];
        leaf.prop_recursive(4, 24, 3, |inner| {
            let ops = prop_oneof![Just("+."), Just("-."), Just("*."), Just("/.")];
            prop_oneof![
                (inner.clone(), ops, inner.clone()).prop_map(|(a, o, b)| format!("({a} {o} {b})")),
                inner.clone().prop_map(|a| format!("(sqrt {a})")),
                inner.clone().prop_map(|a| format!("(sin {a})")),
                inner.clone().prop_map(|a| format!("(floor {a})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("(fmin {a} {b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("(atan2 {a} {b})")),
            ]
        })
    }

    fn check(src: &str, args: Vec<ArgValue>) -> Result<(), TestCaseError> {
        let (_, interp, native) = both(src, "p", LaunchConfig::linear(100), args);
        match (interp, native) {
            (Ok(a), Ok(b)) => {
                prop_assert_eq!(format!("{:?}", a[1]), format!("{:?}", b[1]), "{}", src)
            }
            (Err(_), Err(_)) => {}
            (a, b) => prop_assert!(false, "{src}: interp {a:?}, cpu {b:?}"),
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn int32_expressions(e in int_expr()) {
            let src = format!(
                "let%kernel p (xs : int32 vector) (out : int32 vector) =\n  let i = global_thread_id in\n  if i < length xs then begin\n    let x = xs.(i) in\n    out.(i) <- {e}\n  end\n"
            );
            let xs: Vec<i32> = (0..100).map(|k| (k * 7919) % 201 - 100).collect();
            check(&src, vec![ivec(xs), ivec(vec![0; 100])])?;
        }

        #[test]
        fn float32_expressions(e in float_expr()) {
            let src = format!(
                "let%kernel p (xs : float32 vector) (out : float32 vector) =\n  let i = global_thread_id in\n  if i < length xs then begin\n    let f = xs.(i) in\n    out.(i) <- {e}\n  end\n"
            );
            let xs: Vec<f32> = (0..100).map(|k| (k as f32 - 50.0) * 0.731).collect();
            let v = |x: Vec<f32>| ArgValue::Vector(HostVector { len: x.len(), columns: vec![Column::F32(x)] });
            check(&src, vec![v(xs), v(vec![0.0; 100])])?;
        }
    }
}

#[test]
fn lane_groups_agree_with_the_interpreter_at_their_edges() {
    // Segments run four threads at a time: consecutive loads and stores as float32 vectors,
    // a gather at reversed indices, a store every lane makes to one element (the last
    // thread's value stays), a uniform loop accumulating in a vector register, a conditional
    // expression with loads (a branch the group agrees on, or reruns thread by thread), and
    // groups at the edges: a tail of a 1-D block, a block row that is not a multiple of four,
    // lanes that disagree on `i < n`, an out-of-bounds group.
    let src = "let%kernel lanes (x : float32 vector) (y : float32 vector) (last : int32 vector) (n : int32) (m : int32) =
  let i = global_idx_y * (grid_dim_x * block_dim_x) + global_idx_x in
  if i < n then begin
    let v = if i < m then x.(i) else 0.25 in
    let mut acc = 0.0 in
    for k = 0 to 7 do
      acc := acc +. x.(k + i) *. 0.5
    done;
    y.(i) <- v *. 2.0 +. v /. 3.0 -. x.(n - 1 - i) +. acc;
    last.(block_idx_x) <- thread_idx_x * 10 + thread_idx_y
  end
";
    let program = Program::compile("test.sarek", src);
    let k = program.kernel("lanes");
    let jit = sarek_jit::compile(&k, &sarek_jit::JitOptions::default()).unwrap();
    assert_eq!(jit.lane_group_segments(), 1, "the body runs in lane groups");
    let fvec = |v: Vec<f32>| {
        ArgValue::Vector(HostVector {
            len: v.len(),
            columns: vec![Column::F32(v)],
        })
    };
    let len = 208;
    let x: Vec<f32> = (0..len).map(|k| (k as f32 * 0.37).sin() * 3.0).collect();
    let cases = [
        // (grid, block, n, m): 1-D with a tail group; lanes split on `i < m` and `i < n`;
        // rows of 8 (grouped) and of 6 (thread by thread); x read past its end (a fault).
        ([3, 1, 1], [30, 1, 1], 90, 45),
        ([2, 1, 1], [64, 1, 1], 127, 50),
        ([2, 1, 1], [8, 3, 1], 48, 13),
        ([2, 1, 1], [6, 5, 1], 60, 31),
        ([1, 1, 1], [64, 1, 1], 64, 64),
        ([1, 1, 1], [64, 1, 1], 300, 10),
    ];
    let mut faults = 0;
    for (grid, block, n, m) in cases {
        let config = LaunchConfig { grid, block };
        let args = vec![
            fvec(x.clone()),
            fvec(vec![0.0; len]),
            ivec(vec![-1; 4]),
            scalar(n),
            scalar(m),
        ];
        let (_, interp, native) = run_both(Program::compile("test.sarek", src), &k, config, args);
        match (&interp, &native) {
            (Ok(a), Ok(b)) => {
                for c in harness::compare_args(&k, a, b, &EXACT) {
                    assert!(
                        c.ok(),
                        "{grid:?} {block:?} n={n}: {}: {:?}",
                        c.param,
                        c.first
                    );
                }
            }
            (Err(a), Err(b)) => {
                faults += 1;
                assert_eq!(a, b, "{grid:?} {block:?} n={n}: the same fault")
            }
            _ => panic!("{grid:?} {block:?} n={n}: interp {interp:?}, cpu {native:?}"),
        }
    }
    assert_eq!(faults, 1, "the last case reads past the end of x");
}

#[test]
fn a_lane_group_faulting_after_a_store_is_rerun_on_the_interpreter() {
    // The second store of thread 61 is out of bounds; its group (60..63) already made its
    // first stores, so it cannot rerun thread by thread: the native launch stops and the cpu
    // device reruns the launch on the interpreter, which names thread 61.
    let src = "let%kernel twice (y : int32 vector) (n : int32) =
  let i = global_thread_id in
  y.(i) <- 1;
  y.(i + n) <- 2
";
    let program = Program::compile("test.sarek", src);
    let k = program.kernel("twice");
    let jit = sarek_jit::compile(&k, &sarek_jit::JitOptions::default()).unwrap();
    assert_eq!(jit.lane_group_segments(), 1);
    let args = vec![ivec(vec![0; 64]), scalar(3)];
    let (_, interp, native) = run_both(program, &k, LaunchConfig::linear(64), args.clone());
    let Err(RuntimeError::Launch(why)) = &native else {
        panic!("the native path hands the launch over: {native:?}");
    };
    assert!(why.contains("rerun on the interpreter"), "{why}");
    let Err(expected) = interp else {
        panic!("interp faults");
    };
    assert!(
        expected.to_string().contains("thread (61,0,0)"),
        "{expected}"
    );
    let mut args = args;
    let got = sarek_runtime::cpu::open()
        .unwrap()
        .launch(&k, LaunchConfig::linear(64), &mut args)
        .unwrap_err();
    assert_eq!(
        got, expected,
        "the cpu device gives the interpreter's fault"
    );
    // In bounds, the native path runs it.
    let mut ok = vec![ivec(vec![0; 64]), scalar(0)];
    JitCache::default()
        .run_native(&k, LaunchConfig::linear(64), &mut ok)
        .unwrap();
    assert_eq!(ints(&ok[0]), vec![2; 64]);
}

/// Loops whose accesses are affine in the counter run a copy with their bounds checked once
/// before the loop (docs/backends.md); when that check fails, the checked loop faults where
/// the thread loop does, and wrapping int32 indices never slip past it.
#[test]
fn hoisted_loop_bounds_checks() {
    let src = "let%kernel sum (a : int32 vector) (out : int32 vector) (lo : int32) (hi : int32) (step : int32) (off : int32) =
  let t = thread_idx_x in
  let mut s = 0 in
  for k = lo to hi do
    s := s + a.(k * step + t + off) * (k + 1)
  done;
  out.(global_thread_id) <- s

let%kernel scatter (a : int32 vector) (out : int32 vector) (lo : int32) (hi : int32) (step : int32) =
  let t = thread_idx_x in
  for k = hi downto lo do
    out.(k * step + t) <- a.(t + k) + k
  done

let%kernel tile (a : int32 vector) (out : int32 vector) (off : int32) =
  let%shared (s : int32) = 256 in
  let t = thread_idx_x in
  for j = 0 to 15 do
    s.(t * 16 + j) <- a.(t * 16 + j)
  done;
  block_barrier ();
  let mut acc = 0 in
  for k = 0 to 15 do
    acc := acc + s.(k * 16 + t + off) * (k - 3)
  done;
  out.(t) <- acc

let%kernel rows (a : int32 vector) (out : int32 vector) (off : int32) =
  let%shared (s : int32) = 256 in
  let t = thread_idx_x in
  for j = 0 to 15 do
    s.(t * 16 + j) <- a.(t * 16 + j)
  done;
  block_barrier ();
  let mut acc = 0 in
  for k = 15 downto 0 do
    acc := acc * 3 + s.(k * 16 + off) - s.(t + k * 16)
  done;
  out.(t) <- acc
";
    let program = Program::compile("test.sarek", src);
    // Counted once per generated copy. sum: the thread loop (`out.(global_thread_id)`) and
    // the `for` loop in its hoisted group body (a segment with a loop runs one group per
    // iteration; the checked copy, for edge blocks, keeps a plain loop); scatter: the `for`
    // loop (its thread loop has no affine access); tile: the second segment's thread loop
    // (`out.(t)`) and its `k` loop in the hoisted body (`t * 16 + j` in the first segment
    // is not consecutive in a lane group).
    for (name, loops) in [("sum", 2), ("scatter", 1), ("tile", 2)] {
        let jit = sarek_jit::compile(&program.kernel(name), &sarek_jit::JitOptions::default());
        assert_eq!(
            jit.unwrap().hoisted_loops(),
            loops,
            "{name}: versioned loops"
        );
    }
    let a: Vec<i32> = (0..1000).map(|x| (x * 37) % 101 - 50).collect();
    let block64 = LaunchConfig {
        grid: [2, 1, 1],
        block: [64, 1, 1],
    };
    // The host model of `sum` (None: some index is out of bounds).
    let sum_model = |lo: i32, hi: i32, step: i32, off: i32| -> Option<Vec<i32>> {
        let mut out = vec![0; 128];
        for (g, o) in out.iter_mut().enumerate() {
            let t = (g % 64) as i32;
            for k in lo..=hi {
                let i = k.wrapping_mul(step).wrapping_add(t).wrapping_add(off);
                *o += *a.get(usize::try_from(i).ok()?)? * (k + 1);
            }
        }
        Some(out)
    };
    let cases = [
        // In bounds, a parameter as the step; an empty loop; negative counters.
        (0, 15, 8, 0),
        (5, 4, 1000, 0),
        (-3, 2, 7, 40),
        // The last iteration leaves the vector; so does the first (negative index).
        (0, 15, 64, 0),
        (0, 3, 1, -1),
        // Exact values out of range, int32 indices in range: the checked loop runs.
        (2, 2, i32::MAX, 2),
        // Both ends in range as int32, the middle wraps negative: must fault, not read.
        (0, 2, i32::MAX, 2),
    ];
    for (lo, hi, step, off) in cases {
        let k = program.kernel("sum");
        let args = vec![
            ivec(a.clone()),
            ivec(vec![0; 128]),
            scalar(lo),
            scalar(hi),
            scalar(step),
            scalar(off),
        ];
        let mut x = args.clone();
        let interp = interp::run(&k, block64, &mut x).map(|_| x);
        let mut y = args.clone();
        let native = JitCache::default()
            .run_native(&k, block64, &mut y)
            .map(|_| y);
        let case = format!("sum lo {lo} hi {hi} step {step} off {off}");
        match sum_model(lo, hi, step, off) {
            Some(want) => {
                assert_eq!(ints(&interp.unwrap()[1]), want, "{case}: interp");
                assert_eq!(ints(&native.unwrap()[1]), want, "{case}: cpu");
            }
            None => {
                let (Err(e1), Err(e2)) = (&interp, &native) else {
                    panic!("{case}: both fault: {interp:?} / {native:?}");
                };
                // No store precedes the faulting read: the group reruns thread by thread
                // and faults at the same statement as the interpreter.
                let (
                    RuntimeError::Fault { span: s1, .. },
                    RuntimeError::Fault {
                        span: s2,
                        message: m2,
                    },
                ) = (e1, e2)
                else {
                    panic!("{case}: located faults: {e1:?} / {e2:?}");
                };
                assert_eq!(s1, s2, "{case}");
                assert!(m2.contains("out-of-bounds read of `a`"), "{case}: {m2}");
            }
        }
    }

    // Stores in a `downto` loop: the default device (native, or the interpreter after a
    // group faults past a store) gives exactly the interpreter's outcome, and a failed
    // launch leaves the arguments untouched.
    for (lo, hi, step) in [(0, 7, 64), (0, 9, 100), (0, 15, 64), (-1, 3, 64)] {
        let k = program.kernel("scatter");
        let args = vec![
            ivec(a.clone()),
            ivec(vec![0; 1000]),
            scalar(lo),
            scalar(hi),
            scalar(step),
        ];
        let mut x = args.clone();
        let interp = interp::run(&k, block64, &mut x).map(|_| x);
        let mut y = args.clone();
        let cpu = sarek_runtime::cpu::open()
            .unwrap()
            .launch(&k, block64, &mut y);
        match (&interp, &cpu) {
            (Ok(x), Ok(_)) => {
                let mut want = vec![0; 1000];
                for t in 0..64 {
                    for k in (lo..=hi).rev() {
                        want[(k * step + t) as usize] = a[(t + k) as usize] + k;
                    }
                }
                assert_eq!(ints(&x[1]), want, "scatter {lo} {hi} {step}: interp");
                assert_eq!(ints(&y[1]), want, "scatter {lo} {hi} {step}: cpu");
            }
            (Err(e1), Err(e2)) => {
                assert_eq!(e1, e2, "scatter {lo} {hi} {step}");
                assert_eq!(y, args, "scatter {lo} {hi} {step}: arguments untouched");
            }
            _ => panic!("scatter {lo} {hi} {step}: {interp:?} / {cpu:?}"),
        }
    }

    // A constant-trip loop (unrolled) over shared memory: in bounds, then one past the end
    // (thread 15 at k = 15 is the first fault in both orders).
    let block16 = LaunchConfig {
        grid: [1, 1, 1],
        block: [16, 1, 1],
    };
    for off in [-1, 0, 1] {
        let k = program.kernel("tile");
        let args = vec![ivec(a.clone()), ivec(vec![0; 16]), scalar(off)];
        let (_, interp, native) = run_both(Program::compile("test.sarek", src), &k, block16, args);
        if off == 0 {
            let want: Vec<i32> = (0..16)
                .map(|t| (0..16).map(|k| a[k * 16 + t] * (k as i32 - 3)).sum())
                .collect();
            assert_eq!(ints(&interp.unwrap()[1]), want, "tile: interp");
            assert_eq!(ints(&native.unwrap()[1]), want, "tile: cpu");
        } else {
            let (Err(e1), Err(e2)) = (&interp, &native) else {
                panic!("tile: both fault: {interp:?} / {native:?}");
            };
            assert_eq!(e1, e2, "tile: the same fault");
            let want = if off < 0 {
                "(index -1,"
            } else {
                "(index 256, length 256)"
            };
            assert!(e2.to_string().contains(want), "{e2}");
        }
    }

    // A constant-trip `downto` loop with a group-uniform access (`k * 16 + off`, checked as
    // one range for the whole loop) next to a consecutive one: in bounds exactly for
    // `0 <= off <= 15`, at both edges of the shared array.
    let jit = sarek_jit::compile(&program.kernel("rows"), &sarek_jit::JitOptions::default());
    assert!(jit.unwrap().hoisted_loops() > 0, "rows: versioned loops");
    for off in [-1, 0, 7, 15, 16, 241, -240, i32::MIN, i32::MAX] {
        let k = program.kernel("rows");
        let args = vec![ivec(a.clone()), ivec(vec![0; 16]), scalar(off)];
        let (_, interp, native) = run_both(Program::compile("test.sarek", src), &k, block16, args);
        if (0..=15).contains(&off) {
            let want: Vec<i32> = (0..16)
                .map(|t| {
                    (0..16).rev().fold(0i32, |acc, k| {
                        acc.wrapping_mul(3)
                            .wrapping_add(a[k * 16 + off as usize] - a[t + k * 16])
                    })
                })
                .collect();
            assert_eq!(ints(&interp.unwrap()[1]), want, "rows {off}: interp");
            assert_eq!(ints(&native.unwrap()[1]), want, "rows {off}: cpu");
        } else {
            let (Err(e1), Err(e2)) = (&interp, &native) else {
                panic!("rows {off}: both fault: {interp:?} / {native:?}");
            };
            assert_eq!(e1, e2, "rows {off}: the same fault");
        }
    }
}

/// In a lane group, a comparison of a consecutive index with a group-uniform bound (and
/// `&&` of such) is decided from the group's first and last lane: bounds inside a group,
/// at its edges, and consecutive values that wrap past `max_int` within a group.
#[test]
fn lane_group_range_conditions() {
    let src = "let%kernel cmp (out : int32 vector) (u : int32) (c : int32) =
  let i = thread_idx_x + c in
  let mut r = 0 in
  if i < u then r := r + 1;
  if i <= u then r := r + 2;
  if i > u then r := r + 4;
  if i >= u then r := r + 8;
  if u < i then r := r + 16;
  if u >= i then r := r + 32;
  if i < u && thread_idx_x > 2 then r := r + 64;
  if u <= i && i < u + 6 then r := r + 128;
  out.(global_thread_id) <- r
";
    let program = Program::compile("test.sarek", src);
    let k = program.kernel("cmp");
    let jit = sarek_jit::compile(&k, &sarek_jit::JitOptions::default()).unwrap();
    assert_eq!(jit.lane_group_segments(), 1, "the body runs in lane groups");
    let model = |u: i32, c: i32| -> Vec<i32> {
        (0..16)
            .map(|t: i32| {
                let i = t.wrapping_add(c);
                let conds = [
                    i < u,
                    i <= u,
                    i > u,
                    i >= u,
                    u < i,
                    u >= i,
                    i < u && t > 2,
                    u <= i && i < u.wrapping_add(6),
                ];
                conds
                    .iter()
                    .enumerate()
                    .map(|(b, &x)| if x { 1 << b } else { 0 })
                    .sum()
            })
            .collect()
    };
    let max = i32::MAX;
    let cases = [
        (0, 0),
        (5, 0),
        (8, 0),
        (9, 3),
        (16, 0),
        (-3, -10),
        (max, max - 5),
        (max - 2, max - 5),
        (i32::MIN + 1, max - 5),
        (max - 9, max - 9),
    ];
    for (u, c) in cases {
        let config = LaunchConfig::linear(16);
        let args = vec![ivec(vec![0; 16]), scalar(u), scalar(c)];
        let (_, interp, native) = run_both(Program::compile("test.sarek", src), &k, config, args);
        let want = model(u, c);
        assert_eq!(ints(&interp.unwrap()[0]), want, "u {u} c {c}: interp");
        assert_eq!(ints(&native.unwrap()[0]), want, "u {u} c {c}: cpu");
    }
}

/// A 1-D block's thread loop runs a copy with the checks of `x.(i + off)`-style accesses and
/// the guard `i < n && lo <= i` decided once per block (docs/backends.md): full and partial
/// blocks, guards false for part of a block, blocks not a multiple of four, and reads past
/// either end, which fault where the thread loop faults.
#[test]
fn thread_loop_hoisting() {
    let src = "let%kernel axpy (x : int32 vector) (y : int32 vector) (n : int32) (lo : int32) (off : int32) =
  let i = global_thread_id in
  if i < n && lo <= i then y.(i) <- x.(i + off) * 3 + y.(i)
";
    let program = Program::compile("test.sarek", src);
    let k = program.kernel("axpy");
    let jit = sarek_jit::compile(&k, &sarek_jit::JitOptions::default()).unwrap();
    assert_eq!(jit.hoisted_loops(), 1, "the thread loop is versioned");
    let x: Vec<i32> = (0..300).map(|v| v * 7 - 1000).collect();
    let y0: Vec<i32> = (0..270).map(|v| 5 - v).collect();
    let model = |threads: i32, n: i32, lo: i32, off: i32| -> Option<Vec<i32>> {
        let mut y = y0.clone();
        for i in 0..threads {
            if i < n && lo <= i {
                let xi = *x.get(usize::try_from(i + off).ok()?)?;
                let yi = y.get_mut(usize::try_from(i).ok()?)?;
                *yi += xi * 3;
            }
        }
        Some(y)
    };
    let blocks = [
        (LaunchConfig::linear(256), 256),
        (
            LaunchConfig {
                grid: [9, 1, 1],
                block: [30, 1, 1],
            },
            270,
        ),
    ];
    let cases = [
        (256, 0, 0),
        (200, 0, 0),
        (256, 70, 0),
        (256, 0, 30),
        (i32::MIN, 0, 0),
        (256, 0, 50),
        (256, 0, -1),
        (300, 0, 0),
    ];
    for (config, threads) in blocks {
        for (n, lo, off) in cases {
            let case = format!("{threads} threads, n {n} lo {lo} off {off}");
            let args = vec![
                ivec(x.clone()),
                ivec(y0.clone()),
                scalar(n),
                scalar(lo),
                scalar(off),
            ];
            let (_, interp, native) =
                run_both(Program::compile("test.sarek", src), &k, config, args);
            match model(threads, n, lo, off) {
                Some(want) => {
                    assert_eq!(ints(&interp.unwrap()[1]), want, "{case}: interp");
                    assert_eq!(ints(&native.unwrap()[1]), want, "{case}: cpu");
                }
                None => {
                    let (Err(e1), Err(e2)) = (&interp, &native) else {
                        panic!("{case}: both fault: {interp:?} / {native:?}");
                    };
                    assert_eq!(e1, e2, "{case}: the same fault");
                }
            }
        }
    }
}

/// The thread loop of a 2-D block is versioned over x and y: `a.(y * w + x + off)` and the
/// guard `x < w && y < h` are decided once per block (rows of 8 in lane groups, rows of 6
/// thread by thread), partial blocks take the checked loop, a read past the end faults like
/// the thread loop.
#[test]
fn thread_loop_hoisting_in_two_dimensions() {
    let src = "let%kernel grid2 (a : int32 vector) (out : int32 vector) (w : int32) (h : int32) (off : int32) =
  let x = global_idx_x in
  let y = global_idx_y in
  if x < w && y < h then out.(y * w + x) <- a.(y * w + x + off) + thread_idx_y
";
    let program = Program::compile("test.sarek", src);
    let k = program.kernel("grid2");
    let jit = sarek_jit::compile(&k, &sarek_jit::JitOptions::default()).unwrap();
    assert_eq!(jit.hoisted_loops(), 1, "the thread loop is versioned");
    let a: Vec<i32> = (0..400).map(|v| v * 5 - 77).collect();
    for (grid, block) in [([3u32, 2, 1], [8u32, 4, 1]), ([4, 2, 1], [6, 5, 1])] {
        let (tw, th) = ((grid[0] * block[0]) as i32, (grid[1] * block[1]) as i32);
        for (w, h, off) in [
            (tw, th, 0),
            (20, 7, 3),
            (tw, th, 400 - tw * th),
            (tw, th, -1),
        ] {
            let case = format!("block {block:?}, w {w} h {h} off {off}");
            let config = LaunchConfig { grid, block };
            let args = vec![
                ivec(a.clone()),
                ivec(vec![0; 300]),
                scalar(w),
                scalar(h),
                scalar(off),
            ];
            let (_, interp, native) =
                run_both(Program::compile("test.sarek", src), &k, config, args);
            let mut want = Some(vec![0; 300]);
            for y in 0..th {
                for x in 0..tw {
                    if x < w && y < h {
                        let i = y * w + x;
                        let v = usize::try_from(i + off).ok().and_then(|j| a.get(j));
                        match (v, want.as_mut()) {
                            (Some(v), Some(out)) => out[i as usize] = v + y % block[1] as i32,
                            _ => want = None,
                        }
                    }
                }
            }
            match want {
                Some(want) => {
                    assert_eq!(ints(&interp.unwrap()[1]), want, "{case}: interp");
                    assert_eq!(ints(&native.unwrap()[1]), want, "{case}: cpu");
                }
                None => {
                    let (Err(e1), Err(e2)) = (&interp, &native) else {
                        panic!("{case}: both fault: {interp:?} / {native:?}");
                    };
                    assert_eq!(e1, e2, "{case}: the same fault");
                }
            }
        }
    }
}

/// After a group's first store, an `if` whose lanes disagree runs each lane's arm in turn;
/// nested `if`s (a `match` on an int is a chain of them) and conditional expressions inside
/// an arm follow that lane alone (a difftest finding: an inner `if` once ran every lane).
#[test]
fn lane_by_lane_ifs_after_a_store() {
    let src = "let%kernel chain (a : int32 vector) (out : int32 vector) (n : int32) =
  let i = global_thread_id in
  let t = thread_idx_x in
  out.(i) <- t;
  let x = (match (a.(i) + n) land 3 with 0 -> block_dim_x | 1 -> t | 2 -> 100 | _ -> (if t < 5 then a.(i) else a.(i + 1 - n))) in
  out.(i) <- x * 2 + out.(i)
";
    let program = Program::compile("test.sarek", src);
    let k = program.kernel("chain");
    let jit = sarek_jit::compile(&k, &sarek_jit::JitOptions::default()).unwrap();
    assert_eq!(jit.lane_group_segments(), 1, "the body runs in lane groups");
    let a: Vec<i32> = (0..65).map(|v| (v * 7 + v / 3) % 11 - 5).collect();
    for n in [0, 1, 2, 3] {
        let config = LaunchConfig::linear(64);
        let args = vec![ivec(a.clone()), ivec(vec![0; 64]), scalar(n)];
        let (_, interp, native) = run_both(Program::compile("test.sarek", src), &k, config, args);
        let want: Vec<i32> = (0..64)
            .map(|i| {
                let x = match (a[i] + n) & 3 {
                    0 => 64,
                    1 => i as i32,
                    2 => 100,
                    _ if i < 5 => a[i],
                    _ => a[(i as i32 + 1 - n) as usize],
                };
                x * 2 + i as i32
            })
            .collect();
        assert_eq!(ints(&interp.unwrap()[1]), want, "n {n}: interp");
        assert_eq!(ints(&native.unwrap()[1]), want, "n {n}: cpu");
    }
}

/// A division in one lane's arm divides for that lane only: the other lanes' divisors may be
/// zero (Cranelift's division traps on zero; a difftest finding, seed 1083).
#[test]
fn division_in_one_lanes_arm() {
    let src = "let%kernel divarm (a : int32 vector) (out : int32 vector) =
  let i = global_thread_id in
  out.(i) <- 1;
  let d = a.(i) in
  let x = (if d <> 0 then 1000 / d else (if d = 0 then (-1) else 7 mod d)) in
  out.(i) <- x + out.(i)
";
    let program = Program::compile("test.sarek", src);
    let k = program.kernel("divarm");
    let a: Vec<i32> = (0..64)
        .map(|v| if v % 3 == 0 { 0 } else { v - 30 })
        .collect();
    let args = vec![ivec(a.clone()), ivec(vec![0; 64])];
    let (_, interp, native) = run_both(program, &k, LaunchConfig::linear(64), args);
    let want: Vec<i32> = a
        .iter()
        .map(|&d| if d != 0 { 1000 / d + 1 } else { 0 })
        .collect();
    assert_eq!(ints(&interp.unwrap()[1]), want, "interp");
    assert_eq!(ints(&native.unwrap()[1]), want, "cpu");
}

#[test]
fn barriers_in_helpers_and_match_arms_compile_natively() {
    // `rotate` synchronises (two barriers): its calls are inlined into the block schedule,
    // as a `let`'s initialiser and inside a `match` arm; the `match` on a block-uniform
    // variant has barriers in its arms, so it runs as a chain of uniform `if`s.
    let src = "type shape = Dot | Line of int32 | Box of int32 * int32

let rotate (s : int32 array) (v : int32) (t : int32) : int32 =
  s.(t) <- v;
  block_barrier ();
  let r = s.((t + 1) mod 64) in
  block_barrier ();
  r

let%kernel helper_sync (a : int32 vector) (out : int32 vector) (rounds : int32) (mode : int32) =
  let%shared (s : int32) = 64 in
  let t = thread_idx_x in
  let i = block_idx_x * block_dim_x + t in
  let mut v = a.(i) in
  for r = 1 to rounds do
    let w = rotate s v t in
    v := w + r
  done;
  let sh = if mode = 0 then Dot else if mode = 1 then Line (rounds + 2) else Box (3, mode) in
  (match sh with
   | Dot -> v := v + 1
   | Line k ->
     s.(t) <- v * k;
     block_barrier ();
     v := s.(63 - t);
     block_barrier ()
   | Box (p, q) ->
     let w = rotate s v t in
     v := w * p + q);
  out.(i) <- v

let%kernel store_call (a : int32 vector) (out : int32 vector) =
  let%shared (s : int32) = 64 in
  let t = thread_idx_x in
  let i = block_idx_x * block_dim_x + t in
  out.(i) <- rotate s a.(i) t
";
    let program = Program::compile("test.sarek", src);
    let k = program.kernel("helper_sync");
    assert_eq!(JitCache::default().note(&k), None, "compiled natively");
    // The call as the value stored into an element (its index `i` evaluated after the
    // call: the call cannot change it).
    let store = program.kernel("store_call");
    assert_eq!(JitCache::default().note(&store), None, "compiled natively");
    let a: Vec<i32> = (0..128).map(|x| x * x - 50).collect();
    let config = LaunchConfig {
        grid: [2, 1, 1],
        block: [64, 1, 1],
    };
    let (_, interp, native) = run_both(
        Program::compile("test.sarek", src),
        &store,
        config,
        vec![ivec(a.clone()), ivec(vec![0; 128])],
    );
    let want: Vec<i32> = (0..128)
        .map(|i| a[i / 64 * 64 + (i % 64 + 1) % 64])
        .collect();
    assert_eq!(ints(&interp.unwrap()[1]), want, "interp");
    assert_eq!(ints(&native.unwrap()[1]), want, "cpu");
    let n = 256usize;
    let a: Vec<i32> = (0..n as i32).map(|x| x * 7 - 300).collect();
    for (rounds, mode) in [(0, 0), (3, 1), (5, 2), (1, 9)] {
        let args = vec![
            ivec(a.clone()),
            ivec(vec![0; n]),
            scalar(rounds),
            scalar(mode),
        ];
        let config = LaunchConfig {
            grid: [4, 1, 1],
            block: [64, 1, 1],
        };
        let (_, interp, native) = run_both(Program::compile("test.sarek", src), &k, config, args);
        let (interp, native) = (interp.unwrap(), native.unwrap());
        // Host model of the same computation, block by block.
        let mut want = vec![0; n];
        for b in 0..4 {
            let rotate = |v: &[i32]| -> Vec<i32> { (0..64).map(|t| v[(t + 1) % 64]).collect() };
            let mut v: Vec<i32> = a[b * 64..b * 64 + 64].to_vec();
            for r in 1..=rounds {
                v = rotate(&v).iter().map(|w| w + r).collect();
            }
            v = match mode {
                0 => v.iter().map(|x| x + 1).collect(),
                1 => (0..64).map(|t| v[63 - t] * (rounds + 2)).collect(),
                _ => rotate(&v).iter().map(|w| w * 3 + mode).collect(),
            };
            want[b * 64..b * 64 + 64].copy_from_slice(&v);
        }
        assert_eq!(
            ints(&interp[1]),
            want,
            "interp, rounds {rounds} mode {mode}"
        );
        assert_eq!(ints(&native[1]), want, "cpu, rounds {rounds} mode {mode}");
    }
}

#[test]
fn a_synchronising_helper_inside_an_expression_runs_natively() {
    // A call inside a larger expression is taken out into a `let` before its statement and
    // inlined: its arguments go with it, nested calls come out innermost first, and what is
    // evaluated before it that is not inert (memory reads, calls, faulting divisions, mutable
    // variables) moves into `let`s before it, in order.
    let src = "let rotate (s : int32 array) (v : int32) (t : int32) : int32 =
  s.(t) <- v;
  block_barrier ();
  s.((t + 1) mod 64)

let%kernel in_expr (a : int32 vector) =
  let%shared (s : int32) = 64 in
  let t = thread_idx_x in
  a.(t) <- rotate s a.(t) t + 1

let%kernel nested (a : int32 vector) =
  let%shared (s : int32) = 64 in
  let t = thread_idx_x in
  let k = t * 3 in
  if k + rotate s (rotate s a.(t) t * 2) t > 100 then a.(t) <- k - 1 else a.(t) <- k + 1

let%kernel after_a_read (a : int32 vector) =
  let%shared (s : int32) = 64 in
  let t = thread_idx_x in
  a.(t) <- a.(t) + rotate s t t

let%kernel after_a_mutable_and_a_division (a : int32 vector) =
  let%shared (s : int32) = 64 in
  let t = thread_idx_x in
  let mut m = t + 5 in
  a.(t) <- m + 100 / (t + 1) + rotate s t t * 2;
  m := 0

let%kernel after_a_faulting_read (a : int32 vector) =
  let%shared (s : int32) = 64 in
  let t = thread_idx_x in
  a.(t) <- a.(t + 1) + rotate s t t
";
    let program = Program::compile("test.sarek", src);
    let a: Vec<i32> = (0..64).collect();
    let k = program.kernel("in_expr");
    assert_eq!(JitCache::default().note(&k), None, "in_expr runs natively");
    let (_, interp, native) = run_both(
        Program::compile("test.sarek", src),
        &k,
        LaunchConfig::linear(64),
        vec![ivec(a.clone())],
    );
    let want: Vec<i32> = (0..64).map(|t| a[(t + 1) % 64] + 1).collect();
    assert_eq!(ints(&interp.unwrap()[0]), want);
    assert_eq!(ints(&native.unwrap()[0]), want);
    let k = program.kernel("nested");
    assert_eq!(JitCache::default().note(&k), None, "nested runs natively");
    let (_, interp, native) = run_both(
        Program::compile("test.sarek", src),
        &k,
        LaunchConfig::linear(64),
        vec![ivec(a.clone())],
    );
    // Inner call: thread t gets a[t + 1]; outer: s.(t) <- 2 a[t + 1], t gets 2 a[t + 2].
    let want: Vec<i32> = (0..64)
        .map(|t| {
            let k = 3 * t as i32;
            if k + 2 * a[(t + 2) % 64] > 100 {
                k - 1
            } else {
                k + 1
            }
        })
        .collect();
    assert_eq!(ints(&interp.unwrap()[0]), want);
    assert_eq!(ints(&native.unwrap()[0]), want);
    // After a memory read, a mutable variable and a division: each moves into a `let` of its
    // own before the call, in order, so the read sees the vector before the helper's
    // barrier and stores, as the interpreter does.
    for name in ["after_a_read", "after_a_mutable_and_a_division"] {
        let k = program.kernel(name);
        assert_eq!(JitCache::default().note(&k), None, "{name} runs natively");
        let (_, interp, native) = run_both(
            Program::compile("test.sarek", src),
            &k,
            LaunchConfig::linear(64),
            vec![ivec(a.clone())],
        );
        let want: Vec<i32> = (0..64i32)
            .map(|t| match name {
                "after_a_read" => a[t as usize] + (t + 1) % 64,
                _ => (t + 5) + 100 / (t + 1) + (t + 1) % 64 * 2,
            })
            .collect();
        assert_eq!(ints(&interp.unwrap()[0]), want, "interp, {name}");
        assert_eq!(ints(&native.unwrap()[0]), want, "cpu, {name}");
    }
    // A fault in an operand before the call is reported where it was, before the helper's
    // barrier, on both.
    let k = program.kernel("after_a_faulting_read");
    let (_, interp, native) = run_both(
        Program::compile("test.sarek", src),
        &k,
        LaunchConfig::linear(64),
        vec![ivec(a.clone())],
    );
    let (Err(RuntimeError::Fault { message: want, .. }), Err(RuntimeError::Fault { message, .. })) =
        (interp, native)
    else {
        panic!("both fault");
    };
    assert_eq!(message, want);
    assert!(message.contains("index 64"), "{message}");
}

#[test]
fn only_vectors_a_launch_may_write_are_copied_and_a_failed_launch_leaves_all_untouched() {
    // The cpu device copies only the vectors a kernel may write (stores, atomics, vectors
    // passed to helpers), so a failed launch can leave its arguments untouched without
    // copying read-only inputs. `put` stores into `y` through a helper: `y` counts as
    // written; thread 63 faults reading `x` after threads 0..62 stored.
    let src = "let put (v : int32 vector) (i : int32) (x : int32) : unit = v.(i) <- x

let%kernel via_helper (x : int32 vector) (y : int32 vector) (h : int32 vector) (n : int32) =
  let i = global_thread_id in
  ignore (atomic_add h 0 1);
  let z = x.(i + n) in
  put y i z

let%kernel direct (x : int32 vector) (y : int32 vector) (a : int32) =
  let i = global_thread_id in
  y.(i) <- a * x.(i)
";
    let program = Program::compile("test.sarek", src);
    let k = program.kernel("via_helper");
    assert_eq!(
        sarek_jit::written_params(&k),
        [false, true, true, false],
        "y through the helper, h through the atomic"
    );
    assert_eq!(
        sarek_jit::written_params(&program.kernel("direct")),
        [false, true, false]
    );
    let cpu = sarek_runtime::cpu::open().unwrap();
    let mut args = vec![
        ivec((0..64).collect()),
        ivec(vec![-1; 64]),
        ivec(vec![0; 1]),
        scalar(1),
    ];
    let before = args.clone();
    let e = cpu
        .launch(&k, LaunchConfig::linear(64), &mut args)
        .unwrap_err();
    assert!(
        matches!(&e, RuntimeError::Fault { message, .. } if message.contains("thread (63,0,0)")),
        "{e:?}"
    );
    assert_eq!(
        args, before,
        "a failed launch leaves every argument untouched"
    );
    // A launch that succeeds writes its results back.
    args[3] = scalar(0);
    cpu.launch(&k, LaunchConfig::linear(64), &mut args).unwrap();
    assert_eq!(ints(&args[1]), (0..64).collect::<Vec<i32>>());
    assert_eq!(ints(&args[2]), vec![64]);
    assert_eq!(ints(&args[0]), (0..64).collect::<Vec<i32>>());
}

/// Launch `kernel` on `device` with the given buffers and int32 scalars (in parameter order:
/// buffers first), and synchronise.
fn on_buffers(
    device: &dyn sarek_runtime::Device,
    kernel: &Kernel,
    config: LaunchConfig,
    buffers: &[&sarek_runtime::Buffer<i32>],
    scalars: &[i32],
) -> Result<(), RuntimeError> {
    use sarek_runtime::bind::BindArg;
    let handle = sarek_runtime::KernelHandle::new(kernel.clone());
    let args: Vec<BindArg<'_>> = buffers
        .iter()
        .map(|b| BindArg::Vector(b.vector()))
        .chain(
            scalars
                .iter()
                .map(|&s| BindArg::Scalar(sarek_compiler::types::Literal::I32(s))),
        )
        .collect();
    sarek_runtime::launch::enqueue(device, &handle, config, &args)?;
    sarek_runtime::synchronize(device).map(|_| ())
}

#[test]
fn cpu_launches_on_resident_buffers_work_in_place() {
    // Dense scalar vectors in host buffers are the native code's columns (no unpacking):
    // results land in the buffers and back-to-back launches see each other's results. A
    // launch that faults (threads 0..62 store before thread 63 faults) reports the fault and
    // leaves the vectors it writes partly written, as on a GPU; the ones it only reads are
    // untouched, and the next launch runs normally.
    let src = "let%kernel direct (x : int32 vector) (y : int32 vector) (a : int32) (n : int32) =
  let i = global_thread_id in
  y.(i) <- y.(i) + a * x.(i + n)

let%kernel pure (n : int32) =
  let m = n + 1 in
  ignore m
";
    let program = Program::compile("test.sarek", src);
    let k = program.kernel("direct");
    let cpu = sarek_runtime::cpu::open().unwrap();
    let dev = cpu.as_ref();
    let x = sarek_runtime::Buffer::from_slice(dev, &(0..64).collect::<Vec<i32>>()).unwrap();
    let y = sarek_runtime::Buffer::from_slice(dev, &[1i32; 64]).unwrap();
    let config = LaunchConfig::linear(64);
    on_buffers(dev, &k, config, &[&x, &y], &[2, 0]).unwrap();
    on_buffers(dev, &k, config, &[&x, &y], &[3, 0]).unwrap();
    let want: Vec<i32> = (0..64).map(|i| 1 + 5 * i).collect();
    assert_eq!(y.download(dev).unwrap(), want);
    let e = on_buffers(dev, &k, config, &[&x, &y], &[1, 1]).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::Fault { message, .. } if message.contains("thread (63,0,0)")),
        "{e:?}"
    );
    assert_eq!(x.download(dev).unwrap(), (0..64).collect::<Vec<i32>>());
    y.upload(dev, &want).unwrap();
    // The same buffer as both parameters: two views of one storage, so the general path
    // (columns unpacked from the bytes) runs it; reads see the launch's start.
    on_buffers(dev, &k, config, &[&y, &y], &[1, 0]).unwrap();
    let doubled: Vec<i32> = want.iter().map(|v| 2 * v).collect();
    assert_eq!(y.download(dev).unwrap(), doubled);
    // Only code that can end in a rerun on the interpreter needs copies to undo a launch.
    let options = sarek_jit::JitOptions::default();
    let pure = sarek_jit::compile(&program.kernel("pure"), &options).unwrap();
    assert!(!pure.may_defer() && !sarek_jit::compile(&k, &options).unwrap().may_defer());
    // Nor does the corpus saxpy: its launches in place take no copy.
    let path = tests_dir("kernels").join("saxpy.sarek");
    let saxpy = Program::compile("saxpy.sarek", &std::fs::read_to_string(path).unwrap());
    let saxpy = sarek_jit::compile(&saxpy.kernel("saxpy"), &options).unwrap();
    assert!(!saxpy.may_defer());
}

#[test]
fn a_launch_rerun_on_the_interpreter_after_native_stores_starts_from_the_original_buffers() {
    // The native run stores into `a` and then finds a barrier reached by part of the block;
    // the interpreter core reruns the launch and must see `a` as it was before the native
    // run (then reports the divergence, leaving `a` untouched).
    let src = "let%kernel bad (a : int32 vector) (n : int32) =
  let%shared (s : int32) = 64 in
  let t = thread_idx_x in
  a.(t) <- a.(t) + 1;
  if n > 5 then begin
    s.(t) <- 1;
    block_barrier ();
    a.(t) <- s.(0)
  end
";
    let (_program, k) = with_thread_dependent_if(src);
    let native = sarek_jit::compile(&k, &sarek_jit::JitOptions::default()).unwrap();
    assert!(
        native.may_defer(),
        "the barrier's uniformity test can defer"
    );
    let cpu = sarek_runtime::cpu::open().unwrap();
    let dev = cpu.as_ref();
    let a = sarek_runtime::Buffer::from_slice(dev, &[10i32; 64]).unwrap();
    let on_cpu = on_buffers(dev, &k, LaunchConfig::linear(64), &[&a], &[9]);
    let interp_dev = sarek_runtime::interp::open().unwrap();
    let b = sarek_runtime::Buffer::from_slice(interp_dev.as_ref(), &[10i32; 64]).unwrap();
    let on_interp = on_buffers(
        interp_dev.as_ref(),
        &k,
        LaunchConfig::linear(64),
        &[&b],
        &[9],
    );
    assert_eq!(
        on_cpu.as_ref().map_err(|e| e.to_string()),
        on_interp.as_ref().map_err(|e| e.to_string()),
        "the cpu device reports what interp reports"
    );
    assert_eq!(
        a.download(dev).unwrap(),
        b.download(interp_dev.as_ref()).unwrap()
    );
    assert_eq!(a.download(dev).unwrap(), vec![10; 64]);
}

#[test]
fn a_synchronising_helper_returning_from_inside_an_if_runs_natively() {
    // The helper's value is a uniform `if` with a barrier in one branch: lowering returns
    // from inside both branches. Inlined, each `return` sets the result and a `done` flag
    // and what follows runs unless `done`.
    let src = "let pick (s : int32 array) (t : int32) (n : int32) : int32 =
  s.(t) <- t * 2;
  block_barrier ();
  if n > 5 then s.((t + 1) mod 64)
  else begin
    let v = s.((t + 2) mod 64) in
    block_barrier ();
    s.(t) <- v + n;
    block_barrier ();
    s.((t + 3) mod 64)
  end

let%kernel early (a : int32 vector) (n : int32) =
  let%shared (s : int32) = 64 in
  let t = thread_idx_x in
  let r = pick s t n in
  a.(t) <- r + 1
";
    let program = Program::compile("test.sarek", src);
    let k = program.kernel("early");
    let helper_returns_early = k.functions.iter().any(|f| {
        let mut nested = false;
        for s in &f.body {
            sarek_compiler::ir::visit::for_each_stmt(&nested_stmts(s), &mut |x| {
                nested |= matches!(x.kind, sarek_compiler::ir::StmtKind::Return(_));
            });
        }
        nested
    });
    assert!(
        helper_returns_early,
        "the helper returns from inside its `if`"
    );
    assert_eq!(JitCache::default().note(&k), None, "runs natively");
    for n in [9, 2] {
        let (_, interp, native) = run_both(
            Program::compile("test.sarek", src),
            &k,
            LaunchConfig::linear(64),
            vec![ivec(vec![0; 64]), scalar(n)],
        );
        let want: Vec<i32> = (0..64)
            .map(|t| {
                if n > 5 {
                    2 * ((t + 1) % 64) + 1
                } else {
                    2 * ((t + 5) % 64) + n + 1
                }
            })
            .collect();
        assert_eq!(ints(&interp.unwrap()[0]), want, "interp, n = {n}");
        assert_eq!(ints(&native.unwrap()[0]), want, "cpu, n = {n}");
    }
}

/// The blocks nested in `s` (not `s` itself).
fn nested_stmts(s: &sarek_compiler::ir::Stmt) -> Vec<sarek_compiler::ir::Stmt> {
    use sarek_compiler::ir::StmtKind;
    match &s.kind {
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => then_block.iter().chain(else_block).cloned().collect(),
        StmtKind::Block(b) => b.clone(),
        _ => Vec::new(),
    }
}

#[test]
fn a_warp_operation_in_the_right_operand_of_a_short_circuit_runs_natively() {
    // Lowering turns `c && w` with a warp operation in `w` into an `if`; IR built otherwise
    // (here: edited) may keep it as one expression. The code generator runs it as
    // `let mut t = c in if c then t := w` (`||`: the else branch), the warp operation under a
    // block-uniform `if`; a block whose threads disagree on `c` would go to the interpreter
    // core, as around a barrier.
    use sarek_compiler::intrinsics::WarpOp;
    use sarek_compiler::ir::{Expr, ExprKind, StmtKind};
    use sarek_compiler::types::BinOp;
    let src = "let%kernel votes (a : int32 vector) (out : int32 vector) (n : int32) =
  let t = thread_idx_x in
  let v = a.(t) in
  let any = n > 0 && v > 40 in
  let all = n > 3 || v > 10 in
  out.(t) <- (if any then 1 else 0) + (if all then 2 else 0)
";
    let program = Program::compile("test.sarek", src);
    let mut k = program.kernel("votes");
    let mut edited = 0;
    for s in &mut k.body {
        if let StmtKind::Let {
            init:
                Some(Expr {
                    kind:
                        ExprKind::Binary {
                            op: op @ (BinOp::And | BinOp::Or),
                            rhs,
                            ..
                        },
                    ..
                }),
            ..
        } = &mut s.kind
        {
            let vote = if *op == BinOp::And {
                WarpOp::VoteAny
            } else {
                WarpOp::VoteAll
            };
            as_warp_vote(rhs, vote);
            edited += 1;
        }
    }
    assert_eq!(edited, 2, "both short circuits are expressions");
    assert_eq!(JitCache::default().note(&k), None, "runs natively");
    for n in [5, 1, 0] {
        let (_, interp, native) = run_both(
            Program::compile("test.sarek", src),
            &k,
            LaunchConfig::linear(64),
            vec![ivec((0..64).collect()), ivec(vec![0; 64]), scalar(n)],
        );
        // Warp 0 holds 0..31 (none above 40, not all above 10), warp 1 holds 32..63.
        let want: Vec<i32> = (0..64)
            .map(|t| {
                let any = n > 0 && t >= 32;
                let all = n > 3 || t >= 32;
                i32::from(any) + 2 * i32::from(all)
            })
            .collect();
        assert_eq!(ints(&interp.unwrap()[1]), want, "interp, n = {n}");
        assert_eq!(ints(&native.unwrap()[1]), want, "cpu, n = {n}");
    }
}

#[test]
fn a_warp_operation_in_an_arm_of_a_conditional_expression_runs_natively() {
    // As for short circuits: IR built otherwise may keep a warp operation in an arm of a
    // conditional expression. The code generator runs `if c then a else b` as `let mut t in
    // if c then t := a else t := b`, evaluating only the chosen arm, its warp operation under
    // a block-uniform `if`.
    use sarek_compiler::intrinsics::WarpOp;
    use sarek_compiler::ir::{Expr, ExprKind, StmtKind};
    let src = "let%kernel picks (a : int32 vector) (out : int32 vector) (n : int32) =
  let t = thread_idx_x in
  let v = a.(t) in
  let p = if n > 2 then v > 40 else v > 60 in
  let q = if n > 4 then v > 70 else v > 10 in
  out.(t) <- (if p then 1 else 0) + (if q then 2 else 0)
";
    let program = Program::compile("test.sarek", src);
    let mut k = program.kernel("picks");
    let mut edited = 0;
    for s in &mut k.body {
        if let StmtKind::Let {
            init:
                Some(Expr {
                    kind:
                        ExprKind::Select {
                            then_value,
                            else_value,
                            ..
                        },
                    ..
                }),
            ..
        } = &mut s.kind
        {
            // `p`: a vote in the `then` arm; `q`: in the `else` arm.
            let (arm, vote) = if edited == 0 {
                (then_value, WarpOp::VoteAny)
            } else {
                (else_value, WarpOp::VoteAll)
            };
            as_warp_vote(arm, vote);
            edited += 1;
        }
    }
    assert_eq!(edited, 2, "both conditionals are expressions");
    assert_eq!(JitCache::default().note(&k), None, "runs natively");
    for n in [5, 3, 1] {
        let (_, interp, native) = run_both(
            Program::compile("test.sarek", src),
            &k,
            LaunchConfig::linear(64),
            vec![ivec((0..64).collect()), ivec(vec![0; 64]), scalar(n)],
        );
        // Warp 0 holds 0..31 (none above 40, not all above 10), warp 1 holds 32..63.
        let want: Vec<i32> = (0..64)
            .map(|t| {
                let p = if n > 2 { t >= 32 } else { t > 60 };
                let q = if n > 4 { t > 70 } else { t >= 32 };
                i32::from(p) + 2 * i32::from(q)
            })
            .collect();
        assert_eq!(ints(&interp.unwrap()[1]), want, "interp, n = {n}");
        assert_eq!(ints(&native.unwrap()[1]), want, "cpu, n = {n}");
    }
}

#[test]
fn a_kernel_the_code_generator_refuses_runs_on_the_interpreter_core_with_a_note() {
    // The surface language cannot write `break` (the remaining refusals arise from IR built
    // through the Rust API), so one is appended to a loop with barriers: the generator refuses
    // it, `note` says why, `run_native` reports it, and the device runs the launch on the
    // interpreter core with the interpreter's result.
    use sarek_compiler::ir::{Stmt, StmtKind};
    let src = "let%kernel k (a : int32 vector) (n : int32) =
  let%shared (s : int32) = 64 in
  let t = thread_idx_x in
  let mut i = 0 in
  while i < n do
    s.(t) <- t + i * 100;
    block_barrier ();
    a.(t) <- a.(t) + s.((t + 1) mod 64);
    block_barrier ();
    i := i + 1
  done
";
    let program = Program::compile("test.sarek", src);
    let mut k = program.kernel("k");
    let body = k
        .body
        .iter_mut()
        .find_map(|s| match &mut s.kind {
            StmtKind::While { body, .. } => Some(body),
            _ => None,
        })
        .expect("the kernel has a while loop");
    let span = body[0].span;
    body.push(Stmt {
        kind: StmtKind::Break,
        span,
    });
    let cache = JitCache::default();
    let why = cache
        .note(&k)
        .expect("a break in a loop with barriers is refused");
    assert!(why.contains("`break`"), "{why}");
    let a: Vec<i32> = (0..64).map(|t| t * 3).collect();
    let args = vec![ivec(a.clone()), scalar(5)];
    let mut native = args.clone();
    let Err(RuntimeError::Launch(e)) = cache.run_native(&k, LaunchConfig::linear(64), &mut native)
    else {
        panic!("run_native refuses the kernel");
    };
    assert!(e.contains("`break`"), "{e}");
    // One iteration (the break ends the loop after it): a(t) + s((t + 1) mod 64), s(u) = u.
    let want: Vec<i32> = (0..64).map(|t| a[t] + ((t as i32 + 1) % 64)).collect();
    let mut expected = args.clone();
    interp::run(&k, LaunchConfig::linear(64), &mut expected).unwrap();
    assert_eq!(ints(&expected[0]), want, "interp");
    let mut got = args.clone();
    cache.run(&k, LaunchConfig::linear(64), &mut got).unwrap();
    assert_eq!(ints(&got[0]), want, "JitCache::run on the interpreter core");
    let mut on_device = args;
    sarek_runtime::cpu::open()
        .unwrap()
        .launch(&k, LaunchConfig::linear(64), &mut on_device)
        .unwrap();
    assert_eq!(ints(&on_device[0]), want, "the default cpu device");
}

/// Replace the boolean `e` by the warp vote `vote` of it (IR surgery: the surface language
/// puts no warp operation where these tests need one).
fn as_warp_vote(e: &mut sarek_compiler::ir::Expr, vote: sarek_compiler::intrinsics::WarpOp) {
    use sarek_compiler::intrinsics::Intrinsic;
    use sarek_compiler::ir::{Expr, ExprKind, Ty};
    let operand = std::mem::replace(e, Expr::i32(0));
    *e = Expr::new(
        ExprKind::Intrinsic {
            op: Intrinsic::Warp(vote),
            args: vec![operand],
        },
        Ty::BOOL,
    );
}

/// Kernel `bad` of `src` with its first `if` condition replaced by `thread_idx_x < 5`: a
/// barrier under a thread-dependent branch, which the front end would refuse, built in the
/// IR (what a buggy front end or a Rust-built kernel could hand the runtime).
fn with_thread_dependent_if(src: &str) -> (Program, Kernel) {
    use sarek_compiler::intrinsics::{Axis, Geometry, Intrinsic};
    use sarek_compiler::ir::{Expr, ExprKind, StmtKind, Ty};
    use sarek_compiler::types::BinOp;
    let program = Program::compile("test.sarek", src);
    let mut k = program.kernel("bad");
    let cond = k
        .body
        .iter_mut()
        .find_map(|s| match &mut s.kind {
            StmtKind::If { cond, .. } => Some(cond),
            _ => None,
        })
        .expect("the kernel has an if");
    let tid = Expr::new(
        ExprKind::Intrinsic {
            op: Intrinsic::Geometry(Geometry::ThreadIdx(Axis::X)),
            args: vec![],
        },
        Ty::I32,
    );
    *cond = Expr::new(
        ExprKind::Binary {
            op: BinOp::Lt,
            lhs: Box::new(tid),
            rhs: Box::new(Expr::i32(5)),
            nowrap: false,
        },
        Ty::BOOL,
    );
    (program, k)
}
