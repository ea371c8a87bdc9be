//! Which vector parameters a kernel reads and which it writes: what a launch must move back
//! and what it costs in memory traffic.
//!
//! A launch downloads (into a [`crate::Vector`] or a host vector) only the vectors the kernel
//! may write, and `sarek bench` counts the bytes of the vectors it reads once in and of those
//! it writes once out. The answer is conservative: a vector is *written* when some store or
//! atomic may reach it, through any chain of helpers; opaque target code
//! (`StmtKind::Native`), or a vector used as a value anywhere but a helper argument or
//! `length`, counts as read and written. Taking `length` is neither.
//!
//! The walk follows helper calls with a work list (one visit per helper and binding of its
//! vector parameters), so a chain of thousands of helpers needs no deep recursion.

use sarek_compiler::intrinsics::Intrinsic;
use sarek_compiler::ir::{Block, Expr, ExprKind, FuncId, Kernel, LValue, StmtKind, Ty, VarId};
use std::collections::{HashMap, HashSet};

/// What a kernel does with one vector parameter's elements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VectorUse {
    /// Some element may be read.
    pub reads: bool,
    /// Some element may be written (stored, or the target of an atomic).
    pub writes: bool,
}

/// For every parameter of `kernel`, in order, what the kernel does with it (scalars and
/// aggregates: neither).
pub fn vector_uses(kernel: &Kernel) -> Vec<VectorUse> {
    let mut uses = vec![VectorUse::default(); kernel.params.len()];
    let vectors: HashMap<VarId, usize> = kernel
        .params
        .iter()
        .enumerate()
        .filter(|(_, v)| matches!(kernel.var(**v).ty, Ty::Vector(_)))
        .map(|(k, v)| (*v, k))
        .collect();
    // (helper, which kernel parameter each of its parameters is bound to)
    type Binding = (Option<FuncId>, Vec<(VarId, usize)>);
    let mut seen: HashSet<Binding> = HashSet::new();
    let mut work: Vec<Binding> = vec![(None, vectors.iter().map(|(v, k)| (*v, *k)).collect())];
    while let Some((func, bound)) = work.pop() {
        let mut key = bound.clone();
        key.sort_unstable();
        if !seen.insert((func, key)) {
            continue;
        }
        let body = match func {
            None => &kernel.body,
            Some(f) => &kernel.function(f).body,
        };
        let mut walk = Walk {
            kernel,
            bound: bound.into_iter().collect(),
            uses: &mut uses,
            calls: Vec::new(),
            opaque: false,
        };
        walk.block(body);
        if walk.opaque {
            for &k in vectors.values() {
                uses[k] = VectorUse {
                    reads: true,
                    writes: true,
                };
            }
            return uses;
        }
        work.extend(walk.calls.into_iter().map(|(f, b)| (Some(f), b)));
    }
    uses
}

struct Walk<'u> {
    kernel: &'u Kernel,
    /// Variables of the function being walked that are kernel vector parameters (by index).
    bound: HashMap<VarId, usize>,
    uses: &'u mut [VectorUse],
    /// Helpers called with vector parameters, and how their parameters are bound.
    calls: Vec<(FuncId, Vec<(VarId, usize)>)>,
    /// Opaque target code was found.
    opaque: bool,
}

impl Walk<'_> {
    fn both(&mut self, v: VarId) {
        if let Some(&k) = self.bound.get(&v) {
            self.uses[k] = VectorUse {
                reads: true,
                writes: true,
            };
        }
    }

    fn block(&mut self, b: &Block) {
        for s in b {
            match &s.kind {
                StmtKind::Let { init, .. } => init.iter().for_each(|e| self.expr(e)),
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
                    start, end, body, ..
                } => {
                    self.expr(start);
                    self.expr(end);
                    self.block(body);
                }
                StmtKind::While { cond, body, .. } => {
                    self.expr(cond);
                    self.block(body);
                }
                StmtKind::Match {
                    scrutinee, arms, ..
                } => {
                    self.expr(scrutinee);
                    arms.iter().for_each(|a| self.block(&a.body));
                }
                StmtKind::Block(b) => self.block(b),
                StmtKind::Native(_) => self.opaque = true,
                StmtKind::Array { .. }
                | StmtKind::Barrier
                | StmtKind::Fence { .. }
                | StmtKind::Break
                | StmtKind::Continue
                | StmtKind::Trap(_)
                | StmtKind::Return(None) => {}
            }
        }
    }

    fn place(&mut self, place: &LValue) {
        match place {
            LValue::Var(_) => {}
            LValue::Index { base, index } => {
                if let Some(&k) = self.bound.get(base) {
                    self.uses[k].writes = true;
                }
                self.expr(index);
            }
            LValue::Field { base, .. } => self.place(base),
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Lit(_) => {}
            // A vector as a value anywhere else than below: assume the worst.
            ExprKind::Var(v) => self.both(*v),
            ExprKind::Index { base, index } => {
                if let Some(&k) = self.bound.get(base) {
                    self.uses[k].reads = true;
                }
                self.expr(index);
            }
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::Unary { operand, .. } => self.expr(operand),
            ExprKind::Field { base, .. } | ExprKind::Tag(base) => self.expr(base),
            ExprKind::Payload { value, .. } => self.expr(value),
            ExprKind::Record { fields, .. } | ExprKind::Ctor { fields, .. } => {
                fields.iter().for_each(|f| self.expr(f))
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                self.expr(cond);
                self.expr(then_value);
                self.expr(else_value);
            }
            ExprKind::Call { func, args } => {
                let mut bound = Vec::new();
                for (a, callee_param) in args.iter().zip(&self.callee_params(*func, args.len())) {
                    match (&a.kind, callee_param) {
                        (ExprKind::Var(v), Some(p)) if self.bound.contains_key(v) => {
                            bound.push((*p, self.bound[v]));
                        }
                        _ => self.expr(a),
                    }
                }
                if !bound.is_empty() {
                    self.calls.push((*func, bound));
                }
            }
            ExprKind::Intrinsic { op, args } => {
                for a in args {
                    match (&a.kind, op) {
                        (ExprKind::Var(v), Intrinsic::Length) if self.bound.contains_key(v) => {}
                        // Atomics, and any other built-in handed the whole vector.
                        _ => self.expr(a),
                    }
                }
            }
        }
    }

    /// The parameter variables of `func` (none when the arity does not match: then every
    /// argument is walked as a value, which assumes the worst).
    fn callee_params(&self, func: FuncId, arity: usize) -> Vec<Option<VarId>> {
        let params = &self.kernel.function(func).params;
        if params.len() == arity {
            params.iter().copied().map(Some).collect()
        } else {
            vec![None; arity]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sarek_compiler::SourceMap;

    fn uses(source: &str, kernel: &str) -> Vec<(bool, bool)> {
        let mut sources = SourceMap::new();
        let file = sources.add("t.sarek", source);
        let checked = sarek_compiler::check(&sources, file).expect("checks");
        let k = sarek_compiler::lower_kernel(&checked, kernel).expect("lowers");
        vector_uses(&k)
            .into_iter()
            .map(|u| (u.reads, u.writes))
            .collect()
    }

    const R: (bool, bool) = (true, false);
    const W: (bool, bool) = (false, true);
    const RW: (bool, bool) = (true, true);
    const NONE: (bool, bool) = (false, false);

    #[test]
    fn loads_and_stores_in_the_kernel_body() {
        let src = "let%kernel saxpy (x : float32 vector) (y : float32 vector) (a : float32) (out : float32 vector) =\n\
                   let i = global_thread_id in\n\
                   if i < length out then out.(i) <- a *. x.(i) +. y.(i)";
        assert_eq!(uses(src, "saxpy"), [R, R, NONE, W]);
        let src = "let%kernel step (v : float32 vector) =\n\
                   let i = global_thread_id in if i < length v then v.(i) <- v.(i) +. 1.0";
        assert_eq!(uses(src, "step"), [RW]);
    }

    #[test]
    fn length_alone_is_neither() {
        let src = "let%kernel k (v : int32 vector) (out : int32 vector) =\n\
                   let i = global_thread_id in if i < length out then out.(i) <- length v";
        assert_eq!(uses(src, "k"), [NONE, W]);
    }

    #[test]
    fn helpers_and_atomics_are_followed() {
        let src = "let put (w : int32 vector) (i : int32) (x : int32) = w.(i) <- x\n\
                   let get (r : int32 vector) (i : int32) = r.(i)\n\
                   let twice (a : int32 vector) (b : int32 vector) (i : int32) = put b i (get a i * 2)\n\
                   let%kernel k (a : int32 vector) (b : int32 vector) (c : int32 vector) (n : int32 vector) =\n\
                   let i = global_thread_id in\n\
                   if i < length a then begin\n\
                     twice a b i;\n\
                     let _ = atomic_add n 0 1 in ()\n\
                   end";
        assert_eq!(uses(src, "k"), [R, W, NONE, RW]);
    }
}
