//! Hand-built IR kernels on the interpreter, checked against plain Rust loops.

use sarek_testkit::interp as interp_util;

use interp_util::kernels::*;
use interp_util::*;
use sarek_compiler::intrinsics::{AtomicOp, Axis, Geometry, Intrinsic, MathFn, WarpOp};
use sarek_compiler::ir::*;
use sarek_compiler::types::{BinOp, Literal, MemSpace, Scalar, UnOp};
use sarek_runtime::{ArgValue, Column, HostVector, LaunchConfig, interp};

#[test]
fn vector_add_over_several_blocks() {
    let n = 1000;
    let a: Vec<i32> = (0..n).map(|i| i * 7 - 3000).collect();
    let b: Vec<i32> = (0..n).map(|i| i32::MAX - i).collect();
    let mut args = vec![
        vec_i32(&a),
        vec_i32(&b),
        vec_i32(&vec![0; n as usize]),
        s_i32(n),
    ];
    interp::run(&vadd(), LaunchConfig::linear(n as u32), &mut args).unwrap();
    let want: Vec<i32> = a.iter().zip(&b).map(|(x, y)| x.wrapping_add(*y)).collect();
    assert_eq!(out_i32(&args[2]), want);
}

#[test]
fn saxpy_is_float32_arithmetic() {
    let n = 777usize;
    let r = rand_seq(1, 2 * n);
    let x: Vec<f32> = r[..n]
        .iter()
        .map(|v| (*v % 10_000) as f32 / 77.0 - 50.0)
        .collect();
    let y: Vec<f32> = r[n..].iter().map(|v| (*v % 10_000) as f32 / 13.0).collect();
    let a = 1.1f32;
    let mut args = vec![vec_f32(&x), vec_f32(&y), s_f32(a), s_i32(n as i32)];
    interp::run(&saxpy(), launch([4, 1, 1], [200, 1, 1]), &mut args).unwrap();
    let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| a * x + y).collect();
    let got = out_f32(&args[1]);
    assert_eq!(
        got.iter().map(|f| f.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|f| f.to_bits()).collect::<Vec<_>>()
    );
}

#[test]
fn shared_memory_reduction_with_barriers() {
    for block in [256u32, 1024, 64] {
        let n = 5000usize;
        let x: Vec<i32> = rand_seq(2, n)
            .iter()
            .map(|v| (*v % 2001) as i32 - 1000)
            .collect();
        let blocks = n.div_ceil(block as usize);
        let mut args = vec![vec_i32(&x), vec_i32(&vec![0; blocks]), s_i32(n as i32)];
        interp::run(
            &reduce(block),
            launch([blocks as u32, 1, 1], [block, 1, 1]),
            &mut args,
        )
        .unwrap();
        let want: Vec<i32> = x.chunks(block as usize).map(|c| c.iter().sum()).collect();
        assert_eq!(out_i32(&args[1]), want, "block {block}");
    }
}

#[test]
fn mandelbrot_matches_rust_reference() {
    let (w, h, it) = (96, 64, 100);
    let mut args = vec![
        vec_i32(&vec![-1; (w * h) as usize]),
        s_i32(w),
        s_i32(h),
        s_i32(it),
    ];
    interp::run(&mandelbrot(), launch([6, 8, 1], [16, 8, 1]), &mut args).unwrap();
    assert_eq!(out_i32(&args[0]), mandelbrot_ref(w, h, it));
}

#[test]
fn tiled_matmul_matches_rust_reference() {
    let n = 64usize;
    let a: Vec<f32> = rand_f32(3, n * n);
    let b: Vec<f32> = rand_f32(4, n * n);
    let mut args = vec![
        vec_f32(&a),
        vec_f32(&b),
        vec_f32(&vec![0.0; n * n]),
        s_i32(n as i32),
    ];
    interp::run(&matmul(16), launch([4, 4, 1], [16, 16, 1]), &mut args).unwrap();
    assert_eq!(out_f32(&args[2]), matmul_ref(&a, &b, n));
}

#[test]
fn geometry_in_three_dimensions() {
    // out[linear global id] = x + 100*y + 10000*z of the global index, plus the dims.
    let mut kb = KB::new("geo3");
    let out = kb.vector("out", Ty::I32);
    let dims = kb.vector("dims", Ty::I32);
    let lin = kb.var("lin", Ty::I32);
    let g = |a| geo(Geometry::GlobalIdx(a));
    let gd = |a| geo(Geometry::GridDim(a));
    let bd = |a| geo(Geometry::BlockDim(a));
    let width_x = mul(gd(Axis::X), bd(Axis::X));
    let width_y = mul(gd(Axis::Y), bd(Axis::Y));
    let body = vec![
        let_(
            lin,
            add(
                g(Axis::X),
                mul(width_x.clone(), add(g(Axis::Y), mul(width_y, g(Axis::Z)))),
            ),
        ),
        store(
            out,
            kb.v(lin),
            add(
                g(Axis::X),
                add(mul(i32c(100), g(Axis::Y)), mul(i32c(10000), g(Axis::Z))),
            ),
        ),
        if_(
            bin(BinOp::Eq, kb.v(lin), i32c(0)),
            vec![
                store(dims, i32c(0), geo(Geometry::WarpSize)),
                store(dims, i32c(1), bd(Axis::Z)),
                store(dims, i32c(2), gd(Axis::Z)),
            ],
            vec![],
        ),
    ];
    let k = kb.finish(body);
    let (grid, block) = ([2u32, 3, 2], [4u32, 2, 3]);
    let total: u32 = grid.iter().zip(&block).map(|(g, b)| g * b).product();
    let mut args = vec![vec_i32(&vec![-1; total as usize]), vec_i32(&[0; 3])];
    interp::run(&k, LaunchConfig { grid, block }, &mut args).unwrap();
    let (wx, wy) = (grid[0] * block[0], grid[1] * block[1]);
    let want: Vec<i32> = (0..total)
        .map(|l| {
            let (x, y, z) = (l % wx, (l / wx) % wy, l / (wx * wy));
            (x + 100 * y + 10000 * z) as i32
        })
        .collect();
    assert_eq!(out_i32(&args[0]), want);
    assert_eq!(out_i32(&args[1]), vec![32, 3, 2]);
}

/// One thread evaluates a list of scalar expressions into `out` (int64 column) so that the
/// exact semantics can be compared with Rust.
fn eval_all(exprs: Vec<Expr>) -> Vec<Literal> {
    let mut kb = KB::new("scalars");
    let outs: Vec<VarId> = exprs
        .iter()
        .enumerate()
        .map(|(i, e)| kb.vector(&format!("o{i}"), e.ty.clone()))
        .collect();
    let body = exprs
        .into_iter()
        .zip(&outs)
        .map(|(e, o)| store(*o, i32c(0), e))
        .collect();
    let k = kb.finish(body);
    let mut args: Vec<ArgValue> = outs
        .iter()
        .map(|o| {
            let s = k.var(*o).ty.elem().unwrap().scalar().unwrap();
            ArgValue::Vector(HostVector {
                len: 1,
                columns: vec![Column::zeros(s, 1)],
            })
        })
        .collect();
    interp::run(&k, LaunchConfig::linear(1), &mut args).unwrap();
    args.iter().map(|a| col(a, 0).get(0)).collect()
}

#[test]
fn exact_integer_semantics() {
    use BinOp::*;
    let cases: Vec<(Expr, Literal)> = vec![
        (bin(Add, i32c(i32::MAX), i32c(1)), Literal::I32(i32::MIN)),
        (
            bin(Mul, i32c(65537), i32c(65537)),
            Literal::I32(65537i32.wrapping_mul(65537)),
        ),
        (bin(Div, i32c(-7), i32c(2)), Literal::I32(-3)),
        (bin(Rem, i32c(-7), i32c(2)), Literal::I32(-1)),
        (bin(Rem, i32c(7), i32c(-2)), Literal::I32(1)),
        (bin(Div, i32c(i32::MIN), i32c(-1)), Literal::I32(i32::MIN)),
        (bin(Rem, i32c(i32::MIN), i32c(-1)), Literal::I32(0)),
        (
            bin(LShr, i32c(-16), i32c(2)),
            Literal::I32(((-16i32) as u32 >> 2) as i32),
        ),
        (bin(AShr, i32c(-16), i32c(2)), Literal::I32(-4)),
        (bin(Shl, i32c(1), i32c(33)), Literal::I32(2)),
        (bin(LShr, i64c(-1), i64c(60)), Literal::I64(15)),
        (bin(AShr, i64c(-256), i64c(4)), Literal::I64(-16)),
        (bin(Shl, i64c(3), i64c(62)), Literal::I64(3i64 << 62)),
        (bin(Add, i64c(i64::MAX), i64c(1)), Literal::I64(i64::MIN)),
        (
            bin(Div, i64c(-9_000_000_000), i64c(7)),
            Literal::I64(-9_000_000_000 / 7),
        ),
        (
            bin(BitXor, i32c(0b1100), i32c(0b1010)),
            Literal::I32(0b0110),
        ),
        (un(UnOp::BitNot, i32c(5)), Literal::I32(!5)),
        (un(UnOp::Neg, i32c(i32::MIN)), Literal::I32(i32::MIN)),
        (
            intr(Intrinsic::Abs, vec![i32c(-5)], Ty::I32),
            Literal::I32(5),
        ),
        (
            intr(Intrinsic::Min, vec![i64c(-5), i64c(3)], Ty::I64),
            Literal::I64(-5),
        ),
        (
            intr(Intrinsic::Max, vec![i32c(-5), i32c(3)], Ty::I32),
            Literal::I32(3),
        ),
        (
            intr(Intrinsic::Clz, vec![i32c(1)], Ty::I32),
            Literal::I32(31),
        ),
        (
            intr(Intrinsic::Clz, vec![i64c(1)], Ty::I64),
            Literal::I64(63),
        ),
        (
            intr(Intrinsic::Popcount, vec![i32c(-1)], Ty::I32),
            Literal::I32(32),
        ),
        (bin(Lt, i32c(-1), i32c(0)), Literal::Bool(true)),
        (bin(Ge, i64c(5), i64c(6)), Literal::Bool(false)),
    ];
    let (exprs, want): (Vec<_>, Vec<_>) = cases.into_iter().unzip();
    assert_eq!(eval_all(exprs), want);
}

#[test]
fn float_semantics_and_conversions() {
    use BinOp::*;
    let m32 = |f, args: Vec<Expr>| intr(Intrinsic::Math(f), args, Ty::F32);
    let m64 = |f, args: Vec<Expr>| intr(Intrinsic::Math(f), args, Ty::F64);
    let cases: Vec<(Expr, Literal)> = vec![
        // 2^24 + 1 is not a float32: the sum stays 2^24 in f32 (it would not in f64).
        (
            bin(Add, f32c(16_777_216.0), f32c(1.0)),
            Literal::F32(16_777_216.0),
        ),
        (
            bin(Add, f64c(16_777_216.0), f64c(1.0)),
            Literal::F64(16_777_217.0),
        ),
        (bin(Div, f32c(1.0), f32c(3.0)), Literal::F32(1.0f32 / 3.0)),
        (bin(Rem, f32c(-7.5), f32c(2.0)), Literal::F32(-1.5)),
        (bin(Rem, f64c(7.5), f64c(-2.0)), Literal::F64(1.5)),
        (convert(f32c(-3.9), Scalar::I32), Literal::I32(-3)),
        (convert(f32c(3.9), Scalar::I32), Literal::I32(3)),
        (convert(f32c(1e20), Scalar::I32), Literal::I32(i32::MAX)),
        (convert(f64c(-1e300), Scalar::I64), Literal::I64(i64::MIN)),
        (convert(f32c(f32::NAN), Scalar::I32), Literal::I32(0)),
        (
            convert(i32c(16_777_217), Scalar::F32),
            Literal::F32(16_777_216.0),
        ),
        (convert(i64c(-5), Scalar::I32), Literal::I32(-5)),
        (convert(i64c(1 << 40), Scalar::I32), Literal::I32(0)),
        (convert(i32c(-5), Scalar::I64), Literal::I64(-5)),
        (convert(f32c(0.1), Scalar::F64), Literal::F64(0.1f32 as f64)),
        (
            m32(MathFn::Sqrt, vec![f32c(2.0)]),
            Literal::F32(std::f32::consts::SQRT_2),
        ),
        (
            m64(MathFn::Sqrt, vec![f64c(2.0)]),
            Literal::F64(std::f64::consts::SQRT_2),
        ),
        (m32(MathFn::Rsqrt, vec![f32c(4.0)]), Literal::F32(0.5)),
        (m32(MathFn::Round, vec![f32c(-2.5)]), Literal::F32(-3.0)),
        (m32(MathFn::Round, vec![f32c(2.5)]), Literal::F32(3.0)),
        (m32(MathFn::Trunc, vec![f32c(-2.7)]), Literal::F32(-2.0)),
        (m32(MathFn::Floor, vec![f32c(-2.2)]), Literal::F32(-3.0)),
        (m32(MathFn::Ceil, vec![f32c(-2.7)]), Literal::F32(-2.0)),
        (m32(MathFn::Fabs, vec![f32c(-2.5)]), Literal::F32(2.5)),
        (
            m32(MathFn::Pow, vec![f32c(2.0), f32c(10.0)]),
            Literal::F32(1024.0),
        ),
        (
            m32(MathFn::Hypot, vec![f32c(3.0), f32c(4.0)]),
            Literal::F32(5.0),
        ),
        (
            m32(MathFn::Copysign, vec![f32c(3.0), f32c(-0.0)]),
            Literal::F32(-3.0),
        ),
        (
            m32(MathFn::Fmin, vec![f32c(f32::NAN), f32c(1.0)]),
            Literal::F32(1.0),
        ),
        (
            m32(MathFn::Fmax, vec![f32c(-1.0), f32c(1.0)]),
            Literal::F32(1.0),
        ),
        (m32(MathFn::Exp2, vec![f32c(10.0)]), Literal::F32(1024.0)),
        (m32(MathFn::Log2, vec![f32c(1024.0)]), Literal::F32(10.0)),
        (m64(MathFn::Log10, vec![f64c(1000.0)]), Literal::F64(3.0)),
        // fma rounds once: (1 + 2^-23)(1 - 2^-23) - 1 = -2^-46 exactly, 0 with two roundings.
        (
            m32(
                MathFn::Fma,
                vec![
                    f32c(1.0 + f32::EPSILON),
                    f32c(1.0 - f32::EPSILON),
                    f32c(-1.0),
                ],
            ),
            Literal::F32(-(f32::EPSILON * f32::EPSILON)),
        ),
        (
            bin(
                Sub,
                mul(f32c(1.0 + f32::EPSILON), f32c(1.0 - f32::EPSILON)),
                f32c(1.0),
            ),
            Literal::F32(0.0),
        ),
        (
            intr(Intrinsic::Abs, vec![f64c(-0.5)], Ty::F64),
            Literal::F64(0.5),
        ),
        (
            intr(Intrinsic::Min, vec![f32c(-0.5), f32c(0.25)], Ty::F32),
            Literal::F32(-0.5),
        ),
        (bin(Lt, f32c(f32::NAN), f32c(0.0)), Literal::Bool(false)),
        (bin(Ne, f32c(f32::NAN), f32c(f32::NAN)), Literal::Bool(true)),
    ];
    let (exprs, want): (Vec<_>, Vec<_>) = cases.into_iter().unzip();
    let got = eval_all(exprs);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "case {i}");
    }
    // Transcendentals in float32 agree with the float64 result rounded to float32 within 1 ulp.
    let xs = [0.3f32, 1.7, -2.2, 10.5];
    for f in [
        MathFn::Exp,
        MathFn::Sin,
        MathFn::Cos,
        MathFn::Tan,
        MathFn::Tanh,
        MathFn::Atan,
        MathFn::Expm1,
        MathFn::Log1p,
    ] {
        let exprs: Vec<Expr> = xs
            .iter()
            .map(|x| m32(f, vec![f32c(x.abs() / 4.0)]))
            .collect();
        let got = eval_all(exprs);
        for (x, g) in xs.iter().zip(got) {
            let x = (x.abs() / 4.0) as f64;
            let r = match f {
                MathFn::Exp => x.exp(),
                MathFn::Sin => x.sin(),
                MathFn::Cos => x.cos(),
                MathFn::Tan => x.tan(),
                MathFn::Tanh => x.tanh(),
                MathFn::Atan => x.atan(),
                MathFn::Expm1 => x.exp_m1(),
                _ => x.ln_1p(),
            } as f32;
            let Literal::F32(g) = g else { panic!() };
            assert!(
                (g.to_bits() as i64 - r.to_bits() as i64).abs() <= 1,
                "{f:?}({x}) = {g}, want {r}"
            );
        }
    }
}

#[test]
fn atomics_return_old_values() {
    // Every thread takes a ticket with atomic_inc: the tickets are a permutation; the
    // histogram uses atomic_add; int64 and float32 adds; min/max/and/or/xor/exch/cas/sub/dec.
    let n = 700usize;
    let mut kb = KB::new("atomics");
    let data = kb.vector("data", Ty::I32);
    let hist = kb.vector("hist", Ty::I32);
    let tickets = kb.vector("tickets", Ty::I32);
    let counter = kb.vector("counter", Ty::I32);
    let big = kb.vector("big", Ty::I64);
    let fsum = kb.vector("fsum", Ty::F32);
    let misc = kb.vector("misc", Ty::I32);
    let casout = kb.vector("casout", Ty::I32);
    let i = kb.var("i", Ty::I32);
    let at = |op, args: Vec<Expr>, ty: Ty| intr(Intrinsic::Atomic(op), args, ty);
    let body = vec![
        let_(i, gid()),
        if_(
            lt(kb.v(i), i32c(n as i32)),
            vec![
                expr_st(at(
                    AtomicOp::Add,
                    vec![
                        kb.v(hist),
                        bin(BinOp::Rem, kb.idx(data, kb.v(i)), i32c(16)),
                        i32c(1),
                    ],
                    Ty::I32,
                )),
                store(
                    tickets,
                    kb.v(i),
                    at(AtomicOp::Inc, vec![kb.v(counter), i32c(0)], Ty::I32),
                ),
                expr_st(at(
                    AtomicOp::Add,
                    vec![kb.v(big), i32c(0), i64c(1 << 33)],
                    Ty::I64,
                )),
                expr_st(at(
                    AtomicOp::Add,
                    vec![kb.v(fsum), i32c(0), f32c(0.5)],
                    Ty::F32,
                )),
                expr_st(at(
                    AtomicOp::Min,
                    vec![kb.v(misc), i32c(0), kb.idx(data, kb.v(i))],
                    Ty::I32,
                )),
                expr_st(at(
                    AtomicOp::Max,
                    vec![kb.v(misc), i32c(1), kb.idx(data, kb.v(i))],
                    Ty::I32,
                )),
                expr_st(at(
                    AtomicOp::Or,
                    vec![
                        kb.v(misc),
                        i32c(2),
                        bin(BinOp::Shl, i32c(1), bin(BinOp::Rem, kb.v(i), i32c(31))),
                    ],
                    Ty::I32,
                )),
                expr_st(at(
                    AtomicOp::Xor,
                    vec![kb.v(misc), i32c(3), kb.idx(data, kb.v(i))],
                    Ty::I32,
                )),
                expr_st(at(
                    AtomicOp::And,
                    vec![
                        kb.v(misc),
                        i32c(4),
                        un(
                            UnOp::BitNot,
                            bin(BinOp::Shl, i32c(1), bin(BinOp::Rem, kb.v(i), i32c(8))),
                        ),
                    ],
                    Ty::I32,
                )),
                expr_st(at(
                    AtomicOp::Sub,
                    vec![kb.v(misc), i32c(5), i32c(3)],
                    Ty::I32,
                )),
                expr_st(at(AtomicOp::Dec, vec![kb.v(misc), i32c(6)], Ty::I32)),
                // Only the thread that sees 0 in slot 7 wins the CAS and records its id + 1.
                store(
                    casout,
                    kb.v(i),
                    at(
                        AtomicOp::Cas,
                        vec![kb.v(misc), i32c(7), i32c(0), add(kb.v(i), i32c(1))],
                        Ty::I32,
                    ),
                ),
            ],
            vec![],
        ),
    ];
    let k = kb.finish(body);
    let data_v: Vec<i32> = rand_seq(5, n).iter().map(|v| (*v % 1000) as i32).collect();
    let mut args = vec![
        vec_i32(&data_v),
        vec_i32(&[0; 16]),
        vec_i32(&vec![0; n]),
        vec_i32(&[0]),
        vec_i64(&[5]),
        vec_f32(&[0.0]),
        vec_i32(&[i32::MAX, i32::MIN, 0, 0, -1, 0, 0, 0]),
        vec_i32(&vec![0; n]),
    ];
    interp::run(&k, launch([3, 1, 1], [256, 1, 1]), &mut args).unwrap();
    let mut hist_want = [0; 16];
    for d in &data_v {
        hist_want[(d % 16) as usize] += 1;
    }
    assert_eq!(out_i32(&args[1]), hist_want);
    let mut t = out_i32(&args[2]);
    // Blocks and threads run in order: the tickets are exactly 0..n in thread order.
    assert_eq!(t, (0..n as i32).collect::<Vec<_>>());
    t.sort();
    assert_eq!(out_i32(&args[3]), vec![n as i32]);
    assert_eq!(out_i64(&args[4]), vec![5 + (n as i64) * (1 << 33)]);
    assert_eq!(out_f32(&args[5]), vec![n as f32 * 0.5]);
    let misc = out_i32(&args[6]);
    assert_eq!(misc[0], *data_v.iter().min().unwrap());
    assert_eq!(misc[1], *data_v.iter().max().unwrap());
    assert_eq!(misc[2], (0..n).fold(0, |m, i| m | 1 << (i % 31)));
    assert_eq!(misc[3], data_v.iter().fold(0, |m, d| m ^ d));
    assert_eq!(misc[4], (0..n).fold(-1, |m, i| m & !(1 << (i % 8))));
    assert_eq!(misc[5], -3 * n as i32);
    assert_eq!(misc[6], -(n as i32));
    assert_eq!(misc[7], 1, "thread 0 wins the compare-and-swap");
    let cas = out_i32(&args[7]);
    assert!(
        cas[1..].iter().all(|&c| c == 1),
        "later threads see thread 0's value"
    );
    assert_eq!(cas[0], 0);
}

#[test]
fn shared_memory_atomics_histogram() {
    // Per-block histogram in shared memory, merged into global with atomic_add.
    let bins = 8;
    let mut kb = KB::new("shist");
    let data = kb.vector("data", Ty::I32);
    let hist = kb.vector("hist", Ty::I32);
    let n = kb.param("n", Ty::I32);
    let sh = kb.array("sh", Ty::I32, MemSpace::Shared, bins);
    let at = |op, args: Vec<Expr>| intr(Intrinsic::Atomic(op), args, Ty::I32);
    let body = vec![
        st(StmtKind::Array { var: sh }),
        if_(
            lt(tid(), i32c(bins as i32)),
            vec![store(sh, tid(), i32c(0))],
            vec![],
        ),
        barrier(),
        if_(
            lt(gid(), kb.v(n)),
            vec![expr_st(at(
                AtomicOp::Add,
                vec![
                    kb.v(sh),
                    bin(BinOp::Rem, kb.idx(data, gid()), i32c(bins as i32)),
                    i32c(1),
                ],
            ))],
            vec![],
        ),
        barrier(),
        if_(
            lt(tid(), i32c(bins as i32)),
            vec![expr_st(at(
                AtomicOp::Add,
                vec![kb.v(hist), tid(), kb.idx(sh, tid())],
            ))],
            vec![],
        ),
    ];
    let k = kb.finish(body);
    let nn = 3000;
    let d: Vec<i32> = rand_seq(9, nn).iter().map(|v| (*v % 1000) as i32).collect();
    let mut args = vec![vec_i32(&d), vec_i32(&[0; 8]), s_i32(nn as i32)];
    interp::run(&k, LaunchConfig::linear(nn as u32), &mut args).unwrap();
    let mut want = [0; 8];
    d.iter().for_each(|x| want[(x % 8) as usize] += 1);
    assert_eq!(out_i32(&args[1]), want);
}

#[test]
fn warp_shuffles_votes_and_ballot() {
    let mut kb = KB::new("warp");
    let x = kb.vector("x", Ty::I32);
    let o_xor = kb.vector("o_xor", Ty::I32);
    let o_down = kb.vector("o_down", Ty::I32);
    let o_up = kb.vector("o_up", Ty::I32);
    let o_idx = kb.vector("o_idx", Ty::F32);
    let o_ballot = kb.vector("o_ballot", Ty::I32);
    let o_all = kb.vector("o_all", Ty::BOOL);
    let o_any = kb.vector("o_any", Ty::BOOL);
    let o_sum = kb.vector("o_sum", Ty::I32);
    let v = kb.var("v", Ty::I32);
    let s = kb.var("s", Ty::I32);
    let off = kb.var("off", Ty::I32);
    let w =
        |op, a: Expr, b: Option<Expr>, ty: Ty| intr(Intrinsic::Warp(op), a.into_iter_with(b), ty);
    trait With {
        fn into_iter_with(self, b: Option<Expr>) -> Vec<Expr>;
    }
    impl With for Expr {
        fn into_iter_with(self, b: Option<Expr>) -> Vec<Expr> {
            std::iter::once(self).chain(b).collect()
        }
    }
    let odd = bin(BinOp::Eq, bin(BinOp::BitAnd, kb.v(v), i32c(1)), i32c(1));
    let body = vec![
        let_(v, kb.idx(x, gid())),
        store(
            o_xor,
            gid(),
            w(WarpOp::ShuffleXor, kb.v(v), Some(i32c(1)), Ty::I32),
        ),
        store(
            o_down,
            gid(),
            w(WarpOp::ShuffleDown, kb.v(v), Some(i32c(3)), Ty::I32),
        ),
        store(
            o_up,
            gid(),
            w(WarpOp::ShuffleUp, kb.v(v), Some(i32c(2)), Ty::I32),
        ),
        store(
            o_idx,
            gid(),
            w(
                WarpOp::Shuffle,
                convert(kb.v(v), Scalar::F32),
                Some(i32c(5)),
                Ty::F32,
            ),
        ),
        store(
            o_ballot,
            gid(),
            w(WarpOp::Ballot, odd.clone(), None, Ty::I32),
        ),
        store(
            o_all,
            gid(),
            w(
                WarpOp::VoteAll,
                bin(BinOp::Ge, kb.v(v), i32c(0)),
                None,
                Ty::BOOL,
            ),
        ),
        store(
            o_any,
            gid(),
            w(
                WarpOp::VoteAny,
                bin(BinOp::Eq, kb.v(v), i32c(7)),
                None,
                Ty::BOOL,
            ),
        ),
        // Warp sum by shuffle-down tree: lane 0 ends with the warp's total.
        let_(s, kb.v(v)),
        let_(off, i32c(16)),
        while_(
            bin(BinOp::Gt, kb.v(off), i32c(0)),
            vec![
                set(
                    s,
                    add(
                        kb.v(s),
                        w(WarpOp::ShuffleDown, kb.v(s), Some(kb.v(off)), Ty::I32),
                    ),
                ),
                set(off, bin(BinOp::Div, kb.v(off), i32c(2))),
            ],
        ),
        store(o_sum, gid(), kb.v(s)),
    ];
    let k = kb.finish(body);
    // A block of 80 threads: warps 0, 1 full, warp 2 has 16 threads.
    let n = 80usize;
    let xv: Vec<i32> = rand_seq(11, n).iter().map(|r| (*r % 50) as i32).collect();
    let bools = || {
        ArgValue::Vector(HostVector {
            len: n,
            columns: vec![Column::Bool(vec![false; n])],
        })
    };
    let zeros = || vec_i32(&vec![0; n]);
    let mut args = vec![
        vec_i32(&xv),
        zeros(),
        zeros(),
        zeros(),
        vec_f32(&vec![0.0; n]),
        zeros(),
        bools(),
        bools(),
        zeros(),
    ];
    interp::run(&k, launch([1, 1, 1], [n as u32, 1, 1]), &mut args).unwrap();
    let live = |t: usize| t < n;
    let warp_of = |t: usize| t / 32 * 32;
    let (mut w_xor, mut w_down, mut w_up, mut w_idx, mut w_bal, mut w_all, mut w_any) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for t in 0..n {
        let base = warp_of(t);
        let lane = t - base;
        let get = |src: i64| -> i32 {
            if (0..32).contains(&src) && live(base + src as usize) {
                xv[base + src as usize]
            } else {
                xv[t]
            }
        };
        w_xor.push(get((lane ^ 1) as i64));
        w_down.push(get(lane as i64 + 3));
        w_up.push(get(lane as i64 - 2));
        w_idx.push(get(5) as f32);
        let members: Vec<usize> = (base..(base + 32).min(n)).collect();
        w_bal.push(
            members
                .iter()
                .filter(|&&m| xv[m] & 1 == 1)
                .fold(0u32, |b, &m| b | 1 << (m - base)) as i32,
        );
        w_all.push(members.iter().all(|&m| xv[m] >= 0));
        w_any.push(members.iter().any(|&m| xv[m] == 7));
    }
    // The shuffle-down tree, simulated step by step (out-of-warp sources give the own value).
    let mut s = xv.clone();
    let mut off = 16;
    while off > 0 {
        let prev = s.clone();
        for t in 0..n {
            let base = warp_of(t);
            let src = t - base + off;
            let v = if src < 32 && base + src < n {
                prev[base + src]
            } else {
                prev[t]
            };
            s[t] = prev[t] + v;
        }
        off /= 2;
    }
    let w_sum = s;
    let bools = |a: &ArgValue| match col(a, 0) {
        Column::Bool(b) => b.clone(),
        c => panic!("not bool: {c:?}"),
    };
    assert_eq!(out_i32(&args[1]), w_xor);
    assert_eq!(out_i32(&args[2]), w_down);
    assert_eq!(out_i32(&args[3]), w_up);
    assert_eq!(out_f32(&args[4]), w_idx);
    assert_eq!(out_i32(&args[5]), w_bal);
    assert_eq!(bools(&args[6]), w_all);
    assert_eq!(bools(&args[7]), w_any);
    assert_eq!(out_i32(&args[8]), w_sum);
    // Full warps: lane 0's sum is the warp total.
    assert_eq!(out_i32(&args[8])[0], xv[..32].iter().sum::<i32>());
}

#[test]
fn local_arrays_are_per_thread() {
    // Each thread fills a local array of 4 with i, i+1, ... and sums it reversed.
    let mut kb = KB::new("local");
    let out = kb.vector("out", Ty::I32);
    let arr = kb.array("arr", Ty::I32, MemSpace::Local, 4);
    let j = kb.var("j", Ty::I32);
    let acc = kb.var("acc", Ty::I32);
    let body = vec![
        st(StmtKind::Array { var: arr }),
        for_(
            j,
            i32c(0),
            i32c(3),
            vec![store(arr, kb.v(j), add(gid(), mul(kb.v(j), kb.v(j))))],
        ),
        let_(acc, i32c(0)),
        st(StmtKind::For {
            var: j,
            start: i32c(3),
            end: i32c(0),
            downto: true,
            body: vec![set(
                acc,
                add(mul(kb.v(acc), i32c(10)), kb.idx(arr, kb.v(j))),
            )],
            unroll: None,
        }),
        store(out, gid(), kb.v(acc)),
    ];
    let k = kb.finish(body);
    let mut args = vec![vec_i32(&[0; 64])];
    interp::run(&k, launch([2, 1, 1], [32, 1, 1]), &mut args).unwrap();
    let want: Vec<i32> = (0..64)
        .map(|i| {
            let a: Vec<i32> = (0..4).map(|j| i + j * j).collect();
            a.iter().rev().fold(0, |acc, x| acc * 10 + x)
        })
        .collect();
    assert_eq!(out_i32(&args[0]), want);
}

#[test]
fn shared_atomics_int64_float32_and_length() {
    // Shared int64 and float32 accumulators, read back after a barrier; `length` of a shared
    // array and of a vector; a shuffle of a record value (all leaves move together).
    let mut kb = KB::new("shared_atomics");
    let out64 = kb.vector("out64", Ty::I64);
    let outf = kb.vector("outf", Ty::F32);
    let lens = kb.vector("lens", Ty::I32);
    let pairs = kb.vector("pairs", Ty::I32);
    let pair = kb.record("pair", &[("a", Ty::I32), ("b", Ty::F32)]);
    let s64 = kb.array("s64", Ty::I64, MemSpace::Shared, 2);
    let sf = kb.array("sf", Ty::F32, MemSpace::Shared, 1);
    let p = kb.var("p", Ty::Record(pair));
    let q = kb.var("q", Ty::Record(pair));
    let at = |op, args: Vec<Expr>, ty| intr(Intrinsic::Atomic(op), args, ty);
    let len = |e: Expr| intr(Intrinsic::Length, vec![e], Ty::I32);
    let is0 = bin(BinOp::Eq, tid(), i32c(0));
    let body = vec![
        st(StmtKind::Array { var: s64 }),
        st(StmtKind::Array { var: sf }),
        if_(
            is0.clone(),
            vec![
                store(s64, i32c(0), i64c(0)),
                store(s64, i32c(1), i64c(i64::MAX)),
                store(sf, i32c(0), f32c(0.0)),
            ],
            vec![],
        ),
        barrier(),
        expr_st(at(
            AtomicOp::Add,
            vec![
                kb.v(s64),
                i32c(0),
                mul(convert(tid(), Scalar::I64), i64c(1 << 40)),
            ],
            Ty::I64,
        )),
        expr_st(at(
            AtomicOp::Min,
            vec![kb.v(s64), i32c(1), convert(tid(), Scalar::I64)],
            Ty::I64,
        )),
        expr_st(at(
            AtomicOp::Add,
            vec![kb.v(sf), i32c(0), f32c(0.25)],
            Ty::F32,
        )),
        barrier(),
        if_(
            is0,
            vec![
                store(out64, i32c(0), kb.idx(s64, i32c(0))),
                store(out64, i32c(1), kb.idx(s64, i32c(1))),
                store(outf, i32c(0), kb.idx(sf, i32c(0))),
                store(lens, i32c(0), len(kb.v(s64))),
                store(lens, i32c(1), len(kb.v(pairs))),
            ],
            vec![],
        ),
        let_(
            p,
            Expr::new(
                ExprKind::Record {
                    record: pair,
                    fields: vec![tid(), convert(tid(), Scalar::F32)],
                },
                Ty::Record(pair),
            ),
        ),
        let_(
            q,
            intr(
                Intrinsic::Warp(WarpOp::ShuffleXor),
                vec![kb.v(p), i32c(3)],
                Ty::Record(pair),
            ),
        ),
        store(
            pairs,
            tid(),
            add(
                kb.field(kb.v(q), 0),
                convert(kb.field(kb.v(q), 1), Scalar::I32),
            ),
        ),
    ];
    let k = kb.finish(body);
    let mut args = vec![
        vec_i64(&[0; 2]),
        vec_f32(&[0.0]),
        vec_i32(&[0; 2]),
        vec_i32(&[0; 64]),
    ];
    interp::run(&k, launch([1, 1, 1], [64, 1, 1]), &mut args).unwrap();
    assert_eq!(out_i64(&args[0]), vec![(0..64i64).sum::<i64>() << 40, 0]);
    assert_eq!(out_f32(&args[1]), vec![16.0]);
    assert_eq!(out_i32(&args[2]), vec![2, 64]);
    assert_eq!(
        out_i32(&args[3]),
        (0..64).map(|t| 2 * (t ^ 3)).collect::<Vec<_>>()
    );
}
