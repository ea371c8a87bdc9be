//! Records, variants, tuples, helpers and structured control flow on the interpreter.

use sarek_testkit::interp as interp_util;

use interp_util::*;
use sarek_compiler::ir::*;
use sarek_compiler::types::{BinOp, Literal, MemSpace, Scalar};
use sarek_runtime::{ArgValue, Column, HostVector, LaunchConfig, interp};

fn vec_cols(len: usize, columns: Vec<Column>) -> ArgValue {
    ArgValue::Vector(HostVector { len, columns })
}

#[test]
fn records_fields_and_field_stores() {
    // type point = { x : float32; y : float32 }; seg = { a : point; w : int32 }
    // out.(i) <- { x = p.y; y = p.x *. 2 }; segs.(i).a.y <- float32 segs.(i).w; segs.(i).w <- i
    let mut kb = KB::new("records");
    let point = kb.record("point", &[("x", Ty::F32), ("y", Ty::F32)]);
    let seg = kb.record("seg", &[("a", Ty::Record(point)), ("w", Ty::I32)]);
    let pts = kb.vector("pts", Ty::Record(point));
    let out = kb.vector("out", Ty::Record(point));
    let segs = kb.vector("segs", Ty::Record(seg));
    let p = kb.var("p", Ty::Record(point));
    let i = kb.var("i", Ty::I32);
    let rec = Expr::new(
        ExprKind::Record {
            record: point,
            fields: vec![kb.field(kb.v(p), 1), mul(kb.field(kb.v(p), 0), f32c(2.0))],
        },
        Ty::Record(point),
    );
    let seg_place = LValue::Index {
        base: segs,
        index: Box::new(kb.v(i)),
    };
    let body = vec![
        let_(i, gid()),
        let_(p, kb.idx(pts, kb.v(i))),
        store(out, kb.v(i), rec),
        st(StmtKind::Assign {
            place: LValue::Field {
                base: Box::new(LValue::Field {
                    base: Box::new(seg_place.clone()),
                    field: 0,
                }),
                field: 1,
            },
            value: convert(kb.field(kb.idx(segs, kb.v(i)), 1), Scalar::F32),
        }),
        st(StmtKind::Assign {
            place: LValue::Field {
                base: Box::new(seg_place),
                field: 1,
            },
            value: kb.v(i),
        }),
    ];
    let k = kb.finish(body);
    let n = 40;
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let ys: Vec<f32> = (0..n).map(|i| -(i as f32)).collect();
    let ws: Vec<i32> = (0..n).map(|i| 1000 + i as i32).collect();
    let mut args = vec![
        vec_cols(n, vec![Column::F32(xs.clone()), Column::F32(ys.clone())]),
        vec_cols(
            n,
            vec![Column::F32(vec![0.0; n]), Column::F32(vec![0.0; n])],
        ),
        vec_cols(
            n,
            vec![
                Column::F32(vec![7.0; n]),
                Column::F32(vec![8.0; n]),
                Column::I32(ws.clone()),
            ],
        ),
    ];
    interp::run(&k, LaunchConfig::linear(n as u32), &mut args).unwrap();
    assert_eq!(col(&args[1], 0), &Column::F32(ys.clone()));
    assert_eq!(
        col(&args[1], 1),
        &Column::F32(xs.iter().map(|x| x * 2.0).collect())
    );
    assert_eq!(
        col(&args[2], 0),
        &Column::F32(vec![7.0; n]),
        "untouched leaf"
    );
    assert_eq!(
        col(&args[2], 1),
        &Column::F32(ws.iter().map(|w| *w as f32).collect())
    );
    assert_eq!(col(&args[2], 2), &Column::I32((0..n as i32).collect()));
}

/// type shape = Circle of float32 | Rect of float32 * float32 | Empty
fn shape_kernel() -> Kernel {
    // area.(i) <- match s.(i) with Circle r -> 3 * r * r | Rect (w, h) -> w * h | Empty -> -1
    // s.(i) <- if i mod 3 = 0 then Rect (1, i) else (if i mod 3 = 1 then Empty else Circle i)
    // tup.(i) <- (i, float32 i /. 2)   (a tuple vector: _tup_int32_float32)
    let mut kb = KB::new("shapes");
    let shape = kb.variant(
        "shape",
        &[
            ("Circle", vec![Ty::F32]),
            ("Rect", vec![Ty::F32, Ty::F32]),
            ("Empty", vec![]),
        ],
    );
    let tup = kb.record("_tup_int32_float32", &[("_0", Ty::I32), ("_1", Ty::F32)]);
    let s = kb.vector("s", Ty::Variant(shape));
    let area = kb.vector("area", Ty::F32);
    let tv = kb.vector("tup", Ty::Record(tup));
    let r = kb.var("r", Ty::F32);
    let w = kb.var("w", Ty::F32);
    let h = kb.var("h", Ty::F32);
    let i = kb.var("i", Ty::I32);
    let ctor = |c: u32, fields: Vec<Expr>| {
        Expr::new(
            ExprKind::Ctor {
                variant: shape,
                ctor: c,
                fields,
            },
            Ty::Variant(shape),
        )
    };
    let fi = convert(kb.v(i), Scalar::F32);
    let body = vec![
        let_(i, gid()),
        st(StmtKind::Match {
            scrutinee: kb.idx(s, kb.v(i)),
            variant: shape,
            arms: vec![
                MatchArm {
                    ctor: Some(0),
                    bindings: vec![Some(r)],
                    body: vec![store(area, kb.v(i), mul(mul(f32c(3.0), kb.v(r)), kb.v(r)))],
                },
                MatchArm {
                    ctor: Some(1),
                    bindings: vec![Some(w), Some(h)],
                    body: vec![store(area, kb.v(i), mul(kb.v(w), kb.v(h)))],
                },
                MatchArm {
                    ctor: None,
                    bindings: vec![],
                    body: vec![store(area, kb.v(i), f32c(-1.0))],
                },
            ],
        }),
        if_(
            bin(BinOp::Eq, bin(BinOp::Rem, kb.v(i), i32c(3)), i32c(0)),
            vec![store(s, kb.v(i), ctor(1, vec![f32c(1.0), fi.clone()]))],
            vec![if_(
                bin(BinOp::Eq, bin(BinOp::Rem, kb.v(i), i32c(3)), i32c(1)),
                vec![store(s, kb.v(i), ctor(2, vec![]))],
                vec![store(s, kb.v(i), ctor(0, vec![fi.clone()]))],
            )],
        ),
        store(
            tv,
            kb.v(i),
            Expr::new(
                ExprKind::Record {
                    record: tup,
                    fields: vec![kb.v(i), bin(BinOp::Div, fi, f32c(2.0))],
                },
                Ty::Record(tup),
            ),
        ),
    ];
    kb.finish(body)
}

#[test]
fn variants_match_and_construction() {
    let k = shape_kernel();
    let n = 30;
    // Input shapes: tag i mod 3; payload columns tag, Circle_0, Rect_0, Rect_1.
    let tags: Vec<i32> = (0..n).map(|i| (i % 3) as i32).collect();
    let c0: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let r0: Vec<f32> = (0..n).map(|i| i as f32 + 0.5).collect();
    let r1: Vec<f32> = (0..n).map(|_| 2.0).collect();
    let mut args = vec![
        vec_cols(
            n,
            vec![
                Column::I32(tags.clone()),
                Column::F32(c0.clone()),
                Column::F32(r0.clone()),
                Column::F32(r1.clone()),
            ],
        ),
        vec_f32(&vec![0.0; n]),
        vec_cols(n, vec![Column::I32(vec![0; n]), Column::F32(vec![0.0; n])]),
    ];
    interp::run(&k, LaunchConfig::linear(n as u32), &mut args).unwrap();
    let want_area: Vec<f32> = (0..n)
        .map(|i| match tags[i] {
            0 => 3.0 * c0[i] * c0[i],
            1 => r0[i] * r1[i],
            _ => -1.0,
        })
        .collect();
    assert_eq!(out_f32(&args[1]), want_area);
    // Stored variants: tag, and the other constructors' payload leaves zeroed.
    let want_tag: Vec<i32> = (0..n).map(|i| [1, 2, 0][i % 3]).collect();
    assert_eq!(col(&args[0], 0), &Column::I32(want_tag));
    let want_c0: Vec<f32> = (0..n)
        .map(|i| if i % 3 == 2 { i as f32 } else { 0.0 })
        .collect();
    assert_eq!(col(&args[0], 1), &Column::F32(want_c0));
    let want_r1: Vec<f32> = (0..n)
        .map(|i| if i % 3 == 0 { i as f32 } else { 0.0 })
        .collect();
    assert_eq!(col(&args[0], 3), &Column::F32(want_r1));
    assert_eq!(col(&args[2], 0), &Column::I32((0..n as i32).collect()));
    assert_eq!(
        col(&args[2], 1),
        &Column::F32((0..n).map(|i| i as f32 / 2.0).collect())
    );
}

#[test]
fn helpers_with_return_loops_break_continue_and_memory_params() {
    // let find (v : int32 vector) (x : int32) : int32 =
    //   for j = 0 to length v - 1 do if v.(j) = x then return j done; -1
    // let sum_odd_until (lim : int32) : int32 =   (while loop with continue and break)
    //   let s = 0 and j = 0 in while true do j := j + 1; if j mod 2 = 0 then continue;
    //   if j > lim then break; s := s + j done; s
    // let scale (p : point) (k : float32) : point = { x = p.x * k; y = p.y * k }
    let mut kb = KB::new("helpers");
    let point = kb.record("point", &[("x", Ty::F32), ("y", Ty::F32)]);
    let hay = kb.vector("hay", Ty::I32);
    let pos = kb.vector("pos", Ty::I32);
    let sums = kb.vector("sums", Ty::I32);
    let pts = kb.vector("pts", Ty::Record(point));
    let origin = kb.param("origin", Ty::Record(point));
    let fv = kb.var("v", Ty::Vector(Box::new(Ty::I32)));
    let fx = kb.var("x", Ty::I32);
    let fj = kb.var("j", Ty::I32);
    let len = intr(
        sarek_compiler::intrinsics::Intrinsic::Length,
        vec![kb.v(fv)],
        Ty::I32,
    );
    let find_body = vec![
        for_(
            fj,
            i32c(0),
            bin(BinOp::Sub, len, i32c(1)),
            vec![if_(
                bin(BinOp::Eq, kb.idx(fv, kb.v(fj)), kb.v(fx)),
                vec![st(StmtKind::Return(Some(kb.v(fj))))],
                vec![],
            )],
        ),
        st(StmtKind::Return(Some(i32c(-1)))),
    ];
    let find = kb.func("find", vec![fv, fx], Ty::I32, find_body);
    let lim = kb.var("lim", Ty::I32);
    let s = kb.var("s", Ty::I32);
    let j2 = kb.var("j", Ty::I32);
    let sum_body = vec![
        let_(s, i32c(0)),
        let_(j2, i32c(0)),
        while_(
            boolc(true),
            vec![
                set(j2, add(kb.v(j2), i32c(1))),
                if_(
                    bin(BinOp::Eq, bin(BinOp::Rem, kb.v(j2), i32c(2)), i32c(0)),
                    vec![st(StmtKind::Continue)],
                    vec![],
                ),
                if_(
                    bin(BinOp::Gt, kb.v(j2), kb.v(lim)),
                    vec![st(StmtKind::Break)],
                    vec![],
                ),
                set(s, add(kb.v(s), kb.v(j2))),
            ],
        ),
        st(StmtKind::Return(Some(kb.v(s)))),
    ];
    let sum_odd = kb.func("sum_odd_until", vec![lim], Ty::I32, sum_body);
    let p = kb.var("p", Ty::Record(point));
    let kk = kb.var("k", Ty::F32);
    let scaled = Expr::new(
        ExprKind::Record {
            record: point,
            fields: vec![
                mul(kb.field(kb.v(p), 0), kb.v(kk)),
                mul(kb.field(kb.v(p), 1), kb.v(kk)),
            ],
        },
        Ty::Record(point),
    );
    let scale = kb.func(
        "scale",
        vec![p, kk],
        Ty::Record(point),
        vec![st(StmtKind::Return(Some(scaled)))],
    );
    let i = kb.var("i", Ty::I32);
    let q = kb.var("q", Ty::Record(point));
    let body = vec![
        let_(i, gid()),
        store(pos, kb.v(i), kb.call(find, vec![kb.v(hay), kb.v(i)])),
        // Two calls of the same helper in one expression.
        store(
            sums,
            kb.v(i),
            add(
                kb.call(sum_odd, vec![kb.v(i)]),
                mul(i32c(1000), kb.call(sum_odd, vec![i32c(5)])),
            ),
        ),
        let_(
            q,
            kb.call(
                scale,
                vec![kb.idx(pts, kb.v(i)), convert(kb.v(i), Scalar::F32)],
            ),
        ),
        store(
            pts,
            kb.v(i),
            Expr::new(
                ExprKind::Record {
                    record: point,
                    fields: vec![
                        add(kb.field(kb.v(q), 0), kb.field(kb.v(origin), 0)),
                        add(kb.field(kb.v(q), 1), kb.field(kb.v(origin), 1)),
                    ],
                },
                Ty::Record(point),
            ),
        ),
    ];
    let k = kb.finish(body);
    let n = 50usize;
    let hay_v: Vec<i32> = (0..n as i32).map(|i| (i * 7) % 60).collect();
    let px: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let py: Vec<f32> = (0..n).map(|i| 1.0 - i as f32).collect();
    let mut args = vec![
        vec_i32(&hay_v),
        vec_i32(&vec![0; n]),
        vec_i32(&vec![0; n]),
        vec_cols(n, vec![Column::F32(px.clone()), Column::F32(py.clone())]),
        ArgValue::Aggregate(vec![Literal::F32(0.5), Literal::F32(-0.5)]),
    ];
    // 64 threads but 50 elements: the fault is thread 50's out-of-bounds write of `pos`, and a
    // failed launch leaves the arguments untouched.
    let before = args.clone();
    let err = interp::run(&k, launch([2, 1, 1], [32, 1, 1]), &mut args).unwrap_err();
    assert_eq!(
        err.to_string(),
        "out-of-bounds write of `pos` (index 50, length 50) in kernel `helpers`, block (1,0,0), thread (18,0,0)"
    );
    assert_eq!(args, before);
    let k2 = {
        let mut k2 = k.clone();
        let guard = if_(lt(gid(), i32c(n as i32)), k2.body.split_off(0), vec![]);
        k2.body = vec![guard];
        k2
    };
    interp::run(&k2, launch([2, 1, 1], [32, 1, 1]), &mut args).unwrap();
    let want_pos: Vec<i32> = (0..n as i32)
        .map(|i| hay_v.iter().position(|&h| h == i).map_or(-1, |p| p as i32))
        .collect();
    assert_eq!(out_i32(&args[1]), want_pos);
    let sum_odd_ref = |lim: i32| (1..=lim).filter(|j| j % 2 == 1).sum::<i32>();
    let want_sums: Vec<i32> = (0..n as i32)
        .map(|i| sum_odd_ref(i) + 1000 * sum_odd_ref(5))
        .collect();
    assert_eq!(out_i32(&args[2]), want_sums);
    assert_eq!(
        col(&args[3], 0),
        &Column::F32((0..n).map(|i| px[i] * i as f32 + 0.5).collect())
    );
    assert_eq!(
        col(&args[3], 1),
        &Column::F32((0..n).map(|i| py[i] * i as f32 - 0.5).collect())
    );
}

#[test]
fn select_short_circuit_and_divergent_loops() {
    // out.(i) <- (if i < n && x.(i) > 0 then x.(i) else 0) computed with Select and a
    // short-circuit `&&` whose right operand would read out of bounds; then a loop whose trip
    // count depends on the thread, with `break` taken by some threads.
    let mut kb = KB::new("select");
    let x = kb.vector("x", Ty::I32);
    let out = kb.vector("out", Ty::I32);
    let cnt = kb.vector("cnt", Ty::I32);
    let n = kb.param("n", Ty::I32);
    let i = kb.var("i", Ty::I32);
    let ok = kb.var("ok", Ty::BOOL);
    let j = kb.var("j", Ty::I32);
    let c = kb.var("c", Ty::I32);
    let cond = bin(
        BinOp::And,
        lt(kb.v(i), kb.v(n)),
        bin(BinOp::Gt, kb.idx(x, kb.v(i)), i32c(0)),
    );
    let sel = Expr::new(
        ExprKind::Select {
            cond: Box::new(kb.v(ok)),
            then_value: Box::new(kb.v(i)),
            else_value: Box::new(i32c(-7)),
        },
        Ty::I32,
    );
    let body = vec![
        let_(i, gid()),
        let_(ok, cond),
        if_(
            lt(kb.v(i), kb.v(n)),
            vec![
                store(out, kb.v(i), sel),
                let_(c, i32c(0)),
                for_(
                    j,
                    i32c(0),
                    kb.v(i),
                    vec![
                        if_(
                            bin(BinOp::Gt, kb.v(j), i32c(10)),
                            vec![st(StmtKind::Break)],
                            vec![],
                        ),
                        if_(
                            bin(BinOp::Eq, bin(BinOp::Rem, kb.v(j), i32c(3)), i32c(0)),
                            vec![st(StmtKind::Continue)],
                            vec![],
                        ),
                        set(c, add(kb.v(c), kb.v(j))),
                    ],
                ),
                store(cnt, kb.v(i), kb.v(c)),
            ],
            vec![],
        ),
    ];
    let k = kb.finish(body);
    let nn = 40;
    let xv: Vec<i32> = (0..nn).map(|i| if i % 4 == 0 { -1 } else { i }).collect();
    let mut args = vec![
        vec_i32(&xv),
        vec_i32(&vec![0; nn as usize]),
        vec_i32(&vec![0; nn as usize]),
        s_i32(nn),
    ];
    interp::run(&k, launch([1, 1, 1], [64, 1, 1]), &mut args).unwrap();
    assert_eq!(
        out_i32(&args[1]),
        (0..nn)
            .map(|i| if xv[i as usize] > 0 { i } else { -7 })
            .collect::<Vec<_>>()
    );
    let want: Vec<i32> = (0..nn)
        .map(|i| (0..=i.min(10)).filter(|j| j % 3 != 0).sum())
        .collect();
    assert_eq!(out_i32(&args[2]), want);
}

#[test]
fn shared_array_of_records() {
    // let%shared (s : point) = 64 in s.(t).x <- t; s.(t).y <- 2t; barrier;
    // out.(t) <- s.(63 - t).x + s.(63 - t).y
    let mut kb = KB::new("shared_records");
    let point = kb.record("point", &[("x", Ty::I32), ("y", Ty::I32)]);
    let out = kb.vector("out", Ty::I32);
    let sh = kb.array("s", Ty::Record(point), MemSpace::Shared, 64);
    let at = || LValue::Index {
        base: sh,
        index: Box::new(tid()),
    };
    let other = bin(BinOp::Sub, i32c(63), tid());
    let body = vec![
        st(StmtKind::Array { var: sh }),
        st(StmtKind::Assign {
            place: LValue::Field {
                base: Box::new(at()),
                field: 0,
            },
            value: tid(),
        }),
        st(StmtKind::Assign {
            place: LValue::Field {
                base: Box::new(at()),
                field: 1,
            },
            value: mul(tid(), i32c(2)),
        }),
        barrier(),
        store(
            out,
            tid(),
            add(
                kb.field(kb.idx(sh, other.clone()), 0),
                kb.field(kb.idx(sh, other), 1),
            ),
        ),
    ];
    let k = kb.finish(body);
    let mut args = vec![vec_i32(&[0; 64])];
    interp::run(&k, launch([1, 1, 1], [64, 1, 1]), &mut args).unwrap();
    assert_eq!(
        out_i32(&args[0]),
        (0..64).map(|t| 3 * (63 - t)).collect::<Vec<_>>()
    );
}

#[test]
fn helpers_take_shared_and_local_arrays() {
    // let total (a : int32 array) (k : int32) : int32 =
    //   let s = 0 in for j = 0 to k - 1 do s := s + a.(j) done; s
    // Called with a shared tile and with a per-thread local array.
    let mut kb = KB::new("array_params");
    let out = kb.vector("out", Ty::I32);
    let fa = kb.var(
        "a",
        Ty::Array {
            elem: Box::new(Ty::I32),
            space: MemSpace::Shared,
            size: None,
        },
    );
    let fk = kb.var("k", Ty::I32);
    let fs = kb.var("s", Ty::I32);
    let fj = kb.var("j", Ty::I32);
    let total = kb.func(
        "total",
        vec![fa, fk],
        Ty::I32,
        vec![
            let_(fs, i32c(0)),
            for_(
                fj,
                i32c(0),
                bin(BinOp::Sub, kb.v(fk), i32c(1)),
                vec![set(fs, add(kb.v(fs), kb.idx(fa, kb.v(fj))))],
            ),
            st(StmtKind::Return(Some(kb.v(fs)))),
        ],
    );
    let tile = kb.array("tile", Ty::I32, MemSpace::Shared, 32);
    let mine = kb.array("mine", Ty::I32, MemSpace::Local, 3);
    let j = kb.var("j", Ty::I32);
    let body = vec![
        st(StmtKind::Array { var: tile }),
        st(StmtKind::Array { var: mine }),
        store(tile, tid(), mul(tid(), tid())),
        for_(
            j,
            i32c(0),
            i32c(2),
            vec![store(mine, kb.v(j), add(tid(), kb.v(j)))],
        ),
        barrier(),
        store(
            out,
            gid(),
            add(
                mul(
                    i32c(1000),
                    kb.call(total, vec![kb.v(tile), add(tid(), i32c(1))]),
                ),
                kb.call(total, vec![kb.v(mine), i32c(3)]),
            ),
        ),
    ];
    let k = kb.finish(body);
    let mut args = vec![vec_i32(&[0; 64])];
    interp::run(&k, launch([2, 1, 1], [32, 1, 1]), &mut args).unwrap();
    let want: Vec<i32> = (0..64)
        .map(|g| {
            let t = g % 32;
            1000 * (0..=t).map(|j| j * j).sum::<i32>() + (0..3).map(|j| t + j).sum::<i32>()
        })
        .collect();
    assert_eq!(out_i32(&args[0]), want);
}

#[test]
fn native_code_is_refused() {
    let mut kb = KB::new("native");
    kb.vector("x", Ty::I32);
    let k = kb.finish(vec![st(StmtKind::Native("x[0] = 1;".into()))]);
    let err = interp::run(&k, LaunchConfig::linear(1), &mut [vec_i32(&[0])]).unwrap_err();
    // A refusal for the IR target (a capability limit), located at the statement.
    let sarek_runtime::RuntimeError::Refused {
        target,
        kernel,
        diagnostics,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(
        (*target, kernel.as_str()),
        (sarek_compiler::Target::Ir, "native")
    );
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(
        err.to_string(),
        "IR cannot run kernel `native`: opaque native code cannot run on the interpreter or \
         the cpu backend (run this kernel on the backend whose language the native code is \
         written in)"
    );
}
