//! The sweep plan: which apps of a fleet to look at, from a field-masked list and the open
//! incidents. Pure, and the only sweep algorithm: `medic sweep` runs the per-app step on what
//! [`plan`] returns, the sweeper function enqueues it.
//!
//! The list is masked so a sweep over thousands of apps stays small; a masked item is only good for
//! choosing candidates, never for deciding (the policy refuses partial objects).

use std::collections::BTreeSet;

use crate::app::{AppId, Application, sync_status};
use crate::event::AppRef;
use crate::ports::ListQuery;

/// The `fields` mask for listing: only keys the List endpoint honours (docs/argo-cd-behaviour.md §1.6), and
/// only those candidate selection reads. `status.operationState.phase` is what shows a failed
/// operation (a hook that failed while the workloads stayed Synced and Healthy).
/// `status.conditions` would be wanted too (a SharedResourceWarning on a Synced app) but Argo CD's
/// list forwarder does not know it (v3.5.1 `pkg/apiclient/application/forwarder_overwrite.go`,
/// `appFields`) and silently drops it, so a calm-looking item with only a warning condition is
/// found when a notification or a person reports it, not by the sweep.
pub const LIST_FIELDS: &[&str] = &[
    "items.metadata.name",
    "items.metadata.namespace",
    "items.metadata.annotations",
    "items.metadata.labels",
    "items.metadata.deletionTimestamp",
    "items.spec.project",
    "items.status.sync.status",
    "items.status.health",
    "items.status.operationState.phase",
    "items.status.operationState.startedAt",
    "items.status.operationState.finishedAt",
];

/// True when a listed app may need attention: anything that is not calm
/// ([`Application::is_calm`]: Synced and Healthy or Suspended, no operation running or failed, no
/// deletion, no error or warning condition), unless its owners opted out.
pub fn needs_look(item: &Application) -> bool {
    !item.opted_out() && !item.is_calm()
}

/// A fleet-wide comparison failure: so many apps are `Unknown` at once that Git or the repo-server
/// is down. Acting per app would only add load; one alert is the right response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outage {
    pub unknown: usize,
    pub listed: usize,
}

/// Detects an outage: at least `min_apps` apps and `min_percent` of the fleet `Unknown`.
pub fn detect_outage(items: &[Application], min_apps: usize, min_percent: usize) -> Option<Outage> {
    let unknown = items.iter().filter(|a| a.sync_status() == sync_status::UNKNOWN).count();
    (unknown >= min_apps && unknown * 100 >= min_percent * items.len().max(1)).then_some(Outage { unknown, listed: items.len() })
}

/// What a sweep covers and when it calls a fleet-wide `Unknown` an outage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepScope {
    pub projects: Vec<String>,
    pub selector: String,
    /// An outage is declared when at least this many apps...
    pub outage_min_apps: usize,
    /// ...and this share (percent) of the listed fleet are `Unknown`.
    pub outage_min_percent: usize,
}

impl Default for SweepScope {
    fn default() -> Self {
        Self { projects: Vec::new(), selector: String::new(), outage_min_apps: 10, outage_min_percent: 20 }
    }
}

impl SweepScope {
    /// The field-masked list request of a sweep.
    pub fn list_query(&self) -> ListQuery {
        ListQuery {
            projects: self.projects.clone(),
            selector: self.selector.clone(),
            fields: LIST_FIELDS.iter().map(|f| (*f).to_owned()).collect(),
            ..ListQuery::default()
        }
    }
}

/// What one sweep should look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepPlan {
    pub listed: usize,
    pub outage: Option<Outage>,
    /// Listed apps that need a look (not calm, or with an open incident), in list order.
    pub candidates: Vec<AppRef>,
    /// Apps with an open incident that the list no longer shows (deleted, moved out of scope):
    /// looking at one confirms its absence and ends the incident and its Slack thread. Without
    /// this they would stay open for ever.
    pub unlisted: Vec<AppRef>,
    /// `Unknown` apps held back during an outage.
    pub suspended: usize,
}

impl SweepPlan {
    /// Every app to look at: the candidates, then the unlisted.
    pub fn looks(&self) -> impl Iterator<Item = &AppRef> {
        self.candidates.iter().chain(&self.unlisted)
    }
}

/// Plans one sweep over `listed` (the answer to [`SweepScope::list_query`]) and the apps with an
/// open incident (`namespace/name`).
pub fn plan(listed: &[Application], open: &BTreeSet<AppId>, scope: &SweepScope) -> SweepPlan {
    let outage = detect_outage(listed, scope.outage_min_apps, scope.outage_min_percent);
    let mut candidates = Vec::new();
    let mut suspended = 0;
    for app in listed.iter().filter(|a| needs_look(a) || open.contains(&a.id())) {
        if outage.is_some() && app.sync_status() == sync_status::UNKNOWN {
            suspended += 1;
            continue;
        }
        candidates.push(AppRef::from(app));
    }
    let listed_ids: BTreeSet<AppId> = listed.iter().map(Application::id).collect();
    // No project: the app may have moved to another one, and the step's read by name, then a list
    // by name, tells a deleted app from a moved one.
    let unlisted = open.iter().filter(|a| !listed_ids.contains(*a)).map(AppRef::from).collect();
    SweepPlan { listed: listed.len(), outage, candidates, unlisted, suspended }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::{HealthStatus, OperationState, SyncStatus};

    fn item(sync: &str, health: &str, phase: Option<&str>) -> Application {
        let mut a = Application::default();
        a.metadata.name = "a".into();
        a.status.sync = Some(SyncStatus { status: sync.into(), ..Default::default() });
        a.status.health = Some(HealthStatus { status: health.into(), ..Default::default() });
        a.status.operation_state = phase.map(|p| OperationState { phase: p.into(), ..Default::default() });
        a
    }

    #[test]
    fn calm_apps_are_skipped_and_everything_else_is_looked_at() {
        assert!(!needs_look(&item("Synced", "Healthy", Some("Succeeded"))));
        assert!(!needs_look(&item("Synced", "Suspended", None)));
        assert!(needs_look(&item("Synced", "Progressing", Some("Succeeded"))));
        assert!(needs_look(&item("OutOfSync", "Healthy", None)));
        assert!(needs_look(&item("Synced", "Healthy", Some("Running"))));
        // A hook failed although the workloads are fine: a failed deployment, worth a look.
        assert!(needs_look(&item("Synced", "Healthy", Some("Failed"))));
        assert!(needs_look(&item("Synced", "Healthy", Some("Error"))));
        let mut shared = item("Synced", "Healthy", Some("Succeeded"));
        shared.status.conditions.push(crate::app::ApplicationCondition {
            kind: "SharedResourceWarning".into(),
            message: "ConfigMap/x is part of applications argocd/a and argocd/b".into(),
            ..Default::default()
        });
        assert!(needs_look(&shared));
        let mut orphans = item("Synced", "Healthy", Some("Succeeded"));
        orphans.status.conditions.push(crate::app::ApplicationCondition {
            kind: "OrphanedResourceWarning".into(),
            message: "Application has 3 orphaned resources".into(),
            ..Default::default()
        });
        assert!(!needs_look(&orphans), "orphaned resources are informational");
        let mut opted = item("Unknown", "Degraded", None);
        opted.metadata.annotations.insert(crate::app::OPT_OUT_KEY.into(), "true".into());
        assert!(!needs_look(&opted));
    }

    #[test]
    fn an_outage_needs_both_a_count_and_a_share_of_the_fleet() {
        let mut fleet: Vec<_> = (0..100).map(|_| item("Synced", "Healthy", None)).collect();
        for a in fleet.iter_mut().take(15) {
            a.status.sync.as_mut().unwrap().status = "Unknown".into();
        }
        assert_eq!(detect_outage(&fleet, 10, 20), None, "15% is below the share");
        assert_eq!(detect_outage(&fleet, 10, 10), Some(Outage { unknown: 15, listed: 100 }));
        assert_eq!(detect_outage(&fleet[..20], 16, 20), None, "15 apps are below the count");
    }

    fn named(ns: &str, name: &str, sync: &str, health: &str) -> Application {
        let mut a = item(sync, health, None);
        a.metadata.name = name.into();
        a.metadata.namespace = ns.into();
        a.spec.project = "payments".into();
        a
    }

    #[test]
    fn a_plan_looks_at_trouble_and_open_incidents_and_names_the_unlisted() {
        let listed = vec![
            named("argocd", "calm", "Synced", "Healthy"),
            named("argocd", "broken", "OutOfSync", "Degraded"),
            named("argocd", "healed", "Synced", "Healthy"),
        ];
        let open: BTreeSet<AppId> = [AppId::new("argocd", "healed"), AppId::new("argocd", "deleted")].into();
        let p = plan(&listed, &open, &SweepScope::default());
        let names: Vec<&str> = p.candidates.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["broken", "healed"], "calm apps cost nothing; an open incident is looked at so it can close");
        assert_eq!(p.candidates[0].project.as_deref(), Some("payments"));
        assert_eq!(p.unlisted, vec![AppRef { name: "deleted".into(), namespace: "argocd".into(), project: None }]);
        assert_eq!(p.looks().count(), 3);
        assert_eq!((p.listed, p.suspended, p.outage), (3, 0, None));
    }

    #[test]
    fn during_an_outage_unknown_apps_are_held_back_and_the_rest_still_looked_at() {
        let mut listed: Vec<_> = (0..30).map(|i| named("argocd", &format!("u{i:02}"), "Unknown", "Healthy")).collect();
        listed.push(named("argocd", "degraded", "Synced", "Degraded"));
        listed.extend((0..9).map(|i| named("argocd", &format!("ok{i}"), "Synced", "Healthy")));
        let p = plan(&listed, &BTreeSet::new(), &SweepScope::default());
        assert_eq!(p.outage, Some(Outage { unknown: 30, listed: 40 }));
        assert_eq!(p.suspended, 30);
        assert_eq!(p.candidates.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["degraded"]);
    }

    #[test]
    fn the_list_query_masks_fields_and_keeps_the_scope() {
        let scope = SweepScope { projects: vec!["payments".into()], selector: "env=prod".into(), ..SweepScope::default() };
        let q = scope.list_query();
        assert_eq!((q.projects, q.selector.as_str(), q.name.as_str()), (vec!["payments".to_owned()], "env=prod", ""));
        assert_eq!(q.fields.len(), LIST_FIELDS.len());
    }
}
