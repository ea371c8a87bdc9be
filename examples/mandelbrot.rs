//! Render the Mandelbrot set on the default device to `mandelbrot.png`.
//!
//! ```sh
//! cargo run --release -p sarek --example mandelbrot [-- WIDTH HEIGHT MAX_ITER]
//! ```
//!
//! The device is `SAREK_BACKEND` if set, else the best GPU found, else the `cpu` backend.

use sarek::{LaunchConfig, Program, Vector};
use std::error::Error;

mod support;

/// Checked while this example compiles: a Sarek error would be a Rust compile error.
const SOURCE: &str = sarek::include_kernel!("../../examples/kernels/mandelbrot.sarek");

fn main() -> std::process::ExitCode {
    support::main(run)
}

fn run() -> Result<(), Box<dyn Error>> {
    let args: Vec<u32> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let (width, height, max_iter) = match args[..] {
        [] => (1024, 768, 256),
        [w, h] => (w, h, 256),
        [w, h, m] => (w, h, m),
        _ => return Err("usage: mandelbrot [WIDTH HEIGHT [MAX_ITER]]".into()),
    };
    let program = Program::compile("mandelbrot.sarek", SOURCE)?;
    let kernel = program.kernel("mandelbrot")?;
    let device = sarek::default_device()?;
    let info = device.info();

    // The view [-2.5, 1.0] horizontally, centred vertically, square pixels.
    let step = 3.5 / width as f32;
    let (x0, y0) = (-2.5f32, -(height as f32) * step / 2.0);
    let mut iters = Vector::filled(0i32, (width * height) as usize);
    let config = LaunchConfig {
        grid: [width.div_ceil(16), height.div_ceil(16), 1],
        block: [16, 16, 1],
    };
    let stats = kernel
        .launch()
        .config(config)
        .arg(&mut iters)
        .scalar(width as i32)
        .scalar(height as i32)
        .scalar(max_iter as i32)
        .scalar(x0)
        .scalar(y0)
        .scalar(step)
        .run(&*device)?;

    let pixels: Vec<u8> = iters
        .as_slice()
        .iter()
        .flat_map(|&k| colour(k, max_iter as i32))
        .collect();
    let file = std::fs::File::create("mandelbrot.png")?;
    let mut png = png::Encoder::new(std::io::BufWriter::new(file), width, height);
    png.set_color(png::ColorType::Rgb);
    png.set_depth(png::BitDepth::Eight);
    png.write_header()?.write_image_data(&pixels)?;

    println!("device: {} ({})", info.backend, info.name);
    println!(
        "mandelbrot {width}x{height}, {max_iter} iterations: kernel {:.3} ms, total {:.3} ms",
        stats.kernel_time.as_secs_f64() * 1e3,
        stats.total_time.as_secs_f64() * 1e3
    );
    println!("wrote mandelbrot.png");
    Ok(())
}

/// Black inside the set; outside, a smooth blue-to-gold ramp over the escape count.
fn colour(k: i32, max_iter: i32) -> [u8; 3] {
    if k >= max_iter {
        return [0, 0, 0];
    }
    let t = (k as f32 / 64.0).fract();
    let r = 9.0 * (1.0 - t) * t * t * t;
    let g = 15.0 * (1.0 - t) * (1.0 - t) * t * t;
    let b = 8.5 * (1.0 - t) * (1.0 - t) * (1.0 - t) * t;
    [(r * 255.0) as u8, (g * 255.0) as u8, (b * 255.0) as u8]
}
