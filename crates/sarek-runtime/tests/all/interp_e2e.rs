//! End to end: kernels compiled from source by the front end, run on the interpreter and the
//! cpu backend, checked against Rust references; and every `@run` directive of the corpus
//! (`tests/kernels/*.sarek`) run on both backends, which must agree.

use sarek_testkit::interp as interp_util;

use interp_util::kernels::{check_block_sums, check_mandelbrot, check_matmul, matmul_ref};
use interp_util::*;
use sarek_compiler::ir::{Kernel, Ty};
use sarek_compiler::types::{Literal, Scalar};
use sarek_compiler::{SourceMap, diag};
use sarek_runtime::{ArgValue, Column, HostVector, LaunchConfig, RuntimeError, cpu, interp};
use std::path::PathBuf;

fn compile(path: &str, src: &str, kernel: &str) -> Kernel {
    let mut sources = SourceMap::new();
    let file = sources.add(path, src);
    let program = sarek_compiler::check(&sources, file)
        .unwrap_or_else(|d| panic!("{}", diag::render_all(&d, &sources, false)));
    sarek_compiler::lower_kernel(&program, kernel)
        .unwrap_or_else(|d| panic!("{}", diag::render_all(&d, &sources, false)))
}

const SAXPY: &str = "
let%kernel saxpy (x : float32 vector) (y : float32 vector) (a : float32) (n : int32) =
  let i = global_thread_id in
  if i < n then y.(i) <- a *. x.(i) +. y.(i)
";

const REDUCE: &str = "
let%kernel reduce (x : int32 vector) (out : int32 vector) (n : int32) =
  let%shared (tile : int32) = 256 in
  let t = thread_idx_x in
  let i = global_thread_id in
  tile.(t) <- (if i < n then x.(i) else 0);
  block_barrier ();
  let mut s = 128 in
  while s > 0 do
    if t < s then tile.(t) <- tile.(t) + tile.(t + s);
    block_barrier ();
    s := s / 2
  done;
  if t = 0 then out.(block_idx_x) <- tile.(0)
";

const MANDELBROT: &str = "
let%kernel mandelbrot (out : int32 vector) (width : int32) (height : int32) (max_iter : int32) =
  let px = global_idx_x in
  let py = global_idx_y in
  if px < width && py < height then begin
    let cx = -2.5 +. 3.5 *. float32 px /. float32 width in
    let cy = -1.25 +. 2.5 *. float32 py /. float32 height in
    let mut zx = 0.0 in
    let mut zy = 0.0 in
    let mut it = 0 in
    while it < max_iter && zx *. zx +. zy *. zy <= 4.0 do
      let t = zx *. zx -. zy *. zy +. cx in
      zy := 2.0 *. zx *. zy +. cy;
      zx := t;
      it := it + 1
    done;
    out.(py * width + px) <- it
  end
";

const MATMUL: &str = "
let%kernel matmul (a : float32 vector) (b : float32 vector) (c : float32 vector) (n : int32) =
  let%shared (ta : float32) = 256 in
  let%shared (tb : float32) = 256 in
  let tx = thread_idx_x in
  let ty = thread_idx_y in
  let row = global_idx_y in
  let col = global_idx_x in
  let mut acc = 0.0 in
  for m = 0 to n / 16 - 1 do
    ta.(ty * 16 + tx) <- a.(row * n + m * 16 + tx);
    tb.(ty * 16 + tx) <- b.((m * 16 + ty) * n + col);
    block_barrier ();
    for k = 0 to 15 do
      acc := acc +. ta.(ty * 16 + k) *. tb.(k * 16 + tx)
    done;
    block_barrier ()
  done;
  c.(row * n + col) <- acc
";

const SHAPES: &str = "
type shape = Circle of float32 | Rect of float32 * float32 | Empty

let area (s : shape) : float32 =
  match s with
  | Circle r -> 3.0 *. r *. r
  | Rect (w, h) -> w *. h
  | Empty -> 0.0

let%kernel areas (s : shape vector) (out : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then out.(i) <- area s.(i)
";

#[test]
fn saxpy_from_source() {
    let k = compile("saxpy.sarek", SAXPY, "saxpy");
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.37 - 100.0).collect();
    let y: Vec<f32> = (0..n).map(|i| 1.0 / (i as f32 + 1.0)).collect();
    let out = both(
        &k,
        LaunchConfig::linear(n as u32),
        vec![vec_f32(&x), vec_f32(&y), s_f32(1.5), s_i32(n)],
    );
    assert_eq!(
        out_f32(&out[1]),
        x.iter()
            .zip(&y)
            .map(|(x, y)| 1.5 * x + y)
            .collect::<Vec<_>>()
    );
}

#[test]
fn reduction_from_source() {
    let k = compile("reduce.sarek", REDUCE, "reduce");
    let x: Vec<i32> = rand_seq(7, 3000)
        .iter()
        .map(|v| (*v % 1000) as i32)
        .collect();
    check_block_sums(&k, &x);
}

#[test]
fn mandelbrot_from_source() {
    let k = compile("mandelbrot.sarek", MANDELBROT, "mandelbrot");
    check_mandelbrot(&k, 80, 48, 200);
}

#[test]
fn matmul_from_source() {
    let k = compile("matmul.sarek", MATMUL, "matmul");
    check_matmul(&k);
}

#[test]
fn variants_and_helpers_from_source() {
    let k = compile("shapes.sarek", SHAPES, "areas");
    let n = 90;
    let tags: Vec<i32> = (0..n).map(|i| (i * 7 % 3) as i32).collect();
    let p: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let q: Vec<f32> = (0..n).map(|i| 2.0 - i as f32).collect();
    let s = ArgValue::Vector(HostVector {
        len: n,
        columns: vec![
            Column::I32(tags.clone()),
            Column::F32(p.clone()),
            Column::F32(q.clone()),
            Column::F32(p.clone()),
        ],
    });
    let out = both(
        &k,
        LaunchConfig::linear(n as u32),
        vec![s, vec_f32(&vec![0.0; n]), s_i32(n as i32)],
    );
    let want: Vec<f32> = (0..n)
        .map(|i| match tags[i] {
            0 => 3.0 * p[i] * p[i],
            1 => q[i] * p[i],
            _ => 0.0,
        })
        .collect();
    assert_eq!(out_f32(&out[1]), want);
}

#[test]
fn fault_spans_point_into_the_source() {
    let mut sources = SourceMap::new();
    let file = sources.add("saxpy.sarek", SAXPY);
    let program = sarek_compiler::check(&sources, file).unwrap();
    let k = sarek_compiler::lower_kernel(&program, "saxpy").unwrap();
    let mut args = vec![
        vec_f32(&[0.0; 100]),
        vec_f32(&[0.0; 100]),
        s_f32(1.0),
        s_i32(101),
    ];
    match interp::run(&k, LaunchConfig::linear(101), &mut args) {
        Err(RuntimeError::Fault { span, message }) => {
            assert_eq!(
                message,
                "out-of-bounds read of `x` (index 100, length 100) in kernel `saxpy`, block (0,0,0), thread (100,0,0)"
            );
            assert!(!span.is_dummy());
            assert_eq!(
                sources.location(span).split(':').nth(1),
                Some("4"),
                "line of the store"
            );
        }
        r => panic!("expected a fault, got {r:?}"),
    }
}

// ---- the corpus ----------------------------------------------------------------------------

/// One `(* @run kernel [size=N] [grid=..] [block=..] NAME=VALUE... *)` directive.
struct Run {
    kernel: String,
    size: usize,
    grid: Option<[u32; 3]>,
    block: Option<[u32; 3]>,
    values: Vec<(String, String)>,
}

fn dims(s: &str) -> [u32; 3] {
    let mut d = [1; 3];
    for (i, p) in s.split(',').enumerate().take(3) {
        d[i] = p
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("bad dimension `{s}`"));
    }
    d
}

fn directives(src: &str) -> Vec<Run> {
    let mut runs = Vec::new();
    for line in src.lines() {
        // Directives sit in a comment, one per line: `(* @run ...` or `   @run ... *)`.
        let l = line.trim();
        let l = l.strip_prefix("(*").unwrap_or(l).trim_start();
        let Some(rest) = l.strip_prefix("@run ") else {
            continue;
        };
        let rest = rest.trim().trim_end_matches("*)");
        let mut words = rest.split_whitespace();
        let Some(kernel) = words.next() else { continue };
        let mut run = Run {
            kernel: kernel.into(),
            size: 1024,
            grid: None,
            block: None,
            values: vec![],
        };
        for w in words {
            let (k, v) = w
                .split_once('=')
                .unwrap_or_else(|| panic!("bad directive word `{w}`"));
            match k {
                "size" => run.size = v.parse().unwrap(),
                "grid" => run.grid = Some(dims(v)),
                "block" => run.block = Some(dims(v)),
                _ => run.values.push((k.into(), v.into())),
            }
        }
        runs.push(run);
    }
    runs
}

/// Seeded inputs by element type (ints in [0, 1000), floats in [-1, 1), fair bools, uniform
/// variant tags), leaf by leaf in `abi::leaves` order.
fn gen_elem(k: &Kernel, ty: &Ty, r: &mut impl FnMut() -> u64, out: &mut Vec<Literal>) {
    match ty {
        Ty::Scalar(s) => out.push(match s {
            Scalar::Bool => Literal::Bool(r() & 1 == 1),
            Scalar::I32 => Literal::I32((r() % 1000) as i32),
            Scalar::I64 => Literal::I64((r() % 1000) as i64),
            Scalar::F32 => Literal::F32((r() % 2_000_000) as f32 / 1_000_000.0 - 1.0),
            Scalar::F64 => Literal::F64((r() % 2_000_000) as f64 / 1_000_000.0 - 1.0),
        }),
        Ty::Record(id) => k
            .record(*id)
            .fields
            .iter()
            .for_each(|f| gen_elem(k, &f.ty, r, out)),
        Ty::Variant(id) => {
            let v = k.variant(*id);
            out.push(Literal::I32((r() % v.ctors.len() as u64) as i32));
            v.ctors
                .iter()
                .flat_map(|c| &c.fields)
                .for_each(|f| gen_elem(k, f, r, out));
        }
        _ => {}
    }
}

fn parse_scalar(s: Scalar, v: &str) -> Literal {
    match s {
        Scalar::Bool => Literal::Bool(v.parse().unwrap()),
        Scalar::I32 => Literal::I32(v.trim_end_matches('l').parse().unwrap()),
        Scalar::I64 => Literal::I64(v.trim_end_matches('L').parse().unwrap()),
        Scalar::F32 => Literal::F32(v.parse().unwrap()),
        Scalar::F64 => Literal::F64(v.trim_end_matches('d').parse().unwrap()),
    }
}

fn inputs(k: &Kernel, run: &Run) -> Vec<ArgValue> {
    k.params
        .iter()
        .enumerate()
        .map(|(pi, p)| {
            let var = k.var(*p);
            match &var.ty {
                Ty::Vector(elem) => {
                    let leaves = sarek_compiler::abi::leaves(k, elem);
                    let mut hv = HostVector::zeros(&leaves, run.size);
                    let seq = rand_seq(
                        0x5a7e_u64 ^ (pi as u64) << 32,
                        run.size * (leaves.len() + 1) * 2 + 8,
                    );
                    let mut it = seq.into_iter();
                    let mut r = move || it.next().unwrap();
                    for i in 0..run.size {
                        let mut vals = Vec::new();
                        gen_elem(k, elem, &mut r, &mut vals);
                        for (c, v) in hv.columns.iter_mut().zip(vals) {
                            c.set(i, v);
                        }
                    }
                    ArgValue::Vector(hv)
                }
                Ty::Scalar(s) => {
                    let v = run
                        .values
                        .iter()
                        .find(|(n, _)| *n == var.name)
                        .unwrap_or_else(|| {
                            panic!("@run {} gives no value for `{}`", run.kernel, var.name)
                        });
                    ArgValue::Scalar(parse_scalar(*s, &v.1))
                }
                ty => panic!(
                    "@run {}: cannot generate a by-value {ty:?} parameter",
                    run.kernel
                ),
            }
        })
        .collect()
}

fn close(a: &Column, b: &Column) -> bool {
    match (a, b) {
        (Column::F32(x), Column::F32(y)) => x.iter().zip(y).all(|(p, q)| {
            p == q || (p.is_nan() && q.is_nan()) || (p - q).abs() <= 1e-4 * (1.0 + p.abs())
        }),
        (Column::F64(x), Column::F64(y)) => x.iter().zip(y).all(|(p, q)| {
            p == q || (p.is_nan() && q.is_nan()) || (p - q).abs() <= 1e-9 * (1.0 + p.abs())
        }),
        _ => a == b,
    }
}

#[test]
fn corpus_interp_and_cpu_agree() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/kernels");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("skipping: no corpus at {}", dir.display());
        return;
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "sarek"))
        .collect();
    files.sort();
    let mut failures = Vec::new();
    let mut ran = 0;
    for path in files {
        let src = std::fs::read_to_string(&path).unwrap();
        let runs = directives(&src);
        if runs.is_empty() {
            continue;
        }
        let name = format!(
            "tests/kernels/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        let mut sources = SourceMap::new();
        let file = sources.add(name.clone(), src.clone());
        let program = match sarek_compiler::check(&sources, file) {
            Ok(p) => p,
            Err(d) => {
                failures.push(format!(
                    "{name}: does not check:\n{}",
                    diag::render_all(&d, &sources, false)
                ));
                continue;
            }
        };
        for run in runs {
            let k = match sarek_compiler::lower_kernel(&program, &run.kernel) {
                Ok(k) => k,
                Err(d) => {
                    failures.push(format!(
                        "{name}: {}: {}",
                        run.kernel,
                        diag::render_all(&d, &sources, false)
                    ));
                    continue;
                }
            };
            let args = inputs(&k, &run);
            let cfg = match (run.grid, run.block) {
                (None, None) => LaunchConfig::linear(run.size as u32),
                (g, b) => {
                    let block = b.unwrap_or([256.min(run.size as u32).max(1), 1, 1]);
                    LaunchConfig {
                        grid: g.unwrap_or([(run.size as u32).div_ceil(block[0]).max(1), 1, 1]),
                        block,
                    }
                }
            };
            let (mut a, mut b) = (args.clone(), args);
            let ra = interp::run(&k, cfg, &mut a);
            let rb = cpu::run(&k, cfg, &mut b);
            ran += 1;
            match (ra, rb) {
                (Ok(_), Ok(_)) => {
                    for (pi, (x, y)) in a.iter().zip(&b).enumerate() {
                        if let (ArgValue::Vector(x), ArgValue::Vector(y)) = (x, y) {
                            for (cx, cy) in x.columns.iter().zip(&y.columns) {
                                if !close(cx, cy) {
                                    failures.push(format!(
                                        "{name}: {}: parameter {pi} differs between interp and cpu",
                                        run.kernel
                                    ));
                                }
                            }
                        }
                    }
                }
                (Err(e), _) | (_, Err(e)) => {
                    let at = match &e {
                        RuntimeError::Fault { span, .. } => {
                            format!("{}: ", sources.location(*span))
                        }
                        _ => String::new(),
                    };
                    failures.push(format!("{name}: {}: {at}{e}", run.kernel));
                }
            }
        }
    }
    eprintln!("{ran} corpus launches run on interp and cpu");
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---- corpus kernels against Rust references ------------------------------------------------

fn corpus(file: &str, kernel: &str) -> Kernel {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/kernels")
        .join(file);
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    compile(&format!("tests/kernels/{file}"), &src, kernel)
}

#[test]
fn corpus_saxpy_against_rust() {
    let n = 1000usize;
    let x: Vec<f32> = rand_seq(21, n)
        .iter()
        .map(|v| (*v % 2000) as f32 / 1000.0 - 1.0)
        .collect();
    let y: Vec<f32> = rand_seq(22, n)
        .iter()
        .map(|v| (*v % 2000) as f32 / 1000.0 - 1.0)
        .collect();
    let out = both(
        &corpus("saxpy.sarek", "saxpy"),
        LaunchConfig::linear(n as u32),
        vec![vec_f32(&x), vec_f32(&y), s_f32(2.0), s_i32(n as i32)],
    );
    assert_eq!(
        out_f32(&out[1]),
        x.iter()
            .zip(&y)
            .map(|(x, y)| 2.0 * x + y)
            .collect::<Vec<_>>()
    );
    // saxpy_scaled: n = 900 of 1024 threads; y - 0.25 through a helper.
    let out = both(
        &corpus("saxpy.sarek", "saxpy_scaled"),
        LaunchConfig::linear(n as u32),
        vec![vec_f32(&x), vec_f32(&y), s_f32(-0.5), s_i32(900)],
    );
    let want: Vec<f32> = (0..n)
        .map(|i| {
            if i < 900 {
                -0.5 * x[i] + y[i] - 0.25
            } else {
                y[i]
            }
        })
        .collect();
    assert_eq!(out_f32(&out[1]), want);
}

#[test]
fn corpus_reductions_against_rust() {
    let n = 2000usize;
    let x: Vec<i32> = rand_seq(23, n).iter().map(|v| (*v % 1000) as i32).collect();
    let mut out_init = vec![-5; n];
    let out = both(
        &corpus("reduce_shared.sarek", "reduce_sum"),
        launch([8, 1, 1], [256, 1, 1]),
        vec![vec_i32(&x), vec_i32(&out_init), s_i32(n as i32)],
    );
    for (b, c) in x.chunks(256).enumerate() {
        out_init[b] = c.iter().sum();
    }
    assert_eq!(out_i32(&out[1]), out_init);

    let xf: Vec<f32> = rand_seq(24, n)
        .iter()
        .map(|v| (*v % 20000) as f32 / 1000.0 - 10.0)
        .collect();
    let out = both(
        &corpus("reduce_shared.sarek", "reduce_max_f32"),
        launch([8, 1, 1], [256, 1, 1]),
        vec![vec_f32(&xf), vec_f32(&vec![0.0; n]), s_i32(1900)],
    );
    let got = out_f32(&out[1]);
    for b in 0..8 {
        let want = xf[b * 256..((b + 1) * 256).min(1900)]
            .iter()
            .fold(-1000.0f32, |m, v| m.max(*v));
        assert_eq!(got[b], want, "block {b}");
    }
}

#[test]
fn corpus_matmul_against_rust() {
    for n in [32usize, 30] {
        let a: Vec<f32> = rand_f32(25, 1024);
        let b: Vec<f32> = rand_f32(26, 1024);
        let cfg = launch([2, 2, 1], [16, 16, 1]);
        let args = || {
            vec![
                vec_f32(&a),
                vec_f32(&b),
                vec_f32(&[7.0; 1024]),
                s_i32(n as i32),
            ]
        };
        let mut want = vec![7.0f32; 1024];
        want[..n * n].copy_from_slice(&matmul_ref(&a[..n * n], &b[..n * n], n));
        // Tiled: zero padding adds exact zeros, so the sums match the plain loop bit for bit.
        let out = both(&corpus("matmul_tiled.sarek", "matmul_tiled"), cfg, args());
        assert_eq!(out_f32(&out[2]), want, "tiled n={n}");
        let out = both(&corpus("matmul_tiled.sarek", "matmul_naive"), cfg, args());
        assert_eq!(out_f32(&out[2]), want, "naive n={n}");
    }
}

/// The corpus mandelbrot's int32 fixed-point iteration, in Rust.
fn mandelbrot_fixed_ref(w: i32, h: i32, max_iter: i32) -> Vec<i32> {
    let one = 1i32 << 12;
    let mut out = vec![0; (w * h) as usize];
    for y in 0..h {
        for x in 0..w {
            let cx = (x * 3 * one) / w - 2 * one;
            let cy = (y * 3 * one) / h - (3 * one) / 2;
            let (mut zx, mut zy, mut k) = (0i32, 0i32, 0);
            while k < max_iter {
                let zx2 = zx.wrapping_mul(zx) >> 12;
                let zy2 = zy.wrapping_mul(zy) >> 12;
                if zx2 + zy2 > 4 * one {
                    break;
                }
                let nzx = zx2 - zy2 + cx;
                zy = (2i32.wrapping_mul(zx).wrapping_mul(zy) >> 12) + cy;
                zx = nzx;
                k += 1;
            }
            out[(y * w + x) as usize] = k;
        }
    }
    out
}

#[test]
fn corpus_mandelbrot_against_rust() {
    let (w, h, it) = (64, 48, 100);
    let out = both(
        &corpus("mandelbrot.sarek", "mandelbrot"),
        launch([4, 3, 1], [16, 16, 1]),
        vec![
            vec_i32(&vec![-1; (w * h) as usize]),
            s_i32(w),
            s_i32(h),
            s_i32(it),
        ],
    );
    let got = out_i32(&out[0]);
    assert_eq!(got, mandelbrot_fixed_ref(w, h, it));
    assert!(
        got.contains(&it) && got.iter().any(|&k| k < 5),
        "both escaping and bounded points"
    );
}

#[test]
fn corpus_warp_kernels_against_rust() {
    let n = 1000usize;
    let cfg = launch([4, 1, 1], [256, 1, 1]);
    let a: Vec<i32> = rand_seq(27, n).iter().map(|v| (*v % 1000) as i32).collect();
    let padded = |i: usize| if i < n { a[i] } else { 0 };
    let out = both(
        &corpus("warp.sarek", "warp_sum"),
        cfg,
        vec![vec_i32(&a), vec_i32(&[0; 1000]), s_i32(n as i32)],
    );
    // A butterfly over the whole warp: every lane ends with the warp total.
    let want: Vec<i32> = (0..n)
        .map(|i| (i / 32 * 32..i / 32 * 32 + 32).map(padded).sum())
        .collect();
    assert_eq!(out_i32(&out[1]), want);

    let bools = || {
        ArgValue::Vector(HostVector {
            len: n,
            columns: vec![Column::Bool(vec![false; n])],
        })
    };
    let out = both(
        &corpus("warp.sarek", "warp_votes"),
        cfg,
        vec![
            vec_i32(&a),
            bools(),
            bools(),
            vec_i32(&[0; 1000]),
            s_i32(n as i32),
        ],
    );
    let warp = |i: usize| {
        (i / 32 * 32..i / 32 * 32 + 32)
            .map(padded)
            .collect::<Vec<_>>()
    };
    let want_all: Vec<bool> = (0..n).map(|i| warp(i).iter().all(|v| *v < 1000)).collect();
    let want_any: Vec<bool> = (0..n).map(|i| warp(i).iter().any(|v| *v >= 990)).collect();
    let want_odd: Vec<i32> = (0..n)
        .map(|i| warp(i).iter().filter(|v| *v & 1 == 1).count() as i32)
        .collect();
    assert_eq!(col(&out[1], 0), &Column::Bool(want_all));
    assert_eq!(col(&out[2], 0), &Column::Bool(want_any));
    assert_eq!(out_i32(&out[3]), want_odd);
}

#[test]
fn corpus_histograms_against_rust() {
    let n = 4096usize;
    let data: Vec<i32> = rand_seq(28, n).iter().map(|v| (*v % 1000) as i32).collect();
    let init: Vec<i32> = (0..64).collect();
    let mut want = init.clone();
    data.iter().for_each(|d| want[(d % 64) as usize] += 1);
    let cfg = launch([16, 1, 1], [256, 1, 1]);
    for kernel in ["histogram", "histogram_shared"] {
        let out = both(
            &corpus("histogram.sarek", kernel),
            cfg,
            vec![vec_i32(&data), vec_i32(&init), s_i32(n as i32)],
        );
        assert_eq!(out_i32(&out[1]), want, "{kernel}");
    }
    // The compare-and-swap retry loop: every thread eventually succeeds exactly once.
    let mut want = vec![0; 8];
    data.iter().for_each(|d| want[(d % 8) as usize] += 1);
    let out = both(
        &corpus("histogram.sarek", "cas_add"),
        cfg,
        vec![vec_i32(&data), vec_i32(&[0; 8]), s_i32(n as i32)],
    );
    assert_eq!(out_i32(&out[1]), want);
}

/// Shared-memory records written field by field (upstream's test_shared_record_slots.ml): a
/// field read needs that field written, not its siblings; a whole-record read needs one of
/// its fields written; a field no thread wrote is still a fault.
#[test]
fn shared_record_slots_written_field_by_field() {
    const SRC: &str = "
type tri = { a : float32; b : float32; c : float32 }
let%kernel slots (src : float32 vector) (own : float32 vector) (whole : float32 vector) =
  let%shared (s : tri) = 64 in
  let t = thread_idx_x in
  s.(t).a <- src.(t);
  s.(t).c <- src.(t) +. 100.0;
  block_barrier ();
  own.(t) <- s.((t + 1) mod 64).c;
  let r = s.(t) in
  whole.(t) <- r.a +. r.c
let%kernel unwritten (out : float32 vector) =
  let%shared (s : tri) = 64 in
  let t = thread_idx_x in
  s.(t).a <- 1.0;
  block_barrier ();
  out.(t) <- s.(t).b
";
    let src: Vec<f32> = (0..64).map(|i| i as f32 * 0.5).collect();
    let k = compile("slots.sarek", SRC, "slots");
    let mut args = vec![vec_f32(&src), vec_f32(&[0.0; 64]), vec_f32(&[0.0; 64])];
    interp::run(&k, LaunchConfig::linear(64), &mut args).unwrap();
    let own: Vec<f32> = (0..64).map(|i| src[(i + 1) % 64] + 100.0).collect();
    let whole: Vec<f32> = src.iter().map(|x| x + (x + 100.0)).collect();
    assert_eq!(out_f32(&args[1]), own);
    assert_eq!(out_f32(&args[2]), whole);
    let k = compile("slots.sarek", SRC, "unwritten");
    let mut args = vec![vec_f32(&[0.0; 64])];
    match interp::run(&k, LaunchConfig::linear(64), &mut args) {
        Err(RuntimeError::Fault { message, .. }) => assert!(
            message.starts_with("read of shared memory `s` (index 0) that no thread wrote"),
            "{message}"
        ),
        other => panic!("expected a fault, got {other:?}"),
    }
}
