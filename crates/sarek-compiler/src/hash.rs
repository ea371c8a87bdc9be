//! A fast hasher for the compiler's own tables (names, variable ids).
//!
//! The standard `HashMap` hashes with SipHash, which resists collision attacks at several
//! times the cost; the compiler's keys are short names and small integers, and a source file
//! that made its own names collide would only slow its own compilation. This is the
//! multiply-rotate hash rustc and naga use for the same purpose ("FxHash").

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` hashed by [`FxHasher`].
pub type FxHashMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
/// A `HashSet` hashed by [`FxHasher`].
pub type FxHashSet<T> = HashSet<T, BuildHasherDefault<FxHasher>>;

/// One 64-bit word of state, mixed by a rotation, an xor and a multiplication per word.
#[derive(Clone, Copy, Default)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_hash_alike_and_tables_work() {
        let mut names: FxHashSet<String> = FxHashSet::default();
        for i in 0..1000 {
            names.insert(format!("v_{i}"));
        }
        assert_eq!(names.len(), 1000);
        assert!(names.contains("v_999") && !names.contains("v_1000"));
        // Lengths that are and are not multiples of the word size.
        let mut a = FxHasher::default();
        a.write(b"abcdefghij");
        let mut b = FxHasher::default();
        b.write(b"abcdefghij");
        assert_eq!(a.finish(), b.finish());
        let mut c = FxHasher::default();
        c.write(b"abcdefghik");
        assert_ne!(a.finish(), c.finish());
    }
}
