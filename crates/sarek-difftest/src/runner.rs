//! One kernel through everything: the front end, every generator with its validator, every
//! backend against `interp`; the per-column outcomes, and the counts over a run.

use crate::exec::{self, BackendKind, Dev, Launch, Lowered, Ran, Target};
use crate::validate::{Validators, Verdict};
use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

/// A column of the summary: a generator with its validator, or a backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Column {
    Gen(Target),
    Exec(BackendKind),
}

impl Column {
    pub fn label(self) -> String {
        match self {
            Column::Gen(t) => format!("gen:{}", t.name()),
            Column::Exec(b) => exec::backend_name(b).to_string(),
        }
    }
}

/// What one column did with one kernel.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Validated, or ran and agreed with `interp`.
    Agree,
    /// A located refusal naming the target, or a missing device feature.
    Refused,
    /// A known defect handled by another issue: which one, and the message.
    Known(&'static str, String),
    /// A rejected module, a mismatch, a launch failure, a badly formed refusal.
    Failed(Failure),
    /// The validator or backend is not on this machine.
    Unavailable,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The validator (or the device's compiler) rejected generated source.
    Rejected,
    /// Ran, and some value differs from `interp`.
    Mismatch,
    /// A launch error or a fault the reference does not have.
    Error,
    /// A refusal without a location or without the target's name.
    BadRefusal,
}

#[derive(Clone, Debug)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

/// Why a kernel could not be tested at all (a generator defect, or a front-end one).
#[derive(Clone, Debug)]
pub enum Broken {
    /// `sarek check` refused the generated source.
    Check(String),
    /// The reference interpreter faulted or could not take the arguments.
    Reference(String),
    /// The compiler or a backend panicked on it (the panic's message).
    Panic(String),
}

/// One kernel to run: its source, the kernel's name, its launch.
#[derive(Clone, Debug)]
pub struct Job {
    pub source: String,
    pub kernel: String,
    pub launch: Launch,
}

/// Everything one kernel produced.
pub struct KernelReport {
    pub broken: Option<Broken>,
    pub outcomes: Vec<(Column, Outcome)>,
    pub time: Duration,
    pub column_time: Vec<(Column, Duration)>,
}

impl KernelReport {
    pub fn failures(&self) -> impl Iterator<Item = (Column, &Failure)> {
        self.outcomes.iter().filter_map(|(c, o)| match o {
            Outcome::Failed(f) => Some((*c, f)),
            _ => None,
        })
    }
}

/// The devices and validators a run uses, opened once.
pub struct Harness {
    pub interp: Dev,
    pub devices: Vec<(BackendKind, Result<Dev, String>)>,
    pub targets: Vec<Target>,
    pub validators: Validators,
}

impl Harness {
    pub fn new(backends: &[BackendKind], targets: &[Target]) -> Result<Harness, String> {
        let interp = exec::open(BackendKind::Interp)?;
        let validators = Validators::find();
        let devices = backends
            .iter()
            .map(|b| (*b, exec::open_sharing(*b, validators.shared_spirv())))
            .collect();
        Ok(Harness {
            interp,
            devices,
            targets: targets.to_vec(),
            validators,
        })
    }

    /// Only the columns in `only` (the shrinker re-runs just the failing one).
    pub fn run(
        &self,
        source: &str,
        kernel: &str,
        launch: &Launch,
        only: Option<Column>,
    ) -> KernelReport {
        let job = Job {
            source: source.to_string(),
            kernel: kernel.to_string(),
            launch: launch.clone(),
        };
        self.run_batch(std::slice::from_ref(&job), only)
            .pop()
            .expect("one report per job")
    }

    /// Several kernels at once: each validator sees the batch's generated sources together
    /// ([`Validators::check_many`]: one NVRTC program for all of them), each backend runs
    /// each kernel. A batch validator's time is shared equally among the kernels it checked.
    pub fn run_batch(&self, jobs: &[Job], only: Option<Column>) -> Vec<KernelReport> {
        let mut reports: Vec<KernelReport> = Vec::with_capacity(jobs.len());
        let mut lowered: Vec<Option<Lowered>> = Vec::with_capacity(jobs.len());
        for job in jobs {
            let start = Instant::now();
            let mut report = KernelReport {
                broken: None,
                outcomes: Vec::new(),
                time: Duration::ZERO,
                column_time: Vec::new(),
            };
            match exec::lower("generated.sarek", &job.source, &job.kernel) {
                Ok(l) => lowered.push(Some(l)),
                Err(m) => {
                    report.broken = Some(Broken::Check(m));
                    lowered.push(None);
                }
            }
            report.time = start.elapsed();
            reports.push(report);
        }
        for &t in &self.targets {
            let col = Column::Gen(t);
            if only.is_some_and(|o| o != col) {
                continue;
            }
            self.validate_batch(&lowered, t, &mut reports);
        }
        let wants_exec = only.is_none_or(|o| matches!(o, Column::Exec(_)));
        if wants_exec && !self.devices.is_empty() {
            let prebuilt = self.prebuild(&lowered, only);
            let kernels = lowered.iter().flatten().count().max(1) as u32;
            for ((l, job), report) in lowered.iter().zip(jobs).zip(&mut reports) {
                if let Some(l) = l {
                    let start = Instant::now();
                    self.execute(l, &job.launch, only, report);
                    report.time += start.elapsed();
                    for (col, took) in &prebuilt {
                        let share = *took / kernels;
                        report.time += share;
                        if let Some(c) = report.column_time.iter_mut().find(|(c, _)| c == col) {
                            c.1 += share;
                        }
                    }
                }
            }
        }
        reports
    }

    /// Generate `t` for every lowered kernel and validate what was generated in one call.
    fn validate_batch(&self, lowered: &[Option<Lowered>], t: Target, reports: &mut [KernelReport]) {
        let col = Column::Gen(t);
        let mut generated: Vec<(usize, String)> = Vec::new();
        for (k, l) in lowered.iter().enumerate() {
            let Some(l) = l else { continue };
            let start = Instant::now();
            let outcome = match exec::generate(l, t) {
                Ok(source) if self.validators.unavailable(t).is_none() => {
                    generated.push((k, source));
                    None
                }
                Ok(_) => Some(Outcome::Unavailable),
                Err(r) if r.well_formed => Some(Outcome::Refused),
                Err(r) => Some(Outcome::Failed(Failure {
                    kind: FailureKind::BadRefusal,
                    message: r.message,
                })),
            };
            let took = start.elapsed();
            reports[k].time += took;
            reports[k].column_time.push((col, took));
            if let Some(o) = outcome {
                reports[k].outcomes.push((col, o));
            }
        }
        if generated.is_empty() {
            return;
        }
        let start = Instant::now();
        let sources: Vec<&str> = generated.iter().map(|(_, s)| s.as_str()).collect();
        let verdicts = self.validators.check_many(t, &sources);
        let share = start.elapsed() / generated.len() as u32;
        for ((k, source), verdict) in generated.iter().zip(verdicts) {
            let outcome = match verdict {
                Verdict::Accepted => Outcome::Agree,
                Verdict::Rejected(m) => match known(col, &m) {
                    Some(why) => Outcome::Known(why, m),
                    None => Outcome::Failed(Failure {
                        kind: FailureKind::Rejected,
                        message: format!("{m}\n--- generated {}:\n{source}", t.name()),
                    }),
                },
            };
            let r = &mut reports[*k];
            r.time += share;
            if let Some(c) = r.column_time.iter_mut().find(|(c, _)| *c == col) {
                c.1 += share;
            }
            r.outcomes.push((col, outcome));
        }
    }

    /// Let each device build the batch's kernels together where it can (one OpenCL program
    /// for all: PoCL's fixed cost per program is about a kernel's own). The launches then
    /// find their builds; a kernel the joint build does not take is built alone as before.
    /// Its time per device, which the kernels share equally in the device's column.
    fn prebuild(
        &self,
        lowered: &[Option<Lowered>],
        only: Option<Column>,
    ) -> Vec<(Column, Duration)> {
        let mut took = Vec::new();
        for (b, dev) in &self.devices {
            let (Ok(dev), true) = (dev, only.is_none_or(|o| o == Column::Exec(*b))) else {
                continue;
            };
            let handles: Vec<_> = lowered
                .iter()
                .flatten()
                .map(|l| dev.core().intern(&l.kernel))
                .collect();
            if handles.len() > 1 {
                let start = Instant::now();
                dev.prebuild(&handles);
                took.push((Column::Exec(*b), start.elapsed()));
            }
        }
        took
    }

    fn execute(
        &self,
        l: &Lowered,
        launch: &Launch,
        only: Option<Column>,
        report: &mut KernelReport,
    ) {
        let args = match exec::arguments(l, launch) {
            Ok(a) => a,
            Err(m) => {
                report.broken = Some(Broken::Reference(m));
                return;
            }
        };
        let t0 = Instant::now();
        let expected = match exec::run(self.interp.as_ref(), l, launch, &args) {
            Ran::Ok { args, .. } => args,
            Ran::Refused(m) | Ran::Fault(m) | Ran::Failed(m) => {
                report.broken = Some(Broken::Reference(m));
                return;
            }
        };
        report
            .column_time
            .push((Column::Exec(BackendKind::Interp), t0.elapsed()));
        for (b, dev) in &self.devices {
            let col = Column::Exec(*b);
            if only.is_some_and(|o| o != col) {
                continue;
            }
            let dev = match dev {
                Ok(d) => d,
                Err(_) => {
                    report.outcomes.push((col, Outcome::Unavailable));
                    continue;
                }
            };
            let t0 = Instant::now();
            let outcome = match exec::run(dev.as_ref(), l, launch, &args) {
                Ran::Ok { args: found, .. } => match exec::compare(l, &expected, &found) {
                    None => Outcome::Agree,
                    Some(m) => Outcome::Failed(Failure {
                        kind: FailureKind::Mismatch,
                        message: m,
                    }),
                },
                Ran::Refused(_) => Outcome::Refused,
                Ran::Fault(m) | Ran::Failed(m) => match known(col, &m) {
                    Some(k) => Outcome::Known(k, m),
                    None => Outcome::Failed(Failure {
                        kind: FailureKind::Error,
                        message: m,
                    }),
                },
            };
            report.column_time.push((col, t0.elapsed()));
            report.outcomes.push((col, outcome));
        }
    }
}

/// Failures that are known defects owned by other issues, recognised by their message.
pub fn known(col: Column, message: &str) -> Option<&'static str> {
    let wgsl = matches!(
        col,
        Column::Gen(Target::Wgsl) | Column::Exec(BackendKind::Wgpu)
    );
    // Issue 17: naga's constant evaluation rejects overflowing constant shifts and constant
    // `min_int / -1` / `mod -1`, at validation or at pipeline creation.
    if wgsl
        && (message.contains("Constant evaluation")
            || message.contains("ConstantEvaluator")
            || message.contains("const-eval")
            || message.contains("Shift amount")
            || message.contains("RHS of shift operation")
            || message.contains("overflow")
            || message.contains("Shift amount exceeds")
            || message.contains("Pipeline constant error")
            || message.contains("Division by zero")
            || message.contains("Remainder by zero"))
    {
        return Some("issue 17 (WGSL constant evaluation)");
    }
    // naga 30's SPIR-V writer panics on valid WGSL where `select(x, x, x)` of a constant
    // `let` sits inside a select with a run-time condition (findings/open/
    // naga_spv_writer_panic_select.sarek); the runtime reports the caught panic.
    if col == Column::Exec(BackendKind::Wgpu) && message.contains("is not cached") {
        return Some("naga SPIR-V writer panic (findings/open/naga_spv_writer_panic_select)");
    }
    None
}

/// Counts per column over a run.
#[derive(Default)]
pub struct Summary {
    pub kernels: usize,
    pub broken_check: usize,
    pub broken_reference: usize,
    pub broken_panic: usize,
    pub columns: BTreeMap<String, Counts>,
    pub order: Vec<String>,
    pub total_time: Duration,
    pub times: Vec<Duration>,
    pub column_time: BTreeMap<String, Duration>,
    pub features: BTreeMap<&'static str, usize>,
    pub known: BTreeMap<&'static str, usize>,
}

#[derive(Default, Clone, Copy)]
pub struct Counts {
    pub agree: usize,
    pub refused: usize,
    pub known: usize,
    pub failed: usize,
    pub unavailable: usize,
}

impl Summary {
    pub fn add(&mut self, r: &KernelReport, features: &[&'static str]) {
        self.kernels += 1;
        self.total_time += r.time;
        self.times.push(r.time);
        for f in features {
            *self.features.entry(f).or_default() += 1;
        }
        match &r.broken {
            Some(Broken::Check(_)) => self.broken_check += 1,
            Some(Broken::Reference(_)) => self.broken_reference += 1,
            Some(Broken::Panic(_)) => self.broken_panic += 1,
            None => {}
        }
        for (c, o) in &r.outcomes {
            let label = c.label();
            if !self.order.contains(&label) {
                self.order.push(label.clone());
            }
            let e = self.columns.entry(label).or_default();
            match o {
                Outcome::Agree => e.agree += 1,
                Outcome::Refused => e.refused += 1,
                Outcome::Known(k, _) => {
                    e.known += 1;
                    *self.known.entry(k).or_default() += 1;
                }
                Outcome::Failed(_) => e.failed += 1,
                Outcome::Unavailable => e.unavailable += 1,
            }
        }
        for (c, t) in &r.column_time {
            *self.column_time.entry(c.label()).or_default() += *t;
        }
    }

    pub fn failed(&self) -> usize {
        self.columns.values().map(|c| c.failed).sum::<usize>()
            + self.broken_check
            + self.broken_reference
            + self.broken_panic
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.kernels.max(1) as f64;
        writeln!(
            f,
            "kernels tried: {} ({} refused by `check`, {} faulted on interp: generator defects; {} panics)",
            self.kernels, self.broken_check, self.broken_reference, self.broken_panic
        )?;
        writeln!(
            f,
            "| column | agree | refused | known | failed | unavailable | mean ms/kernel |"
        )?;
        writeln!(f, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |")?;
        let mut order = self.order.clone();
        order.sort_by_key(|l| (!l.starts_with("gen:"), l.clone()));
        for label in &order {
            let c = self.columns[label];
            let ms = self
                .column_time
                .get(label)
                .map_or(0.0, |t| t.as_secs_f64() * 1000.0 / n);
            writeln!(
                f,
                "| {label} | {} | {} | {} | {} | {} | {ms:.1} |",
                c.agree, c.refused, c.known, c.failed, c.unavailable
            )?;
        }
        if let Some(t) = self.column_time.get("interp") {
            writeln!(
                f,
                "| interp (reference) | - | - | - | - | - | {:.1} |",
                t.as_secs_f64() * 1000.0 / n
            )?;
        }
        let mut times = self.times.clone();
        times.sort();
        let median = times.get(times.len() / 2).copied().unwrap_or_default();
        let p99 = times
            .get((times.len() * 99 / 100).min(times.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default();
        writeln!(
            f,
            "time per kernel: mean {:.1} ms, median {:.1} ms, p99 {:.1} ms; total {:.1} s",
            self.total_time.as_secs_f64() * 1000.0 / n,
            median.as_secs_f64() * 1000.0,
            p99.as_secs_f64() * 1000.0,
            self.total_time.as_secs_f64()
        )?;
        if !self.known.is_empty() {
            for (k, c) in &self.known {
                writeln!(
                    f,
                    "known defect, not counted as a failure: {k}: {c} kernel-columns"
                )?;
            }
        }
        let feats: Vec<String> = self
            .features
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        writeln!(f, "kernels using: {}", feats.join(", "))
    }
}
