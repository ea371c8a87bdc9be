//! Any bytes through the whole compiler: the front end (`check`), lowering, the IR
//! validator, the IR passes a runtime adds (checked mode, the loop budget) and every
//! generator, plain and checked. A panic, or IR the validator rejects, is a crash.
//! Source errors and generator refusals are expected outcomes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sarek_compiler::diag::SourceMap;
use sarek_compiler::ir::{Kernel, validate::validate};
use sarek_compiler::passes::{checked, loop_budget};
use sarek_compiler::{Target, TargetOptions};

fuzz_target!(|data: &[u8]| {
    // The command line refuses a source that is not UTF-8 before the front end sees it.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut sources = SourceMap::new();
    let file = sources.add("fuzz.sarek", text);
    let Ok(program) = sarek_compiler::check(&sources, file) else {
        return;
    };
    for k in &program.kernels {
        let ir = sarek_compiler::lower_kernel(&program, &k.name)
            .expect("a kernel `check` accepted lowers");
        assert_eq!(validate(&ir), Ok(()), "lowering produced invalid IR");
        let variants: [Kernel; 3] = [
            checked::insert_checks(&ir),
            loop_budget::guard_loops(&ir, loop_budget::LLVMPIPE_LOOP_BUDGET),
            ir.clone(),
        ];
        for kernel in &variants {
            assert_eq!(validate(kernel), Ok(()), "a pass produced invalid IR");
            for checked in [false, true] {
                let options = TargetOptions {
                    checked,
                    ..TargetOptions::default()
                };
                for target in Target::ALL {
                    // Ok (source) or a located refusal: both fine; a panic is the bug.
                    let _ = sarek_compiler::generate(kernel, target, &options);
                }
            }
        }
    }
});
