//! Hand-written IR kernels for the interpreter and cpu tests: the compiler's
//! `sarek_compiler::ir::build` (re-exported, some constructors under this module's older
//! names), host-value helpers and classic kernels.
#![allow(dead_code, unused_imports)]

use sarek_compiler::intrinsics::{Axis, Geometry};
pub use sarek_compiler::ir::build::{
    assign as set, expr_stmt as expr_st, geometry as geo, global_idx as gid, intrinsic as intr,
    lit_bool as boolc, lit_f32 as f32c, lit_f64 as f64c, lit_i32 as i32c, lit_i64 as i64c,
    thread_idx as tid, *,
};
use sarek_compiler::ir::*;
use sarek_compiler::types::{BinOp, Literal, MemSpace, Scalar};
use sarek_compiler::{FileId, Span};
use sarek_runtime::{ArgValue, Column, HostVector, LaunchConfig, cpu, interp};
use std::ops::{Deref, DerefMut};

/// A [`KernelBuilder`] whose `var` declares a mutable local (these tests assign most of
/// theirs), with short names for reads.
pub struct KB(KernelBuilder);

impl KB {
    pub fn new(name: &str) -> KB {
        KB(KernelBuilder::new(name))
    }
    pub fn var(&mut self, name: &str, ty: Ty) -> VarId {
        self.0.mut_var(name, ty)
    }
    pub fn v(&self, id: VarId) -> Expr {
        self.0.read(id)
    }
    pub fn idx(&self, base: VarId, i: Expr) -> Expr {
        self.0.index(base, i)
    }
    /// Here rather than through `DerefMut`, so that the arguments may read `self`.
    pub fn func(&mut self, name: &str, params: Vec<VarId>, ret: Ty, body: Block) -> FuncId {
        self.0.func(name, params, ret, body)
    }
    pub fn finish(self, body: Block) -> Kernel {
        self.0.finish(body)
    }
}

impl Deref for KB {
    type Target = KernelBuilder;
    fn deref(&self) -> &KernelBuilder {
        &self.0
    }
}

impl DerefMut for KB {
    fn deref_mut(&mut self) -> &mut KernelBuilder {
        &mut self.0
    }
}

/// Statement with a recognisable span: bytes `at..at+1` of file 0.
pub fn st_at(kind: StmtKind, at: usize) -> Stmt {
    Stmt {
        kind,
        span: Span::new(FileId(0), at, at + 1),
    }
}

/// A one-column vector argument.
pub fn vector_arg(column: Column) -> ArgValue {
    ArgValue::Vector(HostVector {
        len: column.len(),
        columns: vec![column],
    })
}
pub fn col(a: &ArgValue, c: usize) -> &Column {
    match a {
        ArgValue::Vector(v) => &v.columns[c],
        _ => panic!("not a vector"),
    }
}

/// `vec_T` builds a one-column vector argument, `out_T` reads one back.
macro_rules! column_helpers {
    ($($vec:ident, $out:ident, $variant:ident, $t:ty, $what:literal;)*) => {$(
        pub fn $vec(x: &[$t]) -> ArgValue {
            vector_arg(Column::$variant(x.to_vec()))
        }
        pub fn $out(a: &ArgValue) -> Vec<$t> {
            match col(a, 0) {
                Column::$variant(v) => v.clone(),
                c => panic!(concat!("not ", $what, ": {:?}"), c),
            }
        }
    )*};
}
column_helpers! {
    vec_i32, out_i32, I32, i32, "int32";
    vec_i64, out_i64, I64, i64, "int64";
    vec_f32, out_f32, F32, f32, "float32";
    vec_f64, out_f64, F64, f64, "float64";
}

pub fn s_i32(x: i32) -> ArgValue {
    ArgValue::Scalar(Literal::I32(x))
}
pub fn s_f32(x: f32) -> ArgValue {
    ArgValue::Scalar(Literal::F32(x))
}

/// A deterministic pseudo-random sequence (xorshift) for test inputs.
pub fn rand_seq(seed: u64, n: usize) -> Vec<u64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        })
        .collect()
}

/// A launch of `grid` blocks of `block` threads.
pub fn launch(grid: [u32; 3], block: [u32; 3]) -> LaunchConfig {
    LaunchConfig { grid, block }
}

/// `n` float32 test inputs in [-1, 1) from [`rand_seq`].
pub fn rand_f32(seed: u64, n: usize) -> Vec<f32> {
    rand_seq(seed, n)
        .iter()
        .map(|v| (*v % 1000) as f32 / 500.0 - 1.0)
        .collect()
}

/// Run on the interpreter and on cpu; they must agree exactly (callers use no float atomics).
pub fn both(k: &Kernel, cfg: LaunchConfig, args: Vec<ArgValue>) -> Vec<ArgValue> {
    let mut a = args.clone();
    let mut b = args;
    interp::run(k, cfg, &mut a).unwrap_or_else(|e| panic!("interp: {e}"));
    cpu::run(k, cfg, &mut b).unwrap_or_else(|e| panic!("cpu: {e}"));
    assert_eq!(a, b, "interp and cpu disagree on `{}`", k.name);
    a
}

/// Classic kernels used by several test files, and checks of any kernel with their
/// parameters (hand-built here or compiled from source) against Rust references.
pub mod kernels {
    use super::*;

    /// A [`reduce`]-shaped kernel `(x, out, n)` in blocks of 256 on both backends: per-block sums.
    pub fn check_block_sums(k: &Kernel, x: &[i32]) {
        let blocks = x.len().div_ceil(256);
        let cfg = launch([blocks as u32, 1, 1], [256, 1, 1]);
        let args = vec![vec_i32(x), vec_i32(&vec![0; blocks]), s_i32(x.len() as i32)];
        let out = both(k, cfg, args);
        let sums: Vec<i32> = x.chunks(256).map(|c| c.iter().sum()).collect();
        assert_eq!(out_i32(&out[1]), sums);
    }

    /// A [`mandelbrot`]-shaped kernel `(out, width, height, max_iter)` in 16x8 blocks on both
    /// backends against [`mandelbrot_ref`] (`w`, `h` multiples of the block).
    pub fn check_mandelbrot(k: &Kernel, w: i32, h: i32, max_iter: i32) {
        let cfg = launch([w as u32 / 16, h as u32 / 8, 1], [16, 8, 1]);
        let out = vec_i32(&vec![0; (w * h) as usize]);
        let out = both(k, cfg, vec![out, s_i32(w), s_i32(h), s_i32(max_iter)]);
        assert_eq!(out_i32(&out[0]), mandelbrot_ref(w, h, max_iter));
    }

    /// A [`matmul`]-shaped kernel `(a, b, c, n)` with 16x16 tiles on 48x48 inputs on both
    /// backends against [`matmul_ref`].
    pub fn check_matmul(k: &Kernel) {
        let n = 48usize;
        let a = rand_f32(3, n * n);
        let b = rand_f32(4, n * n);
        let cfg = launch([3, 3, 1], [16, 16, 1]);
        let c = vec_f32(&vec![0.0; n * n]);
        let out = both(k, cfg, vec![vec_f32(&a), vec_f32(&b), c, s_i32(n as i32)]);
        assert_eq!(out_f32(&out[2]), matmul_ref(&a, &b, n));
    }

    /// `c[i] = a[i] + b[i]` when `i < n`.
    pub fn vadd() -> Kernel {
        let mut kb = KB::new("vadd");
        let a = kb.vector("a", Ty::I32);
        let b = kb.vector("b", Ty::I32);
        let c = kb.vector("c", Ty::I32);
        let n = kb.param("n", Ty::I32);
        let i = kb.var("i", Ty::I32);
        let body = vec![
            let_(i, gid()),
            if_(
                lt(kb.v(i), kb.v(n)),
                vec![store(
                    c,
                    kb.v(i),
                    add(kb.idx(a, kb.v(i)), kb.idx(b, kb.v(i))),
                )],
                vec![],
            ),
        ];
        kb.finish(body)
    }

    /// `y[i] = a * x[i] + y[i]` in float32.
    pub fn saxpy() -> Kernel {
        let mut kb = KB::new("saxpy");
        let x = kb.vector("x", Ty::F32);
        let y = kb.vector("y", Ty::F32);
        let a = kb.param("a", Ty::F32);
        let n = kb.param("n", Ty::I32);
        let i = kb.var("i", Ty::I32);
        let body = vec![
            let_(i, gid()),
            if_(
                lt(kb.v(i), kb.v(n)),
                vec![store(
                    y,
                    kb.v(i),
                    add(mul(kb.v(a), kb.idx(x, kb.v(i))), kb.idx(y, kb.v(i))),
                )],
                vec![],
            ),
        ];
        kb.finish(body)
    }

    /// Per-block tree reduction of int32 in shared memory: `out[block] = sum of the block's
    /// slice of `x` (zeros past `n`).
    pub fn reduce(block: u32) -> Kernel {
        let mut kb = KB::new("reduce");
        let x = kb.vector("x", Ty::I32);
        let out = kb.vector("out", Ty::I32);
        let n = kb.param("n", Ty::I32);
        let tile = kb.array("tile", Ty::I32, MemSpace::Shared, block);
        let t = kb.var("t", Ty::I32);
        let i = kb.var("i", Ty::I32);
        let s = kb.var("s", Ty::I32);
        let body = vec![
            st(StmtKind::Array { var: tile }),
            let_(t, tid()),
            let_(i, gid()),
            if_(
                lt(kb.v(i), kb.v(n)),
                vec![store(tile, kb.v(t), kb.idx(x, kb.v(i)))],
                vec![store(tile, kb.v(t), i32c(0))],
            ),
            barrier(),
            let_(s, i32c(block as i32 / 2)),
            while_(
                bin(BinOp::Gt, kb.v(s), i32c(0)),
                vec![
                    if_(
                        lt(kb.v(t), kb.v(s)),
                        vec![store(
                            tile,
                            kb.v(t),
                            add(kb.idx(tile, kb.v(t)), kb.idx(tile, add(kb.v(t), kb.v(s)))),
                        )],
                        vec![],
                    ),
                    barrier(),
                    set(s, bin(BinOp::Div, kb.v(s), i32c(2))),
                ],
            ),
            if_(
                bin(BinOp::Eq, kb.v(t), i32c(0)),
                vec![store(
                    out,
                    geo(Geometry::BlockIdx(Axis::X)),
                    kb.idx(tile, i32c(0)),
                )],
                vec![],
            ),
        ];
        kb.finish(body)
    }

    /// Mandelbrot iteration counts over a `w` x `h` image on a 2-D grid:
    /// `out[y*w+x]` = iterations before |z| > 2 (at most `max_iter`).
    pub fn mandelbrot() -> Kernel {
        let mut kb = KB::new("mandelbrot");
        let out = kb.vector("out", Ty::I32);
        let w = kb.param("width", Ty::I32);
        let h = kb.param("height", Ty::I32);
        let max_iter = kb.param("max_iter", Ty::I32);
        let px = kb.var("px", Ty::I32);
        let py = kb.var("py", Ty::I32);
        let cx = kb.var("cx", Ty::F32);
        let cy = kb.var("cy", Ty::F32);
        let zx = kb.var("zx", Ty::F32);
        let zy = kb.var("zy", Ty::F32);
        let it = kb.var("it", Ty::I32);
        let t = kb.var("t", Ty::F32);
        let f = |e: Expr| convert(e, Scalar::F32);
        let body = vec![
            let_(px, geo(Geometry::GlobalIdx(Axis::X))),
            let_(py, geo(Geometry::GlobalIdx(Axis::Y))),
            if_(
                bin(BinOp::And, lt(kb.v(px), kb.v(w)), lt(kb.v(py), kb.v(h))),
                vec![
                    // cx = -2.5 + 3.5 * px / w ; cy = -1.25 + 2.5 * py / h
                    let_(
                        cx,
                        add(f32c(-2.5), div(mul(f32c(3.5), f(kb.v(px))), f(kb.v(w)))),
                    ),
                    let_(
                        cy,
                        add(f32c(-1.25), div(mul(f32c(2.5), f(kb.v(py))), f(kb.v(h)))),
                    ),
                    let_(zx, f32c(0.0)),
                    let_(zy, f32c(0.0)),
                    let_(it, i32c(0)),
                    while_(
                        bin(
                            BinOp::And,
                            lt(kb.v(it), kb.v(max_iter)),
                            bin(
                                BinOp::Le,
                                add(mul(kb.v(zx), kb.v(zx)), mul(kb.v(zy), kb.v(zy))),
                                f32c(4.0),
                            ),
                        ),
                        vec![
                            let_(
                                t,
                                add(
                                    sub(mul(kb.v(zx), kb.v(zx)), mul(kb.v(zy), kb.v(zy))),
                                    kb.v(cx),
                                ),
                            ),
                            set(zy, add(mul(mul(f32c(2.0), kb.v(zx)), kb.v(zy)), kb.v(cy))),
                            set(zx, kb.v(t)),
                            set(it, add(kb.v(it), i32c(1))),
                        ],
                    ),
                    store(out, add(mul(kb.v(py), kb.v(w)), kb.v(px)), kb.v(it)),
                ],
                vec![],
            ),
        ];
        kb.finish(body)
    }

    /// Rust reference of [`mandelbrot`], operation for operation in f32.
    pub fn mandelbrot_ref(w: i32, h: i32, max_iter: i32) -> Vec<i32> {
        let mut out = vec![0; (w * h) as usize];
        for py in 0..h {
            for px in 0..w {
                let cx = -2.5f32 + 3.5f32 * px as f32 / w as f32;
                let cy = -1.25f32 + 2.5f32 * py as f32 / h as f32;
                let (mut zx, mut zy, mut it) = (0f32, 0f32, 0);
                while it < max_iter && zx * zx + zy * zy <= 4.0 {
                    let t = zx * zx - zy * zy + cx;
                    zy = 2.0 * zx * zy + cy;
                    zx = t;
                    it += 1;
                }
                out[(py * w + px) as usize] = it;
            }
        }
        out
    }

    /// Tiled float32 matmul `c = a * b` of `n` x `n` matrices (n a multiple of `tile`), 2-D
    /// blocks of `tile` x `tile` threads with two shared tiles.
    pub fn matmul(tile: u32) -> Kernel {
        let mut kb = KB::new("matmul");
        let a = kb.vector("a", Ty::F32);
        let b = kb.vector("b", Ty::F32);
        let c = kb.vector("c", Ty::F32);
        let n = kb.param("n", Ty::I32);
        let ta = kb.array("ta", Ty::F32, MemSpace::Shared, tile * tile);
        let tb = kb.array("tb", Ty::F32, MemSpace::Shared, tile * tile);
        let tx = kb.var("tx", Ty::I32);
        let ty = kb.var("ty", Ty::I32);
        let row = kb.var("row", Ty::I32);
        let colv = kb.var("col", Ty::I32);
        let acc = kb.var("acc", Ty::F32);
        let m = kb.var("m", Ty::I32);
        let k = kb.var("k", Ty::I32);
        let tl = i32c(tile as i32);
        let body = vec![
            st(StmtKind::Array { var: ta }),
            st(StmtKind::Array { var: tb }),
            let_(tx, tid()),
            let_(ty, geo(Geometry::ThreadIdx(Axis::Y))),
            let_(row, geo(Geometry::GlobalIdx(Axis::Y))),
            let_(colv, geo(Geometry::GlobalIdx(Axis::X))),
            let_(acc, f32c(0.0)),
            for_(
                m,
                i32c(0),
                sub(div(kb.v(n), tl.clone()), i32c(1)),
                vec![
                    store(
                        ta,
                        add(mul(kb.v(ty), tl.clone()), kb.v(tx)),
                        kb.idx(
                            a,
                            add(
                                mul(kb.v(row), kb.v(n)),
                                add(mul(kb.v(m), tl.clone()), kb.v(tx)),
                            ),
                        ),
                    ),
                    store(
                        tb,
                        add(mul(kb.v(ty), tl.clone()), kb.v(tx)),
                        kb.idx(
                            b,
                            add(
                                mul(add(mul(kb.v(m), tl.clone()), kb.v(ty)), kb.v(n)),
                                kb.v(colv),
                            ),
                        ),
                    ),
                    barrier(),
                    for_(
                        k,
                        i32c(0),
                        sub(tl.clone(), i32c(1)),
                        vec![set(
                            acc,
                            add(
                                kb.v(acc),
                                mul(
                                    kb.idx(ta, add(mul(kb.v(ty), tl.clone()), kb.v(k))),
                                    kb.idx(tb, add(mul(kb.v(k), tl.clone()), kb.v(tx))),
                                ),
                            ),
                        )],
                    ),
                    barrier(),
                ],
            ),
            store(c, add(mul(kb.v(row), kb.v(n)), kb.v(colv)), kb.v(acc)),
        ];
        kb.finish(body)
    }

    /// Rust reference of [`matmul`]: the same summation order (k ascending), in f32.
    pub fn matmul_ref(a: &[f32], b: &[f32], n: usize) -> Vec<f32> {
        let mut c = vec![0f32; n * n];
        for r in 0..n {
            for col in 0..n {
                let mut acc = 0f32;
                for k in 0..n {
                    acc += a[r * n + k] * b[k * n + col];
                }
                c[r * n + col] = acc;
            }
        }
        c
    }
}
