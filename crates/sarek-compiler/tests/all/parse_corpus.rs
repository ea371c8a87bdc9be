//! Every corpus kernel parses, and its `@run` directives name a kernel of the file and give
//! a value to every scalar parameter (and to nothing else).

use sarek_compiler::SourceMap;
use sarek_compiler::diag::render_all;
use sarek_compiler::front::ast::{ItemKind, KernelDecl, TypeExprKind};
use sarek_compiler::front::parser::parse;

use files::corpus;
use sarek_testkit::files;

/// `(* ... @run name k=v ... *)` directives: (kernel, [(key, value)]).
fn directives(src: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut out = Vec::new();
    for line in src.lines() {
        let Some(rest) = line.split("@run ").nth(1) else {
            continue;
        };
        let rest = rest.trim_end().trim_end_matches("*)");
        let mut words = rest.split_whitespace();
        let name = words.next().expect("kernel name").to_string();
        let kv = words
            .map(|w| {
                let (k, v) = w
                    .split_once('=')
                    .unwrap_or_else(|| panic!("bad directive word `{w}`"));
                (k.to_string(), v.to_string())
            })
            .collect();
        out.push((name, kv));
    }
    out
}

fn is_vector(k: &KernelDecl, name: &str) -> bool {
    k.params.iter().any(|p| {
        p.name.name == name
            && p.ty
                .as_ref()
                .is_some_and(|t| matches!(&t.kind, TypeExprKind::App(_, c) if c.name == "vector"))
    })
}

#[test]
fn every_corpus_file_parses() {
    let files = corpus();
    assert!(files.len() >= 28, "the corpus has {} files", files.len());
    let mut kernels = 0;
    for path in &files {
        let src = std::fs::read_to_string(path).expect("readable");
        let mut sm = SourceMap::new();
        let name = format!(
            "tests/kernels/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        let id = sm.add(name.clone(), src.clone());
        let program = match parse(id, &src) {
            Ok(p) => p,
            Err(d) => panic!("{name} does not parse:\n{}", render_all(&d, &sm, false)),
        };
        let decls: Vec<&KernelDecl> = program
            .items
            .iter()
            .filter_map(|i| match &i.kind {
                ItemKind::Kernel(k) => Some(k),
                _ => None,
            })
            .collect();
        assert!(!decls.is_empty(), "{name} defines no kernel");
        assert!(
            src.trim_start().starts_with("(*"),
            "{name} must start with a comment"
        );
        let runs = directives(&src);
        assert!(!runs.is_empty(), "{name} has no @run directive");
        for (kernel, kv) in runs {
            let k = decls
                .iter()
                .find(|k| k.name.name == kernel)
                .unwrap_or_else(|| panic!("{name}: @run names unknown kernel `{kernel}`"));
            for p in &k.params {
                let given = kv.iter().any(|(key, _)| *key == p.name.name);
                if is_vector(k, &p.name.name) {
                    assert!(
                        !given,
                        "{name}: @run {kernel} gives a value to vector `{}`",
                        p.name.name
                    );
                } else {
                    assert!(
                        given,
                        "{name}: @run {kernel} lacks scalar `{}`",
                        p.name.name
                    );
                }
            }
            for (key, _) in &kv {
                let known = ["size", "grid", "block"].contains(&key.as_str())
                    || k.params.iter().any(|p| p.name.name == *key);
                assert!(known, "{name}: @run {kernel} has unknown key `{key}`");
            }
        }
        kernels += decls.len();
    }
    assert!(kernels >= 28, "only {kernels} kernels");
}
