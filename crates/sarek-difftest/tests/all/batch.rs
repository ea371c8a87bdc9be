//! Batched validation (`Validators::check_many`) gives every source its own verdict: a batch
//! of generated kernels with one broken source is accepted for the others and rejected for
//! that one, exactly as checking each alone, on every target whose validator is installed.

use sarek_difftest::exec;
use sarek_difftest::exec::Target;
use sarek_difftest::generator::{Options, generate};
use sarek_difftest::validate::{TARGETS, Validators, Verdict, batch_program, ptx_batch};

#[test]
fn a_batch_gives_each_source_its_own_verdict() {
    let validators = Validators::find();
    let options = Options {
        wide: false,
        warps: true,
        constant_ops: false,
    };
    let lowered: Vec<exec::Lowered> = (300..306u64)
        .map(|seed| {
            let case = generate(seed, &options);
            exec::lower("gen.sarek", &case.source(), &case.kernel).expect("a generated kernel")
        })
        .collect();
    let mut checked = 0;
    for t in TARGETS {
        if let Some(why) = validators.unavailable(t) {
            eprintln!("skipping {}: {why}", t.name());
            continue;
        }
        let mut sources: Vec<String> = lowered
            .iter()
            .filter_map(|l| exec::generate(l, t).ok())
            .collect();
        if sources.len() < 3 {
            continue;
        }
        sources[1].push_str("\nthis is not a declaration of any target\n");
        let refs: Vec<&str> = sources.iter().map(String::as_str).collect();
        let verdicts = validators.check_many(t, &refs);
        assert_eq!(verdicts.len(), sources.len());
        for (k, v) in verdicts.iter().enumerate() {
            match (k, v) {
                (1, Verdict::Rejected(_)) => {}
                (1, Verdict::Accepted) => panic!("{}: the broken source was accepted", t.name()),
                (_, Verdict::Accepted) => {}
                (_, Verdict::Rejected(m)) => panic!("{}: source {k} rejected:\n{m}", t.name()),
            }
        }
        // Without the broken one, the joined program (where the target has one) is accepted
        // as a whole: one tool call for the batch.
        let good: Vec<&str> = refs
            .iter()
            .enumerate()
            .filter(|(k, _)| *k != 1)
            .map(|(_, s)| *s)
            .collect();
        if matches!(
            t,
            Target::Cuda | Target::Metal | Target::Ptx | Target::OpenCl
        ) {
            let program = batch_program(t, &good).expect("generated sources join");
            if let Verdict::Rejected(m) = validators.check(t, &program) {
                panic!("{}: the joined program is rejected:\n{m}", t.name());
            }
        }
        checked += 1;
    }
    eprintln!("{checked} targets checked in batches");
}

#[test]
fn ptx_modules_join_with_their_names_made_distinct() {
    let module = |entry: &str| {
        format!(
            ".version 8.0\n.target sm_75\n.address_size 64\n\n\
             .shared .align 8 .b8 sarek_shared_1[64];\n\
             .visible .entry {entry}(\n    .param .u64 param_0\n)\n{{\n    \
             mov.u64 %rd0, sarek_shared_1;\n    mov.u64 %rd1, sarek_shared_10;\n    ret;\n}}\n"
        )
    };
    let (a, b) = (module("k"), module("k_1"));
    let joined = ptx_batch(&[&a, &b]).expect("two plain modules join");
    assert_eq!(joined.matches(".version").count(), 1);
    assert!(joined.contains(".visible .entry k_batch0("));
    assert!(joined.contains(".visible .entry k_1_batch1("));
    assert!(joined.contains("mov.u64 %rd0, sarek_shared_1_batch1;"));
    assert!(joined.contains("mov.u64 %rd1, sarek_shared_10_batch0;"));
    assert!(joined.contains(".b8 sarek_shared_1_batch0[64];"));
    // Module-scope functions (outlined helpers, software math routines) are renamed with
    // their calls, so two modules defining one routine join.
    let with_func = |m: &str| {
        m.replace(
            ".visible .entry",
            ".func (.param .f32 r) sarek_fmod_f32(.param .f32 a)\n{\n    ret;\n}\n\
             .func helper()\n{\n    ret;\n}\n.visible .entry",
        )
        .replace(
            "sarek_shared_10;\n",
            "sarek_shared_10;\n    call (r), sarek_fmod_f32, (a);\n    call helper, ();\n",
        )
    };
    let joined = ptx_batch(&[&with_func(&a), &with_func(&b)]).expect("modules with functions join");
    for j in 0..2 {
        assert!(joined.contains(&format!(".func (.param .f32 r) sarek_fmod_f32_batch{j}(")));
        assert!(joined.contains(&format!(".func helper_batch{j}()")));
        assert!(joined.contains(&format!("call (r), sarek_fmod_f32_batch{j}, (a);")));
        assert!(joined.contains(&format!("call helper_batch{j}, ();")));
    }
    // A module-scope variable could collide: such modules are checked alone.
    let with_global = a.replace(".visible .entry", ".global .u32 g;\n.visible .entry");
    assert!(ptx_batch(&[&with_global, &b]).is_none());
}
