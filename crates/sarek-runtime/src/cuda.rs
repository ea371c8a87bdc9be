//! cuda (stub).
