//! Hand-checked cases of seed 000's renaming rules.

use sarek_compiler::ir::build::*;
use sarek_compiler::ir::*;
use sarek_compiler::passes::legalize::{legalize, legalize_shader};
use sarek_compiler::passes::reserved::reserved;
use sarek_compiler::target::Target;

fn plus1(e: Expr) -> Expr {
    add(e, lit_f32(1.0))
}
/// A kernel `k` with `params`, then float32 locals; `body` gets all the variables in order.
fn kernel(
    params: &[(&str, Ty)],
    locals: &[&str],
    body: impl FnOnce(&KernelBuilder, &[VarId]) -> Block,
) -> Kernel {
    let mut b = KernelBuilder::new("k");
    let mut vars: Vec<VarId> = params.iter().map(|(n, t)| b.param(n, t.clone())).collect();
    vars.extend(locals.iter().map(|n| b.var(n, Ty::F32)));
    let body = body(&b, &vars);
    b.finish(body)
}
fn names(k: &Kernel) -> Vec<&str> {
    k.vars.iter().map(|v| v.name.as_str()).collect()
}

#[test]
fn self_referencing_shadow_is_renamed() {
    // let s = s +. 1.0 in let s = s +. 1.0 in ...: in C, `float s = s + 1.0f` would read itself.
    let k = kernel(&[("s", Ty::F32)], &["s", "s"], |b, v| {
        vec![
            let_(v[1], plus1(b.read(v[0]))),
            let_(v[2], plus1(b.read(v[1]))),
        ]
    });
    let out = legalize(&k, &reserved(Target::OpenCl), true);
    assert_eq!(names(&out), ["s", "s_1", "s_2"]);
}

#[test]
fn smallest_unused_suffix_and_invalid_names() {
    // `s_1` is already a name of the kernel, so the shadowing `s` becomes `s_2`; `x'` is not an
    // identifier and `float4`/`get_id` are OpenCL names. Every `get_id_<k>` is in OpenCL's
    // `get_*` family too, so that one falls back to the `v_` stem.
    let locals = ["s_1", "s", "x'", "float4", "get_id"];
    let k = kernel(&[("s", Ty::F32)], &locals, |b, v| {
        (1..=5).map(|i| let_(v[i], b.read(v[i - 1]))).collect()
    });
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
    let k = kernel(&[("int", Ty::F32)], &["t", "t", "int"], |b, v| {
        vec![
            st(StmtKind::Block(vec![let_(v[1], b.read(v[0]))])),
            st(StmtKind::Block(vec![let_(v[2], b.read(v[0]))])),
            let_(v[3], b.read(v[0])),
        ]
    });
    let r = reserved(Target::Cuda);
    assert_eq!(names(&legalize(&k, &r, true)), ["int_1", "t", "t", "int_2"]);
    assert_eq!(names(&legalize(&k, &r, false)), ["int", "t", "t", "int_1"]);
}

#[test]
fn shader_variant_keeps_reserved_words_and_vector_params() {
    // Shader: `int` stays (the escaper's job), `x'` is renamed, a local redeclaring a local is
    // renamed, a local named like a vector parameter (a buffer) is renamed, a local shadowing a
    // scalar parameter stays.
    let params = [("buf", vector_of(Ty::F32)), ("n", Ty::F32)];
    let k = kernel(&params, &["int", "int", "x'", "buf", "n"], |b, v| {
        let mut body: Block = (2..=5).map(|i| let_(v[i], b.read(v[i - 1]))).collect();
        body.push(let_(v[6], b.read(v[1])));
        body
    });
    let out = legalize_shader(&k);
    assert_eq!(
        names(&out),
        ["buf", "n", "int", "int_1", "x_1", "buf_1", "n"]
    );
}

#[test]
fn native_kernels_are_left_alone() {
    let k = kernel(&[("int", Ty::F32)], &["int"], |b, v| {
        vec![let_(v[1], b.read(v[0])), native("int = 1;")]
    });
    assert_eq!(legalize(&k, &reserved(Target::OpenCl), true), k);
}

#[test]
fn helper_names_and_params() {
    // A helper named `max` (an OpenCL built-in) is renamed; its parameter `x'` too; a kernel local
    // named like the helper is renamed so that the call still reaches the function.
    let mut b = KernelBuilder::new("k");
    let x = b.var("x'", Ty::F32);
    let local = b.var("max_1", Ty::F32);
    let max = b.func("max", vec![x], Ty::F32, vec![return_(Some(b.read(x)))]);
    let body = vec![let_(local, b.call(max, vec![lit_f32(1.0)]))];
    let mut k = b.finish(body);
    let out = legalize(&k, &reserved(Target::OpenCl), true);
    assert_eq!(out.functions[0].name, "max_2");
    assert_eq!(names(&out), ["x_1", "max_1"]);
    k.vars[1].name = "max".into();
    let out = legalize(&k, &reserved(Target::OpenCl), true);
    assert_eq!(out.functions[0].name, "max_1");
    assert_eq!(names(&out), ["x_1", "max_2"]);
}
