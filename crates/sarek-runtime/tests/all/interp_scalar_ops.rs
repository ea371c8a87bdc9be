//! Every binary integer and float operator over many operand pairs (random and edge values),
//! one launch per operator, against Rust's own operations with the documented semantics.

use sarek_testkit::interp as interp_util;

use interp_util::*;
use sarek_compiler::intrinsics::Intrinsic;
use sarek_compiler::ir::*;
use sarek_compiler::types::{BinOp, Scalar};
use sarek_runtime::{ArgValue, Column, LaunchConfig, cpu, interp};

const N: usize = 2048;

/// `out[i] = f(a[i], b[i])` over `N` threads.
fn kernel(elem: Ty, out: Ty, f: impl Fn(Expr, Expr) -> Expr) -> Kernel {
    let mut kb = KB::new("op");
    let a = kb.vector("a", elem.clone());
    let b = kb.vector("b", elem);
    let o = kb.vector("o", out);
    let e = f(kb.idx(a, gid()), kb.idx(b, gid()));
    kb.finish(vec![store(o, gid(), e)])
}

fn run(k: &Kernel, mut args: Vec<ArgValue>) -> ArgValue {
    let mut c = args.clone();
    interp::run(k, LaunchConfig::linear(N as u32), &mut args).unwrap();
    cpu::run(k, LaunchConfig::linear(N as u32), &mut c).unwrap();
    // Floats bitwise, so that NaN results compare equal.
    for (x, y) in args.iter().zip(&c) {
        let same = match (col(x, 0), col(y, 0)) {
            (Column::F32(p), Column::F32(q)) => {
                p.iter().zip(q).all(|(p, q)| p.to_bits() == q.to_bits())
            }
            (p, q) => p == q,
        };
        assert!(same, "interp and cpu differ");
    }
    args.pop().unwrap()
}

fn ints32(seed: u64, nonzero: bool) -> Vec<i32> {
    let edges = [
        0,
        1,
        -1,
        2,
        31,
        32,
        33,
        63,
        64,
        i32::MAX,
        i32::MIN,
        i32::MIN + 1,
        -32,
        7,
        -7,
    ];
    let mut v: Vec<i32> = rand_seq(seed, N)
        .iter()
        .map(|r| *r as i32 >> (r % 31))
        .collect();
    for (i, e) in edges.iter().enumerate() {
        v[i * 37 % N] = *e;
        v[(i * 131 + 5) % N] = *e;
    }
    if nonzero {
        v.iter_mut().filter(|x| **x == 0).for_each(|x| *x = 3);
    }
    v
}

fn ints64(seed: u64, nonzero: bool) -> Vec<i64> {
    let edges = [
        0,
        1,
        -1,
        63,
        64,
        65,
        i64::MAX,
        i64::MIN,
        1 << 32,
        -(1 << 40),
    ];
    let mut v: Vec<i64> = rand_seq(seed, N)
        .iter()
        .map(|r| *r as i64 >> (r % 63))
        .collect();
    for (i, e) in edges.iter().enumerate() {
        v[i * 41 % N] = *e;
        v[(i * 97 + 3) % N] = *e;
    }
    if nonzero {
        v.iter_mut().filter(|x| **x == 0).for_each(|x| *x = 3);
    }
    v
}

#[test]
fn int32_operators() {
    type F = fn(i32, i32) -> i32;
    let ops: [(BinOp, F); 11] = [
        (BinOp::Add, i32::wrapping_add),
        (BinOp::Sub, i32::wrapping_sub),
        (BinOp::Mul, i32::wrapping_mul),
        (
            BinOp::Div,
            |a, b| if b == -1 { a.wrapping_neg() } else { a / b },
        ),
        (BinOp::Rem, |a, b| if b == -1 { 0 } else { a % b }),
        (BinOp::BitAnd, |a, b| a & b),
        (BinOp::BitOr, |a, b| a | b),
        (BinOp::BitXor, |a, b| a ^ b),
        (BinOp::Shl, |a, b| a << (b & 31)),
        (BinOp::LShr, |a, b| ((a as u32) >> (b & 31)) as i32),
        (BinOp::AShr, |a, b| a >> (b & 31)),
    ];
    let a = ints32(1, false);
    for (op, f) in ops {
        let b = ints32(2, matches!(op, BinOp::Div | BinOp::Rem));
        let got = run(
            &kernel(Ty::I32, Ty::I32, |x, y| bin(op, x, y)),
            vec![vec_i32(&a), vec_i32(&b), vec_i32(&[0; N])],
        );
        let want: Vec<i32> = a.iter().zip(&b).map(|(x, y)| f(*x, *y)).collect();
        assert_eq!(out_i32(&got), want, "{op:?}");
    }
    for (op, f) in [
        (BinOp::Lt, i32::lt as fn(&i32, &i32) -> bool),
        (BinOp::Ge, i32::ge),
        (BinOp::Eq, i32::eq),
    ] {
        let b = ints32(3, false);
        let got = run(
            &kernel(Ty::I32, Ty::BOOL, |x, y| bin(op, x, y)),
            vec![vec_i32(&a), vec_i32(&b), {
                ArgValue::Vector(sarek_runtime::HostVector {
                    len: N,
                    columns: vec![Column::Bool(vec![false; N])],
                })
            }],
        );
        let want: Vec<bool> = a.iter().zip(&b).map(|(x, y)| f(x, y)).collect();
        assert_eq!(col(&got, 0), &Column::Bool(want), "{op:?}");
    }
}

#[test]
fn int64_operators() {
    type F = fn(i64, i64) -> i64;
    let ops: [(BinOp, F); 8] = [
        (BinOp::Add, i64::wrapping_add),
        (BinOp::Mul, i64::wrapping_mul),
        (
            BinOp::Div,
            |a, b| if b == -1 { a.wrapping_neg() } else { a / b },
        ),
        (BinOp::Rem, |a, b| if b == -1 { 0 } else { a % b }),
        (BinOp::BitXor, |a, b| a ^ b),
        (BinOp::Shl, |a, b| a << (b & 63)),
        (BinOp::LShr, |a, b| ((a as u64) >> (b & 63)) as i64),
        (BinOp::AShr, |a, b| a >> (b & 63)),
    ];
    let a = ints64(4, false);
    for (op, f) in ops {
        let b = ints64(5, matches!(op, BinOp::Div | BinOp::Rem));
        let got = run(
            &kernel(Ty::I64, Ty::I64, |x, y| bin(op, x, y)),
            vec![vec_i64(&a), vec_i64(&b), vec_i64(&[0; N])],
        );
        let want: Vec<i64> = a.iter().zip(&b).map(|(x, y)| f(*x, *y)).collect();
        assert_eq!(out_i64(&got), want, "{op:?}");
    }
}

#[test]
fn float32_operators_round_in_float32() {
    let floats = |seed| -> Vec<f32> {
        let mut v: Vec<f32> = rand_seq(seed, N)
            .iter()
            .map(|r| f32::from_bits((*r >> 20) as u32) % 1e30)
            .collect();
        for (i, e) in [
            0.0,
            -0.0,
            1.0,
            f32::INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            3e38,
            -2.5,
        ]
        .iter()
        .enumerate()
        {
            v[i * 29] = *e;
        }
        v
    };
    let (a, b) = (floats(6), floats(7));
    type F = fn(f32, f32) -> f32;
    let ops: [(BinOp, F); 5] = [
        (BinOp::Add, |x, y| x + y),
        (BinOp::Sub, |x, y| x - y),
        (BinOp::Mul, |x, y| x * y),
        (BinOp::Div, |x, y| x / y),
        (BinOp::Rem, |x, y| x % y),
    ];
    let bits = |v: Vec<f32>| {
        v.iter()
            .map(|f| if f.is_nan() { u32::MAX } else { f.to_bits() })
            .collect::<Vec<_>>()
    };
    for (op, f) in ops {
        let got = run(
            &kernel(Ty::F32, Ty::F32, |x, y| bin(op, x, y)),
            vec![vec_f32(&a), vec_f32(&b), vec_f32(&[0.0; N])],
        );
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| f(*x, *y)).collect();
        assert_eq!(bits(out_f32(&got)), bits(want), "{op:?}");
    }
    // float32 -> int32 truncates and saturates; int32 -> float32 rounds to nearest even.
    let got = run(
        &kernel(Ty::F32, Ty::I32, |x, _| {
            intr(Intrinsic::Convert, vec![x], Ty::I32)
        }),
        vec![vec_f32(&a), vec_f32(&b), vec_i32(&[0; N])],
    );
    assert_eq!(
        out_i32(&got),
        a.iter().map(|x| *x as i32).collect::<Vec<_>>()
    );
    let ia = ints32(8, false);
    let got = run(
        &kernel(Ty::I32, Ty::F32, |x, _| convert(x, Scalar::F32)),
        vec![vec_i32(&ia), vec_i32(&ia), vec_f32(&[0.0; N])],
    );
    assert_eq!(
        out_f32(&got),
        ia.iter().map(|x| *x as f32).collect::<Vec<_>>()
    );
}
