//! The HTTP side of the Slack simulator: hyper, one task per connection, `/api/<method>`.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use chrono::Utc;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use hyper::{Request, Response, StatusCode};
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::blocks;
use super::{Shared, SimCall, SimMessage, SlackFaultKind};

/// The bot's ids in answers.
const BOT_ID: &str = "B0SIMBOT01";
const BOT_USER: &str = "U0SIMBOT01";
const TEAM: &str = "T0SIMTEAM1";

#[derive(Debug, thiserror::Error)]
#[error("connection dropped without a response")]
struct Dropped;

pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>, shutdown: watch::Receiver<bool>) {
    crate::server::accept_loop(listener, move |request| respond(Arc::clone(&shared), request), shutdown).await
}

/// An answer: HTTP status, JSON body, optional `Retry-After`.
struct Reply {
    status: u16,
    body: Value,
    retry_after: Option<u64>,
}

fn ok(body: Value) -> Reply {
    let mut body = body;
    body["ok"] = true.into();
    Reply { status: 200, body, retry_after: None }
}

/// Slack answers refusals with HTTP 200 and `ok: false`.
fn fail(error: &str) -> Reply {
    Reply { status: 200, body: json!({"ok": false, "error": error}), retry_after: None }
}

fn refused(r: blocks::Refusal) -> Reply {
    let mut reply = fail(r.error);
    if !r.messages.is_empty() {
        reply.body["errors"] = json!(r.messages);
        reply.body["response_metadata"] = json!({"messages": r.messages.iter().map(|m| format!("[ERROR] {m}")).collect::<Vec<_>>()});
    }
    reply
}

/// Arguments from a JSON body, a form body or the query string.
struct Args(Map<String, Value>);

impl Args {
    fn str(&self, key: &str) -> Option<String> {
        match self.0.get(key)? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    fn flag(&self, key: &str) -> bool {
        matches!(self.str(key).as_deref(), Some("true" | "1"))
    }

    /// A JSON argument: given as JSON (JSON bodies) or as a JSON string (forms). `Err` when a
    /// string does not parse.
    fn json(&self, key: &str) -> Result<Option<Value>, ()> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => serde_json::from_str(s).map(Some).map_err(|_| ()),
            Some(v) => Ok(Some(v.clone())),
        }
    }
}

async fn respond(shared: Arc<Shared>, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Dropped> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map_err(|_| Dropped)?.to_bytes();
    let method = parts.uri.path().strip_prefix("/api/").unwrap_or("").to_owned();
    let header = |name| parts.headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok()).map(str::to_owned);
    let content_type = header(CONTENT_TYPE).unwrap_or_default();
    let media = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();

    let mut args = Map::new();
    for (k, v) in form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes()) {
        args.insert(k.into_owned(), Value::String(v.into_owned()));
    }
    let mut malformed = None;
    if !body.is_empty() {
        match media.as_str() {
            "application/json" => match serde_json::from_slice::<Value>(&body) {
                Ok(Value::Object(map)) => args.extend(map),
                _ => malformed = Some("invalid_json"),
            },
            "application/x-www-form-urlencoded" => {
                for (k, v) in form_urlencoded::parse(&body) {
                    args.insert(k.into_owned(), Value::String(v.into_owned()));
                }
            }
            "" => malformed = Some("missing_post_type"),
            _ => malformed = Some("invalid_post_type"),
        }
    }
    let args = Args(args);
    let token = header(AUTHORIZATION).and_then(|a| a.strip_prefix("Bearer ").map(str::to_owned)).or_else(|| args.str("token"));

    let fault = shared.state.lock().take_fault(&method);
    let mut drop_after = false;
    let reply = match fault {
        Some(SlackFaultKind::RateLimited { retry_after_secs }) => {
            Reply { status: 429, body: json!({"ok": false, "error": "ratelimited"}), retry_after: Some(retry_after_secs) }
        }
        Some(SlackFaultKind::Status(code)) => {
            Reply { status: code, body: json!({"ok": false, "error": "internal_error"}), retry_after: None }
        }
        Some(SlackFaultKind::DropAfterApplying) => {
            drop_after = true;
            handle(&shared, &method, &args, token.as_deref(), malformed)
        }
        None => handle(&shared, &method, &args, token.as_deref(), malformed),
    };
    shared.state.lock().calls.push(SimCall {
        method: method.clone(),
        http_status: if drop_after { 0 } else { reply.status },
        error: reply.body.get("error").and_then(Value::as_str).map(str::to_owned),
        at: Instant::now(),
    });
    if drop_after {
        return Err(Dropped);
    }
    let mut response = Response::new(Full::new(Bytes::from(reply.body.to_string())));
    *response.status_mut() = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json; charset=utf-8"));
    if let Some(secs) = reply.retry_after {
        response.headers_mut().insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    Ok(response)
}

fn handle(shared: &Shared, method: &str, args: &Args, token: Option<&str>, malformed: Option<&str>) -> Reply {
    if let Some(error) = malformed {
        return fail(error);
    }
    let known = ["auth.test", "chat.postMessage", "chat.update", "conversations.history", "conversations.replies"];
    if !known.contains(&method) {
        return Reply { status: 404, body: json!({"ok": false, "error": "unknown_method", "req_method": method}), retry_after: None };
    }
    let Some(token) = token.filter(|t| !t.is_empty()) else { return fail("not_authed") };
    let rotated = shared.state.lock().tokens.clone();
    if !rotated.as_ref().unwrap_or(&shared.config.tokens).iter().any(|t| t == token) {
        return fail("invalid_auth");
    }
    if method == "auth.test" {
        return ok(
            json!({"url": "https://argo-medic-sim.slack.invalid/", "team": "Argo Medic (simulated)", "team_id": TEAM, "user": "argo-medic", "user_id": BOT_USER, "bot_id": BOT_ID}),
        );
    }
    let channel = args.str("channel").unwrap_or_default();
    if shared.config.foreign_channels.contains(&channel) {
        return fail("not_in_channel");
    }
    if !shared.config.channels.contains(&channel) {
        return fail("channel_not_found");
    }
    match method {
        "chat.postMessage" => post(shared, &channel, args, token),
        "chat.update" => update(shared, &channel, args, token),
        "conversations.history" => history(shared, &channel, args),
        "conversations.replies" => replies(shared, &channel, args),
        _ => unreachable!("checked above"),
    }
}

/// Text, blocks and metadata of a post or update, checked as Slack does.
fn content(args: &Args) -> Result<(String, Option<Value>, Option<Value>), Reply> {
    let text = args.str("text").unwrap_or_default();
    let blocks = args.json("blocks").map_err(|_| fail("invalid_blocks_format"))?;
    let has_blocks = blocks.as_ref().and_then(Value::as_array).is_some_and(|b| !b.is_empty());
    if text.is_empty() && !has_blocks {
        return Err(fail("no_text"));
    }
    blocks::check(Some(&text), blocks.as_ref()).map_err(refused)?;
    let metadata = args.json("metadata").map_err(|_| fail("invalid_metadata_format"))?;
    if let Some(m) = &metadata {
        let Some(object) = m.as_object() else { return Err(fail("invalid_metadata_format")) };
        let event_type_ok = object.get("event_type").and_then(Value::as_str).is_some_and(|t| !t.trim().is_empty());
        if !event_type_ok || !object.get("event_payload").is_some_and(Value::is_object) {
            return Err(fail("invalid_metadata_schema"));
        }
    }
    Ok((text, blocks, metadata))
}

fn message_json(m: &SimMessage, with_metadata: bool, reply_count: usize) -> Value {
    let mut v = json!({"type": "message", "subtype": "bot_message", "bot_id": BOT_ID, "ts": m.ts, "text": m.text, "blocks": m.blocks});
    if let Some(t) = &m.thread_ts {
        v["thread_ts"] = t.clone().into();
    } else if reply_count > 0 {
        v["thread_ts"] = m.ts.clone().into();
        v["reply_count"] = reply_count.into();
    }
    if m.updates > 0 {
        v["edited"] = json!({"user": BOT_USER, "ts": m.ts});
    }
    if with_metadata && let Some(md) = &m.metadata {
        v["metadata"] = md.clone();
    }
    v
}

fn post(shared: &Shared, channel: &str, args: &Args, token: &str) -> Reply {
    let (text, blocks, metadata) = match content(args) {
        Ok(c) => c,
        Err(reply) => return reply,
    };
    let mut state = shared.state.lock();
    let thread_ts = match args.str("thread_ts").filter(|t| !t.is_empty()) {
        None => None,
        Some(ts) => match state.messages.iter().find(|m| m.channel == channel && m.ts == ts) {
            // A reply's ts stands for its parent's thread.
            Some(m) => Some(m.thread_ts.clone().unwrap_or_else(|| m.ts.clone())),
            // Simulator's choice where Slack's documentation is silent: refuse an unknown thread.
            None => return fail("thread_not_found"),
        },
    };
    if let Some(rate) = shared.config.post_rate {
        let now = Instant::now();
        let posts = state.posts.entry(channel.to_owned()).or_default();
        posts.retain(|t| now.duration_since(*t) < rate.per);
        if posts.len() >= rate.burst {
            let wait = rate.per.saturating_sub(now.duration_since(posts[0]));
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            return Reply { status: 429, body: json!({"ok": false, "error": "ratelimited"}), retry_after: Some(secs.max(1)) };
        }
        posts.push(now);
    }
    let ts = state.next_ts();
    let message = SimMessage {
        channel: channel.to_owned(),
        ts: ts.clone(),
        thread_ts,
        text,
        blocks: blocks.unwrap_or_else(|| json!([])),
        metadata,
        token: token.to_owned(),
        updates: 0,
        posted_at: Utc::now(),
    };
    let answer = message_json(&message, true, 0);
    state.messages.push(message);
    ok(json!({"channel": channel, "ts": ts, "message": answer}))
}

fn update(shared: &Shared, channel: &str, args: &Args, token: &str) -> Reply {
    let ts = args.str("ts").unwrap_or_default();
    let (text, blocks, metadata) = match content(args) {
        Ok(c) => c,
        Err(reply) => return reply,
    };
    let mut state = shared.state.lock();
    let Some(message) = state.messages.iter_mut().find(|m| m.channel == channel && m.ts == ts) else {
        return fail("message_not_found");
    };
    if message.token != token {
        return fail("cant_update_message");
    }
    message.text = text.clone();
    if let Some(b) = blocks {
        message.blocks = b;
    }
    if metadata.is_some() {
        message.metadata = metadata;
    }
    message.updates += 1;
    let answer = message_json(message, true, 0);
    ok(json!({"channel": channel, "ts": ts, "text": text, "message": answer}))
}

/// A ts (`"1793536200.000123"`, or whole seconds) as microseconds.
fn micros(ts: &str) -> Option<i64> {
    let (secs, frac) = ts.split_once('.').unwrap_or((ts, ""));
    let secs: i64 = secs.parse().ok()?;
    let frac = format!("{frac:0<6}");
    let frac: i64 = frac.get(..6)?.parse().ok()?;
    Some(secs * 1_000_000 + frac)
}

/// `oldest`/`latest`/`inclusive`, `limit` and `cursor` as Slack reads them.
struct Page {
    oldest: i64,
    latest: i64,
    inclusive: bool,
    limit: usize,
    offset: usize,
}

fn page(args: &Args) -> Result<Page, Reply> {
    let oldest = match args.str("oldest").filter(|s| !s.is_empty()) {
        Some(s) => micros(&s).ok_or_else(|| fail("invalid_ts_oldest"))?,
        None => 0,
    };
    let latest = match args.str("latest").filter(|s| !s.is_empty()) {
        Some(s) => micros(&s).ok_or_else(|| fail("invalid_ts_latest"))?,
        None => i64::MAX,
    };
    let limit = match args.str("limit").filter(|s| !s.is_empty()) {
        Some(s) => s.parse::<usize>().ok().filter(|n| (1..1000).contains(n)).ok_or_else(|| fail("invalid_limit"))?,
        None => 100,
    };
    let offset = match args.str("cursor").filter(|s| !s.is_empty()) {
        Some(c) => c.strip_prefix("sim-offset:").and_then(|n| n.parse().ok()).ok_or_else(|| fail("invalid_cursor"))?,
        None => 0,
    };
    Ok(Page { oldest, latest, inclusive: args.flag("inclusive"), limit, offset })
}

impl Page {
    fn contains(&self, ts: &str) -> bool {
        let Some(t) = micros(ts) else { return false };
        if self.inclusive { t >= self.oldest && t <= self.latest } else { t > self.oldest && t < self.latest }
    }

    fn answer(&self, all: Vec<Value>) -> Reply {
        let more = all.len() > self.offset + self.limit;
        let items: Vec<Value> = all.into_iter().skip(self.offset).take(self.limit).collect();
        let next = if more { format!("sim-offset:{}", self.offset + self.limit) } else { String::new() };
        ok(json!({"messages": items, "has_more": more, "response_metadata": {"next_cursor": next}}))
    }
}

fn history(shared: &Shared, channel: &str, args: &Args) -> Reply {
    let page = match page(args) {
        Ok(p) => p,
        Err(reply) => return reply,
    };
    let with_metadata = args.flag("include_all_metadata");
    let state = shared.state.lock();
    let count = |ts: &str| state.messages.iter().filter(|m| m.channel == channel && m.thread_ts.as_deref() == Some(ts)).count();
    // Newest first, top-level messages only (replies live in their threads).
    let all: Vec<Value> = state
        .messages
        .iter()
        .rev()
        .filter(|m| m.channel == channel && m.is_parent() && page.contains(&m.ts))
        .map(|m| message_json(m, with_metadata, count(&m.ts)))
        .collect();
    page.answer(all)
}

fn replies(shared: &Shared, channel: &str, args: &Args) -> Reply {
    let page = match page(args) {
        Ok(p) => p,
        Err(reply) => return reply,
    };
    let with_metadata = args.flag("include_all_metadata");
    let ts = args.str("ts").unwrap_or_default();
    let state = shared.state.lock();
    let Some(parent) = state.messages.iter().find(|m| m.channel == channel && m.ts == ts && m.is_parent()) else {
        return fail("thread_not_found");
    };
    let thread: Vec<&SimMessage> =
        state.messages.iter().filter(|m| m.channel == channel && m.thread_ts.as_deref() == Some(ts.as_str())).collect();
    // The parent first, then the replies in the range, oldest first.
    let mut all = vec![message_json(parent, with_metadata, thread.len())];
    all.extend(thread.iter().filter(|m| page.contains(&m.ts)).map(|m| message_json(m, with_metadata, 0)));
    page.answer(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_compare_as_microseconds() {
        assert_eq!(micros("1793536200.000123"), Some(1_793_536_200_000_123));
        assert_eq!(micros("1793536200"), Some(1_793_536_200_000_000));
        assert_eq!(micros("1793536200.5"), Some(1_793_536_200_500_000));
        assert_eq!(micros("x"), None);
    }
}
