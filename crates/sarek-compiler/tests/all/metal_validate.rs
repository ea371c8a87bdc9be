//! Metal validation without a Metal toolchain: every `tests/out/metal` file through
//! `clang++ -x c++ -std=c++17 -fsyntax-only` with `tests/all/support/metal_shim.h` standing in
//! for `<metal_stdlib>`. The shim's header comment lists what this check cannot see
//! (address spaces, attribute meaning, Metal-only restrictions).

use crate::support;

use crate::support::outputs;
use sarek_compiler::Target;
use std::process::Command;
use support::validate::skip;

#[test]
fn clang_with_shim() {
    if Command::new("clang++").arg("--version").output().is_err() {
        return skip("metal", "clang++ is not installed");
    }
    let shim = support::validate::workspace_root()
        .join("crates/sarek-compiler/tests/all/support/metal_shim.h");
    let dir = std::env::temp_dir().join(format!("sarek-metal-{}", std::process::id()));
    // `#include <metal_stdlib>` in the generated source resolves to the shim.
    std::fs::create_dir_all(dir.join("include")).unwrap();
    std::fs::write(
        dir.join("include/metal_stdlib"),
        format!("#include \"{}\"\n", shim.display()),
    )
    .unwrap();
    let files = outputs::files(Target::Metal);
    for path in &files {
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
            .arg(path)
            .output()
            .expect("clang++ runs");
        assert!(
            out.status.success(),
            "{}: clang++ with the Metal shim rejected:\n{}",
            path.display(),
            String::from_utf8_lossy(&out.stderr),
        );
    }
    eprintln!("clang++ accepted {} Metal files", files.len());
}
