//! The `cuda` backend without a GPU: `open` reports unavailability instead of failing, and
//! the on-disk module cache serves a second compile of the same kernel without NVRTC.

use sarek_testkit::ir_kernels;

use sarek_compiler::TargetOptions;
use sarek_compiler::back::cfamily::{Dialect, generate};
use sarek_runtime::RuntimeError;
use sarek_runtime::cuda::nvrtc;

#[test]
fn open_without_a_gpu_is_unavailable_or_works() {
    match sarek_runtime::cuda::open() {
        Ok(d) => eprintln!("CUDA device: {}", d.info().name),
        Err(RuntimeError::Unavailable { reason, .. }) => {
            assert!(!reason.is_empty());
            eprintln!("cuda unavailable: {reason}");
        }
        Err(e) => panic!("open must report unavailability, not {e}"),
    }
}

#[test]
fn second_compile_comes_from_the_disk_cache() {
    if let Err(reason) = nvrtc::load() {
        return sarek_testkit::backends::unavailable("cuda", &reason);
    }
    let version = nvrtc::version().unwrap();
    let dir = std::env::temp_dir().join(format!("sarek-cuda-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cache = nvrtc::ModuleCache::at(&dir);
    let source = generate(
        &ir_kernels::saxpy(),
        Dialect::Cuda,
        &TargetOptions::default(),
    )
    .unwrap()
    .source;
    let calls = std::cell::Cell::new(0);
    let counting = |src: &str, arch: u32| {
        calls.set(calls.get() + 1);
        nvrtc::compile(src, arch)
    };
    let first = cache
        .get_or_compile(&source, 90, 13000, version, counting)
        .unwrap();
    assert!(!first.from_cache);
    assert!(
        first.image.starts_with(b"\x7fELF"),
        "NVRTC returned a CUBIN (ELF) image"
    );
    let second = cache
        .get_or_compile(&source, 90, 13000, version, counting)
        .unwrap();
    assert!(second.from_cache);
    assert_eq!(second.image, first.image);
    assert_eq!(calls.get(), 1, "the second run skipped NVRTC");
    // Another driver version or architecture is another key.
    let other = cache
        .get_or_compile(&source, 90, 13010, version, counting)
        .unwrap();
    assert!(!other.from_cache);
    assert_eq!(calls.get(), 2);
    // Compile errors carry NVRTC's log.
    let bad = cache.get_or_compile(
        "__global__ void k() { undeclared(); }",
        90,
        13000,
        version,
        nvrtc::compile,
    );
    match bad {
        Err(RuntimeError::Compile(log)) => assert!(log.contains("undeclared"), "{log}"),
        other => panic!("expected a compile error, got {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
