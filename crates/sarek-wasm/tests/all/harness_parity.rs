//! The ported `sarek run` conventions (`sarek_wasm::harness`) against the runtime's own
//! (`sarek_runtime::harness`): the same arguments for every corpus launch and for every
//! element type, under several seeds and sizes, and the same argument errors.

use crate::support;

use sarek_compiler::SourceMap;
use sarek_compiler::ir::Kernel;
use sarek_compiler::types::Literal;
use sarek_runtime::harness as reference;
use sarek_wasm::harness as port;

fn lower_all(name: &str, text: &str) -> Vec<Kernel> {
    let mut sources = SourceMap::new();
    let file = sources.add(name, text);
    let program = sarek_compiler::check(&sources, file).expect("the source checks");
    program
        .kernels
        .iter()
        .map(|k| sarek_compiler::lower_kernel(&program, &k.name).unwrap())
        .collect()
}

/// Literals compared by bits, so -0.0 and NaN payloads count.
fn same(a: &Literal, b: &Literal) -> bool {
    match (a, b) {
        (Literal::F32(x), Literal::F32(y)) => x.to_bits() == y.to_bits(),
        (Literal::F64(x), Literal::F64(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

fn assert_same_args(what: &str, ours: &[port::ArgValue], theirs: &[sarek_runtime::ArgValue]) {
    assert_eq!(ours.len(), theirs.len(), "{what}: argument count");
    for (k, (a, b)) in ours.iter().zip(theirs).enumerate() {
        match (a, b) {
            (port::ArgValue::Scalar(x), sarek_runtime::ArgValue::Scalar(y)) => {
                assert!(same(x, y), "{what}: argument {k}: {x:?} vs {y:?}")
            }
            (port::ArgValue::Aggregate(x), sarek_runtime::ArgValue::Aggregate(y)) => {
                assert_eq!(x.len(), y.len(), "{what}: argument {k}");
                assert!(
                    x.iter().zip(y).all(|(p, q)| same(p, q)),
                    "{what}: argument {k}"
                );
            }
            (port::ArgValue::Vector(x), sarek_runtime::ArgValue::Vector(y)) => {
                assert_eq!(x.len, y.len, "{what}: argument {k} length");
                assert_eq!(
                    x.columns.len(),
                    y.columns.len(),
                    "{what}: argument {k} leaves"
                );
                for (c, (p, q)) in x.columns.iter().zip(&y.columns).enumerate() {
                    assert_eq!(p.len(), q.len());
                    for i in 0..x.len {
                        assert!(
                            same(&p.get(i), &q.get(i)),
                            "{what}: argument {k}, leaf {c}, element {i}: {:?} vs {:?}",
                            p.get(i),
                            q.get(i)
                        );
                    }
                }
            }
            _ => panic!("{what}: argument {k} is {a:?} here and {b:?} in the runtime"),
        }
    }
}

#[test]
fn every_corpus_launch_gets_the_runtimes_arguments() {
    let mut launches = 0;
    for (name, text) in support::corpus_files() {
        let kernels = lower_all(&name, &text);
        let ours = port::parse_directives(&text).unwrap();
        let theirs = reference::parse_directives(&text).unwrap();
        assert_eq!(ours.len(), theirs.len(), "{name}: directives");
        for (d, r) in ours.iter().zip(&theirs) {
            assert_eq!(
                (&d.kernel, d.size, d.grid, d.block, &d.args, d.line),
                (&r.kernel, r.size, r.grid, r.block, &r.args, r.line),
                "{name}"
            );
            let cfg = d.config();
            let rcfg = r.config();
            assert_eq!((cfg.grid, cfg.block), (rcfg.grid, rcfg.block), "{name}");
            let kernel = kernels.iter().find(|k| k.name == d.kernel).unwrap();
            let a = port::build_args(kernel, d.size, port::DEFAULT_SEED, &d.args, &[], "").unwrap();
            let b = reference::build_args(kernel, &reference::Inputs::from_directive(r)).unwrap();
            assert_same_args(&format!("{name}:{} {}", d.line, d.kernel), &a, &b);
            launches += 1;
        }
    }
    assert!(launches >= 70, "only {launches} corpus launches");
    assert_eq!(port::DEFAULT_SEED, reference::DEFAULT_SEED);
    assert_eq!(port::DEFAULT_SIZE, reference::DEFAULT_SIZE);
}

/// Every scalar type, records (nested), tuples and variants (nested in records, with tuple
/// and record payloads), as vectors and by value.
const ALL_TYPES: &str = "
type point = { x : float32; y : float64 }
type shape = Circle of float32 | Rect of float32 * int64 | Dot of point | Empty
type item = { p : point; s : shape; k : int32; on : bool }

let%kernel all_types (a : int32 vector) (b : int64 vector) (c : float32 vector)
    (d : float64 vector) (e : bool vector) (f : point vector) (g : (int32 * float32) vector)
    (h : shape vector) (i : item vector) (s : shape) (it : item) (n : int32) (flag : bool)
    (big : int64) (w : float64) =
  let t = global_thread_id in
  if t < n && flag then a.(t) <- a.(t) + 1
";

#[test]
fn every_element_type_seed_and_size_matches() {
    let kernel = &lower_all("all_types.sarek", ALL_TYPES)[0];
    let args: Vec<(String, String)> = [
        ("s", "Rect,2.5,-7"),
        ("it", "p=x=1,y=2,s=Dot,3,4,k=6,on=true"),
        ("n", "0x10"),
        ("flag", "false"),
        ("big", "-9000000000L"),
        ("w", "1.5d"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for seed in [0, 1, 42, 12345, u64::MAX] {
        for size in [0, 1, 7, 1000] {
            let a = port::build_args(kernel, size, seed, &args, &[], "").unwrap();
            let mut inputs = reference::Inputs::new(size, seed);
            inputs.args = args.clone();
            let b = reference::build_args(kernel, &inputs).unwrap();
            assert_same_args(&format!("seed {seed}, size {size}"), &a, &b);
        }
    }
}

#[test]
fn argument_errors_read_as_the_clis() {
    let kernel = &lower_all("all_types.sarek", ALL_TYPES)[0];
    let good: Vec<(&str, &str)> = vec![
        ("s", "Empty"),
        ("it", "1,2,Empty,3,true"),
        ("n", "1"),
        ("flag", "true"),
        ("big", "1"),
        ("w", "1"),
    ];
    let cases: Vec<Vec<(&str, &str)>> = vec![
        good[1..].to_vec(),                                        // missing aggregate
        good.iter().copied().filter(|(k, _)| *k != "n").collect(), // missing scalar
        [good.clone(), vec![("nn", "1")]].concat(),                // unknown, with a suggestion
        [good.clone(), vec![("n", "2")]].concat(),                 // given twice
        [good.clone(), vec![("a", "2")]].concat(),                 // a vector
        vec![("n", "1.5")],                                        // not an int32
        vec![("s", "Rectt,1,2")],                                  // unknown constructor
        vec![("s", "Rect,1")],                                     // too few payload values
        vec![("s", "9,0,0,0,0,0,0")],                              // tag out of range
        vec![("it", "p=x=1,y=2,s=Empty,k=1,oops=true")],           // unknown field
        vec![("flag", "yes")],
        vec![("big", "0x")],
    ];
    for case in cases {
        let args: Vec<(String, String)> = case
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let ours = port::build_args(kernel, 4, 42, &args, &[], "--arg ").unwrap_err();
        let mut inputs = reference::Inputs::new(4, 42);
        inputs.args = args.clone();
        inputs.arg_hint = "--arg ";
        let theirs = reference::build_args(kernel, &inputs)
            .unwrap_err()
            .to_string();
        if ours.contains("is a vector") {
            // The runtime adds how the CLI reads a vector from a file, which the page cannot.
            assert!(
                theirs.starts_with(&ours[..ours.find(';').unwrap()]),
                "{ours} / {theirs}"
            );
        } else {
            assert_eq!(ours, theirs, "{case:?}");
        }
    }
}

#[test]
fn typed_vectors_are_used_as_given_files_are() {
    let text = std::fs::read_to_string(support::corpus().join("saxpy.sarek")).unwrap();
    let kernels = lower_all("saxpy.sarek", &text);
    let kernel = kernels.iter().find(|k| k.name == "saxpy").unwrap();
    let x = port::typed_vector(kernel, "x", "1, 2.5 -3e-1,16f").unwrap();
    assert_eq!(x.len, 4);
    assert_eq!(
        x.columns,
        vec![port::Column::F32(vec![1.0, 2.5, -0.3, 16.0])]
    );
    let args: Vec<(String, String)> = vec![("a".into(), "2".into()), ("n".into(), "4".into())];
    let ours = port::build_args(kernel, 4, 42, &args, &[("x".into(), x.clone())], "").unwrap();
    let mut inputs = reference::Inputs::new(4, 42);
    inputs.args = args;
    inputs.vectors = vec![(
        "x".into(),
        sarek_runtime::HostVector {
            len: 4,
            columns: vec![sarek_runtime::Column::F32(vec![1.0, 2.5, -0.3, 16.0])],
        },
    )];
    let theirs = reference::build_args(kernel, &inputs).unwrap();
    assert_same_args("typed x", &ours, &theirs);
    assert_eq!(
        port::typed_vector(kernel, "x", "1,oops").unwrap_err(),
        "vector `x`, element 1: `oops` is not a float32"
    );
    assert_eq!(
        port::typed_vector(kernel, "a", "1").unwrap_err(),
        "parameter `a` is not a vector (float32)"
    );
    let e = port::build_args(kernel, 4, 42, &[], &[("n".into(), x)], "").unwrap_err();
    assert_eq!(
        e,
        "parameter `n` is not a vector (int32); give it as n=VALUE"
    );
    let records = std::fs::read_to_string(support::corpus().join("records.sarek")).unwrap();
    let k = &lower_all("records.sarek", &records)[0];
    assert!(
        port::typed_vector(k, "pts", "1,2")
            .unwrap_err()
            .contains("only vectors of scalars take typed values")
    );
}
