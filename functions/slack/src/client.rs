//! The minimal Slack Web API client the escalator uses: settings, typed errors, per-channel
//! pacing and honoured 429s.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::blocks::{RenderOptions, Rendered};
use reqwest::{StatusCode, header};
use secrecy::ExposeSecret;
use serde::Deserialize;
use serde_json::{Value, json};

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
    /// Incidents of one failure mode within `group_window` of each other that make a group
    /// incident. 0 turns groups off.
    pub group_threshold: usize,
    pub group_window: Duration,
    /// Least time between two updates of a group parent while apps keep joining.
    pub group_update_interval: Duration,
    /// How long one worker keeps coalescing a group parent's updates before it stops waiting out
    /// the interval (it still shows the latest change before it lets the parent go).
    pub group_update_budget: Duration,
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
    /// Most apps of one incident group that get a reply of their own; the rest are counted.
    pub max_group_replies: usize,
}

impl SlackSettings {
    pub fn new(channel: impl Into<String>, instance: impl Into<String>) -> Self {
        Self {
            api_url: DEFAULT_API_URL.into(),
            channel: channel.into(),
            instance: instance.into(),
            argocd_url: None,
            group_threshold: 2,
            group_window: Duration::from_secs(15 * 60),
            group_update_interval: Duration::from_secs(10),
            group_update_budget: Duration::from_secs(20),
            lease: Duration::from_secs(60),
            busy_wait: Duration::from_secs(10),
            post_interval: Duration::from_secs(1),
            max_retry_wait: Duration::from_secs(20),
            request_timeout: Duration::from_secs(10),
            history_pages: 5,
            record_ttl: Duration::from_secs(30 * 24 * 3600),
            action_ttl: Duration::from_secs(14 * 24 * 3600),
            snooze: Duration::from_secs(4 * 3600),
            max_group_replies: 500,
        }
    }

    pub(super) fn render_options(&self) -> RenderOptions {
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

/// A failed Slack call as the escalator port's error: rate limits, transport failures and the
/// API's own transient errors may pass; a refusal of the call as it stands (a missing channel, a
/// revoked token, a message too long) will not.
impl From<SlackError> for medic_core::ports::EscalationError {
    fn from(e: SlackError) -> Self {
        const PASSING: [&str; 5] = ["ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"];
        let passing = match &e {
            SlackError::Api { error, .. } => PASSING.contains(&error.as_str()),
            SlackError::RateLimited { .. } | SlackError::Transport { .. } => true,
        };
        use medic_core::ports::PortError;
        medic_core::ports::EscalationError::classified(passing, e.to_string()).caused_by(e)
    }
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
pub(super) struct ApiReply {
    pub(super) ok: bool,
    #[serde(default)]
    pub(super) error: Option<String>,
    #[serde(default)]
    pub(super) errors: Vec<Value>,
    #[serde(default)]
    pub(super) ts: Option<String>,
    #[serde(default)]
    pub(super) messages: Vec<HistoryMessage>,
    #[serde(default)]
    pub(super) has_more: bool,
    #[serde(default)]
    pub(super) response_metadata: Option<ResponseMetadata>,
}

#[derive(Deserialize, Default)]
pub(super) struct ResponseMetadata {
    #[serde(default)]
    pub(super) next_cursor: String,
    #[serde(default)]
    pub(super) messages: Vec<String>,
}

/// Spaces calls to one channel `interval` apart, across concurrent callers in this process.
pub(super) struct Pacer {
    pub(super) interval: Duration,
    pub(super) next: Mutex<HashMap<String, Instant>>,
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
    /// Built on the first call: most invocations of the worker post nothing, and building an
    /// HTTPS client is a measurable part of a cold start's init (docs/benchmarks.md).
    http: std::sync::OnceLock<reqwest::Client>,
    request_timeout: Duration,
    pub(super) base: String,
    /// The bot token, re-read after `invalid_auth` or `token_revoked`.
    pub(super) token: std::sync::Arc<medic_adapters::token::TokenSource>,
    pub(super) pacer: Pacer,
    pub(super) max_retry_wait: Duration,
    /// 429s answered so far (for tests and logs).
    pub(super) rate_limited: std::sync::atomic::AtomicU64,
}

impl SlackClient {
    /// The HTTPS client, built on first use (a build that fails is tried again on the next call).
    fn http(&self) -> Result<&reqwest::Client, SlackError> {
        if let Some(http) = self.http.get() {
            return Ok(http);
        }
        let http = reqwest::Client::builder()
            .timeout(self.request_timeout)
            .user_agent(concat!("argo-medic/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| SlackError::Transport { method: "client".into(), message: e.to_string() })?;
        Ok(self.http.get_or_init(|| http))
    }

    pub fn new(settings: &SlackSettings, token: impl Into<String>) -> Result<Self, SlackError> {
        Self::with_token_source(settings, medic_adapters::token::TokenSource::fixed(token))
    }

    /// A client whose token comes from `token` (re-read when Slack rejects it).
    pub fn with_token_source(settings: &SlackSettings, token: medic_adapters::token::TokenSource) -> Result<Self, SlackError> {
        let base = if settings.api_url.ends_with('/') { settings.api_url.clone() } else { format!("{}/", settings.api_url) };
        Ok(Self {
            http: std::sync::OnceLock::new(),
            request_timeout: settings.request_timeout,
            base,
            token: std::sync::Arc::new(token),
            pacer: Pacer { interval: settings.post_interval, next: Mutex::new(HashMap::new()) },
            max_retry_wait: settings.max_retry_wait,
            rate_limited: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Where the bot token comes from.
    pub fn token_source(&self) -> &medic_adapters::token::TokenSource {
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
            if paced && let Err(wait) = self.pacer.wait(channel, self.max_retry_wait).await {
                // Slack asked for a pause longer than we wait: honour it by not calling.
                return Err(SlackError::RateLimited { method: method.to_owned(), retry_after: wait });
            }
            let request = match json_body {
                Some(body) => {
                    self.http()?.post(&url).header(header::CONTENT_TYPE, "application/json; charset=utf-8").body(body.to_string())
                }
                None => self.http()?.get(&url).query(query),
            };
            let used = self.token.get();
            let response = request.bearer_auth(used.expose_secret()).send().await.map_err(|e| transport(medic_adapters::aws::chain(&e)))?;
            let status = response.status();
            if status == StatusCode::TOO_MANY_REQUESTS {
                self.rate_limited.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let retry_after = medic_adapters::retry::retry_after(response.headers()).unwrap_or(Duration::from_secs(1));
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
            let text = response.text().await.map_err(|e| transport(medic_adapters::aws::chain(&e)))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Slack's refusals of a call as it stands are permanent; rate limits, transport failures and
    /// its own transient errors may pass.
    #[test]
    fn slack_failures_are_classified_for_the_escalator() {
        use medic_core::ports::EscalationError;
        let api = |error: &str| SlackError::Api { method: "chat.postMessage".into(), error: error.into(), detail: vec![] };
        for (e, retryable) in [
            (api("channel_not_found"), false),
            (api("invalid_auth"), false),
            (api("msg_too_long"), false),
            (api("internal_error"), true),
            (api("ratelimited"), true),
            (SlackError::RateLimited { method: "chat.update".into(), retry_after: Duration::from_secs(30) }, true),
            (SlackError::Transport { method: "chat.update".into(), message: "connection reset".into() }, true),
        ] {
            let text = e.to_string();
            let escalation = EscalationError::from(e);
            assert_eq!(escalation.retryable(), retryable, "{text}");
            assert!(escalation.to_string().contains(&text), "{escalation}");
            assert!(std::error::Error::source(&escalation).is_some(), "{escalation}");
        }
    }
}
