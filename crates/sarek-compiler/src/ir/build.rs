//! Building IR by hand through the Rust API.
//!
//! Lowering is the usual producer of [`Kernel`]s. This module is for kernels written directly
//! in the IR: generator and interpreter tests, constructs the surface language cannot spell,
//! and kernels that embed target source through [`StmtKind::Native`] (only such kernels
//! contain it; see [`native`]).
//!
//! [`KernelBuilder`] owns the kernel under construction and its tables, so a variable read,
//! an element read, a field read or a call gets its type from the declaration. The free
//! functions build the nodes that need no table. Result types follow the IR's rules
//! (comparisons, `&&` and `||` give bool; other binary and unary operators the operand's
//! type), so a well-formed kernel built here passes [`super::validate::validate`]; nothing
//! else is checked, which lets tests build malformed kernels on purpose. Every node has the
//! dummy span: set [`Stmt::span`] where a test needs a located statement. Build the body
//! before [`KernelBuilder::finish`], which consumes the builder the body's reads borrow.
//!
//! ```
//! use sarek_compiler::ir::{Ty, build::*};
//! use sarek_compiler::types::BinOp;
//!
//! // y.(i) <- a *. x.(i) +. y.(i) when i < n
//! let mut b = KernelBuilder::new("saxpy");
//! let (x, y) = (b.vector("x", Ty::F32), b.vector("y", Ty::F32));
//! let (a, n) = (b.param("a", Ty::F32), b.param("n", Ty::I32));
//! let i = b.var("i", Ty::I32);
//! let update = add(mul(b.read(a), b.index(x, b.read(i))), b.index(y, b.read(i)));
//! let body = vec![
//!     let_(i, global_idx()),
//!     if_(bin(BinOp::Lt, b.read(i), b.read(n)), vec![store(y, b.read(i), update)], vec![]),
//! ];
//! let kernel = b.finish(body);
//! assert_eq!(sarek_compiler::ir::validate::validate(&kernel), Ok(()));
//! ```

use super::{
    Block, Ctor, Expr, ExprKind, Field, FuncId, Function, Kernel, LValue, Record, RecordId, Stmt,
    StmtKind, Ty, VarId, VarInfo, Variant, VariantId,
};
use crate::diag::Span;
use crate::intrinsics::{AtomicOp, Axis, Geometry, Intrinsic};
use crate::types::{BinOp, Literal, MemSpace, Scalar, UnOp};

/// A kernel under construction: declare its variables, records, variants and helpers, build
/// the body with the typed reads below, then [`finish`](KernelBuilder::finish).
#[derive(Clone, Debug)]
pub struct KernelBuilder {
    kernel: Kernel,
}

impl KernelBuilder {
    pub fn new(name: &str) -> KernelBuilder {
        KernelBuilder {
            kernel: Kernel {
                name: name.into(),
                span: Span::DUMMY,
                vars: vec![],
                params: vec![],
                body: vec![],
                records: vec![],
                variants: vec![],
                functions: vec![],
            },
        }
    }

    /// The kernel so far (its tables; the body is set by `finish`).
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// Declare a variable (a local, a helper parameter, an array) in the kernel's table.
    pub fn declare(&mut self, name: &str, ty: Ty, mutable: bool) -> VarId {
        self.kernel.vars.push(VarInfo {
            name: name.into(),
            ty,
            mutable,
            span: Span::DUMMY,
        });
        VarId(self.kernel.vars.len() as u32 - 1)
    }
    /// An immutable variable.
    pub fn var(&mut self, name: &str, ty: Ty) -> VarId {
        self.declare(name, ty, false)
    }
    /// A mutable variable.
    pub fn mut_var(&mut self, name: &str, ty: Ty) -> VarId {
        self.declare(name, ty, true)
    }
    /// The next kernel parameter.
    pub fn param(&mut self, name: &str, ty: Ty) -> VarId {
        let v = self.var(name, ty);
        self.kernel.params.push(v);
        v
    }
    /// The next kernel parameter, one the body may assign.
    pub fn mut_param(&mut self, name: &str, ty: Ty) -> VarId {
        let v = self.mut_var(name, ty);
        self.kernel.params.push(v);
        v
    }
    /// The next kernel parameter, a vector of `elem`.
    pub fn vector(&mut self, name: &str, elem: Ty) -> VarId {
        self.param(name, vector_of(elem))
    }
    /// A shared or per-thread array of `size` elements (declare it with [`declare_array`]).
    pub fn array(&mut self, name: &str, elem: Ty, space: MemSpace, size: u32) -> VarId {
        self.var(name, array_of(elem, space, Some(size)))
    }
    /// A record type; a name starting with `_tup` marks a tuple record (fields `_0.._n`).
    pub fn record(&mut self, name: &str, fields: &[(&str, Ty)]) -> RecordId {
        self.kernel.records.push(Record {
            name: name.into(),
            fields: fields
                .iter()
                .map(|(name, ty)| Field {
                    name: (*name).into(),
                    ty: ty.clone(),
                })
                .collect(),
            is_tuple: name.starts_with("_tup"),
        });
        RecordId(self.kernel.records.len() as u32 - 1)
    }
    /// A variant type: each constructor with its flattened payload fields.
    pub fn variant(&mut self, name: &str, ctors: &[(&str, Vec<Ty>)]) -> VariantId {
        self.kernel.variants.push(Variant {
            name: name.into(),
            ctors: ctors
                .iter()
                .map(|(name, fields)| Ctor {
                    name: (*name).into(),
                    fields: fields.clone(),
                })
                .collect(),
        });
        VariantId(self.kernel.variants.len() as u32 - 1)
    }
    /// A helper; callees must be added before their callers.
    pub fn func(&mut self, name: &str, params: Vec<VarId>, ret: Ty, body: Block) -> FuncId {
        self.kernel.functions.push(Function {
            name: name.into(),
            span: Span::DUMMY,
            params,
            ret,
            body,
        });
        FuncId(self.kernel.functions.len() as u32 - 1)
    }

    /// Read a variable (a vector or array read this way is the whole buffer, as atomics and
    /// helper calls take it).
    pub fn read(&self, v: VarId) -> Expr {
        Expr::new(ExprKind::Var(v), self.kernel.var(v).ty.clone())
    }
    /// Read element `i` of a vector or array variable.
    ///
    /// # Panics
    /// If `base` is neither.
    pub fn index(&self, base: VarId, i: Expr) -> Expr {
        let ty = self
            .kernel
            .var(base)
            .ty
            .elem()
            .expect("index of a vector or array");
        Expr::new(
            ExprKind::Index {
                base,
                index: Box::new(i),
            },
            ty.clone(),
        )
    }
    /// Read field `field` of a record value.
    ///
    /// # Panics
    /// If `e` is not a record of this kernel.
    pub fn field(&self, e: Expr, field: u32) -> Expr {
        let Ty::Record(r) = e.ty else {
            panic!("field of a non-record {:?}", e.ty)
        };
        let ty = self.kernel.record(r).fields[field as usize].ty.clone();
        Expr::new(
            ExprKind::Field {
                base: Box::new(e),
                field,
            },
            ty,
        )
    }
    /// Payload field `field` of constructor `ctor` of a variant value.
    ///
    /// # Panics
    /// If `value` is not a variant of this kernel.
    pub fn payload(&self, value: Expr, ctor: u32, field: u32) -> Expr {
        let Ty::Variant(v) = value.ty else {
            panic!("payload of a non-variant {:?}", value.ty)
        };
        let ty = self.kernel.variant(v).ctors[ctor as usize].fields[field as usize].clone();
        Expr::new(
            ExprKind::Payload {
                value: Box::new(value),
                ctor,
                field,
            },
            ty,
        )
    }
    /// Call helper `f` (its result type from its declaration).
    pub fn call(&self, f: FuncId, args: Vec<Expr>) -> Expr {
        let ty = self.kernel.function(f).ret.clone();
        Expr::new(ExprKind::Call { func: f, args }, ty)
    }
    /// `length v` of a vector or array variable.
    pub fn length(&self, v: VarId) -> Expr {
        intrinsic(Intrinsic::Length, vec![self.read(v)], Ty::I32)
    }

    /// A fresh variable of `init`'s type and its `let`.
    pub fn bind(&mut self, name: &str, init: Expr, mutable: bool) -> (VarId, Stmt) {
        let v = self.declare(name, init.ty.clone(), mutable);
        (v, let_(v, init))
    }

    /// The kernel with `body`.
    pub fn finish(mut self, body: Block) -> Kernel {
        self.kernel.body = body;
        self.kernel
    }
}

/// `elem vector` (a global buffer).
pub fn vector_of(elem: Ty) -> Ty {
    Ty::Vector(Box::new(elem))
}
/// An array type; `size` is `None` only for a helper parameter.
pub fn array_of(elem: Ty, space: MemSpace, size: Option<u32>) -> Ty {
    Ty::Array {
        elem: Box::new(elem),
        space,
        size,
    }
}

pub fn lit(l: Literal) -> Expr {
    Expr::lit(l)
}
pub fn lit_i32(v: i32) -> Expr {
    Expr::lit(Literal::I32(v))
}
pub fn lit_i64(v: i64) -> Expr {
    Expr::lit(Literal::I64(v))
}
pub fn lit_f32(v: f32) -> Expr {
    Expr::lit(Literal::F32(v))
}
pub fn lit_f64(v: f64) -> Expr {
    Expr::lit(Literal::F64(v))
}
pub fn lit_bool(v: bool) -> Expr {
    Expr::lit(Literal::Bool(v))
}

/// A binary operation: bool for comparisons, `&&` and `||`, else the left operand's type.
pub fn bin(op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
    let ty = if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) {
        Ty::BOOL
    } else {
        lhs.ty.clone()
    };
    Expr::new(
        ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
            nowrap: false,
        },
        ty,
    )
}
pub fn add(lhs: Expr, rhs: Expr) -> Expr {
    bin(BinOp::Add, lhs, rhs)
}
pub fn sub(lhs: Expr, rhs: Expr) -> Expr {
    bin(BinOp::Sub, lhs, rhs)
}
pub fn mul(lhs: Expr, rhs: Expr) -> Expr {
    bin(BinOp::Mul, lhs, rhs)
}
pub fn div(lhs: Expr, rhs: Expr) -> Expr {
    bin(BinOp::Div, lhs, rhs)
}
pub fn lt(lhs: Expr, rhs: Expr) -> Expr {
    bin(BinOp::Lt, lhs, rhs)
}
/// A unary operation (of the operand's type).
pub fn un(op: UnOp, operand: Expr) -> Expr {
    let ty = operand.ty.clone();
    Expr::new(
        ExprKind::Unary {
            op,
            operand: Box::new(operand),
        },
        ty,
    )
}
/// `cond ? then_value : else_value`; both operands must be effect-free and unable to fault.
pub fn select(cond: Expr, then_value: Expr, else_value: Expr) -> Expr {
    let ty = then_value.ty.clone();
    Expr::new(
        ExprKind::Select {
            cond: Box::new(cond),
            then_value: Box::new(then_value),
            else_value: Box::new(else_value),
        },
        ty,
    )
}
/// A record value of type `record`, fields in declaration order.
pub fn record_value(record: RecordId, fields: Vec<Expr>) -> Expr {
    Expr::new(ExprKind::Record { record, fields }, Ty::Record(record))
}
/// Constructor `ctor` of `variant` with its flattened payload.
pub fn ctor(variant: VariantId, ctor: u32, fields: Vec<Expr>) -> Expr {
    Expr::new(
        ExprKind::Ctor {
            variant,
            ctor,
            fields,
        },
        Ty::Variant(variant),
    )
}
/// The constructor index of a variant value.
pub fn tag(value: Expr) -> Expr {
    Expr::new(ExprKind::Tag(Box::new(value)), Ty::I32)
}
/// A built-in with its result type (the target type, for `Convert`).
pub fn intrinsic(op: Intrinsic, args: Vec<Expr>, ty: Ty) -> Expr {
    Expr::new(ExprKind::Intrinsic { op, args }, ty)
}
/// An atomic on `args[0]` (the vector or array variable, read whole): returns the old value.
pub fn atomic(op: AtomicOp, args: Vec<Expr>, ty: Ty) -> Expr {
    intrinsic(Intrinsic::Atomic(op), args, ty)
}
pub fn geometry(g: Geometry) -> Expr {
    intrinsic(Intrinsic::Geometry(g), vec![], Ty::I32)
}
/// `global_thread_id` (x axis).
pub fn global_idx() -> Expr {
    geometry(Geometry::GlobalIdx(Axis::X))
}
/// `thread_idx_x`.
pub fn thread_idx() -> Expr {
    geometry(Geometry::ThreadIdx(Axis::X))
}
/// Numeric conversion of `e` to `to`.
pub fn convert(e: Expr, to: Scalar) -> Expr {
    intrinsic(Intrinsic::Convert, vec![e], Ty::Scalar(to))
}

/// A statement with the dummy span.
pub fn st(kind: StmtKind) -> Stmt {
    Stmt {
        kind,
        span: Span::DUMMY,
    }
}
/// `let v = init`.
pub fn let_(var: VarId, init: Expr) -> Stmt {
    st(StmtKind::Let {
        var,
        init: Some(init),
    })
}
/// A mutable `v` declared without a value (assigned on every path before use).
pub fn let_uninit(var: VarId) -> Stmt {
    st(StmtKind::Let { var, init: None })
}
/// Bring a shared or per-thread array into scope.
pub fn declare_array(var: VarId) -> Stmt {
    st(StmtKind::Array { var })
}
/// `place := value` for any place.
pub fn assign_to(place: LValue, value: Expr) -> Stmt {
    st(StmtKind::Assign { place, value })
}
/// `v := value`.
pub fn assign(var: VarId, value: Expr) -> Stmt {
    assign_to(LValue::Var(var), value)
}
/// The place `base.(index)`.
pub fn element(base: VarId, index: Expr) -> LValue {
    LValue::Index {
        base,
        index: Box::new(index),
    }
}
/// `base.(index) <- value`.
pub fn store(base: VarId, index: Expr, value: Expr) -> Stmt {
    assign_to(element(base, index), value)
}
/// Evaluate for effects.
pub fn expr_stmt(e: Expr) -> Stmt {
    st(StmtKind::Expr(e))
}
pub fn if_(cond: Expr, then_block: Block, else_block: Block) -> Stmt {
    st(StmtKind::If {
        cond,
        then_block,
        else_block,
    })
}
/// `for var = start to end do body done` (inclusive, no unroll hint).
pub fn for_(var: VarId, start: Expr, end: Expr, body: Block) -> Stmt {
    for_loop(var, start, end, false, body, None)
}
/// A `for` loop in full: `downto` counts down, `unroll` is the `[@unroll n]` hint.
pub fn for_loop(
    var: VarId,
    start: Expr,
    end: Expr,
    downto: bool,
    body: Block,
    unroll: Option<u32>,
) -> Stmt {
    st(StmtKind::For {
        var,
        start,
        end,
        downto,
        body,
        unroll,
    })
}
/// `while cond do body done` (no unroll hint).
pub fn while_(cond: Expr, body: Block) -> Stmt {
    st(StmtKind::While {
        cond,
        body,
        unroll: None,
    })
}
pub fn barrier() -> Stmt {
    st(StmtKind::Barrier)
}
/// A memory fence at block (`false`) or device (`true`) scope.
pub fn fence(device: bool) -> Stmt {
    st(StmtKind::Fence { device })
}
/// Return from a helper.
pub fn return_(value: Option<Expr>) -> Stmt {
    st(StmtKind::Return(value))
}
/// Target source pasted as is. Only the Rust API produces it, and a kernel containing it is
/// for the one target whose source it is: legalize leaves such a kernel's names alone.
pub fn native(source: &str) -> Stmt {
    st(StmtKind::Native(source.into()))
}
