//! What `sarek run`/`verify`/`bench`, the tests and the browser playground agree on about
//! running a kernel, kept out of the runtime (which launches what it is given):
//!
//! - [`directive`]: the `(* @run ... *)` comments of corpus files and the launch they mean;
//! - [`value`]: the `--arg NAME=VALUE` grammar for scalars and by-value aggregates;
//! - [`inputs`]: deterministic seeded vectors and a kernel's arguments from what was given;
//! - [`compare`]: when two runs agree ([`Tolerance`]);
//! - [`corpus`] (feature `devices`): every directive of a folder on a backend against
//!   `interp`.
//!
//! Everything but [`corpus`] depends on the compiler alone, so the wasm module shares it.

pub mod compare;
#[cfg(feature = "devices")]
pub mod corpus;
pub mod directive;
pub mod inputs;
pub mod value;

#[cfg(test)]
mod tests;

pub use compare::{
    Mismatch, Tolerance, VectorComparison, compare_args, compare_vectors, ulps_f32, ulps_f64,
};
#[cfg(feature = "devices")]
pub use corpus::{
    CorpusEntry, CorpusReport, Outcome, check_corpus_against_interp, render_error, required, run,
};
pub use directive::{
    DEFAULT_SEED, DEFAULT_SIZE, Directive, launch_config, parse_dims, parse_directives,
};
pub use inputs::{ArgumentError, Inputs, Rng, build_args, seeded_vector};
pub use sarek_compiler::host::{Param, ParamKind, signature, type_name};
pub use value::{parse_scalar, parse_value, value_syntax};
