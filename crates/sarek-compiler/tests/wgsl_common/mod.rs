//! Hand-built IR kernels exercising the WGSL generator, shared by the compiler tests
//! (`wgsl_*.rs`) and the wgpu runtime tests (through `#[path]`).
#![allow(dead_code)]

use sarek_compiler::diag::Span;
use sarek_compiler::intrinsics::{AtomicOp, Axis, Geometry, Intrinsic, MathFn, WarpOp};
use sarek_compiler::ir::*;
use sarek_compiler::types::{BinOp, Literal, MemSpace, Scalar, UnOp};

pub struct B {
    pub k: Kernel,
}

pub fn st(kind: StmtKind) -> Stmt {
    Stmt {
        kind,
        span: Span::DUMMY,
    }
}

pub fn lit_i(v: i32) -> Expr {
    Expr::i32(v)
}
pub fn lit_f(v: f32) -> Expr {
    Expr::lit(Literal::F32(v))
}
pub fn lit_b(v: bool) -> Expr {
    Expr::lit(Literal::Bool(v))
}
pub fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
    let ty = if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) {
        Ty::BOOL
    } else {
        l.ty.clone()
    };
    Expr::new(
        ExprKind::Binary {
            op,
            lhs: Box::new(l),
            rhs: Box::new(r),
        },
        ty,
    )
}
pub fn un(op: UnOp, x: Expr) -> Expr {
    let ty = x.ty.clone();
    Expr::new(
        ExprKind::Unary {
            op,
            operand: Box::new(x),
        },
        ty,
    )
}
pub fn gid() -> Expr {
    Expr::new(
        ExprKind::Intrinsic {
            op: Intrinsic::Geometry(Geometry::GlobalIdx(Axis::X)),
            args: vec![],
        },
        Ty::I32,
    )
}
pub fn geo(g: Geometry) -> Expr {
    Expr::new(
        ExprKind::Intrinsic {
            op: Intrinsic::Geometry(g),
            args: vec![],
        },
        Ty::I32,
    )
}
pub fn intr(op: Intrinsic, args: Vec<Expr>, ty: Ty) -> Expr {
    Expr::new(ExprKind::Intrinsic { op, args }, ty)
}
pub fn set(place: LValue, value: Expr) -> Stmt {
    st(StmtKind::Assign { place, value })
}
pub fn store(base: VarId, index: Expr, value: Expr) -> Stmt {
    set(
        LValue::Index {
            base,
            index: Box::new(index),
        },
        value,
    )
}
pub fn if_(cond: Expr, then_block: Block, else_block: Block) -> Stmt {
    st(StmtKind::If {
        cond,
        then_block,
        else_block,
    })
}

impl B {
    pub fn new(name: &str) -> B {
        B {
            k: Kernel {
                name: name.into(),
                span: Span::DUMMY,
                vars: vec![],
                params: vec![],
                body: vec![],
                records: vec![],
                variants: vec![],
                functions: vec![],
            },
        }
    }
    pub fn var(&mut self, name: &str, ty: Ty, mutable: bool) -> VarId {
        self.k.vars.push(VarInfo {
            name: name.into(),
            ty,
            mutable,
            span: Span::DUMMY,
        });
        VarId(self.k.vars.len() as u32 - 1)
    }
    pub fn param(&mut self, name: &str, ty: Ty) -> VarId {
        let v = self.var(name, ty, false);
        self.k.params.push(v);
        v
    }
    pub fn vec(&mut self, name: &str, elem: Ty) -> VarId {
        self.param(name, Ty::Vector(Box::new(elem)))
    }
    pub fn r(&self, v: VarId) -> Expr {
        Expr::new(ExprKind::Var(v), self.k.var(v).ty.clone())
    }
    pub fn at(&self, v: VarId, i: Expr) -> Expr {
        let elem = self.k.var(v).ty.elem().unwrap().clone();
        Expr::new(
            ExprKind::Index {
                base: v,
                index: Box::new(i),
            },
            elem,
        )
    }
    pub fn let_(&mut self, name: &str, init: Expr, mutable: bool) -> (VarId, Stmt) {
        let v = self.var(name, init.ty.clone(), mutable);
        (
            v,
            st(StmtKind::Let {
                var: v,
                init: Some(init),
            }),
        )
    }
    pub fn length(&self, v: VarId) -> Expr {
        intr(Intrinsic::Length, vec![self.r(v)], Ty::I32)
    }
    /// `if gid < length v then body`
    pub fn guarded(&self, v: VarId, body: Block) -> Stmt {
        if_(bin(BinOp::Lt, gid(), self.length(v)), body, vec![])
    }
    pub fn finish(self) -> Kernel {
        self.k
    }
}

/// saxpy: y.(i) <- a *. x.(i) +. y.(i)
pub fn saxpy() -> Kernel {
    let mut b = B::new("saxpy");
    let x = b.vec("x", Ty::F32);
    let y = b.vec("y", Ty::F32);
    let a = b.param("a", Ty::F32);
    let n = b.param("n", Ty::I32);
    let body = store(
        y,
        gid(),
        bin(
            BinOp::Add,
            bin(BinOp::Mul, b.r(a), b.at(x, gid())),
            b.at(y, gid()),
        ),
    );
    b.k.body = vec![if_(bin(BinOp::Lt, gid(), b.r(n)), vec![body], vec![])];
    b.finish()
}

/// Locals spelled like the escape rule's problem families, each holding a distinct value,
/// all summed into `out.(i)`: 1 + 2 + ... + 8 = 36 only if none of them collide.
pub fn escape_families() -> Kernel {
    let mut b = B::new("families");
    let out = b.vec("out", Ty::I32);
    let mut body = vec![];
    let mut sum: Option<Expr> = None;
    for (k, name) in [
        "__i", "sarek__i", "_", "sarek_", "if", "ifv", "sarek_if", "params",
    ]
    .iter()
    .enumerate()
    {
        let (v, s) = b.let_(name, lit_i(k as i32 + 1), false);
        body.push(s);
        let r = b.r(v);
        sum = Some(match sum {
            None => r,
            Some(acc) => bin(BinOp::Add, acc, r),
        });
    }
    body.push(store(out, gid(), sum.unwrap()));
    b.k.body = vec![b.guarded(out, body)];
    b.finish()
}

/// The seed's length-field residual: a vector named `if` and a scalar named
/// `sarek_if_length`. out.(i) <- length if * 1000 + sarek_if_length + if.(i)
pub fn length_residual() -> Kernel {
    let mut b = B::new("residual");
    let v = b.vec("if", Ty::I32);
    let s = b.param("sarek_if_length", Ty::I32);
    let out = b.vec("out", Ty::I32);
    let e = bin(
        BinOp::Add,
        bin(
            BinOp::Add,
            bin(BinOp::Mul, b.length(v), lit_i(1000)),
            b.r(s),
        ),
        b.at(v, gid()),
    );
    b.k.body = vec![b.guarded(
        out,
        vec![if_(
            bin(BinOp::Lt, gid(), b.length(v)),
            vec![store(out, gid(), e)],
            vec![],
        )],
    )];
    b.finish()
}

/// A mutable local shadowing the scalar parameter `width`:
/// `let mut width = width in width := width * 2 + 1; out.(i) <- width`.
pub fn shadowing_local() -> Kernel {
    let mut b = B::new("shadow");
    let out = b.vec("out", Ty::I32);
    let width = b.param("width", Ty::I32);
    let (w2, s) = b.let_("width", b.r(width), true);
    let upd = set(
        LValue::Var(w2),
        bin(BinOp::Add, bin(BinOp::Mul, b.r(w2), lit_i(2)), lit_i(1)),
    );
    b.k.body = vec![b.guarded(out, vec![s, upd, store(out, gid(), b.r(w2))])];
    b.finish()
}

/// Records, tuples and variants through storage buffers (bool fields included).
/// `type pt = { x : float32; ok : bool }`, `type shape = Circle of float32 | Rect of float32 * float32 | Empty`
/// `area.(i) <- (match s.(i) with Circle r -> 3 r r | Rect (w, h) -> w h | Empty -> 0) + (if p.(i).ok then p.(i).x else 0)`
/// and `p.(i).ok <- not p.(i).ok`; `t.(i) <- (t.(i)._1, t.(i)._0)` on a `(int32 * int32) vector`.
pub fn aggregates() -> Kernel {
    let mut b = B::new("aggregates");
    b.k.records.push(Record {
        name: "pt".into(),
        fields: vec![
            Field {
                name: "x".into(),
                ty: Ty::F32,
            },
            Field {
                name: "ok".into(),
                ty: Ty::BOOL,
            },
        ],
        is_tuple: false,
    });
    b.k.records.push(Record {
        name: "_tup_i32_i32".into(),
        fields: vec![
            Field {
                name: "_0".into(),
                ty: Ty::I32,
            },
            Field {
                name: "_1".into(),
                ty: Ty::I32,
            },
        ],
        is_tuple: true,
    });
    b.k.variants.push(Variant {
        name: "shape".into(),
        ctors: vec![
            Ctor {
                name: "Circle".into(),
                fields: vec![Ty::F32],
            },
            Ctor {
                name: "Rect".into(),
                fields: vec![Ty::F32, Ty::F32],
            },
            Ctor {
                name: "Empty".into(),
                fields: vec![],
            },
        ],
    });
    let pt = Ty::Record(RecordId(0));
    let tup = Ty::Record(RecordId(1));
    let shape = Ty::Variant(VariantId(0));
    let s = b.vec("s", shape.clone());
    let p = b.vec("p", pt.clone());
    let t = b.vec("t", tup.clone());
    let area = b.vec("area", Ty::F32);
    let res = b.var("res", Ty::F32, true);
    let r = b.var("r", Ty::F32, false);
    let w = b.var("w", Ty::F32, false);
    let h = b.var("h", Ty::F32, false);
    let m = st(StmtKind::Match {
        scrutinee: b.at(s, gid()),
        variant: VariantId(0),
        arms: vec![
            MatchArm {
                ctor: Some(0),
                bindings: vec![Some(r)],
                body: vec![set(
                    LValue::Var(res),
                    bin(BinOp::Mul, bin(BinOp::Mul, lit_f(3.0), b.r(r)), b.r(r)),
                )],
            },
            MatchArm {
                ctor: Some(1),
                bindings: vec![Some(w), Some(h)],
                body: vec![set(LValue::Var(res), bin(BinOp::Mul, b.r(w), b.r(h)))],
            },
            MatchArm {
                ctor: None,
                bindings: vec![],
                body: vec![set(LValue::Var(res), lit_f(0.0))],
            },
        ],
    });
    let field = |e: Expr, f: u32, ty: Ty| {
        Expr::new(
            ExprKind::Field {
                base: Box::new(e),
                field: f,
            },
            ty,
        )
    };
    let pi = b.at(p, gid());
    let bonus = Expr::new(
        ExprKind::Select {
            cond: Box::new(field(pi.clone(), 1, Ty::BOOL)),
            then_value: Box::new(field(pi.clone(), 0, Ty::F32)),
            else_value: Box::new(lit_f(0.0)),
        },
        Ty::F32,
    );
    let ti = b.at(t, gid());
    let swapped = Expr::new(
        ExprKind::Record {
            record: RecordId(1),
            fields: vec![field(ti.clone(), 1, Ty::I32), field(ti, 0, Ty::I32)],
        },
        tup,
    );
    let flip = set(
        LValue::Field {
            base: Box::new(LValue::Index {
                base: p,
                index: Box::new(gid()),
            }),
            field: 1,
        },
        un(UnOp::Not, field(pi, 1, Ty::BOOL)),
    );
    b.k.body = vec![b.guarded(
        area,
        vec![
            st(StmtKind::Let {
                var: res,
                init: None,
            }),
            m,
            store(area, gid(), bin(BinOp::Add, b.r(res), bonus)),
            flip,
            store(t, gid(), swapped),
        ],
    )];
    b.finish()
}

/// Variant construction and a by-value record parameter:
/// `out.(i) <- match (if i mod 2 = 0 then Circle (float i) else Empty) with Circle r -> r +. q.x | _ -> q.y`
/// where `q : pt2` is a kernel parameter `{ x; y }`.
pub fn ctor_and_record_param() -> Kernel {
    let mut b = B::new("ctors");
    b.k.records.push(Record {
        name: "pt2".into(),
        fields: vec![
            Field {
                name: "x".into(),
                ty: Ty::F32,
            },
            Field {
                name: "y".into(),
                ty: Ty::F32,
            },
        ],
        is_tuple: false,
    });
    b.k.variants.push(Variant {
        name: "opt".into(),
        ctors: vec![
            Ctor {
                name: "Circle".into(),
                fields: vec![Ty::F32],
            },
            Ctor {
                name: "Empty".into(),
                fields: vec![],
            },
        ],
    });
    let out = b.vec("out", Ty::F32);
    let q = b.param("q", Ty::Record(RecordId(0)));
    let o = b.var("o", Ty::Variant(VariantId(0)), true);
    let r = b.var("r", Ty::F32, false);
    let fi = intr(Intrinsic::Convert, vec![gid()], Ty::F32);
    let mk = |c: u32, f: Vec<Expr>| {
        Expr::new(
            ExprKind::Ctor {
                variant: VariantId(0),
                ctor: c,
                fields: f,
            },
            Ty::Variant(VariantId(0)),
        )
    };
    let field = |e: Expr, f: u32| {
        Expr::new(
            ExprKind::Field {
                base: Box::new(e),
                field: f,
            },
            Ty::F32,
        )
    };
    let body = vec![
        st(StmtKind::Let { var: o, init: None }),
        if_(
            bin(BinOp::Eq, bin(BinOp::Rem, gid(), lit_i(2)), lit_i(0)),
            vec![set(LValue::Var(o), mk(0, vec![fi]))],
            vec![set(LValue::Var(o), mk(1, vec![]))],
        ),
        st(StmtKind::Match {
            scrutinee: b.r(o),
            variant: VariantId(0),
            arms: vec![
                MatchArm {
                    ctor: Some(0),
                    bindings: vec![Some(r)],
                    body: vec![store(out, gid(), bin(BinOp::Add, b.r(r), field(b.r(q), 0)))],
                },
                MatchArm {
                    ctor: None,
                    bindings: vec![],
                    body: vec![store(out, gid(), field(b.r(q), 1))],
                },
            ],
        }),
    ];
    b.k.body = vec![b.guarded(out, body)];
    b.finish()
}

/// Atomics: `ignore (atomic_add hist (v.(i) mod 4) 1)`, float32 `atomic_add fsum 0 v.(i) *. 0.5`
/// (values are small integers so the float sum is exact), `atomic_max mx 0 v.(i)`, and a CAS
/// that only thread 0 wins: `atomic_cas flag 0 0 (i + 1)`.
pub fn atomics() -> Kernel {
    let mut b = B::new("atomics");
    let v = b.vec("v", Ty::I32);
    let hist = b.vec("hist", Ty::I32);
    let fsum = b.vec("fsum", Ty::F32);
    let mx = b.vec("mx", Ty::I32);
    let flag = b.vec("flag", Ty::I32);
    let at = |op, args, ty| intr(Intrinsic::Atomic(op), args, ty);
    let vi = b.at(v, gid());
    let fv = bin(
        BinOp::Mul,
        intr(Intrinsic::Convert, vec![vi.clone()], Ty::F32),
        lit_f(0.5),
    );
    let body = vec![
        st(StmtKind::Expr(at(
            AtomicOp::Add,
            vec![b.r(hist), bin(BinOp::Rem, vi.clone(), lit_i(4)), lit_i(1)],
            Ty::I32,
        ))),
        st(StmtKind::Expr(at(
            AtomicOp::Add,
            vec![b.r(fsum), lit_i(0), fv],
            Ty::F32,
        ))),
        st(StmtKind::Expr(at(
            AtomicOp::Max,
            vec![b.r(mx), lit_i(0), vi],
            Ty::I32,
        ))),
        if_(
            bin(BinOp::Eq, gid(), lit_i(0)),
            vec![st(StmtKind::Expr(at(
                AtomicOp::Cas,
                vec![b.r(flag), lit_i(0), lit_i(0), lit_i(7)],
                Ty::I32,
            )))],
            vec![],
        ),
        // A plain read of an atomic vector becomes atomicLoad.
        if_(
            bin(BinOp::Eq, gid(), lit_i(1)),
            vec![store(flag, lit_i(1), b.at(flag, lit_i(1)))],
            vec![],
        ),
    ];
    b.k.body = vec![b.guarded(v, body)];
    b.finish()
}

/// Shared memory and a barrier: block-reversal through a workgroup tile of 64.
/// `tile.(t) <- v.(i); barrier; out.(i) <- tile.(63 - t)` (launched with block 64).
pub fn shared_reverse() -> Kernel {
    let mut b = B::new("reverse");
    let v = b.vec("v", Ty::F32);
    let out = b.vec("out", Ty::F32);
    let tile = b.var(
        "tile",
        Ty::Array {
            elem: Box::new(Ty::F32),
            space: MemSpace::Shared,
            size: Some(64),
        },
        false,
    );
    let t = geo(Geometry::ThreadIdx(Axis::X));
    b.k.body = vec![
        st(StmtKind::Array { var: tile }),
        store(tile, t.clone(), b.at(v, gid())),
        st(StmtKind::Barrier),
        store(out, gid(), b.at(tile, bin(BinOp::Sub, lit_i(63), t))),
    ];
    b.finish()
}

/// Helpers taking vectors, called with two different buffers (two specialisations), a helper
/// taking a local array by pointer, a mutable helper parameter, a for loop and a while loop.
/// `let sum_to (a : int32 vector) (n : int32) = let mut s = 0 in for k = 0 to n do s := s + a.(k) done; s`
/// `let bump (a : int32 array) (k : int32) = a.(k) <- a.(k) + 1`
/// `let count (n : int32) = let mut n = n in let mut c = 0 in while n > 0 do n := n / 2; c := c + 1 done; c`
/// out.(i) <- sum_to x i * 10000 + sum_to y 2 + (loc.(1) after bump loc 1 twice) * 100 + count i
pub fn helpers() -> Kernel {
    let mut b = B::new("helpers");
    let x = b.vec("x", Ty::I32);
    let y = b.vec("y", Ty::I32);
    let out = b.vec("out", Ty::I32);
    // sum_to
    let a = b.var("a", Ty::Vector(Box::new(Ty::I32)), false);
    let n = b.var("n", Ty::I32, false);
    let s = b.var("s", Ty::I32, true);
    let k = b.var("k", Ty::I32, false);
    let sum_to = Function {
        name: "sum_to".into(),
        span: Span::DUMMY,
        params: vec![a, n],
        ret: Ty::I32,
        body: vec![
            st(StmtKind::Let {
                var: s,
                init: Some(lit_i(0)),
            }),
            st(StmtKind::For {
                var: k,
                start: lit_i(0),
                end: b.r(n),
                downto: false,
                body: vec![set(
                    LValue::Var(s),
                    bin(BinOp::Add, b.r(s), b.at(a, b.r(k))),
                )],
                unroll: None,
            }),
            st(StmtKind::Return(Some(b.r(s)))),
        ],
    };
    // bump
    let arr = b.var(
        "a",
        Ty::Array {
            elem: Box::new(Ty::I32),
            space: MemSpace::Local,
            size: None,
        },
        false,
    );
    let kk = b.var("k", Ty::I32, false);
    let bump = Function {
        name: "bump".into(),
        span: Span::DUMMY,
        params: vec![arr, kk],
        ret: Ty::Unit,
        body: vec![store(
            arr,
            b.r(kk),
            bin(BinOp::Add, b.at(arr, b.r(kk)), lit_i(1)),
        )],
    };
    // count
    let cn = b.var("n", Ty::I32, true);
    let c = b.var("c", Ty::I32, true);
    let count = Function {
        name: "count".into(),
        span: Span::DUMMY,
        params: vec![cn],
        ret: Ty::I32,
        body: vec![
            st(StmtKind::Let {
                var: c,
                init: Some(lit_i(0)),
            }),
            st(StmtKind::While {
                cond: bin(BinOp::Gt, b.r(cn), lit_i(0)),
                body: vec![
                    set(LValue::Var(cn), bin(BinOp::Div, b.r(cn), lit_i(2))),
                    set(LValue::Var(c), bin(BinOp::Add, b.r(c), lit_i(1))),
                ],
                unroll: None,
            }),
            st(StmtKind::Return(Some(b.r(c)))),
        ],
    };
    b.k.functions = vec![sum_to, bump, count];
    let call = |f: u32, args: Vec<Expr>, ty: Ty| {
        Expr::new(
            ExprKind::Call {
                func: FuncId(f),
                args,
            },
            ty,
        )
    };
    let loc = b.var(
        "loc",
        Ty::Array {
            elem: Box::new(Ty::I32),
            space: MemSpace::Local,
            size: Some(4),
        },
        false,
    );
    let loc_ty = b.k.var(loc).ty.clone();
    let loc_ref = Expr::new(ExprKind::Var(loc), loc_ty);
    let total = bin(
        BinOp::Add,
        bin(
            BinOp::Add,
            bin(
                BinOp::Mul,
                call(0, vec![b.r(x), gid()], Ty::I32),
                lit_i(10000),
            ),
            call(0, vec![b.r(y), lit_i(2)], Ty::I32),
        ),
        bin(
            BinOp::Add,
            bin(BinOp::Mul, b.at(loc, lit_i(1)), lit_i(100)),
            call(2, vec![gid()], Ty::I32),
        ),
    );
    let body = vec![
        st(StmtKind::Array { var: loc }),
        st(StmtKind::For {
            var: b.var("j", Ty::I32, false),
            start: lit_i(3),
            end: lit_i(0),
            downto: true,
            body: vec![],
            unroll: None,
        }),
        store(loc, lit_i(1), lit_i(0)),
        st(StmtKind::Expr(call(
            1,
            vec![loc_ref.clone(), lit_i(1)],
            Ty::Unit,
        ))),
        st(StmtKind::Expr(call(1, vec![loc_ref, lit_i(1)], Ty::Unit))),
        store(out, gid(), total),
    ];
    // Loop index of the downto loop must be fresh per loop: fix its var after creation.
    b.k.body = vec![b.guarded(out, body)];
    b.finish()
}

/// Float `mod`, logical and arithmetic shifts, select, math helpers:
/// f.(i) <- fmod(a.(i), 0.75) ; s.(i) <- (v.(i) lsr 28) + (v.(i) asr 28) * 16 ; r.(i) <- round a.(i)*4
pub fn arith() -> Kernel {
    let mut b = B::new("arith");
    let a = b.vec("a", Ty::F32);
    let v = b.vec("v", Ty::I32);
    let f = b.vec("f", Ty::F32);
    let s = b.vec("s", Ty::I32);
    let r = b.vec("r", Ty::F32);
    let ai = b.at(a, gid());
    let vi = b.at(v, gid());
    let round = intr(
        Intrinsic::Math(MathFn::Round),
        vec![bin(BinOp::Mul, ai.clone(), lit_f(4.0))],
        Ty::F32,
    );
    b.k.body = vec![b.guarded(
        a,
        vec![
            store(f, gid(), bin(BinOp::Rem, ai, lit_f(0.75))),
            store(
                s,
                gid(),
                bin(
                    BinOp::Add,
                    bin(BinOp::LShr, vi.clone(), lit_i(28)),
                    bin(BinOp::Mul, bin(BinOp::AShr, vi, lit_i(28)), lit_i(16)),
                ),
            ),
            store(r, gid(), round),
        ],
    )];
    b.finish()
}

/// Warp operations: out.(i) <- warp_shuffle_xor v.(i) 1 + (if warp_vote_any (v.(i) > 5) then 1 else 0).
pub fn warp() -> Kernel {
    let mut b = B::new("warp");
    let v = b.vec("v", Ty::I32);
    let out = b.vec("out", Ty::I32);
    let vi = b.at(v, gid());
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
    let e = bin(
        BinOp::Add,
        sh,
        Expr::new(
            ExprKind::Select {
                cond: Box::new(any),
                then_value: Box::new(lit_i(1)),
                else_value: Box::new(lit_i(0)),
            },
            Ty::I32,
        ),
    );
    b.k.body = vec![store(out, gid(), e)];
    b.finish()
}

/// float64 and int64 uses (refused by WGSL).
pub fn wide() -> Kernel {
    let mut b = B::new("wide");
    let d = b.vec("d", Ty::F64);
    let (_, s) = b.let_("big", Expr::lit(Literal::I64(1)), false);
    b.k.body = vec![s, store(d, lit_i(0), Expr::lit(Literal::F64(1.0)))];
    b.finish()
}

/// Whole-vector equality (the typer refuses it; WGSL keeps a backstop).
pub fn vector_eq() -> Kernel {
    let mut b = B::new("veq");
    let x = b.vec("x", Ty::I32);
    let y = b.vec("y", Ty::I32);
    let (_, s) = b.let_("same", bin(BinOp::Eq, b.r(x), b.r(y)), false);
    b.k.body = vec![s];
    b.finish()
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
    let mut b = B::new("int_div");
    let a = b.vec("a", Ty::I32);
    let d = b.vec("d", Ty::I32);
    let q = b.vec("q", Ty::I32);
    let r = b.vec("r", Ty::I32);
    let (ai, di) = (b.at(a, gid()), b.at(d, gid()));
    b.k.body = vec![b.guarded(
        a,
        vec![
            store(q, gid(), bin(BinOp::Div, ai.clone(), di.clone())),
            store(r, gid(), bin(BinOp::Rem, ai, di)),
        ],
    )];
    b.finish()
}

/// Fences: one reached by the whole workgroup (top level, and under a condition on a scalar
/// parameter), one under thread-dependent control flow.
/// `memory_fence_block (); if n > 0 then memory_fence_device (); if gid = 0 then (out.(0) <- 1; memory_fence_device ())`
pub fn fences() -> Kernel {
    let mut b = B::new("fences");
    let out = b.vec("out", Ty::I32);
    let n = b.param("n", Ty::I32);
    b.k.body = vec![
        st(StmtKind::Fence { device: false }),
        if_(
            bin(BinOp::Gt, b.r(n), lit_i(0)),
            vec![st(StmtKind::Fence { device: true })],
            vec![],
        ),
        if_(
            bin(BinOp::Eq, gid(), lit_i(0)),
            vec![
                store(out, lit_i(0), lit_i(1)),
                st(StmtKind::Fence { device: true }),
            ],
            vec![],
        ),
    ];
    b.finish()
}

/// Atomics on a shared array through a helper that takes it as a parameter:
/// `let bump (c : int32 array) (k : int32) = ignore (atomic_add c k 1)`;
/// `let%shared counts = 4 in (if t < 4 then counts.(t) <- 0); barrier; bump counts (v.(i) mod 4); barrier;
///  if t < 4 then out.(block * 4 + t) <- counts.(t)`
pub fn shared_atomics() -> Kernel {
    let mut b = B::new("shared_atomics");
    let v = b.vec("v", Ty::I32);
    let out = b.vec("out", Ty::I32);
    let arr_ty = Ty::Array {
        elem: Box::new(Ty::I32),
        space: MemSpace::Shared,
        size: None,
    };
    let c = b.var("c", arr_ty, false);
    let k = b.var("k", Ty::I32, false);
    let bump = Function {
        name: "bump".into(),
        span: Span::DUMMY,
        params: vec![c, k],
        ret: Ty::Unit,
        body: vec![st(StmtKind::Expr(intr(
            Intrinsic::Atomic(AtomicOp::Add),
            vec![b.r(c), b.r(k), lit_i(1)],
            Ty::I32,
        )))],
    };
    b.k.functions = vec![bump];
    let counts = b.var(
        "counts",
        Ty::Array {
            elem: Box::new(Ty::I32),
            space: MemSpace::Shared,
            size: Some(4),
        },
        false,
    );
    let t = geo(Geometry::ThreadIdx(Axis::X));
    let blk = geo(Geometry::BlockIdx(Axis::X));
    let counts_ref = b.r(counts);
    b.k.body = vec![
        st(StmtKind::Array { var: counts }),
        if_(
            bin(BinOp::Lt, t.clone(), lit_i(4)),
            vec![store(counts, t.clone(), lit_i(0))],
            vec![],
        ),
        st(StmtKind::Barrier),
        st(StmtKind::Expr(Expr::new(
            ExprKind::Call {
                func: FuncId(0),
                args: vec![counts_ref, bin(BinOp::Rem, b.at(v, gid()), lit_i(4))],
            },
            Ty::Unit,
        ))),
        st(StmtKind::Barrier),
        if_(
            bin(BinOp::Lt, t.clone(), lit_i(4)),
            vec![store(
                out,
                bin(BinOp::Add, bin(BinOp::Mul, blk, lit_i(4)), t.clone()),
                b.at(counts, t),
            )],
            vec![],
        ),
    ];
    b.finish()
}

/// A variant with a bool payload through storage: `type flag = On of bool * float32 | Off`;
/// `f.(i) <- (match f.(i) with On (b, x) -> On (not b, x *. 2.0) | Off -> On (true, 1.0))`.
pub fn bool_variant() -> Kernel {
    let mut b = B::new("bool_variant");
    b.k.variants.push(Variant {
        name: "flag".into(),
        ctors: vec![
            Ctor {
                name: "On".into(),
                fields: vec![Ty::BOOL, Ty::F32],
            },
            Ctor {
                name: "Off".into(),
                fields: vec![],
            },
        ],
    });
    let vt = Ty::Variant(VariantId(0));
    let f = b.vec("f", vt.clone());
    let bb = b.var("b", Ty::BOOL, false);
    let x = b.var("x", Ty::F32, false);
    let mk = |fields: Vec<Expr>| {
        Expr::new(
            ExprKind::Ctor {
                variant: VariantId(0),
                ctor: 0,
                fields,
            },
            vt.clone(),
        )
    };
    let on = mk(vec![
        un(UnOp::Not, b.r(bb)),
        bin(BinOp::Mul, b.r(x), lit_f(2.0)),
    ]);
    let fresh = mk(vec![lit_b(true), lit_f(1.0)]);
    b.k.body = vec![b.guarded(
        f,
        vec![st(StmtKind::Match {
            scrutinee: b.at(f, gid()),
            variant: VariantId(0),
            arms: vec![
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
            ],
        })],
    )];
    b.finish()
}
