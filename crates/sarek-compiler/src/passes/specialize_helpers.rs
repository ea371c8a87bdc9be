//! One copy of a helper per combination of arrays it is called with, for targets whose
//! functions cannot take storage or workgroup arrays as parameters (WGSL, GLSL).
//!
//! Each call's array arguments are resolved to what they denote: a kernel vector parameter
//! or a shared array ([`Binding::Global`]), which the copy names directly, its parameter
//! removed; or a per-thread array of some size ([`Binding::Local`]), which stays a parameter
//! whose type carries the size. Copies are made from the kernel body through every call,
//! so helpers never called disappear. Every binder of a copy is a fresh variable (the IR
//! binds each variable once; the copying is [`crate::ir::fresh`]'s), except shared arrays declared in a helper, which stay one
//! array whichever copy runs. The result is ordinary IR (callees before callers), except
//! that a helper may name a kernel vector parameter or a shared array of the kernel.

use crate::hash::FxHashMap as HashMap;
use crate::ir::fresh::{CopyRules, Scope, copy_block, fresh_var};
#[cfg(test)]
use crate::ir::visit;
use crate::ir::{
    Block, Expr, ExprKind, FuncId, Function, Kernel, LValue, StmtKind, Ty, VarId, VarInfo,
};
use crate::passes::legalize::Renames;
use crate::types::MemSpace;
use std::borrow::Cow;

/// What an array parameter of a helper denotes in one copy.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Binding {
    /// A kernel vector parameter or a shared array: named directly by the copy.
    Global(VarId),
    /// A per-thread array of this many elements, passed as a parameter.
    Local(u32),
}

/// A kernel whose helpers are one copy per call shape (the kernel itself, borrowed, when it
/// has no helpers: there is nothing to copy).
pub struct Specialized<'k> {
    pub kernel: Cow<'k, Kernel>,
    /// Per helper of `kernel`: whether the helper it copies had array parameters.
    pub has_arrays: Vec<bool>,
    /// Legalize's new names, when `kernel` is the original (nothing to copy) and so does not
    /// carry them: names are read through [`Self::var_name`] and [`Self::function_name`].
    renamed_vars: HashMap<VarId, String>,
    renamed_functions: HashMap<usize, String>,
}

impl Specialized<'_> {
    /// The name of the binder `v`, legalize's new one if it has one.
    pub fn var_name(&self, v: VarId) -> &str {
        match self.renamed_vars.get(&v) {
            Some(name) => name,
            None => &self.kernel.var(v).name,
        }
    }

    /// The name of helper `f`, legalize's new one if it has one.
    pub fn function_name(&self, f: FuncId) -> &str {
        match self.renamed_functions.get(&(f.0 as usize)) {
            Some(name) => name,
            None => &self.kernel.function(f).name,
        }
    }
}

/// The kernel with its helpers specialised per array argument.
pub fn specialize_helpers(kernel: &Kernel) -> Specialized<'_> {
    specialize_renamed(kernel, Renames::default())
}

/// [`specialize_helpers`] of `kernel` with legalize's `renames` applied: when the
/// specialisation copies the kernel, the renamed names are set in that copy (a copy of a
/// renamed helper or binder has its new name) instead of in a copy of their own; when there
/// is nothing to copy, they are kept beside the borrowed kernel.
pub fn specialize_renamed(kernel: &Kernel, renames: Renames) -> Specialized<'_> {
    if copies_in_place(kernel) {
        return Specialized {
            kernel: Cow::Borrowed(kernel),
            has_arrays: vec![false; kernel.functions.len()],
            renamed_vars: renames.vars.into_iter().collect(),
            renamed_functions: renames.functions.into_iter().collect(),
        };
    }
    let mut vars = kernel.vars.clone();
    let mut function_names: Vec<Option<String>> = vec![None; kernel.functions.len()];
    renames.apply_to(
        &mut vars,
        &mut function_names,
        |v| &mut v.name,
        |f| f.get_or_insert_default(),
    );
    let mut b = Builder {
        k: kernel,
        vars,
        keys: HashMap::default(),
        copies: Vec::new(),
        completed: Vec::new(),
    };
    // The kernel body keeps its binders; only its calls change.
    let body = copy_block(&mut b, &mut Scope::keep(), &kernel.body);
    // Copies are numbered as first met; the IR wants callees first: completion order.
    let mut position = vec![0; b.copies.len()];
    for (pos, &copy) in b.completed.iter().enumerate() {
        position[copy] = pos;
    }
    let renumber = |mut block: Block| {
        renumber_calls(&mut block, &position);
        block
    };
    let mut functions = Vec::new();
    let mut has_arrays = Vec::new();
    let mut copies: Vec<Option<Copy>> = b.copies.into_iter().map(Some).collect();
    for &copy in &b.completed {
        let c = copies[copy].take().expect("each copy completes once");
        let mut function = c.function;
        if let Some(name) = &function_names[c.origin.0 as usize] {
            function.name.clone_from(name);
        }
        function.body = renumber(std::mem::take(&mut function.body));
        functions.push(function);
        has_arrays.push(c.has_arrays);
    }
    Specialized {
        kernel: Cow::Owned(Kernel {
            name: kernel.name.clone(),
            span: kernel.span,
            vars: b.vars,
            params: kernel.params.clone(),
            body: renumber(body),
            records: kernel.records.clone(),
            variants: kernel.variants.clone(),
            functions,
        }),
        has_arrays,
        renamed_vars: HashMap::default(),
        renamed_functions: HashMap::default(),
    }
}

/// Whether the specialisation of `kernel` would be `kernel` itself, up to fresh variables for
/// the helpers' binders: no helper takes an array, and the kernel body calls every helper,
/// finishing them in their IR order (the copies' order). Most kernels' helpers work on
/// scalars and records: then nothing is copied.
fn copies_in_place(kernel: &Kernel) -> bool {
    struct Order<'k> {
        k: &'k Kernel,
        reached: Vec<bool>,
        finished: usize,
        in_order: bool,
    }
    impl Order<'_> {
        /// Calls in the order the copier meets them: arguments first.
        fn expr(&mut self, e: &Expr) {
            for c in e.children() {
                self.expr(c);
            }
            if let ExprKind::Call { func, .. } = e.kind {
                let i = func.0 as usize;
                if !std::mem::replace(&mut self.reached[i], true) {
                    let body = &self.k.function(func).body;
                    crate::stack::grow(|| crate::ir::visit::walk_block(self, body));
                    self.in_order &= i == self.finished;
                    self.finished += 1;
                }
            }
        }
    }
    impl crate::ir::visit::StmtVisitor for Order<'_> {
        fn var(&mut self, _: VarId) {}
        fn expr(&mut self, _: crate::diag::Span, e: &Expr) {
            Order::expr(self, e);
        }
    }
    let takes_array = |f: &Function| f.params.iter().any(|p| is_array(&kernel.var(*p).ty));
    if kernel.functions.iter().any(takes_array) {
        return false;
    }
    let mut order = Order {
        k: kernel,
        reached: vec![false; kernel.functions.len()],
        finished: 0,
        in_order: true,
    };
    crate::ir::visit::walk_block(&mut order, &kernel.body);
    order.in_order && order.finished == kernel.functions.len()
}

struct Copy {
    function: Function,
    /// The helper copied.
    origin: FuncId,
    has_arrays: bool,
}

struct Builder<'k> {
    k: &'k Kernel,
    vars: Vec<VarInfo>,
    /// (original helper, bindings of its array parameters) -> copy number (first met).
    keys: HashMap<(FuncId, Vec<Binding>), usize>,
    /// By copy number; a placeholder until the copy's body is done.
    copies: Vec<Copy>,
    /// Copy numbers in the order their bodies were finished.
    completed: Vec<usize>,
}

fn is_array(ty: &Ty) -> bool {
    matches!(ty, Ty::Vector(_) | Ty::Array { .. })
}

/// Bodies are copied by the IR's one copier; this pass decides calls and shared arrays.
impl CopyRules for Builder<'_> {
    fn vars(&mut self) -> &mut Vec<VarInfo> {
        &mut self.vars
    }

    /// A shared array declared in a helper stays one array whichever copy runs.
    fn keeps_array(&self, v: VarId) -> bool {
        matches!(
            self.k.var(v).ty,
            Ty::Array {
                space: MemSpace::Shared,
                ..
            }
        )
    }

    /// A call goes to the callee's copy for the arrays it passes.
    fn call(&mut self, func: FuncId, args: Vec<Expr>) -> ExprKind {
        let f = self.k.function(func);
        let mut key = Vec::new();
        let mut kept = Vec::new();
        for (p, a) in f.params.iter().zip(args) {
            if !is_array(&self.k.var(*p).ty) {
                kept.push(a);
                continue;
            }
            let ExprKind::Var(v) = a.kind else {
                // Lowering names every array argument; keep anything else as is.
                kept.push(a);
                continue;
            };
            let binding = self.binding(v);
            if matches!(binding, Binding::Local(_)) {
                kept.push(a);
            }
            key.push(binding);
        }
        let copy = self.copy(func, key);
        ExprKind::Call {
            func: FuncId(copy as u32),
            args: kept,
        }
    }
}

impl Builder<'_> {
    /// What the array variable `v` (already substituted) denotes.
    fn binding(&self, v: VarId) -> Binding {
        match &self.vars[v.0 as usize].ty {
            Ty::Array {
                space: MemSpace::Local,
                size: Some(n),
                ..
            } => Binding::Local(*n),
            _ => Binding::Global(v),
        }
    }

    /// The copy of `func` for these bindings, made on first use.
    fn copy(&mut self, func: FuncId, key: Vec<Binding>) -> usize {
        if let Some(&c) = self.keys.get(&(func, key.clone())) {
            return c;
        }
        let f = self.k.function(func);
        let number = self.copies.len();
        self.keys.insert((func, key.clone()), number);
        self.copies.push(Copy {
            function: Function {
                name: f.name.clone(),
                span: f.span,
                params: Vec::new(),
                ret: f.ret.clone(),
                body: Vec::new(),
            },
            origin: func,
            has_arrays: !key.is_empty(),
        });
        let mut sc = Scope::fresh();
        let mut params = Vec::new();
        let mut bindings = key.into_iter();
        for &p in &f.params {
            let ty = self.k.var(p).ty.clone();
            if is_array(&ty) {
                match bindings.next() {
                    Some(Binding::Global(g)) => {
                        sc.map.insert(p, g);
                    }
                    Some(Binding::Local(n)) => {
                        let elem = ty.elem().cloned().unwrap_or(Ty::Unit);
                        let sized = Ty::Array {
                            elem: Box::new(elem),
                            space: MemSpace::Local,
                            size: Some(n),
                        };
                        let np = fresh_var(&mut self.vars, p, sized);
                        sc.map.insert(p, np);
                        params.push(np);
                    }
                    None => {}
                }
            } else {
                let np = fresh_var(&mut self.vars, p, ty);
                sc.map.insert(p, np);
                params.push(np);
            }
        }
        // Nests once per helper of a call chain.
        let body = crate::stack::grow(|| copy_block(self, &mut sc, &f.body));
        let c = &mut self.copies[number].function;
        c.params = params;
        c.body = body;
        self.completed.push(number);
        number
    }
}

/// Calls name copies by first-met number while building; the IR numbers helpers in order.
fn renumber_calls(b: &mut Block, position: &[usize]) {
    fn expr(e: &mut Expr, position: &[usize]) {
        if let ExprKind::Call { func, .. } = &mut e.kind {
            *func = FuncId(position[func.0 as usize] as u32);
        }
        match &mut e.kind {
            ExprKind::Lit(_) | ExprKind::Var(_) => {}
            ExprKind::Binary { lhs, rhs, .. } => {
                expr(lhs, position);
                expr(rhs, position);
            }
            ExprKind::Unary { operand: x, .. }
            | ExprKind::Index { index: x, .. }
            | ExprKind::Field { base: x, .. }
            | ExprKind::Tag(x)
            | ExprKind::Payload { value: x, .. } => expr(x, position),
            ExprKind::Record { fields: xs, .. }
            | ExprKind::Ctor { fields: xs, .. }
            | ExprKind::Call { args: xs, .. }
            | ExprKind::Intrinsic { args: xs, .. } => xs.iter_mut().for_each(|x| expr(x, position)),
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                expr(cond, position);
                expr(then_value, position);
                expr(else_value, position);
            }
        }
    }
    fn place(p: &mut LValue, position: &[usize]) {
        match p {
            LValue::Var(_) => {}
            LValue::Index { index, .. } => expr(index, position),
            LValue::Field { base, .. } => place(base, position),
        }
    }
    for s in b {
        match &mut s.kind {
            StmtKind::Let { init: Some(e), .. } | StmtKind::Expr(e) | StmtKind::Return(Some(e)) => {
                expr(e, position)
            }
            StmtKind::Assign { place: p, value } => {
                place(p, position);
                expr(value, position);
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                expr(cond, position);
                renumber_calls(then_block, position);
                renumber_calls(else_block, position);
            }
            StmtKind::For {
                start, end, body, ..
            } => {
                expr(start, position);
                expr(end, position);
                renumber_calls(body, position);
            }
            StmtKind::While { cond, body, .. } => {
                expr(cond, position);
                renumber_calls(body, position);
            }
            StmtKind::Match {
                scrutinee, arms, ..
            } => {
                expr(scrutinee, position);
                arms.iter_mut()
                    .for_each(|a| renumber_calls(&mut a.body, position));
            }
            StmtKind::Block(b) => renumber_calls(b, position),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::SourceMap;

    fn kernel(src: &str) -> Kernel {
        let mut sources = SourceMap::new();
        let file = sources.add("t.sarek", src);
        let program = crate::check(&sources, file).expect("the test kernel checks");
        crate::lower_kernel(&program, &program.kernels[0].name).expect("it lowers")
    }

    fn specialized(src: &str) -> Specialized<'static> {
        let k = kernel(src);
        let s = specialize_helpers(&k);
        assert_eq!(crate::ir::validate::validate(&s.kernel), Ok(()));
        assert_eq!(s.has_arrays.len(), s.kernel.functions.len());
        Specialized {
            kernel: Cow::Owned(s.kernel.into_owned()),
            has_arrays: s.has_arrays,
            renamed_vars: s.renamed_vars,
            renamed_functions: s.renamed_functions,
        }
    }

    /// (helper name, parameter names, whether its copy had arrays), in IR order.
    fn shape(s: &Specialized) -> Vec<(String, Vec<String>, bool)> {
        s.kernel
            .functions
            .iter()
            .zip(&s.has_arrays)
            .map(|(f, a)| {
                let params = f.params.iter().map(|p| s.kernel.var(*p).name.clone());
                (f.name.clone(), params.collect(), *a)
            })
            .collect()
    }

    #[test]
    fn helpers_over_scalars_met_in_order_are_not_copied() {
        let k = kernel(
            "let sq (x : float32) : float32 = x *. x
             let norm (x : float32) (y : float32) : float32 = sqrt (sq x +. sq y)
             let%kernel k (a : float32 vector) = a.(0) <- norm a.(1) a.(2)",
        );
        let s = specialize_helpers(&k);
        assert!(
            matches!(s.kernel, Cow::Borrowed(_)),
            "nothing to specialise"
        );
        assert_eq!(s.has_arrays, [false, false]);
        // Legalize's names are kept beside the borrowed kernel.
        let mut renames = Renames::default();
        renames.vars.push((k.functions[1].params[0], "x_1".into()));
        renames.functions.push((0, "sq_1".into()));
        let s = specialize_renamed(&k, renames);
        assert!(matches!(s.kernel, Cow::Borrowed(_)));
        assert_eq!(s.var_name(k.functions[1].params[0]), "x_1");
        assert_eq!(s.var_name(k.functions[1].params[1]), "y");
        assert_eq!(s.function_name(FuncId(0)), "sq_1");
        assert_eq!(s.function_name(FuncId(1)), "norm");
    }

    /// `k` with its helpers, which must not call one another, in reverse order: valid IR
    /// that lowering does not produce (it orders helpers as the kernel first finishes them).
    fn reversed(mut k: Kernel) -> Kernel {
        let n = k.functions.len();
        let position: Vec<usize> = (0..n).map(|i| n - 1 - i).collect();
        renumber_calls(&mut k.body, &position);
        k.functions.reverse();
        assert_eq!(crate::ir::validate::validate(&k), Ok(()));
        k
    }

    #[test]
    fn helpers_met_out_of_the_ir_order_are_copied_in_the_order_met() {
        let k = reversed(kernel(
            "let a (x : float32) : float32 = x +. 1.0
             let b (x : float32) : float32 = x *. 2.0
             let%kernel k (v : float32 vector) = v.(0) <- a v.(1) +. b v.(2)",
        ));
        let s = specialize_helpers(&k);
        assert!(matches!(s.kernel, Cow::Owned(_)));
        assert_eq!(crate::ir::validate::validate(&s.kernel), Ok(()));
        let names: Vec<_> = s.kernel.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let p = s.kernel.functions[0].params[0];
        assert!(p.0 as usize >= k.vars.len(), "a fresh parameter");
    }

    #[test]
    fn one_copy_per_global_array_with_its_parameter_removed() {
        let s = specialized(
            "let get (v : float32 vector) (i : int32) : float32 = v.(i)
             let twice (v : float32 vector) (i : int32) : float32 = get v i +. get v i
             let unused (v : float32 vector) : float32 = v.(0)
             let gets (v : float32 array) (i : int32) : float32 = v.(i)
             let%kernel k (a : float32 vector) (b : float32 vector) =
               let%shared (t : float32) = 64 in
               t.(0) <- 1.0;
               a.(0) <- twice a 1 +. twice b 2 +. gets t 0 +. twice a 3",
        );
        // Callees first; `twice a` is made once; `unused` is gone.
        let names: Vec<_> = shape(&s)
            .into_iter()
            .map(|(n, p, a)| (n, p.join(" "), a))
            .collect();
        let want = [
            ("get", "i", true),
            ("twice", "i", true),
            ("get", "i", true),
            ("twice", "i", true),
            ("gets", "i", true),
        ];
        assert_eq!(names.len(), want.len(), "{names:?}");
        for ((n, p, a), (wn, wp, wa)) in names.iter().zip(want) {
            // Monomorphisation may suffix a name (`gets__sharr64_f32`).
            assert!(
                n.starts_with(wn) && (p.as_str(), *a) == (wp, wa),
                "{names:?}"
            );
        }
        // Each copy of `get` reads the array it was made for.
        let read = |f: &Function| {
            let mut base = None;
            visit::for_each_stmt(&f.body, &mut |st| {
                if let StmtKind::Return(Some(Expr {
                    kind: ExprKind::Index { base: b, .. },
                    ..
                })) = &st.kind
                {
                    base = Some(s.kernel.var(*b).name.clone());
                }
            });
            base
        };
        let gets: Vec<_> = [0, 2, 4]
            .iter()
            .map(|&i| read(&s.kernel.functions[i]))
            .collect();
        assert_eq!(
            gets,
            [Some("a".into()), Some("b".into()), Some("t".into())],
            "{}",
            crate::ir::print::print_kernel(&s.kernel)
        );
    }

    #[test]
    fn per_thread_arrays_stay_parameters_one_copy_per_size() {
        let s = specialized(
            "let first (v : int32 array) : int32 = v.(0)
             let%kernel k (a : int32 vector) =
               let x : int32 array = create_array 4 Local in
               let y : int32 array = create_array 4 Local in
               let z : int32 array = create_array 8 Local in
               x.(0) <- 1; y.(0) <- 2; z.(0) <- 3;
               a.(0) <- first x + first y + first z",
        );
        assert_eq!(s.kernel.functions.len(), 2);
        let sizes: Vec<_> = s
            .kernel
            .functions
            .iter()
            .map(|f| s.kernel.var(f.params[0]).ty.clone())
            .collect();
        for (ty, n) in sizes.iter().zip([4, 8]) {
            assert!(
                matches!(ty, Ty::Array { space: MemSpace::Local, size: Some(m), .. } if *m == n),
                "{ty:?}"
            );
        }
    }

    #[test]
    fn a_kernel_without_helpers_is_returned_as_it_is() {
        let original = kernel("let%kernel k (a : int32 vector) = a.(0) <- 1");
        let s = specialize_helpers(&original);
        assert!(matches!(s.kernel, Cow::Borrowed(_)));
        assert_eq!(*s.kernel, original);
        assert!(s.has_arrays.is_empty());
    }

    #[test]
    fn helpers_without_arrays_are_kept_once() {
        let original = kernel(
            "let sq (x : int32) : int32 = let y = x * x in y
             let%kernel k (a : int32 vector) = a.(0) <- sq 2 + sq 3",
        );
        let s = specialize_helpers(&original);
        assert_eq!(crate::ir::validate::validate(&s.kernel), Ok(()));
        assert_eq!(shape(&s), [("sq".into(), vec!["x".into()], false)]);
    }

    #[test]
    fn an_array_passed_on_takes_the_type_of_what_it_denotes() {
        // `v` is unsized in `outer`; its copy passes the sized shared array itself on.
        let s = specialized(
            "let inner (v : int32 array) : int32 = atomic_add v 0 1
             let outer (v : int32 array) : int32 = inner v
             let%kernel k (a : int32 vector) =
               let%shared (t : int32) = 4 in
               let%shared (u : int32) = 8 in
               a.(0) <- outer t + outer u",
        );
        assert_eq!(s.kernel.functions.len(), 4);
    }

    #[test]
    fn a_shared_array_declared_in_a_helper_stays_one_array() {
        let s = specialized(
            "let stage (v : float32 vector) : float32 =
               let%shared (t : float32) = 32 in
               t.(thread_idx_x) <- v.(thread_idx_x);
               block_barrier ();
               t.(0)
             let%kernel k (a : float32 vector) (b : float32 vector) =
               a.(0) <- stage a +. stage b",
        );
        assert_eq!(s.kernel.functions.len(), 2);
        let mut declared = Vec::new();
        for f in &s.kernel.functions {
            visit::for_each_stmt(&f.body, &mut |st| {
                if let StmtKind::Array { var } = st.kind {
                    declared.push(var);
                }
            });
        }
        assert_eq!(declared.len(), 2);
        assert_eq!(declared[0], declared[1]);
    }
}
