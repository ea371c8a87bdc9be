//! The compiler's integration tests, one binary (one link step): a module per concern.

mod support;

mod convergence_accepts;
mod cuda_validate;
mod errors;
mod fusion;
mod glsl_corpus;
mod hip_validate;
mod ir_legalize;
mod ir_validate;
mod legalize_cases;
mod legalize_props;
mod lower_corpus;
mod lower_details;
mod lower_handbuilt;
mod lower_interp;
mod metal_validate;
mod opencl_validate;
mod opt_interp;
mod outputs;
mod parse_corpus;
mod parse_exprs;
mod parse_items;
mod parse_layout;
mod parse_robustness;
mod ptx_ptxas;
mod recursion_interp;
mod reliability;
mod reserved_wgsl;
mod typer_corpus;
mod typer_infer;
mod typer_ocaml_forms;
mod typer_robustness;
mod upstream_forms;
mod wgsl_corpus;
mod wgsl_gen;
