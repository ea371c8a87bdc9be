//! What the playground asks of the compiler, as plain Rust functions (the C ABI in `lib.rs`
//! only moves bytes in and out). Every function takes the whole source and starts from
//! scratch: compiling a corpus kernel takes milliseconds, and keeping no state between
//! calls means a call can never see a stale program.
//!
//! Each returns a [`Reply`]: a JSON object (always with `ok` and `diagnostics`) and a binary
//! part holding buffer bytes and vector columns, which JSON would neither carry exactly
//! (NaN, float32 bits) nor quickly.

use crate::harness::{self, ArgValue, Column, HostVector, LaunchConfig};
use crate::json::Json;
use sarek_compiler::abi::{self, Abi, AbiParamKind, ArgSlot, ElemLayout, Stored};
use sarek_compiler::diag::{self, Diagnostic, Label, Severity, SourceMap};
use sarek_compiler::front::tast::Program;
use sarek_compiler::ir::analysis::Limit;
use sarek_compiler::ir::{Kernel, Ty};
use sarek_compiler::types::{Literal, Scalar};
use sarek_compiler::{FileId, Target, TargetOptions};

/// A reply: JSON text and the binary data its `offset`/`size` fields point into.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reply {
    pub json: String,
    pub binary: Vec<u8>,
}

/// A source file as the editor holds it.
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    /// The name diagnostics show (`saxpy.sarek`).
    pub file: &'a str,
    pub text: &'a str,
}

/// What the page knows about its WebGPU device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// The adapter's name, for refusals ("binds at most 8 ...").
    pub name: String,
    pub max_storage_buffers: u32,
    pub max_invocations: u32,
    pub max_size: [u32; 3],
    pub max_workgroups: u32,
}

impl Default for DeviceLimits {
    /// WebGPU's guaranteed minimums.
    fn default() -> Self {
        DeviceLimits {
            name: "WebGPU".into(),
            max_storage_buffers: 8,
            max_invocations: 256,
            max_size: [256, 256, 64],
            max_workgroups: 65535,
        }
    }
}

/// One launch, as `sarek run` takes it.
#[derive(Clone, Debug)]
pub struct RunRequest<'a> {
    pub source: Source<'a>,
    pub kernel: &'a str,
    /// Length of every generated vector; `None`: the first typed vector's, else 1024.
    pub size: Option<usize>,
    pub seed: u64,
    /// `NAME=VALUE` scalar and by-value arguments.
    pub args: Vec<(String, String)>,
    /// `NAME=VALUES` typed vectors ([`harness::typed_vector`]).
    pub vectors: Vec<(String, String)>,
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    pub options: TargetOptions,
    pub limits: DeviceLimits,
}

// ---------------------------------------------------------------------------------------
// Diagnostics

/// Line and column (1-based, columns in characters) of both ends of a span.
fn place(sources: &SourceMap, span: diag::Span) -> Json {
    if span.is_dummy() {
        return Json::Null;
    }
    let (line, column) = sources.line_col(span.file, span.start);
    let (end_line, end_column) = sources.line_col(span.file, span.end);
    Json::obj([
        ("line", Json::num(line as f64)),
        ("column", Json::num(column as f64)),
        ("endLine", Json::num(end_line as f64)),
        ("endColumn", Json::num(end_column as f64)),
    ])
}

fn diagnostic_json(d: &Diagnostic, sources: &SourceMap) -> Json {
    let secondary = |l: &Label| {
        Json::obj([
            ("at", place(sources, l.span)),
            ("message", Json::str(&l.message)),
        ])
    };
    Json::obj([
        (
            "severity",
            Json::str(match d.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            }),
        ),
        ("message", Json::str(&d.message)),
        ("at", place(sources, d.span)),
        ("label", Json::str(&d.label)),
        (
            "secondary",
            Json::Arr(d.secondary.iter().map(secondary).collect()),
        ),
        ("notes", Json::Arr(d.notes.iter().map(Json::str).collect())),
        ("help", Json::Arr(d.help.iter().map(Json::str).collect())),
        ("rendered", Json::str(d.render(sources, false))),
    ])
}

/// A failure the page shows: located diagnostics, or one unlocated message (rendered
/// `error: ...` as the CLI prints it).
#[derive(Clone, Debug)]
enum Failure {
    Located(Vec<Diagnostic>),
    Message(String),
}

impl Failure {
    fn reply(self, sources: &SourceMap, kind: &str) -> Reply {
        let (diagnostics, rendered) = match self {
            Failure::Located(ds) => (
                ds.iter().map(|d| diagnostic_json(d, sources)).collect(),
                diag::render_all(&ds, sources, false),
            ),
            Failure::Message(m) => {
                let rendered = format!("error: {m}\n");
                (
                    vec![Json::obj([
                        ("severity", Json::str("error")),
                        ("message", Json::str(m)),
                        ("at", Json::Null),
                        ("label", Json::str("")),
                        ("secondary", Json::Arr(vec![])),
                        ("notes", Json::Arr(vec![])),
                        ("help", Json::Arr(vec![])),
                        ("rendered", Json::str(&rendered)),
                    ])],
                    rendered,
                )
            }
        };
        Reply {
            json: Json::obj([
                ("ok", Json::Bool(false)),
                ("failure", Json::str(kind)),
                ("diagnostics", Json::Arr(diagnostics)),
                ("rendered", Json::str(rendered)),
            ])
            .to_text(),
            binary: Vec::new(),
        }
    }
}

fn ok_reply(mut fields: Vec<(String, Json)>, binary: Vec<u8>) -> Reply {
    fields.insert(0, ("ok".into(), Json::Bool(true)));
    fields.push(("diagnostics".into(), Json::Arr(vec![])));
    fields.push(("rendered".into(), Json::str("")));
    Reply {
        json: Json::Obj(fields).to_text(),
        binary,
    }
}

/// A request's argument error, as `sarek run` prints it (`error: ...`).
pub fn argument_error(source: Source, message: String) -> Reply {
    let (sources, _) = load(source);
    Failure::Message(message).reply(&sources, "arguments")
}

fn load(source: Source) -> (SourceMap, FileId) {
    let mut sources = SourceMap::new();
    let file = sources.add(source.file, source.text);
    (sources, file)
}

/// The checked program, or the reply showing why there is none.
fn checked(sources: &SourceMap, file: FileId) -> Result<Program, Reply> {
    sarek_compiler::check(sources, file).map_err(|ds| Failure::Located(ds).reply(sources, "source"))
}

/// The CLI's message for a kernel name the file does not define.
fn unknown_kernel(program: &Program, file: &str, name: &str) -> String {
    let names: Vec<&str> = program.kernels.iter().map(|k| k.name.as_str()).collect();
    let mut msg = format!("no kernel `{name}` in {file}");
    if let Some(c) = diag::closest(name, names.iter().copied()) {
        msg.push_str(&format!("; did you mean `{c}`?"));
    } else if names.is_empty() {
        msg.push_str(" (it defines no kernel)");
    } else {
        msg.push_str(&format!(" (kernels: {})", names.join(", ")));
    }
    msg
}

/// The lowered kernel `name`, or the reply saying why not.
fn lowered(
    program: &Program,
    req_source: Source,
    sources: &SourceMap,
    name: &str,
) -> Result<Kernel, Reply> {
    if !program.kernels.iter().any(|k| k.name == name) {
        return Err(
            Failure::Message(unknown_kernel(program, req_source.file, name))
                .reply(sources, "arguments"),
        );
    }
    sarek_compiler::lower_kernel(program, name)
        .map_err(|ds| Failure::Located(ds).reply(sources, "source"))
}

// ---------------------------------------------------------------------------------------
// compile

/// `sarek compile FILE --target T`: every kernel of the file in source order, separated by
/// `// ==== kernel NAME ====` lines when there are several, or every diagnostic of every
/// kernel. The ABI descriptor of each kernel comes along.
pub fn compile(source: Source, target: &str, options: &TargetOptions) -> Reply {
    let (sources, file) = load(source);
    let target: Target = match target.parse() {
        Ok(t) => t,
        Err(e) => return Failure::Message(e).reply(&sources, "arguments"),
    };
    let program = match checked(&sources, file) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let mut modules = Vec::new();
    let mut diags = Vec::new();
    for k in &program.kernels {
        let ir = match sarek_compiler::lower_kernel(&program, &k.name) {
            Ok(ir) => ir,
            Err(ds) => return Failure::Located(ds).reply(&sources, "source"),
        };
        match sarek_compiler::generate(&ir, target, options) {
            Ok(g) => modules.push((ir, g)),
            Err(ds) => diags.extend(ds),
        }
    }
    if !diags.is_empty() {
        return Failure::Located(diags).reply(&sources, "refused");
    }
    let mut code = String::new();
    for (ir, g) in &modules {
        if modules.len() > 1 {
            if !code.is_empty() {
                code.push('\n');
            }
            code.push_str(&format!("// ==== kernel {} ====\n", ir.name));
        }
        code.push_str(&g.source);
        if !code.ends_with('\n') {
            code.push('\n');
        }
    }
    let kernels = modules
        .iter()
        .map(|(ir, g)| Json::obj([("name", Json::str(&ir.name)), ("abi", abi_json(ir, &g.abi))]))
        .collect();
    ok_reply(
        vec![
            ("target".into(), Json::str(target.name())),
            ("code".into(), Json::str(code)),
            ("kernels".into(), Json::Arr(kernels)),
        ],
        Vec::new(),
    )
}

fn scalar_name(s: Scalar) -> &'static str {
    s.name()
}

fn stored_name(s: Stored) -> &'static str {
    match s {
        Stored::Native(s) => scalar_name(s),
        Stored::BoolAsU32 => "bool as u32",
        Stored::BoolAsU8 => "bool as u8",
    }
}

fn slot_json(slot: &ArgSlot) -> Json {
    match slot {
        ArgSlot::Argument(n) => Json::obj([("argument", Json::num(*n))]),
        ArgSlot::Uniform { offset } => Json::obj([("uniformOffset", Json::num(*offset))]),
        ArgSlot::Binding { group, binding } => Json::obj([
            ("group", Json::num(*group)),
            ("binding", Json::num(*binding)),
        ]),
        ArgSlot::None => Json::Null,
    }
}

fn layout_json(kernel: &Kernel, ty: &Ty, layout: &ElemLayout) -> Json {
    let leaves = abi::leaves(kernel, ty);
    Json::obj([
        ("stride", Json::num(layout.stride)),
        (
            "leaves",
            Json::Arr(
                leaves
                    .iter()
                    .zip(&layout.leaves)
                    .map(|(l, (offset, stored))| {
                        Json::obj([
                            ("name", Json::str(&l.name)),
                            ("type", Json::str(scalar_name(l.scalar))),
                            ("offset", Json::num(*offset)),
                            ("stored", Json::str(stored_name(*stored))),
                        ])
                    })
                    .collect(),
            ),
        ),
    ])
}

/// The ABI descriptor: where every parameter goes, the uniform block, the trap word.
fn abi_json(kernel: &Kernel, a: &Abi) -> Json {
    let params = a
        .params
        .iter()
        .map(|p| {
            let type_name = harness::type_name(kernel, &p.ty);
            match &p.kind {
                AbiParamKind::Value { layout, slot } => Json::obj([
                    ("name", Json::str(&p.name)),
                    ("type", Json::str(type_name)),
                    ("kind", Json::str("value")),
                    ("slot", slot_json(slot)),
                    ("layout", layout_json(kernel, &p.ty, layout)),
                ]),
                AbiParamKind::Vector {
                    elem,
                    buffer,
                    length,
                } => {
                    let elem_ty = match &p.ty {
                        Ty::Vector(e) => (**e).clone(),
                        other => other.clone(),
                    };
                    Json::obj([
                        ("name", Json::str(&p.name)),
                        ("type", Json::str(type_name)),
                        ("kind", Json::str("vector")),
                        ("buffer", slot_json(buffer)),
                        ("length", slot_json(length)),
                        ("layout", layout_json(kernel, &elem_ty, elem)),
                    ])
                }
            }
        })
        .collect();
    Json::obj([
        ("entryPoint", Json::str(&a.entry_point)),
        ("params", Json::Arr(params)),
        ("uniformSize", Json::opt(a.uniform_size, Json::num)),
        (
            "uniformBinding",
            Json::opt(a.uniform_binding, |(g, b)| {
                Json::obj([("group", Json::num(g)), ("binding", Json::num(b))])
            }),
        ),
        ("blockSizeInSource", Json::Bool(a.block_size_in_source)),
        ("trapStatus", Json::opt(a.trap_status.as_ref(), slot_json)),
    ])
}

// ---------------------------------------------------------------------------------------
// describe

/// The kernels of a source (their parameters) and its `@run` directives, for the page's
/// Run form.
pub fn describe(source: Source) -> Reply {
    let (sources, file) = load(source);
    let program = match checked(&sources, file) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let directives = match harness::parse_directives(source.text) {
        Ok(ds) => ds,
        Err(e) => {
            return Failure::Message(format!("{}: {e}", source.file)).reply(&sources, "arguments");
        }
    };
    let mut kernels = Vec::new();
    for k in &program.kernels {
        let ir = match sarek_compiler::lower_kernel(&program, &k.name) {
            Ok(ir) => ir,
            Err(ds) => return Failure::Located(ds).reply(&sources, "source"),
        };
        let params = ir
            .params
            .iter()
            .map(|&id| {
                let v = ir.var(id);
                let (kind, leaves) = match &v.ty {
                    Ty::Scalar(_) => ("scalar", abi::leaves(&ir, &v.ty)),
                    Ty::Vector(e) => ("vector", abi::leaves(&ir, e)),
                    other => ("value", abi::leaves(&ir, other)),
                };
                let syntax = match kind {
                    "value" => harness::value_syntax(&ir, &v.ty),
                    _ => String::new(),
                };
                let elem = match &v.ty {
                    Ty::Vector(e) => (**e).clone(),
                    other => other.clone(),
                };
                let when = live_conditions(&ir, &elem);
                Json::obj([
                    ("name", Json::str(&v.name)),
                    ("type", Json::str(harness::type_name(&ir, &v.ty))),
                    ("kind", Json::str(kind)),
                    ("syntax", Json::str(syntax)),
                    (
                        "leaves",
                        Json::Arr(
                            leaves
                                .iter()
                                .zip(&when)
                                .map(|(l, when)| {
                                    Json::obj([
                                        ("name", Json::str(&l.name)),
                                        ("type", Json::str(scalar_name(l.scalar))),
                                        (
                                            "when",
                                            Json::Arr(
                                                when.iter()
                                                    .map(|&(tag, ctor)| {
                                                        Json::Arr(vec![
                                                            Json::num(tag as f64),
                                                            Json::num(ctor as f64),
                                                        ])
                                                    })
                                                    .collect(),
                                            ),
                                        ),
                                    ])
                                })
                                .collect(),
                        ),
                    ),
                ])
            })
            .collect();
        kernels.push(Json::obj([
            ("name", Json::str(&k.name)),
            ("params", Json::Arr(params)),
        ]));
    }
    let directives = directives
        .iter()
        .map(|d| {
            Json::obj([
                ("kernel", Json::str(&d.kernel)),
                ("size", Json::num(d.size as f64)),
                ("grid", Json::opt(d.grid, Json::dims)),
                ("block", Json::opt(d.block, Json::dims)),
                (
                    "args",
                    Json::Obj(
                        d.args
                            .iter()
                            .map(|(k, v)| (k.clone(), Json::str(v)))
                            .collect(),
                    ),
                ),
                ("line", Json::num(d.line as f64)),
            ])
        })
        .collect();
    ok_reply(
        vec![
            ("kernels".into(), Json::Arr(kernels)),
            ("directives".into(), Json::Arr(directives)),
        ],
        Vec::new(),
    )
}

/// For each leaf of `ty` (in [`abi::leaves`] order), when it holds a value: every
/// (tag leaf index, constructor index) it lies under must match, as the runtime's comparison
/// reads a variant (a payload field of a constructor the element does not hold is dead).
pub fn live_conditions(kernel: &Kernel, ty: &Ty) -> Vec<Vec<(usize, usize)>> {
    fn walk(
        kernel: &Kernel,
        ty: &Ty,
        under: &[(usize, usize)],
        out: &mut Vec<Vec<(usize, usize)>>,
    ) {
        match ty {
            Ty::Scalar(_) => out.push(under.to_vec()),
            Ty::Record(id) => {
                for f in &kernel.record(*id).fields {
                    walk(kernel, &f.ty, under, out);
                }
            }
            Ty::Variant(id) => {
                let tag = out.len();
                out.push(under.to_vec());
                for (c, ctor) in kernel.variant(*id).ctors.iter().enumerate() {
                    let mut inner = under.to_vec();
                    inner.push((tag, c));
                    for f in &ctor.fields {
                        walk(kernel, f, &inner, out);
                    }
                }
            }
            Ty::Unit | Ty::Vector(_) | Ty::Array { .. } => {}
        }
    }
    let mut out = Vec::new();
    walk(kernel, ty, &[], &mut out);
    out
}

// ---------------------------------------------------------------------------------------
// Binary columns

/// Appends vector columns to a reply's binary part, each 8-byte aligned, and describes them.
struct Columns {
    binary: Vec<u8>,
    described: Vec<Json>,
}

impl Columns {
    fn new(binary: Vec<u8>) -> Columns {
        Columns {
            binary,
            described: Vec::new(),
        }
    }

    /// Every leaf of vector `param`: key `param` for a vector of scalars, `param.leaf` else.
    fn vector(&mut self, kernel: &Kernel, param: &str, elem: &Ty, v: &HostVector) {
        let leaves = abi::leaves(kernel, elem);
        for (leaf, col) in leaves.iter().zip(&v.columns) {
            while !self.binary.len().is_multiple_of(8) {
                self.binary.push(0);
            }
            let offset = self.binary.len();
            match col {
                Column::Bool(xs) => self.binary.extend(xs.iter().map(|&b| u8::from(b))),
                Column::I32(xs) => xs.iter().for_each(|x| self.binary.extend(x.to_le_bytes())),
                Column::I64(xs) => xs.iter().for_each(|x| self.binary.extend(x.to_le_bytes())),
                Column::F32(xs) => xs.iter().for_each(|x| self.binary.extend(x.to_le_bytes())),
                Column::F64(xs) => xs.iter().for_each(|x| self.binary.extend(x.to_le_bytes())),
            }
            let key = if leaf.name.is_empty() {
                param.to_string()
            } else {
                format!("{param}.{}", leaf.name)
            };
            self.described.push(Json::obj([
                ("key", Json::str(key)),
                ("param", Json::str(param)),
                ("leaf", Json::str(&leaf.name)),
                ("type", Json::str(scalar_name(leaf.scalar))),
                ("offset", Json::num(offset as f64)),
                ("length", Json::num(v.len as f64)),
            ]));
        }
    }
}

/// Every vector argument of `args` as columns.
fn vector_columns(kernel: &Kernel, args: &[ArgValue], columns: &mut Columns) {
    for (&id, arg) in kernel.params.iter().zip(args) {
        let var = kernel.var(id);
        if let (Ty::Vector(elem), ArgValue::Vector(v)) = (&var.ty, arg) {
            columns.vector(kernel, &var.name, elem, v);
        }
    }
}

// ---------------------------------------------------------------------------------------
// inputs

/// The launch size and every argument of `kernel` for `req`: typed vectors parsed, the
/// others generated (the size defaults to the first typed vector's length, as the CLI's to
/// the first `--input` file's).
fn arguments(kernel: &Kernel, req: &RunRequest) -> Result<(usize, Vec<ArgValue>), String> {
    let mut vectors = Vec::new();
    for (name, text) in &req.vectors {
        if vectors
            .iter()
            .any(|(n, _): &(String, HostVector)| n == name)
        {
            return Err(format!("vector `{name}` is given twice"));
        }
        vectors.push((name.clone(), harness::typed_vector(kernel, name, text)?));
    }
    let size = req
        .size
        .or_else(|| vectors.first().map(|(_, v)| v.len))
        .unwrap_or(harness::DEFAULT_SIZE);
    let args = harness::build_args(kernel, size, req.seed, &req.args, &vectors, "")?;
    Ok((size, args))
}

/// The arguments `sarek run` would build: scalars parsed, vectors from the seeded generator.
pub fn inputs(req: &RunRequest) -> Reply {
    let (sources, file) = load(req.source);
    let program = match checked(&sources, file) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let kernel = match lowered(&program, req.source, &sources, req.kernel) {
        Ok(k) => k,
        Err(r) => return r,
    };
    let args = match arguments(&kernel, req) {
        Ok((_, a)) => a,
        Err(m) => return Failure::Message(m).reply(&sources, "arguments"),
    };
    let mut columns = Columns::new(Vec::new());
    vector_columns(&kernel, &args, &mut columns);
    ok_reply(
        vec![("inputs".into(), Json::Arr(columns.described))],
        columns.binary,
    )
}

// ---------------------------------------------------------------------------------------
// prepare / finish: a WebGPU launch

/// Everything a launch needs, derived from the request alone (so `finish` rebuilds it).
struct Plan {
    kernel: Kernel,
    config: LaunchConfig,
    wgsl: String,
    abi: Abi,
    args: Vec<ArgValue>,
    uniform: Vec<u8>,
    /// (parameter index or `None` for the trap word, binding, bytes).
    storage: Vec<(Option<usize>, u32, Vec<u8>)>,
}

fn plan(req: &RunRequest, sources: &SourceMap, file: FileId) -> Result<Plan, Reply> {
    let program = checked(sources, file)?;
    let kernel = lowered(&program, req.source, sources, req.kernel)?;
    let failed = |m: String| Failure::Message(m).reply(sources, "arguments");
    let (size, args) = arguments(&kernel, req).map_err(failed)?;
    let config = harness::launch_config(size, req.grid, req.block);
    check_config(&config, &req.limits).map_err(failed)?;
    // The device refines WGSL's support as the runtime's wgpu backend does.
    let support = sarek_compiler::back::support::wgsl(&req.options)
        .on_device(&req.limits.name)
        .limit(
            Limit::StorageBuffers,
            u64::from(req.limits.max_storage_buffers),
            "the device's limit on storage buffers per shader stage",
        );
    sarek_compiler::ir::analysis::check(&kernel, &support)
        .map_err(|ds| Failure::Located(ds).reply(sources, "refused"))?;
    let generated = sarek_compiler::generate(&kernel, Target::Wgsl, &req.options)
        .map_err(|ds| Failure::Located(merge_refusals(ds)).reply(sources, "refused"))?;
    let abi = generated.abi;
    let mut uniform = vec![0u8; abi.uniform_size.unwrap_or(0) as usize];
    let mut storage = Vec::new();
    for (i, (p, arg)) in abi.params.iter().zip(&args).enumerate() {
        match (&p.kind, arg) {
            (
                AbiParamKind::Value {
                    layout,
                    slot: ArgSlot::Uniform { offset },
                },
                ArgValue::Scalar(v),
            ) => {
                let (off, st) = layout
                    .leaves
                    .first()
                    .copied()
                    .unwrap_or((0, Stored::Native(Scalar::I32)));
                put(&mut uniform, (*offset + off) as usize, st, *v).map_err(failed)?;
            }
            (
                AbiParamKind::Value {
                    layout,
                    slot: ArgSlot::Uniform { offset },
                },
                ArgValue::Aggregate(vs),
            ) => {
                for ((off, st), v) in layout.leaves.iter().zip(vs) {
                    put(&mut uniform, (*offset + off) as usize, *st, *v).map_err(failed)?;
                }
            }
            (
                AbiParamKind::Vector {
                    elem,
                    buffer: ArgSlot::Binding { binding, .. },
                    length,
                },
                ArgValue::Vector(v),
            ) => {
                let len = i32::try_from(v.len)
                    .map_err(|_| failed(format!("vector `{}` is too long", p.name)))?;
                if let ArgSlot::Uniform { offset } = length {
                    put(
                        &mut uniform,
                        *offset as usize,
                        Stored::Native(Scalar::I32),
                        Literal::I32(len),
                    )
                    .map_err(failed)?;
                }
                storage.push((Some(i), *binding, pack(v, elem).map_err(failed)?));
            }
            (AbiParamKind::Value { .. }, _) => {}
            (AbiParamKind::Vector { .. }, _) => {
                return Err(failed(format!(
                    "argument `{}`: the kernel expects a vector",
                    p.name
                )));
            }
        }
    }
    // The trap status word travels as one more storage buffer, zeroed.
    if let Some(ArgSlot::Binding { binding, .. }) = abi.trap_status {
        storage.push((None, binding, vec![0; 4]));
    }
    Ok(Plan {
        kernel,
        config,
        wgsl: generated.source,
        abi,
        args,
        uniform,
        storage,
    })
}

/// The WGSL module, its bind group contents and the dispatch for one launch, with the
/// generated inputs (as columns) for display.
pub fn prepare(req: &RunRequest) -> Reply {
    let (sources, file) = load(req.source);
    let plan = match plan(req, &sources, file) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let mut binary = Vec::new();
    let uniform = plan.abi.uniform_binding.map(|(group, binding)| {
        let offset = binary.len();
        // A uniform buffer's size is a multiple of 16 in WGSL's layout rules.
        let size = plan.uniform.len().max(16).next_multiple_of(16);
        binary.extend(&plan.uniform);
        binary.resize(offset + size, 0);
        Json::obj([
            ("group", Json::num(group)),
            ("binding", Json::num(binding)),
            ("offset", Json::num(offset as f64)),
            ("size", Json::num(size as f64)),
        ])
    });
    let mut buffers = Vec::new();
    for (param, binding, bytes) in &plan.storage {
        while !binary.len().is_multiple_of(8) {
            binary.push(0);
        }
        buffers.push(Json::obj([
            ("binding", Json::num(*binding)),
            (
                "param",
                Json::opt(*param, |i| Json::str(&plan.abi.params[i].name)),
            ),
            ("offset", Json::num(binary.len() as f64)),
            ("size", Json::num(bytes.len() as f64)),
        ]));
        binary.extend(bytes);
    }
    let mut columns = Columns::new(binary);
    vector_columns(&plan.kernel, &plan.args, &mut columns);
    ok_reply(
        vec![
            ("wgsl".into(), Json::str(&plan.wgsl)),
            ("entryPoint".into(), Json::str(&plan.abi.entry_point)),
            ("grid".into(), Json::dims(plan.config.grid)),
            ("block".into(), Json::dims(plan.config.block)),
            ("uniform".into(), Json::opt(uniform, |u| u)),
            ("buffers".into(), Json::Arr(buffers)),
            ("inputs".into(), Json::Arr(columns.described)),
        ],
        columns.binary,
    )
}

/// Decode the storage buffers read back after the launch (`readback`: every buffer of
/// [`prepare`]'s reply, in its order, concatenated): the vectors as columns, or the located
/// fault of a trap the kernel reached.
pub fn finish(req: &RunRequest, readback: &[u8]) -> Reply {
    let (sources, file) = load(req.source);
    let mut plan = match plan(req, &sources, file) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let expected: usize = plan.storage.iter().map(|(_, _, b)| b.len()).sum();
    if readback.len() != expected {
        return Failure::Message(format!(
            "read back {} bytes where the kernel's buffers hold {expected}",
            readback.len()
        ))
        .reply(&sources, "launch");
    }
    let mut at = 0;
    for (param, _, bytes) in &plan.storage {
        let data = &readback[at..at + bytes.len()];
        at += bytes.len();
        match param {
            None => {
                let code = i32::from_le_bytes(data[..4].try_into().unwrap_or([0; 4]));
                if code != 0 {
                    return trap_fault(&plan.kernel, code).reply(&sources, "fault");
                }
            }
            Some(i) => {
                if let (ArgValue::Vector(v), AbiParamKind::Vector { elem, .. }) =
                    (&mut plan.args[*i], &plan.abi.params[*i].kind)
                {
                    unpack(data, v, elem);
                }
            }
        }
    }
    let mut columns = Columns::new(Vec::new());
    vector_columns(&plan.kernel, &plan.args, &mut columns);
    ok_reply(
        vec![("outputs".into(), Json::Arr(columns.described))],
        columns.binary,
    )
}

/// As the runtime's `check_config`, naming this WebGPU device's limits.
fn check_config(config: &LaunchConfig, l: &DeviceLimits) -> Result<(), String> {
    let b = config.block;
    if b.contains(&0) || config.grid.contains(&0) {
        return Err(format!(
            "empty launch: grid {:?}, block {:?}",
            config.grid, b
        ));
    }
    let threads: u64 = b.iter().map(|&x| u64::from(x)).product();
    if (0..3).any(|i| b[i] > l.max_size[i]) || threads > u64::from(l.max_invocations) {
        return Err(format!(
            "block {:?} exceeds this WebGPU device's limits (per axis {:?}, {} threads in all)",
            b, l.max_size, l.max_invocations
        ));
    }
    if config.grid.iter().any(|g| *g > l.max_workgroups) {
        return Err(format!(
            "grid {:?} exceeds this WebGPU device's limit of {} blocks per axis",
            config.grid, l.max_workgroups
        ));
    }
    Ok(())
}

/// How many other places of one refusal are labelled (the runtime's `MAX_EXTRA_PLACES`).
pub const MAX_EXTRA_PLACES: usize = 4;

/// As the runtime's `RuntimeError::refused`: each reason once, its other places secondary
/// labels (at most [`MAX_EXTRA_PLACES`], then a note counting the rest).
pub fn merge_refusals(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut merged: Vec<(Diagnostic, usize)> = Vec::new();
    for d in diagnostics {
        let Some((first, hidden)) = merged
            .iter_mut()
            .find(|(m, _)| m.message == d.message && m.severity == d.severity)
        else {
            merged.push((d, 0));
            continue;
        };
        let places = std::iter::once(Label {
            span: d.span,
            message: d.label,
        })
        .chain(d.secondary);
        for place in places {
            let known =
                place.span == first.span || first.secondary.iter().any(|l| l.span == place.span);
            if place.span.is_dummy() || known {
                continue;
            }
            if first.secondary.len() < MAX_EXTRA_PLACES {
                first.secondary.push(place);
            } else {
                *hidden += 1;
            }
        }
        for n in d.notes {
            if !first.notes.contains(&n) {
                first.notes.push(n);
            }
        }
        for h in d.help {
            if !first.help.contains(&h) {
                first.help.push(h);
            }
        }
    }
    merged
        .into_iter()
        .map(|(mut d, hidden)| {
            if hidden > 0 {
                let s = if hidden == 1 { "" } else { "s" };
                d.notes.push(format!("and {hidden} more place{s}"));
            }
            d
        })
        .collect()
}

/// As the runtime's `device::trap_fault`, for the WebGPU device.
fn trap_fault(kernel: &Kernel, code: i32) -> Failure {
    match u32::try_from(code).ok().and_then(|c| kernel.trap(c)) {
        Some((trap, span)) if !span.is_dummy() => Failure::Located(vec![Diagnostic::error(
            span,
            format!(
                "{} in kernel `{}` (reported by the WebGPU device)",
                trap.message, kernel.name
            ),
        )]),
        Some((trap, _)) => Failure::Message(format!(
            "{} in kernel `{}` (reported by the WebGPU device)",
            trap.message, kernel.name
        )),
        None => Failure::Message(format!(
            "kernel `{}` reported trap code {code}, which it does not contain",
            kernel.name
        )),
    }
}

/// Write one leaf value at `at` as `stored` (WGSL's storage: 32-bit scalars, bools as u32).
fn put(bytes: &mut [u8], at: usize, stored: Stored, v: Literal) -> Result<(), String> {
    let raw: [u8; 4] = match (stored, v) {
        (Stored::BoolAsU32, Literal::Bool(b)) => u32::from(b).to_le_bytes(),
        (Stored::Native(Scalar::I32), Literal::I32(x)) => x.to_le_bytes(),
        (Stored::Native(Scalar::F32), Literal::F32(x)) => x.to_le_bytes(),
        (s, v) => return Err(format!("cannot store {v:?} as {s:?} on WebGPU")),
    };
    bytes
        .get_mut(at..at + 4)
        .ok_or("argument does not fit its slot")?
        .copy_from_slice(&raw);
    Ok(())
}

fn get(bytes: &[u8], at: usize, stored: Stored) -> Literal {
    let raw: [u8; 4] = bytes
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .unwrap_or([0; 4]);
    match stored {
        Stored::BoolAsU32 => Literal::Bool(u32::from_le_bytes(raw) != 0),
        Stored::Native(Scalar::F32) => Literal::F32(f32::from_le_bytes(raw)),
        _ => Literal::I32(i32::from_le_bytes(raw)),
    }
}

/// Pack a host vector into its device layout (at least 4 bytes: WebGPU refuses empty
/// bindings).
fn pack(v: &HostVector, layout: &ElemLayout) -> Result<Vec<u8>, String> {
    let stride = layout.stride as usize;
    let mut bytes = vec![0u8; (v.len.max(1) * stride).max(4).next_multiple_of(4)];
    for (col, (off, stored)) in v.columns.iter().zip(&layout.leaves) {
        for i in 0..v.len {
            put(&mut bytes, i * stride + *off as usize, *stored, col.get(i))?;
        }
    }
    Ok(bytes)
}

fn unpack(bytes: &[u8], v: &mut HostVector, layout: &ElemLayout) {
    let stride = layout.stride as usize;
    for (col, (off, stored)) in v.columns.iter_mut().zip(&layout.leaves) {
        for i in 0..v.len {
            col.set(i, get(bytes, i * stride + *off as usize, *stored));
        }
    }
}
