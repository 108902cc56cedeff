//! Slack escalation: [`SlackEscalator`] implements the core's `Escalator` port with the Slack Web
//! API (a bot token, `chat.postMessage`, `chat.update`, threads), and [`SlackClient`] is the
//! minimal Web API client it uses. The messages come from `medic_core::escalation`.
//!
//! # One parent per incident, whatever crashes
//!
//! `chat.postMessage` has no idempotency key, so every message is posted through
//! [`SlackEscalator::post_once`], keyed by what the message is (`inc:<incident id>`,
//! `fm:<fleet id>:<incident id>`, `res:<incident id>`, ...):
//!
//! 1. a record of the intent is written first (`EscalationStore`, compare-and-set), holding a lease
//!    (`lease`, longer than a post can take);
//! 2. the message is posted with Slack message metadata carrying the key
//!    (`event_type` [`METADATA_EVENT_TYPE`], `event_payload.key`);
//! 3. its `ts` is recorded.
//!
//! A retry that finds a recorded `ts` posts nothing. One that finds an intent without a `ts`
//! (the earlier attempt crashed, or lost the answer) waits out the lease and then looks for the
//! message in the channel (`conversations.history`, or `conversations.replies` for a thread reply,
//! with `include_all_metadata`, from shortly before the first intent) and adopts it when found;
//! only when nothing carries the key does it post. A live lease held by another worker makes the
//! caller wait briefly and then fail (the queue retries it), never post.
//!
//! # Threads, states, fleets
//!
//! The parent is updated in place (`chat.update`) as the incident moves (needs a human →
//! investigating when acknowledged → remediating when a person's action is under way → resolved),
//! and each step is a thread reply. When `fleet_threshold` incidents of one failure mode arrive
//! within `fleet_window` of each other, they become one fleet incident: the first one's parent is
//! rewritten into the fleet parent, the others (up to the threshold) are folded into a one-line
//! pointer, and every app gets one reply with its facts and buttons in the fleet thread. With the
//! default threshold of 2, an outage of hundreds of apps posts exactly one parent.
//!
//! # Rate limits
//!
//! Posts and updates to one channel are paced `post_interval` apart (Slack allows about one
//! message per second per channel), and an HTTP 429 is honoured: the client sleeps `Retry-After`
//! (when it is at most `max_retry_wait`) and tries again; a longer one fails the call, which the
//! queue retries later. A 429 means nothing was posted, so retrying it cannot duplicate.
//!
//! # Records (`EscalationStore`)
//!
//! | group | id | what |
//! | --- | --- | --- |
//! | `msg` | message key | channel, thread, `ts` once posted, lease, first intent |
//! | `app#<namespace/name>` | incident id | the incident's facts, state, button generation, where it is shown, reported actions |
//! | `action` | button id | the [`HumanActionRequest`] behind a button (expires after `action_ttl`) |
//! | `fleetwin` | failure mode | the open fleet window: fleet id, members in arrival order, last arrival |
//! | `fleet` | fleet id | the fleet incident: its apps, which recovered, whether its parent is set up |
//! | `snooze` | `namespace/name` | until when new incidents of the app are not posted, and who asked |
//!
//! An open incident's records (its `app#` record, its messages, its fleet's) are kept until it
//! resolves, however long that takes: losing them would post a second parent. Resolving gives
//! them `record_ttl` (30 days) from then on. Buttons keep their own `action_ttl`, snoozes their
//! own end, fleet windows `record_ttl`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::Client as DynamoClient;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, TimeDelta, Utc};
use medic_core::Application;
use medic_core::catalogue::FailureMode;
use medic_core::decision::{Decision, HumanAction};
use medic_core::escalation::{
    self, Button, FleetSummary, HumanActionOutcome, HumanActionRequest, IncidentFacts, IncidentState, METADATA_EVENT_TYPE, RenderOptions,
    Rendered, Status,
};
use medic_core::ports::{EscalationError, EscalationStore, Escalator, StoreError, Versioned};
use reqwest::{StatusCode, header};
use secrecy::ExposeSecret;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::aws::describe;
use crate::memory::LogEscalator;

/// Slack's Web API.
pub const DEFAULT_API_URL: &str = "https://slack.com/api/";

/// Settings of the Slack escalator.
#[derive(Debug, Clone)]
pub struct SlackSettings {
    /// Base URL of the Web API, ending in `/` (the simulator's in tests and local mode).
    pub api_url: String,
    /// Channel id escalations go to (`C0123456789`).
    pub channel: String,
    /// The Argo CD instance id (in every message's metadata).
    pub instance: String,
    /// The Argo CD UI's base URL, for links to apps.
    pub argocd_url: Option<String>,
    /// Incidents of one failure mode within `fleet_window` of each other that make a fleet
    /// incident. 0 turns fleets off.
    pub fleet_threshold: usize,
    pub fleet_window: Duration,
    /// Least time between two updates of a fleet parent while apps keep joining.
    pub fleet_update_interval: Duration,
    /// How long a post's intent blocks another attempt (longer than any post can take).
    pub lease: Duration,
    /// How long to wait for another worker's post before failing (and being retried).
    pub busy_wait: Duration,
    /// Least time between two posts/updates to one channel.
    pub post_interval: Duration,
    /// Longest `Retry-After` slept through; a longer one fails the call.
    pub max_retry_wait: Duration,
    /// Per HTTP request.
    pub request_timeout: Duration,
    /// Pages (of 200 messages) read when looking for a message an earlier attempt may have posted.
    pub history_pages: usize,
    /// How long an incident's records are kept once it has resolved (until then, for ever).
    pub record_ttl: Duration,
    /// How long a button stays valid.
    pub action_ttl: Duration,
    /// How long a snooze lasts.
    pub snooze: Duration,
    /// Most apps of one fleet incident that get a reply of their own; the rest are counted.
    pub max_fleet_replies: usize,
}

impl SlackSettings {
    pub fn new(channel: impl Into<String>, instance: impl Into<String>) -> Self {
        Self {
            api_url: DEFAULT_API_URL.into(),
            channel: channel.into(),
            instance: instance.into(),
            argocd_url: None,
            fleet_threshold: 2,
            fleet_window: Duration::from_secs(15 * 60),
            fleet_update_interval: Duration::from_secs(10),
            lease: Duration::from_secs(60),
            busy_wait: Duration::from_secs(10),
            post_interval: Duration::from_secs(1),
            max_retry_wait: Duration::from_secs(20),
            request_timeout: Duration::from_secs(10),
            history_pages: 5,
            record_ttl: Duration::from_secs(30 * 24 * 3600),
            action_ttl: Duration::from_secs(14 * 24 * 3600),
            snooze: Duration::from_secs(4 * 3600),
            max_fleet_replies: 500,
        }
    }

    fn render_options(&self) -> RenderOptions {
        RenderOptions { snooze_hours: (self.snooze.as_secs() / 3600).max(1) as u32 }
    }
}

// ------------------------------------------------------------------------------------------------
// The Web API client
// ------------------------------------------------------------------------------------------------

/// A Web API call that failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SlackError {
    /// HTTP 429 with a `Retry-After` longer than the client waits (nothing was posted).
    #[error("{method}: rate limited, retry after {}s", .retry_after.as_secs())]
    RateLimited { method: String, retry_after: Duration },
    /// `{"ok": false, "error": ...}`: Slack refused the call (nothing was posted).
    #[error("{method}: {error}{}", if .detail.is_empty() { String::new() } else { format!(" ({})", .detail.join("; ")) })]
    Api { method: String, error: String, detail: Vec<String> },
    /// Transport failure, timeout or 5xx: the call may or may not have taken effect.
    #[error("{method}: {message}")]
    Transport { method: String, message: String },
}

impl SlackError {
    /// True when Slack certainly did not act on the call.
    pub fn not_applied(&self) -> bool {
        matches!(self, SlackError::RateLimited { .. } | SlackError::Api { .. })
    }
}

/// A message as `conversations.history` / `conversations.replies` return it (what is used of it).
#[derive(Debug, Clone, Deserialize)]
pub struct HistoryMessage {
    pub ts: String,
    #[serde(default)]
    pub thread_ts: Option<String>,
    #[serde(default)]
    pub metadata: Option<Value>,
}

#[derive(Deserialize)]
struct ApiReply {
    ok: bool,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    errors: Vec<Value>,
    #[serde(default)]
    ts: Option<String>,
    #[serde(default)]
    messages: Vec<HistoryMessage>,
    #[serde(default)]
    has_more: bool,
    #[serde(default)]
    response_metadata: Option<ResponseMetadata>,
}

#[derive(Deserialize, Default)]
struct ResponseMetadata {
    #[serde(default)]
    next_cursor: String,
    #[serde(default)]
    messages: Vec<String>,
}

/// Spaces calls to one channel `interval` apart, across concurrent callers in this process.
struct Pacer {
    interval: Duration,
    next: Mutex<HashMap<String, Instant>>,
}

impl Pacer {
    /// Waits for this channel's next slot; `Err(wait)` without waiting when that is more than
    /// `max` away (a 429's `Retry-After` still running): the caller fails instead of sleeping.
    async fn wait(&self, channel: &str, max: Duration) -> Result<(), Duration> {
        let wait = {
            let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            let at = next.get(channel).copied().unwrap_or(now).max(now);
            if at - now > max {
                return Err(at - now);
            }
            next.insert(channel.to_owned(), at + self.interval);
            at - now
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        Ok(())
    }

    /// After a 429: nothing to this channel before `until`.
    fn hold(&self, channel: &str, until: Instant) {
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        let at = next.entry(channel.to_owned()).or_insert(until);
        *at = (*at).max(until);
    }
}

/// The Slack Web API methods Argo Medic uses, with a bot token.
pub struct SlackClient {
    http: reqwest::Client,
    base: String,
    /// The bot token, re-read after `invalid_auth` or `token_revoked`.
    token: std::sync::Arc<crate::token::TokenSource>,
    pacer: Pacer,
    max_retry_wait: Duration,
    /// 429s answered so far (for tests and logs).
    rate_limited: std::sync::atomic::AtomicU64,
}

impl SlackClient {
    pub fn new(settings: &SlackSettings, token: impl Into<String>) -> Result<Self, SlackError> {
        Self::with_token_source(settings, crate::token::TokenSource::fixed(token))
    }

    /// A client whose token comes from `token` (re-read when Slack rejects it).
    pub fn with_token_source(settings: &SlackSettings, token: crate::token::TokenSource) -> Result<Self, SlackError> {
        let http = reqwest::Client::builder()
            .timeout(settings.request_timeout)
            .user_agent(concat!("argo-medic/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| SlackError::Transport { method: "client".into(), message: e.to_string() })?;
        let base = if settings.api_url.ends_with('/') { settings.api_url.clone() } else { format!("{}/", settings.api_url) };
        Ok(Self {
            http,
            base,
            token: std::sync::Arc::new(token),
            pacer: Pacer { interval: settings.post_interval, next: Mutex::new(HashMap::new()) },
            max_retry_wait: settings.max_retry_wait,
            rate_limited: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Where the bot token comes from.
    pub fn token_source(&self) -> &crate::token::TokenSource {
        &self.token
    }

    /// How many 429s Slack answered this client.
    pub fn rate_limited_count(&self) -> u64 {
        self.rate_limited.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// One call: a JSON body for write methods, a query string for read methods. A 429 is slept
    /// through (when short enough) and retried: Slack did nothing with it.
    async fn call(
        &self,
        method: &str,
        channel: &str,
        json_body: Option<&Value>,
        query: &[(&str, String)],
        paced: bool,
    ) -> Result<ApiReply, SlackError> {
        let url = format!("{}{method}", self.base);
        let transport = |message: String| SlackError::Transport { method: method.to_owned(), message };
        let mut renewed = false;
        for attempt in 0..6 {
            if paced {
                if let Err(wait) = self.pacer.wait(channel, self.max_retry_wait).await {
                    // Slack asked for a pause longer than we wait: honour it by not calling.
                    return Err(SlackError::RateLimited { method: method.to_owned(), retry_after: wait });
                }
            }
            let request = match json_body {
                Some(body) => self.http.post(&url).header(header::CONTENT_TYPE, "application/json; charset=utf-8").body(body.to_string()),
                None => self.http.get(&url).query(query),
            };
            let used = self.token.get();
            let response = request.bearer_auth(used.expose_secret()).send().await.map_err(|e| transport(crate::aws::chain(&e)))?;
            let status = response.status();
            if status == StatusCode::TOO_MANY_REQUESTS {
                self.rate_limited.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let retry_after = response
                    .headers()
                    .get(header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map_or(Duration::from_secs(1), Duration::from_secs);
                tracing::warn!(method, channel, retry_after_secs = retry_after.as_secs(), attempt, "Slack answered 429");
                self.pacer.hold(channel, Instant::now() + retry_after);
                if retry_after > self.max_retry_wait || attempt == 5 {
                    return Err(SlackError::RateLimited { method: method.to_owned(), retry_after });
                }
                tokio::time::sleep(retry_after).await;
                continue;
            }
            if status.is_server_error() {
                return Err(transport(format!("HTTP {status}")));
            }
            let text = response.text().await.map_err(|e| transport(crate::aws::chain(&e)))?;
            let reply: ApiReply = serde_json::from_str(&text).map_err(|e| transport(format!("HTTP {status}, unreadable answer: {e}")))?;
            if !reply.ok {
                // A rotated token: Slack did nothing with the call; read the secret again and
                // retry once with the new one.
                let rejected = matches!(reply.error.as_deref(), Some("invalid_auth" | "token_revoked"));
                if rejected && !renewed && self.token.renew_after_rejection(&used).await {
                    renewed = true;
                    continue;
                }
                let mut detail: Vec<String> =
                    reply.errors.iter().map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_owned)).collect();
                detail.extend(reply.response_metadata.as_ref().map(|m| m.messages.clone()).unwrap_or_default());
                return Err(SlackError::Api {
                    method: method.to_owned(),
                    error: reply.error.unwrap_or_else(|| "unknown_error".into()),
                    detail,
                });
            }
            return Ok(reply);
        }
        unreachable!("the loop returns on its last attempt")
    }

    /// `chat.postMessage`; the new message's `ts`.
    pub async fn post_message(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        message: &Rendered,
        metadata: Option<&Value>,
    ) -> Result<String, SlackError> {
        let mut body =
            json!({"channel": channel, "text": message.text, "blocks": message.blocks, "unfurl_links": false, "unfurl_media": false});
        if let Some(ts) = thread_ts {
            body["thread_ts"] = ts.into();
        }
        if let Some(m) = metadata {
            body["metadata"] = m.clone();
        }
        let reply = self.call("chat.postMessage", channel, Some(&body), &[], true).await?;
        reply.ts.ok_or_else(|| SlackError::Transport { method: "chat.postMessage".into(), message: "ok without a ts".into() })
    }

    /// `chat.update` of a message this app posted.
    pub async fn update(&self, channel: &str, ts: &str, message: &Rendered) -> Result<(), SlackError> {
        let body = json!({"channel": channel, "ts": ts, "text": message.text, "blocks": message.blocks});
        self.call("chat.update", channel, Some(&body), &[], true).await.map(|_| ())
    }

    /// Messages of the channel (`thread_ts` `None`) or of one thread, newer than `oldest`
    /// (seconds since the epoch), with their metadata, at most `pages` pages of 200.
    pub async fn messages(
        &self,
        channel: &str,
        thread_ts: Option<&str>,
        oldest: f64,
        pages: usize,
    ) -> Result<Vec<HistoryMessage>, SlackError> {
        let method = if thread_ts.is_some() { "conversations.replies" } else { "conversations.history" };
        let mut out = Vec::new();
        let mut cursor = String::new();
        for _ in 0..pages.max(1) {
            let mut query = vec![
                ("channel", channel.to_owned()),
                ("oldest", format!("{oldest:.6}")),
                ("limit", "200".to_owned()),
                ("include_all_metadata", "true".to_owned()),
            ];
            if let Some(ts) = thread_ts {
                query.push(("ts", ts.to_owned()));
            }
            if !cursor.is_empty() {
                query.push(("cursor", cursor.clone()));
            }
            let reply = self.call(method, channel, None, &query, false).await?;
            out.extend(reply.messages);
            cursor = reply.response_metadata.map(|m| m.next_cursor).unwrap_or_default();
            if !reply.has_more || cursor.is_empty() {
                break;
            }
        }
        Ok(out)
    }
}

// ------------------------------------------------------------------------------------------------
// The store port: DynamoDB and memory
// ------------------------------------------------------------------------------------------------

/// [`EscalationStore`] on the state table: `pk` = `ESC#<instance>#<group>`, `sk` = id, `doc` (the
/// JSON), `version` (a number), `expires_at` (the table's TTL attribute; reads check it too).
#[derive(Debug, Clone)]
pub struct DynamoDbEscalationStore {
    client: DynamoClient,
    table: String,
    instance: String,
}

impl DynamoDbEscalationStore {
    pub fn new(client: DynamoClient, table: impl Into<String>, instance: impl Into<String>) -> Self {
        Self { client, table: table.into(), instance: instance.into() }
    }

    fn pk(&self, group: &str) -> String {
        format!("ESC#{}#{group}", self.instance)
    }

    fn err(&self, op: &str) -> String {
        format!("DynamoDB {op} on {}", self.table)
    }
}

fn attr_s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn attr_n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn versioned(item: &HashMap<String, AttributeValue>, now: i64) -> Result<Option<Versioned>, StoreError> {
    let n = |name: &str| match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse::<i64>().map_err(|_| StoreError(format!("`{name}` is not an integer"))),
        _ => Err(StoreError(format!("`{name}` is missing"))),
    };
    if n(crate::dynamodb::TTL_ATTRIBUTE)? <= now {
        return Ok(None);
    }
    let doc = match item.get("doc") {
        Some(AttributeValue::S(s)) => serde_json::from_str(s).map_err(|e| StoreError(format!("`doc` is not JSON: {e}")))?,
        _ => return Err(StoreError("`doc` is missing".into())),
    };
    Ok(Some(Versioned { version: n("version")? as u64, doc }))
}

impl EscalationStore for DynamoDbEscalationStore {
    async fn load(&self, group: &str, id: &str) -> Result<Option<Versioned>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", attr_s(self.pk(group)))
            .key("sk", attr_s(id))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| StoreError(describe(&self.err("GetItem"), &e)))?;
        match out.item {
            Some(item) => versioned(&item, Utc::now().timestamp()),
            None => Ok(None),
        }
    }

    async fn store(&self, group: &str, id: &str, doc: &Value, expected: Option<u64>, ttl: Duration) -> Result<bool, StoreError> {
        let now = Utc::now();
        let expires = now.timestamp() + ttl.as_secs().min(10 * 365 * 24 * 3600) as i64;
        let next = expected.map_or(1, |v| v + 1);
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", attr_s(self.pk(group)))
            .item("sk", attr_s(id))
            .item("doc", attr_s(doc.to_string()))
            .item("version", attr_n(next as i64))
            .item(crate::dynamodb::TTL_ATTRIBUTE, attr_n(expires));
        let put = match expected {
            None => put
                .condition_expression("attribute_not_exists(#pk) OR #exp <= :now")
                .expression_attribute_names("#pk", "pk")
                .expression_attribute_names("#exp", crate::dynamodb::TTL_ATTRIBUTE)
                .expression_attribute_values(":now", attr_n(now.timestamp())),
            Some(v) => put
                .condition_expression("#version = :v")
                .expression_attribute_names("#version", "version")
                .expression_attribute_values(":v", attr_n(v as i64)),
        };
        match put.send().await {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(false),
            Err(e) => Err(StoreError(describe(&self.err("PutItem"), &e))),
        }
    }

    async fn list(&self, group: &str) -> Result<Vec<(String, Versioned)>, StoreError> {
        let now = Utc::now().timestamp();
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .consistent_read(true)
                .key_condition_expression("#pk = :pk")
                .expression_attribute_names("#pk", "pk")
                .expression_attribute_values(":pk", attr_s(self.pk(group)))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| StoreError(describe(&self.err("Query"), &e)))?;
            for item in page.items.unwrap_or_default() {
                let id = match item.get("sk") {
                    Some(AttributeValue::S(s)) => s.clone(),
                    _ => return Err(StoreError("`sk` is missing".into())),
                };
                if let Some(v) = versioned(&item, now)? {
                    out.push((id, v));
                }
            }
            match page.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(out),
            }
        }
    }
}

/// `(group, id)` → `(version, document, expiry)`.
type MemoryRecords = HashMap<(String, String), (u64, Value, DateTime<Utc>)>;

/// [`EscalationStore`] in memory, with the same compare-and-set and expiry.
#[derive(Default)]
pub struct MemoryEscalationStore {
    records: Mutex<MemoryRecords>,
}

impl MemoryEscalationStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryRecords> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl EscalationStore for MemoryEscalationStore {
    async fn load(&self, group: &str, id: &str) -> Result<Option<Versioned>, StoreError> {
        let now = Utc::now();
        Ok(self
            .lock()
            .get(&(group.to_owned(), id.to_owned()))
            .filter(|(_, _, exp)| *exp > now)
            .map(|(version, doc, _)| Versioned { version: *version, doc: doc.clone() }))
    }

    async fn store(&self, group: &str, id: &str, doc: &Value, expected: Option<u64>, ttl: Duration) -> Result<bool, StoreError> {
        let now = Utc::now();
        let mut records = self.lock();
        let key = (group.to_owned(), id.to_owned());
        let current = records.get(&key).filter(|(_, _, exp)| *exp > now).map(|(v, _, _)| *v);
        if current != expected {
            return Ok(false);
        }
        let expires = now + TimeDelta::from_std(ttl).unwrap_or(TimeDelta::MAX / 2);
        records.insert(key, (expected.map_or(1, |v| v + 1), doc.clone(), expires));
        Ok(true)
    }

    async fn list(&self, group: &str) -> Result<Vec<(String, Versioned)>, StoreError> {
        let now = Utc::now();
        let mut out: Vec<(String, Versioned)> = self
            .lock()
            .iter()
            .filter(|((g, _), (_, _, exp))| g == group && *exp > now)
            .map(|((_, id), (version, doc, _))| (id.clone(), Versioned { version: *version, doc: doc.clone() }))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}

// ------------------------------------------------------------------------------------------------
// Records
// ------------------------------------------------------------------------------------------------

/// A message posted once (group `msg`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct MessageRec {
    channel: String,
    #[serde(default)]
    thread_ts: Option<String>,
    #[serde(default)]
    ts: Option<String>,
    #[serde(default)]
    lease_until: Option<DateTime<Utc>>,
    first_intent: DateTime<Utc>,
    #[serde(default)]
    tries: u32,
}

/// One escalated incident (group `app#<app>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct IncidentRec {
    facts: IncidentFacts,
    state: IncidentState,
    #[serde(default)]
    detail: String,
    state_at: DateTime<Utc>,
    /// Button generation: bumped when a person's action is performed.
    #[serde(default)]
    generation: u32,
    /// Update counter (new actions block id on every update).
    #[serde(default)]
    revision: u32,
    /// The message that shows this incident, and whether it is a fleet member's reply.
    message_key: String,
    #[serde(default)]
    member: bool,
    /// The message whose thread gets this incident's replies.
    thread_key: String,
    /// The fleet window this incident joined, and its position in it (1-based).
    #[serde(default)]
    window_fleet: Option<String>,
    #[serde(default)]
    position: usize,
    /// Set once it is (or became) part of a fleet incident.
    #[serde(default)]
    fleet: Option<String>,
    /// Snoozed at escalation: nothing was posted.
    #[serde(default)]
    suppressed: bool,
    #[serde(default)]
    resolved: bool,
    /// Human actions already reported.
    #[serde(default)]
    reported: Vec<String>,
    #[serde(default)]
    snoozed_until: Option<DateTime<Utc>>,
}

impl IncidentRec {
    fn status(&self) -> Status {
        Status { state: self.state, detail: self.detail.clone(), at: self.state_at, snoozed_until: self.snoozed_until }
    }
}

/// The open fleet window of one failure mode (group `fleetwin`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct WindowRec {
    fleet_id: String,
    last_at: DateTime<Utc>,
    /// The first incidents, in arrival order (as many as the fleet threshold: later ones join the
    /// fleet whatever their position, so only the first need remembering).
    members: Vec<String>,
    /// Arrivals in this window.
    #[serde(default)]
    count: usize,
}

/// A fleet member as the fleet parent lists it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct FleetMember {
    incident_id: String,
    app: String,
    project: String,
    destination: String,
}

/// A fleet incident (group `fleet`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FleetRec {
    fleet_id: String,
    failure_mode: FailureMode,
    opened_at: DateTime<Utc>,
    last_at: DateTime<Utc>,
    /// The incidents that arrived before the fleet was recognised (individual parents first).
    earlier: Vec<String>,
    /// The apps with a reply of their own (at most `max_fleet_replies`).
    members: Vec<FleetMember>,
    /// Apps beyond that: counted in the parent, no reply.
    #[serde(default)]
    more: usize,
    /// Those apps per project and per destination cluster, for the parent's "most affected".
    #[serde(default)]
    more_projects: BTreeMap<String, usize>,
    #[serde(default)]
    more_clusters: BTreeMap<String, usize>,
    #[serde(default)]
    resolved: Vec<String>,
    /// Whether the fleet parent is the first incident's parent, rewritten (`Some(Some(id))`), or
    /// a new message (`Some(None)`); decided once, by whoever gets there first.
    #[serde(default)]
    adopt: Option<Option<String>>,
    /// The fleet parent exists.
    #[serde(default)]
    established: bool,
    /// The earlier incidents were moved into the fleet thread.
    #[serde(default)]
    migrated: bool,
    /// Bumped by every change the parent shows; `shown` is the revision on screen.
    #[serde(default)]
    revision: u32,
    #[serde(default)]
    shown: u32,
    /// The one worker updating the parent now (so updates cannot land out of order), until when.
    #[serde(default)]
    updater: Option<u64>,
    #[serde(default)]
    updating_until: Option<DateTime<Utc>>,
}

impl FleetRec {
    fn summary(&self, instance: &str) -> FleetSummary {
        // Every app counts, with a reply of its own or beyond the reply limit.
        let mut projects = self.more_projects.clone();
        let mut clusters = self.more_clusters.clone();
        for m in &self.members {
            *projects.entry(m.project.clone()).or_default() += 1;
            *clusters.entry(m.destination.clone()).or_default() += 1;
        }
        FleetSummary {
            fleet_id: self.fleet_id.clone(),
            instance: instance.to_owned(),
            failure_mode: self.failure_mode,
            apps: self.members.iter().map(|m| m.app.clone()).collect(),
            total: self.members.len() + self.more,
            resolved: self.resolved.len(),
            projects: projects.into_iter().collect(),
            clusters: clusters.into_iter().collect(),
            first_at: self.opened_at,
            last_at: self.last_at,
        }
    }

    fn status(&self) -> Status {
        let total = self.members.len() + self.more;
        let all = total > 0 && self.resolved.len() >= total && self.members.iter().all(|m| self.resolved.contains(&m.incident_id));
        Status {
            state: if all { IncidentState::Resolved } else { IncidentState::NeedsHuman },
            detail: String::new(),
            at: self.last_at,
            snoozed_until: None,
        }
    }
}

/// Who snoozed an app, until when (group `snooze`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SnoozeRec {
    until: DateTime<Utc>,
    by: String,
}

fn esc_err(e: impl std::fmt::Display) -> EscalationError {
    EscalationError(e.to_string())
}

fn parse<T: DeserializeOwned>(v: &Versioned, what: &str) -> Result<T, EscalationError> {
    serde_json::from_value(v.doc.clone()).map_err(|e| EscalationError(format!("{what}: unreadable record: {e}")))
}

fn to_doc<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("records serialise")
}

// ------------------------------------------------------------------------------------------------
// The escalator
// ------------------------------------------------------------------------------------------------

/// The `Escalator` port on Slack (see the module documentation).
pub struct SlackEscalator<S> {
    pub settings: SlackSettings,
    pub client: SlackClient,
    pub store: S,
}

/// Compare-and-set retries before giving up on a contended record.
const CAS_TRIES: usize = 50;

/// The TTL of an open incident's records: as good as never (the stores cap a TTL at ten years).
/// Resolving the incident gives them `record_ttl`.
const UNTIL_RESOLVED: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// Records whose life follows an incident's: kept until it resolves, then `record_ttl`.
trait Resolvable {
    fn is_resolved(&self) -> bool;
}

impl Resolvable for IncidentRec {
    fn is_resolved(&self) -> bool {
        self.resolved
    }
}

impl Resolvable for FleetRec {
    fn is_resolved(&self) -> bool {
        self.status().state == IncidentState::Resolved
    }
}

impl<S: EscalationStore> SlackEscalator<S> {
    pub fn new(settings: SlackSettings, token: impl Into<String>, store: S) -> Result<Self, SlackError> {
        Self::with_token_source(settings, crate::token::TokenSource::fixed(token), store)
    }

    /// An escalator whose bot token is re-read from `token` when Slack rejects it.
    pub fn with_token_source(settings: SlackSettings, token: crate::token::TokenSource, store: S) -> Result<Self, SlackError> {
        let client = SlackClient::with_token_source(&settings, token)?;
        Ok(Self { settings, client, store })
    }

    fn metadata(&self, key: &str) -> Value {
        json!({"event_type": METADATA_EVENT_TYPE, "event_payload": {"key": key, "instance": self.settings.instance}})
    }

    /// The TTL of a record whose incident is still open.
    fn ttl(&self) -> Duration {
        UNTIL_RESOLVED
    }

    fn ttl_of(&self, rec: &impl Resolvable) -> Duration {
        if rec.is_resolved() { self.settings.record_ttl } else { UNTIL_RESOLVED }
    }

    /// Gives records of a resolved incident `record_ttl` from now (a record gone is left gone).
    async fn retire(&self, records: &[(&str, &str)]) -> Result<(), EscalationError> {
        for (group, id) in records {
            for try_no in 0..=CAS_TRIES {
                let Some(v) = self.store.load(group, id).await.map_err(esc_err)? else { break };
                if self.store.store(group, id, &v.doc, Some(v.version), self.settings.record_ttl).await.map_err(esc_err)? {
                    break;
                }
                if try_no == CAS_TRIES {
                    return Err(EscalationError(format!("{group}/{id}: too many concurrent writers; retry later")));
                }
            }
        }
        Ok(())
    }

    async fn load<T: DeserializeOwned>(&self, group: &str, id: &str) -> Result<Option<(u64, T)>, EscalationError> {
        match self.store.load(group, id).await.map_err(esc_err)? {
            Some(v) => Ok(Some((v.version, parse(&v, &format!("{group}/{id}"))?))),
            None => Ok(None),
        }
    }

    async fn save<T: Serialize>(
        &self,
        group: &str,
        id: &str,
        value: &T,
        expected: Option<u64>,
        ttl: Duration,
    ) -> Result<bool, EscalationError> {
        self.store.store(group, id, &to_doc(value), expected, ttl).await.map_err(esc_err)
    }

    /// Reads, changes and writes back a record until the write wins. `change` returns false to
    /// leave the record as it is.
    async fn update_rec<T: Serialize + DeserializeOwned + Resolvable>(
        &self,
        group: &str,
        id: &str,
        mut change: impl FnMut(&mut T) -> bool,
    ) -> Result<Option<T>, EscalationError> {
        for _ in 0..CAS_TRIES {
            let Some((version, mut value)) = self.load::<T>(group, id).await? else { return Ok(None) };
            if !change(&mut value) {
                return Ok(Some(value));
            }
            if self.save(group, id, &value, Some(version), self.ttl_of(&value)).await? {
                return Ok(Some(value));
            }
            tokio::time::sleep(Duration::from_millis(5 + rand::random_range(0..20))).await;
        }
        Err(EscalationError(format!("{group}/{id}: too many concurrent writers; retry later")))
    }

    /// The `ts` of a posted message.
    async fn ts_of(&self, key: &str) -> Result<Option<String>, EscalationError> {
        Ok(self.load::<MessageRec>("msg", key).await?.and_then(|(_, m)| m.ts))
    }

    /// Waits up to `busy_wait` for another worker's message to get its `ts`.
    async fn wait_ts(&self, key: &str) -> Result<String, EscalationError> {
        let deadline = Instant::now() + self.settings.busy_wait;
        loop {
            if let Some(ts) = self.ts_of(key).await? {
                return Ok(ts);
            }
            if Instant::now() >= deadline {
                return Err(EscalationError(format!("message {key} is not posted yet; retry later")));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Posts `message` once for `key` (in the thread of message `thread_key`, if any); returns
    /// its `ts`. See the module documentation for how a crash at any point posts no second copy.
    pub async fn post_once(&self, key: &str, thread_key: Option<&str>, message: &Rendered) -> Result<String, EscalationError> {
        let thread_ts = match thread_key {
            Some(k) => Some(self.wait_ts(k).await?),
            None => None,
        };
        let channel = self.settings.channel.clone();
        let deadline = Instant::now() + self.settings.busy_wait;
        let lease = TimeDelta::from_std(self.settings.lease).unwrap_or(TimeDelta::seconds(60));
        let (version, rec) = loop {
            let now = Utc::now();
            match self.load::<MessageRec>("msg", key).await? {
                Some((_, rec)) if rec.ts.is_some() => return Ok(rec.ts.expect("checked")),
                Some((_, rec)) if rec.lease_until.is_some_and(|u| u > now) => {
                    if Instant::now() >= deadline {
                        return Err(EscalationError(format!("another worker is posting {key}; retry later")));
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Some((version, mut rec)) => {
                    // An earlier attempt stopped between its intent and recording the ts: it may
                    // have posted. Take the lease, then look before posting.
                    rec.lease_until = Some(now + lease);
                    rec.tries += 1;
                    if !self.save("msg", key, &rec, Some(version), self.ttl()).await? {
                        continue;
                    }
                    let since = rec.first_intent - TimeDelta::minutes(10);
                    let oldest = since.timestamp() as f64;
                    let found = self
                        .client
                        .messages(&rec.channel, rec.thread_ts.as_deref(), oldest, self.settings.history_pages)
                        .await
                        .map_err(esc_err)?
                        .into_iter()
                        .find(|m| {
                            m.metadata.as_ref().is_some_and(|md| {
                                md.get("event_type").and_then(Value::as_str) == Some(METADATA_EVENT_TYPE)
                                    && md.pointer("/event_payload/key").and_then(Value::as_str) == Some(key)
                            })
                        });
                    if let Some(m) = found {
                        tracing::info!(key, ts = %m.ts, "found the message an earlier attempt posted; not posting again");
                        rec.ts = Some(m.ts.clone());
                        rec.lease_until = None;
                        self.save("msg", key, &rec, Some(version + 1), self.ttl()).await?;
                        return Ok(m.ts);
                    }
                    break (version + 1, rec);
                }
                None => {
                    let rec = MessageRec {
                        channel: channel.clone(),
                        thread_ts: thread_ts.clone(),
                        ts: None,
                        lease_until: Some(now + lease),
                        first_intent: now,
                        tries: 1,
                    };
                    if self.save("msg", key, &rec, None, self.ttl()).await? {
                        break (1, rec);
                    }
                }
            }
        };
        match self.client.post_message(&rec.channel, rec.thread_ts.as_deref(), message, Some(&self.metadata(key))).await {
            Ok(ts) => {
                let posted = MessageRec { ts: Some(ts.clone()), lease_until: None, ..rec };
                if !self.save("msg", key, &posted, Some(version), self.ttl()).await? {
                    tracing::warn!(key, "the message record changed while posting (lease too short?)");
                }
                Ok(ts)
            }
            Err(e) => {
                if e.not_applied() {
                    // Certainly not posted: free the lease so a retry need not wait for it.
                    let released = MessageRec { lease_until: None, ..rec };
                    self.save("msg", key, &released, Some(version), self.ttl()).await.ok();
                }
                Err(esc_err(e))
            }
        }
    }

    /// Rewrites the message posted for `key`.
    async fn update_message(&self, key: &str, message: &Rendered) -> Result<(), EscalationError> {
        let Some((_, rec)) = self.load::<MessageRec>("msg", key).await? else {
            return Err(EscalationError(format!("no message {key} to update")));
        };
        let Some(ts) = rec.ts else { return Err(EscalationError(format!("message {key} is not posted yet; retry later"))) };
        self.client.update(&rec.channel, &ts, message).await.map_err(esc_err)
    }

    fn render_incident(&self, rec: &IncidentRec) -> Rendered {
        let buttons = escalation::buttons(&rec.facts, rec.generation);
        if rec.member {
            escalation::fleet_member(&rec.facts, &rec.status(), &buttons, rec.revision, self.settings.render_options())
        } else {
            escalation::incident_parent(&rec.facts, &rec.status(), &buttons, rec.revision, self.settings.render_options())
        }
    }

    /// Stores what the buttons of `rec`'s current generation stand for.
    async fn store_actions(&self, rec: &IncidentRec, app: &Application, decision: Option<&Decision>) -> Result<(), EscalationError> {
        let sync = decision.map(|d| escalation::human_sync_plan(app, d));
        self.store_buttons(&rec.facts, &escalation::buttons(&rec.facts, rec.generation), sync, Utc::now()).await
    }

    async fn store_buttons(
        &self,
        facts: &IncidentFacts,
        buttons: &[Button],
        sync: Option<medic_core::decision::SyncPlan>,
        at: DateTime<Utc>,
    ) -> Result<(), EscalationError> {
        for b in buttons {
            let request = HumanActionRequest {
                id: b.id.clone(),
                action: b.action,
                incident_id: facts.incident_id.clone(),
                app: facts.app_ref(),
                failure_mode: facts.failure_mode,
                sync: if b.action == HumanAction::Sync { sync.clone() } else { None },
                idempotency_key: escalation::human_action_key(&b.id),
                offered_at: at,
            };
            // Created once; a retry finds it there (same content).
            self.save("action", &b.id, &request, None, self.settings.action_ttl).await?;
        }
        Ok(())
    }

    /// Joins the open fleet window of `mode` (idempotent): the fleet id and this incident's
    /// position in it.
    async fn join_window(&self, mode: FailureMode, incident_id: &str) -> Result<(String, usize), EscalationError> {
        let kept = self.settings.fleet_threshold.max(1);
        let window = TimeDelta::from_std(self.settings.fleet_window).unwrap_or(TimeDelta::minutes(15));
        for _ in 0..CAS_TRIES {
            let now = Utc::now();
            let current = self.load::<WindowRec>("fleetwin", mode.id()).await?;
            let (expected, mut rec) = match current {
                Some((v, rec)) if now < rec.last_at + window || rec.members.iter().any(|m| m == incident_id) => (Some(v), rec),
                Some((v, _)) => (
                    Some(v),
                    WindowRec { fleet_id: new_fleet_id(&self.settings.instance, mode, now), last_at: now, members: vec![], count: 0 },
                ),
                None => (
                    None,
                    WindowRec { fleet_id: new_fleet_id(&self.settings.instance, mode, now), last_at: now, members: vec![], count: 0 },
                ),
            };
            if let Some(i) = rec.members.iter().position(|m| m == incident_id) {
                return Ok((rec.fleet_id, i + 1));
            }
            rec.count = rec.count.max(rec.members.len()) + 1;
            rec.last_at = now;
            let position = if rec.members.len() < kept {
                rec.members.push(incident_id.to_owned());
                rec.members.len()
            } else {
                // Past the first few: a fleet member whatever the exact position (a retry may
                // count it twice; only "past the threshold" matters).
                rec.count.max(kept + 1)
            };
            if self.save("fleetwin", mode.id(), &rec, expected, self.settings.record_ttl).await? {
                return Ok((rec.fleet_id, position));
            }
            tokio::time::sleep(Duration::from_millis(5 + rand::random_range(0..20))).await;
        }
        Err(EscalationError(format!("fleet window of {mode}: too many concurrent writers; retry later")))
    }

    async fn snoozed(&self, app: &str) -> Result<Option<SnoozeRec>, EscalationError> {
        Ok(self.load::<SnoozeRec>("snooze", app).await?.map(|(_, s)| s).filter(|s| s.until > Utc::now()))
    }

    /// Makes sure the fleet parent of `fleet_id` exists and the incidents that arrived before the
    /// fleet was recognised are in its thread; returns the fleet parent's key.
    async fn ensure_fleet(&self, fleet_id: &str) -> Result<String, EscalationError> {
        let fleet_key = format!("fleet:{fleet_id}");
        let Some((_, fleet)) = self.load::<FleetRec>("fleet", fleet_id).await? else {
            return Err(EscalationError(format!("fleet {fleet_id} has no record")));
        };
        if !fleet.established {
            // Adopt the first incident's parent as the fleet parent, so the channel keeps one
            // message for the whole outage; a new one only if that incident has no record yet
            // (it then joins the fleet itself when its worker gets there). Decided once.
            let choice = match fleet.adopt.clone() {
                Some(choice) => choice,
                None => {
                    let candidate = match fleet.earlier.first() {
                        Some(first) => match self.find_incident(first).await? {
                            Some((_, r)) if !r.suppressed && r.fleet.is_none() => Some(first.clone()),
                            _ => None,
                        },
                        None => None,
                    };
                    let decided = self
                        .update_rec::<FleetRec>("fleet", fleet_id, |f| {
                            if f.adopt.is_some() {
                                return false;
                            }
                            f.adopt = Some(candidate.clone());
                            true
                        })
                        .await?;
                    decided.and_then(|f| f.adopt).unwrap_or(None)
                }
            };
            let summary = fleet.summary(&self.settings.instance);
            let rendered = escalation::fleet_parent(&summary, &fleet.status());
            match choice {
                Some(first) => {
                    let Some((_, r)) = self.find_incident(&first).await? else {
                        return Err(EscalationError(format!("incident {first} vanished")));
                    };
                    // Its parent exists, is being posted, or was never posted (its worker
                    // stopped): post_once gives its ts in every case, posting at most once.
                    let ts = self.post_once(&format!("inc:{first}"), None, &self.render_incident(&r)).await?;
                    let rec = MessageRec {
                        channel: self.settings.channel.clone(),
                        thread_ts: None,
                        ts: Some(ts),
                        lease_until: None,
                        first_intent: Utc::now(),
                        tries: 0,
                    };
                    self.save("msg", &fleet_key, &rec, None, self.ttl()).await?;
                    self.update_message(&fleet_key, &rendered).await?;
                }
                None => {
                    self.post_once(&fleet_key, None, &rendered).await?;
                }
            }
            self.update_rec::<FleetRec>("fleet", fleet_id, |f| {
                let change = !f.established;
                f.established = true;
                change
            })
            .await?;
        }
        if !fleet.migrated {
            let first = fleet.earlier.first().cloned();
            for incident_id in &fleet.earlier {
                let Some((_, rec)) = self.find_incident(incident_id).await? else { continue };
                if rec.fleet.is_some() {
                    continue;
                }
                if !rec.suppressed && first.as_deref() != Some(incident_id.as_str()) {
                    self.update_message(&rec.message_key, &escalation::folded(&rec.facts, fleet.failure_mode)).await?;
                }
                self.join_fleet(fleet_id, &rec.facts).await?;
            }
            self.update_rec::<FleetRec>("fleet", fleet_id, |f| {
                let change = !f.migrated;
                f.migrated = true;
                change
            })
            .await?;
        }
        Ok(fleet_key)
    }

    /// The record of an incident, wherever its app (the app is part of the group name).
    async fn find_incident(&self, incident_id: &str) -> Result<Option<(String, IncidentRec)>, EscalationError> {
        let Some((_, pointer)) = self.load::<String>("incident", incident_id).await? else { return Ok(None) };
        Ok(self.load::<IncidentRec>(&app_group(&pointer), incident_id).await?.map(|(_, r)| (pointer, r)))
    }

    /// Adds the incident to fleet `fleet_id`: its reply in the fleet thread, and its record.
    async fn join_fleet(&self, fleet_id: &str, facts: &IncidentFacts) -> Result<(), EscalationError> {
        let fleet_key = format!("fleet:{fleet_id}");
        let member_key = format!("fm:{fleet_id}:{}", facts.incident_id);
        let group = app_group(&facts.app());
        let Some((_, current)) = self.load::<IncidentRec>(&group, &facts.incident_id).await? else {
            return Err(EscalationError(format!("incident {} has no record", facts.incident_id)));
        };
        let listed = |f: &FleetRec| f.members.iter().any(|m| m.incident_id == facts.incident_id);
        let room = match self.load::<FleetRec>("fleet", fleet_id).await? {
            Some((_, f)) => listed(&f) || f.members.len() < self.settings.max_fleet_replies,
            None => true,
        };
        // Beyond the reply limit an app is only counted in the parent: thousands of replies
        // would take an hour at one post per second, and nobody fixes an outage app by app.
        let quiet = current.suppressed || (current.fleet.is_none() && !room);
        let mut as_member = current.clone();
        as_member.member = true;
        as_member.fleet = Some(fleet_id.to_owned());
        as_member.message_key = member_key.clone();
        as_member.thread_key = fleet_key.clone();
        if !quiet {
            self.post_once(&member_key, Some(&fleet_key), &self.render_incident(&as_member)).await?;
        }
        let mut joined_now = false;
        self.update_rec::<IncidentRec>(&group, &facts.incident_id, |r| {
            let change = r.fleet.is_none();
            joined_now = change;
            r.member = true;
            r.fleet = Some(fleet_id.to_owned());
            r.message_key = member_key.clone();
            r.thread_key = fleet_key.clone();
            r.suppressed = r.suppressed || quiet;
            change
        })
        .await?;
        let member = FleetMember {
            incident_id: facts.incident_id.clone(),
            app: facts.app(),
            project: facts.project.clone(),
            destination: if facts.destination_name.is_empty() { facts.destination_server.clone() } else { facts.destination_name.clone() },
        };
        self.update_rec::<FleetRec>("fleet", fleet_id, |f| {
            if listed(f) {
                return false;
            }
            if quiet {
                if !joined_now {
                    return false;
                }
                f.more += 1;
                *f.more_projects.entry(member.project.clone()).or_default() += 1;
                *f.more_clusters.entry(member.destination.clone()).or_default() += 1;
            } else {
                f.members.push(member.clone());
            }
            f.last_at = Utc::now();
            f.revision += 1;
            true
        })
        .await?;
        if quiet && joined_now {
            tracing::info!(app = %facts.app(), fleet = fleet_id, "fleet reply limit reached: the app is counted in the fleet parent only");
        }
        self.refresh_fleet(fleet_id).await
    }

    /// Brings the fleet parent up to date. One worker at a time does it (a lease in the fleet
    /// record), and it re-renders until what it showed is the latest, so concurrent changes never
    /// leave an older count on screen; changes arriving meanwhile are coalesced, at most one
    /// update per `fleet_update_interval`.
    async fn refresh_fleet(&self, fleet_id: &str) -> Result<(), EscalationError> {
        let me: u64 = rand::random();
        let lease = TimeDelta::seconds(30);
        let started = Instant::now();
        let mut held = false;
        let mut last_update: Option<Instant> = None;
        for _ in 0..CAS_TRIES * 4 {
            let Some((version, mut f)) = self.load::<FleetRec>("fleet", fleet_id).await? else { return Ok(()) };
            let now = Utc::now();
            if !held {
                if f.shown >= f.revision || !f.established {
                    return Ok(());
                }
                if f.updater.is_some_and(|u| u != me) && f.updating_until.is_some_and(|t| t > now) {
                    // The holder re-checks after its update and shows this change too.
                    return Ok(());
                }
                f.updater = Some(me);
                f.updating_until = Some(now + lease);
                held = self.save("fleet", fleet_id, &f, Some(version), self.ttl_of(&f)).await?;
                continue;
            }
            if f.shown >= f.revision || started.elapsed() > Duration::from_secs(20) {
                f.updater = None;
                f.updating_until = None;
                if self.save("fleet", fleet_id, &f, Some(version), self.ttl_of(&f)).await? {
                    return Ok(());
                }
                continue;
            }
            // Changes keep coming: at most one update per interval, the latest each time.
            if let Some(at) = last_update {
                let next = at + self.settings.fleet_update_interval;
                if next > Instant::now() {
                    tokio::time::sleep_until(next.into()).await;
                    continue;
                }
            }
            let showing = f.revision;
            let rendered = escalation::fleet_parent(&f.summary(&self.settings.instance), &f.status());
            last_update = Some(Instant::now());
            if let Err(e) = self.update_message(&format!("fleet:{fleet_id}"), &rendered).await {
                self.update_rec::<FleetRec>("fleet", fleet_id, |f| {
                    let mine = f.updater == Some(me);
                    if mine {
                        f.updater = None;
                        f.updating_until = None;
                    }
                    mine
                })
                .await
                .ok();
                return Err(e);
            }
            self.update_rec::<FleetRec>("fleet", fleet_id, |f| {
                let change = f.shown < showing;
                f.shown = f.shown.max(showing);
                change
            })
            .await?;
        }
        Err(EscalationError(format!("fleet {fleet_id}: too many concurrent writers; retry later")))
    }

    /// Rewrites the message that shows `rec` (parent or fleet reply).
    async fn show(&self, rec: &IncidentRec) -> Result<(), EscalationError> {
        if rec.suppressed {
            return Ok(());
        }
        self.update_message(&rec.message_key, &self.render_incident(rec)).await
    }
}

/// What the button with opaque id `id` stands for, read straight from the store (the
/// slack-actions function, which holds no Slack token, uses this). `None` when unknown or expired.
pub async fn load_action<S: EscalationStore>(store: &S, id: &str) -> Result<Option<HumanActionRequest>, StoreError> {
    if !escalation::is_action_id(id) {
        return Ok(None);
    }
    match store.load("action", id).await? {
        Some(v) => serde_json::from_value(v.doc).map(Some).map_err(|e| StoreError(format!("action {id}: unreadable record: {e}"))),
        None => Ok(None),
    }
}

/// What the Slack records say about one incident, for operators (`medic incidents`): its state
/// in Slack, where its thread is, and the fleet incident it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlackIncidentView {
    pub state: IncidentState,
    /// Who moved it there (`acknowledge by <@U…>`), when set.
    pub detail: String,
    /// Not posted: the app was snoozed when it escalated.
    pub suppressed: bool,
    pub project: String,
    pub failure_mode: FailureMode,
    /// The channel of its messages, once posted.
    pub channel: Option<String>,
    /// The `ts` of the thread's parent (where its replies go): its own parent, or the fleet's.
    pub thread_ts: Option<String>,
    /// The `ts` of the message that shows it (its parent, or its reply in a fleet thread).
    pub message_ts: Option<String>,
    pub fleet: Option<FleetView>,
}

/// A fleet incident as [`SlackIncidentView`] names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetView {
    pub fleet_id: String,
    pub failure_mode: FailureMode,
    /// Apps in it (with a reply of their own or counted), and how many recovered.
    pub apps: usize,
    pub resolved: usize,
    pub opened_at: DateTime<Utc>,
}

/// The Slack records of incident `incident_id` of `app` (`namespace/name`), read straight from
/// the store (no Slack call); `None` when it was never escalated (or its records expired).
pub async fn incident_view<S: EscalationStore>(store: &S, app: &str, incident_id: &str) -> Result<Option<SlackIncidentView>, StoreError> {
    let read = |e: EscalationError| StoreError(e.0);
    let Some(v) = store.load(&app_group(app), incident_id).await? else { return Ok(None) };
    let rec: IncidentRec = parse(&v, incident_id).map_err(read)?;
    let message = |key: String| async move {
        match store.load("msg", &key).await? {
            Some(v) => parse::<MessageRec>(&v, &key).map(Some).map_err(read),
            None => Ok(None),
        }
    };
    let thread = message(rec.thread_key.clone()).await?;
    let shown = message(rec.message_key.clone()).await?;
    let fleet = match &rec.fleet {
        Some(id) => match store.load("fleet", id).await? {
            Some(v) => {
                let f: FleetRec = parse(&v, id).map_err(read)?;
                Some(FleetView {
                    fleet_id: f.fleet_id.clone(),
                    failure_mode: f.failure_mode,
                    apps: f.members.len() + f.more,
                    resolved: f.resolved.len(),
                    opened_at: f.opened_at,
                })
            }
            None => None,
        },
        None => None,
    };
    Ok(Some(SlackIncidentView {
        state: rec.state,
        detail: rec.detail.clone(),
        suppressed: rec.suppressed,
        project: rec.facts.project.clone(),
        failure_mode: rec.facts.failure_mode,
        channel: thread.as_ref().or(shown.as_ref()).map(|m| m.channel.clone()),
        thread_ts: thread.and_then(|m| m.ts),
        message_ts: shown.and_then(|m| m.ts),
        fleet,
    }))
}

fn app_group(app: &str) -> String {
    format!("app#{app}")
}

fn new_fleet_id(instance: &str, mode: FailureMode, at: DateTime<Utc>) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(format!("argo-medic/fleet/v1\0{instance}\0{}\0{}", mode.id(), at.timestamp_micros()));
    let hex: String = h.finalize().iter().take(10).map(|b| format!("{b:02x}")).collect();
    format!("flt-{hex}")
}

impl<S: EscalationStore> Escalator for SlackEscalator<S> {
    async fn escalate(&self, app: &Application, decision: &Decision) -> Result<(), EscalationError> {
        let Some(incident) = decision.incident.as_ref() else {
            return Err(EscalationError(format!("{}: an escalation without an incident", decision.app)));
        };
        let incident_id = incident.id();
        let name = app.qualified_name();
        let group = app_group(&name);
        let facts = IncidentFacts::new(app, decision, self.settings.argocd_url.as_deref());
        let existing = self.load::<IncidentRec>(&group, &incident_id).await?;
        let rec = match existing {
            Some((_, rec)) => rec,
            None => {
                let snooze = self.snoozed(&name).await?;
                let (window_fleet, position) = if self.settings.fleet_threshold > 0 && snooze.is_none() {
                    let (fleet, position) = self.join_window(decision.failure_mode, &incident_id).await?;
                    (Some(fleet), position)
                } else {
                    (None, 0)
                };
                let rec = IncidentRec {
                    facts: facts.clone(),
                    state: IncidentState::NeedsHuman,
                    detail: String::new(),
                    state_at: decision.decided_at,
                    generation: 0,
                    revision: 0,
                    message_key: format!("inc:{incident_id}"),
                    member: false,
                    thread_key: format!("inc:{incident_id}"),
                    window_fleet,
                    position,
                    fleet: None,
                    suppressed: snooze.is_some(),
                    resolved: false,
                    reported: vec![],
                    snoozed_until: snooze.as_ref().map(|s| s.until),
                };
                self.save("incident", &incident_id, &name, None, self.ttl()).await?;
                if !self.save(&group, &incident_id, &rec, None, self.ttl()).await? {
                    // Another worker created it first: continue with theirs.
                    self.load::<IncidentRec>(&group, &incident_id)
                        .await?
                        .map(|(_, r)| r)
                        .ok_or_else(|| esc_err("incident record vanished"))?
                } else {
                    rec
                }
            }
        };
        if rec.suppressed {
            tracing::info!(app = %name, incident = %incident_id, "escalation not posted: the app is snoozed (or beyond its fleet's reply limit)");
            return Ok(());
        }
        self.store_actions(&rec, app, Some(decision)).await?;
        let threshold = self.settings.fleet_threshold;
        let fleet = match (&rec.fleet, &rec.window_fleet) {
            // Already moved into a fleet (this is a retry): make sure its reply is there.
            (Some(fleet_id), _) => Some(fleet_id.clone()),
            // This incident makes (or joins) a fleet. The fleet record names the incidents that
            // came before it in the window, whose parents are taken into the fleet.
            (None, Some(fleet_id)) if threshold > 0 && rec.position >= threshold => {
                let earlier: Vec<String> = match self.load::<WindowRec>("fleetwin", decision.failure_mode.id()).await? {
                    Some((_, w)) if &w.fleet_id == fleet_id => w.members.iter().take(threshold - 1).cloned().collect(),
                    _ => vec![],
                };
                let now = Utc::now();
                let fleet = FleetRec {
                    fleet_id: fleet_id.clone(),
                    failure_mode: decision.failure_mode,
                    opened_at: now,
                    last_at: now,
                    earlier,
                    members: vec![],
                    more: 0,
                    more_projects: BTreeMap::new(),
                    more_clusters: BTreeMap::new(),
                    resolved: vec![],
                    adopt: None,
                    established: false,
                    migrated: false,
                    revision: 1,
                    shown: 0,
                    updater: None,
                    updating_until: None,
                };
                // The first to get here creates it; the others use that one.
                self.save("fleet", fleet_id, &fleet, None, self.ttl()).await?;
                Some(fleet_id.clone())
            }
            // An early member whose fleet formed while it was on its way (or after it crashed).
            (None, Some(fleet_id)) if self.load::<FleetRec>("fleet", fleet_id).await?.is_some() => Some(fleet_id.clone()),
            _ => None,
        };
        match fleet {
            Some(fleet_id) => {
                self.ensure_fleet(&fleet_id).await?;
                self.join_fleet(&fleet_id, &rec.facts).await?;
            }
            None => {
                self.post_once(&rec.message_key, None, &self.render_incident(&rec)).await?;
            }
        }
        tracing::info!(app = %name, incident = %incident_id, failure_mode = %decision.failure_mode, "escalated to Slack");
        Ok(())
    }

    async fn alert(&self, summary: &str) -> Result<(), EscalationError> {
        tracing::error!(summary, "service alert");
        let message = escalation::note(":warning:", &format!("Argo Medic ({}): {summary}", self.settings.instance));
        self.client.post_message(&self.settings.channel, None, &message, None).await.map(|_| ()).map_err(esc_err)
    }

    async fn resolve(&self, app: &str, decision: &Decision) -> Result<(), EscalationError> {
        let group = app_group(app);
        for (incident_id, v) in self.store.list(&group).await.map_err(esc_err)? {
            let rec: IncidentRec = parse(&v, &incident_id)?;
            if rec.resolved {
                continue;
            }
            let mut done = rec.clone();
            done.resolved = true;
            done.state = IncidentState::Resolved;
            let healthy = decision.failure_mode == medic_core::FailureMode::Healthy;
            done.detail = if healthy { "Synced and Healthy again".into() } else { decision.reason.clone() };
            done.state_at = decision.decided_at;
            done.revision += 1;
            if !rec.suppressed {
                self.show(&done).await?;
                let text = if healthy {
                    format!(
                        "Resolved: {} is Synced and Healthy again (seen {}). The incident is closed.",
                        rec.facts.app(),
                        escalation::rfc3339(decision.decided_at)
                    )
                } else {
                    format!(
                        "Closed: {}: {} (seen {}). Argo Medic does nothing more for it.",
                        rec.facts.app(),
                        decision.reason,
                        escalation::rfc3339(decision.decided_at)
                    )
                };
                self.post_once(&format!("res:{incident_id}"), Some(&rec.thread_key), &escalation::note(":white_check_mark:", &text))
                    .await?;
            }
            // The incident's records now last `record_ttl`; its `app#` record gets it when it is
            // marked resolved just below. In this order, so a crash in between retires again.
            // (A fleet member's message is its reply in the fleet thread; its own parent, posted
            // before the fleet formed, may exist too.)
            let mut messages =
                std::collections::BTreeSet::from([format!("inc:{incident_id}"), rec.message_key.clone(), format!("res:{incident_id}")]);
            messages.extend(rec.reported.iter().map(|id| format!("act:{id}")));
            let mut records = vec![("incident", incident_id.as_str())];
            records.extend(messages.iter().map(|key| ("msg", key.as_str())));
            self.retire(&records).await?;
            self.update_rec::<IncidentRec>(&group, &incident_id, |r| {
                if r.resolved {
                    return false;
                }
                r.resolved = true;
                r.state = IncidentState::Resolved;
                r.detail = done.detail.clone();
                r.state_at = done.state_at;
                r.revision = r.revision.max(done.revision);
                true
            })
            .await?;
            if let Some(fleet_id) = &rec.fleet {
                let fleet = self
                    .update_rec::<FleetRec>("fleet", fleet_id, |f| {
                        if f.resolved.contains(&incident_id) {
                            return false;
                        }
                        f.resolved.push(incident_id.clone());
                        f.revision += 1;
                        true
                    })
                    .await?;
                self.refresh_fleet(fleet_id).await?;
                if let Some(f) = fleet.filter(|f| f.status().state == IncidentState::Resolved) {
                    let text = format!("All {} apps of this fleet incident are Synced and Healthy again.", f.members.len());
                    let key = format!("fleetres:{fleet_id}:{}", f.members.len());
                    self.post_once(&key, Some(&format!("fleet:{fleet_id}")), &escalation::note(":white_check_mark:", &text)).await?;
                    self.retire(&[("msg", &format!("fleet:{fleet_id}")), ("msg", &key)]).await?;
                }
            }
            tracing::info!(app, incident = %incident_id, "escalation resolved in Slack");
        }
        Ok(())
    }

    async fn human_action(&self, id: &str) -> Result<Option<HumanActionRequest>, EscalationError> {
        if !escalation::is_action_id(id) {
            return Ok(None);
        }
        Ok(self.load::<HumanActionRequest>("action", id).await?.map(|(_, r)| r))
    }

    async fn record_human_action(
        &self,
        request: &HumanActionRequest,
        by: &str,
        outcome: &HumanActionOutcome,
    ) -> Result<(), EscalationError> {
        let app = format!("{}/{}", request.app.namespace, request.app.name);
        let group = app_group(&app);
        let Some((_, rec)) = self.load::<IncidentRec>(&group, &request.incident_id).await? else {
            tracing::warn!(app, incident = %request.incident_id, "a human action for an incident with no record; nothing to report");
            return Ok(());
        };
        if rec.reported.contains(&request.id) {
            return Ok(());
        }
        let user = by.strip_prefix("slack:").unwrap_or(by);
        let who = escalation::mention(user);
        let verb = match request.action {
            HumanAction::Sync => "sync",
            HumanAction::HardRefresh => "hard refresh",
            HumanAction::TerminateOperation => "terminate operation",
            HumanAction::Snooze => "snooze",
            HumanAction::Acknowledge => "acknowledge",
        };
        let mut next = rec.clone();
        if let Some(state) = outcome.state.filter(|_| !rec.resolved) {
            next.state = state;
            next.state_at = Utc::now();
            next.detail = format!("{verb} by {who}");
        }
        if outcome.performed {
            next.generation += 1;
        }
        if let Some(until) = outcome.snoozed_until {
            next.snoozed_until = Some(until);
            let snooze = SnoozeRec { until, by: user.to_owned() };
            let ttl = (until - Utc::now()).to_std().unwrap_or_default() + Duration::from_secs(60);
            match self.load::<SnoozeRec>("snooze", &app).await? {
                Some((v, _)) => self.save("snooze", &app, &snooze, Some(v), ttl).await?,
                None => self.save("snooze", &app, &snooze, None, ttl).await?,
            };
        }
        next.revision += 1;
        if next.generation != rec.generation {
            self.store_buttons(&next.facts, &escalation::buttons(&next.facts, next.generation), request.sync.clone(), Utc::now()).await?;
        }
        if !rec.suppressed {
            self.show(&next).await?;
            let reply = escalation::action_note(user, verb, &outcome.summary);
            self.post_once(&format!("act:{}", request.id), Some(&rec.thread_key), &reply).await?;
        }
        let id = request.id.clone();
        self.update_rec::<IncidentRec>(&group, &request.incident_id, |r| {
            if r.reported.contains(&id) {
                return false;
            }
            if !r.resolved {
                r.state = next.state;
                r.state_at = next.state_at;
                r.detail = next.detail.clone();
            }
            r.generation = r.generation.max(next.generation);
            r.revision = r.revision.max(next.revision);
            r.snoozed_until = next.snoozed_until.or(r.snoozed_until);
            r.reported.push(id.clone());
            true
        })
        .await?;
        tracing::info!(audit = true, app, action = verb, by = user, summary = %outcome.summary, "human action reported in Slack");
        Ok(())
    }
}

// ------------------------------------------------------------------------------------------------
// Either escalator, chosen at start-up
// ------------------------------------------------------------------------------------------------

/// The log escalator, or Slack when it is configured: what the functions wire in.
pub enum AnyEscalator<S> {
    Log(LogEscalator),
    Slack(Box<SlackEscalator<S>>),
}

impl<S: EscalationStore> Escalator for AnyEscalator<S> {
    async fn escalate(&self, app: &Application, decision: &Decision) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.escalate(app, decision).await,
            AnyEscalator::Slack(e) => e.escalate(app, decision).await,
        }
    }

    async fn alert(&self, summary: &str) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.alert(summary).await,
            AnyEscalator::Slack(e) => e.alert(summary).await,
        }
    }

    async fn resolve(&self, app: &str, decision: &Decision) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.resolve(app, decision).await,
            AnyEscalator::Slack(e) => e.resolve(app, decision).await,
        }
    }

    async fn human_action(&self, id: &str) -> Result<Option<HumanActionRequest>, EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.human_action(id).await,
            AnyEscalator::Slack(e) => e.human_action(id).await,
        }
    }

    async fn record_human_action(
        &self,
        request: &HumanActionRequest,
        by: &str,
        outcome: &HumanActionOutcome,
    ) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.record_human_action(request, by, outcome).await,
            AnyEscalator::Slack(e) => e.record_human_action(request, by, outcome).await,
        }
    }
}
