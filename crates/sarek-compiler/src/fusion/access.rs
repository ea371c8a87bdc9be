//! Access patterns: how a kernel touches each of its vector parameters.
//!
//! Every element index is evaluated symbolically as an affine form in the thread's global
//! index `G` (`global_thread_id`, or `block_idx_x * block_dim_x + thread_idx_x` spelled out)
//! through immutable `let`s; anything else is opaque. The form decides the pattern of one
//! access, and a parameter's pattern is the join of its accesses:
//!
//! | index | pattern |
//! | --- | --- |
//! | `G` | [`Pattern::OneToOne`] |
//! | `G + c`, `c` a constant | [`Pattern::Stencil`] with radius `max |c|` |
//! | opaque, inside a loop, no element read in it | [`Pattern::Reduction`] |
//! | constant, or opaque otherwise (data-dependent, 2-D, ...) | [`Pattern::Gather`] |
//! | the vector itself escapes (passed to a helper, atomics, `length`) | [`Pattern::Unknown`] |

use crate::intrinsics::{Axis, Geometry, Intrinsic};
use crate::ir::{Block, Expr, ExprKind, Kernel, LValue, StmtKind, VarId};
use crate::types::{BinOp, Literal};
use std::collections::HashMap;
use std::fmt;

/// How a kernel reads (or writes) one vector, joined over all its accesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Not accessed.
    None,
    /// Element `G` only.
    OneToOne,
    /// Elements `G - radius ..= G + radius`.
    Stencil { radius: u32 },
    /// Indices driven by a loop (each thread walks a range).
    Reduction,
    /// Indices that are constant, data-dependent or not affine in `G`.
    Gather,
    /// The vector escapes (helper argument, atomic, `length`): nothing is known.
    Unknown,
}

impl Pattern {
    /// The least pattern covering both.
    pub fn join(self, other: Pattern) -> Pattern {
        use Pattern::*;
        match (self, other) {
            (None, p) | (p, None) => p,
            (Unknown, _) | (_, Unknown) => Unknown,
            (OneToOne, OneToOne) => OneToOne,
            (OneToOne, Stencil { radius }) | (Stencil { radius }, OneToOne) => Stencil { radius },
            (Stencil { radius: a }, Stencil { radius: b }) => Stencil { radius: a.max(b) },
            (Reduction, Reduction) => Reduction,
            _ => Gather,
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::None => f.write_str("not accessed"),
            Pattern::OneToOne => f.write_str("one-to-one"),
            Pattern::Stencil { radius } => write!(f, "stencil of radius {radius}"),
            Pattern::Reduction => f.write_str("reduction loop"),
            Pattern::Gather => f.write_str("gather"),
            Pattern::Unknown => f.write_str("unknown"),
        }
    }
}

/// What a kernel does with one vector parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VectorAccess {
    pub param: VarId,
    pub name: String,
    /// Element reads (`v.(i)`, `v.(i).f`).
    pub reads: Pattern,
    /// Element stores (whole elements or fields).
    pub writes: Pattern,
    /// Number of store statements to it.
    pub stores: u32,
    /// Some store writes a field of an element rather than the whole element.
    pub partial_store: bool,
    /// Some store sits inside a loop.
    pub store_in_loop: bool,
    /// Why the vector escapes the analysis, when it does.
    pub escapes: Option<String>,
}

/// The access pattern of every vector parameter of `kernel`, in parameter order. Accesses
/// inside helpers (the vector passed as an argument) make the parameter [`Pattern::Unknown`].
pub fn analyse(kernel: &Kernel) -> Vec<VectorAccess> {
    let mut a = Analyser {
        kernel,
        env: HashMap::new(),
        loops: 0,
        acc: kernel
            .params
            .iter()
            .filter(|p| matches!(kernel.var(**p).ty, crate::ir::Ty::Vector(_)))
            .map(|&p| VectorAccess {
                param: p,
                name: kernel.var(p).name.clone(),
                reads: Pattern::None,
                writes: Pattern::None,
                stores: 0,
                partial_store: false,
                store_in_loop: false,
                escapes: None,
            })
            .collect(),
    };
    a.block(&kernel.body);
    a.acc
}

/// An index as an affine form `g*G + tid*thread_idx_x + base*(block_idx_x*block_dim_x) + c`,
/// or opaque.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sym {
    Affine { g: i64, tid: i64, base: i64, c: i64 },
    Opaque,
}

impl Sym {
    const fn konst(c: i64) -> Sym {
        Sym::Affine {
            g: 0,
            tid: 0,
            base: 0,
            c,
        }
    }
    /// `thread_idx_x + block_idx_x * block_dim_x` folded into `G`.
    fn normal(self) -> Sym {
        match self {
            Sym::Affine { g, tid, base, c } if tid == base && tid != 0 => Sym::Affine {
                g: g + tid,
                tid: 0,
                base: 0,
                c,
            },
            s => s,
        }
    }
    /// `Some(c)` when the form is `G + c`.
    pub(crate) fn offset_from_global(self) -> Option<i64> {
        match self.normal() {
            Sym::Affine {
                g: 1,
                tid: 0,
                base: 0,
                c,
            } => Some(c),
            _ => None,
        }
    }
    fn lin(self, other: Sym, sign: i64) -> Sym {
        match (self, other) {
            (
                Sym::Affine { g, tid, base, c },
                Sym::Affine {
                    g: g2,
                    tid: t2,
                    base: b2,
                    c: c2,
                },
            ) => Sym::Affine {
                g: g + sign * g2,
                tid: tid + sign * t2,
                base: base + sign * b2,
                c: c.wrapping_add(sign.wrapping_mul(c2)),
            }
            .normal(),
            _ => Sym::Opaque,
        }
    }
    fn scale(self, k: i64) -> Sym {
        match self {
            Sym::Affine { g, tid, base, c } => Sym::Affine {
                g: g * k,
                tid: tid * k,
                base: base * k,
                c: c.wrapping_mul(k),
            },
            Sym::Opaque => Sym::Opaque,
        }
    }
    fn as_const(self) -> Option<i64> {
        match self {
            Sym::Affine {
                g: 0,
                tid: 0,
                base: 0,
                c,
            } => Some(c),
            _ => None,
        }
    }
}

fn geometry(e: &Expr) -> Option<Geometry> {
    match &e.kind {
        ExprKind::Intrinsic {
            op: Intrinsic::Geometry(g),
            ..
        } => Some(*g),
        _ => None,
    }
}

/// Whether `e` is `block_idx_x * block_dim_x` (either order).
pub(crate) fn is_block_base(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Binary {
            op: BinOp::Mul,
            lhs,
            rhs,
            ..
        } => matches!(
            (geometry(lhs), geometry(rhs)),
            (
                Some(Geometry::BlockIdx(Axis::X)),
                Some(Geometry::BlockDim(Axis::X))
            ) | (
                Some(Geometry::BlockDim(Axis::X)),
                Some(Geometry::BlockIdx(Axis::X))
            )
        ),
        _ => false,
    }
}

/// Symbolic value of an int32 index expression under `env` (immutable `let`s).
pub(crate) fn eval(env: &HashMap<VarId, Sym>, e: &Expr) -> Sym {
    match &e.kind {
        ExprKind::Lit(Literal::I32(v)) => Sym::konst(i64::from(*v)),
        ExprKind::Var(v) => env.get(v).copied().unwrap_or(Sym::Opaque),
        ExprKind::Intrinsic {
            op: Intrinsic::Geometry(g),
            ..
        } => match g {
            Geometry::GlobalIdx(Axis::X) => Sym::Affine {
                g: 1,
                tid: 0,
                base: 0,
                c: 0,
            },
            Geometry::ThreadIdx(Axis::X) => Sym::Affine {
                g: 0,
                tid: 1,
                base: 0,
                c: 0,
            },
            _ => Sym::Opaque,
        },
        _ if is_block_base(e) => Sym::Affine {
            g: 0,
            tid: 0,
            base: 1,
            c: 0,
        },
        ExprKind::Binary { op, lhs, rhs, .. } => {
            let (l, r) = (eval(env, lhs), eval(env, rhs));
            match op {
                BinOp::Add => l.lin(r, 1),
                BinOp::Sub => l.lin(r, -1),
                BinOp::Mul => match (l.as_const(), r.as_const()) {
                    (Some(k), _) => r.scale(k),
                    (_, Some(k)) => l.scale(k),
                    _ => Sym::Opaque,
                },
                _ => Sym::Opaque,
            }
        }
        _ => Sym::Opaque,
    }
}

/// Whether `e` reads memory or calls a helper (so an index built from it is data-dependent).
fn reads_data(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Index { .. } | ExprKind::Call { .. } => true,
        ExprKind::Lit(_) | ExprKind::Var(_) => false,
        ExprKind::Binary { lhs, rhs, .. } => reads_data(lhs) || reads_data(rhs),
        ExprKind::Unary { operand, .. } => reads_data(operand),
        ExprKind::Field { base, .. } | ExprKind::Tag(base) => reads_data(base),
        ExprKind::Payload { value, .. } => reads_data(value),
        ExprKind::Record { fields, .. } | ExprKind::Ctor { fields, .. } => {
            fields.iter().any(reads_data)
        }
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => reads_data(cond) || reads_data(then_value) || reads_data(else_value),
        ExprKind::Intrinsic { args, .. } => args.iter().any(reads_data),
    }
}

/// Whether helper `func` may write (store into, or apply an atomic to) its vector parameter
/// number `param`, itself or through the helpers it passes it to.
fn helper_writes(kernel: &Kernel, func: crate::ir::FuncId, param: usize) -> bool {
    let f = kernel.function(func);
    let Some(&v) = f.params.get(param) else {
        return true;
    };
    let mut writes = false;
    crate::ir::visit::for_each_stmt(&f.body, &mut |s| {
        if let StmtKind::Assign { place, .. } = &s.kind {
            let mut p = place;
            while let LValue::Field { base, .. } = p {
                p = base;
            }
            writes |= matches!(p, LValue::Index { base, .. } if *base == v);
        }
    });
    super::merge::for_each_expr(&f.body, &mut |e| match &e.kind {
        ExprKind::Intrinsic {
            op: Intrinsic::Atomic(_),
            args,
        } => writes |= matches!(args.first(), Some(Expr { kind: ExprKind::Var(a), .. }) if *a == v),
        ExprKind::Call { func, args } => {
            for (k, a) in args.iter().enumerate() {
                if matches!(a.kind, ExprKind::Var(a) if a == v) {
                    writes |= helper_writes(kernel, *func, k);
                }
            }
        }
        _ => {}
    });
    writes
}

struct Analyser<'k> {
    kernel: &'k Kernel,
    env: HashMap<VarId, Sym>,
    loops: u32,
    acc: Vec<VectorAccess>,
}

impl Analyser<'_> {
    fn slot(&mut self, v: VarId) -> Option<&mut VectorAccess> {
        self.acc.iter_mut().find(|a| a.param == v)
    }

    fn pattern_of(&self, index: &Expr) -> Pattern {
        let sym = eval(&self.env, index);
        match sym.offset_from_global() {
            Some(0) => Pattern::OneToOne,
            Some(c) => Pattern::Stencil {
                radius: c.unsigned_abs().min(u64::from(u32::MAX)) as u32,
            },
            None if self.loops > 0 && !reads_data(index) && sym == Sym::Opaque => {
                Pattern::Reduction
            }
            None => Pattern::Gather,
        }
    }

    /// The vector is used as a whole: its reads become unknown, and its writes too when
    /// the use may write it.
    fn escape(&mut self, v: VarId, why: String, writes: bool) {
        if let Some(a) = self.slot(v) {
            a.reads = Pattern::Unknown;
            if writes {
                a.writes = a.writes.join(Pattern::Unknown);
            }
            a.escapes.get_or_insert(why);
        }
    }

    fn block(&mut self, b: &Block) {
        for s in b {
            match &s.kind {
                StmtKind::Let { var, init } => {
                    if let Some(e) = init {
                        self.expr(e);
                        if !self.kernel.var(*var).mutable {
                            let sym = eval(&self.env, e);
                            self.env.insert(*var, sym);
                        }
                    }
                }
                StmtKind::Array { .. }
                | StmtKind::Barrier
                | StmtKind::Fence { .. }
                | StmtKind::Break
                | StmtKind::Continue
                | StmtKind::Native(_)
                | StmtKind::Trap(_)
                | StmtKind::Return(None) => {}
                StmtKind::Assign { place, value } => {
                    self.place(place);
                    self.expr(value);
                }
                StmtKind::Expr(e) | StmtKind::Return(Some(e)) => self.expr(e),
                StmtKind::If {
                    cond,
                    then_block,
                    else_block,
                } => {
                    self.expr(cond);
                    self.block(then_block);
                    self.block(else_block);
                }
                StmtKind::For {
                    start, end, body, ..
                } => {
                    self.expr(start);
                    self.expr(end);
                    self.loops += 1;
                    self.block(body);
                    self.loops -= 1;
                }
                StmtKind::While { cond, body, .. } => {
                    self.loops += 1;
                    self.expr(cond);
                    self.block(body);
                    self.loops -= 1;
                }
                StmtKind::Match {
                    scrutinee, arms, ..
                } => {
                    self.expr(scrutinee);
                    for arm in arms {
                        self.block(&arm.body);
                    }
                }
                StmtKind::Block(b) => self.block(b),
            }
        }
    }

    fn place(&mut self, place: &LValue) {
        let (base, index, partial) = match place {
            LValue::Var(_) => return,
            LValue::Index { base, index } => (*base, index, false),
            LValue::Field { base, .. } => {
                let mut p = &**base;
                while let LValue::Field { base, .. } = p {
                    p = base;
                }
                match p {
                    LValue::Index { base, index } => (*base, index, true),
                    _ => return,
                }
            }
        };
        self.expr(index);
        let pattern = self.pattern_of(index);
        let in_loop = self.loops > 0;
        if let Some(a) = self.slot(base) {
            a.writes = a.writes.join(pattern);
            a.stores += 1;
            a.partial_store |= partial;
            a.store_in_loop |= in_loop;
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Lit(_) => {}
            ExprKind::Var(v) => {
                // A whole vector in value position: an argument to a helper or intrinsic.
                if self.slot(*v).is_some() {
                    self.escape(*v, "it is passed as a whole".into(), true);
                }
            }
            ExprKind::Index { base, index } => {
                self.expr(index);
                let p = self.pattern_of(index);
                if let Some(a) = self.slot(*base) {
                    a.reads = a.reads.join(p);
                }
            }
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::Unary { operand, .. } => self.expr(operand),
            ExprKind::Field { base, .. } | ExprKind::Tag(base) => self.expr(base),
            ExprKind::Payload { value, .. } => self.expr(value),
            ExprKind::Record { fields, .. } | ExprKind::Ctor { fields, .. } => {
                fields.iter().for_each(|f| self.expr(f))
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                self.expr(cond);
                self.expr(then_value);
                self.expr(else_value);
            }
            ExprKind::Call { func, args } => {
                let name = self.kernel.function(*func).name.clone();
                for (k, a) in args.iter().enumerate() {
                    if let ExprKind::Var(v) = a.kind
                        && self.slot(v).is_some()
                    {
                        let writes = helper_writes(self.kernel, *func, k);
                        self.escape(v, format!("it is passed to helper `{name}`"), writes);
                    } else {
                        self.expr(a);
                    }
                }
            }
            ExprKind::Intrinsic { op, args } => {
                let what = match op {
                    Intrinsic::Atomic(_) => Some(("an atomic operates on it", true)),
                    Intrinsic::Length => Some(("its `length` is taken", false)),
                    _ => None,
                };
                for a in args {
                    if let (ExprKind::Var(v), Some((why, writes))) = (&a.kind, what)
                        && self.slot(*v).is_some()
                    {
                        self.escape(*v, why.into(), writes);
                    } else {
                        self.expr(a);
                    }
                }
            }
        }
    }
}
