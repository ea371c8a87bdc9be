//! `for` loops at the edges of int32 on every backend available here: the corpus kernels of
//! `tests/kernels/loop_bounds.sarek` (bounds max_int and min_int, empty ranges, bounds with
//! side effects or changed by the body, loops in helpers) and the hand-built IR kernel
//! `loops` (`continue` and `break` in both directions, which the surface language lacks).
//! Expectations are computed here, independently of the compiler: closed forms, and a model
//! that walks each inclusive range in i64 where a count depends on the data.
//!
//! A backend that is unavailable is skipped with the reason printed, unless
//! `SAREK_REQUIRE_BACKENDS` names it.

use sarek_testkit::ir_kernels;

use sarek::Backend;
use sarek_compiler::types::Literal;
use sarek_harness as harness;
use sarek_runtime::{ArgValue, Column, Device, HostVector, LaunchConfig};
use std::sync::Arc;

const LO: i32 = i32::MIN;
const HI: i32 = i32::MAX;

/// Every backend that opens here.
fn devices() -> Vec<(Backend, Arc<dyn Device>)> {
    let mut out = Vec::new();
    for b in Backend::ALL {
        match sarek::open(b) {
            Ok(d) => out.push((b, d)),
            Err(e) => sarek_testkit::backends::unavailable(b.name(), &e.to_string()),
        }
    }
    out
}

fn i32s(arg: &ArgValue) -> Vec<i32> {
    match arg {
        ArgValue::Vector(v) => match &v.columns[0] {
            Column::I32(x) => x.clone(),
            c => panic!("not an int32 vector: {c:?}"),
        },
        a => panic!("not a vector: {a:?}"),
    }
}

fn vector(values: Vec<i32>) -> ArgValue {
    ArgValue::Vector(HostVector {
        len: values.len(),
        columns: vec![Column::I32(values)],
    })
}

/// The indices of `for k = a to b` (`downto` when `down`), walked lazily in i64 so that no
/// step can wrap: the language's meaning, written without the generators' loop shape.
fn range(a: i32, b: i32, down: bool) -> Box<dyn Iterator<Item = i32>> {
    let (a, b) = (i64::from(a), i64::from(b));
    let ks: Box<dyn Iterator<Item = i64>> = if down {
        Box::new((b..=a).rev())
    } else {
        Box::new(a..=b)
    };
    Box::new(ks.map(|k| i32::try_from(k).expect("an int32 index")))
}

/// Per-thread expectations of one corpus kernel: `(parameter index, values)`.
type Expect = Vec<(usize, Vec<i32>)>;

fn expect_extremes(a: &[i32], lo: i32, hi: i32) -> Expect {
    let (mut count, mut seen) = (Vec::new(), Vec::new());
    for &ai in a {
        let d = ai % 5;
        let (mut c, mut x) = (0i32, 0i32);
        for k in range(hi.wrapping_sub(d), hi, false) {
            c += 1;
            x ^= k;
        }
        for k in range(lo.wrapping_add(d), lo, true) {
            c += 8;
            x ^= ((k as u32) >> 3) as i32;
        }
        c += 64 * range(hi.wrapping_sub(d), hi, false).count() as i32;
        c += 512 * 3 + 4096 * 3;
        for k in [
            2147483645,
            2147483646,
            2147483647,
            -2147483646,
            -2147483647,
            -2147483648,
        ] {
            x = x.wrapping_add(k & 7);
        }
        c += 32768 + 262144;
        x ^= hi ^ lo;
        // Every range here is short: the closed form must agree with the walk.
        assert_eq!(c, 73 * (d + 1) + 1536 + 12288 + 32768 + 262144);
        count.push(c);
        seen.push(x);
    }
    vec![(1, count), (2, seen)]
}

fn expect_empty_ranges(a: &[i32]) -> Expect {
    // Only the two one-iteration loops run, whatever the data.
    vec![(1, vec![4096 + 8192; a.len()])]
}

fn expect_bounds_once(a: &[i32]) -> Expect {
    let (mut ticks, mut marks, mut out) = (Vec::new(), Vec::new(), Vec::new());
    for &ai in a {
        let d = ai % 6;
        // The atomic runs twice (start then end): ticks 10d -> 10d + 2, and five iterations.
        ticks.push(10 * d + 2);
        // `bump` twice (d + 1, then d + 2 with end d + 4): four iterations of +100.
        marks.push(d + 2 + 400);
        // 0 to d: d + 1 iterations (m ends at 2d + 1); d downto -d: 2d + 1 iterations
        // (s ends at 3d + 1) of which the odd indices count.
        let odd = range(d, -d, true).filter(|k| k & 1 == 1).count() as i32;
        let c = 5 + 16 * 4 + 256 * (d + 1) + 4096 * odd;
        out.push(c + 1048576 * (2 * d + 1) + 16777216 * (3 * d + 1));
    }
    vec![(1, ticks), (2, marks), (3, out)]
}

fn expect_helper_loops(a: &[i32], lo: i32, hi: i32) -> Expect {
    let out = a
        .iter()
        .map(|&ai| {
            let d = ai % 4;
            let mut c = 9 * (d + 1);
            for j in range(hi - 1, hi, false) {
                for k in range(lo + d, lo, true) {
                    c += 256 + (j & 1) + (k & 1);
                }
            }
            c
        })
        .collect();
    vec![(1, out)]
}

fn scalar(d: &harness::Directive, name: &str) -> i32 {
    let (_, v) = d
        .args
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("directive of {} lacks {name}", d.kernel));
    v.parse().unwrap()
}

#[test]
fn corpus_loop_bounds_on_every_backend() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/kernels/loop_bounds.sarek");
    let text = std::fs::read_to_string(&path).expect("tests/kernels/loop_bounds.sarek");
    let program = sarek::Program::compile("loop_bounds.sarek", &text).unwrap();
    let directives = harness::parse_directives(&text).unwrap();
    assert_eq!(directives.len(), 5);
    let devices = devices();
    for d in &directives {
        let kernel = program.kernel(&d.kernel).unwrap();
        let inputs = harness::build_args(kernel.ir(), &harness::Inputs::from_directive(d)).unwrap();
        let a = i32s(&inputs[0]);
        let expect = match d.kernel.as_str() {
            "extremes" => expect_extremes(&a, scalar(d, "lo"), scalar(d, "hi")),
            "empty_ranges" => expect_empty_ranges(&a),
            "bounds_once" => expect_bounds_once(&a),
            "helper_loops" => expect_helper_loops(&a, scalar(d, "lo"), scalar(d, "hi")),
            k => panic!("no expectation for {k}"),
        };
        for (backend, dev) in &devices {
            let mut args = inputs.clone();
            dev.launch(kernel.ir(), d.config(), &mut args)
                .unwrap_or_else(|e| panic!("{} on {}: {e}", d.kernel, backend.name()));
            for (p, want) in &expect {
                let got = i32s(&args[*p]);
                for (t, (g, w)) in got.iter().zip(want).enumerate() {
                    assert_eq!(
                        g,
                        w,
                        "{} (line {}) on {}: parameter {p}, thread {t}",
                        d.kernel,
                        d.line,
                        backend.name()
                    );
                }
            }
            eprintln!("{} (line {}): {} ok", d.kernel, d.line, backend.name());
        }
    }
}

/// What the hand-built `loops` kernel leaves in `a`, `b`, `c` (see its documentation),
/// modelled with the same i64 range walk.
fn expect_loops(n: usize, lo: i32, hi: i32) -> [Vec<i32>; 3] {
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n as i32 {
        let m = i % 5;
        let up: Vec<i32> = range(hi.wrapping_sub(m), hi, false).collect();
        a.push(100 * up.len() as i32 + up.iter().filter(|k| *k & 1 == 1).count() as i32);
        let down: Vec<i32> = range(lo.wrapping_add(m), lo, true).collect();
        b.push(100 * down.len() as i32 + down.iter().filter(|k| *k & 1 == 0).count() as i32);
        let mut s = 0;
        for k in range(0, hi, false) {
            if k == i % 7 {
                break;
            }
            if k & 1 == 1 {
                continue;
            }
            s += k;
        }
        // Three outer iterations of the inner `while` (two counted each), two counted after.
        c.push(s + 3 * 20000 + 2 * 100000);
    }
    [a, b, c]
}

#[test]
fn continue_and_break_in_for_loops_on_every_backend() {
    let kernel = ir_kernels::loops();
    let n = 100;
    for (backend, dev) in devices() {
        for (lo, hi) in [(LO, HI), (-3, 4)] {
            let mut args = vec![
                vector(vec![-1; n]),
                vector(vec![-1; n]),
                vector(vec![-1; n]),
                ArgValue::Scalar(Literal::I32(lo)),
                ArgValue::Scalar(Literal::I32(hi)),
            ];
            dev.launch(&kernel, LaunchConfig::linear(n as u32), &mut args)
                .unwrap_or_else(|e| panic!("loops on {}: {e}", backend.name()));
            let want = expect_loops(n, lo, hi);
            for (p, w) in want.iter().enumerate() {
                assert_eq!(
                    &i32s(&args[p]),
                    w,
                    "loops on {} (lo {lo}, hi {hi}): parameter {p}",
                    backend.name()
                );
            }
        }
        eprintln!("loops: {} ok", backend.name());
    }
}
