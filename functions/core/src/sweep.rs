//! The sweep plan: which apps of a fleet to look at, from a field-masked list and the open
//! incidents. Pure, and the only sweep algorithm: `medic sweep` runs the per-app step on what
//! [`plan`] returns, the sweeper function enqueues it.
//!
//! The list is masked so a sweep over thousands of apps stays small; a masked item is only good for
//! choosing candidates, never for deciding (the policy refuses partial objects).

use std::collections::BTreeSet;

use crate::app::{AppId, Application};
use crate::event::AppRef;
use crate::fleet::{FleetCause, FleetRules};
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
    // Where an app's sources and destination are: what a fleet outage's apps share (crate::fleet).
    "items.spec.source",
    "items.spec.sources",
    "items.spec.destination",
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

/// What a sweep covers and when apps failing together are one cause ([`crate::fleet`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SweepScope {
    /// The Argo CD projects in scope; empty for all.
    pub projects: Vec<String>,
    /// The label selector in scope (`k=v`, `k!=v`, `k`, `!k`, comma = and); empty for all apps.
    pub selector: String,
    /// When apps failing together are one cause, and how its recovery wave runs.
    pub fleet: FleetRules,
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
    /// How many apps the sweep's list returned.
    pub listed: usize,
    /// Shared causes found in the list: their apps are held back, but for the canaries.
    pub causes: Vec<FleetCause>,
    /// The canaries of every cause, then the listed apps that need a look (not calm, or with an
    /// open incident) and no cause covers, in list order.
    pub candidates: Vec<AppRef>,
    /// Apps with an open incident that the list no longer shows (deleted, moved out of scope):
    /// looking at one confirms its absence and ends the incident and its Slack thread. Without
    /// this they would stay open for ever.
    pub unlisted: Vec<AppRef>,
    /// Covered apps held back (not canaries): released as a wave once a canary heals.
    pub held: usize,
}

impl SweepPlan {
    /// Every app to look at: the candidates, then the unlisted.
    pub fn looks(&self) -> impl Iterator<Item = &AppRef> {
        self.candidates.iter().chain(&self.unlisted)
    }

    /// True when `app` is a canary of a cause (probed, not put through the per-app ladder).
    pub fn canary_of(&self, app: &AppId) -> Option<&FleetCause> {
        self.causes.iter().find(|c| c.canaries().contains(app))
    }
}

/// Plans one sweep over `listed` (the answer to [`SweepScope::list_query`]) and the apps with an
/// open incident.
pub fn plan(listed: &[Application], open: &BTreeSet<AppId>, scope: &SweepScope) -> SweepPlan {
    let causes = crate::fleet::detect(listed, &scope.fleet);
    let covered: BTreeSet<&AppId> = causes.iter().flat_map(|c| c.apps.iter()).collect();
    let by_id: std::collections::BTreeMap<AppId, &Application> = listed.iter().map(|a| (a.id(), a)).collect();
    let mut candidates: Vec<AppRef> =
        causes.iter().flat_map(|c| c.canaries()).filter_map(|id| by_id.get(id)).map(|a| AppRef::from(*a)).collect();
    let mut held = 0;
    for app in listed.iter().filter(|a| needs_look(a) || open.contains(&a.id())) {
        let id = app.id();
        if covered.contains(&id) {
            held += usize::from(!causes.iter().any(|c| c.canaries().contains(&id)));
            continue;
        }
        candidates.push(AppRef::from(app));
    }
    // No project: the app may have moved to another one, and the step's read by name, then a list
    // by name, tells a deleted app from a moved one.
    let unlisted = open.iter().filter(|a| !by_id.contains_key(*a)).map(AppRef::from).collect();
    SweepPlan { listed: listed.len(), causes, candidates, unlisted, held }
}

/// The apps of `cause` to release as its recovery wave, as the list showed them (project and
/// all), in wave order.
pub fn wave(listed: &[Application], cause: &FleetCause) -> Vec<AppRef> {
    let by_id: std::collections::BTreeMap<AppId, &Application> = listed.iter().map(|a| (a.id(), a)).collect();
    cause.wave().iter().filter_map(|id| by_id.get(id)).map(|a| AppRef::from(*a)).collect()
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
        a.status.operation_state = phase.map(|p| Box::new(OperationState { phase: p.into(), ..Default::default() }));
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
        assert_eq!((p.listed, p.held, p.causes.len()), (3, 0, 0));
    }

    #[test]
    fn during_an_outage_covered_apps_are_held_back_but_canaries_and_the_rest_are_looked_at() {
        let mut listed: Vec<_> = (0..30).map(|i| named("argocd", &format!("u{i:02}"), "Unknown", "Healthy")).collect();
        listed.push(named("argocd", "degraded", "Synced", "Degraded"));
        listed.extend((0..9).map(|i| named("argocd", &format!("ok{i}"), "Synced", "Healthy")));
        let p = plan(&listed, &BTreeSet::new(), &SweepScope::default());
        // List items naming no source or destination: Argo CD itself is the cause.
        assert_eq!(p.causes.len(), 1);
        assert_eq!((p.causes[0].scope.clone(), p.causes[0].apps.len()), (crate::fleet::CauseScope::Instance, 30));
        assert_eq!(p.held, 27);
        let names: Vec<&str> = p.candidates.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["u00", "u01", "u02", "degraded"], "the canaries first, then what no cause covers");
        assert!(p.canary_of(&AppId::new("argocd", "u01")).is_some() && p.canary_of(&AppId::new("argocd", "u05")).is_none());
        let wave = wave(&listed, &p.causes[0]);
        assert_eq!((wave.len(), wave[0].name.as_str(), wave[0].project.as_deref()), (27, "u03", Some("payments")));
    }

    #[test]
    fn the_list_query_masks_fields_and_keeps_the_scope() {
        let scope = SweepScope { projects: vec!["payments".into()], selector: "env=prod".into(), ..SweepScope::default() };
        let q = scope.list_query();
        assert_eq!((q.projects, q.selector.as_str(), q.name.as_str()), (vec!["payments".to_owned()], "env=prod", ""));
        assert_eq!(q.fields.len(), LIST_FIELDS.len());
    }
}
