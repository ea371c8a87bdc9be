//! The compiler recurses on the syntax tree; the wasm default stack (1 MiB) is small for
//! deeply nested kernels, so the module gets 8 MiB, as a native thread has.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg-cdylib=-zstack-size=8388608");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
