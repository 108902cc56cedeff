//! The request log and call counters a test inspects after driving a client.

use chrono::{DateTime, Utc};
use serde_json::Value;

/// One request as the simulator saw it, with the answer it gave.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// Path without the root path, e.g. `/api/v1/applications/web`.
    pub path: String,
    /// Decoded query pairs, in order (repeated keys stay repeated).
    pub query: Vec<(String, String)>,
    /// The `Content-Type` header.
    pub content_type: Option<String>,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// The body parsed as JSON; `None` when empty or not JSON (see `raw_body`).
    pub body: Option<Value>,
    /// The body as text (lossy UTF-8).
    pub raw_body: String,
    /// The HTTP status answered; `0` when the connection was dropped without a response.
    pub status: u16,
    /// The response body parsed as JSON, or `Value::String` for a non-JSON body (the 415), or
    /// `Value::Null` when nothing was answered.
    pub response: Value,
    /// When the request arrived.
    pub at: DateTime<Utc>,
}

/// Calls per endpoint. A `GET` of one app with `refresh` counts as `refresh` or `hard_refresh`,
/// not as `get`. Faulted requests count too.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallCounts {
    /// `GET /api/v1/applications`.
    pub list: usize,
    /// `GET /api/v1/applications/{name}` without `refresh`.
    pub get: usize,
    /// `GET /api/v1/applications/{name}?refresh=<anything but hard>`.
    pub refresh: usize,
    /// `GET /api/v1/applications/{name}?refresh=hard`.
    pub hard_refresh: usize,
    /// `POST /api/v1/applications/{name}/sync`.
    pub sync: usize,
    /// `DELETE /api/v1/applications/{name}/operation`.
    pub terminate: usize,
    /// `GET /api/v1/applications/{name}/resource-tree`.
    pub resource_tree: usize,
    /// `GET /api/v1/applications/{name}/syncwindows`.
    pub sync_windows: usize,
    /// `GET /api/version`.
    pub version: usize,
    /// Requests answered with an error status (4xx/5xx), whatever the endpoint.
    pub rejected: usize,
}

/// The endpoint a request addresses, for counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    List,
    Get,
    Refresh,
    HardRefresh,
    Sync,
    Terminate,
    ResourceTree,
    SyncWindows,
    Version,
    Other,
}

impl CallCounts {
    pub(crate) fn record(&mut self, endpoint: Endpoint, status: u16) {
        let slot = match endpoint {
            Endpoint::List => Some(&mut self.list),
            Endpoint::Get => Some(&mut self.get),
            Endpoint::Refresh => Some(&mut self.refresh),
            Endpoint::HardRefresh => Some(&mut self.hard_refresh),
            Endpoint::Sync => Some(&mut self.sync),
            Endpoint::Terminate => Some(&mut self.terminate),
            Endpoint::ResourceTree => Some(&mut self.resource_tree),
            Endpoint::SyncWindows => Some(&mut self.sync_windows),
            Endpoint::Version => Some(&mut self.version),
            Endpoint::Other => None,
        };
        if let Some(slot) = slot {
            *slot += 1;
        }
        if status >= 400 {
            self.rejected += 1;
        }
    }
}
