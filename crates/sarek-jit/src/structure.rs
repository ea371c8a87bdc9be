//! The block schedule of a prepared kernel: its body as a tree of segments (thread loops) and
//! block-uniform nodes (barrier-separated control flow, warp steps), and which variables live
//! across segments (kept per thread in the frame).
//!
//! Every segment, warp step and uniform condition is a *context*; a variable referenced in
//! more than one context is *spilled*: it gets frame slots (one per scalar leaf), loaded at
//! the start of each thread's pass over a segment and stored at its end. Kernel parameters and
//! the counters of uniform loops are block-uniform registers, never spilled.
//!
//! A variable that is cheaper to recompute than to keep (an immutable `let` of thread geometry,
//! parameters and literals, like `let row = block_idx_y * tile + thread_idx_y`) is not spilled:
//! its `let` is repeated at the start of every other segment that reads it. It is the same
//! value everywhere, and the code generator then knows its shape (uniform across consecutive
//! threads, or their thread index plus a constant) instead of reading it back from memory.

use crate::JitError;
use crate::prepare::{is_sync, nested_blocks, own_exprs, walk_expr};
use sarek_compiler::Span;
use sarek_compiler::intrinsics::{Intrinsic, WarpOp};
use sarek_compiler::ir::{Block, Expr, ExprKind, Kernel, LValue, Stmt, StmtKind, Ty, VarId};
use sarek_compiler::types::{BinOp, Literal};
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
    let mut operands = HashSet::new();
    node_operands(&nodes, &mut operands);
    let remat = recomputable(k, &operands);
    let mut spilled: Vec<VarId> = seen
        .iter()
        .filter(|(v, c)| {
            c.len() > 1 && !uniform.contains(v) && is_value(k, **v) && !remat.contains_key(v)
        })
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
    fill_segments(&mut nodes, &slots, &remat);
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

/// Variables read by the block-uniform nodes themselves (conditions, bounds, warp operands):
/// they stay in the frame, where the uniformity check reads them.
fn node_operands(nodes: &[Node], out: &mut HashSet<VarId>) {
    for n in nodes {
        match n {
            Node::Segment(_) => {}
            Node::Warp { dst, a, b, .. } => out.extend([*dst, *a].into_iter().chain(*b)),
            Node::If {
                cond,
                then_n,
                else_n,
                ..
            } => {
                out.insert(*cond);
                node_operands(then_n, out);
                node_operands(else_n, out);
            }
            Node::For {
                start, end, body, ..
            } => {
                out.extend([*start, *end]);
                node_operands(body, out);
            }
            Node::While { cond, body, .. } => {
                out.insert(*cond);
                node_operands(body, out);
            }
        }
    }
}

/// The recomputable variables and their `let` statements: immutable scalars bound once to an
/// expression of literals, kernel parameters, thread geometry and other recomputable
/// variables that can neither fault nor read memory.
fn recomputable(k: &Kernel, operands: &HashSet<VarId>) -> HashMap<VarId, Stmt> {
    let mut lets: HashMap<VarId, (usize, Stmt)> = HashMap::new();
    sarek_compiler::ir::visit::for_each_stmt(&k.body, &mut |s| {
        if let StmtKind::Let { var, init: Some(_) } = &s.kind {
            lets.entry(*var).or_insert((0, s.clone())).0 += 1;
        }
    });
    let params: HashSet<VarId> = k
        .params
        .iter()
        .copied()
        .filter(|p| !k.var(*p).mutable)
        .collect();
    let mut out: HashMap<VarId, Stmt> = HashMap::new();
    // Grow the set until nothing more qualifies (a variable may depend on another).
    loop {
        let before = out.len();
        for (v, (count, s)) in &lets {
            let info = k.var(*v);
            if *count != 1
                || info.mutable
                || out.contains_key(v)
                || operands.contains(v)
                || info.ty.scalar().is_none()
            {
                continue;
            }
            let StmtKind::Let { init: Some(e), .. } = &s.kind else {
                continue;
            };
            if cheap_and_pure(e, &|x| params.contains(&x) || out.contains_key(&x)) {
                out.insert(*v, s.clone());
            }
        }
        if out.len() == before {
            return out;
        }
    }
}

fn cheap_and_pure(e: &Expr, known: &dyn Fn(VarId) -> bool) -> bool {
    match &e.kind {
        ExprKind::Lit(_) => true,
        ExprKind::Var(v) => known(*v),
        ExprKind::Binary { op, lhs, rhs, .. } => {
            let int_div = matches!(op, BinOp::Div | BinOp::Rem)
                && lhs.ty.scalar().is_some_and(|s| s.is_int());
            let nonzero_literal = matches!(
                rhs.kind,
                ExprKind::Lit(Literal::I32(x)) if x != 0 && x != -1
            ) || matches!(rhs.kind, ExprKind::Lit(Literal::I64(x)) if x != 0 && x != -1);
            (!int_div || nonzero_literal)
                && cheap_and_pure(lhs, known)
                && cheap_and_pure(rhs, known)
        }
        ExprKind::Unary { operand, .. } => cheap_and_pure(operand, known),
        ExprKind::Intrinsic { op, args } => {
            matches!(
                op,
                Intrinsic::Geometry(_)
                    | Intrinsic::Convert
                    | Intrinsic::Min
                    | Intrinsic::Max
                    | Intrinsic::Abs
            ) && args.iter().all(|a| cheap_and_pure(a, known))
        }
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => {
            cheap_and_pure(cond, known)
                && cheap_and_pure(then_value, known)
                && cheap_and_pure(else_value, known)
        }
        _ => false,
    }
}

/// The `let`s that recompute `v` (after those of the recomputable variables it reads).
fn remat_lets(
    v: VarId,
    remat: &HashMap<VarId, Stmt>,
    done: &mut HashSet<VarId>,
    out: &mut Vec<Stmt>,
) {
    if !done.insert(v) {
        return;
    }
    let s = &remat[&v];
    let mut deps = Vec::new();
    for e in own_exprs(s) {
        walk_expr(e, &mut |x| {
            if let ExprKind::Var(d) = x.kind
                && remat.contains_key(&d)
            {
                deps.push(d);
            }
        });
    }
    for d in deps {
        remat_lets(d, remat, done, out);
    }
    out.push(s.clone());
}

fn fill_segments(nodes: &mut [Node], slots: &HashMap<VarId, u32>, remat: &HashMap<VarId, Stmt>) {
    for n in nodes {
        match n {
            Node::Segment(s) => {
                // Recompute what the segment reads but does not define.
                let mut done: HashSet<VarId> = s.writes.iter().copied().collect();
                let mut lets = Vec::new();
                for v in &s.refs {
                    if remat.contains_key(v) {
                        remat_lets(*v, remat, &mut done, &mut lets);
                    }
                }
                if !lets.is_empty() {
                    lets.append(&mut s.stmts);
                    s.stmts = lets;
                }
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
                fill_segments(then_n, slots, remat);
                fill_segments(else_n, slots, remat);
            }
            Node::For { body, .. } | Node::While { body, .. } => fill_segments(body, slots, remat),
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
