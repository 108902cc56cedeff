//! `medic serve` through its real listener on 127.0.0.1: Slack button clicks on `/slack/actions`
//! (the slack-actions handler) drive the same flow as on Lambda, against the Argo CD and Slack
//! simulators; bodies are capped before they are read and slow clients are cut off. And what
//! `medic incidents` shows of it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use medic::incidents::{self, Query};
use medic::serve::{HttpLimits, ServeOptions, SlackActionsOptions};
use medic::store::SqliteIncidentStore;
use medic_core::PolicyConfig;
use medic_sim::{SLACK_BOT_TOKEN, SLACK_CHANNEL, SimConfig, SimMessage, SlackSim, SlackSimConfig};
use medic_slack::{AnyEscalator, SlackEscalator, SlackSettings};
use medic_slack_actions::{AllowList, SigningSecret};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{client, events_dir, sim_with_samples};

const SIGNING_SECRET: &str = "serve-test-slack-signing-secret-not-for-production";
const WEBHOOK_SECRET: &str = "serve-test-webhook-secret-not-for-production";
const ALICE: &str = "U0ALICE001";
const CH: &str = SLACK_CHANNEL;

struct Local {
    served: medic::serve::Served,
    store: Arc<SqliteIncidentStore>,
    slack: SlackSim,
    argo: medic_sim::ArgoSim,
}

async fn serve(http: HttpLimits) -> Local {
    serve_on(http, Arc::new(SqliteIncidentStore::in_memory().unwrap())).await
}

/// [`serve`] on the state file of `store`.
async fn serve_on(http: HttpLimits, store: Arc<SqliteIncidentStore>) -> Local {
    let policy = PolicyConfig { instance_id: "test".into(), ..PolicyConfig::default() };
    serve_with(http, store, policy, &format!(r#"{{"payments": ["{ALICE}"]}}"#)).await
}

/// [`serve_on`] deciding with `policy`, its Slack buttons allowed as `allow` (project → users) says.
async fn serve_with(http: HttpLimits, store: Arc<SqliteIncidentStore>, policy: PolicyConfig, allow: &str) -> Local {
    let argo = sim_with_samples(SimConfig::default()).await;
    let slack = SlackSim::start(SlackSimConfig::default()).await.unwrap();
    let mut settings = SlackSettings::new(CH, "test");
    settings.api_url = slack.api_url();
    settings.group_threshold = 0;
    settings.post_interval = Duration::ZERO;
    settings.lease = Duration::from_secs(1);
    let escalator = SlackEscalator::new(settings, SLACK_BOT_TOKEN, Arc::clone(&store)).unwrap();
    let served = medic::serve::start(
        client(&argo),
        ServeOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            webhook_secret: WEBHOOK_SECRET.into(),
            refresh_secret: None,
            sweep_every: Duration::from_secs(600),
            dry_run: false,
            policy,
            rates: generous_rates(),
            store: Arc::clone(&store),
            escalator: Arc::new(AnyEscalator::Slack(Box::new(escalator))),
            slack_actions: Some(SlackActionsOptions {
                secret: SigningSecret::new(SIGNING_SECRET, None),
                allow: AllowList::from_json(allow).unwrap(),
            }),
            http,
        },
    )
    .await
    .unwrap();
    Local { served, store, slack, argo }
}

fn generous_rates() -> medic_adapters::budget::BudgetRates {
    medic_adapters::budget::BudgetRates {
        refresh_per_minute: 60_000,
        hard_refresh_per_minute: 6_000,
        sync_per_minute: 6_000,
        max_wait: Duration::from_secs(2),
    }
}

/// Sends raw bytes as one request and returns the status and the body of the answer.
async fn exchange(addr: std::net::SocketAddr, request: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response)).await.expect("an answer in time").unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned())
}

fn post(path: &str, headers: &[(String, String)], body: &[u8]) -> Vec<u8> {
    let mut head = format!("POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    [head.into_bytes(), body.to_vec()].concat()
}

/// A signed click as Slack sends it (the sample interaction of `tests/slack.rs`), as raw HTTP.
fn click(action_id: &str, user: &str, timestamp: i64) -> Vec<u8> {
    let request = crate::support::slack::click(action_id, user, timestamp, SIGNING_SECRET);
    let headers: Vec<(String, String)> = ["content-type", "x-slack-request-timestamp", "x-slack-signature"]
        .iter()
        .map(|h| (h.to_string(), request.headers()[*h].to_str().unwrap().to_owned()))
        .collect();
    post(medic::serve::SLACK_ACTIONS_PATH, &headers, request.body().as_ref())
}

/// Waits until `check` holds (the worker and the sweeper run on their own).
async fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn parent_of(slack: &SlackSim, app: &str) -> Option<SimMessage> {
    slack.parents(CH).into_iter().find(|m| m.payload("key").is_some() && m.text.contains(&format!("argocd/{app} ")))
}

fn button(m: &SimMessage, label: &str) -> Option<String> {
    let actions = m.blocks.as_array()?.iter().find(|b| b["type"] == "actions")?;
    let b = actions["elements"].as_array()?.iter().find(|e| e["text"]["text"].as_str().is_some_and(|t| t.starts_with(label)))?;
    b["value"].as_str().map(str::to_owned)
}

#[tokio::test]
async fn a_signed_click_posted_to_serve_syncs_once_replies_in_the_thread_and_the_recovery_resolves_it() {
    let local = serve(HttpLimits::default()).await;
    let addr = local.served.addr;
    // The first sweep escalates the sample fleet's failures; storefront's offers a sync.
    let parent = eventually("storefront's escalation", || parent_of(&local.slack, "storefront")).await;
    let sync = button(&parent, "Sync").expect("a Sync button on the failed sync");

    // Double click: both answered, one performs.
    let now = Utc::now().timestamp();
    let (first, body) = exchange(addr, &click(&sync, ALICE, now)).await;
    assert_eq!(first, 200, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["accepted"], true);
    let (second, body) = exchange(addr, &click(&sync, ALICE, now + 1)).await;
    assert_eq!(second, 200, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["accepted"], false, "the second click does nothing");
    // The same checks as the Lambda: a forged signature and an unlisted user are refused.
    let mut forged = click(&sync, ALICE, now + 2);
    let at = forged.len() - 3;
    forged[at] ^= 1;
    assert_eq!(exchange(addr, &forged).await.0, 403);
    assert_eq!(exchange(addr, &click(&sync, "U0MALLORY1", now + 3)).await.0, 403);

    let key = medic_core::human_action::human_action_key(&sync).to_string();
    let synced = eventually("the sync in Argo CD", || {
        local.argo.requests().into_iter().find(|r| r.path.ends_with("/applications/storefront/sync")).and_then(|r| r.body)
    })
    .await;
    assert!(synced["infos"].as_array().unwrap().iter().any(|i| i["value"] == key.as_str()), "the sync carries the button's key: {synced}");
    let reply = eventually("the reply in the thread", || {
        local.slack.replies(CH, &parent.ts).into_iter().find(|m| m.blocks.to_string().contains("sync started"))
    })
    .await;
    assert!(reply.blocks.to_string().contains(&format!("<@{ALICE}>")), "{}", reply.blocks);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let syncs = local.argo.requests().iter().filter(|r| r.path.ends_with("/applications/storefront/sync")).count();
    assert_eq!(syncs, 1, "two clicks, one sync");

    // The app heals; a notification says so; the thread is marked resolved.
    let mut healthy: Value = serde_json::from_str(&std::fs::read_to_string(events_dir().join("apps/healthy.json")).unwrap()).unwrap();
    healthy["metadata"]["name"] = "storefront".into();
    healthy["spec"]["project"] = "payments".into();
    local.argo.insert_app(healthy);
    let mut webhook: Value = serde_json::from_str(&std::fs::read_to_string(events_dir().join("webhook/healthy.json")).unwrap()).unwrap();
    webhook["app"]["name"] = "storefront".into();
    let headers =
        [("Content-Type".to_owned(), "application/json".to_owned()), ("Authorization".to_owned(), format!("Bearer {WEBHOOK_SECRET}"))];
    let (status, body) = exchange(addr, &post("/v1/events", &headers, webhook.to_string().as_bytes())).await;
    assert_eq!(status, 202, "{body}");
    eventually("the resolution in the thread", || {
        local.slack.replies(CH, &parent.ts).into_iter().find(|m| m.blocks.to_string().contains("Resolved: argocd/storefront"))
    })
    .await;
    let parent_now = local.slack.message(CH, &parent.ts).unwrap();
    assert!(parent_now.blocks.to_string().contains("Resolved"), "{}", parent_now.blocks);

    // What `medic incidents` shows of it: storefront closed, with its thread; accounts open, escalated.
    let query = Query { closed: true, slack_url: Some("https://acme.slack.com".into()), ..Query::default() };
    let deadline = Instant::now() + Duration::from_secs(30);
    let views = loop {
        let views = incidents::collect(&*local.store, &*local.store, &query, Utc::now()).await.unwrap();
        if views.iter().any(|v| v.app == "argocd/storefront" && v.status == "closed") {
            break views;
        }
        assert!(Instant::now() < deadline, "storefront's incident never closed: {views:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let storefront = views.iter().find(|v| v.app == "argocd/storefront").unwrap();
    let thread = storefront.slack.as_ref().expect("its Slack thread");
    assert_eq!(thread.thread_ts.as_deref(), Some(parent.ts.as_str()));
    assert_eq!(thread.url.as_deref(), Some(format!("https://acme.slack.com/archives/{CH}/p{}", parent.ts.replace('.', "")).as_str()));
    assert_eq!(serde_json::to_value(thread.state).unwrap(), "resolved");
    let accounts = views.iter().find(|v| v.app == "argocd/accounts").unwrap();
    assert_eq!(accounts.status, "open");
    assert_eq!(accounts.next.kind, "human");
    assert_eq!(serde_json::to_value(accounts.slack.as_ref().unwrap().state).unwrap(), "needs_human");
    let table = incidents::table(&views, Utc::now());
    assert!(table.lines().any(|l| l.starts_with("argocd/storefront ") && l.contains("closed") && l.contains("resolved")), "{table}");

    local.served.shutdown().await;
    local.slack.shutdown().await;
    local.argo.shutdown().await;
}

#[tokio::test]
async fn an_oversized_body_gets_413_before_it_is_read_and_a_silent_client_is_cut_off() {
    let limits = HttpLimits {
        header_timeout: Duration::from_secs(1),
        body_timeout: Duration::from_secs(1),
        connection_timeout: Duration::from_secs(5),
        ..HttpLimits::default()
    };
    let local = serve(limits).await;
    let addr = local.served.addr;

    // 100 MB announced, 1 KB sent: the answer comes at once, without waiting for the rest.
    for path in ["/v1/events", medic::serve::SLACK_ACTIONS_PATH] {
        let started = Instant::now();
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let head =
            format!("POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(&[b'x'; 1024]).await.unwrap();
        let mut response = vec![0u8; 512];
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut response)).await.expect("answered before the body").unwrap();
        let text = String::from_utf8_lossy(&response[..n]);
        assert!(text.starts_with("HTTP/1.1 413"), "{path}: {text}");
        // JSON like every other refusal, with the limit stated (it was plain text).
        assert!(text.to_ascii_lowercase().contains("content-type: application/json"), "{path}: {text}");
        assert!(text.contains(r#""reason":"oversized""#) && text.contains("bytes this endpoint accepts"), "{path}: {text}");
        assert!(started.elapsed() < Duration::from_secs(1), "{path}: answered without reading 100 MB");
    }

    // No Content-Length (chunked): reading stops once the cap is passed.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        .await
        .unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 32 * 1024, "x".repeat(32 * 1024));
    let mut answered = String::new();
    for _ in 0..64 {
        // 2 MB at most; the server answers after the first 64 KiB and stops reading.
        if stream.write_all(chunk.as_bytes()).await.is_err() {
            break;
        }
        let mut buf = vec![0u8; 512];
        if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(20), stream.read(&mut buf)).await {
            answered = String::from_utf8_lossy(&buf[..n]).into_owned();
            break;
        }
    }
    assert!(answered.starts_with("HTTP/1.1 413"), "{answered:?}");

    // A client that sends a request line and nothing more is disconnected after the header timeout.
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(b"POST /v1/events HTTP/1.1\r\n").await.unwrap();
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await.expect("the connection is closed").ok();
    assert!(started.elapsed() < Duration::from_secs(4), "cut off after the header timeout: {:?}", started.elapsed());

    // A body that stops arriving is answered 408 after the body timeout.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let auth = format!("Bearer {WEBHOOK_SECRET}");
    let head = format!(
        "POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: {auth}\r\nContent-Length: 100\r\n\r\n{{"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut response = vec![0u8; 512];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut response)).await.expect("answered").unwrap();
    assert!(String::from_utf8_lossy(&response[..n]).starts_with("HTTP/1.1 408"), "{}", String::from_utf8_lossy(&response[..n]));

    local.served.shutdown().await;
    local.slack.shutdown().await;
    local.argo.shutdown().await;
}

/// Issue 26: `medic serve` as a daemon. `/healthz` answers what a supervisor asks; beyond
/// `max_connections` a client waits in the backlog and is served once another connection ends
/// (there was no cap: reliability review L6).
#[tokio::test]
async fn healthz_answers_and_connections_beyond_the_cap_wait_for_a_free_slot() {
    let local = serve(HttpLimits { max_connections: 2, ..HttpLimits::default() }).await;
    let addr = local.served.addr;
    let healthz = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    let (status, body) = exchange(addr, healthz).await;
    assert_eq!(status, 200, "{body}");
    let health: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["status"], "ok");
    assert!(health["queued"].is_u64() && health["handled"].is_u64() && health["deadLettered"] == 0, "{health}");

    // Two idle connections take both slots; a third is not served until one of them ends.
    let first = TcpStream::connect(addr).await.unwrap();
    let _second = TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut third = TcpStream::connect(addr).await.expect("the kernel's backlog takes it");
    third.write_all(healthz).await.unwrap();
    let mut answer = Vec::new();
    let waited = tokio::time::timeout(Duration::from_millis(700), third.read_to_end(&mut answer)).await;
    assert!(waited.is_err() && answer.is_empty(), "served beyond the cap: {}", String::from_utf8_lossy(&answer));
    drop(first);
    tokio::time::timeout(Duration::from_secs(5), third.read_to_end(&mut answer)).await.expect("served once a slot is free").unwrap();
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answer));

    local.served.shutdown().await;
    local.slack.shutdown().await;
    local.argo.shutdown().await;
}

/// Issue 26: `serve` kept its queue in memory, so what it had accepted and not yet handled (a
/// person's click or refresh, a wait the worker set) was lost when it stopped. A signed request
/// queued by one process, due after it stops, is performed by the next one on the same state file.
#[tokio::test]
async fn a_request_accepted_before_serve_stops_is_performed_by_the_next_serve_on_the_state_file() {
    use medic_core::event::{AppRef, WorkItem, WorkKind};
    use medic_core::ports::WorkQueue;
    let dir = std::env::temp_dir().join(format!("medic-serve-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("state.db");

    let first = serve_on(HttpLimits::default(), Arc::new(SqliteIncidentStore::open(&path).unwrap())).await;
    // As ingest's /v1/refresh queues it, signed with the state file's key; due in 2 s, after this
    // process has stopped.
    let app = AppRef { name: "checkout".into(), namespace: "argocd".into(), project: Some("payments".into()) };
    let mut item = WorkItem::for_app(WorkKind::Requested, app, "requested-refresh".parse().unwrap(), "restart", Utc::now());
    item.requested_action = Some("refresh".into());
    item.requested_by = Some("alice".into());
    first.served.queue.work_item_key().unwrap().sign(&mut item);
    first.served.queue.enqueue(&item, Duration::from_secs(2)).await.unwrap();
    first.served.shutdown().await;
    // checkout is Synced and Healthy: no sweep refreshes it, only the request does.
    let refreshes_of_checkout = |argo: &medic_sim::ArgoSim| {
        argo.requests().iter().filter(|r| r.path.ends_with("/applications/checkout") && r.query.iter().any(|(k, _)| k == "refresh")).count()
    };
    assert_eq!(refreshes_of_checkout(&first.argo), 0, "not performed before the stop");
    first.slack.shutdown().await;
    first.argo.shutdown().await;
    drop(first.store);

    let second = serve_on(HttpLimits::default(), Arc::new(SqliteIncidentStore::open(&path).unwrap())).await;
    let queued = second.served.queue.items().unwrap();
    assert!(queued.iter().any(|i| i.requested_by.as_deref() == Some("alice")), "the request is still queued: {queued:#?}");
    eventually("the request performed by the second process", || (refreshes_of_checkout(&second.argo) == 1).then_some(())).await;
    eventually("its message deleted once handled", || {
        (!second.served.queue.items().unwrap().iter().any(|i| i.requested_by.as_deref() == Some("alice"))).then_some(())
    })
    .await;
    second.served.shutdown().await;
    second.slack.shutdown().await;
    second.argo.shutdown().await;
}

/// Issue 29: `medic serve` at trust level `propose` for syncs (refreshes act): its first sweep
/// posts observability's sync as a proposal and sends no sync; the allowed user's click on the
/// proposal's Sync button, posted to serve's `/slack/actions`, performs it.
#[tokio::test]
async fn serve_proposes_a_sync_and_performs_it_when_an_allowed_user_presses_it() {
    let trust = serde_json::json!({"default": "propose", "rules": [{"actions": ["refresh"], "level": "act"}]});
    let policy = PolicyConfig { instance_id: "test".into(), trust: serde_json::from_value(trust).unwrap(), ..PolicyConfig::default() };
    let store = Arc::new(SqliteIncidentStore::in_memory().unwrap());
    let local = serve_with(HttpLimits::default(), store, policy, &format!(r#"{{"platform": ["{ALICE}"]}}"#)).await;
    let proposal = eventually("observability's proposal", || {
        parent_of(&local.slack, "observability").filter(|m| m.blocks.to_string().contains("Proposed: Sync"))
    })
    .await;
    let syncs = |argo: &medic_sim::ArgoSim| argo.requests().iter().filter(|r| r.path.ends_with("/applications/observability/sync")).count();
    assert_eq!(syncs(&local.argo), 0, "proposed, not performed");
    let refreshed = local.argo.requests().iter().any(|r| r.query.iter().any(|(k, _)| k == "refresh"));
    assert!(refreshed, "refreshes act");

    let sync = button(&proposal, "Sync").expect("the proposal's Sync button");
    let (status, body) = exchange(local.served.addr, &click(&sync, ALICE, Utc::now().timestamp())).await;
    assert_eq!(status, 200, "{body}");
    eventually("the approved sync in Argo CD", || (syncs(&local.argo) == 1).then_some(())).await;

    local.served.shutdown().await;
    local.slack.shutdown().await;
    local.argo.shutdown().await;
}
