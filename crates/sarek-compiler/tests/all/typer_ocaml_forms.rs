//! OCaml spellings an outside user writes from LANGUAGE.md are accepted and mean what OCaml
//! says: each kernel runs on the reference interpreter and its results are compared with
//! values computed by hand (in the comments) or in Rust.

use sarek_compiler::diag::{SourceMap, render_all};
use sarek_compiler::ir::Kernel;
use sarek_compiler::types::Literal;
use sarek_runtime::device::LaunchConfig;
use sarek_runtime::value::{ArgValue, Column, HostVector};

fn lower(src: &str, name: &str) -> Kernel {
    let mut sources = SourceMap::new();
    let file = sources.add("forms.sarek", src);
    let program = sarek_compiler::check(&sources, file)
        .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
    let k = sarek_compiler::lower_kernel(&program, name)
        .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
    sarek_compiler::ir::validate::validate(&k).expect("valid IR");
    k
}

fn errors(src: &str) -> String {
    let mut sources = SourceMap::new();
    let file = sources.add("forms.sarek", src);
    match sarek_compiler::check(&sources, file) {
        Ok(_) => panic!("expected an error"),
        Err(d) => render_all(&d, &sources, false),
    }
}

/// Run `name` (params: `ints : int32 vector`, `floats : float32 vector`, `n : int32`) on
/// one thread; returns both vectors.
fn run(src: &str, name: &str, len: usize) -> (Vec<i32>, Vec<f32>) {
    let k = lower(src, name);
    let mut args = vec![
        ArgValue::Vector(HostVector {
            columns: vec![Column::I32(vec![0; len])],
            len,
        }),
        ArgValue::Vector(HostVector {
            columns: vec![Column::F32(vec![0.0; len])],
            len,
        }),
        ArgValue::Scalar(Literal::I32(len as i32)),
    ];
    sarek_runtime::interp::run(&k, LaunchConfig::linear(1), &mut args).expect("runs");
    let ArgValue::Vector(HostVector { columns, .. }) = &args[0] else {
        panic!()
    };
    let Column::I32(ints) = &columns[0] else {
        panic!()
    };
    let ArgValue::Vector(HostVector { columns, .. }) = &args[1] else {
        panic!()
    };
    let Column::F32(floats) = &columns[0] else {
        panic!()
    };
    (ints.clone(), floats.clone())
}

#[test]
fn layout_never_rejects_a_valid_program() {
    // The argument `n` starts a line left of its `let`: OCaml ignores layout.
    let src = "
let%kernel k (ints : int32 vector) (floats : float32 vector) (n : int32) =
  let t = max 3
  n in
  ints.(0) <- t
";
    assert_eq!(run(src, "k", 5).0[0], 5);
}

#[test]
fn ocaml_spellings_compute_what_ocaml_computes() {
    let src = r#"
(* a comment (* nested *) with "a *) in a string" *)
type point = { x : float32; y : float32 }

let sum_pair (a, b) = a + b
let dist2 ({ x; y } : point) : float32 = x *. x +. y *. y
let norm1 ((p, q) : float32 * float32) = abs_float p +. abs_float q

let%kernel k (ints : int32 vector) (floats : float32 vector) (n : int32) =
  let r = ref 0 in
  for j = 1 to 4 do
    r := !r + j;
  done;
  ints.(0) <- !r;                                  (* 10 *)
  let p = 7 in
  let p = 1 and q = p + 1 in
  ints.(1) <- p * 10 + q;                          (* 18: q sees the outer p *)
  let y = 5 in
  ints.(2) <- ~- y + -y;                           (* -10 *)
  ints.(3) <- Int32.add (Int32.mul 2 5) (Int32.succ 0) + Int32.neg 1;   (* 10 *)
  ints.(4) <- Int32.logand 12 (Int32.lognot 4) lor Int32.shift_left 1 4; (* 8 lor 16 = 24 *)
  ints.(5) <- sum_pair (3, 4);                     (* 7 *)
  let { x; y = yy } = { x = 3.0; y = 4.0 } in
  floats.(0) <- x +. yy;                           (* 7 *)
  floats.(1) <- dist2 { x = 3.0; y = 4.0 };        (* 25 *)
  floats.(2) <- 2.0 ** 3.0 ** 2.0;                 (* 512: right associative *)
  floats.(3) <- -2.0 ** 2.0 +. Float.of_int 1;     (* 5: (-2)^2 + 1 *)
  let ((a, b) : float32 * float32) = (1.5, -2.5) in
  floats.(4) <- norm1 (a, b) +. ~-. 1.0;           (* 3 *)
  let () = ints.(6) <- 1 in
  if n > 0 then begin
    ints.(7) <- 2
  end else begin
    ints.(7) <- 3
  end;
  let add3 u v w = u + v + w in
  ints.(8) <- add3 1 2 3                           (* 6 *)
"#;
    let (ints, floats) = run(src, "k", 9);
    assert_eq!(ints, vec![10, 18, -10, 10, 24, 7, 1, 2, 6]);
    assert_eq!(floats[..5], [7.0, 25.0, 512.0, 5.0, 3.0]);
}

#[test]
fn int64_module_operators_keep_ocaml_types() {
    let src = "
let%kernel k (ints : int32 vector) (floats : float32 vector) (n : int32) =
  let w = Int64.shift_left (Int64.of_int32 3) 40 in
  ints.(0) <- Int64.to_int32 (Int64.shift_right_logical w 38);   (* 12 *)
  ints.(1) <- Int64.to_int32 (Int64.rem (Int64.sub w 1L) 7L)
";
    let w: i64 = 3 << 40;
    let (ints, _) = run(src, "k", 2);
    assert_eq!(ints, vec![12, ((w - 1) % 7) as i32]);
}

#[test]
fn unsupported_forms_are_named() {
    let guard = errors(
        "
let%kernel k (a : int32 vector) =
  match a.(0) with
  | x when x > 1 -> a.(0) <- 1
",
    );
    assert!(guard.contains("non-exhaustive match"), "{guard}");
    let guard = errors(
        "
let%kernel k (a : int32 vector) =
  match a.(0) with
  | x when x -> a.(0) <- 1
  | _ -> ()
",
    );
    assert_eq!(guard.matches("error:").count(), 1, "{guard}");
    assert!(guard.contains("mismatched types"), "{guard}");
    let update = errors(
        "
type point = { x : float32; y : float32 }
let%kernel k (a : point vector) =
  a.(0) <- { a.(0) with x = 1.0 }
",
    );
    assert!(
        update.contains("record update `{ e with ... }` is not supported"),
        "{update}"
    );
    let bad_op = errors(
        "
let%kernel k (a : float32 vector) =
  a.(0) <- Float32.logand 1.0 2.0
",
    );
    assert!(bad_op.contains("logand"), "{bad_op}");
}

#[test]
fn trailing_semicolons_pairs_and_array_length() {
    let src = "
let%kernel k (ints : int32 vector) (floats : float32 vector) (n : int32) =
  begin ints.(0) <- 1; end;
  (ints.(1) <- 2;);
  let u = (ints.(2) <- 3;) in
  u;
  ints.(3) <- fst (4, 5) + snd (6, 7) + Array.length ints;
  for j = 4 to 4 do
    ints.(j) <- j;
  done
";
    assert_eq!(run(src, "k", 5).0, vec![1, 2, 3, 16, 4]);
}

#[test]
fn partial_application_is_one_clear_error() {
    let e = errors(
        "
let add (x : int32) (y : int32) : int32 = x + y
let%kernel k (a : int32 vector) =
  let g = add 1 in
  a.(0) <- g 2
",
    );
    assert!(
        e.contains("the helper `add` takes 2 arguments but 1 was supplied"),
        "{e}"
    );
    assert_eq!(e.matches("error:").count(), 1, "{e}");
}

#[test]
fn fun_function_and_incr() {
    let src = "
type shape = Circle of int32 | Rect of int32 * int32
let area = function
  | Circle r -> 3 * r * r
  | Rect (w, h) -> w * h
let scale = fun (k : int32) x -> k * x
let%kernel k (ints : int32 vector) (floats : float32 vector) (n : int32) =
  let twice = fun x -> x * 2 in
  let pick b = function true -> b | false -> 0 in
  ints.(0) <- scale 10 (twice (area (Circle 2)));   (* 10 * 2 * 12 = 240 *)
  ints.(1) <- area (Rect (3, 4)) + pick 5 (n > 0);  (* 17 *)
  let c = ref 0 in
  for j = n - 1 downto 0 do
    if not (j mod 2 = 0) then incr c
  done;
  decr c;
  ints.(2) <- !c                                     (* n = 7: 5, 3, 1 -> 3 - 1 = 2 *)
";
    assert_eq!(run(src, "k", 7).0[..3], [240, 17, 2]);
    let e = errors(
        "
let%kernel k (a : int32 vector) =
  incr a.(0)
",
    );
    assert!(e.contains("`incr` takes a variable"), "{e}");
}

#[test]
fn bools_are_ordered_as_in_ocaml() {
    let src = "
let%kernel k (ints : int32 vector) (floats : float32 vector) (n : int32) =
  let t = n > 0 in
  let f = n < 0 in
  ints.(0) <- (if f < t then 1 else 0) + (if t <= t then 2 else 0)
              + (if t > f then 4 else 0) + (if f >= t then 8 else 0)   (* 7 *)
";
    assert_eq!(run(src, "k", 1).0, vec![7]);
}

#[test]
fn when_guards_fall_through_as_in_ocaml() {
    let src = "
type shape = Circle of int32 | Rect of int32 * int32 | Empty
let classify (s : shape) : int32 =
  match s with
  | Circle r when r > 5 -> 1
  | Circle _ -> 2
  | Rect (w, h) when w > h -> 3
  | Rect (w, _) when w < 0 -> 4
  | Rect _ -> 5
  | Empty -> 6
let sat (x : float32) = match x with v when v > 1.0 -> 1.0 | v when v < -1.0 -> -1.0 | v -> v
let%kernel k (ints : int32 vector) (floats : float32 vector) (n : int32) =
  ints.(0) <- classify (Circle 9);
  ints.(1) <- classify (Circle 1);
  ints.(2) <- classify (Rect (4, 3));
  ints.(3) <- classify (Rect (-4, 3));
  ints.(4) <- classify (Rect (1, 3));
  ints.(5) <- classify Empty;
  let m = ref 0 in
  for j = 0 to 9 do
    match j with
    | x when x mod 3 = 0 -> m := !m + 100
    | 1 | 2 -> m := !m + 1
    | _ -> m := !m + 10
  done;
  ints.(6) <- !m;                                       (* 4 * 100 + 2 * 1 + 4 * 10 *)
  floats.(0) <- sat 3.0;
  floats.(1) <- sat (-2.0);
  floats.(2) <- sat 0.5
";
    let (ints, floats) = run(src, "k", 7);
    assert_eq!(ints, vec![1, 2, 3, 4, 5, 6, 442]);
    assert_eq!(floats[..3], [1.0, -1.0, 0.5]);
}

#[test]
fn top_level_open_std() {
    let src = "
open Std
open! Sarek
let%kernel k (ints : int32 vector) (floats : float32 vector) (n : int32) =
  let open! Float32 in
  ints.(0) <- global_thread_id + n;
  floats.(0) <- of_int 4 +. sqrt 4.0
";
    let (ints, floats) = run(src, "k", 3);
    assert_eq!((ints[0], floats[0]), (3, 6.0));
    let e = errors("open Float32\nlet%kernel k (a : int32 vector) = a.(0) <- 1\n");
    assert!(
        e.contains("top-level `open Float32` is not supported"),
        "{e}"
    );
    assert_eq!(e.matches("error:").count(), 1, "{e}");
}
