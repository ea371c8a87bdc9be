//! Upstream Sarek's early return, `return_unit ()`, in the one form that has a meaning
//! without an exit from the middle of a kernel: a guard in the kernel's own statement
//! sequence.
//!
//! `s1; if c then (e; return_unit ()); rest` becomes `s1; if c then e else rest` (an `else`
//! arm of the guard joins `rest` in front). The rest then sits under `not c`, so what the
//! convergence check says about it holds: a barrier after a thread-dependent guard is
//! refused, after a uniform one (`if n = 0 then return_unit ()`) accepted. Only the spine
//! of the body is rewritten (`let` bodies, the rest after a superstep, sequence items):
//! a return inside a loop, a branch or a helper would leave more than the statements after
//! it, so it stays as written and the typer refuses it, located.

use crate::front::ast::{Expr, ExprKind as A, Lit};

/// The kernel body with its guards rewritten, or `None` when it has none.
pub(super) fn rewrite_guards(body: &Expr) -> Option<Expr> {
    let kind = match &body.kind {
        A::Let {
            pattern,
            mutable,
            ty,
            value,
            body: rest,
        } => A::Let {
            pattern: pattern.clone(),
            mutable: *mutable,
            ty: ty.clone(),
            value: value.clone(),
            body: Box::new(rewrite_guards(rest)?),
        },
        // The program's own `return_unit` is a helper like any other.
        A::LetFun { decl, .. } if decl.name.name == "return_unit" => return None,
        A::LetFun { decl, body: rest } => A::LetFun {
            decl: decl.clone(),
            body: Box::new(rewrite_guards(rest)?),
        },
        A::LetShared {
            name,
            elem,
            size,
            body: rest,
        } => A::LetShared {
            name: name.clone(),
            elem: elem.clone(),
            size: size.clone(),
            body: Box::new(rewrite_guards(rest)?),
        },
        A::LetSuperstep {
            name,
            divergent,
            step,
            rest,
        } => A::LetSuperstep {
            name: name.clone(),
            divergent: *divergent,
            step: step.clone(),
            rest: Box::new(rewrite_guards(rest)?),
        },
        A::LetOpen { module, body: rest } => A::LetOpen {
            module: module.clone(),
            body: Box::new(rewrite_guards(rest)?),
        },
        A::Seq(items) => return rewrite_sequence(items, body),
        _ => {
            return guard_parts(body)
                .map(|(cond, then, other)| guarded(body, cond, then, other, None));
        }
    };
    Some(Expr {
        kind,
        span: body.span,
    })
}

fn rewrite_sequence(items: &[Expr], whole: &Expr) -> Option<Expr> {
    for (k, item) in items.iter().enumerate() {
        if let Some((cond, then, other)) = guard_parts(item) {
            let rest = &items[k + 1..];
            let rest = (!rest.is_empty()).then(|| {
                let span = rest[0].span.to(rest[rest.len() - 1].span);
                let seq = Expr {
                    kind: A::Seq(rest.to_vec()),
                    span,
                };
                rewrite_guards(&seq).unwrap_or(seq)
            });
            let mut out = items[..k].to_vec();
            out.push(guarded(item, cond, then, other, rest));
            return Some(Expr {
                kind: A::Seq(out),
                span: whole.span,
            });
        }
        // A `let` inside a sequence item owns the statements after it in its body.
        if k + 1 == items.len()
            && let Some(last) = rewrite_guards(item)
        {
            let mut out = items[..k].to_vec();
            out.push(last);
            return Some(Expr {
                kind: A::Seq(out),
                span: whole.span,
            });
        }
    }
    None
}

/// `if c then (e; return_unit ()) [else o]`: the condition, what runs before the return
/// (None: nothing) and the `else` arm.
fn guard_parts(e: &Expr) -> Option<(&Expr, Option<Expr>, Option<&Expr>)> {
    let A::If {
        cond,
        then_branch,
        else_branch,
    } = &e.kind
    else {
        return None;
    };
    let before = match &then_branch.kind {
        _ if is_return(then_branch) => None,
        A::Seq(items) if items.last().is_some_and(is_return) => {
            let before = &items[..items.len() - 1];
            let span = before.first()?.span.to(before[before.len() - 1].span);
            Some(Expr {
                kind: A::Seq(before.to_vec()),
                span,
            })
        }
        _ => return None,
    };
    Some((cond, before, else_branch.as_deref()))
}

/// `return_unit ()`, also as `Std.return_unit ()` / `Gpu.` / `Sarek.`.
pub(super) fn is_return(e: &Expr) -> bool {
    let A::App { func, args } = &e.kind else {
        return false;
    };
    let A::Var { path, name } = &func.kind else {
        return false;
    };
    name.name == "return_unit"
        && path.len() <= 1
        && path
            .iter()
            .all(|m| matches!(m.name.as_str(), "Std" | "Gpu" | "Sarek"))
        && matches!(args.as_slice(), [a] if a.kind == A::Lit(Lit::Unit))
}

/// `if c then before else (other; rest)`.
fn guarded(
    guard: &Expr,
    cond: &Expr,
    before: Option<Expr>,
    other: Option<&Expr>,
    rest: Option<Expr>,
) -> Expr {
    let unit = || Expr {
        kind: A::Lit(Lit::Unit),
        span: guard.span,
    };
    let otherwise = match (other, rest) {
        (None, None) => None,
        (Some(o), None) => Some(o.clone()),
        (None, Some(r)) => Some(r),
        (Some(o), Some(r)) => Some(Expr {
            span: o.span.to(r.span),
            kind: A::Seq(vec![o.clone(), r]),
        }),
    };
    Expr {
        kind: A::If {
            cond: Box::new(cond.clone()),
            then_branch: Box::new(before.unwrap_or_else(unit)),
            else_branch: otherwise.map(Box::new),
        },
        span: guard.span,
    }
}
