//! Expressions and patterns.
//!
//! Levels, loosest first (OCaml's table, restricted to Sarek's operators):
//!
//! | level | forms | assoc |
//! | --- | --- | --- |
//! | [`Parser::seq_expr`] | `e1; e2` | right (kept flat) |
//! | [`Parser::expr`] | `let`, `match`, `if`, `pragma` (extend as far right as possible) | |
//! | [`Parser::assign_expr`] | `<-` `:=` | right |
//! | [`Parser::tuple_expr`] | `,` | flat |
//! | [`binop`] 1 | `\|\|` | right |
//! | 2 | `&&` | right |
//! | 3 | `= <> != < <= > >=` | left |
//! | 4 | `+ - +. -.` | left |
//! | 5 | `* / *. /. mod land lor lxor` | left |
//! | 6 | `lsl lsr asr` | right |
//! | [`Parser::unary`] | `-` `-.` (folded into literals) | |
//! | [`Parser::app`] | application, constructor application, `not`, `lnot` | left |
//! | [`Parser::postfix`] | `.(i)`, `.field`, `[@attr]` | left |

use super::{Fail, PResult, Parser};
use crate::diag::{Diagnostic, Span, closest};
use crate::front::ast::*;
use crate::front::lexer::Tok;

/// Binary operator of a token: (operator, precedence, right-associative).
fn binop(t: &Tok) -> Option<(BinaryOp, u8, bool)> {
    use BinaryOp as B;
    Some(match t {
        Tok::OrOr => (B::Or, 1, true),
        Tok::AndAnd => (B::And, 2, true),
        Tok::Eq => (B::Eq, 3, false),
        Tok::LtGt | Tok::BangEq => (B::Ne, 3, false),
        Tok::Lt => (B::Lt, 3, false),
        Tok::Le => (B::Le, 3, false),
        Tok::Gt => (B::Gt, 3, false),
        Tok::Ge => (B::Ge, 3, false),
        Tok::Plus => (B::Add, 4, false),
        Tok::Minus => (B::Sub, 4, false),
        Tok::PlusDot => (B::AddF, 4, false),
        Tok::MinusDot => (B::SubF, 4, false),
        Tok::Star => (B::Mul, 5, false),
        Tok::Slash => (B::Div, 5, false),
        Tok::StarDot => (B::MulF, 5, false),
        Tok::SlashDot => (B::DivF, 5, false),
        Tok::Mod => (B::Mod, 5, false),
        Tok::Land => (B::Land, 5, false),
        Tok::Lor => (B::Lor, 5, false),
        Tok::Lxor => (B::Lxor, 5, false),
        Tok::Lsl => (B::Lsl, 6, true),
        Tok::Lsr => (B::Lsr, 6, true),
        Tok::Asr => (B::Asr, 6, true),
        _ => return None,
    })
}

/// Can this token start an application argument (a "simple expression")?
fn starts_arg(t: &Tok) -> bool {
    matches!(
        t,
        Tok::Ident(_)
            | Tok::UIdent(_)
            | Tok::Int { .. }
            | Tok::Float { .. }
            | Tok::True
            | Tok::False
            | Tok::LParen
            | Tok::LBrace
            | Tok::Begin
            | Tok::Extension { .. }
    )
}

/// Can this token start an expression?
fn starts_expr(t: &Tok) -> bool {
    starts_arg(t)
        || matches!(
            t,
            Tok::Minus
                | Tok::MinusDot
                | Tok::Let
                | Tok::LetExt(_)
                | Tok::If
                | Tok::Match
                | Tok::For
                | Tok::While
                | Tok::Not
                | Tok::Lnot
                | Tok::Fun
                | Tok::Function
                | Tok::ExtOpen(_)
                | Tok::Str(_)
        )
}

fn starts_simple_pattern(t: &Tok) -> bool {
    matches!(
        t,
        Tok::Underscore
            | Tok::Ident(_)
            | Tok::UIdent(_)
            | Tok::Int { .. }
            | Tok::Float { .. }
            | Tok::True
            | Tok::False
            | Tok::LParen
    )
}

fn mk(kind: ExprKind, span: Span) -> Expr {
    Expr { kind, span }
}

impl Parser {
    /// `e1; e2; ...` with an optional trailing `;`.
    pub(super) fn seq_expr(&mut self) -> PResult<Expr> {
        let first = self.expr()?;
        if !self.at(&Tok::Semi) {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat(&Tok::Semi) {
            if !starts_expr(self.peek()) {
                break;
            }
            items.push(self.expr()?);
        }
        if items.len() == 1 {
            return Ok(items.pop().expect("one item"));
        }
        let span = items[0].span.to(items[items.len() - 1].span);
        Ok(mk(ExprKind::Seq(items), span))
    }

    /// An expression without a top-level `;`.
    pub(super) fn expr(&mut self) -> PResult<Expr> {
        self.nested(|p| match p.peek() {
            Tok::Let => p.let_expr(),
            Tok::LetExt(_) => p.let_ext_expr(),
            Tok::If => p.if_expr(),
            Tok::Match => p.match_expr(),
            Tok::Fun | Tok::Function => {
                let d = Diagnostic::error(p.span(), "anonymous functions are not supported")
                    .with_label("functions are defined with `let`")
                    .with_help("define a helper: `let f (x : t) = ... in`; `fun` only appears in `[%kernel fun ... -> ...]`");
                Err(p.report(d))
            }
            Tok::Ident(n) if n == "pragma" && *p.peek_at(1) == Tok::LBracket => p.pragma_expr(),
            _ => p.assign_expr(),
        })
    }

    /// `lhs <- e`, `x := e` or a tuple expression.
    pub(super) fn assign_expr(&mut self) -> PResult<Expr> {
        let lhs = self.tuple_expr()?;
        match self.peek() {
            Tok::LArrow => {
                self.bump();
                let value = Box::new(self.expr()?);
                let span = lhs.span.to(value.span);
                match lhs.kind {
                    ExprKind::Index { base, index } => {
                        Ok(mk(ExprKind::IndexSet { base, index, value }, span))
                    }
                    ExprKind::Field { base, field } => {
                        Ok(mk(ExprKind::FieldSet { base, field, value }, span))
                    }
                    _ => {
                        let d = Diagnostic::error(
                            lhs.span,
                            "cannot assign to this expression with `<-`",
                        )
                        .with_label("`<-` writes an element `v.(i)` or a field `e.x`")
                        .with_help("a `let mut` local is assigned with `x := e`");
                        self.diags.push(d);
                        Err(Fail)
                    }
                }
            }
            Tok::ColonEq => {
                self.bump();
                let value = Box::new(self.expr()?);
                let span = lhs.span.to(value.span);
                match lhs.kind {
                    ExprKind::Var { path, name } if path.is_empty() => Ok(mk(
                        ExprKind::Assign {
                            target: name,
                            value,
                        },
                        span,
                    )),
                    _ => {
                        let d = Diagnostic::error(
                            lhs.span,
                            "cannot assign to this expression with `:=`",
                        )
                        .with_label("`:=` assigns a `let mut` local variable")
                        .with_help("write elements with `v.(i) <- e` and fields with `e.x <- e`");
                        self.diags.push(d);
                        Err(Fail)
                    }
                }
            }
            _ => Ok(lhs),
        }
    }

    /// `e1, e2, ...`
    fn tuple_expr(&mut self) -> PResult<Expr> {
        let first = self.binary(0)?;
        if !self.at(&Tok::Comma) {
            return Ok(first);
        }
        let mut elems = vec![first];
        while self.eat(&Tok::Comma) {
            elems.push(self.binary(0)?);
        }
        let span = elems[0].span.to(elems[elems.len() - 1].span);
        Ok(mk(ExprKind::Tuple(elems), span))
    }

    /// Precedence climbing over the binary operators at or above `min_prec`.
    fn binary(&mut self, min_prec: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        let mut chain = 0;
        while let Some((op, prec, right)) = binop(self.peek()) {
            if prec < min_prec {
                break;
            }
            self.bump();
            let rhs = if right {
                self.nested(|p| p.binary(prec))?
            } else {
                self.binary(prec + 1)?
            };
            // A left-nested chain deepens the AST without recursing here.
            chain += 1;
            self.check_depth(chain)?;
            let span = lhs.span.to(rhs.span);
            lhs = mk(
                ExprKind::Binary {
                    op,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
                span,
            );
        }
        Ok(lhs)
    }

    /// Prefix minus (folded into numeric literals) and the prefix forms usable as operands.
    fn unary(&mut self) -> PResult<Expr> {
        match self.peek() {
            Tok::Minus | Tok::MinusDot => {
                let float_minus = *self.peek() == Tok::MinusDot;
                let op_span = self.bump().span;
                let operand = self.nested(|p| p.unary())?;
                let span = op_span.to(operand.span);
                let folded = match (&operand.kind, float_minus) {
                    (ExprKind::Lit(Lit::Int(v)), false) => Some(Lit::Int(-v)),
                    (ExprKind::Lit(Lit::Int64(v)), false) => Some(Lit::Int64(-v)),
                    (ExprKind::Lit(Lit::Float(v)), _) => Some(Lit::Float(-v)),
                    (ExprKind::Lit(Lit::Float64(v)), _) => Some(Lit::Float64(-v)),
                    _ => None,
                };
                if let Some(lit) = folded {
                    return Ok(mk(ExprKind::Lit(lit), span));
                }
                let op = if float_minus {
                    UnaryOp::NegF
                } else {
                    UnaryOp::Neg
                };
                Ok(mk(
                    ExprKind::Unary {
                        op,
                        operand: Box::new(operand),
                    },
                    span,
                ))
            }
            Tok::Let | Tok::LetExt(_) | Tok::If | Tok::Match | Tok::Fun | Tok::Function => {
                self.expr()
            }
            Tok::Ident(n) if n == "pragma" && *self.peek_at(1) == Tok::LBracket => self.expr(),
            _ => self.app(),
        }
    }

    /// Application by juxtaposition, constructor application, `not e`, `lnot e`.
    fn app(&mut self) -> PResult<Expr> {
        let head = match self.peek() {
            Tok::Not | Tok::Lnot => {
                let op = if *self.peek() == Tok::Not {
                    UnaryOp::Not
                } else {
                    UnaryOp::Lnot
                };
                let op_span = self.bump().span;
                if !starts_arg(self.peek()) {
                    return Err(self.expected(&format!(
                        "an operand after `{}`",
                        if op == UnaryOp::Not { "not" } else { "lnot" }
                    )));
                }
                let operand = self.nested(|p| p.postfix())?;
                let span = op_span.to(operand.span);
                mk(
                    ExprKind::Unary {
                        op,
                        operand: Box::new(operand),
                    },
                    span,
                )
            }
            Tok::UIdent(_) => {
                let head = self.postfix()?;
                if let ExprKind::Ctor { name, args } = &head.kind
                    && args.is_empty()
                    && starts_arg(self.peek())
                {
                    let arg = self.nested(|p| p.postfix())?;
                    let span = head.span.to(arg.span);
                    let args = match arg.kind {
                        // `C (a, b)`: the components are the constructor's arguments.
                        ExprKind::Tuple(elems) => elems,
                        _ => vec![arg],
                    };
                    let e = mk(
                        ExprKind::Ctor {
                            name: name.clone(),
                            args,
                        },
                        span,
                    );
                    if starts_arg(self.peek()) {
                        let d =
                            Diagnostic::error(self.span(), "too many arguments for a constructor")
                                .with_label("unexpected argument")
                                .with_help(format!(
                                    "pass several arguments as a tuple: `{} (a, b)`",
                                    name.name
                                ));
                        return Err(self.report(d));
                    }
                    return Ok(e);
                }
                head
            }
            _ => self.postfix()?,
        };
        if !starts_arg(self.peek()) {
            return Ok(head);
        }
        let mut args = Vec::new();
        while starts_arg(self.peek()) {
            args.push(self.nested(|p| p.postfix())?);
        }
        let span = head.span.to(args[args.len() - 1].span);
        Ok(mk(
            ExprKind::App {
                func: Box::new(head),
                args,
            },
            span,
        ))
    }

    /// A primary followed by `.(i)`, `.field` and `[@attr]` postfixes.
    fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        let mut chain = 0;
        loop {
            match self.peek() {
                Tok::Dot => match self.peek_at(1).clone() {
                    Tok::LParen => {
                        self.bump();
                        let open = self.bump().span;
                        let index = self.nested(|p| p.seq_expr())?;
                        let close = self.expect_closing(&Tok::RParen, ".(", open)?;
                        let span = e.span.to(close);
                        e = mk(
                            ExprKind::Index {
                                base: Box::new(e),
                                index: Box::new(index),
                            },
                            span,
                        );
                    }
                    Tok::Ident(name) => {
                        self.bump();
                        let field = Ident {
                            name,
                            span: self.bump().span,
                        };
                        let span = e.span.to(field.span);
                        e = mk(
                            ExprKind::Field {
                                base: Box::new(e),
                                field,
                            },
                            span,
                        );
                    }
                    _ => {
                        self.bump();
                        return Err(self.expected("a field name or `(` after `.`"));
                    }
                },
                Tok::Attr { outer: false, .. } => {
                    let attrs = self.inner_attributes();
                    let span = e.span.to(self.prev_span());
                    e = match e.kind {
                        ExprKind::For {
                            var,
                            start,
                            end,
                            downto,
                            body,
                            attrs: mut a,
                        } => {
                            a.extend(attrs);
                            mk(
                                ExprKind::For {
                                    var,
                                    start,
                                    end,
                                    downto,
                                    body,
                                    attrs: a,
                                },
                                span,
                            )
                        }
                        ExprKind::While {
                            cond,
                            body,
                            attrs: mut a,
                        } => {
                            a.extend(attrs);
                            mk(
                                ExprKind::While {
                                    cond,
                                    body,
                                    attrs: a,
                                },
                                span,
                            )
                        }
                        ExprKind::Attributed { expr, attrs: mut a } => {
                            a.extend(attrs);
                            mk(ExprKind::Attributed { expr, attrs: a }, span)
                        }
                        kind => mk(
                            ExprKind::Attributed {
                                expr: Box::new(mk(kind, e.span)),
                                attrs,
                            },
                            span,
                        ),
                    };
                }
                _ => return Ok(e),
            }
            chain += 1;
            self.check_depth(chain)?;
        }
    }

    fn primary(&mut self) -> PResult<Expr> {
        let span = self.span();
        match self.peek().clone() {
            Tok::Int { value, int64 } => {
                self.bump();
                Ok(mk(
                    ExprKind::Lit(if int64 {
                        Lit::Int64(value)
                    } else {
                        Lit::Int(value)
                    }),
                    span,
                ))
            }
            Tok::Float { value, float64 } => {
                self.bump();
                Ok(mk(
                    ExprKind::Lit(if float64 {
                        Lit::Float64(value)
                    } else {
                        Lit::Float(value)
                    }),
                    span,
                ))
            }
            Tok::True | Tok::False => {
                let b = self.bump().tok == Tok::True;
                Ok(mk(ExprKind::Lit(Lit::Bool(b)), span))
            }
            Tok::Ident(name) => {
                self.bump();
                Ok(mk(
                    ExprKind::Var {
                        path: Vec::new(),
                        name: Ident { name, span },
                    },
                    span,
                ))
            }
            Tok::UIdent(_) => self.upper_path(),
            Tok::LParen => {
                let open = self.bump().span;
                if self.at(&Tok::RParen) {
                    let close = self.bump().span;
                    return Ok(mk(ExprKind::Lit(Lit::Unit), open.to(close)));
                }
                let inner = self.nested(|p| p.seq_expr())?;
                if self.eat(&Tok::Colon) {
                    let ty = self.type_expr()?;
                    let close = self.expect_closing(&Tok::RParen, "(", open)?;
                    return Ok(mk(
                        ExprKind::Annot {
                            expr: Box::new(inner),
                            ty,
                        },
                        open.to(close),
                    ));
                }
                let close = self.expect_closing(&Tok::RParen, "(", open)?;
                Ok(Expr {
                    span: open.to(close),
                    ..inner
                })
            }
            Tok::Begin => {
                let open = self.bump().span;
                if self.at(&Tok::End) {
                    let close = self.bump().span;
                    return Ok(mk(ExprKind::Lit(Lit::Unit), open.to(close)));
                }
                let inner = self.nested(|p| p.seq_expr())?;
                let close = self.expect_closing(&Tok::End, "begin", open)?;
                Ok(Expr {
                    span: open.to(close),
                    ..inner
                })
            }
            Tok::LBrace => self.record_expr(),
            Tok::For => self.for_expr(),
            Tok::While => self.while_expr(),
            Tok::Extension { name, .. } => {
                self.bump();
                Ok(mk(ExprKind::Extension { name }, span))
            }
            Tok::ExtOpen(name) => {
                let d = Diagnostic::error(
                    span,
                    format!("`[%{name} ...]` is only allowed as the value of a top-level `let`"),
                )
                .with_label("not allowed inside an expression")
                .with_help(format!(
                    "write `let name = [%{name} fun (p : t) -> ...]` at top level"
                ));
                Err(self.report(d))
            }
            Tok::Str(_) => {
                let d = Diagnostic::error(
                    span,
                    "string literals are only allowed in `pragma [\"...\"]`",
                )
                .with_label("unexpected string");
                Err(self.report(d))
            }
            _ => Err(self.expected("an expression")),
        }
    }

    /// `C`, `M.x`, `M.N.x`, `M.C`, `M.(e)` (local open).
    fn upper_path(&mut self) -> PResult<Expr> {
        let mut path: Vec<Ident> = Vec::new();
        loop {
            let Tok::UIdent(name) = self.peek().clone() else {
                return Err(self.expected("a module or constructor name"));
            };
            let id = Ident {
                name,
                span: self.bump().span,
            };
            if !self.at(&Tok::Dot) {
                // A constructor (module qualification of constructors is dropped).
                return Ok(mk(
                    ExprKind::Ctor {
                        name: id.clone(),
                        args: Vec::new(),
                    },
                    id.span,
                ));
            }
            match self.peek_at(1).clone() {
                Tok::Ident(name) => {
                    self.bump();
                    let start = path.first().map_or(id.span, |p| p.span);
                    path.push(id);
                    let name = Ident {
                        name,
                        span: self.bump().span,
                    };
                    let span = start.to(name.span);
                    return Ok(mk(ExprKind::Var { path, name }, span));
                }
                Tok::UIdent(_) => {
                    self.bump();
                    path.push(id);
                }
                Tok::LParen => {
                    // `M.(e)` is `let open M in e`.
                    self.bump();
                    let open = self.bump().span;
                    let body = self.nested(|p| p.seq_expr())?;
                    let close = self.expect_closing(&Tok::RParen, ".(", open)?;
                    let span = id.span.to(close);
                    return Ok(mk(
                        ExprKind::LetOpen {
                            module: id,
                            body: Box::new(body),
                        },
                        span,
                    ));
                }
                _ => {
                    return Ok(mk(
                        ExprKind::Ctor {
                            name: id.clone(),
                            args: Vec::new(),
                        },
                        id.span,
                    ));
                }
            }
        }
    }

    /// `{ f = e; g = e; ... }` (and punned `{ f; g }`).
    fn record_expr(&mut self) -> PResult<Expr> {
        let open = self.bump().span;
        let mut fields: Vec<(Ident, Expr)> = Vec::new();
        loop {
            if self.at(&Tok::RBrace) {
                break;
            }
            if !fields.is_empty()
                || matches!(self.peek(), Tok::Ident(_)) && *self.peek_at(1) != Tok::With
            {
                let name = self.lident("a field name")?;
                let value = if self.eat(&Tok::Eq) {
                    self.expr()?
                } else {
                    mk(
                        ExprKind::Var {
                            path: Vec::new(),
                            name: name.clone(),
                        },
                        name.span,
                    )
                };
                fields.push((name, value));
                if !self.eat(&Tok::Semi) {
                    break;
                }
            } else {
                // `{ e with ... }` or garbage.
                let e = self.nested(|p| p.binary(0))?;
                if self.at(&Tok::With) {
                    let d = Diagnostic::error(
                        e.span.to(self.span()),
                        "record update `{ e with ... }` is not supported",
                    )
                    .with_label("copy the record into a new literal with every field");
                    return Err(self.report(d));
                }
                return Err(self.expected("a field name"));
            }
        }
        let close = self.expect_closing(&Tok::RBrace, "{", open)?;
        if fields.is_empty() {
            let d = Diagnostic::error(open.to(close), "empty record literal")
                .with_label("a record needs its fields");
            self.diags.push(d);
            return Err(Fail);
        }
        Ok(mk(ExprKind::Record(fields), open.to(close)))
    }

    fn for_expr(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        let var = self.lident("a loop variable after `for`")?;
        self.expect(&Tok::Eq)?;
        let from = self.seq_expr()?;
        let downto = match self.peek() {
            Tok::To => false,
            Tok::Downto => true,
            _ => return Err(self.expected("`to` or `downto`")),
        };
        self.bump();
        let to = self.seq_expr()?;
        if !self.at(&Tok::Do) {
            return Err(self.expected("`do` after the loop bounds"));
        }
        let do_span = self.bump().span;
        let body = self.loop_body()?;
        let close = self.expect_closing(&Tok::Done, "do", do_span)?;
        Ok(mk(
            ExprKind::For {
                var,
                start: Box::new(from),
                end: Box::new(to),
                downto,
                body: Box::new(body),
                attrs: Vec::new(),
            },
            start.to(close),
        ))
    }

    fn while_expr(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        let cond = self.seq_expr()?;
        if !self.at(&Tok::Do) {
            return Err(self.expected("`do` after the loop condition"));
        }
        let do_span = self.bump().span;
        let body = self.loop_body()?;
        let close = self.expect_closing(&Tok::Done, "do", do_span)?;
        Ok(mk(
            ExprKind::While {
                cond: Box::new(cond),
                body: Box::new(body),
                attrs: Vec::new(),
            },
            start.to(close),
        ))
    }

    /// A loop body; `do done` is an empty (unit) body.
    fn loop_body(&mut self) -> PResult<Expr> {
        if self.at(&Tok::Done) {
            return Ok(mk(ExprKind::Lit(Lit::Unit), self.span()));
        }
        self.nested(|p| p.seq_expr())
    }

    fn if_expr(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        let cond = self.seq_expr()?;
        if !self.at(&Tok::Then) {
            let found = self.peek().describe();
            let d = Diagnostic::error(
                self.span(),
                format!("expected `then` after the condition, found {found}"),
            )
            .with_label("expected `then`")
            .with_secondary(start, "this `if` has no `then`");
            return Err(self.report(d));
        }
        self.bump();
        let then_branch = self.expr()?;
        let else_branch = if self.eat(&Tok::Else) {
            Some(Box::new(self.expr()?))
        } else {
            None
        };
        let end = else_branch.as_ref().map_or(then_branch.span, |e| e.span);
        Ok(mk(
            ExprKind::If {
                cond: Box::new(cond),
                then_branch: Box::new(then_branch),
                else_branch,
            },
            start.to(end),
        ))
    }

    fn match_expr(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        let scrutinee = self.seq_expr()?;
        if !self.at(&Tok::With) {
            let found = self.peek().describe();
            let d = Diagnostic::error(
                self.span(),
                format!("expected `with` after the matched expression, found {found}"),
            )
            .with_label("expected `with`")
            .with_secondary(start, "this `match` has no `with`");
            return Err(self.report(d));
        }
        self.bump();
        self.eat(&Tok::Bar);
        let mut arms = Vec::new();
        loop {
            let pattern = self.pattern()?;
            if !self.at(&Tok::Arrow) {
                return Err(self.expected("`->` after the pattern"));
            }
            self.bump();
            let body = self.seq_expr()?;
            let span = pattern.span().to(body.span);
            arms.push(MatchArm {
                pattern,
                body,
                span,
            });
            if !self.eat(&Tok::Bar) {
                break;
            }
        }
        let end = arms[arms.len() - 1].span;
        Ok(mk(
            ExprKind::Match {
                scrutinee: Box::new(scrutinee),
                arms,
            },
            start.to(end),
        ))
    }

    /// `pragma ["a"; "b"] e`
    fn pragma_expr(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        let open = self.bump().span;
        let mut args = Vec::new();
        loop {
            match self.peek().clone() {
                Tok::Str(s) => {
                    self.bump();
                    args.push(s);
                }
                Tok::RBracket => break,
                _ => return Err(self.expected("a pragma string like \"unroll 4\"")),
            }
            if !self.eat(&Tok::Semi) {
                break;
            }
        }
        self.expect_closing(&Tok::RBracket, "[", open)?;
        let body = self.expr()?;
        let span = start.to(body.span);
        Ok(mk(
            ExprKind::Pragma {
                args,
                body: Box::new(body),
            },
            span,
        ))
    }

    /// "expected `in` after let binding", pointing back at the `let`.
    fn expect_in(&mut self, let_span: Span) -> PResult<()> {
        if self.eat(&Tok::In) {
            return Ok(());
        }
        let found = self.peek().describe();
        let mut d = Diagnostic::error(
            self.span(),
            format!("expected `in` after let binding, found {found}"),
        )
        .with_label("expected `in`")
        .with_secondary(let_span, "this `let` needs an `in`");
        if matches!(
            self.peek(),
            Tok::Let | Tok::LetExt(_) | Tok::Type | Tok::Eof
        ) {
            d = d.with_note(
                "a local binding is `let x = e in body`; top-level items cannot be nested",
            );
        }
        Err(self.report(d))
    }

    /// `let ... in body` in an expression.
    fn let_expr(&mut self) -> PResult<Expr> {
        let start = self.bump().span;
        if self.eat(&Tok::Open) {
            let module = match self.peek().clone() {
                Tok::UIdent(name) => Ident {
                    name,
                    span: self.bump().span,
                },
                _ => return Err(self.expected("a module name after `let open`")),
            };
            self.expect_in(start)?;
            let body = self.seq_expr()?;
            let span = start.to(body.span);
            return Ok(mk(
                ExprKind::LetOpen {
                    module,
                    body: Box::new(body),
                },
                span,
            ));
        }
        let recursive = self.eat(&Tok::Rec);
        let mut mutable = self.eat(&Tok::Mut);
        let is_fun = !mutable
            && matches!(self.peek(), Tok::Ident(_))
            && matches!(
                self.peek_at(1),
                Tok::Ident(_) | Tok::Underscore | Tok::LParen
            );
        if is_fun {
            let name = self.lident("a function name")?;
            let params = self.params()?;
            let ret = if self.eat(&Tok::Colon) {
                Some(self.type_expr()?)
            } else {
                None
            };
            let mut attrs = self.inner_attributes();
            self.expect_eq_after_local()?;
            attrs.extend(self.inner_attributes());
            let fbody = self.seq_expr()?;
            self.expect_in(start)?;
            let body = self.seq_expr()?;
            let span = start.to(body.span);
            let decl = FunDecl {
                name,
                recursive,
                params,
                ret,
                attrs,
                body: fbody,
            };
            return Ok(mk(
                ExprKind::LetFun {
                    decl: Box::new(decl),
                    body: Box::new(body),
                },
                span,
            ));
        }
        if recursive {
            let d = Diagnostic::error(start.to(self.prev_span()), "`let rec` defines a function")
                .with_label("expected a function name and parameters")
                .with_help("write `let rec f (x : t) = ... in`");
            return Err(self.report(d));
        }
        let (pattern, mut ty) = self.let_pattern()?;
        if self.eat(&Tok::Colon) {
            ty = Some(self.type_expr()?);
        }
        self.expect_eq_after_local()?;
        if self.eat(&Tok::Mut) {
            mutable = true;
        }
        let value = self.seq_expr()?;
        self.expect_in(start)?;
        let body = self.seq_expr()?;
        let span = start.to(body.span);
        Ok(mk(
            ExprKind::Let {
                pattern,
                mutable,
                ty,
                value: Box::new(value),
                body: Box::new(body),
            },
            span,
        ))
    }

    fn expect_eq_after_local(&mut self) -> PResult<()> {
        if self.eat(&Tok::Eq) {
            return Ok(());
        }
        Err(self.expected("`=` in the let binding"))
    }

    /// The bound pattern of a `let`: a tuple-level pattern, or `(x : t)`.
    fn let_pattern(&mut self) -> PResult<(Pattern, Option<TypeExpr>)> {
        if self.at(&Tok::LParen)
            && matches!(self.peek_at(1), Tok::Ident(_) | Tok::Underscore)
            && *self.peek_at(2) == Tok::Colon
        {
            let open = self.bump().span;
            let name = self.lident("a name")?;
            self.bump();
            let ty = self.type_expr()?;
            self.expect_closing(&Tok::RParen, "(", open)?;
            let pat = if name.name == "_" {
                Pattern::Wildcard(name.span)
            } else {
                Pattern::Var(name)
            };
            return Ok((pat, Some(ty)));
        }
        let p = self.nested(|p| p.tuple_pattern())?;
        Ok((p, None))
    }

    /// `let%shared`, `let%superstep` inside an expression.
    fn let_ext_expr(&mut self) -> PResult<Expr> {
        let Tok::LetExt(ext) = self.peek().clone() else {
            return Err(self.expected("`let%shared` or `let%superstep`"));
        };
        let start = self.bump().span;
        match ext.as_str() {
            "shared" => {
                let _ = self.inner_attributes();
                let (name, elem) = if self.at(&Tok::LParen) {
                    let open = self.bump().span;
                    let name = self.lident("the shared array's name")?;
                    if !self.eat(&Tok::Colon) {
                        return Err(self.expected("`:` and the element type, as in `let%shared (tile : float32) = 256 in`"));
                    }
                    let elem = self.type_expr()?;
                    self.expect_closing(&Tok::RParen, "(", open)?;
                    (name, elem)
                } else {
                    let name = self.lident("the shared array's name")?;
                    if !self.eat(&Tok::Colon) {
                        return Err(self.expected("`:` and the element type, as in `let%shared (tile : float32) = 256 in`"));
                    }
                    (name, self.type_expr()?)
                };
                self.expect_eq_after_local()?;
                let size = self.seq_expr()?;
                self.expect_in(start)?;
                let body = self.seq_expr()?;
                let span = start.to(body.span);
                Ok(mk(
                    ExprKind::LetShared {
                        name,
                        elem,
                        size: Box::new(size),
                        body: Box::new(body),
                    },
                    span,
                ))
            }
            "superstep" => {
                let mut attrs = self.inner_attributes();
                let name = self.lident("the superstep's name")?;
                attrs.extend(self.inner_attributes());
                let mut divergent = false;
                for a in &attrs {
                    if a.name == "divergent" {
                        divergent = true;
                    } else {
                        let d = Diagnostic::error(
                            a.span,
                            format!("unknown superstep attribute `{}`", a.name),
                        )
                        .with_label("only `[@divergent]` is allowed here");
                        self.diags.push(d);
                    }
                }
                self.expect_eq_after_local()?;
                let step = self.seq_expr()?;
                self.expect_in(start)?;
                let rest = self.seq_expr()?;
                let span = start.to(rest.span);
                Ok(mk(
                    ExprKind::LetSuperstep {
                        name,
                        divergent,
                        step: Box::new(step),
                        rest: Box::new(rest),
                    },
                    span,
                ))
            }
            "kernel" => {
                let d = Diagnostic::error(start, "`let%kernel` inside an expression")
                    .with_label("kernels are top-level items")
                    .with_note("is an `in` missing, or a kernel body not finished?");
                self.diags.push(d);
                Err(Fail)
            }
            other => {
                let mut d = Diagnostic::error(start, format!("unknown extension `let%{other}`"))
                    .with_label("expected `let%shared` or `let%superstep`");
                if let Some(s) = closest(other, ["shared", "superstep"]) {
                    d = d.with_help(format!("did you mean `let%{s}`?"));
                }
                self.diags.push(d);
                Err(Fail)
            }
        }
    }

    // ---- patterns ---------------------------------------------------------------------

    /// A full pattern: `p1 | p2 | ...` over tuples.
    pub(super) fn pattern(&mut self) -> PResult<Pattern> {
        self.nested(|p| {
            let first = p.tuple_pattern()?;
            if !p.at(&Tok::Bar)
                || !starts_simple_pattern(p.peek_at(1)) && *p.peek_at(1) != Tok::Minus
            {
                return Ok(first);
            }
            let mut alts = vec![first];
            while p.at(&Tok::Bar) {
                p.bump();
                alts.push(p.tuple_pattern()?);
            }
            let span = alts[0].span().to(alts[alts.len() - 1].span());
            Ok(Pattern::Or(alts, span))
        })
    }

    fn tuple_pattern(&mut self) -> PResult<Pattern> {
        let first = self.ctor_pattern()?;
        if !self.at(&Tok::Comma) {
            return Ok(first);
        }
        let mut elems = vec![first];
        while self.eat(&Tok::Comma) {
            elems.push(self.ctor_pattern()?);
        }
        let span = elems[0].span().to(elems[elems.len() - 1].span());
        Ok(Pattern::Tuple(elems, span))
    }

    fn ctor_pattern(&mut self) -> PResult<Pattern> {
        if let Tok::UIdent(name) = self.peek().clone() {
            let mut id = Ident {
                name,
                span: self.bump().span,
            };
            // `M.C` qualification is dropped.
            while self.at(&Tok::Dot) {
                if let Tok::UIdent(name) = self.peek_at(1).clone() {
                    self.bump();
                    id = Ident {
                        name,
                        span: self.bump().span,
                    };
                } else {
                    break;
                }
            }
            if !starts_simple_pattern(self.peek()) {
                let span = id.span;
                return Ok(Pattern::Ctor {
                    name: id,
                    args: Vec::new(),
                    span,
                });
            }
            let arg = self.nested(|p| p.simple_pattern())?;
            let span = id.span.to(arg.span());
            let args = match arg {
                Pattern::Tuple(elems, _) => elems,
                other => vec![other],
            };
            return Ok(Pattern::Ctor {
                name: id,
                args,
                span,
            });
        }
        self.simple_pattern()
    }

    fn simple_pattern(&mut self) -> PResult<Pattern> {
        let span = self.span();
        match self.peek().clone() {
            Tok::Underscore => {
                self.bump();
                Ok(Pattern::Wildcard(span))
            }
            Tok::Ident(name) => {
                self.bump();
                Ok(Pattern::Var(Ident { name, span }))
            }
            Tok::UIdent(name) => {
                self.bump();
                Ok(Pattern::Ctor {
                    name: Ident { name, span },
                    args: Vec::new(),
                    span,
                })
            }
            Tok::Int { value, int64 } => {
                self.bump();
                Ok(Pattern::Lit(
                    if int64 {
                        Lit::Int64(value)
                    } else {
                        Lit::Int(value)
                    },
                    span,
                ))
            }
            Tok::Float { value, float64 } => {
                self.bump();
                Ok(Pattern::Lit(
                    if float64 {
                        Lit::Float64(value)
                    } else {
                        Lit::Float(value)
                    },
                    span,
                ))
            }
            Tok::True | Tok::False => {
                let b = self.bump().tok == Tok::True;
                Ok(Pattern::Lit(Lit::Bool(b), span))
            }
            Tok::Minus => {
                self.bump();
                let lit = match self.peek().clone() {
                    Tok::Int {
                        value,
                        int64: false,
                    } => Lit::Int(-value),
                    Tok::Int { value, int64: true } => Lit::Int64(-value),
                    Tok::Float {
                        value,
                        float64: false,
                    } => Lit::Float(-value),
                    Tok::Float {
                        value,
                        float64: true,
                    } => Lit::Float64(-value),
                    _ => return Err(self.expected("a number after `-` in a pattern")),
                };
                let end = self.bump().span;
                Ok(Pattern::Lit(lit, span.to(end)))
            }
            Tok::LParen => {
                let open = self.bump().span;
                if self.at(&Tok::RParen) {
                    let close = self.bump().span;
                    return Ok(Pattern::Lit(Lit::Unit, open.to(close)));
                }
                let inner = self.pattern()?;
                if self.at(&Tok::Colon) {
                    let d = Diagnostic::error(
                        self.span(),
                        "type annotations inside patterns are not supported",
                    )
                    .with_label("annotate the matched expression instead: `(e : t)`");
                    return Err(self.report(d));
                }
                let close = self.expect_closing(&Tok::RParen, "(", open)?;
                // Keep the parenthesised span on tuples so `C (a, b)` spans are right.
                Ok(match inner {
                    Pattern::Tuple(e, _) => Pattern::Tuple(e, open.to(close)),
                    other => other,
                })
            }
            _ => Err(self.expected("a pattern")),
        }
    }
}
