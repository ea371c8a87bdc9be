//! Every corpus kernel type-checks and monomorphises, and the result keeps the typed-AST
//! invariants: no type parameter or inference leftover anywhere, no type arguments on calls.

use sarek_compiler::diag::{SourceMap, render_all};
use sarek_compiler::front::tast::{Expr, ExprKind, Pattern, Program, Ty};
use sarek_compiler::front::{mono, parser, typer};

use files::corpus;
use sarek_testkit::files;

fn concrete(t: &Ty) -> bool {
    match t {
        Ty::Param(_) => false,
        Ty::Tuple(ts) => ts.iter().all(concrete),
        Ty::Vector(e) | Ty::Array { elem: e, .. } => concrete(e),
        _ => true,
    }
}

fn check_expr(e: &Expr, what: &str) {
    assert!(concrete(&e.ty), "{what}: type {:?} at {:?}", e.ty, e.span);
    let mut kids: Vec<&Expr> = Vec::new();
    match &e.kind {
        ExprKind::Let {
            pattern,
            value,
            body,
        } => {
            check_pattern(pattern, what);
            kids.extend([&**value, &**body]);
        }
        ExprKind::Assign { value, .. } => kids.push(value),
        ExprKind::If {
            cond,
            then_branch,
            else_branch,
        } => {
            kids.extend([&**cond, &**then_branch]);
            kids.extend(else_branch.as_deref());
        }
        ExprKind::For {
            var,
            start,
            end,
            body,
            ..
        } => {
            assert!(concrete(&var.ty));
            kids.extend([&**start, &**end, &**body]);
        }
        ExprKind::While { cond, body, .. } => kids.extend([&**cond, &**body]),
        ExprKind::Seq(es) | ExprKind::Tuple(es) => kids.extend(es),
        ExprKind::Match { scrutinee, arms } => {
            kids.push(scrutinee);
            for a in arms {
                check_pattern(&a.pattern, what);
                kids.push(&a.body);
            }
        }
        ExprKind::Index { base, index } => kids.extend([&**base, &**index]),
        ExprKind::IndexSet { base, index, value } => kids.extend([&**base, &**index, &**value]),
        ExprKind::Field { base, .. } => kids.push(base),
        ExprKind::FieldSet { base, value, .. } => kids.extend([&**base, &**value]),
        ExprKind::Record { fields: es, .. }
        | ExprKind::Ctor { args: es, .. }
        | ExprKind::Intrinsic { args: es, .. } => kids.extend(es),
        ExprKind::Call {
            type_args, args, ..
        } => {
            assert!(
                type_args.is_empty(),
                "{what}: call keeps type arguments after mono"
            );
            kids.extend(args);
        }
        ExprKind::Binary { lhs, rhs, .. } => kids.extend([&**lhs, &**rhs]),
        ExprKind::Unary { operand, .. } => kids.push(operand),
        ExprKind::LetShared { var, body } | ExprKind::LetLocalArray { var, body } => {
            assert!(concrete(&var.ty));
            kids.push(body);
        }
        ExprKind::Superstep { step, rest, .. } => kids.extend([&**step, &**rest]),
        ExprKind::Ignore(e) | ExprKind::Trap { fallback: e, .. } => kids.push(e),
        ExprKind::Unit | ExprKind::Lit(_) | ExprKind::Var(_) => {}
    }
    for k in kids {
        check_expr(k, what);
    }
}

fn check_pattern(p: &Pattern, what: &str) {
    match p {
        Pattern::Bind(d) => assert!(concrete(&d.ty), "{what}: binder {} : {:?}", d.name, d.ty),
        Pattern::Ctor { args, .. } | Pattern::Tuple(args) | Pattern::Or(args) => {
            args.iter().for_each(|a| check_pattern(a, what))
        }
        Pattern::Wildcard | Pattern::Lit(_) => {}
    }
}

fn check_invariants(p: &Program, file: &str) {
    for (i, f) in p.functions.iter().enumerate() {
        assert_eq!(f.id.0 as usize, i, "{file}: FunId is the index");
        assert_eq!(f.type_params, 0, "{file}: {} still polymorphic", f.name);
        assert!(f.params.iter().all(|p| concrete(&p.ty)) && concrete(&f.ret));
        check_expr(&f.body, &format!("{file}:{}", f.name));
    }
    for k in &p.kernels {
        assert!(k.params.iter().all(|p| concrete(&p.ty)));
        assert_eq!(k.body.ty, Ty::Unit);
        check_expr(&k.body, &format!("{file}:{}", k.name));
    }
}

#[test]
fn every_corpus_kernel_type_checks() {
    let files = corpus();
    if files.is_empty() {
        eprintln!("tests/kernels is empty: nothing to check");
        return;
    }
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let name = format!(
            "tests/kernels/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        let mut sm = SourceMap::new();
        let f = sm.add(name.clone(), text.clone());
        let result = parser::parse(f, &text)
            .and_then(|ast| typer::check_program(&ast))
            .and_then(mono::monomorphise);
        match result {
            Ok(p) => {
                assert!(!p.kernels.is_empty(), "{name}: no kernel");
                check_invariants(&p, &name);
            }
            Err(d) => failures.push(render_all(&d, &sm, false)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} corpus files failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
