//! Stack growth for the passes that recurse through helper calls.
//!
//! Expressions are at most `parser::MAX_DEPTH` deep, but a pass that follows calls (lowering a
//! callee on first use, analysing a callee per call) nests once per helper of a call chain,
//! and chains of thousands of helpers are valid programs. Those passes (and the interpreter)
//! cross each call through [`grow`], which continues on a heap-allocated segment when the
//! current stack runs low, so the result never depends on the caller's stack size.

/// Grow the stack when less than this is left: more than one helper body (an expression at
/// most `MAX_DEPTH` deep) needs, even with a debug build's large frames.
const RED_ZONE: usize = 1024 * 1024;
/// Size of each additional stack segment.
const SEGMENT: usize = 8 * 1024 * 1024;

/// Run `f`, on a fresh stack segment if the current one is nearly used up.
pub fn grow<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}

/// The stack one run of the front end may use: a `let` chain or operator chain of up to
/// `parser::MAX_CHAIN` links nests every pass over the syntax tree (typing, the rewrites
/// before it, lowering, and the derived `Clone`/`Drop` of the tree) that deep, at a few
/// kilobytes a link in a debug build. Reserved, not committed: pages are touched only as
/// deep as the program goes.
#[cfg(not(target_arch = "wasm32"))]
const DEEP_STACK: usize = 1 << 30;
/// Below this much stack left, [`deep`] switches to a segment of [`DEEP_STACK`]; inside one,
/// nested calls continue on it.
#[cfg(not(target_arch = "wasm32"))]
const DEEP_RED_ZONE: usize = 512 << 20;

/// Run `f` (a whole front-end pass over a program) on a stack of [`DEEP_STACK`] bytes, so
/// that no program within the parser's limits can overflow it, whatever the caller's stack.
#[cfg(not(target_arch = "wasm32"))]
pub fn deep<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(DEEP_RED_ZONE, DEEP_STACK, f)
}

/// [`deep`] for a tree taller than the caller's stack is assumed to hold (`tall`), else
/// `f` in place: a fresh segment costs tens of microseconds, more than a whole small kernel's
/// front end, so programs without long chains or deep nesting never pay for it.
pub fn deep_if<R>(tall: bool, f: impl FnOnce() -> R) -> R {
    if tall { deep(f) } else { f() }
}

/// On wasm a stack segment is a heap allocation of its whole size: run on the caller's stack.
#[cfg(target_arch = "wasm32")]
pub fn deep<R>(f: impl FnOnce() -> R) -> R {
    f()
}
