//! Tiled matrix multiplication on the default device, checked against a host computation.
//!
//! ```sh
//! cargo run --release -p sarek --example matmul [-- N]
//! ```

use sarek::{LaunchConfig, Program, Vector};
use std::error::Error;

mod support;

const SOURCE: &str = sarek::include_kernel!("../../examples/kernels/matmul.sarek");

fn main() -> std::process::ExitCode {
    support::main(run)
}

fn run() -> Result<(), Box<dyn Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(256);
    let program = Program::compile("matmul.sarek", SOURCE)?;
    let kernel = program.kernel("matmul")?;
    let device = sarek::default_device()?;

    // Small integers: every product and partial sum is exact in float32, so the device result
    // must equal the host's exactly whatever the summation order or FMA contraction.
    let host_a: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 - 3.0).collect();
    let host_b: Vec<f32> = (0..n * n).map(|i| (i % 5) as f32 - 2.0).collect();
    let mut a = Vector::from_vec(host_a.clone());
    let mut b = Vector::from_vec(host_b.clone());
    let mut c = Vector::filled(0.0f32, n * n);
    let blocks = (n as u32).div_ceil(16);
    let config = LaunchConfig {
        grid: [blocks, blocks, 1],
        block: [16, 16, 1],
    };
    let stats = kernel
        .launch()
        .config(config)
        .arg(&mut a)
        .arg(&mut b)
        .arg(&mut c)
        .scalar(n as i32)
        .run(&*device)?;

    let mut wrong = 0;
    for i in 0..n {
        for j in 0..n {
            let want: f32 = (0..n).map(|k| host_a[i * n + k] * host_b[k * n + j]).sum();
            wrong += usize::from(c.as_slice()[i * n + j] != want);
        }
    }
    let secs = stats.kernel_time.as_secs_f64();
    println!("device: {} ({})", device.info().backend, device.info().name);
    println!(
        "matmul {n}x{n}: {:.3} ms, {:.3} GFLOP/s, {wrong} wrong",
        secs * 1e3,
        2.0 * (n as f64).powi(3) / secs.max(1e-12) / 1e9
    );
    if wrong > 0 {
        return Err(format!("{wrong} elements are wrong").into());
    }
    Ok(())
}
