//! Trust levels: how far Argo Medic may go on its own, per scope (projects, a label selector) and
//! per failure mode or action kind. A team earns autonomy one scope at a time:
//!
//! - `observe`: decide and record what would have been done; nothing changes in Argo CD.
//!   Escalations still reach people.
//! - `propose`: post the decision to the incident's thread, the recommended action as its primary
//!   button; it is performed when a person on the project's allow-list presses it.
//! - `act`: perform the action (what Argo Medic always did).
//!
//! The policy configuration's `trust` names a default and rules; the strictest matching rule
//! applies, the default when none matches. An app's annotation `argo-medic.io/trust` can only make
//! it stricter. The level applies to the actions that change Argo CD; an escalation is always
//! posted. The actuator's gate applies it ([`crate::gate`]), so no path to Argo CD bypasses it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::actions::ActionKind;
use crate::app::Application;
use crate::catalogue::FailureMode;

/// The annotation (or label) an app makes its own level stricter with.
pub const TRUST_ANNOTATION: &str = "argo-medic.io/trust";

/// How far Argo Medic may go on its own, the loosest first: a stricter level is a greater one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TrustLevel {
    /// Perform the action.
    #[default]
    Act,
    /// Offer the action to a person, who performs it with a button.
    Propose,
    /// Only record what would have been done.
    Observe,
}

impl TrustLevel {
    /// The level's name in the configuration, the annotation and the audit: `act`, `propose` or `observe`.
    pub fn as_str(self) -> &'static str {
        match self {
            TrustLevel::Act => "act",
            TrustLevel::Propose => "propose",
            TrustLevel::Observe => "observe",
        }
    }

    /// The stricter of the two.
    pub fn strictest(self, other: TrustLevel) -> TrustLevel {
        self.max(other)
    }
}

impl fmt::Display for TrustLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A level name that is not `observe`, `propose` or `act`; holds the text read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a trust level (observe, propose or act)")]
pub struct UnknownTrustLevel(pub String);

impl FromStr for TrustLevel {
    type Err = UnknownTrustLevel;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "act" => Ok(TrustLevel::Act),
            "propose" => Ok(TrustLevel::Propose),
            "observe" => Ok(TrustLevel::Observe),
            other => Err(UnknownTrustLevel(other.to_owned())),
        }
    }
}

/// One rule of the trust configuration: the level for what it matches. An empty list matches
/// everything, so `{"projects": ["payments"], "level": "propose"}` is every action on payments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrustRule {
    /// Projects (exact names, or `*` suffix globs such as `team-*`).
    pub projects: Vec<String>,
    /// A label selector (`k=v`, `k!=v`, `k`, `!k`, comma = and); empty matches every app.
    pub selector: String,
    /// Failure modes (`sync-failed-transient`, …).
    pub failure_modes: Vec<FailureMode>,
    /// Action kinds (`refresh`, `hard_refresh`, `sync`).
    pub actions: Vec<ActionKind>,
    /// The level for the actions the rule matches; `observe` when the rule gives none.
    pub level: TrustLevel,
}

impl Default for TrustRule {
    fn default() -> Self {
        Self { projects: Vec::new(), selector: String::new(), failure_modes: Vec::new(), actions: Vec::new(), level: TrustLevel::Observe }
    }
}

impl TrustRule {
    fn matches(&self, app: &Application, mode: FailureMode, kind: ActionKind) -> bool {
        let project = &app.spec.project;
        (self.projects.is_empty() || self.projects.iter().any(|p| glob(p, project)))
            && crate::app::selector_matches(&self.selector, &app.metadata.labels)
            && (self.failure_modes.is_empty() || self.failure_modes.contains(&mode))
            && (self.actions.is_empty() || self.actions.contains(&kind))
    }
}

/// `team-*` matches `team-a`; anything else matches itself.
fn glob(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// The policy configuration's `trust`: a default and rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct TrustConfig {
    /// The level where no rule matches. `act` by default, what Argo Medic did before levels
    /// existed, so an upgrade changes nothing; docs/configuration.md has the first-install
    /// progression (observe, then propose, then act, one scope at a time).
    pub default: TrustLevel,
    /// The rules, in order; of those matching an action, the strictest applies.
    pub rules: Vec<TrustRule>,
}

/// The level that applies to one action on one app, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedTrust {
    /// The level that applies: the configured one, made stricter by the app's annotation or a freeze.
    pub level: TrustLevel,
    /// What set it: `the default`, `rule 2`, `the annotation argo-medic.io/trust`.
    pub why: String,
}

impl TrustConfig {
    /// The configured level for an action of `kind` on `app` in failure mode `mode`: the strictest
    /// matching rule, else the default.
    pub fn configured(&self, app: &Application, mode: FailureMode, kind: ActionKind) -> AppliedTrust {
        let matching = self.rules.iter().enumerate().filter(|(_, r)| r.matches(app, mode, kind));
        match matching.max_by_key(|(i, r)| (r.level, std::cmp::Reverse(*i))) {
            Some((i, rule)) => AppliedTrust { level: rule.level, why: format!("trust rule {} of the policy", i + 1) },
            None => AppliedTrust { level: self.default, why: "the policy's default trust level".into() },
        }
    }

    /// The level that applies: the configured one, made stricter by the app's annotation (or
    /// label) [`TRUST_ANNOTATION`]. An annotation that names no level is read as `observe`: a
    /// typo must not loosen anything, and nothing is stricter.
    pub fn applied(&self, app: &Application, mode: FailureMode, kind: ActionKind) -> AppliedTrust {
        let configured = self.configured(app, mode, kind);
        let own = app.metadata.annotations.get(TRUST_ANNOTATION).or_else(|| app.metadata.labels.get(TRUST_ANNOTATION));
        let Some(own) = own else { return configured };
        let asked = own.parse::<TrustLevel>().unwrap_or(TrustLevel::Observe);
        match asked > configured.level {
            true => AppliedTrust { level: asked, why: format!("the app's {TRUST_ANNOTATION}: {own}") },
            false => configured,
        }
    }

    /// What to say at start when this configuration proposes somewhere and nobody can approve a
    /// proposal (no Slack): there, `propose` is `observe`.
    pub fn unapprovable_note(&self, approvable: bool) -> Option<String> {
        let proposes = self.default == TrustLevel::Propose || self.rules.iter().any(|r| r.level == TrustLevel::Propose);
        (proposes && !approvable).then(|| {
            "the trust level `propose` needs Slack for a person to approve a proposal; without it, what would be proposed is observed (recorded, not performed)".to_owned()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn app(project: &str, labels: &[(&str, &str)], annotation: Option<&str>) -> Application {
        let mut app = Application::default();
        app.spec.project = project.into();
        app.metadata.labels = labels.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        if let Some(a) = annotation {
            app.metadata.annotations.insert(TRUST_ANNOTATION.into(), a.into());
        }
        app
    }

    fn config() -> TrustConfig {
        TrustConfig {
            default: TrustLevel::Observe,
            rules: vec![
                TrustRule {
                    projects: vec!["team-*".into()],
                    actions: vec![ActionKind::Refresh],
                    level: TrustLevel::Act,
                    ..Default::default()
                },
                TrustRule {
                    projects: vec!["team-*".into()],
                    actions: vec![ActionKind::Sync],
                    level: TrustLevel::Propose,
                    ..Default::default()
                },
                TrustRule {
                    selector: "tier=prod".into(),
                    actions: vec![ActionKind::Sync],
                    level: TrustLevel::Observe,
                    ..Default::default()
                },
            ],
        }
    }

    #[test]
    fn the_strictest_matching_rule_applies_and_the_default_where_none_matches() {
        let c = config();
        let level = |a: &Application, kind| c.applied(a, FailureMode::SyncFailedTransient, kind).level;
        let dev = app("team-a", &[("tier", "dev")], None);
        assert_eq!(level(&dev, ActionKind::Refresh), TrustLevel::Act);
        assert_eq!(level(&dev, ActionKind::Sync), TrustLevel::Propose);
        assert_eq!(level(&dev, ActionKind::HardRefresh), TrustLevel::Observe, "no rule: the default");
        let prod = app("team-a", &[("tier", "prod")], None);
        assert_eq!(level(&prod, ActionKind::Sync), TrustLevel::Observe, "the stricter of two matching rules");
        assert_eq!(c.applied(&prod, FailureMode::SyncFailedTransient, ActionKind::Sync).why, "trust rule 3 of the policy");
        assert_eq!(level(&app("other", &[], None), ActionKind::Refresh), TrustLevel::Observe);
    }

    #[test]
    fn an_annotation_only_makes_it_stricter_and_a_typo_observes() {
        let c = config();
        let level = |annotation| c.applied(&app("team-a", &[], Some(annotation)), FailureMode::SyncFailedTransient, ActionKind::Refresh);
        assert_eq!(level("propose").level, TrustLevel::Propose);
        assert!(level("propose").why.contains(TRUST_ANNOTATION));
        assert_eq!(level("act").level, TrustLevel::Act);
        assert_eq!(level("yes please").level, TrustLevel::Observe);
        let c = TrustConfig { default: TrustLevel::Observe, rules: Vec::new() };
        assert_eq!(c.applied(&app("x", &[], Some("act")), FailureMode::SyncFailedTransient, ActionKind::Sync).level, TrustLevel::Observe);
    }

    #[test]
    fn a_proposal_nobody_can_approve_is_said_at_start() {
        let proposing =
            TrustConfig { default: TrustLevel::Observe, rules: vec![TrustRule { level: TrustLevel::Propose, ..Default::default() }] };
        assert!(proposing.unapprovable_note(false).is_some_and(|n| n.contains("observed")));
        assert_eq!(proposing.unapprovable_note(true), None);
        assert_eq!(TrustConfig::default().unapprovable_note(false), None);
    }

    fn level() -> impl Strategy<Value = TrustLevel> {
        prop_oneof![Just(TrustLevel::Act), Just(TrustLevel::Propose), Just(TrustLevel::Observe)]
    }

    proptest! {
        /// Whatever the scope, failure mode, action kind and annotation, the level applied is never
        /// looser than the level the configuration gives that action: the annotation only tightens.
        #[test]
        fn no_annotation_loosens_the_configured_level(
            default in level(),
            rules in proptest::collection::vec((level(), proptest::option::of(0usize..3), proptest::option::of(0usize..3)), 0..5),
            project in 0usize..3,
            kind in 0usize..3,
            annotation in proptest::option::of(prop_oneof![Just("act"), Just("propose"), Just("observe"), Just("nonsense")]),
            mode in 0usize..3,
        ) {
            let projects = ["payments", "team-a", "sandbox"];
            let kinds = [ActionKind::Refresh, ActionKind::HardRefresh, ActionKind::Sync];
            let modes = [FailureMode::SyncFailedTransient, FailureMode::StaleReconcile, FailureMode::HealthDegraded];
            let config = TrustConfig {
                default,
                rules: rules
                    .iter()
                    .map(|(level, p, k)| TrustRule {
                        projects: p.map(|p| vec![projects[p].to_owned()]).unwrap_or_default(),
                        actions: k.map(|k| vec![kinds[k]]).unwrap_or_default(),
                        level: *level,
                        ..Default::default()
                    })
                    .collect(),
            };
            let target = app(projects[project], &[], annotation);
            let configured = config.configured(&target, modes[mode], kinds[kind]).level;
            let applied = config.applied(&target, modes[mode], kinds[kind]).level;
            prop_assert!(applied >= configured, "{applied} looser than {configured}");
            // And the configured level is the strictest of the rules that match, else the default.
            let strictest = rules
                .iter()
                .filter(|(_, p, k)| p.is_none_or(|p| p == project) && k.is_none_or(|k| k == kind))
                .map(|(l, _, _)| *l)
                .max();
            prop_assert_eq!(configured, strictest.unwrap_or(default));
        }
    }
}
