//! Name legalization (seed 000). (Stub.)
