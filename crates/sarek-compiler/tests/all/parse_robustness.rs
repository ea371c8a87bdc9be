//! Robustness of the front end on hostile input: no panic, no hang, no stack overflow.
//! Every test runs on an explicit 2 MB thread (the default test-thread stack), and accepted
//! programs must have a bounded expression height so that recursive passes are safe:
//! `MAX_DEPTH` for true nesting, `MAX_HEIGHT` with chains of `let`s and operators included.

use crate::support::sexp as common;
use common::{max_height, parse_str, render};
use proptest::prelude::*;
use proptest::sample::Index;
use sarek_compiler::front::lexer::lex;
use sarek_compiler::front::parser::{MAX_CHAIN, MAX_HEIGHT};
use sarek_compiler::{FileId, SourceMap};
use std::time::{Duration, Instant};

use sarek_testkit::files;

/// Run `f` on a fresh thread with a 2 MB stack.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic")
}

/// Parse, check the invariants, and return whether the source was accepted.
fn check_invariants(src: &str) -> bool {
    match parse_str(src) {
        Ok(p) => {
            let h = max_height(&p);
            assert!(h <= MAX_HEIGHT, "accepted program of height {h}");
            true
        }
        Err(diags) => {
            assert!(!diags.is_empty());
            for d in &diags {
                assert!(
                    d.span.is_dummy()
                        || (d.span.start <= d.span.end && d.span.end as usize <= src.len())
                );
                assert!(!d.message.is_empty());
            }
            // Rendering must not panic either (spans inside the file, on char boundaries).
            let out = render("fuzz.sarek", src, &diags);
            assert!(out.contains("error"));
            false
        }
    }
}

fn timed(label: &str, limit: Duration, src: String) -> bool {
    let start = Instant::now();
    let ok = on_small_stack(move || check_invariants(&src));
    let took = start.elapsed();
    assert!(took < limit, "{label} took {took:?}");
    ok
}

const HEAD: &str = "let f (x : int32) : int32 =\n";

#[test]
fn ten_thousand_nested_parentheses() {
    let n = 10_000;
    let src = format!("{HEAD}{}x{}", "(".repeat(n), ")".repeat(n));
    assert!(!timed("parens", Duration::from_secs(5), src.clone()));
    let diags = parse_str(&src).unwrap_err();
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].message, "expression nested too deeply");
}

#[test]
fn deep_nesting_of_every_kind_is_refused_not_overflowed() {
    let n = 5_000;
    let cases = [
        ("ifs", format!("{HEAD}{}x", "if c then ".repeat(n))),
        ("minus", format!("{HEAD}{}x", "- ".repeat(n))),
        ("or", format!("{HEAD}x{}", " || x".repeat(n))),
        ("lsl", format!("{HEAD}x{}", " lsl x".repeat(n))),
        ("index", format!("{HEAD}x{}", ".(0)".repeat(n))),
        ("fields", format!("{HEAD}x{}", ".f".repeat(n))),
        (
            "matches",
            format!("{HEAD}{}x", "match x with _ -> ".repeat(n)),
        ),
        (
            "ctors",
            format!("{HEAD}{}x{}", "C (".repeat(n), ")".repeat(n)),
        ),
        (
            "apps",
            format!("{HEAD}{}x{}", "f (".repeat(n), ")".repeat(n)),
        ),
        (
            "records",
            format!("{HEAD}{}x{}", "{a=".repeat(n), "}".repeat(n)),
        ),
        (
            "begins",
            format!("{HEAD}{}x{}", "begin ".repeat(n), " end".repeat(n)),
        ),
        (
            "fors",
            format!(
                "{HEAD}{}x{}",
                "for i = 0 to 1 do ".repeat(n),
                " done".repeat(n)
            ),
        ),
        ("assign", format!("{HEAD}{}x", "y := ".repeat(n))),
        (
            "tuples",
            format!("{HEAD}{}x{}", "(x, ".repeat(n), ")".repeat(n)),
        ),
        (
            "types",
            format!("let f (x : int32{}) : int32 = x", " vector".repeat(n)),
        ),
        (
            "type parens",
            format!(
                "let f (x : {}int32{}) : int32 = x",
                "(".repeat(n),
                ")".repeat(n)
            ),
        ),
        (
            "patterns",
            format!(
                "{HEAD}match x with {}x{} -> 1",
                "(".repeat(n),
                ")".repeat(n)
            ),
        ),
        (
            "ctor patterns",
            format!(
                "{HEAD}match x with {}x{} -> 1",
                "C (".repeat(n),
                ")".repeat(n)
            ),
        ),
        ("unclosed", format!("{HEAD}{}", "(".repeat(n))),
        ("comments", "(*".repeat(n)),
    ];
    for (label, src) in cases {
        assert!(
            !timed(label, Duration::from_secs(5), src),
            "{label}: accepted"
        );
    }
}

/// Chains of `let`s and of left-associative operators are not nesting: accepted up to
/// `MAX_CHAIN` links (parsed, measured and freed on a 2 MB thread), refused past it.
#[test]
fn long_chains_are_accepted_up_to_max_chain() {
    let n = MAX_CHAIN;
    let accepted = [
        ("lets", format!("{HEAD}{}x", "let y = 1 in ".repeat(n - 1))),
        ("plus", format!("{HEAD}x{}", " + x".repeat(n - 1))),
        (
            "seq",
            format!("{HEAD}{}x", "f x; let y = 1 in ".repeat(n - 1)),
        ),
    ];
    for (label, src) in accepted {
        assert!(
            timed(label, Duration::from_secs(20), src),
            "{label}: refused"
        );
    }
    for (label, src) in [
        ("lets", format!("{HEAD}{}x", "let y = 1 in ".repeat(n + 1))),
        ("plus", format!("{HEAD}x{}", " + x".repeat(n + 1))),
    ] {
        assert!(
            !timed(label, Duration::from_secs(20), src.clone()),
            "{label}: accepted"
        );
        let diags = parse_str(&src).unwrap_err();
        assert_eq!(diags[0].message, "chain of `let`s or operators too long");
    }
}

#[test]
fn chains_on_top_of_parenthesised_chains_stay_bounded() {
    // Each level adds a left chain on top of a parenthesised chain: the tree height grows
    // quadratically in the nesting depth unless height (not only depth) is limited.
    let mut e = "x".to_string();
    for _ in 0..200 {
        e = format!("({e}{})", " + 1".repeat(200));
    }
    // 200 x 201 levels: past `MAX_HEIGHT`, refused (measured without recursion).
    let src = format!("{HEAD}{e}");
    assert!(!timed("quadratic", Duration::from_secs(5), src.clone()));
    let diags = parse_str(&src).unwrap_err();
    assert_eq!(diags[0].message, "expression nested too deeply");
}

#[test]
fn near_the_limit_is_accepted() {
    let n = 100;
    assert!(timed(
        "parens",
        Duration::from_secs(5),
        format!("{HEAD}{}x{}", "(".repeat(n), ")".repeat(n))
    ));
    assert!(timed(
        "lets",
        Duration::from_secs(5),
        format!("{HEAD}{}x", "let y = 1 in ".repeat(n))
    ));
    assert!(timed(
        "plus",
        Duration::from_secs(5),
        format!("{HEAD}x{}", " + x".repeat(n))
    ));
}

fn corpus_sources() -> Vec<String> {
    files::corpus()
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("readable"))
        .collect()
}

#[test]
fn one_megabyte_of_valid_source_parses_quickly() {
    let corpus = corpus_sources().join("\n");
    let mut src = String::new();
    while src.len() < (1 << 20) {
        src.push_str(&corpus);
        src.push('\n');
    }
    assert!(timed("1 MB valid", Duration::from_secs(10), src));
}

#[test]
fn one_megabyte_of_garbage_gives_errors_quickly() {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let alphabet = b"let in ( ) [ ] { } ; , . x 1 2.0 + - * / = < > if then else match with | -> _ C \" (* *) \n";
    let mut src = String::with_capacity(1 << 20);
    while src.len() < (1 << 20) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        src.push(alphabet[(rng % alphabet.len() as u64) as usize] as char);
    }
    timed("1 MB garbage", Duration::from_secs(10), src);
    // One long line of operators and operands: a flat but huge expression.
    let long = format!("{HEAD}{}x", "x; ".repeat(300_000));
    assert!(timed("long sequence", Duration::from_secs(10), long));
}

/// Tokens of `src` as (start, end) byte ranges.
fn token_ranges(src: &str) -> Vec<(usize, usize)> {
    let (toks, _) = lex(FileId(0), src);
    toks.iter()
        .map(|t| (t.span.start as usize, t.span.end as usize))
        .filter(|(s, e)| s < e)
        .collect()
}

const VOCAB: &[&str] = &[
    "let",
    "let%kernel",
    "let%shared",
    "let%superstep",
    "[@divergent]",
    "[@@sarek.type]",
    "in",
    "rec",
    "mut",
    "type",
    "of",
    "mutable",
    "if",
    "then",
    "else",
    "match",
    "with",
    "|",
    "->",
    "for",
    "to",
    "downto",
    "do",
    "done",
    "while",
    "begin",
    "end",
    "fun",
    "open",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ";",
    ";;",
    ",",
    ".",
    ".(",
    ":",
    ":=",
    "<-",
    "=",
    "<>",
    "!=",
    "<",
    "<=",
    "+",
    "-",
    "*",
    "/",
    "+.",
    "-.",
    "*.",
    "/.",
    "mod",
    "land",
    "lor",
    "lsl",
    "lsr",
    "asr",
    "lnot",
    "not",
    "&&",
    "||",
    "x",
    "y'",
    "_t",
    "f",
    "C",
    "Std.",
    "Float32.sqrt",
    "1",
    "-1",
    "1L",
    "0xff",
    "1.5",
    "2.5d",
    "1e-3",
    "true",
    "()",
    "\"unroll 4\"",
    "pragma",
    "[%native \"x\"]",
    "[%kernel",
    "'a",
    "int32",
    "vector",
    "(*",
    "*)",
    "\n",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let src = String::from_utf8_lossy(&bytes).into_owned();
        on_small_stack(move || check_invariants(&src));
    }

    #[test]
    fn token_soups_never_panic(words in proptest::collection::vec(0..VOCAB.len(), 0..400)) {
        let src: String = words.iter().map(|&i| VOCAB[i]).collect::<Vec<_>>().join(" ");
        on_small_stack(move || check_invariants(&src));
    }

    #[test]
    fn mutated_corpus_never_panics(
        file in 0usize..64,
        edits in proptest::collection::vec((0u8..3, any::<Index>(), any::<Index>()), 1..8),
    ) {
        let corpus = corpus_sources();
        let mut src = corpus[file % corpus.len()].clone();
        for (kind, a, b) in edits {
            let toks = token_ranges(&src);
            if toks.is_empty() {
                break;
            }
            let (s1, e1) = toks[a.index(toks.len())];
            let (s2, e2) = toks[b.index(toks.len())];
            let t1 = src[s1..e1].to_string();
            let t2 = src[s2..e2].to_string();
            src = match kind {
                // delete a token
                0 => format!("{}{}", &src[..s1], &src[e1..]),
                // duplicate a token
                1 => format!("{}{} {}", &src[..e1], " ", &t1) + &src[e1..],
                // swap two tokens
                _ if s1 < s2 && e1 <= s2 => {
                    format!("{}{t2}{}{t1}{}", &src[..s1], &src[e1..s2], &src[e2..])
                }
                _ => src,
            };
        }
        on_small_stack(move || check_invariants(&src));
    }
}

#[test]
fn renders_with_a_source_map() {
    // The diagnostics of a broken file point into it and render with its name.
    let src = "let%kernel k (v : int32 vector) =\n  let i = global_thread_id\n  v.(i) <- 0\n";
    let mut sm = SourceMap::new();
    let id = sm.add("broken.sarek", src);
    let diags = sarek_compiler::front::parser::parse(id, src).unwrap_err();
    let out = sarek_compiler::diag::render_all(&diags, &sm, false);
    assert!(out.contains("broken.sarek:3:3"), "{out}");
    assert!(out.contains("expected `in` after let binding"), "{out}");
}

/// A byte order mark at the start of a file is skipped; spans stay offsets into the text.
#[test]
fn a_byte_order_mark_is_skipped() {
    let good = "\u{feff}let%kernel k (a : int32 vector) =\n  a.(0) <- 1\n";
    let (_, diags) = lex(FileId(0), good);
    assert!(diags.is_empty(), "{diags:?}");
    assert!(sarek_compiler::front::parser::parse(FileId(0), good).is_ok());
    let bad = "\u{feff}let%kernel k (a : int32 vector) =\n  a.(0) <- )\n";
    let diags = sarek_compiler::front::parser::parse(FileId(0), bad).unwrap_err();
    assert_eq!(
        diags[0].span.start as usize,
        bad.rfind(')').unwrap(),
        "{diags:?}"
    );
}
