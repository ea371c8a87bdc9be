//! Kernels the convergence check must accept: synchronisation under uniform control flow,
//! thread-dependent code that synchronises nowhere, and the classic shapes (reduction loop,
//! tiled loops, supersteps in uniform loops). The refusals live in `tests/errors/conv_*`.

use sarek_compiler::diag::{SourceMap, render_all};

fn accepts(name: &str, src: &str) {
    let mut sources = SourceMap::new();
    let file = sources.add(format!("{name}.sarek"), src);
    if let Err(d) = sarek_compiler::check(&sources, file) {
        panic!("{name} refused:\n{}", render_all(&d, &sources, false));
    }
}

fn refuses(name: &str, src: &str, needle: &str) {
    let mut sources = SourceMap::new();
    let file = sources.add(format!("{name}.sarek"), src);
    match sarek_compiler::check(&sources, file) {
        Ok(_) => panic!("{name} accepted"),
        Err(d) => {
            let text = render_all(&d, &sources, false);
            assert!(
                text.contains(needle),
                "{name}: expected `{needle}` in\n{text}"
            );
        }
    }
}

#[test]
fn classic_reduction() {
    accepts(
        "reduction",
        r#"
let%kernel reduce (input : float32 vector) (output : float32 vector) (n : int32) =
  let%shared (sdata : float32) = 256 in
  let tid = thread_idx_x in
  let gid = global_thread_id in
  sdata.(tid) <- (if gid < n then input.(gid) else 0.0);
  block_barrier ();
  let mut stride = block_dim_x / 2 in
  while stride > 0 do
    if tid < stride then sdata.(tid) <- sdata.(tid) +. sdata.(tid + stride);
    block_barrier ();
    stride := stride / 2
  done;
  if tid = 0 then output.(block_idx_x) <- sdata.(0)
"#,
    );
}

#[test]
fn uniform_conditions_may_guard_barriers() {
    accepts(
        "uniform",
        r#"
let half (x : int32) : int32 = x / 2

let%kernel k (out : int32 vector) (n : int32) (flag : bool) =
  let%shared (s : int32) = 256 in
  if block_idx_x = 0 then block_barrier ();
  if n > 16 && flag then block_barrier ();
  if block_dim_x > warp_size then block_barrier ();
  for j = 0 to half n do
    block_barrier ()
  done;
  match grid_dim_x mod 2 with
  | 0 -> block_barrier ()
  | _ -> ();
  s.(thread_idx_x) <- 1;
  out.(global_thread_id) <- s.(thread_idx_x)
"#,
    );
}

#[test]
fn divergent_code_without_synchronisation_is_fine() {
    accepts(
        "divergent",
        r#"
let%kernel k (a : int32 vector) (out : int32 vector) (n : int32) =
  let i = global_thread_id in
  let mut acc = 0 in
  for j = 0 to i mod 7 do acc := acc + j done;
  while acc > 100 do acc := acc / 2 done;
  if i < n then out.(i) <- acc + a.(i);
  block_barrier ()
"#,
    );
}

#[test]
fn tiled_loop_with_uniform_trip_count() {
    accepts(
        "tiled",
        r#"
let%kernel matmul (a : float32 vector) (b : float32 vector) (c : float32 vector) (n : int32) =
  let%shared (ta : float32) = 256 in
  let%shared (tb : float32) = 256 in
  let tx = thread_idx_x in
  let ty = thread_idx_y in
  let row = block_idx_y * 16 + ty in
  let col = block_idx_x * 16 + tx in
  let mut acc = 0.0 in
  for t = 0 to (n + 15) / 16 - 1 do
    let ak = t * 16 + tx in
    let bk = t * 16 + ty in
    ta.(ty * 16 + tx) <- (if row < n && ak < n then a.(row * n + ak) else 0.0);
    tb.(ty * 16 + tx) <- (if col < n && bk < n then b.(bk * n + col) else 0.0);
    block_barrier ();
    for k = 0 to 15 do
      acc := acc +. ta.(ty * 16 + k) *. tb.(k * 16 + tx)
    done;
    block_barrier ()
  done;
  if row < n && col < n then c.(row * n + col) <- acc
"#,
    );
}

#[test]
fn supersteps_in_uniform_loops_and_divergent_bodies() {
    accepts(
        "supersteps",
        r#"
let%kernel k (a : float32 vector) (n : int32) =
  let%shared (tile : float32) = 256 in
  let i = global_thread_id in
  let%superstep[@divergent] load =
    if i < n then tile.(thread_idx_x) <- a.(i) else tile.(thread_idx_x) <- 0.0
  in
  for round = 1 to 3 do
    let%superstep shift = tile.(thread_idx_x) <- tile.(thread_idx_x) *. 0.5 in
    ()
  done;
  if i < n then a.(i) <- tile.(thread_idx_x)
"#,
    );
}

#[test]
fn warp_collectives_in_uniform_loops() {
    accepts(
        "warp",
        r#"
let%kernel k (a : int32 vector) (out : int32 vector) (n : int32) =
  let i = global_thread_id in
  let mut v = if i < n then a.(i) else 0 in
  let mut offset = warp_size / 2 in
  while offset > 0 do
    v := v + warp_shuffle_down v offset;
    offset := offset / 2
  done;
  if i < n then out.(i) <- v
"#,
    );
}

#[test]
fn helper_with_barrier_called_uniformly() {
    accepts(
        "helper_barrier",
        r#"
let publish (s : int32 array) (x : int32) : unit =
  s.(thread_idx_x) <- x;
  block_barrier ()

let%kernel k (out : int32 vector) =
  let%shared (s : int32) = 256 in
  publish s global_thread_id;
  out.(global_thread_id) <- s.(255 - thread_idx_x)
"#,
    );
}

#[test]
fn helper_results_follow_their_arguments() {
    // `clamp` is uniform when its arguments are: the same helper called with the thread index
    // elsewhere does not taint this call.
    accepts(
        "helper_args",
        r#"
let clamp (x : int32) (lo : int32) (hi : int32) : int32 = if x < lo then lo else if x > hi then hi else x

let%kernel k (out : int32 vector) (n : int32) =
  let mine = clamp thread_idx_x 0 10 in
  let rounds = clamp n 0 4 in
  for r = 1 to rounds do block_barrier () done;
  out.(global_thread_id) <- mine
"#,
    );
    refuses(
        "helper_args_varying",
        r#"
let clamp (x : int32) (lo : int32) (hi : int32) : int32 = if x < lo then lo else if x > hi then hi else x

let%kernel k (out : int32 vector) (n : int32) =
  let rounds = clamp thread_idx_x 0 4 in
  for r = 1 to rounds do block_barrier () done;
  out.(global_thread_id) <- rounds
"#,
        "`clamp` returns a thread-dependent value here",
    );
}

#[test]
fn memory_written_uniformly_stays_uniform() {
    // Every thread writes the same value at the same index: reading it back is uniform.
    accepts(
        "uniform_memory",
        r#"
let%kernel k (out : int32 vector) (n : int32) =
  let%shared (s : int32) = 4 in
  s.(0) <- n * 2;
  block_barrier ();
  if s.(0) > 8 then block_barrier ();
  out.(global_thread_id) <- s.(0)
"#,
    );
}

#[test]
fn varying_mutable_through_a_loop_is_found() {
    // `k` only becomes thread-dependent in the loop's second iteration: the fixpoint finds it.
    refuses(
        "loop_fixpoint",
        r#"
let%kernel k (out : int32 vector) =
  let mut a = 0 in
  let mut b = 0 in
  for j = 0 to 3 do
    if b > 0 then block_barrier ();
    b := a;
    a := thread_idx_x
  done;
  out.(thread_idx_x) <- a + b
"#,
        "`block_barrier` is not reached by every thread",
    );
}

#[test]
fn stores_by_a_helper_called_under_a_condition_are_per_thread() {
    refuses(
        "helper_store",
        r#"
let put (s : int32 array) (i : int32) (x : int32) : unit = s.(i) <- x

let%kernel k (out : int32 vector) (n : int32) =
  let%shared (s : int32) = 4 in
  s.(0) <- 0;
  block_barrier ();
  if thread_idx_x < 3 then put s 0 n;
  if s.(0) > 0 then block_barrier ();
  out.(global_thread_id) <- s.(0)
"#,
        "`s` is written per thread here",
    );
}

#[test]
fn tuple_and_record_components_have_their_own_variance() {
    // FINDINGS N13: a uniform component of a local tuple or record may guard a barrier while
    // another component holds a thread index.
    accepts(
        "components",
        "type span = { lo : int32; hi : int32 }
         let%kernel k (o : int32 vector) (n : int32) =
           let t = (thread_idx_x, n) in
           let (a, b) = t in
           let r = { lo = thread_idx_x; hi = n } in
           let u = r in
           if b > 0 then block_barrier ();
           if snd t > 0 then block_barrier ();
           for i = 0 to u.hi do block_barrier () done;
           let (c, d) = (thread_idx_x, 3) in
           if d > 0 then block_barrier ();
           o.(a) <- r.lo + c",
    );
    // The varying component, the whole value, a component that becomes varying in a later
    // iteration of a loop, and a record whose `mutable` field a thread stores: refused.
    let not_reached = "is not reached by every thread";
    refuses(
        "varying_component",
        "let%kernel k (o : int32 vector) (n : int32) =
           let (a, b) = (thread_idx_x, n) in
           if a > 0 then block_barrier ();
           o.(0) <- b",
        not_reached,
    );
    refuses(
        "whole_tuple",
        "let pick (p : int32 * int32) : int32 = snd p
         let%kernel k (o : int32 vector) (n : int32) =
           let t = (n, thread_idx_x) in
           if pick t > 0 then block_barrier ();
           o.(0) <- n",
        not_reached,
    );
    refuses(
        "grows_in_loop",
        "let%kernel k (o : int32 vector) (n : int32) =
           let mut x = 0 in
           for i = 0 to n do
             let t = (n, x) in
             if snd t > 0 then block_barrier ();
             x := thread_idx_x
           done;
           o.(0) <- x",
        not_reached,
    );
    refuses(
        "mutable_field",
        "type cell = { mutable v : int32; w : int32 }
         let%kernel k (o : int32 vector) (n : int32) =
           let c = { v = n; w = n } in
           c.v <- thread_idx_x;
           if c.v > 0 then block_barrier ();
           o.(0) <- c.w",
        not_reached,
    );
}
