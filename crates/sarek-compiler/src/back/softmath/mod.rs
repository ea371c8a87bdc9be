//! Float routines some targets have no instruction for (float `mod`; float64 `exp`, `log`,
//! ...), each written once against [`Ops`], an instruction set in which every operation is
//! one machine instruction with IEEE (or integer) semantics.
//!
//! A writer implements [`Ops`] by emitting the instruction: PTX as one instruction each (each
//! routine becomes one `.func` per kernel, see `Writer::soft_call` in `back/ptx`), GLSL as one
//! statement each (one function per routine, `back/glsl/f64math.rs`). The tests implement it
//! by computing the instruction on the host with PTX's semantics (shift clamping, `cvt`
//! saturation, `min` ignoring a NaN), so they run the very sequence the GPU runs over
//! millions of inputs and compare it with Rust's std, which is what the interpreter computes
//! ([`crate::scalar`]).
//!
//! - float `mod` (C's `fmod`) is exact: the significands' integer remainder over the
//!   exponent difference, up to 39 (float32) or 10 (float64) bits a step, each step's
//!   quotient estimated in float64 and the remainder taken exactly in 64-bit integers.
//! - float64 `exp`/`exp2`/`expm1` reduce to e^r, |r| <= ln2/2, by a Cody-Waite split of ln2
//!   (fused, so the product is exact), and evaluate e^r - 1 by its Taylor series to r^13;
//!   `log`/`log2`/`log10`/`log1p` reduce to 1 + f in [sqrt(1/2), sqrt(2)) and evaluate
//!   log(1 + f) = 2 atanh(f / (2 + f)) in fdlibm's arrangement; `sinh`/`cosh`/`tanh` come
//!   from them.
//! - `sin`/`cos`/`tan` reduce by pi/2 in double-double (pi/2 as three float64s up to
//!   |x| = 2^90, x 2/pi modulo 4 from 1166 bits of 2/pi past it, a `.func` of its own that
//!   the three call, [`Routine::TrigReduceFar`]) and use fdlibm's kernels;
//!   `atan`/`atan2`/`asin`/`acos` are fdlibm's `atan` without branches; `pow` is
//!   e^(y log|x|) with the logarithm and the product in double-double.
//!
//! Every function is within 1-3 ulps of the correctly rounded result over its whole range
//! (the tests' bounds), special values (NaN, infinities, signed zeros) as C's.

use crate::intrinsics::MathFn;

/// The precision of a float operand, and the width of the integers of its bit pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Width {
    W32,
    W64,
}

impl Width {
    /// Bits of the stored significand (without the implicit bit).
    pub fn mant_bits(self) -> u32 {
        match self {
            Width::W32 => 23,
            Width::W64 => 52,
        }
    }
    /// Bits of the exponent field.
    pub fn exp_bits(self) -> u32 {
        match self {
            Width::W32 => 8,
            Width::W64 => 11,
        }
    }
    pub fn bits(self) -> u32 {
        match self {
            Width::W32 => 32,
            Width::W64 => 64,
        }
    }
    fn sign_mask(self) -> u64 {
        1 << (self.bits() - 1)
    }
    /// The bit pattern of +inf: the largest finite magnitude's pattern is below it, NaNs above.
    fn inf_bits(self) -> u64 {
        ((1 << self.exp_bits()) - 1) << self.mant_bits()
    }
}

/// Float operations taking two operands, all rounding to nearest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FBin {
    Add,
    Sub,
    Mul,
    Div,
    /// PTX `min`/`max`: a NaN operand is ignored.
    Min,
    Max,
    /// The magnitude of the first operand with the sign of the second.
    CopySign,
}

/// Integer operations taking two operands of one width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IBin {
    Add,
    Sub,
    /// The low half of the product (`mul.lo`: wrapping).
    Mul,
    And,
    Or,
}

/// Shifts by a 32-bit count; PTX clamps counts above the width (to 0, or the sign fill).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shift {
    Shl,
    /// Logical (zero-filling).
    Shr,
}

/// Comparisons; on floats ordered (false when an operand is NaN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Lt,
    Gt,
    Ge,
}

/// The instruction set the routines are written in. `F`, `I` and `P` are a float, an integer
/// (of the width of one of the two float formats, or a 32-bit count) and a predicate.
pub trait Ops {
    type F: Copy;
    type I: Copy;
    type P: Copy;

    /// A float constant (for [`Width::W32`], `v` must be a float32 value).
    fn f_const(&mut self, w: Width, v: f64) -> Self::F;
    fn i_const(&mut self, w: Width, v: u64) -> Self::I;
    fn f_bin(&mut self, op: FBin, a: Self::F, b: Self::F) -> Self::F;
    /// `a * b + c`, rounded once.
    fn fma(&mut self, a: Self::F, b: Self::F, c: Self::F) -> Self::F;
    fn f_cmp(&mut self, c: Cmp, a: Self::F, b: Self::F) -> Self::P;
    /// Whether `a` is a NaN.
    fn is_nan(&mut self, a: Self::F) -> Self::P;
    /// The square root, correctly rounded (`sqrt.rn`).
    fn f_sqrt(&mut self, a: Self::F) -> Self::F;
    /// The nearest integer (ties to even) as a float (`cvt.rni` float to float).
    fn f_round(&mut self, a: Self::F) -> Self::F;
    /// The nearest integer (ties to even) as a signed integer of the same width (`cvt.rni`).
    fn f_to_i(&mut self, a: Self::F) -> Self::I;
    /// A signed integer to the float of the same width, rounded to nearest.
    fn i_to_f(&mut self, a: Self::I) -> Self::F;
    fn to_bits(&mut self, a: Self::F) -> Self::I;
    fn f_of_bits(&mut self, a: Self::I) -> Self::F;
    fn i_bin(&mut self, op: IBin, a: Self::I, b: Self::I) -> Self::I;
    /// Shift `a` by the 32-bit count `n`.
    fn shift(&mut self, op: Shift, a: Self::I, n: Self::I) -> Self::I;
    /// Leading zeros of `a`, as a 32-bit integer.
    fn clz(&mut self, a: Self::I) -> Self::I;
    /// To `w` bits: truncation, or sign extension.
    fn resize(&mut self, a: Self::I, w: Width) -> Self::I;
    fn i_cmp(&mut self, c: Cmp, signed: bool, a: Self::I, b: Self::I) -> Self::P;
    fn p_or(&mut self, a: Self::P, b: Self::P) -> Self::P;
    fn p_and(&mut self, a: Self::P, b: Self::P) -> Self::P;
    fn p_not(&mut self, a: Self::P) -> Self::P;
    fn sel_f(&mut self, p: Self::P, a: Self::F, b: Self::F) -> Self::F;
    fn sel_i(&mut self, p: Self::P, a: Self::I, b: Self::I) -> Self::I;
    /// `if p { state = body(state) }` on float state, returning the final state (the body is
    /// skipped, not just discarded, when `p` is false).
    fn when(&mut self, p: Self::P, init: &[Self::F], body: FloatBlock<'_, Self>) -> Vec<Self::F>;
    /// `while cond(state) { state = body(state) }`, returning the final state.
    fn repeat_while(
        &mut self,
        init: &[Self::I],
        cond: LoopCond<'_, Self>,
        body: LoopBody<'_, Self>,
    ) -> Vec<Self::I>;
    /// The results of `routine` on `args` ([`Routine::build`]'s operations): the writer
    /// calls its `.func`, written once per module, so that routines sharing a part (the far
    /// reduction of sin, cos and tan) carry one copy of it.
    fn call(&mut self, routine: Routine, args: &[Self::F]) -> Vec<Self::F>;
}

/// The body of [`Ops::when`]: the new float state.
pub type FloatBlock<'a, O> = &'a mut dyn FnMut(&mut O, &[<O as Ops>::F]) -> Vec<<O as Ops>::F>;
/// The condition of [`Ops::repeat_while`], from the loop state.
pub type LoopCond<'a, O> = &'a mut dyn FnMut(&mut O, &[<O as Ops>::I]) -> <O as Ops>::P;
/// The body of [`Ops::repeat_while`]: the next loop state.
pub type LoopBody<'a, O> = &'a mut dyn FnMut(&mut O, &[<O as Ops>::I]) -> Vec<<O as Ops>::I>;

/// A software routine: what the writer emits once per kernel as a `.func`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Routine {
    Fmod(Width),
    /// A float64 math function ([`Routine::for_float64`] says which have one).
    Math64(MathFn),
    /// The far reduction of float64 sin, cos and tan ([`reduce_far`]): x to the quadrant k
    /// and the double-double (x 2/pi - k) pi/2. Called by them, never by a kernel.
    TrigReduceFar,
    /// float64 `a b + c` rounded once without a fused instruction ([`fma_by_parts`]): what
    /// a writer calls for [`Ops::fma`] where the target's `fma` may round the product first.
    FmaByParts,
}

impl Routine {
    /// The routine computing float64 `m`, if there is one.
    pub fn for_float64(m: MathFn) -> Option<Routine> {
        use MathFn::*;
        let software = [
            Exp, Exp2, Expm1, Log, Log2, Log10, Log1p, Sin, Cos, Tan, Asin, Acos, Atan, Atan2,
            Sinh, Cosh, Tanh, Pow,
        ];
        software.contains(&m).then_some(Routine::Math64(m))
    }

    /// The `.func` symbol (in the `sarek_` namespace, which user names never reach).
    pub fn symbol(self) -> String {
        match self {
            Routine::Fmod(Width::W32) => "sarek_fmod_f32".into(),
            Routine::Fmod(Width::W64) => "sarek_fmod_f64".into(),
            Routine::Math64(m) => format!("sarek_{}_f64", m.c_name()),
            Routine::TrigReduceFar => "sarek_trig_reduce_far_f64".into(),
            Routine::FmaByParts => "sarek_fma_f64".into(),
        }
    }

    /// The float width of the arguments and results, the number of arguments and the number
    /// of results.
    pub fn signature(self) -> (Width, usize, usize) {
        match self {
            Routine::Fmod(w) => (w, 2, 1),
            Routine::Math64(MathFn::Pow | MathFn::Atan2) => (Width::W64, 2, 1),
            Routine::Math64(_) => (Width::W64, 1, 1),
            Routine::TrigReduceFar => (Width::W64, 1, 3),
            Routine::FmaByParts => (Width::W64, 3, 1),
        }
    }

    /// The routine's results from its arguments (as many as [`Routine::signature`] says).
    pub fn build<O: Ops>(self, o: &mut O, args: &[O::F]) -> Vec<O::F> {
        let x = args[0];
        let one = match self {
            Routine::TrigReduceFar => {
                let (k, h, l) = reduce_far(o, x);
                return vec![k, h, l];
            }
            Routine::Fmod(w) => fmod(o, w, x, args[1]),
            Routine::FmaByParts => fma_by_parts(o, x, args[1], args[2]),
            Routine::Math64(m) => match m {
                MathFn::Exp => exp(o, x),
                MathFn::Exp2 => exp2(o, x),
                MathFn::Expm1 => expm1(o, x),
                MathFn::Log => log(o, x, LogBase::E),
                MathFn::Log2 => log(o, x, LogBase::Two),
                MathFn::Log10 => log(o, x, LogBase::Ten),
                MathFn::Log1p => log1p(o, x),
                MathFn::Sinh => sinh(o, x),
                MathFn::Cosh => cosh(o, x),
                MathFn::Tanh => tanh(o, x),
                MathFn::Sin => sin_cos_tan(o, x, Trig::Sin),
                MathFn::Cos => sin_cos_tan(o, x, Trig::Cos),
                MathFn::Tan => sin_cos_tan(o, x, Trig::Tan),
                MathFn::Atan => atan(o, x),
                MathFn::Atan2 => atan2(o, x, args[1]),
                MathFn::Asin => asin_acos(o, x, true),
                MathFn::Acos => asin_acos(o, x, false),
                MathFn::Pow => pow(o, x, args[1]),
                _ => unreachable!("no float64 routine for `{}`", m.c_name()),
            },
        };
        vec![one]
    }
}

/// C's `fmod x y`: x - n y for the integer n = trunc(x / y), computed exactly on the
/// significands. NaN when x is infinite or NaN or y is 0 or NaN; x itself when |x| < |y|;
/// a zero with the sign of x when the remainder is 0.
pub fn fmod<O: Ops>(o: &mut O, w: Width, x: O::F, y: O::F) -> O::F {
    use Width::{W32, W64};
    let (mb, eb) = (w.mant_bits(), w.exp_bits());
    let ux = o.to_bits(x);
    let uy = o.to_bits(y);
    let sign_mask = o.i_const(w, w.sign_mask());
    let abs_mask = o.i_const(w, !w.sign_mask() & (u64::MAX >> (64 - w.bits())));
    let sign = o.i_bin(IBin::And, ux, sign_mask);
    let ax = o.i_bin(IBin::And, ux, abs_mask);
    let ay = o.i_bin(IBin::And, uy, abs_mask);
    // Special operands: y zero or NaN, x infinite or NaN.
    let zero = o.i_const(w, 0);
    let inf = o.i_const(w, w.inf_bits());
    let y_zero = o.i_cmp(Cmp::Eq, false, ay, zero);
    let y_nan = o.i_cmp(Cmp::Gt, false, ay, inf);
    let x_not_finite = o.i_cmp(Cmp::Ge, false, ax, inf);
    let special = o.p_or(y_zero, y_nan);
    let special = o.p_or(special, x_not_finite);
    let smaller = o.i_cmp(Cmp::Lt, false, ax, ay);
    let equal = o.i_cmp(Cmp::Eq, false, ax, ay);
    // Exponents (32-bit) and significands with the leading bit at `mb` (subnormals shifted up).
    let mb_count = o.i_const(W32, u64::from(mb));
    let (ex, mx) = normalize(o, w, ax, mb_count);
    let (ey, my) = normalize(o, w, ay, mb_count);
    // mx 2^diff modulo my, several exponent bits a step (none for the early results): in
    // 64-bit integers m 2^s mod my for s up to `chunk` bits, so that m 2^s < 2^63, is
    // m 2^s - q my, exact, for the quotient q estimated in float64 from 1/my. The estimate
    // (m 2^s exact in float64, relative error under 2^-51 from 1/my and the product, q under
    // 2^41) is at worst q + 1 after rounding to nearest, never q - 1, so one negative
    // remainder is corrected by adding my back.
    let early = o.p_or(special, smaller);
    let early = o.p_or(early, equal);
    let diff = o.i_bin(IBin::Sub, ex, ey);
    let zero32 = o.i_const(W32, 0);
    let steps = o.sel_i(early, zero32, diff);
    let wide = |o: &mut O, v: O::I| if w == W64 { v } else { o.resize(v, W64) };
    let (mx_wide, my_wide) = (wide(o, mx), wide(o, my));
    let my_float = o.i_to_f(my_wide);
    let one = c64(o, 1.0);
    let inv = o.f_bin(FBin::Div, one, my_float);
    let chunk = o.i_const(W32, u64::from(62 - mb));
    let zero64 = o.i_const(W64, 0);
    let state = o.repeat_while(
        &[mx_wide, steps],
        &mut |o, s| o.i_cmp(Cmp::Gt, true, s[1], zero32),
        &mut |o, s| {
            let (m, n) = (s[0], s[1]);
            let short = o.i_cmp(Cmp::Lt, true, n, chunk);
            let bits = o.sel_i(short, n, chunk);
            let a = o.shift(Shift::Shl, m, bits);
            let af = o.i_to_f(a);
            let qf = o.f_bin(FBin::Mul, af, inv);
            let q = o.f_to_i(qf);
            let qm = o.i_bin(IBin::Mul, q, my_wide);
            let r = o.i_bin(IBin::Sub, a, qm);
            let negative = o.i_cmp(Cmp::Lt, true, r, zero64);
            let fixed = o.i_bin(IBin::Add, r, my_wide);
            let r = o.sel_i(negative, fixed, r);
            let n = o.i_bin(IBin::Sub, n, bits);
            vec![r, n]
        },
    );
    // Below my now, unless no step ran (mx < 2 my): one subtraction then.
    let m = if w == W64 {
        state[0]
    } else {
        o.resize(state[0], W32)
    };
    let reduced = o.i_bin(IBin::Sub, m, my);
    let fits = o.i_cmp(Cmp::Ge, false, m, my);
    let m = o.sel_i(fits, reduced, m);
    let rem_zero = o.i_cmp(Cmp::Eq, false, m, zero);
    // Renormalize: the remainder's exponent is y's less the leading zeros gained.
    let lz = o.clz(m);
    let eb_count = o.i_const(W32, u64::from(eb));
    let up = o.i_bin(IBin::Sub, lz, eb_count);
    let m = o.shift(Shift::Shl, m, up);
    let e = o.i_bin(IBin::Sub, ey, up);
    // A normal result: the exponent field replaces the leading bit.
    let mant_mask = o.i_const(w, (1 << mb) - 1);
    let frac = o.i_bin(IBin::And, m, mant_mask);
    let e_wide = o.resize(e, w);
    let field = o.shift(Shift::Shl, e_wide, mb_count);
    let normal = o.i_bin(IBin::Or, frac, field);
    // A subnormal one (exponent <= 0): the significand shifted down by 1 - e, dropping zeros
    // only (the remainder is a multiple of y's last place).
    let one32 = o.i_const(W32, 1);
    let down = o.i_bin(IBin::Sub, one32, e);
    let subnormal = o.shift(Shift::Shr, m, down);
    let is_normal = o.i_cmp(Cmp::Gt, true, e, zero32);
    let mag = o.sel_i(is_normal, normal, subnormal);
    let r = o.i_bin(IBin::Or, mag, sign);
    let r = o.sel_i(rem_zero, sign, r);
    let r = o.sel_i(equal, sign, r);
    let r = o.sel_i(smaller, ux, r);
    let nan = o.i_const(w, w.inf_bits() | 1 << (mb - 1));
    let r = o.sel_i(special, nan, r);
    o.f_of_bits(r)
}

/// The 32-bit exponent field and the significand with its leading bit at `mant_bits` of the
/// magnitude bits `a`: a subnormal is shifted up to it, its exponent lowered to match.
fn normalize<O: Ops>(o: &mut O, w: Width, a: O::I, mb_count: O::I) -> (O::I, O::I) {
    use Width::W32;
    let field = o.shift(Shift::Shr, a, mb_count);
    let e = o.resize(field, W32);
    let mant_mask = o.i_const(w, (1 << w.mant_bits()) - 1);
    let implicit = o.i_const(w, 1 << w.mant_bits());
    let frac = o.i_bin(IBin::And, a, mant_mask);
    let m_normal = o.i_bin(IBin::Or, frac, implicit);
    let lz = o.clz(a);
    let eb_count = o.i_const(W32, u64::from(w.exp_bits()));
    let up = o.i_bin(IBin::Sub, lz, eb_count);
    let m_sub = o.shift(Shift::Shl, a, up);
    let one32 = o.i_const(W32, 1);
    let e_sub = o.i_bin(IBin::Sub, one32, up);
    let zero32 = o.i_const(W32, 0);
    let is_sub = o.i_cmp(Cmp::Eq, false, e, zero32);
    let e = o.sel_i(is_sub, e_sub, e);
    let m = o.sel_i(is_sub, m_sub, m_normal);
    (e, m)
}

// ----- float64 exponentials and logarithms -----

use Width::W64;

/// ln 2 split for Cody-Waite reduction: `LN2_HI` is ln 2 rounded, `LN2_LO` the rest.
const LN2_HI: f64 = std::f64::consts::LN_2;
const LN2_LO: f64 = 2.319_046_813_846_299_6e-17;
const LOG10_2_HI: f64 = std::f64::consts::LOG10_2;
const LOG10_2_LO: f64 = -2.803_728_127_785_170_4e-18;

/// 1 / (n + 1)! for n = 1..=12: e^r - 1 = r (1 + r/2! + ... + r^12/13!), the terms past
/// r^13 under 2^-60 of the sum for |r| <= ln2 / 2.
const EXPM1_TAYLOR: [f64; 12] = [
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40320.0,
    1.0 / 362_880.0,
    1.0 / 3_628_800.0,
    1.0 / 39_916_800.0,
    1.0 / 479_001_600.0,
    1.0 / 6_227_020_800.0,
];

/// 2 / (2n + 1) for n = 1..=10: log(1 + f) = 2 atanh s = 2s + s T for s = f / (2 + f),
/// T = 2s^2/3 + 2s^4/5 + ... + 2s^20/21, the terms past under 2^-60 of the sum for
/// |s| <= 3 - 2 sqrt 2 (1 + f in [sqrt(1/2), sqrt 2)).
const ATANH_SERIES: [f64; 10] = [
    2.0 / 3.0,
    2.0 / 5.0,
    2.0 / 7.0,
    2.0 / 9.0,
    2.0 / 11.0,
    2.0 / 13.0,
    2.0 / 15.0,
    2.0 / 17.0,
    2.0 / 19.0,
    2.0 / 21.0,
];

/// log2 e and log10 e split like ln 2.
const LOG2E_LO: f64 = 2.035_527_374_093_103_3e-17;
const LOG10E_LO: f64 = 1.098_319_650_216_765e-17;

fn c64<O: Ops>(o: &mut O, v: f64) -> O::F {
    o.f_const(W64, v)
}

/// `c[0] + z (c[1] + z (...))` by fused multiply-adds.
fn horner<O: Ops>(o: &mut O, z: O::F, c: &[f64]) -> O::F {
    let mut p = c64(o, c[c.len() - 1]);
    for &k in c[..c.len() - 1].iter().rev() {
        let k = c64(o, k);
        p = o.fma(p, z, k);
    }
    p
}

/// e^r - 1 for |r| <= ln2 / 2 (a little more after rounding k), by its Taylor series.
fn expm1_series<O: Ops>(o: &mut O, r: O::F) -> O::F {
    let p = horner(o, r, &EXPM1_TAYLOR);
    let one = c64(o, 1.0);
    let p = o.fma(p, r, one);
    o.f_bin(FBin::Mul, r, p)
}

/// e^x = 2^k (1 + q): k = rint(x / ln 2) (as an integer and a float, +0 for 0, so that a zero
/// x passes through as itself), q = e^r - 1 for r = x - k ln 2, reduced in two fused steps.
fn exp_reduce<O: Ops>(o: &mut O, x: O::F) -> (O::I, O::F, O::F) {
    let log2e = c64(o, std::f64::consts::LOG2_E);
    let t = o.f_bin(FBin::Mul, x, log2e);
    let k = o.f_to_i(t);
    let kf = o.i_to_f(k);
    let minus_hi = c64(o, -LN2_HI);
    let minus_lo = c64(o, -LN2_LO);
    let r = o.fma(kf, minus_hi, x);
    let r = o.fma(kf, minus_lo, r);
    let q = expm1_series(o, r);
    (k, kf, q)
}

/// 2^k as a float64 for k in [-1022, 1023] (an integer register).
fn pow2<O: Ops>(o: &mut O, k: O::I) -> O::F {
    let bias = o.i_const(W64, 1023);
    let field = o.i_bin(IBin::Add, k, bias);
    let count = o.i_const(Width::W32, 52);
    let bits = o.shift(Shift::Shl, field, count);
    o.f_of_bits(bits)
}

/// p 2^k for k in [-1078, 1026] with one rounding: by 2^k1 (exact: p is near 1) and then
/// 2^(k - k1), k1 = rint(k / 2).
fn scale<O: Ops>(o: &mut O, p: O::F, k: O::I, kf: O::F) -> O::F {
    let half = c64(o, 0.5);
    let k1f = o.f_bin(FBin::Mul, kf, half);
    let k1 = o.f_to_i(k1f);
    let k2 = o.i_bin(IBin::Sub, k, k1);
    let s1 = pow2(o, k1);
    let s2 = pow2(o, k2);
    let p = o.f_bin(FBin::Mul, p, s1);
    o.f_bin(FBin::Mul, p, s2)
}

/// x clamped to [lo, hi]; a NaN becomes `lo` (PTX `max` ignores it): callers select NaN
/// themselves.
fn clamp<O: Ops>(o: &mut O, x: O::F, lo: f64, hi: f64) -> O::F {
    let lo = c64(o, lo);
    let hi = c64(o, hi);
    let x = o.f_bin(FBin::Max, x, lo);
    o.f_bin(FBin::Min, x, hi)
}

/// `r`, or `x` itself when x is NaN.
fn nan_through<O: Ops>(o: &mut O, x: O::F, r: O::F) -> O::F {
    let nan = o.is_nan(x);
    o.sel_f(nan, x, r)
}

/// e^x / 2^shift for x clamped to [-746, 711] (past those the result is 0 or infinite).
fn exp_shifted<O: Ops>(o: &mut O, x: O::F, shift: u64) -> O::F {
    let xc = clamp(o, x, -746.0, 711.0);
    let (k, kf, q) = exp_reduce(o, xc);
    let one = c64(o, 1.0);
    let p = o.f_bin(FBin::Add, one, q);
    let (k, kf) = if shift == 0 {
        (k, kf)
    } else {
        let s = o.i_const(W64, shift);
        let sf = c64(o, shift as f64);
        (o.i_bin(IBin::Sub, k, s), o.f_bin(FBin::Sub, kf, sf))
    };
    let r = scale(o, p, k, kf);
    nan_through(o, x, r)
}

/// float64 e^x.
pub fn exp<O: Ops>(o: &mut O, x: O::F) -> O::F {
    exp_shifted(o, x, 0)
}

/// float64 2^x: k = rint(x) and r = (x - k) ln 2 (x - k is exact).
pub fn exp2<O: Ops>(o: &mut O, x: O::F) -> O::F {
    let xc = clamp(o, x, -1080.0, 1026.0);
    let k = o.f_to_i(xc);
    let kf = o.i_to_f(k);
    let frac = o.f_bin(FBin::Sub, xc, kf);
    let ln2 = c64(o, LN2_HI);
    let r = o.f_bin(FBin::Mul, frac, ln2);
    let q = expm1_series(o, r);
    let one = c64(o, 1.0);
    let p = o.f_bin(FBin::Add, one, q);
    let r = scale(o, p, k, kf);
    nan_through(o, x, r)
}

/// float64 e^x - 1: 2^k (1 + q) - 1 as one fused `2^k q + (2^k - 1)` (2^k - 1 is exact for
/// the k where it matters), q itself for k = 0 (no cancellation near 0), x itself at ±0,
/// and [`exp`] where 2^k would overflow.
pub fn expm1<O: Ops>(o: &mut O, x: O::F) -> O::F {
    let xc = clamp(o, x, -60.0, 711.0);
    let (k, kf, q) = exp_reduce(o, xc);
    let s = pow2(o, k);
    let one = c64(o, 1.0);
    let s1 = o.f_bin(FBin::Sub, s, one);
    let near = o.fma(s, q, s1);
    let p = o.f_bin(FBin::Add, one, q);
    let far = scale(o, p, k, kf);
    let limit = o.i_const(W64, 1000);
    let big = o.i_cmp(Cmp::Gt, true, k, limit);
    let r = o.sel_f(big, far, near);
    let zero = o.i_const(W64, 0);
    let k0 = o.i_cmp(Cmp::Eq, false, k, zero);
    let r = o.sel_f(k0, q, r);
    // ±0 as itself, not through arithmetic (Vulkan need not keep the sign of a zero result).
    let zero = c64(o, 0.0);
    let x_zero = o.f_cmp(Cmp::Eq, x, zero);
    let r = o.sel_f(x_zero, x, r);
    nan_through(o, x, r)
}

/// The base of a logarithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogBase {
    E,
    Two,
    Ten,
}

/// x = 2^e m with m in [sqrt(2)/2, sqrt(2)] for a positive float64 x (subnormals scaled by
/// 2^54 first): e as a float, m, and the constant 0.5 the split made (callers reuse it).
fn split_exponent<O: Ops>(o: &mut O, x: O::F) -> (O::F, O::F, O::F) {
    let min_normal = c64(o, f64::MIN_POSITIVE);
    let sub = o.f_cmp(Cmp::Lt, x, min_normal);
    let two54 = c64(o, 18_014_398_509_481_984.0);
    let scaled = o.f_bin(FBin::Mul, x, two54);
    let xs = o.sel_f(sub, scaled, x);
    let u = o.to_bits(xs);
    let count = o.i_const(Width::W32, 52);
    let field = o.shift(Shift::Shr, u, count);
    let bias = o.i_const(W64, 1023);
    let e = o.i_bin(IBin::Sub, field, bias);
    let mant_mask = o.i_const(W64, (1 << 52) - 1);
    let frac = o.i_bin(IBin::And, u, mant_mask);
    let one_bits = o.i_const(W64, 1023 << 52);
    let m_bits = o.i_bin(IBin::Or, frac, one_bits);
    let m = o.f_of_bits(m_bits);
    let sqrt2 = c64(o, std::f64::consts::SQRT_2);
    let big = o.f_cmp(Cmp::Gt, m, sqrt2);
    let half = c64(o, 0.5);
    let m_half = o.f_bin(FBin::Mul, m, half);
    let m = o.sel_f(big, m_half, m);
    let one = o.i_const(W64, 1);
    let e_up = o.i_bin(IBin::Add, e, one);
    let e = o.sel_i(big, e_up, e);
    let k54 = o.i_const(W64, 54);
    let e_sub = o.i_bin(IBin::Sub, e, k54);
    let e = o.sel_i(sub, e_sub, e);
    let ef = o.i_to_f(e);
    (ef, m, half)
}

/// x = 2^e (1 + f) with 1 + f in [sqrt(1/2), sqrt 2), for a positive x (subnormals scaled
/// by 2^54 first): e as a float, f (exact), and c with log(1 + f) = f + c. With
/// s = f / (2 + f) and 2s = f - s f, log(1 + f) = 2s + s T = f - (f^2/2 - s (f^2/2 + T)):
/// s's rounding only reaches the small correction c.
fn log_reduce<O: Ops>(o: &mut O, x: O::F) -> (O::F, O::F, O::F) {
    let (ef, m, half) = split_exponent(o, x);
    let one = c64(o, 1.0);
    let two = c64(o, 2.0);
    let f = o.f_bin(FBin::Sub, m, one);
    let den = o.f_bin(FBin::Add, two, f);
    let s = o.f_bin(FBin::Div, f, den);
    let z = o.f_bin(FBin::Mul, s, s);
    let p = horner(o, z, &ATANH_SERIES);
    let t = o.f_bin(FBin::Mul, z, p);
    let hf = o.f_bin(FBin::Mul, half, f);
    let hfsq = o.f_bin(FBin::Mul, hf, f);
    let inner = o.f_bin(FBin::Add, hfsq, t);
    let zero = c64(o, 0.0);
    let minus_hfsq = o.f_bin(FBin::Sub, zero, hfsq);
    let c = o.fma(s, inner, minus_hfsq);
    (ef, f, c)
}

/// e log 2 + f + c in `base`: the large terms (e log 2 and f times the base's constant) are
/// added last, each constant split in a rounded part and the rest.
fn log_combine<O: Ops>(o: &mut O, ef: O::F, f: O::F, c: O::F, base: LogBase) -> O::F {
    match base {
        LogBase::E => {
            let lo = c64(o, LN2_LO);
            let hi = c64(o, LN2_HI);
            let t = o.fma(ef, lo, c);
            let t = o.f_bin(FBin::Add, t, f);
            o.fma(ef, hi, t)
        }
        // e exactly, so powers of two are exact.
        LogBase::Two => {
            let hi = c64(o, std::f64::consts::LOG2_E);
            let lo = c64(o, LOG2E_LO);
            let t = o.f_bin(FBin::Mul, f, lo);
            let t = o.fma(c, hi, t);
            let t = o.fma(f, hi, t);
            o.f_bin(FBin::Add, ef, t)
        }
        LogBase::Ten => {
            let hi = c64(o, std::f64::consts::LOG10_E);
            let lo = c64(o, LOG10E_LO);
            let t = o.f_bin(FBin::Mul, f, lo);
            let t = o.fma(c, hi, t);
            let t = o.fma(f, hi, t);
            let lo2 = c64(o, LOG10_2_LO);
            let hi2 = c64(o, LOG10_2_HI);
            let t = o.fma(ef, lo2, t);
            o.fma(ef, hi2, t)
        }
    }
}

/// C's special values of a logarithm of `x`: -inf at ±0, NaN below 0, +inf at +inf, a NaN
/// through.
fn log_specials<O: Ops>(o: &mut O, x: O::F, r: O::F) -> O::F {
    let zero = c64(o, 0.0);
    let inf = c64(o, f64::INFINITY);
    let is_inf = o.f_cmp(Cmp::Eq, x, inf);
    let r = o.sel_f(is_inf, x, r);
    let is_zero = o.f_cmp(Cmp::Eq, x, zero);
    let minus_inf = c64(o, f64::NEG_INFINITY);
    let r = o.sel_f(is_zero, minus_inf, r);
    let negative = o.f_cmp(Cmp::Lt, x, zero);
    let nan = c64(o, f64::NAN);
    let r = o.sel_f(negative, nan, r);
    nan_through(o, x, r)
}

/// float64 log, log2 or log10 of x.
pub fn log<O: Ops>(o: &mut O, x: O::F, base: LogBase) -> O::F {
    let (ef, f, c) = log_reduce(o, x);
    let r = log_combine(o, ef, f, c, base);
    log_specials(o, x, r)
}

/// float64 log(1 + x): log u for u = 1 + x rounded, plus (1 + x - u) / u, the rounding error
/// u made (exact: u - 1 and x - (u - 1) are); x itself at ±0.
pub fn log1p<O: Ops>(o: &mut O, x: O::F) -> O::F {
    let one = c64(o, 1.0);
    let u = o.f_bin(FBin::Add, one, x);
    let u1 = o.f_bin(FBin::Sub, u, one);
    let err = o.f_bin(FBin::Sub, x, u1);
    let c = o.f_bin(FBin::Div, err, u);
    // u = 0 or infinite: no correction (0/0, inf - inf).
    let bad = o.is_nan(c);
    let zero = c64(o, 0.0);
    let c = o.sel_f(bad, zero, c);
    let (ef, f, c_u) = log_reduce(o, u);
    let c = o.f_bin(FBin::Add, c_u, c);
    let r = log_combine(o, ef, f, c, LogBase::E);
    let r = log_specials(o, u, r);
    let is_zero = o.f_cmp(Cmp::Eq, x, zero);
    let r = o.sel_f(is_zero, x, r);
    nan_through(o, x, r)
}

/// Past this |x|, e^-|x| is below 2^-63 of e^|x|: sinh and cosh are e^|x| / 2, tanh is 1.
const HYPERBOLIC_FAR: f64 = 22.0;

/// float64 sinh: near 0 from E = expm1 |x| as (E + E / (E + 1)) / 2 (no cancellation), far
/// as e^|x| / 2 (no overflow before sinh's own), with the sign of x.
pub fn sinh<O: Ops>(o: &mut O, x: O::F) -> O::F {
    let a = abs(o, x);
    let e = expm1(o, a);
    let one = c64(o, 1.0);
    let e1 = o.f_bin(FBin::Add, e, one);
    let t = o.f_bin(FBin::Div, e, e1);
    let t = o.f_bin(FBin::Add, e, t);
    let half = c64(o, 0.5);
    let near = o.f_bin(FBin::Mul, t, half);
    let far = exp_shifted(o, a, 1);
    let limit = c64(o, HYPERBOLIC_FAR);
    let is_far = o.f_cmp(Cmp::Ge, a, limit);
    let r = o.sel_f(is_far, far, near);
    let r = o.f_bin(FBin::CopySign, r, x);
    nan_through(o, x, r)
}

/// float64 cosh: h + 1 / (4 h) for h = e^|x| / 2.
pub fn cosh<O: Ops>(o: &mut O, x: O::F) -> O::F {
    let a = abs(o, x);
    let h = exp_shifted(o, a, 1);
    let quarter = c64(o, 0.25);
    let t = o.f_bin(FBin::Div, quarter, h);
    let r = o.f_bin(FBin::Add, h, t);
    nan_through(o, x, r)
}

/// float64 tanh: E / (E + 2) for E = expm1(2 |x|), 1 far from 0, with the sign of x.
pub fn tanh<O: Ops>(o: &mut O, x: O::F) -> O::F {
    let a = abs(o, x);
    let a2 = o.f_bin(FBin::Add, a, a);
    let e = expm1(o, a2);
    let two = c64(o, 2.0);
    let den = o.f_bin(FBin::Add, e, two);
    let t = o.f_bin(FBin::Div, e, den);
    let limit = c64(o, HYPERBOLIC_FAR);
    let is_far = o.f_cmp(Cmp::Ge, a, limit);
    let one = c64(o, 1.0);
    let r = o.sel_f(is_far, one, t);
    let r = o.f_bin(FBin::CopySign, r, x);
    nan_through(o, x, r)
}

/// |x| as the magnitude of x with a positive sign.
fn abs<O: Ops>(o: &mut O, x: O::F) -> O::F {
    let one = c64(o, 1.0);
    o.f_bin(FBin::CopySign, x, one)
}

// ----- float64 sine, cosine, tangent -----

/// pi/2 as the sum of three float64s (the rest is under 6e-50) and 2/pi rounded.
const PIO2_1: f64 = std::f64::consts::FRAC_PI_2;
const PIO2_2: f64 = 6.123_233_995_736_766e-17;
const PIO2_3: f64 = -1.497_384_904_859_169_8e-33;
const INV_PIO2: f64 = std::f64::consts::FRAC_2_PI;

/// Past this |x| the Cody-Waite reduction's pi/2 (three float64s) is too coarse (k times
/// what it misses exceeds 1e-22): [`reduce_far`] takes over.
pub const TRIG_LIMIT: f64 = 1_237_940_039_285_380_274_899_124_224.0; // 2^90

/// 2/pi in 53-bit pieces, scaled by 2^600 (so that every piece is a normal float64): the
/// sum is 2/pi 2^600 truncated after 1166 bits.
const TWO_OVER_PI_PIECES: [f64; 22] = [
    2.6416636568967522e180,
    2.973748220839333e164,
    4.22489748930512e148,
    3.5075815447473265e132,
    1.446592407759871e116,
    1.9920701192579333e100,
    4.7700657019866515e82,
    4.883323217918467e68,
    1.5584351101403046e52,
    6.888783873662554e36,
    8.882326746031724e20,
    102870.22466011204,
    4.1940391885270785e-12,
    5.077860613334272e-28,
    9.066295846605709e-44,
    7.064193689775152e-60,
    1.0951456336959488e-75,
    2.231920853623373e-91,
    1.935567947935429e-107,
    2.939670482329695e-123,
    2.167051268884857e-139,
    1.4311638366190685e-155,
];
/// 2^-600 (x is scaled by it as the pieces are scaled up).
const TWO_M600: f64 = f64::from_bits((1023 - 600) << 52);

/// fdlibm's minimax polynomials for sin and cos on [-pi/4, pi/4] (errors under 2^-58).
const SIN: [f64; 6] = [
    -0.16666666666666632,
    0.00833333333332249,
    -0.0001984126982985795,
    2.7557313707070068e-06,
    -2.5050760253406863e-08,
    1.58969099521155e-10,
];
const COS: [f64; 6] = [
    0.0416666666666666,
    -0.001388888888887411,
    2.480158728947673e-05,
    -2.7557314351390663e-07,
    2.087572321298175e-09,
    -1.1359647557788195e-11,
];

/// v - 4 rint(v / 4), exactly: v modulo 4 in [-2, 2] (0 for any v >= 2^55).
fn mod4<O: Ops>(o: &mut O, v: O::F) -> O::F {
    let quarter = c64(o, 0.25);
    let four = c64(o, 4.0);
    let q = o.f_bin(FBin::Mul, v, quarter);
    let q = o.f_round(q);
    let q = o.f_bin(FBin::Mul, q, four);
    o.f_bin(FBin::Sub, v, q)
}

/// The reduction for |x| >= [`TRIG_LIMIT`] (Payne and Hanek's idea in floating point): x 2/pi
/// modulo 4 as the sum of x times each 53-bit piece of 2/pi, each product split exactly
/// (fused) and taken modulo 4 exactly; the products x never reaches past bit 2 are
/// multiples of 4 and vanish by themselves. Returns k (0..3 as a float) and the reduced
/// argument (x 2/pi - k) pi/2 as a double-double.
fn reduce_far<O: Ops>(o: &mut O, x: O::F) -> (O::F, O::F, O::F) {
    let scale = c64(o, TWO_M600);
    let xs = o.f_bin(FBin::Mul, x, scale);
    let mut s = c64(o, 0.0);
    let mut e = c64(o, 0.0);
    for piece in TWO_OVER_PI_PIECES {
        let g = c64(o, piece);
        let (ph, pl) = two_prod(o, xs, g);
        for part in [ph, pl] {
            let t = mod4(o, part);
            let (sum, err) = two_sum(o, s, t);
            s = sum;
            e = o.f_bin(FBin::Add, e, err);
        }
    }
    // t = s + e, |t| small: k = rint(s), the fraction (s - k) + e in [-1/2, 1/2] give or
    // take e, then k modulo 4.
    let k = o.f_round(s);
    let f = o.f_bin(FBin::Sub, s, k);
    let (fh, fl) = two_sum(o, f, e);
    let k = mod4(o, k);
    let p1 = c64(o, PIO2_1);
    let p2 = c64(o, PIO2_2);
    let (rh, rl) = dd_mul(o, fh, fl, p1, p2);
    let (rh, rl) = two_sum(o, rh, rl);
    (k, rh, rl)
}

/// Which of the three.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trig {
    Sin,
    Cos,
    Tan,
}

/// a + b as the rounded sum and its exact error (Knuth's two-sum: no ordering needed).
fn two_sum<O: Ops>(o: &mut O, a: O::F, b: O::F) -> (O::F, O::F) {
    let s = o.f_bin(FBin::Add, a, b);
    let bb = o.f_bin(FBin::Sub, s, a);
    let ab = o.f_bin(FBin::Sub, s, bb);
    let ea = o.f_bin(FBin::Sub, a, ab);
    let eb = o.f_bin(FBin::Sub, b, bb);
    let e = o.f_bin(FBin::Add, ea, eb);
    (s, e)
}

fn neg<O: Ops>(o: &mut O, a: O::F) -> O::F {
    let m1 = c64(o, -1.0);
    o.f_bin(FBin::Mul, a, m1)
}

/// One Cody-Waite step: hi + lo = k pi/2 + (r_hi + r_lo) for k = rint(hi 2/pi) (a float).
/// k times each part of pi/2 is split exactly (fused), hi - k PIO2_1 is exact (Sterbenz),
/// and the large terms are added by two-sums: only terms of the order of 2^-106 |x| round.
fn reduce_pio2<O: Ops>(o: &mut O, hi: O::F, lo: O::F) -> (O::F, O::F, O::F) {
    let inv = c64(o, INV_PIO2);
    let t = o.f_bin(FBin::Mul, hi, inv);
    let k = o.f_round(t);
    let p1 = c64(o, PIO2_1);
    let p2 = c64(o, PIO2_2);
    let p3 = c64(o, PIO2_3);
    let th = o.f_bin(FBin::Mul, k, p1);
    let nth = neg(o, th);
    let tl = o.fma(k, p1, nth);
    let rh = o.f_bin(FBin::Sub, hi, th);
    let ph = o.f_bin(FBin::Mul, k, p2);
    let nph = neg(o, ph);
    let pl = o.fma(k, p2, nph);
    let ntl = neg(o, tl);
    let (a, ea) = two_sum(o, rh, ntl);
    let (b, eb) = two_sum(o, a, nph);
    let rest = o.f_bin(FBin::Add, ea, eb);
    let rest = o.f_bin(FBin::Sub, rest, pl);
    let nk = neg(o, k);
    let rest = o.fma(nk, p3, rest);
    let rest = o.f_bin(FBin::Add, rest, lo);
    let (r_hi, r_lo) = two_sum(o, b, rest);
    (k, r_hi, r_lo)
}

/// sin(x + y) for |x + y| <= pi/4 (y the tail), fdlibm's `__kernel_sin`.
fn kernel_sin<O: Ops>(o: &mut O, x: O::F, y: O::F) -> O::F {
    let z = o.f_bin(FBin::Mul, x, x);
    let w = o.f_bin(FBin::Mul, z, z);
    let s = SIN.map(|c| c64(o, c));
    let a = o.f_bin(FBin::Mul, z, s[3]);
    let a = o.f_bin(FBin::Add, s[2], a);
    let a = o.f_bin(FBin::Mul, z, a);
    let a = o.f_bin(FBin::Add, s[1], a);
    let b = o.f_bin(FBin::Mul, z, s[5]);
    let b = o.f_bin(FBin::Add, s[4], b);
    let zw = o.f_bin(FBin::Mul, z, w);
    let b = o.f_bin(FBin::Mul, zw, b);
    let r = o.f_bin(FBin::Add, a, b);
    let v = o.f_bin(FBin::Mul, z, x);
    // x - ((z (y/2 - v r) - y) - v S1)
    let half = c64(o, 0.5);
    let hy = o.f_bin(FBin::Mul, half, y);
    let vr = o.f_bin(FBin::Mul, v, r);
    let t = o.f_bin(FBin::Sub, hy, vr);
    let t = o.f_bin(FBin::Mul, z, t);
    let t = o.f_bin(FBin::Sub, t, y);
    let vs1 = o.f_bin(FBin::Mul, v, s[0]);
    let t = o.f_bin(FBin::Sub, t, vs1);
    o.f_bin(FBin::Sub, x, t)
}

/// cos(x + y) for |x + y| <= pi/4, fdlibm's `__kernel_cos` (musl's arrangement).
fn kernel_cos<O: Ops>(o: &mut O, x: O::F, y: O::F) -> O::F {
    let z = o.f_bin(FBin::Mul, x, x);
    let w = o.f_bin(FBin::Mul, z, z);
    let c = COS.map(|k| c64(o, k));
    let a = o.f_bin(FBin::Mul, z, c[2]);
    let a = o.f_bin(FBin::Add, c[1], a);
    let a = o.f_bin(FBin::Mul, z, a);
    let a = o.f_bin(FBin::Add, c[0], a);
    let a = o.f_bin(FBin::Mul, z, a);
    let b = o.f_bin(FBin::Mul, z, c[5]);
    let b = o.f_bin(FBin::Add, c[4], b);
    let b = o.f_bin(FBin::Mul, z, b);
    let b = o.f_bin(FBin::Add, c[3], b);
    let ww = o.f_bin(FBin::Mul, w, w);
    let b = o.f_bin(FBin::Mul, ww, b);
    let r = o.f_bin(FBin::Add, a, b);
    // (1 - z/2) + (((1 - (1 - z/2)) - z/2) + (z r - x y))
    let half = c64(o, 0.5);
    let one = c64(o, 1.0);
    let hz = o.f_bin(FBin::Mul, half, z);
    let w = o.f_bin(FBin::Sub, one, hz);
    let lost = o.f_bin(FBin::Sub, one, w);
    let lost = o.f_bin(FBin::Sub, lost, hz);
    let zr = o.f_bin(FBin::Mul, z, r);
    let xy = o.f_bin(FBin::Mul, x, y);
    let t = o.f_bin(FBin::Sub, zr, xy);
    let t = o.f_bin(FBin::Add, lost, t);
    o.f_bin(FBin::Add, w, t)
}

/// float64 sin, cos or tan: x = k pi/2 + r by two reduction steps (the second catches the
/// k the first rounded from an inexact x 2/pi), or by [`reduce_far`] past [`TRIG_LIMIT`],
/// then the kernels on r and the quadrant k mod 4 (taken from the floats: k - 4 rint(k / 4)
/// is exact at any size). x itself below 2^-27 for sin and tan (-0 kept); NaN for an
/// infinite or NaN x.
pub fn sin_cos_tan<O: Ops>(o: &mut O, x: O::F, f: Trig) -> O::F {
    let zero = c64(o, 0.0);
    let (k1, h, l) = reduce_pio2(o, x, zero);
    let (k2, h, l) = reduce_pio2(o, h, l);
    let k1m = mod4(o, k1);
    let q = o.f_bin(FBin::Add, k1m, k2);
    // Past TRIG_LIMIT (finite): the far reduction, on those threads only.
    let a = abs(o, x);
    let limit = c64(o, TRIG_LIMIT);
    let inf = c64(o, f64::INFINITY);
    let far = o.f_cmp(Cmp::Ge, a, limit);
    let finite = o.f_cmp(Cmp::Lt, a, inf);
    let far = o.p_and(far, finite);
    let reduced = o.when(far, &[q, h, l], &mut |o, _| {
        o.call(Routine::TrigReduceFar, &[x])
    });
    let (q, h, l) = (reduced[0], reduced[1], reduced[2]);
    let q = o.f_to_i(q);
    let s = kernel_sin(o, h, l);
    let c = kernel_cos(o, h, l);
    let one = o.i_const(W64, 1);
    let two = o.i_const(W64, 2);
    let odd = o.i_bin(IBin::And, q, one);
    let odd = o.i_cmp(Cmp::Eq, false, odd, one);
    let r = match f {
        Trig::Sin | Trig::Cos => {
            // sin: s, c, -s, -c by quadrant; cos: c, -s, -c, s (the quadrant one further).
            let (even_v, odd_v, q) = match f {
                Trig::Sin => (s, c, q),
                _ => (c, s, o.i_bin(IBin::Add, q, one)),
            };
            let v = o.sel_f(odd, odd_v, even_v);
            let half_turn = o.i_bin(IBin::And, q, two);
            let negate = o.i_cmp(Cmp::Eq, false, half_turn, two);
            let nv = neg(o, v);
            o.sel_f(negate, nv, v)
        }
        Trig::Tan => {
            let t = o.f_bin(FBin::Div, s, c);
            let cot = o.f_bin(FBin::Div, c, s);
            let ncot = neg(o, cot);
            o.sel_f(odd, ncot, t)
        }
    };
    let r = if f == Trig::Cos {
        r
    } else {
        let tiny = c64(o, 7.450_580_596_923_828e-9); // 2^-27
        let is_tiny = o.f_cmp(Cmp::Lt, a, tiny);
        o.sel_f(is_tiny, x, r)
    };
    let nan = c64(o, f64::NAN);
    let r = o.sel_f(finite, r, nan);
    nan_through(o, x, r)
}

// ----- float64 arctangents -----

/// fdlibm's `atan`: atan of 0.5, 1, 1.5 and infinity (rounded, and the rest), and the
/// polynomial on the reduced argument |t| < 7/16, split in odd and even coefficients.
const ATAN_HI: [f64; 4] = [
    0.4636476090008061,
    std::f64::consts::FRAC_PI_4,
    0.982793723247329,
    std::f64::consts::FRAC_PI_2,
];
const ATAN_LO: [f64; 4] = [
    2.2698777452961687e-17,
    3.061616997868383e-17,
    1.3903311031230998e-17,
    6.123233995736766e-17,
];
const ATAN_EVEN: [f64; 6] = [
    0.3333333333333293,
    0.14285714272503466,
    0.09090887133436507,
    0.06661073137387531,
    0.049768779946159324,
    0.016285820115365782,
];
const ATAN_ODD: [f64; 5] = [
    -0.19999999999876483,
    -0.11111110405462356,
    -0.0769187620504483,
    -0.058335701337905735,
    -0.036531572744216916,
];
/// pi rounded, and the rest.
const PI: f64 = std::f64::consts::PI;
const PI_LO: f64 = 1.2246467991473532e-16;

/// float64 arctangent, fdlibm's `atan` without branches: |x| is reduced to t by one division
/// whose numerator and denominator are selected by interval (7/16, 11/16, 19/16, 39/16),
/// then atan|x| = hi - ((t s - lo) - t) with s the polynomial, and the sign of x.
pub fn atan<O: Ops>(o: &mut O, x: O::F) -> O::F {
    let a = abs(o, x);
    let one = c64(o, 1.0);
    let two = c64(o, 2.0);
    let three_halves = c64(o, 1.5);
    let zero = c64(o, 0.0);
    // Interval 0 (2a - 1) / (2 + a), 1 (a - 1) / (a + 1), 2 (a - 1.5) / (1 + 1.5 a),
    // 3 -1 / a; below 7/16 a itself.
    let a2 = o.f_bin(FBin::Mul, two, a);
    let n0 = o.f_bin(FBin::Sub, a2, one);
    let d0 = o.f_bin(FBin::Add, two, a);
    let n1 = o.f_bin(FBin::Sub, a, one);
    let d1 = o.f_bin(FBin::Add, a, one);
    let n2 = o.f_bin(FBin::Sub, a, three_halves);
    let a15 = o.f_bin(FBin::Mul, three_halves, a);
    let d2 = o.f_bin(FBin::Add, one, a15);
    let n3 = c64(o, -1.0);
    let bounds = [7.0 / 16.0, 11.0 / 16.0, 19.0 / 16.0, 39.0 / 16.0].map(|b| c64(o, b));
    let at_least = bounds.map(|b| o.f_cmp(Cmp::Ge, a, b));
    let mut num = a;
    let mut den = one;
    let mut hi = zero;
    let mut lo = zero;
    for (k, (n, d)) in [(n0, d0), (n1, d1), (n2, d2), (n3, a)]
        .into_iter()
        .enumerate()
    {
        num = o.sel_f(at_least[k], n, num);
        den = o.sel_f(at_least[k], d, den);
        let h = c64(o, ATAN_HI[k]);
        let l = c64(o, ATAN_LO[k]);
        hi = o.sel_f(at_least[k], h, hi);
        lo = o.sel_f(at_least[k], l, lo);
    }
    let t = o.f_bin(FBin::Div, num, den);
    let z = o.f_bin(FBin::Mul, t, t);
    let w = o.f_bin(FBin::Mul, z, z);
    let even = horner_plain(o, w, &ATAN_EVEN);
    let s1 = o.f_bin(FBin::Mul, z, even);
    let odd = horner_plain(o, w, &ATAN_ODD);
    let s2 = o.f_bin(FBin::Mul, w, odd);
    let s = o.f_bin(FBin::Add, s1, s2);
    let ts = o.f_bin(FBin::Mul, t, s);
    // Below 7/16 hi = lo = 0: t - t s as fdlibm.
    let r = o.f_bin(FBin::Sub, ts, lo);
    let r = o.f_bin(FBin::Sub, r, t);
    let r = o.f_bin(FBin::Sub, hi, r);
    let r = o.f_bin(FBin::CopySign, r, x);
    nan_through(o, x, r)
}

/// `c[0] + w (c[1] + w (...))`, multiplications and additions rounded apart (fdlibm's
/// coefficients were fitted for that evaluation).
fn horner_plain<O: Ops>(o: &mut O, w: O::F, c: &[f64]) -> O::F {
    let mut p = c64(o, c[c.len() - 1]);
    for &k in c[..c.len() - 1].iter().rev() {
        let k = c64(o, k);
        p = o.f_bin(FBin::Mul, w, p);
        p = o.f_bin(FBin::Add, k, p);
    }
    p
}

/// float64 `atan2 y x`: atan |y / x| placed in the quadrant of (x, y) as fdlibm's `atan2`
/// (pi - (z - pi_lo) left of the axis), with C's values where y / x is 0/0, inf/inf or
/// loses the quadrant: y = ±0 gives ±0 or ±pi by the sign of x, x = ±0 or an infinite y
/// gives ±pi/2, both infinite ±pi/4 or ±3pi/4.
pub fn atan2<O: Ops>(o: &mut O, y: O::F, x: O::F) -> O::F {
    let ay = abs(o, y);
    let ax = abs(o, x);
    let q = o.f_bin(FBin::Div, ay, ax);
    let z = atan(o, q);
    let inf = c64(o, f64::INFINITY);
    let x_inf = o.f_cmp(Cmp::Eq, ax, inf);
    let y_inf = o.f_cmp(Cmp::Eq, ay, inf);
    let both_inf = o.p_and(x_inf, y_inf);
    let pio4 = c64(o, std::f64::consts::FRAC_PI_4);
    let z = o.sel_f(both_inf, pio4, z);
    // The sign of x from its sign bit (-0 is left of the axis).
    let xb = o.to_bits(x);
    let zero_i = o.i_const(W64, 0);
    let left = o.i_cmp(Cmp::Lt, true, xb, zero_i);
    let pi = c64(o, PI);
    let pi_lo = c64(o, PI_LO);
    let zl = o.f_bin(FBin::Sub, z, pi_lo);
    let zl = o.f_bin(FBin::Sub, pi, zl);
    let r = o.sel_f(left, zl, z);
    // Vertical: x = ±0 (y not 0) or y infinite (x finite).
    let zero = c64(o, 0.0);
    let x_zero = o.f_cmp(Cmp::Eq, x, zero);
    let x_finite = o.f_cmp(Cmp::Lt, ax, inf);
    let y_inf_only = o.p_and(y_inf, x_finite);
    let vertical = o.p_or(x_zero, y_inf_only);
    let pio2 = c64(o, std::f64::consts::FRAC_PI_2);
    let r = o.sel_f(vertical, pio2, r);
    // y = ±0: 0 right of the axis (x = +0 included), pi left of it.
    let y_zero = o.f_cmp(Cmp::Eq, y, zero);
    let flat = o.sel_f(left, pi, zero);
    let r = o.sel_f(y_zero, flat, r);
    let r = o.f_bin(FBin::CopySign, r, y);
    let r = nan_through(o, x, r);
    nan_through(o, y, r)
}

/// float64 `asin x` = atan2(x, sqrt((1 - x)(1 + x))) and `acos x` = atan2(sqrt(...), x)
/// (1 - x is exact near 1, where the root matters); NaN past |x| = 1 from the root.
pub fn asin_acos<O: Ops>(o: &mut O, x: O::F, asin: bool) -> O::F {
    let one = c64(o, 1.0);
    let a = o.f_bin(FBin::Sub, one, x);
    let b = o.f_bin(FBin::Add, one, x);
    let p = o.f_bin(FBin::Mul, a, b);
    let root = o.f_sqrt(p);
    if asin {
        atan2(o, x, root)
    } else {
        atan2(o, root, x)
    }
}

// ----- float64 pow -----

/// 2/3 and 2/5 rounded, and the rest.
const TWO_THIRDS: (f64, f64) = (2.0 / 3.0, 3.700_743_415_417_188e-17);
const TWO_FIFTHS: (f64, f64) = (0.4, -2.220_446_049_250_313_2e-17);
/// 1 / (2n + 1) for n = 3..=13: log(1 + f) = 2s + 2s^3/3 + 2s^5/5 + 2s^7 (1/7 + s^2/9 + ...),
/// the terms past under 2^-72 of the sum.
const LOG_TAIL: [f64; 11] = [
    1.0 / 7.0,
    1.0 / 9.0,
    1.0 / 11.0,
    1.0 / 13.0,
    1.0 / 15.0,
    1.0 / 17.0,
    1.0 / 19.0,
    1.0 / 21.0,
    1.0 / 23.0,
    1.0 / 25.0,
    1.0 / 27.0,
];

/// a b as the rounded product and its exact error (fused).
fn two_prod<O: Ops>(o: &mut O, a: O::F, b: O::F) -> (O::F, O::F) {
    let p = o.f_bin(FBin::Mul, a, b);
    let np = neg(o, p);
    let e = o.fma(a, b, np);
    (p, e)
}

/// a b as the rounded product and its exact error without a fused instruction (Dekker's
/// product of Veltkamp's 26- and 27-bit halves; exact while |a|, |b| < 2^995 and the error
/// is not subnormal).
fn two_prod_split<O: Ops>(o: &mut O, a: O::F, b: O::F) -> (O::F, O::F) {
    let halves = |o: &mut O, v: O::F| {
        let splitter = c64(o, 134_217_729.0); // 2^27 + 1
        let t = o.f_bin(FBin::Mul, v, splitter);
        let d = o.f_bin(FBin::Sub, t, v);
        let hi = o.f_bin(FBin::Sub, t, d);
        let lo = o.f_bin(FBin::Sub, v, hi);
        (hi, lo)
    };
    let (ah, al) = halves(o, a);
    let (bh, bl) = halves(o, b);
    let p = o.f_bin(FBin::Mul, a, b);
    let hh = o.f_bin(FBin::Mul, ah, bh);
    let e = o.f_bin(FBin::Sub, hh, p);
    let hl = o.f_bin(FBin::Mul, ah, bl);
    let e = o.f_bin(FBin::Add, e, hl);
    let lh = o.f_bin(FBin::Mul, al, bh);
    let e = o.f_bin(FBin::Add, e, lh);
    let ll = o.f_bin(FBin::Mul, al, bl);
    let e = o.f_bin(FBin::Add, e, ll);
    (p, e)
}

/// float64 `a b + c` rounded once from unfused operations (Boldo and Melquiond's emulation):
/// a b = p + e exactly, c + p = h + t exactly, and the result is h + (e + t) with the inner
/// sum rounded to odd (rounded to nearest, then one ulp toward its error when inexact and
/// even), which makes the outer rounding the correct one. A zero inner sum leaves h as it
/// is (IEEE's sign of an exact zero). Exact over the range of [`two_prod_split`]; special
/// operands give a NaN where a fused `fma` would not, which the routines never use.
pub fn fma_by_parts<O: Ops>(o: &mut O, a: O::F, b: O::F, c: O::F) -> O::F {
    let (p, e) = two_prod_split(o, a, b);
    let (h, t) = two_sum(o, c, p);
    let (s, err) = two_sum(o, e, t);
    let bits = o.to_bits(s);
    let err_bits = o.to_bits(err);
    let one = o.i_const(W64, 1);
    let low = o.i_bin(IBin::And, bits, one);
    let zero_i = o.i_const(W64, 0);
    let even = o.i_cmp(Cmp::Eq, false, low, zero_i);
    let zero = c64(o, 0.0);
    let exact = o.f_cmp(Cmp::Eq, err, zero);
    let inexact = o.p_not(exact);
    let adjust = o.p_and(even, inexact);
    // Toward err: the magnitude grows when s and err have one sign.
    let sign_mask = o.i_const(W64, W64.sign_mask());
    let s_sign = o.i_bin(IBin::And, bits, sign_mask);
    let err_sign = o.i_bin(IBin::And, err_bits, sign_mask);
    let same = o.i_cmp(Cmp::Eq, false, s_sign, err_sign);
    let up = o.i_bin(IBin::Add, bits, one);
    let down = o.i_bin(IBin::Sub, bits, one);
    let odd = o.sel_i(same, up, down);
    let bits = o.sel_i(adjust, odd, bits);
    let v = o.f_of_bits(bits);
    let r = o.f_bin(FBin::Add, h, v);
    let v_zero = o.f_cmp(Cmp::Eq, v, zero);
    o.sel_f(v_zero, h, r)
}

/// (ah + al)(bh + bl) as a double-double (the al bl term dropped).
fn dd_mul<O: Ops>(o: &mut O, ah: O::F, al: O::F, bh: O::F, bl: O::F) -> (O::F, O::F) {
    let (p, e) = two_prod(o, ah, bh);
    let cross = o.f_bin(FBin::Mul, ah, bl);
    let cross = o.fma(al, bh, cross);
    let e = o.f_bin(FBin::Add, e, cross);
    (p, e)
}

/// log|x| as a double-double hi + lo, within about 2^-70 relative: x = 2^e (1 + f) as in
/// [`log_reduce`], s = f / (2 + f) to double-double precision (2 + f and the quotient's
/// residual exact by fma), log(1 + f) = 2s + 2s^3/3 + 2s^5/5 with the first three terms in
/// double-double and the rest (under 2^-17 of the sum) in float64, then e ln 2 (ln 2 split)
/// added by two-sums.
fn log_dd<O: Ops>(o: &mut O, x: O::F) -> (O::F, O::F) {
    let a = abs(o, x);
    let (ef, m, _) = split_exponent(o, a);
    let one = c64(o, 1.0);
    let two = c64(o, 2.0);
    let f = o.f_bin(FBin::Sub, m, one);
    // 2 + f = dh + dl exactly (|f| < 2), s = sh + sl.
    let dh = o.f_bin(FBin::Add, two, f);
    let dh2 = o.f_bin(FBin::Sub, dh, two);
    let dl = o.f_bin(FBin::Sub, f, dh2);
    let sh = o.f_bin(FBin::Div, f, dh);
    let nsh = neg(o, sh);
    let res = o.fma(nsh, dh, f);
    let res = o.fma(nsh, dl, res);
    let sl = o.f_bin(FBin::Div, res, dh);
    // s^2, s^3, s^5 as double-doubles, then the terms.
    let (qh, ql) = dd_mul(o, sh, sl, sh, sl);
    let (ch, cl) = dd_mul(o, sh, sl, qh, ql);
    let (fh, fl) = dd_mul(o, ch, cl, qh, ql);
    let tt = (c64(o, TWO_THIRDS.0), c64(o, TWO_THIRDS.1));
    let (bh, bl) = dd_mul(o, tt.0, tt.1, ch, cl);
    let tf = (c64(o, TWO_FIFTHS.0), c64(o, TWO_FIFTHS.1));
    let (dh5, dl5) = dd_mul(o, tf.0, tf.1, fh, fl);
    let p = horner_plain(o, qh, &LOG_TAIL);
    let f2 = o.f_bin(FBin::Add, fh, fh);
    let f2q = o.f_bin(FBin::Mul, f2, qh);
    let tail = o.f_bin(FBin::Mul, f2q, p);
    let ah = o.f_bin(FBin::Add, sh, sh);
    let al = o.f_bin(FBin::Add, sl, sl);
    let (h1, e1) = two_sum(o, ah, bh);
    let (h2, e2) = two_sum(o, h1, dh5);
    let low = o.f_bin(FBin::Add, tail, dl5);
    let low = o.f_bin(FBin::Add, low, bl);
    let low = o.f_bin(FBin::Add, low, al);
    let low = o.f_bin(FBin::Add, low, e1);
    let low = o.f_bin(FBin::Add, low, e2);
    // + e ln 2.
    let ln2_hi = c64(o, LN2_HI);
    let ln2_lo = c64(o, LN2_LO);
    let (gh, gl) = two_prod(o, ef, ln2_hi);
    let (h3, e3) = two_sum(o, gh, h2);
    let low = o.f_bin(FBin::Add, low, e3);
    let low = o.f_bin(FBin::Add, low, gl);
    let low = o.fma(ef, ln2_lo, low);
    two_sum(o, h3, low)
}

/// C's `pow x y` on float64: e^(y log|x|) with log|x| and its product by y in double-double
/// (the exponent's absolute error stays near 2^-60 up to overflow), negated for a negative
/// x and an odd integral y; NaN for a finite negative x and a non-integral y; C's values for
/// zeros, infinities, x = 1 and y = 0 (1 even with a NaN), |x| = 1 with an infinite y (1).
pub fn pow<O: Ops>(o: &mut O, x: O::F, y: O::F) -> O::F {
    let (lh, ll) = log_dd(o, x);
    let (ph, pl) = two_prod(o, y, lh);
    let pl = o.fma(y, ll, pl);
    // Past [-746, 711] the result is 0 or infinite: clamp, dropping the low part.
    let t = clamp(o, ph, -746.0, 711.0);
    let kept = o.f_cmp(Cmp::Eq, t, ph);
    let zero = c64(o, 0.0);
    let pl = o.sel_f(kept, pl, zero);
    let log2e = c64(o, std::f64::consts::LOG2_E);
    let tk = o.f_bin(FBin::Mul, t, log2e);
    let k = o.f_to_i(tk);
    let kf = o.i_to_f(k);
    let minus_hi = c64(o, -LN2_HI);
    let minus_lo = c64(o, -LN2_LO);
    let rh = o.fma(kf, minus_hi, t);
    let rl = o.fma(kf, minus_lo, pl);
    let r = o.f_bin(FBin::Add, rh, rl);
    let q = expm1_series(o, r);
    let one = c64(o, 1.0);
    let p1 = o.f_bin(FBin::Add, one, q);
    let magnitude = scale(o, p1, k, kf);
    // y integral, odd; x's sign bit.
    let yr = o.f_round(y);
    let y_int = o.f_cmp(Cmp::Eq, yr, y);
    let half = c64(o, 0.5);
    let yh = o.f_bin(FBin::Mul, y, half);
    let yhr = o.f_round(yh);
    let y_even = o.f_cmp(Cmp::Eq, yhr, yh);
    let y_not_even = o.p_not(y_even);
    let y_odd = o.p_and(y_int, y_not_even);
    let xb = o.to_bits(x);
    let zero_i = o.i_const(W64, 0);
    let x_signed = o.i_cmp(Cmp::Lt, true, xb, zero_i);
    // x = ±0 or ±inf: 0 or inf by whether |x| < 1 and the sign of y.
    let a = abs(o, x);
    let inf = c64(o, f64::INFINITY);
    let a_zero = o.f_cmp(Cmp::Eq, a, zero);
    let a_inf = o.f_cmp(Cmp::Eq, a, inf);
    let y_neg = o.f_cmp(Cmp::Lt, y, zero);
    let at_zero = o.sel_f(y_neg, inf, zero);
    let at_inf = o.sel_f(y_neg, zero, inf);
    let m = o.sel_f(a_zero, at_zero, magnitude);
    let m = o.sel_f(a_inf, at_inf, m);
    let negate = o.p_and(x_signed, y_odd);
    let nm = neg(o, m);
    let r = o.sel_f(negate, nm, m);
    // A finite negative x and a non-integral y: NaN.
    let x_neg = o.f_cmp(Cmp::Lt, x, zero);
    let x_finite = o.f_cmp(Cmp::Lt, a, inf);
    let bad = o.p_and(x_neg, x_finite);
    let non_int = o.p_not(y_int);
    let bad = o.p_and(bad, non_int);
    let nan = c64(o, f64::NAN);
    let r = o.sel_f(bad, nan, r);
    let r = nan_through(o, x, r);
    let r = nan_through(o, y, r);
    // 1: y = 0, x = 1, |x| = 1 with an infinite y.
    let y_zero = o.f_cmp(Cmp::Eq, y, zero);
    let x_one = o.f_cmp(Cmp::Eq, x, one);
    let a_one = o.f_cmp(Cmp::Eq, a, one);
    let ay = abs(o, y);
    let y_inf = o.f_cmp(Cmp::Eq, ay, inf);
    let unit = o.p_and(a_one, y_inf);
    let is_one = o.p_or(y_zero, x_one);
    let is_one = o.p_or(is_one, unit);
    o.sel_f(is_one, one, r)
}

#[cfg(test)]
mod tests;
