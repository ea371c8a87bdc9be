//! Type lowering and on-demand registration of records, variants and tuple records.

use super::{LResult, Lowerer, RecordKey};
use crate::diag::{Diagnostic, Span};
use crate::front::tast::{self, Program};
use crate::front::typer::{aggregate_equality_help, aggregate_equality_message};
use crate::ir;
use crate::types::Scalar;

/// Mangled name of the record synthesized for a scalar tuple shape: `_tup_float32_int32`.
/// The host side (`.npy` fields `_0`, `_1`, ...) and every generator agree on it.
pub fn tuple_record_name(components: &[Scalar]) -> String {
    let names: Vec<&str> = components.iter().map(|s| s.name()).collect();
    format!("_tup_{}", names.join("_"))
}

/// The one located error for a tuple with a non-scalar component, wherever the tuple occurs
/// (vector element, local, payload, call argument, record field): the sentence names no
/// position, so it stays true for all of them.
pub fn tuple_component_error(program: &Program, span: Span, tuple: &tast::Ty) -> Diagnostic {
    let bad = match tuple {
        tast::Ty::Tuple(cs) => cs.iter().find(|c| c.scalar().is_none()),
        _ => None,
    };
    let mut d = Diagnostic::error(
        span,
        format!(
            "tuple type `{}` has a component that is not a scalar",
            ty_name(program, tuple)
        ),
    )
    .with_label("this tuple cannot be stored");
    if let Some(bad) = bad {
        d = d.with_note(format!(
            "tuple components must be int32, int64, float32, float64 or bool; `{}` is not",
            ty_name(program, bad)
        ));
    }
    d.with_help("use a record type for structured components")
}

/// The sentence that says this refusal came from lowering, not from the typer: without it the
/// two gates would be indistinguishable and a test of one could be satisfied by the other.
const BACKSTOP_SENTENCE: &str = "this comparison was refused by lowering's backstop, after type checking accepted it \
(for example through a polymorphic helper instantiated at this type)";

/// Where each argument of a constructor lives in its flattened IR payload: the first field,
/// and the component types when the argument is a scalar tuple (one field each).
pub(crate) struct ArgLayout {
    pub first: u32,
    pub tuple: Option<Vec<tast::Ty>>,
}

/// The payload layout of constructor `ctor` (matches the registration in `Lowerer::variant`).
pub(crate) fn payload_layout(def: &tast::CtorDef) -> Vec<ArgLayout> {
    let mut next = 0u32;
    def.args
        .iter()
        .map(|a| {
            let tuple = match a {
                tast::Ty::Tuple(cs) if cs.iter().all(|c| c.scalar().is_some()) => Some(cs.clone()),
                _ => None,
            };
            let first = next;
            next += tuple.as_ref().map_or(1, |cs| cs.len() as u32);
            ArgLayout { first, tuple }
        })
        .collect()
}

/// Human spelling of a typed-AST type.
pub(crate) fn ty_name(program: &Program, ty: &tast::Ty) -> String {
    match ty {
        tast::Ty::Unit => "unit".into(),
        tast::Ty::Scalar(s) => s.name().into(),
        tast::Ty::Record(id) => program
            .records
            .get(id.0 as usize)
            .map_or_else(|| format!("record#{}", id.0), |r| r.name.clone()),
        tast::Ty::Variant(id) => program
            .variants
            .get(id.0 as usize)
            .map_or_else(|| format!("variant#{}", id.0), |v| v.name.clone()),
        tast::Ty::Tuple(cs) => {
            let parts: Vec<String> = cs
                .iter()
                .map(|c| match c {
                    tast::Ty::Tuple(_) => format!("({})", ty_name(program, c)),
                    _ => ty_name(program, c),
                })
                .collect();
            parts.join(" * ")
        }
        tast::Ty::Vector(e) => format!("{} vector", ty_name(program, e)),
        tast::Ty::Array { elem, .. } => format!("{} array", ty_name(program, elem)),
        tast::Ty::Param(n) => format!("'{}", (b'a' + (*n % 26) as u8) as char),
    }
}

impl Lowerer<'_> {
    /// Lower a type, registering every record and variant it reaches.
    pub(super) fn ty(&mut self, ty: &tast::Ty, span: Span) -> LResult<ir::Ty> {
        Ok(match ty {
            tast::Ty::Unit => ir::Ty::Unit,
            tast::Ty::Scalar(s) => ir::Ty::Scalar(*s),
            tast::Ty::Record(id) => ir::Ty::Record(self.record(*id, span)?),
            tast::Ty::Variant(id) => ir::Ty::Variant(self.variant(*id, span)?),
            tast::Ty::Tuple(cs) => ir::Ty::Record(self.tuple_record(ty, cs, span)?),
            tast::Ty::Vector(e) => ir::Ty::Vector(Box::new(self.ty(e, span)?)),
            tast::Ty::Array { elem, space, size } => ir::Ty::Array {
                elem: Box::new(self.ty(elem, span)?),
                space: *space,
                size: *size,
            },
            tast::Ty::Param(_) => {
                let name = ty_name(self.program, ty);
                return self.internal(
                    span,
                    format!("type variable `{name}` survived monomorphisation"),
                );
            }
        })
    }

    fn record(&mut self, id: tast::RecordId, span: Span) -> LResult<ir::RecordId> {
        let key = RecordKey::Declared(id);
        if let Some(r) = self.record_ids.get(&key) {
            return Ok(*r);
        }
        let program = self.program;
        let Some(def) = program.records.get(id.0 as usize) else {
            return self.internal(span, format!("unknown record {id:?}"));
        };
        if !self.types_in_progress.insert(key.clone()) {
            return self.error(
                Diagnostic::error(
                    def.span,
                    format!("record type `{}` contains itself", def.name),
                )
                .with_label("recursive record")
                .with_note("kernel values have a fixed size, so a record cannot contain itself"),
            );
        }
        let mut fields = Vec::new();
        for f in &def.fields {
            fields.push(ir::Field {
                name: f.name.clone(),
                ty: self.ty(&f.ty, f.span)?,
            });
        }
        self.types_in_progress.remove(&key);
        Ok(self.push_record(
            key,
            ir::Record {
                name: def.name.clone(),
                fields,
                is_tuple: false,
            },
        ))
    }

    fn push_record(&mut self, key: RecordKey, record: ir::Record) -> ir::RecordId {
        let id = ir::RecordId(self.records.len() as u32);
        self.records.push(record);
        self.record_ids.insert(key, id);
        id
    }

    /// The `_tup_*` record of a scalar tuple; any other component is the located tuple error.
    fn tuple_record(
        &mut self,
        ty: &tast::Ty,
        components: &[tast::Ty],
        span: Span,
    ) -> LResult<ir::RecordId> {
        let scalars: Option<Vec<Scalar>> = components.iter().map(tast::Ty::scalar).collect();
        let Some(scalars) = scalars else {
            let d = tuple_component_error(self.program, span, ty);
            return self.error(d);
        };
        let key = RecordKey::Tuple(scalars.clone());
        if let Some(r) = self.record_ids.get(&key) {
            return Ok(*r);
        }
        let fields = scalars
            .iter()
            .enumerate()
            .map(|(k, s)| ir::Field {
                name: format!("_{k}"),
                ty: ir::Ty::Scalar(*s),
            })
            .collect();
        let record = ir::Record {
            name: tuple_record_name(&scalars),
            fields,
            is_tuple: true,
        };
        Ok(self.push_record(key, record))
    }

    fn variant(&mut self, id: tast::VariantId, span: Span) -> LResult<ir::VariantId> {
        if let Some(v) = self.variant_ids.get(&id) {
            return Ok(*v);
        }
        let program = self.program;
        let Some(def) = program.variants.get(id.0 as usize) else {
            return self.internal(span, format!("unknown variant {id:?}"));
        };
        if !self.variants_in_progress.insert(id) {
            return self.error(
                Diagnostic::error(
                    def.span,
                    format!("variant type `{}` contains itself", def.name),
                )
                .with_label("recursive variant")
                .with_note("kernel values have a fixed size, so a variant cannot contain itself"),
            );
        }
        let mut ctors = Vec::new();
        for c in &def.ctors {
            // One IR field per payload component: `Rect of float32 * float32` already has two
            // arguments in the typed AST; `W of (float32 * int32)` has one scalar-tuple
            // argument, flattened the same way (see [`payload_layout`]).
            let mut fields = Vec::new();
            for a in &c.args {
                if let tast::Ty::Tuple(cs) = a
                    && cs.iter().all(|c| c.scalar().is_some())
                {
                    fields.extend(cs.iter().filter_map(|c| c.scalar().map(ir::Ty::Scalar)));
                    continue;
                }
                if *a == tast::Ty::Unit {
                    return self.error(
                        Diagnostic::error(
                            c.span,
                            format!("constructor `{}` has a payload of type unit", c.name),
                        )
                        .with_label("unit payload")
                        .with_help(format!("declare it without a payload: `| {}`", c.name)),
                    );
                }
                fields.push(self.ty(a, c.span)?);
            }
            ctors.push(ir::Ctor {
                name: c.name.clone(),
                fields,
            });
        }
        self.variants_in_progress.remove(&id);
        let vid = ir::VariantId(self.variants.len() as u32);
        self.variants.push(ir::Variant {
            name: def.name.clone(),
            ctors,
        });
        self.variant_ids.insert(id, vid);
        Ok(vid)
    }

    /// The aggregate-equality backstop: an `=`/`<>` on non-scalars that reached lowering.
    /// The body is the typer's own (one owner of the wording); the note says which gate fired.
    pub(super) fn aggregate_equality(
        &mut self,
        operand: &tast::Ty,
        span: Span,
    ) -> LResult<ir::Expr> {
        let name = ty_name(self.program, operand);
        let is_variant = matches!(operand, tast::Ty::Variant(_));
        self.error(
            Diagnostic::error(span, aggregate_equality_message(&name))
                .with_label(format!("this compares values of type `{name}`"))
                .with_note(BACKSTOP_SENTENCE)
                .with_help(aggregate_equality_help(is_variant)),
        )
    }
}
