//! The textual IR printer (`sarek compile --target ir`, insta snapshots).
//!
//! The output is meant for people and for stable snapshots, not for re-parsing. Every variable
//! is printed as `name%id`, so shadowing (two binders named `s`) and legalize renames are both
//! visible at a glance. Expressions are printed fully parenthesised, so the reader never needs
//! the precedence table; every binder shows its type, every `let mut` its mutability.
//!
//! Layout: the kernel header, then the record and variant tables (with their indices, which
//! expressions refer to), then the helpers (callees first), then the kernel itself.

use crate::intrinsics::{AtomicOp, Geometry, Intrinsic, WarpOp};
use crate::ir::{Block, Expr, ExprKind, Kernel, LValue, MatchArm, Stmt, StmtKind, Ty, VarId};
use crate::types::{BinOp, Literal, MemSpace, UnOp};

/// Render `kernel` as readable, deterministic text.
pub fn print_kernel(kernel: &Kernel) -> String {
    let mut p = Printer {
        k: kernel,
        out: String::new(),
        indent: 0,
    };
    p.kernel();
    p.out
}

/// The language-level spelling of a type (`float32 vector`, `point`, `int32 array[64] shared`).
pub fn type_name(kernel: &Kernel, ty: &Ty) -> String {
    match ty {
        Ty::Unit => "unit".into(),
        Ty::Scalar(s) => s.name().into(),
        Ty::Record(id) => kernel
            .records
            .get(id.0 as usize)
            .map_or(format!("record#{}", id.0), |r| r.name.clone()),
        Ty::Variant(id) => kernel
            .variants
            .get(id.0 as usize)
            .map_or(format!("variant#{}", id.0), |v| v.name.clone()),
        Ty::Vector(e) => format!("{} vector", type_name(kernel, e)),
        Ty::Array { elem, space, size } => {
            let space = match space {
                MemSpace::Global => "global",
                MemSpace::Shared => "shared",
                MemSpace::Local => "local",
            };
            match size {
                Some(super::SIZE_BLOCK_DIM_X) => {
                    format!("{} array[block_dim_x] {space}", type_name(kernel, elem))
                }
                Some(n) => format!("{} array[{n}] {space}", type_name(kernel, elem)),
                None => format!("{} array[] {space}", type_name(kernel, elem)),
            }
        }
    }
}

/// The surface name of an intrinsic (`thread_idx_x`, `atomic_add`, `sqrt`, `convert`).
pub fn intrinsic_name(op: Intrinsic) -> String {
    match op {
        Intrinsic::Geometry(g) => match g {
            Geometry::ThreadIdx(a) => format!("thread_idx_{}", a.letter()),
            Geometry::BlockIdx(a) => format!("block_idx_{}", a.letter()),
            Geometry::BlockDim(a) => format!("block_dim_{}", a.letter()),
            Geometry::GridDim(a) => format!("grid_dim_{}", a.letter()),
            Geometry::GlobalIdx(a) => format!("global_idx_{}", a.letter()),
            Geometry::WarpSize => "warp_size".into(),
        },
        Intrinsic::BlockBarrier => "block_barrier".into(),
        Intrinsic::FenceBlock => "memory_fence_block".into(),
        Intrinsic::FenceDevice => "memory_fence_device".into(),
        Intrinsic::Warp(w) => match w {
            WarpOp::Shuffle => "warp_shuffle",
            WarpOp::ShuffleDown => "warp_shuffle_down",
            WarpOp::ShuffleUp => "warp_shuffle_up",
            WarpOp::ShuffleXor => "warp_shuffle_xor",
            WarpOp::VoteAll => "warp_vote_all",
            WarpOp::VoteAny => "warp_vote_any",
            WarpOp::Ballot => "warp_ballot",
        }
        .into(),
        Intrinsic::Atomic(a) => match a {
            AtomicOp::Add => "atomic_add",
            AtomicOp::Sub => "atomic_sub",
            AtomicOp::Min => "atomic_min",
            AtomicOp::Max => "atomic_max",
            AtomicOp::And => "atomic_and",
            AtomicOp::Or => "atomic_or",
            AtomicOp::Xor => "atomic_xor",
            AtomicOp::Exch => "atomic_exch",
            AtomicOp::Cas => "atomic_cas",
            AtomicOp::Inc => "atomic_inc",
            AtomicOp::Dec => "atomic_dec",
        }
        .into(),
        Intrinsic::Math(m) => m.c_name().into(),
        Intrinsic::Abs => "abs".into(),
        Intrinsic::Min => "min".into(),
        Intrinsic::Max => "max".into(),
        Intrinsic::Clz => "clz".into(),
        Intrinsic::Popcount => "popcount".into(),
        Intrinsic::Convert => "convert".into(),
        Intrinsic::Length => "length".into(),
    }
}

/// A literal in the language's own spelling (`1`, `1L`, `1.5`, `1.5d`, `true`).
pub fn literal(l: &Literal) -> String {
    match l {
        Literal::Bool(b) => b.to_string(),
        Literal::I32(v) => v.to_string(),
        Literal::I64(v) => format!("{v}L"),
        // `{:?}` is the shortest round-tripping form and always shows a `.` or exponent.
        Literal::F32(v) => format!("{v:?}"),
        Literal::F64(v) => format!("{v:?}d"),
    }
}

struct Printer<'k> {
    k: &'k Kernel,
    out: String,
    indent: usize,
}

impl Printer<'_> {
    fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn var(&self, id: VarId) -> String {
        match self.k.vars.get(id.0 as usize) {
            Some(v) => format!("{}%{}", v.name, id.0),
            None => format!("<unknown>%{}", id.0),
        }
    }

    fn binder(&self, id: VarId) -> String {
        match self.k.vars.get(id.0 as usize) {
            Some(v) => {
                let m = if v.mutable { "mut " } else { "" };
                format!("{m}{} : {}", self.var(id), type_name(self.k, &v.ty))
            }
            None => self.var(id),
        }
    }

    fn ty(&self, ty: &Ty) -> String {
        type_name(self.k, ty)
    }

    fn kernel(&mut self) {
        let k = self.k;
        self.line(&format!("kernel {}", k.name));
        for (i, r) in k.records.iter().enumerate() {
            let fields: Vec<String> = r
                .fields
                .iter()
                .map(|f| format!("{} : {}", f.name, self.ty(&f.ty)))
                .collect();
            let kind = if r.is_tuple { "tuple record" } else { "record" };
            self.line(&format!(
                "  {kind} #{i} {} {{ {} }}",
                r.name,
                fields.join("; ")
            ));
        }
        for (i, v) in k.variants.iter().enumerate() {
            let ctors: Vec<String> = v
                .ctors
                .iter()
                .enumerate()
                .map(|(j, c)| {
                    if c.fields.is_empty() {
                        format!("{}={j}", c.name)
                    } else {
                        let f: Vec<String> = c.fields.iter().map(|t| self.ty(t)).collect();
                        format!("{}={j} of {}", c.name, f.join(" * "))
                    }
                })
                .collect();
            self.line(&format!(
                "  variant #{i} {} = {}",
                v.name,
                ctors.join(" | ")
            ));
        }
        for (i, f) in k.functions.iter().enumerate() {
            self.out.push('\n');
            let params: Vec<String> = f.params.iter().map(|p| self.binder(*p)).collect();
            self.line(&format!(
                "fun #{i} {}({}) : {} {{",
                f.name,
                params.join(", "),
                self.ty(&f.ret)
            ));
            self.block(&f.body);
            self.line("}");
        }
        self.out.push('\n');
        let params: Vec<String> = k.params.iter().map(|p| self.binder(*p)).collect();
        self.line(&format!("kernel {}({}) {{", k.name, params.join(", ")));
        self.block(&k.body);
        self.line("}");
    }

    fn block(&mut self, b: &Block) {
        self.indent += 1;
        for s in b {
            self.stmt(s);
        }
        self.indent -= 1;
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Let { var, init } => {
                let b = self.binder(*var);
                match init {
                    Some(e) => {
                        let e = self.expr(e);
                        self.line(&format!("let {b} = {e};"))
                    }
                    None => self.line(&format!("let {b};")),
                }
            }
            StmtKind::Array { var } => {
                let b = self.binder(*var);
                self.line(&format!("array {b};"));
            }
            StmtKind::Assign { place, value } => {
                let p = self.place(place);
                let v = self.expr(value);
                self.line(&format!("{p} <- {v};"));
            }
            StmtKind::Expr(e) => {
                let e = self.expr(e);
                self.line(&format!("{e};"));
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let c = self.expr(cond);
                self.line(&format!("if {c} {{"));
                self.block(then_block);
                if else_block.is_empty() {
                    self.line("}");
                } else {
                    self.line("} else {");
                    self.block(else_block);
                    self.line("}");
                }
            }
            StmtKind::For {
                var,
                start,
                end,
                downto,
                body,
                unroll,
            } => {
                let dir = if *downto { "downto" } else { "to" };
                let (v, a, b) = (self.binder(*var), self.expr(start), self.expr(end));
                let u = unroll_hint(*unroll);
                self.line(&format!("for {v} = {a} {dir} {b}{u} {{"));
                self.block(body);
                self.line("}");
            }
            StmtKind::While { cond, body, unroll } => {
                let c = self.expr(cond);
                let u = unroll_hint(*unroll);
                self.line(&format!("while {c}{u} {{"));
                self.block(body);
                self.line("}");
            }
            StmtKind::Match {
                scrutinee,
                variant,
                arms,
            } => {
                let e = self.expr(scrutinee);
                self.line(&format!("match {e} {{"));
                self.indent += 1;
                for arm in arms {
                    self.arm(*variant, arm);
                }
                self.indent -= 1;
                self.line("}");
            }
            StmtKind::Block(b) => {
                self.line("{");
                self.block(b);
                self.line("}");
            }
            StmtKind::Barrier => self.line("barrier;"),
            StmtKind::Fence { device } => self.line(if *device {
                "fence device;"
            } else {
                "fence block;"
            }),
            StmtKind::Return(None) => self.line("return;"),
            StmtKind::Return(Some(e)) => {
                let e = self.expr(e);
                self.line(&format!("return {e};"));
            }
            StmtKind::Break => self.line("break;"),
            StmtKind::Continue => self.line("continue;"),
            StmtKind::Native(src) => self.line(&format!("native {src:?};")),
            StmtKind::Trap(t) => self.line(&format!("trap {} {:?};", t.code, t.message)),
        }
    }

    fn arm(&mut self, variant: crate::ir::VariantId, arm: &MatchArm) {
        let head = match arm.ctor {
            None => "_".to_string(),
            Some(c) => {
                let name = self
                    .k
                    .variants
                    .get(variant.0 as usize)
                    .and_then(|v| v.ctors.get(c as usize))
                    .map_or(format!("ctor#{c}"), |c| c.name.clone());
                if arm.bindings.is_empty() {
                    name
                } else {
                    let b: Vec<String> = arm
                        .bindings
                        .iter()
                        .map(|b| b.map_or("_".to_string(), |v| self.binder(v)))
                        .collect();
                    format!("{name}({})", b.join(", "))
                }
            }
        };
        self.line(&format!("{head} -> {{"));
        self.block(&arm.body);
        self.line("}");
    }

    fn place(&self, p: &LValue) -> String {
        match p {
            LValue::Var(v) => self.var(*v),
            LValue::Index { base, index } => format!("{}.({})", self.var(*base), self.expr(index)),
            LValue::Field { base, field } => {
                let name = self.place_field_name(base, *field);
                format!("{}.{name}", self.place(base))
            }
        }
    }

    /// The type of a place, to name the fields of nested field places.
    fn place_ty(&self, p: &LValue) -> Option<Ty> {
        match p {
            LValue::Var(v) => self.k.vars.get(v.0 as usize).map(|v| v.ty.clone()),
            LValue::Index { base, .. } => self
                .k
                .vars
                .get(base.0 as usize)
                .and_then(|v| v.ty.elem().cloned()),
            LValue::Field { base, field } => match self.place_ty(base)? {
                Ty::Record(id) => self
                    .k
                    .records
                    .get(id.0 as usize)?
                    .fields
                    .get(*field as usize)
                    .map(|f| f.ty.clone()),
                _ => None,
            },
        }
    }

    fn place_field_name(&self, base: &LValue, field: u32) -> String {
        self.field_name(self.place_ty(base).as_ref(), field)
    }

    fn field_name(&self, ty: Option<&Ty>, field: u32) -> String {
        match ty {
            Some(Ty::Record(id)) => self
                .k
                .records
                .get(id.0 as usize)
                .and_then(|r| r.fields.get(field as usize))
                .map_or(format!("#{field}"), |f| f.name.clone()),
            _ => format!("#{field}"),
        }
    }

    fn args(&self, args: &[Expr]) -> String {
        args.iter()
            .map(|a| self.expr(a))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn expr(&self, e: &Expr) -> String {
        match &e.kind {
            ExprKind::Lit(l) => literal(l),
            ExprKind::Var(v) => self.var(*v),
            ExprKind::Binary {
                op,
                lhs,
                rhs,
                nowrap,
            } => {
                let sym = match op {
                    BinOp::Eq => "==",
                    BinOp::Ne => "!=",
                    o => o.symbol(),
                };
                // A step proven not to overflow (`passes::loop_step`).
                let mark = if *nowrap { "nw" } else { "" };
                format!("({} {sym}{mark} {})", self.expr(lhs), self.expr(rhs))
            }
            ExprKind::Unary { op, operand } => {
                let o = self.expr(operand);
                match op {
                    UnOp::Neg => format!("(-{o})"),
                    UnOp::Not => format!("(not {o})"),
                    UnOp::BitNot => format!("(lnot {o})"),
                }
            }
            ExprKind::Index { base, index } => {
                format!("{}.({})", self.var(*base), self.expr(index))
            }
            ExprKind::Field { base, field } => {
                format!(
                    "{}.{}",
                    self.expr(base),
                    self.field_name(Some(&base.ty), *field)
                )
            }
            ExprKind::Record { fields, .. } => {
                let names: Vec<String> = fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| {
                        format!(
                            "{} = {}",
                            self.field_name(Some(&e.ty), i as u32),
                            self.expr(f)
                        )
                    })
                    .collect();
                format!("{} {{ {} }}", self.ty(&e.ty), names.join("; "))
            }
            ExprKind::Ctor {
                variant,
                ctor,
                fields,
            } => {
                let name = self.ctor_name(*variant, *ctor);
                if fields.is_empty() {
                    name
                } else {
                    format!("{name}({})", self.args(fields))
                }
            }
            ExprKind::Tag(v) => format!("tag({})", self.expr(v)),
            ExprKind::Payload { value, ctor, field } => {
                let name = match &value.ty {
                    Ty::Variant(id) => self.ctor_name(*id, *ctor),
                    _ => format!("ctor#{ctor}"),
                };
                format!("{}.{name}_{field}", self.expr(value))
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                format!(
                    "select({}, {}, {})",
                    self.expr(cond),
                    self.expr(then_value),
                    self.expr(else_value)
                )
            }
            ExprKind::Call { func, args } => {
                let name = self
                    .k
                    .functions
                    .get(func.0 as usize)
                    .map_or(format!("fun#{}", func.0), |f| f.name.clone());
                format!("{name}({})", self.args(args))
            }
            ExprKind::Intrinsic { op, args } => {
                let name = intrinsic_name(*op);
                match op {
                    Intrinsic::Convert => {
                        format!("convert<{}>({})", self.ty(&e.ty), self.args(args))
                    }
                    Intrinsic::Geometry(_) if args.is_empty() => name,
                    _ => format!("{name}({})", self.args(args)),
                }
            }
        }
    }

    fn ctor_name(&self, variant: crate::ir::VariantId, ctor: u32) -> String {
        self.k
            .variants
            .get(variant.0 as usize)
            .and_then(|v| v.ctors.get(ctor as usize))
            .map_or(format!("ctor#{ctor}"), |c| c.name.clone())
    }
}

/// `[@unroll N]`, `[@unroll]` for a full unroll, nothing without a hint.
fn unroll_hint(unroll: Option<u32>) -> String {
    match unroll {
        Some(super::UNROLL_FULL) => " [@unroll]".to_string(),
        Some(n) => format!(" [@unroll {n}]"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;
    use crate::ir::VarInfo;
    use crate::types::Scalar;

    #[test]
    fn shadowing_is_visible() {
        let var = |name: &str| VarInfo {
            name: name.into(),
            ty: Ty::F32,
            mutable: false,
            span: Span::DUMMY,
        };
        let k = Kernel {
            name: "k".into(),
            span: Span::DUMMY,
            vars: vec![var("s"), var("s")],
            params: vec![VarId(0)],
            body: vec![Stmt {
                kind: StmtKind::Let {
                    var: VarId(1),
                    init: Some(Expr::new(
                        ExprKind::Binary {
                            op: BinOp::Add,
                            lhs: Box::new(Expr::new(ExprKind::Var(VarId(0)), Ty::F32)),
                            rhs: Box::new(Expr::lit(Literal::F32(1.0))),
                            nowrap: false,
                        },
                        Ty::Scalar(Scalar::F32),
                    )),
                },
                span: Span::DUMMY,
            }],
            records: vec![],
            variants: vec![],
            functions: vec![],
        };
        let text = print_kernel(&k);
        assert!(text.contains("kernel k(s%0 : float32) {"), "{text}");
        assert!(text.contains("let s%1 : float32 = (s%0 + 1.0);"), "{text}");
    }
}
