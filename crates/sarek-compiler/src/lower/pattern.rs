//! Pattern matching: `match`, destructuring `let`s.
//!
//! Or-patterns are first expanded into one row per alternative (the arm body is lowered once
//! per row; every binder gets fresh IR variables each time). A match on a variant becomes one
//! `StmtKind::Match`: each constructor gets an arm whose payload fields are bound to variables,
//! and the rows that can match that constructor are tried in order by an if-chain over their
//! remaining (nested, literal, tuple) sub-patterns; constructors only catch-all rows reach
//! share the default arm. Any other scrutinee (int, bool, tuple) is an if-chain on a value
//! evaluated once. The last candidate row of a chain needs no test: the typer checked
//! exhaustiveness, so if every earlier row failed, it matches.

use super::expr::Dest;
use super::{LResult, Lowerer, stmt};
use crate::diag::Span;
use crate::front::tast::{self, Arm, ExprKind, Pattern};
use crate::ir::{self, Block, StmtKind};
use crate::types::BinOp;

/// A matched value: an IR expression that is cheap and stable to re-read (a variable or a
/// projection of one), or the components of a tuple that was never built.
#[derive(Clone, Debug)]
pub(super) enum MVal {
    Expr(ir::Expr, tast::Ty),
    Tuple(Vec<MVal>),
}

impl MVal {
    fn ty(&self) -> tast::Ty {
        match self {
            MVal::Expr(_, t) => t.clone(),
            MVal::Tuple(items) => tast::Ty::Tuple(items.iter().map(MVal::ty).collect()),
        }
    }
}

/// One candidate of an if-chain: a pattern tried against a value, and the arm it selects.
struct Row<'a> {
    pattern: Pattern,
    value: MVal,
    arm: &'a Arm,
}

impl Lowerer<'_> {
    /// Evaluate a scrutinee once; a tuple literal keeps its components apart.
    pub(super) fn scrutinee(&mut self, e: &tast::Expr, out: &mut Block) -> LResult<MVal> {
        if let ExprKind::Tuple(items) = &e.kind {
            let vals = self.operands(items.iter(), out)?;
            let mut comps = Vec::new();
            for (v, item) in vals.into_iter().zip(items) {
                let v = if self.is_stable(&v) {
                    v
                } else {
                    self.spill(v, "scrutinee", item.span, out)
                };
                comps.push(MVal::Expr(v, item.ty.clone()));
            }
            return Ok(MVal::Tuple(comps));
        }
        let v = self.value(e, out)?;
        let v = if self.is_stable(&v) {
            v
        } else {
            self.spill(v, "scrutinee", e.span, out)
        };
        Ok(MVal::Expr(v, e.ty.clone()))
    }

    pub(super) fn lower_match(
        &mut self,
        scrutinee: &tast::Expr,
        arms: &[Arm],
        dest: Dest,
        span: Span,
        out: &mut Block,
    ) -> LResult<()> {
        let m = self.scrutinee(scrutinee, out)?;
        let rows: Vec<(Pattern, &Arm)> = arms
            .iter()
            .flat_map(|arm| expand_or(&arm.pattern).into_iter().map(move |p| (p, arm)))
            .collect();
        if let MVal::Expr(e, tast::Ty::Variant(vid)) = &m {
            return self.variant_match(e, *vid, &rows, dest, span, out);
        }
        let rows = rows
            .into_iter()
            .map(|(pattern, arm)| Row {
                pattern,
                value: m.clone(),
                arm,
            })
            .collect::<Vec<_>>();
        self.chain(&rows, dest, out)
    }

    fn variant_match(
        &mut self,
        scrutinee: &ir::Expr,
        vid: tast::VariantId,
        rows: &[(Pattern, &Arm)],
        dest: Dest,
        span: Span,
        out: &mut Block,
    ) -> LResult<()> {
        let program = self.program;
        let Some(def) = program.variants.get(vid.0 as usize) else {
            return self.internal(span, format!("unknown variant {vid:?}"));
        };
        let ir::Ty::Variant(ir_vid) = scrutinee.ty else {
            return self.internal(span, "variant scrutinee of a non-variant IR type");
        };
        let head = |p: &Pattern| match p {
            Pattern::Ctor { ctor, .. } => Some(*ctor),
            _ => None,
        };
        let mut ir_arms = Vec::new();
        let mut default_needed = false;
        for (c, cdef) in def.ctors.iter().enumerate() {
            let c = c as u32;
            let mut candidates: Vec<&(Pattern, &Arm)> = Vec::new();
            for row in rows {
                match &row.0 {
                    Pattern::Ctor { ctor, args, .. } if *ctor == c => {
                        candidates.push(row);
                        if args.iter().all(irrefutable) {
                            break;
                        }
                    }
                    Pattern::Ctor { .. } => {}
                    _ => {
                        candidates.push(row);
                        break;
                    }
                }
            }
            if candidates.is_empty() {
                continue;
            }
            if candidates.iter().all(|r| head(&r.0).is_none()) {
                default_needed = true;
                continue;
            }
            let single = candidates.len() == 1;
            let mut bindings = Vec::new();
            let mut payloads = Vec::new();
            let mut bound_directly = vec![false; cdef.args.len()];
            for (k, arg_ty) in cdef.args.iter().enumerate() {
                let used = candidates.iter().any(|r| match &r.0 {
                    Pattern::Ctor { args, .. } => {
                        !matches!(args.get(k), Some(Pattern::Wildcard) | None)
                    }
                    _ => false,
                });
                if !used {
                    bindings.push(None);
                    // Never read: a placeholder keeps field positions aligned.
                    let ty = self.ty(arg_ty, span)?;
                    payloads.push(MVal::Expr(
                        ir::Expr::new(
                            ir::ExprKind::Payload {
                                value: Box::new(scrutinee.clone()),
                                ctor: c,
                                field: k as u32,
                            },
                            ty,
                        ),
                        arg_ty.clone(),
                    ));
                    continue;
                }
                let direct = match (&candidates[0].0, single) {
                    (Pattern::Ctor { args, .. }, true) => match args.get(k) {
                        Some(Pattern::Bind(d)) => Some(d),
                        _ => None,
                    },
                    _ => None,
                };
                let var = match direct {
                    Some(d) => {
                        bound_directly[k] = true;
                        self.bind_var(d)?
                    }
                    None => {
                        let ty = self.ty(arg_ty, span)?;
                        self.new_var(&format!("{}_{k}", cdef.name), ty, false, span)
                    }
                };
                bindings.push(Some(var));
                let ty = self.vars[var.0 as usize].ty.clone();
                payloads.push(MVal::Expr(
                    ir::Expr::new(ir::ExprKind::Var(var), ty),
                    arg_ty.clone(),
                ));
            }
            let chain_rows: Vec<Row> = candidates
                .iter()
                .map(|(p, arm)| match p {
                    Pattern::Ctor { args, .. } => {
                        let args = args
                            .iter()
                            .enumerate()
                            .map(|(k, a)| {
                                if bound_directly.get(k) == Some(&true) {
                                    Pattern::Wildcard
                                } else {
                                    a.clone()
                                }
                            })
                            .collect();
                        Row {
                            pattern: Pattern::Tuple(args),
                            value: MVal::Tuple(payloads.clone()),
                            arm,
                        }
                    }
                    _ => Row {
                        pattern: p.clone(),
                        value: MVal::Expr(scrutinee.clone(), tast::Ty::Variant(vid)),
                        arm,
                    },
                })
                .collect();
            let mut body = Vec::new();
            self.chain(&chain_rows, dest, &mut body)?;
            ir_arms.push(ir::MatchArm {
                ctor: Some(c),
                bindings,
                body,
            });
        }
        if default_needed {
            // Every constructor sent here sees the same first catch-all row.
            if let Some((p, arm)) = rows.iter().find(|r| head(&r.0).is_none()) {
                let row = Row {
                    pattern: p.clone(),
                    value: MVal::Expr(scrutinee.clone(), tast::Ty::Variant(vid)),
                    arm,
                };
                let mut body = Vec::new();
                self.chain(std::slice::from_ref(&row), dest, &mut body)?;
                ir_arms.push(ir::MatchArm {
                    ctor: None,
                    bindings: Vec::new(),
                    body,
                });
            }
        }
        out.push(stmt(
            StmtKind::Match {
                scrutinee: scrutinee.clone(),
                variant: ir_vid,
                arms: ir_arms,
            },
            span,
        ));
        Ok(())
    }

    /// Try rows in order; the first whose test holds binds its variables and runs its body.
    fn chain(&mut self, rows: &[Row], dest: Dest, out: &mut Block) -> LResult<()> {
        let Some((row, rest)) = rows.split_first() else {
            return Ok(());
        };
        let test = if rest.is_empty() {
            None
        } else {
            self.test(&row.pattern, &row.value, row.arm.span)?
        };
        match test {
            None => {
                self.bind_pattern(&row.pattern, &row.value, row.arm.span, out)?;
                self.lower_into(&row.arm.body, dest, out)
            }
            Some(cond) => {
                let mut then_block = Vec::new();
                self.bind_pattern(&row.pattern, &row.value, row.arm.span, &mut then_block)?;
                self.lower_into(&row.arm.body, dest, &mut then_block)?;
                let mut else_block = Vec::new();
                self.chain(rest, dest, &mut else_block)?;
                out.push(stmt(
                    StmtKind::If {
                        cond,
                        then_block,
                        else_block,
                    },
                    row.arm.span,
                ));
                Ok(())
            }
        }
    }

    /// The condition under which `p` matches `m` (`None`: always).
    fn test(&mut self, p: &Pattern, m: &MVal, span: Span) -> LResult<Option<ir::Expr>> {
        Ok(match p {
            Pattern::Wildcard | Pattern::Bind(_) => None,
            Pattern::Lit(l) => {
                let MVal::Expr(e, _) = m else {
                    return self.internal(span, "literal pattern against a tuple");
                };
                Some(binary(BinOp::Eq, e.clone(), ir::Expr::lit(*l)))
            }
            Pattern::Tuple(ps) => {
                let mut acc = None;
                for (k, sub) in ps.iter().enumerate() {
                    let c = self.component(m, k, span)?;
                    acc = and(acc, self.test(sub, &c, span)?);
                }
                acc
            }
            Pattern::Ctor {
                variant,
                ctor,
                args,
            } => {
                let MVal::Expr(e, _) = m else {
                    return self.internal(span, "constructor pattern against a tuple");
                };
                let program = self.program;
                let n_ctors = program
                    .variants
                    .get(variant.0 as usize)
                    .map_or(0, |v| v.ctors.len());
                let mut acc = (n_ctors > 1).then(|| {
                    let tag = ir::Expr::new(ir::ExprKind::Tag(Box::new(e.clone())), ir::Ty::I32);
                    binary(BinOp::Eq, tag, ir::Expr::i32(*ctor as i32))
                });
                for (k, sub) in args.iter().enumerate() {
                    let pv = self.payload(e, *variant, *ctor, k, span)?;
                    // `&&` short-circuits: a payload is only read once its tag matched.
                    acc = and(acc, self.test(sub, &pv, span)?);
                }
                acc
            }
            Pattern::Or(alts) => {
                let mut acc: Option<ir::Expr> = None;
                for (i, alt) in alts.iter().enumerate() {
                    match self.test(alt, m, span)? {
                        None => return Ok(None),
                        Some(t) => {
                            acc = Some(if i == 0 {
                                t
                            } else {
                                binary(BinOp::Or, acc.take().unwrap_or(t.clone()), t)
                            })
                        }
                    }
                }
                acc
            }
        })
    }

    /// Bind the variables of `p` (already known to match) from `m`.
    pub(super) fn bind_pattern(
        &mut self,
        p: &Pattern,
        m: &MVal,
        span: Span,
        out: &mut Block,
    ) -> LResult<()> {
        match p {
            Pattern::Wildcard | Pattern::Lit(_) => Ok(()),
            Pattern::Bind(decl) => {
                let value = self.materialize(m, decl.span)?;
                let v = self.bind_var(decl)?;
                out.push(stmt(
                    StmtKind::Let {
                        var: v,
                        init: Some(value),
                    },
                    decl.span,
                ));
                Ok(())
            }
            Pattern::Tuple(ps) => {
                for (k, sub) in ps.iter().enumerate() {
                    let c = self.component(m, k, span)?;
                    self.bind_pattern(sub, &c, span, out)?;
                }
                Ok(())
            }
            Pattern::Ctor {
                variant,
                ctor,
                args,
            } => {
                let MVal::Expr(e, _) = m else {
                    return self.internal(span, "constructor pattern against a tuple");
                };
                for (k, sub) in args.iter().enumerate() {
                    let pv = self.payload(e, *variant, *ctor, k, span)?;
                    self.bind_pattern(sub, &pv, span, out)?;
                }
                Ok(())
            }
            Pattern::Or(_) => self.internal(span, "or-pattern left after expansion"),
        }
    }

    /// The IR value of a matched value (a tuple's components are assembled into its record).
    fn materialize(&mut self, m: &MVal, span: Span) -> LResult<ir::Expr> {
        match m {
            MVal::Expr(e, _) => Ok(e.clone()),
            MVal::Tuple(items) => {
                let ty = self.ty(&m.ty(), span)?;
                let ir::Ty::Record(rid) = ty else {
                    return self.internal(span, "tuple without a record");
                };
                let mut fields = Vec::new();
                for i in items {
                    fields.push(self.materialize(i, span)?);
                }
                Ok(ir::Expr::new(
                    ir::ExprKind::Record {
                        record: rid,
                        fields,
                    },
                    ty,
                ))
            }
        }
    }

    fn component(&mut self, m: &MVal, k: usize, span: Span) -> LResult<MVal> {
        match m {
            MVal::Tuple(items) => match items.get(k) {
                Some(i) => Ok(i.clone()),
                None => self.internal(span, "tuple pattern arity"),
            },
            MVal::Expr(e, tast::Ty::Tuple(cs)) => {
                let Some(cty) = cs.get(k) else {
                    return self.internal(span, "tuple pattern arity");
                };
                let ty = self.ty(cty, span)?;
                let field = ir::Expr::new(
                    ir::ExprKind::Field {
                        base: Box::new(e.clone()),
                        field: k as u32,
                    },
                    ty,
                );
                Ok(MVal::Expr(field, cty.clone()))
            }
            MVal::Expr(..) => self.internal(span, "tuple pattern against a non-tuple"),
        }
    }

    fn payload(
        &mut self,
        e: &ir::Expr,
        variant: tast::VariantId,
        ctor: u32,
        k: usize,
        span: Span,
    ) -> LResult<MVal> {
        let program = self.program;
        let Some(aty) = program
            .variants
            .get(variant.0 as usize)
            .and_then(|v| v.ctors.get(ctor as usize))
            .and_then(|c| c.args.get(k))
        else {
            return self.internal(span, "constructor pattern arity");
        };
        let ty = self.ty(aty, span)?;
        let value = ir::Expr::new(
            ir::ExprKind::Payload {
                value: Box::new(e.clone()),
                ctor,
                field: k as u32,
            },
            ty,
        );
        Ok(MVal::Expr(value, aty.clone()))
    }
}

fn binary(op: BinOp, lhs: ir::Expr, rhs: ir::Expr) -> ir::Expr {
    ir::Expr::new(
        ir::ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        },
        ir::Ty::BOOL,
    )
}

fn and(a: Option<ir::Expr>, b: Option<ir::Expr>) -> Option<ir::Expr> {
    match (a, b) {
        (Some(a), Some(b)) => Some(binary(BinOp::And, a, b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Matches every value of its type.
fn irrefutable(p: &Pattern) -> bool {
    match p {
        Pattern::Wildcard | Pattern::Bind(_) => true,
        Pattern::Tuple(ps) => ps.iter().all(irrefutable),
        Pattern::Or(ps) => ps.iter().any(irrefutable),
        Pattern::Lit(_) | Pattern::Ctor { .. } => false,
    }
}

/// Distribute or-patterns to the top: one or-free pattern per alternative, in order.
pub(super) fn expand_or(p: &Pattern) -> Vec<Pattern> {
    match p {
        Pattern::Or(alts) => alts.iter().flat_map(expand_or).collect(),
        Pattern::Tuple(ps) => product(ps).into_iter().map(Pattern::Tuple).collect(),
        Pattern::Ctor {
            variant,
            ctor,
            args,
        } => product(args)
            .into_iter()
            .map(|args| Pattern::Ctor {
                variant: *variant,
                ctor: *ctor,
                args,
            })
            .collect(),
        _ => vec![p.clone()],
    }
}

fn product(ps: &[Pattern]) -> Vec<Vec<Pattern>> {
    let mut acc: Vec<Vec<Pattern>> = vec![Vec::new()];
    for p in ps {
        let alts = expand_or(p);
        acc = acc
            .into_iter()
            .flat_map(|prefix| {
                alts.iter().map(move |a| {
                    let mut v = prefix.clone();
                    v.push(a.clone());
                    v
                })
            })
            .collect();
    }
    acc
}
