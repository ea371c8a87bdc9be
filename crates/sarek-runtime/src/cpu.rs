//! cpu (stub).
