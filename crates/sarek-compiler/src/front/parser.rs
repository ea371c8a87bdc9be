//! Parser: tokens to the surface AST ([`crate::front::ast`]).
//!
//! A hand-written recursive-descent parser following OCaml's grammar for the subset Sarek
//! uses. Binary operators are parsed by precedence climbing over OCaml's precedence table
//! (reproduced in `parser/expr.rs`); constructs that extend as far right as possible
//! (`let`, `match`, `fun`, `if`) are parsed at the levels OCaml gives them, so
//! `if c then a; b` is `(if c then a); b` and a `match` arm swallows the following arms of
//! an inner `match`.
//!
//! Errors: every syntax error is a located [`Diagnostic`]; the parser then skips to the next
//! top-level item (a `let`/`type` in column 1, or the token after `;;`) and continues, so
//! independent errors in one file are all reported.
//!
//! Robustness: all recursion goes through a depth guard ([`MAX_DEPTH`]) that also grows the
//! stack on demand, and every expression node checks its height against the same limit, so
//! no accepted expression is more than [`MAX_DEPTH`] levels deep: recursive passes over the
//! AST (and its `Drop`) are bounded too. Exceeding the limit is a located error that ends
//! parsing.
//!
//! Decisions where OCaml is silent or Sarek differs (the valid programs OCaml accepts mean
//! the same here):
//! - A literal never takes arguments: `for i = 0 to 3 v.(i) <- 0 done` reports the missing
//!   `do` instead of applying `3`.
//! - Layout never changes what a valid program means or whether it is accepted. A file
//!   that fails to parse is parsed again with layout hints, for better diagnostics: inside a
//!   `let` value, an application does not take an argument that starts a line at or left of
//!   the `let` keyword (a forgotten `in`), and after an operator, `then`, `else` or `->` a
//!   `let`/`type` in column 1 is a new item.
//! - `[@attr]` after a `for`/`while` loop goes to the loop's attributes; after any other
//!   simple expression it wraps it in `ExprKind::Attributed`.
//! - A `()` parameter is a parameter `_` of type `unit`.
//! - `C a b` is an error (constructor arguments are a tuple `C (a, b)`); `C (a, b)` gives
//!   the constructor two arguments; module qualification of constructors is dropped.
//! - OCaml sugar is desugared here into the forms it abbreviates, with hidden names that no
//!   source can write (`%rec`, `%argN`, `%andN`, `%fnN`): record patterns in `let` and in
//!   parameters, tuple parameters, `let p1 = e1 and p2 = e2`, `let f = fun x -> e` and
//!   `function` arms, `let r = ref e` (a mutable local; `!r` reads it), `a ** b`
//!   (`Std.pow a b`), `~-`/`~-.`. Record update is refused by name; `when` guards are
//!   parsed into the arm (the typer desugars them).
//! - Integer literals keep their value as written (hexadecimal up to 2^64 - 1); the typer
//!   checks the range and wraps like OCaml. `1d` is an integral float64 literal.

mod errors;
mod expr;
mod items;

use crate::diag::{Diagnostic, FileId, Span};
use crate::front::ast::Program;
use crate::front::lexer::{self, Tok, Token};
use crate::front::name::Interner;
pub(crate) use errors::SyntaxError;
pub use items::PRELUDE_TYPE;

/// Limit on the parser's nesting depth, on the height of every expression (so passes that
/// recurse over the AST recurse at most this deep) and on the node count of a type.
///
/// Chains do not count: the body of a `let` (and what follows a `let` in a sequence) sits at
/// its `let`'s depth, and a left-associative operator chain (`a + b + c`) at its first
/// operand's, so generated and unrolled kernels with thousands of `let`s or terms are
/// accepted. Their length is bounded by [`MAX_CHAIN`] instead; passes recurse through
/// chains with the stack grown on demand (`crate::stack::grow`).
pub const MAX_DEPTH: usize = 256;

/// Limit on the length of a chain of `let`s (nested one in the other's body) and of a
/// left-associative operator chain: far above any real kernel, low enough that every pass
/// over such a chain stays within memory.
pub const MAX_CHAIN: usize = 12_000;

/// Limit on the true height of an expression, chains included: chains nest inside
/// parentheses (each level of [`MAX_DEPTH`] may hold a chain), and every pass over the tree
/// recurses this deep, on the front end's own stack (`crate::stack::deep`, about 12 KiB a
/// level in a debug build). A sequence interleaving statements and `let`s takes two levels
/// per link: [`MAX_CHAIN`] of them fit.
pub const MAX_HEIGHT: usize = 25_000;

/// Chains up to this long cannot make a tree taller than [`MAX_HEIGHT`] within
/// [`MAX_DEPTH`] (256 x 65 < 25,000): the true height is measured only past it.
const SHORT_CHAIN: usize = 64;

/// Grow the stack when less than this is left (more than one nesting level ever needs).
const STACK_RED_ZONE: usize = 256 * 1024;
/// Size of each additional stack segment.
const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// Parse one file. All syntax errors found are returned (with recovery where possible).
///
/// Layout never decides whether a program is valid: the file is parsed as OCaml would
/// (layout ignored); only when that fails is it parsed again with the layout hints on (see
/// `Parser::offside`), whose diagnostics point at a forgotten `in` where the first parse
/// would complain far away. If the hinted parse finds nothing, the first parse's errors stand.
///
/// The parser grows its own stack on demand; the program it returns says whether later passes
/// need the front end's deep stack ([`Program::tall`]).
pub fn parse(file: FileId, source: &str) -> Result<Program, Vec<Diagnostic>> {
    parse_here(file, source)
}

/// Height up to which a tree is walked on the caller's stack (a few kilobytes a level in a
/// debug build, well within any thread's stack); past it, passes run on `crate::stack::deep`.
pub const CALLER_STACK_HEIGHT: usize = 64;

/// The first expression (in a depth-first walk, without recursion) deeper than `limit`.
fn taller_than(program: &Program, limit: usize) -> Option<Span> {
    use crate::front::ast::{Expr, ItemKind};
    let mut stack: Vec<(&Expr, usize)> = Vec::new();
    let mut items: Vec<&crate::front::ast::Item> = program.items.iter().collect();
    while let Some(item) = items.pop() {
        match &item.kind {
            ItemKind::Const { value, .. } => stack.push((value, 1)),
            ItemKind::Fun(f) => stack.push((&f.body, 1)),
            ItemKind::Kernel(k) => {
                stack.push((&k.body, 1));
                stack.extend(k.prelude.iter().map(|f| (&f.body, 1)));
            }
            ItemKind::Module { items: inner, .. } => items.extend(inner.iter()),
            _ => {}
        }
    }
    while let Some((e, d)) = stack.pop() {
        if d > limit {
            return Some(e.span);
        }
        e.for_each_child(|c| stack.push((c, d + 1)));
    }
    None
}

fn parse_here(file: FileId, source: &str) -> Result<Program, Vec<Diagnostic>> {
    let (tokens, lex_diags) = lexer::lex(file, source);
    let (plain, tokens) = parse_tokens(tokens, lex_diags.clone(), false);
    let Err(plain_diags) = plain else {
        return plain;
    };
    match parse_tokens(tokens, lex_diags, true).0 {
        Err(hinted) => Err(hinted),
        Ok(_) => Err(plain_diags),
    }
}

/// The parse of `toks`, and the tokens back (a failed parse is retried with hints).
fn parse_tokens(
    toks: Vec<Token<'_>>,
    diags: Vec<Diagnostic>,
    layout_hints: bool,
) -> (Result<Program, Vec<Diagnostic>>, Vec<Token<'_>>) {
    let mut p = Parser {
        toks,
        pos: 0,
        diags,
        depth: 0,
        fatal: false,
        layout_hints,
        offside: None,
        h: 0,
        type_nodes: 0,
        chain: 0,
        longest_chain: 0,
        names: Interner::default(),
    };
    let mut program = p.program();
    // Set before anything can drop the program: a tall tree is freed on the deep stack.
    program.tall =
        p.longest_chain > SHORT_CHAIN || taller_than(&program, CALLER_STACK_HEIGHT).is_some();
    if p.diags.is_empty()
        && p.longest_chain > SHORT_CHAIN
        && let Some(at) = taller_than(&program, MAX_HEIGHT)
    {
        p.diags.push(errors::too_tall(at));
    }
    let result = if p.diags.is_empty() {
        Ok(program)
    } else {
        p.diags.sort_by_key(|d| (d.span.start, d.span.end));
        Err(p.diags)
    };
    (result, p.toks)
}

/// Marker for "a diagnostic has been recorded"; the caller recovers.
#[derive(Debug)]
pub(crate) struct Fail;

pub(crate) type PResult<T> = Result<T, Fail>;

pub(crate) struct Parser<'src> {
    toks: Vec<Token<'src>>,
    pos: usize,
    diags: Vec<Diagnostic>,
    depth: usize,
    /// `let`s the current position is in the body of ([`MAX_CHAIN`]).
    chain: usize,
    /// The longest chain of `let`s or operator terms seen ([`SHORT_CHAIN`]).
    longest_chain: usize,
    /// Set when parsing cannot continue at all (nesting limit): no recovery is attempted.
    fatal: bool,
    /// Whether [`Parser::offside`] is applied (only when re-parsing a file with errors).
    layout_hints: bool,
    /// Column of the innermost `let` whose value is being parsed. OCaml ignores layout, but
    /// a token that starts a line at or left of that column is almost always the start of
    /// the body after a forgotten `in` (or of the next item), so an application does not
    /// take it as an argument. This turns "cannot apply" errors far away into
    /// "expected `in`" at the right place. Used only for the diagnostics of a file that
    /// does not parse without it, so it never rejects a valid program.
    offside: Option<u32>,
    /// Height of the expression most recently returned by a parsing function (see
    /// `Parser::node`).
    h: u32,
    /// Nodes built so far in the type expression being parsed.
    type_nodes: usize,
    /// This file's identifiers, each spelling allocated once.
    names: Interner<'src>,
}

impl<'src> Parser<'src> {
    // ---- token access -------------------------------------------------------------

    fn peek(&self) -> &Tok<'src> {
        &self.toks[self.pos].tok
    }

    fn peek_at(&self, k: usize) -> &Tok<'src> {
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

    /// Consume the current token (never past `Eof`) and return its span.
    fn bump(&mut self) -> Span {
        let span = self.toks[self.pos].span;
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        span
    }

    /// The current token's layout: (first on its line, column).
    fn layout(&self) -> (bool, u32) {
        let t = &self.toks[self.pos];
        (t.first_on_line, t.col)
    }

    /// Whether the current token starts a line left of (or at) the column of the innermost
    /// enclosing `let`: then it cannot continue that binding's value (see [`Parser::offside`]).
    fn offside_here(&self) -> bool {
        match self.offside {
            Some(col) if self.layout_hints => {
                let (first, c) = self.layout();
                first && c <= col
            }
            _ => false,
        }
    }

    /// Run `f` with the offside column set to `col`, restoring the previous one after.
    fn with_offside<T>(
        &mut self,
        col: Option<u32>,
        f: impl FnOnce(&mut Self) -> PResult<T>,
    ) -> PResult<T> {
        let saved = std::mem::replace(&mut self.offside, col);
        let r = f(self);
        self.offside = saved;
        r
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
    fn expected(&mut self, what: &'static str) -> Fail {
        self.fail(SyntaxError::Expected(what.into()))
    }

    /// Expect `t`; otherwise "expected `t`, found ...".
    fn expect(&mut self, t: &Tok) -> PResult<Span> {
        if self.at(t) {
            return Ok(self.bump());
        }
        let what = format!("`{}`", t.text());
        Err(self.fail(SyntaxError::Expected(what.into())))
    }

    /// Expect the closing `close` of a construct opened by `open_text` at `open`.
    fn expect_closing(
        &mut self,
        close: &Tok,
        open_text: &'static str,
        open: Span,
    ) -> PResult<Span> {
        if self.at(close) {
            return Ok(self.bump());
        }
        Err(self.fail(SyntaxError::Unclosed {
            close: close.text(),
            open_text,
            open,
        }))
    }

    /// Run `f` one nesting level deeper; past [`MAX_DEPTH`] report and abort the parse.
    ///
    /// Every recursive path of the parser passes through here, so this is also where the
    /// stack is grown on demand: frames are large in debug builds (an `Expr` is ~200 bytes
    /// and every temporary gets its own slot), and a parse must not depend on the caller's
    /// stack size.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        self.check_depth(1)?;
        self.depth += 1;
        let r = stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || f(self));
        self.depth -= 1;
        r
    }

    /// Parse the body of a `let` (`f`) at the `let`'s own depth: a chain of `let`s does not
    /// nest, however long (up to [`MAX_CHAIN`]). The stack still grows on demand.
    fn let_body<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.chain >= MAX_CHAIN {
            return Err(self.fail(SyntaxError::ChainTooLong));
        }
        let depth = self.depth;
        self.depth = depth.saturating_sub(1);
        self.chain += 1;
        self.longest_chain = self.longest_chain.max(self.chain);
        let r = stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || f(self));
        self.chain -= 1;
        self.depth = depth;
        r
    }

    /// Fail if `extra` more levels (e.g. a left-nested operator chain) exceed the limit.
    fn check_depth(&mut self, extra: usize) -> PResult<()> {
        if self.depth + extra <= MAX_DEPTH {
            Ok(())
        } else {
            Err(self.fail(SyntaxError::TooDeep))
        }
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
                Tok::Let | Tok::LetExt(_) | Tok::Type if t.line_start() => return,
                _ => {
                    self.bump();
                }
            }
        }
    }
}
