//! Front-end benchmark: parse + type check of each corpus kernel file (criterion reports the
//! median among its statistics). Run with `cargo bench -p sarek-compiler --bench frontend`.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use sarek_compiler::diag::FileId;
use sarek_compiler::front::{parser, typer};

fn frontend(c: &mut Criterion) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/kernels");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "sarek"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut group = c.benchmark_group("frontend");
    for path in files {
        let text = std::fs::read_to_string(&path).expect("readable corpus file");
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        group.bench_function(name, |b| {
            b.iter(|| {
                let ast = parser::parse(FileId(0), black_box(&text)).ok();
                black_box(ast.map(|a| typer::check_program(&a).is_ok()))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, frontend);
criterion_main!(benches);
