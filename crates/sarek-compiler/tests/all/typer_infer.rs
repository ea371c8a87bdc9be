//! Typed output of the checker on the tricky cases: literal defaulting, polymorphism,
//! records resolved by field set, local helper lifting, intrinsic overloads.

use sarek_compiler::diag::{SourceMap, render_all};
use sarek_compiler::front::tast::{Expr, ExprKind, Program, Ty};
use sarek_compiler::front::{mono, parser, typer};
use sarek_compiler::intrinsics::{AtomicOp, Intrinsic, MathFn};
use sarek_compiler::types::{Literal, Scalar};

fn typed(src: &str) -> Program {
    let mut sm = SourceMap::new();
    let f = sm.add("test.sarek", src);
    let ast = parser::parse(f, src)
        .unwrap_or_else(|d| panic!("parse error:\n{}", render_all(&d, &sm, false)));
    typer::check_program(&ast)
        .unwrap_or_else(|d| panic!("type error:\n{}", render_all(&d, &sm, false)))
}

fn errors(src: &str) -> String {
    let mut sm = SourceMap::new();
    let f = sm.add("test.sarek", src);
    let ast = parser::parse(f, src)
        .unwrap_or_else(|d| panic!("parse error:\n{}", render_all(&d, &sm, false)));
    match typer::check_program(&ast).and_then(mono::monomorphise) {
        Ok(_) => panic!("expected a type error"),
        Err(d) => render_all(&d, &sm, false),
    }
}

/// Every sub-expression, pre-order.
fn all_exprs(e: &Expr) -> Vec<&Expr> {
    let mut out = vec![e];
    let kids = e.children();
    for k in kids {
        out.extend(all_exprs(k));
    }
    out
}

fn kernel_exprs<'p>(p: &'p Program, name: &str) -> Vec<&'p Expr> {
    all_exprs(
        &p.kernels
            .iter()
            .find(|k| k.name == name)
            .expect("kernel")
            .body,
    )
}

fn literals(p: &Program, kernel: &str) -> Vec<(Literal, Ty)> {
    kernel_exprs(p, kernel)
        .into_iter()
        .filter_map(|e| match &e.kind {
            ExprKind::Lit(l) => Some((*l, e.ty.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn float_literal_defaults_to_float32() {
    let p = typed("let%kernel k (v : float32 vector) = let x = 2.5 in v.(0) <- x");
    let lits = literals(&p, "k");
    assert!(lits.contains(&(Literal::F32(2.5), Ty::F32)), "{lits:?}");
    assert!(lits.contains(&(Literal::I32(0), Ty::I32)), "{lits:?}");
}

#[test]
fn float_literal_becomes_float64_by_inference() {
    // Nothing annotates `d`: its use as a float64 element decides the literal's width.
    let p = typed("let%kernel k (v : float64 vector) = let d = 0.1 in v.(0) <- d *. 3.0");
    let lits = literals(&p, "k");
    assert!(lits.contains(&(Literal::F64(0.1), Ty::F64)), "{lits:?}");
    assert!(lits.contains(&(Literal::F64(3.0), Ty::F64)), "{lits:?}");
    // The value keeps full float64 precision (not rounded through float32).
    assert!(lits.iter().all(|(l, _)| !matches!(l, Literal::F32(_))));
}

#[test]
fn annotated_let_makes_literal_float64() {
    let p =
        typed("let%kernel k (v : float64 vector) = let d : float64 = 1.5 in v.(0) <- d +. 1.0d");
    let lits = literals(&p, "k");
    assert!(lits.contains(&(Literal::F64(1.5), Ty::F64)));
    assert!(lits.contains(&(Literal::F64(1.0), Ty::F64)));
}

#[test]
fn integer_literals() {
    let p =
        typed("let%kernel k (v : int64 vector) (w : int32 vector) = v.(0) <- 5L; w.(0) <- 0xff");
    let lits = literals(&p, "k");
    assert!(lits.contains(&(Literal::I64(5), Ty::I64)));
    assert!(lits.contains(&(Literal::I32(255), Ty::I32)));
}

#[test]
fn polymorphic_helper_used_at_two_types() {
    let src = "
let pick (c : bool) (a : 'a) (b : 'a) : 'a = if c then a else b
let%kernel k (f : float32 vector) (i : int32 vector) =
  f.(0) <- pick true f.(1) f.(2);
  i.(0) <- pick false i.(1) 7
";
    let p = typed(src);
    let pick = p.functions.iter().find(|f| f.name == "pick").unwrap();
    assert_eq!(pick.type_params, 1);
    assert_eq!(pick.ret, Ty::Param(0));
    let mut calls: Vec<Vec<Ty>> = kernel_exprs(&p, "k")
        .into_iter()
        .filter_map(|e| match &e.kind {
            ExprKind::Call { type_args, .. } => Some(type_args.clone()),
            _ => None,
        })
        .collect();
    calls.sort_by_key(|t| format!("{t:?}"));
    assert_eq!(calls, vec![vec![Ty::F32], vec![Ty::I32]]);

    let m = mono::monomorphise(p).unwrap();
    let mut names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    names.sort();
    assert_eq!(names, vec!["pick__f32", "pick__i32"]);
}

#[test]
fn unannotated_helper_is_generalised_with_numeric_constraint() {
    let src = "
let add a b = a + b
let%kernel k (f : float32 vector) (i : int64 vector) =
  f.(0) <- add f.(1) 2.0;
  i.(0) <- add i.(1) 3L
";
    let p = typed(src);
    let add = p.functions.iter().find(|f| f.name == "add").unwrap();
    assert_eq!(add.type_params, 1);
    // ...but not at bool: the constraint travels with the type parameter.
    let err =
        errors("let add a b = a + b\nlet%kernel k (b : bool vector) = b.(0) <- add true false");
    assert!(
        err.contains("cannot be used on a value of type `bool`"),
        "{err}"
    );
}

#[test]
fn records_resolved_by_field_set() {
    let src = "
type p2 = { x : float32; y : float32 }
type p3 = { x : float32; y : float32; z : float32 }
let%kernel k (a : p2 vector) (b : p3 vector) =
  a.(0) <- { x = 1.0; y = 2.0 };
  b.(0) <- { y = 1.0; x = 2.0; z = 3.0 };
  let q : p2 = a.(1) in
  a.(2) <- { x = q.x; y = q.y }
";
    let p = typed(src);
    let recs: Vec<(u32, Ty)> = kernel_exprs(&p, "k")
        .into_iter()
        .filter_map(|e| match &e.kind {
            ExprKind::Record { record, .. } => Some((record.0, e.ty.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(recs.len(), 3);
    assert_eq!(recs[0].0, 0);
    assert_eq!(recs[1].0, 1);
    assert_eq!(recs[2].0, 0);
    // Field accesses on q resolve through its annotation to p2 (index 0), not the later p3.
    let fields: Vec<u32> = kernel_exprs(&p, "k")
        .into_iter()
        .filter_map(|e| match &e.kind {
            ExprKind::Field { record, .. } => Some(record.0),
            _ => None,
        })
        .collect();
    assert_eq!(fields, vec![0, 0]);
}

#[test]
fn local_helper_is_lifted_with_captures_first() {
    let src = "
let%kernel k (v : float32 vector) (a : float32) =
  let scale (x : float32) = x *. a in
  v.(0) <- scale v.(1)
";
    let p = typed(src);
    let f = p.functions.iter().find(|f| f.name == "k__scale").unwrap();
    let names: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, vec!["a", "x"]);
    let call_args = kernel_exprs(&p, "k")
        .into_iter()
        .find_map(|e| match &e.kind {
            ExprKind::Call { args, .. } => Some(args.len()),
            _ => None,
        })
        .unwrap();
    assert_eq!(call_args, 2);
}

#[test]
fn intrinsics_resolve_with_types() {
    let src = "
let%kernel k (v : float64 vector) (h : int32 vector) (f : float32 vector) =
  let open Float64 in
  v.(0) <- sqrt v.(1);
  f.(0) <- Float32.sqrt f.(1) +. float32 h.(0);
  ignore (atomic_add_global_int32 h 0 1);
  v.(2) <- Float64.of_float32 f.(2)
";
    let p = typed(src);
    let ints: Vec<(Intrinsic, Ty)> = kernel_exprs(&p, "k")
        .into_iter()
        .filter_map(|e| match &e.kind {
            ExprKind::Intrinsic { op, .. } => Some((*op, e.ty.clone())),
            _ => None,
        })
        .collect();
    assert!(ints.contains(&(Intrinsic::Math(MathFn::Sqrt), Ty::F64)));
    assert!(ints.contains(&(Intrinsic::Math(MathFn::Sqrt), Ty::F32)));
    assert!(ints.contains(&(Intrinsic::Atomic(AtomicOp::Add), Ty::I32)));
    assert!(ints.contains(&(Intrinsic::Convert, Ty::F64)));
    assert!(ints.contains(&(Intrinsic::Convert, Ty::F32)));
}

#[test]
fn shared_and_local_arrays() {
    let src = "
let tile : int32 = 64
let%kernel k (v : float32 vector) =
  let%shared (s : float32) = tile * 2 in
  let a = create_array 4 Local in
  a.(0) <- 1.0;
  s.(thread_idx_x) <- a.(0);
  block_barrier ();
  v.(0) <- s.(1)
";
    let p = typed(src);
    let decls: Vec<Ty> = kernel_exprs(&p, "k")
        .into_iter()
        .filter_map(|e| match &e.kind {
            ExprKind::LetShared { var, .. } | ExprKind::LetLocalArray { var, .. } => {
                Some(var.ty.clone())
            }
            _ => None,
        })
        .collect();
    use sarek_compiler::types::MemSpace;
    assert_eq!(
        decls,
        vec![
            Ty::Array {
                elem: Box::new(Ty::F32),
                space: MemSpace::Shared,
                size: Some(128)
            },
            Ty::Array {
                elem: Box::new(Ty::F32),
                space: MemSpace::Local,
                size: Some(4)
            },
        ]
    );
}

#[test]
fn polymorphic_helpers_calling_each_other_over_records() {
    let src = "
type point = { x : float32; y : float32 }
let get (v : 'a vector) (i : int32) : 'a = v.(i)
let swap (a : 'a vector) (i : int32) (j : int32) : unit =
  let t = get a i in a.(i) <- a.(j); a.(j) <- t
let%kernel k (ps : point vector) (fs : float32 vector) =
  swap ps 0 1;
  swap fs 0 1
";
    let m = mono::monomorphise(typed(src)).unwrap();
    let mut names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            "get__vec_f32",
            "get__vec_point",
            "swap__vec_f32",
            "swap__vec_point"
        ]
    );
    for f in &m.functions {
        assert_eq!(f.type_params, 0);
    }
}

#[test]
fn mono_instance_names_avoid_user_names() {
    let src = "
let pick__f32 (x : int32) : int32 = x
let pick (a : 'a) : 'a = a
let%kernel k (v : float32 vector) (w : int32 vector) = v.(0) <- pick v.(1); w.(0) <- pick__f32 w.(1)
";
    let m = mono::monomorphise(typed(src)).unwrap();
    let mut names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    names.sort();
    assert_eq!(names, vec!["pick__f32", "pick__f32_2"]);
}

#[test]
fn recursion_and_hints_are_recorded() {
    let src = "
let rec fib (n : int32) : int32 [@sarek.inline 6] = if n < 2 then n else fib (n - 1) + fib (n - 2)
let rec fact (n : int32) : int32 = pragma [\"sarek.inline 3\"] (if n < 2 then 1 else n * fact (n - 1))
let rec down (n : int32) : int32 [@inline 2] = if n < 1 then 0 else 1 + down (n - 1)
let rec up (n : int32) : int32 = if n < 1 then 0 else 1 + up (n - 1) [@@sarek.inline 3]
let%kernel k (v : int32 vector) =
  for i = 0 to 3 do v.(i) <- fib i + fact i + down i + up i done [@unroll 4]
";
    let p = typed(src);
    let fib = p.functions.iter().find(|f| f.name == "fib").unwrap();
    assert!(fib.recursive);
    let fib_mark = fib.inline_depth.as_ref().expect("marked");
    assert_eq!(fib_mark.depth, 6);
    // Messages quote the mark in the form written.
    assert_eq!(fib_mark.to_string(), "[@sarek.inline 6]");
    let fact = p.functions.iter().find(|f| f.name == "fact").unwrap();
    let fact_mark = fact.inline_depth.as_ref().expect("marked");
    assert_eq!(fact_mark.depth, 3);
    assert_eq!(fact_mark.to_string(), "pragma [\"sarek.inline 3\"]");
    let down = p.functions.iter().find(|f| f.name == "down").unwrap();
    let down_mark = down.inline_depth.as_ref().expect("marked");
    assert_eq!(down_mark.to_string(), "[@inline 2]");
    // An item attribute after a top-level helper is its mark, as in a kernel prelude.
    let up = p.functions.iter().find(|f| f.name == "up").unwrap();
    let up_mark = up.inline_depth.as_ref().expect("marked");
    assert_eq!(up_mark.to_string(), "[@@sarek.inline 3]");
    let unroll = kernel_exprs(&p, "k")
        .into_iter()
        .find_map(|e| match &e.kind {
            ExprKind::For { hints, .. } => Some(hints.unroll),
            _ => None,
        });
    assert_eq!(unroll, Some(Some(4)));
}

#[test]
fn one_armed_if_and_match_types() {
    let src = "
type shape = Circle of float32 | Rect of float32 * float32 | Empty
let area (s : shape) : float32 =
  match s with Circle r -> 3.0 *. r *. r | Rect (w, h) -> w *. h | Empty -> 0.0
let%kernel k (v : shape vector) (out : float32 vector) =
  if thread_idx_x = 0 then out.(0) <- area v.(0)
";
    let p = typed(src);
    let area = p.functions.iter().find(|f| f.name == "area").unwrap();
    assert_eq!(area.ret, Ty::Scalar(Scalar::F32));
}

#[test]
fn var_ids_are_unique_after_mono() {
    let src = "
let pick (c : bool) (a : 'a) (b : 'a) : 'a = let r = if c then a else b in r
let%kernel k (f : float32 vector) (i : int32 vector) =
  let x = pick true f.(1) f.(2) in
  f.(0) <- x;
  i.(0) <- pick false i.(1) 7
";
    let m = mono::monomorphise(typed(src)).unwrap();
    let mut ids = Vec::new();
    for f in &m.functions {
        ids.extend(f.params.iter().map(|p| p.id));
        for e in all_exprs(&f.body) {
            if let ExprKind::Let {
                pattern: sarek_compiler::front::tast::Pattern::Bind(d),
                ..
            } = &e.kind
            {
                ids.push(d.id);
            }
        }
    }
    for k in &m.kernels {
        ids.extend(k.params.iter().map(|p| p.id));
    }
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate VarIds after mono");
}

#[test]
fn helper_over_arrays_is_instantiated_per_memory_space() {
    let src = "
let sum (a : float32 array) (n : int32) : float32 =
  let mut s = 0.0 in
  for i = 0 to n - 1 do s := s +. a.(i) done;
  s
let%kernel k (v : float32 vector) =
  let%shared (t : float32) = 32 in
  let l = create_array 4 Local in
  l.(0) <- 1.0;
  t.(thread_idx_x) <- v.(thread_idx_x);
  block_barrier ();
  if thread_idx_x = 0 then v.(0) <- sum t 32 +. sum l 4
";
    let p = typed(src);
    assert_eq!(p.functions[0].type_params, 1);
    let m = mono::monomorphise(p).unwrap();
    let mut names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    names.sort();
    assert_eq!(names, vec!["sum__locarr4_f32", "sum__sharr32_f32"]);
    use sarek_compiler::types::MemSpace;
    let shared = m
        .functions
        .iter()
        .find(|f| f.name == "sum__sharr32_f32")
        .unwrap();
    assert_eq!(
        shared.params[0].ty,
        Ty::Array {
            elem: Box::new(Ty::F32),
            space: MemSpace::Shared,
            size: Some(32)
        }
    );
}

#[test]
fn intrinsic_result_types() {
    let src = "
let%kernel k (a : int64 vector) (b : int32 vector) (f : float64 vector) (m : bool vector) =
  a.(0) <- clz a.(1);
  b.(0) <- warp_ballot m.(0);
  m.(1) <- warp_vote_all m.(2);
  f.(0) <- warp_shuffle_down f.(1) 1;
  b.(1) <- popcount b.(2) + min b.(3) 4 + abs (-3);
  f.(1) <- fma f.(2) f.(3) 1.0 +. Math.pow f.(4) 2.0;
  b.(2) <- int32 (float64 b.(4) *. 0.5) + int_of_float (float_of_int 3)
";
    let p = typed(src);
    let lits = literals(&p, "k");
    // `1.0` and `2.0` meet float64 operands: float64 literals.
    assert!(
        lits.contains(&(Literal::F64(1.0), Ty::F64))
            && lits.contains(&(Literal::F64(2.0), Ty::F64))
    );
    let ints: Vec<(Intrinsic, Ty)> = kernel_exprs(&p, "k")
        .into_iter()
        .filter_map(|e| match &e.kind {
            ExprKind::Intrinsic { op, .. } => Some((*op, e.ty.clone())),
            _ => None,
        })
        .collect();
    use sarek_compiler::intrinsics::WarpOp;
    assert!(ints.contains(&(Intrinsic::Clz, Ty::I64)));
    assert!(ints.contains(&(Intrinsic::Warp(WarpOp::Ballot), Ty::I32)));
    assert!(ints.contains(&(Intrinsic::Warp(WarpOp::VoteAll), Ty::BOOL)));
    assert!(ints.contains(&(Intrinsic::Warp(WarpOp::ShuffleDown), Ty::F64)));
    assert!(ints.contains(&(Intrinsic::Math(MathFn::Fma), Ty::F64)));
    assert!(ints.contains(&(Intrinsic::Math(MathFn::Pow), Ty::F64)));
    assert!(ints.contains(&(Intrinsic::Abs, Ty::I32)));
}

#[test]
fn several_independent_errors_are_all_reported() {
    let err = errors(
        "let%kernel a (v : float32 vector) = v.(0) <- 1\n\
         let%kernel b (v : int32 vector) = v.(0) <- undefined_thing\n\
         let%kernel c (v : int32 vector) = let x = 1 in x := 2; v.(0) <- x\n",
    );
    assert_eq!(err.matches("error:").count(), 3, "{err}");
    assert!(err.contains("mismatched types"));
    assert!(err.contains("unknown variable `undefined_thing`"));
    assert!(err.contains("`x` is immutable"));
}

#[test]
fn helper_names_are_unique() {
    let src = "
let f (x : int32) : int32 = x + 1
let f (x : int32) : int32 = f x * 2
let%kernel k (v : int32 vector) =
  let g (y : int32) = y + 1 in
  v.(0) <- g (f 1);
  let g (y : int32) = y * 3 in
  v.(1) <- g 2
";
    let m = mono::monomorphise(typed(src)).unwrap();
    let mut names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    names.sort();
    assert_eq!(names, vec!["f", "f_2", "k__g", "k__g_2"]);
}

#[test]
fn local_helper_inside_polymorphic_helper_is_instantiated_with_it() {
    let src = "
type point = { x : float32; y : float32 }
let shift (v : 'a vector) (i : int32) : unit =
  let get (j : int32) = v.(j) in
  v.(i) <- get (i + 1)
let%kernel k (p : point vector) (f : float32 vector) = shift p 0; shift f 0
";
    let p = typed(src);
    let get = p.functions.iter().find(|f| f.name == "shift__get").unwrap();
    assert_eq!(get.type_params, 1);
    let m = mono::monomorphise(p).unwrap();
    let mut names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            "shift__get__vec_f32",
            "shift__get__vec_point",
            "shift__vec_f32",
            "shift__vec_point"
        ]
    );
}

#[test]
fn exhaustiveness_over_nested_patterns() {
    let shape = "type shape = Circle of float32 | Rect of float32 * float32 | Empty\n";
    let ok = format!(
        "{shape}let%kernel k (s : shape vector) (b : bool vector) (o : int32 vector) =
  o.(0) <- (match (s.(0), b.(0)) with
    | (Circle _, true) -> 1
    | (Circle _, false) -> 2
    | (Rect (_, _), _) | (Empty, true) -> 3
    | (Empty, false) -> 4);
  o.(1) <- (match s.(1) with Circle _ | Empty -> 0 | Rect (w, h) -> int32 (w *. h))"
    );
    typed(&ok);
    let missing = format!(
        "{shape}let%kernel k (s : shape vector) (b : bool vector) (o : int32 vector) =
  o.(0) <- (match (s.(0), b.(0)) with
    | (Circle _, _) -> 1
    | (Rect (_, _), true) -> 3
    | (Empty, _) -> 4)"
    );
    let err = errors(&missing);
    assert!(
        err.contains("pattern `(Rect (_, _), false)` not covered"),
        "{err}"
    );
    let redundant = format!(
        "{shape}let%kernel k (s : shape vector) (o : int32 vector) =
  o.(0) <- (match s.(0) with Circle _ | Empty -> 0 | Rect (_, _) -> 1 | Empty -> 2)"
    );
    let err = errors(&redundant);
    assert!(err.contains("this match arm is unreachable"), "{err}");
}
