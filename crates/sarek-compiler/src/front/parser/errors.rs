//! Syntax errors.
//!
//! The parsing functions describe an error with a small [`SyntaxError`] value and hand it to
//! one cold function that builds the [`Diagnostic`]. Keeping message formatting out of the
//! recursive functions keeps their stack frames small (debug builds give every temporary its
//! own slot), which is what lets deeply nested input reach the nesting limit safely.

use std::borrow::Cow;

use super::{Fail, MAX_CHAIN, MAX_DEPTH, Parser};
use crate::diag::{Diagnostic, Span, closest};
use crate::front::lexer::Tok;

pub(crate) enum SyntaxError {
    /// "expected WHAT, found <current token>" at the current token.
    Expected(Cow<'static, str>),
    /// The closing token of a bracketing construct is missing.
    Unclosed {
        close: &'static str,
        open_text: &'static str,
        open: Span,
    },
    AnonymousFunction,
    /// OCaml's `try e with ...`: Sarek has no exceptions.
    TryWith,
    /// `<-` whose left side is not `v.(i)` or `e.f`.
    AssignArrow {
        lhs: Span,
    },
    /// `:=` whose left side is not a variable.
    AssignColonEq {
        lhs: Span,
    },
    ConstructorArguments {
        ctor: String,
    },
    KernelExtensionInExpression {
        name: String,
    },
    StringExpression,
    RecordUpdate {
        span: Span,
    },
    EmptyRecord {
        span: Span,
    },
    MissingThen {
        if_span: Span,
    },
    MissingWith {
        match_span: Span,
    },
    MissingIn {
        let_span: Span,
    },
    MissingDo {
        what: &'static str,
    },
    LetRecWithoutFunction {
        span: Span,
    },
    SuperstepAttribute {
        name: String,
        span: Span,
    },
    KernelInExpression {
        span: Span,
    },
    UnknownLetExtension {
        name: String,
        span: Span,
    },
    PatternAnnotation,
    /// An item keyword in column 1 where an operand was expected.
    ItemKeywordAsOperand {
        after: Span,
    },
    OperandAfterPrefix {
        op: &'static str,
    },
    TypeExpectedFoundConstructor {
        name: String,
    },
    TooDeep,
    /// A chain of `let`s or of a left-associative operator longer than `MAX_CHAIN`.
    ChainTooLong,
}

impl<'src> Parser<'src> {
    /// Record the diagnostic for `e` (unless the current token is a lexer error, which was
    /// reported already) and return the failure marker.
    #[cold]
    #[inline(never)]
    pub(crate) fn fail(&mut self, e: SyntaxError) -> Fail {
        if matches!(e, SyntaxError::TooDeep | SyntaxError::ChainTooLong) {
            // Reported once; parsing stops (`fatal`), even on a lexer error token.
            if self.fatal {
                return Fail;
            }
            self.fatal = true;
        } else if *self.peek() == Tok::Error {
            return Fail;
        }
        let d = self.diagnostic(e);
        self.diags.push(d);
        Fail
    }

    fn diagnostic(&self, e: SyntaxError) -> Diagnostic {
        let here = self.span();
        let found = self.peek().describe();
        match e {
            SyntaxError::Expected(what) => {
                Diagnostic::error(here, format!("expected {what}, found {found}"))
                    .with_label(format!("expected {what}"))
            }
            SyntaxError::Unclosed {
                close,
                open_text,
                open,
            } => {
                let msg = if *self.peek() == Tok::Eof {
                    format!("unclosed `{open_text}`: expected `{close}` before the end of the file")
                } else {
                    format!("expected `{close}` to close `{open_text}`, found {found}")
                };
                Diagnostic::error(here, msg)
                    .with_label(format!("expected `{close}`"))
                    .with_secondary(open, format!("unclosed `{open_text}` opened here"))
            }
            SyntaxError::AnonymousFunction => {
                Diagnostic::error(here, "anonymous functions are not supported")
                    .with_label("functions are defined with `let`")
                    .with_help("define a helper with `let f (x : t) = ... in`")
                    .with_note(
                        "`fun` and `function` only appear as the value of a `let` \
                         (`let f = fun x -> ...`) or in `[%kernel fun ... -> ...]`",
                    )
            }
            SyntaxError::TryWith => Diagnostic::error(here, "`try ... with` is not supported")
                .with_label("Sarek kernels have no exceptions")
                .with_help("test the condition first: `if i < length v then ... else ...`"),
            SyntaxError::AssignArrow { lhs } => {
                Diagnostic::error(lhs, "cannot assign to this expression with `<-`")
                    .with_label("`<-` writes an element `v.(i)` or a field `e.x`")
                    .with_help("a `let mut` local is assigned with `x := e`")
            }
            SyntaxError::AssignColonEq { lhs } => {
                Diagnostic::error(lhs, "cannot assign to this expression with `:=`")
                    .with_label("`:=` assigns a `let mut` local variable")
                    .with_help("write elements with `v.(i) <- e` and fields with `e.x <- e`")
            }
            SyntaxError::ConstructorArguments { ctor } => {
                Diagnostic::error(here, "too many arguments for a constructor")
                    .with_label("unexpected argument")
                    .with_help(format!(
                        "pass several arguments as a tuple: `{ctor} (a, b)`"
                    ))
            }
            SyntaxError::KernelExtensionInExpression { name } => Diagnostic::error(
                here,
                format!("`[%{name} ...]` is only allowed as the value of a top-level `let`"),
            )
            .with_label("not allowed inside an expression")
            .with_help(format!(
                "write `let name = [%{name} fun (p : t) -> ...]` at top level"
            )),
            SyntaxError::StringExpression => Diagnostic::error(
                here,
                "string literals are only allowed in `pragma [\"...\"]`",
            )
            .with_label("unexpected string"),
            SyntaxError::RecordUpdate { span } => {
                Diagnostic::error(span, "record update `{ e with ... }` is not supported")
                    .with_label("write a new record literal with every field")
            }
            SyntaxError::EmptyRecord { span } => Diagnostic::error(span, "empty record literal")
                .with_label("a record needs its fields"),
            SyntaxError::MissingThen { if_span } => Diagnostic::error(
                here,
                format!("expected `then` after the condition, found {found}"),
            )
            .with_label("expected `then`")
            .with_secondary(if_span, "this `if` has no `then`"),
            SyntaxError::MissingWith { match_span } => Diagnostic::error(
                here,
                format!("expected `with` after the matched expression, found {found}"),
            )
            .with_label("expected `with`")
            .with_secondary(match_span, "this `match` has no `with`"),
            SyntaxError::MissingIn { let_span } => {
                let mut d = Diagnostic::error(
                    here,
                    format!("expected `in` after let binding, found {found}"),
                )
                .with_label("expected `in`")
                .with_secondary(let_span, "this `let` needs an `in`");
                // `e;` right before a top-level item makes the item part of `e`'s sequence.
                let k = self.toks.partition_point(|t| t.span.start < let_span.start);
                let after_semi =
                    k > 0 && self.toks[k].line_start() && self.toks[k - 1].tok == Tok::Semi;
                if after_semi {
                    d = d
                        .with_secondary(
                            self.toks[k - 1].span,
                            "this `;` makes the `let` below part of this expression",
                        )
                        .with_help(
                            "if this `let` starts a new top-level item, remove the `;` before it",
                        );
                } else if matches!(
                    self.peek(),
                    Tok::Let | Tok::LetExt(_) | Tok::Type | Tok::Eof
                ) {
                    d = d.with_note(
                        "a local binding is `let x = e in body`; top-level items cannot be nested",
                    );
                } else if self.toks[self.pos].first_on_line {
                    d = d.with_help("add `in` at the end of the previous line");
                }
                d
            }
            SyntaxError::MissingDo { what } => {
                Diagnostic::error(here, format!("expected `do` after {what}, found {found}"))
                    .with_label("expected `do`")
            }
            SyntaxError::LetRecWithoutFunction { span } => {
                Diagnostic::error(span, "`let rec` defines a function")
                    .with_label("expected a function name and parameters")
                    .with_help("write `let rec f (x : t) = ... in`")
            }
            SyntaxError::SuperstepAttribute { name, span } => {
                Diagnostic::error(span, format!("unknown superstep attribute `{name}`"))
                    .with_label("only `[@divergent]` is allowed here")
            }
            SyntaxError::KernelInExpression { span } => {
                Diagnostic::error(span, "`let%kernel` inside an expression")
                    .with_label("kernels are top-level items")
                    .with_note("is an `in` missing, or a kernel body not finished?")
            }
            SyntaxError::UnknownLetExtension { name, span } => {
                let mut d = Diagnostic::error(span, format!("unknown extension `let%{name}`"))
                    .with_label("expected `let%shared` or `let%superstep`");
                if let Some(s) = closest(&name, ["shared", "superstep"]) {
                    d = d.with_help(format!("did you mean `let%{s}`?"));
                }
                d
            }
            SyntaxError::PatternAnnotation => {
                Diagnostic::error(here, "type annotations inside patterns are not supported")
                    .with_label("annotate the matched expression instead: `(e : t)`")
            }
            SyntaxError::ItemKeywordAsOperand { after } => {
                Diagnostic::error(here, format!("expected an expression, found {found}"))
                    .with_label("this starts a new top-level item")
                    .with_secondary(after, "an expression is missing after this")
            }
            SyntaxError::OperandAfterPrefix { op } => Diagnostic::error(
                here,
                format!("expected an operand after `{op}`, found {found}"),
            )
            .with_label("expected an operand"),
            SyntaxError::TypeExpectedFoundConstructor { name } => Diagnostic::error(
                here,
                format!("expected a type, found constructor or module `{name}`"),
            )
            .with_label("type names are lowercase"),
            SyntaxError::TooDeep => Diagnostic::error(here, "expression nested too deeply")
                .with_label(format!("more than {MAX_DEPTH} levels of nesting"))
                .with_help("split the expression with `let` bindings or helper functions"),
            SyntaxError::ChainTooLong => {
                Diagnostic::error(here, "chain of `let`s or operators too long")
                    .with_label(format!("more than {MAX_CHAIN} in a row"))
                    .with_help("split the kernel into helper functions")
            }
        }
    }
}

/// An expression taller than `MAX_HEIGHT` once its chains are counted.
pub(super) fn too_tall(at: Span) -> Diagnostic {
    Diagnostic::error(at, "expression nested too deeply")
        .with_label(format!(
            "more than {} levels of nesting, chains of `let`s and operators included",
            super::MAX_HEIGHT
        ))
        .with_help("split the expression with `let` bindings or helper functions")
}
