//! Parser: tokens to the surface AST ([`crate::front::ast`]).
//!
//! A hand-written recursive-descent parser following OCaml's grammar for the subset Sarek
//! uses. Binary operators are parsed by precedence climbing over OCaml's precedence table
//! (see [`expr`]); constructs that extend as far right as possible (`let`, `match`, `fun`,
//! `if`) are parsed at the levels OCaml gives them, so `if c then a; b` is `(if c then a); b`
//! and a `match` arm swallows the following arms of an inner `match`.
//!
//! Errors: every syntax error is a located [`Diagnostic`]; the parser then skips to the next
//! top-level item (a `let`/`type` in column 1, or the token after `;;`) and continues, so
//! independent errors in one file are all reported.
//!
//! Robustness: all recursion goes through a depth guard ([`MAX_DEPTH`]); deeper nesting is a
//! located error that ends parsing. This also bounds the depth of the AST, so the recursive
//! passes downstream cannot overflow the stack either.

mod expr;
mod items;

use crate::diag::{Diagnostic, FileId, Span};
use crate::front::ast::Program;
use crate::front::lexer::{self, Tok, Token};

/// Maximum nesting depth of expressions, patterns and types (also bounds the AST depth).
pub const MAX_DEPTH: usize = 256;

/// Parse one file. All syntax errors found are returned (with recovery where possible).
pub fn parse(file: FileId, source: &str) -> Result<Program, Vec<Diagnostic>> {
    let (tokens, lex_diags) = lexer::lex(file, source);
    let mut p = Parser {
        toks: tokens,
        pos: 0,
        diags: lex_diags,
        depth: 0,
        fatal: false,
    };
    let program = p.program();
    if p.diags.is_empty() {
        Ok(program)
    } else {
        p.diags.sort_by_key(|d| (d.span.start, d.span.end));
        Err(p.diags)
    }
}

/// Marker for "a diagnostic has been recorded"; the caller recovers.
#[derive(Debug)]
pub(crate) struct Fail;

pub(crate) type PResult<T> = Result<T, Fail>;

pub(crate) struct Parser {
    toks: Vec<Token>,
    pos: usize,
    diags: Vec<Diagnostic>,
    depth: usize,
    /// Set when parsing cannot continue at all (nesting limit): no recovery is attempted.
    fatal: bool,
}

impl Parser {
    // ---- token access -------------------------------------------------------------

    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }

    fn peek_at(&self, k: usize) -> &Tok {
        let i = (self.pos + k).min(self.toks.len() - 1);
        &self.toks[i].tok
    }

    fn span(&self) -> Span {
        self.toks[self.pos].span
    }

    /// Span of the last consumed token.
    fn prev_span(&self) -> Span {
        if self.pos == 0 {
            self.toks[0].span
        } else {
            self.toks[self.pos - 1].span
        }
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn at(&self, t: &Tok) -> bool {
        self.peek() == t
    }

    fn eat(&mut self, t: &Tok) -> bool {
        if self.at(t) {
            self.bump();
            true
        } else {
            false
        }
    }

    // ---- errors -----------------------------------------------------------------------

    /// Record `diag` unless the current token is a lexer error (already reported).
    fn report(&mut self, diag: Diagnostic) -> Fail {
        if *self.peek() != Tok::Error {
            self.diags.push(diag);
        }
        Fail
    }

    /// "expected WHAT, found <current token>" at the current token.
    fn expected(&mut self, what: &str) -> Fail {
        let found = self.peek().describe();
        let d = Diagnostic::error(self.span(), format!("expected {what}, found {found}"))
            .with_label(format!("expected {what}"));
        self.report(d)
    }

    /// Expect `t`; otherwise "expected `t`, found ...".
    fn expect(&mut self, t: &Tok) -> PResult<Span> {
        if self.at(t) {
            Ok(self.bump().span)
        } else {
            Err(self.expected(&format!("`{}`", t.text())))
        }
    }

    /// Expect the closing `close` of a construct opened by `open_tok` at `open`.
    fn expect_closing(&mut self, close: &Tok, open_tok: &str, open: Span) -> PResult<Span> {
        if self.at(close) {
            return Ok(self.bump().span);
        }
        let found = self.peek().describe();
        let close_text = close.text();
        let msg = if *self.peek() == Tok::Eof {
            format!("unclosed `{open_tok}`: expected `{close_text}` before the end of the file")
        } else {
            format!("expected `{close_text}` to close `{open_tok}`, found {found}")
        };
        let d = Diagnostic::error(self.span(), msg)
            .with_label(format!("expected `{close_text}`"))
            .with_secondary(open, format!("unclosed `{open_tok}` opened here"));
        Err(self.report(d))
    }

    /// Run `f` one nesting level deeper; past [`MAX_DEPTH`] report and abort the parse.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        self.check_depth(1)?;
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    /// Fail if `extra` more levels (e.g. a left-nested operator chain) exceed the limit.
    fn check_depth(&mut self, extra: usize) -> PResult<()> {
        if self.depth + extra <= MAX_DEPTH {
            return Ok(());
        }
        if !self.fatal {
            self.fatal = true;
            let d = Diagnostic::error(self.span(), "expression nested too deeply")
                .with_label(format!("more than {MAX_DEPTH} levels of nesting"))
                .with_help("split the expression with `let` bindings or helper functions");
            self.diags.push(d);
        }
        Err(Fail)
    }

    // ---- recovery ---------------------------------------------------------------------

    /// Skip to the next plausible top-level item start: `let`/`let%..`/`type` in column 1,
    /// or just after `;;`. Always makes progress from `from`.
    fn recover(&mut self, from: usize) {
        if self.pos == from {
            self.bump();
        }
        loop {
            let t = &self.toks[self.pos];
            match t.tok {
                Tok::Eof => return,
                Tok::SemiSemi => {
                    self.bump();
                    return;
                }
                Tok::Let | Tok::LetExt(_) | Tok::Type if t.line_start => return,
                _ => {
                    self.bump();
                }
            }
        }
    }
}
