//! Resolution of an IR kernel into the executor's compact form.
//!
//! Every value variable gets a fixed range of registers, one per scalar leaf (records and
//! variants flattened exactly as [`sarek_compiler::abi::leaves`] does); every expression node
//! gets its own destination registers (no reuse: helpers are never recursive, so one register
//! file serves the whole kernel and calls need no frames). Literals and thread geometry are
//! registers filled before execution, so reading them costs nothing. Field, tag and payload
//! reads are register offsets, not copies. Array and vector variables become memory slots,
//! bound statically (kernel vectors, declared arrays) or at each call (helper parameters).

use super::scalar::{IntFn, lit_bits};
use crate::device::RuntimeError;
use sarek_compiler::Span;
use sarek_compiler::intrinsics::{AtomicOp, Geometry, Intrinsic, MathFn, WarpOp};
use sarek_compiler::ir::{self, Kernel, Ty, VarId};
use sarek_compiler::types::{BinOp, Literal, MemSpace, Scalar, UnOp};
use std::collections::{HashMap, HashSet};

pub(crate) type Reg = u32;

pub(crate) struct Program {
    pub name: String,
    pub nregs: usize,
    /// Registers holding literals: filled once per worker.
    pub consts: Vec<(Reg, u64)>,
    pub geo: GeoRegs,
    pub params: Vec<Param>,
    pub mems: Vec<MemVar>,
    /// Storage sizes (elements, leaves) of the declared shared and local arrays.
    pub shared: Vec<Storage>,
    pub local: Vec<Storage>,
    pub funcs: Vec<Func>,
    pub body: Vec<Stmt>,
}

/// Registers of the geometry values, per axis.
pub(crate) struct GeoRegs {
    pub thread: [Reg; 3],
    pub block: [Reg; 3],
    pub block_dim: [Reg; 3],
    pub grid_dim: [Reg; 3],
    pub global: [Reg; 3],
    pub warp_size: Reg,
}

pub(crate) enum Param {
    /// Scalar, record or variant passed by value: its leaves live in `reg..`.
    Value {
        name: String,
        ty: Ty,
        reg: Reg,
        leaves: Vec<Scalar>,
    },
    /// A vector: global memory slot `global` (index among the vector parameters).
    Vector {
        name: String,
        ty: Ty,
        leaves: Vec<sarek_compiler::abi::Leaf>,
    },
}

pub(crate) struct MemVar {
    pub name: String,
    pub leaves: Vec<Scalar>,
    pub kind: MemKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemKind {
    Global(u32),
    Shared(u32),
    Local(u32),
    /// A helper parameter or an alias: bound at run time.
    Bound,
}

pub(crate) struct Storage {
    pub size: usize,
    pub leaves: usize,
}

pub(crate) struct Func {
    pub params: Vec<FParam>,
    pub ret: Reg,
    pub body: Vec<Stmt>,
}

pub(crate) enum FParam {
    Value { reg: Reg, n: u32 },
    Mem(u32),
}

pub(crate) struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

pub(crate) enum StmtKind {
    Nop,
    Eval(Expr),
    /// Copy `value`'s leaves into the registers from `dst`.
    SetReg {
        dst: Reg,
        value: Expr,
    },
    /// Store `value`'s leaves into element `index` of memory `mem`, from leaf `off`.
    Store {
        mem: u32,
        index: Expr,
        off: u32,
        value: Expr,
    },
    BindMem {
        dst: u32,
        src: u32,
    },
    If {
        cond: Expr,
        then_b: Vec<Stmt>,
        else_b: Vec<Stmt>,
    },
    For {
        var: Reg,
        cnt: Reg,
        end: Reg,
        start: Expr,
        stop: Expr,
        downto: bool,
        body: Vec<Stmt>,
    },
    While {
        cond: Expr,
        body: Vec<Stmt>,
    },
    Match {
        scrut: Expr,
        arms: Vec<Arm>,
    },
    Block(Vec<Stmt>),
    Barrier,
    Return {
        value: Option<Expr>,
        ret: Reg,
    },
    Break,
    Continue,
    /// Stop the launch with this message (the IR's trap).
    Trap(String),
}

pub(crate) struct Arm {
    pub ctor: Option<u32>,
    /// (destination register, source register, leaves).
    pub binds: Vec<(Reg, Reg, u32)>,
    pub body: Vec<Stmt>,
}

pub(crate) struct Expr {
    /// First register of the value.
    pub dst: Reg,
    /// Number of leaves.
    pub n: u32,
    pub kind: ExprKind,
}

pub(crate) enum ExprKind {
    /// The value is already in `dst` (variable, literal, geometry).
    Ready,
    /// The value is a part of the child's registers (field, tag, payload).
    Part(Box<Expr>),
    Bin {
        op: BinOp,
        ty: Scalar,
        a: Box<Expr>,
        b: Box<Expr>,
        guarded: bool,
    },
    Un {
        op: UnOp,
        ty: Scalar,
        a: Box<Expr>,
    },
    IntFn {
        f: IntFn,
        ty: Scalar,
        a: Box<Expr>,
    },
    MinMax {
        max: bool,
        ty: Scalar,
        a: Box<Expr>,
        b: Box<Expr>,
    },
    Math {
        f: MathFn,
        ty: Scalar,
        args: Vec<Expr>,
    },
    Convert {
        from: Scalar,
        to: Scalar,
        a: Box<Expr>,
    },
    /// Element read: `n` leaves from leaf `off` of the element (a field path read straight
    /// from memory, `v.(i).f.g`, reads only the leaves of `g`).
    Load {
        mem: u32,
        index: Box<Expr>,
        off: u32,
    },
    /// Record or constructor: parts at leaf offsets; `tag` and zeroed leaves for variants.
    Pack {
        tag: Option<Reg>,
        parts: Vec<(u32, Expr)>,
        zero: Vec<u32>,
    },
    Select {
        cond: Box<Expr>,
        a: Box<Expr>,
        b: Box<Expr>,
        split: bool,
    },
    Call {
        func: u32,
        args: Vec<Arg>,
    },
    Atomic {
        op: AtomicOp,
        ty: Scalar,
        mem: u32,
        index: Box<Expr>,
        vals: Vec<Expr>,
    },
    Warp {
        op: WarpOp,
        a: Box<Expr>,
        b: Option<Box<Expr>>,
    },
    Length {
        mem: u32,
    },
}

pub(crate) enum Arg {
    Value(Expr),
    Mem(u32),
}

impl Expr {
    /// Whether the node writes its value into `dst` itself (so `dst` may be retargeted), as
    /// opposed to finding it in registers that already hold it.
    fn computes_into_dst(&self) -> bool {
        !matches!(self.kind, ExprKind::Ready | ExprKind::Part(_))
    }

    /// Whether evaluating it can fault or have an effect (so it must only run on the lanes
    /// that really evaluate it: short-circuit operands, select branches).
    fn impure(&self) -> bool {
        match &self.kind {
            ExprKind::Ready | ExprKind::Length { .. } => false,
            ExprKind::Part(a) | ExprKind::Un { a, .. } | ExprKind::IntFn { a, .. } => a.impure(),
            ExprKind::Convert { a, .. } => a.impure(),
            ExprKind::Bin { op, ty, a, b, .. } => {
                (ty.is_int() && matches!(op, BinOp::Div | BinOp::Rem)) || a.impure() || b.impure()
            }
            ExprKind::MinMax { a, b, .. } => a.impure() || b.impure(),
            ExprKind::Math { args, .. } => args.iter().any(Expr::impure),
            ExprKind::Pack { parts, .. } => parts.iter().any(|(_, e)| e.impure()),
            ExprKind::Select { cond, a, b, .. } => cond.impure() || a.impure() || b.impure(),
            ExprKind::Load { .. }
            | ExprKind::Call { .. }
            | ExprKind::Atomic { .. }
            | ExprKind::Warp { .. } => true,
        }
    }
}

/// Number of scalar leaves of a value type.
pub(crate) fn leaf_count(k: &Kernel, ty: &Ty) -> u32 {
    match ty {
        Ty::Scalar(_) => 1,
        Ty::Record(id) => k
            .record(*id)
            .fields
            .iter()
            .map(|f| leaf_count(k, &f.ty))
            .sum(),
        Ty::Variant(id) => {
            1 + k
                .variant(*id)
                .ctors
                .iter()
                .flat_map(|c| &c.fields)
                .map(|t| leaf_count(k, t))
                .sum::<u32>()
        }
        Ty::Unit | Ty::Vector(_) | Ty::Array { .. } => 0,
    }
}

fn leaf_scalars(k: &Kernel, ty: &Ty) -> Vec<Scalar> {
    sarek_compiler::abi::leaves(k, ty)
        .into_iter()
        .map(|l| l.scalar)
        .collect()
}

fn field_offset(k: &Kernel, ty: &Ty, field: u32) -> Result<u32, RuntimeError> {
    match ty {
        Ty::Record(id) => {
            let fields = &k.record(*id).fields;
            if field as usize >= fields.len() {
                return Err(bad(format!(
                    "field {field} of record `{}` does not exist",
                    k.record(*id).name
                )));
            }
            Ok(fields[..field as usize]
                .iter()
                .map(|f| leaf_count(k, &f.ty))
                .sum())
        }
        _ => Err(bad(format!("field access on a value of type {ty:?}"))),
    }
}

fn payload_offset(k: &Kernel, ty: &Ty, ctor: u32, field: u32) -> Result<u32, RuntimeError> {
    match ty {
        Ty::Variant(id) => {
            let ctors = &k.variant(*id).ctors;
            let c = ctors
                .get(ctor as usize)
                .ok_or_else(|| bad(format!("constructor {ctor} does not exist")))?;
            if field as usize >= c.fields.len() {
                return Err(bad(format!(
                    "payload field {field} of `{}` does not exist",
                    c.name
                )));
            }
            let before: u32 = ctors[..ctor as usize]
                .iter()
                .flat_map(|c| &c.fields)
                .map(|t| leaf_count(k, t))
                .sum();
            let within: u32 = c.fields[..field as usize]
                .iter()
                .map(|t| leaf_count(k, t))
                .sum();
            Ok(1 + before + within)
        }
        _ => Err(bad(format!("payload access on a value of type {ty:?}"))),
    }
}

fn bad(message: String) -> RuntimeError {
    RuntimeError::Compile(format!("the interpreter cannot run this IR: {message}"))
}

struct Compiler<'k> {
    k: &'k Kernel,
    nregs: u32,
    consts: HashMap<u64, Reg>,
    var_reg: Vec<Option<Reg>>,
    var_mem: Vec<Option<u32>>,
    mems: Vec<MemVar>,
    /// Return registers of the function being compiled.
    ret: Reg,
}

/// Resolve `k` for execution.
pub(crate) fn compile(k: &Kernel) -> Result<Program, RuntimeError> {
    let mut c = Compiler {
        k,
        nregs: 0,
        consts: HashMap::new(),
        var_reg: vec![None; k.vars.len()],
        var_mem: vec![None; k.vars.len()],
        mems: Vec::new(),
        ret: 0,
    };
    // The first 16 registers: thread, block, block_dim, grid_dim, global (x, y, z each), then
    // warp_size (see `geo_reg`).
    let g = c.alloc(16);
    let axes = |k: u32| [g + 3 * k, g + 3 * k + 1, g + 3 * k + 2];
    let geo = GeoRegs {
        thread: axes(0),
        block: axes(1),
        block_dim: axes(2),
        grid_dim: axes(3),
        global: axes(4),
        warp_size: g + 15,
    };

    // Which variables are declared arrays (they own storage); other memory-typed variables
    // are kernel vectors or bound at run time.
    let mut declared = HashSet::new();
    collect_arrays(&k.body, &mut declared);
    for f in &k.functions {
        collect_arrays(&f.body, &mut declared);
    }
    let mut vector_index = HashMap::new();
    for (i, p) in k.params.iter().enumerate() {
        if matches!(k.var(*p).ty, Ty::Vector(_)) {
            let n = vector_index.len() as u32;
            vector_index.insert(*p, (n, i));
        }
    }
    let (mut shared, mut local) = (Vec::new(), Vec::new());
    for (i, v) in k.vars.iter().enumerate() {
        let id = VarId(i as u32);
        match &v.ty {
            Ty::Vector(elem) | Ty::Array { elem, .. } => {
                let leaves = leaf_scalars(k, elem);
                let kind = if let Some((n, _)) = vector_index.get(&id) {
                    MemKind::Global(*n)
                } else if let (
                    Ty::Array {
                        space,
                        size: Some(size),
                        ..
                    },
                    true,
                ) = (&v.ty, declared.contains(&id))
                {
                    let st = Storage {
                        size: *size as usize,
                        leaves: leaves.len(),
                    };
                    match space {
                        MemSpace::Local => {
                            local.push(st);
                            MemKind::Local(local.len() as u32 - 1)
                        }
                        // A declared array is block-local unless it says per-thread.
                        MemSpace::Shared | MemSpace::Global => {
                            shared.push(st);
                            MemKind::Shared(shared.len() as u32 - 1)
                        }
                    }
                } else {
                    MemKind::Bound
                };
                c.var_mem[i] = Some(c.mems.len() as u32);
                c.mems.push(MemVar {
                    name: v.name.clone(),
                    leaves,
                    kind,
                });
            }
            ty => c.var_reg[i] = Some(c.alloc(leaf_count(k, ty))),
        }
    }

    let mut params = Vec::new();
    for p in &k.params {
        let v = k.var(*p);
        params.push(match &v.ty {
            Ty::Vector(elem) => Param::Vector {
                name: v.name.clone(),
                ty: v.ty.clone(),
                leaves: sarek_compiler::abi::leaves(k, elem),
            },
            Ty::Array { .. } => {
                return Err(bad(format!("kernel parameter `{}` is an array", v.name)));
            }
            ty => Param::Value {
                name: v.name.clone(),
                ty: ty.clone(),
                reg: c.var_reg[p.0 as usize].unwrap(),
                leaves: leaf_scalars(k, ty),
            },
        });
    }

    let mut funcs = Vec::new();
    for f in &k.functions {
        let ret = c.alloc(leaf_count(k, &f.ret));
        c.ret = ret;
        let params = f
            .params
            .iter()
            .map(
                |p| match (c.var_reg[p.0 as usize], c.var_mem[p.0 as usize]) {
                    (Some(reg), _) => FParam::Value {
                        reg,
                        n: leaf_count(k, &k.var(*p).ty),
                    },
                    (None, Some(m)) => FParam::Mem(m),
                    _ => unreachable!("every variable is a value or a memory"),
                },
            )
            .collect();
        let body = c.block(&f.body)?;
        funcs.push(Func { params, ret, body });
    }
    c.ret = c.alloc(0);
    let body = c.block(&k.body)?;
    let mut consts: Vec<_> = c.consts.iter().map(|(v, r)| (*r, *v)).collect();
    consts.sort_unstable();
    Ok(Program {
        name: k.name.clone(),
        nregs: c.nregs as usize,
        consts,
        geo,
        params,
        mems: c.mems,
        shared,
        local,
        funcs,
        body,
    })
}

fn collect_arrays(b: &ir::Block, out: &mut HashSet<VarId>) {
    for s in b {
        match &s.kind {
            ir::StmtKind::Array { var } => {
                out.insert(*var);
            }
            ir::StmtKind::If {
                then_block,
                else_block,
                ..
            } => {
                collect_arrays(then_block, out);
                collect_arrays(else_block, out);
            }
            ir::StmtKind::For { body, .. }
            | ir::StmtKind::While { body, .. }
            | ir::StmtKind::Block(body) => collect_arrays(body, out),
            ir::StmtKind::Match { arms, .. } => {
                arms.iter().for_each(|a| collect_arrays(&a.body, out))
            }
            _ => {}
        }
    }
}

impl Compiler<'_> {
    fn alloc(&mut self, n: u32) -> Reg {
        let r = self.nregs;
        self.nregs += n;
        r
    }

    fn constant(&mut self, bits: u64) -> Reg {
        if let Some(r) = self.consts.get(&bits) {
            return *r;
        }
        let r = self.alloc(1);
        self.consts.insert(bits, r);
        r
    }

    fn mem_of(&self, v: VarId) -> Result<u32, RuntimeError> {
        self.var_mem[v.0 as usize]
            .ok_or_else(|| bad(format!("`{}` is not a vector or array", self.k.var(v).name)))
    }

    fn mem_arg(&self, e: &ir::Expr) -> Result<u32, RuntimeError> {
        match &e.kind {
            ir::ExprKind::Var(v) => self.mem_of(*v),
            _ => Err(bad(
                "a vector or array operand that is not a variable".into()
            )),
        }
    }

    fn block(&mut self, b: &ir::Block) -> Result<Vec<Stmt>, RuntimeError> {
        b.iter().map(|s| self.stmt(s)).collect()
    }

    fn stmt(&mut self, s: &ir::Stmt) -> Result<Stmt, RuntimeError> {
        use ir::StmtKind as S;
        let kind = match &s.kind {
            S::Let { init: None, .. } | S::Array { .. } | S::Fence { .. } => StmtKind::Nop,
            S::Let {
                var,
                init: Some(init),
            } => match (self.var_reg[var.0 as usize], self.var_mem[var.0 as usize]) {
                (Some(dst), _) => {
                    let mut value = self.expr(init)?;
                    // A fresh declaration may be computed straight into the variable (saving
                    // a copy): lanes outside the mask cannot read it before they execute
                    // this `Let` again, since every binder is a distinct variable.
                    if value.computes_into_dst() {
                        value.dst = dst;
                    }
                    StmtKind::SetReg { dst, value }
                }
                (None, Some(dst)) => StmtKind::BindMem {
                    dst,
                    src: self.mem_arg(init)?,
                },
                _ => unreachable!(),
            },
            S::Assign { place, value } => self.assign(place, value)?,
            S::Expr(ir::Expr {
                kind:
                    ir::ExprKind::Intrinsic {
                        op: Intrinsic::BlockBarrier,
                        ..
                    },
                ..
            }) => StmtKind::Barrier,
            S::Expr(ir::Expr {
                kind:
                    ir::ExprKind::Intrinsic {
                        op: Intrinsic::FenceBlock | Intrinsic::FenceDevice,
                        ..
                    },
                ..
            }) => StmtKind::Nop,
            S::Expr(e) => StmtKind::Eval(self.expr(e)?),
            S::If {
                cond,
                then_block,
                else_block,
            } => StmtKind::If {
                cond: self.expr(cond)?,
                then_b: self.block(then_block)?,
                else_b: self.block(else_block)?,
            },
            S::For {
                var,
                start,
                end,
                downto,
                body,
                ..
            } => {
                let var =
                    self.var_reg[var.0 as usize].ok_or_else(|| bad("loop variable".into()))?;
                let (cnt, endr) = (self.alloc(1), self.alloc(1));
                StmtKind::For {
                    var,
                    cnt,
                    end: endr,
                    start: self.expr(start)?,
                    stop: self.expr(end)?,
                    downto: *downto,
                    body: self.block(body)?,
                }
            }
            S::While { cond, body, .. } => StmtKind::While {
                cond: self.expr(cond)?,
                body: self.block(body)?,
            },
            S::Match {
                scrutinee,
                variant,
                arms,
            } => {
                let scrut = self.expr(scrutinee)?;
                let vty = Ty::Variant(*variant);
                let mut carms = Vec::new();
                for a in arms {
                    let mut binds = Vec::new();
                    if let Some(c) = a.ctor {
                        for (k, b) in a.bindings.iter().enumerate() {
                            if let Some(v) = b {
                                let dst = self.var_reg[v.0 as usize]
                                    .ok_or_else(|| bad("match binding".into()))?;
                                let off = payload_offset(self.k, &vty, c, k as u32)?;
                                binds.push((
                                    dst,
                                    scrut.dst + off,
                                    leaf_count(self.k, &self.k.var(*v).ty),
                                ));
                            }
                        }
                    }
                    carms.push(Arm {
                        ctor: a.ctor,
                        binds,
                        body: self.block(&a.body)?,
                    });
                }
                StmtKind::Match { scrut, arms: carms }
            }
            S::Block(b) => StmtKind::Block(self.block(b)?),
            S::Barrier => StmtKind::Barrier,
            S::Return(v) => StmtKind::Return {
                value: v.as_ref().map(|e| self.expr(e)).transpose()?,
                ret: self.ret,
            },
            S::Break => StmtKind::Break,
            S::Continue => StmtKind::Continue,
            S::Trap(t) => StmtKind::Trap(t.message.clone()),
            // A capability limit, not a compiler failure: the IR has no meaning for target
            // source, so this is a refusal located at the statement, like a generator's.
            S::Native(_) => {
                let diag = sarek_compiler::diag::Diagnostic::error(
                    s.span,
                    "opaque native code cannot run on the interpreter or the cpu backend",
                )
                .with_label("target source the IR cannot execute")
                .with_note(
                    "run this kernel on the backend whose language the native code is written in",
                );
                return Err(RuntimeError::refused(
                    sarek_compiler::Target::Ir,
                    &self.k.name,
                    [diag],
                ));
            }
        };
        Ok(Stmt { kind, span: s.span })
    }

    fn assign(&mut self, place: &ir::LValue, value: &ir::Expr) -> Result<StmtKind, RuntimeError> {
        // Walk the field chain down to its root, summing leaf offsets.
        let mut off = 0;
        let mut p = place;
        let mut fields = Vec::new();
        while let ir::LValue::Field { base, field } = p {
            fields.push(*field);
            p = base;
        }
        let mut ty = match p {
            ir::LValue::Var(v) => self.k.var(*v).ty.clone(),
            ir::LValue::Index { base, .. } => self
                .k
                .var(*base)
                .ty
                .elem()
                .cloned()
                .ok_or_else(|| bad("indexed place is not an array".into()))?,
            ir::LValue::Field { .. } => unreachable!(),
        };
        for f in fields.iter().rev() {
            off += field_offset(self.k, &ty, *f)?;
            ty = match &ty {
                Ty::Record(id) => self.k.record(*id).fields[*f as usize].ty.clone(),
                _ => unreachable!("field_offset checked it is a record"),
            };
        }
        match p {
            ir::LValue::Var(v) => {
                let reg = self.var_reg[v.0 as usize]
                    .ok_or_else(|| bad("assignment to a vector variable".into()))?;
                Ok(StmtKind::SetReg {
                    dst: reg + off,
                    value: self.expr(value)?,
                })
            }
            ir::LValue::Index { base, index } => {
                let mem = self.mem_of(*base)?;
                let index = self.expr(index)?;
                Ok(StmtKind::Store {
                    mem,
                    index,
                    off,
                    value: self.expr(value)?,
                })
            }
            ir::LValue::Field { .. } => unreachable!(),
        }
    }

    fn scalar_of(&self, e: &ir::Expr) -> Result<Scalar, RuntimeError> {
        e.ty.scalar()
            .ok_or_else(|| bad(format!("expected a scalar operand, found {:?}", e.ty)))
    }

    fn boxed(&mut self, e: &ir::Expr) -> Result<Box<Expr>, RuntimeError> {
        Ok(Box::new(self.expr(e)?))
    }

    fn expr(&mut self, e: &ir::Expr) -> Result<Expr, RuntimeError> {
        use ir::ExprKind as E;
        let n = leaf_count(self.k, &e.ty);
        let fresh = |c: &mut Self| c.alloc(n);
        let (dst, kind) = match &e.kind {
            E::Lit(l) => (self.constant(lit_bits(*l)), ExprKind::Ready),
            E::Var(v) => {
                let r = self.var_reg[v.0 as usize].ok_or_else(|| {
                    bad(format!("vector `{}` used as a value", self.k.var(*v).name))
                })?;
                (r, ExprKind::Ready)
            }
            E::Binary { op, lhs, rhs, .. } => {
                let ty = self.scalar_of(lhs)?;
                let a = self.boxed(lhs)?;
                let b = self.boxed(rhs)?;
                let guarded = matches!(op, BinOp::And | BinOp::Or) && b.impure();
                (
                    fresh(self),
                    ExprKind::Bin {
                        op: *op,
                        ty,
                        a,
                        b,
                        guarded,
                    },
                )
            }
            E::Unary { op, operand } => {
                let ty = self.scalar_of(operand)?;
                (
                    fresh(self),
                    ExprKind::Un {
                        op: *op,
                        ty,
                        a: self.boxed(operand)?,
                    },
                )
            }
            E::Index { base, index } => {
                let mem = self.mem_of(*base)?;
                (
                    fresh(self),
                    ExprKind::Load {
                        mem,
                        index: self.boxed(index)?,
                        off: 0,
                    },
                )
            }
            E::Field { base, field } => {
                let off = field_offset(self.k, &base.ty, *field)?;
                // A field path ending in an element read loads only the field's leaves: the
                // record's other leaves may be unwritten block-local memory, which is no fault
                // when they are not read (`s.(i).a <- x; ... s.(i).a`).
                let mut path_off = off;
                let mut inner = &**base;
                while let E::Field { base, field } = &inner.kind {
                    path_off += field_offset(self.k, &base.ty, *field)?;
                    inner = base;
                }
                if let E::Index { base, index } = &inner.kind {
                    let mem = self.mem_of(*base)?;
                    let load = ExprKind::Load {
                        mem,
                        index: self.boxed(index)?,
                        off: path_off,
                    };
                    return Ok(Expr {
                        dst: fresh(self),
                        n,
                        kind: load,
                    });
                }
                let b = self.boxed(base)?;
                (b.dst + off, ExprKind::Part(b))
            }
            E::Record { record, fields } => {
                let ty = Ty::Record(*record);
                let mut parts = Vec::new();
                for (i, f) in fields.iter().enumerate() {
                    parts.push((field_offset(self.k, &ty, i as u32)?, self.expr(f)?));
                }
                (
                    fresh(self),
                    ExprKind::Pack {
                        tag: None,
                        parts,
                        zero: Vec::new(),
                    },
                )
            }
            E::Ctor {
                variant,
                ctor,
                fields,
            } => {
                let ty = Ty::Variant(*variant);
                let mut parts = Vec::new();
                let mut mine = HashSet::new();
                for (i, f) in fields.iter().enumerate() {
                    let off = payload_offset(self.k, &ty, *ctor, i as u32)?;
                    let ex = self.expr(f)?;
                    mine.extend(off..off + ex.n);
                    parts.push((off, ex));
                }
                // Other constructors' payload leaves are zeroed so that stored variants are
                // deterministic (backends compare whole columns).
                let zero = (1..n).filter(|o| !mine.contains(o)).collect();
                let tag = self.constant(lit_bits(Literal::I32(*ctor as i32)));
                (
                    fresh(self),
                    ExprKind::Pack {
                        tag: Some(tag),
                        parts,
                        zero,
                    },
                )
            }
            E::Tag(v) => {
                let b = self.boxed(v)?;
                (b.dst, ExprKind::Part(b))
            }
            E::Payload { value, ctor, field } => {
                let off = payload_offset(self.k, &value.ty, *ctor, *field)?;
                let b = self.boxed(value)?;
                (b.dst + off, ExprKind::Part(b))
            }
            E::Select {
                cond,
                then_value,
                else_value,
            } => {
                let cond = self.boxed(cond)?;
                let a = self.boxed(then_value)?;
                let b = self.boxed(else_value)?;
                let split = a.impure() || b.impure();
                (fresh(self), ExprKind::Select { cond, a, b, split })
            }
            E::Call { func, args } => {
                let f = self
                    .k
                    .functions
                    .get(func.0 as usize)
                    .ok_or_else(|| bad(format!("call of function {}", func.0)))?;
                if f.params.len() != args.len() {
                    return Err(bad(format!(
                        "call of `{}` with {} arguments",
                        f.name,
                        args.len()
                    )));
                }
                let mut cargs = Vec::new();
                for (p, a) in f.params.iter().zip(args) {
                    cargs.push(if self.var_mem[p.0 as usize].is_some() {
                        Arg::Mem(self.mem_arg(a)?)
                    } else {
                        Arg::Value(self.expr(a)?)
                    });
                }
                (
                    fresh(self),
                    ExprKind::Call {
                        func: func.0,
                        args: cargs,
                    },
                )
            }
            E::Intrinsic { op, args } => return self.intrinsic(*op, args, e, n),
        };
        Ok(Expr { dst, n, kind })
    }

    fn intrinsic(
        &mut self,
        op: Intrinsic,
        args: &[ir::Expr],
        e: &ir::Expr,
        n: u32,
    ) -> Result<Expr, RuntimeError> {
        let arg = |i: usize| {
            args.get(i)
                .ok_or_else(|| bad(format!("{op:?} is missing operand {}", i + 1)))
        };
        let dst = self.alloc(n);
        let kind = match op {
            Intrinsic::Geometry(g) => {
                let a = |x: sarek_compiler::intrinsics::Axis| x.index();
                let r = match g {
                    Geometry::ThreadIdx(x) => self.geo_reg(0, a(x)),
                    Geometry::BlockIdx(x) => self.geo_reg(3, a(x)),
                    Geometry::BlockDim(x) => self.geo_reg(6, a(x)),
                    Geometry::GridDim(x) => self.geo_reg(9, a(x)),
                    Geometry::GlobalIdx(x) => self.geo_reg(12, a(x)),
                    Geometry::WarpSize => 15,
                };
                return Ok(Expr {
                    dst: r,
                    n: 1,
                    kind: ExprKind::Ready,
                });
            }
            Intrinsic::BlockBarrier | Intrinsic::FenceBlock | Intrinsic::FenceDevice => {
                return Err(bad(format!("{op:?} used as a value")));
            }
            Intrinsic::Warp(w) => {
                let a = Box::new(self.expr(arg(0)?)?);
                let b = match w {
                    WarpOp::VoteAll | WarpOp::VoteAny | WarpOp::Ballot => None,
                    _ => Some(Box::new(self.expr(arg(1)?)?)),
                };
                ExprKind::Warp { op: w, a, b }
            }
            Intrinsic::Atomic(a) => {
                let mem = self.mem_arg(arg(0)?)?;
                let ty = *self.mems[mem as usize]
                    .leaves
                    .first()
                    .filter(|_| self.mems[mem as usize].leaves.len() == 1)
                    .ok_or_else(|| bad("atomic on a vector of aggregates".into()))?;
                let index = Box::new(self.expr(arg(1)?)?);
                let mut vals = Vec::new();
                for i in 0..a.value_operands() {
                    vals.push(self.expr(arg(2 + i)?)?);
                }
                ExprKind::Atomic {
                    op: a,
                    ty,
                    mem,
                    index,
                    vals,
                }
            }
            Intrinsic::Math(f) => {
                let ty = self.scalar_of(arg(0)?)?;
                let mut cargs = Vec::new();
                for i in 0..f.arity() {
                    cargs.push(self.expr(arg(i)?)?);
                }
                ExprKind::Math { f, ty, args: cargs }
            }
            Intrinsic::Abs | Intrinsic::Clz | Intrinsic::Popcount => {
                let ty = self.scalar_of(arg(0)?)?;
                let f = match op {
                    Intrinsic::Abs => IntFn::Abs,
                    Intrinsic::Clz => IntFn::Clz,
                    _ => IntFn::Popcount,
                };
                ExprKind::IntFn {
                    f,
                    ty,
                    a: Box::new(self.expr(arg(0)?)?),
                }
            }
            Intrinsic::Min | Intrinsic::Max => {
                let ty = self.scalar_of(arg(0)?)?;
                let a = Box::new(self.expr(arg(0)?)?);
                let b = Box::new(self.expr(arg(1)?)?);
                ExprKind::MinMax {
                    max: op == Intrinsic::Max,
                    ty,
                    a,
                    b,
                }
            }
            Intrinsic::Convert => {
                let from = self.scalar_of(arg(0)?)?;
                let to = self.scalar_of(e)?;
                ExprKind::Convert {
                    from,
                    to,
                    a: Box::new(self.expr(arg(0)?)?),
                }
            }
            Intrinsic::Length => ExprKind::Length {
                mem: self.mem_arg(arg(0)?)?,
            },
        };
        Ok(Expr { dst, n, kind })
    }

    /// Geometry registers are the first 16, allocated in `compile` in this order.
    fn geo_reg(&self, group: u32, axis: usize) -> Reg {
        group + axis as u32
    }
}
