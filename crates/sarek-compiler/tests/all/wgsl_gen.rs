//! WGSL generator: naga validates every output; refusals name WGSL; output is deterministic
//! across threads; the seed's naming behaviours hold.

use naga::valid::{Capabilities, ValidationFlags, Validator};
use sarek_compiler::abi::{AbiParamKind, ArgSlot};
use sarek_compiler::back::wgsl;
use sarek_compiler::{Target, TargetOptions};
use sarek_testkit::ir_kernels::wgsl as k;

/// Parse and validate with every validation flag and the capabilities the generator may emit.
pub fn naga_validate(src: &str) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(src).map_err(|e| e.emit_to_string(src))?;
    Validator::new(ValidationFlags::all(), Capabilities::SUBGROUP)
        .validate(&module)
        .map(|_| ())
        .map_err(|e| e.emit_to_string(src))
}

fn gen_ok(kernel: &sarek_compiler::ir::Kernel) -> sarek_compiler::Generated {
    match wgsl::generate(kernel, &TargetOptions::default()) {
        Ok(g) => g,
        Err(d) => panic!("kernel `{}` refused: {:?}", kernel.name, d),
    }
}

#[test]
fn every_hand_built_kernel_validates_with_naga() {
    for kernel in k::expressible() {
        let g = gen_ok(&kernel);
        if let Err(e) = naga_validate(&g.source) {
            panic!(
                "kernel `{}`: naga rejects the WGSL:\n{e}\n{}",
                kernel.name, g.source
            );
        }
    }
}

#[test]
fn escape_families_stay_distinct() {
    let g = gen_ok(&k::escape_families());
    // Locals are binders: legalize renames the reserved ones (`__*`, `sarek_*`, `if`, the
    // generator's `params`) and the non-identifier `_` to `<stem>_<k>`, moving out of a
    // reserved family (`sarek_*`) with a `v_` stem.
    for decl in [
        "let i_1: i32",
        "let v_sarek_i_1: i32",
        "let v_1: i32",
        "let v_sarek_1: i32",
        "let if_1: i32",
        "let ifv: i32",
        "let v_sarek_if_1: i32",
        "let params_1: i32",
    ] {
        assert!(g.source.contains(decl), "missing `{decl}` in\n{}", g.source);
    }
    // All eight stay distinct.
    let mut lets: Vec<&str> = g
        .source
        .lines()
        .filter_map(|l| l.trim().strip_prefix("let ")?.split(':').next())
        .collect();
    lets.sort();
    lets.dedup();
    assert_eq!(lets.len(), 8, "{lets:?}");
}

#[test]
fn length_field_cannot_collide_with_a_user_scalar() {
    let g = gen_ok(&k::length_residual());
    naga_validate(&g.source).unwrap();
    // The scalar is escaped into the `sarek_` namespace; the length is minted under `sarek_len_`.
    assert!(
        g.source.contains("sarek_sarek_if_length: i32,"),
        "{}",
        g.source
    );
    assert!(
        g.source.contains("sarek_len_sarek_if: i32,"),
        "{}",
        g.source
    );
    let offsets: Vec<u32> = g
        .abi
        .params
        .iter()
        .flat_map(|p| match &p.kind {
            AbiParamKind::Value {
                slot: ArgSlot::Uniform { offset },
                ..
            } => vec![*offset],
            AbiParamKind::Vector {
                length: ArgSlot::Uniform { offset },
                ..
            } => vec![*offset],
            _ => vec![],
        })
        .collect();
    let mut dedup = offsets.clone();
    dedup.sort();
    dedup.dedup();
    assert_eq!(
        dedup.len(),
        offsets.len(),
        "uniform slots collide: {offsets:?}"
    );
}

#[test]
fn shadowing_local_reads_itself() {
    let g = gen_ok(&k::shadowing_local());
    assert!(
        g.source.contains("var width: i32 = params.width;"),
        "{}",
        g.source
    );
    assert!(
        g.source.contains("width = ((width * 2i) + 1i);"),
        "{}",
        g.source
    );
    assert!(
        g.source.contains("out[i32(sarek_gid.x)] = width;"),
        "{}",
        g.source
    );
}

#[test]
fn helpers_are_specialised_per_buffer() {
    let g = gen_ok(&k::helpers());
    assert!(
        g.source.contains("fn sum_to(n: i32) -> i32"),
        "{}",
        g.source
    );
    assert!(
        g.source.contains("fn sum_to_1(n: i32) -> i32"),
        "{}",
        g.source
    );
    assert!(
        g.source
            .contains("fn bump(a: ptr<function, array<i32, 4>>, k: i32)"),
        "{}",
        g.source
    );
    assert!(g.source.contains("bump(&loc, 1i)"), "{}", g.source);
}

#[test]
fn atomic_vectors_are_declared_atomic() {
    let g = gen_ok(&k::atomics());
    assert!(
        g.source
            .contains("var<storage, read_write> hist: array<atomic<i32>>;")
    );
    assert!(
        g.source
            .contains("var<storage, read_write> fsum: array<atomic<u32>>;")
    );
    assert!(
        g.source
            .contains("atomicStore(&flag[1i], atomicLoad(&flag[1i]));"),
        "{}",
        g.source
    );
    assert!(g.source.contains("v: array<i32>;"));
}

#[test]
fn refusals_name_wgsl_and_other_targets_still_compile() {
    for kernel in [k::wide(), k::vector_eq()] {
        let errs = wgsl::generate(&kernel, &TargetOptions::default()).unwrap_err();
        assert!(!errs.is_empty());
        for e in &errs {
            assert!(e.message.contains("WGSL"), "{}", e.message);
        }
    }
    let errs = wgsl::generate(&k::wide(), &TargetOptions::default()).unwrap_err();
    assert!(errs.iter().any(|e| e.message.contains("64-bit floats")));
    assert!(errs.iter().any(|e| e.message.contains("64-bit integers")));
    // The IR target is unaffected by WGSL's limits.
    sarek_compiler::generate(&k::wide(), Target::Ir, &TargetOptions::default()).unwrap();
}

#[test]
fn warp_operations_need_subgroups() {
    let no_sg = TargetOptions {
        subgroups: false,
        ..TargetOptions::default()
    };
    let errs = wgsl::generate(&k::warp(), &no_sg).unwrap_err();
    assert!(errs.iter().all(|e| e.message.contains("WGSL")), "{errs:?}");
    let g = gen_ok(&k::warp());
    assert!(g.source.contains("subgroupShuffleXor("));
    naga_validate(&g.source).unwrap();
}

#[test]
fn generation_is_deterministic_across_threads() {
    let kernels = k::expressible();
    let sequential: Vec<String> = kernels.iter().map(|k| gen_ok(k).source).collect();
    let results: Vec<Vec<String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let kernels = &kernels;
                s.spawn(move || {
                    // Each thread walks the kernels in a different order, several times.
                    let n = kernels.len();
                    let mut out = vec![String::new(); n];
                    for round in 0..5 {
                        for j in 0..n {
                            let idx = if t % 2 == 0 {
                                (j + t + round) % n
                            } else {
                                (2 * n - 1 - j + t) % n
                            };
                            out[idx] = gen_ok(&kernels[idx]).source;
                        }
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in results {
        assert_eq!(r, sequential);
    }
}

#[test]
fn abi_matches_declarations() {
    let g = gen_ok(&k::saxpy());
    assert_eq!(g.abi.entry_point, "saxpy");
    assert_eq!(g.abi.uniform_binding, Some((0, 0)));
    // a, n, then the lengths of x and y.
    assert_eq!(g.abi.uniform_size, Some(16));
    assert!(!g.abi.block_size_in_source);
    let slots: Vec<_> = g
        .abi
        .params
        .iter()
        .map(|p| (p.name.as_str(), p.kind.clone()))
        .collect();
    match &slots[0].1 {
        AbiParamKind::Vector { buffer, length, .. } => {
            assert_eq!(
                *buffer,
                ArgSlot::Binding {
                    group: 0,
                    binding: 1
                }
            );
            assert_eq!(*length, ArgSlot::Uniform { offset: 8 });
        }
        other => panic!("{other:?}"),
    }
    assert!(
        g.source
            .contains("@group(0) @binding(1) var<storage, read_write> x: array<f32>;")
    );
    assert!(g.source.contains(
        "struct Params {\n    a: f32,\n    n: i32,\n    sarek_len_x: i32,\n    sarek_len_y: i32,\n}"
    ));
}

/// The reserved tables are measured, not transcribed: naga rejects every keyword and reserved
/// word as a variable name, and the escaped spelling of each is accepted.
#[test]
fn reserved_tables_match_naga() {
    use sarek_compiler::back::names::{Keywords, Namer};
    use sarek_compiler::back::wgsl::keywords::{WGSL_KEYWORDS, WGSL_RESERVED};
    let namer = Namer::new(Keywords::of(sarek_compiler::Target::Wgsl));
    let escape = |w: &str| namer.escape(w);
    let probe = |name: &str| {
        format!(
            "@compute @workgroup_size(1)\nfn main() {{\n    var {name}: i32 = 1i;\n    {name} = {name} + 1i;\n}}\n"
        )
    };
    for w in WGSL_KEYWORDS.iter().chain(WGSL_RESERVED) {
        assert!(
            naga_validate(&probe(w)).is_err(),
            "naga accepts reserved `{w}`"
        );
        naga_validate(&probe(&escape(w))).unwrap_or_else(|e| panic!("escaped `{w}`: {e}"));
    }
}

#[test]
fn fences_become_barriers_only_where_the_workgroup_is_converged() {
    let g = gen_ok(&k::fences());
    let body = &g.source[g.source.find("fn fences").unwrap()..];
    // Top level: a block barrier; under `n > 0` (uniform): a storage barrier.
    assert!(
        body.contains(
            "    workgroupBarrier();\n    if ((params.n > 0i)) {\n        storageBarrier();"
        ),
        "{body}"
    );
    // Under `gid = 0`: no barrier, a comment.
    let divergent = &body[body.find("sarek_gid.x) == 0i").unwrap()..];
    assert!(!divergent.contains("Barrier()"), "{divergent}");
    assert!(
        divergent.contains("// memory_fence_device (): no WGSL equivalent"),
        "{divergent}"
    );
}

/// Lower the kernel `k` of `src` (file `deep.sarek`).
fn lower_source(src: &str) -> (sarek_compiler::SourceMap, sarek_compiler::ir::Kernel) {
    let mut sources = sarek_compiler::SourceMap::new();
    let file = sources.add("deep.sarek", src);
    let program = sarek_compiler::check(&sources, file).expect("checks");
    let kernel = sarek_compiler::lower_kernel(&program, "k").expect("lowers");
    (sources, kernel)
}

/// naga allows 127 levels of braces and 200 levels of parser recursion: a long `else if`
/// chain of statements is written flat and validates; a chain of values (nested `select`s)
/// past the parser's depth and loops nested past the brace limit are refused, located.
#[test]
fn deep_chains_are_written_flat_or_refused_located() {
    let arms = |n: usize, value: bool| -> String {
        (0..n)
            .map(|j| {
                if value {
                    format!("if x = {j} then {j}")
                } else {
                    format!("if x = {j} then v.(0) <- {j}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n  else ")
    };
    let (_, chain) = lower_source(&format!(
        "let%kernel k (v : int32 vector) =\n  let x = v.(1) in\n  {}\n  else v.(0) <- 0\n",
        arms(140, false)
    ));
    let g = gen_ok(&chain);
    assert_eq!(g.source.matches("} else if (").count(), 139);
    naga_validate(&g.source).unwrap();

    let (sources, values) = lower_source(&format!(
        "let%kernel k (v : int32 vector) =\n  let x = v.(1) in\n  v.(0) <- ({}\n  else 0)\n",
        arms(120, true)
    ));
    let errs = wgsl::generate(&values, &TargetOptions::default()).unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].message.contains("nests statements and expressions")
            && errs[0].message.contains("WGSL allows at most 190"),
        "{}",
        errs[0].message
    );
    assert!(sources.location(errs[0].span).starts_with("deep.sarek:3:"));
    for t in [Target::Glsl, Target::OpenCl, Target::Ptx] {
        sarek_compiler::generate(&values, t, &TargetOptions::default()).unwrap();
    }

    let loops = |n: usize| {
        let mut src = String::from("let%kernel k (v : int32 vector) =\n");
        for j in 0..n {
            src.push_str(&format!("for i{j} = 0 to 1 do\n"));
        }
        src.push_str("v.(0) <- v.(0) + 1\n");
        src.push_str(&"done\n".repeat(n));
        lower_source(&src).1
    };
    // 1 + 4 * 31 = 125 levels of braces: valid; 32 loops take 129.
    let g = gen_ok(&loops(31));
    naga_validate(&g.source).unwrap();
    let errs = wgsl::generate(&loops(32), &TargetOptions::default()).unwrap_err();
    assert!(
        errs[0]
            .message
            .contains("nests blocks 129 deep, WGSL allows at most 127"),
        "{}",
        errs[0].message
    );
}

/// A refusal's label on a helper names no IR instance: a polymorphic helper used at int64
/// (`id__i64`) and a bounded recursion's copies (`dep__depth2`) were named so in "helper
/// `id__i64` returns int64", where the source says `id` and `dep`.
#[test]
fn refusal_labels_on_helpers_name_no_instance() {
    let text = "let id (x : 'a) : 'a = x\n\
                let rec dep (n : int32) : float64 [@sarek.inline 2] =\n  \
                  if n <= 0 then 1.0d else 2.0d *. dep (n - 1)\n\
                let%kernel k (q : int64 vector) (o : float32 vector) =\n  \
                  q.(0) <- id 7L; o.(0) <- float32 (dep 2)\n";
    let mut sources = sarek_compiler::SourceMap::new();
    let file = sources.add("inst.sarek", text);
    let program = sarek_compiler::check(&sources, file).expect("it checks");
    let ir = sarek_compiler::lower_kernel(&program, "k").expect("it lowers");
    let diags = wgsl::generate(&ir, &TargetOptions::default()).unwrap_err();
    let shown = sarek_compiler::diag::render_all(&diags, &sources, false);
    assert!(!shown.contains("__"), "{shown}");
    assert!(
        shown.contains("this helper returns an int64 value"),
        "{shown}"
    );
    assert!(
        shown.contains("this helper returns a float64 value"),
        "{shown}"
    );
}
