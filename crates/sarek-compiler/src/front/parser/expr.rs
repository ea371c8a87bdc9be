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

use super::{Fail, MAX_DEPTH, PResult, Parser, SyntaxError};
use crate::diag::{Diagnostic, Span};
use crate::front::ast::*;
use crate::front::lexer::Tok;
use crate::front::name::Name;

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
        // `**` is rewritten to `Std.pow` (see `binary`); the operator here is a placeholder.
        Tok::StarStar => (B::Mul, 6, true),
        Tok::Lsl => (B::Lsl, 6, true),
        Tok::Lsr => (B::Lsr, 6, true),
        Tok::Asr => (B::Asr, 6, true),
        _ => return None,
    })
}

/// Can this token start an application argument (a "simple expression")?
fn starts_arg(t: &Tok) -> bool {
    if matches!(t, Tok::Ident(m) if *m == "module") {
        // OCaml's keyword, which starts an item (`module M = struct ... end`).
        return false;
    }
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
            | Tok::Bang
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
                | Tok::TildeMinus
                | Tok::TildeMinusDot
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

impl<'src> Parser<'src> {
    // The functions on the recursive path (`seq_expr` down to `primary`) keep their frames
    // small: anything that builds a message goes through `fail`, and rarely taken branches
    // live in their own functions. Measured in debug builds by `parse_robustness`.

    /// Finish a node whose tallest child has height `child_h`, checking the height limit.
    ///
    /// Every function returning an expression leaves its height in `self.h`. Nesting depth
    /// alone does not bound the tree: left-associative operator chains and postfix chains
    /// are built by loops, and can stack on top of parenthesised chains; the height is what
    /// bounds the recursion of every pass (and of `Drop`) over the tree.
    fn node(&mut self, kind: ExprKind, span: Span, child_h: u32) -> PResult<Expr> {
        let h = child_h + 1;
        if h as usize > MAX_DEPTH {
            return Err(self.fail(SyntaxError::TooDeep));
        }
        self.h = h;
        Ok(mk(kind, span))
    }

    /// A node without sub-expressions (height 1).
    fn leaf(&mut self, kind: ExprKind, span: Span) -> Expr {
        self.h = 1;
        mk(kind, span)
    }

    /// `e1; e2; ...` with an optional trailing `;`.
    pub(super) fn seq_expr(&mut self) -> PResult<Expr> {
        let first = self.expr()?;
        if !self.at(&Tok::Semi) {
            return Ok(first);
        }
        self.seq_rest(first)
    }

    fn seq_rest(&mut self, first: Expr) -> PResult<Expr> {
        // The last item is the sequence's tail (a `let` chain continues through it): it does
        // not add to the height, the others do.
        let mut h = 0;
        let mut last_h = self.h;
        let mut items = vec![first];
        while self.eat(&Tok::Semi) {
            if !starts_expr(self.peek()) {
                break;
            }
            items.push(self.expr()?);
            h = h.max(last_h);
            last_h = self.h;
        }
        if items.len() == 1 {
            self.h = last_h;
            return Ok(items.swap_remove(0));
        }
        let span = items[0].span.to(items[items.len() - 1].span);
        self.node(ExprKind::Seq(items), span, h.max(last_h.saturating_sub(1)))
    }

    /// An expression without a top-level `;`.
    pub(super) fn expr(&mut self) -> PResult<Expr> {
        self.nested(Self::expr_inner)
    }

    fn expr_inner(&mut self) -> PResult<Expr> {
        match self.peek() {
            Tok::Let => self.let_expr(),
            Tok::LetExt(_) => self.let_ext_expr(),
            Tok::If => self.if_expr(),
            Tok::Match => self.match_expr(),
            Tok::Fun | Tok::Function => Err(self.fail(SyntaxError::AnonymousFunction)),
            Tok::Ident(n) if *n == "try" => Err(self.fail(SyntaxError::TryWith)),
            Tok::Ident(n) if *n == "pragma" && *self.peek_at(1) == Tok::LBracket => {
                self.pragma_expr()
            }
            _ => self.assign_expr(),
        }
    }

    /// `lhs <- e`, `x := e` or a tuple expression.
    pub(super) fn assign_expr(&mut self) -> PResult<Expr> {
        let lhs = self.tuple_expr()?;
        match self.peek() {
            Tok::LArrow | Tok::ColonEq => self.assignment(lhs),
            _ => Ok(lhs),
        }
    }

    fn assignment(&mut self, lhs: Expr) -> PResult<Expr> {
        let lhs_h = self.h;
        let arrow = *self.peek() == Tok::LArrow;
        self.bump();
        self.operand_guard()?;
        let value = Box::new(self.expr()?);
        let h = lhs_h.max(self.h);
        let span = lhs.span.to(value.span);
        let kind = match lhs.kind {
            ExprKind::Index { base, index } if arrow => ExprKind::IndexSet { base, index, value },
            ExprKind::Field { base, field } if arrow => ExprKind::FieldSet { base, field, value },
            ExprKind::Var { path, name } if !arrow && path.is_empty() => ExprKind::Assign {
                target: name,
                value,
            },
            _ if arrow => return Err(self.fail(SyntaxError::AssignArrow { lhs: lhs.span })),
            _ => return Err(self.fail(SyntaxError::AssignColonEq { lhs: lhs.span })),
        };
        self.node(kind, span, h)
    }

    /// `e1, e2, ...`
    fn tuple_expr(&mut self) -> PResult<Expr> {
        let first = self.binary(0)?;
        if !self.at(&Tok::Comma) {
            return Ok(first);
        }
        let mut h = self.h;
        let mut elems = vec![first];
        while self.eat(&Tok::Comma) {
            self.operand_guard()?;
            elems.push(self.binary(0)?);
            h = h.max(self.h);
        }
        let span = elems[0].span.to(elems[elems.len() - 1].span);
        self.node(ExprKind::Tuple(elems), span, h)
    }

    /// After an operator (or `then`, `else`, `->`), a `let`/`type` in column 1 starts the
    /// next item: report the missing operand here rather than parse the item as a local
    /// `let`. (After `=` and `in` such a `let` is accepted: unindented bodies are valid.)
    /// A layout hint: applied only when re-parsing a file that has errors.
    fn operand_guard(&mut self) -> PResult<()> {
        let t = &self.toks[self.pos];
        if self.layout_hints
            && t.line_start()
            && matches!(t.tok, Tok::Let | Tok::LetExt(_) | Tok::Type)
        {
            let after = self.prev_span();
            return Err(self.fail(SyntaxError::ItemKeywordAsOperand { after }));
        }
        Ok(())
    }

    /// Precedence climbing over the binary operators at or above `min_prec`.
    fn binary(&mut self, min_prec: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        let mut terms = 1;
        while let Some((op, prec, right)) = binop(self.peek()) {
            if prec < min_prec {
                break;
            }
            terms += 1;
            self.longest_chain = self.longest_chain.max(terms);
            if terms > super::MAX_CHAIN {
                return Err(self.fail(SyntaxError::ChainTooLong));
            }
            let lhs_h = self.h;
            let power = *self.peek() == Tok::StarStar;
            let op_span = self.bump();
            self.operand_guard()?;
            let rhs = if right {
                self.nested(|p| p.binary(prec))?
            } else {
                self.binary(prec + 1)?
            };
            // A left-nested chain deepens the AST without recursing: its left operand is
            // the chain's tail and does not add to the height (see `MAX_DEPTH`); `terms`
            // bounds its length. A right-nested one recurses, within the depth limit.
            let h = if right {
                lhs_h.max(self.h)
            } else {
                lhs_h.saturating_sub(1).max(self.h)
            };
            let span = lhs.span.to(rhs.span);
            if power {
                // `a ** b` is OCaml's float power: `Std.pow a b` (qualified, so a helper
                // named `pow` does not capture it).
                let func = Expr {
                    kind: ExprKind::Var {
                        path: vec![Ident {
                            name: "Std".into(),
                            span: op_span,
                        }],
                        name: Ident {
                            name: "pow".into(),
                            span: op_span,
                        },
                    },
                    span: op_span,
                };
                lhs = self.node(
                    ExprKind::App {
                        func: Box::new(func),
                        args: vec![lhs, rhs],
                    },
                    span,
                    h,
                )?;
                continue;
            }
            lhs = self.node(
                ExprKind::Binary {
                    op,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
                span,
                h,
            )?;
        }
        Ok(lhs)
    }

    /// Prefix minus (folded into numeric literals) and the prefix forms usable as operands.
    fn unary(&mut self) -> PResult<Expr> {
        match self.peek() {
            Tok::Minus | Tok::MinusDot | Tok::TildeMinus | Tok::TildeMinusDot => self.negation(),
            Tok::Let | Tok::LetExt(_) | Tok::If | Tok::Match | Tok::Fun | Tok::Function => {
                self.expr()
            }
            Tok::Ident(n) if *n == "pragma" && *self.peek_at(1) == Tok::LBracket => self.expr(),
            _ => self.app(),
        }
    }

    fn negation(&mut self) -> PResult<Expr> {
        let float_minus = matches!(self.peek(), Tok::MinusDot | Tok::TildeMinusDot);
        let op_span = self.bump();
        let operand = self.nested(Self::unary)?;
        let span = op_span.to(operand.span);
        let folded = match (&operand.kind, float_minus) {
            (ExprKind::Lit(Lit::Int(v)), false) => Some(Lit::Int(negate_int(*v, 32))),
            (ExprKind::Lit(Lit::Int64(v)), false) => Some(Lit::Int64(negate_int(*v, 64))),
            (ExprKind::Lit(Lit::Float(v)), _) => Some(Lit::Float(-v)),
            (ExprKind::Lit(Lit::Float64(v)), _) => Some(Lit::Float64(-v)),
            _ => None,
        };
        if let Some(lit) = folded {
            return Ok(self.leaf(ExprKind::Lit(lit), span));
        }
        let op = if float_minus {
            UnaryOp::NegF
        } else {
            UnaryOp::Neg
        };
        let h = self.h;
        self.node(
            ExprKind::Unary {
                op,
                operand: Box::new(operand),
            },
            span,
            h,
        )
    }

    /// Application by juxtaposition, constructor application, `not e`, `lnot e`.
    fn app(&mut self) -> PResult<Expr> {
        let head = match self.peek() {
            Tok::Not | Tok::Lnot => self.prefix_function()?,
            Tok::UIdent(_) => {
                let head = self.postfix()?;
                if matches!(&head.kind, ExprKind::Ctor { args, .. } if args.is_empty())
                    && self.takes_arg()
                {
                    return self.ctor_application(head);
                }
                head
            }
            _ => self.postfix()?,
        };
        // A literal is never a function: stopping here gives "expected `do`" for
        // `for i = 0 to 3 v.(i) <- 0 done` instead of an application error.
        if matches!(head.kind, ExprKind::Lit(_)) || !self.takes_arg() {
            return Ok(head);
        }
        let mut h = self.h;
        let mut args = Vec::new();
        while self.takes_arg() {
            args.push(self.nested(Self::postfix)?);
            h = h.max(self.h);
        }
        let span = head.span.to(args[args.len() - 1].span);
        self.node(
            ExprKind::App {
                func: Box::new(head),
                args,
            },
            span,
            h,
        )
    }

    /// Can the current token be the next argument of an application?
    fn takes_arg(&self) -> bool {
        starts_arg(self.peek()) && !self.offside_here()
    }

    /// `not e` / `lnot e` (functions in OCaml, so they bind like an application).
    fn prefix_function(&mut self) -> PResult<Expr> {
        let not = *self.peek() == Tok::Not;
        let op_span = self.bump();
        if !starts_arg(self.peek()) {
            let op = if not { "not" } else { "lnot" };
            return Err(self.fail(SyntaxError::OperandAfterPrefix { op }));
        }
        let operand = self.nested(Self::postfix)?;
        let span = op_span.to(operand.span);
        let op = if not { UnaryOp::Not } else { UnaryOp::Lnot };
        let h = self.h;
        self.node(
            ExprKind::Unary {
                op,
                operand: Box::new(operand),
            },
            span,
            h,
        )
    }

    /// `C e` and `C (e1, e2)` (the tuple's components are the arguments).
    fn ctor_application(&mut self, head: Expr) -> PResult<Expr> {
        let ExprKind::Ctor { name, .. } = head.kind else {
            return Ok(head);
        };
        let arg = self.nested(Self::postfix)?;
        let h = self.h;
        let span = head.span.to(arg.span);
        let args = match arg.kind {
            ExprKind::Tuple(elems) => elems,
            _ => vec![arg],
        };
        if self.takes_arg() {
            return Err(self.fail(SyntaxError::ConstructorArguments {
                ctor: name.name.to_string(),
            }));
        }
        self.node(ExprKind::Ctor { name, args }, span, h)
    }

    /// A primary followed by `.(i)`, `.field` and `[@attr]` postfixes.
    fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        loop {
            e = match self.peek() {
                Tok::Dot => self.dot_suffix(e)?,
                Tok::Attr { outer: false, .. } => self.attribute_suffix(e)?,
                _ => return Ok(e),
            };
        }
    }

    /// `.(i)` or `.field` after `e`.
    fn dot_suffix(&mut self, e: Expr) -> PResult<Expr> {
        let base_h = self.h;
        match self.peek_at(1).clone() {
            Tok::LParen => {
                self.bump();
                let open = self.bump();
                let index = self.with_offside(None, Self::seq_expr)?;
                let h = base_h.max(self.h);
                let close = self.expect_closing(&Tok::RParen, ".(", open)?;
                let span = e.span.to(close);
                self.node(
                    ExprKind::Index {
                        base: Box::new(e),
                        index: Box::new(index),
                    },
                    span,
                    h,
                )
            }
            Tok::Ident(name) => {
                self.bump();
                let field = Ident {
                    name: self.names.intern(name),
                    span: self.bump(),
                };
                let span = e.span.to(field.span);
                self.node(
                    ExprKind::Field {
                        base: Box::new(e),
                        field,
                    },
                    span,
                    base_h,
                )
            }
            _ => {
                self.bump();
                Err(self.expected("a field name or `(` after `.`"))
            }
        }
    }

    /// `e [@attr ...]`: loop hints go to the loop, anything else wraps the expression.
    fn attribute_suffix(&mut self, e: Expr) -> PResult<Expr> {
        let h = self.h;
        let attrs = self.inner_attributes();
        let span = e.span.to(self.prev_span());
        let kind = match e.kind {
            ExprKind::For {
                var,
                start,
                end,
                downto,
                body,
                attrs: mut a,
            } => {
                a.extend(attrs);
                ExprKind::For {
                    var,
                    start,
                    end,
                    downto,
                    body,
                    attrs: a,
                }
            }
            ExprKind::While {
                cond,
                body,
                attrs: mut a,
            } => {
                a.extend(attrs);
                ExprKind::While {
                    cond,
                    body,
                    attrs: a,
                }
            }
            ExprKind::Attributed { expr, attrs: mut a } => {
                a.extend(attrs);
                ExprKind::Attributed { expr, attrs: a }
            }
            kind => ExprKind::Attributed {
                expr: Box::new(mk(kind, e.span)),
                attrs,
            },
        };
        // An upper bound: attaching to a loop adds no level.
        self.node(kind, span, h)
    }

    fn primary(&mut self) -> PResult<Expr> {
        let span = self.span();
        let lit = match self.peek() {
            Tok::Int {
                value,
                int64: false,
            } => Lit::Int(*value),
            Tok::Int { value, int64: true } => Lit::Int64(*value),
            Tok::Float {
                value,
                float64: false,
            } => Lit::Float(*value),
            Tok::Float {
                value,
                float64: true,
            } => Lit::Float64(*value),
            Tok::True => Lit::Bool(true),
            Tok::False => Lit::Bool(false),
            Tok::Ident(_) => return Ok(self.variable()),
            Tok::Bang if matches!(self.peek_at(1), Tok::Ident(_)) => {
                // `!r`: a `ref` local is a mutable local, read by name.
                self.bump();
                return Ok(self.variable());
            }
            Tok::UIdent(_) => return self.upper_path(),
            Tok::LParen => return self.paren_expr(),
            Tok::Begin => return self.begin_expr(),
            Tok::LBrace => return self.record_expr(),
            Tok::For => return self.for_expr(),
            Tok::While => return self.while_expr(),
            Tok::Extension { .. } => return Ok(self.extension()),
            _ => return Err(self.primary_error()),
        };
        self.bump();
        Ok(self.leaf(ExprKind::Lit(lit), span))
    }

    fn variable(&mut self) -> Expr {
        let name = match *self.peek() {
            Tok::Ident(n) => self.names.intern(n),
            _ => Name::from(""),
        };
        let span = self.bump();
        self.leaf(
            ExprKind::Var {
                path: Vec::new(),
                name: Ident { name, span },
            },
            span,
        )
    }

    /// `[%native ...]`: kept as a node so the typer can refuse it with a clear message.
    fn extension(&mut self) -> Expr {
        let name = match self.peek() {
            Tok::Extension { name, .. } => name.to_string(),
            _ => String::new(),
        };
        let span = self.bump();
        self.leaf(ExprKind::Extension { name }, span)
    }

    /// Everything that cannot start an expression.
    #[cold]
    fn primary_error(&mut self) -> Fail {
        match self.peek().clone() {
            Tok::ExtOpen(name) => self.fail(SyntaxError::KernelExtensionInExpression {
                name: name.to_string(),
            }),
            Tok::Str(_) => self.fail(SyntaxError::StringExpression),
            _ => self.expected("an expression"),
        }
    }

    /// `( )`, `( e )`, `( e : t )`. Inside brackets layout is free again.
    fn paren_expr(&mut self) -> PResult<Expr> {
        let open = self.bump();
        if self.at(&Tok::RParen) {
            let close = self.bump();
            return Ok(self.leaf(ExprKind::Lit(Lit::Unit), open.to(close)));
        }
        let inner = self.with_offside(None, Self::seq_expr)?;
        let h = self.h;
        if self.eat(&Tok::Colon) {
            let ty = self.type_expr()?;
            let close = self.expect_closing(&Tok::RParen, "(", open)?;
            return self.node(
                ExprKind::Annot {
                    expr: Box::new(inner),
                    ty: Box::new(ty),
                },
                open.to(close),
                h,
            );
        }
        let close = self.expect_closing(&Tok::RParen, "(", open)?;
        Ok(Expr {
            span: open.to(close),
            ..inner
        })
    }

    fn begin_expr(&mut self) -> PResult<Expr> {
        let open = self.bump();
        if self.at(&Tok::End) {
            let close = self.bump();
            return Ok(self.leaf(ExprKind::Lit(Lit::Unit), open.to(close)));
        }
        let inner = self.with_offside(None, Self::seq_expr)?;
        let close = self.expect_closing(&Tok::End, "begin", open)?;
        Ok(Expr {
            span: open.to(close),
            ..inner
        })
    }

    /// `C`, `M.x`, `M.N.x`, `M.C`, `M.(e)` (local open).
    fn upper_path(&mut self) -> PResult<Expr> {
        let mut path: Vec<Ident> = Vec::new();
        loop {
            let Tok::UIdent(name) = self.peek().clone() else {
                return Err(self.expected("a module or constructor name"));
            };
            let id = Ident {
                name: self.names.intern(name),
                span: self.bump(),
            };
            if !self.at(&Tok::Dot) {
                // A constructor (module qualification of constructors is dropped).
                let span = id.span;
                return Ok(self.leaf(
                    ExprKind::Ctor {
                        name: id,
                        args: Vec::new(),
                    },
                    span,
                ));
            }
            match self.peek_at(1).clone() {
                Tok::Ident(name) => {
                    self.bump();
                    let start = path.first().map_or(id.span, |p| p.span);
                    path.push(id);
                    let name = Ident {
                        name: self.names.intern(name),
                        span: self.bump(),
                    };
                    let span = start.to(name.span);
                    return Ok(self.leaf(ExprKind::Var { path, name }, span));
                }
                Tok::UIdent(_) => {
                    self.bump();
                    path.push(id);
                }
                Tok::LParen => {
                    // `M.(e)` is `let open M in e`.
                    self.bump();
                    let open = self.bump();
                    let body = self.with_offside(None, Self::seq_expr)?;
                    let h = self.h;
                    let close = self.expect_closing(&Tok::RParen, ".(", open)?;
                    let span = id.span.to(close);
                    return self.node(
                        ExprKind::LetOpen {
                            module: id,
                            body: Box::new(body),
                        },
                        span,
                        h,
                    );
                }
                _ => {
                    let span = id.span;
                    return Ok(self.leaf(
                        ExprKind::Ctor {
                            name: id,
                            args: Vec::new(),
                        },
                        span,
                    ));
                }
            }
        }
    }

    /// `{ f = e; g = e; ... }` (and punned `{ f; g }`).
    fn record_expr(&mut self) -> PResult<Expr> {
        let open = self.bump();
        let fields = self.with_offside(None, |p| p.record_fields(open))?;
        let h = self.h;
        let close = self.expect_closing(&Tok::RBrace, "{", open)?;
        if fields.is_empty() {
            return Err(self.fail(SyntaxError::EmptyRecord {
                span: open.to(close),
            }));
        }
        self.node(ExprKind::Record(fields), open.to(close), h)
    }

    /// The fields of a record literal; leaves their maximum height in `self.h`.
    fn record_fields(&mut self, open: Span) -> PResult<Vec<(Ident, Expr)>> {
        let mut h = 0;
        let mut fields: Vec<(Ident, Expr)> = Vec::new();
        while !self.at(&Tok::RBrace) {
            // `{ M.x = ...; y = ... }`: a field qualified by its type's module (types share
            // one namespace, so the qualifier is dropped, as for constructors).
            while matches!(self.peek(), Tok::UIdent(_))
                && *self.peek_at(1) == Tok::Dot
                && matches!(self.peek_at(2), Tok::Ident(_) | Tok::UIdent(_))
            {
                self.bump();
                self.bump();
            }
            let is_field = matches!(self.peek(), Tok::Ident(_))
                && matches!(self.peek_at(1), Tok::Eq | Tok::Semi | Tok::RBrace);
            if !is_field {
                // `{ e with ... }` or garbage.
                let e = self.nested(|p| p.binary(0))?;
                if self.at(&Tok::With) {
                    return Err(self.fail(SyntaxError::RecordUpdate {
                        span: open.to(e.span),
                    }));
                }
                return Err(self.expected("a field name"));
            }
            let name = self.lident("a field name")?;
            let value = if self.eat(&Tok::Eq) {
                self.expr()?
            } else {
                let span = name.span;
                self.leaf(
                    ExprKind::Var {
                        path: Vec::new(),
                        name: name.clone(),
                    },
                    span,
                )
            };
            h = h.max(self.h);
            fields.push((name, value));
            if !self.eat(&Tok::Semi) {
                break;
            }
        }
        self.h = h;
        Ok(fields)
    }

    fn for_expr(&mut self) -> PResult<Expr> {
        let start = self.bump();
        let var = self.lident("a loop variable after `for`")?;
        self.expect(&Tok::Eq)?;
        let from = self.seq_expr()?;
        let mut h = self.h;
        let downto = match self.peek() {
            Tok::To => false,
            Tok::Downto => true,
            _ => return Err(self.expected("`to` or `downto`")),
        };
        self.bump();
        let to = self.seq_expr()?;
        h = h.max(self.h);
        if !self.at(&Tok::Do) {
            return Err(self.fail(SyntaxError::MissingDo {
                what: "the loop bounds",
            }));
        }
        let do_span = self.bump();
        let body = self.loop_body()?;
        h = h.max(self.h);
        let close = self.expect_closing(&Tok::Done, "do", do_span)?;
        let kind = ExprKind::For {
            var,
            start: Box::new(from),
            end: Box::new(to),
            downto,
            body: Box::new(body),
            attrs: Vec::new(),
        };
        self.node(kind, start.to(close), h)
    }

    fn while_expr(&mut self) -> PResult<Expr> {
        let start = self.bump();
        let cond = self.seq_expr()?;
        let cond_h = self.h;
        if !self.at(&Tok::Do) {
            return Err(self.fail(SyntaxError::MissingDo {
                what: "the loop condition",
            }));
        }
        let do_span = self.bump();
        let body = self.loop_body()?;
        let h = cond_h.max(self.h);
        let close = self.expect_closing(&Tok::Done, "do", do_span)?;
        let kind = ExprKind::While {
            cond: Box::new(cond),
            body: Box::new(body),
            attrs: Vec::new(),
        };
        self.node(kind, start.to(close), h)
    }

    /// A loop body; `do done` is an empty (unit) body.
    fn loop_body(&mut self) -> PResult<Expr> {
        if self.at(&Tok::Done) {
            let span = self.span();
            return Ok(self.leaf(ExprKind::Lit(Lit::Unit), span));
        }
        self.with_offside(None, Self::seq_expr)
    }

    fn if_expr(&mut self) -> PResult<Expr> {
        let start = self.bump();
        let cond = self.seq_expr()?;
        let mut h = self.h;
        if !self.at(&Tok::Then) {
            return Err(self.fail(SyntaxError::MissingThen { if_span: start }));
        }
        self.bump();
        self.operand_guard()?;
        let then_branch = self.expr()?;
        h = h.max(self.h);
        let else_branch = if self.eat(&Tok::Else) {
            self.operand_guard()?;
            let e = self.expr()?;
            h = h.max(self.h);
            Some(Box::new(e))
        } else {
            None
        };
        let end = else_branch.as_ref().map_or(then_branch.span, |e| e.span);
        let kind = ExprKind::If {
            cond: Box::new(cond),
            then_branch: Box::new(then_branch),
            else_branch,
        };
        self.node(kind, start.to(end), h)
    }

    fn match_expr(&mut self) -> PResult<Expr> {
        let start = self.bump();
        let scrutinee = self.seq_expr()?;
        let h = self.h;
        if !self.at(&Tok::With) {
            return Err(self.fail(SyntaxError::MissingWith { match_span: start }));
        }
        self.bump();
        let (arms, arms_h) = self.match_arms()?;
        let h = h.max(arms_h);
        let end = arms[arms.len() - 1].span;
        self.node(
            ExprKind::Match {
                scrutinee: Box::new(scrutinee),
                arms,
            },
            start.to(end),
            h,
        )
    }

    /// `[|] p -> e | ...` after `with` or `function`; also returns the arms' height.
    pub(super) fn match_arms(&mut self) -> PResult<(Vec<MatchArm>, u32)> {
        let mut h = 0;
        self.eat(&Tok::Bar);
        let mut arms = Vec::new();
        loop {
            let pattern = self.pattern()?;
            let guard = if matches!(self.peek(), Tok::Ident(w) if *w == "when") {
                self.bump();
                let g = self.seq_expr()?;
                h = h.max(self.h);
                Some(Box::new(g))
            } else {
                None
            };
            if !self.at(&Tok::Arrow) {
                return Err(self.expected("`->` after the pattern"));
            }
            self.bump();
            self.operand_guard()?;
            let body = self.seq_expr()?;
            h = h.max(self.h);
            let span = pattern.span().to(body.span);
            arms.push(MatchArm {
                pattern,
                guard,
                body,
                span,
            });
            if !self.eat(&Tok::Bar) {
                break;
            }
        }
        Ok((arms, h))
    }

    /// After `let f params =`: `fun p... -> e` or `function arms` (at the keyword) give
    /// `f` more parameters, as in OCaml: `let f = fun x -> e` is `let f x = e`, and
    /// `function arms` takes one more parameter (hidden `%fnN`) and matches on it.
    pub(super) fn fun_value(&mut self, params: &mut Vec<Param>) -> PResult<Expr> {
        if self.eat(&Tok::Fun) {
            let (more, destructured) = self.params()?;
            if more.is_empty() {
                return Err(self.expected("a parameter after `fun`"));
            }
            if !self.eat(&Tok::Arrow) {
                return Err(self.expected("`->` after the parameters of `fun`"));
            }
            params.extend(more);
            let body = self.seq_expr()?;
            return Ok(Self::bind_params(destructured, body));
        }
        let start = self.bump();
        let name = Ident {
            name: format!("%fn{}", params.len()).into(),
            span: start,
        };
        params.push(Param {
            name: name.clone(),
            ty: None,
            span: start,
        });
        let (arms, h) = self.match_arms()?;
        let end = arms[arms.len() - 1].span;
        let scrutinee = Expr {
            kind: ExprKind::Var {
                path: Vec::new(),
                name,
            },
            span: start,
        };
        self.node(
            ExprKind::Match {
                scrutinee: Box::new(scrutinee),
                arms,
            },
            start.to(end),
            h + 1,
        )
    }

    /// `pragma ["a"; "b"] e`
    fn pragma_expr(&mut self) -> PResult<Expr> {
        let start = self.bump();
        let open = self.bump();
        let mut args = Vec::new();
        loop {
            match self.peek() {
                Tok::Str(s) => {
                    args.push(s.to_string());
                    self.bump();
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
        let h = self.h;
        let span = start.to(body.span);
        self.node(
            ExprKind::Pragma {
                args,
                body: Box::new(body),
            },
            span,
            h,
        )
    }

    /// "expected `in` after let binding", pointing back at the `let`.
    fn expect_in(&mut self, let_span: Span) -> PResult<()> {
        if self.eat(&Tok::In) {
            return Ok(());
        }
        Err(self.fail(SyntaxError::MissingIn { let_span }))
    }

    /// The value of a `let`: tokens starting a line at or left of the `let` end it.
    fn let_value(&mut self, let_col: u32) -> PResult<Expr> {
        self.with_offside(Some(let_col), Self::seq_expr)
    }

    /// `let ... in body` in an expression.
    fn let_expr(&mut self) -> PResult<Expr> {
        let let_col = self.toks[self.pos].col;
        let start = self.bump();
        if self.eat(&Tok::Open) {
            self.eat(&Tok::Bang);
            return self.let_open(start);
        }
        let recursive = self.eat(&Tok::Rec);
        let mutable = self.eat(&Tok::Mut);
        let is_fun = !mutable
            && matches!(self.peek(), Tok::Ident(_))
            && matches!(
                self.peek_at(1),
                Tok::Ident(_) | Tok::Underscore | Tok::LParen
            );
        let is_fun = is_fun
            || !mutable
                && matches!(self.peek(), Tok::Ident(_))
                && *self.peek_at(1) == Tok::Eq
                && matches!(self.peek_at(2), Tok::Fun | Tok::Function);
        if is_fun {
            return self.let_fun(start, let_col, recursive);
        }
        if recursive {
            return Err(self.fail(SyntaxError::LetRecWithoutFunction {
                span: start.to(self.prev_span()),
            }));
        }
        self.let_value_binding(start, let_col, mutable)
    }

    /// `let open M in body`; `M` may be a path (`let open Sarek_stdlib.Std in`), as a prelude's
    /// `let open` may.
    fn let_open(&mut self, start: Span) -> PResult<Expr> {
        let module = self.module_path("a module name after `let open`")?;
        self.expect_in(start)?;
        let body = self.let_body(Self::seq_expr)?;
        // The body is the chain's tail: it does not add to the height (see `MAX_DEPTH`).
        let h = self.h.saturating_sub(1);
        let span = start.to(body.span);
        self.node(
            ExprKind::LetOpen {
                module,
                body: Box::new(body),
            },
            span,
            h,
        )
    }

    /// `let [rec] f params [: ret] = e in body`
    fn let_fun(&mut self, start: Span, let_col: u32, recursive: bool) -> PResult<Expr> {
        let name = self.lident("a function name")?;
        let (params, destructured) = self.params()?;
        let ret = if self.eat(&Tok::Colon) {
            Some(self.type_expr()?)
        } else {
            None
        };
        let mut attrs = self.inner_attributes();
        self.expect_eq_after_local()?;
        attrs.extend(self.inner_attributes());
        let mut params = params;
        let fbody = if matches!(self.peek(), Tok::Fun | Tok::Function) {
            let value = self.with_offside(Some(let_col), |p| p.fun_value(&mut params))?;
            Self::bind_params(destructured, value)
        } else {
            Self::bind_params(destructured, self.let_value(let_col)?)
        };
        let fbody_h = self.h;
        self.expect_in(start)?;
        let body = self.let_body(Self::seq_expr)?;
        let h = fbody_h.max(self.h.saturating_sub(1));
        let span = start.to(body.span);
        let decl = FunDecl {
            name,
            recursive,
            params,
            ret,
            attrs,
            body: fbody,
        };
        self.node(
            ExprKind::LetFun {
                decl: Box::new(decl),
                body: Box::new(body),
            },
            span,
            h,
        )
    }

    /// `let [mut] pat [: t] = [mut] e in body`
    fn let_value_binding(&mut self, start: Span, let_col: u32, mut mutable: bool) -> PResult<Expr> {
        if self.at(&Tok::LBrace) && !mutable {
            return self.let_record_binding(start, let_col);
        }
        let (pattern, mut ty) = self.let_pattern()?;
        if self.eat(&Tok::Colon) {
            ty = Some(self.type_expr()?);
        }
        self.expect_eq_after_local()?;
        if self.eat(&Tok::Mut) {
            mutable = true;
        }
        let mut value = self.let_value(let_col)?;
        let value_h = self.h;
        // `let r = ref e in`: OCaml's mutable cell is a mutable local (`!r` reads it).
        if let ExprKind::App { func, args } = &mut value.kind
            && matches!(&func.kind, ExprKind::Var { path, name } if path.is_empty() && name.name == "ref")
            && args.len() == 1
        {
            mutable = true;
            value = args.pop().expect("one argument");
        }
        if self.at(&Tok::And) {
            return self.let_and(start, let_col, (pattern, mutable, ty, value), value_h);
        }
        self.expect_in(start)?;
        let body = self.let_body(Self::seq_expr)?;
        let h = value_h.max(self.h.saturating_sub(1));
        let span = start.to(body.span);
        let kind = ExprKind::Let {
            pattern: Box::new(pattern),
            mutable,
            ty: ty.map(Box::new),
            value: Box::new(value),
            body: Box::new(body),
        };
        self.node(kind, span, h)
    }

    /// `let { f1 = p1; f2; _ } [: t] = e in body`, read as
    /// `let %rec = e in let p1 = %rec.f1 in let f2 = %rec.f2 in body` (`%rec` cannot be
    /// written in a source, so it shadows nothing the user sees).
    fn let_record_binding(&mut self, start: Span, let_col: u32) -> PResult<Expr> {
        let (fields, fields_span) = self.record_pattern()?;
        let ty = if self.eat(&Tok::Colon) {
            Some(self.type_expr()?)
        } else {
            None
        };
        self.expect_eq_after_local()?;
        let value = self.let_value(let_col)?;
        let value_h = self.h;
        self.expect_in(start)?;
        let body = self.let_body(Self::seq_expr)?;
        let h = value_h.max(self.h.saturating_sub(1)) + fields.len() as u32;
        let span = start.to(body.span);
        let hidden = Ident {
            name: "%rec".into(),
            span: fields_span,
        };
        let body = Self::bind_fields(&hidden, fields, body);
        let kind = ExprKind::Let {
            pattern: Box::new(Pattern::Var(hidden)),
            mutable: false,
            ty: ty.map(Box::new),
            value: Box::new(value),
            body: Box::new(body),
        };
        self.node(kind, span, h)
    }

    /// `{ f1 = p1; f2; _ }` (at `{`): the fields and their patterns, and the pattern's span.
    pub(super) fn record_pattern(&mut self) -> PResult<(Vec<(Ident, Pattern)>, Span)> {
        let open = self.bump();
        let mut fields: Vec<(Ident, Pattern)> = Vec::new();
        loop {
            if self.at(&Tok::Underscore) {
                self.bump();
            } else {
                let field = self.lident("a field name in the record pattern")?;
                let pattern = if self.eat(&Tok::Eq) {
                    self.pattern()?
                } else {
                    Pattern::Var(field.clone())
                };
                fields.push((field, pattern));
            }
            if !self.eat(&Tok::Semi) || self.at(&Tok::RBrace) {
                break;
            }
        }
        let close = self.expect_closing(&Tok::RBrace, "{", open)?;
        Ok((fields, open.to(close)))
    }

    /// Wrap `body` in `let p = record.f in` for each field pattern.
    pub(super) fn bind_fields(record: &Ident, fields: Vec<(Ident, Pattern)>, body: Expr) -> Expr {
        fields
            .into_iter()
            .rev()
            .fold(body, |body, (field, pattern)| {
                let span = body.span;
                let base = Expr {
                    kind: ExprKind::Var {
                        path: Vec::new(),
                        name: record.clone(),
                    },
                    span: field.span,
                };
                let value = Expr {
                    span: field.span,
                    kind: ExprKind::Field {
                        base: Box::new(base),
                        field,
                    },
                };
                Expr {
                    span,
                    kind: ExprKind::Let {
                        pattern: Box::new(pattern),
                        mutable: false,
                        ty: None,
                        value: Box::new(value),
                        body: Box::new(body),
                    },
                }
            })
    }

    /// `let p1 = e1 and p2 = e2 ... in body`: no value sees the other bindings, so it reads
    /// `let %and0 = e1 in let %and1 = e2 in let p1 = %and0 in let p2 = %and1 in body`.
    fn let_and(
        &mut self,
        start: Span,
        let_col: u32,
        first: (Pattern, bool, Option<TypeExpr>, Expr),
        first_h: u32,
    ) -> PResult<Expr> {
        let mut bindings = vec![first];
        let mut h = first_h;
        while self.eat(&Tok::And) {
            let mut mutable = self.eat(&Tok::Mut);
            let (pattern, mut ty) = self.let_pattern()?;
            if self.eat(&Tok::Colon) {
                ty = Some(self.type_expr()?);
            }
            self.expect_eq_after_local()?;
            if self.eat(&Tok::Mut) {
                mutable = true;
            }
            let value = self.let_value(let_col)?;
            h = h.max(self.h);
            bindings.push((pattern, mutable, ty, value));
        }
        self.expect_in(start)?;
        let body = self.let_body(Self::seq_expr)?;
        let h = h.max(self.h.saturating_sub(1)) + 2 * bindings.len() as u32;
        let span = start.to(body.span);
        let hidden: Vec<Ident> = bindings
            .iter()
            .enumerate()
            .map(|(k, b)| Ident {
                name: format!("%and{k}").into(),
                span: b.3.span,
            })
            .collect();
        let mut values = Vec::new();
        let mut body = body;
        for ((pattern, mutable, ty, value), name) in bindings.into_iter().zip(&hidden).rev() {
            let read = Expr {
                span: name.span,
                kind: ExprKind::Var {
                    path: Vec::new(),
                    name: name.clone(),
                },
            };
            body = Expr {
                span,
                kind: ExprKind::Let {
                    pattern: Box::new(pattern),
                    mutable,
                    ty: ty.map(Box::new),
                    value: Box::new(read),
                    body: Box::new(body),
                },
            };
            values.push(value);
        }
        for (value, name) in values.into_iter().zip(hidden.into_iter().rev()) {
            body = Expr {
                span,
                kind: ExprKind::Let {
                    pattern: Box::new(Pattern::Var(name)),
                    mutable: false,
                    ty: None,
                    value: Box::new(value),
                    body: Box::new(body),
                },
            };
        }
        let kind = body.kind;
        self.node(kind, span, h)
    }

    fn expect_eq_after_local(&mut self) -> PResult<()> {
        if self.eat(&Tok::Eq) {
            return Ok(());
        }
        Err(self.expected("`=` in the let binding"))
    }

    /// The bound pattern of a `let`: a tuple-level pattern, or `(x : t)`.
    pub(super) fn let_pattern(&mut self) -> PResult<(Pattern, Option<TypeExpr>)> {
        if self.at(&Tok::LParen)
            && matches!(self.peek_at(1), Tok::Ident(_) | Tok::Underscore)
            && *self.peek_at(2) == Tok::Colon
        {
            let open = self.bump();
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
        if self.at(&Tok::LParen) {
            // `((a, b) : t)`: an annotated pattern (backtrack if it is not one).
            let saved = self.pos;
            let open = self.bump();
            if !self.at(&Tok::RParen) {
                let inner = self.nested(Self::pattern)?;
                if self.eat(&Tok::Colon) {
                    let ty = self.type_expr()?;
                    self.expect_closing(&Tok::RParen, "(", open)?;
                    return Ok((inner, Some(ty)));
                }
            }
            self.pos = saved;
        }
        let p = self.nested(Self::tuple_pattern)?;
        Ok((p, None))
    }

    /// `let%shared`, `let%superstep` inside an expression.
    fn let_ext_expr(&mut self) -> PResult<Expr> {
        let Tok::LetExt(ext) = self.peek().clone() else {
            return Err(self.expected("`let%shared` or `let%superstep`"));
        };
        let let_col = self.toks[self.pos].col;
        let start = self.bump();
        match ext {
            "shared" => self.let_shared(start, let_col),
            "superstep" => self.let_superstep(start, let_col),
            "kernel" => Err(self.fail(SyntaxError::KernelInExpression { span: start })),
            _ => Err(self.fail(SyntaxError::UnknownLetExtension {
                name: ext.to_string(),
                span: start,
            })),
        }
    }

    /// `let%shared (name : elem) = size in body` (parentheses optional).
    fn let_shared(&mut self, start: Span, let_col: u32) -> PResult<Expr> {
        let _ = self.inner_attributes();
        let open = if self.at(&Tok::LParen) {
            Some(self.bump())
        } else {
            None
        };
        let name = self.lident("the shared array's name")?;
        if !self.eat(&Tok::Colon) {
            return Err(self.expected(
                "`:` and the element type, as in `let%shared (tile : float32) = 256 in`",
            ));
        }
        let elem = self.type_expr()?;
        if let Some(open) = open {
            self.expect_closing(&Tok::RParen, "(", open)?;
        }
        self.expect_eq_after_local()?;
        let size = self.let_value(let_col)?;
        let size_h = self.h;
        self.expect_in(start)?;
        let body = self.let_body(Self::seq_expr)?;
        let h = size_h.max(self.h.saturating_sub(1));
        let span = start.to(body.span);
        self.node(
            ExprKind::LetShared {
                name,
                elem: Box::new(elem),
                size: Box::new(size),
                body: Box::new(body),
            },
            span,
            h,
        )
    }

    /// `let%superstep[@divergent] name = step in rest`
    fn let_superstep(&mut self, start: Span, let_col: u32) -> PResult<Expr> {
        let mut attrs = self.inner_attributes();
        let name = self.lident("the superstep's name")?;
        attrs.extend(self.inner_attributes());
        let mut divergent = false;
        for a in attrs {
            if a.name == "divergent" {
                divergent = true;
            } else {
                // Reported, but the superstep itself parses on.
                let _ = self.fail(SyntaxError::SuperstepAttribute {
                    name: a.name,
                    span: a.span,
                });
            }
        }
        self.expect_eq_after_local()?;
        let step = self.let_value(let_col)?;
        let step_h = self.h;
        self.expect_in(start)?;
        let rest = self.let_body(Self::seq_expr)?;
        let h = step_h.max(self.h.saturating_sub(1));
        let span = start.to(rest.span);
        let kind = ExprKind::LetSuperstep {
            name,
            divergent,
            step: Box::new(step),
            rest: Box::new(rest),
        };
        self.node(kind, span, h)
    }

    // ---- patterns ---------------------------------------------------------------------

    /// A full pattern: `p1 | p2 | ...` over tuples.
    pub(super) fn pattern(&mut self) -> PResult<Pattern> {
        let pattern = self.nested(|p| {
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
        })?;
        if matches!(self.peek(), Tok::Ident(w) if *w == "as") {
            let d = Diagnostic::error(self.span(), "`as` patterns are not supported")
                .with_label("an alias of the matched value")
                .with_note("a pattern binds names with variables and constructor payloads only")
                .with_help("name the value before matching it: `let q = e in match q with C _ -> ... q ...`");
            return Err(self.report(d));
        }
        Ok(pattern)
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
                name: self.names.intern(name),
                span: self.bump(),
            };
            // `M.C` qualification is dropped.
            while self.at(&Tok::Dot) {
                if let Tok::UIdent(name) = self.peek_at(1).clone() {
                    self.bump();
                    id = Ident {
                        name: self.names.intern(name),
                        span: self.bump(),
                    };
                } else {
                    break;
                }
            }
            if self.at(&Tok::LBrace) {
                return Err(self.record_pattern_in_match());
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

    /// `C { x; _ }` or `{ x; y }` where a refutable pattern is expected.
    fn record_pattern_in_match(&mut self) -> Fail {
        let d = Diagnostic::error(self.span(), "record patterns are not supported here")
            .with_label("a record pattern in a `match` arm or a constructor's payload")
            .with_note("record patterns are accepted in `let` and in parameters: `let { x; y } = p in`")
            .with_help("bind the record (`C p -> ...`) and read its fields (`p.x`), with a `when` guard for a test on one");
        self.report(d)
    }

    fn simple_pattern(&mut self) -> PResult<Pattern> {
        let span = self.span();
        match self.peek().clone() {
            Tok::LBrace => Err(self.record_pattern_in_match()),
            Tok::Underscore => {
                self.bump();
                Ok(Pattern::Wildcard(span))
            }
            Tok::Ident(name) => {
                self.bump();
                Ok(Pattern::Var(Ident {
                    name: self.names.intern(name),
                    span,
                }))
            }
            Tok::UIdent(name) => {
                self.bump();
                Ok(Pattern::Ctor {
                    name: Ident {
                        name: self.names.intern(name),
                        span,
                    },
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
                let b = *self.peek() == Tok::True;
                self.bump();
                Ok(Pattern::Lit(Lit::Bool(b), span))
            }
            Tok::Minus => {
                self.bump();
                let lit = match self.peek().clone() {
                    Tok::Int {
                        value,
                        int64: false,
                    } => Lit::Int(negate_int(value, 32)),
                    Tok::Int { value, int64: true } => Lit::Int64(negate_int(value, 64)),
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
                let end = self.bump();
                Ok(Pattern::Lit(lit, span.to(end)))
            }
            Tok::LParen => {
                let open = self.bump();
                if self.at(&Tok::RParen) {
                    let close = self.bump();
                    return Ok(Pattern::Lit(Lit::Unit, open.to(close)));
                }
                let inner = self.pattern()?;
                if self.at(&Tok::Colon) {
                    return Err(self.fail(SyntaxError::PatternAnnotation));
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

/// `-v` for an integer literal of `bits` bits. The most negative value negates to itself, as
/// in OCaml: `0x80000000` already is min_int (a hexadecimal literal spells bits), so
/// `-0x80000000` is min_int too (`-0x80000000l` in OCaml), while the decimal `2147483648`
/// still negates to `-2147483648`.
fn negate_int(v: i128, bits: u32) -> i128 {
    let min = -(1i128 << (bits - 1));
    if v == min { v } else { -v }
}
