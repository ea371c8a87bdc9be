//! The IR optimisation stage (`passes::opt`) leaves results unchanged: every corpus kernel
//! (with its `@run` inputs) and randomly generated integer kernels (divisions and remainders
//! by constants, literal-bound `let`s, loops, fed with int32's edge values) run on the
//! reference interpreter before and after `optimize`, and every output vector is compared
//! bit for bit. The optimised IR must also pass `ir::validate`, and the passes must actually
//! fire where they promise to (no `/` or `mod` by a power of two left on a variable).

use sarek_testkit::files;

use proptest::prelude::*;
use sarek_compiler::diag::{SourceMap, render_all};
use sarek_compiler::ir::validate::validate;
use sarek_compiler::ir::{ExprKind, Kernel, visit};
use sarek_compiler::passes::opt::{optimize, shift_guarded_divisions};
use sarek_compiler::types::BinOp;
use sarek_harness::{self as harness, Inputs, Tolerance};
use sarek_runtime::Backend;
use sarek_runtime::value::{ArgValue, Column, HostVector};

const EXACT: Tolerance = Tolerance {
    f32_abs: 0.0,
    f32_ulps: 0,
    f64_abs: 0.0,
    f64_ulps: 0,
};

fn compile(name: &str, text: &str) -> (SourceMap, Vec<Kernel>) {
    let mut sources = SourceMap::new();
    let file = sources.add(name.to_string(), text.to_string());
    let program = sarek_compiler::check(&sources, file)
        .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
    let kernels = program
        .kernels
        .iter()
        .map(|k| {
            sarek_compiler::lower_kernel(&program, &k.name)
                .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)))
        })
        .collect();
    (sources, kernels)
}

/// Run `kernel` and `optimize(kernel)` on the interpreter with the same arguments; panic with
/// the first difference.
fn check_same(kernel: &Kernel, args: &[ArgValue], config: sarek_runtime::LaunchConfig) {
    check_same_as(kernel, &optimize(kernel), args, config);
}

/// Run `kernel` and its rewritten form `optimized` on the interpreter with the same
/// arguments; panic with the first difference.
fn check_same_as(
    kernel: &Kernel,
    optimized: &Kernel,
    args: &[ArgValue],
    config: sarek_runtime::LaunchConfig,
) {
    validate(optimized).unwrap_or_else(|e| panic!("{}: optimised IR invalid: {e:?}", kernel.name));
    let interp = sarek_runtime::discover::open(Backend::Interp).expect("interp");
    let mut before = args.to_vec();
    let mut after = args.to_vec();
    let r1 = harness::run(interp.as_ref(), kernel, config, &mut before);
    let r2 = harness::run(interp.as_ref(), optimized, config, &mut after);
    match (&r1, &r2) {
        (Ok(_), Ok(_)) => {}
        (Err(a), Err(b)) => {
            assert_eq!(
                a.to_string(),
                b.to_string(),
                "{}: different faults",
                kernel.name
            );
            return;
        }
        _ => panic!("{}: before {r1:?}, after {r2:?}", kernel.name),
    }
    for c in harness::compare_args(kernel, &before, &after, &EXACT) {
        assert!(c.ok(), "{}: {}: {:?}", kernel.name, c.param, c.first);
    }
}

#[test]
fn corpus_results_are_unchanged() {
    let mut runs = 0;
    for path in files::corpus() {
        let text = std::fs::read_to_string(&path).unwrap();
        let directives = harness::parse_directives(&text).unwrap();
        if directives.is_empty() {
            continue;
        }
        let (_, kernels) = compile(&path.display().to_string(), &text);
        for d in directives {
            let kernel = kernels.iter().find(|k| k.name == d.kernel).unwrap();
            let args = harness::build_args(kernel, &Inputs::from_directive(&d)).unwrap();
            check_same(kernel, &args, d.config());
            runs += 1;
        }
    }
    assert!(runs >= 25, "the corpus has @run directives ({runs} found)");
}

/// Every `/` or `mod` of the kernel whose right operand is a literal.
fn constant_divisions(k: &Kernel) -> usize {
    let mut n = 0;
    visit::walk_block(&mut Count(&mut n), &k.body);
    n
}

struct Count<'a>(&'a mut usize);

impl visit::StmtVisitor for Count<'_> {
    fn var(&mut self, _: sarek_compiler::ir::VarId) {}
    fn expr(&mut self, _: sarek_compiler::diag::Span, e: &sarek_compiler::ir::Expr) {
        count(e, self.0);
    }
}

fn count(e: &sarek_compiler::ir::Expr, n: &mut usize) {
    if let ExprKind::Binary { op, lhs, rhs, .. } = &e.kind {
        if matches!(op, BinOp::Div | BinOp::Rem) && matches!(rhs.kind, ExprKind::Lit(_)) {
            *n += 1;
        }
        count(lhs, n);
        count(rhs, n);
    }
    match &e.kind {
        ExprKind::Unary { operand, .. } => count(operand, n),
        ExprKind::Index { index, .. } => count(index, n),
        ExprKind::Intrinsic { args, .. } | ExprKind::Call { args, .. } => {
            args.iter().for_each(|a| count(a, n))
        }
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => {
            count(cond, n);
            count(then_value, n);
            count(else_value, n);
        }
        _ => {}
    }
}

#[test]
fn divisions_by_powers_of_two_become_shifts() {
    let src = "let%kernel k (input : int32 vector) (out : int32 vector) (n : int32) =
  let tile = 16 in
  let i = global_thread_id in
  if i < n then begin
    let x = input.(i) in
    out.(i) <- x / tile + x mod 8 + thread_idx_x / 2 + x / (-1) + (x + 1) / 3
  end";
    let (_, kernels) = compile("div.sarek", src);
    let k = &kernels[0];
    assert_eq!(
        constant_divisions(k),
        4,
        "`tile` is a variable before propagation"
    );
    // `(x + 1) / 3` stays: 3 is no power of two.
    assert_eq!(constant_divisions(&optimize(k)), 1);
    let args = edge_args(k);
    check_same(k, &args, harness::launch_config(N, None, None));
}

const N: usize = 256;

/// int32's edge values first, then a deterministic spread.
fn edge_args(k: &Kernel) -> Vec<ArgValue> {
    let edges = [
        i32::MIN,
        i32::MIN + 1,
        i32::MIN + 15,
        i32::MIN + 16,
        i32::MAX,
        i32::MAX - 15,
        -1,
        0,
        1,
        -2,
        -15,
        -16,
        -17,
        15,
        16,
        17,
        -1 << 30,
        1 << 30,
    ];
    let mut rng = harness::Rng::new(14);
    let values: Vec<i32> = (0..N)
        .map(|i| {
            edges
                .get(i)
                .copied()
                .unwrap_or_else(|| rng.next_u64() as i32 >> (i % 31))
        })
        .collect();
    let vec_of = |v: Vec<i32>| {
        ArgValue::Vector(HostVector {
            len: N,
            columns: vec![Column::I32(v)],
        })
    };
    assert_eq!(k.params.len(), 3);
    vec![
        vec_of(values),
        vec_of(vec![7; N]),
        ArgValue::Scalar(sarek_compiler::types::Literal::I32(N as i32)),
    ]
}

/// Divisors the random kernels use: powers of two of both signs, ±1, min_int, and others.
const DIVISORS: &[&str] = &[
    "1",
    "(-1)",
    "2",
    "4",
    "16",
    "1024",
    "1073741824",
    "(-2)",
    "(-16)",
    "3",
    "7",
    "(-2147483647 - 1)",
];

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("x".to_string()),
        Just("i".to_string()),
        Just("c".to_string()),
        Just("thread_idx_x".to_string()),
        Just("block_dim_x".to_string()),
        (-40i32..40).prop_map(|v| format!("({v})")),
    ]
}

fn int_expr() -> impl Strategy<Value = String> {
    leaf().prop_recursive(4, 24, 2, |inner| {
        let d = prop::sample::select(DIVISORS);
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(&["+", "-", "*", "land"][..]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (inner.clone(), d.clone()).prop_map(|(a, d)| format!("({a} / {d})")),
            (inner.clone(), d.clone()).prop_map(|(a, d)| format!("({a} mod {d})")),
            (inner.clone(), d.clone()).prop_map(|(a, d)| format!("(let q = {d} in {a} / q)")),
            (inner, d).prop_map(|(a, d)| format!("(let q = {d} in {a} mod q)")),
        ]
    })
}

fn kernel_source() -> impl Strategy<Value = String> {
    (
        int_expr(),
        int_expr(),
        prop::sample::select(DIVISORS),
        prop::sample::select(DIVISORS),
    )
        .prop_map(|(e1, e2, c, d)| {
            format!(
                "let%kernel k (input : int32 vector) (out : int32 vector) (n : int32) =
  let c = {c} in
  let i = global_thread_id in
  if i < n then begin
    let x = input.(i) in
    let mut acc = {e1} in
    for j = 0 to 3 do
      acc := acc + (j / {d}) + ((x + j) mod {d}) + (acc / 2)
    done;
    out.(i) <- acc + {e2}
  end"
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_integer_kernels_are_unchanged(src in kernel_source()) {
        let (_, kernels) = compile("random.sarek", &src);
        let k = &kernels[0];
        let args = edge_args(k);
        check_same(k, &args, harness::launch_config(N, None, None));
    }
}

/// The number of `for` loops left in a block (nested ones included).
fn for_loops(block: &sarek_compiler::ir::Block) -> usize {
    let mut n = 0;
    visit::for_each_stmt(block, &mut |s| {
        if matches!(s.kind, sarek_compiler::ir::StmtKind::For { .. }) {
            n += 1;
        }
    });
    n
}

/// `[@unroll N]` loops with constant bounds are unrolled (inner loops first, `let`s renamed
/// per copy, `downto` counted down) and give the same results; loops that must stay (a
/// `break`-free body with an array, a trip count above the pragma, a non-constant bound) stay.
#[test]
fn requested_unrolling_keeps_results() {
    const SRC: &str = "let%kernel unrolled (o : float32 vector) (p : int32 vector) (n : int32) =
  let acc : float32 array = create_array 16 Local in
  for k = 0 to 15 do acc.(k) <- 0.0 done [@unroll 16];
  for i = 0 to 3 do
    for j = 3 downto 0 do
      let t = i * 4 + j in
      let mut u = t * 2 in
      if j > 1 then u := u + 1;
      acc.(t) <- acc.(t) +. float32 (u + thread_idx_x)
    done [@unroll 4]
  done [@unroll 4];
  for k = 0 to 15 do p.(thread_idx_x * 16 + k) <- k done [@unroll 8];
  for k = 0 to n - 1 do acc.(k) <- acc.(k) *. 2.0 done [@unroll 4];
  for k = 0 to 15 do o.(thread_idx_x * 16 + k) <- acc.(k) done [@unroll 16]
";
    let (_, kernels) = compile("unrolled.sarek", SRC);
    let k = &kernels[0];
    assert_eq!(for_loops(&k.body), 6);
    let optimized = optimize(k);
    // Left: the one above its pragma (16 > 8) and the one with a variable bound.
    assert_eq!(for_loops(&optimized.body), 2, "{optimized:#?}");
    let args = vec![
        ArgValue::Vector(HostVector {
            len: 64,
            columns: vec![Column::F32(vec![0.0; 64])],
        }),
        ArgValue::Vector(HostVector {
            len: 64,
            columns: vec![Column::I32(vec![0; 64])],
        }),
        ArgValue::Scalar(sarek_compiler::types::Literal::I32(10)),
    ];
    check_same(
        k,
        &args,
        sarek_runtime::LaunchConfig {
            grid: [1, 1, 1],
            block: [4, 1, 1],
        },
    );
}

/// The benchmark suite's kernels (`benches/gpu`) with their `@run` inputs, like the corpus:
/// the loop motions were written for them.
#[test]
fn benchmark_kernels_results_are_unchanged() {
    let dir = files::tests_dir("..").join("benches/gpu");
    let mut runs = 0;
    for path in files::sarek_files(&dir) {
        let text = std::fs::read_to_string(&path).unwrap();
        let (_, kernels) = compile(&path.display().to_string(), &text);
        for d in harness::parse_directives(&text).unwrap() {
            let kernel = kernels.iter().find(|k| k.name == d.kernel).unwrap();
            let args = harness::build_args(kernel, &Inputs::from_directive(&d)).unwrap();
            check_same(kernel, &args, d.config());
            runs += 1;
        }
    }
    assert!(runs >= 4, "benches/gpu has @run directives ({runs} found)");
}

/// Binary operations `op` in `block`'s loops (conditions and bodies, nested ones included)
/// whose operands satisfy `pick`.
fn ops_in_loops(
    block: &sarek_compiler::ir::Block,
    op: BinOp,
    pick: &dyn Fn(&sarek_compiler::ir::Expr, &sarek_compiler::ir::Expr) -> bool,
) -> usize {
    use sarek_compiler::ir::{Expr, StmtKind};
    fn count_ops(e: &Expr, op: BinOp, pick: &dyn Fn(&Expr, &Expr) -> bool) -> usize {
        let mut n = 0;
        let mut stack = vec![e];
        while let Some(e) = stack.pop() {
            match &e.kind {
                ExprKind::Binary {
                    op: o, lhs, rhs, ..
                } => {
                    n += usize::from(*o == op && pick(lhs, rhs));
                    stack.push(lhs);
                    stack.push(rhs);
                }
                ExprKind::Unary { operand, .. } => stack.push(operand),
                ExprKind::Index { index, .. } => stack.push(index),
                ExprKind::Intrinsic { args, .. } | ExprKind::Call { args, .. } => {
                    stack.extend(args)
                }
                _ => {}
            }
        }
        n
    }
    struct InLoops<'a> {
        n: usize,
        op: BinOp,
        pick: &'a dyn Fn(&Expr, &Expr) -> bool,
    }
    impl visit::StmtVisitor for InLoops<'_> {
        fn var(&mut self, _: sarek_compiler::ir::VarId) {}
        fn expr(&mut self, _: sarek_compiler::diag::Span, e: &Expr) {
            self.n += count_ops(e, self.op, self.pick);
        }
    }
    let mut n = 0;
    visit::for_each_stmt(block, &mut |s| match &s.kind {
        StmtKind::While { cond, body, .. } => {
            let mut v = InLoops { n: 0, op, pick };
            visit::StmtVisitor::expr(&mut v, s.span, cond);
            visit::walk_block(&mut v, body);
            n += v.n;
        }
        StmtKind::For { body, .. } => {
            let mut v = InLoops { n: 0, op, pick };
            visit::walk_block(&mut v, body);
            n += v.n;
        }
        _ => {}
    });
    n
}

/// `while` conditions and bodies share their squares after `optimize` (mandelbrot's
/// `zx *. zx` and `zy *. zy` are computed once per iteration, not twice), loop-invariant
/// products leave their loops, and the results stay the same.
#[test]
fn loop_motions_fire_and_keep_results() {
    const SRC: &str = "let%kernel k (o : float32 vector) (p : int32 vector) (n : int32) =
  let i = thread_idx_x in
  let cx = float32 i *. 0.01 -. 0.5 in
  let mut zx = 0.0 in
  let mut zy = 0.0 in
  let mut k = 0 in
  while k < 50 && zx *. zx +. zy *. zy <= 4.0 do
    let t = zx *. zx -. zy *. zy +. cx in
    zy := 2.0 *. zx *. zy +. 0.25;
    zx := t;
    k := k + 1
  done;
  o.(i) <- zx;
  let mut acc = 0 in
  for j = 0 to n - 1 do
    acc := acc + i * n + j + (n / 3) * (i + 7)
  done;
  p.(i) <- acc + k
";
    let (_, kernels) = compile("motions.sarek", SRC);
    let k = &kernels[0];
    let squares = |k: &Kernel| {
        ops_in_loops(
            &k.body,
            BinOp::Mul,
            &|a, b| matches!((&a.kind, &b.kind), (ExprKind::Var(x), ExprKind::Var(y)) if x == y),
        )
    };
    let products = |k: &Kernel| ops_in_loops(&k.body, BinOp::Mul, &|_, _| true);
    let optimized = optimize(k);
    assert_eq!(
        squares(k),
        4,
        "two squares in the condition, two in the body"
    );
    assert_eq!(squares(&optimized), 2, "{optimized:#?}");
    // In the loops: 2 squares and `2.0 *. zx *. zy` (2 products) remain; the `for` loop's
    // `i * n` and `(n / 3) * (i + 7)` leave it.
    assert_eq!(products(k), 8);
    assert_eq!(products(&optimized), 4, "{optimized:#?}");
    let args = vec![
        ArgValue::Vector(HostVector {
            len: 64,
            columns: vec![Column::F32(vec![0.0; 64])],
        }),
        ArgValue::Vector(HostVector {
            len: 64,
            columns: vec![Column::I32(vec![0; 64])],
        }),
        ArgValue::Scalar(sarek_compiler::types::Literal::I32(100_000)),
    ];
    check_same(
        k,
        &args,
        sarek_runtime::LaunchConfig {
            grid: [1, 1, 1],
            block: [64, 1, 1],
        },
    );
}

fn loop_expr(leaves: &'static [&'static str]) -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        prop::sample::select(leaves).prop_map(str::to_string),
        (-40i32..40).prop_map(|v| format!("({v})")),
        Just("2147483647".to_string()),
    ];
    leaf.prop_recursive(3, 16, 2, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(&["+", "-", "*", "land", "lxor"][..]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (inner.clone(), prop::sample::select(DIVISORS))
                .prop_map(|(a, d)| format!("({a} / {d})")),
            (inner, prop::sample::select(DIVISORS)).prop_map(|(a, d)| format!("({a} mod {d})")),
        ]
    })
}

/// A `while` loop whose body may recompute its condition's values before and after changing
/// their operands, around a `for` loop with invariant and variant terms (int32 edge values
/// wrap everywhere).
fn loop_kernel_source() -> impl Strategy<Value = String> {
    const OUTER: &[&str] = &["a", "b", "x", "c", "k"];
    const INNER: &[&str] = &["a", "x", "c", "i", "u"];
    (
        loop_expr(OUTER),
        loop_expr(OUTER),
        loop_expr(OUTER),
        loop_expr(INNER),
        loop_expr(INNER),
        prop::sample::select(DIVISORS),
        any::<bool>(),
    )
        .prop_map(|(cond, body, update, inv, inv2, c, reuse)| {
            // Half the kernels use the condition's value itself in the body.
            let body = if reuse {
                format!("{cond} + {body}")
            } else {
                body
            };
            format!(
                "let%kernel k (input : int32 vector) (out : int32 vector) (n : int32) =
  let c = {c} in
  let i = global_thread_id in
  if i < n then begin
    let x = input.(i) in
    let mut a = x in
    let mut b = x * 3 in
    let mut k = 0 in
    while k < 4 && {cond} <> 5 do
      let u = {body} in
      b := b + u;
      a := {update};
      for j = 0 to 2 do
        b := b + {inv} + j * {inv2} + i + 1
      done;
      k := k + 1
    done;
    out.(i) <- a + b + k
  end"
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_loop_kernels_are_unchanged(src in loop_kernel_source()) {
        let (_, kernels) = compile("random_loops.sarek", &src);
        let k = &kernels[0];
        let args = edge_args(k);
        check_same(k, &args, harness::launch_config(N, None, None));
    }
}

/// Counted `while` loops as the unrolling pass sees them: (start, step, bound) triples that
/// terminate, some only through int32 wrapping (`5`, then `5 + max_int` wraps below the
/// bound, ...), some with the guard's look-ahead wrapping past the bound.
const COUNTED: &[(&str, &str, &str)] = &[
    ("x land 63", "3", "n"),
    ("gid", "7", "200"),
    ("(-5)", "64", "(x land 127)"),
    ("5", "2147483647", "1000"),
    ("(2147483647 - 100)", "7", "(2147483647 - 3)"),
    ("(-300)", "(2147483647 - 2)", "100"),
    ("(gid - 100)", "5", "(x land 31)"),
];

fn counted_loop_source() -> impl Strategy<Value = String> {
    const LEAVES: &[&str] = &["acc", "i", "x", "v", "s"];
    (
        prop::sample::select(COUNTED),
        loop_expr(LEAVES),
        loop_expr(LEAVES),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|((start, step, bound), e1, e2, flip, branch)| {
            let test = if flip {
                format!("{bound} > i")
            } else {
                format!("i < {bound}")
            };
            let extra = if branch {
                format!("if v land 1 = 0 then acc := acc lxor {e2} else out.(gid) <- v;")
            } else {
                String::new()
            };
            format!(
                "let%kernel k (input : int32 vector) (out : int32 vector) (n : int32) =
  let gid = global_thread_id in
  let x = input.(gid) in
  let s = {step} in
  let mut acc = 0 in
  let mut i = {start} in
  while {test} do
    let v = input.(i land 255) in
    acc := acc + {e1};
    {extra}
    i := i + s
  done;
  out.(gid) <- acc + i"
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_counted_loops_are_unchanged(src in counted_loop_source()) {
        let (_, kernels) = compile("random_counted.sarek", &src);
        let k = &kernels[0];
        let args = edge_args(k);
        check_same(k, &args, harness::launch_config(N, None, None));
    }
}

/// The grid-stride loop of `sum_atomic` is unrolled: eight loads per test of the bound.
#[test]
fn grid_stride_loop_is_unrolled() {
    let text = std::fs::read_to_string(files::tests_dir("..").join("benches/gpu/sum_atomic.sarek"))
        .unwrap();
    let (_, kernels) = compile("sum_atomic.sarek", &text);
    let loads = |k: &Kernel| {
        let mut per_loop = Vec::new();
        visit::for_each_stmt(&k.body, &mut |s| {
            if let sarek_compiler::ir::StmtKind::While { body, .. } = &s.kind {
                let mut n = 0;
                visit::for_each_stmt(body, &mut |s| {
                    if let sarek_compiler::ir::StmtKind::Assign { value, .. } = &s.kind {
                        n += usize::from(matches!(
                            &value.kind,
                            ExprKind::Binary { rhs, .. }
                                if matches!(rhs.kind, ExprKind::Index { base, .. } if base == k.params[0])
                        ));
                    }
                });
                per_loop.push(n);
            }
        });
        per_loop
    };
    // Loads of `input` per loop: the grid-stride loop, then the tree's loop; after, the
    // unrolled loop and its remainder, and no tree loop (8 constant trips, unrolled).
    assert_eq!(loads(&kernels[0]), vec![1, 0]);
    assert_eq!(loads(&optimize(&kernels[0])), vec![8, 1]);
}

/// A `while` condition that keeps its variable non-negative (`stride > 0`) makes the body's
/// `stride / 2` a single arithmetic shift (the general form needs the sign bias); after the
/// variable changes, or outside the loop, the general form stays.
#[test]
fn loop_guard_makes_division_a_plain_shift() {
    let src = "let%kernel k (input : int32 vector) (out : int32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then begin
    let x = input.(i) in
    let mut stride = x in
    let mut acc = 0 in
    while stride > 0 && acc < 1000 do
      acc := acc + stride / 4;
      stride := stride / 2;
      acc := acc + stride / 8
    done;
    out.(i) <- acc + stride / 2
  end";
    let (_, kernels) = compile("guard.sarek", src);
    let k = &kernels[0];
    let optimized = optimize(k);
    assert_eq!(constant_divisions(&optimized), 0);
    // Shifts by the divisor only (`asr 2`, `asr 1`) inside the guard; the sign-biased form
    // (`asr 31`, `lsr`, `asr`) for `stride / 8` after the assignment and `stride / 2` after
    // the loop.
    let shifts = |op: BinOp| ops_in_loops(&optimized.body, op, &|_, _| true);
    assert_eq!(shifts(BinOp::AShr), 4, "{optimized:#?}");
    assert_eq!(shifts(BinOp::LShr), 1, "{optimized:#?}");
    let args = edge_args(k);
    check_same(k, &args, harness::launch_config(N, None, None));
    // The C family's subset: only the guarded variable's divisions, as plain shifts.
    let mut guarded = k.clone();
    assert!(shift_guarded_divisions(&mut guarded));
    assert_eq!(constant_divisions(&guarded), 2, "{guarded:#?}");
    let shifts = ops_in_loops(&guarded.body, BinOp::AShr, &|_, _| true);
    assert_eq!(shifts, 2, "{guarded:#?}");
    check_same_as(k, &guarded, &args, harness::launch_config(N, None, None));
}

/// `while` loops with a constant trip count (a literal-bound counter, a literal bound, one
/// literal step at the end of the body) are unrolled completely, also when the step wraps;
/// the others (too many trips, a counter changed before the loop) stay loops.
#[test]
fn constant_trip_loops_are_unrolled() {
    const SRC: &str = "let%kernel k (input : int32 vector) (out : int32 vector) (n : int32) =
  let i = global_thread_id in
  let x = input.(i) in
  let mut acc = x in
  let mut s = 128 in
  while s > 0 do
    let t = acc + s in
    acc := (t lxor x) + (if t land 1 = 0 then s else 3);
    block_barrier ();
    s := s / 2
  done;
  let mut w = 1073741824 in
  while w > 0 do acc := acc + w; w := w * 2 done;
  let mut k = 10 in
  while 0 < k do acc := acc * 3 + k; k := k - 3 done;
  let mut z = 5 in
  while z < 0 do acc := acc + 1; z := z + 1 done;
  let mut b = 1 in
  while b <> 0 do acc := acc lxor b; b := b lsl 1 done;
  let mut c = 0 in
  c := x land 7;
  while c < 4 do acc := acc + c; c := c + 1 done;
  out.(i) <- acc + s + w + k + z + b + c
";
    let (_, kernels) = compile("trips.sarek", SRC);
    let k = &kernels[0];
    let whiles = |k: &Kernel| {
        let mut n = 0;
        visit::for_each_stmt(&k.body, &mut |s| {
            n += usize::from(matches!(s.kind, sarek_compiler::ir::StmtKind::While { .. }));
        });
        n
    };
    assert_eq!(whiles(k), 6);
    // Left: `b` (32 trips) and `c` (assigned after its `let`).
    let optimized = optimize(k);
    assert_eq!(whiles(&optimized), 2, "{optimized:#?}");
    let args = edge_args(k);
    check_same(k, &args, harness::launch_config(N, None, None));
}
