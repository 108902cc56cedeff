//! Decision quality on real-world Application states: grades the policy on the public regression
//! corpus in `events/corpus/` (written by `scripts/corpus.py`, every case sourced) and prints the
//! agreement per class and overall.
//!
//! A decision agrees when its action is one the case accepts. It is unsafe when its action is one
//! the case lists as unsafe: a sync nobody asked for or after hooks ran, `none` where a human is
//! needed, any action on an app at prune risk. The bar: at least [`MIN_AGREEMENT`] overall and no
//! unsafe decision.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use medic_core::app::strip_nulls;
use medic_core::{Action, Application, Attempt, DecisionPolicy, FailureMode, History, PolicyConfig, Trigger};
use serde::Deserialize;

/// The share of cases the policy must agree with.
const MIN_AGREEMENT: f64 = 0.95;
/// The classes of issue 9, each of which needs cases and a near-miss pair.
const CLASSES: &[&str] = &["hooks", "appset", "kind-not-found", "transient", "rate-limit", "staleness", "conflicts", "custom-health"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    id: String,
    class: String,
    why: String,
    trigger: Trigger,
    now: DateTime<Utc>,
    accept: Vec<Action>,
    #[serde(rename = "unsafe")]
    unsafe_actions: Vec<Action>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    near_miss_of: Option<String>,
    #[serde(default)]
    argocd_version: Option<String>,
    #[serde(default)]
    config: Option<serde_json::Value>,
    #[serde(default)]
    history: Option<CaseHistory>,
    app: serde_json::Value,
}

/// A history whose incident is the one the policy derives from the app (`derive_incident`), so a
/// case does not have to spell out incident keys.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseHistory {
    derive_incident: bool,
    attempts: Vec<Attempt>,
}

fn corpus_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test"))
        .join("../../events/corpus")
}

fn case_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(case_files(&path));
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
    out.sort();
    out
}

fn load() -> Vec<(Case, Application, PolicyConfig)> {
    case_files(&corpus_dir())
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let case: Case = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let mut raw = case.app.clone();
            strip_nulls(&mut raw);
            let app: Application = serde_json::from_value(raw).unwrap_or_else(|e| panic!("{}: app: {e}", case.id));
            let config = config_of(&case);
            (case, app, config)
        })
        .collect()
}

/// The case's configuration over the defaults, with the Argo CD version the app is served by.
fn config_of(case: &Case) -> PolicyConfig {
    let mut config: PolicyConfig = match &case.config {
        Some(c) => serde_json::from_value(c.clone()).unwrap_or_else(|e| panic!("{}: config: {e}", case.id)),
        None => PolicyConfig::default(),
    };
    config.argocd_version = case.argocd_version.clone();
    config
}

struct Graded {
    class: String,
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
    load()
        .into_iter()
        .map(|(case, app, config)| {
            let policy = DecisionPolicy::new(config);
            let history = match &case.history {
                None => History::default(),
                Some(h) => {
                    let fresh = policy.decide(&app, &case.trigger, &History::default(), case.now).unwrap();
                    History { incident: fresh.incident.filter(|_| h.derive_incident), attempts: h.attempts.clone() }
                }
            };
            let d = policy.decide(&app, &case.trigger, &history, case.now).unwrap_or_else(|e| panic!("{}: {e}", case.id));
            Graded {
                agrees: case.accept.contains(&d.action),
                unsafe_: case.unsafe_actions.contains(&d.action),
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

#[test]
fn the_policy_agrees_with_the_corpus_and_makes_no_unsafe_decision() {
    let graded = grade();
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
    let wrong: Vec<String> = graded
        .iter()
        .filter(|g| !g.agrees || g.unsafe_)
        .map(|g| {
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
        })
        .collect();
    println!("{report}");
    for w in &wrong {
        println!("  {w}");
    }
    // The failure mode is not graded (the action is what matters), but a different name is worth
    // a look: it is what the escalation tells a human.
    for g in graded.iter().filter(|g| g.agrees) {
        if let Some((named, got)) = &g.other_mode {
            println!("  mode {}/{}: the case names {named}, the policy {got}", g.class, g.id);
        }
    }
    let share = agree as f64 / total as f64;
    assert!(
        share >= MIN_AGREEMENT && unsafe_n == 0,
        "agreement {:.1}% (bar {:.0}%), {unsafe_n} unsafe\n{report}\n  {}",
        100.0 * share,
        100.0 * MIN_AGREEMENT,
        wrong.join("\n  ")
    );
}

#[test]
fn the_corpus_is_big_sourced_and_covers_every_class_with_a_near_miss_pair() {
    let cases = load();
    assert!(cases.len() >= 100, "{} cases", cases.len());
    for (case, app, _) in &cases {
        assert!(case.why.len() > 20, "{}: a why that names its evidence", case.id);
        assert!(!case.accept.is_empty(), "{}", case.id);
        assert!(case.accept.iter().all(|a| !case.unsafe_actions.contains(a)), "{}: accepts an unsafe action", case.id);
        assert_eq!(app.incompleteness(), None, "{}", case.id);
        if let Some(mode) = &case.mode {
            assert!(mode.parse::<FailureMode>().is_ok(), "{}: unknown failure mode {mode}", case.id);
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
