//! Masked `while` loops in lane groups (as ISPC and PoCL run divergent loops): the group
//! runs the loop while any lane is still in it; a lane whose condition turns false keeps its
//! values from then on (every assignment is blended with the mask of the lanes still
//! running), and an `if` inside runs both arms, each under its own mask. So lanes may leave
//! at different iterations without rerunning the group thread by thread.
//!
//! Only what cannot fault and has no effect is masked: int32, float32 and bool arithmetic,
//! comparisons, conversions from int32 to float32, `let`s, assignments to variables and
//! `if`s; no memory access, integer division, call or nested loop ([`Analysis`] checks it).
//! Values are vectors of the lanes ([`Vectors`]: two of four lanes each): `i32x4`, `f32x4`,
//! and bools as `i32x4` masks (all ones or zero), so each operation is one vector
//! instruction per half of the group.

use super::super::{Gen, R, hoist, pure};
use super::{Analysis, Group, HALVES, Lanes, Shape, VLANES, Vectors};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    InstBuilder, MemFlagsData as MemFlags, StackSlot, StackSlotData, StackSlotKind, Type, Value,
    types,
};
use cranelift_frontend::Variable;
use sarek_compiler::intrinsics::Intrinsic;
use sarek_compiler::ir::{Expr, ExprKind, LValue, Stmt, StmtKind, VarId};
use sarek_compiler::types::{BinOp, Literal, Scalar, UnOp};
use std::collections::HashMap;

impl Analysis<'_> {
    /// Whether the `while` loop can run masked (no lane-agreement check is needed).
    pub(super) fn masked_loop(&mut self, cond: &Expr, body: &[Stmt]) -> Option<()> {
        self.masked_expr(cond)?;
        self.masked_block(body)
    }

    fn masked_block(&mut self, b: &[Stmt]) -> Option<()> {
        for s in b {
            match &s.kind {
                StmtKind::Let { var, init } => {
                    masked_scalar(self.k.var(*var).ty.scalar()?)?;
                    if let Some(e) = init {
                        self.masked_expr(e)?;
                    }
                    // One value per lane from here on.
                    self.mutable.insert(*var);
                }
                StmtKind::Assign {
                    place: LValue::Var(v),
                    value,
                } if self.mutable.contains(v) => {
                    masked_scalar(self.k.var(*v).ty.scalar()?)?;
                    self.masked_expr(value)?;
                }
                StmtKind::If {
                    cond,
                    then_block,
                    else_block,
                } => {
                    self.masked_expr(cond)?;
                    self.masked_block(then_block)?;
                    self.masked_block(else_block)?;
                }
                StmtKind::Block(b) => self.masked_block(b)?,
                _ => return None,
            }
        }
        Some(())
    }

    fn masked_expr(&mut self, e: &Expr) -> Option<Shape> {
        let s = masked_scalar(e.ty.scalar()?)?;
        Some(match &e.kind {
            ExprKind::Lit(_) => Shape::Uniform,
            ExprKind::Var(_)
            | ExprKind::Intrinsic {
                op: Intrinsic::Geometry(_),
                ..
            } => self.expr(e)?,
            ExprKind::Binary { op, lhs, rhs, .. } => {
                let ty = masked_scalar(lhs.ty.scalar()?)?;
                let a = self.masked_expr(lhs)?;
                let b = self.masked_expr(rhs)?;
                let ok = match ty {
                    Scalar::I32 => match op {
                        BinOp::Shl | BinOp::LShr | BinOp::AShr => b == Shape::Uniform,
                        BinOp::Div | BinOp::Rem | BinOp::And | BinOp::Or => false,
                        _ => true,
                    },
                    Scalar::F32 => !matches!(
                        op,
                        BinOp::Rem
                            | BinOp::And
                            | BinOp::Or
                            | BinOp::BitAnd
                            | BinOp::BitOr
                            | BinOp::BitXor
                            | BinOp::Shl
                            | BinOp::LShr
                            | BinOp::AShr
                    ),
                    _ => matches!(
                        op,
                        BinOp::And
                            | BinOp::Or
                            | BinOp::BitAnd
                            | BinOp::BitOr
                            | BinOp::BitXor
                            | BinOp::Eq
                            | BinOp::Ne
                    ),
                };
                ok.then_some(())?;
                a.join(b)
            }
            ExprKind::Unary { op, operand } => {
                let ok = matches!(
                    (op, s),
                    (UnOp::Neg, Scalar::I32 | Scalar::F32)
                        | (UnOp::Not, Scalar::Bool)
                        | (UnOp::BitNot, Scalar::I32)
                );
                ok.then_some(())?;
                self.masked_expr(operand)?.join(Shape::Uniform)
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                let c = self.masked_expr(cond)?;
                let a = self.masked_expr(then_value)?;
                let b = self.masked_expr(else_value)?;
                c.join(a).join(b)
            }
            ExprKind::Intrinsic {
                op: Intrinsic::Convert,
                args,
            } if s == Scalar::F32
                && args.len() == 1
                && args[0].ty.scalar() == Some(Scalar::I32) =>
            {
                self.masked_expr(&args[0])?.join(Shape::Uniform)
            }
            _ => return None,
        })
    }
}

fn masked_scalar(s: Scalar) -> Option<Scalar> {
    matches!(s, Scalar::I32 | Scalar::F32 | Scalar::Bool).then_some(s)
}

fn vector_type(s: Scalar) -> Type {
    if s == Scalar::F32 {
        types::F32X4
    } else {
        types::I32X4
    }
}

/// The values of a masked region: variables it assigns, `let`s it binds, and varying values
/// from before the loop, kept in stack slots (see [`Gen::g_while`]).
struct Region {
    vars: HashMap<VarId, [Variable; HALVES]>,
    lets: HashMap<VarId, Vectors>,
    kept: HashMap<VarId, (StackSlot, Type)>,
}

impl Gen<'_, '_> {
    /// A `while` loop whose lanes may leave at different iterations (see the module doc).
    pub(super) fn g_while(&mut self, g: &mut Group, cond: &Expr, body: &[Stmt]) -> R<()> {
        let mut declared = Vec::new();
        let mut assigned = Vec::new();
        for s in hoist::all_stmts(body) {
            match &s.kind {
                StmtKind::Let { var, .. } => declared.push(*var),
                StmtKind::Assign {
                    place: LValue::Var(v),
                    ..
                } if !assigned.contains(v) => assigned.push(*v),
                _ => {}
            }
        }
        assigned.retain(|v| !declared.contains(v));
        let mut r = Region {
            vars: HashMap::new(),
            lets: HashMap::new(),
            kept: HashMap::new(),
        };
        for &v in &assigned {
            let s = self.scalar_of(v)?;
            let now = self.g_read(g, v)?;
            let now = self.lanes_to_vector(s, now);
            let var = self.m_var(s, now);
            r.vars.insert(v, var);
        }
        // Values from before the loop, as vectors once (not at every iteration).
        let mut outer = Vec::new();
        let mut note = |e: &Expr| {
            crate::prepare::walk_expr(e, &mut |x| {
                if let ExprKind::Var(v) = x.kind
                    && !declared.contains(&v)
                    && !assigned.contains(&v)
                    && !outer.contains(&v)
                {
                    outer.push(v);
                }
            })
        };
        note(cond);
        for s in hoist::all_stmts(body) {
            crate::prepare::own_exprs(s).into_iter().for_each(&mut note);
        }
        // Each is stored to a stack slot and loaded where the loop reads it: Cranelift would
        // otherwise recompute it from its lanes inside the loop.
        for v in outer {
            let s = self.scalar_of(v)?;
            let now = self.g_read(g, v)?;
            let x = self.lanes_to_vector(s, now);
            let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                16 * HALVES as u32,
                4,
            ));
            for (h, x) in x.into_iter().enumerate() {
                self.b.ins().stack_store(self.ptr, x, slot, 16 * h as i32);
            }
            r.kept.insert(v, (slot, vector_type(s)));
        }
        let all = self.iconst(types::I32, -1);
        let all = self.b.ins().splat(types::I32X4, all);
        let mask = self.m_var(Scalar::Bool, [all; HALVES]);
        let (hdr, bodyb, exit) = self.enter_loop_header();
        let c = self.m_expr(g, &mut r, cond)?;
        let running: Vectors = std::array::from_fn(|h| {
            let m = self.b.use_var(mask[h]);
            let m = self.b.ins().band(m, c[h]);
            self.b.def_var(mask[h], m);
            m
        });
        let either = running[1..]
            .iter()
            .fold(running[0], |a, m| self.b.ins().bor(a, *m));
        let any = self.b.ins().vany_true(either);
        self.b.ins().brif(any, bodyb, &[], exit, &[]);
        self.b.switch_to_block(bodyb);
        self.m_block(g, &mut r, body, running)?;
        self.b.ins().jump(hdr, &[]);
        self.b.switch_to_block(exit);
        for &v in &assigned {
            let s = self.scalar_of(v)?;
            let x = r.vars[&v].map(|x| self.b.use_var(x));
            let lanes = self.vector_to_lanes(s, x);
            self.g_assign(g, v, lanes)?;
        }
        Ok(())
    }

    /// A variable per half of a vector value of type `s`, set to `x`.
    fn m_var(&mut self, s: Scalar, x: Vectors) -> [Variable; HALVES] {
        x.map(|x| {
            let v = self.b.declare_var(vector_type(s));
            self.b.def_var(v, x);
            v
        })
    }

    fn m_block(&mut self, g: &mut Group, r: &mut Region, b: &[Stmt], mask: Vectors) -> R<()> {
        for s in b {
            self.span = s.span;
            match &s.kind {
                StmtKind::Let { var, init } => {
                    let sc = self.scalar_of(*var)?;
                    let x = match init {
                        Some(e) => self.m_expr(g, r, e)?,
                        None => {
                            let z = self.iconst(types::I32, 0);
                            let z = self.b.ins().splat(types::I32X4, z);
                            self.m_cast(sc, [z; HALVES])
                        }
                    };
                    if self.k.var(*var).mutable || init.is_none() {
                        let v = self.m_var(sc, x);
                        r.vars.insert(*var, v);
                    } else {
                        r.lets.insert(*var, x);
                    }
                }
                StmtKind::Assign {
                    place: LValue::Var(v),
                    value,
                } => {
                    let sc = self.scalar_of(*v)?;
                    let x = self.m_expr(g, r, value)?;
                    let var = *r
                        .vars
                        .get(v)
                        .ok_or_else(|| self.unsupported("an assignment in a masked loop"))?;
                    let m = self.m_cast(sc, mask);
                    for h in 0..HALVES {
                        let old = self.b.use_var(var[h]);
                        let new = self.b.ins().bitselect(m[h], x[h], old);
                        self.b.def_var(var[h], new);
                    }
                }
                StmtKind::If {
                    cond,
                    then_block,
                    else_block,
                } => {
                    let c = self.m_expr(g, r, cond)?;
                    let then_mask = std::array::from_fn(|h| self.b.ins().band(mask[h], c[h]));
                    let else_mask = std::array::from_fn(|h| self.b.ins().band_not(mask[h], c[h]));
                    self.m_block(g, r, then_block, then_mask)?;
                    self.m_block(g, r, else_block, else_mask)?;
                }
                StmtKind::Block(b) => self.m_block(g, r, b, mask)?,
                _ => return Err(self.unsupported("this statement in a masked loop")),
            }
        }
        Ok(())
    }

    /// `i32x4` masks as the vector type of `s` (float32 lanes keep their bits).
    fn m_cast(&mut self, s: Scalar, mask: Vectors) -> Vectors {
        if s == Scalar::F32 {
            mask.map(|m| self.b.ins().bitcast(types::F32X4, MemFlags::new(), m))
        } else {
            mask
        }
    }

    /// A lane-uniform int32 operand (a shift count) as one value.
    fn m_uniform(&mut self, g: &mut Group, r: &mut Region, e: &Expr) -> R<Value> {
        if let Some(c) = hoist::const_i32(e) {
            return Ok(self.iconst(types::I32, c as i64));
        }
        let x = self.m_expr(g, r, e)?;
        Ok(self.b.ins().extractlane(x[0], 0))
    }

    fn m_expr(&mut self, g: &mut Group, r: &mut Region, e: &Expr) -> R<Vectors> {
        let s = super::super::scalar(e)?;
        Ok(match &e.kind {
            ExprKind::Lit(l) => {
                let x = match *l {
                    Literal::Bool(b) => self.iconst(types::I32, -(b as i64)),
                    Literal::I32(x) => self.iconst(types::I32, x as i64),
                    Literal::F32(x) => self.b.ins().f32const(x),
                    _ => return Err(self.unsupported("a 64-bit value in a masked loop")),
                };
                [self.b.ins().splat(vector_type(s), x); HALVES]
            }
            ExprKind::Var(v) => {
                if let Some(var) = r.vars.get(v) {
                    var.map(|x| self.b.use_var(x))
                } else if let Some(x) = r.lets.get(v) {
                    *x
                } else if let Some(&(slot, ty)) = r.kept.get(v) {
                    std::array::from_fn(|h| {
                        self.b.ins().stack_load(self.ptr, ty, slot, 16 * h as i32)
                    })
                } else {
                    let l = self.g_read(g, *v)?;
                    self.lanes_to_vector(s, l)
                }
            }
            ExprKind::Intrinsic {
                op: Intrinsic::Geometry(geo),
                ..
            } => {
                let l = self.g_geometry(g, *geo)?;
                self.lanes_to_vector(s, l)
            }
            ExprKind::Intrinsic {
                op: Intrinsic::Convert,
                args,
            } if s == Scalar::F32 && args.len() == 1 => {
                let x = self.m_expr(g, r, &args[0])?;
                x.map(|x| self.b.ins().fcvt_from_sint(types::F32X4, x))
            }
            ExprKind::Binary { op, lhs, rhs, .. } => {
                let ty = super::super::scalar(lhs)?;
                let a = self.m_expr(g, r, lhs)?;
                if ty == Scalar::I32 && matches!(op, BinOp::Shl | BinOp::LShr | BinOp::AShr) {
                    let n = self.m_uniform(g, r, rhs)?;
                    return Ok(a.map(|a| {
                        let i = self.b.ins();
                        match op {
                            BinOp::Shl => i.ishl(a, n),
                            BinOp::LShr => i.ushr(a, n),
                            _ => i.sshr(a, n),
                        }
                    }));
                }
                let b = self.m_expr(g, r, rhs)?;
                let mut out = a;
                for h in 0..HALVES {
                    out[h] = self.m_binary(*op, ty, a[h], b[h])?;
                }
                out
            }
            ExprKind::Unary { op, operand } => {
                let a = self.m_expr(g, r, operand)?;
                a.map(|a| match (op, s) {
                    (UnOp::Neg, Scalar::F32) => self.b.ins().fneg(a),
                    (UnOp::Neg, _) => self.b.ins().ineg(a),
                    _ => self.b.ins().bnot(a),
                })
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } if pure(then_value) && pure(else_value) => {
                let c = self.m_expr(g, r, cond)?;
                let a = self.m_expr(g, r, then_value)?;
                let b = self.m_expr(g, r, else_value)?;
                let c = self.m_cast(s, c);
                std::array::from_fn(|h| self.b.ins().bitselect(c[h], a[h], b[h]))
            }
            _ => return Err(self.unsupported("this expression in a masked loop")),
        })
    }

    /// One half of a binary operation.
    fn m_binary(&mut self, op: BinOp, ty: Scalar, a: Value, b: Value) -> R<Value> {
        let i = self.b.ins();
        let icmp = |cc| (cc, true);
        let (cc, int) = match op {
            BinOp::Eq => icmp(IntCC::Equal),
            BinOp::Ne => icmp(IntCC::NotEqual),
            BinOp::Lt => icmp(IntCC::SignedLessThan),
            BinOp::Le => icmp(IntCC::SignedLessThanOrEqual),
            BinOp::Gt => icmp(IntCC::SignedGreaterThan),
            BinOp::Ge => icmp(IntCC::SignedGreaterThanOrEqual),
            _ => (IntCC::Equal, false),
        };
        Ok(match ty {
            Scalar::F32 if int => {
                let fc = match op {
                    BinOp::Eq => FloatCC::Equal,
                    BinOp::Ne => FloatCC::NotEqual,
                    BinOp::Lt => FloatCC::LessThan,
                    BinOp::Le => FloatCC::LessThanOrEqual,
                    BinOp::Gt => FloatCC::GreaterThan,
                    _ => FloatCC::GreaterThanOrEqual,
                };
                i.fcmp(fc, a, b)
            }
            Scalar::F32 => match op {
                BinOp::Add => i.fadd(a, b),
                BinOp::Sub => i.fsub(a, b),
                BinOp::Mul => i.fmul(a, b),
                BinOp::Div => i.fdiv(a, b),
                _ => return Err(self.unsupported("this float operator in a masked loop")),
            },
            // Masks are all ones or zero: `==` and `!=` of masks are masks too.
            _ if int => i.icmp(cc, a, b),
            _ => match op {
                BinOp::Add => i.iadd(a, b),
                BinOp::Sub => i.isub(a, b),
                BinOp::Mul => i.imul(a, b),
                BinOp::BitAnd | BinOp::And => i.band(a, b),
                BinOp::BitOr | BinOp::Or => i.bor(a, b),
                BinOp::BitXor => i.bxor(a, b),
                _ => return Err(self.unsupported("this operator in a masked loop")),
            },
        })
    }

    /// The lanes of a value of type `s` as vectors (bools as masks).
    fn lanes_to_vector(&mut self, s: Scalar, l: Lanes) -> Vectors {
        if s == Scalar::F32 {
            return self.vector(l);
        }
        let l = self.split(l);
        let lane = |me: &mut Self, x: Value| -> Value {
            if s == Scalar::Bool {
                let x = me.b.ins().sextend(types::I32, x);
                me.b.ins().ineg(x)
            } else {
                x
            }
        };
        if l.shape == Shape::Uniform {
            let x = lane(self, l.v[0]);
            return [self.b.ins().splat(types::I32X4, x); HALVES];
        }
        std::array::from_fn(|h| {
            let x0 = lane(self, l.v[h * VLANES]);
            let mut x = self.b.ins().scalar_to_vector(types::I32X4, x0);
            for i in 1..VLANES {
                let xi = lane(self, l.v[h * VLANES + i]);
                x = self.b.ins().insertlane(x, xi, i as u8);
            }
            x
        })
    }

    /// Vectors back as lanes (masks as bools 0/1).
    fn vector_to_lanes(&mut self, s: Scalar, x: Vectors) -> Lanes {
        if s == Scalar::F32 {
            return Lanes::f32x4(x);
        }
        let v = std::array::from_fn(|i| {
            let e = self.b.ins().extractlane(x[i / VLANES], (i % VLANES) as u8);
            if s == Scalar::Bool {
                self.b.ins().icmp_imm_s(IntCC::NotEqual, e, 0)
            } else {
                e
            }
        });
        Lanes::varying(v)
    }
}
