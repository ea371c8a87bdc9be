//! Launch-time specialisation: shared arrays sized by the block.
//!
//! `let%shared (tile : float32) = () in` declares an array of `block_dim_x` elements
//! ([`SIZE_BLOCK_DIM_X`] in its type). Every target needs a shared array's size when the
//! kernel is built, so the runtime calls [`block_size`] with the launch's block x size before
//! generating code; the generated source (and so every compile cache keyed by it) then
//! differs per block size only for kernels that have such an array.

use super::{Block, Expr, ExprKind, Kernel, LValue, SIZE_BLOCK_DIM_X, Stmt, StmtKind, Ty};
use crate::diag::Diagnostic;

/// Whether `kernel` has a shared array sized by the block (and so needs [`block_size`]).
pub fn needs_block_size(kernel: &Kernel) -> bool {
    kernel.vars.iter().any(|v| is_block_sized(&v.ty))
}

/// `kernel` with every block-sized shared array given `block_x` elements.
pub fn block_size(kernel: &Kernel, block_x: u32) -> Kernel {
    let mut k = kernel.clone();
    if !needs_block_size(&k) {
        return k;
    }
    for v in &mut k.vars {
        fix_ty(&mut v.ty, block_x);
    }
    block(&mut k.body, block_x);
    for f in &mut k.functions {
        fix_ty(&mut f.ret, block_x);
        block(&mut f.body, block_x);
    }
    k
}

/// A located refusal for a generator given a kernel that was not specialised.
pub fn unspecialized(kernel: &Kernel, target: &str) -> Option<Diagnostic> {
    let v = kernel.vars.iter().find(|v| is_block_sized(&v.ty))?;
    Some(
        Diagnostic::error(
            if v.span.is_dummy() {
                kernel.span
            } else {
                v.span
            },
            format!(
                "shared array `{}` takes its size from the launch's block, which generating {target} code needs",
                v.name
            ),
        )
        .with_label("declared with `= ()`: `block_dim_x` elements")
        .with_note("`sarek run`, `verify` and the library size it for each launch")
        .with_help("give the block size: `sarek compile --block X`, or write the size: `let%shared (t : float32) = 256 in`"),
    )
}

fn is_block_sized(t: &Ty) -> bool {
    match t {
        Ty::Array { size, elem, .. } => *size == Some(SIZE_BLOCK_DIM_X) || is_block_sized(elem),
        Ty::Vector(e) => is_block_sized(e),
        _ => false,
    }
}

fn fix_ty(t: &mut Ty, block_x: u32) {
    match t {
        Ty::Array { size, elem, .. } => {
            if *size == Some(SIZE_BLOCK_DIM_X) {
                *size = Some(block_x);
            }
            fix_ty(elem, block_x);
        }
        Ty::Vector(e) => fix_ty(e, block_x),
        _ => {}
    }
}

fn block(b: &mut Block, bx: u32) {
    for s in b {
        stmt(s, bx);
    }
}

fn stmt(s: &mut Stmt, bx: u32) {
    match &mut s.kind {
        StmtKind::Let { init, .. } => {
            if let Some(e) = init {
                expr(e, bx);
            }
        }
        StmtKind::Assign { place, value } => {
            lvalue(place, bx);
            expr(value, bx);
        }
        StmtKind::Expr(e) => expr(e, bx),
        StmtKind::If {
            cond,
            then_block,
            else_block,
        } => {
            expr(cond, bx);
            block(then_block, bx);
            block(else_block, bx);
        }
        StmtKind::For {
            start, end, body, ..
        } => {
            expr(start, bx);
            expr(end, bx);
            block(body, bx);
        }
        StmtKind::While { cond, body, .. } => {
            expr(cond, bx);
            block(body, bx);
        }
        StmtKind::Match {
            scrutinee, arms, ..
        } => {
            expr(scrutinee, bx);
            for a in arms {
                block(&mut a.body, bx);
            }
        }
        StmtKind::Block(b) => block(b, bx),
        StmtKind::Return(Some(e)) => expr(e, bx),
        StmtKind::Array { .. }
        | StmtKind::Barrier
        | StmtKind::Fence { .. }
        | StmtKind::Return(None)
        | StmtKind::Break
        | StmtKind::Continue
        | StmtKind::Native(_)
        | StmtKind::Trap(_) => {}
    }
}

fn lvalue(p: &mut LValue, bx: u32) {
    match p {
        LValue::Var(_) => {}
        LValue::Index { index, .. } => expr(index, bx),
        LValue::Field { base, .. } => lvalue(base, bx),
    }
}

fn expr(e: &mut Expr, bx: u32) {
    fix_ty(&mut e.ty, bx);
    match &mut e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => {}
        ExprKind::Binary { lhs, rhs, .. } => {
            expr(lhs, bx);
            expr(rhs, bx);
        }
        ExprKind::Unary { operand: x, .. }
        | ExprKind::Index { index: x, .. }
        | ExprKind::Field { base: x, .. }
        | ExprKind::Tag(x)
        | ExprKind::Payload { value: x, .. } => expr(x, bx),
        ExprKind::Record { fields: xs, .. }
        | ExprKind::Ctor { fields: xs, .. }
        | ExprKind::Call { args: xs, .. }
        | ExprKind::Intrinsic { args: xs, .. } => xs.iter_mut().for_each(|x| expr(x, bx)),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => {
            expr(cond, bx);
            expr(then_value, bx);
            expr(else_value, bx);
        }
    }
}
