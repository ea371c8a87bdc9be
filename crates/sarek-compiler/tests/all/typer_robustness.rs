//! The type checker and mono never panic, and stay within a 2 MB stack on the deepest
//! programs the parser accepts.

use sarek_compiler::diag::FileId;
use sarek_compiler::front::parser::{self, MAX_DEPTH};
use sarek_compiler::front::{mono, typer};

use sarek_testkit::files;

/// Parse, check and monomorphise on a fresh 2 MB thread; true when accepted.
fn run(src: String) -> bool {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || match parser::parse(FileId(0), &src) {
            Ok(ast) => typer::check_program(&ast)
                .and_then(mono::monomorphise)
                .is_ok(),
            Err(_) => false,
        })
        .expect("spawn")
        .join()
        .expect("no panic, no stack overflow")
}

/// The deepest nesting the parser still accepts, for several shapes.
#[test]
fn deep_nesting_within_stack() {
    let n = MAX_DEPTH - 10;
    let parens = format!(
        "let%kernel k (v : int32 vector) = v.(0) <- {}1{}",
        "(".repeat(n),
        ")".repeat(n)
    );
    let sums = format!(
        "let%kernel k (v : int32 vector) = v.(0) <- {}1",
        "1 + ".repeat(n)
    );
    let ifs = format!(
        "let%kernel k (v : int32 vector) = v.(0) <- {}0",
        "if v.(1) > 0 then 1 else ".repeat(n / 2)
    );
    let lets = format!(
        "let%kernel k (v : int32 vector) = {}v.(0) <- x",
        "let x = 1 in ".repeat(n)
    );
    let seqs = format!(
        "let%kernel k (v : int32 vector) = {}()",
        "begin v.(0) <- 1; ".repeat(n / 2) + &"end".repeat(n / 2)
    );
    for (what, src) in [
        ("parens", parens),
        ("sums", sums),
        ("ifs", ifs),
        ("lets", lets),
        ("seqs", seqs),
    ] {
        // Accepted or refused, but never a crash.
        let _ = run(src);
        eprintln!("{what}: ok");
    }
}

/// Corpus files with lines dropped or identifiers swapped: errors, never panics.
#[test]
fn mutated_corpus_never_panics() {
    let files = files::corpus();
    let swaps = [
        ("float32", "int32"),
        ("int32", "float32"),
        ("+.", "+"),
        ("<-", ":="),
        ("vector", "array"),
        ("let mut", "let"),
        (" i ", " v "),
        ("Local", "Shared"),
        ("then", "then ignore"),
    ];
    let mut runs = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for drop in (0..lines.len()).step_by(3) {
            let src: Vec<&str> = lines
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != drop)
                .map(|(_, l)| *l)
                .collect();
            run(src.join("\n"));
            runs += 1;
        }
        for (from, to) in swaps {
            run(text.replacen(from, to, 1));
            run(text.replace(from, to));
            runs += 2;
        }
    }
    eprintln!("{runs} mutated programs checked");
}
