//! Programs of several files, as OCaml modules.
//!
//! A file given with the program is module `Geometry_lib` when its name is
//! `geometry_lib.sarek` (the stem, capitalised, as OCaml names a compilation unit). The main
//! file's AST gets each module it uses, directly or through another module, as a leading
//! [`ast::ItemKind::Module`] item, dependencies first: the typer then resolves
//! `Geometry_lib.f`, `let open Geometry_lib in` and `open Geometry_lib` as it does for a
//! `module M = struct ... end` written in the file. A module file's kernels are not part of
//! the program (a kernel is launched from its own file); its types, helpers and constants are.
//!
//! A file named like a built-in module (`Std`, `Float32`, ...) is never a module. Files the
//! main file does not use are not parsed, so `sarek check a.sarek b.sarek` still
//! checks two independent programs independently. Two files of a module name the program
//! uses (`a/lib.sarek`, `b/lib.sarek`) are refused, as OCaml refuses them.

use crate::diag::{Diagnostic, FileId, SourceMap, Span};
use crate::front::ast::{Ident, Item, ItemKind, Program};
use crate::front::lexer::{self, Tok};
use crate::front::parser;

/// The module name of a file: `geometry_lib.sarek` (or `dir/geometry_lib.sarek`) is
/// `Geometry_lib`. None when the stem is not an OCaml module name.
pub fn module_name(file_name: &str) -> Option<String> {
    let base = file_name.rsplit(['/', '\\']).next().unwrap_or(file_name);
    let stem = base.split('.').next().unwrap_or(base);
    let mut chars = stem.chars();
    let first = chars.next()?;
    if !first.is_ascii_alphabetic()
        || !chars
            .clone()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '\'')
    {
        return None;
    }
    Some(first.to_ascii_uppercase().to_string() + chars.as_str())
}

/// Capitalised names in `file` (candidates for module references).
fn uppercase_names(sources: &SourceMap, file: FileId) -> Vec<String> {
    let (tokens, _) = lexer::lex(file, sources.text(file));
    let mut names: Vec<String> = tokens
        .into_iter()
        .filter_map(|t| match t.tok {
            Tok::UIdent(n) => Some(n.to_string()),
            _ => None,
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Parse `main` and add, as module items, every other file of `sources` it uses.
pub fn parse_program(sources: &SourceMap, main: FileId) -> Result<Program, Vec<Diagnostic>> {
    let others: Vec<(FileId, String)> = sources
        .ids()
        .filter(|&f| f != main)
        .filter_map(|f| module_name(sources.name(f)).map(|m| (f, m)))
        // A file named like a built-in module (`float32.sarek`) would hide it: not a module.
        .filter(|(_, m)| !crate::front::typer::BUILTIN_MODULES.contains(&m.as_str()))
        .collect();
    let mut order: Vec<FileId> = Vec::new();
    let mut visiting: Vec<FileId> = vec![main];
    // Depth-first, dependencies first; a cycle is cut where it closes.
    fn visit(
        sources: &SourceMap,
        file: FileId,
        others: &[(FileId, String)],
        visiting: &mut Vec<FileId>,
        order: &mut Vec<FileId>,
    ) {
        let used = uppercase_names(sources, file);
        for (f, m) in others {
            if used.contains(m) && !visiting.contains(f) && !order.contains(f) {
                visiting.push(*f);
                visit(sources, *f, others, visiting, order);
                order.push(*f);
            }
        }
    }
    // Finding the names a file uses lexes it: not done when there is no other file to use.
    if !others.is_empty() {
        visit(sources, main, &others, &mut visiting, &mut order);
    }

    let mut diags = Vec::new();
    // Two files of one module name (`a/lib.sarek`, `b/lib.sarek`): OCaml refuses two
    // compilation units of one name; taking either would silently pick one `Lib.helper`.
    let mut reported: Vec<String> = Vec::new();
    for &f in &order {
        let name = module_name(sources.name(f)).expect("filtered above");
        if reported.contains(&name) {
            continue;
        }
        let twins: Vec<FileId> = (others.iter())
            .filter(|(g, m)| *g != f && *m == name)
            .map(|(g, _)| *g)
            .collect();
        if let Some(&twin) = twins.first() {
            reported.push(name.clone());
            diags.push(
                Diagnostic::error(
                    Span::new(twin, 0, 0),
                    format!(
                        "module `{name}` is given twice: `{}` and `{}`",
                        sources.name(f),
                        sources.name(twin)
                    ),
                )
                .with_label("a second file of this module name")
                .with_secondary(Span::new(f, 0, 0), "the first")
                .with_note(format!(
                    "`{}` uses `{name}`, and each file is the module its name says; rename one \
                     of them or leave one out",
                    sources.name(main)
                )),
            );
        }
    }
    let mut items: Vec<Item> = Vec::new();
    let mut tall = false;
    for f in order {
        let name = module_name(sources.name(f)).expect("filtered above");
        match parser::parse(f, sources.text(f)) {
            Ok(mut p) => {
                tall |= p.tall;
                let span = Span::new(f, 0, 0);
                let body = std::mem::take(&mut p.items)
                    .into_iter()
                    .filter(|i| !matches!(i.kind, ItemKind::Kernel(_)))
                    .collect();
                items.push(Item {
                    kind: ItemKind::Module {
                        name: Ident {
                            name: name.into(),
                            span,
                        },
                        items: body,
                    },
                    span,
                    attrs: Vec::new(),
                });
            }
            Err(ds) => diags.extend(ds),
        }
    }
    match parser::parse(main, sources.text(main)) {
        Ok(mut p) if diags.is_empty() => {
            items.append(&mut p.items);
            Ok(Program {
                items,
                tall: tall || p.tall,
            })
        }
        Ok(_) => Err(diags),
        Err(ds) => {
            diags.extend(ds);
            Err(diags)
        }
    }
}
