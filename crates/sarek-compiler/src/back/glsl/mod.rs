//! GLSL 4.50 compute generator (for Vulkan through SPIR-V).
//!
//! Design, in the order the module is emitted:
//! - names: legalize ([`crate::passes::legalize`]) runs first (kernel parameters are module-scope names: a binder that is
//!   not an identifier, is reserved or redeclares a visible name becomes `<name>_<k>`), then
//!   every user name is spelled once by the namer ([`crate::back::names::Namer::segment`]:
//!   escaped into the `sarek_` namespace when reserved, shortened past glslang's 1,024
//!   characters). Every name the generator mints starts with `sarek_` followed by a stem no
//!   reserved word starts with (`t_`, `len_`, `sh`, `h_`, `mk_`, `s<n>_`, `pc`), so it
//!   collides with no escaped user name.
//! - the workgroup size is `local_size_{x,y,z}_id = 0, 1, 2` specialization constants, so one
//!   SPIR-V module serves every block size ([`Abi::block_size_in_source`] is false);
//! - records, tuples and variants are structs (`sarek_t_<name>`; a variant is
//!   `{ int tag; payload fields flattened }` with constructor functions `sarek_mk_<T>_<C>`),
//!   laid out by the std430 rules [`abi::elem_layout`] computes (bool is stored as a 32-bit
//!   value: glslang converts `bool` members of blocks to `uint`);
//! - every vector parameter is a std430 storage buffer (`set = 0, binding = k`, in parameter
//!   order) whose only member is a runtime array spelled like the parameter;
//! - scalars, by-value records/variants and the int32 length of every vector live in one
//!   push-constant block `sarek_pc`, in parameter order, each member with an explicit
//!   `layout(offset = N)` computed by the same code that fills the ABI descriptor (past the
//!   128 bytes every device guarantees, the same block becomes a read-only storage buffer);
//! - a kernel with traps ([`crate::ir::Trap`]) gets one more storage buffer, `sarek_trap`,
//!   after every other binding; a trap is `atomicMax(sarek_trap, code)`;
//! - shared arrays are module-scope `shared` variables; float32 atomics are compare-exchange
//!   loops on `floatBitsToUint` (buffers get a `uint` alias of the same binding, shared arrays
//!   used that way are stored as `uint`);
//! - GLSL cannot pass buffers or shared arrays to functions, so a helper with vector or array
//!   parameters is specialised per tuple of arrays it is called with
//!   ([`crate::passes::specialize_helpers`], named `sarek_s<n>_<name>` in call order);
//!   per-thread local arrays are passed as `inout T a[N]`.
//!
//! Float32 must compute as float32 (F12 in tests/conformance/FINDINGS.md): glslang parses
//! float literals as doubles and folds constant expressions in double, rounding once at the
//! end (or never, when the result is widened). So the kernel goes through
//! [`crate::passes::constfold`] first, which folds what IEEE 754 defines exactly with the
//! interpreter's semantics, and the float32 literals of any constant expression left (a
//! transcendental of a constant) are written as `uintBitsToFloat(0x...u)`, which glslang
//! does not fold through; lone literals are written in a decimal glslang reads back exactly.
//!
//! GLSL has no float64 exp, log, trigonometric or hyperbolic functions, nor pow: those are the
//! software routines PTX uses too ([`crate::back::softmath`]), written in GLSL by `f64math`.
//! What the device lacks (float64, int64 atomics, native subgroups) is refused before
//! writing by [`crate::ir::analysis`] against [`super::support::glsl`].

mod emit;
mod f64math;
pub mod keywords;

use crate::abi::{self, Abi, AbiParam, AbiParamKind, ArgSlot, LayoutRules};
use crate::diag::Diagnostic;
use crate::ir::{Kernel, Ty, VarId};
use crate::passes::legalize::renames_in;
use crate::target::{Generated, TargetOptions};

/// Generate a GLSL 4.50 compute shader and its ABI descriptor for `kernel`.
/// Warp operations use native subgroups (`GL_KHR_shader_subgroup_*`): the device's subgroup
/// size must be the language's warp size, 32. [`generate_with`] can emulate them instead.
pub fn generate(kernel: &Kernel, options: &TargetOptions) -> Result<Generated, Vec<Diagnostic>> {
    generate_with(kernel, options, Warps::Native)
}

/// How the generator compiles warp operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Warps {
    /// `GL_KHR_shader_subgroup_*`, for devices whose subgroup size is 32. Refused with a
    /// located error when `options.subgroups` is false.
    Native,
    /// Through shared memory and barriers, warps being 32 consecutive threads of the block as
    /// in the interpreter: exact on any device (lavapipe's subgroups have 8 lanes), slower.
    Emulated,
}

/// [`generate`], choosing how warp operations are compiled.
pub fn generate_with(
    kernel: &Kernel,
    options: &TargetOptions,
    warps: Warps,
) -> Result<Generated, Vec<Diagnostic>> {
    generate_prepared(&super::Prepared::new(kernel, options), options, warps)
}

/// [`generate_with`] from the target-independent preparation several targets share.
pub fn generate_prepared(
    prepared: &super::Prepared<'_>,
    options: &TargetOptions,
    warps: Warps,
) -> Result<Generated, Vec<Diagnostic>> {
    crate::ir::analysis::accept(&prepared.needs, &super::support::glsl(options, warps))?;
    // glslang folds constant float32 expressions in double: fold them first, exactly.
    let kernel = prepared.folded();
    let renames = renames_in(kernel, prepared.module_scoping(), &keywords::KEYWORDS);
    // GLSL functions cannot take buffers or shared arrays: one copy per call shape, made with
    // legalize's names.
    let spec = crate::passes::specialize_helpers::specialize_renamed(kernel, renames);
    debug_assert_eq!(
        crate::ir::validate::validate(&spec.kernel),
        Ok(()),
        "specialisation produced invalid IR"
    );
    emit::Writer::new(&spec, warps).generate()
}

/// One member of the push-constant block.
struct PushMember {
    /// GLSL member name.
    name: String,
    /// GLSL type.
    ty: String,
    offset: u32,
}

/// The parameter bindings: storage buffers, the push-constant block and the ABI descriptor,
/// computed together so that they cannot drift.
struct Bindings {
    abi: Abi,
    push: Vec<PushMember>,
    /// (binding, GLSL element type, member name, parameter var) per vector parameter.
    buffers: Vec<(u32, String, String, VarId)>,
}

/// The push-constant size every Vulkan device offers (`maxPushConstantsSize` minimum).
pub const MAX_PUSH_CONSTANTS: u32 = 128;

/// Byte alignment of a by-value type under std430: its largest leaf.
fn std430_align(layout: &abi::ElemLayout) -> u32 {
    layout
        .leaves
        .iter()
        .map(|(_, s)| s.size())
        .max()
        .unwrap_or(4)
        .max(4)
}

impl emit::Writer<'_> {
    fn bindings(&self) -> Bindings {
        let k = self.k;
        let mut params = Vec::new();
        let mut push = Vec::new();
        let mut buffers = Vec::new();
        let mut offset = 0u32;
        let mut max_align = 4u32;
        let mut binding = 0u32;
        for p in &k.params {
            let info = k.var(*p);
            let kind = match &info.ty {
                Ty::Vector(elem) => {
                    let layout = abi::elem_layout(k, elem, LayoutRules::Std430);
                    let name = self.names[p.0 as usize].clone();
                    buffers.push((binding, self.ty(elem), name.clone(), *p));
                    offset = abi::round_up(offset, 4);
                    push.push(PushMember {
                        name: self.length_name(*p),
                        ty: "int".into(),
                        offset,
                    });
                    let length = ArgSlot::Uniform { offset };
                    offset += 4;
                    let buffer = ArgSlot::Binding { group: 0, binding };
                    binding += 1;
                    AbiParamKind::Vector {
                        elem: layout,
                        buffer,
                        length,
                    }
                }
                ty => {
                    let layout = abi::elem_layout(k, ty, LayoutRules::Std430);
                    let align = std430_align(&layout);
                    max_align = max_align.max(align);
                    offset = abi::round_up(offset, align);
                    push.push(PushMember {
                        name: self.param_member(*p),
                        ty: self.ty(ty),
                        offset,
                    });
                    let slot = ArgSlot::Uniform { offset };
                    offset += layout.stride;
                    AbiParamKind::Value { layout, slot }
                }
            };
            params.push(AbiParam {
                name: info.name.clone(),
                ty: info.ty.clone(),
                kind,
            });
        }
        let uniform_size = (!push.is_empty()).then(|| abi::round_up(offset, max_align));
        // Push constants are guaranteed only up to 128 bytes: past that the same block, with
        // the same std430 offsets, is a read-only storage buffer after the vectors' bindings.
        let uniform_binding = uniform_size
            .filter(|s| *s > MAX_PUSH_CONSTANTS)
            .map(|_| (0, binding));
        let trap_status = (!k.traps().is_empty()).then(|| ArgSlot::Binding {
            group: 0,
            binding: binding + u32::from(uniform_binding.is_some()),
        });
        let abi = Abi {
            entry_point: "main".into(),
            params,
            uniform_size,
            // None: push constants (no descriptor); Some: the parameter buffer's binding.
            uniform_binding,
            // local_size_{x,y,z}_id: the block size is a specialization constant.
            block_size_in_source: false,
            trap_status,
        };
        Bindings { abi, push, buffers }
    }

    /// The push-constant member holding a scalar/record/variant parameter.
    fn param_member(&self, p: VarId) -> String {
        self.names[p.0 as usize].clone()
    }

    /// The push-constant member holding a vector parameter's length.
    fn length_name(&self, p: VarId) -> String {
        format!("sarek_len_{}", self.names[p.0 as usize])
    }
}
