//! The `sarek` command end to end: the built binary on small kernels written here, checking
//! exit codes, messages and the files it writes (read back with the npy module, and checked
//! against values computed here from the inputs it wrote).

use sarek_compiler::abi::Leaf;
use sarek_compiler::types::Scalar;
use sarek_runtime::npy;
use sarek_runtime::value::{Column, HostVector};
use std::path::{Path, PathBuf};
use std::process::Command;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn sarek_env(args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sarek"));
    cmd.args(args)
        .env_remove("SAREK_BACKEND")
        .env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("the sarek binary runs");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn sarek(args: &[&str]) -> Out {
    sarek_env(args, &[])
}

/// `sarek run FILE --kernel KERNEL --backend interp EXTRA...`
fn run_interp(file: &str, kernel: &str, extra: &[&str]) -> Out {
    let mut args = vec!["run", file, "--kernel", kernel, "--backend", "interp"];
    args.extend_from_slice(extra);
    sarek(&args)
}

impl Out {
    /// Exit code 0.
    fn ok(&self) -> &Out {
        assert_eq!(
            self.code, 0,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        self
    }
    /// Exit code `code` with every needle in stderr, and no panic.
    fn fails(&self, code: i32, needles: &[&str]) {
        assert_eq!(
            self.code, code,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        for n in needles {
            assert!(self.stderr.contains(n), "`{n}` not in: {}", self.stderr);
        }
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
    }
}

/// A fresh directory for one test.
fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sarek-cli-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

const SAXPY: &str = "\
(* @run saxpy size=512 a=2.0 n=500 *)
let%kernel saxpy (x : float32 vector) (y : float32 vector) (a : float32) (n : int32) =
  let i = global_thread_id in
  if i < n then y.(i) <- a *. x.(i) +. y.(i)
";

const TWO_KERNELS: &str = "\
let%kernel add (a : int32 vector) (b : int32 vector) (c : int32 vector) =
  let i = global_thread_id in
  if i < length c then c.(i) <- a.(i) + b.(i)

let%kernel scale (v : int32 vector) (k : int32) =
  let i = global_thread_id in
  if i < length v then v.(i) <- v.(i) * k
";

fn f32s(v: &HostVector) -> &[f32] {
    match &v.columns[0] {
        Column::F32(x) => x,
        c => panic!("expected a float32 column, got {:?}", c.scalar()),
    }
}

fn scalar_leaf(s: Scalar) -> Vec<Leaf> {
    vec![Leaf {
        name: String::new(),
        scalar: s,
    }]
}

/// A one-column `.npy` file `dir/name`; its path.
fn write_column(dir: &Path, name: &str, column: Column) -> String {
    let path = dir.join(name);
    let v = HostVector {
        len: column.len(),
        columns: vec![column],
    };
    npy::write_vector(&path, &scalar_leaf(v.columns[0].scalar()), &v).unwrap();
    path.display().to_string()
}

#[test]
fn check_exit_codes() {
    let d = scratch("check");
    let ok = write(&d, "ok.sarek", SAXPY);
    let bad = write(
        &d,
        "bad.sarek",
        "let%kernel k (v : int32 vector) =\n  v.(0) <- undefined_name\n",
    );
    let r = sarek(&["check", &ok]);
    r.ok();
    assert!(
        r.stderr.is_empty(),
        "nothing printed on success: {}",
        r.stderr
    );

    let r = sarek(&["check", &ok, &bad]);
    // Located at the file and line.
    r.fails(1, &["error", &format!("{bad}:2:")]);
    assert!(
        !r.stderr.contains("\x1b["),
        "no colour when stderr is not a terminal"
    );

    let missing = d.join("missing.sarek").display().to_string();
    let r = sarek(&["check", &missing]);
    r.fails(2, &["missing.sarek", "No such file"]);
    assert_eq!(
        r.stderr.trim().lines().count(),
        1,
        "one clear line: {}",
        r.stderr
    );

    // Usage error: no file at all.
    assert_eq!(sarek(&["check"]).code, 2);

    // An error in a module file is found through the program using it and again when the
    // module is checked as its own program: printed once (it was printed twice).
    let lib = write(
        &d,
        "geom_lib.sarek",
        "let helper (x : int32) : int32 = x + undefined_name\n",
    );
    let main = write(
        &d,
        "main.sarek",
        "let%kernel k (o : int32 vector) = o.(0) <- Geom_lib.helper 1\n",
    );
    let r = sarek(&["check", &main, &lib]);
    r.fails(1, &["unknown variable `undefined_name`"]);
    assert_eq!(
        r.stderr.matches("undefined_name`").count(),
        1,
        "{}",
        r.stderr
    );
}

#[test]
fn compile_targets_and_kernels() {
    let d = scratch("compile");
    let two = write(&d, "two.sarek", TWO_KERNELS);
    let r = sarek(&["compile", &two, "--target", "ir", "--kernel", "scale"]);
    r.ok();
    assert!(
        r.stdout.contains("scale") && !r.stdout.contains("kernel add"),
        "{}",
        r.stdout
    );

    // Without --kernel: every kernel, each under a header.
    let r = sarek(&["compile", &two, "--target", "ir"]);
    r.ok();
    let add = r
        .stdout
        .find("// ==== kernel add ====")
        .expect("header for add");
    let scale = r
        .stdout
        .find("// ==== kernel scale ====")
        .expect("header for scale");
    assert!(add < scale);

    let out = d.join("out.ir");
    let r = sarek(&[
        "compile",
        &two,
        "--target",
        "ir",
        "--kernel",
        "add",
        "-o",
        out.to_str().unwrap(),
    ]);
    r.ok();
    assert!(r.stdout.is_empty());
    assert!(std::fs::read_to_string(&out).unwrap().contains("add"));

    // Several kernels and `-o FILE`: refused (one module per file); `-o DIR/`: one file each,
    // which the target's own validator accepts (glslangValidator, when installed).
    let file = d.join("both.glsl");
    sarek(&[
        "compile",
        &two,
        "--target",
        "glsl",
        "-o",
        file.to_str().unwrap(),
    ])
    .fails(1, &["has 2 kernels (add, scale)", "-o DIR/"]);
    assert!(!file.exists());
    let dir = format!("{}/", d.join("modules").display());
    sarek(&["compile", &two, "--target", "glsl", "-o", &dir]).ok();
    for k in ["add", "scale"] {
        let module = d.join("modules").join(format!("{k}.glsl"));
        let text = std::fs::read_to_string(&module).unwrap();
        assert_eq!(text.matches("#version").count(), 1, "{text}");
        match Command::new("glslangValidator")
            .args(["-S", "comp", "--target-env", "vulkan1.1"])
            .arg(&module)
            .output()
        {
            Ok(o) => assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout)),
            Err(e) => eprintln!("skipping glslangValidator ({e})"),
        }
    }

    sarek(&["compile", &two, "--target", "fortran"]).fails(2, &["unknown target `fortran`"]);
    sarek(&["compile", &two, "--target", "ir", "--kernel", "scal"])
        .fails(1, &["no kernel `scal`", "did you mean `scale`?"]);
}

#[test]
fn run_writes_npy_that_matches_the_inputs() {
    let d = scratch("run");
    let file = write(&d, "saxpy.sarek", SAXPY);
    let out = d.join("out");
    let saxpy_args = ["--size", "300", "--arg", "a=2.0", "--arg", "n=250"];
    let r = run_interp(
        &file,
        "saxpy",
        &[&saxpy_args[..], &["--out", out.to_str().unwrap()]].concat(),
    );
    r.ok();
    assert!(
        r.stdout.contains("interp"),
        "summary names the device: {}",
        r.stdout
    );
    assert!(
        r.stdout.contains("grid 2x1x1, block 256x1x1"),
        "default launch: {}",
        r.stdout
    );
    let x = npy::read_vector(&out.join("x.npy"), &scalar_leaf(Scalar::F32), Some(300)).unwrap();
    let y = npy::read_vector(&out.join("y.npy"), &scalar_leaf(Scalar::F32), Some(300)).unwrap();
    // x is an input the kernel does not write: it is the seeded generator's vector.
    assert!(f32s(&x).iter().all(|v| (-1.0..1.0).contains(v)));
    // Recompute y from the seeded inputs: y_out = 2 x + y_in for i < 250, y_in after.
    let mut rng = sarek_harness::Rng::for_param(42, 1);
    let y_in: Vec<f32> = (0..300)
        .map(|_| match rng.scalar(Scalar::F32) {
            sarek_compiler::types::Literal::F32(v) => v,
            _ => unreachable!(),
        })
        .collect();
    for (i, (&yi, &got)) in y_in.iter().zip(f32s(&y)).enumerate() {
        let want = if i < 250 { 2.0 * f32s(&x)[i] + yi } else { yi };
        assert_eq!(got, want, "y[{i}]");
    }

    // The same seed gives the same inputs; another seed other ones.
    let out2 = d.join("out2");
    let more = ["--seed", "7", "--out", out2.to_str().unwrap()];
    run_interp(&file, "saxpy", &[&saxpy_args[..], &more].concat()).ok();
    let x7 = npy::read_vector(&out2.join("x.npy"), &scalar_leaf(Scalar::F32), Some(300)).unwrap();
    assert_ne!(f32s(&x7), f32s(&x));

    // Feeding the written files back as inputs reproduces the run on x.
    let out3 = d.join("out3");
    let xin = format!("x={}", out.join("x.npy").display());
    let args = ["--input", &xin, "--arg", "a=2.0", "--arg", "n=250"];
    run_interp(
        &file,
        "saxpy",
        &[&args[..], &["--out", out3.to_str().unwrap()]].concat(),
    )
    .ok();
    let x3 = npy::read_vector(&out3.join("x.npy"), &scalar_leaf(Scalar::F32), None).unwrap();
    assert_eq!(f32s(&x3), f32s(&x), "--size comes from the input file");
}

#[test]
fn run_user_errors_are_one_message_and_exit_1() {
    let d = scratch("errors");
    let file = write(&d, "saxpy.sarek", SAXPY);
    let run = |extra: &[&str]| run_interp(&file, "saxpy", extra);
    let expect = |r: Out, needles: &[&str]| r.fails(1, needles);
    expect(run(&["--arg", "a=2.0"]), &["`n`", "int32", "--arg n="]);
    expect(
        run(&["--arg", "a=two", "--arg", "n=4"]),
        &["a=two", "not a float32"],
    );
    expect(
        run(&["--arg", "a=1", "--arg", "n=4", "--arg", "nn=3"]),
        &["no parameter `nn`", "did you mean `n`?"],
    );
    expect(
        run(&["--arg", "a=1", "--arg", "n=4", "--block", "2048"]),
        &["2048 threads", "1024"],
    );

    // A missing --input file is an I/O error on a file named on the command line: exit 2.
    let missing = format!("x={}", d.join("missing.npy").display());
    run(&["--arg", "a=1", "--arg", "n=4", "--input", &missing])
        .fails(2, &["missing.npy", "No such file", "`x`"]);

    // .npy of the wrong dtype, then of the wrong length.
    let spec = format!(
        "x={}",
        write_column(&d, "ints.npy", Column::I32(vec![1; 4]))
    );
    expect(
        run(&["--arg", "a=1", "--arg", "n=4", "--input", &spec]),
        &["'<i4'", "'<f4'", "`x`"],
    );
    let spec = format!(
        "x={}",
        write_column(&d, "floats.npy", Column::F32(vec![1.0; 4]))
    );
    expect(
        run(&[
            "--size", "8", "--arg", "a=1", "--arg", "n=4", "--input", &spec,
        ]),
        &["length 4", "length 8"],
    );
    let garbage = write(&d, "garbage.npy", "not numpy");
    let spec = format!("x={garbage}");
    expect(
        run(&["--arg", "a=1", "--arg", "n=4", "--input", &spec]),
        &["garbage.npy", "not a supported .npy"],
    );

    // Unknown backends, on the command line and in the environment.
    let r = sarek(&[
        "run",
        &file,
        "--kernel",
        "saxpy",
        "--backend",
        "gpu9000",
        "--arg",
        "a=1",
        "--arg",
        "n=4",
    ]);
    expect(r, &["unknown backend `gpu9000`"]);
    // HIP is a compiler dialect without a runtime backend: refused by name, not as unknown.
    let r = sarek(&[
        "run",
        &file,
        "--kernel",
        "saxpy",
        "--backend",
        "hip",
        "--arg",
        "a=1",
        "--arg",
        "n=4",
    ]);
    expect(r, &["backend `hip` is not available", "no runtime backend"]);
    let r = sarek_env(
        &[
            "run", &file, "--kernel", "saxpy", "--arg", "a=1", "--arg", "n=4",
        ],
        &[("SAREK_BACKEND", "nope")],
    );
    expect(r, &["SAREK_BACKEND", "unknown backend `nope`"]);
    let r = sarek(&[
        "run", &file, "--kernel", "saxpi", "--arg", "a=1", "--arg", "n=4",
    ]);
    expect(r, &["no kernel `saxpi`", "did you mean `saxpy`?"]);
}

#[test]
fn faults_are_located_in_the_source() {
    let d = scratch("fault");
    let file = write(
        &d,
        "oob.sarek",
        "let%kernel oob (out : int32 vector) =\n  let i = global_thread_id in\n  out.(i + 1) <- i\n",
    );
    // Located, and naming the thread.
    run_interp(&file, "oob", &["--size", "4"]).fails(1, &[&format!("{file}:3:3"), "thread"]);
}

/// float64 is used twice (the parameter `v` on line 3, the store on line 5): WGSL refuses the
/// kernel for both reasons at once.
const FLOAT64: &str = "\
(* @run twice size=64 n=64 *)
(* @run twice size=32 n=32 *)
let%kernel twice (v : float64 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then v.(i) <- v.(i) +. v.(i)
";

#[test]
fn refusals_are_located_once_and_fail() {
    let wgpu = sarek(&["devices"])
        .stdout
        .lines()
        .any(|l| l.starts_with("wgpu") && !l.contains("unavailable"));
    if !wgpu {
        assert!(
            !sarek_testkit::backends::required("wgpu"),
            "wgpu is required (SAREK_REQUIRE_BACKENDS) but unavailable"
        );
        return eprintln!("skipping: wgpu is unavailable");
    }
    let d = scratch("refusal");
    let file = write(&d, "twice.sarek", FLOAT64);

    // `compile` renders the refusal as every backend does: one error per reason, at the first
    // use (`v`), the store on line 5 as a secondary place.
    let compiled = sarek(&["compile", &file, "--target", "wgsl"]);
    assert_eq!(compiled.code, 1, "{}", compiled.stderr);
    let located = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| {
                l.split_once(&format!("{file}:"))
                    .map(|(_, at)| at.to_string())
            })
            .collect()
    };
    let compile_places = located(&compiled.stderr);
    assert_eq!(compile_places.len(), 1, "{}", compiled.stderr);
    assert!(compile_places[0].starts_with("3:"), "{}", compiled.stderr);
    assert!(compiled.stderr.contains("5 │"), "{}", compiled.stderr);

    let r = sarek(&[
        "run",
        &file,
        "--kernel",
        "twice",
        "--backend",
        "wgpu",
        "--arg",
        "n=64",
    ]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.stdout.contains("device:"), "nothing ran: {}", r.stdout);
    // One error, naming WGSL, located where `compile` puts the first use; the store on
    // line 5 is shown as a secondary place of the same error.
    assert_eq!(r.stderr.matches("error").count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("WGSL"), "{}", r.stderr);
    assert_eq!(
        located(&r.stderr),
        vec![compile_places[0].clone()],
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("5 │"), "second use shown: {}", r.stderr);

    // `verify` naming wgpu: refused in the table, diagnostics once for both directives, exit 2
    // (the contract: a requested backend that cannot run the kernel), one `error:` line.
    let r = sarek(&["verify", &file, "--backends", "wgpu"]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(
        r.stderr
            .matches("error: backend `wgpu` was requested but cannot run kernel")
            .count(),
        1,
        "{}",
        r.stderr
    );
    let rows = r
        .stdout
        .lines()
        .filter(|l| l.split_whitespace().eq(["wgpu", "refused"]))
        .count();
    assert_eq!(rows, 2, "one table row per directive: {}", r.stdout);
    assert_eq!(
        located(&r.stdout),
        vec![compile_places[0].clone()],
        "{}",
        r.stdout
    );
}

#[test]
fn records_round_trip_through_npy_by_field_name() {
    let d = scratch("records");
    let file = write(
        &d,
        "rec.sarek",
        "type point = { x : float32; y : float32 }\n\
         let%kernel swap (ps : point vector) =\n\
         \x20 let i = global_thread_id in\n\
         \x20 if i < length ps then begin\n\
         \x20   let p = ps.(i) in\n\
         \x20   ps.(i) <- { x = p.y; y = p.x }\n\
         \x20 end\n",
    );
    let leaves = vec![
        Leaf {
            name: "x".into(),
            scalar: Scalar::F32,
        },
        Leaf {
            name: "y".into(),
            scalar: Scalar::F32,
        },
    ];
    let input = d.join("ps.npy");
    let v = HostVector {
        len: 3,
        columns: vec![
            Column::F32(vec![1.0, 2.0, 3.0]),
            Column::F32(vec![-1.0, -2.0, -3.0]),
        ],
    };
    npy::write_vector(&input, &leaves, &v).unwrap();
    let out = d.join("out");
    let spec = format!("ps={}", input.display());
    run_interp(
        &file,
        "swap",
        &["--input", &spec, "--out", out.to_str().unwrap()],
    )
    .ok();
    let got = npy::read_vector(&out.join("ps.npy"), &leaves, Some(3)).unwrap();
    assert_eq!(
        got.columns,
        vec![
            Column::F32(vec![-1.0, -2.0, -3.0]),
            Column::F32(vec![1.0, 2.0, 3.0])
        ]
    );
}

#[test]
fn verify_table_and_exit_codes() {
    let d = scratch("verify");
    let file = write(&d, "saxpy.sarek", SAXPY);
    // The directive supplies size and scalars.
    let r = sarek(&["verify", &file, "--backends", "cpu"]);
    r.ok();
    assert!(r.stdout.contains("size 512"), "{}", r.stdout);
    let table: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("backend") || l.trim_start().starts_with("cpu"))
        .collect();
    assert_eq!(table.len(), 2, "{}", r.stdout);
    assert!(table[0].contains('x') && table[0].contains('y'));
    assert_eq!(
        table[1].split_whitespace().collect::<Vec<_>>(),
        ["cpu", "ok", "ok"]
    );

    // The command line overrides the directive.
    let r = sarek(&[
        "verify",
        &file,
        "--kernel",
        "saxpy",
        "--backends",
        "cpu",
        "--size",
        "64",
        "--arg",
        "a=0.5",
        "--arg",
        "n=64",
    ]);
    r.ok();
    assert!(r.stdout.contains("size 64"));

    sarek(&["verify", &file, "--backends", "cpu,bogus"]).fails(1, &["unknown backend `bogus`"]);

    // A requested backend that is unavailable on this machine: exit 2.
    let devices = sarek(&["devices"]).stdout;
    if let Some(line) = devices.lines().find(|l| l.contains("unavailable")) {
        let name = line.split_whitespace().next().unwrap();
        let list = format!("cpu,{name}");
        let r = sarek(&["verify", &file, "--backends", &list]);
        r.fails(2, &[&format!("backend `{name}` is unavailable")]);
        assert!(
            r.stdout.contains("cpu"),
            "the available ones still ran: {}",
            r.stdout
        );
    } else {
        eprintln!("skipping the unavailable-backend case: every backend is available here");
    }
}

#[test]
fn devices_lists_every_backend() {
    let r = sarek(&["devices"]);
    r.ok();
    for b in sarek::Backend::ALL {
        assert!(
            r.stdout
                .lines()
                .any(|l| l.split_whitespace().next() == Some(b.name())),
            "{b} missing: {}",
            r.stdout
        );
    }
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with("interp") && l.contains("available"))
    );
    assert!(r.stdout.contains("default: "));
    let r = sarek_env(&["devices"], &[("SAREK_BACKEND", "interp")]);
    assert!(
        r.stdout.contains("default: interp (from SAREK_BACKEND)"),
        "{}",
        r.stdout
    );
}

#[test]
fn bench_reports_median_and_throughput() {
    let d = scratch("bench");
    let file = write(&d, "saxpy.sarek", SAXPY);
    let r = sarek(&[
        "bench",
        &file,
        "--kernel",
        "saxpy",
        "--backend",
        "cpu",
        "--size",
        "256",
        "--arg",
        "a=1",
        "--arg",
        "n=256",
        "--warmup",
        "1",
        "--reps",
        "3",
    ]);
    r.ok();
    for w in [
        "median ",
        "min ",
        "Melem/s",
        "GB/s",
        "1 warm-up + 3 timed + 3 back-to-back launches on resident buffers",
        "upload:",
        "download:",
        "us per launch",
    ] {
        assert!(r.stdout.contains(w), "`{w}` not in {}", r.stdout);
    }
    // saxpy reads x (1 KiB in) and reads and writes y (1 KiB in, 1 KiB out); it writes
    // only y, so only y comes back.
    assert!(
        r.stdout.contains("(3072 bytes per launch: "),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("(2048 bytes, "), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("(1024 bytes of the 1 vectors the kernel writes"),
        "{}",
        r.stdout
    );
}

/// `--len NAME=N`: one vector gets its own length (a 1-element output next to a long
/// input); mistakes are one message and exit 1.
#[test]
fn len_gives_one_vector_its_own_length() {
    let d = scratch("len");
    let file = write(
        &d,
        "total.sarek",
        "let%kernel total (x : int32 vector) (out : int32 vector) =\n  \
           if global_thread_id = 0 then begin\n    \
             let mut s = 0 in\n    \
             for k = 0 to length x - 1 do s := s + x.(k) done;\n    \
             out.(0) <- s\n  \
           end\n",
    );
    let out_dir = d.join("out");
    let r = run_interp(
        &file,
        "total",
        &[
            "--size",
            "1000",
            "--len",
            "out=1",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    r.ok();
    assert!(r.stdout.contains("int32[1000]"), "{}", r.stdout);
    assert!(r.stdout.contains("int32[1] "), "{}", r.stdout);
    let leaves = scalar_leaf(Scalar::I32);
    let x = sarek_runtime::npy::read_vector(&out_dir.join("x.npy"), &leaves, None).unwrap();
    let out = sarek_runtime::npy::read_vector(&out_dir.join("out.npy"), &leaves, None).unwrap();
    let sum: i32 = match &x.columns[0] {
        Column::I32(v) => v.iter().sum(),
        other => panic!("{other:?}"),
    };
    assert_eq!(out.len, 1);
    assert_eq!(out.columns[0], Column::I32(vec![sum]));
    run_interp(&file, "total", &["--len", "outt=1"]).fails(1, &["no parameter `outt`", "`out`"]);
    run_interp(&file, "total", &["--len", "out=many"]).fails(1, &["--len `out=many`"]);
}

// Issue 17: files and processes.

/// `line:column` (1-based, columns in characters) of byte `at` of `bytes`, counted here.
fn line_col(bytes: &[u8], at: usize) -> (usize, usize) {
    let before = &bytes[..at];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let col = std::str::from_utf8(&before[start..])
        .unwrap()
        .chars()
        .count()
        + 1;
    (line, col)
}

#[test]
fn invalid_utf8_in_a_source_is_located_at_its_first_bad_byte() {
    let dir = scratch("utf8");
    let mut text = b"let%kernel k (a : int32 vector) =\n  let i = thread_idx_x in\n  a.(i) <- 1 (* caf\xc3\xa9 ".to_vec();
    let bad_at = text.len();
    text.extend_from_slice(b"\xe9 *)\n");
    let path = dir.join("bad.sarek");
    std::fs::write(&path, &text).unwrap();
    let (line, col) = line_col(&text, bad_at);
    assert_eq!((line, col), (3, 22), "the test's own count");
    let p = path.display().to_string();
    for args in [
        vec!["check", p.as_str()],
        vec!["compile", p.as_str(), "--target", "wgsl"],
    ] {
        sarek(&args).fails(
            1,
            &[
                "error: source files must be UTF-8",
                &format!("bad.sarek:{line}:{col}"),
                "invalid UTF-8 byte 0xe9",
            ],
        );
    }
}

#[test]
fn endless_and_oversized_files_stop_at_a_size_limit() {
    let dir = scratch("limits");
    let src = write(&dir, "two.sarek", TWO_KERNELS);
    // A sparse source just over the limit: refused from its size, nothing read.
    let big = dir.join("big.sarek");
    std::fs::File::create(&big)
        .unwrap()
        .set_len((64 << 20) + 1)
        .unwrap();
    sarek(&["check", &big.display().to_string()]).fails(2, &["larger than the 64 MiB"]);
    // A .npy header in front of a sparse 20 GiB file.
    let huge = dir.join("huge.npy");
    let mut f = std::fs::File::create(&huge).unwrap();
    std::io::Write::write_all(&mut f, b"\x93NUMPY\x01\x00").unwrap();
    f.set_len(20 << 30).unwrap();
    drop(f);
    let spec = format!("v={}", huge.display());
    run_interp(&src, "scale", &["--arg", "k=2", "--input", &spec]).fails(
        1,
        &[
            "--input v=",
            "larger than the 16.0 GiB",
            "`v` : int32 vector",
        ],
    );
    run_interp(
        &src,
        "scale",
        &["--arg", "k=2", "--size", "8", "--input", &spec],
    )
    .fails(
        1,
        &["larger than the 1048656 bytes a .npy file of 8 elements"],
    );
    #[cfg(unix)]
    {
        sarek(&["check", "/dev/zero"]).fails(2, &["`/dev/zero`", "larger than the 64 MiB"]);
        run_interp(&src, "scale", &["--arg", "k=2", "--input", "v=/dev/zero"]).fails(
            1,
            &["--input v=/dev/zero: not a supported .npy file: missing the"],
        );
    }
}

#[test]
fn out_is_created_after_a_successful_run_only_and_written_whole() {
    let dir = scratch("out");
    let src = write(&dir, "two.sarek", TWO_KERNELS);
    // A missing folder (two levels) is created, and holds exactly the vectors.
    let out = dir.join("a").join("b");
    let out_s = out.display().to_string();
    run_interp(
        &src,
        "scale",
        &["--arg", "k=3", "--size", "8", "--out", &out_s],
    )
    .ok();
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["v.npy"]);
    // A kernel without vectors writes nothing, and says so (it printed `DIR/<param>.npy`).
    let none = write(&dir, "none.sarek", "let%kernel k (x : int32) = ()\n");
    let empty = dir.join("empty").display().to_string();
    let o = run_interp(&none, "k", &["--arg", "x=1", "--out", &empty]);
    assert!(
        o.ok()
            .stdout
            .contains("wrote:   nothing (the kernel has no vector parameter)"),
        "{}",
        o.stdout
    );
    // A failed run (a fault, then a user error) leaves no folder behind.
    for (k, extra) in [("scale", "--arg=kk=3"), ("scale", "--grid=0")] {
        let failed = dir.join("failed").join(k);
        let failed_s = failed.display().to_string();
        let o = run_interp(&src, k, &[extra, "--size", "8", "--out", &failed_s]);
        assert_eq!(o.code, 1, "{}", o.stderr);
        assert!(!dir.join("failed").exists(), "a failed run created --out");
    }
    // A file where the folder should be: refused before running (exit 2).
    let file_s = src.clone() + "/sub";
    run_interp(
        &src,
        "scale",
        &["--arg", "k=3", "--size", "8", "--out", &file_s],
    )
    .fails(2, &["--out"]);
    run_interp(
        &src,
        "scale",
        &["--arg", "k=3", "--size", "8", "--out", &src],
    )
    .fails(2, &["exists and is not a folder"]);
    // An output that cannot replace its destination (a non-empty folder named `v.npy`):
    // exit 2, the destination untouched, no temporary file left.
    let blocked = dir.join("blocked");
    std::fs::create_dir_all(blocked.join("v.npy").join("inside")).unwrap();
    let blocked_s = blocked.display().to_string();
    run_interp(
        &src,
        "scale",
        &["--arg", "k=3", "--size", "8", "--out", &blocked_s],
    )
    .fails(2, &["cannot write", "v.npy"]);
    let left: Vec<String> = std::fs::read_dir(&blocked)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, ["v.npy"], "a temporary file was left behind");
    assert!(blocked.join("v.npy").join("inside").is_dir());
    // `compile -o` goes through the same path: the file is complete, and no temporary file
    // stays next to it.
    let wgsl = dir.join("k.wgsl");
    sarek(&[
        "compile",
        &src,
        "--target",
        "wgsl",
        "--kernel",
        "add",
        "-o",
        &wgsl.display().to_string(),
    ])
    .ok();
    let printed = sarek(&["compile", &src, "--target", "wgsl", "--kernel", "add"]);
    assert_eq!(std::fs::read_to_string(&wgsl).unwrap(), printed.ok().stdout);
    assert!(
        std::fs::read_dir(&dir).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp"))
    );
}

#[test]
fn timeout_stops_a_kernel_that_never_ends() {
    let dir = scratch("timeout");
    let spin = write(
        &dir,
        "spin.sarek",
        "\
let%kernel spin (out : int32 vector) (n : int32) =
  let i = global_thread_id in
  let k = mut 0 in
  while k >= 0 do
    k := (k + 1) land 1023
  done;
  if i < length out then out.(i) <- k + n
",
    );
    let out_dir = dir.join("out").display().to_string();
    for args in [
        vec![
            "run",
            &spin,
            "--kernel",
            "spin",
            "--backend",
            "interp",
            "--out",
            &out_dir,
        ],
        vec!["verify", &spin, "--kernel", "spin", "--backends", "cpu"],
        vec!["bench", &spin, "--kernel", "spin", "--backend", "cpu"],
    ] {
        // The child is waited for with a deadline of its own, so a broken --timeout fails
        // the test instead of hanging it.
        let mut child = Command::new(env!("CARGO_BIN_EXE_sarek"))
            .args(&args)
            .args(["--size", "4", "--arg", "n=1", "--timeout", "1"])
            .env_remove("SAREK_BACKEND")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("`sarek {}` ignored --timeout", args[0]);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "`sarek {}` did not finish within --timeout 1 s",
                args[0]
            )),
            "{stderr}"
        );
    }
    assert!(!dir.join("out").exists(), "a stopped run created --out");
    run_interp(&spin, "spin", &["--arg", "n=1", "--timeout", "0"])
        .fails(2, &["`0` is not a positive number of seconds"]);
}

/// `sarek compile ... | head -1`: the reader closes the pipe early; the process ends quietly
/// (SIGPIPE, as other Unix tools) instead of reporting a panic.
#[cfg(unix)]
#[test]
fn closed_stdout_ends_quietly() {
    use std::io::Read;
    let dir = scratch("pipe");
    let many: String = (0..300)
        .map(|i| {
            TWO_KERNELS
                .replace("add", &format!("add{i}"))
                .replace("scale", &format!("scale{i}"))
        })
        .collect::<Vec<_>>()
        .join("\n");
    let src = write(&dir, "many.sarek", &many);
    let mut child = Command::new(env!("CARGO_BIN_EXE_sarek"))
        .args(["compile", &src, "--target", "opencl"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The pipe's read end is closed here (the ChildStdout was dropped).
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("internal error"), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

/// `--fma` contracts `a *. x +. y` before generating (every target prints its fused
/// multiply-add) and before running (`verify --fma` compares backends on the contracted
/// kernel); without it nothing is fused.
#[test]
fn fma_flag_contracts_multiply_adds() {
    let d = scratch("fma");
    let saxpy = write(&d, "saxpy.sarek", SAXPY);
    for (target, fused) in [
        ("ptx", "fma.rn.f32"),
        ("cuda", "fmaf("),
        ("opencl", "fma("),
        ("wgsl", "fma("),
        ("glsl", "fma("),
        ("metal", "fma("),
    ] {
        let with = sarek(&["compile", &saxpy, "--target", target, "--fma"]);
        with.ok();
        assert!(
            with.stdout.contains(fused),
            "{target} --fma:\n{}",
            with.stdout
        );
        let without = sarek(&["compile", &saxpy, "--target", target]);
        without.ok();
        assert!(
            !without.stdout.contains(fused),
            "{target}:\n{}",
            without.stdout
        );
    }
    let r = sarek(&["verify", &saxpy, "--backends", "cpu", "--fma"]);
    r.ok();
    let r = sarek(&[
        "run",
        &saxpy,
        "--kernel",
        "saxpy",
        "--backend",
        "interp",
        "--fma",
        "--arg",
        "a=2.0",
        "--arg",
        "n=500",
        "--size",
        "512",
    ]);
    r.ok();
}

#[test]
fn cpu_run_compiles_synchronising_helper_calls_natively() {
    // Calls of a helper with a barrier inside expressions (after a memory read, in an arm of a
    // conditional, under `&&`) once ran on the interpreter core with a note; they are now
    // native code: `sarek run` on cpu prints no note and the values interp prints.
    let dir = scratch("cpu_note");
    let file = write(
        &dir,
        "helper_barrier.sarek",
        "let synced (t : int32) : int32 =
  block_barrier ();
  t + 1

let%kernel k (a : int32 vector) (n : int32) =
  let t = thread_idx_x in
  let c = if n > 0 then synced t else 0 in
  let d = n > 1 && synced c > 2 in
  a.(t) <- a.(t) + synced t + c + (if d then 10 else 0)
",
    );
    let run_on = |backend: &str| {
        let out = dir.join(backend);
        let o = sarek(&[
            "run",
            &file,
            "--kernel",
            "k",
            "--backend",
            backend,
            "--size",
            "64",
            "--arg",
            "n=3",
            "--out",
            out.to_str().unwrap(),
        ]);
        o.ok();
        let values = std::fs::read(out.join("a.npy")).expect("a.npy written");
        (o.stdout, values)
    };
    let (native_stdout, native) = run_on("cpu");
    assert!(!native_stdout.contains("note:"), "{native_stdout}");
    assert_eq!(
        native,
        run_on("interp").1,
        "cpu and interp write the same a.npy"
    );
    let plain = write(&dir, "saxpy.sarek", SAXPY);
    let o = sarek(&[
        "run",
        &plain,
        "--kernel",
        "saxpy",
        "--backend",
        "cpu",
        "--arg",
        "a=2.0",
        "--arg",
        "n=500",
    ]);
    o.ok();
    assert!(!o.stdout.contains("note:"), "{}", o.stdout);
}
