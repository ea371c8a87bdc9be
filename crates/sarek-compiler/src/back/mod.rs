//! Target generators, one folder per target. The C-family targets (OpenCL C, CUDA C, Metal)
//! share one emitter parameterised by a dialect.

pub mod cfamily;
pub mod glsl;
pub mod loops;
pub mod names;
pub mod ptx;
pub mod softmath;
pub mod support;
pub mod text;
pub mod wgsl;

use std::borrow::Cow;
use std::cell::OnceCell;

use crate::diag::Diagnostic;
use crate::ir::analysis::Needs;
use crate::ir::{Expr, ExprKind, Kernel, VarId};
use crate::passes::legalize::{Params, Scoping};
use crate::target::{Generated, Target, TargetOptions};
use crate::types::{BinOp, Literal};

/// What every target's generation of one kernel starts from: the kernel after the
/// target-independent passes the options ask for ([`crate::passes::for_target`]) and what
/// it needs ([`Needs::of`]). Computed once when one kernel is written for several targets,
/// as are, on first use, what several targets share further on: legalize's scoping decision
/// for shaders (WGSL, GLSL), the C family's kernel with its loop steps marked, and the
/// kernel with its constants folded (GLSL, PTX).
pub struct Prepared<'k> {
    pub kernel: Cow<'k, Kernel>,
    pub needs: Needs,
    module_scoping: OnceCell<Scoping>,
    c_family: OnceCell<(Option<Kernel>, Scoping)>,
    folded: OnceCell<Kernel>,
}

impl<'k> Prepared<'k> {
    pub fn new(kernel: &'k Kernel, options: &TargetOptions) -> Self {
        let kernel = crate::passes::for_target(kernel, options);
        let needs = Needs::of(&kernel);
        Prepared {
            kernel,
            needs,
            module_scoping: OnceCell::new(),
            c_family: OnceCell::new(),
            folded: OnceCell::new(),
        }
    }

    /// The kernel with its constants folded exactly ([`crate::passes::constfold`]): what
    /// GLSL writes (glslang would fold float32 in double) and PTX optimises.
    pub fn folded(&self) -> &Kernel {
        self.folded
            .get_or_init(|| crate::passes::constfold::fold_constants(&self.kernel))
    }

    /// [`Self::folded`], moved out (folded now if no target asked for it yet): for the last
    /// target to use it, which rewrites it (PTX's optimiser).
    pub fn take_folded(&mut self) -> Kernel {
        self.folded
            .take()
            .unwrap_or_else(|| crate::passes::constfold::fold_constants(&self.kernel))
    }

    /// [`Scoping::of`] the kernel with module-scope parameters (the shaders').
    pub fn module_scoping(&self) -> &Scoping {
        self.module_scoping
            .get_or_init(|| Scoping::of(&self.kernel, Params::ModuleScope))
    }

    /// The kernel the C-family dialects write, and its positional [`Scoping`]: counted loops
    /// whose step cannot overflow get a plain signed step, `while v > 0 do ... v := v / 2`
    /// divides by a shift (issue 14).
    pub fn c_family(&self) -> (&Kernel, &Scoping) {
        let (stepped, scoping) = self.c_family.get_or_init(|| {
            let stepped = match crate::passes::loop_step::mark_loop_steps(&self.kernel) {
                Cow::Borrowed(_) => None,
                // Only `while` loops have such divisions, and a kernel without any comes back
                // borrowed.
                Cow::Owned(mut stepped) => {
                    crate::passes::opt::shift_guarded_divisions(&mut stepped);
                    Some(stepped)
                }
            };
            let scoping = Scoping::of(stepped.as_ref().unwrap_or(&self.kernel), Params::Positional);
            (stepped, scoping)
        });
        (stepped.as_ref().unwrap_or(&self.kernel), scoping)
    }
}

/// Dispatch to the generator for `target`. `Target::Ir` returns the IR printer's output.
pub fn generate(
    kernel: &Kernel,
    target: Target,
    options: &TargetOptions,
) -> Result<Generated, Vec<Diagnostic>> {
    if target == Target::Ir {
        return generate_prepared(kernel, None, target, options);
    }
    if let Some(d) = crate::ir::specialize::unspecialized(kernel, target.display_name()) {
        return Err(vec![d]);
    }
    generate_prepared(
        kernel,
        Some(&Prepared::new(kernel, options)),
        target,
        options,
    )
}

/// [`generate`] for each of `targets`, in order, sharing the work that does not depend on
/// the target ([`Prepared`]).
pub fn generate_many(
    kernel: &Kernel,
    targets: &[Target],
    options: &TargetOptions,
) -> Vec<Result<Generated, Vec<Diagnostic>>> {
    let mut prepared = None;
    targets
        .iter()
        .enumerate()
        .map(|(i, &target)| {
            if target == Target::Ir {
                return generate_prepared(kernel, None, target, options);
            }
            if let Some(d) = crate::ir::specialize::unspecialized(kernel, target.display_name()) {
                return Err(vec![d]);
            }
            let p = prepared.get_or_insert_with(|| Prepared::new(kernel, options));
            // PTX optimises the folded kernel in place when no later target reads it.
            let folded_later = || {
                targets[i + 1..]
                    .iter()
                    .any(|t| matches!(t, Target::Glsl | Target::Ptx))
            };
            if target == Target::Ptx && !folded_later() {
                return ptx::generate_taking_folded(p, options);
            }
            generate_prepared(kernel, Some(p), target, options)
        })
        .collect()
}

/// The generator for `target` from `prepared` (`None` only for `Target::Ir`).
fn generate_prepared(
    kernel: &Kernel,
    prepared: Option<&Prepared<'_>>,
    target: Target,
    options: &TargetOptions,
) -> Result<Generated, Vec<Diagnostic>> {
    let Some(p) = prepared.filter(|_| target != Target::Ir) else {
        return Ok(Generated {
            source: crate::ir::print::print_kernel(kernel),
            abi: crate::abi::Abi {
                entry_point: kernel.name.clone(),
                params: Vec::new(),
                uniform_size: None,
                uniform_binding: None,
                block_size_in_source: false,
                trap_status: None,
            },
        });
    };
    match target {
        Target::Ir => unreachable!("the IR printout is handled above"),
        Target::Wgsl => wgsl::generate_prepared(p, options),
        Target::Glsl => glsl::generate_prepared(p, options, glsl::Warps::Native),
        Target::OpenCl => cfamily::generate_prepared(p, cfamily::Dialect::OpenCl, options),
        Target::Cuda => cfamily::generate_prepared(p, cfamily::Dialect::Cuda, options),
        Target::Metal => cfamily::generate_prepared(p, cfamily::Dialect::Metal, options),
        Target::Ptx => ptx::generate_prepared(p, options),
    }
}

/// Float divisions by a zero a shader writes as products with an infinity: `x / 0.0` is
/// `x * inf` and `x / -0.0` is `x * -inf` for every `x` (IEEE 754: a signed infinity, NaN
/// for a zero or NaN `x`). Mesa's lavapipe compiles a division of a run-time value by a
/// constant zero as undefined (fast-math without infinities), so `o.(i) <- x.(i) /. 0.0`
/// stored nothing on `vulkan` and `wgpu`; a product with an infinity it computes. The divisor
/// is a literal or an immutable local bound to one (the writer reports its `let`s in order,
/// [`Self::note_let`]). A constant dividend keeps the division, which the driver folds
/// (into the product, lavapipe would fold `0.0 * inf` to 0 rather than NaN).
#[derive(Default)]
pub struct ZeroDivisors {
    literal_lets: crate::hash::FxHashMap<VarId, Literal>,
}

impl ZeroDivisors {
    /// Records `let var = init` (`mutable`: assigned later, so never a known constant).
    pub fn note_let(&mut self, var: VarId, mutable: bool, init: Option<&Expr>) {
        if let (false, Some(l)) = (mutable, init.and_then(|e| self.literal(e))) {
            self.literal_lets.insert(var, l);
        }
    }

    /// The infinity to multiply `lhs` by instead of `op` with divisor `rhs`, if that is a
    /// float division of a run-time value by a known zero (`lhs_constant`: the writer knows
    /// `lhs` is a constant expression).
    pub fn infinity(
        &self,
        op: BinOp,
        lhs: &Expr,
        lhs_constant: bool,
        rhs: &Expr,
    ) -> Option<Literal> {
        if op != BinOp::Div || lhs_constant || self.literal(lhs).is_some() {
            return None;
        }
        match self.literal(rhs)? {
            Literal::F32(z) if z == 0.0 => Some(Literal::F32(f32::INFINITY.copysign(z))),
            Literal::F64(z) if z == 0.0 => Some(Literal::F64(f64::INFINITY.copysign(z))),
            _ => None,
        }
    }

    fn literal(&self, e: &Expr) -> Option<Literal> {
        match &e.kind {
            ExprKind::Lit(l) => Some(*l),
            ExprKind::Var(v) => self.literal_lets.get(v).copied(),
            _ => None,
        }
    }
}
