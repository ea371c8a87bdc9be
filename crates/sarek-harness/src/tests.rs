//! Unit tests of the GPU-free parts: directives, the generator, the value grammar, the
//! comparison.

use crate::compare::*;
use crate::directive::*;
use crate::inputs::*;
use crate::value::*;
use sarek_compiler::host::{ArgValue, Column, LaunchConfig};
use sarek_compiler::ir::{Kernel, Ty};
use sarek_compiler::types::{Literal, Scalar};

#[test]
fn directives() {
    let src = "(* @run saxpy size=4096 a=2.0 n=4096 *)\n(* plain comment\n   @run t grid=4,4 block=16,16 w=64 *)\nlet%kernel ...";
    let d = parse_directives(src).unwrap();
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].kernel, "saxpy");
    assert_eq!(d[0].size, 4096);
    assert_eq!(
        d[0].args,
        vec![("a".into(), "2.0".into()), ("n".into(), "4096".into())]
    );
    assert_eq!(
        d[0].config(),
        LaunchConfig {
            grid: [16, 1, 1],
            block: [256, 1, 1]
        }
    );
    assert_eq!(d[1].line, 3);
    assert_eq!(
        d[1].config(),
        LaunchConfig {
            grid: [4, 4, 1],
            block: [16, 16, 1]
        }
    );
    assert!(
        parse_directives("(* @run k size=x *)")
            .unwrap_err()
            .contains("line 1")
    );
    assert!(parse_directives("(* @run k oops *)").is_err());
    assert!(parse_directives("(* @run k block=0 *)").is_err());
    // Past int32, before anyone allocates it.
    let e = parse_directives("(* @run k size=3000000000 *)").unwrap_err();
    assert!(e.contains("at most 2147483647 elements"), "{e}");
    assert_eq!(
        parse_directives("(* @run k size=2147483647 *)").unwrap()[0].size,
        2147483647
    );
}

#[test]
fn default_launch() {
    assert_eq!(
        launch_config(100, None, None),
        LaunchConfig {
            grid: [1, 1, 1],
            block: [100, 1, 1]
        }
    );
    assert_eq!(
        launch_config(1000, None, None),
        LaunchConfig {
            grid: [4, 1, 1],
            block: [256, 1, 1]
        }
    );
    assert_eq!(launch_config(1000, None, Some([64, 1, 1])).grid, [16, 1, 1]);
}

#[test]
fn generator_ranges_and_determinism() {
    let mut a = Rng::for_param(42, 0);
    let mut b = Rng::for_param(42, 0);
    let mut c = Rng::for_param(42, 1);
    let mut same = 0;
    for _ in 0..10_000 {
        let x = a.scalar(Scalar::F32);
        assert_eq!(x, b.scalar(Scalar::F32));
        if x == c.scalar(Scalar::F32) {
            same += 1;
        }
        let Literal::F32(x) = x else { unreachable!() };
        assert!((-1.0..1.0).contains(&x));
        let Literal::I32(i) = a.scalar(Scalar::I32) else {
            unreachable!()
        };
        b.scalar(Scalar::I32);
        assert!((0..1000).contains(&i));
        let Literal::F64(y) = a.scalar(Scalar::F64) else {
            unreachable!()
        };
        b.scalar(Scalar::F64);
        assert!((-1.0..1.0).contains(&y));
    }
    assert!(same < 10, "parameters must get different streams");
    // Roughly uniform: mean of [0,1000) draws near 499.5, coin near 1/2.
    let mut r = Rng::new(7);
    let n = 100_000;
    let mean = (0..n).map(|_| f64::from(r.below(1000))).sum::<f64>() / n as f64;
    assert!((mean - 499.5).abs() < 5.0, "{mean}");
    let heads = (0..n)
        .filter(|_| r.scalar(Scalar::Bool) == Literal::Bool(true))
        .count();
    assert!((heads as f64 / n as f64 - 0.5).abs() < 0.01);
}

#[test]
fn scalar_parsing() {
    assert_eq!(parse_scalar("2.0", Scalar::F32), Ok(Literal::F32(2.0)));
    assert_eq!(parse_scalar("2", Scalar::F64), Ok(Literal::F64(2.0)));
    assert_eq!(parse_scalar("1.5d", Scalar::F64), Ok(Literal::F64(1.5)));
    assert_eq!(parse_scalar("-0x10", Scalar::I32), Ok(Literal::I32(-16)));
    assert_eq!(parse_scalar("7L", Scalar::I64), Ok(Literal::I64(7)));
    assert_eq!(parse_scalar("true", Scalar::Bool), Ok(Literal::Bool(true)));
    assert!(
        parse_scalar("2.5", Scalar::I32)
            .unwrap_err()
            .contains("is not an int32")
    );
    assert!(
        parse_scalar("3000000000", Scalar::I32)
            .unwrap_err()
            .contains("does not fit")
    );
    assert!(parse_scalar("yes", Scalar::Bool).is_err());
}

/// Hexadecimal, octal and binary integers spell the bits of the parameter's type, as OCaml's
/// literals and `Int32.of_string` do (conformance session 6, N12).
#[test]
fn non_decimal_integers_spell_bits() {
    let i32_of = |t: &str| parse_scalar(t, Scalar::I32);
    assert_eq!(i32_of("0xffffffff"), Ok(Literal::I32(-1)));
    assert_eq!(i32_of("0x80000000"), Ok(Literal::I32(i32::MIN)));
    assert_eq!(i32_of("-0x80000000"), Ok(Literal::I32(i32::MIN)));
    assert_eq!(i32_of("-0xffffffff"), Ok(Literal::I32(1)));
    assert_eq!(i32_of("0o17"), Ok(Literal::I32(15)));
    assert_eq!(i32_of("0b1010_1010"), Ok(Literal::I32(170)));
    assert_eq!(i32_of("0x7fffffffl"), Ok(Literal::I32(i32::MAX)));
    assert!(
        i32_of("0x100000000")
            .unwrap_err()
            .contains("does not fit in int32")
    );
    assert!(
        i32_of("2147483648")
            .unwrap_err()
            .contains("does not fit in int32")
    );
    assert!(i32_of("0b102").unwrap_err().contains("is not an int32"));
    let i64_of = |t: &str| parse_scalar(t, Scalar::I64);
    assert_eq!(i64_of("0xffffffffffffffffL"), Ok(Literal::I64(-1)));
    assert_eq!(i64_of("0xffffffff"), Ok(Literal::I64(4294967295)));
    assert_eq!(i64_of("-9223372036854775808"), Ok(Literal::I64(i64::MIN)));
    assert!(
        i64_of("9223372036854775808")
            .unwrap_err()
            .contains("does not fit in int64")
    );
}

/// The values issue 19's random kernels needed and could not pass: infinities, NaN, and the
/// most negative int64 (its magnitude does not fit in an int64).
#[test]
fn scalar_parsing_at_the_edges() {
    let f32_of = |t: &str| match parse_scalar(t, Scalar::F32) {
        Ok(Literal::F32(x)) => x,
        other => panic!("{t}: {other:?}"),
    };
    let f64_of = |t: &str| match parse_scalar(t, Scalar::F64) {
        Ok(Literal::F64(x)) => x,
        other => panic!("{t}: {other:?}"),
    };
    for t in ["inf", "+inf", "infinity", "Inf", "1e999"] {
        assert_eq!(f32_of(t), f32::INFINITY, "{t}");
        assert_eq!(f64_of(t), f64::INFINITY, "{t}");
    }
    for t in ["-inf", "-infinity", "neg_infinity", "-1e999"] {
        assert_eq!(f32_of(t), f32::NEG_INFINITY, "{t}");
        assert_eq!(f64_of(t), f64::NEG_INFINITY, "{t}");
    }
    for t in ["nan", "NaN", "-nan"] {
        assert!(f32_of(t).is_nan() && f64_of(t).is_nan(), "{t}");
    }
    assert_eq!(f32_of("2.5f"), 2.5);
    assert_eq!(f64_of("1_000.5d"), 1000.5);
    assert!(parse_scalar("in", Scalar::F32).is_err());
    assert!(parse_scalar("neg_inf", Scalar::F64).is_err());
    assert!(parse_scalar("inff", Scalar::F64).is_err());
    // Read straight to float32: just above 1 + 2^-24 (the midpoint between 1 and the next
    // float32) rounds up to 1 + 2^-23 when read at once, but through float64 it first
    // becomes 1 + 2^-24 exactly (a tie), then rounds to even, 1.0.
    let t = "1.000000059604644776257986737"; // 1 + 2^-24 + 2^-60, truncated to 27 decimals
    assert_eq!(f32_of(t), 1.0 + f32::EPSILON);
    assert_eq!(
        t.parse::<f64>().unwrap() as f32,
        1.0,
        "the double rounding it avoids"
    );

    let i64_of = |t: &str| parse_scalar(t, Scalar::I64);
    assert_eq!(i64_of("-9223372036854775808"), Ok(Literal::I64(i64::MIN)));
    assert_eq!(i64_of("-9223372036854775808L"), Ok(Literal::I64(i64::MIN)));
    assert_eq!(i64_of("-0x8000000000000000"), Ok(Literal::I64(i64::MIN)));
    assert_eq!(i64_of("9223372036854775807"), Ok(Literal::I64(i64::MAX)));
    assert!(
        i64_of("9223372036854775808")
            .unwrap_err()
            .contains("does not fit in int64")
    );
    assert!(i64_of("-9223372036854775809").is_err());
    assert!(i64_of("--5").is_err() && i64_of("-+5").is_err());
    assert_eq!(
        parse_scalar("-2147483648", Scalar::I32),
        Ok(Literal::I32(i32::MIN))
    );
    assert!(parse_scalar("-2147483649", Scalar::I32).is_err());
}

#[test]
fn tolerance() {
    let t = Tolerance::default();
    let f = Literal::F32;
    assert!(t.agree(f(1.0), f(1.0 + f32::EPSILON * 100.0)));
    assert!(!t.agree(f(1.0), f(1.001)));
    assert!(t.agree(f(1e-7), f(-1e-7)), "absolute bound near zero");
    assert!(t.agree(f(f32::NAN), f(f32::NAN)));
    assert!(!t.agree(f(f32::INFINITY), f(f32::MAX)));
    assert!(!t.agree(f(1.0), f(f32::NAN)));
    assert!(!t.agree(Literal::I32(1), Literal::I32(2)));
    assert_eq!(ulps_f32(0.0, -0.0), 0);
    assert_eq!(ulps_f32(1.0, f32::from_bits(1.0f32.to_bits() + 3)), 3);
    assert_eq!(ulps_f32(-f32::from_bits(1), f32::from_bits(1)), 2);
    assert_eq!(ulps_f64(-1.0, -1.0 - f64::EPSILON), 1);
}

/// A kernel with one `shape vector` parameter, shape = Circle of float32 | Rect of
/// float32 * float32 | Empty.
fn shapes_kernel() -> (Kernel, Ty) {
    let mut b = sarek_compiler::ir::build::KernelBuilder::new("k");
    let shape = Ty::Variant(b.variant(
        "shape",
        &[
            ("Circle", vec![Ty::F32]),
            ("Rect", vec![Ty::F32, Ty::F32]),
            ("Empty", vec![]),
        ],
    ));
    b.vector("s", shape.clone());
    (b.finish(vec![]), shape)
}

#[test]
fn variant_vectors_generate_and_compare_by_live_fields() {
    let (kernel, shape) = shapes_kernel();
    let v = seeded_vector(&kernel, &shape, 300, 42, 0);
    let Column::I32(tags) = &v.columns[0] else {
        panic!("tag column")
    };
    for t in 0..3 {
        assert!(
            tags.iter().filter(|&&x| x == t).count() > 50,
            "tags are uniform over 3"
        );
    }
    // Payload of the other constructors stays zero; the live one is drawn in [-1, 1).
    for (i, &t) in tags.iter().enumerate() {
        let get = |c: usize| match v.columns[c].get(i) {
            Literal::F32(x) => x,
            _ => unreachable!(),
        };
        if t != 0 {
            assert_eq!(get(1), 0.0);
        } else {
            assert!((-1.0..1.0).contains(&get(1)));
        }
        if t != 1 {
            assert_eq!((get(2), get(3)), (0.0, 0.0));
        }
    }
    // A difference in a dead payload field is not a mismatch; in a live one it is.
    let i = tags.iter().position(|&t| t == 2).unwrap();
    let mut dead = v.clone();
    dead.columns[1].set(i, Literal::F32(9.0));
    let tol = Tolerance::default();
    assert!(compare_vectors(&kernel, "s", &shape, &v, &dead, &tol).ok());
    let j = tags.iter().position(|&t| t == 1).unwrap();
    let mut live = v.clone();
    live.columns[3].set(j, Literal::F32(9.0));
    let c = compare_vectors(&kernel, "s", &shape, &v, &live, &tol);
    assert_eq!(c.mismatches, 1);
    let m = c.first.unwrap();
    assert_eq!((m.index, m.leaf.as_str()), (j, "Rect_1"));
    let args = build_args(&kernel, &Inputs::new(10, 1)).unwrap();
    assert!(matches!(&args[0], ArgValue::Vector(h) if h.len == 10 && h.columns.len() == 4));
}

/// `shapes_kernel` plus `point = { x; y }` and `item = { p : point; s : shape; k : int32 }`.
fn values_kernel() -> (Kernel, Ty, Ty, Ty) {
    use sarek_compiler::ir::{Field, Record, RecordId};
    let (mut kernel, shape) = shapes_kernel();
    let point = Ty::Record(RecordId(0));
    let item = Ty::Record(RecordId(1));
    let field = |name: &str, ty: &Ty| Field {
        name: name.into(),
        ty: ty.clone(),
    };
    kernel.records = vec![
        Record {
            name: "point".into(),
            fields: vec![field("x", &Ty::F32), field("y", &Ty::F32)],
            is_tuple: false,
        },
        Record {
            name: "item".into(),
            fields: vec![field("p", &point), field("s", &shape), field("k", &Ty::I32)],
            is_tuple: false,
        },
    ];
    (kernel, shape, point, item)
}

#[test]
fn variant_values_by_constructor_or_tag() {
    use Literal::{F32, I32};
    let (kernel, shape, _, _) = values_kernel();
    let parse = |t: &str| parse_value(&kernel, &shape, t);
    // Leaves: tag, Circle_0, Rect_0, Rect_1 (abi::leaves order).
    assert_eq!(
        parse("Rect,2.0,3"),
        Ok(vec![I32(1), F32(0.0), F32(2.0), F32(3.0)])
    );
    assert_eq!(
        parse(" Circle , 0.5"),
        Ok(vec![I32(0), F32(0.5), F32(0.0), F32(0.0)])
    );
    assert_eq!(
        parse("Empty"),
        Ok(vec![I32(2), F32(0.0), F32(0.0), F32(0.0)])
    );
    assert_eq!(
        parse("1,0,2,3"),
        Ok(vec![I32(1), F32(0.0), F32(2.0), F32(3.0)])
    );
    let e = parse("7,0,0,0").unwrap_err();
    assert_eq!(
        e,
        "tag 7 is out of range for shape (0 to 2: Circle, Rect, Empty)"
    );
    assert!(
        parse("-1,0,0,0")
            .unwrap_err()
            .contains("tag -1 is out of range")
    );
    let e = parse("Rectt,2,3").unwrap_err();
    assert_eq!(
        e,
        "`Rectt` is not a constructor of shape (Circle, Rect, Empty) nor a tag 0 to 2; \
         did you mean `Rect`?"
    );
    let e = parse("Rect,2").unwrap_err();
    assert_eq!(
        e,
        "too few values: constructor `Rect` takes 2 payload values (float32, float32), 1 given"
    );
    let e = parse("Empty,1,2").unwrap_err();
    assert_eq!(
        e,
        "too many values: constructor `Empty` takes no payload; `1,2` is left over"
    );
    assert!(
        parse("Circle,x")
            .unwrap_err()
            .contains("`x` is not a float32")
    );
    assert!(
        parse("1,0,2")
            .unwrap_err()
            .starts_with("too few values (3) for a shape")
    );
    assert_eq!(
        value_syntax(&kernel, &shape),
        "Circle,<float32> | Rect,<float32>,<float32> | Empty"
    );
}

#[test]
fn record_values_positional_or_named() {
    use Literal::{F32, I32};
    let (kernel, _, point, item) = values_kernel();
    let p = |t: &str| parse_value(&kernel, &point, t);
    assert_eq!(p("1,2"), Ok(vec![F32(1.0), F32(2.0)]));
    assert_eq!(p("y=2,x=1"), Ok(vec![F32(1.0), F32(2.0)]));
    assert_eq!(
        p("x=1"),
        Err("point still needs field(s) `y` (FIELD=VALUE)".into())
    );
    assert_eq!(
        p("x=1,2"),
        Err("`2` is not FIELD=VALUE; point still needs field(s) `y`".into())
    );
    assert_eq!(
        p("xx=1,y=2"),
        Err("point has no field `xx` (its fields: x, y); did you mean `x`?".into())
    );
    assert_eq!(
        p("x=1,x=2"),
        Err("field `x` of point is given twice".into())
    );
    assert!(
        p("1,2,3")
            .unwrap_err()
            .starts_with("too many values: `3` is left over")
    );
    // Nested: a record, a variant and a scalar; leaves p_x p_y s_tag s_Circle_0 s_Rect_0
    // s_Rect_1 k.
    let want = vec![
        F32(1.0),
        F32(2.0),
        I32(1),
        F32(0.0),
        F32(4.0),
        F32(5.0),
        I32(6),
    ];
    let i = |t: &str| parse_value(&kernel, &item, t);
    assert_eq!(i("1,2,Rect,4,5,6"), Ok(want.clone()));
    assert_eq!(i("1,2,1,0,4,5,6"), Ok(want.clone()));
    assert_eq!(i("k=6,s=Rect,4,5,p=y=2,x=1"), Ok(want.clone()));
    assert_eq!(i("p=1,2,s=Rect,4,5,k=6"), Ok(want));
    assert_eq!(
        value_syntax(&kernel, &item),
        "<p.x:float32>,<p.y:float32>,<s:shape constructor>[,<payload>],<k:int32>"
    );
}

#[test]
fn given_vectors_with_bad_tags_are_argument_errors() {
    let (kernel, shape) = shapes_kernel();
    let good = seeded_vector(&kernel, &shape, 50, 7, 0);
    let mut inputs = Inputs::new(50, 1);
    inputs.vectors = vec![("s".into(), good.clone())];
    assert!(build_args(&kernel, &inputs).is_ok());
    let mut bad = good;
    bad.columns[0].set(17, Literal::I32(3));
    inputs.vectors = vec![("s".into(), bad)];
    let e = build_args(&kernel, &inputs).unwrap_err().to_string();
    assert_eq!(
        e,
        "parameter `s` (shape vector), element 17: `tag` is 3, not a tag of shape \
         (0 to 2: Circle, Rect, Empty)"
    );
}
