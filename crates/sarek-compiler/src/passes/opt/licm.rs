//! Loop-invariant code motion: values a loop body computes the same way on every iteration
//! are computed once, before the loop.
//!
//! ptxas hoists little out of a loop: in the register-tiled matmul, the panel loop recomputed
//! every thread's load and store addresses (`e / 16`, `e mod 16`, `(row0 + ar) * n`, ...) on
//! every iteration, about 75 SASS instructions per iteration that NVRTC's output computes
//! once. Two motions, applied to every `for` and `while` loop, inner loops first (so an
//! invariant climbs out of a whole nest):
//! - an immutable `let` whose initialiser is a plain value ([`is_pure_value`]) of invariant
//!   operands moves before the loop;
//! - in the statements the body runs unconditionally, the largest invariant computations of
//!   each evaluated expression become `let`s before the loop (equal ones share one). A sum of
//!   integers is first regrouped as `invariant + variant + constant` (exact: integer `+` wraps,
//!   so it is associative and commutative), and its constant term stays in place, where the
//!   PTX writer folds it into the `[reg+imm]` address offset.
//!
//! A variable is invariant when the loop neither declares nor assigns it. Only plain values
//! move, so evaluating one before a loop that runs no iteration changes nothing.

use std::collections::HashSet;

use super::walk::{
    changed_in, insert_before_each, is_computation, is_pure_value, same_expr, vars_read,
};
use crate::diag::Span;
use crate::ir::{Block, Expr, ExprKind, Kernel, LValue, Stmt, StmtKind, Ty, VarId, VarInfo};
use crate::types::{BinOp, Literal, Scalar};

/// Hoist the invariant values of every loop of `kernel`; returns whether anything changed.
pub fn hoist_invariants(kernel: &mut Kernel) -> bool {
    let vars = &mut kernel.vars;
    let mut changed = rewrite_block(&mut kernel.body, vars);
    for f in &mut kernel.functions {
        changed |= rewrite_block(&mut f.body, vars);
    }
    changed
}

fn rewrite_block(block: &mut Block, vars: &mut Vec<VarInfo>) -> bool {
    let mut changed = false;
    insert_before_each(block, |s| {
        changed |= rewrite_nested(s, vars);
        let span = s.span;
        let hoisted = match &mut s.kind {
            StmtKind::For { var, body, .. } => {
                let mut variant = HashSet::from([*var]);
                changed_in(body, &mut variant);
                hoist(None, body, &mut variant, vars, span)
            }
            StmtKind::While { cond, body, .. } => {
                let mut variant = HashSet::new();
                changed_in(body, &mut variant);
                hoist(Some(cond), body, &mut variant, vars, span)
            }
            _ => Vec::new(),
        };
        changed |= !hoisted.is_empty();
        hoisted
    });
    changed
}

/// Hoist in the loops nested in `s` (inner loops first).
fn rewrite_nested(s: &mut Stmt, vars: &mut Vec<VarInfo>) -> bool {
    match &mut s.kind {
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => rewrite_block(then_block, vars) | rewrite_block(else_block, vars),
        StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::Block(body) => {
            rewrite_block(body, vars)
        }
        StmtKind::Match { arms, .. } => arms
            .iter_mut()
            .fold(false, |c, arm| rewrite_block(&mut arm.body, vars) | c),
        _ => false,
    }
}

/// What one loop hoists: the statements to place before it.
struct Hoister<'a> {
    variant: &'a mut HashSet<VarId>,
    vars: &'a mut Vec<VarInfo>,
    assigned: HashSet<VarId>,
    before: Vec<Stmt>,
    span: Span,
}

/// Hoist out of a loop's body and, for a `while`, its condition (tested every iteration).
fn hoist(
    cond: Option<&mut Expr>,
    body: &mut Block,
    variant: &mut HashSet<VarId>,
    vars: &mut Vec<VarInfo>,
    span: Span,
) -> Vec<Stmt> {
    let mut assigned = HashSet::new();
    crate::ir::visit::for_each_stmt(body, &mut |s| {
        if let StmtKind::Assign { place, .. } = &s.kind {
            assigned.insert(super::walk::place_root(place));
        }
    });
    let mut h = Hoister {
        variant,
        vars,
        assigned,
        before: Vec::new(),
        span,
    };
    h.block(body);
    if let Some(cond) = cond {
        h.expr(cond);
    }
    h.before
}

impl Hoister<'_> {
    fn invariant(&self, e: &Expr) -> bool {
        let mut read = HashSet::new();
        vars_read(e, &mut read);
        read.is_disjoint(self.variant)
    }

    /// The statements of `block` the loop body runs unconditionally (nested `Block`s
    /// included; conditional and repeated code is left to the loops nested in it).
    fn block(&mut self, block: &mut Block) {
        let mut kept = Vec::with_capacity(block.len());
        for mut s in std::mem::take(block) {
            match &mut s.kind {
                StmtKind::Let {
                    var,
                    init: Some(init),
                } if !self.vars[var.0 as usize].mutable
                    && !self.assigned.contains(var)
                    && is_pure_value(init)
                    && self.invariant(init) =>
                {
                    self.variant.remove(var);
                    self.before.push(s);
                    continue;
                }
                StmtKind::Let { init: Some(e), .. } => self.expr(e),
                StmtKind::Assign { place, value } => {
                    self.place(place);
                    self.expr(value);
                }
                StmtKind::Expr(e) | StmtKind::Return(Some(e)) => self.expr(e),
                StmtKind::If { cond, .. } => self.expr(cond),
                StmtKind::While { cond, .. } => self.expr(cond),
                StmtKind::For { start, end, .. } => {
                    self.expr(start);
                    self.expr(end);
                }
                StmtKind::Match { scrutinee, .. } => self.expr(scrutinee),
                StmtKind::Block(b) => self.block(b),
                _ => {}
            }
            kept.push(s);
        }
        *block = kept;
    }

    fn place(&mut self, place: &mut LValue) {
        match place {
            LValue::Var(_) => {}
            LValue::Index { index, .. } => self.expr(index),
            LValue::Field { base, .. } => self.place(base),
        }
    }

    /// Replace the largest invariant computations of `e` by hoisted variables.
    fn expr(&mut self, e: &mut Expr) {
        if !is_pure_value(e) {
            return self.children(e);
        }
        regroup_sum(e, &|x| self.invariant(x));
        if has_constant_offset(e) {
            // `x + c`: hoist `x`, keep the constant where an address can absorb it.
            if let ExprKind::Binary { lhs, .. } = &mut e.kind {
                self.expr(lhs);
            }
            return;
        }
        if is_computation(e) && matches!(e.ty, Ty::Scalar(_)) && self.invariant(e) {
            let var = self.bind(e);
            *e = Expr::new(ExprKind::Var(var), e.ty.clone());
            return;
        }
        self.children(e);
    }

    fn children(&mut self, e: &mut Expr) {
        match &mut e.kind {
            ExprKind::Lit(_) | ExprKind::Var(_) => {}
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::Unary { operand: x, .. }
            | ExprKind::Index { index: x, .. }
            | ExprKind::Field { base: x, .. }
            | ExprKind::Tag(x)
            | ExprKind::Payload { value: x, .. } => self.expr(x),
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                self.expr(cond);
                self.expr(then_value);
                self.expr(else_value);
            }
            ExprKind::Record { fields: xs, .. }
            | ExprKind::Ctor { fields: xs, .. }
            | ExprKind::Call { args: xs, .. }
            | ExprKind::Intrinsic { args: xs, .. } => xs.iter_mut().for_each(|x| self.expr(x)),
        }
    }

    /// The variable holding `e` before the loop: an equal one hoisted already, or a new one.
    fn bind(&mut self, e: &Expr) -> VarId {
        for s in &self.before {
            if let StmtKind::Let {
                var,
                init: Some(init),
            } = &s.kind
                && same_expr(init, e)
            {
                return *var;
            }
        }
        self.vars.push(VarInfo {
            name: "invariant".into(),
            ty: e.ty.clone(),
            mutable: false,
            span: Span::DUMMY,
        });
        let var = VarId((self.vars.len() - 1) as u32);
        self.before.push(Stmt {
            kind: StmtKind::Let {
                var,
                init: Some(e.clone()),
            },
            span: self.span,
        });
        var
    }
}

/// Whether `e` is an int32 `x + c` or `x - c` with `c` a literal.
fn has_constant_offset(e: &Expr) -> bool {
    matches!(
        &e.kind,
        ExprKind::Binary { op: BinOp::Add | BinOp::Sub, rhs, .. }
            if e.ty == Ty::Scalar(Scalar::I32) && matches!(rhs.kind, ExprKind::Lit(Literal::I32(_)))
    )
}

/// One term of an integer sum: the operand and whether it is subtracted.
type Term = (Expr, bool);

/// Regroup an int32 sum as `(invariant terms) +/- variant terms + constant`, each group in
/// its original order, when that exposes an invariant computation to hoist (two or more
/// invariant terms, or one next to a constant). Wrapping `+` and `-` are associative and
/// commutative, so the value is the same bit for bit.
fn regroup_sum(e: &mut Expr, invariant: &impl Fn(&Expr) -> bool) {
    if e.ty != Ty::Scalar(Scalar::I32) {
        return;
    }
    let mut terms: Vec<Term> = Vec::new();
    flatten(e, false, &mut terms);
    if terms.len() < 2 {
        return;
    }
    let mut constant: i32 = 0;
    let (mut inv, mut var): (Vec<Term>, Vec<Term>) = (Vec::new(), Vec::new());
    for (t, neg) in terms {
        match t.kind {
            ExprKind::Lit(Literal::I32(c)) => {
                constant = if neg {
                    constant.wrapping_sub(c)
                } else {
                    constant.wrapping_add(c)
                };
            }
            _ if invariant(&t) => inv.push((t, neg)),
            _ => var.push((t, neg)),
        }
    }
    let exposes = match inv.as_slice() {
        [] => false,
        [(t, _)] => is_computation(t) && (constant != 0 || !var.is_empty()),
        _ => !var.is_empty() || constant != 0,
    };
    // A leading subtracted term would cost a negation.
    if !exposes || inv[0].1 {
        return;
    }
    // The variant terms are added to (or subtracted from) the invariant group one by one.
    let Some(mut out) = sum(inv) else { return };
    for (t, neg) in var {
        out = binary(if neg { BinOp::Sub } else { BinOp::Add }, out, t);
    }
    if constant != 0 {
        out = binary(BinOp::Add, out, Expr::i32(constant));
    }
    *e = out;
}

/// The terms of an int32 `+`/`-` tree, left to right.
fn flatten(e: &Expr, negated: bool, out: &mut Vec<Term>) {
    match &e.kind {
        ExprKind::Binary {
            op: op @ (BinOp::Add | BinOp::Sub),
            lhs,
            rhs,
            ..
        } if e.ty == Ty::Scalar(Scalar::I32) => {
            flatten(lhs, negated, out);
            flatten(rhs, negated ^ (*op == BinOp::Sub), out);
        }
        _ => out.push((e.clone(), negated)),
    }
}

/// The terms summed left to right; the first one is not negated.
fn sum(terms: Vec<Term>) -> Option<Expr> {
    let mut it = terms.into_iter();
    let (mut acc, _) = it.next()?;
    for (t, neg) in it {
        acc = binary(if neg { BinOp::Sub } else { BinOp::Add }, acc, t);
    }
    Some(acc)
}

fn binary(op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
    Expr::new(
        ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
            nowrap: false,
        },
        Ty::Scalar(Scalar::I32),
    )
}
