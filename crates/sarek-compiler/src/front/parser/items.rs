//! Top-level items, parameters and type expressions.

use super::{Fail, PResult, Parser, SyntaxError};
use crate::diag::{Diagnostic, Span};
use crate::front::ast::*;
use crate::front::lexer::Tok;

/// Built-in modules whose names are always in scope: opening them does nothing.
pub(super) const BUILTIN_OPENS: [&str; 7] = [
    "Std",
    "Sarek",
    "Gpu",
    "Math",
    "Sarek_stdlib",
    "Sarek_stdlib_meta",
    "Sarek_float64",
];

/// Upstream's packages: a host alias of one of their modules (`module Std =
/// Sarek_stdlib.Std`) is skipped.
const HOST_PACKAGES: [&str; 9] = [
    "Sarek",
    "Sarek_core",
    "Sarek_stdlib",
    "Sarek_stdlib_meta",
    "Sarek_float64",
    "Spoc",
    "Spoc_core",
    "Std",
    "Gpu",
];

/// Built-in modules opened only locally (`let open Float32 in`): they rename operators.
const LOCAL_OPENS: [&str; 7] = [
    "Float32", "Float64", "Int32", "Int64", "Float", "Array", "Vector",
];

/// A parameter written as a pattern (see [`Parser::params`]).
pub(super) enum ParamPattern {
    /// `(a, b)`
    Pattern(Pattern),
    /// `{ x; y = b }`
    Record(Vec<(Ident, Pattern)>),
}

/// Type names an OCaml host file aliases for its kernels (`type float32 = float`,
/// `type ('a, 'b) vector = ('a, 'b) Vector.t`): Sarek already means them, so such an alias
/// is skipped.
const HOST_TYPE_NAMES: [&str; 11] = [
    "int32", "int64", "float32", "float64", "float", "int", "bool", "unit", "double", "vector",
    "array",
];

/// Attribute marking a type hoisted out of a kernel prelude's `let module`: the same
/// declaration may appear in several kernels of a file (the name cannot be written).
pub const PRELUDE_TYPE: &str = "%prelude";

/// A prelude binding that wraps the kernel body.
enum PreludeWrap {
    Open(Ident),
    Value {
        pattern: Pattern,
        ty: Option<TypeExpr>,
        value: Box<Expr>,
        /// The lowercase names written in the value's expression (a superset of its free
        /// variables): a helper whose parameter has one of these names cannot see the value.
        mentions: Vec<String>,
    },
}

impl PreludeWrap {
    /// `let open M in body` or `let pat = value in body`.
    fn wrap(&self, body: Expr) -> Expr {
        let span = body.span;
        let kind = match self {
            PreludeWrap::Open(module) => ExprKind::LetOpen {
                module: module.clone(),
                body: Box::new(body),
            },
            PreludeWrap::Value {
                pattern, ty, value, ..
            } => ExprKind::Let {
                pattern: Box::new(pattern.clone()),
                mutable: false,
                ty: ty.clone().map(Box::new),
                value: value.clone(),
                body: Box::new(body),
            },
        };
        Expr { kind, span }
    }
}

/// Operators and the library functions with the same meaning, which upstream's helper
/// libraries rebind them to for OCaml's type checker (`let ( mod ) = Int32.rem`).
const OPERATOR_ALIASES: &[(&str, &[&str])] = &[
    ("mod", &["Int32.rem", "Int64.rem"]),
    ("+", &["Int32.add", "Int64.add"]),
    ("-", &["Int32.sub", "Int64.sub"]),
    ("*", &["Int32.mul", "Int64.mul"]),
    ("/", &["Int32.div", "Int64.div"]),
    ("land", &["Int32.logand", "Int64.logand"]),
    ("lor", &["Int32.logor", "Int64.logor"]),
    ("lxor", &["Int32.logxor", "Int64.logxor"]),
    ("lsl", &["Int32.shift_left", "Int64.shift_left"]),
    ("asr", &["Int32.shift_right", "Int64.shift_right"]),
    (
        "lsr",
        &["Int32.shift_right_logical", "Int64.shift_right_logical"],
    ),
    ("+.", &["Float32.add", "Float64.add", "Float.add"]),
    ("-.", &["Float32.sub", "Float64.sub", "Float.sub"]),
    ("*.", &["Float32.mul", "Float64.mul", "Float.mul"]),
    ("/.", &["Float32.div", "Float64.div", "Float.div"]),
];

/// The names a pattern binds.
fn pattern_names(p: &Pattern, out: &mut Vec<String>) {
    match p {
        Pattern::Var(id) => out.push(id.name.clone()),
        Pattern::Ctor { args, .. } | Pattern::Tuple(args, _) | Pattern::Or(args, _) => {
            args.iter().for_each(|a| pattern_names(a, out))
        }
        Pattern::Wildcard(_) | Pattern::Lit(..) => {}
    }
}

/// The parameters a prelude value could see under their own names where it wraps a body:
/// those the value binds (so the body would see the value instead of the parameter) or names
/// in its expression (which OCaml resolves outside the function, not to the parameter).
fn conflicting_params<'p>(params: &'p [Param], wraps: &[PreludeWrap]) -> Vec<&'p Param> {
    let mut names = Vec::new();
    for w in wraps {
        if let PreludeWrap::Value {
            pattern, mentions, ..
        } = w
        {
            pattern_names(pattern, &mut names);
            names.extend(mentions.iter().cloned());
        }
    }
    params
        .iter()
        .filter(|p| names.contains(&p.name.name))
        .collect()
}

/// `let name = hidden in body`.
fn alias(name: &Ident, hidden: &str, body: Expr) -> Expr {
    let span = body.span;
    let value = Expr {
        kind: ExprKind::Var {
            path: Vec::new(),
            name: Ident {
                name: hidden.to_string(),
                span: name.span,
            },
        },
        span: name.span,
    };
    Expr {
        kind: ExprKind::Let {
            pattern: Box::new(Pattern::Var(name.clone())),
            mutable: false,
            ty: None,
            value: Box::new(value),
            body: Box::new(body),
        },
        span,
    }
}

/// A prelude helper's body inside the opens and values before it, scoped as OCaml scopes
/// them: the values are evaluated outside the helper, and its parameters shadow them. A
/// parameter a value could capture is renamed (`%prelude.x`, a name no source can write) and
/// bound again inside the values. A top-level `pragma [...]` stays outermost, where the typer
/// reads `sarek.inline`.
fn wrap_prelude_helper(decl: &mut FunDecl, wraps: &[PreludeWrap]) {
    let renamed: Vec<Ident> = conflicting_params(&decl.params, wraps)
        .into_iter()
        .map(|p| p.name.clone())
        .collect();
    for p in &mut decl.params {
        if renamed.iter().any(|r| r.name == p.name.name) {
            p.name.name = format!("%prelude.{}", p.name.name);
        }
    }
    let slot = match &mut decl.body.kind {
        ExprKind::Pragma { body, .. } => &mut **body,
        _ => &mut decl.body,
    };
    let mut body = std::mem::replace(
        slot,
        Expr {
            kind: ExprKind::Lit(Lit::Unit),
            span: slot.span,
        },
    );
    for r in renamed.iter().rev() {
        body = alias(r, &format!("%prelude.{}", r.name), body);
    }
    for w in wraps.iter().rev() {
        body = w.wrap(body);
    }
    *slot = body;
}

/// Pattern parameters and the hidden names standing for them.
pub(super) type Destructured = Vec<(ParamPattern, Ident)>;

impl<'src> Parser<'src> {
    pub(super) fn program(&mut self) -> Program {
        let items = self.items_until(None);
        Program { items, tall: false }
    }

    /// Items up to the end of the file, or up to `end` closing `module M = struct`.
    fn items_until(&mut self, closing: Option<&Tok>) -> Vec<Item> {
        let mut items: Vec<Item> = Vec::new();
        loop {
            while self.eat(&Tok::SemiSemi) {}
            if self.at(&Tok::Eof) || closing.is_some_and(|c| self.at(c)) {
                break;
            }
            // `[@@attr]` after an item belongs to that item (lexed apart from it); after a
            // helper, to its definition, where `[@@sarek.inline N]` is read as in a prelude.
            if let Tok::Attr { outer: true, .. } = self.peek() {
                let attr = self.attribute();
                match items.last_mut() {
                    Some(Item {
                        kind: ItemKind::Fun(decl),
                        ..
                    }) => decl.attrs.push(attr),
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
                match self.top_level_open() {
                    Ok(Some(item)) => items.push(item),
                    Ok(None) => {}
                    Err(_) => {
                        if self.fatal {
                            break;
                        }
                        self.recover(start);
                    }
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
                        | Tok::ItemExtOpen(_)
                        | Tok::Type
                        | Tok::Open => {}
                        Tok::Ident(m) if *m == "module" => {}
                        Tok::Attr { outer: true, .. } => {}
                        t if closing == Some(t) => {}
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
        items
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
    /// without effect, since those modules' names are always in scope. `open M` of another
    /// module is an item: the typer checks that `M` is a module of the program (a file or a
    /// `module M = struct ... end`); the built-in `Float32`-style modules are opened locally
    /// (`let open Float32 in`).
    fn top_level_open(&mut self) -> PResult<Option<Item>> {
        let start = self.bump();
        self.eat(&Tok::Bang);
        let module = self.module_path("a module name after `open`")?;
        if BUILTIN_OPENS.contains(&module.name.as_str()) {
            return Ok(None);
        }
        if LOCAL_OPENS.contains(&module.name.as_str()) {
            let name = &module.name;
            let d = Diagnostic::error(
                start.to(module.span),
                format!("top-level `open {name}` is not supported"),
            )
            .with_label("only `open Std` (or `Sarek`, `Gpu`, `Math`) or a module of the program is accepted here")
            .with_help(format!("open it inside the kernel: `let open {name} in ...`"));
            return Err(self.report(d));
        }
        Ok(Some(Item {
            span: start.to(module.span),
            kind: ItemKind::Open(module),
            attrs: Vec::new(),
        }))
    }

    /// `M` or `A.B.M` (the last name is the module: `Sarek.Std` is `Std`).
    pub(super) fn module_path(&mut self, what: &'static str) -> PResult<Ident> {
        let Tok::UIdent(mut name) = self.peek().clone() else {
            return Err(self.expected(what));
        };
        let mut span = self.bump();
        while self.at(&Tok::Dot) {
            if let Tok::UIdent(next) = self.peek_at(1).clone() {
                self.bump();
                span = self.bump();
                name = next;
            } else {
                break;
            }
        }
        Ok(Ident {
            name: name.to_string(),
            span,
        })
    }

    /// Converts the current `Attr` token into an [`Attribute`] (caller checked the token).
    pub(super) fn attribute(&mut self) -> Attribute {
        let tok = self.peek().clone();
        let span = self.bump();
        match tok {
            Tok::Attr {
                name,
                payload,
                outer,
            } => Attribute {
                name: name.to_string(),
                payload: payload.to_string(),
                outer,
                span,
            },
            _ => Attribute {
                name: String::new(),
                payload: String::new(),
                outer: false,
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
            Tok::Let => self.let_item(),
            Tok::LetExt("kernel") => self.kernel_item().map(|i| vec![i]),
            Tok::ItemExtOpen("kernel") => self.structure_kernels(),
            Tok::Ident("module") => self.module_item().map(|i| i.into_iter().collect()),
            Tok::ItemExtOpen(name) => {
                let d = Diagnostic::error(self.span(), format!("`[%%{name}` is not a Sarek item"))
                    .with_label("unknown structure extension")
                    .with_help("kernels are written `let%kernel k (p : t) = ...`, `[%%kernel let k (p : t) = ...]` or `let k = [%kernel fun (p : t) -> ...]`");
                Err(self.report(d))
            }
            // Upstream's `let%sarek_include _ = "lib.ml"` pulls a helper library into the
            // kernels' scope: here the library is a module file given with the program
            // (`sarek check main.sarek sarek_worklist.sarek`), so the line itself is skipped.
            Tok::LetExt(name)
                if name == "sarek_include"
                    && matches!(self.peek_at(1), Tok::Underscore)
                    && *self.peek_at(2) == Tok::Eq
                    && matches!(self.peek_at(3), Tok::Str(_)) =>
            {
                for _ in 0..4 {
                    self.bump();
                }
                Ok(Vec::new())
            }
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

    /// `let ( mod ) = Int32.rem` (after `let`): upstream's shims that give an operator, for the
    /// OCaml type checker, the meaning it already has in Sarek. Skipped; any other operator
    /// definition is refused, since Sarek's operators are built in.
    fn operator_alias(&mut self, start: Span, col: u32) -> PResult<Vec<Item>> {
        self.bump();
        let op = self.peek().text();
        let op_span = self.bump();
        self.bump();
        if let (Tok::Ident(_), Tok::Ident(_), Tok::Eq) =
            (self.peek(), self.peek_at(1), self.peek_at(2))
        {
            return self.operator_function(start, col, op.to_string(), op_span);
        }
        self.expect_eq_after("the operator")?;
        let mut path = Vec::new();
        let mut end = self.span();
        while let Tok::UIdent(m) = self.peek().clone() {
            if *self.peek_at(1) != Tok::Dot {
                break;
            }
            path.push(m);
            self.bump();
            end = self.bump();
        }
        let target = match self.peek().clone() {
            Tok::Ident(f) if !path.is_empty() => {
                end = self.bump();
                Some(format!("{}.{f}", path.join(".")))
            }
            _ => None,
        };
        let same = target.as_deref().is_some_and(|t| {
            OPERATOR_ALIASES
                .iter()
                .any(|(o, names)| *o == op && names.contains(&t))
        });
        if same {
            return Ok(Vec::new());
        }
        let d = Diagnostic::error(
            start.to(end),
            format!("`let ( {op} ) = ...` redefines an operator"),
        )
        .with_label("Sarek's operators are built in and cannot be redefined")
        .with_secondary(op_span, "this operator")
        .with_note(format!(
            "a shim giving `{op}` the meaning it already has (`let ( mod ) = Int32.rem`) is accepted and skipped"
        ));
        Err(self.report(d))
    }

    /// `let ( / ) a b = Int32.div a (Int32.of_int b)` (after the operator): the shim with
    /// parameters, skipped when its body applies the operator's own library function to the
    /// parameters in order, each perhaps through `Int32.of_int` (the identity in Sarek, where
    /// `int` is int32: OCaml needs it for the int literals of `i / 65536`).
    fn operator_function(
        &mut self,
        start: Span,
        col: u32,
        op: String,
        op_span: Span,
    ) -> PResult<Vec<Item>> {
        let params = [self.lident("a parameter")?, self.lident("a parameter")?];
        self.bump();
        let body = self.with_offside(Some(col), Self::seq_expr)?;
        let is_param = |e: &Expr, p: &Ident| matches!(&e.kind, ExprKind::Var { path, name } if path.is_empty() && name.name == p.name);
        let same = match &body.kind {
            ExprKind::App { func, args } => match (&func.kind, args.as_slice()) {
                (ExprKind::Var { path, name }, [x, y]) if path.len() == 1 => {
                    let module = &path[0].name;
                    let target = format!("{module}.{}", name.name);
                    let operand = |e: &Expr, p: &Ident| {
                        is_param(e, p)
                            || matches!(&e.kind, ExprKind::App { func, args }
                                if module == "Int32"
                                    && matches!(&func.kind, ExprKind::Var { path, name }
                                        if path.len() == 1 && path[0].name == "Int32"
                                            && name.name == "of_int")
                                    && matches!(args.as_slice(), [a] if is_param(a, p)))
                    };
                    OPERATOR_ALIASES
                        .iter()
                        .any(|(o, names)| *o == op && names.contains(&target.as_str()))
                        && operand(x, &params[0])
                        && operand(y, &params[1])
                }
                _ => false,
            },
            _ => false,
        };
        if same {
            return Ok(Vec::new());
        }
        let d = Diagnostic::error(
            start.to(body.span),
            format!("`let ( {op} ) ... = ...` redefines an operator"),
        )
        .with_label("Sarek's operators are built in and cannot be redefined")
        .with_secondary(op_span, "this operator")
        .with_note(format!(
            "a shim giving `{op}` the meaning it already has (`let ( mod ) = Int32.rem`, \
             `let ( / ) a b = Int32.div a (Int32.of_int b)`) is accepted and skipped"
        ));
        Err(self.report(d))
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
            kind: ItemKind::Kernel(KernelDecl {
                name,
                params,
                body,
                prelude: Vec::new(),
            }),
            span,
            attrs,
        })
    }

    /// `[%%kernel let k (p : t) ... = body ...]`: upstream's structure-item form; every
    /// `let` inside is a kernel (as `let%kernel`).
    fn structure_kernels(&mut self) -> PResult<Vec<Item>> {
        let open = self.bump();
        let mut kernels = Vec::new();
        loop {
            while self.eat(&Tok::SemiSemi) {}
            if self.at(&Tok::RBracket) {
                break;
            }
            if !self.at(&Tok::Let) {
                if let Tok::Ident(e) = self.peek()
                    && *e == "external"
                {
                    let d = Diagnostic::error(self.span(), "external kernels are not supported")
                        .with_label("`external` names a kernel written in another language")
                        .with_note("Sarek compiles kernels from their source: there is no pre-built kernel to load")
                        .with_help("write the kernel in Sarek (`[%%kernel let k (p : t) = ...]`)");
                    return Err(self.report(d));
                }
                return Err(self.expected("`let` (a kernel) inside `[%%kernel`"));
            }
            kernels.push(self.kernel_item()?);
        }
        let close = self.expect_closing(&Tok::RBracket, "[%%kernel", open)?;
        if kernels.is_empty() {
            let d = Diagnostic::error(open.to(close), "`[%%kernel]` defines no kernel")
                .with_label("empty");
            return Err(self.report(d));
        }
        Ok(kernels)
    }

    /// `module M = struct items end`; `None` for upstream's host alias of one of its library
    /// modules (`module Std = Sarek_stdlib.Std`, `module Vector = Spoc_core.Vector`), whose
    /// names Sarek already has.
    fn module_item(&mut self) -> PResult<Option<Item>> {
        let start = self.bump();
        let name = match self.peek().clone() {
            Tok::UIdent(name) => Ident {
                name: name.to_string(),
                span: self.bump(),
            },
            _ => return Err(self.expected("a module name after `module`")),
        };
        self.expect_eq_after("the module name")?;
        if let Tok::UIdent(package) = self.peek().clone() {
            let target_start = self.span();
            let target = self.module_path("a module path")?;
            if HOST_PACKAGES.contains(&package) {
                return Ok(None);
            }
            let d = Diagnostic::error(
                target_start.to(target.span),
                format!("`module {}` is an alias of another module", name.name),
            )
            .with_label("not a module of upstream's libraries")
            .with_note(
                "aliases of upstream's libraries (`Sarek_stdlib`, `Sarek_float64`, `Spoc_core`, \
                 ...) are host code and skipped; other aliases are not supported",
            )
            .with_help(format!(
                "write `{package}.` where `{}.` is used, or `open {package}`",
                name.name
            ));
            return Err(self.report(d));
        }
        let (items, end) = self.struct_body()?;
        Ok(Some(Item {
            kind: ItemKind::Module { name, items },
            span: start.to(end),
            attrs: Vec::new(),
        }))
    }

    /// `struct items end`; returns the items and the span of `end`.
    fn struct_body(&mut self) -> PResult<(Vec<Item>, Span)> {
        let open = match self.peek() {
            Tok::Ident(s) if *s == "struct" => self.bump(),
            _ => return Err(self.expected("`struct` (a module body)")),
        };
        let items = self.items_until(Some(&Tok::End));
        if self.fatal {
            return Err(Fail);
        }
        let end = self.expect_closing(&Tok::End, "struct", open)?;
        Ok((items, end))
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

    /// "top-level constant `x` needs a type annotation", reported.
    fn needs_annotation(&mut self, name: &Ident) -> Fail {
        let d = Diagnostic::error(
            name.span,
            format!("top-level constant `{}` needs a type annotation", name.name),
        )
        .with_label("type annotation missing")
        .with_help(format!(
            "write `let {} : int32 = ...` (or the constant's type)",
            name.name
        ));
        self.report(d)
    }

    /// `let [rec] name ...` at top level: a constant, a helper or the `[%kernel fun]` form.
    fn let_item(&mut self) -> PResult<Vec<Item>> {
        let col = self.toks[self.pos].col;
        let start = self.bump();
        // `let (x : t) = c`: an annotated constant written as OCaml prints it.
        if self.at(&Tok::LParen)
            && matches!(self.peek_at(1), Tok::Ident(_))
            && *self.peek_at(2) == Tok::Colon
        {
            let open = self.bump();
            let name = self.lident("a name")?;
            self.bump();
            let ty = self.type_expr()?;
            self.expect_closing(&Tok::RParen, "(", open)?;
            let attrs = self.inner_attributes();
            self.expect_eq_after("the constant's type")?;
            let value = self.with_offside(Some(col), Self::seq_expr)?;
            let span = start.to(value.span);
            return Ok(vec![Item {
                kind: ItemKind::Const { name, ty, value },
                span,
                attrs,
            }]);
        }
        if self.at(&Tok::LParen)
            && *self.peek_at(2) == Tok::RParen
            && OPERATOR_ALIASES
                .iter()
                .any(|(op, _)| *op == self.peek_at(1).text())
        {
            return self.operator_alias(start, col);
        }
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
        // `let make_k () = [%kernel ...]`: upstream's samples build a kernel in a host function
        // of unit; the function is the kernel, under its name.
        if !recursive
            && self.at(&Tok::LParen)
            && *self.peek_at(1) == Tok::RParen
            && *self.peek_at(2) == Tok::Eq
            && matches!(self.peek_at(3), Tok::ExtOpen(_))
        {
            for _ in 0..3 {
                self.bump();
            }
            return self.kernel_extension(start, name, attrs);
        }
        let (mut params, destructured) = self.params()?;
        let fun_value = self.at(&Tok::Eq) && matches!(self.peek_at(1), Tok::Fun | Tok::Function);
        if params.is_empty() && !recursive && !fun_value {
            if self.eat(&Tok::Colon) {
                let ty = self.type_expr()?;
                attrs.extend(self.inner_attributes());
                self.expect_eq_after("the constant's type")?;
                let value = self.with_offside(Some(col), Self::seq_expr)?;
                let span = start.to(value.span);
                return Ok(vec![Item {
                    kind: ItemKind::Const { name, ty, value },
                    span,
                    attrs,
                }]);
            }
            if self.at(&Tok::Eq) && matches!(self.peek_at(1), Tok::ExtOpen(_)) {
                self.bump();
                return self.kernel_extension(start, name, attrs);
            }
            // `let k = snd [%kernel ...]`: upstream's pair (host closure, kernel) reduced to
            // its kernel, which is what a Sarek kernel item is.
            if self.at(&Tok::Eq)
                && matches!(self.peek_at(1), Tok::Ident(f) if *f == "snd")
                && matches!(self.peek_at(2), Tok::ExtOpen(_))
            {
                self.bump();
                self.bump();
                return self.kernel_extension(start, name, attrs);
            }
            // `let fma = Float.fma`: upstream's helper libraries bind the intrinsics their
            // helpers use for OCaml's type checker; such a host alias restates a name Sarek
            // already has and is skipped (upstream's PPX ignores it too).
            if self.at(&Tok::Eq)
                && matches!(self.peek_at(1), Tok::UIdent(_))
                && *self.peek_at(2) == Tok::Dot
                && matches!(self.peek_at(3), Tok::Ident(n) if *n == name.name)
            {
                self.bump();
                let value = self.with_offside(Some(col), Self::seq_expr)?;
                if let ExprKind::Var { path, name: n } = &value.kind
                    && let [module] = path.as_slice()
                    && crate::front::typer::restates_intrinsic(&module.name, &n.name)
                {
                    return Ok(Vec::new());
                }
                return Err(self.needs_annotation(&name));
            }
            // `let k = [%kernel.real64 fun ...]` and other extension nodes: not a constant
            // missing its type, an upstream form Sarek does not have.
            if self.at(&Tok::Eq)
                && let Tok::Extension { name: ext, .. } = self.peek_at(1).clone()
            {
                self.bump();
                let mut d = Diagnostic::error(
                    self.span(),
                    format!("`[%{ext} ...]` is not a Sarek kernel form"),
                )
                .with_label("unsupported extension node")
                .with_help(format!(
                    "write the kernel as `let {} = [%kernel fun (p : t) ... -> ...]`",
                    name.name
                ));
                if ext == "kernel.real64" {
                    d = d.with_note(
                        "upstream's `[%kernel.real64]` expands one body over an abstract \
                         `real64` into a float64 kernel and a double-float (Sarek_df64) one; \
                         Sarek has no `real64` type: write the float64 kernel, or the \
                         Sarek_df64 one",
                    );
                }
                return Err(self.report(d));
            }
            if self.at(&Tok::Eq) {
                return Err(self.needs_annotation(&name));
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
        Ok(vec![Item {
            kind: ItemKind::Fun(decl),
            span,
            attrs,
        }])
    }

    /// `[%kernel [prelude] fun params -> body]` after `let name =`.
    ///
    /// The prelude is upstream's: `let open M in`, helpers (`let [rec] f (x : t) = e in`),
    /// values (`let x = e in`) and `let module Types = struct type ... end in`, in any
    /// order before the `fun`. Helpers become the kernel's [`KernelDecl::prelude`] (scoped
    /// to it), values and opens wrap the body, and the module's types are hoisted before the
    /// kernel as items marked [`PRELUDE_TYPE`] (the typer accepts an identical one twice).
    fn kernel_extension(
        &mut self,
        start: Span,
        name: Ident,
        attrs: Vec<Attribute>,
    ) -> PResult<Vec<Item>> {
        let open = self.bump();
        let mut items = Vec::new();
        let mut prelude: Vec<FunDecl> = Vec::new();
        // Opens and values around the body, outermost first.
        let mut wraps: Vec<PreludeWrap> = Vec::new();
        while self.at(&Tok::Let) {
            let let_start = self.span();
            if *self.peek_at(1) == Tok::Open {
                self.bump();
                self.bump();
                self.eat(&Tok::Bang);
                let module = self.module_path("a module name after `let open`")?;
                self.expect_in_prelude(let_start)?;
                if !BUILTIN_OPENS.contains(&module.name.as_str()) {
                    wraps.push(PreludeWrap::Open(module));
                }
                continue;
            }
            if matches!(self.peek_at(1), Tok::Ident(m) if *m == "module") {
                self.bump();
                let module_start = self.bump();
                if !matches!(self.peek(), Tok::UIdent(_)) {
                    return Err(self.expected("a module name after `let module`"));
                }
                self.bump();
                self.expect_eq_after("the module name")?;
                let (module_items, end) = self.struct_body()?;
                for mut item in module_items {
                    match item.kind {
                        ItemKind::Type(_) => {
                            item.attrs.push(Attribute {
                                name: PRELUDE_TYPE.into(),
                                payload: String::new(),
                                outer: true,
                                span: item.span,
                            });
                            items.push(item);
                        }
                        _ => {
                            let d = Diagnostic::error(
                                item.span,
                                "only type declarations are supported in a kernel's `let module`",
                            )
                            .with_label("not a type declaration")
                            .with_secondary(module_start.to(end), "in this module")
                            .with_help(
                                "define helpers in the prelude itself: `let f (x : t) = ... in`",
                            );
                            self.diags.push(d);
                        }
                    }
                }
                self.expect_in_prelude(let_start)?;
                continue;
            }
            let is_value = match (self.peek_at(1), self.peek_at(2)) {
                (Tok::Rec, _) => false,
                (Tok::Ident(_), Tok::Eq) => !matches!(self.peek_at(3), Tok::Fun | Tok::Function),
                (Tok::Ident(_), Tok::Colon) | (Tok::LParen | Tok::Mut | Tok::Underscore, _) => true,
                _ => false,
            };
            if is_value {
                let wrap = self.prelude_value()?;
                wraps.push(wrap);
                continue;
            }
            let item_start = self.pos;
            let item = self.let_item()?;
            // `let rec f ... = e [@@sarek.inline 4] in`: OCaml's binding attributes.
            let mut binding_attrs = Vec::new();
            while let Tok::Attr { outer: true, .. } = self.peek() {
                binding_attrs.push(self.attribute());
            }
            self.expect_in_prelude(let_start)?;
            for item in item {
                match item.kind {
                    ItemKind::Fun(mut decl) => {
                        decl.attrs.append(&mut binding_attrs);
                        // The opens and values before the helper are in scope in its body.
                        wrap_prelude_helper(&mut decl, &wraps);
                        prelude.push(decl);
                    }
                    ItemKind::Const {
                        name: cname,
                        ty,
                        value,
                    } => wraps.push(PreludeWrap::Value {
                        pattern: Pattern::Var(cname),
                        ty: Some(ty),
                        value: Box::new(value),
                        mentions: self.names_between(item_start, self.pos),
                    }),
                    _ => {
                        let d = Diagnostic::error(item.span, "not supported in a kernel prelude")
                            .with_label("expected a helper, a value, `let open` or `let module`");
                        self.diags.push(d);
                    }
                }
            }
        }
        if !self.eat(&Tok::Fun) {
            return Err(self.expected("`fun` (or a prelude `let ... in`) after `[%kernel`"));
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
        let mut body = Self::bind_params(destructured, body);
        // A kernel parameter keeps its name (it is the launch's ABI): one the values could
        // capture is kept aside under a hidden name around them and bound again inside.
        let kept = conflicting_params(&params, &wraps);
        for p in kept.iter().rev() {
            body = alias(&p.name, &format!("%prelude.{}", p.name.name), body);
        }
        for w in wraps.iter().rev() {
            body = w.wrap(body);
        }
        for p in kept.iter().rev() {
            let hidden = Ident {
                name: format!("%prelude.{}", p.name.name),
                span: p.name.span,
            };
            body = alias(&hidden, &p.name.name, body);
        }
        let close = self.expect_closing(&Tok::RBracket, "[%kernel", open)?;
        let span = start.to(close);
        items.push(Item {
            kind: ItemKind::Kernel(KernelDecl {
                name,
                params,
                body,
                prelude,
            }),
            span,
            attrs,
        });
        Ok(items)
    }

    /// `let pat [: t] = e in` in a kernel prelude (a value the kernel body sees).
    fn prelude_value(&mut self) -> PResult<PreludeWrap> {
        let let_start = self.bump();
        let col = self.toks[self.pos].col;
        let (pattern, mut ty) = self.let_pattern()?;
        if self.eat(&Tok::Colon) {
            ty = Some(self.type_expr()?);
        }
        self.expect_eq_after("the value's name")?;
        let value_start = self.pos;
        let value = self.with_offside(Some(col), Self::seq_expr)?;
        let mentions = self.names_between(value_start, self.pos);
        self.expect_in_prelude(let_start)?;
        Ok(PreludeWrap::Value {
            pattern,
            ty,
            value: Box::new(value),
            mentions,
        })
    }

    /// The lowercase identifiers among tokens `from..to`.
    fn names_between(&self, from: usize, to: usize) -> Vec<String> {
        self.toks[from..to]
            .iter()
            .filter_map(|t| match &t.tok {
                Tok::Ident(name) => Some(name.to_string()),
                _ => None,
            })
            .collect()
    }

    fn expect_in_prelude(&mut self, let_start: Span) -> PResult<()> {
        if self.eat(&Tok::In) {
            return Ok(());
        }
        let _ = let_start;
        Err(self.expected("`in` after a kernel prelude binding"))
    }

    /// A lowercase identifier (or `_`).
    pub(super) fn lident(&mut self, what: &'static str) -> PResult<Ident> {
        match self.peek().clone() {
            Tok::Ident(name) => Ok(Ident {
                name: name.to_string(),
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
                        pattern: Box::new(pattern),
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
            let params = self.type_decl_params();
            let name = self.lident("a type name after `type`")?;
            self.expect_eq_after("the type name")?;
            // A record, or constructors (`A | B`, `A of t`; `M.t` is an abbreviation).
            let declares = matches!(self.peek(), Tok::LBrace | Tok::Bar)
                || (matches!(self.peek(), Tok::UIdent(_)) && *self.peek_at(1) != Tok::Dot);
            let abbreviation = !declares;
            if abbreviation && HOST_TYPE_NAMES.contains(&name.name.as_str()) {
                // `type float32 = float`, `type 'a vector = 'a array`: the aliases an OCaml
                // host file needs for kernel annotations; these names mean that already.
                self.skip_host_type();
                if self.at(&Tok::And) {
                    start = self.bump();
                    continue;
                }
                return Ok(items);
            }
            if let Some(span) = params {
                let d = Diagnostic::error(span, "type parameters are not supported")
                    .with_label("records and variants are monomorphic");
                return Err(self.report(d));
            }
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

    /// `'a` or `('a, 'b)` before a declared type's name; returns their span.
    fn type_decl_params(&mut self) -> Option<Span> {
        match (self.peek(), self.peek_at(1)) {
            (Tok::TyVar(_), _) => Some(self.bump()),
            (Tok::LParen, Tok::TyVar(_)) => {
                let open = self.bump();
                while !matches!(self.peek(), Tok::RParen | Tok::Eof | Tok::Eq) {
                    self.bump();
                }
                let close = if self.at(&Tok::RParen) {
                    self.bump()
                } else {
                    self.prev_span()
                };
                Some(open.to(close))
            }
            _ => None,
        }
    }

    /// Skip the right-hand side of a host type alias (any OCaml type: `('a, 'b) Vector.t`).
    fn skip_host_type(&mut self) {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                Tok::Eof => return,
                Tok::LParen | Tok::LBracket => depth += 1,
                Tok::RParen | Tok::RBracket if depth > 0 => depth -= 1,
                Tok::SemiSemi
                | Tok::Let
                | Tok::LetExt(_)
                | Tok::ItemExtOpen(_)
                | Tok::Type
                | Tok::Open
                | Tok::And
                | Tok::End
                | Tok::RBracket
                | Tok::Attr { outer: true, .. }
                    if depth == 0 =>
                {
                    return;
                }
                Tok::Ident(m) if depth == 0 && *m == "module" => return,
                _ => {}
            }
            self.bump();
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
                name: Ident {
                    name: name.to_string(),
                    span,
                },
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
        loop {
            let (modules, id) = match self.peek().clone() {
                Tok::Ident(name) => (
                    Vec::new(),
                    Ident {
                        name: name.to_string(),
                        span: self.bump(),
                    },
                ),
                Tok::UIdent(_) if *self.peek_at(1) == Tok::Dot => self.qualified_type_name()?,
                _ => return Ok(ty),
            };
            self.type_node()?;
            let span = ty.span.to(id.span);
            // Upstream spellings: `t Vector.t` is `t vector`; the old `t Arr.t Global.t` is a
            // global array, i.e. `t vector` (`Global.t` marks the memory space of `Arr.t`).
            let name = match (modules.last().map(String::as_str), id.name.as_str()) {
                (Some("Vector"), "t" | "vector") | (Some("Arr"), "t") => "vector",
                (Some("Global"), "t") if matches!(&ty.kind, TypeExprKind::App(_, c) if c.name == "vector") =>
                {
                    ty.span = span;
                    continue;
                }
                (_, n) => n,
            };
            let id = Ident {
                name: name.to_string(),
                span: id.span,
            };
            ty = TypeExpr {
                kind: TypeExprKind::App(Box::new(ty), id),
                span,
            };
        }
    }

    /// `M.N.name` in a type: the modules and the name. The program's types share one
    /// namespace, so `Geometry_lib.point` is `point` (as `M.C` is `C` for constructors).
    fn qualified_type_name(&mut self) -> PResult<(Vec<String>, Ident)> {
        let mut modules = Vec::new();
        while let Tok::UIdent(m) = self.peek().clone() {
            if *self.peek_at(1) != Tok::Dot {
                break;
            }
            modules.push(m.to_string());
            self.bump();
            self.bump();
        }
        match self.peek().clone() {
            Tok::Ident(name) => Ok((
                modules,
                Ident {
                    name: name.to_string(),
                    span: self.bump(),
                },
            )),
            _ => Err(self.expected("a type name after the module path")),
        }
    }

    fn type_atom(&mut self) -> PResult<TypeExpr> {
        match self.peek().clone() {
            Tok::Ident(name) => {
                let span = self.bump();
                Ok(TypeExpr {
                    kind: TypeExprKind::Named(Ident {
                        name: name.to_string(),
                        span,
                    }),
                    span,
                })
            }
            Tok::TyVar(name) => {
                let span = self.bump();
                Ok(TypeExpr {
                    kind: TypeExprKind::Var(Ident {
                        name: name.to_string(),
                        span,
                    }),
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
            Tok::UIdent(_) if *self.peek_at(1) == Tok::Dot => {
                let (_, id) = self.qualified_type_name()?;
                Ok(TypeExpr {
                    span: id.span,
                    kind: TypeExprKind::Named(id),
                })
            }
            Tok::UIdent(name) => Err(self.fail(SyntaxError::TypeExpectedFoundConstructor {
                name: name.to_string(),
            })),
            _ => Err(self.expected("a type")),
        }
    }
}
