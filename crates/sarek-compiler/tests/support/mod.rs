pub mod ir_kernels;
