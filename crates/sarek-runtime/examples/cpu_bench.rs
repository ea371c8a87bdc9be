//! The `cpu` backend against hand-written Rust + rayon (and PoCL through `opencl` when the
//! feature is built and the OpenCL device is a CPU; a GPU's OpenCL or none is skipped):
//! saxpy 2^24, mandelbrot 1024x1024x256 and tiled matmul 512, the corpus kernels, kernel time
//! only (median of the runs); then the JIT compile time of every corpus kernel when
//! `tests/kernels/` (or the directory given with `--corpus`) is there. Results are checked
//! against the hand-written versions. The kernels are built into the binary, so it runs on a
//! machine without the repository or a Rust toolchain.
//!
//! ```sh
//! cargo build --release -p sarek-runtime --example cpu_bench
//! target/release/examples/cpu_bench [--runs N] [--corpus DIR | --no-corpus]
//! target/release/examples/cpu_bench --dump KERNEL   # its Cranelift IR and machine code
//! ```

use rayon::prelude::*;
use sarek_compiler::ir::Kernel;
use sarek_compiler::types::Literal;
use sarek_runtime::value::{ArgValue, Column, HostVector};
use sarek_runtime::{Backend, Device, LaunchConfig, cpu};
use std::time::{Duration, Instant};

const SAXPY: &str = include_str!("../../../tests/kernels/saxpy.sarek");
const MANDELBROT: &str = include_str!("../../../tests/kernels/mandelbrot.sarek");
const MATMUL: &str = include_str!("../../../tests/kernels/matmul_tiled.sarek");

fn lower(name: &str, source: &str, kernel: &str) -> Kernel {
    let mut sources = sarek_compiler::SourceMap::new();
    let id = sources.add(name.to_string(), source.to_string());
    let program = sarek_compiler::check(&sources, id)
        .unwrap_or_else(|d| panic!("{}", sarek_compiler::diag::render_all(&d, &sources, false)));
    sarek_compiler::lower_kernel(&program, kernel)
        .unwrap_or_else(|d| panic!("{}", sarek_compiler::diag::render_all(&d, &sources, false)))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// Median kernel time of `runs` launches on `device` on resident buffers (uploaded once,
/// after one warm-up launch, which also compiles: the vectors drift over the runs, only the
/// time matters), as PoCL's are timed below; and the vectors of one launch on fresh copies of
/// `args` (through [`Device::launch`]), for the result check.
fn device_time(
    device: &dyn Device,
    kernel: &Kernel,
    config: LaunchConfig,
    args: &[ArgValue],
    runs: usize,
) -> Result<(Duration, Vec<ArgValue>), String> {
    use sarek_runtime::bind::BindArg;
    use sarek_runtime::launch;
    let fail = |e: sarek_runtime::RuntimeError| e.to_string();
    let mut last = args.to_vec();
    device.launch(kernel, config, &mut last).map_err(fail)?;
    let handle = sarek_runtime::KernelHandle::new(kernel.clone());
    let built = launch::build_for(device, &handle, config).map_err(fail)?;
    let mut buffers = Vec::new();
    for (param, arg) in built.abi.params.iter().zip(args) {
        buffers.push(match (&param.kind, arg) {
            (sarek_compiler::abi::AbiParamKind::Vector { elem, .. }, ArgValue::Vector(v)) => Some(
                sarek_runtime::DeviceVector::from_host(device, v, elem.clone(), &param.name)
                    .map_err(fail)?,
            ),
            _ => None,
        });
    }
    let bind: Vec<BindArg<'_>> = args
        .iter()
        .zip(&buffers)
        .map(|(a, b)| match (a, b) {
            (_, Some(b)) => BindArg::Vector(b),
            (ArgValue::Scalar(l), _) => BindArg::Scalar(*l),
            (ArgValue::Aggregate(ls), _) => BindArg::Aggregate(ls),
            (ArgValue::Vector(_), None) => unreachable!("vectors have buffers"),
        })
        .collect();
    launch::enqueue_built(device, &built, config, &bind, false).map_err(fail)?;
    launch::synchronize(device).map_err(fail)?;
    let mut times = Vec::new();
    for _ in 0..runs {
        launch::enqueue_built(device, &built, config, &bind, true).map_err(fail)?;
        times.push(launch::synchronize(device).map_err(fail)?);
    }
    Ok((median(times), last))
}

/// Median kernel time of `runs` native launches without lane groups (after a warm-up).
fn scalar_time(kernel: &Kernel, config: LaunchConfig, args: &[ArgValue], runs: usize) -> Duration {
    let cache = cpu::JitCache::with_options(sarek_jit::JitOptions {
        lane_groups: false,
        ..sarek_jit::JitOptions::default()
    });
    let mut times = Vec::new();
    for i in 0..=runs {
        let mut a = args.to_vec();
        let s = cache
            .run_native(kernel, config, &mut a)
            .expect("the bench kernels compile natively");
        if i > 0 {
            times.push(s.kernel_time);
        }
    }
    median(times)
}

/// Median wall time of `runs` native launches on resident vectors (after a warm-up), timed
/// around the launch as the hand-written versions are (waking the rayon pool included).
fn jit_wall(kernel: &Kernel, config: LaunchConfig, args: &[ArgValue], runs: usize) -> Duration {
    let jit = sarek_jit::compile(kernel, &sarek_jit::JitOptions::default())
        .expect("the bench kernels compile natively");
    let mut owned = args.to_vec();
    host_time(runs, || {
        let mut a: Vec<sarek_jit::JitArg<'_>> = owned
            .iter_mut()
            .map(|a| match a {
                ArgValue::Scalar(l) => sarek_jit::JitArg::Scalar(*l),
                ArgValue::Vector(v) => sarek_jit::JitArg::Vector(sarek_jit::VectorArg {
                    len: v.len,
                    columns: v
                        .columns
                        .iter_mut()
                        .map(|c| match c {
                            Column::F32(x) => sarek_jit::Column::F32(x),
                            Column::I32(x) => sarek_jit::Column::I32(x),
                            _ => panic!("not a bench column"),
                        })
                        .collect(),
                }),
                _ => panic!("not a bench argument"),
            })
            .collect();
        jit.launch(config.grid, config.block, &mut a)
            .expect("the bench kernels run");
    })
}

/// CPU time of the process so far, every thread (`/proc/self/task/*/schedstat`, in ns;
/// zero where it cannot be read). The rayon pool's threads live for the whole run, so a
/// difference of two readings is the CPU time in between.
fn process_cpu() -> Duration {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    let ns: u64 = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

/// CPU time per run of the last [`host_time`] (all threads, rayon's idle spinning included).
static LAST_CPU: std::sync::Mutex<Duration> = std::sync::Mutex::new(Duration::ZERO);

fn host_time(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    let c0 = process_cpu();
    let wall = median(
        (0..runs)
            .map(|_| {
                let s = Instant::now();
                f();
                s.elapsed()
            })
            .collect(),
    );
    *LAST_CPU.lock().unwrap() = (process_cpu() - c0) / runs.max(1) as u32;
    wall
}

fn last_cpu() -> Duration {
    *LAST_CPU.lock().unwrap()
}

fn f32_col(a: &ArgValue) -> &[f32] {
    match a {
        ArgValue::Vector(HostVector { columns, .. }) => match &columns[0] {
            Column::F32(v) => v,
            _ => panic!("not float32"),
        },
        _ => panic!("not a vector"),
    }
}

fn i32_col(a: &ArgValue) -> &[i32] {
    match a {
        ArgValue::Vector(HostVector { columns, .. }) => match &columns[0] {
            Column::I32(v) => v,
            _ => panic!("not int32"),
        },
        _ => panic!("not a vector"),
    }
}

fn vf32(v: Vec<f32>) -> ArgValue {
    ArgValue::Vector(HostVector {
        len: v.len(),
        columns: vec![Column::F32(v)],
    })
}

fn vi32(v: Vec<i32>) -> ArgValue {
    ArgValue::Vector(HostVector {
        len: v.len(),
        columns: vec![Column::I32(v)],
    })
}

/// The OpenCL device when it runs on the CPU (PoCL); a GPU's OpenCL is not a comparison.
fn pocl() -> Option<std::sync::Arc<dyn Device>> {
    let d = sarek_runtime::discover::open(Backend::OpenCl).ok()?;
    let name = d.info().name.to_lowercase();
    let on_cpu = ["pocl", "pthread", "cpu"].iter().any(|w| name.contains(w));
    if !on_cpu {
        println!("opencl device `{}` is not a CPU: skipped", d.info().name);
    }
    on_cpu.then_some(d)
}

struct Row {
    name: &'static str,
    hand: Duration,
    /// The `cpu` device's kernel time: its device interval (first block's start to last
    /// block's end), comparable with PoCL's profiling interval.
    cpu: Duration,
    /// Wall time around a native launch on resident vectors, comparable with `hand`.
    cpu_wall: Duration,
    /// `cpu` without lane groups (every segment thread by thread).
    scalar: Duration,
    /// CPU time per run (all threads) of `hand` and of `cpu_wall`.
    hand_cpu: Duration,
    cpu_wall_cpu: Duration,
    opencl: Option<Result<Duration, String>>,
    /// PoCL with its optimiser on ([`pocl_optimised`]): time and result check.
    optimised: Option<Result<(Duration, String), String>>,
    check: String,
}

/// The PoCL device the bench builds optimised programs on itself (see [`pocl_optimised`]).
#[cfg(feature = "opencl")]
fn pocl_opt() -> Option<pocl_optimised::Pocl> {
    pocl_optimised::open()
}
#[cfg(not(feature = "opencl"))]
fn pocl_opt() -> Option<NoPocl> {
    None
}
#[cfg(not(feature = "opencl"))]
struct NoPocl;
#[cfg(not(feature = "opencl"))]
impl NoPocl {
    fn time(
        &self,
        _: &Kernel,
        _: LaunchConfig,
        _: &[ArgValue],
        _: usize,
    ) -> Result<(Duration, Vec<ArgValue>), String> {
        Err("built without opencl".into())
    }
}

fn max_rel(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| ((x - y).abs() as f64) / (x.abs().max(1.0) as f64))
        .fold(0.0, f64::max)
}

fn main() {
    let mut runs = 7usize;
    let mut corpus = Some(std::path::PathBuf::from("tests/kernels"));
    let mut dump = None;
    let mut only: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).unwrap_or(runs),
            "--corpus" => corpus = args.next().map(Into::into),
            "--no-corpus" => corpus = None,
            "--dump" => dump = args.next(),
            "--only" => only = args.next(),
            _ => {
                eprintln!(
                    "usage: cpu_bench [--runs N] [--corpus DIR | --no-corpus] [--only saxpy|mandelbrot|matmul] [--dump KERNEL]"
                );
                std::process::exit(2);
            }
        }
    }
    if let Some(name) = dump {
        let dir = corpus.unwrap_or_else(|| "tests/kernels".into());
        let code = corpus_kernels(&dir)
            .into_iter()
            .find(|k| k.name == name)
            .map(|k| {
                let options = sarek_jit::JitOptions {
                    keep_listing: true,
                    ..sarek_jit::JitOptions::default()
                };
                match sarek_jit::compile(&k, &options) {
                    Ok(j) => j.listing().unwrap_or_default().to_string(),
                    Err(e) => format!("not compiled: {e}"),
                }
            });
        match code {
            Some(text) => println!("{text}"),
            None => {
                eprintln!("no kernel `{name}` in {}", dir.display());
                std::process::exit(2);
            }
        }
        return;
    }
    let cpu_dev = cpu::open().expect("cpu is always available");
    let ocl = pocl();
    let optimised_pocl = pocl_opt();
    println!(
        "cpu: {} | opencl: {} | rayon threads: {} | runs: {runs}",
        cpu_dev.info().name,
        ocl.as_ref()
            .map(|d| d.info().name)
            .unwrap_or_else(|| "unavailable".into()),
        rayon::current_num_threads()
    );
    let mut rows = Vec::new();
    let wanted = |name: &str| only.as_deref().is_none_or(|o| o == name);

    // saxpy 2^24: y <- a*x + y.
    if wanted("saxpy") {
        let n = 1usize << 24;
        let k = lower("saxpy.sarek", SAXPY, "saxpy");
        let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.001).collect();
        let y0: Vec<f32> = (0..n).map(|i| (i % 777) as f32 * 0.5).collect();
        let a = 2.5f32;
        let mut y = y0.clone();
        // y drifts over the runs: only the time matters here.
        let hand = host_time(runs, || {
            y.par_iter_mut()
                .zip(x.par_iter())
                .for_each(|(y, x)| *y += a * *x);
        });
        let hand_cpu = last_cpu();
        let mut want = y0.clone();
        want.iter_mut().zip(&x).for_each(|(y, x)| *y += a * *x);
        let args = vec![
            vf32(x.clone()),
            vf32(y0.clone()),
            ArgValue::Scalar(Literal::F32(a)),
            ArgValue::Scalar(Literal::I32(n as i32)),
        ];
        let config = LaunchConfig::linear(n as u32);
        let (cpu_t, out) = device_time(cpu_dev.as_ref(), &k, config, &args, runs).unwrap();
        let check = if f32_col(&out[1]) == want.as_slice() {
            "cpu exact".to_string()
        } else {
            "CPU MISMATCH".to_string()
        };
        let opencl = ocl
            .as_ref()
            .map(|d| device_time(d.as_ref(), &k, config, &args, runs).map(|r| r.0));
        let optimised = optimised_pocl.as_ref().map(|p| {
            p.time(&k, config, &args, runs).map(|(t, r)| {
                let exact = f32_col(&r[1]) == want.as_slice();
                (t, if exact { "exact" } else { "MISMATCH" }.to_string())
            })
        });
        let scalar = scalar_time(&k, config, &args, runs);
        let cpu_wall = jit_wall(&k, config, &args, runs);
        let cpu_wall_cpu = last_cpu();
        rows.push(Row {
            name: "saxpy 2^24 float32",
            cpu_wall,
            hand_cpu,
            cpu_wall_cpu,
            optimised,
            hand,
            cpu: cpu_t,
            scalar,
            opencl,
            check,
        });
    }

    // mandelbrot 1024 x 1024, 256 iterations, the corpus's int32 fixed-point kernel.
    if wanted("mandelbrot") {
        let (w, h, max_iter) = (1024i32, 1024i32, 256i32);
        let k = lower("mandelbrot.sarek", MANDELBROT, "mandelbrot");
        let mut out = vec![0i32; (w * h) as usize];
        let hand = host_time(runs, || {
            out.par_chunks_mut(w as usize)
                .enumerate()
                .for_each(|(y, row)| {
                    for (x, o) in row.iter_mut().enumerate() {
                        *o = mandel(x as i32, y as i32, w, h, max_iter);
                    }
                })
        });
        let hand_cpu = last_cpu();
        let args = vec![
            vi32(vec![0; (w * h) as usize]),
            ArgValue::Scalar(Literal::I32(w)),
            ArgValue::Scalar(Literal::I32(h)),
            ArgValue::Scalar(Literal::I32(max_iter)),
        ];
        let config = LaunchConfig {
            grid: [(w as u32).div_ceil(16), (h as u32).div_ceil(16), 1],
            block: [16, 16, 1],
        };
        let (cpu_t, res) = device_time(cpu_dev.as_ref(), &k, config, &args, runs).unwrap();
        let check = if i32_col(&res[0]) == out.as_slice() {
            "cpu exact".to_string()
        } else {
            "CPU MISMATCH".to_string()
        };
        let opencl = ocl
            .as_ref()
            .map(|d| device_time(d.as_ref(), &k, config, &args, runs).map(|r| r.0));
        let optimised = optimised_pocl.as_ref().map(|p| {
            p.time(&k, config, &args, runs).map(|(t, r)| {
                let exact = i32_col(&r[0]) == out.as_slice();
                (t, if exact { "exact" } else { "MISMATCH" }.to_string())
            })
        });
        let scalar = scalar_time(&k, config, &args, runs);
        let cpu_wall = jit_wall(&k, config, &args, runs);
        let cpu_wall_cpu = last_cpu();
        rows.push(Row {
            name: "mandelbrot 1024^2 x256",
            cpu_wall,
            hand_cpu,
            cpu_wall_cpu,
            optimised,
            hand,
            cpu: cpu_t,
            scalar,
            opencl,
            check,
        });
    }

    // Tiled matmul 512 (16x16 shared tiles on the device; rows in parallel on the host).
    if wanted("matmul") {
        let n = 512usize;
        let k = lower("matmul_tiled.sarek", MATMUL, "matmul_tiled");
        let a: Vec<f32> = (0..n * n)
            .map(|i| ((i * 7) % 13) as f32 * 0.25 - 1.5)
            .collect();
        let b: Vec<f32> = (0..n * n)
            .map(|i| ((i * 5) % 11) as f32 * 0.5 - 2.0)
            .collect();
        let mut c = vec![0f32; n * n];
        let hand = host_time(runs, || {
            c.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
                row.fill(0.0);
                for k in 0..n {
                    let aik = a[i * n + k];
                    for (cj, bj) in row.iter_mut().zip(&b[k * n..k * n + n]) {
                        *cj += aik * bj;
                    }
                }
            })
        });
        let hand_cpu = last_cpu();
        let args = vec![
            vf32(a.clone()),
            vf32(b.clone()),
            vf32(vec![0.0; n * n]),
            ArgValue::Scalar(Literal::I32(n as i32)),
        ];
        let config = LaunchConfig {
            grid: [(n as u32) / 16, (n as u32) / 16, 1],
            block: [16, 16, 1],
        };
        let (cpu_t, res) = device_time(cpu_dev.as_ref(), &k, config, &args, runs).unwrap();
        let check = format!("cpu max rel diff {:.1e}", max_rel(f32_col(&res[2]), &c));
        let opencl = ocl
            .as_ref()
            .map(|d| device_time(d.as_ref(), &k, config, &args, runs).map(|r| r.0));
        let optimised = optimised_pocl.as_ref().map(|p| {
            p.time(&k, config, &args, runs).map(|(t, r)| {
                (
                    t,
                    format!("max rel diff {:.1e}", max_rel(f32_col(&r[2]), &c)),
                )
            })
        });
        let scalar = scalar_time(&k, config, &args, runs);
        let cpu_wall = jit_wall(&k, config, &args, runs);
        let cpu_wall_cpu = last_cpu();
        rows.push(Row {
            name: "matmul 512 tiled 16x16",
            cpu_wall,
            hand_cpu,
            cpu_wall_cpu,
            optimised,
            hand,
            cpu: cpu_t,
            scalar,
            opencl,
            check,
        });
    }

    println!(
        "\n| kernel | hand Rust + rayon | `cpu` wall | cpu / hand speed | `cpu` device interval | `cpu` thread by thread | `opencl` device | PoCL optimised | check |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in &rows {
        let ocl = match &r.opencl {
            None => "unavailable".to_string(),
            Some(Ok(t)) => ms(*t),
            Some(Err(e)) => format!("error: {}", e.lines().next().unwrap_or("")),
        };
        let optimised = match &r.optimised {
            None => "unavailable".to_string(),
            Some(Ok((t, check))) => format!("{} ({check})", ms(*t)),
            Some(Err(e)) => format!("error: {}", e.lines().next().unwrap_or("")),
        };
        println!(
            "| {} | {} | {} | {:.2}x | {} | {} | {} | {} | {} |",
            r.name,
            ms(r.hand),
            ms(r.cpu_wall),
            r.hand.as_secs_f64() / r.cpu_wall.as_secs_f64(),
            ms(r.cpu),
            ms(r.scalar),
            ocl,
            optimised,
            r.check
        );
    }
    println!(
        "\nCPU time per launch, every thread (hand Rust and `cpu` wall runs; /proc/self/task/*/schedstat):"
    );
    for r in &rows {
        println!(
            "  {:<24} hand {}, cpu {}, cpu / hand speed {:.2}x",
            r.name,
            ms(r.hand_cpu),
            ms(r.cpu_wall_cpu),
            r.hand_cpu.as_secs_f64() / r.cpu_wall_cpu.as_secs_f64().max(1e-12),
        );
    }
    if optimised_pocl.is_some() {
        println!(
            "\nHand Rust and `cpu` wall: wall time around a launch on resident vectors (waking \
             the rayon pool included). `cpu` device interval: the `cpu` device's kernel time, first \
             block's start to last block's end, like PoCL's profiling interval in the next columns; \
             both on resident buffers (uploaded once, launched back to back)."
        );
        println!(
            "`opencl` device: PoCL as the `opencl` backend builds programs (those with a barrier \
             with -cl-opt-disable, a workaround for a PoCL defect); PoCL optimised: the same \
             OpenCL C built by the bench with the optimiser on, result checked."
        );
    }

    if let Some(dir) = corpus.filter(|d| d.is_dir()) {
        println!("\nJIT compile time per corpus kernel ({}):", dir.display());
        let mut all = Vec::new();
        for k in corpus_kernels(&dir) {
            match sarek_jit::compile(&k, &sarek_jit::JitOptions::default()) {
                Ok(j) => {
                    all.push(j.compile_time());
                    println!("  {:<28} {}", k.name, ms(j.compile_time()));
                }
                Err(e) => println!("  {:<28} not compiled: {e}", k.name),
            }
        }
        if !all.is_empty() {
            let total: Duration = all.iter().sum();
            println!(
                "  {} kernels: median {}, max {}, total {}",
                all.len(),
                ms(median(all.clone())),
                ms(*all.iter().max().unwrap()),
                ms(total)
            );
        }
    }
}

/// Every kernel of the `.sarek` files in `dir` that checks and lowers, in file order.
fn corpus_kernels(dir: &std::path::Path) -> Vec<Kernel> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p: &std::path::PathBuf| p.extension().is_some_and(|x| x == "sarek"));
    files.sort();
    let mut kernels = Vec::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let mut sources = sarek_compiler::SourceMap::new();
        let id = sources.add(f.display().to_string(), text);
        let Ok(program) = sarek_compiler::check(&sources, id) else {
            continue;
        };
        for name in program.kernels.iter().map(|k| k.name.clone()) {
            if let Ok(k) = sarek_compiler::lower_kernel(&program, &name) {
                kernels.push(k);
            }
        }
    }
    kernels
}

/// The corpus kernel's algorithm (int32 fixed point, 12 fractional bits), per pixel.
fn mandel(x: i32, y: i32, width: i32, height: i32, max_iter: i32) -> i32 {
    let one = 1 << 12;
    let cx = (x * 3 * one) / width - 2 * one;
    let cy = (y * 3 * one) / height - (3 * one) / 2;
    let (mut zx, mut zy, mut k) = (0i32, 0i32, 0);
    while k < max_iter {
        let zx2 = (zx.wrapping_mul(zx)) >> 12;
        let zy2 = (zy.wrapping_mul(zy)) >> 12;
        if zx2 + zy2 > 4 * one {
            break;
        }
        let nzx = zx2 - zy2 + cx;
        zy = ((2 * zx).wrapping_mul(zy) >> 12) + cy;
        zx = nzx;
        k += 1;
    }
    k
}

/// PoCL with its optimiser on for every program. The `opencl` device builds programs that
/// contain a barrier with `-cl-opt-disable` on PoCL (a correctness workaround for a PoCL
/// defect, docs/backends.md), which makes the tiled matmul several times slower than PoCL can
/// run it; the bench builds the same generated OpenCL C itself, optimised, and checks the
/// result like the other columns. For the bench's own kernels only (vectors of one scalar
/// column, scalar parameters, no trap status).
#[cfg(feature = "opencl")]
mod pocl_optimised {
    use opencl3::command_queue::{CL_QUEUE_PROFILING_ENABLE, CommandQueue};
    use opencl3::context::Context;
    use opencl3::device::{CL_DEVICE_TYPE_ALL, Device, get_all_devices};
    use opencl3::kernel::Kernel as ClKernel;
    use opencl3::memory::{Buffer, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_WRITE, ClMem};
    use opencl3::program::Program;
    use opencl3::types::{CL_BLOCKING, cl_mem};
    use sarek_compiler::abi::{AbiParamKind, ArgSlot};
    use sarek_compiler::back::cfamily::Dialect;
    use sarek_compiler::ir::Kernel;
    use sarek_compiler::target::TargetOptions;
    use sarek_compiler::types::Literal;
    use sarek_runtime::LaunchConfig;
    use sarek_runtime::value::{ArgValue, Column, HostVector};
    use std::time::Duration;

    pub struct Pocl {
        context: Context,
        queue: CommandQueue,
    }

    /// The first PoCL device, if any.
    pub fn open() -> Option<Pocl> {
        let id = get_all_devices(CL_DEVICE_TYPE_ALL)
            .ok()?
            .into_iter()
            .find(|&id| Device::new(id).version().is_ok_and(|v| v.contains("PoCL")))?;
        let device = Device::new(id);
        let context = Context::from_device(&device).ok()?;
        #[allow(deprecated)] // clCreateCommandQueue: the OpenCL 1.2 entry point.
        let queue = CommandQueue::create_default(&context, CL_QUEUE_PROFILING_ENABLE).ok()?;
        Some(Pocl { context, queue })
    }

    fn column_bytes(a: &ArgValue) -> Option<&[u8]> {
        match a {
            ArgValue::Vector(HostVector { columns, .. }) if columns.len() == 1 => {
                Some(match &columns[0] {
                    Column::F32(v) => bytemuck::cast_slice(v),
                    Column::I32(v) => bytemuck::cast_slice(v),
                    _ => return None,
                })
            }
            _ => None,
        }
    }

    impl Pocl {
        /// Median kernel time (PoCL's profiling interval) of `runs` launches after a warm-up,
        /// and the vectors after one launch on fresh copies of `args`.
        pub fn time(
            &self,
            kernel: &Kernel,
            config: LaunchConfig,
            args: &[ArgValue],
            runs: usize,
        ) -> Result<(Duration, Vec<ArgValue>), String> {
            fn err(what: &'static str) -> impl Fn(opencl3::error_codes::ClError) -> String {
                move |e| format!("{what}: {e}")
            }
            let generated = sarek_compiler::back::cfamily::generate(
                kernel,
                Dialect::OpenCl,
                &TargetOptions::default(),
            )
            .map_err(|_| "the OpenCL C generator refused the kernel".to_string())?;
            let program = Program::create_and_build_from_source(
                &self.context,
                &generated.source,
                "-cl-std=CL1.2 -cl-fp32-correctly-rounded-divide-sqrt",
            )
            .map_err(|log| format!("build failed: {log}"))?;
            let k = ClKernel::create(&program, &generated.abi.entry_point)
                .map_err(err("creating the kernel"))?;
            if generated.abi.trap_status.is_some() {
                return Err("kernels with traps are not handled here".into());
            }
            // One buffer per vector argument, holding a copy of the host data.
            let mut buffers: Vec<Option<Buffer<u8>>> = Vec::new();
            for a in args {
                buffers.push(match column_bytes(a) {
                    Some(bytes) => Some(
                        // SAFETY: the host pointer is read (copied) during the call only.
                        unsafe {
                            Buffer::<u8>::create(
                                &self.context,
                                CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                bytes.len(),
                                bytes.as_ptr() as *mut _,
                            )
                        }
                        .map_err(err("allocating a buffer"))?,
                    ),
                    None => None,
                });
            }
            let slot = |s: &ArgSlot| match s {
                ArgSlot::Argument(n) => Ok(Some(*n)),
                ArgSlot::None => Ok(None),
                _ => Err("an OpenCL argument that is not positional".to_string()),
            };
            for ((p, a), buf) in generated.abi.params.iter().zip(args).zip(&buffers) {
                // SAFETY: slots and types come from the ABI of this very source.
                let set = match (&p.kind, a, buf) {
                    (AbiParamKind::Vector { buffer, length, .. }, ArgValue::Vector(v), Some(b)) => {
                        if let Some(n) = slot(buffer)? {
                            let mem: cl_mem = b.get();
                            unsafe { k.set_arg(n, &mem) }.map_err(err("setting an argument"))?;
                        }
                        if let Some(n) = slot(length)? {
                            let len = v.len as i32;
                            unsafe { k.set_arg(n, &len) }.map_err(err("setting an argument"))?;
                        }
                        Ok(())
                    }
                    (AbiParamKind::Value { slot: s, .. }, ArgValue::Scalar(l), None) => {
                        match (slot(s)?, l) {
                            (None, _) => Ok(()),
                            (Some(n), Literal::F32(x)) => unsafe { k.set_arg(n, x) },
                            (Some(n), Literal::I32(x)) => unsafe { k.set_arg(n, x) },
                            _ => return Err("an unhandled scalar argument".into()),
                        }
                        .map_err(err("setting an argument"))
                    }
                    _ => Err("an unhandled argument".into()),
                };
                set?;
            }
            let global: Vec<usize> = (0..3)
                .map(|i| config.grid[i] as usize * config.block[i] as usize)
                .collect();
            let local: Vec<usize> = config.block.iter().map(|&b| b as usize).collect();
            let launch = || -> Result<Duration, String> {
                // SAFETY: every argument is set; the sizes arrays have 3 entries.
                let event = unsafe {
                    self.queue.enqueue_nd_range_kernel(
                        k.get(),
                        3,
                        std::ptr::null(),
                        global.as_ptr(),
                        local.as_ptr(),
                        &[],
                    )
                }
                .map_err(err("enqueueing the kernel"))?;
                event.wait().map_err(err("running the kernel"))?;
                let start = event.profiling_command_start().map_err(err("profiling"))?;
                let end = event.profiling_command_end().map_err(err("profiling"))?;
                Ok(Duration::from_nanos(end.saturating_sub(start)))
            };
            // The first launch (on the arguments' own values) gives the result to check.
            launch()?;
            let mut out = args.to_vec();
            for ((a, b), o) in args.iter().zip(&buffers).zip(&mut out) {
                if let (Some(b), Some(bytes), ArgValue::Vector(HostVector { columns, .. })) =
                    (b, column_bytes(a), o)
                {
                    let mut back = vec![0u8; bytes.len()];
                    // SAFETY: blocking read of the whole buffer into a slice of its size.
                    unsafe {
                        self.queue
                            .enqueue_read_buffer(b, CL_BLOCKING, 0, &mut back, &[])
                    }
                    .map_err(err("reading a buffer"))?;
                    columns[0] = match &columns[0] {
                        Column::F32(_) => Column::F32(bytemuck::pod_collect_to_vec(&back)),
                        Column::I32(_) => Column::I32(bytemuck::pod_collect_to_vec(&back)),
                        c => c.clone(),
                    };
                }
            }
            let times = (0..runs).map(|_| launch()).collect::<Result<Vec<_>, _>>()?;
            Ok((super::median(times), out))
        }
    }
}
