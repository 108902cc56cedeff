//! A person's click in Slack, as Slack's interactivity Request URL receives it (the slack-actions
//! function, and `medic serve`): when someone clicks a button on an escalation, Slack POSTs a
//! `block_actions` payload; [`Interactions::handle`] checks it came from Slack, that the person may act on the app's Argo CD project, and enqueues
//! the action once. The worker performs it and reports back in the incident's thread.
//!
//! Per request, in this order (nothing is enqueued unless every step passes):
//!
//! 1. `POST`, `Content-Type: application/x-www-form-urlencoded`, body within the cap.
//! 2. **Signature** (Slack's v0 scheme): `X-Slack-Signature` must be
//!    `v0=` + hex(HMAC-SHA256(signing secret, `v0:` + `X-Slack-Request-Timestamp` + `:` + the raw
//!    body)), compared in constant time against the current and (during a rotation) the previous
//!    secret. The raw bytes are hashed as received (after the Function URL's base64, never
//!    re-encoded).
//! 3. **Freshness**: the timestamp within five minutes of now (either way).
//! 4. **Replay**: a signature seen before is refused (a conditional write in the state table,
//!    kept past the five minutes).
//! 5. **The action**: the button carries only an opaque id; what it stands for (app, incident,
//!    sync plan, idempotency key) is read from the store. Unknown or expired ids are refused.
//! 6. **Authorisation**: the clicking Slack user must be on the allow-list of the app's Argo CD
//!    project (`{"<project>": ["U…", ...], "*": [...]}`). A click acts with Argo Medic's own Argo CD
//!    rights, so this list is the real access control.
//! 7. **Once**: the first click on a button claims it (a conditional write keyed by its id); a
//!    second click, from anyone, is acknowledged and does nothing.
//! 8. **Enqueue** a work item (`kind: requested`, `requestedAction`: the button's id,
//!    `requestedBy`: `slack:<user id>`, a dedupe key derived from the id), write the audit line,
//!    answer 200. All of it takes a few tens of milliseconds, well inside Slack's 3 seconds.
//!
//! A fleet outage's **pause** and **release** buttons (`amfleet-` ids) go through steps 1-4, then
//! their record (the cause's scope and projects) is read, the person must be on the allow-list of
//! **every** project of the cause (the button acts on all its apps), and a marker is left in the
//! state table for the sweeper's next run (`fleet-pause-<scope>` or `fleet-release-<scope>`; each
//! clears the other). Nothing is enqueued. See docs/fleet.md.
//!
//! Every refusal gets its status and a JSON `{"error", "reason"}` and is counted
//! (`SlackActionRejected` by `Reason`); Slack shows the clicker that the action failed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use http::StatusCode;
pub use medic_adapters::edge::SecretFormatError;
use medic_adapters::edge::{Rejection, RotatingSecret};
use medic_core::Trigger;
use medic_core::event::{WorkItem, WorkKind};
use medic_core::human_action::HumanActionRequest;
use medic_core::ports::{Begun, Clock, DeliveryLeases, EscalationStore, MarkerStore, Seen, Telemetry, WorkQueue};
use serde::Deserialize;
use serde_json::{Value, json};

/// Slack's signature header.
pub const SIGNATURE_HEADER: &str = "x-slack-signature";
/// Slack's timestamp header (seconds since the epoch).
pub const TIMESTAMP_HEADER: &str = "x-slack-request-timestamp";

/// Slack's signing secret, and the previous one while a rotation is under way.
pub struct SigningSecret(RotatingSecret);

impl SigningSecret {
    pub fn new(current: impl Into<String>, previous: Option<String>) -> Self {
        Self(RotatingSecret::new(current, previous))
    }

    /// Reads the secret's value: the signing secret itself, or `{"current": ..., "previous": ...}`.
    pub fn from_secret(text: &str) -> Result<Self, SecretFormatError> {
        RotatingSecret::parse(text, "the Slack signing secret").map(Self)
    }

    /// The `X-Slack-Signature` Slack sends for this timestamp and body (tests, the sample event).
    pub fn sign(&self, timestamp: &str, body: &[u8]) -> String {
        format!("v0={}", self.0.sign_hex(&[b"v0:", timestamp.as_bytes(), b":", body]))
    }

    /// True when `signature` is `v0=<hex>` of this timestamp and body under one of the secrets
    /// (Slack's v0 scheme: HMAC-SHA256 over `v0:<timestamp>:<raw body>`).
    pub fn verify(&self, timestamp: &str, body: &[u8], signature: &str) -> bool {
        let Some(hex) = signature.trim().strip_prefix("v0=") else { return false };
        hex::decode(hex).is_ok_and(|tag| self.0.verifies(&[b"v0:", timestamp.as_bytes(), b":", body], &tag))
    }
}

/// Who may act on which Argo CD project: Slack user ids per project, `*` for every project.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList(BTreeMap<String, BTreeSet<String>>);

/// A malformed allow-list.
#[derive(Debug, thiserror::Error)]
#[error("SLACK_ALLOWED_USERS must be JSON {{\"<project>\": [\"<Slack user id>\", ...]}}: {0}")]
pub struct AllowListError(String);

impl AllowList {
    pub fn from_json(text: &str) -> Result<Self, AllowListError> {
        let map: BTreeMap<String, BTreeSet<String>> = serde_json::from_str(text).map_err(|e| AllowListError(e.to_string()))?;
        if let Some(bad) = map.values().flatten().find(|u| u.is_empty() || !u.bytes().all(|b| b.is_ascii_alphanumeric())) {
            return Err(AllowListError(format!("`{bad}` is not a Slack user id (e.g. U0123456789)")));
        }
        Ok(Self(map))
    }

    /// True when `user` may act on apps of `project`.
    pub fn allows(&self, project: &str, user: &str) -> bool {
        [project, "*"].iter().any(|p| self.0.get(*p).is_some_and(|users| users.contains(user)))
    }
}

/// Limits.
#[derive(Debug, Clone)]
pub struct ActionsConfig {
    /// Largest body accepted (a `block_actions` payload carries the whole message: a few KiB).
    pub max_body_bytes: usize,
    /// How far the request's timestamp may be from now.
    pub max_age: Duration,
    /// How long a seen signature is remembered (longer than `max_age`).
    pub replay_ttl: Duration,
    /// How long a clicked button stays claimed (at least as long as buttons live).
    pub claim_ttl: Duration,
    /// How long a click holds its button while its action is enqueued (a killed function's
    /// hold runs out after it).
    pub enqueue_lease: Duration,
    /// Signs the work items of clicks, so the worker knows they passed the signature check and
    /// the allow-list here.
    pub work_item_key: Option<medic_core::event::WorkItemKey>,
}

impl Default for ActionsConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: 128 * 1024,
            max_age: Duration::from_secs(300),
            replay_ttl: Duration::from_secs(900),
            claim_ttl: Duration::from_secs(15 * 24 * 3600),
            enqueue_lease: Duration::from_secs(30),
            work_item_key: None,
        }
    }
}

/// Slack's interactivity endpoint (the slack-actions function, `medic serve`'s
/// `/slack/actions`): its settings and collaborators, built once by a composition root
/// (`medic_stack`).
pub struct Interactions<Q, D, S, C, T> {
    pub config: ActionsConfig,
    pub secret: SigningSecret,
    pub allow: AllowList,
    pub queue: Q,
    /// Replays and claims (conditional writes with expiry).
    pub dedupe: D,
    /// Where the buttons' actions are stored.
    pub actions: S,
    /// What "now" is for a request's freshness and its work item.
    pub clock: C,
    pub metrics: T,
}

fn reject(status: StatusCode, reason: &'static str, message: impl Into<String>) -> Rejection {
    Rejection::new(status, reason, message)
}

/// The parts of a `block_actions` payload used here.
#[derive(Debug, Deserialize)]
struct Payload {
    #[serde(rename = "type")]
    kind: String,
    user: PayloadUser,
    #[serde(default)]
    team: Option<Value>,
    #[serde(default)]
    actions: Vec<PayloadAction>,
}

#[derive(Debug, Deserialize)]
struct PayloadUser {
    id: String,
    #[serde(default)]
    username: Option<String>,
}

#[derive(Debug, Deserialize)]
struct PayloadAction {
    #[serde(default)]
    action_id: String,
    #[serde(default)]
    value: Option<String>,
}

/// How long a pause holds a wave back (a day: past it the canaries decide again), and how long a
/// release waits for the next sweep to act on it.
const PAUSE_TTL: Duration = Duration::from_secs(24 * 3600);
const RELEASE_TTL: Duration = Duration::from_secs(3600);

impl<Q: WorkQueue, D: MarkerStore + DeliveryLeases, S: EscalationStore, C: Clock, T: Telemetry> Interactions<Q, D, S, C, T> {
    /// Handles one HTTP request: step 1 (method, media type, size), then [`Self::accept`]. Every
    /// refusal gets its status and a JSON `{"error", "reason"}` and is counted
    /// (`SlackActionRejected` by `Reason`); Slack shows the clicker that the action failed.
    pub async fn handle<B: AsRef<[u8]>>(&self, req: http::Request<B>) -> http::Response<String> {
        match self.answer(&req).await {
            Ok(answer) => medic_adapters::edge::json_response(StatusCode::OK, &answer),
            Err(r) => {
                self.metrics.count("SlackActionRejected", Some(("Reason", r.reason)), 1.0);
                tracing::warn!(status = r.status.as_u16(), reason = r.reason, message = %r.message, "Slack action rejected");
                r.response(None)
            }
        }
    }

    /// Step 1 of [`Self::handle`] (method, media type, size), then [`Self::accept`].
    async fn answer<B: AsRef<[u8]>>(&self, req: &http::Request<B>) -> Result<Value, Rejection> {
        if req.method() != http::Method::POST {
            return Err(reject(StatusCode::METHOD_NOT_ALLOWED, "method", "use POST"));
        }
        let body = medic_adapters::edge::checked_body(
            req.headers(),
            req.body().as_ref(),
            "application/x-www-form-urlencoded",
            self.config.max_body_bytes,
        )?;
        let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::trim);
        self.accept(header(TIMESTAMP_HEADER), header(SIGNATURE_HEADER), body).await
    }

    /// One interaction's raw body with its timestamp and signature headers (the handler has
    /// checked the method, the media type and the size): its answer to Slack, or the refusal.
    pub async fn accept(&self, timestamp: Option<&str>, signature: Option<&str>, body: &[u8]) -> Result<Value, Rejection> {
        let (Some(timestamp), Some(signature)) = (timestamp, signature) else {
            return Err(reject(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                format!("missing `{TIMESTAMP_HEADER}` or `{SIGNATURE_HEADER}`"),
            ));
        };
        if !self.secret.verify(timestamp, body, signature) {
            return Err(reject(StatusCode::FORBIDDEN, "forbidden", "the signature does not match the body"));
        }
        let sent: i64 = timestamp.parse().map_err(|_| reject(StatusCode::FORBIDDEN, "stale", "the timestamp is not a number"))?;
        let age = self.clock.now().timestamp() - sent;
        if age.unsigned_abs() > self.config.max_age.as_secs() {
            return Err(reject(
                StatusCode::FORBIDDEN,
                "stale",
                format!("the request is {age} s old; at most {} s is accepted", self.config.max_age.as_secs()),
            ));
        }
        let replay_key = medic_core::keys::slack_replay_marker(signature);
        match self.dedupe.first_sighting(&replay_key, self.config.replay_ttl).await {
            Ok(Seen::New) => {}
            Ok(Seen::Duplicate) => return Err(reject(StatusCode::FORBIDDEN, "replay", "this request was already received")),
            Err(e) => return Err(unavailable(&e)),
        }
        let payload = form_urlencoded::parse(body)
            .find(|(k, _)| k == "payload")
            .map(|(_, v)| v.into_owned())
            .ok_or_else(|| reject(StatusCode::BAD_REQUEST, "malformed", "no `payload` field in the form body"))?;
        let payload: Payload = serde_json::from_str(&payload)
            .map_err(|e| reject(StatusCode::BAD_REQUEST, "malformed", format!("the payload is not a block_actions payload: {e}")))?;
        if payload.kind != "block_actions" {
            // Nothing else is configured; acknowledge so Slack shows no error.
            tracing::info!(kind = %payload.kind, "interaction ignored");
            return Ok(json!({"accepted": false, "ignored": payload.kind}));
        }
        let clicked = payload.actions.first().ok_or_else(|| reject(StatusCode::BAD_REQUEST, "malformed", "the payload names no action"))?;
        let ours = |v: &str| medic_core::keys::is_action_id(v) || medic_core::keys::is_fleet_button_id(v);
        let id = clicked.value.as_deref().filter(|v| ours(v)).unwrap_or(clicked.action_id.as_str());
        if !ours(id) {
            return Err(reject(StatusCode::BAD_REQUEST, "malformed", "the action is not an Argo Medic button"));
        }
        let team = payload.team.as_ref().and_then(|t| t.get("id")).and_then(Value::as_str).unwrap_or("");
        if medic_core::keys::is_fleet_button_id(id) {
            return self.fleet_click(id, payload.user.id.as_str(), team).await;
        }
        let request = match crate::load_action(&self.actions, id).await {
            Ok(Some(r)) => r,
            Ok(None) => return Err(reject(StatusCode::GONE, "unknown_action", "this button is unknown or has expired")),
            Err(e) => return Err(unavailable(&e)),
        };
        let project = request.app.project.clone().unwrap_or_default();
        let user = payload.user.id.as_str();
        let action = request.action.as_str();
        let app = request.app.id();
        if !self.allow.allows(&project, user) {
            tracing::warn!(audit = true, user, team, action, app = %app, project, action_id = id, "Slack action refused: the user is not on the project's allow-list");
            return Err(reject(StatusCode::FORBIDDEN, "unauthorised", format!("you may not act on apps of project `{project}`")));
        }
        // The button is held while this request enqueues its action and spent only once the
        // action is on the queue: a function killed in between leaves a lease that runs out, so a
        // later click works instead of the button being dead for its whole life.
        let claim = medic_core::keys::click_claim_marker(id);
        let owner = format!("{user}#{timestamp}");
        match self.dedupe.begin(&claim, &owner, self.config.enqueue_lease).await {
            Ok(Begun::Owned) => {}
            Ok(Begun::Done | Begun::InProgress { .. }) => {
                self.metrics.count("SlackActionRepeated", None, 1.0);
                tracing::info!(audit = true, user, action, app = %app, action_id = id, "button already clicked; this click does nothing");
                return Ok(json!({"accepted": false, "reason": "already requested"}));
            }
            Err(e) => return Err(unavailable(&e)),
        }
        let mut item = work_item(&request, user, self.clock.now());
        if let Some(key) = &self.config.work_item_key {
            key.sign(&mut item);
        }
        if let Err(e) = self.queue.enqueue(&item, Duration::ZERO).await {
            self.dedupe.end(&claim, &owner, false, self.config.claim_ttl).await.ok();
            tracing::error!(error = %e, "enqueue failed");
            return Err(reject(StatusCode::SERVICE_UNAVAILABLE, "enqueue_failed", "the work queue is unavailable; try again"));
        }
        if let Err(e) = self.dedupe.end(&claim, &owner, true, self.config.claim_ttl).await {
            // The action is queued; a later click finds the lease over and queues it again,
            // which the worker absorbs (the work item's dedupe key is the button's).
            tracing::warn!(error = %e, "could not mark the button spent");
        }
        self.metrics.count("SlackActionAccepted", Some(("Action", action)), 1.0);
        tracing::info!(
            audit = true,
            user,
            username = payload.user.username.as_deref().unwrap_or(""),
            team,
            action,
            app = %app,
            project,
            incident = %request.incident_id,
            action_id = id,
            dedupe_key = %item.dedupe_key,
            "Slack action accepted and enqueued"
        );
        Ok(json!({"accepted": true}))
    }

    /// A fleet outage's pause or release button: it acts on every app of the cause at once, so
    /// the person must be on the allow-list of every one of their projects. It leaves a marker the
    /// sweeper reads at its next run (each control clears the other), and enqueues nothing.
    async fn fleet_click(&self, id: &str, user: &str, team: &str) -> Result<Value, Rejection> {
        let button = match crate::load_fleet_button(&self.actions, id).await {
            Ok(Some(b)) => b,
            Ok(None) => return Err(reject(StatusCode::GONE, "unknown_action", "this button is unknown or has expired")),
            Err(e) => return Err(unavailable(&e)),
        };
        let control = button.control.as_str();
        let projects: Vec<&str> = if button.projects.is_empty() { vec!["*"] } else { button.projects.iter().map(String::as_str).collect() };
        if let Some(refused) = projects.iter().find(|p| !self.allow.allows(p, user)) {
            tracing::warn!(audit = true, user, team, control, cause = %button.scope, project = refused, action_id = id, "fleet button refused: the user is not on the allow-list of every project of the outage");
            return Err(reject(
                StatusCode::FORBIDDEN,
                "unauthorised",
                format!("a fleet button acts on every app of the outage; you may not act on apps of project `{refused}`"),
            ));
        }
        // The markers of the button's own outage: a pause ends with it (M4).
        let (pause, release) =
            (button.marker(medic_core::ladder::FleetControl::Pause), button.marker(medic_core::ladder::FleetControl::Release));
        let (set, clear, ttl) = match button.control {
            medic_core::ladder::FleetControl::Pause => (pause, release, PAUSE_TTL),
            medic_core::ladder::FleetControl::Release => (release, pause, RELEASE_TTL),
        };
        self.dedupe.forget(&clear).await.map_err(|e| unavailable(&e))?;
        // Already set (a second click) is as good as set now.
        self.dedupe.first_sighting(&set, ttl).await.map_err(|e| unavailable(&e))?;
        self.metrics.count("SlackActionAccepted", Some(("Action", &format!("fleet_{control}"))), 1.0);
        tracing::info!(audit = true, user, team, control, cause = %button.scope, projects = ?button.projects, action_id = id, "fleet button accepted: the next sweep acts on it");
        Ok(json!({"accepted": true, "control": control}))
    }
}

fn unavailable(e: &dyn std::fmt::Display) -> Rejection {
    tracing::error!(error = %e, "state table unavailable");
    reject(StatusCode::SERVICE_UNAVAILABLE, "store_unavailable", "try again in a moment")
}

/// The work item that asks the worker to perform `request` for `user`, clicked at `now`.
pub fn work_item(request: &HumanActionRequest, user: &str, now: DateTime<Utc>) -> WorkItem {
    let trigger = Trigger::slack_action();
    let mut item = WorkItem::for_app(WorkKind::Requested, request.app.clone(), trigger, &request.id, now);
    item.dedupe_key = medic_core::keys::click_work_key(&request.id);
    item.requested_action = Some(request.id.clone());
    item.requested_by = Some(format!("slack:{user}"));
    item
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v0_signature_covers_the_timestamp_and_the_raw_body_and_rotation_accepts_both_secrets() {
        let secret = SigningSecret::new("8f742231b10e8888abcd99yyyzzz85a5", None);
        let body = b"payload=%7B%22type%22%3A%22block_actions%22%7D";
        let sig = secret.sign("1531420618", body);
        assert!(sig.starts_with("v0=") && sig.len() == 67);
        assert!(secret.verify("1531420618", body, &sig));
        assert!(!secret.verify("1531420619", body, &sig), "another timestamp");
        assert!(!secret.verify("1531420618", b"payload=%7B%7D", &sig), "another body");
        assert!(!secret.verify("1531420618", body, &sig.replace("v0=", "v1=")));
        assert!(!secret.verify("1531420618", body, "v0=zz"));
        let rotating = SigningSecret::new("a-brand-new-signing-secret", Some("8f742231b10e8888abcd99yyyzzz85a5".into()));
        assert!(rotating.verify("1531420618", body, &sig), "the previous secret still verifies during a rotation");
        assert!(SigningSecret::from_secret("short").is_err());
        assert!(SigningSecret::from_secret(r#"{"current":"0123456789abcdef0123"}"#).is_ok());
    }

    #[test]
    fn the_allow_list_is_per_project_with_a_wildcard() {
        let allow = AllowList::from_json(r#"{"payments": ["U0PAY"], "*": ["U0ADMIN"]}"#).unwrap();
        assert!(allow.allows("payments", "U0PAY"));
        assert!(!allow.allows("platform", "U0PAY"));
        assert!(allow.allows("platform", "U0ADMIN"));
        assert!(!allow.allows("payments", "U0OTHER"));
        assert!(AllowList::from_json(r#"{"payments": ["<@U0PAY>"]}"#).is_err());
        assert!(AllowList::from_json(r#"["U0PAY"]"#).is_err());
    }

    #[test]
    fn one_button_gives_one_dedupe_key() {
        assert_eq!(medic_core::keys::click_work_key("amact-1"), medic_core::keys::click_work_key("amact-1"));
        assert_ne!(medic_core::keys::click_work_key("amact-1"), medic_core::keys::click_work_key("amact-2"));
        assert!(medic_core::keys::click_work_key("amact-1").len() <= 128);
    }
}
