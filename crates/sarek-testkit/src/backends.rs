//! The one backend-required policy. `SAREK_REQUIRE_BACKENDS` is a comma list of backend or
//! tool names (`wgpu`, `vulkan`, `opencl`, `cuda`, `ptx`, `metal`, ... or `all`); a test that
//! finds a named one absent fails, any other absence is a printed skip. `scripts/test.sh`
//! requires the runtimes CI installs, so a broken install cannot pass as a skip.

/// Whether `SAREK_REQUIRE_BACKENDS` names `backend` (or `all`).
pub fn required(backend: &str) -> bool {
    std::env::var("SAREK_REQUIRE_BACKENDS").is_ok_and(|v| {
        v.split(',')
            .any(|b| b.trim() == backend || b.trim() == "all")
    })
}

/// Report that `backend` is unavailable for `reason`: a printed skip, or a panic when it
/// is required. The caller returns (skips) after it.
///
/// # Panics
/// When [`required`] names `backend`.
pub fn unavailable(backend: &str, reason: &str) {
    assert!(
        !required(backend),
        "{backend} is required (SAREK_REQUIRE_BACKENDS) but unavailable: {reason}"
    );
    eprintln!("skipping {backend}: {reason}");
}
