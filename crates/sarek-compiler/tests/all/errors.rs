//! Golden tests for diagnostics: every `tests/errors/<kind>.sarek` is run through
//! `sarek_compiler::check` (registered as `tests/errors/<kind>.sarek`) and the rendered
//! diagnostics (no colour) must equal `tests/errors/<kind>.expected` exactly.
//!
//! `UPDATE_EXPECT=1 cargo test -p sarek-compiler --test errors` rewrites the `.expected`
//! files; read the diff and judge every message before committing it.

use sarek_compiler::SourceMap;
use sarek_compiler::diag::render_all;

use sarek_testkit::files;

fn render(name: &str, text: &str) -> String {
    let mut sources = SourceMap::new();
    let id = sources.add(name, text);
    match sarek_compiler::check(&sources, id) {
        Ok(_) => String::new(),
        Err(diags) => render_all(&diags, &sources, false),
    }
}

#[test]
fn error_goldens() {
    let dir = files::tests_dir("errors");
    let update = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v != "0");
    let files = files::sarek_files(&dir);
    assert!(
        !files.is_empty(),
        "no error tests found in {}",
        dir.display()
    );
    let mut failures = Vec::new();
    for path in &files {
        let file_name = path
            .file_name()
            .expect("file name")
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(path).expect("readable test file");
        let actual = render(&format!("tests/errors/{file_name}"), &text);
        let expected_path = path.with_extension("expected");
        if actual.is_empty() {
            failures.push(format!(
                "{file_name}: no diagnostics (an error test must be refused)"
            ));
            continue;
        }
        if update {
            std::fs::write(&expected_path, &actual).expect("write .expected");
            continue;
        }
        match std::fs::read_to_string(&expected_path) {
            Ok(expected) if expected == actual => {}
            Ok(expected) => failures.push(format!(
                "{file_name}: diagnostics differ\n--- expected\n{expected}--- actual\n{actual}"
            )),
            Err(_) => failures.push(format!(
                "{file_name}: missing {} (run with UPDATE_EXPECT=1)\n--- actual\n{actual}",
                expected_path.display()
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} error test(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n")
    );
}
