//! The parts of Argo CD's `v1alpha1Application` that Argo Medic reads.
//!
//! Shapes follow Argo CD's own `assets/swagger.json` (v3.5.1) with the wire differences noted in
//! docs/argo-cd-behaviour.md §2: int64 values are JSON numbers, every field may be absent
//! (Go `omitempty`), and unknown fields are ignored. Every struct therefore defaults every field, so
//! a field-masked list item deserialises too; [`Application::is_complete`] tells such an item apart
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
    pub fn new(namespace: &str, name: &str) -> Self {
        Self(format!("{namespace}/{name}"))
    }

    /// Reads a `namespace/name` kept as text (a store's record, a CLI argument); `None` unless
    /// both parts are present. Kubernetes names hold no `/`, so the first one splits them.
    pub fn parse(text: &str) -> Option<Self> {
        let (namespace, name) = text.split_once('/')?;
        (!namespace.is_empty() && !name.is_empty() && !name.contains('/')).then(|| Self(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn namespace(&self) -> &str {
        self.0.split_once('/').map_or("", |(ns, _)| ns)
    }

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
    #[serde(skip_serializing_if = "String::is_empty")]
    pub author: String,
    /// The commit's date (`util/git/client.go` `RevisionMetadata`: the author date).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// An Argo CD Application as the API returns it (`GET /api/v1/applications/{name}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Application {
    pub metadata: ObjectMeta,
    pub spec: ApplicationSpec,
    pub status: ApplicationStatus,
    /// Non-null while an operation is requested or running (the "busy" signal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<Box<Operation>>,
}

/// A list response (`GET /api/v1/applications`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ApplicationList {
    pub items: Vec<Application>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ObjectMeta {
    pub name: String,
    pub namespace: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<OwnerReference>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub managed_fields: Vec<ManagedFieldsEntry>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OwnerReference {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
}

/// One writer of the object, as Kubernetes records it; used to see hand edits of generated apps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ManagedFieldsEntry {
    pub manager: String,
    pub operation: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<DateTime<Utc>>,
    #[serde(rename = "fieldsV1", skip_serializing_if = "serde_json::Value::is_null")]
    pub fields_v1: serde_json::Value,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ApplicationSpec {
    pub project: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<ApplicationSource>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<ApplicationSource>,
    pub destination: ApplicationDestination,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hydrate_to: Option<HydrateTo>,
}

/// `spec.sourceHydrator.hydrateTo` (`v1alpha1HydrateTo`): the staging branch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HydrateTo {
    pub target_branch: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ApplicationSource {
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub target_revision: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub chart: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ApplicationDestination {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub server: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SyncPolicy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub automated: Option<SyncPolicyAutomated>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sync_options: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryStrategy>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SyncPolicyAutomated {
    pub prune: bool,
    pub self_heal: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_empty: Option<bool>,
    /// Argo CD ≥2.14: `enabled: false` keeps the block but switches automation off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RetryStrategy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ApplicationStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation_state: Option<Box<OperationState>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ApplicationCondition>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconciled_at: Option<DateTime<Utc>>,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
}

/// One entry of `status.history` (`v1alpha1RevisionHistory`): a sync that ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RevisionHistory {
    pub id: i64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deploy_started_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployed_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initiated_by: Option<OperationInitiator>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SyncStatus {
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HealthStatus {
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Operation {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncOperation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initiated_by: Option<OperationInitiator>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub info: Vec<Info>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryStrategy>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SyncOperation {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    pub prune: bool,
    pub dry_run: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sync_options: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_strategy: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<serde_json::Value>>,
    /// Self-heal syncs in a row (Go `SelfHealAttemptsCount`; `autoHealAttemptsCount` on the wire).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_heal_attempts_count: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OperationInitiator {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    pub automated: bool,
}

/// A `{name, value}` pair of `infos` / `operation.info`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Info {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OperationState {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<Box<Operation>>,
    pub phase: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_result: Option<Box<SyncOperationResult>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_count: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SyncOperationResult {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub revisions: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceResult>,
}

/// One entry of `syncResult.resources`: a resource or hook the last operation touched.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ResourceResult {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// `Synced`, `SyncFailed`, `Pruned`, `PruneSkipped`; empty for hooks.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub hook_type: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub hook_phase: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub sync_phase: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ApplicationCondition {
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<DateTime<Utc>>,
}

/// One entry of `status.resources`: a managed resource's sync and (when persisted) health state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ResourceStatus {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthStatus>,
    pub hook: bool,
    pub requires_pruning: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_wave: Option<i64>,
    pub requires_deletion_confirmation: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ApplicationSummary {
    #[serde(rename = "externalURLs", skip_serializing_if = "Vec::is_empty")]
    pub external_urls: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
}

/// Sync status values (`status.sync.status`).
pub mod sync_status {
    pub const SYNCED: &str = "Synced";
    pub const OUT_OF_SYNC: &str = "OutOfSync";
    pub const UNKNOWN: &str = "Unknown";
}

/// Health values (`status.health.status`).
pub mod health {
    pub const HEALTHY: &str = "Healthy";
    pub const PROGRESSING: &str = "Progressing";
    pub const DEGRADED: &str = "Degraded";
    pub const SUSPENDED: &str = "Suspended";
    pub const MISSING: &str = "Missing";
    pub const UNKNOWN: &str = "Unknown";
}

/// Operation phases (`status.operationState.phase`).
pub mod phase {
    pub const RUNNING: &str = "Running";
    pub const TERMINATING: &str = "Terminating";
    pub const FAILED: &str = "Failed";
    pub const ERROR: &str = "Error";
    pub const SUCCEEDED: &str = "Succeeded";
}

impl Application {
    /// The app's identity within one Argo CD instance.
    pub fn id(&self) -> AppId {
        AppId::new(&self.metadata.namespace, &self.metadata.name)
    }

    pub fn sync_status(&self) -> &str {
        self.status.sync.as_ref().map_or("", |s| s.status.as_str())
    }

    pub fn health_status(&self) -> &str {
        self.status.health.as_ref().map_or("", |h| h.status.as_str())
    }

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
    pub name: String,
    /// Empty means the app's target revision.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub revision: String,
    pub prune: bool,
    pub dry_run: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<SyncStrategy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_options: Option<SyncOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_strategy: Option<RetryStrategy>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub infos: Vec<Info>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub project: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub app_namespace: String,
}

/// `{"hook": {"force": false}}` or `{"apply": {"force": false}}`; the hook variant is flattened on
/// the wire although the swagger nests it under `syncStrategyApply`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncStrategy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook: Option<SyncStrategyForce>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub apply: Option<SyncStrategyForce>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncStrategyForce {
    pub force: bool,
}

/// `{"items": ["ApplyOutOfSyncOnly=true"]}`; replaces the app's own sync options for this operation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncOptions {
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
