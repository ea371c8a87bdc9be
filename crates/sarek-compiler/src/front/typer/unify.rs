//! Inference variables, their constraints and unification.
//!
//! While an item is being checked, types are ordinary [`Ty`] values in which an inference
//! variable is encoded as `Ty::Param(VAR_BASE + n)` and the error type as
//! `Ty::Param(ERROR_PARAM)`. Real type parameters (`Ty::Param(i)` with small `i`) only appear
//! in generalised helper signatures and in the final typed output. The encoding lets the typer
//! build the typed AST directly; [`Subst::zonk`] replaces every variable before an item is
//! emitted, so the encoding never escapes the typer.
//!
//! Besides "any type", a variable may be constrained to a set of scalars (numeric operands,
//! equality operands, float literals) or to a container (something indexable by `.( )` with a
//! known element type). Constraints are what let `let add a b = a + b` or
//! `let eq (a : 'a) b = a = b` stay polymorphic while still refusing `eq p q` on records at the
//! call site.

use std::borrow::Cow;

use crate::diag::Span;
use crate::front::tast::Ty;
use crate::types::Scalar;

pub(super) const VAR_BASE: u32 = 1 << 30;
pub(super) const ERROR_PARAM: u32 = u32::MAX;

/// The type standing for inference variable `v`.
pub(super) fn var_ty(v: u32) -> Ty {
    Ty::Param(VAR_BASE + v)
}

pub(super) fn error_ty() -> Ty {
    Ty::Param(ERROR_PARAM)
}

pub(super) fn is_error(t: &Ty) -> bool {
    matches!(t, Ty::Param(ERROR_PARAM))
}

pub(super) fn as_var(t: &Ty) -> Option<u32> {
    match t {
        Ty::Param(p) if *p >= VAR_BASE && *p != ERROR_PARAM => Some(p - VAR_BASE),
        _ => None,
    }
}

/// A set of scalar types (bit `k` = the k-th of [`ScalarSet::ORDER`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ScalarSet(u8);

impl ScalarSet {
    const ORDER: [Scalar; 5] = [
        Scalar::I32,
        Scalar::I64,
        Scalar::F32,
        Scalar::F64,
        Scalar::Bool,
    ];
    pub const ALL: ScalarSet = ScalarSet(0b11111);
    pub const NUMERIC: ScalarSet = ScalarSet(0b01111);
    pub const INT: ScalarSet = ScalarSet(0b00011);
    pub const FLOAT: ScalarSet = ScalarSet(0b01100);
    /// Element types of warp shuffles.
    pub const SHUFFLE: ScalarSet = ScalarSet::NUMERIC;

    pub fn single(s: Scalar) -> ScalarSet {
        ScalarSet(1 << Self::ORDER.iter().position(|x| *x == s).unwrap_or(0))
    }
    pub fn of(list: &[Scalar]) -> ScalarSet {
        ScalarSet(list.iter().fold(0, |m, s| m | ScalarSet::single(*s).0))
    }
    pub fn contains(self, s: Scalar) -> bool {
        self.0 & ScalarSet::single(s).0 != 0
    }
    pub fn intersect(self, other: ScalarSet) -> ScalarSet {
        ScalarSet(self.0 & other.0)
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn members(self) -> impl Iterator<Item = Scalar> {
        Self::ORDER.into_iter().filter(move |s| self.contains(*s))
    }
    /// The member chosen when nothing else decides (int32 first, then float32...).
    pub fn default_member(self) -> Option<Scalar> {
        if self.contains(Scalar::F32) && !self.contains(Scalar::I32) {
            return Some(Scalar::F32);
        }
        self.members().next()
    }
    /// "int32 or int64", "a numeric type", ...
    pub fn describe(self) -> String {
        match self {
            ScalarSet::ALL => "a scalar type".into(),
            ScalarSet::NUMERIC => "a numeric type".into(),
            _ => {
                let names: Vec<&str> = self.members().map(|s| s.name()).collect();
                match names.as_slice() {
                    [] => "no type".into(),
                    [one] => (*one).into(),
                    [init @ .., last] => format!("{} or {}", init.join(", "), last),
                }
            }
        }
    }
}

/// Why a variable is restricted to a scalar set; selects the wording of a violation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Reason {
    /// Operand of `=`, `<>`, `!=`: violations use the aggregate-equality message.
    Equality,
    /// An unsuffixed float literal (float32 or float64).
    FloatLiteral,
    /// Any other operator or intrinsic, by its source spelling (`+`, `sqrt`).
    Operation(Cow<'static, str>),
}

impl Reason {
    /// How a message names what imposed the constraint.
    pub fn describe(&self) -> String {
        match self {
            Reason::Equality => "`=`".into(),
            Reason::FloatLiteral => "a float literal".into(),
            Reason::Operation(op) => format!("`{op}`"),
        }
    }
}

/// What an unbound variable may still become.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Constraint {
    Any,
    Scalar {
        set: ScalarSet,
        reason: Reason,
        origin: Span,
    },
    /// A vector and/or an array (any memory space) of `elem`.
    Container {
        elem: Ty,
        vector: bool,
        array: bool,
    },
}

#[derive(Clone, Debug)]
enum VarState {
    Unbound {
        constraint: Constraint,
        float_literal: bool,
        name: Option<String>,
    },
    Bound(Ty),
}

/// Why two types did not unify.
#[derive(Clone, Debug)]
pub(super) enum UnifyError {
    Mismatch,
    /// `ty` does not satisfy a scalar constraint.
    NotInSet {
        ty: Ty,
        set: ScalarSet,
        reason: Reason,
        origin: Span,
    },
    /// The type would contain itself.
    Occurs,
}

/// The substitution: state of every inference variable of the program.
#[derive(Default)]
pub(super) struct Subst {
    vars: Vec<VarState>,
}

impl Subst {
    pub fn fresh(&mut self) -> Ty {
        self.fresh_with(Constraint::Any)
    }

    pub fn fresh_named(&mut self, name: &str) -> Ty {
        let t = self.fresh();
        if let Some(v) = as_var(&t)
            && let VarState::Unbound { name: n, .. } = &mut self.vars[v as usize]
        {
            *n = Some(name.to_string());
        }
        t
    }

    pub fn fresh_with(&mut self, constraint: Constraint) -> Ty {
        self.vars.push(VarState::Unbound {
            constraint,
            float_literal: false,
            name: None,
        });
        Ty::Param(VAR_BASE + self.vars.len() as u32 - 1)
    }

    /// The type of an unsuffixed float literal: float32 unless unified with float64.
    pub fn fresh_float_literal(&mut self, origin: Span) -> (Ty, u32) {
        let t = self.fresh_with(Constraint::Scalar {
            set: ScalarSet::FLOAT,
            reason: Reason::FloatLiteral,
            origin,
        });
        let v = as_var(&t).expect("fresh variable");
        if let VarState::Unbound { float_literal, .. } = &mut self.vars[v as usize] {
            *float_literal = true;
        }
        (t, v)
    }

    pub fn constraint(&self, v: u32) -> Option<&Constraint> {
        match &self.vars[v as usize] {
            VarState::Unbound { constraint, .. } => Some(constraint),
            VarState::Bound(_) => None,
        }
    }

    pub fn var_name(&self, v: u32) -> Option<&str> {
        match &self.vars[v as usize] {
            VarState::Unbound { name, .. } => name.as_deref(),
            VarState::Bound(_) => None,
        }
    }

    pub fn set_constraint(&mut self, v: u32, c: Constraint) {
        if let VarState::Unbound { constraint, .. } = &mut self.vars[v as usize] {
            *constraint = c;
        }
    }

    pub fn bind(&mut self, v: u32, t: Ty) {
        self.vars[v as usize] = VarState::Bound(t);
    }

    /// Follow bindings at the root only.
    pub fn resolve(&self, t: &Ty) -> Ty {
        self.resolve_ref(t).clone()
    }

    /// [`Subst::resolve`] without cloning.
    pub fn resolve_ref<'a>(&'a self, mut t: &'a Ty) -> &'a Ty {
        while let Some(v) = as_var(t) {
            match &self.vars[v as usize] {
                VarState::Bound(b) => t = b,
                VarState::Unbound { .. } => break,
            }
        }
        t
    }

    /// Resolve everywhere inside `t` (unbound variables stay).
    pub fn zonk(&self, t: &Ty) -> Ty {
        match self.resolve_ref(t) {
            Ty::Tuple(ts) => Ty::Tuple(ts.iter().map(|t| self.zonk(t)).collect()),
            Ty::Vector(e) => Ty::Vector(Box::new(self.zonk(e))),
            Ty::Array { elem, space, size } => Ty::Array {
                elem: Box::new(self.zonk(elem)),
                space: *space,
                size: *size,
            },
            other => other.clone(),
        }
    }

    /// Whether an unbound variable remains inside `t`.
    pub fn has_vars(&self, t: &Ty) -> bool {
        match self.resolve_ref(t) {
            t if as_var(t).is_some() => true,
            Ty::Tuple(ts) => ts.iter().any(|t| self.has_vars(t)),
            Ty::Vector(e) | Ty::Array { elem: e, .. } => self.has_vars(e),
            _ => false,
        }
    }

    fn occurs(&self, v: u32, t: &Ty) -> bool {
        match self.resolve_ref(t) {
            t if as_var(t) == Some(v) => true,
            Ty::Tuple(ts) => ts.iter().any(|t| self.occurs(v, t)),
            Ty::Vector(e) | Ty::Array { elem: e, .. } => self.occurs(v, e),
            _ => false,
        }
    }

    /// Restrict `t` to the scalar set (a variable gets the constraint, a concrete type is tested).
    pub fn require_scalar(
        &mut self,
        t: &Ty,
        set: ScalarSet,
        reason: Reason,
        origin: Span,
    ) -> Result<(), UnifyError> {
        let c = Constraint::Scalar {
            set,
            reason,
            origin,
        };
        let fresh = self.fresh_with(c);
        self.unify(&fresh, t)
    }

    pub fn unify(&mut self, a: &Ty, b: &Ty) -> Result<(), UnifyError> {
        {
            let (a, b) = (self.resolve_ref(a), self.resolve_ref(b));
            if is_error(a) || is_error(b) || a == b {
                return Ok(());
            }
        }
        let a = self.resolve(a);
        let b = self.resolve(b);
        match (as_var(&a), as_var(&b)) {
            (Some(va), Some(vb)) => self.unify_vars(va, vb),
            (Some(v), None) => self.bind_checked(v, &b),
            (None, Some(v)) => self.bind_checked(v, &a),
            (None, None) => match (&a, &b) {
                (Ty::Tuple(xs), Ty::Tuple(ys)) if xs.len() == ys.len() => {
                    for (x, y) in xs.iter().zip(ys) {
                        self.unify(x, y)?;
                    }
                    Ok(())
                }
                (Ty::Vector(x), Ty::Vector(y)) => self.unify(x, y),
                (
                    Ty::Array {
                        elem: x, space: sx, ..
                    },
                    Ty::Array {
                        elem: y, space: sy, ..
                    },
                ) if sx == sy => {
                    // Sizes are not part of the type: a helper taking `t array` accepts any size.
                    self.unify(x, y)
                }
                _ => Err(UnifyError::Mismatch),
            },
        }
    }

    fn unify_vars(&mut self, va: u32, vb: u32) -> Result<(), UnifyError> {
        let (ca, fa) = match &self.vars[va as usize] {
            VarState::Unbound {
                constraint,
                float_literal,
                ..
            } => (constraint.clone(), *float_literal),
            VarState::Bound(_) => unreachable!("resolved"),
        };
        let (cb, fb) = match &self.vars[vb as usize] {
            VarState::Unbound {
                constraint,
                float_literal,
                ..
            } => (constraint.clone(), *float_literal),
            VarState::Bound(_) => unreachable!("resolved"),
        };
        let merged = match (ca, cb) {
            (Constraint::Any, c) | (c, Constraint::Any) => c,
            (
                Constraint::Scalar {
                    set: s1,
                    reason: r1,
                    origin: o1,
                },
                Constraint::Scalar {
                    set: s2,
                    reason: r2,
                    origin: o2,
                },
            ) => {
                let set = s1.intersect(s2);
                if set.is_empty() {
                    // Report against the first scalar the other side still allowed.
                    let ty = s2.members().next().map(Ty::Scalar).unwrap_or(Ty::Unit);
                    return Err(UnifyError::NotInSet {
                        ty,
                        set: s1,
                        reason: r1,
                        origin: o1,
                    });
                }
                // Keep the equality reason when present: its wording is the most specific.
                let (reason, origin) = if r2 == Reason::Equality {
                    (r2, o2)
                } else {
                    (r1, o1)
                };
                Constraint::Scalar {
                    set,
                    reason,
                    origin,
                }
            }
            (
                Constraint::Container {
                    elem: e1,
                    vector: v1,
                    array: a1,
                },
                Constraint::Container {
                    elem: e2,
                    vector: v2,
                    array: a2,
                },
            ) => {
                self.unify(&e1, &e2)?;
                let (vector, array) = (v1 && v2, a1 && a2);
                if !vector && !array {
                    return Err(UnifyError::Mismatch);
                }
                Constraint::Container {
                    elem: e1,
                    vector,
                    array,
                }
            }
            (
                Constraint::Scalar {
                    set,
                    reason,
                    origin,
                },
                Constraint::Container { elem, .. },
            )
            | (
                Constraint::Container { elem, .. },
                Constraint::Scalar {
                    set,
                    reason,
                    origin,
                },
            ) => {
                return Err(UnifyError::NotInSet {
                    ty: Ty::Vector(Box::new(elem)),
                    set,
                    reason,
                    origin,
                });
            }
        };
        if let VarState::Unbound {
            constraint,
            float_literal,
            ..
        } = &mut self.vars[vb as usize]
        {
            *constraint = merged;
            *float_literal = fa || fb;
        }
        self.bind(va, Ty::Param(VAR_BASE + vb));
        Ok(())
    }

    fn bind_checked(&mut self, v: u32, t: &Ty) -> Result<(), UnifyError> {
        if self.occurs(v, t) {
            return Err(UnifyError::Occurs);
        }
        let constraint = self.constraint(v).cloned().unwrap_or(Constraint::Any);
        match constraint {
            Constraint::Any => {}
            Constraint::Scalar {
                set,
                reason,
                origin,
            } => match t {
                Ty::Scalar(s) if set.contains(*s) => {}
                // Generalised parameters are checked again at instantiation (mono backstop).
                Ty::Param(_) => {}
                _ => {
                    // Bind anyway: the error is reported once, later uses see the type.
                    self.bind(v, t.clone());
                    return Err(UnifyError::NotInSet {
                        ty: t.clone(),
                        set,
                        reason,
                        origin,
                    });
                }
            },
            Constraint::Container {
                elem,
                vector,
                array,
            } => match t {
                Ty::Vector(e) if vector => {
                    let e = (**e).clone();
                    self.bind(v, t.clone());
                    return self.unify(&elem, &e);
                }
                Ty::Array { elem: e, .. } if array => {
                    let e = (**e).clone();
                    self.bind(v, t.clone());
                    return self.unify(&elem, &e);
                }
                Ty::Param(_) => {}
                _ => return Err(UnifyError::Mismatch),
            },
        }
        self.bind(v, t.clone());
        Ok(())
    }
}
