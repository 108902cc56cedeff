//! The parts of Argo CD's `v1alpha1Application` that Argo Medic reads.
//!
//! Shapes follow Argo CD's own `assets/swagger.json` (v3.5.1) with the wire differences noted in
//! docs/argo-cd-behaviour.md §2: int64 values are JSON numbers, every field may be absent
//! (Go `omitempty`), and unknown fields are ignored. Every struct therefore defaults every field, so
//! a field-masked list item deserialises too; [`Application::incompleteness`] tells such an item apart
//! from a full object, because an absent field proves nothing.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Removes `null` object members, recursively. Go's encoding/json and proxies in front of Argo CD
/// may emit `null` where a field is simply absent; our types treat absent fields as defaults, so
/// stripping nulls first makes every field tolerant of both.
pub fn strip_nulls(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// An app's identity within one Argo CD instance: its namespace and name, shown `namespace/name`.
///
/// The one form every store record, lock, incident, decision and log line names an app by. On
/// the wire and in the state table it is that string (`#[serde(transparent)]`), so records written
/// before this type existed read back unchanged.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AppId(String);

impl AppId {
    /// The id of the Application `name` in `namespace`.
    pub fn new(namespace: &str, name: &str) -> Self {
        Self(format!("{namespace}/{name}"))
    }

    /// Reads a `namespace/name` kept as text (a store's record, a CLI argument); `None` unless
    /// both parts are present. Kubernetes names hold no `/`, so the first one splits them.
    pub fn parse(text: &str) -> Option<Self> {
        let (namespace, name) = text.split_once('/')?;
        (!namespace.is_empty() && !name.is_empty() && !name.contains('/')).then(|| Self(text.to_owned()))
    }

    /// The id as `namespace/name` text, the form stores, keys and logs hold.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The namespace the Application object lives in.
    pub fn namespace(&self) -> &str {
        self.0.split_once('/').map_or("", |(ns, _)| ns)
    }

    /// The Application's name within its namespace.
    pub fn name(&self) -> &str {
        self.0.split_once('/').map_or(self.0.as_str(), |(_, name)| name)
    }
}

impl std::fmt::Display for AppId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::borrow::Borrow<str> for AppId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

// Comparing with text is reading, not building: an id is still only made by `new` or `parse`.
impl PartialEq<str> for AppId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for AppId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for AppId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl AsRef<str> for AppId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Annotation and label an app owner sets to keep Argo Medic away from an app.
pub const OPT_OUT_KEY: &str = "argo-medic.io/opt-out";
/// Annotation an app owner sets to declare the app's hooks safe to run again (`"true"`).
pub const HOOKS_IDEMPOTENT_KEY: &str = "argo-medic.io/hooks-idempotent";
/// Key under which Argo Medic tags its own syncs in `infos` / `operation.info`.
pub const IDEMPOTENCY_INFO_NAME: &str = "argo-medic.io/idempotency-key";
/// The annotation Argo CD's API server sets to ask the controller for a refresh (`normal` or
/// `hard`), removed by the controller when it has processed it.
pub const REFRESH_ANNOTATION: &str = "argocd.argoproj.io/refresh";
/// The annotation that makes Argo CD's controller skip every reconcile of the app
/// (`common/common.go:249`, read at `controller/appcontroller.go:2564` with Go's `ParseBool`).
pub const SKIP_RECONCILE_ANNOTATION: &str = "argocd.argoproj.io/skip-reconcile";
/// Key under which Argo Medic's syncs record when their incident began (RFC 3339), so the incident
/// survives the new operation the sync itself creates.
pub const INCIDENT_BEGAN_INFO_NAME: &str = "argo-medic.io/incident-began";

/// One revision for a single revision field and its multi-source list: the field when it is set,
/// else the list joined with `,` (the controller fills only the list for a multi-source app,
/// controller/state.go:645-656, :1043-1047; controller/sync.go:152-153); `None` when neither is.
pub fn revision_of(single: &str, list: &[String]) -> Option<String> {
    match (single, list) {
        (s, _) if !s.is_empty() => Some(s.to_owned()),
        (_, l) if !l.is_empty() => Some(l.join(",")),
        _ => None,
    }
}

/// A Git revision's metadata (`v1alpha1RevisionMetadata`), the part Argo Medic reads: when the
/// commit was made, to tell a revision older than the one deployed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RevisionMetadata {
    /// Who made the commit, typically `Name <email>`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub author: String,
    /// The commit's date (`util/git/client.go` `RevisionMetadata`: the author date).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<DateTime<Utc>>,
    /// The commit message.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The tags on the commit when it was read; a floating tag may have moved on since.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// An Argo CD Application as the API returns it (`GET /api/v1/applications/{name}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Application {
    /// The object's identity, labels, annotations, owners, writers and deletion state.
    pub metadata: ObjectMeta,
    /// The desired state: project, sources, destination and sync policy.
    pub spec: ApplicationSpec,
    /// What the controller last observed: sync and health, the last operation, conditions and resources.
    pub status: ApplicationStatus,
    /// Non-null while an operation is requested or running (the "busy" signal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<Box<Operation>>,
}

/// A list response (`GET /api/v1/applications`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ApplicationList {
    /// The Applications the caller may see; field-masked when the request named `fields`, so check `Application::incompleteness`.
    pub items: Vec<Application>,
}

/// The Kubernetes metadata of an Application (`metadata`, `v1ObjectMeta`), the part Argo Medic reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ObjectMeta {
    /// The Application's name, unique within its namespace; with the namespace, the app's `AppId`.
    pub name: String,
    /// The namespace the Application object lives in (not the one it deploys to, `spec.destination.namespace`).
    pub namespace: String,
    /// The app's labels; matched against the configured scope's label selector and the `argo-medic.io/opt-out` label.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The app's annotations; Argo Medic reads its own `argo-medic.io/*` keys and Argo CD's refresh and skip-reconcile ones.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// The objects that own the app; an `ApplicationSet` among them marks a generated app.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<OwnerReference>,
    /// Finalizers that hold a deletion until removed, e.g. `resources-finalizer.argocd.argoproj.io` for a cascading delete.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    /// Set by the API server when the Application is deleted; the object stays until its finalizers are removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<DateTime<Utc>>,
    /// When the Application was created; a new app may still be waiting for its first automated sync.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<DateTime<Utc>>,
    /// The API server's opaque version of the object, changed by every write; a field-masked list item never has it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// Incremented by the API server on every change to the spec.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// Who wrote which fields, and when; how a hand edit of an ApplicationSet-generated app shows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub managed_fields: Vec<ManagedFieldsEntry>,
}

/// One owner of the Application (`metadata.ownerReferences[]`, `v1OwnerReference`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OwnerReference {
    /// The owner's API version, `argoproj.io/v1alpha1` for an ApplicationSet.
    pub api_version: String,
    /// The owner's kind; `ApplicationSet` for a generated app.
    pub kind: String,
    /// The owner's name: for a generated app, its ApplicationSet, named in the escalation of a hand edit.
    pub name: String,
    /// The owner's Kubernetes UID.
    pub uid: String,
    /// True when this owner is the app's managing controller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
}

/// One writer of the object, as Kubernetes records it; used to see hand edits of generated apps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ManagedFieldsEntry {
    /// Who wrote the fields: `argocd-applicationset-controller`, `argocd-server`, `kubectl-edit`, the controller, …
    pub manager: String,
    /// How they were written: `Update`, or `Apply` for server-side apply.
    pub operation: String,
    /// When this manager last wrote its fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<DateTime<Utc>>,
    /// The fields this manager owns, as Kubernetes' `FieldsV1` tree (`f:spec`, `f:metadata`, …); `null` when absent.
    #[serde(rename = "fieldsV1", skip_serializing_if = "serde_json::Value::is_null")]
    pub fields_v1: serde_json::Value,
}

/// The Application's desired state (`spec`, `v1alpha1ApplicationSpec`), the part Argo Medic reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ApplicationSpec {
    /// The AppProject the app belongs to (empty means `default`); it bounds the app's repositories, destinations and sync windows.
    pub project: String,
    /// The source of a single-source app; `None` for a multi-source app.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<ApplicationSource>,
    /// The sources of a multi-source app, in order; empty for a single-source app.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<ApplicationSource>,
    /// The cluster and namespace the app deploys to.
    pub destination: ApplicationDestination,
    /// When and how the controller syncs the app by itself; `None` when only manual syncs run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_policy: Option<Box<SyncPolicy>>,
    /// The source hydrator (`spec.sourceHydrator`, Argo CD ≥3.1), the part the policy reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_hydrator: Option<SourceHydrator>,
}

/// `spec.sourceHydrator` (`v1alpha1SourceHydrator`): only whether hydration goes through a
/// staging branch that something else promotes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SourceHydrator {
    /// The staging branch to commit hydrated manifests to; `None` when the hydrator commits to the sync branch itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hydrate_to: Option<HydrateTo>,
}

/// `spec.sourceHydrator.hydrateTo` (`v1alpha1HydrateTo`): the staging branch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HydrateTo {
    /// The branch the hydrator commits to; a process outside Argo CD (a pull request) promotes it to the sync branch.
    pub target_branch: String,
}

/// Where an app's manifests come from (`v1alpha1ApplicationSource`): a repository, a path or chart, and a revision.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ApplicationSource {
    /// URL of the Git, Helm or OCI repository that holds the manifests or chart (`repoURL` on the wire).
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    /// The directory within a Git repository that holds the manifests; empty for a Helm chart.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
    /// The branch, tag or commit to deploy, or a Helm chart's version or semver range; `HEAD` when empty.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub target_revision: String,
    /// The Helm chart's name, for a source in a Helm repository; empty otherwise.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub chart: String,
}

/// Where an app deploys (`spec.destination`): a cluster, by API server URL or by name, and a namespace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ApplicationDestination {
    /// The target cluster's Kubernetes API server URL; set when `name` is not.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub server: String,
    /// The target cluster's name as registered in Argo CD; set when `server` is not.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The namespace for namespaced resources that name none, and the one `CreateNamespace=true` creates.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// When and how the controller syncs the app by itself (`spec.syncPolicy`, `v1alpha1SyncPolicy`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SyncPolicy {
    /// Automated sync; `None` when only people (or Argo Medic) sync the app. `Application::auto_sync` also checks `enabled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub automated: Option<SyncPolicyAutomated>,
    /// App-wide sync options as `Key=value` text: `CreateNamespace=true`, `ServerSideApply=true`, `Prune=confirm`, …
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sync_options: Vec<String>,
    /// How failed syncs are retried; without it an automated sync is retried 5 times.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryStrategy>,
}

/// The automated sync block (`spec.syncPolicy.automated`): the controller syncs the app when it is OutOfSync.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SyncPolicyAutomated {
    /// Automated syncs also delete resources the source no longer renders (default false).
    pub prune: bool,
    /// Automated syncs also revert live changes at a revision already synced (default false).
    pub self_heal: bool,
    /// Lets an automated sync with prune leave the app with no resources at all (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_empty: Option<bool>,
    /// Argo CD ≥2.14: `enabled: false` keeps the block but switches automation off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// How a failed sync is retried (`v1alpha1RetryStrategy`): in the sync policy, on one operation or in a sync request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RetryStrategy {
    /// How many times a failed sync is retried: 0 never, a negative number without end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    /// Argo CD ≥3.2: a retry syncs the target's latest revision instead of the one first requested (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh: Option<bool>,
    /// The wait between retries (`duration`, `factor`, `maxDuration`), kept as raw JSON: Argo Medic does not read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff: Option<serde_json::Value>,
}

/// What the controller last observed of the app (`status`, `v1alpha1ApplicationStatus`), the part Argo Medic reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ApplicationStatus {
    /// The result of the last comparison with the source: `Synced`, `OutOfSync` or `Unknown`, and at which revision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncStatus>,
    /// The app's aggregated health: the worst health of its non-hook resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthStatus>,
    /// The operation the controller started last (running or ended): its phase, message and result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_state: Option<Box<OperationState>>,
    /// Errors and warnings the controller currently reports (`ComparisonError`, `SyncError`, `SharedResourceWarning`, …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ApplicationCondition>,
    /// The Kubernetes resources the app manages, each with its sync status and health.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceStatus>,
    /// When the controller last compared the app with its source; a refresh is verified by this moving.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconciled_at: Option<DateTime<Utc>>,
    /// The external URLs and container images of the app's resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Box<ApplicationSummary>>,
    /// Past deployments, newest last (`status.history`, kept to `spec.revisionHistoryLimit`).
    /// Carries no `info`: after another operation replaced the one that held an idempotency key,
    /// this is what tells a resumed claim that a deployment started after it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<RevisionHistory>,
    /// The source hydrator's last and current hydration (`status.sourceHydrator`, Argo CD ≥3.1):
    /// a failed hydration leaves the app Synced at the last hydrated commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_hydrator: Option<SourceHydratorStatus>,
}

/// `status.sourceHydrator` (`v1alpha1SourceHydratorStatus`), the part the policy reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SourceHydratorStatus {
    /// The last or running hydration: its phase, message and end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_operation: Option<HydrateOperation>,
}

/// `status.sourceHydrator.currentOperation` (`v1alpha1HydrateOperation`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HydrateOperation {
    /// `Hydrating`, `Failed` or `Hydrated` (`pkg/apis/application/v1alpha1/types.go:1299`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub phase: String,
    /// `Failed to hydrate: <the error>` when it failed (`controller/hydrator/hydrator.go:327`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When the last hydration failed or finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
}

/// One entry of `status.history` (`v1alpha1RevisionHistory`): a sync that ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RevisionHistory {
    /// The deployment's number, one more than the previous entry's; the id `argocd app rollback` takes.
    pub id: i64,
    /// The revision a single-source app was deployed at; empty for a multi-source app.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    /// The revisions a multi-source app was deployed at, one per entry of `spec.sources`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    /// When the operation that made this deployment started; absent from entries older than the field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deploy_started_at: Option<DateTime<Utc>>,
    /// When the deployment finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployed_at: Option<DateTime<Utc>>,
    /// Who started the deployment: a user, or the controller's automated sync.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initiated_by: Option<OperationInitiator>,
}

/// The result of the controller's last comparison of live state with the source (`status.sync`, `v1alpha1SyncStatus`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SyncStatus {
    /// `Synced`, `OutOfSync` or `Unknown` (the `sync_status` constants); empty when the field was left out.
    pub status: String,
    /// The commit (or chart version) a single-source app was last compared at; empty for a multi-source app.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    /// The revisions a multi-source app's sources were last compared at, in `spec.sources` order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
}

/// A health assessment (`v1alpha1HealthStatus`): the app's aggregate in `status.health`, or one resource's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HealthStatus {
    /// `Healthy`, `Progressing`, `Degraded`, `Suspended`, `Missing` or `Unknown` (the `health` constants).
    pub status: String,
    /// A resource's health check explanation (`Waiting for Ready condition`); deprecated and empty for the app itself.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When the app's health status last changed; deprecated and never written for a resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<DateTime<Utc>>,
}

/// An operation asked of the controller (`v1alpha1Operation`): `operation` while pending, `status.operationState.operation` once started.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Operation {
    /// The sync asked for: revisions, prune, options and which resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncOperation>,
    /// Who asked for the operation: a user through the API, or the controller's automated sync.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initiated_by: Option<OperationInitiator>,
    /// `{name, value}` pairs from the sync request's `infos`; Argo Medic's syncs carry their idempotency key and incident here.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub info: Vec<Info>,
    /// How a failed attempt is retried: the request's or the spec's strategy, or a limit of 5 for an automated sync.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryStrategy>,
}

/// The sync an operation performs (`v1alpha1SyncOperation`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SyncOperation {
    /// The commit, tag or branch (or Helm chart version) to sync to; empty for the spec's target and for a multi-source app.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    /// The revisions to sync a multi-source app's sources to, in `spec.sources` order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    /// Whether the sync may delete resources the source no longer renders.
    pub prune: bool,
    /// A dry run (`argocd app sync --dry-run`): applied with `--dry-run`, so nothing changes.
    pub dry_run: bool,
    /// This sync's options (`ServerSideApply=true`, `Prune=confirm`, …): the spec's, or the request's in their place.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sync_options: Vec<String>,
    /// `hook` (the default) or `apply` (hooks skipped), each with `force`; kept as raw JSON: Argo Medic does not read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_strategy: Option<serde_json::Value>,
    /// The resources of a partial sync (`group`, `kind`, `name`, `namespace`); `None` syncs them all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<serde_json::Value>>,
    /// Self-heal syncs in a row (Go `SelfHealAttemptsCount`; `autoHealAttemptsCount` on the wire).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_heal_attempts_count: Option<i64>,
}

/// Who started an operation (`v1alpha1OperationInitiator`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OperationInitiator {
    /// The user who asked for it through the API; empty for an automated operation.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// True when the controller started it by itself (automated sync or self-heal).
    pub automated: bool,
}

/// A `{name, value}` pair of `infos` / `operation.info`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Info {
    /// The key, e.g. `argo-medic.io/idempotency-key` (`IDEMPOTENCY_INFO_NAME`).
    pub name: String,
    /// The value, free text that Argo CD copies without reading it.
    pub value: String,
}

/// The operation the controller started last, running or ended (`status.operationState`, `v1alpha1OperationState`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OperationState {
    /// The operation as started, copied from `operation` together with its `info`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<Box<Operation>>,
    /// `Running`, `Terminating`, `Failed`, `Error` or `Succeeded` (the `phase` constants).
    pub phase: String,
    /// The operation's latest message: progress (`waiting for healthy state of …`), an error, or a retry's.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// What the sync did: the revisions it synced and the result of each resource and hook.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_result: Option<Box<SyncOperationResult>>,
    /// When the operation started; kept across its retries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<DateTime<Utc>>,
    /// When the operation completed; on a `Running` one, when a failed attempt ended and its retry is waiting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
    /// How many retries of the operation have been scheduled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_count: Option<i64>,
}

/// The result of a sync (`status.operationState.syncResult`, `v1alpha1SyncOperationResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SyncOperationResult {
    /// The commit (or chart version) the sync applied; empty for a multi-source app.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    /// The revisions a multi-source sync applied, in `spec.sources` order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    /// One result for each resource or hook the sync touched.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceResult>,
}

/// One entry of `syncResult.resources`: a resource or hook the last operation touched.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ResourceResult {
    /// The API group of the resource or hook; empty for the core group.
    pub group: String,
    /// The API version of the resource or hook.
    pub version: String,
    /// The kind of the resource or hook (`Deployment`, `Job`, …).
    pub kind: String,
    /// The namespace of the resource or hook; empty for a cluster-scoped resource.
    pub namespace: String,
    /// The name of the resource or hook.
    pub name: String,
    /// `Synced`, `SyncFailed`, `Pruned`, `PruneSkipped`; empty for hooks.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// The apply, prune or hook message: the Kubernetes API server's error, or a hook's health message.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// `PreSync`, `Sync`, `PostSync`, `SyncFail` or `Skip` for a hook; empty for other resources.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub hook_type: String,
    /// A hook's state: `Running`, `Succeeded`, `Failed` or `Error`; other resources may carry one too.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub hook_phase: String,
    /// The sync phase the result was taken in: `PreSync`, `Sync`, `PostSync` or `SyncFail`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub sync_phase: String,
}

/// A condition the controller reports on the app (`status.conditions[]`), usually an error or a warning.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ApplicationCondition {
    /// The condition type (`ComparisonError`, `SyncError`, `SharedResourceWarning`, …); `type` on the wire.
    #[serde(rename = "type")]
    pub kind: String,
    /// What the condition reports, e.g. a ComparisonError's wrapped repo-server or Git error.
    pub message: String,
    /// When the condition appeared or its message last changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<DateTime<Utc>>,
}

/// One entry of `status.resources`: a managed resource's sync and (when persisted) health state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ResourceStatus {
    /// The API group of the managed resource; empty for the core group.
    pub group: String,
    /// The API version of the managed resource.
    pub version: String,
    /// The kind of the managed resource.
    pub kind: String,
    /// The namespace of the managed resource; empty for a cluster-scoped one.
    pub namespace: String,
    /// The name of the managed resource.
    pub name: String,
    /// The resource's own sync status, `Synced` or `OutOfSync`; empty for hooks and ignored resources.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// The resource's health, from a built-in check or a Lua script; `None` without a check, and in list items of Argo CD ≥3.0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthStatus>,
    /// True for a live hook resource (annotated `argocd.argoproj.io/hook` or `helm.sh/hook`) still in the cluster.
    pub hook: bool,
    /// True for a live resource the source no longer renders: a sync with prune deletes it.
    pub requires_pruning: bool,
    /// The resource's `argocd.argoproj.io/sync-wave`: lower waves are applied first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_wave: Option<i64>,
    /// True when pruning or deleting the resource waits for a person (`Prune=confirm` or `Delete=confirm`).
    pub requires_deletion_confirmation: bool,
}

/// Links and images of the app's resources (`status.summary`, `v1alpha1ApplicationSummary`), for people.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ApplicationSummary {
    /// The external URLs of the app's resources (ingress hosts, `link.argocd.argoproj.io/*` annotations).
    #[serde(rename = "externalURLs", skip_serializing_if = "Vec::is_empty")]
    pub external_urls: Vec<String>,
    /// The container images the app's resources run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
}

/// Sync status values (`status.sync.status`).
pub mod sync_status {
    /// Every managed resource matches its desired state.
    pub const SYNCED: &str = "Synced";
    /// A managed resource differs from its desired state, is missing, or needs pruning.
    pub const OUT_OF_SYNC: &str = "OutOfSync";
    /// The comparison could not be made: live state failed to load, or the spec or project is invalid.
    pub const UNKNOWN: &str = "Unknown";
}

/// Health values (`status.health.status`).
pub mod health {
    /// Every managed resource with a health check is healthy.
    pub const HEALTHY: &str = "Healthy";
    /// A resource is not healthy yet but may become so (a rollout, a custom resource still reconciling).
    pub const PROGRESSING: &str = "Progressing";
    /// A resource failed or did not become healthy in time (a Deployment past its progress deadline, a failed Job).
    pub const DEGRADED: &str = "Degraded";
    /// A resource is suspended or paused on purpose (a suspended CronJob, a paused Rollout).
    pub const SUSPENDED: &str = "Suspended";
    /// The app expects resources but none of them exists live.
    pub const MISSING: &str = "Missing";
    /// Health could not be assessed: a health check failed to run, or the spec or project is invalid.
    pub const UNKNOWN: &str = "Unknown";
}

/// Operation phases (`status.operationState.phase`).
pub mod phase {
    /// In progress, or failed and waiting for its next retry (then `finishedAt` is set and the message says `Retrying attempt #n`).
    pub const RUNNING: &str = "Running";
    /// Termination was requested; the running hooks are stopped and the operation ends `Failed` (or `Error`).
    pub const TERMINATING: &str = "Terminating";
    /// Ran and failed (a resource failed to apply, a hook failed, or it was terminated), with no retries left.
    pub const FAILED: &str = "Failed";
    /// Could not run or ended in an error: a comparison or spec error at its start, a cluster or project lookup failure.
    pub const ERROR: &str = "Error";
    /// Finished successfully: every task ran and every hook succeeded.
    pub const SUCCEEDED: &str = "Succeeded";
}

impl Application {
    /// The app's identity within one Argo CD instance.
    pub fn id(&self) -> AppId {
        AppId::new(&self.metadata.namespace, &self.metadata.name)
    }

    /// `status.sync.status` (`Synced`, `OutOfSync`, `Unknown`), or `""` when absent.
    pub fn sync_status(&self) -> &str {
        self.status.sync.as_ref().map_or("", |s| s.status.as_str())
    }

    /// `status.health.status` (`Healthy`, `Degraded`, …), or `""` when absent.
    pub fn health_status(&self) -> &str {
        self.status.health.as_ref().map_or("", |h| h.status.as_str())
    }

    /// True when the app is `Synced` and `Healthy`, whatever its operation and conditions say (unlike `is_calm`).
    pub fn is_synced_and_healthy(&self) -> bool {
        self.sync_status() == sync_status::SYNCED && self.health_status() == health::HEALTHY
    }

    /// The revision the app is compared against: the last compared revision, else the last
    /// operation's revision, else the spec's target.
    pub fn revision(&self) -> String {
        let sync = self.status.sync.as_ref();
        if let Some(rev) = sync.map(|s| &s.revision).filter(|r| !r.is_empty()) {
            return rev.clone();
        }
        // A multi-source app: the controller writes only the list (controller/state.go:645-656),
        // and a change in any source is a new revision of the app.
        if let Some(revs) = sync.and_then(|s| revision_of("", &s.revisions)) {
            return revs;
        }
        if let Some(result) = self.status.operation_state.as_ref().and_then(|o| o.sync_result.as_ref())
            && !result.revision.is_empty()
        {
            return result.revision.clone();
        }
        self.spec.source.as_ref().or(self.spec.sources.first()).map(|s| s.target_revision.clone()).unwrap_or_default()
    }

    /// True when automated sync is switched on.
    pub fn auto_sync(&self) -> Option<&SyncPolicyAutomated> {
        self.spec.sync_policy.as_ref().and_then(|p| p.automated.as_ref()).filter(|a| a.enabled != Some(false))
    }

    /// The ApplicationSet that generated this app, if any.
    pub fn application_set(&self) -> Option<&OwnerReference> {
        self.metadata.owner_references.iter().find(|o| o.kind == "ApplicationSet")
    }

    /// True once the Application's deletion was requested (`metadata.deletionTimestamp` is set).
    pub fn is_deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    /// True when Argo CD's controller skips the app: `argocd.argoproj.io/skip-reconcile` holds a
    /// value Go's `strconv.ParseBool` reads as true.
    pub fn reconcile_skipped(&self) -> bool {
        self.metadata
            .annotations
            .get(SKIP_RECONCILE_ANNOTATION)
            .is_some_and(|v| matches!(v.as_str(), "1" | "t" | "T" | "true" | "TRUE" | "True"))
    }

    /// True when the app owner opted out, by annotation or label, with a truthy value.
    pub fn opted_out(&self) -> bool {
        let truthy = |v: &String| matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "yes" | "1");
        self.metadata.annotations.get(OPT_OUT_KEY).is_some_and(truthy) || self.metadata.labels.get(OPT_OUT_KEY).is_some_and(truthy)
    }

    /// The first condition of type `kind` (`ComparisonError`, `SyncError`, …), if the controller reports one.
    pub fn condition(&self, kind: &str) -> Option<&ApplicationCondition> {
        self.status.conditions.iter().find(|c| c.kind == kind)
    }

    /// The last operation's sync result resources.
    pub fn result_resources(&self) -> &[ResourceResult] {
        self.status.operation_state.as_ref().and_then(|o| o.sync_result.as_ref()).map_or(&[], |r| r.resources.as_slice())
    }

    /// True when the app runs resource hooks (seen in the managed resources or the last result).
    pub fn has_hooks(&self) -> bool {
        self.status.resources.iter().any(|r| r.hook) || self.result_resources().iter().any(|r| !r.hook_type.is_empty())
    }

    /// True when a hook of the last operation started (whatever its outcome): re-running that
    /// operation runs the hook again.
    pub fn hooks_ran(&self) -> bool {
        self.result_resources().iter().any(|r| !r.hook_type.is_empty() && !r.hook_phase.is_empty())
    }

    /// The last operation's phase, or `""`.
    pub fn operation_phase(&self) -> &str {
        self.status.operation_state.as_ref().map_or("", |s| s.phase.as_str())
    }

    /// True when the app ships the CustomResourceDefinition of `group` itself (managed resources or
    /// the last result), so a kind of that group missing during a sync is the CRD racing its CRs.
    pub fn ships_crd_for(&self, group: &str) -> bool {
        let suffix = format!(".{group}");
        let crd = |kind: &str, name: &str| kind == "CustomResourceDefinition" && !group.is_empty() && name.ends_with(&suffix);
        self.status.resources.iter().any(|r| crd(&r.kind, &r.name)) || self.result_resources().iter().any(|r| crd(&r.kind, &r.name))
    }

    /// Calm: nothing for Argo Medic to look at. Synced and Healthy (or Suspended, a deliberate
    /// state), not being deleted, no operation running, no failed operation that may hide a failed
    /// hook, and no condition that reports an error or a warning other than orphaned resources. The
    /// one predicate for both the sweep's candidates and resolving an incident.
    ///
    /// A failed operation at the app's revision is calm only when its result is known and no hook
    /// failed in it: a field-masked list item carries no result, so the sweep looks at every failed
    /// operation, while a full object whose failure left the workloads Synced and Healthy closes
    /// its incident.
    pub fn is_calm(&self) -> bool {
        let steady = self.sync_status() == sync_status::SYNCED && matches!(self.health_status(), health::HEALTHY | health::SUSPENDED);
        let failed = self.status.operation_state.as_ref().filter(|s| matches!(s.phase.as_str(), phase::FAILED | phase::ERROR));
        let failure_unsettled = failed.is_some_and(|s| match &s.sync_result {
            None => true,
            Some(r) if !r.revision.is_empty() && r.revision != self.revision() => false,
            Some(r) => r.resources.iter().any(|h| !h.hook_type.is_empty() && matches!(h.hook_phase.as_str(), "Failed" | "Error")),
        });
        let quiet_operation =
            self.operation.is_none() && !matches!(self.operation_phase(), phase::RUNNING | phase::TERMINATING) && !failure_unsettled;
        let quiet_conditions = self
            .status
            .conditions
            .iter()
            .all(|c| !(c.kind.ends_with("Error") || c.kind.ends_with("Warning")) || c.kind == "OrphanedResourceWarning");
        steady && quiet_operation && quiet_conditions && !self.is_deleting()
    }

    /// When an operation began after `t`, as far as this read shows: the current operation's
    /// start, or a deployment in `status.history` that started after `t` (`None`: none did).
    /// How a resumed claim whose key Argo CD no longer shows learns that something ran since.
    /// Argo CD's times have whole seconds, so one in `t`'s own second counts as after it (the
    /// safe side: an unknown outcome is told to a person, never sent twice).
    pub fn operation_started_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        use chrono::SubsecRound;
        let t = t.trunc_subsecs(0);
        let current = self.status.operation_state.as_ref().and_then(|s| s.started_at);
        let deployed = self.status.history.iter().filter_map(|h| h.deploy_started_at.or(h.deployed_at));
        current.into_iter().chain(deployed).filter(|s| *s >= t).min()
    }

    /// True while a refresh requested through the API waits for the controller: the
    /// `argocd.argoproj.io/refresh` annotation the API server sets and the controller removes
    /// once it has compared the app (`pkg/apis/application/v1alpha1/types.go`, `AnnotationKeyRefresh`).
    pub fn refresh_pending(&self) -> bool {
        self.metadata.annotations.contains_key(REFRESH_ANNOTATION)
    }

    /// The revisions a sync to the target would change, source by source: `(index, target,
    /// deployed)` where the comparison's revision (`status.sync.revision(s)`) differs from the last
    /// deployment's (`status.history`, the highest id) and the spec does not name the target
    /// itself (a person's pin). `index` is `None` for a single-source app. Empty when nothing was
    /// deployed yet or nothing differs.
    pub fn revision_changes(&self) -> Vec<(Option<usize>, String, String)> {
        let Some(sync) = self.status.sync.as_ref() else { return Vec::new() };
        let Some(last) = self.status.history.iter().max_by_key(|h| h.id) else { return Vec::new() };
        let pairs: Vec<(Option<usize>, &str, &str, &str)> = match &self.spec.source {
            Some(source) if !sync.revision.is_empty() && !last.revision.is_empty() => {
                vec![(None, sync.revision.as_str(), last.revision.as_str(), source.target_revision.as_str())]
            }
            _ if !sync.revisions.is_empty() && sync.revisions.len() == last.revisions.len() => sync
                .revisions
                .iter()
                .zip(&last.revisions)
                .enumerate()
                .map(|(i, (t, d))| (Some(i), t.as_str(), d.as_str(), self.spec.sources.get(i).map_or("", |s| s.target_revision.as_str())))
                .collect(),
            _ => Vec::new(),
        };
        pairs.into_iter().filter(|(_, t, d, named)| t != d && t != named).map(|(i, t, d, _)| (i, t.to_owned(), d.to_owned())).collect()
    }

    /// True when the operation Argo CD's controller started last (`status.operationState`) carries
    /// `key` in its `info`: a sync of ours observed started (Running, or already ended).
    pub fn operation_started_with(&self, key: &str) -> bool {
        self.status
            .operation_state
            .iter()
            .filter_map(|s| s.operation.as_ref())
            .flat_map(|o| o.info.iter())
            .any(|i| i.name == IDEMPOTENCY_INFO_NAME && i.value == key)
    }

    /// True when the operation the API server wrote and the controller has not started yet
    /// (`operation`) carries `key`.
    pub fn operation_pending_with(&self, key: &str) -> bool {
        self.operation.iter().flat_map(|o| o.info.iter()).any(|i| i.name == IDEMPOTENCY_INFO_NAME && i.value == key)
    }

    /// Idempotency keys recorded on the pending operation and on the last operation state.
    pub fn recorded_idempotency_keys(&self) -> impl Iterator<Item = &str> {
        let pending = self.operation.iter().flat_map(|o| o.info.iter());
        let last = self.status.operation_state.iter().filter_map(|s| s.operation.as_ref()).flat_map(|o| o.info.iter());
        pending.chain(last).filter(|i| i.name == IDEMPOTENCY_INFO_NAME).map(|i| i.value.as_str())
    }

    /// Why this object is not a full Application as `GET /api/v1/applications/{name}` returns it,
    /// if it is not. Field-masked list items cannot carry `metadata.resourceVersion` (it is not in
    /// the List endpoint's `fields` whitelist), so its absence marks a partial object.
    pub fn incompleteness(&self) -> Option<&'static str> {
        if self.metadata.name.is_empty() {
            Some("metadata.name is missing")
        } else if self.metadata.resource_version.is_empty() {
            Some("metadata.resourceVersion is missing, so this looks like a field-masked list item, not a full Application")
        } else if self.spec.project.is_empty() {
            Some("spec.project is missing")
        } else if self.status.sync.as_ref().is_none_or(|s| s.status.is_empty()) {
            Some("status.sync.status is missing")
        } else {
            None
        }
    }
}

/// The body of `POST /api/v1/applications/{name}/sync` (`applicationApplicationSyncRequest`),
/// restricted to the fields Argo Medic sends. Field names and shapes follow the wire, not the
/// swagger where they differ (docs/argo-cd-behaviour.md §1.7).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationSyncRequest {
    /// The app's name; the URL path's `{name}` overrides it on the server.
    pub name: String,
    /// Empty means the app's target revision.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    /// Whether the sync may delete resources the source no longer renders; false unless set, even for an app whose automated sync prunes.
    pub prune: bool,
    /// Apply with `--dry-run` only, changing nothing; Argo Medic's syncs leave it false.
    pub dry_run: bool,
    /// `hook` or `apply`, with or without `force`; `None` (what Argo Medic sends) for the default, hooks without force.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<SyncStrategy>,
    /// Sync options for this operation, replacing `spec.syncPolicy.syncOptions` rather than adding to them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_options: Option<SyncOptions>,
    /// How the operation retries a failed attempt; `None` (what Argo Medic sends) takes `spec.syncPolicy.retry`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_strategy: Option<RetryStrategy>,
    /// `{name, value}` pairs copied into `operation.info`: Argo Medic's idempotency key, incident, failure mode and incident start.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub infos: Vec<Info>,
    /// The app's AppProject (`spec.project`); the server answers 404 when the app is not in it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub project: String,
    /// The namespace of the Application object (`metadata.namespace`), which the server needs for apps outside its own.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub app_namespace: String,
}

/// `{"hook": {"force": false}}` or `{"apply": {"force": false}}`; the hook variant is flattened on
/// the wire although the swagger nests it under `syncStrategyApply`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncStrategy {
    /// Sync with hooks, the default; `{"hook": {"force": …}}` on the wire.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook: Option<SyncStrategyForce>,
    /// Plain `kubectl apply`, skipping hooks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub apply: Option<SyncStrategyForce>,
}

/// The options of one sync strategy: only whether to force.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncStrategyForce {
    /// Delete and recreate a resource when applying it conflicts (`kubectl apply --force`).
    pub force: bool,
}

/// `{"items": ["ApplyOutOfSyncOnly=true"]}`; replaces the app's own sync options for this operation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncOptions {
    /// Sync options as `Key=value` text, e.g. `ApplyOutOfSyncOnly=true`.
    pub items: Vec<String>,
}

/// Evaluates the equality-based subset of Kubernetes label selectors: `k=v`, `k==v`, `k!=v`, `k`,
/// `!k`, joined by commas (all must hold). Set-based terms (`in`, `notin`) are not supported here.
pub fn selector_matches(selector: &str, labels: &std::collections::BTreeMap<String, String>) -> bool {
    selector.split(',').map(str::trim).filter(|t| !t.is_empty()).all(|term| {
        if let Some((k, v)) = term.split_once("!=") {
            labels.get(k.trim()).is_none_or(|have| have != v.trim())
        } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            labels.get(k.trim()).is_some_and(|have| have == v.trim())
        } else if let Some(k) = term.strip_prefix('!') {
            !labels.contains_key(k.trim())
        } else {
            labels.contains_key(term)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_operation_is_calm_only_with_a_known_result_and_no_failed_hook() {
        let mut app = Application::default();
        app.status.sync = Some(SyncStatus { status: "Synced".into(), revision: "r1".into(), ..Default::default() });
        app.status.health = Some(HealthStatus { status: "Healthy".into(), ..Default::default() });
        assert!(app.is_calm());
        app.status.operation_state = Some(Box::new(OperationState { phase: "Failed".into(), ..Default::default() }));
        assert!(!app.is_calm(), "a list item: the result is unknown");
        let result = |hook_phase: &str| SyncOperationResult {
            revision: "r1".into(),
            resources: vec![ResourceResult { hook_type: "PostSync".into(), hook_phase: hook_phase.into(), ..Default::default() }],
            ..Default::default()
        };
        app.status.operation_state.as_mut().unwrap().sync_result = Some(Box::new(result("Succeeded")));
        assert!(app.is_calm(), "the workloads are fine and no hook failed");
        app.status.operation_state.as_mut().unwrap().sync_result = Some(Box::new(result("Failed")));
        assert!(!app.is_calm(), "a failed hook is a failed deployment");
        app.status.operation_state.as_mut().unwrap().phase = "Succeeded".into();
        app.status.conditions.push(ApplicationCondition { kind: "SharedResourceWarning".into(), ..Default::default() });
        assert!(!app.is_calm());
    }

    #[test]
    fn nulls_anywhere_read_as_absent_fields() {
        let mut v = serde_json::json!({"metadata": {"name": "a", "annotations": null, "labels": {"x": "y"}},
            "status": {"sync": null, "resources": [{"kind": "Service", "health": null, "syncWave": null}], "conditions": null}});
        strip_nulls(&mut v);
        let app: Application = serde_json::from_value(v).unwrap();
        assert_eq!(app.metadata.labels.get("x").map(String::as_str), Some("y"));
        assert!(app.status.sync.is_none() && app.status.conditions.is_empty());
        assert_eq!(app.status.resources[0].kind, "Service");
    }

    #[test]
    fn an_app_id_is_namespace_slash_name_on_the_wire_and_parses_only_that() {
        let id = AppId::new("team-a", "api");
        assert_eq!(id.to_string(), "team-a/api");
        assert_eq!((id.namespace(), id.name()), ("team-a", "api"));
        assert_eq!(serde_json::to_string(&id).unwrap(), r#""team-a/api""#, "records of earlier releases hold the bare string");
        assert_eq!(serde_json::from_str::<AppId>(r#""team-a/api""#).unwrap(), id);
        assert_eq!(AppId::parse("team-a/api"), Some(id));
        for bad in ["api", "/api", "team-a/", "a/b/c", ""] {
            assert_eq!(AppId::parse(bad), None, "`{bad}`");
        }
    }
}
