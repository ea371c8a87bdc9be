//! The textual IR printer (`sarek compile --target ir`). (Stub.)

use crate::ir::Kernel;

pub fn print_kernel(kernel: &Kernel) -> String {
    format!("kernel {} (printer not implemented)\n", kernel.name)
}
