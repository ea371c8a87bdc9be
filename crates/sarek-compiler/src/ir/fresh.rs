//! Copies of a block with fresh binders.
//!
//! The IR binds each variable once, so a copy of code that lives next to its original (an
//! unrolled loop body, a helper specialised per call shape) needs variables of its own. One
//! copier serves every such pass: each binder met in the copy (`let`, array, `for` index,
//! match binding) becomes a fresh variable like the original, in the order met, and every
//! reference inside the copy follows it. A pass adjusts the copy through [`CopyRules`]
//! (binders that stay shared, calls redirected) instead of walking the IR itself.

use super::{Block, Expr, ExprKind, FuncId, LValue, MatchArm, Stmt, StmtKind, Ty, VarId, VarInfo};
use crate::hash::FxHashMap as HashMap;

/// What a pass decides about a copy; the defaults copy verbatim (with fresh binders).
pub trait CopyRules {
    /// The variable table fresh binders are added to.
    fn vars(&mut self) -> &mut Vec<VarInfo>;

    /// Whether the array declared as `v` stays itself in a copy (specialisation's shared
    /// arrays, which are one array whichever copy runs).
    fn keeps_array(&self, _v: VarId) -> bool {
        false
    }

    /// The copy of a call, given its arguments already copied (in evaluation order).
    fn call(&mut self, func: FuncId, args: Vec<Expr>) -> ExprKind {
        ExprKind::Call { func, args }
    }
}

/// The variable table alone: a verbatim copy with fresh binders.
impl CopyRules for Vec<VarInfo> {
    fn vars(&mut self) -> &mut Vec<VarInfo> {
        self
    }
}

/// The renamings in force while copying one body.
#[derive(Default)]
pub struct Scope {
    /// Old variable -> new: fresh binders, and whatever the pass substituted beforehand (a
    /// helper's parameters).
    pub map: HashMap<VarId, VarId>,
    /// Whether binders get fresh variables; `false` rewrites a body in place of its original
    /// (the kernel body, where only calls change).
    pub fresh: bool,
}

impl Scope {
    /// A scope that gives every binder a fresh variable.
    pub fn fresh() -> Scope {
        Scope {
            map: HashMap::default(),
            fresh: true,
        }
    }

    /// A scope that keeps every binder.
    pub fn keep() -> Scope {
        Scope::default()
    }

    /// What `v` is called in the copy.
    pub fn var(&self, v: VarId) -> VarId {
        self.map.get(&v).copied().unwrap_or(v)
    }
}

/// A fresh variable like `like` (name, mutability, span) of type `ty`, added to `vars`.
pub fn fresh_var(vars: &mut Vec<VarInfo>, like: VarId, ty: Ty) -> VarId {
    let info = VarInfo {
        ty,
        ..vars[like.0 as usize].clone()
    };
    vars.push(info);
    VarId(vars.len() as u32 - 1)
}

/// The copy of `block` under `rules`, renaming through `scope` (which gains the block's
/// binders).
pub fn copy_block<R: CopyRules + ?Sized>(rules: &mut R, scope: &mut Scope, block: &Block) -> Block {
    block.iter().map(|s| copy_stmt(rules, scope, s)).collect()
}

/// A binder: a fresh variable in a fresh scope.
fn bind<R: CopyRules + ?Sized>(rules: &mut R, scope: &mut Scope, v: VarId) -> VarId {
    if !scope.fresh {
        return v;
    }
    let vars = rules.vars();
    let ty = vars[v.0 as usize].ty.clone();
    let n = fresh_var(vars, v, ty);
    scope.map.insert(v, n);
    n
}

fn copy_stmt<R: CopyRules + ?Sized>(rules: &mut R, sc: &mut Scope, s: &Stmt) -> Stmt {
    let kind = match &s.kind {
        StmtKind::Let { var, init } => {
            let init = init.as_ref().map(|e| copy_expr(rules, sc, e));
            StmtKind::Let {
                var: bind(rules, sc, *var),
                init,
            }
        }
        StmtKind::Array { var } => StmtKind::Array {
            var: if rules.keeps_array(*var) {
                *var
            } else {
                bind(rules, sc, *var)
            },
        },
        StmtKind::Assign { place, value } => {
            // The value first, as it is evaluated.
            let value = copy_expr(rules, sc, value);
            StmtKind::Assign {
                place: copy_place(rules, sc, place),
                value,
            }
        }
        StmtKind::Expr(e) => StmtKind::Expr(copy_expr(rules, sc, e)),
        StmtKind::If {
            cond,
            then_block,
            else_block,
        } => StmtKind::If {
            cond: copy_expr(rules, sc, cond),
            then_block: copy_block(rules, sc, then_block),
            else_block: copy_block(rules, sc, else_block),
        },
        StmtKind::For {
            var,
            start,
            end,
            downto,
            body,
            unroll,
        } => {
            let (start, end) = (copy_expr(rules, sc, start), copy_expr(rules, sc, end));
            StmtKind::For {
                var: bind(rules, sc, *var),
                start,
                end,
                downto: *downto,
                body: copy_block(rules, sc, body),
                unroll: *unroll,
            }
        }
        StmtKind::While { cond, body, unroll } => StmtKind::While {
            cond: copy_expr(rules, sc, cond),
            body: copy_block(rules, sc, body),
            unroll: *unroll,
        },
        StmtKind::Match {
            scrutinee,
            variant,
            arms,
        } => StmtKind::Match {
            scrutinee: copy_expr(rules, sc, scrutinee),
            variant: *variant,
            arms: arms
                .iter()
                .map(|a| MatchArm {
                    ctor: a.ctor,
                    bindings: a
                        .bindings
                        .iter()
                        .map(|b| b.map(|v| bind(rules, sc, v)))
                        .collect(),
                    body: copy_block(rules, sc, &a.body),
                })
                .collect(),
        },
        StmtKind::Block(b) => StmtKind::Block(copy_block(rules, sc, b)),
        StmtKind::Return(e) => StmtKind::Return(e.as_ref().map(|e| copy_expr(rules, sc, e))),
        k @ (StmtKind::Barrier
        | StmtKind::Fence { .. }
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Native(_)
        | StmtKind::Trap(_)) => k.clone(),
    };
    Stmt { kind, span: s.span }
}

fn copy_place<R: CopyRules + ?Sized>(rules: &mut R, sc: &mut Scope, p: &LValue) -> LValue {
    match p {
        LValue::Var(v) => LValue::Var(sc.var(*v)),
        LValue::Index { base, index } => LValue::Index {
            base: sc.var(*base),
            index: Box::new(copy_expr(rules, sc, index)),
        },
        LValue::Field { base, field } => LValue::Field {
            base: Box::new(copy_place(rules, sc, base)),
            field: *field,
        },
    }
}

/// The copy of `e`.
pub fn copy_expr<R: CopyRules + ?Sized>(rules: &mut R, sc: &mut Scope, e: &Expr) -> Expr {
    let mut copy = |x: &Expr| copy_expr(rules, sc, x);
    let kind = match &e.kind {
        ExprKind::Lit(l) => ExprKind::Lit(*l),
        ExprKind::Var(v) => ExprKind::Var(sc.var(*v)),
        ExprKind::Binary {
            op,
            lhs,
            rhs,
            nowrap,
        } => ExprKind::Binary {
            op: *op,
            lhs: Box::new(copy(lhs)),
            rhs: Box::new(copy(rhs)),
            nowrap: *nowrap,
        },
        ExprKind::Unary { op, operand } => ExprKind::Unary {
            op: *op,
            operand: Box::new(copy(operand)),
        },
        ExprKind::Index { base, index } => {
            let index = Box::new(copy(index));
            ExprKind::Index {
                base: sc.var(*base),
                index,
            }
        }
        ExprKind::Field { base, field } => ExprKind::Field {
            base: Box::new(copy(base)),
            field: *field,
        },
        ExprKind::Record { record, fields } => ExprKind::Record {
            record: *record,
            fields: fields.iter().map(copy).collect(),
        },
        ExprKind::Ctor {
            variant,
            ctor,
            fields,
        } => ExprKind::Ctor {
            variant: *variant,
            ctor: *ctor,
            fields: fields.iter().map(copy).collect(),
        },
        ExprKind::Tag(x) => ExprKind::Tag(Box::new(copy(x))),
        ExprKind::Payload { value, ctor, field } => ExprKind::Payload {
            value: Box::new(copy(value)),
            ctor: *ctor,
            field: *field,
        },
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => ExprKind::Select {
            cond: Box::new(copy(cond)),
            then_value: Box::new(copy(then_value)),
            else_value: Box::new(copy(else_value)),
        },
        ExprKind::Intrinsic { op, args } => ExprKind::Intrinsic {
            op: *op,
            args: args.iter().map(copy).collect(),
        },
        ExprKind::Call { func, args } => {
            let args = args.iter().map(copy).collect();
            rules.call(*func, args)
        }
    };
    // A substituted array keeps its own type (a sized array where a helper's parameter was
    // unsized); every other expression keeps its type.
    let ty = match &kind {
        ExprKind::Var(v) if matches!(e.ty, Ty::Vector(_) | Ty::Array { .. }) => {
            rules.vars()[v.0 as usize].ty.clone()
        }
        _ => e.ty.clone(),
    };
    Expr { kind, ty }
}
