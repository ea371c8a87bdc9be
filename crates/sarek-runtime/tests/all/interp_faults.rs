//! The interpreter as a debugger: every fault kind with its span and message, and argument
//! validation. The cpu backend reports the same faults.

use sarek_testkit::interp as interp_util;

use interp_util::kernels::*;
use interp_util::*;
use sarek_compiler::intrinsics::{Intrinsic, WarpOp};
use sarek_compiler::ir::*;
use sarek_compiler::types::{BinOp, Literal, MemSpace};
use sarek_compiler::{FileId, Span};
use sarek_runtime::{ArgValue, Column, HostVector, LaunchConfig, RuntimeError, cpu, interp};

fn fault(k: &Kernel, config: LaunchConfig, args: &mut [ArgValue]) -> (Span, String) {
    let e = interp::run(k, config, args).unwrap_err();
    let c = cpu::run(k, config, &mut args.to_vec()).unwrap_err();
    assert_eq!(e, c, "interp and cpu report the same fault");
    match e {
        RuntimeError::Fault { span, message } => (span, message),
        e => panic!("expected a fault, got {e:?}"),
    }
}

fn span(at: usize) -> Span {
    Span::new(FileId(0), at, at + 1)
}

fn block256(grid: u32) -> LaunchConfig {
    launch([grid, 1, 1], [256, 1, 1])
}

#[test]
fn out_of_bounds_read_names_kernel_block_and_thread() {
    let mut k = saxpy();
    // The `if` is statement 1 of the body; its store inside carries the span we check.
    k.body[1].span = span(40);
    if let StmtKind::If { then_block, .. } = &mut k.body[1].kind {
        then_block[0].span = span(77);
    }
    let mut args = vec![
        vec_f32(&[1.0; 1024]),
        vec_f32(&[2.0; 1024]),
        s_f32(2.0),
        s_i32(1025),
    ];
    let (sp, msg) = fault(&k, block256(5), &mut args);
    assert_eq!(sp, span(77));
    assert_eq!(
        msg,
        "out-of-bounds read of `x` (index 1024, length 1024) in kernel `saxpy`, block (4,0,0), thread (0,0,0)"
    );
}

#[test]
fn out_of_bounds_write_and_negative_index() {
    let mut kb = KB::new("writer");
    let out = kb.vector("out", Ty::I32);
    let body = vec![st_at(
        StmtKind::Assign {
            place: LValue::Index {
                base: out,
                index: Box::new(add(gid(), i32c(-3))),
            },
            value: i32c(1),
        },
        9,
    )];
    let k = kb.finish(body);
    let (sp, msg) = fault(&k, launch([1, 1, 1], [4, 1, 1]), &mut [vec_i32(&[0; 4])]);
    assert_eq!(sp, span(9));
    assert_eq!(
        msg,
        "out-of-bounds write of `out` (index -3, length 4) in kernel `writer`, block (0,0,0), thread (0,0,0)"
    );
}

#[test]
fn integer_division_and_mod_by_zero() {
    for (op, what) in [
        (BinOp::Div, "integer division by zero"),
        (BinOp::Rem, "integer `mod` by zero"),
    ] {
        let mut kb = KB::new("divide");
        let x = kb.vector("x", Ty::I32);
        let d = kb.vector("d", Ty::I64);
        let body = vec![
            st_at(
                StmtKind::Assign {
                    place: LValue::Index {
                        base: x,
                        index: Box::new(gid()),
                    },
                    value: bin(op, i32c(100), kb.idx(x, gid())),
                },
                3,
            ),
            st_at(
                StmtKind::Assign {
                    place: LValue::Index {
                        base: d,
                        index: Box::new(gid()),
                    },
                    value: bin(op, i64c(1 << 40), kb.idx(d, gid())),
                },
                5,
            ),
        ];
        let k = kb.finish(body);
        // int32 divisor zero at thread 6 of block 1.
        let mut xv = vec![1; 16];
        xv[8 + 6] = 0;
        let cfg = launch([2, 1, 1], [8, 1, 1]);
        let (sp, msg) = fault(&k, cfg, &mut [vec_i32(&xv), vec_i64(&[1; 16])]);
        assert_eq!(sp, span(3));
        assert_eq!(
            msg,
            format!("{what} in kernel `divide`, block (1,0,0), thread (6,0,0)")
        );
        // int64: a divisor whose low 32 bits are zero is not zero.
        let mut dv = vec![1i64; 16];
        dv[3] = 1 << 32;
        dv[5] = 0;
        let (sp, msg) = fault(&k, cfg, &mut [vec_i32(&[1; 16]), vec_i64(&dv)]);
        assert_eq!(sp, span(5));
        assert_eq!(
            msg,
            format!("{what} in kernel `divide`, block (0,0,0), thread (5,0,0)")
        );
    }
}

#[test]
fn barrier_reached_by_part_of_the_block() {
    let mut kb = KB::new("halfbar");
    let x = kb.vector("x", Ty::I32);
    let body = vec![
        store(x, gid(), i32c(1)),
        if_(
            lt(tid(), i32c(100)),
            vec![st_at(StmtKind::Barrier, 12)],
            vec![],
        ),
    ];
    let k = kb.finish(body);
    let (sp, msg) = fault(&k, block256(2), &mut [vec_i32(&[0; 512])]);
    assert_eq!(sp, span(12));
    assert_eq!(
        msg,
        "block barrier reached by only 100 of the 256 threads of the block (thread (100,0,0) does not reach it) \
         in kernel `halfbar`, block (0,0,0), thread (0,0,0)"
    );
    // The same barrier in a loop whose trip count is uniform is fine; a `continue` taken by
    // some threads before it is not.
    let mut kb = KB::new("loopbar");
    let j = kb.var("j", Ty::I32);
    let body = vec![for_(
        j,
        i32c(0),
        i32c(3),
        vec![
            if_(
                bin(BinOp::Eq, kb.v(j), i32c(2)),
                vec![if_(
                    lt(tid(), i32c(3)),
                    vec![st(StmtKind::Continue)],
                    vec![],
                )],
                vec![],
            ),
            st_at(StmtKind::Barrier, 20),
        ],
    )];
    let k = kb.finish(body);
    let (sp, msg) = fault(&k, launch([1, 1, 1], [8, 2, 1]), &mut []);
    assert_eq!(sp, span(20));
    assert_eq!(
        msg,
        "block barrier reached by only 10 of the 16 threads of the block (thread (0,0,0) does not reach it) \
         in kernel `loopbar`, block (0,0,0), thread (3,0,0)"
    );
}

#[test]
fn read_of_shared_memory_no_thread_wrote() {
    let mut kb = KB::new("uninit");
    let out = kb.vector("out", Ty::I32);
    let tile = kb.array("tile", Ty::I32, MemSpace::Shared, 256);
    let body = vec![
        st(StmtKind::Array { var: tile }),
        if_(
            lt(tid(), i32c(128)),
            vec![store(tile, tid(), tid())],
            vec![],
        ),
        barrier(),
        st_at(
            StmtKind::Assign {
                place: LValue::Index {
                    base: out,
                    index: Box::new(gid()),
                },
                value: kb.idx(tile, bin(BinOp::Sub, i32c(255), tid())),
            },
            31,
        ),
    ];
    let k = kb.finish(body);
    let (sp, msg) = fault(&k, block256(1), &mut [vec_i32(&[0; 256])]);
    assert_eq!(sp, span(31));
    assert_eq!(
        msg,
        "read of shared memory `tile` (index 255) that no thread wrote in kernel `uninit`, block (0,0,0), thread (0,0,0)"
    );
}

#[test]
fn warp_operation_reached_by_part_of_a_warp() {
    let mut kb = KB::new("halfwarp");
    let out = kb.vector("out", Ty::I32);
    let ballot = intr(Intrinsic::Warp(WarpOp::Ballot), vec![boolc(true)], Ty::I32);
    let body = vec![if_(
        bin(BinOp::Ne, tid(), i32c(37)),
        vec![st_at(
            StmtKind::Assign {
                place: LValue::Index {
                    base: out,
                    index: Box::new(tid()),
                },
                value: ballot,
            },
            44,
        )],
        vec![],
    )];
    let k = kb.finish(body);
    let (sp, msg) = fault(&k, launch([1, 1, 1], [64, 1, 1]), &mut [vec_i32(&[0; 64])]);
    assert_eq!(sp, span(44));
    assert_eq!(
        msg,
        "warp operation reached by only 31 of the 32 threads of warp 1 in kernel `halfwarp`, block (0,0,0), thread (32,0,0)"
    );
}

#[test]
fn match_on_an_invalid_tag() {
    let mut kb = KB::new("badtag");
    let opt = kb.variant("opt", &[("None", vec![]), ("Some", vec![Ty::I32])]);
    let v = kb.vector("v", Ty::Variant(opt));
    let body = vec![st_at(
        StmtKind::Match {
            scrutinee: kb.idx(v, gid()),
            variant: opt,
            arms: vec![
                MatchArm {
                    ctor: Some(0),
                    bindings: vec![],
                    body: vec![],
                },
                MatchArm {
                    ctor: Some(1),
                    bindings: vec![None],
                    body: vec![],
                },
            ],
        },
        50,
    )];
    let k = kb.finish(body);
    let arg = ArgValue::Vector(HostVector {
        len: 3,
        columns: vec![Column::I32(vec![0, 1, 7]), Column::I32(vec![0; 3])],
    });
    let (sp, msg) = fault(&k, LaunchConfig::linear(3), &mut [arg]);
    assert_eq!(sp, span(50));
    assert_eq!(
        msg,
        "variant value with invalid tag 7 matched in kernel `badtag`, block (0,0,0), thread (2,0,0)"
    );
}

#[test]
fn first_fault_in_block_order() {
    // Every block from 3 on faults; both backends report block 3.
    let mut kb = KB::new("many");
    let x = kb.vector("x", Ty::I32);
    let body = vec![store(x, bin(BinOp::Div, gid(), i32c(1)), i32c(1))];
    let k = kb.finish(body);
    let (_, msg) = fault(
        &k,
        launch([64, 1, 1], [32, 1, 1]),
        &mut [vec_i32(&[0; 100])],
    );
    assert_eq!(
        msg,
        "out-of-bounds write of `x` (index 100, length 100) in kernel `many`, block (3,0,0), thread (4,0,0)"
    );
}

fn args_error(k: &Kernel, config: LaunchConfig, mut args: Vec<ArgValue>) -> String {
    match interp::run(k, config, &mut args) {
        Err(RuntimeError::Arguments(m)) | Err(RuntimeError::Launch(m)) => m,
        r => panic!("expected an argument error, got {r:?}"),
    }
}

#[test]
fn arguments_are_checked_against_the_signature() {
    let k = saxpy();
    let cfg = LaunchConfig::linear(4);
    let good = || vec![vec_f32(&[0.0; 4]), vec_f32(&[0.0; 4]), s_f32(1.0), s_i32(4)];
    assert_eq!(
        args_error(&k, cfg, good()[..3].to_vec()),
        "kernel `saxpy` takes 4 arguments (x, y, a, n), got 3"
    );
    let mut a = good();
    a[2] = s_i32(1);
    assert_eq!(
        args_error(&k, cfg, a),
        "argument `a` of kernel `saxpy` has type float32, got an int32 value"
    );
    let mut a = good();
    a[0] = s_f32(1.0);
    assert_eq!(
        args_error(&k, cfg, a),
        "argument `x` of kernel `saxpy` has type float32 vector, got a float32 scalar"
    );
    let mut a = good();
    a[1] = vec_i32(&[0; 4]);
    assert_eq!(
        args_error(&k, cfg, a),
        "argument `y` of kernel `saxpy` holds int32 elements, expected float32"
    );
    let mut a = good();
    a[3] = vec_i32(&[0; 4]);
    assert_eq!(
        args_error(&k, cfg, a),
        "argument `n` of kernel `saxpy` has type int32, got a vector of 1 columns"
    );
    let mut a = good();
    a[0] = ArgValue::Vector(HostVector {
        len: 5,
        columns: vec![Column::F32(vec![0.0; 4])],
    });
    assert_eq!(
        args_error(&k, cfg, a),
        "argument `x` of kernel `saxpy` has 4 elements, the vector has 5"
    );

    // Vectors of records: column count and per-column names.
    let mut kb = KB::new("recs");
    let point = kb.record("point", &[("x", Ty::F32), ("y", Ty::I32)]);
    kb.vector("pts", Ty::Record(point));
    kb.param("p", Ty::Record(point));
    let k = kb.finish(vec![]);
    let pts = |cols| {
        ArgValue::Vector(HostVector {
            len: 2,
            columns: cols,
        })
    };
    let agg = ArgValue::Aggregate(vec![Literal::F32(0.0), Literal::I32(1)]);
    assert_eq!(
        args_error(
            &k,
            cfg,
            vec![pts(vec![Column::F32(vec![0.0; 2])]), agg.clone()]
        ),
        "argument `pts` of kernel `recs` (point vector) needs 2 column(s) (x: float32, y: int32), got 1"
    );
    assert_eq!(
        args_error(
            &k,
            cfg,
            vec![
                pts(vec![Column::F32(vec![0.0; 2]), Column::F32(vec![0.0; 2])]),
                agg.clone()
            ]
        ),
        "argument `pts` column `y` of kernel `recs` holds float32 elements, expected int32"
    );
    assert_eq!(
        args_error(
            &k,
            cfg,
            vec![
                pts(vec![Column::F32(vec![0.0; 2]), Column::I32(vec![0; 2])]),
                ArgValue::Aggregate(vec![Literal::F32(0.0)])
            ]
        ),
        "argument `p` of kernel `recs` has type point (leaves: float32, int32), got an aggregate of (float32)"
    );
    let mut ok = vec![
        pts(vec![Column::F32(vec![0.0; 2]), Column::I32(vec![0; 2])]),
        agg,
    ];
    interp::run(&k, cfg, &mut ok).unwrap();

    // Launch geometry.
    assert_eq!(
        args_error(&saxpy(), launch([1, 1, 1], [64, 32, 1]), good()),
        "a block of 2048 threads (64x32x1) exceeds the maximum of 1024"
    );
    assert_eq!(
        args_error(&saxpy(), launch([0, 1, 1], [64, 1, 1]), good()),
        "launch of kernel `saxpy` with an empty grid or block (grid [0, 1, 1], block [64, 1, 1])"
    );
}

#[test]
fn devices_open_and_describe_themselves() {
    let i = interp::open().unwrap();
    assert_eq!(i.info().backend, sarek_runtime::Backend::Interp);
    assert_eq!(i.info().max_threads_per_block, 1024);
    let c = cpu::open().unwrap();
    assert_eq!(c.info().backend, sarek_runtime::Backend::Cpu);
    let mut args = vec![
        vec_i32(&[1, 2]),
        vec_i32(&[3, 4]),
        vec_i32(&[0, 0]),
        s_i32(2),
    ];
    let stats = c
        .launch(&vadd(), LaunchConfig::linear(2), &mut args)
        .unwrap();
    assert!(stats.total_time >= stats.kernel_time);
    assert_eq!(out_i32(&args[2]), vec![4, 6]);
}
