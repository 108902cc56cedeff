//! The failure-mode catalogue: one entry per way an Argo CD Application gets stuck, with how it is
//! recognised, what Argo Medic does by default, a diagnosis and a runbook.
//!
//! This is the only place the literal Argo CD messages live (`signals`); the classifier in
//! [`crate::policy`] matches them and the escalation message quotes the diagnosis and runbook.
//! Each signal is Argo CD's (or Kubernetes') literal text; the corpus case that carries it in
//! `events/corpus/` names the file of Argo CD v3.5.1 or the public issue it comes from
//! (`events/corpus/README.md`), and docs/argo-cd-behaviour.md §3.5 has the lifecycle facts the
//! ladders rest on.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::ladder::Rung;
use crate::ladder::{Action, HumanAction};

macro_rules! failure_modes {
    ($($variant:ident => $id:literal),+ $(,)?) => {
        /// Every failure mode Argo Medic recognises (plus the healthy and out-of-scope states).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum FailureMode {
            // Each mode's title, signals, diagnosis and runbook are its catalogue entry's.
            $(
                #[doc = concat!("`", $id, "`: its title, how it is recognised, diagnosis and runbook are its catalogue entry's ([`FailureMode::entry`]).")]
                #[serde(rename = $id)]
                $variant,
            )+
        }

        impl FailureMode {
            /// Every mode, in catalogue order.
            pub const ALL: &'static [FailureMode] = &[$(FailureMode::$variant,)+];

            /// The stable id used in decisions, metrics and keys.
            pub fn id(self) -> &'static str {
                match self { $(FailureMode::$variant => $id,)+ }
            }
        }

        impl std::str::FromStr for FailureMode {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s { $($id => Ok(FailureMode::$variant),)+ other => Err(format!("unknown failure mode `{other}`")) }
            }
        }
    };
}

failure_modes! {
    Healthy => "healthy",
    OutOfScope => "out-of-scope",
    OptedOut => "opted-out",
    OutOfSyncManual => "out-of-sync-manual",
    OutOfSyncAwaitingAutoSync => "out-of-sync-awaiting-auto-sync",
    RolloutProgressing => "rollout-progressing",
    StaleReconcile => "stale-reconcile",
    StaleProgressing => "stale-progressing",
    ComparisonErrorTransient => "comparison-error-transient",
    SourceRateLimited => "source-rate-limited",
    CachedManifestError => "cached-manifest-error",
    SourceConfigError => "source-config-error",
    CrdNotEstablished => "crd-not-established",
    ApiNotServed => "api-not-served",
    WebhookUnavailable => "webhook-unavailable",
    ResourceRejected => "resource-rejected",
    HookFailed => "hook-failed",
    HookConflict => "hook-conflict",
    PostSyncBlockedByHealth => "postsync-blocked-by-health",
    CustomHealthNeverHealthy => "custom-health-never-healthy",
    HealthDegraded => "health-degraded",
    PruneBlastRadius => "prune-blast-radius",
    PruneConfirmPending => "prune-confirm-pending",
    DeletionStuck => "deletion-stuck",
    AppDeleting => "app-deleting",
    PermissionDenied => "permission-denied",
    AppSetHandEdit => "appset-hand-edit",
    OwnershipConflict => "ownership-conflict",
    SyncWindowBlocked => "sync-window-blocked",
    AwaitingPromotion => "awaiting-promotion",
    OperationInProgress => "operation-in-progress",
    OperationRunningTooLong => "operation-running-too-long",
    AutoSyncRetriesExhausted => "auto-sync-retries-exhausted",
    SyncFailedTransient => "sync-failed-transient",
    SyncFailed => "sync-failed",
}

impl fmt::Display for FailureMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// One catalogue entry.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CatalogueEntry {
    /// The failure mode this entry describes.
    pub id: FailureMode,
    /// A short name for people, the heading of the mode's Slack messages (`Sync hook failed`).
    pub title: &'static str,
    /// How the mode is recognised, in words: the status fields the classifier reads.
    pub recognised_by: &'static str,
    /// Literal Argo CD / Kubernetes message fragments (matched case-insensitively) that mark it.
    pub signals: &'static [&'static str],
    /// What Argo Medic does first when nothing has been tried yet.
    pub default_action: Action,
    /// The remediation ladder; an empty ladder means the mode is waited out or needs nothing.
    pub ladder: &'static [Rung],
    /// Whether the controller's own periodic refresh counts as the ladder's `refresh` rung: a
    /// `status.reconciledAt` after the trouble began already shows a normal refresh did not help.
    pub controller_refresh_counts: bool,
    /// Whether an escalation of this mode offers a person the Sync button. False where the
    /// diagnosis says a sync must not be started from an escalation (it would re-run failed hooks,
    /// prune beyond the blast radius, deploy a hand edit an ApplicationSet reverts) or cannot help;
    /// a person who has fixed the cause still syncs from Argo CD itself. The policy also withholds
    /// it for the app at hand (deleting, an operation running, a failed hook, a prune risk, a hand
    /// edit), whatever the mode.
    pub offers_sync: bool,
    /// The button an escalation of this mode recommends (styled `primary`): the remedy the
    /// diagnosis and runbook recommend when it is a button, otherwise `Acknowledge` (a person
    /// takes the incident: the remedy is outside Argo CD). The policy falls back to `Acknowledge`
    /// when the button is not offered for the app at hand, and for a recommended sync that was
    /// already tried in the incident or would re-run hooks not marked idempotent.
    pub recommends: HumanAction,
    /// What is probably wrong and whether a sync can help, quoted in the escalation.
    pub diagnosis: &'static str,
    /// Steps for a person, in order; placeholders (`<hook-job>`, `<namespace>`) are filled from the incident where known.
    pub runbook: &'static [&'static str],
}

impl FailureMode {
    /// This mode's catalogue entry.
    pub fn entry(self) -> &'static CatalogueEntry {
        CATALOGUE.iter().find(|e| e.id == self).expect("every failure mode has a catalogue entry")
    }

    /// True when the text contains one of this mode's literal signals.
    pub fn signalled_by(self, text: &str) -> bool {
        let text = text.to_ascii_lowercase();
        self.entry().signals.iter().any(|s| text.contains(&s.to_ascii_lowercase()))
    }

    /// The first signal of this mode found in the text, for evidence.
    pub fn signal_in(self, text: &str) -> Option<&'static str> {
        let lower = text.to_ascii_lowercase();
        self.entry().signals.iter().copied().find(|s| lower.contains(&s.to_ascii_lowercase()))
    }

    /// True for the states that are not trouble at all.
    pub fn is_trouble(self) -> bool {
        !matches!(self, FailureMode::Healthy | FailureMode::OutOfScope | FailureMode::OptedOut | FailureMode::OutOfSyncManual)
    }
}

use Rung::{Escalate, HardRefresh, Refresh, Sync};

/// Ordinary transient failures of the Kubernetes or Argo CD control plane. They say nothing about
/// the manifests, so a retry once the cause has cleared may succeed.
pub const TRANSIENT_SIGNALS: &[&str] = &[
    "connection refused",
    "connection reset",
    "i/o timeout",
    "tls handshake timeout",
    "context deadline exceeded",
    "deadlineexceeded",
    "code = unavailable",
    "unexpected eof",
    "etcdserver: request timed out",
    "etcdserver: leader changed",
    "the server is currently unable to handle the request",
    "the object has been modified; please apply your changes to the latest version",
    "too many requests",
    "service unavailable",
    "net/http: request canceled",
    "http2: client connection lost",
    // Kubernetes' own "try again" answers (apimachinery NewServerTimeout, the request timeout
    // filter) and connections the API server or its load balancer dropped.
    "the server was unable to return a response in the time allotted",
    "timeout: request did not complete within requested timeout",
    "http2: server sent goaway",
    "write: broken pipe",
    "resource quota evaluation timed out",
    "etcdserver: too many requests",
];

/// A Git, Helm or OCI host throttling Argo CD. Shared by every app on that host and transient.
pub const RATE_LIMIT_SIGNALS: &[&str] = &[
    "status code: 429",
    "429 too many requests",
    "toomanyrequests",
    "rate limit exceeded",
    "you have reached your pull rate limit",
    "the requested url returned error: 429",
    "secondary rate limit",
];

/// The kind-not-found messages: the API server does not know the kind the manifests use, whether
/// because its CRD is not established yet or because the API is gone.
pub const KIND_NOT_FOUND_SIGNALS: &[&str] = &[
    "the server could not find the requested resource",
    "no matches for kind",
    "could not find the requested resource",
    "ensure CRDs are installed first",
    "Make sure the \"",
];

/// Built-in API versions Kubernetes has removed (the deprecation guide): a manifest using one
/// fails with kind-not-found on every cluster that no longer serves it, however often it is retried.
pub const REMOVED_BUILTIN_APIS: &[&str] = &[
    "extensions/v1beta1",
    "apps/v1beta1",
    "apps/v1beta2",
    "policy/v1beta1",
    "batch/v1beta1",
    "autoscaling/v2beta1",
    "autoscaling/v2beta2",
    "networking.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1beta1",
    "admissionregistration.k8s.io/v1beta1",
    "storage.k8s.io/v1beta1",
    "scheduling.k8s.io/v1beta1",
    "coordination.k8s.io/v1beta1",
    "certificates.k8s.io/v1beta1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1beta1",
    "node.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta3",
];

/// The catalogue, in the order it is printed.
pub static CATALOGUE: &[CatalogueEntry] = &[
    CatalogueEntry {
        id: FailureMode::Healthy,
        title: "Synced and healthy",
        recognised_by: "status.sync.status == Synced and status.health.status is Healthy (or Suspended by design), no failed operation",
        signals: &[],
        default_action: Action::None,
        ladder: &[],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "Nothing is wrong. An open incident for this app is resolved.",
        runbook: &[],
    },
    CatalogueEntry {
        id: FailureMode::OutOfScope,
        title: "Outside the configured scope",
        recognised_by: "spec.project not in the configured projects, or metadata.labels not matching the configured selector",
        signals: &[],
        default_action: Action::None,
        ladder: &[],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "Argo Medic is configured not to look after this app.",
        runbook: &["Change `projects` or `selector` in the policy configuration to include it."],
    },
    CatalogueEntry {
        id: FailureMode::OptedOut,
        title: "Opted out by its owner",
        recognised_by: "annotation or label `argo-medic.io/opt-out: \"true\"`",
        signals: &[],
        default_action: Action::None,
        ladder: &[],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "The app's owners asked Argo Medic to leave it alone.",
        runbook: &[
            "Remove the annotation/label to opt back in.",
            "For ApplicationSet-generated apps, set it in the ApplicationSet template: the ApplicationSet controller reverts labels and annotations set by hand.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::OutOfSyncManual,
        title: "OutOfSync, manual sync policy",
        recognised_by: "status.sync.status == OutOfSync, no spec.syncPolicy.automated, no failed operation or error condition",
        signals: &[],
        default_action: Action::None,
        ladder: &[],
        controller_refresh_counts: false,
        offers_sync: true,
        recommends: HumanAction::Acknowledge,
        diagnosis: "The app differs from Git and its owners sync it by hand. Nobody asked for a sync, so Argo Medic does not start one.",
        runbook: &["Sync from the Argo CD UI or `argocd app sync` when the change is wanted."],
    },
    CatalogueEntry {
        id: FailureMode::OutOfSyncAwaitingAutoSync,
        title: "OutOfSync, automated sync has not run",
        recognised_by: "status.sync.status == OutOfSync with automated sync on, no operation, no error condition; trouble once it lasts past progressing_timeout",
        signals: &[],
        default_action: Action::Wait,
        ladder: &[Refresh, Escalate],
        controller_refresh_counts: true,
        offers_sync: true,
        recommends: HumanAction::Acknowledge,
        diagnosis: "Automated sync should have picked this change up. When it does not, the usual causes are a diff that only needs pruning while `automated.prune` is off, a self-heal backoff, or an `ignoreDifferences` gap.",
        runbook: &[
            "Open the app diff: is only pruning pending while `automated.prune` is false?",
            "Check the controller logs for `Skipping auto-sync` and the reason.",
            "Check `ignoreDifferences` for fields controllers rewrite.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::RolloutProgressing,
        title: "Rollout in progress",
        recognised_by: "status.health.status == Progressing within progressing_timeout of the last operation or transition",
        signals: &["Waiting for rollout to finish"],
        default_action: Action::Wait,
        ladder: &[],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "A rollout is under way and has not yet taken longer than expected. Nothing needs syncing.",
        runbook: &[],
    },
    CatalogueEntry {
        id: FailureMode::StaleReconcile,
        title: "Status stale: the controller has not reconciled the app",
        recognised_by: "status.reconciledAt older than stale_reconcile_secs (or absent) while the app is not Synced+Healthy",
        signals: &[],
        default_action: Action::Refresh,
        ladder: &[Refresh, HardRefresh, Escalate],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "Argo CD has not compared this app with Git for a long time, so its Progressing/Unknown status is probably left over from a Git, repo-server or API outage while the workloads are fine. A refresh makes the controller compare again; refreshes are sometimes dropped (argoproj/argo-cd#28392), so the effect is verified. If even a hard refresh does not move reconciledAt, the application controller or its shard is likely wedged. A sync does not help: the same controller runs it.",
        runbook: &[
            "Check Application status: Synced/OutOfSync, Healthy/Progressing/Degraded/Unknown, and status.reconciledAt.",
            "If many apps on one cluster or shard are stale, look at the application controller (workqueue depth, shard assignment, restarts) rather than at the apps.",
            "`argocd app get <app> --refresh`; if reconciledAt still does not move, `--hard-refresh`.",
            "If nothing moves, restart the application controller shard that owns the destination cluster.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::StaleProgressing,
        title: "Stuck Progressing after a finished operation",
        recognised_by: "status.health.status == Progressing longer than progressing_timeout after status.operationState.finishedAt (phase Succeeded), no custom resource named as the holdout",
        signals: &[],
        default_action: Action::Refresh,
        ladder: &[Refresh, Escalate],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "The sync finished long ago but the app still reports Progressing. After outages this is usually stale status (workloads are healthy); otherwise a resource really does not become ready: a LoadBalancer Service without an address, an Ingress without status, a PVC not Bound, a Deployment that cannot roll out. A sync would not help.",
        runbook: &[
            "Open the resource tree and find the resource that is not Healthy.",
            "Check its events and status (Service external IP, PVC binding, Deployment conditions).",
            "If every workload is fine, refresh the app; if it stays Progressing, check the health customization of that kind.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::ComparisonErrorTransient,
        title: "Unknown: Git or repo-server unreachable",
        recognised_by: "condition ComparisonError (or sync status Unknown) whose message is a transport error (Unavailable, DeadlineExceeded, connection refused)",
        signals: &[
            "rpc error: code = Unavailable",
            "rpc error: code = DeadlineExceeded",
            "connection refused",
            "context deadline exceeded",
            "i/o timeout",
            "transport: Error while dialing",
            "failed to sync cluster",
        ],
        default_action: Action::Wait,
        ladder: &[Refresh, Escalate],
        controller_refresh_counts: true,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "Argo CD could not reach Git or the repo-server, so it cannot compare the app. Argo CD ignores such errors for a grace period and most apps recover on their own once the outage clears (a repo-server restart causes this briefly). If the controller's own refreshes keep failing after the grace period, the outage is still on. A sync cannot start while the app cannot be compared.",
        runbook: &[
            "Check repo-server pods (restarts, OOMKilled) and their logs for Git errors.",
            "Check Git provider status and network egress from the repo-server.",
            "When it is back, refresh the affected apps; Argo Medic does this within its budgets.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::SourceRateLimited,
        title: "Git, Helm or OCI host rate-limiting Argo CD",
        recognised_by: "condition ComparisonError (cached or not) whose message is a throttling answer from the source host: HTTP 429, `toomanyrequests`, `rate limit exceeded`",
        signals: RATE_LIMIT_SIGNALS,
        default_action: Action::Wait,
        ladder: &[],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "The Git, Helm or OCI host that serves the app's source is throttling Argo CD. It hits every app on that host at once and clears when the request rate drops; until then no sync can render the manifests. Refreshing or hard refreshing only adds requests: Argo Medic waits and looks again. When many apps share the host, the fleet hold makes the outage one incident; an app still throttled past the wait bound (two hours) is escalated once, because throttling that long is no longer passing.",
        runbook: &[
            "Check the host's rate-limit status (GitHub: `X-RateLimit-Remaining`; Docker Hub: pull limits) and which credentials Argo CD uses.",
            "Authenticate the repository (a GitHub App, a Docker Hub account) or mirror it; raise `timeout.reconciliation` or use Git webhooks to poll less.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::CachedManifestError,
        title: "Manifest generation error served from cache",
        recognised_by: "condition ComparisonError containing `Manifest generation error (cached)`",
        signals: &["Manifest generation error (cached)"],
        default_action: Action::HardRefresh,
        ladder: &[HardRefresh, Escalate],
        controller_refresh_counts: true,
        offers_sync: false,
        recommends: HumanAction::HardRefresh,
        diagnosis: "The repo-server is replaying a cached manifest-generation failure (it pauses generation after repeated failures, for 60 minutes by default). A normal refresh gets the same cached error; a hard refresh bypasses the cache. If the error comes back after a hard refresh, the manifests really do not render, and no sync can deploy them.",
        runbook: &[
            "Read the original error after `(cached):` — kustomize/helm output, timeout, missing values file.",
            "`argocd app get <app> --hard-refresh` once the cause is fixed.",
            "If it is a timeout, raise the repo-server exec timeout or simplify the render.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::SourceConfigError,
        title: "Source or spec misconfigured",
        recognised_by: "condition ComparisonError with a non-transport message (credentials, render failure, unresolvable revision), or InvalidSpecError",
        signals: &[
            "authentication required",
            "is not permitted in project",
            "do not match any of the allowed destinations",
            "unable to resolve",
            "Failed to load target state",
            "kustomize build",
            "helm template",
            "repository not found",
        ],
        default_action: Action::Escalate,
        ladder: &[Escalate],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "The app's source cannot be rendered or is not allowed: wrong credentials, a revision that does not exist, a template error, or a repo/destination the project does not permit. No refresh or sync fixes this; a person has to change Git, the repo credentials or the AppProject.",
        runbook: &[
            "Read the condition message: credentials, revision, render error or project restriction.",
            "Fix the repo credential secret, the targetRevision, the manifests, or the AppProject's sourceRepos/destinations.",
            "Refresh the app once fixed.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::CrdNotEstablished,
        title: "Custom resource applied before its CRD was established",
        recognised_by: "failed operation whose message or resource results say the kind is unknown to the API server, while the app ships the kind's CRD itself or fewer than kind_not_found_retries retries have run (otherwise api-not-served)",
        signals: KIND_NOT_FOUND_SIGNALS,
        default_action: Action::Sync,
        ladder: &[Sync, Escalate],
        controller_refresh_counts: false,
        offers_sync: true,
        recommends: HumanAction::Sync,
        diagnosis: "A custom resource was applied in the same wave as (or before) its CustomResourceDefinition, or before the operator that installs the CRD was ready, so the API server did not know the kind yet. Once the CRD is established a single re-sync usually succeeds; the lasting fix is ordering.",
        runbook: &[
            "Check the sync waves: CRDs (and Namespaces) in wave -2, operators in 0, CRs in 1.",
            "Add `SkipDryRunOnMissingResource=true` to CRs whose CRD an operator creates.",
            "Re-sync once the CRD shows `Established=True`.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::ApiNotServed,
        title: "Kind's API not served by the cluster",
        recognised_by: "kind-not-found in a failed operation for an API version Kubernetes removed, a CRD version no longer served, or a kind whose CRD the app does not ship and that retries did not see appear",
        signals: &["could not find version"],
        default_action: Action::Escalate,
        ladder: &[Escalate],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "The manifests use a kind or version the destination cluster does not serve: a built-in API removed by a Kubernetes upgrade (PodSecurityPolicy, extensions/v1beta1 Ingress, batch/v1beta1 CronJob), a CRD version its operator dropped, or a CRD nobody installed. Unlike a CRD racing its resources in one sync, no retry brings it back; Git has to change or the operator has to be installed.",
        runbook: &[
            "Read the kind and version in the message; check `kubectl api-resources` on the destination.",
            "Removed built-in APIs: move the manifests to the served version (the Kubernetes deprecation guide lists them).",
            "CRD versions or missing CRDs: install or upgrade the operator, or ship the CRD in an earlier sync wave of this app.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::WebhookUnavailable,
        title: "Operator not ready / admission webhook unavailable",
        recognised_by: "failed operation whose resource messages say an admission webhook could not be called",
        signals: &["failed calling webhook", "no endpoints available for service", "failed to call webhook"],
        default_action: Action::Wait,
        ladder: &[Sync, Escalate],
        controller_refresh_counts: false,
        offers_sync: true,
        recommends: HumanAction::Sync,
        diagnosis: "An admission webhook the resources must pass (often served by an operator in the same rollout) was not reachable: its pods were not ready or had no endpoints. Wave order alone does not wait for webhook readiness. After a back-off, one re-sync usually succeeds; if it keeps failing the webhook service is down.",
        runbook: &[
            "Check the webhook's Service endpoints and pods (`kubectl get endpoints -n <webhook-namespace> <webhook-service>`).",
            "Put the operator/webhook in an earlier wave with a health check that waits for readiness.",
            "Re-sync once the webhook answers.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::ResourceRejected,
        title: "Resources rejected by the API server",
        recognised_by: "failed operation whose resource messages are deterministic rejections: admission denied, invalid or immutable fields",
        signals: &["denied the request", "field is immutable", "Invalid value", "is invalid", "error validating data"],
        default_action: Action::Escalate,
        ladder: &[Escalate],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "The API server or an admission policy rejected the manifests themselves. The same manifests will be rejected again, so a re-sync is pointless; Git must change (or the policy must allow it).",
        runbook: &[
            "Read the rejected resource's message in the last sync result.",
            "For immutable fields (Job templates, Service clusterIP, selectors), recreate the resource (`Replace=true` on it) or change Git.",
            "For policy denials, fix the manifest or get a policy exception.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::HookFailed,
        title: "Sync hook failed",
        recognised_by: "a hook in status.operationState.syncResult.resources with hookPhase Failed/Error, or operation message about failed hooks / Job backoff limit, also when the app is Synced and Healthy afterwards",
        signals: &["Job has reached the specified backoff limit", "one or more SyncFail hooks failed", "BackoffLimitExceeded"],
        default_action: Action::Escalate,
        ladder: &[Escalate],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "A PreSync/Sync/PostSync/SyncFail hook (usually a Job: migration, smoke test) failed. Argo Medic never re-syncs after a hook failure: a sync re-runs every hook, and hooks change databases and external systems.",
        runbook: &[
            "Read the hook Job's logs (`kubectl logs job/<hook-job> -n <hook-namespace>`).",
            "Decide whether the hook is safe to re-run; fix its cause (migration lock, test flake, permissions).",
            "Choose hook-delete-policy deliberately (BeforeHookCreation, HookSucceeded, HookFailed).",
            "Re-sync by hand once it is safe (`argocd app sync <app>` or the Argo CD UI). This message offers no Sync button: a sync re-runs every hook.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::HookConflict,
        title: "Hook resource conflict",
        recognised_by: "a hook resource result whose message says it already exists, is being deleted, or is immutable",
        signals: &["already exists", "is being deleted", "object is being deleted", "waiting for deletion of hook"],
        default_action: Action::Escalate,
        ladder: &[Escalate],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "A hook Job with a fixed name from an earlier sync still exists (or is still being deleted), so the new hook cannot be created. This happens when no hook-delete-policy removes finished hooks. A sync fails the same way until the leftover is gone, and it re-runs every hook.",
        runbook: &[
            "Delete the leftover hook Job if it is finished (`kubectl delete job/<hook-job> -n <hook-namespace>`).",
            "Add `argocd.argoproj.io/hook-delete-policy: BeforeHookCreation` or use `generateName`.",
            "Re-sync from Argo CD once it is gone (`argocd app sync <app>`).",
        ],
    },
    CatalogueEntry {
        id: FailureMode::PostSyncBlockedByHealth,
        title: "PostSync never runs: health never turns Healthy",
        recognised_by: "operation Running longer than progressing_timeout with `waiting for healthy state of` while the app has PostSync hooks pending",
        signals: &["waiting for healthy state of"],
        default_action: Action::Wait,
        ladder: &[Escalate],
        controller_refresh_counts: false,
        offers_sync: true,
        recommends: HumanAction::Acknowledge,
        diagnosis: "PostSync hooks run only when every synced resource is Healthy. One resource stays Progressing (often a custom resource without an accurate health check), so the PostSync hooks and the operation wait forever unless a sync timeout is set.",
        runbook: &[
            "Find the resource named in `waiting for healthy state of ...` and check its status.",
            "If it is a custom resource, add or fix its health customization (`resource.customizations.health.<group>_<Kind>`).",
            "Consider `controller.sync.timeout.seconds` so stuck operations end.",
            "Terminate the operation and re-sync when it is fixed.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::CustomHealthNeverHealthy,
        title: "Custom resource health never reports Healthy",
        recognised_by: "a resource of a non-built-in API group Progressing past progressing_timeout (resource health or `waiting for healthy state of <group>/<Kind>/<name>`); past the kind's bound (custom_health_bounds, custom_health_bound_secs) the refresh is skipped",
        signals: &["Waiting for Ready condition", "Status conditions not found", "CRD is being installed"],
        default_action: Action::Refresh,
        ladder: &[Refresh, Escalate],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "A custom resource's health check (a Lua customization, or the default) never reports Healthy, so the app stays Progressing. Either the operator does not update status conditions, or the health check does not match the CRD's status contract. A sync does not change what the health check reports.",
        runbook: &[
            "Look at the custom resource's `.status.conditions` and `observedGeneration`.",
            "Compare with the health customization for its kind in argocd-cm.",
            "Fix the operator or the health check; `argocd.argoproj.io/ignore-healthcheck: \"true\"` removes a resource from app health (≥2.14).",
        ],
    },
    CatalogueEntry {
        id: FailureMode::HealthDegraded,
        title: "Health Degraded",
        recognised_by: "status.health.status == Degraded without a failed hook or operation to explain it",
        signals: &["exceeded its progress deadline", "CrashLoopBackOff", "ImagePullBackOff"],
        default_action: Action::Escalate,
        ladder: &[Escalate],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "A workload is really failing (crash loops, image pulls, a rollout past its deadline). Argo CD is reporting correctly; a refresh or sync will not make it healthy.",
        runbook: &[
            "Find the Degraded resource in the tree and read its events and pod logs.",
            "Roll back in Git if the last change caused it.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::PruneBlastRadius,
        title: "Prune beyond the blast radius",
        recognised_by: "more than max_prune resources with requiresPruning, any protected kind (Namespace, CRD, PV/PVC) requiring pruning, or `auto-sync will wipe out all resources`",
        signals: &["auto-sync will wipe out all resources"],
        default_action: Action::Escalate,
        ladder: &[Escalate],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "A sync would delete more than Argo Medic may delete on its own, or something that holds data or scopes other resources. Mass prunes usually come from a mistyped path, a generator error or a broken render, not from a wanted change.",
        runbook: &[
            "Preview what would be pruned (`argocd app diff <app>`, or the UI's prune list).",
            "Check the last Git change to the app's path and the repo-server for render errors.",
            "If the deletion is wanted, sync with prune by hand; consider `PruneLast=true` and `Prune=confirm` on data-holding kinds.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::PruneConfirmPending,
        title: "Prune waiting for confirmation",
        recognised_by: "resources with requiresDeletionConfirmation (Prune=confirm / Delete=confirm) while an operation waits",
        signals: &["requires deletion confirmation", "deletion-approved"],
        default_action: Action::Escalate,
        ladder: &[Escalate],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "The app's owners marked these resources `Prune=confirm`: the sync waits until a human approves the deletion. Argo Medic never approves it, and a new sync would wait the same way.",
        runbook: &[
            "Review the resources waiting for deletion.",
            "Approve in the Argo CD UI (or annotate the Application with `argocd.argoproj.io/deletion-approved: <timestamp>`) if the deletion is wanted.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::DeletionStuck,
        title: "Deletion stuck on finalizers / namespace terminating",
        recognised_by: "metadata.deletionTimestamp older than deletion_timeout with finalizers left, resource health `Pending deletion`, or `because it is being terminated`",
        signals: &["Pending deletion", "because it is being terminated", "unable to create new content in namespace"],
        default_action: Action::Escalate,
        ladder: &[Escalate],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "Something is being deleted and cannot finish: a finalizer whose controller is gone, a namespace waiting for its contents, or a cloud resource that refuses deletion. Removing finalizers blindly orphans cloud resources, so this needs a person. A sync does not help while the deletion hangs.",
        runbook: &[
            "List what is left: `kubectl get all -n <namespace>`, and `kubectl api-resources --verbs=list --namespaced` for the rest.",
            "Find each blocking finalizer's controller; fix it rather than deleting the finalizer.",
            "Only as a last resort, remove a finalizer, after checking what it protects.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::AppDeleting,
        title: "Application being deleted",
        recognised_by: "metadata.deletionTimestamp set within deletion_timeout",
        signals: &["application is deleting"],
        default_action: Action::Wait,
        ladder: &[],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "The Application is being deleted (cascading its resources). Nothing to do (and nothing to sync) unless it takes too long.",
        runbook: &[],
    },
    CatalogueEntry {
        id: FailureMode::PermissionDenied,
        title: "Permission denied (RBAC)",
        recognised_by: "operation, resource or condition message saying the controller is forbidden, or an Argo CD `permission denied`",
        signals: &[
            "is forbidden",
            "permission denied",
            "cannot list resource",
            "cannot create resource",
            "cannot patch resource",
            "Unauthorized",
        ],
        default_action: Action::Escalate,
        ladder: &[Escalate],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "Argo CD (or the cluster it deploys to) lacks a permission: the application controller's service account on the destination, an AppProject restriction, or Argo CD RBAC. Retrying or re-syncing cannot help.",
        runbook: &[
            "Read who lacks which verb on which resource in the message.",
            "Fix the destination cluster's RBAC for the Argo CD service account, or the AppProject's resource whitelists.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::AppSetHandEdit,
        title: "ApplicationSet-generated app edited by hand",
        recognised_by: "an ApplicationSet ownerReference, and a managedFields entry by another manager (argocd-server, kubectl-*, helm, argocd) setting spec fields outside appset_ignored_fields after argocd-applicationset-controller (or the legacy applicationset-controller) last wrote",
        signals: &[],
        default_action: Action::Escalate,
        ladder: &[Escalate],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "Someone changed an Application that an ApplicationSet generates. The ApplicationSet is the source of truth and reverts the edit on its next reconcile, so the change will silently disappear. Argo Medic does not sync such an edit into the cluster.",
        runbook: &[
            "Make the change in the ApplicationSet template or its generator input instead.",
            "To keep a field per app, use `spec.ignoreApplicationDifferences` or `preservedFields` on the ApplicationSet.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::OwnershipConflict,
        title: "Another writer or app fights over the app's resources",
        recognised_by: "condition SharedResourceWarning (`is part of applications`), an operation failed with `Shared resource found`, or self-heal repeated self_heal_loop_attempts times (operation.sync.autoHealAttemptsCount) and still OutOfSync",
        signals: &["is part of applications", "Shared resource found"],
        default_action: Action::Escalate,
        ladder: &[Escalate],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "Two owners want the same resource: two Applications render it, or self-heal keeps reverting a change another writer (an HPA on replicas, a mutating webhook, an operator) makes again. Each sync just hands the resource to the other side; waiting never settles it.",
        runbook: &[
            "For a shared resource: decide which app owns it and remove it from the other (or set `argocd.argoproj.io/sync-options: FailOnSharedResource=true` to make the conflict loud).",
            "For self-heal loops: find the other writer in the resource's managedFields and add `ignoreDifferences` (with `RespectIgnoreDifferences=true`) for the fields it owns.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::SyncWindowBlocked,
        title: "Sync window blocking",
        recognised_by: "operation message `Sync operation blocked by sync window`, or an earlier sync refused with `cannot sync: blocked by sync window`",
        signals: &["blocked by sync window"],
        default_action: Action::Wait,
        ladder: &[],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "A sync window forbids syncing right now. Argo Medic waits for the window to open rather than going around it.",
        runbook: &[
            "Check the AppProject's sync windows (`argocd proj windows list <project>`); use a manual-sync window if the change is urgent.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::AwaitingPromotion,
        title: "Hydrated sync branch waiting for a promotion",
        recognised_by: "condition ComparisonError whose `app path does not exist` carries the controller's `waiting for an external process to update <sync branch> from <hydrateTo branch>`, on an app with `spec.sourceHydrator.hydrateTo` (controller/state.go:378-379)",
        signals: &["waiting for an external process to update"],
        default_action: Action::Wait,
        ladder: &[],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "The source hydrator writes to a staging branch (`hydrateTo`) and something else — usually a merged pull request — promotes it to the branch the app syncs from. Until that happens the path does not exist there, by design. A refresh or a sync cannot promote; Argo Medic waits, and tells a person if the promotion has not happened within the wait bound.",
        runbook: &[
            "Look for the open promotion pull request from the `hydrateTo` branch to the sync branch, and merge or close it.",
            "If nothing promotes automatically, check the promotion tooling (a CI job, a GitOps Promoter) that should update the sync branch.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::OperationInProgress,
        title: "Another operation in progress",
        recognised_by: "top-level `operation` non-null or operationState.phase Running/Terminating within operation_timeout",
        signals: &["another operation is already in progress"],
        default_action: Action::Wait,
        ladder: &[],
        controller_refresh_counts: false,
        offers_sync: false,
        recommends: HumanAction::Acknowledge,
        diagnosis: "An operation is running; Argo CD allows one at a time, so a sync would be refused. Argo Medic waits and looks again.",
        runbook: &[],
    },
    CatalogueEntry {
        id: FailureMode::OperationRunningTooLong,
        title: "Operation running too long",
        recognised_by: "operationState.phase Running/Terminating for longer than operation_timeout",
        signals: &["waiting for completion of hook", "operation is terminating due to timeout"],
        default_action: Action::Escalate,
        ladder: &[Escalate],
        controller_refresh_counts: false,
        offers_sync: true,
        recommends: HumanAction::TerminateOperation,
        diagnosis: "The operation has run far longer than a sync should: a hook that never completes, a resource that never becomes healthy, or a wedged controller. Terminating is never automatic: a human decides, from the escalation.",
        runbook: &[
            "Read the operation message: which hook or resource is it waiting for?",
            "Check that hook Job / resource in the cluster.",
            "Terminate the operation (`argocd app terminate-op <app>`) and re-sync once the cause is fixed.",
            "Set `controller.sync.timeout.seconds` so this ends on its own.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::AutoSyncRetriesExhausted,
        title: "Automated sync gave up on this revision",
        recognised_by: "condition SyncError `Failed last sync attempt to [<sha>]` (≤3.1: `Failed sync attempt to <sha>`) with a transient or ordering cause",
        signals: &["Failed last sync attempt to", "Failed sync attempt to"],
        default_action: Action::Sync,
        ladder: &[Sync, Escalate],
        controller_refresh_counts: false,
        offers_sync: true,
        recommends: HumanAction::Sync,
        diagnosis: "Automated sync used up its retries on this revision and will not try it again until a new commit or a manual sync. When the cause was transient (an outage, a webhook or CRD not ready yet) and has cleared, one sync to the same revision finishes the rollout.",
        runbook: &[
            "Read the last operation's message for the cause and check it has cleared.",
            "`argocd app sync <app>` to retry the same revision.",
            "Consider `retry.refresh: true` (≥3.2) so retries pick up newer commits.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::SyncFailedTransient,
        title: "Sync failed for a transient reason",
        recognised_by: "operationState.phase Failed/Error whose message is a transport or control-plane error, at the app's current revision",
        signals: TRANSIENT_SIGNALS,
        default_action: Action::Sync,
        ladder: &[Sync, Escalate],
        controller_refresh_counts: false,
        offers_sync: true,
        recommends: HumanAction::Sync,
        diagnosis: "The last sync failed because the Kubernetes API or Argo CD was briefly unavailable, not because of the manifests. Re-running the same operation once is safe when there are no hooks to re-run.",
        runbook: &[
            "Check the destination cluster's API server health at the time of the failure.",
            "Re-run the sync with the same options.",
        ],
    },
    CatalogueEntry {
        id: FailureMode::SyncFailed,
        title: "Sync failed",
        recognised_by: "operationState.phase Failed/Error at the current revision with no more specific mode",
        signals: &["one or more synchronization tasks completed unsuccessfully", "one or more synchronization tasks are not valid"],
        default_action: Action::Escalate,
        ladder: &[Escalate],
        controller_refresh_counts: false,
        offers_sync: true,
        recommends: HumanAction::Acknowledge,
        diagnosis: "The sync failed for a reason Argo Medic does not recognise as safe to retry.",
        runbook: &[
            "Read the operation message and the failed resources in the last sync result.",
            "Check sync waves, hooks, health checks and prune as in the rollout checklist.",
        ],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_has_exactly_one_entry_with_a_diagnosis() {
        for mode in FailureMode::ALL {
            let n = CATALOGUE.iter().filter(|e| e.id == *mode).count();
            assert_eq!(n, 1, "{mode} has {n} entries");
            assert!(!mode.entry().diagnosis.is_empty());
            assert_eq!(mode.id().parse::<FailureMode>().unwrap(), *mode);
        }
        assert_eq!(CATALOGUE.len(), FailureMode::ALL.len());
    }

    #[test]
    fn trouble_modes_have_a_runbook_and_their_default_action_opens_the_ladder() {
        for entry in CATALOGUE.iter().filter(|e| e.id.is_trouble()) {
            if !entry.ladder.is_empty() && entry.default_action != Action::Wait {
                assert_eq!(entry.ladder[0].action(), entry.default_action, "{}", entry.id);
            }
            if entry.default_action == Action::Escalate || entry.ladder.contains(&Rung::Escalate) {
                assert!(!entry.runbook.is_empty(), "{} escalates without a runbook", entry.id);
            }
        }
    }

    #[test]
    fn signals_match_case_insensitively() {
        assert!(FailureMode::CachedManifestError.signalled_by("rpc error: code = Unknown desc = manifest generation error (CACHED): boom"));
        assert!(!FailureMode::CachedManifestError.signalled_by("Manifest generation error: boom"));
        assert_eq!(
            FailureMode::HookFailed.signal_in("Job has reached the specified backoff limit"),
            Some("Job has reached the specified backoff limit")
        );
    }
}
