//! The SIMT executor: runs one block of a resolved [`Program`] with all its threads in lockstep.
//!
//! Each register holds one word per thread of the block. A statement runs for a *mask*, the
//! sorted list of the threads executing it: `if` splits the mask, loops iterate until no
//! thread is left, `break`/`continue`/`return` park threads until their loop iteration or
//! call ends. Pure operations compute every lane while most threads are active (a straight
//! loop; results in inactive lanes are never read), only the mask's lanes otherwise.
//! Operations that can fault or have effects (memory, integer division, calls, atomics, warp
//! operations) touch only the lanes of the mask, in thread order.
//!
//! Because all threads of a block advance together, a barrier is correct exactly when the
//! whole block reaches it, which is checked (a partial mask is a fault), and a warp
//! operation sees its warp's values in the same step. A warp is 32 consecutive threads in
//! linear order (x fastest); a warp operation must be reached by every thread of its warp.

use super::compile::{Arg, Arm, Expr, ExprKind, FParam, MemKind, Program, Reg, Stmt, StmtKind};
use super::scalar::*;
use crate::device::RuntimeError;
use sarek_compiler::Span;
use sarek_compiler::intrinsics::WarpOp;
use sarek_compiler::types::{BinOp, Scalar};
use std::sync::atomic::{AtomicU64, Ordering};

/// Threads per warp, for warp operations and `warp_size`.
pub const WARP_SIZE: u32 = 32;

type R<T> = Result<T, RuntimeError>;
type Mask = Vec<u32>;

/// Device memory of one launch: every vector parameter as one atomic column per leaf, so that
/// blocks running in parallel share it without data races (plain accesses are relaxed loads
/// and stores, atomics are compare-and-swap loops).
pub(crate) struct Globals {
    pub vecs: Vec<GVec>,
}

pub(crate) struct GVec {
    pub len: usize,
    pub cols: Vec<Vec<AtomicU64>>,
}

/// A shared or per-thread array of one block: columns per leaf, and which elements were
/// written (to report reads of memory no thread wrote).
struct Arr {
    /// Elements per owner (the block, or each thread for local arrays).
    size: usize,
    cols: Vec<Vec<u64>>,
    written: Vec<Vec<bool>>,
    /// Per leaf, how many elements are still unwritten: once 0, reads skip the check.
    unwritten: Vec<usize>,
}

impl Arr {
    fn new(size: usize, leaves: usize, owners: usize) -> Arr {
        Arr {
            size,
            cols: vec![vec![0; size * owners]; leaves],
            written: vec![vec![false; size * owners]; leaves],
            unwritten: vec![size * owners; leaves],
        }
    }
    fn reset(&mut self) {
        self.cols.iter_mut().for_each(|c| c.fill(0));
        self.written.iter_mut().for_each(|c| c.fill(false));
        let len = self.written.first().map_or(0, Vec::len);
        self.unwritten.iter_mut().for_each(|u| *u = len);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MemRef {
    Global(u32),
    Shared(u32),
    Local(u32),
    Unbound,
}

#[derive(Default)]
struct LoopCtx {
    brk: Mask,
    cont: Mask,
}

/// Per-thread-pool-worker state: the register file and block-local memory, reused from block
/// to block.
pub(crate) struct Worker {
    n: usize,
    dims: [u32; 3],
    regs: Vec<Vec<u64>>,
    shared: Vec<Arr>,
    local: Vec<Arr>,
    bind: Vec<MemRef>,
    loops: Vec<LoopCtx>,
    rets: Vec<Mask>,
}

impl Worker {
    pub(crate) fn new(p: &Program, block: [u32; 3], grid: [u32; 3]) -> Worker {
        let n = block.iter().product::<u32>() as usize;
        let mut regs = vec![vec![0u64; n]; p.nregs];
        for (r, v) in &p.consts {
            regs[*r as usize].fill(*v);
        }
        for (a, &r) in p.geo.thread.iter().enumerate() {
            for (t, slot) in regs[r as usize].iter_mut().enumerate() {
                let (x, y, z) = coords(t as u32, block);
                *slot = w32([x, y, z][a] as i32);
            }
        }
        for a in 0..3 {
            regs[p.geo.block_dim[a] as usize].fill(w32(block[a] as i32));
            regs[p.geo.grid_dim[a] as usize].fill(w32(grid[a] as i32));
        }
        regs[p.geo.warp_size as usize].fill(w32(WARP_SIZE as i32));
        Worker {
            n,
            dims: block,
            regs,
            shared: p
                .shared
                .iter()
                .map(|s| Arr::new(s.size, s.leaves, 1))
                .collect(),
            local: p
                .local
                .iter()
                .map(|s| Arr::new(s.size, s.leaves, n))
                .collect(),
            bind: vec![MemRef::Unbound; p.mems.len()],
            loops: Vec::new(),
            rets: Vec::new(),
        }
    }
}

fn coords(t: u32, dims: [u32; 3]) -> (u32, u32, u32) {
    (
        t % dims[0],
        (t / dims[0]) % dims[1],
        t / (dims[0] * dims[1]),
    )
}

/// Run block `block` of the launch to completion.
pub(crate) fn run_block(p: &Program, g: &Globals, w: &mut Worker, block: [u32; 3]) -> R<()> {
    for (a, &b) in block.iter().enumerate() {
        let (br, gr, tr) = (
            p.geo.block[a] as usize,
            p.geo.global[a] as usize,
            p.geo.thread[a] as usize,
        );
        w.regs[br].fill(w32(b as i32));
        let base = (b as i32).wrapping_mul(w.dims[a] as i32);
        let mut global = std::mem::take(&mut w.regs[gr]);
        for (g, &tid) in global.iter_mut().zip(&w.regs[tr]) {
            *g = w32(base.wrapping_add(r32(tid)));
        }
        w.regs[gr] = global;
    }
    w.shared.iter_mut().for_each(Arr::reset);
    w.local.iter_mut().for_each(Arr::reset);
    for (i, m) in p.mems.iter().enumerate() {
        w.bind[i] = match m.kind {
            MemKind::Global(g) => MemRef::Global(g),
            MemKind::Shared(s) => MemRef::Shared(s),
            MemKind::Local(l) => MemRef::Local(l),
            MemKind::Bound => MemRef::Unbound,
        };
    }
    w.loops.clear();
    w.rets.clear();
    w.rets.push(Vec::new());
    let all: Mask = (0..w.n as u32).collect();
    let mut ex = Exec {
        p,
        g,
        w,
        block,
        span: Span::DUMMY,
    };
    ex.block(&p.body, all)?;
    Ok(())
}

/// Everything a fault message needs, copied out so it can be used while registers are
/// borrowed.
#[derive(Clone, Copy)]
struct Loc<'a> {
    kernel: &'a str,
    block: [u32; 3],
    dims: [u32; 3],
    span: Span,
}

impl Loc<'_> {
    fn fault(&self, t: u32, what: impl std::fmt::Display) -> RuntimeError {
        let (x, y, z) = coords(t, self.dims);
        let [bx, by, bz] = self.block;
        RuntimeError::Fault {
            span: self.span,
            message: format!(
                "{what} in kernel `{}`, block ({bx},{by},{bz}), thread ({x},{y},{z})",
                self.kernel
            ),
        }
    }
}

struct Exec<'a, 'w> {
    p: &'a Program,
    g: &'a Globals,
    w: &'w mut Worker,
    block: [u32; 3],
    span: Span,
}

/// Sorted union of two sorted lane lists.
/// Split an owned lane list by `pred` (on the thread index), without copying in the common
/// cases where every lane, or none, satisfies it.
fn split_by(mask: Mask, pred: impl Fn(usize) -> bool) -> (Mask, Mask) {
    match mask.iter().position(|&t| !pred(t as usize)) {
        None => (mask, Mask::new()),
        Some(0) if mask.iter().all(|&t| !pred(t as usize)) => (Mask::new(), mask),
        Some(_) => mask.into_iter().partition(|&t| pred(t as usize)),
    }
}

fn union(a: Mask, b: Mask) -> Mask {
    if a.is_empty() {
        return b;
    }
    if b.is_empty() {
        return a;
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

impl<'a> Exec<'a, '_> {
    fn loc(&self) -> Loc<'a> {
        Loc {
            kernel: &self.p.name,
            block: self.block,
            dims: self.w.dims,
            span: self.span,
        }
    }

    fn full(&self, mask: &[u32]) -> bool {
        mask.len() == self.w.n
    }

    /// Split `mask` by the boolean register `r`.
    fn split(&self, mask: Mask, r: Reg) -> (Mask, Mask) {
        let c = &self.w.regs[r as usize];
        split_by(mask, |t| c[t] != 0)
    }

    /// Lanes a pure operation computes under `mask`: all of them unless few are active.
    fn lanes<'m>(&self, mask: &'m [u32]) -> Lanes<'m> {
        if mask.len() * 2 >= self.w.n {
            Lanes::All
        } else {
            Lanes::Only(mask)
        }
    }

    /// Copy `n` leaves from `src` to `dst` on the lanes of `mask`.
    fn copy(&mut self, dst: Reg, src: Reg, n: u32, mask: &[u32]) {
        if dst == src {
            return;
        }
        let full = self.full(mask);
        let regs = &mut self.w.regs;
        for l in 0..n {
            let mut out = std::mem::take(&mut regs[(dst + l) as usize]);
            let from = &regs[(src + l) as usize];
            if full {
                out.copy_from_slice(from);
            } else {
                for &t in mask {
                    out[t as usize] = from[t as usize];
                }
            }
            regs[(dst + l) as usize] = out;
        }
    }

    fn block(&mut self, stmts: &'a [Stmt], mut mask: Mask) -> R<Mask> {
        for s in stmts {
            if mask.is_empty() {
                break;
            }
            mask = self.stmt(s, mask)?;
        }
        Ok(mask)
    }

    fn stmt(&mut self, s: &'a Stmt, mask: Mask) -> R<Mask> {
        self.span = s.span;
        match &s.kind {
            StmtKind::Nop => Ok(mask),
            StmtKind::Eval(e) => {
                self.eval(e, &mask)?;
                Ok(mask)
            }
            StmtKind::SetReg { dst, value } => {
                self.eval(value, &mask)?;
                self.copy(*dst, value.dst, value.n, &mask);
                Ok(mask)
            }
            StmtKind::Store {
                mem,
                index,
                off,
                value,
            } => {
                self.eval(index, &mask)?;
                self.eval(value, &mask)?;
                self.store(*mem, index.dst, *off, value, &mask)?;
                Ok(mask)
            }
            StmtKind::BindMem { dst, src } => {
                self.w.bind[*dst as usize] = self.w.bind[*src as usize];
                Ok(mask)
            }
            StmtKind::If {
                cond,
                then_b,
                else_b,
            } => {
                self.eval(cond, &mask)?;
                let (t, f) = self.split(mask, cond.dst);
                let t = if t.is_empty() {
                    t
                } else {
                    self.block(then_b, t)?
                };
                let f = if f.is_empty() {
                    f
                } else {
                    self.block(else_b, f)?
                };
                Ok(union(t, f))
            }
            StmtKind::For {
                var,
                cnt,
                end,
                start,
                stop,
                downto,
                body,
            } => {
                self.eval(start, &mask)?;
                self.eval(stop, &mask)?;
                // Counters are int64 so that `for i = a to max_int` terminates.
                for &t in &mask {
                    let t = t as usize;
                    let regs = &mut self.w.regs;
                    regs[*cnt as usize][t] = w64(r32(regs[start.dst as usize][t]) as i64);
                    regs[*end as usize][t] = w64(r32(regs[stop.dst as usize][t]) as i64);
                }
                let step: i64 = if *downto { -1 } else { 1 };
                let (mut active, mut done) = (mask, Mask::new());
                loop {
                    let regs = &self.w.regs;
                    let (c, e) = (&regs[*cnt as usize], &regs[*end as usize]);
                    let (go, stop) = split_by(active, |t| {
                        let (c, e) = (r64(c[t]), r64(e[t]));
                        if *downto { c >= e } else { c <= e }
                    });
                    done = union(done, stop);
                    if go.is_empty() {
                        break;
                    }
                    let regs = &mut self.w.regs;
                    let mut v = std::mem::take(&mut regs[*var as usize]);
                    let c = &regs[*cnt as usize];
                    for &t in &go {
                        v[t as usize] = w32(r64(c[t as usize]) as i32);
                    }
                    regs[*var as usize] = v;
                    self.w.loops.push(LoopCtx::default());
                    let out = self.block(body, go)?;
                    let ctx = self.w.loops.pop().expect("loop context pushed above");
                    let next = union(out, ctx.cont);
                    done = union(done, ctx.brk);
                    let c = &mut self.w.regs[*cnt as usize];
                    for &t in &next {
                        c[t as usize] = w64(r64(c[t as usize]) + step);
                    }
                    active = next;
                }
                Ok(done)
            }
            StmtKind::While { cond, body } => {
                let (mut active, mut done) = (mask, Mask::new());
                loop {
                    self.span = s.span;
                    self.eval(cond, &active)?;
                    let (go, stop) = self.split(active, cond.dst);
                    done = union(done, stop);
                    if go.is_empty() {
                        break;
                    }
                    self.w.loops.push(LoopCtx::default());
                    let out = self.block(body, go)?;
                    let ctx = self.w.loops.pop().expect("loop context pushed above");
                    active = union(out, ctx.cont);
                    done = union(done, ctx.brk);
                }
                Ok(done)
            }
            StmtKind::Match { scrut, arms } => self.match_(s.span, scrut, arms, mask),
            StmtKind::Block(b) => self.block(b, mask),
            StmtKind::Barrier => {
                if !self.full(&mask) {
                    let missing = (0..self.w.n as u32)
                        .find(|t| mask.binary_search(t).is_err())
                        .unwrap_or(0);
                    let (x, y, z) = coords(missing, self.w.dims);
                    return Err(self.loc().fault(
                        mask[0],
                        format!(
                            "block barrier reached by only {} of the {} threads of the block \
                             (thread ({x},{y},{z}) does not reach it)",
                            mask.len(),
                            self.w.n
                        ),
                    ));
                }
                Ok(mask)
            }
            StmtKind::Trap(message) => match mask.first() {
                Some(&t) => Err(self.loc().fault(t, message)),
                None => Ok(mask),
            },
            StmtKind::Return { value, ret } => {
                if let Some(v) = value {
                    self.eval(v, &mask)?;
                    self.copy(*ret, v.dst, v.n, &mask);
                }
                let r = self.w.rets.last_mut().expect("a function context");
                *r = union(std::mem::take(r), mask);
                Ok(Mask::new())
            }
            StmtKind::Break | StmtKind::Continue => {
                let Some(ctx) = self.w.loops.last_mut() else {
                    return Err(RuntimeError::Compile(
                        "`break`/`continue` outside a loop".into(),
                    ));
                };
                let slot = if matches!(s.kind, StmtKind::Break) {
                    &mut ctx.brk
                } else {
                    &mut ctx.cont
                };
                *slot = union(std::mem::take(slot), mask);
                Ok(Mask::new())
            }
        }
    }

    fn match_(&mut self, span: Span, scrut: &'a Expr, arms: &'a [Arm], mask: Mask) -> R<Mask> {
        self.eval(scrut, &mask)?;
        let mut remaining = mask;
        let mut out = Mask::new();
        for arm in arms {
            let lanes: Mask = match arm.ctor {
                Some(c) => {
                    let tag = &self.w.regs[scrut.dst as usize];
                    let (mine, rest) = split_by(remaining, |t| r32(tag[t]) == c as i32);
                    remaining = rest;
                    mine
                }
                None => std::mem::take(&mut remaining),
            };
            if lanes.is_empty() {
                continue;
            }
            for &(dst, src, n) in &arm.binds {
                self.copy(dst, src, n, &lanes);
            }
            let o = self.block(&arm.body, lanes)?;
            out = union(out, o);
        }
        if let Some(&t) = remaining.first() {
            self.span = span;
            let tag = r32(self.w.regs[scrut.dst as usize][t as usize]);
            return Err(self
                .loc()
                .fault(t, format!("variant value with invalid tag {tag} matched")));
        }
        Ok(out)
    }

    fn eval(&mut self, e: &'a Expr, mask: &[u32]) -> R<()> {
        let d = e.dst;
        let lanes = self.lanes(mask);
        match &e.kind {
            ExprKind::Ready => {}
            ExprKind::Part(b) => self.eval(b, mask)?,
            ExprKind::Bin {
                op,
                ty,
                a,
                b,
                guarded,
            } => {
                self.eval(a, mask)?;
                if *guarded {
                    // Short circuit: the right operand runs only where it decides the result.
                    let and = *op == BinOp::And;
                    let lhs = &self.w.regs[a.dst as usize];
                    let sub: Mask = mask
                        .iter()
                        .copied()
                        .filter(|&t| (lhs[t as usize] != 0) == and)
                        .collect();
                    if !sub.is_empty() {
                        self.eval(b, &sub)?;
                    }
                    if and {
                        map2(&mut self.w.regs, lanes, d, a.dst, b.dst, |x, y| {
                            if x != 0 { y } else { 0 }
                        });
                    } else {
                        map2(&mut self.w.regs, lanes, d, a.dst, b.dst, |x, y| {
                            if x != 0 { 1 } else { y }
                        });
                    }
                } else {
                    self.eval(b, mask)?;
                    if ty.is_int() && matches!(op, BinOp::Div | BinOp::Rem) {
                        let divisor = &self.w.regs[b.dst as usize];
                        if let Some(&t) = mask
                            .iter()
                            .find(|&&t| divisor[t as usize] & mask_of(*ty) == 0)
                        {
                            let what = if *op == BinOp::Div {
                                "integer division by zero"
                            } else {
                                "integer `mod` by zero"
                            };
                            return Err(self.loc().fault(t, what));
                        }
                    }
                    binary(&mut self.w.regs, lanes, *op, *ty, d, a.dst, b.dst);
                }
            }
            ExprKind::Un { op, ty, a } => {
                self.eval(a, mask)?;
                unary(&mut self.w.regs, lanes, *op, *ty, d, a.dst);
            }
            ExprKind::IntFn { f, ty, a } => {
                self.eval(a, mask)?;
                int_fn(&mut self.w.regs, lanes, *f, *ty, d, a.dst);
            }
            ExprKind::MinMax { max, ty, a, b } => {
                self.eval(a, mask)?;
                self.eval(b, mask)?;
                min_max(&mut self.w.regs, lanes, *max, *ty, d, a.dst, b.dst);
            }
            ExprKind::Math { f, ty, args } => {
                for a in args {
                    self.eval(a, mask)?;
                }
                let r = |i: usize| args.get(i).map_or(args[0].dst, |a| a.dst);
                let (a, b, c) = (r(0), r(1), r(2));
                let f = *f;
                let regs = &mut self.w.regs;
                match ty {
                    Scalar::F64 => map3(regs, lanes, d, a, b, c, |x, y, z| {
                        wf64(math64(f, rf64(x), rf64(y), rf64(z)))
                    }),
                    _ => map3(regs, lanes, d, a, b, c, |x, y, z| {
                        wf32(math32(f, rf32(x), rf32(y), rf32(z)))
                    }),
                }
            }
            ExprKind::Convert { from, to, a } => {
                self.eval(a, mask)?;
                let (from, to) = (*from, *to);
                map1(&mut self.w.regs, lanes, d, a.dst, |x| convert(x, from, to));
            }
            ExprKind::Load { mem, index, off } => {
                self.eval(index, mask)?;
                self.load(*mem, index.dst, *off as usize, e, mask)?;
            }
            ExprKind::Pack { tag, parts, zero } => {
                for (_, p) in parts {
                    self.eval(p, mask)?;
                }
                if let Some(t) = tag {
                    self.copy(d, *t, 1, mask);
                }
                for (off, p) in parts {
                    self.copy(d + off, p.dst, p.n, mask);
                }
                for z in zero {
                    self.w.regs[(d + z) as usize].fill(0);
                }
            }
            ExprKind::Select { cond, a, b, split } => {
                self.eval(cond, mask)?;
                if *split {
                    let (t, f) = self.split(mask.to_vec(), cond.dst);
                    if !t.is_empty() {
                        self.eval(a, &t)?;
                    }
                    if !f.is_empty() {
                        self.eval(b, &f)?;
                    }
                } else {
                    self.eval(a, mask)?;
                    self.eval(b, mask)?;
                }
                for l in 0..e.n {
                    map3(
                        &mut self.w.regs,
                        lanes,
                        d + l,
                        cond.dst,
                        a.dst + l,
                        b.dst + l,
                        |c, x, y| if c != 0 { x } else { y },
                    );
                }
            }
            ExprKind::Call { func, args } => {
                for a in args {
                    if let Arg::Value(v) = a {
                        self.eval(v, mask)?;
                    }
                }
                let f = &self.p.funcs[*func as usize];
                for (p, a) in f.params.iter().zip(args) {
                    match (p, a) {
                        (FParam::Value { reg, n }, Arg::Value(v)) => {
                            self.copy(*reg, v.dst, *n, mask)
                        }
                        (FParam::Mem(m), Arg::Mem(src)) => {
                            self.w.bind[*m as usize] = self.w.bind[*src as usize]
                        }
                        _ => {
                            return Err(RuntimeError::Compile(
                                "argument kind mismatch in a helper call".into(),
                            ));
                        }
                    }
                }
                let span = self.span;
                self.w.rets.push(Mask::new());
                // Nests once per helper of a call chain.
                sarek_compiler::stack::grow(|| self.block(&f.body, mask.to_vec()))?;
                self.w.rets.pop();
                self.span = span;
                self.copy(d, f.ret, e.n, mask);
            }
            ExprKind::Atomic {
                op,
                ty,
                mem,
                index,
                vals,
            } => {
                self.eval(index, mask)?;
                for v in vals {
                    self.eval(v, mask)?;
                }
                self.atomic(*op, *ty, *mem, index.dst, vals, d, mask)?;
            }
            ExprKind::Warp { op, a, b } => {
                self.eval(a, mask)?;
                if let Some(b) = b {
                    self.eval(b, mask)?;
                }
                self.check_warps(mask)?;
                self.warp(*op, a, b.as_deref(), e, mask);
            }
            ExprKind::Length { mem } => {
                let len = match self.w.bind[*mem as usize] {
                    MemRef::Global(g) => self.g.vecs[g as usize].len,
                    MemRef::Shared(s) => self.w.shared[s as usize].size,
                    MemRef::Local(l) => self.w.local[l as usize].size,
                    MemRef::Unbound => return Err(self.unbound(*mem)),
                };
                self.w.regs[d as usize].fill(w32(len as i32));
            }
        }
        Ok(())
    }

    fn unbound(&self, mem: u32) -> RuntimeError {
        RuntimeError::Compile(format!(
            "array `{}` used before it is bound",
            self.p.mems[mem as usize].name
        ))
    }

    /// Element read of `e.n` leaves from leaf `off`. Every lane's index (and, for block-local
    /// memory, initialisation of the leaves read) is checked first, so the copy loops that
    /// follow cannot fail half-way.
    fn load(&mut self, mem: u32, ix: Reg, off: usize, e: &Expr, mask: &[u32]) -> R<()> {
        let loc = self.loc();
        let name = &self.p.mems[mem as usize].name;
        let (d, n) = (e.dst as usize, e.n as usize);
        let Worker {
            regs,
            shared,
            local,
            bind,
            ..
        } = &mut *self.w;
        let idx = |regs: &[Vec<u64>], t: u32| r32(regs[ix as usize][t as usize]);
        let oob = |t: u32, i: i32, len: usize| {
            loc.fault(
                t,
                format!("out-of-bounds read of `{name}` (index {i}, length {len})"),
            )
        };
        match bind[mem as usize] {
            MemRef::Global(g) => {
                let v = &self.g.vecs[g as usize];
                if let Some(&t) = mask
                    .iter()
                    .find(|&&t| idx(regs, t) as u32 as usize >= v.len)
                {
                    return Err(oob(t, idx(regs, t), v.len));
                }
                for (l, col) in v.cols[off..].iter().enumerate().take(n) {
                    let mut out = std::mem::take(&mut regs[d + l]);
                    let ixs = &regs[ix as usize];
                    for &t in mask {
                        let t = t as usize;
                        out[t] = col[r32(ixs[t]) as usize].load(Ordering::Relaxed);
                    }
                    regs[d + l] = out;
                }
            }
            MemRef::Shared(s) | MemRef::Local(s) => {
                let is_local = matches!(bind[mem as usize], MemRef::Local(_));
                let arr = if is_local {
                    &local[s as usize]
                } else {
                    &shared[s as usize]
                };
                let at =
                    |t: u32, i: i32| if is_local { t as usize * arr.size } else { 0 } + i as usize;
                for &t in mask {
                    let i = idx(regs, t);
                    if i as u32 as usize >= arr.size {
                        return Err(oob(t, i, arr.size));
                    }
                    let unwritten = |l: usize| arr.unwritten[l] > 0 && !arr.written[l][at(t, i)];
                    // A whole record is read as soon as one of its fields was written (`s.(i).a
                    // <- x; let r = s.(i) in r.a` is a valid kernel); a field read needs that
                    // field written, a scalar read the element.
                    let never_written = if n > 1 {
                        (off..off + n).all(unwritten)
                    } else {
                        unwritten(off)
                    };
                    if never_written {
                        let space = if is_local {
                            "local array"
                        } else {
                            "shared memory"
                        };
                        let what =
                            format!("read of {space} `{name}` (index {i}) that no thread wrote");
                        return Err(loc.fault(t, what));
                    }
                }
                for (l, col) in arr.cols[off..].iter().enumerate().take(n) {
                    let mut out = std::mem::take(&mut regs[d + l]);
                    let ixs = &regs[ix as usize];
                    for &t in mask {
                        out[t as usize] = col[at(t, r32(ixs[t as usize]))];
                    }
                    regs[d + l] = out;
                }
            }
            MemRef::Unbound => return Err(self.unbound(mem)),
        }
        Ok(())
    }

    /// Element (or field) write, with the same check-then-copy structure as [`Self::load`].
    fn store(&mut self, mem: u32, ix: Reg, off: u32, value: &Expr, mask: &[u32]) -> R<()> {
        let loc = self.loc();
        let name = &self.p.mems[mem as usize].name;
        let (src, n, off) = (value.dst as usize, value.n as usize, off as usize);
        let Worker {
            regs,
            shared,
            local,
            bind,
            ..
        } = &mut *self.w;
        let ixs = &regs[ix as usize];
        let idx = |t: u32| r32(ixs[t as usize]);
        let oob = |t: u32, len: usize| {
            let i = idx(t);
            loc.fault(
                t,
                format!("out-of-bounds write of `{name}` (index {i}, length {len})"),
            )
        };
        match bind[mem as usize] {
            MemRef::Global(g) => {
                let v = &self.g.vecs[g as usize];
                if let Some(&t) = mask.iter().find(|&&t| idx(t) as u32 as usize >= v.len) {
                    return Err(oob(t, v.len));
                }
                for l in 0..n {
                    let (col, from) = (&v.cols[off + l], &regs[src + l]);
                    for &t in mask {
                        col[idx(t) as usize].store(from[t as usize], Ordering::Relaxed);
                    }
                }
            }
            MemRef::Shared(s) | MemRef::Local(s) => {
                let is_local = matches!(bind[mem as usize], MemRef::Local(_));
                let arr = if is_local {
                    &mut local[s as usize]
                } else {
                    &mut shared[s as usize]
                };
                let size = arr.size;
                if let Some(&t) = mask.iter().find(|&&t| idx(t) as u32 as usize >= size) {
                    return Err(oob(t, size));
                }
                let at = |t: u32| if is_local { t as usize * size } else { 0 } + idx(t) as usize;
                for l in 0..n {
                    let (col, written, from) = (
                        &mut arr.cols[off + l],
                        &mut arr.written[off + l],
                        &regs[src + l],
                    );
                    for &t in mask {
                        col[at(t)] = from[t as usize];
                    }
                    let unwritten = &mut arr.unwritten[off + l];
                    if *unwritten > 0 {
                        for &t in mask {
                            *unwritten -= !std::mem::replace(&mut written[at(t)], true) as usize;
                        }
                    }
                }
            }
            MemRef::Unbound => return Err(self.unbound(mem)),
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn atomic(
        &mut self,
        op: sarek_compiler::intrinsics::AtomicOp,
        ty: Scalar,
        mem: u32,
        ix: Reg,
        vals: &[Expr],
        d: Reg,
        mask: &[u32],
    ) -> R<()> {
        let loc = self.loc();
        let name = &self.p.mems[mem as usize].name;
        let vx = vals.first().map(|v| v.dst as usize);
        let vy = vals.get(1).map(|v| v.dst as usize);
        let Worker {
            regs,
            shared,
            local,
            bind,
            ..
        } = &mut *self.w;
        let oob = |t: u32, i: i32, len: usize| {
            loc.fault(
                t,
                format!("out-of-bounds atomic on `{name}` (index {i}, length {len})"),
            )
        };
        for &t in mask {
            let tu = t as usize;
            let i = r32(regs[ix as usize][tu]);
            let x = vx.map_or(0, |r| regs[r][tu]);
            let y = vy.map_or(0, |r| regs[r][tu]);
            let old = match bind[mem as usize] {
                MemRef::Global(g) => {
                    let v = &self.g.vecs[g as usize];
                    if i < 0 || i as usize >= v.len {
                        return Err(oob(t, i, v.len));
                    }
                    let cell = &v.cols[0][i as usize];
                    let mut old = cell.load(Ordering::Relaxed);
                    while let Some(new) = atomic_apply(op, ty, old, x, y) {
                        match cell.compare_exchange_weak(
                            old,
                            new,
                            Ordering::AcqRel,
                            Ordering::Relaxed,
                        ) {
                            Ok(_) => break,
                            Err(cur) => old = cur,
                        }
                    }
                    old
                }
                MemRef::Shared(s) | MemRef::Local(s) => {
                    let is_local = matches!(bind[mem as usize], MemRef::Local(_));
                    let arr = if is_local {
                        &mut local[s as usize]
                    } else {
                        &mut shared[s as usize]
                    };
                    if i < 0 || i as usize >= arr.size {
                        return Err(oob(t, i, arr.size));
                    }
                    let at = if is_local {
                        tu * arr.size + i as usize
                    } else {
                        i as usize
                    };
                    if arr.unwritten[0] > 0 && !arr.written[0][at] {
                        let space = if is_local {
                            "local array"
                        } else {
                            "shared memory"
                        };
                        return Err(loc.fault(
                            t,
                            format!("atomic on {space} `{name}` (index {i}) that no thread wrote"),
                        ));
                    }
                    let old = arr.cols[0][at];
                    if let Some(new) = atomic_apply(op, ty, old, x, y) {
                        arr.cols[0][at] = new;
                    }
                    old
                }
                MemRef::Unbound => return Err(self.unbound(mem)),
            };
            regs[d as usize][tu] = old;
        }
        Ok(())
    }

    /// Every warp with an active thread must be active as a whole (its threads that exist).
    fn check_warps(&self, mask: &[u32]) -> R<()> {
        let n = self.w.n as u32;
        let mut i = 0;
        while i < mask.len() {
            let warp = mask[i] / WARP_SIZE;
            let live = (warp * WARP_SIZE + WARP_SIZE).min(n) - warp * WARP_SIZE;
            let j = i + mask[i..]
                .iter()
                .take_while(|&&t| t / WARP_SIZE == warp)
                .count();
            if (j - i) as u32 != live {
                return Err(self.loc().fault(
                    mask[i],
                    format!(
                        "warp operation reached by only {} of the {live} threads of warp {warp}",
                        j - i
                    ),
                ));
            }
            i = j;
        }
        Ok(())
    }

    fn warp(&mut self, op: WarpOp, a: &Expr, b: Option<&Expr>, e: &Expr, mask: &[u32]) {
        let n = self.w.n as i64;
        let regs = &mut self.w.regs;
        let d = e.dst as usize;
        match op {
            WarpOp::Shuffle | WarpOp::ShuffleDown | WarpOp::ShuffleUp | WarpOp::ShuffleXor => {
                let b = b.expect("shuffles have two operands").dst as usize;
                for &t in mask {
                    let lane = (t % WARP_SIZE) as i64;
                    let base = t as i64 - lane;
                    let k = r32(regs[b][t as usize]) as i64;
                    // Source lane; out of the warp or past the block: the thread's own value.
                    let src = match op {
                        WarpOp::Shuffle => k & (WARP_SIZE as i64 - 1),
                        WarpOp::ShuffleDown => lane + k,
                        WarpOp::ShuffleUp => lane - k,
                        _ => lane ^ k,
                    };
                    let src = if (0..WARP_SIZE as i64).contains(&src) && base + src < n {
                        base + src
                    } else {
                        t as i64
                    };
                    for l in 0..e.n as usize {
                        let v = regs[a.dst as usize + l][src as usize];
                        regs[d + l][t as usize] = v;
                    }
                }
            }
            WarpOp::VoteAll | WarpOp::VoteAny | WarpOp::Ballot => {
                let mut i = 0;
                while i < mask.len() {
                    let warp = mask[i] / WARP_SIZE;
                    let j = i + mask[i..]
                        .iter()
                        .take_while(|&&t| t / WARP_SIZE == warp)
                        .count();
                    let mut bits = 0u32;
                    for &t in &mask[i..j] {
                        if regs[a.dst as usize][t as usize] != 0 {
                            bits |= 1 << (t % WARP_SIZE);
                        }
                    }
                    let all = mask[i..j]
                        .iter()
                        .fold(0u32, |m, &t| m | 1 << (t % WARP_SIZE));
                    let v = match op {
                        WarpOp::VoteAll => wb(bits == all),
                        WarpOp::VoteAny => wb(bits != 0),
                        _ => w32(bits as i32),
                    };
                    for &t in &mask[i..j] {
                        regs[d][t as usize] = v;
                    }
                    i = j;
                }
            }
        }
    }
}

/// Bits of a register that carry a value of scalar `s` (to test an integer for zero).
fn mask_of(s: Scalar) -> u64 {
    if s == Scalar::I32 {
        0xffff_ffff
    } else {
        u64::MAX
    }
}
