//! The `.npy` module against NumPy itself: files written by numpy are read here, files
//! written here are read by numpy. Skips (with the reason) when python3 with numpy is absent.

use sarek_compiler::abi::Leaf;
use sarek_compiler::types::Scalar;
use sarek_runtime::npy::{self, Dtype};
use sarek_runtime::value::{Column, HostVector};
use std::path::{Path, PathBuf};
use std::process::Command;

fn python(script: &str) -> Option<String> {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
        .ok()?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("No module named 'numpy'") {
            return None;
        }
        panic!("python failed: {err}");
    }
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn numpy_available() -> bool {
    match python("import numpy") {
        Some(_) => true,
        None => {
            eprintln!("skipping: python3 with numpy is not available");
            false
        }
    }
}

fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sarek-npy-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn leaf(name: &str, scalar: Scalar) -> Leaf {
    Leaf {
        name: name.into(),
        scalar,
    }
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn reads_files_written_by_numpy() {
    if !numpy_available() {
        return;
    }
    let d = scratch("read");
    let script = format!(
        r#"
import numpy as np
d = {dir:?}
n = 5
i = np.arange(n)
np.save(d + "/i4.npy", (i * 7 - 3).astype("<i4"))
np.save(d + "/i8.npy", (i * 10**12).astype("<i8"))
np.save(d + "/f4.npy", (i / 4 - 0.5).astype("<f4"))
np.save(d + "/f8.npy", (i / 3).astype("<f8"))
np.save(d + "/b1.npy", (i % 2 == 1))
pt = np.zeros(n, dtype=[("x", "<f4"), ("y", "<f4")])
pt["x"] = i; pt["y"] = -i
np.save(d + "/point.npy", pt)
sh = np.zeros(n, dtype=[("tag", "<i4"), ("Circle_0", "<f4"), ("Rect_0", "<f4"), ("Rect_1", "<f4")])
sh["tag"] = i % 3; sh["Circle_0"] = i * 1.5; sh["Rect_0"] = i; sh["Rect_1"] = 2 * i
np.save(d + "/shape.npy", sh)
al = np.zeros(n, dtype=np.dtype([("k", "<i4"), ("v", "<f8")], align=True))
al["k"] = i; al["v"] = i * 0.25
np.save(d + "/aligned.npy", al)
with open(d + "/v2.npy", "wb") as f:
    np.lib.format.write_array(f, (i + 100).astype("<i4"), version=(2, 0))
np.save(d + "/be.npy", i.astype(">i4"))
np.save(d + "/two_d.npy", np.zeros((2, 3), dtype="<f4"))
"#,
        dir = p(&d)
    );
    python(&script).unwrap();
    let n = 5usize;
    let idx = 0..n;
    let read = |file: &str, leaves: &[Leaf]| npy::read_vector(&d.join(file), leaves, Some(n));
    let s = |sc| vec![leaf("", sc)];
    assert_eq!(
        read("i4.npy", &s(Scalar::I32)).unwrap().columns,
        vec![Column::I32(idx.clone().map(|i| i as i32 * 7 - 3).collect())]
    );
    assert_eq!(
        read("i8.npy", &s(Scalar::I64)).unwrap().columns,
        vec![Column::I64(
            idx.clone().map(|i| i as i64 * 1_000_000_000_000).collect()
        )]
    );
    assert_eq!(
        read("f4.npy", &s(Scalar::F32)).unwrap().columns,
        vec![Column::F32(
            idx.clone().map(|i| i as f32 / 4.0 - 0.5).collect()
        )]
    );
    assert_eq!(
        read("f8.npy", &s(Scalar::F64)).unwrap().columns,
        vec![Column::F64(idx.clone().map(|i| i as f64 / 3.0).collect())]
    );
    assert_eq!(
        read("b1.npy", &s(Scalar::Bool)).unwrap().columns,
        vec![Column::Bool(idx.clone().map(|i| i % 2 == 1).collect())]
    );
    let point = [leaf("x", Scalar::F32), leaf("y", Scalar::F32)];
    assert_eq!(
        read("point.npy", &point).unwrap().columns,
        vec![
            Column::F32(idx.clone().map(|i| i as f32).collect()),
            Column::F32(idx.clone().map(|i| -(i as f32)).collect())
        ]
    );
    let shape = [
        leaf("tag", Scalar::I32),
        leaf("Circle_0", Scalar::F32),
        leaf("Rect_0", Scalar::F32),
        leaf("Rect_1", Scalar::F32),
    ];
    let v = read("shape.npy", &shape).unwrap();
    assert_eq!(
        v.columns[0],
        Column::I32(idx.clone().map(|i| (i % 3) as i32).collect())
    );
    assert_eq!(
        v.columns[3],
        Column::F32(idx.clone().map(|i| 2.0 * i as f32).collect())
    );
    let aligned = [leaf("k", Scalar::I32), leaf("v", Scalar::F64)];
    assert_eq!(
        read("aligned.npy", &aligned).unwrap().columns[1],
        Column::F64(idx.clone().map(|i| i as f64 * 0.25).collect())
    );
    assert_eq!(
        read("v2.npy", &s(Scalar::I32)).unwrap().columns,
        vec![Column::I32(idx.clone().map(|i| i as i32 + 100).collect())]
    );

    // Refusals, each naming what it found.
    let e = read("f4.npy", &s(Scalar::F64)).unwrap_err().to_string();
    assert!(e.contains("'<f4'") && e.contains("'<f8'"), "{e}");
    let e = npy::read_vector(&d.join("f4.npy"), &s(Scalar::F32), Some(6))
        .unwrap_err()
        .to_string();
    assert!(e.contains("length 5") && e.contains("length 6"), "{e}");
    let e = read(
        "point.npy",
        &[leaf("y", Scalar::F32), leaf("x", Scalar::F32)],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("[('x', '<f4'), ('y', '<f4')]"),
        "field order matters: {e}"
    );
    assert!(
        read("be.npy", &s(Scalar::I32))
            .unwrap_err()
            .to_string()
            .contains("'>i4'")
    );
    assert!(
        read("two_d.npy", &s(Scalar::F32))
            .unwrap_err()
            .to_string()
            .contains("not 1-D")
    );
}

#[test]
fn numpy_reads_files_written_here() {
    if !numpy_available() {
        return;
    }
    let d = scratch("write");
    let scalars = HostVector {
        len: 3,
        columns: vec![Column::F64(vec![0.5, -2.0, 1e300])],
    };
    npy::write_vector(&d.join("f8.npy"), &[leaf("", Scalar::F64)], &scalars).unwrap();
    let flags = HostVector {
        len: 3,
        columns: vec![Column::Bool(vec![true, false, true])],
    };
    npy::write_vector(&d.join("b1.npy"), &[leaf("", Scalar::Bool)], &flags).unwrap();
    let tuple = [
        leaf("_0", Scalar::I32),
        leaf("_1", Scalar::F32),
        leaf("_2", Scalar::I64),
    ];
    let tv = HostVector {
        len: 2,
        columns: vec![
            Column::I32(vec![1, -1]),
            Column::F32(vec![0.25, 8.0]),
            Column::I64(vec![i64::MAX, 3]),
        ],
    };
    npy::write_vector(&d.join("tuple.npy"), &tuple, &tv).unwrap();
    // A long header forces format version 2.
    let many: Vec<Leaf> = (0..3000)
        .map(|k| leaf(&format!("field_{k}"), Scalar::I32))
        .collect();
    let wide = HostVector {
        len: 1,
        columns: (0..3000).map(|k| Column::I32(vec![k])).collect(),
    };
    let wide_bytes = npy::to_bytes(&many, &wide);
    assert_eq!(
        wide_bytes[6], 2,
        "header over 64 KiB is written as version 2"
    );
    std::fs::write(d.join("wide.npy"), &wide_bytes).unwrap();

    let script = format!(
        r#"
import numpy as np
d = {dir:?}
a = np.load(d + "/f8.npy"); print(a.dtype.str, a.tolist())
b = np.load(d + "/b1.npy"); print(b.dtype.str, b.tolist())
t = np.load(d + "/tuple.npy"); print(t.dtype.descr, t["_0"].tolist(), t["_1"].tolist(), t["_2"].tolist())
w = np.load(d + "/wide.npy", max_header_size=200000); print(len(w.dtype.names), int(w["field_2999"][0]))
"#,
        dir = p(&d)
    );
    let out = python(&script).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "<f8 [0.5, -2.0, 1e+300]");
    assert_eq!(lines[1], "|b1 [True, False, True]");
    assert_eq!(
        lines[2],
        "[('_0', '<i4'), ('_1', '<f4'), ('_2', '<i8')] [1, -1] [0.25, 8.0] [9223372036854775807, 3]"
    );
    assert_eq!(lines[3], "3000 2999");

    // And the dtype spelled in our messages is the one numpy prints.
    assert_eq!(
        Dtype::of_leaves(&tuple).to_string(),
        "[('_0', '<i4'), ('_1', '<f4'), ('_2', '<i8')]"
    );
}

/// NumPy writes a record vector with a nested record field as a nested structured dtype
/// (`[('p', [('a', '<i4'), ('b', '<f4')]), ...]`); it is read as the flattened leaves
/// `p_a`, `p_b`, packed or aligned (with padding inside the nested struct and after it).
#[test]
fn reads_nested_structured_dtypes_written_by_numpy() {
    if !numpy_available() {
        return;
    }
    let d = scratch("nested");
    let script = format!(
        r#"
import numpy as np
d = {dir:?}
n = 4
i = np.arange(n)
for name, align in (("packed", False), ("aligned", True)):
    dt = np.dtype([("p", [("a", "<i4"), ("b", "<f8")]), ("k", "|b1"),
                   ("s", [("tag", "<i4"), ("Circle_0", "<f4")])], align=align)
    x = np.zeros(n, dtype=dt)
    x["p"]["a"] = i * 3; x["p"]["b"] = i / 8; x["k"] = i % 2 == 0
    x["s"]["tag"] = i % 2; x["s"]["Circle_0"] = -i
    np.save(d + "/" + name + ".npy", x)
    print(dt.itemsize, np.load(d + "/" + name + ".npy").dtype.descr)
"#,
        dir = p(&d)
    );
    let out = python(&script).unwrap();
    // The files really are nested, and the aligned one really is padded.
    assert!(out.contains("('p', [('a', '<i4'), ('b', '<f8')])"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("21 ")), "packed: {out}");
    assert!(out.contains("('', '|V4')"), "aligned has padding: {out}");
    let leaves = [
        leaf("p_a", Scalar::I32),
        leaf("p_b", Scalar::F64),
        leaf("k", Scalar::Bool),
        leaf("s_tag", Scalar::I32),
        leaf("s_Circle_0", Scalar::F32),
    ];
    let idx = 0..4usize;
    let want = vec![
        Column::I32(idx.clone().map(|i| i as i32 * 3).collect()),
        Column::F64(idx.clone().map(|i| i as f64 / 8.0).collect()),
        Column::Bool(idx.clone().map(|i| i % 2 == 0).collect()),
        Column::I32(idx.clone().map(|i| (i % 2) as i32).collect()),
        Column::F32(idx.clone().map(|i| -(i as f32)).collect()),
    ];
    for file in ["packed.npy", "aligned.npy"] {
        let v = npy::read_vector(&d.join(file), &leaves, Some(4)).unwrap();
        assert_eq!(v.columns, want, "{file}");
    }
    // A nested field that does not fit is named by its flattened path.
    let mut wrong = leaves.clone();
    wrong[1] = leaf("p_c", Scalar::F64);
    let e = npy::read_vector(&d.join("packed.npy"), &wrong, Some(4))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("('p_b', '<f8')") && e.contains("('p_c', '<f8')"),
        "{e}"
    );
}
