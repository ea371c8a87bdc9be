//! Pathological kernels for the compiler (issue 17, second round): thousands of helpers,
//! helpers called at many types (monomorphisation), records with hundreds of fields and
//! variants with hundreds of constructors, nesting at the parser's depth limit and just past
//! it, and identifiers that are keywords or generated names of every target. Each must either
//! compile on all six targets with the output accepted by each one's validator (through
//! `reliability::Tools`: naga, glslang + spirv-val, clang, NVRTC, ptxas, clang + Metal shim),
//! or be refused with a located error (the front end's, or a refusal naming the target).

use crate::reliability::Tools;
use sarek_compiler::diag::{SourceMap, render_all};
use sarek_compiler::{Target, TargetOptions};
use std::fmt::Write;

/// Words that are keywords, reserved or built-in names of C, OpenCL C, CUDA, Metal, GLSL,
/// WGSL or PTX, or spellings of names the generators make (`sarek_*`, `x_1`, `_x1`), and
/// that Sarek accepts as identifiers. (`length` and `mutable` are Sarek's own.)
const HOSTILE_WORDS: &str = "
    int float double char short long unsigned signed void struct union enum typedef static
    const volatile register extern auto switch case default break continue goto return
    sizeof inline restrict kernel __kernel global __global local __local constant __constant
    private __private half bool uint ulong uchar ushort size_t ptrdiff_t intptr_t threadIdx
    blockIdx blockDim gridDim warpSize __syncthreads atomicAdd device thread threadgroup
    metal using namespace template class this new delete operator friend virtual public
    protected asm main printf get_global_id get_local_id barrier min max sqrt fma select all
    any dot vec2 vec3 vec4 mat2 ivec2 uvec2 dvec2 float2 float4 int2 sampler texture
    image2d_t discard uniform buffer layout shared coherent readonly writeonly std430
    location binding out inout gl_GlobalInvocationID gl_x __x _x __ var fn loop fallthrough
    workgroup storage array ptr atomic vec bitcast override enable requires diagnostic alias
    const_assert f32 i32 u32 f16 reg param tex entry func ld st add mov bra ret exit pred
    b32 u64 s32 f64 sarek_rt_i32 sarek_h_opaque_i32 sarek_trap_status sarek_block_x
    sarek_cut0_x sarek_x sarek_q_x x_1 i_1 _x1 _1 a1 nullptr null undefined char16_t wchar_t
    noexcept constexpr decltype static_assert thread_local alignas alignof export import
    module_ concept co_await typename typeid explicit final override_ volatile_ __restrict
    __attribute__ __device__ __global__ __shared__ __constant__ __host__ __launch_bounds__
    get_group_id vload4 as_float as_int convert_int mad clamp mix step smoothstep sign ceil
    floor round trunc exp log pow sin cos tan popcount clz abs
";

/// Every word of [`HOSTILE_WORDS`] in every naming position: record fields, constructors
/// (capitalised), helpers and their parameters, locals (with shadowing that makes
/// legalize rename), kernel parameters, a shared array, the kernel and its types.
fn keywords_kernel() -> String {
    let words: Vec<&str> = HOSTILE_WORDS.split_whitespace().collect();
    let (params, rest) = words.split_at(24);
    let (fields, rest) = rest.split_at(56);
    let (ctor_words, rest) = rest.split_at(40);
    let (helpers, locals) = rest.split_at(30);
    let ctors: Vec<String> = ctor_words
        .iter()
        .filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic()))
        .map(|w| w[..1].to_uppercase() + &w[1..])
        .collect();
    let mut s = String::new();
    let fields_decl: Vec<String> = fields.iter().map(|f| format!("{f} : int32")).collect();
    writeln!(s, "type kernel = {{ {} }}", fields_decl.join("; ")).unwrap();
    let ctors_decl: Vec<String> = ctors.iter().map(|c| format!("{c} of int32")).collect();
    writeln!(s, "type main = {}", ctors_decl.join(" | ")).unwrap();
    for (j, h) in helpers.iter().enumerate() {
        writeln!(s, "let {h} ({h} : int32) : int32 = {h} + {j}").unwrap();
    }
    let plist: Vec<String> = params.iter().map(|p| format!("({p} : int32)")).collect();
    writeln!(
        s,
        "let%kernel kernel (o : int32 vector) (p : int32 vector) (r : kernel vector) (m : main vector) {} =",
        plist.join(" ")
    )
    .unwrap();
    s.push_str(
        "  let i = global_thread_id in\n  let i_1 = i + 1 in let i = i + i_1 in let _x1 = i in\n",
    );
    for (j, l) in locals.iter().enumerate() {
        writeln!(s, "  let {l} = i + {j} in").unwrap();
    }
    let mut terms: Vec<String> = locals.iter().chain(params).map(|w| w.to_string()).collect();
    terms.extend(helpers.iter().map(|h| format!("{h} i")));
    terms.extend(fields.iter().map(|f| format!("r.(i).{f}")));
    let arms: Vec<String> = ctors
        .iter()
        .enumerate()
        .map(|(j, c)| format!("{c} x -> x + {j}"))
        .collect();
    writeln!(
        s,
        "  if i < length o then begin\n    o.(i) <- {} + _x1;\n    p.(i) <- (match m.(i) with {});\n    let%shared (main : int32) = 32 in main.(thread_idx_x mod 32) <- i\n  end",
        terms.join(" + "),
        arms.join(" | ")
    )
    .unwrap();
    s
}

/// A kernel writing `e` to `v.(i)`.
fn kernel_of(e: &str) -> String {
    format!(
        "let%kernel k (v : int32 vector) =\n  let i = global_thread_id in\n  if i < length v then v.(i) <- {e}\n"
    )
}

/// `depth` parenthesised `if`s, each inside the last (two parser levels each).
fn nested_ifs(depth: usize) -> String {
    (0..depth).fold("0".to_string(), |e, j| {
        format!("(if i > {j} then {e} else {j})")
    })
}

/// `depth` parenthesised `match`es, each inside the last.
fn nested_matches(depth: usize) -> String {
    (0..depth).fold("0".to_string(), |e, j| {
        format!("(match i with {j} -> {e} | _ -> {j})")
    })
}

/// An `else if` chain of `n` conditions (each `else if` is one level of nesting).
fn else_if_chain(n: usize) -> String {
    (0..n).fold("0".to_string(), |e, j| {
        format!("if i > {j} then {j} else {e}")
    })
}

/// `n` helpers, each called once from the kernel.
fn many_helpers(n: usize) -> String {
    let mut s = String::new();
    for j in 0..n {
        writeln!(s, "let h{j} (x : int32) : int32 = x * {} + {j}", j % 7 + 1).unwrap();
    }
    let calls: Vec<String> = (0..n).map(|j| format!("h{j} i")).collect();
    s + &kernel_of(&calls.join(" + "))
}

/// `n` helpers, each calling the one before twice (2^n calls if everything were inlined).
fn doubling_helpers(n: usize) -> String {
    let mut s = String::from("let c0 (x : int32) : int32 = x + 1\n");
    for j in 1..n {
        writeln!(
            s,
            "let c{j} (x : int32) : int32 = c{} x + c{} (x + 1)",
            j - 1,
            j - 1
        )
        .unwrap();
    }
    s + &kernel_of(&format!("c{} i", n - 1))
}

/// `n` polymorphic helpers of two type variables, each calling the one before twice, the
/// last called at every pair of scalar types (25 instances of each helper).
fn polymorphic_helpers(n: usize) -> String {
    let mut s = String::from("let p0 (x : 'a) (y : 'b) : 'a = x\n");
    for j in 1..n {
        writeln!(
            s,
            "let p{j} (x : 'a) (y : 'b) : 'a = p{} (p{} x y) y",
            j - 1,
            j - 1
        )
        .unwrap();
    }
    let literals = ["1", "1L", "1.0", "1.0d", "true"];
    let mut body = String::new();
    for a in literals {
        for b in literals {
            writeln!(body, "  ignore (p{} {a} {b});", n - 1).unwrap();
        }
    }
    writeln!(
        s,
        "let%kernel k (v : int32 vector) =\n{body}  v.(0) <- p{} 1 2.0",
        n - 1
    )
    .unwrap();
    s
}

/// A record of `n` fields and a variant of `n` constructors, as vector elements.
fn wide_types(n: usize) -> String {
    let fields: Vec<String> = (0..n).map(|j| format!("f{j} : float32")).collect();
    let ctors: Vec<String> = (0..n).map(|j| format!("C{j} of int32")).collect();
    let arms: Vec<String> = (0..n).map(|j| format!("C{j} x -> x + {j}")).collect();
    format!(
        "type big = {{ {} }}\ntype many = {}\n\
         let%kernel k (r : big vector) (m : many vector) (o : float32 vector) (p : int32 vector) =\n  \
         let i = global_thread_id in\n  \
         if i < length o then begin\n    \
         o.(i) <- r.(i).f0 +. r.(i).f{};\n    \
         p.(i) <- (match m.(i) with {})\n  end\n",
        fields.join("; "),
        ctors.join(" | "),
        n - 1,
        arms.join(" | ")
    )
}

/// Check, lower and generate every kernel of `text` for the six targets; each output goes
/// through its validator, each refusal must be located and name its target.
fn compiles_and_validates(name: &str, text: &str, tools: &Tools) {
    let mut sources = SourceMap::new();
    let file = sources.add(name, text);
    let program = sarek_compiler::check(&sources, file)
        .unwrap_or_else(|d| panic!("{name}: {}", render_all(&d, &sources, false)));
    for k in &program.kernels {
        let ir = sarek_compiler::lower_kernel(&program, &k.name)
            .unwrap_or_else(|d| panic!("{name}: {}", render_all(&d, &sources, false)));
        for target in Target::ALL.into_iter().filter(|t| *t != Target::Ir) {
            match sarek_compiler::generate(&ir, target, &TargetOptions::default()) {
                Ok(g) => match tools.validate(target, &g.source) {
                    Ok(_) => {}
                    Err(e) => panic!("{name} on {target}: the validator rejected it:\n{e}"),
                },
                Err(diags) => {
                    let rendered = render_all(&diags, &sources, false);
                    assert!(
                        diags.iter().all(|d| !d.span.is_dummy())
                            && rendered.contains(target.display_name()),
                        "{name} on {target}: refused without a place or the target's name:\n{rendered}"
                    );
                }
            }
        }
    }
}

/// The front end's refusal of `text`: one located error whose message contains `phrase`.
fn refused(name: &str, text: &str, phrase: &str) {
    let mut sources = SourceMap::new();
    let file = sources.add(name, text);
    let Err(diags) = sarek_compiler::check(&sources, file) else {
        panic!("{name}: accepted");
    };
    let rendered = render_all(&diags, &sources, false);
    assert!(
        diags.iter().all(|d| !d.span.is_dummy()) && rendered.contains(phrase),
        "{name}: {rendered}"
    );
    assert!(rendered.contains(&format!("{name}:")), "{name}: {rendered}");
}

#[test]
fn many_and_doubling_helpers_validate_everywhere() {
    let tools = Tools::find();
    compiles_and_validates("many_helpers.sarek", &many_helpers(1000), &tools);
    compiles_and_validates("doubling_helpers.sarek", &doubling_helpers(200), &tools);
}

#[test]
fn helpers_instantiated_at_every_type_validate_or_are_refused_located() {
    let tools = Tools::find();
    compiles_and_validates("polymorphic.sarek", &polymorphic_helpers(20), &tools);
}

#[test]
fn hundreds_of_fields_and_constructors_validate_everywhere() {
    let tools = Tools::find();
    compiles_and_validates("wide.sarek", &wide_types(400), &tools);
}

#[test]
fn identifiers_named_like_every_targets_keywords_validate_everywhere() {
    let tools = Tools::find();
    compiles_and_validates("keywords.sarek", &keywords_kernel(), &tools);
}

/// Nesting is bounded by the parser (`MAX_DEPTH`, 256 levels; a parenthesised `if` or
/// `match` is two): the deepest accepted kernel validates on every target, one more level is a
/// located error.
#[test]
fn nesting_at_the_depth_limit_validates_and_past_it_is_refused() {
    let tools = Tools::find();
    type Nesting = fn(usize) -> String;
    let cases: [(&str, Nesting, usize); 3] = [
        ("nested_ifs", nested_ifs, 126),
        ("nested_matches", nested_matches, 126),
        ("else_if_chain", else_if_chain, 252),
    ];
    for (name, make, deepest) in cases {
        compiles_and_validates(&format!("{name}.sarek"), &kernel_of(&make(deepest)), &tools);
        refused(
            &format!("{name}_past.sarek"),
            &kernel_of(&make(deepest + 1)),
            "nested too deeply",
        );
    }
}

/// The lexer takes ASCII identifiers only: a Unicode letter is a located error.
#[test]
fn unicode_identifiers_are_refused_located() {
    refused("unicode.sarek", &kernel_of("let λ = 1 in λ"), "λ");
    refused("unicode_ctor.sarek", "type t = Ä of int32\n", "Ä");
}

/// The located refusal of `text`'s kernel `k` by `target` under `options`, rendered.
fn target_refusal(name: &str, text: &str, target: Target, options: &TargetOptions) -> String {
    let mut sources = SourceMap::new();
    let file = sources.add(name, text);
    let program = sarek_compiler::check(&sources, file)
        .unwrap_or_else(|d| panic!("{name}: {}", render_all(&d, &sources, false)));
    let ir = sarek_compiler::lower_kernel(&program, "k").unwrap();
    let Err(diags) = sarek_compiler::generate(&ir, target, options) else {
        panic!("{name}: {target} accepted it");
    };
    assert!(diags.iter().all(|d| !d.span.is_dummy()), "{diags:?}");
    render_all(&diags, &sources, false)
}

/// ptxas's time grows about five-fold per doubling of `.func`s (3 s for 200, 16 s for 400,
/// a minute for 800): past `PTX_MAX_FUNCTIONS` the PTX target refuses, located, where it
/// compiled for minutes. (200 helpers validate in `many_and_doubling_helpers_...`.)
#[test]
fn ptx_refuses_more_outlined_helpers_than_ptxas_compiles_quickly() {
    let text = doubling_helpers(400);
    let shown = target_refusal("funcs.sarek", &text, Target::Ptx, &TargetOptions::default());
    // The PTX the generator wrote before: one `.func` per outlined helper.
    let mut sources = SourceMap::new();
    let file = sources.add("funcs.sarek", text.as_str());
    let program = sarek_compiler::check(&sources, file).unwrap();
    let ir = sarek_compiler::lower_kernel(&program, "k").unwrap();
    let funcs = sarek_compiler::ir::analysis::outlined_helpers(&ir)
        .iter()
        .filter(|&&o| o)
        .count();
    assert!(funcs > 256, "{funcs}");
    assert!(
        shown.contains(&format!("writes {funcs} helpers as functions of their own"))
            && shown.contains("PTX allows at most 256")
            && shown.contains("funcs.sarek:401:"),
        "{shown}"
    );
}

/// `n` vectors, each read into the first.
fn many_vectors(n: usize) -> String {
    let params: Vec<String> = (0..n).map(|j| format!("(v{j} : int32 vector)")).collect();
    let reads: Vec<String> = (1..n).map(|j| format!("v{j}.(0)")).collect();
    format!(
        "let%kernel k {} =\n  v0.(0) <- {}\n",
        params.join(" "),
        reads.join(" + ")
    )
}

/// Portable WGSL binds at most WebGPU's default 8 storage buffers per shader stage, the trap
/// status word of a checked kernel included: naga accepted 9, a browser refuses the pipeline.
#[test]
fn portable_wgsl_binds_at_most_eight_storage_buffers() {
    let tools = Tools::find();
    compiles_and_validates("eight.sarek", &many_vectors(8), &tools);
    let shown = target_refusal(
        "nine.sarek",
        &many_vectors(9),
        Target::Wgsl,
        &TargetOptions::default(),
    );
    // The ninth vector (`v8`) is the one over the limit.
    let col = many_vectors(9).find("(v8 :").unwrap() + 2;
    assert!(
        shown.contains("needs 9 storage buffers, WGSL binds at most 8")
            && shown.contains(&format!("nine.sarek:1:{col}"))
            && shown.contains("maxStorageBuffersPerShaderStage"),
        "{shown}"
    );
    let checked = TargetOptions {
        checked: true,
        ..TargetOptions::default()
    };
    let shown = target_refusal("eight.sarek", &many_vectors(8), Target::Wgsl, &checked);
    assert!(shown.contains("needs 9 storage buffers"), "{shown}");
    // On a device its own limit applies (`portable: false`, as the wgpu backend generates).
    let device = TargetOptions {
        portable: false,
        ..TargetOptions::default()
    };
    let ir = {
        let mut sources = SourceMap::new();
        let file = sources.add("nine.sarek", many_vectors(9));
        let program = sarek_compiler::check(&sources, file).unwrap();
        sarek_compiler::lower_kernel(&program, "k").unwrap()
    };
    assert!(sarek_compiler::generate(&ir, Target::Wgsl, &device).is_ok());
}
