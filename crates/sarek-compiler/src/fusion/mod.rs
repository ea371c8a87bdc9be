//! Kernel fusion on the IR: a producer that writes an intermediate vector and a consumer that
//! reads it become one kernel without the intermediate.
//!
//! The design is *recompute per point*: the producer's body becomes a helper
//! `fused_<t>(j, producer params...)` returning the element its thread `j` would have stored
//! into `t`, and every read `t.(e)` of the consumer becomes a call of that helper at `e`. One
//! rewrite serves every consumer pattern ([`access::Pattern`]): a one-to-one read computes each
//! element once (vertical fusion), a reduction loop computes each element where it is
//! consumed, a small stencil of radius `r` computes each element `2r + 1` times. Wider
//! stencils, gathers and reads the analysis cannot see (the vector passed to a helper, its
//! `length`, atomics) are refused.
//!
//! The producer may be recomputed anywhere only when its thread `j` is a pure function of `j`:
//! no barriers or fences, no atomics, no shared memory or warp operations, no other thread
//! position than its global index, one store of a whole element at `G` (its global index),
//! outside loops, into `t` and nothing else, and `t` never read by it. The consumer must not
//! write `t` nor any vector the producer reads. Each rule that fails is a [`Refusal`] naming
//! the kernel and the vector, so a caller can print why. Elements of `t` the producer does
//! not store (its thread's guard is false) read as the element type's zero in the fused
//! kernel: the unfused pipeline reads whatever the temporary held there.
//!
//! Parameters are matched by name: a producer parameter and a consumer parameter with the
//! same name are the same argument (and must have the same type). The fused kernel takes the
//! producer's parameters (less `t`) in order, then the consumer's it does not share (less `t`),
//! and is launched as the consumer was. Fusion is a function from two kernels to a third; it
//! keeps no state.

pub mod access;
mod merge;

pub use access::{Pattern, VectorAccess, analyse};

use crate::diag::{Diagnostic, Span};
use crate::intrinsics::{Geometry, Intrinsic};
use crate::ir::{Expr, Kernel, Stmt, StmtKind, Ty, VarId, visit};
use std::fmt;

/// The widest stencil fused by recomputation (each element is computed `2r + 1` times).
pub const MAX_STENCIL_RADIUS: u32 = 4;

/// Why two kernels are not fused. Every variant names the kernels and vectors involved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("`{name}` is not a vector parameter of kernel `{kernel}`")]
    NotAVector { kernel: String, name: String },
    #[error("`{name}` has element type {producer} in the producer and {consumer} in the consumer")]
    ElementTypeMismatch {
        name: String,
        producer: String,
        consumer: String,
    },
    #[error(
        "parameter `{name}` has type {producer} in the producer and {consumer} in the consumer"
    )]
    ParamTypeMismatch {
        name: String,
        producer: String,
        consumer: String,
    },
    #[error(
        "the producer `{kernel}` synchronises its block (a barrier or fence): a thread's result depends on other threads, so it cannot be recomputed per element"
    )]
    Barrier { kernel: String },
    #[error(
        "the producer `{kernel}` uses atomics: recomputing it per element would repeat their effects"
    )]
    Atomic { kernel: String },
    #[error(
        "the producer `{kernel}` uses shared memory: a thread's result depends on other threads"
    )]
    SharedMemory { kernel: String },
    #[error(
        "the producer `{kernel}` uses `{what}`: only its global index (`global_thread_id`) may place a thread"
    )]
    ThreadPosition { kernel: String, what: String },
    #[error("the producer `{kernel}` embeds native target source")]
    Native { kernel: String },
    #[error("the producer `{kernel}` reads the intermediate `{name}` it writes")]
    ProducerReadsIntermediate { kernel: String, name: String },
    #[error(
        "the producer `{kernel}` also writes `{name}`: fusion would recompute or drop those writes"
    )]
    ProducerWritesOther { kernel: String, name: String },
    #[error("the producer `{kernel}` {why}")]
    ProducerStore {
        kernel: String,
        name: String,
        why: String,
    },
    #[error("the consumer `{kernel}` writes the intermediate `{name}`")]
    ConsumerWritesIntermediate { kernel: String, name: String },
    #[error(
        "the consumer `{kernel}` uses the intermediate `{name}` where fusion cannot follow: {why}"
    )]
    IntermediateEscapes {
        kernel: String,
        name: String,
        why: String,
    },
    #[error("the consumer `{kernel}` does not read `{name}`")]
    IntermediateUnread { kernel: String, name: String },
    #[error(
        "the consumer `{kernel}` reads `{name}` as a {pattern}: only one-to-one, stencil and reduction-loop reads match the producer's one-to-one writes"
    )]
    IndexMismatch {
        kernel: String,
        name: String,
        pattern: Pattern,
    },
    #[error(
        "the consumer `{kernel}` reads `{name}` as a stencil of radius {radius}: recomputing the producer {} times per element costs more than the memory it saves (at most radius {max})", 2 * radius + 1
    )]
    StencilTooWide {
        kernel: String,
        name: String,
        radius: u32,
        max: u32,
    },
    #[error(
        "the consumer `{consumer}` writes `{name}`, which the producer `{producer}` reads: the fused kernel would read it while it is being written"
    )]
    ConsumerWritesProducerInput {
        producer: String,
        consumer: String,
        name: String,
    },
    #[error("{what} is declared differently in the producer and the consumer")]
    TypeConflict { what: String },
    #[error("`{name}` is also read by `{kernel}` later in the pipeline: it cannot be eliminated")]
    IntermediateReadElsewhere { name: String, kernel: String },
    #[error("no vector written by `{producer}` is read by `{consumer}`: nothing to fuse through")]
    NoIntermediate { producer: String, consumer: String },
    #[error(
        "`{consumer}` reads several vectors written by `{producer}` ({}): fusion goes through one", names.join(", ")
    )]
    AmbiguousIntermediate {
        producer: String,
        consumer: String,
        names: Vec<String>,
    },
    #[error("a pipeline needs at least one kernel")]
    EmptyPipeline,
}

/// The outcome of [`can_fuse`]: fuse (with the consumer's read pattern, which says how often
/// the producer is recomputed) or refuse with the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Fuse {
        intermediate: String,
        pattern: Pattern,
    },
    Refuse(Refusal),
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decision::Fuse {
                intermediate,
                pattern,
            } => {
                write!(f, "fuse through `{intermediate}`: ")?;
                match pattern {
                    Pattern::Stencil { radius } => write!(
                        f,
                        "the consumer reads it as a stencil of radius {radius}, so the producer is recomputed {} times per element",
                        2 * radius + 1
                    ),
                    Pattern::Reduction => f.write_str(
                        "the consumer reads it in a loop, so the producer is computed where the loop reads it",
                    ),
                    _ => f.write_str(
                        "the consumer reads it one-to-one, so the producer is computed once per element",
                    ),
                }
            }
            Decision::Refuse(r) => write!(f, "do not fuse: {r}"),
        }
    }
}

/// A fused pipeline: the kernel, the intermediates it no longer needs, and each step's
/// decision in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Fused {
    pub kernel: Kernel,
    pub eliminated: Vec<String>,
    pub decisions: Vec<Decision>,
}

/// A refused pipeline step: the kernels at that step, why, and where ([`locate`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot fuse `{producer}` into `{consumer}`: {refusal}")]
pub struct PipelineRefusal {
    pub producer: String,
    pub consumer: String,
    pub refusal: Box<Refusal>,
    pub span: Span,
}

impl PipelineRefusal {
    /// The refusal as a located error.
    pub fn diagnostic(&self) -> Diagnostic {
        Diagnostic::error(self.span, self.to_string())
    }
}

/// The statement a refusal is about (the barrier, the atomic, the store, the read of the
/// intermediate, ...), else the kernel it is about.
pub fn locate(producer: &Kernel, consumer: &Kernel, refusal: &Refusal) -> Span {
    use crate::ir::{ExprKind, LValue};
    let var = |k: &Kernel, name: &str| param_named(k, name);
    let stores_to = |v: Option<VarId>| {
        move |s: &Stmt| {
            let StmtKind::Assign { place, .. } = &s.kind else {
                return false;
            };
            let mut p = place;
            while let LValue::Field { base, .. } = p {
                p = base;
            }
            matches!(p, LValue::Index { base, .. } if Some(*base) == v)
        }
    };
    let reads = |v: Option<VarId>| {
        move |e: &Expr| match &e.kind {
            ExprKind::Index { base, .. } => Some(*base) == v,
            ExprKind::Var(x) => Some(*x) == v,
            _ => false,
        }
    };
    let found = match refusal {
        Refusal::Barrier { .. } => find(
            producer,
            &|s| matches!(s.kind, StmtKind::Barrier | StmtKind::Fence { .. }),
            &|_| false,
        ),
        Refusal::Native { .. } => find(
            producer,
            &|s| matches!(s.kind, StmtKind::Native(_)),
            &|_| false,
        ),
        Refusal::SharedMemory { .. } => find(
            producer,
            &|s| matches!(s.kind, StmtKind::Array { .. }),
            &|_| false,
        ),
        Refusal::Atomic { .. } => find(producer, &|_| false, &|e| {
            matches!(
                e.kind,
                ExprKind::Intrinsic {
                    op: Intrinsic::Atomic(_),
                    ..
                }
            )
        }),
        Refusal::ThreadPosition { .. } => find(producer, &|_| false, &|e| {
            matches!(e.kind, ExprKind::Intrinsic { op: Intrinsic::Geometry(g), .. }
                if !matches!(g, Geometry::GlobalIdx(crate::intrinsics::Axis::X)))
                || matches!(
                    e.kind,
                    ExprKind::Intrinsic {
                        op: Intrinsic::Warp(_),
                        ..
                    }
                )
        }),
        Refusal::ProducerReadsIntermediate { name, .. } => {
            find(producer, &|_| false, &reads(var(producer, name)))
        }
        Refusal::ProducerWritesOther { name, .. } | Refusal::ProducerStore { name, .. } => {
            let v = var(producer, name);
            find(producer, &stores_to(v), &|_| false)
                .or_else(|| find(producer, &|_| false, &reads(v)))
        }
        Refusal::ConsumerWritesIntermediate { name, .. }
        | Refusal::ConsumerWritesProducerInput { name, .. } => {
            let v = var(consumer, name);
            find(consumer, &stores_to(v), &|_| false)
                .or_else(|| find(consumer, &|_| false, &reads(v)))
        }
        Refusal::IntermediateEscapes { name, .. } => find(consumer, &|_| false, &|e| {
            let v = var(consumer, name);
            match &e.kind {
                ExprKind::Call { args, .. } | ExprKind::Intrinsic { args, .. } => args
                    .iter()
                    .any(|a| matches!(a.kind, ExprKind::Var(x) if Some(x) == v)),
                _ => false,
            }
        }),
        Refusal::IndexMismatch { name, .. } | Refusal::StencilTooWide { name, .. } => {
            find(consumer, &|_| false, &reads(var(consumer, name)))
        }
        _ => None,
    };
    match refusal {
        _ if found.is_some() => found.expect("checked"),
        Refusal::NotAVector { kernel, .. } if *kernel == consumer.name => consumer.span,
        Refusal::ParamTypeMismatch { .. }
        | Refusal::ElementTypeMismatch { .. }
        | Refusal::IntermediateUnread { .. }
        | Refusal::NoIntermediate { .. }
        | Refusal::AmbiguousIntermediate { .. }
        | Refusal::IntermediateReadElsewhere { .. }
        | Refusal::TypeConflict { .. }
        | Refusal::EmptyPipeline => consumer.span,
        _ => producer.span,
    }
}

/// The span of the first statement of `k`'s body satisfying `stmt`, or evaluating an
/// expression (at any depth) satisfying `expr`.
fn find(k: &Kernel, stmt: &dyn Fn(&Stmt) -> bool, expr: &dyn Fn(&Expr) -> bool) -> Option<Span> {
    struct First<'a> {
        expr: &'a dyn Fn(&Expr) -> bool,
        found: Option<Span>,
    }
    impl visit::StmtVisitor for First<'_> {
        fn var(&mut self, _: VarId) {}
        fn expr(&mut self, span: Span, e: &Expr) {
            if self.found.is_none() {
                let mut hit = false;
                merge::for_each_expr(
                    &vec![Stmt {
                        kind: StmtKind::Expr(e.clone()),
                        span,
                    }],
                    &mut |x| hit |= (self.expr)(x),
                );
                if hit {
                    self.found = Some(span);
                }
            }
        }
    }
    let mut by_stmt = None;
    visit::for_each_stmt(&k.body, &mut |s| {
        if by_stmt.is_none() && stmt(s) {
            by_stmt = Some(s.span);
        }
    });
    let mut v = First { expr, found: None };
    visit::walk_block(&mut v, &k.body);
    let best = match (by_stmt, v.found) {
        (Some(a), Some(b)) => Some(if a.start <= b.start { a } else { b }),
        (a, b) => a.or(b),
    };
    best.filter(|s| !s.is_dummy())
}

/// Whether `producer` fuses into `consumer` through their vector parameter `intermediate`.
pub fn can_fuse(producer: &Kernel, consumer: &Kernel, intermediate: &str) -> Decision {
    match check(producer, consumer, intermediate) {
        Ok(pattern) => Decision::Fuse {
            intermediate: intermediate.into(),
            pattern,
        },
        Err(r) => Decision::Refuse(r),
    }
}

/// The kernel computing what `producer` then `consumer` compute, without `intermediate`.
/// Launch it as the consumer was launched.
pub fn fuse(producer: &Kernel, consumer: &Kernel, intermediate: &str) -> Result<Kernel, Refusal> {
    check(producer, consumer, intermediate)?;
    merge::fuse(producer, consumer, intermediate)
}

/// Fuse `kernels` left to right: each kernel's intermediate is the one vector the fused
/// kernel so far writes and it reads (by name). An intermediate that a later kernel also uses
/// is refused, since eliminating it would lose what that kernel reads.
pub fn fuse_pipeline(kernels: &[Kernel]) -> Result<Fused, PipelineRefusal> {
    let Some(first) = kernels.first() else {
        return Err(PipelineRefusal {
            producer: String::new(),
            consumer: String::new(),
            refusal: Box::new(Refusal::EmptyPipeline),
            span: Span::DUMMY,
        });
    };
    let mut acc = first.clone();
    let mut eliminated = Vec::new();
    let mut decisions = Vec::new();
    for (i, next) in kernels.iter().enumerate().skip(1) {
        let refuse = |refusal| PipelineRefusal {
            producer: acc.name.clone(),
            consumer: next.name.clone(),
            span: locate(&acc, next, &refusal),
            refusal: Box::new(refusal),
        };
        let via = intermediate(&acc, next).map_err(refuse)?;
        if let Some(later) = kernels[i + 1..].iter().find(|k| {
            analyse(k)
                .iter()
                .any(|a| a.name == via && (a.reads != Pattern::None || a.writes != Pattern::None))
        }) {
            return Err(refuse(Refusal::IntermediateReadElsewhere {
                name: via,
                kernel: later.name.clone(),
            }));
        }
        let decision = can_fuse(&acc, next, &via);
        if let Decision::Refuse(r) = decision {
            return Err(refuse(r));
        }
        acc = fuse(&acc, next, &via).map_err(refuse)?;
        decisions.push(decision);
        eliminated.push(via);
    }
    Ok(Fused {
        kernel: acc,
        eliminated,
        decisions,
    })
}

/// The one vector `producer` writes and `consumer` reads, by name.
pub fn intermediate(producer: &Kernel, consumer: &Kernel) -> Result<String, Refusal> {
    let read: Vec<String> = analyse(consumer)
        .into_iter()
        .filter(|a| a.reads != Pattern::None)
        .map(|a| a.name)
        .collect();
    let names: Vec<String> = analyse(producer)
        .into_iter()
        .filter(|a| a.writes != Pattern::None && read.contains(&a.name))
        .map(|a| a.name)
        .collect();
    match names.len() {
        0 => Err(Refusal::NoIntermediate {
            producer: producer.name.clone(),
            consumer: consumer.name.clone(),
        }),
        1 => Ok(names.into_iter().next().expect("one name")),
        _ => Err(Refusal::AmbiguousIntermediate {
            producer: producer.name.clone(),
            consumer: consumer.name.clone(),
            names,
        }),
    }
}

fn param_named(k: &Kernel, name: &str) -> Option<VarId> {
    k.params.iter().copied().find(|p| k.var(*p).name == name)
}

/// Every rule of the module documentation; the consumer's read pattern when all hold.
fn check(p: &Kernel, c: &Kernel, via: &str) -> Result<Pattern, Refusal> {
    let (pk, ck) = (p.name.clone(), c.name.clone());
    let vector = |k: &Kernel| {
        param_named(k, via)
            .filter(|v| matches!(k.var(*v).ty, Ty::Vector(_)))
            .ok_or_else(|| Refusal::NotAVector {
                kernel: k.name.clone(),
                name: via.into(),
            })
    };
    let (pt, ct) = (vector(p)?, vector(c)?);
    let (pty, cty) = (
        crate::ir::print::type_name(p, &p.var(pt).ty),
        crate::ir::print::type_name(c, &c.var(ct).ty),
    );
    if pty != cty || !merge::same_type(p, &p.var(pt).ty, c, &c.var(ct).ty) {
        return Err(Refusal::ElementTypeMismatch {
            name: via.into(),
            producer: pty,
            consumer: cty,
        });
    }
    for &pp in &p.params {
        let name = &p.var(pp).name;
        if let Some(cp) = param_named(c, name)
            && !merge::same_type(p, &p.var(pp).ty, c, &c.var(cp).ty)
        {
            return Err(Refusal::ParamTypeMismatch {
                name: name.clone(),
                producer: crate::ir::print::type_name(p, &p.var(pp).ty),
                consumer: crate::ir::print::type_name(c, &c.var(cp).ty),
            });
        }
    }

    // The producer must be a pure function of its global index.
    producer_effects(p)?;
    let p_access = analyse(p);
    for a in &p_access {
        if a.name == via {
            if a.reads != Pattern::None {
                return Err(Refusal::ProducerReadsIntermediate {
                    kernel: pk,
                    name: via.into(),
                });
            }
            let why = if let Some(why) = &a.escapes {
                Some(format!("uses `{via}` as a whole ({why})"))
            } else if a.stores == 0 {
                Some(format!("never writes `{via}`"))
            } else if a.stores > 1 {
                Some(format!(
                    "writes `{via}` in {} places (fusion needs one)",
                    a.stores
                ))
            } else if a.partial_store {
                Some(format!(
                    "writes a field of `{via}`'s elements, not whole elements"
                ))
            } else if a.store_in_loop {
                Some(format!("writes `{via}` inside a loop"))
            } else if a.writes != Pattern::OneToOne {
                Some(format!(
                    "writes `{via}` as a {} (fusion needs element `global_thread_id`)",
                    a.writes
                ))
            } else {
                None
            };
            if let Some(why) = why {
                return Err(Refusal::ProducerStore {
                    kernel: pk,
                    name: via.into(),
                    why,
                });
            }
        } else if a.writes != Pattern::None {
            return Err(Refusal::ProducerWritesOther {
                kernel: pk,
                name: a.name.clone(),
            });
        }
    }
    merge::producer_geometry(p)?;

    // The consumer's side.
    let c_access = analyse(c);
    let t = c_access
        .iter()
        .find(|a| a.name == via)
        .expect("checked to be a vector parameter");
    if t.writes != Pattern::None {
        return Err(Refusal::ConsumerWritesIntermediate {
            kernel: ck,
            name: via.into(),
        });
    }
    if let Some(why) = &t.escapes {
        return Err(Refusal::IntermediateEscapes {
            kernel: ck,
            name: via.into(),
            why: why.clone(),
        });
    }
    for a in &c_access {
        if a.name != via
            && a.writes != Pattern::None
            && p_access
                .iter()
                .any(|pa| pa.name == a.name && pa.reads != Pattern::None)
        {
            return Err(Refusal::ConsumerWritesProducerInput {
                producer: pk,
                consumer: ck,
                name: a.name.clone(),
            });
        }
    }
    match t.reads {
        Pattern::None => Err(Refusal::IntermediateUnread {
            kernel: ck,
            name: via.into(),
        }),
        Pattern::Stencil { radius } if radius > MAX_STENCIL_RADIUS => {
            Err(Refusal::StencilTooWide {
                kernel: ck,
                name: via.into(),
                radius,
                max: MAX_STENCIL_RADIUS,
            })
        }
        p @ (Pattern::OneToOne | Pattern::Stencil { .. } | Pattern::Reduction) => Ok(p),
        pattern @ (Pattern::Gather | Pattern::Unknown) => Err(Refusal::IndexMismatch {
            kernel: ck,
            name: via.into(),
            pattern,
        }),
    }
}

/// Barriers, fences, atomics, shared memory, warp operations and native code in the
/// producer or its helpers.
fn producer_effects(p: &Kernel) -> Result<(), Refusal> {
    let kernel = p.name.clone();
    let mut found: Option<Refusal> = None;
    for body in std::iter::once(&p.body).chain(p.functions.iter().map(|f| &f.body)) {
        visit::for_each_stmt(body, &mut |s| {
            if found.is_some() {
                return;
            }
            found = match &s.kind {
                StmtKind::Barrier | StmtKind::Fence { .. } => Some(Refusal::Barrier {
                    kernel: kernel.clone(),
                }),
                StmtKind::Native(_) => Some(Refusal::Native {
                    kernel: kernel.clone(),
                }),
                StmtKind::Array { var }
                    if matches!(
                        p.var(*var).ty,
                        Ty::Array {
                            space: crate::types::MemSpace::Shared,
                            ..
                        }
                    ) =>
                {
                    Some(Refusal::SharedMemory {
                        kernel: kernel.clone(),
                    })
                }
                _ => None,
            };
        });
        let mut atomic = false;
        let mut warp = false;
        merge::for_each_expr(body, &mut |e| {
            if let crate::ir::ExprKind::Intrinsic { op, .. } = &e.kind {
                atomic |= matches!(op, Intrinsic::Atomic(_));
                warp |= matches!(
                    op,
                    Intrinsic::Warp(_) | Intrinsic::Geometry(Geometry::WarpSize)
                );
            }
        });
        if found.is_none() && atomic {
            found = Some(Refusal::Atomic {
                kernel: kernel.clone(),
            });
        }
        if found.is_none() && warp {
            found = Some(Refusal::ThreadPosition {
                kernel: kernel.clone(),
                what: "warp operations".into(),
            });
        }
    }
    found.map_or(Ok(()), Err)
}
