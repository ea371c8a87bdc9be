//! Top-level items, parameters and type expressions.

use super::{Fail, PResult, Parser, SyntaxError};
use crate::diag::{Diagnostic, Span};
use crate::front::ast::*;
use crate::front::lexer::Tok;

/// A parameter written as a pattern (see [`Parser::params`]).
pub(super) enum ParamPattern {
    /// `(a, b)`
    Pattern(Pattern),
    /// `{ x; y = b }`
    Record(Vec<(Ident, Pattern)>),
}

/// Pattern parameters and the hidden names standing for them.
pub(super) type Destructured = Vec<(ParamPattern, Ident)>;

impl Parser {
    pub(super) fn program(&mut self) -> Program {
        let mut items: Vec<Item> = Vec::new();
        loop {
            while self.eat(&Tok::SemiSemi) {}
            if self.at(&Tok::Eof) {
                break;
            }
            // `[@@attr]` after an item belongs to that item (lexed apart from it).
            if let Tok::Attr { outer: true, .. } = self.peek() {
                let attr = self.attribute();
                match items.last_mut() {
                    Some(item) => item.attrs.push(attr),
                    None => {
                        let d = Diagnostic::error(attr.span, "item attribute before any item")
                            .with_label("`[@@...]` attaches to the item before it");
                        self.diags.push(d);
                    }
                }
                continue;
            }
            if self.at(&Tok::Open) {
                let start = self.pos;
                if self.top_level_open().is_err() {
                    if self.fatal {
                        break;
                    }
                    self.recover(start);
                }
                continue;
            }
            let start = self.pos;
            match self.item() {
                Ok(mut new) => {
                    // An item must be followed by another item, `;;` or the end of the file.
                    match self.peek() {
                        Tok::Eof
                        | Tok::SemiSemi
                        | Tok::Let
                        | Tok::LetExt(_)
                        | Tok::Type
                        | Tok::Open => {}
                        Tok::Attr { outer: true, .. } => {}
                        Tok::And => {
                            self.top_level_and(&new);
                            items.append(&mut new);
                            self.recover(start);
                            continue;
                        }
                        _ => {
                            let _ = self.expected("`let`, `let%kernel` or `type` (a new item)");
                            items.append(&mut new);
                            self.recover(start);
                            continue;
                        }
                    }
                    items.append(&mut new);
                }
                Err(Fail) => {
                    if self.fatal {
                        break;
                    }
                    self.recover(start);
                }
            }
        }
        Program { items }
    }

    /// `let rec f ... and g ...` (mutual recursion) or `let x ... and y ...` at top level.
    fn top_level_and(&mut self, before: &[Item]) {
        let and = self.span();
        let fun = before.iter().find_map(|i| match &i.kind {
            ItemKind::Fun(f) => Some(f),
            _ => None,
        });
        let d = match fun {
            Some(f) if f.recursive => Diagnostic::error(
                and,
                format!("mutual recursion is not supported (`let rec {} ... and ...`)", f.name.name),
            )
            .with_label("a second function of the same recursive group")
            .with_secondary(f.name.span, "the group starts here")
            .with_note("GPU code has no call stack: recursion must become a loop (tail calls) or be inlined to a fixed depth, which a group of functions calling each other cannot")
            .with_help("merge the functions into one recursive helper, e.g. with a parameter that selects the case"),
            _ => Diagnostic::error(and, "`let ... and ...` is not supported at top level")
                .with_label("start a new item here with `let`")
                .with_help("top-level definitions are separate items: write `let` instead of `and`"),
        };
        self.diags.push(d);
    }

    /// `open Std` (or `Sarek`, `Gpu`, `Math`, also `open!`) at top level: accepted and
    /// without effect, since those modules' names are always in scope. Other modules are
    /// opened locally (`let open Float32 in`).
    fn top_level_open(&mut self) -> PResult<()> {
        let start = self.bump();
        self.eat(&Tok::Bang);
        let Tok::UIdent(name) = self.peek().clone() else {
            return Err(self.expected("a module name after `open`"));
        };
        let end = self.bump();
        if !matches!(name.as_str(), "Std" | "Sarek" | "Gpu" | "Math") {
            let d = Diagnostic::error(
                start.to(end),
                format!("top-level `open {name}` is not supported"),
            )
            .with_label("only `open Std` (or `Sarek`, `Gpu`, `Math`) is accepted here")
            .with_help(format!(
                "open it inside the kernel: `let open {name} in ...`"
            ));
            return Err(self.report(d));
        }
        Ok(())
    }

    /// Converts the current `Attr` token into an [`Attribute`] (caller checked the token).
    pub(super) fn attribute(&mut self) -> Attribute {
        let tok = self.peek().clone();
        let span = self.bump();
        match tok {
            Tok::Attr { name, payload, .. } => Attribute {
                name,
                payload,
                span,
            },
            _ => Attribute {
                name: String::new(),
                payload: String::new(),
                span,
            },
        }
    }

    /// Zero or more `[@attr]` (single `@`) attributes.
    pub(super) fn inner_attributes(&mut self) -> Vec<Attribute> {
        let mut attrs = Vec::new();
        while let Tok::Attr { outer: false, .. } = self.peek() {
            attrs.push(self.attribute());
        }
        attrs
    }

    fn item(&mut self) -> PResult<Vec<Item>> {
        match self.peek().clone() {
            Tok::Type => self.type_decls(),
            Tok::Let => self.let_item().map(|i| vec![i]),
            Tok::LetExt(name) if name == "kernel" => self.kernel_item().map(|i| vec![i]),
            Tok::LetExt(name) => {
                let d =
                    Diagnostic::error(self.span(), format!("`let%{name}` is not a top-level item"))
                        .with_label("expected `let%kernel`, `let` or `type`")
                        .with_note(
                            "`let%shared` and `let%superstep` are used inside kernel bodies",
                        );
                Err(self.report(d))
            }
            _ => Err(self.expected("a top-level item (`let`, `let%kernel` or `type`)")),
        }
    }

    /// `let%kernel name params = body`
    fn kernel_item(&mut self) -> PResult<Item> {
        let col = self.toks[self.pos].col;
        let start = self.bump();
        let mut attrs = self.inner_attributes();
        let name = self.lident("a kernel name after `let%kernel`")?;
        attrs.extend(self.inner_attributes());
        let (params, destructured) = self.params()?;
        if params.is_empty() {
            return Err(self.expected("a kernel parameter like `(v : float32 vector)`"));
        }
        if self.eat(&Tok::Colon) {
            self.unit_return("a kernel")?;
        }
        attrs.extend(self.inner_attributes());
        self.expect_eq_after("the kernel parameters")?;
        let body = self.with_offside(Some(col), Self::seq_expr)?;
        let span = start.to(body.span);
        let body = Self::bind_params(destructured, body);
        Ok(Item {
            kind: ItemKind::Kernel(KernelDecl { name, params, body }),
            span,
            attrs,
        })
    }

    /// After `:` on a kernel: only `unit` is allowed.
    fn unit_return(&mut self, what: &'static str) -> PResult<()> {
        let ty = self.type_expr()?;
        match &ty.kind {
            TypeExprKind::Named(id) if id.name == "unit" => Ok(()),
            _ => {
                let d = Diagnostic::error(ty.span, format!("{what} returns `unit`"))
                    .with_label("remove this return type or write `unit`");
                self.diags.push(d);
                Err(Fail)
            }
        }
    }

    fn expect_eq_after(&mut self, after: &'static str) -> PResult<Span> {
        if self.at(&Tok::Eq) {
            return Ok(self.bump());
        }
        Err(self.fail(SyntaxError::Expected(format!("`=` after {after}").into())))
    }

    /// `let [rec] name ...` at top level: a constant, a helper or the `[%kernel fun]` form.
    fn let_item(&mut self) -> PResult<Item> {
        let col = self.toks[self.pos].col;
        let start = self.bump();
        let recursive = self.eat(&Tok::Rec);
        let mut attrs = self.inner_attributes();
        if self.at(&Tok::LParen) && *self.peek_at(1) == Tok::RParen {
            let d = Diagnostic::error(
                self.span().to(self.toks[self.pos + 1].span),
                "top-level `let () = ...` is not supported",
            )
            .with_label("a top-level item must be named")
            .with_help("use `let%kernel name (p : t) = ...` for a kernel");
            return Err(self.report(d));
        }
        let name = self.lident("a name after `let`")?;
        attrs.extend(self.inner_attributes());
        let (mut params, destructured) = self.params()?;
        let fun_value = self.at(&Tok::Eq) && matches!(self.peek_at(1), Tok::Fun | Tok::Function);
        if params.is_empty() && !recursive && !fun_value {
            if self.eat(&Tok::Colon) {
                let ty = self.type_expr()?;
                attrs.extend(self.inner_attributes());
                self.expect_eq_after("the constant's type")?;
                let value = self.with_offside(Some(col), Self::seq_expr)?;
                let span = start.to(value.span);
                return Ok(Item {
                    kind: ItemKind::Const { name, ty, value },
                    span,
                    attrs,
                });
            }
            if self.at(&Tok::Eq) && matches!(self.peek_at(1), Tok::ExtOpen(_)) {
                self.bump();
                return self.kernel_extension(start, name, attrs);
            }
            if self.at(&Tok::Eq) {
                let d = Diagnostic::error(
                    name.span,
                    format!("top-level constant `{}` needs a type annotation", name.name),
                )
                .with_label("type annotation missing")
                .with_help(format!(
                    "write `let {} : int32 = ...` (or the constant's type)",
                    name.name
                ));
                return Err(self.report(d));
            }
            return Err(self.expected("a parameter, `:` or `=`"));
        }
        let ret = if self.eat(&Tok::Colon) {
            Some(self.type_expr()?)
        } else {
            None
        };
        let mut fattrs = self.inner_attributes();
        self.expect_eq_after("the helper's parameters")?;
        fattrs.extend(self.inner_attributes());
        let body = if matches!(self.peek(), Tok::Fun | Tok::Function) {
            self.with_offside(Some(col), |p| p.fun_value(&mut params))?
        } else {
            self.with_offside(Some(col), Self::seq_expr)?
        };
        let span = start.to(body.span);
        let body = Self::bind_params(destructured, body);
        let decl = FunDecl {
            name,
            recursive,
            params,
            ret,
            attrs: fattrs,
            body,
        };
        Ok(Item {
            kind: ItemKind::Fun(decl),
            span,
            attrs,
        })
    }

    /// `[%kernel fun params -> body]` after `let name =`.
    fn kernel_extension(
        &mut self,
        start: Span,
        name: Ident,
        attrs: Vec<Attribute>,
    ) -> PResult<Item> {
        let open = self.bump();
        if !self.eat(&Tok::Fun) {
            return Err(self.expected("`fun` after `[%kernel`"));
        }
        let (params, destructured) = self.params()?;
        if params.is_empty() {
            return Err(self.expected("a kernel parameter like `(v : float32 vector)`"));
        }
        if !self.at(&Tok::Arrow) {
            return Err(self.expected("`->` after the kernel parameters"));
        }
        self.bump();
        let body = self.with_offside(None, Self::seq_expr)?;
        let body = Self::bind_params(destructured, body);
        let close = self.expect_closing(&Tok::RBracket, "[%kernel", open)?;
        let span = start.to(close);
        Ok(Item {
            kind: ItemKind::Kernel(KernelDecl { name, params, body }),
            span,
            attrs,
        })
    }

    /// A lowercase identifier (or `_`).
    pub(super) fn lident(&mut self, what: &'static str) -> PResult<Ident> {
        match self.peek().clone() {
            Tok::Ident(name) => Ok(Ident {
                name,
                span: self.bump(),
            }),
            Tok::Underscore => Ok(Ident {
                name: "_".into(),
                span: self.bump(),
            }),
            _ => Err(self.expected(what)),
        }
    }

    /// Function / kernel parameters: `(x : t)`, `x`, `_`, `()`.
    /// Parameters; a pattern parameter (`(a, b)`) gets a hidden name (`%argN`, which no
    /// source can write) and is returned with its pattern, to be bound by [`Self::bind_params`].
    pub(super) fn params(&mut self) -> PResult<(Vec<Param>, Destructured)> {
        let mut params = Vec::new();
        let mut destructured = Vec::new();
        loop {
            match self.peek() {
                Tok::Ident(_) | Tok::Underscore => {
                    let name = self.lident("a parameter")?;
                    let span = name.span;
                    params.push(Param {
                        name,
                        ty: None,
                        span,
                    });
                }
                Tok::LBrace => {
                    let (fields, span) = self.record_pattern()?;
                    let name = Ident {
                        name: format!("%arg{}", params.len()),
                        span,
                    };
                    destructured.push((ParamPattern::Record(fields), name.clone()));
                    params.push(Param {
                        name,
                        ty: None,
                        span,
                    });
                }
                Tok::LParen => {
                    let open = self.bump();
                    if self.at(&Tok::RParen) {
                        // `()`: a unit parameter, named `_`.
                        let close = self.bump();
                        let span = open.to(close);
                        let unit = TypeExpr {
                            kind: TypeExprKind::Named(Ident {
                                name: "unit".into(),
                                span,
                            }),
                            span,
                        };
                        params.push(Param {
                            name: Ident {
                                name: "_".into(),
                                span,
                            },
                            ty: Some(unit),
                            span,
                        });
                        continue;
                    }
                    if !(matches!(self.peek(), Tok::Ident(_) | Tok::Underscore)
                        && matches!(self.peek_at(1), Tok::Colon | Tok::RParen))
                    {
                        // `(a, b)`, `((a, b) : t)`, `({ x; y } : t)`: a parameter
                        // destructured in the body.
                        let pattern = if self.at(&Tok::LBrace) {
                            ParamPattern::Record(self.record_pattern()?.0)
                        } else {
                            ParamPattern::Pattern(self.pattern()?)
                        };
                        let ty = if self.eat(&Tok::Colon) {
                            Some(self.type_expr()?)
                        } else {
                            None
                        };
                        let close = self.expect_closing(&Tok::RParen, "(", open)?;
                        let name = Ident {
                            name: format!("%arg{}", params.len()),
                            span: open.to(close),
                        };
                        destructured.push((pattern, name.clone()));
                        params.push(Param {
                            name,
                            ty,
                            span: open.to(close),
                        });
                        continue;
                    }
                    let name = self.lident("a parameter name")?;
                    let ty = if self.eat(&Tok::Colon) {
                        Some(self.type_expr()?)
                    } else {
                        None
                    };
                    let close = self.expect_closing(&Tok::RParen, "(", open)?;
                    params.push(Param {
                        name,
                        ty,
                        span: open.to(close),
                    });
                }
                _ => return Ok((params, destructured)),
            }
        }
    }

    /// Wrap `body` in `let pattern = %argN in` for each destructured parameter.
    pub(super) fn bind_params(destructured: Destructured, body: Expr) -> Expr {
        destructured
            .into_iter()
            .rev()
            .fold(body, |body, (pattern, name)| {
                let pattern = match pattern {
                    ParamPattern::Pattern(p) => p,
                    ParamPattern::Record(fields) => return Self::bind_fields(&name, fields, body),
                };
                let span = body.span;
                let value = Expr {
                    span: name.span,
                    kind: ExprKind::Var {
                        path: Vec::new(),
                        name,
                    },
                };
                Expr {
                    kind: ExprKind::Let {
                        pattern,
                        mutable: false,
                        ty: None,
                        value: Box::new(value),
                        body: Box::new(body),
                    },
                    span,
                }
            })
    }

    /// `type a = ... [and b = ...]` followed by `[@@attrs]`.
    fn type_decls(&mut self) -> PResult<Vec<Item>> {
        let mut items = Vec::new();
        let mut start = self.bump();
        loop {
            if let Tok::TyVar(_) = self.peek() {
                let d = Diagnostic::error(self.span(), "type parameters are not supported")
                    .with_label("records and variants are monomorphic");
                return Err(self.report(d));
            }
            let name = self.lident("a type name after `type`")?;
            self.expect_eq_after("the type name")?;
            let kind = if self.at(&Tok::LBrace) {
                self.record_decl()?
            } else {
                self.variant_decl()?
            };
            let mut attrs = Vec::new();
            while let Tok::Attr { outer: true, .. } = self.peek() {
                attrs.push(self.attribute());
            }
            let span = start.to(self.prev_span());
            items.push(Item {
                kind: ItemKind::Type(TypeDecl { name, kind }),
                span,
                attrs,
            });
            if self.at(&Tok::And) {
                start = self.bump();
                continue;
            }
            return Ok(items);
        }
    }

    fn record_decl(&mut self) -> PResult<TypeDeclKind> {
        let open = self.bump();
        let mut fields = Vec::new();
        while !self.at(&Tok::RBrace) {
            let mutable = self.eat(&Tok::Mutable);
            let name = self.lident("a field name")?;
            if !self.at(&Tok::Colon) {
                return Err(self.expected("`:` and the field's type"));
            }
            self.bump();
            let ty = self.type_expr()?;
            fields.push(FieldDecl { name, ty, mutable });
            if !self.eat(&Tok::Semi) {
                break;
            }
        }
        self.expect_closing(&Tok::RBrace, "{", open)?;
        if fields.is_empty() {
            let d = Diagnostic::error(
                open.to(self.prev_span()),
                "a record type needs at least one field",
            );
            self.diags.push(d);
            return Err(Fail);
        }
        Ok(TypeDeclKind::Record(fields))
    }

    fn variant_decl(&mut self) -> PResult<TypeDeclKind> {
        self.eat(&Tok::Bar);
        let mut ctors = Vec::new();
        loop {
            let (name, span) = match self.peek().clone() {
                Tok::UIdent(n) => (n, self.bump()),
                Tok::Ident(n) if ctors.is_empty() => {
                    let d = Diagnostic::error(
                        self.span(),
                        format!("type abbreviations are not supported (`{n}`)"),
                    )
                    .with_label("expected a record `{ ... }` or constructors `A | B of t`");
                    return Err(self.report(d));
                }
                _ => return Err(self.expected("a constructor name (capitalised)")),
            };
            let mut args = Vec::new();
            if self.eat(&Tok::Of) {
                // `C of a * b` has two arguments; `C of (a * b)` one tuple argument.
                args.push(self.type_app()?);
                while self.eat(&Tok::Star) {
                    args.push(self.type_app()?);
                }
            }
            let span = span.to(self.prev_span());
            ctors.push(CtorDecl {
                name: Ident { name, span },
                args,
                span,
            });
            if !self.eat(&Tok::Bar) {
                return Ok(TypeDeclKind::Variant(ctors));
            }
        }
    }

    /// A type: `t1 * t2 * ...` over applications.
    pub(super) fn type_expr(&mut self) -> PResult<TypeExpr> {
        self.type_nodes = 0;
        self.type_tuple()
    }

    /// Count one more constructed type node: a type's node count bounds its height (type
    /// constructor chains are built by a loop, so nesting depth alone would not).
    fn type_node(&mut self) -> PResult<()> {
        self.type_nodes += 1;
        if self.type_nodes > super::MAX_DEPTH {
            return Err(self.fail(SyntaxError::TooDeep));
        }
        Ok(())
    }

    fn type_tuple(&mut self) -> PResult<TypeExpr> {
        let first = self.type_app()?;
        if !self.at(&Tok::Star) {
            return Ok(first);
        }
        let mut parts = vec![first];
        while self.eat(&Tok::Star) {
            parts.push(self.type_app()?);
        }
        self.type_node()?;
        let span = parts[0].span.to(parts[parts.len() - 1].span);
        Ok(TypeExpr {
            kind: TypeExprKind::Tuple(parts),
            span,
        })
    }

    /// An atom followed by postfix type constructors: `float32 vector`, `'a array`.
    fn type_app(&mut self) -> PResult<TypeExpr> {
        let mut ty = self.type_atom()?;
        while let Tok::Ident(name) = self.peek().clone() {
            self.type_node()?;
            let id = Ident {
                name,
                span: self.bump(),
            };
            let span = ty.span.to(id.span);
            ty = TypeExpr {
                kind: TypeExprKind::App(Box::new(ty), id),
                span,
            };
        }
        Ok(ty)
    }

    fn type_atom(&mut self) -> PResult<TypeExpr> {
        match self.peek().clone() {
            Tok::Ident(name) => {
                let span = self.bump();
                Ok(TypeExpr {
                    kind: TypeExprKind::Named(Ident { name, span }),
                    span,
                })
            }
            Tok::TyVar(name) => {
                let span = self.bump();
                Ok(TypeExpr {
                    kind: TypeExprKind::Var(Ident { name, span }),
                    span,
                })
            }
            Tok::LParen => {
                let open = self.bump();
                let inner = self.nested(Self::type_tuple)?;
                let close = self.expect_closing(&Tok::RParen, "(", open)?;
                Ok(TypeExpr {
                    span: open.to(close),
                    ..inner
                })
            }
            Tok::UIdent(name) => Err(self.fail(SyntaxError::TypeExpectedFoundConstructor { name })),
            _ => Err(self.expected("a type")),
        }
    }
}
