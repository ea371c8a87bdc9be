//! Spans of statements that lowering synthesizes: a run-time fault inside one is reported at
//! that statement's span, so it must point at the source it evaluates.

use sarek_compiler::diag::SourceMap;
use sarek_compiler::ir::{Stmt, StmtKind};

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
