//! Compile-time checked Sarek kernels.
//!
//! The three macros run the Sarek front end (parse, type check, monomorphisation, recursion
//! and convergence checks) while rustc expands them; `kernel_source!` and `include_kernel!`
//! expand to the kernel source as a `&'static str`. A Sarek error becomes a Rust `compile_error!` carrying the rendered
//! diagnostic (`error: ...`, `┌─ file:line:col`, the source line and carets), pointing at the
//! macro's argument.
//!
//! - `kernel_source!("let%kernel k ... = ...")`: an inline source; its diagnostics are at
//!   the Rust file's line and column when the literal has no escapes (a raw string, say).
//! - `include_kernel!("kernels/k.sarek")`: a file, relative to the including crate's
//!   `CARGO_MANIFEST_DIR` (proc-macros cannot see the including file's directory on stable);
//!   it expands through `include_str!` so cargo rebuilds when the file changes.
//! - `include_kernel!("kernels/k.sarek", modules = ["kernels/geometry_lib.sarek"])` and
//!   `kernel_module!(mod k = "kernels/k.sarek", modules = [...])`: a program of several files,
//!   each module file being module `Geometry_lib` after its stem (as `sarek check k.sarek
//!   geometry_lib.sarek`); every file goes through `include_str!` (rebuild tracking), and a
//!   diagnostic is rendered at its own file, the `compile_error!` pointing at that file's
//!   literal.
//!
//! - `kernel_module!(pub mod saxpy = "kernels/saxpy.sarek")` (attributes such as `/// docs`
//!   may precede `pub mod`): a module with the checked `SOURCE`, its `PATH`, the `MODULES`
//!   files, `program()` to compile it, and one typed launcher per kernel,
//!   `saxpy::saxpy(&kernel, &mut x, &mut y, 2.0f32, n)`, whose Rust parameter types follow the
//!   kernel's (`T vector` of a scalar is `&mut sarek::Vector<T>`, other vectors
//!   `&mut sarek::HostVector`, records/tuples/variants by value their leaves as
//!   `Vec<sarek::Literal>`, see `sarek::Kernel::value`); it returns the `sarek::Launch` to
//!   configure (`.config`) and `.run(&*device)`. A kernel named `program`, `SOURCE`,
//!   `PATH` or `MODULES` is refused (its launcher would clash with the module's items), and
//!   so are two kernels with one Rust name (`f'` and `f_prime`); parameters that share a Rust
//!   name get `_` appended, Rust keywords are raw (`r#fn`, `r#gen`) or get `_` (`self_`).
//!   Files are read up to 64 MiB.
//!
//! - `skeleton!(reduce, "kernels/ops.sarek", plus, "0")`: a skeleton (`map`, `zip`,
//!   `reduce`, `scan`, `exclusive_scan`; the last three take the neutral element) around a
//!   helper of the file, generated and checked at build time (a helper of the wrong type or
//!   an ill-typed neutral element is a Rust compile error); expands to
//!   `sarek::Skeleton::from_source(PATH, GENERATED_SOURCE, kind, helper)`, a
//!   `Result<sarek::Skeleton, sarek::Error>` that compiles the embedded source at run time.
//!
//! The facade crate re-exports all of them (`sarek::include_kernel!`); `sarek::Program::compile`
//! then compiles the checked text at run time without surprises.

use proc_macro::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use sarek_compiler::front::tast::Ty;
use sarek_compiler::types::Scalar;
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Ident, LitStr, Token, Visibility, parse_macro_input};

/// Check an inline Sarek source at compile time; expands to the source text.
#[proc_macro]
pub fn kernel_source(input: TokenStream) -> TokenStream {
    let place = literal_place(&input);
    let lit = parse_macro_input!(input as LitStr);
    let text = lit.value();
    // Diagnostics at the Rust file's own line and column when the literal's text is its value
    // (no escapes), else counted from the start of the literal.
    let (name, located) = place
        .and_then(|(file, line, column)| {
            let padded = align(&lit.token().to_string(), &text, line, column)?;
            Some((file, padded))
        })
        .unwrap_or_else(|| ("<kernel_source!>".to_string(), text.clone()));
    match check(&name, &located) {
        Ok(()) => quote_spanned!(lit.span()=> #lit).into(),
        Err(msg) => quote_spanned!(lit.span()=> compile_error!(#msg)).into(),
    }
}

/// The Rust file, line and column (1-based) where a macro's single literal argument starts.
fn literal_place(input: &TokenStream) -> Option<(String, usize, usize)> {
    let mut tokens = input.clone().into_iter();
    let (Some(proc_macro::TokenTree::Literal(lit)), None) = (tokens.next(), tokens.next()) else {
        return None;
    };
    let span = lit.span();
    let file = span.local_file()?;
    Some((file.display().to_string(), span.line(), span.column()))
}

/// `value` padded with blank lines and spaces so that its characters sit at the lines and
/// columns they have in the Rust file, given the literal `token` (`"..."` or `r#"..."#`)
/// starting at `line`:`column`. `None` when the token's text is not its value (escapes).
fn align(token: &str, value: &str, line: usize, column: usize) -> Option<String> {
    let open = token.find('"')? + 1;
    let close = token.rfind('"')?;
    if close < open || &token[open..close] != value {
        return None;
    }
    Some(format!(
        "{}{}{value}",
        "\n".repeat(line.saturating_sub(1)),
        " ".repeat(column.saturating_sub(1) + open)
    ))
}

/// `"path" [, modules = ["path", ...]]`: the argument of `include_kernel!`, also the tail of
/// `kernel_module!`.
struct Files {
    main: LitStr,
    modules: Vec<LitStr>,
}

impl Parse for Files {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let main = input.parse()?;
        let mut modules = Vec::new();
        if input.parse::<Option<Token![,]>>()?.is_some() && !input.is_empty() {
            let key: Ident = input.parse()?;
            if key != "modules" {
                return Err(syn::Error::new(
                    key.span(),
                    "expected `modules = [\"file.sarek\", ...]`",
                ));
            }
            input.parse::<Token![=]>()?;
            let list;
            syn::bracketed!(list in input);
            modules = list
                .parse_terminated(|p: ParseStream| p.parse::<LitStr>(), Token![,])?
                .into_iter()
                .collect();
            input.parse::<Option<Token![,]>>()?;
        }
        Ok(Files { main, modules })
    }
}

impl Files {
    /// The main file, then each module file once: a file named twice would define its items
    /// twice, and the main file named again among the modules is the main file (as `sarek
    /// check`).
    fn distinct(&self) -> Vec<&LitStr> {
        let mut lits = vec![&self.main];
        for m in &self.modules {
            if !lits.iter().any(|l| l.value() == m.value()) {
                lits.push(m);
            }
        }
        lits
    }
}

/// A failed check: the message of the `compile_error!` and the literal (of the main file or
/// of a module) it points at.
struct Refusal {
    message: String,
    at: LitStr,
}

impl Refusal {
    fn to_tokens(&self, semicolon: bool) -> TokenStream {
        let msg = &self.message;
        let semi = semicolon.then(|| quote!(;));
        quote_spanned!(self.at.span()=> compile_error!(#msg) #semi).into()
    }
}

/// A checked program of files: their full paths (main first, for `include_str!`) and the typed
/// program.
struct Checked {
    paths: Vec<std::path::PathBuf>,
    program: sarek_compiler::front::tast::Program,
}

/// Read every file of `files` (relative to `root`) and run the front end on the main one with
/// the others as its modules, each registered under its relative path for diagnostics.
fn read_and_check_files(root: &std::path::Path, files: &Files) -> Result<Checked, Refusal> {
    let lits = files.distinct();
    let mut sources = sarek_compiler::SourceMap::new();
    let mut paths = Vec::new();
    for lit in &lits {
        let (path, text) = read(root, &lit.value()).map_err(|message| Refusal {
            message,
            at: (*lit).clone(),
        })?;
        sources.add(lit.value().as_str(), text.as_str());
        paths.push(path);
    }
    let main = sources.ids().next().expect("the main file was added");
    sarek_compiler::check(&sources, main)
        .map(|program| Checked {
            paths: paths.clone(),
            program,
        })
        .map_err(|d| {
            // Point at the literal naming the file of the first error.
            let at = d
                .first()
                .and_then(|d| sources.ids().position(|f| f == d.span.file))
                .map_or(&files.main, |i| lits[i]);
            Refusal {
                message: rejected(&d, &sources),
                at: at.clone(),
            }
        })
}

/// Check a Sarek file (path relative to the crate root) at compile time, with the files of
/// its modules when given; expands to its text.
#[proc_macro]
pub fn include_kernel(input: TokenStream) -> TokenStream {
    let files = parse_macro_input!(input as Files);
    match read_and_check_files(&manifest_dir(), &files) {
        Ok(Checked { paths, .. }) => {
            let abs: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            let (main, modules) = (&abs[0], &abs[1..]);
            // The modules are included too, only so that cargo rebuilds when one changes.
            quote_spanned!(files.main.span()=> {
                #(const _: &str = include_str!(#modules);)*
                include_str!(#main)
            })
            .into()
        }
        Err(refusal) => refusal.to_tokens(false),
    }
}

/// The including crate's root: relative kernel paths start there.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(Into::into)
        .unwrap_or_else(|| ".".into())
}

#[cfg(test)]
/// Read `root/rel` and run the front end on it, registered as `rel` for its diagnostics.
/// Returns the full path (for `include_str!`) and the typed program, or the message of the
/// `compile_error!`.
fn read_and_check(
    root: &std::path::Path,
    rel: &str,
) -> Result<(std::path::PathBuf, sarek_compiler::front::tast::Program), String> {
    let (path, text) = read(root, rel)?;
    front(rel, &text).map(|program| (path, program))
}

/// The most bytes a kernel file may have, as for `sarek check` (a device such as `/dev/zero`
/// would otherwise be read until rustc runs out of memory).
const MAX_FILE_BYTES: u64 = 64 << 20;

/// The full path of `root/rel` and its text, or the message of the `compile_error!`.
fn read(root: &std::path::Path, rel: &str) -> Result<(std::path::PathBuf, String), String> {
    use std::io::Read;
    let path = root.join(rel);
    let cannot =
        |e: &dyn std::fmt::Display| format!("cannot read Sarek kernel `{}`: {e}", path.display());
    let file = std::fs::File::open(&path).map_err(|e| cannot(&e))?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| cannot(&e))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(cannot(&"larger than the 64 MiB a kernel file may have"));
    }
    Ok((path, text))
}

/// `[VIS] mod NAME = "path" [, modules = ["path", ...]]`.
struct ModuleSpec {
    /// Outer attributes (`/// docs`, `#[allow(..)]`) for the generated module.
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    files: Files,
}

impl Parse for ModuleSpec {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        input.parse::<Token![mod]>()?;
        let name = input.parse()?;
        input.parse::<Token![=]>()?;
        let files = input.parse()?;
        Ok(ModuleSpec {
            attrs,
            vis,
            name,
            files,
        })
    }
}

/// Check a Sarek file and generate a module with its source and typed launchers.
#[proc_macro]
pub fn kernel_module(input: TokenStream) -> TokenStream {
    let ModuleSpec {
        mut attrs,
        vis,
        name,
        files,
    } = parse_macro_input!(input as ModuleSpec);
    let lit = &files.main;
    let rel = lit.value();
    let Checked { paths, program } = match read_and_check_files(&manifest_dir(), &files) {
        Ok(checked) => checked,
        Err(refusal) => return refusal.to_tokens(true),
    };
    if let Some(msg) = launcher_clash(&program, &rel) {
        return quote_spanned!(lit.span()=> compile_error!(#msg);).into();
    }
    let launchers = program.kernels.iter().map(|k| {
        let fname = rust_ident(&k.name);
        let kname = &k.name;
        let mut params = Vec::new();
        let mut pushes = Vec::new();
        let mut doc = format!("Launch kernel `{kname}`:");
        let ids = param_idents(k.params.iter().map(|p| p.name.as_str()));
        // The launcher's own first parameter, renamed past any kernel parameter `kernel`.
        let mut kid = String::from("kernel");
        while ids.iter().any(|id| bare(id) == kid) {
            kid.push('_');
        }
        let kid = format_ident!("{}", kid);
        for (p, id) in k.params.iter().zip(ids) {
            let (ty, push) = match &p.ty {
                Ty::Scalar(s) => {
                    let t = rust_scalar(*s);
                    (quote!(#t), quote!(.scalar(#id)))
                }
                Ty::Vector(e) => match e.as_ref() {
                    Ty::Scalar(s) => {
                        let t = rust_scalar(*s);
                        (quote!(&'a mut ::sarek::Vector<#t>), quote!(.arg(#id)))
                    }
                    _ => (quote!(&'a mut ::sarek::HostVector), quote!(.arg(#id))),
                },
                _ => (
                    quote!(::std::vec::Vec<::sarek::Literal>),
                    quote!(.aggregate(#id)),
                ),
            };
            doc.push_str(&format!(" `{}`", p.name));
            params.push(quote!(#id: #ty));
            pushes.push(push);
        }
        doc.push_str(". Returns the launch to configure (`.config`) and `.run` on a device.");
        quote! {
            #[doc = #doc]
            #[allow(clippy::too_many_arguments)]
            pub fn #fname<'a>(#kid: &'a ::sarek::Kernel, #(#params),*) -> ::sarek::Launch<'a> {
                debug_assert_eq!(#kid.name(), #kname, "a launcher for another kernel");
                #kid.launch() #(#pushes)*
            }
        }
    });
    let abs = paths[0].display().to_string();
    let module_abs: Vec<String> = paths[1..].iter().map(|p| p.display().to_string()).collect();
    let module_rel: Vec<String> = files.distinct()[1..].iter().map(|l| l.value()).collect();
    if !attrs.iter().any(|a| a.path().is_ident("doc")) {
        let doc = format!("The kernels of `{rel}`, checked at build time, and their launchers.");
        attrs.push(syn::parse_quote!(#[doc = #doc]));
    }
    quote! {
        #(#attrs)*
        #vis mod #name {
            /// The checked kernel source.
            pub const SOURCE: &str = include_str!(#abs);
            /// The path the source was read from (relative to the crate root).
            pub const PATH: &str = #rel;
            /// The program's module files, `(path, source)`, each module `Name` after its stem.
            pub const MODULES: &[(&str, &str)] = &[#((#module_rel, include_str!(#module_abs))),*];
            /// Compile the source with its modules (it checked at build time, so this fails
            /// only if the compiler changed in between).
            pub fn program() -> ::std::result::Result<::sarek::Program, ::sarek::Error> {
                let modules: ::std::vec::Vec<(::std::string::String, ::std::string::String)> =
                    MODULES.iter().map(|(p, s)| (p.to_string(), s.to_string())).collect();
                ::sarek::Program::compile_with_modules(PATH, SOURCE, &modules)
            }
            #(#launchers)*
        }
    }
    .into()
}

/// `KIND, "path", helper [, "neutral"]`.
struct SkeletonSpec {
    kind: Ident,
    path: LitStr,
    helper: Ident,
    neutral: Option<LitStr>,
}

impl Parse for SkeletonSpec {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let kind = input.parse()?;
        input.parse::<Token![,]>()?;
        let path = input.parse()?;
        input.parse::<Token![,]>()?;
        let helper = input.parse()?;
        let neutral = if input.parse::<Option<Token![,]>>()?.is_some() && !input.is_empty() {
            Some(input.parse()?)
        } else {
            None
        };
        Ok(SkeletonSpec {
            kind,
            path,
            helper,
            neutral,
        })
    }
}

/// Generate and check a skeleton around a helper of a Sarek file at build time.
#[proc_macro]
pub fn skeleton(input: TokenStream) -> TokenStream {
    let SkeletonSpec {
        kind,
        path: lit,
        helper,
        neutral,
    } = parse_macro_input!(input as SkeletonSpec);
    match expand_skeleton(&kind, &lit, &helper, neutral.as_ref()) {
        Ok(tokens) => tokens.into(),
        Err((span, msg)) => quote_spanned!(span=> compile_error!(#msg)).into(),
    }
}

fn expand_skeleton(
    kind: &Ident,
    lit: &LitStr,
    helper: &Ident,
    neutral: Option<&LitStr>,
) -> Result<proc_macro2::TokenStream, (proc_macro2::Span, String)> {
    use sarek_compiler::skeleton::{Skeleton, instantiate, typed};
    let needs_neutral = |n: Option<&LitStr>| {
        n.map(LitStr::value).ok_or_else(|| {
            (
                kind.span(),
                format!(
                    "`{kind}` needs a neutral element: skeleton!({kind}, \"file\", helper, \"0\")"
                ),
            )
        })
    };
    let (sk, tokens) = match kind.to_string().as_str() {
        "map" => (Skeleton::Map, quote!(::sarek::SkeletonKind::Map)),
        "zip" => (Skeleton::Zip, quote!(::sarek::SkeletonKind::Zip)),
        "reduce" => {
            let n = needs_neutral(neutral)?;
            (
                Skeleton::Reduce { neutral: n.clone() },
                quote!(::sarek::SkeletonKind::Reduce { neutral: ::std::string::String::from(#n) }),
            )
        }
        k @ ("scan" | "exclusive_scan") => {
            let n = needs_neutral(neutral)?;
            let inclusive = k == "scan";
            (
                Skeleton::Scan {
                    inclusive,
                    neutral: n.clone(),
                },
                quote!(::sarek::SkeletonKind::Scan { inclusive: #inclusive, neutral: ::std::string::String::from(#n) }),
            )
        }
        other => {
            return Err((
                kind.span(),
                format!("unknown skeleton `{other}`: map, zip, reduce, scan or exclusive_scan"),
            ));
        }
    };
    let rel = lit.value();
    let (path, text) = read(&manifest_dir(), &rel).map_err(|m| (lit.span(), m))?;
    front(&rel, &text).map_err(|m| (lit.span(), m))?;
    let mut sources = sarek_compiler::SourceMap::new();
    let file = sources.add(rel.clone(), text.clone());
    let program = typed(&sources, file).map_err(|_| (lit.span(), "unreachable".to_string()))?;
    let name = helper.to_string();
    let instance = instantiate(&program, &name, &sk).map_err(|e| (helper.span(), e.to_string()))?;
    let full = instance.program_source(&text);
    front(&rel, &full).map_err(|m| (helper.span(), m))?;
    let abs = path.display().to_string();
    Ok(quote! {{
        // Rebuild when the file changes.
        const _: &str = include_str!(#abs);
        ::sarek::Skeleton::from_source(#rel, #full, #tokens, #name)
    }})
}

/// A launcher is a function named after its kernel, next to the module's own items and the
/// other launchers: a kernel whose launcher name would clash with one of them (`program`; or
/// `f'` and `f_prime`, both `f_prime` in Rust) is refused with this message.
fn launcher_clash(program: &sarek_compiler::front::tast::Program, rel: &str) -> Option<String> {
    let mut taken: Vec<(String, String)> = ["program", "SOURCE", "PATH", "MODULES"]
        .iter()
        .map(|n| (n.to_string(), format!("the module's own `{n}`")))
        .collect();
    for k in &program.kernels {
        let bare = bare(&rust_ident(&k.name));
        if let Some((_, other)) = taken.iter().find(|(t, _)| *t == bare) {
            // Between two kernels, the Rust name they share says why they clash.
            let launcher = if other.starts_with("kernel") {
                format!(" (launcher `{bare}`)")
            } else {
                String::new()
            };
            return Some(format!(
                "kernel `{}` in {rel} would clash with {other}{launcher}: rename the kernel, or \
                 use `include_kernel!` and `sarek::Program::compile`",
                k.name
            ));
        }
        taken.push((bare, format!("kernel `{}`", k.name)));
    }
    None
}

/// The Rust names of a launcher's parameters: [`rust_ident`] of each, with `_` appended
/// until it differs from the ones before (`x'` and `x_prime` are both `x_prime` in Rust).
fn param_idents<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<Ident> {
    let mut ids: Vec<Ident> = Vec::new();
    for name in names {
        let mut id = rust_ident(name);
        while ids.iter().any(|other| bare(other) == bare(&id)) {
            id = rust_ident(&format!("{}_", bare(&id)));
        }
        ids.push(id);
    }
    ids
}

/// An identifier without its `r#`: `r#gen` and `gen` are one name to Rust.
fn bare(id: &Ident) -> String {
    id.to_string().trim_start_matches("r#").to_string()
}

fn rust_scalar(s: Scalar) -> proc_macro2::TokenStream {
    match s {
        Scalar::Bool => quote!(bool),
        Scalar::I32 => quote!(i32),
        Scalar::I64 => quote!(i64),
        Scalar::F32 => quote!(f32),
        Scalar::F64 => quote!(f64),
    }
}

/// A Sarek identifier as a Rust one: `'` becomes `_prime`, Rust keywords get `r#` (or a
/// trailing `_` for those that cannot be raw). `gen`, reserved by the 2024 edition, is a
/// keyword syn does not know.
fn rust_ident(name: &str) -> Ident {
    let name = name.replace('\'', "_prime");
    match name.as_str() {
        "self" | "Self" | "super" | "crate" | "_" => format_ident!("{}_", name),
        "gen" => Ident::new_raw(&name, proc_macro2::Span::call_site()),
        _ if syn::parse_str::<Ident>(&name).is_ok() => format_ident!("{}", name),
        _ => Ident::new_raw(&name, proc_macro2::Span::call_site()),
    }
}

/// Run the front end; on errors, the rendered diagnostics (no colour).
fn check(name: &str, text: &str) -> Result<(), String> {
    front(name, text).map(|_| ())
}

fn front(name: &str, text: &str) -> Result<sarek_compiler::front::tast::Program, String> {
    let mut sources = sarek_compiler::SourceMap::new();
    let file = sources.add(name, text);
    sarek_compiler::check(&sources, file).map_err(|d| rejected(&d, &sources))
}

/// The `compile_error!` message of rejected diagnostics (no colour).
fn rejected(diags: &[sarek_compiler::Diagnostic], sources: &sarek_compiler::SourceMap) -> String {
    format!(
        "Sarek kernel rejected:\n{}",
        sarek_compiler::diag::render_all(diags, sources, false).trim_end()
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn diagnostics_are_rendered_with_their_location() {
        assert_eq!(
            super::check("ok.sarek", "let%kernel k (v : int32 vector) = v.(0) <- 1"),
            Ok(())
        );
        let msg = super::check(
            "bad.sarek",
            "let%kernel k (v : int32 vector) =\n  v.(0) <- undefined_name\n",
        )
        .unwrap_err();
        assert!(msg.starts_with("Sarek kernel rejected:\nerror"), "{msg}");
        assert!(msg.contains("bad.sarek:2:"), "{msg}");
        assert!(msg.contains("undefined_name"), "{msg}");
        assert!(!msg.ends_with('\n'), "{msg:?}");
    }

    #[test]
    fn inline_sources_keep_their_place_in_the_rust_file() {
        // `const K: &str = kernel_source!("let%kernel k (v : int32 vector) =` at line 3, the
        // literal at column 38, and the error on the next line.
        let value = "let%kernel k (v : int32 vector) =\n  v.(0) <- true";
        let token = format!("\"{value}\"");
        let padded = super::align(&token, value, 3, 38).unwrap();
        let msg = super::check("src/main.rs", &padded).unwrap_err();
        assert!(msg.contains("src/main.rs:4:12"), "{msg}");
        let raw = format!("r#\"{value}\"#");
        let padded = super::align(&raw, value, 3, 38).unwrap();
        assert!(padded.starts_with(&format!("\n\n{}let%kernel", " ".repeat(40))));
        // An escape makes the value differ from the text: no alignment.
        assert_eq!(super::align("\"a\\nb\"", "a\nb", 1, 1), None);
    }

    #[test]
    fn files_are_read_relative_to_the_crate_root_and_located_by_their_relative_path() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let (path, program) =
            super::read_and_check(&root, "examples/kernels/vector_add.sarek").unwrap();
        assert!(path.ends_with("examples/kernels/vector_add.sarek"));
        assert_eq!(program.kernels[0].name, "vector_add");
        // A type error in a file: exactly the error golden's rendering (the runner in
        // crates/sarek-compiler/tests/all/errors.rs registers it under the same relative path).
        let rel = "tests/errors/type_aggregate_eq_record.sarek";
        let Err(msg) = super::read_and_check(&root, rel) else {
            panic!("{rel} must be refused");
        };
        let expected =
            std::fs::read_to_string(root.join(rel.replace(".sarek", ".expected"))).unwrap();
        assert_eq!(
            msg,
            format!("Sarek kernel rejected:\n{}", expected.trim_end())
        );
        let clash = super::front(
            "p.sarek",
            "let%kernel program (v : int32 vector) = v.(0) <- 1",
        );
        assert_eq!(
            super::launcher_clash(&clash.unwrap(), "p.sarek").as_deref(),
            Some(
                "kernel `program` in p.sarek would clash with the module's own `program`: \
                 rename the kernel, or use `include_kernel!` and `sarek::Program::compile`"
            )
        );
        let Err(msg) = super::read_and_check(&root, "no/such.sarek") else {
            panic!("no/such.sarek does not exist");
        };
        assert!(msg.starts_with("cannot read Sarek kernel `"), "{msg}");
        assert!(msg.contains("no/such.sarek"), "{msg}");
    }

    #[test]
    fn launcher_names_never_clash_in_rust() {
        let ids: Vec<String> =
            super::param_idents(["x'", "x_prime", "kernel", "gen", "self", "self_", "fn"])
                .iter()
                .map(|i| i.to_string())
                .collect();
        assert_eq!(
            ids,
            [
                "x_prime", "x_prime_", "kernel", "r#gen", "self_", "self__", "r#fn"
            ]
        );
        // Two kernels with one launcher name: refused, naming both.
        let clash = super::front(
            "p.sarek",
            "let%kernel f' (v : int32 vector) = v.(0) <- 1\n\
             let%kernel f_prime (v : int32 vector) = v.(0) <- 2",
        )
        .unwrap();
        assert_eq!(
            super::launcher_clash(&clash, "p.sarek").as_deref(),
            Some(
                "kernel `f_prime` in p.sarek would clash with kernel `f'` (launcher `f_prime`): \
                 rename the kernel, or use `include_kernel!` and `sarek::Program::compile`"
            )
        );
        let fine = super::front(
            "p.sarek",
            "let%kernel gen (v : int32 vector) = v.(0) <- 1\n\
             let%kernel self (v : int32 vector) = v.(0) <- 2",
        )
        .unwrap();
        assert_eq!(super::launcher_clash(&fine, "p.sarek"), None);
    }

    #[test]
    fn a_device_is_read_only_up_to_the_limit() {
        let Err(msg) = super::read(std::path::Path::new("/"), "dev/zero") else {
            panic!("/dev/zero is not a kernel");
        };
        assert!(msg.contains("larger than the 64 MiB"), "{msg}");
    }

    /// A program of files under `crates/sarek-macros/target-test-modules/<case>`: `main.sarek`
    /// with `modules` as its module files.
    fn files(main: &str, modules: &[&str]) -> super::Files {
        let lit = |v: &str| syn::LitStr::new(v, proc_macro2::Span::call_site());
        super::Files {
            main: lit(main),
            modules: modules.iter().map(|m| lit(m)).collect(),
        }
    }

    #[test]
    fn module_files_are_checked_with_the_program_and_errors_located_in_their_file() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let main = "tests/upstream/modules/uses_geometry.sarek";
        let lib = "tests/upstream/modules/geometry_lib.sarek";
        // Alone, the main file names an unknown module, pointing at the main file.
        let Err(alone) = super::read_and_check_files(&root, &files(main, &[])) else {
            panic!("{main} needs its module");
        };
        assert!(alone.message.contains("Geometry_lib"), "{}", alone.message);
        assert_eq!(alone.at.value(), main);
        // With it (named twice, and the main file again: each read once).
        let checked = super::read_and_check_files(&root, &files(main, &[lib, main, lib]));
        let checked = checked.unwrap_or_else(|r| panic!("{}", r.message));
        assert_eq!(checked.paths.len(), 2);
        assert!(checked.paths[0].ends_with(main) && checked.paths[1].ends_with(lib));
        let names: Vec<&str> = checked
            .program
            .kernels
            .iter()
            .map(|k| k.name.as_str())
            .collect();
        assert_eq!(names, ["nearest", "opened"]);
        // A type error in a module: rendered at the module's file, pointing at its literal.
        let dir = std::env::temp_dir().join(format!("sarek-macros-modules-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("main.sarek"),
            "let%kernel k (v : int32 vector) = v.(0) <- Util.one",
        )
        .unwrap();
        std::fs::write(dir.join("util.sarek"), "let one : int32 =\n  true\n").unwrap();
        let Err(bad) = super::read_and_check_files(&dir, &files("main.sarek", &["util.sarek"]))
        else {
            panic!("util.sarek has a type error");
        };
        assert!(bad.message.contains("util.sarek:2:3"), "{}", bad.message);
        assert_eq!(bad.at.value(), "util.sarek");
        // An unreadable module file: the message names it, at its literal.
        let Err(missing) =
            super::read_and_check_files(&dir, &files("main.sarek", &["util.sarek", "nope.sarek"]))
        else {
            panic!("nope.sarek does not exist");
        };
        assert!(
            missing.message.starts_with("cannot read Sarek kernel `"),
            "{}",
            missing.message
        );
        assert_eq!(missing.at.value(), "nope.sarek");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
