//! Preparation: rewrite the kernel body so that every synchronisation point is a statement of
//! its own and every condition of synchronising control flow is a variable.
//!
//! - barriers written as expression statements become [`StmtKind::Barrier`]; fences are
//!   dropped (memory is sequentially consistent within a block and blocks only meet through
//!   atomics);
//! - a warp operation inside an expression is hoisted before its statement:
//!   `let a = x; let b = y; let w = warp_op a b` then the expression reads `w`;
//! - `if`, `for` and `while` around a synchronisation point get their condition or bounds in
//!   fresh variables (`while c do body` becomes `let mut t = c; while t do body; t := c`);
//! - a call of a helper that synchronises (a barrier or warp operation in its body, or in a
//!   helper it calls) is inlined when it is a statement of its own, a `let`'s initialiser or
//!   the value assigned to a variable or to an element whose index the call cannot change:
//!   its arguments in fresh variables, its body copied with fresh binders, its final
//!   `return e` assigning the result, an earlier `return` setting the result and a `done`
//!   flag that guards what follows; such a call inside a larger expression first moves into
//!   a `let` of its own, what is evaluated before it that is not inert (memory reads, calls,
//!   faulting divisions, mutable variables) into `let`s before that, in order;
//! - `c && w` (`c || w`) with a warp operation in `w` becomes `if c then t := w` (its else
//!   branch), and `if c then a else b` with one in an arm `if c then t := a else t := b`: a
//!   block-uniform `if` around the warp operation;
//! - a `match` with a synchronisation point in an arm becomes a chain of `if`s on the tag
//!   (payload bindings as `let`s; no default arm: a `match` without arms, which faults).
//!
//! What the block-level scheduling cannot express is refused here ([`JitError::Unsupported`]):
//! a synchronising helper called under the lazy operand of `&&`/`||` or in an arm of a
//! conditional expression, or returning from inside a loop; `break`/`continue` that leave a
//! synchronising loop; opaque native code.

use crate::JitError;
use sarek_compiler::Span;
use sarek_compiler::intrinsics::Intrinsic;
use sarek_compiler::ir::fresh::{Scope, copy_block, fresh_var};
use sarek_compiler::ir::{
    Block, Expr, ExprKind, FuncId, Kernel, LValue, MatchArm, Stmt, StmtKind, Ty, VarId, VarInfo,
    VariantId,
};
use sarek_compiler::types::BinOp;
use std::collections::HashSet;

type R<T> = Result<T, JitError>;

/// The prepared copy of `k`.
pub(crate) fn prepare(k: &Kernel) -> R<Kernel> {
    let mut out = k.clone();
    for f in &mut out.functions {
        f.body = normalize(std::mem::take(&mut f.body));
    }
    out.body = normalize(std::mem::take(&mut out.body));
    let sync = sync_helpers(&out);
    let mut p = Prep { k: &mut out };
    if !sync.is_empty() {
        let body = std::mem::take(&mut p.k.body);
        p.k.body = p.inline_block(body, &sync, 0)?;
    }
    for i in 0..p.k.functions.len() {
        let f = &p.k.functions[i];
        if let Some(span) = first_native(&f.body) {
            return Err(p.unsupported("opaque native code", span));
        }
    }
    if let Some(span) = first_native(&p.k.body) {
        return Err(p.unsupported("opaque native code", span));
    }
    let body = std::mem::take(&mut p.k.body);
    let body = p.block(body)?;
    p.k.body = body;
    Ok(out)
}

fn is_barrier_expr(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Intrinsic {
            op: Intrinsic::BlockBarrier,
            ..
        }
    )
}

fn is_fence_expr(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Intrinsic {
            op: Intrinsic::FenceBlock | Intrinsic::FenceDevice,
            ..
        }
    )
}

/// Barrier expression statements to barriers, fences dropped, recursively.
fn normalize(b: Block) -> Block {
    let mut out = Vec::with_capacity(b.len());
    for mut s in b {
        match &mut s.kind {
            StmtKind::Expr(e) if is_barrier_expr(e) => s.kind = StmtKind::Barrier,
            StmtKind::Expr(e) if is_fence_expr(e) => continue,
            StmtKind::Fence { .. } => continue,
            StmtKind::If {
                then_block,
                else_block,
                ..
            } => {
                *then_block = normalize(std::mem::take(then_block));
                *else_block = normalize(std::mem::take(else_block));
            }
            StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::Block(body) => {
                *body = normalize(std::mem::take(body))
            }
            StmtKind::Match { arms, .. } => {
                for a in arms {
                    a.body = normalize(std::mem::take(&mut a.body));
                }
            }
            _ => {}
        }
        out.push(s);
    }
    out
}

/// Whether an expression contains a warp operation.
pub(crate) fn has_warp(e: &Expr) -> bool {
    let mut found = false;
    walk_expr(e, &mut |x| {
        if let ExprKind::Intrinsic {
            op: Intrinsic::Warp(_),
            ..
        } = x.kind
        {
            found = true;
        }
    });
    found
}

/// Pre-order walk over an expression tree.
/// The direct sub-expressions of `e`, in evaluation order (as [`walk_expr`] visits them).
fn children_mut(e: &mut Expr) -> Vec<&mut Expr> {
    match &mut e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => Vec::new(),
        ExprKind::Binary { lhs, rhs, .. } => vec![&mut **lhs, &mut **rhs],
        ExprKind::Unary { operand: a, .. }
        | ExprKind::Index { index: a, .. }
        | ExprKind::Field { base: a, .. }
        | ExprKind::Tag(a)
        | ExprKind::Payload { value: a, .. } => vec![&mut **a],
        ExprKind::Record { fields, .. }
        | ExprKind::Ctor { fields, .. }
        | ExprKind::Call { args: fields, .. }
        | ExprKind::Intrinsic { args: fields, .. } => fields.iter_mut().collect(),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => vec![&mut **cond, &mut **then_value, &mut **else_value],
    }
}

pub(crate) fn walk_expr(e: &Expr, f: &mut impl FnMut(&Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => {}
        ExprKind::Binary { lhs, rhs, .. } => {
            walk_expr(lhs, f);
            walk_expr(rhs, f);
        }
        ExprKind::Unary { operand: a, .. }
        | ExprKind::Index { index: a, .. }
        | ExprKind::Field { base: a, .. }
        | ExprKind::Tag(a)
        | ExprKind::Payload { value: a, .. } => walk_expr(a, f),
        ExprKind::Record { fields, .. }
        | ExprKind::Ctor { fields, .. }
        | ExprKind::Call { args: fields, .. }
        | ExprKind::Intrinsic { args: fields, .. } => fields.iter().for_each(|a| walk_expr(a, f)),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => {
            walk_expr(cond, f);
            walk_expr(then_value, f);
            walk_expr(else_value, f);
        }
    }
}

/// Expressions a statement evaluates itself (not those of nested blocks).
pub(crate) fn own_exprs(s: &Stmt) -> Vec<&Expr> {
    match &s.kind {
        StmtKind::Let { init: Some(e), .. } | StmtKind::Expr(e) | StmtKind::Return(Some(e)) => {
            vec![e]
        }
        StmtKind::Assign { place, value } => {
            let mut v = place_exprs(place);
            v.push(value);
            v
        }
        StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => vec![cond],
        StmtKind::For { start, end, .. } => vec![start, end],
        StmtKind::Match { scrutinee, .. } => vec![scrutinee],
        _ => vec![],
    }
}

fn place_exprs(p: &LValue) -> Vec<&Expr> {
    match p {
        LValue::Var(_) => vec![],
        LValue::Index { index, .. } => vec![index],
        LValue::Field { base, .. } => place_exprs(base),
    }
}

/// Whether a statement (with its nested blocks) synchronises: a barrier or a warp operation.
pub(crate) fn is_sync(s: &Stmt) -> bool {
    if matches!(s.kind, StmtKind::Barrier) || own_exprs(s).into_iter().any(has_warp) {
        return true;
    }
    nested_blocks(s).into_iter().any(|b| b.iter().any(is_sync))
}

pub(crate) fn nested_blocks(s: &Stmt) -> Vec<&Block> {
    match &s.kind {
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => vec![then_block, else_block],
        StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::Block(body) => {
            vec![body]
        }
        StmtKind::Match { arms, .. } => arms.iter().map(|a| &a.body).collect(),
        _ => vec![],
    }
}

/// The helpers that synchronise: a barrier or warp operation in their body, or a call of
/// such a helper (the IR has no recursion, so the fixpoint ends).
fn sync_helpers(k: &Kernel) -> HashSet<FuncId> {
    let mut sync = HashSet::new();
    loop {
        let before = sync.len();
        for (i, f) in k.functions.iter().enumerate() {
            let id = FuncId(i as u32);
            if !sync.contains(&id) && f.body.iter().any(|s| stmt_syncs(s, &sync)) {
                sync.insert(id);
            }
        }
        if sync.len() == before {
            return sync;
        }
    }
}

/// Whether `s` synchronises, counting calls of the helpers in `sync`.
fn stmt_syncs(s: &Stmt, sync: &HashSet<FuncId>) -> bool {
    is_sync(s)
        || own_exprs(s).into_iter().any(|e| calls_any(e, sync))
        || nested_blocks(s)
            .into_iter()
            .any(|b| b.iter().any(|s| stmt_syncs(s, sync)))
}

fn calls_any(e: &Expr, funcs: &HashSet<FuncId>) -> bool {
    let mut found = false;
    walk_expr(e, &mut |x| {
        if let ExprKind::Call { func, .. } = x.kind {
            found |= funcs.contains(&func);
        }
    });
    found
}

/// Whether a block has a `return` anywhere (nested blocks included).
fn has_return(b: &[Stmt]) -> bool {
    b.iter().any(|s| {
        matches!(s.kind, StmtKind::Return(_)) || nested_blocks(s).into_iter().any(|b| has_return(b))
    })
}

/// Helpers inlined into helpers inlined into... at most this deep (the IR has no recursion;
/// this bounds the size of what a long chain of helpers could copy).
const MAX_INLINE_DEPTH: usize = 16;

fn first_native(b: &Block) -> Option<Span> {
    for s in b {
        if matches!(s.kind, StmtKind::Native(_)) {
            return Some(s.span);
        }
        for nb in nested_blocks(s) {
            if let Some(sp) = first_native(nb) {
                return Some(sp);
            }
        }
    }
    None
}

/// Whether `b` has a `break`/`continue` that leaves the loop whose body it is.
fn jumps_out(b: &Block) -> bool {
    b.iter().any(|s| match &s.kind {
        StmtKind::Break | StmtKind::Continue | StmtKind::Return(_) => true,
        StmtKind::For { .. } | StmtKind::While { .. } => false,
        _ => nested_blocks(s).into_iter().any(jumps_out),
    })
}

fn is_value_ty(ty: &Ty) -> bool {
    !matches!(ty, Ty::Vector(_) | Ty::Array { .. } | Ty::Unit)
}

struct Prep<'k> {
    k: &'k mut Kernel,
}

impl Prep<'_> {
    fn unsupported(&self, what: &str, span: Span) -> JitError {
        JitError::Unsupported {
            kernel: self.k.name.clone(),
            what: what.to_string(),
            span,
        }
    }

    fn fresh(&mut self, ty: Ty, mutable: bool) -> VarId {
        let id = VarId(self.k.vars.len() as u32);
        self.k.vars.push(VarInfo {
            name: format!("_jit{}", id.0),
            ty,
            mutable,
            span: Span::DUMMY,
        });
        id
    }

    fn let_(&self, var: VarId, init: Expr, span: Span) -> Stmt {
        Stmt {
            kind: StmtKind::Let {
                var,
                init: Some(init),
            },
            span,
        }
    }

    fn var_expr(&self, v: VarId) -> Expr {
        Expr::new(ExprKind::Var(v), self.k.var(v).ty.clone())
    }

    /// `let t = e` before, `t` in its place.
    fn bind_temp(&mut self, e: Expr, span: Span, pre: &mut Block) -> Expr {
        if let ExprKind::Var(_) = e.kind {
            return e;
        }
        let v = self.fresh(e.ty.clone(), false);
        pre.push(self.let_(v, e, span));
        self.var_expr(v)
    }

    /// `b` with every call of a synchronising helper inlined ([`Prep::inline_call`]).
    fn inline_block(&mut self, b: Block, sync: &HashSet<FuncId>, depth: usize) -> R<Block> {
        let mut out = Vec::with_capacity(b.len());
        for mut s in b {
            if !stmt_syncs(&s, sync) {
                out.push(s);
                continue;
            }
            let span = s.span;
            // The call as the whole statement, initialiser or assigned value (assigned to a
            // variable, or to an element whose index the call cannot change: evaluated after
            // the call instead of before, it is the same value).
            let call = match &s.kind {
                StmtKind::Expr(e)
                | StmtKind::Let { init: Some(e), .. }
                | StmtKind::Assign {
                    place: LValue::Var(_),
                    value: e,
                } => Some(e),
                StmtKind::Assign { place, value } if self.inert_place(place) => Some(value),
                _ => None,
            }
            .and_then(|e| match &e.kind {
                ExprKind::Call { func, args }
                    if sync.contains(func) && !args.iter().any(|a| calls_any(a, sync)) =>
                {
                    Some((*func, args.clone()))
                }
                _ => None,
            });
            if let Some((func, args)) = call {
                if depth >= MAX_INLINE_DEPTH {
                    return Err(self.unsupported("helpers with barriers nested this deep", span));
                }
                let (body, result) = self.inline_call(func, args, span)?;
                let body = self.inline_block(body, sync, depth + 1)?;
                out.extend(body);
                match (s.kind, result) {
                    (StmtKind::Expr(_), _) => {}
                    (StmtKind::Let { var, .. }, Some(r)) => out.push(self.let_(var, r, span)),
                    (StmtKind::Assign { place, .. }, Some(value)) => out.push(Stmt {
                        kind: StmtKind::Assign { place, value },
                        span,
                    }),
                    _ => return Err(self.unsupported("a helper with barriers and no result", span)),
                }
                continue;
            }
            // A call inside a larger expression runs first in a `let` of its own (`x + f s v`
            // becomes `let t = f s v in x + t`), then is inlined as above; what is evaluated
            // before it and is not inert moves into `let`s before it, in order (`a.(i) + f s
            // v` becomes `let r = a.(i) in let t = f s v in r + t`).
            self.spill_before_sync_call(&mut s, sync, &mut out);
            if let Some((tmp, call)) = self.take_sync_call(&mut s, sync) {
                let made = self.fresh(call.ty.clone(), false);
                debug_assert_eq!(made, tmp, "the variable the statement now reads");
                let first = self.let_(tmp, call, span);
                out.extend(self.inline_block(vec![first, s], sync, depth)?);
                continue;
            }
            if own_exprs(&s).into_iter().any(|e| calls_any(e, sync)) {
                return Err(self.unsupported(
                    "a call of a helper with barriers inside an expression",
                    span,
                ));
            }
            match &mut s.kind {
                StmtKind::If {
                    then_block,
                    else_block,
                    ..
                } => {
                    *then_block = self.inline_block(std::mem::take(then_block), sync, depth)?;
                    *else_block = self.inline_block(std::mem::take(else_block), sync, depth)?;
                }
                StmtKind::For { body, .. }
                | StmtKind::While { body, .. }
                | StmtKind::Block(body) => {
                    *body = self.inline_block(std::mem::take(body), sync, depth)?;
                }
                StmtKind::Match { arms, .. } => {
                    for a in arms {
                        a.body = self.inline_block(std::mem::take(&mut a.body), sync, depth)?;
                    }
                }
                _ => {}
            }
            out.push(s);
        }
        Ok(out)
    }

    /// The expression of `s` that [`Prep::take_sync_call`] takes a call from, if any.
    fn call_site<'s>(&self, s: &'s mut Stmt) -> Option<&'s mut Expr> {
        match &mut s.kind {
            StmtKind::Expr(e)
            | StmtKind::Let { init: Some(e), .. }
            | StmtKind::If { cond: e, .. }
            | StmtKind::Assign {
                place: LValue::Var(_),
                value: e,
            } => Some(e),
            StmtKind::Assign { place, value } if self.inert_place(place) => Some(value),
            _ => None,
        }
    }

    /// The operands of `s`'s expression evaluated before its first call of a synchronising
    /// helper that are not inert, each bound to a fresh `let` in `pre` (in evaluation order)
    /// and read from it: the call can then move before the statement with nothing it could
    /// change or fault on moving past it.
    fn spill_before_sync_call(&mut self, s: &mut Stmt, sync: &HashSet<FuncId>, pre: &mut Block) {
        let span = s.span;
        if let Some(e) = self.call_site(s) {
            let mut e = std::mem::replace(e, Expr::i32(0));
            self.spill_before(&mut e, sync, span, pre);
            *self.call_site(s).expect("the same statement") = e;
        }
    }

    /// [`Prep::spill_before_sync_call`] in `e`; whether `e` holds a synchronising call (the
    /// walk ends there). A call under the lazy operand of `&&`/`||` or an arm of a
    /// conditional expression ends it too: [`Prep::take_call`] refuses those.
    fn spill_before(
        &mut self,
        e: &mut Expr,
        sync: &HashSet<FuncId>,
        span: Span,
        pre: &mut Block,
    ) -> bool {
        if !calls_any(e, sync) {
            return false;
        }
        let is_sync_call = matches!(&e.kind, ExprKind::Call { func, .. } if sync.contains(func));
        match &mut e.kind {
            ExprKind::Binary {
                op: BinOp::And | BinOp::Or,
                lhs,
                ..
            } => {
                self.spill_before(lhs, sync, span, pre);
                return true;
            }
            ExprKind::Select { cond, .. } => {
                self.spill_before(cond, sync, span, pre);
                return true;
            }
            _ => {}
        }
        let children = children_mut(e);
        // A synchronising call's own arguments go with it (unless a later one holds a call).
        if is_sync_call && !children.iter().any(|c| calls_any(c, sync)) {
            return true;
        }
        for child in children {
            if self.spill_before(child, sync, span, pre) {
                return true;
            }
            if !self.inert(child) {
                // Every one, mutable variables included (`bind_temp` keeps variables).
                let c = std::mem::replace(child, Expr::i32(0));
                let v = self.fresh(c.ty.clone(), false);
                pre.push(self.let_(v, c, span));
                *child = self.var_expr(v);
            }
        }
        true
    }

    /// The first call of a synchronising helper in the expression of `s` (the whole
    /// expression statement, `let` initialiser, `if` condition, or value assigned to an
    /// inert place), replaced by a read of the variable [`Prep::fresh`] creates next (returned with the call), when
    /// everything evaluated before it is inert ([`Prep::inert`]) and it is not under a
    /// short-circuit operand or a conditional expression.
    fn take_sync_call(&self, s: &mut Stmt, sync: &HashSet<FuncId>) -> Option<(VarId, Expr)> {
        let tmp = VarId(self.k.vars.len() as u32);
        let e = self.call_site(s)?;
        let call = self.take_call(e, sync, tmp, &mut true)?.ok()?;
        Some((tmp, call))
    }

    /// [`Prep::take_sync_call`] in `e`: `Some(Err)` when the first synchronising call
    /// cannot be taken out (then `e` is unchanged), `None` when there is none. `clean`:
    /// everything evaluated so far is inert.
    fn take_call(
        &self,
        e: &mut Expr,
        sync: &HashSet<FuncId>,
        tmp: VarId,
        clean: &mut bool,
    ) -> Option<Result<Expr, ()>> {
        let before = *clean;
        if matches!(e.kind, ExprKind::Select { .. }) && calls_any(e, sync) {
            return Some(Err(()));
        }
        match &mut e.kind {
            ExprKind::Binary {
                op: BinOp::And | BinOp::Or,
                lhs,
                rhs,
                ..
            } => {
                if let found @ Some(_) = self.take_call(lhs, sync, tmp, clean) {
                    return found;
                }
                *clean &= self.inert(lhs);
                if calls_any(rhs, sync) {
                    return Some(Err(()));
                }
            }
            _ => {
                for child in children_mut(e) {
                    if let found @ Some(_) = self.take_call(child, sync, tmp, clean) {
                        return found;
                    }
                    *clean &= self.inert(child);
                }
            }
        }
        if let ExprKind::Call { func, .. } = &e.kind
            && sync.contains(func)
        {
            // Its arguments go with it: only what came before them must be inert.
            if !before {
                return Some(Err(()));
            }
            let read = Expr::new(ExprKind::Var(tmp), e.ty.clone());
            return Some(Ok(std::mem::replace(e, read)));
        }
        None
    }

    /// Whether `e` reads no memory, calls nothing, cannot fault and reads only immutable
    /// variables: a call evaluated before it instead of after cannot change its value.
    fn inert(&self, e: &Expr) -> bool {
        let mut inert = true;
        walk_expr(e, &mut |x| match &x.kind {
            ExprKind::Var(v) => inert &= !self.k.var(*v).mutable,
            ExprKind::Lit(_) | ExprKind::Unary { .. } | ExprKind::Select { .. } => {}
            ExprKind::Binary { op, .. } => {
                inert &= !matches!(op, BinOp::Div | BinOp::Rem);
            }
            ExprKind::Intrinsic { op, .. } => {
                inert &= matches!(
                    op,
                    Intrinsic::Geometry(_)
                        | Intrinsic::Convert
                        | Intrinsic::Min
                        | Intrinsic::Max
                        | Intrinsic::Abs
                );
            }
            _ => inert = false,
        });
        inert
    }

    /// Whether an assigned place's indices read no memory, call nothing, cannot fault and
    /// read only immutable variables: a call evaluated before them cannot change them.
    fn inert_place(&self, place: &LValue) -> bool {
        match place {
            LValue::Var(_) => true,
            LValue::Field { base, .. } => self.inert_place(base),
            LValue::Index { index, .. } => self.inert(index),
        }
    }

    /// The statements of one call of helper `func` (arguments in fresh variables, the body
    /// copied with fresh binders, array parameters renamed to the arrays passed) and the
    /// result expression of its final `return`, if any.
    fn inline_call(
        &mut self,
        func: FuncId,
        args: Vec<Expr>,
        span: Span,
    ) -> R<(Block, Option<Expr>)> {
        let f = self.k.function(func).clone();
        if f.params.len() != args.len() {
            return Err(self.unsupported("a call with the wrong number of arguments", span));
        }
        let mut body = f.body;
        let result = match body.last().map(|s| &s.kind) {
            Some(StmtKind::Return(_)) => match body.pop().map(|s| s.kind) {
                Some(StmtKind::Return(r)) => r,
                _ => None,
            },
            _ => None,
        };
        // An early `return` sets `done` (and the result) instead; what follows it runs
        // unless `done` ([`Prep::lower_returns`]).
        let early = has_return(&body).then(|| {
            let done = self.fresh(Ty::BOOL, true);
            let res = (f.ret != Ty::Unit).then(|| self.fresh(f.ret.clone(), true));
            (done, res)
        });
        let mut scope = Scope::fresh();
        let mut out = Vec::new();
        for (p, a) in f.params.iter().zip(args) {
            if is_value_ty(&self.k.var(*p).ty) {
                let ty = self.k.var(*p).ty.clone();
                let v = fresh_var(&mut self.k.vars, *p, ty);
                out.push(self.let_(v, a, span));
                scope.map.insert(*p, v);
            } else if let ExprKind::Var(arr) = a.kind {
                scope.map.insert(*p, arr);
            } else {
                return Err(self.unsupported("an array argument that is not a variable", span));
            }
        }
        // The result expression is copied in the body's scope: append it as a statement.
        let marker = result.map(|e| Stmt {
            kind: StmtKind::Return(Some(e)),
            span,
        });
        body.extend(marker);
        let mut copy = copy_block(&mut self.k.vars, &mut scope, &body);
        let result = match copy.last().map(|s| &s.kind) {
            Some(StmtKind::Return(Some(_))) => match copy.pop().map(|s| s.kind) {
                Some(StmtKind::Return(r)) => r,
                _ => None,
            },
            _ => None,
        };
        let Some((done, res)) = early else {
            out.append(&mut copy);
            return Ok((out, result));
        };
        let f = Expr::lit(sarek_compiler::types::Literal::Bool(false));
        out.push(self.let_(done, f, span));
        if let Some(r) = res {
            out.push(Stmt {
                kind: StmtKind::Let { var: r, init: None },
                span,
            });
        }
        out.extend(self.lower_returns(copy, done, res)?);
        match (result, res) {
            (Some(e), Some(r)) => {
                let set = self.assign(r, e, span);
                out.push(self.unless(done, vec![set], span));
                Ok((out, Some(self.var_expr(r))))
            }
            // Every path returned on its way.
            (None, Some(r)) => Ok((out, Some(self.var_expr(r)))),
            (result, None) => Ok((out, result)),
        }
    }

    /// `body` (an inlined helper's copy) with its `return`s as assignments: `return e` sets
    /// `res` to `e` and `done`, and what follows a statement that may return runs under
    /// `if done then () else ...`. A `return` inside a loop is refused.
    fn lower_returns(&mut self, body: Block, done: VarId, res: Option<VarId>) -> R<Block> {
        let mut out = Vec::new();
        let mut rest = body.into_iter();
        while let Some(mut s) = rest.next() {
            let span = s.span;
            if let StmtKind::Return(e) = s.kind {
                if let (Some(e), Some(r)) = (e, res) {
                    out.push(self.assign(r, e, span));
                }
                let t = Expr::lit(sarek_compiler::types::Literal::Bool(true));
                out.push(self.assign(done, t, span));
                // The rest of this block never runs.
                return Ok(out);
            }
            if !has_return(std::slice::from_ref(&s)) {
                out.push(s);
                continue;
            }
            match &mut s.kind {
                StmtKind::If {
                    then_block,
                    else_block,
                    ..
                } => {
                    *then_block = self.lower_returns(std::mem::take(then_block), done, res)?;
                    *else_block = self.lower_returns(std::mem::take(else_block), done, res)?;
                }
                StmtKind::Block(body) => {
                    *body = self.lower_returns(std::mem::take(body), done, res)?;
                }
                StmtKind::Match { arms, .. } => {
                    for a in arms {
                        a.body = self.lower_returns(std::mem::take(&mut a.body), done, res)?;
                    }
                }
                _ => {
                    return Err(self
                        .unsupported("a `return` inside a loop of a helper with barriers", span));
                }
            }
            out.push(s);
            let tail: Block = rest.collect();
            if !tail.is_empty() {
                let tail = self.lower_returns(tail, done, res)?;
                out.push(self.unless(done, tail, span));
            }
            return Ok(out);
        }
        Ok(out)
    }

    fn assign(&self, var: VarId, value: Expr, span: Span) -> Stmt {
        Stmt {
            kind: StmtKind::Assign {
                place: LValue::Var(var),
                value,
            },
            span,
        }
    }

    /// `if flag then () else body`.
    fn unless(&self, flag: VarId, body: Block, span: Span) -> Stmt {
        self.if_var(flag, Vec::new(), body, span)
    }

    /// `if cond then then_block else else_block` on a boolean variable.
    fn if_var(&self, cond: VarId, then_block: Block, else_block: Block, span: Span) -> Stmt {
        Stmt {
            kind: StmtKind::If {
                cond: self.var_expr(cond),
                then_block,
                else_block,
            },
            span,
        }
    }

    /// A `match` whose arms synchronise, as a chain of `if`s on its tag.
    fn match_as_ifs(
        &mut self,
        scrutinee: Expr,
        variant: VariantId,
        arms: Vec<MatchArm>,
        span: Span,
        out: &mut Block,
    ) -> R<()> {
        let scrutinee = self.bind_temp(scrutinee, span, out);
        let tag = Expr::new(ExprKind::Tag(Box::new(scrutinee.clone())), Ty::I32);
        let mut tail: Block = match arms.iter().rev().find(|a| a.ctor.is_none()) {
            Some(a) => a.body.clone(),
            // No default arm: a tag of no constructor faults as the `match` does.
            None => vec![Stmt {
                kind: StmtKind::Match {
                    scrutinee: scrutinee.clone(),
                    variant,
                    arms: Vec::new(),
                },
                span,
            }],
        };
        for arm in arms.into_iter().rev() {
            let Some(ctor) = arm.ctor else { continue };
            let mut then_block = Vec::new();
            for (field, bind) in arm.bindings.iter().enumerate() {
                if let Some(v) = bind {
                    let payload = Expr::new(
                        ExprKind::Payload {
                            value: Box::new(scrutinee.clone()),
                            ctor,
                            field: field as u32,
                        },
                        self.k.var(*v).ty.clone(),
                    );
                    then_block.push(self.let_(*v, payload, span));
                }
            }
            then_block.extend(arm.body);
            let cond = Expr::new(
                ExprKind::Binary {
                    op: BinOp::Eq,
                    lhs: Box::new(tag.clone()),
                    rhs: Box::new(Expr::i32(ctor as i32)),
                    nowrap: false,
                },
                Ty::BOOL,
            );
            tail = vec![Stmt {
                kind: StmtKind::If {
                    cond,
                    then_block,
                    else_block: tail,
                },
                span,
            }];
        }
        for s in tail {
            self.stmt(s, out)?;
        }
        Ok(())
    }

    fn block(&mut self, b: Block) -> R<Block> {
        let mut out = Vec::with_capacity(b.len());
        for s in b {
            self.stmt(s, &mut out)?;
        }
        Ok(out)
    }

    fn stmt(&mut self, s: Stmt, out: &mut Block) -> R<()> {
        if !is_sync(&s) {
            out.push(s);
            return Ok(());
        }
        // Synchronisation inside nested blocks makes the statement block-uniform control
        // flow; a warp operation in its own expressions only is hoisted before it.
        let nested = nested_blocks(&s).into_iter().any(|b| b.iter().any(is_sync));
        let span = s.span;
        let kind = match s.kind {
            StmtKind::Barrier => StmtKind::Barrier,
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let mut cond = self.hoist(cond, span, out)?;
                let (mut then_block, mut else_block) = (then_block, else_block);
                if nested {
                    cond = self.bind_temp(cond, span, out);
                    then_block = self.block(then_block)?;
                    else_block = self.block(else_block)?;
                }
                StmtKind::If {
                    cond,
                    then_block,
                    else_block,
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
                let mut start = self.hoist(start, span, out)?;
                let mut end = self.hoist(end, span, out)?;
                let mut body = body;
                if nested {
                    if jumps_out(&body) {
                        return Err(self.unsupported(
                            "`break`, `continue` or `return` in a loop with barriers",
                            span,
                        ));
                    }
                    start = self.bind_temp(start, span, out);
                    end = self.bind_temp(end, span, out);
                    body = self.block(body)?;
                }
                StmtKind::For {
                    var,
                    start,
                    end,
                    downto,
                    body,
                    unroll,
                }
            }
            StmtKind::While { cond, body, unroll } => {
                if jumps_out(&body) {
                    return Err(self.unsupported(
                        "`break`, `continue` or `return` in a loop with barriers",
                        span,
                    ));
                }
                let t = self.fresh(Ty::BOOL, true);
                let again = Stmt {
                    kind: StmtKind::Assign {
                        place: LValue::Var(t),
                        value: cond.clone(),
                    },
                    span,
                };
                let first = self.let_(t, cond, span);
                self.stmt(first, out)?;
                let mut body = self.block(body)?;
                self.stmt(again, &mut body)?;
                StmtKind::While {
                    cond: self.var_expr(t),
                    body,
                    unroll,
                }
            }
            StmtKind::Block(b) => StmtKind::Block(self.block(b)?),
            StmtKind::Match {
                scrutinee,
                variant,
                arms,
            } => {
                if nested {
                    let scrutinee = self.hoist(scrutinee, span, out)?;
                    return self.match_as_ifs(scrutinee, variant, arms, span, out);
                }
                StmtKind::Match {
                    scrutinee: self.hoist(scrutinee, span, out)?,
                    variant,
                    arms,
                }
            }
            StmtKind::Let {
                var,
                init: Some(init),
            } => StmtKind::Let {
                var,
                init: Some(self.hoist(init, span, out)?),
            },
            StmtKind::Assign { place, value } => {
                let place = self.hoist_place(place, span, out)?;
                let value = self.hoist(value, span, out)?;
                StmtKind::Assign { place, value }
            }
            StmtKind::Expr(e) => StmtKind::Expr(self.hoist(e, span, out)?),
            _ => {
                return Err(self.unsupported("a warp operation in this statement", span));
            }
        };
        out.push(Stmt { kind, span });
        Ok(())
    }

    fn hoist_place(&mut self, p: LValue, span: Span, pre: &mut Block) -> R<LValue> {
        Ok(match p {
            LValue::Var(v) => LValue::Var(v),
            LValue::Index { base, index } => LValue::Index {
                base,
                index: Box::new(self.hoist(*index, span, pre)?),
            },
            LValue::Field { base, field } => LValue::Field {
                base: Box::new(self.hoist_place(*base, span, pre)?),
                field,
            },
        })
    }

    /// Replace every warp operation in `e` by a variable computed before the statement.
    fn hoist(&mut self, e: Expr, span: Span, pre: &mut Block) -> R<Expr> {
        if !has_warp(&e) {
            return Ok(e);
        }
        let Expr { kind, ty } = e;
        let kind = match kind {
            ExprKind::Intrinsic {
                op: Intrinsic::Warp(w),
                args,
            } => {
                let mut vars = Vec::new();
                for a in args {
                    let a = self.hoist(a, span, pre)?;
                    let v = self.fresh(a.ty.clone(), false);
                    pre.push(self.let_(v, a, span));
                    vars.push(self.var_expr(v));
                }
                let w_var = self.fresh(ty.clone(), false);
                let call = Expr::new(
                    ExprKind::Intrinsic {
                        op: Intrinsic::Warp(w),
                        args: vars,
                    },
                    ty.clone(),
                );
                pre.push(self.let_(w_var, call, span));
                return Ok(self.var_expr(w_var));
            }
            ExprKind::Binary {
                op,
                lhs,
                rhs,
                nowrap,
            } => {
                if matches!(op, BinOp::And | BinOp::Or) && has_warp(&rhs) {
                    // `a && b` as `let c = a in let mut t = c in if c then t := b`: the warp
                    // operations of `b` run under `if c` (`||`: its else branch), which the
                    // schedule runs block-uniformly (a block whose threads disagree on `c`
                    // goes to the interpreter, as around a barrier).
                    let c = self.hoist(*lhs, span, pre)?;
                    let cv = self.fresh(Ty::BOOL, false);
                    pre.push(self.let_(cv, c, span));
                    let t = self.fresh(Ty::BOOL, true);
                    pre.push(self.let_(t, self.var_expr(cv), span));
                    let mut inner = Vec::new();
                    let b = self.hoist(*rhs, span, &mut inner)?;
                    inner.push(self.assign(t, b, span));
                    let (then_block, else_block) = if op == BinOp::And {
                        (inner, Vec::new())
                    } else {
                        (Vec::new(), inner)
                    };
                    pre.push(self.if_var(cv, then_block, else_block, span));
                    return Ok(self.var_expr(t));
                }
                ExprKind::Binary {
                    op,
                    lhs: Box::new(self.hoist(*lhs, span, pre)?),
                    rhs: Box::new(self.hoist(*rhs, span, pre)?),
                    nowrap,
                }
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } if has_warp(&then_value) || has_warp(&else_value) => {
                // `if c then a else b` as `let c' = c in let mut t in if c' then t := a else
                // t := b`: only the chosen arm is evaluated, as in the expression, and its
                // warp operations run under a block-uniform `if` (a block whose threads
                // disagree on `c` goes to the interpreter, as around a barrier).
                let c = self.hoist(*cond, span, pre)?;
                let cv = self.fresh(Ty::BOOL, false);
                pre.push(self.let_(cv, c, span));
                let t = self.fresh(ty.clone(), true);
                pre.push(Stmt {
                    kind: StmtKind::Let { var: t, init: None },
                    span,
                });
                let arm = |me: &mut Self, value: Expr| -> R<Block> {
                    let mut inner = Vec::new();
                    let v = me.hoist(value, span, &mut inner)?;
                    inner.push(me.assign(t, v, span));
                    Ok(inner)
                };
                let then_block = arm(self, *then_value)?;
                let else_block = arm(self, *else_value)?;
                pre.push(self.if_var(cv, then_block, else_block, span));
                return Ok(self.var_expr(t));
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => ExprKind::Select {
                cond: Box::new(self.hoist(*cond, span, pre)?),
                then_value,
                else_value,
            },
            ExprKind::Unary { op, operand } => ExprKind::Unary {
                op,
                operand: Box::new(self.hoist(*operand, span, pre)?),
            },
            ExprKind::Index { base, index } => ExprKind::Index {
                base,
                index: Box::new(self.hoist(*index, span, pre)?),
            },
            ExprKind::Field { base, field } => ExprKind::Field {
                base: Box::new(self.hoist(*base, span, pre)?),
                field,
            },
            ExprKind::Tag(a) => ExprKind::Tag(Box::new(self.hoist(*a, span, pre)?)),
            ExprKind::Payload { value, ctor, field } => ExprKind::Payload {
                value: Box::new(self.hoist(*value, span, pre)?),
                ctor,
                field,
            },
            ExprKind::Record { record, fields } => ExprKind::Record {
                record,
                fields: self.hoist_all(fields, span, pre)?,
            },
            ExprKind::Ctor {
                variant,
                ctor,
                fields,
            } => ExprKind::Ctor {
                variant,
                ctor,
                fields: self.hoist_all(fields, span, pre)?,
            },
            ExprKind::Call { func, args } => ExprKind::Call {
                func,
                args: self.hoist_all(args, span, pre)?,
            },
            ExprKind::Intrinsic { op, args } => ExprKind::Intrinsic {
                op,
                args: self.hoist_all(args, span, pre)?,
            },
            k @ (ExprKind::Lit(_) | ExprKind::Var(_)) => k,
        };
        Ok(Expr { kind, ty })
    }

    fn hoist_all(&mut self, es: Vec<Expr>, span: Span, pre: &mut Block) -> R<Vec<Expr>> {
        es.into_iter().map(|e| self.hoist(e, span, pre)).collect()
    }
}
