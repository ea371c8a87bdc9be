//! Hostile command lines and inputs through the built `sarek` binary: every one is a clear
//! message and the contract's exit code (docs/cli.md), never a panic, a hang or an
//! allocation failure.

use sarek_compiler::abi::Leaf;
use sarek_compiler::types::Scalar;
use sarek_runtime::npy;
use sarek_runtime::value::{Column, HostVector};
use std::path::{Path, PathBuf};

use crate::cli_args::{Out, sarek};

impl Out {
    /// Exit `code`, every needle in stderr, no panic or backtrace.
    fn fails(&self, code: i32, needles: &[&str]) -> &Out {
        assert_eq!(
            self.code, code,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        for n in needles {
            assert!(self.stderr.contains(n), "`{n}` not in: {}", self.stderr);
        }
        for bad in ["panicked", "stack backtrace", "internal error"] {
            assert!(!self.stderr.contains(bad), "{}", self.stderr);
        }
        self
    }
}

fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sarek-hostile-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

const SAXPY: &str = "let%kernel saxpy (a : float32) (x : float32 vector) (y : float32 vector) (n : int32) =\n\
                     \x20 let i = global_thread_id in\n\
                     \x20 if i < n then y.(i) <- a *. x.(i) +. y.(i)\n";

#[test]
fn shared_and_local_arrays_past_the_host_limits_are_refused_located() {
    let d = scratch("host-arrays");
    // 4 GiB of shared memory ran for 31 s on cpu; a 1 GiB per-thread array aborted the
    // process on a 64 GiB allocation.
    let shared = write(
        &d,
        "shared.sarek",
        "let%kernel k (o : float32 vector) =\n\
         \x20 let%shared (s : float32) = 1073741824 in\n\
         \x20 s.(thread_idx_x) <- 1.0;\n\
         \x20 block_barrier ();\n\
         \x20 o.(thread_idx_x) <- s.(0)\n",
    );
    let local = write(
        &d,
        "local.sarek",
        "let%kernel k (o : float32 vector) =\n\
         \x20 let loc = create_array 268435456 Local in\n\
         \x20 loc.(0) <- 1.0;\n\
         \x20 o.(global_thread_id) <- loc.(0)\n",
    );
    for backend in ["interp", "cpu"] {
        let r = sarek(&[
            "run",
            &shared,
            "--kernel",
            "k",
            "--backend",
            backend,
            "--size",
            "4",
        ]);
        r.fails(
            1,
            &[
                "declares 4294967296 bytes of shared arrays",
                &format!("({backend}) allows at most 16777216"),
                "shared.sarek:2:15",
            ],
        );
        let r = sarek(&[
            "run",
            &local,
            "--kernel",
            "k",
            "--backend",
            backend,
            "--size",
            "64",
        ]);
        r.fails(
            1,
            &[
                "per-thread array of 1073741824 bytes",
                "allows at most 524288",
                "local.sarek:2:7",
            ],
        );
        assert!(!r.stdout.contains("device:"), "nothing ran: {}", r.stdout);
    }
    // Within the per-thread limit, but 512 KiB for each of 1024 threads is past the block's.
    let big_block = write(
        &d,
        "block.sarek",
        "let%kernel k (o : float32 vector) =\n\
         \x20 let loc = create_array 131072 Local in\n\
         \x20 loc.(0) <- 1.0;\n\
         \x20 o.(global_thread_id) <- loc.(0)\n",
    );
    let r = sarek(&[
        "run",
        &big_block,
        "--kernel",
        "k",
        "--backend",
        "cpu",
        "--size",
        "1024",
        "--block",
        "1024",
    ]);
    r.fails(
        1,
        &[
            "a block of 1024 threads needs 536870912 bytes",
            "at most 268435456",
        ],
    );
}

#[test]
fn grids_past_the_host_thread_limits_are_refused_before_running() {
    let d = scratch("host-grid");
    let file = write(&d, "saxpy.sarek", SAXPY);
    let base = [
        "run", &file, "--kernel", "saxpy", "--arg", "a=2", "--arg", "n=10",
    ];
    for backend in ["interp", "cpu"] {
        // 2^56 threads ran without end.
        let mut args = base.to_vec();
        args.extend(["--backend", backend, "--grid", "65536,65536,65536"]);
        sarek(&args).fails(1, &["72057594037927936 threads", "at most 4294967295"]);
        let mut args = base.to_vec();
        args.extend(["--backend", backend, "--grid", "2147483647", "--block", "2"]);
        sarek(&args).fails(1, &["threads along x", "global thread indices are int32"]);
    }
    let mut args = vec![
        "bench", &file, "--kernel", "saxpy", "--arg", "a=2", "--arg", "n=10",
    ];
    args.extend(["--backend", "cpu", "--grid", "65536,65536,65536"]);
    sarek(&args).fails(1, &["threads per launch"]);
}

#[test]
fn check_reports_an_unreadable_file_once() {
    let d = scratch("check-once");
    let good = write(&d, "good.sarek", SAXPY);
    let missing = d.join("missing.sarek").display().to_string();
    let r = sarek(&["check", &good, &missing, d.to_str().unwrap()]);
    r.fails(2, &["No such file or directory", "Is a directory"]);
    assert_eq!(
        r.stderr.matches("missing.sarek").count(),
        1,
        "reported once: {}",
        r.stderr
    );
}

fn int_leaf() -> Vec<Leaf> {
    vec![Leaf {
        name: String::new(),
        scalar: Scalar::I32,
    }]
}

/// `n` chained `let`s, each adding 1, and an `n`-term sum of the element.
fn chain_kernels(n: usize) -> (String, String) {
    let head = "let%kernel k (a : int32 vector) =\n  let i = global_thread_id in\n";
    let mut lets = format!("{head}  let x0 = a.(i) in\n");
    for j in 1..n {
        lets += &format!("  let x{j} = x{} + 1 in\n", j - 1);
    }
    lets += &format!("  a.(i) <- x{}\n", n - 1);
    let sum = format!(
        "{head}  let x = a.(i) in\n  a.(i) <- x{}\n",
        " + x".repeat(n - 1)
    );
    (lets, sum)
}

/// Generated and unrolled kernels have thousands of `let`s or terms in a row: 10,000 run on
/// interp, 1,000 on cpu (whose code generator takes a few milliseconds a `let` in a debug
/// build), with the values computed here: `a + (n - 1)` and `a * n`.
#[test]
fn long_chains_run_on_the_host_backends() {
    let d = scratch("chains");
    let input: Vec<i32> = (0..64).map(|i| i * 3 - 50).collect();
    let npy_in = d.join("a.npy");
    let v = HostVector {
        len: input.len(),
        columns: vec![Column::I32(input.clone())],
    };
    npy::write_vector(&npy_in, &int_leaf(), &v).unwrap();
    for (backend, n) in [("interp", 10_000usize), ("cpu", 1_000)] {
        let (lets, sum) = chain_kernels(n);
        for (label, text, expect) in [
            (
                "lets",
                lets,
                Box::new(|a: i32| a + (n as i32 - 1)) as Box<dyn Fn(i32) -> i32>,
            ),
            ("sum", sum, Box::new(|a: i32| a.wrapping_mul(n as i32))),
        ] {
            let file = write(&d, &format!("{label}_{n}.sarek"), &text);
            let out = d.join(format!("out_{label}_{backend}"));
            let r = sarek(&[
                "run",
                &file,
                "--kernel",
                "k",
                "--backend",
                backend,
                "--input",
                &format!("a={}", npy_in.display()),
                "--out",
                out.to_str().unwrap(),
            ]);
            assert_eq!(
                r.code, 0,
                "{label} on {backend}: {}\n{}",
                r.stdout, r.stderr
            );
            let got = npy::read_vector(&out.join("a.npy"), &int_leaf(), Some(64)).unwrap();
            let Column::I32(got) = &got.columns[0] else {
                panic!("an int32 column")
            };
            let want: Vec<i32> = input.iter().map(|&a| expect(a)).collect();
            assert_eq!(got, &want, "{label} ({n}) on {backend}");
        }
    }
}

/// A version-1 `.npy` file with header `dict` (padded as NumPy pads it) and `data`.
fn npy_file(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut header = dict.to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    bytes
}

/// Hostile `.npy` inputs for a float32 vector: each a clear error naming the parameter, exit
/// 1 (2 for a file that cannot be read), never a panic or an allocation of the declared size.
#[test]
fn hostile_npy_inputs_are_clear_errors() {
    let d = scratch("npy");
    let file = write(&d, "saxpy.sarek", SAXPY);
    let f32s: Vec<u8> = (0..16).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let dict = |descr: &str, fortran: &str, shape: &str| {
        format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}")
    };
    let good = npy_file(&dict("<f4", "False", "(16,)"), &f32s);
    let cases: Vec<(&str, Vec<u8>, i32, &str)> = vec![
        (
            "f8",
            npy_file(&dict("<f8", "False", "(8,)"), &f32s),
            1,
            "dtype '<f8' does not fit the expected '<f4'",
        ),
        (
            "big_endian",
            npy_file(&dict(">f4", "False", "(16,)"), &f32s),
            1,
            "unsupported dtype '>f4'",
        ),
        (
            "fortran",
            npy_file(&dict("<f4", "True", "(4, 4)"), &f32s),
            1,
            "Fortran order is not supported",
        ),
        (
            "two_d",
            npy_file(&dict("<f4", "False", "(4, 4)"), &f32s),
            1,
            "shape (4, 4) is not 1-D",
        ),
        (
            "zero_d",
            npy_file(&dict("<f4", "False", "()"), &f32s[..4]),
            1,
            "shape () is not 1-D",
        ),
        (
            "object",
            npy_file(&dict("|O", "False", "(2,)"), &f32s[..16]),
            1,
            "unsupported dtype '|O'",
        ),
        (
            "negative",
            npy_file(&dict("<f4", "False", "(-4,)"), &f32s),
            1,
            "negative length",
        ),
        (
            "truncated",
            good[..good.len() - 10].to_vec(),
            1,
            "the header promises 16 elements of 4 bytes",
        ),
        ("header_cut", good[..20].to_vec(), 1, "truncated header"),
        (
            "corrupt",
            [&good[..10], b"{garbage".as_slice(), &good[18..]].concat(),
            1,
            "header:",
        ),
        // A terabyte declared: refused from the file's size, nothing allocated.
        (
            "huge",
            npy_file(&dict("<f4", "False", "(1000000000000,)"), &[]),
            1,
            "promises 1000000000000 elements",
        ),
        (
            "overflow",
            npy_file(&dict("<f4", "False", "(18446744073709551615,)"), &[]),
            1,
            "bad integer",
        ),
        (
            "not_npy",
            b"just text".to_vec(),
            1,
            "missing the \\x93NUMPY magic",
        ),
        ("empty_file", Vec::new(), 1, "not a supported .npy file"),
    ];
    for (label, bytes, code, needle) in cases {
        let path = d.join(format!("{label}.npy"));
        std::fs::write(&path, bytes).unwrap();
        let input = format!("x={}", path.display());
        let r = sarek(&[
            "run",
            &file,
            "--kernel",
            "saxpy",
            "--backend",
            "interp",
            "--arg",
            "a=2",
            "--arg",
            "n=16",
            "--input",
            &input,
        ]);
        r.fails(code, &[needle, "parameter `x` : float32 vector"]);
        assert!(!r.stdout.contains("device:"), "{label}: nothing ran");
    }
    // A directory and a missing file: I/O errors, exit 2.
    let missing = format!("x={}", d.join("missing.npy").display());
    let dir = format!("x={}", d.display());
    for input in [missing, dir] {
        let r = sarek(&[
            "run",
            &file,
            "--kernel",
            "saxpy",
            "--backend",
            "interp",
            "--arg",
            "a=2",
            "--arg",
            "n=16",
            "--input",
            &input,
        ]);
        r.fails(2, &["parameter `x`"]);
    }
    // The same vector or length twice, and a length mismatch.
    let good_path = d.join("good.npy");
    std::fs::write(&good_path, &good).unwrap();
    let input = format!("x={}", good_path.display());
    let base = [
        "run",
        &file,
        "--kernel",
        "saxpy",
        "--backend",
        "interp",
        "--arg",
        "a=2",
        "--arg",
        "n=16",
    ];
    let with = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        sarek(&args)
    };
    with(&["--input", &input, "--input", &input]).fails(1, &["parameter `x` is given twice"]);
    with(&["--len", "x=3", "--len", "x=4"]).fails(1, &["the length of `x` is given twice"]);
    // H9: `--len` is held to --size's limits before anything is allocated (it tried to
    // allocate 12 GB here, and aborted).
    with(&["--len", "x=3000000000"]).fails(
        1,
        &["--len x=3000000000: vectors have at most 2147483647 elements"],
    );
    with(&["--len", "x=99999999999999999999"]).fails(1, &["is not a length"]);
    with(&["--input", &input, "--size", "8"])
        .fails(1, &["length 16 does not fit the expected length 8"]);
}

/// `--out` in a folder where nothing can be created fails before the kernel runs (exit 2),
/// not after; nothing is left behind in a writable one when the run fails.
#[cfg(target_os = "linux")]
#[test]
fn out_in_an_unwritable_folder_fails_before_running() {
    let d = scratch("out");
    let file = write(&d, "saxpy.sarek", SAXPY);
    let r = sarek(&[
        "run",
        &file,
        "--kernel",
        "saxpy",
        "--backend",
        "interp",
        "--arg",
        "a=2",
        "--arg",
        "n=10",
        "--out",
        "/proc/sarek-out",
    ]);
    r.fails(2, &["--out `/proc/sarek-out`: cannot write in `/proc`"]);
    assert!(!r.stdout.contains("device:"), "nothing ran: {}", r.stdout);
    let before: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
    let out = d.join("new/out");
    let r = sarek(&[
        "run",
        &file,
        "--kernel",
        "saxpy",
        "--backend",
        "interp",
        "--arg",
        "a=2",
        "--arg",
        "n=10",
        "--size",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    r.fails(1, &["out-of-bounds read of `x`"]);
    let after: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
    assert_eq!(before.len(), after.len(), "no folder or probe file left");
}

/// `compile --block` sizes block-sized shared arrays: a block no target can launch (more
/// than 1,024 threads, or u32::MAX, the IR's marker for "the block's size") is an error.
#[test]
fn compile_refuses_blocks_no_target_runs() {
    let d = scratch("compile-block");
    let file = write(
        &d,
        "bs.sarek",
        "let%kernel k (o : float32 vector) =\n\
         \x20 let%shared (s : float32) = () in\n\
         \x20 s.(thread_idx_x) <- 1.0;\n\
         \x20 block_barrier ();\n\
         \x20 o.(thread_idx_x) <- s.(0)\n",
    );
    for block in ["100000", "65536,65536,65536", "4294967295", "1024,2"] {
        let r = sarek(&["compile", &file, "--target", "cuda", "--block", block]);
        r.fails(1, &["no target runs more than 1024 per block"]);
    }
    for block in ["0", "-1", "1,2,3,4", "x"] {
        assert_eq!(
            sarek(&["compile", &file, "--target", "cuda", "--block", block]).code,
            2,
            "{block}"
        );
    }
    let r = sarek(&["compile", &file, "--target", "cuda", "--block", "32,32"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// `-o` onto something that is not a regular file: a FIFO is written in place (renaming a
/// temporary file over it would replace the node itself; as root, `-o /dev/null` left a
/// regular file in /dev), and a symbolic link keeps pointing at the file it names, which gets
/// the output.
#[cfg(unix)]
#[test]
fn output_onto_a_pipe_or_a_link_writes_through_it() {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let d = scratch("special-out");
    let file = write(&d, "saxpy.sarek", SAXPY);
    let fifo = d.join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        // The reader opens first, without blocking, so that the writer never waits.
        let mut reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap();
        let out = sarek(&[
            "compile",
            &file,
            "--target",
            "wgsl",
            "-o",
            &fifo.display().to_string(),
        ]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let mut text = String::new();
        reader.read_to_string(&mut text).unwrap();
        assert!(text.contains("@compute"), "{text}");
        let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(kind.is_fifo(), "the FIFO was replaced: {kind:?}");
    } else {
        eprintln!("skipping the FIFO: no mkfifo");
    }
    let real = d.join("real.wgsl");
    std::fs::write(&real, "old").unwrap();
    let link = d.join("link.wgsl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = sarek(&[
        "compile",
        &file,
        "--target",
        "wgsl",
        "-o",
        &link.display().to_string(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(std::fs::read_to_string(&real).unwrap().contains("@compute"));
    let leftovers: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// `bench` and `devices` with hostile arguments and unavailable devices: the contract's exit
/// codes (2 for usage errors, 1 for the rest), one clear message each.
#[test]
fn bench_and_devices_refuse_hostile_arguments() {
    let d = scratch("bench-args");
    let file = write(&d, "saxpy.sarek", SAXPY);
    let spin = write(
        &d,
        "spin.sarek",
        "let%kernel spin (v : int32 vector) =\n  let mut x = 0 in\n  while true do x := x + 1 done;\n  v.(0) <- x\n",
    );
    sarek(&["devices", "extra"]).fails(2, &["unexpected argument 'extra'"]);
    sarek(&["devices", "--backend", "cpu"]).fails(2, &["unexpected argument '--backend'"]);
    let bench = |extra: &[&str]| {
        let mut args = vec![
            "bench", &file, "--kernel", "saxpy", "--arg", "a=2", "--arg", "n=16", "--size", "16",
        ];
        args.extend_from_slice(extra);
        sarek(&args)
    };
    bench(&["--reps", "0"]).fails(1, &["--reps must be at least 1"]);
    bench(&["--reps", "99999999999"]).fails(2, &["--reps"]);
    bench(&["--warmup", "-1"]).fails(2, &["-1"]);
    bench(&["--timeout", "nan"]).fails(2, &["not a positive number of seconds"]);
    bench(&["--backend", "bogus"]).fails(1, &["unknown backend `bogus`"]);
    bench(&["--backend", "hip"]).fails(1, &["backend `hip` is not available"]);
    bench(&[
        "--block",
        "4294967295,4294967295,4294967295",
        "--backend",
        "cpu",
    ])
    .fails(1, &["more than the 1024 allowed per block"]);
    bench(&[
        "--grid",
        "4294967295,4294967295,4294967295",
        "--backend",
        "interp",
    ])
    .fails(1, &["threads along x: global thread indices are int32"]);
    bench(&["--grid", "65536,65536", "--backend", "opencl"]).fails(1, &[]);
    sarek(&[
        "bench",
        &file,
        "--kernel",
        "saxpy",
        "--arg",
        "a=2",
        "--arg",
        "n=16",
        "--size",
        "99999999999",
    ])
    .fails(1, &["vectors have at most 2147483647"]);
    // An unavailable CUDA (no driver here) is exit 1 with the reason; on an NVIDIA machine
    // the same command benches.
    let cuda = bench(&["--backend", "cuda", "--reps", "1"]);
    if cuda.code != 0 {
        cuda.fails(1, &["backend `cuda` is unavailable"]);
    }
    // A kernel that never ends, stopped by --timeout.
    sarek(&[
        "bench",
        &spin,
        "--kernel",
        "spin",
        "--backend",
        "cpu",
        "--size",
        "1",
        "--timeout",
        "1",
    ])
    .fails(1, &["did not finish within --timeout 1 s"]);
    // `devices` names a SAREK_BACKEND it cannot open, and still lists everything.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_sarek"))
        .arg("devices")
        .env("SAREK_BACKEND", "nope")
        .output()
        .unwrap();
    assert!(o.status.success());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("default: none (SAREK_BACKEND: unknown backend `nope`"),
        "{stdout}"
    );
    if !stdout
        .lines()
        .any(|l| l.starts_with("cuda ") && l.contains(" available "))
    {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_sarek"))
            .arg("devices")
            .env("SAREK_BACKEND", "cuda")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            stdout.contains("default: cuda (from SAREK_BACKEND), unavailable: "),
            "{stdout}"
        );
    }
}

/// A 100,000-character source line is shown as a window around the error (a 200 KB message
/// before), and control characters in a source never reach the terminal.
#[test]
fn long_lines_and_control_characters_show_briefly_and_inert() {
    let d = scratch("long-line");
    let name = "x".repeat(100_000);
    let long = write(
        &d,
        "long.sarek",
        &format!("let%kernel k (o : int32 vector) =\n  o.(0) <- {name}zz + 1\n"),
    );
    let r = sarek(&["check", &long]);
    r.fails(1, &["long.sarek:2:12", "…", "not found in this scope"]);
    assert!(r.stderr.len() < 2_000, "{} bytes", r.stderr.len());
    let esc = write(
        &d,
        "esc.sarek",
        "let%kernel k (v : int32 vector) =\r\n  v.(0) <- \x1b[2J\x07 1\r\n",
    );
    let r = sarek(&["check", &esc]);
    r.fails(1, &["esc.sarek:2:12", "? 1"]);
    assert!(
        !r.stderr.chars().any(|c| c.is_control() && c != '\n'),
        "{:?}",
        r.stderr
    );
    // Old Mac line endings: a lone `\r` breaks lines in the location and the snippet.
    let mac = write(
        &d,
        "mac.sarek",
        "let%kernel k (v : int32 vector) =\r  let a = 1 in\r  v.(0) <- a + zz\r",
    );
    let r = sarek(&["check", &mac]);
    r.fails(1, &["mac.sarek:3:16", "3 │   v.(0) <- a + zz\n"]);
}

/// A file of 20,000 kernels: messages listing them name a few and count the rest.
#[test]
fn messages_listing_kernels_stay_short() {
    let d = scratch("many-kernels");
    let text: String = (0..20_000)
        .map(|i| format!("let%kernel k{i} (v : int32 vector) = v.(0) <- {i}\n"))
        .collect();
    let file = write(&d, "many.sarek", &text);
    for (args, needle) in [
        (
            vec!["verify", &file, "--backends", "interp"],
            "choose one with --kernel",
        ),
        (vec!["run", &file, "--kernel", "zz"], "no kernel `zz`"),
        (
            vec![
                "compile",
                &file,
                "--target",
                "ir",
                "-o",
                "/tmp/sarek-not-a-dir.ir",
            ],
            "give `--kernel K`",
        ),
    ] {
        let r = sarek(&args);
        r.fails(1, &[needle, "k11 and 19988 more"]);
        assert!(r.stderr.len() < 1_000, "{}", r.stderr);
    }
}

/// A `.npy` header naming a key twice: Python keeps the last, so NumPy reads another dtype or
/// shape than the first one this reader used to take (a float32 file read as int32 data).
#[test]
fn npy_headers_repeating_a_key_are_refused() {
    let d = scratch("npy-dup");
    let file = write(&d, "saxpy.sarek", SAXPY);
    let data = [0u8; 16];
    for (label, dict, key) in [
        (
            "descr",
            "{'descr': '<f4', 'descr': '<i4', 'fortran_order': False, 'shape': (4,), }",
            "descr",
        ),
        (
            "shape",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'shape': (400,), }",
            "shape",
        ),
    ] {
        let path = d.join(format!("{label}.npy"));
        std::fs::write(&path, npy_file(dict, &data)).unwrap();
        let input = format!("x={}", path.display());
        sarek(&[
            "run",
            &file,
            "--kernel",
            "saxpy",
            "--backend",
            "interp",
            "--arg",
            "a=2",
            "--arg",
            "n=4",
            "--size",
            "4",
            "--input",
            &input,
        ])
        .fails(1, &[&format!("key '{key}' appears twice"), "parameter `x`"]);
    }
}

/// `--atol nan` compared false everywhere and a negative one never held, silently leaving
/// `--ulps` alone to decide: both are usage errors.
#[test]
fn verify_refuses_a_nan_or_negative_atol() {
    let d = scratch("atol");
    let file = write(&d, "saxpy.sarek", SAXPY);
    for atol in ["--atol=nan", "--atol=-1", "--atol=x"] {
        sarek(&[
            "verify",
            &file,
            "--backends",
            "interp",
            "--arg",
            "a=2",
            "--arg",
            "n=4",
            atol,
        ])
        .fails(2, &["is not a non-negative number"]);
    }
}

/// A `@run` directive's `size` is held to the limits `--size` has: `size=3000000000` went
/// straight to the allocation (12 GB per vector: an abort with a backtrace, or the machine's
/// memory) where `--size 3000000000` is a clear error.
#[test]
fn directive_sizes_are_checked_before_allocating() {
    let d = scratch("directive-size");
    let text = format!("(* @run saxpy size=3000000000 a=1 n=8 *)\n{SAXPY}");
    let file = write(&d, "big.sarek", &text);
    sarek(&["verify", &file, "--backends", "cpu"]).fails(
        1,
        &[
            "big.sarek: line 1",
            "vectors have at most 2147483647 elements",
        ],
    );
    // Within int32 but past any machine's memory (8 vectors of 32-byte elements: 550 GB).
    let params: String = (0..8)
        .map(|i| format!(" (v{i} : (float64 * float64 * float64 * float64) vector)"))
        .collect();
    let text = format!("(* @run k size=2147483647 *)\nlet%kernel k{params} = v0.(0) <- v1.(0)\n");
    let file = write(&d, "huge.sarek", &text);
    sarek(&["verify", &file, "--backends", "cpu"]).fails(1, &["huge.sarek:1: @run k"]);
}

/// `--grid`, `--block` and `--len` next to a file's `@run` directives were dropped silently
/// (the directive's launch ran and the table said `ok`); they are an error there, and apply
/// to a launch of the command line's own.
#[test]
fn verify_refuses_launch_flags_its_directives_would_ignore() {
    let d = scratch("directive-flags");
    let file = write(
        &d,
        "dir.sarek",
        &format!("(* @run saxpy size=64 a=1 n=64 *)\n{SAXPY}"),
    );
    for flag in [["--block", "32"], ["--grid", "1"], ["--len", "x=5"]] {
        sarek(&["verify", &file, "--backends", "cpu", flag[0], flag[1]]).fails(
            1,
            &[&format!(
                "{} does not apply to the @run directives",
                flag[0]
            )],
        );
    }
    let own = sarek(&[
        "verify",
        &file,
        "--backends",
        "cpu",
        "--block",
        "32",
        "--size",
        "64",
        "--arg",
        "a=1",
        "--arg",
        "n=64",
    ]);
    assert_eq!(own.code, 0, "{}", own.stderr);
    assert!(own.stdout.contains("block 32x1x1"), "{}", own.stdout);
}

/// An empty entry in `--backends` (`cpu,,interp`, a leading or trailing comma) was skipped,
/// silently running one backend less than a typo meant; it is an error, as in
/// `fuse --kernels`. A two-kernel file's `-o FILE` message says "an IR file".
#[test]
fn verify_refuses_an_empty_backend_entry() {
    let d = scratch("empty-backend");
    let file = write(&d, "saxpy.sarek", SAXPY);
    for list in ["interp,,cpu", ",interp", "interp,"] {
        sarek(&[
            "verify",
            &file,
            "--backends",
            list,
            "--arg",
            "a=2",
            "--arg",
            "n=4",
        ])
        .fails(1, &["--backends has an empty entry"]);
    }
    let two = write(
        &d,
        "two.sarek",
        &format!("{SAXPY}{}", SAXPY.replace("saxpy", "other")),
    );
    let out = d.join("x.ir").display().to_string();
    sarek(&["compile", &two, "--target", "ir", "-o", &out])
        .fails(1, &["and an IR file holds one module"]);
}

/// The trap status word of a checked launch is a storage buffer too: a kernel with as many
/// vectors as the device binds ran into a pipeline validation error ("wgpu rejected the
/// generated WGSL", a Sarek bug) where it must be refused, located. Whatever the device's
/// limit, each vector count either runs or is refused naming the storage buffers.
#[test]
fn vectors_up_to_the_devices_storage_buffer_limit_run_or_are_refused() {
    let d = scratch("buffers");
    for n in [8usize, 16, 31, 32, 64] {
        let params: Vec<String> = (0..n).map(|j| format!("(v{j} : int32 vector)")).collect();
        let reads: Vec<String> = (1..n).map(|j| format!("v{j}.(0)")).collect();
        let file = write(
            &d,
            &format!("v{n}.sarek"),
            &format!(
                "let%kernel k {} =\n  v0.(0) <- {}\n",
                params.join(" "),
                reads.join(" + ")
            ),
        );
        for backend in ["wgpu", "vulkan"] {
            let r = sarek(&[
                "run",
                &file,
                "--kernel",
                "k",
                "--backend",
                backend,
                "--size",
                "4",
            ]);
            if r.code == 0 || r.stderr.contains("is unavailable") {
                continue;
            }
            r.fails(1, &["storage buffers", "this vector is over the limit"]);
            assert!(!r.stderr.contains("rejected"), "{}", r.stderr);
        }
    }
}
