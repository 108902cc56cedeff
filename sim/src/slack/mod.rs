//! A Slack Web API simulator: a real HTTP server on 127.0.0.1 answering the methods Argo Medic
//! uses, the way Slack does.
//!
//! - `chat.postMessage` and `chat.update` (JSON or form bodies), `conversations.history` and
//!   `conversations.replies` (query string or form), `auth.test`.
//! - Bearer tokens (`Authorization: Bearer xoxb-…`, or a `token` argument): `not_authed`,
//!   `invalid_auth`. Channels the bot is in, channels it is not in (`not_in_channel`) and unknown
//!   ones (`channel_not_found`).
//! - Block Kit limits with Slack's errors ([`blocks`]): `invalid_blocks` with `errors` and
//!   `response_metadata.messages` naming the JSON pointer, `invalid_blocks_format`,
//!   `msg_blocks_too_long`, `msg_too_long`; message metadata (`invalid_metadata_format`,
//!   `invalid_metadata_schema`), returned by the read methods only with `include_all_metadata`.
//! - Rate limits: HTTP 429 with `Retry-After` and `{"ok": false, "error": "ratelimited"}`, injected
//!   ([`SlackFault`]) or, with [`SlackSimConfig::post_rate`], whenever a channel gets more posts
//!   than allowed.
//! - A message store a test inspects ([`SlackSim::parents`], [`SlackSim::replies`]) and a call log.
//!
//! Like the Argo CD simulator it depends on nothing of Argo Medic's own: clients are tested
//! against the protocol. Choices where Slack's documentation is silent are marked as such.

pub mod blocks;
mod server;

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The bot token the simulator accepts by default.
pub const DEFAULT_BOT_TOKEN: &str = "xoxb-simulated-bot-token";
/// The channel the bot is a member of by default.
pub const DEFAULT_CHANNEL: &str = "C0MEDIC0001";

/// At most `burst` posts (`chat.postMessage`) per channel within `per`; more get a 429.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PostRate {
    pub burst: usize,
    pub per: Duration,
}

/// What the simulated workspace looks like.
#[derive(Debug, Clone)]
pub struct SlackSimConfig {
    /// Bot tokens that authenticate.
    pub tokens: Vec<String>,
    /// Channels the bot is a member of.
    pub channels: Vec<String>,
    /// Channels that exist but the bot is not in.
    pub foreign_channels: Vec<String>,
    /// Per-channel post rate enforced with 429s; `None`: only injected 429s.
    pub post_rate: Option<PostRate>,
}

impl Default for SlackSimConfig {
    fn default() -> Self {
        Self { tokens: vec![DEFAULT_BOT_TOKEN.into()], channels: vec![DEFAULT_CHANNEL.into()], foreign_channels: vec![], post_rate: None }
    }
}

/// An injected fault: the next `times` calls of `method` (every method when `None`) get it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackFault {
    pub method: Option<String>,
    pub kind: SlackFaultKind,
    pub times: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlackFaultKind {
    /// HTTP 429, `Retry-After: <secs>`, `{"ok": false, "error": "ratelimited"}`.
    RateLimited { retry_after_secs: u64 },
    /// This HTTP status with `{"ok": false, "error": "internal_error"}` (a 5xx from Slack's edge).
    Status(u16),
    /// The call takes effect but the connection is closed before the answer: the client cannot
    /// know whether it did (a lost response).
    DropAfterApplying,
}

/// A stored message.
#[derive(Debug, Clone, PartialEq)]
pub struct SimMessage {
    pub channel: String,
    pub ts: String,
    /// Set on replies (the parent's ts).
    pub thread_ts: Option<String>,
    pub text: String,
    pub blocks: Value,
    pub metadata: Option<Value>,
    /// The token that posted it (only that app may update it).
    pub token: String,
    /// How many times `chat.update` changed it.
    pub updates: u32,
    pub posted_at: DateTime<Utc>,
}

impl SimMessage {
    /// True for a top-level message (not a reply).
    pub fn is_parent(&self) -> bool {
        self.thread_ts.is_none()
    }

    /// `metadata.event_payload.<field>` as text.
    pub fn payload(&self, field: &str) -> Option<&str> {
        self.metadata.as_ref()?.get("event_payload")?.get(field)?.as_str()
    }
}

/// One call as the simulator answered it.
#[derive(Debug, Clone, PartialEq)]
pub struct SimCall {
    pub method: String,
    pub http_status: u16,
    /// The `error` of an `ok: false` answer.
    pub error: Option<String>,
    pub at: Instant,
}

#[derive(Default)]
pub(crate) struct State {
    pub(crate) messages: Vec<SimMessage>,
    pub(crate) faults: Vec<SlackFault>,
    pub(crate) calls: Vec<SimCall>,
    pub(crate) posts: HashMap<String, Vec<Instant>>,
    pub(crate) last_ts_micros: i64,
    /// The bot tokens accepted now, once [`SlackSim::set_tokens`] rotated them (`config.tokens` before).
    pub(crate) tokens: Option<Vec<String>>,
}

impl State {
    /// A new ts, `seconds.micros`, strictly increasing.
    pub(crate) fn next_ts(&mut self) -> String {
        let now = Utc::now().timestamp_micros().max(self.last_ts_micros + 1);
        self.last_ts_micros = now;
        format!("{}.{:06}", now / 1_000_000, now % 1_000_000)
    }

    pub(crate) fn take_fault(&mut self, method: &str) -> Option<SlackFaultKind> {
        let fault = self.faults.iter_mut().find(|f| f.times > 0 && f.method.as_deref().is_none_or(|m| m == method))?;
        fault.times -= 1;
        let kind = fault.kind.clone();
        self.faults.retain(|f| f.times > 0);
        Some(kind)
    }
}

pub(crate) struct Shared {
    pub(crate) config: SlackSimConfig,
    pub(crate) state: Mutex<State>,
}

/// A simulated Slack Web API on `127.0.0.1`. Dropping it stops the server.
pub struct SlackSim {
    shared: Arc<Shared>,
    addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    server: Option<JoinHandle<()>>,
}

impl SlackSim {
    /// Binds `127.0.0.1:0` and starts serving.
    pub async fn start(config: SlackSimConfig) -> io::Result<SlackSim> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared { config, state: Mutex::new(State::default()) });
        let (shutdown, receiver) = watch::channel(false);
        let server = tokio::spawn(server::serve(listener, Arc::clone(&shared), receiver));
        Ok(SlackSim { shared, addr, shutdown, server: Some(server) })
    }

    /// The Web API base URL, `http://127.0.0.1:PORT/api/` (methods are appended).
    pub fn api_url(&self) -> String {
        format!("http://{}/api/", self.addr)
    }

    /// Replaces the accepted bot tokens, as rotating the app's token does: a call with another
    /// token is answered `invalid_auth` from now on.
    pub fn set_tokens(&self, tokens: Vec<String>) {
        self.shared.state.lock().tokens = Some(tokens);
    }

    /// Queues a fault.
    pub fn inject(&self, fault: SlackFault) {
        self.shared.state.lock().faults.push(fault);
    }

    /// Drops every injected fault not yet used up: Slack has recovered.
    pub fn clear_faults(&self) {
        self.shared.state.lock().faults.clear();
    }

    /// Every message of a channel, in posting order.
    pub fn messages(&self, channel: &str) -> Vec<SimMessage> {
        self.shared.state.lock().messages.iter().filter(|m| m.channel == channel).cloned().collect()
    }

    /// Top-level messages of a channel, in posting order.
    pub fn parents(&self, channel: &str) -> Vec<SimMessage> {
        self.messages(channel).into_iter().filter(SimMessage::is_parent).collect()
    }

    /// Replies in the thread of `parent_ts`, in posting order.
    pub fn replies(&self, channel: &str, parent_ts: &str) -> Vec<SimMessage> {
        self.messages(channel).into_iter().filter(|m| m.thread_ts.as_deref() == Some(parent_ts)).collect()
    }

    /// One message by its ts.
    pub fn message(&self, channel: &str, ts: &str) -> Option<SimMessage> {
        self.messages(channel).into_iter().find(|m| m.ts == ts)
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<SimCall> {
        self.shared.state.lock().calls.clone()
    }

    /// Calls of one method so far.
    pub fn calls_of(&self, method: &str) -> Vec<SimCall> {
        self.calls().into_iter().filter(|c| c.method == method).collect()
    }

    /// Stops accepting and closes open connections.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
    }
}

impl Drop for SlackSim {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}
