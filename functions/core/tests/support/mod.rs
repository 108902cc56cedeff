//! The decision-quality corpus (`events/corpus/`, written by `scripts/corpus.py`) as the corpus
//! and map tests read it: one case per file, decided the way the worker decides.

#![allow(dead_code)] // each test binary uses part of it

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use medic_core::app::strip_nulls;
use medic_core::{Action, Application, Attempt, Decision, DecisionPolicy, History, PolicyConfig, Trigger};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub id: String,
    pub class: String,
    pub why: String,
    pub trigger: Trigger,
    pub now: DateTime<Utc>,
    pub accept: Vec<Action>,
    #[serde(rename = "unsafe")]
    pub unsafe_actions: Vec<Action>,
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub near_miss_of: Option<String>,
    #[serde(default)]
    pub argocd_version: Option<String>,
    #[serde(default)]
    pub config: Option<serde_json::Value>,
    #[serde(default)]
    pub history: Option<CaseHistory>,
    /// The rows of the map (`medic_core::app_map`) the case was drawn from (`field spec.project`).
    #[serde(default)]
    pub map_rows: Vec<String>,
    /// Why the policy gets this case wrong today: the case was committed before the fix, and the
    /// mark leaves with the commit that fixes it (a marked case that passes fails the test).
    #[serde(default)]
    pub known_failing: Option<String>,
    /// The actions accepted on each Argo CD profile (`medic_core::versions::PROFILES`), for a case
    /// whose right answer depends on the version it is served by.
    #[serde(default)]
    pub by_profile: std::collections::BTreeMap<String, Vec<Action>>,
    pub app: serde_json::Value,
}

impl Case {
    /// `<class>/<id>`, as the map's flips name a case.
    pub fn key(&self) -> String {
        format!("{}/{}", self.class, self.id)
    }
}

/// A history whose incident is the one the policy derives from the app (`derive_incident`), so a
/// case does not have to spell out incident keys.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseHistory {
    pub derive_incident: bool,
    pub attempts: Vec<Attempt>,
}

pub fn corpus_dir() -> PathBuf {
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

/// Every case, in file order.
pub fn cases() -> Vec<Case> {
    case_files(&corpus_dir())
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .collect()
}

/// The Application of `app` (a case's, or a flipped copy of it).
pub fn application(case: &Case, app: &serde_json::Value) -> Application {
    let mut raw = app.clone();
    strip_nulls(&mut raw);
    serde_json::from_value(raw).unwrap_or_else(|e| panic!("{}: app: {e}", case.key()))
}

/// The case's configuration over the defaults, with the Argo CD version the app is served by.
pub fn config_of(case: &Case) -> PolicyConfig {
    let mut config: PolicyConfig = match &case.config {
        Some(c) => serde_json::from_value(c.clone()).unwrap_or_else(|e| panic!("{}: config: {e}", case.id)),
        None => PolicyConfig::default(),
    };
    config.argocd_version = case.argocd_version.clone();
    config
}

/// The decision on `app` (the case's own, or a flipped copy) with the case's trigger, time,
/// configuration and history.
pub fn decide(case: &Case, app: &serde_json::Value) -> Decision {
    let app = application(case, app);
    let policy = DecisionPolicy::new(config_of(case));
    let history = match &case.history {
        None => History::default(),
        Some(h) => {
            let fresh = policy.decide(&app, &case.trigger, &History::default(), case.now).unwrap();
            History { incident: fresh.incident.filter(|_| h.derive_incident), attempts: h.attempts.clone() }
        }
    };
    policy.decide(&app, &case.trigger, &history, case.now).unwrap_or_else(|e| panic!("{}: {e}", case.id))
}
