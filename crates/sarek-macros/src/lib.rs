//! Compile-time checked Sarek kernels.
//!
//! Both macros run the Sarek front end (parse, type check, monomorphisation, recursion and
//! convergence checks) while rustc expands them, and expand to the kernel source as a
//! `&'static str`. A Sarek error becomes a Rust `compile_error!` carrying the rendered
//! diagnostic (`error: ...`, `--> file:line:col`, the source line and carets), pointing at the
//! macro's argument.
//!
//! - `kernel_source!("let%kernel k ... = ...")`: an inline source.
//! - `include_kernel!("kernels/k.sarek")`: a file, relative to the including crate's
//!   `CARGO_MANIFEST_DIR` (proc-macros cannot see the including file's directory on stable);
//!   it expands through `include_str!` so cargo rebuilds when the file changes.
//!
//! The facade crate re-exports both (`sarek::include_kernel!`); `sarek::Program::compile`
//! then compiles the checked text at run time without surprises.

use proc_macro::TokenStream;
use quote::quote_spanned;
use syn::{LitStr, parse_macro_input};

/// Check an inline Sarek source at compile time; expands to the source text.
#[proc_macro]
pub fn kernel_source(input: TokenStream) -> TokenStream {
    let lit = parse_macro_input!(input as LitStr);
    let text = lit.value();
    match check("<kernel_source!>", &text) {
        Ok(()) => quote_spanned!(lit.span()=> #lit).into(),
        Err(msg) => quote_spanned!(lit.span()=> compile_error!(#msg)).into(),
    }
}

/// Check a Sarek file (path relative to the crate root) at compile time; expands to its text.
#[proc_macro]
pub fn include_kernel(input: TokenStream) -> TokenStream {
    let lit = parse_macro_input!(input as LitStr);
    let rel = lit.value();
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let path = std::path::Path::new(&root).join(&rel);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            let msg = format!("cannot read Sarek kernel `{}`: {e}", path.display());
            return quote_spanned!(lit.span()=> compile_error!(#msg)).into();
        }
    };
    match check(&rel, &text) {
        Ok(()) => {
            let abs = path.display().to_string();
            quote_spanned!(lit.span()=> include_str!(#abs)).into()
        }
        Err(msg) => quote_spanned!(lit.span()=> compile_error!(#msg)).into(),
    }
}

/// Run the front end; on errors, the rendered diagnostics (no colour).
fn check(name: &str, text: &str) -> Result<(), String> {
    let mut sources = sarek_compiler::SourceMap::new();
    let file = sources.add(name, text);
    sarek_compiler::check(&sources, file)
        .map(|_| ())
        .map_err(|d| {
            format!(
                "Sarek kernel rejected:\n{}",
                sarek_compiler::diag::render_all(&d, &sources, false)
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
    }
}
