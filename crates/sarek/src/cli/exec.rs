//! `sarek run` and `sarek bench`, and the argument preparation `verify` shares.

use super::{
    BenchArgs, CmdResult, Failure, InputArgs, RunArgs, color, contracted, kernel_name, load, lower,
    open_device,
};
use sarek::{ArgValue, HostVector, LaunchConfig, Program};
use sarek_compiler::abi::Leaf;
use sarek_compiler::ir::Kernel;
use sarek_compiler::types::Literal;
use sarek_harness::{self as harness, Inputs, ParamKind};
use sarek_runtime::limits::{Command, Residence};
use sarek_runtime::npy;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments and launch configuration for one run of `kernel`.
pub struct Prepared {
    pub args: Vec<ArgValue>,
    pub config: LaunchConfig,
    pub size: usize,
}

/// Split `NAME=VALUE` of option `flag`.
fn name_value<'a>(flag: &str, s: &'a str) -> Result<(&'a str, &'a str), Failure> {
    s.split_once('=')
        .filter(|(n, _)| !n.trim().is_empty())
        .map(|(n, v)| (n.trim(), v))
        .ok_or_else(|| Failure::user(format!("{flag} `{s}`: expected NAME=VALUE")))
}

/// Build the arguments from the command line: `--arg`s, `--input` files, seeded vectors;
/// the sizes are checked against what `command` will hold of them.
pub fn prepare(
    kernel: &Kernel,
    input: &InputArgs,
    command: Command<'_>,
) -> Result<Prepared, Failure> {
    let sig = harness::signature(kernel);
    let mut args = Vec::new();
    for a in &input.args {
        let (n, v) = name_value("--arg", a)?;
        args.push((n.to_string(), v.to_string()));
    }
    let mut size = input.size;
    let mut lengths: Vec<(String, usize)> = Vec::new();
    for spec in &input.lens {
        let (name, n) = name_value("--len", spec)?;
        if lengths.iter().any(|(known, _)| known == name) {
            return Err(Failure::user(format!(
                "--len `{spec}`: the length of `{name}` is given twice"
            )));
        }
        let n: usize = n.trim().parse().map_err(|_| {
            Failure::user(format!(
                "--len `{spec}`: `{n}` is not a length (a non-negative integer)"
            ))
        })?;
        lengths.push((name.to_string(), n));
    }
    let mut vectors = Vec::new();
    for spec in &input.inputs {
        let (name, file) = name_value("--input", spec)?;
        if vectors.iter().any(|(known, _)| known == name) {
            return Err(Failure::user(format!(
                "--input `{spec}`: parameter `{name}` is given twice"
            )));
        }
        let Some(p) = sig.iter().find(|p| p.name == name) else {
            // Let build_args word the unknown-parameter error (with its suggestion).
            vectors.push((
                name.to_string(),
                HostVector {
                    len: 0,
                    columns: Vec::new(),
                },
            ));
            continue;
        };
        let ParamKind::Vector { leaves, .. } = &p.kind else {
            return Err(Failure::user(format!(
                "--input {name}: parameter `{name}` is not a vector ({}); give it as --arg {name}=VALUE",
                p.type_name
            )));
        };
        let expected = lengths
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, l)| *l)
            .or(size);
        let v = super::files::read_npy(std::path::Path::new(file), leaves, expected).map_err(
            |(why, io)| {
                let message = format!(
                    "--input {name}={file}: {why} (parameter `{name}` : {})",
                    p.type_name
                );
                // docs/cli.md: an I/O error on a file named on the command line exits 2 (issue 17).
                if io {
                    Failure::io(message)
                } else {
                    Failure::user(message)
                }
            },
        )?;
        size.get_or_insert(v.len);
        vectors.push((name.to_string(), v));
    }
    let size = size.unwrap_or(harness::DEFAULT_SIZE);
    // Issue 17: refuse a --size or --len past int32 or past memory before allocating anything.
    let given: Vec<(&str, u64)> = (lengths.iter())
        .map(|(name, len)| (name.as_str(), *len as u64))
        .collect();
    sarek_runtime::limits::check_size(kernel, size as u64, &given, command)
        .map_err(Failure::user)?;
    let dims = |flag: &str, s: &Option<String>| {
        s.as_deref()
            .map(harness::parse_dims)
            .transpose()
            .map_err(|e| Failure::user(format!("--{flag}: {e}")))
    };
    let config = harness::launch_config(
        size,
        dims("grid", &input.grid)?,
        dims("block", &input.block)?,
    );
    let inputs = Inputs {
        size,
        seed: input.seed,
        args,
        vectors,
        lengths,
        arg_hint: "--arg ",
    };
    let args = harness::build_args(kernel, &inputs).map_err(|e| Failure::user(e.to_string()))?;
    Ok(Prepared { args, config, size })
}

/// A runtime error as the CLI prints it (faults located in the source).
pub fn runtime_failure(program: &Program, e: &sarek::RuntimeError) -> Failure {
    Failure::rendered(1, program.render_runtime_error(e, color()))
}

pub fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn show(l: Literal) -> String {
    match l {
        Literal::Bool(b) => b.to_string(),
        Literal::I32(v) => v.to_string(),
        Literal::I64(v) => v.to_string(),
        Literal::F32(v) => format!("{v}"),
        Literal::F64(v) => format!("{v}"),
    }
}

/// The first `n` elements of a vector, records as `{x: 1, y: 2}`.
pub fn preview(leaves: &[Leaf], v: &HostVector, n: usize) -> String {
    let elems: Vec<String> = (0..v.len.min(n))
        .map(|i| match leaves {
            [l] if l.name.is_empty() => show(v.columns[0].get(i)),
            _ => {
                let fields: Vec<String> = leaves
                    .iter()
                    .zip(&v.columns)
                    .map(|(l, c)| format!("{}: {}", l.name, show(c.get(i))))
                    .collect();
                format!("{{{}}}", fields.join(", "))
            }
        })
        .collect();
    let more = if v.len > n { ", ..." } else { "" };
    format!("[{}{more}]", elems.join(", "))
}

/// On `cpu`, say when the kernel runs on the interpreter core instead of as native code.
fn cpu_note(backend: sarek::Backend, kernel: &Kernel, label: &str) {
    if backend == sarek::Backend::Cpu
        && let Some(why) = sarek_runtime::cpu::native_note(kernel)
    {
        println!("{label}ran on the interpreter core: {why}");
    }
}

pub fn run(a: RunArgs) -> CmdResult {
    let program = load(&a.file, &a.modules)?;
    let name = kernel_name(&program, &a.kernel)?;
    let kernel = contracted(lower(&program, &name)?, a.fma);
    let device = open_device(a.backend.as_deref())?;
    let residence = Residence::of(device.as_ref(), &kernel);
    let mut prepared = prepare(&kernel, &a.input, Command::Run(residence))?;
    let info = device.info();
    if let Some(dir) = &a.out {
        // Fail before running, but create the folder only after a successful run.
        super::files::check_out_dir(dir)?;
    }
    let stats = sarek_runtime::launch::run_checked(
        device.as_ref(),
        &kernel,
        prepared.config,
        &mut prepared.args,
        !a.unchecked,
    )
    .map_err(|e| runtime_failure(&program, &e))?;
    let c = prepared.config;
    println!("device:  {} ({})", info.backend, info.name);
    cpu_note(info.backend, &kernel, "note:    ");
    println!(
        "kernel:  {name}, grid {}x{}x{}, block {}x{}x{}",
        c.grid[0], c.grid[1], c.grid[2], c.block[0], c.block[1], c.block[2]
    );
    println!(
        "time:    {} kernel, {} total",
        ms(stats.kernel_time),
        ms(stats.total_time)
    );
    if let Some(dir) = &a.out {
        super::files::create_out_dir(dir)?;
    }
    let sig = harness::signature(&kernel);
    let width = sig.iter().map(|p| p.name.len()).max().unwrap_or(0);
    let mut written = 0;
    for (p, arg) in sig.iter().zip(&prepared.args) {
        if let (ParamKind::Vector { leaves, .. }, ArgValue::Vector(v)) = (&p.kind, arg) {
            println!(
                "{:<width$}  {}[{}] {}",
                p.name,
                p.type_name.trim_end_matches(" vector"),
                v.len,
                preview(leaves, v, 6)
            );
            if let Some(dir) = &a.out {
                let path = dir.join(format!("{}.npy", p.name));
                super::files::write_atomically(&path, &npy::to_bytes(leaves, v))?;
                written += 1;
            }
        }
    }
    if let Some(dir) = &a.out {
        if written == 0 {
            // The pattern below would name files that do not exist.
            println!("wrote:   nothing (the kernel has no vector parameter)");
        } else {
            println!("wrote:   {}", dir.join("<param>.npy").display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn bench(a: BenchArgs) -> CmdResult {
    use sarek_runtime::bind::BindArg;
    use sarek_runtime::launch;
    use std::time::Instant;
    if a.reps == 0 {
        return Err(Failure::user("--reps must be at least 1"));
    }
    let program = load(&a.file, &a.modules)?;
    let name = kernel_name(&program, &a.kernel)?;
    let kernel = contracted(lower(&program, &name)?, a.fma);
    let device = open_device(a.backend.as_deref())?;
    let residence = Residence::of(device.as_ref(), &kernel);
    let prepared = prepare(&kernel, &a.input, Command::Run(residence))?;
    let info = device.info();
    let fail = |e: sarek::RuntimeError| runtime_failure(&program, &e);
    // Issue 17: `--checked` times the kernel with checked mode's checks.
    let timed = if a.checked {
        sarek_compiler::passes::checked::insert_checks(&kernel)
    } else {
        kernel.clone()
    };
    let handle = sarek_runtime::KernelHandle::new(timed);
    let built_at = Instant::now();
    let built = launch::build_for(device.as_ref(), &handle, prepared.config).map_err(fail)?;
    let build_time = built_at.elapsed();
    launch::check_args(&kernel, &prepared.args).map_err(fail)?;
    // Upload once.
    let uploaded_at = Instant::now();
    let mut buffers = Vec::new();
    for (param, arg) in built.abi.params.iter().zip(&prepared.args) {
        buffers.push(match (&param.kind, arg) {
            (sarek_compiler::abi::AbiParamKind::Vector { elem, .. }, ArgValue::Vector(v)) => Some(
                sarek::DeviceVector::from_host(device.as_ref(), v, elem.clone(), &param.name)
                    .map_err(fail)?,
            ),
            _ => None,
        });
    }
    launch::synchronize(device.as_ref()).map_err(fail)?;
    let upload_time = uploaded_at.elapsed();
    let uploaded: u64 = buffers.iter().flatten().map(|b| b.byte_len() as u64).sum();
    // What one launch moves in device memory, from the kernel's own accesses: a vector it
    // reads counts once in, one it writes once out, one it does both twice.
    let uses = handle.uses();
    let traffic: u64 = buffers
        .iter()
        .zip(uses)
        .filter_map(|(b, u)| {
            let b = b.as_ref()?.byte_len() as u64;
            Some(b * (u64::from(u.reads) + u64::from(u.writes)))
        })
        .sum();
    let written: Vec<&sarek::DeviceVector> = buffers
        .iter()
        .zip(uses)
        .filter_map(|(b, u)| b.as_ref().filter(|_| u.writes))
        .collect();
    let downloaded: u64 = written.iter().map(|b| b.byte_len() as u64).sum();
    let args: Vec<BindArg<'_>> = prepared
        .args
        .iter()
        .zip(&buffers)
        .map(|(a, b)| match (a, b) {
            (_, Some(b)) => BindArg::Vector(b),
            (ArgValue::Scalar(l), _) => BindArg::Scalar(*l),
            (ArgValue::Aggregate(ls), _) => BindArg::Aggregate(ls),
            (ArgValue::Vector(_), None) => unreachable!("vectors have buffers"),
        })
        .collect();
    let config = prepared.config;
    let go = |timed: bool| launch::enqueue_built(device.as_ref(), &built, config, &args, timed);
    for _ in 0..a.warmup {
        go(false).map_err(fail)?;
    }
    launch::synchronize(device.as_ref()).map_err(fail)?;
    // Kernel time: each launch timed by the device.
    let mut times = Vec::new();
    for _ in 0..a.reps {
        go(true).map_err(fail)?;
        times.push(launch::synchronize(device.as_ref()).map_err(fail)?);
    }
    // Host time: back-to-back launches, one synchronisation at the end.
    let started = Instant::now();
    for _ in 0..a.reps {
        go(false).map_err(fail)?;
    }
    let enqueued = started.elapsed();
    launch::synchronize(device.as_ref()).map_err(fail)?;
    let back_to_back = started.elapsed();
    // Download once what the kernel writes.
    let downloaded_at = Instant::now();
    for b in &written {
        b.to_host(device.as_ref()).map_err(fail)?;
    }
    let download_time = downloaded_at.elapsed();

    times.sort();
    let median = if times.len() % 2 == 1 {
        times[times.len() / 2]
    } else {
        (times[times.len() / 2 - 1] + times[times.len() / 2]) / 2
    };
    let reps = f64::from(a.reps);
    let per = |d: Duration| d.as_secs_f64() / reps;
    let gbps = |bytes: u64, d: Duration| bytes as f64 / d.as_secs_f64().max(1e-12) / 1e9;
    let c = config;
    println!("device:     {} ({})", info.backend, info.name);
    cpu_note(info.backend, &kernel, "note:       ");
    println!(
        "kernel:     {name}, grid {}x{}x{}, block {}x{}x{}, size {}; {} warm-up + {} timed + {} back-to-back launches on resident buffers",
        c.grid[0],
        c.grid[1],
        c.grid[2],
        c.block[0],
        c.block[1],
        c.block[2],
        prepared.size,
        a.warmup,
        a.reps,
        a.reps
    );
    println!("build:      {}", ms(build_time));
    println!(
        "upload:     {} ({uploaded} bytes, {:.3} GB/s), once",
        ms(upload_time),
        gbps(uploaded, upload_time)
    );
    println!(
        "kernel:     median {}, min {} (device timer)",
        ms(median),
        ms(times[0])
    );
    println!(
        "host:       {:.2} us per launch enqueued, {:.2} us per launch back to back with the final sync",
        per(enqueued) * 1e6,
        per(back_to_back) * 1e6
    );
    println!(
        "bandwidth:  {:.3} GB/s ({traffic} bytes per launch: vectors read counted once in, written once out / median kernel time), {:.2} Melem/s",
        gbps(traffic, median),
        prepared.size as f64 / median.as_secs_f64().max(1e-12) / 1e6
    );
    println!(
        "download:   {} ({downloaded} bytes of the {} vectors the kernel writes, {:.3} GB/s), once",
        ms(download_time),
        written.len(),
        gbps(downloaded, download_time)
    );
    Ok(ExitCode::SUCCESS)
}
