//! Every kernel of the corpus (`tests/kernels`, or `SAREK_CORPUS` when set) passes the front
//! end, lowers, and the IR keeps the invariants lowering promises: every referenced variable,
//! record, variant and helper exists, record and variant tables are in dependency order,
//! helpers come after their callees, and every tuple record has fields `_0.._n`.

use std::path::{Path, PathBuf};

use sarek_compiler::diag::{SourceMap, render_all};
use sarek_compiler::ir::{self, Expr, ExprKind, Kernel, LValue, Stmt, StmtKind, Ty};

use sarek_testkit::files;

/// The corpus, or the `.sarek` files of `$SAREK_CORPUS`.
fn corpus() -> Vec<PathBuf> {
    match std::env::var_os("SAREK_CORPUS") {
        Some(dir) => files::sarek_files(Path::new(&dir)),
        None => files::corpus(),
    }
}

/// Structural checks, independent of the IR validator.
struct Check<'k> {
    k: &'k Kernel,
    /// Functions visible at this point (callees before callers).
    funcs_visible: usize,
    errors: Vec<String>,
}

impl Check<'_> {
    fn ty(&mut self, t: &Ty, max_record: usize, max_variant: usize) {
        match t {
            Ty::Record(r) if r.0 as usize >= max_record => self
                .errors
                .push(format!("record {r:?} used before its definition")),
            Ty::Variant(v) if v.0 as usize >= max_variant => self
                .errors
                .push(format!("variant {v:?} used before its definition")),
            Ty::Vector(e) | Ty::Array { elem: e, .. } => self.ty(e, max_record, max_variant),
            _ => {}
        }
    }
    fn var(&mut self, v: ir::VarId) {
        if v.0 as usize >= self.k.vars.len() {
            self.errors.push(format!("unknown variable {v:?}"));
        }
    }
    fn expr(&mut self, e: &Expr) {
        let (nr, nv) = (self.k.records.len(), self.k.variants.len());
        self.ty(&e.ty, nr, nv);
        match &e.kind {
            ExprKind::Lit(_) => {}
            ExprKind::Var(v) => self.var(*v),
            ExprKind::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            ExprKind::Unary { operand, .. } | ExprKind::Tag(operand) => self.expr(operand),
            ExprKind::Index { base, index } => {
                self.var(*base);
                self.expr(index);
            }
            ExprKind::Field { base, field } => {
                self.expr(base);
                if let Ty::Record(r) = &base.ty
                    && *field as usize >= self.k.record(*r).fields.len()
                {
                    self.errors.push("field index out of range".into());
                }
            }
            ExprKind::Record { fields, .. } | ExprKind::Ctor { fields, .. } => {
                fields.iter().for_each(|f| self.expr(f))
            }
            ExprKind::Payload { value, .. } => self.expr(value),
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                self.expr(cond);
                self.expr(then_value);
                self.expr(else_value);
            }
            ExprKind::Call { func, args } => {
                if func.0 as usize >= self.funcs_visible {
                    self.errors
                        .push(format!("call to {func:?} not defined before the caller"));
                }
                args.iter().for_each(|a| self.expr(a));
            }
            ExprKind::Intrinsic { args, .. } => args.iter().for_each(|a| self.expr(a)),
        }
    }
    fn place(&mut self, p: &LValue) {
        match p {
            LValue::Var(v) => self.var(*v),
            LValue::Index { base, index } => {
                self.var(*base);
                self.expr(index);
            }
            LValue::Field { base, .. } => self.place(base),
        }
    }
    fn block(&mut self, b: &[Stmt]) {
        for s in b {
            match &s.kind {
                StmtKind::Let { var, init } => {
                    self.var(*var);
                    if let Some(e) = init {
                        self.expr(e);
                        if e.ty != self.k.var(*var).ty {
                            self.errors.push(format!(
                                "let of `{}` with a value of another type",
                                self.k.var(*var).name
                            ));
                        }
                    }
                }
                StmtKind::Array { var } => self.var(*var),
                StmtKind::Assign { place, value } => {
                    self.place(place);
                    self.expr(value);
                }
                StmtKind::Expr(e) => self.expr(e),
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
                    self.var(*var);
                    self.expr(start);
                    self.expr(end);
                    self.block(body);
                }
                StmtKind::While { cond, body, .. } => {
                    self.expr(cond);
                    self.block(body);
                }
                StmtKind::Match {
                    scrutinee,
                    variant,
                    arms,
                } => {
                    self.expr(scrutinee);
                    for a in arms {
                        if let Some(c) = a.ctor {
                            let n = self.k.variant(*variant).ctors[c as usize].fields.len();
                            if a.bindings.len() != n {
                                self.errors.push(
                                    "match arm bindings do not line up with the payload".into(),
                                );
                            }
                        }
                        self.block(&a.body);
                    }
                }
                StmtKind::Block(b) => self.block(b),
                StmtKind::Return(e) => {
                    if let Some(e) = e {
                        self.expr(e)
                    }
                }
                StmtKind::Barrier
                | StmtKind::Fence { .. }
                | StmtKind::Break
                | StmtKind::Continue => {}
                StmtKind::Native(_) | StmtKind::Trap(_) => {}
            }
        }
    }
}

fn check_kernel(k: &Kernel) -> Vec<String> {
    let mut c = Check {
        k,
        funcs_visible: 0,
        errors: Vec::new(),
    };
    for (i, r) in k.records.iter().enumerate() {
        for f in &r.fields {
            c.ty(&f.ty, i, k.variants.len());
        }
        if r.is_tuple {
            for (j, f) in r.fields.iter().enumerate() {
                if f.name != format!("_{j}") || f.ty.scalar().is_none() {
                    c.errors
                        .push(format!("tuple record {} has field {}", r.name, f.name));
                }
            }
        }
    }
    for (i, v) in k.variants.iter().enumerate() {
        for ctor in &v.ctors {
            for f in &ctor.fields {
                c.ty(f, k.records.len(), i);
            }
        }
    }
    for p in &k.params {
        c.var(*p);
    }
    for (i, f) in k.functions.iter().enumerate() {
        c.funcs_visible = i;
        c.block(&f.body);
    }
    c.funcs_visible = k.functions.len();
    c.block(&k.body);
    c.errors
}

#[test]
fn every_corpus_kernel_lowers() {
    let files = corpus();
    if files.is_empty() {
        println!("skipped: no corpus kernels found");
        return;
    }
    let mut failures = Vec::new();
    let mut lowered = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let mut sources = SourceMap::new();
        let file = sources.add(path.display().to_string(), text);
        let program = match sarek_compiler::check(&sources, file) {
            Ok(p) => p,
            Err(d) => {
                failures.push(format!(
                    "{}: front end:\n{}",
                    path.display(),
                    render_all(&d, &sources, false)
                ));
                continue;
            }
        };
        for k in &program.kernels {
            match sarek_compiler::lower::lower_kernel(&program, &k.name) {
                Ok(ir) => {
                    lowered += 1;
                    if std::env::var_os("SAREK_PRINT_IR").is_some() {
                        println!("{}", sarek_compiler::ir::print::print_kernel(&ir));
                    }
                    let errs = check_kernel(&ir);
                    if !errs.is_empty() {
                        failures.push(format!(
                            "{}: kernel {}: {}",
                            path.display(),
                            k.name,
                            errs.join("; ")
                        ));
                    }
                    if let Err(e) = sarek_compiler::ir::validate::validate(&ir) {
                        failures.push(format!("{}: kernel {}: {e}", path.display(), k.name));
                    }
                }
                Err(d) => failures.push(format!(
                    "{}: kernel {}:\n{}",
                    path.display(),
                    k.name,
                    render_all(&d, &sources, false)
                )),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{lowered} kernels lowered from {} files", files.len());
}

/// Development aid: `SAREK_FILE=path cargo test --test lower_corpus -- --ignored --nocapture`
/// prints the front end's and lowering's diagnostics (or the IR) for one file.
#[test]
#[ignore]
fn diagnose_file() {
    let Some(path) = std::env::var_os("SAREK_FILE") else {
        return;
    };
    let text = std::fs::read_to_string(&path).unwrap();
    let mut sources = SourceMap::new();
    let file = sources.add(PathBuf::from(&path).display().to_string(), text);
    match sarek_compiler::check(&sources, file) {
        Err(d) => println!("{}", render_all(&d, &sources, false)),
        Ok(program) => {
            for k in &program.kernels {
                match sarek_compiler::lower::lower_kernel(&program, &k.name) {
                    Ok(ir) => println!("{}", sarek_compiler::ir::print::print_kernel(&ir)),
                    Err(d) => println!("{}", render_all(&d, &sources, false)),
                }
            }
        }
    }
}

/// Every `@run` directive of the corpus runs on the reference interpreter without a fault
/// (out-of-bounds access, division by zero, ...): the lowered IR keeps the source's guards.
#[test]
fn every_corpus_directive_runs_on_the_interpreter() {
    use sarek_harness::{Inputs, build_args, parse_directives};
    let mut failures = Vec::new();
    let mut runs = 0;
    for path in corpus() {
        let text = std::fs::read_to_string(&path).unwrap();
        let directives =
            parse_directives(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut sources = SourceMap::new();
        let file = sources.add(path.display().to_string(), text);
        let Ok(program) = sarek_compiler::check(&sources, file) else {
            continue; // reported by every_corpus_kernel_lowers
        };
        for d in directives {
            let Ok(k) = sarek_compiler::lower::lower_kernel(&program, &d.kernel) else {
                failures.push(format!(
                    "{}:{}: kernel {} does not lower",
                    path.display(),
                    d.line,
                    d.kernel
                ));
                continue;
            };
            let result = build_args(&k, &Inputs::from_directive(&d))
                .map_err(sarek_runtime::RuntimeError::from)
                .and_then(|mut args| sarek_runtime::interp::run(&k, d.config(), &mut args));
            runs += 1;
            if let Err(e) = result {
                failures.push(format!("{}:{}: {}: {e}", path.display(), d.line, d.kernel));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{runs} directives ran");
}
