//! The conformance suite (`tests/conformance/`): kernels written from LANGUAGE.md alone, run
//! the way an outside judge would.
//!
//! - `generators`: every kernel of every file checks, and every target's generator either
//!   produces source or refuses with a located diagnostic naming the target; never a panic,
//!   never a hang (each generation runs on its own thread under a deadline).
//! - `backends_agree_with_interp`: every `@run` directive on `interp` and on every other
//!   backend (absent ones skip with a reason unless `SAREK_REQUIRE_BACKENDS` names them).
//! - `negative_kernels`: every `errors/*.sarek` is refused with a located message containing
//!   the text of its `(* @expect check: TEXT *)` or `(* @expect compile=T: TEXT *)` line.
//! - `numpy_oracle`: `oracle/check.py` (values computed with NumPy from LANGUAGE.md, not from
//!   the interpreter) on interp and cpu; skipped when python3 + numpy are missing.
//!   `numpy_oracle_soft_float_on_shaders`: its software-float cases on vulkan and wgpu.
//!
//! Open findings (tests/conformance/FINDINGS.md) are listed in `KNOWN`: they are printed, not
//! fatal, unless `SAREK_CONFORMANCE_STRICT=1`; a known entry that now passes is printed too,
//! so FINDINGS.md can be updated.

use sarek_compiler::{self as compiler, SourceMap, Target, TargetOptions};
use sarek_harness::{self as harness, Outcome};
use sarek_runtime::Backend;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// (finding, file stem, what) for failures that are open in FINDINGS.md. `what` is a target
/// name for generator failures, a backend name for execution failures, or `expect` for a
/// negative kernel.
const KNOWN: &[(&str, &str, &str)] = &[("F6", "e28_unknown_helper_suggestion", "expect")];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn dir() -> PathBuf {
    root().join("tests/conformance")
}

fn sarek_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sarek"))
        .collect();
    files.sort();
    files
}

fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

fn strict() -> bool {
    std::env::var("SAREK_CONFORMANCE_STRICT").is_ok_and(|v| v == "1")
}

fn known(file: &str, what: &str) -> Option<&'static str> {
    KNOWN
        .iter()
        .find(|(_, f, w)| *f == file && *w == what)
        .map(|(id, _, _)| *id)
}

/// Sort failures into fatal ones and known ones; report both; panic on fatal.
fn conclude(test: &str, failures: Vec<(String, String, String)>, checked: &[(String, String)]) {
    let mut fatal = Vec::new();
    for (file, what, msg) in &failures {
        match known(file, what) {
            Some(id) if !strict() => eprintln!("known {id}: {file} [{what}]: {msg}"),
            _ => fatal.push(format!("{file} [{what}]: {msg}")),
        }
    }
    for (id, file, what) in KNOWN {
        let tested = checked.iter().any(|(f, w)| f == file && w == what);
        let failed = failures.iter().any(|(f, w, _)| f == file && w == what);
        if tested && !failed {
            eprintln!("{test}: known {id} ({file} [{what}]) now passes: update FINDINGS.md");
        }
    }
    assert!(
        fatal.is_empty(),
        "{test}: {} failure(s):\n{}",
        fatal.len(),
        fatal.join("\n")
    );
}

/// Run `f` on its own thread; `None` when it does not finish within `limit` (the thread is
/// left behind: the process ends with the test binary) or panics.
fn with_deadline<T: Send + 'static>(
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(_)) => Err("panicked".into()),
        Err(_) => Err(format!("did not finish within {limit:?} (hang?)")),
    }
}

#[test]
fn generators() {
    let mut failures = Vec::new();
    let mut checked = Vec::new();
    let files = sarek_files(&dir());
    assert!(files.len() >= 25, "the suite has {} kernels", files.len());
    for file in files {
        let name = stem(&file);
        let text = std::fs::read_to_string(&file).unwrap();
        let mut sources = SourceMap::new();
        let id = sources.add(format!("tests/conformance/{name}.sarek"), text.clone());
        let program = match compiler::check(&sources, id) {
            Ok(p) => p,
            Err(d) => {
                let msg = compiler::diag::render_all(&d, &sources, false);
                failures.push((name.clone(), "check".into(), msg));
                continue;
            }
        };
        let directives = harness::parse_directives(&text).unwrap_or_default();
        if directives.is_empty() {
            failures.push((
                name.clone(),
                "directives".into(),
                "no @run directive".into(),
            ));
        }
        for k in &program.kernels {
            if !directives.iter().any(|d| d.kernel == k.name) {
                failures.push((
                    name.clone(),
                    "directives".into(),
                    format!("kernel `{}` never runs", k.name),
                ));
            }
            let kernel = match compiler::lower_kernel(&program, &k.name) {
                Ok(k) => k,
                Err(d) => {
                    let msg = compiler::diag::render_all(&d, &sources, false);
                    failures.push((name.clone(), "lower".into(), msg));
                    continue;
                }
            };
            for target in Target::ALL {
                checked.push((name.clone(), target.name().to_string()));
                let kk = kernel.clone();
                let r = with_deadline(Duration::from_secs(10), move || {
                    compiler::generate(&kk, target, &TargetOptions::default())
                });
                match r {
                    Ok(Ok(g)) => {
                        if g.source.trim().is_empty() {
                            failures.push((
                                name.clone(),
                                target.name().into(),
                                "empty source".into(),
                            ));
                        }
                    }
                    Ok(Err(diags)) => {
                        let msg = compiler::diag::render_all(&diags, &sources, false);
                        let located = msg.contains(&format!("tests/conformance/{name}.sarek:"));
                        let names_target = target_named(&msg, target);
                        if target == Target::Ir || !located || !names_target {
                            failures.push((
                                name.clone(),
                                target.name().into(),
                                format!("refusal must be located and name the target:\n{msg}"),
                            ));
                        }
                    }
                    Err(why) => failures.push((
                        name.clone(),
                        target.name().into(),
                        format!("kernel `{}`: generator {why}", k.name),
                    )),
                }
            }
        }
    }
    conclude("generators", failures, &checked);
}

fn target_named(msg: &str, target: Target) -> bool {
    let spellings: &[&str] = match target {
        Target::Ir => &["IR"],
        Target::Wgsl => &["WGSL", "WebGPU"],
        Target::Glsl => &["GLSL", "Vulkan"],
        Target::OpenCl => &["OpenCL"],
        Target::Cuda => &["CUDA"],
        Target::Metal => &["Metal"],
        Target::Ptx => &["PTX"],
    };
    spellings.iter().any(|s| msg.contains(s))
}

#[test]
fn backends_agree_with_interp() {
    let mut failures = Vec::new();
    let mut checked = Vec::new();
    for backend in Backend::ALL {
        if backend == Backend::Interp {
            continue;
        }
        let report = harness::check_corpus_against_interp(backend, &dir());
        if let Some(why) = &report.unavailable {
            if sarek_testkit::backends::required(backend.name()) {
                failures.push((
                    "*".into(),
                    backend.name().into(),
                    format!("required but unavailable: {why}"),
                ));
            } else {
                eprintln!("skip {backend}: {why}");
            }
            continue;
        }
        eprint!("{report}");
        for e in &report.entries {
            let file = stem(&e.file);
            checked.push((file.clone(), backend.name().to_string()));
            let why = match &e.outcome {
                Outcome::Agree => continue,
                Outcome::Refused(m) => {
                    // A target limitation is fine on the shader targets (float64, int64,
                    // subgroups); the host backend must run everything. A device compiler
                    // rejecting the generated source is a `BackendError`, never a refusal.
                    if backend != Backend::Cpu {
                        continue;
                    }
                    format!("refused: {m}")
                }
                Outcome::Mismatch(lines) => lines.join("; "),
                Outcome::BackendError(m) => format!("error: {m}"),
                Outcome::Broken(m) => format!("broken: {m}"),
            };
            failures.push((
                file,
                backend.name().into(),
                format!("line {} {}: {why}", e.line, e.kernel),
            ));
        }
    }
    conclude("backends_agree_with_interp", failures, &checked);
}

#[test]
fn negative_kernels() {
    let mut failures = Vec::new();
    let mut checked = Vec::new();
    let files = sarek_files(&dir().join("errors"));
    assert!(files.len() >= 15, "{} negative kernels", files.len());
    for file in files {
        let name = stem(&file);
        checked.push((name.clone(), "expect".to_string()));
        let text = std::fs::read_to_string(&file).unwrap();
        let Some(spec) = text
            .lines()
            .find_map(|l| l.split("@expect ").nth(1))
            .map(|s| s.trim_end_matches("*)").trim().to_string())
        else {
            failures.push((name, "expect".into(), "no @expect line".into()));
            continue;
        };
        let (mode, want) = spec.split_once(": ").expect("@expect MODE: TEXT");
        let path = format!("tests/conformance/errors/{name}.sarek");
        let (mode, want) = (mode.to_string(), want.to_string());
        let result = with_deadline(Duration::from_secs(10), move || {
            let mut sources = SourceMap::new();
            let id = sources.add(path, text);
            let diags = match compiler::check(&sources, id) {
                Err(d) => d,
                Ok(program) => {
                    let Some(t) = mode.strip_prefix("compile=") else {
                        return Err("accepted by check".to_string());
                    };
                    let target = Target::ALL
                        .into_iter()
                        .find(|x| x.name() == t)
                        .expect("a target name");
                    let mut all = Vec::new();
                    for k in &program.kernels {
                        match compiler::lower_kernel(&program, &k.name).and_then(|ir| {
                            compiler::generate(&ir, target, &TargetOptions::default())
                        }) {
                            Ok(_) => {}
                            Err(d) => all.extend(d),
                        }
                    }
                    if all.is_empty() {
                        return Err(format!("accepted by {t}"));
                    }
                    all
                }
            };
            Ok(compiler::diag::render_all(&diags, &sources, false))
        });
        let msg = match result {
            Ok(Ok(m)) => m,
            Ok(Err(e)) | Err(e) => {
                failures.push((name, "expect".into(), e));
                continue;
            }
        };
        let located = msg.contains(&format!("tests/conformance/errors/{name}.sarek:"));
        let has = msg.to_lowercase().contains(&want.to_lowercase());
        if !located || !has {
            failures.push((
                name,
                "expect".into(),
                format!("want a located message containing `{want}`, got:\n{msg}"),
            ));
        }
    }
    conclude("negative_kernels", failures, &checked);
}

#[test]
fn numpy_oracle() {
    oracle(&["interp", "cpu"], None);
}

/// The oracle's software-float cases (float `mod` edge values, every float64 math function
/// at its special values and far arguments) on the shader backends, where the generated
/// routines differ from the C family's: vulkan's float64 routines and wgpu's float32 `mod`
/// once returned junk for zero divisors, infinite operands and large arguments. Absent
/// backends skip unless `SAREK_REQUIRE_BACKENDS` names them.
#[test]
fn numpy_oracle_soft_float_on_shaders() {
    let present: Vec<&str> = [Backend::Vulkan, Backend::Wgpu]
        .into_iter()
        .filter(|&b| match sarek::open(b) {
            Ok(_) => true,
            Err(e) => {
                assert!(
                    !sarek_testkit::backends::required(b.name()),
                    "{b} is required but unavailable: {e}"
                );
                eprintln!("skip {b}: {e}");
                false
            }
        })
        .map(|b| b.name())
        .collect();
    if !present.is_empty() {
        oracle(&present, Some("soft_fmod,soft_math64"));
    }
}

/// `oracle/check.py` on `backends`, only the named `cases` (comma-separated) if given;
/// skipped when python3 + numpy are missing.
fn oracle(backends: &[&str], cases: Option<&str>) {
    let has_numpy = std::process::Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_numpy {
        eprintln!("skip numpy_oracle: python3 with numpy is not available");
        return;
    }
    let mut command = std::process::Command::new("python3");
    command
        .arg(dir().join("oracle/check.py"))
        .arg(env!("CARGO_BIN_EXE_sarek"))
        .args(backends)
        .env_remove("SAREK_BACKEND")
        .env_remove("SAREK_ORACLE_CASES");
    if let Some(cases) = cases {
        command.env("SAREK_ORACLE_CASES", cases);
    }
    let out = command.output().expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "oracle failures:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
