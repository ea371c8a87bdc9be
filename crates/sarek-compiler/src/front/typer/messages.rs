//! Message texts shared by several checks (and, for aggregate equality, by the lowering
//! backstop: seed 003 wants one owner of that wording so two gates cannot drift apart).

/// The body of the refusal of `=`, `<>` or `!=` on a non-scalar operand. `ty` is the operand
/// type as the user would write it. Callers add where the refusal happened.
pub fn aggregate_equality_message(ty: &str) -> String {
    format!("`=`, `<>` and `!=` compare scalars only, but this operand has type `{ty}`")
}

/// The help line accompanying [`aggregate_equality_message`].
pub fn aggregate_equality_help(is_variant: bool) -> String {
    if is_variant {
        "use `match` to inspect a variant".to_string()
    } else {
        "compare the elements or fields one by one (use `match` for variants)".to_string()
    }
}

/// A "did you mean" help line.
pub(super) fn did_you_mean(candidate: Option<&str>) -> Option<String> {
    candidate.map(|c| format!("did you mean `{c}`?"))
}

/// "1 argument" / "3 arguments".
pub(super) fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("{n} {what}")
    } else {
        format!("{n} {what}s")
    }
}
