//! A 3-kernel element-wise pipeline run unfused (three launches, two intermediates) and
//! fused into one kernel (`sarek::Program::fuse`), with both kernel times and the bytes the
//! fusion saves; then a `reduce` skeleton over the same size against the copy bandwidth of a
//! `map` skeleton (both generated at build time by `sarek::skeleton!`).
//!
//! ```sh
//! cargo run --release -p sarek --example fusion_pipeline -- [--size N] [--reps R]
//! SAREK_BACKEND=cuda target/release/examples/fusion_pipeline --size 268435456 --reps 5
//! ```
//!
//! Times are device kernel times (the backend's timer), the minimum over `--reps` runs;
//! transfers are not counted. Bytes are what each kernel must move at least: every vector it
//! reads or writes, once.

use sarek::{Device, Kernel, ParamKind, Vector};
use std::collections::BTreeMap;
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

/// Launch `kernel` with its vectors bound by parameter name and every scalar set to `n`.
fn launch(
    kernel: &Kernel,
    device: &dyn Device,
    vectors: &mut BTreeMap<String, Vector<f32>>,
    n: usize,
) -> Result<Duration, Box<dyn Error>> {
    let params = kernel.params();
    let mut taken = Vec::new();
    for p in &params {
        if let ParamKind::Vector { .. } = p.kind {
            let v = vectors
                .remove(&p.name)
                .ok_or(format!("no vector `{}`", p.name))?;
            taken.push((p.name.clone(), v));
        }
    }
    let stats = {
        let mut l = kernel.launch();
        let mut it = taken.iter_mut();
        for p in &params {
            l = match p.kind {
                ParamKind::Vector { .. } => l.arg(&mut it.next().expect("taken above").1),
                _ => l.scalar(n as i32),
            };
        }
        l.run(device)?
    };
    vectors.extend(taken);
    Ok(stats.kernel_time)
}

/// Bytes a kernel moves at least: each of its vectors once.
fn bytes(kernel: &Kernel, n: usize) -> usize {
    let vectors = kernel
        .params()
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Vector { .. }))
        .count();
    vectors * n * 4
}

fn gbps(bytes: usize, t: Duration) -> f64 {
    bytes as f64 / t.as_secs_f64() / 1e9
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
    let mut vectors: BTreeMap<String, Vector<f32>> = BTreeMap::new();
    for (name, data) in [("a", &a), ("b", &b)] {
        vectors.insert(name.into(), Vector::from_vec(data.clone()));
    }
    for name in ["t1", "t2", "out"] {
        vectors.insert(name.into(), Vector::filled(0.0, n));
    }

    let mut unfused = Duration::MAX;
    for _ in 0..reps {
        let mut t = Duration::ZERO;
        for k in &stages {
            t += launch(k, &*device, &mut vectors, n)?;
        }
        unfused = unfused.min(t);
    }
    let expected = vectors["out"].to_vec();
    vectors.insert("out".into(), Vector::filled(0.0, n));
    let mut fused_time = Duration::MAX;
    for _ in 0..reps {
        fused_time = fused_time.min(launch(&fused.kernel, &*device, &mut vectors, n)?);
    }
    let got = vectors["out"].to_vec();
    let wrong = expected
        .iter()
        .zip(&got)
        .filter(|(x, y)| (*x - *y).abs() > 1e-5 * x.abs().max(1.0))
        .count();

    let unfused_bytes: usize = stages.iter().map(|k| bytes(k, n)).sum();
    let fused_bytes = bytes(&fused.kernel, n);
    println!(
        "unfused: 3 kernels, {:.3} ms, {:.1} MB moved ({:.1} GB/s)",
        unfused.as_secs_f64() * 1e3,
        unfused_bytes as f64 / 1e6,
        gbps(unfused_bytes, unfused)
    );
    println!(
        "fused:   1 kernel,  {:.3} ms, {:.1} MB moved ({:.1} GB/s); eliminated {}",
        fused_time.as_secs_f64() * 1e3,
        fused_bytes as f64 / 1e6,
        gbps(fused_bytes, fused_time),
        fused.eliminated.join(", ")
    );
    println!(
        "saved:   {:.1} MB ({:.0}%), speed-up x{:.2}, {wrong} elements differ",
        (unfused_bytes - fused_bytes) as f64 / 1e6,
        100.0 * (unfused_bytes - fused_bytes) as f64 / unfused_bytes as f64,
        unfused.as_secs_f64() / fused_time.as_secs_f64()
    );
    drop(vectors);

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
    let exact: f64 = input.as_slice().iter().map(|&x| f64::from(x)).sum();
    let copy_bw = gbps(2 * 4 * n, copy_time);
    let reduce_bw = gbps(4 * n, reduce_time);
    println!(
        "copy (map skeleton): {:.3} ms, {copy_bw:.1} GB/s (read + write)",
        copy_time.as_secs_f64() * 1e3
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
