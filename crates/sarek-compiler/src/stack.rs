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
