//! The validator accepts well-formed kernels and names the first broken invariant otherwise.

use sarek_compiler::ir::build::*;
use sarek_compiler::ir::validate::validate;
use sarek_compiler::ir::*;

/// A kernel `k` with the record `p = { x : float32 }`.
fn builder() -> KernelBuilder {
    let mut b = KernelBuilder::new("k");
    b.record("p", &[("x", Ty::F32)]);
    b
}
fn err(k: &Kernel) -> String {
    validate(k)
        .expect_err("validator accepted a broken kernel")
        .message
}

#[test]
fn accepts_shadowing_let() {
    // let s = s + 1.0 in: the initialiser reads the parameter.
    let mut b = builder();
    let s = b.param("s", Ty::F32);
    let shadow = b.var("s", Ty::F32);
    let body = vec![let_(shadow, add(b.read(s), lit_f32(1.0)))];
    assert_eq!(validate(&b.finish(body)), Ok(()));
}

#[test]
fn use_before_binding() {
    let mut b = builder();
    let x = b.var("a", Ty::I32);
    let y = b.var("b", Ty::I32);
    let body = vec![let_(x, b.read(y)), let_(y, lit_i32(1))];
    let k = b.finish(body);
    assert!(err(&k).contains("before it is bound"), "{}", err(&k));
}

#[test]
fn out_of_scope() {
    let mut b = builder();
    let x = b.var("a", Ty::I32);
    let y = b.var("b", Ty::I32);
    let body = vec![
        st(StmtKind::Block(vec![let_(x, lit_i32(1))])),
        let_(y, b.read(x)),
    ];
    let k = b.finish(body);
    assert!(err(&k).contains("out of its scope"), "{}", err(&k));
}

#[test]
fn bound_twice() {
    let mut b = builder();
    let x = b.var("a", Ty::I32);
    let k = b.finish(vec![let_(x, lit_i32(1)), let_(x, lit_i32(2))]);
    assert!(err(&k).contains("bound twice"), "{}", err(&k));
}

#[test]
fn type_mismatch_and_bad_condition() {
    let mut b = builder();
    let x = b.var("a", Ty::F32);
    let k = b.finish(vec![let_(x, lit_i32(1))]);
    assert!(err(&k).contains("initialiser"), "{}", err(&k));
    let k = builder().finish(vec![if_(lit_i32(1), vec![], vec![])]);
    assert!(err(&k).contains("condition"), "{}", err(&k));
}

#[test]
fn immutable_assignment_and_field_range() {
    let mut b = builder();
    let x = b.param("a", Ty::I32);
    let k = b.finish(vec![assign(x, lit_i32(1))]);
    assert!(err(&k).contains("immutable"), "{}", err(&k));
    let mut b = builder();
    let r = b.mut_param("r", Ty::Record(RecordId(0)));
    let place = LValue::Field {
        base: Box::new(LValue::Var(r)),
        field: 3,
    };
    let k = b.finish(vec![assign_to(place, lit_f32(1.0))]);
    assert!(err(&k).contains("out of range"), "{}", err(&k));
}

#[test]
fn index_must_be_int32_and_break_in_loop() {
    let mut b = builder();
    let x = b.vector("x", Ty::F32);
    let y = b.var("y", Ty::F32);
    let body = vec![let_(y, b.index(x, lit_i64(0)))];
    let k = b.finish(body);
    assert!(err(&k).contains("index"), "{}", err(&k));
    let k = builder().finish(vec![st(StmtKind::Break)]);
    assert!(err(&k).contains("outside a loop"), "{}", err(&k));
    let k = builder().finish(vec![while_(lit_bool(true), vec![st(StmtKind::Break)])]);
    assert_eq!(validate(&k), Ok(()));
}

#[test]
fn call_arity_and_return_type() {
    let mut b = builder();
    let x = b.var("a", Ty::I32);
    let r = b.var("r", Ty::I32);
    let f = b.func("f", vec![x], Ty::I32, vec![return_(Some(lit_f32(0.0)))]);
    let (no_args, one_arg) = (b.call(f, vec![]), b.call(f, vec![lit_i32(3)]));
    let returns_x = vec![return_(Some(b.read(x)))];
    let mut k = b.finish(vec![]);
    assert!(err(&k).contains("returned value"), "{}", err(&k));
    k.functions[0].body = returns_x;
    k.body = vec![let_(r, no_args)];
    assert!(err(&k).contains("arguments"), "{}", err(&k));
    k.body = vec![let_(r, one_arg)];
    assert_eq!(validate(&k), Ok(()));
}
