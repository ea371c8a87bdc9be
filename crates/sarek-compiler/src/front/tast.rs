//! The typed, name-resolved program: what the typer produces and what the front-end passes
//! (monomorphisation, recursion, convergence) and lowering consume.
//!
//! Every name is resolved: variables to [`VarId`]s (unique per program), helpers to
//! [`FunId`]s, record fields and constructors to indices into the program's type tables,
//! built-ins to [`Intrinsic`]s. After monomorphisation no [`Ty::Param`] remains anywhere and
//! every [`Function`] is monomorphic.

use crate::diag::Span;
use crate::intrinsics::Intrinsic;
use crate::types::{BinOp, Literal, MemSpace, Scalar, UnOp};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FunId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VariantId(pub u32);

/// A resolved type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    Unit,
    Scalar(Scalar),
    Record(RecordId),
    Variant(VariantId),
    /// Tuple of scalars (lowering turns it into a `_tup_*` record).
    Tuple(Vec<Ty>),
    /// Kernel vector parameter (global buffer).
    Vector(Box<Ty>),
    /// Shared or local array; `size` is known for declared arrays.
    Array {
        elem: Box<Ty>,
        space: MemSpace,
        size: Option<u32>,
    },
    /// The n-th type parameter of the enclosing polymorphic helper (`'a`); gone after mono.
    Param(u32),
}

impl Ty {
    pub fn scalar(&self) -> Option<Scalar> {
        match self {
            Ty::Scalar(s) => Some(*s),
            _ => None,
        }
    }
    pub const BOOL: Ty = Ty::Scalar(Scalar::Bool);
    pub const I32: Ty = Ty::Scalar(Scalar::I32);
    pub const I64: Ty = Ty::Scalar(Scalar::I64);
    pub const F32: Ty = Ty::Scalar(Scalar::F32);
    pub const F64: Ty = Ty::Scalar(Scalar::F64);
}

#[derive(Clone, Debug, PartialEq)]
pub struct RecordDef {
    pub name: String,
    pub span: Span,
    pub fields: Vec<FieldDef>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FieldDef {
    pub name: String,
    pub ty: Ty,
    pub span: Span,
    /// Declared `mutable`: as in OCaml, it may be stored through an immutable `let`.
    pub mutable: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VariantDef {
    pub name: String,
    pub span: Span,
    pub ctors: Vec<CtorDef>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CtorDef {
    pub name: String,
    /// One entry per component (`Rect of float32 * float32` has two).
    pub args: Vec<Ty>,
    pub span: Span,
}

/// A variable binder: parameters, lets, for indices, pattern variables, shared arrays.
#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl {
    pub id: VarId,
    /// Source name (may contain `'`, may shadow).
    pub name: String,
    pub ty: Ty,
    pub mutable: bool,
    pub span: Span,
}

#[derive(Debug, PartialEq)]
pub struct Program {
    pub records: Vec<RecordDef>,
    pub variants: Vec<VariantDef>,
    /// Helpers in definition order (a helper only calls earlier ones or itself). Local helpers
    /// are lifted here by the typer (captured variables become extra leading parameters).
    pub functions: Vec<Function>,
    pub kernels: Vec<Kernel>,
    /// Whether the source program was tall (`ast::Program::tall`): copies, drops and passes
    /// run on the front end's own stack.
    pub tall: bool,
}

// A chain of thousands of `let`s is a tree that deep (the parser bounds true nesting, not
// chains): a tall program is copied and freed on a stack of the front end's size, whatever
// the caller's.
impl Clone for Program {
    fn clone(&self) -> Program {
        crate::stack::deep_if(self.tall, || Program {
            records: self.records.clone(),
            variants: self.variants.clone(),
            functions: self.functions.clone(),
            kernels: self.kernels.clone(),
            tall: self.tall,
        })
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let bodies = (
            std::mem::take(&mut self.functions),
            std::mem::take(&mut self.kernels),
        );
        if !bodies.0.is_empty() || !bodies.1.is_empty() {
            crate::stack::deep_if(self.tall, move || drop(bodies));
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub id: FunId,
    /// Unique in the program: a lifted local helper is `kernel__f`, a later helper shadowing
    /// an earlier one of its name gets `_2`, instances made by mono a mangled name
    /// (`pick__f32`).
    pub name: String,
    /// The name as the user wrote it (`f`, `pick`), for messages.
    pub source_name: String,
    pub span: Span,
    /// Number of type parameters (`Ty::Param(0..n)`); 0 after mono.
    pub type_params: u32,
    pub params: Vec<VarDecl>,
    pub ret: Ty,
    pub body: Expr,
    pub recursive: bool,
    /// `[@sarek.inline N]` / `pragma ["sarek.inline N"]`.
    pub inline_depth: Option<InlineMark>,
}

/// How many levels a recursive helper is inlined, and the form the mark was written in, so
/// the messages about it (too large to unroll, recursed past it at run time) quote it back.
#[derive(Clone, Debug, PartialEq)]
pub struct InlineMark {
    pub depth: u32,
    pub form: InlineForm,
}

#[derive(Clone, Debug, PartialEq)]
pub enum InlineForm {
    /// `[@name N]`, or `[@@name N]` when `outer`; `name` is `sarek.inline` or `inline`.
    Attribute { name: String, outer: bool },
    /// `pragma ["sarek.inline N"]` on the body.
    Pragma,
}

impl std::fmt::Display for InlineMark {
    /// The mark as source text: `[@sarek.inline 4]`, `[@@inline 4]`, `pragma ["sarek.inline 4"]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let depth = self.depth;
        match &self.form {
            InlineForm::Attribute { name, outer } => {
                let at = if *outer { "@@" } else { "@" };
                write!(f, "[{at}{name} {depth}]")
            }
            InlineForm::Pragma => write!(f, "pragma [\"sarek.inline {depth}\"]"),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: String,
    pub span: Span,
    pub params: Vec<VarDecl>,
    /// Type `unit`.
    pub body: Expr,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
    pub span: Span,
}

/// A pattern in a `match` arm or a `let`.
#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    Wildcard,
    Bind(VarDecl),
    Lit(Literal),
    /// Constructor `ctor` of `variant`; one sub-pattern per component.
    Ctor {
        variant: VariantId,
        ctor: u32,
        args: Vec<Pattern>,
    },
    Tuple(Vec<Pattern>),
    Or(Vec<Pattern>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Arm {
    pub pattern: Pattern,
    pub body: Expr,
    pub span: Span,
}

/// Loop hints (`[@unroll N]`, `pragma ["unroll N"]`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoopHints {
    pub unroll: Option<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Unit,
    Lit(Literal),
    Var(VarId),
    /// `let pattern = value in body` (pattern is `Bind` for plain lets, `Tuple` for
    /// destructuring, `Wildcard` for `let _ = ...`).
    Let {
        pattern: Pattern,
        value: Box<Expr>,
        body: Box<Expr>,
    },
    /// `x := e`
    Assign {
        var: VarId,
        value: Box<Expr>,
    },
    If {
        cond: Box<Expr>,
        then_branch: Box<Expr>,
        else_branch: Option<Box<Expr>>,
    },
    For {
        var: VarDecl,
        start: Box<Expr>,
        end: Box<Expr>,
        downto: bool,
        body: Box<Expr>,
        hints: LoopHints,
    },
    While {
        cond: Box<Expr>,
        body: Box<Expr>,
        hints: LoopHints,
    },
    /// Evaluate in order; value of the last (unit if empty).
    Seq(Vec<Expr>),
    /// Exhaustiveness already checked by the typer.
    Match {
        scrutinee: Box<Expr>,
        arms: Vec<Arm>,
    },
    /// `base.(index)` on a vector or array.
    Index {
        base: Box<Expr>,
        index: Box<Expr>,
    },
    /// `base.(index) <- value`
    IndexSet {
        base: Box<Expr>,
        index: Box<Expr>,
        value: Box<Expr>,
    },
    /// `base.field` (field index into the record's declaration).
    Field {
        base: Box<Expr>,
        record: RecordId,
        field: u32,
    },
    /// `base.field <- value`; `base` is a place: a variable, an `Index`, or a `Field` of one.
    FieldSet {
        base: Box<Expr>,
        record: RecordId,
        field: u32,
        value: Box<Expr>,
    },
    /// Fields in declaration order.
    Record {
        record: RecordId,
        fields: Vec<Expr>,
    },
    Ctor {
        variant: VariantId,
        ctor: u32,
        args: Vec<Expr>,
    },
    Tuple(Vec<Expr>),
    /// Helper call; `type_args` instantiate the callee's type parameters (empty after mono).
    Call {
        func: FunId,
        type_args: Vec<Ty>,
        args: Vec<Expr>,
    },
    /// Built-in call; for `Convert` the target type is `Expr::ty`.
    Intrinsic {
        op: Intrinsic,
        args: Vec<Expr>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Unary {
        op: UnOp,
        operand: Box<Expr>,
    },
    /// `let%shared (v : elem) = size in body`: `var.ty` is `Array { space: Shared, size }`.
    LetShared {
        var: VarDecl,
        body: Box<Expr>,
    },
    /// `let a = create_array n Local in body`: `var.ty` is `Array { space: Local, size }`.
    LetLocalArray {
        var: VarDecl,
        body: Box<Expr>,
    },
    /// `let%superstep name = step in rest`: step, then a block barrier, then rest.
    Superstep {
        name: String,
        divergent: bool,
        step: Box<Expr>,
        rest: Box<Expr>,
    },
    /// `ignore e`
    Ignore(Box<Expr>),
    /// Reaching this stops the kernel with `message`, located at the expression: bounded
    /// inlining puts it where a recursive call goes deeper than the declared depth.
    /// `fallback` (the zero value of the type) is what a GPU thread continues with after
    /// recording the trap, since it cannot stop mid-expression; the launch then fails.
    Trap {
        message: String,
        fallback: Box<Expr>,
    },
}

impl Expr {
    /// Direct sub-expressions, in evaluation order (an iterator over the node's own fields:
    /// passes walk every node, so this allocates nothing).
    pub fn children(&self) -> Children<'_> {
        fn fixed<'e>(
            a: Option<&'e Expr>,
            b: Option<&'e Expr>,
            c: Option<&'e Expr>,
        ) -> Children<'e> {
            Children::new([a, b, c], &[], &[])
        }
        match &self.kind {
            ExprKind::Unit | ExprKind::Lit(_) | ExprKind::Var(_) => fixed(None, None, None),
            ExprKind::Let { value, body, .. } => fixed(Some(value), Some(body), None),
            ExprKind::Assign { value, .. } => fixed(Some(value), None, None),
            ExprKind::If {
                cond,
                then_branch,
                else_branch,
            } => fixed(Some(cond), Some(then_branch), else_branch.as_deref()),
            ExprKind::For {
                start, end, body, ..
            } => fixed(Some(start), Some(end), Some(body)),
            ExprKind::While { cond, body, .. } => fixed(Some(cond), Some(body), None),
            ExprKind::Seq(items)
            | ExprKind::Record { fields: items, .. }
            | ExprKind::Ctor { args: items, .. }
            | ExprKind::Tuple(items)
            | ExprKind::Call { args: items, .. }
            | ExprKind::Intrinsic { args: items, .. } => {
                Children::new([None, None, None], items, &[])
            }
            ExprKind::Match { scrutinee, arms } => {
                Children::new([Some(scrutinee), None, None], &[], arms)
            }
            ExprKind::Index { base, index } => fixed(Some(base), Some(index), None),
            ExprKind::IndexSet { base, index, value } => {
                fixed(Some(base), Some(index), Some(value))
            }
            ExprKind::Field { base, .. } => fixed(Some(base), None, None),
            ExprKind::FieldSet { base, value, .. } => fixed(Some(base), Some(value), None),
            ExprKind::Binary { lhs, rhs, .. } => fixed(Some(lhs), Some(rhs), None),
            ExprKind::Unary { operand, .. } => fixed(Some(operand), None, None),
            ExprKind::LetShared { body, .. } | ExprKind::LetLocalArray { body, .. } => {
                fixed(Some(body), None, None)
            }
            ExprKind::Superstep { step, rest, .. } => fixed(Some(step), Some(rest), None),
            ExprKind::Ignore(inner)
            | ExprKind::Trap {
                fallback: inner, ..
            } => fixed(Some(inner), None, None),
        }
    }

    /// [`Expr::children`], mutably.
    pub fn children_mut(&mut self) -> ChildrenMut<'_> {
        fn fixed<'e>(
            a: Option<&'e mut Expr>,
            b: Option<&'e mut Expr>,
            c: Option<&'e mut Expr>,
        ) -> ChildrenMut<'e> {
            ChildrenMut::new([a, b, c], &mut [], &mut [])
        }
        match &mut self.kind {
            ExprKind::Unit | ExprKind::Lit(_) | ExprKind::Var(_) => fixed(None, None, None),
            ExprKind::Let { value, body, .. } => fixed(Some(value), Some(body), None),
            ExprKind::Assign { value, .. } => fixed(Some(value), None, None),
            ExprKind::If {
                cond,
                then_branch,
                else_branch,
            } => fixed(Some(cond), Some(then_branch), else_branch.as_deref_mut()),
            ExprKind::For {
                start, end, body, ..
            } => fixed(Some(start), Some(end), Some(body)),
            ExprKind::While { cond, body, .. } => fixed(Some(cond), Some(body), None),
            ExprKind::Seq(items)
            | ExprKind::Record { fields: items, .. }
            | ExprKind::Ctor { args: items, .. }
            | ExprKind::Tuple(items)
            | ExprKind::Call { args: items, .. }
            | ExprKind::Intrinsic { args: items, .. } => {
                ChildrenMut::new([None, None, None], items, &mut [])
            }
            ExprKind::Match { scrutinee, arms } => {
                ChildrenMut::new([Some(scrutinee), None, None], &mut [], arms)
            }
            ExprKind::Index { base, index } => fixed(Some(base), Some(index), None),
            ExprKind::IndexSet { base, index, value } => {
                fixed(Some(base), Some(index), Some(value))
            }
            ExprKind::Field { base, .. } => fixed(Some(base), None, None),
            ExprKind::FieldSet { base, value, .. } => fixed(Some(base), Some(value), None),
            ExprKind::Binary { lhs, rhs, .. } => fixed(Some(lhs), Some(rhs), None),
            ExprKind::Unary { operand, .. } => fixed(Some(operand), None, None),
            ExprKind::LetShared { body, .. } | ExprKind::LetLocalArray { body, .. } => {
                fixed(Some(body), None, None)
            }
            ExprKind::Superstep { step, rest, .. } => fixed(Some(step), Some(rest), None),
            ExprKind::Ignore(inner)
            | ExprKind::Trap {
                fallback: inner, ..
            } => fixed(Some(inner), None, None),
        }
    }
}

/// The direct sub-expressions of one node: up to three fields, then a list of expressions,
/// then the bodies of match arms (each part possibly empty).
pub struct Children<'a> {
    fixed: std::array::IntoIter<Option<&'a Expr>, 3>,
    items: std::slice::Iter<'a, Expr>,
    arms: std::slice::Iter<'a, Arm>,
}

impl<'a> Children<'a> {
    fn new(fixed: [Option<&'a Expr>; 3], items: &'a [Expr], arms: &'a [Arm]) -> Self {
        Children {
            fixed: fixed.into_iter(),
            items: items.iter(),
            arms: arms.iter(),
        }
    }
}

impl<'a> Iterator for Children<'a> {
    type Item = &'a Expr;
    fn next(&mut self) -> Option<&'a Expr> {
        for f in self.fixed.by_ref() {
            if f.is_some() {
                return f;
            }
        }
        self.items
            .next()
            .or_else(|| self.arms.next().map(|a| &a.body))
    }
}

/// [`Children`], mutably.
pub struct ChildrenMut<'a> {
    fixed: std::array::IntoIter<Option<&'a mut Expr>, 3>,
    items: std::slice::IterMut<'a, Expr>,
    arms: std::slice::IterMut<'a, Arm>,
}

impl<'a> ChildrenMut<'a> {
    fn new(fixed: [Option<&'a mut Expr>; 3], items: &'a mut [Expr], arms: &'a mut [Arm]) -> Self {
        ChildrenMut {
            fixed: fixed.into_iter(),
            items: items.iter_mut(),
            arms: arms.iter_mut(),
        }
    }
}

impl<'a> Iterator for ChildrenMut<'a> {
    type Item = &'a mut Expr;
    fn next(&mut self) -> Option<&'a mut Expr> {
        for f in self.fixed.by_ref() {
            if f.is_some() {
                return f;
            }
        }
        match self.items.next() {
            Some(e) => Some(e),
            None => self.arms.next().map(|a| &mut a.body),
        }
    }
}
