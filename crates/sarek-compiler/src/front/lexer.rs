//! Lexer: source text to a vector of [`Token`]s with spans.
//!
//! The lexer is a single forward scan over bytes (the language's syntax is ASCII; any other
//! character is reported as a located error). It never fails as a whole: every problem
//! (a bad character, an unterminated comment or string, a malformed literal) becomes a
//! [`Diagnostic`] and a [`Tok::Error`] token, which tells the parser that this spot has
//! already been reported so it can recover silently instead of adding a cascade of errors.
//!
//! Attributes (`[@name payload]`, `[@@name payload]`) and extension nodes other than
//! `[%kernel` (e.g. `[%native ...]`) are lexed as single tokens whose payload is kept as raw
//! text, since their contents need not be Sarek syntax. `[%kernel` opens a node whose
//! contents are parsed, so it is a token of its own (`Tok::ExtOpen`) closed by `]`.

use std::borrow::Cow;

use crate::diag::{Diagnostic, FileId, Span};

/// A token kind. Keywords are separate variants; identifiers carry their text, borrowed from
/// the source: lexing allocates nothing per token, only the parser's tree owns names.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok<'src> {
    /// Lowercase or `_`-led identifier (`x`, `x'`, `_tmp`).
    Ident(&'src str),
    /// Capitalised identifier: a constructor or a module name.
    UIdent(&'src str),
    /// Type variable `'a`.
    TyVar(&'src str),
    /// Integer literal; `int64` for the `L` suffix.
    Int {
        value: i128,
        int64: bool,
    },
    /// Float literal; `float64` for the `d` (or upstream's `G`) suffix.
    Float {
        value: f64,
        float64: bool,
    },
    /// String literal (pragma payloads); owned only when it has escapes.
    Str(Cow<'src, str>),
    True,
    False,
    Let,
    Rec,
    In,
    If,
    Then,
    Else,
    For,
    To,
    Downto,
    Do,
    Done,
    While,
    Match,
    With,
    Fun,
    Function,
    Type,
    Of,
    And,
    Mutable,
    Mut,
    Begin,
    End,
    Open,
    Not,
    Mod,
    Land,
    Lor,
    Lxor,
    Lnot,
    Lsl,
    Lsr,
    Asr,
    /// `let%name` (`let%kernel`, `let%shared`, `let%superstep`).
    LetExt(&'src str),
    /// `[%kernel`: an extension node whose payload is parsed; closed by `]`.
    ExtOpen(&'src str),
    /// `[%%name`: a structure-item extension (upstream's `[%%kernel let k ... ]`), whose
    /// payload is parsed; closed by `]`.
    ItemExtOpen(&'src str),
    /// `[%name payload]` for any other name, payload kept raw.
    Extension {
        name: &'src str,
        payload: &'src str,
    },
    /// `[@name payload]` (`outer: false`) or `[@@name payload]` (`outer: true`).
    Attr {
        name: &'src str,
        payload: &'src str,
        outer: bool,
    },
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Semi,
    SemiSemi,
    Colon,
    ColonEq,
    LArrow,
    Arrow,
    Bar,
    Dot,
    Underscore,
    Eq,
    /// `<>`
    LtGt,
    /// `!=`
    BangEq,
    Lt,
    Le,
    Gt,
    Ge,
    AndAnd,
    OrOr,
    Plus,
    Minus,
    Star,
    Slash,
    PlusDot,
    MinusDot,
    /// `~-`, OCaml's explicit prefix minus (only prefix, unlike `-`).
    TildeMinus,
    /// `~-.`
    TildeMinusDot,
    /// `!` (OCaml's dereference: `!r` reads a `ref` local, which Sarek makes mutable).
    Bang,
    /// `**` (float power).
    StarStar,
    StarDot,
    SlashDot,
    /// A spot the lexer already reported; the parser recovers without a new message.
    Error,
    Eof,
}

impl Tok<'_> {
    /// How the token is named in "expected X, found Y" messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("identifier `{s}`"),
            Tok::UIdent(s) => format!("constructor or module `{s}`"),
            Tok::TyVar(s) => format!("type variable `'{s}`"),
            Tok::Int { .. } => "integer literal".to_string(),
            Tok::Float { .. } => "float literal".to_string(),
            Tok::Str(_) => "string literal".to_string(),
            Tok::LetExt(n) => format!("`let%{n}`"),
            Tok::ExtOpen(n) => format!("`[%{n}`"),
            Tok::ItemExtOpen(n) => format!("`[%%{n}`"),
            Tok::Extension { name, .. } => format!("extension `[%{name} ...]`"),
            Tok::Attr {
                name, outer: false, ..
            } => format!("attribute `[@{name} ...]`"),
            Tok::Attr {
                name, outer: true, ..
            } => format!("attribute `[@@{name} ...]`"),
            Tok::Error => "invalid token".to_string(),
            Tok::Eof => "end of file".to_string(),
            other => format!("`{}`", other.text()),
        }
    }

    /// The fixed spelling of keywords and punctuation (empty for tokens carrying data).
    pub fn text(&self) -> &'static str {
        match self {
            Tok::True => "true",
            Tok::False => "false",
            Tok::Let => "let",
            Tok::Rec => "rec",
            Tok::In => "in",
            Tok::If => "if",
            Tok::Then => "then",
            Tok::Else => "else",
            Tok::For => "for",
            Tok::To => "to",
            Tok::Downto => "downto",
            Tok::Do => "do",
            Tok::Done => "done",
            Tok::While => "while",
            Tok::Match => "match",
            Tok::With => "with",
            Tok::Fun => "fun",
            Tok::Function => "function",
            Tok::Type => "type",
            Tok::Of => "of",
            Tok::And => "and",
            Tok::Mutable => "mutable",
            Tok::Mut => "mut",
            Tok::Begin => "begin",
            Tok::End => "end",
            Tok::Open => "open",
            Tok::Not => "not",
            Tok::Mod => "mod",
            Tok::Land => "land",
            Tok::Lor => "lor",
            Tok::Lxor => "lxor",
            Tok::Lnot => "lnot",
            Tok::Lsl => "lsl",
            Tok::Lsr => "lsr",
            Tok::Asr => "asr",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Comma => ",",
            Tok::Semi => ";",
            Tok::SemiSemi => ";;",
            Tok::Colon => ":",
            Tok::ColonEq => ":=",
            Tok::LArrow => "<-",
            Tok::Arrow => "->",
            Tok::Bar => "|",
            Tok::Dot => ".",
            Tok::Underscore => "_",
            Tok::Eq => "=",
            Tok::LtGt => "<>",
            Tok::BangEq => "!=",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::AndAnd => "&&",
            Tok::OrOr => "||",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::PlusDot => "+.",
            Tok::MinusDot => "-.",
            Tok::TildeMinus => "~-",
            Tok::TildeMinusDot => "~-.",
            Tok::Bang => "!",
            Tok::StarStar => "**",
            Tok::StarDot => "*.",
            Tok::SlashDot => "/.",
            _ => "",
        }
    }
}

/// A token with its location and layout. Layout never changes the meaning of a valid
/// program; the parser uses it for error recovery (`let`/`type` in column 1 start an item)
/// and to point at a forgotten `in` (see `Parser::offside`).
#[derive(Clone, Debug, PartialEq)]
pub struct Token<'src> {
    pub tok: Tok<'src>,
    pub span: Span,
    /// No other token precedes this one on its line.
    pub first_on_line: bool,
    /// 0-based visual column of the token's first character (characters, tabs to the next
    /// multiple of 8): what a reader sees when comparing indentation.
    pub col: u32,
}

impl Token<'_> {
    /// First on its line and in column 1.
    pub fn line_start(&self) -> bool {
        self.first_on_line && self.col == 0
    }
}

fn keyword(s: &str) -> Option<Tok<'static>> {
    Some(match s {
        "true" => Tok::True,
        "false" => Tok::False,
        "let" => Tok::Let,
        "rec" => Tok::Rec,
        "in" => Tok::In,
        "if" => Tok::If,
        "then" => Tok::Then,
        "else" => Tok::Else,
        "for" => Tok::For,
        "to" => Tok::To,
        "downto" => Tok::Downto,
        "do" => Tok::Do,
        "done" => Tok::Done,
        "while" => Tok::While,
        "match" => Tok::Match,
        "with" => Tok::With,
        "fun" => Tok::Fun,
        "function" => Tok::Function,
        "type" => Tok::Type,
        "of" => Tok::Of,
        "and" => Tok::And,
        "mutable" => Tok::Mutable,
        "mut" => Tok::Mut,
        "begin" => Tok::Begin,
        "end" => Tok::End,
        "open" => Tok::Open,
        "not" => Tok::Not,
        "mod" => Tok::Mod,
        "land" => Tok::Land,
        "lor" => Tok::Lor,
        "lxor" => Tok::Lxor,
        "lnot" => Tok::Lnot,
        "lsl" => Tok::Lsl,
        "lsr" => Tok::Lsr,
        "asr" => Tok::Asr,
        _ => return None,
    })
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'\''
}

/// Tab stops for visual columns.
const TAB_WIDTH: u32 = 8;

/// Lexical errors reported before the lexer gives up on a file.
const MAX_LEX_ERRORS: usize = 50;

/// Whether `c` can begin a token or separate tokens (used to group invalid characters).
fn starts_token(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || c.is_ascii_whitespace()
        || b"()[]{},;:<>-+*/|&!=._'\"~".contains(&c)
}

/// Attribute / extension names may be dotted (`sarek.inline`).
fn is_attr_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'\''
}

struct Lexer<'a> {
    src: &'a [u8],
    text: &'a str,
    pos: usize,
    file: FileId,
    tokens: Vec<Token<'a>>,
    diags: Vec<Diagnostic>,
    /// Offset of the first byte of the line of the last token pushed.
    line_begin: usize,
    /// Offset up to which `line_begin` accounts for newlines.
    scanned: usize,
    /// Visual column `col` of byte offset `col_pos` (on the current line).
    col_pos: usize,
    col: u32,
}

/// Tokenize one file. Always ends with an `Eof` token; errors are reported alongside.
pub fn lex(file: FileId, source: &str) -> (Vec<Token<'_>>, Vec<Diagnostic>) {
    // A byte order mark (editors on Windows write one) is not part of the program; spans stay
    // offsets into the whole text.
    let start = if source.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    };
    let mut lx = Lexer {
        src: source.as_bytes(),
        text: source,
        pos: start,
        file,
        // The corpus has a token per five bytes of source on average (comments included), dense
        // code one per three or four: sized so that the vector rarely grows (a copy of every
        // token so far each time).
        tokens: Vec::with_capacity(source.len() / 4 + 16),
        diags: Vec::new(),
        line_begin: start,
        scanned: start,
        col_pos: start,
        col: 0,
    };
    lx.run();
    (lx.tokens, lx.diags)
}

impl<'a> Lexer<'a> {
    fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.file, start, end)
    }

    /// The fraction (`.` then `digit`s) and the exponent (one of `exponent`, a sign, decimal
    /// digits) after a number's integer digits, consumed; true when either is there, which
    /// makes the literal a float. `1.` and `1.5` are floats; `.(` after a literal never occurs
    /// in valid code. Hexadecimal floats (`0x1.8p3`) count the exponent in powers of two.
    fn float_tail(&mut self, digit: fn(&u8) -> bool, exponent: [u8; 2]) -> bool {
        let mut is_float = false;
        if self.peek(0) == b'.' && self.peek(1) != b'(' {
            is_float = true;
            self.pos += 1;
            while digit(&self.peek(0)) || self.peek(0) == b'_' {
                self.pos += 1;
            }
        }
        if exponent.contains(&self.peek(0)) {
            let sign = usize::from(matches!(self.peek(1), b'+' | b'-'));
            if self.peek(1 + sign).is_ascii_digit() {
                is_float = true;
                self.pos += 1 + sign;
                while self.peek(0).is_ascii_digit() || self.peek(0) == b'_' {
                    self.pos += 1;
                }
            }
        }
        is_float
    }

    fn peek(&self, k: usize) -> u8 {
        self.src.get(self.pos + k).copied().unwrap_or(0)
    }

    fn push(&mut self, tok: Tok<'a>, start: usize) {
        // Advance the line tracking over the text since the last token (amortised linear).
        // `\n`, `\r\n` and a lone `\r` each end a line (`diag::line_breaks`); the last break
        // byte before a token is a line's end either way, as a token never starts at `\n`.
        let breaks = |c: &u8| matches!(c, b'\n' | b'\r');
        if start < self.scanned {
            // Only after an error that backs up (rare): recompute from scratch.
            self.line_begin = self.src[..start]
                .iter()
                .rposition(breaks)
                .map_or(0, |p| p + 1);
        } else if let Some(nl) = self.src[self.scanned..start].iter().rposition(breaks) {
            self.line_begin = self.scanned + nl + 1;
        }
        self.scanned = start;
        // First on its line unless the previous token ends on this line.
        let first_on_line = self
            .tokens
            .last()
            .is_none_or(|t| (t.span.end as usize) <= self.line_begin);
        // Visual column, measured from the previous token of the same line.
        if self.col_pos < self.line_begin || self.col_pos > start {
            self.col_pos = self.line_begin;
            self.col = 0;
        }
        for &c in &self.src[self.col_pos..start] {
            match c {
                b'\t' => self.col = (self.col / TAB_WIDTH + 1) * TAB_WIDTH,
                // UTF-8 continuation bytes do not start a character.
                0x80..=0xbf => {}
                _ => self.col += 1,
            }
        }
        self.col_pos = start;
        let col = self.col;
        self.tokens.push(Token {
            tok,
            span: self.span(start, self.pos),
            first_on_line,
            col,
        });
    }

    /// A zero-width `Error` token: the spot was reported, the rest is not tokenized.
    fn push_error(&mut self, at: usize) {
        self.push(Tok::Error, at);
        if let Some(t) = self.tokens.last_mut() {
            t.span.end = t.span.start;
        }
    }

    fn error(&mut self, start: usize, end: usize, msg: impl Into<String>, label: &str) {
        self.diags
            .push(Diagnostic::error(self.span(start, end), msg).with_label(label));
    }

    fn run(&mut self) {
        loop {
            self.skip_trivia();
            let start = self.pos;
            if self.pos >= self.src.len() {
                break;
            }
            if !self.token(start) {
                // An unrecoverable lexical error (unterminated comment or string): the rest of
                // the file cannot be tokenized meaningfully.
                self.push_error(start);
                self.pos = self.src.len();
                break;
            }
            if self.diags.len() >= MAX_LEX_ERRORS {
                // Not source code at all (a binary file, say): stop before flooding the output.
                self.diags.push(
                    Diagnostic::error(
                        self.span(self.pos, self.pos),
                        "too many lexical errors; giving up on this file",
                    )
                    .with_label(format!("stopped here after {MAX_LEX_ERRORS} errors")),
                );
                self.push_error(self.pos);
                break;
            }
        }
        let end = self.src.len();
        self.pos = end;
        self.push(Tok::Eof, end);
    }

    /// Skip whitespace and comments. An unterminated comment is reported and ends the file.
    fn skip_trivia(&mut self) {
        loop {
            match self.peek(0) {
                b' ' | b'\t' | b'\n' | b'\r' | 0x0c => self.pos += 1,
                b'(' if self.peek(1) == b'*' => {
                    if !self.skip_comment() {
                        return;
                    }
                }
                _ => return,
            }
        }
    }

    /// Skip one (nested) comment starting at `pos`. Strings inside comments are skipped as
    /// strings, as OCaml does, so `(* "*)" *)` is one comment.
    fn skip_comment(&mut self) -> bool {
        let mut opens = vec![self.pos];
        // Where a string inside the comment opened and never closed, if one did.
        let mut open_string = None;
        self.pos += 2;
        while let Some(&open) = opens.last() {
            if self.pos >= self.src.len() {
                let mut d = Diagnostic::error(self.span(open, open + 2), "unterminated comment")
                    .with_label("this comment is never closed")
                    .with_note("comments `(* ... *)` nest: every `(*` needs its own `*)`");
                if let Some(quote) = open_string {
                    d = d
                        .with_secondary(
                            self.span(quote, quote + 1),
                            "this `\"` starts a string inside the comment, which is never closed",
                        )
                        .with_note("as in OCaml, a comment skips strings whole, so its `*)` must not be inside one");
                }
                self.diags.push(d);
                self.push_error(open);
                return false;
            }
            match (self.peek(0), self.peek(1)) {
                (b'(', b'*') => {
                    opens.push(self.pos);
                    self.pos += 2;
                }
                (b'*', b')') => {
                    opens.pop();
                    self.pos += 2;
                }
                (b'"', _) => {
                    let quote = self.pos;
                    if self.scan_string().is_none() {
                        // Unterminated string inside a comment: report the comment.
                        open_string = Some(quote);
                        self.pos = self.src.len();
                    }
                }
                (b'\'', _) => self.pos += char_literal_len(&self.src[self.pos..]).unwrap_or(1),
                // Comment text: on to the next byte that can open, close or quote.
                _ => {
                    self.pos += 1;
                    self.pos += self.src[self.pos..]
                        .iter()
                        .position(|&b| matches!(b, b'(' | b'*' | b'"' | b'\''))
                        .unwrap_or(self.src.len() - self.pos);
                }
            }
        }
        true
    }

    /// Scan a string literal at `pos` (which is `"`); returns its contents, or `None` when it
    /// is not closed (with `pos` at end of input).
    fn scan_string(&mut self) -> Option<Cow<'a, str>> {
        self.pos += 1;
        let begin = self.pos;
        let mut out = String::new();
        let mut chunk_start = self.pos;
        while self.pos < self.src.len() {
            match self.src[self.pos] {
                b'"' => {
                    let text = if chunk_start == begin {
                        // No escape: the contents as written.
                        Cow::Borrowed(&self.text[begin..self.pos])
                    } else {
                        out.push_str(&self.text[chunk_start..self.pos]);
                        Cow::Owned(out)
                    };
                    self.pos += 1;
                    return Some(text);
                }
                b'\\' => {
                    out.push_str(&self.text[chunk_start..self.pos]);
                    let esc = self.peek(1);
                    match esc {
                        b'n' => out.push('\n'),
                        b't' => out.push('\t'),
                        b'r' => out.push('\r'),
                        b'\\' => out.push('\\'),
                        b'"' => out.push('"'),
                        b'\'' => out.push('\''),
                        _ => {
                            // Unknown escape: keep it verbatim (pragma payloads are opaque).
                            out.push('\\');
                            self.pos += 1;
                            chunk_start = self.pos;
                            continue;
                        }
                    }
                    self.pos += 2;
                    chunk_start = self.pos;
                }
                _ => self.pos += 1,
            }
        }
        None
    }

    /// Lex one token at `start`. Returns false on an error that ends tokenization.
    fn token(&mut self, start: usize) -> bool {
        let c = self.peek(0);
        match c {
            b'a'..=b'z' | b'_' => self.ident_or_keyword(start),
            b'A'..=b'Z' => {
                self.pos += 1;
                while is_ident_char(self.peek(0)) {
                    self.pos += 1;
                }
                let s = &self.text[start..self.pos];
                self.push(Tok::UIdent(s), start);
            }
            b'0'..=b'9' => self.number(start),
            b'\'' => {
                if self.peek(1).is_ascii_lowercase() || self.peek(1) == b'_' {
                    self.pos += 1;
                    while is_ident_char(self.peek(0)) {
                        self.pos += 1;
                    }
                    let s = &self.text[start + 1..self.pos];
                    self.push(Tok::TyVar(s), start);
                } else {
                    self.pos += 1;
                    self.error(
                        start,
                        self.pos,
                        "unexpected `'`",
                        "expected a type variable like `'a`",
                    );
                    self.push(Tok::Error, start);
                }
            }
            b'"' => match self.scan_string() {
                Some(s) => self.push(Tok::Str(s), start),
                None => {
                    self.diags.push(
                        Diagnostic::error(
                            self.span(start, start + 1),
                            "unterminated string literal",
                        )
                        .with_label("this string is never closed"),
                    );
                    return false;
                }
            },
            b'[' => return self.bracket(start),
            _ => self.punct(start),
        }
        true
    }

    fn ident_or_keyword(&mut self, start: usize) {
        self.pos += 1;
        while is_ident_char(self.peek(0)) {
            self.pos += 1;
        }
        let s = &self.text[start..self.pos];
        if s == "_" {
            self.push(Tok::Underscore, start);
            return;
        }
        if s == "let" && self.peek(0) == b'%' && is_attr_name_char(self.peek(1)) {
            self.pos += 1;
            let name_start = self.pos;
            while is_attr_name_char(self.peek(0)) {
                self.pos += 1;
            }
            let name = &self.text[name_start..self.pos];
            self.push(Tok::LetExt(name), start);
            return;
        }
        let tok = keyword(s).unwrap_or(Tok::Ident(s));
        self.push(tok, start);
    }

    fn number(&mut self, start: usize) {
        let radix = match (self.peek(0), self.peek(1)) {
            (b'0', b'x' | b'X') => 16,
            (b'0', b'o' | b'O') => 8,
            (b'0', b'b' | b'B') => 2,
            _ => 10,
        };
        let mut is_float = false;
        if radix != 10 {
            self.pos += 2;
            while self.peek(0).is_ascii_hexdigit() || self.peek(0) == b'_' {
                self.pos += 1;
            }
            // OCaml's hexadecimal floats: `0x1.8p3`, `0x1p-149`, `0xA.` (a `.` or an
            // exponent `p`/`P`, in powers of two, makes the literal a float).
            if radix == 16 {
                is_float = self.float_tail(u8::is_ascii_hexdigit, [b'p', b'P']);
            }
        } else {
            while self.peek(0).is_ascii_digit() || self.peek(0) == b'_' {
                self.pos += 1;
            }
            is_float = self.float_tail(u8::is_ascii_digit, [b'e', b'E']);
        }
        let body_end = self.pos;
        // Suffix: any identifier characters glued to the literal.
        while is_ident_char(self.peek(0)) {
            self.pos += 1;
        }
        let suffix = &self.text[body_end..self.pos];
        // Borrowed unless it has `_` separators to drop (one allocation per literal otherwise).
        let text = &self.text[start..body_end];
        let body: std::borrow::Cow<'_, str> = if text.contains('_') {
            text.chars()
                .filter(|&c| c != '_')
                .collect::<String>()
                .into()
        } else {
            text.into()
        };
        let bad = |lx: &mut Self, msg: String, label: &str| {
            lx.error(start, lx.pos, msg, label);
            lx.push(Tok::Error, start);
        };
        if is_float {
            let float64 = match suffix {
                "" => false,
                // `G` is upstream Sarek's spelling of a float64 literal.
                "d" | "G" => true,
                _ => {
                    return bad(
                        self,
                        format!("invalid suffix `{suffix}` on a float literal"),
                        "float literals take no suffix, or `d` or `G` (float64)",
                    );
                }
            };
            let value = if radix == 16 {
                hex_float(&body[2..])
            } else {
                body.parse::<f64>().ok()
            };
            match value {
                Some(value) => self.push(Tok::Float { value, float64 }, start),
                None => bad(self, "malformed float literal".to_string(), "here"),
            }
            return;
        }
        let int64 = match suffix {
            "" | "l" => false,
            "L" => true,
            "d" if radix == 10 => {
                // `1d` is an integral float64 literal.
                match body.parse::<f64>() {
                    Ok(value) => self.push(
                        Tok::Float {
                            value,
                            float64: true,
                        },
                        start,
                    ),
                    Err(_) => bad(self, "malformed float literal".to_string(), "here"),
                }
                return;
            }
            _ => {
                return bad(
                    self,
                    format!("invalid suffix `{suffix}` on an integer literal"),
                    "integer literals take no suffix, `l` (int32) or `L` (int64)",
                );
            }
        };
        let digits = if radix == 10 { &body[..] } else { &body[2..] };
        if digits.is_empty() {
            return bad(
                self,
                "integer literal has no digits".to_string(),
                "digits expected",
            );
        }
        match i128::from_str_radix(digits, radix) {
            Ok(value) if value <= u64::MAX as i128 => {
                // As in OCaml, a hexadecimal, octal or binary literal spells the bits of its
                // type (`0xFFFFFFFF` is -1 in int32); a decimal one must fit the signed range,
                // which the typer checks.
                let value = match (radix, int64) {
                    (10, _) => value,
                    (_, false) if value > i32::MAX as i128 && value <= u32::MAX as i128 => {
                        value - (1i128 << 32)
                    }
                    (_, true) if value > i64::MAX as i128 => value - (1i128 << 64),
                    _ => value,
                };
                self.push(Tok::Int { value, int64 }, start)
            }
            Ok(_) => bad(
                self,
                "integer literal is too large".to_string(),
                "does not fit in 64 bits",
            ),
            Err(_) => bad(
                self,
                "malformed integer literal".to_string(),
                "invalid digit for this base",
            ),
        }
    }

    /// `[`, `[@...]`, `[@@...]`, `[@@@...]`, `[%kernel`, `[%name ...]`.
    fn bracket(&mut self, start: usize) -> bool {
        // OCaml's floating attributes (`[@@@warning "-32"]`, at the top of upstream files)
        // attach to nothing: lexed like the others, then dropped.
        let floating = self.peek(1) == b'@' && self.peek(2) == b'@' && self.peek(3) == b'@';
        let (kind, skip) = match (self.peek(1), self.peek(2)) {
            (b'@', b'@') if floating => (Some(true), 4),
            (b'@', b'@') => (Some(true), 3),
            (b'@', _) => (Some(false), 2),
            (b'%', b'%') => {
                // `[%%name`: its payload is parsed as items (the parser reports unknown names).
                self.pos += 3;
                let name_start = self.pos;
                while is_attr_name_char(self.peek(0)) {
                    self.pos += 1;
                }
                let name = &self.text[name_start..self.pos];
                self.push(Tok::ItemExtOpen(name), start);
                return true;
            }
            (b'%', _) => (None, 2),
            _ => {
                self.pos += 1;
                self.push(Tok::LBracket, start);
                return true;
            }
        };
        self.pos += skip;
        while matches!(self.peek(0), b' ' | b'\t') {
            self.pos += 1;
        }
        let name_start = self.pos;
        while is_attr_name_char(self.peek(0)) {
            self.pos += 1;
        }
        let name = &self.text[name_start..self.pos];
        if name.is_empty() {
            let what = if kind.is_some() {
                "attribute"
            } else {
                "extension"
            };
            self.error(
                start,
                self.pos,
                format!("expected an {what} name"),
                "name missing here",
            );
            self.push(Tok::Error, start);
            return true;
        }
        if kind.is_none() && name == "kernel" {
            self.push(Tok::ExtOpen(name), start);
            return true;
        }
        // Raw payload up to the matching `]`, skipping nested brackets, strings and comments.
        let payload_start = self.pos;
        let mut depth = 0usize;
        loop {
            if self.pos >= self.src.len() {
                let what = if kind.is_some() {
                    "attribute"
                } else {
                    "extension node"
                };
                self.diags.push(
                    Diagnostic::error(self.span(start, name_start), format!("unclosed {what}"))
                        .with_label("this `[` is never closed by a `]`"),
                );
                return false;
            }
            match self.peek(0) {
                b'[' => {
                    depth += 1;
                    self.pos += 1;
                }
                b']' if depth == 0 => break,
                b']' => {
                    depth -= 1;
                    self.pos += 1;
                }
                b'"' => {
                    if self.scan_string().is_none() {
                        self.pos = self.src.len();
                    }
                }
                b'(' if self.peek(1) == b'*' => {
                    if !self.skip_comment() {
                        self.tokens.pop();
                        return false;
                    }
                }
                _ => self.pos += 1,
            }
        }
        let payload = self.text[payload_start..self.pos].trim();
        self.pos += 1;
        if floating {
            return true;
        }
        let tok = match kind {
            Some(outer) => Tok::Attr {
                name,
                payload,
                outer,
            },
            None => Tok::Extension { name, payload },
        };
        self.push(tok, start);
        true
    }

    fn punct(&mut self, start: usize) {
        let (c0, c1) = (self.peek(0), self.peek(1));
        let (tok, len) = match (c0, c1) {
            (b'(', _) => (Tok::LParen, 1),
            (b')', _) => (Tok::RParen, 1),
            (b']', _) => (Tok::RBracket, 1),
            (b'{', _) => (Tok::LBrace, 1),
            (b'}', _) => (Tok::RBrace, 1),
            (b',', _) => (Tok::Comma, 1),
            (b';', b';') => (Tok::SemiSemi, 2),
            (b';', _) => (Tok::Semi, 1),
            (b':', b'=') => (Tok::ColonEq, 2),
            (b':', _) => (Tok::Colon, 1),
            (b'<', b'-') => (Tok::LArrow, 2),
            (b'<', b'>') => (Tok::LtGt, 2),
            // Upstream Sarek's float comparisons `<.`, `<=.`, `>.`, `>=.` are the comparisons.
            (b'<', b'=') if self.src.get(start + 2) == Some(&b'.') => (Tok::Le, 3),
            (b'<', b'=') => (Tok::Le, 2),
            (b'<', b'.') => (Tok::Lt, 2),
            (b'<', _) => (Tok::Lt, 1),
            (b'>', b'=') if self.src.get(start + 2) == Some(&b'.') => (Tok::Ge, 3),
            (b'>', b'=') => (Tok::Ge, 2),
            (b'>', b'.') => (Tok::Gt, 2),
            (b'>', _) => (Tok::Gt, 1),
            (b'-', b'>') => (Tok::Arrow, 2),
            (b'-', b'.') => (Tok::MinusDot, 2),
            (b'~', b'-') if self.src.get(start + 2) == Some(&b'.') => (Tok::TildeMinusDot, 3),
            (b'~', b'-') => (Tok::TildeMinus, 2),
            (b'-', _) => (Tok::Minus, 1),
            (b'+', b'.') => (Tok::PlusDot, 2),
            (b'+', _) => (Tok::Plus, 1),
            (b'*', b'.') => (Tok::StarDot, 2),
            (b'*', b'*') => (Tok::StarStar, 2),
            (b'*', _) => (Tok::Star, 1),
            (b'/', b'.') => (Tok::SlashDot, 2),
            (b'/', _) => (Tok::Slash, 1),
            (b'|', b'|') => (Tok::OrOr, 2),
            (b'|', b'>') | (b'@', b'@') => {
                // OCaml's application operators: lexed as `|` then `>`, the parser saw a
                // finished statement followed by a stray `|` ("expected a new item").
                let op = &self.text[start..start + 2];
                self.error(
                    start,
                    start + 2,
                    format!("`{op}` is not a Sarek operator"),
                    "apply the function to its argument instead: `f x`",
                );
                self.pos += 2;
                self.push(Tok::Error, start);
                return;
            }
            (b'|', _) => (Tok::Bar, 1),
            (b'&', b'&') => (Tok::AndAnd, 2),
            (b'!', b'=') => (Tok::BangEq, 2),
            (b'!', _) => (Tok::Bang, 1),
            (b'=', b'=') => {
                // OCaml's physical equality: say so, and go on as if `=` was written.
                self.error(
                    start,
                    start + 2,
                    "`==` is not a Sarek operator",
                    "compare values with `=` (OCaml's `==` is physical equality)",
                );
                (Tok::Eq, 2)
            }
            (b'=', _) => (Tok::Eq, 1),
            (b'.', _) => (Tok::Dot, 1),
            _ => {
                // Report the whole (possibly multi-byte) character, and a run of invalid
                // characters as one error rather than one per character.
                let ch_len = self.text[start..].chars().next().map_or(1, char::len_utf8);
                self.pos += ch_len;
                if c0 != b'&' {
                    while self.pos < self.src.len() && !starts_token(self.src[self.pos]) {
                        self.pos += self.text[self.pos..]
                            .chars()
                            .next()
                            .map_or(1, char::len_utf8);
                    }
                }
                let shown = &self.text[start..self.pos];
                let msg = match c0 {
                    b'&' => "unexpected `&`: the boolean and is `&&`".to_string(),
                    _ if shown.chars().count() > 1 => {
                        format!("unexpected characters `{}`", shown.escape_debug())
                    }
                    _ => format!("unexpected character `{}`", shown.escape_debug()),
                };
                self.error(start, self.pos, msg, "not valid here");
                self.push(Tok::Error, start);
                return;
            }
        };
        self.pos += len;
        self.push(tok, start);
    }
}

/// The value of a hexadecimal float's digits after `0x` (`1.8p3`, `1p-149`, `A.`), correctly
/// rounded to float64 (round to nearest, ties to even, subnormals included); `None` if it has
/// no digit. The significand is kept in 128 bits; further digits only decide rounding.
fn hex_float(text: &str) -> Option<f64> {
    let (digits, exp) = match text.find(['p', 'P']) {
        Some(i) => (&text[..i], text[i + 1..].parse::<i64>().ok()?),
        None => (text, 0),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let mut m: u128 = 0;
    let mut e2: i64 = exp.clamp(-1 << 40, 1 << 40);
    let mut sticky = false;
    let mut any = false;
    for (i, c) in int.chars().chain(frac.chars()).enumerate() {
        let d = u128::from(c.to_digit(16)?);
        any = true;
        if m >> 120 == 0 {
            m = m << 4 | d;
            if i >= int.len() {
                e2 -= 4;
            }
        } else {
            sticky |= d != 0;
            if i < int.len() {
                e2 += 4;
            }
        }
    }
    if !any {
        return None;
    }
    if m == 0 {
        return Some(0.0);
    }
    // A dropped non-zero digit can only break a tie: make it a bit below every kept one.
    if sticky {
        m = m << 1 | 1;
        e2 -= 1;
    }
    let top = e2 + i64::from(127 - m.leading_zeros() as i32);
    if top > 1023 {
        return Some(f64::INFINITY);
    }
    if top < -1022 {
        // Subnormal (or zero): round m * 2^e2 to a multiple of 2^-1074 once.
        let shift = -1074 - e2;
        if shift > 127 {
            return Some(0.0);
        }
        if shift > 0 {
            let kept = m >> shift;
            let rest = m & ((1u128 << shift) - 1);
            let half = 1u128 << (shift - 1);
            m = if rest > half || rest == half && kept & 1 == 1 {
                kept + 1
            } else {
                kept
            };
            e2 = -1074;
        }
    }
    // `as` rounds to nearest even; scaling by powers of two is then exact.
    let mut v = m as f64;
    let mut e = e2;
    while e != 0 {
        let step = e.clamp(-1000, 1000);
        v *= 2f64.powi(step as i32);
        e -= step;
    }
    Some(v)
}

/// The length of the OCaml character literal at the start of `s` (`'"'`, `'\n'`,
/// `'\065'`, `'\x41'`, `'\o101'`), if it is one. Inside a comment OCaml skips a
/// character literal as a whole, so `(* the '"' character *)` is one comment; Sarek has no
/// character literals anywhere else.
fn char_literal_len(s: &[u8]) -> Option<usize> {
    let at = |i: usize| s.get(i).copied();
    let closes = |len: usize| (at(len - 1) == Some(b'\'')).then_some(len);
    match at(1)? {
        b'\\' => match at(2)? {
            b'\\' | b'"' | b'\'' | b'n' | b't' | b'b' | b'r' | b' ' => closes(4),
            b'x' if s.get(3..5)?.iter().all(u8::is_ascii_hexdigit) => closes(6),
            b'o' if s.get(3..6)?.iter().all(|b| (b'0'..=b'7').contains(b)) => closes(7),
            b'0'..=b'9' if s.get(3..5)?.iter().all(u8::is_ascii_digit) => closes(6),
            _ => None,
        },
        b'\'' | b'\n' | b'\r' => None,
        _ => closes(3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_floats_are_correctly_rounded() {
        // Against Python's float.fromhex.
        assert_eq!(hex_float("1.8p3"), Some(12.0));
        assert_eq!(hex_float("1p-1074"), Some(f64::from_bits(1)));
        assert_eq!(hex_float("1p-1075"), Some(0.0)); // a tie, to even (zero)
        assert_eq!(hex_float("3p-1076"), Some(f64::from_bits(1))); // 0.75 ulp rounds up
        assert_eq!(hex_float("1.00000000000008p0"), Some(1.0)); // tie, to even
        assert_eq!(
            hex_float("1.00000000000018p0"),
            Some(1.0 + 2.0 * f64::EPSILON)
        );
        assert_eq!(
            hex_float("1.00000000000008000000000000000001p0"),
            Some(1.0 + f64::EPSILON)
        );
        assert_eq!(hex_float("1p1024"), Some(f64::INFINITY));
        assert_eq!(hex_float("A."), Some(10.0));
        assert_eq!(hex_float(".8"), Some(0.5));
        assert_eq!(hex_float("p3"), None);
    }

    fn toks(s: &str) -> Vec<Tok<'_>> {
        let (t, d) = lex(FileId(0), s);
        assert!(d.is_empty(), "{d:?}");
        t.into_iter()
            .map(|t| t.tok)
            .filter(|t| *t != Tok::Eof)
            .collect()
    }

    #[test]
    fn literals() {
        assert_eq!(
            toks("1 1l 1L 0xff 1.5 1.5d 1e-3 1.0e10 2."),
            vec![
                Tok::Int {
                    value: 1,
                    int64: false
                },
                Tok::Int {
                    value: 1,
                    int64: false
                },
                Tok::Int {
                    value: 1,
                    int64: true
                },
                Tok::Int {
                    value: 255,
                    int64: false
                },
                Tok::Float {
                    value: 1.5,
                    float64: false
                },
                Tok::Float {
                    value: 1.5,
                    float64: true
                },
                Tok::Float {
                    value: 1e-3,
                    float64: false
                },
                Tok::Float {
                    value: 1e10,
                    float64: false
                },
                Tok::Float {
                    value: 2.0,
                    float64: false
                },
            ]
        );
    }

    #[test]
    fn character_literals_in_comments_are_skipped_whole() {
        // OCaml lexes a character literal inside a comment, so its quote opens no string.
        for src in [
            "(* '\"' *) x",
            "(* '\\\"' and '\\n' *) x",
            "(* '\\x22' '\\034' '\\o042' *) x",
            "(* don't *) x",
            "(* 'a' \"'\" *) x",
        ] {
            let (t, d) = lex(FileId(0), src);
            assert!(d.is_empty(), "{src}: {:?}", d[0].message);
            assert_eq!(t.len(), 2, "{src}");
        }
        // A quote that is not a character literal still opens a string, as in OCaml.
        let (_, d) = lex(FileId(0), "(* don't \" *) x");
        assert_eq!(d[0].message, "unterminated comment");
    }

    #[test]
    fn idents_and_comments() {
        assert_eq!(
            toks("x' _tmp (* a (* nested *) \"*)\" *) Std.x 'a _"),
            vec![
                Tok::Ident("x'"),
                Tok::Ident("_tmp"),
                Tok::UIdent("Std"),
                Tok::Dot,
                Tok::Ident("x"),
                Tok::TyVar("a"),
                Tok::Underscore,
            ]
        );
    }

    #[test]
    fn attributes_and_extensions() {
        assert_eq!(
            toks(
                "let%superstep[@divergent] [@@sarek.type] [@sarek.inline 10] [%native \"x[1]\"] [%kernel"
            ),
            vec![
                Tok::LetExt("superstep"),
                Tok::Attr {
                    name: "divergent",
                    payload: "",
                    outer: false
                },
                Tok::Attr {
                    name: "sarek.type",
                    payload: "",
                    outer: true
                },
                Tok::Attr {
                    name: "sarek.inline",
                    payload: "10",
                    outer: false
                },
                Tok::Extension {
                    name: "native",
                    payload: "\"x[1]\""
                },
                Tok::ExtOpen("kernel"),
            ]
        );
    }

    #[test]
    fn operators() {
        assert_eq!(
            toks("+. -. *. /. := <- <> != -> ;;"),
            vec![
                Tok::PlusDot,
                Tok::MinusDot,
                Tok::StarDot,
                Tok::SlashDot,
                Tok::ColonEq,
                Tok::LArrow,
                Tok::LtGt,
                Tok::BangEq,
                Tok::Arrow,
                Tok::SemiSemi,
            ]
        );
    }

    #[test]
    fn layout_columns() {
        let (t, _) = lex(FileId(0), "let x =\n\tf\n        a (* é *) b\n  c");
        let cols: Vec<(bool, u32)> = t.iter().map(|t| (t.first_on_line, t.col)).collect();
        // let x = / f / a b / c / Eof
        assert_eq!(
            &cols[..7],
            &[
                (true, 0),
                (false, 4),
                (false, 6),
                (true, 8),
                (true, 8),
                (false, 18),
                (true, 2)
            ]
        );
        assert!(t[0].line_start());
        assert!(!t[3].line_start());
    }

    #[test]
    fn errors_are_located() {
        let (t, d) = lex(FileId(0), "let x = 1 (* open");
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].message, "unterminated comment");
        assert_eq!(d[0].span.start, 10);
        assert!(t.iter().any(|t| t.tok == Tok::Error));
        let (_, d) = lex(FileId(0), "x $ y \"abc");
        assert_eq!(d.len(), 2);
        assert!(d[0].message.contains('$'));
        assert_eq!(d[1].message, "unterminated string literal");
    }
}
