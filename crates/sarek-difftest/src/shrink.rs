//! Shrinking a failing kernel: greedy reduction of its tree while the same column keeps
//! failing the same way.
//!
//! Each step tries the tree's reductions ([`Node::reductions`], largest first) and keeps the
//! first one that still fails; a candidate the front end refuses or the interpreter faults on
//! is simply not taken. It stops when no reduction fails, or at the attempt or time budget
//! (the result is then smaller, if not minimal).

use crate::exec::Launch;
use crate::generator::Case;
use crate::runner::{Column, FailureKind, Harness, Outcome};
use crate::tree::Node;
use std::time::{Duration, Instant};

pub struct Budget {
    pub attempts: usize,
    pub time: Duration,
}

pub struct Shrunk {
    pub case: Case,
    pub message: String,
    pub attempts: usize,
    pub steps: usize,
}

/// Whether `case` still fails `col` with `kind`; the failure's message if so.
pub fn fails(h: &Harness, case: &Case, col: Column, kind: &FailureKind) -> Option<String> {
    let launch = launch_of(case);
    let r = h.run(&case.source(), &case.kernel, &launch, Some(col));
    if r.broken.is_some() {
        return None;
    }
    r.outcomes.iter().find_map(|(c, o)| match o {
        Outcome::Failed(f) if *c == col && &f.kind == kind => Some(f.message.clone()),
        _ => None,
    })
}

pub fn launch_of(case: &Case) -> Launch {
    Launch {
        size: case.size,
        block: [case.block, 1, 1],
        grid: [case.grid, 1, 1],
        seed: case.seed,
        args: case.live_args(),
    }
}

pub fn shrink(
    h: &Harness,
    case: &Case,
    col: Column,
    kind: &FailureKind,
    message: &str,
    budget: &Budget,
) -> Shrunk {
    shrink_with(case, message, budget, |trial| fails(h, trial, col, kind))
}

/// Greedy reduction of `case` while `still_fails` returns the failure's message.
pub fn shrink_with(
    case: &Case,
    message: &str,
    budget: &Budget,
    mut still_fails: impl FnMut(&Case) -> Option<String>,
) -> Shrunk {
    let start = Instant::now();
    let mut best = case.clone();
    let mut best_message = message.to_string();
    let mut attempts = 0;
    let mut steps = 0;
    'outer: loop {
        let mut progressed = false;
        for candidate in best.tree.reductions() {
            if attempts >= budget.attempts || start.elapsed() >= budget.time {
                break 'outer;
            }
            if !smaller(&candidate, &best.tree) {
                continue;
            }
            attempts += 1;
            let trial = Case {
                tree: candidate,
                ..best.clone()
            };
            if let Some(m) = still_fails(&trial) {
                best = trial;
                best_message = m;
                steps += 1;
                progressed = true;
                break;
            }
        }
        if !progressed {
            break;
        }
    }
    Shrunk {
        case: best,
        message: best_message,
        attempts,
        steps,
    }
}

/// Strictly smaller: fewer nodes, or as many with shorter text.
fn smaller(a: &Node, b: &Node) -> bool {
    let (sa, sb) = (a.size(), b.size());
    sa < sb || (sa == sb && a.print().len() < b.print().len())
}
