//! Loop steps that cannot overflow, marked `nowrap` so C-family targets print plain signed
//! arithmetic (issue 14): the wrapping spelling `(int)((unsigned)i + (unsigned)s)` hides the
//! induction variable from nvcc and clang, which then neither count trips nor unroll.
//!
//! The shape handled is the counted `while`: a loop whose condition has a conjunct `i < n` or
//! `i <= n` (either side), whose body assigns `i` exactly once, as `i := i + s`, outside any
//! nested loop, where `n` and `s` are loop-invariant, pure and cannot fault. When the step runs,
//! `i` still has the value the condition tested, so `i <= n`; if moreover `0 <= s` and
//! `n <= max - s`, then `i + s <= max` and `i + s >= i >= min`: no overflow.
//!
//! - `n` and `s` literals: decided here; the step is marked when the bound holds.
//! - Otherwise the loop is versioned: `if (0 < s && n <= max - s)` (just `n <= max - s`,
//!   folded, for a positive literal step) runs a copy whose step is marked, `else` the
//!   original. The copy is made only where duplicating is harmless: no barrier, fence or warp
//!   operation in the body or the helpers it calls (the guard may differ between threads), no
//!   versioned loop inside (no exponential growth), at most [`MAX_VERSIONED_STATEMENTS`].
//! - Every conjunct that bounds its own variable counts (`while i < n && c < cap` marks both
//!   steps, under one guard).
//!
//! The values computed are unchanged (the marked add equals the wrapping one wherever it
//! runs), so the interpreter and every other consumer may ignore the flag.

use crate::diag::Span;
use crate::intrinsics::Intrinsic;
use crate::ir::visit::{self, StmtVisitor};
use crate::ir::{Block, Expr, ExprKind, FuncId, Kernel, LValue, Stmt, StmtKind, Ty, VarId};
use crate::types::{BinOp, Literal, Scalar, UnOp};
use std::borrow::Cow;
use std::collections::BTreeSet;

/// Largest loop body (statements, nested ones included) that is duplicated for versioning.
pub const MAX_VERSIONED_STATEMENTS: usize = 64;

/// `kernel` with the provable loop steps marked `nowrap` and the others versioned.
/// A kernel without `while` loops has nothing to mark and is returned as it is.
pub fn mark_loop_steps(kernel: &Kernel) -> Cow<'_, Kernel> {
    let mut has_while = false;
    for body in std::iter::once(&kernel.body).chain(kernel.functions.iter().map(|f| &f.body)) {
        visit::for_each_stmt(body, &mut |s| {
            has_while |= matches!(s.kind, StmtKind::While { .. });
        });
    }
    if !has_while {
        return Cow::Borrowed(kernel);
    }
    let convergent = convergent_functions(kernel);
    let cx = Context {
        kernel,
        convergent: &convergent,
    };
    Cow::Owned(kernel.map_bodies(|b| cx.block(b)))
}

struct Context<'k> {
    kernel: &'k Kernel,
    /// Helpers that contain (or call one that contains) a barrier, fence or warp operation.
    convergent: &'k BTreeSet<FuncId>,
}

impl Context<'_> {
    fn block(&self, b: &Block) -> Block {
        b.iter().map(|s| self.stmt(s).0).collect()
    }

    /// The rewritten statement, and whether a versioned loop is in it.
    fn stmt(&self, s: &Stmt) -> (Stmt, bool) {
        let span = s.span;
        let mut versioned = false;
        let mut sub = |b: &Block| -> Block {
            b.iter()
                .map(|s| {
                    let (s, v) = self.stmt(s);
                    versioned |= v;
                    s
                })
                .collect()
        };
        let kind = match &s.kind {
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => StmtKind::If {
                cond: cond.clone(),
                then_block: sub(then_block),
                else_block: sub(else_block),
            },
            StmtKind::For {
                var,
                start,
                end,
                downto,
                body,
                unroll,
            } => StmtKind::For {
                var: *var,
                start: start.clone(),
                end: end.clone(),
                downto: *downto,
                body: sub(body),
                unroll: *unroll,
            },
            StmtKind::Match {
                scrutinee,
                variant,
                arms,
            } => StmtKind::Match {
                scrutinee: scrutinee.clone(),
                variant: *variant,
                arms: arms
                    .iter()
                    .map(|a| crate::ir::MatchArm {
                        ctor: a.ctor,
                        bindings: a.bindings.clone(),
                        body: sub(&a.body),
                    })
                    .collect(),
            },
            StmtKind::Block(b) => StmtKind::Block(sub(b)),
            StmtKind::While { cond, body, unroll } => {
                let body = sub(body);
                let inner_versioned = versioned;
                let (s, here) = self.while_loop(cond, body, *unroll, span, inner_versioned);
                return (s, inner_versioned || here);
            }
            other => other.clone(),
        };
        (Stmt { kind, span }, versioned)
    }

    fn while_loop(
        &self,
        cond: &Expr,
        body: Block,
        unroll: Option<u32>,
        span: Span,
        inner_versioned: bool,
    ) -> (Stmt, bool) {
        let make = |body: Block| Stmt {
            kind: StmtKind::While {
                cond: cond.clone(),
                body,
                unroll,
            },
            span,
        };
        let mut proven = BTreeSet::new();
        let mut guarded = BTreeSet::new();
        let mut terms = Vec::new();
        for step in self.counted(cond, &body) {
            let (max, lit): (i64, fn(i64) -> Expr) = match step.scalar {
                Scalar::I32 => (i64::from(i32::MAX), |v| Expr::i32(v as i32)),
                _ => (i64::MAX, |v| Expr::lit(Literal::I64(v))),
            };
            let ty = Ty::Scalar(step.scalar);
            match (int_lit(&step.bound), int_lit(&step.step)) {
                (Some(n), Some(s)) => {
                    if s >= 0 && n <= max - s {
                        proven.insert(step.var);
                    }
                }
                // A positive literal step: one term, `n <= max - s` folded.
                (_, Some(s)) => {
                    if s > 0 {
                        terms.push(binary(BinOp::Le, step.bound, lit(max - s), Ty::BOOL, false));
                        guarded.insert(step.var);
                    }
                }
                // `0 < s && n <= max - s`; `max - s` cannot overflow once `0 < s` holds.
                // (`0 <= s` would do for the proof; a positive step also tells the C
                // compiler that the loop ends.)
                (_, None) => {
                    let room = binary(BinOp::Sub, lit(max), step.step.clone(), ty, true);
                    terms.push(binary(BinOp::Lt, lit(0), step.step, Ty::BOOL, false));
                    terms.push(binary(BinOp::Le, step.bound, room, Ty::BOOL, false));
                    guarded.insert(step.var);
                }
            }
        }
        let body = mark(&body, &proven);
        if guarded.is_empty()
            || inner_versioned
            || count_stmts(&body) > MAX_VERSIONED_STATEMENTS
            || self.is_convergent(&body)
        {
            return (make(body), false);
        }
        let guard = terms
            .into_iter()
            .reduce(|a, b| binary(BinOp::And, a, b, Ty::BOOL, false))
            .expect("a guarded step has terms");
        let fast = make(mark(&body, &guarded));
        let versioned = Stmt {
            kind: StmtKind::If {
                cond: guard,
                then_block: vec![fast],
                else_block: vec![make(body)],
            },
            span,
        };
        (versioned, true)
    }

    /// The counted steps of `while cond do body`: one per variable bounded by a conjunct of
    /// the condition and stepped once per test by a loop-invariant amount.
    fn counted(&self, cond: &Expr, body: &Block) -> Vec<Step> {
        let mut conjuncts = Vec::new();
        split_and(cond, &mut conjuncts);
        let mut facts = BodyFacts::default();
        facts.block(body, 0);
        let mut seen = BTreeSet::new();
        conjuncts
            .into_iter()
            .filter_map(|c| {
                let (var, bound) = upper_bound(c)?;
                let info = self.kernel.var(var);
                let scalar = info.ty.scalar().filter(|s| s.is_int())?;
                if !info.mutable
                    || facts.declared.contains(&var)
                    || facts.touched.contains(&var)
                    || !seen.insert(var)
                {
                    return None;
                }
                // Exactly one assignment to `var`, of the form `var := var + s`, not in a
                // nested loop (it would run more than once per test).
                let [(0, value)] = facts.assigned_values(var)[..] else {
                    return None;
                };
                let step = step_of(value, var)?;
                (invariant(&bound, &facts) && invariant(&step, &facts)).then_some(Step {
                    var,
                    bound,
                    step,
                    scalar,
                })
            })
            .collect()
    }

    fn is_convergent(&self, body: &Block) -> bool {
        reaches_convergent(body, self.convergent)
    }
}

/// One counted loop: `var <= bound` (or `<`) holds when `var := var + step` runs.
struct Step {
    var: VarId,
    bound: Expr,
    step: Expr,
    scalar: Scalar,
}

/// What a loop body declares and assigns. Depth counts the loops nested inside the body.
#[derive(Default)]
struct BodyFacts {
    declared: BTreeSet<VarId>,
    /// Every assignment to a whole scalar variable: (variable, loop depth, value).
    assigned: Vec<(VarId, usize, Expr)>,
    /// Variables assigned through a place (fields of records and the like).
    touched: BTreeSet<VarId>,
}

impl BodyFacts {
    /// Every whole-variable assignment to `v`: (loop depth, value).
    fn assigned_values(&self, v: VarId) -> Vec<(usize, &Expr)> {
        self.assigned
            .iter()
            .filter(|(x, _, _)| *x == v)
            .map(|(_, d, e)| (*d, e))
            .collect()
    }

    fn block(&mut self, b: &Block, depth: usize) {
        for s in b {
            match &s.kind {
                StmtKind::Let { var, .. } | StmtKind::Array { var } => {
                    self.declared.insert(*var);
                }
                StmtKind::Assign { place, value } => match place {
                    LValue::Var(v) => self.assigned.push((*v, depth, value.clone())),
                    LValue::Field { .. } => {
                        self.touched.insert(root_of(place));
                    }
                    LValue::Index { .. } => {}
                },
                StmtKind::If {
                    then_block,
                    else_block,
                    ..
                } => {
                    self.block(then_block, depth);
                    self.block(else_block, depth);
                }
                StmtKind::For { var, body, .. } => {
                    self.declared.insert(*var);
                    self.block(body, depth + 1);
                }
                StmtKind::While { body, .. } => self.block(body, depth + 1),
                StmtKind::Match { arms, .. } => {
                    for a in arms {
                        self.declared.extend(a.bindings.iter().flatten());
                        self.block(&a.body, depth);
                    }
                }
                StmtKind::Block(b) => self.block(b, depth),
                StmtKind::Expr(_)
                | StmtKind::Barrier
                | StmtKind::Fence { .. }
                | StmtKind::Return(_)
                | StmtKind::Break
                | StmtKind::Continue
                | StmtKind::Native(_)
                | StmtKind::Trap(_) => {}
            }
        }
    }

    fn changes(&self, v: VarId) -> bool {
        self.declared.contains(&v)
            || self.touched.contains(&v)
            || self.assigned.iter().any(|(x, _, _)| *x == v)
    }
}

fn root_of(p: &LValue) -> VarId {
    match p {
        LValue::Var(v) | LValue::Index { base: v, .. } => *v,
        LValue::Field { base, .. } => root_of(base),
    }
}

/// The top-level conjuncts of a condition: when the body runs, each of them held.
fn split_and<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match &e.kind {
        ExprKind::Binary {
            op: BinOp::And,
            lhs,
            rhs,
            ..
        } => {
            split_and(lhs, out);
            split_and(rhs, out);
        }
        _ => out.push(e),
    }
}

/// `i < n`, `i <= n`, `n > i`, `n >= i` as `(i, n)`: `i <= n` holds when it is true.
fn upper_bound(c: &Expr) -> Option<(VarId, Expr)> {
    let ExprKind::Binary { op, lhs, rhs, .. } = &c.kind else {
        return None;
    };
    let (var, bound) = match op {
        BinOp::Lt | BinOp::Le => (lhs, rhs),
        BinOp::Gt | BinOp::Ge => (rhs, lhs),
        _ => return None,
    };
    match var.kind {
        ExprKind::Var(v) if var.ty == bound.ty => Some((v, (**bound).clone())),
        _ => None,
    }
}

/// `s` of `var + s` or `s + var`.
fn step_of(value: &Expr, var: VarId) -> Option<Expr> {
    let ExprKind::Binary {
        op: BinOp::Add,
        lhs,
        rhs,
        ..
    } = &value.kind
    else {
        return None;
    };
    match (&lhs.kind, &rhs.kind) {
        (ExprKind::Var(v), _) if *v == var => Some((**rhs).clone()),
        (_, ExprKind::Var(v)) if *v == var => Some((**lhs).clone()),
        _ => None,
    }
}

/// Whether `e` has one value for the whole loop and can be evaluated again before it: no
/// memory reads, calls or divisions (which may fault), only variables the body leaves alone.
fn invariant(e: &Expr, facts: &BodyFacts) -> bool {
    match &e.kind {
        ExprKind::Lit(_) => true,
        ExprKind::Var(v) => !facts.changes(*v) && e.ty.scalar().is_some(),
        ExprKind::Unary {
            op: UnOp::Neg | UnOp::BitNot,
            operand,
        } => invariant(operand, facts),
        ExprKind::Binary { op, lhs, rhs, .. } => {
            matches!(
                op,
                BinOp::Add
                    | BinOp::Sub
                    | BinOp::Mul
                    | BinOp::BitAnd
                    | BinOp::BitOr
                    | BinOp::BitXor
                    | BinOp::Shl
                    | BinOp::LShr
                    | BinOp::AShr
            ) && invariant(lhs, facts)
                && invariant(rhs, facts)
        }
        ExprKind::Intrinsic {
            op: Intrinsic::Geometry(_),
            ..
        } => true,
        ExprKind::Intrinsic {
            op: Intrinsic::Length,
            args,
        } => matches!(
            args.as_slice(),
            [Expr {
                kind: ExprKind::Var(_),
                ..
            }]
        ),
        _ => false,
    }
}

fn int_lit(e: &Expr) -> Option<i64> {
    match e.kind {
        ExprKind::Lit(Literal::I32(v)) => Some(i64::from(v)),
        ExprKind::Lit(Literal::I64(v)) => Some(v),
        _ => None,
    }
}

fn binary(op: BinOp, lhs: Expr, rhs: Expr, ty: Ty, nowrap: bool) -> Expr {
    Expr::new(
        ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
            nowrap,
        },
        ty,
    )
}

/// `body` with the (single) step `v := v + s` of every `v` in `vars` marked `nowrap`.
fn mark(body: &Block, vars: &BTreeSet<VarId>) -> Block {
    fn walk(b: &mut Block, vars: &BTreeSet<VarId>) {
        for s in b {
            match &mut s.kind {
                StmtKind::Assign {
                    place: LValue::Var(v),
                    value:
                        Expr {
                            kind:
                                ExprKind::Binary {
                                    op: BinOp::Add,
                                    nowrap,
                                    ..
                                },
                            ..
                        },
                } if vars.contains(v) => *nowrap = true,
                StmtKind::If {
                    then_block,
                    else_block,
                    ..
                } => {
                    walk(then_block, vars);
                    walk(else_block, vars);
                }
                StmtKind::Match { arms, .. } => {
                    arms.iter_mut().for_each(|a| walk(&mut a.body, vars))
                }
                StmtKind::Block(b) => walk(b, vars),
                // The step is not inside a nested loop (see `Context::counted`).
                _ => {}
            }
        }
    }
    let mut body = body.clone();
    if !vars.is_empty() {
        walk(&mut body, vars);
    }
    body
}

fn count_stmts(b: &Block) -> usize {
    let mut n = 0;
    visit::for_each_stmt(b, &mut |_| n += 1);
    n
}

/// Whether a block reaches a barrier, fence or warp operation, directly or through a helper
/// in `convergent`.
fn reaches_convergent(b: &Block, convergent: &BTreeSet<FuncId>) -> bool {
    struct Finder<'c> {
        convergent: &'c BTreeSet<FuncId>,
        found: bool,
    }
    impl StmtVisitor for Finder<'_> {
        fn var(&mut self, _: VarId) {}
        fn expr(&mut self, _: Span, e: &Expr) {
            self.found |= convergent_expr(e, self.convergent);
        }
    }
    let mut finder = Finder {
        convergent,
        found: false,
    };
    visit::walk_block(&mut finder, b);
    visit::for_each_stmt(b, &mut |s| {
        finder.found |= matches!(s.kind, StmtKind::Barrier | StmtKind::Fence { .. });
    });
    finder.found
}

/// Whether `e` contains a warp operation or a call to a convergent helper.
fn convergent_expr(e: &Expr, convergent: &BTreeSet<FuncId>) -> bool {
    let here = match &e.kind {
        ExprKind::Intrinsic {
            op:
                Intrinsic::Warp(_)
                | Intrinsic::BlockBarrier
                | Intrinsic::FenceBlock
                | Intrinsic::FenceDevice,
            ..
        } => true,
        ExprKind::Call { func, .. } => convergent.contains(func),
        _ => false,
    };
    here || e.children().any(|c| convergent_expr(c, convergent))
}

/// Helpers that reach a barrier, fence or warp operation (callees come before callers).
fn convergent_functions(kernel: &Kernel) -> BTreeSet<FuncId> {
    let mut out = BTreeSet::new();
    for (i, f) in kernel.functions.iter().enumerate() {
        if reaches_convergent(&f.body, &out) {
            out.insert(FuncId(i as u32));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::SourceMap;
    use crate::target::{Target, TargetOptions};

    fn kernel(src: &str) -> Kernel {
        let mut sources = SourceMap::new();
        let file = sources.add("t.sarek", src);
        let program = crate::check(&sources, file).expect("the test kernel checks");
        crate::lower_kernel(&program, &program.kernels[0].name).expect("it lowers")
    }

    /// Every `while` loop of a block and of its nested blocks, and the steps marked in each.
    fn loops(b: &Block) -> Vec<usize> {
        let mut out = Vec::new();
        visit::for_each_stmt(b, &mut |s| {
            if let StmtKind::While { body, .. } = &s.kind {
                let mut marked = 0;
                visit::for_each_stmt(body, &mut |s| {
                    if let StmtKind::Assign {
                        value:
                            Expr {
                                kind: ExprKind::Binary { nowrap: true, .. },
                                ..
                            },
                        ..
                    } = &s.kind
                    {
                        marked += 1;
                    }
                });
                out.push(marked);
            }
        });
        out
    }

    fn marked(src: &str) -> Vec<usize> {
        let k = mark_loop_steps(&kernel(src)).into_owned();
        assert_eq!(crate::ir::validate::validate(&k), Ok(()));
        loops(&k.body)
    }

    const GRID_STRIDE: &str = "
      let%kernel k (a : int32 vector) (n : int32) =
        let step = grid_dim_x * block_dim_x in
        let mut acc = 0 in
        let mut i = global_thread_id in
        while i < n do
          acc := acc + a.(i);
          i := i + step
        done;
        a.(0) <- acc";

    #[test]
    fn a_grid_stride_loop_is_versioned() {
        let k = mark_loop_steps(&kernel(GRID_STRIDE)).into_owned();
        assert_eq!(crate::ir::validate::validate(&k), Ok(()));
        // The fast copy marks the step, the other keeps it wrapping.
        assert_eq!(loops(&k.body), vec![1, 0]);
        let printed = crate::ir::print::print_kernel(&k);
        assert!(
            printed.contains("if ((0 < step%") && printed.contains("<= (2147483647 -nw step%"),
            "{printed}"
        );
        let cuda = crate::generate(&k, Target::Cuda, &TargetOptions::default())
            .expect("CUDA")
            .source;
        assert!(cuda.contains("i = i + step;"), "{cuda}");
        assert!(
            cuda.contains("i = (int)((unsigned int)i + (unsigned int)step);"),
            "{cuda}"
        );
    }

    #[test]
    fn literal_bounds_are_decided_without_a_copy() {
        let src = |n: i32, s: i32| {
            format!(
                "let%kernel k (a : int32 vector) =
                   let mut i = a.(0) in
                   while i <= {n} do a.(1) <- i; i := {s} + i done"
            )
        };
        assert_eq!(marked(&src(2147483647 - 5, 5)), vec![1]);
        assert_eq!(marked(&src(2147483647 - 4, 5)), vec![0]);
        // A negative step could pass min_int: not marked.
        assert_eq!(marked(&src(100, -1)), vec![0]);
    }

    #[test]
    fn every_bounded_conjunct_is_marked_under_one_guard() {
        let k = mark_loop_steps(&kernel(
            "let%kernel k (a : int32 vector) (n : int32) (cap : int32) =
               let mut i = a.(0) in
               let mut c = 0 in
               while i < n && c < cap do c := c + 1; i := i + 3 done;
               a.(0) <- c",
        ))
        .into_owned();
        assert_eq!(loops(&k.body), vec![2, 0]);
        let printed = crate::ir::print::print_kernel(&k);
        // Positive literal steps need no sign test, and `max - s` is folded.
        assert!(
            printed.contains("if ((n%1 <= 2147483644) && (cap%2 <= 2147483646))"),
            "{printed}"
        );
    }

    #[test]
    fn loops_without_the_counted_shape_are_left_alone() {
        let cases = [
            // Two steps per test.
            "while i < n do i := i + s; i := i + s done",
            // The step in a nested loop runs several times per test.
            "while i < n do for j = 0 to 1 do i := i + s done done",
            // The bound changes in the body.
            "while i < m do m := m - 1; i := i + s done",
            // The step is declared in the body: not available to a guard.
            "while i < n do let t = s * 2 in i := i + t done",
            // A step that may fault when evaluated again.
            "while i < n do i := i + (s / n) done",
            // A step read from memory.
            "while i < n do i := i + a.(1) done",
            // Not an addition of the index.
            "while i < n do i := s + s done",
            // A bound below, not above.
            "while i > n do i := i + s done",
        ];
        for body in cases {
            let src = format!(
                "let%kernel k (a : int32 vector) (n : int32) (s : int32) =
                   let mut i = a.(0) in
                   let mut m = n in
                   {body};
                   a.(0) <- i + m"
            );
            let got = marked(&src);
            assert!(got.iter().all(|&m| m == 0), "{body}: {got:?}");
            assert_eq!(got.len(), 1, "{body}: not versioned");
        }
    }

    #[test]
    fn convergent_bodies_and_helpers_are_not_versioned() {
        let barrier = "
          let%kernel k (a : int32 vector) (n : int32) (s : int32) =
            let mut i = 0 in
            while i < n do block_barrier (); i := i + s done;
            a.(0) <- i";
        assert_eq!(marked(barrier), vec![0]);
        let warp = "
          let sync (x : int32) : int32 = warp_shuffle x 0
          let%kernel k (a : int32 vector) (n : int32) (s : int32) =
            let mut i = 0 in
            let mut x = 0 in
            while i < n do x := x + sync i; i := i + s done;
            a.(0) <- x";
        assert_eq!(marked(warp), vec![0]);
    }

    #[test]
    fn nested_versioning_stops_at_the_inner_loop() {
        let k = mark_loop_steps(&kernel(
            "let%kernel k (a : int32 vector) (n : int32) (s : int32) =
               let mut i = a.(0) in
               let mut x = 0 in
               while i < n do
                 let mut j = i in
                 while j < n do x := x + j; j := j + s done;
                 i := i + s
               done;
               a.(0) <- x",
        ))
        .into_owned();
        assert_eq!(crate::ir::validate::validate(&k), Ok(()));
        // The outer loop keeps one copy with its own step wrapping (its one marked step is
        // the inner fast copy's); the inner one is versioned.
        assert_eq!(loops(&k.body), vec![1, 1, 0]);
        let printed = crate::ir::print::print_kernel(&k);
        assert!(printed.contains("i%3 <- (i%3 + s%2)"), "{printed}");
    }
}
