//! Lowering of the checked program to the IR (seed 003).
//!
//! One call lowers one kernel together with every helper it reaches. The `Lowerer` owns the
//! tables the IR kernel ends up with (variables, records, variants, functions); everything
//! else is a function of the typed expression being lowered.
//!
//! - Types are registered on demand (`types`): every type that reaches a variable, a
//!   parameter, an array, a payload or an expression goes through `Lowerer::ty`, so the
//!   record and variant tables are complete by construction (a variant that only occurs as
//!   a vector parameter's element is registered like any other). Tables are in dependency
//!   order: a type comes after every type its fields mention. Scalar tuples become `_tup_*`
//!   records with fields `_0.._n`.
//! - Expressions (`expr`) lower to statements plus a pure IR expression; `if`/`match` in
//!   value position write a mutable temporary in each branch (or become a `Select` when both
//!   branches are effect-free and cannot fault).
//! - `match` (`pattern`) becomes `StmtKind::Match` on the constructor, with if-chains for
//!   nested, literal and tuple patterns; or-patterns are expanded (bodies duplicated).
//!   Constructor payloads are flat: one IR field per component, a scalar-tuple argument
//!   (`W of (float32 * int32)`) included, so construction, patterns and the `<Ctor>_<k>`
//!   host fields line up field for field.
//! - Vectors and arrays are named, never computed: a `let` of one aliases it, and choosing
//!   one at run time (an `if` over vectors, a helper returning one) is a located error.
//!
//! Every binder gets a fresh IR variable when it is lowered, so a body lowered twice (an
//! or-pattern, a wildcard arm shared by several constructors) never declares one variable
//! twice. Variables keep their source names; legalize renames them per target.

mod expr;
mod pattern;
mod types;

use crate::hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::diag::{Diagnostic, Span, closest};
use crate::front::tast::{self, Program};
use crate::ir::{self, Kernel};

pub use expr::superstep_header;
pub use types::{tuple_component_error, tuple_record_name};

/// Lower kernel `name` of `program` (with every helper it reaches).
pub fn lower_kernel(program: &Program, name: &str) -> Result<Kernel, Vec<Diagnostic>> {
    let Some(kernel) = program.kernels.iter().find(|k| k.name == name) else {
        let mut d = Diagnostic::error(Span::DUMMY, format!("no kernel named `{name}`"));
        match closest(name, program.kernels.iter().map(|k| k.name.as_str())) {
            Some(c) => d = d.with_help(format!("did you mean `{c}`?")),
            None if !program.kernels.is_empty() => {
                let names: Vec<_> = program
                    .kernels
                    .iter()
                    .map(|k| format!("`{}`", k.name))
                    .collect();
                d = d.with_note(format!("kernels in this file: {}", names.join(", ")));
            }
            None => d = d.with_note("this file defines no kernel"),
        }
        return Err(vec![d]);
    };
    let mut lw = Lowerer::new(program);
    match lw.kernel(kernel) {
        Ok(k) => Ok(k),
        Err(Reported) => Err(lw.diags),
    }
}

/// Marker: a diagnostic was pushed to [`Lowerer::diags`]; lowering of the kernel stops.
#[derive(Debug)]
struct Reported;

type LResult<T> = Result<T, Reported>;

/// Key of a registered record: a declared one, or the tuple record of a scalar shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum RecordKey {
    Declared(tast::RecordId),
    Tuple(Vec<crate::types::Scalar>),
}

struct Lowerer<'p> {
    program: &'p Program,
    vars: Vec<ir::VarInfo>,
    /// The IR variable currently bound to each source variable.
    var_map: HashMap<tast::VarId, ir::VarId>,
    records: Vec<ir::Record>,
    record_ids: HashMap<RecordKey, ir::RecordId>,
    variants: Vec<ir::Variant>,
    variant_ids: HashMap<tast::VariantId, ir::VariantId>,
    /// Types being registered (a record reaching itself is refused, not looped on).
    types_in_progress: HashSet<RecordKey>,
    variants_in_progress: HashSet<tast::VariantId>,
    functions: Vec<ir::Function>,
    function_ids: HashMap<tast::FunId, ir::FuncId>,
    functions_in_progress: HashSet<tast::FunId>,
    /// Trap code of each trap site (codes start at 1: 0 is "no trap" on devices).
    traps: HashMap<(Span, String), u32>,
    diags: Vec<Diagnostic>,
}

impl<'p> Lowerer<'p> {
    fn new(program: &'p Program) -> Self {
        Lowerer {
            program,
            vars: Vec::new(),
            var_map: HashMap::default(),
            records: Vec::new(),
            record_ids: HashMap::default(),
            variants: Vec::new(),
            variant_ids: HashMap::default(),
            types_in_progress: HashSet::default(),
            variants_in_progress: HashSet::default(),
            functions: Vec::new(),
            function_ids: HashMap::default(),
            functions_in_progress: HashSet::default(),
            traps: HashMap::default(),
            diags: Vec::new(),
        }
    }

    fn error<T>(&mut self, d: Diagnostic) -> LResult<T> {
        self.diags.push(d);
        Err(Reported)
    }

    /// A compiler bug surfaced as a located error rather than a panic.
    fn internal<T>(&mut self, span: Span, what: impl std::fmt::Display) -> LResult<T> {
        self.error(
            Diagnostic::error(span, format!("internal compiler error in lowering: {what}"))
                .with_note(
                    "this is a bug in the Sarek compiler; please report it with this kernel",
                ),
        )
    }

    fn kernel(&mut self, k: &tast::Kernel) -> LResult<Kernel> {
        let mut params = Vec::new();
        for p in &k.params {
            if p.ty == tast::Ty::Unit {
                continue;
            }
            params.push(self.bind_var(p)?);
        }
        let mut body = Vec::new();
        self.lower_into(&k.body, expr::Dest::Discard, &mut body)?;
        Ok(Kernel {
            name: k.name.clone(),
            span: k.span,
            vars: std::mem::take(&mut self.vars),
            params,
            body,
            records: std::mem::take(&mut self.records),
            variants: std::mem::take(&mut self.variants),
            functions: std::mem::take(&mut self.functions),
        })
    }

    /// A fresh IR variable for a source binder; later references to the binder resolve to it.
    fn bind_var(&mut self, decl: &tast::VarDecl) -> LResult<ir::VarId> {
        let ty = self.ty(&decl.ty, decl.span)?;
        let id = self.new_var(&decl.name, ty, decl.mutable, decl.span);
        self.var_map.insert(decl.id, id);
        Ok(id)
    }

    fn new_var(&mut self, name: &str, ty: ir::Ty, mutable: bool, span: Span) -> ir::VarId {
        let id = ir::VarId(self.vars.len() as u32);
        self.vars.push(ir::VarInfo {
            name: name.to_string(),
            ty,
            mutable,
            span,
        });
        id
    }

    fn lookup(&mut self, id: tast::VarId, span: Span) -> LResult<ir::VarId> {
        match self.var_map.get(&id) {
            Some(v) => Ok(*v),
            None => self.internal(
                span,
                format!("variable {id:?} used before its binder was lowered"),
            ),
        }
    }

    fn find_function(&self, id: tast::FunId) -> Option<&'p tast::Function> {
        let program = self.program;
        program.functions.iter().find(|f| f.id == id)
    }

    /// The IR function for helper `fid`, lowering it (and its callees first) on first use.
    fn function(&mut self, fid: tast::FunId, span: Span) -> LResult<ir::FuncId> {
        if let Some(id) = self.function_ids.get(&fid) {
            return Ok(*id);
        }
        let Some(f) = self.find_function(fid) else {
            return self.internal(span, format!("call to unknown helper {fid:?}"));
        };
        if f.type_params > 0 {
            return self.internal(span, format!("helper `{}` is still polymorphic", f.name));
        }
        if !self.functions_in_progress.insert(fid) {
            return self.internal(
                span,
                format!(
                    "helper `{}` is still recursive (the recursion pass should have removed it)",
                    f.name
                ),
            );
        }
        let mut params = Vec::new();
        for p in &f.params {
            if p.ty == tast::Ty::Unit {
                continue;
            }
            params.push(self.bind_var(p)?);
        }
        if matches!(f.ret, tast::Ty::Vector(_) | tast::Ty::Array { .. }) {
            return self.error(
                Diagnostic::error(f.span, format!("helper `{}` returns a vector or array", f.source_name))
                    .with_label("its result is a buffer chosen at run time")
                    .with_note("a vector or array is a fixed buffer: it can be passed to a helper, not returned")
                    .with_help("return the element (or index) you need instead"),
            );
        }
        let ret = self.ty(&f.ret, f.span)?;
        let dest = if ret == ir::Ty::Unit {
            expr::Dest::Discard
        } else {
            expr::Dest::Return
        };
        let mut body = Vec::new();
        // Callees are lowered on first use, so a chain of helpers nests once per helper.
        crate::stack::grow(|| self.lower_into(&f.body, dest, &mut body))?;
        self.functions_in_progress.remove(&fid);
        let id = ir::FuncId(self.functions.len() as u32);
        self.functions.push(ir::Function {
            name: f.name.clone(),
            span: f.span,
            params,
            ret,
            body,
        });
        self.function_ids.insert(fid, id);
        Ok(id)
    }
}

fn stmt(kind: ir::StmtKind, span: Span) -> ir::Stmt {
    ir::Stmt { kind, span }
}
