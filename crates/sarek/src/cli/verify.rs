//! `sarek verify`: the same inputs on `interp` and on other backends, every vector compared.
//!
//! What runs: with `--kernel K`, that kernel; without it, the file's only kernel. When the
//! command line gives no `--arg`, `--size` or `--input` and the file has `(* @run ... *)`
//! directives for the kernel(s), each directive is one verification instead.
//!
//! A backend that cannot run the kernel ([`RuntimeError::Refused`]) shows as `refused`, with
//! its located diagnostics printed once per backend and kernel; a device compiler rejecting
//! the generated source ([`RuntimeError::Compile`]) is an `ERROR` like any launch failure.
//!
//! Exit (the command-line contract: 1 on any mismatch, 2 when a requested backend is
//! unavailable): 1 on any mismatch or backend launch error; otherwise 2 when a backend
//! requested with `--backends` (by name or `all`) is unavailable or refuses the kernel (it
//! cannot run it: unavailable for this kernel), with one `error:` line per such backend on
//! stderr; 0 when all agree. A refusal by a backend that was not requested (the default list)
//! is shown but is not a failure.

use super::exec::{Prepared, ms, prepare, runtime_failure};
use super::{CmdResult, Failure, VerifyArgs, contracted, kernel_name, load, lower};
use sarek::{Backend, Device, RuntimeError};
use sarek_harness::{self as harness, Inputs, ParamKind, Tolerance, VectorComparison};
use sarek_runtime::discover;
use sarek_runtime::limits::{Command, Residence};
use std::collections::HashSet;
use std::process::ExitCode;
use std::sync::Arc;

/// One verification: a kernel and where its inputs come from.
struct Job {
    kernel: String,
    directive: Option<harness::Directive>,
}

/// What one backend did on one job.
enum Cell {
    Compared(Vec<VectorComparison>),
    /// The rendered diagnostics of the refusal.
    Refused(String),
    Error(String),
}

pub fn run(a: VerifyArgs) -> CmdResult {
    let program = load(&a.file, &a.modules)?;
    let text = program.sources().text(program.file()).to_string();
    let directives = harness::parse_directives(&text)
        .map_err(|e| Failure::user(format!("{}: {e}", a.file.display())))?;
    let cli_inputs =
        !a.input.args.is_empty() || a.input.size.is_some() || !a.input.inputs.is_empty();
    let kernels: Vec<String> = match &a.kernel {
        Some(k) => vec![kernel_name(&program, k)?],
        None => {
            let names = program.kernel_names();
            if !cli_inputs && !directives.is_empty() {
                Vec::new() // every directive, below
            } else if names.len() == 1 {
                vec![names[0].to_string()]
            } else if names.is_empty() {
                return Err(Failure::user(format!(
                    "`{}` defines no kernel",
                    a.file.display()
                )));
            } else {
                return Err(Failure::user(format!(
                    "`{}` has several kernels ({}); choose one with --kernel",
                    a.file.display(),
                    sarek_compiler::diag::name_list(&names)
                )));
            }
        }
    };
    let jobs: Vec<Job> = if cli_inputs {
        kernels
            .into_iter()
            .map(|kernel| Job {
                kernel,
                directive: None,
            })
            .collect()
    } else {
        let mut jobs: Vec<Job> = directives
            .iter()
            .filter(|d| kernels.is_empty() || kernels.contains(&d.kernel))
            .map(|d| Job {
                kernel: d.kernel.clone(),
                directive: Some(d.clone()),
            })
            .collect();
        if jobs.is_empty() {
            jobs = kernels
                .into_iter()
                .map(|kernel| Job {
                    kernel,
                    directive: None,
                })
                .collect();
        }
        // A directive gives its own launch: `--block 32` next to it was dropped silently and
        // the table still said `ok` (for the directive's block).
        let launch_flags = [
            ("--grid", a.input.grid.is_some()),
            ("--block", a.input.block.is_some()),
            ("--len", !a.input.lens.is_empty()),
        ];
        if jobs.iter().any(|j| j.directive.is_some())
            && let Some((flag, _)) = launch_flags.iter().find(|(_, given)| *given)
        {
            return Err(Failure::user(format!(
                "{flag} does not apply to the @run directives of `{}`, which give their own \
                 launch: add --size, --arg or --input to verify a launch of your own",
                a.file.display()
            )));
        }
        jobs
    };

    // Backends: explicit ones must be available; the default is every available one.
    let requested = match a.backends.as_deref().map(str::trim) {
        None | Some("all") => Backend::ALL
            .iter()
            .copied()
            .filter(|b| *b != Backend::Interp)
            .collect::<Vec<_>>(),
        Some(list) => {
            if list.split(',').count() > 1 && list.split(',').any(|s| s.trim().is_empty()) {
                // `cpu,,opencl` is a typo more often than a list of two: never guess (as
                // `fuse --kernels`).
                return Err(Failure::user(format!(
                    "--backends has an empty entry (got `{list}`): name each backend, \
                     separated by single commas"
                )));
            }
            let mut v = Vec::new();
            for name in list.split(',').filter(|s| !s.trim().is_empty()) {
                let b = super::parse_backend(name)?;
                if !v.contains(&b) {
                    v.push(b);
                }
            }
            if v.is_empty() {
                return Err(Failure::user("--backends: no backend named"));
            }
            v
        }
    };
    // Backends asked for (`--backends`) must exist and run the kernel; the default list is
    // whatever is available and can.
    let must_exist = a.backends.is_some();
    let interp = discover::open(Backend::Interp).map_err(|e| Failure::user(e.to_string()))?;
    let mut devices: Vec<(Backend, Arc<dyn Device>)> = Vec::new();
    let mut unavailable = Vec::new();
    for b in requested {
        match discover::open(b) {
            Ok(d) => devices.push((b, d)),
            Err(e) => unavailable.push((b, discover::unavailable_reason(&e))),
        }
    }
    for (b, why) in &unavailable {
        if must_exist {
            eprintln!("error: backend `{b}` is unavailable: {why}");
        } else {
            println!("skipped {b}: unavailable ({why})");
        }
    }

    let mut tol = Tolerance::default();
    if let Some(x) = a.atol {
        tol.f32_abs = x;
        tol.f64_abs = x;
    }
    if let Some(n) = a.ulps {
        tol.f32_ulps = n;
        tol.f64_ulps = n;
    }

    let mut failed = false;
    // Requested backends that refused a kernel: (backend, kernel, first line of the reason).
    let mut requested_refusals: Vec<(Backend, String, String)> = Vec::new();
    // (backend, kernel) pairs whose refusal was printed: each is shown once, not per job.
    let mut refusals_shown = HashSet::new();
    for job in &jobs {
        let kernel = contracted(lower(&program, &job.kernel)?, a.fma);
        // Every device's copies count in the memory check: verify runs them one after another.
        let residences: Vec<Residence> = (devices.iter())
            .map(|(_, d)| Residence::of(d.as_ref(), &kernel))
            .collect();
        let command = Command::Verify(&residences);
        let Prepared { args, config, size } = match &job.directive {
            None => prepare(&kernel, &a.input, command)?,
            Some(d) => {
                let at = |e: String| {
                    Failure::user(format!(
                        "{}:{}: @run {}: {e}",
                        a.file.display(),
                        d.line,
                        d.kernel
                    ))
                };
                // As `--size` is: a directive's `size=3000000000` allocated 12 GB per vector
                // (an abort, or the machine's memory) before anything said it was too large.
                sarek_runtime::limits::check_size(&kernel, d.size as u64, &[], command)
                    .map_err(|e| at(e.to_string()))?;
                let inputs = Inputs {
                    seed: a.input.seed,
                    ..Inputs::from_directive(d)
                };
                let args = harness::build_args(&kernel, &inputs).map_err(|e| at(e.to_string()))?;
                Prepared {
                    args,
                    config: d.config(),
                    size: d.size,
                }
            }
        };
        let mut expected = args.clone();
        let stats =
            harness::run(interp.as_ref(), &kernel, config, &mut expected).map_err(|e| match e {
                RuntimeError::Fault { .. } => runtime_failure(&program, &e),
                other => Failure::user(format!("interp: {other}")),
            })?;
        let c = config;
        println!(
            "{}{}: size {size}, grid {}x{}x{}, block {}x{}x{}, seed {} (interp {})",
            job.kernel,
            job.directive
                .as_ref()
                .map(|d| format!(" (@run, line {})", d.line))
                .unwrap_or_default(),
            c.grid[0],
            c.grid[1],
            c.grid[2],
            c.block[0],
            c.block[1],
            c.block[2],
            a.input.seed,
            ms(stats.kernel_time)
        );
        let params: Vec<String> = harness::signature(&kernel)
            .into_iter()
            .filter(|p| matches!(p.kind, ParamKind::Vector { .. }))
            .map(|p| p.name)
            .collect();
        let mut rows = Vec::new();
        for (b, device) in &devices {
            let mut found = args.clone();
            let cell = match sarek_runtime::launch::run_checked(
                device.as_ref(),
                &kernel,
                config,
                &mut found,
                !a.unchecked,
            ) {
                Ok(_) => Cell::Compared(harness::compare_args(&kernel, &expected, &found, &tol)),
                Err(e @ RuntimeError::Refused { .. }) => {
                    Cell::Refused(program.render_runtime_error(&e, false))
                }
                Err(e) => Cell::Error(
                    program
                        .render_runtime_error(&e, false)
                        .trim_end()
                        .to_string(),
                ),
            };
            failed |= match &cell {
                Cell::Compared(cmp) => cmp.iter().any(|c| !c.ok()),
                Cell::Refused(_) => false,
                Cell::Error(_) => true,
            };
            if let Cell::Refused(diagnostics) = &cell
                && must_exist
                && !requested_refusals
                    .iter()
                    .any(|(rb, rk, _)| rb == b && *rk == job.kernel)
            {
                let why = first_line(diagnostics).trim_start_matches("error: ");
                requested_refusals.push((*b, job.kernel.clone(), why.to_string()));
            }
            rows.push((*b, cell));
        }
        print_table(&params, &rows);
        for (b, cell) in &rows {
            if let Cell::Refused(diagnostics) = cell
                && refusals_shown.insert((*b, job.kernel.clone()))
            {
                print!("{diagnostics}");
            }
        }
    }
    if jobs.is_empty() {
        println!("nothing to verify");
    }
    if devices.is_empty() {
        println!("no backend to compare with interp");
    }
    for (b, kernel, why) in &requested_refusals {
        eprintln!(
            "error: backend `{b}` was requested but cannot run kernel `{kernel}` (refused: {why})"
        );
    }
    if failed {
        Ok(ExitCode::from(1))
    } else if must_exist && (!unavailable.is_empty() || !requested_refusals.is_empty()) {
        Ok(ExitCode::from(2))
    } else {
        Ok(ExitCode::SUCCESS)
    }
}

fn print_table(params: &[String], rows: &[(Backend, Cell)]) {
    let cell_text = |cell: &Cell, i: usize| match cell {
        Cell::Compared(cmp) => match cmp.get(i) {
            Some(c) if c.ok() => "ok".to_string(),
            Some(c) => format!("MISMATCH {}/{}", c.mismatches, c.compared),
            None => "-".to_string(),
        },
        Cell::Refused(_) => "refused".to_string(),
        Cell::Error(_) => "ERROR".to_string(),
    };
    let mut table: Vec<Vec<String>> = vec![
        std::iter::once("backend".to_string())
            .chain(params.iter().cloned())
            .collect(),
    ];
    for (b, cell) in rows {
        let mut line = vec![b.name().to_string()];
        match cell {
            // One word for the whole row: the backend did not produce any vector.
            Cell::Refused(_) | Cell::Error(_) => line.push(cell_text(cell, 0)),
            Cell::Compared(_) => line.extend((0..params.len()).map(|i| cell_text(cell, i))),
        }
        table.push(line);
    }
    let cols = table.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            table
                .iter()
                .filter_map(|r| r.get(c))
                .map(String::len)
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in &table {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, s)| format!("{s:<w$}", w = widths[c]))
            .collect();
        println!("  {}", line.join("  ").trim_end());
    }
    for (b, cell) in rows {
        match cell {
            Cell::Compared(cmp) => {
                for c in cmp.iter().filter(|c| !c.ok()) {
                    println!(
                        "  {b} {}: {} of {} values differ; first {}",
                        c.param,
                        c.mismatches,
                        c.compared,
                        c.first.as_ref().map(|m| m.to_string()).unwrap_or_default()
                    );
                }
            }
            Cell::Refused(m) => println!(
                "  {b} refused the kernel: {}",
                first_line(m).trim_start_matches("error: ")
            ),
            Cell::Error(m) => println!("  {b} failed: {}", first_line(m)),
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}
