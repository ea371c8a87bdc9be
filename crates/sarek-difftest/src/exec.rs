//! Every call this crate makes into the Sarek library, in one place.
//!
//! The runtime's API is being restructured (issue 12); porting the differential tester means
//! porting this module only. It checks and lowers a source through the facade, opens
//! devices, builds the seeded arguments, launches, and compares with the project's own
//! tolerance ([`Tolerance::default`], the one `sarek verify` uses).

use sarek::{ArgValue, Backend, Device, LaunchConfig, RuntimeError};
use sarek_compiler::ir::Kernel;
use sarek_harness::{self as harness, Inputs, Tolerance};
use sarek_runtime::discover;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use sarek_compiler::{Target, TargetOptions};

/// What a launch needs besides the kernel.
#[derive(Clone, Debug)]
pub struct Launch {
    pub size: usize,
    pub block: [u32; 3],
    pub grid: [u32; 3],
    /// Seed of the generated vector contents.
    pub seed: u64,
    pub args: Vec<(String, String)>,
}

/// A checked and lowered kernel.
pub struct Lowered {
    pub program: sarek::Program,
    pub kernel: Kernel,
}

/// Check `source` and lower kernel `name`; Err is the rendered diagnostics.
pub fn lower(file: &str, source: &str, name: &str) -> Result<Lowered, String> {
    let program = sarek::Program::check(file, source)
        .map_err(|(sources, d)| sarek_compiler::diag::render_all(&d, &sources, false))?;
    let kernel = program.lower(name).map_err(|d| program.render(&d, false))?;
    Ok(Lowered { program, kernel })
}

/// Generate target source with every device feature assumed (what `sarek compile` does).
/// Err is the generator's refusal: one line per diagnostic, with its location and whether it
/// is located and names the target.
pub fn generate(l: &Lowered, target: Target) -> Result<String, Refusal> {
    match sarek_compiler::generate(&l.kernel, target, &TargetOptions::default()) {
        Ok(g) => Ok(g.source),
        Err(diags) => Err(Refusal {
            well_formed: diags
                .iter()
                .all(|d| !d.span.is_dummy() && d.message.contains(target.display_name()))
                && !diags.is_empty(),
            message: l.program.render(&diags, false),
        }),
    }
}

/// A generator's refusal.
#[derive(Clone, Debug)]
pub struct Refusal {
    /// Every diagnostic is located and names the target (the project's rule).
    pub well_formed: bool,
    pub message: String,
}

/// An opened device.
pub type Dev = Arc<dyn Device>;

/// Open `backend`; Err is why it is unavailable.
pub fn open(backend: Backend) -> Result<Dev, String> {
    discover::open(backend).map_err(|e| discover::unavailable_reason(&e))
}

pub use sarek_runtime::spirv::SharedSpirv;

/// As [`open`], with `vulkan` taking the SPIR-V the GLSL validator compiled from the same
/// source out of `shared` (one glslang run instead of two; the module is the same).
pub fn open_sharing(backend: Backend, shared: &Arc<SharedSpirv>) -> Result<Dev, String> {
    match backend {
        Backend::Vulkan => sarek_runtime::vulkan::open_sharing(shared.clone())
            .map_err(|e| discover::unavailable_reason(&e)),
        _ => open(backend),
    }
}

/// The result of one launch.
pub enum Ran {
    Ok {
        args: Vec<ArgValue>,
        time: Duration,
    },
    /// A located refusal (generator or device capability).
    Refused(String),
    /// An interpreter fault or a device-reported trap.
    Fault(String),
    /// The device compiler rejected generated source, or the launch failed.
    Failed(String),
}

/// The seeded arguments of a launch (the same for every backend).
pub fn arguments(l: &Lowered, launch: &Launch) -> Result<Vec<ArgValue>, String> {
    let names: Vec<String> = harness::signature(&l.kernel)
        .into_iter()
        .map(|p| p.name)
        .collect();
    let inputs = Inputs {
        args: launch
            .args
            .iter()
            .filter(|(n, _)| names.contains(n))
            .cloned()
            .collect(),
        ..Inputs::new(launch.size, launch.seed)
    };
    harness::build_args(&l.kernel, &inputs).map_err(|e| e.to_string())
}

/// Launch on `device` with a copy of `args`.
pub fn run(device: &dyn Device, l: &Lowered, launch: &Launch, args: &[ArgValue]) -> Ran {
    let mut args = args.to_vec();
    let config = LaunchConfig {
        grid: launch.grid,
        block: launch.block,
    };
    let start = Instant::now();
    match harness::run(device, &l.kernel, config, &mut args) {
        Ok(_) => Ran::Ok {
            args,
            time: start.elapsed(),
        },
        Err(e @ RuntimeError::Refused { .. }) => {
            Ran::Refused(l.program.render_runtime_error(&e, false))
        }
        Err(e @ RuntimeError::Fault { .. }) => {
            Ran::Fault(l.program.render_runtime_error(&e, false))
        }
        Err(e) => Ran::Failed(l.program.render_runtime_error(&e, false)),
    }
}

/// Compare every vector with the reference; `None` when all agree, else one line per
/// vector that differs.
pub fn compare(l: &Lowered, expected: &[ArgValue], found: &[ArgValue]) -> Option<String> {
    let cmp = harness::compare_args(&l.kernel, expected, found, &Tolerance::default());
    let bad: Vec<String> = cmp
        .iter()
        .filter(|c| !c.ok())
        .map(|c| {
            format!(
                "{}: {} of {} values differ; first {}",
                c.param,
                c.mismatches,
                c.compared,
                c.first.as_ref().map(|m| m.to_string()).unwrap_or_default()
            )
        })
        .collect();
    (!bad.is_empty()).then(|| bad.join("\n"))
}

/// The backends, by command-line name.
pub fn backend(name: &str) -> Result<Backend, String> {
    Backend::parse(name)
}

pub fn backend_name(b: Backend) -> &'static str {
    b.name()
}

/// Every backend but the reference.
pub fn all_backends() -> Vec<Backend> {
    Backend::ALL
        .iter()
        .copied()
        .filter(|b| *b != Backend::Interp)
        .collect()
}

pub use sarek::Backend as BackendKind;

/// Make NVRTC loadable (for the CUDA C validator); Err says why it is not.
pub fn load_nvrtc() -> Result<(), String> {
    sarek_runtime::cuda::nvrtc::load()
}

/// Compile CUDA C for `sm_<arch>` with NVRTC (the CUDA backend's own options).
pub fn nvrtc_compile(source: &str, arch: u32) -> Result<(), String> {
    sarek_runtime::cuda::nvrtc::compile(source, arch).map(|_| ())
}

/// The kernel and launch of every `(* @run ... *)` directive of `source` (a written-out
/// finding), with the vector seed `seed`.
pub fn directives(source: &str, seed: u64) -> Result<Vec<(String, Launch)>, String> {
    let all = harness::parse_directives(source)?;
    if all.is_empty() {
        return Err("no `(* @run ... *)` directive".into());
    }
    Ok(all
        .into_iter()
        .map(|d| {
            let config = d.config();
            (
                d.kernel.clone(),
                Launch {
                    size: d.size,
                    block: config.block,
                    grid: config.grid,
                    seed,
                    args: d.args,
                },
            )
        })
        .collect())
}
