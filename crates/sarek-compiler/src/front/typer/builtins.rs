//! The intrinsic name table: every spelling of LANGUAGE.md (plain names, OCaml library
//! aliases, module-qualified names) mapped to a [`Builtin`], i.e. an [`Intrinsic`] plus the
//! typing rule the checker applies to it.

use crate::front::ast::{BinaryOp, UnaryOp};
use crate::intrinsics::{AtomicOp, Axis, Geometry, Intrinsic, MathFn, WarpOp};
use crate::types::{MemSpace, Scalar};

/// An operator spelled as a module function (`Int32.add`, `Int64.shift_left`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum ArithFn {
    Binary(BinaryOp),
    Unary(UnaryOp),
    /// `succ` / `pred`: plus or minus one.
    Step(BinaryOp),
}

/// A resolved built-in name with what its typing rule needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Builtin {
    /// A value (`thread_idx_x`, `warp_size`): int32, not applied.
    Geometry(Geometry),
    /// `block_barrier ()` and the fences: unit -> unit.
    Sync(Intrinsic),
    Warp(WarpOp),
    /// `elem` fixes the element type (`atomic_add_int32`); `space` the memory (`..._global_...`).
    Atomic {
        op: AtomicOp,
        elem: Option<Scalar>,
        space: Option<MemSpace>,
    },
    /// Math function; `at` fixes the float type (`Float32.sqrt`).
    Math {
        f: MathFn,
        at: Option<Scalar>,
    },
    /// `abs`, `min`, `max` over numeric types.
    Numeric {
        op: Intrinsic,
        arity: usize,
        at: Option<Scalar>,
    },
    /// `clz`, `popcount` on int32/int64; `at` fixes the type (`clz_int32`).
    Bits {
        op: Intrinsic,
        at: Option<Scalar>,
    },
    /// Conversion to `to`; `from` fixes the operand type for library aliases.
    Convert {
        to: Scalar,
        from: Option<Scalar>,
    },
    Length,
    Ignore,
    /// `create_array n Local`: only valid as the value of a `let`.
    CreateArray,
    /// An operator of the OCaml `Int32`/`Int64`/`Float` modules, typed as the operator
    /// applied at type `at`.
    Arith {
        f: ArithFn,
        at: Scalar,
    },
    /// `fst` (0) / `snd` (1) of a pair.
    Proj(u8),
    /// `incr r` / `decr r` on a mutable int32 local: `r := r + 1` / `r := r - 1`.
    Step(BinaryOp),
    /// `spoc_powint b e`: int32 power, wrapping (`int_power`).
    PowInt,
    /// `Math.pow`: the float `pow` on float32/float64, `spoc_powint` on int32 (upstream's
    /// `Math.pow` is the int32 one).
    Pow,
    /// `warp_active_mask ()`: the lanes of the warp, `warp_ballot true`.
    ActiveMask,
    /// A name of upstream's library that Sarek refuses on purpose, with why and what to
    /// write instead.
    Refused {
        why: &'static str,
        note: &'static str,
        help: &'static str,
    },
}

impl Builtin {
    /// Number of arguments (0 for values).
    pub fn arity(self) -> usize {
        match self {
            Builtin::Geometry(_) => 0,
            Builtin::Sync(_)
            | Builtin::Length
            | Builtin::Ignore
            | Builtin::Bits { .. }
            | Builtin::Proj(_)
            | Builtin::Step(_)
            | Builtin::ActiveMask => 1,
            Builtin::PowInt | Builtin::Pow => 2,
            // Refused before its arguments are counted.
            Builtin::Refused { .. } => 0,
            Builtin::Convert { .. } => 1,
            Builtin::Warp(op) => match op {
                WarpOp::VoteAll | WarpOp::VoteAny | WarpOp::Ballot => 1,
                _ => 2,
            },
            Builtin::Atomic { op, .. } => 2 + op.value_operands(),
            Builtin::Math { f, .. } => f.arity(),
            Builtin::Numeric { arity, .. } => arity,
            Builtin::CreateArray => 2,
            Builtin::Arith { f, .. } => match f {
                ArithFn::Binary(_) => 2,
                ArithFn::Unary(_) | ArithFn::Step(_) => 1,
            },
        }
    }
}

const AXES: [(Axis, &str); 3] = [(Axis::X, "x"), (Axis::Y, "y"), (Axis::Z, "z")];

const MATH: [(&str, MathFn); 31] = [
    ("sqrt", MathFn::Sqrt),
    ("rsqrt", MathFn::Rsqrt),
    ("exp", MathFn::Exp),
    ("exp2", MathFn::Exp2),
    ("expm1", MathFn::Expm1),
    ("log", MathFn::Log),
    ("log2", MathFn::Log2),
    ("log10", MathFn::Log10),
    ("log1p", MathFn::Log1p),
    ("sin", MathFn::Sin),
    ("cos", MathFn::Cos),
    ("tan", MathFn::Tan),
    ("asin", MathFn::Asin),
    ("acos", MathFn::Acos),
    ("atan", MathFn::Atan),
    ("sinh", MathFn::Sinh),
    ("cosh", MathFn::Cosh),
    ("tanh", MathFn::Tanh),
    ("floor", MathFn::Floor),
    ("ceil", MathFn::Ceil),
    ("round", MathFn::Round),
    ("trunc", MathFn::Trunc),
    ("abs_float", MathFn::Fabs),
    ("fabs", MathFn::Fabs),
    ("pow", MathFn::Pow),
    ("atan2", MathFn::Atan2),
    ("hypot", MathFn::Hypot),
    ("copysign", MathFn::Copysign),
    ("fmin", MathFn::Fmin),
    ("fmax", MathFn::Fmax),
    ("fma", MathFn::Fma),
];

const ATOMICS: [(&str, AtomicOp); 11] = [
    ("add", AtomicOp::Add),
    ("sub", AtomicOp::Sub),
    ("min", AtomicOp::Min),
    ("max", AtomicOp::Max),
    ("and", AtomicOp::And),
    ("or", AtomicOp::Or),
    ("xor", AtomicOp::Xor),
    ("exch", AtomicOp::Exch),
    ("cas", AtomicOp::Cas),
    ("inc", AtomicOp::Inc),
    ("dec", AtomicOp::Dec),
];

/// Modules whose qualified names resolve to intrinsics (`Std.thread_idx_x`, `Float32.sqrt`).
/// `Sarek_stdlib`, `Sarek_stdlib_meta` and `Sarek_float64` are upstream's library packages:
/// opening one only makes `Float32.sqrt`-style names reachable, which they always are.
pub(crate) const MODULES: [&str; 14] = [
    "Std",
    "Gpu",
    "Math",
    "Float32",
    "Float64",
    "Int32",
    "Int64",
    "Sarek",
    "Float",
    "Array",
    "Vector",
    "Sarek_stdlib",
    "Sarek_stdlib_meta",
    "Sarek_float64",
];

fn scalar_of_suffix(s: &str) -> Option<Scalar> {
    match s {
        "int32" => Some(Scalar::I32),
        "int64" => Some(Scalar::I64),
        "float32" => Some(Scalar::F32),
        "float64" => Some(Scalar::F64),
        _ => None,
    }
}

/// Unqualified names (and names reached through `Std`/`Gpu`/`Sarek`/`Math`).
fn lookup_plain(name: &str) -> Option<Builtin> {
    for (axis, l) in AXES {
        let g = match name.strip_suffix(l).and_then(|p| p.strip_suffix('_')) {
            Some("thread_idx") => Geometry::ThreadIdx(axis),
            Some("block_idx") => Geometry::BlockIdx(axis),
            Some("block_dim") => Geometry::BlockDim(axis),
            Some("grid_dim") => Geometry::GridDim(axis),
            Some("global_idx") => Geometry::GlobalIdx(axis),
            _ => continue,
        };
        return Some(Builtin::Geometry(g));
    }
    if let Some((_, f)) = MATH.iter().find(|(n, _)| *n == name) {
        return Some(Builtin::Math { f: *f, at: None });
    }
    if let Some(rest) = name.strip_prefix("atomic_") {
        return lookup_atomic(rest);
    }
    if let Some(b) = lookup_typed_alias(name) {
        return Some(b);
    }
    Some(match name {
        "global_thread_id" => Builtin::Geometry(Geometry::GlobalIdx(Axis::X)),
        "warp_size" => Builtin::Geometry(Geometry::WarpSize),
        "block_barrier" => Builtin::Sync(Intrinsic::BlockBarrier),
        "memory_fence_block" => Builtin::Sync(Intrinsic::FenceBlock),
        "memory_fence_device" => Builtin::Sync(Intrinsic::FenceDevice),
        "warp_shuffle" => Builtin::Warp(WarpOp::Shuffle),
        "warp_shuffle_down" => Builtin::Warp(WarpOp::ShuffleDown),
        "warp_shuffle_up" => Builtin::Warp(WarpOp::ShuffleUp),
        "warp_shuffle_xor" => Builtin::Warp(WarpOp::ShuffleXor),
        "warp_vote_all" => Builtin::Warp(WarpOp::VoteAll),
        "warp_vote_any" => Builtin::Warp(WarpOp::VoteAny),
        "warp_ballot" => Builtin::Warp(WarpOp::Ballot),
        "abs" => Builtin::Numeric {
            op: Intrinsic::Abs,
            arity: 1,
            at: None,
        },
        "min" => Builtin::Numeric {
            op: Intrinsic::Min,
            arity: 2,
            at: None,
        },
        "max" => Builtin::Numeric {
            op: Intrinsic::Max,
            arity: 2,
            at: None,
        },
        "clz" => Builtin::Bits {
            op: Intrinsic::Clz,
            at: None,
        },
        "popcount" => Builtin::Bits {
            op: Intrinsic::Popcount,
            at: None,
        },
        "float32" => Builtin::Convert {
            to: Scalar::F32,
            from: None,
        },
        "float64" => Builtin::Convert {
            to: Scalar::F64,
            from: None,
        },
        "int32" => Builtin::Convert {
            to: Scalar::I32,
            from: None,
        },
        "int64" => Builtin::Convert {
            to: Scalar::I64,
            from: None,
        },
        // OCaml library aliases: `float` is int -> float, `int_of_float` float -> int.
        "float" | "float_of_int" => Builtin::Convert {
            to: Scalar::F32,
            from: Some(Scalar::I32),
        },
        "int_of_float" | "truncate" => Builtin::Convert {
            to: Scalar::I32,
            from: Some(Scalar::F32),
        },
        "float64_of_int" => Builtin::Convert {
            to: Scalar::F64,
            from: Some(Scalar::I32),
        },
        "int_of_float64" => Builtin::Convert {
            to: Scalar::I32,
            from: Some(Scalar::F64),
        },
        "spoc_powint" => Builtin::PowInt,
        "warp_active_mask" => Builtin::ActiveMask,
        // A guard `if c then return_unit ();` in the kernel's statement sequence is rewritten
        // before typing (`early_return`); any other place reaches this row.
        "return_unit" => Builtin::Refused {
            why: "`return_unit ()` (an early return) is accepted only as a guard of the kernel",
            note: "a guard is `if c then return_unit ();` (or `if c then (e; return_unit ())`) \
                   among the kernel's own statements, outside loops, branches and helpers: \
                   the rest of the kernel then runs under `not c`; anywhere else the return \
                   would have to leave more than the statements after it",
            help: "move the test to the kernel's statement sequence, or put the rest of the \
                   kernel under the opposite condition: `if not c then begin ... end`",
        },
        "float16_of_float32" | "float32_of_float16" => Builtin::Refused {
            why: "float16 is not a Sarek type",
            note: "the scalar types are int32, int64, float32, float64 and bool",
            help: "keep the values in float32",
        },
        "length" => Builtin::Length,
        "ignore" => Builtin::Ignore,
        "incr" => Builtin::Step(BinaryOp::Add),
        "decr" => Builtin::Step(BinaryOp::Sub),
        "fst" => Builtin::Proj(0),
        "snd" => Builtin::Proj(1),
        "create_array" => Builtin::CreateArray,
        _ => return None,
    })
}

/// Upstream's core primitives with the type in the name: `sin_f64` (every math function),
/// `abs_int32`, `min_int32`, `max_int32`, `clz_int32`, `popcount_int32`.
fn lookup_typed_alias(name: &str) -> Option<Builtin> {
    if let Some(base) = name.strip_suffix("_f64") {
        let (_, f) = MATH.iter().find(|(n, _)| *n == base)?;
        return Some(Builtin::Math {
            f: *f,
            at: Some(Scalar::F64),
        });
    }
    let at = Some(Scalar::I32);
    Some(match name.strip_suffix("_int32")? {
        "abs" => Builtin::Numeric {
            op: Intrinsic::Abs,
            arity: 1,
            at,
        },
        "min" => Builtin::Numeric {
            op: Intrinsic::Min,
            arity: 2,
            at,
        },
        "max" => Builtin::Numeric {
            op: Intrinsic::Max,
            arity: 2,
            at,
        },
        "clz" => Builtin::Bits {
            op: Intrinsic::Clz,
            at,
        },
        "popcount" => Builtin::Bits {
            op: Intrinsic::Popcount,
            at,
        },
        _ => return None,
    })
}

/// `atomic_<op>[_global|_shared][_int32|_int64|_float32]`.
fn lookup_atomic(rest: &str) -> Option<Builtin> {
    let (op_name, mut tail) = ATOMICS
        .iter()
        .filter_map(|(n, op)| rest.strip_prefix(n).map(|t| ((n, *op), t)))
        .max_by_key(|((n, _), _)| n.len())?;
    let mut space = None;
    for (infix, s) in [("_global", MemSpace::Global), ("_shared", MemSpace::Shared)] {
        if let Some(t) = tail.strip_prefix(infix) {
            space = Some(s);
            tail = t;
        }
    }
    let elem = match tail {
        "" => None,
        t => Some(scalar_of_suffix(t.strip_prefix('_')?)?),
    };
    Some(Builtin::Atomic {
        op: op_name.1,
        elem,
        space,
    })
}

/// The OCaml library's operator functions (`Int32.add`, `Int64.logand`, `Float.mul`), and
/// upstream Sarek's spellings of them: the type as a suffix (`Int32.add_int32`,
/// `Float32.mul_float32`, `Int64.mod_int64`), `Float32.minus`, and `fmod` (C `fmod`, which
/// is what `mod` means on floats).
fn arith_in_module(at: Scalar, name: &str) -> Option<ArithFn> {
    use BinaryOp as B;
    let int_only = |f| at.is_int().then_some(f);
    let name = name
        .strip_suffix(at.name())
        .and_then(|n| n.strip_suffix('_'))
        .filter(|n| matches!(*n, "add" | "sub" | "mul" | "div" | "mod"))
        .unwrap_or(name);
    Some(match name {
        "add" => ArithFn::Binary(B::Add),
        "sub" | "minus" => ArithFn::Binary(B::Sub),
        "mod" => ArithFn::Binary(B::Mod),
        "fmod" if at.is_float() => ArithFn::Binary(B::Mod),
        "mul" => ArithFn::Binary(B::Mul),
        "div" => ArithFn::Binary(B::Div),
        "rem" => ArithFn::Binary(B::Mod),
        "neg" => ArithFn::Unary(UnaryOp::Neg),
        "succ" => ArithFn::Step(B::Add),
        "pred" => ArithFn::Step(B::Sub),
        "logand" => int_only(ArithFn::Binary(B::Land))?,
        "logor" => int_only(ArithFn::Binary(B::Lor))?,
        "logxor" => int_only(ArithFn::Binary(B::Lxor))?,
        "lognot" => int_only(ArithFn::Unary(UnaryOp::Lnot))?,
        "shift_left" => int_only(ArithFn::Binary(B::Lsl))?,
        "shift_right" => int_only(ArithFn::Binary(B::Asr))?,
        "shift_right_logical" => int_only(ArithFn::Binary(B::Lsr))?,
        _ => return None,
    })
}

/// Names under a numeric module (`Float32.sqrt`, `Float64.of_float32`, `Int32.of_float`).
fn lookup_in_scalar_module(at: Scalar, name: &str) -> Option<Builtin> {
    if let Some(f) = arith_in_module(at, name) {
        return Some(Builtin::Arith { f, at });
    }
    if at.is_float()
        && let Some((_, f)) = MATH.iter().find(|(n, _)| *n == name)
    {
        return Some(Builtin::Math {
            f: *f,
            at: Some(at),
        });
    }
    let conv = |from| Some(Builtin::Convert { to: at, from });
    match name {
        "abs" => Some(Builtin::Numeric {
            op: Intrinsic::Abs,
            arity: 1,
            at: Some(at),
        }),
        "min" => Some(Builtin::Numeric {
            op: Intrinsic::Min,
            arity: 2,
            at: Some(at),
        }),
        "max" => Some(Builtin::Numeric {
            op: Intrinsic::Max,
            arity: 2,
            at: Some(at),
        }),
        "of_int" | "of_int32" => conv(Some(Scalar::I32)),
        "of_int64" => conv(Some(Scalar::I64)),
        "of_float" | "of_float32" => conv(Some(Scalar::F32)),
        "of_float64" => conv(Some(Scalar::F64)),
        "to_int" | "to_int32" => Some(Builtin::Convert {
            to: Scalar::I32,
            from: Some(at),
        }),
        "to_int64" => Some(Builtin::Convert {
            to: Scalar::I64,
            from: Some(at),
        }),
        "to_float" | "to_float32" => Some(Builtin::Convert {
            to: Scalar::F32,
            from: Some(at),
        }),
        "to_float64" => Some(Builtin::Convert {
            to: Scalar::F64,
            from: Some(at),
        }),
        "clz" if at.is_int() => Some(Builtin::Bits {
            op: Intrinsic::Clz,
            at: Some(at),
        }),
        "popcount" if at.is_int() => Some(Builtin::Bits {
            op: Intrinsic::Popcount,
            at: Some(at),
        }),
        _ => None,
    }
}

/// Resolve `name` qualified by `module` (None: unqualified).
pub(super) fn lookup(module: Option<&str>, name: &str) -> Option<Builtin> {
    match module {
        // Upstream's `Math` holds int32 `xor`, `logical_and` and `pow`.
        Some("Math") => match name {
            "xor" => Some(Builtin::Arith {
                f: ArithFn::Binary(BinaryOp::Lxor),
                at: Scalar::I32,
            }),
            "logical_and" => Some(Builtin::Arith {
                f: ArithFn::Binary(BinaryOp::Land),
                at: Scalar::I32,
            }),
            "pow" => Some(Builtin::Pow),
            _ => lookup_plain(name),
        },
        None | Some("Std" | "Gpu" | "Sarek") => lookup_plain(name),
        // OCaml's `Array.length` on vectors and arrays.
        Some("Array" | "Vector") => (name == "length").then_some(Builtin::Length),
        Some(m) => lookup_in_scalar_module(scalar_of_module(m)?, name),
    }
}

/// Whether `module.name` and the unqualified `name` are one intrinsic (the module may fix
/// its type: `Float.fma` is `fma` at float32).
pub(super) fn restates(module: &str, name: &str) -> bool {
    let (Some(qualified), Some(plain)) = (lookup(Some(module), name), lookup(None, name)) else {
        return false;
    };
    match (qualified, plain) {
        (Builtin::Math { f, .. }, Builtin::Math { f: g, .. }) => f == g,
        (Builtin::Numeric { op, .. }, Builtin::Numeric { op: o, .. })
        | (Builtin::Bits { op, .. }, Builtin::Bits { op: o, .. }) => op == o,
        (Builtin::Convert { to, .. }, Builtin::Convert { to: t, .. }) => to == t,
        (Builtin::Atomic { op, .. }, Builtin::Atomic { op: o, .. }) => op == o,
        (q, p) => q == p,
    }
}

fn scalar_of_module(m: &str) -> Option<Scalar> {
    match m {
        // `float` is float32 in Sarek, so OCaml's `Float` module is `Float32`.
        "Float32" | "Float" => Some(Scalar::F32),
        "Float64" => Some(Scalar::F64),
        "Int32" => Some(Scalar::I32),
        "Int64" => Some(Scalar::I64),
        _ => None,
    }
}

/// Every unqualified spelling, for "did you mean" suggestions.
pub(super) fn all_names() -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (_, l) in AXES {
        for base in [
            "thread_idx",
            "block_idx",
            "block_dim",
            "grid_dim",
            "global_idx",
        ] {
            names.push(format!("{base}_{l}"));
        }
    }
    names.extend(MATH.iter().map(|(n, _)| n.to_string()));
    for (n, _) in ATOMICS {
        names.push(format!("atomic_{n}"));
    }
    names.extend(
        [
            "global_thread_id",
            "warp_size",
            "block_barrier",
            "memory_fence_block",
            "memory_fence_device",
            "warp_shuffle",
            "warp_shuffle_down",
            "warp_shuffle_up",
            "warp_shuffle_xor",
            "warp_vote_all",
            "warp_vote_any",
            "warp_ballot",
            "abs",
            "min",
            "max",
            "clz",
            "popcount",
            "float32",
            "float64",
            "int32",
            "int64",
            "float",
            "float_of_int",
            "int_of_float",
            "truncate",
            "float64_of_int",
            "int_of_float64",
            "spoc_powint",
            "warp_active_mask",
            "length",
            "ignore",
            "fst",
            "snd",
            "incr",
            "decr",
            "create_array",
        ]
        .map(String::from),
    );
    names
}

/// Spellings valid under a module, for suggestions after `Float32.sqrtt`.
pub(super) fn names_in_module(module: &str) -> Vec<String> {
    if scalar_of_module(module).is_none() {
        return all_names();
    }
    let mut names: Vec<String> = [
        "abs",
        "min",
        "max",
        "of_int",
        "of_int32",
        "of_int64",
        "of_float",
        "of_float32",
        "of_float64",
        "to_int",
        "to_int32",
        "to_int64",
        "to_float",
        "to_float32",
        "to_float64",
        "clz",
        "popcount",
        "add",
        "sub",
        "mul",
        "div",
        "rem",
        "neg",
        "succ",
        "pred",
    ]
    .map(String::from)
    .to_vec();
    if scalar_of_module(module).is_some_and(Scalar::is_float) {
        names.extend(["fmod", "minus"].map(String::from));
    }
    if scalar_of_module(module).is_some_and(Scalar::is_int) {
        names.extend(
            [
                "logand",
                "logor",
                "logxor",
                "lognot",
                "shift_left",
                "shift_right",
                "shift_right_logical",
            ]
            .map(String::from),
        );
    }
    names.extend(MATH.iter().map(|(n, _)| n.to_string()));
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_resolve() {
        assert_eq!(
            lookup(None, "atomic_add_global_int32"),
            Some(Builtin::Atomic {
                op: AtomicOp::Add,
                elem: Some(Scalar::I32),
                space: Some(MemSpace::Global)
            })
        );
        assert_eq!(
            lookup(None, "atomic_inc_global_int32"),
            Some(Builtin::Atomic {
                op: AtomicOp::Inc,
                elem: Some(Scalar::I32),
                space: Some(MemSpace::Global)
            })
        );
        assert_eq!(
            lookup(None, "atomic_max"),
            Some(Builtin::Atomic {
                op: AtomicOp::Max,
                elem: None,
                space: None
            })
        );
        assert_eq!(lookup(None, "atomic_frob"), None);
        assert_eq!(
            lookup(Some("Float32"), "sqrt"),
            Some(Builtin::Math {
                f: MathFn::Sqrt,
                at: Some(Scalar::F32)
            })
        );
        assert_eq!(
            lookup(Some("Float64"), "of_float32"),
            Some(Builtin::Convert {
                to: Scalar::F64,
                from: Some(Scalar::F32)
            })
        );
        assert_eq!(
            lookup(Some("Std"), "thread_idx_y"),
            Some(Builtin::Geometry(Geometry::ThreadIdx(Axis::Y)))
        );
        assert_eq!(lookup(Some("Math"), "pow"), Some(Builtin::Pow));
        assert_eq!(
            lookup(Some("Int32"), "mod_int32"),
            Some(Builtin::Arith {
                f: ArithFn::Binary(BinaryOp::Mod),
                at: Scalar::I32
            })
        );
        assert_eq!(
            lookup(Some("Float64"), "add_float64"),
            Some(Builtin::Arith {
                f: ArithFn::Binary(BinaryOp::Add),
                at: Scalar::F64
            })
        );
        // A suffix of another type is not this module's operator.
        assert_eq!(lookup(Some("Float64"), "add_float32"), None);
        assert_eq!(
            lookup(Some("Float32"), "fmod"),
            Some(Builtin::Arith {
                f: ArithFn::Binary(BinaryOp::Mod),
                at: Scalar::F32
            })
        );
        assert_eq!(lookup(Some("Int32"), "fmod"), None);
        assert_eq!(
            lookup(None, "sqrt_f64"),
            Some(Builtin::Math {
                f: MathFn::Sqrt,
                at: Some(Scalar::F64)
            })
        );
        assert_eq!(lookup(None, "frob_f64"), None);
        assert_eq!(
            lookup(None, "popcount_int32"),
            Some(Builtin::Bits {
                op: Intrinsic::Popcount,
                at: Some(Scalar::I32)
            })
        );
        assert_eq!(
            lookup(Some("Math"), "xor"),
            Some(Builtin::Arith {
                f: ArithFn::Binary(BinaryOp::Lxor),
                at: Scalar::I32
            })
        );
        assert!(matches!(
            lookup(Some("Gpu"), "return_unit"),
            Some(Builtin::Refused { .. })
        ));
        for n in all_names() {
            assert!(lookup(None, &n).is_some(), "{n}");
        }
    }
}
