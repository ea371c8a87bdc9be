//! Recursion elimination keeps what the recursive definitions compute: kernels built from
//! source run on the reference interpreter and are compared with the same functions written
//! recursively in Rust.

use sarek_compiler::diag::{SourceMap, render_all};
use sarek_compiler::types::Literal;
use sarek_runtime::device::LaunchConfig;
use sarek_runtime::value::{ArgValue, Column, HostVector};

const SOURCE: &str = r#"
let rec gcd (a : int32) (b : int32) : int32 = if b = 0 then a else gcd b (a mod b)

let rec pow_acc (b : int32) (e : int32) (acc : int32) : int32 =
  if e = 0 then acc else pow_acc b (e - 1) (acc * b)

(* Unit result, a vector parameter, the tail call in a sequence. *)
let rec fill (v : int32 vector) (i : int32) (stop : int32) : unit =
  if i < stop then begin v.(i) <- v.(i) + i; fill v (i + 1) stop end

(* Tail calls inside a match, arguments that read each other. *)
let rec collatz (n : int32) (steps : int32) : int32 =
  match n with
  | 1 -> steps
  | _ -> if n mod 2 = 0 then collatz (n / 2) (steps + 1) else collatz (3 * n + 1) (steps + 1)

let rec fib (n : int32) : int32 [@sarek.inline 10] =
  if n < 2 then n else fib (n - 1) + fib (n - 2)

let rec depth (n : int32) : int32 =
  pragma ["sarek.inline 12"] (if n <= 0 then 0 else 1 + 2 * depth (n - 1))

let%kernel rec_kernel (a : int32 vector) (b : int32 vector) (g : int32 vector) (p : int32 vector)
    (c : int32 vector) (f : int32 vector) (d : int32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then begin
    g.(i) <- gcd a.(i) b.(i);
    p.(i) <- pow_acc (a.(i) mod 5) (b.(i) mod 7) 1;
    c.(i) <- collatz (a.(i) mod 50 + 1) 0;
    f.(i) <- fib (i mod 12);
    d.(i) <- depth (i mod 13)
  end

(* fib 12 needs 11 levels, one more than declared. *)
let%kernel fib_too_deep (f : int32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then f.(i) <- fib (i mod 13)

(* depth 13 needs 13 levels, one more than the pragma declares. *)
let%kernel depth_too_deep (d : int32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then d.(i) <- depth (i mod 14)

let%kernel fill_kernel (v : int32 vector) (n : int32) =
  if global_thread_id = 0 then fill v 0 n
"#;

fn gcd(a: i32, b: i32) -> i32 {
    if b == 0 { a } else { gcd(b, a % b) }
}
fn pow_acc(b: i32, e: i32, acc: i32) -> i32 {
    if e == 0 {
        acc
    } else {
        pow_acc(b, e - 1, acc.wrapping_mul(b))
    }
}
fn collatz(n: i32, steps: i32) -> i32 {
    if n == 1 {
        steps
    } else if n % 2 == 0 {
        collatz(n / 2, steps + 1)
    } else {
        collatz(3 * n + 1, steps + 1)
    }
}
fn fib(n: i32) -> i32 {
    if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
}
fn depth(n: i32) -> i32 {
    if n <= 0 { 0 } else { 1 + 2 * depth(n - 1) }
}

fn ints(v: Vec<i32>) -> ArgValue {
    ArgValue::Vector(HostVector {
        len: v.len(),
        columns: vec![Column::I32(v)],
    })
}
fn out(arg: &ArgValue) -> Vec<i32> {
    match arg {
        ArgValue::Vector(h) => match &h.columns[0] {
            Column::I32(v) => v.clone(),
            c => panic!("not int32: {c:?}"),
        },
        a => panic!("not a vector: {a:?}"),
    }
}

fn lower(name: &str) -> sarek_compiler::ir::Kernel {
    let mut sources = SourceMap::new();
    let file = sources.add("recursion_interp.sarek", SOURCE);
    let program = sarek_compiler::check(&sources, file)
        .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
    assert!(program.functions.iter().all(|f| !f.recursive));
    let k = sarek_compiler::lower_kernel(&program, name)
        .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
    sarek_compiler::ir::validate::validate(&k).expect("valid IR");
    k
}

#[test]
fn eliminated_recursion_computes_the_recursive_definitions() {
    let k = lower("rec_kernel");
    let n = 300usize;
    let a: Vec<i32> = (0..n as i32).map(|i| (i * 37 + 11) % 1000).collect();
    let b: Vec<i32> = (0..n as i32).map(|i| (i * 91 + 5) % 1000).collect();
    let mut args = vec![
        ints(a.clone()),
        ints(b.clone()),
        ints(vec![0; n]),
        ints(vec![0; n]),
        ints(vec![0; n]),
        ints(vec![0; n]),
        ints(vec![0; n]),
        ArgValue::Scalar(Literal::I32(n as i32)),
    ];
    sarek_runtime::interp::run(&k, LaunchConfig::linear(n as u32), &mut args).expect("runs");
    let (g, p, c, f, d) = (
        out(&args[2]),
        out(&args[3]),
        out(&args[4]),
        out(&args[5]),
        out(&args[6]),
    );
    for i in 0..n {
        assert_eq!(g[i], gcd(a[i], b[i]), "gcd at {i}");
        assert_eq!(p[i], pow_acc(a[i] % 5, b[i] % 7, 1), "pow at {i}");
        assert_eq!(c[i], collatz(a[i] % 50 + 1, 0), "collatz at {i}");
        // Within the declared depths: fib 11 needs 10 levels, depth 12 needs 12.
        assert_eq!(f[i], fib((i % 12) as i32), "fib at {i}");
        assert_eq!(d[i], depth((i % 13) as i32), "depth at {i}");
    }
}

#[test]
fn recursion_past_the_declared_depth_stops_at_the_residual_call() {
    let k = lower("fib_too_deep");
    let n = 64usize;
    let mut args = vec![ints(vec![0; n]), ArgValue::Scalar(Literal::I32(n as i32))];
    let err = sarek_runtime::interp::run(&k, LaunchConfig::linear(n as u32), &mut args)
        .expect_err("fib 12 needs 11 levels, 10 are declared");
    let sarek_runtime::device::RuntimeError::Fault { span, message } = err else {
        panic!("expected a fault, got {err}");
    };
    assert!(
        message.starts_with(
            "`fib` recursed deeper than the 10 levels its `[@sarek.inline 10]` mark allows"
        ),
        "{message}"
    );
    // Thread 12 is the first to need the 11th level; the span is a recursive call of `fib`.
    assert!(message.contains("thread (12,0,0)"), "{message}");
    let call = &SOURCE[span.start as usize..span.end as usize];
    assert!(call.starts_with("fib (n - "), "{call}");
}

#[test]
fn the_depth_fault_quotes_a_pragma_mark_as_a_pragma() {
    let k = lower("depth_too_deep");
    let n = 64usize;
    let mut args = vec![ints(vec![0; n]), ArgValue::Scalar(Literal::I32(n as i32))];
    let err = sarek_runtime::interp::run(&k, LaunchConfig::linear(n as u32), &mut args)
        .expect_err("depth 13 needs 13 levels, 12 are declared");
    let sarek_runtime::device::RuntimeError::Fault { span, message } = err else {
        panic!("expected a fault, got {err}");
    };
    assert!(
        message.starts_with(
            "`depth` recursed deeper than the 12 levels its `pragma [\"sarek.inline 12\"]` mark allows"
        ),
        "{message}"
    );
    assert!(message.contains("thread (13,0,0)"), "{message}");
    let call = &SOURCE[span.start as usize..span.end as usize];
    assert!(call.starts_with("depth (n - 1)"), "{call}");
}

#[test]
fn unit_tail_recursion_over_a_vector() {
    let k = lower("fill_kernel");
    let n = 64usize;
    let mut args = vec![ints(vec![100; n]), ArgValue::Scalar(Literal::I32(n as i32))];
    sarek_runtime::interp::run(&k, LaunchConfig::linear(n as u32), &mut args).expect("runs");
    let v = out(&args[0]);
    for (i, x) in v.iter().enumerate() {
        assert_eq!(*x, 100 + i as i32);
    }
}

/// `h0 .. h{count}` where each helper calls the previous one twice (`doubling`) or once.
fn helper_chain(count: usize, doubling: bool) -> String {
    let mut src = String::from("let h0 (x : int32) : int32 = x + 1\n");
    for i in 1..=count {
        let prev = i - 1;
        if doubling {
            src += &format!("let h{i} (x : int32) : int32 = h{prev} x + h{prev} (x + 1)\n");
        } else {
            src += &format!("let h{i} (x : int32) : int32 = h{prev} x + 1\n");
        }
    }
    src += &format!(
        "let%kernel chain (a : int32 vector) (n : int32) =\n  let i = global_thread_id in\n  if i < n then a.(i) <- h{count} a.(i)\n"
    );
    src
}

/// Check, lower and generate every target on a fresh 2 MB thread (the default size of a
/// spawned thread): how deep the compiler's recursion goes must not depend on the caller.
fn compile_chain(
    src: String,
    helpers: usize,
    targets: &'static [sarek_compiler::Target],
) -> sarek_compiler::ir::Kernel {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let mut sources = SourceMap::new();
            let file = sources.add("chain.sarek", &src);
            let program = sarek_compiler::check(&sources, file)
                .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
            assert_eq!(program.functions.len(), helpers);
            let k = sarek_compiler::lower_kernel(&program, "chain")
                .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
            assert_eq!(k.functions.len(), helpers);
            for &target in targets {
                let options = sarek_compiler::TargetOptions::default();
                let generated = sarek_compiler::generate(&k, target, &options)
                    .unwrap_or_else(|d| panic!("{target}: {}", render_all(&d, &sources, false)));
                // The last helper of the chain is in every output (PTX inlines helpers).
                let last = format!("h{}", helpers - 1);
                let ptx = target == sarek_compiler::Target::Ptx;
                assert!(ptx || generated.source.contains(&last), "{target}");
                assert!(generated.source.contains("chain"), "{target}");
            }
            k
        })
        .expect("spawn")
        .join()
        .expect("no panic, no stack overflow")
}

/// 24 helpers that each call the previous one twice: 2^24 paths through the call graph, one
/// function each in the output. (The front end once analysed each path.) PTX writes the
/// helpers whose inlined copies would add up as `.func`s, so its module grows linearly too;
/// helpers taking a vector are inlined at every call, and a doubling chain of those is refused,
/// located, rather than written 2^24 times.
#[test]
fn doubling_helper_chain_compiles() {
    use sarek_compiler::Target::*;
    let k = compile_chain(helper_chain(24, true), 25, &sarek_compiler::Target::ALL);
    let ptx = sarek_compiler::generate(&k, Ptx, &Default::default()).expect("PTX");
    let funcs = ptx.source.matches("\n.func ").count();
    assert!(
        (15..25).contains(&funcs) && ptx.source.len() < 100_000,
        "{funcs} .func, {} bytes",
        ptx.source.len()
    );
    let mut with_vector = String::from("let h0 (v : int32 vector) (x : int32) : int32 = v.(x)\n");
    for i in 1..=24 {
        let prev = i - 1;
        with_vector += &format!(
            "let h{i} (v : int32 vector) (x : int32) : int32 = h{prev} v x + h{prev} v (x + 1)\n"
        );
    }
    with_vector += "let%kernel chain (a : int32 vector) (n : int32) =\n  let i = global_thread_id in\n  if i < n then a.(i) <- h24 a 0\n";
    let k = compile_chain(with_vector, 25, &[Ir]);
    let refused = sarek_compiler::generate(&k, Ptx, &Default::default())
        .expect_err("2^24 inlined calls are refused by PTX");
    assert!(
        refused[0].message.starts_with("kernel `chain` inlines to ")
            && refused[0].message.ends_with("PTX allows at most 500000"),
        "{}",
        refused[0].message
    );
    // A shorter chain runs: h_n x = sum over k of C(n, k) (x + k + 1) = 2^n (x + 1) + n 2^(n-1).
    let k = compile_chain(helper_chain(10, true), 11, &sarek_compiler::Target::ALL);
    let n = 32usize;
    let mut args = vec![
        ints((0..n as i32).collect()),
        ArgValue::Scalar(Literal::I32(n as i32)),
    ];
    sarek_runtime::interp::run(&k, LaunchConfig::linear(n as u32), &mut args).expect("runs");
    for (x, got) in out(&args[0]).into_iter().enumerate() {
        assert_eq!(got, 1024 * (x as i32 + 1) + 10 * 512, "h10 {x}");
    }
}

/// 3,000 helpers, each calling the previous one: h_3000 x = x + 3001.
#[test]
fn long_helper_chain_compiles() {
    let k = compile_chain(
        helper_chain(3000, false),
        3001,
        &sarek_compiler::Target::ALL,
    );
    let n = 8usize;
    let mut args = vec![
        ints((0..n as i32).collect()),
        ArgValue::Scalar(Literal::I32(n as i32)),
    ];
    sarek_runtime::interp::run(&k, LaunchConfig::linear(n as u32), &mut args).expect("runs");
    assert_eq!(out(&args[0]), (3001..3001 + n as i32).collect::<Vec<_>>());
}

/// Bounded recursion is one helper per depth, each called from the one above: `fib` at 30
/// levels (2^30 call paths, refused as too large when every call site was expanded) is 31
/// helpers, on PTX too (as `.func`s), and computes the recursive definition.
#[test]
fn bounded_recursion_is_one_copy_per_depth() {
    let src = "let rec fib (n : int32) : int32 [@sarek.inline 30] =\n  if n < 2 then n else fib (n - 1) + fib (n - 2)\n\
               let%kernel fibs (a : int32 vector) (n : int32) =\n  let i = global_thread_id in\n  if i < n then a.(i) <- fib a.(i)\n";
    let mut sources = SourceMap::new();
    let file = sources.add("fib.sarek", src);
    let program = sarek_compiler::check(&sources, file)
        .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
    let names: Vec<&str> = program.functions.iter().map(|f| f.name.as_str()).collect();
    let mut expected: Vec<String> = (1..=30).rev().map(|d| format!("fib__depth{d}")).collect();
    expected.push("fib".into());
    assert_eq!(names, expected);
    let k = sarek_compiler::lower_kernel(&program, "fibs")
        .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
    for target in sarek_compiler::Target::ALL {
        let generated = sarek_compiler::generate(&k, target, &Default::default())
            .unwrap_or_else(|d| panic!("{target}: {}", render_all(&d, &sources, false)));
        if target == sarek_compiler::Target::Ptx {
            // The upper levels are `.func`s, each written once, not 2^30 inlined copies.
            assert!(
                generated.source.contains("\n.func "),
                "{}",
                generated.source
            );
            assert!(
                generated.source.len() < 100_000,
                "{}",
                generated.source.len()
            );
        }
    }
    let n = 21usize;
    let mut args = vec![
        ints((0..n as i32).collect()),
        ArgValue::Scalar(Literal::I32(n as i32)),
    ];
    sarek_runtime::interp::run(&k, LaunchConfig::linear(n as u32), &mut args).expect("runs");
    let expected: Vec<i32> = (0..n as i32).map(fib).collect();
    assert_eq!(out(&args[0]), expected);
}
