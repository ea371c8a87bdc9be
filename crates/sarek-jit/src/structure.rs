//! The block schedule of a prepared kernel: its body as a tree of segments (thread loops) and
//! block-uniform nodes (barrier-separated control flow, warp steps), and which variables live
//! across segments (kept per thread in the frame).
//!
//! Every segment, warp step and uniform condition is a *context*; a variable referenced in
//! more than one context is *spilled*: it gets frame slots (one per scalar leaf), loaded at
//! the start of each thread's pass over a segment and stored at its end. Kernel parameters and
//! the counters of uniform loops are block-uniform registers, never spilled.

use crate::JitError;
use crate::prepare::{is_sync, nested_blocks, own_exprs, walk_expr};
use sarek_compiler::Span;
use sarek_compiler::intrinsics::{Intrinsic, WarpOp};
use sarek_compiler::ir::{Block, Expr, ExprKind, Kernel, LValue, Stmt, StmtKind, Ty, VarId};
use std::collections::{BTreeSet, HashMap, HashSet};

pub(crate) struct Segment {
    pub stmts: Vec<Stmt>,
    /// Spilled variables the segment references (loaded per thread at its start).
    pub loads: Vec<VarId>,
    /// Spilled variables the segment writes (stored per thread at its end).
    pub stores: Vec<VarId>,
    refs: BTreeSet<VarId>,
    writes: BTreeSet<VarId>,
}

pub(crate) enum Node {
    Segment(Segment),
    /// `dst = op a b` across each warp.
    Warp {
        dst: VarId,
        op: WarpOp,
        a: VarId,
        b: Option<VarId>,
        span: Span,
    },
    If {
        cond: VarId,
        then_n: Vec<Node>,
        else_n: Vec<Node>,
        span: Span,
    },
    For {
        var: VarId,
        start: VarId,
        end: VarId,
        downto: bool,
        body: Vec<Node>,
        span: Span,
    },
    While {
        cond: VarId,
        body: Vec<Node>,
        span: Span,
    },
}

pub(crate) struct Tree {
    pub nodes: Vec<Node>,
    /// First frame slot of each spilled variable (one slot per leaf).
    pub slots: HashMap<VarId, u32>,
    pub nslots: u32,
}

pub(crate) fn is_value(k: &Kernel, v: VarId) -> bool {
    !matches!(k.var(v).ty, Ty::Vector(_) | Ty::Array { .. } | Ty::Unit)
}

pub(crate) fn leaf_count(k: &Kernel, v: VarId) -> u32 {
    sarek_compiler::abi::leaves(k, &k.var(v).ty).len() as u32
}

pub(crate) fn build(k: &Kernel) -> Result<Tree, JitError> {
    let mut b = Builder { k, ctx: Vec::new() };
    let mut nodes = b.nodes(&k.body)?;
    let mut uniform: HashSet<VarId> = k.params.iter().copied().collect();
    collect_uniform_for(&nodes, &mut uniform);
    // Contexts per variable.
    let mut seen: HashMap<VarId, BTreeSet<usize>> = HashMap::new();
    for (ctx, vars) in b.ctx.iter().enumerate() {
        for v in vars {
            seen.entry(*v).or_default().insert(ctx);
        }
    }
    let mut spilled: Vec<VarId> = seen
        .iter()
        .filter(|(v, c)| c.len() > 1 && !uniform.contains(v) && is_value(k, **v))
        .map(|(v, _)| *v)
        .collect();
    spilled.sort();
    for p in &k.params {
        if k.var(*p).mutable && seen.get(p).is_some_and(|c| c.len() > 1) {
            return Err(JitError::Unsupported {
                kernel: k.name.clone(),
                what: "a mutable kernel parameter used across barriers".into(),
                span: k.var(*p).span,
            });
        }
    }
    let mut slots = HashMap::new();
    let mut nslots = 0;
    for v in &spilled {
        slots.insert(*v, nslots);
        nslots += leaf_count(k, *v);
    }
    fill_segments(&mut nodes, &slots);
    Ok(Tree {
        nodes,
        slots,
        nslots,
    })
}

fn collect_uniform_for(nodes: &[Node], out: &mut HashSet<VarId>) {
    for n in nodes {
        match n {
            Node::For { var, body, .. } => {
                out.insert(*var);
                collect_uniform_for(body, out);
            }
            Node::If { then_n, else_n, .. } => {
                collect_uniform_for(then_n, out);
                collect_uniform_for(else_n, out);
            }
            Node::While { body, .. } => collect_uniform_for(body, out),
            _ => {}
        }
    }
}

fn fill_segments(nodes: &mut [Node], slots: &HashMap<VarId, u32>) {
    for n in nodes {
        match n {
            Node::Segment(s) => {
                s.loads = s
                    .refs
                    .iter()
                    .filter(|v| slots.contains_key(v))
                    .copied()
                    .collect();
                s.stores = s
                    .writes
                    .iter()
                    .filter(|v| slots.contains_key(v))
                    .copied()
                    .collect();
            }
            Node::If { then_n, else_n, .. } => {
                fill_segments(then_n, slots);
                fill_segments(else_n, slots);
            }
            Node::For { body, .. } | Node::While { body, .. } => fill_segments(body, slots),
            Node::Warp { .. } => {}
        }
    }
}

struct Builder<'k> {
    k: &'k Kernel,
    /// Variables referenced per context.
    ctx: Vec<Vec<VarId>>,
}

fn var_of(e: &Expr) -> Option<VarId> {
    match e.kind {
        ExprKind::Var(v) => Some(v),
        _ => None,
    }
}

impl Builder<'_> {
    fn internal(&self, what: &str, span: Span) -> JitError {
        JitError::Unsupported {
            kernel: self.k.name.clone(),
            what: what.into(),
            span,
        }
    }

    fn nodes(&mut self, block: &Block) -> Result<Vec<Node>, JitError> {
        let mut out = Vec::new();
        let mut cur: Vec<Stmt> = Vec::new();
        self.nodes_into(block, &mut out, &mut cur)?;
        self.flush(&mut out, &mut cur);
        Ok(out)
    }

    fn flush(&mut self, out: &mut Vec<Node>, cur: &mut Vec<Stmt>) {
        if cur.is_empty() {
            return;
        }
        let stmts = std::mem::take(cur);
        let (mut refs, mut writes) = (BTreeSet::new(), BTreeSet::new());
        for s in &stmts {
            stmt_vars(s, &mut refs, &mut writes);
        }
        self.ctx.push(refs.iter().copied().collect());
        out.push(Node::Segment(Segment {
            stmts,
            loads: Vec::new(),
            stores: Vec::new(),
            refs,
            writes,
        }));
    }

    fn nodes_into(
        &mut self,
        block: &Block,
        out: &mut Vec<Node>,
        cur: &mut Vec<Stmt>,
    ) -> Result<(), JitError> {
        for s in block {
            if !is_sync(s) {
                cur.push(s.clone());
                continue;
            }
            self.flush(out, cur);
            let span = s.span;
            match &s.kind {
                StmtKind::Barrier => {}
                StmtKind::Block(b) => {
                    self.nodes_into(b, out, cur)?;
                    self.flush(out, cur);
                }
                StmtKind::Let {
                    var,
                    init:
                        Some(Expr {
                            kind:
                                ExprKind::Intrinsic {
                                    op: Intrinsic::Warp(op),
                                    args,
                                },
                            ..
                        }),
                } => {
                    let a = args.first().and_then(var_of);
                    let b = args.get(1).and_then(var_of);
                    let Some(a) = a else {
                        return Err(self.internal("a warp operation without operands", span));
                    };
                    let mut refs = vec![*var, a];
                    refs.extend(b);
                    self.ctx.push(refs);
                    out.push(Node::Warp {
                        dst: *var,
                        op: *op,
                        a,
                        b,
                        span,
                    });
                }
                StmtKind::If {
                    cond,
                    then_block,
                    else_block,
                } => {
                    let cond = var_of(cond).ok_or_else(|| self.internal("a condition", span))?;
                    self.ctx.push(vec![cond]);
                    let then_n = self.nodes(then_block)?;
                    let else_n = self.nodes(else_block)?;
                    out.push(Node::If {
                        cond,
                        then_n,
                        else_n,
                        span,
                    });
                }
                StmtKind::For {
                    var,
                    start,
                    end,
                    downto,
                    body,
                    ..
                } => {
                    let (Some(start), Some(end)) = (var_of(start), var_of(end)) else {
                        return Err(self.internal("loop bounds", span));
                    };
                    self.ctx.push(vec![start, end]);
                    let body = self.nodes(body)?;
                    out.push(Node::For {
                        var: *var,
                        start,
                        end,
                        downto: *downto,
                        body,
                        span,
                    });
                }
                StmtKind::While { cond, body, .. } => {
                    let cond = var_of(cond).ok_or_else(|| self.internal("a condition", span))?;
                    self.ctx.push(vec![cond]);
                    let body = self.nodes(body)?;
                    out.push(Node::While { cond, body, span });
                }
                _ => return Err(self.internal("this synchronising statement", span)),
            }
        }
        Ok(())
    }
}

/// Value variables a statement references, and those it writes.
fn stmt_vars(s: &Stmt, refs: &mut BTreeSet<VarId>, writes: &mut BTreeSet<VarId>) {
    for e in own_exprs(s) {
        walk_expr(e, &mut |x| {
            if let ExprKind::Var(v) = x.kind {
                refs.insert(v);
            }
        });
    }
    match &s.kind {
        StmtKind::Let { var, .. } | StmtKind::For { var, .. } => {
            refs.insert(*var);
            writes.insert(*var);
        }
        StmtKind::Assign { place, .. } => {
            let mut p = place;
            while let LValue::Field { base, .. } = p {
                p = base;
            }
            if let LValue::Var(v) = p {
                refs.insert(*v);
                writes.insert(*v);
            }
        }
        StmtKind::Match { arms, .. } => {
            for a in arms {
                for v in a.bindings.iter().flatten() {
                    refs.insert(*v);
                    writes.insert(*v);
                }
            }
        }
        _ => {}
    }
    for b in nested_blocks(s) {
        for s in b {
            stmt_vars(s, refs, writes);
        }
    }
}
