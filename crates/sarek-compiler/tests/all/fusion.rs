//! Kernel fusion: the access-pattern analysis, one test per refusal reason, and fused kernels
//! (element-wise chains, a stencil, a reduction loop, a tree reduction with barriers, records
//! and variants) that pass `ir::validate` and every generator with its real validator (naga
//! for WGSL, glslang + spirv-val for GLSL, PoCL for OpenCL C, NVRTC for CUDA, ptxas for PTX).
//! Running fused kernels against the unfused pipeline is `crates/sarek/tests/fusion.rs`.

use crate::support;

use sarek_compiler::diag::{SourceMap, render_all};
use sarek_compiler::fusion::{Decision, Pattern, Refusal, analyse, can_fuse, fuse, fuse_pipeline};
use sarek_compiler::ir::{Kernel, validate::validate};
use sarek_compiler::{Target, TargetOptions};
use support::validate::{load_nvrtc, skip};

const SOURCE: &str = r#"
type point = { x : float32; y : float32 }
type shape = Circle of float32 | Rect of float32 * float32 | Empty

let sq (x : float32) : float32 = x *. x
let area (s : shape) : float32 =
  match s with Circle r -> 3.0 *. r *. r | Rect (w, h) -> w *. h | Empty -> 0.0

let%kernel scale (a : float32 vector) (t : float32 vector) (k : float32) (n : int32) =
  let i = global_thread_id in
  if i < n then t.(i) <- k *. sq a.(i)

let%kernel offset (t : float32 vector) (b : float32 vector) (u : float32 vector) (n : int32) =
  let i = block_idx_x * block_dim_x + thread_idx_x in
  if i < n then u.(i) <- t.(i) +. b.(i)

let%kernel smooth (u : float32 vector) (out : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i > 0 && i < n - 1 then out.(i) <- (u.(i - 1) +. u.(i) +. u.(i + 1)) /. 3.0
  else if i < n then out.(i) <- u.(i)

let%kernel total (u : float32 vector) (out : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < length out then begin
    let mut s = 0.0 in
    for k = 0 to n - 1 do s := s +. u.(k) done;
    out.(i) <- s
  end

let%kernel tree (u : float32 vector) (out : float32 vector) (n : int32) =
  let%shared (buf : float32) = 256 in
  let tid = thread_idx_x in
  let i = block_idx_x * block_dim_x + tid in
  buf.(tid) <- (if i < n then u.(i) else 0.0);
  block_barrier ();
  let mut s = block_dim_x / 2 in
  while s > 0 do
    if tid < s then buf.(tid) <- buf.(tid) +. buf.(tid + s);
    block_barrier ();
    s := s / 2
  done;
  if tid = 0 then out.(block_idx_x) <- buf.(0)

let%kernel to_points (a : float32 vector) (pts : point vector) (n : int32) =
  let i = global_thread_id in
  if i < n then pts.(i) <- { x = a.(i); y = 2.0 *. a.(i) }

let%kernel to_shapes (pts : point vector) (shapes : shape vector) (n : int32) =
  let i = global_thread_id in
  if i < n then begin
    let p = pts.(i) in
    shapes.(i) <- (if p.x > 0.0 then Circle p.x else if p.y < -1.0 then Empty else Rect (p.x, p.y))
  end

let%kernel areas (shapes : shape vector) (out : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then out.(i) <- area shapes.(i)
"#;

const REFUSALS: &str = r#"
let%kernel plain (a : float32 vector) (t : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then t.(i) <- a.(i) +. 1.0
let%kernel use_t (t : float32 vector) (b : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then b.(i) <- t.(i) *. 2.0

let%kernel with_barrier (a : float32 vector) (t : float32 vector) (n : int32) =
  let i = global_thread_id in
  block_barrier ();
  if i < n then t.(i) <- a.(i)
let%kernel with_atomic (a : int32 vector) (t : float32 vector) (n : int32) =
  let i = global_thread_id in
  ignore (atomic_add a 0 1);
  if i < n then t.(i) <- 1.0
let%kernel with_shared (a : float32 vector) (t : float32 vector) (n : int32) =
  let%shared (s : float32) = 64 in
  let i = global_thread_id in
  s.(0) <- 1.0;
  if i < n then t.(i) <- a.(i)
let%kernel with_tid (a : float32 vector) (t : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then t.(i) <- a.(i) +. float32 thread_idx_x
let%kernel reads_t (a : float32 vector) (t : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then t.(i) <- t.(i) +. a.(i)
let%kernel two_outputs (a : float32 vector) (t : float32 vector) (c : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then begin t.(i) <- a.(i); c.(i) <- a.(i) end
let%kernel two_stores (a : float32 vector) (t : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then t.(i) <- a.(i) else t.(0) <- 0.0
let%kernel store_in_loop (a : float32 vector) (t : float32 vector) (n : int32) =
  let i = global_thread_id in
  for k = 0 to 1 do if i < n then t.(i) <- a.(i) done
let%kernel shifted_store (a : float32 vector) (t : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i + 1 < n then t.(i + 1) <- a.(i)
let%kernel writes_t (t : float32 vector) (b : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then begin b.(i) <- t.(i); t.(i) <- 0.0 end
let%kernel length_t (t : float32 vector) (b : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < length t then b.(i) <- t.(i)
let sum3 (v : float32 vector) (i : int32) : float32 = v.(i) +. v.(i + 1)
let%kernel helper_t (t : float32 vector) (b : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i + 1 < n then b.(i) <- sum3 t i
let%kernel ignores_t (t : float32 vector) (b : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then b.(i) <- 1.0
let%kernel gather_t (t : float32 vector) (idx : int32 vector) (b : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then b.(i) <- t.(idx.(i))
let%kernel wide_t (t : float32 vector) (b : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i >= 5 && i < n - 5 then b.(i) <- t.(i - 5) +. t.(i + 5)
let%kernel writes_a (t : float32 vector) (a : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then a.(i) <- t.(i)
let%kernel n_as_float (t : float32 vector) (b : float32 vector) (n : float32) =
  let i = global_thread_id in
  b.(i) <- t.(i) *. n
let%kernel int_t (t : int32 vector) (b : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then b.(i) <- float32 t.(i)
let%kernel plain2 (a : float32 vector) (t : float32 vector) (t2 : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then begin t.(i) <- a.(i); t2.(i) <- a.(i) end
let%kernel use_both (t : float32 vector) (t2 : float32 vector) (b : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then b.(i) <- t.(i) +. t2.(i)
"#;

fn program(src: &str) -> (SourceMap, sarek_compiler::front::tast::Program) {
    let mut sources = SourceMap::new();
    let file = sources.add("fusion.sarek", src);
    let p = sarek_compiler::check(&sources, file)
        .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
    (sources, p)
}

fn kernels(src: &str, names: &[&str]) -> Vec<Kernel> {
    let (_, p) = program(src);
    names
        .iter()
        .map(|n| sarek_compiler::lower_kernel(&p, n).expect("lowers"))
        .collect()
}

fn refusal(producer: &str, consumer: &str, via: &str) -> Refusal {
    let k = kernels(REFUSALS, &[producer, consumer]);
    let decision = can_fuse(&k[0], &k[1], via);
    let Decision::Refuse(r) = decision else {
        panic!("{producer} -> {consumer} via {via} fused: {decision}")
    };
    assert_eq!(fuse(&k[0], &k[1], via), Err(r.clone()), "fuse agrees");
    r
}

#[test]
fn access_patterns() {
    let k = kernels(SOURCE, &["smooth", "total", "tree", "offset"]);
    let p = |k: &Kernel, name: &str| {
        analyse(k)
            .into_iter()
            .find(|a| a.name == name)
            .expect("vector")
    };
    assert_eq!(p(&k[0], "u").reads, Pattern::Stencil { radius: 1 });
    assert_eq!(p(&k[0], "out").writes, Pattern::OneToOne);
    assert_eq!(p(&k[0], "out").stores, 2);
    assert_eq!(p(&k[1], "u").reads, Pattern::Reduction);
    assert_eq!(
        p(&k[1], "out").reads,
        Pattern::Unknown,
        "`length out` escapes"
    );
    // `block_idx_x * block_dim_x + tid` through a `let` is the global index.
    assert_eq!(p(&k[2], "u").reads, Pattern::OneToOne);
    assert_eq!(p(&k[2], "out").writes, Pattern::Gather);
    assert_eq!(p(&k[3], "t").reads, Pattern::OneToOne);
    let g = kernels(REFUSALS, &["gather_t", "helper_t"]);
    assert_eq!(p(&g[0], "t").reads, Pattern::Gather);
    assert_eq!(p(&g[0], "idx").reads, Pattern::OneToOne);
    assert_eq!(p(&g[1], "t").reads, Pattern::Unknown);
    assert_eq!(p(&g[1], "t").writes, Pattern::None, "sum3 only reads");
}

#[test]
fn decisions_print_their_reason() {
    let k = kernels(SOURCE, &["offset", "smooth", "total"]);
    let d = can_fuse(&k[0], &k[1], "u");
    assert_eq!(
        d,
        Decision::Fuse {
            intermediate: "u".into(),
            pattern: Pattern::Stencil { radius: 1 }
        }
    );
    assert!(d.to_string().contains("recomputed 3 times"), "{d}");
    let d = can_fuse(&k[0], &k[2], "u");
    assert!(d.to_string().contains("in a loop"), "{d}");
    let r = refusal("with_barrier", "use_t", "t");
    assert_eq!(
        Decision::Refuse(r).to_string(),
        "do not fuse: the producer `with_barrier` synchronises its block (a barrier or fence): a thread's result depends on other threads, so it cannot be recomputed per element"
    );
}

#[test]
fn refuses_barriers_atomics_shared_memory_and_thread_positions() {
    assert!(
        matches!(refusal("with_barrier", "use_t", "t"), Refusal::Barrier { kernel } if kernel == "with_barrier")
    );
    assert!(matches!(
        refusal("with_atomic", "use_t", "t"),
        Refusal::Atomic { .. }
    ));
    assert!(matches!(
        refusal("with_shared", "use_t", "t"),
        Refusal::SharedMemory { .. }
    ));
    assert!(
        matches!(refusal("with_tid", "use_t", "t"), Refusal::ThreadPosition { what, .. } if what == "thread_idx_x")
    );
}

#[test]
fn refuses_producer_stores_that_are_not_one_element_per_thread() {
    assert!(matches!(
        refusal("reads_t", "use_t", "t"),
        Refusal::ProducerReadsIntermediate { .. }
    ));
    assert!(
        matches!(refusal("two_outputs", "use_t", "t"), Refusal::ProducerWritesOther { name, .. } if name == "c")
    );
    let why = |p| match refusal(p, "use_t", "t") {
        Refusal::ProducerStore { why, .. } => why,
        r => panic!("{r}"),
    };
    assert!(why("two_stores").contains("2 places"));
    assert!(why("store_in_loop").contains("inside a loop"));
    assert!(why("shifted_store").contains("stencil of radius 1"));
    assert!(why("ignores_t").contains("never writes"));
}

#[test]
fn refuses_consumers_that_write_or_hide_the_intermediate() {
    assert!(matches!(
        refusal("plain", "writes_t", "t"),
        Refusal::ConsumerWritesIntermediate { .. }
    ));
    assert!(
        matches!(refusal("plain", "length_t", "t"), Refusal::IntermediateEscapes { why, .. } if why.contains("length"))
    );
    assert!(
        matches!(refusal("plain", "helper_t", "t"), Refusal::IntermediateEscapes { why, .. } if why.contains("sum3"))
    );
    assert!(matches!(
        refusal("plain", "ignores_t", "t"),
        Refusal::IntermediateUnread { .. }
    ));
    assert!(
        matches!(refusal("plain", "writes_a", "t"), Refusal::ConsumerWritesProducerInput { name, .. } if name == "a")
    );
}

#[test]
fn refuses_mismatched_index_patterns_and_types() {
    assert!(matches!(
        refusal("plain", "gather_t", "t"),
        Refusal::IndexMismatch {
            pattern: Pattern::Gather,
            ..
        }
    ));
    assert!(matches!(
        refusal("plain", "wide_t", "t"),
        Refusal::StencilTooWide {
            radius: 5,
            max: 4,
            ..
        }
    ));
    assert!(
        matches!(refusal("plain", "n_as_float", "t"), Refusal::ParamTypeMismatch { name, .. } if name == "n")
    );
    assert!(matches!(
        refusal("plain", "int_t", "t"),
        Refusal::ElementTypeMismatch { .. }
    ));
    assert!(
        matches!(refusal("plain", "use_t", "b"), Refusal::NotAVector { kernel, .. } if kernel == "plain")
    );
}

#[test]
fn pipelines_refuse_shared_ambiguous_and_missing_intermediates() {
    let k = kernels(
        REFUSALS,
        &["plain", "use_t", "use_t", "plain2", "use_both", "ignores_t"],
    );
    let e = fuse_pipeline(&k[0..3]).unwrap_err();
    assert!(
        matches!(&*e.refusal, Refusal::IntermediateReadElsewhere { name, .. } if name == "t"),
        "{e}"
    );
    // Located at the consumer kernel.
    assert!(!e.span.is_dummy());
    assert!(
        e.to_string()
            .starts_with("cannot fuse `plain` into `use_t`"),
        "{e}"
    );
    let e = fuse_pipeline(&[k[3].clone(), k[4].clone()]).unwrap_err();
    assert!(
        matches!(&*e.refusal, Refusal::AmbiguousIntermediate { names, .. } if names == &["t", "t2"]),
        "{e}"
    );
    let e = fuse_pipeline(&[k[0].clone(), k[5].clone()]).unwrap_err();
    assert!(matches!(*e.refusal, Refusal::NoIntermediate { .. }), "{e}");
    assert!(matches!(
        *fuse_pipeline(&[]).unwrap_err().refusal,
        Refusal::EmptyPipeline
    ));
    // A vector both kernels only read is no intermediate.
    let two = kernels(
        r#"
let%kernel p (a : float32 vector) (t : float32 vector) (n : int32) =
  let i = global_thread_id in if i < n then t.(i) <- a.(i)
let%kernel c (t : float32 vector) (a : float32 vector) (b : float32 vector) (n : int32) =
  let i = global_thread_id in if i < n then b.(i) <- t.(i) +. a.(i)
"#,
        &["p", "c"],
    );
    assert!(
        fuse_pipeline(&two).is_ok(),
        "a is read by both, written by neither"
    );
}

#[test]
fn refuses_a_field_store_into_the_intermediate() {
    let (_, p) = program(
        r#"
type pair = { mutable l : float32; r : float32 }
let%kernel half (a : float32 vector) (t : pair vector) (n : int32) =
  let i = global_thread_id in if i < n then t.(i).l <- a.(i)
let%kernel c (t : pair vector) (b : float32 vector) (n : int32) =
  let i = global_thread_id in if i < n then b.(i) <- t.(i).l
"#,
    );
    let k: Vec<Kernel> = ["half", "c"]
        .iter()
        .map(|n| sarek_compiler::lower_kernel(&p, n).unwrap())
        .collect();
    let Decision::Refuse(Refusal::ProducerStore { why, .. }) = can_fuse(&k[0], &k[1], "t") else {
        panic!("fused a field store")
    };
    assert!(why.contains("field"), "{why}");
}

#[test]
fn refuses_native_producers() {
    use sarek_compiler::ir::{Ty, build::*};
    let mut b = KernelBuilder::new("native");
    let (a, t) = (b.vector("a", Ty::F32), b.vector("t", Ty::F32));
    let i = b.var("i", Ty::I32);
    let body = vec![
        native("/* opaque */"),
        let_(i, global_idx()),
        store(t, b.read(i), b.index(a, b.read(i))),
    ];
    let p = b.finish(body);
    let c = kernels(REFUSALS, &["use_t"]).remove(0);
    assert!(matches!(
        can_fuse(&p, &c, "t"),
        Decision::Refuse(Refusal::Native { .. })
    ));
}

/// The fused pipelines of SOURCE: (kernels, eliminated).
fn fused_cases() -> Vec<(Kernel, Vec<String>)> {
    let pipelines: &[&[&str]] = &[
        &["scale", "offset"],
        &["scale", "offset", "smooth"],
        &["scale", "offset", "total"],
        &["scale", "offset", "tree"],
        &["to_points", "to_shapes", "areas"],
    ];
    let (_, p) = program(SOURCE);
    pipelines
        .iter()
        .map(|names| {
            let ks: Vec<Kernel> = names
                .iter()
                .map(|n| sarek_compiler::lower_kernel(&p, n).unwrap())
                .collect();
            let f = fuse_pipeline(&ks).unwrap_or_else(|e| panic!("{names:?}: {e}"));
            (f.kernel, f.eliminated)
        })
        .collect()
}

#[test]
fn fused_kernels_validate_and_drop_their_intermediates() {
    for (k, eliminated) in fused_cases() {
        validate(&k)
            .unwrap_or_else(|e| panic!("{e}\n{}", sarek_compiler::ir::print::print_kernel(&k)));
        let params: Vec<&str> = k.params.iter().map(|p| k.var(*p).name.as_str()).collect();
        for t in &eliminated {
            assert!(
                !params.contains(&t.as_str()),
                "{}: {t} still a parameter",
                k.name
            );
        }
    }
    let (k, eliminated) = fused_cases().remove(1);
    assert_eq!(k.name, "scale_offset_smooth");
    assert_eq!(eliminated, ["t", "u"]);
    let params: Vec<&str> = k.params.iter().map(|p| k.var(*p).name.as_str()).collect();
    assert_eq!(params, ["a", "k", "n", "b", "out"]);
}

fn naga_validate(src: &str) -> Result<(), String> {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let module = naga::front::wgsl::parse_str(src).map_err(|e| e.emit_to_string(src))?;
    Validator::new(ValidationFlags::all(), Capabilities::SUBGROUP)
        .validate(&module)
        .map(|_| ())
        .map_err(|e| e.emit_to_string(src))
}

fn generate(k: &Kernel, target: Target) -> String {
    sarek_compiler::generate(k, target, &TargetOptions::default())
        .unwrap_or_else(|d| panic!("{} refused by {target:?}: {:?}", k.name, d))
        .source
}

#[test]
fn fused_kernels_pass_naga() {
    for (k, _) in fused_cases() {
        let src = generate(&k, Target::Wgsl);
        naga_validate(&src).unwrap_or_else(|e| panic!("{}: {e}\n{src}", k.name));
    }
}

#[test]
fn fused_kernels_pass_glslang_and_spirv_val() {
    use sarek_runtime::spirv;
    if !(spirv::glslang_available() && spirv::spirv_val_available()) {
        return skip("vulkan", "glslangValidator or spirv-val not found");
    }
    for (k, _) in fused_cases() {
        let src = generate(&k, Target::Glsl);
        let words = spirv::compile(&src).unwrap_or_else(|e| panic!("{}: {e}\n{src}", k.name));
        spirv::validate(&words).unwrap_or_else(|e| panic!("{}: {e}\n{src}", k.name));
    }
}

#[test]
fn fused_kernels_build_on_pocl() {
    use opencl3::device::{CL_DEVICE_TYPE_ALL, Device};
    let device = opencl3::platform::get_platforms()
        .ok()
        .and_then(|ps| {
            ps.iter()
                .find_map(|p| p.get_devices(CL_DEVICE_TYPE_ALL).ok()?.first().copied())
        })
        .map(Device::new);
    let Some(device) = device else {
        return skip("opencl", "no OpenCL device");
    };
    let context = opencl3::context::Context::from_device(&device).expect("context");
    for (k, _) in fused_cases() {
        let src = generate(&k, Target::OpenCl);
        if let Err(log) =
            opencl3::program::Program::create_and_build_from_source(&context, &src, "-cl-std=CL1.2")
        {
            panic!("{}: PoCL rejected the OpenCL C:\n{log}\n{src}", k.name);
        }
    }
}

#[test]
fn fused_kernels_compile_with_nvrtc() {
    use cudarc::nvrtc::result;
    use std::ffi::{CStr, CString};
    if let Err(reason) = load_nvrtc() {
        return skip("cuda", &reason);
    }
    for (k, _) in fused_cases() {
        let src = generate(&k, Target::Cuda);
        let c = CString::new(src.clone()).unwrap();
        let prog = result::create_program(&c, None).expect("program");
        let opts = ["--gpu-architecture=sm_90"];
        // SAFETY: `prog` is a live program; the options are valid C strings.
        let res = unsafe { result::compile_program(prog, &opts) };
        let log = unsafe { result::get_program_log(prog) }
            .map(|l| {
                unsafe { CStr::from_ptr(l.as_ptr()) }
                    .to_string_lossy()
                    .into_owned()
            })
            .unwrap_or_default();
        unsafe { result::destroy_program(prog) }.ok();
        assert!(
            res.is_ok(),
            "{}: NVRTC rejected the CUDA C:\n{log}\n{src}",
            k.name
        );
    }
}

#[test]
fn fused_kernels_assemble_with_ptxas() {
    let Some(ptxas) = ptxas() else {
        return skip("ptx", "ptxas not found (pip install nvidia-cuda-nvcc)");
    };
    let dir = std::env::temp_dir().join(format!("sarek-fusion-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (k, _) in fused_cases() {
        let src = generate(&k, Target::Ptx);
        let file = dir.join(format!("{}.ptx", k.name));
        std::fs::write(&file, &src).unwrap();
        let out = std::process::Command::new(&ptxas)
            .args(["-arch=sm_90", "-o"])
            .arg(dir.join(format!("{}.cubin", k.name)))
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: ptxas rejected the PTX:\n{}\n{src}",
            k.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn fused_kernels_generate_metal() {
    for (k, _) in fused_cases() {
        generate(&k, Target::Metal);
    }
}

/// ptxas as the PTX tests find it: `SAREK_PTXAS`, the PATH, or the `nvidia` Python wheel.
fn ptxas() -> Option<std::path::PathBuf> {
    use std::process::Command;
    if let Ok(p) = std::env::var("SAREK_PTXAS") {
        return Some(p.into());
    }
    if Command::new("ptxas")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some("ptxas".into());
    }
    let out = Command::new("python3")
        .args(["-c", "import nvidia, os; print(list(nvidia.__path__)[0])"])
        .output()
        .ok()?;
    let p = std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        .join("cu13/bin/ptxas");
    p.exists().then_some(p)
}

const HELPERS: &str = r#"
type point = { x : float32; y : float32 }
type shape = Circle of float32 | Rect of float32 * float32 | Empty
let addf (a : float32) (b : float32) : float32 = a +. b
let addp (a : point) (b : point) : point = { x = a.x +. b.x; y = a.y +. b.y }
let bigger (a : shape) (b : shape) : shape =
  match (a, b) with
  | (Empty, _) -> b
  | _ -> a
let norm (p : point) : float32 = sqrt (p.x *. p.x +. p.y *. p.y)
let mk (x : float32) (s : int32) : shape = if s mod 2 = 0 then Circle x else Rect (x, x)
type wide = { a : float32; b : float32; c : float32; d : float64; e : float64 }
let addw (x : wide) (y : wide) : wide =
  { a = x.a +. y.a; b = x.b +. y.b; c = x.c +. y.c; d = x.d +. y.d; e = x.e +. y.e }
"#;

/// Every skeleton kind over scalars, records and variants: the generated kernels check,
/// lower, validate, and pass naga, glslang + spirv-val and PoCL.
#[test]
fn skeletons_pass_every_generator() {
    use sarek_compiler::skeleton::{Skeleton, instantiate, typed};
    let mut sources = SourceMap::new();
    let file = sources.add("helpers.sarek", HELPERS);
    let t = typed(&sources, file).unwrap();
    let cases = [
        ("norm", Skeleton::Map),
        ("mk", Skeleton::Zip),
        (
            "addf",
            Skeleton::Reduce {
                neutral: "0.0".into(),
            },
        ),
        (
            "addp",
            Skeleton::Reduce {
                neutral: "{ x = 0.0; y = 0.0 }".into(),
            },
        ),
        (
            "bigger",
            Skeleton::Reduce {
                neutral: "Empty".into(),
            },
        ),
        (
            "addf",
            Skeleton::Scan {
                inclusive: true,
                neutral: "0.0".into(),
            },
        ),
        (
            "addp",
            Skeleton::Scan {
                inclusive: false,
                neutral: "{ x = 0.0; y = 0.0 }".into(),
            },
        ),
    ];
    let glsl =
        sarek_runtime::spirv::glslang_available() && sarek_runtime::spirv::spirv_val_available();
    for (helper, sk) in cases {
        let inst = instantiate(&t, helper, &sk).unwrap();
        let (_, p) = program(&inst.program_source(HELPERS));
        let generated: Vec<&str> = p
            .kernels
            .iter()
            .map(|k| k.name.as_str())
            .filter(|n| n.contains(helper))
            .collect();
        assert!(!generated.is_empty());
        for name in generated {
            let k = sarek_compiler::lower_kernel(&p, name).unwrap();
            validate(&k).unwrap();
            // WGSL has no float64: `wide` is refused there, located. The writer's output is
            // under test, not the portable limits (a 1,024-thread float32 reduction takes
            // 18,432 bytes of shared memory, past WebGPU's default 16,384).
            let wgsl = TargetOptions {
                portable: false,
                ..TargetOptions::default()
            };
            match sarek_compiler::generate(&k, Target::Wgsl, &wgsl) {
                Ok(g) => {
                    naga_validate(&g.source).unwrap_or_else(|e| panic!("{name}: {e}\n{}", g.source))
                }
                Err(d) => assert!(helper == "addw" && !d[0].span.is_dummy(), "{name}: {d:?}"),
            }
            if glsl {
                use sarek_runtime::spirv;
                let src = generate(&k, Target::Glsl);
                let words = spirv::compile(&src).unwrap_or_else(|e| panic!("{name}: {e}\n{src}"));
                spirv::validate(&words).unwrap_or_else(|e| panic!("{name}: {e}\n{src}"));
            }
            for target in [Target::OpenCl, Target::Cuda, Target::Ptx, Target::Metal] {
                generate(&k, target);
            }
        }
    }
}

#[test]
fn reduction_tiles_shrink_for_wide_elements() {
    use sarek_compiler::skeleton::{Plan, Skeleton, instantiate, reduce_items, typed};
    assert_eq!(
        [reduce_items(4), reduce_items(8), reduce_items(12)],
        [16, 8, 8]
    );
    assert_eq!(
        [reduce_items(16), reduce_items(28), reduce_items(64)],
        [4, 2, 1]
    );
    let mut sources = SourceMap::new();
    let file = sources.add("helpers.sarek", HELPERS);
    let t = typed(&sources, file).unwrap();
    let sk = Skeleton::Reduce {
        neutral: "{ a = 0.0; b = 0.0; c = 0.0; d = 0.0d; e = 0.0d }".into(),
    };
    let plan = instantiate(&t, "addw", &sk).unwrap().plan;
    // 28 bytes: 256 x (2 + 2) x 28 = 28 KiB of shared memory.
    assert_eq!(
        plan,
        Plan::Reduce {
            kernel: "reduce_addw".into(),
            tile: 512
        }
    );
}

#[test]
fn skeletons_refuse_wrong_helpers() {
    use sarek_compiler::skeleton::{Skeleton, SkeletonError, instantiate, typed};
    let mut sources = SourceMap::new();
    let file = sources.add("helpers.sarek", HELPERS);
    let t = typed(&sources, file).unwrap();
    let reduce = Skeleton::Reduce {
        neutral: "0.0".into(),
    };
    assert!(matches!(
        instantiate(&t, "nope", &reduce),
        Err(SkeletonError::UnknownHelper(_))
    ));
    let e = instantiate(&t, "norm", &reduce).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`reduce norm` needs a helper of type 'a -> 'a -> 'a; `norm` has type point -> float32"
    );
    assert!(instantiate(&t, "addf", &Skeleton::Map).is_err());
}

#[test]
fn refusals_are_located_at_their_statement() {
    use sarek_compiler::fusion::locate;
    let (sources, p) = program(REFUSALS);
    let k = |n: &str| sarek_compiler::lower_kernel(&p, n).unwrap();
    for (producer, consumer, snippet) in [
        ("with_barrier", "use_t", "block_barrier ()"),
        ("with_atomic", "use_t", "atomic_add a 0 1"),
        ("with_tid", "use_t", "thread_idx_x"),
        ("two_outputs", "use_t", "c.(i) <- a.(i)"),
        ("plain", "writes_t", "t.(i) <- 0.0"),
        ("plain", "gather_t", "t.(idx.(i))"),
        ("plain", "length_t", "length t"),
        ("plain", "writes_a", "a.(i) <- t.(i)"),
    ] {
        let (pk, ck) = (k(producer), k(consumer));
        let Decision::Refuse(r) = can_fuse(&pk, &ck, "t") else {
            panic!("{producer} -> {consumer} fused")
        };
        let span = locate(&pk, &ck, &r);
        let text = &sources.text(span.file)[span.start as usize..span.end as usize];
        assert!(
            text.contains(snippet),
            "{producer} -> {consumer}: {r} at {text:?}"
        );
    }
}
