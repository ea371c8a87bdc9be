//! Calls into driver and shader-compiler libraries that may panic (naga inside wgpu, driver
//! loaders): a panic there is that library's bug, reported as an error of the call, not a crash.
//!
//! [`guard`] catches the panic and keeps a per-thread count of guarded calls in progress, so a
//! process-wide panic hook can stay quiet for panics that are caught and reported
//! ([`inside_guard`]; the `sarek` command's hook does this).

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Whether the current thread is inside [`guard`]: a panic now will be caught and returned.
pub fn inside_guard() -> bool {
    DEPTH.with(|d| d.get() > 0)
}

/// Run `f`, turning a panic into `Err` with its message.
pub fn guard<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    struct Leave;
    impl Drop for Leave {
        fn drop(&mut self) {
            DEPTH.with(|d| d.set(d.get() - 1));
        }
    }
    DEPTH.with(|d| d.set(d.get() + 1));
    let _leave = Leave;
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_its_message_and_the_depth_is_restored() {
        assert!(!inside_guard());
        assert_eq!(guard(inside_guard), Ok(true));
        let quiet = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let caught = guard(|| -> u32 { panic!("Expression [7] is not cached!") });
        std::panic::set_hook(quiet);
        assert_eq!(caught, Err("Expression [7] is not cached!".to_string()));
        assert!(!inside_guard());
    }
}
