//! Add two vectors on the default device and check the result on the host.
//!
//! ```sh
//! cargo run -p sarek --example vector_add
//! ```

use sarek::Vector;
use std::error::Error;

mod support;

// Checked at build time; generates `kernels::program()` and the typed launcher
// `kernels::vector_add(&kernel, &mut a, &mut b, &mut c)`.
sarek::kernel_module!(mod kernels = "../../examples/kernels/vector_add.sarek");

fn main() -> std::process::ExitCode {
    support::main(run)
}

fn run() -> Result<(), Box<dyn Error>> {
    let n = 1 << 16;
    let program = kernels::program()?;
    let kernel = program.kernel("vector_add")?;
    let device = sarek::default_device()?;

    let mut a = Vector::from_vec((0..n).map(|i| i as f32).collect());
    let mut b = Vector::from_vec((0..n).map(|i| (2 * i) as f32).collect());
    let mut c = Vector::filled(0.0f32, n);
    // Without .config(..), the launch is 1-D over the first vector: blocks of 256.
    let stats = kernels::vector_add(&kernel, &mut a, &mut b, &mut c).run(&*device)?;

    let wrong = c
        .as_slice()
        .iter()
        .enumerate()
        .filter(|&(i, &x)| x != (3 * i) as f32)
        .count();
    println!("device: {} ({})", device.info().backend, device.info().name);
    println!(
        "vector_add of {n} elements: {:.3} ms, {wrong} wrong",
        stats.kernel_time.as_secs_f64() * 1e3
    );
    if wrong > 0 {
        return Err(format!("{wrong} elements are wrong").into());
    }
    Ok(())
}
