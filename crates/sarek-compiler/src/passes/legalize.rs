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
//! deciding which binders to rename, which needs the target's scoping: a binder is checked
//! against the names of the binders *visible* where it is declared (innermost-binder scoping:
//! enclosing blocks, the helper's parameters, the module-level helper names), with `let` and
//! array declarations scoped to the rest of their block, `for` indices to the loop body and
//! pattern variables to their arm, exactly as generators declare them.
//!
//! A binder whose name is invalid as an identifier, reserved, or already names a visible binder
//! becomes `<name>_<k>` with the smallest `k >= 1` such that no name of the kernel (original or
//! assigned) uses it; the result is also checked against `reserved`. Record fields,
//! constructors, intrinsics and type names are neither renamed nor avoided. A kernel with a
//! [`StmtKind::Native`] statement is returned unchanged: the opaque text may name any binder.

use crate::ir::{Block, Kernel, StmtKind, Ty, VarId};
use crate::passes::reserved::is_valid_identifier;
use std::collections::HashSet;

/// Legalize `kernel` for a C-family target. `reserved(name)` says `name` cannot be declared in
/// the target language. `rename_params` says whether kernel parameters may be renamed (true
/// where arguments are bound by position); when false they keep their names and are not
/// counted among the binders a local must avoid, because the target exposes them by name and
/// handles a local shadowing one itself. Helper parameters are always renamable and counted.
pub fn legalize(kernel: &Kernel, reserved: &dyn Fn(&str) -> bool, rename_params: bool) -> Kernel {
    run(kernel, reserved, Mode::Target { rename_params })
}

/// The shader variant (GLSL, WGSL): only names that are not identifiers and locals that
/// redeclare a binder in scope are renamed; reserved words and kernel-parameter shadowing are
/// left to the target's own escaper. A kernel vector parameter is a module-scope buffer of its
/// name: it is never renamed and every local (in the kernel and in helpers) avoids it. Helper
/// names are module-scope too, so a local never hides one. A helper's vector parameter (a
/// buffer the generator substitutes) is never renamed either.
pub fn legalize_shader(kernel: &Kernel) -> Kernel {
    run(
        kernel,
        &|_| false,
        Mode::Shader {
            avoid_scalar_params: false,
        },
    )
}

/// [`legalize_shader`], additionally renaming locals that shadow a *scalar* kernel parameter.
/// For targets whose generator reads scalar parameters through a block by name and prefers
/// never to have a local spelled like one (GLSL), so that the emitted source is unambiguous.
pub fn legalize_shader_avoiding_params(kernel: &Kernel) -> Kernel {
    run(
        kernel,
        &|_| false,
        Mode::Shader {
            avoid_scalar_params: true,
        },
    )
}

#[derive(Clone, Copy)]
enum Mode {
    Target { rename_params: bool },
    Shader { avoid_scalar_params: bool },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    KernelParam { vector: bool },
    HelperParam { vector: bool },
    Function,
    Local,
}

fn is_buffer(ty: &Ty) -> bool {
    matches!(ty, Ty::Vector(_))
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

fn run(kernel: &Kernel, reserved: &dyn Fn(&str) -> bool, mode: Mode) -> Kernel {
    if has_native(&kernel.body) || kernel.functions.iter().any(|f| has_native(&f.body)) {
        return kernel.clone();
    }
    let used: HashSet<String> = kernel
        .vars
        .iter()
        .map(|v| v.name.clone())
        .chain(kernel.functions.iter().map(|f| f.name.clone()))
        .collect();
    let mut l = Legalizer {
        k: kernel,
        reserved,
        mode,
        var_names: kernel.vars.iter().map(|v| v.name.clone()).collect(),
        fn_names: kernel.functions.iter().map(|f| f.name.clone()).collect(),
        used,
        scopes: vec![Vec::new()],
    };
    l.kernel();
    let mut out = kernel.clone();
    for (v, name) in out.vars.iter_mut().zip(l.var_names) {
        v.name = name;
    }
    for (f, name) in out.functions.iter_mut().zip(l.fn_names) {
        f.name = name;
    }
    out
}

struct Legalizer<'a> {
    k: &'a Kernel,
    reserved: &'a dyn Fn(&str) -> bool,
    mode: Mode,
    /// Final names, indexed by VarId.
    var_names: Vec<String>,
    /// Final helper names, indexed by FuncId.
    fn_names: Vec<String>,
    /// Every name of the kernel, original or assigned: fresh names avoid all of them.
    used: HashSet<String>,
    /// Final names of the binders visible here, innermost scope last; scope 0 is module scope.
    scopes: Vec<Vec<String>>,
}

impl Legalizer<'_> {
    fn visible(&self, name: &str) -> bool {
        self.scopes.iter().any(|s| s.iter().any(|n| n == name))
    }

    fn is_reserved(&self, name: &str) -> bool {
        (self.reserved)(name)
    }

    /// Decide the final name of a binder and make it visible (or not) in the current scope.
    fn declare(&mut self, kind: Kind, name: &str) -> String {
        let invalid = !is_valid_identifier(name);
        let (renamable, counted, conflicts) = match self.mode {
            Mode::Target { rename_params } => {
                let param = matches!(kind, Kind::KernelParam { .. });
                let conflicts = invalid || self.is_reserved(name) || self.visible(name);
                (!param || rename_params, !param || rename_params, conflicts)
            }
            Mode::Shader {
                avoid_scalar_params,
            } => match kind {
                Kind::KernelParam { vector } => (false, vector || avoid_scalar_params, false),
                Kind::HelperParam { vector: true } => (false, true, false),
                Kind::HelperParam { vector: false } | Kind::Function | Kind::Local => {
                    (true, true, invalid || self.visible(name))
                }
            },
        };
        let final_name = if renamable && conflicts {
            self.fresh(name)
        } else {
            name.to_string()
        };
        if counted {
            self.scopes
                .last_mut()
                .expect("module scope")
                .push(final_name.clone());
        }
        final_name
    }

    /// `<base>_<k>` with the smallest k that no name of the kernel uses and the target accepts.
    fn fresh(&mut self, name: &str) -> String {
        let base = base_name(name);
        // With a reserved table that reserves whole families (`get_*`), every `<base>_<k>` may
        // be refused: fall back to other bases rather than loop forever.
        let bound = self.used.len() + 2;
        for b in [base.clone(), format!("v_{base}"), "v".to_string()] {
            for k in 1..=bound.max(1000) {
                let cand = format!("{b}_{k}");
                if !self.used.contains(&cand)
                    && is_valid_identifier(&cand)
                    && !self.is_reserved(&cand)
                {
                    self.used.insert(cand.clone());
                    return cand;
                }
            }
        }
        unreachable!("a reserved-word predicate refused every fresh name")
    }

    fn var(&mut self, kind: Kind, id: VarId) {
        let name = self.k.var(id).name.clone();
        let final_name = self.declare(kind, &name);
        self.var_names[id.0 as usize] = final_name;
    }

    fn kernel(&mut self) {
        let k = self.k;
        // Shader buffers live at module scope: helper names and every local avoid them.
        let shader = matches!(self.mode, Mode::Shader { .. });
        if shader {
            for p in &k.params {
                if is_buffer(&k.var(*p).ty) {
                    self.var(Kind::KernelParam { vector: true }, *p);
                }
            }
        }
        for (i, f) in k.functions.iter().enumerate() {
            self.fn_names[i] = self.declare(Kind::Function, &f.name);
        }
        for f in &k.functions {
            self.scopes.push(Vec::new());
            for p in &f.params {
                let vector = shader && matches!(k.var(*p).ty, Ty::Vector(_) | Ty::Array { .. });
                self.var(Kind::HelperParam { vector }, *p);
            }
            self.block_in_scope(&f.body);
            self.scopes.pop();
        }
        self.scopes.push(Vec::new());
        for p in &k.params {
            let vector = is_buffer(&k.var(*p).ty);
            if !(shader && vector) {
                self.var(Kind::KernelParam { vector }, *p);
            }
        }
        self.block_in_scope(&k.body);
        self.scopes.pop();
    }

    fn block(&mut self, b: &Block) {
        self.scopes.push(Vec::new());
        self.block_in_scope(b);
        self.scopes.pop();
    }

    fn block_in_scope(&mut self, b: &Block) {
        for s in b {
            match &s.kind {
                StmtKind::Let { var, .. } | StmtKind::Array { var } => self.var(Kind::Local, *var),
                StmtKind::If {
                    then_block,
                    else_block,
                    ..
                } => {
                    self.block(then_block);
                    self.block(else_block);
                }
                StmtKind::For { var, body, .. } => {
                    self.scopes.push(Vec::new());
                    self.var(Kind::Local, *var);
                    self.block(body);
                    self.scopes.pop();
                }
                StmtKind::While { body, .. } | StmtKind::Block(body) => self.block(body),
                StmtKind::Match { arms, .. } => {
                    for arm in arms {
                        self.scopes.push(Vec::new());
                        for b in arm.bindings.iter().flatten() {
                            self.var(Kind::Local, *b);
                        }
                        self.block(&arm.body);
                        self.scopes.pop();
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

/// The stem of a fresh name: `name` itself when it is a plain identifier; otherwise every
/// character that cannot be in an identifier becomes `_`, runs of `_` collapse and leading or
/// trailing ones go (`x'` -> `x`, `__i` -> `i`), so `<base>_<k>` never contains `__`, which
/// GLSL reserves.
fn base_name(name: &str) -> String {
    let mapped: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let mut base = String::with_capacity(mapped.len());
    for c in mapped.chars() {
        if !(c == '_' && (base.is_empty() || base.ends_with('_'))) {
            base.push(c);
        }
    }
    while base.ends_with('_') {
        base.pop();
    }
    if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) {
        base.insert(0, 'v');
    }
    base
}

#[cfg(test)]
mod tests {
    use super::base_name;

    #[test]
    fn base_names() {
        assert_eq!(base_name("s"), "s");
        assert_eq!(base_name("x'"), "x");
        assert_eq!(base_name("__i"), "i");
        assert_eq!(base_name("a__b"), "a_b");
        assert_eq!(base_name("_"), "v");
        assert_eq!(base_name("'"), "v");
    }
}
