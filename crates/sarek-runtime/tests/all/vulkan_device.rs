//! The `vulkan` device itself: opening reports `Unavailable` (never panics) where Vulkan or
//! glslang is missing; launch errors are clear `RuntimeError`s; one compiled module serves
//! several block sizes (the block size is a specialization constant).

use sarek_compiler::SourceMap;
use sarek_runtime::{ArgValue, Backend, Column, HostVector, LaunchConfig, RuntimeError};

const SRC: &str = "let%kernel fill (v : int32 vector) (n : int32) =
  let i = global_thread_id in
  if i < n then v.(i) <- i * 2 + block_dim_x";

fn kernel() -> sarek_compiler::ir::Kernel {
    let mut sources = SourceMap::new();
    let file = sources.add("fill.sarek", SRC);
    let program = sarek_compiler::check(&sources, file).expect("checks");
    sarek_compiler::lower_kernel(&program, "fill").expect("lowers")
}

#[test]
fn open_launch_and_errors() {
    let device = match sarek_runtime::vulkan::open() {
        Ok(d) => d,
        Err(e @ RuntimeError::Unavailable { .. }) => {
            sarek_testkit::backends::unavailable("vulkan", &e.to_string());
            return;
        }
        Err(e) => panic!("open() must succeed or report Unavailable, got: {e}"),
    };
    let info = device.info();
    assert_eq!(info.backend, Backend::Vulkan);
    assert!(!info.name.is_empty());
    let k = kernel();
    let n = 1000usize;
    for block in [64u32, 128, 256] {
        let mut args = vec![
            ArgValue::Vector(HostVector {
                len: n,
                columns: vec![Column::I32(vec![-1; n])],
            }),
            ArgValue::Scalar(sarek_compiler::types::Literal::I32(n as i32)),
        ];
        let config = LaunchConfig {
            grid: [(n as u32).div_ceil(block), 1, 1],
            block: [block, 1, 1],
        };
        let stats = device.launch(&k, config, &mut args).expect("launch");
        assert!(stats.kernel_time <= stats.total_time);
        let ArgValue::Vector(v) = &args[0] else {
            unreachable!()
        };
        let Column::I32(out) = &v.columns[0] else {
            unreachable!()
        };
        for (i, x) in out.iter().enumerate() {
            assert_eq!(
                *x,
                2 * i as i32 + block as i32,
                "block {block}, element {i}"
            );
        }
    }
    let mut too_few = vec![ArgValue::Scalar(sarek_compiler::types::Literal::I32(1))];
    let err = device
        .launch(&k, LaunchConfig::linear(1), &mut too_few)
        .expect_err("wrong arity");
    assert!(matches!(err, RuntimeError::Arguments(_)), "{err}");
    let mut args = vec![
        ArgValue::Vector(HostVector {
            len: 4,
            columns: vec![Column::I32(vec![0; 4])],
        }),
        ArgValue::Scalar(sarek_compiler::types::Literal::I32(4)),
    ];
    let huge = LaunchConfig {
        grid: [1, 1, 1],
        block: [1 << 20, 1, 1],
    };
    let err = device
        .launch(&k, huge, &mut args)
        .expect_err("block too large");
    // Checked before the device sees the launch, against the device's own limit.
    assert!(matches!(err, RuntimeError::Arguments(_)), "{err}");
    assert!(err.to_string().contains("1048576 threads"), "{err}");
}
