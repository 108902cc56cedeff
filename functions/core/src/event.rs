//! The notification event: what argocd-notifications sends (by webhook or its `awssqs` service) and
//! what the queue carries, schema version 1.
//!
//! One template in `infra/` renders this body for both routes. It carries what the worker needs to
//! dedupe and to recognise a stale notification; the worker always re-reads the Application
//! before deciding, so nothing here is trusted for the decision itself.
//!
//! Every status field may be `null` or absent: a template renders `null` for a missing map key,
//! and a brand-new app has no operation yet. Only the app's identity and the schema version are
//! required.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::trigger::Trigger;

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// Largest body accepted, in bytes. A rendered event is about 1 KiB; the cap leaves room for long
/// operation messages while keeping a hostile body far from Lambda's and SQS's limits (256 KiB).
pub const MAX_EVENT_BYTES: usize = 64 * 1024;

/// A notification about one Application.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotificationEvent {
    pub schema_version: u32,
    pub trigger: Trigger,
    pub app: AppRef,
    #[serde(default)]
    pub sync: Option<EventSync>,
    #[serde(default)]
    pub health: Option<EventHealth>,
    #[serde(default)]
    pub operation: Option<EventOperation>,
    #[serde(default)]
    pub reconciled_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub resource_version: Option<String>,
    #[serde(default, rename = "argocdUrl")]
    pub argocd_url: Option<String>,
}

/// Which app: its namespace, name and project.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AppRef {
    pub name: String,
    pub namespace: String,
    #[serde(default)]
    pub project: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventSync {
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub revision: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventHealth {
    #[serde(default)]
    pub status: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventOperation {
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub started_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub finished_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub message: Option<String>,
}

/// Why a body is not a valid notification event.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum EventError {
    #[error("the body is {0} bytes, more than the {MAX_EVENT_BYTES} allowed")]
    TooLarge(usize),
    #[error("the body is not a valid event: {0}")]
    Malformed(String),
    #[error("schemaVersion {0} is not supported (this build reads {SCHEMA_VERSION})")]
    UnsupportedVersion(u32),
    #[error("`{field}` is not a valid Kubernetes name: `{value}`")]
    InvalidName { field: &'static str, value: String },
}

impl NotificationEvent {
    /// Parses and validates a body.
    pub fn parse(body: &[u8]) -> Result<Self, EventError> {
        if body.len() > MAX_EVENT_BYTES {
            return Err(EventError::TooLarge(body.len()));
        }
        // Check the version before the shape, so a newer schema is named as such.
        let raw: serde_json::Value = serde_json::from_slice(body).map_err(|e| EventError::Malformed(e.to_string()))?;
        match raw.get("schemaVersion").and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(SCHEMA_VERSION) => {}
            Some(v) => return Err(EventError::UnsupportedVersion(u32::try_from(v).unwrap_or(u32::MAX))),
            None => return Err(EventError::Malformed("missing field `schemaVersion` (a number)".into())),
        }
        let event: Self = serde_json::from_value(raw).map_err(|e| EventError::Malformed(e.to_string()))?;
        event.validate()?;
        Ok(event)
    }

    fn validate(&self) -> Result<(), EventError> {
        check_name("app.name", &self.app.name, 253)?;
        check_name("app.namespace", &self.app.namespace, 63)?;
        if let Some(p) = &self.app.project {
            check_name("app.project", p, 253)?;
        }
        Ok(())
    }

    /// `namespace/name`.
    pub fn qualified_name(&self) -> String {
        format!("{}/{}", self.app.namespace, self.app.name)
    }
}

/// DNS-1123 subdomain (names) or label (namespaces): lower-case alphanumerics, `-` and `.`.
fn check_name(field: &'static str, value: &str, max: usize) -> Result<(), EventError> {
    let ok = !value.is_empty()
        && value.len() <= max
        && value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok { Ok(()) } else { Err(EventError::InvalidName { field, value: value.to_owned() }) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"{"schemaVersion":1,"trigger":"on-sync-failed","app":{"name":"web","namespace":"argocd"}}"#;

    #[test]
    fn a_minimal_event_with_nulls_parses() {
        let e = NotificationEvent::parse(MINIMAL.as_bytes()).unwrap();
        assert_eq!(e.qualified_name(), "argocd/web");
        let with_nulls = r#"{"schemaVersion":1,"trigger":"on-sync-failed","app":{"name":"web","namespace":"argocd","project":null},
            "sync":null,"health":{"status":null},"operation":null,"reconciledAt":null,"resourceVersion":null,"argocdUrl":null}"#;
        assert!(NotificationEvent::parse(with_nulls.as_bytes()).is_ok());
    }

    #[test]
    fn bad_bodies_are_named() {
        assert!(matches!(NotificationEvent::parse(b"{"), Err(EventError::Malformed(_))));
        assert_eq!(NotificationEvent::parse(MINIMAL.replace(":1,", ":2,").as_bytes()), Err(EventError::UnsupportedVersion(2)));
        let err = NotificationEvent::parse(MINIMAL.replace("\"web\"", "\"Web App\"").as_bytes()).unwrap_err();
        assert_eq!(err.to_string(), "`app.name` is not a valid Kubernetes name: `Web App`");
        let err = NotificationEvent::parse(MINIMAL.replace("on-sync-failed", "On Fire").as_bytes()).unwrap_err();
        assert!(err.to_string().contains("invalid trigger"), "{err}");
        let big = format!(r#"{{"pad":"{}"}}"#, "x".repeat(MAX_EVENT_BYTES));
        assert_eq!(NotificationEvent::parse(big.as_bytes()), Err(EventError::TooLarge(big.len())));
        assert!(NotificationEvent::parse(br#"{"trigger":"x"}"#).unwrap_err().to_string().contains("schemaVersion"));
    }
}
