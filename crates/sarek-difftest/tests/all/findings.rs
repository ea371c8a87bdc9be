//! Every fixed finding (`findings/fixed/*.sarek`, each `@run` directive of it) passes
//! every available validator and agrees with `interp` on every available backend; a missing
//! backend named by `SAREK_REQUIRE_BACKENDS` fails.

use sarek_difftest::exec;
use sarek_difftest::runner::{Harness, Outcome};
use sarek_difftest::validate::TARGETS;
use std::path::Path;

#[test]
fn fixed_findings_agree_everywhere() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("findings/fixed");
    let harness = Harness::new(&exec::all_backends(), &TARGETS).expect("interp");
    for (b, d) in &harness.devices {
        if let Err(why) = d {
            sarek_testkit::backends::unavailable(exec::backend_name(*b), &why.to_string());
        }
    }
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("findings/fixed")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sarek"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "the fixed findings are missing");
    let mut problems = Vec::new();
    for f in &files {
        let source = std::fs::read_to_string(f).unwrap();
        for (kernel, launch) in exec::directives(&source, 1).unwrap() {
            let r = harness.run(&source, &kernel, &launch, None);
            if let Some(b) = &r.broken {
                problems.push(format!("{}: `{kernel}`: broken: {b:?}", f.display()));
            }
            for (c, o) in &r.outcomes {
                if let Outcome::Failed(x) = o {
                    problems.push(format!(
                        "{}: `{kernel}` block {:?}: {}: {:?}: {}",
                        f.display(),
                        launch.block,
                        c.label(),
                        x.kind,
                        x.message
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}
