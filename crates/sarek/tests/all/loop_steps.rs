//! Counted `while` loops whose step may overflow (`tests/kernels/loop_steps.sarek`), on every
//! backend available here. The C family prints a step as plain signed arithmetic only where
//! `passes::loop_step` proved it cannot overflow, or in the fast copy of a versioned loop;
//! the runs with bounds near max_int take the wrapping copies and must still wrap.
//! Expectations come from a model written here in Rust's explicit wrapping arithmetic,
//! independent of the compiler; `interp` is held to it like every other backend.
//!
//! A backend that is unavailable is skipped with the reason printed, unless
//! `SAREK_REQUIRE_BACKENDS` names it; a refusal (int64 on WGSL) is printed and skipped.

use sarek::{ArgValue, Column, Device, HostVector};
use sarek::{Backend, RuntimeError};
use sarek_harness as harness;
use std::sync::Arc;

fn required(b: Backend) -> bool {
    std::env::var("SAREK_REQUIRE_BACKENDS").is_ok_and(|v| {
        v.split(',')
            .any(|x| x.trim() == b.name() || x.trim() == "all")
    })
}

fn devices() -> Vec<(Backend, Arc<dyn Device>)> {
    let mut out = Vec::new();
    for b in Backend::ALL {
        match sarek::open(b) {
            Ok(d) => out.push((b, d)),
            Err(e) => {
                assert!(
                    !required(b),
                    "{} is required (SAREK_REQUIRE_BACKENDS) but unavailable: {e}",
                    b.name()
                );
                eprintln!("skipping {}: {e}", b.name());
            }
        }
    }
    out
}

fn column(arg: &ArgValue) -> &Column {
    match arg {
        ArgValue::Vector(HostVector { columns, .. }) => &columns[0],
        a => panic!("not a vector: {a:?}"),
    }
}

fn i32s(arg: &ArgValue) -> Vec<i32> {
    match column(arg) {
        Column::I32(x) => x.clone(),
        c => panic!("not an int32 vector: {c:?}"),
    }
}

fn i64s(arg: &ArgValue) -> Vec<i64> {
    match column(arg) {
        Column::I64(x) => x.clone(),
        c => panic!("not an int64 vector: {c:?}"),
    }
}

fn scalar(d: &harness::Directive, name: &str) -> i64 {
    let (_, v) = d
        .args
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("directive of {} lacks {name}", d.kernel));
    v.parse().unwrap()
}

/// Expected vector parameters after a launch: (parameter index, values).
enum Expect {
    I32(Vec<(usize, Vec<i32>)>),
    I64(Vec<(usize, Vec<i64>)>),
}

fn grid_stride(a: &[i32], n: i32, s: i32, cap: i32) -> Expect {
    let (mut count, mut seen) = (Vec::new(), Vec::new());
    for (t, &at) in a.iter().enumerate() {
        let mut i = n
            .wrapping_sub(1)
            .wrapping_sub(at & 15)
            .wrapping_sub(t as i32);
        let (mut c, mut x) = (0i32, 0i32);
        while i < n && c < cap {
            c += 1;
            x ^= i;
            i = i.wrapping_add(s);
        }
        count.push(c);
        seen.push(x.wrapping_add(i));
    }
    Expect::I32(vec![(1, count), (2, seen)])
}

fn literal_bounds(a: &[i32]) -> Expect {
    let (mut count, mut seen) = (Vec::new(), Vec::new());
    for &at in a {
        let mut j = 2147470000 + (at & 1023);
        let (mut c, mut x) = (0i32, 0i32);
        while j < 2147480000 {
            c += 1;
            x ^= j;
            j += 1000; // never overflows: j < 2147480000 before the step
        }
        let mut k = 2147483600 + (at & 31);
        let mut d = 0;
        while k <= 2147483644 && d < 40 {
            d += 1;
            x = x.wrapping_add(((k as u32) >> 7) as i32);
            k = k.wrapping_add(7);
        }
        count.push(c + 100 * d);
        seen.push(x ^ j ^ k);
    }
    Expect::I32(vec![(1, count), (2, seen)])
}

fn helper_steps(a: &[i32], n: i32, s: i32, cap: i32) -> Expect {
    let walk = |start: i32| {
        let mut i = start;
        let (mut c, mut x) = (0i32, 0i32);
        while c < cap && n >= i {
            c += 1;
            if c & 1 == 0 {
                x = x.wrapping_add(i);
            } else {
                i = i.wrapping_add(s);
            }
        }
        x.wrapping_add(c).wrapping_add(i)
    };
    let out = a
        .iter()
        .map(|&at| walk(n.wrapping_sub(at & 63).wrapping_sub(s.wrapping_mul(2))))
        .collect();
    Expect::I32(vec![(1, out)])
}

fn steps64(a: &[i64], n: i64, s: i64, cap: i32) -> Expect {
    let out = a
        .iter()
        .map(|&at| {
            let mut i = n.wrapping_sub(1).wrapping_sub(at & 255);
            let (mut c, mut x) = (0i32, 0i64);
            while i < n && c < cap {
                c += 1;
                x ^= i;
                i = i.wrapping_add(s);
            }
            x.wrapping_add(i).wrapping_add(i64::from(c))
        })
        .collect();
    Expect::I64(vec![(1, out)])
}

/// Whether the loops of a run wrapped: the model again, in i64/i128 without wrapping.
fn overflows(d: &harness::Directive, a: &ArgValue) -> bool {
    let step_past = |max: i128| i128::from(scalar(d, "n")) + i128::from(scalar(d, "s")) > max;
    match d.kernel.as_str() {
        "grid_stride" | "helper_steps" => step_past(i128::from(i32::MAX)),
        "steps64" => step_past(i128::from(i64::MAX)),
        "literal_bounds" => i32s(a).iter().any(|&at| {
            // The second loop wraps when some k reaches past 2147483640.
            let k0 = 2147483600 + i64::from(at & 31);
            (0..40)
                .map(|m| k0 + 7 * m)
                .any(|k| k <= 2147483644 && k + 7 > 2147483647)
        }),
        k => panic!("no model for {k}"),
    }
}

#[test]
fn loop_steps_agree_with_the_model_on_every_backend() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/kernels/loop_steps.sarek");
    let text = std::fs::read_to_string(&path).expect("tests/kernels/loop_steps.sarek");
    let program = sarek::Program::compile("loop_steps.sarek", &text).unwrap();
    let directives = harness::parse_directives(&text).unwrap();
    assert_eq!(directives.len(), 8);
    let devices = devices();
    let mut wrapped = 0;
    for d in &directives {
        let kernel = program.kernel(&d.kernel).unwrap();
        let inputs = harness::build_args(kernel.ir(), &harness::Inputs::from_directive(d)).unwrap();
        let arg = |name: &str| scalar(d, name);
        let n = arg("n");
        let expect = match d.kernel.as_str() {
            "grid_stride" => grid_stride(
                &i32s(&inputs[0]),
                n as i32,
                arg("s") as i32,
                arg("cap") as i32,
            ),
            "literal_bounds" => literal_bounds(&i32s(&inputs[0])),
            "helper_steps" => helper_steps(
                &i32s(&inputs[0]),
                n as i32,
                arg("s") as i32,
                arg("cap") as i32,
            ),
            "steps64" => steps64(&i64s(&inputs[0]), n, arg("s"), arg("cap") as i32),
            k => panic!("no expectation for {k}"),
        };
        if overflows(d, &inputs[0]) {
            wrapped += 1;
        }
        for (backend, dev) in &devices {
            let mut args = inputs.clone();
            match dev.launch(kernel.ir(), d.config(), &mut args) {
                Ok(_) => {}
                Err(e @ RuntimeError::Refused { .. }) => {
                    eprintln!(
                        "{} (line {}) refused on {}: {e}",
                        d.kernel,
                        d.line,
                        backend.name()
                    );
                    continue;
                }
                Err(e) => panic!("{} on {}: {e}", d.kernel, backend.name()),
            }
            let at = |p: usize| {
                format!(
                    "{} (line {}) on {}: parameter {p}",
                    d.kernel,
                    d.line,
                    backend.name()
                )
            };
            match &expect {
                Expect::I32(want) => {
                    for (p, w) in want {
                        assert_eq!(&i32s(&args[*p]), w, "{}", at(*p));
                    }
                }
                Expect::I64(want) => {
                    for (p, w) in want {
                        assert_eq!(&i64s(&args[*p]), w, "{}", at(*p));
                    }
                }
            }
            eprintln!("{} (line {}): {} ok", d.kernel, d.line, backend.name());
        }
    }
    // The file keeps runs that take the wrapping copies, and runs that do not.
    assert!(
        (3..directives.len()).contains(&wrapped),
        "{wrapped} of {} runs overflow",
        directives.len()
    );
}
