//! Float64 transcendental functions for GLSL, which has `double` versions of sqrt, floor, fma
//! and the like but none of exp, log, the trigonometric or hyperbolic functions, or pow.
//!
//! Each is a classic argument reduction and a polynomial (fdlibm's Cody-Waite constants, Taylor
//! or atanh series run until the remainder is below 1e-17), accurate to a few ulps over the
//! normal range, which is what `verify`'s float64 tolerance expects. Templates use the same
//! placeholders as the float32 helpers (`_S(` for the type suffix, `NAN`, `INF`).

/// The GLSL template of a float64 helper, if `name` has one.
pub(super) fn template(name: &str) -> Option<&'static str> {
    Some(match name {
        "exp" => EXP,
        "exp2" => {
            "double sarek_h_exp2_S(double x) {\n    return sarek_h_exp_S(x * 0.69314718055994531lf);\n}\n"
        }
        "expm1" => EXPM1,
        "log" => LOG,
        "log2" => {
            "double sarek_h_log2_S(double x) {\n    return sarek_h_log_S(x) * 1.4426950408889634lf;\n}\n"
        }
        "log10" => {
            "double sarek_h_log10_S(double x) {\n    return sarek_h_log_S(x) * 0.43429448190325182lf;\n}\n"
        }
        "log1p" => LOG1P,
        "sincos" => SINCOS,
        "sin" => "double sarek_h_sin_S(double x) {\n    return sarek_h_sincos_S(x, false);\n}\n",
        "cos" => "double sarek_h_cos_S(double x) {\n    return sarek_h_sincos_S(x, true);\n}\n",
        "tan" => {
            "double sarek_h_tan_S(double x) {\n    return sarek_h_sincos_S(x, false) / sarek_h_sincos_S(x, true);\n}\n"
        }
        "atan" => ATAN,
        "atan2" => ATAN2,
        "asin" => {
            "double sarek_h_asin_S(double x) {\n    if (abs(x) > 1.0lf) return NAN;\n    return sarek_h_atan2_S(x, sqrt((1.0lf - x) * (1.0lf + x)));\n}\n"
        }
        "acos" => {
            "double sarek_h_acos_S(double x) {\n    if (abs(x) > 1.0lf) return NAN;\n    return sarek_h_atan2_S(sqrt((1.0lf - x) * (1.0lf + x)), x);\n}\n"
        }
        "sinh" => SINH,
        "cosh" => {
            "double sarek_h_cosh_S(double x) {\n    double a = abs(x);\n    if (a < 709.0lf) {\n        double e = sarek_h_exp_S(a);\n        return 0.5lf * (e + 1.0lf / e);\n    }\n    double h = sarek_h_exp_S(0.5lf * a);\n    return (0.5lf * h) * h;\n}\n"
        }
        "tanh" => TANH,
        "pow" => POW,
        _ => return None,
    })
}

/// The helpers a float64 helper calls (emitted before it).
pub(super) fn deps(name: &str) -> &'static [&'static str] {
    match name {
        "exp2" | "cosh" => &["exp"],
        "expm1" => &["exp"],
        "log2" | "log10" | "log1p" => &["log"],
        "sin" | "cos" | "tan" => &["sincos"],
        "atan2" => &["atan"],
        "asin" | "acos" => &["atan", "atan2"],
        "sinh" | "tanh" => &["exp", "expm1"],
        "pow" => &["exp", "log", "fmod"],
        _ => &[],
    }
}

/// Emission order: a helper after everything it calls.
pub(super) fn rank(name: &str) -> u8 {
    match name {
        "exp" | "log" | "sincos" | "atan" | "fmod" => 0,
        "expm1" | "atan2" => 1,
        _ => 2,
    }
}

const EXP: &str = "double sarek_h_exp_S(double x) {
    if (isnan(x)) return x;
    if (x > 709.782712893384lf) return INF;
    if (x < -745.1332191019412lf) return 0.0lf;
    // x = k ln2 + r, |r| <= ln2 / 2, ln2 split so that k * hi is exact.
    double k = floor(x * 1.4426950408889634lf + 0.5lf);
    double r = (x - k * 6.93147180369123816490e-01lf) - k * 1.90821492927058770002e-10lf;
    double p = 1.0lf / 6227020800.0lf;
    p = p * r + 1.0lf / 479001600.0lf;
    p = p * r + 1.0lf / 39916800.0lf;
    p = p * r + 1.0lf / 3628800.0lf;
    p = p * r + 1.0lf / 362880.0lf;
    p = p * r + 1.0lf / 40320.0lf;
    p = p * r + 1.0lf / 5040.0lf;
    p = p * r + 1.0lf / 720.0lf;
    p = p * r + 1.0lf / 120.0lf;
    p = p * r + 1.0lf / 24.0lf;
    p = p * r + 1.0lf / 6.0lf;
    p = p * r + 0.5lf;
    p = p * r + 1.0lf;
    p = p * r + 1.0lf;
    int e = int(k);
    // Two steps keep both factors representable near the ends of the range.
    int e1 = e / 2;
    return ldexp(ldexp(p, e1), e - e1);
}
";

const EXPM1: &str = "double sarek_h_expm1_S(double x) {
    if (abs(x) >= 0.34657359027997264lf) return sarek_h_exp_S(x) - 1.0lf;
    // Taylor series without the leading 1: no cancellation near 0.
    double p = 1.0lf / 87178291200.0lf;
    p = p * x + 1.0lf / 6227020800.0lf;
    p = p * x + 1.0lf / 479001600.0lf;
    p = p * x + 1.0lf / 39916800.0lf;
    p = p * x + 1.0lf / 3628800.0lf;
    p = p * x + 1.0lf / 362880.0lf;
    p = p * x + 1.0lf / 40320.0lf;
    p = p * x + 1.0lf / 5040.0lf;
    p = p * x + 1.0lf / 720.0lf;
    p = p * x + 1.0lf / 120.0lf;
    p = p * x + 1.0lf / 24.0lf;
    p = p * x + 1.0lf / 6.0lf;
    p = p * x + 0.5lf;
    p = p * x + 1.0lf;
    return p * x;
}
";

const LOG: &str = "double sarek_h_log_S(double x) {
    if (isnan(x) || x < 0.0lf) return NAN;
    if (x == 0.0lf) return -INF;
    if (isinf(x)) return x;
    int e;
    double m = frexp(x, e);
    if (m < 0.70710678118654752lf) {
        m *= 2.0lf;
        e -= 1;
    }
    // log(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716.
    double s = (m - 1.0lf) / (m + 1.0lf);
    double z = s * s;
    double p = 1.0lf / 25.0lf;
    p = p * z + 1.0lf / 23.0lf;
    p = p * z + 1.0lf / 21.0lf;
    p = p * z + 1.0lf / 19.0lf;
    p = p * z + 1.0lf / 17.0lf;
    p = p * z + 1.0lf / 15.0lf;
    p = p * z + 1.0lf / 13.0lf;
    p = p * z + 1.0lf / 11.0lf;
    p = p * z + 1.0lf / 9.0lf;
    p = p * z + 1.0lf / 7.0lf;
    p = p * z + 1.0lf / 5.0lf;
    p = p * z + 1.0lf / 3.0lf;
    double r = 2.0lf * s + 2.0lf * s * z * p;
    double k = double(e);
    return k * 6.93147180369123816490e-01lf + (r + k * 1.90821492927058770002e-10lf);
}
";

// log1p(x) = 2 atanh(s), s = x / (2 + x), |s| <= 1/3 on [-0.5, 1] (the series to s^35, under
// 2^-58 there): the log helper's error near 1 is absolute, so log(1 + x) would lose the
// relative accuracy of a small result.
const LOG1P: &str = "double sarek_h_log1p_S(double x) {
    if (x >= -0.5lf && x <= 1.0lf) {
        double s = x / (2.0lf + x);
        double z = s * s;
        double p = 1.0lf / 35.0lf;
        for (int k = 16; k >= 0; k--) p = p * z + 1.0lf / double(2 * k + 1);
        return 2.0lf * s * p;
    }
    return sarek_h_log_S(1.0lf + x);
}
";

const SINCOS: &str = "double sarek_h_sincos_S(double x, bool want_cos) {
    if (isnan(x) || isinf(x)) return NAN;
    // sin of a zero is that zero (`r - r z s` is +0 for r = -0).
    if (x == 0.0lf && !want_cos) return x;
    // x = q pi/2 + r, |r| <= pi/4, pi/2 in three parts (fdlibm).
    double q = floor(x * 0.63661977236758134lf + 0.5lf);
    double r = ((x - q * 1.57079632673412561417e+00lf) - q * 6.07710050630396597660e-11lf)
        - q * 2.02226624871116645580e-21lf;
    double z = r * r;
    double s = 1.0lf / 355687428096000.0lf;
    s = -s * z + 1.0lf / 1307674368000.0lf;
    s = s * z - 1.0lf / 6227020800.0lf;
    s = s * z + 1.0lf / 39916800.0lf;
    s = s * z - 1.0lf / 362880.0lf;
    s = s * z + 1.0lf / 5040.0lf;
    s = s * z - 1.0lf / 120.0lf;
    s = s * z + 1.0lf / 6.0lf;
    double sin_r = r - r * z * s;
    double c = 1.0lf / 20922789888000.0lf;
    c = c * z - 1.0lf / 87178291200.0lf;
    c = c * z + 1.0lf / 479001600.0lf;
    c = c * z - 1.0lf / 3628800.0lf;
    c = c * z + 1.0lf / 40320.0lf;
    c = c * z - 1.0lf / 720.0lf;
    c = c * z + 1.0lf / 24.0lf;
    c = c * z - 0.5lf;
    double cos_r = 1.0lf + z * c;
    int n = int(mod(q, 4.0lf)) + (want_cos ? 1 : 0);
    n = n & 3;
    if (n == 0) return sin_r;
    if (n == 1) return cos_r;
    if (n == 2) return -sin_r;
    return -cos_r;
}
";

const ATAN: &str = "double sarek_h_atan_S(double x) {
    // A zero as it is: the reduction below made -0 +0 (asin and atan2 too).
    if (isnan(x) || x == 0.0lf) return x;
    double a = abs(x);
    bool inv = a > 1.0lf;
    if (inv) a = 1.0lf / a;
    // Two halvings, atan(a) = 2 atan(a / (1 + sqrt(1 + a^2))), leave |a| <= tan(pi/16).
    a = a / (1.0lf + sqrt(1.0lf + a * a));
    a = a / (1.0lf + sqrt(1.0lf + a * a));
    double z = a * a;
    double p = 1.0lf / 27.0lf;
    p = -p * z + 1.0lf / 25.0lf;
    p = p * z - 1.0lf / 23.0lf;
    p = p * z + 1.0lf / 21.0lf;
    p = p * z - 1.0lf / 19.0lf;
    p = p * z + 1.0lf / 17.0lf;
    p = p * z - 1.0lf / 15.0lf;
    p = p * z + 1.0lf / 13.0lf;
    p = p * z - 1.0lf / 11.0lf;
    p = p * z + 1.0lf / 9.0lf;
    p = p * z - 1.0lf / 7.0lf;
    p = p * z + 1.0lf / 5.0lf;
    p = p * z - 1.0lf / 3.0lf;
    double r = 4.0lf * (a + a * z * p);
    if (inv) r = 1.5707963267948966lf - r;
    return x < 0.0lf ? -r : r;
}
";

const ATAN2: &str = "double sarek_h_atan2_S(double y, double x) {
    if (isnan(x) || isnan(y)) return NAN;
    // Signs from the bits: lavapipe loses the sign of a zero in `1 / y`.
    bool y_neg = (unpackDouble2x32(y).y & 0x80000000u) != 0u;
    bool x_neg = (unpackDouble2x32(x).y & 0x80000000u) != 0u;
    if (isinf(x) || isinf(y)) {
        // C's values at infinities, multiples of pi/4 (through float32 they were 4e-8 off,
        // and a finite x past float32's range became an infinity: atan2(inf, 1e300) = pi/4).
        double r = isinf(y)
            ? (isinf(x) ? (x_neg ? 2.35619449019234492885lf : 0.78539816339744830962lf)
                        : 1.57079632679489661923lf)
            : (x_neg ? 3.14159265358979323846lf : 0.0lf);
        return y_neg ? -r : r;
    }
    if (x == 0.0lf && y == 0.0lf) {
        double r = x_neg ? 3.1415926535897932lf : 0.0lf;
        return y_neg ? -r : r;
    }
    if (x == 0.0lf) return y_neg ? -1.5707963267948966lf : 1.5707963267948966lf;
    double r = sarek_h_atan_S(y / x);
    if (!x_neg) return r;
    return y_neg ? r - 3.1415926535897932lf : r + 3.1415926535897932lf;
}
";

// Above 709 exp(|x|) overflows before its half does: (exp(|x|/2) / 2) * exp(|x|/2) instead.
const SINH: &str = "double sarek_h_sinh_S(double x) {
    if (x == 0.0lf) return x;
    double a = abs(x);
    double r;
    if (a < 22.0lf) {
        double e = sarek_h_expm1_S(a);
        r = 0.5lf * (e + e / (e + 1.0lf));
    } else if (a < 709.0lf) {
        r = 0.5lf * sarek_h_exp_S(a);
    } else {
        double h = sarek_h_exp_S(0.5lf * a);
        r = (0.5lf * h) * h;
    }
    return x < 0.0lf ? -r : r;
}
";

const TANH: &str = "double sarek_h_tanh_S(double x) {
    if (x == 0.0lf) return x;
    double a = abs(x);
    double r;
    if (a > 22.0lf) {
        r = 1.0lf;
    } else {
        double e = sarek_h_expm1_S(2.0lf * a);
        r = e / (e + 2.0lf);
    }
    return x < 0.0lf ? -r : r;
}
";

// C's edges, as the float32 helper has them: `pow 1 y` and `pow (-1) inf` are 1 (NaN y
// included), a zero or infinite base keeps its sign for odd integral exponents (the sign
// read from the bits: lavapipe loses it in `1 / x`), `pow (-inf) 0.5` is inf.
const POW: &str = "double sarek_h_pow_S(double x, double y) {
    if (y == 0.0lf || x == 1.0lf || (x == -1.0lf && isinf(y))) return 1.0lf;
    if (isnan(x) || isnan(y)) return NAN;
    bool odd = abs(sarek_h_fmod_S(y, 2.0lf)) == 1.0lf;
    bool x_neg = (unpackDouble2x32(x).y & 0x80000000u) != 0u;
    if (x == 0.0lf || isinf(x)) {
        double r = (y > 0.0lf) == (x == 0.0lf) ? 0.0lf : INF;
        return (odd && x_neg) ? -r : r;
    }
    if (x > 0.0lf) return sarek_h_exp_S(y * sarek_h_log_S(x));
    if (trunc(y) != y) return NAN;
    double r = sarek_h_exp_S(y * sarek_h_log_S(-x));
    return odd ? -r : r;
}
";
