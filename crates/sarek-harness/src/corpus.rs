//! Running directives on devices: every corpus directive on `interp` and on a backend,
//! compared ([`check_corpus_against_interp`]), and the rendering of runtime errors on one
//! line per message. Needs the runtime (feature `devices`, on by default).

use crate::compare::{Tolerance, compare_args};
use crate::directive::{Directive, parse_directives};
use crate::inputs::{Inputs, build_args};
use sarek_compiler::ir::Kernel;
use sarek_runtime::device::{Backend, Device, LaunchConfig, LaunchStats, RuntimeError};
use sarek_runtime::value::ArgValue;
use std::fmt;
use std::path::{Path, PathBuf};

/// True when `SAREK_REQUIRE_BACKENDS` (a comma list) names `backend`: its absence is then a
/// test failure rather than a skip.
pub fn required(backend: Backend) -> bool {
    std::env::var("SAREK_REQUIRE_BACKENDS")
        .map(|v| {
            v.split(',')
                .any(|b| b.trim() == backend.name() || b.trim() == "all")
        })
        .unwrap_or(false)
}

/// What happened to one directive.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Every vector agreed.
    Agree,
    /// The backend ran and disagreed with `interp` (one line per vector that differs).
    Mismatch(Vec<String>),
    /// The target or the device cannot run the kernel ([`RuntimeError::Refused`]: float64 on
    /// WGSL, warps without subgroups): one located line per reason.
    Refused(String),
    /// The backend failed to launch or faulted, or its compiler rejected the generated source
    /// ([`RuntimeError::Compile`], a generator bug).
    BackendError(String),
    /// The front end, lowering, the arguments or the interpreter failed: the corpus entry
    /// itself is broken.
    Broken(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct CorpusEntry {
    pub file: PathBuf,
    pub kernel: String,
    pub line: usize,
    pub outcome: Outcome,
}

/// The result of [`check_corpus_against_interp`].
#[derive(Clone, Debug, PartialEq)]
pub struct CorpusReport {
    pub backend: Backend,
    /// Why the backend could not be opened (then `entries` is empty).
    pub unavailable: Option<String>,
    pub entries: Vec<CorpusEntry>,
}

impl CorpusReport {
    /// Entries that are neither agreement nor a refusal.
    pub fn failures(&self) -> Vec<&CorpusEntry> {
        self.entries
            .iter()
            .filter(|e| !matches!(e.outcome, Outcome::Agree | Outcome::Refused(_)))
            .collect()
    }
    pub fn count(&self, pred: impl Fn(&Outcome) -> bool) -> usize {
        self.entries.iter().filter(|e| pred(&e.outcome)).count()
    }
}

impl fmt::Display for CorpusReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(why) = &self.unavailable {
            return writeln!(f, "{}: unavailable: {why}", self.backend);
        }
        writeln!(
            f,
            "{}: {} directives, {} agree, {} refused, {} failed",
            self.backend,
            self.entries.len(),
            self.count(|o| matches!(o, Outcome::Agree)),
            self.count(|o| matches!(o, Outcome::Refused(_))),
            self.failures().len()
        )?;
        for e in &self.entries {
            let place = format!("{}:{} {}", e.file.display(), e.line, e.kernel);
            match &e.outcome {
                Outcome::Agree => {}
                Outcome::Refused(m) => writeln!(f, "  refused  {place}: {}", first_line(m))?,
                Outcome::Mismatch(lines) => {
                    writeln!(f, "  MISMATCH {place}: {}", lines.join("; "))?
                }
                Outcome::BackendError(m) => writeln!(f, "  ERROR    {place}: {}", first_line(m))?,
                Outcome::Broken(m) => writeln!(f, "  BROKEN   {place}: {}", first_line(m))?,
            }
        }
        Ok(())
    }
}

fn first_line(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or("")
}

/// Run `kernel` on `device` with `args` after checking the launch fits the device and the
/// arguments fit the kernel.
pub fn run(
    device: &dyn Device,
    kernel: &Kernel,
    config: LaunchConfig,
    args: &mut [ArgValue],
) -> Result<LaunchStats, RuntimeError> {
    device.launch(kernel, config, args)
}

/// For every `.sarek` file of `kernels_dir` and every `@run` directive in it: compile, run on
/// `interp` and on `backend` with the same seeded inputs, and compare. The caller decides what
/// is fatal (typically: any [`CorpusReport::failures`], and `unavailable` when
/// [`required`] says the backend must be present).
pub fn check_corpus_against_interp(backend: Backend, kernels_dir: &Path) -> CorpusReport {
    let mut report = CorpusReport {
        backend,
        unavailable: None,
        entries: Vec::new(),
    };
    let device = match sarek_runtime::discover::open(backend) {
        Ok(d) => d,
        Err(e) => {
            report.unavailable = Some(sarek_runtime::discover::unavailable_reason(&e));
            return report;
        }
    };
    let interp = match sarek_runtime::discover::open(Backend::Interp) {
        Ok(d) => d,
        Err(e) => {
            report.unavailable = Some(format!("the reference interpreter is unavailable: {e}"));
            return report;
        }
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(kernels_dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "sarek"));
    files.sort();
    for file in files {
        let entry = |kernel: &str, line: usize, outcome: Outcome| CorpusEntry {
            file: file.clone(),
            kernel: kernel.to_string(),
            line,
            outcome,
        };
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) => {
                report
                    .entries
                    .push(entry("", 0, Outcome::Broken(e.to_string())));
                continue;
            }
        };
        let directives = match parse_directives(&text) {
            Ok(d) => d,
            Err(e) => {
                report.entries.push(entry("", 0, Outcome::Broken(e)));
                continue;
            }
        };
        if directives.is_empty() {
            continue;
        }
        let mut sources = sarek_compiler::SourceMap::new();
        let id = sources.add(file.display().to_string(), text);
        let program = match sarek_compiler::check(&sources, id) {
            Ok(p) => p,
            Err(diags) => {
                let msg = sarek_compiler::diag::render_all(&diags, &sources, false);
                for d in &directives {
                    report
                        .entries
                        .push(entry(&d.kernel, d.line, Outcome::Broken(msg.clone())));
                }
                continue;
            }
        };
        for d in &directives {
            let outcome = run_directive(&sources, &program, d, interp.as_ref(), device.as_ref());
            report.entries.push(entry(&d.kernel, d.line, outcome));
        }
    }
    report
}

/// Render a runtime error on one line per message, locating interpreter faults and refusals
/// in the sources (`file:line:col: message`).
pub fn render_error(e: &RuntimeError, sources: &sarek_compiler::SourceMap) -> String {
    match e {
        RuntimeError::Fault { span, message } => format!("{}: {message}", sources.location(*span)),
        RuntimeError::Refused { diagnostics, .. } => diagnostics
            .iter()
            .map(|d| format!("{}: {}", sources.location(d.span), d.message))
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

fn run_directive(
    sources: &sarek_compiler::SourceMap,
    program: &sarek_compiler::front::tast::Program,
    d: &Directive,
    interp: &dyn Device,
    device: &dyn Device,
) -> Outcome {
    let kernel = match sarek_compiler::lower_kernel(program, &d.kernel) {
        Ok(k) => k,
        Err(diags) => {
            return Outcome::Broken(sarek_compiler::diag::render_all(&diags, sources, false));
        }
    };
    let mut expected = match build_args(&kernel, &Inputs::from_directive(d)) {
        Ok(a) => a,
        Err(e) => return Outcome::Broken(e.to_string()),
    };
    let mut found = expected.clone();
    let config = d.config();
    if let Err(e) = run(interp, &kernel, config, &mut expected) {
        return Outcome::Broken(format!("interp: {}", render_error(&e, sources)));
    }
    match run(device, &kernel, config, &mut found) {
        Ok(_) => {}
        // Only a refusal is a limitation; a compiler rejecting generated code is a failure.
        Err(e @ RuntimeError::Refused { .. }) => {
            return Outcome::Refused(render_error(&e, sources));
        }
        Err(e) => return Outcome::BackendError(render_error(&e, sources)),
    }
    let diffs: Vec<String> = compare_args(&kernel, &expected, &found, &Tolerance::default())
        .into_iter()
        .filter(|c| !c.ok())
        .map(|c| {
            format!(
                "{}: {} of {} differ, first {}",
                c.param,
                c.mismatches,
                c.compared,
                c.first.unwrap()
            )
        })
        .collect();
    if diffs.is_empty() {
        Outcome::Agree
    } else {
        Outcome::Mismatch(diffs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device whose every build fails with the error a backend would report.
    struct Failing(RuntimeError, sarek_runtime::memory::DeviceCore);

    impl Device for Failing {
        fn info(&self) -> sarek_runtime::device::DeviceInfo {
            sarek_runtime::device::DeviceInfo {
                backend: Backend::Wgpu,
                name: "failing".into(),
                max_threads_per_block: 1024,
                subgroups: true,
                float64: true,
            }
        }
        fn core(&self) -> &sarek_runtime::memory::DeviceCore {
            &self.1
        }
        fn layout_rules(&self) -> sarek_compiler::abi::LayoutRules {
            sarek_compiler::abi::LayoutRules::Std430
        }
        fn build(
            &self,
            _: &sarek_runtime::kernel::KernelHandle,
        ) -> Result<sarek_runtime::kernel::Built, RuntimeError> {
            Err(self.0.clone())
        }
        fn alloc(
            &self,
            bytes: usize,
        ) -> Result<Box<dyn sarek_runtime::memory::Allocation>, RuntimeError> {
            Ok(Box::new(sarek_runtime::memory::HostAllocation::new(bytes)?))
        }
        fn upload(&self, _: &sarek_runtime::memory::Mem, _: &[u8]) -> Result<(), RuntimeError> {
            Err(self.0.clone())
        }
        fn download(
            &self,
            _: &sarek_runtime::memory::Mem,
            _: &mut [u8],
        ) -> Result<(), RuntimeError> {
            Err(self.0.clone())
        }
        fn dispatch(
            &self,
            _: &sarek_runtime::kernel::Built,
            _: &sarek_runtime::bind::LaunchPlan,
        ) -> Result<(), RuntimeError> {
            Err(self.0.clone())
        }
        fn sync(&self) -> Result<std::time::Duration, RuntimeError> {
            Ok(std::time::Duration::ZERO)
        }
    }

    #[test]
    fn a_compile_error_is_a_failure_and_a_refusal_is_not() {
        let src = "(* @run k size=8 n=8 *)\n\
                   let%kernel k (v : int32 vector) (n : int32) =\n  \
                   let i = global_thread_id in\n  if i < n then v.(i) <- i\n";
        let mut sources = sarek_compiler::SourceMap::new();
        let file = sources.add("k.sarek", src);
        let program = sarek_compiler::check(&sources, file).unwrap();
        let d = &parse_directives(src).unwrap()[0];
        let interp = sarek_runtime::interp::open().unwrap();
        let outcome = |e: RuntimeError| {
            run_directive(
                &sources,
                &program,
                d,
                &*interp,
                &Failing(e, sarek_runtime::memory::DeviceCore::new("failing".into())),
            )
        };

        let compile = outcome(RuntimeError::Compile(
            "wgpu rejected the generated WGSL: expected ':'".into(),
        ));
        assert!(
            matches!(&compile, Outcome::BackendError(m) if m.contains("rejected the generated")),
            "{compile:?}"
        );

        // `v` of `(v : ...)` on line 2: "let%kernel k (" is 14 characters, so column 15.
        let at = src.find("v : int32").unwrap();
        let diag = |msg: &str| {
            sarek_compiler::Diagnostic::error(sarek_compiler::Span::new(file, at, at + 1), msg)
        };
        let refusal = RuntimeError::refused(
            sarek_compiler::Target::Wgsl,
            "k",
            [diag("WGSL says no"), diag("WGSL says no")],
        );
        let refused = outcome(refusal);
        assert_eq!(
            refused,
            Outcome::Refused("k.sarek:2:15: WGSL says no".into())
        );

        let report = CorpusReport {
            backend: Backend::Wgpu,
            unavailable: None,
            entries: [compile, refused]
                .into_iter()
                .map(|outcome| CorpusEntry {
                    file: "k.sarek".into(),
                    kernel: "k".into(),
                    line: 1,
                    outcome,
                })
                .collect(),
        };
        let failures = report.failures();
        assert_eq!(failures.len(), 1);
        assert!(matches!(failures[0].outcome, Outcome::BackendError(_)));
    }
}
