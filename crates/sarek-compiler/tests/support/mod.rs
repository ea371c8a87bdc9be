pub mod ir_kernels;
pub mod validate;
