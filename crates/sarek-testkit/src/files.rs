//! The repository's test folders: the `.sarek` files the tests (and the front-end bench)
//! walk, and the workspace root.

use std::path::{Path, PathBuf};

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// `tests/<name>` at the workspace root (`kernels` is the corpus, `errors` the goldens).
pub fn tests_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests")
        .join(name)
}

/// The `.sarek` files directly in `dir`, sorted.
///
/// # Panics
/// When `dir` cannot be read: a test that walks a folder must not pass by finding nothing.
pub fn sarek_files(dir: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "sarek"))
        .collect();
    files.sort();
    files
}

/// The corpus, `tests/kernels/*.sarek`.
pub fn corpus() -> Vec<PathBuf> {
    sarek_files(&tests_dir("kernels"))
}
