//! `sarek check FILE...`: every file is checked (all errors of all files are reported), with
//! the other files as the modules it may use (`geometry_lib.sarek` is `Geometry_lib`).

use super::{CmdResult, Failure, load};
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(files: &[PathBuf]) -> CmdResult {
    let mut code = 0u8;
    // Each file is its own program; the others are its modules where it uses them.
    for f in files {
        if let Err(failure) = load(f, files) {
            eprintln!("{}", failure.message.trim_end());
            code = code.max(failure.code);
        }
    }
    match code {
        0 => Ok(ExitCode::SUCCESS),
        c => Err(Failure::rendered(c, String::new())),
    }
}
