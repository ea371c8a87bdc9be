//! Every WGSL output file validates with naga (all validation flags, the SUBGROUP capability
//! the generator may use); without subgroups, every corpus kernel validates or is refused
//! with a located message naming WGSL; the ABI agrees with naga's layout.

use naga::valid::{Capabilities, ValidationFlags, Validator};
use sarek_compiler::diag::{SourceMap, render_all};
use sarek_compiler::{Target, TargetOptions};

use crate::support::outputs;
use sarek_testkit::files::corpus;

fn naga_validate(src: &str) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(src).map_err(|e| e.emit_to_string(src))?;
    Validator::new(ValidationFlags::all(), Capabilities::SUBGROUP)
        .validate(&module)
        .map(|_| ())
        .map_err(|e| e.emit_to_string(src))
}

/// Byte offsets of every scalar leaf of a naga type placed at `base`.
fn naga_leaves(module: &naga::Module, ty: naga::Handle<naga::Type>, base: u32, out: &mut Vec<u32>) {
    match &module.types[ty].inner {
        naga::TypeInner::Struct { members, .. } => {
            for m in members {
                naga_leaves(module, m.ty, base + m.offset, out);
            }
        }
        _ => out.push(base),
    }
}

/// The ABI descriptor agrees with the layout naga computes for the WGSL declarations: the
/// bindings, the `Params` field offsets, and each storage array's stride and leaf offsets.
fn abi_matches_naga_layout(g: &sarek_compiler::Generated) -> Result<(), String> {
    use sarek_compiler::abi::{AbiParamKind, ArgSlot};
    let module = naga::front::wgsl::parse_str(&g.source).map_err(|e| e.to_string())?;
    let mut uniform_offsets = Vec::new();
    let mut storage = std::collections::BTreeMap::new();
    for (_, var) in module.global_variables.iter() {
        let Some(rb) = &var.binding else { continue };
        match (&var.space, &module.types[var.ty].inner) {
            (naga::AddressSpace::Uniform, naga::TypeInner::Struct { members, span }) => {
                if g.abi.uniform_binding != Some((rb.group, rb.binding)) {
                    return Err(format!(
                        "uniform at {rb:?}, ABI says {:?}",
                        g.abi.uniform_binding
                    ));
                }
                if g.abi.uniform_size.unwrap_or(0) < *span {
                    return Err(format!(
                        "uniform is {span} bytes, ABI says {:?}",
                        g.abi.uniform_size
                    ));
                }
                uniform_offsets = members.iter().map(|m| m.offset).collect();
            }
            (naga::AddressSpace::Storage { .. }, naga::TypeInner::Array { base, stride, .. }) => {
                let mut leaves = Vec::new();
                naga_leaves(&module, *base, 0, &mut leaves);
                storage.insert((rb.group, rb.binding), (*stride, leaves));
            }
            (space, _) => return Err(format!("unexpected binding in {space:?}")),
        }
    }
    let mut abi_uniform = Vec::new();
    let mut abi_storage = std::collections::BTreeMap::new();
    for p in &g.abi.params {
        match &p.kind {
            AbiParamKind::Value {
                layout,
                slot: ArgSlot::Uniform { offset },
            } => abi_uniform.extend(layout.leaves.iter().map(|(o, _)| offset + o)),
            AbiParamKind::Vector {
                elem,
                buffer: ArgSlot::Binding { group, binding },
                length,
            } => {
                if let ArgSlot::Uniform { offset } = length {
                    abi_uniform.push(*offset);
                }
                let leaves: Vec<u32> = elem.leaves.iter().map(|(o, _)| *o).collect();
                abi_storage.insert((*group, *binding), (elem.stride, leaves));
            }
            _ => {}
        }
    }
    abi_uniform.sort();
    if abi_uniform != uniform_offsets {
        return Err(format!(
            "Params offsets {uniform_offsets:?}, ABI offsets {abi_uniform:?}"
        ));
    }
    if abi_storage != storage {
        return Err(format!(
            "storage layouts (naga) {storage:?}, ABI {abi_storage:?}"
        ));
    }
    Ok(())
}

/// Returns (generated, refused) counts for `options`.
fn run_corpus(options: &TargetOptions) -> (usize, usize) {
    let (mut generated, mut refused) = (0, 0);
    for path in corpus() {
        let name = format!(
            "tests/kernels/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let mut sources = SourceMap::new();
        let file = sources.add(&name, text);
        let program = sarek_compiler::check(&sources, file).unwrap_or_else(|d| {
            panic!(
                "{name} does not check:\n{}",
                render_all(&d, &sources, false)
            )
        });
        for k in &program.kernels {
            let ir = sarek_compiler::lower_kernel(&program, &k.name).unwrap_or_else(|d| {
                panic!(
                    "{} does not lower:\n{}",
                    k.name,
                    render_all(&d, &sources, false)
                )
            });
            match sarek_compiler::generate(&ir, Target::Wgsl, options) {
                Ok(g) => {
                    generated += 1;
                    if let Err(e) = naga_validate(&g.source) {
                        panic!(
                            "{name}: kernel `{}`: naga rejects the WGSL:\n{e}\n{}",
                            k.name, g.source
                        );
                    }
                }
                Err(diags) => {
                    refused += 1;
                    let text = render_all(&diags, &sources, false);
                    for d in &diags {
                        assert!(
                            !d.span.is_dummy(),
                            "{name}: `{}`: refusal without a location:\n{text}",
                            k.name
                        );
                        assert!(
                            d.message.contains("WGSL"),
                            "{name}: `{}`: refusal not naming WGSL:\n{text}",
                            k.name
                        );
                    }
                    eprintln!(
                        "refused (expected for WGSL): {name} `{}`: {}",
                        k.name, diags[0].message
                    );
                }
            }
        }
    }
    (generated, refused)
}

/// Every WGSL file under `tests/out/wgsl` (the corpus and the hand-built kernels, as
/// generated: the `outputs` test keeps them equal) validates with naga.
#[test]
fn wgsl_files_validate_with_naga() {
    let files = outputs::files(Target::Wgsl);
    let mut failures = Vec::new();
    for path in &files {
        let source = std::fs::read_to_string(path).unwrap();
        if let Err(e) = naga_validate(&source) {
            failures.push(format!("{}: naga rejects the WGSL:\n{e}", path.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!("naga validated {} WGSL files", files.len());
}

#[test]
fn corpus_without_subgroups() {
    let options = TargetOptions {
        subgroups: false,
        ..TargetOptions::default()
    };
    let (generated, _) = run_corpus(&options);
    assert!(generated > 0);
}

use sarek_testkit::ir_kernels::wgsl as wgsl_common;

#[test]
fn hand_built_abi_matches_naga_layout() {
    for kernel in wgsl_common::expressible() {
        let g = sarek_compiler::back::wgsl::generate(&kernel, &TargetOptions::default()).unwrap();
        abi_matches_naga_layout(&g)
            .unwrap_or_else(|e| panic!("kernel `{}`: {e}\n{}", kernel.name, g.source));
    }
}
