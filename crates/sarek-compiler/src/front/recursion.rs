//! Recursion elimination: after this pass no helper calls itself, directly or not.
//!
//! - A helper whose self-calls are all tail calls (not in an argument, not inside a loop, not
//!   before a superstep's barrier) becomes a loop: the parameters are copied into mutable
//!   locals, the body runs in `while running do running := false; body done`, a tail call
//!   assigns the new arguments (through temporaries, so `f b (a mod b)` reads the old values)
//!   and sets `running`, every other tail value is assigned to a `result` local. There is no
//!   `break` in the typed AST; the flag keeps the body unchanged otherwise.
//! - A non-tail-recursive helper marked `[@sarek.inline N]` is unrolled into one helper per
//!   depth: `f` calls `f__depth1`, which calls `f__depth2`, ... down to `f__depthN` (each a
//!   copy of the body with its binders renamed). A copy is shared by every call at its depth,
//!   so the code grows linearly with N whatever the number of recursive calls per level (the
//!   former expansion at each call site doubled per level for `fib`). A self-call of the
//!   deepest copy cannot go further; it evaluates its arguments and becomes a trap: a run that
//!   needs more than N levels fails with an error located at that call, never a made-up
//!   value. (The OCaml PPX left the residual calls in, which no GPU target compiles.) More
//!   than [`NODE_LIMIT`] nodes of copies in all is refused with a located error.
//! - Any other self-call is a located error naming the function and suggesting the mark;
//!   mutual recursion (impossible by scoping, checked anyway) is a located error too.

use crate::hash::FxHashMap as HashMap;

use crate::diag::{Diagnostic, Span};
use crate::front::tast::{
    Expr, ExprKind, FunId, Function, InlineMark, LoopHints, Pattern, Program, Ty, VarDecl, VarId,
};
use crate::types::Literal;

/// Most typed-AST nodes the copies of one bounded-recursive helper may have in all. `fib`
/// (about 20 nodes) may be unrolled about 2,500 levels.
pub const NODE_LIMIT: u64 = 50_000;

pub fn eliminate(mut program: Program) -> Result<Program, Vec<Diagnostic>> {
    let mut diags = mutual_recursion(&program);
    if !diags.is_empty() {
        return Err(diags);
    }
    // Variable ids for copies, counted only once a helper is recursive (most programs have none).
    let mut fresh: Option<Fresh> = None;
    // Copies per depth of bounded-recursive helpers, each placed just before its helper.
    let mut depth_copies: Vec<(FunId, Vec<Function>)> = Vec::new();
    let mut names = Names::of(&program);
    let mut next_fun = program
        .functions
        .iter()
        .map(|f| f.id.0 + 1)
        .max()
        .unwrap_or(0);
    for i in 0..program.functions.len() {
        let f = &program.functions[i];
        let mut calls = Vec::new();
        self_calls(&f.body, f.id, Position::Tail, &mut calls);
        if calls.is_empty() {
            program.functions[i].recursive = false;
            continue;
        }
        let fresh = fresh.get_or_insert_with(|| Fresh(max_var(&program) + 1));
        let result = if calls.iter().all(|c| c.1 == Position::Tail) {
            to_loop(&program, f, fresh)
        } else if let Some(mark) = &f.inline_depth {
            unroll(&program, f, mark, fresh, &mut names, &mut next_fun).map(|(body, copies)| {
                depth_copies.push((f.id, copies));
                body
            })
        } else {
            let (span, pos) = calls
                .iter()
                .find(|c| c.1 != Position::Tail)
                .copied()
                .unwrap_or(calls[0]);
            Err(Box::new(not_tail_recursive(f, span, pos)))
        };
        match result {
            Ok(body) => {
                let f = &mut program.functions[i];
                f.body = body;
                f.recursive = false;
            }
            Err(d) => diags.push(*d),
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    if !depth_copies.is_empty() {
        place_copies(&mut program, depth_copies);
    }
    Ok(program)
}

/// Insert each helper's depth copies just before it (callees first, as every later pass
/// expects), then renumber so `FunId(i)` is the i-th function again.
fn place_copies(program: &mut Program, mut copies: Vec<(FunId, Vec<Function>)>) {
    let mut functions = Vec::new();
    for f in std::mem::take(&mut program.functions) {
        if let Some(at) = copies.iter().position(|(id, _)| *id == f.id) {
            functions.extend(copies.swap_remove(at).1);
        }
        functions.push(f);
    }
    let new_id: HashMap<FunId, FunId> = functions
        .iter()
        .enumerate()
        .map(|(i, f)| (f.id, FunId(i as u32)))
        .collect();
    fn renumber(e: &mut Expr, new_id: &HashMap<FunId, FunId>) {
        if let ExprKind::Call { func, .. } = &mut e.kind
            && let Some(n) = new_id.get(func)
        {
            *func = *n;
        }
        for c in e.children_mut() {
            renumber(c, new_id);
        }
    }
    for f in &mut functions {
        f.id = new_id[&f.id];
        renumber(&mut f.body, &new_id);
    }
    for k in &mut program.kernels {
        renumber(&mut k.body, &new_id);
    }
    program.functions = functions;
}

/// Every name the program declares, so a depth copy's name is new.
struct Names(crate::hash::FxHashSet<String>);

impl Names {
    fn of(program: &Program) -> Names {
        let mut names = crate::hash::FxHashSet::default();
        names.extend(program.functions.iter().map(|f| f.name.clone()));
        names.extend(program.kernels.iter().map(|k| k.name.clone()));
        names.extend(program.records.iter().map(|r| r.name.clone()));
        names.extend(program.variants.iter().map(|v| v.name.clone()));
        Names(names)
    }

    /// `candidate`, or `candidate_2`, `candidate_3`, ... when taken.
    fn fresh(&mut self, candidate: String) -> String {
        let mut name = candidate.clone();
        let mut k = 2;
        while self.0.contains(&name) {
            name = format!("{candidate}_{k}");
            k += 1;
        }
        self.0.insert(name.clone());
        name
    }
}

fn not_tail_recursive(f: &Function, call: Span, pos: Position) -> Diagnostic {
    let why = match pos {
        Position::InLoop => "this recursive call is inside a loop",
        Position::Argument => "this recursive call is an argument of another call",
        _ => "this recursive call is not in tail position: its result is used afterwards",
    };
    Diagnostic::error(call, format!("`{}` is recursive but not tail-recursive", f.source_name))
        .with_label(why)
        .with_secondary(f.span, format!("`{}` is defined here", f.source_name))
        .with_note("GPU code has no call stack: recursion must become a loop (tail calls) or be inlined to a fixed depth")
        .with_help(format!(
            "make every recursive call a tail call, or bound the recursion: `let rec {} ... : t [@sarek.inline N] = ...` inlines it N levels",
            f.source_name
        ))
}

/// Fresh variable ids past every id of the program.
struct Fresh(u32);

impl Fresh {
    fn next(&mut self) -> VarId {
        self.0 += 1;
        VarId(self.0 - 1)
    }
    fn decl(&mut self, name: &str, ty: Ty, mutable: bool, span: Span) -> VarDecl {
        VarDecl {
            id: self.next(),
            name: name.to_string(),
            ty,
            mutable,
            span,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Position {
    Tail,
    /// In a non-tail position of the body (its value is used, or code follows).
    NonTail,
    Argument,
    InLoop,
}

/// Every self-call of `fid` in `e`, with the position it occurs in.
fn self_calls(e: &Expr, fid: FunId, pos: Position, out: &mut Vec<(Span, Position)>) {
    let non_tail = if pos == Position::Tail {
        Position::NonTail
    } else {
        pos
    };
    match &e.kind {
        ExprKind::Call { func, args, .. } => {
            if *func == fid {
                out.push((e.span, pos));
            }
            let arg_pos = if matches!(pos, Position::InLoop) {
                pos
            } else {
                Position::Argument
            };
            for a in args {
                self_calls(a, fid, arg_pos, out);
            }
        }
        ExprKind::If {
            cond,
            then_branch,
            else_branch,
        } => {
            self_calls(cond, fid, non_tail, out);
            self_calls(then_branch, fid, pos, out);
            if let Some(b) = else_branch {
                self_calls(b, fid, pos, out);
            }
        }
        ExprKind::Match { scrutinee, arms } => {
            self_calls(scrutinee, fid, non_tail, out);
            for a in arms {
                self_calls(&a.body, fid, pos, out);
            }
        }
        ExprKind::Let { value, body, .. } => {
            self_calls(value, fid, non_tail, out);
            self_calls(body, fid, pos, out);
        }
        ExprKind::Seq(items) => {
            for (k, item) in items.iter().enumerate() {
                self_calls(
                    item,
                    fid,
                    if k + 1 == items.len() { pos } else { non_tail },
                    out,
                );
            }
        }
        ExprKind::LetShared { body, .. } | ExprKind::LetLocalArray { body, .. } => {
            self_calls(body, fid, pos, out)
        }
        ExprKind::Superstep { step, rest, .. } => {
            self_calls(step, fid, non_tail, out);
            self_calls(rest, fid, pos, out);
        }
        ExprKind::While { .. } | ExprKind::For { .. } => {
            for c in e.children() {
                self_calls(c, fid, Position::InLoop, out);
            }
        }
        _ => {
            for c in e.children() {
                self_calls(c, fid, non_tail, out);
            }
        }
    }
}

/// The binders introduced directly by a node (pattern variables, loop index, arrays).
fn binders_mut(e: &mut Expr) -> Vec<&mut VarDecl> {
    fn pattern<'a>(p: &'a mut Pattern, out: &mut Vec<&'a mut VarDecl>) {
        match p {
            Pattern::Bind(d) => out.push(d),
            Pattern::Ctor { args: ps, .. } | Pattern::Tuple(ps) | Pattern::Or(ps) => {
                for p in ps {
                    pattern(p, out);
                }
            }
            Pattern::Wildcard | Pattern::Lit(_) => {}
        }
    }
    let mut out = Vec::new();
    match &mut e.kind {
        ExprKind::Let { pattern: p, .. } => pattern(p, &mut out),
        ExprKind::For { var, .. }
        | ExprKind::LetShared { var, .. }
        | ExprKind::LetLocalArray { var, .. } => out.push(var),
        ExprKind::Match { arms, .. } => {
            for a in arms {
                pattern(&mut a.pattern, &mut out);
            }
        }
        _ => {}
    }
    out
}

/// Apply `f` to every variable id in `e`: references, assignments and binders.
fn for_each_var_mut(e: &mut Expr, f: &mut impl FnMut(&mut VarId)) {
    match &mut e.kind {
        ExprKind::Var(id) | ExprKind::Assign { var: id, .. } => f(id),
        _ => {}
    }
    for d in binders_mut(e) {
        f(&mut d.id);
    }
    for c in e.children_mut() {
        for_each_var_mut(c, f);
    }
}

fn max_var(program: &Program) -> u32 {
    fn pattern(p: &Pattern, m: &mut u32) {
        match p {
            Pattern::Bind(d) => *m = (*m).max(d.id.0),
            Pattern::Ctor { args: ps, .. } | Pattern::Tuple(ps) | Pattern::Or(ps) => {
                ps.iter().for_each(|p| pattern(p, m))
            }
            Pattern::Wildcard | Pattern::Lit(_) => {}
        }
    }
    fn expr(e: &Expr, m: &mut u32) {
        match &e.kind {
            ExprKind::Var(id) | ExprKind::Assign { var: id, .. } => *m = (*m).max(id.0),
            ExprKind::Let { pattern: p, .. } => pattern(p, m),
            ExprKind::For { var, .. }
            | ExprKind::LetShared { var, .. }
            | ExprKind::LetLocalArray { var, .. } => *m = (*m).max(var.id.0),
            ExprKind::Match { arms, .. } => arms.iter().for_each(|a| pattern(&a.pattern, m)),
            _ => {}
        }
        e.children().for_each(|c| expr(c, m));
    }
    let mut m = 0;
    for f in &program.functions {
        f.params.iter().for_each(|p| m = m.max(p.id.0));
        expr(&f.body, &mut m);
    }
    for k in &program.kernels {
        k.params.iter().for_each(|p| m = m.max(p.id.0));
        expr(&k.body, &mut m);
    }
    m
}

/// Give every binder of `e` a fresh id (and the ids in `extra`), renaming references.
fn freshen(e: &mut Expr, extra: &[VarId], fresh: &mut Fresh) -> HashMap<VarId, VarId> {
    let mut map: HashMap<VarId, VarId> = extra.iter().map(|v| (*v, fresh.next())).collect();
    fn collect(e: &mut Expr, map: &mut HashMap<VarId, VarId>, fresh: &mut Fresh) {
        for d in binders_mut(e) {
            map.entry(d.id).or_insert_with(|| fresh.next());
        }
        for c in e.children_mut() {
            collect(c, map, fresh);
        }
    }
    collect(e, &mut map, fresh);
    for_each_var_mut(e, &mut |id| {
        if let Some(n) = map.get(id) {
            *id = *n;
        }
    });
    map
}

fn node_count(e: &Expr) -> u64 {
    1 + e.children().map(node_count).sum::<u64>()
}

/// The zero value of a type (the initial `result` of a loop, a residual inlined call).
fn zero(program: &Program, ty: &Ty, span: Span) -> Option<Expr> {
    let kind = match ty {
        Ty::Unit => ExprKind::Unit,
        Ty::Scalar(s) => ExprKind::Lit(match s {
            crate::types::Scalar::Bool => Literal::Bool(false),
            crate::types::Scalar::I32 => Literal::I32(0),
            crate::types::Scalar::I64 => Literal::I64(0),
            crate::types::Scalar::F32 => Literal::F32(0.0),
            crate::types::Scalar::F64 => Literal::F64(0.0),
        }),
        Ty::Record(id) => {
            let def = program.records.get(id.0 as usize)?;
            let fields = def
                .fields
                .iter()
                .map(|f| zero(program, &f.ty, span))
                .collect::<Option<_>>()?;
            ExprKind::Record {
                record: *id,
                fields,
            }
        }
        Ty::Variant(id) => {
            let c = program.variants.get(id.0 as usize)?.ctors.first()?;
            let args = c
                .args
                .iter()
                .map(|t| zero(program, t, span))
                .collect::<Option<_>>()?;
            ExprKind::Ctor {
                variant: *id,
                ctor: 0,
                args,
            }
        }
        Ty::Tuple(cs) => ExprKind::Tuple(
            cs.iter()
                .map(|t| zero(program, t, span))
                .collect::<Option<_>>()?,
        ),
        Ty::Vector(_) | Ty::Array { .. } | Ty::Param(_) => return None,
    };
    Some(Expr {
        kind,
        ty: ty.clone(),
        span,
    })
}

fn no_zero(f: &Function) -> Diagnostic {
    Diagnostic::error(
        f.span,
        format!(
            "recursive helper `{}` returns a value with no zero value",
            f.source_name
        ),
    )
    .with_label("return type is a vector or array")
    .with_note("recursion elimination needs an initial value of the result type")
}

fn mk(kind: ExprKind, ty: Ty, span: Span) -> Expr {
    Expr { kind, ty, span }
}

fn var(d: &VarDecl) -> Expr {
    mk(ExprKind::Var(d.id), d.ty.clone(), d.span)
}

fn assign(d: &VarDecl, value: Expr) -> Expr {
    let span = value.span;
    mk(
        ExprKind::Assign {
            var: d.id,
            value: Box::new(value),
        },
        Ty::Unit,
        span,
    )
}

fn let_in(d: VarDecl, value: Expr, body: Expr) -> Expr {
    let (ty, span) = (body.ty.clone(), value.span);
    mk(
        ExprKind::Let {
            pattern: Pattern::Bind(d),
            value: Box::new(value),
            body: Box::new(body),
        },
        ty,
        span,
    )
}

/// The tail-recursive helper `f` as a loop.
fn to_loop(program: &Program, f: &Function, fresh: &mut Fresh) -> Result<Expr, Box<Diagnostic>> {
    let span = f.span;
    // Vectors and arrays are named, not copied: a tail call must pass the same one back.
    let by_name = |p: &VarDecl| matches!(p.ty, Ty::Vector(_) | Ty::Array { .. });
    let mut calls = Vec::new();
    collect_self_call_args(&f.body, f.id, &mut calls);
    for (call_span, args) in calls {
        for (p, a) in f.params.iter().zip(args) {
            if by_name(p) && !matches!(a.kind, ExprKind::Var(id) if id == p.id) {
                return Err(Box::new(
                    Diagnostic::error(a.span, format!("this tail call of `{}` passes another array as `{}`", f.source_name, p.name))
                        .with_label(format!("expected `{}` itself", p.name))
                        .with_secondary(call_span, "tail call")
                        .with_note("a tail-recursive helper becomes a loop, and a loop cannot rebind a vector or array parameter")
                        .with_help("pass the same vector in every recursive call"),
                ));
            }
        }
    }
    let copies: Vec<Option<VarDecl>> = f
        .params
        .iter()
        .map(|p| (!by_name(p)).then(|| fresh.decl(&p.name, p.ty.clone(), true, p.span)))
        .collect();
    let result = if f.ret == Ty::Unit {
        None
    } else {
        Some(fresh.decl("result", f.ret.clone(), true, span))
    };
    let running = fresh.decl("running", Ty::BOOL, true, span);
    let mut body = f.body.clone();
    let map: HashMap<VarId, VarId> = f
        .params
        .iter()
        .zip(&copies)
        .filter_map(|(p, c)| Some((p.id, c.as_ref()?.id)))
        .collect();
    for_each_var_mut(&mut body, &mut |id| {
        if let Some(n) = map.get(id) {
            *id = *n;
        }
    });
    let ctx = LoopCtx {
        fid: f.id,
        copies: &copies,
        result: result.as_ref(),
        running: &running,
    };
    let body = ctx.tailify(body, fresh);
    let reset = assign(
        &running,
        mk(ExprKind::Lit(Literal::Bool(false)), Ty::BOOL, span),
    );
    let loop_body = mk(ExprKind::Seq(vec![reset, body]), Ty::Unit, span);
    let while_loop = mk(
        ExprKind::While {
            cond: Box::new(var(&running)),
            body: Box::new(loop_body),
            hints: LoopHints::default(),
        },
        Ty::Unit,
        span,
    );
    let tail = match &result {
        Some(r) => var(r),
        None => mk(ExprKind::Unit, Ty::Unit, span),
    };
    let mut e = mk(ExprKind::Seq(vec![while_loop, tail]), f.ret.clone(), span);
    e = let_in(
        running,
        mk(ExprKind::Lit(Literal::Bool(true)), Ty::BOOL, span),
        e,
    );
    if let Some(r) = result {
        let Some(z) = zero(program, &f.ret, span) else {
            return Err(Box::new(no_zero(f)));
        };
        e = let_in(r, z, e);
    }
    for (p, c) in f.params.iter().zip(copies).rev() {
        if let Some(c) = c {
            e = let_in(c, var(p), e);
        }
    }
    Ok(e)
}

struct LoopCtx<'a> {
    fid: FunId,
    copies: &'a [Option<VarDecl>],
    result: Option<&'a VarDecl>,
    running: &'a VarDecl,
}

impl LoopCtx<'_> {
    /// Rewrite the tail positions of `e` (a unit expression results).
    fn tailify(&self, e: Expr, fresh: &mut Fresh) -> Expr {
        let Expr { kind, ty, span } = e;
        let kind = match kind {
            ExprKind::If {
                cond,
                then_branch,
                else_branch,
            } => ExprKind::If {
                cond,
                then_branch: Box::new(self.tailify(*then_branch, fresh)),
                else_branch: else_branch.map(|b| Box::new(self.tailify(*b, fresh))),
            },
            ExprKind::Match { scrutinee, arms } => ExprKind::Match {
                scrutinee,
                arms: arms
                    .into_iter()
                    .map(|mut a| {
                        a.body = self.tailify(a.body, fresh);
                        a
                    })
                    .collect(),
            },
            ExprKind::Let {
                pattern,
                value,
                body,
            } => ExprKind::Let {
                pattern,
                value,
                body: Box::new(self.tailify(*body, fresh)),
            },
            ExprKind::Seq(mut items) => match items.pop() {
                Some(last) => {
                    items.push(self.tailify(last, fresh));
                    ExprKind::Seq(items)
                }
                None => ExprKind::Seq(items),
            },
            ExprKind::LetShared { var, body } => ExprKind::LetShared {
                var,
                body: Box::new(self.tailify(*body, fresh)),
            },
            ExprKind::LetLocalArray { var, body } => ExprKind::LetLocalArray {
                var,
                body: Box::new(self.tailify(*body, fresh)),
            },
            ExprKind::Superstep {
                name,
                divergent,
                step,
                rest,
            } => ExprKind::Superstep {
                name,
                divergent,
                step,
                rest: Box::new(self.tailify(*rest, fresh)),
            },
            ExprKind::Call { func, args, .. } if func == self.fid => {
                // New arguments go through temporaries: they may read the current values.
                let mut temps = Vec::new();
                let mut stmts = Vec::new();
                for (c, a) in self.copies.iter().zip(args) {
                    // Vector arguments were checked to be the parameter itself.
                    if let Some(c) = c {
                        let t = fresh.decl(&c.name, c.ty.clone(), false, span);
                        stmts.push(assign(c, var(&t)));
                        temps.push((t, a));
                    }
                }
                stmts.push(assign(
                    self.running,
                    mk(ExprKind::Lit(Literal::Bool(true)), Ty::BOOL, span),
                ));
                let mut e = mk(ExprKind::Seq(stmts), Ty::Unit, span);
                for (t, a) in temps.into_iter().rev() {
                    e = let_in(t, a, e);
                }
                return e;
            }
            kind => {
                let e = Expr { kind, ty, span };
                return match self.result {
                    Some(r) if e.ty != Ty::Unit => assign(r, e),
                    _ => e,
                };
            }
        };
        Expr {
            kind,
            ty: Ty::Unit,
            span,
        }
    }
}

/// `f` unrolled `depth` levels: its new body (self-calls go to the first copy) and the
/// copies for depths `depth` down to 1, callees first.
fn unroll(
    program: &Program,
    f: &Function,
    mark: &InlineMark,
    fresh: &mut Fresh,
    names: &mut Names,
    next_fun: &mut u32,
) -> Result<(Expr, Vec<Function>), Box<Diagnostic>> {
    let depth = mark.depth;
    let n = node_count(&f.body);
    let size = n.saturating_mul(u64::from(depth) + 1);
    if size > NODE_LIMIT {
        return Err(Box::new(
            Diagnostic::error(f.span, format!("inlining `{}` {depth} levels deep is too large", f.source_name))
                .with_label(format!("`{mark}` unrolls to more than {NODE_LIMIT} nodes"))
                .with_note(format!(
                    "each level is one copy of the body ({n} nodes here)"
                ))
                .with_help("lower the inline depth, or rewrite the helper so its recursive calls are tail calls"),
        ));
    }
    if zero(program, &f.ret, f.span).is_none() {
        return Err(Box::new(no_zero(f)));
    }
    let ids: Vec<FunId> = (0..depth)
        .map(|_| {
            *next_fun += 1;
            FunId(*next_fun - 1)
        })
        .collect();
    // ids[d - 1] is the copy at depth d; the deepest copy traps at its self-calls.
    let mut copies = Vec::new();
    for d in (1..=depth).rev() {
        let mut body = f.body.clone();
        let param_ids: Vec<VarId> = f.params.iter().map(|p| p.id).collect();
        let map = freshen(&mut body, &param_ids, fresh);
        let next = ids.get(d as usize).copied();
        retarget(program, f, &mut body, next, mark);
        let params = f
            .params
            .iter()
            .map(|p| VarDecl {
                id: map[&p.id],
                ..p.clone()
            })
            .collect();
        copies.push(Function {
            id: ids[d as usize - 1],
            name: names.fresh(format!("{}__depth{d}", f.name)),
            params,
            body,
            recursive: false,
            inline_depth: None,
            ..f.clone()
        });
    }
    let mut body = f.body.clone();
    retarget(program, f, &mut body, ids.first().copied(), mark);
    Ok((body, copies))
}

/// Point `f`'s self-calls in `e` at `next`, or, with none (past the depth `mark` declares),
/// make each one evaluate its arguments and trap.
fn retarget(program: &Program, f: &Function, e: &mut Expr, next: Option<FunId>, mark: &InlineMark) {
    for c in e.children_mut() {
        retarget(program, f, c, next, mark);
    }
    let ExprKind::Call { func, args, .. } = &mut e.kind else {
        return;
    };
    if *func != f.id {
        return;
    }
    if let Some(next) = next {
        *func = next;
        return;
    }
    let args = std::mem::take(args);
    let span = e.span;
    let fallback = zero(program, &f.ret, span).unwrap_or(Expr {
        kind: ExprKind::Unit,
        ty: Ty::Unit,
        span,
    });
    let message = format!(
        "`{}` recursed deeper than the {} levels its `{mark}` mark allows",
        f.source_name, mark.depth
    );
    let mut r = mk(
        ExprKind::Trap {
            message,
            fallback: Box::new(fallback),
        },
        f.ret.clone(),
        span,
    );
    for a in args.into_iter().rev() {
        let ty = r.ty.clone();
        r = mk(
            ExprKind::Let {
                pattern: Pattern::Wildcard,
                value: Box::new(a),
                body: Box::new(r),
            },
            ty,
            span,
        );
    }
    *e = r;
}

/// Calls between distinct helpers that form a cycle.
fn mutual_recursion(program: &Program) -> Vec<Diagnostic> {
    let index: HashMap<FunId, usize> = program
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| (f.id, i))
        .collect();
    // Edges: caller -> (callee, call span), self-calls excluded.
    let edges: Vec<Vec<(usize, Span)>> = program
        .functions
        .iter()
        .map(|f| {
            let mut out = Vec::new();
            collect_calls(&f.body, &mut |callee, span| {
                if callee != f.id
                    && let Some(&j) = index.get(&callee)
                {
                    out.push((j, span));
                }
            });
            out
        })
        .collect();
    let mut diags = Vec::new();
    let mut state = vec![0u8; edges.len()]; // 0 new, 1 on stack, 2 done
    let mut stack: Vec<usize> = Vec::new();
    fn dfs(
        i: usize,
        edges: &[Vec<(usize, Span)>],
        state: &mut [u8],
        stack: &mut Vec<usize>,
        program: &Program,
        diags: &mut Vec<Diagnostic>,
    ) {
        state[i] = 1;
        stack.push(i);
        for &(j, span) in &edges[i] {
            if state[j] == 1 {
                let from = stack.iter().position(|&s| s == j).unwrap_or(0);
                let names: Vec<String> = stack[from..]
                    .iter()
                    .map(|&s| format!("`{}`", program.functions[s].source_name))
                    .collect();
                diags.push(
                    Diagnostic::error(
                        span,
                        format!("mutual recursion between {}", names.join(", ")),
                    )
                    .with_label(format!(
                        "this call to `{}` closes the cycle",
                        program.functions[j].name
                    ))
                    .with_secondary(program.functions[j].span, "defined here")
                    .with_note("helpers may call only helpers defined before them, and themselves"),
                );
            } else if state[j] == 0 {
                crate::stack::grow(|| dfs(j, edges, state, stack, program, diags));
            }
        }
        stack.pop();
        state[i] = 2;
    }
    for i in 0..edges.len() {
        if state[i] == 0 {
            dfs(i, &edges, &mut state, &mut stack, program, &mut diags);
        }
    }
    diags
}

fn collect_self_call_args<'e>(e: &'e Expr, fid: FunId, out: &mut Vec<(Span, &'e [Expr])>) {
    if let ExprKind::Call { func, args, .. } = &e.kind
        && *func == fid
    {
        out.push((e.span, args));
    }
    for c in e.children() {
        collect_self_call_args(c, fid, out);
    }
}

fn collect_calls(e: &Expr, f: &mut impl FnMut(FunId, Span)) {
    if let ExprKind::Call { func, .. } = &e.kind {
        f(*func, e.span);
    }
    for c in e.children() {
        collect_calls(c, f);
    }
}
