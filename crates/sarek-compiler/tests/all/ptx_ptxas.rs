//! PTX output checked by the real assembler (`ptxas` from the `nvidia-cuda-nvcc` wheel).
//! Skips with a printed reason when ptxas is absent, unless SAREK_REQUIRE_BACKENDS names `ptx`.
//! Refusals (located, naming PTX) are checked where the files are made (`support::outputs`).

use sarek_compiler::intrinsics::{AtomicOp, Intrinsic, MathFn, WarpOp};
use sarek_compiler::ir::build::*;
use sarek_compiler::ir::*;
use sarek_compiler::types::{BinOp, MemSpace};
use sarek_compiler::{Target, TargetOptions};
use std::path::PathBuf;
use std::process::Command;

use crate::support::outputs;
use sarek_testkit::backends::unavailable;

/// Locate ptxas: $SAREK_PTXAS, PATH, or the pip wheel's site-packages.
pub fn ptxas() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("SAREK_PTXAS") {
        return Some(PathBuf::from(p));
    }
    if Command::new("ptxas")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some(PathBuf::from("ptxas"));
    }
    let out = Command::new("python3")
        .args(["-c", "import nvidia, os; print(list(nvidia.__path__)[0])"])
        .output()
        .ok()?;
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("cu13/bin/ptxas");
    dir.exists().then_some(dir)
}

/// Assemble `source` for sm_90; Err carries ptxas' message.
pub fn assemble(source: &str) -> Option<Result<(), String>> {
    let Some(ptxas) = ptxas() else {
        unavailable("ptx", "ptxas not found (pip install nvidia-cuda-nvcc)");
        return None;
    };
    let dir = std::env::temp_dir().join(format!(
        "sarek-ptx-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("k.ptx");
    std::fs::write(&file, source).unwrap();
    let out = Command::new(ptxas)
        .args(["-arch=sm_90", "-o"])
        .arg(dir.join("k.cubin"))
        .arg(&file)
        .output()
        .unwrap();
    Some(if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    })
}

/// saxpy with a record vector, a variant match, atomics, shared memory, a barrier, a warp
/// shuffle and a helper call: one kernel touching most of the writer.
fn kitchen_sink() -> Kernel {
    let mut b = KernelBuilder::new("kitchen'sink");
    let point = b.record("point", &[("x", Ty::F32), ("ok", Ty::BOOL)]);
    let shape = b.variant(
        "shape",
        &[
            ("Circle", vec![Ty::F32]),
            ("Rect", vec![Ty::F32, Ty::F32]),
            ("Empty", vec![]),
        ],
    );
    let xs = b.vector("xs", Ty::Record(point));
    let shapes = b.vector("shapes", Ty::Variant(shape));
    let hist = b.vector("hist", Ty::I64);
    let a = b.param("a", Ty::F32);
    // helper: twice (y : float32) = y *. 2.0
    let y = b.var("y", Ty::F32);
    let twice_body = vec![return_(Some(mul(b.read(y), lit_f32(2.0))))];
    let twice = b.func("twice", vec![y], Ty::F32, twice_body);
    let i = b.var("i", Ty::I32);
    let tile = b.array("tile", Ty::F32, MemSpace::Shared, 256);
    let area = b.mut_var("area", Ty::F32);
    let r = b.var("r", Ty::F32);
    let w = b.var("w", Ty::F32);
    let h = b.var("h", Ty::F32);
    let call = b.call(twice, vec![b.field(b.index(xs, b.read(i)), 0)]);
    let shuffled = intrinsic(
        Intrinsic::Warp(WarpOp::ShuffleDown),
        vec![b.read(area), lit_i32(1)],
        Ty::F32,
    );
    let arms = vec![
        MatchArm {
            ctor: Some(0),
            bindings: vec![Some(r)],
            body: vec![assign(area, mul(b.read(r), b.read(r)))],
        },
        MatchArm {
            ctor: Some(1),
            bindings: vec![Some(w), Some(h)],
            body: vec![assign(area, mul(b.read(w), b.read(h)))],
        },
        MatchArm {
            ctor: None,
            bindings: vec![],
            body: vec![],
        },
    ];
    let update = vec![
        assign_to(
            LValue::Field {
                base: Box::new(element(xs, b.read(i))),
                field: 0,
            },
            add(mul(b.read(a), call), b.read(area)),
        ),
        expr_stmt(atomic(
            AtomicOp::Add,
            vec![
                b.read(hist),
                bin(BinOp::Rem, b.read(i), lit_i32(16)),
                lit_i64(1),
            ],
            Ty::I64,
        )),
    ];
    let body = vec![
        let_(i, global_idx()),
        declare_array(tile),
        let_(area, lit_f32(0.0)),
        st(StmtKind::Match {
            scrutinee: b.index(shapes, b.read(i)),
            variant: shape,
            arms,
        }),
        store(tile, thread_idx(), b.read(area)),
        barrier(),
        assign(area, shuffled),
        if_(lt(b.read(i), b.length(xs)), update, vec![]),
    ];
    b.finish(body)
}

#[test]
fn kitchen_sink_assembles() {
    let k = kitchen_sink();
    let out =
        sarek_compiler::generate(&k, Target::Ptx, &TargetOptions::default()).expect("generates");
    assert!(
        out.source
            .contains(".visible .entry sarek_qkitchen_x27sink("),
        "{}",
        out.source
    );
    if let Some(result) = assemble(&out.source) {
        result.unwrap_or_else(|e| panic!("ptxas rejected:\n{e}\n{}", out.source));
    }
}

/// The float64 functions PTX computes in software (`back/softmath`, whose tests check
/// the routines' results on the host).
const SOFTWARE_FLOAT64: [MathFn; 18] = [
    MathFn::Exp,
    MathFn::Exp2,
    MathFn::Expm1,
    MathFn::Log,
    MathFn::Log2,
    MathFn::Log10,
    MathFn::Log1p,
    MathFn::Sinh,
    MathFn::Cosh,
    MathFn::Tanh,
    MathFn::Sin,
    MathFn::Cos,
    MathFn::Tan,
    MathFn::Atan,
    MathFn::Asin,
    MathFn::Acos,
    MathFn::Atan2,
    MathFn::Pow,
];

/// Float `mod` on both widths and every float64 software function, each used twice: each
/// routine is written once as a `.func`, and the module assembles.
#[test]
fn software_routines_are_written_once_and_assemble() {
    let mut b = KernelBuilder::new("soft");
    let x = b.param("x", Ty::F32);
    let y = b.param("y", Ty::F64);
    let o32 = b.vector("o32", Ty::F32);
    let o64 = b.vector("o64", Ty::F64);
    let rem32 = |e: Expr, d: f32| bin(BinOp::Rem, e, lit_f32(d));
    let rem64 = |e: Expr, d: f64| bin(BinOp::Rem, e, lit_f64(d));
    let mut body = vec![
        store(o32, lit_i32(0), rem32(b.read(x), 0.75)),
        store(o32, lit_i32(1), rem32(rem32(b.read(x), 3.5), 0.25)),
        store(o64, lit_i32(0), rem64(b.read(y), 0.1)),
    ];
    let mut slot = 1;
    for m in SOFTWARE_FLOAT64.iter().chain(&[MathFn::Rsqrt]) {
        for _ in 0..2 {
            let args = vec![b.read(y); m.arity()];
            let v = intrinsic(Intrinsic::Math(*m), args, Ty::F64);
            body.push(store(o64, lit_i32(slot), v));
            slot += 1;
        }
    }
    let k = b.finish(body);
    let ptx = sarek_compiler::generate(&k, Target::Ptx, &TargetOptions::default())
        .expect("float mod and these float64 functions are written in software")
        .source;
    let symbols = ["sarek_fmod_f32".to_string(), "sarek_fmod_f64".to_string()];
    let symbols = symbols.into_iter().chain(
        SOFTWARE_FLOAT64
            .iter()
            .map(|m| format!("sarek_{}_f64", m.c_name())),
    );
    for symbol in symbols {
        let definitions = ptx.matches(&format!(" {symbol}(\n")).count();
        assert_eq!(
            definitions, 1,
            "{symbol} defined {definitions} times:\n{ptx}"
        );
    }
    assert_eq!(ptx.matches("call (sarek_ret), sarek_fmod_f32,").count(), 3);
    assert_eq!(ptx.matches("call (sarek_ret), sarek_exp_f64,").count(), 2);
    // sin, cos and tan share one far reduction, defined before them.
    let far = "sarek_trig_reduce_far_f64";
    assert_eq!(ptx.matches(&format!(" {far}(\n")).count(), 1);
    assert_eq!(ptx.matches(&format!("call (sarek_ret), {far},")).count(), 3);
    assert!(ptx.find(&format!(" {far}(\n")) < ptx.find(" sarek_sin_f64(\n"));
    if let Some(result) = assemble(&ptx) {
        result.unwrap_or_else(|e| panic!("ptxas: {e}\n{ptx}"));
    }
}

/// The far reduction is written only for a module using sin, cos or tan.
#[test]
fn the_far_reduction_is_written_only_with_a_trig_function() {
    for (m, written) in [
        (MathFn::Exp, false),
        (MathFn::Atan, false),
        (MathFn::Cos, true),
    ] {
        let mut b = KernelBuilder::new("soft");
        let y = b.param("y", Ty::F64);
        let o64 = b.vector("o64", Ty::F64);
        let v = intrinsic(Intrinsic::Math(m), vec![b.read(y)], Ty::F64);
        let k = b.finish(vec![store(o64, lit_i32(0), v)]);
        let ptx = sarek_compiler::generate(&k, Target::Ptx, &TargetOptions::default())
            .expect("written in software")
            .source;
        assert_eq!(ptx.contains("sarek_trig_reduce_far_f64"), written, "{m:?}");
        if let Some(result) = assemble(&ptx) {
            result.unwrap_or_else(|e| panic!("ptxas: {e}\n{ptx}"));
        }
    }
}

/// Every math function on both widths generates PTX that assembles: none is refused.
#[test]
fn every_math_function_is_written_on_both_widths() {
    use MathFn::*;
    let all = [
        Sqrt, Rsqrt, Exp, Exp2, Expm1, Log, Log2, Log10, Log1p, Sin, Cos, Tan, Asin, Acos, Atan,
        Sinh, Cosh, Tanh, Floor, Ceil, Round, Trunc, Fabs, Pow, Atan2, Hypot, Copysign, Fmin, Fmax,
        Fma,
    ];
    let mut b = KernelBuilder::new("all_math");
    let x = b.param("x", Ty::F32);
    let y = b.param("y", Ty::F64);
    let o32 = b.vector("o32", Ty::F32);
    let o64 = b.vector("o64", Ty::F64);
    let mut body = Vec::new();
    for (k, m) in all.iter().enumerate() {
        let v32 = intrinsic(Intrinsic::Math(*m), vec![b.read(x); m.arity()], Ty::F32);
        let v64 = intrinsic(Intrinsic::Math(*m), vec![b.read(y); m.arity()], Ty::F64);
        body.push(store(o32, lit_i32(k as i32), v32));
        body.push(store(o64, lit_i32(k as i32), v64));
    }
    let k = b.finish(body);
    let ptx = sarek_compiler::generate(&k, Target::Ptx, &TargetOptions::default())
        .unwrap_or_else(|e| panic!("refused: {e:?}"))
        .source;
    if let Some(result) = assemble(&ptx) {
        result.unwrap_or_else(|e| panic!("ptxas: {e}\n{ptx}"));
    }
}

/// Every PTX file under `tests/out/ptx` (the corpus and the hand-built kernels, as generated:
/// the `outputs` test keeps them equal) assembles with ptxas.
#[test]
fn ptx_files_assemble() {
    let files = outputs::files(Target::Ptx);
    let mut failures = Vec::new();
    for path in &files {
        let source = std::fs::read_to_string(path).unwrap();
        match assemble(&source) {
            None => return,
            Some(Err(e)) => failures.push(format!("{}: ptxas: {e}", path.display())),
            Some(Ok(())) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("ptxas assembled {} PTX files", files.len());
}

/// A kernel with one vector and `scalars` int32 parameters: 12 + 4 * scalars bytes of
/// parameter space (a 64-bit pointer, its 32-bit length, then the scalars).
pub fn many_parameters(scalars: usize) -> (sarek_compiler::SourceMap, Kernel) {
    let params: Vec<String> = (0..scalars).map(|j| format!("(p{j} : int32)")).collect();
    let src = format!(
        "let%kernel k (v : int32 vector) {} =\n  let i = global_thread_id in\n  \
         if i < length v then v.(i) <- p0 + p{}\n",
        params.join(" "),
        scalars - 1
    );
    let mut sources = sarek_compiler::SourceMap::new();
    let file = sources.add("params.sarek", src);
    let program = sarek_compiler::check(&sources, file).expect("checks");
    let kernel = sarek_compiler::lower_kernel(&program, "k").expect("lowers");
    (sources, kernel)
}

#[test]
fn parameter_space_is_refused_past_4_kib_and_assembles_up_to_it() {
    // 12 + 4 * 1021 = 4096 bytes: exactly the limit, which ptxas takes.
    let (_, at_limit) = many_parameters(1021);
    let g = sarek_compiler::generate(&at_limit, Target::Ptx, &TargetOptions::default())
        .expect("4096 bytes of parameters are within the PTX limit");
    if let Some(r) = assemble(&g.source) {
        r.unwrap_or_else(|e| panic!("ptxas rejected 4096 bytes of parameters: {e}"));
    }
    // One more int32: refused before writing, located at the parameter over the limit.
    let (sources, over) = many_parameters(1022);
    let err = sarek_compiler::generate(&over, Target::Ptx, &TargetOptions::default())
        .expect_err("4100 bytes of parameters must be refused");
    let text = sarek_compiler::diag::render_all(&err, &sources, false);
    assert_eq!(err.len(), 1, "{text}");
    assert!(
        err[0].message.contains("4100 bytes of parameters")
            && err[0].message.contains("PTX allows at most 4096"),
        "{text}"
    );
    let src = sources.text(sources.ids().next().unwrap());
    let col = src.find("(p1021 :").unwrap() + 2;
    assert_eq!(
        sources.location(err[0].span),
        format!("params.sarek:1:{col}")
    );
    // CUDA C takes the same kernel (its limit is 32,764 bytes).
    assert!(sarek_compiler::generate(&over, Target::Cuda, &TargetOptions::default()).is_ok());
}

/// Helpers written once as `.func` (a chain where each helper calls the previous one twice)
/// with every kind of `.param` traffic: a float32 and a bool argument (a predicate passed as
/// an integer), a (float32, bool) result in an 8-byte-aligned array, and the trap status
/// address of a kernel with traps (bounded recursion).
#[test]
fn outlined_helpers_assemble() {
    let mut src = String::from(
        "let h0 (x : float32) (up : bool) : float32 * bool = if up then (x mod 3.0 +. 1.0, false) else (x, true)\n",
    );
    for i in 1..=8 {
        let p = i - 1;
        src += &format!(
            "let h{i} (x : float32) (up : bool) : float32 * bool =\n  let r = h{p} x up in\n  let s = h{p} (fst r) (snd r) in\n  (fst r +. fst s, snd s)\n"
        );
    }
    src += "let rec fib (n : int32) : int32 [@sarek.inline 8] = if n < 2 then n else fib (n - 1) + fib (n - 2)\n\
            let%kernel outlined (a : float32 vector) (b : int32 vector) (n : int32) =\n  let i = global_thread_id in\n  \
            if i < n then begin\n    let r = h8 a.(i) (i mod 2 = 0) in\n    a.(i) <- (if snd r then fst r else 0.0);\n    b.(i) <- fib (b.(i) mod 8)\n  end\n";
    let mut sources = sarek_compiler::SourceMap::new();
    let file = sources.add("outlined.sarek", &src);
    let program = sarek_compiler::check(&sources, file)
        .unwrap_or_else(|d| panic!("{}", sarek_compiler::diag::render_all(&d, &sources, false)));
    let k = sarek_compiler::lower_kernel(&program, "outlined").expect("lowers");
    let out =
        sarek_compiler::generate(&k, Target::Ptx, &TargetOptions::default()).expect("generates");
    for expected in [
        "\n.func (.param .align 8 .b8 sarek_func_",
        "\n.func (.param .b32 sarek_func_",
        "selp.u32",
        "call (sarek_ret), sarek_func_",
        "red.global.max.s32",
    ] {
        assert!(out.source.contains(expected), "{expected}:\n{}", out.source);
    }
    // A software routine called from an outlined helper is defined before it.
    let routine = out.source.find(" sarek_fmod_f32(\n").expect("fmod routine");
    let helper = out.source.find("\n.func (.param .align 8").expect("helper");
    assert!(routine < helper, "{}", out.source);
    if let Some(result) = assemble(&out.source) {
        result.unwrap_or_else(|e| panic!("ptxas rejected:\n{e}\n{}", out.source));
    }
}
