//! Unary and binary operators.

use std::borrow::Cow;

use super::constfold::negate;
use super::mk;
use crate::diag::{Diagnostic, Span};
use crate::front::ast::{self, BinaryOp, ExprKind as A, UnaryOp};
use crate::front::tast::{Expr, ExprKind as T, Ty};
use crate::front::typer::Checker;
use crate::front::typer::unify::{Reason, ScalarSet, UnifyError, error_ty};
use crate::intrinsics::Intrinsic;
use crate::types::{BinOp, Literal, UnOp};

impl Checker {
    #[inline(never)]
    pub(super) fn infer_unary(&mut self, e: &ast::Expr, expected: Option<&Ty>) -> Expr {
        let span = e.span;
        let A::Unary { op, operand } = &e.kind else {
            unreachable!("dispatched on the kind")
        };
        let x = self.infer(operand, expected);
        let (uop, ty) = match op {
            UnaryOp::Neg | UnaryOp::NegF => {
                let name = if *op == UnaryOp::Neg { "-" } else { "-." };
                let ok = self.require(&x, ScalarSet::NUMERIC, Reason::Operation(name.into()), span);
                (UnOp::Neg, if ok { x.ty.clone() } else { error_ty() })
            }
            UnaryOp::Not => {
                self.expect(&x, &Ty::BOOL);
                (UnOp::Not, Ty::BOOL)
            }
            UnaryOp::Lnot => {
                let ok = self.require(&x, ScalarSet::INT, Reason::Operation("lnot".into()), span);
                (UnOp::BitNot, if ok { x.ty.clone() } else { error_ty() })
            }
        };
        // Fold `-` into a literal so constants and patterns see a literal.
        if uop == UnOp::Neg
            && let T::Lit(l) = &x.kind
            && let Some(n) = negate(*l)
        {
            return mk(T::Lit(n), ty, span);
        }
        mk(
            T::Unary {
                op: uop,
                operand: Box::new(x),
            },
            ty,
            span,
        )
    }

    /// The count of an int64 shift may be an int32 (`x lsl 3`, as OCaml's `Int64.shift_left`):
    /// it is converted here, so both operands of every typed binary node share one type.
    pub(super) fn widen_shift_count(&mut self, l: &Expr, r: Expr) -> Expr {
        if self.subst.resolve(&l.ty) != Ty::I64 || self.subst.resolve(&r.ty) != Ty::I32 {
            return r;
        }
        let span = r.span;
        match r.kind {
            T::Lit(Literal::I32(n)) => mk(T::Lit(Literal::I64(n as i64)), Ty::I64, span),
            _ => mk(
                T::Intrinsic {
                    op: Intrinsic::Convert,
                    args: vec![r],
                },
                Ty::I64,
                span,
            ),
        }
    }

    pub(super) fn binary(
        &mut self,
        op: BinaryOp,
        lhs: &ast::Expr,
        rhs: &ast::Expr,
        span: Span,
    ) -> Expr {
        use BinaryOp as B;
        let sym = binary_symbol(op);
        match op {
            B::And | B::Or => {
                let l = self.check(lhs, &Ty::BOOL);
                let r = self.check(rhs, &Ty::BOOL);
                let bop = if op == B::And { BinOp::And } else { BinOp::Or };
                return mk(
                    T::Binary {
                        op: bop,
                        lhs: Box::new(l),
                        rhs: Box::new(r),
                    },
                    Ty::BOOL,
                    span,
                );
            }
            _ => {}
        }
        let l = self.infer(lhs, None);
        let mut r = self.infer(rhs, Some(&l.ty));
        if matches!(op, B::Lsl | B::Lsr | B::Asr) {
            r = self.widen_shift_count(&l, r);
        }
        if let Err(err) = self.subst.unify(&l.ty, &r.ty) {
            match err {
                UnifyError::Mismatch | UnifyError::Occurs => {
                    let (a, b) = (self.show(&l.ty), self.show(&r.ty));
                    let mut d = Diagnostic::error(
                        r.span,
                        format!("`{sym}` needs operands of the same type, found `{a}` and `{b}`"),
                    )
                    .with_label(format!("expected `{a}`, found `{b}`"))
                    .with_secondary(l.span, format!("this has type `{a}`"));
                    let (la, rb) = (self.subst.resolve(&l.ty), self.subst.resolve(&r.ty));
                    if let (Ty::Scalar(x), Ty::Scalar(y)) = (&la, &rb)
                        && x.is_numeric()
                        && y.is_numeric()
                    {
                        d = d.with_note("there are no implicit conversions between numeric types");
                        // `x +. 2` on a float `x`: the literal is what is wrong.
                        d = match r.kind {
                            T::Lit(Literal::I32(n)) if x.is_float() => d.with_help(format!(
                                "write a float literal such as `{n}.0`, or convert: `{} (...)`",
                                x.name()
                            )),
                            _ => d.with_help(format!(
                                "convert one side explicitly, e.g. `{} (...)`",
                                x.name()
                            )),
                        };
                    }
                    self.diags.push(d);
                }
                other => self.report_unify(other, r.span, &l.ty, &r.ty),
            }
            let bop = lower_binop(op);
            let ty = if bop.is_comparison() {
                Ty::BOOL
            } else {
                error_ty()
            };
            return mk(
                T::Binary {
                    op: bop,
                    lhs: Box::new(l),
                    rhs: Box::new(r),
                },
                ty,
                span,
            );
        }
        let reason = Reason::Operation(Cow::Borrowed(sym));
        let bop = lower_binop(op);
        let ty = match op {
            B::Eq | B::Ne => {
                if let Err(UnifyError::NotInSet {
                    ty,
                    set,
                    reason,
                    origin,
                }) = self
                    .subst
                    .require_scalar(&l.ty, ScalarSet::ALL, Reason::Equality, span)
                {
                    let d = self.constraint_error(l.span, &ty, set, &reason, origin);
                    self.diags.push(d);
                }
                Ty::BOOL
            }
            B::Lt | B::Le | B::Gt | B::Ge if self.subst.resolve(&l.ty) == Ty::BOOL => {
                // OCaml orders bools (`false < true`); targets compare numbers, so each
                // side becomes `if b then 1 else 0` (both still evaluated, in order).
                let as_int = |b: Expr| {
                    let sp = b.span;
                    let lit = |v| mk(T::Lit(Literal::I32(v)), Ty::I32, sp);
                    mk(
                        T::If {
                            cond: Box::new(b),
                            then_branch: Box::new(lit(1)),
                            else_branch: Some(Box::new(lit(0))),
                        },
                        Ty::I32,
                        sp,
                    )
                };
                return mk(
                    T::Binary {
                        op: bop,
                        lhs: Box::new(as_int(l)),
                        rhs: Box::new(as_int(r)),
                    },
                    Ty::BOOL,
                    span,
                );
            }
            B::Lt | B::Le | B::Gt | B::Ge => {
                self.require(&l, ScalarSet::NUMERIC, reason, span);
                Ty::BOOL
            }
            B::Land | B::Lor | B::Lxor | B::Lsl | B::Lsr | B::Asr => {
                if self.require(&l, ScalarSet::INT, reason, span) {
                    l.ty.clone()
                } else {
                    error_ty()
                }
            }
            _ => {
                if self.require(&l, ScalarSet::NUMERIC, reason, span) {
                    l.ty.clone()
                } else {
                    error_ty()
                }
            }
        };
        mk(
            T::Binary {
                op: bop,
                lhs: Box::new(l),
                rhs: Box::new(r),
            },
            ty,
            span,
        )
    }
}

pub(super) fn binary_symbol(op: BinaryOp) -> &'static str {
    use BinaryOp as B;
    match op {
        B::Add => "+",
        B::Sub => "-",
        B::Mul => "*",
        B::Div => "/",
        B::AddF => "+.",
        B::SubF => "-.",
        B::MulF => "*.",
        B::DivF => "/.",
        B::Mod => "mod",
        B::Eq => "=",
        B::Ne => "<>",
        B::Lt => "<",
        B::Le => "<=",
        B::Gt => ">",
        B::Ge => ">=",
        B::And => "&&",
        B::Or => "||",
        B::Land => "land",
        B::Lor => "lor",
        B::Lxor => "lxor",
        B::Lsl => "lsl",
        B::Lsr => "lsr",
        B::Asr => "asr",
    }
}

pub(super) fn lower_binop(op: BinaryOp) -> BinOp {
    use BinaryOp as B;
    match op {
        B::Add | B::AddF => BinOp::Add,
        B::Sub | B::SubF => BinOp::Sub,
        B::Mul | B::MulF => BinOp::Mul,
        B::Div | B::DivF => BinOp::Div,
        B::Mod => BinOp::Rem,
        B::Eq => BinOp::Eq,
        B::Ne => BinOp::Ne,
        B::Lt => BinOp::Lt,
        B::Le => BinOp::Le,
        B::Gt => BinOp::Gt,
        B::Ge => BinOp::Ge,
        B::And => BinOp::And,
        B::Or => BinOp::Or,
        B::Land => BinOp::BitAnd,
        B::Lor => BinOp::BitOr,
        B::Lxor => BinOp::BitXor,
        B::Lsl => BinOp::Shl,
        B::Lsr => BinOp::LShr,
        B::Asr => BinOp::AShr,
    }
}
