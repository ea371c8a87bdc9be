//! The built-in functions of the language, resolved.
//!
//! The typer maps every spelling in LANGUAGE.md (including module-qualified names and the OCaml
//! library aliases) to one [`Intrinsic`]; everything after the typer works with this enum only.
//! Overloaded intrinsics (math over float32/float64, atomics over element types) carry no type:
//! the operand types in the typed AST / IR say which instance is meant.

/// Which of the three grid axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    X,
    Y,
    Z,
}

impl Axis {
    pub fn index(self) -> usize {
        self as usize
    }
    pub fn letter(self) -> char {
        ['x', 'y', 'z'][self as usize]
    }
}

/// Thread-geometry values, all int32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Geometry {
    ThreadIdx(Axis),
    BlockIdx(Axis),
    BlockDim(Axis),
    GridDim(Axis),
    /// `block_idx * block_dim + thread_idx` on the axis (`global_thread_id` = `GlobalIdx(X)`).
    GlobalIdx(Axis),
    /// `warp_size` (32 everywhere we run; the interpreter documents it).
    WarpSize,
}

impl Geometry {
    /// Whether the value differs between threads of one block (drives the convergence check).
    pub fn is_thread_varying(self) -> bool {
        matches!(self, Geometry::ThreadIdx(_) | Geometry::GlobalIdx(_))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    Add,
    Sub,
    Min,
    Max,
    And,
    Or,
    Xor,
    Exch,
    /// `atomic_cas a i expected desired`.
    Cas,
    /// `atomic_inc a i`: adds one.
    Inc,
    /// `atomic_dec a i`: subtracts one.
    Dec,
}

impl AtomicOp {
    /// Number of value operands after `(array, index)`.
    pub fn value_operands(self) -> usize {
        match self {
            AtomicOp::Inc | AtomicOp::Dec => 0,
            AtomicOp::Cas => 2,
            _ => 1,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WarpOp {
    /// `warp_shuffle x lane`: value of `x` in lane `lane`.
    Shuffle,
    ShuffleDown,
    ShuffleUp,
    ShuffleXor,
    /// bool -> bool
    VoteAll,
    /// bool -> bool
    VoteAny,
    /// bool -> int32 mask of lanes (lane k -> bit k).
    Ballot,
}

/// Math functions over float32 and float64 (one or more float arguments of the same type).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    Sqrt,
    Rsqrt,
    Exp,
    Exp2,
    Expm1,
    Log,
    Log2,
    Log10,
    Log1p,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Floor,
    Ceil,
    /// Round half away from zero (C `round`).
    Round,
    Trunc,
    /// `abs_float`, `fabs`.
    Fabs,
    Pow,
    Atan2,
    Hypot,
    Copysign,
    Fmin,
    Fmax,
    /// `fma a b c` = a*b+c with one rounding.
    Fma,
}

impl MathFn {
    pub fn arity(self) -> usize {
        match self {
            MathFn::Pow
            | MathFn::Atan2
            | MathFn::Hypot
            | MathFn::Copysign
            | MathFn::Fmin
            | MathFn::Fmax => 2,
            MathFn::Fma => 3,
            _ => 1,
        }
    }
    /// The C/OCaml name (`sqrt`, `atan2`, ...), used by the C-family dialects as a base.
    pub fn c_name(self) -> &'static str {
        use MathFn::*;
        match self {
            Sqrt => "sqrt",
            Rsqrt => "rsqrt",
            Exp => "exp",
            Exp2 => "exp2",
            Expm1 => "expm1",
            Log => "log",
            Log2 => "log2",
            Log10 => "log10",
            Log1p => "log1p",
            Sin => "sin",
            Cos => "cos",
            Tan => "tan",
            Asin => "asin",
            Acos => "acos",
            Atan => "atan",
            Sinh => "sinh",
            Cosh => "cosh",
            Tanh => "tanh",
            Floor => "floor",
            Ceil => "ceil",
            Round => "round",
            Trunc => "trunc",
            Fabs => "fabs",
            Pow => "pow",
            Atan2 => "atan2",
            Hypot => "hypot",
            Copysign => "copysign",
            Fmin => "fmin",
            Fmax => "fmax",
            Fma => "fma",
        }
    }
}

/// A resolved built-in. Operand and result types live on the surrounding typed node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    Geometry(Geometry),
    /// `block_barrier ()`.
    BlockBarrier,
    /// `memory_fence_block ()`.
    FenceBlock,
    /// `memory_fence_device ()`.
    FenceDevice,
    Warp(WarpOp),
    /// `(array, index, values...)`; returns the old value.
    Atomic(AtomicOp),
    Math(MathFn),
    /// `abs` on any numeric type.
    Abs,
    /// `min` on any numeric type.
    Min,
    /// `max` on any numeric type.
    Max,
    /// Count leading zeros (int32 -> int32, int64 -> int32... see typer: result has operand type).
    Clz,
    /// Population count (result has the operand type).
    Popcount,
    /// Numeric conversion to the node's result type (`float32 e`, `int_of_float e`, ...).
    /// Float to int truncates toward zero.
    Convert,
    /// `length v`: int32 length of a vector (or array).
    Length,
}
