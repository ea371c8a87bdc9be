//! `--arg` values of records and variants passed by value (a constructor then its payload,
//! `FIELD=VALUE` fields, the `.npy` leaf layout), their errors, and `.npy` inputs with NumPy's
//! nested structured dtypes, through the built `sarek` binary.

use sarek_compiler::abi::Leaf;
use sarek_compiler::types::Scalar;
use sarek_runtime::device::Backend;
use sarek_runtime::npy;
use sarek_runtime::value::Column;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) struct Out {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Run the `sarek` binary without a backend override or colours.
pub(crate) fn sarek(args: &[&str]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_sarek"))
        .args(args)
        .env_remove("SAREK_BACKEND")
        .env("NO_COLOR", "1")
        .output()
        .expect("the sarek binary runs");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sarek-cli-args-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

const SHAPES: &str = "\
(* @run areas size=8 s=Rect,2,3 q=1,0.5 n=3
   @run areas size=8 s=Empty q=y=0.5,x=2 n=0
   @run areas size=8 s=Circle,0.5 q=0,0 n=1
   @run sum_items size=64 *)
type shape = Circle of float32 | Rect of float32 * float32 | Empty
type point = { x : float32; y : float32 }
type pair = { a : int32; b : float32 }
type item = { p : pair; s : shape; k : int32 }

let area (s : shape) : float32 =
  match s with Circle r -> 4.0 *. r *. r | Rect (w, h) -> w *. h | Empty -> -1.0

let%kernel areas (out : float32 vector) (s : shape) (q : point) (n : int32) =
  let i = global_thread_id in
  if i < length out then out.(i) <- area s +. q.x *. float32 i +. q.y +. float32 n

let%kernel sum_items (items : item vector) (out : float32 vector) =
  let i = global_thread_id in
  if i < length out then begin
    let it = items.(i) in
    out.(i) <- float32 (it.p.a mod 100) +. it.p.b +. area it.s *. float32 (it.k mod 10)
  end
";

fn f32_column(path: &Path) -> Vec<f32> {
    let leaves = [Leaf {
        name: String::new(),
        scalar: Scalar::F32,
    }];
    match npy::read_vector(path, &leaves, None)
        .unwrap()
        .columns
        .remove(0)
    {
        Column::F32(v) => v,
        c => panic!("expected float32, got {:?}", c.scalar()),
    }
}

/// Run `areas` on the interpreter with `s` and `q` as given; `out` after the run.
fn areas(dir: &Path, file: &str, s: &str, q: &str) -> Result<Vec<f32>, Out> {
    let out_dir = dir.join("out");
    let _ = std::fs::remove_dir_all(&out_dir);
    let o = sarek(&[
        "run",
        file,
        "--kernel",
        "areas",
        "--backend",
        "interp",
        "--size",
        "4",
        "--arg",
        &format!("s={s}"),
        "--arg",
        &format!("q={q}"),
        "--arg",
        "n=0",
        "--out",
        &out_dir.display().to_string(),
    ]);
    if o.code != 0 {
        return Err(o);
    }
    Ok(f32_column(&out_dir.join("out.npy")))
}

#[test]
fn variant_and_record_arguments_in_every_spelling() {
    let d = scratch("spellings");
    let f = write(&d, "shapes.sarek", SHAPES);
    // out[i] = area s + q.x * i + q.y, by hand: Rect (2, 3) has area 6, Circle 0.5 has
    // 4 * 0.25 = 1, Empty -1 (all exact in float32).
    let expect = |area: f32, x: f32, y: f32| -> Vec<f32> {
        (0..4).map(|i| area + x * i as f32 + y).collect()
    };
    let run = |s: &str, q: &str| {
        areas(&d, &f, s, q).unwrap_or_else(|o| panic!("s={s} q={q}: {}", o.stderr))
    };
    assert_eq!(run("Rect,2.0,3.0", "x=1,y=0.5"), expect(6.0, 1.0, 0.5));
    assert_eq!(run("Rect,2,3", "1,0.5"), expect(6.0, 1.0, 0.5));
    // The `.npy` leaf layout: tag, Circle_0, Rect_0, Rect_1.
    assert_eq!(run("1,0,2,3", "y=0.5,x=1"), expect(6.0, 1.0, 0.5));
    assert_eq!(run("Circle,0.5", "0,0"), expect(1.0, 0.0, 0.0));
    assert_eq!(run("Empty", "2,-1"), expect(-1.0, 2.0, -1.0));
    assert_eq!(run(" Empty ", "x = 2, y = -1"), expect(-1.0, 2.0, -1.0));
}

#[test]
fn bad_arguments_are_one_clear_message() {
    let d = scratch("errors");
    let f = write(&d, "shapes.sarek", SHAPES);
    let err = |s: &str, q: &str| match areas(&d, &f, s, q) {
        Ok(v) => panic!("s={s} q={q} was accepted: {v:?}"),
        Err(o) => {
            assert_eq!(o.code, 1, "s={s} q={q}: {}", o.stderr);
            assert_eq!(o.stderr.lines().count(), 1, "one line: {}", o.stderr);
            o.stderr
        }
    };
    assert_eq!(
        err("Rectt,2,3", "1,2"),
        "error: --arg s=Rectt,2,3 (parameter `s : shape`): `Rectt` is not a constructor of \
         shape (Circle, Rect, Empty) nor a tag 0 to 2; did you mean `Rect`?\n"
    );
    assert_eq!(
        err("Rect,2", "1,2"),
        "error: --arg s=Rect,2 (parameter `s : shape`): too few values: constructor `Rect` \
         takes 2 payload values (float32, float32), 1 given\n"
    );
    assert_eq!(
        err("Circle,1,2", "1,2"),
        "error: --arg s=Circle,1,2 (parameter `s : shape`): too many values: constructor \
         `Circle` takes 1 payload value (float32); `2` is left over\n"
    );
    assert!(err("Empty,0", "1,2").contains("`Empty` takes no payload"));
    // A numeric tag out of range is an argument error, not an interpreter fault later.
    assert_eq!(
        err("7,0,0,0", "1,2"),
        "error: --arg s=7,0,0,0 (parameter `s : shape`): tag 7 is out of range for shape \
         (0 to 2: Circle, Rect, Empty)\n"
    );
    assert!(err("Circle,big", "1,2").contains("`big` is not a float32"));
    assert!(err("Empty", "x=1").contains("point still needs field(s) `y`"));
    assert!(err("Empty", "x=1,z=2").contains("point has no field `z` (its fields: x, y)"));
    assert!(err("Empty", "x=1,x=2").contains("field `x` of point is given twice"));
    assert!(err("Empty", "1,2,3").contains("too many values: `3` is left over after a point"));

    // A missing aggregate says how to write it; a non-integer int32 has the right article.
    let o = sarek(&[
        "run",
        &f,
        "--kernel",
        "areas",
        "--backend",
        "interp",
        "--arg",
        "q=1,2",
        "--arg",
        "n=0",
    ]);
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        "error: missing value for parameter `s` of type shape (give it as \
         --arg s=Circle,<float32> | Rect,<float32>,<float32> | Empty)\n"
    );
    let o = sarek(&[
        "run",
        &f,
        "--kernel",
        "areas",
        "--backend",
        "interp",
        "--arg",
        "s=Empty",
        "--arg",
        "q=1,2",
        "--arg",
        "n=1.5",
    ]);
    assert_eq!(o.code, 1);
    assert_eq!(o.stderr, "error: --arg n=1.5: `1.5` is not an int32\n");
}

/// The `@run` directives use the same spellings; every available backend agrees with interp
/// on them (by-value variants and records reach each backend's ABI).
#[test]
fn directives_take_constructor_arguments_on_every_backend() {
    let d = scratch("directives");
    let f = write(&d, "shapes.sarek", SHAPES);
    let o = sarek(&["verify", &f, "--kernel", "areas"]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert_eq!(o.stdout.matches("areas (@run").count(), 3, "{}", o.stdout);
    // Every row is `ok`; a backend the environment requires must have run all three.
    for b in ["cpu", "wgpu", "vulkan", "opencl", "cuda", "ptx"] {
        let rows: Vec<&str> = o
            .stdout
            .lines()
            .filter(|l| l.split_whitespace().next() == Some(b))
            .collect();
        assert!(rows.iter().all(|r| r.ends_with(" ok")), "{}", o.stdout);
        let backend = Backend::parse(b).unwrap();
        if b == "cpu" || sarek_testkit::backends::required(backend.name()) {
            assert_eq!(rows.len(), 3, "{b} ran every directive: {}", o.stdout);
        }
    }
}

/// A record vector with a nested record and a variant field, written by NumPy as a nested
/// structured dtype, is read by `--input`; `out` is checked against NumPy's own computation.
#[test]
fn nested_structured_npy_input_from_numpy() {
    let probe = Command::new("python3")
        .args(["-c", "import numpy"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipping: python3 with numpy is not available");
        return;
    }
    let d = scratch("nested");
    let f = write(&d, "shapes.sarek", SHAPES);
    // Small integers and halves: every value and the kernel's result are exact in float32, so
    // NumPy's float64 reference must match exactly.
    let script = format!(
        r#"
import numpy as np
d = {dir:?}
n = 64
i = np.arange(n)
for name, align in (("packed", False), ("aligned", True)):
    dt = np.dtype([("p", [("a", "<i4"), ("b", "<f4")]),
                   ("s", [("tag", "<i4"), ("Circle_0", "<f4"), ("Rect_0", "<f4"), ("Rect_1", "<f4")]),
                   ("k", "<i4")], align=align)
    x = np.zeros(n, dtype=dt)
    x["p"]["a"] = i * 37; x["p"]["b"] = (i % 5) / 2
    x["s"]["tag"] = i % 3; x["s"]["Circle_0"] = (i % 4) / 2
    x["s"]["Rect_0"] = i % 3 + 1; x["s"]["Rect_1"] = (i % 7) / 2
    x["k"] = i * 3
    np.save(d + "/" + name + ".npy", x)
c = x["s"]
area = np.where(c["tag"] == 0, 4.0 * c["Circle_0"].astype(np.float64) ** 2,
       np.where(c["tag"] == 1, c["Rect_0"].astype(np.float64) * c["Rect_1"], -1.0))
ref = (x["p"]["a"] % 100) + x["p"]["b"].astype(np.float64) + area * (x["k"] % 10)
np.save(d + "/ref.npy", ref.astype("<f4"))
x["s"]["tag"][5] = 3
np.save(d + "/bad_tag.npy", x)
assert (ref.astype(np.float32).astype(np.float64) == ref).all()
"#,
        dir = d.display().to_string()
    );
    let py = Command::new("python3")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    let want = f32_column(&d.join("ref.npy"));
    for file in ["packed.npy", "aligned.npy"] {
        let out_dir = d.join(format!("out-{file}"));
        let o = sarek(&[
            "run",
            &f,
            "--kernel",
            "sum_items",
            "--backend",
            "interp",
            "--input",
            &format!("items={}", d.join(file).display()),
            "--out",
            &out_dir.display().to_string(),
        ]);
        assert_eq!(o.code, 0, "{file}: {}", o.stderr);
        assert_eq!(f32_column(&out_dir.join("out.npy")), want, "{file}");
    }
    // A tag no constructor has is an argument error, on every backend, before anything runs.
    for backend in ["interp", "cpu"] {
        let o = sarek(&[
            "run",
            &f,
            "--kernel",
            "sum_items",
            "--backend",
            backend,
            "--input",
            &format!("items={}", d.join("bad_tag.npy").display()),
        ]);
        assert_eq!(o.code, 1, "{}", o.stderr);
        assert_eq!(
            o.stderr,
            "error: parameter `items` (item vector), element 5: `s_tag` is 3, not a tag of \
             shape (0 to 2: Circle, Rect, Empty)\n"
        );
    }
}

/// Without `XDG_RUNTIME_DIR`, commands that probe devices use one private per-user folder in
/// the temp dir (0700, reused, so a killed `sarek` leaks nothing) and print no Wayland noise.
#[cfg(unix)]
#[test]
fn runtime_dir_is_one_private_folder_per_user() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let d = scratch("xdg");
    let run = || {
        let o = Command::new(env!("CARGO_BIN_EXE_sarek"))
            .arg("devices")
            .env_remove("XDG_RUNTIME_DIR")
            .env_remove("SAREK_BACKEND")
            .env("TMPDIR", &d)
            .output()
            .unwrap();
        assert!(o.status.success());
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!stderr.contains("XDG_RUNTIME_DIR"), "{stderr}");
    };
    run();
    run();
    let me = std::fs::metadata(write(&d, "mine", "")).unwrap().uid();
    let entries: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("sarek-runtime"))
        .collect();
    assert_eq!(entries, [format!("sarek-runtime-{me}")]);
    let m = std::fs::symlink_metadata(d.join(&entries[0])).unwrap();
    assert!(m.is_dir() && m.uid() == me);
    assert_eq!(m.permissions().mode() & 0o777, 0o700);
}
