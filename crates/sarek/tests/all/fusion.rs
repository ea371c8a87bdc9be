//! Fusion and skeletons end to end: random compositions of element-wise kernels (and
//! stencils) fused and unfused agree exactly on `interp`, a sample agrees on every local
//! backend; a fused pipeline through records and variants; map, zip, reduce and scan
//! skeletons (non-commutative helpers included) against Rust; `sarek fuse` on the command line.
//!
//! Backends without their runtime are skipped with a printed reason, unless
//! `SAREK_REQUIRE_BACKENDS` names them.

use crate::device;
use proptest::prelude::*;
use sarek::{Backend, Column, Device, HostVector, Kernel, ParamKind, Program};
use sarek_harness as harness;
use std::collections::BTreeMap;
use std::sync::Arc;

const GPU_LIKE: [Backend; 4] = [
    Backend::Cpu,
    Backend::Wgpu,
    Backend::Vulkan,
    Backend::OpenCl,
];

fn interp() -> Arc<dyn Device> {
    sarek::open(Backend::Interp).expect("interp")
}

fn f32s(v: Vec<f32>) -> HostVector {
    HostVector {
        len: v.len(),
        columns: vec![Column::F32(v)],
    }
}

fn i32s(v: Vec<i32>) -> HostVector {
    HostVector {
        len: v.len(),
        columns: vec![Column::I32(v)],
    }
}

/// Launch `kernel` binding vectors by parameter name (missing ones are made zeroed, `len`
/// long) and every scalar to `n`.
fn run_named(
    kernel: &Kernel,
    device: &dyn Device,
    vectors: &mut BTreeMap<String, HostVector>,
    n: usize,
) {
    let params = kernel.params();
    let mut taken: Vec<HostVector> = Vec::new();
    for p in &params {
        if let ParamKind::Vector { .. } = p.kind {
            let v = match vectors.remove(&p.name) {
                Some(v) => v,
                None => kernel.vector(&p.name, n).unwrap(),
            };
            taken.push(v);
        }
    }
    {
        let mut launch = kernel.launch();
        let mut it = taken.iter_mut();
        for p in &params {
            launch = match p.kind {
                ParamKind::Vector { .. } => launch.arg(it.next().unwrap()),
                _ => launch.scalar(n as i32),
            };
        }
        launch
            .run(device)
            .unwrap_or_else(|e| panic!("{} on {}: {e}", kernel.name(), device.info().backend));
    }
    let mut it = taken.into_iter();
    for p in &params {
        if let ParamKind::Vector { .. } = p.kind {
            vectors.insert(p.name.clone(), it.next().unwrap());
        }
    }
}

/// One stage of a random pipeline: `x<k+1>.(i) <- EXPR` over `v = x<k>.(i)`.
#[derive(Clone, Debug)]
enum Stage {
    Affine(i8, i8),
    Sin,
    Clamp,
    Square,
    AddW,
    Stencil,
}

fn stage() -> impl Strategy<Value = Stage> {
    prop_oneof![
        (-4i8..4, -4i8..4).prop_map(|(k, c)| Stage::Affine(k, c)),
        Just(Stage::Sin),
        Just(Stage::Clamp),
        Just(Stage::Square),
        Just(Stage::AddW),
        Just(Stage::Stencil),
    ]
}

fn source(stages: &[Stage]) -> String {
    let mut s = String::new();
    for (k, st) in stages.iter().enumerate() {
        let (x, y) = (format!("x{k}"), format!("x{}", k + 1));
        let e = match st {
            Stage::Affine(m, c) => format!("v *. {:.1} +. {:.1}", *m as f32 * 0.5, *c as f32),
            Stage::Sin => "sin v".into(),
            Stage::Clamp => "fmin (fmax v (-1.0)) 1.0".into(),
            Stage::Square => "v *. v *. 0.5".into(),
            Stage::AddW => "v +. w.(i)".into(),
            Stage::Stencil => format!(
                "if i > 0 && i < n - 1 then ({x}.(i - 1) +. v +. {x}.(i + 1)) /. 3.0 else v"
            ),
        };
        s.push_str(&format!(
            "let%kernel s{k} ({x} : float32 vector) (w : float32 vector) ({y} : float32 vector) (n : int32) =\n  \
             let i = global_thread_id in\n  \
             if i < n then begin let v = {x}.(i) in {y}.(i) <- ({e}) end\n\n"
        ));
    }
    s
}

fn inputs(n: usize, seed: u64) -> BTreeMap<String, HostVector> {
    let mut rng = harness::Rng::new(seed);
    let mut gen_ = || {
        (0..n)
            .map(|_| (rng.below(2001) as f32 - 1000.0) / 500.0)
            .collect::<Vec<f32>>()
    };
    let mut m = BTreeMap::new();
    m.insert("x0".to_string(), f32s(gen_()));
    m.insert("w".to_string(), f32s(gen_()));
    m
}

/// The last vector of the pipeline, unfused on `interp` and fused on `device`.
fn both(stages: &[Stage], n: usize, seed: u64, device: &dyn Device) -> (Vec<f32>, Vec<f32>) {
    let program = Program::compile("pipeline.sarek", &source(stages)).unwrap();
    let names: Vec<String> = (0..stages.len()).map(|k| format!("s{k}")).collect();
    let last = format!("x{}", stages.len());

    let mut unfused = inputs(n, seed);
    for name in &names {
        run_named(&program.kernel(name).unwrap(), &*interp(), &mut unfused, n);
    }

    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let fused = program.fuse(&refs).unwrap();
    assert_eq!(
        fused.eliminated,
        (1..stages.len())
            .map(|k| format!("x{k}"))
            .collect::<Vec<_>>()
    );
    let mut vs = inputs(n, seed);
    run_named(&fused.kernel, device, &mut vs, n);
    let col = |m: &BTreeMap<String, HostVector>| match &m[&last].columns[0] {
        Column::F32(v) => v.clone(),
        c => panic!("{c:?}"),
    };
    (col(&unfused), col(&vs))
}

fn close(a: &[f32], b: &[f32], what: &str) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= 1e-4 * x.abs().max(1.0),
            "{what}: element {i}: {x} (unfused, interp) vs {y}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Fused and unfused pipelines compute the same bits on the reference interpreter.
    #[test]
    fn random_pipelines_fuse_exactly_on_interp(
        stages in prop::collection::vec(stage(), 2..6),
        seed in 0u64..1000,
    ) {
        let (unfused, fused) = both(&stages, 300, seed, &*interp());
        for (i, (a, b)) in unfused.iter().zip(&fused).enumerate() {
            prop_assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "element {i}: unfused {a}, fused {b}\n{}", source(&stages));
        }
    }
}

#[test]
fn sample_pipelines_agree_on_every_backend() {
    let samples = [
        vec![Stage::Affine(3, 1), Stage::AddW, Stage::Sin],
        vec![Stage::Square, Stage::Stencil, Stage::Clamp, Stage::Stencil],
        vec![
            Stage::AddW,
            Stage::Affine(-2, 2),
            Stage::Square,
            Stage::Sin,
            Stage::AddW,
        ],
    ];
    for b in GPU_LIKE {
        let Some(d) = device(b) else { continue };
        for (k, s) in samples.iter().enumerate() {
            let (unfused, fused) = both(s, 1000, 7 + k as u64, &*d);
            close(&unfused, &fused, &format!("{b}, sample {k}"));
        }
    }
}

const SHAPES: &str = r#"
type point = { x : float32; y : float32 }
type shape = Circle of float32 | Rect of float32 * float32 | Empty

let area (s : shape) : float32 =
  match s with Circle r -> 3.0 *. r *. r | Rect (w, h) -> w *. h | Empty -> 0.0

let%kernel to_points (a : float32 vector) (pts : point vector) (n : int32) =
  let i = global_thread_id in
  if i < n then pts.(i) <- { x = a.(i); y = 2.0 *. a.(i) -. 1.0 }

let%kernel to_shapes (pts : point vector) (shapes : shape vector) (n : int32) =
  let i = global_thread_id in
  if i < n then begin
    let p = pts.(i) in
    shapes.(i) <- (if p.x > 0.5 then Circle p.x else if p.y < -1.5 then Empty else Rect (p.x, p.y))
  end

let%kernel areas (shapes : shape vector) (out : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then out.(i) <- area shapes.(i)
"#;

/// Records and variants as intermediates: the fused kernel's output equals the unfused
/// pipeline's and the host's formula.
#[test]
fn fused_records_and_variants() {
    let program = Program::compile("shapes.sarek", SHAPES).unwrap();
    let n = 700;
    let a: Vec<f32> = (0..n).map(|i| (i as f32 - 350.0) / 200.0).collect();
    let expected: Vec<f32> = a
        .iter()
        .map(|&x| {
            let (px, py) = (x, 2.0 * x - 1.0);
            if px > 0.5 {
                3.0 * px * px
            } else if py < -1.5 {
                0.0
            } else {
                px * py
            }
        })
        .collect();
    let fused = program.fuse(&["to_points", "to_shapes", "areas"]).unwrap();
    assert_eq!(fused.eliminated, ["pts", "shapes"]);
    let mut unfused = BTreeMap::from([("a".to_string(), f32s(a.clone()))]);
    for k in ["to_points", "to_shapes", "areas"] {
        run_named(&program.kernel(k).unwrap(), &*interp(), &mut unfused, n);
    }
    let out = |m: &BTreeMap<String, HostVector>| match &m["out"].columns[0] {
        Column::F32(v) => v.clone(),
        c => panic!("{c:?}"),
    };
    assert_eq!(out(&unfused), expected);
    for b in [Backend::Interp].into_iter().chain(GPU_LIKE) {
        let Some(d) = device(b) else { continue };
        let mut vs = BTreeMap::from([("a".to_string(), f32s(a.clone()))]);
        run_named(&fused.kernel, &*d, &mut vs, n);
        close(&expected, &out(&vs), &b.to_string());
    }
}

const HELPERS: &str = r#"
type point = { x : float32; y : float32 }
(* x -> m * x + c; composing is associative but not commutative. *)
type lin = { m : int32; c : int32 }
let norm2 (p : point) : float32 = p.x *. p.x +. p.y *. p.y
let mkpoint (x : float32) (y : int32) : point = { x = x; y = float32 y }
let plus (a : int32) (b : int32) : int32 = a + b
let plusf (a : float32) (b : float32) : float32 = a +. b
let compose (f : lin) (g : lin) : lin = { m = f.m * g.m; c = f.c * g.m + g.c }
"#;

fn lin_vector(n: usize) -> (HostVector, Vec<(i32, i32)>) {
    let mut rng = harness::Rng::new(5);
    let v: Vec<(i32, i32)> = (0..n)
        .map(|_| (if rng.below(2) == 0 { 1 } else { -1 }, rng.below(10) as i32))
        .collect();
    let h = HostVector {
        len: n,
        columns: vec![
            Column::I32(v.iter().map(|p| p.0).collect()),
            Column::I32(v.iter().map(|p| p.1).collect()),
        ],
    };
    (h, v)
}

fn compose(f: (i32, i32), g: (i32, i32)) -> (i32, i32) {
    (f.0 * g.0, f.1 * g.0 + g.1)
}

fn ints(c: &Column) -> Vec<i32> {
    match c {
        Column::I32(v) => v.clone(),
        c => panic!("{c:?}"),
    }
}

fn floats(c: &Column) -> Vec<f32> {
    match c {
        Column::F32(v) => v.clone(),
        c => panic!("{c:?}"),
    }
}

#[test]
fn skeletons_match_the_host_on_every_backend() {
    let program = Program::compile("helpers.sarek", HELPERS).unwrap();
    let map = program.map("norm2").unwrap();
    let zip = program.zip("mkpoint").unwrap();
    let sum = program.reduce("plus", "0").unwrap();
    let sumf = program.reduce("plusf", "0.0").unwrap();
    let lin = program.reduce("compose", "{ m = 1; c = 0 }").unwrap();
    let scan = program.scan("plus", "0", true).unwrap();
    let escan = program.scan("compose", "{ m = 1; c = 0 }", false).unwrap();
    for b in [Backend::Interp].into_iter().chain(GPU_LIKE) {
        let Some(d) = device(b) else { continue };
        let d = &*d;

        // map over records, zip into records: a size below one block's span (4 × 256), one
        // full span, and full spans plus a tail (both code paths of a thread).
        for n in [1, 1000, 1024, 2500] {
            let xs: Vec<f32> = (0..n).map(|i| i as f32 / 100.0).collect();
            let ys: Vec<i32> = (0..n as i32).map(|i| i % 7).collect();
            let mut pts = map.kernels()[0].vector("input", n).unwrap();
            let mut out = f32s(vec![0.0; n]);
            zip.zip(d, &mut f32s(xs.clone()), &mut i32s(ys.clone()), &mut pts)
                .unwrap();
            map.map(d, &mut pts, &mut out).unwrap();
            let want: Vec<f32> = xs
                .iter()
                .zip(&ys)
                .map(|(x, y)| x * x + (*y as f32) * (*y as f32))
                .collect();
            close(
                &want,
                &floats(&out.columns[0]),
                &format!("{b}: zip then map of {n}"),
            );
        }

        // reduce: exact integers in one block of up to 16 tiles (40,000) and over several
        // passes (70,000), floats, a non-commutative record.
        for n in [1, 2047, 2049, 5000, 40_000, 70_000] {
            let v: Vec<i32> = (0..n).map(|i| i % 13 - 6).collect();
            let (r, _) = sum.reduce(d, &mut i32s(v.clone())).unwrap();
            assert_eq!(
                ints(&r.columns[0]),
                [v.iter().sum::<i32>()],
                "{b}: sum of {n}"
            );
        }
        let v: Vec<f32> = (0..5000).map(|i| (i % 17) as f32 * 0.25).collect();
        let (r, _) = sumf.reduce(d, &mut f32s(v.clone())).unwrap();
        close(
            &[v.iter().sum::<f32>()],
            &floats(&r.columns[0]),
            &format!("{b}: float sum"),
        );
        let (mut h, v) = lin_vector(4500);
        let (r, _) = lin.reduce(d, &mut h).unwrap();
        let want = v.iter().copied().fold((1, 0), compose);
        assert_eq!(
            (ints(&r.columns[0]), ints(&r.columns[1])),
            (vec![want.0], vec![want.1]),
            "{b}: ordered reduction"
        );

        // scans: inclusive integers, exclusive non-commutative records, over two levels.
        let n = 20_000;
        let v: Vec<i32> = (0..n as i32).map(|i| i % 5 - 2).collect();
        let mut out = i32s(vec![0; n]);
        scan.scan(d, &mut i32s(v.clone()), &mut out).unwrap();
        let want: Vec<i32> = v
            .iter()
            .scan(0, |s, x| {
                *s += x;
                Some(*s)
            })
            .collect();
        assert_eq!(ints(&out.columns[0]), want, "{b}: inclusive scan");
        let (mut h, v) = lin_vector(n);
        let mut out = escan.kernels()[0].vector("output", n).unwrap();
        escan.scan(d, &mut h, &mut out).unwrap();
        let mut acc = (1, 0);
        let mut want = Vec::new();
        for x in &v {
            want.push(acc);
            acc = compose(acc, *x);
        }
        assert_eq!(
            ints(&out.columns[0]),
            want.iter().map(|p| p.0).collect::<Vec<_>>(),
            "{b}: exclusive scan (m)"
        );
        assert_eq!(
            ints(&out.columns[1]),
            want.iter().map(|p| p.1).collect::<Vec<_>>(),
            "{b}: exclusive scan (c)"
        );
    }
}

#[test]
fn skeleton_errors_are_clear() {
    let program = Program::compile("helpers.sarek", HELPERS).unwrap();
    let e = program.reduce("norm2", "0.0").err().unwrap();
    assert!(
        e.to_string()
            .contains("`reduce norm2` needs a helper of type 'a -> 'a -> 'a"),
        "{e}"
    );
    let e = program.reduce("plus", "0.0").err().unwrap();
    assert!(
        e.to_string().contains("helpers.sarek"),
        "a wrong neutral is a located error: {e}"
    );
}

mod cli {
    use std::process::Command;

    fn sarek(args: &[&str]) -> (i32, String, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_sarek"))
            .args(args)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn file() -> String {
        let path = std::env::temp_dir().join(format!("sarek-fuse-{}.sarek", std::process::id()));
        std::fs::write(
            &path,
            r#"
let%kernel k1 (a : float32 vector) (t : float32 vector) (n : int32) =
  let i = global_thread_id in if i < n then t.(i) <- a.(i) *. 2.0
let%kernel k2 (t : float32 vector) (u : float32 vector) (n : int32) =
  let i = global_thread_id in if i < n then u.(i) <- t.(i) +. 1.0
let%kernel k3 (u : float32 vector) (out : float32 vector) (n : int32) =
  let i = global_thread_id in if i > 0 && i < n then out.(i) <- u.(i - 1) +. u.(i)
let%kernel sync (a : float32 vector) (t : float32 vector) (n : int32) =
  let i = global_thread_id in block_barrier (); if i < n then t.(i) <- a.(i)
"#,
        )
        .unwrap();
        path.display().to_string()
    }

    #[test]
    fn fuse_prints_the_fused_kernel_and_why() {
        let f = file();
        let (code, out, err) = sarek(&["fuse", &f, "--kernels", "k1,k2", "--via", "t"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.starts_with("kernel k1_k2"), "{out}");
        assert!(out.contains("fused_t"), "{out}");
        assert!(
            err.contains("note: fuse through `t`: the consumer reads it one-to-one"),
            "{err}"
        );
        let (code, out, err) = sarek(&["fuse", &f, "--kernels", "k1,k2,k3", "--target", "opencl"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("__kernel void k1_k2_k3"), "{out}");
        assert!(err.contains("stencil of radius 1"), "{err}");
    }

    #[test]
    fn fuse_refusals_and_usage_errors() {
        let f = file();
        let (code, _, err) = sarek(&["fuse", &f, "--kernels", "sync,k2", "--via", "t"]);
        assert_eq!(code, 1);
        assert!(
            err.starts_with(
                "error: cannot fuse `sync` into `k2`: the producer `sync` synchronises its block"
            ),
            "{err}"
        );
        let (code, _, err) = sarek(&["fuse", &f, "--kernels", "k1,k4"]);
        assert_eq!(code, 1);
        assert!(
            err.contains("no kernel `k4`") && err.contains("did you mean"),
            "{err}"
        );
        let (code, _, err) = sarek(&["fuse", &f, "--kernels", "k1"]);
        assert_eq!(code, 1);
        assert!(err.contains("at least two kernels"), "{err}");
        for kernels in ["k1,,k2", "k1,k2,", ",k1,k2"] {
            let (code, out, err) = sarek(&["fuse", &f, "--kernels", kernels]);
            assert_eq!(code, 1, "{kernels}: {err}");
            assert!(out.is_empty(), "{kernels}: {out}");
            assert!(err.contains("`--kernels` has an empty entry"), "{err}");
        }
        let (code, _, err) = sarek(&["fuse", &f, "--kernels", "k1,k2,k3", "--via", "t"]);
        assert_eq!(code, 1, "{err}");
        let (code, _, err) = sarek(&["fuse", &f, "--kernels", "k1,k2", "--target", "spirv"]);
        assert_eq!(code, 2, "{err}");
        let (code, _, err) = sarek(&["fuse", "/nonexistent.sarek", "--kernels", "k1,k2"]);
        assert_eq!(code, 2);
        assert!(err.starts_with("error: cannot read"), "{err}");
    }
}

#[test]
fn skeleton_macro_instantiates_at_build_time() {
    let sum = sarek::skeleton!(reduce, "tests/kernels/skeleton_ops.sarek", plus, "0").unwrap();
    assert_eq!(sum.kernels()[0].name(), "reduce_plus");
    let (r, _) = sum
        .reduce(&*interp(), &mut i32s((1..=3000).collect()))
        .unwrap();
    assert_eq!(ints(&r.columns[0]), [3000 * 3001 / 2]);
    let neg = sarek::skeleton!(map, "tests/kernels/skeleton_ops.sarek", negate).unwrap();
    let mut out = i32s(vec![0; 3]);
    neg.map(&*interp(), &mut i32s(vec![1, -2, 3]), &mut out)
        .unwrap();
    assert_eq!(ints(&out.columns[0]), [-1, 2, -3]);
}

/// A 28-byte record gets smaller reduction tiles (2 items per thread): still in order.
#[test]
fn wide_records_reduce_in_order() {
    let program = Program::compile(
        "wide.sarek",
        r#"
type w = { m : int32; c : int32; k0 : int32; k1 : int32; k2 : int32; k3 : int32; k4 : int32 }
let comp (f : w) (g : w) : w =
  { m = f.m * g.m; c = f.c * g.m + g.c; k0 = f.k0 + g.k0; k1 = max f.k1 g.k1; k2 = f.k2 + g.k2; k3 = 0; k4 = 0 }
"#,
    )
    .unwrap();
    let sk = program
        .reduce(
            "comp",
            "{ m = 1; c = 0; k0 = 0; k1 = 0; k2 = 0; k3 = 0; k4 = 0 }",
        )
        .unwrap();
    let n = 3000;
    let (mut h, v) = lin_vector(n);
    let mut cols = h.columns.clone();
    cols.push(Column::I32((0..n as i32).collect()));
    cols.push(Column::I32((0..n as i32).map(|i| i + 7).collect()));
    cols.push(Column::I32((0..n as i32).map(|i| i * 3).collect()));
    cols.push(Column::I32(vec![0; n]));
    cols.push(Column::I32(vec![0; n]));
    h.columns = cols;
    let want = v.iter().copied().fold((1, 0), compose);
    for b in [Backend::Interp, Backend::Cpu] {
        let Some(d) = device(b) else { continue };
        let (r, _) = sk.reduce(&*d, &mut h.clone()).unwrap();
        let got: Vec<i32> = r.columns.iter().map(|c| ints(c)[0]).collect();
        let k0: i32 = (0..n as i32).sum();
        assert_eq!(
            got,
            [want.0, want.1, k0, n as i32 - 1 + 7, 3 * k0, 0, 0],
            "{b}"
        );
    }
}

/// The reduce kernel with several tiles per block (the launcher only picks more than one for
/// millions of elements): every chunk count keeps a non-commutative fold in order, partial
/// last tiles included.
#[test]
fn reduce_blocks_fold_several_tiles_in_order() {
    let program = Program::compile("helpers.sarek", HELPERS).unwrap();
    let lin = program.reduce("compose", "{ m = 1; c = 0 }").unwrap();
    let k = &lin.kernels()[0];
    // `lin` is two int32 fields: 8 items per thread, tiles of 256 x 8 (skeleton::reduce_items).
    let tile = 2048;
    for b in [Backend::Interp].into_iter().chain(GPU_LIKE) {
        let Some(d) = device(b) else { continue };
        for (n, chunks) in [(4500usize, 2usize), (4500, 3), (9000, 5), (100, 4)] {
            let (mut h, v) = lin_vector(n);
            let blocks = n.div_ceil(tile * chunks);
            let mut partial = k.vector("partial", blocks).unwrap();
            k.launch()
                .config(sarek::LaunchConfig {
                    grid: [blocks as u32, 1, 1],
                    block: [256, 1, 1],
                })
                .arg(&mut h)
                .arg(&mut partial)
                .scalar(n as i32)
                .scalar(chunks as i32)
                .run(&*d)
                .unwrap();
            let (m, c) = (ints(&partial.columns[0]), ints(&partial.columns[1]));
            for (blk, span) in v.chunks(tile * chunks).enumerate() {
                let want = span.iter().copied().fold((1, 0), compose);
                assert_eq!(
                    (m[blk], c[blk]),
                    want,
                    "{b}: n {n}, {chunks} chunks, block {blk}"
                );
            }
        }
    }
}
