//! Interpreter and cpu throughput on the corpus kernels `mandelbrot` (int32 fixed point) at
//! 1024x1024 with 256 iterations on a 2-D grid of 16x16 blocks, and `matmul_tiled` (two
//! 16x16 shared tiles, barriers) at 256x256; both compiled from `tests/kernels/` source.
//!
//! `cargo bench -p sarek-runtime --no-default-features --bench exec` (the GPU features are not
//! needed). Throughput is reported in elements (pixels / output entries) per second; the
//! cpu/interp ratio is the parallel speedup on this machine's cores.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sarek_runtime::{ArgValue, LaunchConfig, cpu, interp};
use sarek_testkit::interp::*;
use std::time::Duration;

type Run = fn(
    &sarek_compiler::ir::Kernel,
    LaunchConfig,
    &mut [ArgValue],
) -> Result<sarek_runtime::LaunchStats, sarek_runtime::RuntimeError>;

fn corpus(file: &str, kernel: &str) -> sarek_compiler::ir::Kernel {
    let path = format!("{}/../../tests/kernels/{file}", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).expect("corpus file");
    let mut sources = sarek_compiler::SourceMap::new();
    let id = sources.add(path, src);
    let program = sarek_compiler::check(&sources, id).expect("corpus kernel checks");
    sarek_compiler::lower_kernel(&program, kernel).expect("corpus kernel lowers")
}

fn backends() -> [(&'static str, Run); 2] {
    [("interp", interp::run), ("cpu", cpu::run)]
}

fn bench_mandelbrot(c: &mut Criterion) {
    let (w, h, it) = (1024, 1024, 256);
    let k = corpus("mandelbrot.sarek", "mandelbrot");
    let cfg = LaunchConfig {
        grid: [64, 64, 1],
        block: [16, 16, 1],
    };
    let args = vec![
        vec_i32(&vec![0; (w * h) as usize]),
        s_i32(w),
        s_i32(h),
        s_i32(it),
    ];
    let mut g = c.benchmark_group("mandelbrot_1024x1024_256");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements((w * h) as u64));
    for (name, run) in backends() {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut a = args.clone();
                run(&k, cfg, &mut a).unwrap();
                a
            })
        });
    }
    g.finish();
}

fn bench_matmul(c: &mut Criterion) {
    let n = 256usize;
    let k = corpus("matmul_tiled.sarek", "matmul_tiled");
    let cfg = LaunchConfig {
        grid: [16, 16, 1],
        block: [16, 16, 1],
    };
    let a: Vec<f32> = rand_seq(3, n * n)
        .iter()
        .map(|v| (*v % 1000) as f32 / 500.0 - 1.0)
        .collect();
    let b: Vec<f32> = rand_seq(4, n * n)
        .iter()
        .map(|v| (*v % 1000) as f32 / 500.0 - 1.0)
        .collect();
    let args = vec![
        vec_f32(&a),
        vec_f32(&b),
        vec_f32(&vec![0.0; n * n]),
        s_i32(n as i32),
    ];
    let mut g = c.benchmark_group("matmul_tiled_256");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements((n * n) as u64));
    for (name, run) in backends() {
        g.bench_function(name, |bch| {
            bch.iter(|| {
                let mut x = args.clone();
                run(&k, cfg, &mut x).unwrap();
                x
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_mandelbrot, bench_matmul);
criterion_main!(benches);
