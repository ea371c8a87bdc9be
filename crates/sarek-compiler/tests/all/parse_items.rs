//! Top-level items: type declarations, constants, helpers, kernels, attributes, and the
//! spans the parser records.

use crate::support::sexp as common;
use common::{parse_str, pat, sexp, ty};
use sarek_compiler::front::ast::*;

fn items(src: &str) -> Vec<Item> {
    match parse_str(src) {
        Ok(mut p) => std::mem::take(&mut p.items),
        Err(d) => panic!(
            "parse failed: {:?}",
            d.iter().map(|d| &d.message).collect::<Vec<_>>()
        ),
    }
}

#[test]
fn record_and_variant_declarations() {
    let it = items(
        "type point = { x : float32; mutable y : float32; }\n\
         type shape = Circle of float32 | Rect of float32 * float32 | Pair of (float32 * int32) | Empty\n\
         type t = | A | B of point vector [@@sarek.type]\n\
         type a = { f : int32 } and b = C of a",
    );
    assert_eq!(it.len(), 5);
    let ItemKind::Type(TypeDecl {
        name,
        kind: TypeDeclKind::Record(fields),
    }) = &it[0].kind
    else {
        panic!()
    };
    assert_eq!(name.name, "point");
    assert_eq!(
        fields
            .iter()
            .map(|f| (f.name.name.as_str(), f.mutable))
            .collect::<Vec<_>>(),
        [("x", false), ("y", true)]
    );
    let ItemKind::Type(TypeDecl {
        kind: TypeDeclKind::Variant(ctors),
        ..
    }) = &it[1].kind
    else {
        panic!()
    };
    let shown: Vec<String> = ctors
        .iter()
        .map(|c| {
            format!(
                "{}[{}]",
                c.name.name,
                c.args.iter().map(ty).collect::<Vec<_>>().join(",")
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            "Circle[float32]",
            "Rect[float32,float32]",
            "Pair[(* float32 int32)]",
            "Empty[]"
        ]
    );
    assert_eq!(it[2].attrs.len(), 1);
    assert_eq!(it[2].attrs[0].name, "sarek.type");
    let ItemKind::Type(TypeDecl {
        kind: TypeDeclKind::Variant(ctors),
        ..
    }) = &it[2].kind
    else {
        panic!()
    };
    assert_eq!(ty(&ctors[1].args[0]), "(point vector)");
    assert!(matches!(&it[4].kind, ItemKind::Type(TypeDecl { name, .. }) if name.name == "b"));
}

#[test]
fn constants_helpers_and_attributes() {
    let it = items(
        "let scale : float32 = 2.0\n\
         let swap (a : 'a vector) (i : int32) j : unit = a.(i) <- a.(j)\n\
         let rec fib (n : int32) : int32 [@sarek.inline 10] = if n < 2 then n else fib (n - 1) + fib (n - 2)\n\
         let unit_param () = 1",
    );
    let ItemKind::Const { name, ty: t, value } = &it[0].kind else {
        panic!()
    };
    assert_eq!(
        (name.name.as_str(), ty(t).as_str(), sexp(value).as_str()),
        ("scale", "float32", "2.0")
    );
    let ItemKind::Fun(f) = &it[1].kind else {
        panic!()
    };
    assert!(!f.recursive);
    assert_eq!(ty(f.params[0].ty.as_ref().unwrap()), "('a vector)");
    assert!(f.params[2].ty.is_none());
    assert_eq!(ty(f.ret.as_ref().unwrap()), "unit");
    let ItemKind::Fun(f) = &it[2].kind else {
        panic!()
    };
    assert!(f.recursive);
    assert_eq!(f.attrs.len(), 1);
    assert_eq!(
        (f.attrs[0].name.as_str(), f.attrs[0].payload.as_str()),
        ("sarek.inline", "10")
    );
    let ItemKind::Fun(f) = &it[3].kind else {
        panic!()
    };
    assert_eq!(f.params.len(), 1);
    assert_eq!(ty(f.params[0].ty.as_ref().unwrap()), "unit");
}

#[test]
fn kernel_forms() {
    let it = items(
        "let%kernel k (v : float32 vector) (n : int32) = v.(0) <- 1.0\n\
         let k2 = [%kernel fun (v : (float32 * int32) vector) -> ()]\n\
         [@@sarek.module]\n\
         let%kernel[@sarek.module] k3 (x : int32) : unit = ()",
    );
    let ItemKind::Kernel(k) = &it[0].kind else {
        panic!()
    };
    assert_eq!(k.name.name, "k");
    assert_eq!(k.params.len(), 2);
    let ItemKind::Kernel(k) = &it[1].kind else {
        panic!()
    };
    assert_eq!(k.name.name, "k2");
    assert_eq!(
        ty(k.params[0].ty.as_ref().unwrap()),
        "((* float32 int32) vector)"
    );
    assert_eq!(it[1].attrs[0].name, "sarek.module");
    assert_eq!(it[2].attrs[0].name, "sarek.module");
}

#[test]
fn spans_cover_the_source() {
    let src = "let%kernel k (v : int32 vector) =\n  let i = global_thread_id in\n  v.(i) <- i + 1";
    let it = items(src);
    assert_eq!(it[0].span.start, 0);
    assert_eq!(it[0].span.end as usize, src.len());
    let ItemKind::Kernel(k) = &it[0].kind else {
        panic!()
    };
    let ExprKind::Let {
        pattern,
        value,
        body,
        ..
    } = &k.body.kind
    else {
        panic!()
    };
    assert_eq!(pat(pattern), "i");
    let text = |s: sarek_compiler::Span| &src[s.start as usize..s.end as usize];
    assert_eq!(text(pattern.span()), "i");
    assert_eq!(text(value.span), "global_thread_id");
    assert_eq!(text(body.span), "v.(i) <- i + 1");
    let ExprKind::IndexSet { value, .. } = &body.kind else {
        panic!()
    };
    assert_eq!(text(value.span), "i + 1");
    assert_eq!(text(k.params[0].span), "(v : int32 vector)");
}

#[test]
fn comments_nest_and_separators_are_skipped() {
    let it = items("(* a (* b *) \"*)\" *) let x : int32 = 1;; ;; let y : int32 = (* c *) 2");
    assert_eq!(it.len(), 2);
}

#[test]
fn tabs_count_as_eight_columns_for_the_offside_hint() {
    // `a` (two tabs, column 16) is right of the `let` (column 4): an argument of `g`.
    let it = items("let f (x : int32) : int32 =\n    let y = g\n\t\ta in y");
    let ItemKind::Fun(f) = &it[0].kind else {
        panic!()
    };
    assert_eq!(sexp(&f.body), "(let y (app g a) y)");
}

#[test]
fn a_line_starting_left_of_the_let_is_not_an_argument() {
    let err =
        parse_str("let%kernel k (v : int32 vector) =\n  let i = f\n  v.(i) <- 0").unwrap_err();
    assert_eq!(
        err[0].message,
        "expected `in` after let binding, found identifier `v`"
    );
    // Further right it is an argument, as in OCaml.
    assert!(
        parse_str("let%kernel k (v : int32 vector) =\n  let i = f\n    v in v.(i) <- 0").is_ok()
    );
}
