//! CUDA C validation: every `tests/out/cuda` file compiled by NVRTC for `sm_90` (through ptxas to SASS) with
//! the options the runtime uses. NVRTC comes from the system or the `nvidia-cuda-nvrtc`
//! wheel (see `support::validate::load_nvrtc`); no GPU is needed.

use crate::support;

use crate::support::outputs;
use cudarc::nvrtc::result;
use sarek_compiler::back::cfamily::{Dialect, generate};
use sarek_compiler::{Target, TargetOptions};
use std::ffi::{CStr, CString};
use support::validate::{load_nvrtc, skip};

/// Every CUDA C file under `tests/out/cuda` (as generated: the `outputs` test keeps them
/// equal) compiles with NVRTC.
#[test]
fn nvrtc_sm90() {
    if let Err(reason) = load_nvrtc() {
        return skip("cuda", &reason);
    }
    let files = outputs::files(Target::Cuda);
    for path in &files {
        let source = std::fs::read_to_string(path).unwrap();
        if let Err(log) = compile(&source) {
            panic!("{}: NVRTC rejected the CUDA C:\n{log}", path.display());
        }
    }
    eprintln!("NVRTC compiled {} CUDA C files for sm_90", files.len());
}

/// NVRTC's formal parameter space is 32,764 bytes: the analysis counts it as NVRTC does (12
/// bytes for a vector and its length, 4 per int32), takes a kernel at the limit and refuses
/// one past it, located, before NVRTC sees it.
#[test]
fn parameter_space_is_nvrtcs() {
    let kernel = |scalars: usize| {
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
        let k = sarek_compiler::lower_kernel(&program, "k").expect("lowers");
        (sources, k)
    };
    let (_, at_limit) = kernel(8188); // 12 + 4 * 8188 = 32764 bytes
    let g = generate(&at_limit, Dialect::Cuda, &TargetOptions::default())
        .expect("32764 bytes of parameters are within CUDA's limit");
    let (sources, over) = kernel(8189);
    let err = generate(&over, Dialect::Cuda, &TargetOptions::default())
        .expect_err("32768 bytes of parameters must be refused");
    let text = sarek_compiler::diag::render_all(&err, &sources, false);
    assert!(
        err[0].message.contains("32768 bytes of parameters")
            && err[0].message.contains("CUDA C allows at most 32764"),
        "{text}"
    );
    if let Err(reason) = load_nvrtc() {
        return skip("cuda", &reason);
    }
    compile(&g.source).unwrap_or_else(|e| panic!("NVRTC rejected 32764 bytes of parameters: {e}"));
}

fn compile(source: &str) -> Result<(), String> {
    let src = CString::new(source).unwrap();
    let prog = result::create_program(&src, None).map_err(|e| format!("{e:?}"))?;
    let opts = ["--gpu-architecture=sm_90", "--fmad=false"];
    // SAFETY: `prog` is a live program; the options are valid C strings.
    let res = unsafe { result::compile_program(prog, &opts) };
    let log = unsafe { result::get_program_log(prog) }
        .map(|l| {
            unsafe { CStr::from_ptr(l.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    unsafe { result::destroy_program(prog) }.ok();
    res.map_err(|e| format!("{e:?}\n{log}"))
}

/// A constant float operation without a finite result is written as its IEEE value in every
/// C dialect: NVRTC and NVIDIA's OpenCL compiler folded `(0.0f / 0.0f) == (0.0f / 0.0f)` to
/// true (the conformance oracle's `const_edges` on the H200), since the division is undefined
/// in a C constant expression.
#[test]
fn constant_non_finite_operations_are_written_as_values() {
    let src = "let%kernel k (o : bool vector) (f : float32 vector) =\n  \
               if global_thread_id = 0 then begin\n    \
               o.(0) <- (0.0 /. 0.0) = (0.0 /. 0.0);\n    \
               f.(0) <- 1.0 /. 0.0;\n    \
               f.(1) <- (-1.0) /. 0.0;\n    \
               f.(2) <- 3.0 /. 2.0\n  end\n";
    let mut sources = sarek_compiler::SourceMap::new();
    let file = sources.add("nan.sarek", src.to_string());
    let program = sarek_compiler::check(&sources, file).expect("checks");
    let k = sarek_compiler::lower_kernel(&program, "k").expect("lowers");
    for dialect in [Dialect::Cuda, Dialect::OpenCl, Dialect::Metal] {
        let c = generate(&k, dialect, &TargetOptions::default())
            .expect("generates")
            .source;
        assert!(
            !c.contains("0.0f / 0.0f") && !c.contains("1.0f / 0.0f"),
            "{dialect:?} left a constant non-finite division:\n{c}"
        );
        // A finite constant quotient stays as written.
        assert!(
            c.contains("1.5f") || c.contains("3.0f / 2.0f"),
            "{dialect:?}:\n{c}"
        );
    }
    let cuda = generate(&k, Dialect::Cuda, &TargetOptions::default())
        .unwrap()
        .source;
    assert!(
        cuda.contains("__int_as_float(0x7fc00000) == __int_as_float(0x7fc00000)"),
        "{cuda}"
    );
    assert!(
        cuda.contains("f[0] = __int_as_float(0x7f800000);")
            && cuda.contains("f[1] = -__int_as_float(0x7f800000);"),
        "{cuda}"
    );
    if load_nvrtc().is_ok() {
        compile(&cuda).unwrap_or_else(|e| panic!("NVRTC rejected it: {e}"));
    }
}
