//! Heat diffusion kept on the device: two kernels alternate for N steps on buffers that
//! never leave it (one upload, one download), then the plate is written to `heat.png`.
//!
//! ```sh
//! cargo run --release -p sarek --example heat [-- SIZE STEPS]
//! ```
//!
//! The device is `SAREK_BACKEND` if set, else the best GPU found, else the `cpu` backend.

use sarek::{Buffer, LaunchConfig, Program};
use std::error::Error;

mod support;

/// Checked while this example compiles: a Sarek error would be a Rust compile error.
const SOURCE: &str = sarek::include_kernel!("../../examples/kernels/heat.sarek");

fn main() -> std::process::ExitCode {
    support::main(run)
}

fn run() -> Result<(), Box<dyn Error>> {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let (size, steps) = match args[..] {
        [] => (256, 2000),
        [s] => (s, 2000),
        [s, n] => (s, n),
        _ => return Err("usage: heat [SIZE [STEPS]]".into()),
    };
    let program = Program::compile("heat.sarek", SOURCE)?;
    let step = program.kernel("heat_step")?;
    let source = program.kernel("heat_source")?;
    let device = sarek::default_device()?;
    let info = device.info();
    let n = (size * size) as usize;
    // A cold plate with a hot edge on the left.
    let plate: Vec<f32> = (0..n)
        .map(|i| if i % size as usize == 0 { 1.0 } else { 0.0 })
        .collect();
    let mut a = Buffer::from_slice(device.as_ref(), &plate)?;
    let mut b = Buffer::from_slice(device.as_ref(), &plate)?;
    let config = LaunchConfig {
        grid: [size.div_ceil(16), size.div_ceil(16), 1],
        block: [16, 16, 1],
    };
    let (s, c) = (size as i32, size as i32 / 2);
    let started = std::time::Instant::now();
    for _ in 0..steps {
        source
            .launch()
            .config(config)
            .buffer(a.vector())
            .scalar(s)
            .scalar(s)
            .scalar(c)
            .scalar(c)
            .scalar(s / 16)
            .scalar(1.0f32)
            .enqueue(&device)?;
        step.launch()
            .config(config)
            .buffer(a.vector())
            .buffer(b.vector())
            .scalar(s)
            .scalar(s)
            .scalar(0.2f32)
            .enqueue(&device)?;
        std::mem::swap(&mut a, &mut b);
    }
    let kernel_time = sarek::synchronize(&device).map_err(|e| step.error(e))?;
    let wall = started.elapsed();
    let t = a.download(device.as_ref())?;
    let moved = sarek::transfers(&device);

    let pixels: Vec<u8> = t.iter().flat_map(|&v| colour(v)).collect();
    let file = std::fs::File::create("heat.png")?;
    let mut png = png::Encoder::new(std::io::BufWriter::new(file), size, size);
    png.set_color(png::ColorType::Rgb);
    png.set_depth(png::BitDepth::Eight);
    png.write_header()?.write_image_data(&pixels)?;

    println!("device: {} ({})", info.backend, info.name);
    println!(
        "heat {size}x{size}, {steps} steps ({} launches): {:.3} ms wall ({kernel_time:?} timed)",
        2 * steps,
        wall.as_secs_f64() * 1e3
    );
    println!(
        "transfers: {} uploads, {} downloads",
        moved.uploads, moved.downloads
    );
    println!("wrote heat.png");
    Ok(())
}

/// Blue (cold) to red (hot).
fn colour(v: f32) -> [u8; 3] {
    let v = v.clamp(0.0, 1.0);
    [
        (255.0 * v) as u8,
        (64.0 * (1.0 - (2.0 * v - 1.0).abs())) as u8,
        (255.0 * (1.0 - v)) as u8,
    ]
}
