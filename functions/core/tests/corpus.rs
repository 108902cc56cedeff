//! Decision quality on real-world Application states: grades the policy on the public regression
//! corpus in `events/corpus/` (written by `scripts/corpus.py`, every case sourced) and prints the
//! agreement per class and overall.
//!
//! A decision agrees when its action is one the case accepts. It is unsafe when its action is one
//! the case lists as unsafe: a sync nobody asked for or after hooks ran, `none` where a human is
//! needed, any action on an app at prune risk. The bar: at least [`MIN_AGREEMENT`] overall and no
//! unsafe decision.

mod support;

use std::collections::BTreeMap;

use medic_core::{Action, FailureMode};
use support::{Case, application, cases, decide};

/// The share of cases the policy must agree with, in every class and overall.
const MIN_AGREEMENT: f64 = 0.95;
/// The classes of issue 9, each of which needs cases and a near-miss pair.
const CLASSES: &[&str] = &["hooks", "appset", "kind-not-found", "transient", "rate-limit", "staleness", "conflicts", "custom-health"];

struct Graded {
    class: String,
    known_failing: Option<String>,
    id: String,
    action: Action,
    agrees: bool,
    unsafe_: bool,
    accept: Vec<Action>,
    reason: String,
    rule: String,
    /// The failure mode the case names, when the policy named another.
    other_mode: Option<(String, FailureMode)>,
}

fn grade() -> Vec<Graded> {
    cases()
        .into_iter()
        .map(|case| {
            let d = decide(&case, &case.app);
            Graded {
                agrees: case.accept.contains(&d.action),
                unsafe_: case.unsafe_actions.contains(&d.action),
                known_failing: case.known_failing.clone(),
                class: case.class,
                id: case.id,
                action: d.action,
                accept: case.accept,
                reason: d.reason,
                rule: d.rule,
                other_mode: case.mode.filter(|m| *m != d.failure_mode.id()).map(|m| (m, d.failure_mode)),
            }
        })
        .collect()
}

/// The cases marked `known_failing` are graded apart: each must still be wrong (a marked case the
/// policy now gets right fails here, so the mark leaves in the commit that fixes it), and they do
/// not count towards the bar while marked.
#[test]
fn the_policy_agrees_with_the_corpus_and_makes_no_unsafe_decision() {
    let graded = grade();
    let (marked, graded): (Vec<Graded>, Vec<Graded>) = graded.into_iter().partition(|g| g.known_failing.is_some());
    let mut per_class: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    for g in &graded {
        let e = per_class.entry(g.class.as_str()).or_default();
        e.0 += 1;
        e.1 += usize::from(g.agrees);
        e.2 += usize::from(g.unsafe_);
    }
    let total = graded.len();
    let agree = graded.iter().filter(|g| g.agrees).count();
    let unsafe_n = graded.iter().filter(|g| g.unsafe_).count();
    let mut report = String::from("class            cases  agree      unsafe\n");
    for (class, (n, a, u)) in &per_class {
        report += &format!("{class:<16} {n:>5}  {a:>3} {:>5.1}%  {u:>3}\n", 100.0 * *a as f64 / *n as f64);
    }
    report += &format!("{:<16} {total:>5}  {agree:>3} {:>5.1}%  {unsafe_n:>3}\n", "overall", 100.0 * agree as f64 / total as f64);
    report += &format!("known failing    {:>5}  (not graded while marked)\n", marked.len());
    let describe = |g: &Graded| {
        let accepted: Vec<_> = g.accept.iter().map(|a| a.as_str()).collect();
        format!(
            "{}{}/{}: {} (accepted {}) by {}\n      {}",
            if g.unsafe_ { "UNSAFE " } else { "" },
            g.class,
            g.id,
            g.action,
            accepted.join("|"),
            g.rule,
            g.reason
        )
    };
    let wrong: Vec<String> = graded.iter().filter(|g| !g.agrees || g.unsafe_).map(describe).collect();
    println!("{report}");
    for w in &wrong {
        println!("  {w}");
    }
    for g in &marked {
        println!("  known failing {}", describe(g));
    }
    // The failure mode is not graded (the action is what matters), but a different name is worth
    // a look: it is what the escalation tells a human.
    for g in graded.iter().filter(|g| g.agrees) {
        if let Some((named, got)) = &g.other_mode {
            println!("  mode {}/{}: the case names {named}, the policy {got}", g.class, g.id);
        }
    }
    let fixed: Vec<String> =
        marked.iter().filter(|g| g.agrees && !g.unsafe_).map(|g| format!("{}/{} ({})", g.class, g.id, g.action)).collect();
    assert!(
        fixed.is_empty(),
        "marked known_failing but the policy now agrees; remove the mark in the commit that fixed it: {}",
        fixed.join(", ")
    );
    let below: Vec<String> = per_class
        .iter()
        .filter(|(_, (n, a, u))| (*a as f64) < MIN_AGREEMENT * *n as f64 || *u > 0)
        .map(|(class, _)| (*class).to_owned())
        .collect();
    let share = agree as f64 / total as f64;
    assert!(
        share >= MIN_AGREEMENT && unsafe_n == 0 && below.is_empty(),
        "agreement {:.1}% (bar {:.0}% overall and in every class; below it or unsafe: {}), {unsafe_n} unsafe\n{report}\n  {}",
        100.0 * share,
        100.0 * MIN_AGREEMENT,
        below.join(", "),
        wrong.join("\n  ")
    );
}

#[test]
fn the_corpus_is_big_sourced_and_covers_every_class_with_a_near_miss_pair() {
    let cases: Vec<(Case, medic_core::Application, ())> = cases()
        .into_iter()
        .map(|c| {
            let app = application(&c, &c.app);
            (c, app, ())
        })
        .collect();
    assert!(cases.len() >= 100, "{} cases", cases.len());
    for (case, app, _) in &cases {
        assert!(case.why.len() > 20, "{}: a why that names its evidence", case.id);
        assert!(!case.accept.is_empty(), "{}", case.id);
        assert!(case.accept.iter().all(|a| !case.unsafe_actions.contains(a)), "{}: accepts an unsafe action", case.id);
        assert_eq!(app.incompleteness(), None, "{}", case.id);
        if let Some(mode) = &case.mode {
            assert!(mode.parse::<FailureMode>().is_ok(), "{}: unknown failure mode {mode}", case.id);
        }
        if let Some(why) = &case.known_failing {
            assert!(why.len() > 20, "{}: a known_failing mark says what is wrong", case.id);
        }
    }
    let ids: Vec<&str> = cases.iter().map(|(c, _, _)| c.id.as_str()).collect();
    for class in CLASSES {
        let in_class: Vec<_> = cases.iter().filter(|(c, _, _)| c.class == *class).collect();
        assert!(in_class.len() >= 5, "class {class} has {} cases", in_class.len());
        let pair = in_class.iter().find_map(|(c, _, _)| c.near_miss_of.as_deref());
        let pair = pair.unwrap_or_else(|| panic!("class {class} has no near-miss pair"));
        assert!(ids.contains(&pair), "{class}: near miss of unknown case {pair}");
    }
    for (case, _, _) in &cases {
        if let Some(other) = &case.near_miss_of {
            let twin = cases.iter().find(|(c, _, _)| &c.id == other).unwrap_or_else(|| panic!("{}: no case {other}", case.id));
            assert_ne!(twin.0.accept, case.accept, "{} and its near miss {other} accept the same", case.id);
        }
    }
}
