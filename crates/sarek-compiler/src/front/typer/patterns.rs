//! Patterns: typing, and the exhaustiveness/redundancy check (the usefulness algorithm of
//! Maranget, "Warnings for pattern matching", over constructors, booleans, unit, tuples and
//! literals; integer and float literals never form a complete set, so they need a wildcard).

use super::Checker;
use super::messages::plural;
use crate::diag::{Diagnostic, Span};
use crate::front::ast::{self, Lit};
use crate::front::tast::{Arm, Pattern, Ty, VarDecl, VariantId};
use crate::types::Literal;

impl Checker {
    /// Type `p` against `ty`; the variables it binds are appended to `binds` (not yet in scope).
    pub(super) fn check_pattern(
        &mut self,
        p: &ast::Pattern,
        ty: &Ty,
        mutable: bool,
        binds: &mut Vec<VarDecl>,
    ) -> Pattern {
        match p {
            ast::Pattern::Wildcard(_) => Pattern::Wildcard,
            ast::Pattern::Var(id) => {
                if binds.iter().any(|b| b.name == id.name) {
                    self.diags.push(
                        Diagnostic::error(
                            id.span,
                            format!("the variable `{}` is bound twice in this pattern", id.name),
                        )
                        .with_label("bound again here"),
                    );
                }
                let d = self.decl(&id.name, ty.clone(), mutable, id.span);
                binds.push(d.clone());
                Pattern::Bind(d)
            }
            ast::Pattern::Lit(lit, span) => {
                let expr = self.literal(lit, *span);
                if !self.expect(&expr, ty) {
                    return Pattern::Wildcard;
                }
                match (&expr.kind, lit) {
                    (crate::front::tast::ExprKind::Lit(l), _) => Pattern::Lit(*l),
                    (_, Lit::Unit) => Pattern::Wildcard,
                    _ => Pattern::Wildcard,
                }
            }
            ast::Pattern::Ctor { name, args, span } => {
                let Some((vid, ci)) = self.resolve_ctor(name, Some(ty)) else {
                    self.bind_unchecked(args, mutable, binds);
                    return Pattern::Wildcard;
                };
                let pty = Ty::Variant(vid);
                if let Err(err) = self.subst.unify(ty, &pty) {
                    self.report_unify(err, *span, ty, &pty);
                    self.bind_unchecked(args, mutable, binds);
                    return Pattern::Wildcard;
                }
                let decl = self.env.variant(vid).ctors[ci as usize].clone();
                let n = decl.args.len();
                let sub: Vec<Pattern> = if args.len() == n {
                    args.iter()
                        .zip(&decl.args)
                        .map(|(a, t)| self.check_pattern(a, t, mutable, binds))
                        .collect()
                } else if n > 1 && args.len() == 1 && matches!(args[0], ast::Pattern::Wildcard(_)) {
                    vec![Pattern::Wildcard; n]
                } else if n == 1 && args.len() > 1 {
                    let tup = ast::Pattern::Tuple(args.clone(), *span);
                    vec![self.check_pattern(&tup, &decl.args[0], mutable, binds)]
                } else {
                    let mut d = Diagnostic::error(
                        *span,
                        format!(
                            "the constructor `{}` has {} but the pattern gives {}",
                            name.name,
                            plural(n, "argument"),
                            args.len()
                        ),
                    )
                    .with_label(format!("expected {}", plural(n, "sub-pattern")))
                    .with_secondary(decl.span, format!("`{}` declared here", name.name));
                    if n > 1 && args.len() == 1 {
                        let under: Vec<&str> = vec!["_"; n];
                        d = d.with_help(format!(
                            "match the components: `{} ({})`",
                            name.name,
                            under.join(", ")
                        ));
                    }
                    self.diags.push(d);
                    return Pattern::Wildcard;
                };
                Pattern::Ctor {
                    variant: vid,
                    ctor: ci,
                    args: sub,
                }
            }
            ast::Pattern::Tuple(ps, span) => {
                let tys: Vec<Ty> = ps.iter().map(|_| self.subst.fresh()).collect();
                let tt = Ty::Tuple(tys.clone());
                if let Err(err) = self.subst.unify(ty, &tt) {
                    self.report_unify(err, *span, ty, &tt);
                    // Its names still exist (at the error type): each use said "unknown
                    // variable" after the one real error (as for constructors, F13).
                    self.bind_unchecked(ps, mutable, binds);
                    return Pattern::Wildcard;
                }
                Pattern::Tuple(
                    ps.iter()
                        .zip(&tys)
                        .map(|(p, t)| self.check_pattern(p, t, mutable, binds))
                        .collect(),
                )
            }
            ast::Pattern::Or(ps, span) => {
                let mut alts = Vec::new();
                let mut first: Option<Vec<VarDecl>> = None;
                for p in ps {
                    let mut own = Vec::new();
                    let mut alt = self.check_pattern(p, ty, mutable, &mut own);
                    match &first {
                        None => first = Some(own),
                        Some(names) => {
                            let same = own.len() == names.len()
                                && own.iter().all(|d| names.iter().any(|n| n.name == d.name));
                            if !same {
                                self.diags.push(
                                    Diagnostic::error(p.span(), "every alternative of an or-pattern must bind the same variables")
                                        .with_label("this alternative binds different variables")
                                        .with_secondary(*span, "in this or-pattern"),
                                );
                            }
                            // One variable per name across alternatives: reuse the first binder.
                            for d in &own {
                                if let Some(n) = names.iter().find(|n| n.name == d.name) {
                                    let _ = self.subst.unify(&n.ty, &d.ty);
                                    rebind(&mut alt, &d.name, n);
                                }
                            }
                        }
                    }
                    alts.push(alt);
                }
                binds.extend(first.unwrap_or_default());
                Pattern::Or(alts)
            }
        }
    }

    /// A `let` pattern must match every value of its type.
    pub(super) fn check_irrefutable(&mut self, p: &Pattern, ty: &Ty, span: Span) {
        let ty = self.subst.zonk(ty);
        if super::unify::is_error(&ty) {
            // A value already reported (an unknown name, a refused constant): its type
            // says nothing about what the pattern misses.
            return;
        }
        let rows = vec![vec![p.clone()]];
        if let Some(w) = self.witness(&rows, &[ty]) {
            self.diags.push(
                Diagnostic::error(span, "this `let` pattern does not match every value")
                    .with_label(format!("`{}` is not matched", self.show_witness(&w[0])))
                    .with_help("use `match` to handle the other cases"),
            );
        }
    }

    /// Bind the names of sub-patterns that cannot be checked (their constructor is unknown or
    /// of the wrong type) at the error type, so the arm's body does not report them as unknown.
    fn bind_unchecked(&mut self, args: &[ast::Pattern], mutable: bool, binds: &mut Vec<VarDecl>) {
        for a in args {
            self.check_pattern(a, &super::unify::error_ty(), mutable, binds);
        }
    }

    /// Exhaustiveness (an error naming a missing case) and redundancy (an unreachable arm).
    /// A guarded arm (`guarded[i]`) may be unreachable but covers nothing, as in OCaml.
    pub(super) fn check_match(
        &mut self,
        ty: &Ty,
        arms: &[Arm],
        guarded: &[bool],
        span: Span,
        scrut_span: Span,
    ) {
        let ty = self.subst.zonk(ty);
        if super::unify::is_error(&ty) {
            return;
        }
        let mut rows: Vec<Vec<Pattern>> = Vec::new();
        for (k, arm) in arms.iter().enumerate() {
            let row = vec![arm.pattern.clone()];
            if !self.useful(&rows, &row, std::slice::from_ref(&ty)) {
                self.diags.push(
                    Diagnostic::error(arm.span, "this match arm is unreachable")
                        .with_label("every value it matches is matched by an earlier arm")
                        .with_help("remove it or reorder the arms"),
                );
            }
            if !guarded.get(k).copied().unwrap_or(false) {
                rows.push(row);
            }
        }
        if let Some(w) = self.witness(&rows, std::slice::from_ref(&ty)) {
            let shown = self.show_witness(&w[0]);
            let mut d = Diagnostic::error(span, "non-exhaustive match")
                .with_label(format!("pattern `{shown}` not covered"))
                .with_secondary(scrut_span, format!("this has type `{}`", self.show(&ty)));
            if matches!(ty, Ty::Scalar(s) if s.is_numeric()) {
                d = d.with_note("literal patterns cannot cover every number");
            }
            if guarded.contains(&true) {
                d = d.with_note("arms with a `when` guard cover nothing, as in OCaml");
            }
            d = d.with_help(if shown == "_" {
                "add a wildcard arm `| _ -> ...`".to_string()
            } else {
                format!("add an arm `| {shown} -> ...` or a wildcard `| _ -> ...`")
            });
            self.diags.push(d);
        }
    }

    /// Head constructors of a column type: `None` when infinite (numbers, unknown types).
    fn signature(&self, ty: &Ty) -> Option<Vec<(Key, Vec<Ty>)>> {
        match ty {
            Ty::Variant(v) => {
                let def = self.env.variant(*v);
                Some(
                    def.ctors
                        .iter()
                        .enumerate()
                        .map(|(i, c)| (Key::Ctor(*v, i as u32), c.args.clone()))
                        .collect(),
                )
            }
            Ty::Scalar(crate::types::Scalar::Bool) => {
                Some(vec![(Key::Bool(false), vec![]), (Key::Bool(true), vec![])])
            }
            Ty::Tuple(ts) => Some(vec![(Key::Tuple, ts.clone())]),
            Ty::Unit => Some(vec![(Key::Tuple, vec![])]),
            _ => None,
        }
    }

    fn witness(&self, rows: &[Vec<Pattern>], tys: &[Ty]) -> Option<Vec<Witness>> {
        let rows = expand_or(rows);
        let Some((head_ty, rest_tys)) = tys.split_first() else {
            return rows.is_empty().then(Vec::new);
        };
        let used: Vec<Key> =
            rows.iter()
                .filter_map(|r| head_key(&r[0]))
                .fold(Vec::new(), |mut acc, k| {
                    if !acc.contains(&k) {
                        acc.push(k);
                    }
                    acc
                });
        let sig = self.signature(head_ty);
        if let Some(sig) = &sig
            && !sig.is_empty()
            && sig.iter().all(|(k, _)| used.contains(k))
        {
            for (k, arg_tys) in sig {
                let spec = specialize(&rows, k, arg_tys.len());
                let tys2: Vec<Ty> = arg_tys.iter().chain(rest_tys).cloned().collect();
                if let Some(mut w) = self.witness(&spec, &tys2) {
                    let rest = w.split_off(arg_tys.len());
                    let mut out = vec![Witness::Ctor(k.clone(), w)];
                    out.extend(rest);
                    return Some(out);
                }
            }
            return None;
        }
        let def = default_rows(&rows);
        let mut w = self.witness(&def, rest_tys)?;
        let head = match &sig {
            // Name a constructor no row mentions (the signature is incomplete here).
            Some(sig) if !used.is_empty() => match sig.iter().find(|(k, _)| !used.contains(k)) {
                Some((k, args)) => Witness::Ctor(k.clone(), vec![Witness::Wild; args.len()]),
                None => Witness::Wild,
            },
            _ => Witness::Wild,
        };
        w.insert(0, head);
        Some(w)
    }

    fn useful(&self, rows: &[Vec<Pattern>], v: &[Pattern], tys: &[Ty]) -> bool {
        let rows = expand_or(rows);
        let Some((head, rest)) = v.split_first() else {
            return rows.is_empty();
        };
        let (head_ty, rest_tys) = tys.split_first().expect("a type per column");
        match head {
            Pattern::Or(alts) => alts.iter().any(|a| {
                let mut v2 = vec![a.clone()];
                v2.extend(rest.iter().cloned());
                self.useful(&rows, &v2, tys)
            }),
            p => match head_key(p) {
                Some(k) => {
                    let arg_tys = self.key_args(head_ty, &k);
                    let spec = specialize(&rows, &k, arg_tys.len());
                    let v2 = specialize(&[v.to_vec()], &k, arg_tys.len()).remove(0);
                    let tys2: Vec<Ty> = arg_tys
                        .into_iter()
                        .chain(rest_tys.iter().cloned())
                        .collect();
                    self.useful(&spec, &v2, &tys2)
                }
                None => {
                    let used: Vec<Key> = rows.iter().filter_map(|r| head_key(&r[0])).collect();
                    match self.signature(head_ty) {
                        Some(sig)
                            if !sig.is_empty() && sig.iter().all(|(k, _)| used.contains(k)) =>
                        {
                            sig.iter().any(|(k, args)| {
                                let spec = specialize(&rows, k, args.len());
                                let v2 = specialize(&[v.to_vec()], k, args.len()).remove(0);
                                let tys2: Vec<Ty> = args.iter().chain(rest_tys).cloned().collect();
                                self.useful(&spec, &v2, &tys2)
                            })
                        }
                        _ => self.useful(&default_rows(&rows), rest, rest_tys),
                    }
                }
            },
        }
    }

    fn key_args(&self, ty: &Ty, k: &Key) -> Vec<Ty> {
        match (k, ty) {
            (Key::Ctor(v, i), _) => self.env.variant(*v).ctors[*i as usize].args.clone(),
            (Key::Tuple, Ty::Tuple(ts)) => ts.clone(),
            _ => vec![],
        }
    }

    fn show_witness(&self, w: &Witness) -> String {
        match w {
            Witness::Wild => "_".into(),
            Witness::Ctor(Key::Bool(b), _) => b.to_string(),
            Witness::Ctor(Key::Tuple, args) if args.is_empty() => "()".into(),
            Witness::Ctor(Key::Tuple, args) => {
                format!(
                    "({})",
                    args.iter()
                        .map(|a| self.show_witness(a))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
            Witness::Ctor(Key::Ctor(v, i), args) => {
                let name = &self.env.variant(*v).ctors[*i as usize].name;
                match args.len() {
                    0 => name.clone(),
                    1 => {
                        let a = self.show_witness(&args[0]);
                        if a.contains(' ') {
                            format!("{name} ({a})")
                        } else {
                            format!("{name} {a}")
                        }
                    }
                    _ => format!(
                        "{name} ({})",
                        args.iter()
                            .map(|a| self.show_witness(a))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }
            }
            Witness::Ctor(Key::Lit(_), _) => "_".into(),
        }
    }
}

/// A head constructor.
#[derive(Clone, Debug, PartialEq)]
enum Key {
    Ctor(VariantId, u32),
    Bool(bool),
    /// The one constructor of a tuple type (and of unit, with no components).
    Tuple,
    /// Integer or float literal, by bit pattern.
    Lit(u64),
}

#[derive(Clone, Debug)]
enum Witness {
    Wild,
    Ctor(Key, Vec<Witness>),
}

fn head_key(p: &Pattern) -> Option<Key> {
    match p {
        Pattern::Wildcard | Pattern::Bind(_) | Pattern::Or(_) => None,
        Pattern::Ctor { variant, ctor, .. } => Some(Key::Ctor(*variant, *ctor)),
        Pattern::Tuple(_) => Some(Key::Tuple),
        Pattern::Lit(Literal::Bool(b)) => Some(Key::Bool(*b)),
        Pattern::Lit(Literal::I32(v)) => Some(Key::Lit(*v as i64 as u64)),
        Pattern::Lit(Literal::I64(v)) => Some(Key::Lit(*v as u64)),
        Pattern::Lit(Literal::F32(v)) => Some(Key::Lit((*v as f64).to_bits())),
        Pattern::Lit(Literal::F64(v)) => Some(Key::Lit(v.to_bits())),
    }
}

/// Rows whose head is an or-pattern become one row per alternative (borrowed when no row
/// starts with one: the usual case, and the matrix is copied at every step otherwise).
fn expand_or(rows: &[Vec<Pattern>]) -> std::borrow::Cow<'_, [Vec<Pattern>]> {
    if !rows
        .iter()
        .any(|r| matches!(r.first(), Some(Pattern::Or(_))))
    {
        return std::borrow::Cow::Borrowed(rows);
    }
    let mut out = Vec::new();
    for r in rows {
        match r.first() {
            Some(Pattern::Or(alts)) => {
                let sub: Vec<Vec<Pattern>> = alts
                    .iter()
                    .map(|a| {
                        let mut row = vec![a.clone()];
                        row.extend(r[1..].iter().cloned());
                        row
                    })
                    .collect();
                out.extend(expand_or(&sub).into_owned());
            }
            _ => out.push(r.clone()),
        }
    }
    std::borrow::Cow::Owned(out)
}

fn specialize(rows: &[Vec<Pattern>], k: &Key, arity: usize) -> Vec<Vec<Pattern>> {
    let mut out = Vec::new();
    for r in expand_or(rows).iter() {
        let (head, rest) = r.split_first().expect("non-empty row");
        let args: Vec<Pattern> = match head {
            Pattern::Wildcard | Pattern::Bind(_) => vec![Pattern::Wildcard; arity],
            p if head_key(p).as_ref() == Some(k) => match p {
                Pattern::Ctor { args, .. } | Pattern::Tuple(args) => args.clone(),
                _ => vec![],
            },
            _ => continue,
        };
        let mut row = args;
        row.resize(arity, Pattern::Wildcard);
        row.extend(rest.iter().cloned());
        out.push(row);
    }
    out
}

fn default_rows(rows: &[Vec<Pattern>]) -> Vec<Vec<Pattern>> {
    expand_or(rows)
        .iter()
        .filter(|r| matches!(r[0], Pattern::Wildcard | Pattern::Bind(_)))
        .map(|r| r[1..].to_vec())
        .collect()
}

/// Make binders named `name` in `p` use `to`'s id.
fn rebind(p: &mut Pattern, name: &str, to: &VarDecl) {
    match p {
        Pattern::Bind(d) if d.name == name => d.id = to.id,
        Pattern::Ctor { args, .. } | Pattern::Tuple(args) | Pattern::Or(args) => {
            args.iter_mut().for_each(|a| rebind(a, name, to))
        }
        _ => {}
    }
}
