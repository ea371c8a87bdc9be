pub mod files;
pub mod ir_kernels;
pub mod validate;
