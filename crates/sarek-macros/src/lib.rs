//! proc-macro (stub).
