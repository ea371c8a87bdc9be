//! Every WGSL name of one generation, decided before any code is written, by the one namer
//! ([`crate::back::names::Namer`]) with WGSL's keywords.
//!
//! Source names are escaped ([`Namer::escape`]). Module-scope names (entry point, structs, tag
//! constants, `make_*` constructors, storage buffers, helpers and their specialisations) are
//! claimed in a fixed order; a second claim of a spelling gets `<spelling>_<k>`. Locals and
//! parameters keep their escaped source name unless it equals a module-scope name (which it
//! would hide for the rest of its scope in WGSL): then they get `<spelling>_<k>` too, clear of
//! every other name. References are resolved by `VarId`, so a local never reads a parameter
//! through a name. Generator-internal names (`sarek_len_*`, `sarek_wg_*`, ...) are minted in
//! final form in the `sarek_` namespace, under stems no reserved word has
//! ([`super::keywords::MINTED_STEMS`]), so they cannot meet an escaped source name.

use super::usage::{Root, Usage};
use crate::back::names::{Namer, is_identifier};
use crate::ir::{Kernel, Ty, VarId};
use crate::passes::specialize_helpers::Specialized;
use crate::types::Scalar;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

pub(super) struct Names<'k> {
    namer: Namer<'k>,
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
    /// Borrowed from the kernel where the spelling is the source name.
    locals: Vec<Cow<'k, str>>,
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

impl<'k> Names<'k> {
    pub fn new(spec: &'k Specialized<'_>, usage: &Usage) -> Names<'k> {
        let kernel: &'k Kernel = &spec.kernel;
        let mut n = Names {
            namer: Namer::new(&super::keywords::KEYWORDS),
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
        n.entry = n.claim(&kernel.name);
        for r in &kernel.records {
            let name = n.claim(&r.name);
            n.records.push(name);
        }
        for v in &kernel.variants {
            let name = n.claim(&v.name);
            let tags = v
                .ctors
                .iter()
                .map(|c| {
                    let spelled = format!("TAG_{name}_{}", n.escape(&c.name));
                    n.namer.unique(spelled)
                })
                .collect();
            let makes = v
                .ctors
                .iter()
                .map(|c| {
                    let spelled = format!("make_{name}_{}", n.escape(&c.name));
                    n.namer.unique(spelled)
                })
                .collect();
            n.variants.push(name);
            n.tags.push(tags);
            n.makes.push(makes);
        }
        for &p in &kernel.params {
            if matches!(kernel.var(p).ty, Ty::Vector(_)) {
                let name = n.claim(spec.var_name(p));
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
            let e = n.escape(spec.var_name(s));
            let mut name = format!("sarek_wg_{e}");
            let mut k = 1;
            while !shared_seen.insert(name.clone()) {
                name = format!("sarek_wg{k}_{e}");
                k += 1;
            }
            n.shared.insert(s, name);
        }
        for copy in &usage.specs {
            let name = n.claim(spec.function_name(copy.func));
            n.specs.push(name);
        }
        // A local spelled like a module-scope name would hide it: it gets a spelling of its
        // own, clear of module-scope names and of every other local.
        let escaped: Vec<Cow<'k, str>> = (0..kernel.vars.len())
            .map(|i| {
                let name = spec.var_name(VarId(i as u32));
                if is_identifier(name) && !n.namer.is_reserved(name) {
                    // What `escape` spells it, not copied.
                    Cow::Borrowed(name)
                } else {
                    Cow::Owned(n.escape(name))
                }
            })
            .collect();
        let hides: Vec<bool> = (0..escaped.len())
            .map(|i| {
                let buffer = n.buffers.contains_key(&VarId(i as u32));
                !buffer && n.namer.is_taken(&escaped[i])
            })
            .collect();
        n.namer.reserve(escaped.len());
        for e in &escaped {
            match e {
                Cow::Borrowed(b) => n.namer.avoid_borrowed(b),
                Cow::Owned(o) => n.namer.avoid(o),
            }
        }
        n.locals = escaped
            .into_iter()
            .zip(hides)
            .map(|(e, hides)| {
                if hides {
                    Cow::Owned(n.namer.unique(e.into_owned()))
                } else {
                    e
                }
            })
            .collect();
        n
    }

    /// The WGSL spelling of a source name ([`Namer::escape`]).
    pub fn escape(&self, name: &str) -> String {
        self.namer.escape(name)
    }

    /// Claim the module-scope spelling of a source name.
    fn claim(&mut self, name: &str) -> String {
        let spelled = self.escape(name);
        self.namer.unique(spelled)
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
