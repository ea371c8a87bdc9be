//! The validator accepts well-formed kernels and names the first broken invariant otherwise.

use sarek_compiler::diag::Span;
use sarek_compiler::ir::validate::validate;
use sarek_compiler::ir::*;
use sarek_compiler::types::{BinOp, Literal};

fn var(name: &str, ty: Ty, mutable: bool) -> VarInfo {
    VarInfo {
        name: name.into(),
        ty,
        mutable,
        span: Span::DUMMY,
    }
}
fn st(kind: StmtKind) -> Stmt {
    Stmt {
        kind,
        span: Span::DUMMY,
    }
}
fn v(id: u32, ty: Ty) -> Expr {
    Expr::new(ExprKind::Var(VarId(id)), ty)
}
fn kernel(vars: Vec<VarInfo>, params: Vec<u32>, body: Block) -> Kernel {
    Kernel {
        name: "k".into(),
        span: Span::DUMMY,
        vars,
        params: params.into_iter().map(VarId).collect(),
        body,
        records: vec![Record {
            name: "p".into(),
            fields: vec![Field {
                name: "x".into(),
                ty: Ty::F32,
            }],
            is_tuple: false,
        }],
        variants: vec![],
        functions: vec![],
    }
}
fn err(k: &Kernel) -> String {
    validate(k)
        .expect_err("validator accepted a broken kernel")
        .message
}

#[test]
fn accepts_shadowing_let() {
    // let s = s + 1.0 in: the initialiser reads the parameter.
    let add = Expr::new(
        ExprKind::Binary {
            op: BinOp::Add,
            lhs: Box::new(v(0, Ty::F32)),
            rhs: Box::new(Expr::lit(Literal::F32(1.0))),
        },
        Ty::F32,
    );
    let k = kernel(
        vec![var("s", Ty::F32, false), var("s", Ty::F32, false)],
        vec![0],
        vec![st(StmtKind::Let {
            var: VarId(1),
            init: Some(add),
        })],
    );
    assert_eq!(validate(&k), Ok(()));
}

#[test]
fn use_before_binding() {
    let k = kernel(
        vec![var("a", Ty::I32, false), var("b", Ty::I32, false)],
        vec![],
        vec![
            st(StmtKind::Let {
                var: VarId(0),
                init: Some(v(1, Ty::I32)),
            }),
            st(StmtKind::Let {
                var: VarId(1),
                init: Some(Expr::i32(1)),
            }),
        ],
    );
    assert!(err(&k).contains("before it is bound"), "{}", err(&k));
}

#[test]
fn out_of_scope() {
    let k = kernel(
        vec![var("a", Ty::I32, false), var("b", Ty::I32, false)],
        vec![],
        vec![
            st(StmtKind::Block(vec![st(StmtKind::Let {
                var: VarId(0),
                init: Some(Expr::i32(1)),
            })])),
            st(StmtKind::Let {
                var: VarId(1),
                init: Some(v(0, Ty::I32)),
            }),
        ],
    );
    assert!(err(&k).contains("out of its scope"), "{}", err(&k));
}

#[test]
fn bound_twice() {
    let k = kernel(
        vec![var("a", Ty::I32, false)],
        vec![],
        vec![
            st(StmtKind::Let {
                var: VarId(0),
                init: Some(Expr::i32(1)),
            }),
            st(StmtKind::Let {
                var: VarId(0),
                init: Some(Expr::i32(2)),
            }),
        ],
    );
    assert!(err(&k).contains("bound twice"), "{}", err(&k));
}

#[test]
fn type_mismatch_and_bad_condition() {
    let k = kernel(
        vec![var("a", Ty::F32, false)],
        vec![],
        vec![st(StmtKind::Let {
            var: VarId(0),
            init: Some(Expr::i32(1)),
        })],
    );
    assert!(err(&k).contains("initialiser"), "{}", err(&k));
    let k = kernel(
        vec![],
        vec![],
        vec![st(StmtKind::If {
            cond: Expr::i32(1),
            then_block: vec![],
            else_block: vec![],
        })],
    );
    assert!(err(&k).contains("condition"), "{}", err(&k));
}

#[test]
fn immutable_assignment_and_field_range() {
    let k = kernel(
        vec![var("a", Ty::I32, false)],
        vec![0],
        vec![st(StmtKind::Assign {
            place: LValue::Var(VarId(0)),
            value: Expr::i32(1),
        })],
    );
    assert!(err(&k).contains("immutable"), "{}", err(&k));
    let p = Ty::Record(RecordId(0));
    let k = kernel(
        vec![var("r", p.clone(), true)],
        vec![0],
        vec![st(StmtKind::Assign {
            place: LValue::Field {
                base: Box::new(LValue::Var(VarId(0))),
                field: 3,
            },
            value: Expr::lit(Literal::F32(1.0)),
        })],
    );
    assert!(err(&k).contains("out of range"), "{}", err(&k));
}

#[test]
fn index_must_be_int32_and_break_in_loop() {
    let vec_ty = Ty::Vector(Box::new(Ty::F32));
    let read = Expr::new(
        ExprKind::Index {
            base: VarId(0),
            index: Box::new(Expr::lit(Literal::I64(0))),
        },
        Ty::F32,
    );
    let k = kernel(
        vec![var("x", vec_ty, false), var("y", Ty::F32, false)],
        vec![0],
        vec![st(StmtKind::Let {
            var: VarId(1),
            init: Some(read),
        })],
    );
    assert!(err(&k).contains("index"), "{}", err(&k));
    let k = kernel(vec![], vec![], vec![st(StmtKind::Break)]);
    assert!(err(&k).contains("outside a loop"), "{}", err(&k));
    let k = kernel(
        vec![],
        vec![],
        vec![st(StmtKind::While {
            cond: Expr::lit(Literal::Bool(true)),
            body: vec![st(StmtKind::Break)],
            unroll: None,
        })],
    );
    assert_eq!(validate(&k), Ok(()));
}

#[test]
fn call_arity_and_return_type() {
    let mut k = kernel(
        vec![var("a", Ty::I32, false), var("r", Ty::I32, false)],
        vec![],
        vec![],
    );
    k.functions.push(Function {
        name: "f".into(),
        span: Span::DUMMY,
        params: vec![VarId(0)],
        ret: Ty::I32,
        body: vec![st(StmtKind::Return(Some(Expr::lit(Literal::F32(0.0)))))],
    });
    assert!(err(&k).contains("returned value"), "{}", err(&k));
    k.functions[0].body = vec![st(StmtKind::Return(Some(v(0, Ty::I32))))];
    k.body = vec![st(StmtKind::Let {
        var: VarId(1),
        init: Some(Expr::new(
            ExprKind::Call {
                func: FuncId(0),
                args: vec![],
            },
            Ty::I32,
        )),
    })];
    assert!(err(&k).contains("arguments"), "{}", err(&k));
    k.body = vec![st(StmtKind::Let {
        var: VarId(1),
        init: Some(Expr::new(
            ExprKind::Call {
                func: FuncId(0),
                args: vec![Expr::i32(3)],
            },
            Ty::I32,
        )),
    })];
    assert_eq!(validate(&k), Ok(()));
}
