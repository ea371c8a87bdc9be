//! Upstream (OCaml) Sarek forms in the front end: every kernel of `tests/upstream/` checks
//! and generates for every target (block-sized shared arrays after specialisation), and the
//! scoping rules of preludes and modules hold.

use sarek_compiler::diag::render_all;
use sarek_compiler::{SourceMap, Target, TargetOptions};

use sarek_testkit::files;

const TARGETS: [Target; 6] = [
    Target::Wgsl,
    Target::Glsl,
    Target::OpenCl,
    Target::Cuda,
    Target::Metal,
    Target::Ptx,
];

fn check(sources: &SourceMap) -> Result<sarek_compiler::front::tast::Program, String> {
    let main = sources.ids().next().expect("a file");
    sarek_compiler::check(sources, main).map_err(|d| render_all(&d, sources, false))
}

fn errors(src: &str) -> String {
    let mut sources = SourceMap::new();
    sources.add("t.sarek", src);
    match check(&sources) {
        Ok(_) => panic!("accepted:\n{src}"),
        Err(e) => e,
    }
}

fn generate_all(sources: &SourceMap) {
    let program = check(sources).unwrap_or_else(|e| panic!("{e}"));
    for k in &program.kernels {
        let ir = sarek_compiler::lower_kernel(&program, &k.name).unwrap();
        let ir = if sarek_compiler::ir::specialize::needs_block_size(&ir) {
            // Unspecialised, every target refuses it, located.
            for t in TARGETS {
                let d = sarek_compiler::generate(&ir, t, &TargetOptions::default()).unwrap_err();
                assert!(!d[0].span.is_dummy(), "{}: {t:?}", k.name);
            }
            sarek_compiler::ir::specialize::block_size(&ir, 64)
        } else {
            ir
        };
        assert!(!sarek_compiler::ir::specialize::needs_block_size(&ir));
        for t in TARGETS {
            if let Err(d) = sarek_compiler::generate(&ir, t, &TargetOptions::default()) {
                // A refusal must be located (float64 on WGSL, say), never a panic.
                assert!(
                    d.iter().all(|d| !d.span.is_dummy()),
                    "{} {t:?}: {}",
                    k.name,
                    render_all(&d, sources, false)
                );
            }
        }
    }
}

#[test]
fn every_upstream_kernel_generates_for_every_target() {
    let files = files::sarek_files(&files::tests_dir("upstream"));
    assert!(files.len() >= 3);
    for path in files {
        let mut sources = SourceMap::new();
        sources.add(
            path.display().to_string(),
            std::fs::read_to_string(&path).unwrap(),
        );
        generate_all(&sources);
    }
    let dir = files::tests_dir("upstream").join("modules");
    for program in [
        ["uses_geometry.sarek", "geometry_lib.sarek"],
        ["worklist.sarek", "sarek_worklist.sarek"],
        ["df64.sarek", "sarek_df64.sarek"],
        ["real64.sarek", "sarek_df64.sarek"],
    ] {
        let mut sources = SourceMap::new();
        for f in program {
            sources.add(f, std::fs::read_to_string(dir.join(f)).unwrap());
        }
        generate_all(&sources);
    }
}

#[test]
fn prelude_helpers_stay_with_their_kernel() {
    let e = errors(
        "let a = [%kernel let f (x : int32) : int32 = x + 1 in fun (v : int32 vector) -> v.(0) <- f 1]\n\
         let b = [%kernel fun (v : int32 vector) -> v.(0) <- f 2]\n",
    );
    assert!(e.contains("unknown function `f`"), "{e}");
    // A prelude helper shadows a top-level one for its kernel only.
    let mut sources = SourceMap::new();
    sources.add(
        "t.sarek",
        "let f (x : int32) : int32 = x * 10\n\
         let a = [%kernel let f (x : int32) : int32 = x + 1 in fun (v : int32 vector) -> v.(0) <- f 1]\n\
         let b = [%kernel fun (v : int32 vector) -> v.(0) <- f 2]\n",
    );
    let p = check(&sources).unwrap();
    assert_eq!(p.functions.len(), 2);
}

#[test]
fn different_prelude_types_of_one_name_are_refused() {
    let e = errors(
        "let a = [%kernel let module T = struct type p = { x : int32 } end in fun (v : p vector) -> ()]\n\
         let b = [%kernel let module T = struct type p = { y : int32 } end in fun (v : p vector) -> ()]\n",
    );
    assert!(e.contains("the type `p` is defined more than once"), "{e}");
}

#[test]
fn two_files_of_one_module_name_are_refused() {
    // H10: the last file silently won (`Lib.helper` was `x + 2` or `x + 1` by argument order).
    let mut sources = SourceMap::new();
    sources.add(
        "main.sarek",
        "let%kernel k (v : int32 vector) = v.(0) <- Lib.helper v.(1)\n",
    );
    sources.add("a/lib.sarek", "let helper (x : int32) : int32 = x + 1\n");
    sources.add("b/lib.sarek", "let helper (x : int32) : int32 = x + 2\n");
    let e = check(&sources).unwrap_err();
    assert_eq!(e.matches("error:").count(), 1, "{e}");
    assert!(
        e.contains("module `Lib` is given twice: `a/lib.sarek` and `b/lib.sarek`")
            && e.contains("b/lib.sarek:1:1"),
        "{e}"
    );
    // A module name the program does not use may be given twice.
    let mut sources = SourceMap::new();
    sources.add(
        "main.sarek",
        "let%kernel k (v : int32 vector) = v.(0) <- 1\n",
    );
    sources.add("a/lib.sarek", "let helper (x : int32) : int32 = x + 1\n");
    sources.add("b/lib.sarek", "let helper (x : int32) : int32 = x + 2\n");
    check(&sources).unwrap();
}

#[test]
fn module_names_resolve_inside_out() {
    let mut sources = SourceMap::new();
    sources.add(
        "main.sarek",
        "let%kernel k (v : int32 vector) = v.(0) <- Lib.g 1 + Lib.Deep.h 2\n",
    );
    sources.add(
        "lib.sarek",
        "let f (x : int32) : int32 = x + 100\n\
         let g (x : int32) : int32 = f x\n\
         module Deep = struct let h (x : int32) : int32 = f x + g x end\n\
         let%kernel not_the_programs (v : int32 vector) = v.(0) <- 1\n",
    );
    let p = check(&sources).unwrap();
    assert_eq!(p.kernels.len(), 1);
    // An unused file is not parsed: its errors do not matter to this program.
    let mut sources = SourceMap::new();
    sources.add(
        "main.sarek",
        "let%kernel k (v : int32 vector) = v.(0) <- 1\n",
    );
    sources.add("broken.sarek", "let let let\n");
    check(&sources).unwrap();
    // A missing member is named with the module.
    let mut sources = SourceMap::new();
    sources.add(
        "main.sarek",
        "let%kernel k (v : int32 vector) = v.(0) <- Lib.nope 1\n",
    );
    sources.add("lib.sarek", "let nope2 (x : int32) : int32 = x\n");
    let e = check(&sources).unwrap_err();
    assert!(e.contains("`Lib` has no member `nope`"), "{e}");
}

#[test]
fn min_int_spelled_in_hex() {
    let mut sources = SourceMap::new();
    sources.add(
        "t.sarek",
        "let (a : int32) = - 0x80000000\nlet (b : int64) = - 0x8000000000000000L\n\
         let%kernel k (v : int32 vector) (w : int64 vector) = v.(0) <- a; w.(0) <- b\n",
    );
    check(&sources).unwrap();
    // Decimal literals keep OCaml's range check.
    let e = errors("let%kernel k (v : int32 vector) = v.(0) <- 2147483648\n");
    assert!(e.contains("out of range"), "{e}");
}

#[test]
fn pragma_unroll_without_count_is_a_full_unroll_hint() {
    let mut sources = SourceMap::new();
    sources.add(
        "t.sarek",
        "let%kernel k (a : float32 vector) =\n  let s = mut 0.0 in\n  \
         pragma [\"unroll\"] (for k = 0 to 7 do s := s +. a.(k) done);\n  a.(0) <- s\n",
    );
    let p = check(&sources).unwrap();
    let ir = sarek_compiler::lower_kernel(&p, "k").unwrap();
    let source_for = |t| {
        sarek_compiler::generate(&ir, t, &TargetOptions::default())
            .unwrap()
            .source
    };
    for t in [Target::Cuda, Target::OpenCl] {
        let src = source_for(t);
        assert!(src.contains("#pragma unroll\n"), "{t:?}:\n{src}");
    }
    assert!(source_for(Target::Glsl).contains("[[unroll]]"));
    assert!(source_for(Target::Ir).contains("[@unroll]"));
    // With a count, the count is kept.
    let e = errors(
        "let%kernel k (a : int32 vector) = pragma [\"unroll x\"] (for k = 0 to 3 do a.(k) <- 0 done)\n",
    );
    assert!(e.contains("found `x`"), "{e}");
}

/// The IR of `src`'s kernel `k`, printed.
fn ir_text(src: &str) -> String {
    let mut sources = SourceMap::new();
    sources.add("t.sarek", src);
    let program = check(&sources).unwrap_or_else(|e| panic!("{e}"));
    let ir = sarek_compiler::lower_kernel(&program, "k").unwrap();
    sarek_compiler::generate(&ir, Target::Ir, &TargetOptions::default())
        .unwrap()
        .source
}

/// Upstream's spellings that are another spelling of a Sarek form give the same kernel:
/// the float comparisons `<.` `<=.` `>.` `>=.`, `G` float64 literals, the typed operator
/// names, `_f64` math, `float64_of_int`.
#[test]
fn upstream_spellings_are_the_same_kernel() {
    let kernel = |body: &str| {
        format!(
            "let%kernel k (x : float32 vector) (d : float64 vector) (a : int32 vector) =\n  \
             let i = global_thread_id in\n  {body}\n"
        )
    };
    let pairs = [
        (
            "if x.(i) <. 1.0 && x.(i) <=. 2.0 && x.(i) >. 0.5 && x.(i) >=. 0.25 then x.(i) <- 0.0",
            "if x.(i) < 1.0 && x.(i) <= 2.0 && x.(i) > 0.5 && x.(i) >= 0.25 then x.(i) <- 0.0",
        ),
        ("d.(i) <- d.(i) *. 2.5G", "d.(i) <- d.(i) *. 2.5d"),
        (
            "a.(i) <- Int32.mod_int32 (Int32.add_int32 a.(i) 3) (Math.xor a.(i) 5)",
            "a.(i) <- (a.(i) + 3) mod (a.(i) lxor 5)",
        ),
        (
            "x.(i) <- Float32.fmod (Float32.minus x.(i) 1.0) 0.5",
            "x.(i) <- (x.(i) -. 1.0) mod 0.5",
        ),
        (
            "d.(i) <- sqrt_f64 (float64_of_int a.(i)) +. Float64.of_int32 (int_of_float64 d.(i))",
            "d.(i) <- sqrt (float64 a.(i)) +. float64 (int32 d.(i))",
        ),
        (
            "a.(i) <- abs_int32 (min_int32 a.(i) 7)",
            "a.(i) <- abs (min a.(i) 7)",
        ),
    ];
    for (upstream, sarek) in pairs {
        assert_eq!(
            ir_text(&kernel(upstream)),
            ir_text(&kernel(sarek)),
            "{upstream}"
        );
    }
}
