//! The front end: source text to a checked, monomorphic, typed program.

pub mod ast;
pub mod convergence;
pub mod lexer;
pub mod modules;
pub mod mono;
pub mod name;
pub mod parser;
pub mod recursion;
pub mod tast;
pub mod typer;
