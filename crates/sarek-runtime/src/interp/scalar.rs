//! Scalar values as raw 64-bit words, and every scalar operation over the lanes of a block.
//!
//! Every value the executor handles is one `u64` whose meaning the (statically known) scalar
//! type gives: int32 as its bits zero-extended, int64 as its bits, float32 as its `f32` bits,
//! float64 as its `f64` bits, bool as 0 or 1. Keeping one word type lets registers and memory
//! columns be plain `Vec<u64>` / atomics, while the operations below do the arithmetic in the
//! declared precision (float32 in `f32`, never widened through `f64`).
//!
//! What each operation means (wrapping, masked shift counts, division rules, conversions,
//! math functions) is defined once, in `sarek_compiler::scalar`, which the compiler's
//! constant folders use too; this file applies those definitions lane by lane.

use sarek_compiler::scalar::{ashr, int_div, int_rem, lshr, shl};
use sarek_compiler::types::{BinOp, Literal, Scalar, UnOp};

pub(crate) use sarek_compiler::scalar::{math32, math64};

#[inline(always)]
pub(crate) fn r32(v: u64) -> i32 {
    v as u32 as i32
}
#[inline(always)]
pub(crate) fn w32(x: i32) -> u64 {
    x as u32 as u64
}
#[inline(always)]
pub(crate) fn r64(v: u64) -> i64 {
    v as i64
}
#[inline(always)]
pub(crate) fn w64(x: i64) -> u64 {
    x as u64
}
#[inline(always)]
pub(crate) fn rf32(v: u64) -> f32 {
    f32::from_bits(v as u32)
}
#[inline(always)]
pub(crate) fn wf32(x: f32) -> u64 {
    x.to_bits() as u64
}
#[inline(always)]
pub(crate) fn rf64(v: u64) -> f64 {
    f64::from_bits(v)
}
#[inline(always)]
pub(crate) fn wf64(x: f64) -> u64 {
    x.to_bits()
}
#[inline(always)]
pub(crate) fn wb(b: bool) -> u64 {
    b as u64
}

pub(crate) fn lit_bits(l: Literal) -> u64 {
    match l {
        Literal::Bool(b) => wb(b),
        Literal::I32(x) => w32(x),
        Literal::I64(x) => w64(x),
        Literal::F32(x) => wf32(x),
        Literal::F64(x) => wf64(x),
    }
}

/// Which lanes a pure operation computes: all of them (a straight loop the compiler can
/// vectorise), or only the listed ones (cheaper when few threads are active). Lanes left out
/// keep stale values that no reader looks at.
#[derive(Clone, Copy)]
pub(crate) enum Lanes<'a> {
    All,
    Only(&'a [u32]),
}

/// `dst[t] = f(a[t], b[t])`. Registers are one `Vec` each; the destination is taken out while
/// it is written so that the sources can be borrowed (it is never a source).
#[inline(always)]
pub(crate) fn map2(
    regs: &mut [Vec<u64>],
    lanes: Lanes,
    d: u32,
    a: u32,
    b: u32,
    f: impl Fn(u64, u64) -> u64,
) {
    let mut out = std::mem::take(&mut regs[d as usize]);
    let (xs, ys) = (&regs[a as usize], &regs[b as usize]);
    match lanes {
        Lanes::All => {
            for ((o, &x), &y) in out.iter_mut().zip(xs).zip(ys) {
                *o = f(x, y);
            }
        }
        Lanes::Only(m) => {
            for &t in m {
                let t = t as usize;
                out[t] = f(xs[t], ys[t]);
            }
        }
    }
    regs[d as usize] = out;
}

#[inline(always)]
pub(crate) fn map1(regs: &mut [Vec<u64>], lanes: Lanes, d: u32, a: u32, f: impl Fn(u64) -> u64) {
    let mut out = std::mem::take(&mut regs[d as usize]);
    let xs = &regs[a as usize];
    match lanes {
        Lanes::All => {
            for (o, &x) in out.iter_mut().zip(xs) {
                *o = f(x);
            }
        }
        Lanes::Only(m) => {
            for &t in m {
                out[t as usize] = f(xs[t as usize]);
            }
        }
    }
    regs[d as usize] = out;
}

#[inline(always)]
pub(crate) fn map3(
    regs: &mut [Vec<u64>],
    lanes: Lanes,
    d: u32,
    a: u32,
    b: u32,
    c: u32,
    f: impl Fn(u64, u64, u64) -> u64,
) {
    let mut out = std::mem::take(&mut regs[d as usize]);
    let (xs, ys, zs) = (&regs[a as usize], &regs[b as usize], &regs[c as usize]);
    match lanes {
        Lanes::All => {
            for (((o, &x), &y), &z) in out.iter_mut().zip(xs).zip(ys).zip(zs) {
                *o = f(x, y, z);
            }
        }
        Lanes::Only(m) => {
            for &t in m {
                let t = t as usize;
                out[t] = f(xs[t], ys[t], zs[t]);
            }
        }
    }
    regs[d as usize] = out;
}

/// A pure (non-faulting) binary operation over every lane. Integer `/` and `mod` are handled
/// by the executor (they fault on zero); `&&`/`||` reach here only when their right operand
/// is pure, so evaluating both sides is unobservable.
pub(crate) fn binary(
    regs: &mut [Vec<u64>],
    lanes: Lanes,
    op: BinOp,
    ty: Scalar,
    d: u32,
    a: u32,
    b: u32,
) {
    use BinOp::*;
    macro_rules! int_ops {
        ($rd:ident, $wr:ident) => {
            match op {
                Add => map2(
                    regs,
                    lanes,
                    d,
                    a,
                    b,
                    |x, y| $wr($rd(x).wrapping_add($rd(y))),
                ),
                Sub => map2(
                    regs,
                    lanes,
                    d,
                    a,
                    b,
                    |x, y| $wr($rd(x).wrapping_sub($rd(y))),
                ),
                Mul => map2(
                    regs,
                    lanes,
                    d,
                    a,
                    b,
                    |x, y| $wr($rd(x).wrapping_mul($rd(y))),
                ),
                // Only reached for lanes already checked non-zero (see `Exec::divide`).
                Div => map2(regs, lanes, d, a, b, |x, y| $wr(int_div($rd(x), $rd(y)))),
                Rem => map2(regs, lanes, d, a, b, |x, y| $wr(int_rem($rd(x), $rd(y)))),
                Eq => map2(regs, lanes, d, a, b, |x, y| wb($rd(x) == $rd(y))),
                Ne => map2(regs, lanes, d, a, b, |x, y| wb($rd(x) != $rd(y))),
                Lt => map2(regs, lanes, d, a, b, |x, y| wb($rd(x) < $rd(y))),
                Le => map2(regs, lanes, d, a, b, |x, y| wb($rd(x) <= $rd(y))),
                Gt => map2(regs, lanes, d, a, b, |x, y| wb($rd(x) > $rd(y))),
                Ge => map2(regs, lanes, d, a, b, |x, y| wb($rd(x) >= $rd(y))),
                BitAnd | And => map2(regs, lanes, d, a, b, |x, y| $wr($rd(x) & $rd(y))),
                BitOr | Or => map2(regs, lanes, d, a, b, |x, y| $wr($rd(x) | $rd(y))),
                BitXor => map2(regs, lanes, d, a, b, |x, y| $wr($rd(x) ^ $rd(y))),
                Shl => map2(regs, lanes, d, a, b, |x, y| $wr(shl($rd(x), y as u32))),
                LShr => map2(regs, lanes, d, a, b, |x, y| $wr(lshr($rd(x), y as u32))),
                AShr => map2(regs, lanes, d, a, b, |x, y| $wr(ashr($rd(x), y as u32))),
            }
        };
    }
    macro_rules! float_ops {
        ($rd:ident, $wr:ident) => {
            match op {
                Add => map2(regs, lanes, d, a, b, |x, y| $wr($rd(x) + $rd(y))),
                Sub => map2(regs, lanes, d, a, b, |x, y| $wr($rd(x) - $rd(y))),
                Mul => map2(regs, lanes, d, a, b, |x, y| $wr($rd(x) * $rd(y))),
                Div => map2(regs, lanes, d, a, b, |x, y| $wr($rd(x) / $rd(y))),
                // Rust's float `%` is C fmod.
                Rem => map2(regs, lanes, d, a, b, |x, y| $wr($rd(x) % $rd(y))),
                Eq => map2(regs, lanes, d, a, b, |x, y| wb($rd(x) == $rd(y))),
                Ne => map2(regs, lanes, d, a, b, |x, y| wb($rd(x) != $rd(y))),
                Lt => map2(regs, lanes, d, a, b, |x, y| wb($rd(x) < $rd(y))),
                Le => map2(regs, lanes, d, a, b, |x, y| wb($rd(x) <= $rd(y))),
                Gt => map2(regs, lanes, d, a, b, |x, y| wb($rd(x) > $rd(y))),
                Ge => map2(regs, lanes, d, a, b, |x, y| wb($rd(x) >= $rd(y))),
                // Not produced by the typer for floats; bitwise on the representation.
                BitAnd | And => map2(regs, lanes, d, a, b, |x, y| x & y),
                BitOr | Or => map2(regs, lanes, d, a, b, |x, y| x | y),
                BitXor | Shl | LShr | AShr => map2(regs, lanes, d, a, b, |x, y| x ^ y),
            }
        };
    }
    match ty {
        Scalar::I32 => int_ops!(r32, w32),
        Scalar::I64 => int_ops!(r64, w64),
        Scalar::F32 => float_ops!(rf32, wf32),
        Scalar::F64 => float_ops!(rf64, wf64),
        Scalar::Bool => match op {
            Eq => map2(regs, lanes, d, a, b, |x, y| wb(x == y)),
            Ne | BitXor => map2(regs, lanes, d, a, b, |x, y| wb(x != y)),
            And | BitAnd | Mul => map2(regs, lanes, d, a, b, |x, y| x & y),
            Or | BitOr => map2(regs, lanes, d, a, b, |x, y| x | y),
            Lt => map2(regs, lanes, d, a, b, |x, y| wb(x < y)),
            Le => map2(regs, lanes, d, a, b, |x, y| wb(x <= y)),
            Gt => map2(regs, lanes, d, a, b, |x, y| wb(x > y)),
            Ge => map2(regs, lanes, d, a, b, |x, y| wb(x >= y)),
            _ => map2(regs, lanes, d, a, b, |x, _| x),
        },
    }
}

pub(crate) fn unary(regs: &mut [Vec<u64>], lanes: Lanes, op: UnOp, ty: Scalar, d: u32, a: u32) {
    match (op, ty) {
        (UnOp::Neg, Scalar::I32) => map1(regs, lanes, d, a, |x| w32(r32(x).wrapping_neg())),
        (UnOp::Neg, Scalar::I64) => map1(regs, lanes, d, a, |x| w64(r64(x).wrapping_neg())),
        (UnOp::Neg, Scalar::F32) => map1(regs, lanes, d, a, |x| wf32(-rf32(x))),
        (UnOp::Neg, Scalar::F64) => map1(regs, lanes, d, a, |x| wf64(-rf64(x))),
        (UnOp::Not, _) | (_, Scalar::Bool) => map1(regs, lanes, d, a, |x| wb(x == 0)),
        (UnOp::BitNot, Scalar::I32) => map1(regs, lanes, d, a, |x| w32(!r32(x))),
        (UnOp::BitNot, _) => map1(regs, lanes, d, a, |x| !x),
    }
}

/// `abs`, `clz`, `popcount` (results in the operand type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IntFn {
    Abs,
    Clz,
    Popcount,
}

pub(crate) fn int_fn(regs: &mut [Vec<u64>], lanes: Lanes, f: IntFn, ty: Scalar, d: u32, a: u32) {
    match (f, ty) {
        (IntFn::Abs, Scalar::I32) => map1(regs, lanes, d, a, |x| w32(r32(x).wrapping_abs())),
        (IntFn::Abs, Scalar::I64) => map1(regs, lanes, d, a, |x| w64(r64(x).wrapping_abs())),
        (IntFn::Abs, Scalar::F32) => map1(regs, lanes, d, a, |x| wf32(rf32(x).abs())),
        (IntFn::Abs, Scalar::F64) => map1(regs, lanes, d, a, |x| wf64(rf64(x).abs())),
        (IntFn::Clz, Scalar::I32) => {
            map1(regs, lanes, d, a, |x| w32(r32(x).leading_zeros() as i32))
        }
        (IntFn::Clz, _) => map1(regs, lanes, d, a, |x| w64(r64(x).leading_zeros() as i64)),
        (IntFn::Popcount, Scalar::I32) => {
            map1(regs, lanes, d, a, |x| w32(r32(x).count_ones() as i32))
        }
        (IntFn::Popcount, _) => map1(regs, lanes, d, a, |x| w64(r64(x).count_ones() as i64)),
        (IntFn::Abs, Scalar::Bool) => map1(regs, lanes, d, a, |x| x),
    }
}

/// `min` / `max` on any numeric type (floats: IEEE `fmin`/`fmax`, a NaN operand is ignored).
pub(crate) fn min_max(
    regs: &mut [Vec<u64>],
    lanes: Lanes,
    max: bool,
    ty: Scalar,
    d: u32,
    a: u32,
    b: u32,
) {
    match (ty, max) {
        (Scalar::I32, false) => map2(regs, lanes, d, a, b, |x, y| w32(r32(x).min(r32(y)))),
        (Scalar::I32, true) => map2(regs, lanes, d, a, b, |x, y| w32(r32(x).max(r32(y)))),
        (Scalar::I64, false) => map2(regs, lanes, d, a, b, |x, y| w64(r64(x).min(r64(y)))),
        (Scalar::I64, true) => map2(regs, lanes, d, a, b, |x, y| w64(r64(x).max(r64(y)))),
        (Scalar::F32, false) => map2(regs, lanes, d, a, b, |x, y| wf32(rf32(x).min(rf32(y)))),
        (Scalar::F32, true) => map2(regs, lanes, d, a, b, |x, y| wf32(rf32(x).max(rf32(y)))),
        (Scalar::F64, false) => map2(regs, lanes, d, a, b, |x, y| wf64(rf64(x).min(rf64(y)))),
        (Scalar::F64, true) => map2(regs, lanes, d, a, b, |x, y| wf64(rf64(x).max(rf64(y)))),
        (Scalar::Bool, false) => map2(regs, lanes, d, a, b, |x, y| x & y),
        (Scalar::Bool, true) => map2(regs, lanes, d, a, b, |x, y| x | y),
    }
}

/// Numeric conversion of one value (`sarek_compiler::scalar::convert` on words).
#[inline]
pub(crate) fn convert(v: u64, from: Scalar, to: Scalar) -> u64 {
    if from == to {
        return v;
    }
    lit_bits(sarek_compiler::scalar::convert(word_lit(v, from), to))
}

/// The literal a word holds, read at type `ty`.
#[inline]
pub(crate) fn word_lit(v: u64, ty: Scalar) -> Literal {
    match ty {
        Scalar::Bool => Literal::Bool(v & 1 != 0),
        Scalar::I32 => Literal::I32(r32(v)),
        Scalar::I64 => Literal::I64(r64(v)),
        Scalar::F32 => Literal::F32(rf32(v)),
        Scalar::F64 => Literal::F64(rf64(v)),
    }
}

/// Apply an atomic read-modify-write to `old`, returning the new value (`None`: leave the
/// location unchanged, for a failed compare-and-swap).
#[inline]
pub(crate) fn atomic_apply(
    op: sarek_compiler::intrinsics::AtomicOp,
    ty: Scalar,
    old: u64,
    x: u64,
    y: u64,
) -> Option<u64> {
    use sarek_compiler::intrinsics::AtomicOp::*;
    Some(match ty {
        Scalar::I32 => {
            let (o, v) = (r32(old), r32(x));
            w32(match op {
                Add => o.wrapping_add(v),
                Sub => o.wrapping_sub(v),
                Min => o.min(v),
                Max => o.max(v),
                And => o & v,
                Or => o | v,
                Xor => o ^ v,
                Exch => v,
                Cas => return (o == v).then_some(w32(r32(y))),
                Inc => o.wrapping_add(1),
                Dec => o.wrapping_sub(1),
            })
        }
        Scalar::I64 => {
            let (o, v) = (r64(old), r64(x));
            w64(match op {
                Add => o.wrapping_add(v),
                Sub => o.wrapping_sub(v),
                Min => o.min(v),
                Max => o.max(v),
                And => o & v,
                Or => o | v,
                Xor => o ^ v,
                Exch => v,
                Cas => return (o == v).then_some(y),
                Inc => o.wrapping_add(1),
                Dec => o.wrapping_sub(1),
            })
        }
        Scalar::F32 => {
            let (o, v) = (rf32(old), rf32(x));
            match op {
                Add => wf32(o + v),
                Sub => wf32(o - v),
                Min => wf32(o.min(v)),
                Max => wf32(o.max(v)),
                Exch => x,
                Cas => return (old == x).then_some(y),
                Inc => wf32(o + 1.0),
                Dec => wf32(o - 1.0),
                And | Or | Xor => old,
            }
        }
        Scalar::F64 => {
            let (o, v) = (rf64(old), rf64(x));
            match op {
                Add => wf64(o + v),
                Sub => wf64(o - v),
                Min => wf64(o.min(v)),
                Max => wf64(o.max(v)),
                Exch => x,
                Cas => return (old == x).then_some(y),
                Inc => wf64(o + 1.0),
                Dec => wf64(o - 1.0),
                And | Or | Xor => old,
            }
        }
        Scalar::Bool => match op {
            Exch => x,
            Cas => return (old == x).then_some(y),
            And => old & x,
            Or => old | x,
            Xor => old ^ x,
            _ => old,
        },
    })
}
