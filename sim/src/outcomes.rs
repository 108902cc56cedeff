//! What the simulated controller does when an app is refreshed or synced.
//!
//! Real Argo CD's outcome depends on Git, the repo-server and the cluster; the simulator replaces
//! all of that with a per-app script, so a test can say "this app heals on refresh" or "this sync
//! fails with that message".

use serde::{Deserialize, Serialize};

/// The scripted behaviour of one app (by name, in any namespace).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Outcomes {
    /// What a normal refresh (`?refresh=normal`) does.
    pub refresh: RefreshOutcome,
    /// What a hard refresh (`?refresh=hard`) does.
    pub hard_refresh: RefreshOutcome,
    /// How a sync operation ends.
    pub sync: SyncOutcome,
    /// How many of the app's next syncs Argo CD accepts (200, the answer carrying the operation)
    /// and never runs: the operation is gone before the controller sees it, and no
    /// `operationState` ever carries it. Under API-server pressure Argo CD drops syncs so
    /// (argoproj/argo-cd#27133).
    pub lost_syncs: u32,
    /// The source cannot be compared (Git or the repo-server down): each refresh that is not
    /// dropped ends in a `ComparisonError` with this message, as the controller writes it
    /// (`Failed to load target state: …`), instead of `refresh`'s outcome. See
    /// `controller::compare_failed` for what it changes and what it leaves.
    pub comparison_error: Option<String>,
}

/// What the controller does with a refresh.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefreshOutcome {
    /// Reconciles and finds nothing new: `status.reconciledAt` moves to now, nothing else.
    #[default]
    Noop,
    /// Reconciles and the trouble is gone: `reconciledAt` now, ComparisonError/SyncError
    /// conditions cleared, health Healthy (transition now), sync Synced.
    Heal,
    /// The refresh is silently lost (argoproj/argo-cd#28392): the app comes back unchanged and
    /// `reconciledAt` does not move.
    Drop,
}

/// How a sync operation ends once it has run for `operation_duration`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncOutcome {
    /// Phase Succeeded; the app becomes Synced and Healthy.
    #[default]
    Succeed,
    /// Phase Failed with this operation message.
    Fail {
        /// `status.operationState.message`.
        message: String,
    },
    /// Phase Failed with `message` when the attempt syncs `revision`, Succeeded on any other: a
    /// bad commit a later one fixes. A retry that resolves the latest revision (`retry.refresh`,
    /// Argo CD 3.2 and later) gets past it; one that repeats the revision does not.
    FailRevision {
        /// The bad commit.
        revision: String,
        /// `status.operationState.message` of a failed attempt.
        message: String,
    },
    /// gitops-engine finds tasks it cannot run (a kind the cluster does not serve yet: a custom
    /// resource racing its CRD): phase Failed with `one or more synchronization tasks are not
    /// valid` (from Argo CD 3.5.0 followed by the tasks' messages), each task a `SyncFailed`
    /// resource of `syncResult` with its message.
    InvalidTasks {
        /// The tasks gitops-engine refused.
        tasks: Vec<InvalidTask>,
    },
    /// Stays Running with `operation` set until terminated.
    Hang,
}

/// A resource gitops-engine could not sync, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct InvalidTask {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// e.g. `The Kubernetes API could not find monitoring.coreos.com/ServiceMonitor for requested
    /// resource observability/api-metrics. Make sure the "ServiceMonitor" CRD is installed on the
    /// destination cluster.`
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_read_the_documented_json_shapes() {
        let parsed: Outcomes =
            serde_json::from_str(r#"{"refresh":"heal","hard_refresh":"drop","sync":{"fail":{"message":"boom"}}}"#).expect("valid outcomes");
        assert_eq!(parsed.refresh, RefreshOutcome::Heal);
        assert_eq!(parsed.hard_refresh, RefreshOutcome::Drop);
        assert_eq!(parsed.sync, SyncOutcome::Fail { message: "boom".into() });

        let partial: Outcomes = serde_json::from_str(r#"{"sync":"hang"}"#).expect("partial");
        assert_eq!(partial.refresh, RefreshOutcome::Noop);
        assert_eq!(partial.sync, SyncOutcome::Hang);

        assert!(serde_json::from_str::<Outcomes>(r#"{"refersh":"heal"}"#).is_err());

        let bad_commit: Outcomes =
            serde_json::from_str(r#"{"sync":{"fail_revision":{"revision":"abc","message":"boom"}}}"#).expect("a bad commit");
        assert_eq!(bad_commit.sync, SyncOutcome::FailRevision { revision: "abc".into(), message: "boom".into() });
        let invalid: Outcomes =
            serde_json::from_str(r#"{"sync":{"invalid_tasks":{"tasks":[{"kind":"ServiceMonitor","name":"m","message":"no CRD"}]}}}"#)
                .expect("invalid tasks");
        assert!(matches!(invalid.sync, SyncOutcome::InvalidTasks { ref tasks } if tasks[0].kind == "ServiceMonitor"));
    }
}
