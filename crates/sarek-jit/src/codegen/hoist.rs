//! Bounds checks hoisted out of `for` loops (loop versioning, as bounds-check elimination
//! does it). An element index of an innermost loop that is affine in the loop counter `k`
//! (`index = step * k + offset`, `step` and `offset` sums of loop-invariant int32 values
//! times literals) takes its extreme values at the loop's first and last `k`. Before the
//! loop, those two values are computed exactly (in int64) and checked against the length
//! once; when every such access passes, a copy of the loop without their checks runs, its
//! addresses `base + size * offset + size * step * k` computed directly (no index
//! arithmetic); otherwise the ordinary checked loop runs and faults where the thread loop
//! would. The int32 index the program computes agrees with the exact value modulo 2^32, so
//! an exact value within `0..len` is the index itself: wrapping arithmetic cannot slip past.

use crate::prepare::walk_expr;
use sarek_compiler::intrinsics::Intrinsic;
use sarek_compiler::ir::{Expr, ExprKind, LValue, Stmt, StmtKind, VarId};
use sarek_compiler::types::{BinOp, Literal, Scalar};
use std::collections::HashSet;

/// `mul * value` (`value` absent: the constant 1).
#[derive(Clone, Copy, Debug)]
pub(super) struct Term<'e> {
    pub mul: i64,
    pub value: Option<&'e Expr>,
}

/// `index = Σ step · k + Σ offset`.
#[derive(Clone, Debug, Default)]
pub(super) struct Affine<'e> {
    pub step: Vec<Term<'e>>,
    pub offset: Vec<Term<'e>>,
}

/// Exact sums stay clear of int64 overflow: the bound of `|Σ terms|` over every int32
/// value and counter, plus a lane offset, is below 2^63.
const EXACT_BOUND: i128 = (1 << 63) - 1024;

impl<'e> Affine<'e> {
    fn constant(x: i64) -> Self {
        Affine {
            step: Vec::new(),
            offset: vec![Term {
                mul: x,
                value: None,
            }],
        }
    }

    fn plus(mut self, other: Affine<'e>, sign: i64) -> Self {
        let neg = |t: Term<'e>| Term {
            mul: t.mul * sign,
            value: t.value,
        };
        self.step.extend(other.step.into_iter().map(neg));
        self.offset.extend(other.offset.into_iter().map(neg));
        self
    }

    fn scale(mut self, m: i64) -> Option<Self> {
        for t in self.step.iter_mut().chain(self.offset.iter_mut()) {
            t.mul = t.mul.checked_mul(m).filter(|x| x.abs() <= 1 << 31)?;
        }
        Some(self)
    }

    /// `self * x` for a loop-invariant `x`: only when every term is a constant.
    fn times(mut self, x: &'e Expr) -> Option<Self> {
        for t in self.step.iter_mut().chain(self.offset.iter_mut()) {
            if t.value.is_some() {
                return None;
            }
            t.value = Some(x);
        }
        Some(self)
    }

    fn exact(&self) -> bool {
        let bound = |t: &Term, per_k: bool| -> i128 {
            let v: i128 = if t.value.is_some() { 1 << 31 } else { 1 };
            let k: i128 = if per_k { 1 << 31 } else { 1 };
            (t.mul as i128).abs() * v * k
        };
        let total: i128 = self.step.iter().map(|t| bound(t, true)).sum::<i128>()
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

/// What a loop body may not change for a value to be invariant: the counter, and every
/// variable the body defines or assigns.
pub(super) struct Loop {
    pub counter: VarId,
    changed: HashSet<VarId>,
}

impl Loop {
    pub fn new(counter: VarId, body: &Vec<Stmt>) -> Loop {
        let mut changed = HashSet::new();
        {
            sarek_compiler::ir::visit::for_each_stmt(body, &mut |s| {
                match &s.kind {
                    StmtKind::Let { var, .. } | StmtKind::For { var, .. } => {
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
            });
        }
        Loop { counter, changed }
    }

    /// Whether `e` is the same at every iteration, cannot fault, and reads only variables
    /// that `allowed` accepts.
    fn invariant(&self, e: &Expr, allowed: &dyn Fn(VarId) -> bool) -> bool {
        let mut ok = super::pure(e);
        walk_expr(e, &mut |x| match &x.kind {
            ExprKind::Var(v) => {
                ok &= *v != self.counter && !self.changed.contains(v) && allowed(*v);
            }
            ExprKind::Intrinsic { op, .. } => {
                ok &= matches!(
                    op,
                    Intrinsic::Geometry(_)
                        | Intrinsic::Convert
                        | Intrinsic::Min
                        | Intrinsic::Max
                        | Intrinsic::Abs
                );
            }
            ExprKind::Lit(_) | ExprKind::Binary { .. } | ExprKind::Unary { .. } => {}
            _ => ok = false,
        });
        ok
    }

    /// `e` as an exact affine function of the counter, when it is one.
    pub fn affine<'e>(&self, e: &'e Expr, allowed: &dyn Fn(VarId) -> bool) -> Option<Affine<'e>> {
        let a = self.affine_of(e, allowed)?;
        a.exact().then_some(a)
    }

    fn affine_of<'e>(&self, e: &'e Expr, allowed: &dyn Fn(VarId) -> bool) -> Option<Affine<'e>> {
        if e.ty.scalar() != Some(Scalar::I32) {
            return None;
        }
        if let Some(c) = const_i32(e) {
            return Some(Affine::constant(c as i64));
        }
        match &e.kind {
            ExprKind::Var(v) if *v == self.counter => {
                return Some(Affine {
                    step: vec![Term {
                        mul: 1,
                        value: None,
                    }],
                    offset: Vec::new(),
                });
            }
            _ if self.invariant(e, allowed) => {
                return Some(Affine {
                    step: Vec::new(),
                    offset: vec![Term {
                        mul: 1,
                        value: Some(e),
                    }],
                });
            }
            _ => {}
        }
        let ExprKind::Binary { op, lhs, rhs, .. } = &e.kind else {
            return None;
        };
        match op {
            BinOp::Add => Some(
                self.affine_of(lhs, allowed)?
                    .plus(self.affine_of(rhs, allowed)?, 1),
            ),
            BinOp::Sub => Some(
                self.affine_of(lhs, allowed)?
                    .plus(self.affine_of(rhs, allowed)?, -1),
            ),
            BinOp::Mul => {
                let (a, x) = if let Some(m) = const_i32(rhs) {
                    return self.affine_of(lhs, allowed)?.scale(m as i64);
                } else if let Some(m) = const_i32(lhs) {
                    return self.affine_of(rhs, allowed)?.scale(m as i64);
                } else if self.invariant(rhs, allowed) {
                    (lhs, rhs)
                } else if self.invariant(lhs, allowed) {
                    (rhs, lhs)
                } else {
                    return None;
                };
                self.affine_of(a, allowed)?.times(x)
            }
            _ => None,
        }
    }
}

/// Element accesses `(array, index)` a loop body makes, nested blocks included; `None` when
/// the body holds a loop (only innermost loops are versioned: copies would multiply).
pub(super) fn accesses(body: &Vec<Stmt>) -> Option<Vec<(VarId, &Expr)>> {
    let mut nested = false;
    let mut stmts = Vec::new();
    sarek_compiler::ir::visit::for_each_stmt(body, &mut |s| {
        nested |= matches!(s.kind, StmtKind::For { .. } | StmtKind::While { .. });
        stmts.push(s);
    });
    if nested {
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
pub(super) fn size(body: &Vec<Stmt>) -> usize {
    let mut n = 0;
    sarek_compiler::ir::visit::for_each_stmt(body, &mut |s| {
        n += 1;
        for e in crate::prepare::own_exprs(s) {
            walk_expr(e, &mut |_| n += 1);
        }
    });
    n
}
