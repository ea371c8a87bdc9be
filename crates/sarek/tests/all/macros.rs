//! The compile-time checked kernel macros: a kernel accepted while this test compiled runs.
//! (The refusal side is the `compile_fail` doc test on `sarek::kernel_source!` and the unit
//! test of the rendered message in sarek-macros.)

use sarek::{Program, Vector};

const INLINE: &str = sarek::kernel_source!(
    "let%kernel fill (v : int32 vector) (k : int32) =
       let i = global_thread_id in
       if i < length v then v.(i) <- i * k"
);

const FILE: &str = sarek::include_kernel!("../../examples/kernels/vector_add.sarek");

sarek::kernel_module!(
    /// Attributes before `mod` go on the generated module.
    #[allow(dead_code)]
    mod matmul = "../../examples/kernels/matmul.sarek"
);

// A Sarek source in a raw string: checked like a file.
const RAW: &str = sarek::kernel_source!(
    r#"let%kernel negate (v : float64 vector) =
         let i = global_thread_id in
         if i < length v then v.(i) <- -. v.(i)"#
);

#[test]
fn checked_sources_compile_and_run() {
    let program = Program::compile("inline.sarek", INLINE).unwrap();
    let fill = program.kernel("fill").unwrap();
    let device = sarek::open(sarek::Backend::Interp).unwrap();
    let mut v = Vector::filled(0i32, 10);
    fill.launch()
        .arg(&mut v)
        .scalar(3i32)
        .run(&*device)
        .unwrap();
    assert_eq!(v.to_vec(), (0..10).map(|i| i * 3).collect::<Vec<_>>());
    assert_eq!(v.last_device(), Some(sarek::Backend::Interp));

    assert!(FILE.contains("let%kernel vector_add"));
    let negate = Program::compile("raw.sarek", RAW)
        .unwrap()
        .kernel("negate")
        .unwrap();
    let mut w = Vector::from_vec(vec![1.5f64, -2.0]);
    negate.launch().arg(&mut w).run(&*device).unwrap();
    assert_eq!(w.to_vec(), [-1.5, 2.0]);
    assert_eq!(
        Program::compile("vector_add.sarek", FILE)
            .unwrap()
            .kernel_names(),
        ["vector_add"]
    );
}

#[test]
fn launch_checks_arguments_against_the_signature() {
    let program = Program::compile("inline.sarek", INLINE).unwrap();
    let fill = program.kernel("fill").unwrap();
    let device = sarek::open(sarek::Backend::Interp).unwrap();
    let mut v = Vector::filled(0i32, 4);
    let e = fill
        .launch()
        .arg(&mut v)
        .scalar(3.0f32)
        .run(&*device)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "parameter `k` has type int32, but float32 was given"
    );
    let e = fill.launch().arg(&mut v).run(&*device).unwrap_err();
    assert_eq!(e.to_string(), "kernel `fill` takes 2 arguments, 1 given");
    let mut wrong = Vector::filled(0.0f32, 4);
    let e = fill
        .launch()
        .arg(&mut wrong)
        .scalar(1i32)
        .run(&*device)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("parameter `v` has type int32 vector"),
        "{e}"
    );
    // The vector is handed back even when the launch is refused.
    assert_eq!(v.len(), 4);
}

#[test]
fn typed_launchers_take_rust_types() {
    let program = matmul::program().unwrap();
    assert_eq!(matmul::PATH, "../../examples/kernels/matmul.sarek");
    let kernel = program.kernel("matmul").unwrap();
    let device = sarek::open(sarek::Backend::Interp).unwrap();
    // 2x2 integers: exact in float32. [[1,2],[3,4]] * [[5,6],[7,8]] = [[19,22],[43,50]].
    let mut a = Vector::from_vec(vec![1.0f32, 2.0, 3.0, 4.0]);
    let mut b = Vector::from_vec(vec![5.0f32, 6.0, 7.0, 8.0]);
    let mut c = Vector::filled(0.0f32, 4);
    let config = sarek::LaunchConfig {
        grid: [1, 1, 1],
        block: [16, 16, 1],
    };
    matmul::matmul(&kernel, &mut a, &mut b, &mut c, 2)
        .config(config)
        .run(&*device)
        .unwrap();
    assert_eq!(c.to_vec(), vec![19.0, 22.0, 43.0, 50.0]);
}

// A program of two files: `Geometry_lib` is the second file (tests/upstream/modules/).
sarek::kernel_module!(
    mod geometry = "../../tests/upstream/modules/uses_geometry.sarek",
    modules = ["../../tests/upstream/modules/geometry_lib.sarek"]
);

const WITH_MODULES: &str = sarek::include_kernel!(
    "../../tests/upstream/modules/uses_geometry.sarek",
    modules = ["../../tests/upstream/modules/geometry_lib.sarek"],
);

#[test]
fn module_files_are_checked_and_compiled_with_the_program() {
    assert_eq!(WITH_MODULES, geometry::SOURCE);
    assert!(WITH_MODULES.contains("Geometry_lib.dist2"));
    assert_eq!(geometry::MODULES.len(), 1);
    assert_eq!(
        geometry::MODULES[0].0,
        "../../tests/upstream/modules/geometry_lib.sarek"
    );
    assert!(geometry::MODULES[0].1.contains("let dist2"));
    // Alone, the file does not compile: `program()` brings its module.
    assert!(sarek::Program::compile(geometry::PATH, geometry::SOURCE).is_err());
    let program = geometry::program().unwrap();
    assert_eq!(program.kernel_names(), ["nearest", "opened"]);
    let device = sarek::open(sarek::Backend::Interp).unwrap();
    // Points (i, 2 - i) with small integer coordinates: every sum is exact in float32.
    let n = 5usize;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let ys: Vec<f32> = (0..n).map(|i| 2.0 - i as f32).collect();
    let points = sarek::HostVector {
        len: n,
        columns: vec![
            sarek::Column::F32(xs.clone()),
            sarek::Column::F32(ys.clone()),
        ],
    };
    let config = sarek::LaunchConfig {
        grid: [1, 1, 1],
        block: [n as u32, 1, 1],
    };
    // nearest: |p|^2 + unit_len (1) + Local.shift (float32 (sq 2)) (4.5).
    let nearest = program.kernel("nearest").unwrap();
    let mut out = Vector::filled(0.0f32, n);
    geometry::nearest(&nearest, &mut points.clone(), &mut out, n as i32)
        .config(config)
        .run(&*device)
        .unwrap();
    let expected: Vec<f32> = (0..n)
        .map(|i| xs[i] * xs[i] + ys[i] * ys[i] + 5.5)
        .collect();
    assert_eq!(out.to_vec(), expected);
    // opened: twice (dist2 p_i p_(i+1 mod n)).
    let opened = program.kernel("opened").unwrap();
    let mut out = Vector::filled(0.0f32, n);
    geometry::opened(&opened, &mut points.clone(), &mut out, n as i32)
        .config(config)
        .run(&*device)
        .unwrap();
    let expected: Vec<f32> = (0..n)
        .map(|i| {
            let j = (i + 1) % n;
            2.0 * ((xs[i] - xs[j]).powi(2) + (ys[i] - ys[j]).powi(2))
        })
        .collect();
    assert_eq!(out.to_vec(), expected);
}

sarek::kernel_module!(mod names = "tests/kernels/hostile_names.sarek");

#[test]
fn launchers_of_kernels_named_like_rust_keywords_take_every_parameter() {
    let program = names::program().unwrap();
    let device = sarek::open(sarek::Backend::Interp).unwrap();
    type Launcher = dyn for<'a> Fn(&'a sarek::Kernel, &'a mut Vector<i32>) -> sarek::Launch<'a>;
    let run = |kernel: &str, launch: &Launcher| {
        let k = program.kernel(kernel).unwrap();
        let mut v = Vector::filled(0i32, 2);
        launch(&k, &mut v).run(&*device).unwrap();
        v.to_vec()
    };
    // Parameters `x'`, `x_prime`, `kernel`, `kernel_`: each its own Rust parameter, in order.
    assert_eq!(
        run("gen", &|k, v| names::r#gen(k, v, 1, 2, 3, 4)),
        [4321; 2]
    );
    assert_eq!(
        run("fn", &|k, v| names::r#fn(k, v, 1, 2, 3, 4, 5)),
        [54321; 2]
    );
    assert_eq!(
        run("async", &|k, v| names::r#async(
            k, v, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
        )),
        [55; 2]
    );
    assert_eq!(run("k'", &|k, v| names::k_prime(k, v)), [1, 0]);
    assert_eq!(run("k_prime'", &|k, v| names::k_prime_prime(k, v)), [2, 0]);
}
