//! Policy configuration: thresholds, scope and safety limits, with documented defaults.
//!
//! Every field has a default, so `{}` is a valid configuration and a file only names what it
//! changes. Durations are whole seconds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::app::Application;

/// What the decision policy may do, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// The Argo CD instance this deployment serves; part of every incident and idempotency key.
    pub instance_id: String,
    /// Projects in scope; empty means every project.
    pub projects: Vec<String>,
    /// Label selector in scope (`k=v`, `k!=v`, `k`, `!k`, comma = and); empty means every app.
    pub selector: String,
    /// Seconds without a `status.reconciledAt` update after which an app's status is stale. Argo CD
    /// reconciles every 180 s plus up to 60 s of jitter, so 15 minutes means several missed rounds.
    pub stale_reconcile_secs: i64,
    /// Seconds an app may stay Progressing after its last operation succeeded before it counts as
    /// stuck.
    pub progressing_timeout_secs: i64,
    /// Seconds a repo-server or Git error must persist before acting: Argo CD ignores repo errors for
    /// `controller.repo.error.grace.period.seconds` (180) and most apps recover by themselves after a
    /// repo-server restart.
    pub repo_error_grace_secs: i64,
    /// Seconds a running operation may take before it counts as stuck.
    pub operation_timeout_secs: i64,
    /// Seconds a deleting app may wait on finalizers before it counts as stuck.
    pub deletion_timeout_secs: i64,
    /// Seconds to wait before re-checking after a `wait` decision.
    pub recheck_secs: i64,
    /// Seconds after an action before its effect is judged; until then the policy waits.
    pub settle_secs: i64,
    /// Seconds to wait after Argo CD refused a sync (another operation was in progress, a sync
    /// window was closed) before trying that rung again under a fresh key.
    pub refused_wait_secs: i64,
    /// Most refusals of one rung in an incident; the next one escalates. With the wait above this
    /// bounds how long a refused incident stays open without a human: `(n + 1) × wait`.
    pub max_refusals: usize,
    /// Seconds an incident may wait with nothing for Argo Medic to do (a sync window holding the
    /// sync, a failure mode whose ladder is empty) before a person is told, counted from the
    /// episode's start. Past it the incident is escalated once (an acknowledgement, never a way
    /// around the window). Part of every ladder's time bound (`ladder_bound_secs`).
    pub max_wait_secs: i64,
    /// Most resources one automatic sync may prune.
    pub max_prune: usize,
    /// Kinds whose pruning always needs a human.
    pub protected_prune_kinds: Vec<String>,
    /// Most actions (refresh, hard refresh, sync) per incident before escalating.
    pub max_actions_per_incident: usize,
    /// Treat every app's hooks as safe to re-run. Off by default: a sync re-runs every hook, and
    /// hooks migrate databases. Per app, the annotation `argo-medic.io/hooks-idempotent: "true"`.
    pub hooks_idempotent: bool,
    /// Health check groups Argo CD ships (core and built-in groups); resources of other groups are
    /// custom resources whose health comes from a Lua check or none.
    pub builtin_health_groups: Vec<String>,
    /// The Argo CD version serving the apps (`GET /api/version`, e.g. `v3.2.0+66b2f30`); the client
    /// fills it in. Rules that depend on a version assume the oldest behaviour when it is unknown.
    pub argocd_version: Option<String>,
    /// JSON pointers (`/spec/syncPolicy`) that the ApplicationSets list in
    /// `ignoreApplicationDifferences`: a hand edit confined to them is not reverted, so it is not a
    /// conflict. The pointers live on the ApplicationSet, which the policy does not read.
    pub appset_ignored_fields: Vec<String>,
    /// Seconds a custom resource may report Progressing before a refresh is pointless and a human
    /// has to look, for kinds without an entry in `custom_health_bounds`.
    pub custom_health_bound_secs: i64,
    /// Per-kind bounds (`<group>/<Kind>` → seconds) for custom resources that normally take long
    /// (a Kafka cluster, a cloud database).
    pub custom_health_bounds: BTreeMap<String, i64>,
    /// Self-heal syncs in a row (`operation.sync.autoHealAttemptsCount`) after which the app is
    /// fighting another writer rather than drifting.
    pub self_heal_loop_attempts: i64,
    /// Retries of an operation that did not see a missing kind appear; after that many the kind's
    /// API is not served by the cluster, whatever a further retry would do.
    pub kind_not_found_retries: i64,
    /// How far Argo Medic may go on its own, per scope and failure mode or action kind
    /// ([`crate::trust`]): `act` everywhere unless configured.
    pub trust: crate::trust::TrustConfig,
    /// Where each project's incidents are told ([`crate::route`]): its team's Slack channel and
    /// whom to mention; the deployment's channel for the rest.
    pub routing: crate::route::RoutingConfig,
}

impl PolicyConfig {
    /// The time bound of every failure mode's ladder, in seconds: an incident that never heals is
    /// escalated at most this long after it opened, whatever Argo CD answers to each rung, when
    /// the app is looked at again as the policy asks (`wait`) or by the next sweep, each look
    /// arriving up to `look_delay_secs` late (the sweep interval, the queue's delay).
    ///
    /// The longest threshold read against the app's own timestamps (how long an operation, a
    /// deletion, a custom resource or a sync window may take before it counts), then every
    /// action settled and judged, every refusal waited out, and two looks to spare:
    /// `T + A × (settle + recheck + look) + R × (refused_wait + look) + 2 × (recheck + look)`.
    /// `functions/core/tests/liveness.rs` checks it over every sample app and any sequence of
    /// outcomes.
    pub fn ladder_bound_secs(&self, look_delay_secs: i64) -> i64 {
        let custom = self.custom_health_bounds.values().copied().max().unwrap_or(0).max(self.custom_health_bound_secs);
        let threshold = [
            self.stale_reconcile_secs,
            self.progressing_timeout_secs,
            self.repo_error_grace_secs,
            self.operation_timeout_secs,
            self.deletion_timeout_secs,
            self.max_wait_secs,
            custom,
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        let look = self.recheck_secs + look_delay_secs;
        threshold
            + self.max_actions_per_incident as i64 * (self.settle_secs + look)
            + self.max_refusals as i64 * (self.refused_wait_secs + look_delay_secs)
            + 2 * look
    }
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self {
            instance_id: "default".to_owned(),
            projects: Vec::new(),
            selector: String::new(),
            stale_reconcile_secs: 15 * 60,
            progressing_timeout_secs: 10 * 60,
            repo_error_grace_secs: 5 * 60,
            operation_timeout_secs: 30 * 60,
            deletion_timeout_secs: 15 * 60,
            recheck_secs: 5 * 60,
            settle_secs: 2 * 60,
            refused_wait_secs: 15 * 60,
            max_refusals: 3,
            max_wait_secs: 2 * 3600,
            max_prune: 5,
            // An Application or ApplicationSet pruned takes what it manages with it (the resources
            // finalizer cascades, argo-cd controller/appcontroller.go:1304): one resource, a whole app.
            protected_prune_kinds: [
                "Namespace",
                "CustomResourceDefinition",
                "PersistentVolumeClaim",
                "PersistentVolume",
                "Application",
                "ApplicationSet",
            ]
            .map(String::from)
            .to_vec(),
            max_actions_per_incident: 3,
            hooks_idempotent: false,
            builtin_health_groups: ["", "apps", "batch", "extensions", "networking.k8s.io", "policy", "autoscaling", "argoproj.io"]
                .map(String::from)
                .to_vec(),
            argocd_version: None,
            appset_ignored_fields: Vec::new(),
            custom_health_bound_secs: 60 * 60,
            custom_health_bounds: BTreeMap::new(),
            self_heal_loop_attempts: 5,
            kind_not_found_retries: 2,
            trust: crate::trust::TrustConfig::default(),
            routing: crate::route::RoutingConfig::default(),
        }
    }
}

impl PolicyConfig {
    /// True when the app is in the configured projects and matches the configured selector.
    pub fn in_scope(&self, app: &Application) -> bool {
        let project_ok = self.projects.is_empty() || self.projects.iter().any(|p| p == &app.spec.project);
        project_ok && selector_matches(&self.selector, &app.metadata.labels)
    }

    /// True when the configured Argo CD version is at least `major.minor`; false when unknown.
    pub fn argocd_at_least(&self, major: u64, minor: u64) -> bool {
        self.argocd_version.as_deref().and_then(parse_version).is_some_and(|v| v >= (major, minor))
    }

    /// How long a custom resource of `group`/`kind` may report Progressing.
    pub fn custom_health_bound(&self, group: &str, kind: &str) -> i64 {
        self.custom_health_bounds.get(&format!("{group}/{kind}")).copied().unwrap_or(self.custom_health_bound_secs)
    }
}

/// `(major, minor)` of an Argo CD version string (`v3.2.0+66b2f30`, `3.1.8`, `v2.14.11-rc1`).
pub fn parse_version(v: &str) -> Option<(u64, u64)> {
    let mut parts = v.trim().trim_start_matches('v').split(['.', '+', '-']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Label selectors are matched where the labels are ([`crate::app`]); the scope reads them here.
use crate::app::selector_matches;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn selector_supports_equality_inequality_and_existence() {
        let l = labels(&[("env", "prod"), ("team", "pay")]);
        assert!(selector_matches("", &l));
        assert!(selector_matches("env=prod", &l));
        assert!(selector_matches("env==prod, team", &l));
        assert!(!selector_matches("env=dev", &l));
        assert!(selector_matches("env!=dev", &l));
        assert!(!selector_matches("env!=prod", &l));
        assert!(selector_matches("!tier", &l));
        assert!(!selector_matches("!team", &l));
        assert!(!selector_matches("tier", &l));
    }

    #[test]
    fn versions_compare_by_major_and_minor_and_unknown_is_oldest() {
        let at = |v: Option<&str>| PolicyConfig { argocd_version: v.map(String::from), ..PolicyConfig::default() };
        assert!(at(Some("v3.2.0+66b2f30")).argocd_at_least(3, 2));
        assert!(at(Some("v3.10.1")).argocd_at_least(3, 2));
        assert!(!at(Some("v3.1.8+becb020")).argocd_at_least(3, 2));
        assert!(!at(Some("v2.14.11")).argocd_at_least(3, 2));
        assert!(!at(None).argocd_at_least(1, 0));
        assert!(!at(Some("unknown")).argocd_at_least(1, 0));
    }

    #[test]
    fn an_empty_config_file_means_the_defaults_and_unknown_keys_are_rejected() {
        let c: PolicyConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c, PolicyConfig::default());
        let err = serde_json::from_str::<PolicyConfig>(r#"{"max_prun": 3}"#).unwrap_err();
        assert!(err.to_string().contains("max_prun"), "{err}");
    }
}
