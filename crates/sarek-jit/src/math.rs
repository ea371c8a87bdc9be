//! Math functions the generated code calls: the very Rust functions the interpreter uses
//! (`crates/sarek-runtime/src/interp/scalar.rs`), so results agree bit for bit. One entry
//! point per precision takes the function's code ([`code`]).

use sarek_compiler::intrinsics::MathFn;

/// Code of C `fmod` (the float `mod` operator), after the [`MathFn`] codes.
pub(crate) const FMOD: i32 = 100;

/// The code passed to the entry points for `f`.
pub(crate) fn code(f: MathFn) -> i32 {
    use MathFn::*;
    const ALL: [MathFn; 30] = [
        Sqrt, Rsqrt, Exp, Exp2, Expm1, Log, Log2, Log10, Log1p, Sin, Cos, Tan, Asin, Acos, Atan,
        Sinh, Cosh, Tanh, Floor, Ceil, Round, Trunc, Fabs, Pow, Atan2, Hypot, Copysign, Fmin, Fmax,
        Fma,
    ];
    ALL.iter()
        .position(|g| *g == f)
        .expect("every MathFn is listed") as i32
}

fn of_code(c: i32) -> Option<MathFn> {
    use MathFn::*;
    const ALL: [MathFn; 30] = [
        Sqrt, Rsqrt, Exp, Exp2, Expm1, Log, Log2, Log10, Log1p, Sin, Cos, Tan, Asin, Acos, Atan,
        Sinh, Cosh, Tanh, Floor, Ceil, Round, Trunc, Fabs, Pow, Atan2, Hypot, Copysign, Fmin, Fmax,
        Fma,
    ];
    ALL.get(usize::try_from(c).ok()?).copied()
}

macro_rules! math_impl {
    ($name:ident, $t:ty, $rsqrt:expr) => {
        pub(crate) extern "C" fn $name(c: i32, x: $t, y: $t, z: $t) -> $t {
            use MathFn::*;
            let Some(f) = of_code(c) else {
                return x % y;
            };
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
