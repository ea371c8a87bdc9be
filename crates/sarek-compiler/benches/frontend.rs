//! Front-end benchmark: parse + type check of each corpus kernel file (criterion reports the
//! median among its statistics). Run with `cargo bench -p sarek-compiler --bench frontend`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};

use sarek_compiler::diag::FileId;
use sarek_compiler::front::{parser, typer};
use sarek_testkit::files;

fn frontend(c: &mut Criterion) {
    let files = files::corpus();
    let sources: Vec<(String, String)> = files
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).expect("readable corpus file");
            (p.file_stem().unwrap().to_string_lossy().into_owned(), text)
        })
        .collect();
    let mut group = c.benchmark_group("frontend");
    for (name, text) in &sources {
        group.bench_function(name, |b| {
            b.iter(|| {
                let ast = parser::parse(FileId(0), black_box(text)).ok();
                black_box(ast.map(|a| typer::check_program(&a).is_ok()))
            })
        });
    }
    group.finish();
    // The type checker alone, on an already parsed file.
    let mut group = c.benchmark_group("typer");
    for (name, text) in &sources {
        let Ok(ast) = parser::parse(FileId(0), text) else {
            continue;
        };
        group.bench_function(name, |b| {
            b.iter(|| black_box(typer::check_program(black_box(&ast)).is_ok()))
        });
    }
    group.finish();
}

criterion_group!(benches, frontend);
criterion_main!(benches);
