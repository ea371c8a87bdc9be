//! Float64 functions GLSL lacks (it has `double` sqrt, floor, fma and the like, but none of
//! exp, log, the trigonometric or hyperbolic functions, or pow): the routines of
//! [`crate::back::softmath`], the very algorithms PTX runs, written through [`Glsl`], an
//! implementation of its instruction set that writes one GLSL statement per operation.
//!
//! Each routine a kernel uses becomes one function `sarek_h_<name>_f64` (a routine calling
//! another, as sin/cos/tan call the far reduction, writes the callee first). Values are
//! `double`, `uint64_t` (bit patterns, through `GL_ARB_gpu_shader_int64`, which every GLSL
//! kernel may use) and `bool`; float results are `precise`, so no driver contracts a product
//! and a sum into an fma the routine did not ask for. The operations keep PTX's semantics
//! where GLSL leaves them open: `min`/`max` ignore a NaN and shifts past the width give 0.
//! Conversions of a NaN or out-of-range float to an integer (undefined in GLSL, saturating
//! in PTX) only happen on lanes whose result the routine replaces afterwards. Locals are
//! `v<n>` and parameters `a<n>`: they can only shadow user globals, which these functions
//! never name.

use crate::back::softmath::{Cmp, FBin, IBin, LoopBody, LoopCond, Ops, Routine, Shift, Width};
use crate::intrinsics::MathFn;
use std::fmt::Write as _;

/// The routine functions one module needs, in an order where each follows its callees.
#[derive(Default)]
pub(super) struct Library {
    written: Vec<Routine>,
    text: String,
}

impl Library {
    /// The GLSL function computing float64 `m`, if GLSL needs a routine for it.
    pub fn function_for(&mut self, m: MathFn) -> Option<String> {
        Routine::for_float64(m).map(|r| self.function(r))
    }

    /// The functions' text.
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.written.is_empty()
    }

    /// The name of `routine`'s function, writing it (after what it calls) at the first use.
    fn function(&mut self, routine: Routine) -> String {
        let name = function_name(routine);
        if self.written.contains(&routine) {
            return name;
        }
        let (width, arity, results) = routine.signature();
        let mut g = Glsl {
            library: self,
            names: Vec::new(),
            body: String::new(),
            depth: 1,
        };
        let args: Vec<Value> = (0..arity)
            .map(|k| g.named(Kind::F(width), format!("a{k}")))
            .collect();
        let out = routine.build(&mut g, &args);
        let mut body = std::mem::take(&mut g.body);
        let ty = Kind::F(width).glsl();
        let mut params: Vec<String> = (0..arity).map(|k| format!("{ty} a{k}")).collect();
        let ret = if results == 1 {
            let _ = writeln!(body, "    return {};", g.text(out[0]));
            ty
        } else {
            for (k, &v) in out.iter().enumerate() {
                params.push(format!("out {ty} r{k}"));
                let _ = writeln!(body, "    r{k} = {};", g.text(v));
            }
            "void"
        };
        // Callees were written while the body was built: this function comes after them.
        let _ = write!(
            self.text,
            "{ret} {name}({}) {{\n{body}}}\n",
            params.join(", ")
        );
        self.written.push(routine);
        name
    }
}

/// `sarek_h_<routine>`: the helper namespace of the GLSL writer.
fn function_name(routine: Routine) -> String {
    let symbol = routine.symbol();
    format!(
        "sarek_h_{}",
        symbol.strip_prefix("sarek_").unwrap_or(&symbol)
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    F(Width),
    I(Width),
    Bool,
}

impl Kind {
    fn glsl(self) -> &'static str {
        match self {
            Kind::F(Width::W64) => "double",
            Kind::F(Width::W32) => "float",
            Kind::I(Width::W64) => "uint64_t",
            Kind::I(Width::W32) => "uint",
            Kind::Bool => "bool",
        }
    }
    fn width(self) -> Width {
        match self {
            Kind::F(w) | Kind::I(w) => w,
            Kind::Bool => Width::W32,
        }
    }
}

/// A value of the routine being written: an index into [`Glsl::names`] (a variable or an
/// inline literal) and its kind.
#[derive(Clone, Copy, Debug)]
pub(super) struct Value {
    id: usize,
    kind: Kind,
}

/// [`Ops`] by writing each operation as a GLSL statement into one function body.
pub(super) struct Glsl<'l> {
    library: &'l mut Library,
    /// The text of each value: a local's name or a literal.
    names: Vec<String>,
    body: String,
    /// Block nesting, for indentation.
    depth: usize,
}

impl Glsl<'_> {
    fn text(&self, v: Value) -> &str {
        &self.names[v.id]
    }

    fn named(&mut self, kind: Kind, text: String) -> Value {
        self.names.push(text);
        Value {
            id: self.names.len() - 1,
            kind,
        }
    }

    fn indent(&mut self) {
        for _ in 0..self.depth {
            self.body.push_str("    ");
        }
    }

    /// A new local `v<n>` of `kind` holding `expr`.
    fn def(&mut self, kind: Kind, expr: &str) -> Value {
        let precise = if matches!(kind, Kind::F(_)) {
            "precise "
        } else {
            ""
        };
        let id = self.declare(kind.glsl(), precise, expr);
        Value { id, kind }
    }

    /// Declares a new local `v<n>` of GLSL type `ty` holding `expr` (none: uninitialised),
    /// returning its index in [`Self::names`].
    fn declare(&mut self, ty: &str, qualifier: &str, expr: &str) -> usize {
        let id = self.names.len();
        let name = format!("v{id}");
        self.names.push(name.clone());
        self.indent();
        let init = if expr.is_empty() {
            String::new()
        } else {
            format!(" = {expr}")
        };
        let _ = writeln!(self.body, "{qualifier}{ty} {name}{init};");
        id
    }

    /// Locals holding `init`, assigned by a block: the state of `when` and `repeat_while`.
    fn state(&mut self, init: &[Value]) -> Vec<Value> {
        init.iter()
            .map(|&v| {
                let e = self.text(v).to_string();
                self.def(v.kind, &e)
            })
            .collect()
    }

    fn assign(&mut self, state: &[Value], next: &[Value]) {
        for (&s, &n) in state.iter().zip(next) {
            let stmt = format!("{} = {};", self.text(s), self.text(n));
            self.line(&stmt);
        }
    }

    fn line(&mut self, text: &str) {
        self.indent();
        self.body.push_str(text);
        self.body.push('\n');
    }

    fn bin(&mut self, kind: Kind, a: Value, op: &str, b: Value) -> Value {
        let e = format!("{} {op} {}", self.text(a), self.text(b));
        self.def(kind, &e)
    }

    fn un(&mut self, kind: Kind, f: &str, a: Value) -> Value {
        let e = format!("{f}({})", self.text(a));
        self.def(kind, &e)
    }
}

fn cmp_symbol(c: Cmp) -> &'static str {
    match c {
        Cmp::Eq => "==",
        Cmp::Lt => "<",
        Cmp::Gt => ">",
        Cmp::Ge => ">=",
    }
}

impl Ops for Glsl<'_> {
    type F = Value;
    type I = Value;
    type P = Value;

    fn f_const(&mut self, w: Width, v: f64) -> Value {
        // Integers as decimals (exact in any parser); anything else as its bit pattern, which
        // no literal parsing can round differently.
        let text = match w {
            _ if v.is_finite() && v == v.trunc() && v.abs() < 1e15 => {
                let suffix = if w == Width::W64 { "lf" } else { "" };
                format!("{v:?}{suffix}")
            }
            Width::W64 => format!("uint64BitsToDouble(0x{:016x}ul)", v.to_bits()),
            Width::W32 => format!("uintBitsToFloat(0x{:08x}u)", (v as f32).to_bits()),
        };
        self.named(Kind::F(w), text)
    }
    fn i_const(&mut self, w: Width, v: u64) -> Value {
        // Masks and patterns read best in hexadecimal, counts in decimal.
        let text = match w {
            Width::W64 if v > 0xffff => format!("0x{v:x}ul"),
            Width::W64 => format!("{v}ul"),
            Width::W32 if v > 0xffff => format!("0x{:x}u", v as u32),
            Width::W32 => format!("{}u", v as u32),
        };
        self.named(Kind::I(w), text)
    }
    fn f_bin(&mut self, op: FBin, a: Value, b: Value) -> Value {
        let (ta, tb) = (self.text(a).to_string(), self.text(b).to_string());
        let e = match op {
            FBin::Add => format!("{ta} + {tb}"),
            FBin::Sub => format!("{ta} - {tb}"),
            FBin::Mul => format!("{ta} * {tb}"),
            FBin::Div => format!("{ta} / {tb}"),
            // GLSL leaves min/max of a NaN open; PTX ignores it.
            FBin::Min => format!("isnan({ta}) ? {tb} : (isnan({tb}) ? {ta} : min({ta}, {tb}))"),
            FBin::Max => format!("isnan({ta}) ? {tb} : (isnan({tb}) ? {ta} : max({ta}, {tb}))"),
            FBin::CopySign => match a.kind.width() {
                Width::W64 => format!(
                    "uint64BitsToDouble((doubleBitsToUint64({ta}) & 0x7fffffffffffffffu\
                     l) | (doubleBitsToUint64({tb}) & 0x8000000000000000ul))"
                ),
                Width::W32 => format!(
                    "uintBitsToFloat((floatBitsToUint({ta}) & 0x7fffffffu) | \
                     (floatBitsToUint({tb}) & 0x80000000u))"
                ),
            },
        };
        self.def(a.kind, &e)
    }
    fn fma(&mut self, a: Value, b: Value, c: Value) -> Value {
        // Vulkan lets `fma` round the product first (lavapipe does: F37), and the routines'
        // exact products and reductions need it fused: a function of unfused operations.
        if a.kind == Kind::F(Width::W64) {
            return self.call(Routine::FmaByParts, &[a, b, c])[0];
        }
        let e = format!("fma({}, {}, {})", self.text(a), self.text(b), self.text(c));
        self.def(a.kind, &e)
    }
    fn f_cmp(&mut self, c: Cmp, a: Value, b: Value) -> Value {
        self.bin(Kind::Bool, a, cmp_symbol(c), b)
    }
    fn is_nan(&mut self, a: Value) -> Value {
        self.un(Kind::Bool, "isnan", a)
    }
    fn f_sqrt(&mut self, a: Value) -> Value {
        self.un(a.kind, "sqrt", a)
    }
    fn f_round(&mut self, a: Value) -> Value {
        self.un(a.kind, "roundEven", a)
    }
    fn f_to_i(&mut self, a: Value) -> Value {
        let w = a.kind.width();
        let e = match w {
            Width::W64 => format!("uint64_t(int64_t(roundEven({})))", self.text(a)),
            Width::W32 => format!("uint(int(roundEven({})))", self.text(a)),
        };
        self.def(Kind::I(w), &e)
    }
    fn i_to_f(&mut self, a: Value) -> Value {
        let w = a.kind.width();
        let e = match w {
            Width::W64 => format!("double(int64_t({}))", self.text(a)),
            Width::W32 => format!("float(int({}))", self.text(a)),
        };
        self.def(Kind::F(w), &e)
    }
    fn to_bits(&mut self, a: Value) -> Value {
        let w = a.kind.width();
        let f = match w {
            Width::W64 => "doubleBitsToUint64",
            Width::W32 => "floatBitsToUint",
        };
        self.un(Kind::I(w), f, a)
    }
    fn f_of_bits(&mut self, a: Value) -> Value {
        let w = a.kind.width();
        let f = match w {
            Width::W64 => "uint64BitsToDouble",
            Width::W32 => "uintBitsToFloat",
        };
        self.un(Kind::F(w), f, a)
    }
    fn i_bin(&mut self, op: IBin, a: Value, b: Value) -> Value {
        let symbol = match op {
            IBin::Add => "+",
            IBin::Sub => "-",
            IBin::Mul => "*",
            IBin::And => "&",
            IBin::Or => "|",
        };
        self.bin(a.kind, a, symbol, b)
    }
    fn shift(&mut self, op: Shift, a: Value, n: Value) -> Value {
        let w = a.kind.width();
        let (ta, tn) = (self.text(a), self.text(n));
        let symbol = match op {
            Shift::Shl => "<<",
            Shift::Shr => ">>",
        };
        // GLSL leaves a count past the width open; PTX gives 0 (both shifts are logical).
        let (bits, zero) = match w {
            Width::W64 => (64, "0ul"),
            Width::W32 => (32, "0u"),
        };
        let e = format!("{tn} >= {bits}u ? {zero} : {ta} {symbol} {tn}");
        self.def(a.kind, &e)
    }
    fn clz(&mut self, a: Value) -> Value {
        let ta = self.text(a).to_string();
        let e = match a.kind.width() {
            Width::W32 => format!("uint(31 - findMSB({ta}))"),
            // findMSB has no 64-bit overload: by halves (findMSB(0) = -1).
            Width::W64 => {
                let halves = self.declare("uvec2", "", &format!("unpackUint2x32({ta})"));
                let h = &self.names[halves];
                format!("{h}.y != 0u ? uint(31 - findMSB({h}.y)) : uint(63 - findMSB({h}.x))")
            }
        };
        self.def(Kind::I(Width::W32), &e)
    }
    fn resize(&mut self, a: Value, w: Width) -> Value {
        let ta = self.text(a).to_string();
        match (a.kind.width(), w) {
            (Width::W64, Width::W32) => self.def(Kind::I(w), &format!("unpackUint2x32({ta}).x")),
            // Sign extension through the halves: Mesa miscompiles some `int64_t(int)`.
            (Width::W32, Width::W64) => self.def(
                Kind::I(w),
                &format!("packUint2x32(uvec2({ta}, uint(int({ta}) >> 31)))"),
            ),
            _ => a,
        }
    }
    fn i_cmp(&mut self, c: Cmp, signed: bool, a: Value, b: Value) -> Value {
        let (ta, tb) = (self.text(a), self.text(b));
        let e = match (signed, a.kind.width()) {
            (false, _) => format!("{ta} {} {tb}", cmp_symbol(c)),
            (true, Width::W64) => format!("int64_t({ta}) {} int64_t({tb})", cmp_symbol(c)),
            (true, Width::W32) => format!("int({ta}) {} int({tb})", cmp_symbol(c)),
        };
        self.def(Kind::Bool, &e)
    }
    fn p_or(&mut self, a: Value, b: Value) -> Value {
        self.bin(Kind::Bool, a, "||", b)
    }
    fn p_and(&mut self, a: Value, b: Value) -> Value {
        self.bin(Kind::Bool, a, "&&", b)
    }
    fn p_not(&mut self, a: Value) -> Value {
        self.un(Kind::Bool, "!", a)
    }
    fn sel_f(&mut self, p: Value, a: Value, b: Value) -> Value {
        let e = format!("{} ? {} : {}", self.text(p), self.text(a), self.text(b));
        self.def(a.kind, &e)
    }
    fn sel_i(&mut self, p: Value, a: Value, b: Value) -> Value {
        self.sel_f(p, a, b)
    }
    fn when(
        &mut self,
        p: Value,
        init: &[Value],
        body: crate::back::softmath::FloatBlock<'_, Self>,
    ) -> Vec<Value> {
        let state = self.state(init);
        let head = format!("if ({}) {{", self.text(p));
        self.line(&head);
        self.depth += 1;
        let next = body(self, &state);
        self.assign(&state, &next);
        self.depth -= 1;
        self.line("}");
        state
    }
    fn repeat_while(
        &mut self,
        init: &[Value],
        cond: LoopCond<'_, Self>,
        body: LoopBody<'_, Self>,
    ) -> Vec<Value> {
        let state = self.state(init);
        self.line("while (true) {");
        self.depth += 1;
        let go = cond(self, &state);
        let exit = format!("if (!{}) break;", self.text(go));
        self.line(&exit);
        let next = body(self, &state);
        self.assign(&state, &next);
        self.depth -= 1;
        self.line("}");
        state
    }
    fn call(&mut self, routine: Routine, args: &[Value]) -> Vec<Value> {
        let name = self.library.function(routine);
        let (width, _, results) = routine.signature();
        let args: Vec<String> = args.iter().map(|&a| self.text(a).to_string()).collect();
        if results == 1 {
            let e = format!("{name}({})", args.join(", "));
            return vec![self.def(Kind::F(width), &e)];
        }
        let ty = Kind::F(width).glsl();
        let outs: Vec<Value> = (0..results)
            .map(|_| Value {
                id: self.declare(ty, "", ""),
                kind: Kind::F(width),
            })
            .collect();
        let all: Vec<String> = args
            .into_iter()
            .chain(outs.iter().map(|&v| self.text(v).to_string()))
            .collect();
        let stmt = format!("{name}({});", all.join(", "));
        self.line(&stmt);
        outs
    }
}
