//! The locals in scope while checking one item, innermost last, with an index by name past
//! the first [`SCANNED`]: a lookup there follows the chain of locals whose names hash alike
//! instead of scanning every local (a chain of thousands of `let`s made the scan quadratic).
//! The first locals, all that most kernels have, are scanned: cheaper than hashing.

use super::Local;
use crate::hash::{FxHashMap as HashMap, FxHasher};
use std::hash::Hasher;
use std::ops::Deref;

/// How many of the outermost locals are found by a scan, not through the index.
const SCANNED: usize = 32;

#[derive(Default)]
pub(super) struct Scope {
    locals: Vec<Local>,
    /// Per local from [`SCANNED`] on: its name's hash and the next outer indexed local with
    /// that hash.
    links: Vec<(u64, Option<usize>)>,
    /// Per name hash, the innermost local with it.
    innermost: HashMap<u64, usize>,
}

fn name_hash(name: &str) -> u64 {
    let mut h = FxHasher::default();
    h.write(name.as_bytes());
    h.finish()
}

impl Scope {
    pub(super) fn push(&mut self, local: Local) {
        if self.locals.len() >= SCANNED {
            let hash = name_hash(&local.name);
            let outer = self.innermost.insert(hash, self.locals.len());
            self.links.push((hash, outer));
        }
        self.locals.push(local);
    }

    /// Drop the locals from `len` on (the scopes that declared them ended).
    pub(super) fn truncate(&mut self, len: usize) {
        while self.locals.len() > len.max(SCANNED) {
            self.locals.pop();
            let (hash, outer) = self.links.pop().expect("one link per indexed local");
            match outer {
                Some(i) => self.innermost.insert(hash, i),
                None => self.innermost.remove(&hash),
            };
        }
        self.locals.truncate(len);
    }

    pub(super) fn clear(&mut self) {
        self.truncate(0);
    }

    /// Index of the innermost local called `name`.
    pub(super) fn find(&self, name: &str) -> Option<usize> {
        if self.locals.len() > SCANNED {
            let hash = name_hash(name);
            let mut at = self.innermost.get(&hash).copied();
            while let Some(i) = at {
                if self.locals[i].name == name {
                    return Some(i);
                }
                at = self.links[i - SCANNED].1;
            }
        }
        let scanned = &self.locals[..self.locals.len().min(SCANNED)];
        scanned.iter().rposition(|l| l.name == name)
    }
}

impl Deref for Scope {
    type Target = [Local];

    fn deref(&self) -> &[Local] {
        &self.locals
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;
    use crate::front::tast::{Ty, VarId};
    use crate::front::typer::LocalKind;

    fn local(name: &str, id: u32) -> Local {
        Local {
            name: name.into(),
            id: VarId(id),
            ty: Ty::Unit,
            mutable: false,
            kind: LocalKind::Let,
            span: Span::DUMMY,
        }
    }

    /// Pushes and truncations in a fixed pseudo-random order: every lookup agrees with a
    /// scan from the innermost local out.
    #[test]
    fn lookups_agree_with_a_scan() {
        let names = ["x", "y", "x'", "acc", "i", "_t", "y"];
        let mut scope = Scope::default();
        let mut state = 0x2545_f491_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut longest = 0;
        for step in 0..5_000u32 {
            let r = next();
            let len = scope.len();
            if r % 200 == 0 {
                // Back to any depth, the index's start included.
                scope.truncate((r / 200) as usize % (len + 1));
            } else if r % 5 == 0 {
                // A few scopes end.
                scope.truncate(len.saturating_sub((r / 5) as usize % 8));
            } else {
                scope.push(local(names[(r >> 8) as usize % names.len()], step));
            }
            for name in names.iter().chain(&["z"]) {
                let scanned = scope.iter().rposition(|l| l.name == *name);
                assert_eq!(scope.find(name), scanned, "{name} at step {step}");
            }
            longest = longest.max(scope.len());
        }
        assert!(longest > 2 * SCANNED, "the index is exercised: {longest}");
        scope.clear();
        assert!(scope.is_empty() && scope.find("x").is_none());
    }
}
