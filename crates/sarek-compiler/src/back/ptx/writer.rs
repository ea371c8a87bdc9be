//! The PTX writer: one pass over the IR, values as register lists (see the module docs).

use crate::hash::FxHashMap as HashMap;
use std::fmt::Write as _;

use crate::abi::{self, Abi, AbiParam, AbiParamKind, ArgSlot, ElemLayout, LayoutRules, Stored};
use crate::back::names::Namer;
use crate::diag::{Diagnostic, Span};
use crate::intrinsics::{AtomicOp, Axis, Geometry, Intrinsic, MathFn, WarpOp};
use crate::ir::{Block, Expr, ExprKind, FuncId, Kernel, LValue, Stmt, StmtKind, Ty, VarId};
use crate::target::{Generated, TargetOptions};
use crate::types::{BinOp, Literal, MemSpace, Scalar, UnOp};

use crate::back::softmath::{self, Cmp, FBin, IBin, Routine, Shift, Width};

/// Element layout of PTX memory: C rules, bool as one byte.
pub const PTX_LAYOUT: LayoutRules = LayoutRules::C {
    bool_repr: Stored::BoolAsU8,
};

/// A virtual register class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Class {
    Pred,
    B32,
    B64,
    F32,
    F64,
}

impl Class {
    const ALL: [Class; 5] = [Class::Pred, Class::B32, Class::B64, Class::F32, Class::F64];

    fn of(s: Scalar) -> Class {
        match s {
            Scalar::Bool => Class::Pred,
            Scalar::I32 => Class::B32,
            Scalar::I64 => Class::B64,
            Scalar::F32 => Class::F32,
            Scalar::F64 => Class::F64,
        }
    }
    fn index(self) -> usize {
        self as usize
    }
    fn prefix(self) -> &'static str {
        match self {
            Class::Pred => "%p",
            Class::B32 => "%r",
            Class::B64 => "%rd",
            Class::F32 => "%f",
            Class::F64 => "%fd",
        }
    }
    fn decl(self) -> &'static str {
        match self {
            Class::Pred => ".pred",
            Class::B32 => ".b32",
            Class::B64 => ".b64",
            Class::F32 => ".f32",
            Class::F64 => ".f64",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Reg {
    class: Class,
    n: u32,
}

impl std::fmt::Display for Reg {
    /// Registers are most of the text a PTX module is made of: the digits are written
    /// directly rather than through a nested formatting call.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.class.prefix())?;
        let mut digits = [0u8; 10];
        let mut start = digits.len();
        let mut n = self.n;
        loop {
            start -= 1;
            digits[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        f.write_str(std::str::from_utf8(&digits[start..]).expect("ASCII digits"))
    }
}

/// Text an instruction line is made of, appended as it is: the formatting machinery cost
/// about a thousand instructions per line, most of the time PTX generation took. Lines
/// written often are built from pieces with [`ins!`]; the others are formatted.
trait Piece {
    fn push_to(&self, out: &mut String);
}

impl Piece for str {
    fn push_to(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl Piece for String {
    fn push_to(&self, out: &mut String) {
        out.push_str(self);
    }
}

impl<T: Piece + ?Sized> Piece for &T {
    fn push_to(&self, out: &mut String) {
        (**self).push_to(out);
    }
}

impl Piece for Reg {
    fn push_to(&self, out: &mut String) {
        out.push_str(self.class.prefix());
        push_decimal(out, u64::from(self.n));
    }
}

impl Piece for AddressAt {
    fn push_to(&self, out: &mut String) {
        self.reg.push_to(out);
        if self.offset != 0 {
            out.push('+');
            self.offset.push_to(out);
        }
    }
}

impl Piece for i64 {
    fn push_to(&self, out: &mut String) {
        if *self < 0 {
            out.push('-');
        }
        push_decimal(out, self.unsigned_abs());
    }
}

impl Piece for Operand {
    fn push_to(&self, out: &mut String) {
        match self {
            Operand::Reg(r) => r.push_to(out),
            Operand::Imm(v) => v.push_to(out),
        }
    }
}

impl Piece for u32 {
    fn push_to(&self, out: &mut String) {
        push_decimal(out, u64::from(*self));
    }
}

impl Piece for std::fmt::Arguments<'_> {
    fn push_to(&self, out: &mut String) {
        let _ = out.write_fmt(*self);
    }
}

/// `n` in decimal.
fn push_decimal(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&digits[start..]).expect("ASCII digits"));
}

/// One indented instruction line of [`Piece`]s appended to the writer's body.
macro_rules! ins {
    ($w:expr, $($piece:expr),+ $(,)?) => {{
        let body = &mut $w.body;
        body.push_str("    ");
        $( Piece::push_to(&$piece, body); )+
        body.push('\n');
    }};
}

/// Instruction type suffix of a scalar for arithmetic.
fn arith(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool => "pred",
        Scalar::I32 => "s32",
        Scalar::I64 => "s64",
        Scalar::F32 => "f32",
        Scalar::F64 => "f64",
    }
}

fn bits(s: Scalar) -> &'static str {
    match s {
        Scalar::I64 | Scalar::F64 => "b64",
        _ => "b32",
    }
}

/// An element address: a register plus a constant byte offset (PTX's `[reg+imm]` form, so
/// `a.(i + 1)` next to `a.(i)` costs no address arithmetic).
#[derive(Clone, Copy, Debug)]
struct Address {
    reg: Reg,
    offset: i64,
}

impl Address {
    /// The operand text for leaf byte offset `leaf` within the element (written where it
    /// is formatted: no `String` per memory access).
    fn at(self, leaf: u32) -> AddressAt {
        AddressAt {
            reg: self.reg,
            offset: self.offset + i64::from(leaf),
        }
    }
}

/// [`Address::at`]: `reg` or `reg+offset`.
#[derive(Clone, Copy, Debug)]
struct AddressAt {
    reg: Reg,
    offset: i64,
}

impl std::fmt::Display for AddressAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.offset {
            0 => write!(f, "{}", self.reg),
            off => write!(f, "{}+{off}", self.reg),
        }
    }
}

/// Where a memory-resident array lives.
#[derive(Clone, Debug)]
struct MemArray {
    space: &'static str,
    /// Base address register: 64-bit for global and local memory, 32-bit for shared memory
    /// (shared addresses fit in 32 bits; 32-bit arithmetic is what NVRTC emits, and it
    /// lets ptxas fold offsets into `LDS`).
    base: Reg,
    /// Length register (int32).
    len: Reg,
    elem: Ty,
    layout: ElemLayout,
}

/// What a variable stands for during emission.
#[derive(Clone, Debug)]
enum Binding {
    /// A value: one register per leaf.
    Value(Vec<Reg>),
    /// A vector or array.
    Array(MemArray),
}

/// A place being assigned: registers, or an element in memory narrowed to a leaf range.
enum Place {
    Regs(Vec<Reg>),
    Mem {
        array: MemArray,
        addr: Address,
        leaves: Vec<(u32, Stored, Scalar)>,
    },
}

/// The inlined helper currently being emitted.
struct Frame {
    result: Vec<Reg>,
    end_label: u32,
}

pub(super) struct Writer<'k> {
    kernel: &'k Kernel,
    options: &'k TargetOptions,
    body: String,
    module_decls: String,
    local_decls: String,
    /// Registers taken so far, per class (indexed by [`Class::index`]); a class with none
    /// is not declared.
    counts: [u32; 5],
    labels: u32,
    symbols: u32,
    env: HashMap<VarId, Binding>,
    loops: Vec<(u32, u32)>,
    frames: Vec<Frame>,
    span: Span,
    errors: Vec<Diagnostic>,
    /// Helpers being inlined (guards against recursion the front end should have removed).
    inlining: Vec<FuncId>,
    /// Global address of the trap status word, when the kernel has traps.
    trap: Option<Reg>,
    /// Which helpers are written once as a `.func` and called
    /// ([`crate::ir::analysis::outlined_helpers`]).
    outlined: Vec<bool>,
    /// The `.func` symbol of each outlined helper written so far.
    func_symbols: HashMap<FuncId, String>,
    /// The `.func` definitions, each after the functions it calls.
    funcs: String,
    /// The software routines written as `.func`s so far.
    soft_routines: Vec<Routine>,
}

/// The state a `.func` body is written in, saved while another function is written.
struct FunctionState {
    body: String,
    local_decls: String,
    /// Registers taken so far, per class (indexed by [`Class::index`]); a class with none
    /// is not declared.
    counts: [u32; 5],
    env: HashMap<VarId, Binding>,
    loops: Vec<(u32, u32)>,
    frames: Vec<Frame>,
    span: Span,
    trap: Option<Reg>,
}

impl<'k> Writer<'k> {
    pub(super) fn new(kernel: &'k Kernel, options: &'k TargetOptions) -> Self {
        Writer {
            kernel,
            options,
            body: String::new(),
            module_decls: String::new(),
            local_decls: String::new(),
            counts: [0; 5],
            labels: 0,
            symbols: 0,
            env: HashMap::default(),
            loops: Vec::new(),
            frames: Vec::new(),
            span: kernel.span,
            errors: Vec::new(),
            inlining: Vec::new(),
            trap: None,
            outlined: crate::ir::analysis::outlined_helpers(kernel),
            func_symbols: HashMap::default(),
            funcs: String::new(),
            soft_routines: Vec::new(),
        }
    }

    pub(super) fn finish(mut self) -> Result<Generated, Vec<Diagnostic>> {
        let entry = Namer::new(&super::keywords::KEYWORDS).escape(&self.kernel.name);
        let (param_decls, abi_params, trap_status) = self.params();
        let kernel = self.kernel;
        self.block(&kernel.body);
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        // Sized once: an inlined kernel can be large, and regrowing copies it.
        let mut out = String::with_capacity(
            self.body.len() + self.module_decls.len() + self.funcs.len() + 4096,
        );
        out.push_str("//\n// Generated by sarek (PTX target) from kernel `");
        out.push_str(&self.kernel.name.replace('\n', " "));
        out.push_str("`.\n//\n.version 8.0\n.target sm_75\n.address_size 64\n\n");
        out.push_str(&self.module_decls);
        out.push_str(&self.funcs);
        let _ = writeln!(out, ".visible .entry {entry}(");
        out.push_str(&param_decls.join(",\n"));
        out.push_str("\n)\n{\n");
        for class in Class::ALL {
            let n = self.counts[class.index()];
            if n > 0 {
                let _ = writeln!(out, "    .reg {} {}<{}>;", class.decl(), class.prefix(), n);
            }
        }
        for line in self.local_decls.lines() {
            let _ = writeln!(out, "    {line}");
        }
        out.push_str(&self.body);
        out.push_str("    ret;\n}\n");
        let abi = Abi {
            entry_point: entry,
            params: abi_params,
            uniform_size: None,
            uniform_binding: None,
            block_size_in_source: false,
            trap_status,
        };
        Ok(Generated { source: out, abi })
    }

    // ----- registers, labels, errors -----

    fn reg(&mut self, class: Class) -> Reg {
        let n = &mut self.counts[class.index()];
        let r = Reg { class, n: *n };
        *n += 1;
        r
    }

    fn sreg(&mut self, s: Scalar) -> Reg {
        self.reg(Class::of(s))
    }

    /// `N` new registers of one class, numbered in order.
    fn regs<const N: usize>(&mut self, class: Class) -> [Reg; N] {
        std::array::from_fn(|_| self.reg(class))
    }

    fn label(&mut self) -> u32 {
        self.labels += 1;
        self.labels
    }

    fn emit(&mut self, line: impl AsRef<str>) {
        self.body.push_str("    ");
        self.body.push_str(line.as_ref());
        self.body.push('\n');
    }

    /// [`Self::emit`] of formatted text, written straight into the body (no `String` per line).
    fn emit_fmt(&mut self, line: std::fmt::Arguments<'_>) {
        self.body.push_str("    ");
        let _ = self.body.write_fmt(line);
        self.body.push('\n');
    }

    fn place_label(&mut self, l: u32) {
        self.body.push_str("$L");
        push_decimal(&mut self.body, u64::from(l));
        self.body.push_str(":\n");
    }

    /// IR this writer cannot express although the analysis let it through: a Sarek bug.
    fn internal(&mut self, what: impl Into<String>) {
        let d = crate::ir::analysis::internal(self.span, crate::target::Target::Ptx, what.into());
        if !self
            .errors
            .iter()
            .any(|e| e.message == d.message && e.span == d.span)
        {
            self.errors.push(d);
        }
    }

    /// The scalars of [`abi::leaves`] of `ty`, in order (without the leaves' names).
    fn scalars(&self, ty: &Ty) -> Vec<Scalar> {
        let mut out = Vec::new();
        push_scalars(self.kernel, ty, &mut out);
        out
    }

    fn fresh_value(&mut self, ty: &Ty) -> Vec<Reg> {
        if let Ty::Scalar(s) = ty {
            return vec![self.sreg(*s)];
        }
        self.scalars(ty).into_iter().map(|s| self.sreg(s)).collect()
    }

    fn mov(&mut self, dst: Reg, src: Reg) {
        let ty = match dst.class {
            Class::Pred => "pred",
            Class::B32 => "b32",
            Class::B64 => "b64",
            Class::F32 => "f32",
            Class::F64 => "f64",
        };
        ins!(self, "mov.", ty, " ", dst, ", ", src, ";");
    }

    /// `selp.<ty> d, a, b, p`: `a` where `p` holds, else `b`.
    fn selp(&mut self, ty: &str, d: Reg, a: impl Piece, b: impl Piece, p: Reg) {
        ins!(self, "selp.", ty, " ", d, ", ", a, ", ", b, ", ", p, ";");
    }

    fn mov_all(&mut self, dst: &[Reg], src: &[Reg]) {
        for (d, s) in dst.iter().zip(src) {
            self.mov(*d, *s);
        }
    }

    // ----- parameters -----

    /// Parameter declarations, their ABI, and the slot of the trap status pointer (last).
    fn params(&mut self) -> (Vec<String>, Vec<AbiParam>, Option<ArgSlot>) {
        let mut decls = Vec::new();
        let mut abi_params = Vec::new();
        let mut slot = 0u32;
        for &pid in &self.kernel.params.clone() {
            let info = self.kernel.var(pid).clone();
            match &info.ty {
                Ty::Vector(elem) => {
                    let layout = abi::elem_layout(self.kernel, elem, PTX_LAYOUT);
                    let (p, l) = (slot, slot + 1);
                    slot += 2;
                    decls.push(format!("    .param .u64 param_{p}"));
                    decls.push(format!("    .param .s32 param_{l}"));
                    let raw = self.reg(Class::B64);
                    let base = self.reg(Class::B64);
                    let len = self.reg(Class::B32);
                    ins!(self, "ld.param.u64 ", raw, ", [param_", p, "];");
                    ins!(self, "cvta.to.global.u64 ", base, ", ", raw, ";");
                    ins!(self, "ld.param.s32 ", len, ", [param_", l, "];");
                    self.env.insert(
                        pid,
                        Binding::Array(MemArray {
                            space: "global",
                            base,
                            len,
                            elem: (**elem).clone(),
                            layout: layout.clone(),
                        }),
                    );
                    abi_params.push(AbiParam {
                        name: info.name.clone(),
                        ty: info.ty.clone(),
                        kind: AbiParamKind::Vector {
                            elem: layout,
                            buffer: ArgSlot::Argument(p),
                            length: ArgSlot::Argument(l),
                        },
                    });
                }
                Ty::Scalar(_) | Ty::Record(_) | Ty::Variant(_) => {
                    let layout = abi::elem_layout(self.kernel, &info.ty, PTX_LAYOUT);
                    let align = layout
                        .leaves
                        .iter()
                        .map(|(_, s)| s.size())
                        .max()
                        .unwrap_or(1);
                    let p = slot;
                    slot += 1;
                    decls.push(format!(
                        "    .param .align {align} .b8 param_{p}[{}]",
                        layout.stride.max(1)
                    ));
                    let scalars = self.scalars(&info.ty);
                    let mut regs = Vec::new();
                    for ((off, stored), s) in layout.leaves.iter().zip(scalars) {
                        let r =
                            self.load_leaf("param", format_args!("param_{p}+{off}"), *stored, s);
                        regs.push(r);
                    }
                    self.env.insert(pid, Binding::Value(regs));
                    abi_params.push(AbiParam {
                        name: info.name.clone(),
                        ty: info.ty.clone(),
                        kind: AbiParamKind::Value {
                            layout,
                            slot: ArgSlot::Argument(p),
                        },
                    });
                }
                Ty::Unit | Ty::Array { .. } => {
                    self.span = info.span;
                    self.internal(format!(
                        "parameter `{}` has a type PTX kernels cannot take",
                        info.name
                    ));
                }
            }
        }
        let trap_status = (!self.kernel.traps().is_empty()).then(|| {
            decls.push(format!("    .param .u64 param_{slot}"));
            let raw = self.reg(Class::B64);
            let base = self.reg(Class::B64);
            ins!(self, "ld.param.u64 ", raw, ", [param_", slot, "];");
            ins!(self, "cvta.to.global.u64 ", base, ", ", raw, ";");
            self.trap = Some(base);
            ArgSlot::Argument(slot)
        });
        (decls, abi_params, trap_status)
    }

    /// Load one leaf from `[addr]` in `space`, converting its stored form to a register.
    fn load_leaf(&mut self, space: &str, addr: impl Piece, stored: Stored, s: Scalar) -> Reg {
        match stored {
            Stored::Native(Scalar::Bool) | Stored::BoolAsU8 | Stored::BoolAsU32 => {
                let t = self.reg(Class::B32);
                let w = if stored.size() == 4 { "u32" } else { "u8" };
                ins!(self, "ld.", space, ".", w, " ", t, ", [", addr, "];");
                let p = self.reg(Class::Pred);
                ins!(self, "setp.ne.u32 ", p, ", ", t, ", 0;");
                p
            }
            Stored::Native(n) => {
                let r = self.sreg(s);
                let t = match n {
                    Scalar::I32 => "s32",
                    Scalar::I64 => "s64",
                    Scalar::F32 => "f32",
                    Scalar::F64 => "f64",
                    Scalar::Bool => unreachable!(),
                };
                ins!(self, "ld.", space, ".", t, " ", r, ", [", addr, "];");
                r
            }
        }
    }

    fn store_leaf(&mut self, space: &str, addr: impl Piece, stored: Stored, value: Reg) {
        match stored {
            Stored::Native(Scalar::Bool) | Stored::BoolAsU8 | Stored::BoolAsU32 => {
                let t = self.reg(Class::B32);
                ins!(self, "selp.u32 ", t, ", 1, 0, ", value, ";");
                let w = if stored.size() == 4 { "u32" } else { "u8" };
                ins!(self, "st.", space, ".", w, " [", addr, "], ", t, ";");
            }
            Stored::Native(n) => {
                let t = match n {
                    Scalar::I32 => "s32",
                    Scalar::I64 => "s64",
                    Scalar::F32 => "f32",
                    Scalar::F64 => "f64",
                    Scalar::Bool => unreachable!(),
                };
                ins!(self, "st.", space, ".", t, " [", addr, "], ", value, ";");
            }
        }
    }

    // ----- statements -----

    fn block(&mut self, block: &Block) {
        for s in block {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        if !stmt.span.is_dummy() {
            self.span = stmt.span;
        }
        match &stmt.kind {
            StmtKind::Let { var, init } => {
                let kernel = self.kernel;
                let regs = self.fresh_value(&kernel.var(*var).ty);
                if let Some(e) = init {
                    if let [r] = regs[..] {
                        let v = self.expr1(e);
                        self.mov(r, v);
                    } else {
                        let v = self.expr(e);
                        self.mov_all(&regs, &v);
                    }
                }
                self.env.insert(*var, Binding::Value(regs));
            }
            StmtKind::Array { var } => self.declare_array(*var),
            StmtKind::Assign { place, value } if value.ty.scalar().is_some() => {
                // One register, no `Vec`s: the value, then the place (in that order).
                let v = self.expr1(value);
                let var = match place {
                    LValue::Var(id) | LValue::Index { base: id, .. } => self.env.get(id),
                    LValue::Field { .. } => None,
                };
                match (place, var) {
                    (LValue::Var(_), Some(Binding::Value(regs))) if regs.len() == 1 => {
                        let r = regs[0];
                        self.mov(r, v);
                    }
                    (LValue::Index { index, .. }, Some(Binding::Array(a)))
                        if a.layout.leaves.len() == 1 && a.elem.scalar().is_some() =>
                    {
                        // A scalar element: no copy of the array's description.
                        let (space, base, stride) = (a.space, a.base, a.layout.stride);
                        let (off, stored) = a.layout.leaves[0];
                        let addr = self.element_addr(base, stride, index);
                        self.store_leaf(space, addr.at(off), stored, v);
                    }
                    _ => {
                        let place = self.place(place);
                        self.store_place(place, &[v]);
                    }
                }
            }
            StmtKind::Assign { place, value } => {
                let v = self.expr(value);
                let place = self.place(place);
                self.store_place(place, &v);
            }
            StmtKind::Expr(e) => {
                self.expr(e);
            }
            StmtKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let c = self.expr1(cond);
                let (l_else, l_end) = (self.label(), self.label());
                ins!(self, "@!", c, " bra $L", l_else, ";");
                self.block(then_block);
                ins!(self, "bra.uni $L", l_end, ";");
                self.place_label(l_else);
                self.block(else_block);
                self.place_label(l_end);
            }
            StmtKind::For {
                var,
                start,
                end,
                downto,
                body,
                unroll,
            } => {
                // Bounds evaluated once, in order; the guard tested once; then a loop tested
                // at the bottom after the step, against the bound one step past the end:
                // `i != end + step` is exact even when `end + step` wraps (`for i = a to
                // max_int` stops after `max_int`), and `continue` reaches the step too.
                // ptxas unrolls this shape like NVVM's (matmul_tiled's inner loop), and
                // does not peel a first iteration off a large body (the 8x8 register-tiled
                // matmul: 126 registers instead of 130, 1456 SASS instructions instead of
                // 2552).
                let i = self.reg(Class::B32);
                let s = self.expr1(start);
                let step: i64 = if *downto { -1 } else { 1 };
                let end = match end.kind {
                    ExprKind::Lit(Literal::I32(v)) => Operand::Imm(i64::from(v)),
                    _ => Operand::Reg(self.expr1(end)),
                };
                self.mov(i, s);
                let (top, cont, done) = (self.label(), self.label(), self.label());
                let p = self.reg(Class::Pred);
                let cmp = if *downto { "lt" } else { "gt" };
                ins!(self, "setp.", cmp, ".s32 ", p, ", ", i, ", ", end, ";");
                let past = match end {
                    Operand::Imm(v) => {
                        Operand::Imm(i64::from((v as i32).wrapping_add(step as i32)))
                    }
                    Operand::Reg(e) => {
                        let r = self.reg(Class::B32);
                        ins!(self, "add.s32 ", r, ", ", e, ", ", step, ";");
                        Operand::Reg(r)
                    }
                };
                ins!(self, "@", p, " bra $L", done, ";");
                self.place_label(top);
                if matches!(unroll, Some(0 | 1)) {
                    // ptxas takes only this hint, in the loop's header block.
                    self.emit(".pragma \"nounroll\";");
                }
                // The body sees a fresh copy, so the loop counter cannot be disturbed.
                let v = self.reg(Class::B32);
                self.mov(v, i);
                self.env.insert(*var, Binding::Value(vec![v]));
                self.loops.push((cont, done));
                self.block(body);
                self.loops.pop();
                self.place_label(cont);
                let more = self.reg(Class::Pred);
                ins!(self, "add.s32 ", i, ", ", i, ", ", step, ";");
                ins!(self, "setp.ne.s32 ", more, ", ", i, ", ", past, ";");
                ins!(self, "@", more, " bra $L", top, ";");
                self.place_label(done);
            }
            StmtKind::While { cond, body, unroll } if !has_call(cond) => {
                // Rotated: the condition is tested once before the loop and then at the
                // bottom, so each iteration takes one conditional branch (and `continue`
                // goes to the bottom test).
                let (top, cont, done) = (self.label(), self.label(), self.label());
                let c = self.expr1(cond);
                ins!(self, "@!", c, " bra $L", done, ";");
                self.place_label(top);
                if matches!(unroll, Some(0 | 1)) {
                    self.emit(".pragma \"nounroll\";");
                }
                self.loops.push((cont, done));
                self.block(body);
                self.loops.pop();
                self.place_label(cont);
                let c = self.expr1(cond);
                ins!(self, "@", c, " bra $L", top, ";");
                self.place_label(done);
            }
            StmtKind::While { cond, body, unroll } => {
                // A condition that inlines a helper is emitted once, at the top.
                let (top, done) = (self.label(), self.label());
                self.place_label(top);
                if matches!(unroll, Some(0 | 1)) {
                    self.emit(".pragma \"nounroll\";");
                }
                let c = self.expr1(cond);
                ins!(self, "@!", c, " bra $L", done, ";");
                self.loops.push((top, done));
                self.block(body);
                self.loops.pop();
                ins!(self, "bra.uni $L", top, ";");
                self.place_label(done);
            }
            StmtKind::Match {
                scrutinee,
                variant,
                arms,
            } => {
                let v = self.expr(scrutinee);
                let tag = v[0];
                let done = self.label();
                let offsets = self.ctor_offsets(*variant);
                for arm in arms {
                    let next = self.label();
                    if let Some(c) = arm.ctor {
                        let p = self.reg(Class::Pred);
                        ins!(self, "setp.ne.s32 ", p, ", ", tag, ", ", c, ";");
                        ins!(self, "@", p, " bra $L", next, ";");
                        let start = offsets[c as usize];
                        let ctor = &self.kernel.variant(*variant).ctors[c as usize];
                        let mut at = start;
                        let widths: Vec<usize> =
                            ctor.fields.iter().map(|f| self.scalars(f).len()).collect();
                        for (binding, w) in arm.bindings.iter().zip(widths) {
                            if let Some(id) = binding {
                                self.env.insert(*id, Binding::Value(v[at..at + w].to_vec()));
                            }
                            at += w;
                        }
                    }
                    self.block(&arm.body);
                    ins!(self, "bra.uni $L", done, ";");
                    self.place_label(next);
                }
                self.place_label(done);
            }
            StmtKind::Block(b) => self.block(b),
            StmtKind::Barrier => self.emit("bar.sync 0;"),
            StmtKind::Fence { device } => {
                self.emit(if *device { "membar.gl;" } else { "membar.cta;" })
            }
            StmtKind::Return(value) => {
                let v = value.as_ref().map(|e| self.expr(e)).unwrap_or_default();
                match self.frames.last() {
                    Some(f) => {
                        let (result, end) = (f.result.clone(), f.end_label);
                        self.mov_all(&result, &v);
                        ins!(self, "bra.uni $L", end, ";");
                    }
                    None => self.emit("ret;"),
                }
            }
            StmtKind::Break => match self.loops.last() {
                Some(&(_, done)) => ins!(self, "bra.uni $L", done, ";"),
                None => self.internal("`break` outside a loop"),
            },
            StmtKind::Continue => match self.loops.last() {
                Some(&(cont, _)) => ins!(self, "bra.uni $L", cont, ";"),
                None => self.internal("`continue` outside a loop"),
            },
            StmtKind::Native(text) => {
                self.body.push_str(text);
                self.body.push('\n');
            }
            StmtKind::Trap(t) => match self.trap {
                Some(addr) => {
                    self.emit_fmt(format_args!("red.global.max.s32 [{addr}], {};", t.code))
                }
                None => self.internal("a trap in a kernel without a trap status word"),
            },
        }
    }

    fn declare_array(&mut self, var: VarId) {
        let info = self.kernel.var(var).clone();
        let Ty::Array { elem, space, size } = &info.ty else {
            self.internal(format!(
                "`{}` is declared as an array but has type {:?}",
                info.name, info.ty
            ));
            return;
        };
        let layout = abi::elem_layout(self.kernel, elem, PTX_LAYOUT);
        let n = size.unwrap_or(0);
        let bytes = (layout.stride as u64 * n as u64).max(1);
        let (space_name, decl) = match space {
            MemSpace::Shared => ("shared", ".shared"),
            MemSpace::Local => ("local", ".local"),
            MemSpace::Global => {
                self.internal("a global array declared inside a kernel");
                return;
            }
        };
        self.symbols += 1;
        let sym = format!("sarek_{space_name}_{}", self.symbols);
        // Shared arrays may live at module scope; local ones must be inside the entry.
        let target = if *space == MemSpace::Shared {
            &mut self.module_decls
        } else {
            &mut self.local_decls
        };
        let _ = writeln!(target, "{decl} .align 8 .b8 {sym}[{bytes}];");
        let base = if *space == MemSpace::Shared {
            let base = self.reg(Class::B32);
            ins!(self, "mov.u32 ", base, ", ", sym, ";");
            base
        } else {
            let base = self.reg(Class::B64);
            ins!(self, "mov.u64 ", base, ", ", sym, ";");
            base
        };
        let len = self.reg(Class::B32);
        ins!(self, "mov.b32 ", len, ", ", n, ";");
        self.env.insert(
            var,
            Binding::Array(MemArray {
                space: space_name,
                base,
                len,
                elem: (**elem).clone(),
                layout,
            }),
        );
    }

    /// First leaf index of each constructor's payload within a variant value.
    fn ctor_offsets(&self, variant: crate::ir::VariantId) -> Vec<usize> {
        let mut at = 1;
        let mut out = Vec::new();
        for c in &self.kernel.variant(variant).ctors {
            out.push(at);
            at += c
                .fields
                .iter()
                .map(|f| self.scalars(f).len())
                .sum::<usize>();
        }
        out
    }

    /// Leaf range of field `field` within a record value.
    fn field_range(&self, ty: &Ty, field: u32) -> std::ops::Range<usize> {
        let Ty::Record(id) = ty else { return 0..0 };
        let fields = &self.kernel.record(*id).fields;
        let start: usize = fields[..field as usize]
            .iter()
            .map(|f| self.scalars(&f.ty).len())
            .sum();
        let len = self.scalars(&fields[field as usize].ty).len();
        start..start + len
    }

    fn array(&mut self, var: VarId) -> Option<MemArray> {
        match self.env.get(&var) {
            Some(Binding::Array(a)) => Some(a.clone()),
            _ => {
                let name = self.kernel.var(var).name.clone();
                self.internal(format!("`{name}` is not a vector or array here"));
                None
            }
        }
    }

    /// The address of element `index` of `a`. A constant term of the index (`i + 1`,
    /// `i - 1`, or a literal index) becomes the immediate offset. That is exact for every
    /// in-bounds access: with the constant below 2^20 in magnitude, `i + c` cannot wrap
    /// around int32 into the array's range, so the wrapped and the true sum agree wherever
    /// the access is defined at all.
    fn element_addr(&mut self, base: Reg, stride: u32, index: &Expr) -> Address {
        const MAX_FOLDED: i64 = 1 << 20;
        let stride = i64::from(stride);
        let lit = |e: &Expr| match e.kind {
            ExprKind::Lit(Literal::I32(c)) if i64::from(c).abs() < MAX_FOLDED => Some(i64::from(c)),
            _ => None,
        };
        let (var_part, constant) = match &index.kind {
            _ if lit(index).is_some() => (None, lit(index).unwrap_or(0)),
            ExprKind::Binary {
                op: BinOp::Add,
                lhs,
                rhs,
                ..
            } if lit(rhs).is_some() => (Some(&**lhs), lit(rhs).unwrap_or(0)),
            ExprKind::Binary {
                op: BinOp::Add,
                lhs,
                rhs,
                ..
            } if lit(lhs).is_some() => (Some(&**rhs), lit(lhs).unwrap_or(0)),
            ExprKind::Binary {
                op: BinOp::Sub,
                lhs,
                rhs,
                ..
            } if lit(rhs).is_some() => (Some(&**lhs), -lit(rhs).unwrap_or(0)),
            _ => (Some(index), 0),
        };
        let offset = constant * stride;
        let Some(e) = var_part else {
            return Address { reg: base, offset };
        };
        let i = self.expr1(e);
        let reg = if base.class == Class::B32 {
            let addr = self.reg(Class::B32);
            ins!(
                self,
                "mad.lo.s32 ",
                addr,
                ", ",
                i,
                ", ",
                stride,
                ", ",
                base,
                ";"
            );
            addr
        } else {
            let off = self.reg(Class::B64);
            ins!(self, "mul.wide.s32 ", off, ", ", i, ", ", stride, ";");
            let addr = self.reg(Class::B64);
            ins!(self, "add.s64 ", addr, ", ", base, ", ", off, ";");
            addr
        };
        Address { reg, offset }
    }

    fn place(&mut self, lv: &LValue) -> Place {
        match lv {
            LValue::Var(id) => match self.env.get(id) {
                Some(Binding::Value(regs)) => Place::Regs(regs.clone()),
                _ => {
                    // Assigned before any `Let` reached it (validator forbids this; be safe).
                    let ty = self.kernel.var(*id).ty.clone();
                    let regs = self.fresh_value(&ty);
                    self.env.insert(*id, Binding::Value(regs.clone()));
                    Place::Regs(regs)
                }
            },
            LValue::Index { base, index } => {
                let Some(a) = self.array(*base) else {
                    return Place::Regs(Vec::new());
                };
                let addr = self.element_addr(a.base, a.layout.stride, index);
                let scalars = self.scalars(&a.elem);
                let leaves = a
                    .layout
                    .leaves
                    .iter()
                    .zip(scalars)
                    .map(|((o, s), sc)| (*o, *s, sc))
                    .collect();
                Place::Mem {
                    array: a,
                    addr,
                    leaves,
                }
            }
            LValue::Field { base, field } => {
                let ty = lvalue_ty(self.kernel, base);
                let range = self.field_range(&ty, *field);
                match self.place(base) {
                    Place::Regs(regs) => Place::Regs(regs[range].to_vec()),
                    Place::Mem {
                        array,
                        addr,
                        leaves,
                    } => Place::Mem {
                        array,
                        addr,
                        leaves: leaves[range].to_vec(),
                    },
                }
            }
        }
    }

    fn store_place(&mut self, place: Place, value: &[Reg]) {
        match place {
            Place::Regs(regs) => self.mov_all(&regs, value),
            Place::Mem {
                array,
                addr,
                leaves,
            } => {
                for ((off, stored, _), v) in leaves.iter().zip(value) {
                    self.store_leaf(array.space, addr.at(*off), *stored, *v);
                }
            }
        }
    }

    // ----- expressions -----

    /// The first register of `e`'s value (a scalar's only one): `self.expr(e)[0]` without a
    /// `Vec` for the expressions most of a kernel is made of.
    fn expr1(&mut self, e: &Expr) -> Reg {
        match &e.kind {
            ExprKind::Lit(l) => self.literal(*l),
            ExprKind::Var(id) => match self.env.get(id) {
                Some(Binding::Value(regs)) if !regs.is_empty() => regs[0],
                _ => self.expr(e)[0],
            },
            ExprKind::Binary { op, lhs, rhs, .. } => self.binary(*op, lhs, rhs, &e.ty),
            ExprKind::Unary { op, operand } => self.unary(*op, operand),
            ExprKind::Index { base, index } => match self.env.get(base) {
                Some(Binding::Array(a))
                    if a.layout.leaves.len() == 1 && a.elem.scalar().is_some() =>
                {
                    let (space, base, stride) = (a.space, a.base, a.layout.stride);
                    let (off, stored) = a.layout.leaves[0];
                    let s = a.elem.scalar().unwrap_or(Scalar::I32);
                    let addr = self.element_addr(base, stride, index);
                    self.load_leaf(space, addr.at(off), stored, s)
                }
                _ => self.expr(e)[0],
            },
            _ => self.expr(e)[0],
        }
    }

    fn unary(&mut self, op: UnOp, operand: &Expr) -> Reg {
        let a = self.expr1(operand);
        let s = operand.ty.scalar().unwrap_or(Scalar::I32);
        let d = self.sreg(s);
        match op {
            UnOp::Neg => self.emit_fmt(format_args!("neg.{} {d}, {a};", arith(s))),
            UnOp::Not => ins!(self, "not.pred ", d, ", ", a, ";"),
            UnOp::BitNot => self.emit_fmt(format_args!("not.{} {d}, {a};", bits(s))),
        }
        d
    }

    fn expr(&mut self, e: &Expr) -> Vec<Reg> {
        match &e.kind {
            ExprKind::Lit(l) => vec![self.literal(*l)],
            ExprKind::Var(id) => match self.env.get(id) {
                Some(Binding::Value(regs)) => regs.clone(),
                Some(Binding::Array(_)) => Vec::new(),
                None => {
                    let name = self.kernel.var(*id).name.clone();
                    self.internal(format!("variable `{name}` used before its declaration"));
                    self.fresh_value(&e.ty)
                }
            },
            ExprKind::Binary { op, lhs, rhs, .. } => vec![self.binary(*op, lhs, rhs, &e.ty)],
            ExprKind::Unary { op, operand } => vec![self.unary(*op, operand)],
            ExprKind::Index { base, index } => {
                let Some(a) = self.array(*base) else {
                    return self.fresh_value(&e.ty);
                };
                let addr = self.element_addr(a.base, a.layout.stride, index);
                let scalars = self.scalars(&a.elem);
                let leaves = a.layout.leaves.clone();
                leaves
                    .iter()
                    .zip(scalars)
                    .map(|((off, stored), s)| self.load_leaf(a.space, addr.at(*off), *stored, s))
                    .collect()
            }
            ExprKind::Field { base, field } => {
                let v = self.expr(base);
                let range = self.field_range(&base.ty, *field);
                v[range].to_vec()
            }
            ExprKind::Record { fields, .. } => fields.iter().flat_map(|f| self.expr(f)).collect(),
            ExprKind::Ctor {
                variant,
                ctor,
                fields,
            } => {
                let values: Vec<Reg> = fields.iter().flat_map(|f| self.expr(f)).collect();
                let out = self.fresh_value(&e.ty);
                self.emit_fmt(format_args!("mov.b32 {}, {ctor};", out[0]));
                let offsets = self.ctor_offsets(*variant);
                let start = offsets[*ctor as usize];
                // Other constructors' payload leaves are zero, so a value is fully defined.
                for (k, r) in out.iter().enumerate().skip(1) {
                    if k >= start && k < start + values.len() {
                        self.mov(*r, values[k - start]);
                    } else {
                        self.zero(*r);
                    }
                }
                out
            }
            ExprKind::Tag(v) => vec![self.expr1(v)],
            ExprKind::Payload { value, ctor, field } => {
                let v = self.expr(value);
                let Ty::Variant(id) = value.ty else {
                    return self.fresh_value(&e.ty);
                };
                let offsets = self.ctor_offsets(id);
                let c = &self.kernel.variant(id).ctors[*ctor as usize];
                let skip: usize = c.fields[..*field as usize]
                    .iter()
                    .map(|f| self.scalars(f).len())
                    .sum();
                let start = offsets[*ctor as usize] + skip;
                let w = self.scalars(&e.ty).len();
                v[start..start + w].to_vec()
            }
            ExprKind::Select {
                cond,
                then_value,
                else_value,
            } => {
                let c = self.expr1(cond);
                let a = self.expr(then_value);
                let b = self.expr(else_value);
                let out = self.fresh_value(&e.ty);
                for ((d, x), y) in out.iter().zip(&a).zip(&b) {
                    if d.class == Class::Pred {
                        // selp has no .pred form: d = (c && x) || (!c && y).
                        let t = self.reg(Class::Pred);
                        let f = self.reg(Class::Pred);
                        ins!(self, "and.pred ", t, ", ", c, ", ", x, ";");
                        ins!(self, "not.pred ", f, ", ", c, ";");
                        ins!(self, "and.pred ", f, ", ", f, ", ", y, ";");
                        ins!(self, "or.pred ", d, ", ", t, ", ", f, ";");
                    } else {
                        let ty = match d.class {
                            Class::B32 => "b32",
                            Class::B64 => "b64",
                            Class::F32 => "f32",
                            _ => "f64",
                        };
                        ins!(self, "selp.", ty, " ", d, ", ", x, ", ", y, ", ", c, ";");
                    }
                }
                out
            }
            ExprKind::Call { func, args } => self.call(*func, args, &e.ty),
            ExprKind::Intrinsic { op, args } => self.intrinsic(*op, args, &e.ty),
        }
    }

    fn zero(&mut self, r: Reg) {
        match r.class {
            Class::Pred => {
                let t = self.reg(Class::B32);
                ins!(self, "mov.b32 ", t, ", 0;");
                ins!(self, "setp.ne.u32 ", r, ", ", t, ", 0;");
            }
            Class::B32 => ins!(self, "mov.b32 ", r, ", 0;"),
            Class::B64 => ins!(self, "mov.b64 ", r, ", 0;"),
            Class::F32 => ins!(self, "mov.f32 ", r, ", 0f00000000;"),
            Class::F64 => ins!(self, "mov.f64 ", r, ", 0d0000000000000000;"),
        }
    }

    fn literal(&mut self, l: Literal) -> Reg {
        match l {
            Literal::Bool(b) => {
                let t = self.reg(Class::B32);
                ins!(self, "mov.b32 ", t, ", ", i64::from(b), ";");
                let p = self.reg(Class::Pred);
                ins!(self, "setp.ne.u32 ", p, ", ", t, ", 0;");
                p
            }
            Literal::I32(v) => {
                let r = self.reg(Class::B32);
                ins!(self, "mov.b32 ", r, ", ", i64::from(v), ";");
                r
            }
            Literal::I64(v) => {
                let r = self.reg(Class::B64);
                ins!(self, "mov.b64 ", r, ", ", v, ";");
                r
            }
            Literal::F32(v) => {
                let r = self.reg(Class::F32);
                self.emit_fmt(format_args!("mov.f32 {r}, 0f{:08X};", v.to_bits()));
                r
            }
            Literal::F64(v) => {
                let r = self.reg(Class::F64);
                self.emit_fmt(format_args!("mov.f64 {r}, 0d{:016X};", v.to_bits()));
                r
            }
        }
    }

    fn f32_const(&mut self, v: f32) -> Reg {
        self.literal(Literal::F32(v))
    }

    fn binary(&mut self, op: BinOp, lhs: &Expr, rhs: &Expr, ty: &Ty) -> Reg {
        if matches!(op, BinOp::And | BinOp::Or) && speculatable(rhs) {
            // Evaluating the right operand regardless changes nothing: one predicate
            // instruction instead of a branch around it.
            let a = self.expr1(lhs);
            let b = self.expr1(rhs);
            let d = self.reg(Class::Pred);
            let name = if op == BinOp::And { "and" } else { "or" };
            ins!(self, name, ".pred ", d, ", ", a, ", ", b, ";");
            return d;
        }
        if matches!(op, BinOp::And | BinOp::Or) {
            // Short-circuit: the right operand may have effects or fault.
            let a = self.expr1(lhs);
            let d = self.reg(Class::Pred);
            self.mov(d, a);
            let skip = self.label();
            let neg = if op == BinOp::And { "!" } else { "" };
            ins!(self, "@", neg, d, " bra $L", i64::from(skip), ";");
            let b = self.expr1(rhs);
            self.mov(d, b);
            self.place_label(skip);
            return d;
        }
        let a = self.expr1(lhs);
        // An integer literal on the right is an immediate operand: a constant divisor or
        // comparand in a register hides it from ptxas.
        let s = lhs.ty.scalar().unwrap_or(Scalar::I32);
        let b = match rhs.kind {
            ExprKind::Lit(Literal::I32(v)) if s.is_int() => Operand::Imm(i64::from(v)),
            ExprKind::Lit(Literal::I64(v)) if s.is_int() => Operand::Imm(v),
            _ => Operand::Reg(self.expr1(rhs)),
        };
        if op.is_comparison() {
            let d = self.reg(Class::Pred);
            if s == Scalar::Bool {
                let b = b.reg();
                let x = self.reg(Class::Pred);
                ins!(self, "xor.pred ", x, ", ", a, ", ", b, ";");
                match op {
                    BinOp::Eq => ins!(self, "not.pred ", d, ", ", x, ";"),
                    BinOp::Ne => self.mov(d, x),
                    _ => {
                        // false < true, as in OCaml.
                        let (lo, hi) = if matches!(op, BinOp::Lt | BinOp::Le) {
                            (a, b)
                        } else {
                            (b, a)
                        };
                        let nlo = self.reg(Class::Pred);
                        ins!(self, "not.pred ", nlo, ", ", lo, ";");
                        ins!(self, "and.pred ", d, ", ", nlo, ", ", hi, ";");
                        if matches!(op, BinOp::Le | BinOp::Ge) {
                            let eq = self.reg(Class::Pred);
                            ins!(self, "not.pred ", eq, ", ", x, ";");
                            ins!(self, "or.pred ", d, ", ", d, ", ", eq, ";");
                        }
                    }
                }
                return d;
            }
            let cmp = match (op, s.is_float()) {
                (BinOp::Eq, _) => "eq",
                (BinOp::Ne, true) => "neu",
                (BinOp::Ne, false) => "ne",
                (BinOp::Lt, _) => "lt",
                (BinOp::Le, _) => "le",
                (BinOp::Gt, _) => "gt",
                _ => "ge",
            };
            ins!(
                self,
                "setp.",
                cmp,
                ".",
                arith(s),
                " ",
                d,
                ", ",
                a,
                ", ",
                b,
                ";"
            );
            return d;
        }
        let rs = ty.scalar().unwrap_or(s);
        let d = self.sreg(rs);
        let t = arith(rs);
        let f = rs.is_float();
        match op {
            BinOp::Add if f => ins!(self, "add.rn.", t, " ", d, ", ", a, ", ", b, ";"),
            BinOp::Sub if f => ins!(self, "sub.rn.", t, " ", d, ", ", a, ", ", b, ";"),
            BinOp::Mul if f => ins!(self, "mul.rn.", t, " ", d, ", ", a, ", ", b, ";"),
            BinOp::Div if f => ins!(self, "div.rn.", t, " ", d, ", ", a, ", ", b, ";"),
            BinOp::Add => ins!(self, "add.", t, " ", d, ", ", a, ", ", b, ";"),
            BinOp::Sub => ins!(self, "sub.", t, " ", d, ", ", a, ", ", b, ";"),
            BinOp::Mul => ins!(self, "mul.lo.", t, " ", d, ", ", a, ", ", b, ";"),
            BinOp::Rem if f => {
                let w = if rs == Scalar::F64 {
                    Width::W64
                } else {
                    Width::W32
                };
                let r = self.soft_call(Routine::Fmod(w), &[a, b.reg()]);
                self.mov(d, r[0]);
            }
            // `div`/`rem` by 0 and `min_int / -1` are machine-specific in PTX: divide by 1
            // instead and select the language's results (`x / 0 = 0`, `x mod 0 = x`, as on
            // every target; `x / -1 = -x` wrapping, `x mod -1 = x rem 1 = 0`).
            BinOp::Div | BinOp::Rem => {
                let b64 = rs == Scalar::I64;
                let (zero, minus1) = (self.reg(Class::Pred), self.reg(Class::Pred));
                let special = self.reg(Class::Pred);
                let safe = self.reg(if b64 { Class::B64 } else { Class::B32 });
                ins!(self, "setp.eq.", t, " ", zero, ", ", b, ", 0;");
                ins!(self, "setp.eq.", t, " ", minus1, ", ", b, ", -1;");
                ins!(self, "or.pred ", special, ", ", zero, ", ", minus1, ";");
                ins!(self, "selp.", t, " ", safe, ", 1, ", b, ", ", special, ";");
                if op == BinOp::Div {
                    let q = self.reg(safe.class);
                    let n = self.reg(safe.class);
                    ins!(self, "div.", t, " ", q, ", ", a, ", ", safe, ";");
                    ins!(self, "neg.", t, " ", n, ", ", q, ";");
                    ins!(
                        self, "selp.", t, " ", q, ", ", n, ", ", q, ", ", minus1, ";"
                    );
                    ins!(self, "selp.", t, " ", d, ", 0, ", q, ", ", zero, ";");
                } else {
                    let r = self.reg(safe.class);
                    ins!(self, "rem.", t, " ", r, ", ", a, ", ", safe, ";");
                    ins!(self, "selp.", t, " ", d, ", ", a, ", ", r, ", ", zero, ";");
                }
            }
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                let name = match op {
                    BinOp::BitAnd => "and",
                    BinOp::BitOr => "or",
                    _ => "xor",
                };
                let ty = if rs == Scalar::Bool { "pred" } else { bits(rs) };
                ins!(self, name, ".", ty, " ", d, ", ", a, ", ", b, ";");
            }
            BinOp::Shl | BinOp::LShr | BinOp::AShr => {
                // Counts are taken modulo the width, as the interpreter does.
                let width = if rs == Scalar::I64 { 63 } else { 31 };
                let n = match b {
                    Operand::Imm(v) => Operand::Imm(v & width),
                    Operand::Reg(b) => {
                        let n = self.reg(Class::B32);
                        if rhs.ty.scalar() == Some(Scalar::I64) {
                            ins!(self, "cvt.u32.u64 ", n, ", ", b, ";");
                            ins!(self, "and.b32 ", n, ", ", n, ", ", width, ";");
                        } else {
                            ins!(self, "and.b32 ", n, ", ", b, ", ", width, ";");
                        }
                        Operand::Reg(n)
                    }
                };
                let (name, ty) = match op {
                    BinOp::Shl => ("shl", bits(rs)),
                    BinOp::LShr => ("shr", if rs == Scalar::I64 { "u64" } else { "u32" }),
                    _ => ("shr", t),
                };
                ins!(self, name, ".", ty, " ", d, ", ", a, ", ", n, ";");
            }
            _ => self.internal(format!("operator `{}` on {}", op.symbol(), rs.name())),
        }
        d
    }

    fn call(&mut self, func: FuncId, args: &[Expr], ty: &Ty) -> Vec<Reg> {
        if self.inlining.contains(&func) {
            self.internal("recursive helper reached the PTX generator");
            return self.fresh_value(ty);
        }
        if self.outlined.get(func.0 as usize) == Some(&true) {
            return self.call_func(func, args);
        }
        let kernel = self.kernel;
        let f = kernel.function(func);
        // Evaluate every argument first (left to right), then bind.
        let mut bound = Vec::new();
        for (p, a) in f.params.iter().zip(args) {
            let b = match &a.ty {
                Ty::Vector(_) | Ty::Array { .. } => match &a.kind {
                    ExprKind::Var(v) => match self.env.get(v) {
                        Some(b) => b.clone(),
                        None => Binding::Value(Vec::new()),
                    },
                    _ => {
                        self.internal("a vector argument that is not a variable");
                        Binding::Value(Vec::new())
                    }
                },
                _ => {
                    let v = self.expr(a);
                    let copy = self.fresh_value(&a.ty);
                    self.mov_all(&copy, &v);
                    Binding::Value(copy)
                }
            };
            bound.push((*p, b));
        }
        let saved: Vec<(VarId, Option<Binding>)> = bound
            .iter()
            .map(|(p, _)| (*p, self.env.get(p).cloned()))
            .collect();
        for (p, b) in bound {
            self.env.insert(p, b);
        }
        let result = self.fresh_value(&f.ret);
        let end_label = self.label();
        self.frames.push(Frame {
            result: result.clone(),
            end_label,
        });
        self.inlining.push(func);
        let saved_loops = std::mem::take(&mut self.loops);
        let span = self.span;
        // Nests once per helper of a call chain.
        crate::stack::grow(|| self.block(&f.body));
        self.span = span;
        self.loops = saved_loops;
        self.inlining.pop();
        self.frames.pop();
        self.place_label(end_label);
        for (p, b) in saved {
            match b {
                Some(b) => self.env.insert(p, b),
                None => self.env.remove(&p),
            };
        }
        result
    }

    /// A call of an outlined helper: arguments and result pass through `.param` space, one
    /// parameter per register (predicates as 32-bit integers), the trap status address last.
    fn call_func(&mut self, func: FuncId, args: &[Expr]) -> Vec<Reg> {
        let symbol = self.define_func(func);
        let mut values = Vec::new();
        for a in args {
            values.extend(self.expr(a));
        }
        values.extend(self.trap);
        let result = self.fresh_value(&self.kernel.function(func).ret);
        self.call_symbol(&symbol, &values, &result);
        result
    }

    /// `call` of a `.func` named `symbol` with the registers `values` as arguments, its result
    /// into `result`.
    fn call_symbol(&mut self, symbol: &str, values: &[Reg], result: &[Reg]) {
        self.emit("{");
        let mut names = Vec::with_capacity(values.len());
        for (k, &v) in values.iter().enumerate() {
            let name = format!("sarek_arg_{k}");
            self.emit_fmt(format_args!(".param .{} {name};", param_type(v.class)));
            self.store_param(&name, v);
            names.push(name);
        }
        let list = names.join(", ");
        match result {
            [] => ins!(self, "call ", symbol, ", (", list, ");"),
            regs => {
                self.emit_fmt(format_args!("{};", ret_param("sarek_ret", regs)));
                ins!(self, "call (sarek_ret), ", symbol, ", (", list, ");");
                for (k, &r) in regs.iter().enumerate() {
                    self.load_param(r, &param_at("sarek_ret", regs, k));
                }
            }
        }
        self.emit("}");
    }

    /// The `.func` symbol of an outlined helper, writing its definition at the first call.
    fn define_func(&mut self, func: FuncId) -> String {
        if let Some(symbol) = self.func_symbols.get(&func) {
            return symbol.clone();
        }
        let symbol = format!("sarek_func_{}", func.0);
        let kernel = self.kernel;
        let f = kernel.function(func);
        let saved = self.enter_function();
        let mut params = Vec::new();
        for &p in &f.params {
            let regs = self.fresh_value(&kernel.var(p).ty);
            for &r in &regs {
                let name = format!("{symbol}_param_{}", params.len());
                params.push(format!("    .param .{} {name}", param_type(r.class)));
                self.load_param(r, &name);
            }
            self.env.insert(p, Binding::Value(regs));
        }
        if saved.trap.is_some() {
            let name = format!("{symbol}_param_{}", params.len());
            params.push(format!("    .param .b64 {name}"));
            let r = self.reg(Class::B64);
            self.load_param(r, &name);
            self.trap = Some(r);
        }
        let result = self.fresh_value(&f.ret);
        let end_label = self.label();
        self.frames.push(Frame {
            result: result.clone(),
            end_label,
        });
        self.inlining.push(func);
        // Nests once per outlined helper of a call chain.
        crate::stack::grow(|| self.block(&f.body));
        self.inlining.pop();
        self.place_label(end_label);
        let ret = format!("{symbol}_ret");
        for (k, &r) in result.iter().enumerate() {
            self.store_param(&param_at(&ret, &result, k), r);
        }
        self.emit("ret;");
        self.leave_function(saved, &symbol, &params, &ret, &result);
        self.func_symbols.insert(func, symbol.clone());
        symbol
    }

    /// Start writing a `.func` body: the caller's state is set aside, to be restored by
    /// [`Self::leave_function`].
    fn enter_function(&mut self) -> FunctionState {
        FunctionState {
            body: std::mem::take(&mut self.body),
            local_decls: std::mem::take(&mut self.local_decls),
            counts: std::mem::take(&mut self.counts),
            env: std::mem::take(&mut self.env),
            loops: std::mem::take(&mut self.loops),
            frames: std::mem::take(&mut self.frames),
            span: self.span,
            trap: self.trap,
        }
    }

    /// Finish the `.func` written since [`Self::enter_function`] (its body ends in `ret`):
    /// its definition goes to the module's functions and the caller's state comes back.
    fn leave_function(
        &mut self,
        saved: FunctionState,
        symbol: &str,
        params: &[String],
        ret: &str,
        result: &[Reg],
    ) {
        let mut text = String::with_capacity(self.body.len() + 256);
        text.push_str(".func ");
        if !result.is_empty() {
            let _ = write!(text, "({}) ", ret_param(ret, result));
        }
        let _ = writeln!(text, "{symbol}(");
        text.push_str(&params.join(",\n"));
        text.push_str("\n)\n{\n");
        for class in Class::ALL {
            let n = self.counts[class.index()];
            if n > 0 {
                let _ = writeln!(text, "    .reg {} {}<{}>;", class.decl(), class.prefix(), n);
            }
        }
        for line in self.local_decls.lines() {
            let _ = writeln!(text, "    {line}");
        }
        text.push_str(&self.body);
        text.push_str("}\n\n");
        self.funcs.push_str(&text);
        self.body = saved.body;
        self.local_decls = saved.local_decls;
        self.counts = saved.counts;
        self.env = saved.env;
        self.loops = saved.loops;
        self.frames = saved.frames;
        self.span = saved.span;
        self.trap = saved.trap;
    }

    /// A call of a software routine ([`softmath`]), writing its `.func` at the first call
    /// (a routine's own calls, written while it is, come before it in the module): its
    /// results.
    fn soft_call(&mut self, routine: Routine, args: &[Reg]) -> Vec<Reg> {
        let symbol = routine.symbol();
        let symbol = symbol.as_str();
        let (width, arity, results) = routine.signature();
        let class = match width {
            Width::W32 => Class::F32,
            Width::W64 => Class::F64,
        };
        if !self.soft_routines.contains(&routine) {
            self.soft_routines.push(routine);
            let saved = self.enter_function();
            let mut params = Vec::with_capacity(arity);
            let mut values = Vec::with_capacity(arity);
            for k in 0..arity {
                let name = format!("{symbol}_param_{k}");
                params.push(format!("    .param .{} {name}", param_type(class)));
                let r = self.reg(class);
                self.load_param(r, &name);
                values.push(r);
            }
            let result = routine.build(&mut Emit(self), &values);
            let ret = format!("{symbol}_ret");
            for (k, &r) in result.iter().enumerate() {
                self.store_param(&param_at(&ret, &result, k), r);
            }
            self.emit("ret;");
            self.leave_function(saved, symbol, &params, &ret, &result);
        }
        let dests: Vec<Reg> = (0..results).map(|_| self.reg(class)).collect();
        self.call_symbol(symbol, args, &dests);
        dests
    }

    /// `st.param` of one register (a predicate as 0 or 1).
    fn store_param(&mut self, param: &str, value: Reg) {
        let value = if value.class == Class::Pred {
            let r = self.reg(Class::B32);
            ins!(self, "selp.u32 ", r, ", 1, 0, ", value, ";");
            r
        } else {
            value
        };
        let t = param_type(value.class);
        ins!(self, "st.param.", t, " [", param, "], ", value, ";");
    }

    /// `ld.param` into one register (a predicate from 0 or 1).
    fn load_param(&mut self, dst: Reg, param: &str) {
        if dst.class == Class::Pred {
            let r = self.reg(Class::B32);
            ins!(self, "ld.param.b32 ", r, ", [", param, "];");
            ins!(self, "setp.ne.b32 ", dst, ", ", r, ", 0;");
        } else {
            let t = param_type(dst.class);
            ins!(self, "ld.param.", t, " ", dst, ", [", param, "];");
        }
    }

    fn intrinsic(&mut self, op: Intrinsic, args: &[Expr], ty: &Ty) -> Vec<Reg> {
        match op {
            Intrinsic::Geometry(g) => vec![self.geometry(g)],
            Intrinsic::BlockBarrier => {
                self.emit("bar.sync 0;");
                Vec::new()
            }
            Intrinsic::FenceBlock => {
                self.emit("membar.cta;");
                Vec::new()
            }
            Intrinsic::FenceDevice => {
                self.emit("membar.gl;");
                Vec::new()
            }
            Intrinsic::Length => {
                let Some(ExprKind::Var(v)) = args.first().map(|a| &a.kind) else {
                    self.internal("`length` of something that is not a vector variable");
                    return self.fresh_value(ty);
                };
                match self.array(*v) {
                    Some(a) => vec![a.len],
                    None => self.fresh_value(ty),
                }
            }
            Intrinsic::Atomic(a) => vec![self.atomic(a, args, ty)],
            Intrinsic::Warp(w) => vec![self.warp(w, args, ty)],
            Intrinsic::Math(m) => {
                let vals: Vec<Reg> = args.iter().map(|a| self.expr1(a)).collect();
                let s = ty.scalar().unwrap_or(Scalar::F32);
                vec![self.math(m, &vals, s)]
            }
            Intrinsic::Abs | Intrinsic::Min | Intrinsic::Max => {
                let vals: Vec<Reg> = args.iter().map(|a| self.expr1(a)).collect();
                let s = ty.scalar().unwrap_or(Scalar::I32);
                let d = self.sreg(s);
                let t = arith(s);
                match op {
                    Intrinsic::Abs if s.is_float() => {
                        self.emit_fmt(format_args!("abs.{t} {d}, {};", vals[0]))
                    }
                    // `abs.s32` of min_int is undefined in PTX, and ptxas folded a later
                    // `rem` as if the result were non-negative: negate below zero, wrapping.
                    Intrinsic::Abs => {
                        let (x, neg, below) = (vals[0], self.sreg(s), self.reg(Class::Pred));
                        ins!(self, "setp.lt.", t, " ", below, ", ", x, ", 0;");
                        ins!(self, "sub.", t, " ", neg, ", 0, ", x, ";");
                        ins!(
                            self, "selp.", t, " ", d, ", ", neg, ", ", x, ", ", below, ";"
                        );
                    }
                    Intrinsic::Min => {
                        self.emit_fmt(format_args!("min.{t} {d}, {}, {};", vals[0], vals[1]))
                    }
                    _ => self.emit_fmt(format_args!("max.{t} {d}, {}, {};", vals[0], vals[1])),
                }
                vec![d]
            }
            Intrinsic::Clz | Intrinsic::Popcount => {
                let a = self.expr1(&args[0]);
                let s = args[0].ty.scalar().unwrap_or(Scalar::I32);
                let name = if op == Intrinsic::Clz { "clz" } else { "popc" };
                let n = self.reg(Class::B32);
                self.emit_fmt(format_args!("{name}.{} {n}, {a};", bits(s)));
                vec![self.int_result(n, ty)]
            }
            Intrinsic::Convert => {
                let a = self.expr1(&args[0]);
                let from = args[0].ty.scalar().unwrap_or(Scalar::I32);
                let to = ty.scalar().unwrap_or(Scalar::I32);
                vec![self.convert(a, from, to)]
            }
        }
    }

    /// Widen a 32-bit count to the result type when it is int64.
    fn int_result(&mut self, n: Reg, ty: &Ty) -> Reg {
        if ty.scalar() == Some(Scalar::I64) {
            let d = self.reg(Class::B64);
            ins!(self, "cvt.s64.s32 ", d, ", ", n, ";");
            d
        } else {
            n
        }
    }

    fn geometry(&mut self, g: Geometry) -> Reg {
        let d = self.reg(Class::B32);
        let sreg = |base: &str, a: Axis| format!("%{base}.{}", a.letter());
        match g {
            Geometry::ThreadIdx(a) => {
                self.emit_fmt(format_args!("mov.u32 {d}, {};", sreg("tid", a)))
            }
            Geometry::BlockIdx(a) => {
                self.emit_fmt(format_args!("mov.u32 {d}, {};", sreg("ctaid", a)))
            }
            Geometry::BlockDim(a) => {
                self.emit_fmt(format_args!("mov.u32 {d}, {};", sreg("ntid", a)))
            }
            Geometry::GridDim(a) => {
                self.emit_fmt(format_args!("mov.u32 {d}, {};", sreg("nctaid", a)))
            }
            Geometry::GlobalIdx(a) => {
                let [t, b, n] = self.regs(Class::B32);
                self.emit_fmt(format_args!("mov.u32 {t}, {};", sreg("tid", a)));
                self.emit_fmt(format_args!("mov.u32 {b}, {};", sreg("ctaid", a)));
                self.emit_fmt(format_args!("mov.u32 {n}, {};", sreg("ntid", a)));
                ins!(self, "mad.lo.s32 ", d, ", ", b, ", ", n, ", ", t, ";");
            }
            Geometry::WarpSize => ins!(self, "mov.u32 ", d, ", WARP_SZ;"),
        }
        d
    }

    fn convert(&mut self, a: Reg, from: Scalar, to: Scalar) -> Reg {
        if from == to {
            return a;
        }
        let d = self.sreg(to);
        let (f, t) = (arith(from), arith(to));
        let text = match (from.is_float(), to.is_float()) {
            // Rounds to nearest, as the interpreter's `as` conversions do.
            (false, true) => format!("cvt.rn.{t}.{f} {d}, {a};"),
            // Truncates toward zero, saturating: Rust `as` semantics. NaN must become 0,
            // which `cvt` does not do everywhere: the H200 gives min_int for NaN from
            // float64 and into int64 (`findings/fixed/glsl_float_to_int_saturates.sarek`).
            (true, false) => {
                let (nan, raw) = (self.reg(Class::Pred), self.sreg(to));
                ins!(self, "setp.nan.", f, " ", nan, ", ", a, ", ", a, ";");
                ins!(self, "cvt.rzi.", t, ".", f, " ", raw, ", ", a, ";");
                format!("selp.{t} {d}, 0, {raw}, {nan};")
            }
            (true, true) if to == Scalar::F64 => format!("cvt.f64.f32 {d}, {a};"),
            (true, true) => format!("cvt.rn.f32.f64 {d}, {a};"),
            (false, false) if from == Scalar::Bool || to == Scalar::Bool => {
                self.internal(format!("conversion from {from} to {to}"));
                return d;
            }
            (false, false) => format!("cvt.{t}.{f} {d}, {a};"),
        };
        self.emit(text);
        d
    }

    fn math(&mut self, m: MathFn, v: &[Reg], s: Scalar) -> Reg {
        let t = arith(s);
        let d = self.sreg(s);
        let simple = |name: &str| format!("{name}.{t} {d}, {};", v[0]);
        match m {
            MathFn::Sqrt => self.emit(simple("sqrt.rn")),
            MathFn::Fabs => self.emit(simple("abs")),
            MathFn::Floor => self.emit_fmt(format_args!("cvt.rmi.{t}.{t} {d}, {};", v[0])),
            MathFn::Ceil => self.emit_fmt(format_args!("cvt.rpi.{t}.{t} {d}, {};", v[0])),
            MathFn::Trunc => self.emit_fmt(format_args!("cvt.rzi.{t}.{t} {d}, {};", v[0])),
            MathFn::Round => {
                // Half away from zero: trunc(x) + (|x - trunc(x)| >= 0.5 ? sign(x) : 0).
                let tr = self.sreg(s);
                self.emit_fmt(format_args!("cvt.rzi.{t}.{t} {tr}, {};", v[0]));
                let frac = self.sreg(s);
                self.emit_fmt(format_args!("sub.rn.{t} {frac}, {}, {tr};", v[0]));
                ins!(self, "abs.", t, " ", frac, ", ", frac, ";");
                let half = if s == Scalar::F64 {
                    self.literal(Literal::F64(0.5))
                } else {
                    self.f32_const(0.5)
                };
                let one = if s == Scalar::F64 {
                    self.literal(Literal::F64(1.0))
                } else {
                    self.f32_const(1.0)
                };
                let sign = self.sreg(s);
                self.emit_fmt(format_args!("copysign.{t} {sign}, {}, {one};", v[0]));
                let p = self.reg(Class::Pred);
                ins!(self, "setp.ge.", t, " ", p, ", ", frac, ", ", half, ";");
                let adj = self.sreg(s);
                ins!(self, "add.rn.", t, " ", adj, ", ", tr, ", ", sign, ";");
                ins!(self, "selp.", t, " ", d, ", ", adj, ", ", tr, ", ", p, ";");
            }
            MathFn::Fmin => self.emit_fmt(format_args!("min.{t} {d}, {}, {};", v[0], v[1])),
            MathFn::Fmax => self.emit_fmt(format_args!("max.{t} {d}, {}, {};", v[0], v[1])),
            MathFn::Fma => self.emit_fmt(format_args!(
                "fma.rn.{t} {d}, {}, {}, {};",
                v[0], v[1], v[2]
            )),
            MathFn::Copysign => {
                self.emit_fmt(format_args!("copysign.{t} {d}, {}, {};", v[1], v[0]))
            }
            MathFn::Hypot => {
                let r = self.hypot(v[0], v[1], s);
                ins!(self, "mov.", t, " ", d, ", ", r, ";");
            }
            // As the interpreter: 1 / sqrt x, both correctly rounded.
            MathFn::Rsqrt if s == Scalar::F64 => {
                let (root, one) = (self.reg(Class::F64), self.literal(Literal::F64(1.0)));
                self.emit_fmt(format_args!("sqrt.rn.f64 {root}, {};", v[0]));
                ins!(self, "div.rn.f64 ", d, ", ", one, ", ", root, ";");
            }
            _ if s == Scalar::F64 => match Routine::for_float64(m) {
                Some(routine) => {
                    let r = self.soft_call(routine, v);
                    self.mov(d, r[0]);
                }
                None => self.internal(format!("float64 `{}` has no PTX instruction", m.c_name())),
            },
            MathFn::Rsqrt => self.emit(simple("rsqrt.approx.ftz")),
            MathFn::Sin => self.emit(simple("sin.approx")),
            MathFn::Cos => self.emit(simple("cos.approx")),
            MathFn::Tan => {
                let (sn, cs) = (self.reg(Class::F32), self.reg(Class::F32));
                self.emit_fmt(format_args!("sin.approx.f32 {sn}, {};", v[0]));
                self.emit_fmt(format_args!("cos.approx.f32 {cs}, {};", v[0]));
                ins!(self, "div.rn.f32 ", d, ", ", sn, ", ", cs, ";");
            }
            MathFn::Exp2 => self.emit(simple("ex2.approx")),
            MathFn::Log2 => self.emit(simple("lg2.approx")),
            MathFn::Exp => {
                let r = self.exp_f32(v[0]);
                ins!(self, "mov.f32 ", d, ", ", r, ";");
            }
            MathFn::Expm1 => {
                let r = self.expm1_f32(v[0]);
                ins!(self, "mov.f32 ", d, ", ", r, ";");
            }
            MathFn::Log1p => {
                let r = self.log1p_f32(v[0]);
                ins!(self, "mov.f32 ", d, ", ", r, ";");
            }
            MathFn::Log | MathFn::Log10 => {
                let x = v[0];
                let l = self.reg(Class::F32);
                ins!(self, "lg2.approx.f32 ", l, ", ", x, ";");
                let k = if m == MathFn::Log10 {
                    std::f32::consts::LOG10_2
                } else {
                    std::f32::consts::LN_2
                };
                let k = self.f32_const(k);
                ins!(self, "mul.rn.f32 ", d, ", ", l, ", ", k, ";");
            }
            MathFn::Pow => {
                let r = self.pow_f32(v[0], v[1]);
                ins!(self, "mov.f32 ", d, ", ", r, ";");
            }
            MathFn::Tanh => {
                let r = self.tanh_f32(v[0]);
                ins!(self, "mov.f32 ", d, ", ", r, ";");
            }
            MathFn::Sinh | MathFn::Cosh => {
                let r = self.sinh_cosh_f32(v[0], m == MathFn::Sinh);
                ins!(self, "mov.f32 ", d, ", ", r, ";");
            }
            MathFn::Atan => {
                let r = self.atan_f32(v[0]);
                ins!(self, "mov.f32 ", d, ", ", r, ";");
            }
            MathFn::Atan2 => {
                let r = self.atan2_f32(v[0], v[1]);
                ins!(self, "mov.f32 ", d, ", ", r, ";");
            }
            MathFn::Asin | MathFn::Acos => {
                // sqrt((1 - x)(1 + x)) keeps precision near |x| = 1; then
                // asin x = atan(x / s) and acos x = atan2(s, x).
                let one = self.f32_const(1.0);
                let [a, b, sq] = self.regs(Class::F32);
                self.emit_fmt(format_args!("sub.rn.f32 {a}, {one}, {};", v[0]));
                self.emit_fmt(format_args!("add.rn.f32 {b}, {one}, {};", v[0]));
                ins!(self, "mul.rn.f32 ", sq, ", ", a, ", ", b, ";");
                ins!(self, "sqrt.rn.f32 ", sq, ", ", sq, ";");
                let r = if m == MathFn::Asin {
                    let q = self.reg(Class::F32);
                    self.emit_fmt(format_args!("div.rn.f32 {q}, {}, {sq};", v[0]));
                    self.atan_f32(q)
                } else {
                    self.atan2_f32(sq, v[0])
                };
                ins!(self, "mov.f32 ", d, ", ", r, ";");
            }
        }
        d
    }

    /// float32 arctangent without a PTX instruction: Cephes `atanf` (argument reduction to
    /// |x| <= tan(pi/8) around 0, pi/4 or pi/2, then a degree-9 odd polynomial); within
    /// 3 ulps of the correctly rounded result (measured against float64 on 400k inputs).
    /// `c[0] + x * (c[1] + x * (...))`, by fused multiply-adds.
    fn poly_f32(&mut self, x: Reg, c: &[f32]) -> Reg {
        let p = self.reg(Class::F32);
        let last = self.f32_const(c[c.len() - 1]);
        ins!(self, "mov.f32 ", p, ", ", last, ";");
        for &k in c[..c.len() - 1].iter().rev() {
            let k = self.f32_const(k);
            ins!(self, "fma.rn.f32 ", p, ", ", p, ", ", x, ", ", k, ";");
        }
        p
    }

    /// float32 e^x as 2^(x log2 e).
    fn exp_f32(&mut self, x: Reg) -> Reg {
        let k = self.f32_const(std::f32::consts::LOG2_E);
        let (y, d) = (self.reg(Class::F32), self.reg(Class::F32));
        ins!(self, "mul.rn.f32 ", y, ", ", x, ", ", k, ";");
        ins!(self, "ex2.approx.f32 ", d, ", ", y, ";");
        d
    }

    /// float32 expm1: below |x| = 0.5 the Taylor series without its leading 1 (`e^x - 1`
    /// loses every digit near 0), truncated under 2^-26.
    fn expm1_f32(&mut self, x: Reg) -> Reg {
        let (ax, small) = (self.reg(Class::F32), self.reg(Class::Pred));
        ins!(self, "abs.f32 ", ax, ", ", x, ";");
        let half = self.f32_const(0.5);
        ins!(self, "setp.lt.f32 ", small, ", ", ax, ", ", half, ";");
        let p = self.poly_f32(x, &EXPM1_SERIES);
        let series = self.reg(Class::F32);
        ins!(self, "mul.rn.f32 ", series, ", ", x, ", ", p, ";");
        let e = self.exp_f32(x);
        let one = self.f32_const(1.0);
        let d = self.reg(Class::F32);
        ins!(self, "sub.rn.f32 ", e, ", ", e, ", ", one, ";");
        self.selp("f32", d, series, e, small);
        d
    }

    /// float32 log1p: on [-0.5, 1], 2 atanh(s) with s = x / (2 + x) (|s| <= 1/3), as a
    /// series in s^2 truncated under 2^-26; elsewhere log(1 + x).
    fn log1p_f32(&mut self, x: Reg) -> Reg {
        let (lo, inr) = (self.reg(Class::Pred), self.reg(Class::Pred));
        let (mhalf, one, two) = (
            self.f32_const(-0.5),
            self.f32_const(1.0),
            self.f32_const(2.0),
        );
        ins!(self, "setp.ge.f32 ", lo, ", ", x, ", ", mhalf, ";");
        ins!(
            self,
            "setp.le.and.f32 ",
            inr,
            ", ",
            x,
            ", ",
            one,
            ", ",
            lo,
            ";"
        );
        let [den, sr, z] = self.regs(Class::F32);
        ins!(self, "add.rn.f32 ", den, ", ", x, ", ", two, ";");
        ins!(self, "div.rn.f32 ", sr, ", ", x, ", ", den, ";");
        ins!(self, "mul.rn.f32 ", z, ", ", sr, ", ", sr, ";");
        let p = self.poly_f32(z, &ATANH_SERIES);
        let series = self.reg(Class::F32);
        ins!(self, "mul.rn.f32 ", series, ", ", sr, ", ", two, ";");
        ins!(self, "mul.rn.f32 ", series, ", ", series, ", ", p, ";");
        let (u, l) = (self.reg(Class::F32), self.reg(Class::F32));
        ins!(self, "add.rn.f32 ", u, ", ", x, ", ", one, ";");
        ins!(self, "lg2.approx.f32 ", l, ", ", u, ";");
        let ln2 = self.f32_const(std::f32::consts::LN_2);
        ins!(self, "mul.rn.f32 ", l, ", ", l, ", ", ln2, ";");
        let d = self.reg(Class::F32);
        self.selp("f32", d, series, l, inr);
        d
    }

    /// float32 sinh or cosh: (e^a -+ e^-a) / 2 for a = |x|, as (e^(a/2) / 2) e^(a/2) from 88
    /// on (where e^a alone overflows before the result does), and sinh's odd Taylor series
    /// below 0.5 (the difference loses every digit near 0).
    fn sinh_cosh_f32(&mut self, x: Reg, sinh: bool) -> Reg {
        let a = self.reg(Class::F32);
        ins!(self, "abs.f32 ", a, ", ", x, ";");
        let e = self.exp_f32(a);
        let (one, half) = (self.f32_const(1.0), self.f32_const(0.5));
        let (inv, r) = (self.reg(Class::F32), self.reg(Class::F32));
        ins!(self, "div.rn.f32 ", inv, ", ", one, ", ", e, ";");
        let op = if sinh { "sub" } else { "add" };
        ins!(self, op, ".rn.f32 ", r, ", ", e, ", ", inv, ";");
        ins!(self, "mul.rn.f32 ", r, ", ", r, ", ", half, ";");
        let ha = self.reg(Class::F32);
        ins!(self, "mul.rn.f32 ", ha, ", ", a, ", ", half, ";");
        let h = self.exp_f32(ha);
        let big = self.reg(Class::F32);
        ins!(self, "mul.rn.f32 ", big, ", ", h, ", ", half, ";");
        ins!(self, "mul.rn.f32 ", big, ", ", big, ", ", h, ";");
        let (huge, lim) = (self.reg(Class::Pred), self.f32_const(88.0));
        ins!(self, "setp.ge.f32 ", huge, ", ", a, ", ", lim, ";");
        let d = self.reg(Class::F32);
        self.selp("f32", d, big, r, huge);
        if sinh {
            // copysign d, a, b: the sign of a, the magnitude of b.
            ins!(self, "copysign.f32 ", d, ", ", x, ", ", d, ";");
            let z = self.reg(Class::F32);
            ins!(self, "mul.rn.f32 ", z, ", ", x, ", ", x, ";");
            let p = self.poly_f32(z, &SINH_SERIES);
            let series = self.reg(Class::F32);
            ins!(self, "mul.rn.f32 ", series, ", ", x, ", ", p, ";");
            let small = self.reg(Class::Pred);
            ins!(self, "setp.lt.f32 ", small, ", ", a, ", ", half, ";");
            self.selp("f32", d, series, d, small);
        }
        d
    }

    /// float32 tanh: expm1(2a) / (expm1(2a) + 2) for a = |x| (accurate near 0), 1 from 10 on,
    /// with the sign of x.
    fn tanh_f32(&mut self, x: Reg) -> Reg {
        let (a, a2) = (self.reg(Class::F32), self.reg(Class::F32));
        ins!(self, "abs.f32 ", a, ", ", x, ";");
        ins!(self, "add.rn.f32 ", a2, ", ", a, ", ", a, ";");
        let e = self.expm1_f32(a2);
        let two = self.f32_const(2.0);
        let (den, r) = (self.reg(Class::F32), self.reg(Class::F32));
        ins!(self, "add.rn.f32 ", den, ", ", e, ", ", two, ";");
        ins!(self, "div.rn.f32 ", r, ", ", e, ", ", den, ";");
        let (sat, lim, one) = (
            self.reg(Class::Pred),
            self.f32_const(10.0),
            self.f32_const(1.0),
        );
        ins!(self, "setp.ge.f32 ", sat, ", ", a, ", ", lim, ";");
        self.selp("f32", r, one, r, sat);
        let d = self.reg(Class::F32);
        ins!(self, "copysign.f32 ", d, ", ", x, ", ", r, ";");
        d
    }

    /// C's pow on float32: 2^(y log2 |x|), negated for a negative base and an odd integral
    /// exponent, NaN for a negative base and a non-integral one, and 1 for y = 0.
    fn pow_f32(&mut self, x: Reg, y: Reg) -> Reg {
        let [ax, l, r] = self.regs(Class::F32);
        ins!(self, "abs.f32 ", ax, ", ", x, ";");
        ins!(self, "lg2.approx.f32 ", l, ", ", ax, ";");
        ins!(self, "mul.rn.f32 ", l, ", ", l, ", ", y, ";");
        ins!(self, "ex2.approx.f32 ", r, ", ", l, ";");
        let (yi, integral) = (self.reg(Class::F32), self.reg(Class::Pred));
        ins!(self, "cvt.rzi.f32.f32 ", yi, ", ", y, ";");
        ins!(self, "setp.eq.f32 ", integral, ", ", y, ", ", yi, ";");
        let half = self.f32_const(0.5);
        let (h, hi, odd) = (
            self.reg(Class::F32),
            self.reg(Class::F32),
            self.reg(Class::Pred),
        );
        ins!(self, "mul.rn.f32 ", h, ", ", y, ", ", half, ";");
        ins!(self, "cvt.rzi.f32.f32 ", hi, ", ", h, ";");
        ins!(self, "setp.ne.f32 ", odd, ", ", h, ", ", hi, ";");
        // A base with its sign bit set (-0 too) and an odd integral exponent: -r.
        ins!(self, "and.pred ", odd, ", ", odd, ", ", integral, ";");
        let (bits, signed) = (self.reg(Class::B32), self.reg(Class::Pred));
        ins!(self, "mov.b32 ", bits, ", ", x, ";");
        ins!(self, "setp.lt.s32 ", signed, ", ", bits, ", 0;");
        ins!(self, "and.pred ", odd, ", ", odd, ", ", signed, ";");
        let (nr, d) = (self.reg(Class::F32), self.reg(Class::F32));
        ins!(self, "neg.f32 ", nr, ", ", r, ";");
        self.selp("f32", d, nr, r, odd);
        // A negative base and a non-integral exponent: NaN.
        let (neg, zero) = (self.reg(Class::Pred), self.f32_const(0.0));
        ins!(self, "setp.lt.f32 ", neg, ", ", x, ", ", zero, ";");
        let nonint = self.reg(Class::Pred);
        ins!(self, "not.pred ", nonint, ", ", integral, ";");
        ins!(self, "and.pred ", neg, ", ", neg, ", ", nonint, ";");
        let nan = self.f32_const(f32::NAN);
        self.selp("f32", d, nan, d, neg);
        let (yz, one) = (self.reg(Class::Pred), self.f32_const(1.0));
        ins!(self, "setp.eq.f32 ", yz, ", ", y, ", ", zero, ";");
        // pow(1, y) = pow(-1, ±inf) = 1 (C), where 2^(y log2 1) is 2^NaN.
        let (base_one, unit, y_inf, ay) = (
            self.reg(Class::Pred),
            self.reg(Class::Pred),
            self.reg(Class::Pred),
            self.reg(Class::F32),
        );
        let inf = self.f32_const(f32::INFINITY);
        ins!(self, "setp.eq.f32 ", base_one, ", ", x, ", ", one, ";");
        ins!(self, "setp.eq.f32 ", unit, ", ", ax, ", ", one, ";");
        ins!(self, "abs.f32 ", ay, ", ", y, ";");
        ins!(self, "setp.eq.f32 ", y_inf, ", ", ay, ", ", inf, ";");
        ins!(self, "and.pred ", unit, ", ", unit, ", ", y_inf, ";");
        ins!(self, "or.pred ", yz, ", ", yz, ", ", base_one, ";");
        ins!(self, "or.pred ", yz, ", ", yz, ", ", unit, ";");
        self.selp("f32", d, one, d, yz);
        d
    }

    /// hypot without overflow or underflow of the squares: float32 through float64
    /// (the squares and their sum are exact or nearly so there); float64 as
    /// m sqrt(1 + (n / m)^2) with m, n the larger and smaller magnitude. An infinite
    /// argument gives +inf, even with a NaN (C's rule); otherwise a NaN gives NaN.
    fn hypot(&mut self, x: Reg, y: Reg, s: Scalar) -> Reg {
        let d = self.sreg(s);
        let t = arith(s);
        if s == Scalar::F32 {
            let [xd, yd, sq] = self.regs(Class::F64);
            ins!(self, "cvt.f64.f32 ", xd, ", ", x, ";");
            ins!(self, "cvt.f64.f32 ", yd, ", ", y, ";");
            ins!(self, "mul.rn.f64 ", sq, ", ", xd, ", ", xd, ";");
            ins!(self, "fma.rn.f64 ", sq, ", ", yd, ", ", yd, ", ", sq, ";");
            ins!(self, "sqrt.rn.f64 ", sq, ", ", sq, ";");
            ins!(self, "cvt.rn.f32.f64 ", d, ", ", sq, ";");
        } else {
            let [ax, ay, m, n, q] = self.regs(Class::of(s));
            ins!(self, "abs.f64 ", ax, ", ", x, ";");
            ins!(self, "abs.f64 ", ay, ", ", y, ";");
            ins!(self, "max.f64 ", m, ", ", ax, ", ", ay, ";");
            ins!(self, "min.f64 ", n, ", ", ax, ", ", ay, ";");
            ins!(self, "div.rn.f64 ", q, ", ", n, ", ", m, ";");
            let one = self.literal(Literal::F64(1.0));
            ins!(self, "fma.rn.f64 ", q, ", ", q, ", ", q, ", ", one, ";");
            ins!(self, "sqrt.rn.f64 ", q, ", ", q, ";");
            ins!(self, "mul.rn.f64 ", d, ", ", m, ", ", q, ";");
            let (mz, zero) = (self.reg(Class::Pred), self.literal(Literal::F64(0.0)));
            ins!(self, "setp.eq.f64 ", mz, ", ", m, ", ", zero, ";");
            self.selp("f64", d, zero, d, mz);
            let (xn, yn) = (self.reg(Class::Pred), self.reg(Class::Pred));
            ins!(self, "testp.notanumber.f64 ", xn, ", ", x, ";");
            ins!(self, "testp.notanumber.f64 ", yn, ", ", y, ";");
            ins!(self, "or.pred ", xn, ", ", xn, ", ", yn, ";");
            let nan = self.literal(Literal::F64(f64::NAN));
            self.selp("f64", d, nan, d, xn);
        }
        let (xi, yi) = (self.reg(Class::Pred), self.reg(Class::Pred));
        self.emit_fmt(format_args!(
            "testp.infinite{} {xi}, {x};",
            Class::of(s).decl()
        ));
        self.emit_fmt(format_args!(
            "testp.infinite{} {yi}, {y};",
            Class::of(s).decl()
        ));
        ins!(self, "or.pred ", xi, ", ", xi, ", ", yi, ";");
        let inf = if s == Scalar::F32 {
            self.f32_const(f32::INFINITY)
        } else {
            self.literal(Literal::F64(f64::INFINITY))
        };
        ins!(self, "selp.", t, " ", d, ", ", inf, ", ", d, ", ", xi, ";");
        d
    }

    fn atan_f32(&mut self, x: Reg) -> Reg {
        let ax = self.reg(Class::F32);
        ins!(self, "abs.f32 ", ax, ", ", x, ";");
        let (big, mid) = (self.reg(Class::Pred), self.reg(Class::Pred));
        let tan3pi8 = self.f32_const(2.414_213_5);
        let tanpi8 = self.f32_const(0.414_213_57);
        ins!(self, "setp.gt.f32 ", big, ", ", ax, ", ", tan3pi8, ";");
        ins!(self, "setp.gt.f32 ", mid, ", ", ax, ", ", tanpi8, ";");
        let one = self.f32_const(1.0);
        let mone = self.f32_const(-1.0);
        let [rbig, num, den, rmid] = self.regs(Class::F32);
        ins!(self, "div.rn.f32 ", rbig, ", ", mone, ", ", ax, ";");
        ins!(self, "sub.rn.f32 ", num, ", ", ax, ", ", one, ";");
        ins!(self, "add.rn.f32 ", den, ", ", ax, ", ", one, ";");
        ins!(self, "div.rn.f32 ", rmid, ", ", num, ", ", den, ";");
        let (xr, y0) = (self.reg(Class::F32), self.reg(Class::F32));
        let zero = self.f32_const(0.0);
        let pi4 = self.f32_const(std::f32::consts::FRAC_PI_4);
        let pi2 = self.f32_const(std::f32::consts::FRAC_PI_2);
        self.selp("f32", xr, rmid, ax, mid);
        self.selp("f32", xr, rbig, xr, big);
        self.selp("f32", y0, pi4, zero, mid);
        self.selp("f32", y0, pi2, y0, big);
        let (z, p) = (self.reg(Class::F32), self.reg(Class::F32));
        ins!(self, "mul.rn.f32 ", z, ", ", xr, ", ", xr, ";");
        let c0 = self.f32_const(8.053_744_5e-2);
        let c1 = self.f32_const(-1.387_768_5e-1);
        let c2 = self.f32_const(1.997_771_1e-1);
        let c3 = self.f32_const(-3.333_295e-1);
        ins!(self, "fma.rn.f32 ", p, ", ", c0, ", ", z, ", ", c1, ";");
        ins!(self, "fma.rn.f32 ", p, ", ", p, ", ", z, ", ", c2, ";");
        ins!(self, "fma.rn.f32 ", p, ", ", p, ", ", z, ", ", c3, ";");
        ins!(self, "mul.rn.f32 ", p, ", ", p, ", ", z, ";");
        ins!(self, "fma.rn.f32 ", p, ", ", p, ", ", xr, ", ", xr, ";");
        ins!(self, "add.rn.f32 ", p, ", ", p, ", ", y0, ";");
        let d = self.reg(Class::F32);
        // copysign d, a, b: the sign of a, the magnitude of b.
        ins!(self, "copysign.f32 ", d, ", ", x, ", ", p, ";");
        d
    }

    /// float32 `atan2 y x` from [`Self::atan_f32`] of y / x and the half-plane of x, taken
    /// from its sign bit: x = -0 is on the negative side, so `atan2 1 (-0)` is pi/2 (y / x
    /// is -inf there) and `atan2 (±0) (-0)` is ±pi, as C's `atan2f`; `atan2 (±0) (+0)` is ±0.
    fn atan2_f32(&mut self, y: Reg, x: Reg) -> Reg {
        let q = self.reg(Class::F32);
        ins!(self, "div.rn.f32 ", q, ", ", y, ", ", x, ";");
        let r = self.atan_f32(q);
        let pi = self.f32_const(std::f32::consts::PI);
        let (spi, adj) = (self.reg(Class::F32), self.reg(Class::F32));
        ins!(self, "copysign.f32 ", spi, ", ", y, ", ", pi, ";");
        ins!(self, "add.rn.f32 ", adj, ", ", r, ", ", spi, ";");
        let zero = self.f32_const(0.0);
        let (bits, neg) = (self.reg(Class::B32), self.reg(Class::Pred));
        ins!(self, "mov.b32 ", bits, ", ", x, ";");
        ins!(self, "setp.lt.s32 ", neg, ", ", bits, ", 0;");
        let d = self.reg(Class::F32);
        self.selp("f32", d, adj, r, neg);
        let (yz, xz) = (self.reg(Class::Pred), self.reg(Class::Pred));
        ins!(self, "setp.eq.f32 ", yz, ", ", y, ", ", zero, ";");
        ins!(
            self,
            "setp.eq.and.f32 ",
            xz,
            ", ",
            x,
            ", ",
            zero,
            ", ",
            yz,
            ";"
        );
        let sz = self.reg(Class::F32);
        ins!(self, "copysign.f32 ", sz, ", ", y, ", ", zero, ";");
        self.selp("f32", sz, spi, sz, neg);
        self.selp("f32", d, sz, d, xz);
        d
    }

    fn atomic(&mut self, op: AtomicOp, args: &[Expr], ty: &Ty) -> Reg {
        let s = ty.scalar().unwrap_or(Scalar::I32);
        let d = self.sreg(s);
        let Some(ExprKind::Var(v)) = args.first().map(|a| &a.kind) else {
            self.internal("an atomic on something that is not a vector or shared array variable");
            return d;
        };
        let Some(a) = self.array(*v) else { return d };
        let addr = self.element_addr(a.base, a.layout.stride, &args[1]);
        let vals: Vec<Reg> = args[2..].iter().map(|x| self.expr1(x)).collect();
        let addr = addr.at(0);
        let space = a.space;
        let (b, i64) = (bits(s), s == Scalar::I64);
        let one = |w: &mut Self, negative: bool| {
            let k: i64 = if negative { -1 } else { 1 };
            let r = w.sreg(s);
            w.emit(format!("mov.{b} {r}, {k};"));
            r
        };
        match op {
            AtomicOp::Add | AtomicOp::Inc | AtomicOp::Dec | AtomicOp::Sub => {
                let x = match op {
                    AtomicOp::Add => vals[0],
                    AtomicOp::Inc => one(self, false),
                    AtomicOp::Dec => one(self, true),
                    _ => {
                        let n = self.sreg(s);
                        self.emit_fmt(format_args!("neg.{} {n}, {};", arith(s), vals[0]));
                        n
                    }
                };
                let t = match s {
                    Scalar::F32 => "f32",
                    Scalar::I64 => "u64",
                    _ => "u32",
                };
                ins!(
                    self, "atom.", space, ".add.", t, " ", d, ", [", addr, "], ", x, ";"
                );
            }
            AtomicOp::Min | AtomicOp::Max => {
                let name = if op == AtomicOp::Min { "min" } else { "max" };
                let t = if i64 { "s64" } else { "s32" };
                self.emit_fmt(format_args!(
                    "atom.{space}.{name}.{t} {d}, [{addr}], {};",
                    vals[0]
                ));
            }
            AtomicOp::And | AtomicOp::Or | AtomicOp::Xor | AtomicOp::Exch => {
                let name = match op {
                    AtomicOp::And => "and",
                    AtomicOp::Or => "or",
                    AtomicOp::Xor => "xor",
                    _ => "exch",
                };
                self.emit_fmt(format_args!(
                    "atom.{space}.{name}.{b} {d}, [{addr}], {};",
                    vals[0]
                ));
            }
            AtomicOp::Cas => {
                self.emit_fmt(format_args!(
                    "atom.{space}.cas.{b} {d}, [{addr}], {}, {};",
                    vals[0], vals[1]
                ));
            }
        }
        let _ = self.options;
        d
    }

    /// The calling thread's lane, the live lanes of its warp and their member mask
    /// (docs/language-notes.md, "Partial warps"): a warp is 32 consecutive threads of the
    /// block in linear order, the last one of a block of `n` threads has
    /// `live = min(32, n - (t & ~31))` threads, and only those may be named by `.sync`.
    fn warp_lanes(&mut self) -> (Reg, Reg, Reg) {
        let [t, n, x, lane, live, mask] = [(); 6].map(|()| self.reg(Class::B32));
        ins!(self, "mov.u32 ", t, ", %tid.z;");
        ins!(self, "mov.u32 ", x, ", %tid.y;");
        ins!(self, "mov.u32 ", n, ", %ntid.y;");
        ins!(self, "mad.lo.u32 ", t, ", ", t, ", ", n, ", ", x, ";");
        ins!(self, "mov.u32 ", x, ", %tid.x;");
        ins!(self, "mov.u32 ", n, ", %ntid.x;");
        ins!(self, "mad.lo.u32 ", t, ", ", t, ", ", n, ", ", x, ";");
        ins!(self, "mov.u32 ", x, ", %ntid.y;");
        ins!(self, "mul.lo.u32 ", n, ", ", n, ", ", x, ";");
        ins!(self, "mov.u32 ", x, ", %ntid.z;");
        ins!(self, "mul.lo.u32 ", n, ", ", n, ", ", x, ";");
        ins!(self, "and.b32 ", lane, ", ", t, ", 31;");
        ins!(self, "and.b32 ", x, ", ", t, ", 0xffffffe0;");
        ins!(self, "sub.u32 ", live, ", ", n, ", ", x, ";");
        ins!(self, "min.u32 ", live, ", ", live, ", 32;");
        // `shl` clamps the count to 32, giving 0: the mask of a full warp is then 0 - 1.
        ins!(self, "mov.u32 ", x, ", 1;");
        ins!(self, "shl.b32 ", mask, ", ", x, ", ", live, ";");
        ins!(self, "sub.u32 ", mask, ", ", mask, ", 1;");
        (lane, live, mask)
    }

    fn warp(&mut self, op: WarpOp, args: &[Expr], ty: &Ty) -> Reg {
        let vals: Vec<Reg> = args.iter().map(|a| self.expr1(a)).collect();
        let (lane, live, mask) = self.warp_lanes();
        match op {
            WarpOp::VoteAll | WarpOp::VoteAny => {
                let d = self.reg(Class::Pred);
                let m = if op == WarpOp::VoteAll { "all" } else { "any" };
                self.emit_fmt(format_args!("vote.sync.{m}.pred {d}, {}, {mask};", vals[0]));
                d
            }
            WarpOp::Ballot => {
                let d = self.reg(Class::B32);
                self.emit_fmt(format_args!(
                    "vote.sync.ballot.b32 {d}, {}, {mask};",
                    vals[0]
                ));
                self.int_result(d, ty)
            }
            WarpOp::Shuffle | WarpOp::ShuffleDown | WarpOp::ShuffleUp | WarpOp::ShuffleXor => {
                // Every kind as `idx` with the source lane the language defines, the
                // caller's own lane when that source is outside the warp or past the block.
                // In 32 bits, one unsigned compare with `live` tests both ends exactly: no
                // source outside [0, 32) wraps into it (|lane +- k| stays below 2^32).
                let k = vals[1];
                let src = self.reg(Class::B32);
                match op {
                    WarpOp::Shuffle => ins!(self, "and.b32 ", src, ", ", k, ", 31;"),
                    WarpOp::ShuffleDown => {
                        ins!(self, "add.s32 ", src, ", ", lane, ", ", k, ";")
                    }
                    WarpOp::ShuffleUp => ins!(self, "sub.s32 ", src, ", ", lane, ", ", k, ";"),
                    _ => ins!(self, "xor.b32 ", src, ", ", lane, ", ", k, ";"),
                }
                let ok = self.reg(Class::Pred);
                ins!(self, "setp.lt.u32 ", ok, ", ", src, ", ", live, ";");
                self.selp("b32", src, src, lane, ok);
                let s = ty.scalar().unwrap_or(Scalar::I32);
                let shfl = |w: &mut Self, x: Reg| {
                    let d = w.reg(if x.class == Class::F32 {
                        Class::F32
                    } else {
                        Class::B32
                    });
                    w.emit(format!("shfl.sync.idx.b32 {d}, {x}, {src}, 0x1f, {mask};"));
                    d
                };
                match s {
                    Scalar::I32 | Scalar::F32 => shfl(self, vals[0]),
                    Scalar::I64 | Scalar::F64 => {
                        let (lo, hi) = (self.reg(Class::B32), self.reg(Class::B32));
                        self.emit_fmt(format_args!("mov.b64 {{{lo}, {hi}}}, {};", vals[0]));
                        let (l2, h2) = (shfl(self, lo), shfl(self, hi));
                        let d = self.sreg(s);
                        self.emit_fmt(format_args!("mov.b64 {d}, {{{l2}, {h2}}};"));
                        d
                    }
                    Scalar::Bool => {
                        let t = self.reg(Class::B32);
                        self.emit_fmt(format_args!("selp.u32 {t}, 1, 0, {};", vals[0]));
                        let r = shfl(self, t);
                        let p = self.reg(Class::Pred);
                        ins!(self, "setp.ne.u32 ", p, ", ", r, ", 0;");
                        p
                    }
                }
            }
        }
    }
}

/// The type of an l-value.
/// The `.param` type of a register of `class` (predicates pass as 32-bit integers).
/// [`abi::leaves`]'s scalars: the same walk, without building the leaves' names.
fn push_scalars(kernel: &Kernel, ty: &Ty, out: &mut Vec<Scalar>) {
    match ty {
        Ty::Scalar(s) => out.push(*s),
        Ty::Record(id) => {
            for f in &kernel.record(*id).fields {
                push_scalars(kernel, &f.ty, out);
            }
        }
        Ty::Variant(id) => {
            out.push(Scalar::I32);
            for c in &kernel.variant(*id).ctors {
                for f in &c.fields {
                    push_scalars(kernel, f, out);
                }
            }
        }
        Ty::Unit | Ty::Vector(_) | Ty::Array { .. } => {}
    }
}

fn param_type(class: Class) -> &'static str {
    match class {
        Class::Pred | Class::B32 => "b32",
        Class::B64 => "b64",
        Class::F32 => "f32",
        Class::F64 => "f64",
    }
}

/// The `.param` declaration of a result named `name`: one scalar, or 8 bytes per register.
fn ret_param(name: &str, regs: &[Reg]) -> String {
    match regs {
        [one] => format!(".param .{} {name}", param_type(one.class)),
        _ => format!(".param .align 8 .b8 {name}[{}]", 8 * regs.len()),
    }
}

/// The address of result register `k` in the result parameter `name`.
fn param_at(name: &str, regs: &[Reg], k: usize) -> String {
    match (regs.len(), k) {
        (1, _) | (_, 0) => name.to_string(),
        _ => format!("{name}+{}", 8 * k),
    }
}

/// Whether `e` calls a helper (which the writer inlines: emitting it twice doubles code).
fn has_call(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Call { .. } => true,
        ExprKind::Lit(_) | ExprKind::Var(_) => false,
        ExprKind::Binary { lhs, rhs, .. } => has_call(lhs) || has_call(rhs),
        ExprKind::Unary { operand: x, .. }
        | ExprKind::Index { index: x, .. }
        | ExprKind::Field { base: x, .. }
        | ExprKind::Tag(x)
        | ExprKind::Payload { value: x, .. } => has_call(x),
        ExprKind::Select {
            cond,
            then_value,
            else_value,
        } => has_call(cond) || has_call(then_value) || has_call(else_value),
        ExprKind::Record { fields: args, .. }
        | ExprKind::Ctor { fields: args, .. }
        | ExprKind::Intrinsic { args, .. } => args.iter().any(has_call),
    }
}

/// A right-hand operand: a register or an integer immediate.
#[derive(Clone, Copy, Debug)]
enum Operand {
    Reg(Reg),
    Imm(i64),
}

impl Operand {
    /// The register (operands of predicate operations are never immediates).
    fn reg(self) -> Reg {
        match self {
            Operand::Reg(r) => r,
            Operand::Imm(_) => unreachable!("immediate predicate operand"),
        }
    }
}

impl std::fmt::Display for Operand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Operand::Reg(r) => r.fmt(f),
            Operand::Imm(v) => v.fmt(f),
        }
    }
}

/// Whether `e` may be evaluated when the source would not evaluate it: no effects, no
/// memory access (an index guarded by `i < n &&` may be out of bounds), no division (a
/// guarded divisor may be zero), and cheap.
fn speculatable(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) => true,
        ExprKind::Binary { op, lhs, rhs, .. } => {
            !matches!(op, BinOp::Div | BinOp::Rem) && speculatable(lhs) && speculatable(rhs)
        }
        ExprKind::Unary { operand, .. } => speculatable(operand),
        ExprKind::Field { base, .. } => speculatable(base),
        ExprKind::Tag(v) => speculatable(v),
        ExprKind::Intrinsic {
            op: Intrinsic::Geometry(_),
            ..
        } => true,
        _ => false,
    }
}

fn lvalue_ty(kernel: &Kernel, lv: &LValue) -> Ty {
    match lv {
        LValue::Var(id) => kernel.var(*id).ty.clone(),
        LValue::Index { base, .. } => kernel.var(*base).ty.elem().cloned().unwrap_or(Ty::Unit),
        LValue::Field { base, field } => match lvalue_ty(kernel, base) {
            Ty::Record(r) => kernel.record(r).fields[*field as usize].ty.clone(),
            _ => Ty::Unit,
        },
    }
}

/// e^x - 1 = x (1 + x/2 + x^2/6 + ... + x^8/9!): the Taylor coefficients 1/(k+1)!.
const EXPM1_SERIES: [f32; 9] = [
    1.0,
    0.5,
    0.166_666_67,
    0.041_666_668,
    0.008_333_334,
    0.001_388_888_9,
    0.000_198_412_7,
    2.480_158_8e-5,
    2.755_731_9e-6,
];

/// atanh(s) / s = 1 + z/3 + z^2/5 + ... (z = s^2).
const ATANH_SERIES: [f32; 8] = [
    1.0,
    0.333_333_34,
    0.2,
    0.142_857_15,
    0.111_111_11,
    0.090_909_09,
    0.076_923_08,
    0.066_666_67,
];

/// sinh(x) / x = 1 + z/3! + z^2/5! + ... (z = x^2).
const SINH_SERIES: [f32; 5] = [
    1.0,
    0.166_666_67,
    0.008_333_334,
    0.000_198_412_7,
    2.755_731_9e-6,
];

/// [`softmath::Ops`] by writing each operation as its PTX instruction into the body.
struct Emit<'w, 'k>(&'w mut Writer<'k>);

impl Emit<'_, '_> {
    /// The float width of a register (its bit pattern's width for integers).
    fn width(r: Reg) -> Width {
        match r.class {
            Class::F64 | Class::B64 => Width::W64,
            _ => Width::W32,
        }
    }
    fn float_class(w: Width) -> Class {
        match w {
            Width::W32 => Class::F32,
            Width::W64 => Class::F64,
        }
    }
    fn int_class(w: Width) -> Class {
        match w {
            Width::W32 => Class::B32,
            Width::W64 => Class::B64,
        }
    }
    fn n(r: Reg) -> u32 {
        Self::width(r).bits()
    }
}

fn cmp_name(c: Cmp) -> &'static str {
    match c {
        Cmp::Eq => "eq",
        Cmp::Lt => "lt",
        Cmp::Gt => "gt",
        Cmp::Ge => "ge",
    }
}

impl softmath::Ops for Emit<'_, '_> {
    type F = Reg;
    type I = Reg;
    type P = Reg;

    fn f_const(&mut self, w: Width, v: f64) -> Reg {
        match w {
            Width::W32 => self.0.literal(Literal::F32(v as f32)),
            Width::W64 => self.0.literal(Literal::F64(v)),
        }
    }
    fn i_const(&mut self, w: Width, v: u64) -> Reg {
        let d = self.0.reg(Self::int_class(w));
        self.0.emit_fmt(format_args!("mov.b{} {d}, {v};", w.bits()));
        d
    }
    fn f_bin(&mut self, op: FBin, a: Reg, b: Reg) -> Reg {
        let d = self.0.reg(a.class);
        let n = Self::n(a);
        if op == FBin::CopySign {
            // PTX's operand order: the sign's source first.
            self.0
                .emit_fmt(format_args!("copysign.f{n} {d}, {b}, {a};"));
            return d;
        }
        let name = match op {
            FBin::Add => "add.rn",
            FBin::Sub => "sub.rn",
            FBin::Mul => "mul.rn",
            FBin::Div => "div.rn",
            FBin::Min => "min",
            FBin::Max => "max",
            FBin::CopySign => unreachable!("written above"),
        };
        self.0.emit_fmt(format_args!("{name}.f{n} {d}, {a}, {b};"));
        d
    }
    fn fma(&mut self, a: Reg, b: Reg, c: Reg) -> Reg {
        let d = self.0.reg(a.class);
        let n = Self::n(a);
        self.0
            .emit_fmt(format_args!("fma.rn.f{n} {d}, {a}, {b}, {c};"));
        d
    }
    fn f_cmp(&mut self, c: Cmp, a: Reg, b: Reg) -> Reg {
        let d = self.0.reg(Class::Pred);
        let (name, n) = (cmp_name(c), Self::n(a));
        self.0
            .emit_fmt(format_args!("setp.{name}.f{n} {d}, {a}, {b};"));
        d
    }
    fn is_nan(&mut self, a: Reg) -> Reg {
        let d = self.0.reg(Class::Pred);
        let n = Self::n(a);
        self.0
            .emit_fmt(format_args!("testp.notanumber.f{n} {d}, {a};"));
        d
    }
    fn f_sqrt(&mut self, a: Reg) -> Reg {
        let d = self.0.reg(a.class);
        let n = Self::n(a);
        self.0.emit_fmt(format_args!("sqrt.rn.f{n} {d}, {a};"));
        d
    }
    fn f_round(&mut self, a: Reg) -> Reg {
        let d = self.0.reg(a.class);
        let n = Self::n(a);
        self.0.emit_fmt(format_args!("cvt.rni.f{n}.f{n} {d}, {a};"));
        d
    }
    fn f_to_i(&mut self, a: Reg) -> Reg {
        let w = Self::width(a);
        let d = self.0.reg(Self::int_class(w));
        let n = w.bits();
        self.0.emit_fmt(format_args!("cvt.rni.s{n}.f{n} {d}, {a};"));
        d
    }
    fn i_to_f(&mut self, a: Reg) -> Reg {
        let w = Self::width(a);
        let d = self.0.reg(Self::float_class(w));
        let n = w.bits();
        self.0.emit_fmt(format_args!("cvt.rn.f{n}.s{n} {d}, {a};"));
        d
    }
    fn to_bits(&mut self, a: Reg) -> Reg {
        let w = Self::width(a);
        let d = self.0.reg(Self::int_class(w));
        self.0.emit_fmt(format_args!("mov.b{} {d}, {a};", w.bits()));
        d
    }
    fn f_of_bits(&mut self, a: Reg) -> Reg {
        let w = Self::width(a);
        let d = self.0.reg(Self::float_class(w));
        self.0.emit_fmt(format_args!("mov.b{} {d}, {a};", w.bits()));
        d
    }
    fn i_bin(&mut self, op: IBin, a: Reg, b: Reg) -> Reg {
        let d = self.0.reg(a.class);
        let n = Self::n(a);
        let name = match op {
            IBin::Add => "add.u",
            IBin::Sub => "sub.u",
            IBin::Mul => "mul.lo.u",
            IBin::And => "and.b",
            IBin::Or => "or.b",
        };
        self.0.emit_fmt(format_args!("{name}{n} {d}, {a}, {b};"));
        d
    }
    fn shift(&mut self, op: Shift, a: Reg, count: Reg) -> Reg {
        let d = self.0.reg(a.class);
        let n = Self::n(a);
        let name = match op {
            Shift::Shl => "shl.b",
            Shift::Shr => "shr.u",
        };
        self.0
            .emit_fmt(format_args!("{name}{n} {d}, {a}, {count};"));
        d
    }
    fn clz(&mut self, a: Reg) -> Reg {
        let d = self.0.reg(Class::B32);
        let n = Self::n(a);
        self.0.emit_fmt(format_args!("clz.b{n} {d}, {a};"));
        d
    }
    fn resize(&mut self, a: Reg, w: Width) -> Reg {
        let d = self.0.reg(Self::int_class(w));
        match (Self::width(a), w) {
            (Width::W64, Width::W32) => self.0.emit_fmt(format_args!("cvt.u32.u64 {d}, {a};")),
            (Width::W32, Width::W64) => self.0.emit_fmt(format_args!("cvt.s64.s32 {d}, {a};")),
            _ => self.0.mov(d, a),
        }
        d
    }
    fn i_cmp(&mut self, c: Cmp, signed: bool, a: Reg, b: Reg) -> Reg {
        let d = self.0.reg(Class::Pred);
        let (name, n) = (cmp_name(c), Self::n(a));
        let t = if signed { 's' } else { 'u' };
        self.0
            .emit_fmt(format_args!("setp.{name}.{t}{n} {d}, {a}, {b};"));
        d
    }
    fn p_or(&mut self, a: Reg, b: Reg) -> Reg {
        let d = self.0.reg(Class::Pred);
        self.0.emit_fmt(format_args!("or.pred {d}, {a}, {b};"));
        d
    }
    fn p_and(&mut self, a: Reg, b: Reg) -> Reg {
        let d = self.0.reg(Class::Pred);
        self.0.emit_fmt(format_args!("and.pred {d}, {a}, {b};"));
        d
    }
    fn p_not(&mut self, a: Reg) -> Reg {
        let d = self.0.reg(Class::Pred);
        self.0.emit_fmt(format_args!("not.pred {d}, {a};"));
        d
    }
    fn sel_f(&mut self, p: Reg, a: Reg, b: Reg) -> Reg {
        let d = self.0.reg(a.class);
        let n = Self::n(a);
        self.0
            .emit_fmt(format_args!("selp.f{n} {d}, {a}, {b}, {p};"));
        d
    }
    fn sel_i(&mut self, p: Reg, a: Reg, b: Reg) -> Reg {
        let d = self.0.reg(a.class);
        let n = Self::n(a);
        self.0
            .emit_fmt(format_args!("selp.b{n} {d}, {a}, {b}, {p};"));
        d
    }
    fn when(&mut self, p: Reg, init: &[Reg], body: softmath::FloatBlock<'_, Self>) -> Vec<Reg> {
        let state: Vec<Reg> = init
            .iter()
            .map(|&r| {
                let s = self.0.reg(r.class);
                self.0.mov(s, r);
                s
            })
            .collect();
        let skip = self.0.label();
        self.0.emit_fmt(format_args!("@!{p} bra $L{skip};"));
        let next = body(self, &state);
        for (&s, &n) in state.iter().zip(&next) {
            self.0.mov(s, n);
        }
        self.0.place_label(skip);
        state
    }
    fn repeat_while(
        &mut self,
        init: &[Reg],
        cond: softmath::LoopCond<'_, Self>,
        body: softmath::LoopBody<'_, Self>,
    ) -> Vec<Reg> {
        // The state lives in registers of its own, reassigned at the end of each iteration.
        let state: Vec<Reg> = init
            .iter()
            .map(|&r| {
                let s = self.0.reg(r.class);
                self.0.mov(s, r);
                s
            })
            .collect();
        let (top, end) = (self.0.label(), self.0.label());
        self.0.place_label(top);
        let go = cond(self, &state);
        self.0.emit_fmt(format_args!("@!{go} bra $L{end};"));
        let next = body(self, &state);
        for (&s, &n) in state.iter().zip(&next) {
            self.0.mov(s, n);
        }
        self.0.emit_fmt(format_args!("bra $L{top};"));
        self.0.place_label(end);
        state
    }
    fn call(&mut self, routine: Routine, args: &[Reg]) -> Vec<Reg> {
        self.0.soft_call(routine, args)
    }
}
