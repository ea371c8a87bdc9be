//! Name legalization (seed 000): rename the binders a target cannot declare as written.
//!
//! OCaml lets a kernel rebind a name (`let s = s +. 1.0 in`, two `let t` in one block) and call
//! a variable `half` or `x'`. In C-family source the first declares a name twice (or, in
//! `float s = s + 1.0f`, reads the variable being declared); the others are keywords, built-in
//! names or not identifiers at all. This pass runs once at the entry of a generator; its
//! scoping decision ([`Scoping`]) does not depend on the target's reserved words, so it is
//! made once per kernel for every target declaring its parameters alike ([`renames_in`]).
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

use crate::back::names::{Keywords, NO_KEYWORDS, Namer, is_identifier};
use crate::hash::{FxHashMap as HashMap, FxHashSet as HashSet, FxHasher};
use crate::ir::{Block, Kernel, StmtKind, Ty, VarId};
use std::borrow::Cow;
use std::cell::OnceCell;
use std::hash::{BuildHasher, BuildHasherDefault};

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
    legalize_in(
        Cow::Borrowed(kernel),
        &Scoping::of(kernel, params),
        keywords,
    )
}

/// [`legalize`] of a kernel a generator may already own (an earlier pass's copy): renamed in
/// place, not copied again. `scoping` is [`Scoping::of`] this kernel, or of one with the same
/// binders (the same kernel before constant folding), computed once for several targets.
pub fn legalize_in<'k>(
    kernel: Cow<'k, Kernel>,
    scoping: &Scoping,
    keywords: &'static Keywords,
) -> Cow<'k, Kernel> {
    let renames = renames_in(&kernel, scoping, keywords);
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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
    renames_in(kernel, &Scoping::of(kernel, params), keywords)
}

/// [`renames`] from a scoping decision already made ([`legalize_in`] says which).
pub fn renames_in(kernel: &Kernel, scoping: &Scoping, keywords: &'static Keywords) -> Renames {
    debug_assert_eq!(
        scoping.decls,
        Scoping::of(kernel, scoping.params).decls,
        "a scoping of another kernel"
    );
    let namer = Namer::new(keywords);
    let name = |d: &Decl| match d.binder {
        Binder::Var(v) => kernel.var(v).name.as_str(),
        Binder::Function(f) => kernel.functions[f].name.as_str(),
    };
    // The renames on a target reserving nothing, computed once per scoping, are this
    // target's too when it reserves none of the binders' names and none of the fresh names
    // chosen there: the same binders are renamed, and each fresh name is the first candidate
    // not taken, not an original name and (here too) not reserved, every earlier candidate
    // having been refused for a reason that does not depend on the target.
    if scoping
        .decls
        .iter()
        .all(|d| d.conflicts || !namer.is_reserved(name(d)))
    {
        let shared = scoping
            .unreserved
            .get_or_init(|| renames_with(kernel, scoping, Namer::new(&NO_KEYWORDS)));
        if shared
            .vars
            .iter()
            .map(|(_, n)| n)
            .chain(shared.functions.iter().map(|(_, n)| n))
            .all(|n| !namer.is_reserved(n))
        {
            debug_assert_eq!(
                *shared,
                renames_with(kernel, scoping, Namer::new(keywords)),
                "shared renames differ from the target's own"
            );
            return shared.clone();
        }
    }
    renames_with(kernel, scoping, namer)
}

/// [`renames_in`] with `namer`'s reserved words.
fn renames_with(kernel: &Kernel, scoping: &Scoping, mut namer: Namer<'_>) -> Renames {
    let mut out = Renames::default();
    for (i, d) in scoping.decls.iter().enumerate() {
        let name = match d.binder {
            Binder::Var(v) => &kernel.var(v).name,
            Binder::Function(f) => &kernel.functions[f].name,
        };
        if !(d.conflicts || namer.is_reserved(name)) {
            continue;
        }
        if out.is_empty() {
            // Sized once for a few renames, not grown from empty per rename; no more than
            // eight, as a table of 1 KiB or more makes glibc consolidate its free lists
            // (sizing for every binder left was 1% of `ray_sphere`, which renames one).
            let few = (scoping.decls.len() - i).min(8);
            namer.reserve_fresh(few);
            out.vars.reserve(few);
        }
        let originals = scoping.originals.get_or_init(|| original_hashes(kernel));
        let new = namer.fresh_avoiding(name, originals.len(), |c| {
            originals.contains(&hash_name(c)) && is_original(kernel, c)
        });
        match d.binder {
            Binder::Var(v) => out.vars.push((v, new)),
            Binder::Function(f) => out.functions.push((f, new)),
        }
    }
    out
}

/// The hashes of every original name of `kernel`, which fresh names avoid: computed once
/// per [`Scoping`] (building a set of the names themselves on every target was about 1.5% of
/// a kernel renaming on all six); a hit is confirmed on the names ([`is_original`]).
fn original_hashes(kernel: &Kernel) -> HashSet<u64> {
    let mut hashes = HashSet::with_capacity_and_hasher(
        kernel.vars.len() + kernel.functions.len(),
        Default::default(),
    );
    hashes.extend(
        kernel
            .vars
            .iter()
            .map(|v| hash_name(&v.name))
            .chain(kernel.functions.iter().map(|f| hash_name(&f.name))),
    );
    hashes
}

fn hash_name(name: &str) -> u64 {
    BuildHasherDefault::<FxHasher>::default().hash_one(name)
}

/// Whether `name` is the original name of a variable or helper of `kernel`.
fn is_original(kernel: &Kernel, name: &str) -> bool {
    kernel.vars.iter().any(|v| v.name == name) || kernel.functions.iter().any(|f| f.name == name)
}

/// Legalize's scoping decision, which does not depend on the target's reserved words: the
/// binders a target may rename, in declaration order, and which of them must be renamed
/// whatever the target reserves (not an identifier, or redeclaring a name visible there).
/// Computed once per kernel and [`Params`] for every target that declares parameters alike.
///
/// Why the decision can be made on original names: a fresh name avoids every name of the
/// kernel, so it never hides a later binder; and a binder renamed for redeclaring a visible
/// name `x` sits in the scope of the `x` it redeclares, which (renamed or not) still
/// decides. So "a visible binder has this final name" is "a visible binder has this original
/// name, kept" and, whenever some visible binder has this original name, the earliest of
/// them is kept or its name is reserved or not an identifier: a conflict either way.
#[derive(Debug)]
pub struct Scoping {
    params: Params,
    decls: Vec<Decl>,
    /// [`renames_in`] on a target that reserves nothing, computed on first use.
    unreserved: OnceCell<Renames>,
    /// [`original_hashes`] of the kernel, computed at the first rename (most kernels have
    /// none); the names are the same in every kernel this scoping is for.
    originals: OnceCell<HashSet<u64>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Decl {
    binder: Binder,
    /// Not an identifier, or redeclares a visible name: renamed on every target.
    conflicts: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Binder {
    Var(VarId),
    /// A helper, by index.
    Function(usize),
}

impl Scoping {
    /// The scoping decision for `kernel` on a target declaring its parameters as `params`
    /// says. A kernel with a [`StmtKind::Native`] statement renames nothing.
    pub fn of(kernel: &Kernel, params: Params) -> Scoping {
        // Every binder is declared once: sized up front, the tables never grow (growing the
        // map of visible names rehashed it several times per kernel).
        let binders = kernel.vars.len() + kernel.functions.len();
        let mut s = Scoper {
            k: kernel,
            params,
            decls: Vec::with_capacity(binders),
            declared: Vec::with_capacity(binders),
            scope_starts: Vec::new(),
            visible: HashMap::with_capacity_and_hasher(binders, Default::default()),
        };
        if !(has_native(&kernel.body) || kernel.functions.iter().any(|f| has_native(&f.body))) {
            s.kernel();
        }
        Scoping {
            params,
            decls: s.decls,
            unreserved: OnceCell::new(),
            originals: OnceCell::new(),
        }
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

/// The walk that makes a [`Scoping`].
struct Scoper<'a> {
    k: &'a Kernel,
    params: Params,
    decls: Vec<Decl>,
    /// The original names of the binders visible here, in declaration order.
    declared: Vec<&'a str>,
    /// Where each open scope starts in `declared`; scope 0 (module scope) is never closed.
    scope_starts: Vec<usize>,
    /// How many times each name occurs in `declared`.
    visible: HashMap<&'a str, u32>,
}

impl<'a> Scoper<'a> {
    fn push_scope(&mut self) {
        self.scope_starts.push(self.declared.len());
    }

    fn pop_scope(&mut self) {
        let start = self.scope_starts.pop().expect("an open scope");
        for name in self.declared.drain(start..) {
            if let Some(n) = self.visible.get_mut(name) {
                *n -= 1;
                if *n == 0 {
                    self.visible.remove(name);
                }
            }
        }
    }

    /// Record a binder and make it visible in the current scope; `visible` false for a name
    /// nothing can hide (a parameter-block member).
    fn declare_in(&mut self, kind: Kind, binder: Binder, name: &'a str, visible: bool) {
        let renamable = match (self.params, kind) {
            (Params::ModuleScope, Kind::KernelParam | Kind::HelperArray) => false,
            (Params::Positional, _) | (Params::ModuleScope, Kind::Other) => true,
        };
        if renamable {
            let conflicts = !is_identifier(name) || self.visible.contains_key(name);
            self.decls.push(Decl { binder, conflicts });
        }
        if visible {
            *self.visible.entry(name).or_default() += 1;
            self.declared.push(name);
        }
    }

    fn var(&mut self, kind: Kind, id: VarId) {
        let k = self.k;
        self.declare_in(kind, Binder::Var(id), &k.var(id).name, true);
    }

    fn kernel(&mut self) {
        let k = self.k;
        let module_scope = self.params == Params::ModuleScope;
        if module_scope {
            for p in &k.params {
                let buffer = matches!(k.var(*p).ty, Ty::Vector(_));
                self.declare_in(Kind::KernelParam, Binder::Var(*p), &k.var(*p).name, buffer);
            }
        }
        for (i, f) in k.functions.iter().enumerate() {
            self.declare_in(Kind::Other, Binder::Function(i), &f.name, true);
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
