//! The HTTP/1.1 server: hyper driven directly, one task per connection.
//!
//! hyper rather than axum because the `Drop` fault needs connection-level control: the service
//! returns an error, hyper abandons the connection without writing a response, and the client
//! sees the connection close mid-request, as with a crashed pod or a load balancer reset.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::api::{self, Call, Reply, ReplyBody};
use crate::faults::FaultKind;
use crate::log::LoggedRequest;
use crate::shared::Shared;

/// The service's error: the connection is to be dropped without an answer.
#[derive(Debug, thiserror::Error)]
#[error("connection dropped without a response")]
pub(crate) struct Dropped;

/// Accepts connections until `shutdown` changes (or its sender is gone).
pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>, shutdown: watch::Receiver<bool>) {
    accept_loop(listener, move |request| respond(Arc::clone(&shared), request), shutdown).await
}

/// The accept loop both simulators use: every connection served by HTTP/1.1 with `handler`,
/// until `shutdown` changes. A handler error drops the connection without a response, which is
/// how the Drop fault reaches the client.
pub(crate) async fn accept_loop<F, Fut, E>(listener: TcpListener, handler: F, mut shutdown: watch::Receiver<bool>)
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Response<Full<Bytes>>, E>> + Send + 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
{
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(connection(stream, handler.clone(), shutdown.clone()));
                }
                // Out of file descriptors and the like: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            _ = shutdown.changed() => break,
        }
    }
}

async fn connection<F, Fut, E>(stream: TcpStream, handler: F, mut shutdown: watch::Receiver<bool>)
where
    F: Fn(Request<Incoming>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Response<Full<Bytes>>, E>> + Send + 'static,
    E: Into<Box<dyn std::error::Error + Send + Sync>> + 'static,
{
    let _ = stream.set_nodelay(true);
    let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), service_fn(handler));
    tokio::select! {
        _ = conn => {}
        _ = shutdown.changed() => {}
    }
}

/// Strips the configured root path; `None` when the request is outside it.
fn strip_root<'a>(root: &str, path: &'a str) -> Option<&'a str> {
    if root.is_empty() {
        return Some(path);
    }
    path.strip_prefix(root).filter(|rest| rest.starts_with('/'))
}

async fn respond(shared: Arc<Shared>, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Dropped> {
    let at = Utc::now();
    let (parts, body) = request.into_parts();
    let header = |name| parts.headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok()).map(str::to_string);
    let content_type = header(CONTENT_TYPE);
    let authorization = header(AUTHORIZATION);
    let raw_query = parts.uri.query().unwrap_or_default().to_string();
    let full_path = parts.uri.path().to_string();
    let body = body.collect().await.map_err(|_| Dropped)?.to_bytes();

    let inside_root = strip_root(&shared.config.root_path, &full_path);
    let call = Call {
        method: parts.method.as_str().to_string(),
        path: inside_root.unwrap_or(&full_path).to_string(),
        query: form_urlencoded::parse(raw_query.as_bytes()).into_owned().collect(),
        content_type,
        authorization,
        body,
        outside_root: inside_root.is_none(),
    };
    let target = match raw_query.is_empty() {
        true => call.path.clone(),
        false => format!("{}?{raw_query}", call.path),
    };
    shared.arrivals.lock().push((call.method.clone(), target.clone()));
    let fault = shared.faults.lock().take(&call.method, &target);
    let reply = match fault {
        Some(FaultKind::Drop) => {
            record(&shared, &call, 0, Value::Null, at);
            return Err(Dropped);
        }
        Some(FaultKind::AppliedThenDrop) => {
            let applied = answer(&shared, &call);
            record(&shared, &call, 0, body_of(&applied), at);
            return Err(Dropped);
        }
        Some(FaultKind::AppliedThenStatus { code }) => {
            let _applied = answer(&shared, &call);
            Reply::injected(code, None)
        }
        Some(FaultKind::Status { code, retry_after_secs }) => Reply::injected(code, retry_after_secs),
        Some(FaultKind::Latency(delay)) => {
            tokio::time::sleep(delay).await;
            answer(&shared, &call)
        }
        None => answer(&shared, &call),
    };
    let response = to_response(&reply);
    record(&shared, &call, response.status().as_u16(), body_of(&reply), at);
    Ok(response)
}

fn body_of(reply: &Reply) -> Value {
    match &reply.body {
        ReplyBody::Json(v) => v.clone(),
        ReplyBody::Text(t) => Value::String(t.clone()),
    }
}

fn answer(shared: &Arc<Shared>, call: &Call) -> Reply {
    if call.outside_root {
        // Outside the root path only Go's default mux answers.
        Reply::text(404, "404 page not found\n")
    } else {
        api::handle(shared, call)
    }
}

fn record(shared: &Shared, call: &Call, status: u16, response: Value, at: chrono::DateTime<Utc>) {
    let endpoint = api::endpoint(call);
    shared.counts.lock().record(endpoint, status);
    let body = match call.body.is_empty() {
        true => None,
        false => serde_json::from_slice(&call.body).ok(),
    };
    shared.log.lock().push(LoggedRequest {
        method: call.method.clone(),
        path: call.path.clone(),
        query: call.query.clone(),
        content_type: call.content_type.clone(),
        authorization: call.authorization.clone(),
        body,
        raw_body: String::from_utf8_lossy(&call.body).into_owned(),
        status,
        response,
        at,
    });
}

fn to_response(reply: &Reply) -> Response<Full<Bytes>> {
    let (content_type, bytes) = match &reply.body {
        ReplyBody::Json(value) => ("application/json", Bytes::from(value.to_string())),
        ReplyBody::Text(text) => ("text/plain; charset=utf-8", Bytes::from(text.clone())),
    };
    // A nonsensical injected status (outside 100..=999) becomes a 500 rather than a panic.
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = Response::new(Full::new(bytes));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    if matches!(reply.body, ReplyBody::Text(_)) {
        headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    }
    if let Some(secs) = reply.retry_after {
        headers.insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_path_is_stripped_only_on_a_segment_boundary() {
        assert_eq!(strip_root("", "/api/version"), Some("/api/version"));
        assert_eq!(strip_root("/argocd", "/argocd/api/version"), Some("/api/version"));
        assert_eq!(strip_root("/argocd", "/argocdx/api/version"), None);
        assert_eq!(strip_root("/argocd", "/api/version"), None);
    }
}
