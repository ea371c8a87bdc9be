//! CUDA C validation: every `tests/out/cuda` file compiled by NVRTC for `sm_90` (through ptxas to SASS) with
//! the options the runtime uses. NVRTC comes from the system or the `nvidia-cuda-nvrtc`
//! wheel (see `support::validate::load_nvrtc`); no GPU is needed.

use crate::support;

use crate::support::outputs;
use cudarc::nvrtc::result;
use sarek_compiler::Target;
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
