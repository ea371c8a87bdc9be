//! Hand-built IR kernels covering the C-family generator's features (records, tuples,
//! variants, helpers with vector and shared-array parameters, shared memory, barriers,
//! every atomic, warp operations, math, int64/float64, bit operations, bool buffers).
//! They complement the `.sarek` corpus with constructs written directly in the IR;
//! [`wgsl`] holds the set written for the WGSL generator and the wgpu runtime.

pub mod wgsl;

use sarek_compiler::intrinsics::{AtomicOp, Axis, Geometry, Intrinsic, MathFn, WarpOp};
use sarek_compiler::ir::build::*;
use sarek_compiler::ir::*;
use sarek_compiler::types::{BinOp, MemSpace, Scalar, UnOp};

/// `let i = global_thread_id in if i < length v then body`.
fn guarded(
    b: &mut KernelBuilder,
    v: VarId,
    body: impl FnOnce(&mut KernelBuilder, VarId) -> Block,
) -> Block {
    let i = b.var("i", Ty::I32);
    let len = b.length(v);
    let inner = body(b, i);
    vec![
        let_(i, global_idx()),
        if_(lt(b.read(i), len), inner, vec![]),
    ]
}

/// y[i] = a * x[i] + y[i]
pub fn saxpy() -> Kernel {
    let mut b = KernelBuilder::new("saxpy");
    let x = b.vector("x", Ty::F32);
    let y = b.vector("y", Ty::F32);
    let a = b.param("a", Ty::F32);
    let n = b.param("n", Ty::I32);
    let i = b.var("i", Ty::I32);
    let body = vec![
        let_(i, global_idx()),
        if_(
            lt(b.read(i), b.read(n)),
            vec![store(
                y,
                b.read(i),
                add(mul(b.read(a), b.index(x, b.read(i))), b.index(y, b.read(i))),
            )],
            vec![],
        ),
    ];
    b.finish(body)
}

/// Records, a variant with a match and constructors, a tuple vector.
pub fn shapes() -> Kernel {
    let mut b = KernelBuilder::new("shapes");
    let point_id = b.record("point", &[("x", Ty::F32), ("y", Ty::F32)]);
    let tup_id = b.record("_tup_i32_bool", &[("_0", Ty::I32), ("_1", Ty::BOOL)]);
    let point = Ty::Record(point_id);
    let shape_id = b.variant(
        "shape",
        &[
            ("Circle", vec![Ty::F32]),
            ("Rect", vec![Ty::F32, Ty::F32]),
            ("Empty", vec![]),
            ("At", vec![point.clone()]),
        ],
    );
    let s = b.vector("s", Ty::Variant(shape_id));
    let out = b.vector("out", Ty::F32);
    let pts = b.vector("pts", point.clone());
    let tags = b.vector("tags", Ty::Record(tup_id));
    let origin = b.param("origin", point.clone());
    let body = guarded(&mut b, out, |b, i| {
        let r = b.var("r", Ty::F32);
        let w = b.var("w", Ty::F32);
        let h = b.var("h", Ty::F32);
        let p = b.var("p", point.clone());
        let area = b.mut_var("area", Ty::F32);
        let si = b.index(s, b.read(i));
        let arms = vec![
            MatchArm {
                ctor: Some(0),
                bindings: vec![Some(r)],
                body: vec![assign(area, mul(mul(lit_f32(2.5), b.read(r)), b.read(r)))],
            },
            MatchArm {
                ctor: Some(1),
                bindings: vec![Some(w), Some(h)],
                body: vec![assign(area, mul(b.read(w), b.read(h)))],
            },
            MatchArm {
                ctor: Some(3),
                bindings: vec![Some(p)],
                body: vec![assign(area, b.field(b.read(p), 0))],
            },
            MatchArm {
                ctor: None,
                bindings: vec![],
                body: vec![assign(area, lit_f32(0.0))],
            },
        ];
        let big = bin(BinOp::Gt, b.read(area), lit_f32(1.0));
        let pi = || b.index(pts, b.read(i));
        let moved = record_value(
            point_id,
            vec![
                add(b.field(pi(), 0), b.field(b.read(origin), 0)),
                sub(b.field(pi(), 1), b.field(b.read(origin), 1)),
            ],
        );
        let tuple = record_value(tup_id, vec![tag(b.index(s, b.read(i))), big.clone()]);
        let bump_y = add(b.field(pi(), 1), b.payload(b.index(s, b.read(i)), 0, 0));
        vec![
            let_uninit(area),
            st(StmtKind::Match {
                scrutinee: si,
                variant: shape_id,
                arms,
            }),
            store(out, b.read(i), b.read(area)),
            if_(
                big,
                vec![store(s, b.read(i), ctor(shape_id, 0, vec![b.read(area)]))],
                vec![store(s, b.read(i), ctor(shape_id, 2, vec![]))],
            ),
            store(pts, b.read(i), moved),
            assign_to(
                LValue::Field {
                    base: Box::new(element(pts, b.read(i))),
                    field: 1,
                },
                bump_y,
            ),
            store(tags, b.read(i), tuple),
        ]
    });
    b.finish(body)
}

/// Block reduction through a shared array, with barriers, a strided loop and atomics.
pub fn reduce() -> Kernel {
    let mut b = KernelBuilder::new("reduce");
    let x = b.vector("x", Ty::F32);
    let total = b.vector("total", Ty::F32);
    let counts = b.vector("counts", Ty::I32);
    let tile = b.array("tile", Ty::F32, MemSpace::Shared, 256);
    let hist = b.array("hist", Ty::I32, MemSpace::Shared, 4);
    let t = b.var("t", Ty::I32);
    let g = b.var("g", Ty::I32);
    let s = b.mut_var("s", Ty::I32);
    let old = b.var("old", Ty::I32);
    let tv = b.read(t);
    let body = vec![
        declare_array(tile),
        declare_array(hist),
        let_(t, thread_idx()),
        let_(g, global_idx()),
        store(
            tile,
            tv.clone(),
            select(
                lt(b.read(g), b.length(x)),
                b.index(x, b.read(g)),
                lit_f32(0.0),
            ),
        ),
        if_(
            lt(tv.clone(), lit_i32(4)),
            vec![store(hist, tv.clone(), lit_i32(0))],
            vec![],
        ),
        barrier(),
        let_(
            s,
            bin(
                BinOp::LShr,
                geometry(Geometry::BlockDim(Axis::X)),
                lit_i32(1),
            ),
        ),
        st(StmtKind::While {
            cond: bin(BinOp::Gt, b.read(s), lit_i32(0)),
            body: vec![
                if_(
                    lt(tv.clone(), b.read(s)),
                    vec![store(
                        tile,
                        tv.clone(),
                        add(
                            b.index(tile, tv.clone()),
                            b.index(tile, add(tv.clone(), b.read(s))),
                        ),
                    )],
                    vec![],
                ),
                barrier(),
                assign(s, bin(BinOp::AShr, b.read(s), lit_i32(1))),
            ],
            unroll: None,
        }),
        expr_stmt(atomic(
            AtomicOp::Inc,
            vec![b.read(hist), bin(BinOp::BitAnd, tv.clone(), lit_i32(3))],
            Ty::I32,
        )),
        fence(false),
        barrier(),
        if_(
            bin(BinOp::Eq, tv.clone(), lit_i32(0)),
            vec![
                expr_stmt(atomic(
                    AtomicOp::Add,
                    vec![b.read(total), lit_i32(0), b.index(tile, lit_i32(0))],
                    Ty::F32,
                )),
                expr_stmt(atomic(
                    AtomicOp::Add,
                    vec![b.read(counts), lit_i32(0), b.index(hist, lit_i32(0))],
                    Ty::I32,
                )),
                expr_stmt(atomic(
                    AtomicOp::Sub,
                    vec![b.read(counts), lit_i32(1), lit_i32(2)],
                    Ty::I32,
                )),
                expr_stmt(atomic(
                    AtomicOp::Max,
                    vec![
                        b.read(counts),
                        lit_i32(2),
                        geometry(Geometry::BlockIdx(Axis::X)),
                    ],
                    Ty::I32,
                )),
                expr_stmt(atomic(
                    AtomicOp::Min,
                    vec![
                        b.read(counts),
                        lit_i32(3),
                        geometry(Geometry::BlockIdx(Axis::X)),
                    ],
                    Ty::I32,
                )),
                expr_stmt(atomic(
                    AtomicOp::Or,
                    vec![b.read(counts), lit_i32(4), lit_i32(1)],
                    Ty::I32,
                )),
                expr_stmt(atomic(
                    AtomicOp::And,
                    vec![b.read(counts), lit_i32(5), lit_i32(6)],
                    Ty::I32,
                )),
                expr_stmt(atomic(
                    AtomicOp::Xor,
                    vec![b.read(counts), lit_i32(6), lit_i32(5)],
                    Ty::I32,
                )),
                expr_stmt(atomic(
                    AtomicOp::Dec,
                    vec![b.read(counts), lit_i32(7)],
                    Ty::I32,
                )),
                let_(
                    old,
                    atomic(
                        AtomicOp::Cas,
                        vec![b.read(counts), lit_i32(8), lit_i32(0), lit_i32(1)],
                        Ty::I32,
                    ),
                ),
                expr_stmt(atomic(
                    AtomicOp::Exch,
                    vec![b.read(counts), lit_i32(9), b.read(old)],
                    Ty::I32,
                )),
                fence(true),
            ],
            vec![],
        ),
    ];
    b.finish(body)
}

/// int64 atomics (refused where the device or dialect has none).
pub fn atomics64() -> Kernel {
    let mut b = KernelBuilder::new("atomics64");
    let acc = b.vector("acc", Ty::I64);
    let i = b.var("i", Ty::I32);
    let w = b.var("w", Ty::I64);
    let atomic = |op, args: Vec<Expr>| intrinsic(Intrinsic::Atomic(op), args, Ty::I64);
    let wide = convert(b.read(i), Scalar::I64);
    let body = vec![
        let_(i, global_idx()),
        let_(w, mul(wide, lit_i64(3_000_000_000))),
        expr_stmt(atomic(
            AtomicOp::Add,
            vec![b.read(acc), lit_i32(0), b.read(w)],
        )),
        expr_stmt(atomic(
            AtomicOp::Max,
            vec![b.read(acc), lit_i32(1), b.read(w)],
        )),
        expr_stmt(atomic(
            AtomicOp::Min,
            vec![b.read(acc), lit_i32(2), b.read(w)],
        )),
        expr_stmt(atomic(
            AtomicOp::Sub,
            vec![b.read(acc), lit_i32(3), lit_i64(1)],
        )),
        expr_stmt(atomic(
            AtomicOp::Xor,
            vec![b.read(acc), lit_i32(4), b.read(w)],
        )),
        expr_stmt(atomic(AtomicOp::Inc, vec![b.read(acc), lit_i32(5)])),
        expr_stmt(atomic(
            AtomicOp::Cas,
            vec![b.read(acc), lit_i32(6), lit_i64(0), b.read(w)],
        )),
    ];
    b.finish(body)
}

/// Integer and bool operations, conversions, loops with unroll hints, a bool buffer.
pub fn bits() -> Kernel {
    let mut b = KernelBuilder::new("bits");
    let a = b.vector("a", Ty::I32);
    let flags = b.vector("flags", Ty::BOOL);
    let f = b.vector("f", Ty::F32);
    let on = b.param("on", Ty::BOOL);
    let body = guarded(&mut b, a, |b, i| {
        let x = b.var("x", Ty::I32);
        let acc = b.mut_var("acc", Ty::I32);
        let k = b.var("k", Ty::I32);
        let local = b.array("scratch", Ty::I32, MemSpace::Local, 4);
        let ai = b.index(a, b.read(i));
        let ops = [
            BinOp::LShr,
            BinOp::AShr,
            BinOp::Shl,
            BinOp::BitAnd,
            BinOp::BitOr,
            BinOp::BitXor,
            BinOp::Div,
            BinOp::Rem,
            BinOp::Sub,
        ];
        let mut stmts = vec![
            let_(x, ai),
            let_(acc, lit_i32(-2147483648)),
            declare_array(local),
        ];
        for (n, op) in ops.iter().enumerate() {
            let rhs = lit_i32(n as i32 + 1);
            stmts.push(assign(
                acc,
                bin(BinOp::BitXor, b.read(acc), bin(*op, b.read(x), rhs)),
            ));
        }
        stmts.push(for_loop(
            k,
            lit_i32(0),
            lit_i32(3),
            false,
            vec![store(local, b.read(k), mul(b.read(k), b.read(x)))],
            Some(4),
        ));
        let k2 = b.var("k", Ty::I32);
        stmts.push(for_loop(
            k2,
            lit_i32(3),
            lit_i32(0),
            true,
            vec![assign(acc, add(b.read(acc), b.index(local, b.read(k2))))],
            None,
        ));
        let fl = b.index(flags, b.read(i));
        let neg = un(UnOp::Neg, b.read(acc));
        let not = un(UnOp::Not, fl.clone());
        let bnot = un(UnOp::BitNot, b.read(x));
        stmts.push(assign(
            acc,
            add(
                b.read(acc),
                intrinsic(Intrinsic::Clz, vec![b.read(x)], Ty::I32),
            ),
        ));
        stmts.push(assign(
            acc,
            add(
                b.read(acc),
                intrinsic(Intrinsic::Popcount, vec![bnot], Ty::I32),
            ),
        ));
        stmts.push(assign(
            acc,
            intrinsic(
                Intrinsic::Max,
                vec![b.read(acc), intrinsic(Intrinsic::Abs, vec![neg], Ty::I32)],
                Ty::I32,
            ),
        ));
        stmts.push(assign(
            acc,
            intrinsic(
                Intrinsic::Min,
                vec![b.read(acc), lit_i32(1_000_000)],
                Ty::I32,
            ),
        ));
        let fi = b.index(f, b.read(i));
        stmts.push(assign(
            acc,
            add(
                b.read(acc),
                convert(bin(BinOp::Rem, fi.clone(), lit_f32(0.75)), Scalar::I32),
            ),
        ));
        stmts.push(store(f, b.read(i), convert(b.read(acc), Scalar::F32)));
        stmts.push(store(a, b.read(i), b.read(acc)));
        stmts.push(store(
            flags,
            b.read(i),
            bin(
                BinOp::Or,
                bin(BinOp::And, not, b.read(on)),
                bin(BinOp::Ne, b.read(x), lit_i32(7)),
            ),
        ));
        stmts.push(st(StmtKind::While {
            cond: bin(BinOp::Ge, b.read(acc), lit_i32(100)),
            body: vec![
                assign(acc, div(b.read(acc), lit_i32(2))),
                if_(
                    bin(BinOp::Eq, b.read(acc), lit_i32(101)),
                    vec![st(StmtKind::Break)],
                    vec![st(StmtKind::Continue)],
                ),
            ],
            unroll: Some(2),
        }));
        stmts
    });
    b.finish(body)
}

/// Helpers: one with scalars and a return, one taking a vector, one taking a shared array.
pub fn helpers() -> Kernel {
    let mut b = KernelBuilder::new("helpers");
    // clamp(x, lo, hi)
    let x = b.var("x", Ty::F32);
    let lo = b.var("lo", Ty::F32);
    let hi = b.var("hi", Ty::F32);
    let clamp_body = vec![
        if_(
            lt(b.read(x), b.read(lo)),
            vec![return_(Some(b.read(lo)))],
            vec![],
        ),
        if_(
            bin(BinOp::Gt, b.read(x), b.read(hi)),
            vec![return_(Some(b.read(hi)))],
            vec![],
        ),
        return_(Some(b.read(x))),
    ];
    let clamp = b.func("clamp", vec![x, lo, hi], Ty::F32, clamp_body);
    // sum_first(v, n): sum of v[0..min(n, length v))
    let v = b.var("v", vector_of(Ty::F32));
    let n = b.var("n", Ty::I32);
    let acc = b.mut_var("acc", Ty::F32);
    let j = b.var("j", Ty::I32);
    let len = b.length(v);
    let sum_body = vec![
        let_(acc, lit_f32(0.0)),
        for_(
            j,
            lit_i32(0),
            sub(
                intrinsic(Intrinsic::Min, vec![b.read(n), len], Ty::I32),
                lit_i32(1),
            ),
            vec![assign(acc, add(b.read(acc), b.index(v, b.read(j))))],
        ),
        return_(Some(b.read(acc))),
    ];
    let sum_first = b.func("sum_first", vec![v, n], Ty::F32, sum_body);
    // bump(arr, k): arr[k] += 1 (shared array), no result
    let arr = b.var("arr", array_of(Ty::I32, MemSpace::Shared, None));
    let k = b.var("k", Ty::I32);
    let bump_body = vec![if_(
        lt(b.read(k), b.length(arr)),
        vec![expr_stmt(atomic(
            AtomicOp::Add,
            vec![b.read(arr), b.read(k), lit_i32(1)],
            Ty::I32,
        ))],
        vec![],
    )];
    let bump = b.func("bump", vec![arr, k], Ty::Unit, bump_body);
    // lane(): thread index (needs the geometry on Metal)
    let lane = b.func("lane", vec![], Ty::I32, vec![return_(Some(thread_idx()))]);

    let data = b.vector("data", Ty::F32);
    let out = b.vector("out", Ty::F32);
    let seen = b.vector("seen", Ty::I32);
    let counts = b.array("counts", Ty::I32, MemSpace::Shared, 8);
    let t = b.var("t", Ty::I32);
    let body = vec![
        declare_array(counts),
        let_(t, b.call(lane, vec![])),
        if_(
            lt(b.read(t), lit_i32(8)),
            vec![store(counts, b.read(t), lit_i32(0))],
            vec![],
        ),
        barrier(),
        expr_stmt(b.call(
            bump,
            vec![b.read(counts), bin(BinOp::BitAnd, b.read(t), lit_i32(7))],
        )),
        barrier(),
        st(StmtKind::Block(guarded(&mut b, out, |b, i| {
            let s = b.call(sum_first, vec![b.read(data), lit_i32(4)]);
            let c = b.call(
                clamp,
                vec![
                    add(b.index(data, b.read(i)), s),
                    lit_f32(-1.0),
                    lit_f32(1.0),
                ],
            );
            vec![store(out, b.read(i), c)]
        }))),
        if_(
            lt(b.read(t), lit_i32(8)),
            vec![store(
                seen,
                add(
                    mul(geometry(Geometry::BlockIdx(Axis::X)), lit_i32(8)),
                    b.read(t),
                ),
                b.index(counts, b.read(t)),
            )],
            vec![],
        ),
    ];
    b.finish(body)
}

/// Every float32 math function.
pub fn math32() -> Kernel {
    math(Scalar::F32, "math32")
}

/// float64 and int64 arithmetic (refused by Metal and OpenCL devices without fp64).
pub fn math64() -> Kernel {
    math(Scalar::F64, "math64")
}

fn math(s: Scalar, name: &str) -> Kernel {
    let mut b = KernelBuilder::new(name);
    let ty = Ty::Scalar(s);
    let x = b.vector("x", ty.clone());
    let y = b.vector("y", ty.clone());
    let wide = b.vector("wide", Ty::I64);
    let body = guarded(&mut b, x, |b, i| {
        use MathFn::*;
        let acc = b.mut_var("acc", ty.clone());
        let xi = b.index(x, b.read(i));
        let lit = |v: f64| {
            if s == Scalar::F32 {
                lit_f32(v as f32)
            } else {
                lit_f64(v)
            }
        };
        // Arguments kept in each function's domain: a in [0, 1], a + 1 > 0.
        let a = intrinsic(Intrinsic::Math(Fabs), vec![xi.clone()], ty.clone());
        let mut stmts = vec![let_(acc, lit(0.0))];
        for f in [
            Sqrt, Rsqrt, Exp, Exp2, Expm1, Log, Log2, Log10, Log1p, Sin, Cos, Tan, Asin, Acos,
            Atan, Sinh, Cosh, Tanh, Floor, Ceil, Round, Trunc, Fabs,
        ] {
            let arg = match f {
                Log | Log2 | Log10 | Rsqrt => add(a.clone(), lit(1.0)),
                _ => a.clone(),
            };
            stmts.push(assign(
                acc,
                add(
                    b.read(acc),
                    intrinsic(Intrinsic::Math(f), vec![arg], ty.clone()),
                ),
            ));
        }
        for f in [Pow, Atan2, Hypot, Copysign, Fmin, Fmax] {
            let call = intrinsic(Intrinsic::Math(f), vec![a.clone(), lit(0.5)], ty.clone());
            stmts.push(assign(acc, add(b.read(acc), call)));
        }
        let fma = intrinsic(
            Intrinsic::Math(Fma),
            vec![a.clone(), lit(2.0), b.read(acc)],
            ty.clone(),
        );
        stmts.push(assign(acc, fma));
        stmts.push(assign(
            acc,
            intrinsic(Intrinsic::Max, vec![b.read(acc), lit(-1.0e30)], ty.clone()),
        ));
        stmts.push(assign(acc, bin(BinOp::Rem, b.read(acc), lit(1000.0))));
        stmts.push(store(y, b.read(i), b.read(acc)));
        if s == Scalar::F64 {
            let w = convert(b.read(acc), Scalar::I64);
            let shifted = bin(BinOp::LShr, mul(w, lit_i64(-7)), lit_i64(3));
            stmts.push(store(wide, b.read(i), shifted));
        } else {
            stmts.push(store(wide, b.read(i), convert(b.read(i), Scalar::I64)));
        }
        stmts
    });
    b.finish(body)
}

/// Warp operations (refused by OpenCL devices without subgroups).
pub fn warp() -> Kernel {
    let mut b = KernelBuilder::new("warp");
    let x = b.vector("x", Ty::F32);
    let mask = b.vector("mask", Ty::I32);
    let t = b.var("t", Ty::I32);
    let v = b.var("v", Ty::F32);
    let ok = b.var("ok", Ty::BOOL);
    let w = |op, args, ty| intrinsic(Intrinsic::Warp(op), args, ty);
    let body = vec![
        let_(t, global_idx()),
        let_(v, b.index(x, b.read(t))),
        let_(ok, bin(BinOp::Gt, b.read(v), lit_f32(0.0))),
        store(
            x,
            b.read(t),
            add(
                w(WarpOp::ShuffleDown, vec![b.read(v), lit_i32(1)], Ty::F32),
                add(
                    w(WarpOp::ShuffleXor, vec![b.read(v), lit_i32(2)], Ty::F32),
                    w(WarpOp::Shuffle, vec![b.read(v), lit_i32(0)], Ty::F32),
                ),
            ),
        ),
        store(
            mask,
            b.read(t),
            w(WarpOp::Ballot, vec![b.read(ok)], Ty::I32),
        ),
        if_(
            bin(
                BinOp::And,
                w(WarpOp::VoteAll, vec![b.read(ok)], Ty::BOOL),
                w(WarpOp::VoteAny, vec![b.read(ok)], Ty::BOOL),
            ),
            vec![store(
                mask,
                b.read(t),
                add(
                    w(WarpOp::ShuffleUp, vec![b.read(t), lit_i32(1)], Ty::I32),
                    geometry(Geometry::WarpSize),
                ),
            )],
            vec![],
        ),
    ];
    b.finish(body)
}

/// `for` loops ending at the int32 extremes (the scalars `lo` and `hi`, min_int and max_int
/// in the tests) with `continue` and `break`, which the surface language lacks: `continue`
/// must still step the index, and the step must not wrap past the bound. Per thread `i`,
/// with `m = i mod 5`:
/// - `a.(i) = 100 * t + s`, for `k = hi - m to hi`: `t` iterations, `s` of them odd `k`
///   (the even ones `continue` before counting);
/// - `b.(i)` the same for `k = lo + m downto lo`, counting even `k`;
/// - `c.(i)`: the sum of the even `k < i mod 7` (a `break` at `i mod 7` in
///   `for k = 0 to hi`, `continue` on odd `k`), plus nothing from two empty loops, plus
///   20000 per iteration of `for k = lo + 2 downto lo` from an inner `while` whose `continue`
///   is its own, plus 100000 for each such `k` but `lo + 1`.
pub fn loops() -> Kernel {
    let mut b = KernelBuilder::new("loops");
    let a = b.vector("a", Ty::I32);
    let bv = b.vector("b", Ty::I32);
    let c = b.vector("c", Ty::I32);
    let lo = b.param("lo", Ty::I32);
    let hi = b.param("hi", Ty::I32);
    let body = guarded(&mut b, a, |b, i| {
        let m = b.var("m", Ty::I32);
        let (s, t) = (b.mut_var("s", Ty::I32), b.mut_var("t", Ty::I32));
        let (s2, t2) = (b.mut_var("s", Ty::I32), b.mut_var("t", Ty::I32));
        let s3 = b.mut_var("s", Ty::I32);
        let w = b.mut_var("w", Ty::I32);
        let k: Vec<VarId> = (0..6).map(|_| b.var("k", Ty::I32)).collect();
        let bump = |b: &KernelBuilder, v: VarId, e: Expr| assign(v, add(b.read(v), e));
        let odd = |b: &KernelBuilder, k: VarId| bin(BinOp::BitAnd, b.read(k), lit_i32(1));
        let cont = || vec![st(StmtKind::Continue)];
        vec![
            let_(m, bin(BinOp::Rem, b.read(i), lit_i32(5))),
            let_(s, lit_i32(0)),
            let_(t, lit_i32(0)),
            let_(s2, lit_i32(0)),
            let_(t2, lit_i32(0)),
            let_(s3, lit_i32(0)),
            for_loop(
                k[0],
                sub(b.read(hi), b.read(m)),
                b.read(hi),
                false,
                vec![
                    bump(b, t, lit_i32(1)),
                    if_(bin(BinOp::Eq, odd(b, k[0]), lit_i32(0)), cont(), vec![]),
                    bump(b, s, lit_i32(1)),
                ],
                Some(4),
            ),
            store(a, b.read(i), add(mul(b.read(t), lit_i32(100)), b.read(s))),
            for_loop(
                k[1],
                add(b.read(lo), b.read(m)),
                b.read(lo),
                true,
                vec![
                    bump(b, t2, lit_i32(1)),
                    if_(bin(BinOp::Ne, odd(b, k[1]), lit_i32(0)), cont(), vec![]),
                    bump(b, s2, lit_i32(1)),
                ],
                Some(1),
            ),
            store(
                bv,
                b.read(i),
                add(mul(b.read(t2), lit_i32(100)), b.read(s2)),
            ),
            for_loop(
                k[2],
                lit_i32(0),
                b.read(hi),
                false,
                vec![
                    if_(
                        bin(
                            BinOp::Eq,
                            b.read(k[2]),
                            bin(BinOp::Rem, b.read(i), lit_i32(7)),
                        ),
                        vec![st(StmtKind::Break)],
                        vec![],
                    ),
                    if_(bin(BinOp::Eq, odd(b, k[2]), lit_i32(1)), cont(), vec![]),
                    bump(b, s3, b.read(k[2])),
                ],
                None,
            ),
            for_loop(
                k[3],
                b.read(hi),
                b.read(lo),
                false,
                vec![bump(b, s3, lit_i32(1000)), st(StmtKind::Continue)],
                None,
            ),
            for_loop(
                k[4],
                b.read(lo),
                b.read(hi),
                true,
                vec![bump(b, s3, lit_i32(1000)), st(StmtKind::Continue)],
                None,
            ),
            for_loop(
                k[5],
                add(b.read(lo), lit_i32(2)),
                b.read(lo),
                true,
                vec![
                    let_(w, lit_i32(0)),
                    st(StmtKind::While {
                        cond: lt(b.read(w), lit_i32(3)),
                        body: vec![
                            bump(b, w, lit_i32(1)),
                            if_(bin(BinOp::Eq, b.read(w), lit_i32(2)), cont(), vec![]),
                            bump(b, s3, lit_i32(10000)),
                        ],
                        unroll: None,
                    }),
                    if_(
                        bin(BinOp::Eq, b.read(k[5]), add(b.read(lo), lit_i32(1))),
                        cont(),
                        vec![],
                    ),
                    bump(b, s3, lit_i32(100000)),
                ],
                None,
            ),
            store(c, b.read(i), b.read(s3)),
        ]
    });
    b.finish(body)
}

/// Every hand-built kernel by name.
pub fn all() -> Vec<Kernel> {
    vec![
        saxpy(),
        shapes(),
        reduce(),
        atomics64(),
        bits(),
        helpers(),
        math32(),
        math64(),
        warp(),
        loops(),
    ]
}
