//! Every generator's output for every case equals its file under `tests/out/<target>/`
//! (`support::outputs` lists the cases). `SAREK_BLESS=1` rewrites the files instead and
//! removes those no case produces; review the diff like code.

use crate::support::outputs::{expected, out_dir};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Every file under `dir`, relative to `root`.
fn walk(root: &Path, dir: &Path, out: &mut BTreeSet<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            walk(root, &path, out);
        } else {
            out.insert(path.strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

/// The first line where `found` and `expected` differ, for the failure message.
fn first_difference(expected: &str, found: &str) -> String {
    let (mut e, mut f) = (expected.lines(), found.lines());
    for n in 1.. {
        match (e.next(), f.next()) {
            (None, None) => return "line endings differ".into(),
            (a, b) if a == b => {}
            (a, b) => {
                return format!(
                    "line {n}: file has {:?}, generator gives {:?}",
                    b.unwrap_or("<end>"),
                    a.unwrap_or("<end>")
                );
            }
        }
    }
    unreachable!()
}

#[test]
fn outputs_match_files() {
    let root = out_dir();
    let expected = expected();
    let mut on_disk = BTreeSet::new();
    walk(&root, &root, &mut on_disk);
    if std::env::var_os("SAREK_BLESS").is_some_and(|v| v != "0") {
        for stale in on_disk.iter().filter(|p| !expected.contains_key(*p)) {
            std::fs::remove_file(root.join(stale)).unwrap();
        }
        for (path, text) in &expected {
            let path = root.join(path);
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, text).unwrap();
            }
        }
        eprintln!("blessed {} files under {}", expected.len(), root.display());
        return;
    }
    let mut problems = Vec::new();
    for (path, text) in &expected {
        match std::fs::read_to_string(root.join(path)) {
            Ok(found) if &found == text => {}
            Ok(found) => problems.push(format!(
                "{}: differs ({})",
                path.display(),
                first_difference(text, &found)
            )),
            Err(_) => problems.push(format!("{}: missing", path.display())),
        }
    }
    for stale in on_disk.iter().filter(|p| !expected.contains_key(*p)) {
        problems.push(format!("{}: no case produces it", stale.display()));
    }
    assert!(
        problems.is_empty(),
        "{} of {} outputs under tests/out disagree with the generators \
         (SAREK_BLESS=1 cargo test -p sarek-compiler --test all outputs rewrites them):\n{}",
        problems.len(),
        expected.len(),
        problems.join("\n")
    );
}

/// Several targets of one kernel written in one call share the option passes and the
/// feature analysis; each result equals the single-target call's, refusals included.
#[test]
fn generate_many_equals_generate_per_target() {
    let problems = crate::support::outputs::generate_many_disagreements();
    assert!(problems.is_empty(), "differ:\n{}", problems.join("\n"));
}
