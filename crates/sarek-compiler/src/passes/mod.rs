//! IR-to-IR passes run per target before a generator.

pub mod constfold;
pub mod legalize;
pub mod opt;
pub mod reserved;
