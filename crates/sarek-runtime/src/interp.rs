//! interp (stub).
