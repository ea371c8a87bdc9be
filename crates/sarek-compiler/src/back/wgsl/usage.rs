//! Which array every array-typed name denotes, which arrays are atomic, and the order helpers
//! are written in.
//!
//! WGSL cannot portably pass a storage or workgroup buffer to a function (pointers in those
//! address spaces are not core WGSL function parameters; measured: naga 30 rejects
//! `fn f(p: ptr<storage, array<f32>, read_write>)` with every capability enabled, "a pointer of
//! space Storage ... can't be passed into functions"), so the generator first runs
//! [`crate::passes::specialize_helpers`]: every helper is a copy per combination of arrays it
//! is called with, naming buffers and shared arrays directly; a per-thread local array stays
//! a parameter, passed as `ptr<function, array<T, N>>`, which core WGSL allows. This walk then
//! finds every array used atomically anywhere, because WGSL declares atomics in the type: such
//! an array is `array<atomic<...>>` and all its plain accesses become atomic loads/stores.

use crate::diag::{Diagnostic, Span};
use crate::intrinsics::Intrinsic;
use crate::ir::{Block, Expr, ExprKind, FuncId, Kernel, LValue, StmtKind, Ty, VarId};
use crate::types::MemSpace;
use std::collections::{BTreeMap, BTreeSet};

/// The array a name denotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Root {
    /// A kernel vector parameter: a storage buffer.
    Buffer(VarId),
    /// A shared array: a module-scope `var<workgroup>`.
    Shared(VarId),
    /// A per-thread array of the function that declares it.
    Local(VarId),
}

/// One helper of the specialised kernel.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Spec {
    pub func: FuncId,
}

pub(super) struct Usage {
    /// Arrays used by an atomic operation somewhere.
    pub atomic: BTreeSet<Root>,
    /// Helpers in the order first called (callers before callees).
    pub specs: Vec<Spec>,
    /// Position in `specs`, by helper.
    index: BTreeMap<FuncId, usize>,
    /// Shared arrays in the order declared (kernel body first, then helpers as first called).
    pub shared: Vec<VarId>,
}

impl Usage {
    pub fn spec_index(&self, func: FuncId) -> Option<usize> {
        self.index.get(&func).copied()
    }
}

/// The root of an array variable: every one is its own after specialisation (a helper's
/// array parameter is a per-thread array of a known size).
pub(super) fn own_root(kernel: &Kernel, v: VarId) -> Option<Root> {
    match &kernel.var(v).ty {
        Ty::Vector(_) if kernel.params.contains(&v) => Some(Root::Buffer(v)),
        Ty::Array {
            space: MemSpace::Shared,
            size: Some(_),
            ..
        } => Some(Root::Shared(v)),
        Ty::Array {
            space: MemSpace::Local,
            size: Some(_),
            ..
        } => Some(Root::Local(v)),
        _ => None,
    }
}

/// Walk the specialised kernel from its body through every call; errors for atomics WGSL
/// cannot express.
pub(super) fn analyse(kernel: &Kernel) -> Result<Usage, Vec<Diagnostic>> {
    let mut w = Walker {
        kernel,
        usage: Usage {
            atomic: BTreeSet::new(),
            specs: Vec::new(),
            index: BTreeMap::new(),
            shared: Vec::new(),
        },
        diags: Vec::new(),
    };
    w.block(&kernel.body);
    if w.diags.is_empty() {
        Ok(w.usage)
    } else {
        Err(w.diags)
    }
}

struct Walker<'k> {
    kernel: &'k Kernel,
    usage: Usage,
    diags: Vec<Diagnostic>,
}

impl Walker<'_> {
    fn block(&mut self, b: &Block) {
        for s in b {
            let span = s.span;
            match &s.kind {
                StmtKind::Let { init, .. } => {
                    if let Some(e) = init {
                        self.expr(e, span);
                    }
                }
                StmtKind::Array { var } => {
                    if matches!(
                        self.kernel.var(*var).ty,
                        Ty::Array {
                            space: MemSpace::Shared,
                            ..
                        }
                    ) && !self.usage.shared.contains(var)
                    {
                        self.usage.shared.push(*var);
                    }
                }
                StmtKind::Assign { place, value } => {
                    // As evaluated (and as specialisation met the calls): the value first.
                    self.expr(value, span);
                    self.place(place, span);
                }
                StmtKind::Expr(e) | StmtKind::Return(Some(e)) => self.expr(e, span),
                StmtKind::If {
                    cond,
                    then_block,
                    else_block,
                } => {
                    self.expr(cond, span);
                    self.block(then_block);
                    self.block(else_block);
                }
                StmtKind::For {
                    start, end, body, ..
                } => {
                    self.expr(start, span);
                    self.expr(end, span);
                    self.block(body);
                }
                StmtKind::While { cond, body, .. } => {
                    self.expr(cond, span);
                    self.block(body);
                }
                StmtKind::Match {
                    scrutinee, arms, ..
                } => {
                    self.expr(scrutinee, span);
                    for a in arms {
                        self.block(&a.body);
                    }
                }
                StmtKind::Block(b) => self.block(b),
                StmtKind::Barrier
                | StmtKind::Fence { .. }
                | StmtKind::Return(None)
                | StmtKind::Break
                | StmtKind::Continue
                | StmtKind::Native(_)
                | StmtKind::Trap(_) => {}
            }
        }
    }

    fn place(&mut self, p: &LValue, span: Span) {
        match p {
            LValue::Var(_) => {}
            LValue::Index { index, .. } => self.expr(index, span),
            LValue::Field { base, .. } => self.place(base, span),
        }
    }

    fn expr(&mut self, e: &Expr, span: Span) {
        match &e.kind {
            ExprKind::Lit(_) | ExprKind::Var(_) => {}
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs, span);
                self.expr(rhs, span);
            }
            ExprKind::Unary { operand: x, .. }
            | ExprKind::Index { index: x, .. }
            | ExprKind::Field { base: x, .. }
            | ExprKind::Tag(x)
            | ExprKind::Payload { value: x, .. } => self.expr(x, span),
            ExprKind::Record { fields, .. } | ExprKind::Ctor { fields, .. } => {
                fields.iter().for_each(|f| self.expr(f, span))
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                self.expr(cond, span);
                self.expr(then_value, span);
                self.expr(else_value, span);
            }
            ExprKind::Intrinsic { op, args } => {
                if let (
                    Intrinsic::Atomic(_),
                    Some(Expr {
                        kind: ExprKind::Var(v),
                        ..
                    }),
                ) = (op, args.first())
                {
                    match own_root(self.kernel, *v) {
                        Some(Root::Local(_)) => self.diags.push(
                            Diagnostic::error(span, "WGSL has no atomics on per-thread arrays")
                                .with_label("atomic operation on a `Local` array")
                                .with_note("WGSL atomics live in storage or workgroup memory; a per-thread array needs no atomics: use a plain read and write"),
                        ),
                        Some(r) => {
                            self.usage.atomic.insert(r);
                        }
                        None => {}
                    }
                }
                args.iter()
                    .skip(usize::from(matches!(op, Intrinsic::Atomic(_))))
                    .for_each(|a| self.expr(a, span))
            }
            ExprKind::Call { func, args } => {
                for a in args {
                    if !matches!(a.ty, Ty::Vector(_) | Ty::Array { .. }) {
                        self.expr(a, span);
                    }
                }
                if self.usage.index.contains_key(func) {
                    return;
                }
                self.usage.index.insert(*func, self.usage.specs.len());
                self.usage.specs.push(Spec { func: *func });
                let f = self.kernel.function(*func);
                // Nests once per helper of a call chain.
                crate::stack::grow(|| self.block(&f.body));
            }
        }
    }
}
