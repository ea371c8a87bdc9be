//! Constant folding with the interpreter's exact scalar semantics.
//!
//! Why a generator needs it: glslang parses every float literal as a double and folds
//! constant expressions, float32 ones included, in double precision, rounding to float32
//! only when it writes the SPIR-V constant (and not at all when the result is then widened
//! to double). So `0.1 * 3.0` on float32 operands, or `double(a * b + c)` of literals, gives
//! another value on Vulkan than float32 arithmetic does (tests/conformance/FINDINGS.md, F12).
//! Folding such expressions here, in the operand's own precision, leaves the target compiler
//! nothing to fold across a float32 operation.
//!
//! Only operations whose result IEEE 754 fixes bit for bit (round to nearest even) are folded:
//! `+ - * /`, `mod` (C `fmod`, exact), negation, comparisons, `sqrt`, `fma`, rounding to an
//! integral value, `abs`, `copysign`, `min`/`max`, and conversions. Transcendental functions
//! are left alone: their results are implementation-defined within a tolerance, and folding
//! them with the host's libm would claim an exactness no device has. The values are
//! [`crate::scalar`]'s, the functions the interpreter computes with; an integer division by
//! zero is not folded (it stays a trap at run time).

use crate::intrinsics::Intrinsic;
use crate::ir::{Block, Expr, ExprKind, Kernel, LValue, MatchArm, Stmt, StmtKind};
use crate::scalar;
use crate::types::{Literal, Scalar};

/// `kernel` with every foldable constant subexpression replaced by its value.
pub fn fold_constants(kernel: &Kernel) -> Kernel {
    let mut k = kernel.clone();
    fold_in_place(&mut k);
    k
}

/// [`fold_constants`] of a kernel the caller owns (no copy).
pub fn fold_in_place(k: &mut Kernel) {
    fold_block(&mut k.body);
    for f in &mut k.functions {
        fold_block(&mut f.body);
    }
}

fn fold_block(block: &mut Block) {
    block.iter_mut().for_each(fold_stmt);
}

fn fold_stmt(stmt: &mut Stmt) {
    match &mut stmt.kind {
        StmtKind::Let { init, .. } => init.iter_mut().for_each(fold_expr),
        StmtKind::Assign { place, value } => {
            fold_place(place);
            fold_expr(value);
        }
        StmtKind::Expr(e) => fold_expr(e),
        StmtKind::If {
            cond,
            then_block,
            else_block,
        } => {
            fold_expr(cond);
            fold_block(then_block);
            fold_block(else_block);
        }
        StmtKind::For {
            start, end, body, ..
        } => {
            fold_expr(start);
            fold_expr(end);
            fold_block(body);
        }
        StmtKind::While { cond, body, .. } => {
            fold_expr(cond);
            fold_block(body);
        }
        StmtKind::Match {
            scrutinee, arms, ..
        } => {
            fold_expr(scrutinee);
            for MatchArm { body, .. } in arms {
                fold_block(body);
            }
        }
        StmtKind::Block(b) => fold_block(b),
        StmtKind::Return(e) => e.iter_mut().for_each(fold_expr),
        StmtKind::Array { .. }
        | StmtKind::Barrier
        | StmtKind::Fence { .. }
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Native(_)
        | StmtKind::Trap(_) => {}
    }
}

fn fold_place(place: &mut LValue) {
    match place {
        LValue::Var(_) => {}
        LValue::Index { index, .. } => fold_expr(index),
        LValue::Field { base, .. } => fold_place(base),
    }
}

/// Fold `e` bottom-up, in place.
fn fold_expr(e: &mut Expr) {
    match &mut e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => return,
        ExprKind::Binary { lhs, rhs, .. } => {
            fold_expr(lhs);
            fold_expr(rhs);
        }
        ExprKind::Unary { operand, .. } => fold_expr(operand),
        ExprKind::Index { index, .. } => fold_expr(index),
        ExprKind::Field { base, .. } => fold_expr(base),
        ExprKind::Tag(v) => fold_expr(v),
        ExprKind::Payload { value, .. } => fold_expr(value),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => {
            fold_expr(cond);
            fold_expr(then_value);
            fold_expr(else_value);
        }
        ExprKind::Record { fields: args, .. }
        | ExprKind::Ctor { fields: args, .. }
        | ExprKind::Call { args, .. }
        | ExprKind::Intrinsic { args, .. } => args.iter_mut().for_each(fold_expr),
    }
    if let Some(v) = evaluate(e) {
        *e = Expr::lit(v);
    }
}

/// The value of `e` when its operands are literals and its operation is foldable.
fn evaluate(e: &Expr) -> Option<Literal> {
    let lit = |e: &Expr| match e.kind {
        ExprKind::Lit(l) => Some(l),
        _ => None,
    };
    let result = e.ty.scalar()?;
    let v = match &e.kind {
        ExprKind::Binary { op, lhs, rhs, .. } => scalar::binary(*op, lit(lhs)?, lit(rhs)?)?,
        ExprKind::Unary { op, operand } => scalar::unary(*op, lit(operand)?)?,
        ExprKind::Intrinsic { op, args } => {
            let args = args.iter().map(lit).collect::<Option<Vec<_>>>()?;
            intrinsic(*op, &args, result)?
        }
        _ => return None,
    };
    // A typed IR gives operations their declared result type; anything else is not ours
    // to rewrite.
    (v.scalar() == result).then_some(v)
}

fn intrinsic(op: Intrinsic, args: &[Literal], result: Scalar) -> Option<Literal> {
    use Literal as L;
    match (op, args) {
        (Intrinsic::Convert, [a]) => Some(scalar::convert(*a, result)),
        (Intrinsic::Abs, [a]) => scalar::abs(*a),
        (Intrinsic::Min | Intrinsic::Max, [a, b]) => scalar::min_max(op == Intrinsic::Max, *a, *b),
        (Intrinsic::Math(f), args) if args.len() == f.arity() && scalar::is_exact(f) => {
            match args {
                [L::F32(x)] => Some(L::F32(scalar::math32(f, *x, 0.0, 0.0))),
                [L::F64(x)] => Some(L::F64(scalar::math64(f, *x, 0.0, 0.0))),
                [L::F32(x), L::F32(y)] => Some(L::F32(scalar::math32(f, *x, *y, 0.0))),
                [L::F64(x), L::F64(y)] => Some(L::F64(scalar::math64(f, *x, *y, 0.0))),
                [L::F32(x), L::F32(y), L::F32(z)] => Some(L::F32(scalar::math32(f, *x, *y, *z))),
                [L::F64(x), L::F64(y), L::F64(z)] => Some(L::F64(scalar::math64(f, *x, *y, *z))),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intrinsics::MathFn;
    use crate::ir::Ty;
    use crate::types::BinOp;

    fn lit(l: Literal) -> Expr {
        Expr::lit(l)
    }
    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        let ty = if op.is_comparison() {
            Ty::BOOL
        } else {
            a.ty.clone()
        };
        Expr::new(
            ExprKind::Binary {
                op,
                lhs: Box::new(a),
                rhs: Box::new(b),
                nowrap: false,
            },
            ty,
        )
    }
    fn folded(mut e: Expr) -> Option<Literal> {
        fold_expr(&mut e);
        match e.kind {
            ExprKind::Lit(l) => Some(l),
            _ => None,
        }
    }
    fn f(v: f32) -> Expr {
        lit(Literal::F32(v))
    }

    #[test]
    fn float32_folds_in_float32() {
        // In double, 0.1 * 3.0 + 0.2 (of the float32 values) rounds to another float32.
        let e = bin(BinOp::Add, bin(BinOp::Mul, f(0.1), f(3.0)), f(0.2));
        let expect = 0.1f32 * 3.0f32 + 0.2f32;
        assert_eq!(folded(e), Some(Literal::F32(expect)));
        let widened = Expr::new(
            ExprKind::Intrinsic {
                op: Intrinsic::Convert,
                args: vec![bin(BinOp::Div, f(1.0), f(3.0))],
            },
            Ty::F64,
        );
        assert_eq!(
            folded(widened),
            Some(Literal::F64(f64::from(1.0f32 / 3.0f32)))
        );
    }

    #[test]
    fn integers_wrap_and_division_by_zero_stays() {
        let i = |v| lit(Literal::I32(v));
        assert_eq!(
            folded(bin(BinOp::Add, i(i32::MAX), i(1))),
            Some(Literal::I32(i32::MIN))
        );
        assert_eq!(
            folded(bin(BinOp::Div, i(i32::MIN), i(-1))),
            Some(Literal::I32(i32::MIN))
        );
        assert_eq!(
            folded(bin(BinOp::Rem, i(i32::MIN), i(-1))),
            Some(Literal::I32(0))
        );
        assert_eq!(folded(bin(BinOp::Shl, i(1), i(33))), Some(Literal::I32(2)));
        assert_eq!(
            folded(bin(BinOp::LShr, i(-1), i(28))),
            Some(Literal::I32(15))
        );
        assert_eq!(folded(bin(BinOp::Div, i(1), i(0))), None);
    }

    #[test]
    fn transcendentals_and_variables_stay() {
        let exp = Expr::new(
            ExprKind::Intrinsic {
                op: Intrinsic::Math(MathFn::Exp),
                args: vec![f(0.1)],
            },
            Ty::F32,
        );
        assert_eq!(folded(exp), None);
        let var = Expr::new(ExprKind::Var(crate::ir::VarId(0)), Ty::F32);
        // The constant operand is still folded below the variable.
        let mut e = bin(BinOp::Mul, var, bin(BinOp::Add, f(0.1), f(0.2)));
        fold_expr(&mut e);
        let ExprKind::Binary { rhs, .. } = &e.kind else {
            panic!("folded away a variable")
        };
        assert_eq!(rhs.kind, ExprKind::Lit(Literal::F32(0.1f32 + 0.2f32)));
    }

    #[test]
    fn conversions_round_once() {
        let conv = |a: Literal, to: Ty| {
            Expr::new(
                ExprKind::Intrinsic {
                    op: Intrinsic::Convert,
                    args: vec![lit(a)],
                },
                to,
            )
        };
        // 2^24 + 1 is not a float32; 2^53 + 2^29 + 1 rounds differently through double.
        assert_eq!(
            folded(conv(Literal::I32(16_777_217), Ty::F32)),
            Some(Literal::F32(16_777_216.0))
        );
        let big = (1i64 << 53) + (1 << 29) + 1;
        assert_eq!(
            folded(conv(Literal::I64(big), Ty::F32)),
            Some(Literal::F32(big as f32))
        );
        assert_eq!(
            folded(conv(Literal::F32(-2.5e10), Ty::I32)),
            Some(Literal::I32(i32::MIN))
        );
        assert_eq!(
            folded(conv(Literal::F64(0.1), Ty::F32)),
            Some(Literal::F32(0.1))
        );
    }
}
