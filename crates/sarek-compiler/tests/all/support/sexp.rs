//! Shared helpers for the parser tests: a compact S-expression printer for the AST, so
//! expected parses can be written by hand (and checked against OCaml's grammar).

#![allow(dead_code)]

use sarek_compiler::front::ast::*;
use sarek_compiler::{Diagnostic, FileId, SourceMap};

pub fn parse_str(src: &str) -> Result<Program, Vec<Diagnostic>> {
    sarek_compiler::front::parser::parse(FileId(0), src)
}

/// Render diagnostics for `src` registered as `name`.
pub fn render(name: &str, src: &str, diags: &[Diagnostic]) -> String {
    let mut sm = SourceMap::new();
    sm.add(name, src);
    sarek_compiler::diag::render_all(diags, &sm, false)
}

/// Parse `kernel` body text as an expression and print it.
pub fn expr(src: &str) -> String {
    let text = format!("let f (x : int32) =\n{src}");
    match parse_str(&text) {
        Ok(p) => match &p.items[0].kind {
            ItemKind::Fun(f) => sexp(&f.body),
            _ => unreachable!(),
        },
        Err(d) => format!(
            "ERROR: {}",
            d.iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join(" / ")
        ),
    }
}

pub fn lit(l: &Lit) -> String {
    match l {
        Lit::Unit => "()".into(),
        Lit::Bool(b) => b.to_string(),
        Lit::Int(v) => v.to_string(),
        Lit::Int64(v) => format!("{v}L"),
        Lit::Float(v) => format!("{v:?}"),
        Lit::Float64(v) => format!("{v:?}d"),
    }
}

pub fn pat(p: &Pattern) -> String {
    match p {
        Pattern::Wildcard(_) => "_".into(),
        Pattern::Var(i) => i.name.to_string(),
        Pattern::Lit(l, _) => lit(l),
        Pattern::Ctor { name, args, .. } if args.is_empty() => name.name.to_string(),
        Pattern::Ctor { name, args, .. } => {
            format!(
                "({} {})",
                name.name,
                args.iter().map(pat).collect::<Vec<_>>().join(" ")
            )
        }
        Pattern::Tuple(ps, _) => format!(
            "(tuple {})",
            ps.iter().map(pat).collect::<Vec<_>>().join(" ")
        ),
        Pattern::Or(ps, _) => format!("(| {})", ps.iter().map(pat).collect::<Vec<_>>().join(" ")),
    }
}

pub fn ty(t: &TypeExpr) -> String {
    match &t.kind {
        TypeExprKind::Named(i) => i.name.to_string(),
        TypeExprKind::Var(i) => format!("'{}", i.name),
        TypeExprKind::App(a, c) => format!("({} {})", ty(a), c.name),
        TypeExprKind::Tuple(ts) => {
            format!("(* {})", ts.iter().map(ty).collect::<Vec<_>>().join(" "))
        }
    }
}

fn attrs(a: &[Attribute]) -> String {
    a.iter()
        .map(|a| format!(" [@{} {}]", a.name, a.payload))
        .collect()
}

pub fn binop(op: BinaryOp) -> &'static str {
    use BinaryOp::*;
    match op {
        Add => "+",
        Sub => "-",
        Mul => "*",
        Div => "/",
        AddF => "+.",
        SubF => "-.",
        MulF => "*.",
        DivF => "/.",
        Mod => "mod",
        Eq => "=",
        Ne => "<>",
        Lt => "<",
        Le => "<=",
        Gt => ">",
        Ge => ">=",
        And => "&&",
        Or => "||",
        Land => "land",
        Lor => "lor",
        Lxor => "lxor",
        Lsl => "lsl",
        Lsr => "lsr",
        Asr => "asr",
    }
}

pub fn sexp(e: &Expr) -> String {
    let list = |es: &[Expr]| es.iter().map(sexp).collect::<Vec<_>>().join(" ");
    match &e.kind {
        ExprKind::Lit(l) => lit(l),
        ExprKind::Var { path, name } => {
            path.iter()
                .map(|p| format!("{}.", p.name))
                .collect::<String>()
                + &name.name
        }
        ExprKind::Let {
            pattern,
            mutable,
            ty: t,
            value,
            body,
        } => format!(
            "(let{} {}{} {} {})",
            if *mutable { " mut" } else { "" },
            pat(pattern),
            t.as_ref()
                .map(|t| format!(" : {}", ty(t)))
                .unwrap_or_default(),
            sexp(value),
            sexp(body)
        ),
        ExprKind::LetFun { decl, body } => format!(
            "(letfun{} {} ({}){}{} {} {})",
            if decl.recursive { " rec" } else { "" },
            decl.name.name,
            decl.params
                .iter()
                .map(|p| match &p.ty {
                    Some(t) => format!("{}:{}", p.name.name, ty(t)),
                    None => p.name.name.to_string(),
                })
                .collect::<Vec<_>>()
                .join(" "),
            decl.ret
                .as_ref()
                .map(|t| format!(" : {}", ty(t)))
                .unwrap_or_default(),
            attrs(&decl.attrs),
            sexp(&decl.body),
            sexp(body)
        ),
        ExprKind::LetShared {
            name,
            elem,
            size,
            body,
        } => {
            format!(
                "(shared {} {} {} {})",
                name.name,
                ty(elem),
                sexp(size),
                sexp(body)
            )
        }
        ExprKind::LetSuperstep {
            name,
            divergent,
            step,
            rest,
        } => format!(
            "(superstep{} {} {} {})",
            if *divergent { " divergent" } else { "" },
            name.name,
            sexp(step),
            sexp(rest)
        ),
        ExprKind::LetOpen { module, body } => format!("(open {} {})", module.name, sexp(body)),
        ExprKind::Assign { target, value } => format!("(:= {} {})", target.name, sexp(value)),
        ExprKind::If {
            cond,
            then_branch,
            else_branch,
        } => match else_branch {
            Some(e) => format!("(if {} {} {})", sexp(cond), sexp(then_branch), sexp(e)),
            None => format!("(if {} {})", sexp(cond), sexp(then_branch)),
        },
        ExprKind::For {
            var,
            start,
            end,
            downto,
            body,
            attrs: a,
        } => format!(
            "(for {} {} {} {} {}{})",
            var.name,
            sexp(start),
            if *downto { "downto" } else { "to" },
            sexp(end),
            sexp(body),
            attrs(a)
        ),
        ExprKind::While {
            cond,
            body,
            attrs: a,
        } => format!("(while {} {}{})", sexp(cond), sexp(body), attrs(a)),
        ExprKind::Seq(es) => format!("(seq {})", list(es)),
        ExprKind::Match { scrutinee, arms } => format!(
            "(match {} {})",
            sexp(scrutinee),
            arms.iter()
                .map(|a| format!("[{} -> {}]", pat(&a.pattern), sexp(&a.body)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        ExprKind::Index { base, index } => format!("(.() {} {})", sexp(base), sexp(index)),
        ExprKind::IndexSet { base, index, value } => {
            format!("(.()<- {} {} {})", sexp(base), sexp(index), sexp(value))
        }
        ExprKind::Field { base, field } => format!("(. {} {})", sexp(base), field.name),
        ExprKind::FieldSet { base, field, value } => {
            format!("(.<- {} {} {})", sexp(base), field.name, sexp(value))
        }
        ExprKind::Record(fs) => format!(
            "{{{}}}",
            fs.iter()
                .map(|(n, e)| format!("{}={}", n.name, sexp(e)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        ExprKind::Ctor { name, args } if args.is_empty() => name.name.to_string(),
        ExprKind::Ctor { name, args } => format!("({} {})", name.name, list(args)),
        ExprKind::Tuple(es) => format!("(tuple {})", list(es)),
        ExprKind::App { func, args } => format!("(app {} {})", sexp(func), list(args)),
        ExprKind::Binary { op, lhs, rhs } => {
            format!("({} {} {})", binop(*op), sexp(lhs), sexp(rhs))
        }
        ExprKind::Unary { op, operand } => {
            let o = match op {
                UnaryOp::Neg => "~-",
                UnaryOp::NegF => "~-.",
                UnaryOp::Not => "not",
                UnaryOp::Lnot => "lnot",
            };
            format!("({o} {})", sexp(operand))
        }
        ExprKind::Annot { expr, ty: t } => format!("(: {} {})", sexp(expr), ty(t)),
        ExprKind::Pragma { args, body } => format!("(pragma {:?} {})", args, sexp(body)),
        ExprKind::Attributed { expr, attrs: a } => format!("(attr {}{})", sexp(expr), attrs(a)),
        ExprKind::Extension { name } => format!("[%{name}]"),
    }
}

/// The direct sub-expressions of `e`.
pub fn children(e: &Expr) -> Vec<&Expr> {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var { .. } | ExprKind::Extension { .. } => vec![],
        ExprKind::Let { value, body, .. } => vec![value, body],
        ExprKind::LetFun { decl, body } => vec![&decl.body, body],
        ExprKind::LetShared { size, body, .. } => vec![size, body],
        ExprKind::LetSuperstep { step, rest, .. } => vec![step, rest],
        ExprKind::LetOpen { body, .. } => vec![body],
        ExprKind::Assign { value, .. } => vec![value],
        ExprKind::If {
            cond,
            then_branch,
            else_branch,
        } => {
            let mut v: Vec<&Expr> = vec![cond, then_branch];
            v.extend(else_branch.as_deref());
            v
        }
        ExprKind::For {
            start, end, body, ..
        } => vec![start, end, body],
        ExprKind::While { cond, body, .. } => vec![cond, body],
        ExprKind::Seq(es) | ExprKind::Tuple(es) => es.iter().collect(),
        ExprKind::Match { scrutinee, arms } => {
            let mut v: Vec<&Expr> = vec![scrutinee];
            v.extend(arms.iter().map(|a| &a.body));
            v
        }
        ExprKind::Index { base, index } => vec![base, index],
        ExprKind::IndexSet { base, index, value } => vec![base, index, value],
        ExprKind::Field { base, .. } => vec![base],
        ExprKind::FieldSet { base, value, .. } => vec![base, value],
        ExprKind::Record(fs) => fs.iter().map(|(_, e)| e).collect(),
        ExprKind::Ctor { args, .. } => args.iter().collect(),
        ExprKind::App { func, args } => {
            let mut v: Vec<&Expr> = vec![func];
            v.extend(args.iter());
            v
        }
        ExprKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
        ExprKind::Unary { operand, .. } => vec![operand],
        ExprKind::Annot { expr, .. } | ExprKind::Attributed { expr, .. } => vec![expr],
        ExprKind::Pragma { body, .. } => vec![body],
    }
}

/// The greatest expression height in the program, computed without recursion.
pub fn max_height(p: &Program) -> usize {
    let mut stack: Vec<(&Expr, usize)> = Vec::new();
    let mut max = 0;
    for item in &p.items {
        match &item.kind {
            ItemKind::Const { value, .. } => stack.push((value, 1)),
            ItemKind::Fun(f) => stack.push((&f.body, 1)),
            ItemKind::Kernel(k) => {
                stack.push((&k.body, 1));
                stack.extend(k.prelude.iter().map(|f| (&f.body, 1)));
            }
            ItemKind::Module { items, .. } => {
                let inner = Program {
                    items: items.clone(),
                    tall: true,
                };
                max = max.max(max_height(&inner));
            }
            ItemKind::Type(_) | ItemKind::Open(_) => {}
        }
    }
    while let Some((e, d)) = stack.pop() {
        max = max.max(d);
        stack.extend(children(e).into_iter().map(|c| (c, d + 1)));
    }
    max
}

fn params(ps: &[Param]) -> String {
    ps.iter()
        .map(|p| match &p.ty {
            Some(t) => format!("{}:{}", p.name.name, ty(t)),
            None => p.name.name.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A span-free rendering of a whole program (items, declarations and bodies).
pub fn program_sexp(p: &Program) -> String {
    let mut out = String::new();
    for item in &p.items {
        let line = match &item.kind {
            ItemKind::Type(TypeDecl {
                name,
                kind: TypeDeclKind::Record(fs),
            }) => format!(
                "type {} = {{{}}}",
                name.name,
                fs.iter()
                    .map(|f| format!(
                        "{}{}:{}",
                        if f.mutable { "mutable " } else { "" },
                        f.name.name,
                        ty(&f.ty)
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            ItemKind::Type(TypeDecl {
                name,
                kind: TypeDeclKind::Variant(cs),
            }) => format!(
                "type {} = {}",
                name.name,
                cs.iter()
                    .map(|c| format!(
                        "{}[{}]",
                        c.name.name,
                        c.args.iter().map(ty).collect::<Vec<_>>().join(",")
                    ))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ),
            ItemKind::Const { name, ty: t, value } => {
                format!("const {}:{} = {}", name.name, ty(t), sexp(value))
            }
            ItemKind::Fun(f) => format!(
                "fun{} {} ({}){}{} = {}",
                if f.recursive { " rec" } else { "" },
                f.name.name,
                params(&f.params),
                f.ret
                    .as_ref()
                    .map(|t| format!(" : {}", ty(t)))
                    .unwrap_or_default(),
                attrs(&f.attrs),
                sexp(&f.body)
            ),
            ItemKind::Kernel(k) => format!(
                "kernel {} ({}) = {}{}",
                k.name.name,
                params(&k.params),
                sexp(&k.body),
                k.prelude
                    .iter()
                    .map(|f| format!(" [prelude {} = {}]", f.name.name, sexp(&f.body)))
                    .collect::<String>()
            ),
            ItemKind::Module { name, items } => format!(
                "module {} = struct\n{}end",
                name.name,
                program_sexp(&Program {
                    items: items.clone(),
                    tall: true,
                })
            ),
            ItemKind::Open(m) => format!("open {}", m.name),
        };
        out.push_str(&line);
        out.push_str(&attrs(&item.attrs));
        out.push('\n');
    }
    out
}
