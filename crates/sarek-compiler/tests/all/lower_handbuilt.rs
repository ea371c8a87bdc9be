//! Lowering, recursion and convergence on hand-built typed programs (independent of the
//! parser and typer): the IR shapes seed 003 asks for.

use sarek_compiler::diag::Span;
use sarek_compiler::front::tast::*;
use sarek_compiler::intrinsics::{Axis, Geometry, Intrinsic};
use sarek_compiler::ir::{self, StmtKind};
use sarek_compiler::types::{BinOp, Literal, MemSpace, Scalar};

/// A tiny builder: fresh ids, expressions with dummy spans.
#[derive(Default)]
struct B {
    next: u32,
}

fn ex(kind: ExprKind, ty: Ty) -> Expr {
    Expr {
        kind,
        ty,
        span: Span::DUMMY,
    }
}
fn lit_i(v: i32) -> Expr {
    ex(ExprKind::Lit(Literal::I32(v)), Ty::I32)
}
fn var(d: &VarDecl) -> Expr {
    ex(ExprKind::Var(d.id), d.ty.clone())
}
fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
    let ty = if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) {
        Ty::BOOL
    } else {
        l.ty.clone()
    };
    ex(
        ExprKind::Binary {
            op,
            lhs: Box::new(l),
            rhs: Box::new(r),
        },
        ty,
    )
}
fn index(v: &VarDecl, i: Expr) -> Expr {
    let elem = match &v.ty {
        Ty::Vector(e) | Ty::Array { elem: e, .. } => (**e).clone(),
        _ => panic!("not a vector"),
    };
    ex(
        ExprKind::Index {
            base: Box::new(var(v)),
            index: Box::new(i),
        },
        elem,
    )
}
fn set(v: &VarDecl, i: Expr, value: Expr) -> Expr {
    ex(
        ExprKind::IndexSet {
            base: Box::new(var(v)),
            index: Box::new(i),
            value: Box::new(value),
        },
        Ty::Unit,
    )
}
fn geom(g: Geometry) -> Expr {
    ex(
        ExprKind::Intrinsic {
            op: Intrinsic::Geometry(g),
            args: vec![],
        },
        Ty::I32,
    )
}
fn let_(d: &VarDecl, value: Expr, body: Expr) -> Expr {
    let ty = body.ty.clone();
    ex(
        ExprKind::Let {
            pattern: Pattern::Bind(d.clone()),
            value: Box::new(value),
            body: Box::new(body),
        },
        ty,
    )
}
fn if_(c: Expr, t: Expr, e: Option<Expr>) -> Expr {
    let ty = t.ty.clone();
    ex(
        ExprKind::If {
            cond: Box::new(c),
            then_branch: Box::new(t),
            else_branch: e.map(Box::new),
        },
        ty,
    )
}
fn barrier() -> Expr {
    ex(
        ExprKind::Intrinsic {
            op: Intrinsic::BlockBarrier,
            args: vec![],
        },
        Ty::Unit,
    )
}

impl B {
    fn decl(&mut self, name: &str, ty: Ty) -> VarDecl {
        self.next += 1;
        VarDecl {
            id: VarId(self.next),
            name: name.into(),
            ty,
            mutable: false,
            span: Span::DUMMY,
        }
    }
    fn mutable(&mut self, name: &str, ty: Ty) -> VarDecl {
        VarDecl {
            mutable: true,
            ..self.decl(name, ty)
        }
    }
}

fn program(kernel_params: Vec<VarDecl>, body: Expr) -> Program {
    Program {
        records: vec![],
        variants: vec![],
        functions: vec![],
        kernels: vec![Kernel {
            name: "k".into(),
            span: Span::DUMMY,
            params: kernel_params,
            body,
        }],
        tall: false,
    }
}

fn vec_of(t: Ty) -> Ty {
    Ty::Vector(Box::new(t))
}

fn walk<'a>(b: &'a [ir::Stmt], out: &mut Vec<&'a StmtKind>) {
    for s in b {
        out.push(&s.kind);
        match &s.kind {
            StmtKind::If {
                then_block,
                else_block,
                ..
            } => {
                walk(then_block, out);
                walk(else_block, out);
            }
            StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::Block(body) => {
                walk(body, out)
            }
            StmtKind::Match { arms, .. } => arms.iter().for_each(|a| walk(&a.body, out)),
            _ => {}
        }
    }
}

#[test]
fn vector_add_lowers_to_guarded_store() {
    let mut b = B::default();
    let a = b.decl("a", vec_of(Ty::F32));
    let bb = b.decl("b", vec_of(Ty::F32));
    let c = b.decl("c", vec_of(Ty::F32));
    let n = b.decl("n", Ty::I32);
    let i = b.decl("i", Ty::I32);
    let body = let_(
        &i,
        geom(Geometry::GlobalIdx(Axis::X)),
        if_(
            bin(BinOp::Lt, var(&i), var(&n)),
            set(
                &c,
                var(&i),
                bin(BinOp::Add, index(&a, var(&i)), index(&bb, var(&i))),
            ),
            None,
        ),
    );
    let p = program(vec![a, bb, c, n], body);
    let k = sarek_compiler::lower::lower_kernel(&p, "k").expect("lowers");
    assert_eq!(k.params.len(), 4);
    assert_eq!(k.var(k.params[2]).name, "c");
    assert_eq!(k.var(k.params[2]).ty, ir::Ty::Vector(Box::new(ir::Ty::F32)));
    assert!(matches!(
        k.body[0].kind,
        StmtKind::Let { init: Some(_), .. }
    ));
    let StmtKind::If {
        then_block,
        else_block,
        ..
    } = &k.body[1].kind
    else {
        panic!("{:?}", k.body)
    };
    assert!(else_block.is_empty());
    assert!(matches!(
        &then_block[0].kind,
        StmtKind::Assign {
            place: ir::LValue::Index { .. },
            ..
        }
    ));
}

#[test]
fn variant_only_as_vector_parameter_is_registered_and_matched() {
    // type color = Red | Value of float32;  match v.(i) with Red -> out.(i) <- 0.0 | Value x -> out.(i) <- x
    let mut b = B::default();
    let color = Ty::Variant(VariantId(0));
    let v = b.decl("v", vec_of(color.clone()));
    let out = b.decl("out", vec_of(Ty::F32));
    let x = b.decl("x", Ty::F32);
    let tid = geom(Geometry::GlobalIdx(Axis::X));
    let body = ex(
        ExprKind::Match {
            scrutinee: Box::new(index(&v, tid.clone())),
            arms: vec![
                Arm {
                    pattern: Pattern::Ctor {
                        variant: VariantId(0),
                        ctor: 0,
                        args: vec![],
                    },
                    body: set(
                        &out,
                        tid.clone(),
                        ex(ExprKind::Lit(Literal::F32(0.0)), Ty::F32),
                    ),
                    span: Span::DUMMY,
                },
                Arm {
                    pattern: Pattern::Ctor {
                        variant: VariantId(0),
                        ctor: 1,
                        args: vec![Pattern::Bind(x.clone())],
                    },
                    body: set(&out, tid.clone(), var(&x)),
                    span: Span::DUMMY,
                },
            ],
        },
        Ty::Unit,
    );
    let mut p = program(vec![v, out], body);
    p.variants.push(VariantDef {
        name: "color".into(),
        span: Span::DUMMY,
        ctors: vec![
            CtorDef {
                name: "Red".into(),
                args: vec![],
                span: Span::DUMMY,
            },
            CtorDef {
                name: "Value".into(),
                args: vec![Ty::F32],
                span: Span::DUMMY,
            },
        ],
    });
    let k = sarek_compiler::lower::lower_kernel(&p, "k").expect("lowers");
    assert_eq!(k.variants.len(), 1);
    assert_eq!(k.variants[0].ctors[1].fields, vec![ir::Ty::F32]);
    let mut all = Vec::new();
    walk(&k.body, &mut all);
    let m = all.iter().find_map(|s| match s {
        StmtKind::Match { arms, .. } => Some(arms),
        _ => None,
    });
    let arms = m.expect("a Match statement");
    assert_eq!(arms.len(), 2);
    let x_var = arms[1].bindings[0].expect("payload binder kept");
    assert_eq!(k.var(x_var).name, "x");
}

#[test]
fn tuple_vector_gets_tup_record_and_non_scalar_component_is_refused() {
    let mut b = B::default();
    let tup = Ty::Tuple(vec![Ty::F32, Ty::I32]);
    let v = b.decl("v", vec_of(tup.clone()));
    let p = program(vec![v], ex(ExprKind::Unit, Ty::Unit));
    let k = sarek_compiler::lower::lower_kernel(&p, "k").expect("lowers");
    assert_eq!(k.records.len(), 1);
    assert_eq!(k.records[0].name, "_tup_float32_int32");
    assert!(k.records[0].is_tuple);
    assert_eq!(k.records[0].fields[1].name, "_1");

    let mut b = B::default();
    let bad = Ty::Tuple(vec![Ty::F32, Ty::Tuple(vec![Ty::I32, Ty::I32])]);
    let v = b.decl("v", vec_of(bad));
    let p = program(vec![v], ex(ExprKind::Unit, Ty::Unit));
    let err = sarek_compiler::lower::lower_kernel(&p, "k").unwrap_err();
    assert!(
        err[0].message.contains("not a scalar"),
        "{}",
        err[0].message
    );
}

#[test]
fn value_if_becomes_select_only_when_safe() {
    let mut b = B::default();
    let out = b.decl("out", vec_of(Ty::I32));
    let n = b.decl("n", Ty::I32);
    let x = b.decl("x", Ty::I32);
    let y = b.decl("y", Ty::I32);
    // let x = if n > 0 then n else 0 in let y = if n > 0 then out.(n) else 0 in out.(0) <- x + y
    let body = let_(
        &x,
        if_(bin(BinOp::Gt, var(&n), lit_i(0)), var(&n), Some(lit_i(0))),
        let_(
            &y,
            if_(
                bin(BinOp::Gt, var(&n), lit_i(0)),
                index(&out, var(&n)),
                Some(lit_i(0)),
            ),
            set(&out, lit_i(0), bin(BinOp::Add, var(&x), var(&y))),
        ),
    );
    let p = program(vec![out, n], body);
    let k = sarek_compiler::lower::lower_kernel(&p, "k").expect("lowers");
    let StmtKind::Let { init: Some(e), .. } = &k.body[0].kind else {
        panic!("{:?}", k.body[0])
    };
    assert!(matches!(e.kind, ir::ExprKind::Select { .. }));
    // The faulting read is not hoisted into a Select: y is declared, then assigned in an if.
    assert!(matches!(k.body[1].kind, StmtKind::Let { init: None, .. }));
    assert!(matches!(k.body[2].kind, StmtKind::If { .. }));
}

#[test]
fn shared_array_superstep_and_barrier() {
    let mut b = B::default();
    let out = b.decl("out", vec_of(Ty::F32));
    let s = b.decl(
        "s",
        Ty::Array {
            elem: Box::new(Ty::F32),
            space: MemSpace::Shared,
            size: Some(64),
        },
    );
    let tid = geom(Geometry::ThreadIdx(Axis::X));
    let body = ex(
        ExprKind::LetShared {
            var: s.clone(),
            body: Box::new(ex(
                ExprKind::Superstep {
                    name: "load".into(),
                    divergent: false,
                    step: Box::new(set(&s, tid.clone(), index(&out, tid.clone()))),
                    rest: Box::new(ex(
                        ExprKind::Seq(vec![barrier(), set(&out, tid.clone(), index(&s, lit_i(0)))]),
                        Ty::Unit,
                    )),
                },
                Ty::Unit,
            )),
        },
        Ty::Unit,
    );
    let p = program(vec![out], body);
    sarek_compiler::front::convergence::check(&p).expect("uniform superstep accepted");
    let k = sarek_compiler::lower::lower_kernel(&p, "k").expect("lowers");
    let kinds: Vec<_> = k
        .body
        .iter()
        .map(|s| std::mem::discriminant(&s.kind))
        .collect();
    assert_eq!(
        kinds[0],
        std::mem::discriminant(&StmtKind::Array { var: ir::VarId(0) })
    );
    assert!(matches!(k.body[1].kind, StmtKind::Block(_)));
    assert!(matches!(k.body[2].kind, StmtKind::Barrier));
    assert!(matches!(k.body[3].kind, StmtKind::Barrier));
}

#[test]
fn barrier_under_let_bound_thread_index_is_refused() {
    // let tid = thread_idx_x in if tid < 128 then block_barrier ()
    let mut b = B::default();
    let tid = b.decl("tid", Ty::I32);
    let body = let_(
        &tid,
        geom(Geometry::ThreadIdx(Axis::X)),
        if_(bin(BinOp::Lt, var(&tid), lit_i(128)), barrier(), None),
    );
    let p = program(vec![], body);
    let err = sarek_compiler::front::convergence::check(&p).unwrap_err();
    assert_eq!(err.len(), 1);
    assert!(
        err[0].message.contains("block_barrier"),
        "{}",
        err[0].message
    );
}

#[test]
fn classic_reduction_loop_is_accepted() {
    // let mut stride = block_dim_x / 2 in while stride > 0 do
    //   if tid < stride then s.(tid) <- s.(tid) + s.(tid + stride); block_barrier (); stride := stride / 2 done
    let mut b = B::default();
    let s = b.decl(
        "s",
        Ty::Array {
            elem: Box::new(Ty::I32),
            space: MemSpace::Shared,
            size: Some(256),
        },
    );
    let tid = b.decl("tid", Ty::I32);
    let stride = b.mutable("stride", Ty::I32);
    let step = if_(
        bin(BinOp::Lt, var(&tid), var(&stride)),
        set(
            &s,
            var(&tid),
            bin(
                BinOp::Add,
                index(&s, var(&tid)),
                index(&s, bin(BinOp::Add, var(&tid), var(&stride))),
            ),
        ),
        None,
    );
    let lp = ex(
        ExprKind::While {
            cond: Box::new(bin(BinOp::Gt, var(&stride), lit_i(0))),
            body: Box::new(ex(
                ExprKind::Seq(vec![
                    step,
                    barrier(),
                    ex(
                        ExprKind::Assign {
                            var: stride.id,
                            value: Box::new(bin(BinOp::Div, var(&stride), lit_i(2))),
                        },
                        Ty::Unit,
                    ),
                ]),
                Ty::Unit,
            )),
            hints: LoopHints::default(),
        },
        Ty::Unit,
    );
    let body = ex(
        ExprKind::LetShared {
            var: s.clone(),
            body: Box::new(let_(
                &tid,
                geom(Geometry::ThreadIdx(Axis::X)),
                let_(
                    &stride,
                    bin(BinOp::Div, geom(Geometry::BlockDim(Axis::X)), lit_i(2)),
                    lp,
                ),
            )),
        },
        Ty::Unit,
    );
    let p = program(vec![], body);
    sarek_compiler::front::convergence::check(&p).expect("classic reduction accepted");
    let k = sarek_compiler::lower::lower_kernel(&p, "k").expect("lowers");
    assert!(
        k.body
            .iter()
            .any(|s| matches!(s.kind, StmtKind::While { .. }))
    );
}

/// gcd a b = if b = 0 then a else gcd b (a mod b), called from a kernel.
fn gcd_program(b: &mut B) -> Program {
    let a = b.decl("a", Ty::I32);
    let bb = b.decl("b", Ty::I32);
    let body = if_(
        bin(BinOp::Eq, var(&bb), lit_i(0)),
        var(&a),
        Some(ex(
            ExprKind::Call {
                func: FunId(0),
                type_args: vec![],
                args: vec![var(&bb), bin(BinOp::Rem, var(&a), var(&bb))],
            },
            Ty::I32,
        )),
    );
    let f = Function {
        id: FunId(0),
        name: "gcd".into(),
        source_name: "gcd".into(),
        span: Span::DUMMY,
        type_params: 0,
        params: vec![a, bb],
        ret: Ty::I32,
        body,
        recursive: true,
        inline_depth: None,
    };
    let out = b.decl("out", vec_of(Ty::I32));
    let call = ex(
        ExprKind::Call {
            func: FunId(0),
            type_args: vec![],
            args: vec![lit_i(12), lit_i(18)],
        },
        Ty::I32,
    );
    let mut p = program(vec![out.clone()], set(&out, lit_i(0), call));
    p.functions.push(f);
    p
}

#[test]
fn tail_recursion_becomes_a_loop() {
    let mut b = B::default();
    let p = gcd_program(&mut b);
    let p = sarek_compiler::front::recursion::eliminate(p).expect("tail recursive");
    assert!(!p.functions[0].recursive);
    let k = sarek_compiler::lower::lower_kernel(&p, "k").expect("lowers");
    assert_eq!(k.functions.len(), 1);
    let mut all = Vec::new();
    walk(&k.functions[0].body, &mut all);
    assert!(all.iter().any(|s| matches!(s, StmtKind::While { .. })));
    assert!(!all.iter().any(|s| matches!(
        s,
        StmtKind::Expr(ir::Expr {
            kind: ir::ExprKind::Call { .. },
            ..
        })
    )));
}

#[test]
fn non_tail_recursion_needs_the_inline_mark() {
    // fib n = if n < 2 then n else fib (n - 1) + fib (n - 2)
    let mut b = B::default();
    let n = b.decl("n", Ty::I32);
    let call = |arg: Expr| {
        ex(
            ExprKind::Call {
                func: FunId(0),
                type_args: vec![],
                args: vec![arg],
            },
            Ty::I32,
        )
    };
    let body = if_(
        bin(BinOp::Lt, var(&n), lit_i(2)),
        var(&n),
        Some(bin(
            BinOp::Add,
            call(bin(BinOp::Sub, var(&n), lit_i(1))),
            call(bin(BinOp::Sub, var(&n), lit_i(2))),
        )),
    );
    let f = Function {
        id: FunId(0),
        name: "fib".into(),
        source_name: "fib".into(),
        span: Span::DUMMY,
        type_params: 0,
        params: vec![n],
        ret: Ty::I32,
        body,
        recursive: true,
        inline_depth: None,
    };
    let mut p = program(vec![], ex(ExprKind::Unit, Ty::Unit));
    p.functions.push(f.clone());
    let err = sarek_compiler::front::recursion::eliminate(p.clone()).unwrap_err();
    assert!(err[0].message.contains("`fib`"), "{}", err[0].message);
    assert!(err[0].help[0].contains("sarek.inline"));

    // One copy per depth, the deepest first: it traps where it would recurse, and each other
    // one calls the copy one level deeper (twice, as `fib` does).
    p.functions[0].inline_depth = Some(InlineMark {
        depth: 10,
        form: InlineForm::Attribute {
            name: "sarek.inline".into(),
            outer: false,
        },
    });
    let q = sarek_compiler::front::recursion::eliminate(p.clone()).expect("inlined");
    fn calls(e: &Expr, out: &mut Vec<FunId>) {
        if let ExprKind::Call { func, .. } = &e.kind {
            out.push(*func);
        }
        e.children().for_each(|c| calls(c, out));
    }
    assert_eq!(q.functions.len(), 11);
    assert_eq!(q.functions[0].name, "fib__depth10");
    assert_eq!(q.functions[10].name, "fib");
    for (i, f) in q.functions.iter().enumerate() {
        assert_eq!(f.id, FunId(i as u32));
        let mut callees = Vec::new();
        calls(&f.body, &mut callees);
        let expected = if i == 0 {
            vec![]
        } else {
            vec![FunId(i as u32 - 1); 2]
        };
        assert_eq!(callees, expected, "{}", f.name);
    }

    p.functions[0].inline_depth = Some(InlineMark {
        depth: 5000,
        form: InlineForm::Pragma,
    });
    let err = sarek_compiler::front::recursion::eliminate(p).unwrap_err();
    assert!(err[0].message.contains("too large"), "{}", err[0].message);
    assert!(
        err[0]
            .label
            .starts_with("`pragma [\"sarek.inline 5000\"]` unrolls"),
        "{:?}",
        err[0].label
    );
}

#[test]
fn unknown_kernel_suggests_the_closest() {
    let p = program(vec![], ex(ExprKind::Unit, Ty::Unit));
    let err = sarek_compiler::lower::lower_kernel(&p, "kk").unwrap_err();
    assert!(err[0].help[0].contains("`k`"));
    let _ = Scalar::I32;
}

#[test]
fn aggregate_equality_backstop_uses_the_typer_text_and_says_it_fired() {
    // `p = q` on records cannot come out of the typer; build it by hand.
    let mut b = B::default();
    let point = Ty::Record(RecordId(0));
    let v = b.decl("v", vec_of(point.clone()));
    let out = b.decl("out", vec_of(Ty::BOOL));
    let eq = bin(BinOp::Eq, index(&v, lit_i(0)), index(&v, lit_i(1)));
    let mut p = program(vec![v, out.clone()], set(&out, lit_i(0), eq));
    p.records.push(RecordDef {
        name: "point".into(),
        span: Span::DUMMY,
        fields: vec![FieldDef {
            name: "x".into(),
            ty: Ty::F32,
            span: Span::DUMMY,
            mutable: false,
        }],
    });
    let err = sarek_compiler::lower::lower_kernel(&p, "k").unwrap_err();
    let typer_body = sarek_compiler::front::typer::aggregate_equality_message("point");
    assert_eq!(err[0].message, typer_body);
    assert!(
        err[0]
            .notes
            .iter()
            .any(|n| n.contains("lowering's backstop")),
        "{:?}",
        err[0].notes
    );
}

#[test]
fn mutual_recursion_is_refused() {
    // Scoping makes this unwritable in source; the pass checks anyway.
    let mut b = B::default();
    let x = b.decl("x", Ty::I32);
    let y = b.decl("y", Ty::I32);
    let call = |f: u32, a: Expr| {
        ex(
            ExprKind::Call {
                func: FunId(f),
                type_args: vec![],
                args: vec![a],
            },
            Ty::I32,
        )
    };
    let fun = |id: u32, name: &str, p: &VarDecl, body: Expr| Function {
        id: FunId(id),
        name: name.into(),
        source_name: name.into(),
        span: Span::DUMMY,
        type_params: 0,
        params: vec![p.clone()],
        ret: Ty::I32,
        body,
        recursive: false,
        inline_depth: None,
    };
    let mut p = program(vec![], ex(ExprKind::Unit, Ty::Unit));
    p.functions.push(fun(0, "even", &x, call(1, var(&x))));
    p.functions.push(fun(1, "odd", &y, call(0, var(&y))));
    let err = sarek_compiler::front::recursion::eliminate(p).unwrap_err();
    assert_eq!(err.len(), 1);
    assert!(
        err[0].message.contains("mutual recursion"),
        "{}",
        err[0].message
    );
    assert!(err[0].message.contains("`even`") && err[0].message.contains("`odd`"));
}
