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
use super::types::payload_layout;
use super::{LResult, Lowerer, stmt};
use crate::diag::Span;
use crate::front::tast::{self, Arm, ExprKind, Pattern};
use crate::ir::{self, Block, StmtKind};
use crate::types::{BinOp, Literal, UnOp};

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
        if scrutinee.ty == tast::Ty::Unit {
            // One value, so the first arm matches (its pattern binds nothing that lowers).
            self.lower_into(scrutinee, Dest::Discard, out)?;
            return match arms.first() {
                Some(arm) => self.lower_into(&arm.body, dest, out),
                None => Ok(()),
            };
        }
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
            let layout = payload_layout(cdef);
            for (k, (arg_ty, l)) in cdef.args.iter().zip(&layout).enumerate() {
                let used = candidates.iter().any(|r| match &r.0 {
                    Pattern::Ctor { args, .. } => {
                        !matches!(args.get(k), Some(Pattern::Wildcard) | None)
                    }
                    _ => false,
                });
                if !used {
                    // Never read: placeholders keep field positions aligned.
                    let n = l.tuple.as_ref().map_or(1, Vec::len);
                    bindings.extend(std::iter::repeat_n(None, n));
                    payloads.push(self.payload(scrutinee, vid, c, k, span)?);
                    continue;
                }
                let direct = match (&candidates[0].0, single, &l.tuple) {
                    (Pattern::Ctor { args, .. }, true, None) => match args.get(k) {
                        Some(Pattern::Bind(d)) => Some(d),
                        _ => None,
                    },
                    _ => None,
                };
                if let Some(d) = direct {
                    bound_directly[k] = true;
                    let var = self.bind_var(d)?;
                    bindings.push(Some(var));
                    let ty = self.vars[var.0 as usize].ty.clone();
                    let e = ir::Expr::new(ir::ExprKind::Var(var), ty);
                    payloads.push(MVal::Expr(e, arg_ty.clone()));
                    continue;
                }
                // One variable per IR field, named like the field (`Rect_1`).
                let parts: Vec<tast::Ty> = match &l.tuple {
                    Some(cs) => cs.clone(),
                    None => vec![arg_ty.clone()],
                };
                let mut vals = Vec::new();
                for (j, part) in parts.iter().enumerate() {
                    let ty = self.ty(part, span)?;
                    let name = format!("{}_{}", cdef.name, l.first as usize + j);
                    let var = self.new_var(&name, ty.clone(), false, span);
                    bindings.push(Some(var));
                    vals.push(MVal::Expr(
                        ir::Expr::new(ir::ExprKind::Var(var), ty),
                        part.clone(),
                    ));
                }
                payloads.push(match l.tuple {
                    Some(_) => MVal::Tuple(vals),
                    None => vals.remove(0),
                });
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
                Some(match l {
                    // `b = true` is `b`; `b = false` is `not b`.
                    Literal::Bool(true) => e.clone(),
                    Literal::Bool(false) => ir::Expr::new(
                        ir::ExprKind::Unary {
                            op: UnOp::Not,
                            operand: Box::new(e.clone()),
                        },
                        ir::Ty::BOOL,
                    ),
                    _ => binary(BinOp::Eq, e.clone(), ir::Expr::lit(*l)),
                })
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
                // Or-patterns are expanded before matching; kept total for safety.
                let mut acc: Option<ir::Expr> = None;
                for alt in alts {
                    let Some(t) = self.test(alt, m, span)? else {
                        return Ok(None);
                    };
                    acc = Some(match acc {
                        Some(a) => binary(BinOp::Or, a, t),
                        None => t,
                    });
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

    /// Argument `k` of constructor `ctor` of the variant value `e` (a scalar-tuple argument
    /// is its flattened fields).
    fn payload(
        &mut self,
        e: &ir::Expr,
        variant: tast::VariantId,
        ctor: u32,
        k: usize,
        span: Span,
    ) -> LResult<MVal> {
        let program = self.program;
        let Some(def) = program
            .variants
            .get(variant.0 as usize)
            .and_then(|v| v.ctors.get(ctor as usize))
        else {
            return self.internal(span, "unknown constructor");
        };
        let (Some(aty), Some(l)) = (def.args.get(k), payload_layout(def).into_iter().nth(k)) else {
            return self.internal(span, "constructor pattern arity");
        };
        let field = |s: &mut Self, j: u32, t: &tast::Ty| -> LResult<MVal> {
            let ty = s.ty(t, span)?;
            let value = ir::ExprKind::Payload {
                value: Box::new(e.clone()),
                ctor,
                field: l.first + j,
            };
            Ok(MVal::Expr(ir::Expr::new(value, ty), t.clone()))
        };
        match &l.tuple {
            None => field(self, 0, aty),
            Some(cs) => {
                let mut parts = Vec::new();
                for (j, c) in cs.iter().enumerate() {
                    parts.push(field(self, j as u32, c)?);
                }
                Ok(MVal::Tuple(parts))
            }
        }
    }
}

fn binary(op: BinOp, lhs: ir::Expr, rhs: ir::Expr) -> ir::Expr {
    ir::Expr::new(
        ir::ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
            nowrap: false,
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
