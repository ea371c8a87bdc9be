//! Expressions and statements.
//!
//! [`Lowerer::lower_into`] lowers an expression whose value goes to a [`Dest`] (discarded,
//! assigned to a variable, returned); control flow pushes the destination into its branches so
//! a value-position `if`/`match` writes its result where it is needed. [`Lowerer::lower_value`]
//! returns a pure IR expression after pushing whatever statements compute it (`None` for
//! unit). Operands are evaluated left to right: when a later operand needs statements, the
//! earlier operands that are not stable (a literal or an immutable variable) are spilled to
//! temporaries first, so hoisting never reorders effects.

use super::{LResult, Lowerer, stmt};
use crate::diag::{Diagnostic, Span};
use crate::front::tast::{self, ExprKind};
use crate::intrinsics::Intrinsic;
use crate::ir::{self, Block, LValue, StmtKind};
use crate::types::{BinOp, Literal};

/// Where the value of a lowered expression goes.
#[derive(Clone, Copy, Debug)]
pub(super) enum Dest {
    Discard,
    Assign(ir::VarId),
    Return,
}

impl Lowerer<'_> {
    /// Lower `e`, delivering its value to `dest`.
    pub(super) fn lower_into(
        &mut self,
        e: &tast::Expr,
        dest: Dest,
        out: &mut Block,
    ) -> LResult<()> {
        match &e.kind {
            ExprKind::Let {
                pattern,
                value,
                body,
            } => {
                self.bind_let(pattern, value, e.span, out)?;
                self.lower_into(body, dest, out)
            }
            ExprKind::Seq(items) => {
                let Some((last, init)) = items.split_last() else {
                    return self.finish(dest, None, e.span, out);
                };
                for item in init {
                    self.discard_scoped(item, out)?;
                }
                self.lower_into(last, dest, out)
            }
            ExprKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let c = self.value(cond, out)?;
                let mut then_block = Vec::new();
                self.lower_into(then_branch, dest, &mut then_block)?;
                let mut else_block = Vec::new();
                match else_branch {
                    Some(b) => self.lower_into(b, dest, &mut else_block)?,
                    None => self.finish(dest, None, e.span, &mut else_block)?,
                }
                out.push(stmt(
                    StmtKind::If {
                        cond: c,
                        then_block,
                        else_block,
                    },
                    e.span,
                ));
                Ok(())
            }
            ExprKind::Match { scrutinee, arms } => {
                self.lower_match(scrutinee, arms, dest, e.span, out)
            }
            ExprKind::LetShared { var, body } | ExprKind::LetLocalArray { var, body } => {
                let v = self.bind_var(var)?;
                out.push(stmt(StmtKind::Array { var: v }, var.span));
                self.lower_into(body, dest, out)
            }
            ExprKind::Superstep { step, rest, .. } => {
                let mut block = Vec::new();
                self.lower_into(step, Dest::Discard, &mut block)?;
                out.push(stmt(StmtKind::Block(block), step.span));
                out.push(stmt(StmtKind::Barrier, superstep_header(e)));
                self.lower_into(rest, dest, out)
            }
            _ => {
                let v = self.lower_value(e, out)?;
                self.finish(dest, v, e.span, out)
            }
        }
    }

    /// A sequence item whose value is dropped. A `let` there ends with the item, so its
    /// statements get their own block: the binder's scope in the IR is the source's, and two
    /// items binding the same name need no renaming.
    fn discard_scoped(&mut self, item: &tast::Expr, out: &mut Block) -> LResult<()> {
        if !matches!(item.kind, ExprKind::Let { .. }) {
            return self.lower_into(item, Dest::Discard, out);
        }
        let mut block = Vec::new();
        self.lower_into(item, Dest::Discard, &mut block)?;
        if !block.is_empty() {
            out.push(stmt(StmtKind::Block(block), item.span));
        }
        Ok(())
    }

    /// Deliver a computed value to its destination.
    fn finish(
        &mut self,
        dest: Dest,
        value: Option<ir::Expr>,
        span: Span,
        out: &mut Block,
    ) -> LResult<()> {
        match (dest, value) {
            (Dest::Discard, Some(v)) => {
                // A discarded value is kept only for what it does (a call, an atomic) or may
                // do (an out-of-bounds read faults on the interpreter).
                if !is_inert(&v) {
                    out.push(stmt(StmtKind::Expr(v), span));
                }
            }
            (Dest::Discard, None) => {}
            (Dest::Assign(var), Some(v)) => out.push(stmt(
                StmtKind::Assign {
                    place: LValue::Var(var),
                    value: v,
                },
                span,
            )),
            (Dest::Assign(_), None) => {
                return self.internal(span, "unit value assigned to a variable");
            }
            (Dest::Return, v) => out.push(stmt(StmtKind::Return(v), span)),
        }
        Ok(())
    }

    /// Lower a value that must exist (not unit).
    pub(super) fn value(&mut self, e: &tast::Expr, out: &mut Block) -> LResult<ir::Expr> {
        match self.lower_value(e, out)? {
            Some(v) => Ok(v),
            None => self.internal(e.span, "expected a value, found unit"),
        }
    }

    /// Lower `e` to a pure IR expression, pushing the statements that compute it.
    pub(super) fn lower_value(
        &mut self,
        e: &tast::Expr,
        out: &mut Block,
    ) -> LResult<Option<ir::Expr>> {
        let span = e.span;
        if let ExprKind::Trap { message, fallback } = &e.kind {
            // Inlining copies a residual call many times: the copies share one code.
            let next = self.traps.len() as u32 + 1;
            let code = *self.traps.entry((span, message.clone())).or_insert(next);
            let trap = ir::Trap {
                code,
                message: message.clone(),
            };
            out.push(stmt(StmtKind::Trap(trap), span));
            return self.lower_value(fallback, out);
        }
        if e.ty == tast::Ty::Unit {
            // Unit expressions only have effects.
            return match &e.kind {
                ExprKind::Unit | ExprKind::Lit(_) | ExprKind::Var(_) => Ok(None),
                ExprKind::Let { .. }
                | ExprKind::Seq(_)
                | ExprKind::If { .. }
                | ExprKind::Match { .. }
                | ExprKind::LetShared { .. }
                | ExprKind::LetLocalArray { .. }
                | ExprKind::Superstep { .. } => {
                    self.lower_into(e, Dest::Discard, out).map(|()| None)
                }
                _ => self.lower_effect(e, out).map(|()| None),
            };
        }
        let ty = self.ty(&e.ty, span)?;
        let v = match &e.kind {
            ExprKind::Unit => return Ok(None),
            ExprKind::Lit(l) => ir::Expr::lit(*l),
            ExprKind::Var(id) => ir::Expr::new(ir::ExprKind::Var(self.lookup(*id, span)?), ty),
            ExprKind::Let {
                pattern,
                value,
                body,
            } => {
                self.bind_let(pattern, value, span, out)?;
                return self.lower_value(body, out);
            }
            ExprKind::Seq(items) => {
                let Some((last, init)) = items.split_last() else {
                    return Ok(None);
                };
                for item in init {
                    self.discard_scoped(item, out)?;
                }
                return self.lower_value(last, out);
            }
            ExprKind::LetShared { var, body } | ExprKind::LetLocalArray { var, body } => {
                let v = self.bind_var(var)?;
                out.push(stmt(StmtKind::Array { var: v }, var.span));
                return self.lower_value(body, out);
            }
            ExprKind::Superstep { step, rest, .. } => {
                let mut block = Vec::new();
                self.lower_into(step, Dest::Discard, &mut block)?;
                out.push(stmt(StmtKind::Block(block), step.span));
                out.push(stmt(StmtKind::Barrier, superstep_header(e)));
                return self.lower_value(rest, out);
            }
            ExprKind::If {
                cond,
                then_branch,
                else_branch: Some(else_branch),
            } if e.ty.scalar().is_some() && selectable(then_branch) && selectable(else_branch) => {
                let c = self.value(cond, out)?;
                let mut scratch = Vec::new();
                let a = self.value(then_branch, &mut scratch)?;
                let b = self.value(else_branch, &mut scratch)?;
                if !scratch.is_empty() {
                    return self.internal(span, "a selectable branch produced statements");
                }
                ir::Expr::new(
                    ir::ExprKind::Select {
                        cond: Box::new(c),
                        then_value: Box::new(a),
                        else_value: Box::new(b),
                    },
                    ty,
                )
            }
            ExprKind::If { .. } | ExprKind::Match { .. } => {
                let name = if matches!(e.kind, ExprKind::If { .. }) {
                    "if_result"
                } else {
                    "match_result"
                };
                let tmp = self.new_var(name, ty.clone(), true, span);
                out.push(stmt(
                    StmtKind::Let {
                        var: tmp,
                        init: None,
                    },
                    span,
                ));
                self.lower_into(e, Dest::Assign(tmp), out)?;
                ir::Expr::new(ir::ExprKind::Var(tmp), ty)
            }
            ExprKind::Index { base, index } => {
                let b = self.array_var(base)?;
                let i = self.value(index, out)?;
                ir::Expr::new(
                    ir::ExprKind::Index {
                        base: b,
                        index: Box::new(i),
                    },
                    ty,
                )
            }
            ExprKind::Field { base, field, .. } => {
                let b = self.value(base, out)?;
                ir::Expr::new(
                    ir::ExprKind::Field {
                        base: Box::new(b),
                        field: *field,
                    },
                    ty,
                )
            }
            ExprKind::Record { record: _, fields } => {
                let ir::Ty::Record(rid) = ty else {
                    return self.internal(span, "record literal of a non-record type");
                };
                let vals = self.operands(fields.iter(), out)?;
                ir::Expr::new(
                    ir::ExprKind::Record {
                        record: rid,
                        fields: vals,
                    },
                    ty,
                )
            }
            ExprKind::Tuple(items) => {
                let ir::Ty::Record(rid) = ty else {
                    return self.internal(span, "tuple of a non-tuple type");
                };
                let vals = self.operands(items.iter(), out)?;
                ir::Expr::new(
                    ir::ExprKind::Record {
                        record: rid,
                        fields: vals,
                    },
                    ty,
                )
            }
            ExprKind::Ctor {
                variant,
                ctor,
                args,
            } => {
                let ir::Ty::Variant(vid) = ty else {
                    return self.internal(span, "constructor of a non-variant type");
                };
                let vals = self.operands(args.iter(), out)?;
                let vals = self.flatten_payload(*variant, *ctor, vals, span, out)?;
                ir::Expr::new(
                    ir::ExprKind::Ctor {
                        variant: vid,
                        ctor: *ctor,
                        fields: vals,
                    },
                    ty,
                )
            }
            ExprKind::Call { func, args, .. } => {
                let Some(f) = self.find_function(*func) else {
                    return self.internal(span, format!("call to unknown helper {func:?}"));
                };
                let fid = self.function(*func, span)?;
                let vals = self.call_args(f, args, out)?;
                ir::Expr::new(
                    ir::ExprKind::Call {
                        func: fid,
                        args: vals,
                    },
                    ty,
                )
            }
            ExprKind::Intrinsic { op, args } => match op {
                Intrinsic::BlockBarrier | Intrinsic::FenceBlock | Intrinsic::FenceDevice => {
                    return self.internal(span, "a barrier or fence with a non-unit type");
                }
                Intrinsic::Atomic(_) => {
                    let Some((array, rest)) = args.split_first() else {
                        return self.internal(span, "atomic without operands");
                    };
                    let a = self.array_var(array)?;
                    let aty = self.vars[a.0 as usize].ty.clone();
                    let mut vals = vec![ir::Expr::new(ir::ExprKind::Var(a), aty)];
                    vals.extend(self.operands(rest.iter(), out)?);
                    ir::Expr::new(
                        ir::ExprKind::Intrinsic {
                            op: *op,
                            args: vals,
                        },
                        ty,
                    )
                }
                _ => {
                    let vals =
                        self.operands(args.iter().filter(|a| a.ty != tast::Ty::Unit), out)?;
                    // `float64 e` of a float32 constant expression is folded here, in float32
                    // arithmetic: glslang folds float constants in double precision, which
                    // would skip the float32 rounding the other targets perform.
                    if *op == Intrinsic::Convert
                        && ty == ir::Ty::F64
                        && let [arg] = vals.as_slice()
                        && let Some(v) = f32_constant(arg)
                    {
                        return Ok(Some(ir::Expr::new(
                            ir::ExprKind::Lit(Literal::F64(f64::from(v))),
                            ty,
                        )));
                    }
                    ir::Expr::new(
                        ir::ExprKind::Intrinsic {
                            op: *op,
                            args: vals,
                        },
                        ty,
                    )
                }
            },
            ExprKind::Binary { op, lhs, rhs } => {
                if lhs.ty.scalar().is_none() {
                    if matches!(op, BinOp::Eq | BinOp::Ne) {
                        return self.aggregate_equality(&lhs.ty, span).map(Some);
                    }
                    return self
                        .internal(span, format!("`{}` on a non-scalar operand", op.symbol()));
                }
                if matches!(op, BinOp::And | BinOp::Or) && !selectable(rhs) {
                    return self.short_circuit(*op, lhs, rhs, span, out).map(Some);
                }
                let (Some(l), Some(r)) = self.operand_pair(lhs, rhs, out)? else {
                    return self.internal(span, "binary operator arity");
                };
                let v = ir::Expr::new(
                    ir::ExprKind::Binary {
                        op: *op,
                        lhs: Box::new(l),
                        rhs: Box::new(r),
                        nowrap: false,
                    },
                    ty,
                );
                // A long operator chain (`a + b + c + ...`, thousands of terms in generated
                // kernels) is cut into temporaries, so that no IR expression is deeper than
                // the targets' parsers and every pass after this one take.
                if deeper_than(&v, MAX_CHAIN_HEIGHT) {
                    self.spill(v, "chain", span, out)
                } else {
                    v
                }
            }
            ExprKind::Unary { op, operand } => {
                let v = self.value(operand, out)?;
                ir::Expr::new(
                    ir::ExprKind::Unary {
                        op: *op,
                        operand: Box::new(v),
                    },
                    ty,
                )
            }
            ExprKind::Assign { .. }
            | ExprKind::For { .. }
            | ExprKind::While { .. }
            | ExprKind::IndexSet { .. }
            | ExprKind::FieldSet { .. }
            | ExprKind::Ignore(_)
            | ExprKind::Trap { .. } => {
                return self.internal(span, "a statement with a non-unit type");
            }
        };
        Ok(Some(v))
    }

    /// One value per IR payload field: a scalar-tuple argument contributes its components
    /// (taken from a tuple literal directly, else projected from a temporary).
    fn flatten_payload(
        &mut self,
        variant: tast::VariantId,
        ctor: u32,
        vals: Vec<ir::Expr>,
        span: Span,
        out: &mut Block,
    ) -> LResult<Vec<ir::Expr>> {
        let program = self.program;
        let Some(def) = program
            .variants
            .get(variant.0 as usize)
            .and_then(|v| v.ctors.get(ctor as usize))
        else {
            return self.internal(span, "unknown constructor");
        };
        let layout = super::types::payload_layout(def);
        let projects = layout
            .iter()
            .zip(&vals)
            .any(|(l, v)| l.tuple.is_some() && !matches!(v.kind, ir::ExprKind::Record { .. }));
        let mut fields = Vec::new();
        for (l, v) in layout.iter().zip(vals) {
            // Projections read a temporary evaluated here: keep every operand in order.
            let v = if projects
                && !self.is_stable(&v)
                && !matches!(v.kind, ir::ExprKind::Record { .. })
            {
                self.spill(v, "payload", span, out)
            } else {
                v
            };
            match (&l.tuple, v.kind) {
                (None, kind) => fields.push(ir::Expr::new(kind, v.ty)),
                (Some(_), ir::ExprKind::Record { fields: parts, .. }) => fields.extend(parts),
                (Some(cs), kind) => {
                    let base = ir::Expr::new(kind, v.ty);
                    for (j, c) in cs.iter().enumerate() {
                        let ty = self.ty(c, span)?;
                        let field = ir::ExprKind::Field {
                            base: Box::new(base.clone()),
                            field: j as u32,
                        };
                        fields.push(ir::Expr::new(field, ty));
                    }
                }
            }
        }
        Ok(fields)
    }

    /// Lower a unit-typed expression that is not control flow or a binder.
    fn lower_effect(&mut self, e: &tast::Expr, out: &mut Block) -> LResult<()> {
        let span = e.span;
        match &e.kind {
            ExprKind::Assign { var, value } => {
                let target = self.lookup(*var, span)?;
                if let Some(v) = self.lower_value(value, out)? {
                    out.push(stmt(
                        StmtKind::Assign {
                            place: LValue::Var(target),
                            value: v,
                        },
                        span,
                    ));
                }
            }
            ExprKind::For {
                var,
                start,
                end,
                downto,
                body,
                hints,
            } => {
                let (Some(s), Some(t)) = self.operand_pair(start, end, out)? else {
                    return self.internal(span, "for-loop bounds");
                };
                let v = self.bind_var(var)?;
                let mut block = Vec::new();
                self.lower_into(body, Dest::Discard, &mut block)?;
                out.push(stmt(
                    StmtKind::For {
                        var: v,
                        start: s,
                        end: t,
                        downto: *downto,
                        body: block,
                        unroll: hints.unroll,
                    },
                    span,
                ));
            }
            ExprKind::While { cond, body, hints } => {
                let mut cond_block = Vec::new();
                let c = self.value(cond, &mut cond_block)?;
                let mut block = Vec::new();
                if cond_block.is_empty() {
                    self.lower_into(body, Dest::Discard, &mut block)?;
                    out.push(stmt(
                        StmtKind::While {
                            cond: c,
                            body: block,
                            unroll: hints.unroll,
                        },
                        span,
                    ));
                } else {
                    // The condition needs statements: evaluate it at the top of every
                    // iteration and leave when it is false.
                    block = cond_block;
                    let not_c = ir::Expr::new(
                        ir::ExprKind::Unary {
                            op: crate::types::UnOp::Not,
                            operand: Box::new(c),
                        },
                        ir::Ty::BOOL,
                    );
                    block.push(stmt(
                        StmtKind::If {
                            cond: not_c,
                            then_block: vec![stmt(StmtKind::Break, cond.span)],
                            else_block: vec![],
                        },
                        cond.span,
                    ));
                    self.lower_into(body, Dest::Discard, &mut block)?;
                    out.push(stmt(
                        StmtKind::While {
                            cond: ir::Expr::lit(Literal::Bool(true)),
                            body: block,
                            unroll: hints.unroll,
                        },
                        span,
                    ));
                }
            }
            ExprKind::IndexSet { base, index, value } => {
                let b = self.array_var(base)?;
                let (Some(i), Some(v)) = self.operand_pair(index, value, out)? else {
                    return self.internal(span, "element store operands");
                };
                out.push(stmt(
                    StmtKind::Assign {
                        place: LValue::Index {
                            base: b,
                            index: Box::new(i),
                        },
                        value: v,
                    },
                    span,
                ));
            }
            ExprKind::FieldSet {
                base, field, value, ..
            } => {
                let mut place = self.place(base, out)?;
                let mut scratch = Vec::new();
                let v = self.value(value, &mut scratch)?;
                if !scratch.is_empty() {
                    // The value's statements must not change the element index chosen first.
                    self.stabilise_place(&mut place, span, out);
                    out.append(&mut scratch);
                }
                out.push(stmt(
                    StmtKind::Assign {
                        place: LValue::Field {
                            base: Box::new(place),
                            field: *field,
                        },
                        value: v,
                    },
                    span,
                ));
            }
            ExprKind::Ignore(inner) => {
                if let Some(v) = self.lower_value(inner, out)? {
                    out.push(stmt(StmtKind::Expr(v), span));
                }
            }
            ExprKind::Intrinsic {
                op: Intrinsic::BlockBarrier,
                args,
            } => {
                self.effects_only(args, out)?;
                out.push(stmt(StmtKind::Barrier, span));
            }
            ExprKind::Intrinsic {
                op: op @ (Intrinsic::FenceBlock | Intrinsic::FenceDevice),
                args,
            } => {
                self.effects_only(args, out)?;
                out.push(stmt(
                    StmtKind::Fence {
                        device: *op == Intrinsic::FenceDevice,
                    },
                    span,
                ));
            }
            ExprKind::Call { func, args, .. } => {
                let Some(f) = self.find_function(*func) else {
                    return self.internal(span, format!("call to unknown helper {func:?}"));
                };
                let fid = self.function(*func, span)?;
                let vals = self.call_args(f, args, out)?;
                out.push(stmt(
                    StmtKind::Expr(ir::Expr::new(
                        ir::ExprKind::Call {
                            func: fid,
                            args: vals,
                        },
                        ir::Ty::Unit,
                    )),
                    span,
                ));
            }
            ExprKind::Intrinsic { op, args } => {
                // Any other unit intrinsic: keep it for its effects.
                let vals = self.operands(args.iter().filter(|a| a.ty != tast::Ty::Unit), out)?;
                out.push(stmt(
                    StmtKind::Expr(ir::Expr::new(
                        ir::ExprKind::Intrinsic {
                            op: *op,
                            args: vals,
                        },
                        ir::Ty::Unit,
                    )),
                    span,
                ));
            }
            _ => {
                return self.internal(span, "unexpected unit-typed expression");
            }
        }
        Ok(())
    }

    fn effects_only(&mut self, args: &[tast::Expr], out: &mut Block) -> LResult<()> {
        for a in args {
            self.lower_into(a, Dest::Discard, out)?;
        }
        Ok(())
    }

    /// `a && b` / `a || b` whose right operand needs statements: those statements run only
    /// when the left operand does not decide the result.
    fn short_circuit(
        &mut self,
        op: BinOp,
        lhs: &tast::Expr,
        rhs: &tast::Expr,
        span: Span,
        out: &mut Block,
    ) -> LResult<ir::Expr> {
        let l = self.value(lhs, out)?;
        let name = if op == BinOp::And {
            "and_result"
        } else {
            "or_result"
        };
        let tmp = self.new_var(name, ir::Ty::BOOL, true, span);
        out.push(stmt(
            StmtKind::Let {
                var: tmp,
                init: Some(l),
            },
            span,
        ));
        let mut rhs_block = Vec::new();
        self.lower_into(rhs, Dest::Assign(tmp), &mut rhs_block)?;
        let t = ir::Expr::new(ir::ExprKind::Var(tmp), ir::Ty::BOOL);
        let cond = if op == BinOp::And {
            t.clone()
        } else {
            ir::Expr::new(
                ir::ExprKind::Unary {
                    op: crate::types::UnOp::Not,
                    operand: Box::new(t.clone()),
                },
                ir::Ty::BOOL,
            )
        };
        out.push(stmt(
            StmtKind::If {
                cond,
                then_block: rhs_block,
                else_block: vec![],
            },
            span,
        ));
        Ok(t)
    }

    /// Lower operands left to right (unit operands are evaluated for effects and dropped).
    pub(super) fn operands<'e>(
        &mut self,
        exprs: impl Iterator<Item = &'e tast::Expr>,
        out: &mut Block,
    ) -> LResult<Vec<ir::Expr>> {
        // Each value keeps the span of its operand: a spilled operand's temporary is located
        // at the operand (a run-time fault in it then points there, not at a later operand).
        let mut vals: Vec<(ir::Expr, Span)> = Vec::new();
        for e in exprs {
            if let Some(v) = self.operand(e, &mut vals, out)? {
                vals.push((v, e.span));
            }
        }
        Ok(vals.into_iter().map(|(v, _)| v).collect())
    }

    /// [`Self::operands`] of two expressions, without a vector (binary operators, loop
    /// bounds and element stores, the most frequent): each value, none for a unit operand.
    fn operand_pair(
        &mut self,
        a: &tast::Expr,
        b: &tast::Expr,
        out: &mut Block,
    ) -> LResult<(Option<ir::Expr>, Option<ir::Expr>)> {
        match self.operand(a, &mut [], out)? {
            Some(va) => {
                let mut done = [(va, a.span)];
                let vb = self.operand(b, &mut done, out)?;
                let [(va, _)] = done;
                Ok((Some(va), vb))
            }
            None => Ok((None, self.operand(b, &mut [], out)?)),
        }
    }

    /// Lower the operand `e` after those already computed (`done`, with their spans): when
    /// `e` needs statements first, the unstable values of `done` are spilled before them.
    fn operand(
        &mut self,
        e: &tast::Expr,
        done: &mut [(ir::Expr, Span)],
        out: &mut Block,
    ) -> LResult<Option<ir::Expr>> {
        let mut scratch = Vec::new();
        let v = self.lower_value(e, &mut scratch)?;
        if !scratch.is_empty() {
            // These statements must not run before the operands already computed.
            for (prev, prev_span) in done.iter_mut() {
                if !self.is_stable(prev) {
                    let t = self.spill(prev.clone(), "arg", *prev_span, out);
                    *prev = t;
                }
            }
            out.append(&mut scratch);
        }
        Ok(v)
    }

    /// Arguments of a helper call: unit parameters are dropped (their arguments still run).
    fn call_args(
        &mut self,
        f: &tast::Function,
        args: &[tast::Expr],
        out: &mut Block,
    ) -> LResult<Vec<ir::Expr>> {
        if f.params.len() != args.len() {
            return self.internal(
                args.first().map_or(f.span, |a| a.span),
                format!(
                    "helper `{}` takes {} arguments, the call passes {}",
                    f.name,
                    f.params.len(),
                    args.len()
                ),
            );
        }
        self.operands(args.iter(), out)
    }

    /// Evaluate `value` once into an immutable temporary and return a reference to it.
    pub(super) fn spill(
        &mut self,
        value: ir::Expr,
        name: &str,
        span: Span,
        out: &mut Block,
    ) -> ir::Expr {
        let ty = value.ty.clone();
        let t = self.new_var(name, ty.clone(), false, span);
        out.push(stmt(
            StmtKind::Let {
                var: t,
                init: Some(value),
            },
            span,
        ));
        ir::Expr::new(ir::ExprKind::Var(t), ty)
    }

    /// A literal or an immutable variable: its value cannot change under later statements.
    pub(super) fn is_stable(&self, e: &ir::Expr) -> bool {
        match &e.kind {
            ir::ExprKind::Lit(_) => true,
            ir::ExprKind::Var(v) => !self.vars[v.0 as usize].mutable,
            _ => false,
        }
    }

    /// The vector/array variable a `base.(i)` or an atomic operates on.
    fn array_var(&mut self, base: &tast::Expr) -> LResult<ir::VarId> {
        match &base.kind {
            ExprKind::Var(id) => self.lookup(*id, base.span),
            _ => self.error(
                Diagnostic::error(base.span, "a vector or array cannot be chosen at run time")
                    .with_label("this expression computes which vector to use")
                    .with_note(
                        "a vector or array is a fixed buffer: use a parameter, a shared or local array, or a `let` name for one",
                    )
                    .with_help("branch on the condition and use each vector in its own branch: `if c then v.(i) else w.(i)`"),
            ),
        }
    }

    /// Spill a place's element index to a temporary unless it is already stable.
    fn stabilise_place(&mut self, place: &mut LValue, span: Span, out: &mut Block) {
        match place {
            LValue::Var(_) => {}
            LValue::Index { index, .. } => {
                if !self.is_stable(index) {
                    let i = std::mem::replace(&mut **index, ir::Expr::i32(0));
                    **index = self.spill(i, "index", span, out);
                }
            }
            LValue::Field { base, .. } => self.stabilise_place(base, span, out),
        }
    }

    /// The assignable place a field store writes through.
    fn place(&mut self, e: &tast::Expr, out: &mut Block) -> LResult<LValue> {
        match &e.kind {
            ExprKind::Var(id) => Ok(LValue::Var(self.lookup(*id, e.span)?)),
            ExprKind::Index { base, index } => {
                let b = self.array_var(base)?;
                let i = self.value(index, out)?;
                Ok(LValue::Index {
                    base: b,
                    index: Box::new(i),
                })
            }
            ExprKind::Field { base, field, .. } => {
                let p = self.place(base, out)?;
                Ok(LValue::Field {
                    base: Box::new(p),
                    field: *field,
                })
            }
            _ => self.error(
                Diagnostic::error(
                    e.span,
                    "this expression is not a place a field can be assigned through",
                )
                .with_label("not a variable, vector element or field")
                .with_help(
                    "assign to a field of a variable or of a vector element: `v.(i).x <- e`",
                ),
            ),
        }
    }

    /// `let pattern = value in ...`: binds for the rest of the current block.
    fn bind_let(
        &mut self,
        pattern: &tast::Pattern,
        value: &tast::Expr,
        span: Span,
        out: &mut Block,
    ) -> LResult<()> {
        if value.ty == tast::Ty::Unit {
            // `let () = e` / `let x = f ()`: only the effects remain (unit binders have no
            // IR variable; their uses lower to nothing).
            return self.lower_into(value, Dest::Discard, out);
        }
        match pattern {
            tast::Pattern::Bind(decl) => {
                if matches!(decl.ty, tast::Ty::Vector(_) | tast::Ty::Array { .. }) {
                    // A vector or array is named, not copied: the binder aliases it.
                    let v = self.array_var(value)?;
                    self.var_map.insert(decl.id, v);
                    return Ok(());
                }
                if decl.ty == tast::Ty::Unit {
                    return self.lower_into(value, Dest::Discard, out);
                }
                if needs_temp(value) {
                    // `let x = if ... else ...`: the branches assign x directly.
                    let ty = self.ty(&decl.ty, decl.span)?;
                    let v = self.new_var(&decl.name, ty, true, decl.span);
                    out.push(stmt(StmtKind::Let { var: v, init: None }, span));
                    self.lower_into(value, Dest::Assign(v), out)?;
                    self.var_map.insert(decl.id, v);
                    return Ok(());
                }
                let init = self.value(value, out)?;
                // The binder is registered after its value: `let x = x + 1` reads the outer x.
                let v = self.bind_var(decl)?;
                out.push(stmt(
                    StmtKind::Let {
                        var: v,
                        init: Some(init),
                    },
                    span,
                ));
                Ok(())
            }
            tast::Pattern::Wildcard => self.lower_into(value, Dest::Discard, out),
            _ => {
                let m = self.scrutinee(value, out)?;
                self.bind_pattern(pattern, &m, span, out)
            }
        }
    }
}

/// The value of a float32 expression made of literals, negation and `+ - * /`, computed in
/// float32 (IEEE round-to-nearest, as every target and the interpreter evaluate it).
/// The height at which lowering cuts an operator chain into a temporary: far below the
/// targets' parser limits (naga's 200 levels of statements and expressions together).
const MAX_CHAIN_HEIGHT: usize = 64;

/// Whether `e` is more than `limit` levels deep (stops looking at that depth).
fn deeper_than(e: &ir::Expr, limit: usize) -> bool {
    if limit == 0 {
        return true;
    }
    use ir::ExprKind as K;
    let below = |c: &ir::Expr| deeper_than(c, limit - 1);
    match &e.kind {
        K::Lit(_) | K::Var(_) => false,
        K::Binary { lhs, rhs, .. } => below(lhs) || below(rhs),
        K::Unary { operand: x, .. }
        | K::Index { index: x, .. }
        | K::Field { base: x, .. }
        | K::Tag(x)
        | K::Payload { value: x, .. } => below(x),
        K::Record { fields: xs, .. }
        | K::Ctor { fields: xs, .. }
        | K::Call { args: xs, .. }
        | K::Intrinsic { args: xs, .. } => xs.iter().any(below),
        K::Select {
            cond,
            then_value,
            else_value,
        } => below(cond) || below(then_value) || below(else_value),
    }
}

fn f32_constant(e: &ir::Expr) -> Option<f32> {
    use ir::ExprKind as K;
    if e.ty != ir::Ty::F32 {
        return None;
    }
    match &e.kind {
        K::Lit(Literal::F32(v)) => Some(*v),
        K::Unary {
            op: crate::types::UnOp::Neg,
            operand,
        } => f32_constant(operand).map(|v| -v),
        K::Binary { op, lhs, rhs, .. } => {
            let (a, b) = (f32_constant(lhs)?, f32_constant(rhs)?);
            match op {
                BinOp::Add => Some(a + b),
                BinOp::Sub => Some(a - b),
                BinOp::Mul => Some(a * b),
                BinOp::Div => Some(a / b),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A value-position `if`/`match` that cannot become a `Select`.
fn needs_temp(e: &tast::Expr) -> bool {
    match &e.kind {
        ExprKind::If {
            then_branch,
            else_branch: Some(else_branch),
            ..
        } => !(e.ty.scalar().is_some() && selectable(then_branch) && selectable(else_branch)),
        ExprKind::Match { .. } => true,
        _ => false,
    }
}

/// Effect-free and cannot fault: no element reads, no integer division, no calls, atomics or
/// warp operations, no statements. Both arms of a `Select` are evaluated on some targets.
pub(super) fn selectable(e: &tast::Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => e.ty != tast::Ty::Unit,
        ExprKind::Unary { operand, .. } => selectable(operand),
        ExprKind::Binary { op, lhs, rhs } => {
            let faults = matches!(op, BinOp::Div | BinOp::Rem)
                && lhs.ty.scalar().is_some_and(|s| s.is_int());
            !faults && lhs.ty.scalar().is_some() && selectable(lhs) && selectable(rhs)
        }
        ExprKind::Field { base, .. } => selectable(base),
        ExprKind::Record { fields: items, .. }
        | ExprKind::Tuple(items)
        | ExprKind::Ctor { args: items, .. } => items.iter().all(selectable),
        ExprKind::Intrinsic { op, args } => {
            matches!(
                op,
                Intrinsic::Geometry(_)
                    | Intrinsic::Math(_)
                    | Intrinsic::Abs
                    | Intrinsic::Min
                    | Intrinsic::Max
                    | Intrinsic::Clz
                    | Intrinsic::Popcount
                    | Intrinsic::Convert
                    | Intrinsic::Length
            ) && args.iter().all(selectable)
        }
        ExprKind::If {
            cond,
            then_branch,
            else_branch: Some(else_branch),
        } => {
            e.ty.scalar().is_some()
                && selectable(cond)
                && selectable(then_branch)
                && selectable(else_branch)
        }
        _ => false,
    }
}

/// A discarded IR value with no effect and no possible fault.
fn is_inert(e: &ir::Expr) -> bool {
    use ir::ExprKind as K;
    match &e.kind {
        K::Lit(_) | K::Var(_) => true,
        K::Binary { op, lhs, rhs, .. } => {
            let faults = matches!(op, BinOp::Div | BinOp::Rem)
                && lhs.ty.scalar().is_some_and(|s| s.is_int());
            !faults && is_inert(lhs) && is_inert(rhs)
        }
        K::Unary { operand, .. } => is_inert(operand),
        K::Field { base, .. } | K::Tag(base) | K::Payload { value: base, .. } => is_inert(base),
        K::Record { fields, .. } | K::Ctor { fields, .. } => fields.iter().all(is_inert),
        K::Select {
            cond,
            then_value,
            else_value,
        } => is_inert(cond) && is_inert(then_value) && is_inert(else_value),
        K::Index { .. } | K::Call { .. } => false,
        K::Intrinsic { op, args } => {
            !matches!(
                op,
                Intrinsic::Atomic(_) | Intrinsic::Warp(_) | Intrinsic::Length
            ) && args.iter().all(is_inert)
        }
    }
}

/// The `let%superstep name` header of a superstep expression (where its barrier is
/// reported). Passes see no source text, so the length assumes the usual spelling, clamped to
/// the step's start. When the expression's span was widened by enclosing `begin ... end` or
/// parentheses (it then ends after its `rest`), the header is measured back from the step.
pub fn superstep_header(e: &tast::Expr) -> Span {
    match &e.kind {
        ExprKind::Superstep {
            name,
            divergent,
            step,
            rest,
        } if step.span.file == e.span.file && step.span.start > e.span.start => {
            let attr = if *divergent { "[@divergent]".len() } else { 0 };
            let len = ("let%superstep ".len() + attr + name.len()) as u32;
            let start = if rest.span.end == e.span.end || rest.span.is_dummy() {
                e.span.start
            } else {
                step.span
                    .start
                    .saturating_sub(len + " = ".len() as u32)
                    .max(e.span.start)
            };
            Span {
                file: e.span.file,
                start,
                end: (start + len).min(step.span.start),
            }
        }
        _ => e.span,
    }
}
