//! vulkan (stub).
