//! `sarek check FILE...`: every file is checked (all errors of all files are reported).

use super::{CmdResult, Failure, load};
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(files: &[PathBuf]) -> CmdResult {
    let mut code = 0u8;
    for f in files {
        if let Err(failure) = load(f) {
            eprintln!("{}", failure.message.trim_end());
            code = code.max(failure.code);
        }
    }
    match code {
        0 => Ok(ExitCode::SUCCESS),
        c => Err(Failure::rendered(c, String::new())),
    }
}
