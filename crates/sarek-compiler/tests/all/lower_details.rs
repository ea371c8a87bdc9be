//! Details of lowering that no target can see on its own: spans of synthesized statements
//! (a run-time fault inside one is reported at that statement's span, so it must point at the
//! source it evaluates) and the float32 folding of `float64` conversions of constants.

use sarek_compiler::diag::SourceMap;
use sarek_compiler::ir::{self, Stmt, StmtKind};
use sarek_compiler::types::Literal;

fn lets(block: &[Stmt], out: &mut Vec<Stmt>) {
    for s in block {
        match &s.kind {
            StmtKind::Let { .. } => out.push(s.clone()),
            StmtKind::If {
                then_block,
                else_block,
                ..
            } => {
                lets(then_block, out);
                lets(else_block, out);
            }
            _ => {}
        }
    }
}

/// `x.(i) + r.(i).cnt` is spilled before the statements `snd t.(i)` needs; the temporary is
/// located at `x.(i) + r.(i).cnt`, not at the later operand.
#[test]
fn spilled_operand_keeps_its_own_span() {
    let src = "type flags = { on : bool; cnt : int32 }
let%kernel k (r : flags vector) (t : (bool * int32) vector) (x : int32 vector) =
  let i = global_thread_id in
  x.(i) <- x.(i) + r.(i).cnt + snd t.(i)
";
    let mut sources = SourceMap::new();
    let file = sources.add("spill.sarek", src);
    let program = sarek_compiler::check(&sources, file).expect("checks");
    let kernel = sarek_compiler::lower_kernel(&program, "k").expect("lowers");
    let mut found = Vec::new();
    lets(&kernel.body, &mut found);
    let texts: Vec<(String, &str)> = found
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Let { var, .. } => Some((
                kernel.var(*var).name.clone(),
                &src[s.span.start as usize..s.span.end as usize],
            )),
            _ => None,
        })
        .collect();
    let arg = texts
        .iter()
        .find(|(name, _)| name.starts_with("arg"))
        .unwrap_or_else(|| panic!("no spilled operand among {texts:?}"));
    assert_eq!(arg.1, "x.(i) + r.(i).cnt", "{texts:?}");
}

/// `float64 (1.0 /. 3.0)` is the float32 quotient widened (glslang would fold it in double);
/// a conversion of a non-constant stays a conversion.
#[test]
fn float64_of_float32_constant_is_folded_in_float32() {
    let src = "let%kernel k (o : float64 vector) (f : float32 vector) =
  o.(0) <- float64 (1.0 /. 3.0);
  o.(1) <- float64 (-. 0.1 *. 3.0);
  o.(2) <- float64 f.(0)
";
    let mut sources = SourceMap::new();
    let file = sources.add("fold.sarek", src);
    let program = sarek_compiler::check(&sources, file).expect("checks");
    let kernel = sarek_compiler::lower_kernel(&program, "k").expect("lowers");
    let values: Vec<&ir::Expr> = kernel
        .body
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Assign { value, .. } => Some(value),
            _ => None,
        })
        .collect();
    assert_eq!(values.len(), 3, "{:?}", kernel.body);
    let lit = |e: &ir::Expr| match &e.kind {
        ir::ExprKind::Lit(Literal::F64(v)) => Some(*v),
        _ => None,
    };
    assert_eq!(lit(values[0]), Some(f64::from(1.0f32 / 3.0f32)));
    assert_eq!(lit(values[1]), Some(f64::from(-0.1f32 * 3.0f32)));
    assert_eq!(lit(values[2]), None, "{:?}", values[2]);
}
