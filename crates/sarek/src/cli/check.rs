//! `sarek check FILE...`: every file is checked (all errors of all files are reported), with
//! the other files as the modules it may use (`geometry_lib.sarek` is `Geometry_lib`).
//! Each file is read once: an unreadable one is reported once, not again as a module of
//! every other file; a diagnostic found again through another file is printed once.

use super::{CmdResult, Failure, color, read};
use sarek::Program;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn run(files: &[PathBuf]) -> CmdResult {
    let mut code = 0u8;
    let report = |failure: Failure, code: &mut u8| {
        eprintln!("{}", failure.message.trim_end());
        *code = (*code).max(failure.code);
    };
    // A file named twice is read (and checked) once.
    let mut texts: Vec<(&Path, String)> = Vec::new();
    for f in files {
        if texts.iter().any(|(p, _)| *p == f.as_path()) {
            continue;
        }
        match read(f) {
            Ok(text) => texts.push((f, text)),
            Err(failure) => report(failure, &mut code),
        }
    }
    // Each file is its own program; the others are its modules where it uses them.
    let mut shown = std::collections::HashSet::new();
    for (i, (path, text)) in texts.iter().enumerate() {
        let modules: Vec<(String, String)> = texts
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, (p, t))| (p.display().to_string(), t.clone()))
            .collect();
        if let Err((sources, diags)) =
            Program::check_with_modules(&path.display().to_string(), text, &modules)
        {
            // An error in a module file is found again when that file is checked as its
            // own program (and by every other file using it): print each once.
            let mut rendered = String::new();
            for d in &diags {
                let one =
                    sarek_compiler::diag::render_all(std::slice::from_ref(d), &sources, color());
                if shown.insert(one.clone()) {
                    rendered.push_str(&one);
                }
            }
            code = code.max(1);
            if !rendered.is_empty() {
                report(Failure::rendered(1, rendered), &mut code);
            }
        }
    }
    match code {
        0 => Ok(ExitCode::SUCCESS),
        c => Err(Failure::rendered(c, String::new())),
    }
}
