//! PTX generator: the IR straight to NVIDIA's virtual ISA, JIT-compiled by the CUDA driver.
//!
//! Design, in brief:
//! - Every value is a list of virtual registers, one per scalar leaf of its type
//!   ([`crate::abi::leaves`]): records, tuples and variants live in registers, never in memory,
//!   and `ptxas` allocates the physical registers. Mutable variables are registers reassigned.
//! - Memory (vectors, shared and local arrays) holds elements in the C layout
//!   (`LayoutRules::C`, bool as one byte), so the CUDA C and PTX targets share an ABI shape.
//! - Helpers are inlined at each call (the IR has no recursion left); `Return` assigns the
//!   result registers and branches to the end of the inlined body. No user identifier reaches
//!   the output (registers, labels and symbols are numbered), so no legalize pass is needed;
//!   only the entry point name is escaped ([`crate::back::names::Namer::escape`]).
//! - Shaped for `ptxas`, which optimises less than NVRTC's front end: the IR optimisation
//!   stage runs first (constants propagated, divisions by powers of two as shifts); integer
//!   literals are immediates; shared memory is addressed in 32 bits with a constant index
//!   term as the `[reg+imm]` offset; `&&`/`||` whose right operand cannot fault become
//!   predicate instructions; `while` loops are tested at the bottom, while `for` loops keep
//!   the exit-test-then-step shape ptxas unrolls.
//! - Float `add/sub/mul/div` carry `.rn`, which forbids FMA contraction: results match the
//!   interpreter bit for bit. Transcendentals use the `.approx` instructions (documented
//!   tolerance); those PTX has no instruction for (float64 `sin`, `atan2`, ...) are refused
//!   before writing ([`super::support::ptx`]), and the `cuda` target remains available for them.

pub mod keywords;
mod writer;

use crate::diag::Diagnostic;
use crate::ir::Kernel;
use crate::target::{Generated, TargetOptions};

pub use writer::PTX_LAYOUT;

/// Generate a PTX module with one `.entry` for `kernel`, after the IR optimisation stage
/// ([`crate::passes::opt`]: ptxas does not strength-reduce or propagate for us).
pub fn generate(kernel: &Kernel, options: &TargetOptions) -> Result<Generated, Vec<Diagnostic>> {
    let size = inlined_size(kernel);
    if size > INLINE_LIMIT {
        return Err(vec![
            Diagnostic::error(
                kernel.span,
                format!(
                    "PTX target: kernel `{}` inlines to more than {INLINE_LIMIT} statements",
                    kernel.name
                ),
            )
            .with_label("not expressible in PTX")
            .with_note("the PTX writer inlines every helper call, and these helpers call each other that many times over")
            .with_help("the `cuda` target (CUDA C through NVRTC) writes each helper once"),
        ]);
    }
    let kernel = &*crate::passes::for_target(kernel, options);
    crate::ir::analysis::check(kernel, &super::support::ptx())?;
    let kernel = crate::passes::opt::optimize(kernel);
    writer::Writer::new(&kernel, options).finish()
}

/// Most statements and calls a kernel may have once every helper call is inlined (helpers
/// that each call the previous one twice double it per helper).
pub const INLINE_LIMIT: u64 = 500_000;

/// The statements and calls of `kernel` with every call inlined, saturating.
fn inlined_size(kernel: &Kernel) -> u64 {
    use crate::ir::visit::{StmtVisitor, for_each_stmt, walk_block};
    use crate::ir::{Block, Expr, ExprKind, VarId};
    struct Count<'a> {
        /// Inlined size of each helper so far (callees come before callers).
        helpers: &'a [u64],
        total: u64,
    }
    impl Count<'_> {
        fn calls(&mut self, e: &Expr) {
            let children: Vec<&Expr> = match &e.kind {
                ExprKind::Lit(_) | ExprKind::Var(_) => Vec::new(),
                ExprKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
                ExprKind::Unary { operand: x, .. }
                | ExprKind::Index { index: x, .. }
                | ExprKind::Field { base: x, .. }
                | ExprKind::Tag(x)
                | ExprKind::Payload { value: x, .. } => vec![x],
                ExprKind::Select {
                    cond,
                    then_value,
                    else_value,
                } => vec![cond, then_value, else_value],
                ExprKind::Record { fields: xs, .. }
                | ExprKind::Ctor { fields: xs, .. }
                | ExprKind::Intrinsic { args: xs, .. } => xs.iter().collect(),
                ExprKind::Call { func, args } => {
                    let callee = self.helpers.get(func.0 as usize).copied().unwrap_or(0);
                    self.total = self.total.saturating_add(callee).saturating_add(1);
                    args.iter().collect()
                }
            };
            children.into_iter().for_each(|c| self.calls(c));
        }
    }
    impl StmtVisitor for Count<'_> {
        fn var(&mut self, _: VarId) {}
        fn expr(&mut self, _: crate::diag::Span, e: &Expr) {
            self.calls(e);
        }
    }
    fn block_size(block: &Block, helpers: &[u64]) -> u64 {
        let mut count = Count { helpers, total: 0 };
        walk_block(&mut count, block);
        let mut statements = 0u64;
        for_each_stmt(block, &mut |_| statements += 1);
        count.total.saturating_add(statements)
    }
    let mut helpers = Vec::with_capacity(kernel.functions.len());
    for f in &kernel.functions {
        let size = block_size(&f.body, &helpers);
        helpers.push(size);
    }
    block_size(&kernel.body, &helpers)
}
