//! Layout never changes the meaning of a valid program: every corpus file parses to the
//! same tree (spans aside) when its comments are dropped and all its tokens are put on one
//! line, or when each token is put on its own line.

use crate::support::sexp as common;
use common::{parse_str, program_sexp};
use sarek_compiler::FileId;
use sarek_compiler::front::lexer::{Tok, lex};

use sarek_testkit::files;

fn corpus() -> Vec<(String, String)> {
    files::corpus()
        .iter()
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(p).expect("readable"),
            )
        })
        .collect()
}

/// The source text of every token, in order.
fn token_texts(src: &str) -> Vec<&str> {
    let (toks, diags) = lex(FileId(0), src);
    assert!(diags.is_empty());
    toks.iter()
        .filter(|t| t.tok != Tok::Eof)
        .map(|t| &src[t.span.start as usize..t.span.end as usize])
        .collect()
}

#[test]
fn corpus_parses_the_same_on_one_line() {
    for (name, src) in corpus() {
        let want = program_sexp(&parse_str(&src).expect("corpus parses"));
        let one_line = token_texts(&src).join(" ");
        let got = program_sexp(
            &parse_str(&one_line).unwrap_or_else(|d| panic!("{name} on one line: {d:?}")),
        );
        assert_eq!(want, got, "{name}");
    }
}

#[test]
fn corpus_parses_the_same_one_token_per_line() {
    for (name, src) in corpus() {
        let want = program_sexp(&parse_str(&src).expect("corpus parses"));
        // Tokens that started a line in column 1 (the items) stay there; every other token
        // goes on its own line, each indented further than the one before, so no token is
        // ever left of an earlier `let` (the offside hint never fires).
        let (toks, _) = lex(FileId(0), &src);
        let mut text = String::new();
        for (k, t) in toks.iter().filter(|t| t.tok != Tok::Eof).enumerate() {
            if !t.line_start() {
                text.push_str(&" ".repeat(k + 1));
            }
            text.push_str(&src[t.span.start as usize..t.span.end as usize]);
            text.push('\n');
        }
        let got = program_sexp(
            &parse_str(&text).unwrap_or_else(|d| panic!("{name} one token per line: {d:?}")),
        );
        assert_eq!(want, got, "{name}");
    }
}

/// `\n`, `\r\n` and a lone `\r` (old Mac files) are each one line break: every corpus file
/// written with any of them lexes to the same layout (first on its line, column).
#[test]
fn every_line_ending_gives_the_same_layout() {
    let layout = |src: &str| -> Vec<(bool, u32)> {
        let (toks, diags) = lex(FileId(0), src);
        assert!(diags.is_empty(), "{diags:?}");
        toks.iter().map(|t| (t.first_on_line, t.col)).collect()
    };
    for (name, src) in corpus() {
        let src = src.replace("\r\n", "\n");
        let want = layout(&src);
        for ending in ["\r\n", "\r"] {
            assert_eq!(
                want,
                layout(&src.replace('\n', ending)),
                "{name} with {ending:?}"
            );
        }
    }
}

/// An error on line 3 of a file whose lines end in a lone `\r` is reported on line 3, at its
/// column, with that line shown: the same rendering as the `\n` file gives.
#[test]
fn a_lone_carriage_return_breaks_lines_in_diagnostics() {
    let lines = [
        "let%kernel k (v : int32 vector) =",
        "  let a = 1 in",
        "  v.(0) <- a + zz",
    ];
    let render = |ending: &str| {
        let mut sources = sarek_compiler::SourceMap::new();
        let file = sources.add("mac.sarek", lines.join(ending) + ending);
        let diags = sarek_compiler::check(&sources, file).expect_err("`zz` is unbound");
        let at = sources.line_col(diags[0].span.file, diags[0].span.start);
        (
            at,
            sarek_compiler::diag::render_all(&diags, &sources, false),
        )
    };
    let (at, shown) = render("\r");
    assert_eq!(at, (3, 16));
    assert!(shown.contains("mac.sarek:3:16"), "{shown}");
    assert!(
        shown.contains("3 │   v.(0) <- a + zz\n  │                ^^"),
        "{shown}"
    );
    for ending in ["\n", "\r\n"] {
        assert_eq!(render(ending), (at, shown.clone()), "{ending:?}");
    }
}
