//! Float routines PTX has no instruction for (float `mod`; float64 `exp`, `log`, ...), each
//! written once against [`Ops`], an instruction set in which every operation is one PTX
//! instruction with IEEE (or integer) semantics.
//!
//! The writer implements [`Ops`] by emitting the instruction (each routine becomes one `.func`
//! per kernel, see `Writer::soft_call`); the tests implement it by computing the instruction on
//! the host with the same semantics (PTX's shift clamping, `cvt` saturation, `min` ignoring a
//! NaN), so they run the very sequence the GPU runs over millions of inputs and compare it with
//! Rust's std, which is what the interpreter computes ([`crate::scalar`]).
//!
//! - float `mod` (C's `fmod`) is exact: the significands' integer remainder by shift and
//!   subtract over the exponent difference, as musl's `fmod` does.
//! - float64 `exp`/`exp2`/`expm1` reduce to e^r, |r| <= ln2/2, by a Cody-Waite split of ln2
//!   (fused, so the product is exact), and evaluate e^r - 1 by its Taylor series to r^13
//!   (truncation under 2^-58); `log`/`log2`/`log10`/`log1p` reduce to m in [sqrt(1/2),
//!   sqrt(2)) and evaluate log m = 2 atanh(f / (2 + f)) by its series to s^23. Both are within
//!   a few ulps of the correctly rounded result over the whole range (the tests' bounds).

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
}

/// Integer operations taking two operands of one width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IBin {
    Add,
    Sub,
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
    Ne,
    Lt,
    Le,
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
    /// The nearest integer (ties to even) as a signed integer of the same width (`cvt.rni`).
    fn f_to_i(&mut self, a: Self::F) -> Self::I;
    /// A signed integer to the float of the same width, rounded to nearest.
    fn i_to_f(&mut self, a: Self::I) -> Self::F;
    fn to_bits(&mut self, a: Self::F) -> Self::I;
    fn from_bits(&mut self, a: Self::I) -> Self::F;
    fn i_bin(&mut self, op: IBin, a: Self::I, b: Self::I) -> Self::I;
    /// Shift `a` by the 32-bit count `n`.
    fn shift(&mut self, op: Shift, a: Self::I, n: Self::I) -> Self::I;
    /// Leading zeros of `a`, as a 32-bit integer.
    fn clz(&mut self, a: Self::I) -> Self::I;
    /// To `w` bits: truncation, or sign extension.
    fn resize(&mut self, a: Self::I, w: Width) -> Self::I;
    fn i_cmp(&mut self, c: Cmp, signed: bool, a: Self::I, b: Self::I) -> Self::P;
    fn p_or(&mut self, a: Self::P, b: Self::P) -> Self::P;
    fn sel_f(&mut self, p: Self::P, a: Self::F, b: Self::F) -> Self::F;
    fn sel_i(&mut self, p: Self::P, a: Self::I, b: Self::I) -> Self::I;
    /// `while cond(state) { state = body(state) }`, returning the final state.
    fn repeat_while(
        &mut self,
        init: &[Self::I],
        cond: &mut dyn FnMut(&mut Self, &[Self::I]) -> Self::P,
        body: &mut dyn FnMut(&mut Self, &[Self::I]) -> Vec<Self::I>,
    ) -> Vec<Self::I>;
}

/// A software routine: what the writer emits once per kernel as a `.func`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Routine {
    Fmod(Width),
}

impl Routine {
    /// The `.func` symbol (in the `sarek_` namespace, which user names never reach).
    pub fn symbol(self) -> &'static str {
        match self {
            Routine::Fmod(Width::W32) => "sarek_fmod_f32",
            Routine::Fmod(Width::W64) => "sarek_fmod_f64",
        }
    }

    /// The float width of the arguments and result, and the number of arguments.
    pub fn signature(self) -> (Width, usize) {
        match self {
            Routine::Fmod(w) => (w, 2),
        }
    }

    /// The routine's result from its arguments.
    pub fn build<O: Ops>(self, o: &mut O, args: &[O::F]) -> O::F {
        match self {
            Routine::Fmod(w) => fmod(o, w, args[0], args[1]),
        }
    }
}

/// C's `fmod x y`: x - n y for the integer n = trunc(x / y), computed exactly on the
/// significands. NaN when x is infinite or NaN or y is 0 or NaN; x itself when |x| < |y|;
/// a zero with the sign of x when the remainder is 0.
pub fn fmod<O: Ops>(o: &mut O, w: Width, x: O::F, y: O::F) -> O::F {
    use Width::W32;
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
    // Shift-subtract once per unit of exponent difference (none for the early results).
    let early = o.p_or(special, smaller);
    let early = o.p_or(early, equal);
    let diff = o.i_bin(IBin::Sub, ex, ey);
    let zero32 = o.i_const(W32, 0);
    let steps = o.sel_i(early, zero32, diff);
    let one32 = o.i_const(W32, 1);
    let state = o.repeat_while(
        &[mx, steps],
        &mut |o, s| o.i_cmp(Cmp::Gt, true, s[1], zero32),
        &mut |o, s| {
            let (m, n) = (s[0], s[1]);
            let reduced = o.i_bin(IBin::Sub, m, my);
            let fits = o.i_cmp(Cmp::Ge, false, m, my);
            let m = o.sel_i(fits, reduced, m);
            let m = o.shift(Shift::Shl, m, one32);
            let n = o.i_bin(IBin::Sub, n, one32);
            vec![m, n]
        },
    );
    let m = state[0];
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
    o.from_bits(r)
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

#[cfg(test)]
mod tests;
