//! What the compiler's tests share beyond `sarek_testkit`: the validation cases and their
//! refusal checks, the generated-output files, and the parser tests' S-expression printer.

pub mod outputs;
pub mod sexp;
pub mod validate;
