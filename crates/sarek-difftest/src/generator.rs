//! Random well-typed, terminating kernels, written as source text from LANGUAGE.md.
//!
//! One seed gives one [`Case`]: a program (record and variant types, helpers, one kernel),
//! its launch (block, grid, vector length) and its scalar arguments. The generator keeps four
//! promises by construction, so that any disagreement between backends is a defect:
//!
//! - **No undefined behaviour in the language's own terms**: integer divisors are never zero
//!   (`-1` and `min_int` are fine: they wrap), every index is reduced into its vector or array,
//!   every loop has a small constant trip count (or deliberately sits at `max_int`/`min_int`),
//!   recursive helpers get a depth no larger than their `[@sarek.inline N]`.
//! - **Determinism**: each thread writes outputs only at its own index; other threads' data is
//!   read only through shared memory between barriers (in uniform control flow) or through
//!   atomics whose result does not depend on order (commutative updates whose old value is
//!   ignored, or atomics on the thread's own slot).
//! - **Floats within tolerance**: every float expression is one of three classes. *Leaf* and
//!   *exact* values are bit-identical on every conforming target (reads, literals, conversions
//!   from integers, `floor`..., `min`/`max`, and one `+ - *` of two leaves: no contraction or
//!   reassociation can touch them); only those reach discontinuous operations (comparisons,
//!   float-to-int conversion, `floor`, `mod`). *Bounded* values are within [-1, 1] and are
//!   built only from operations whose error stays far inside the tolerance there
//!   (`sin`, `exp x *. 0.25`, `(a +. b) *. 0.5`, ...); they reach stores and other bounded
//!   operations only. Non-finite values (NaN, infinities, out-of-range magnitudes) come from
//!   dedicated scalar arguments and go only to conversions and stores.
//! - **Convergence**: barriers, supersteps and warp operations appear only where the control
//!   flow is uniform by the front end's own rule (conditions built from literals, scalar
//!   parameters, `length` and block dimensions).

use crate::tree::{Kind, Node, Ty};
use std::collections::BTreeSet;

/// splitmix64: the generator's only source of randomness, so a seed is a kernel forever.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut r = Rng(seed ^ 0x5EED_D1FF_7E57_0001);
        r.next_u64();
        r
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, n).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }
    /// True with probability `p` percent.
    pub fn pct(&mut self, p: usize) -> bool {
        self.below(100) < p
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

/// One generated kernel and how to launch it.
#[derive(Clone, Debug)]
pub struct Case {
    pub seed: u64,
    pub tree: Node,
    pub kernel: String,
    /// Length of every vector (= threads launched).
    pub size: usize,
    pub block: u32,
    pub grid: u32,
    /// Scalar arguments, `NAME=VALUE` as the command line writes them.
    pub args: Vec<(String, String)>,
    /// What the kernel uses (`int64`, `warp`, `shared`, ...), for the summary.
    pub features: BTreeSet<&'static str>,
}

impl Case {
    /// The `.sarek` file: a comment with the seed and an `@run` directive, then the program.
    pub fn source(&self) -> String {
        let args: String = self
            .args
            .iter()
            .filter(|(n, _)| self.has_param(n))
            .map(|(n, v)| format!(" {n}={v}"))
            .collect();
        format!(
            "(* sarek-difftest: generated from seed {seed}; inputs use --seed {seed}.\n   @run {k} size={size} block={block} grid={grid}{args} *)\n\n{body}\n",
            seed = self.seed,
            k = self.kernel,
            size = self.size,
            block = self.block,
            grid = self.grid,
            body = self.tree.print()
        )
    }

    /// Whether the kernel still declares parameter `name` (the shrinker may drop some).
    pub fn has_param(&self, name: &str) -> bool {
        let kernel = self.tree.children.last().expect("a kernel item");
        kernel
            .children
            .iter()
            .any(|p| p.kind == Kind::Param && p.text.starts_with(&format!("({name} :")))
    }

    /// The scalar arguments the (possibly shrunk) kernel still takes.
    pub fn live_args(&self) -> Vec<(String, String)> {
        self.args
            .iter()
            .filter(|(n, _)| self.has_param(n))
            .cloned()
            .collect()
    }
}

/// Float classes (see the module docs). Integers and bools are always exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    /// Bit-identical everywhere and safe as an operand of `+ - *`.
    Leaf,
    /// Bit-identical everywhere, but a sum or product: not an operand of `+ -`.
    Exact,
    /// Within [-1, 1], within tolerance of the reference.
    Bounded,
}

/// What the caller needs of a float expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    Leaf,
    Exact,
    /// |v| <= 1, any class.
    Unit,
}

/// What is known of a generated expression.
#[derive(Clone, Copy, Debug)]
struct Info {
    class: Class,
    /// Known |v| <= 1 (floats).
    unit: bool,
    /// The same value in every thread of the launch (by the front end's rule).
    uniform: bool,
}

impl Info {
    fn exact(uniform: bool) -> Info {
        Info {
            class: Class::Leaf,
            unit: false,
            uniform,
        }
    }
}

#[derive(Clone, Debug)]
struct Var {
    name: String,
    ty: Ty,
    info: Info,
    mutable: bool,
}

/// A vector parameter the kernel declares.
#[derive(Clone, Debug, PartialEq, Eq)]
enum VecKind {
    /// Read anywhere, never written.
    Input(Ty),
    /// Written (and read) at the thread's own index only.
    Output(Ty),
    /// Commutative atomics from every thread, never read.
    Accumulator(Ty),
    /// Atomics on the thread's own slot (their old values are deterministic).
    Own,
    InRecord,
    OutRecord,
    InVariant,
    OutVariant,
    OutTuple,
}

#[derive(Clone, Debug)]
struct VecParam {
    name: String,
    kind: VecKind,
}

#[derive(Clone, Debug)]
enum HelperKind {
    /// `name (a : t) (b : t) : t`, pure, over exact ints or bounded floats.
    Binary(Ty),
    /// `let rec name (n : int32) (x : int32) : int32 [@sarek.inline depth]`.
    Recursive { depth: u32 },
    /// Tail-recursive `name (k : int32) (acc : int32) : int32`.
    Tail,
    /// `pick (c : bool) (a : 'a) (b : 'a) : 'a`.
    Pick,
    /// `get (v : 'a vector) (k : int32) : 'a`.
    Get,
    /// `put (v : 'a vector) (k : int32) (x : 'a) : unit`.
    Put,
    /// `name (a : int32) (b : int32) : int32 * int32` = quotient and remainder (b non-zero).
    DivMod,
    /// `name (r : r0) : int32`.
    RecordFn,
}

#[derive(Clone, Debug)]
struct Helper {
    name: String,
    kind: HelperKind,
}

/// Where code is being generated.
#[derive(Clone, Copy, Debug)]
struct Ctx {
    /// Control flow here is uniform: barriers and warp operations are allowed.
    uniform_flow: bool,
    /// At the kernel's top level (shared-memory phases go only there).
    top: bool,
    /// Inside a helper body: no thread indices, vectors or kernel parameters.
    helper: bool,
    /// Loop nesting (bounds the work per thread).
    loops: u32,
}

/// Knobs of one generation run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Allow int64 and float64 (refused by WGSL and, for float64, Metal).
    pub wide: bool,
    /// Warp operations (refused where the device has no suitable subgroups).
    pub warps: bool,
    /// Let integer operations have only constant operands. naga's constant evaluation
    /// rejects the overflowing ones (issue 17, a known defect); when false, one operand of
    /// every such operation is made opaque (`(c + (si land 0))`) so WGSL stays testable.
    pub constant_ops: bool,
}

const INT32_EDGES: &[&str] = &[
    "0",
    "1",
    "(-1)",
    "2",
    "3",
    "7",
    "31",
    "32",
    "33",
    "63",
    "64",
    "255",
    "1000",
    "65535",
    "123456789",
    "2147483647",
    "(-2147483648)",
    "(-2147483647)",
    "0x7fffffff",
    "0xffffffff",
    "0x80000000",
    "0xff",
    "0b1010",
    "0o17",
    "1_000",
    "1l",
];
const INT64_EDGES: &[&str] = &[
    "0L",
    "1L",
    "(-1L)",
    "31L",
    "32L",
    "63L",
    "64L",
    "4294967296L",
    "9223372036854775807L",
    "(-9223372036854775808L)",
    "0x8000000000000000L",
    "0xffffffffffffffffL",
    "0xffffffffL",
    "1000000007L",
];
const FLOAT_LITS: &[&str] = &[
    "0.0", "1.0", "0.5", "0.25", "0.75", "(-0.5)", "(-1.0)", "0.125", "0.1", "0.3", "(-0.7)",
    "1.5", "2.5", "(-2.5)", "3.0", "1e-3", "100.0", "0.999", "1.",
];

pub fn generate(seed: u64, opts: &Options) -> Case {
    let mut g = Gen {
        rng: Rng::new(seed),
        wide: opts.wide,
        warps: opts.warps,
        constant_ops: opts.constant_ops,
        opaque_int: None,
        acc_families: Vec::new(),
        vars: Vec::new(),
        fresh: 0,
        vectors: Vec::new(),
        helpers: Vec::new(),
        features: BTreeSet::new(),
        size: 0,
        block: 0,
        budget: 0,
        scalars: Vec::new(),
    };
    g.case(seed)
}

struct Gen {
    rng: Rng,
    wide: bool,
    warps: bool,
    constant_ops: bool,
    /// An int32 in scope that is not a constant (`si` in the kernel, a parameter in helpers).
    opaque_int: Option<&'static str>,
    /// The atomic family chosen for each accumulator vector.
    acc_families: Vec<(String, usize)>,
    vars: Vec<Var>,
    fresh: u32,
    vectors: Vec<VecParam>,
    helpers: Vec<Helper>,
    features: BTreeSet<&'static str>,
    size: usize,
    block: u32,
    /// Statements left to generate (bounds the kernel's size).
    budget: i32,
    /// Scalar parameters: name, type, class info.
    scalars: Vec<(String, Ty, Info)>,
}

impl Gen {
    fn name(&mut self, base: &str) -> String {
        self.fresh += 1;
        format!("{base}{}", self.fresh)
    }

    fn lit_of(&mut self, ty: Ty) -> Node {
        match ty {
            Ty::Bool => Node::lit(ty, *self.rng.pick(&["true", "false"])),
            Ty::I32 => {
                if self.rng.pct(50) {
                    Node::lit(ty, *self.rng.pick(INT32_EDGES))
                } else {
                    let v = self.rng.next_u64() as i32 >> self.rng.below(31);
                    Node::lit(
                        ty,
                        if v < 0 {
                            format!("({v})")
                        } else {
                            v.to_string()
                        },
                    )
                }
            }
            Ty::I64 => {
                if self.rng.pct(50) {
                    Node::lit(ty, *self.rng.pick(INT64_EDGES))
                } else {
                    let v = self.rng.next_u64() as i64 >> self.rng.below(63);
                    Node::lit(
                        ty,
                        if v < 0 {
                            format!("({v}L)")
                        } else {
                            format!("{v}L")
                        },
                    )
                }
            }
            Ty::F32 | Ty::F64 => {
                let base = *self.rng.pick(FLOAT_LITS);
                let text = if ty == Ty::F64 && self.rng.pct(60) {
                    // An explicit float64 literal; otherwise inference makes it float64.
                    match base.strip_prefix("(").and_then(|b| b.strip_suffix(")")) {
                        Some(inner) => format!("({inner}d)"),
                        None => format!("{base}d"),
                    }
                } else {
                    base.to_string()
                };
                Node::lit(ty, text)
            }
        }
    }

    fn lit_is_unit(text: &str) -> bool {
        let t = text
            .trim_matches(|c| c == '(' || c == ')')
            .trim_end_matches('d');
        t.parse::<f64>().is_ok_and(|v| v.abs() <= 1.0)
    }

    fn has_vec(&self, kind: &VecKind) -> Option<String> {
        let found: Vec<&VecParam> = self.vectors.iter().filter(|v| &v.kind == kind).collect();
        found.first().map(|v| v.name.clone())
    }

    /// A safe index into a vector of the launch's length.
    fn index(&mut self, ctx: Ctx) -> (Node, bool) {
        if self.rng.pct(35) {
            return (Node::other("i", vec![]), false);
        }
        let (e, info) = self.int(Ty::I32, ctx, 2);
        let n = self.size;
        let text = if n.is_power_of_two() {
            if self.rng.pct(30) {
                "($0 land (length out_i - 1))".to_string()
            } else {
                format!("($0 land {})", n - 1)
            }
        } else {
            format!("((($0 mod {n}) + {n}) mod {n})")
        };
        (Node::other(text, vec![e]), info.uniform)
    }

    fn shared_index(&mut self, ctx: Ctx) -> Node {
        let (e, _) = self.int(Ty::I32, ctx, 1);
        let b = self.block;
        let text = if b.is_power_of_two() {
            format!("($0 land {})", b - 1)
        } else {
            format!("((($0 mod {b}) + {b}) mod {b})")
        };
        Node::other(text, vec![e])
    }

    // ---------------------------------------------------------------- expressions

    fn var_of(&mut self, ctx: Ctx, pred: impl Fn(&Var) -> bool) -> Option<(Node, Ty, Info)> {
        let vars: Vec<&Var> = self
            .vars
            .iter()
            .filter(|v| pred(v) && (!ctx.helper || v.name.starts_with('p')))
            .collect();
        if vars.is_empty() {
            return None;
        }
        let v = vars[self.rng.below(vars.len())].clone();
        // `ref` locals are read with `!`.
        let text = if v.name.starts_with("rf") {
            format!("(!{})", v.name)
        } else {
            v.name.clone()
        };
        Some((Node::expr(v.ty, text, vec![]), v.ty, v.info))
    }

    /// An integer expression of `ty`.
    fn int(&mut self, ty: Ty, ctx: Ctx, depth: u32) -> (Node, Info) {
        let (n, i) = self.int_inner(ty, ctx, depth);
        (self.opaque_operands(n), i)
    }

    /// Unless constant operations are wanted: an operation whose operands are all constant
    /// gets its first integer operand made opaque to constant evaluation.
    fn opaque_operands(&mut self, mut n: Node) -> Node {
        let Some(z) = self.opaque_int else { return n };
        if self.constant_ops || n.children.is_empty() || !n.children.iter().all(is_constant) {
            return n;
        }
        if let Some(k) = n
            .children
            .iter()
            .position(|c| c.ty().is_some_and(Ty::is_int))
        {
            let c = n.children[k].clone();
            let text = if c.ty() == Some(Ty::I64) {
                format!("($0 + (int64 ({z} land 0)))")
            } else {
                format!("($0 + ({z} land 0))")
            };
            let ty = c.ty().expect("integer");
            n.children[k] = Node::expr(ty, text, vec![c]);
        }
        n
    }

    fn int_inner(&mut self, ty: Ty, ctx: Ctx, depth: u32) -> (Node, Info) {
        if depth == 0 || self.rng.pct(25) {
            return self.int_leaf(ty, ctx);
        }
        let d = depth - 1;
        let c = self.rng.below(100);
        let s = ty.name();
        let _ = s;
        match c {
            0..=29 => {
                let ops = ["+", "-", "*", "land", "lor", "lxor"];
                let op = *self.rng.pick(&ops);
                let (a, ia) = self.int(ty, ctx, d);
                let (b, ib) = self.int(ty, ctx, d);
                let text = if self.rng.pct(5) && op != "land" && op != "lor" && op != "lxor" {
                    format!("($0 {op}. $1)") // the dotted forms on integers
                } else {
                    format!("($0 {op} $1)")
                };
                (Node::expr(ty, text, vec![a, b]), both(ia, ib))
            }
            30..=44 => {
                // Shifts by any count: the count is masked to the width on every target.
                let op = *self.rng.pick(&["lsl", "lsr", "asr"]);
                let (a, ia) = self.int(ty, ctx, d);
                let (b, ib) = if self.rng.pct(40) {
                    let l = self.lit_of(Ty::I32);
                    (l, Info::exact(true))
                } else {
                    self.int(Ty::I32, ctx, d)
                };
                // A constant count past the width is rejected by naga (issue 17): opaque
                // unless constant operations are wanted.
                let b = match self.opaque_int {
                    Some(z) if !self.constant_ops && is_constant(&b) => {
                        Node::expr(Ty::I32, format!("($0 + ({z} land 0))"), vec![b])
                    }
                    _ => b,
                };
                self.features.insert("shift");
                (
                    Node::expr(ty, format!("($0 {op} $1)"), vec![a, b]),
                    both(ia, ib),
                )
            }
            45..=56 => {
                let op = *self.rng.pick(&["/", "mod"]);
                let (a, ia) = self.int(ty, ctx, d);
                let (b, ib) = if self.rng.pct(40) {
                    let lits: &[&str] = if ty == Ty::I32 {
                        &[
                            "(-1)",
                            "1",
                            "2",
                            "7",
                            "(-3)",
                            "1000",
                            "(-2147483648)",
                            "0x80000000",
                        ]
                    } else {
                        &[
                            "(-1L)",
                            "1L",
                            "3L",
                            "(-9223372036854775808L)",
                            "4294967296L",
                        ]
                    };
                    (Node::lit(ty, *self.rng.pick(lits)), Info::exact(true))
                } else {
                    let (e, i) = self.int(ty, ctx, d);
                    let one = if ty == Ty::I32 { "(-1)" } else { "(-1L)" };
                    let zero = if ty == Ty::I32 { "0" } else { "0L" };
                    (
                        Node::other(format!("(if $0 = {zero} then {one} else $0)"), vec![e]),
                        i,
                    )
                };
                self.features.insert("divmod");
                (
                    Node::expr(ty, format!("($0 {op} $1)"), vec![a, b]),
                    both(ia, ib),
                )
            }
            57..=66 => {
                let f = *self.rng.pick(&[
                    "(- $0)",
                    "(lnot $0)",
                    "(abs $0)",
                    "(clz $0)",
                    "(popcount $0)",
                    "(~- $0)",
                ]);
                let f = if ty == Ty::I32 && self.rng.pct(15) {
                    *self
                        .rng
                        .pick(&["(Int32.neg $0)", "(Int32.lognot $0)", "(Int32.abs $0)"])
                } else {
                    f
                };
                let (a, ia) = self.int(ty, ctx, d);
                let a = if f.contains('-') || f.contains("neg") {
                    no_negated_radix(a)
                } else {
                    a
                };
                (Node::expr(ty, f, vec![a]), ia)
            }
            67..=71 => {
                let f = *self.rng.pick(&["(min $0 $1)", "(max $0 $1)"]);
                let (a, ia) = self.int(ty, ctx, d);
                let (b, ib) = self.int(ty, ctx, d);
                (Node::expr(ty, f, vec![a, b]), both(ia, ib))
            }
            72..=79 => {
                // Conversions: from the other integer width, or from an exact float
                // (truncating, saturating; NaN and infinities through the special arguments).
                let from = self.pick_num_type(ty);
                let conv = if ty == Ty::I32 {
                    *self
                        .rng
                        .pick(&["(int32 $0)", "(int32 $0)", "(Int32.of_int $0)"])
                } else {
                    "(int64 $0)"
                };
                let conv = if conv.contains("of_int") && from != Ty::I32 {
                    "(int32 $0)"
                } else {
                    conv
                };
                let (a, ia) = if from.is_float() {
                    self.features.insert("float-to-int");
                    if self.rng.pct(30) && !ctx.helper {
                        self.special(from)
                    } else {
                        self.float(from, Want::Exact, ctx, d)
                    }
                } else {
                    self.int(from, ctx, d)
                };
                (Node::expr(ty, conv, vec![a]), Info::exact(ia.uniform))
            }
            80..=87 => {
                let (c, ic) = self.boolean(ctx, d);
                let (a, ia) = self.int(ty, ctx, d);
                let (b, ib) = self.int(ty, ctx, d);
                (
                    Node::expr(ty, "(if $0 then $1 else $2)", vec![c, a, b]),
                    both(ic, both(ia, ib)),
                )
            }
            88..=91 => {
                // A match on an integer with literal patterns.
                let (s, is) = self.int(Ty::I32, ctx, d);
                let (a, ia) = self.int(ty, ctx, d);
                let (b, ib) = self.int(ty, ctx, d);
                let (e, ie) = self.int(ty, ctx, d);
                (
                    Node::expr(
                        ty,
                        "(match $0 land 3 with 0 -> $1 | 1 -> $2 | _ -> $3)",
                        vec![s, a, b, e],
                    ),
                    both(is, both(ia, both(ib, ie))),
                )
            }
            _ => self.call_int(ty, ctx, d),
        }
    }

    fn pick_num_type(&mut self, not: Ty) -> Ty {
        let mut tys = vec![Ty::I32, Ty::F32];
        if self.wide {
            tys.extend([Ty::I64, Ty::F64]);
        }
        tys.retain(|t| *t != not);
        *self.rng.pick(&tys)
    }

    fn int_leaf(&mut self, ty: Ty, ctx: Ctx) -> (Node, Info) {
        let c = self.rng.below(100);
        if c < 30 {
            return (self.lit_of(ty), Info::exact(true));
        }
        if c < 60
            && let Some((n, _, info)) = self.var_of(ctx, |v| v.ty == ty)
        {
            return (n, info);
        }
        if ctx.helper {
            return (self.lit_of(ty), Info::exact(true));
        }
        if c < 70
            && let Some((name, _, info)) = self.scalars.iter().find(|(_, t, _)| *t == ty).cloned()
        {
            return (Node::expr(ty, name, vec![]), info);
        }
        if ty == Ty::I32 && c < 80 {
            let g = *self.rng.pick(&[
                ("i", false),
                ("t", false),
                ("thread_idx_x", false),
                ("block_idx_x", false),
                ("global_thread_id", false),
                ("block_dim_x", true),
                ("grid_dim_x", true),
                ("(length in_i)", true),
                ("Std.thread_idx_x", false),
            ]);
            if !(g.0.contains("in_i") && self.has_vec(&VecKind::Input(Ty::I32)).is_none()) {
                return (Node::expr(ty, g.0, vec![]), Info::exact(g.1));
            }
        }
        if c < 92
            && let Some(v) = self.has_vec(&VecKind::Input(ty))
        {
            let (idx, _) = self.index(ctx);
            return (
                Node::expr(ty, format!("{v}.($0)"), vec![idx]),
                Info::exact(false),
            );
        }
        if ty == Ty::I32
            && let Some(v) = self.has_vec(&VecKind::InRecord)
        {
            let (idx, _) = self.index(ctx);
            return (
                Node::expr(ty, format!("{v}.($0).f0"), vec![idx]),
                Info::exact(false),
            );
        }
        if let Some(v) = self.has_vec(&VecKind::Output(ty)) {
            return (
                Node::expr(ty, format!("{v}.(i)"), vec![]),
                Info::exact(false),
            );
        }
        (self.lit_of(ty), Info::exact(true))
    }

    fn call_int(&mut self, ty: Ty, ctx: Ctx, d: u32) -> (Node, Info) {
        let cands: Vec<Helper> = self
            .helpers
            .iter()
            .filter(|h| match &h.kind {
                HelperKind::Binary(t) => *t == ty,
                HelperKind::Recursive { .. } | HelperKind::Tail | HelperKind::RecordFn => {
                    ty == Ty::I32
                }
                HelperKind::Pick => true,
                HelperKind::Get => !ctx.helper,
                HelperKind::DivMod => ty == Ty::I32,
                HelperKind::Put => false,
            })
            .filter(|h| !matches!(h.kind, HelperKind::RecordFn) || !ctx.helper)
            .cloned()
            .collect();
        if cands.is_empty() || ctx.helper {
            return self.int_leaf(ty, ctx);
        }
        let h = cands[self.rng.below(cands.len())].clone();
        self.features.insert("helper");
        match h.kind {
            HelperKind::Binary(_) => {
                let (a, ia) = self.int(ty, ctx, d);
                let (b, ib) = self.int(ty, ctx, d);
                (
                    Node::expr(ty, format!("({} $0 $1)", h.name), vec![a, b]),
                    both(ia, ib),
                )
            }
            HelperKind::Recursive { depth } => {
                self.features.insert("recursion");
                let (n, i_n) = self.int(Ty::I32, ctx, d);
                let (x, ix) = self.int(Ty::I32, ctx, d);
                // Depth within the declared inlining depth: n land (2^k - 1) <= depth.
                let mask = if depth >= 3 { 3 } else { 1 };
                (
                    Node::expr(
                        ty,
                        format!("({} $0 $1)", h.name),
                        vec![Node::other(format!("($0 land {mask})"), vec![n]), x],
                    ),
                    both(i_n, ix),
                )
            }
            HelperKind::Tail => {
                self.features.insert("recursion");
                let (n, i_n) = self.int(Ty::I32, ctx, d);
                let (x, ix) = self.int(Ty::I32, ctx, d);
                (
                    Node::expr(
                        ty,
                        format!("({} $0 $1)", h.name),
                        vec![Node::other("($0 land 15)", vec![n]), x],
                    ),
                    both(i_n, ix),
                )
            }
            HelperKind::Pick => {
                self.features.insert("polymorphic");
                let (c, ic) = self.boolean(ctx, d);
                let (a, ia) = self.int(ty, ctx, d);
                let (b, ib) = self.int(ty, ctx, d);
                (
                    Node::expr(ty, format!("({} $0 $1 $2)", h.name), vec![c, a, b]),
                    both(ic, both(ia, ib)),
                )
            }
            HelperKind::Get => match self.has_vec(&VecKind::Input(ty)) {
                Some(v) => {
                    self.features.insert("polymorphic");
                    let (idx, _) = self.index(ctx);
                    (
                        Node::expr(ty, format!("({} {v} $0)", h.name), vec![idx]),
                        Info::exact(false),
                    )
                }
                None => self.int_leaf(ty, ctx),
            },
            HelperKind::DivMod => {
                let (a, ia) = self.int(Ty::I32, ctx, d);
                let (b, ib) = self.int(Ty::I32, ctx, d);
                let proj = *self.rng.pick(&["fst", "snd"]);
                (
                    Node::expr(
                        ty,
                        format!("({proj} ({} $0 $1))", h.name),
                        vec![a, Node::other("(if $0 = 0 then 7 else $0)", vec![b])],
                    ),
                    both(ia, ib),
                )
            }
            HelperKind::RecordFn => {
                let (r, ir) = self.record_value(ctx, d);
                (
                    Node::expr(ty, format!("({} $0)", h.name), vec![r]),
                    Info::exact(ir),
                )
            }
            HelperKind::Put => unreachable!("filtered above"),
        }
    }

    /// A record value: a literal record or an input record vector element.
    fn record_value(&mut self, ctx: Ctx, d: u32) -> (Node, bool) {
        if let Some(v) = self.has_vec(&VecKind::InRecord)
            && self.rng.pct(50)
        {
            let (idx, _) = self.index(ctx);
            return (Node::other(format!("{v}.($0)"), vec![idx]), false);
        }
        let (a, ia) = self.int(Ty::I32, ctx, d);
        let (b, ib) = self.float(Ty::F32, Want::Unit, ctx, d);
        let (c, ic) = self.boolean(ctx, d);
        let mut text = "{ f0 = $0; f1 = $1; f2 = $2".to_string();
        let mut kids = vec![a, b, c];
        let mut uniform = ia.uniform && ib.uniform && ic.uniform;
        if self.wide {
            let (e, ie) = self.int(Ty::I64, ctx, d);
            let (f, iff) = self.float(Ty::F64, Want::Unit, ctx, d);
            text.push_str("; f3 = $3; f4 = $4");
            kids.extend([e, f]);
            uniform &= ie.uniform && iff.uniform;
        }
        text.push_str(" }");
        (Node::other(text, kids), uniform)
    }

    /// A variant value (constructed).
    fn variant_value(&mut self, ctx: Ctx, d: u32) -> Node {
        match self.rng.below(3) {
            0 => {
                let (a, _) = self.int(Ty::I32, ctx, d);
                Node::other("(A0 $0)", vec![a])
            }
            1 => {
                let (a, _) = self.float(Ty::F32, Want::Unit, ctx, d);
                let (b, _) = self.int(Ty::I32, ctx, d);
                Node::other("(B0 ($0, $1))", vec![a, b])
            }
            _ => Node::other("C0", vec![]),
        }
    }

    /// A float expression of `ty` meeting `want`.
    fn float(&mut self, ty: Ty, want: Want, ctx: Ctx, depth: u32) -> (Node, Info) {
        match want {
            Want::Leaf => self.float_leaf(ty, ctx, depth),
            Want::Exact => {
                if depth == 0 || self.rng.pct(40) {
                    return self.float_leaf(ty, ctx, depth);
                }
                let d = depth - 1;
                match self.rng.below(10) {
                    0..=5 => {
                        let op = *self.rng.pick(&["+.", "-.", "*.", "+.", "-."]);
                        let (a, ia) = self.float_leaf(ty, ctx, d);
                        let (b, ib) = self.float_leaf(ty, ctx, d);
                        let text = if ty == Ty::F32 && self.rng.pct(10) {
                            let op = match op {
                                "+." => "+",
                                "-." => "-",
                                _ => "*",
                            };
                            format!("($0 {op} $1)") // plain operators on floats
                        } else {
                            format!("($0 {op} $1)")
                        };
                        let mut i = both(ia, ib);
                        i.class = Class::Exact;
                        i.unit = false;
                        (Node::expr(ty, text, vec![a, b]), i)
                    }
                    6 => {
                        // fmod is exact; the divisor is a non-zero literal.
                        let (a, ia) = self.float_leaf(ty, ctx, d);
                        let m = *self.rng.pick(&["0.75", "0.5", "(-1.5)", "3.0", "0.1"]);
                        self.features.insert("float-mod");
                        let mut i = ia;
                        i.class = Class::Exact;
                        (Node::expr(ty, format!("($0 mod {m})"), vec![a]), i)
                    }
                    7 => {
                        let f = *self.rng.pick(&[
                            "(min $0 $1)",
                            "(max $0 $1)",
                            "(fmin $0 $1)",
                            "(fmax $0 $1)",
                        ]);
                        let (a, ia) = self.float(ty, Want::Exact, ctx, d);
                        let (b, ib) = self.float(ty, Want::Exact, ctx, d);
                        let mut i = both(ia, ib);
                        i.class = Class::Exact;
                        (Node::expr(ty, f, vec![a, b]), i)
                    }
                    8 => {
                        let (c, ic) = self.boolean(ctx, d);
                        let (a, ia) = self.float(ty, Want::Exact, ctx, d);
                        let (b, ib) = self.float(ty, Want::Exact, ctx, d);
                        let mut i = both(ic, both(ia, ib));
                        i.class = Class::Exact;
                        i.unit = ia.unit && ib.unit;
                        (Node::expr(ty, "(if $0 then $1 else $2)", vec![c, a, b]), i)
                    }
                    _ => {
                        let (a, ia) = self.float(ty, Want::Exact, ctx, d);
                        let f =
                            *self
                                .rng
                                .pick(&["(- $0)", "(abs_float $0)", "(fabs $0)", "(-. $0)"]);
                        (Node::expr(ty, f, vec![a]), ia)
                    }
                }
            }
            Want::Unit => {
                if depth == 0 || self.rng.pct(25) {
                    let (e, i) = self.float(ty, Want::Exact, ctx, depth.min(1));
                    return self.clamp_unit(ty, e, i);
                }
                self.bounded(ty, ctx, depth - 1)
            }
        }
    }

    /// `e` if it is known within [-1, 1], else clamped there (exactly).
    fn clamp_unit(&mut self, ty: Ty, e: Node, i: Info) -> (Node, Info) {
        if i.unit {
            return (e, i);
        }
        let mut i = i;
        i.unit = true;
        i.class = Class::Exact.max(i.class);
        (Node::expr(ty, "(fmin 1.0 (fmax (-1.0) $0))", vec![e]), i)
    }

    fn float_leaf(&mut self, ty: Ty, ctx: Ctx, depth: u32) -> (Node, Info) {
        let c = self.rng.below(100);
        if c < 20 {
            let l = self.lit_of(ty);
            let unit = Self::lit_is_unit(&l.text);
            return (
                l,
                Info {
                    class: Class::Leaf,
                    unit,
                    uniform: true,
                },
            );
        }
        if c < 45
            && let Some((n, _, info)) =
                self.var_of(ctx, |v| v.ty == ty && v.info.class == Class::Leaf)
        {
            return (n, info);
        }
        if c < 55 && depth > 0 {
            // From an integer: exact, correctly rounded everywhere, possibly large.
            let from = if self.wide && self.rng.pct(40) {
                Ty::I64
            } else {
                Ty::I32
            };
            let (a, ia) = self.int(from, ctx, depth - 1);
            let conv = match (ty, from) {
                (Ty::F32, Ty::I32) => *self.rng.pick(&[
                    "(float32 $0)",
                    "(float $0)",
                    "(float_of_int $0)",
                    "(Float32.of_int $0)",
                ]),
                (Ty::F32, _) => "(float32 $0)",
                _ => "(float64 $0)",
            };
            return (
                Node::expr(ty, conv, vec![a]),
                Info {
                    class: Class::Leaf,
                    unit: false,
                    uniform: ia.uniform,
                },
            );
        }
        if c < 62 && depth > 0 {
            let f = *self
                .rng
                .pick(&["(floor $0)", "(ceil $0)", "(round $0)", "(trunc $0)"]);
            let (a, ia) = self.float(ty, Want::Exact, ctx, depth - 1);
            self.features.insert("rounding");
            return (
                Node::expr(ty, f, vec![a]),
                Info {
                    class: Class::Leaf,
                    unit: false,
                    uniform: ia.uniform,
                },
            );
        }
        if c < 67 && depth > 0 {
            // The other float width: float32 -> float64 is exact; float64 -> float32 rounds
            // correctly (both are leaves).
            let other = if ty == Ty::F32 { Ty::F64 } else { Ty::F32 };
            if self.wide {
                let (a, ia) = self.float_leaf(other, ctx, depth - 1);
                let conv = if ty == Ty::F32 {
                    "(float32 $0)"
                } else if self.rng.pct(30) {
                    "(Float64.of_float32 $0)"
                } else {
                    "(float64 $0)"
                };
                return (
                    Node::expr(ty, conv, vec![a]),
                    Info {
                        class: Class::Leaf,
                        unit: ia.unit,
                        uniform: ia.uniform,
                    },
                );
            }
        }
        if !ctx.helper {
            if c < 72
                && let Some((name, _, info)) = self
                    .scalars
                    .iter()
                    .find(|(n, t, _)| *t == ty && !n.ends_with('x'))
                    .cloned()
            {
                return (Node::expr(ty, name, vec![]), info);
            }
            if let Some(v) = self.has_vec(&VecKind::Input(ty)) {
                let (idx, _) = self.index(ctx);
                return (
                    Node::expr(ty, format!("{v}.($0)"), vec![idx]),
                    Info {
                        class: Class::Leaf,
                        unit: true,
                        uniform: false,
                    },
                );
            }
            if ty == Ty::F32
                && let Some(v) = self.has_vec(&VecKind::InRecord)
            {
                let (idx, _) = self.index(ctx);
                return (
                    Node::expr(ty, format!("{v}.($0).f1"), vec![idx]),
                    Info {
                        class: Class::Leaf,
                        unit: true,
                        uniform: false,
                    },
                );
            }
        }
        let l = self.lit_of(ty);
        let unit = Self::lit_is_unit(&l.text);
        (
            l,
            Info {
                class: Class::Leaf,
                unit,
                uniform: true,
            },
        )
    }

    /// A bounded (|v| <= 1) float expression.
    fn bounded(&mut self, ty: Ty, ctx: Ctx, d: u32) -> (Node, Info) {
        const UNARY: &[&str] = &[
            "(sin $0)",
            "(cos $0)",
            "(tanh $0)",
            "((atan $0) *. 0.5)",
            "((exp $0) *. 0.25)",
            "((exp2 $0) *. 0.25)",
            "((expm1 $0) *. 0.5)",
            "(log ((abs_float $0) +. 1.0))",
            "(log2 ((fabs $0) +. 1.0))",
            "(log10 ((fabs $0) +. 1.0))",
            "(log1p (fabs $0))",
            "((sqrt ((fabs $0) +. 1.0)) *. 0.5)",
            "(rsqrt ((fabs $0) +. 1.0))",
            "((asin ($0 *. 0.5)) *. 0.5)",
            "((acos ($0 *. 0.5)) *. 0.25)",
            "((sinh $0) *. 0.5)",
            "((cosh $0) *. 0.5)",
            "(tan ($0 *. 0.5))",
            "(- $0)",
            "(abs $0)",
        ];
        const BINARY: &[&str] = &[
            "(($0 +. $1) *. 0.5)",
            "(($0 -. $1) *. 0.5)",
            "($0 *. $1)",
            "($0 /. ((fabs $1) +. 1.0))",
            "((atan2 ((fabs $0) +. 0.5) $1) *. 0.25)",
            "((hypot $0 $1) *. 0.5)",
            "(fmin $0 $1)",
            "(fmax $0 $1)",
            "(min $0 $1)",
            "(max $0 $1)",
            "((pow ((fabs $0) +. 1.0) $1) *. 0.25)",
            "((((fabs $0) +. 1.0) ** $1) *. 0.25)",
            "(copysign $0 $1)",
        ];
        let c = self.rng.below(100);
        let (node, info) = if c < 40 {
            let mut f = *self.rng.pick(UNARY);
            if ty == Ty::F32 && self.rng.pct(10) {
                f = *self.rng.pick(&[
                    "(Float32.sin $0)",
                    "(Float32.sqrt ((fabs $0) +. 1.0) *. 0.5)",
                    "(Math.cos $0)",
                ]);
            }
            let (a, ia) = self.float(ty, Want::Unit, ctx, d);
            (Node::expr(ty, f, vec![a]), ia)
        } else if c < 80 {
            let f = *self.rng.pick(BINARY);
            let (a, ia) = self.float(ty, Want::Unit, ctx, d);
            // copysign's sign must be exact (a sign flip is not a small error).
            let (b, ib) = if f.starts_with("(copysign") {
                self.float(ty, Want::Leaf, ctx, d)
            } else {
                self.float(ty, Want::Unit, ctx, d)
            };
            (Node::expr(ty, f, vec![a, b]), both(ia, ib))
        } else if c < 87 {
            let (a, ia) = self.float(ty, Want::Unit, ctx, d);
            let (b, ib) = self.float(ty, Want::Unit, ctx, d);
            let (e, ie) = self.float(ty, Want::Unit, ctx, d);
            (
                Node::expr(ty, "((fma $0 $1 $2) *. 0.5)", vec![a, b, e]),
                both(ia, both(ib, ie)),
            )
        } else if c < 94 {
            let (k, ik) = self.boolean(ctx, d);
            let (a, ia) = self.float(ty, Want::Unit, ctx, d);
            let (b, ib) = self.float(ty, Want::Unit, ctx, d);
            (
                Node::expr(ty, "(if $0 then $1 else $2)", vec![k, a, b]),
                both(ik, both(ia, ib)),
            )
        } else {
            self.call_float(ty, ctx, d)
        };
        (
            node,
            Info {
                class: Class::Bounded,
                unit: true,
                uniform: info.uniform,
            },
        )
    }

    fn call_float(&mut self, ty: Ty, ctx: Ctx, d: u32) -> (Node, Info) {
        let cands: Vec<Helper> = self
            .helpers
            .iter()
            .filter(|h| match &h.kind {
                HelperKind::Binary(t) => *t == ty,
                HelperKind::Pick => true,
                _ => false,
            })
            .cloned()
            .collect();
        if cands.is_empty() || ctx.helper {
            let (e, i) = self.float(ty, Want::Exact, ctx, d.min(1));
            return self.clamp_unit(ty, e, i);
        }
        let h = cands[self.rng.below(cands.len())].clone();
        self.features.insert("helper");
        let (a, ia) = self.float(ty, Want::Unit, ctx, d);
        let (b, ib) = self.float(ty, Want::Unit, ctx, d);
        match h.kind {
            HelperKind::Pick => {
                self.features.insert("polymorphic");
                let (c, ic) = self.boolean(ctx, d);
                (
                    Node::expr(ty, format!("({} $0 $1 $2)", h.name), vec![c, a, b]),
                    both(ic, both(ia, ib)),
                )
            }
            _ => (
                Node::expr(ty, format!("({} $0 $1)", h.name), vec![a, b]),
                both(ia, ib),
            ),
        }
    }

    /// A non-finite or out-of-range float argument (only for conversions and stores).
    fn special(&mut self, ty: Ty) -> (Node, Info) {
        let name = if ty == Ty::F32 { "sx" } else { "sdx" };
        if !self.scalars.iter().any(|(n, _, _)| n == name) {
            let l = self.lit_of(ty);
            return (l, Info::exact(true));
        }
        self.features.insert("nan-inf");
        (Node::expr(ty, name, vec![]), Info::exact(true))
    }

    fn boolean(&mut self, ctx: Ctx, depth: u32) -> (Node, Info) {
        let c = self.rng.below(100);
        if depth == 0 || c < 15 {
            if self.rng.pct(40)
                && let Some((n, _, i)) = self.var_of(ctx, |v| v.ty == Ty::Bool)
            {
                return (n, i);
            }
            if !ctx.helper && self.rng.pct(40) {
                if let Some(v) = self.has_vec(&VecKind::Input(Ty::Bool)) {
                    let (idx, _) = self.index(ctx);
                    return (
                        Node::expr(Ty::Bool, format!("{v}.($0)"), vec![idx]),
                        Info::exact(false),
                    );
                }
                if self.scalars.iter().any(|(n, _, _)| n == "sb") {
                    return (Node::expr(Ty::Bool, "sb", vec![]), Info::exact(true));
                }
            }
            return (self.lit_of(Ty::Bool), Info::exact(true));
        }
        let d = depth - 1;
        match c {
            15..=54 => {
                let op = *self.rng.pick(&["<", "<=", ">", ">=", "=", "<>", "!="]);
                let ty = *self.rng.pick(&if self.wide {
                    vec![Ty::I32, Ty::I32, Ty::F32, Ty::I64, Ty::F64]
                } else {
                    vec![Ty::I32, Ty::I32, Ty::F32]
                });
                let (a, ia, b, ib) = if ty.is_float() {
                    let (a, ia) = self.float(ty, Want::Exact, ctx, d);
                    let (b, ib) = self.float(ty, Want::Exact, ctx, d);
                    (a, ia, b, ib)
                } else {
                    let (a, ia) = self.int(ty, ctx, d);
                    let (b, ib) = self.int(ty, ctx, d);
                    (a, ia, b, ib)
                };
                (
                    Node::expr(Ty::Bool, format!("($0 {op} $1)"), vec![a, b]),
                    Info::exact(ia.uniform && ib.uniform),
                )
            }
            55..=74 => {
                let op = *self.rng.pick(&["&&", "||", "=", "<>", "<"]);
                let (a, ia) = self.boolean(ctx, d);
                let (b, ib) = self.boolean(ctx, d);
                (
                    Node::expr(Ty::Bool, format!("($0 {op} $1)"), vec![a, b]),
                    both(ia, ib),
                )
            }
            75..=84 => {
                let (a, ia) = self.boolean(ctx, d);
                (Node::expr(Ty::Bool, "(not $0)", vec![a]), ia)
            }
            _ => {
                let (k, ik) = self.boolean(ctx, d);
                let (a, ia) = self.boolean(ctx, d);
                let (b, ib) = self.boolean(ctx, d);
                (
                    Node::expr(Ty::Bool, "(if $0 then $1 else $2)", vec![k, a, b]),
                    both(ik, both(ia, ib)),
                )
            }
        }
    }

    /// Any scalar expression of `ty` (floats bounded unless `exact`).
    fn value(&mut self, ty: Ty, ctx: Ctx, depth: u32) -> (Node, Info) {
        match ty {
            Ty::Bool => self.boolean(ctx, depth),
            Ty::I32 | Ty::I64 => self.int(ty, ctx, depth),
            Ty::F32 | Ty::F64 => {
                let want = *self
                    .rng
                    .pick(&[Want::Unit, Want::Unit, Want::Exact, Want::Leaf]);
                self.float(ty, want, ctx, depth)
            }
        }
    }

    fn scalar_ty(&mut self) -> Ty {
        let tys: &[Ty] = if self.wide {
            &[
                Ty::I32,
                Ty::I32,
                Ty::F32,
                Ty::F32,
                Ty::Bool,
                Ty::I64,
                Ty::F64,
            ]
        } else {
            &[Ty::I32, Ty::I32, Ty::F32, Ty::F32, Ty::Bool]
        };
        *self.rng.pick(tys)
    }

    // ---------------------------------------------------------------- statements

    fn block(&mut self, ctx: Ctx, n: usize) -> Node {
        let saved = self.vars.len();
        let mut stmts = Vec::new();
        for _ in 0..n {
            if self.budget <= 0 {
                break;
            }
            self.budget -= 1;
            stmts.extend(self.stmt(ctx));
        }
        self.vars.truncate(saved);
        Node::block(stmts)
    }

    fn stmt(&mut self, ctx: Ctx) -> Vec<Node> {
        let c = self.rng.below(100);
        let depth = 3;
        match c {
            0..=21 => {
                let ty = self.scalar_ty();
                let (e, info) = self.value(ty, ctx, depth);
                let name = self.name("x");
                let text = if self.rng.pct(25) {
                    format!("let {name} : {} = $0 in", ty.name())
                } else {
                    format!("let {name} = $0 in")
                };
                self.vars.push(Var {
                    name,
                    ty,
                    info,
                    mutable: false,
                });
                vec![Node::let_(text, vec![e])]
            }
            22..=29 => {
                // A mutable local; later assignments keep it bounded (floats) or any (ints).
                let ty = self.scalar_ty();
                let (e, info) = if ty.is_float() {
                    self.float(ty, Want::Unit, ctx, depth)
                } else {
                    self.value(ty, ctx, depth)
                };
                let (name, text) = if self.rng.pct(20) {
                    let name = self.name("rf");
                    let text = format!("let {name} = ref $0 in");
                    (name, text)
                } else {
                    let name = self.name("m");
                    let text = format!("let mut {name} = $0 in");
                    (name, text)
                };
                self.vars.push(Var {
                    name,
                    ty,
                    info: Info {
                        class: if ty.is_float() {
                            Class::Bounded
                        } else {
                            info.class
                        },
                        unit: true,
                        uniform: false,
                    },
                    mutable: true,
                });
                vec![Node::let_(text, vec![e])]
            }
            30..=39 => {
                let muts: Vec<Var> = self
                    .vars
                    .iter()
                    .filter(|v| v.mutable && (!ctx.helper))
                    .cloned()
                    .collect();
                if muts.is_empty() {
                    return self.store(ctx);
                }
                let v = muts[self.rng.below(muts.len())].clone();
                let (e, _) = if v.ty.is_float() {
                    self.float(v.ty, Want::Unit, ctx, depth)
                } else {
                    self.value(v.ty, ctx, depth)
                };
                vec![Node::stmt(format!("{} := $0", v.name), vec![e])]
            }
            40..=54 => self.store(ctx),
            55..=63 => {
                let (cond, ic) = self.boolean(ctx, 2);
                let inner = Ctx {
                    uniform_flow: ctx.uniform_flow && ic.uniform,
                    top: false,
                    ..ctx
                };
                let n = 1 + self.rng.below(3);
                let a = self.block(inner, n);
                if self.rng.pct(50) {
                    let b = self.block(inner, n);
                    vec![Node::stmt("if $0 then $1 else $2", vec![cond, a, b])]
                } else {
                    vec![Node::stmt("if $0 then $1", vec![cond, a])]
                }
            }
            64..=72 if ctx.loops < 2 => self.loop_stmt(ctx),
            73..=77 => self.match_stmt(ctx),
            78..=84 if ctx.top && ctx.uniform_flow => self.shared_phase(ctx),
            85..=89 if ctx.uniform_flow && self.warps => self.warp_let(ctx),
            90..=94 => self.atomic_stmt(ctx),
            95..=96 => self.local_array(ctx),
            97 if ctx.uniform_flow => vec![Node::stmt(
                *self
                    .rng
                    .pick(&["memory_fence_block ()", "memory_fence_device ()"]),
                vec![],
            )],
            _ => self.store(ctx),
        }
    }

    /// A store to an output vector at the thread's own index.
    fn store(&mut self, ctx: Ctx) -> Vec<Node> {
        let outs: Vec<VecParam> = self
            .vectors
            .iter()
            .filter(|v| {
                matches!(
                    v.kind,
                    VecKind::Output(_)
                        | VecKind::OutRecord
                        | VecKind::OutVariant
                        | VecKind::OutTuple
                )
            })
            .cloned()
            .collect();
        let v = outs[self.rng.below(outs.len())].clone();
        let d = 3;
        match v.kind {
            VecKind::Output(ty) => {
                let (e, _) = if ty.is_float() && self.rng.pct(8) {
                    self.special(ty)
                } else {
                    self.value(ty, ctx, d)
                };
                if self.rng.pct(10)
                    && self
                        .helpers
                        .iter()
                        .any(|h| matches!(h.kind, HelperKind::Put))
                {
                    self.features.insert("polymorphic");
                    let h = self
                        .helpers
                        .iter()
                        .find(|h| matches!(h.kind, HelperKind::Put))
                        .expect("checked")
                        .name
                        .clone();
                    return vec![Node::stmt(format!("{h} {} i $0", v.name), vec![e])];
                }
                vec![Node::stmt(format!("{}.(i) <- $0", v.name), vec![e])]
            }
            VecKind::OutRecord => {
                self.features.insert("record");
                if self.rng.pct(50) {
                    let (r, _) = self.record_value(ctx, 2);
                    vec![Node::stmt(format!("{}.(i) <- $0", v.name), vec![r])]
                } else {
                    let (f, ty) =
                        *self
                            .rng
                            .pick(&[("f0", Ty::I32), ("f1", Ty::F32), ("f2", Ty::Bool)]);
                    let (e, _) = self.value(ty, ctx, d);
                    vec![Node::stmt(format!("{}.(i).{f} <- $0", v.name), vec![e])]
                }
            }
            VecKind::OutVariant => {
                self.features.insert("variant");
                let e = self.variant_value(ctx, 2);
                vec![Node::stmt(format!("{}.(i) <- $0", v.name), vec![e])]
            }
            VecKind::OutTuple => {
                self.features.insert("tuple");
                let (a, _) = self.int(Ty::I32, ctx, d);
                let (b, _) = self.float(Ty::F32, Want::Unit, ctx, d);
                vec![Node::stmt(
                    format!("{}.(i) <- ($0, $1)", v.name),
                    vec![a, b],
                )]
            }
            _ => vec![],
        }
    }

    fn loop_stmt(&mut self, ctx: Ctx) -> Vec<Node> {
        let j = self.name("j");
        let kind = self.rng.below(10);
        let (head, kids, uniform_bounds): (String, Vec<Node>, bool) = match kind {
            0..=5 => {
                let (a, ia) = self.int(Ty::I32, ctx, 1);
                let (b, ib) = self.int(Ty::I32, ctx, 1);
                let down = self.rng.pct(25);
                let low = Node::other("($0 land 3)", vec![a.clone()]);
                let high = Node::other("(($0 land 3) + ($1 land 3))", vec![a, b]);
                let (first, last, dir) = if down {
                    (high, low, "downto")
                } else {
                    (low, high, "to")
                };
                (
                    format!("for {j} = $0 {dir} $1 do"),
                    vec![first, last],
                    ia.uniform && ib.uniform,
                )
            }
            6 => (
                format!("for {j} = 2147483645 to 2147483647 do"),
                vec![],
                true,
            ),
            7 => (
                format!("for {j} = (-2147483646) downto (-2147483648) do"),
                vec![],
                true,
            ),
            _ => {
                let k = 1 + self.rng.below(4);
                (format!("for {j} = 0 to {k} do"), vec![], true)
            }
        };
        self.features.insert("loop");
        let while_form = self.rng.pct(20);
        let inner = Ctx {
            uniform_flow: ctx.uniform_flow && uniform_bounds,
            top: false,
            loops: ctx.loops + 1,
            ..ctx
        };
        if !while_form {
            self.vars.push(Var {
                name: j.clone(),
                ty: Ty::I32,
                info: Info::exact(uniform_bounds),
                mutable: false,
            });
        }
        let n = 1 + self.rng.below(3);
        let body = self.block(inner, n);
        self.vars.retain(|v| v.name != j);
        let hint = if self.rng.pct(15) { " [@unroll 2]" } else { "" };
        let nk = kids.len();
        let mut kids = kids;
        kids.push(body);
        let text = format!("{head} ${nk} done{hint}");
        if while_form {
            // The while form: a counter the body cannot touch.
            let w = self.name("w");
            let k = 1 + self.rng.below(4);
            let body = kids.pop().expect("body");
            return vec![Node::stmt(
                format!("(let {w} = ref 0 in while !{w} < {k} do $0; {w} := !{w} + 1 done)"),
                vec![body],
            )];
        }
        vec![Node::stmt(text, kids)]
    }

    fn match_stmt(&mut self, ctx: Ctx) -> Vec<Node> {
        self.features.insert("variant");
        let (scrut, uniform) = match self.has_vec(&VecKind::InVariant) {
            Some(v) if self.rng.pct(50) => {
                let (idx, _) = self.index(ctx);
                (Node::other(format!("{v}.($0)"), vec![idx]), false)
            }
            _ => {
                // A constructed value: treated as thread-varying (the front end follows data
                // flow into the constructor's payload).
                let (c, _) = self.boolean(ctx, 2);
                let a = self.variant_value(ctx, 2);
                let b = self.variant_value(ctx, 2);
                (Node::other("(if $0 then $1 else $2)", vec![c, a, b]), false)
            }
        };
        let inner = Ctx {
            uniform_flow: ctx.uniform_flow && uniform,
            top: false,
            ..ctx
        };
        let xa = self.name("a");
        let fb = self.name("f");
        let kb = self.name("k");
        self.vars.push(Var {
            name: xa.clone(),
            ty: Ty::I32,
            info: Info::exact(false),
            mutable: false,
        });
        let n = 1 + self.rng.below(2);
        let arm_a = self.block(inner, n);
        self.vars.pop();
        self.vars.push(Var {
            name: fb.clone(),
            ty: Ty::F32,
            info: Info {
                class: Class::Bounded,
                unit: true,
                uniform: false,
            },
            mutable: false,
        });
        self.vars.push(Var {
            name: kb.clone(),
            ty: Ty::I32,
            info: Info::exact(false),
            mutable: false,
        });
        let n = 1 + self.rng.below(2);
        let arm_b = self.block(inner, n);
        self.vars.truncate(self.vars.len() - 2);
        let arm_c = self.block(inner, 1);
        // Parenthesised: a match's last arm would otherwise swallow the statements after it.
        let text = if self.rng.pct(50) {
            format!("(match $0 with A0 {xa} -> $1 | B0 ({fb}, {kb}) -> $2 | C0 -> $3)")
        } else {
            format!(
                "begin match $0 with | C0 -> $3 | B0 ({fb}, _) -> (let {kb} = 0 in $2) | A0 {xa} -> $1 end"
            )
        };
        vec![Node::stmt(text, vec![scrut, arm_a, arm_b, arm_c])]
    }

    /// Own-slot writes, a barrier, neighbour reads, a barrier (top level, uniform flow).
    fn shared_phase(&mut self, ctx: Ctx) -> Vec<Node> {
        self.features.insert("shared");
        let ty = *self.rng.pick(&[Ty::I32, Ty::F32, Ty::I32]);
        let sh = self.name("sh");
        let b = self.block;
        let mut out = vec![Node::let_(
            format!("let%shared ({sh} : {}) = {b} in", ty.name()),
            vec![],
        )];
        let atomic = self.rng.pct(35);
        if atomic {
            // Zeroed slots, then commutative atomics from every thread, then reads.
            self.features.insert("atomic");
            out.push(Node::stmt(
                format!("{sh}.(t) <- {}", if ty == Ty::F32 { "0.0" } else { "0" }),
                vec![],
            ));
            out.push(barrier());
            let idx = self.shared_index(ctx);
            if ty == Ty::F32 {
                // Multiples of 1/8 below 2: every order of the sums is exact.
                let (k, _) = self.int(Ty::I32, ctx, 1);
                out.push(Node::stmt(
                    format!("ignore (atomic_add {sh} $0 (float32 ($1 land 15) *. 0.125))"),
                    vec![idx, k],
                ));
            } else {
                let op = *self.rng.pick(&[
                    "atomic_add",
                    "atomic_sub",
                    "atomic_min",
                    "atomic_max",
                    "atomic_and",
                    "atomic_or",
                    "atomic_xor",
                ]);
                let (v, _) = self.int(Ty::I32, ctx, 2);
                out.push(Node::stmt(
                    format!("ignore ({op} {sh} $0 $1)"),
                    vec![idx, v],
                ));
            }
        } else {
            let (e, _) = if ty == Ty::F32 {
                self.float(ty, Want::Unit, ctx, 2)
            } else {
                self.int(ty, ctx, 2)
            };
            out.push(Node::stmt(format!("{sh}.(t) <- $0"), vec![e]));
        }
        if self.rng.pct(25) {
            let s = self.name("step");
            out.push(Node::let_(format!("let%superstep {s} = () in"), vec![]));
        } else {
            out.push(barrier());
        }
        // Neighbour reads, bound to locals.
        for _ in 0..1 + self.rng.below(2) {
            let idx = self.shared_index(ctx);
            let name = self.name("n");
            out.push(Node::let_(format!("let {name} = {sh}.($0) in"), vec![idx]));
            self.vars.push(Var {
                name,
                ty,
                info: Info {
                    class: if ty == Ty::F32 {
                        if atomic { Class::Leaf } else { Class::Bounded }
                    } else {
                        Class::Leaf
                    },
                    unit: ty == Ty::F32 && !atomic,
                    uniform: false,
                },
                mutable: false,
            });
        }
        out.push(barrier());
        out
    }

    fn warp_let(&mut self, ctx: Ctx) -> Vec<Node> {
        self.features.insert("warp");
        let name = self.name("wv");
        let c = self.rng.below(7);
        let (text, kids, ty, info) = match c {
            0..=3 => {
                let ty = if self.wide {
                    *self.rng.pick(&[Ty::I32, Ty::F32, Ty::I64, Ty::F64])
                } else {
                    *self.rng.pick(&[Ty::I32, Ty::F32])
                };
                let (x, ix) = if ty.is_float() {
                    self.float(ty, Want::Unit, ctx, 2)
                } else {
                    self.int(ty, ctx, 2)
                };
                let op = [
                    "warp_shuffle",
                    "warp_shuffle_down",
                    "warp_shuffle_up",
                    "warp_shuffle_xor",
                ][c];
                let (l, _) = self.int(Ty::I32, ctx, 1);
                let lane = if self.rng.pct(70) {
                    Node::other("($0 land 31)", vec![l])
                } else {
                    l
                };
                (
                    format!("let {name} = {op} $0 $1 in"),
                    vec![x, lane],
                    ty,
                    Info {
                        class: ix.class,
                        unit: ix.unit,
                        uniform: false,
                    },
                )
            }
            4 | 5 => {
                let op = if c == 4 {
                    "warp_vote_all"
                } else {
                    "warp_vote_any"
                };
                let (b, _) = self.boolean(ctx, 2);
                (
                    format!("let {name} = {op} $0 in"),
                    vec![b],
                    Ty::Bool,
                    Info::exact(false),
                )
            }
            _ => {
                let (b, _) = self.boolean(ctx, 2);
                (
                    format!("let {name} = warp_ballot $0 in"),
                    vec![b],
                    Ty::I32,
                    Info::exact(false),
                )
            }
        };
        self.vars.push(Var {
            name,
            ty,
            info,
            mutable: false,
        });
        vec![Node::let_(text, kids)]
    }

    fn atomic_stmt(&mut self, ctx: Ctx) -> Vec<Node> {
        self.features.insert("atomic");
        if self.rng.pct(50)
            && let Some(own) = self.has_vec(&VecKind::Own)
        {
            // The thread's own slot: the old value is deterministic.
            let name = self.name("o");
            let op = *self.rng.pick(&[
                "atomic_add",
                "atomic_sub",
                "atomic_min",
                "atomic_max",
                "atomic_and",
                "atomic_or",
                "atomic_xor",
                "atomic_exch",
                "atomic_cas",
                "atomic_inc",
                "atomic_dec",
                "atomic_add_int32",
            ]);
            let (text, kids) = match op {
                "atomic_inc" | "atomic_dec" => (format!("let {name} = {op} {own} i in"), vec![]),
                "atomic_cas" => {
                    let (a, _) = self.int(Ty::I32, ctx, 1);
                    let (b, _) = self.int(Ty::I32, ctx, 2);
                    let expected = if self.rng.pct(50) {
                        Node::expr(Ty::I32, format!("{own}.(i)"), vec![])
                    } else {
                        a
                    };
                    (
                        format!("let {name} = atomic_cas {own} i $0 $1 in"),
                        vec![expected, b],
                    )
                }
                _ => {
                    let (v, _) = self.int(Ty::I32, ctx, 2);
                    (format!("let {name} = {op} {own} i $0 in"), vec![v])
                }
            };
            self.vars.push(Var {
                name,
                ty: Ty::I32,
                info: Info::exact(false),
                mutable: false,
            });
            return vec![Node::let_(text, kids)];
        }
        let accs: Vec<VecParam> = self
            .vectors
            .iter()
            .filter(|v| matches!(v.kind, VecKind::Accumulator(_)))
            .cloned()
            .collect();
        if accs.is_empty() {
            return self.store(ctx);
        }
        let acc = accs[self.rng.below(accs.len())].clone();
        let VecKind::Accumulator(ty) = acc.kind else {
            unreachable!()
        };
        let (idx, _) = self.index(ctx);
        // Only operations that commute with each other reach one accumulator: its final
        // values then do not depend on the order the threads ran in.
        let family = self.acc_family(&acc.name);
        let op = *self.rng.pick(family);
        if matches!(op, "atomic_inc" | "atomic_dec") {
            return vec![Node::stmt(
                format!("ignore ({op} {} $0)", acc.name),
                vec![idx],
            )];
        }
        let (v, _) = self.int(ty, ctx, 2);
        vec![Node::stmt(
            format!("ignore ({op} {} $0 $1)", acc.name),
            vec![idx, v],
        )]
    }

    /// The atomic operations allowed on accumulator `name` (one commuting family per
    /// accumulator, chosen on first use).
    fn acc_family(&mut self, name: &str) -> &'static [&'static str] {
        const FAMILIES: &[&[&str]] = &[
            &["atomic_add", "atomic_sub", "atomic_inc", "atomic_dec"],
            &["atomic_min"],
            &["atomic_max"],
            &["atomic_and"],
            &["atomic_or"],
            &["atomic_xor"],
        ];
        if let Some((_, f)) = self.acc_families.iter().find(|(n, _)| n == name) {
            return FAMILIES[*f];
        }
        let f = self.rng.below(FAMILIES.len());
        self.acc_families.push((name.to_string(), f));
        FAMILIES[f]
    }

    /// A per-thread local array, fully written in a loop, then read at a reduced index.
    fn local_array(&mut self, ctx: Ctx) -> Vec<Node> {
        self.features.insert("local-array");
        let name = self.name("loc");
        let j = self.name("j");
        self.vars.push(Var {
            name: j.clone(),
            ty: Ty::I32,
            info: Info::exact(false),
            mutable: false,
        });
        let (e, _) = self.int(Ty::I32, ctx, 2);
        self.vars.pop();
        let (k, _) = self.int(Ty::I32, ctx, 1);
        let r = self.name("lv");
        let out = vec![
            Node::let_(
                format!("let {name} : int32 array = create_array 8 Local in"),
                vec![],
            ),
            Node::stmt(
                format!("for {j} = 0 to 7 do {name}.({j}) <- $0 done"),
                vec![e],
            ),
            Node::let_(format!("let {r} = {name}.($0 land 7) in"), vec![k]),
        ];
        self.vars.push(Var {
            name: r,
            ty: Ty::I32,
            info: Info::exact(false),
            mutable: false,
        });
        out
    }

    // ---------------------------------------------------------------- program

    fn helper_item(&mut self, kind: HelperKind) -> Node {
        let name = self.name("h");
        let helper_ctx = Ctx {
            uniform_flow: false,
            top: false,
            helper: true,
            loops: 0,
        };
        let saved = std::mem::take(&mut self.vars);
        let saved_opaque = self.opaque_int;
        self.opaque_int = match &kind {
            HelperKind::Binary(Ty::I32) => Some("pa"),
            HelperKind::Binary(Ty::I64) => Some("(int32 pa)"),
            HelperKind::Recursive { .. } => Some("pn"),
            HelperKind::Tail => Some("pk"),
            HelperKind::RecordFn => Some("pr_f0"),
            _ => None,
        };
        let node = match &kind {
            HelperKind::Binary(ty) => {
                let info = if ty.is_float() {
                    Info {
                        class: Class::Bounded,
                        unit: true,
                        uniform: false,
                    }
                } else {
                    Info::exact(false)
                };
                for p in ["pa", "pb"] {
                    self.vars.push(Var {
                        name: p.into(),
                        ty: *ty,
                        info,
                        mutable: false,
                    });
                }
                let (body, _) = if ty.is_float() {
                    self.float(*ty, Want::Unit, helper_ctx, 3)
                } else {
                    self.int(*ty, helper_ctx, 3)
                };
                let t = ty.name();
                Node::new(
                    Kind::Item,
                    format!("let {name} (pa : {t}) (pb : {t}) : {t} =\n  $0"),
                    vec![body],
                )
            }
            HelperKind::Recursive { depth } => {
                for p in ["pn", "px"] {
                    self.vars.push(Var {
                        name: p.into(),
                        ty: Ty::I32,
                        info: Info::exact(false),
                        mutable: false,
                    });
                }
                let (step, _) = self.int(Ty::I32, helper_ctx, 2);
                let (comb, _) = self.int(Ty::I32, helper_ctx, 2);
                let attr = if self.rng.pct(30) {
                    format!(
                        " =\n  pragma [\"sarek.inline {depth}\"] (if pn <= 0 then px else ({name} (pn - 1) $0) + $1)"
                    )
                } else {
                    format!(
                        " [@sarek.inline {depth}] =\n  if pn <= 0 then px else ({name} (pn - 1) $0) + $1"
                    )
                };
                let text = format!("let rec {name} (pn : int32) (px : int32) : int32{attr}");
                Node::new(Kind::Item, text, vec![step, comb])
            }
            HelperKind::Tail => {
                for p in ["pk", "pacc"] {
                    self.vars.push(Var {
                        name: p.into(),
                        ty: Ty::I32,
                        info: Info::exact(false),
                        mutable: false,
                    });
                }
                let (step, _) = self.int(Ty::I32, helper_ctx, 2);
                Node::new(
                    Kind::Item,
                    format!(
                        "let rec {name} (pk : int32) (pacc : int32) : int32 =\n  if pk <= 0 then pacc else {name} (pk - 1) $0"
                    ),
                    vec![step],
                )
            }
            HelperKind::Pick => Node::new(
                Kind::Item,
                format!("let {name} (c : bool) (a : 'a) (b : 'a) : 'a = if c then a else b"),
                vec![],
            ),
            HelperKind::Get => Node::new(
                Kind::Item,
                format!("let {name} (v : 'a vector) (k : int32) : 'a = v.(k)"),
                vec![],
            ),
            HelperKind::Put => Node::new(
                Kind::Item,
                format!("let {name} (v : 'a vector) (k : int32) (x : 'a) : unit = v.(k) <- x"),
                vec![],
            ),
            HelperKind::DivMod => Node::new(
                Kind::Item,
                format!("let {name} (a : int32) (b : int32) : int32 * int32 = (a / b, a mod b)"),
                vec![],
            ),
            HelperKind::RecordFn => {
                self.vars.push(Var {
                    name: "pr_f0".into(),
                    ty: Ty::I32,
                    info: Info::exact(false),
                    mutable: false,
                });
                let (e, _) = self.int(Ty::I32, helper_ctx, 2);
                Node::new(
                    Kind::Item,
                    format!(
                        "let {name} (r : r0) : int32 =\n  let pr_f0 = r.f0 in if r.f2 then $0 else pr_f0 lxor 5"
                    ),
                    vec![e],
                )
            }
        };
        self.vars = saved;
        self.opaque_int = saved_opaque;
        self.helpers.push(Helper { name, kind });
        node
    }

    fn case(&mut self, seed: u64) -> Case {
        // Launch: mostly power-of-two blocks; partial warps (16, 48) now and then.
        self.block = *self.rng.pick(&[64, 64, 32, 128, 256, 16, 48]);
        let grid = *self.rng.pick(&[1u32, 2, 4]);
        self.size = (self.block * grid) as usize;
        if self.wide {
            self.features.insert("64-bit");
        }
        // Vectors: always out_i and in_i, then a random selection (at most 8 in 70% of
        // kernels, the binding limit of wgpu's default device).
        let mut vecs = vec![
            ("out_i", VecKind::Output(Ty::I32)),
            ("in_i", VecKind::Input(Ty::I32)),
        ];
        let mut optional = vec![
            ("out_f", VecKind::Output(Ty::F32)),
            ("in_f", VecKind::Input(Ty::F32)),
            ("out_b", VecKind::Output(Ty::Bool)),
            ("in_b", VecKind::Input(Ty::Bool)),
            ("acc", VecKind::Accumulator(Ty::I32)),
            ("own", VecKind::Own),
            ("in_r", VecKind::InRecord),
            ("out_r", VecKind::OutRecord),
            ("in_v", VecKind::InVariant),
            ("out_v", VecKind::OutVariant),
            ("out_t", VecKind::OutTuple),
        ];
        if self.wide {
            optional.extend([
                ("out_l", VecKind::Output(Ty::I64)),
                ("in_l", VecKind::Input(Ty::I64)),
                ("out_d", VecKind::Output(Ty::F64)),
                ("in_d", VecKind::Input(Ty::F64)),
                ("acc_l", VecKind::Accumulator(Ty::I64)),
            ]);
        }
        let limit = if self.rng.pct(70) { 8 } else { 12 };
        while vecs.len() < limit && !optional.is_empty() {
            if self.rng.pct(30) {
                break;
            }
            let k = self.rng.below(optional.len());
            vecs.push(optional.remove(k));
        }
        self.vectors = vecs
            .iter()
            .map(|(n, k)| VecParam {
                name: n.to_string(),
                kind: k.clone(),
            })
            .collect();
        let uses_records = self
            .vectors
            .iter()
            .any(|v| matches!(v.kind, VecKind::InRecord | VecKind::OutRecord));

        // Scalars, with edge values: runtime operands (not constants) for the same edges.
        let mut args = Vec::new();
        let mut scalar_params = Vec::new();
        let si = *self.rng.pick(&[
            "-2147483648",
            "-1",
            "0",
            "1",
            "31",
            "32",
            "33",
            "2147483647",
            "-7",
            "1000",
        ]);
        scalar_params.push(("si", Ty::I32, si.to_string(), true));
        if self.rng.pct(60) {
            let sf = *self
                .rng
                .pick(&["0.75", "-0.25", "1.5", "-3.5", "1e6", "0.1", "-0.0"]);
            scalar_params.push(("sf", Ty::F32, sf.to_string(), false));
        }
        if self.rng.pct(50) {
            let sx = *self.rng.pick(&[
                "nan",
                "1e999",
                "-1e999",
                "3e9",
                "-3e9",
                "2147483648",
                "-2147483904",
                "1e20",
                "-0.0",
                "2.5",
                "-1.5",
            ]);
            scalar_params.push(("sx", Ty::F32, sx.to_string(), false));
        }
        if self.rng.pct(40) {
            scalar_params.push((
                "sb",
                Ty::Bool,
                self.rng.pick(&["true", "false"]).to_string(),
                false,
            ));
        }
        if self.wide {
            let sl = *self.rng.pick(&[
                "-9223372036854775807",
                "-1",
                "0",
                "63",
                "64",
                "65",
                "9223372036854775807",
                "4294967296",
            ]);
            scalar_params.push(("sl", Ty::I64, sl.to_string(), false));
            if self.rng.pct(50) {
                let sd = *self.rng.pick(&["0.75", "-0.25", "1e15", "0.1"]);
                scalar_params.push(("sd", Ty::F64, sd.to_string(), false));
            }
            if self.rng.pct(50) {
                let sdx = *self.rng.pick(&[
                    "nan", "1e999", "-1e999", "1e19", "-1e19", "9.3e18", "-9.3e18", "1e300", "3e9",
                    "-0.0",
                ]);
                scalar_params.push(("sdx", Ty::F64, sdx.to_string(), false));
            }
        }
        for (name, ty, value, _) in &scalar_params {
            let unit = Self::lit_is_unit(value);
            self.scalars.push((
                name.to_string(),
                *ty,
                Info {
                    class: Class::Leaf,
                    unit,
                    uniform: true,
                },
            ));
            args.push((name.to_string(), value.clone()));
        }

        // Items: types, helpers.
        let mut items = Vec::new();
        let mut record = "type r0 = { f0 : int32; f1 : float32; f2 : bool".to_string();
        if self.wide {
            record.push_str("; f3 : int64; f4 : float64");
        }
        record.push_str(" }");
        items.push(Node::new(Kind::Item, record, vec![]));
        items.push(Node::new(
            Kind::Item,
            "type v0 = A0 of int32 | B0 of float32 * int32 | C0",
            vec![],
        ));
        let n_helpers = self.rng.below(5);
        for _ in 0..n_helpers {
            let kind = match self.rng.below(9) {
                0 => HelperKind::Binary(Ty::I32),
                1 => HelperKind::Binary(Ty::F32),
                2 if self.wide => HelperKind::Binary(*self.rng.pick(&[Ty::I64, Ty::F64])),
                2 => HelperKind::Binary(Ty::I32),
                3 => HelperKind::Recursive {
                    depth: *self.rng.pick(&[1, 3, 4, 6]),
                },
                4 => HelperKind::Tail,
                5 => HelperKind::Pick,
                6 => self.rng.pick(&[HelperKind::Get, HelperKind::Put]).clone(),
                7 => HelperKind::DivMod,
                _ if uses_records => HelperKind::RecordFn,
                _ => HelperKind::Pick,
            };
            let node = self.helper_item(kind);
            items.push(node);
        }

        // The kernel.
        self.opaque_int = Some("si");
        let mut params: Vec<Node> = self
            .vectors
            .iter()
            .map(|v| {
                let ty = match &v.kind {
                    VecKind::Input(t) | VecKind::Output(t) | VecKind::Accumulator(t) => {
                        t.name().to_string()
                    }
                    VecKind::Own => "int32".into(),
                    VecKind::InRecord | VecKind::OutRecord => "r0".into(),
                    VecKind::InVariant | VecKind::OutVariant => "v0".into(),
                    VecKind::OutTuple => "(int32 * float32)".into(),
                };
                Node::new(Kind::Param, format!("({} : {ty} vector)", v.name), vec![])
            })
            .collect();
        for (name, ty, _, _) in &scalar_params {
            params.push(Node::new(
                Kind::Param,
                format!("({name} : {})", ty.name()),
                vec![],
            ));
        }
        let ctx = Ctx {
            uniform_flow: true,
            top: true,
            helper: false,
            loops: 0,
        };
        self.vars.push(Var {
            name: "i".into(),
            ty: Ty::I32,
            info: Info::exact(false),
            mutable: false,
        });
        self.vars.push(Var {
            name: "t".into(),
            ty: Ty::I32,
            info: Info::exact(false),
            mutable: false,
        });
        self.budget = 6 + self.rng.below(18) as i32;
        let mut stmts = vec![
            Node::let_("let i = global_thread_id in", vec![]),
            Node::let_("let t = thread_idx_x in", vec![]),
        ];
        while self.budget > 0 {
            self.budget -= 1;
            stmts.extend(self.stmt(ctx));
        }
        // Make the end state observable: one more store per output vector, in the scope of
        // everything the body bound.
        let outs: Vec<VecParam> = self
            .vectors
            .iter()
            .filter(|v| matches!(v.kind, VecKind::Output(_)))
            .cloned()
            .collect();
        for v in outs {
            let VecKind::Output(ty) = v.kind else {
                continue;
            };
            let (e, _) = self.value(ty, ctx, 3);
            stmts.push(Node::stmt(format!("{}.(i) <- $0", v.name), vec![e]));
        }
        let body = Node::block(stmts);
        let params_text: String = (0..params.len()).map(|k| format!(" ${k}")).collect();
        let np = params.len();
        let mut kids = params;
        kids.push(body);
        let kernel = Node::new(
            Kind::Item,
            format!("let%kernel k{params_text} =\n${np}"),
            kids,
        );
        items.push(kernel);
        let tree = Node::new(Kind::Other, join_template(items.len()), items);
        Case {
            seed,
            tree,
            kernel: "k".into(),
            size: self.size,
            block: self.block,
            grid,
            args,
            features: std::mem::take(&mut self.features),
        }
    }
}

fn both(a: Info, b: Info) -> Info {
    Info {
        class: a.class.max(b.class),
        unit: a.unit && b.unit,
        uniform: a.uniform && b.uniform,
    }
}

/// `$0\n\n$1\n\n...` for the program root.
fn join_template(n: usize) -> String {
    (0..n)
        .map(|k| format!("${k}"))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A barrier: not removable by the shrinker (removing one makes a race, not a smaller bug).
fn barrier() -> Node {
    Node::new(Kind::Other, "block_barrier ()", vec![])
}

/// A literal is not negated in place: the front end folds `- lit` into one literal and then
/// refuses `- 0x80000000` and `- (-2147483648)` as out of range (a known defect, issue 15;
/// OCaml wraps both to min_int). The operand becomes `(lit lor 0)`.
fn no_negated_radix(n: Node) -> Node {
    match n.kind {
        Kind::Lit(ty) if ty.is_int() => {
            let text = if ty == Ty::I64 {
                "($0 lor 0L)"
            } else {
                "($0 lor 0)"
            };
            Node::expr(ty, text, vec![n])
        }
        _ => n,
    }
}

/// Whether `n` is built from literals only (what a constant evaluator folds).
fn is_constant(n: &Node) -> bool {
    const OPERATORS: &[&str] = &[
        "land",
        "lor",
        "lxor",
        "lsl",
        "lsr",
        "asr",
        "mod",
        "lnot",
        "abs",
        "clz",
        "popcount",
        "min",
        "max",
        "int32",
        "int64",
        "float32",
        "float64",
        "float",
        "float_of_int",
        "Int32.of_int",
        "Int32.neg",
        "Int32.lognot",
        "Int32.abs",
        "Float32.of_int",
        "Float64.of_float32",
        "if",
        "then",
        "else",
        "match",
        "with",
        "not",
        "true",
        "false",
        "fmin",
        "fmax",
        "floor",
        "ceil",
        "round",
        "trunc",
        "abs_float",
        "fabs",
    ];
    match n.kind {
        Kind::Lit(_) => true,
        // The block size is a pipeline constant in WGSL: constant once the pipeline is made.
        _ if n.children.is_empty() => n.text == "block_dim_x",
        _ => {
            n.children.iter().all(is_constant)
                && n.text
                    .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                    .all(|w| {
                        w.is_empty()
                            || w.starts_with(|c: char| c.is_ascii_digit())
                            || OPERATORS.contains(&w)
                    })
        }
    }
}
