//! Lane groups: a segment whose control flow is the same for consecutive threads runs
//! [`LANES`] threads at a time, each statement once for the group, so the threads' chains of
//! dependent instructions (an accumulation, a loop counter) interleave and the core overlaps
//! them; values that are the same for the group (a parameter, `thread_idx_y`, a load at such
//! an index) are computed once, and accesses at consecutive indices (`thread_idx_x` plus a
//! group-uniform offset) are bounds-checked once for the group.
//!
//! A group is consecutive threads of one row (2-D and 3-D blocks need `block_dim_x` to be a
//! multiple of [`LANES`], else the segment runs thread by thread). Before its first effect (a
//! store), a group whose lanes disagree on a condition, or that fails a bounds or
//! zero-divisor check, is rerun thread by thread from its start, so faults are reported
//! exactly as the thread loop reports them. After an effect the group cannot rerun (its
//! stores would run twice): an `if` whose lanes disagree runs each lane's arm in turn (arms
//! of `let`s, assignments and loads only, [`group_safe`] checks it), and a check that fails
//! ends the launch with [`SiteKind::GroupFault`], which the caller treats like a divergent
//! barrier (the launch is rerun on the interpreter, which reports the fault). A `while` runs
//! masked ([`masked`]): lanes leave it at different iterations.
//!
//! Comparisons of a consecutive index with a group-uniform bound (`i < n`) are decided from
//! the group's first and last lane. Bounds checks and such conditions are hoisted out of
//! innermost `for` loops and out of the thread loop itself ([`hoist`], [`Gen::thread_plan`]).
//!
//! Lanes are scalar Cranelift values, except float32 arithmetic: a group of [`LANES`] = 8
//! threads holds a float32 value as two `f32x4` vectors (Cranelift's widest), so a load of
//! consecutive elements is two vector loads, `+.`, `-.`, `*.` and `/.` with such an operand
//! are two vector instructions (IEEE-exact like the scalar ones), a mutable float32 variable
//! is two vector registers, and a store of consecutive elements is two vector stores. The
//! two halves are independent chains emitted side by side, so a per-thread accumulation
//! (the tiled matmul's `acc`) overlaps twice as deep as one vector's chain would. Anything
//! else takes the lanes apart (masked loops keep int32 values as two `i32x4` too).

use super::{Gen, R, cty, hoist, pure};
use crate::launch::{STATUS_DIVERGENT, SiteKind};
use crate::structure::Segment;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Block, InstBuilder, MemFlagsData as MemFlags, Value, types};
use cranelift_frontend::Variable;
use sarek_compiler::intrinsics::{Axis, Geometry, Intrinsic};
use sarek_compiler::ir::{Expr, ExprKind, Kernel, LValue, Stmt, StmtKind, Ty, VarId};
use sarek_compiler::types::{BinOp, Literal, MemSpace, Scalar};
use std::collections::{HashMap, HashSet};

mod masked;

/// Threads per lane group: two vectors of [`VLANES`], so a float32 chain (an accumulation)
/// runs as two independent chains the core overlaps, interleaved instruction by instruction.
pub(super) const LANES: usize = 8;
/// Lanes per 128-bit vector (`f32x4`, `i32x4`).
pub(super) const VLANES: usize = 4;
/// Vectors per group value.
pub(super) const HALVES: usize = LANES / VLANES;

/// A float32 (or masked int32/bool) value of the group as its vectors, lanes `4h..4h + 4` in
/// vector `h`.
pub(super) type Vectors = [Value; HALVES];

/// A versioned loop with a constant trip count up to this is unrolled ...
const UNROLL_TRIPS: i64 = 16;
/// ... when its copies hold at most this many statements and expression nodes; one of more
/// than [`UNROLL_CHUNK`] trips (a multiple of it) is a loop over chunks of that many copies.
/// Cranelift places a pure instruction where its value is first needed, so a fully unrolled
/// accumulation would run each half's whole chain after the other's (the store at the end
/// needs them one by one); a loop's back edge needs both halves' values at every chunk.
const UNROLL_SIZE: usize = 400;
const UNROLL_CHUNK: i64 = 4;

/// How the lanes of a value relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    /// The same value in every lane.
    Uniform,
    /// Lane `l` holds lane 0's value plus `l` (an int32 index).
    Consecutive,
    /// Anything else.
    Varying,
}

impl Shape {
    fn join(self, other: Shape) -> Shape {
        if self == Shape::Uniform && other == Shape::Uniform {
            Shape::Uniform
        } else {
            Shape::Varying
        }
    }
}

// ---- which segments run in lane groups ----

/// Whether `seg` can run in lane groups: scalar values only, group-uniform `for` loops,
/// `while` loops that can run masked, global or shared memory, no call, atomic or warp
/// operation, no `break`/`continue`/`return`/`match`/trap, and after the first effect only
/// lane-dependent `if`s whose arms can run lane by lane (a failed check after it ends the
/// launch for the interpreter instead).
pub(super) fn group_safe(k: &Kernel, seg: &Segment) -> bool {
    let mut a = Analysis {
        k,
        shapes: HashMap::new(),
        mutable: seg.loads.iter().copied().collect(),
        effect: false,
    };
    a.block(&seg.stmts).is_some()
}

struct Analysis<'k> {
    k: &'k Kernel,
    shapes: HashMap<VarId, Shape>,
    /// Variables with one value per lane (frame-loaded or mutable).
    mutable: HashSet<VarId>,
    effect: bool,
}

impl Analysis<'_> {
    fn block(&mut self, b: &[Stmt]) -> Option<()> {
        b.iter().try_for_each(|s| self.stmt(s))
    }

    fn scalar_var(&self, v: VarId) -> Option<()> {
        self.k.var(v).ty.scalar().map(|_| ())
    }

    fn stmt(&mut self, s: &Stmt) -> Option<()> {
        match &s.kind {
            StmtKind::Let { var, init } => {
                self.scalar_var(*var)?;
                let shape = match init {
                    Some(e) => self.expr(e)?,
                    None => Shape::Varying,
                };
                if self.k.var(*var).mutable || init.is_none() {
                    self.mutable.insert(*var);
                } else {
                    self.shapes.insert(*var, shape);
                }
            }
            StmtKind::Assign { place, value } => {
                self.expr(value)?;
                match place {
                    LValue::Var(v) if self.mutable.contains(v) => {}
                    LValue::Index { base, index } => {
                        self.memory(*base)?;
                        self.expr(index)?;
                        self.effect = true;
                    }
                    _ => return None,
                }
            }
            StmtKind::For {
                var,
                start,
                end,
                body,
                ..
            } => {
                if self.expr(start)? != Shape::Uniform || self.expr(end)? != Shape::Uniform {
                    return None;
                }
                self.shapes.insert(*var, Shape::Uniform);
                // Twice: a second iteration runs after the first one's effects.
                self.block(body)?;
                self.block(body)?;
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                if self.expr(cond)? != Shape::Uniform && self.effect {
                    // After an effect the group cannot rerun: lanes that disagree run their
                    // own arms one after the other (arms of variables and loads only).
                    (lane_by_lane(then_block) && lane_by_lane(else_block)).then_some(())?;
                }
                let before = self.effect;
                self.block(then_block)?;
                let after_then = std::mem::replace(&mut self.effect, before);
                self.block(else_block)?;
                self.effect |= after_then;
            }
            StmtKind::Block(b) => self.block(b)?,
            StmtKind::While { cond, body, .. } => self.masked_loop(cond, body)?,
            _ => return None,
        }
        Some(())
    }

    fn memory(&self, v: VarId) -> Option<()> {
        let single = |e: &Ty| e.scalar().is_some();
        match &self.k.var(v).ty {
            Ty::Vector(e) if self.k.params.contains(&v) && single(e) => Some(()),
            Ty::Array {
                elem,
                space: MemSpace::Shared,
                size: Some(_),
            } if single(elem) => Some(()),
            _ => None,
        }
    }

    fn expr(&mut self, e: &Expr) -> Option<Shape> {
        e.ty.scalar()?;
        Some(match &e.kind {
            ExprKind::Lit(_) => Shape::Uniform,
            ExprKind::Var(v) => {
                if self.mutable.contains(v) {
                    Shape::Varying
                } else {
                    // Defined in the segment, else a parameter or a uniform loop counter.
                    self.shapes.get(v).copied().unwrap_or(Shape::Uniform)
                }
            }
            ExprKind::Binary { op, lhs, rhs, .. } => {
                if matches!(op, BinOp::And | BinOp::Or) && !pure(rhs) {
                    return None;
                }
                let (a, b) = (self.expr(lhs)?, self.expr(rhs)?);
                binary_shape(*op, a, b)
            }
            ExprKind::Unary { operand, .. } => self.expr(operand)?.join(Shape::Uniform),
            ExprKind::Index { base, index } => {
                self.memory(*base)?;
                let i = self.expr(index)?;
                i.join(Shape::Uniform)
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                let c = self.expr(cond)?;
                let a = self.expr(then_value)?;
                let b = self.expr(else_value)?;
                c.join(a).join(b)
            }
            ExprKind::Intrinsic { op, args } => match op {
                Intrinsic::Geometry(g) => geometry_shape(*g),
                Intrinsic::Convert
                | Intrinsic::Min
                | Intrinsic::Max
                | Intrinsic::Abs
                | Intrinsic::Math(_) => {
                    let mut shape = Shape::Uniform;
                    for a in args {
                        shape = shape.join(self.expr(a)?);
                    }
                    shape
                }
                Intrinsic::Length => match args.first().map(|a| &a.kind) {
                    Some(ExprKind::Var(v)) => {
                        self.memory(*v)?;
                        Shape::Uniform
                    }
                    _ => return None,
                },
                _ => return None,
            },
            _ => return None,
        })
    }
}

/// Whether an `if` arm can run for one lane of a group at a time: `let`s, assignments to
/// variables and nested such `if`s (no store, loop or call).
fn lane_by_lane(b: &[Stmt]) -> bool {
    b.iter().all(|s| match &s.kind {
        StmtKind::Let { .. }
        | StmtKind::Assign {
            place: LValue::Var(_),
            ..
        } => true,
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => lane_by_lane(then_block) && lane_by_lane(else_block),
        StmtKind::Block(b) => lane_by_lane(b),
        _ => false,
    })
}

/// Whether statements store to memory.
fn stores(b: &[Stmt]) -> bool {
    hoist::all_stmts(b).iter().any(|s| {
        matches!(
            s.kind,
            StmtKind::Assign {
                place: LValue::Index { .. },
                ..
            }
        )
    })
}

/// Integer division by a literal other than 0 and -1 cannot fault or overflow.
fn safe_divisor(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Lit(Literal::I32(x)) if x != 0 && x != -1)
        || matches!(e.kind, ExprKind::Lit(Literal::I64(x)) if x != 0 && x != -1)
}

fn binary_shape(op: BinOp, a: Shape, b: Shape) -> Shape {
    use Shape::*;
    match (op, a, b) {
        (BinOp::Add, Consecutive, Uniform) | (BinOp::Add, Uniform, Consecutive) => Consecutive,
        (BinOp::Sub, Consecutive, Uniform) => Consecutive,
        _ => a.join(b),
    }
}

fn geometry_shape(g: Geometry) -> Shape {
    match g {
        Geometry::ThreadIdx(Axis::X) | Geometry::GlobalIdx(Axis::X) => Shape::Consecutive,
        _ => Shape::Uniform,
    }
}

// ---- code generation ----

/// A value in every lane of the group: one value per lane, or (`vec`) `f32x4` vectors
/// holding them (then `v` is meaningless: see [`Gen::split`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Lanes {
    v: [Value; LANES],
    shape: Shape,
    vec: Option<Vectors>,
}

impl Lanes {
    fn uniform(v: Value) -> Lanes {
        Lanes {
            v: [v; LANES],
            shape: Shape::Uniform,
            vec: None,
        }
    }

    fn varying(v: [Value; LANES]) -> Lanes {
        Lanes {
            v,
            shape: Shape::Varying,
            vec: None,
        }
    }

    fn f32x4(x: Vectors) -> Lanes {
        Lanes {
            v: [x[0]; LANES],
            shape: Shape::Varying,
            vec: Some(x),
        }
    }
}

/// A variable with a value per lane: a scalar each, or `f32x4` vectors (float32).
#[derive(Clone, Copy)]
enum LaneVar {
    Scalars([Variable; LANES]),
    F32x4([Variable; HALVES]),
}

/// The state of one group's code: where a disagreeing or failing group goes, and the
/// segment's values.
pub(super) struct Group {
    /// Rerun the group thread by thread.
    redo: Block,
    /// `thread_idx_x` of lane 0.
    x: Value,
    /// A store may have run on the way here (so a failing check cannot rerun the group).
    effect: bool,
    /// Evaluating for this lane alone (an arm of a conditional expression the lanes
    /// disagree on): only its accesses are checked and made.
    only: Option<usize>,
    lets: HashMap<VarId, Lanes>,
    vars: HashMap<VarId, LaneVar>,
    /// Accesses of the versioned loops being generated whose bounds were checked before
    /// them ([`hoist`]), by index expression.
    fast: HashMap<*const Expr, FastAddr>,
    /// `if` conditions known to hold in every lane (checked before the thread loop).
    known_true: HashSet<*const Expr>,
}

/// The address of a hoisted access: lane 0's is `base + Σ counter · step` (bytes) over the
/// loop's counters (one for a `for` loop; the thread's x, y and z for the thread loop).
#[derive(Clone, Copy)]
pub(super) struct FastAddr {
    pub base: Value,
    /// A counter (an int32 or int64 variable) and the bytes each of its steps adds.
    pub steps: [Option<(Variable, Value)>; 3],
    /// Lane `l` is `l` elements further (else every lane reads the same element).
    pub consecutive: bool,
    pub size: i64,
}

/// What the thread loop of a 1-D block checked before it: hoisted accesses and conditions.
#[derive(Default)]
pub(super) struct Hoisted {
    pub fast: HashMap<*const Expr, FastAddr>,
    pub known_true: HashSet<*const Expr>,
}

impl Gen<'_, '_> {
    /// The body of one lane group of `seg` (thread `tid`.. in the current block), ending in
    /// the current block; a lane disagreement or failed check jumps to `redo`.
    pub(super) fn group_body(
        &mut self,
        seg: &Segment,
        tid: Value,
        x: Value,
        redo: Block,
        hoisted: Option<&Hoisted>,
    ) -> R<()> {
        let mut g = Group {
            redo,
            x,
            effect: false,
            only: None,
            lets: HashMap::new(),
            vars: HashMap::new(),
            fast: hoisted.map(|h| h.fast.clone()).unwrap_or_default(),
            known_true: hoisted.map(|h| h.known_true.clone()).unwrap_or_default(),
        };
        let f = Self::trusted();
        // The frame keeps a row per leaf (`Gen::slot_addr`): the group's cells of a float32
        // leaf are (unaligned) vectors.
        let vf = MemFlags::new().with_notrap();
        let frames: Vec<Value> = if seg.loads.is_empty() && seg.stores.is_empty() {
            Vec::new()
        } else {
            (0..LANES)
                .map(|l| {
                    let t = self.b.ins().iadd_imm_s(tid, l as i64);
                    self.frame_of(t)
                })
                .collect()
        };
        for &v in &seg.loads {
            let s = self.scalar_of(v)?;
            if s == Scalar::F32 {
                let a = self.slot_addr(frames[0], v, 0)?;
                let x = [0, 1].map(|h| self.b.ins().load(types::F32X4, vf, a, 16 * h));
                self.g_assign(&mut g, v, Lanes::f32x4(x))?;
                continue;
            }
            let mut vals = [tid; LANES];
            for (l, x) in vals.iter_mut().enumerate() {
                let a = self.slot_addr(frames[l], v, 0)?;
                *x = self.b.ins().load(cty(s), f, a, 0);
            }
            self.g_assign(&mut g, v, Lanes::varying(vals))?;
        }
        for s in &seg.stmts {
            self.g_stmt(&mut g, s)?;
        }
        for &v in &seg.stores {
            let vals = self.g_read(&mut g, v)?;
            if self.scalar_of(v)? == Scalar::F32 {
                let x = self.vector(vals);
                let a = self.slot_addr(frames[0], v, 0)?;
                for (h, x) in x.into_iter().enumerate() {
                    self.b.ins().store(vf, x, a, 16 * h as i32);
                }
                continue;
            }
            let vals = self.split(vals);
            for (l, x) in vals.v.iter().enumerate() {
                let a = self.slot_addr(frames[l], v, 0)?;
                self.b.ins().store(f, *x, a, 0);
            }
        }
        Ok(())
    }

    fn scalar_of(&self, v: VarId) -> R<Scalar> {
        self.k
            .var(v)
            .ty
            .scalar()
            .ok_or_else(|| self.unsupported("an aggregate in a lane group"))
    }

    fn lane_var(&mut self, g: &mut Group, v: VarId) -> R<LaneVar> {
        if let Some(vs) = g.vars.get(&v) {
            return Ok(*vs);
        }
        let s = self.scalar_of(v)?;
        let lv = if s == Scalar::F32 {
            LaneVar::F32x4([(); HALVES].map(|_| self.b.declare_var(types::F32X4)))
        } else {
            LaneVar::Scalars([(); LANES].map(|_| self.b.declare_var(cty(s))))
        };
        g.vars.insert(v, lv);
        Ok(lv)
    }

    /// `v := value` in every lane.
    fn g_assign(&mut self, g: &mut Group, v: VarId, value: Lanes) -> R<()> {
        if let Some(l) = g.only {
            // One lane's arm: the other lanes keep their values.
            let value = self.split(value);
            match self.lane_var(g, v)? {
                LaneVar::F32x4(xs) => {
                    let x = xs[l / VLANES];
                    let old = self.b.use_var(x);
                    let new = self.b.ins().insertlane(old, value.v[l], (l % VLANES) as u8);
                    self.b.def_var(x, new);
                }
                LaneVar::Scalars(xs) => self.b.def_var(xs[l], value.v[l]),
            }
            return Ok(());
        }
        match self.lane_var(g, v)? {
            LaneVar::F32x4(xs) => {
                let vec = self.vector(value);
                for (x, v) in xs.iter().zip(vec) {
                    self.b.def_var(*x, v);
                }
            }
            LaneVar::Scalars(xs) => {
                let value = self.split(value);
                for (x, v) in xs.iter().zip(value.v) {
                    self.b.def_var(*x, v);
                }
            }
        }
        Ok(())
    }

    /// The lanes as separate values.
    fn split(&mut self, l: Lanes) -> Lanes {
        match l.vec {
            None => l,
            Some(x) => Lanes::varying(std::array::from_fn(|i| {
                self.b.ins().extractlane(x[i / VLANES], (i % VLANES) as u8)
            })),
        }
    }

    /// The lanes of a float32 value as `f32x4` vectors.
    fn vector(&mut self, l: Lanes) -> Vectors {
        if let Some(x) = l.vec {
            return x;
        }
        if l.shape == Shape::Uniform {
            let x = self.b.ins().splat(types::F32X4, l.v[0]);
            return [x; HALVES];
        }
        std::array::from_fn(|h| {
            let lanes = &l.v[h * VLANES..(h + 1) * VLANES];
            let mut x = self.b.ins().scalar_to_vector(types::F32X4, lanes[0]);
            for (i, v) in lanes.iter().enumerate().skip(1) {
                x = self.b.ins().insertlane(x, *v, i as u8);
            }
            x
        })
    }

    fn g_read(&mut self, g: &mut Group, v: VarId) -> R<Lanes> {
        if let Some(l) = g.lets.get(&v) {
            return Ok(*l);
        }
        if let Some(lv) = g.vars.get(&v) {
            return Ok(match *lv {
                LaneVar::F32x4(xs) => Lanes::f32x4(xs.map(|x| self.b.use_var(x))),
                LaneVar::Scalars(xs) => Lanes::varying(xs.map(|x| self.b.use_var(x))),
            });
        }
        // A parameter or the counter of a uniform loop: one value.
        Ok(Lanes::uniform(self.read_var(v)[0]))
    }

    /// Jump to the thread-by-thread rerun when `bad` (lanes disagree; no effect yet).
    fn g_check(&mut self, g: &Group, bad: Value) {
        let ok = self.b.create_block();
        self.b.ins().brif(bad, g.redo, &[], ok, &[]);
        self.b.switch_to_block(ok);
    }

    /// A failing bounds check: rerun the group thread by thread, or after an effect, end
    /// the launch for the interpreter to rerun.
    fn g_bounds(&mut self, g: &Group, bad: Value) {
        if !g.effect {
            return self.g_check(g, bad);
        }
        self.check_status(bad, SiteKind::GroupFault, None, None, STATUS_DIVERGENT);
    }

    fn g_stmt(&mut self, g: &mut Group, s: &Stmt) -> R<()> {
        self.span = s.span;
        match &s.kind {
            StmtKind::Let { var, init } => {
                let mutable = self.k.var(*var).mutable || init.is_none();
                let Some(init) = init else {
                    let z = self.zero(self.scalar_of(*var)?);
                    return self.g_assign(g, *var, Lanes::uniform(z));
                };
                let val = self.g_expr(g, init)?;
                if mutable {
                    self.g_assign(g, *var, val)?;
                } else {
                    g.lets.insert(*var, val);
                }
            }
            StmtKind::Assign { place, value } => {
                let val = self.g_expr(g, value)?;
                match place {
                    LValue::Var(v) => self.g_assign(g, *v, val)?,
                    LValue::Index { base, index } => {
                        let i = self.g_expr(g, index)?;
                        let addrs = self.g_addrs(g, *base, index, i)?;
                        g.effect = true;
                        if let (Some(x), Shape::Consecutive) = (val.vec, i.shape) {
                            // Elements are only 4-byte aligned: an `aligned` vector
                            // access could become a faulting SSE memory operand.
                            let unaligned = MemFlags::new().with_notrap();
                            for (h, x) in x.into_iter().enumerate() {
                                self.b.ins().store(unaligned, x, addrs[h * VLANES], 0);
                            }
                            return Ok(());
                        }
                        let val = self.split(val);
                        for (l, a) in addrs.iter().enumerate() {
                            let v = if i.shape == Shape::Uniform && val.shape != Shape::Uniform {
                                // Every lane writes the same element: the last one wins, as
                                // in the thread loop.
                                val.v[LANES - 1]
                            } else {
                                val.v[l]
                            };
                            self.b.ins().store(Self::trusted(), v, *a, 0);
                            if i.shape == Shape::Uniform {
                                break;
                            }
                        }
                    }
                    LValue::Field { .. } => {
                        return Err(self.unsupported("a field store in a lane group"));
                    }
                }
            }
            StmtKind::For {
                var,
                start,
                end,
                downto,
                body,
                ..
            } => self.g_for(g, *var, start, end, *downto, body)?,
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                if g.known_true.contains(&(cond as *const Expr)) {
                    for s in then_block {
                        self.g_stmt(g, s)?;
                    }
                    return Ok(());
                }
                if g.effect {
                    return self.g_if_lanes(g, cond, then_block, else_block);
                }
                let c = self.g_if_cond(g, cond)?;
                let (t, e, m) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().brif(c, t, &[], e, &[]);
                self.b.switch_to_block(t);
                let before = g.effect;
                for s in then_block {
                    self.g_stmt(g, s)?;
                }
                let after_then = std::mem::replace(&mut g.effect, before);
                self.b.ins().jump(m, &[]);
                self.b.switch_to_block(e);
                for s in else_block {
                    self.g_stmt(g, s)?;
                }
                g.effect |= after_then;
                self.b.ins().jump(m, &[]);
                self.b.switch_to_block(m);
            }
            StmtKind::Block(b) => {
                for s in b {
                    self.g_stmt(g, s)?;
                }
            }
            StmtKind::While { cond, body, .. } => self.g_while(g, cond, body)?,
            _ => return Err(self.unsupported("this statement in a lane group")),
        }
        Ok(())
    }

    /// A group-uniform `for` loop. An innermost loop whose accesses are affine in its
    /// counter is versioned ([`hoist`]): their bounds are checked once before the loop, and a
    /// copy without those checks (fully unrolled when the trip count is a small constant)
    /// runs when they pass.
    fn g_for(
        &mut self,
        g: &mut Group,
        var: VarId,
        start: &Expr,
        end: &Expr,
        downto: bool,
        body: &[Stmt],
    ) -> R<()> {
        let s0 = self.g_expr(g, start)?;
        let e0 = self.g_expr(g, end)?;
        if s0.shape != Shape::Uniform || e0.shape != Shape::Uniform {
            return Err(self.unsupported("a lane-dependent loop in a lane group"));
        }
        let s0 = self.b.ins().sextend(types::I64, s0.v[0]);
        let e0 = self.b.ins().sextend(types::I64, e0.v[0]);
        // A later iteration runs after this one's stores.
        let effect = g.effect | stores(body);
        let cnt = self.b.declare_var(types::I64);
        let Some((ok, fast)) = self.g_hoist(g, var, body, s0, e0, cnt)? else {
            g.effect = effect;
            return self.g_loop(g, var, cnt, s0, e0, downto, body);
        };
        let (fast_b, slow_b, exit) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.versioned += 1;
        self.b.ins().brif(ok, fast_b, &[], slow_b, &[]);
        self.b.switch_to_block(fast_b);
        g.effect = effect;
        let keys: Vec<*const Expr> = fast.iter().map(|(k, _)| *k).collect();
        g.fast.extend(fast);
        let trips = match (hoist::const_i32(start), hoist::const_i32(end)) {
            (Some(a), Some(b)) if downto => Some((a as i64, (a as i64 - b as i64 + 1).max(0))),
            (Some(a), Some(b)) => Some((a as i64, (b as i64 - a as i64 + 1).max(0))),
            _ => None,
        };
        match trips {
            Some((first, n))
                if n <= UNROLL_TRIPS
                    && n > UNROLL_CHUNK
                    && n % UNROLL_CHUNK == 0
                    && n as usize * hoist::size(body) <= UNROLL_SIZE =>
            {
                self.g_chunked_loop(g, var, cnt, first, n, downto, body)?;
            }
            Some((first, n))
                if n <= UNROLL_TRIPS && n as usize * hoist::size(body) <= UNROLL_SIZE =>
            {
                // Constant counters: every hoisted address is a constant offset.
                for i in 0..n {
                    let k = if downto { first - i } else { first + i };
                    let k32 = self.iconst(types::I32, k);
                    g.lets.insert(var, Lanes::uniform(k32));
                    let k64 = self.iconst(types::I64, k);
                    self.b.def_var(cnt, k64);
                    for s in body {
                        self.g_stmt(g, s)?;
                    }
                }
            }
            _ => self.g_loop(g, var, cnt, s0, e0, downto, body)?,
        }
        for k in keys {
            g.fast.remove(&k);
        }
        self.b.ins().jump(exit, &[]);
        self.b.switch_to_block(slow_b);
        g.effect = effect;
        let cnt = self.b.declare_var(types::I64);
        self.g_loop(g, var, cnt, s0, e0, downto, body)?;
        self.b.ins().jump(exit, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// A constant-trip loop (`n` trips from `first`, `n` a multiple of [`UNROLL_CHUNK`]) as a
    /// loop over chunks of [`UNROLL_CHUNK`] copies of its body.
    #[allow(clippy::too_many_arguments)]
    fn g_chunked_loop(
        &mut self,
        g: &mut Group,
        var: VarId,
        cnt: Variable,
        first: i64,
        n: i64,
        downto: bool,
        body: &[Stmt],
    ) -> R<()> {
        let dir = if downto { -1 } else { 1 };
        let chunk = self.b.declare_var(types::I64);
        let zero = self.iconst(types::I64, 0);
        self.b.def_var(chunk, zero);
        let (hdr, bodyb, exit) = self.enter_loop_header();
        let c = self.b.use_var(chunk);
        let go = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, c, n);
        self.b.ins().brif(go, bodyb, &[], exit, &[]);
        self.b.switch_to_block(bodyb);
        let k0 = self.b.ins().imul_imm_s(c, dir);
        let k0 = self.b.ins().iadd_imm_s(k0, first);
        for i in 0..UNROLL_CHUNK {
            let k64 = self.b.ins().iadd_imm_s(k0, i * dir);
            self.b.def_var(cnt, k64);
            let k32 = self.b.ins().ireduce(types::I32, k64);
            g.lets.insert(var, Lanes::uniform(k32));
            for s in body {
                self.g_stmt(g, s)?;
            }
        }
        let c = self.b.ins().iadd_imm_s(c, UNROLL_CHUNK);
        self.b.def_var(chunk, c);
        self.b.ins().jump(hdr, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// The exact int64 product of two group-uniform int32 values (`None`: not uniform).
    fn g_product(&mut self, g: &mut Group, x: Lanes, y: &Expr) -> R<Option<Value>> {
        let y = self.g_expr(g, y)?;
        if x.shape != Shape::Uniform || y.shape != Shape::Uniform {
            return Ok(None);
        }
        let x = self.b.ins().sextend(types::I64, x.v[0]);
        let y = self.b.ins().sextend(types::I64, y.v[0]);
        Ok(Some(self.b.ins().imul(x, y)))
    }

    /// The loop itself, from `s0` to `e0` (int64).
    #[allow(clippy::too_many_arguments)]
    fn g_loop(
        &mut self,
        g: &mut Group,
        var: VarId,
        cnt: Variable,
        s0: Value,
        e0: Value,
        downto: bool,
        body: &[Stmt],
    ) -> R<()> {
        self.b.def_var(cnt, s0);
        let (hdr, bodyb, exit) = self.enter_loop_header();
        let c = self.b.use_var(cnt);
        let cc = if downto {
            IntCC::SignedGreaterThanOrEqual
        } else {
            IntCC::SignedLessThanOrEqual
        };
        let go = self.b.ins().icmp(cc, c, e0);
        self.b.ins().brif(go, bodyb, &[], exit, &[]);
        self.b.switch_to_block(bodyb);
        let v = self.b.ins().ireduce(types::I32, c);
        g.lets.insert(var, Lanes::uniform(v));
        for s in body {
            self.g_stmt(g, s)?;
        }
        let c = self.b.use_var(cnt);
        let c = self.b.ins().iadd_imm_s(c, if downto { -1 } else { 1 });
        self.b.def_var(cnt, c);
        self.b.ins().jump(hdr, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// The bounds of every hoistable access of the loop, checked before it: the condition
    /// that they all hold, and their addresses; `None` when no access is hoistable.
    #[allow(clippy::type_complexity)]
    fn g_hoist(
        &mut self,
        g: &mut Group,
        var: VarId,
        body: &[Stmt],
        s0: Value,
        e0: Value,
        counter: Variable,
    ) -> R<Option<(Value, Vec<(*const Expr, FastAddr)>)>> {
        if !self.version_loops {
            return Ok(None);
        }
        let Some(accesses) = hoist::accesses(body, true) else {
            return Ok(None);
        };
        let lp = hoist::Loop::new(self.k, hoist::Counter::Var(var), body);
        let mutable: HashSet<VarId> = g.vars.keys().copied().collect();
        let allowed = |v: VarId| !mutable.contains(&v);
        let mut ok: Option<Value> = None;
        let mut out = Vec::new();
        for (base, index) in accesses {
            let key = index as *const Expr;
            if g.fast.contains_key(&key) || out.iter().any(|(k, _)| *k == key) {
                continue;
            }
            let Ok(m) = self.mem_of(base) else { continue };
            if matches!(m, super::Mem::Local(_)) || self.mem_leaves(m).len() != 1 {
                continue;
            }
            let Some(a) = lp.affine(index, &allowed) else {
                continue;
            };
            if a.step_yz.iter().any(|t| !t.is_empty()) {
                continue;
            }
            // The exact offset (lane 0) and step, in int64.
            let mut consecutive = false;
            let mut sum =
                |me: &mut Self, terms: &[hoist::Term<'_>], per_k: bool| -> R<Option<Value>> {
                    let mut acc = me.iconst(types::I64, 0);
                    for t in terms {
                        let v = match t.value {
                            hoist::TermValue::One => me.iconst(types::I64, 1),
                            hoist::TermValue::BlockBase(axis) => {
                                me.b.ins().sextend(types::I64, me.block_base[axis])
                            }
                            hoist::TermValue::Expr(x) => {
                                let l = me.g_expr(g, x)?;
                                match l.shape {
                                    Shape::Uniform => {}
                                    Shape::Consecutive if !per_k && !consecutive && t.mul == 1 => {
                                        consecutive = true
                                    }
                                    _ => return Ok(None),
                                }
                                me.b.ins().sextend(types::I64, l.v[0])
                            }
                            hoist::TermValue::Times(x, y) => {
                                let x = me.g_expr(g, x)?;
                                match me.g_product(g, x, y)? {
                                    Some(v) => v,
                                    None => return Ok(None),
                                }
                            }
                            hoist::TermValue::BlockBaseTimes(axis, y) => {
                                let x = Lanes::uniform(me.block_base[axis]);
                                match me.g_product(g, x, y)? {
                                    Some(v) => v,
                                    None => return Ok(None),
                                }
                            }
                        };
                        let v = me.b.ins().imul_imm_s(v, t.mul);
                        acc = me.b.ins().iadd(acc, v);
                    }
                    Ok(Some(acc))
                };
            let Some(offset) = sum(self, &a.offset, false)? else {
                continue;
            };
            let Some(step) = sum(self, &a.step, true)? else {
                continue;
            };
            let at_s = self.b.ins().imul(step, s0);
            let at_s = self.b.ins().iadd(offset, at_s);
            let at_e = self.b.ins().imul(step, e0);
            let at_e = self.b.ins().iadd(offset, at_e);
            let lo = self.b.ins().smin(at_s, at_e);
            let hi = self.b.ins().smax(at_s, at_e);
            let hi = if consecutive {
                self.b.ins().iadd_imm_s(hi, LANES as i64 - 1)
            } else {
                hi
            };
            let len = self.mem_len(m);
            let len = self.b.ins().uextend(types::I64, len);
            let lo_ok = self
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, lo, 0);
            let hi_ok = self.b.ins().icmp(IntCC::SignedLessThan, hi, len);
            let this = self.b.ins().band(lo_ok, hi_ok);
            ok = Some(match ok {
                Some(o) => self.b.ins().band(o, this),
                None => this,
            });
            let size = self.mem_leaves(m)[0].size() as i64;
            let col = self.mem_base(m);
            let off = self.b.ins().imul_imm_s(offset, size);
            let base_addr = self.b.ins().iadd(col, off);
            let step_bytes = self.b.ins().imul_imm_s(step, size);
            out.push((
                index as *const Expr,
                FastAddr {
                    base: base_addr,
                    steps: [Some((counter, step_bytes)), None, None],
                    consecutive,
                    size,
                },
            ));
        }
        Ok(ok.map(|o| (o, out)))
    }

    /// An `if` after the group's first store, which cannot rerun: one branch when the lanes
    /// agree, else each lane runs its own arm in turn (see [`lane_by_lane`]).
    fn g_if_lanes(
        &mut self,
        g: &mut Group,
        cond: &Expr,
        then_block: &[Stmt],
        else_block: &[Stmt],
    ) -> R<()> {
        let m = self.b.create_block();
        if let Some(l) = g.only {
            // Within one lane's arm: that lane's condition alone.
            let c = self.g_expr(g, cond)?;
            let c = self.split(c);
            let (t, e) = (self.b.create_block(), self.b.create_block());
            self.b.ins().brif(c.v[l], t, &[], e, &[]);
            for (blk, arm) in [(t, then_block), (e, else_block)] {
                self.b.switch_to_block(blk);
                for s in arm {
                    self.g_stmt(g, s)?;
                }
                self.b.ins().jump(m, &[]);
            }
            self.b.switch_to_block(m);
            return Ok(());
        }
        let (all, none) = self.g_cond(g, cond)?;
        if let Some(none) = none {
            if !(lane_by_lane(then_block) && lane_by_lane(else_block)) {
                return Err(self.unsupported("a lane-dependent `if` after a store"));
            }
            let (agreed, mixed) = (self.b.create_block(), self.b.create_block());
            let agree = self.b.ins().bor(all, none);
            self.b.set_cold_block(mixed);
            self.b.ins().brif(agree, agreed, &[], mixed, &[]);
            self.b.switch_to_block(mixed);
            let c = self.g_expr(g, cond)?;
            let c = self.split(c);
            for l in 0..LANES {
                let (t, e, next) = (
                    self.b.create_block(),
                    self.b.create_block(),
                    self.b.create_block(),
                );
                self.b.ins().brif(c.v[l], t, &[], e, &[]);
                for (blk, arm) in [(t, then_block), (e, else_block)] {
                    self.b.switch_to_block(blk);
                    let before = g.only.replace(l);
                    for s in arm {
                        self.g_stmt(g, s)?;
                    }
                    g.only = before;
                    self.b.ins().jump(next, &[]);
                }
                self.b.switch_to_block(next);
            }
            self.b.ins().jump(m, &[]);
            self.b.switch_to_block(agreed);
        }
        let (t, e) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(all, t, &[], e, &[]);
        for (blk, arm) in [(t, then_block), (e, else_block)] {
            self.b.switch_to_block(blk);
            for s in arm {
                self.g_stmt(g, s)?;
            }
            self.b.ins().jump(m, &[]);
        }
        self.b.switch_to_block(m);
        Ok(())
    }

    /// The condition of an `if` for the whole group: lanes that disagree rerun thread by
    /// thread.
    fn g_if_cond(&mut self, g: &mut Group, cond: &Expr) -> R<Value> {
        let (all, none) = self.g_cond(g, cond)?;
        if let Some(none) = none {
            let agree = self.b.ins().bor(all, none);
            let split = self.b.ins().icmp_imm_s(IntCC::Equal, agree, 0);
            self.g_check(g, split);
        }
        Ok(all)
    }

    /// Whether `cond` holds in every lane, and whether in none (absent: the lanes agree).
    /// A comparison of a consecutive int32 value with a group-uniform one (`i < n`), and `&&`
    /// of such, is decided from the first and the last lane alone.
    fn g_cond(&mut self, g: &mut Group, cond: &Expr) -> R<(Value, Option<Value>)> {
        if let ExprKind::Binary { op, lhs, rhs, .. } = &cond.kind {
            if *op == BinOp::And && pure(rhs) {
                let (a_all, a_none) = self.g_cond(g, lhs)?;
                let (b_all, b_none) = self.g_cond(g, rhs)?;
                let all = self.b.ins().band(a_all, b_all);
                // A lane false on either side is false: `none` may miss a mix of one
                // side's first lanes and the other's last ones, which then reruns.
                let none = match (a_none, b_none) {
                    (None, None) => None,
                    (a, b) => {
                        let a =
                            a.unwrap_or_else(|| self.b.ins().icmp_imm_s(IntCC::Equal, a_all, 0));
                        let b =
                            b.unwrap_or_else(|| self.b.ins().icmp_imm_s(IntCC::Equal, b_all, 0));
                        Some(self.b.ins().bor(a, b))
                    }
                };
                return Ok((all, none));
            }
            let ordered = matches!(op, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge);
            if ordered && lhs.ty.scalar() == Some(Scalar::I32) {
                let a = self.g_expr(g, lhs)?;
                let b = self.g_expr(g, rhs)?;
                match (a.shape, b.shape) {
                    (Shape::Consecutive, Shape::Uniform) => {
                        return Ok(self.g_ranged(*op, a.v[0], b.v[0]));
                    }
                    (Shape::Uniform, Shape::Consecutive) => {
                        let flipped = match op {
                            BinOp::Lt => BinOp::Gt,
                            BinOp::Le => BinOp::Ge,
                            BinOp::Gt => BinOp::Lt,
                            _ => BinOp::Le,
                        };
                        return Ok(self.g_ranged(flipped, b.v[0], a.v[0]));
                    }
                    _ => {
                        let shape = a.shape.join(b.shape);
                        let c = self.per_lane(&[a, b], shape, |s, x| {
                            s.binop(*op, Scalar::I32, x[0], x[1])
                        })?;
                        return Ok(self.g_all_none(c));
                    }
                }
            }
        }
        let c = self.g_expr(g, cond)?;
        Ok(self.g_all_none(c))
    }

    fn g_all_none(&mut self, c: Lanes) -> (Value, Option<Value>) {
        if c.shape == Shape::Uniform {
            return (c.v[0], None);
        }
        let c = self.split(c);
        let mut all = c.v[0];
        let mut any = c.v[0];
        for l in 1..LANES {
            all = self.b.ins().band(all, c.v[l]);
            any = self.b.ins().bor(any, c.v[l]);
        }
        let none = self.b.ins().icmp_imm_s(IntCC::Equal, any, 0);
        (all, Some(none))
    }

    /// `x0 + l  op  u` for every lane `l` (int32, consecutive lanes from `x0`): all and none
    /// from the first and last lane, in int64; lanes that wrap past `max_int` count as mixed.
    fn g_ranged(&mut self, op: BinOp, x0: Value, u: Value) -> (Value, Option<Value>) {
        let lo = self.b.ins().sextend(types::I64, x0);
        let hi = self.b.ins().iadd_imm_s(lo, LANES as i64 - 1);
        let u = self.b.ins().sextend(types::I64, u);
        let cmp = |me: &mut Self, cc: IntCC, a: Value| me.b.ins().icmp(cc, a, u);
        let (all, none) = match op {
            BinOp::Lt => (
                cmp(self, IntCC::SignedLessThan, hi),
                cmp(self, IntCC::SignedGreaterThanOrEqual, lo),
            ),
            BinOp::Le => (
                cmp(self, IntCC::SignedLessThanOrEqual, hi),
                cmp(self, IntCC::SignedGreaterThan, lo),
            ),
            BinOp::Gt => (
                cmp(self, IntCC::SignedGreaterThan, lo),
                cmp(self, IntCC::SignedLessThanOrEqual, hi),
            ),
            _ => (
                cmp(self, IntCC::SignedGreaterThanOrEqual, lo),
                cmp(self, IntCC::SignedLessThan, hi),
            ),
        };
        let no_wrap = self
            .b
            .ins()
            .icmp_imm_s(IntCC::SignedLessThanOrEqual, hi, i32::MAX as i64);
        let all = self.b.ins().band(all, no_wrap);
        let none = self.b.ins().band(none, no_wrap);
        (all, Some(none))
    }

    /// `if c then a else b` with arms that may fault: one branch for the group when its lanes
    /// agree, else each lane evaluates its own arm (only its own loads are checked).
    fn g_select(&mut self, g: &mut Group, c: Lanes, s: Scalar, a: &Expr, b: &Expr) -> R<Lanes> {
        if c.shape == Shape::Uniform {
            return self.g_branch(g, c.v[0], s, a, b);
        }
        if let Some(l) = g.only {
            // Within one lane's arm: that lane's condition decides.
            let c = self.split(c);
            return self.g_branch(g, c.v[l], s, a, b);
        }
        let mut all = c.v[0];
        let mut any = c.v[0];
        for l in 1..LANES {
            all = self.b.ins().band(all, c.v[l]);
            any = self.b.ins().bor(any, c.v[l]);
        }
        let split = self.b.ins().bxor(all, any);
        let (agree, mixed, m) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        let vector = s == Scalar::F32;
        let params = self.lane_params(m, s);
        self.b.set_cold_block(mixed);
        self.b.ins().brif(split, mixed, &[], agree, &[]);
        self.b.switch_to_block(agree);
        let x = self.g_branch(g, all, s, a, b)?;
        let args = self.lane_args(x, vector);
        self.b.ins().jump(m, &args);
        self.b.switch_to_block(mixed);
        let mut lanes = [all; LANES];
        for (l, out) in lanes.iter_mut().enumerate() {
            let (tb, eb, lm) = (
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
            );
            let r = self.b.append_block_param(lm, cty(s));
            self.b.ins().brif(c.v[l], tb, &[], eb, &[]);
            for (blk, e) in [(tb, a), (eb, b)] {
                self.b.switch_to_block(blk);
                let before = g.only.replace(l);
                let x = self.g_expr(g, e)?;
                g.only = before;
                let x = self.split(x);
                self.b.ins().jump(lm, &[x.v[l].into()]);
            }
            self.b.switch_to_block(lm);
            *out = r;
        }
        let x = Lanes::varying(lanes);
        let args = self.lane_args(x, vector);
        self.b.ins().jump(m, &args);
        self.b.switch_to_block(m);
        Ok(if vector {
            Lanes::f32x4(std::array::from_fn(|h| params[h]))
        } else {
            Lanes::varying(std::array::from_fn(|l| params[l]))
        })
    }

    /// Integer `/` and `mod` lane by lane: a zero divisor in any lane is a failed check (the
    /// thread loop reports it); `min_int / -1` wraps and `mod -1` is 0, as in the thread loop.
    fn g_divide(&mut self, g: &Group, op: BinOp, a: Lanes, b: Lanes) -> R<Lanes> {
        let (a, b) = (self.split(a), self.split(b));
        // Only the lanes that evaluate it: one when uniform or for one lane's arm.
        let checked = match (g.only, b.shape) {
            (Some(l), _) => l..l + 1,
            (None, Shape::Uniform) => 0..1,
            (None, _) => 0..LANES,
        };
        let mut bad = self.b.ins().iconst(types::I8, 0);
        for l in checked {
            let z = self.b.ins().icmp_imm_s(IntCC::Equal, b.v[l], 0);
            bad = self.b.ins().bor(bad, z);
        }
        self.g_bounds(g, bad);
        // For one lane's arm only that lane divides: another's divisor may be zero, and
        // Cranelift's division traps on it.
        let (a, b) = match g.only {
            Some(l) => (Lanes::uniform(a.v[l]), Lanes::uniform(b.v[l])),
            None => (a, b),
        };
        self.per_lane(&[a, b], Shape::Varying, |s, x| {
            let ty = s.b.func.dfg.value_type(x[1]);
            let m1 = s.b.ins().icmp_imm_s(IntCC::Equal, x[1], -1);
            let one = s.iconst(ty, 1);
            let d = s.b.ins().select(m1, one, x[1]);
            Ok(if op == BinOp::Div {
                let q = s.b.ins().sdiv(x[0], d);
                let neg = s.b.ins().ineg(x[0]);
                s.b.ins().select(m1, neg, q)
            } else {
                s.b.ins().srem(x[0], d)
            })
        })
    }

    /// Block parameters of `m` for a group value of type `s` (see [`Gen::lane_args`]).
    fn lane_params(&mut self, m: Block, s: Scalar) -> Vec<Value> {
        if s == Scalar::F32 {
            (0..HALVES)
                .map(|_| self.b.append_block_param(m, types::F32X4))
                .collect()
        } else {
            (0..LANES)
                .map(|_| self.b.append_block_param(m, cty(s)))
                .collect()
        }
    }

    /// A group value as block arguments: `f32x4` vectors, or one value per lane.
    fn lane_args(&mut self, x: Lanes, vector: bool) -> Vec<cranelift_codegen::ir::BlockArg> {
        let vals: Vec<Value> = if vector {
            self.vector(x).to_vec()
        } else {
            self.split(x).v.to_vec()
        };
        vals.into_iter().map(Into::into).collect()
    }

    /// `if c then a else b` for the whole group, as control flow (float32 results as
    /// `f32x4` vectors, others lane by lane).
    fn g_branch(&mut self, g: &mut Group, c: Value, s: Scalar, a: &Expr, b: &Expr) -> R<Lanes> {
        let (tb, eb, m) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        let vector = s == Scalar::F32;
        let params = self.lane_params(m, s);
        self.b.ins().brif(c, tb, &[], eb, &[]);
        for (blk, e) in [(tb, a), (eb, b)] {
            self.b.switch_to_block(blk);
            let x = self.g_expr(g, e)?;
            let args = self.lane_args(x, vector);
            self.b.ins().jump(m, &args);
        }
        self.b.switch_to_block(m);
        Ok(if vector {
            Lanes::f32x4(std::array::from_fn(|h| params[h]))
        } else {
            Lanes::varying(std::array::from_fn(|l| params[l]))
        })
    }

    /// Checked addresses of element `i` of single-column memory `base` in each lane (one
    /// address when `i` is uniform).
    fn g_addrs(&mut self, g: &Group, base: VarId, index: &Expr, i: Lanes) -> R<Vec<Value>> {
        if let Some(f) = g.fast.get(&(index as *const Expr)).copied() {
            let lane_shape = if f.consecutive {
                Shape::Consecutive
            } else {
                Shape::Uniform
            };
            // Both analyses agree on how the lanes relate (else: the checked path).
            let agree = g.only.is_some() || i.shape == lane_shape || i.shape == Shape::Varying;
            if agree {
                let mut a0 = f.base;
                for (counter, step) in f.steps.into_iter().flatten() {
                    let k = self.b.use_var(counter);
                    let k = if self.b.func.dfg.value_type(k) == types::I64 {
                        k
                    } else {
                        self.b.ins().sextend(types::I64, k)
                    };
                    let off = self.b.ins().imul(k, step);
                    a0 = self.b.ins().iadd(a0, off);
                }
                let lane = |me: &mut Self, l: usize| {
                    if f.consecutive && l > 0 {
                        me.b.ins().iadd_imm_s(a0, l as i64 * f.size)
                    } else {
                        a0
                    }
                };
                return Ok(match (g.only, i.shape) {
                    (Some(l), _) => vec![lane(self, l)],
                    (None, Shape::Uniform) => vec![a0],
                    (None, _) => (0..LANES).map(|l| lane(self, l)).collect(),
                });
            }
        }
        let m = self.mem_of(base)?;
        let sz = self.mem_leaves(m)[0].size() as i64;
        let len = self.mem_len(m);
        let len64 = self.b.ins().uextend(types::I64, len);
        let bad_at = |s: &mut Self, i: Value| -> Value {
            let i64v = s.b.ins().sextend(types::I64, i);
            s.b.ins()
                .icmp(IntCC::UnsignedGreaterThanOrEqual, i64v, len64)
        };
        let col_addr = |s: &mut Self, i: Value| -> R<Value> {
            let i64v = s.b.ins().uextend(types::I64, i);
            let off = s.b.ins().imul_imm_s(i64v, sz);
            Ok(match m {
                super::Mem::Global(gi) => {
                    let col = s.vecs[gi as usize].1[0];
                    s.b.ins().iadd(col, off)
                }
                super::Mem::Shared(si) => {
                    let at = s.layout.shared[si as usize].offsets[0] as i64;
                    let a = s.b.ins().iadd(s.shared, off);
                    s.b.ins().iadd_imm_s(a, at)
                }
                super::Mem::Local(_) => {
                    return Err(s.unsupported("a local array in a lane group"));
                }
            })
        };
        let i = match g.only {
            Some(l) => Lanes::uniform(i.v[l]),
            None => i,
        };
        Ok(match i.shape {
            Shape::Uniform => {
                let bad = bad_at(self, i.v[0]);
                self.g_bounds(g, bad);
                vec![col_addr(self, i.v[0])?]
            }
            Shape::Consecutive => {
                // First and last lane in bounds: all are (no wrap-around at int32 range).
                let i0 = self.b.ins().sextend(types::I64, i.v[0]);
                let last = self.b.ins().iadd_imm_s(i0, LANES as i64 - 1);
                let b0 = self
                    .b
                    .ins()
                    .icmp(IntCC::UnsignedGreaterThanOrEqual, i0, len64);
                let b1 = self
                    .b
                    .ins()
                    .icmp(IntCC::UnsignedGreaterThanOrEqual, last, len64);
                let bad = self.b.ins().bor(b0, b1);
                self.g_bounds(g, bad);
                let a0 = col_addr(self, i.v[0])?;
                (0..LANES)
                    .map(|l| self.b.ins().iadd_imm_s(a0, l as i64 * sz))
                    .collect()
            }
            Shape::Varying => {
                let mut bad = bad_at(self, i.v[0]);
                for l in 1..LANES {
                    let b = bad_at(self, i.v[l]);
                    bad = self.b.ins().bor(bad, b);
                }
                self.g_bounds(g, bad);
                let mut out = Vec::with_capacity(LANES);
                for l in 0..LANES {
                    out.push(col_addr(self, i.v[l])?);
                }
                out
            }
        })
    }

    /// Apply `f` lane by lane, once when every operand is uniform.
    fn per_lane(
        &mut self,
        args: &[Lanes],
        shape: Shape,
        mut f: impl FnMut(&mut Self, &[Value]) -> R<Value>,
    ) -> R<Lanes> {
        let args: Vec<Lanes> = args.iter().map(|a| self.split(*a)).collect();
        if args.iter().all(|a| a.shape == Shape::Uniform) {
            let xs: Vec<Value> = args.iter().map(|a| a.v[0]).collect();
            return Ok(Lanes::uniform(f(self, &xs)?));
        }
        let mut v = Vec::with_capacity(LANES);
        for l in 0..LANES {
            let xs: Vec<Value> = args.iter().map(|a| a.v[l]).collect();
            v.push(f(self, &xs)?);
        }
        Ok(Lanes {
            v: std::array::from_fn(|l| v[l]),
            shape,
            vec: None,
        })
    }

    fn g_expr(&mut self, g: &mut Group, e: &Expr) -> R<Lanes> {
        let s = super::scalar(e)?;
        Ok(match &e.kind {
            ExprKind::Lit(l) => Lanes::uniform(self.lit(*l)),
            ExprKind::Var(v) => self.g_read(g, *v)?,
            ExprKind::Binary { op, lhs, rhs, .. } => {
                let ty = super::scalar(lhs)?;
                let a = self.g_expr(g, lhs)?;
                let b = self.g_expr(g, rhs)?;
                let arith = matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div);
                if ty == Scalar::F32 && arith && (a.vec.is_some() || b.vec.is_some()) {
                    let (x, y) = (self.vector(a), self.vector(b));
                    return Ok(Lanes::f32x4(std::array::from_fn(|h| {
                        let i = self.b.ins();
                        match op {
                            BinOp::Add => i.fadd(x[h], y[h]),
                            BinOp::Sub => i.fsub(x[h], y[h]),
                            BinOp::Mul => i.fmul(x[h], y[h]),
                            _ => i.fdiv(x[h], y[h]),
                        }
                    })));
                }
                if matches!(op, BinOp::Div | BinOp::Rem) && ty.is_int() && !safe_divisor(rhs) {
                    return self.g_divide(g, *op, a, b);
                }
                let shape = binary_shape(*op, a.shape, b.shape);
                self.per_lane(&[a, b], shape, |s, x| s.binop(*op, ty, x[0], x[1]))?
            }
            ExprKind::Unary { op, operand } => {
                let ty = super::scalar(operand)?;
                let a = self.g_expr(g, operand)?;
                self.per_lane(&[a], Shape::Varying, |s, x| s.unary(*op, ty, x[0]))?
            }
            ExprKind::Index { base, index } => {
                let i = self.g_expr(g, index)?;
                let i = match g.only {
                    Some(l) => Lanes::uniform(self.split(i).v[l]),
                    None => i,
                };
                let addrs = self.g_addrs(g, *base, index, i)?;
                if s == Scalar::F32 && i.shape == Shape::Consecutive {
                    // Only 4-byte aligned: see the consecutive store.
                    let unaligned = MemFlags::new().with_notrap();
                    let x = std::array::from_fn(|h| {
                        self.b
                            .ins()
                            .load(types::F32X4, unaligned, addrs[h * VLANES], 0)
                    });
                    return Ok(Lanes::f32x4(x));
                }
                let ty = cty(s);
                let vals: Vec<Value> = addrs
                    .iter()
                    .map(|a| self.b.ins().load(ty, Self::trusted(), *a, 0))
                    .collect();
                if vals.len() == 1 {
                    Lanes::uniform(vals[0])
                } else {
                    Lanes::varying(std::array::from_fn(|l| vals[l]))
                }
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                let c = self.g_expr(g, cond)?;
                if pure(then_value) && pure(else_value) {
                    let a = self.g_expr(g, then_value)?;
                    let b = self.g_expr(g, else_value)?;
                    self.per_lane(&[c, a, b], Shape::Varying, |s, x| {
                        Ok(s.b.ins().select(x[0], x[1], x[2]))
                    })?
                } else {
                    self.g_select(g, c, s, then_value, else_value)?
                }
            }
            ExprKind::Intrinsic {
                op: Intrinsic::Geometry(geo),
                ..
            } => self.g_geometry(g, *geo)?,
            ExprKind::Intrinsic {
                op: Intrinsic::Length,
                args,
            } => {
                let m = self.mem_arg(&args[0])?;
                Lanes::uniform(self.mem_len(m))
            }
            ExprKind::Intrinsic { op, args } => {
                let mut vals = Vec::with_capacity(args.len());
                let mut from = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.g_expr(g, a)?);
                    from.push(super::scalar(a)?);
                }
                let op = *op;
                self.per_lane(&vals, Shape::Varying, |me, x| {
                    me.scalar_intrinsic(op, &from, s, x)
                })?
            }
            _ => return Err(self.unsupported("this expression in a lane group")),
        })
    }

    fn g_geometry(&mut self, g: &Group, geo: Geometry) -> R<Lanes> {
        let x_lanes = |me: &mut Self, x0: Value| Lanes {
            v: std::array::from_fn(|l| me.b.ins().iadd_imm_s(x0, l as i64)),
            shape: Shape::Consecutive,
            vec: None,
        };
        let own = |me: &mut Self, a: Axis| -> Value {
            match (me.one_d, a) {
                (_, Axis::X) => g.x,
                (true, _) => me.iconst(types::I32, 0),
                (false, a) => {
                    let t = me.th.as_ref().map(|t| t.xyz[a.index()]);
                    match t {
                        Some(v) => me.b.use_var(v),
                        None => me.iconst(types::I32, 0),
                    }
                }
            }
        };
        Ok(match geo {
            Geometry::ThreadIdx(Axis::X) => x_lanes(self, g.x),
            Geometry::GlobalIdx(Axis::X) => {
                let x0 = self.b.ins().iadd(self.block_base[0], g.x);
                x_lanes(self, x0)
            }
            Geometry::ThreadIdx(a) => Lanes::uniform(own(self, a)),
            Geometry::GlobalIdx(a) => {
                let t = own(self, a);
                Lanes::uniform(self.b.ins().iadd(self.block_base[a.index()], t))
            }
            other => Lanes::uniform(self.geometry(other)?),
        })
    }
}

impl<'a> Gen<'a, '_> {
    /// The thread loop as a versioned loop over the thread's x, y and z ([`hoist`]): before
    /// it, the accesses whose index is affine in them (lanes one element apart along x, or
    /// the same element) are checked for every thread of the block, and the top-level `if`
    /// conditions comparing such values (`i < n`) are checked to hold for every thread. The
    /// condition that all of that holds, and what the copy may drop.
    pub(super) fn thread_plan(&mut self, seg: &'a Segment) -> R<Option<(Value, Hoisted)>> {
        let Some(accesses) = hoist::accesses(&seg.stmts, false) else {
            return Ok(None);
        };
        let lp = hoist::Loop::new(self.k, hoist::Counter::Thread, &seg.stmts);
        let k = self.k;
        let allowed = |v: VarId| !seg.loads.contains(&v) && !k.var(v).mutable;
        let Some(th) = &self.th else {
            return Ok(None);
        };
        let (tid, xyz) = (th.tid, th.xyz);
        // Each axis's counter and last value (int64).
        let dims = if self.one_d {
            [
                self.nthreads,
                self.iconst(types::I32, 1),
                self.iconst(types::I32, 1),
            ]
        } else {
            self.block_dim
        };
        let last = dims.map(|d| {
            let d = self.b.ins().uextend(types::I64, d);
            self.b.ins().iadd_imm_s(d, -1)
        });
        let counters = [if self.one_d { tid } else { xyz[0] }, xyz[1], xyz[2]];
        let mut ok: Option<Value> = None;
        let mut plan = Hoisted::default();
        let mut both = |me: &mut Self, c: Value| {
            ok = Some(match ok {
                Some(o) => me.b.ins().band(o, c),
                None => c,
            });
        };
        for (base, index) in accesses {
            let key = index as *const Expr;
            if plan.fast.contains_key(&key) {
                continue;
            }
            let Ok(m) = self.mem_of(base) else { continue };
            if matches!(m, super::Mem::Local(_)) || self.mem_leaves(m).len() != 1 {
                continue;
            }
            let Some(a) = lp.affine(index, &allowed) else {
                continue;
            };
            // Lanes one element apart along x (step 1) or the same element (step 0).
            let step_x: i64 = match a.step.iter().map(|t| t.value.constant(t.mul)).sum() {
                Some(x @ (0 | 1)) => x,
                _ => continue,
            };
            let (lo, hi, parts) = self.t_range(&a, &last)?;
            let len = self.mem_len(m);
            let len = self.b.ins().uextend(types::I64, len);
            let lo_ok = self
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, lo, 0);
            let hi_ok = self.b.ins().icmp(IntCC::SignedLessThan, hi, len);
            let this = self.b.ins().band(lo_ok, hi_ok);
            both(self, this);
            let size = self.mem_leaves(m)[0].size() as i64;
            let col = self.mem_base(m);
            let off = self.b.ins().imul_imm_s(parts[0], size);
            let base_addr = self.b.ins().iadd(col, off);
            let mut steps = [None; 3];
            for axis in 0..3 {
                let step = if axis == 0 {
                    (step_x != 0).then(|| self.iconst(types::I64, step_x * size))
                } else if a.step_yz[axis - 1].is_empty() {
                    None
                } else {
                    Some(self.b.ins().imul_imm_s(parts[axis + 1], size))
                };
                steps[axis] = step.map(|s| (counters[axis], s));
            }
            plan.fast.insert(
                key,
                FastAddr {
                    base: base_addr,
                    steps,
                    consecutive: step_x == 1,
                    size,
                },
            );
        }
        for s in &seg.stmts {
            let StmtKind::If { cond, .. } = &s.kind else {
                continue;
            };
            if !pure(cond) {
                continue;
            }
            let Some(comparisons) = lp.comparisons(cond, &allowed) else {
                continue;
            };
            let mut holds = Vec::new();
            for (op, a, b) in comparisons {
                let d = a.clone().minus(b.clone());
                if !d.exact() {
                    holds.clear();
                    break;
                }
                // Both sides exact int32 values over the block (affine: their extremes are
                // at its corners), and the comparison true at the difference's extreme.
                for side in [&a, &b] {
                    let (lo, hi, _) = self.t_range(side, &last)?;
                    let lo = self.b.ins().icmp_imm_s(
                        IntCC::SignedGreaterThanOrEqual,
                        lo,
                        i32::MIN as i64,
                    );
                    let hi =
                        self.b
                            .ins()
                            .icmp_imm_s(IntCC::SignedLessThanOrEqual, hi, i32::MAX as i64);
                    holds.push(self.b.ins().band(lo, hi));
                }
                let (lo, hi, _) = self.t_range(&d, &last)?;
                let i = self.b.ins();
                holds.push(match op {
                    BinOp::Lt => i.icmp_imm_s(IntCC::SignedLessThan, hi, 0),
                    BinOp::Le => i.icmp_imm_s(IntCC::SignedLessThanOrEqual, hi, 0),
                    BinOp::Gt => i.icmp_imm_s(IntCC::SignedGreaterThan, lo, 0),
                    _ => i.icmp_imm_s(IntCC::SignedGreaterThanOrEqual, lo, 0),
                });
            }
            if holds.is_empty() {
                continue;
            }
            for h in holds {
                both(self, h);
            }
            plan.known_true.insert(cond as *const Expr);
        }
        Ok(ok.map(|o| (o, plan)))
    }

    /// The least and greatest value of `a` over the block's threads (every counter from 0 to
    /// its `last`), and its offset and per-counter steps, in int64.
    fn t_range(
        &mut self,
        a: &hoist::Affine<'a>,
        last: &[Value; 3],
    ) -> R<(Value, Value, [Value; 4])> {
        let offset = self.t_sum(&a.offset)?;
        let mut parts = [offset; 4];
        let (mut lo, mut hi) = (offset, offset);
        let zero = self.iconst(types::I64, 0);
        for (axis, terms) in [&a.step, &a.step_yz[0], &a.step_yz[1]]
            .into_iter()
            .enumerate()
        {
            let step = self.t_sum(terms)?;
            parts[axis + 1] = step;
            let far = self.b.ins().imul(step, last[axis]);
            let down = self.b.ins().smin(far, zero);
            let up = self.b.ins().smax(far, zero);
            lo = self.b.ins().iadd(lo, down);
            hi = self.b.ins().iadd(hi, up);
        }
        Ok((lo, hi, parts))
    }

    /// `Σ mul · value` in int64 at the start of a thread loop (invariant terms only).
    fn t_sum(&mut self, terms: &[hoist::Term<'a>]) -> R<Value> {
        let mut acc = self.iconst(types::I64, 0);
        for t in terms {
            let v = match t.value {
                hoist::TermValue::One => self.iconst(types::I64, 1),
                hoist::TermValue::BlockBase(axis) => {
                    self.b.ins().sextend(types::I64, self.block_base[axis])
                }
                hoist::TermValue::Expr(x) => {
                    let v = self.expr1(x)?;
                    self.b.ins().sextend(types::I64, v)
                }
                hoist::TermValue::Times(x, y) => {
                    let x = self.expr1(x)?;
                    let x = self.b.ins().sextend(types::I64, x);
                    let y = self.expr1(y)?;
                    let y = self.b.ins().sextend(types::I64, y);
                    self.b.ins().imul(x, y)
                }
                hoist::TermValue::BlockBaseTimes(axis, y) => {
                    let x = self.b.ins().sextend(types::I64, self.block_base[axis]);
                    let y = self.expr1(y)?;
                    let y = self.b.ins().sextend(types::I64, y);
                    self.b.ins().imul(x, y)
                }
            };
            let v = self.b.ins().imul_imm_s(v, t.mul);
            acc = self.b.ins().iadd(acc, v);
        }
        Ok(acc)
    }
}
