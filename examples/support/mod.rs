//! What the examples share: their `main`, which quiets a noisy Vulkan layer and prints an
//! error as a message (a located diagnostic for kernel faults) rather than its `Debug` form.

use std::error::Error;
use std::process::ExitCode;

/// Run `body` and report its error on stderr, exit status 1.
pub fn main(body: fn() -> Result<(), Box<dyn Error>>) -> ExitCode {
    quiet_vulkan_layers();
    match body() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let msg = e.to_string();
            let msg = msg.trim_end();
            // Rendered diagnostics already start with `error: ...`.
            if msg.starts_with("error") {
                eprintln!("{msg}");
            } else {
                eprintln!("error: {msg}");
            }
            ExitCode::FAILURE
        }
    }
}

/// Keep Mesa's Vulkan device-select layer quiet when there is no Wayland session.
///
/// Opening the default device probes Vulkan (through `ash` and `wgpu`); without
/// `XDG_RUNTIME_DIR` (CI, servers, containers) the layer makes libwayland print
/// `error: XDG_RUNTIME_DIR is invalid or not set in the environment.` for every probe,
/// which reads like a failure. `NODEVICE_SELECT=1` skips the layer; the runtime library
/// cannot set it itself (changing the environment is unsound once threads exist), so a
/// program does it first thing in `main`. See docs/backends.md.
fn quiet_vulkan_layers() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none()
        && std::env::var_os("NODEVICE_SELECT").is_none()
    {
        // SAFETY: called first thing in `main`, before this program starts any thread.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}
