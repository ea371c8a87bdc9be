//! The surface syntax tree produced by the parser. Every node carries a [`Span`].
//!
//! Names are unresolved strings here; the typer resolves them into the typed AST
//! ([`crate::front::tast`]).

use crate::diag::Span;

#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// `[@name payload]`, `[@@name payload]` or the `pragma ["..."]` strings.
#[derive(Clone, Debug, PartialEq)]
pub struct Attribute {
    /// e.g. `sarek.inline`, `unroll`, `divergent`, `sarek.type`.
    pub name: String,
    /// The payload as written (`10`, `4`), trimmed; empty when absent.
    pub payload: String,
    /// `[@@name]` (OCaml's item and binding attributes) rather than `[@name]`, so messages
    /// quote the attribute as written.
    pub outer: bool,
    pub span: Span,
}

#[derive(Debug, PartialEq)]
pub struct Program {
    pub items: Vec<Item>,
    /// Whether some expression is taller than the caller's stack is assumed to hold
    /// (`parser::CALLER_STACK_HEIGHT`): passes over the program then run on the front end's
    /// own stack (`crate::stack::deep_if`).
    pub tall: bool,
}

// Chains of thousands of `let`s or terms make trees that deep: a tall program is copied and
// freed on the front end's own stack, whatever the caller's (see `parser::MAX_HEIGHT`).
impl Clone for Program {
    fn clone(&self) -> Program {
        crate::stack::deep_if(self.tall, || Program {
            items: self.items.clone(),
            tall: self.tall,
        })
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let items = std::mem::take(&mut self.items);
        if !items.is_empty() {
            crate::stack::deep_if(self.tall, move || drop(items));
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub kind: ItemKind,
    pub span: Span,
    /// Item attributes (`[@@sarek.type]`, ...): accepted; consumers ignore unknown ones.
    pub attrs: Vec<Attribute>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ItemKind {
    Type(TypeDecl),
    /// `let name : ty = value` (annotation required).
    Const {
        name: Ident,
        ty: TypeExpr,
        value: Expr,
    },
    Fun(FunDecl),
    Kernel(KernelDecl),
    /// `module M = struct ... end`, or a whole file given as module `M` (the file name,
    /// capitalised): its helpers and constants are `M.f`, visible unqualified inside it.
    /// Its types join the program's one type namespace (`M.point` is `point`).
    Module {
        name: Ident,
        items: Vec<Item>,
    },
    /// `open M` at top level for a module of the program (`open Std` and the other built-in
    /// modules are dropped by the parser: their names are always in scope).
    Open(Ident),
}

#[derive(Clone, Debug, PartialEq)]
pub struct TypeDecl {
    pub name: Ident,
    pub kind: TypeDeclKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TypeDeclKind {
    Record(Vec<FieldDecl>),
    Variant(Vec<CtorDecl>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct FieldDecl {
    pub name: Ident,
    pub ty: TypeExpr,
    /// `mutable x : t` (accepted; all record fields of vector elements are writable).
    pub mutable: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CtorDecl {
    pub name: Ident,
    /// `C of a * b` gives two argument types; `C` none.
    pub args: Vec<TypeExpr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TypeExpr {
    pub kind: TypeExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TypeExprKind {
    /// `int32`, `float`, `point`, `unit`, ...
    Named(Ident),
    /// `'a`
    Var(Ident),
    /// `t vector`, `t array` (the constructor name is the Ident).
    App(Box<TypeExpr>, Ident),
    /// `t1 * t2 * ...`
    Tuple(Vec<TypeExpr>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub ty: Option<TypeExpr>,
    pub span: Span,
}

/// A top-level helper (`let f ... = e`, `let rec f ... = e`).
#[derive(Clone, Debug, PartialEq)]
pub struct FunDecl {
    pub name: Ident,
    pub recursive: bool,
    pub params: Vec<Param>,
    pub ret: Option<TypeExpr>,
    /// Attributes on the definition (`[@sarek.inline 10]` after the return type).
    pub attrs: Vec<Attribute>,
    pub body: Expr,
}

/// `let%kernel name params = body` or `let name = [%kernel fun params -> body]`.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelDecl {
    pub name: Ident,
    pub params: Vec<Param>,
    pub body: Expr,
    /// Helpers of an upstream-style prelude (`[%kernel let f x = ... in fun ... -> ...]`),
    /// in order: visible to the kernel and to the helpers after them, not to later items.
    pub prelude: Vec<FunDecl>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

// The parser moves expressions by value through every level of its descent: the large
// payloads (patterns, type expressions) are boxed to keep each move small.
const _: () = assert!(std::mem::size_of::<Expr>() <= 128);

/// A literal as written; integer/float literal types are decided by the typer.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    Unit,
    Bool(bool),
    /// Unsuffixed or `l`-suffixed integer (int32).
    Int(i128),
    /// `L`-suffixed integer (int64).
    Int64(i128),
    /// Unsuffixed float: float32 unless inference makes it float64.
    Float(f64),
    /// `d`-suffixed float (float64).
    Float64(f64),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    Wildcard(Span),
    Var(Ident),
    /// Literal pattern (unary minus folded in).
    Lit(Lit, Span),
    /// `C`, `C p`, `C (p1, p2)`: args are the components.
    Ctor {
        name: Ident,
        args: Vec<Pattern>,
        span: Span,
    },
    Tuple(Vec<Pattern>, Span),
    /// `p1 | p2`
    Or(Vec<Pattern>, Span),
}

impl Pattern {
    pub fn span(&self) -> Span {
        match self {
            Pattern::Wildcard(s)
            | Pattern::Lit(_, s)
            | Pattern::Tuple(_, s)
            | Pattern::Or(_, s) => *s,
            Pattern::Var(i) => i.span,
            Pattern::Ctor { span, .. } => *span,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct MatchArm {
    pub pattern: Pattern,
    /// `| p when guard -> body` (the typer desugars guards into plain matches).
    pub guard: Option<Box<Expr>>,
    pub body: Expr,
    pub span: Span,
}

/// Surface operators, before overload resolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    AddF,
    SubF,
    MulF,
    DivF,
    Mod,
    Eq,
    /// `<>` and `!=`.
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Land,
    Lor,
    Lxor,
    Lsl,
    Lsr,
    Asr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    /// `-e`
    Neg,
    /// `-.e`
    NegF,
    Not,
    Lnot,
}

impl Expr {
    /// Call `f` on each direct sub-expression (match guards included).
    pub fn for_each_child<'e>(&'e self, mut f: impl FnMut(&'e Expr)) {
        match &self.kind {
            ExprKind::Lit(_) | ExprKind::Var { .. } | ExprKind::Extension { .. } => {}
            ExprKind::Let {
                value: a, body: b, ..
            }
            | ExprKind::LetShared {
                size: a, body: b, ..
            }
            | ExprKind::LetSuperstep {
                step: a, rest: b, ..
            }
            | ExprKind::While {
                cond: a, body: b, ..
            }
            | ExprKind::Index { base: a, index: b }
            | ExprKind::FieldSet {
                base: a, value: b, ..
            }
            | ExprKind::Binary { lhs: a, rhs: b, .. } => {
                f(a);
                f(b);
            }
            ExprKind::LetFun { decl, body } => {
                f(&decl.body);
                f(body);
            }
            ExprKind::LetOpen { body: a, .. }
            | ExprKind::Assign { value: a, .. }
            | ExprKind::Field { base: a, .. }
            | ExprKind::Unary { operand: a, .. }
            | ExprKind::Annot { expr: a, .. }
            | ExprKind::Attributed { expr: a, .. }
            | ExprKind::Pragma { body: a, .. } => f(a),
            ExprKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                f(cond);
                f(then_branch);
                if let Some(e) = else_branch {
                    f(e);
                }
            }
            ExprKind::For {
                start, end, body, ..
            } => {
                f(start);
                f(end);
                f(body);
            }
            ExprKind::Seq(es) | ExprKind::Tuple(es) | ExprKind::Ctor { args: es, .. } => {
                es.iter().for_each(f)
            }
            ExprKind::Match { scrutinee, arms } => {
                f(scrutinee);
                for a in arms {
                    if let Some(g) = &a.guard {
                        f(g);
                    }
                    f(&a.body);
                }
            }
            ExprKind::IndexSet { base, index, value } => {
                f(base);
                f(index);
                f(value);
            }
            ExprKind::Record(fs) => fs.iter().for_each(|(_, e)| f(e)),
            ExprKind::App { func, args } => {
                f(func);
                args.iter().for_each(f);
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Lit(Lit),
    /// A name; `path` holds module qualifiers (`Std.thread_idx_x` -> path ["Std"]).
    Var {
        path: Vec<Ident>,
        name: Ident,
    },
    /// `let [mut] pat [: ty] = value in body`; `let x = mut e in` sets `mutable`.
    Let {
        pattern: Box<Pattern>,
        mutable: bool,
        ty: Option<Box<TypeExpr>>,
        value: Box<Expr>,
        body: Box<Expr>,
    },
    /// `let f (a : t) ... [: r] = e in body` (local helper, non-recursive).
    LetFun {
        decl: Box<FunDecl>,
        body: Box<Expr>,
    },
    /// `let%shared (name : elem) = size in body`.
    LetShared {
        name: Ident,
        elem: Box<TypeExpr>,
        size: Box<Expr>,
        body: Box<Expr>,
    },
    /// `let%superstep[@divergent] name = step in rest`.
    LetSuperstep {
        name: Ident,
        divergent: bool,
        step: Box<Expr>,
        rest: Box<Expr>,
    },
    /// `let open M in body`.
    LetOpen {
        module: Ident,
        body: Box<Expr>,
    },
    /// `x := e`
    Assign {
        target: Ident,
        value: Box<Expr>,
    },
    If {
        cond: Box<Expr>,
        then_branch: Box<Expr>,
        else_branch: Option<Box<Expr>>,
    },
    For {
        var: Ident,
        start: Box<Expr>,
        end: Box<Expr>,
        downto: bool,
        body: Box<Expr>,
        attrs: Vec<Attribute>,
    },
    While {
        cond: Box<Expr>,
        body: Box<Expr>,
        attrs: Vec<Attribute>,
    },
    /// `e1; e2; ...` (also `begin ... end`).
    Seq(Vec<Expr>),
    Match {
        scrutinee: Box<Expr>,
        arms: Vec<MatchArm>,
    },
    /// `a.(i)`
    Index {
        base: Box<Expr>,
        index: Box<Expr>,
    },
    /// `a.(i) <- v`
    IndexSet {
        base: Box<Expr>,
        index: Box<Expr>,
        value: Box<Expr>,
    },
    /// `e.f`
    Field {
        base: Box<Expr>,
        field: Ident,
    },
    /// `e.f <- v` (e.g. `v.(i).x <- 1.0`)
    FieldSet {
        base: Box<Expr>,
        field: Ident,
        value: Box<Expr>,
    },
    /// `{ f = e; ... }`
    Record(Vec<(Ident, Expr)>),
    /// `C`, `C e`, `C (e1, e2)`: args are the components.
    Ctor {
        name: Ident,
        args: Vec<Expr>,
    },
    Tuple(Vec<Expr>),
    /// Juxtaposition `f a b` (also intrinsic calls; `f ()` has one Unit argument).
    App {
        func: Box<Expr>,
        args: Vec<Expr>,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    /// `(e : t)`
    Annot {
        expr: Box<Expr>,
        ty: Box<TypeExpr>,
    },
    /// `pragma ["unroll 4"; ...] e`
    Pragma {
        args: Vec<String>,
        body: Box<Expr>,
    },
    /// `e [@attr]` on an expression other than a loop (kept for diagnostics).
    Attributed {
        expr: Box<Expr>,
        attrs: Vec<Attribute>,
    },
    /// `[%native ...]` and any other extension node in expression position. The typer refuses it.
    Extension {
        name: String,
    },
}
