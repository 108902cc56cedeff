//! What a step did (its result and report), why it could not finish, and the one builder of a
//! sync request: the vocabulary the per-app step (`medic_service::remediate`) and the actuator
//! ([`crate::actuator`]) share.

use serde::Serialize;
use thiserror::Error;

use crate::app::{AppId, Application, ApplicationSyncRequest, IDEMPOTENCY_INFO_NAME, INCIDENT_BEGAN_INFO_NAME, Info, SyncOptions};
use crate::catalogue::FailureMode;
use crate::decision::Decision;
use crate::error::PolicyError;
use crate::keys::IdempotencyKey;
use crate::ladder::Action;
use crate::ports::{ArgoError, EscalationError, StoreError};

/// Name of the `infos` entry carrying the incident id on Argo Medic's syncs.
pub const INCIDENT_INFO_NAME: &str = "argo-medic.io/incident";
/// Name of the `infos` entry carrying the failure mode on Argo Medic's syncs.
pub const REASON_INFO_NAME: &str = "argo-medic.io/failure-mode";

/// What the step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepResult {
    /// Nothing needed doing.
    NoAction,
    /// The app is healthy again; its incident was closed.
    Resolved,
    /// `--dry-run`: decided, did nothing.
    DryRun,
    /// Refresh requested and verified (`reconciledAt` moved past the request).
    Refreshed,
    /// Refresh requested twice and `reconciledAt` did not move: Argo CD dropped it.
    RefreshUnverified,
    /// Sync operation started.
    Synced,
    /// The action was already taken for this incident (store record or `operation.info`).
    AlreadyDone,
    /// Handed to a human.
    Escalated,
    /// Waiting: the policy said so, or Argo CD was busy / in a sync window.
    Waiting,
    /// Not now: out of budget, or another worker holds the action.
    Deferred,
    /// The action failed for good (recorded; the ladder moves on next time).
    Failed,
}

/// One app's step, for reports and audit.
#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    /// The app the step looked at.
    pub app: AppId,
    /// The failure mode the decision named; `None` when the step decided nothing.
    pub failure_mode: Option<FailureMode>,
    /// The action the decision chose; `None` when the step decided nothing.
    pub action: Option<Action>,
    /// What the step did.
    pub result: StepResult,
    /// What happened, in a line for the logs: the decision's reason, then what the step added.
    pub detail: String,
    /// The idempotency key of the decision's action, as the store and Argo CD's `infos` record it; `None` without an incident.
    pub idempotency_key: Option<IdempotencyKey>,
    /// Argo CD calls this step made.
    pub argo_calls: u32,
    /// The decision the step acted on, for the caller; not serialised.
    #[serde(skip)]
    pub decision: Option<Decision>,
    /// The incident closed within this step: a verified refresh read the app back out of
    /// trouble, so the policy's closing decision on that read (the one the next look would have
    /// made) was taken at once, saving that look. Callers report it (Slack) as a resolution.
    #[serde(skip)]
    pub resolution: Option<Decision>,
    /// Whether the app, as last read by this step (after its refresh, when one was verified or
    /// not), still could not be compared (`crate::fleet::is_down`): the fleet outage's own
    /// signature, which a recovery wave's batch is judged by. `None` when the step read nothing.
    #[serde(skip)]
    pub down_after: Option<bool>,
    /// The gate held a rung that a run which died had already claimed: the claim stays
    /// unfinished, and the caller must look again later (the switch back on resumes it) instead
    /// of ending the item, or the claimed action would never be performed.
    #[serde(skip)]
    pub claim_held_back: bool,
}

/// Why a step could not finish; the caller retries it later (the message stays on the queue).
#[derive(Debug, Error)]
pub enum StepError {
    /// An Argo CD call failed.
    #[error(transparent)]
    Argo(#[from] ArgoError),
    /// A store failed: incidents, markers, locks or the Slack records.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Telling people failed: a Slack call or its records.
    #[error(transparent)]
    Escalation(#[from] EscalationError),
    /// The policy could not judge the app (an incomplete object).
    #[error(transparent)]
    Policy(#[from] PolicyError),
}

/// The sync request for `plan`, the only place one is built: automatic syncs and a person's sync
/// from an escalation carry the same `infos`: the idempotency key (how a retry finds the sync it
/// already started), the incident, the failure mode, and when the incident began (how the
/// incident survives the operation the sync creates; without it a failed sync would open a new
/// incident, with a new ladder and a second Slack parent).
pub fn sync_request(
    app: &Application,
    plan: &crate::decision::SyncPlan,
    key: &IdempotencyKey,
    incident_id: &str,
    incident_began: Option<chrono::DateTime<chrono::Utc>>,
    failure_mode: crate::catalogue::FailureMode,
) -> ApplicationSyncRequest {
    let began = incident_began.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    ApplicationSyncRequest {
        name: app.metadata.name.clone(),
        revision: plan.revision.clone(),
        prune: plan.prune,
        sync_options: (!plan.sync_options.is_empty()).then(|| SyncOptions { items: plan.sync_options.clone() }),
        infos: [
            Info { name: IDEMPOTENCY_INFO_NAME.into(), value: key.to_string() },
            Info { name: INCIDENT_INFO_NAME.into(), value: incident_id.to_owned() },
            Info { name: REASON_INFO_NAME.into(), value: failure_mode.to_string() },
        ]
        .into_iter()
        .chain(began.map(|value| Info { name: INCIDENT_BEGAN_INFO_NAME.into(), value }))
        .collect(),
        project: app.spec.project.clone(),
        app_namespace: app.metadata.namespace.clone(),
        ..ApplicationSyncRequest::default()
    }
}

/// A step's report with nothing done yet: what the per-app step fills in.
pub fn report(app: AppId, d: Option<&Decision>, result: StepResult, detail: String, calls: u32) -> StepReport {
    StepReport {
        app,
        failure_mode: d.map(|d| d.failure_mode),
        action: d.map(|d| d.action),
        result,
        detail,
        idempotency_key: d.and_then(|d| d.idempotency_key.clone()),
        argo_calls: calls,
        decision: d.cloned(),
        resolution: None,
        down_after: None,
        claim_held_back: false,
    }
}

/// How one step of a fleet outage's recovery wave came out: what a wave's batch verdict counts
/// (`crate::fleet::batch_verdict`). The one reading of a step both `medic sweep`'s batches and the
/// workers' use.
///
/// Judged by the cause's own signature, as the canaries are: an app that can be compared after
/// its step has healed from the outage (whatever else it needs now: an `OutOfSync` app after
/// commits pushed during the outage is its own ladder's business); an app the step acted on that
/// still cannot be compared failed again. A step that failed (an Argo CD 503, a throttled store)
/// or did not act yet (a wait, a deferral) says nothing about the cause: `Neither`, and the
/// worker leaves such an item untallied until it really steps (M3).
pub fn wave_outcome<E>(step: &Result<StepReport, E>) -> crate::ladder::WaveOutcome {
    use crate::ladder::WaveOutcome;
    match step {
        Ok(r) if r.result == StepResult::Resolved || r.resolution.is_some() || r.down_after == Some(false) => WaveOutcome::Healed,
        Ok(r) if matches!(r.result, StepResult::Refreshed | StepResult::RefreshUnverified | StepResult::Failed | StepResult::Escalated) => {
            WaveOutcome::Failed
        }
        Ok(_) | Err(_) => WaveOutcome::Neither,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ladder::WaveOutcome;
    use crate::ports::ArgoError;

    fn step(result: StepResult, down_after: Option<bool>) -> Result<StepReport, StepError> {
        let mut r = report(AppId::new("argocd", "a"), None, result, String::new(), 1);
        r.down_after = down_after;
        Ok(r)
    }

    /// M3 (reliability review of 0a3f9d5): a wave's relapse was counted from any step error and
    /// from any refresh that left the app not calm, such as comparable again but `OutOfSync`
    /// after commits pushed during the outage. It is the cause's own signature now: still not
    /// comparable after a step that acted. Fails on 4b8d4db (the first two are `Failed`).
    #[test]
    fn a_wave_step_is_judged_by_the_outage_s_signature_not_by_calm_or_by_errors() {
        assert_eq!(wave_outcome(&step(StepResult::Refreshed, Some(false))), WaveOutcome::Healed, "comparable again, OutOfSync");
        let failed: Result<StepReport, StepError> = Err(StepError::Argo(ArgoError::Transient("503".into())));
        assert_eq!(wave_outcome(&failed), WaveOutcome::Neither, "an Argo CD 503 says nothing about the cause");
        assert_eq!(wave_outcome(&step(StepResult::Refreshed, Some(true))), WaveOutcome::Failed, "refreshed and still Unknown");
        assert_eq!(wave_outcome(&step(StepResult::Escalated, Some(true))), WaveOutcome::Failed);
        assert_eq!(wave_outcome(&step(StepResult::Deferred, Some(true))), WaveOutcome::Neither, "not stepped yet");
        assert_eq!(wave_outcome(&step(StepResult::Resolved, None)), WaveOutcome::Healed);
    }
}
