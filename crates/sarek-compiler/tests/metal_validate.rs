//! Metal validation without a Metal toolchain: every case through
//! `clang++ -x c++ -std=c++17 -fsyntax-only` with `tests/support/metal_shim.h` standing in
//! for `<metal_stdlib>`. The shim's header comment lists what this check cannot see
//! (address spaces, attribute meaning, Metal-only restrictions).

mod support;

use sarek_compiler::TargetOptions;
use sarek_compiler::back::cfamily::{Dialect, generate};
use std::process::Command;
use support::validate::{assert_refusal, cases, skip};

#[test]
fn clang_with_shim() {
    if Command::new("clang++").arg("--version").output().is_err() {
        return skip("metal", "clang++ is not installed");
    }
    let shim = support::validate::workspace_root()
        .join("crates/sarek-compiler/tests/support/metal_shim.h");
    let dir = std::env::temp_dir().join(format!("sarek-metal-{}", std::process::id()));
    // `#include <metal_stdlib>` in the generated source resolves to the shim.
    std::fs::create_dir_all(dir.join("include")).unwrap();
    std::fs::write(
        dir.join("include/metal_stdlib"),
        format!("#include \"{}\"\n", shim.display()),
    )
    .unwrap();
    let mut checked = 0;
    for case in cases() {
        let g = match generate(&case.kernel, Dialect::Metal, &TargetOptions::default()) {
            Ok(g) => g,
            Err(d) => {
                assert_refusal(&case, Dialect::Metal, &d);
                continue;
            }
        };
        let path = dir.join(format!("{}.metal", case.name));
        std::fs::write(&path, &g.source).unwrap();
        let out = Command::new("clang++")
            .args([
                "-x",
                "c++",
                "-std=c++17",
                "-fsyntax-only",
                "-Wno-unknown-attributes",
                "-include",
            ])
            .arg(&shim)
            .arg("-I")
            .arg(dir.join("include"))
            .arg(&path)
            .output()
            .expect("clang++ runs");
        assert!(
            out.status.success(),
            "{}: clang++ with the Metal shim rejected:\n{}\n{}",
            case.name,
            String::from_utf8_lossy(&out.stderr),
            g.source
        );
        checked += 1;
    }
    eprintln!("clang++ accepted {checked} Metal kernels");
}
