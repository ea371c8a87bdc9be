//! Compile speed against naga, per corpus file, in one process.
//!
//! For each `tests/kernels/*.sarek` file, the kernels that have a WGSL form (sarek's own
//! output) are the common work:
//! - front end: sarek's [`sarek_compiler::check`] of the file (parse, type check, mono,
//!   recursion, convergence, lowering) against naga's parse + validate of each kernel's WGSL;
//! - all targets: sarek's check (keeping the IR it lowers, [`sarek_compiler::check_lowered`]),
//!   then each kernel written for its six targets in one [`sarek_compiler::generate_many`]
//!   call (WGSL, GLSL, OpenCL C, CUDA C, Metal, PTX), against naga's parse + validate + write of
//!   four (SPIR-V, GLSL, MSL, HLSL) from each kernel's WGSL.
//!
//! Each figure is the median of `SAREK_BENCH_ITERS` (default 200) timed iterations after a
//! warm-up, the four measurements taking turns within each iteration so load on the machine
//! affects both sides alike; the table
//! gives the ratios sarek / naga (below 1.0: sarek is faster). Run with
//! `cargo bench -p sarek-compiler --bench vs_naga` (release profile). With
//! `SAREK_BENCH_PROFILE=1` set it runs only sarek's side, untimed, for a profiler
//! (`SAREK_BENCH_PROFILE=front`: only its front end).

use std::hint::black_box;
use std::time::{Duration, Instant};

use sarek_testkit::files;

use sarek_compiler::{SourceMap, Target, TargetOptions};

/// The six sarek targets (the IR printout is not a target).
const TARGETS: [Target; 6] = [
    Target::Wgsl,
    Target::Glsl,
    Target::OpenCl,
    Target::Cuda,
    Target::Metal,
    Target::Ptx,
];

struct Case {
    name: String,
    source: String,
    /// Kernels with a WGSL form, and that form.
    kernels: Vec<(String, String)>,
}

fn sarek_front(source: &str) {
    let mut sources = SourceMap::new();
    let file = sources.add("bench.sarek", source);
    black_box(sarek_compiler::check(&sources, file).is_ok());
}

fn sarek_all(source: &str, kernels: &[(String, String)]) {
    let mut sources = SourceMap::new();
    let file = sources.add("bench.sarek", source);
    let checked = sarek_compiler::check_lowered(&sources, file).expect("corpus file checks");
    let options = TargetOptions::default();
    for (name, _) in kernels {
        let k = checked
            .kernels
            .iter()
            .find(|k| k.name == *name)
            .expect("kernel lowered");
        for generated in sarek_compiler::generate_many(k, &TARGETS, &options) {
            black_box(generated.is_ok());
        }
    }
}

fn naga_validate(wgsl: &str) -> (naga::Module, naga::valid::ModuleInfo) {
    let module = naga::front::wgsl::parse_str(wgsl).expect("sarek's WGSL parses");
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .expect("sarek's WGSL validates");
    (module, info)
}

fn naga_front(kernels: &[(String, String)]) {
    for (_, wgsl) in kernels {
        black_box(naga_validate(wgsl));
    }
}

fn naga_all(kernels: &[(String, String)]) {
    use naga::back::{glsl, hlsl, msl, spv};
    for (_, wgsl) in kernels {
        let (module, info) = naga_validate(wgsl);
        black_box(spv::write_vec(&module, &info, &spv::Options::default(), None).is_ok());
        let entry = module.entry_points[0].name.clone();
        let mut out = String::new();
        let options = glsl::Options {
            version: glsl::Version::Desktop(450),
            ..glsl::Options::default()
        };
        let pipeline = glsl::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: entry,
            multiview: None,
        };
        if let Ok(mut w) = glsl::Writer::new(
            &mut out,
            &module,
            &info,
            &options,
            &pipeline,
            naga::proc::BoundsCheckPolicies::default(),
        ) {
            black_box(w.write().is_ok());
        }
        black_box(
            msl::write_string(
                &module,
                &info,
                &msl::Options::default(),
                &msl::PipelineOptions::default(),
            )
            .is_ok(),
        );
        let mut out = String::new();
        let (options, pipeline) = (hlsl::Options::default(), hlsl::PipelineOptions::default());
        black_box(
            hlsl::Writer::new(&mut out, &options, &pipeline)
                .write(&module, &info, None)
                .is_ok(),
        );
        black_box(out);
    }
}

/// Median time of each of `fs` over `iters` runs (after a few untimed ones), the functions
/// run in turn within each iteration so that a change of load affects all of them alike.
fn medians<const N: usize>(iters: usize, mut fs: [&mut dyn FnMut(); N]) -> [Duration; N] {
    for _ in 0..3 {
        fs.iter_mut().for_each(|f| f());
    }
    let mut times: [Vec<Duration>; N] = std::array::from_fn(|_| Vec::with_capacity(iters));
    for _ in 0..iters {
        for (f, t) in fs.iter_mut().zip(&mut times) {
            let start = Instant::now();
            f();
            t.push(start.elapsed());
        }
    }
    times.map(|mut t| {
        t.sort();
        t[t.len() / 2]
    })
}

fn load() -> (Vec<Case>, Vec<String>) {
    let mut cases = Vec::new();
    let mut skipped = Vec::new();
    for path in files::corpus() {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let source = std::fs::read_to_string(&path).expect("readable corpus file");
        let mut sources = SourceMap::new();
        let file = sources.add("bench.sarek", &source);
        let program = sarek_compiler::check(&sources, file).expect("corpus file checks");
        let mut kernels = Vec::new();
        for k in &program.kernels {
            let ir = sarek_compiler::lower_kernel(&program, &k.name).expect("kernel lowers");
            if let Ok(g) = sarek_compiler::generate(&ir, Target::Wgsl, &TargetOptions::default()) {
                kernels.push((k.name.clone(), g.source));
            }
        }
        if kernels.is_empty() {
            skipped.push(name);
        } else {
            cases.push(Case {
                name,
                source,
                kernels,
            });
        }
    }
    (cases, skipped)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument selects files by name.
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let iters: usize = std::env::var("SAREK_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let (cases, skipped) = load();
    if let Some(profile) = std::env::var_os("SAREK_BENCH_PROFILE") {
        // Only sarek's side, for a profiler: `perf record` sees no naga frames. `front` runs
        // the front end alone.
        let front_only = profile == "front";
        for c in &cases {
            if filter.as_ref().is_none_or(|f| c.name.contains(f.as_str())) {
                for _ in 0..iters {
                    sarek_front(&c.source);
                    if !front_only {
                        sarek_all(&c.source, &c.kernels);
                    }
                }
            }
        }
        return;
    }
    println!(
        "{:<22} {:>3} {:>10} {:>10} {:>6} {:>10} {:>10} {:>6}",
        "file", "k", "sarek fe", "naga fe", "ratio", "sarek 6", "naga 4", "ratio"
    );
    let (mut front_ratios, mut all_ratios) = (Vec::new(), Vec::new());
    for c in &cases {
        if filter
            .as_ref()
            .is_some_and(|f| !c.name.contains(f.as_str()))
        {
            continue;
        }
        let [sf, nf, sa, na] = medians(
            iters,
            [
                &mut || sarek_front(&c.source),
                &mut || naga_front(&c.kernels),
                &mut || sarek_all(&c.source, &c.kernels),
                &mut || naga_all(&c.kernels),
            ],
        );
        let (rf, ra) = (micros(sf) / micros(nf), micros(sa) / micros(na));
        front_ratios.push(rf);
        all_ratios.push(ra);
        println!(
            "{:<22} {:>3} {:>8.1}us {:>8.1}us {:>6.2} {:>8.1}us {:>8.1}us {:>6.2}",
            c.name,
            c.kernels.len(),
            micros(sf),
            micros(nf),
            rf,
            micros(sa),
            micros(na),
            ra
        );
    }
    let max = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    println!(
        "front end: median ratio {:.2}, max {:.2}; all targets: median ratio {:.2}, max {:.2} ({} files, {iters} iterations each)",
        med(&mut front_ratios.clone()),
        max(&front_ratios),
        med(&mut all_ratios.clone()),
        max(&all_ratios),
        front_ratios.len()
    );
    if !skipped.is_empty() {
        println!(
            "no WGSL form (float64), not compared: {}",
            skipped.join(", ")
        );
    }
}
