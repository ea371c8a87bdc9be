//! Hand-built IR kernels covering the C-family generator's features (records, tuples,
//! variants, helpers with vector and shared-array parameters, shared memory, barriers,
//! every atomic, warp operations, math, int64/float64, bit operations, bool buffers).
//! They complement the `.sarek` corpus with constructs written directly in the IR.
#![allow(dead_code)]

use sarek_compiler::diag::Span;
use sarek_compiler::intrinsics::{AtomicOp, Axis, Geometry, Intrinsic, MathFn, WarpOp};
use sarek_compiler::ir::*;
use sarek_compiler::types::{BinOp, Literal, MemSpace, Scalar, UnOp};

#[derive(Default)]
struct B {
    vars: Vec<VarInfo>,
    records: Vec<Record>,
    variants: Vec<Variant>,
    functions: Vec<Function>,
}

fn sp() -> Span {
    Span::DUMMY
}

impl B {
    fn var(&mut self, name: &str, ty: Ty) -> VarId {
        self.vars.push(VarInfo {
            name: name.into(),
            ty,
            mutable: false,
            span: sp(),
        });
        VarId(self.vars.len() as u32 - 1)
    }
    fn mvar(&mut self, name: &str, ty: Ty) -> VarId {
        let v = self.var(name, ty);
        self.vars[v.0 as usize].mutable = true;
        v
    }
    fn v(&self, id: VarId) -> Expr {
        Expr::new(ExprKind::Var(id), self.vars[id.0 as usize].ty.clone())
    }
    fn idx(&self, base: VarId, i: Expr) -> Expr {
        let ty = self.vars[base.0 as usize].ty.elem().unwrap().clone();
        Expr::new(
            ExprKind::Index {
                base,
                index: Box::new(i),
            },
            ty,
        )
    }
    fn kernel(self, name: &str, params: Vec<VarId>, body: Block) -> Kernel {
        Kernel {
            name: name.into(),
            span: sp(),
            vars: self.vars,
            params,
            body,
            records: self.records,
            variants: self.variants,
            functions: self.functions,
        }
    }
}

fn st(kind: StmtKind) -> Stmt {
    Stmt { kind, span: sp() }
}
fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    let ty = if op.is_comparison() {
        Ty::BOOL
    } else {
        a.ty.clone()
    };
    Expr::new(
        ExprKind::Binary {
            op,
            lhs: Box::new(a),
            rhs: Box::new(b),
        },
        ty,
    )
}
fn intr(op: Intrinsic, args: Vec<Expr>, ty: Ty) -> Expr {
    Expr::new(ExprKind::Intrinsic { op, args }, ty)
}
fn gid() -> Expr {
    intr(
        Intrinsic::Geometry(Geometry::GlobalIdx(Axis::X)),
        vec![],
        Ty::I32,
    )
}
fn geo(g: Geometry) -> Expr {
    intr(Intrinsic::Geometry(g), vec![], Ty::I32)
}
fn f32(v: f32) -> Expr {
    Expr::lit(Literal::F32(v))
}
fn i32(v: i32) -> Expr {
    Expr::i32(v)
}
fn let_(var: VarId, e: Expr) -> Stmt {
    st(StmtKind::Let { var, init: Some(e) })
}
fn set(base: VarId, i: Expr, e: Expr) -> Stmt {
    st(StmtKind::Assign {
        place: LValue::Index {
            base,
            index: Box::new(i),
        },
        value: e,
    })
}
fn assign(var: VarId, e: Expr) -> Stmt {
    st(StmtKind::Assign {
        place: LValue::Var(var),
        value: e,
    })
}
fn if_(c: Expr, t: Block, e: Block) -> Stmt {
    st(StmtKind::If {
        cond: c,
        then_block: t,
        else_block: e,
    })
}
fn vec_of(t: Ty) -> Ty {
    Ty::Vector(Box::new(t))
}
/// `let i = global_thread_id in if i < length v then body`.
fn guarded(b: &mut B, v: VarId, body: impl FnOnce(&mut B, VarId) -> Block) -> Block {
    let i = b.var("i", Ty::I32);
    let len = intr(Intrinsic::Length, vec![b.v(v)], Ty::I32);
    let inner = body(b, i);
    vec![
        let_(i, gid()),
        if_(bin(BinOp::Lt, b.v(i), len), inner, vec![]),
    ]
}

/// y[i] = a * x[i] + y[i]
pub fn saxpy() -> Kernel {
    let mut b = B::default();
    let x = b.var("x", vec_of(Ty::F32));
    let y = b.var("y", vec_of(Ty::F32));
    let a = b.var("a", Ty::F32);
    let n = b.var("n", Ty::I32);
    let i = b.var("i", Ty::I32);
    let body = vec![
        let_(i, gid()),
        if_(
            bin(BinOp::Lt, b.v(i), b.v(n)),
            vec![set(
                y,
                b.v(i),
                bin(
                    BinOp::Add,
                    bin(BinOp::Mul, b.v(a), b.idx(x, b.v(i))),
                    b.idx(y, b.v(i)),
                ),
            )],
            vec![],
        ),
    ];
    b.kernel("saxpy", vec![x, y, a, n], body)
}

/// Records, a variant with a match and constructors, a tuple vector.
pub fn shapes() -> Kernel {
    let mut b = B::default();
    b.records.push(Record {
        name: "point".into(),
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
    b.records.push(Record {
        name: "_tup_i32_bool".into(),
        fields: vec![
            Field {
                name: "_0".into(),
                ty: Ty::I32,
            },
            Field {
                name: "_1".into(),
                ty: Ty::BOOL,
            },
        ],
        is_tuple: true,
    });
    b.variants.push(Variant {
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
            Ctor {
                name: "At".into(),
                fields: vec![Ty::Record(RecordId(0))],
            },
        ],
    });
    let shape = Ty::Variant(VariantId(0));
    let point = Ty::Record(RecordId(0));
    let tup = Ty::Record(RecordId(1));
    let s = b.var("s", vec_of(shape.clone()));
    let out = b.var("out", vec_of(Ty::F32));
    let pts = b.var("pts", vec_of(point.clone()));
    let tags = b.var("tags", vec_of(tup.clone()));
    let origin = b.var("origin", point.clone());
    let body = guarded(&mut b, out, |b, i| {
        let r = b.var("r", Ty::F32);
        let w = b.var("w", Ty::F32);
        let h = b.var("h", Ty::F32);
        let p = b.var("p", point.clone());
        let area = b.mvar("area", Ty::F32);
        let si = b.idx(s, b.v(i));
        let arms = vec![
            MatchArm {
                ctor: Some(0),
                bindings: vec![Some(r)],
                body: vec![assign(
                    area,
                    bin(BinOp::Mul, bin(BinOp::Mul, f32(2.5), b.v(r)), b.v(r)),
                )],
            },
            MatchArm {
                ctor: Some(1),
                bindings: vec![Some(w), Some(h)],
                body: vec![assign(area, bin(BinOp::Mul, b.v(w), b.v(h)))],
            },
            MatchArm {
                ctor: Some(3),
                bindings: vec![Some(p)],
                body: vec![assign(
                    area,
                    Expr::new(
                        ExprKind::Field {
                            base: Box::new(b.v(p)),
                            field: 0,
                        },
                        Ty::F32,
                    ),
                )],
            },
            MatchArm {
                ctor: None,
                bindings: vec![],
                body: vec![assign(area, f32(0.0))],
            },
        ];
        let field = |e: Expr, f: u32| {
            Expr::new(
                ExprKind::Field {
                    base: Box::new(e),
                    field: f,
                },
                Ty::F32,
            )
        };
        let big = bin(BinOp::Gt, b.v(area), f32(1.0));
        let ctor_circle = Expr::new(
            ExprKind::Ctor {
                variant: VariantId(0),
                ctor: 0,
                fields: vec![b.v(area)],
            },
            shape.clone(),
        );
        let ctor_empty = Expr::new(
            ExprKind::Ctor {
                variant: VariantId(0),
                ctor: 2,
                fields: vec![],
            },
            shape.clone(),
        );
        let moved = Expr::new(
            ExprKind::Record {
                record: RecordId(0),
                fields: vec![
                    bin(
                        BinOp::Add,
                        field(b.idx(pts, b.v(i)), 0),
                        field(b.v(origin), 0),
                    ),
                    bin(
                        BinOp::Sub,
                        field(b.idx(pts, b.v(i)), 1),
                        field(b.v(origin), 1),
                    ),
                ],
            },
            point.clone(),
        );
        let tag_of = Expr::new(ExprKind::Tag(Box::new(b.idx(s, b.v(i)))), Ty::I32);
        let tuple = Expr::new(
            ExprKind::Record {
                record: RecordId(1),
                fields: vec![tag_of, big.clone()],
            },
            tup.clone(),
        );
        vec![
            st(StmtKind::Let {
                var: area,
                init: None,
            }),
            st(StmtKind::Match {
                scrutinee: si,
                variant: VariantId(0),
                arms,
            }),
            set(out, b.v(i), b.v(area)),
            if_(
                big.clone(),
                vec![set(s, b.v(i), ctor_circle)],
                vec![set(s, b.v(i), ctor_empty)],
            ),
            set(pts, b.v(i), moved),
            st(StmtKind::Assign {
                place: LValue::Field {
                    base: Box::new(LValue::Index {
                        base: pts,
                        index: Box::new(b.v(i)),
                    }),
                    field: 1,
                },
                value: bin(
                    BinOp::Add,
                    field(b.idx(pts, b.v(i)), 1),
                    Expr::new(
                        ExprKind::Payload {
                            value: Box::new(b.idx(s, b.v(i))),
                            ctor: 0,
                            field: 0,
                        },
                        Ty::F32,
                    ),
                ),
            }),
            set(tags, b.v(i), tuple),
        ]
    });
    b.kernel("shapes", vec![s, out, pts, tags, origin], body)
}

/// Block reduction through a shared array, with barriers, a strided loop and atomics.
pub fn reduce() -> Kernel {
    let mut b = B::default();
    let x = b.var("x", vec_of(Ty::F32));
    let total = b.var("total", vec_of(Ty::F32));
    let counts = b.var("counts", vec_of(Ty::I32));
    let tile = b.var(
        "tile",
        Ty::Array {
            elem: Box::new(Ty::F32),
            space: MemSpace::Shared,
            size: Some(256),
        },
    );
    let hist = b.var(
        "hist",
        Ty::Array {
            elem: Box::new(Ty::I32),
            space: MemSpace::Shared,
            size: Some(4),
        },
    );
    let t = b.var("t", Ty::I32);
    let g = b.var("g", Ty::I32);
    let s = b.mvar("s", Ty::I32);
    let old = b.var("old", Ty::I32);
    let tv = b.v(t);
    let atomic = |op, args: Vec<Expr>, ty: Ty| intr(Intrinsic::Atomic(op), args, ty);
    let body = vec![
        st(StmtKind::Array { var: tile }),
        st(StmtKind::Array { var: hist }),
        let_(t, geo(Geometry::ThreadIdx(Axis::X))),
        let_(g, gid()),
        set(
            tile,
            tv.clone(),
            st_select(
                bin(
                    BinOp::Lt,
                    b.v(g),
                    intr(Intrinsic::Length, vec![b.v(x)], Ty::I32),
                ),
                b.idx(x, b.v(g)),
                f32(0.0),
            ),
        ),
        if_(
            bin(BinOp::Lt, tv.clone(), i32(4)),
            vec![set(hist, tv.clone(), i32(0))],
            vec![],
        ),
        st(StmtKind::Barrier),
        let_(
            s,
            bin(BinOp::LShr, geo(Geometry::BlockDim(Axis::X)), i32(1)),
        ),
        st(StmtKind::While {
            cond: bin(BinOp::Gt, b.v(s), i32(0)),
            body: vec![
                if_(
                    bin(BinOp::Lt, tv.clone(), b.v(s)),
                    vec![set(
                        tile,
                        tv.clone(),
                        bin(
                            BinOp::Add,
                            b.idx(tile, tv.clone()),
                            b.idx(tile, bin(BinOp::Add, tv.clone(), b.v(s))),
                        ),
                    )],
                    vec![],
                ),
                st(StmtKind::Barrier),
                assign(s, bin(BinOp::AShr, b.v(s), i32(1))),
            ],
            unroll: None,
        }),
        st(StmtKind::Expr(atomic(
            AtomicOp::Inc,
            vec![b.v(hist), bin(BinOp::BitAnd, tv.clone(), i32(3))],
            Ty::I32,
        ))),
        st(StmtKind::Fence { device: false }),
        st(StmtKind::Barrier),
        if_(
            bin(BinOp::Eq, tv.clone(), i32(0)),
            vec![
                st(StmtKind::Expr(atomic(
                    AtomicOp::Add,
                    vec![b.v(total), i32(0), b.idx(tile, i32(0))],
                    Ty::F32,
                ))),
                st(StmtKind::Expr(atomic(
                    AtomicOp::Add,
                    vec![b.v(counts), i32(0), b.idx(hist, i32(0))],
                    Ty::I32,
                ))),
                st(StmtKind::Expr(atomic(
                    AtomicOp::Sub,
                    vec![b.v(counts), i32(1), i32(2)],
                    Ty::I32,
                ))),
                st(StmtKind::Expr(atomic(
                    AtomicOp::Max,
                    vec![b.v(counts), i32(2), geo(Geometry::BlockIdx(Axis::X))],
                    Ty::I32,
                ))),
                st(StmtKind::Expr(atomic(
                    AtomicOp::Min,
                    vec![b.v(counts), i32(3), geo(Geometry::BlockIdx(Axis::X))],
                    Ty::I32,
                ))),
                st(StmtKind::Expr(atomic(
                    AtomicOp::Or,
                    vec![b.v(counts), i32(4), i32(1)],
                    Ty::I32,
                ))),
                st(StmtKind::Expr(atomic(
                    AtomicOp::And,
                    vec![b.v(counts), i32(5), i32(6)],
                    Ty::I32,
                ))),
                st(StmtKind::Expr(atomic(
                    AtomicOp::Xor,
                    vec![b.v(counts), i32(6), i32(5)],
                    Ty::I32,
                ))),
                st(StmtKind::Expr(atomic(
                    AtomicOp::Dec,
                    vec![b.v(counts), i32(7)],
                    Ty::I32,
                ))),
                let_(
                    old,
                    atomic(
                        AtomicOp::Cas,
                        vec![b.v(counts), i32(8), i32(0), i32(1)],
                        Ty::I32,
                    ),
                ),
                st(StmtKind::Expr(atomic(
                    AtomicOp::Exch,
                    vec![b.v(counts), i32(9), b.v(old)],
                    Ty::I32,
                ))),
                st(StmtKind::Fence { device: true }),
            ],
            vec![],
        ),
    ];
    b.kernel("reduce", vec![x, total, counts], body)
}

fn st_select(c: Expr, a: Expr, e: Expr) -> Expr {
    let ty = a.ty.clone();
    Expr::new(
        ExprKind::Select {
            cond: Box::new(c),
            then_value: Box::new(a),
            else_value: Box::new(e),
        },
        ty,
    )
}

/// int64 atomics (refused where the device or dialect has none).
pub fn atomics64() -> Kernel {
    let mut b = B::default();
    let acc = b.var("acc", vec_of(Ty::I64));
    let i = b.var("i", Ty::I32);
    let w = b.var("w", Ty::I64);
    let atomic = |op, args: Vec<Expr>| intr(Intrinsic::Atomic(op), args, Ty::I64);
    let wide = intr(Intrinsic::Convert, vec![b.v(i)], Ty::I64);
    let body = vec![
        let_(i, gid()),
        let_(
            w,
            bin(BinOp::Mul, wide, Expr::lit(Literal::I64(3_000_000_000))),
        ),
        st(StmtKind::Expr(atomic(
            AtomicOp::Add,
            vec![b.v(acc), i32(0), b.v(w)],
        ))),
        st(StmtKind::Expr(atomic(
            AtomicOp::Max,
            vec![b.v(acc), i32(1), b.v(w)],
        ))),
        st(StmtKind::Expr(atomic(
            AtomicOp::Min,
            vec![b.v(acc), i32(2), b.v(w)],
        ))),
        st(StmtKind::Expr(atomic(
            AtomicOp::Sub,
            vec![b.v(acc), i32(3), Expr::lit(Literal::I64(1))],
        ))),
        st(StmtKind::Expr(atomic(
            AtomicOp::Xor,
            vec![b.v(acc), i32(4), b.v(w)],
        ))),
        st(StmtKind::Expr(atomic(
            AtomicOp::Inc,
            vec![b.v(acc), i32(5)],
        ))),
        st(StmtKind::Expr(atomic(
            AtomicOp::Cas,
            vec![b.v(acc), i32(6), Expr::lit(Literal::I64(0)), b.v(w)],
        ))),
    ];
    b.kernel("atomics64", vec![acc], body)
}

/// Integer and bool operations, conversions, loops with unroll hints, a bool buffer.
pub fn bits() -> Kernel {
    let mut b = B::default();
    let a = b.var("a", vec_of(Ty::I32));
    let flags = b.var("flags", vec_of(Ty::BOOL));
    let f = b.var("f", vec_of(Ty::F32));
    let on = b.var("on", Ty::BOOL);
    let body = guarded(&mut b, a, |b, i| {
        let x = b.var("x", Ty::I32);
        let acc = b.mvar("acc", Ty::I32);
        let k = b.var("k", Ty::I32);
        let local = b.var(
            "scratch",
            Ty::Array {
                elem: Box::new(Ty::I32),
                space: MemSpace::Local,
                size: Some(4),
            },
        );
        let ai = b.idx(a, b.v(i));
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
            let_(acc, i32(-2147483648)),
            st(StmtKind::Array { var: local }),
        ];
        for (n, op) in ops.iter().enumerate() {
            let rhs = i32(n as i32 + 1);
            stmts.push(assign(
                acc,
                bin(BinOp::BitXor, b.v(acc), bin(*op, b.v(x), rhs)),
            ));
        }
        stmts.push(st(StmtKind::For {
            var: k,
            start: i32(0),
            end: i32(3),
            downto: false,
            body: vec![set(local, b.v(k), bin(BinOp::Mul, b.v(k), b.v(x)))],
            unroll: Some(4),
        }));
        let k2 = b.var("k", Ty::I32);
        stmts.push(st(StmtKind::For {
            var: k2,
            start: i32(3),
            end: i32(0),
            downto: true,
            body: vec![assign(
                acc,
                bin(BinOp::Add, b.v(acc), b.idx(local, b.v(k2))),
            )],
            unroll: None,
        }));
        let fl = b.idx(flags, b.v(i));
        let neg = Expr::new(
            ExprKind::Unary {
                op: UnOp::Neg,
                operand: Box::new(b.v(acc)),
            },
            Ty::I32,
        );
        let not = Expr::new(
            ExprKind::Unary {
                op: UnOp::Not,
                operand: Box::new(fl.clone()),
            },
            Ty::BOOL,
        );
        let bnot = Expr::new(
            ExprKind::Unary {
                op: UnOp::BitNot,
                operand: Box::new(b.v(x)),
            },
            Ty::I32,
        );
        stmts.push(assign(
            acc,
            bin(
                BinOp::Add,
                b.v(acc),
                intr(Intrinsic::Clz, vec![b.v(x)], Ty::I32),
            ),
        ));
        stmts.push(assign(
            acc,
            bin(
                BinOp::Add,
                b.v(acc),
                intr(Intrinsic::Popcount, vec![bnot], Ty::I32),
            ),
        ));
        stmts.push(assign(
            acc,
            intr(
                Intrinsic::Max,
                vec![b.v(acc), intr(Intrinsic::Abs, vec![neg], Ty::I32)],
                Ty::I32,
            ),
        ));
        stmts.push(assign(
            acc,
            intr(Intrinsic::Min, vec![b.v(acc), i32(1_000_000)], Ty::I32),
        ));
        let fi = b.idx(f, b.v(i));
        stmts.push(assign(
            acc,
            bin(
                BinOp::Add,
                b.v(acc),
                intr(
                    Intrinsic::Convert,
                    vec![bin(BinOp::Rem, fi.clone(), f32(0.75))],
                    Ty::I32,
                ),
            ),
        ));
        stmts.push(set(
            f,
            b.v(i),
            intr(Intrinsic::Convert, vec![b.v(acc)], Ty::F32),
        ));
        stmts.push(set(a, b.v(i), b.v(acc)));
        stmts.push(set(
            flags,
            b.v(i),
            bin(
                BinOp::Or,
                bin(BinOp::And, not, b.v(on)),
                bin(BinOp::Ne, b.v(x), i32(7)),
            ),
        ));
        stmts.push(st(StmtKind::While {
            cond: bin(BinOp::Ge, b.v(acc), i32(100)),
            body: vec![
                assign(acc, bin(BinOp::Div, b.v(acc), i32(2))),
                if_(
                    bin(BinOp::Eq, b.v(acc), i32(101)),
                    vec![st(StmtKind::Break)],
                    vec![st(StmtKind::Continue)],
                ),
            ],
            unroll: Some(2),
        }));
        stmts
    });
    b.kernel("bits", vec![a, flags, f, on], body)
}

/// Helpers: one with scalars and a return, one taking a vector, one taking a shared array.
pub fn helpers() -> Kernel {
    let mut b = B::default();
    // clamp(x, lo, hi)
    let x = b.var("x", Ty::F32);
    let lo = b.var("lo", Ty::F32);
    let hi = b.var("hi", Ty::F32);
    let clamp_body = vec![
        if_(
            bin(BinOp::Lt, b.v(x), b.v(lo)),
            vec![st(StmtKind::Return(Some(b.v(lo))))],
            vec![],
        ),
        if_(
            bin(BinOp::Gt, b.v(x), b.v(hi)),
            vec![st(StmtKind::Return(Some(b.v(hi))))],
            vec![],
        ),
        st(StmtKind::Return(Some(b.v(x)))),
    ];
    b.functions.push(Function {
        name: "clamp".into(),
        span: sp(),
        params: vec![x, lo, hi],
        ret: Ty::F32,
        body: clamp_body,
    });
    // sum_first(v, n): sum of v[0..min(n, length v))
    let v = b.var("v", vec_of(Ty::F32));
    let n = b.var("n", Ty::I32);
    let acc = b.mvar("acc", Ty::F32);
    let j = b.var("j", Ty::I32);
    let len = intr(Intrinsic::Length, vec![b.v(v)], Ty::I32);
    let sum_body = vec![
        let_(acc, f32(0.0)),
        st(StmtKind::For {
            var: j,
            start: i32(0),
            end: bin(
                BinOp::Sub,
                intr(Intrinsic::Min, vec![b.v(n), len], Ty::I32),
                i32(1),
            ),
            downto: false,
            body: vec![assign(acc, bin(BinOp::Add, b.v(acc), b.idx(v, b.v(j))))],
            unroll: None,
        }),
        st(StmtKind::Return(Some(b.v(acc)))),
    ];
    b.functions.push(Function {
        name: "sum_first".into(),
        span: sp(),
        params: vec![v, n],
        ret: Ty::F32,
        body: sum_body,
    });
    // bump(arr, k): arr[k] += 1 (shared array), no result
    let arr = b.var(
        "arr",
        Ty::Array {
            elem: Box::new(Ty::I32),
            space: MemSpace::Shared,
            size: None,
        },
    );
    let k = b.var("k", Ty::I32);
    let bump_body = vec![if_(
        bin(
            BinOp::Lt,
            b.v(k),
            intr(Intrinsic::Length, vec![b.v(arr)], Ty::I32),
        ),
        vec![st(StmtKind::Expr(intr(
            Intrinsic::Atomic(AtomicOp::Add),
            vec![b.v(arr), b.v(k), i32(1)],
            Ty::I32,
        )))],
        vec![],
    )];
    b.functions.push(Function {
        name: "bump".into(),
        span: sp(),
        params: vec![arr, k],
        ret: Ty::Unit,
        body: bump_body,
    });
    // lane(): thread index (needs the geometry on Metal)
    b.functions.push(Function {
        name: "lane".into(),
        span: sp(),
        params: vec![],
        ret: Ty::I32,
        body: vec![st(StmtKind::Return(Some(geo(Geometry::ThreadIdx(
            Axis::X,
        )))))],
    });

    let data = b.var("data", vec_of(Ty::F32));
    let out = b.var("out", vec_of(Ty::F32));
    let seen = b.var("seen", vec_of(Ty::I32));
    let counts = b.var(
        "counts",
        Ty::Array {
            elem: Box::new(Ty::I32),
            space: MemSpace::Shared,
            size: Some(8),
        },
    );
    let t = b.var("t", Ty::I32);
    let call = |f: u32, args: Vec<Expr>, ty: Ty| {
        Expr::new(
            ExprKind::Call {
                func: FuncId(f),
                args,
            },
            ty,
        )
    };
    let body = vec![
        st(StmtKind::Array { var: counts }),
        let_(t, call(3, vec![], Ty::I32)),
        if_(
            bin(BinOp::Lt, b.v(t), i32(8)),
            vec![set(counts, b.v(t), i32(0))],
            vec![],
        ),
        st(StmtKind::Barrier),
        st(StmtKind::Expr(call(
            2,
            vec![b.v(counts), bin(BinOp::BitAnd, b.v(t), i32(7))],
            Ty::Unit,
        ))),
        st(StmtKind::Barrier),
        st(StmtKind::Block(guarded(&mut b, out, |b, i| {
            let s = call(1, vec![b.v(data), i32(4)], Ty::F32);
            let c = call(
                0,
                vec![bin(BinOp::Add, b.idx(data, b.v(i)), s), f32(-1.0), f32(1.0)],
                Ty::F32,
            );
            vec![set(out, b.v(i), c)]
        }))),
        if_(
            bin(BinOp::Lt, b.v(t), i32(8)),
            vec![set(
                seen,
                bin(
                    BinOp::Add,
                    bin(BinOp::Mul, geo(Geometry::BlockIdx(Axis::X)), i32(8)),
                    b.v(t),
                ),
                b.idx(counts, b.v(t)),
            )],
            vec![],
        ),
    ];
    b.kernel("helpers", vec![data, out, seen], body)
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
    let mut b = B::default();
    let ty = Ty::Scalar(s);
    let x = b.var("x", vec_of(ty.clone()));
    let y = b.var("y", vec_of(ty.clone()));
    let wide = b.var("wide", vec_of(Ty::I64));
    let body = guarded(&mut b, x, |b, i| {
        use MathFn::*;
        let acc = b.mvar("acc", ty.clone());
        let xi = b.idx(x, b.v(i));
        let lit = |v: f64| {
            if s == Scalar::F32 {
                Expr::lit(Literal::F32(v as f32))
            } else {
                Expr::lit(Literal::F64(v))
            }
        };
        // Arguments kept in each function's domain: a in [0, 1], a + 1 > 0.
        let a = intr(Intrinsic::Math(Fabs), vec![xi.clone()], ty.clone());
        let mut stmts = vec![let_(acc, lit(0.0))];
        for f in [
            Sqrt, Rsqrt, Exp, Exp2, Expm1, Log, Log2, Log10, Log1p, Sin, Cos, Tan, Asin, Acos,
            Atan, Sinh, Cosh, Tanh, Floor, Ceil, Round, Trunc, Fabs,
        ] {
            let arg = match f {
                Log | Log2 | Log10 | Rsqrt => bin(BinOp::Add, a.clone(), lit(1.0)),
                _ => a.clone(),
            };
            stmts.push(assign(
                acc,
                bin(
                    BinOp::Add,
                    b.v(acc),
                    intr(Intrinsic::Math(f), vec![arg], ty.clone()),
                ),
            ));
        }
        for f in [Pow, Atan2, Hypot, Copysign, Fmin, Fmax] {
            let call = intr(Intrinsic::Math(f), vec![a.clone(), lit(0.5)], ty.clone());
            stmts.push(assign(acc, bin(BinOp::Add, b.v(acc), call)));
        }
        let fma = intr(
            Intrinsic::Math(Fma),
            vec![a.clone(), lit(2.0), b.v(acc)],
            ty.clone(),
        );
        stmts.push(assign(acc, fma));
        stmts.push(assign(
            acc,
            intr(Intrinsic::Max, vec![b.v(acc), lit(-1.0e30)], ty.clone()),
        ));
        stmts.push(assign(acc, bin(BinOp::Rem, b.v(acc), lit(1000.0))));
        stmts.push(set(y, b.v(i), b.v(acc)));
        if s == Scalar::F64 {
            let w = intr(Intrinsic::Convert, vec![b.v(acc)], Ty::I64);
            let shifted = bin(
                BinOp::LShr,
                bin(BinOp::Mul, w, Expr::lit(Literal::I64(-7))),
                Expr::lit(Literal::I64(3)),
            );
            stmts.push(set(wide, b.v(i), shifted));
        } else {
            stmts.push(set(
                wide,
                b.v(i),
                intr(Intrinsic::Convert, vec![b.v(i)], Ty::I64),
            ));
        }
        stmts
    });
    b.kernel(name, vec![x, y, wide], body)
}

/// Warp operations (refused by OpenCL devices without subgroups).
pub fn warp() -> Kernel {
    let mut b = B::default();
    let x = b.var("x", vec_of(Ty::F32));
    let mask = b.var("mask", vec_of(Ty::I32));
    let t = b.var("t", Ty::I32);
    let v = b.var("v", Ty::F32);
    let ok = b.var("ok", Ty::BOOL);
    let w = |op, args, ty| intr(Intrinsic::Warp(op), args, ty);
    let body = vec![
        let_(t, gid()),
        let_(v, b.idx(x, b.v(t))),
        let_(ok, bin(BinOp::Gt, b.v(v), f32(0.0))),
        set(
            x,
            b.v(t),
            bin(
                BinOp::Add,
                w(WarpOp::ShuffleDown, vec![b.v(v), i32(1)], Ty::F32),
                bin(
                    BinOp::Add,
                    w(WarpOp::ShuffleXor, vec![b.v(v), i32(2)], Ty::F32),
                    w(WarpOp::Shuffle, vec![b.v(v), i32(0)], Ty::F32),
                ),
            ),
        ),
        set(mask, b.v(t), w(WarpOp::Ballot, vec![b.v(ok)], Ty::I32)),
        if_(
            bin(
                BinOp::And,
                w(WarpOp::VoteAll, vec![b.v(ok)], Ty::BOOL),
                w(WarpOp::VoteAny, vec![b.v(ok)], Ty::BOOL),
            ),
            vec![set(
                mask,
                b.v(t),
                bin(
                    BinOp::Add,
                    w(WarpOp::ShuffleUp, vec![b.v(t), i32(1)], Ty::I32),
                    geo(Geometry::WarpSize),
                ),
            )],
            vec![],
        ),
    ];
    b.kernel("warp", vec![x, mask], body)
}

/// `for var = start to|downto end` as a statement.
fn for_(
    var: VarId,
    start: Expr,
    end: Expr,
    downto: bool,
    body: Block,
    unroll: Option<u32>,
) -> Stmt {
    st(StmtKind::For {
        var,
        start,
        end,
        downto,
        body,
        unroll,
    })
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
    let mut b = B::default();
    let a = b.var("a", vec_of(Ty::I32));
    let bv = b.var("b", vec_of(Ty::I32));
    let c = b.var("c", vec_of(Ty::I32));
    let lo = b.var("lo", Ty::I32);
    let hi = b.var("hi", Ty::I32);
    let body = guarded(&mut b, a, |b, i| {
        let m = b.var("m", Ty::I32);
        let (s, t) = (b.mvar("s", Ty::I32), b.mvar("t", Ty::I32));
        let (s2, t2) = (b.mvar("s", Ty::I32), b.mvar("t", Ty::I32));
        let s3 = b.mvar("s", Ty::I32);
        let w = b.mvar("w", Ty::I32);
        let k: Vec<VarId> = (0..6).map(|_| b.var("k", Ty::I32)).collect();
        let add = |b: &B, v: VarId, e: Expr| assign(v, bin(BinOp::Add, b.v(v), e));
        let odd = |b: &B, k: VarId| bin(BinOp::BitAnd, b.v(k), i32(1));
        let cont = || vec![st(StmtKind::Continue)];
        vec![
            let_(m, bin(BinOp::Rem, b.v(i), i32(5))),
            let_(s, i32(0)),
            let_(t, i32(0)),
            let_(s2, i32(0)),
            let_(t2, i32(0)),
            let_(s3, i32(0)),
            for_(
                k[0],
                bin(BinOp::Sub, b.v(hi), b.v(m)),
                b.v(hi),
                false,
                vec![
                    add(b, t, i32(1)),
                    if_(bin(BinOp::Eq, odd(b, k[0]), i32(0)), cont(), vec![]),
                    add(b, s, i32(1)),
                ],
                Some(4),
            ),
            set(
                a,
                b.v(i),
                bin(BinOp::Add, bin(BinOp::Mul, b.v(t), i32(100)), b.v(s)),
            ),
            for_(
                k[1],
                bin(BinOp::Add, b.v(lo), b.v(m)),
                b.v(lo),
                true,
                vec![
                    add(b, t2, i32(1)),
                    if_(bin(BinOp::Ne, odd(b, k[1]), i32(0)), cont(), vec![]),
                    add(b, s2, i32(1)),
                ],
                Some(1),
            ),
            set(
                bv,
                b.v(i),
                bin(BinOp::Add, bin(BinOp::Mul, b.v(t2), i32(100)), b.v(s2)),
            ),
            for_(
                k[2],
                i32(0),
                b.v(hi),
                false,
                vec![
                    if_(
                        bin(BinOp::Eq, b.v(k[2]), bin(BinOp::Rem, b.v(i), i32(7))),
                        vec![st(StmtKind::Break)],
                        vec![],
                    ),
                    if_(bin(BinOp::Eq, odd(b, k[2]), i32(1)), cont(), vec![]),
                    add(b, s3, b.v(k[2])),
                ],
                None,
            ),
            for_(
                k[3],
                b.v(hi),
                b.v(lo),
                false,
                vec![add(b, s3, i32(1000)), st(StmtKind::Continue)],
                None,
            ),
            for_(
                k[4],
                b.v(lo),
                b.v(hi),
                true,
                vec![add(b, s3, i32(1000)), st(StmtKind::Continue)],
                None,
            ),
            for_(
                k[5],
                bin(BinOp::Add, b.v(lo), i32(2)),
                b.v(lo),
                true,
                vec![
                    let_(w, i32(0)),
                    st(StmtKind::While {
                        cond: bin(BinOp::Lt, b.v(w), i32(3)),
                        body: vec![
                            add(b, w, i32(1)),
                            if_(bin(BinOp::Eq, b.v(w), i32(2)), cont(), vec![]),
                            add(b, s3, i32(10000)),
                        ],
                        unroll: None,
                    }),
                    if_(
                        bin(BinOp::Eq, b.v(k[5]), bin(BinOp::Add, b.v(lo), i32(1))),
                        cont(),
                        vec![],
                    ),
                    add(b, s3, i32(100000)),
                ],
                None,
            ),
            set(c, b.v(i), b.v(s3)),
        ]
    });
    b.kernel("loops", vec![a, bv, c, lo, hi], body)
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
