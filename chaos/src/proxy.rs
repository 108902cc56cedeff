//! A proxy on 127.0.0.1 in front of moto that fails the way SQS and DynamoDB fail.
//!
//! Requests are routed by their `x-amz-target` header (both SDKs speak a JSON protocol:
//! `DynamoDB_20120810.PutItem`, `AmazonSQS.SendMessage`) to one moto_server per service, so the
//! two services do not share one Python process. Two listeners: the *faulty* one, which the worker
//! processes and the event source use, takes the faults injected with [`AwsProxy::inject`]; the
//! *clean* one serves the functions the harness runs in-process (ingest, slack-actions, the
//! sweeper). The harness's own checking calls go straight to moto.
//!
//! Faults, shaped as the services return them:
//! - throttling: DynamoDB `400 ThrottlingException` / `ProvisionedThroughputExceededException`,
//!   SQS `400 RequestThrottled` / `ThrottlingException` (with the `x-amzn-query-error` header the
//!   query-compatible JSON protocol carries);
//! - `500` internal errors;
//! - answers dropped after the write: the request is forwarded and applied, then the connection
//!   is closed without a response (mutating operations only).
//!
//! The SDK retries all of these itself (standard retry mode), as in production. DynamoDB's
//! `ClientRequestToken` is honoured as DynamoDB honours it (moto ignores it): a
//! `TransactWriteItems` repeated with the token of one that succeeded is answered with that
//! success and not applied again, so an SDK retry after a dropped answer behaves as on AWS.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// The service a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Service {
    Sqs,
    DynamoDb,
}

impl Service {
    fn name(self) -> &'static str {
        match self {
            Service::Sqs => "sqs",
            Service::DynamoDb => "dynamodb",
        }
    }
}

/// What a fault does to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AwsFaultKind {
    /// 400 throttling (`ThrottlingException`; SQS alternates with `RequestThrottled`).
    Throttle,
    /// DynamoDB's 400 `ProvisionedThroughputExceededException`.
    ProvisionedThroughput,
    /// 500 internal error.
    ServerError,
    /// Forwarded and applied, then the connection is closed without an answer (mutating
    /// operations only).
    DropAfterWrite,
}

/// A fault for the next `times` matching requests of `service` on the faulty listener.
#[derive(Debug, Clone)]
pub struct AwsFault {
    pub service: Service,
    pub kind: AwsFaultKind,
    pub times: usize,
}

/// Operations whose answer may be dropped after they were applied.
const MUTATING: [&str; 10] = [
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "TransactWriteItems",
    "SendMessage",
    "SendMessageBatch",
    "DeleteMessage",
    "DeleteMessageBatch",
    "ChangeMessageVisibility",
    "ChangeMessageVisibilityBatch",
];

/// Calls and time per operation, as moto answered them.
#[derive(Debug, Default, Clone, Copy)]
pub struct OpStats {
    pub calls: u64,
    pub total: Duration,
    pub max: Duration,
}

#[derive(Default)]
struct State {
    faults: Vec<AwsFault>,
    /// Faults applied, by `service kind`.
    applied: BTreeMap<String, usize>,
    stats: BTreeMap<(Service, String), OpStats>,
    /// `ClientRequestToken` of successful `TransactWriteItems`: the request's hash and the answer.
    tokens: HashMap<String, (u64, Instant, Bytes)>,
}

struct Inner {
    sqs: String,
    dynamodb: String,
    client: reqwest::Client,
    state: Mutex<State>,
}

/// The running proxy.
pub struct AwsProxy {
    /// The listener with faults (worker processes, the event source).
    pub url: String,
    /// The listener without faults (the functions the harness runs).
    pub clean_url: String,
    inner: Arc<Inner>,
}

/// How long DynamoDB remembers a `ClientRequestToken`.
const TOKEN_LIFETIME: Duration = Duration::from_secs(600);

impl AwsProxy {
    /// Starts both listeners, forwarding SQS to `sqs` and DynamoDB to `dynamodb`.
    pub async fn start(sqs: &str, dynamodb: &str) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            // Longer than a long poll (20 s).
            .timeout(Duration::from_secs(60))
            .build()?;
        let inner = Arc::new(Inner {
            sqs: sqs.trim_end_matches('/').to_owned(),
            dynamodb: dynamodb.trim_end_matches('/').to_owned(),
            client,
            state: Mutex::default(),
        });
        let mut urls = Vec::new();
        for faulty in [true, false] {
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            urls.push(format!("http://{}", listener.local_addr()?));
            let inner = Arc::clone(&inner);
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    };
                    let _ = stream.set_nodelay(true);
                    let inner = Arc::clone(&inner);
                    tokio::spawn(async move {
                        let service = service_fn(move |request| handle(Arc::clone(&inner), faulty, request));
                        let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                    });
                }
            });
        }
        Ok(Self { clean_url: urls.pop().unwrap_or_default(), url: urls.pop().unwrap_or_default(), inner })
    }

    /// Arms a fault for the next matching requests on the faulty listener.
    pub fn inject(&self, fault: AwsFault) {
        self.inner.state.lock().unwrap().faults.push(fault);
    }

    /// Drops the faults not applied yet (the fault window closed).
    pub fn clear(&self) {
        self.inner.state.lock().unwrap().faults.clear();
    }

    /// Faults applied so far, by kind (`dynamodb throttle`, `sqs drop-after-write`, ...).
    pub fn applied(&self) -> BTreeMap<String, usize> {
        self.inner.state.lock().unwrap().applied.clone()
    }

    /// Calls and time per operation (`sqs ReceiveMessage`, ...), busiest first.
    pub fn stats(&self) -> Vec<(String, OpStats)> {
        let state = self.inner.state.lock().unwrap();
        let mut out: Vec<(String, OpStats)> =
            state.stats.iter().map(|((service, op), s)| (format!("{} {op}", service.name()), *s)).collect();
        out.sort_by_key(|s| std::cmp::Reverse(s.1.total));
        out
    }
}

/// The service error's body, headers and status, as the service shapes it.
fn error_response(service: Service, kind: AwsFaultKind, alternate: bool) -> Response<Full<Bytes>> {
    let (status, code, query_code, message) = match (service, kind) {
        (Service::DynamoDb, AwsFaultKind::ProvisionedThroughput) => (
            400,
            "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
            None,
            "The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.",
        ),
        (Service::DynamoDb, AwsFaultKind::ServerError) => {
            (500, "com.amazonaws.dynamodb.v20120810#InternalServerError", None, "Internal server error")
        }
        (Service::DynamoDb, _) => {
            (400, "com.amazonaws.dynamodb.v20120810#ThrottlingException", None, "Rate of requests exceeds the allowed throughput.")
        }
        (Service::Sqs, AwsFaultKind::ServerError) => {
            (500, "com.amazonaws.sqs#InternalError", Some("InternalError;Receiver"), "We encountered an internal error. Please try again.")
        }
        (Service::Sqs, _) if alternate => {
            (400, "com.amazon.coral.availability#ThrottlingException", Some("ThrottlingException;Sender"), "Rate exceeded")
        }
        (Service::Sqs, _) => (400, "com.amazonaws.sqs#RequestThrottled", Some("RequestThrottled;Sender"), "Rate exceeded"),
    };
    let body = serde_json::json!({"__type": code, "message": message}).to_string();
    let mut response = Response::builder()
        .status(status)
        .header("content-type", "application/x-amz-json-1.0")
        .header("x-amzn-requestid", "00000000-0000-0000-0000-chaosproxy00");
    if let Some(q) = query_code {
        response = response.header("x-amzn-query-error", q);
    }
    response.body(Full::new(Bytes::from(body))).expect("a valid response")
}

/// The service's error: the connection is closed without an answer.
#[derive(Debug)]
struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("answer dropped after the write")
    }
}

impl std::error::Error for Dropped {}

async fn handle(inner: Arc<Inner>, faulty: bool, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Dropped> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map_err(|_| Dropped)?.to_bytes();
    let target = parts.headers.get("x-amz-target").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let (service, op) = match target.split_once('.') {
        Some((prefix, op)) if prefix.starts_with("DynamoDB") => (Service::DynamoDb, op.to_owned()),
        Some((_, op)) => (Service::Sqs, op.to_owned()),
        None => (Service::Sqs, parts.uri.path().to_owned()),
    };
    let mutating = MUTATING.contains(&op.as_str());

    // A fault for this request, if one is armed.
    let fault = if faulty {
        let mut state = inner.state.lock().unwrap();
        let found = state.faults.iter().position(|f| f.service == service && (f.kind != AwsFaultKind::DropAfterWrite || mutating));
        found.map(|i| {
            let kind = state.faults[i].kind;
            state.faults[i].times -= 1;
            if state.faults[i].times == 0 {
                state.faults.remove(i);
            }
            let name = match kind {
                AwsFaultKind::Throttle => "throttle",
                AwsFaultKind::ProvisionedThroughput => "provisioned-throughput",
                AwsFaultKind::ServerError => "500",
                AwsFaultKind::DropAfterWrite => "drop-after-write",
            };
            let entry = state.applied.entry(format!("{} {name}", service.name())).or_default();
            *entry += 1;
            (kind, (*entry).is_multiple_of(2))
        })
    } else {
        None
    };
    if let Some((kind, alternate)) = fault.filter(|(k, _)| *k != AwsFaultKind::DropAfterWrite) {
        return Ok(error_response(service, kind, alternate));
    }

    // DynamoDB's idempotent transactions.
    let token = (service == Service::DynamoDb && op == "TransactWriteItems")
        .then(|| serde_json::from_slice::<serde_json::Value>(&body).ok())
        .flatten()
        .and_then(|v| v["ClientRequestToken"].as_str().map(str::to_owned));
    let hash = {
        let mut h = DefaultHasher::new();
        body.hash(&mut h);
        h.finish()
    };
    if let Some(token) = &token {
        let mut state = inner.state.lock().unwrap();
        state.tokens.retain(|_, (_, at, _)| at.elapsed() < TOKEN_LIFETIME);
        if let Some((h, _, answer)) = state.tokens.get(token) {
            let response = if *h == hash {
                Response::builder().status(200).header("content-type", "application/x-amz-json-1.0").body(Full::new(answer.clone()))
            } else {
                Response::builder().status(400).header("content-type", "application/x-amz-json-1.0").body(Full::new(Bytes::from(
                    serde_json::json!({
                        "__type": "com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException",
                        "message": "The request uses the same client token as a previous, but non-identical request."
                    })
                    .to_string(),
                )))
            };
            return Ok(response.expect("a valid response"));
        }
    }

    // Forward to moto.
    let base = match service {
        Service::Sqs => &inner.sqs,
        Service::DynamoDb => &inner.dynamodb,
    };
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut forward = inner.client.request(parts.method.clone(), format!("{base}{path}"));
    for (name, value) in &parts.headers {
        if !matches!(name.as_str(), "host" | "content-length" | "connection" | "transfer-encoding") {
            forward = forward.header(name, value);
        }
    }
    let started = Instant::now();
    let answer = forward.body(body).send().await.map_err(|_| Dropped)?;
    let status = answer.status();
    let headers = answer.headers().clone();
    let answer_body = answer.bytes().await.map_err(|_| Dropped)?;
    let took = started.elapsed();
    {
        let mut state = inner.state.lock().unwrap();
        let s = state.stats.entry((service, op)).or_default();
        s.calls += 1;
        s.total += took;
        s.max = s.max.max(took);
        if let (Some(token), true) = (token, status.is_success()) {
            state.tokens.insert(token, (hash, Instant::now(), answer_body.clone()));
        }
    }
    if fault.is_some() {
        // Applied; the answer never arrives.
        return Err(Dropped);
    }
    let mut response = Response::builder().status(StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY));
    for (name, value) in &headers {
        if !matches!(name.as_str(), "content-length" | "connection" | "transfer-encoding" | "keep-alive") {
            response = response.header(name, value);
        }
    }
    Ok(response.body(Full::new(answer_body)).expect("a valid response"))
}
