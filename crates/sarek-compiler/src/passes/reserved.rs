//! Reserved-word tables per target. (Stub.)
