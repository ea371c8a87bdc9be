//! The math helpers the GLSL generator supplies (float64 exp/log/trig/pow, which GLSL lacks;
//! float32 asin/acos, which Vulkan lets be loose) agree with the interpreter (Rust's libm)
//! within `verify`'s tolerance over inputs spanning several ranges, infinite arguments of
//! `atan2` included (`d_inf`: they went through float32, 4e-8 off at pi/2, and a finite
//! argument past float32's range became infinite), and `pow`'s edges at infinities (`pow 1
//! inf`, `pow (-1) inf` and `pow (-inf) 0.5` were NaN). Skips like the corpus
//! test when Vulkan is absent.

use sarek_harness::check_corpus_against_interp;
use sarek_runtime::Backend;

const F64: &str = r#"(* @run d_exp size=4096 n=4096 *)
(* @run d_trig size=4096 n=4096 *)
(* @run d_inv size=4096 n=4096 *)
(* @run d_inf size=4096 n=4096 *)
let%kernel d_exp (x : float64 vector) (a : float64 vector) (b : float64 vector) (c : float64 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then begin
    let v = x.(i) in
    a.(i) <- exp (v *. 50.0) +. exp2 (v *. 10.0) +. expm1 (v *. 0.001) +. expm1 v;
    b.(i) <- log (v +. 1.5) +. log2 (abs_float v *. 1000.0 +. 0.01) +. log10 (v +. 2.0) +. log1p (v *. 0.5) +. log1p (v *. 0.00001);
    c.(i) <- pow (v +. 2.0) 3.3 +. pow (v *. 4.0) 3.0 +. sinh (v *. 3.0) +. cosh v +. tanh (v *. 2.0) +. sinh (v *. 0.01)
  end
let%kernel d_trig (x : float64 vector) (a : float64 vector) (b : float64 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then begin
    let v = x.(i) in
    a.(i) <- sin (v *. 100.0) +. cos (v *. 7.0) +. sin v +. cos v;
    b.(i) <- tan (v *. 1.5)
  end
let%kernel d_inv (x : float64 vector) (y : float64 vector) (a : float64 vector) (b : float64 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then begin
    let v = x.(i) in
    a.(i) <- asin v +. acos v +. atan (v *. 30.0) +. atan v;
    b.(i) <- atan2 v y.(i) +. atan2 (v *. 0.001) (0.0 -. 1.0)
  end
let%kernel d_inf (x : float64 vector) (y : float64 vector) (a : float64 vector) (b : float64 vector) (c : float64 vector) (e : float64 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then begin
    let big = x.(i) *. 1e300 *. 1e300 in
    a.(i) <- atan2 big y.(i) +. atan2 y.(i) big +. atan2 big big;
    b.(i) <- atan2 big (y.(i) *. 1e300) +. atan2 (y.(i) *. 1e300) big;
    c.(i) <- pow 1.0 big +. pow (-1.0) big;
    e.(i) <- pow (0.0 -. abs_float big) 0.5
  end
"#;

const F32: &str = r#"(* @run f_trig size=4096 n=4096 *)
(* @run f_misc size=4096 n=4096 *)
let%kernel f_trig (x : float32 vector) (a : float32 vector) (b : float32 vector) (c : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then begin
    a.(i) <- sin x.(i) +. cos x.(i) +. tan x.(i);
    b.(i) <- asin x.(i) +. acos x.(i);
    c.(i) <- atan (x.(i) *. 10.0) +. atan2 x.(i) (x.(i) +. 0.25)
  end
let%kernel f_misc (x : float32 vector) (e : float32 vector) (s : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then begin
    e.(i) <- exp x.(i) +. log (x.(i) +. 2.0) +. pow (x.(i) +. 1.5) 2.5 +. pow (x.(i) *. 2.0) 3.0;
    s.(i) <- sinh x.(i) +. cosh x.(i) +. tanh x.(i) *. 3.0 +. expm1 x.(i) +. log1p (x.(i) +. 0.5)
  end
"#;

#[test]
fn math_helpers_agree_with_interp() {
    let dir = std::env::temp_dir().join(format!("sarek-vulkan-math-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("f64.sarek"), F64).unwrap();
    std::fs::write(dir.join("f32.sarek"), F32).unwrap();
    let report = check_corpus_against_interp(Backend::Vulkan, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    print!("{report}");
    if let Some(why) = &report.unavailable {
        sarek_testkit::backends::unavailable("vulkan", &why.to_string());
        return;
    }
    assert_eq!(report.entries.len(), 6, "{report}");
    assert!(
        report.failures().is_empty()
            && report.count(|o| matches!(o, sarek_harness::Outcome::Refused(_))) == 0,
        "{report}"
    );
}
