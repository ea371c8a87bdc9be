//! The browser module's integration tests, one binary: a module per concern.

mod support;

mod api;
