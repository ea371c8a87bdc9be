//! `spoc_powint b e` (and `Math.pow` on int32): upstream Sarek's integer power, expanded into
//! ordinary Sarek so that every target computes it the same way.
//!
//! Upstream emits `(int)pow((double)b, (double)e)`; on the values where that is exact it is
//! the wrapping product `b * b * ... * b`, which is what its OCaml implementation computes.
//! Here: for `e >= 0` that wrapping product, by repeated squaring (at most 31 steps, so no
//! thread loops for long); for `e < 0` the truncated real power, as the C cast gives: 1 for
//! `b = 1`, +-1 for `b = -1`, 0 for `|b| > 1`, and `int32(+inf)` = max_int for `b = 0`
//! (the saturating conversion every target follows).

use crate::diag::Span;
use crate::front::ast::{self, BinaryOp as B, Expr, ExprKind as A, Lit, Pattern, UnaryOp};

/// The expression computing `base ** exp` on int32. The names it binds start with `%`,
/// which source text cannot spell, so they shadow nothing of the user's.
pub(super) fn expand(base: &Expr, exp: &Expr, span: Span) -> Expr {
    let at = |kind| Expr { kind, span };
    let var = |name: &str| {
        at(A::Var {
            path: Vec::new(),
            name: ast::Ident {
                name: name.into(),
                span,
            },
        })
    };
    let int = |v: i128| at(A::Lit(Lit::Int(v)));
    let bin = |op, l: Expr, r: Expr| {
        at(A::Binary {
            op,
            lhs: Box::new(l),
            rhs: Box::new(r),
        })
    };
    let cond = |c: Expr, t: Expr, e: Option<Expr>| {
        at(A::If {
            cond: Box::new(c),
            then_branch: Box::new(t),
            else_branch: e.map(Box::new),
        })
    };
    let assign = |name: &str, value: Expr| {
        at(A::Assign {
            target: ast::Ident {
                name: name.into(),
                span,
            },
            value: Box::new(value),
        })
    };
    let int32 = || ast::TypeExpr {
        kind: ast::TypeExprKind::Named(ast::Ident {
            name: "int32".into(),
            span,
        }),
        span,
    };
    let bind = |name: &str, mutable: bool, ty: Option<ast::TypeExpr>, value: Expr, body: Expr| {
        at(A::Let {
            pattern: Box::new(Pattern::Var(ast::Ident {
                name: name.into(),
                span,
            })),
            mutable,
            ty: ty.map(Box::new),
            value: Box::new(value),
            body: Box::new(body),
        })
    };
    let (b, e, r, x, k) = ("%pow_base", "%pow_exp", "%pow_acc", "%pow_sq", "%pow_k");
    let odd = |v: &str| bin(B::Eq, bin(B::Land, var(v), int(1)), int(1));

    // e < 0: the truncated value of b ** e.
    let negative = cond(
        bin(B::Eq, var(b), int(1)),
        int(1),
        Some(cond(
            bin(
                B::Eq,
                var(b),
                at(A::Unary {
                    op: UnaryOp::Neg,
                    operand: Box::new(int(1)),
                }),
            ),
            cond(
                odd(e),
                at(A::Unary {
                    op: UnaryOp::Neg,
                    operand: Box::new(int(1)),
                }),
                Some(int(1)),
            ),
            Some(cond(
                bin(B::Eq, var(b), int(0)),
                int(i32::MAX.into()),
                Some(int(0)),
            )),
        )),
    );
    // e >= 0: square and multiply, wrapping like the repeated product.
    let step = at(A::Seq(vec![
        cond(odd(k), assign(r, bin(B::Mul, var(r), var(x))), None),
        assign(x, bin(B::Mul, var(x), var(x))),
        assign(k, bin(B::Asr, var(k), int(1))),
    ]));
    let squaring = at(A::Seq(vec![
        at(A::While {
            cond: Box::new(bin(B::Gt, var(k), int(0))),
            body: Box::new(step),
            attrs: Vec::new(),
        }),
        var(r),
    ]));
    let non_negative = bind(
        r,
        true,
        None,
        int(1),
        bind(x, true, None, var(b), bind(k, true, None, var(e), squaring)),
    );
    bind(
        b,
        false,
        Some(int32()),
        base.clone(),
        bind(
            e,
            false,
            Some(int32()),
            exp.clone(),
            cond(bin(B::Lt, var(e), int(0)), negative, Some(non_negative)),
        ),
    )
}
