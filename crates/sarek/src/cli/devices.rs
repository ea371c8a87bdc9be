//! `sarek devices`: every backend, available (with its device) or not (with the reason), and
//! which one runs by default.

use super::CmdResult;
use sarek_runtime::discover;
use std::process::ExitCode;

pub fn run() -> CmdResult {
    let all = discover::available();
    for (backend, r) in &all {
        match r {
            Ok(info) => {
                let mut extras = vec![format!("max {} threads/block", info.max_threads_per_block)];
                if info.float64 {
                    extras.push("float64".into());
                }
                if info.subgroups {
                    extras.push("subgroups".into());
                }
                if discover::is_software(info) {
                    extras.push("software".into());
                }
                println!(
                    "{:<8} available    {} ({})",
                    backend.name(),
                    info.name,
                    extras.join(", ")
                );
            }
            Err(reason) => println!("{:<8} unavailable  {reason}", backend.name()),
        }
    }
    // The same rule as `discover::default_device`, read off the list instead of reopening.
    let best = discover::PREFERENCE
        .iter()
        .chain(&[sarek::Backend::Cpu, sarek::Backend::Interp])
        .find_map(|b| {
            all.iter()
                .find(|(x, _)| x == b)
                .and_then(|(_, r)| r.as_ref().ok())
                .filter(|info| {
                    !discover::PREFERENCE.contains(&info.backend) || !discover::is_software(info)
                })
        });
    match (discover::env_backend(), best) {
        // The variable is obeyed, but a backend it names may not be available here.
        (Ok(Some(b)), _) => match all.iter().find(|(x, _)| *x == b) {
            Some((_, Err(reason))) => {
                println!("default: {b} (from SAREK_BACKEND), unavailable: {reason}")
            }
            _ => println!("default: {b} (from SAREK_BACKEND)"),
        },
        (Ok(None), Some(info)) => println!("default: {} ({})", info.backend, info.name),
        (Ok(None), None) => println!("default: none (no backend is available)"),
        (Err(e), _) => println!("default: none ({e})"),
    }
    Ok(ExitCode::SUCCESS)
}
