//! Hand-built IR kernels exercising the WGSL generator, used by the compiler's WGSL tests
//! and the wgpu runtime tests. They are written with `sarek_compiler::ir::build`; its
//! constructors are re-exported here (some under shorter names) for the tests that use them.
#![allow(unused_imports)]

use sarek_compiler::intrinsics::{AtomicOp, Axis, Geometry, Intrinsic, MathFn, WarpOp};
pub use sarek_compiler::ir::build::{
    assign_to as set, geometry as geo, global_idx as gid, intrinsic as intr, lit_bool as lit_b,
    lit_f32 as lit_f, lit_i32 as lit_i, *,
};
use sarek_compiler::ir::*;
use sarek_compiler::types::{BinOp, Literal, MemSpace, Scalar, UnOp};

/// `if gid < length v then body`
pub fn guarded(b: &KernelBuilder, v: VarId, body: Block) -> Stmt {
    if_(lt(gid(), b.length(v)), body, vec![])
}

/// saxpy: y.(i) <- a *. x.(i) +. y.(i)
pub fn saxpy() -> Kernel {
    let mut b = KernelBuilder::new("saxpy");
    let x = b.vector("x", Ty::F32);
    let y = b.vector("y", Ty::F32);
    let a = b.param("a", Ty::F32);
    let n = b.param("n", Ty::I32);
    let body = store(
        y,
        gid(),
        add(mul(b.read(a), b.index(x, gid())), b.index(y, gid())),
    );
    let guard = if_(lt(gid(), b.read(n)), vec![body], vec![]);
    b.finish(vec![guard])
}

/// Locals spelled like the escape rule's problem families, each holding a distinct value,
/// all summed into `out.(i)`: 1 + 2 + ... + 8 = 36 only if none of them collide.
pub fn escape_families() -> Kernel {
    let mut b = KernelBuilder::new("families");
    let out = b.vector("out", Ty::I32);
    let mut body = vec![];
    let mut sum: Option<Expr> = None;
    for (k, name) in [
        "__i", "sarek__i", "_", "sarek_", "if", "ifv", "sarek_if", "params",
    ]
    .iter()
    .enumerate()
    {
        let (v, s) = b.bind(name, lit_i(k as i32 + 1), false);
        body.push(s);
        let r = b.read(v);
        sum = Some(match sum {
            None => r,
            Some(acc) => add(acc, r),
        });
    }
    body.push(store(out, gid(), sum.unwrap()));
    let body = guarded(&b, out, body);
    b.finish(vec![body])
}

/// The seed's length-field residual: a vector named `if` and a scalar named
/// `sarek_if_length`. out.(i) <- length if * 1000 + sarek_if_length + if.(i)
pub fn length_residual() -> Kernel {
    let mut b = KernelBuilder::new("residual");
    let v = b.vector("if", Ty::I32);
    let s = b.param("sarek_if_length", Ty::I32);
    let out = b.vector("out", Ty::I32);
    let e = add(
        add(mul(b.length(v), lit_i(1000)), b.read(s)),
        b.index(v, gid()),
    );
    let inner = if_(lt(gid(), b.length(v)), vec![store(out, gid(), e)], vec![]);
    let body = guarded(&b, out, vec![inner]);
    b.finish(vec![body])
}

/// A mutable local shadowing the scalar parameter `width`:
/// `let mut width = width in width := width * 2 + 1; out.(i) <- width`.
pub fn shadowing_local() -> Kernel {
    let mut b = KernelBuilder::new("shadow");
    let out = b.vector("out", Ty::I32);
    let width = b.param("width", Ty::I32);
    let (w2, s) = b.bind("width", b.read(width), true);
    let upd = assign(w2, add(mul(b.read(w2), lit_i(2)), lit_i(1)));
    let body = guarded(&b, out, vec![s, upd, store(out, gid(), b.read(w2))]);
    b.finish(vec![body])
}

/// Records, tuples and variants through storage buffers (bool fields included).
/// `type pt = { x : float32; ok : bool }`, `type shape = Circle of float32 | Rect of float32 * float32 | Empty`
/// `area.(i) <- (match s.(i) with Circle r -> 3 r r | Rect (w, h) -> w h | Empty -> 0) + (if p.(i).ok then p.(i).x else 0)`
/// and `p.(i).ok <- not p.(i).ok`; `t.(i) <- (t.(i)._1, t.(i)._0)` on a `(int32 * int32) vector`.
pub fn aggregates() -> Kernel {
    let mut b = KernelBuilder::new("aggregates");
    let pt = b.record("pt", &[("x", Ty::F32), ("ok", Ty::BOOL)]);
    let tup = b.record("_tup_i32_i32", &[("_0", Ty::I32), ("_1", Ty::I32)]);
    let shape = b.variant(
        "shape",
        &[
            ("Circle", vec![Ty::F32]),
            ("Rect", vec![Ty::F32, Ty::F32]),
            ("Empty", vec![]),
        ],
    );
    let s = b.vector("s", Ty::Variant(shape));
    let p = b.vector("p", Ty::Record(pt));
    let t = b.vector("t", Ty::Record(tup));
    let area = b.vector("area", Ty::F32);
    let res = b.mut_var("res", Ty::F32);
    let r = b.var("r", Ty::F32);
    let w = b.var("w", Ty::F32);
    let h = b.var("h", Ty::F32);
    let m = st(StmtKind::Match {
        scrutinee: b.index(s, gid()),
        variant: shape,
        arms: vec![
            MatchArm {
                ctor: Some(0),
                bindings: vec![Some(r)],
                body: vec![assign(res, mul(mul(lit_f(3.0), b.read(r)), b.read(r)))],
            },
            MatchArm {
                ctor: Some(1),
                bindings: vec![Some(w), Some(h)],
                body: vec![assign(res, mul(b.read(w), b.read(h)))],
            },
            MatchArm {
                ctor: None,
                bindings: vec![],
                body: vec![assign(res, lit_f(0.0))],
            },
        ],
    });
    let pi = b.index(p, gid());
    let bonus = select(b.field(pi.clone(), 1), b.field(pi.clone(), 0), lit_f(0.0));
    let ti = b.index(t, gid());
    let swapped = record_value(tup, vec![b.field(ti.clone(), 1), b.field(ti, 0)]);
    let flip = set(
        LValue::Field {
            base: Box::new(element(p, gid())),
            field: 1,
        },
        un(UnOp::Not, b.field(pi, 1)),
    );
    let body = guarded(
        &b,
        area,
        vec![
            let_uninit(res),
            m,
            store(area, gid(), add(b.read(res), bonus)),
            flip,
            store(t, gid(), swapped),
        ],
    );
    b.finish(vec![body])
}

/// Variant construction and a by-value record parameter:
/// `out.(i) <- match (if i mod 2 = 0 then Circle (float i) else Empty) with Circle r -> r +. q.x | _ -> q.y`
/// where `q : pt2` is a kernel parameter `{ x; y }`.
pub fn ctor_and_record_param() -> Kernel {
    let mut b = KernelBuilder::new("ctors");
    let pt2 = b.record("pt2", &[("x", Ty::F32), ("y", Ty::F32)]);
    let opt = b.variant("opt", &[("Circle", vec![Ty::F32]), ("Empty", vec![])]);
    let out = b.vector("out", Ty::F32);
    let q = b.param("q", Ty::Record(pt2));
    let o = b.mut_var("o", Ty::Variant(opt));
    let r = b.var("r", Ty::F32);
    let fi = convert(gid(), Scalar::F32);
    let body = vec![
        let_uninit(o),
        if_(
            bin(BinOp::Eq, bin(BinOp::Rem, gid(), lit_i(2)), lit_i(0)),
            vec![assign(o, ctor(opt, 0, vec![fi]))],
            vec![assign(o, ctor(opt, 1, vec![]))],
        ),
        st(StmtKind::Match {
            scrutinee: b.read(o),
            variant: opt,
            arms: vec![
                MatchArm {
                    ctor: Some(0),
                    bindings: vec![Some(r)],
                    body: vec![store(out, gid(), add(b.read(r), b.field(b.read(q), 0)))],
                },
                MatchArm {
                    ctor: None,
                    bindings: vec![],
                    body: vec![store(out, gid(), b.field(b.read(q), 1))],
                },
            ],
        }),
    ];
    let body = guarded(&b, out, body);
    b.finish(vec![body])
}

/// Atomics: `ignore (atomic_add hist (v.(i) mod 4) 1)`, float32 `atomic_add fsum 0 v.(i) *. 0.5`
/// (values are small integers so the float sum is exact), `atomic_max mx 0 v.(i)`, and a CAS
/// that only thread 0 wins: `atomic_cas flag 0 0 (i + 1)`.
pub fn atomics() -> Kernel {
    let mut b = KernelBuilder::new("atomics");
    let v = b.vector("v", Ty::I32);
    let hist = b.vector("hist", Ty::I32);
    let fsum = b.vector("fsum", Ty::F32);
    let mx = b.vector("mx", Ty::I32);
    let flag = b.vector("flag", Ty::I32);
    let vi = b.index(v, gid());
    let fv = mul(convert(vi.clone(), Scalar::F32), lit_f(0.5));
    let body = vec![
        expr_stmt(atomic(
            AtomicOp::Add,
            vec![
                b.read(hist),
                bin(BinOp::Rem, vi.clone(), lit_i(4)),
                lit_i(1),
            ],
            Ty::I32,
        )),
        expr_stmt(atomic(
            AtomicOp::Add,
            vec![b.read(fsum), lit_i(0), fv],
            Ty::F32,
        )),
        expr_stmt(atomic(
            AtomicOp::Max,
            vec![b.read(mx), lit_i(0), vi],
            Ty::I32,
        )),
        if_(
            bin(BinOp::Eq, gid(), lit_i(0)),
            vec![expr_stmt(atomic(
                AtomicOp::Cas,
                vec![b.read(flag), lit_i(0), lit_i(0), lit_i(7)],
                Ty::I32,
            ))],
            vec![],
        ),
        // A plain read of an atomic vector becomes atomicLoad.
        if_(
            bin(BinOp::Eq, gid(), lit_i(1)),
            vec![store(flag, lit_i(1), b.index(flag, lit_i(1)))],
            vec![],
        ),
    ];
    let body = guarded(&b, v, body);
    b.finish(vec![body])
}

/// Shared memory and a barrier: block-reversal through a workgroup tile of 64.
/// `tile.(t) <- v.(i); barrier; out.(i) <- tile.(63 - t)` (launched with block 64).
pub fn shared_reverse() -> Kernel {
    let mut b = KernelBuilder::new("reverse");
    let v = b.vector("v", Ty::F32);
    let out = b.vector("out", Ty::F32);
    let tile = b.array("tile", Ty::F32, MemSpace::Shared, 64);
    let t = thread_idx();
    let body = vec![
        declare_array(tile),
        store(tile, t.clone(), b.index(v, gid())),
        barrier(),
        store(out, gid(), b.index(tile, sub(lit_i(63), t))),
    ];
    b.finish(body)
}

/// Helpers taking vectors, called with two different buffers (two specialisations), a helper
/// taking a local array by pointer, a mutable helper parameter, a for loop and a while loop.
/// `let sum_to (a : int32 vector) (n : int32) = let mut s = 0 in for k = 0 to n do s := s + a.(k) done; s`
/// `let bump (a : int32 array) (k : int32) = a.(k) <- a.(k) + 1`
/// `let count (n : int32) = let mut n = n in let mut c = 0 in while n > 0 do n := n / 2; c := c + 1 done; c`
/// out.(i) <- sum_to x i * 10000 + sum_to y 2 + (loc.(1) after bump loc 1 twice) * 100 + count i
pub fn helpers() -> Kernel {
    let mut b = KernelBuilder::new("helpers");
    let x = b.vector("x", Ty::I32);
    let y = b.vector("y", Ty::I32);
    let out = b.vector("out", Ty::I32);
    // sum_to
    let a = b.var("a", vector_of(Ty::I32));
    let n = b.var("n", Ty::I32);
    let s = b.mut_var("s", Ty::I32);
    let k = b.var("k", Ty::I32);
    let sum_to_body = vec![
        let_(s, lit_i(0)),
        for_(
            k,
            lit_i(0),
            b.read(n),
            vec![assign(s, add(b.read(s), b.index(a, b.read(k))))],
        ),
        return_(Some(b.read(s))),
    ];
    let sum_to = b.func("sum_to", vec![a, n], Ty::I32, sum_to_body);
    // bump
    let arr = b.var("a", array_of(Ty::I32, MemSpace::Local, None));
    let kk = b.var("k", Ty::I32);
    let bump_body = vec![store(
        arr,
        b.read(kk),
        add(b.index(arr, b.read(kk)), lit_i(1)),
    )];
    let bump = b.func("bump", vec![arr, kk], Ty::Unit, bump_body);
    // count
    let cn = b.mut_var("n", Ty::I32);
    let c = b.mut_var("c", Ty::I32);
    let count_body = vec![
        let_(c, lit_i(0)),
        while_(
            bin(BinOp::Gt, b.read(cn), lit_i(0)),
            vec![
                assign(cn, div(b.read(cn), lit_i(2))),
                assign(c, add(b.read(c), lit_i(1))),
            ],
        ),
        return_(Some(b.read(c))),
    ];
    let count = b.func("count", vec![cn], Ty::I32, count_body);
    let loc = b.array("loc", Ty::I32, MemSpace::Local, 4);
    let total = add(
        add(
            mul(b.call(sum_to, vec![b.read(x), gid()]), lit_i(10000)),
            b.call(sum_to, vec![b.read(y), lit_i(2)]),
        ),
        add(
            mul(b.index(loc, lit_i(1)), lit_i(100)),
            b.call(count, vec![gid()]),
        ),
    );
    let j = b.var("j", Ty::I32);
    let body = vec![
        declare_array(loc),
        for_loop(j, lit_i(3), lit_i(0), true, vec![], None),
        store(loc, lit_i(1), lit_i(0)),
        expr_stmt(b.call(bump, vec![b.read(loc), lit_i(1)])),
        expr_stmt(b.call(bump, vec![b.read(loc), lit_i(1)])),
        store(out, gid(), total),
    ];
    let body = guarded(&b, out, body);
    b.finish(vec![body])
}

/// Float `mod`, logical and arithmetic shifts, select, math helpers:
/// f.(i) <- fmod(a.(i), 0.75) ; s.(i) <- (v.(i) lsr 28) + (v.(i) asr 28) * 16 ; r.(i) <- round a.(i)*4
pub fn arith() -> Kernel {
    let mut b = KernelBuilder::new("arith");
    let a = b.vector("a", Ty::F32);
    let v = b.vector("v", Ty::I32);
    let f = b.vector("f", Ty::F32);
    let s = b.vector("s", Ty::I32);
    let r = b.vector("r", Ty::F32);
    let ai = b.index(a, gid());
    let vi = b.index(v, gid());
    let round = intr(
        Intrinsic::Math(MathFn::Round),
        vec![mul(ai.clone(), lit_f(4.0))],
        Ty::F32,
    );
    let shifts = add(
        bin(BinOp::LShr, vi.clone(), lit_i(28)),
        mul(bin(BinOp::AShr, vi, lit_i(28)), lit_i(16)),
    );
    let body = guarded(
        &b,
        a,
        vec![
            store(f, gid(), bin(BinOp::Rem, ai, lit_f(0.75))),
            store(s, gid(), shifts),
            store(r, gid(), round),
        ],
    );
    b.finish(vec![body])
}

/// Warp operations: out.(i) <- warp_shuffle_xor v.(i) 1 + (if warp_vote_any (v.(i) > 5) then 1 else 0).
pub fn warp() -> Kernel {
    let mut b = KernelBuilder::new("warp");
    let v = b.vector("v", Ty::I32);
    let out = b.vector("out", Ty::I32);
    let vi = b.index(v, gid());
    let sh = intr(
        Intrinsic::Warp(WarpOp::ShuffleXor),
        vec![vi.clone(), lit_i(1)],
        Ty::I32,
    );
    let any = intr(
        Intrinsic::Warp(WarpOp::VoteAny),
        vec![bin(BinOp::Gt, vi, lit_i(5))],
        Ty::BOOL,
    );
    let e = add(sh, select(any, lit_i(1), lit_i(0)));
    b.finish(vec![store(out, gid(), e)])
}

/// float64 and int64 uses (refused by WGSL).
pub fn wide() -> Kernel {
    let mut b = KernelBuilder::new("wide");
    let d = b.vector("d", Ty::F64);
    let (_, s) = b.bind("big", lit_i64(1), false);
    b.finish(vec![s, store(d, lit_i(0), lit_f64(1.0))])
}

/// Whole-vector equality (the typer refuses it; WGSL keeps a backstop).
pub fn vector_eq() -> Kernel {
    let mut b = KernelBuilder::new("veq");
    let x = b.vector("x", Ty::I32);
    let y = b.vector("y", Ty::I32);
    let (_, s) = b.bind("same", bin(BinOp::Eq, b.read(x), b.read(y)), false);
    b.finish(vec![s])
}

/// Every hand-built kernel that WGSL can express.
pub fn expressible() -> Vec<Kernel> {
    vec![
        saxpy(),
        escape_families(),
        length_residual(),
        shadowing_local(),
        aggregates(),
        ctor_and_record_param(),
        atomics(),
        shared_reverse(),
        helpers(),
        arith(),
        warp(),
        int_div(),
        fences(),
        shared_atomics(),
        bool_variant(),
    ]
}

pub fn scalar_i32(s: Scalar) -> bool {
    s == Scalar::I32
}

/// Integer division and remainder on data: `q.(i) <- a.(i) / b.(i); r.(i) <- a.(i) mod b.(i)`.
pub fn int_div() -> Kernel {
    let mut b = KernelBuilder::new("int_div");
    let a = b.vector("a", Ty::I32);
    let d = b.vector("d", Ty::I32);
    let q = b.vector("q", Ty::I32);
    let r = b.vector("r", Ty::I32);
    let (ai, di) = (b.index(a, gid()), b.index(d, gid()));
    let body = guarded(
        &b,
        a,
        vec![
            store(q, gid(), div(ai.clone(), di.clone())),
            store(r, gid(), bin(BinOp::Rem, ai, di)),
        ],
    );
    b.finish(vec![body])
}

/// Fences: one reached by the whole workgroup (top level, and under a condition on a scalar
/// parameter), one under thread-dependent control flow.
/// `memory_fence_block (); if n > 0 then memory_fence_device (); if gid = 0 then (out.(0) <- 1; memory_fence_device ())`
pub fn fences() -> Kernel {
    let mut b = KernelBuilder::new("fences");
    let out = b.vector("out", Ty::I32);
    let n = b.param("n", Ty::I32);
    let body = vec![
        fence(false),
        if_(
            bin(BinOp::Gt, b.read(n), lit_i(0)),
            vec![fence(true)],
            vec![],
        ),
        if_(
            bin(BinOp::Eq, gid(), lit_i(0)),
            vec![store(out, lit_i(0), lit_i(1)), fence(true)],
            vec![],
        ),
    ];
    b.finish(body)
}

/// Atomics on a shared array through a helper that takes it as a parameter:
/// `let bump (c : int32 array) (k : int32) = ignore (atomic_add c k 1)`;
/// `let%shared counts = 4 in (if t < 4 then counts.(t) <- 0); barrier; bump counts (v.(i) mod 4); barrier;
///  if t < 4 then out.(block * 4 + t) <- counts.(t)`
pub fn shared_atomics() -> Kernel {
    let mut b = KernelBuilder::new("shared_atomics");
    let v = b.vector("v", Ty::I32);
    let out = b.vector("out", Ty::I32);
    let c = b.var("c", array_of(Ty::I32, MemSpace::Shared, None));
    let k = b.var("k", Ty::I32);
    let bump_body = vec![expr_stmt(atomic(
        AtomicOp::Add,
        vec![b.read(c), b.read(k), lit_i(1)],
        Ty::I32,
    ))];
    let bump = b.func("bump", vec![c, k], Ty::Unit, bump_body);
    let counts = b.array("counts", Ty::I32, MemSpace::Shared, 4);
    let t = thread_idx();
    let blk = geo(Geometry::BlockIdx(Axis::X));
    let body = vec![
        declare_array(counts),
        if_(
            lt(t.clone(), lit_i(4)),
            vec![store(counts, t.clone(), lit_i(0))],
            vec![],
        ),
        barrier(),
        expr_stmt(b.call(
            bump,
            vec![b.read(counts), bin(BinOp::Rem, b.index(v, gid()), lit_i(4))],
        )),
        barrier(),
        if_(
            lt(t.clone(), lit_i(4)),
            vec![store(
                out,
                add(mul(blk, lit_i(4)), t.clone()),
                b.index(counts, t),
            )],
            vec![],
        ),
    ];
    b.finish(body)
}

/// A variant with a bool payload through storage: `type flag = On of bool * float32 | Off`;
/// `f.(i) <- (match f.(i) with On (b, x) -> On (not b, x *. 2.0) | Off -> On (true, 1.0))`.
pub fn bool_variant() -> Kernel {
    let mut b = KernelBuilder::new("bool_variant");
    let flag = b.variant("flag", &[("On", vec![Ty::BOOL, Ty::F32]), ("Off", vec![])]);
    let f = b.vector("f", Ty::Variant(flag));
    let bb = b.var("b", Ty::BOOL);
    let x = b.var("x", Ty::F32);
    let on = ctor(
        flag,
        0,
        vec![un(UnOp::Not, b.read(bb)), mul(b.read(x), lit_f(2.0))],
    );
    let fresh = ctor(flag, 0, vec![lit_b(true), lit_f(1.0)]);
    let arms = vec![
        MatchArm {
            ctor: Some(0),
            bindings: vec![Some(bb), Some(x)],
            body: vec![store(f, gid(), on)],
        },
        MatchArm {
            ctor: Some(1),
            bindings: vec![],
            body: vec![store(f, gid(), fresh)],
        },
    ];
    let m = st(StmtKind::Match {
        scrutinee: b.index(f, gid()),
        variant: flag,
        arms,
    });
    let body = guarded(&b, f, vec![m]);
    b.finish(vec![body])
}
