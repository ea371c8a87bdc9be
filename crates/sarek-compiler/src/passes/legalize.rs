//! Name legalization (seed 000): rename the binders a target cannot declare as written.
//!
//! OCaml lets a kernel rebind a name (`let s = s +. 1.0 in`, two `let t` in one block) and call
//! a variable `half` or `x'`. In C-family source the first declares a name twice (or, in
//! `float s = s + 1.0f`, reads the variable being declared); the others are keywords, built-in
//! names or not identifiers at all. This pass runs once at the entry of a generator.
//!
//! Our IR stores each variable's name once, in [`Kernel::vars`], and every reference is a
//! [`VarId`]; so "every reference in its scope follows the renamed binder" holds by
//! construction, and var-id disambiguation of like-named binders is free (so are the seed's
//! rules for array references that carry only a name, and for a let-bound array whose
//! declaration outlives its scope: here an array is a binder like any other). What remains is
//! the scoping decision: a binder is checked against the names of the binders *visible* where
//! it is declared (innermost-binder scoping: enclosing blocks, the helper's parameters, the
//! module-level names), with `let` and array declarations scoped to the rest of their block,
//! `for` indices to the loop body and pattern variables to their arm, exactly as generators
//! declare them.
//!
//! A renamable binder whose name is not an identifier, is reserved by the target, or already
//! names a visible binder gets [`Namer::fresh`]'s `<name>_<k>`, avoiding every name of the
//! kernel. How names are spelled is the namer's ([`crate::back::names`]); where kernel
//! parameters live is the target's ([`Params`]). Record fields, constructors, intrinsics and
//! type names are neither renamed nor avoided. A kernel with a [`StmtKind::Native`] statement
//! is returned unchanged: the opaque text may name any binder.

use crate::back::names::{Keywords, Namer, is_identifier};
use crate::hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use crate::ir::{Block, Kernel, StmtKind, Ty, VarId};
use std::borrow::Cow;

/// Where a target declares the kernel's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Params {
    /// Parameters of the kernel function, bound by position (C family): renamable like any
    /// binder.
    Positional,
    /// Shaders: a vector is a module-scope storage buffer of its name, which every other
    /// binder (helpers, their locals and parameters) avoids; any other parameter is a member
    /// of the parameter block (`params.n`, `sarek_pc.n`), which no binder can hide. Neither is
    /// renamed. A helper's vector or array parameter stands for the buffer the generator
    /// substitutes: never renamed either.
    ModuleScope,
}

/// Legalize `kernel` for a target that reserves `keywords` and declares its kernel
/// parameters as `params` says. A kernel with nothing to rename is returned as it is.
pub fn legalize<'k>(
    kernel: &'k Kernel,
    keywords: &'static Keywords,
    params: Params,
) -> Cow<'k, Kernel> {
    legalize_cow(Cow::Borrowed(kernel), keywords, params)
}

/// [`legalize`] of a kernel a generator may already own (an earlier pass's copy): renamed in
/// place, not copied again.
pub fn legalize_cow<'k>(
    kernel: Cow<'k, Kernel>,
    keywords: &'static Keywords,
    params: Params,
) -> Cow<'k, Kernel> {
    let renames = renames(&kernel, keywords, params);
    if renames.is_empty() {
        return kernel;
    }
    let mut out = kernel.into_owned();
    renames.apply_to(
        &mut out.vars,
        &mut out.functions,
        |v| &mut v.name,
        |f| &mut f.name,
    );
    Cow::Owned(out)
}

/// What [`legalize`] renames, without copying the kernel: for a generator that keeps its own
/// table of names (the C-family writer).
#[derive(Debug, Default)]
pub struct Renames {
    /// The binders renamed, and their new names.
    pub vars: Vec<(VarId, String)>,
    /// The helpers renamed (by index), and their new names.
    pub functions: Vec<(usize, String)>,
}

impl Renames {
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty() && self.functions.is_empty()
    }

    /// Set the new names in per-variable and per-helper tables (indexed like the kernel's).
    pub fn apply_to<V, F>(
        self,
        vars: &mut [V],
        functions: &mut [F],
        var_name: impl Fn(&mut V) -> &mut String,
        function_name: impl Fn(&mut F) -> &mut String,
    ) {
        for (v, name) in self.vars {
            *var_name(&mut vars[v.0 as usize]) = name;
        }
        for (f, name) in self.functions {
            *function_name(&mut functions[f]) = name;
        }
    }
}

/// The renames legalizing `kernel` needs ([`legalize`]).
pub fn renames(kernel: &Kernel, keywords: &'static Keywords, params: Params) -> Renames {
    if has_native(&kernel.body) || kernel.functions.iter().any(|f| has_native(&f.body)) {
        return Renames::default();
    }
    let mut l = Legalizer {
        k: kernel,
        namer: Namer::new(keywords),
        kernel_names: None,
        params,
        renamed_vars: Vec::new(),
        renamed_fns: Vec::new(),
        scopes: vec![Vec::new()],
        visible: HashMap::default(),
    };
    l.kernel();
    Renames {
        vars: l.renamed_vars,
        functions: l.renamed_fns,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    KernelParam,
    /// A helper's vector or array parameter.
    HelperArray,
    /// Helpers, their other parameters, locals.
    Other,
}

fn has_native(b: &Block) -> bool {
    b.iter().any(|s| match &s.kind {
        StmtKind::Native(_) => true,
        StmtKind::If {
            then_block,
            else_block,
            ..
        } => has_native(then_block) || has_native(else_block),
        StmtKind::For { body, .. } | StmtKind::While { body, .. } | StmtKind::Block(body) => {
            has_native(body)
        }
        StmtKind::Match { arms, .. } => arms.iter().any(|a| has_native(&a.body)),
        _ => false,
    })
}

struct Legalizer<'a> {
    k: &'a Kernel,
    /// The names assigned so far: fresh names avoid them and `kernel_names`.
    namer: Namer,
    /// Every original name of the kernel, borrowed; gathered at the first rename (most
    /// kernels have none).
    kernel_names: Option<HashSet<&'a str>>,
    params: Params,
    /// The binders renamed, and their new names.
    renamed_vars: Vec<(VarId, String)>,
    /// The helpers renamed (by index), and their new names.
    renamed_fns: Vec<(usize, String)>,
    /// Final names of the binders visible here, innermost scope last; scope 0 is module scope.
    /// Borrowed from the kernel unless renamed (most binders keep their names).
    scopes: Vec<Vec<Cow<'a, str>>>,
    /// How many times each name occurs in `scopes`.
    visible: HashMap<Cow<'a, str>, u32>,
}

impl<'a> Legalizer<'a> {
    fn visible(&self, name: &str) -> bool {
        self.visible.contains_key(name)
    }

    fn push_scope(&mut self) {
        self.scopes.push(Vec::new());
    }

    fn pop_scope(&mut self) {
        for name in self.scopes.pop().expect("a scope") {
            if let Some(n) = self.visible.get_mut(&name) {
                *n -= 1;
                if *n == 0 {
                    self.visible.remove(&name);
                }
            }
        }
    }

    /// Decide the final name of a binder and make it visible in the current scope: `Some`
    /// with the new name when it is renamed.
    fn declare(&mut self, kind: Kind, name: &'a str) -> Option<String> {
        self.declare_in(kind, name, true)
    }

    /// [`Self::declare`]; `visible` false for a name nothing can hide (a parameter-block
    /// member).
    fn declare_in(&mut self, kind: Kind, name: &'a str, visible: bool) -> Option<String> {
        let renamable = match (self.params, kind) {
            (Params::ModuleScope, Kind::KernelParam | Kind::HelperArray) => false,
            (Params::Positional, _) | (Params::ModuleScope, Kind::Other) => true,
        };
        let conflicts = !is_identifier(name) || self.namer.is_reserved(name) || self.visible(name);
        let renamed = if renamable && conflicts {
            let k = self.k;
            let originals = self.kernel_names.get_or_insert_with(|| {
                k.vars
                    .iter()
                    .map(|v| v.name.as_str())
                    .chain(k.functions.iter().map(|f| f.name.as_str()))
                    .collect()
            });
            Some(
                self.namer
                    .fresh_avoiding(name, originals.len(), |c| originals.contains(c)),
            )
        } else {
            None
        };
        if visible {
            let seen = match &renamed {
                Some(new) => Cow::Owned(new.clone()),
                None => Cow::Borrowed(name),
            };
            *self.visible.entry(seen.clone()).or_default() += 1;
            self.scopes.last_mut().expect("module scope").push(seen);
        }
        renamed
    }

    fn var(&mut self, kind: Kind, id: VarId) {
        let k = self.k;
        if let Some(new) = self.declare(kind, &k.var(id).name) {
            self.renamed_vars.push((id, new));
        }
    }

    fn kernel(&mut self) {
        let k = self.k;
        let module_scope = self.params == Params::ModuleScope;
        if module_scope {
            for p in &k.params {
                let buffer = matches!(k.var(*p).ty, Ty::Vector(_));
                if let Some(new) = self.declare_in(Kind::KernelParam, &k.var(*p).name, buffer) {
                    self.renamed_vars.push((*p, new));
                }
            }
        }
        for (i, f) in k.functions.iter().enumerate() {
            if let Some(new) = self.declare(Kind::Other, &f.name) {
                self.renamed_fns.push((i, new));
            }
        }
        for f in &k.functions {
            self.push_scope();
            for p in &f.params {
                let kind = match k.var(*p).ty {
                    Ty::Vector(_) | Ty::Array { .. } => Kind::HelperArray,
                    _ => Kind::Other,
                };
                self.var(kind, *p);
            }
            self.block_in_scope(&f.body);
            self.pop_scope();
        }
        self.push_scope();
        if !module_scope {
            for p in &k.params {
                self.var(Kind::KernelParam, *p);
            }
        }
        self.block_in_scope(&k.body);
        self.pop_scope();
    }

    fn block(&mut self, b: &Block) {
        self.push_scope();
        self.block_in_scope(b);
        self.pop_scope();
    }

    fn block_in_scope(&mut self, b: &Block) {
        for s in b {
            match &s.kind {
                StmtKind::Let { var, .. } | StmtKind::Array { var } => self.var(Kind::Other, *var),
                StmtKind::If {
                    then_block,
                    else_block,
                    ..
                } => {
                    self.block(then_block);
                    self.block(else_block);
                }
                StmtKind::For { var, body, .. } => {
                    self.push_scope();
                    self.var(Kind::Other, *var);
                    self.block(body);
                    self.pop_scope();
                }
                StmtKind::While { body, .. } | StmtKind::Block(body) => self.block(body),
                StmtKind::Match { arms, .. } => {
                    for arm in arms {
                        self.push_scope();
                        for b in arm.bindings.iter().flatten() {
                            self.var(Kind::Other, *b);
                        }
                        self.block(&arm.body);
                        self.pop_scope();
                    }
                }
                StmtKind::Assign { .. }
                | StmtKind::Expr(_)
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
}
