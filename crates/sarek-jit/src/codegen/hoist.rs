//! Bounds checks hoisted out of loops (loop versioning, as bounds-check elimination does it):
//! innermost `for` loops, and the lane-group loop over a block's threads (its counters are
//! `thread_idx_x`, `_y` and `_z`). An element index that is affine in the loop counter `k`
//! (`index = step * k + offset`, `step` and `offset` sums of loop-invariant int32 values
//! times literals) takes its extreme values at the loop's first and last `k`. Before the
//! loop, those two values are computed exactly (in int64) and checked against the length
//! once; when every such access passes, a copy of the loop without their checks runs, its
//! addresses `base + size * offset + size * step * k` computed directly (no index
//! arithmetic); otherwise the ordinary checked loop runs and faults where the thread loop
//! would. The int32 index the program computes agrees with the exact value modulo 2^32, so
//! an exact value within `0..len` is the index itself: wrapping arithmetic cannot slip past.
//! The same ranges decide comparisons (`i < n`) for the whole loop: the thread loop's copy
//! also requires its analysable `if` conditions to hold for every thread, and drops them.

use crate::prepare::walk_expr;
use sarek_compiler::intrinsics::{Geometry, Intrinsic};
use sarek_compiler::ir::{Expr, ExprKind, Kernel, LValue, Stmt, StmtKind, VarId};
use sarek_compiler::types::{BinOp, Literal, Scalar};
use std::collections::{HashMap, HashSet};

/// `mul * value`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Term<'e> {
    pub mul: i64,
    pub value: TermValue<'e>,
}

#[derive(Clone, Copy, Debug)]
pub(super) enum TermValue<'e> {
    One,
    /// A loop-invariant int32 expression.
    Expr(&'e Expr),
    /// `block_idx * block_dim` on an axis (int32).
    BlockBase(usize),
    /// The exact product of two int32 values: an invariant expression times an invariant
    /// expression or a block base (`(block_idx_y * 16) * n`).
    Times(&'e Expr, &'e Expr),
    BlockBaseTimes(usize, &'e Expr),
}

impl TermValue<'_> {
    fn is_one(self) -> bool {
        matches!(self, TermValue::One)
    }

    /// `mul · self` when it is a constant.
    pub fn constant(self, mul: i64) -> Option<i64> {
        self.is_one().then_some(mul)
    }
}

/// What a loop counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Counter {
    Var(VarId),
    /// The thread loop of a block: `thread_idx_x`, `_y` and `_z` (and `global_idx_*`) are
    /// its three counters.
    Thread,
}

/// `index = Σ step · k + Σ offset` (and `+ Σ step_y · y + Σ step_z · z` for the thread
/// loop's other two counters).
#[derive(Clone, Debug, Default)]
pub(super) struct Affine<'e> {
    pub step: Vec<Term<'e>>,
    pub step_yz: [Vec<Term<'e>>; 2],
    pub offset: Vec<Term<'e>>,
}

/// Exact sums stay clear of int64 overflow: the bound of `|Σ terms|` over every int32
/// value and counter, plus a lane offset, is below 2^63.
const EXACT_BOUND: i128 = (1 << 63) - 1024;

impl<'e> Affine<'e> {
    fn constant(x: i64) -> Self {
        Affine {
            step: Vec::new(),
            step_yz: Default::default(),
            offset: vec![Term {
                mul: x,
                value: TermValue::One,
            }],
        }
    }

    /// Counter `axis` (0 for a loop's only one).
    fn counter(axis: usize) -> Self {
        let one = vec![Term {
            mul: 1,
            value: TermValue::One,
        }];
        let mut a = Affine::default();
        match axis {
            0 => a.step = one,
            n => a.step_yz[n - 1] = one,
        }
        a
    }

    fn terms_mut(&mut self) -> impl Iterator<Item = &mut Term<'e>> {
        let [y, z] = &mut self.step_yz;
        self.step
            .iter_mut()
            .chain(y.iter_mut())
            .chain(z.iter_mut())
            .chain(self.offset.iter_mut())
    }

    fn plus(mut self, other: Affine<'e>, sign: i64) -> Self {
        let neg = |t: Term<'e>| Term {
            mul: t.mul * sign,
            value: t.value,
        };
        self.step.extend(other.step.into_iter().map(neg));
        let [y, z] = other.step_yz;
        self.step_yz[0].extend(y.into_iter().map(neg));
        self.step_yz[1].extend(z.into_iter().map(neg));
        self.offset.extend(other.offset.into_iter().map(neg));
        self
    }

    fn scale(mut self, m: i64) -> Option<Self> {
        for t in self.terms_mut() {
            t.mul = t.mul.checked_mul(m).filter(|x| x.abs() <= 1 << 31)?;
        }
        Some(self)
    }

    /// `self * x` for a loop-invariant `x`: the steps must be constants (else products
    /// with a counter would not stay exact), offset terms may be single values.
    fn times(mut self, x: &'e Expr) -> Option<Self> {
        let [y, z] = &mut self.step_yz;
        for t in self.step.iter_mut().chain(y.iter_mut()).chain(z.iter_mut()) {
            if !t.value.is_one() {
                return None;
            }
            t.value = TermValue::Expr(x);
        }
        for t in self.offset.iter_mut() {
            t.value = match t.value {
                TermValue::One => TermValue::Expr(x),
                TermValue::Expr(e) => TermValue::Times(e, x),
                TermValue::BlockBase(a) => TermValue::BlockBaseTimes(a, x),
                _ => return None,
            };
        }
        Some(self)
    }

    /// `self - other`.
    pub fn minus(self, other: Affine<'e>) -> Self {
        self.plus(other, -1)
    }

    /// Whether its value stays far from int64 overflow for every int32 input.
    pub fn exact(&self) -> bool {
        let bound = |t: &Term, per_k: bool| -> i128 {
            let v: i128 = match t.value {
                TermValue::One => 1,
                TermValue::Expr(_) | TermValue::BlockBase(_) => 1 << 31,
                TermValue::Times(..) | TermValue::BlockBaseTimes(..) => 1 << 62,
            };
            let k: i128 = if per_k { 1 << 31 } else { 1 };
            (t.mul as i128).abs() * v * k
        };
        let [y, z] = &self.step_yz;
        let total: i128 = self
            .step
            .iter()
            .chain(y)
            .chain(z)
            .map(|t| bound(t, true))
            .sum::<i128>()
            + self.offset.iter().map(|t| bound(t, false)).sum::<i128>();
        total < EXACT_BOUND
    }
}

/// The value of an int32 constant expression (literals and `+ - *` of them, wrapping).
pub(super) fn const_i32(e: &Expr) -> Option<i32> {
    match &e.kind {
        ExprKind::Lit(Literal::I32(x)) => Some(*x),
        ExprKind::Binary { op, lhs, rhs, .. } => {
            let (a, b) = (const_i32(lhs)?, const_i32(rhs)?);
            match op {
                BinOp::Add => Some(a.wrapping_add(b)),
                BinOp::Sub => Some(a.wrapping_sub(b)),
                BinOp::Mul => Some(a.wrapping_mul(b)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A loop under analysis: its counter, what its body changes (so is not invariant) and the
/// immutable `let`s the body makes (looked through: `let i = k * 4 in a.(i)` is affine).
pub(super) struct Loop<'e> {
    pub counter: Counter,
    changed: HashSet<VarId>,
    defs: HashMap<VarId, &'e Expr>,
}

impl<'e> Loop<'e> {
    pub fn new(k: &Kernel, counter: Counter, body: &'e [Stmt]) -> Loop<'e> {
        let mut changed = HashSet::new();
        let mut defs = HashMap::new();
        for s in all_stmts(body) {
            match &s.kind {
                StmtKind::Let { var, init } => {
                    changed.insert(*var);
                    if let Some(e) = init
                        && !k.var(*var).mutable
                    {
                        defs.insert(*var, e);
                    }
                }
                StmtKind::For { var, .. } => {
                    changed.insert(*var);
                }
                StmtKind::Assign {
                    place: LValue::Var(v),
                    ..
                } => {
                    changed.insert(*v);
                }
                _ => {}
            }
        }
        if let Counter::Var(v) = counter {
            changed.insert(v);
        }
        Loop {
            counter,
            changed,
            defs,
        }
    }

    /// Whether `e` is the same at every iteration, cannot fault, and reads only variables
    /// that `allowed` accepts.
    fn invariant(&self, e: &Expr, allowed: &dyn Fn(VarId) -> bool) -> bool {
        let mut ok = super::pure(e);
        walk_expr(e, &mut |x| match &x.kind {
            ExprKind::Var(v) => {
                ok &= !self.changed.contains(v) && allowed(*v);
            }
            ExprKind::Intrinsic {
                op: Intrinsic::Geometry(g),
                ..
            } => {
                ok &= self.counter != Counter::Thread || !g.is_thread_varying();
            }
            ExprKind::Intrinsic { op, .. } => {
                ok &= matches!(
                    op,
                    Intrinsic::Convert
                        | Intrinsic::Min
                        | Intrinsic::Max
                        | Intrinsic::Abs
                        | Intrinsic::Length
                );
            }
            ExprKind::Lit(_) | ExprKind::Binary { .. } | ExprKind::Unary { .. } => {}
            _ => ok = false,
        });
        ok
    }

    /// `e` as an exact affine function of the counter, when it is one.
    pub fn affine(&self, e: &'e Expr, allowed: &dyn Fn(VarId) -> bool) -> Option<Affine<'e>> {
        let a = self.affine_of(e, allowed, 0)?;
        a.exact().then_some(a)
    }

    fn affine_of(
        &self,
        e: &'e Expr,
        allowed: &dyn Fn(VarId) -> bool,
        depth: usize,
    ) -> Option<Affine<'e>> {
        if e.ty.scalar() != Some(Scalar::I32) || depth > 16 {
            return None;
        }
        if let Some(c) = const_i32(e) {
            return Some(Affine::constant(c as i64));
        }
        let thread = self.counter == Counter::Thread;
        match &e.kind {
            ExprKind::Var(v) if self.counter == Counter::Var(*v) => {
                return Some(Affine::counter(0));
            }
            ExprKind::Var(v) if self.defs.contains_key(v) => {
                return self.affine_of(self.defs[v], allowed, depth + 1);
            }
            ExprKind::Intrinsic {
                op: Intrinsic::Geometry(Geometry::ThreadIdx(axis)),
                ..
            } if thread => return Some(Affine::counter(axis.index())),
            ExprKind::Intrinsic {
                op: Intrinsic::Geometry(Geometry::GlobalIdx(axis)),
                ..
            } if thread => {
                let mut a = Affine::counter(axis.index());
                a.offset.push(Term {
                    mul: 1,
                    value: TermValue::BlockBase(axis.index()),
                });
                return Some(a);
            }
            _ if self.invariant(e, allowed) => {
                return Some(Affine {
                    offset: vec![Term {
                        mul: 1,
                        value: TermValue::Expr(e),
                    }],
                    ..Affine::default()
                });
            }
            _ => {}
        }
        let ExprKind::Binary { op, lhs, rhs, .. } = &e.kind else {
            return None;
        };
        let sub = |x: &'e Expr| self.affine_of(x, allowed, depth + 1);
        match op {
            BinOp::Add => Some(sub(lhs)?.plus(sub(rhs)?, 1)),
            BinOp::Sub => Some(sub(lhs)?.plus(sub(rhs)?, -1)),
            BinOp::Mul => {
                if let Some(m) = const_i32(rhs) {
                    return sub(lhs)?.scale(m as i64);
                }
                if let Some(m) = const_i32(lhs) {
                    return sub(rhs)?.scale(m as i64);
                }
                if self.invariant(rhs, allowed) {
                    sub(lhs)?.times(rhs)
                } else if self.invariant(lhs, allowed) {
                    sub(rhs)?.times(lhs)
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// A condition as comparisons `(op, lhs, rhs)` joined by `&&`, each side affine in the
    /// counter; `None` when it is not one.
    #[allow(clippy::type_complexity)]
    pub fn comparisons(
        &self,
        cond: &'e Expr,
        allowed: &dyn Fn(VarId) -> bool,
    ) -> Option<Vec<(BinOp, Affine<'e>, Affine<'e>)>> {
        let ExprKind::Binary { op, lhs, rhs, .. } = &cond.kind else {
            return None;
        };
        match op {
            BinOp::And => {
                let mut a = self.comparisons(lhs, allowed)?;
                a.extend(self.comparisons(rhs, allowed)?);
                Some(a)
            }
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => Some(vec![(
                *op,
                self.affine(lhs, allowed)?,
                self.affine(rhs, allowed)?,
            )]),
            _ => None,
        }
    }
}

/// The statements of `body` and of the blocks nested in it, in source order.
pub(super) fn all_stmts(body: &[Stmt]) -> Vec<&Stmt> {
    let mut out = Vec::new();
    for s in body {
        out.push(s);
        nested_stmts(s, &mut out);
    }
    out
}

fn nested_stmts<'e>(s: &'e Stmt, out: &mut Vec<&'e Stmt>) {
    let mut blocks: Vec<&'e [Stmt]> = Vec::new();
    match &s.kind {
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => blocks.extend([&then_block[..], &else_block[..]]),
        StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::Block(body) => {
            blocks.push(body)
        }
        StmtKind::Match { arms, .. } => blocks.extend(arms.iter().map(|a| &a.body[..])),
        _ => {}
    }
    for b in blocks {
        for s in b {
            out.push(s);
            nested_stmts(s, out);
        }
    }
}

/// Element accesses `(array, index)` a loop body makes, nested blocks included; `None` when
/// the body holds a loop and `innermost` asks for none (versioned loops within versioned
/// loops would multiply the copies).
pub(super) fn accesses(body: &[Stmt], innermost: bool) -> Option<Vec<(VarId, &Expr)>> {
    let stmts = all_stmts(body);
    if innermost
        && stmts
            .iter()
            .any(|s| matches!(s.kind, StmtKind::For { .. } | StmtKind::While { .. }))
    {
        return None;
    }
    let mut out = Vec::new();
    for s in stmts {
        if let StmtKind::Assign {
            place: LValue::Index { base, index },
            ..
        } = &s.kind
        {
            out.push((*base, &**index));
        }
        for e in crate::prepare::own_exprs(s) {
            index_exprs(e, &mut out);
        }
    }
    Some(out)
}

fn index_exprs<'e>(e: &'e Expr, out: &mut Vec<(VarId, &'e Expr)>) {
    let mut sub: Vec<&'e Expr> = Vec::new();
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => {}
        ExprKind::Index { base, index } => {
            out.push((*base, index));
            sub.push(index);
        }
        ExprKind::Binary { lhs, rhs, .. } => sub.extend([&**lhs, &**rhs]),
        ExprKind::Unary { operand: a, .. }
        | ExprKind::Field { base: a, .. }
        | ExprKind::Tag(a)
        | ExprKind::Payload { value: a, .. } => sub.push(a),
        ExprKind::Record { fields, .. }
        | ExprKind::Ctor { fields, .. }
        | ExprKind::Call { args: fields, .. }
        | ExprKind::Intrinsic { args: fields, .. } => sub.extend(fields.iter()),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => sub.extend([&**cond, &**then_value, &**else_value]),
    }
    for x in sub {
        index_exprs(x, out);
    }
}

/// Statements and expression nodes of a loop body (what unrolling copies).
pub(super) fn size(body: &[Stmt]) -> usize {
    let stmts = all_stmts(body);
    let mut n = stmts.len();
    for s in stmts {
        for e in crate::prepare::own_exprs(s) {
            walk_expr(e, &mut |_| n += 1);
        }
    }
    n
}
