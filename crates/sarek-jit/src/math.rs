//! Math functions the generated code calls: `sarek_compiler::scalar`'s, the very functions
//! the interpreter uses, so results agree bit for bit. One entry point per precision takes
//! the function's code ([`code`]).

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

macro_rules! math_entry {
    ($name:ident, $t:ty, $def:path) => {
        pub(crate) extern "C" fn $name(c: i32, x: $t, y: $t, z: $t) -> $t {
            match of_code(c) {
                Some(f) => $def(f, x, y, z),
                // FMOD: C `fmod`, Rust's float `%`.
                None => x % y,
            }
        }
    };
}
math_entry!(math32, f32, sarek_compiler::scalar::math32);
math_entry!(math64, f64, sarek_compiler::scalar::math64);
