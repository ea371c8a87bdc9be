//! PTX output checked by the real assembler (`ptxas` from the `nvidia-cuda-nvcc` wheel).
//! Skips with a printed reason when ptxas is absent, unless SAREK_REQUIRE_BACKENDS names `ptx`.

use sarek_compiler::diag::Span;
use sarek_compiler::intrinsics::{AtomicOp, Axis, Geometry, Intrinsic, WarpOp};
use sarek_compiler::ir::*;
use sarek_compiler::types::{BinOp, Literal, MemSpace, Scalar};
use sarek_compiler::{Target, TargetOptions};
use std::path::PathBuf;
use std::process::Command;

#[path = "support/ir_kernels.rs"]
mod ir_kernels;

/// Locate ptxas: $SAREK_PTXAS, PATH, or the pip wheel's site-packages.
pub fn ptxas() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("SAREK_PTXAS") {
        return Some(PathBuf::from(p));
    }
    if Command::new("ptxas")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some(PathBuf::from("ptxas"));
    }
    let out = Command::new("python3")
        .args(["-c", "import nvidia, os; print(list(nvidia.__path__)[0])"])
        .output()
        .ok()?;
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("cu13/bin/ptxas");
    dir.exists().then_some(dir)
}

fn required() -> bool {
    std::env::var("SAREK_REQUIRE_BACKENDS").is_ok_and(|v| v.split(',').any(|b| b.trim() == "ptx"))
}

/// Assemble `source` for sm_90; Err carries ptxas' message.
pub fn assemble(source: &str) -> Option<Result<(), String>> {
    let Some(ptxas) = ptxas() else {
        assert!(
            !required(),
            "ptxas is required (SAREK_REQUIRE_BACKENDS) but was not found"
        );
        eprintln!("skipping: ptxas not found (pip install nvidia-cuda-nvcc)");
        return None;
    };
    let dir = std::env::temp_dir().join(format!(
        "sarek-ptx-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("k.ptx");
    std::fs::write(&file, source).unwrap();
    let out = Command::new(ptxas)
        .args(["-arch=sm_90", "-o"])
        .arg(dir.join("k.cubin"))
        .arg(&file)
        .output()
        .unwrap();
    Some(if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    })
}

fn var(k: &mut Kernel, name: &str, ty: Ty, mutable: bool) -> VarId {
    k.vars.push(VarInfo {
        name: name.into(),
        ty,
        mutable,
        span: Span::DUMMY,
    });
    VarId(k.vars.len() as u32 - 1)
}

fn s(kind: StmtKind) -> Stmt {
    Stmt {
        kind,
        span: Span::DUMMY,
    }
}

fn v(id: VarId, ty: Ty) -> Expr {
    Expr::new(ExprKind::Var(id), ty)
}

fn bin(op: BinOp, a: Expr, b: Expr, ty: Ty) -> Expr {
    Expr::new(
        ExprKind::Binary {
            op,
            lhs: Box::new(a),
            rhs: Box::new(b),
        },
        ty,
    )
}

fn gid() -> Expr {
    Expr::new(
        ExprKind::Intrinsic {
            op: Intrinsic::Geometry(Geometry::GlobalIdx(Axis::X)),
            args: vec![],
        },
        Ty::I32,
    )
}

fn empty(name: &str) -> Kernel {
    Kernel {
        name: name.into(),
        span: Span::DUMMY,
        vars: vec![],
        params: vec![],
        body: vec![],
        records: vec![],
        variants: vec![],
        functions: vec![],
    }
}

/// saxpy with a record vector, a variant match, atomics, shared memory, a barrier, a warp
/// shuffle and a helper call: one kernel touching most of the writer.
fn kitchen_sink() -> Kernel {
    let mut k = empty("kitchen'sink");
    k.records.push(Record {
        name: "point".into(),
        fields: vec![
            Field {
                name: "x".into(),
                ty: Ty::F32,
            },
            Field {
                name: "ok".into(),
                ty: Ty::BOOL,
            },
        ],
        is_tuple: false,
    });
    k.variants.push(Variant {
        name: "shape".into(),
        ctors: vec![
            Ctor {
                name: "Circle".into(),
                fields: vec![Ty::F32],
            },
            Ctor {
                name: "Rect".into(),
                fields: vec![Ty::F32, Ty::F32],
            },
            Ctor {
                name: "Empty".into(),
                fields: vec![],
            },
        ],
    });
    let pt = Ty::Record(RecordId(0));
    let sh = Ty::Variant(VariantId(0));
    let xs = var(&mut k, "xs", Ty::Vector(Box::new(pt.clone())), false);
    let shapes = var(&mut k, "shapes", Ty::Vector(Box::new(sh.clone())), false);
    let hist = var(&mut k, "hist", Ty::Vector(Box::new(Ty::I64)), false);
    let a = var(&mut k, "a", Ty::F32, false);
    k.params = vec![xs, shapes, hist, a];
    // helper: twice (y : float32) = y *. 2.0
    let y = var(&mut k, "y", Ty::F32, false);
    k.functions.push(Function {
        name: "twice".into(),
        span: Span::DUMMY,
        params: vec![y],
        ret: Ty::F32,
        body: vec![s(StmtKind::Return(Some(bin(
            BinOp::Mul,
            v(y, Ty::F32),
            Expr::lit(Literal::F32(2.0)),
            Ty::F32,
        ))))],
    });
    let i = var(&mut k, "i", Ty::I32, false);
    let tile = var(
        &mut k,
        "tile",
        Ty::Array {
            elem: Box::new(Ty::F32),
            space: MemSpace::Shared,
            size: Some(256),
        },
        false,
    );
    let area = var(&mut k, "area", Ty::F32, true);
    let r = var(&mut k, "r", Ty::F32, false);
    let w = var(&mut k, "w", Ty::F32, false);
    let h = var(&mut k, "h", Ty::F32, false);
    let len = Expr::new(
        ExprKind::Intrinsic {
            op: Intrinsic::Length,
            args: vec![v(xs, Ty::Vector(Box::new(pt.clone())))],
        },
        Ty::I32,
    );
    let tid = Expr::new(
        ExprKind::Intrinsic {
            op: Intrinsic::Geometry(Geometry::ThreadIdx(Axis::X)),
            args: vec![],
        },
        Ty::I32,
    );
    let read_x = Expr::new(
        ExprKind::Field {
            base: Box::new(Expr::new(
                ExprKind::Index {
                    base: xs,
                    index: Box::new(v(i, Ty::I32)),
                },
                pt.clone(),
            )),
            field: 0,
        },
        Ty::F32,
    );
    let call = Expr::new(
        ExprKind::Call {
            func: FuncId(0),
            args: vec![read_x],
        },
        Ty::F32,
    );
    let shuffled = Expr::new(
        ExprKind::Intrinsic {
            op: Intrinsic::Warp(WarpOp::ShuffleDown),
            args: vec![v(area, Ty::F32), Expr::i32(1)],
        },
        Ty::F32,
    );
    k.body = vec![
        s(StmtKind::Let {
            var: i,
            init: Some(gid()),
        }),
        s(StmtKind::Array { var: tile }),
        s(StmtKind::Let {
            var: area,
            init: Some(Expr::lit(Literal::F32(0.0))),
        }),
        s(StmtKind::Match {
            scrutinee: Expr::new(
                ExprKind::Index {
                    base: shapes,
                    index: Box::new(v(i, Ty::I32)),
                },
                sh.clone(),
            ),
            variant: VariantId(0),
            arms: vec![
                MatchArm {
                    ctor: Some(0),
                    bindings: vec![Some(r)],
                    body: vec![s(StmtKind::Assign {
                        place: LValue::Var(area),
                        value: bin(BinOp::Mul, v(r, Ty::F32), v(r, Ty::F32), Ty::F32),
                    })],
                },
                MatchArm {
                    ctor: Some(1),
                    bindings: vec![Some(w), Some(h)],
                    body: vec![s(StmtKind::Assign {
                        place: LValue::Var(area),
                        value: bin(BinOp::Mul, v(w, Ty::F32), v(h, Ty::F32), Ty::F32),
                    })],
                },
                MatchArm {
                    ctor: None,
                    bindings: vec![],
                    body: vec![],
                },
            ],
        }),
        s(StmtKind::Assign {
            place: LValue::Index {
                base: tile,
                index: Box::new(tid),
            },
            value: v(area, Ty::F32),
        }),
        s(StmtKind::Barrier),
        s(StmtKind::Assign {
            place: LValue::Var(area),
            value: shuffled,
        }),
        s(StmtKind::If {
            cond: bin(BinOp::Lt, v(i, Ty::I32), len, Ty::BOOL),
            then_block: vec![
                s(StmtKind::Assign {
                    place: LValue::Field {
                        base: Box::new(LValue::Index {
                            base: xs,
                            index: Box::new(v(i, Ty::I32)),
                        }),
                        field: 0,
                    },
                    value: bin(
                        BinOp::Add,
                        bin(BinOp::Mul, v(a, Ty::F32), call, Ty::F32),
                        v(area, Ty::F32),
                        Ty::F32,
                    ),
                }),
                s(StmtKind::Expr(Expr::new(
                    ExprKind::Intrinsic {
                        op: Intrinsic::Atomic(AtomicOp::Add),
                        args: vec![
                            v(hist, Ty::Vector(Box::new(Ty::I64))),
                            bin(BinOp::Rem, v(i, Ty::I32), Expr::i32(16), Ty::I32),
                            Expr::lit(Literal::I64(1)),
                        ],
                    },
                    Ty::I64,
                ))),
            ],
            else_block: vec![],
        }),
    ];
    let _ = Scalar::I32;
    k
}

#[test]
fn kitchen_sink_assembles() {
    let k = kitchen_sink();
    let out =
        sarek_compiler::generate(&k, Target::Ptx, &TargetOptions::default()).expect("generates");
    assert!(
        out.source
            .contains(".visible .entry sarek_kitchen_x27sink("),
        "{}",
        out.source
    );
    if let Some(result) = assemble(&out.source) {
        result.unwrap_or_else(|e| panic!("ptxas rejected:\n{e}\n{}", out.source));
    }
}

/// `for` loops at the int32 extremes with `continue`, `break` and a `nounroll` hint.
#[test]
fn hand_built_loops_assemble() {
    let out =
        sarek_compiler::generate(&ir_kernels::loops(), Target::Ptx, &TargetOptions::default())
            .expect("generates");
    assert!(
        out.source.contains(".pragma \"nounroll\";"),
        "{}",
        out.source
    );
    if let Some(result) = assemble(&out.source) {
        result.unwrap_or_else(|e| panic!("ptxas rejected:\n{e}\n{}", out.source));
    }
}

#[test]
fn float64_sine_is_refused_naming_ptx() {
    let mut k = empty("f64sin");
    let x = var(&mut k, "x", Ty::F64, false);
    let o = var(&mut k, "o", Ty::Vector(Box::new(Ty::F64)), false);
    k.params = vec![x, o];
    let sin = Expr::new(
        ExprKind::Intrinsic {
            op: Intrinsic::Math(sarek_compiler::intrinsics::MathFn::Sin),
            args: vec![v(x, Ty::F64)],
        },
        Ty::F64,
    );
    k.body = vec![s(StmtKind::Assign {
        place: LValue::Index {
            base: o,
            index: Box::new(Expr::i32(0)),
        },
        value: sin,
    })];
    let err = sarek_compiler::generate(&k, Target::Ptx, &TargetOptions::default()).unwrap_err();
    assert!(
        err[0].message.contains("PTX") && err[0].message.contains("sin"),
        "{:?}",
        err
    );
}

/// Every corpus kernel either assembles with ptxas or is refused with a located error
/// naming PTX.
#[test]
fn corpus_assembles_or_is_refused() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/kernels");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut failures = Vec::new();
    let (mut ok, mut refused) = (0, 0);
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "sarek"))
    {
        let mut sources = sarek_compiler::SourceMap::new();
        let file = sources.add(
            path.display().to_string(),
            std::fs::read_to_string(path).unwrap(),
        );
        let program = match sarek_compiler::check(&sources, file) {
            Ok(p) => p,
            Err(d) => {
                failures.push(format!(
                    "{}: front end: {}",
                    path.display(),
                    sarek_compiler::diag::render_all(&d, &sources, false)
                ));
                continue;
            }
        };
        for kernel in &program.kernels {
            let ir = match sarek_compiler::lower_kernel(&program, &kernel.name) {
                Ok(ir) => ir,
                Err(d) => {
                    failures.push(format!(
                        "{}: lowering: {}",
                        path.display(),
                        sarek_compiler::diag::render_all(&d, &sources, false)
                    ));
                    continue;
                }
            };
            match sarek_compiler::generate(&ir, Target::Ptx, &TargetOptions::default()) {
                Ok(out) => match assemble(&out.source) {
                    Some(Err(e)) => {
                        failures.push(format!("{} / {}: ptxas: {e}", path.display(), kernel.name))
                    }
                    _ => ok += 1,
                },
                Err(d) => {
                    assert!(
                        d.iter()
                            .all(|d| d.message.contains("PTX") && !d.span.is_dummy()),
                        "{d:?}"
                    );
                    refused += 1;
                }
            }
        }
    }
    eprintln!("ptx corpus: {ok} assembled, {refused} refused");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
