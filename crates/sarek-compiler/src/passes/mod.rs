//! IR-to-IR passes run per target before a generator.

pub mod checked;
pub mod constfold;
pub mod legalize;
pub mod opt;

/// `kernel` as a generator should see it under `options`: with the checked-mode checks
/// ([`checked::insert_checks`]) when `options.checked`.
pub fn for_target<'k>(
    kernel: &'k crate::ir::Kernel,
    options: &crate::target::TargetOptions,
) -> std::borrow::Cow<'k, crate::ir::Kernel> {
    if options.checked {
        std::borrow::Cow::Owned(checked::insert_checks(kernel))
    } else {
        std::borrow::Cow::Borrowed(kernel)
    }
}
