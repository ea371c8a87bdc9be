//! wgpu_backend (stub).
