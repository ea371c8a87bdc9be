//! The kernel IR: what lowering produces and every generator, the interpreter and the CPU
//! executor consume.
//!
//! One [`Kernel`] is self-contained: its parameters, body, the record and variant tables it
//! uses, and the helpers it calls (each lowered once, callees before callers).
//!
//! Variables live in one table per kernel ([`Kernel::vars`]); binders and references carry a
//! [`VarId`]. A variable's *name* is stored once, in the table, so renaming (legalize) is a
//! change of table entries and references follow by construction. Names are the source names
//! (possibly shadowing, possibly containing `'`) until a target's legalize pass runs.
//!
//! Expressions are evaluated exactly once, left to right; only `Expr::Call` and atomic /
//! warp intrinsics have effects. Control flow, declarations and stores are statements.

pub mod analysis;
pub mod build;
pub mod fresh;
pub mod print;
pub mod specialize;
pub mod validate;
pub mod visit;

use crate::diag::Span;
use crate::intrinsics::Intrinsic;
use crate::types::{BinOp, Literal, MemSpace, Scalar, UnOp};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VariantId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub u32);

/// IR types. Tuples have become `_tup_*` records.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    Unit,
    Scalar(Scalar),
    Record(RecordId),
    Variant(VariantId),
    /// Global buffer (kernel parameter, or a helper parameter bound to one).
    Vector(Box<Ty>),
    /// Shared/local array of a compile-time size, or (as a helper parameter type) unsized.
    Array {
        elem: Box<Ty>,
        space: MemSpace,
        size: Option<u32>,
    },
}

impl Ty {
    pub fn scalar(&self) -> Option<Scalar> {
        match self {
            Ty::Scalar(s) => Some(*s),
            _ => None,
        }
    }
    /// Element type of a vector or array.
    pub fn elem(&self) -> Option<&Ty> {
        match self {
            Ty::Vector(e) | Ty::Array { elem: e, .. } => Some(e),
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
pub struct Record {
    /// Source name, or `_tup_<types>` for a synthesized tuple record (fields `_0.._n`).
    pub name: String,
    pub fields: Vec<Field>,
    /// True for `_tup_*` records.
    pub is_tuple: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub name: String,
    pub ty: Ty,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    pub name: String,
    pub ctors: Vec<Ctor>,
}

/// A constructor: its payload is flattened to one field per component (seed 003).
#[derive(Clone, Debug, PartialEq)]
pub struct Ctor {
    pub name: String,
    pub fields: Vec<Ty>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VarInfo {
    pub name: String,
    pub ty: Ty,
    pub mutable: bool,
    /// Where the binder was written (dummy for synthesized temporaries).
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: String,
    pub span: Span,
    /// Indexed by `VarId`.
    pub vars: Vec<VarInfo>,
    /// Kernel parameters in source order (scalars, records, variants, vectors).
    pub params: Vec<VarId>,
    pub body: Block,
    /// Records used anywhere in the kernel (parameters, locals, shared arrays, payloads, helpers).
    pub records: Vec<Record>,
    /// Variants used anywhere in the kernel.
    pub variants: Vec<Variant>,
    /// Helpers, callees before callers. Their parameters and locals are in `vars` too.
    pub functions: Vec<Function>,
}

impl Kernel {
    /// A copy of the kernel whose bodies (the kernel's, then each helper's, in order) are
    /// `rewrite` of the originals: a pass that rewrites bodies copies the rest once and the
    /// bodies never.
    pub fn map_bodies(&self, mut rewrite: impl FnMut(&Block) -> Block) -> Kernel {
        Kernel {
            name: self.name.clone(),
            span: self.span,
            vars: self.vars.clone(),
            params: self.params.clone(),
            body: rewrite(&self.body),
            records: self.records.clone(),
            variants: self.variants.clone(),
            functions: self
                .functions
                .iter()
                .map(|f| Function {
                    name: f.name.clone(),
                    span: f.span,
                    params: f.params.clone(),
                    ret: f.ret.clone(),
                    body: rewrite(&f.body),
                })
                .collect(),
        }
    }

    pub fn var(&self, id: VarId) -> &VarInfo {
        &self.vars[id.0 as usize]
    }
    pub fn record(&self, id: RecordId) -> &Record {
        &self.records[id.0 as usize]
    }
    pub fn variant(&self, id: VariantId) -> &Variant {
        &self.variants[id.0 as usize]
    }
    pub fn function(&self, id: FuncId) -> &Function {
        &self.functions[id.0 as usize]
    }

    /// Every trap in the kernel and its helpers, with the statement's span, in code order.
    pub fn traps(&self) -> Vec<(&Trap, Span)> {
        let mut out = Vec::new();
        for body in std::iter::once(&self.body).chain(self.functions.iter().map(|f| &f.body)) {
            visit::for_each_stmt(body, &mut |s| {
                if let StmtKind::Trap(t) = &s.kind {
                    out.push((t, s.span));
                }
            });
        }
        out.sort_by_key(|(t, _)| t.code);
        out
    }

    /// The trap a device reported by its code (its first copy).
    pub fn trap(&self, code: u32) -> Option<(&Trap, Span)> {
        self.traps().into_iter().find(|(t, _)| t.code == code)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub span: Span,
    pub params: Vec<VarId>,
    pub ret: Ty,
    pub body: Block,
}

pub type Block = Vec<Stmt>;

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

/// A place that can be assigned.
#[derive(Clone, Debug, PartialEq)]
pub enum LValue {
    /// A mutable local (or a local being initialised by lowering).
    Var(VarId),
    /// Element of a vector or array variable.
    Index { base: VarId, index: Box<Expr> },
    /// Field of a record place.
    Field { base: Box<LValue>, field: u32 },
}

/// The size of a shared array declared without one (`let%shared (t : float32) = () in`):
/// the launch's block size along x, as upstream Sarek sizes it. The runtime replaces it with
/// the real size right before generating code for a launch ([`specialize::block_size`]);
/// a generator given a kernel that still has it refuses it, located.
pub const SIZE_BLOCK_DIM_X: u32 = u32::MAX;

/// The unroll hint of a loop asking to unroll it completely (`pragma ["unroll"]`):
/// `#pragma unroll` in CUDA and OpenCL C, `[[unroll]]` in GLSL, nothing where the target has
/// no hint. Any other `unroll` value `n` is a count.
pub const UNROLL_FULL: u32 = u32::MAX;

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// Declare a scalar/record/variant variable, scoped to the rest of the enclosing block.
    /// `init` is `None` only for mutable variables assigned on every path before use.
    Let {
        var: VarId,
        init: Option<Expr>,
    },
    /// Declare a shared (`MemSpace::Shared`) or per-thread (`MemSpace::Local`) array variable,
    /// scoped to the rest of the enclosing block. Its type is `Ty::Array` with a size.
    Array {
        var: VarId,
    },
    Assign {
        place: LValue,
        value: Expr,
    },
    /// Evaluate for effects (a call, an atomic whose result is ignored).
    Expr(Expr),
    If {
        cond: Expr,
        then_block: Block,
        else_block: Block,
    },
    /// Inclusive bounds, evaluated once; `var` is an int32 bound fresh per iteration.
    For {
        var: VarId,
        start: Expr,
        end: Expr,
        downto: bool,
        body: Block,
        unroll: Option<u32>,
    },
    While {
        cond: Expr,
        body: Block,
        unroll: Option<u32>,
    },
    /// Match on a variant value: `arms` pair a constructor (None = default) with the variables
    /// bound to its payload fields (None for `_`).
    Match {
        scrutinee: Expr,
        variant: VariantId,
        arms: Vec<MatchArm>,
    },
    /// Nested scope.
    Block(Block),
    /// Block barrier (all threads of the block, with shared-memory ordering).
    Barrier,
    /// Memory fence at block or device scope.
    Fence {
        device: bool,
    },
    /// Return from a helper.
    Return(Option<Expr>),
    Break,
    Continue,
    /// Opaque target source (only through the Rust API; legalize leaves such kernels alone).
    Native(String),
    /// Stop the launch with an error: the interpreter faults at once; GPU targets record
    /// `code` in a status word the runtime reads back (first trap wins) and the thread
    /// carries on, so the code after a trap must be safe to run (lowering follows it with
    /// plain zero values only). `code` is at least 1 and names one (span, message) site
    /// (copies made by inlining share it); [`Kernel::trap`] finds the site from the code
    /// the device reports.
    Trap(Trap),
}

/// A trap site: what to tell the user when a launch reaches it.
#[derive(Clone, Debug, PartialEq)]
pub struct Trap {
    pub code: u32,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MatchArm {
    /// Constructor index, or `None` for the default arm.
    pub ctor: Option<u32>,
    /// One entry per payload field of `ctor` (empty for the default arm).
    pub bindings: Vec<Option<VarId>>,
    pub body: Block,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Lit(Literal),
    Var(VarId),
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
        /// An integer operation proven never to overflow ([`crate::passes::loop_step`] sets
        /// it): the value is the same as the wrapping one, and a target whose signed overflow
        /// is undefined may print plain signed arithmetic, which its compiler can reason
        /// about (trip counts, unrolling). False everywhere else; dropping it is always safe.
        nowrap: bool,
    },
    Unary {
        op: UnOp,
        operand: Box<Expr>,
    },
    /// Element read of a vector or array variable.
    Index {
        base: VarId,
        index: Box<Expr>,
    },
    /// Record field read.
    Field {
        base: Box<Expr>,
        field: u32,
    },
    /// Record construction, fields in declaration order.
    Record {
        record: RecordId,
        fields: Vec<Expr>,
    },
    /// Variant construction: payload fields flattened.
    Ctor {
        variant: VariantId,
        ctor: u32,
        fields: Vec<Expr>,
    },
    /// The constructor index of a variant value.
    Tag(Box<Expr>),
    /// Payload field `field` of constructor `ctor` of a variant value.
    Payload {
        value: Box<Expr>,
        ctor: u32,
        field: u32,
    },
    /// `cond ? a : b` where both operands are effect-free and cannot fault (lowering only
    /// produces it under that condition, so targets may evaluate both).
    Select {
        cond: Box<Expr>,
        then_value: Box<Expr>,
        else_value: Box<Expr>,
    },
    /// Helper call.
    Call {
        func: FuncId,
        args: Vec<Expr>,
    },
    /// Built-in: geometry, math, conversions (target type = `Expr::ty`), atomics (first
    /// argument is the array/vector variable as an `ExprKind::Var`), warp operations, `Length`.
    /// Barriers and fences are statements, never intrinsics here.
    Intrinsic {
        op: Intrinsic,
        args: Vec<Expr>,
    },
}

impl Expr {
    pub fn new(kind: ExprKind, ty: Ty) -> Expr {
        Expr { kind, ty }
    }
    pub fn lit(l: Literal) -> Expr {
        Expr {
            ty: Ty::Scalar(l.scalar()),
            kind: ExprKind::Lit(l),
        }
    }
    pub fn i32(v: i32) -> Expr {
        Expr::lit(Literal::I32(v))
    }

    /// Direct sub-expressions, in evaluation order: an iterator over the node's own fields, so
    /// analyses that visit every node allocate nothing.
    pub fn children(&self) -> impl Iterator<Item = &Expr> {
        let (fixed, list): ([Option<&Expr>; 3], &[Expr]) = match &self.kind {
            ExprKind::Lit(_) | ExprKind::Var(_) => ([None, None, None], &[]),
            ExprKind::Binary { lhs, rhs, .. } => ([Some(lhs), Some(rhs), None], &[]),
            ExprKind::Unary { operand: x, .. }
            | ExprKind::Index { index: x, .. }
            | ExprKind::Field { base: x, .. }
            | ExprKind::Tag(x)
            | ExprKind::Payload { value: x, .. } => ([Some(x), None, None], &[]),
            ExprKind::Record { fields: xs, .. }
            | ExprKind::Ctor { fields: xs, .. }
            | ExprKind::Call { args: xs, .. }
            | ExprKind::Intrinsic { args: xs, .. } => ([None, None, None], xs),
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => ([Some(cond), Some(then_value), Some(else_value)], &[]),
        };
        fixed.into_iter().flatten().chain(list)
    }

    /// Whether evaluating this expression has no effect besides its value: helper calls,
    /// atomics and warp operations are the only effects an expression can have.
    pub fn is_effect_free(&self) -> bool {
        match &self.kind {
            ExprKind::Lit(_) | ExprKind::Var(_) => true,
            ExprKind::Binary { lhs, rhs, .. } => lhs.is_effect_free() && rhs.is_effect_free(),
            ExprKind::Unary { operand: x, .. }
            | ExprKind::Index { index: x, .. }
            | ExprKind::Field { base: x, .. }
            | ExprKind::Tag(x)
            | ExprKind::Payload { value: x, .. } => x.is_effect_free(),
            ExprKind::Record { fields: xs, .. } | ExprKind::Ctor { fields: xs, .. } => {
                xs.iter().all(Expr::is_effect_free)
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                cond.is_effect_free() && then_value.is_effect_free() && else_value.is_effect_free()
            }
            ExprKind::Call { .. } => false,
            ExprKind::Intrinsic { op, args } => {
                !matches!(op, Intrinsic::Atomic(_) | Intrinsic::Warp(_))
                    && args.iter().all(Expr::is_effect_free)
            }
        }
    }
}
