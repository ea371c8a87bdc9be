//! npy (stub).
