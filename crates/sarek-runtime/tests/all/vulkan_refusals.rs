//! A Vulkan device without `shaderInt64` / `shaderFloat64` (lavapipe with both left disabled)
//! refuses kernels using int64 / float64 before building a pipeline, with one diagnostic per
//! missing feature located at the first use and naming the device; other kernels still run.
#![cfg(feature = "vulkan")]

use sarek_compiler::{SourceMap, Target};
use sarek_runtime::{ArgValue, Column, HostVector, LaunchConfig, RuntimeError};

const SRC: &str = "\
let%kernel wide (v : int32 vector) (n : int32) =
  let i = global_thread_id in
  let big = int64 i * int64 n in
  if i < n then v.(i) <- int32 (big / int64 n)

let%kernel double (v : float32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then v.(i) <- float32 (float64 v.(i) *. 2.0d)

let%kernel narrow (v : int32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then v.(i) <- i * 3
";

fn args(col: Column) -> Vec<ArgValue> {
    let len = col.len();
    vec![
        ArgValue::Vector(HostVector {
            len,
            columns: vec![col],
        }),
        ArgValue::Scalar(sarek_compiler::types::Literal::I32(len as i32)),
    ]
}

#[test]
fn missing_64bit_types_are_located_refusals() {
    let device = match sarek_runtime::vulkan::open_without_64bit_types() {
        Ok(d) => d,
        Err(e @ RuntimeError::Unavailable { .. }) => {
            return sarek_testkit::backends::unavailable("vulkan", &e.to_string());
        }
        Err(e) => panic!("{e}"),
    };
    assert!(!device.info().float64);
    let mut sources = SourceMap::new();
    let file = sources.add("wide.sarek", SRC);
    let program = sarek_compiler::check(&sources, file).unwrap();
    let kernel = |name: &str| sarek_compiler::lower_kernel(&program, name).unwrap();
    let name = device.info().name;

    // (kernel, feature, line of the first use: `let big` / the store converting to float64).
    for (k, feature, line) in [("wide", "shaderInt64", 3), ("double", "shaderFloat64", 8)] {
        let mut a = args(match k {
            "wide" => Column::I32(vec![1; 8]),
            _ => Column::F32(vec![1.0; 8]),
        });
        match device.launch(&kernel(k), LaunchConfig::linear(8), &mut a) {
            Err(RuntimeError::Refused {
                target,
                kernel,
                diagnostics,
            }) => {
                assert_eq!((target, kernel.as_str()), (Target::Glsl, k));
                assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
                let d = &diagnostics[0];
                assert!(
                    sources
                        .location(d.span)
                        .starts_with(&format!("wide.sarek:{line}:")),
                    "{k}: {}",
                    sources.location(d.span)
                );
                // The device and the target in the message, the missing feature in its note.
                let text = format!("{} {}", d.message, d.notes.join(" "));
                for word in [feature, "GLSL", name.as_str()] {
                    assert!(text.contains(word), "{word}: {text}");
                }
            }
            other => panic!("{k}: expected a refusal, got {other:?}"),
        }
    }

    let mut a = args(Column::I32(vec![0; 8]));
    device
        .launch(&kernel("narrow"), LaunchConfig::linear(8), &mut a)
        .unwrap();
    let ArgValue::Vector(v) = &a[0] else {
        unreachable!()
    };
    assert_eq!(v.columns[0], Column::I32((0..8).map(|i| i * 3).collect()));
}
