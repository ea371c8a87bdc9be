//! What WGSL cannot express, refused up front with located errors naming WGSL.
//!
//! WGSL has neither 64-bit floats nor 64-bit integers (so no int64 atomics either), no
//! equality on arrays or structs, and subgroup operations only behind `enable subgroups;`
//! on devices that have them. Each refusal points at the variable or statement that needs the
//! construct; other targets still compile the same kernel.

use crate::diag::{Diagnostic, Span};
use crate::intrinsics::{Geometry, Intrinsic};
use crate::ir::visit::{StmtVisitor, walk_block};
use crate::ir::{Expr, ExprKind, Kernel, Ty, VarId};
use crate::target::TargetOptions;
use crate::types::{BinOp, Scalar};
use std::collections::BTreeSet;

/// What the checker learnt that the writer needs.
pub(super) struct Facts {
    /// The kernel uses warp operations or `warp_size` (and the options allow subgroups).
    pub subgroups: bool,
}

/// Refuse what WGSL cannot express; on success report the facts the writer needs.
pub(super) fn check(kernel: &Kernel, options: &TargetOptions) -> Result<Facts, Vec<Diagnostic>> {
    let mut c = Checker {
        kernel,
        options,
        diags: Vec::new(),
        seen: BTreeSet::new(),
        subgroups: false,
    };
    for &p in &kernel.params {
        c.var(p);
    }
    walk_block(&mut c, &kernel.body);
    for f in &kernel.functions {
        for &p in &f.params {
            c.var(p);
        }
        if let Some(s) = wide_scalar(kernel, &f.ret) {
            c.refuse_wide(f.span, s, &format!("helper `{}` returns it", f.name));
        }
        walk_block(&mut c, &f.body);
    }
    if c.diags.is_empty() {
        Ok(Facts {
            subgroups: c.subgroups,
        })
    } else {
        Err(c.diags)
    }
}

struct Checker<'k> {
    kernel: &'k Kernel,
    options: &'k TargetOptions,
    diags: Vec<Diagnostic>,
    /// (span, message) pairs already reported: one error per construct and place.
    seen: BTreeSet<(Span, String)>,
    subgroups: bool,
}

/// The first 64-bit scalar a type contains (records and variants recursively).
pub(super) fn wide_scalar(kernel: &Kernel, ty: &Ty) -> Option<Scalar> {
    match ty {
        Ty::Scalar(s @ (Scalar::F64 | Scalar::I64)) => Some(*s),
        Ty::Scalar(_) | Ty::Unit => None,
        Ty::Record(id) => kernel
            .record(*id)
            .fields
            .iter()
            .find_map(|f| wide_scalar(kernel, &f.ty)),
        Ty::Variant(id) => kernel
            .variant(*id)
            .ctors
            .iter()
            .flat_map(|c| c.fields.iter())
            .find_map(|t| wide_scalar(kernel, t)),
        Ty::Vector(e) | Ty::Array { elem: e, .. } => wide_scalar(kernel, e),
    }
}

impl Checker<'_> {
    fn report(&mut self, d: Diagnostic) {
        if self.seen.insert((d.span, d.message.clone())) {
            self.diags.push(d);
        }
    }

    fn refuse_wide(&mut self, span: Span, s: Scalar, label: &str) {
        let what = if s == Scalar::F64 {
            "64-bit floats"
        } else {
            "64-bit integers"
        };
        self.report(
            Diagnostic::error(
                span,
                format!(
                    "WGSL has no {what}: `{}` cannot be compiled for WGSL",
                    s.name()
                ),
            )
            .with_label(label.to_string())
            .with_note("other targets (OpenCL, CUDA, GLSL, PTX) still compile this kernel"),
        );
    }
}

impl StmtVisitor for Checker<'_> {
    fn var(&mut self, v: VarId) {
        let info = self.kernel.var(v);
        if let Some(s) = wide_scalar(self.kernel, &info.ty) {
            self.refuse_wide(
                info.span,
                s,
                &format!("`{}` has a type containing {}", info.name, s.name()),
            );
        }
    }

    fn expr(&mut self, span: Span, e: &Expr) {
        if let Some(s) = wide_scalar(self.kernel, &e.ty) {
            self.refuse_wide(
                span,
                s,
                &format!("this statement computes a {} value", s.name()),
            );
        }
        match &e.kind {
            ExprKind::Lit(_) | ExprKind::Var(_) => {}
            ExprKind::Binary { op, lhs, rhs, .. } => {
                if matches!(op, BinOp::Eq | BinOp::Ne) && lhs.ty.scalar().is_none() {
                    self.report(
                        Diagnostic::error(
                            span,
                            "WGSL cannot compare whole vectors, arrays, records or variants",
                        )
                        .with_label("`=`/`<>` applied to a non-scalar value")
                        .with_help(
                            "compare elements or fields one by one (use `match` for variants)",
                        ),
                    );
                }
                self.expr(span, lhs);
                self.expr(span, rhs);
            }
            ExprKind::Unary { operand, .. } => self.expr(span, operand),
            ExprKind::Index { index, .. } => self.expr(span, index),
            ExprKind::Field { base, .. } => self.expr(span, base),
            ExprKind::Record { fields, .. } | ExprKind::Ctor { fields, .. } => {
                fields.iter().for_each(|f| self.expr(span, f))
            }
            ExprKind::Tag(v) | ExprKind::Payload { value: v, .. } => self.expr(span, v),
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                self.expr(span, cond);
                self.expr(span, then_value);
                self.expr(span, else_value);
            }
            ExprKind::Call { args, .. } => args.iter().for_each(|a| self.expr(span, a)),
            ExprKind::Intrinsic { op, args } => {
                if matches!(
                    op,
                    Intrinsic::Warp(_) | Intrinsic::Geometry(Geometry::WarpSize)
                ) {
                    if self.options.subgroups {
                        self.subgroups = true;
                    } else {
                        self.report(
                            Diagnostic::error(span, "WGSL warp operations need 32-lane subgroups, which this device (or these options) do not provide")
                                .with_label("warp operation used here")
                                .with_note("WGSL exposes warps as subgroups (`enable subgroups;`); the device or the options disable them"),
                        );
                    }
                }
                args.iter().for_each(|a| self.expr(span, a))
            }
        }
    }
}
