//! Every WGSL name of one generation, decided before any code is written.
//!
//! Module-scope names (entry point, structs, tag constants, `make_*` constructors, storage
//! buffers, helpers and their specialisations) are claimed in a fixed order from one registry;
//! a second claim of a spelling gets `sarek_dup<n>_<name>`. Locals and parameters keep their
//! escaped source name unless it equals a module-scope name (which it would hide for the rest of
//! its scope in WGSL): then they become `sarek_v_<name>`. References are resolved by `VarId`, so a
//! local that shadows a scalar kernel parameter reads itself, never `params.<name>`.
//! Generator-internal names (`sarek_len_*`, `sarek_wg_*`, ...) are minted in final form; see
//! [`super::escape`] for why they cannot meet an escaped source name.

use super::escape::escape;
use super::usage::{Root, Usage};
use crate::ir::{Kernel, Ty, VarId};
use crate::types::Scalar;
use std::collections::{BTreeMap, BTreeSet};

pub(super) struct Names {
    taken: BTreeSet<String>,
    pub entry: String,
    pub records: Vec<String>,
    pub variants: Vec<String>,
    /// Per variant, per constructor: the tag constant and the `make_*` function.
    pub tags: Vec<Vec<String>>,
    pub makes: Vec<Vec<String>>,
    /// Host-shareable copies of records/variants holding a bool (stored as u32), by type.
    pub mirrors: BTreeMap<MirrorKey, String>,
    pub buffers: BTreeMap<VarId, String>,
    pub shared: BTreeMap<VarId, String>,
    /// Parallel to `Usage::specs`.
    pub specs: Vec<String>,
    locals: Vec<String>,
}

/// A record or variant type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum MirrorKey {
    Record(u32),
    Variant(u32),
}

impl MirrorKey {
    pub fn of(ty: &Ty) -> Option<MirrorKey> {
        match ty {
            Ty::Record(id) => Some(MirrorKey::Record(id.0)),
            Ty::Variant(id) => Some(MirrorKey::Variant(id.0)),
            _ => None,
        }
    }
}

/// Whether a value of `ty` contains a bool (which storage buffers cannot hold).
pub(super) fn has_bool(kernel: &Kernel, ty: &Ty) -> bool {
    match ty {
        Ty::Scalar(s) => *s == Scalar::Bool,
        Ty::Record(id) => kernel
            .record(*id)
            .fields
            .iter()
            .any(|f| has_bool(kernel, &f.ty)),
        Ty::Variant(id) => kernel
            .variant(*id)
            .ctors
            .iter()
            .flat_map(|c| &c.fields)
            .any(|t| has_bool(kernel, t)),
        _ => false,
    }
}

impl Names {
    pub fn new(kernel: &Kernel, usage: &Usage) -> Names {
        let mut n = Names {
            taken: BTreeSet::new(),
            entry: String::new(),
            records: Vec::new(),
            variants: Vec::new(),
            tags: Vec::new(),
            makes: Vec::new(),
            mirrors: BTreeMap::new(),
            buffers: BTreeMap::new(),
            shared: BTreeMap::new(),
            specs: Vec::new(),
            locals: Vec::new(),
        };
        n.entry = n.claim(escape(&kernel.name).into_owned());
        for r in &kernel.records {
            let name = n.claim(escape(&r.name).into_owned());
            n.records.push(name);
        }
        for v in &kernel.variants {
            let name = n.claim(escape(&v.name).into_owned());
            let tags = v
                .ctors
                .iter()
                .map(|c| n.claim(format!("TAG_{name}_{}", escape(&c.name))))
                .collect();
            let makes = v
                .ctors
                .iter()
                .map(|c| n.claim(format!("make_{name}_{}", escape(&c.name))))
                .collect();
            n.variants.push(name);
            n.tags.push(tags);
            n.makes.push(makes);
        }
        for &p in &kernel.params {
            if matches!(kernel.var(p).ty, Ty::Vector(_)) {
                let name = n.claim(escape(&kernel.var(p).name).into_owned());
                n.buffers.insert(p, name);
            }
        }
        // Storage buffers of records with bools need host-shareable mirrors, nested ones too.
        let mut todo: Vec<Ty> = n
            .buffers
            .keys()
            .filter_map(|p| kernel.var(*p).ty.elem().cloned())
            .collect();
        while let Some(ty) = todo.pop() {
            let Some(key) = MirrorKey::of(&ty) else {
                continue;
            };
            if !has_bool(kernel, &ty) || n.mirrors.contains_key(&key) {
                continue;
            }
            let base = match key {
                MirrorKey::Record(i) => n.records[i as usize].clone(),
                MirrorKey::Variant(i) => n.variants[i as usize].clone(),
            };
            n.mirrors.insert(key, base);
            match &ty {
                Ty::Record(id) => {
                    todo.extend(kernel.record(*id).fields.iter().map(|f| f.ty.clone()))
                }
                Ty::Variant(id) => todo.extend(
                    kernel
                        .variant(*id)
                        .ctors
                        .iter()
                        .flat_map(|c| c.fields.clone()),
                ),
                _ => {}
            }
        }
        let mut shared_seen = BTreeSet::new();
        for &s in &usage.shared {
            let e = escape(&kernel.var(s).name).into_owned();
            let mut name = format!("sarek_wg_{e}");
            let mut k = 1;
            while !shared_seen.insert(name.clone()) {
                name = format!("sarek_wg{k}_{e}");
                k += 1;
            }
            n.shared.insert(s, name);
        }
        for spec in &usage.specs {
            let name = n.claim(escape(&kernel.function(spec.func).name).into_owned());
            n.specs.push(name);
        }
        n.locals = kernel
            .vars
            .iter()
            .map(|v| {
                let e = escape(&v.name).into_owned();
                if n.taken.contains(&e) {
                    format!("sarek_v_{e}")
                } else {
                    e
                }
            })
            .collect();
        n
    }

    /// Claim a module-scope spelling, minting `sarek_dup<n>_<name>` on a collision.
    fn claim(&mut self, preferred: String) -> String {
        let mut name = preferred.clone();
        let mut k = 1;
        while !self.taken.insert(name.clone()) {
            name = format!("sarek_dup{k}_{preferred}");
            k += 1;
        }
        name
    }

    /// The WGSL name of a local, loop index, pattern variable or helper parameter.
    pub fn local(&self, v: VarId) -> &str {
        &self.locals[v.0 as usize]
    }

    /// The module-scope variable of a buffer or shared array (`None` for a local array).
    pub fn root_global(&self, root: Root) -> Option<&str> {
        match root {
            Root::Buffer(v) => self.buffers.get(&v).map(String::as_str),
            Root::Shared(v) => self.shared.get(&v).map(String::as_str),
            Root::Local(_) => None,
        }
    }

    /// The storage (host-shareable) struct name of a record/variant with bools.
    pub fn mirror(&self, ty: &Ty) -> Option<String> {
        MirrorKey::of(ty)
            .and_then(|k| self.mirrors.get(&k))
            .map(|b| format!("sarek_st_{b}"))
    }

    pub fn ty_name(&self, ty: &Ty) -> Option<&str> {
        match ty {
            Ty::Record(id) => Some(&self.records[id.0 as usize]),
            Ty::Variant(id) => Some(&self.variants[id.0 as usize]),
            _ => None,
        }
    }
}
