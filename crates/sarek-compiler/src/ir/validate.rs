//! IR validator: the invariants every pass after lowering may rely on.
//!
//! - every variable is bound (parameter, `let`, array, `for` index, match binding) before it is
//!   used and is in scope where it is used; every [`VarId`] is bound exactly once;
//! - every expression's type is consistent with its operands (conditions bool, indices int32,
//!   field/constructor indices in range, calls with the callee's arity and types, returns of
//!   the helper's type);
//! - every assigned place is assignable: a mutable variable (or one declared without an
//!   initialiser), or an element / field of a vector or array element;
//! - `break`/`continue` only inside loops, `return` only in helpers, calls only to earlier
//!   helpers (callees before callers, so there is no recursion left).
//! - after [`crate::passes::specialize_helpers`], a helper may also name a kernel vector
//!   parameter or a shared array directly, and copies of one helper may declare the same
//!   shared array (it stays one array): both are the kernel's module-scope arrays.
//!
//! A failure is a compiler bug, not a user error, so it is a plain [`ValidationError`] naming
//! the kernel and the first problem found (with the IR printer's spelling of the offending
//! variable), not a located diagnostic.

use crate::hash::FxHashSet as HashSet;
use crate::intrinsics::{AtomicOp, Intrinsic, WarpOp};
use crate::ir::{Block, Expr, ExprKind, FuncId, Kernel, LValue, StmtKind, Ty, VarId};
use crate::types::{BinOp, MemSpace, Scalar, UnOp};

/// A structural problem in a kernel (a compiler bug, not a user error).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid IR in kernel `{kernel}`: {message}")]
pub struct ValidationError {
    pub kernel: String,
    pub message: String,
}

/// Check every invariant listed in the module documentation.
pub fn validate(kernel: &Kernel) -> Result<(), ValidationError> {
    let mut v = Validator {
        k: kernel,
        bound: HashSet::default(),
        scopes: Vec::new(),
        uninit: HashSet::default(),
        loops: 0,
        ret: None,
        func: None,
    };
    v.run().map_err(|message| ValidationError {
        kernel: kernel.name.clone(),
        message,
    })
}

type R = Result<(), String>;

struct Validator<'k> {
    k: &'k Kernel,
    /// Every VarId bound so far, anywhere (uniqueness).
    bound: HashSet<VarId>,
    /// Variables in scope, innermost scope last.
    scopes: Vec<Vec<VarId>>,
    /// Immutable variables declared without an initialiser: lowering assigns them once.
    uninit: HashSet<VarId>,
    loops: u32,
    /// Return type of the helper being checked (None in the kernel body).
    ret: Option<&'k Ty>,
    /// Index of the helper being checked.
    func: Option<usize>,
}

fn scalar_of(ty: &Ty) -> Option<Scalar> {
    ty.scalar()
}

impl<'k> Validator<'k> {
    fn run(&mut self) -> R {
        let k = self.k;
        let traps = k.traps();
        if let Some(w) = traps
            .windows(2)
            .find(|w| w[0].0.code == w[1].0.code && (w[0].0, w[0].1) != (w[1].0, w[1].1))
        {
            return Err(format!(
                "trap code {} names two different sites",
                w[0].0.code
            ));
        }
        for (i, f) in k.functions.iter().enumerate() {
            self.func = Some(i);
            self.ret = Some(&f.ret);
            self.scopes.push(Vec::new());
            for p in &f.params {
                self.bind(*p)?;
                let ty = &self.info(*p)?.ty;
                if matches!(ty, Ty::Unit) {
                    return Err(format!(
                        "helper `{}` has a unit parameter {}",
                        f.name,
                        self.name(*p)
                    ));
                }
            }
            self.block(&f.body)
                .map_err(|m| format!("in helper `{}`: {m}", f.name))?;
            self.scopes.pop();
        }
        self.func = None;
        self.ret = None;
        self.scopes.push(Vec::new());
        for p in &k.params {
            self.bind(*p)?;
            match &self.info(*p)?.ty {
                Ty::Scalar(_) | Ty::Record(_) | Ty::Variant(_) | Ty::Vector(_) => {}
                t => return Err(format!("kernel parameter {} has type {t:?}", self.name(*p))),
            }
        }
        self.block(&k.body)?;
        self.scopes.pop();
        Ok(())
    }

    fn name(&self, id: VarId) -> String {
        match self.k.vars.get(id.0 as usize) {
            Some(v) => format!("`{}%{}`", v.name, id.0),
            None => format!("`%{}`", id.0),
        }
    }

    fn info(&self, id: VarId) -> Result<&'k crate::ir::VarInfo, String> {
        self.k
            .vars
            .get(id.0 as usize)
            .ok_or_else(|| format!("variable %{} is not in the variable table", id.0))
    }

    fn bind(&mut self, id: VarId) -> R {
        self.info(id)?;
        if !self.bound.insert(id) {
            return Err(format!("variable {} is bound twice", self.name(id)));
        }
        self.scopes.last_mut().expect("a scope is open").push(id);
        Ok(())
    }

    /// A kernel vector parameter or a shared array: named by helpers after specialisation.
    fn is_module_array(&self, id: VarId) -> bool {
        match self.k.vars.get(id.0 as usize).map(|v| &v.ty) {
            Some(Ty::Vector(_)) => self.k.params.contains(&id),
            Some(Ty::Array {
                space: MemSpace::Shared,
                size: Some(_),
                ..
            }) => true,
            _ => false,
        }
    }

    fn in_scope(&self, id: VarId) -> R {
        if self.scopes.iter().any(|s| s.contains(&id))
            || (self.func.is_some() && self.is_module_array(id))
        {
            Ok(())
        } else if self.bound.contains(&id) {
            Err(format!(
                "variable {} is used out of its scope",
                self.name(id)
            ))
        } else {
            Err(format!(
                "variable {} is used before it is bound",
                self.name(id)
            ))
        }
    }

    fn scoped(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        self.scopes.push(Vec::new());
        let r = f(self);
        self.scopes.pop();
        r
    }

    fn block(&mut self, b: &Block) -> R {
        self.scoped(|v| b.iter().try_for_each(|s| v.stmt(&s.kind)))
    }

    fn expect(&self, what: &str, want: &Ty, got: &Ty) -> R {
        if want == got {
            Ok(())
        } else {
            Err(format!("{what}: expected {want:?}, found {got:?}"))
        }
    }

    fn stmt(&mut self, s: &StmtKind) -> R {
        match s {
            StmtKind::Let { var, init } => {
                let info = self.info(*var)?;
                if matches!(info.ty, Ty::Unit | Ty::Vector(_) | Ty::Array { .. }) {
                    return Err(format!(
                        "`let` of {} has type {:?}",
                        self.name(*var),
                        info.ty
                    ));
                }
                match init {
                    Some(e) => {
                        // Checked before the binder enters scope: `let s = s + 1` reads the outer `s`.
                        self.expr(e)?;
                        self.expect(
                            &format!("initialiser of {}", self.name(*var)),
                            &info.ty,
                            &e.ty,
                        )?;
                    }
                    None => {
                        if !info.mutable {
                            self.uninit.insert(*var);
                        }
                    }
                }
                self.bind(*var)
            }
            StmtKind::Array { var } => {
                let info = self.info(*var)?;
                match &info.ty {
                    Ty::Array {
                        elem,
                        space: MemSpace::Shared | MemSpace::Local,
                        size: Some(_),
                    } => {
                        self.value_ty(elem)
                            .map_err(|m| format!("array {}: {m}", self.name(*var)))?;
                    }
                    t => {
                        return Err(format!(
                            "array declaration {} has type {t:?}",
                            self.name(*var)
                        ));
                    }
                }
                if self.func.is_some() && self.is_module_array(*var) && self.bound.contains(var) {
                    // Another copy of this helper declared it: one array for every copy.
                    self.scopes.last_mut().expect("a scope is open").push(*var);
                    return Ok(());
                }
                self.bind(*var)
            }
            StmtKind::Assign { place, value } => {
                self.expr(value)?;
                let ty = self.place(place, true)?;
                self.expect("assigned value", &ty, &value.ty)
            }
            StmtKind::Expr(e) => self.expr(e),
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                self.cond(cond)?;
                self.block(then_block)?;
                self.block(else_block)
            }
            StmtKind::For {
                var,
                start,
                end,
                body,
                ..
            } => {
                self.expr(start)?;
                self.expect("`for` start", &Ty::I32, &start.ty)?;
                self.expr(end)?;
                self.expect("`for` end", &Ty::I32, &end.ty)?;
                self.expect(
                    &format!("`for` index {}", self.name(*var)),
                    &Ty::I32,
                    &self.info(*var)?.ty,
                )?;
                self.loops += 1;
                let r = self.scoped(|v| {
                    v.bind(*var)?;
                    v.block(body)
                });
                self.loops -= 1;
                r
            }
            StmtKind::While { cond, body, .. } => {
                self.cond(cond)?;
                self.loops += 1;
                let r = self.block(body);
                self.loops -= 1;
                r
            }
            StmtKind::Match {
                scrutinee,
                variant,
                arms,
            } => {
                self.expr(scrutinee)?;
                self.expect("match scrutinee", &Ty::Variant(*variant), &scrutinee.ty)?;
                let var = self
                    .k
                    .variants
                    .get(variant.0 as usize)
                    .ok_or_else(|| format!("match on unknown variant #{}", variant.0))?;
                for arm in arms {
                    match arm.ctor {
                        None if !arm.bindings.is_empty() => {
                            return Err("default match arm with bindings".into());
                        }
                        None => {}
                        Some(c) => {
                            let ctor = var.ctors.get(c as usize).ok_or_else(|| {
                                format!("match arm on constructor #{c} of `{}`", var.name)
                            })?;
                            if ctor.fields.len() != arm.bindings.len() {
                                return Err(format!(
                                    "match arm `{}` binds {} fields, the constructor has {}",
                                    ctor.name,
                                    arm.bindings.len(),
                                    ctor.fields.len()
                                ));
                            }
                        }
                    }
                    self.scoped(|v| {
                        if let Some(c) = arm.ctor {
                            for (b, fty) in arm.bindings.iter().zip(&var.ctors[c as usize].fields) {
                                if let Some(b) = b {
                                    v.expect(
                                        &format!("pattern variable {}", v.name(*b)),
                                        fty,
                                        &v.info(*b)?.ty,
                                    )?;
                                    v.bind(*b)?;
                                }
                            }
                        }
                        v.block(&arm.body)
                    })?;
                }
                Ok(())
            }
            StmtKind::Block(b) => self.block(b),
            StmtKind::Barrier | StmtKind::Fence { .. } | StmtKind::Native(_) => Ok(()),
            StmtKind::Trap(t) if t.code == 0 => {
                Err("trap code 0 (reserved for \"no trap\")".into())
            }
            StmtKind::Trap(_) => Ok(()),
            StmtKind::Return(e) => {
                let Some(ret) = self.ret else {
                    return Err("`return` in the kernel body".into());
                };
                match e {
                    Some(e) => {
                        self.expr(e)?;
                        self.expect("returned value", ret, &e.ty)
                    }
                    None => self.expect("`return` without a value", ret, &Ty::Unit),
                }
            }
            StmtKind::Break | StmtKind::Continue if self.loops == 0 => {
                Err("`break`/`continue` outside a loop".into())
            }
            StmtKind::Break | StmtKind::Continue => Ok(()),
        }
    }

    fn cond(&mut self, c: &Expr) -> R {
        self.expr(c)?;
        self.expect("condition", &Ty::BOOL, &c.ty)
    }

    /// A type a value (variable, field, element) may have.
    fn value_ty(&self, ty: &Ty) -> R {
        match ty {
            Ty::Scalar(_) => Ok(()),
            Ty::Record(id) if (id.0 as usize) < self.k.records.len() => Ok(()),
            Ty::Variant(id) if (id.0 as usize) < self.k.variants.len() => Ok(()),
            t => Err(format!("{t:?} is not a value type of this kernel")),
        }
    }

    /// Type of a place; with `assign`, also check that it may be assigned.
    fn place(&mut self, p: &LValue, assign: bool) -> Result<Ty, String> {
        match p {
            LValue::Var(v) => {
                self.in_scope(*v)?;
                let info = self.info(*v)?;
                if assign && !info.mutable && !self.uninit.contains(v) {
                    return Err(format!(
                        "assignment to immutable variable {}",
                        self.name(*v)
                    ));
                }
                if matches!(info.ty, Ty::Vector(_) | Ty::Array { .. }) {
                    return Err(format!(
                        "assignment to the whole vector/array {}",
                        self.name(*v)
                    ));
                }
                Ok(info.ty.clone())
            }
            LValue::Index { base, index } => {
                self.in_scope(*base)?;
                self.expr(index)?;
                self.expect("index", &Ty::I32, &index.ty)?;
                let info = self.info(*base)?;
                info.ty.elem().cloned().ok_or_else(|| {
                    format!(
                        "indexed store into {} of type {:?}",
                        self.name(*base),
                        info.ty
                    )
                })
            }
            LValue::Field { base, field } => {
                let ty = self.place(base, false)?;
                if assign && let LValue::Var(v) = &**base {
                    let info = self.info(*v)?;
                    if !info.mutable && !self.uninit.contains(v) {
                        return Err(format!(
                            "field assignment to immutable variable {}",
                            self.name(*v)
                        ));
                    }
                }
                self.field_ty(&ty, *field)
            }
        }
    }

    fn field_ty(&self, ty: &Ty, field: u32) -> Result<Ty, String> {
        let Ty::Record(id) = ty else {
            return Err(format!("field #{field} of non-record {ty:?}"));
        };
        let r = self
            .k
            .records
            .get(id.0 as usize)
            .ok_or_else(|| format!("unknown record #{}", id.0))?;
        r.fields
            .get(field as usize)
            .map(|f| f.ty.clone())
            .ok_or_else(|| format!("field #{field} out of range for record `{}`", r.name))
    }

    fn ctor_fields(&self, ty: &Ty, ctor: u32) -> Result<&'k [Ty], String> {
        let Ty::Variant(id) = ty else {
            return Err(format!("constructor #{ctor} of non-variant {ty:?}"));
        };
        let v = self
            .k
            .variants
            .get(id.0 as usize)
            .ok_or_else(|| format!("unknown variant #{}", id.0))?;
        v.ctors
            .get(ctor as usize)
            .map(|c| c.fields.as_slice())
            .ok_or_else(|| format!("constructor #{ctor} out of range for variant `{}`", v.name))
    }

    fn exprs(&mut self, es: &[Expr]) -> R {
        es.iter().try_for_each(|e| self.expr(e))
    }

    fn expr(&mut self, e: &Expr) -> R {
        match &e.kind {
            ExprKind::Lit(l) => self.expect("literal", &Ty::Scalar(l.scalar()), &e.ty),
            ExprKind::Var(v) => {
                self.in_scope(*v)?;
                self.expect(
                    &format!("use of {}", self.name(*v)),
                    &self.info(*v)?.ty,
                    &e.ty,
                )
            }
            ExprKind::Binary {
                op,
                lhs,
                rhs,
                nowrap,
            } => {
                self.expr(lhs)?;
                self.expr(rhs)?;
                if *nowrap
                    && !(matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul)
                        && scalar_of(&e.ty).is_some_and(Scalar::is_int))
                {
                    return Err(format!("`{}` marked nowrap on {:?}", op.symbol(), e.ty));
                }
                self.binary(*op, lhs, rhs, &e.ty)
            }
            ExprKind::Unary { op, operand } => {
                self.expr(operand)?;
                self.expect("unary operator result", &operand.ty, &e.ty)?;
                let s = scalar_of(&operand.ty).ok_or("unary operator on a non-scalar")?;
                let ok = match op {
                    UnOp::Neg => s.is_numeric(),
                    UnOp::Not => s == Scalar::Bool,
                    UnOp::BitNot => s.is_int(),
                };
                if ok {
                    Ok(())
                } else {
                    Err(format!("{op:?} on {s}"))
                }
            }
            ExprKind::Index { base, index } => {
                self.in_scope(*base)?;
                self.expr(index)?;
                self.expect("index", &Ty::I32, &index.ty)?;
                let info = self.info(*base)?;
                let elem = info
                    .ty
                    .elem()
                    .ok_or_else(|| format!("indexing non-vector {}", self.name(*base)))?;
                self.expect("element read", elem, &e.ty)
            }
            ExprKind::Field { base, field } => {
                self.expr(base)?;
                let fty = self.field_ty(&base.ty, *field)?;
                self.expect("field read", &fty, &e.ty)
            }
            ExprKind::Record { record, fields } => {
                self.exprs(fields)?;
                self.expect("record literal", &Ty::Record(*record), &e.ty)?;
                let r = self
                    .k
                    .records
                    .get(record.0 as usize)
                    .ok_or("record literal of an unknown record")?;
                if r.fields.len() != fields.len() {
                    return Err(format!(
                        "record `{}` built with {} fields",
                        r.name,
                        fields.len()
                    ));
                }
                for (f, x) in r.fields.iter().zip(fields) {
                    self.expect(&format!("field `{}` of `{}`", f.name, r.name), &f.ty, &x.ty)?;
                }
                Ok(())
            }
            ExprKind::Ctor {
                variant,
                ctor,
                fields,
            } => {
                self.exprs(fields)?;
                self.expect("constructor", &Ty::Variant(*variant), &e.ty)?;
                let want = self.ctor_fields(&e.ty, *ctor)?;
                if want.len() != fields.len() {
                    return Err(format!(
                        "constructor #{ctor} built with {} fields, wants {}",
                        fields.len(),
                        want.len()
                    ));
                }
                for (w, x) in want.iter().zip(fields) {
                    self.expect("constructor payload", w, &x.ty)?;
                }
                Ok(())
            }
            ExprKind::Tag(v) => {
                self.expr(v)?;
                if !matches!(v.ty, Ty::Variant(_)) {
                    return Err(format!("tag of non-variant {:?}", v.ty));
                }
                self.expect("tag", &Ty::I32, &e.ty)
            }
            ExprKind::Payload { value, ctor, field } => {
                self.expr(value)?;
                let fields = self.ctor_fields(&value.ty, *ctor)?;
                let f = fields
                    .get(*field as usize)
                    .ok_or_else(|| format!("payload field #{field} out of range"))?;
                self.expect("payload", f, &e.ty)
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                self.cond(cond)?;
                self.expr(then_value)?;
                self.expr(else_value)?;
                self.expect("select branch", &e.ty, &then_value.ty)?;
                self.expect("select branch", &e.ty, &else_value.ty)
            }
            ExprKind::Call { func, args } => {
                self.exprs(args)?;
                self.call(*func, args, &e.ty)
            }
            ExprKind::Intrinsic { op, args } => {
                self.exprs(args)?;
                self.intrinsic(*op, args, &e.ty)
            }
        }
    }

    fn binary(&self, op: BinOp, lhs: &Expr, rhs: &Expr, ty: &Ty) -> R {
        let l = scalar_of(&lhs.ty)
            .ok_or_else(|| format!("`{}` on non-scalar {:?}", op.symbol(), lhs.ty))?;
        let r = scalar_of(&rhs.ty)
            .ok_or_else(|| format!("`{}` on non-scalar {:?}", op.symbol(), rhs.ty))?;
        let bad = || Err(format!("`{}` on {l} and {r} giving {ty:?}", op.symbol()));
        let ok = match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => {
                l == r && l.is_numeric() && *ty == lhs.ty
            }
            BinOp::Eq | BinOp::Ne => l == r && *ty == Ty::BOOL,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => l == r && *ty == Ty::BOOL,
            BinOp::And | BinOp::Or => l == Scalar::Bool && r == Scalar::Bool && *ty == Ty::BOOL,
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => l == r && l.is_int() && *ty == lhs.ty,
            // The shift amount is an integer, not necessarily of the shifted type.
            BinOp::Shl | BinOp::LShr | BinOp::AShr => l.is_int() && r.is_int() && *ty == lhs.ty,
        };
        if ok { Ok(()) } else { bad() }
    }

    fn call(&self, func: FuncId, args: &[Expr], ty: &Ty) -> R {
        let f = self
            .k
            .functions
            .get(func.0 as usize)
            .ok_or_else(|| format!("call of unknown helper #{}", func.0))?;
        if let Some(cur) = self.func
            && func.0 as usize >= cur
        {
            return Err(format!(
                "helper #{cur} calls `{}`, which is not defined before it",
                f.name
            ));
        }
        if f.params.len() != args.len() {
            return Err(format!(
                "`{}` called with {} arguments, takes {}",
                f.name,
                args.len(),
                f.params.len()
            ));
        }
        for (p, a) in f.params.iter().zip(args) {
            let pty = &self.info(*p)?.ty;
            let ok = match (pty, &a.ty) {
                // An unsized array parameter accepts any array of its element type and space.
                (
                    Ty::Array {
                        elem,
                        space,
                        size: None,
                    },
                    Ty::Array {
                        elem: e2,
                        space: s2,
                        ..
                    },
                ) => elem == e2 && space == s2,
                (p, a) => p == a,
            };
            if !ok {
                return Err(format!(
                    "argument {} of `{}`: expected {pty:?}, found {:?}",
                    self.name(*p),
                    f.name,
                    a.ty
                ));
            }
            if matches!(pty, Ty::Vector(_) | Ty::Array { .. })
                && !matches!(a.kind, ExprKind::Var(_))
            {
                return Err(format!(
                    "vector/array argument of `{}` is not a variable",
                    f.name
                ));
            }
        }
        self.expect(&format!("result of `{}`", f.name), &f.ret, ty)
    }

    fn intrinsic(&self, op: Intrinsic, args: &[Expr], ty: &Ty) -> R {
        let name = crate::ir::print::intrinsic_name(op);
        let arity = |n: usize| {
            if args.len() == n {
                Ok(())
            } else {
                Err(format!("`{name}` with {} arguments, takes {n}", args.len()))
            }
        };
        let scalar = |i: usize| {
            scalar_of(&args[i].ty).ok_or_else(|| format!("`{name}` on non-scalar {:?}", args[i].ty))
        };
        let same = |i: usize| self.expect(&format!("operand of `{name}`"), ty, &args[i].ty);
        match op {
            Intrinsic::Geometry(_) => {
                arity(0)?;
                self.expect(&name, &Ty::I32, ty)
            }
            Intrinsic::BlockBarrier | Intrinsic::FenceBlock | Intrinsic::FenceDevice => Err(
                format!("`{name}` must be a statement, not an intrinsic expression"),
            ),
            Intrinsic::Warp(w) => match w {
                WarpOp::Shuffle | WarpOp::ShuffleDown | WarpOp::ShuffleUp | WarpOp::ShuffleXor => {
                    arity(2)?;
                    scalar(0)?;
                    same(0)?;
                    self.expect("lane operand", &Ty::I32, &args[1].ty)
                }
                WarpOp::VoteAll | WarpOp::VoteAny => {
                    arity(1)?;
                    self.expect("vote operand", &Ty::BOOL, &args[0].ty)?;
                    self.expect("vote result", &Ty::BOOL, ty)
                }
                WarpOp::Ballot => {
                    arity(1)?;
                    self.expect("ballot operand", &Ty::BOOL, &args[0].ty)?;
                    self.expect("ballot result", &Ty::I32, ty)
                }
            },
            Intrinsic::Atomic(a) => {
                arity(2 + a.value_operands())?;
                let ExprKind::Var(v) = args[0].kind else {
                    return Err(format!(
                        "`{name}` on something other than a vector/array variable"
                    ));
                };
                self.in_scope(v)?;
                let elem = self
                    .info(v)?
                    .ty
                    .elem()
                    .ok_or_else(|| format!("`{name}` on non-vector {}", self.name(v)))?;
                self.expect("atomic index", &Ty::I32, &args[1].ty)?;
                let ok_elem = match a {
                    AtomicOp::Add | AtomicOp::Exch => {
                        matches!(elem, Ty::Scalar(Scalar::I32 | Scalar::I64 | Scalar::F32))
                    }
                    _ => matches!(elem, Ty::Scalar(Scalar::I32 | Scalar::I64)),
                };
                if !ok_elem {
                    return Err(format!("`{name}` on elements of type {elem:?}"));
                }
                for x in &args[2..] {
                    self.expect("atomic operand", elem, &x.ty)?;
                }
                self.expect("atomic result", elem, ty)
            }
            Intrinsic::Math(m) => {
                arity(m.arity())?;
                if !matches!(ty, Ty::Scalar(Scalar::F32 | Scalar::F64)) {
                    return Err(format!("`{name}` of type {ty:?}"));
                }
                (0..args.len()).try_for_each(same)
            }
            Intrinsic::Abs | Intrinsic::Min | Intrinsic::Max => {
                arity(if op == Intrinsic::Abs { 1 } else { 2 })?;
                if !scalar_of(ty).is_some_and(Scalar::is_numeric) {
                    return Err(format!("`{name}` of type {ty:?}"));
                }
                (0..args.len()).try_for_each(same)
            }
            Intrinsic::Clz | Intrinsic::Popcount => {
                arity(1)?;
                if !scalar(0)?.is_int() || !scalar_of(ty).is_some_and(Scalar::is_int) {
                    return Err(format!("`{name}` on {:?} giving {ty:?}", args[0].ty));
                }
                Ok(())
            }
            Intrinsic::Convert => {
                arity(1)?;
                scalar(0)?;
                if scalar_of(ty).is_none() {
                    return Err(format!("conversion to non-scalar {ty:?}"));
                }
                Ok(())
            }
            Intrinsic::Length => {
                arity(1)?;
                let ExprKind::Var(v) = args[0].kind else {
                    return Err("`length` of something other than a vector/array variable".into());
                };
                self.in_scope(v)?;
                if self.info(v)?.ty.elem().is_none() {
                    return Err(format!("`length` of non-vector {}", self.name(v)));
                }
                self.expect("length", &Ty::I32, ty)
            }
        }
    }
}
