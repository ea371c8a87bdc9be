//! The cpu backend: same results as the interpreter (and as Rust references) with blocks in
//! parallel, including atomics contended across blocks.

use sarek_testkit::interp as interp_util;

use interp_util::kernels::*;
use interp_util::*;
use sarek_compiler::intrinsics::{AtomicOp, Intrinsic};
use sarek_compiler::ir::*;
use sarek_compiler::types::BinOp;
use sarek_runtime::{LaunchConfig, cpu, interp};

#[test]
fn cpu_matches_interp_and_references() {
    let n = 5000usize;
    let x: Vec<i32> = rand_seq(2, n)
        .iter()
        .map(|v| (*v % 2001) as i32 - 1000)
        .collect();
    let out = both(
        &vadd(),
        LaunchConfig::linear(n as u32),
        vec![
            vec_i32(&x),
            vec_i32(&x),
            vec_i32(&vec![0; n]),
            s_i32(n as i32),
        ],
    );
    assert_eq!(
        out_i32(&out[2]),
        x.iter().map(|v| 2 * v).collect::<Vec<_>>()
    );

    check_block_sums(&reduce(256), &x);
    check_mandelbrot(&mandelbrot(), 128, 96, 64);
    check_matmul(&matmul(16));
}

#[test]
fn contended_atomics_across_parallel_blocks() {
    // 256 blocks of 64 threads all add to 4 counters and take tickets from one: the sums are
    // exact and the tickets a permutation, whatever the interleaving.
    let mut kb = KB::new("contend");
    let hist = kb.vector("hist", Ty::I32);
    let big = kb.vector("big", Ty::I64);
    let tickets = kb.vector("tickets", Ty::I32);
    let counter = kb.vector("counter", Ty::I32);
    let at = |op, args: Vec<Expr>, ty| intr(Intrinsic::Atomic(op), args, ty);
    let body = vec![
        expr_st(at(
            AtomicOp::Add,
            vec![kb.v(hist), bin(BinOp::Rem, gid(), i32c(4)), i32c(1)],
            Ty::I32,
        )),
        expr_st(at(
            AtomicOp::Add,
            vec![
                kb.v(big),
                i32c(0),
                convert(gid(), sarek_compiler::types::Scalar::I64),
            ],
            Ty::I64,
        )),
        store(
            tickets,
            gid(),
            at(AtomicOp::Inc, vec![kb.v(counter), i32c(0)], Ty::I32),
        ),
    ];
    let k = kb.finish(body);
    let n = 256 * 64;
    let mut args = vec![
        vec_i32(&[0; 4]),
        vec_i64(&[0]),
        vec_i32(&vec![0; n]),
        vec_i32(&[0]),
    ];
    for _ in 0..3 {
        let mut a = args.clone();
        cpu::run(&k, launch([256, 1, 1], [64, 1, 1]), &mut a).unwrap();
        assert_eq!(out_i32(&a[0]), vec![n as i32 / 4; 4]);
        assert_eq!(out_i64(&a[1]), vec![(n as i64 - 1) * n as i64 / 2]);
        let mut t = out_i32(&a[2]);
        t.sort_unstable();
        assert_eq!(t, (0..n as i32).collect::<Vec<_>>());
        assert_eq!(out_i32(&a[3]), vec![n as i32]);
    }
    interp::run(&k, launch([256, 1, 1], [64, 1, 1]), &mut args).unwrap();
    assert_eq!(
        out_i32(&args[2]),
        (0..n as i32).collect::<Vec<_>>(),
        "the interpreter is deterministic"
    );
}
