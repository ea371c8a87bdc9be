//! opencl (stub).
