//! Choosing which apps of a fleet to look at, from a field-masked list. Shared by `medic sweep`
//! and the sweeper function; pure.
//!
//! The list is masked so a sweep over thousands of apps stays small; a masked item is only good for
//! choosing candidates, never for deciding (the policy refuses partial objects).

use crate::app::{Application, sync_status};

/// The `fields` mask for listing: only keys the List endpoint honours (argocd-api.md §1.6), and
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
}
