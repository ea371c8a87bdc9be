//! Parameter passing on `vulkan`: scalars of every width before and between vectors (the
//! push-constant offsets must follow std430 alignment whatever the order), a vector of bools
//! (stored as 32-bit words), and a kernel whose parameters exceed the 128 bytes of push
//! constants every device guarantees (they move to a storage buffer). Results are compared
//! with the interpreter.

use sarek_harness::{Outcome, check_corpus_against_interp};
use sarek_runtime::Backend;

const SRC: &str = r#"(* @run mixed size=100 flag=true k=3 big=123456789012 s=0.5 *)
(* @run many size=64 n=64 p0=0.25 p1=1.25 p2=2.25 p3=3.25 p4=4.25 p5=5.25 p6=6.25 p7=7.25 p8=8.25 p9=9.25 p10=10.25 p11=11.25 p12=12.25 p13=13.25 p14=14.25 p15=15.25 p16=16.25 p17=17.25 *)
let%kernel mixed (flag : bool) (k : int32) (out : float64 vector) (big : int64) (s : float32) (idx : int64 vector) (flags : bool vector) =
  let i = global_thread_id in
  if i < length out then begin
    flags.(i) <- not flags.(i) && i mod 3 <> 0;
    out.(i) <- (if flag then float64 s else 0.0d) +. float64 k +. float64 i;
    idx.(i) <- big + Int64.of_int i
  end
let%kernel many (v : float64 vector) (n : int32) (p0 : float64) (p1 : float64) (p2 : float64) (p3 : float64) (p4 : float64) (p5 : float64) (p6 : float64) (p7 : float64) (p8 : float64) (p9 : float64) (p10 : float64) (p11 : float64) (p12 : float64) (p13 : float64) (p14 : float64) (p15 : float64) (p16 : float64) (p17 : float64) =
  let i = global_thread_id in
  if i < n then v.(i) <- v.(i) +. p0 +. p1 +. p2 +. p3 +. p4 +. p5 +. p6 +. p7 +. p8 +. p9 +. p10 +. p11 +. p12 +. p13 +. p14 +. p15 +. p16 +. p17
"#;

#[test]
fn parameters_reach_the_kernel() {
    let dir = std::env::temp_dir().join(format!("sarek-vulkan-params-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("params.sarek"), SRC).unwrap();
    let report = check_corpus_against_interp(Backend::Vulkan, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    print!("{report}");
    if let Some(why) = &report.unavailable {
        sarek_testkit::backends::unavailable("vulkan", &why.to_string());
        return;
    }
    assert_eq!(report.count(|o| matches!(o, Outcome::Agree)), 2, "{report}");
}
