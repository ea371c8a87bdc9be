//! A 3-kernel element-wise pipeline run unfused (three launches, two intermediates) and
//! fused into one kernel (`sarek::Program::fuse`), both as a `sarek::Pipeline` on resident
//! device buffers: the inputs go up once, the output comes back once, and the unfused
//! intermediates never leave the device. It prints both kernel times, the bytes each moves
//! in device memory and what fusion saves; then a `reduce` skeleton over the same size against
//! the copy bandwidth of a `map` skeleton (both generated at build time by `sarek::skeleton!`)
//! and of the runtime's device-to-device copy (`Buffer::copy_from`).
//!
//! ```sh
//! cargo run --release -p sarek --example fusion_pipeline -- [--size N] [--reps R]
//! SAREK_BACKEND=cuda target/release/examples/fusion_pipeline --size 268435456 --reps 5
//! ```
//!
//! Times are device kernel times (the backend's timer), the minimum over `--reps` runs.
//! Bytes are counted from each kernel's accesses (`PipelineStats::bytes`): every vector a
//! kernel reads once in, every vector it writes once out.

use sarek::{Kernel, Pipeline, Vector};
use std::error::Error;
use std::time::Duration;

mod support;

const SOURCE: &str = sarek::include_kernel!("../../examples/kernels/fusion_pipeline.sarek");
const PATH: &str = "examples/kernels/fusion_pipeline.sarek";

fn main() -> std::process::ExitCode {
    support::main(run)
}

fn arg(name: &str, default: usize) -> Result<usize, Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == name) {
        Some(i) => Ok(args
            .get(i + 1)
            .ok_or(format!("{name} needs a value"))?
            .parse()
            .map_err(|e| format!("{name}: {e}"))?),
        None => Ok(default),
    }
}

fn gbps(bytes: u64, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e9
}

/// What one pipeline did: the output, the best kernel time, bytes moved per run, and the
/// host transfers of the whole measurement.
struct Measured {
    out: Vec<f32>,
    time: Duration,
    bytes: u64,
    transfers: sarek::Transfers,
}

/// Upload `a` and `b` once, run the pipeline `reps` times, download `out` once.
fn measure(
    device: &std::sync::Arc<dyn sarek::Device>,
    kernels: &[Kernel],
    (a, b): (&[f32], &[f32]),
    reps: usize,
) -> Result<Measured, Box<dyn Error>> {
    let n = a.len();
    let before = sarek::transfers(device);
    let mut pipe = kernels
        .iter()
        .fold(Pipeline::new(device, n)?, |p, k| p.stage(k))
        .scalar("n", i32::try_from(n)?);
    pipe.upload("a", a)?;
    pipe.upload("b", b)?;
    let mut time = Duration::MAX;
    let mut bytes = 0;
    for _ in 0..reps {
        let stats = pipe.run()?;
        time = time.min(stats.kernel_time);
        bytes = stats.bytes;
    }
    let out = pipe.download("out")?;
    let after = sarek::transfers(device);
    Ok(Measured {
        out,
        time,
        bytes,
        transfers: sarek::Transfers {
            uploads: after.uploads - before.uploads,
            upload_bytes: after.upload_bytes - before.upload_bytes,
            downloads: after.downloads - before.downloads,
            download_bytes: after.download_bytes - before.download_bytes,
            device_copies: after.device_copies - before.device_copies,
            device_copy_bytes: after.device_copy_bytes - before.device_copy_bytes,
        },
    })
}

fn run() -> Result<(), Box<dyn Error>> {
    let n = arg("--size", 1 << 20)?;
    let reps = arg("--reps", 3)?.max(1);
    let device = sarek::default_device()?;
    let info = device.info();
    println!(
        "device: {} ({}), {n} float32 elements",
        info.backend, info.name
    );

    let program = sarek::Program::compile(PATH, SOURCE)?;
    let stages: Vec<Kernel> = ["stage1", "stage2", "stage3"]
        .iter()
        .map(|k| program.kernel(k))
        .collect::<Result<_, _>>()?;
    let fused = program.fuse(&["stage1", "stage2", "stage3"])?;
    for d in &fused.decisions {
        println!("  {d}");
    }

    let a: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 / 500.0 - 1.0).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 777) as f32 / 777.0).collect();
    let unfused = measure(&device, &stages, (&a, &b), reps)?;
    let fused_run = measure(&device, std::slice::from_ref(&fused.kernel), (&a, &b), reps)?;
    let wrong = unfused
        .out
        .iter()
        .zip(&fused_run.out)
        .filter(|(x, y)| (*x - *y).abs() > 1e-5 * x.abs().max(1.0))
        .count();
    let host = |m: &Measured| {
        format!(
            "host transfers over {reps} runs: {} up ({:.1} MB), {} down ({:.1} MB)",
            m.transfers.uploads,
            m.transfers.upload_bytes as f64 / 1e6,
            m.transfers.downloads,
            m.transfers.download_bytes as f64 / 1e6
        )
    };
    println!(
        "unfused: 3 kernels, {:.3} ms, {:.1} MB moved on the device ({:.1} GB/s); {}",
        unfused.time.as_secs_f64() * 1e3,
        unfused.bytes as f64 / 1e6,
        gbps(unfused.bytes, unfused.time),
        host(&unfused)
    );
    println!(
        "fused:   1 kernel,  {:.3} ms, {:.1} MB moved on the device ({:.1} GB/s); {}; eliminated {}",
        fused_run.time.as_secs_f64() * 1e3,
        fused_run.bytes as f64 / 1e6,
        gbps(fused_run.bytes, fused_run.time),
        host(&fused_run),
        fused.eliminated.join(", ")
    );
    let saved = unfused.bytes.saturating_sub(fused_run.bytes);
    println!(
        "saved:   {:.1} MB per run ({:.0}%), speed-up x{:.2}, {wrong} elements differ",
        saved as f64 / 1e6,
        100.0 * saved as f64 / unfused.bytes as f64,
        unfused.time.as_secs_f64() / fused_run.time.as_secs_f64()
    );

    // reduce vs copy.
    let copy = sarek::skeleton!(map, "../../examples/kernels/fusion_pipeline.sarek", copy)?;
    let sum = sarek::skeleton!(
        reduce,
        "../../examples/kernels/fusion_pipeline.sarek",
        plus,
        "0.0"
    )?;
    let mut input = Vector::from_vec(a);
    let mut output = Vector::filled(0.0f32, n);
    let mut copy_time = Duration::MAX;
    for _ in 0..reps {
        copy_time = copy_time.min(copy.map(&*device, &mut input, &mut output)?.kernel_time);
    }
    let mut reduce_time = Duration::MAX;
    let mut total = 0.0f32;
    for _ in 0..reps {
        let (r, stats) = sum.reduce(&*device, &mut input)?;
        reduce_time = reduce_time.min(stats.kernel_time);
        if let sarek::Column::F32(v) = &r.columns[0] {
            total = v[0];
        }
    }
    // The runtime's own device-to-device copy of the same bytes (wall clock around the copy
    // and a synchronisation: it has no device timer).
    let src = sarek::Buffer::from_slice(device.as_ref(), input.as_slice())?;
    let dst = sarek::Buffer::<f32>::alloc(device.as_ref(), n)?;
    let mut device_copy = Duration::MAX;
    for _ in 0..reps {
        let started = std::time::Instant::now();
        dst.copy_from(device.as_ref(), &src)?;
        sarek::synchronize(&device)?;
        device_copy = device_copy.min(started.elapsed());
    }
    let exact: f64 = input.as_slice().iter().map(|&x| f64::from(x)).sum();
    let copy_bw = gbps((2 * 4 * n) as u64, copy_time);
    let reduce_bw = gbps((4 * n) as u64, reduce_time);
    println!(
        "copy (map skeleton): {:.3} ms, {copy_bw:.1} GB/s (read + write)",
        copy_time.as_secs_f64() * 1e3
    );
    println!(
        "copy (copy_from):    {:.3} ms, {:.1} GB/s (read + write, wall clock)",
        device_copy.as_secs_f64() * 1e3,
        gbps((2 * 4 * n) as u64, device_copy)
    );
    println!(
        "reduce skeleton:     {:.3} ms, {reduce_bw:.1} GB/s ({:.0}% of copy); sum {total} (float64 host sum {exact:.3})",
        reduce_time.as_secs_f64() * 1e3,
        100.0 * reduce_bw / copy_bw
    );
    if wrong > 0 {
        return Err(
            format!("the fused pipeline differs from the unfused one in {wrong} elements").into(),
        );
    }
    Ok(())
}
