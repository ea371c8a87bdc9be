//! `sarek run`'s conventions in the page: the seeded generator, `--arg` values, directives
//! and arguments come from `sarek-harness` (built without its device part, so this crate
//! still depends on the compiler alone), the very code the CLI and the tests use. What is
//! the page's own: vectors typed as text ([`typed_vector`]).

pub use sarek_compiler::host::{ArgValue, Column, HostVector, LaunchConfig, type_name};
pub use sarek_harness::{
    DEFAULT_SEED, DEFAULT_SIZE, Inputs, build_args, launch_config, parse_dims, parse_directives,
    parse_scalar, value_syntax,
};

use sarek_compiler::ir::{Kernel, Ty};

/// A vector of scalars typed as text: its values separated by commas or white space, each
/// read as [`parse_scalar`] reads a scalar argument. Vectors of records, tuples and variants
/// are generated only (their `.npy` columns have no one-line spelling).
pub fn typed_vector(kernel: &Kernel, name: &str, text: &str) -> Result<HostVector, String> {
    let Some(&p) = kernel.params.iter().find(|&&p| kernel.var(p).name == name) else {
        return Err(format!(
            "kernel `{}` has no parameter `{name}`",
            kernel.name
        ));
    };
    let ty = &kernel.var(p).ty;
    let Ty::Vector(elem) = ty else {
        return Err(format!(
            "parameter `{name}` is not a vector ({})",
            type_name(kernel, ty)
        ));
    };
    let Ty::Scalar(scalar) = **elem else {
        return Err(format!(
            "vector `{name}` ({}): only vectors of scalars take typed values; this one is generated",
            type_name(kernel, ty)
        ));
    };
    let words: Vec<&str> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect();
    let mut column = Column::zeros(scalar, words.len());
    for (i, w) in words.iter().enumerate() {
        let v =
            parse_scalar(w, scalar).map_err(|e| format!("vector `{name}`, element {i}: {e}"))?;
        column.set(i, v);
    }
    Ok(HostVector {
        len: words.len(),
        columns: vec![column],
    })
}
