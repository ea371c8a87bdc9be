//! The software routines run on the host: [`Host`] computes each [`Ops`] operation with the
//! semantics of the PTX instruction the writer emits for it, so the routines below are the
//! very sequences the GPU runs. They are compared with Rust's std (what `interp` computes):
//! bit for bit for `fmod`, within an ulp bound for the transcendentals. The PTX text itself
//! is checked by ptxas in `tests/all/ptx_ptxas.rs`.

use super::*;

#[derive(Clone, Copy, Debug)]
enum F {
    S(f32),
    D(f64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum I {
    S(u32),
    D(u64),
}

impl I {
    fn width(self) -> Width {
        match self {
            I::S(_) => Width::W32,
            I::D(_) => Width::W64,
        }
    }
    fn raw(self) -> u64 {
        match self {
            I::S(v) => u64::from(v),
            I::D(v) => v,
        }
    }
    /// The value as a signed integer of its width.
    fn signed(self) -> i64 {
        match self {
            I::S(v) => i64::from(v as i32),
            I::D(v) => v as i64,
        }
    }
    fn of(w: Width, v: u64) -> I {
        match w {
            Width::W32 => I::S(v as u32),
            Width::W64 => I::D(v),
        }
    }
}

/// PTX semantics on the host. A [`Ops::call`] runs the routine in a frame of its own (a
/// `.func` has its own registers), its arguments and results passed by their bits as
/// `.param`s are, and is recorded with the calls it makes.
#[derive(Default)]
struct Host {
    calls: Vec<Routine>,
}

fn cmp<T: PartialOrd>(c: Cmp, a: T, b: T) -> bool {
    match c {
        Cmp::Eq => a == b,
        Cmp::Lt => a < b,
        Cmp::Gt => a > b,
        Cmp::Ge => a >= b,
    }
}

impl Ops for Host {
    type F = F;
    type I = I;
    type P = bool;

    fn f_const(&mut self, w: Width, v: f64) -> F {
        match w {
            Width::W32 => {
                assert_eq!(f64::from(v as f32), v, "float32 constant {v}");
                F::S(v as f32)
            }
            Width::W64 => F::D(v),
        }
    }
    fn i_const(&mut self, w: Width, v: u64) -> I {
        I::of(w, v)
    }
    fn f_bin(&mut self, op: FBin, a: F, b: F) -> F {
        macro_rules! go {
            ($a:expr, $b:expr) => {
                match op {
                    FBin::Add => $a + $b,
                    FBin::Sub => $a - $b,
                    FBin::Mul => $a * $b,
                    FBin::Div => $a / $b,
                    // Rust's min/max ignore a NaN operand, as PTX's do.
                    FBin::Min => $a.min($b),
                    FBin::Max => $a.max($b),
                    FBin::CopySign => $a.copysign($b),
                }
            };
        }
        match (a, b) {
            (F::S(a), F::S(b)) => F::S(go!(a, b)),
            (F::D(a), F::D(b)) => F::D(go!(a, b)),
            _ => panic!("mixed widths"),
        }
    }
    fn fma(&mut self, a: F, b: F, c: F) -> F {
        match (a, b, c) {
            (F::S(a), F::S(b), F::S(c)) => F::S(a.mul_add(b, c)),
            (F::D(a), F::D(b), F::D(c)) => F::D(a.mul_add(b, c)),
            _ => panic!("mixed widths"),
        }
    }
    fn f_cmp(&mut self, c: Cmp, a: F, b: F) -> bool {
        match (a, b) {
            (F::S(a), F::S(b)) => cmp(c, a, b),
            (F::D(a), F::D(b)) => cmp(c, a, b),
            _ => panic!("mixed widths"),
        }
    }
    fn is_nan(&mut self, a: F) -> bool {
        match a {
            F::S(a) => a.is_nan(),
            F::D(a) => a.is_nan(),
        }
    }
    fn f_sqrt(&mut self, a: F) -> F {
        match a {
            F::S(a) => F::S(a.sqrt()),
            F::D(a) => F::D(a.sqrt()),
        }
    }
    fn f_round(&mut self, a: F) -> F {
        match a {
            F::S(a) => F::S(a.round_ties_even()),
            F::D(a) => F::D(a.round_ties_even()),
        }
    }
    fn f_to_i(&mut self, a: F) -> I {
        // `cvt.rni.s*`: ties to even, saturating, NaN to 0 (Rust's `as` saturates the same).
        match a {
            F::S(a) => I::S(a.round_ties_even() as i32 as u32),
            F::D(a) => I::D(a.round_ties_even() as i64 as u64),
        }
    }
    fn i_to_f(&mut self, a: I) -> F {
        match a {
            I::S(v) => F::S(v as i32 as f32),
            I::D(v) => F::D(v as i64 as f64),
        }
    }
    fn to_bits(&mut self, a: F) -> I {
        match a {
            F::S(a) => I::S(a.to_bits()),
            F::D(a) => I::D(a.to_bits()),
        }
    }
    fn f_of_bits(&mut self, a: I) -> F {
        match a {
            I::S(v) => F::S(f32::from_bits(v)),
            I::D(v) => F::D(f64::from_bits(v)),
        }
    }
    fn i_bin(&mut self, op: IBin, a: I, b: I) -> I {
        assert_eq!(a.width(), b.width(), "mixed widths");
        let (x, y) = (a.raw(), b.raw());
        let r = match op {
            IBin::Add => x.wrapping_add(y),
            IBin::Sub => x.wrapping_sub(y),
            IBin::Mul => x.wrapping_mul(y),
            IBin::And => x & y,
            IBin::Or => x | y,
        };
        I::of(a.width(), r)
    }
    fn shift(&mut self, op: Shift, a: I, n: I) -> I {
        let I::S(n) = n else {
            panic!("a shift count is 32-bit")
        };
        let bits = a.width().bits();
        // PTX clamps the count to the width: everything shifted out.
        let r = if n >= bits {
            0
        } else {
            match op {
                Shift::Shl => a.raw() << n,
                Shift::Shr => a.raw() >> n,
            }
        };
        I::of(a.width(), r)
    }
    fn clz(&mut self, a: I) -> I {
        I::S(match a {
            I::S(v) => v.leading_zeros(),
            I::D(v) => v.leading_zeros(),
        })
    }
    fn resize(&mut self, a: I, w: Width) -> I {
        match (a, w) {
            (I::D(v), Width::W32) => I::S(v as u32),
            (I::S(v), Width::W64) => I::D(v as i32 as i64 as u64),
            _ => a,
        }
    }
    fn i_cmp(&mut self, c: Cmp, signed: bool, a: I, b: I) -> bool {
        assert_eq!(a.width(), b.width(), "mixed widths");
        if signed {
            cmp(c, a.signed(), b.signed())
        } else {
            cmp(c, a.raw(), b.raw())
        }
    }
    fn p_or(&mut self, a: bool, b: bool) -> bool {
        a || b
    }
    fn p_and(&mut self, a: bool, b: bool) -> bool {
        a && b
    }
    fn p_not(&mut self, a: bool) -> bool {
        !a
    }
    fn sel_f(&mut self, p: bool, a: F, b: F) -> F {
        if p { a } else { b }
    }
    fn sel_i(&mut self, p: bool, a: I, b: I) -> I {
        if p { a } else { b }
    }
    fn when(&mut self, p: bool, init: &[F], body: FloatBlock<'_, Self>) -> Vec<F> {
        if p { body(self, init) } else { init.to_vec() }
    }
    fn repeat_while(
        &mut self,
        init: &[I],
        cond: LoopCond<'_, Self>,
        body: LoopBody<'_, Self>,
    ) -> Vec<I> {
        let mut state = init.to_vec();
        while cond(self, &state) {
            state = body(self, &state);
        }
        state
    }
    fn call(&mut self, routine: Routine, args: &[F]) -> Vec<F> {
        let (w, arity, results) = routine.signature();
        assert_eq!(args.len(), arity, "{routine:?} takes {arity} arguments");
        let param = |v: F| match (v, w) {
            (F::S(v), Width::W32) => F::S(f32::from_bits(v.to_bits())),
            (F::D(v), Width::W64) => F::D(f64::from_bits(v.to_bits())),
            _ => panic!("{routine:?}: an argument or result of another width"),
        };
        let args: Vec<F> = args.iter().map(|&a| param(a)).collect();
        let mut frame = Host::default();
        let out = routine.build(&mut frame, &args);
        assert_eq!(out.len(), results, "{routine:?} gives {results} results");
        self.calls.push(routine);
        self.calls.extend(frame.calls);
        out.into_iter().map(param).collect()
    }
}

fn run32(r: Routine, args: &[f32]) -> f32 {
    let args: Vec<F> = args.iter().map(|&a| F::S(a)).collect();
    match r.build(&mut Host::default(), &args)[..] {
        [F::S(v)] => v,
        _ => panic!("not one float32 result"),
    }
}

/// The result of float64 routine `r` and the routines it called.
fn run64_calls(r: Routine, args: &[f64]) -> (f64, Vec<Routine>) {
    let args: Vec<F> = args.iter().map(|&a| F::D(a)).collect();
    let mut host = Host::default();
    match r.build(&mut host, &args)[..] {
        [F::D(v)] => (v, host.calls),
        _ => panic!("not one float64 result"),
    }
}

fn run64(r: Routine, args: &[f64]) -> f64 {
    run64_calls(r, args).0
}

/// A deterministic generator (splitmix64): the inputs are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Edge values of a format: zeros, the smallest and largest subnormals and normals, one and
/// its neighbours, infinities and NaN, both signs.
fn edges64() -> Vec<f64> {
    let pos = [
        0.0,
        f64::from_bits(1),
        f64::from_bits(2),
        f64::from_bits(0x000F_FFFF_FFFF_FFFF),
        f64::MIN_POSITIVE,
        f64::from_bits(0x0010_0000_0000_0001),
        0.5,
        1.0,
        f64::from_bits(1.0f64.to_bits() - 1),
        f64::from_bits(1.0f64.to_bits() + 1),
        1.5,
        2.0,
        3.0,
        0.1,
        1e-300,
        1e300,
        f64::MAX,
        f64::INFINITY,
        f64::NAN,
    ];
    pos.iter().flat_map(|&v| [v, -v]).collect()
}

fn edges32() -> Vec<f32> {
    let pos = [
        0.0,
        f32::from_bits(1),
        f32::from_bits(2),
        f32::from_bits(0x007F_FFFF),
        f32::MIN_POSITIVE,
        f32::from_bits(0x0080_0001),
        0.5,
        1.0,
        f32::from_bits(1.0f32.to_bits() - 1),
        f32::from_bits(1.0f32.to_bits() + 1),
        1.5,
        2.0,
        3.0,
        0.1,
        1e-30,
        1e30,
        f32::MAX,
        f32::INFINITY,
        f32::NAN,
    ];
    pos.iter().flat_map(|&v| [v, -v]).collect()
}

/// A random float64 with exponent within `spread` binades of 2^`center` (the full range
/// when `spread` is large), a random significand and sign; now and then a subnormal.
fn random64(rng: &mut Rng, center: i64, spread: u64) -> f64 {
    let bits = rng.next();
    if bits.is_multiple_of(64) {
        // A subnormal: exponent field 0.
        return f64::from_bits(bits & 0x800F_FFFF_FFFF_FFFF);
    }
    let e = (center + 1023 + rng.below(2 * spread + 1) as i64 - spread as i64).clamp(1, 2046);
    f64::from_bits((bits & 0x800F_FFFF_FFFF_FFFF) | (e as u64) << 52)
}

fn random32(rng: &mut Rng, center: i32, spread: u32) -> f32 {
    let bits = rng.next() as u32;
    if bits.is_multiple_of(64) {
        return f32::from_bits(bits & 0x807F_FFFF);
    }
    let e =
        (center + 127 + rng.below(u64::from(2 * spread + 1)) as i32 - spread as i32).clamp(1, 254);
    f32::from_bits((bits & 0x807F_FFFF) | (e as u32) << 23)
}

fn same64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn same32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn fmod_f64_is_exact() {
    let r = Routine::Fmod(Width::W64);
    let mut checked = 0;
    let mut check = |x: f64, y: f64| {
        let (got, want) = (run64(r, &[x, y]), x % y);
        assert!(
            same64(got, want),
            "fmod({x:e}, {y:e}) = {got:e}, want {want:e}"
        );
        checked += 1;
    };
    let edges = edges64();
    for &x in &edges {
        for &y in &edges {
            check(x, y);
        }
    }
    let mut rng = Rng(1);
    // Exact multiples and their neighbours: the remainder is 0, tiny, or y less a tiny one.
    for _ in 0..20_000 {
        let y = random64(&mut rng, 0, 40);
        let n = (rng.below(1 << 20) + 1) as f64;
        let x = y * n;
        check(x, y);
        check(f64::from_bits(x.to_bits() + 1), y);
        check(f64::from_bits(x.to_bits() - 1), y);
        check(-x, y);
    }
    // Exponent differences up to 60 (most kernels), then over the whole range (up to 2098
    // steps: fewer of them).
    for _ in 0..150_000 {
        let x = random64(&mut rng, 0, 30);
        let y = random64(&mut rng, 0, 30);
        check(x, y);
    }
    for _ in 0..30_000 {
        let x = random64(&mut rng, 0, 1100);
        let y = random64(&mut rng, 0, 1100);
        check(x, y);
    }
    // Divisors whose significands make each step's float64 quotient estimate land next to an
    // integer (all ones, one past a power of two, a power of two), at every exponent
    // difference, with random and extreme dividend significands.
    for y_mant in [
        (1u64 << 53) - 1,
        (1 << 52) + 1,
        1 << 52,
        (1 << 52) + (1 << 51) + 1,
    ] {
        let y = f64::from_bits((1023 << 52) | (y_mant & ((1 << 52) - 1)));
        for diff in 0..=1100u64 {
            for x_mant in [rng.next(), u64::MAX, 0, 1] {
                let x = f64::from_bits(((1023 + diff) << 52) | (x_mant & ((1 << 52) - 1)));
                check(x, y);
                check(x, y * 2f64.powi(-1000));
            }
        }
    }
    // Subnormal divisors and results.
    for _ in 0..20_000 {
        let x = random64(&mut rng, -1000, 30);
        let y = f64::from_bits(rng.below(1 << 52) + 1);
        check(x, y);
        check(y, x);
    }
    assert!(checked > 270_000);
}

#[test]
fn fmod_f32_is_exact() {
    let r = Routine::Fmod(Width::W32);
    let check = |x: f32, y: f32| {
        let (got, want) = (run32(r, &[x, y]), x % y);
        assert!(
            same32(got, want),
            "fmod({x:e}, {y:e}) = {got:e}, want {want:e}"
        );
    };
    let edges = edges32();
    for &x in &edges {
        for &y in &edges {
            check(x, y);
        }
    }
    let mut rng = Rng(2);
    for _ in 0..20_000 {
        let y = random32(&mut rng, 0, 20);
        let n = (rng.below(1 << 12) + 1) as f32;
        let x = y * n;
        check(x, y);
        check(f32::from_bits(x.to_bits() + 1), y);
        check(f32::from_bits(x.to_bits() - 1), y);
    }
    for _ in 0..200_000 {
        let x = random32(&mut rng, 0, 20);
        let y = random32(&mut rng, 0, 20);
        check(x, y);
    }
    for _ in 0..20_000 {
        let x = random32(&mut rng, 0, 140);
        let y = random32(&mut rng, 0, 140);
        check(x, y);
    }
    // As for float64: divisors next to a power of two, every exponent difference.
    for y_mant in [
        (1u32 << 24) - 1,
        (1 << 23) + 1,
        1 << 23,
        (1 << 23) + (1 << 22) + 1,
    ] {
        let y = f32::from_bits((1 << 23) | (y_mant & ((1 << 23) - 1)));
        for diff in 0..=252u32 {
            for x_mant in [rng.next() as u32, u32::MAX, 0, 1] {
                let x = f32::from_bits(((1 + diff) << 23) | (x_mant & ((1 << 23) - 1)));
                check(x, y);
                check(
                    x,
                    f32::from_bits(y_mant & ((1 << 23) - 1)).max(f32::from_bits(1)),
                );
            }
        }
    }
    for _ in 0..20_000 {
        let x = random32(&mut rng, -120, 10);
        let y = f32::from_bits(rng.below(1 << 23) as u32 + 1);
        check(x, y);
        check(y, x);
    }
}

/// Distance in representable float64 values (0 for two NaNs, `u64::MAX` for a NaN and a number).
fn ulps64(a: f64, b: f64) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    let key = |v: f64| {
        let bits = v.to_bits() as i64;
        if bits < 0 { -(bits & i64::MAX) } else { bits }
    };
    key(a).abs_diff(key(b))
}

/// A float64 whose magnitude is log-uniform in [2^lo, 2^hi], with a random sign when `signed`.
fn log_uniform(rng: &mut Rng, lo: i64, hi: i64, signed: bool) -> f64 {
    let e = lo + rng.below((hi - lo) as u64) as i64;
    let m = 1.0 + (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
    let v = m * 2f64.powi(e as i32);
    if signed && rng.next() & 1 == 1 { -v } else { v }
}

fn uniform(rng: &mut Rng, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * ((rng.next() >> 11) as f64 / (1u64 << 53) as f64)
}

/// Run float64 `m`'s routine on the edge values and `inputs`, against Rust's std (what the
/// interpreter computes, [`crate::scalar::math64`]); assert at most `bound` ulps apart
/// (special values exactly) and return the largest distance seen.
fn check_math64(m: MathFn, inputs: impl Iterator<Item = f64>, bound: u64) -> u64 {
    let routine = Routine::for_float64(m).expect("a float64 routine");
    let mut worst = (0, 0.0);
    for x in edges64().into_iter().chain(inputs) {
        let got = run64(routine, &[x]);
        let want = crate::scalar::math64(m, x, 0.0, 0.0);
        let d = ulps64(got, want);
        let special = !want.is_finite() || want == 0.0 || !x.is_finite();
        if special {
            assert!(
                same64(got, want),
                "{}({x:e}) = {got:e}, want {want:e} (exactly)",
                m.c_name()
            );
        }
        assert!(
            d <= bound,
            "{}({x:e}) = {got:e}, want {want:e}: {d} ulps",
            m.c_name()
        );
        if d > worst.0 {
            worst = (d, x);
        }
    }
    eprintln!(
        "{}: at most {} ulps (at {:e})",
        m.c_name(),
        worst.0,
        worst.1
    );
    worst.0
}

/// 2^k, subnormal ones included (`powi` loses them).
fn pow2_exact(k: i32) -> f64 {
    if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(1 << (k + 1074))
    }
}

const SAMPLES: usize = 100_000;

#[test]
fn exp_f64_within_2_ulps() {
    let mut rng = Rng(10);
    let wide = (0..SAMPLES).map(|_| uniform(&mut rng, -750.0, 712.0));
    check_math64(MathFn::Exp, wide, 2);
    let mut rng = Rng(11);
    let small = (0..SAMPLES).map(|_| log_uniform(&mut rng, -80, 3, true));
    check_math64(MathFn::Exp, small, 2);
    // Around overflow and into the subnormal results.
    let mut rng = Rng(12);
    let ends = (0..SAMPLES / 4).map(|k| {
        if k % 2 == 0 {
            uniform(&mut rng, 709.0, 710.0)
        } else {
            uniform(&mut rng, -746.0, -707.0)
        }
    });
    check_math64(MathFn::Exp, ends, 2);
}

#[test]
fn exp2_f64_within_2_ulps() {
    let mut rng = Rng(13);
    let wide = (0..SAMPLES).map(|_| uniform(&mut rng, -1080.0, 1025.0));
    check_math64(MathFn::Exp2, wide, 2);
    let mut rng = Rng(14);
    let small = (0..SAMPLES).map(|_| log_uniform(&mut rng, -80, 3, true));
    check_math64(MathFn::Exp2, small, 2);
    for k in -1074..=1023 {
        let want = pow2_exact(k);
        assert_eq!(run64(Routine::Math64(MathFn::Exp2), &[f64::from(k)]), want);
    }
}

#[test]
fn expm1_f64_within_2_ulps() {
    let mut rng = Rng(15);
    let wide = (0..SAMPLES).map(|_| uniform(&mut rng, -50.0, 712.0));
    check_math64(MathFn::Expm1, wide, 2);
    let mut rng = Rng(16);
    let small = (0..SAMPLES).map(|_| log_uniform(&mut rng, -1074, 3, true));
    check_math64(MathFn::Expm1, small, 2);
}

#[test]
fn log_family_f64_within_2_ulps() {
    for m in [MathFn::Log, MathFn::Log2, MathFn::Log10] {
        let mut rng = Rng(17);
        let wide = (0..SAMPLES).map(|_| {
            let bits = rng.next() >> 1;
            f64::from_bits(bits % f64::INFINITY.to_bits())
        });
        check_math64(m, wide, 2);
        let mut rng = Rng(18);
        let near_one = (0..SAMPLES).map(|_| 1.0 + log_uniform(&mut rng, -60, -1, true));
        check_math64(m, near_one, 2);
    }
    for k in -1074..=1023 {
        let got = run64(Routine::Math64(MathFn::Log2), &[pow2_exact(k)]);
        assert_eq!(got, f64::from(k));
    }
}

#[test]
fn log1p_f64_within_2_ulps() {
    let mut rng = Rng(19);
    let small = (0..SAMPLES).map(|_| log_uniform(&mut rng, -1074, 0, true));
    check_math64(MathFn::Log1p, small, 2);
    let mut rng = Rng(20);
    let wide = (0..SAMPLES).map(|_| log_uniform(&mut rng, -10, 1023, false));
    check_math64(MathFn::Log1p, wide, 2);
    let mut rng = Rng(21);
    let near_minus_one = (0..SAMPLES / 4).map(|_| -1.0 + log_uniform(&mut rng, -53, -1, false));
    check_math64(MathFn::Log1p, near_minus_one, 2);
}

#[test]
fn hyperbolic_f64_within_3_ulps() {
    for m in [MathFn::Sinh, MathFn::Cosh, MathFn::Tanh] {
        let mut rng = Rng(22);
        let wide = (0..SAMPLES).map(|_| uniform(&mut rng, -712.0, 712.0));
        check_math64(m, wide, 3);
        let mut rng = Rng(23);
        let small = (0..SAMPLES).map(|_| log_uniform(&mut rng, -1074, 5, true));
        check_math64(m, small, 3);
    }
}

#[test]
fn sin_cos_tan_f64_within_2_ulps() {
    for m in [MathFn::Sin, MathFn::Cos, MathFn::Tan] {
        let mut rng = Rng(24);
        let moderate = (0..SAMPLES).map(|_| uniform(&mut rng, -20.0, 20.0));
        check_math64(m, moderate, 2);
        let mut rng = Rng(25);
        let wide = (0..SAMPLES).map(|_| log_uniform(&mut rng, -40, 89, true));
        check_math64(m, wide, 2);
        // Next to multiples of pi/2, where the reduced argument is small.
        let mut rng = Rng(26);
        let near = (0..SAMPLES / 4).map(|_| {
            let k = rng.below(1 << 20) as f64;
            let x = k * std::f64::consts::FRAC_PI_2;
            let off = rng.below(64) as i64 - 32;
            f64::from_bits((x.to_bits() as i64 + off) as u64)
        });
        check_math64(m, near, 2);
    }
}

#[test]
fn sin_cos_tan_f64_far_arguments_within_2_ulps() {
    // Past TRIG_LIMIT the reduction is x 2/pi modulo 4 from the pieces of 2/pi: every binade
    // up to the largest float64, and both sides of the limit.
    for m in [MathFn::Sin, MathFn::Cos, MathFn::Tan] {
        let mut rng = Rng(32);
        let far = (0..SAMPLES / 5).map(|_| log_uniform(&mut rng, 85, 1024, true));
        check_math64(m, far, 2);
        let around =
            (-2000..2000).map(|d| f64::from_bits((TRIG_LIMIT.to_bits() as i64 + d) as u64));
        check_math64(m, around, 2);
        check_math64(
            m,
            [f64::MAX, -f64::MAX, 1e300, 1e22, 2f64.powi(1000)].into_iter(),
            2,
        );
    }
}

/// sin, cos and tan reach the far reduction through a call of its routine (one `.func` in
/// PTX), exactly when |x| is finite and at least [`TRIG_LIMIT`]; no other routine calls.
#[test]
fn the_far_reduction_is_called_past_the_limit_only() {
    let mut rng = Rng(33);
    let mut inputs: Vec<f64> = (0..2000)
        .map(|_| log_uniform(&mut rng, 80, 1024, true))
        .collect();
    inputs.extend((-50..50).map(|d| f64::from_bits((TRIG_LIMIT.to_bits() as i64 + d) as u64)));
    inputs.extend(edges64());
    for m in [MathFn::Sin, MathFn::Cos, MathFn::Tan] {
        let routine = Routine::Math64(m);
        for &x in &inputs {
            let (_, calls) = run64_calls(routine, &[x]);
            let far = x.abs() >= TRIG_LIMIT && x.is_finite();
            let expected: &[Routine] = if far { &[Routine::TrigReduceFar] } else { &[] };
            assert_eq!(calls, expected, "{m:?} {x:e}");
        }
    }
    for r in [
        Routine::Fmod(Width::W32),
        Routine::Fmod(Width::W64),
        Routine::Math64(MathFn::Pow),
        Routine::Math64(MathFn::Atan2),
    ] {
        let (w, arity, _) = r.signature();
        let args: Vec<F> = (0..arity)
            .map(|_| Host::default().f_const(w, 1.5))
            .collect();
        let mut host = Host::default();
        r.build(&mut host, &args);
        assert!(host.calls.is_empty(), "{r:?}");
    }
}

#[test]
fn arctangents_f64_within_2_ulps() {
    for m in [MathFn::Atan, MathFn::Asin, MathFn::Acos] {
        let mut rng = Rng(27);
        let unit = (0..SAMPLES).map(|_| uniform(&mut rng, -1.0, 1.0));
        check_math64(m, unit, 2);
        let mut rng = Rng(28);
        let wide = (0..SAMPLES).map(|_| log_uniform(&mut rng, -1074, 80, true));
        check_math64(m, wide, 2);
        // Next to ±1, where asin and acos are steep.
        let mut rng = Rng(29);
        let near = (0..SAMPLES / 4).map(|_| {
            let v = 1.0 - log_uniform(&mut rng, -53, -2, false);
            if rng.next() & 1 == 1 { -v } else { v }
        });
        check_math64(m, near, 2);
    }
}

#[test]
fn atan2_f64_within_2_ulps() {
    let routine = Routine::Math64(MathFn::Atan2);
    let mut worst = 0;
    let mut check = |y: f64, x: f64| {
        let (got, want) = (run64(routine, &[y, x]), y.atan2(x));
        let d = ulps64(got, want);
        if !want.is_finite() || want == 0.0 || !x.is_finite() || !y.is_finite() || x == 0.0 {
            assert!(
                same64(got, want),
                "atan2({y:e}, {x:e}) = {got:e}, want {want:e}"
            );
        }
        assert!(
            d <= 2,
            "atan2({y:e}, {x:e}) = {got:e}, want {want:e}: {d} ulps"
        );
        worst = worst.max(d);
    };
    let edges = edges64();
    for &y in &edges {
        for &x in &edges {
            check(y, x);
        }
    }
    let mut rng = Rng(30);
    for _ in 0..SAMPLES {
        let y = uniform(&mut rng, -10.0, 10.0);
        let x = uniform(&mut rng, -10.0, 10.0);
        check(y, x);
    }
    for _ in 0..SAMPLES {
        let y = log_uniform(&mut rng, -1074, 1023, true);
        let x = log_uniform(&mut rng, -1074, 1023, true);
        check(y, x);
    }
    eprintln!("atan2: at most {worst} ulps");
}

#[test]
fn pow_f64_within_2_ulps() {
    let routine = Routine::Math64(MathFn::Pow);
    let mut worst = (0, 0.0, 0.0);
    let mut check = |x: f64, y: f64| {
        let (got, want) = (run64(routine, &[x, y]), x.powf(y));
        let d = ulps64(got, want);
        if !want.is_finite() || want == 0.0 || !x.is_finite() || !y.is_finite() || x == 0.0 {
            assert!(
                same64(got, want),
                "pow({x:e}, {y:e}) = {got:e}, want {want:e}"
            );
        }
        assert!(
            d <= 2,
            "pow({x:e}, {y:e}) = {got:e}, want {want:e}: {d} ulps"
        );
        if d > worst.0 {
            worst = (d, x, y);
        }
    };
    let mut edges = edges64();
    edges.extend(
        [0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 1e-20, 1e20]
            .iter()
            .copied(),
    );
    for &x in &edges {
        for &y in &edges {
            check(x, y);
        }
    }
    let mut rng = Rng(31);
    for _ in 0..SAMPLES {
        let x = log_uniform(&mut rng, -30, 30, false);
        let y = uniform(&mut rng, -40.0, 40.0);
        check(x, y);
    }
    // Results near overflow and underflow, x near 1 with large y, integral y and negative x.
    for _ in 0..SAMPLES / 2 {
        let x = log_uniform(&mut rng, -1074, 1023, false);
        let target = uniform(&mut rng, -745.0, 709.7);
        let y = target / x.ln();
        check(x, y);
    }
    for _ in 0..SAMPLES / 4 {
        let x = 1.0 + log_uniform(&mut rng, -50, -4, true);
        let y = log_uniform(&mut rng, 0, 50, true);
        check(x, y);
    }
    for _ in 0..SAMPLES / 4 {
        let x = -log_uniform(&mut rng, -20, 20, false);
        let y = (rng.below(200) as f64) - 100.0;
        check(x, y);
    }
    eprintln!(
        "pow: at most {} ulps (at {:e}, {:e})",
        worst.0, worst.1, worst.2
    );
}

/// The unfused emulation GLSL's routines use for `fma` is correctly rounded: equal to the
/// host's fused `mul_add` bit for bit, on products of every scale, addends near them (the
/// cancellations) and far from them, and zeros of both signs.
#[test]
fn fma_by_parts_is_fused() {
    let mut rng = Rng(11);
    let r = Routine::FmaByParts;
    let mut checked = 0;
    for k in 0..400_000 {
        let a = random64(&mut rng, 0, 400);
        let b = random64(&mut rng, 0, 400);
        if !a.is_normal() || !b.is_normal() {
            continue;
        }
        let c = match k % 4 {
            // Near -a b: the product's low bits decide the result.
            0 => -(a * b) * (1.0 + random64(&mut rng, -30, 20)),
            1 => -(a * b),
            2 => random64(&mut rng, 0, 800),
            _ => (a * b) * random64(&mut rng, -60, 60),
        };
        let want = a.mul_add(b, c);
        let got = run64(r, &[a, b, c]);
        assert!(
            same64(got, want),
            "fma({a:e}, {b:e}, {c:e}): {got:e}, not {want:e}"
        );
        checked += 1;
    }
    for (a, b, c) in [
        (0.0, 1.5, -0.0),
        (-0.0, 1.5, -0.0),
        (0.0, -1.5, 0.0),
        (2.0, 3.0, -6.0),
    ] {
        let (got, want) = (run64(r, &[a, b, c]), f64::mul_add(a, b, c));
        assert!(
            same64(got, want),
            "fma({a}, {b}, {c}): {got:e}, not {want:e}"
        );
    }
    assert!(checked > 300_000);
}
