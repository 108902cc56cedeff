//! A whole HTTP request to the ingest function, as the Function URL hands it over: the path, the
//! headers and the body are the fuzzer's. Ingest runs with in-memory twins of its ports.
//!
//! Input: `<path>\n<name>: <value>\n...\n\n<body>`. Two substitutions let the fuzzer past the
//! authentication into what lies behind it: an `x-argo-medic-signature` header of `auto` becomes
//! the body's valid signature, and `@now@` in the body becomes the current time (so a signed
//! refresh request is fresh). The bearer secret is the sample events' `local-test-secret-...`.
//!
//! Properties: no panic, no hang, no unbounded allocation; never a 5xx (the queue never fails
//! here); an event ingest accepts (202) is exactly one item on the queue.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use medic_core::Application;
use medic_core::app::ApplicationSyncRequest;
use medic_core::event::{AppRef, WorkItemKey};
use medic_core::ports::{ArgoApi, ArgoError, ListQuery};
use medic_core::permit::Permit;
use medic_core::ladder::RefreshKind;
use medic_ingest::{Ingest, IngestConfig, SIGNATURE_HEADER, WebhookSecrets};

const SECRET: &str = "local-test-secret-not-for-production";

/// Argo CD, as far as ingest asks it (listing apps for a refresh by selector): two apps.
struct Argo;

impl ArgoApi for Argo {
    async fn get_app(&self, app: &AppRef) -> Result<Application, ArgoError> {
        Err(ArgoError::NotFound(app.name.clone()))
    }
    async fn refresh(&self, _: &Permit, app: &AppRef, _: RefreshKind) -> Result<Application, ArgoError> {
        Err(ArgoError::NotFound(app.name.clone()))
    }
    async fn list_apps(&self, _: &ListQuery) -> Result<Vec<Application>, ArgoError> {
        let app = |name: &str| {
            let mut a = Application::default();
            a.metadata.name = name.into();
            a.metadata.namespace = "argocd".into();
            a.spec.project = "payments".into();
            a
        };
        Ok(vec![app("web"), app("api")])
    }
    async fn sync(&self, _: &Permit, app: &AppRef, _: &ApplicationSyncRequest) -> Result<Application, ArgoError> {
        Err(ArgoError::NotFound(app.name.clone()))
    }
    async fn terminate_operation(&self, _: &Permit, app: &AppRef) -> Result<(), ArgoError> {
        Err(ArgoError::NotFound(app.name.clone()))
    }
    async fn credential_expiry(&self) -> Result<Option<chrono::DateTime<chrono::Utc>>, String> {
        Ok(None)
    }
    async fn revision_metadata(
        &self,
        _: &AppRef,
        _: &str,
        _: Option<usize>,
    ) -> Result<Option<medic_core::app::RevisionMetadata>, ArgoError> {
        Ok(None)
    }
    async fn version(&self) -> Result<String, ArgoError> {
        Ok("v3.5.1".into())
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime"))
}

fuzz_target!(|data: &[u8]| {
    let (head, body) = match data.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&data[..i], &data[i + 2..]),
        None => (data, &[][..]),
    };
    let Ok(head) = std::str::from_utf8(head) else { return };
    let mut lines = head.lines();
    let path = lines.next().unwrap_or("/");
    let body = replace(body, b"@now@", chrono::Utc::now().to_rfc3339().as_bytes());

    let config =
        IngestConfig { work_item_key: WorkItemKey::new("a-work-item-key-of-at-least-32-bytes-for-fuzzing"), ..IngestConfig::default() };
    let intake = medic_stack::twins::MemoryState::default().intake(Argo, config);
    // The refresh route signs with the same secret, so both routes are reached.
    let ingest = Ingest::new(intake, WebhookSecrets::new(SECRET, None)).with_refresh_secrets(Some(WebhookSecrets::new(SECRET, None)));
    let signer = WebhookSecrets::new(SECRET, None);

    let mut req = lambda_http::http::Request::builder().method("POST").uri(path);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if name.trim().eq_ignore_ascii_case(SIGNATURE_HEADER) && value == "auto" {
            req = req.header(SIGNATURE_HEADER, signer.sign(&body));
        } else {
            req = req.header(name.trim(), value);
        }
    }
    let Ok(req) = req.body(lambda_http::Body::from(body.clone())) else { return };
    let is_event = req.uri().path().trim_end_matches('/') == "/v1/events";

    let response = runtime().block_on(ingest.handle(req));
    let status = response.status();
    if debug() {
        eprintln!("{status} {:?}", response.body());
    }
    assert!(!status.is_server_error(), "ingest answered {status}");
    if is_event && status.as_u16() == 202 {
        assert_eq!(ingest.queue.len(), 1, "an accepted event is one work item");
    }
});

fn replace(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

/// `FUZZ_DEBUG=1 <binary> <input>` prints each answer (to see how deep a seed gets).
fn debug() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("FUZZ_DEBUG").is_some())
}
