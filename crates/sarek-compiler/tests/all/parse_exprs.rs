//! Expression parses checked against OCaml's grammar (precedence and associativity from the
//! OCaml manual's table; extents of `if`/`let`/`match` from OCaml's parser).

use crate::support::sexp as common;
use common::expr;

fn check(cases: &[(&str, &str)]) {
    let mut failures = Vec::new();
    for (src, want) in cases {
        let got = expr(src);
        if got != *want {
            failures.push(format!("  {src}\n    want {want}\n    got  {got}"));
        }
    }
    assert!(failures.is_empty(), "mismatches:\n{}", failures.join("\n"));
}

#[test]
fn arithmetic_precedence_and_associativity() {
    check(&[
        ("1 + 2 * 3", "(+ 1 (* 2 3))"),
        ("1 * 2 + 3", "(+ (* 1 2) 3)"),
        ("1 - 2 - 3", "(- (- 1 2) 3)"),
        ("a / b / c", "(/ (/ a b) c)"),
        ("a mod b * c", "(* (mod a b) c)"),
        ("a *. b +. c /. d -. e", "(-. (+. (*. a b) (/. c d)) e)"),
        ("a lsl 2 + 1", "(+ (lsl a 2) 1)"),
        ("a * b lsl 2", "(* a (lsl b 2))"),
        ("a lsl b lsl c", "(lsl a (lsl b c))"),
        ("x asr 2 lsr 1", "(asr x (lsr 2 1))"),
        ("a land b + c", "(+ (land a b) c)"),
        ("a + b land c", "(+ a (land b c))"),
        ("a lor b lxor c", "(lxor (lor a b) c)"),
        ("lnot x land y", "(land (lnot x) y)"),
    ]);
}

#[test]
fn comparison_and_boolean_operators() {
    check(&[
        ("a < b = c", "(= (< a b) c)"),
        ("a + 1 <= b * 2", "(<= (+ a 1) (* b 2))"),
        ("a = b && c <> d", "(&& (= a b) (<> c d))"),
        ("a != b", "(<> a b)"),
        ("a && b || c && d", "(|| (&& a b) (&& c d))"),
        ("a || b || c", "(|| a (|| b c))"),
        ("a && b && c", "(&& a (&& b c))"),
        ("not a && b", "(&& (not a) b)"),
        ("not (f x)", "(not (app f x))"),
    ]);
}

#[test]
fn unary_minus_and_literals() {
    check(&[
        ("-1", "-1"),
        ("- 1", "-1"),
        ("-1.5", "-1.5"),
        ("-. 2.0", "-2.0"),
        ("-1L", "-1L"),
        ("-2.5d", "-2.5d"),
        ("x - 1", "(- x 1)"),
        ("f (-1)", "(app f -1)"),
        ("f -1", "(- f 1)"),
        ("-x * y", "(* (~- x) y)"),
        ("- f x", "(~- (app f x))"),
        ("-x lsl 2", "(lsl (~- x) 2)"),
        ("a - -1", "(- a -1)"),
        ("a * -b", "(* a (~- b))"),
        ("-2 * 3", "(* -2 3)"),
        ("-. x", "(~-. x)"),
        ("- x.(i)", "(~- (.() x i))"),
        ("0xff + 1l + 0o17 + 0b101", "(+ (+ (+ 255 1) 15) 5)"),
        ("1e-3 +. 1.0e10 +. 2.", "(+. (+. 0.001 10000000000.0) 2.0)"),
        ("true && false", "(&& true false)"),
        ("()", "()"),
        ("begin end", "()"),
    ]);
}

#[test]
fn application_and_postfix() {
    check(&[
        ("f x y + g z", "(+ (app f x y) (app g z))"),
        ("f ()", "(app f ())"),
        ("f x.(i) y.x", "(app f (.() x i) (. y x))"),
        ("v.(i).x", "(. (.() v i) x)"),
        ("m.(i).(j)", "(.() (.() m i) j)"),
        ("p.x +. p.y", "(+. (. p x) (. p y))"),
        (
            "Std.thread_idx_x + Float32.sqrt x",
            "(+ Std.thread_idx_x (app Float32.sqrt x))",
        ),
        ("A.B.c", "A.B.c"),
        ("M.(x + 1)", "(open M (+ x 1))"),
        ("(x : int32)", "(: x int32)"),
        ("(v : float32 vector)", "(: v (float32 vector))"),
        ("{ x = 1.0; y = 2.0 }", "{x=1.0 y=2.0}"),
        ("{ x = a; y = b; }", "{x=a y=b}"),
        ("{ x; y }", "{x=x y=y}"),
        ("[%native \"code\"]", "[%native]"),
    ]);
}

#[test]
fn constructors_and_tuples() {
    check(&[
        ("C", "C"),
        ("C a", "(C a)"),
        ("C (a, b)", "(C a b)"),
        ("C x + 1", "(+ (C x) 1)"),
        ("f C", "(app f C)"),
        ("f (C x) y", "(app f (C x) y)"),
        ("C (f x)", "(C (app f x))"),
        ("a, b + 1, c", "(tuple a (+ b 1) c)"),
        ("(a, b)", "(tuple a b)"),
        ("v.(i) <- a, b", "(.()<- v i (tuple a b))"),
        ("if a then b else c, d", "(if a b (tuple c d))"),
    ]);
}

#[test]
fn assignment() {
    check(&[
        ("v.(i) <- x + 1", "(.()<- v i (+ x 1))"),
        ("v.(i).x <- 1.0", "(.<- (.() v i) x 1.0)"),
        ("p.x <- 2.0", "(.<- p x 2.0)"),
        ("x := x + 1", "(:= x (+ x 1))"),
        ("x := y := 1", "(:= x (:= y 1))"),
        ("x.(i) <- if c then 1 else 2", "(.()<- x i (if c 1 2))"),
        ("x := f x; y", "(seq (:= x (app f x)) y)"),
    ]);
}

#[test]
fn if_extent() {
    check(&[
        ("if c then a else b; d", "(seq (if c a b) d)"),
        ("if c then a; b", "(seq (if c a) b)"),
        ("if c then x := 1 else x := 2", "(if c (:= x 1) (:= x 2))"),
        ("if c then v.(i) <- 1", "(if c (.()<- v i 1))"),
        ("1 + if c then 2 else 3 * 4", "(+ 1 (if c 2 (* 3 4)))"),
        ("if a then if b then c else d", "(if a (if b c d))"),
        ("if a then b else if c then d else e", "(if a b (if c d e))"),
        ("if c then let y = 1 in y; z", "(if c (let y 1 (seq y z)))"),
        (
            "if c then (a; b) else begin d; e end",
            "(if c (seq a b) (seq d e))",
        ),
    ]);
}

#[test]
fn let_forms() {
    check(&[
        ("let x = 1 in x; y", "(let x 1 (seq x y))"),
        ("let x : int32 = 1 in x", "(let x : int32 1 x)"),
        ("let (x : int32) = 1 in x", "(let x : int32 1 x)"),
        (
            "let mut x = 0 in x := x + 1",
            "(let mut x 0 (:= x (+ x 1)))",
        ),
        ("let x = mut 0 in x", "(let mut x 0 x)"),
        ("let (a, b) = p in a", "(let (tuple a b) p a)"),
        ("let a, b = p in a", "(let (tuple a b) p a)"),
        ("let _ = f x in ()", "(let _ (app f x) ())"),
        (
            "let f (a : int32) : int32 = a + 1 in f 2",
            "(letfun f (a:int32) : int32 (+ a 1) (app f 2))",
        ),
        ("let g a b = a in g", "(letfun g (a b) a g)"),
        (
            "let rec h (n : int32) = h n in 0",
            "(letfun rec h (n:int32) (app h n) 0)",
        ),
        ("let open Std in x", "(open Std x)"),
        (
            "let%shared (t : float32) = 256 in t.(0)",
            "(shared t float32 256 (.() t 0))",
        ),
        ("let%shared t : int32 = 64 in t", "(shared t int32 64 t)"),
        ("let%superstep s = a in b", "(superstep s a b)"),
        (
            "let%superstep[@divergent] s = a; b in c",
            "(superstep divergent s (seq a b) c)",
        ),
        ("let x = let y = 1 in y in x", "(let x (let y 1 y) x)"),
        ("a; let x = 1 in x; b", "(seq a (let x 1 (seq x b)))"),
    ]);
}

#[test]
fn loops_and_pragmas() {
    check(&[
        (
            "while i < n do i := i + 1 done",
            "(while (< i n) (:= i (+ i 1)))",
        ),
        (
            "for i = 0 to n - 1 do a; b done",
            "(for i 0 to (- n 1) (seq a b))",
        ),
        ("for i = n downto 0 do a done", "(for i n downto 0 a)"),
        (
            "for i = 0 to 3 do a done [@unroll 4]",
            "(for i 0 to 3 a [@unroll 4])",
        ),
        (
            "while c do a done [@unroll]; b",
            "(seq (while c a [@unroll ]) b)",
        ),
        (
            "pragma [\"unroll 4\"] for i = 0 to 3 do a done; b",
            "(seq (pragma [\"unroll 4\"] (for i 0 to 3 a)) b)",
        ),
        ("pragma [\"a\"; \"b c\"] (x)", "(pragma [\"a\", \"b c\"] x)"),
        ("f x [@attr 1]", "(app f (attr x [@attr 1]))"),
    ]);
}

#[test]
fn match_extent_and_patterns() {
    check(&[
        (
            "match x with A -> 1 | B -> 2",
            "(match x [A -> 1] [B -> 2])",
        ),
        (
            "match x with | A -> 1 | B -> 2",
            "(match x [A -> 1] [B -> 2])",
        ),
        (
            "match x with A -> 1 | B -> match y with C -> 2 | D -> 3",
            "(match x [A -> 1] [B -> (match y [C -> 2] [D -> 3])])",
        ),
        (
            "match x with 0 -> a; b | _ -> c",
            "(match x [0 -> (seq a b)] [_ -> c])",
        ),
        (
            "match x with -1 -> a | 1 | 2 -> b | _ -> c",
            "(match x [-1 -> a] [(| 1 2) -> b] [_ -> c])",
        ),
        (
            "match s with Circle r -> r | Rect (w, h) -> w | Empty -> 0.0",
            "(match s [(Circle r) -> r] [(Rect w h) -> w] [Empty -> 0.0])",
        ),
        ("match p with (a, b) -> a", "(match p [(tuple a b) -> a])"),
        ("match p with a, _ -> a", "(match p [(tuple a _) -> a])"),
        (
            "match p with (0, true) | (_, false) -> 1",
            "(match p [(| (tuple 0 true) (tuple _ false)) -> 1])",
        ),
        ("match c with C (D x) -> x", "(match c [(C (D x)) -> x])"),
        (
            "match c with -1.5 -> 1 | 2L -> 2 | () -> 3",
            "(match c [-1.5 -> 1] [2L -> 2] [() -> 3])",
        ),
        ("(match x with A -> 1); y", "(seq (match x [A -> 1]) y)"),
    ]);
}
