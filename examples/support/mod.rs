//! What the examples share.

/// Keep Mesa's Vulkan device-select layer quiet when there is no Wayland session.
///
/// Opening the default device probes Vulkan (through `ash` and `wgpu`); without
/// `XDG_RUNTIME_DIR` (CI, servers, containers) the layer makes libwayland print
/// `error: XDG_RUNTIME_DIR is invalid or not set in the environment.` for every probe,
/// which reads like a failure. `NODEVICE_SELECT=1` skips the layer; the runtime library
/// cannot set it itself (changing the environment is unsound once threads exist), so a
/// program does it first thing in `main`. See docs/backends.md.
pub fn quiet_vulkan_layers() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none()
        && std::env::var_os("NODEVICE_SELECT").is_none()
    {
        // SAFETY: called first thing in `main`, before this program starts any thread.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}
