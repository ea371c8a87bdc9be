//! Generator benchmark: every corpus kernel (already lowered) through each target's
//! generator, names included (legalize and the namer run inside each generator). Run with
//! `cargo bench -p sarek-compiler --bench generate`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};

use sarek_compiler::diag::SourceMap;
use sarek_compiler::ir::Kernel;
use sarek_compiler::{Target, TargetOptions};
use sarek_testkit::files;

fn corpus_kernels() -> Vec<Kernel> {
    let mut kernels = Vec::new();
    for path in files::corpus() {
        let mut sources = SourceMap::new();
        let text = std::fs::read_to_string(&path).expect("readable corpus file");
        let file = sources.add(path.display().to_string(), text);
        let Ok(program) = sarek_compiler::check(&sources, file) else {
            continue;
        };
        for k in &program.kernels {
            if let Ok(ir) = sarek_compiler::lower_kernel(&program, &k.name) {
                kernels.push(ir);
            }
        }
    }
    kernels
}

fn generate(c: &mut Criterion) {
    let kernels = corpus_kernels();
    let options = TargetOptions::default();
    let mut group = c.benchmark_group("generate");
    group.sample_size(20);
    for target in Target::ALL.into_iter().filter(|t| *t != Target::Ir) {
        group.bench_function(target.name(), |b| {
            b.iter(|| {
                for k in &kernels {
                    black_box(sarek_compiler::generate(black_box(k), target, &options).is_ok());
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, generate);
criterion_main!(benches);
