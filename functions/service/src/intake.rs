//! What ingest accepts, once its handler has authenticated the caller and checked the body's
//! size and type: a notification becomes a work item; a signed refresh request (its signature
//! checked by the handler) becomes one requested item per app, named directly or by selector,
//! within a cap. An item is accepted only once it is on the queue. A refusal says why, by kind;
//! the handler turns it into its HTTP answer.

use std::time::Duration;

use chrono::{DateTime, Utc};
use medic_core::Trigger;
use medic_core::event::{AppRef, EventError, NotificationEvent, WorkItem, WorkItemKey, WorkKind};
use medic_core::ladder::RefreshKind;
use medic_core::ports::{ArgoApi, Clock, ListQuery, Telemetry, WorkQueue};
use medic_core::sweep::LIST_FIELDS;
use serde::Deserialize;

/// Limits.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    /// Largest body accepted.
    pub max_body_bytes: usize,
    /// Most apps one refresh request may touch.
    pub max_refresh_apps: usize,
    /// How old a signed request may be.
    pub signature_max_age: Duration,
    /// Signs the work items of refreshes people request, so the worker knows they passed here.
    pub work_item_key: Option<WorkItemKey>,
}

impl Default for IngestConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: medic_core::event::MAX_EVENT_BYTES,
            max_refresh_apps: 50,
            signature_max_age: Duration::from_secs(300),
            work_item_key: None,
        }
    }
}

/// Ingest's collaborators, built once per container (by a composition root).
pub struct Intake<Q, A, C, T> {
    pub config: IngestConfig,
    pub queue: Q,
    /// Argo CD, read only to list the apps a refresh request names by selector.
    pub argo: A,
    pub clock: C,
    pub metrics: T,
}

/// Why a request was not accepted, by what the caller should do about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Larger than the limit.
    TooLarge,
    /// A notification schema this release does not read.
    UnsupportedVersion,
    /// Not what the route takes.
    Malformed,
    /// A notification trigger none of Argo Medic's templates sends.
    UnknownTrigger,
    /// A signed request outside its time window.
    Stale,
    /// A refresh request that names more apps than one call may touch.
    TooManyApps,
    /// Argo CD could not list the apps a selector names; `retryable` when it may answer later.
    ArgoList { retryable: bool },
    /// The queue did not take the item: nothing is lost if the caller retries.
    Unavailable,
}

/// A refusal and its message, for the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub kind: Refused,
    pub message: String,
}

fn refuse(kind: Refused, message: impl Into<String>) -> Refusal {
    Refusal { kind, message: message.into() }
}

/// A signed "refresh these apps" request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RefreshRequest {
    #[serde(default)]
    apps: Vec<AppRef>,
    #[serde(default)]
    selector: Option<String>,
    #[serde(default)]
    projects: Vec<String>,
    #[serde(default)]
    hard: bool,
    requested_at: DateTime<Utc>,
    requested_by: String,
}

/// A refresh request accepted: its action and the apps queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshAccepted {
    pub action: &'static str,
    pub apps: Vec<String>,
}

/// One collaborator swapped, the others kept, as `Adapters::with_*` does for a whole stack: a
/// test's queue in memory, a harness's quiet metrics.
impl<Q, A, C, T> Intake<Q, A, C, T> {
    /// The same intake enqueueing onto `queue`.
    pub fn with_queue<X>(self, queue: X) -> Intake<X, A, C, T> {
        let Intake { config, argo, clock, metrics, .. } = self;
        Intake { config, queue, argo, clock, metrics }
    }

    /// The same intake counting into `metrics`.
    pub fn with_metrics<X>(self, metrics: X) -> Intake<Q, A, C, X> {
        let Intake { config, queue, argo, clock, .. } = self;
        Intake { config, queue, argo, clock, metrics }
    }
}

impl<Q: WorkQueue, A: ArgoApi, C: Clock, T: Telemetry> Intake<Q, A, C, T> {
    /// A notification's body: parsed, its trigger checked, queued as a work item. Returns the
    /// item's dedupe key.
    pub async fn notification(&self, body: &[u8]) -> Result<String, Refusal> {
        let event = NotificationEvent::parse(body).map_err(|e| match e {
            EventError::TooLarge(_) => refuse(Refused::TooLarge, e.to_string()),
            EventError::UnsupportedVersion(_) => refuse(Refused::UnsupportedVersion, e.to_string()),
            _ => refuse(Refused::Malformed, e.to_string()),
        })?;
        if !event.trigger.is_notification() {
            // Accepted, it was a notification the worker reads like a sweep's look: a template
            // out of step with this release would go unnoticed (newcomer review, row 30).
            return Err(refuse(
                Refused::UnknownTrigger,
                format!("unknown trigger `{}`; Argo Medic's templates send one of {}", event.trigger, Trigger::NOTIFICATIONS.join(", ")),
            ));
        }
        let item = event.into_work(self.clock.now());
        self.queue.enqueue(&item, Duration::ZERO).await.map_err(|e| {
            tracing::error!(error = %e, "enqueue failed");
            refuse(Refused::Unavailable, "the work queue is unavailable; retry later")
        })?;
        self.metrics.count_with("WebhookAccepted", &[("Trigger", item.trigger.as_str())], 1.0);
        tracing::info!(app = %item.app.id(), trigger = %item.trigger, dedupe_key = %item.dedupe_key, "notification enqueued");
        Ok(item.dedupe_key)
    }

    /// A refresh request's body, its signature already verified: within its time window, named
    /// by whom, its apps resolved within the cap, each queued as a requested (signed) item.
    pub async fn refresh(&self, body: &[u8]) -> Result<RefreshAccepted, Refusal> {
        let request: RefreshRequest =
            serde_json::from_slice(body).map_err(|e| refuse(Refused::Malformed, format!("invalid refresh request: {e}")))?;
        let now = self.clock.now();
        let age = now.signed_duration_since(request.requested_at);
        let max_age = chrono::Duration::from_std(self.config.signature_max_age).unwrap_or_default();
        if age > max_age || age < -chrono::Duration::minutes(1) {
            return Err(refuse(
                Refused::Stale,
                format!("requestedAt {} is outside the {} s window", request.requested_at, self.config.signature_max_age.as_secs()),
            ));
        }
        if request.requested_by.trim().is_empty() || request.requested_by.len() > 128 {
            return Err(refuse(Refused::Malformed, "`requestedBy` must name the caller (1-128 characters)"));
        }
        let apps = self.resolve(&request).await?;
        let action = WorkItem::refresh_request(if request.hard { RefreshKind::Hard } else { RefreshKind::Normal });
        let window = request.requested_at.to_rfc3339();
        let trigger = Trigger::requested_refresh();
        for app in &apps {
            let mut item = WorkItem::for_app(WorkKind::Requested, app.clone(), trigger.clone(), &window, now);
            item.requested_action = Some(action.to_owned());
            item.requested_by = Some(request.requested_by.clone());
            if let Some(key) = &self.config.work_item_key {
                key.sign(&mut item);
            }
            self.queue.enqueue(&item, Duration::ZERO).await.map_err(|e| {
                tracing::error!(error = %e, "enqueue failed");
                refuse(Refused::Unavailable, "the work queue is unavailable; retry later (already queued apps are deduplicated)")
            })?;
        }
        let names: Vec<String> = apps.iter().map(|a| a.id().to_string()).collect();
        tracing::info!(requested_by = %request.requested_by, action, apps = ?names, "refresh requested");
        Ok(RefreshAccepted { action, apps: names })
    }

    /// The apps a refresh request names, directly or by selector, within the cap.
    async fn resolve(&self, request: &RefreshRequest) -> Result<Vec<AppRef>, Refusal> {
        let max = self.config.max_refresh_apps;
        let by_name = !request.apps.is_empty();
        let by_selector = request.selector.as_deref().is_some_and(|s| !s.trim().is_empty()) || !request.projects.is_empty();
        let apps = match (by_name, by_selector) {
            (true, false) => request.apps.clone(),
            (false, true) => {
                let query = ListQuery {
                    projects: request.projects.clone(),
                    selector: request.selector.clone().unwrap_or_default(),
                    fields: LIST_FIELDS.iter().map(|f| f.to_string()).collect(),
                    ..ListQuery::default()
                };
                let listed = self
                    .argo
                    .list_apps(&query)
                    .await
                    .map_err(|e| refuse(Refused::ArgoList { retryable: e.is_retryable() }, format!("listing apps: {e}")))?;
                listed.iter().map(AppRef::from).collect()
            }
            _ => {
                return Err(refuse(Refused::Malformed, "name the apps with either `apps` or `selector`/`projects`, not both or neither"));
            }
        };
        if apps.len() > max {
            return Err(refuse(Refused::TooManyApps, format!("the request touches {} apps; one call may touch at most {max}", apps.len())));
        }
        for app in &apps {
            app.validate().map_err(|e| refuse(Refused::Malformed, e.to_string()))?;
        }
        Ok(apps)
    }
}
