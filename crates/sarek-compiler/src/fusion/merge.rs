//! Building the fused kernel: the consumer's tables extended with the producer's (variables
//! renumbered after the consumer's, records and variants shared by name, helpers appended
//! with unique names, trap codes shifted past the consumer's), the producer's body turned into
//! the helper `fused_<t>`, and the consumer's reads of `t` turned into calls of it.

use super::Refusal;
use super::access::is_block_base;
use crate::intrinsics::{Axis, Geometry, Intrinsic};
use crate::ir::{
    Block, Expr, ExprKind, FuncId, Function, Kernel, LValue, Record, RecordId, Stmt, StmtKind, Ty,
    VarId, VarInfo, Variant, VariantId,
};
use crate::types::Literal;

/// Whether `a` (a type of kernel `ka`) and `b` (of `kb`) are the same type.
pub(super) fn same_type(ka: &Kernel, a: &Ty, kb: &Kernel, b: &Ty) -> bool {
    match (a, b) {
        (Ty::Unit, Ty::Unit) => true,
        (Ty::Scalar(x), Ty::Scalar(y)) => x == y,
        (Ty::Vector(x), Ty::Vector(y)) => same_type(ka, x, kb, y),
        (
            Ty::Array {
                elem: x,
                space: sx,
                size: nx,
            },
            Ty::Array {
                elem: y,
                space: sy,
                size: ny,
            },
        ) => sx == sy && nx == ny && same_type(ka, x, kb, y),
        (Ty::Record(x), Ty::Record(y)) => {
            let (rx, ry) = (ka.record(*x), kb.record(*y));
            rx.name == ry.name
                && rx.fields.len() == ry.fields.len()
                && rx
                    .fields
                    .iter()
                    .zip(&ry.fields)
                    .all(|(f, g)| f.name == g.name && same_type(ka, &f.ty, kb, &g.ty))
        }
        (Ty::Variant(x), Ty::Variant(y)) => {
            let (vx, vy) = (ka.variant(*x), kb.variant(*y));
            vx.name == vy.name
                && vx.ctors.len() == vy.ctors.len()
                && vx.ctors.iter().zip(&vy.ctors).all(|(c, d)| {
                    c.name == d.name
                        && c.fields.len() == d.fields.len()
                        && c.fields
                            .iter()
                            .zip(&d.fields)
                            .all(|(x, y)| same_type(ka, x, kb, y))
                })
        }
        _ => false,
    }
}

/// Every expression of `block` (statement expressions, places' indices, nested blocks),
/// parents before children.
pub(super) fn for_each_expr(block: &Block, f: &mut impl FnMut(&Expr)) {
    fn expr(e: &Expr, f: &mut impl FnMut(&Expr)) {
        f(e);
        children(e).into_iter().for_each(|c| expr(c, f));
    }
    fn place(p: &LValue, f: &mut impl FnMut(&Expr)) {
        match p {
            LValue::Var(_) => {}
            LValue::Index { index, .. } => expr(index, f),
            LValue::Field { base, .. } => place(base, f),
        }
    }
    for s in block {
        match &s.kind {
            StmtKind::Let { init: Some(e), .. } | StmtKind::Expr(e) | StmtKind::Return(Some(e)) => {
                expr(e, f)
            }
            StmtKind::Assign { place: p, value } => {
                place(p, f);
                expr(value, f);
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                expr(cond, f);
                for_each_expr(then_block, f);
                for_each_expr(else_block, f);
            }
            StmtKind::For {
                start, end, body, ..
            } => {
                expr(start, f);
                expr(end, f);
                for_each_expr(body, f);
            }
            StmtKind::While { cond, body, .. } => {
                expr(cond, f);
                for_each_expr(body, f);
            }
            StmtKind::Match {
                scrutinee, arms, ..
            } => {
                expr(scrutinee, f);
                arms.iter().for_each(|a| for_each_expr(&a.body, f));
            }
            StmtKind::Block(b) => for_each_expr(b, f),
            _ => {}
        }
    }
}

fn children(e: &Expr) -> Vec<&Expr> {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => vec![],
        ExprKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
        ExprKind::Unary { operand, .. } => vec![operand],
        ExprKind::Index { index, .. } => vec![index],
        ExprKind::Field { base, .. } | ExprKind::Tag(base) => vec![base],
        ExprKind::Payload { value, .. } => vec![value],
        ExprKind::Record { fields, .. } | ExprKind::Ctor { fields, .. } => fields.iter().collect(),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => vec![cond, then_value, else_value],
        ExprKind::Call { args, .. } | ExprKind::Intrinsic { args, .. } => args.iter().collect(),
    }
}

fn children_mut(e: &mut Expr) -> Vec<&mut Expr> {
    match &mut e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => vec![],
        ExprKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
        ExprKind::Unary { operand, .. } => vec![operand],
        ExprKind::Index { index, .. } => vec![index],
        ExprKind::Field { base, .. } | ExprKind::Tag(base) => vec![base],
        ExprKind::Payload { value, .. } => vec![value],
        ExprKind::Record { fields, .. } | ExprKind::Ctor { fields, .. } => {
            fields.iter_mut().collect()
        }
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => vec![cond, then_value, else_value],
        ExprKind::Call { args, .. } | ExprKind::Intrinsic { args, .. } => args.iter_mut().collect(),
    }
}

/// The id changes that carry the producer's nodes into the fused kernel.
struct Remap {
    var_offset: u32,
    records: Vec<RecordId>,
    variants: Vec<VariantId>,
    funcs: Vec<FuncId>,
    trap_offset: u32,
}

impl Remap {
    fn var(&self, v: VarId) -> VarId {
        VarId(v.0 + self.var_offset)
    }
    fn ty(&self, t: &Ty) -> Ty {
        match t {
            Ty::Unit | Ty::Scalar(_) => t.clone(),
            Ty::Record(r) => Ty::Record(self.records[r.0 as usize]),
            Ty::Variant(v) => Ty::Variant(self.variants[v.0 as usize]),
            Ty::Vector(e) => Ty::Vector(Box::new(self.ty(e))),
            Ty::Array { elem, space, size } => Ty::Array {
                elem: Box::new(self.ty(elem)),
                space: *space,
                size: *size,
            },
        }
    }
    fn expr(&self, e: &mut Expr) {
        e.ty = self.ty(&e.ty);
        match &mut e.kind {
            ExprKind::Var(v) | ExprKind::Index { base: v, .. } => *v = self.var(*v),
            ExprKind::Record { record, .. } => *record = self.records[record.0 as usize],
            ExprKind::Ctor { variant, .. } => *variant = self.variants[variant.0 as usize],
            ExprKind::Call { func, .. } => *func = self.funcs[func.0 as usize],
            _ => {}
        }
        children_mut(e).into_iter().for_each(|c| self.expr(c));
    }
    fn place(&self, p: &mut LValue) {
        match p {
            LValue::Var(v) => *v = self.var(*v),
            LValue::Index { base, index } => {
                *base = self.var(*base);
                self.expr(index);
            }
            LValue::Field { base, .. } => self.place(base),
        }
    }
    fn block(&self, b: &mut Block) {
        for s in b {
            match &mut s.kind {
                StmtKind::Let { var, init } => {
                    *var = self.var(*var);
                    if let Some(e) = init {
                        self.expr(e);
                    }
                }
                StmtKind::Array { var } => *var = self.var(*var),
                StmtKind::Assign { place, value } => {
                    self.place(place);
                    self.expr(value);
                }
                StmtKind::Expr(e) | StmtKind::Return(Some(e)) => self.expr(e),
                StmtKind::If {
                    cond,
                    then_block,
                    else_block,
                } => {
                    self.expr(cond);
                    self.block(then_block);
                    self.block(else_block);
                }
                StmtKind::For {
                    var,
                    start,
                    end,
                    body,
                    ..
                } => {
                    *var = self.var(*var);
                    self.expr(start);
                    self.expr(end);
                    self.block(body);
                }
                StmtKind::While { cond, body, .. } => {
                    self.expr(cond);
                    self.block(body);
                }
                StmtKind::Match {
                    scrutinee,
                    variant,
                    arms,
                } => {
                    self.expr(scrutinee);
                    *variant = self.variants[variant.0 as usize];
                    for arm in arms {
                        for b in arm.bindings.iter_mut().flatten() {
                            *b = self.var(*b);
                        }
                        self.block(&mut arm.body);
                    }
                }
                StmtKind::Block(b) => self.block(b),
                StmtKind::Trap(t) => t.code += self.trap_offset,
                StmtKind::Barrier
                | StmtKind::Fence { .. }
                | StmtKind::Return(None)
                | StmtKind::Break
                | StmtKind::Continue
                | StmtKind::Native(_) => {}
            }
        }
    }
}

/// Rewrite every expression of `block` with `f`, parents first; `f` returns true when it
/// replaced the node (its children are then left alone).
fn rewrite_exprs(block: &mut Block, f: &mut impl FnMut(&mut Expr) -> bool) {
    fn expr(e: &mut Expr, f: &mut impl FnMut(&mut Expr) -> bool) {
        if !f(e) {
            children_mut(e).into_iter().for_each(|c| expr(c, f));
        }
    }
    fn place(p: &mut LValue, f: &mut impl FnMut(&mut Expr) -> bool) {
        match p {
            LValue::Var(_) => {}
            LValue::Index { index, .. } => expr(index, f),
            LValue::Field { base, .. } => place(base, f),
        }
    }
    for s in block {
        match &mut s.kind {
            StmtKind::Let { init: Some(e), .. } | StmtKind::Expr(e) | StmtKind::Return(Some(e)) => {
                expr(e, f)
            }
            StmtKind::Assign { place: p, value } => {
                place(p, f);
                expr(value, f);
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                expr(cond, f);
                rewrite_exprs(then_block, f);
                rewrite_exprs(else_block, f);
            }
            StmtKind::For {
                start, end, body, ..
            } => {
                expr(start, f);
                expr(end, f);
                rewrite_exprs(body, f);
            }
            StmtKind::While { cond, body, .. } => {
                expr(cond, f);
                rewrite_exprs(body, f);
            }
            StmtKind::Match {
                scrutinee, arms, ..
            } => {
                expr(scrutinee, f);
                arms.iter_mut().for_each(|a| rewrite_exprs(&mut a.body, f));
            }
            StmtKind::Block(b) => rewrite_exprs(b, f),
            _ => {}
        }
    }
}

/// Whether `e` is the thread's global x index: `global_thread_id`, or
/// `block_idx_x * block_dim_x + thread_idx_x` in either order.
fn is_global_index(e: &Expr) -> bool {
    let geom = |e: &Expr, g: Geometry| matches!(&e.kind, ExprKind::Intrinsic { op: Intrinsic::Geometry(h), .. } if *h == g);
    match &e.kind {
        ExprKind::Intrinsic {
            op: Intrinsic::Geometry(Geometry::GlobalIdx(Axis::X)),
            ..
        } => true,
        ExprKind::Binary {
            op: crate::types::BinOp::Add,
            lhs,
            rhs,
            ..
        } => {
            (is_block_base(lhs) && geom(rhs, Geometry::ThreadIdx(Axis::X)))
                || (is_block_base(rhs) && geom(lhs, Geometry::ThreadIdx(Axis::X)))
        }
        _ => false,
    }
}

/// The producer's body with its global index replaced by `j`.
fn with_index(body: &Block, j: VarId) -> Block {
    let mut body = body.clone();
    rewrite_exprs(&mut body, &mut |e| {
        if is_global_index(e) {
            *e = Expr::new(ExprKind::Var(j), Ty::I32);
            true
        } else {
            false
        }
    });
    body
}

/// Refuse a producer placing a thread by anything but its global index.
pub(super) fn producer_geometry(p: &Kernel) -> Result<(), Refusal> {
    let body = with_index(&p.body, VarId(u32::MAX));
    let mut what = None;
    for b in std::iter::once(&body).chain(p.functions.iter().map(|f| &f.body)) {
        for_each_expr(b, &mut |e| {
            if let ExprKind::Intrinsic {
                op: op @ Intrinsic::Geometry(_),
                ..
            } = &e.kind
            {
                what.get_or_insert_with(|| crate::ir::print::intrinsic_name(*op));
            }
        });
    }
    match what {
        Some(what) => Err(Refusal::ThreadPosition {
            kernel: p.name.clone(),
            what,
        }),
        None => Ok(()),
    }
}

/// The zero value of `ty` in kernel `k` (elements the producer does not store).
fn zero(k: &Kernel, ty: &Ty) -> Expr {
    match ty {
        Ty::Scalar(s) => Expr::lit(match s {
            crate::types::Scalar::Bool => Literal::Bool(false),
            crate::types::Scalar::I32 => Literal::I32(0),
            crate::types::Scalar::I64 => Literal::I64(0),
            crate::types::Scalar::F32 => Literal::F32(0.0),
            crate::types::Scalar::F64 => Literal::F64(0.0),
        }),
        Ty::Record(r) => Expr::new(
            ExprKind::Record {
                record: *r,
                fields: k.record(*r).fields.iter().map(|f| zero(k, &f.ty)).collect(),
            },
            ty.clone(),
        ),
        Ty::Variant(v) => Expr::new(
            ExprKind::Ctor {
                variant: *v,
                ctor: 0,
                fields: k.variant(*v).ctors[0]
                    .fields
                    .iter()
                    .map(|t| zero(k, t))
                    .collect(),
            },
            ty.clone(),
        ),
        Ty::Unit | Ty::Vector(_) | Ty::Array { .. } => {
            unreachable!("vector elements are scalars, records or variants")
        }
    }
}

fn unique(name: &str, taken: &[Function]) -> String {
    let mut n = name.to_string();
    let mut k = 2;
    while taken.iter().any(|f| f.name == n) {
        n = format!("{name}_{k}");
        k += 1;
    }
    n
}

/// Build the fused kernel; the caller has checked every rule.
pub(super) fn fuse(p: &Kernel, c: &Kernel, via: &str) -> Result<Kernel, Refusal> {
    let mut out = c.clone();
    out.name = format!("{}_{}", p.name, c.name);

    // Records and variants: shared by name when declared alike, appended otherwise.
    let mut m = Remap {
        var_offset: out.vars.len() as u32,
        records: Vec::new(),
        variants: Vec::new(),
        funcs: Vec::new(),
        trap_offset: c.traps().iter().map(|(t, _)| t.code).max().unwrap_or(0),
    };
    for r in &p.records {
        let rec = Record {
            name: r.name.clone(),
            fields: r
                .fields
                .iter()
                .map(|f| crate::ir::Field {
                    name: f.name.clone(),
                    ty: m.ty(&f.ty),
                })
                .collect(),
            is_tuple: r.is_tuple,
        };
        let id = match out.records.iter().position(|o| o.name == rec.name) {
            Some(i) if out.records[i] == rec => RecordId(i as u32),
            Some(_) => {
                return Err(Refusal::TypeConflict {
                    what: format!("record `{}`", rec.name),
                });
            }
            None => {
                out.records.push(rec);
                RecordId(out.records.len() as u32 - 1)
            }
        };
        m.records.push(id);
    }
    for v in &p.variants {
        let var = Variant {
            name: v.name.clone(),
            ctors: v
                .ctors
                .iter()
                .map(|c| crate::ir::Ctor {
                    name: c.name.clone(),
                    fields: c.fields.iter().map(|t| m.ty(t)).collect(),
                })
                .collect(),
        };
        let id = match out.variants.iter().position(|o| o.name == var.name) {
            Some(i) if out.variants[i] == var => VariantId(i as u32),
            Some(_) => {
                return Err(Refusal::TypeConflict {
                    what: format!("variant `{}`", var.name),
                });
            }
            None => {
                out.variants.push(var);
                VariantId(out.variants.len() as u32 - 1)
            }
        };
        m.variants.push(id);
    }

    // Variables: the producer's after the consumer's.
    for v in &p.vars {
        out.vars.push(VarInfo {
            name: v.name.clone(),
            ty: m.ty(&v.ty),
            mutable: v.mutable,
            span: v.span,
        });
    }
    let fresh = |out: &mut Kernel, info: VarInfo| {
        out.vars.push(info);
        VarId(out.vars.len() as u32 - 1)
    };

    // The producer's helpers, then `fused_<t>`.
    for i in 0..p.functions.len() {
        m.funcs.push(FuncId((out.functions.len() + i) as u32));
    }
    for f in &p.functions {
        let mut g = f.clone();
        g.name = unique(&f.name, &out.functions);
        g.params = f.params.iter().map(|v| m.var(*v)).collect();
        g.ret = m.ty(&f.ret);
        m.block(&mut g.body);
        out.functions.push(g);
    }
    let pt = super::param_named(p, via).expect("checked");
    let elem = m.ty(p.var(pt).ty.elem().expect("a vector"));
    let j = fresh(
        &mut out,
        VarInfo {
            name: "j".into(),
            ty: Ty::I32,
            mutable: false,
            span: p.span,
        },
    );
    let inputs: Vec<VarId> = p.params.iter().copied().filter(|v| *v != pt).collect();
    let mut body = p.body.clone();
    m.block(&mut body);
    let mut body = with_index(&body, j);
    store_to_return(&mut body, m.var(pt));
    body.push(Stmt {
        kind: StmtKind::Return(Some(zero(&out, &elem))),
        span: p.span,
    });
    let helper = FuncId(out.functions.len() as u32);
    out.functions.push(Function {
        name: unique(&format!("fused_{via}"), &out.functions),
        span: p.span,
        params: std::iter::once(j)
            .chain(inputs.iter().map(|v| m.var(*v)))
            .collect(),
        ret: elem.clone(),
        body,
    });

    // Kernel parameters: the producer's (shared ones are the consumer's), then the rest.
    let ct = super::param_named(c, via).expect("checked");
    let mut params = Vec::new();
    let mut args = Vec::new();
    for &v in &inputs {
        let name = &p.var(v).name;
        let kv = match super::param_named(c, name) {
            Some(cv) => cv,
            None => {
                let info = out.vars[m.var(v).0 as usize].clone();
                fresh(&mut out, info)
            }
        };
        params.push(kv);
        args.push(Expr::new(ExprKind::Var(kv), out.var(kv).ty.clone()));
    }
    for &v in &c.params {
        if v != ct && !params.contains(&v) {
            params.push(v);
        }
    }
    out.params = params;

    // The consumer's reads of `t` become calls.
    rewrite_exprs(&mut out.body, &mut |e| {
        if let ExprKind::Index { base, index } = &mut e.kind
            && *base == ct
        {
            let mut call_args = vec![std::mem::replace(&mut **index, Expr::i32(0))];
            call_args.extend(args.iter().cloned());
            *e = Expr::new(
                ExprKind::Call {
                    func: helper,
                    args: call_args,
                },
                elem.clone(),
            );
            // The index may itself read `t` (`t.(t.(i))` is a gather, refused): nothing below.
            return true;
        }
        false
    });
    Ok(out)
}

/// The producer's one store `t.(G) <- v` becomes `return v`.
fn store_to_return(block: &mut Block, t: VarId) {
    for s in block {
        match &mut s.kind {
            StmtKind::Assign {
                place: LValue::Index { base, .. },
                value,
            } if *base == t => {
                let v = std::mem::replace(value, Expr::i32(0));
                s.kind = StmtKind::Return(Some(v));
            }
            StmtKind::If {
                then_block,
                else_block,
                ..
            } => {
                store_to_return(then_block, t);
                store_to_return(else_block, t);
            }
            StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::Block(body) => {
                store_to_return(body, t)
            }
            StmtKind::Match { arms, .. } => {
                arms.iter_mut()
                    .for_each(|a| store_to_return(&mut a.body, t));
            }
            _ => {}
        }
    }
}
