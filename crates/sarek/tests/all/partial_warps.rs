//! Partial warps (issue 19): in a block whose thread count is not a multiple of 32, the last
//! warp has fewer than 32 threads. The language defines it (docs/language-notes.md, "Partial
//! warps"): a warp is 32 consecutive threads in linear order (x fastest); a shuffle whose
//! source lane is outside the warp or past the end of the block reads the caller's own
//! value; votes and ballots see the warp's existing threads only. The model below computes
//! that in Rust, and every backend must agree with it, for blocks of 16, 48 and 12x3 threads
//! and offsets that cross into the missing lanes.
//!
//! Distances include a negative one and one past the warp (the source lane is exact, not
//! reduced to five bits). `cuda` and `ptx` run it only where an NVIDIA GPU is (the H200:
//! `SAREK_REQUIRE_BACKENDS=cuda,ptx`). A backend that refuses warp operations
//! (WGSL without 32-lane subgroups) is skipped with its reason; an unavailable one too,
//! unless `SAREK_REQUIRE_BACKENDS` names it.

use sarek::{ArgValue, Column, HostVector, LaunchConfig, RuntimeError};
use sarek::{Backend, Literal, Program};

const SOURCE: &str = r#"
let%kernel partial (src : int32 vector) (down : int32 vector) (up : int32 vector)
    (xr : int32 vector) (idx : int32 vector) (all_ : int32 vector) (any_ : int32 vector)
    (bal : int32 vector) (d : int32) =
  let t = thread_idx_x + block_dim_x * thread_idx_y in
  let i = t + block_idx_x * (block_dim_x * block_dim_y) in
  let x = src.(i) in
  down.(i) <- warp_shuffle_down x d;
  up.(i) <- warp_shuffle_up x d;
  xr.(i) <- warp_shuffle_xor x d;
  idx.(i) <- warp_shuffle x (t + d);
  all_.(i) <- (if warp_vote_all (x mod 7 <> 0) then 1 else 0);
  any_.(i) <- (if warp_vote_any (x mod 5 = 0) then 1 else 0);
  bal.(i) <- warp_ballot (x land 1 = 1)
"#;

const WARP: usize = 32;

/// The outputs of thread `t` of a block of `n` threads whose inputs are `xs`, in parameter
/// order after `src`: down, up, xor, idx, all, any, ballot.
fn model(xs: &[i32], n: usize, t: usize, d: i32) -> [i32; 7] {
    let lane = (t % WARP) as i64;
    let base = t - lane as usize;
    let live = WARP.min(n - base);
    let read = |src: i64| {
        if (0..WARP as i64).contains(&src) && (src as usize) < live {
            xs[base + src as usize]
        } else {
            xs[t]
        }
    };
    let d64 = i64::from(d);
    let warp = &xs[base..base + live];
    let ballot = warp
        .iter()
        .enumerate()
        .filter(|(_, x)| *x & 1 == 1)
        .fold(0u32, |b, (l, _)| b | 1 << l);
    [
        read(lane + d64),
        read(lane - d64),
        read(lane ^ d64),
        read((t as i64 + d64) & (WARP as i64 - 1)),
        i32::from(warp.iter().all(|x| x % 7 != 0)),
        i32::from(warp.iter().any(|x| x % 5 == 0)),
        ballot as i32,
    ]
}

fn required(b: Backend) -> bool {
    std::env::var("SAREK_REQUIRE_BACKENDS").is_ok_and(|v| {
        v.split(',')
            .any(|x| x.trim() == b.name() || x.trim() == "all")
    })
}

#[test]
fn partial_warps_follow_the_language_on_every_backend() {
    let Ok(program) = Program::check("partial.sarek", SOURCE) else {
        panic!("the kernel does not check")
    };
    let kernel = program.lower("partial").expect("the kernel lowers");
    let mut compared = 0;
    for backend in Backend::ALL {
        let device = match sarek::open(backend) {
            Ok(d) => d,
            Err(e) => {
                assert!(!required(backend), "{} is required: {e}", backend.name());
                eprintln!("skipping {}: {e}", backend.name());
                continue;
            }
        };
        'launches: for block in [[16, 1, 1], [48, 1, 1], [12, 3, 1], [64, 1, 1]] {
            let n = (block[0] * block[1]) as usize;
            let grid = 2;
            let len = n * grid;
            // Distinct values with every residue mod 5 and 7 and both parities.
            let xs: Vec<i32> = (0..len as i32).map(|k| 3 * k * k + 11 * k + 1).collect();
            for d in [1, 5, 17, 31, -3, 40] {
                let mut args = vec![ArgValue::Vector(HostVector {
                    len,
                    columns: vec![Column::I32(xs.clone())],
                })];
                for _ in 0..7 {
                    args.push(ArgValue::Vector(HostVector {
                        len,
                        columns: vec![Column::I32(vec![0; len])],
                    }));
                }
                args.push(ArgValue::Scalar(Literal::I32(d)));
                let config = LaunchConfig {
                    grid: [grid as u32, 1, 1],
                    block,
                };
                let what = format!("{backend}, block {block:?}, d = {d}");
                match sarek_runtime::launch::run_checked(
                    device.as_ref(),
                    &kernel,
                    config,
                    &mut args,
                    false,
                ) {
                    Ok(_) => {}
                    Err(RuntimeError::Refused { .. }) => {
                        eprintln!("{backend} refuses the warp operations; skipped");
                        break 'launches;
                    }
                    Err(e) => panic!("{what}: {}", program.render_runtime_error(&e, false)),
                }
                for (p, name) in ["down", "up", "xor", "idx", "all", "any", "ballot"]
                    .iter()
                    .enumerate()
                {
                    let ArgValue::Vector(v) = &args[p + 1] else {
                        unreachable!()
                    };
                    let want: Vec<i32> = (0..len)
                        .map(|i| {
                            let b = i / n;
                            model(&xs[b * n..(b + 1) * n], n, i % n, d)[p]
                        })
                        .collect();
                    assert_eq!(v.columns[0], Column::I32(want), "{what}: `{name}`");
                }
                compared += 1;
            }
        }
    }
    assert!(compared > 0);
}
