//! CUDA C validation: every case compiled by NVRTC for `sm_90` (through ptxas to SASS) with
//! the options the runtime uses. NVRTC comes from the system or the `nvidia-cuda-nvrtc`
//! wheel (see `support::validate::load_nvrtc`); no GPU is needed.

mod support;

use cudarc::nvrtc::result;
use sarek_compiler::TargetOptions;
use sarek_compiler::back::cfamily::{Dialect, generate};
use std::ffi::{CStr, CString};
use support::validate::{assert_refusal, cases, load_nvrtc, skip};

#[test]
fn nvrtc_sm90() {
    if let Err(reason) = load_nvrtc() {
        return skip("cuda", &reason);
    }
    let mut checked = 0;
    for case in cases() {
        let g = match generate(&case.kernel, Dialect::Cuda, &TargetOptions::default()) {
            Ok(g) => g,
            Err(d) => {
                assert_refusal(&case, Dialect::Cuda, &d);
                continue;
            }
        };
        if let Err(log) = compile(&g.source) {
            panic!(
                "{}: NVRTC rejected the CUDA C:\n{log}\n{}",
                case.name, g.source
            );
        }
        checked += 1;
    }
    eprintln!("NVRTC compiled {checked} CUDA kernels for sm_90");
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
