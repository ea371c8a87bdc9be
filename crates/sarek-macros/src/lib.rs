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
//!
//! - `kernel_module!(pub mod saxpy = "kernels/saxpy.sarek")` (attributes such as `/// docs`
//!   may precede `pub mod`): a module with the checked `SOURCE`, `program()` to compile it,
//!   and one typed launcher per kernel,
//!   `saxpy::saxpy(&kernel, &mut x, &mut y, 2.0f32, n)`, whose Rust parameter types follow the
//!   kernel's (`T vector` of a scalar is `&mut sarek::Vector<T>`, other vectors
//!   `&mut sarek::HostVector`, records/tuples/variants by value their leaves as
//!   `Vec<sarek::Literal>`, see `sarek::Kernel::value`); it returns the `sarek::Launch` to
//!   configure (`.config`) and `.run(&*device)`. A kernel named `program`, `SOURCE` or
//!   `PATH` is refused (its launcher would clash with the module's items).
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

/// Check a Sarek file (path relative to the crate root) at compile time; expands to its text.
#[proc_macro]
pub fn include_kernel(input: TokenStream) -> TokenStream {
    let lit = parse_macro_input!(input as LitStr);
    let rel = lit.value();
    match read_and_check(&manifest_dir(), &rel) {
        Ok((path, _)) => {
            let abs = path.display().to_string();
            quote_spanned!(lit.span()=> include_str!(#abs)).into()
        }
        Err(msg) => quote_spanned!(lit.span()=> compile_error!(#msg)).into(),
    }
}

/// The including crate's root: relative kernel paths start there.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(Into::into)
        .unwrap_or_else(|| ".".into())
}

/// Read `root/rel` and run the front end on it, registered as `rel` for its diagnostics.
/// Returns the full path (for `include_str!`) and the typed program, or the message of the
/// `compile_error!`.
fn read_and_check(
    root: &std::path::Path,
    rel: &str,
) -> Result<(std::path::PathBuf, sarek_compiler::front::tast::Program), String> {
    let path = root.join(rel);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read Sarek kernel `{}`: {e}", path.display()))?;
    front(rel, &text).map(|program| (path, program))
}

/// `[VIS] mod NAME = "path"`.
struct ModuleSpec {
    /// Outer attributes (`/// docs`, `#[allow(..)]`) for the generated module.
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    path: LitStr,
}

impl Parse for ModuleSpec {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        input.parse::<Token![mod]>()?;
        let name = input.parse()?;
        input.parse::<Token![=]>()?;
        let path = input.parse()?;
        Ok(ModuleSpec {
            attrs,
            vis,
            name,
            path,
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
        path: lit,
    } = parse_macro_input!(input as ModuleSpec);
    let rel = lit.value();
    let (path, program) = match read_and_check(&manifest_dir(), &rel) {
        Ok(found) => found,
        Err(msg) => return quote_spanned!(lit.span()=> compile_error!(#msg);).into(),
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
        // The launcher's own first parameter, renamed past any kernel parameter `kernel`.
        let mut kid = String::from("kernel");
        while k.params.iter().any(|p| rust_ident(&p.name) == kid) {
            kid.push('_');
        }
        let kid = format_ident!("{}", kid);
        for p in &k.params {
            let id = rust_ident(&p.name);
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
    let abs = path.display().to_string();
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
            /// Compile the source (it checked at build time, so this fails only if the
            /// compiler changed in between).
            pub fn program() -> ::std::result::Result<::sarek::Program, ::sarek::Error> {
                ::sarek::Program::compile(PATH, SOURCE)
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
    let (path, _) = read_and_check(&manifest_dir(), &rel).map_err(|m| (lit.span(), m))?;
    let text = std::fs::read_to_string(&path).map_err(|e| (lit.span(), e.to_string()))?;
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

/// A launcher is a function named after its kernel, next to the module's own items: a
/// kernel whose name would clash with one of them is refused with this message.
fn launcher_clash(program: &sarek_compiler::front::tast::Program, rel: &str) -> Option<String> {
    let k = program.kernels.iter().find(|k| {
        ["program", "SOURCE", "PATH"].contains(&rust_ident(&k.name).to_string().as_str())
    })?;
    Some(format!(
        "kernel `{}` in {rel} would clash with the module's own `{}`: rename the kernel, or \
         use `include_kernel!` and `sarek::Program::compile`",
        k.name, k.name
    ))
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
/// trailing `_` for those that cannot be raw).
fn rust_ident(name: &str) -> Ident {
    let name = name.replace('\'', "_prime");
    match name.as_str() {
        "self" | "Self" | "super" | "crate" | "_" => format_ident!("{}_", name),
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
    sarek_compiler::check(&sources, file).map_err(|d| {
        format!(
            "Sarek kernel rejected:\n{}",
            sarek_compiler::diag::render_all(&d, &sources, false).trim_end()
        )
    })
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
        // crates/sarek-compiler/tests/errors.rs registers it under the same relative path).
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
}
