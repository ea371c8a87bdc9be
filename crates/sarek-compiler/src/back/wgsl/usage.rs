//! Which array every array-typed name denotes, which arrays are atomic, and which helper
//! specialisations exist.
//!
//! WGSL cannot portably pass a storage or workgroup buffer to a function (pointers in those
//! address spaces are not core WGSL function parameters; measured: naga 30 rejects
//! `fn f(p: ptr<storage, array<f32>, read_write>)` with every capability enabled, "a pointer of
//! space Storage ... can't be passed into functions"), so a helper that takes vectors is
//! emitted once per combination of arrays it is called with: each vector parameter is replaced
//! by the module-scope variable it denotes. A per-thread local array stays a parameter, passed
//! as `ptr<function, array<T, N>>`, which core WGSL allows. The same walk finds every array
//! used atomically anywhere (through any helper), because WGSL declares atomics in the type:
//! such an array is `array<atomic<...>>` and all its plain accesses become atomic loads/stores.

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

/// One emitted copy of a helper: the array each parameter denotes (`None` for non-arrays).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Spec {
    pub func: FuncId,
    pub roots: Vec<Option<Root>>,
}

pub(super) struct Usage {
    /// Arrays used by an atomic operation somewhere.
    pub atomic: BTreeSet<Root>,
    /// Helper specialisations in the order first called (callers before callees).
    pub specs: Vec<Spec>,
    index: BTreeMap<Spec, usize>,
    /// Shared arrays in the order declared (kernel body first, then helpers).
    pub shared: Vec<VarId>,
}

impl Usage {
    pub fn spec_index(&self, spec: &Spec) -> Option<usize> {
        self.index.get(spec).copied()
    }
}

/// The root of an array variable not bound through a helper parameter.
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

/// Walk the kernel from its body through every call; errors for atomics WGSL cannot express.
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
    w.block(&kernel.body, &BTreeMap::new(), kernel.span);
    if w.diags.is_empty() {
        Ok(w.usage)
    } else {
        Err(w.diags)
    }
}

type Env = BTreeMap<VarId, Root>;

struct Walker<'k> {
    kernel: &'k Kernel,
    usage: Usage,
    diags: Vec<Diagnostic>,
}

impl Walker<'_> {
    fn root(&self, env: &Env, v: VarId) -> Option<Root> {
        env.get(&v).copied().or_else(|| own_root(self.kernel, v))
    }

    fn block(&mut self, b: &Block, outer: &Env, _span: Span) {
        let mut env = outer.clone();
        let env = &mut env;
        for s in b {
            let span = s.span;
            match &s.kind {
                StmtKind::Let { var, init } => {
                    // `let w = v in ...` on a vector or array aliases it.
                    if let Some(Expr {
                        kind: ExprKind::Var(x),
                        ty: Ty::Vector(_) | Ty::Array { .. },
                    }) = init
                    {
                        if let Some(r) = self.root(env, *x) {
                            env.insert(*var, r);
                        }
                    } else if let Some(e) = init {
                        self.expr(e, env, span);
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
                    self.place(place, env, span);
                    self.expr(value, env, span);
                }
                StmtKind::Expr(e) | StmtKind::Return(Some(e)) => self.expr(e, env, span),
                StmtKind::If {
                    cond,
                    then_block,
                    else_block,
                } => {
                    self.expr(cond, env, span);
                    self.block(then_block, env, span);
                    self.block(else_block, env, span);
                }
                StmtKind::For {
                    start, end, body, ..
                } => {
                    self.expr(start, env, span);
                    self.expr(end, env, span);
                    self.block(body, env, span);
                }
                StmtKind::While { cond, body, .. } => {
                    self.expr(cond, env, span);
                    self.block(body, env, span);
                }
                StmtKind::Match {
                    scrutinee, arms, ..
                } => {
                    self.expr(scrutinee, env, span);
                    for a in arms {
                        self.block(&a.body, env, span);
                    }
                }
                StmtKind::Block(b) => self.block(b, env, span),
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

    fn place(&mut self, p: &LValue, env: &Env, span: Span) {
        match p {
            LValue::Var(_) => {}
            LValue::Index { index, .. } => self.expr(index, env, span),
            LValue::Field { base, .. } => self.place(base, env, span),
        }
    }

    fn expr(&mut self, e: &Expr, env: &Env, span: Span) {
        match &e.kind {
            ExprKind::Lit(_) | ExprKind::Var(_) => {}
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs, env, span);
                self.expr(rhs, env, span);
            }
            ExprKind::Unary { operand: x, .. }
            | ExprKind::Index { index: x, .. }
            | ExprKind::Field { base: x, .. }
            | ExprKind::Tag(x)
            | ExprKind::Payload { value: x, .. } => self.expr(x, env, span),
            ExprKind::Record { fields, .. } | ExprKind::Ctor { fields, .. } => {
                fields.iter().for_each(|f| self.expr(f, env, span))
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                self.expr(cond, env, span);
                self.expr(then_value, env, span);
                self.expr(else_value, env, span);
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
                    match self.root(env, *v) {
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
                    .for_each(|a| self.expr(a, env, span))
            }
            ExprKind::Call { func, args } => {
                let roots: Vec<Option<Root>> = args
                    .iter()
                    .map(|a| match (&a.kind, &a.ty) {
                        (ExprKind::Var(v), Ty::Vector(_) | Ty::Array { .. }) => self.root(env, *v),
                        _ => None,
                    })
                    .collect();
                for a in args {
                    if !matches!(a.ty, Ty::Vector(_) | Ty::Array { .. }) {
                        self.expr(a, env, span);
                    }
                }
                let spec = Spec { func: *func, roots };
                if self.usage.index.contains_key(&spec) {
                    return;
                }
                self.usage
                    .index
                    .insert(spec.clone(), self.usage.specs.len());
                self.usage.specs.push(spec.clone());
                let f = self.kernel.function(*func);
                let callee_env: Env = f
                    .params
                    .iter()
                    .zip(&spec.roots)
                    .filter_map(|(p, r)| r.map(|r| (*p, r)))
                    .collect();
                // Nests once per helper of a call chain.
                crate::stack::grow(|| self.block(&f.body, &callee_env, f.span));
            }
        }
    }
}
