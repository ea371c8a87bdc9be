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
