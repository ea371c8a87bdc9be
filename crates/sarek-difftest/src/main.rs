//! `sarek-difftest`: generate random kernels and compare every generator and backend with
//! the reference interpreter. See docs/difftest.md.

use clap::Parser;
use sarek_difftest::exec::{self, BackendKind, Target};
use sarek_difftest::generator::{self, Case, Options, Rng};
use sarek_difftest::runner::{
    Broken, Column, Failure, Harness, Job, KernelReport, Outcome, Summary,
};
use sarek_difftest::shrink::{self, Budget};
use sarek_difftest::validate::TARGETS;
use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(
    name = "sarek-difftest",
    about = "Random-kernel differential testing of every Sarek generator and backend against interp"
)]
struct Args {
    /// Number of kernels to generate.
    #[arg(long, default_value_t = 100)]
    count: u64,
    /// Seed of the first kernel; kernel k uses seed + k.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Backends compared with interp: a comma list, `all` (every backend but interp), or `none`.
    #[arg(long, default_value = "all")]
    backends: String,
    /// Generators validated: a comma list of targets (wgsl,glsl,opencl,cuda,ptx,metal), `all` or `none`.
    #[arg(long, default_value = "all")]
    validators: String,
    /// Where failing kernels (shrunk and original) and the summary are written.
    #[arg(long, default_value = "difftest-out")]
    out: PathBuf,
    /// Do not shrink failures.
    #[arg(long)]
    no_shrink: bool,
    /// Shrinking budget per failure: attempts.
    #[arg(long, default_value_t = 400)]
    shrink_attempts: usize,
    /// Shrinking budget per failure: seconds.
    #[arg(long, default_value_t = 120)]
    shrink_seconds: u64,
    /// Percentage of kernels that use int64/float64.
    #[arg(long, default_value_t = 40)]
    wide: u8,
    /// Percentage of kernels that may use warp operations.
    #[arg(long, default_value_t = 25)]
    warps: u8,
    /// Percentage of kernels whose integer operations may have only constant operands
    /// (naga's constant evaluation rejects the overflowing ones: issue 17, counted `known`).
    #[arg(long, default_value_t = 20)]
    constant_ops: u8,
    /// Stop generating after this many seconds (the summary covers what ran).
    #[arg(long)]
    time_limit: Option<u64>,
    /// Print a progress line every N kernels.
    #[arg(long, default_value_t = 100)]
    progress: u64,
    /// Exit 2 when a named backend is unavailable (instead of counting it unavailable).
    #[arg(long)]
    require: bool,
    /// Run the kernels of these files (`@run` directive; vector seed from --seed) instead of
    /// generating: reproduce a written-out failure.
    #[arg(long, num_args = 1..)]
    replay: Vec<PathBuf>,
    /// Write every generated kernel's source to the output folder (for inspection).
    #[arg(long)]
    keep: bool,
    /// Worker threads, each with its own devices and validators (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Kernels a worker takes at a time; each validator checks a batch together where it
    /// can (CUDA C: one NVRTC program), a failure is re-checked alone.
    #[arg(long, default_value_t = 8)]
    batch: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(m) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
    }
}

fn parse_backends(s: &str) -> Result<Vec<BackendKind>, String> {
    match s.trim() {
        "all" => Ok(exec::all_backends()),
        "none" | "" => Ok(Vec::new()),
        list => list
            .split(',')
            .map(|b| {
                let b = exec::backend(b.trim()).map_err(|e| format!("--backends: {e}"))?;
                if b == BackendKind::Interp {
                    Err("--backends: interp is the reference; name the others".to_string())
                } else {
                    Ok(b)
                }
            })
            .collect(),
    }
}

fn parse_targets(s: &str) -> Result<Vec<Target>, String> {
    match s.trim() {
        "all" => Ok(TARGETS.to_vec()),
        "none" | "" => Ok(Vec::new()),
        list => list
            .split(',')
            .map(|t| {
                let t: Target = t.trim().parse().map_err(|e| format!("--validators: {e}"))?;
                if TARGETS.contains(&t) {
                    Ok(t)
                } else {
                    Err(format!("--validators: `{}` has no validator", t.name()))
                }
            })
            .collect(),
    }
}

fn run(args: Args) -> Result<ExitCode, String> {
    let backends = parse_backends(&args.backends)?;
    let targets = parse_targets(&args.validators)?;
    let harness = Harness::new(&backends, &targets)?;
    let mut unavailable = false;
    for (b, d) in &harness.devices {
        match d {
            Ok(d) => println!("backend {}: {}", exec::backend_name(*b), d.info().name),
            Err(why) => {
                unavailable = true;
                println!("backend {}: unavailable ({why})", exec::backend_name(*b));
            }
        }
    }
    for t in &targets {
        match harness.validators.unavailable(*t) {
            None => println!("validator {}: available", t.name()),
            Some(why) => println!("validator {}: unavailable ({why})", t.name()),
        }
    }
    if unavailable && args.require && args.backends != "all" {
        return Err("a requested backend is unavailable (--require)".into());
    }
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;

    if !args.replay.is_empty() {
        return replay(&harness, &args);
    }

    drop(harness);
    let start = Instant::now();
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let jobs = jobs.clamp(1, args.count.max(1) as usize);
    let batch = args.batch.max(1);
    println!("{jobs} worker(s), batches of {batch} kernels");
    let _ = std::io::stdout().flush();
    let mut summary = Summary::default();
    let mut written = Vec::new();
    let next = AtomicU64::new(0);
    let (tx, rx) = mpsc::channel::<Done>();
    std::thread::scope(|scope| {
        for w in 0..jobs {
            let tx = tx.clone();
            let (next, args, backends, targets) = (&next, &args, &backends, &targets);
            // Every worker opens its own devices and validators in its own thread: no device
            // queue or driver context is shared or crosses threads (the harness opened
            // above only reported what is available).
            scope.spawn(move || {
                let h = match Harness::new(backends, targets) {
                    Ok(h) => h,
                    Err(m) => {
                        eprintln!("worker {w}: {m}");
                        return;
                    }
                };
                worker(&h, args, next, start, batch, &tx);
            });
        }
        drop(tx);
        // Seeds done out of order (workers), and the first seed not yet done: a run that
        // dies (a driver crashing the process) resumes from there with the summary so far.
        let mut pending = std::collections::BTreeSet::new();
        let mut resume = args.seed;
        for done in rx {
            pending.insert(done.seed);
            while pending.remove(&resume) {
                resume += 1;
            }
            summary.add(&done.report, &done.features);
            for line in &done.lines {
                println!("{line}");
            }
            written.extend(done.written);
            let n = summary.kernels as u64;
            if args.progress > 0 && n.is_multiple_of(args.progress) {
                let secs = start.elapsed().as_secs_f64();
                println!(
                    "[{n}/{}] {secs:.0} s, {:.2} kernels/s, {} failing kernel-columns so far; \
                     every seed below {resume} done",
                    args.count,
                    n as f64 / secs,
                    summary.failed()
                );
                write(
                    &args.out.join("summary.md"),
                    &format!(
                        "(in progress: {n} kernels in {secs:.0} s; every seed below {resume} \
                         done, `--seed {resume}` resumes)\n\n{summary}"
                    ),
                );
            }
            let _ = std::io::stdout().flush();
        }
    });
    let wall = start.elapsed();
    if summary.kernels < args.count as usize {
        println!("time limit reached after {} kernels", summary.kernels);
    }
    let text = format!(
        "sarek-difftest --count {} --seed {} --backends {} --validators {}\n\n{summary}\
         wall clock: {:.1} s for {} kernels with {jobs} worker(s), batches of {batch}: {:.2} kernels/s\n",
        args.count,
        args.seed,
        args.backends,
        args.validators,
        wall.as_secs_f64(),
        summary.kernels,
        summary.kernels as f64 / wall.as_secs_f64().max(1e-9),
    );
    println!("\n{text}");
    write(&args.out.join("summary.md"), &text);
    if !written.is_empty() {
        written.sort();
        println!("failures written:");
        for p in &written {
            println!("  {}", p.display());
        }
    }
    Ok(if summary.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// One kernel's results, sent by a worker to the thread that keeps the summary.
struct Done {
    seed: u64,
    report: KernelReport,
    features: Vec<&'static str>,
    /// What to print for it (failures, shrinking), in order.
    lines: Vec<String>,
    written: Vec<PathBuf>,
}

/// Take batches of seeds until the count or the time limit is reached; run, shrink and
/// write out each kernel's failures; send every kernel's results.
fn worker(
    harness: &Harness,
    args: &Args,
    next: &AtomicU64,
    start: Instant,
    batch: usize,
    tx: &mpsc::Sender<Done>,
) {
    let budget = Budget {
        attempts: args.shrink_attempts,
        time: Duration::from_secs(args.shrink_seconds),
    };
    loop {
        if args
            .time_limit
            .is_some_and(|l| start.elapsed().as_secs() >= l)
        {
            return;
        }
        let first = next.fetch_add(batch as u64, Ordering::Relaxed);
        if first >= args.count {
            return;
        }
        let cases: Vec<Case> = (first..(first + batch as u64).min(args.count))
            .map(|k| {
                let seed = args.seed + k;
                generator::generate(seed, &options(seed, args))
            })
            .collect();
        let reports = run_guarded(harness, &cases);
        for (case, report) in cases.iter().zip(reports) {
            let done = conclude(harness, args, case, report, &budget);
            if tx.send(done).is_err() {
                return;
            }
        }
    }
}

/// The batch's reports; a panic (a Sarek defect: the compiler or a backend) becomes the
/// broken report of the kernel that causes it, found by running the batch's kernels alone.
fn run_guarded(harness: &Harness, cases: &[Case]) -> Vec<KernelReport> {
    let jobs: Vec<Job> = cases
        .iter()
        .map(|c| Job {
            source: c.source(),
            kernel: c.kernel.clone(),
            launch: shrink::launch_of(c),
        })
        .collect();
    let guarded =
        |jobs: &[Job]| std::panic::catch_unwind(AssertUnwindSafe(|| harness.run_batch(jobs, None)));
    if let Ok(reports) = guarded(&jobs) {
        return reports;
    }
    jobs.iter()
        .map(|job| match guarded(std::slice::from_ref(job)) {
            Ok(mut r) => r.pop().expect("one report per job"),
            Err(panic) => KernelReport {
                broken: Some(Broken::Panic(panic_message(&panic))),
                outcomes: Vec::new(),
                time: Duration::ZERO,
                column_time: Vec::new(),
            },
        })
        .collect()
}

/// Two panic messages alike but for their numbers.
fn same_panic(a: &str, b: &str) -> bool {
    let words = |s: &str| -> String { s.chars().filter(|c| !c.is_ascii_digit()).collect() };
    words(a) == words(b)
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Write out what failed for one kernel (shrunk unless `--no-shrink`).
fn conclude(
    harness: &Harness,
    args: &Args,
    case: &Case,
    report: KernelReport,
    budget: &Budget,
) -> Done {
    let seed = case.seed;
    let mut lines = Vec::new();
    let mut written = Vec::new();
    if args.keep {
        let _ = std::fs::write(args.out.join(format!("kernel-{seed}.sarek")), case.source());
    }
    if let Some(b) = &report.broken {
        let (tag, m) = match b {
            Broken::Check(m) => ("check", m),
            Broken::Reference(m) => ("interp", m),
            Broken::Panic(m) => ("panic", m),
        };
        let path = args.out.join(format!("broken-{tag}-{seed}.sarek"));
        write(&path, &case.source());
        write(&path.with_extension("txt"), m);
        lines.push(format!(
            "seed {seed}: generated kernel broken ({tag}); written to {}",
            path.display()
        ));
        written.push(path);
        // A panic is a Sarek (or naga) defect worth a small reproducer: shrink while the
        // kernel still panics with the same message, numbers aside (they name arena
        // handles, which move as the kernel shrinks).
        if let Broken::Panic(message) = b
            && !args.no_shrink
        {
            let s = shrink::shrink_with(case, message, budget, |trial| {
                let launch = shrink::launch_of(trial);
                let source = trial.source();
                let run = || harness.run(&source, &trial.kernel, &launch, None);
                match std::panic::catch_unwind(AssertUnwindSafe(run)) {
                    Err(p) if same_panic(&panic_message(&p), message) => Some(panic_message(&p)),
                    _ => None,
                }
            });
            let small = args.out.join(format!("panic-{seed}.sarek"));
            write(&small, &s.case.source());
            lines.push(format!(
                "  shrunk from {} to {} nodes in {} steps ({} attempts); written to {}",
                case.tree.size(),
                s.case.tree.size(),
                s.steps,
                s.attempts,
                small.display()
            ));
            written.push(small);
        }
    }
    let failures: Vec<(Column, Failure)> = report.failures().map(|(c, f)| (c, f.clone())).collect();
    for (col, f) in failures {
        lines.push(format!(
            "seed {seed}: {} FAILED ({:?}): {}",
            col.label(),
            f.kind,
            first_line(&f.message)
        ));
        let (path, note) = write_failure(harness, args, case, col, &f, budget);
        lines.push(note);
        written.push(path);
    }
    Done {
        seed,
        features: case.features.iter().copied().collect(),
        report,
        lines,
        written,
    }
}

/// The per-kernel knobs, derived from the seed alone (a seed reproduces its kernel).
fn options(seed: u64, args: &Args) -> Options {
    let mut r = Rng::new(seed.wrapping_mul(31).wrapping_add(7));
    Options {
        wide: r.pct(args.wide as usize),
        warps: r.pct(args.warps as usize),
        constant_ops: r.pct(args.constant_ops as usize),
    }
}

fn write(path: &Path, text: &str) {
    if let Err(e) = std::fs::write(path, text) {
        eprintln!("warning: cannot write {}: {e}", path.display());
    }
}

fn first_line(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// Shrink (unless disabled) and write `<column>-<seed>.sarek`, the original, and a `.txt`
/// with the message and the commands that reproduce it.
fn write_failure(
    harness: &Harness,
    args: &Args,
    case: &Case,
    col: Column,
    f: &Failure,
    budget: &Budget,
) -> (PathBuf, String) {
    let label = col.label().replace(':', "-");
    let base = args.out.join(format!("{label}-{}", case.seed));
    write(&base.with_extension("orig.sarek"), &case.source());
    let (kernel, message, note) = if args.no_shrink {
        (
            case.clone(),
            f.message.clone(),
            "not shrunk (--no-shrink)".to_string(),
        )
    } else {
        let s = shrink::shrink(harness, case, col, &f.kind, &f.message, budget);
        let note = format!(
            "shrunk from {} to {} nodes in {} steps ({} attempts)",
            case.tree.size(),
            s.case.tree.size(),
            s.steps,
            s.attempts
        );
        (s.case, s.message, note)
    };
    let file = base.with_extension("sarek");
    write(&file, &kernel.source());
    let repro = match col {
        Column::Exec(b) => format!(
            "sarek verify {f} --backends {b} --seed {s}\nsarek-difftest --replay {f} --backends {b} --validators none --seed {s}",
            f = file.display(),
            b = exec::backend_name(b),
            s = case.seed
        ),
        Column::Gen(t) => format!(
            "sarek compile {f} --target {t}   # then the validator (see docs/difftest.md)\nsarek-difftest --replay {f} --backends none --validators {t}",
            f = file.display(),
            t = t.name()
        ),
    };
    write(
        &base.with_extension("txt"),
        &format!(
            "{} failed ({:?}) on seed {}; {note}\n\nreproduce:\n{repro}\n\nmessage (shrunk kernel):\n{message}\n",
            col.label(),
            f.kind,
            case.seed
        ),
    );
    let line = format!("  {note}; written to {}", file.display());
    (file, line)
}

fn replay(harness: &Harness, args: &Args) -> Result<ExitCode, String> {
    let mut failed = false;
    for path in &args.replay {
        let source = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        // The vector seed: --seed when given on the command line, else the file's header.
        let seed = header_seed(&source).unwrap_or(args.seed);
        let runs =
            exec::directives(&source, seed).map_err(|e| format!("{}: {e}", path.display()))?;
        for (kernel, launch) in runs {
            let r = harness.run(&source, &kernel, &launch, None);
            println!(
                "{} `{kernel}` grid {:?} block {:?} (seed {seed}, {:.0} ms):",
                path.display(),
                launch.grid,
                launch.block,
                r.time.as_secs_f64() * 1000.0
            );
            if let Some(b) = &r.broken {
                failed = true;
                println!("  broken: {b:?}");
            }
            for (c, o) in &r.outcomes {
                match o {
                    Outcome::Failed(f) => {
                        failed = true;
                        println!(
                            "  {}: FAILED ({:?})\n{}",
                            c.label(),
                            f.kind,
                            indent(&f.message)
                        );
                    }
                    other => println!("  {}: {}", c.label(), short(other)),
                }
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn header_seed(source: &str) -> Option<u64> {
    let i = source.find("--seed ")?;
    source[i + 7..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

fn short(o: &Outcome) -> String {
    match o {
        Outcome::Agree => "agree".into(),
        Outcome::Refused => "refused".into(),
        Outcome::Known(k, m) => format!("known: {k}\n{}", indent(m)),
        Outcome::Unavailable => "unavailable".into(),
        Outcome::Failed(f) => format!("FAILED {:?}", f.kind),
    }
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    {l}\n")).collect()
}
