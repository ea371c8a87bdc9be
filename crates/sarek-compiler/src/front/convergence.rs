//! Convergence check: barriers and warp collectives only where every thread arrives.
//!
//! An abstract interpretation over the typed program with one bit per value: *uniform* (the
//! same in every thread of a block) or *varying* (with the `Origin` that made it so, for the
//! diagnostic). Sources of variance: `thread_idx_*`, `global_idx_*`, atomics' results, warp
//! operations. It flows through `let`s, operators, helper results (each call analyses the
//! helper with its arguments' variance), mutable locals (assigned a varying value, or assigned
//! at all under thread-dependent control flow) and memory: an array or vector written at a
//! varying index, with a varying value, under divergent control or by an atomic has varying
//! contents, and so has every read of it; reads at varying indices are varying. Block
//! indices, block and grid dimensions, `warp_size`, scalar parameters and literals are
//! uniform. Loops are iterated to a fixpoint (variance only grows), then one more pass
//! reports.
//!
//! Refused, pointing at the synchronisation and at the condition: a `block_barrier`, a warp
//! collective, a superstep's closing barrier, or a call to a helper containing one of those,
//! under an `if`/`match`/loop whose condition is varying (including the right operand of a
//! `&&`/`||` whose left one is varying). A plain superstep's own body (not the helpers it
//! calls) may not branch on a varying condition at all; `[@divergent]` lifts that.
//!
//! A local bound to a tuple or record has a variance per component (with
//! `let t = (thread_idx_x, n) in let (a, b) = t in`, `b` is uniform), followed through
//! `let`s, destructuring and field reads; a value that leaves the local whole (an argument,
//! a store) has the join.
//!
//! A call's analysis depends only on its [`CallKey`] (which arguments vary, which arrays the
//! array parameters name, whether the caller diverges, the state of memory); a call whose key
//! was analysed before reuses that result, so a chain of helpers that each call the previous
//! one several times is analysed in linear time, not once per path.

use crate::hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::diag::{Diagnostic, Span};
use crate::front::tast::{Expr, ExprKind, FunId, Function, Pattern, Program, Ty, VarId};
use crate::intrinsics::{Axis, Geometry, Intrinsic, WarpOp};
use crate::lower::superstep_header;
use crate::types::BinOp;

pub fn check(program: &Program) -> Result<(), Vec<Diagnostic>> {
    // Every refusal is about a synchronisation point or a superstep: a program without any
    // has nothing to analyse.
    if !synchronises(program) {
        return Ok(());
    }
    let mut a = Analyzer {
        program,
        vars: HashMap::default(),
        parts: HashMap::default(),
        varying_parts: 0,
        memory: HashMap::default(),
        alias: HashMap::default(),
        report: false,
        diags: Vec::new(),
        seen: HashSet::default(),
        call_stack: Vec::new(),
        sync_memo: HashMap::default(),
        calls: HashMap::default(),
        names: binder_names(program),
    };
    for k in &program.kernels {
        a.vars.clear();
        a.parts.clear();
        a.memory.clear();
        a.alias.clear();
        a.calls.clear();
        a.report = false;
        a.fixpoint(&k.body, &Ctx::default());
        a.report = true;
        a.expr(&k.body, &Ctx::default());
    }
    if a.diags.is_empty() {
        Ok(())
    } else {
        Err(a.diags)
    }
}

/// Whether any function or kernel of `program` has a block barrier, a warp collective or a
/// superstep. A loop, not a recursion: the tree may be deeper than the stack.
fn synchronises(program: &Program) -> bool {
    let mut todo: Vec<&Expr> = program
        .functions
        .iter()
        .map(|f| &f.body)
        .chain(program.kernels.iter().map(|k| &k.body))
        .collect();
    while let Some(e) = todo.pop() {
        match &e.kind {
            ExprKind::Intrinsic {
                op: Intrinsic::BlockBarrier | Intrinsic::Warp(_),
                ..
            }
            | ExprKind::Superstep { .. } => return true,
            _ => todo.extend(e.children()),
        }
    }
    false
}

/// The thread-index intrinsic a condition tests directly (`thread_idx_x > 16`), if any.
///
/// Upstream Sarek refuses such a condition in a plain superstep, but accepts one on a
/// variable bound outside it (`let tid = thread_idx_x in ... if tid < 128 then ...`), the
/// shape of its reductions, scans and tiled loops: the closing barrier is after the branch,
/// so every thread still reaches it. Barriers and warp collectives inside such a branch are
/// refused all the same ([`Analyzer::sync`]).
fn thread_index_in(e: &Expr) -> Option<String> {
    if let ExprKind::Intrinsic {
        op: Intrinsic::Geometry(g),
        ..
    } = &e.kind
        && g.is_thread_varying()
    {
        return Some(geometry_name(*g));
    }
    e.children().find_map(thread_index_in)
}

/// Why a value differs between threads: where, and [`Why`].
#[derive(Clone, Copy, Debug)]
struct Origin {
    span: Span,
    what: Why,
}

/// The cause of a variance, put in words only for a diagnostic ([`Analyzer::origin_label`]).
#[derive(Clone, Copy, Debug)]
enum Why {
    /// A thread-varying geometry intrinsic.
    Geometry(Geometry),
    /// A warp operation's per-lane result.
    Warp(WarpOp),
    Atomic,
    /// A variable assigned under a thread-dependent condition of this kind.
    AssignedUnder(VarId, &'static str),
    /// An array (`None`: not a variable) written per thread.
    Written(Option<VarId>),
    /// A helper's thread-dependent result.
    Returns(FunId),
}

/// `None`: uniform.
type Variance = Option<Origin>;

fn join(a: Variance, b: Variance) -> Variance {
    a.or(b)
}

/// The variance of a whole value from its components'.
fn joined(parts: &[Variance]) -> Variance {
    parts.iter().fold(None, |a, p| join(a, *p))
}

/// A thread-dependent condition some code runs under.
#[derive(Clone, Debug)]
struct Cond {
    span: Span,
    /// "condition", "loop bound", "matched value", ...
    kind: &'static str,
    origin: Origin,
}

#[derive(Clone, Debug, Default)]
struct Ctx {
    /// The innermost thread-dependent condition around the code.
    divergent: Option<Cond>,
    /// The plain superstep whose body this is: (name, header span).
    plain_superstep: Option<(String, Span)>,
    /// Inside a helper called under a thread-dependent condition: the helper's own code is
    /// checked on its own (the call site reports its barriers), but its stores still happen
    /// in only some threads.
    caller_divergent: Option<Cond>,
}

impl Ctx {
    /// The condition under which a store here happens in only some threads.
    fn store_divergence(&self) -> Option<&Cond> {
        self.divergent.as_ref().or(self.caller_divergent.as_ref())
    }
}

/// Everything a helper call's analysis depends on. Memory only grows during a kernel's
/// analysis, so its size identifies its state; a call that finds its key analysed at the same
/// memory state would repeat the same work: the same result, no new marks, and diagnostics
/// already emitted (they are deduplicated by span and message, which do not depend on the
/// origins of the caller's values).
#[derive(Clone, PartialEq, Eq, Hash)]
struct CallKey {
    func: FunId,
    varying_args: Vec<bool>,
    /// The array each vector or array parameter names.
    array_roots: Vec<Option<VarId>>,
    caller_divergent: bool,
    report: bool,
    memory: usize,
}

struct Analyzer<'p> {
    program: &'p Program,
    /// Varying variables of the current frame (kernel or helper call).
    vars: HashMap<VarId, Origin>,
    /// The variance of each component of the frame's immutable locals bound to a tuple or
    /// record, and how many components have become varying (the fixpoint watches it).
    parts: HashMap<VarId, Vec<Variance>>,
    varying_parts: usize,
    /// Arrays and vectors (by the kernel-level variable) whose contents vary.
    memory: HashMap<VarId, Origin>,
    /// Helper array parameters and vector aliases -> the array they name.
    alias: HashMap<VarId, VarId>,
    report: bool,
    diags: Vec<Diagnostic>,
    /// (span, message) of every reported diagnostic: helpers are analysed once per call.
    seen: HashSet<(Span, String)>,
    call_stack: Vec<FunId>,
    sync_memo: HashMap<FunId, Option<(Span, String)>>,
    /// Calls analysed in the current kernel: whether the result varies.
    calls: HashMap<CallKey, bool>,
    /// Source names of the program's variables.
    names: HashMap<VarId, &'p str>,
}

impl<'p> Analyzer<'p> {
    /// Analyse `body` until variance stops growing.
    fn fixpoint(&mut self, body: &Expr, ctx: &Ctx) -> Variance {
        loop {
            let before = (self.vars.len(), self.varying_parts, self.memory.len());
            let r = self.expr(body, ctx);
            if (self.vars.len(), self.varying_parts, self.memory.len()) == before {
                return r;
            }
        }
    }

    fn emit(&mut self, d: Diagnostic) {
        if self.report && self.seen.insert((d.span, d.message.clone())) {
            self.diags.push(d);
        }
    }

    fn mark_var(&mut self, id: VarId, o: Origin) {
        self.vars.entry(id).or_insert(o);
    }

    fn root(&self, id: VarId) -> VarId {
        let mut id = id;
        while let Some(n) = self.alias.get(&id) {
            if *n == id {
                break;
            }
            id = *n;
        }
        id
    }

    fn array_root(&self, e: &Expr) -> Option<VarId> {
        match &e.kind {
            ExprKind::Var(id) => Some(self.root(*id)),
            _ => None,
        }
    }

    fn mark_memory(&mut self, array: &Expr, o: Origin) {
        if let Some(r) = self.array_root(array) {
            self.memory.entry(r).or_insert(o);
        }
    }

    fn bind_pattern(&mut self, p: &Pattern, v: &Variance) {
        match p {
            Pattern::Bind(d) => {
                if let Some(o) = v {
                    self.mark_var(d.id, *o);
                }
            }
            Pattern::Ctor { args: ps, .. } | Pattern::Tuple(ps) | Pattern::Or(ps) => {
                for p in ps {
                    self.bind_pattern(p, v);
                }
            }
            Pattern::Wildcard | Pattern::Lit(_) => {}
        }
    }

    /// The variance of `e` and, when `e` is a tuple or record whose components are known
    /// apart (a literal, or a local bound to one), that of each component.
    fn expr_parts(&mut self, e: &Expr, ctx: &Ctx) -> (Variance, Option<Vec<Variance>>) {
        match &e.kind {
            ExprKind::Tuple(items) | ExprKind::Record { fields: items, .. } => {
                let parts: Vec<Variance> = items.iter().map(|i| self.expr(i, ctx)).collect();
                (joined(&parts), Some(parts))
            }
            ExprKind::Var(id) if self.parts.contains_key(id) && !self.vars.contains_key(id) => {
                let parts = self.parts[id].clone();
                (joined(&parts), Some(parts))
            }
            _ => (self.expr(e, ctx), None),
        }
    }

    /// Binds `id` to components of `parts`' variances; a component stays varying once it
    /// was (a loop's later iterations see the earlier ones).
    fn bind_parts(&mut self, id: VarId, parts: Vec<Variance>) {
        let old = self
            .parts
            .entry(id)
            .or_insert_with(|| vec![None; parts.len()]);
        for (o, p) in old.iter_mut().zip(parts) {
            if o.is_none() && p.is_some() {
                *o = p;
                self.varying_parts += 1;
            }
        }
    }

    /// `ctx` with code now running under `cond` if its variance is varying.
    fn under(&mut self, ctx: &Ctx, cond: &Expr, kind: &'static str, v: &Variance) -> Ctx {
        let Some(origin) = v else { return ctx.clone() };
        if let Some((name, header)) = &ctx.plain_superstep
            && let Some(index) = thread_index_in(cond)
        {
            let d = Diagnostic::error(
                cond.span,
                format!("superstep `{name}` has thread-dependent control flow"),
            )
            .with_label(format!("this {kind} differs between threads of a block"))
            .with_secondary(*header, format!("plain superstep `{name}` declared here"));
            let d = self.with_origin(d, cond.span, origin)
                .with_note(format!("a plain superstep asserts that every thread of the block runs the same path through its body, and this condition tests `{index}` itself"))
                .with_help(format!(
                    "declare it `let%superstep[@divergent] {name} = ...` to let threads take different paths inside it; its closing barrier is still reached by every thread"
                ));
            self.emit(d);
        }
        Ctx {
            divergent: Some(Cond {
                span: cond.span,
                kind,
                origin: *origin,
            }),
            plain_superstep: ctx.plain_superstep.clone(),
            caller_divergent: ctx.caller_divergent.clone(),
        }
    }

    /// A synchronisation point (`what` names it) at `span` reached under `ctx`.
    fn sync(&mut self, ctx: &Ctx, span: Span, what: &str, is_warp: bool) {
        let Some(cond) = &ctx.divergent else { return };
        let (message, note) = if is_warp {
            (
                format!("warp collective `{what}` is not reached by every thread"),
                "every lane of a warp must take part in a warp collective; lanes that skip it make the result undefined",
            )
        } else {
            (
                format!("{what} is not reached by every thread of the block"),
                "every thread of a block must reach a barrier, or none: threads that skip it leave the others waiting (deadlock) or make the behaviour undefined",
            )
        };
        let d = Diagnostic::error(span, message)
            .with_label("reached only under a thread-dependent condition")
            .with_secondary(
                cond.span,
                format!("this {} differs between threads of a block", cond.kind),
            );
        let d = self.with_origin(d, cond.span, &cond.origin).with_note(note).with_help(
            "move it out of the conditional code, or make the condition uniform: block indices, block and grid dimensions, scalar parameters and constants are the same in every thread",
        );
        self.emit(d);
    }

    fn expr(&mut self, e: &Expr, ctx: &Ctx) -> Variance {
        match &e.kind {
            ExprKind::Unit | ExprKind::Lit(_) => None,
            ExprKind::Var(id) => {
                let whole = self.parts.get(id).and_then(|ps| joined(ps));
                join(self.vars.get(id).cloned(), whole)
            }
            ExprKind::Let {
                pattern,
                value,
                body,
            } => {
                let (v, parts) = self.expr_parts(value, ctx);
                if let (Pattern::Bind(d), ExprKind::Var(src)) = (pattern, &value.kind)
                    && matches!(d.ty, Ty::Vector(_) | Ty::Array { .. })
                {
                    let r = self.root(*src);
                    self.alias.insert(d.id, r);
                }
                match (pattern, parts) {
                    (Pattern::Tuple(ps), Some(parts)) if ps.len() == parts.len() => {
                        for (p, v) in ps.iter().zip(&parts) {
                            self.bind_pattern(p, v);
                        }
                    }
                    (Pattern::Bind(d), Some(parts)) if !d.mutable => self.bind_parts(d.id, parts),
                    _ => self.bind_pattern(pattern, &v),
                }
                self.expr(body, ctx)
            }
            ExprKind::Assign { var, value } => {
                let v = self.expr(value, ctx);
                self.write_var(*var, v, e.span, ctx);
                None
            }
            ExprKind::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let c = self.expr(cond, ctx);
                let inner = self.under(ctx, cond, "condition", &c);
                let t = self.expr(then_branch, &inner);
                let f = else_branch.as_ref().and_then(|b| self.expr(b, &inner));
                join(c, join(t, f))
            }
            ExprKind::Match { scrutinee, arms } => {
                let s = self.expr(scrutinee, ctx);
                let inner = self.under(ctx, scrutinee, "matched value", &s);
                let mut r = s;
                for a in arms {
                    self.bind_pattern(&a.pattern, &s);
                    r = join(r, self.expr(&a.body, &inner));
                }
                r
            }
            ExprKind::For {
                var,
                start,
                end,
                body,
                ..
            } => {
                let s = self.expr(start, ctx);
                let t = self.expr(end, ctx);
                let (bound, v) = if s.is_some() {
                    (&**start, s)
                } else {
                    (&**end, t)
                };
                if let Some(o) = &v {
                    self.mark_var(var.id, *o);
                }
                let inner = self.under(ctx, bound, "loop bound", &v);
                self.expr(body, &inner);
                None
            }
            ExprKind::While { cond, body, .. } => {
                let c = self.expr(cond, ctx);
                let inner = self.under(ctx, cond, "loop condition", &c);
                if c.is_some() {
                    // Later evaluations of the condition run only in the threads still looping.
                    self.expr(cond, &inner);
                }
                self.expr(body, &inner);
                None
            }
            ExprKind::Seq(items) => {
                let mut r = None;
                for i in items {
                    r = self.expr(i, ctx);
                }
                r
            }
            ExprKind::Index { base, index } => {
                let i = self.expr(index, ctx);
                let m = self
                    .array_root(base)
                    .and_then(|r| self.memory.get(&r).cloned());
                join(i, m)
            }
            ExprKind::IndexSet { base, index, value } => {
                let i = self.expr(index, ctx);
                let v = self.expr(value, ctx);
                self.write_memory(base, join(i, v), e.span, ctx);
                None
            }
            ExprKind::Field { base, field, .. } => {
                if let ExprKind::Var(id) = &base.kind
                    && let Some(p) = self.parts.get(id).and_then(|ps| ps.get(*field as usize))
                {
                    return join(self.vars.get(id).cloned(), *p);
                }
                self.expr(base, ctx)
            }
            ExprKind::FieldSet { base, value, .. } => {
                let v = self.expr(value, ctx);
                self.write_place(base, v, e.span, ctx);
                None
            }
            ExprKind::Record { fields: items, .. }
            | ExprKind::Ctor { args: items, .. }
            | ExprKind::Tuple(items) => {
                let mut r = None;
                for i in items {
                    r = join(r, self.expr(i, ctx));
                }
                r
            }
            ExprKind::Call { func, args, .. } => self.call(*func, args, e.span, ctx),
            ExprKind::Intrinsic { op, args } => self.intrinsic(*op, args, e, ctx),
            ExprKind::Binary { op, lhs, rhs } => {
                let l = self.expr(lhs, ctx);
                let r = if matches!(op, BinOp::And | BinOp::Or) {
                    // The right operand runs only in the threads the left one lets through.
                    let inner = self.under(ctx, lhs, "condition", &l);
                    self.expr(rhs, &inner)
                } else {
                    self.expr(rhs, ctx)
                };
                join(l, r)
            }
            ExprKind::Unary { operand, .. } => self.expr(operand, ctx),
            ExprKind::LetShared { body, .. } | ExprKind::LetLocalArray { body, .. } => {
                self.expr(body, ctx)
            }
            ExprKind::Superstep {
                name,
                divergent,
                step,
                rest,
            } => {
                let header = superstep_header(e);
                let step_ctx = Ctx {
                    divergent: ctx.divergent.clone(),
                    caller_divergent: ctx.caller_divergent.clone(),
                    plain_superstep: if *divergent {
                        None
                    } else {
                        Some((name.clone(), header))
                    },
                };
                self.expr(step, &step_ctx);
                self.sync(
                    ctx,
                    header,
                    &format!("the barrier closing superstep `{name}`"),
                    false,
                );
                self.expr(rest, ctx)
            }
            ExprKind::Ignore(inner)
            | ExprKind::Trap {
                fallback: inner, ..
            } => self.expr(inner, ctx),
        }
    }

    fn write_var(&mut self, var: VarId, v: Variance, span: Span, ctx: &Ctx) {
        if let Some(o) = v {
            self.mark_var(var, o);
        } else if let Some(c) = ctx.store_divergence() {
            let what = Why::AssignedUnder(var, c.kind);
            self.mark_var(var, Origin { span, what });
        }
    }

    fn write_memory(&mut self, array: &Expr, v: Variance, span: Span, ctx: &Ctx) {
        if v.is_some() || ctx.store_divergence().is_some() {
            let what = Why::Written(match &array.kind {
                ExprKind::Var(id) => Some(*id),
                _ => None,
            });
            self.mark_memory(array, Origin { span, what });
        }
    }

    fn write_place(&mut self, place: &Expr, v: Variance, span: Span, ctx: &Ctx) {
        match &place.kind {
            ExprKind::Var(id) => self.write_var(*id, v, span, ctx),
            ExprKind::Index { base, index } => {
                let i = self.expr(index, ctx);
                self.write_memory(base, join(i, v), span, ctx);
            }
            ExprKind::Field { base, .. } => self.write_place(base, v, span, ctx),
            _ => {
                self.expr(place, ctx);
            }
        }
    }

    /// Adds a label at the origin of the variance when it is not the condition itself.
    fn with_origin(&self, d: Diagnostic, cond: Span, origin: &Origin) -> Diagnostic {
        let inside = origin.span.file == cond.file
            && origin.span.start >= cond.start
            && origin.span.end <= cond.end;
        if origin.span.is_dummy() || inside {
            d
        } else {
            d.with_secondary(origin.span, self.origin_label(origin.what))
        }
    }

    /// The words for a cause of variance.
    fn origin_label(&self, why: Why) -> String {
        match why {
            Why::Geometry(g) => format!("`{}` differs between threads", geometry_name(g)),
            Why::Warp(w) => format!("`{}` returns a per-lane value", warp_name(w)),
            Why::Atomic => "an atomic returns a different old value in each thread".into(),
            Why::AssignedUnder(var, kind) => format!(
                "`{}` is assigned under a thread-dependent {kind}",
                self.var_name(var)
            ),
            Why::Written(array) => format!(
                "`{}` is written per thread here",
                array.map_or_else(|| "the array".into(), |id| self.var_name(id))
            ),
            Why::Returns(fid) => {
                let name = self.program.functions.iter().find(|f| f.id == fid);
                format!(
                    "`{}` returns a thread-dependent value here",
                    name.map_or("a helper", |f| f.source_name.as_str())
                )
            }
        }
    }

    fn var_name(&self, id: VarId) -> String {
        self.names
            .get(&id)
            .map_or_else(|| "a variable".into(), |n| n.to_string())
    }

    fn intrinsic(&mut self, op: Intrinsic, args: &[Expr], e: &Expr, ctx: &Ctx) -> Variance {
        let mut v = None;
        for a in args {
            v = join(v, self.expr(a, ctx));
        }
        match op {
            Intrinsic::Geometry(g) if g.is_thread_varying() => Some(Origin {
                span: e.span,
                what: Why::Geometry(g),
            }),
            Intrinsic::Geometry(_) => None,
            Intrinsic::BlockBarrier => {
                self.sync(ctx, e.span, "`block_barrier`", false);
                None
            }
            Intrinsic::Warp(w) => {
                let name = warp_name(w);
                self.sync(ctx, e.span, name, true);
                Some(Origin {
                    span: e.span,
                    what: Why::Warp(w),
                })
            }
            Intrinsic::Atomic(_) => {
                let o = Origin {
                    span: e.span,
                    what: Why::Atomic,
                };
                if let Some(a) = args.first() {
                    self.mark_memory(a, o);
                }
                Some(o)
            }
            Intrinsic::FenceBlock | Intrinsic::FenceDevice => None,
            Intrinsic::Length => None,
            _ => v,
        }
    }

    fn call(&mut self, fid: FunId, args: &[Expr], span: Span, ctx: &Ctx) -> Variance {
        let arg_vs: Vec<Variance> = args.iter().map(|a| self.expr(a, ctx)).collect();
        let program = self.program;
        let Some(f) = program.functions.iter().find(|f| f.id == fid) else {
            return arg_vs.into_iter().fold(None, join);
        };
        if let (Some(cond), Some((sync_span, what))) = (&ctx.divergent, self.sync_point(f)) {
            let name = &f.source_name;
            let d = Diagnostic::error(
                span,
                format!(
                    "`{name}` contains {what} and is called under thread-dependent control flow"
                ),
            )
            .with_label("not every thread of the block makes this call")
            .with_secondary(
                cond.span,
                format!("this {} differs between threads of a block", cond.kind),
            )
            .with_secondary(sync_span, format!("{what} inside `{name}`"));
            let d = self.with_origin(d, cond.span, &cond.origin)
                .with_note("every thread of a block must reach a barrier (every lane of a warp a warp collective), or none")
                .with_help("call the helper outside the conditional code, or make the condition uniform");
            self.emit(d);
        }
        if self.call_stack.contains(&fid) {
            return arg_vs.into_iter().fold(None, join);
        }
        let key = CallKey {
            func: fid,
            varying_args: arg_vs.iter().map(Option::is_some).collect(),
            array_roots: f
                .params
                .iter()
                .zip(args)
                .map(|(p, a)| {
                    matches!(p.ty, Ty::Vector(_) | Ty::Array { .. })
                        .then(|| self.array_root(a))
                        .flatten()
                })
                .collect(),
            caller_divergent: ctx.store_divergence().is_some(),
            report: self.report,
            memory: self.memory.len(),
        };
        let varies = match self.calls.get(&key) {
            Some(varies) => *varies,
            None => {
                let varies = crate::stack::grow(|| self.analyse_call(f, args, &arg_vs, ctx));
                self.calls.insert(key, varies);
                varies
            }
        };
        varies.then_some(Origin {
            span,
            what: Why::Returns(fid),
        })
    }

    /// Analyse `f`'s body for one call: whether its result varies.
    fn analyse_call(
        &mut self,
        f: &Function,
        args: &[Expr],
        arg_vs: &[Variance],
        ctx: &Ctx,
    ) -> bool {
        let fid = f.id;
        self.call_stack.push(fid);
        let saved = std::mem::take(&mut self.vars);
        let saved_parts = std::mem::take(&mut self.parts);
        for (p, (a, v)) in f.params.iter().zip(args.iter().zip(arg_vs)) {
            if let Some(o) = v {
                self.vars.insert(p.id, *o);
            }
            if let (Ty::Vector(_) | Ty::Array { .. }, Some(r)) = (&p.ty, self.array_root(a))
                && r != p.id
            {
                self.alias.insert(p.id, r);
            }
        }
        let callee_ctx = Ctx {
            caller_divergent: ctx.store_divergence().cloned(),
            ..Ctx::default()
        };
        let r = self.fixpoint(&f.body, &callee_ctx);
        self.vars = saved;
        self.parts = saved_parts;
        self.call_stack.pop();
        r.is_some()
    }

    /// The first barrier, superstep or warp collective `f` reaches (directly or through calls).
    fn sync_point(&mut self, f: &Function) -> Option<(Span, String)> {
        if let Some(r) = self.sync_memo.get(&f.id) {
            return r.clone();
        }
        self.sync_memo.insert(f.id, None);
        let r = crate::stack::grow(|| self.find_sync(&f.body));
        self.sync_memo.insert(f.id, r.clone());
        r
    }

    fn find_sync(&mut self, e: &Expr) -> Option<(Span, String)> {
        match &e.kind {
            ExprKind::Intrinsic {
                op: Intrinsic::BlockBarrier,
                ..
            } => return Some((e.span, "a block barrier".into())),
            ExprKind::Intrinsic {
                op: Intrinsic::Warp(w),
                ..
            } => {
                return Some((e.span, format!("the warp collective `{}`", warp_name(*w))));
            }
            ExprKind::Superstep { name, .. } => {
                return Some((
                    superstep_header(e),
                    format!("superstep `{name}` (a block barrier)"),
                ));
            }
            ExprKind::Call { func, .. } => {
                let program = self.program;
                if let Some(g) = program.functions.iter().find(|g| g.id == *func)
                    && let Some(s) = self.sync_point(g)
                {
                    return Some(s);
                }
            }
            _ => {}
        }
        e.children().find_map(|c| self.find_sync(c))
    }
}

/// The source name of every variable of the program (for messages).
fn binder_names(program: &Program) -> HashMap<VarId, &str> {
    fn pattern<'p>(p: &'p Pattern, out: &mut HashMap<VarId, &'p str>) {
        match p {
            Pattern::Bind(d) => {
                out.insert(d.id, d.name.as_str());
            }
            Pattern::Ctor { args: ps, .. } | Pattern::Tuple(ps) | Pattern::Or(ps) => {
                ps.iter().for_each(|p| pattern(p, out));
            }
            Pattern::Wildcard | Pattern::Lit(_) => {}
        }
    }
    fn expr<'p>(e: &'p Expr, out: &mut HashMap<VarId, &'p str>) {
        match &e.kind {
            ExprKind::Let { pattern: p, .. } => pattern(p, out),
            ExprKind::For { var, .. }
            | ExprKind::LetShared { var, .. }
            | ExprKind::LetLocalArray { var, .. } => {
                out.insert(var.id, var.name.as_str());
            }
            ExprKind::Match { arms, .. } => arms.iter().for_each(|a| pattern(&a.pattern, out)),
            _ => {}
        }
        e.children().for_each(|c| expr(c, out));
    }
    let mut out = HashMap::default();
    for f in &program.functions {
        f.params.iter().for_each(|p| {
            out.insert(p.id, p.name.as_str());
        });
        expr(&f.body, &mut out);
    }
    for k in &program.kernels {
        k.params.iter().for_each(|p| {
            out.insert(p.id, p.name.as_str());
        });
        expr(&k.body, &mut out);
    }
    out
}

fn geometry_name(g: Geometry) -> String {
    let axis = |a: Axis| a.letter();
    match g {
        Geometry::ThreadIdx(a) => format!("thread_idx_{}", axis(a)),
        Geometry::BlockIdx(a) => format!("block_idx_{}", axis(a)),
        Geometry::BlockDim(a) => format!("block_dim_{}", axis(a)),
        Geometry::GridDim(a) => format!("grid_dim_{}", axis(a)),
        Geometry::GlobalIdx(a) => format!("global_idx_{}", axis(a)),
        Geometry::WarpSize => "warp_size".into(),
    }
}

fn warp_name(w: WarpOp) -> &'static str {
    match w {
        WarpOp::Shuffle => "warp_shuffle",
        WarpOp::ShuffleDown => "warp_shuffle_down",
        WarpOp::ShuffleUp => "warp_shuffle_up",
        WarpOp::ShuffleXor => "warp_shuffle_xor",
        WarpOp::VoteAll => "warp_vote_all",
        WarpOp::VoteAny => "warp_vote_any",
        WarpOp::Ballot => "warp_ballot",
    }
}
