//! Hand-checked cases of seed 000's renaming rules.

use sarek_compiler::diag::Span;
use sarek_compiler::ir::*;
use sarek_compiler::passes::legalize::{legalize, legalize_shader};
use sarek_compiler::passes::reserved::reserved;
use sarek_compiler::target::Target;
use sarek_compiler::types::{BinOp, Literal};

fn var(name: &str, ty: Ty) -> VarInfo {
    VarInfo {
        name: name.into(),
        ty,
        mutable: false,
        span: Span::DUMMY,
    }
}
fn st(kind: StmtKind) -> Stmt {
    Stmt {
        kind,
        span: Span::DUMMY,
    }
}
fn let_(id: u32, init: Expr) -> Stmt {
    st(StmtKind::Let {
        var: VarId(id),
        init: Some(init),
    })
}
fn v(id: u32) -> Expr {
    Expr::new(ExprKind::Var(VarId(id)), Ty::F32)
}
fn plus1(e: Expr) -> Expr {
    Expr::new(
        ExprKind::Binary {
            op: BinOp::Add,
            lhs: Box::new(e),
            rhs: Box::new(Expr::lit(Literal::F32(1.0))),
        },
        Ty::F32,
    )
}
fn kernel(vars: Vec<VarInfo>, params: Vec<u32>, body: Block) -> Kernel {
    Kernel {
        name: "k".into(),
        span: Span::DUMMY,
        vars,
        params: params.into_iter().map(VarId).collect(),
        body,
        records: vec![],
        variants: vec![],
        functions: vec![],
    }
}
fn names(k: &Kernel) -> Vec<&str> {
    k.vars.iter().map(|v| v.name.as_str()).collect()
}

#[test]
fn self_referencing_shadow_is_renamed() {
    // let s = s +. 1.0 in let s = s +. 1.0 in ...: in C, `float s = s + 1.0f` would read itself.
    let k = kernel(
        vec![var("s", Ty::F32), var("s", Ty::F32), var("s", Ty::F32)],
        vec![0],
        vec![let_(1, plus1(v(0))), let_(2, plus1(v(1)))],
    );
    let out = legalize(&k, &reserved(Target::OpenCl), true);
    assert_eq!(names(&out), ["s", "s_1", "s_2"]);
}

#[test]
fn smallest_unused_suffix_and_invalid_names() {
    // `s_1` is already a name of the kernel, so the shadowing `s` becomes `s_2`; `x'` is not an
    // identifier and `float4`/`get_id` are OpenCL names. Every `get_id_<k>` is in OpenCL's
    // `get_*` family too, so that one falls back to the `v_` stem.
    let k = kernel(
        vec![
            var("s", Ty::F32),
            var("s_1", Ty::F32),
            var("s", Ty::F32),
            var("x'", Ty::F32),
            var("float4", Ty::F32),
            var("get_id", Ty::F32),
        ],
        vec![0],
        vec![
            let_(1, v(0)),
            let_(2, v(1)),
            let_(3, v(2)),
            let_(4, v(3)),
            let_(5, v(4)),
        ],
    );
    let out = legalize(&k, &reserved(Target::OpenCl), true);
    assert_eq!(
        names(&out),
        ["s", "s_1", "s_2", "x_1", "float4_1", "v_get_id_1"]
    );
    // Idempotent.
    assert_eq!(legalize(&out, &reserved(Target::OpenCl), true), out);
}

#[test]
fn siblings_do_not_conflict_and_params_follow_the_flag() {
    // { let t } { let t }: sibling scopes may reuse a name. Parameter `int`: renamed only
    // when parameters may be renamed; a local shadowing a kept parameter stays.
    let k = kernel(
        vec![
            var("int", Ty::F32),
            var("t", Ty::F32),
            var("t", Ty::F32),
            var("int", Ty::F32),
        ],
        vec![0],
        vec![
            st(StmtKind::Block(vec![let_(1, v(0))])),
            st(StmtKind::Block(vec![let_(2, v(0))])),
            let_(3, v(0)),
        ],
    );
    let r = reserved(Target::Cuda);
    assert_eq!(names(&legalize(&k, &r, true)), ["int_1", "t", "t", "int_2"]);
    assert_eq!(names(&legalize(&k, &r, false)), ["int", "t", "t", "int_1"]);
}

#[test]
fn shader_variant_keeps_reserved_words_and_vector_params() {
    // Shader: `int` stays (the escaper's job), `x'` is renamed, a local redeclaring a local is
    // renamed, a local named like a vector parameter (a buffer) is renamed, a local shadowing a
    // scalar parameter stays.
    let vec_ty = Ty::Vector(Box::new(Ty::F32));
    let k = kernel(
        vec![
            var("buf", vec_ty),
            var("n", Ty::F32),
            var("int", Ty::F32),
            var("int", Ty::F32),
            var("x'", Ty::F32),
            var("buf", Ty::F32),
            var("n", Ty::F32),
        ],
        vec![0, 1],
        vec![
            let_(2, v(1)),
            let_(3, v(2)),
            let_(4, v(3)),
            let_(5, v(4)),
            let_(6, v(1)),
        ],
    );
    let out = legalize_shader(&k);
    assert_eq!(
        names(&out),
        ["buf", "n", "int", "int_1", "x_1", "buf_1", "n"]
    );
}

#[test]
fn native_kernels_are_left_alone() {
    let k = kernel(
        vec![var("int", Ty::F32), var("int", Ty::F32)],
        vec![0],
        vec![let_(1, v(0)), st(StmtKind::Native("int = 1;".into()))],
    );
    assert_eq!(legalize(&k, &reserved(Target::OpenCl), true), k);
}

#[test]
fn helper_names_and_params() {
    // A helper named `max` (an OpenCL built-in) is renamed; its parameter `x'` too; a kernel local
    // named like the helper is renamed so that the call still reaches the function.
    let mut k = kernel(
        vec![var("x'", Ty::F32), var("max_1", Ty::F32)],
        vec![],
        vec![],
    );
    k.functions.push(Function {
        name: "max".into(),
        span: Span::DUMMY,
        params: vec![VarId(0)],
        ret: Ty::F32,
        body: vec![st(StmtKind::Return(Some(v(0))))],
    });
    k.body = vec![let_(
        1,
        Expr::new(
            ExprKind::Call {
                func: FuncId(0),
                args: vec![Expr::lit(Literal::F32(1.0))],
            },
            Ty::F32,
        ),
    )];
    let out = legalize(&k, &reserved(Target::OpenCl), true);
    assert_eq!(out.functions[0].name, "max_2");
    assert_eq!(names(&out), ["x_1", "max_1"]);
    k.vars[1].name = "max".into();
    let out = legalize(&k, &reserved(Target::OpenCl), true);
    assert_eq!(out.functions[0].name, "max_1");
    assert_eq!(names(&out), ["x_1", "max_2"]);
}
