//! The notification event: what argocd-notifications sends (by webhook or its `awssqs` service) and
//! what the queue carries, schema version 1.
//!
//! One template in `infra/` renders this body for both routes. It carries what the worker needs to
//! dedupe and to recognise a stale notification; the worker always re-reads the Application
//! before deciding, so nothing here is trusted for the decision itself.
//!
//! Every status field may be `null` or absent: a template renders `null` for a missing map key,
//! and a brand-new app has no operation yet. Only the app's identity and the schema version are
//! required.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::app::AppId;
use crate::trigger::Trigger;

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// The episode a notification belongs to, for its dedupe key: Argo CD's `reconciledAt` floored
/// to this. Longer than a re-rendering retry of argocd-notifications takes, shorter than a sweep.
pub const NOTIFICATION_EPISODE: std::time::Duration = std::time::Duration::from_secs(600);

/// The start of the episode `at` falls in (epoch seconds).
fn episode_of(at: DateTime<Utc>) -> i64 {
    at.timestamp().div_euclid(NOTIFICATION_EPISODE.as_secs() as i64) * NOTIFICATION_EPISODE.as_secs() as i64
}

/// Largest body accepted, in bytes. A rendered event is about 1 KiB; the cap leaves room for long
/// operation messages while keeping a hostile body far from Lambda's and SQS's limits (256 KiB).
pub const MAX_EVENT_BYTES: usize = 64 * 1024;

/// A notification about one Application.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationEvent {
    /// The body's schema version; only `SCHEMA_VERSION` is accepted.
    pub schema_version: u32,
    /// The argocd-notifications trigger that fired (`on-sync-failed`, `on-health-degraded`, …).
    pub trigger: Trigger,
    /// The app the notification is about: its name, namespace and project.
    pub app: AppRef,
    /// `status.sync` when the notification was rendered: sync status and revision.
    #[serde(default)]
    pub sync: Option<EventSync>,
    /// `status.health` when the notification was rendered.
    #[serde(default)]
    pub health: Option<EventHealth>,
    /// `status.operationState` when the notification was rendered; `None` before the app's first operation.
    #[serde(default)]
    pub operation: Option<EventOperation>,
    /// `status.reconciledAt`; floored to a `NOTIFICATION_EPISODE`, it places the news in its episode for the dedupe key.
    #[serde(default)]
    pub reconciled_at: Option<DateTime<Utc>>,
    /// `metadata.resourceVersion` when rendered; it moves on every write, so the dedupe key leaves it out.
    #[serde(default)]
    pub resource_version: Option<String>,
    /// The Argo CD UI's base URL, from argocd-notifications' `context.argocdUrl`.
    #[serde(default, rename = "argocdUrl")]
    pub argocd_url: Option<String>,
    /// Where the app's manifests come from and go, as the notification saw them (absent from
    /// events of earlier templates).
    #[serde(default)]
    pub source: Option<EventSource>,
}

/// The sources' `repoURL`s and the destination of the app: enough to tell which fleet outage
/// covers it (`fleet::scopes_from`) without reading it from Argo CD.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventSource {
    /// `spec.sources[].repoURL` and `spec.source.repoURL`; empty strings are no source (the
    /// template writes one for the source an app does not have).
    #[serde(default, rename = "repoURLs")]
    pub repo_urls: Vec<String>,
    /// The cluster the app deploys to, for the cluster scope of a fleet outage.
    #[serde(default)]
    pub destination: Option<EventDestination>,
}

/// `spec.destination`: the cluster by API server URL or by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventDestination {
    /// `spec.destination.server`, the cluster's API server URL; empty when the app names the cluster instead.
    #[serde(default)]
    pub server: Option<String>,
    /// `spec.destination.name`, the cluster's name in Argo CD; empty when the app gives the URL instead.
    #[serde(default)]
    pub name: Option<String>,
}

/// Which app: its namespace, name and project.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AppRef {
    /// The Application's name (`metadata.name`), a DNS-1123 subdomain.
    pub name: String,
    /// The namespace of the Application object (`metadata.namespace`), a DNS-1123 label.
    pub namespace: String,
    /// The app's AppProject (`spec.project`); `None` when unknown, as for an app named by its id alone.
    #[serde(default)]
    pub project: Option<String>,
}

impl From<&crate::app::Application> for AppRef {
    /// The app as Argo CD shows it; an empty project (a partial object) is no project.
    fn from(app: &crate::app::Application) -> Self {
        AppRef {
            name: app.metadata.name.clone(),
            namespace: app.metadata.namespace.clone(),
            project: Some(app.spec.project.clone()).filter(|p| !p.is_empty()),
        }
    }
}

/// `status.sync` in a notification.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventSync {
    /// `Synced`, `OutOfSync` or `Unknown`; `Unknown` makes the event name its fleet scopes (`down_scopes`).
    #[serde(default)]
    pub status: Option<String>,
    /// The revision the app was last compared at (`status.sync.revision`); absent for a multi-source app.
    #[serde(default)]
    pub revision: Option<String>,
}

/// `status.health` in a notification.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventHealth {
    /// The app's health code (`Healthy`, `Degraded`, …).
    #[serde(default)]
    pub status: Option<String>,
}

/// `status.operationState` in a notification: enough to tell one operation and its outcome from another.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventOperation {
    /// `Running`, `Terminating`, `Failed`, `Error` or `Succeeded`.
    #[serde(default)]
    pub phase: Option<String>,
    /// When the operation started; part of the dedupe key, so each operation is its own news.
    #[serde(default)]
    pub started_at: Option<DateTime<Utc>>,
    /// When the operation, or its last failed attempt, ended.
    #[serde(default)]
    pub finished_at: Option<DateTime<Utc>>,
    /// The operation's message, cut to 2000 characters by the template.
    #[serde(default)]
    pub message: Option<String>,
}

/// Why a body is not a valid notification event.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum EventError {
    /// The body is longer than `MAX_EVENT_BYTES`; holds its length in bytes.
    #[error("the body is {0} bytes, more than the {MAX_EVENT_BYTES} allowed")]
    TooLarge(usize),
    /// The body is not JSON of the expected shape; holds the parser's message.
    #[error("the body is not a valid event: {0}")]
    Malformed(String),
    /// The body's `schemaVersion` is not the one this build reads; holds the version found.
    #[error("schemaVersion {0} is not supported (this build reads {SCHEMA_VERSION})")]
    UnsupportedVersion(u32),
    /// The app's name, namespace or project is not a valid Kubernetes name.
    #[error("`{field}` is not a valid Kubernetes name: `{value}`")]
    InvalidName {
        /// The event's field at fault: `app.name`, `app.namespace` or `app.project`.
        field: &'static str,
        /// The value found there.
        value: String,
    },
}

impl NotificationEvent {
    /// Parses and validates a body.
    pub fn parse(body: &[u8]) -> Result<Self, EventError> {
        if body.len() > MAX_EVENT_BYTES {
            return Err(EventError::TooLarge(body.len()));
        }
        // Check the version before the shape, so a newer schema is named as such.
        let raw: serde_json::Value = serde_json::from_slice(body).map_err(|e| EventError::Malformed(e.to_string()))?;
        match raw.get("schemaVersion").and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(SCHEMA_VERSION) => {}
            Some(v) => return Err(EventError::UnsupportedVersion(u32::try_from(v).unwrap_or(u32::MAX))),
            None => return Err(EventError::Malformed("missing field `schemaVersion` (a number)".into())),
        }
        let event: Self = serde_json::from_value(raw).map_err(|e| EventError::Malformed(e.to_string()))?;
        event.validate()?;
        Ok(event)
    }

    fn validate(&self) -> Result<(), EventError> {
        self.app.validate()?;
        if let Some(p) = &self.app.project {
            check_name("app.project", p, 253)?;
        }
        Ok(())
    }

    /// The app it reports.
    pub fn app_id(&self) -> AppId {
        self.app.id()
    }
}

impl From<&AppId> for AppRef {
    /// The app by its id alone, with no project.
    fn from(id: &AppId) -> Self {
        AppRef { name: id.name().to_owned(), namespace: id.namespace().to_owned(), project: None }
    }
}

impl AppRef {
    /// The app's `namespace/name` identity.
    pub fn id(&self) -> AppId {
        AppId::new(&self.namespace, &self.name)
    }

    /// Checks the name and namespace are valid Kubernetes names.
    pub fn validate(&self) -> Result<(), EventError> {
        check_name("app.name", &self.name, 253)?;
        check_name("app.namespace", &self.namespace, 63)
    }
}

/// DNS-1123 subdomain (names) or label (namespaces): lower-case alphanumerics, `-` and `.`.
fn check_name(field: &'static str, value: &str, max: usize) -> Result<(), EventError> {
    let ok = !value.is_empty()
        && value.len() <= max
        && value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok { Ok(()) } else { Err(EventError::InvalidName { field, value: value.to_owned() }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"{"schemaVersion":1,"trigger":"on-sync-failed","app":{"name":"web","namespace":"argocd"}}"#;

    #[test]
    fn a_minimal_event_with_nulls_parses() {
        let e = NotificationEvent::parse(MINIMAL.as_bytes()).unwrap();
        assert_eq!(e.app_id().as_str(), "argocd/web");
        let with_nulls = r#"{"schemaVersion":1,"trigger":"on-sync-failed","app":{"name":"web","namespace":"argocd","project":null},
            "sync":null,"health":{"status":null},"operation":null,"reconciledAt":null,"resourceVersion":null,"argocdUrl":null}"#;
        assert!(NotificationEvent::parse(with_nulls.as_bytes()).is_ok());
    }

    #[test]
    fn bad_bodies_are_named() {
        assert!(matches!(NotificationEvent::parse(b"{"), Err(EventError::Malformed(_))));
        assert_eq!(NotificationEvent::parse(MINIMAL.replace(":1,", ":2,").as_bytes()), Err(EventError::UnsupportedVersion(2)));
        let err = NotificationEvent::parse(MINIMAL.replace("\"web\"", "\"Web App\"").as_bytes()).unwrap_err();
        assert_eq!(err.to_string(), "`app.name` is not a valid Kubernetes name: `Web App`");
        let err = NotificationEvent::parse(MINIMAL.replace("on-sync-failed", "On Fire").as_bytes()).unwrap_err();
        assert!(err.to_string().contains("invalid trigger"), "{err}");
        let big = format!(r#"{{"pad":"{}"}}"#, "x".repeat(MAX_EVENT_BYTES));
        assert_eq!(NotificationEvent::parse(big.as_bytes()), Err(EventError::TooLarge(big.len())));
        assert!(NotificationEvent::parse(br#"{"trigger":"x"}"#).unwrap_err().to_string().contains("schemaVersion"));
    }
}

/// Why a work item is on the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkKind {
    /// An argocd-notifications event (through ingest, or straight from the `awssqs` service).
    Notification,
    /// The sweeper found the app needing a look that no notification reported.
    Sweep,
    /// A `wait` decision asked to look again later.
    Recheck,
    /// A person asked for it (signed refresh endpoint, Slack button).
    Requested,
}

/// One unit of work for the worker: look at one app. Schema version 1, the SQS message body for
/// everything but raw `awssqs` notifications (which are bare [`NotificationEvent`]s; the worker
/// accepts both).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkItem {
    /// The item's schema version; only `SCHEMA_VERSION` is accepted.
    pub schema_version: u32,
    /// Why the item is on the queue: a notification, the sweep, a recheck or a person's request.
    pub kind: WorkKind,
    /// The app to look at.
    pub app: AppRef,
    /// What prompted the look: a notification's trigger, or `sweep`, `fleet-recovery`, `slack-action`, `requested-refresh`.
    pub trigger: Trigger,
    /// Identifies this piece of news about the app, so the same news delivered twice (webhook
    /// retries, the sweeper racing a notification, SQS redelivery) is handled once.
    pub dedupe_key: String,
    /// When the item was enqueued; a person's request keeps its first time across rechecks, so a button judges "since the click" by it.
    pub enqueued_at: DateTime<Utc>,
    /// For `requested` items: what the person asked for (`refresh`, `hard_refresh`, `sync`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_action: Option<String>,
    /// For `requested` items: who asked (audit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
    /// How many times this item was re-enqueued by `wait` decisions (chained delays).
    #[serde(default)]
    pub rechecks: u32,
    /// HMAC-SHA256 (hex) of the item's fields under the stack's work-item key, set by the
    /// functions that authenticated the person behind a `requested` item (ingest, slack-actions,
    /// the worker re-enqueueing) and by the sweeper on a recovery wave's items
    /// ([`WorkItem::fleet_privileged`]). Anyone else who can send to the queue cannot make one
    /// the worker accepts. Absent on other items and on items of earlier releases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// For a fleet outage's recovery wave: the cause and the item's place in the wave, so the
    /// workers can tell when most of a batch fails again and pause the rest
    /// (`crate::ladder::WaveSlot`). Absent on other items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave: Option<crate::ladder::WaveSlot>,
    /// For a notification of an app Argo CD could not compare (sync `Unknown`): the fleet scopes
    /// (`fleet::CauseScope::key`) its event named, so the worker can find a fleet outage's hold
    /// before reading the app. Empty otherwise, and for events of earlier templates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

/// What a `requested` item asks for. On the wire it stays the string of
/// [`WorkItem::requested_action`] (items in flight and signatures depend on it); this is its
/// meaning, parsed in one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request<'a> {
    /// A refresh from the signed refresh endpoint (`refresh` or `hard_refresh`).
    Refresh(crate::ladder::RefreshKind),
    /// The action behind a Slack button, by its opaque id (`amact-...`).
    Button(&'a str),
}

impl WorkItem {
    /// Whether the item carries what only the sweeper may give (L12): a place in a recovery wave
    /// (its outcome can pause the wave) or the recovery trigger (it starts the ladder at a
    /// refresh). The worker honours them only on an item signed with the work-item key.
    pub fn fleet_privileged(&self) -> bool {
        self.wave.is_some() || self.trigger.as_str() == Trigger::RECOVERY
    }

    /// What this item asks for; `None` when it asks for nothing, or for something no release
    /// understands (the worker refuses those as poison).
    pub fn request(&self) -> Option<Request<'_>> {
        match self.requested_action.as_deref()? {
            "refresh" => Some(Request::Refresh(crate::ladder::RefreshKind::Normal)),
            "hard_refresh" => Some(Request::Refresh(crate::ladder::RefreshKind::Hard)),
            id if id
                .strip_prefix(crate::keys::ACTION_ID_PREFIX)
                .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())) =>
            {
                Some(Request::Button(id))
            }
            _ => None,
        }
    }

    /// The wire form of a refresh request.
    pub fn refresh_request(kind: crate::ladder::RefreshKind) -> &'static str {
        match kind {
            crate::ladder::RefreshKind::Normal => "refresh",
            crate::ladder::RefreshKind::Hard => "hard_refresh",
        }
    }
}

/// The key work items are signed with (see [`WorkItem::signature`]).
#[derive(Clone)]
pub struct WorkItemKey(Vec<u8>);

impl std::fmt::Debug for WorkItemKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WorkItemKey(<redacted>)")
    }
}

impl WorkItemKey {
    /// The least key length accepted, in bytes.
    pub const MIN_LEN: usize = 32;

    /// A key from the secret's text; `None` when it is too short to be a key.
    pub fn new(secret: &str) -> Option<Self> {
        let secret = secret.trim();
        (secret.len() >= Self::MIN_LEN).then(|| Self(secret.as_bytes().to_vec()))
    }

    fn mac(&self, item: &WorkItem) -> hmac::Hmac<sha2::Sha256> {
        use hmac::{KeyInit, Mac};
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        let kind = serde_json::to_string(&item.kind).unwrap_or_default();
        let at = item.enqueued_at.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
        let rechecks = item.rechecks.to_string();
        let parts = [
            "argo-medic/work-item/v1",
            &kind,
            &item.app.namespace,
            &item.app.name,
            item.app.project.as_deref().unwrap_or(""),
            item.trigger.as_str(),
            &item.dedupe_key,
            &at,
            item.requested_action.as_deref().unwrap_or(""),
            item.requested_by.as_deref().unwrap_or(""),
            &rechecks,
        ];
        for p in parts {
            mac.update(p.as_bytes());
            mac.update(&[0]);
        }
        // The wave slot (L12), only when there is one: a signature of an item without it is
        // the same as the release before made, so items in flight during an upgrade verify.
        if let Some(w) = &item.wave {
            let (index, len) = (w.index.to_string(), w.len.to_string());
            for p in ["wave", &w.scope, &w.since, &w.wave, &index, &len] {
                mac.update(p.as_bytes());
                mac.update(&[0]);
            }
        }
        mac
    }

    /// Signs `item` (its fields as they are now).
    pub fn sign(&self, item: &mut WorkItem) {
        use hmac::Mac;
        let tag = self.mac(item).finalize().into_bytes();
        item.signature = Some(hex::encode(tag));
    }

    /// True when `item` carries a valid signature under this key (compared in constant time).
    pub fn verifies(&self, item: &WorkItem) -> bool {
        use hmac::Mac;
        let Some(tag) = item.signature.as_deref().and_then(|s| hex::decode(s).ok()) else { return false };
        self.mac(item).verify_slice(&tag).is_ok()
    }
}

impl NotificationEvent {
    /// The dedupe key of this notification: SHA-256 over the app, the trigger, the state it
    /// reports (sync, health, revision, operation phase and start) and its episode: the
    /// [`NOTIFICATION_EPISODE`] in which Argo CD reconciled that state (`reconciledAt`, floored).
    ///
    /// The same delivery repeated (SQS, a webhook retry) and a re-rendering of the same news
    /// (argocd-notifications renders again when a send failed) give the same key: `resourceVersion`
    /// and the exact `reconciledAt` move on every reconcile, so they are left out. But the same
    /// state coming back later (Degraded, Healthy, Degraded again at one revision) is new news:
    /// without the episode it was dropped for the dedupe record's whole life (an hour) until the
    /// sweeper looked (L6). A recurrence within one episode is still left to the sweeper.
    pub fn dedupe_key(&self) -> String {
        let s = |o: Option<&String>| o.map_or("-", String::as_str).to_owned();
        let op = self.operation.as_ref();
        let t = |o: Option<DateTime<Utc>>| o.map_or_else(|| "-".to_owned(), |t| t.to_rfc3339());
        let parts = [
            self.app_id().to_string(),
            self.trigger.as_str().to_owned(),
            s(self.sync.as_ref().and_then(|x| x.status.as_ref())),
            s(self.sync.as_ref().and_then(|x| x.revision.as_ref())),
            s(self.health.as_ref().and_then(|x| x.status.as_ref())),
            s(op.and_then(|o| o.phase.as_ref())),
            t(op.and_then(|o| o.started_at)),
            t(op.and_then(|o| o.finished_at)),
            self.reconciled_at.map_or_else(|| "-".to_owned(), |at| episode_of(at).to_string()),
        ];
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        crate::keys::notification_dedupe_key(&refs)
    }

    /// The fleet scopes of an app this event shows Argo CD could not compare (`Unknown`, what a
    /// fleet outage covers: `fleet::is_down`), from the event's source and destination.
    pub fn down_scopes(&self) -> Vec<String> {
        let unknown = self.sync.as_ref().and_then(|s| s.status.as_deref()) == Some(crate::app::sync_status::UNKNOWN);
        let Some(source) = self.source.as_ref().filter(|_| unknown) else { return Vec::new() };
        let destination = source.destination.as_ref();
        crate::fleet::scopes_from(
            source.repo_urls.iter().map(String::as_str),
            destination.and_then(|d| d.server.as_deref()).unwrap_or(""),
            destination.and_then(|d| d.name.as_deref()).unwrap_or(""),
        )
        .iter()
        .map(crate::fleet::CauseScope::key)
        .collect()
    }

    /// The work item that carries this notification to the worker.
    pub fn into_work(self, now: DateTime<Utc>) -> WorkItem {
        let scopes = self.down_scopes();
        WorkItem {
            schema_version: SCHEMA_VERSION,
            kind: WorkKind::Notification,
            app: self.app.clone(),
            trigger: self.trigger.clone(),
            dedupe_key: self.dedupe_key(),
            enqueued_at: now,
            requested_action: None,
            requested_by: None,
            rechecks: 0,
            signature: None,
            wave: None,
            scopes,
        }
    }
}

impl WorkItem {
    /// Reads an SQS message body: a work item, or a bare notification event sent by the
    /// `awssqs` service.
    pub fn parse(body: &[u8], now: DateTime<Utc>) -> Result<Self, EventError> {
        if body.len() > MAX_EVENT_BYTES {
            return Err(EventError::TooLarge(body.len()));
        }
        let raw: serde_json::Value = serde_json::from_slice(body).map_err(|e| EventError::Malformed(e.to_string()))?;
        if raw.get("kind").is_none() {
            return NotificationEvent::parse(body).map(|e| e.into_work(now));
        }
        match raw.get("schemaVersion").and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(SCHEMA_VERSION) => {}
            Some(v) => return Err(EventError::UnsupportedVersion(u32::try_from(v).unwrap_or(u32::MAX))),
            None => return Err(EventError::Malformed("missing field `schemaVersion` (a number)".into())),
        }
        let item: Self = serde_json::from_value(raw).map_err(|e| EventError::Malformed(e.to_string()))?;
        item.app.validate()?;
        if item.dedupe_key.is_empty() || item.dedupe_key.len() > 128 {
            return Err(EventError::Malformed("`dedupeKey` must be 1-128 characters".into()));
        }
        Ok(item)
    }

    /// A work item for an app the sweeper (or a recheck) wants looked at. The dedupe key names
    /// the kind and a time window, so the sweeper enqueues one app at most once per window.
    pub fn for_app(kind: WorkKind, app: AppRef, trigger: Trigger, window: &str, now: DateTime<Utc>) -> Self {
        let prefix = match kind {
            WorkKind::Notification => "ev1",
            WorkKind::Sweep => "sw1",
            WorkKind::Recheck => "rc1",
            WorkKind::Requested => "rq1",
        };
        let dedupe_key = crate::keys::work_dedupe_key(prefix, &app.namespace, &app.name, trigger.as_str(), window);
        WorkItem {
            schema_version: SCHEMA_VERSION,
            kind,
            app,
            trigger,
            dedupe_key,
            enqueued_at: now,
            requested_action: None,
            requested_by: None,
            rechecks: 0,
            signature: None,
            wave: None,
            scopes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod work_tests {
    use super::*;

    fn event(phase: &str) -> NotificationEvent {
        let body = format!(
            r#"{{"schemaVersion":1,"trigger":"on-sync-failed","app":{{"name":"web","namespace":"argocd","project":"p"}},
            "operation":{{"phase":"{phase}","startedAt":"2026-11-01T12:00:00Z"}},"resourceVersion":"1","reconciledAt":"2026-11-01T12:01:00Z"}}"#
        );
        NotificationEvent::parse(body.as_bytes()).unwrap()
    }

    #[test]
    fn an_event_of_an_app_argo_cd_cannot_compare_names_its_fleet_scopes_in_the_work_item() {
        let body = r#"{"schemaVersion":1,"trigger":"on-sync-status-unknown","app":{"name":"web","namespace":"argocd","project":"p"},
            "sync":{"status":"Unknown"},"source":{"repoURLs":["git@git.example.com:platform/web.git","oci://registry.example.com/charts",""],
            "destination":{"server":"https://10.0.0.1/","name":null}}}"#;
        let event = NotificationEvent::parse(body.as_bytes()).unwrap();
        let at: DateTime<Utc> = "2026-11-01T12:30:00Z".parse().unwrap();
        let item = event.clone().into_work(at);
        assert_eq!(item.scopes, ["repo:git.example.com", "repo:registry.example.com", "cluster:https://10.0.0.1"]);
        assert_eq!(WorkItem::parse(serde_json::to_string(&item).unwrap().as_bytes(), at).unwrap().scopes, item.scopes);
        let synced = NotificationEvent { sync: Some(EventSync { status: Some("OutOfSync".into()), revision: None }), ..event.clone() };
        assert!(synced.into_work(at).scopes.is_empty(), "only an app Argo CD cannot compare is a fleet outage's");
        let older_template = NotificationEvent { source: None, ..event };
        let item = older_template.into_work(at);
        assert!(item.scopes.is_empty());
        assert!(!serde_json::to_string(&item).unwrap().contains("scopes"), "not written when empty");
    }

    #[test]
    fn the_same_news_has_one_dedupe_key_and_new_news_another() {
        let a = event("Failed");
        // Rendered again a few minutes later (a failed send retried): the same news.
        let mut rerendered = a.clone();
        rerendered.resource_version = Some("2".into());
        rerendered.reconciled_at = Some("2026-11-01T12:04:30Z".parse().unwrap());
        assert_eq!(a.dedupe_key(), rerendered.dedupe_key());
        assert_ne!(a.dedupe_key(), event("Error").dedupe_key());
        assert!(a.dedupe_key().starts_with("ev1-"));
    }

    /// L6: the same state reported again in a later episode (it went away and came back) was
    /// dropped as a duplicate for an hour; it is new news.
    #[test]
    fn the_same_state_coming_back_later_is_new_news() {
        let health = |reconciled: &str| {
            let body = format!(
                r#"{{"schemaVersion":1,"trigger":"on-health-degraded","app":{{"name":"web","namespace":"argocd","project":"p"}},
                "sync":{{"status":"Synced","revision":"abc"}},"health":{{"status":"Degraded"}},"reconciledAt":"{reconciled}"}}"#
            );
            NotificationEvent::parse(body.as_bytes()).unwrap()
        };
        let first = health("2026-11-01T12:01:00Z");
        assert_eq!(first.dedupe_key(), health("2026-11-01T12:09:59Z").dedupe_key(), "within one episode");
        assert_ne!(first.dedupe_key(), health("2026-11-01T12:31:00Z").dedupe_key(), "Degraded again half an hour later");
    }

    #[test]
    fn the_queue_carries_work_items_and_bare_notifications() {
        let now: DateTime<Utc> = "2026-11-01T12:05:00Z".parse().unwrap();
        let item = event("Failed").into_work(now);
        let body = serde_json::to_vec(&item).unwrap();
        assert_eq!(WorkItem::parse(&body, now).unwrap(), item);
        let bare = serde_json::to_vec(&event("Failed")).unwrap();
        let from_sqs = WorkItem::parse(&bare, now).unwrap();
        assert_eq!(from_sqs.kind, WorkKind::Notification);
        assert_eq!(from_sqs.dedupe_key, item.dedupe_key);
        assert!(WorkItem::parse(b"{\"kind\":\"sweep\"}", now).is_err());
        assert!(WorkItem::parse(b"not json", now).is_err());
    }

    #[test]
    fn sweep_items_dedupe_per_window() {
        let now: DateTime<Utc> = "2026-11-01T12:05:00Z".parse().unwrap();
        let app = AppRef { name: "web".into(), namespace: "argocd".into(), project: None };
        let a = WorkItem::for_app(WorkKind::Sweep, app.clone(), Trigger::sweep(), "2026-11-01T12:00", now);
        let b = WorkItem::for_app(WorkKind::Sweep, app.clone(), Trigger::sweep(), "2026-11-01T12:00", now);
        let c = WorkItem::for_app(WorkKind::Sweep, app, Trigger::sweep(), "2026-11-01T12:15", now);
        assert_eq!(a.dedupe_key, b.dedupe_key);
        assert_ne!(a.dedupe_key, c.dedupe_key);
    }

    const KEY: &str = "a-work-item-key-of-at-least-32-bytes-for-tests";

    fn click() -> WorkItem {
        let app = AppRef { name: "web".into(), namespace: "argocd".into(), project: Some("p".into()) };
        let now: DateTime<Utc> = "2026-11-01T12:00:00.123456Z".parse().unwrap();
        let mut item = WorkItem::for_app(WorkKind::Requested, app, "slack-action".parse().unwrap(), "amact-1", now);
        item.requested_action = Some("amact-0123".into());
        item.requested_by = Some("slack:U0ALICE001".into());
        item
    }

    /// Signing the wave slot changed nothing for items without one: a click signed by the
    /// release before (c2fa4a9, this key and item) still verifies, so clicks in flight during an
    /// upgrade are not refused.
    #[test]
    fn a_signature_of_the_release_before_wave_signing_still_verifies() {
        let key = WorkItemKey::new(KEY).unwrap();
        let item = WorkItem { signature: Some("784fcea4656386a29996b1d80bc7e515b6f7ef41393a286363948de84f6c9d96".into()), ..click() };
        assert!(key.verifies(&item));
    }

    /// L12: the wave slot and the recovery trigger are a sweeper's to give. Signed, every field of
    /// the slot is covered; an item that carries either is privileged, and a plain one is not.
    #[test]
    fn a_wave_slot_is_covered_by_the_signature() {
        let key = WorkItemKey::new(KEY).unwrap();
        let app = AppRef { name: "web".into(), namespace: "argocd".into(), project: None };
        let at = "2026-11-01T12:00:00Z".parse::<DateTime<Utc>>().unwrap();
        let slot =
            crate::ladder::WaveSlot { scope: "repo:git.example.com".into(), since: "s".into(), wave: "w1".into(), index: 3, len: 40 };
        let plain = WorkItem::for_app(WorkKind::Sweep, app, Trigger::sweep(), "w1", at);
        assert!(!plain.fleet_privileged());
        assert!(WorkItem { trigger: Trigger::recovery(), ..plain.clone() }.fleet_privileged());
        let mut item = WorkItem { wave: Some(slot.clone()), trigger: Trigger::recovery(), ..plain };
        assert!(item.fleet_privileged());
        key.sign(&mut item);
        assert!(key.verifies(&item));
        let tampered = [
            crate::ladder::WaveSlot { scope: "cluster:other".into(), ..slot.clone() },
            crate::ladder::WaveSlot { since: "t".into(), ..slot.clone() },
            crate::ladder::WaveSlot { wave: "w2".into(), ..slot.clone() },
            crate::ladder::WaveSlot { index: 0, ..slot.clone() },
            crate::ladder::WaveSlot { len: 4, ..slot.clone() },
        ];
        for t in tampered {
            assert!(!key.verifies(&WorkItem { wave: Some(t.clone()), ..item.clone() }), "{t:?}");
        }
        assert!(!key.verifies(&WorkItem { wave: None, ..item.clone() }), "the slot cannot be dropped either");
    }

    #[test]
    fn a_signed_item_verifies_after_the_queue_round_trip_and_any_change_breaks_it() {
        let key = WorkItemKey::new(KEY).unwrap();
        let mut item = click();
        key.sign(&mut item);
        let body = serde_json::to_vec(&item).unwrap();
        let back = WorkItem::parse(&body, "2026-11-01T12:00:01Z".parse::<DateTime<Utc>>().unwrap()).unwrap();
        assert!(key.verifies(&back), "the signature survives serialisation");
        let tampered = [
            WorkItem { requested_by: Some("slack:U0ADMIN".into()), ..back.clone() },
            WorkItem { requested_action: Some("amact-9999".into()), ..back.clone() },
            WorkItem { app: AppRef { name: "db".into(), ..back.app.clone() }, ..back.clone() },
            WorkItem { rechecks: 1, ..back.clone() },
        ];
        for t in &tampered {
            assert!(!key.verifies(t), "{t:?}");
        }
        assert!(!WorkItemKey::new("another-key-of-at-least-32-bytes-long!!").unwrap().verifies(&back));
        assert!(WorkItemKey::new("short").is_none(), "a short secret is no key");
        assert!(!format!("{key:?}").contains(KEY), "the key never prints");
    }

    #[test]
    fn items_written_by_the_previous_release_still_parse_and_are_simply_unsigned() {
        // A requested item exactly as release 5cdd7fd's slack-actions wrote it (no signature).
        let old = r#"{"schemaVersion":1,"kind":"requested","app":{"name":"web","namespace":"argocd","project":"p"},
            "trigger":"slack-action","dedupeKey":"sa1-0123456789abcdef","enqueuedAt":"2026-11-01T12:00:00Z",
            "requestedAction":"amact-0123","requestedBy":"slack:U0ALICE001"}"#;
        let item = WorkItem::parse(old.as_bytes(), "2026-11-01T12:00:01Z".parse::<DateTime<Utc>>().unwrap()).unwrap();
        assert_eq!(item.signature, None);
        assert!(!WorkItemKey::new(KEY).unwrap().verifies(&item));
        assert_eq!(item.request(), None, "a made-up button id is no request");
        // A notification item of releases that embedded the whole event (nothing read it).
        let with_event = r#"{"schemaVersion":1,"kind":"notification","app":{"name":"web","namespace":"argocd"},"trigger":"on-sync-failed",
            "dedupeKey":"ev1-0123","enqueuedAt":"2026-11-01T12:00:00Z","event":{"schemaVersion":1,"app":{"name":"web","namespace":"argocd"},"trigger":"on-sync-failed"}}"#;
        let parsed = WorkItem::parse(with_event.as_bytes(), "2026-11-01T12:00:01Z".parse::<DateTime<Utc>>().unwrap()).unwrap();
        assert_eq!((parsed.kind, parsed.dedupe_key.as_str()), (WorkKind::Notification, "ev1-0123"));
        // And a sweep item, which never needed one.
        let sweep = r#"{"schemaVersion":1,"kind":"sweep","app":{"name":"web","namespace":"argocd"},"trigger":"sweep",
            "dedupeKey":"sw1-0123","enqueuedAt":"2026-11-01T12:00:00Z","rechecks":2}"#;
        assert_eq!(WorkItem::parse(sweep.as_bytes(), "2026-11-01T12:00:01Z".parse::<DateTime<Utc>>().unwrap()).unwrap().rechecks, 2);
    }

    #[test]
    fn a_request_is_a_refresh_or_a_button_and_nothing_else() {
        let mut item = WorkItem::for_app(
            WorkKind::Requested,
            AppRef { name: "web".into(), namespace: "argocd".into(), project: None },
            Trigger::sweep(),
            "w",
            "2026-11-01T12:00:00Z".parse::<DateTime<Utc>>().unwrap(),
        );
        assert_eq!(item.request(), None);
        for kind in [crate::ladder::RefreshKind::Normal, crate::ladder::RefreshKind::Hard] {
            item.requested_action = Some(WorkItem::refresh_request(kind).into());
            assert_eq!(item.request(), Some(Request::Refresh(kind)));
        }
        let id = crate::keys::action_id("inc-0", crate::ladder::HumanAction::Sync, 0);
        item.requested_action = Some(id.clone());
        assert_eq!(item.request(), Some(Request::Button(&id)));
        for odd in ["sync", "amact-", "amact-xyz", "REFRESH"] {
            item.requested_action = Some(odd.into());
            assert_eq!(item.request(), None, "{odd}");
        }
    }
}
