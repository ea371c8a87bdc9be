//! Hand-checked cases of seed 000's renaming rules.

use sarek_compiler::back::names::Keywords;
use sarek_compiler::ir::build::*;
use sarek_compiler::ir::*;
use sarek_compiler::passes::legalize::{Params, legalize};
use sarek_compiler::target::Target;

/// Legalized for OpenCL C (kernel parameters bound by position).
fn opencl(k: &Kernel) -> Kernel {
    legalize(k, Keywords::of(Target::OpenCl), Params::Positional).into_owned()
}

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
    let out = opencl(&k);
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
    let out = opencl(&k);
    assert_eq!(
        names(&out),
        ["s", "s_1", "s_2", "x_1", "float4_1", "v_get_id_1"]
    );
    // Idempotent.
    assert_eq!(opencl(&out), out);
}

#[test]
fn siblings_do_not_conflict_and_params_follow_the_target() {
    // { let t } { let t }: sibling scopes may reuse a name. Parameter `int`: renamed only
    // where parameters are bound by position; a local never shadows a kept one.
    let k = kernel(&[("int", Ty::F32)], &["t", "t", "int"], |b, v| {
        vec![
            st(StmtKind::Block(vec![let_(v[1], b.read(v[0]))])),
            st(StmtKind::Block(vec![let_(v[2], b.read(v[0]))])),
            let_(v[3], b.read(v[0])),
        ]
    });
    let cuda = Keywords::of(Target::Cuda);
    let positional = legalize(&k, cuda, Params::Positional);
    assert_eq!(names(&positional), ["int_1", "t", "t", "int_2"]);
    let module_scope = legalize(&k, cuda, Params::ModuleScope);
    assert_eq!(names(&module_scope), ["int", "t", "t", "int_1"]);
}

#[test]
fn module_scope_params_keep_their_names() {
    // Shader (WGSL): parameters keep their names, even reserved (`ref`: the escaper's job);
    // a reserved local (`max`), a local redeclaring a local, `x'` and a local named like a
    // vector parameter (a buffer) are renamed; one named like a scalar parameter (read as a
    // `params` member) stays.
    let params = [
        ("buf", vector_of(Ty::F32)),
        ("n", Ty::F32),
        ("ref", Ty::F32),
    ];
    let k = kernel(&params, &["max", "max", "x'", "buf", "n"], |b, v| {
        let mut body: Block = (3..=6).map(|i| let_(v[i], b.read(v[i - 1]))).collect();
        body.push(let_(v[7], b.read(v[1])));
        body
    });
    let out = legalize(&k, Keywords::of(Target::Wgsl), Params::ModuleScope);
    assert_eq!(
        names(&out),
        ["buf", "n", "ref", "max_1", "max_2", "x_1", "buf_1", "n"]
    );
}

#[test]
fn native_kernels_are_left_alone() {
    let k = kernel(&[("int", Ty::F32)], &["int"], |b, v| {
        vec![let_(v[1], b.read(v[0])), native("int = 1;")]
    });
    assert_eq!(opencl(&k), k);
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
    let out = opencl(&k);
    assert_eq!(out.functions[0].name, "max_2");
    assert_eq!(names(&out), ["x_1", "max_1"]);
    k.vars[1].name = "max".into();
    let out = opencl(&k);
    assert_eq!(out.functions[0].name, "max_1");
    assert_eq!(names(&out), ["x_1", "max_2"]);
}
