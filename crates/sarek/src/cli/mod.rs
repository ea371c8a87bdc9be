//! Command-line parsing and dispatch.
//!
//! Exit codes (docs/cli.md): 0 success; 1 a user error (a source error, an unknown kernel or
//! backend, a bad `--arg` or `.npy`, an unavailable device, a launch the device refuses, a
//! fault, a `verify` mismatch); 2 a usage error (clap) or an I/O error on the command line's
//! files, and for `verify` a requested backend that is unavailable. Every error is one clear
//! message on stderr, never a panic: a panic that escapes anyway is reported as an internal
//! error without a backtrace.

mod check;
mod compile;
mod devices;
mod exec;
mod files;
mod fuse;
mod verify;

use clap::{Args, Parser, Subcommand};
use sarek::Program;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "sarek",
    version,
    about = "Sarek: one kernel source for every GPU API"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check source files; diagnostics go to stderr.
    Check {
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Print the code generated for a target (all kernels when --kernel is absent).
    Compile {
        file: PathBuf,
        /// Other files of the program, used as OCaml modules (`geometry_lib.sarek` is
        /// `Geometry_lib`).
        #[arg(value_name = "MODULE")]
        modules: Vec<PathBuf>,
        /// Block size to generate for, when a kernel has a shared array sized by the block
        /// (`let%shared (t : float32) = () in`).
        #[arg(long, value_name = "X[,Y[,Z]]")]
        block: Option<String>,
        /// ir, wgsl, glsl, opencl, cuda, metal or ptx.
        #[arg(long, value_name = "T")]
        target: String,
        #[arg(long, value_name = "K")]
        kernel: Option<String>,
        /// Contract float `a * b + c` into fused multiply-adds (one rounding; every backend,
        /// interp included, then runs the same contracted kernel).
        #[arg(long)]
        fma: bool,
        /// Write to PATH instead of stdout.
        #[arg(short = 'o', value_name = "PATH")]
        output: Option<PathBuf>,
    },
    /// Run a kernel once and print a summary.
    Run(RunArgs),
    /// Run a kernel on `interp` and on other backends and compare every vector.
    Verify(VerifyArgs),
    /// List every backend: its devices, or why it is unavailable.
    Devices,
    /// Time a kernel on resident buffers: upload once, warm-up and timed launches, one
    /// download; kernel time (device timer), host time per launch, bandwidth.
    Bench(BenchArgs),
    /// Fuse a pipeline of kernels into one and print it (or why it cannot be fused).
    Fuse {
        file: PathBuf,
        /// Other files of the program, used as OCaml modules.
        #[arg(value_name = "MODULE")]
        modules: Vec<PathBuf>,
        /// The kernels, in pipeline order: A,B[,C...].
        #[arg(long, value_name = "A,B")]
        kernels: String,
        /// The intermediate vector of a two-kernel fusion (default: found by name).
        #[arg(long, value_name = "T")]
        via: Option<String>,
        /// ir, wgsl, glsl, opencl, cuda, metal or ptx.
        #[arg(long, value_name = "T", default_value = "ir")]
        target: String,
        /// Write to PATH instead of stdout.
        #[arg(short = 'o', value_name = "PATH")]
        output: Option<PathBuf>,
    },
}

/// Inputs shared by `run`, `verify` and `bench`.
#[derive(Args, Clone, Debug)]
struct InputArgs {
    /// Length of every generated vector (default 1024, or the length of the --input files).
    #[arg(long, value_name = "N")]
    size: Option<usize>,
    /// A scalar parameter's value (records, tuples, variants: V1,V2,... of their fields).
    #[arg(long = "arg", value_name = "NAME=VALUE")]
    args: Vec<String>,
    /// Read a vector parameter from a NumPy .npy file.
    #[arg(long = "input", value_name = "NAME=FILE.npy")]
    inputs: Vec<String>,
    /// Grid size in blocks (default: enough blocks to cover --size along x).
    #[arg(long, value_name = "X[,Y[,Z]]")]
    grid: Option<String>,
    /// Block size in threads (default: min(256, size) along x).
    #[arg(long, value_name = "X[,Y[,Z]]")]
    block: Option<String>,
    /// Seed of the input generator.
    #[arg(long, value_name = "S", default_value_t = sarek_harness::DEFAULT_SEED)]
    seed: u64,
    /// Length of one vector parameter, overriding --size for it (a 1-element output next to
    /// a long input: --size 268435456 --len out=1).
    #[arg(long = "len", value_name = "NAME=N")]
    lens: Vec<String>,
    /// Stop with an error when the command has not finished after SECONDS (a kernel that
    /// never ends cannot be interrupted on a device, so the whole process stops).
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout)]
    timeout: Option<std::time::Duration>,
}

/// `--timeout SECONDS`: a positive number of seconds (`2`, `0.5`).
fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x > 0.0 && *x < 1e9)
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| format!("`{s}` is not a positive number of seconds"))
}

/// `--atol X`: a non-negative number. NaN compares false with everything, so `--atol nan`
/// (or a negative bound) silently left only `--ulps` to decide.
fn parse_atol(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| *x >= 0.0)
        .ok_or_else(|| format!("`{s}` is not a non-negative number"))
}

/// Arm `--timeout`: after `limit`, if the command is still running, print why and end the
/// process with exit 1. `_exit` skips the exit handlers: a driver thread may be busy in the
/// runaway kernel, and its libraries' teardown would wait for it.
fn arm_timeout(command: &str, limit: std::time::Duration) {
    let command = command.to_string();
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        eprintln!(
            "error: `sarek {command}` did not finish within --timeout {} s (a kernel that does not terminate?); stopped",
            limit.as_secs_f64()
        );
        #[cfg(unix)]
        // SAFETY: `_exit` has no preconditions; it ends the process without running
        // handlers that could wait for the threads still in the kernel.
        unsafe {
            libc::_exit(1)
        };
        #[cfg(not(unix))]
        std::process::exit(1);
    });
}

#[derive(Args)]
struct RunArgs {
    file: PathBuf,
    /// Other files of the program, used as OCaml modules.
    #[arg(value_name = "MODULE")]
    modules: Vec<PathBuf>,
    #[arg(long, value_name = "K")]
    kernel: String,
    /// interp, cpu, wgpu, vulkan, opencl, cuda or ptx (default: $SAREK_BACKEND, else the best
    /// available device).
    #[arg(long, value_name = "B")]
    backend: Option<String>,
    #[command(flatten)]
    input: InputArgs,
    /// Write every vector parameter to DIR/<param>.npy after the run.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Contract float `a * b + c` into fused multiply-adds (one rounding; every backend,
    /// interp included, then runs the same contracted kernel).
    #[arg(long)]
    fma: bool,
    /// Launch without the checked mode's bounds and divisor checks on GPU backends.
    #[arg(long)]
    unchecked: bool,
}

#[derive(Args)]
struct VerifyArgs {
    file: PathBuf,
    /// Other files of the program, used as OCaml modules.
    #[arg(value_name = "MODULE")]
    modules: Vec<PathBuf>,
    /// The kernel (default: the file's @run directives, or its only kernel).
    #[arg(long, value_name = "K")]
    kernel: Option<String>,
    /// Backends to compare with interp: a comma list, or `all` (default: every available).
    #[arg(long, value_name = "B,B|all")]
    backends: Option<String>,
    #[command(flatten)]
    input: InputArgs,
    /// Floats agree within this absolute difference (default 1e-5 for float32, 1e-12 for
    /// float64).
    #[arg(long, value_name = "X", value_parser = parse_atol)]
    atol: Option<f64>,
    /// Floats agree within this many units in the last place (default 256 for float32, 4096
    /// for float64).
    #[arg(long, value_name = "N")]
    ulps: Option<u64>,
    /// Contract float `a * b + c` into fused multiply-adds (one rounding; every backend,
    /// interp included, then runs the same contracted kernel).
    #[arg(long)]
    fma: bool,
    /// Launch without the checked mode's bounds and divisor checks on GPU backends.
    #[arg(long)]
    unchecked: bool,
}

#[derive(Args)]
struct BenchArgs {
    file: PathBuf,
    /// Other files of the program, used as OCaml modules.
    #[arg(value_name = "MODULE")]
    modules: Vec<PathBuf>,
    #[arg(long, value_name = "K")]
    kernel: String,
    #[arg(long, value_name = "B")]
    backend: Option<String>,
    #[command(flatten)]
    input: InputArgs,
    /// Untimed launches first.
    #[arg(long, value_name = "N", default_value_t = 2)]
    warmup: u32,
    /// Timed launches (each timed by the device), then as many back-to-back ones timed by
    /// the host.
    #[arg(long, value_name = "N", default_value_t = 10)]
    reps: u32,
    /// Time the kernel with the checked mode's bounds and divisor checks (off by default).
    #[arg(long)]
    checked: bool,
    /// Contract float `a * b + c` into fused multiply-adds (one rounding; every backend,
    /// interp included, then runs the same contracted kernel).
    #[arg(long)]
    fma: bool,
}

/// How a command ends: an exit code and what to print on stderr.
pub struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    /// A user error: exit 1, `error: <message>`.
    pub fn user(message: impl Into<String>) -> Failure {
        Failure {
            code: 1,
            message: format!("error: {}", message.into()),
        }
    }
    /// A usage or I/O error: exit 2.
    pub fn io(message: impl Into<String>) -> Failure {
        Failure {
            code: 2,
            message: format!("error: {}", message.into()),
        }
    }
    /// Already rendered text (diagnostics), exit `code`.
    pub fn rendered(code: u8, text: String) -> Failure {
        Failure {
            code,
            message: text,
        }
    }
}

pub type CmdResult = Result<ExitCode, Failure>;

/// Colour only when stderr is a terminal (and NO_COLOR is unset).
pub fn color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

pub fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        // A driver or shader compiler's panic that the runtime catches and reports as an error.
        if sarek_runtime::foreign::inside_guard() {
            return;
        }
        eprintln!("error: internal error (a bug in sarek, please report it): {info}");
    }));
    // A closed stdout (`sarek compile ... | head`) ends the process quietly, as for other
    // Unix tools, instead of a panic on the failed print.
    #[cfg(unix)]
    // SAFETY: called before any thread exists; restoring the default action of SIGPIPE has
    // no other precondition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    // Before any thread exists (see `ensure_runtime_dir`).
    if let Command::Run(_) | Command::Verify(_) | Command::Devices | Command::Bench(_) = cli.command
    {
        ensure_runtime_dir();
    }
    // After `ensure_runtime_dir`: this starts a thread.
    match &cli.command {
        Command::Run(RunArgs { input, .. })
        | Command::Verify(VerifyArgs { input, .. })
        | Command::Bench(BenchArgs { input, .. }) => {
            if let Some(limit) = input.timeout {
                let name = match cli.command {
                    Command::Run(_) => "run",
                    Command::Verify(_) => "verify",
                    _ => "bench",
                };
                arm_timeout(name, limit);
            }
        }
        _ => {}
    }
    let result = match cli.command {
        Command::Check { files } => check::run(&files),
        Command::Compile {
            file,
            modules,
            block,
            target,
            kernel,
            fma,
            output,
        } => compile::run(
            &file,
            &modules,
            block.as_deref(),
            &target,
            kernel.as_deref(),
            fma,
            output.as_deref(),
        ),
        Command::Run(a) => exec::run(a),
        Command::Verify(a) => verify::run(a),
        Command::Devices => devices::run(),
        Command::Bench(a) => exec::bench(a),
        Command::Fuse {
            file,
            modules,
            kernels,
            via,
            target,
            output,
        } => fuse::run(
            &file,
            &modules,
            &kernels,
            via.as_deref(),
            &target,
            output.as_deref(),
        ),
    };
    match result {
        Ok(code) => code,
        Err(f) => {
            let msg = f.message.trim_end();
            if !msg.is_empty() {
                eprintln!("{msg}");
            }
            ExitCode::from(f.code)
        }
    }
}

/// A private, empty `XDG_RUNTIME_DIR` for commands that open devices, where none is set.
///
/// wgpu enables `VK_KHR_wayland_surface`, which makes Mesa's Vulkan device-select layer ask
/// Wayland for the default GPU, and libwayland prints "error: XDG_RUNTIME_DIR is invalid or
/// not set in the environment." when the variable is unset (headless machines, CI): that
/// reads like a Sarek error. With a private empty folder the connection fails silently and
/// the layer keeps working otherwise (`NODEVICE_SELECT=1` would disable it altogether). Only
/// the command-line tool does this: setting the environment is sound only while the process
/// has a single thread, which a library cannot know.
///
/// The folder is `sarek-runtime-<uid>` in the system temp dir, created once with mode 0700
/// and reused (never removed), so nothing leaks when `sarek` is killed (`sarek ... | head`).
/// It is used only if it really is ours: a directory (not a link) owned by this user that
/// no one else can enter; anything else (another user's squat) leaves the variable unset.
#[cfg(unix)]
fn ensure_runtime_dir() {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let valid = std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|v| Path::new(&v).is_absolute());
    if valid {
        return;
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let dir = std::env::temp_dir().join(format!("sarek-runtime-{uid}"));
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return,
    }
    let ours = std::fs::symlink_metadata(&dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0);
    if ours {
        // SAFETY: called from `main` before any thread is started, so nothing reads the
        // environment concurrently.
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", &dir) };
    }
}

/// Wayland (and its noise) is a Unix matter.
#[cfg(not(unix))]
fn ensure_runtime_dir() {}

/// Read source file `path`: an unreadable or too large file is exit 2, one that is not UTF-8
/// a located error (exit 1).
fn read(path: &Path) -> Result<String, Failure> {
    files::read_source(path)
}

/// Read and check `path`, with `modules` as the program's modules (each file is module
/// `Name` after its stem): an unreadable file is exit 2, diagnostics exit 1.
pub fn load(path: &Path, modules: &[PathBuf]) -> Result<Program, Failure> {
    let text = read(path)?;
    // A file named twice (or the program named again among its modules) is read once, as the
    // macros do.
    let mut others = Vec::new();
    let mut seen: Vec<&Path> = vec![path];
    for m in modules {
        if !seen.contains(&m.as_path()) {
            seen.push(m);
            others.push((m.display().to_string(), read(m)?));
        }
    }
    Program::check_with_modules(&path.display().to_string(), &text, &others).map_err(
        |(sources, diags)| {
            Failure::rendered(
                1,
                sarek_compiler::diag::render_all(&diags, &sources, color()),
            )
        },
    )
}

/// `No such file or directory` without the `(os error 2)` suffix.
pub fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The kernel named `name`, checked to exist.
pub fn kernel_name(program: &Program, name: &str) -> Result<String, Failure> {
    if program.kernel_names().contains(&name) {
        Ok(name.to_string())
    } else {
        Err(Failure::user(program.unknown_kernel(name)))
    }
}

/// Lower `name`; diagnostics are exit 1.
pub fn lower(program: &Program, name: &str) -> Result<sarek_compiler::ir::Kernel, Failure> {
    program
        .lower(name)
        .map_err(|d| Failure::rendered(1, program.render(&d, color())))
}

/// `kernel` with its float multiply-adds contracted when `--fma` asks for it.
pub fn contracted(mut kernel: sarek_compiler::ir::Kernel, fma: bool) -> sarek_compiler::ir::Kernel {
    if fma {
        sarek_compiler::passes::opt::contract_fma(&mut kernel);
    }
    kernel
}

/// A `--backend` value; unknown names are a user error (exit 1).
pub fn parse_backend(s: &str) -> Result<sarek::Backend, Failure> {
    sarek::Backend::parse(s.trim()).map_err(Failure::user)
}

/// Open `--backend` or the default device.
pub fn open_device(backend: Option<&str>) -> Result<std::sync::Arc<dyn sarek::Device>, Failure> {
    let b = backend.map(parse_backend).transpose()?;
    sarek_runtime::discover::open_or_default(b).map_err(|e| Failure::user(e.to_string()))
}
