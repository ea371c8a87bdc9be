//! Property tests of name legalization (seed 000) over generated IR kernels.
//!
//! Kernels are generated with nested blocks, `let`s drawing names from a small pool (with
//! shadowing, reserved words, primed and `__` names), `for` loops, local arrays, matches with
//! pattern variables, helpers with parameters and calls. After legalize we check, with a scope
//! model written here independently of the pass (C scoping: a declaration is visible in its own
//! initialiser):
//! - no binder name is reserved or invalid;
//! - no two binders visible in one scope share a name;
//! - every reference, resolved *by name* to the innermost visible binder, reaches the binder it
//!   referred to by id (so the emitted source means what the IR means);
//! - the kernel is alpha-equivalent to the input (equal once names are erased);
//! - legalize is idempotent, and the validator accepts the output.

use proptest::prelude::*;
use sarek_compiler::back::names::{Keywords, Namer, is_identifier};
use sarek_compiler::diag::Span;
use sarek_compiler::ir::validate::validate;
use sarek_compiler::ir::*;
use sarek_compiler::passes::legalize::{Params, legalize};
use sarek_compiler::target::Target;
use sarek_compiler::types::{BinOp, MemSpace};

const POOL: &[&str] = &[
    "s", "x", "x'", "int", "float4", "i", "t", "get_id", "s_1", "max", "__i", "a", "n", "v",
    "half", "x_1", "f",
];

#[derive(Clone, Debug)]
enum SExpr {
    Lit(i32),
    Var(usize),
    Add(Box<SExpr>, Box<SExpr>),
    Read(usize, i32),
    Call(usize, Vec<SExpr>),
}

#[derive(Clone, Debug)]
enum SStmt {
    Let {
        name: usize,
        mutable: bool,
        init: SExpr,
    },
    Array {
        name: usize,
    },
    Assign {
        target: usize,
        value: SExpr,
    },
    Store {
        arr: usize,
        value: SExpr,
    },
    For {
        name: usize,
        body: Vec<SStmt>,
    },
    If {
        then_b: Vec<SStmt>,
        else_b: Vec<SStmt>,
    },
    Block(Vec<SStmt>),
    Match {
        value: SExpr,
        names: (usize, usize),
        body: Vec<SStmt>,
    },
}

#[derive(Clone, Debug)]
struct SFunc {
    name: usize,
    params: Vec<usize>,
    vector_param: Option<usize>,
    body: Vec<SStmt>,
    ret: SExpr,
}

#[derive(Clone, Debug)]
struct SKernel {
    params: Vec<(usize, bool)>,
    funcs: Vec<SFunc>,
    body: Vec<SStmt>,
}

fn name() -> impl Strategy<Value = usize> {
    0..POOL.len()
}

fn sexpr() -> impl Strategy<Value = SExpr> {
    let leaf = prop_oneof![
        (0..5i32).prop_map(SExpr::Lit),
        (0..8usize).prop_map(SExpr::Var),
    ];
    leaf.prop_recursive(3, 8, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| SExpr::Add(Box::new(a), Box::new(b))),
            ((0..4usize), (0..4i32)).prop_map(|(a, i)| SExpr::Read(a, i)),
            ((0..3usize), prop::collection::vec(inner, 0..3)).prop_map(|(f, a)| SExpr::Call(f, a)),
        ]
    })
}

fn sstmts() -> impl Strategy<Value = Vec<SStmt>> {
    let leaf = prop_oneof![
        4 => (name(), any::<bool>(), sexpr()).prop_map(|(name, mutable, init)| SStmt::Let { name, mutable, init }),
        1 => name().prop_map(|name| SStmt::Array { name }),
        1 => ((0..8usize), sexpr()).prop_map(|(target, value)| SStmt::Assign { target, value }),
        1 => ((0..4usize), sexpr()).prop_map(|(arr, value)| SStmt::Store { arr, value }),
    ];
    let stmt = leaf.prop_recursive(3, 24, 4, |inner| {
        let block = prop::collection::vec(inner, 0..4);
        prop_oneof![
            (name(), block.clone()).prop_map(|(name, body)| SStmt::For { name, body }),
            (block.clone(), block.clone())
                .prop_map(|(then_b, else_b)| SStmt::If { then_b, else_b }),
            block.clone().prop_map(SStmt::Block),
            (sexpr(), (name(), name()), block).prop_map(|(value, names, body)| SStmt::Match {
                value,
                names,
                body
            }),
        ]
    });
    prop::collection::vec(stmt, 0..6)
}

fn skernel() -> impl Strategy<Value = SKernel> {
    let func = (
        name(),
        prop::collection::vec(name(), 0..3),
        prop::option::of(name()),
        sstmts(),
        sexpr(),
    )
        .prop_map(|(name, params, vector_param, body, ret)| SFunc {
            name,
            params,
            vector_param,
            body,
            ret,
        });
    (
        prop::collection::vec((name(), any::<bool>()), 0..4),
        prop::collection::vec(func, 0..3),
        sstmts(),
    )
        .prop_map(|(params, funcs, body)| SKernel {
            params,
            funcs,
            body,
        })
}

/// Builds a well-typed IR kernel from a shape: references pick among the variables in scope.
struct Builder {
    vars: Vec<VarInfo>,
    funcs: Vec<Function>,
    /// In-scope int32 scalars (innermost last) and arrays/vectors.
    scalars: Vec<Vec<VarId>>,
    arrays: Vec<Vec<VarId>>,
}

const ARR: fn() -> Ty = || Ty::Array {
    elem: Box::new(Ty::I32),
    space: MemSpace::Local,
    size: Some(4),
};

impl Builder {
    fn var(&mut self, name: usize, ty: Ty, mutable: bool) -> VarId {
        self.vars.push(VarInfo {
            name: POOL[name].into(),
            ty,
            mutable,
            span: Span::DUMMY,
        });
        VarId(self.vars.len() as u32 - 1)
    }
    fn visible_scalars(&self) -> Vec<VarId> {
        self.scalars.iter().flatten().copied().collect()
    }
    fn visible_arrays(&self) -> Vec<VarId> {
        self.arrays.iter().flatten().copied().collect()
    }
    fn expr(&mut self, e: &SExpr) -> Expr {
        match e {
            SExpr::Lit(v) => Expr::i32(*v),
            SExpr::Var(k) => {
                let vs = self.visible_scalars();
                if vs.is_empty() {
                    Expr::i32(*k as i32)
                } else {
                    Expr::new(ExprKind::Var(vs[k % vs.len()]), Ty::I32)
                }
            }
            SExpr::Add(a, b) => {
                let (a, b) = (self.expr(a), self.expr(b));
                Expr::new(
                    ExprKind::Binary {
                        op: BinOp::Add,
                        lhs: Box::new(a),
                        rhs: Box::new(b),
                        nowrap: false,
                    },
                    Ty::I32,
                )
            }
            SExpr::Read(k, i) => {
                let arrs = self.visible_arrays();
                if arrs.is_empty() {
                    Expr::i32(*i)
                } else {
                    Expr::new(
                        ExprKind::Index {
                            base: arrs[k % arrs.len()],
                            index: Box::new(Expr::i32(*i)),
                        },
                        Ty::I32,
                    )
                }
            }
            SExpr::Call(f, args) => {
                if self.funcs.is_empty() {
                    return Expr::i32(1);
                }
                let fid = f % self.funcs.len();
                let params = self.funcs[fid].params.clone();
                let mut out = Vec::new();
                for (i, p) in params.iter().enumerate() {
                    if matches!(self.vars[p.0 as usize].ty, Ty::Vector(_)) {
                        let vecs: Vec<VarId> = self
                            .visible_arrays()
                            .into_iter()
                            .filter(|v| matches!(self.vars[v.0 as usize].ty, Ty::Vector(_)))
                            .collect();
                        let Some(v) = vecs.first() else {
                            return Expr::i32(2);
                        };
                        out.push(Expr::new(
                            ExprKind::Var(*v),
                            self.vars[v.0 as usize].ty.clone(),
                        ));
                    } else {
                        out.push(args.get(i).map_or(Expr::i32(0), |a| self.expr(a)));
                    }
                }
                Expr::new(
                    ExprKind::Call {
                        func: FuncId(fid as u32),
                        args: out,
                    },
                    Ty::I32,
                )
            }
        }
    }
    fn block(&mut self, b: &[SStmt]) -> Block {
        self.scalars.push(Vec::new());
        self.arrays.push(Vec::new());
        let out = b
            .iter()
            .map(|s| Stmt {
                kind: self.stmt(s),
                span: Span::DUMMY,
            })
            .collect();
        self.scalars.pop();
        self.arrays.pop();
        out
    }
    fn stmt(&mut self, s: &SStmt) -> StmtKind {
        match s {
            SStmt::Let {
                name,
                mutable,
                init,
            } => {
                let init = self.expr(init);
                let v = self.var(*name, Ty::I32, *mutable);
                self.scalars.last_mut().unwrap().push(v);
                StmtKind::Let {
                    var: v,
                    init: Some(init),
                }
            }
            SStmt::Array { name } => {
                let v = self.var(*name, ARR(), false);
                self.arrays.last_mut().unwrap().push(v);
                StmtKind::Array { var: v }
            }
            SStmt::Assign { target, value } => {
                let value = self.expr(value);
                let muts: Vec<VarId> = self
                    .visible_scalars()
                    .into_iter()
                    .filter(|v| self.vars[v.0 as usize].mutable)
                    .collect();
                if muts.is_empty() {
                    StmtKind::Expr(value)
                } else {
                    StmtKind::Assign {
                        place: LValue::Var(muts[target % muts.len()]),
                        value,
                    }
                }
            }
            SStmt::Store { arr, value } => {
                let value = self.expr(value);
                let arrs = self.visible_arrays();
                if arrs.is_empty() {
                    StmtKind::Expr(value)
                } else {
                    StmtKind::Assign {
                        place: LValue::Index {
                            base: arrs[arr % arrs.len()],
                            index: Box::new(Expr::i32(0)),
                        },
                        value,
                    }
                }
            }
            SStmt::For { name, body } => {
                let (start, end) = (Expr::i32(0), Expr::i32(3));
                let v = self.var(*name, Ty::I32, false);
                self.scalars.push(vec![v]);
                let body = self.block(body);
                self.scalars.pop();
                StmtKind::For {
                    var: v,
                    start,
                    end,
                    downto: false,
                    body,
                    unroll: None,
                }
            }
            SStmt::If { then_b, else_b } => {
                let cond = Expr::new(
                    ExprKind::Binary {
                        op: BinOp::Lt,
                        lhs: Box::new(self.expr(&SExpr::Var(0))),
                        rhs: Box::new(Expr::i32(2)),
                        nowrap: false,
                    },
                    Ty::BOOL,
                );
                StmtKind::If {
                    cond,
                    then_block: self.block(then_b),
                    else_block: self.block(else_b),
                }
            }
            SStmt::Block(b) => StmtKind::Block(self.block(b)),
            SStmt::Match { value, names, body } => {
                let payload = self.expr(value);
                let scrutinee = Expr::new(
                    ExprKind::Ctor {
                        variant: VariantId(0),
                        ctor: 0,
                        fields: vec![payload, Expr::i32(7)],
                    },
                    Ty::Variant(VariantId(0)),
                );
                let a = self.var(names.0, Ty::I32, false);
                let b = self.var(names.1, Ty::I32, false);
                self.scalars.push(vec![a, b]);
                let body = self.block(body);
                self.scalars.pop();
                let arms = vec![
                    MatchArm {
                        ctor: Some(0),
                        bindings: vec![Some(a), Some(b)],
                        body,
                    },
                    MatchArm {
                        ctor: None,
                        bindings: vec![],
                        body: vec![],
                    },
                ];
                StmtKind::Match {
                    scrutinee,
                    variant: VariantId(0),
                    arms,
                }
            }
        }
    }
}

fn build(s: &SKernel) -> Kernel {
    let mut b = Builder {
        vars: Vec::new(),
        funcs: Vec::new(),
        scalars: Vec::new(),
        arrays: Vec::new(),
    };
    for f in &s.funcs {
        b.scalars.push(Vec::new());
        b.arrays.push(Vec::new());
        let mut params = Vec::new();
        for p in &f.params {
            let v = b.var(*p, Ty::I32, false);
            b.scalars.last_mut().unwrap().push(v);
            params.push(v);
        }
        if let Some(p) = f.vector_param {
            let v = b.var(p, Ty::Vector(Box::new(Ty::I32)), false);
            b.arrays.last_mut().unwrap().push(v);
            params.push(v);
        }
        let mut body = b.block(&f.body);
        let ret = b.expr(&f.ret);
        body.push(Stmt {
            kind: StmtKind::Return(Some(ret)),
            span: Span::DUMMY,
        });
        b.scalars.pop();
        b.arrays.pop();
        b.funcs.push(Function {
            name: POOL[f.name].into(),
            span: Span::DUMMY,
            params,
            ret: Ty::I32,
            body,
        });
    }
    b.scalars.push(Vec::new());
    b.arrays.push(Vec::new());
    let mut params = Vec::new();
    let mut seen = std::collections::HashSet::new();
    // Source kernels cannot bind one name twice in a parameter list (the typer refuses it).
    for (p, vector) in s.params.iter().filter(|(p, _)| seen.insert(*p)) {
        let ty = if *vector {
            Ty::Vector(Box::new(Ty::I32))
        } else {
            Ty::I32
        };
        let v = b.var(*p, ty, false);
        if *vector {
            b.arrays.last_mut()
        } else {
            b.scalars.last_mut()
        }
        .unwrap()
        .push(v);
        params.push(v);
    }
    let body = b.block(&s.body);
    Kernel {
        name: "k".into(),
        span: Span::DUMMY,
        vars: b.vars,
        params,
        body,
        records: vec![],
        variants: vec![Variant {
            name: "opt".into(),
            ctors: vec![
                Ctor {
                    name: "Some".into(),
                    fields: vec![Ty::I32, Ty::I32],
                },
                Ctor {
                    name: "None".into(),
                    fields: vec![],
                },
            ],
        }],
        functions: b.funcs,
    }
}

/// Which binders the scope model treats as declared names.
#[derive(Clone, Copy)]
struct Model {
    /// Where kernel parameters are declared: the kernel function (C family) or module scope
    /// (shaders, where a helper's vector parameter is substituted by a buffer).
    params: Params,
}

/// C-scoping checker over the *names* of a legalized kernel.
struct Checker<'k> {
    k: &'k Kernel,
    m: Model,
    scopes: Vec<Vec<(String, Option<VarId>)>>,
    errors: Vec<String>,
}

impl Checker<'_> {
    fn name(&self, v: VarId) -> &str {
        &self.k.var(v).name
    }
    fn declare(&mut self, name: String, id: Option<VarId>) {
        if self.scopes.iter().flatten().any(|(n, _)| *n == name) {
            self.errors.push(format!(
                "`{name}` declared while a binder of that name is visible"
            ));
        }
        self.scopes.last_mut().unwrap().push((name, id));
    }
    fn declare_var(&mut self, v: VarId) {
        self.declare(self.name(v).to_string(), Some(v));
    }
    fn exempt(&self, v: VarId) -> bool {
        // Shaders: a helper's vector parameter is the buffer it is called with, and a kernel
        // parameter other than a vector is read from the parameter block: neither is a name.
        let vector = matches!(self.k.var(v).ty, Ty::Vector(_));
        let kernel_param = self.k.params.contains(&v);
        self.m.params == Params::ModuleScope && (kernel_param != vector)
    }
    fn resolve(&mut self, v: VarId) {
        if self.exempt(v) {
            return;
        }
        let name = self.name(v).to_string();
        let found = self
            .scopes
            .iter()
            .flatten()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, id)| *id);
        if found != Some(Some(v)) {
            self.errors.push(format!(
                "reference to `{name}`%{} resolves to {found:?}",
                v.0
            ));
        }
    }
    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Var(v) => self.resolve(*v),
            ExprKind::Index { base, index } => {
                self.resolve(*base);
                self.expr(index);
            }
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::Call { args, func } => {
                let fname = self.k.function(*func).name.clone();
                let found = self
                    .scopes
                    .iter()
                    .flatten()
                    .rev()
                    .find(|(n, _)| *n == fname)
                    .map(|(_, id)| *id);
                if found != Some(None) {
                    self.errors
                        .push(format!("call of `{fname}` resolves to a variable"));
                }
                args.iter().for_each(|a| self.expr(a));
            }
            ExprKind::Ctor { fields, .. } => fields.iter().for_each(|a| self.expr(a)),
            _ => {}
        }
    }
    fn block(&mut self, b: &Block) {
        self.scopes.push(Vec::new());
        for s in b {
            match &s.kind {
                StmtKind::Let { var, init } => {
                    // C: the declared name is in scope in its own initialiser.
                    self.declare_var(*var);
                    if let Some(e) = init {
                        self.expr(e);
                    }
                }
                StmtKind::Array { var } => self.declare_var(*var),
                StmtKind::Assign { place, value } => {
                    match place {
                        LValue::Var(v) => self.resolve(*v),
                        LValue::Index { base, index } => {
                            self.resolve(*base);
                            self.expr(index);
                        }
                        LValue::Field { .. } => {}
                    }
                    self.expr(value);
                }
                StmtKind::Expr(e) | StmtKind::Return(Some(e)) => self.expr(e),
                StmtKind::If {
                    cond,
                    then_block,
                    else_block,
                } => {
                    self.expr(cond);
                    self.block(then_block);
                    self.block(else_block);
                }
                StmtKind::For {
                    var,
                    start,
                    end,
                    body,
                    ..
                } => {
                    self.expr(start);
                    self.expr(end);
                    self.scopes.push(Vec::new());
                    self.declare_var(*var);
                    self.block(body);
                    self.scopes.pop();
                }
                StmtKind::Block(b) => self.block(b),
                StmtKind::Match {
                    scrutinee, arms, ..
                } => {
                    self.expr(scrutinee);
                    for arm in arms {
                        self.scopes.push(Vec::new());
                        for b in arm.bindings.iter().flatten() {
                            self.declare_var(*b);
                        }
                        self.block(&arm.body);
                        self.scopes.pop();
                    }
                }
                _ => {}
            }
        }
        self.scopes.pop();
    }
    fn run(mut self) -> Vec<String> {
        let k = self.k;
        self.scopes.push(Vec::new());
        let module_scope = self.m.params == Params::ModuleScope;
        if module_scope {
            for p in &k.params {
                if matches!(k.var(*p).ty, Ty::Vector(_)) {
                    self.declare_var(*p);
                }
            }
        }
        for f in &k.functions {
            self.declare(f.name.clone(), None);
        }
        for f in &k.functions {
            self.scopes.push(Vec::new());
            for p in &f.params {
                // A shader helper's vector parameter is substituted by the buffer it is called
                // with: it is not a name of the emitted source.
                if !(module_scope && matches!(k.var(*p).ty, Ty::Vector(_))) {
                    self.declare_var(*p);
                }
            }
            self.block(&f.body);
            self.scopes.pop();
        }
        self.scopes.push(Vec::new());
        if !module_scope {
            for p in &k.params {
                self.declare_var(*p);
            }
        }
        self.block(&k.body);
        self.errors
    }
}

fn erase(k: &Kernel) -> Kernel {
    let mut k = k.clone();
    k.vars.iter_mut().for_each(|v| v.name.clear());
    k.functions.iter_mut().for_each(|f| f.name.clear());
    k
}

fn binder_names(k: &Kernel, include_params: bool) -> Vec<String> {
    let mut names: Vec<String> = k.functions.iter().map(|f| f.name.clone()).collect();
    for (i, v) in k.vars.iter().enumerate() {
        if include_params || !k.params.contains(&VarId(i as u32)) {
            names.push(v.name.clone());
        }
    }
    names
}

fn check_common(
    input: &Kernel,
    out: &Kernel,
    again: &Kernel,
    m: Model,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(validate(input), Ok(()));
    prop_assert_eq!(validate(out), Ok(()));
    prop_assert_eq!(erase(input), erase(out), "not alpha-equivalent");
    prop_assert_eq!(out, again, "legalize is not idempotent");
    let errors = Checker {
        k: out,
        m,
        scopes: Vec::new(),
        errors: Vec::new(),
    }
    .run();
    prop_assert!(
        errors.is_empty(),
        "{:?}\n{}",
        errors,
        sarek_compiler::ir::print::print_kernel(out)
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2500, ..ProptestConfig::default() })]

    #[test]
    fn opencl_renaming_params(s in skernel()) {
        positional(&s, Target::OpenCl)?;
    }

    #[test]
    fn glsl_module_scope(s in skernel()) {
        module_scope(&s, Target::Glsl)?;
    }

    #[test]
    fn wgsl_module_scope(s in skernel()) {
        module_scope(&s, Target::Wgsl)?;
    }

    #[test]
    fn cuda_table(s in skernel()) {
        positional(&s, Target::Cuda)?;
    }
}

/// C family: every binder, kernel parameters included, is a valid, unreserved identifier.
fn positional(s: &SKernel, target: Target) -> Result<(), TestCaseError> {
    let k = build(s);
    let keywords = Keywords::of(target);
    let namer = Namer::new(keywords);
    let out = legalize(&k, keywords, Params::Positional);
    let again = legalize(&out, keywords, Params::Positional);
    for n in binder_names(&out, true) {
        prop_assert!(
            is_identifier(&n) && !namer.is_reserved(&n),
            "binder `{}` survives",
            n
        );
    }
    check_common(
        &k,
        &out,
        &again,
        Model {
            params: Params::Positional,
        },
    )
}

/// Shaders: kernel parameters keep their names (the escaper spells them), as do helpers'
/// vector parameters (substituted by buffers); every other binder is a valid, unreserved
/// identifier that no other visible name shares.
fn module_scope(s: &SKernel, target: Target) -> Result<(), TestCaseError> {
    let k = build(s);
    let keywords = Keywords::of(target);
    let namer = Namer::new(keywords);
    let out = legalize(&k, keywords, Params::ModuleScope);
    let again = legalize(&out, keywords, Params::ModuleScope);
    for (p, q) in k.params.iter().zip(&out.params) {
        prop_assert_eq!(
            &k.var(*p).name,
            &out.var(*q).name,
            "kernel parameter renamed"
        );
    }
    let helper_vectors: Vec<String> = out
        .functions
        .iter()
        .flat_map(|f| &f.params)
        .filter(|p| matches!(out.var(**p).ty, Ty::Vector(_) | Ty::Array { .. }))
        .map(|p| out.var(*p).name.clone())
        .collect();
    for n in binder_names(&out, false) {
        prop_assert!(
            (is_identifier(&n) && !namer.is_reserved(&n)) || helper_vectors.contains(&n),
            "binder `{}` survives",
            n
        );
    }
    check_common(
        &k,
        &out,
        &again,
        Model {
            params: Params::ModuleScope,
        },
    )
}
