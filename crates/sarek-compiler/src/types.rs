//! Scalar kinds, memory spaces and operators shared by the typed AST and the IR.

use std::fmt;

/// The scalar types of the language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scalar {
    Bool,
    I32,
    I64,
    F32,
    F64,
}

impl Scalar {
    pub fn is_int(self) -> bool {
        matches!(self, Scalar::I32 | Scalar::I64)
    }
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }
    pub fn is_numeric(self) -> bool {
        self != Scalar::Bool
    }
    /// Size in bytes of the natural representation (bool: 1 in C, widened by shader targets).
    pub fn size(self) -> u32 {
        match self {
            Scalar::Bool => 1,
            Scalar::I32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::F64 => 8,
        }
    }
    /// The language spelling (`int32`, `float64`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I32 => "int32",
            Scalar::I64 => "int64",
            Scalar::F32 => "float32",
            Scalar::F64 => "float64",
        }
    }
    /// Short mangling used in generated names (`i32`, `f64`, `bool`).
    pub fn short(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where an array lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemSpace {
    /// Device memory (kernel vector parameters).
    Global,
    /// Block-local (`let%shared`).
    Shared,
    /// Per-thread (`create_array n Local`).
    Local,
}

/// Binary operators after type resolution. Arithmetic operators apply to the operand type
/// (both sides equal); comparisons yield bool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// Truncating division on integers.
    Div,
    /// Remainder with the sign of the dividend (C `%`, OCaml `mod`); `fmod` on floats.
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Short-circuit.
    And,
    /// Short-circuit.
    Or,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    /// Logical (zero-filling) shift right: `lsr`.
    LShr,
    /// Arithmetic (sign-filling) shift right: `asr`.
    AShr,
}

impl BinOp {
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
    /// The operator in C-like target languages (C, CUDA, OpenCL, Metal, GLSL, WGSL);
    /// both right shifts are `>>` (the generators make `lsr` logical by operand type).
    pub fn c_symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::LShr | BinOp::AShr => ">>",
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "mod",
            BinOp::Eq => "=",
            BinOp::Ne => "<>",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::BitAnd => "land",
            BinOp::BitOr => "lor",
            BinOp::BitXor => "lxor",
            BinOp::Shl => "lsl",
            BinOp::LShr => "lsr",
            BinOp::AShr => "asr",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// Arithmetic negation (`-e`, `-.e`).
    Neg,
    /// Boolean `not`.
    Not,
    /// Bitwise `lnot`.
    BitNot,
}

/// A literal value of a scalar type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Literal {
    Bool(bool),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
}

impl Literal {
    pub fn scalar(&self) -> Scalar {
        match self {
            Literal::Bool(_) => Scalar::Bool,
            Literal::I32(_) => Scalar::I32,
            Literal::I64(_) => Scalar::I64,
            Literal::F32(_) => Scalar::F32,
            Literal::F64(_) => Scalar::F64,
        }
    }
}
