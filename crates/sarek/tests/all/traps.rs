//! Bounded inlining (`[@sarek.inline N]`) on every backend: a run that stays within N levels
//! computes what the recursive definition computes; a run that needs more fails with an
//! error located at the residual recursive call, never with a made-up value.
//!
//! Backends without their runtime skip with a printed reason, unless `SAREK_REQUIRE_BACKENDS`
//! names them.

use sarek::Program;
use sarek_harness::{self as harness, Inputs};
use sarek_runtime::{Backend, RuntimeError, discover};

const SOURCE: &str = include_str!("../../../../tests/traps/inline_depth.sarek");

/// Line and column (1-based) of the residual calls in each kernel's helper: either may be
/// reported when threads reach both (devices report the highest trap code).
const CHAIN_CALLS: &[(usize, usize)] = &[(7, 29)];
const TREE_CALLS: &[(usize, usize)] = &[(10, 24), (10, 38)];

fn fib(n: i32) -> i32 {
    if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
}

const BACKENDS: [Backend; 7] = [
    Backend::Interp,
    Backend::Cpu,
    Backend::Wgpu,
    Backend::Vulkan,
    Backend::OpenCl,
    Backend::Cuda,
    Backend::Ptx,
];

struct Run {
    a: Vec<i32>,
    out: Result<Vec<i32>, RuntimeError>,
}

fn run(program: &Program, backend: Backend, kernel: &str, m: i32) -> Option<Run> {
    let device = match discover::open(backend) {
        Ok(d) => d,
        Err(e) => {
            assert!(
                !sarek_testkit::backends::required(backend.name()),
                "{backend} is required but unavailable: {e}"
            );
            eprintln!("skipping {backend}: {e}");
            return None;
        }
    };
    let kernel = program.kernel(kernel).expect("kernel lowers").ir().clone();
    let mut inputs = Inputs::new(256, 7);
    inputs.args.push(("m".into(), m.to_string()));
    inputs.args.push(("n".into(), "256".into()));
    let mut args = harness::build_args(&kernel, &inputs).expect("arguments");
    let config = harness::launch_config(256, None, None);
    let out = harness::run(device.as_ref(), &kernel, config, &mut args);
    let column = |i: usize| match &args[i] {
        sarek_runtime::ArgValue::Vector(v) => (0..v.len)
            .map(|k| match v.columns[0].get(k) {
                sarek_compiler::types::Literal::I32(x) => x,
                other => panic!("int32 expected, found {other:?}"),
            })
            .collect::<Vec<i32>>(),
        _ => panic!("vector expected"),
    };
    let a = column(0);
    Some(Run {
        a,
        out: out.map(|_| column(1)),
    })
}

fn line_col(program: &Program, span: sarek_compiler::Span) -> (usize, usize) {
    program.sources().line_col(span.file, span.start)
}

#[test]
fn within_the_declared_depth_every_backend_computes_the_recursive_definition() {
    let program = Program::compile("traps.sarek", SOURCE).expect("compiles");
    for backend in BACKENDS {
        // depth n = n for n <= 4 (4 inlined levels); fib needs n - 1 levels for n <= 6.
        for (kernel, m, reference) in [
            ("chain", 5, (|n| n) as fn(i32) -> i32),
            ("tree", 7, fib as fn(i32) -> i32),
        ] {
            let Some(r) = run(&program, backend, kernel, m) else {
                continue;
            };
            let out = r.out.unwrap_or_else(|e| panic!("{backend} {kernel}: {e}"));
            for (i, (&a, &o)) in r.a.iter().zip(&out).enumerate() {
                assert_eq!(
                    o,
                    reference(a % m),
                    "{backend} {kernel}: element {i}, a = {a}"
                );
            }
        }
    }
}

#[test]
fn past_the_declared_depth_every_backend_reports_the_residual_call() {
    let program = Program::compile("traps.sarek", SOURCE).expect("compiles");
    for backend in BACKENDS {
        for (kernel, m, helper, depth, calls) in [
            ("chain", 8, "depth", 4, CHAIN_CALLS),
            ("tree", 9, "fib", 5, TREE_CALLS),
        ] {
            let Some(r) = run(&program, backend, kernel, m) else {
                continue;
            };
            assert!(
                r.a.iter().any(|a| a % m > depth + 1),
                "the seeded inputs must exceed the depth"
            );
            match r.out {
                Err(RuntimeError::Fault { span, message }) => {
                    let at = line_col(&program, span);
                    assert!(
                        calls.contains(&at),
                        "{backend} {kernel}: {message} at {at:?}"
                    );
                    let expected = format!(
                        "`{helper}` recursed deeper than the {depth} levels its `[@sarek.inline {depth}]` mark allows"
                    );
                    assert!(
                        message.starts_with(&expected) && message.contains(kernel),
                        "{backend} {kernel}: {message}"
                    );
                }
                Err(other) => panic!("{backend} {kernel}: expected a trap, got {other}"),
                Ok(_) => panic!("{backend} {kernel}: ran past its inline depth without an error"),
            }
        }
    }
}
