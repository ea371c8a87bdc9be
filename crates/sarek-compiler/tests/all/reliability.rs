//! Reliability suite (issue 17): whatever the front end accepts, every generator emits source
//! its target's real validator accepts, in plain and in checked mode, and nothing panics.
//!
//! - `hostile_inputs_have_expected_outcomes`: `tests/reliability/*.sarek`, each with its
//!   expected outcome in an `@expect accept` or `@expect error: TEXT` line;
//! - `corpus_in_checked_mode_validates`: every corpus kernel with checks inserted;
//! - `long_identifiers_validate_everywhere`: identifiers of 2,000 characters in every naming
//!   position, through all six generators and their validators (names past a target's
//!   identifier length are shortened by the namer, injectively);
//! - `long_chains_validate_everywhere`: 10,000 chained `let`s, 10,000-term int and float
//!   sums and a sequence interleaving 2,000 stores with `let`s, on a thread with a small
//!   stack: no pass overflows, every target's validator accepts the output;
//! - `fuzz::*` (proptest): random bytes, token soups and corpus kernels with tokens deleted,
//!   duplicated or swapped, through check and every generator: no panic, accepted WGSL
//!   passes naga;
//! - `portable_wgsl_limits_are_refused_located`: `TargetOptions::portable`;
//! - `mutated_corpus_validates`: a seeded mutation loop over the corpus sources (edge-value
//!   literals, swapped operators, shifted indices): `SAREK_FUZZ_COUNT` mutants (default 64)
//!   from seed `SAREK_FUZZ_SEED`, so a run tries the same mutants on any machine (CI runs the
//!   default); `SAREK_FUZZ_SECS` (default 300) only caps the time, and a run it cuts short
//!   says so. Prints inputs tried, accepted, invalid modules and panics. Longer searches:
//!   raise the count, change the seed, or run the cargo-fuzz target in `fuzz/`.
//!
//! Validators: naga in process (parse, validate, pipeline constants as wgpu applies them,
//! SPIR-V out), glslangValidator + spirv-val for GLSL, `clang -x cl` for OpenCL C, ptxas for
//! PTX (and, for the long identifiers, NVRTC for CUDA C and clang++ with the Metal shim); an
//! absent tool skips its target (or fails when `SAREK_REQUIRE_BACKENDS` names it).

use naga::valid::{Capabilities, ValidationFlags, Validator};
use sarek_compiler::diag::{SourceMap, render_all};
use sarek_compiler::{Target, TargetOptions};
use sarek_runtime::spirv;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use sarek_testkit::files;

/// ptxas: $SAREK_PTXAS, PATH, or the pip wheel's site-packages (as tests/ptx_ptxas.rs).
fn find_ptxas() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("SAREK_PTXAS") {
        return Some(PathBuf::from(p));
    }
    if Command::new("ptxas")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some(PathBuf::from("ptxas"));
    }
    let out = Command::new("python3")
        .args(["-c", "import nvidia, os; print(list(nvidia.__path__)[0])"])
        .output()
        .ok()?;
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("cu13/bin/ptxas");
    dir.exists().then_some(dir)
}

/// WGSL as wgpu takes it: parse, validate, apply the block-size pipeline constants (naga
/// evaluates constant expressions again there), then write SPIR-V.
fn naga_accepts(src: &str) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(src).map_err(|e| e.emit_to_string(src))?;
    let info = Validator::new(ValidationFlags::all(), Capabilities::SUBGROUP)
        .validate(&module)
        .map_err(|e| e.emit_to_string(src))?;
    let mut constants = naga::back::PipelineConstants::default();
    for axis in ["x", "y", "z"] {
        constants.insert(format!("sarek_block_{axis}"), 64.0);
    }
    let (module, info) =
        naga::back::pipeline_constants::process_overrides(&module, &info, None, &constants)
            .map_err(|e| format!("pipeline constants: {e}"))?;
    naga::back::spv::write_vec(&module, &info, &naga::back::spv::Options::default(), None)
        .map(|_| ())
        .map_err(|e| format!("SPIR-V out: {e}"))
}

pub(crate) struct Tools {
    glslang: bool,
    clang: bool,
    ptxas: Option<PathBuf>,
    dir: PathBuf,
}

impl Drop for Tools {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Tools {
    pub(crate) fn find() -> Tools {
        // One folder per test (tests run on threads of one process and remove theirs).
        let dir = std::env::temp_dir().join(format!(
            "sarek-reliability-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Tools {
            glslang: spirv::glslang_available() && spirv::spirv_val_available(),
            clang: Command::new("clang").arg("--version").output().is_ok(),
            ptxas: find_ptxas(),
            dir,
        }
    }

    /// naga alone (in process): no external tool, no folder.
    fn none() -> Tools {
        Tools {
            glslang: false,
            clang: false,
            ptxas: None,
            dir: PathBuf::new(),
        }
    }

    /// `Ok(false)` when the target's tool is absent.
    pub(crate) fn validate(&self, target: Target, src: &str) -> Result<bool, String> {
        match target {
            Target::Wgsl => naga_accepts(src).map(|_| true),
            Target::Glsl if self.glslang => {
                let words = spirv::compile(src).map_err(|e| e.to_string())?;
                spirv::validate(&words).map_err(|e| e.to_string())?;
                Ok(true)
            }
            Target::OpenCl if self.clang => {
                let path = self
                    .dir
                    .join(format!("{:?}.cl", std::thread::current().id()));
                std::fs::write(&path, src).unwrap();
                let mut cmd = Command::new("clang");
                cmd.args([
                    "-x",
                    "cl",
                    "-fsyntax-only",
                    "-Xclang",
                    "-finclude-default-header",
                ]);
                if src.contains("sub_group_") {
                    cmd.args(["-cl-std=CL2.0", "-target", "spir64"]);
                } else {
                    cmd.arg("-cl-std=CL1.2");
                }
                let out = cmd.arg(&path).output().map_err(|e| e.to_string())?;
                if out.status.success() {
                    Ok(true)
                } else {
                    Err(String::from_utf8_lossy(&out.stderr).into_owned())
                }
            }
            Target::Ptx if self.ptxas.is_some() => {
                let stem = self.dir.join(format!("{:?}", std::thread::current().id()));
                let path = stem.with_extension("ptx");
                std::fs::write(&path, src).unwrap();
                let out = Command::new(self.ptxas.as_ref().unwrap())
                    .args(["-arch=sm_90", "-o"])
                    .arg(stem.with_extension("cubin"))
                    .arg(&path)
                    .output()
                    .map_err(|e| e.to_string())?;
                if out.status.success() {
                    Ok(true)
                } else {
                    Err(String::from_utf8_lossy(&out.stderr).into_owned())
                }
            }
            Target::Cuda if sarek_runtime::cuda::nvrtc::load().is_ok() => nvrtc_compile(src),
            Target::Metal if self.clang => {
                let shim = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/all/support/metal_shim.h");
                let include = self.dir.join("include");
                std::fs::create_dir_all(&include).unwrap();
                // `#include <metal_stdlib>` in the generated source resolves to the shim.
                std::fs::write(
                    include.join("metal_stdlib"),
                    format!("#include \"{}\"\n", shim.display()),
                )
                .unwrap();
                let path = self
                    .dir
                    .join(format!("{:?}.metal", std::thread::current().id()));
                std::fs::write(&path, src).unwrap();
                let out = Command::new("clang++")
                    .args([
                        "-x",
                        "c++",
                        "-std=c++17",
                        "-fsyntax-only",
                        "-Wno-unknown-attributes",
                        "-include",
                    ])
                    .arg(&shim)
                    .arg("-I")
                    .arg(&include)
                    .arg(&path)
                    .output()
                    .map_err(|e| e.to_string())?;
                if out.status.success() {
                    Ok(true)
                } else {
                    Err(String::from_utf8_lossy(&out.stderr).into_owned())
                }
            }
            _ => Ok(false),
        }
    }
}

/// CUDA C through NVRTC for `sm_90`, with the runtime's options.
fn nvrtc_compile(source: &str) -> Result<bool, String> {
    use cudarc::nvrtc::result;
    use std::ffi::{CStr, CString};
    let src = CString::new(source).unwrap();
    let prog = result::create_program(&src, None).map_err(|e| format!("{e:?}"))?;
    let opts = ["--gpu-architecture=sm_90", "--fmad=false"];
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
    res.map(|_| true).map_err(|e| format!("{e:?}\n{log}"))
}

const TARGETS: [Target; 4] = [Target::Wgsl, Target::Glsl, Target::OpenCl, Target::Ptx];

#[derive(Default, Debug)]
struct Tally {
    tried: usize,
    accepted: usize,
    modules: usize,
    refused: usize,
    invalid: Vec<String>,
    panics: Vec<String>,
}

/// Check, lower and generate `text` for every target in both modes; validate what comes out
/// (only on the targets in `validate`). Returns whether the front end accepted it.
fn pipeline(
    name: &str,
    text: &str,
    tools: &Tools,
    validate: &[Target],
    tally: &mut Tally,
) -> Result<bool, String> {
    let mut sources = SourceMap::new();
    let file = sources.add(name, text);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let program = match sarek_compiler::check(&sources, file) {
            Ok(p) => p,
            Err(d) => return Err(render_all(&d, &sources, false)),
        };
        let mut modules = Vec::new();
        for k in &program.kernels {
            let ir = sarek_compiler::lower_kernel(&program, &k.name)
                .map_err(|d| render_all(&d, &sources, false))?;
            for checked in [false, true] {
                let options = TargetOptions {
                    checked,
                    ..TargetOptions::default()
                };
                for t in TARGETS {
                    modules.push((
                        k.name.clone(),
                        t,
                        checked,
                        sarek_compiler::generate(&ir, t, &options),
                    ));
                }
            }
        }
        Ok(modules)
    }));
    tally.tried += 1;
    let modules = match outcome {
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            tally.panics.push(format!("{name}: {msg}\n{text}"));
            return Ok(false);
        }
        Ok(Err(e)) => return Err(e),
        Ok(Ok(m)) => m,
    };
    tally.accepted += 1;
    for (kernel, target, checked, generated) in modules {
        match generated {
            Err(_) => tally.refused += 1,
            Ok(g) => {
                tally.modules += 1;
                if !validate.contains(&target) {
                    continue;
                }
                if let Err(e) = tools.validate(target, &g.source) {
                    tally.invalid.push(format!(
                        "{name}/{kernel} on {target} (checked: {checked}): {e}\n--- input\n{text}\n--- generated\n{}",
                        g.source
                    ));
                }
            }
        }
    }
    Ok(true)
}

fn assert_clean(what: &str, tally: &Tally) {
    eprintln!(
        "{what}: {} inputs, {} accepted, {} modules generated, {} refused by a generator, {} invalid, {} panics",
        tally.tried,
        tally.accepted,
        tally.modules,
        tally.refused,
        tally.invalid.len(),
        tally.panics.len()
    );
    assert!(
        tally.panics.is_empty(),
        "panics:\n{}",
        tally.panics.join("\n\n")
    );
    assert!(
        tally.invalid.is_empty(),
        "{} generated modules rejected by their validator; first:\n{}",
        tally.invalid.len(),
        tally.invalid[0]
    );
}

#[test]
fn hostile_inputs_have_expected_outcomes() {
    let tools = Tools::find();
    let mut tally = Tally::default();
    let files = files::sarek_files(&files::tests_dir("reliability"));
    assert!(!files.is_empty());
    for path in files {
        let name = format!(
            "tests/reliability/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let expect = text
            .lines()
            .find_map(|l| {
                l.split_once("@expect ")
                    .map(|(_, e)| e.trim_end().trim_end_matches("*)").trim().to_string())
            })
            .unwrap_or_else(|| panic!("{name}: no `@expect` line"));
        let r = pipeline(&name, &text, &tools, &TARGETS, &mut tally);
        match (expect.strip_prefix("error: "), r) {
            (None, Ok(true)) if expect == "accept" => {}
            (Some(msg), Err(e)) => assert!(e.contains(msg), "{name}: expected `{msg}`, got:\n{e}"),
            (_, r) => panic!("{name}: expected {expect}, got {r:?}"),
        }
    }
    assert_clean("hostile inputs", &tally);
}

#[test]
fn corpus_in_checked_mode_validates() {
    let tools = Tools::find();
    let mut tally = Tally::default();
    for path in files::corpus() {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        pipeline(&name, &text, &tools, &TARGETS, &mut tally)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert_clean("corpus, plain and checked", &tally);
}

/// xorshift64*: a seeded, dependency-free generator (the run is reproducible from the seed).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const INT_EDGES: [&str; 12] = [
    "0",
    "1",
    "(-1)",
    "31",
    "32",
    "33",
    "63",
    "64",
    "65535",
    "2147483647",
    "(-2147483647 - 1)",
    "123456789",
];
const FLOAT_EDGES: [&str; 7] = ["0.0", "(-1.0)", "1e38", "3.4e38", "1e-45", "(-0.0)", "1e30"];
const INT_OPS: [&str; 11] = [
    " + ", " - ", " * ", " / ", " mod ", " lsl ", " lsr ", " asr ", " land ", " lor ", " lxor ",
];
const FLOAT_OPS: [&str; 4] = [" +. ", " -. ", " *. ", " /. "];

/// Byte ranges of integer and float literals (digits not inside an identifier).
fn literals(text: &str) -> Vec<(usize, usize, bool)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit()
            && (i == 0
                || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'.'));
        if !starts {
            i += 1;
            continue;
        }
        let s = i;
        let mut float = false;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b'e') {
            float |= b[i] == b'.' || b[i] == b'e';
            i += 1;
        }
        if i < b.len() && (b[i].is_ascii_alphabetic() || b[i] == b'_') {
            continue; // a suffixed literal (`1L`, `2l`) or part of a name
        }
        out.push((s, i, float));
    }
    out
}

fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut t = text.to_string();
    for _ in 0..1 + rng.below(3) {
        match rng.below(4) {
            0 | 1 => {
                let lits = literals(&t);
                if lits.is_empty() {
                    continue;
                }
                let (s, e, float) = lits[rng.below(lits.len())];
                let v = if float {
                    FLOAT_EDGES[rng.below(FLOAT_EDGES.len())]
                } else {
                    INT_EDGES[rng.below(INT_EDGES.len())]
                };
                t.replace_range(s..e, v);
            }
            2 => {
                let ops: &[&str] = if rng.below(3) == 0 {
                    &FLOAT_OPS
                } else {
                    &INT_OPS
                };
                let at: Vec<(usize, &str)> = ops
                    .iter()
                    .flat_map(|op| t.match_indices(op).collect::<Vec<_>>())
                    .collect();
                if at.is_empty() {
                    continue;
                }
                let (pos, old) = at[rng.below(at.len())];
                let new = ops[rng.below(ops.len())];
                t.replace_range(pos..pos + old.len(), new);
            }
            _ => {
                // Shift an index by a constant: out-of-range constant indices.
                let at: Vec<usize> = t.match_indices(".(").map(|(p, _)| p).collect();
                if at.is_empty() {
                    continue;
                }
                let pos = at[rng.below(at.len())] + 2;
                let k = INT_EDGES[rng.below(INT_EDGES.len())];
                t.insert_str(pos, &format!("{k} + "));
            }
        }
    }
    t
}

/// glslang rejects identifiers over 1,024 characters; the other validators take any length.
/// Every naming position gets a 2,000-character name, and pairs of names that differ only
/// in their last character (two vectors, two fields), which a plain truncation would merge.
#[test]
fn long_identifiers_validate_everywhere() {
    let long =
        |stem: &str, last: char| format!("{stem}{}{last}", "q".repeat(2000 - stem.len() - 1));
    let (rec, fa, fb) = (long("rec", 't'), long("fld", 'a'), long("fld", 'b'));
    let (var, ca, cb) = (long("shp", 't'), long("Ctor", 'a'), long("Ctor", 'b'));
    let (helper, hp, kernel) = (long("helper", 'x'), long("hparam", 'x'), long("kern", 'x'));
    let (va, vb, rs, n) = (
        long("vec", 'a'),
        long("vec", 'b'),
        long("recs", 'x'),
        long("n", 'x'),
    );
    let (sh, i, x, y) = (
        long("sh", 'x'),
        long("i", 'x'),
        long("x", 'x'),
        long("y", 'x'),
    );
    let text = format!(
        "type {rec} = {{ {fa} : float32; {fb} : float32 }}
type {var} = {ca} of float32 | {cb}

let {helper} ({hp} : float32) : float32 = {hp} *. 2.0

let%kernel {kernel} ({va} : float32 vector) ({vb} : float32 vector) ({rs} : {rec} vector) ({n} : int32) =
  let%shared ({sh} : float32) = 64 in
  let {i} = global_thread_id in
  {sh}.(thread_idx_x) <- 1.0;
  block_barrier ();
  if {i} < {n} then begin
    let {x} = match (if {i} mod 2 = 0 then {ca} {va}.({i}) else {cb}) with {ca} {y} -> {y} | {cb} -> 0.0 in
    {vb}.({i}) <- {helper} {x} +. {rs}.({i}).{fa} +. {rs}.({i}).{fb} +. {sh}.(thread_idx_x)
  end
"
    );
    let mut sources = SourceMap::new();
    let file = sources.add("long_identifiers.sarek", text);
    let program = sarek_compiler::check(&sources, file)
        .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
    let ir = sarek_compiler::lower_kernel(&program, &kernel)
        .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
    let tools = Tools::find();
    let mut validated = Vec::new();
    for target in Target::ALL.into_iter().filter(|t| *t != Target::Ir) {
        let g = sarek_compiler::generate(&ir, target, &TargetOptions::default())
            .unwrap_or_else(|d| panic!("{target}: {}", render_all(&d, &sources, false)));
        match tools.validate(target, &g.source) {
            Ok(true) => validated.push(target),
            Ok(false) => eprintln!("skipping {target}: its validator is not installed"),
            Err(e) => panic!("{target} rejected the long identifiers:\n{e}"),
        }
    }
    eprintln!("long identifiers validated on {validated:?}");
}

#[test]
fn mutated_corpus_validates() {
    let env = |name: &str, default: u64| -> u64 {
        std::env::var(name)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let count = env("SAREK_FUZZ_COUNT", 64);
    let secs = env("SAREK_FUZZ_SECS", 300);
    let seed: u64 = std::env::var("SAREK_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x005e_ed17);
    let tools = Tools::find();
    let corpus: Vec<(String, String)> = files::corpus()
        .into_iter()
        .chain(files::sarek_files(&files::tests_dir("conformance")))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    let mut rng = Rng(seed | 1);
    let mut tally = Tally::default();
    // The mutants depend on the seed alone: the clock may stop the run early, never change
    // what it tries.
    let deadline = Instant::now() + Duration::from_secs(secs);
    while (tally.tried as u64) < count {
        if Instant::now() >= deadline {
            eprintln!(
                "mutation loop: the {secs} s safety cap stopped it after {} of {count} mutants",
                tally.tried
            );
            break;
        }
        let (name, text) = &corpus[rng.below(corpus.len())];
        let mutant = mutate(text, &mut rng);
        // naga runs in process on every mutant; the external tools on every eighth.
        let validate: &[Target] = if tally.tried % 8 == 0 {
            &TARGETS
        } else {
            &[Target::Wgsl]
        };
        let _ = pipeline(
            &format!("mutant of {name}"),
            &mutant,
            &tools,
            validate,
            &mut tally,
        );
        if !tally.invalid.is_empty() || !tally.panics.is_empty() {
            break;
        }
    }
    assert_clean(
        &format!("mutation loop (seed {seed:#x}, {count} mutants)"),
        &tally,
    );
}

/// The kernels of `long_chains_validate_everywhere`: `n` chained `let`s, `n`-term int and
/// float sums, and `n / 5` stores interleaved with `let`s.
pub fn long_chains(n: usize) -> Vec<(String, String)> {
    let head = |ty: &str| {
        format!(
            "let%kernel k (a : {ty} vector) =\n  let i = thread_idx_x + block_idx_x * block_dim_x in\n"
        )
    };
    let mut lets = head("int32") + "  let x0 = a.(i) in\n";
    for j in 1..n {
        lets += &format!("  let x{j} = x{} + 1 in\n", j - 1);
    }
    lets += &format!("  a.(i) <- x{}\n", n - 1);
    let int_sum = head("int32") + "  let x = a.(i) in\n  a.(i) <- x" + &" + x".repeat(n - 1) + "\n";
    let float_sum =
        head("float32") + "  let x = a.(i) in\n  a.(i) <- x" + &" +. x".repeat(n - 1) + "\n";
    let mut seq = head("int32");
    for j in 0..n / 5 {
        seq += &format!("  a.(i) <- a.(i) + 1;\n  let y{j} = a.(i) in\n");
    }
    seq += &format!("  a.(i) <- y0 + y{}\n", n / 5 - 1);
    vec![
        (format!("lets_{n}"), lets),
        (format!("int_sum_{n}"), int_sum),
        (format!("float_sum_{n}"), float_sum),
        (format!("seq_lets_{}", n / 5), seq),
    ]
}

/// The parser bounds true nesting, not chains: generated and unrolled kernels have thousands
/// of `let`s and terms in a row. Every pass takes them on any caller's stack (the front end
/// runs on a stack of its own, lowering cuts operator chains into temporaries), and every
/// generator's output validates: chains of 10,000 through naga, of 1,000 through every
/// validator. A thread with the default 2 MiB stack of a spawned thread runs it all, dropping the
/// program included.
#[test]
fn long_chains_validate_everywhere() {
    let tools = Tools::find();
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            // 10,000 links: every generator (plain), naga on the WGSL.
            for (name, text) in long_chains(10_000) {
                let mut sources = SourceMap::new();
                let file = sources.add(name.as_str(), text);
                let program = sarek_compiler::check(&sources, file)
                    .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
                let ir = sarek_compiler::lower_kernel(&program, "k")
                    .unwrap_or_else(|d| panic!("{}", render_all(&d, &sources, false)));
                for target in Target::ALL {
                    let g = sarek_compiler::generate(&ir, target, &TargetOptions::default())
                        .unwrap_or_else(|d| {
                            panic!("{name} on {target}: {}", render_all(&d, &sources, false))
                        });
                    if target == Target::Wgsl {
                        naga_accepts(&g.source).unwrap_or_else(|e| panic!("{name}: naga: {e}"));
                    }
                }
            }
            // 1,000 links: every generator in both modes, every validator installed.
            let mut tally = Tally::default();
            for (name, text) in long_chains(1_000) {
                let accepted = pipeline(&name, &text, &tools, &TARGETS, &mut tally)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(accepted, "{name} was not accepted");
            }
            assert_clean("long chains", &tally);
        })
        .unwrap()
        .join()
        .unwrap();
}

/// `compile --target wgsl` holds kernels to the limits every WebGPU implementation applies
/// (`TargetOptions::portable`, on by default): 8,192 bytes of function-scope variables per
/// function, 16,384 bytes of workgroup storage, arrays under 65,536 elements; each refusal
/// located and naming WGSL. With the option off (a `wgpu` device, which checks its
/// adapter's own limits) the same kernels generate and naga accepts them.
#[test]
fn portable_wgsl_limits_are_refused_located() {
    let local = |n: u32| {
        format!(
            "let%kernel k (o : float32 vector) =\n  let loc = create_array {n} Local in\n  loc.(0) <- 1.0;\n  o.(global_thread_id) <- loc.(0)\n"
        )
    };
    let shared = |n: u32| {
        format!(
            "let%kernel k (o : float32 vector) =\n  let%shared (s : float32) = {n} in\n  s.(thread_idx_x) <- 1.0;\n  block_barrier ();\n  o.(thread_idx_x) <- s.(0)\n"
        )
    };
    let generate = |text: &str, portable: bool| {
        let mut sources = SourceMap::new();
        let file = sources.add("k.sarek", text);
        let program = sarek_compiler::check(&sources, file).unwrap();
        let ir = sarek_compiler::lower_kernel(&program, "k").unwrap();
        let options = TargetOptions {
            portable,
            ..TargetOptions::default()
        };
        sarek_compiler::generate(&ir, Target::Wgsl, &options)
            .map(|g| g.source)
            .map_err(|d| render_all(&d, &sources, false))
    };
    // At the limits: accepted and valid.
    for text in [local(2048), shared(4096)] {
        let src = generate(&text, true).unwrap_or_else(|e| panic!("{e}"));
        naga_accepts(&src).unwrap();
    }
    let cases = [
        (
            local(2049),
            "declares 8196 bytes of function-scope variables in one function, WGSL allows at most 8192",
            "k.sarek:2:7",
        ),
        (
            shared(4097),
            "declares 16388 bytes of shared arrays, WGSL allows at most 16384",
            "k.sarek:2:15",
        ),
        (
            shared(65536),
            "declares an array of 65536 elements, WGSL allows at most 65535",
            "k.sarek:2:15",
        ),
    ];
    for (text, message, place) in cases {
        let e = generate(&text, true).unwrap_err();
        assert!(e.contains(message), "{e}");
        assert!(e.contains(place), "{e}");
        assert!(e.contains("portable WGSL"), "{e}");
        // Without the option the device's own limits decide: the module itself is valid.
        let src = generate(&text, false).unwrap_or_else(|e| panic!("{e}"));
        naga_accepts(&src).unwrap();
    }
}

/// Tokens of `src` as byte ranges.
fn token_ranges(src: &str) -> Vec<(usize, usize)> {
    let (toks, _) = sarek_compiler::front::lexer::lex(sarek_compiler::FileId(0), src);
    toks.iter()
        .map(|t| (t.span.start as usize, t.span.end as usize))
        .filter(|(s, e)| s < e)
        .collect()
}

/// `src` with token edits applied: `(kind, a, b)` deletes token `a` (kind 0), duplicates it
/// (1) or swaps it with token `b` (2).
fn edit_tokens(mut src: String, edits: &[(u8, usize, usize)]) -> String {
    for &(kind, a, b) in edits {
        let toks = token_ranges(&src);
        if toks.is_empty() {
            break;
        }
        let (s1, e1) = toks[a % toks.len()];
        let (s2, e2) = toks[b % toks.len()];
        let (t1, t2) = (src[s1..e1].to_string(), src[s2..e2].to_string());
        src = match kind {
            0 => format!("{}{}", &src[..s1], &src[e1..]),
            1 => format!("{} {t1}{}", &src[..e1], &src[e1..]),
            _ if e1 <= s2 => format!("{}{t2}{}{t1}{}", &src[..s1], &src[e1..s2], &src[e2..]),
            _ => src,
        };
    }
    src
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    const WORDS: &[&str] = &[
        "let",
        "let%kernel",
        "let%shared",
        "in",
        "if",
        "then",
        "else",
        "match",
        "with",
        "|",
        "->",
        "for",
        "to",
        "do",
        "done",
        "while",
        "begin",
        "end",
        "(",
        ")",
        "{",
        "}",
        ";",
        ",",
        ".",
        ".(",
        ":",
        "<-",
        "=",
        "<",
        "+",
        "-",
        "*",
        "/",
        "+.",
        "*.",
        "mod",
        "lsl",
        "&&",
        "x",
        "v",
        "i",
        "f",
        "C",
        "1",
        "0x7fffffff",
        "1.5",
        "2.5d",
        "true",
        "()",
        "int32",
        "float32",
        "float64",
        "vector",
        "global_thread_id",
        "block_barrier",
        "thread_idx_x",
        "create_array",
        "Local",
        "(v : int32 vector)",
        "\n",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Random bytes through the whole front end (parser, typer, mono, recursion,
        /// convergence, lowering) and every generator: no panic.
        #[test]
        fn random_bytes_through_check_and_generate(bytes in proptest::collection::vec(any::<u8>(), 0..1500)) {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let mut tally = Tally::default();
            let _ = pipeline("bytes", &text, &Tools::none(), &[], &mut tally);
            prop_assert!(tally.panics.is_empty(), "{}", tally.panics.join("\n"));
        }

        /// Token soups: no panic; what is accepted generates WGSL that naga accepts.
        #[test]
        fn token_soups_through_check_and_generate(words in proptest::collection::vec(0..WORDS.len(), 0..300)) {
            let text = format!(
                "let%kernel k (v : int32 vector) =\n{}",
                words.iter().map(|&i| WORDS[i]).collect::<Vec<_>>().join(" ")
            );
            let mut tally = Tally::default();
            let _ = pipeline("soup", &text, &Tools::none(), &[Target::Wgsl], &mut tally);
            prop_assert!(tally.panics.is_empty(), "{}", tally.panics.join("\n"));
            prop_assert!(tally.invalid.is_empty(), "{}", tally.invalid.join("\n"));
        }

        /// Corpus kernels with tokens deleted, duplicated or swapped: no panic; every
        /// accepted mutant's WGSL passes naga (the other validators run in
        /// `mutated_corpus_validates`).
        #[test]
        fn token_mutated_corpus_through_check_and_generate(
            file in 0usize..64,
            edits in proptest::collection::vec((0u8..3, any::<usize>(), any::<usize>()), 1..5),
        ) {
            let corpus = files::corpus();
            let path = &corpus[file % corpus.len()];
            let text = edit_tokens(std::fs::read_to_string(path).unwrap(), &edits);
            let mut tally = Tally::default();
            let _ = pipeline("mutant", &text, &Tools::none(), &[Target::Wgsl], &mut tally);
            prop_assert!(tally.panics.is_empty(), "{}", tally.panics.join("\n"));
            prop_assert!(tally.invalid.is_empty(), "{}", tally.invalid.join("\n"));
        }
    }
}
