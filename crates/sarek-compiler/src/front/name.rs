//! Source names shared by every node that mentions them.
//!
//! A kernel mentions each of its names many times (every use of a variable is an
//! identifier), and the front end copies names from the syntax tree into the typed tree and
//! its scopes. A [`Name`] is a reference-counted string: copying one is a count increment,
//! never an allocation. The parser interns the names of one file in a table of its own
//! ([`Interner`]), so each distinct spelling is allocated once per parse; there is no table
//! shared between compilations.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::rc::Rc;

use crate::hash::FxHashMap;

/// An identifier's text, cheap to clone; compares, hashes and prints as its text.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(Rc<str>);

impl Name {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Name {
        Name(Rc::from(s))
    }
}

impl From<String> for Name {
    fn from(s: String) -> Name {
        Name(Rc::from(s))
    }
}

impl From<&Name> for Name {
    fn from(n: &Name) -> Name {
        n.clone()
    }
}

impl From<&Name> for String {
    fn from(n: &Name) -> String {
        n.0.to_string()
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        **self == *other.0
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        **self == *other.0
    }
}

/// One parse's table of names: the first occurrence of a spelling allocates it, later ones
/// share it.
#[derive(Default)]
pub struct Interner<'src> {
    names: FxHashMap<&'src str, Name>,
}

impl<'src> Interner<'src> {
    pub fn intern(&mut self, text: &'src str) -> Name {
        self.names
            .entry(text)
            .or_insert_with(|| Name::from(text))
            .clone()
    }
}
