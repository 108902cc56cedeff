//! The AWS SDK's HTTP connector over reqwest: one HTTPS stack in each function.
//!
//! The SDK's own client (`aws-smithy-http-client`) builds a second hyper client beside reqwest's,
//! with HTTP/2 (`h2`) that neither SQS, DynamoDB nor Secrets Manager need from a Lambda: 1.04 MB
//! of the worker's arm64 bootstrap (docs/benchmarks.md, "Lambda bootstraps"). This connector
//! hands the SDK's requests to a `reqwest::Client` instead, HTTP/1.1 and rustls on `ring` as for
//! Argo CD.
//!
//! What the SDK expects of a connector, and how it is met:
//! - its connect and read timeouts ([`HttpConnectorSettings`]) bound each call: one reqwest
//!   client per distinct pair, built on first use and kept;
//! - failures are classified so its retry strategy can tell transient from permanent: a timeout
//!   is [`ConnectorError::timeout`], a refused or reset connection [`ConnectorError::io`];
//! - the response reaches it as the service sent it: no redirect followed, no body decompressed
//!   (DynamoDB's `x-amz-crc32` is over the bytes on the wire);
//! - a connection the SDK poisons (after a transient error: a 5xx, a timeout) is not used
//!   again: the connector hands the SDK a handle on each request (`CaptureSmithyConnection`)
//!   whose poisoning replaces the client, and with it its pool of connections. Without the
//!   handle the SDK logged an ERROR "unable to mark the connection for closure" on every
//!   transient error and the next attempt went out on the same connection;
//! - the request body reaches reqwest as the SDK's own body, polled as it is sent: the SDK's
//!   stalled-stream protection watches that polling, and a body copied out instead of polled
//!   reads to it as an upload that never started, cut after its 5 s grace period (every long
//!   poll and every slow answer).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use aws_sdk_dynamodb::config::{SharedHttpClient, http::HttpResponse};
use aws_smithy_runtime_api::client::connection::{CaptureSmithyConnection, ConnectionMetadata};
use aws_smithy_runtime_api::client::http::{HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpConnector};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;

/// How the connector's reqwest clients trust servers: set on each client it builds.
pub type TlsSetup = Arc<dyn Fn(reqwest::ClientBuilder) -> reqwest::ClientBuilder + Send + Sync>;

/// A connector's timeouts as the SDK sets them: connect, read.
type Timeouts = (Option<Duration>, Option<Duration>);

/// The SDK's [`HttpClient`]: a reqwest client per timeout setting, sharing one TLS setup.
#[derive(Clone)]
pub struct ReqwestSdkClient {
    tls: TlsSetup,
    connectors: Arc<Mutex<HashMap<Timeouts, SharedHttpConnector>>>,
}

impl std::fmt::Debug for ReqwestSdkClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReqwestSdkClient").finish_non_exhaustive()
    }
}

impl ReqwestSdkClient {
    pub fn new(tls: TlsSetup) -> Self {
        Self { tls, connectors: Arc::default() }
    }

    /// As the SDK's configuration takes it.
    pub fn shared(tls: TlsSetup) -> SharedHttpClient {
        SharedHttpClient::new(Self::new(tls))
    }

    fn build(&self, connect: Option<Duration>, read: Option<Duration>) -> Result<reqwest::Client, reqwest::Error> {
        let mut builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).no_gzip().http1_only();
        if let Some(t) = connect {
            builder = builder.connect_timeout(t);
        }
        if let Some(t) = read {
            builder = builder.read_timeout(t);
        }
        (self.tls)(builder).build()
    }
}

impl HttpClient for ReqwestSdkClient {
    fn http_connector(&self, settings: &HttpConnectorSettings, _: &RuntimeComponents) -> SharedHttpConnector {
        let key = (settings.connect_timeout(), settings.read_timeout());
        let mut connectors = self.connectors.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = connectors.get(&key) {
            return c.clone();
        }
        let connector = match self.build(key.0, key.1) {
            Ok(client) => {
                let this = self.clone();
                let rebuild: Rebuild = Arc::new(move || this.build(key.0, key.1));
                SharedHttpConnector::new(ReqwestConnector { client: Arc::new(RwLock::new(client)), rebuild, poisoned: Arc::default() })
            }
            // Only a TLS setup that cannot load fails here; every call says so.
            Err(e) => SharedHttpConnector::new(BrokenConnector(format!("the SDK's HTTPS client could not be built: {e}"))),
        };
        connectors.insert(key, connector.clone());
        connector
    }
}

/// Builds the connector's client again (same timeouts, same TLS).
type Rebuild = Arc<dyn Fn() -> Result<reqwest::Client, reqwest::Error> + Send + Sync>;

struct ReqwestConnector {
    /// Replaced when the SDK poisons a connection: reqwest closes no single connection, but a
    /// new client has a new pool (the old one ends with its last request).
    client: Arc<RwLock<reqwest::Client>>,
    rebuild: Rebuild,
    /// How many times a connection was poisoned (tests).
    poisoned: Arc<std::sync::atomic::AtomicUsize>,
}

impl std::fmt::Debug for ReqwestConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReqwestConnector").finish_non_exhaustive()
    }
}

impl ReqwestConnector {
    /// What the SDK calls to poison the connection of a request that ended in a transient error.
    fn poisoner(&self) -> impl Fn() + Send + Sync + 'static {
        let (client, rebuild, poisoned) = (Arc::clone(&self.client), Arc::clone(&self.rebuild), Arc::clone(&self.poisoned));
        move || match rebuild() {
            Ok(fresh) => {
                *client.write().unwrap_or_else(|e| e.into_inner()) = fresh;
                poisoned.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::debug!("an AWS call failed transiently: its connections are not used again");
            }
            // Cannot happen once the client was built once (same settings); the old pool stays.
            Err(e) => tracing::warn!(error = %e, "could not replace the AWS client's connections"),
        }
    }
}

impl HttpConnector for ReqwestConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        if let Some(capture) = request.extension::<CaptureSmithyConnection>() {
            let poison = Arc::new(self.poisoner());
            capture.set_connection_retriever(move || {
                let poison = Arc::clone(&poison);
                Some(ConnectionMetadata::builder().proxied(false).poison_fn(move || poison()).build())
            });
        }
        let client = self.client.read().unwrap_or_else(|e| e.into_inner()).clone();
        HttpConnectorFuture::new(async move {
            let request = to_reqwest(&client, request)?;
            let response = client.execute(request).await.map_err(classify)?;
            from_reqwest(response).await
        })
    }
}

/// A connector whose client could not be built: every call fails with why.
#[derive(Debug)]
struct BrokenConnector(String);

impl HttpConnector for BrokenConnector {
    fn call(&self, _: HttpRequest) -> HttpConnectorFuture {
        HttpConnectorFuture::ready(Err(ConnectorError::user(self.0.clone().into())))
    }
}

fn to_reqwest(client: &reqwest::Client, mut request: HttpRequest) -> Result<reqwest::Request, ConnectorError> {
    let method = reqwest::Method::from_bytes(request.method().as_bytes()).map_err(|e| ConnectorError::user(e.into()))?;
    let body = reqwest::Body::wrap(request.take_body());
    let mut builder = client.request(method, request.uri());
    for (name, value) in request.headers().iter() {
        builder = builder.header(name, value);
    }
    builder.body(body).build().map_err(|e| ConnectorError::user(e.into()))
}

async fn from_reqwest(mut response: reqwest::Response) -> Result<HttpResponse, ConnectorError> {
    let status = StatusCode::try_from(response.status().as_u16()).map_err(|e| ConnectorError::other(e.into(), None))?;
    let headers = std::mem::take(response.headers_mut());
    let body = response.bytes().await.map_err(classify)?;
    let mut out = HttpResponse::new(status, SdkBody::from(body));
    for (name, value) in &headers {
        // A header value that is not text (rare, and none the SDK reads) is left out.
        if let Ok(value) = value.to_str() {
            out.headers_mut().append(name.as_str().to_owned(), value.to_owned());
        }
    }
    Ok(out)
}

/// A TLS handshake that failed: a certificate no configured root vouches for, a server (or proxy)
/// that does not speak TLS. Another try meets the same certificate, so it is not retried.
#[derive(Debug, thiserror::Error)]
#[error(
    "TLS with the AWS endpoint failed ({tls}): a VPC endpoint or proxy with its own certificate needs its CA in SSL_CERT_FILE (docs/deploy.md, Running in a VPC)"
)]
pub struct TlsFailure {
    tls: String,
    #[source]
    source: reqwest::Error,
}

/// The rustls error beneath a failed request, if TLS is what failed. It sits inside `io::Error`s
/// (two, through hyper and tokio-rustls), whose `source()` skips the error each holds, so those
/// are opened with `get_ref`.
fn tls_cause(e: &reqwest::Error) -> Option<&rustls::Error> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(err) = next {
        if let Some(tls) = err.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        next = match err.downcast_ref::<std::io::Error>() {
            Some(io) => io.get_ref().map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => err.source(),
        };
    }
    None
}

/// The SDK retries transient failures: timeouts and broken connections are; a request it could
/// not build is not, nor a TLS failure.
fn classify(e: reqwest::Error) -> ConnectorError {
    if let Some(tls) = tls_cause(&e) {
        let tls = tls.to_string();
        ConnectorError::other(TlsFailure { tls, source: e }.into(), None)
    } else if e.is_timeout() {
        ConnectorError::timeout(e.into())
    } else if e.is_builder() {
        ConnectorError::user(e.into())
    } else if e.is_connect() || e.is_request() || e.is_body() {
        ConnectorError::io(e.into())
    } else {
        ConnectorError::other(e.into(), None)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use aws_config::{BehaviorVersion, Region};
    use aws_sdk_sqs::config::Credentials;
    use aws_sdk_sqs::error::SdkError;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;
    use crate::aws::{Roots, http_client_with};

    /// An SQS client for `endpoint`, no retries, reading for at most `read_timeout`.
    fn sqs(endpoint: &str, read_timeout: Duration) -> aws_sdk_sqs::Client {
        let config = aws_sdk_sqs::config::Builder::new()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "static"))
            .endpoint_url(endpoint)
            .retry_config(aws_config::retry::RetryConfig::disabled())
            .timeout_config(aws_config::timeout::TimeoutConfig::builder().read_timeout(read_timeout).build())
            .http_client(http_client_with(Roots::CompiledIn))
            .build();
        aws_sdk_sqs::Client::from_conf(config)
    }

    /// A server on 127.0.0.1 that reads one request and answers `response` (raw HTTP/1.1), or
    /// nothing at all when it is `None`; the request it read comes back on the channel.
    async fn one_shot(response: Option<&'static str>) -> (String, tokio::sync::oneshot::Receiver<String>) {
        one_shot_after(response, Duration::ZERO).await
    }

    /// [`one_shot`], answering `delay` after the request has arrived.
    async fn one_shot_after(response: Option<&'static str>, delay: Duration) -> (String, tokio::sync::oneshot::Receiver<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = stream.read(&mut buf).await.unwrap();
                seen.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&seen).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text[..end]
                        .lines()
                        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap()))
                        .unwrap_or(0);
                    if seen.len() >= end + 4 + length || n == 0 {
                        break;
                    }
                }
            }
            let _ = tx.send(String::from_utf8_lossy(&seen).to_string());
            tokio::time::sleep(delay).await;
            match response {
                Some(r) => stream.write_all(r.as_bytes()).await.unwrap(),
                // Hold the connection open, silent, past the client's read timeout.
                None => tokio::time::sleep(Duration::from_secs(30)).await,
            }
        });
        (url, rx)
    }

    /// A keep-alive server: the first request it gets is answered 500 (SQS's InternalError),
    /// every later one 200. Returns its URL and how many connections it accepted.
    async fn failing_once() -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (connections, requests) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let accepted = Arc::clone(&connections);
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                accepted.fetch_add(1, Ordering::SeqCst);
                let requests = Arc::clone(&requests);
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    let mut buf = [0u8; 4096];
                    loop {
                        let text = String::from_utf8_lossy(&seen).to_string();
                        let complete = text.find("\r\n\r\n").map(|end| {
                            let length = text[..end]
                                .lines()
                                .find_map(|l| {
                                    l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap())
                                })
                                .unwrap_or(0);
                            (end + 4 + length, seen.len() >= end + 4 + length)
                        });
                        if let Some((len, true)) = complete {
                            seen.drain(..len);
                            let answer = if requests.fetch_add(1, Ordering::SeqCst) == 0 {
                                let body = r#"{"__type":"com.amazonaws.sqs#InternalError","message":"boom"}"#;
                                format!(
                                    "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/x-amz-json-1.0\r\nx-amzn-requestid: r-1\r\ncontent-length: {}\r\n\r\n{body}",
                                    body.len()
                                )
                            } else {
                                "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\nx-amzn-requestid: r-2\r\ncontent-length: 2\r\n\r\n{}".to_owned()
                            };
                            if stream.write_all(answer.as_bytes()).await.is_err() {
                                return;
                            }
                            continue;
                        }
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => seen.extend_from_slice(&buf[..n]),
                        }
                    }
                });
            }
        });
        (url, connections)
    }

    /// The dependency review: the connector set no connection for the SDK to poison, so every
    /// transient error logged an ERROR ("unable to mark the connection for closure") and the retry
    /// went out on the same connection. Now the retry after a 500 opens a new one, and nothing is
    /// logged above DEBUG. Fails on 8a2ff01: one connection, and the ERROR line.
    #[tokio::test]
    async fn a_transient_error_poisons_its_connection_and_logs_no_error() {
        #[derive(Clone, Default)]
        struct Captured(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Captured {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let logs = Captured::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_max_level(tracing::Level::INFO).finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let (url, connections) = failing_once().await;
        let config = aws_sdk_sqs::config::Builder::new()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "static"))
            .endpoint_url(&url)
            .retry_config(aws_config::retry::RetryConfig::standard().with_max_attempts(2).with_initial_backoff(Duration::from_millis(1)))
            .http_client(http_client_with(Roots::CompiledIn))
            .build();
        let listed = aws_sdk_sqs::Client::from_conf(config).list_queues().send().await;
        assert!(listed.is_ok(), "retried after the 500: {:?}", listed.err());
        assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 2, "the retry on a new connection");
        let logged = String::from_utf8_lossy(&logs.0.lock().unwrap()).to_string();
        assert!(!logged.contains("ERROR") && !logged.contains("unable to mark"), "{logged}");
    }

    #[tokio::test]
    async fn a_silent_server_is_a_timeout_the_sdk_can_retry() {
        let (url, _) = one_shot(None).await;
        let err = sqs(&url, Duration::from_millis(300)).list_queues().send().await.unwrap_err();
        match &err {
            SdkError::DispatchFailure(d) => assert!(d.is_timeout(), "{err:?}"),
            SdkError::TimeoutError(_) => {}
            other => panic!("a timeout, not {other:?}"),
        }
    }

    /// An answer that takes longer than the SDK's stalled-stream grace period (5 s), as SQS's
    /// long polls do, arrives: the request body was sent, so nothing stalled.
    #[tokio::test]
    async fn an_answer_slower_than_the_stall_grace_period_still_arrives() {
        let (url, _) = one_shot_after(
            Some("HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\nx-amzn-requestid: r-1\r\ncontent-length: 2\r\n\r\n{}"),
            Duration::from_secs(6),
        )
        .await;
        let listed = sqs(&url, Duration::from_secs(30)).list_queues().send().await;
        assert!(listed.is_ok(), "{:?}", listed.err());
    }

    #[tokio::test]
    async fn a_refused_connection_is_an_io_failure() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let err = sqs(&url, Duration::from_secs(5)).list_queues().send().await.unwrap_err();
        let SdkError::DispatchFailure(d) = &err else { panic!("a dispatch failure, not {err:?}") };
        assert!(d.is_io(), "{err:?}");
    }

    /// A server on 127.0.0.1 that answers every connection with plain HTTP, whatever it is sent
    /// (a TLS client's hello too), and closes; returns its address and how many connections came.
    async fn plain_http_server() -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicUsize>, tokio::sync::mpsc::UnboundedReceiver<String>)
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let counted = Arc::clone(&connections);
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut buf = [0u8; 4096];
                let n = stream.read(&mut buf).await.unwrap_or(0);
                let _ = tx.send(String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or_default().to_owned());
                let _ = stream.write_all(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
            }
        });
        (addr, connections, rx)
    }

    /// The dependency review: a TLS failure was an I/O error the SDK retried, and its message did
    /// not say TLS. It is now its own error, not retried: the next try meets the same certificate.
    #[tokio::test]
    async fn a_tls_failure_is_reported_as_one_and_not_retried() {
        let (addr, connections, _) = plain_http_server().await;
        let config = aws_sdk_sqs::config::Builder::new()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "static"))
            .endpoint_url(format!("https://{addr}"))
            .retry_config(aws_config::retry::RetryConfig::standard().with_max_attempts(3).with_initial_backoff(Duration::from_millis(1)))
            .http_client(http_client_with(Roots::CompiledIn))
            .build();
        let err = aws_sdk_sqs::Client::from_conf(config).list_queues().send().await.unwrap_err();
        let SdkError::DispatchFailure(d) = &err else { panic!("a dispatch failure, not {err:?}") };
        assert!(d.is_other() && !d.is_io() && !d.is_timeout(), "{err:?}");
        let said = aws_smithy_types::error::display::DisplayErrorContext(&err).to_string();
        assert!(said.contains("TLS with the AWS endpoint failed"), "{said}");
        assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 1, "not retried");
    }

    /// Set by [`the_environment_s_https_proxy_carries_the_aws_calls_and_no_proxy_exempts_a_host`]
    /// for the copy of this test binary it runs.
    const PROXY_CHILD: &str = "MEDIC_TEST_PROXY_CHILD";
    /// The AWS endpoint the child calls; it does not resolve, so only a proxy can carry the call.
    const PROXIED_HOST: &str = "sqs.proxy-test.invalid";

    /// Not a test of its own: the body of the process the proxy test starts with a proxy in its
    /// environment (a process's environment cannot be changed safely while other tests run).
    #[tokio::test]
    #[ignore = "run by the_environment_s_https_proxy_carries_the_aws_calls_and_no_proxy_exempts_a_host"]
    async fn proxy_child_calls_sqs() {
        if std::env::var_os(PROXY_CHILD).is_none() {
            return;
        }
        let _ = sqs(&format!("https://{PROXIED_HOST}"), Duration::from_secs(5)).list_queues().send().await;
    }

    /// docs/deploy.md says the AWS calls go through `HTTPS_PROXY` unless `NO_PROXY` names the
    /// host, as the AWS CLI's do. A copy of this binary calls SQS with a proxy in its environment.
    #[tokio::test]
    async fn the_environment_s_https_proxy_carries_the_aws_calls_and_no_proxy_exempts_a_host() {
        let (proxy, _, mut seen) = plain_http_server().await;
        let run_child = move |no_proxy: &str| {
            let mut child = std::process::Command::new(std::env::current_exe().unwrap());
            child.args(["--exact", "sdk_http::tests::proxy_child_calls_sqs", "--ignored", "--quiet", "--test-threads", "1"]);
            for var in ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"] {
                child.env_remove(var);
            }
            child.env(PROXY_CHILD, "1").env("HTTPS_PROXY", format!("http://{proxy}")).env("NO_PROXY", no_proxy);
            child.output()
        };
        let out = tokio::task::spawn_blocking(move || run_child("example.org")).await.unwrap().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
        let first = tokio::time::timeout(Duration::from_secs(5), seen.recv()).await.expect("the proxy was asked").unwrap();
        assert_eq!(first, format!("CONNECT {PROXIED_HOST}:443 HTTP/1.1"));

        while seen.try_recv().is_ok() {}
        let out = tokio::task::spawn_blocking(move || run_child(PROXIED_HOST)).await.unwrap().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
        assert!(seen.try_recv().is_err(), "NO_PROXY names the host: the call goes direct");
    }

    #[tokio::test]
    async fn the_request_goes_out_as_signed_and_the_answer_comes_back_as_sent() {
        // A redirect is the service's answer, not something to follow; the body is not unzipped.
        let (url, request) = one_shot(Some(
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://127.0.0.1:1/elsewhere\r\nx-amzn-requestid: r-1\r\ncontent-length: 0\r\n\r\n",
        ))
        .await;
        let err = sqs(&url, Duration::from_secs(5)).list_queues().send().await.unwrap_err();
        let raw = err.raw_response().unwrap_or_else(|| panic!("the service's answer, not {err:?}"));
        assert_eq!(raw.status().as_u16(), 307);
        assert_eq!(raw.headers().get("location"), Some("http://127.0.0.1:1/elsewhere"));
        let request = request.await.unwrap().to_ascii_lowercase();
        assert!(request.starts_with("post / http/1.1\r\n"), "{request}");
        assert_eq!(request.matches("\r\ncontent-length:").count(), 1, "one content-length: {request}");
        assert!(request.contains("\r\nauthorization: aws4-hmac-sha256 credential=test/"), "{request}");
        assert!(!request.contains("accept-encoding: gzip"), "the SDK's bodies are not asked compressed: {request}");
        assert!(request.contains("\"queuenameprefix\"") || request.ends_with("{}"), "the JSON body: {request}");
    }
}
