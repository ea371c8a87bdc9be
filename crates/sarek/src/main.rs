//! The `sarek` command: see `docs/cli.md` and the command-line contract in ARCHITECTURE.md.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
