//! A mutable post-order walk over every expression of a block: the one traversal the
//! rewriting passes share (each only says what to do with one expression node), and the
//! facts about expressions the motion passes share (purity, structural equality, the
//! variables read and assigned).

use std::collections::HashSet;

use crate::intrinsics::Intrinsic;
use crate::ir::{Block, Expr, ExprKind, Kernel, LValue, Stmt, StmtKind, VarId, visit};
use crate::types::Literal;

/// The kernel's body and its helpers' bodies.
pub fn bodies(kernel: &Kernel) -> impl Iterator<Item = &Block> {
    std::iter::once(&kernel.body).chain(kernel.functions.iter().map(|f| &f.body))
}

/// Call `f` on each statement of `block` in order and place the statements it returns right
/// before that statement (the loop motions' hoisted `let`s). In place: a block is not
/// rebuilt, every statement moved, where nothing is inserted (most blocks).
pub fn insert_before_each(block: &mut Block, mut f: impl FnMut(&mut Stmt) -> Vec<Stmt>) {
    let mut i = 0;
    while i < block.len() {
        let before = f(&mut block[i]);
        let inserted = before.len();
        if inserted > 0 {
            block.splice(i..i, before);
        }
        i += inserted + 1;
    }
}

/// Every variable some assignment targets (the root variable of each assigned place).
pub fn assigned_vars(kernel: &Kernel) -> HashSet<VarId> {
    let mut out = HashSet::new();
    for body in bodies(kernel) {
        visit::for_each_stmt(body, &mut |s| {
            if let StmtKind::Assign { place, .. } = &s.kind {
                out.insert(place_root(place));
            }
        });
    }
    out
}

/// Call `f` on every expression of `block`, nested statements included, children before
/// their parent (so `f` sees operands already rewritten).
pub fn exprs_mut(block: &mut Block, f: &mut impl FnMut(&mut Expr)) {
    for s in block {
        stmt_exprs_mut(s, f);
    }
}

/// [`exprs_mut`] on one statement.
pub fn stmt_exprs_mut(s: &mut Stmt, f: &mut impl FnMut(&mut Expr)) {
    match &mut s.kind {
        StmtKind::Let { init, .. } => {
            if let Some(e) = init {
                expr_mut(e, f);
            }
        }
        StmtKind::Assign { place, value } => {
            place_mut(place, f);
            expr_mut(value, f);
        }
        StmtKind::Expr(e) | StmtKind::Return(Some(e)) => expr_mut(e, f),
        StmtKind::If {
            cond,
            then_block,
            else_block,
        } => {
            expr_mut(cond, f);
            exprs_mut(then_block, f);
            exprs_mut(else_block, f);
        }
        StmtKind::For {
            start, end, body, ..
        } => {
            expr_mut(start, f);
            expr_mut(end, f);
            exprs_mut(body, f);
        }
        StmtKind::While { cond, body, .. } => {
            expr_mut(cond, f);
            exprs_mut(body, f);
        }
        StmtKind::Match {
            scrutinee, arms, ..
        } => {
            expr_mut(scrutinee, f);
            for arm in arms {
                exprs_mut(&mut arm.body, f);
            }
        }
        StmtKind::Block(b) => exprs_mut(b, f),
        StmtKind::Array { .. }
        | StmtKind::Barrier
        | StmtKind::Fence { .. }
        | StmtKind::Return(None)
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Native(_)
        | StmtKind::Trap(_) => {}
    }
}

/// The index expressions an assigned place evaluates.
pub fn place_mut(place: &mut LValue, f: &mut impl FnMut(&mut Expr)) {
    match place {
        LValue::Var(_) => {}
        LValue::Index { index, .. } => expr_mut(index, f),
        LValue::Field { base, .. } => place_mut(base, f),
    }
}

/// Post-order walk of one expression tree.
pub fn expr_mut(e: &mut Expr, f: &mut impl FnMut(&mut Expr)) {
    match &mut e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => {}
        ExprKind::Binary { lhs, rhs, .. } => {
            expr_mut(lhs, f);
            expr_mut(rhs, f);
        }
        ExprKind::Unary { operand, .. } => expr_mut(operand, f),
        ExprKind::Index { index, .. } => expr_mut(index, f),
        ExprKind::Field { base, .. } => expr_mut(base, f),
        ExprKind::Tag(v) => expr_mut(v, f),
        ExprKind::Payload { value, .. } => expr_mut(value, f),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => {
            expr_mut(cond, f);
            expr_mut(then_value, f);
            expr_mut(else_value, f);
        }
        ExprKind::Record { fields: args, .. }
        | ExprKind::Ctor { fields: args, .. }
        | ExprKind::Call { args, .. }
        | ExprKind::Intrinsic { args, .. } => args.iter_mut().for_each(|a| expr_mut(a, f)),
    }
    f(e);
}

/// Whether `e` is a plain value: no effect, no memory read, no fault. Evaluating it again,
/// earlier, or where the source would not, gives the same value and changes nothing, so
/// the motion passes may bind it to a variable anywhere its operands hold.
pub fn is_pure_value(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => true,
        // Integer `/` and `mod` are total (`x / 0 = 0`, `x mod 0 = x`); checked mode's
        // divisor checks are statements of their own.
        ExprKind::Binary { lhs, rhs, .. } => is_pure_value(lhs) && is_pure_value(rhs),
        ExprKind::Unary { operand: x, .. }
        | ExprKind::Field { base: x, .. }
        | ExprKind::Tag(x)
        | ExprKind::Payload { value: x, .. } => is_pure_value(x),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => is_pure_value(cond) && is_pure_value(then_value) && is_pure_value(else_value),
        ExprKind::Intrinsic { op, args } => match op {
            Intrinsic::Geometry(_)
            | Intrinsic::Math(_)
            | Intrinsic::Abs
            | Intrinsic::Min
            | Intrinsic::Max
            | Intrinsic::Clz
            | Intrinsic::Popcount
            | Intrinsic::Convert => args.iter().all(is_pure_value),
            // A vector's length is a launch argument; its operand names the vector.
            Intrinsic::Length => true,
            _ => false,
        },
        ExprKind::Index { .. }
        | ExprKind::Call { .. }
        | ExprKind::Record { .. }
        | ExprKind::Ctor { .. } => false,
    }
}

/// Whether `e` computes something (a variable, a literal, a geometry value or a length
/// is already as cheap as a variable).
pub fn is_computation(e: &Expr) -> bool {
    !matches!(
        e.kind,
        ExprKind::Lit(_)
            | ExprKind::Var(_)
            | ExprKind::Intrinsic {
                op: Intrinsic::Geometry(_) | Intrinsic::Length,
                ..
            }
    )
}

/// Structural equality with literals compared by their bits (`0.0` and `-0.0` differ,
/// a NaN equals itself).
pub fn same_expr(a: &Expr, b: &Expr) -> bool {
    fn lit_bits(l: Literal) -> (u8, u64) {
        match l {
            Literal::Bool(v) => (0, u64::from(v)),
            Literal::I32(v) => (1, v as u32 as u64),
            Literal::I64(v) => (2, v as u64),
            Literal::F32(v) => (3, u64::from(v.to_bits())),
            Literal::F64(v) => (4, v.to_bits()),
        }
    }
    fn all(a: &[Expr], b: &[Expr]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_expr(x, y))
    }
    if a.ty != b.ty {
        return false;
    }
    match (&a.kind, &b.kind) {
        (ExprKind::Lit(x), ExprKind::Lit(y)) => lit_bits(*x) == lit_bits(*y),
        (ExprKind::Var(x), ExprKind::Var(y)) => x == y,
        (
            ExprKind::Binary {
                op: o1,
                lhs: l1,
                rhs: r1,
                ..
            },
            ExprKind::Binary {
                op: o2,
                lhs: l2,
                rhs: r2,
                ..
            },
        ) => o1 == o2 && same_expr(l1, l2) && same_expr(r1, r2),
        (
            ExprKind::Unary {
                op: o1,
                operand: x1,
            },
            ExprKind::Unary {
                op: o2,
                operand: x2,
            },
        ) => o1 == o2 && same_expr(x1, x2),
        (
            ExprKind::Index {
                base: b1,
                index: i1,
            },
            ExprKind::Index {
                base: b2,
                index: i2,
            },
        ) => b1 == b2 && same_expr(i1, i2),
        (
            ExprKind::Field {
                base: b1,
                field: f1,
            },
            ExprKind::Field {
                base: b2,
                field: f2,
            },
        ) => f1 == f2 && same_expr(b1, b2),
        (ExprKind::Tag(x), ExprKind::Tag(y)) => same_expr(x, y),
        (
            ExprKind::Payload {
                value: v1,
                ctor: c1,
                field: f1,
            },
            ExprKind::Payload {
                value: v2,
                ctor: c2,
                field: f2,
            },
        ) => c1 == c2 && f1 == f2 && same_expr(v1, v2),
        (
            ExprKind::Select {
                cond: c1,
                then_value: t1,
                else_value: e1,
            },
            ExprKind::Select {
                cond: c2,
                then_value: t2,
                else_value: e2,
            },
        ) => same_expr(c1, c2) && same_expr(t1, t2) && same_expr(e1, e2),
        (ExprKind::Intrinsic { op: o1, args: a1 }, ExprKind::Intrinsic { op: o2, args: a2 }) => {
            o1 == o2 && all(a1, a2)
        }
        _ => false,
    }
}

/// Add every variable `e` reads to `out`.
pub fn vars_read(e: &Expr, out: &mut HashSet<VarId>) {
    match &e.kind {
        ExprKind::Lit(_) => {}
        ExprKind::Var(v) => {
            out.insert(*v);
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            vars_read(lhs, out);
            vars_read(rhs, out);
        }
        ExprKind::Unary { operand: x, .. }
        | ExprKind::Field { base: x, .. }
        | ExprKind::Tag(x)
        | ExprKind::Payload { value: x, .. } => vars_read(x, out),
        ExprKind::Index { base, index } => {
            out.insert(*base);
            vars_read(index, out);
        }
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => {
            vars_read(cond, out);
            vars_read(then_value, out);
            vars_read(else_value, out);
        }
        ExprKind::Record { fields: xs, .. }
        | ExprKind::Ctor { fields: xs, .. }
        | ExprKind::Call { args: xs, .. }
        | ExprKind::Intrinsic { args: xs, .. } => xs.iter().for_each(|x| vars_read(x, out)),
    }
}

/// The root variable an assignment to `place` changes.
pub fn place_root(place: &LValue) -> VarId {
    match place {
        LValue::Var(v) | LValue::Index { base: v, .. } => *v,
        LValue::Field { base, .. } => place_root(base),
    }
}

/// Add to `out` every variable `block` assigns or declares (nested blocks included): the
/// variables whose value may differ from one run of the block to the next.
pub fn changed_in(block: &Block, out: &mut HashSet<VarId>) {
    visit::for_each_stmt(block, &mut |s| match &s.kind {
        StmtKind::Assign { place, .. } => {
            out.insert(place_root(place));
        }
        StmtKind::Let { var, .. } | StmtKind::Array { var } | StmtKind::For { var, .. } => {
            out.insert(*var);
        }
        StmtKind::Match { arms, .. } => {
            out.extend(arms.iter().flat_map(|a| a.bindings.iter().flatten()));
        }
        _ => {}
    });
}

/// Replace every occurrence of `target` in `e` by a read of `var`; returns how many.
pub fn replace_in(e: &mut Expr, target: &Expr, var: VarId) -> usize {
    let mut n = 0;
    expr_mut(e, &mut |x| {
        if same_expr(x, target) {
            *x = Expr::new(ExprKind::Var(var), x.ty.clone());
            n += 1;
        }
    });
    n
}

/// Whether `s` (or a statement nested in it) assigns one of `vars`.
pub fn assigns_any(s: &Stmt, vars: &HashSet<VarId>) -> bool {
    let mut found = false;
    let mut check = |x: &Stmt| {
        if let StmtKind::Assign { place, .. } = &x.kind {
            found |= vars.contains(&place_root(place));
        }
    };
    check(s);
    match &s.kind {
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => {
            visit::for_each_stmt(then_block, &mut check);
            visit::for_each_stmt(else_block, &mut check);
        }
        StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::Block(body) => {
            visit::for_each_stmt(body, &mut check)
        }
        StmtKind::Match { arms, .. } => arms
            .iter()
            .for_each(|a| visit::for_each_stmt(&a.body, &mut check)),
        _ => {}
    }
    found
}
