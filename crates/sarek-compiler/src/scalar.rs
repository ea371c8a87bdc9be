//! The meaning of every scalar operation, in one place: the typer's constant folder, the IR
//! folding passes, the reference interpreter and the `cpu` backend's math calls all compute
//! through these functions, so a value folded at compile time is the value computed at run
//! time.
//!
//! Choices where the language leaves room:
//! - int32/int64 `+ - *`, negation and `abs` wrap (two's complement); `min_int / -1` wraps to
//!   `min_int` and `min_int mod -1` is 0; division by zero is a run-time fault, so it is never
//!   folded ([`binary`] gives `None`).
//! - `/` truncates toward zero, `mod` takes the sign of the dividend; on floats `mod` is C
//!   `fmod`.
//! - shift counts are masked to the operand width (`x lsl 33` on int32 is `x lsl 1`), as on
//!   x86 and PTX `shf`; `lsr` fills with zeros, `asr` with the sign bit.
//! - float arithmetic is in the operand's own precision (float32 in `f32`).
//! - float to int conversion truncates toward zero and saturates out of range (NaN gives 0),
//!   exactly Rust's `as`; each float target converts from the source type directly (int64 to
//!   float32 through float64 would round twice).
//! - `min`/`max` on floats are IEEE `fmin`/`fmax` (a NaN operand is ignored).
//! - `rsqrt` is `1/sqrt(x)` computed in float64 and rounded once for float32; for float64 it
//!   is `1.0 / x.sqrt()`.

use crate::intrinsics::MathFn;
use crate::types::{BinOp, Literal, Scalar, UnOp};

/// A two's-complement integer type of the language (int32, int64).
pub trait Int: Copy + Eq + Ord {
    const BITS: u32;
    fn wrapping_add(self, y: Self) -> Self;
    fn wrapping_sub(self, y: Self) -> Self;
    fn wrapping_mul(self, y: Self) -> Self;
    fn wrapping_neg(self) -> Self;
    fn wrapping_abs(self) -> Self;
    fn checked_div(self, y: Self) -> Option<Self>;
    fn checked_rem(self, y: Self) -> Option<Self>;
    fn wrapping_div_minus_one(self) -> Self;
    fn zero() -> Self;
    fn wrapping_shl(self, n: u32) -> Self;
    fn ashr(self, n: u32) -> Self;
    fn lshr(self, n: u32) -> Self;
}

macro_rules! int_impl {
    ($t:ty, $u:ty) => {
        impl Int for $t {
            const BITS: u32 = <$t>::BITS;
            #[inline(always)]
            fn wrapping_add(self, y: Self) -> Self {
                <$t>::wrapping_add(self, y)
            }
            #[inline(always)]
            fn wrapping_sub(self, y: Self) -> Self {
                <$t>::wrapping_sub(self, y)
            }
            #[inline(always)]
            fn wrapping_mul(self, y: Self) -> Self {
                <$t>::wrapping_mul(self, y)
            }
            #[inline(always)]
            fn wrapping_neg(self) -> Self {
                <$t>::wrapping_neg(self)
            }
            #[inline(always)]
            fn wrapping_abs(self) -> Self {
                <$t>::wrapping_abs(self)
            }
            #[inline(always)]
            fn checked_div(self, y: Self) -> Option<Self> {
                <$t>::checked_div(self, y)
            }
            #[inline(always)]
            fn checked_rem(self, y: Self) -> Option<Self> {
                <$t>::checked_rem(self, y)
            }
            #[inline(always)]
            fn wrapping_div_minus_one(self) -> Self {
                <$t>::wrapping_div(self, -1)
            }
            #[inline(always)]
            fn zero() -> Self {
                0
            }
            #[inline(always)]
            fn wrapping_shl(self, n: u32) -> Self {
                <$t>::wrapping_shl(self, n)
            }
            #[inline(always)]
            fn ashr(self, n: u32) -> Self {
                self >> n
            }
            #[inline(always)]
            fn lshr(self, n: u32) -> Self {
                ((self as $u) >> n) as $t
            }
        }
    };
}
int_impl!(i32, u32);
int_impl!(i64, u64);

/// `x / y` for `y != 0` (the caller faults on zero): truncating, `min_int / -1` wraps.
#[inline(always)]
pub fn int_div<T: Int>(x: T, y: T) -> T {
    x.checked_div(y).unwrap_or(x.wrapping_div_minus_one())
}

/// `x mod y` for `y != 0`: the sign of the dividend, `min_int mod -1` is 0.
#[inline(always)]
pub fn int_rem<T: Int>(x: T, y: T) -> T {
    x.checked_rem(y).unwrap_or(T::zero())
}

/// `x lsl n`, the count masked to the width.
#[inline(always)]
pub fn shl<T: Int>(x: T, n: u32) -> T {
    x.wrapping_shl(n & (T::BITS - 1))
}

/// `x asr n` (sign fill), the count masked to the width.
#[inline(always)]
pub fn ashr<T: Int>(x: T, n: u32) -> T {
    x.ashr(n & (T::BITS - 1))
}

/// `x lsr n` (zero fill), the count masked to the width.
#[inline(always)]
pub fn lshr<T: Int>(x: T, n: u32) -> T {
    x.lshr(n & (T::BITS - 1))
}

macro_rules! math_impl {
    ($name:ident, $t:ty, $rsqrt:expr) => {
        /// One math function in the operand's own precision (`y`, `z` unused by unary ones).
        pub fn $name(f: MathFn, x: $t, y: $t, z: $t) -> $t {
            use MathFn::*;
            match f {
                Sqrt => x.sqrt(),
                Rsqrt => $rsqrt(x),
                Exp => x.exp(),
                Exp2 => x.exp2(),
                Expm1 => x.exp_m1(),
                Log => x.ln(),
                Log2 => x.log2(),
                Log10 => x.log10(),
                Log1p => x.ln_1p(),
                Sin => x.sin(),
                Cos => x.cos(),
                Tan => x.tan(),
                Asin => x.asin(),
                Acos => x.acos(),
                Atan => x.atan(),
                Sinh => x.sinh(),
                Cosh => x.cosh(),
                Tanh => x.tanh(),
                Floor => x.floor(),
                Ceil => x.ceil(),
                // Rust's `round` is C `round`: half away from zero.
                Round => x.round(),
                Trunc => x.trunc(),
                Fabs => x.abs(),
                Pow => x.powf(y),
                Atan2 => x.atan2(y),
                Hypot => x.hypot(y),
                Copysign => x.copysign(y),
                Fmin => x.min(y),
                Fmax => x.max(y),
                Fma => x.mul_add(y, z),
            }
        }
    };
}
math_impl!(math32, f32, |x: f32| (1.0 / (x as f64).sqrt()) as f32);
math_impl!(math64, f64, |x: f64| 1.0 / x.sqrt());

/// Whether IEEE 754 fixes `f`'s result bit for bit (exact, or correctly rounded in the
/// operand's precision). The others (transcendentals) are implementation-defined within a
/// tolerance on devices, so folding them with the host's libm would claim an exactness no
/// device has.
pub fn is_exact(f: MathFn) -> bool {
    use MathFn::*;
    matches!(
        f,
        Sqrt | Floor | Ceil | Round | Trunc | Fabs | Copysign | Fmin | Fmax | Fma
    )
}

/// A binary operation on literals of its operand types; `None` when the operation is not
/// defined on them or faults (integer division by zero). On two literals `&&`/`||` are plain
/// conjunction and disjunction (nothing is left to short-circuit).
pub fn binary(op: BinOp, a: Literal, b: Literal) -> Option<Literal> {
    use BinOp::*;
    use Literal as L;
    macro_rules! int {
        ($a:expr, $b:expr, $ctor:path) => {{
            let (a, b) = ($a, $b);
            match op {
                Add => $ctor(a.wrapping_add(b)),
                Sub => $ctor(a.wrapping_sub(b)),
                Mul => $ctor(a.wrapping_mul(b)),
                Div if b != 0 => $ctor(int_div(a, b)),
                Rem if b != 0 => $ctor(int_rem(a, b)),
                Div | Rem => return None,
                Eq => L::Bool(a == b),
                Ne => L::Bool(a != b),
                Lt => L::Bool(a < b),
                Le => L::Bool(a <= b),
                Gt => L::Bool(a > b),
                Ge => L::Bool(a >= b),
                BitAnd => $ctor(a & b),
                BitOr => $ctor(a | b),
                BitXor => $ctor(a ^ b),
                Shl => $ctor(shl(a, b as u32)),
                LShr => $ctor(lshr(a, b as u32)),
                AShr => $ctor(ashr(a, b as u32)),
                And | Or => return None,
            }
        }};
    }
    macro_rules! float {
        ($a:expr, $b:expr, $ctor:path) => {{
            let (a, b) = ($a, $b);
            match op {
                Add => $ctor(a + b),
                Sub => $ctor(a - b),
                Mul => $ctor(a * b),
                Div => $ctor(a / b),
                // Rust's float `%` is C `fmod`, exact.
                Rem => $ctor(a % b),
                Eq => L::Bool(a == b),
                Ne => L::Bool(a != b),
                Lt => L::Bool(a < b),
                Le => L::Bool(a <= b),
                Gt => L::Bool(a > b),
                Ge => L::Bool(a >= b),
                _ => return None,
            }
        }};
    }
    Some(match (a, b) {
        (L::I32(a), L::I32(b)) => int!(a, b, L::I32),
        (L::I64(a), L::I64(b)) => int!(a, b, L::I64),
        // The shift count of an int64 shift may be an int64 or an int32.
        (L::I64(a), L::I32(b)) if matches!(op, Shl | LShr | AShr) => int!(a, i64::from(b), L::I64),
        (L::F32(a), L::F32(b)) => float!(a, b, L::F32),
        (L::F64(a), L::F64(b)) => float!(a, b, L::F64),
        (L::Bool(a), L::Bool(b)) => match op {
            Eq => L::Bool(a == b),
            Ne | BitXor => L::Bool(a != b),
            And | BitAnd => L::Bool(a && b),
            Or | BitOr => L::Bool(a || b),
            _ => return None,
        },
        _ => return None,
    })
}

/// A unary operation on a literal of its operand type.
pub fn unary(op: UnOp, a: Literal) -> Option<Literal> {
    use Literal as L;
    Some(match (op, a) {
        (UnOp::Neg, L::I32(a)) => L::I32(a.wrapping_neg()),
        (UnOp::Neg, L::I64(a)) => L::I64(a.wrapping_neg()),
        (UnOp::Neg, L::F32(a)) => L::F32(-a),
        (UnOp::Neg, L::F64(a)) => L::F64(-a),
        (UnOp::Not, L::Bool(a)) => L::Bool(!a),
        (UnOp::BitNot, L::I32(a)) => L::I32(!a),
        (UnOp::BitNot, L::I64(a)) => L::I64(!a),
        _ => return None,
    })
}

/// `abs` (integers wrap: `abs min_int` is `min_int`).
pub fn abs(a: Literal) -> Option<Literal> {
    use Literal as L;
    Some(match a {
        L::I32(a) => L::I32(a.wrapping_abs()),
        L::I64(a) => L::I64(a.wrapping_abs()),
        L::F32(a) => L::F32(a.abs()),
        L::F64(a) => L::F64(a.abs()),
        L::Bool(_) => return None,
    })
}

/// `min` or `max` of two literals of one numeric type.
pub fn min_max(max: bool, a: Literal, b: Literal) -> Option<Literal> {
    use Literal as L;
    Some(match (a, b) {
        (L::I32(a), L::I32(b)) => L::I32(if max { a.max(b) } else { a.min(b) }),
        (L::I64(a), L::I64(b)) => L::I64(if max { a.max(b) } else { a.min(b) }),
        (L::F32(a), L::F32(b)) => L::F32(if max { a.max(b) } else { a.min(b) }),
        (L::F64(a), L::F64(b)) => L::F64(if max { a.max(b) } else { a.min(b) }),
        _ => return None,
    })
}

/// A numeric conversion (see the module docs).
pub fn convert(a: Literal, to: Scalar) -> Literal {
    use Literal as L;
    let int = |v: i64| match to {
        Scalar::Bool => L::Bool(v != 0),
        Scalar::I32 => L::I32(v as i32),
        Scalar::I64 => L::I64(v),
        Scalar::F32 => L::F32(v as f32),
        Scalar::F64 => L::F64(v as f64),
    };
    match a {
        L::Bool(b) => int(i64::from(b)),
        L::I32(v) => match to {
            // `as f32` from the i32 itself: one rounding.
            Scalar::F32 => L::F32(v as f32),
            _ => int(i64::from(v)),
        },
        L::I64(v) => int(v),
        L::F32(v) => match to {
            Scalar::Bool => L::Bool(v != 0.0),
            Scalar::I32 => L::I32(v as i32),
            Scalar::I64 => L::I64(v as i64),
            Scalar::F32 => L::F32(v),
            Scalar::F64 => L::F64(f64::from(v)),
        },
        L::F64(v) => match to {
            Scalar::Bool => L::Bool(v != 0.0),
            Scalar::I32 => L::I32(v as i32),
            Scalar::I64 => L::I64(v as i64),
            Scalar::F32 => L::F32(v as f32),
            Scalar::F64 => L::F64(v),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Literal as L;

    #[test]
    fn integer_edges() {
        assert_eq!(int_div(i32::MIN, -1), i32::MIN);
        assert_eq!(int_rem(i32::MIN, -1), 0);
        assert_eq!(int_div(-7i32, 2), -3);
        assert_eq!(int_rem(-7i32, 2), -1);
        assert_eq!(shl(1i32, 33), 2);
        assert_eq!(shl(1i64, 65), 2);
        assert_eq!(lshr(-1i32, 28), 15);
        assert_eq!(ashr(-16i32, 2), -4);
        assert_eq!(binary(BinOp::Div, L::I32(1), L::I32(0)), None);
        assert_eq!(
            binary(BinOp::Add, L::I32(i32::MAX), L::I32(1)),
            Some(L::I32(i32::MIN))
        );
        // An int64 shift by an int32 count.
        assert_eq!(
            binary(BinOp::Shl, L::I64(1), L::I32(40)),
            Some(L::I64(1 << 40))
        );
    }

    #[test]
    fn float32_stays_float32() {
        // (1 + 2^-24) + 2^-24: each float32 sum is a tie rounded to 1.0; in double precision
        // the sum would be 1 + 2^-23, exact in float32.
        let e = L::F32(2f32.powi(-24));
        let once = binary(BinOp::Add, L::F32(1.0), e).unwrap();
        assert_eq!(binary(BinOp::Add, once, e), Some(L::F32(1.0)));
    }

    #[test]
    fn conversions_saturate_and_round_once() {
        assert_eq!(convert(L::F32(3e9), Scalar::I32), L::I32(i32::MAX));
        assert_eq!(convert(L::F64(f64::NAN), Scalar::I32), L::I32(0));
        assert_eq!(convert(L::F64(-1e30), Scalar::I64), L::I64(i64::MIN));
        // 2^60 + 2^36 + 1 rounds up to 2^60 + 2^37 in float32; through float64 it would first
        // lose the 1 and then tie down to 2^60.
        let v = (1i64 << 60) + (1 << 36) + 1;
        let up = 2f32.powi(60) + 2f32.powi(37);
        assert_eq!(convert(L::I64(v), Scalar::F32), L::F32(up));
        assert_eq!(
            convert(L::F64(v as f64), Scalar::F32),
            L::F32(2f32.powi(60))
        );
        assert_eq!(convert(L::Bool(true), Scalar::F64), L::F64(1.0));
    }
}
