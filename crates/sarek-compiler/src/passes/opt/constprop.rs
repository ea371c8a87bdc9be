//! Constant propagation: an immutable variable bound once to a literal is replaced by that
//! literal at every use, so folding and strength reduction see constant operands
//! (`let tile = 16 in ... i / tile` becomes `i / 16`, then a shift).
//!
//! Only variables that are never assigned after their `let` qualify (lowering may initialise
//! an immutable variable through an assignment; those are left alone). The `let` itself stays:
//! it is dead once every use is gone, and every target compiler drops a dead constant.

use std::collections::HashMap;

use super::walk::{assigned_vars, bodies, exprs_mut};
use crate::ir::{ExprKind, Kernel, StmtKind, VarId, visit};
use crate::types::Literal;

/// `kernel` with uses of literal-bound immutable variables replaced by the literal.
/// Returns whether anything changed.
pub fn propagate_constants(kernel: &mut Kernel) -> bool {
    let constants = constants(kernel);
    if constants.is_empty() {
        return false;
    }
    let mut changed = false;
    let mut replace = |e: &mut crate::ir::Expr| {
        if let ExprKind::Var(v) = e.kind
            && let Some(&l) = constants.get(&v)
        {
            *e = crate::ir::Expr::lit(l);
            changed = true;
        }
    };
    exprs_mut(&mut kernel.body, &mut replace);
    for f in &mut kernel.functions {
        exprs_mut(&mut f.body, &mut replace);
    }
    changed
}

/// Every immutable variable whose `let` initialiser is a literal and that no assignment
/// targets.
fn constants(kernel: &Kernel) -> HashMap<VarId, Literal> {
    let mut lits = HashMap::new();
    for body in bodies(kernel) {
        visit::for_each_stmt(body, &mut |s| {
            if let StmtKind::Let {
                var,
                init: Some(init),
            } = &s.kind
                && let ExprKind::Lit(l) = init.kind
                && !kernel.var(*var).mutable
            {
                lits.insert(*var, l);
            }
        });
    }
    let assigned = assigned_vars(kernel);
    lits.retain(|v, _| !assigned.contains(v));
    lits
}
