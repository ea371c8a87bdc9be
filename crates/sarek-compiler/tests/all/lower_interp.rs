//! Lowering preserves meaning: a kernel exercising nested, literal, tuple and or-patterns,
//! tuple records (vector elements, record fields, helper results, destructuring lets),
//! value-position `match`, and conditions that need statements runs on the reference
//! interpreter and is compared with the same computation written in Rust.

use sarek_compiler::abi::leaves;
use sarek_compiler::diag::{SourceMap, render_all};
use sarek_compiler::ir::Kernel;
use sarek_compiler::types::Literal;
use sarek_runtime::device::LaunchConfig;
use sarek_runtime::value::{ArgValue, Column, HostVector};

const SOURCE: &str = r#"
type shape = Circle of int32 | Rect of int32 * int32 | Square of int32 | Empty
type seg = { ends : int32 * int32; weight : float32 }

let divmod (a : int32) (b : int32) : int32 * int32 = (a / b, a mod b)

let classify (s : shape) : int32 =
  match s with
  | Rect (_, 0) | Rect (0, _) -> 1
  | Rect (w, h) -> if w > h then 2 else 3
  | Circle 0 -> 6
  | Circle _ | Square _ -> 4
  | Empty -> 5

type wrap = W of (int32 * int32) | P of int32 * (int32 * bool) | N

let swap (p : int32 * int32) : int32 * int32 = let (a, b) = p in (b, a)

let%kernel payloads (v : wrap vector) (out : int32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then begin
    out.(i) <- (match v.(i) with
                | W p -> let (a, b) = swap p in a * 1000 + b
                | P (a, (b, true)) -> a + b
                | P (a, q) -> let (b, _) = q in a - b
                | N -> -1);
    v.(i) <- (match v.(i) with
              | W (a, b) -> W (swap (a + 1, b))
              | P (a, q) -> P (a * 2, q)
              | N -> N)
  end

let%kernel features (shapes : shape vector) (pairs : (int32 * int32) vector) (segs : seg vector)
    (cls : int32 vector) (q : int32 vector) (r : int32 vector) (m : int32 vector)
    (t : int32 vector) (w : float32 vector) (grow : shape vector) (n : int32) =
  let i = global_thread_id in
  if i < n then begin
    cls.(i) <- classify shapes.(i);
    let (a, b) = pairs.(i) in
    let (qq, rr) = divmod a (b mod 7 + 1) in
    q.(i) <- qq;
    r.(i) <- rr;
    m.(i) <- (match (a mod 3, b mod 2) with
              | (0, _) -> 10
              | (_, 0) -> 20
              | (x, y) -> x + y);
    let mut k = a mod 5 in
    let mut steps = 0 in
    while (match k with 0 -> false | _ -> true) do
      k := k - 1;
      steps := steps + 1
    done;
    t.(i) <- steps + (if i mod 2 = 0 && (let z = b in z > 50) then 100 else 0);
    let s = segs.(i) in
    let (e0, e1) = s.ends in
    w.(i) <- s.weight *. float32 (e0 - e1);
    grow.(i) <- (match shapes.(i) with
                 | Circle c -> Circle (c + 1)
                 | Rect (x, y) -> Rect (y, x)
                 | other -> other)
  end
"#;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    Circle(i32),
    Rect(i32, i32),
    Square(i32),
    Empty,
}

fn classify(s: Shape) -> i32 {
    match s {
        Shape::Rect(_, 0) | Shape::Rect(0, _) => 1,
        Shape::Rect(w, h) => {
            if w > h {
                2
            } else {
                3
            }
        }
        Shape::Circle(0) => 6,
        Shape::Circle(_) | Shape::Square(_) => 4,
        Shape::Empty => 5,
    }
}

fn lower(name: &str) -> Kernel {
    let mut sources = SourceMap::new();
    let file = sources.add("lower_interp.sarek", SOURCE);
    let program = sarek_compiler::check(&sources, file)
        .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
    let k = sarek_compiler::lower_kernel(&program, name)
        .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
    sarek_compiler::ir::validate::validate(&k).expect("valid IR");
    k
}

/// A vector argument for parameter `p`, filled leaf by leaf from `value(leaf name, index)`.
fn vector(k: &Kernel, p: usize, len: usize, value: impl Fn(&str, usize) -> Literal) -> ArgValue {
    let elem = k.var(k.params[p]).ty.elem().expect("vector").clone();
    let ls = leaves(k, &elem);
    let mut h = HostVector::zeros(&ls, len);
    for (leaf, col) in ls.iter().zip(&mut h.columns) {
        for i in 0..len {
            col.set(i, value(&leaf.name, i));
        }
    }
    ArgValue::Vector(h)
}

fn column(arg: &ArgValue, c: usize) -> &Column {
    match arg {
        ArgValue::Vector(h) => &h.columns[c],
        a => panic!("not a vector: {a:?}"),
    }
}

fn ints(c: &Column) -> Vec<i32> {
    match c {
        Column::I32(v) => v.clone(),
        c => panic!("not int32: {c:?}"),
    }
}

#[test]
fn lowered_features_compute_what_the_source_says() {
    let k = lower("features");
    let n = 200usize;
    let shape = |i: usize| match i % 4 {
        0 => Shape::Circle((i % 3) as i32),
        1 => Shape::Rect((i % 3) as i32, ((i / 3) % 4) as i32),
        2 => Shape::Square(i as i32),
        _ => Shape::Empty,
    };
    let pair = |i: usize| ((i * 7 % 101) as i32, (i * 13 % 97) as i32);
    let seg = |i: usize| ((i % 10) as i32, (i % 7) as i32, i as f32 * 0.25);
    let shapes = vector(&k, 0, n, |leaf, i| {
        let (tag, vals) = match shape(i) {
            Shape::Circle(r) => (0, [r, 0, 0, 0]),
            Shape::Rect(w, h) => (1, [0, w, h, 0]),
            Shape::Square(a) => (2, [0, 0, 0, a]),
            Shape::Empty => (3, [0; 4]),
        };
        Literal::I32(match leaf {
            "tag" => tag,
            "Circle_0" => vals[0],
            "Rect_0" => vals[1],
            "Rect_1" => vals[2],
            "Square_0" => vals[3],
            other => panic!("unexpected leaf {other}"),
        })
    });
    let pairs = vector(&k, 1, n, |leaf, i| {
        Literal::I32(if leaf == "_0" { pair(i).0 } else { pair(i).1 })
    });
    let segs = vector(&k, 2, n, |leaf, i| match leaf {
        "ends__0" => Literal::I32(seg(i).0),
        "ends__1" => Literal::I32(seg(i).1),
        "weight" => Literal::F32(seg(i).2),
        other => panic!("unexpected leaf {other}"),
    });
    let zeros_i = |p| vector(&k, p, n, |_, _| Literal::I32(0));
    let mut args = vec![
        shapes.clone(),
        pairs,
        segs,
        zeros_i(3),
        zeros_i(4),
        zeros_i(5),
        zeros_i(6),
        zeros_i(7),
        vector(&k, 8, n, |_, _| Literal::F32(0.0)),
        vector(&k, 9, n, |_, _| Literal::I32(0)),
        ArgValue::Scalar(Literal::I32(n as i32)),
    ];
    sarek_runtime::interp::run(&k, LaunchConfig::linear(n as u32), &mut args).expect("runs");

    let (cls, q, r, m, t) = (
        ints(column(&args[3], 0)),
        ints(column(&args[4], 0)),
        ints(column(&args[5], 0)),
        ints(column(&args[6], 0)),
        ints(column(&args[7], 0)),
    );
    let Column::F32(w) = column(&args[8], 0) else {
        panic!()
    };
    for i in 0..n {
        let (a, b) = pair(i);
        assert_eq!(cls[i], classify(shape(i)), "classify {:?}", shape(i));
        let d = b % 7 + 1;
        assert_eq!((q[i], r[i]), (a / d, a % d), "divmod at {i}");
        let expect_m = match (a % 3, b % 2) {
            (0, _) => 10,
            (_, 0) => 20,
            (x, y) => x + y,
        };
        assert_eq!(m[i], expect_m, "tuple match at {i}");
        let bonus = if i % 2 == 0 && b > 50 { 100 } else { 0 };
        assert_eq!(t[i], a % 5 + bonus, "loop/short-circuit at {i}");
        let (e0, e1, weight) = seg(i);
        assert_eq!(w[i], weight * (e0 - e1) as f32, "record tuple field at {i}");
    }
    // grow: Circle c -> Circle (c + 1), Rect (x, y) -> Rect (y, x), others unchanged.
    let ls = leaves(&k, k.var(k.params[9]).ty.elem().unwrap());
    let col = |name: &str| {
        let j = ls.iter().position(|l| l.name == name).unwrap();
        ints(column(&args[9], j))
    };
    let (tag, c0, r0, r1, s0) = (
        col("tag"),
        col("Circle_0"),
        col("Rect_0"),
        col("Rect_1"),
        col("Square_0"),
    );
    for i in 0..n {
        let got = match tag[i] {
            0 => Shape::Circle(c0[i]),
            1 => Shape::Rect(r0[i], r1[i]),
            2 => Shape::Square(s0[i]),
            _ => Shape::Empty,
        };
        let want = match shape(i) {
            Shape::Circle(c) => Shape::Circle(c + 1),
            Shape::Rect(x, y) => Shape::Rect(y, x),
            other => other,
        };
        assert_eq!(got, want, "value-position match at {i}");
    }
}

#[test]
fn scalar_tuple_payloads_are_flattened_and_round_trip() {
    let k = lower("payloads");
    let n = 90usize;
    // tag i % 3: W (i, 2i) | P (i, (3i, i even)) | N
    let v = vector(&k, 0, n, |leaf, i| {
        let i32_ = |x: usize| Literal::I32(x as i32);
        match (i % 3, leaf) {
            (_, "tag") => i32_(i % 3),
            (0, "W_0") => i32_(i),
            (0, "W_1") => i32_(2 * i),
            (1, "P_0") => i32_(i),
            (1, "P_1") => i32_(3 * i),
            (1, "P_2") => Literal::Bool(i % 2 == 0),
            (_, "P_2") => Literal::Bool(false),
            _ => Literal::I32(0),
        }
    });
    let mut args = vec![
        v,
        vector(&k, 1, n, |_, _| Literal::I32(0)),
        ArgValue::Scalar(Literal::I32(n as i32)),
    ];
    sarek_runtime::interp::run(&k, LaunchConfig::linear(n as u32), &mut args).expect("runs");
    let out = ints(column(&args[1], 0));
    let ls = leaves(&k, k.var(k.params[0]).ty.elem().unwrap());
    let names: Vec<&str> = ls.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["tag", "W_0", "W_1", "P_0", "P_1", "P_2"]);
    let col = |j: usize| ints(column(&args[0], j));
    let (tag, w0, w1, p0, p1) = (col(0), col(1), col(2), col(3), col(4));
    for i in 0..n as i32 {
        let u = i as usize;
        let (want_out, want) = match i % 3 {
            0 => (2 * i * 1000 + i, (0, 0, 0)),
            1 if i % 2 == 0 => (i + 3 * i, (1, 2 * i, 3 * i)),
            1 => (i - 3 * i, (1, 2 * i, 3 * i)),
            _ => (-1, (2, 0, 0)),
        };
        assert_eq!(out[u], want_out, "payload match at {i}");
        assert_eq!(tag[u], want.0, "tag at {i}");
        match want.0 {
            // W (swap (a + 1, b)) = W (b, a + 1)
            0 => assert_eq!((w0[u], w1[u]), (2 * i, i + 1), "W at {i}"),
            1 => assert_eq!((p0[u], p1[u]), (want.1, want.2), "P at {i}"),
            _ => {}
        }
    }
}
