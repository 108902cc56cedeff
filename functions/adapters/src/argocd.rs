//! The Argo CD REST client: `HttpArgoClient` implements the core's `ArgoApi` port.
//!
//! Exact about the wire (docs/argo-cd-behaviour.md §1): bearer token, `Content-Type: application/json` on every
//! non-GET request (Argo CD answers 415 to anything else, DELETE included), `project` and
//! `appNamespace` passed so a missing app is a real 404, grpc-gateway error bodies mapped to
//! [`ArgoError`] by what to do. Polite: retries with exponential backoff and jitter inside a
//! deadline (honouring `Retry-After`), and a circuit breaker that stops calling a failing Argo CD.

use std::sync::Arc;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use medic_core::FailureMode;
use medic_core::app::{Application, ApplicationSyncRequest};
use medic_core::event::AppRef;
use medic_core::ladder::RefreshKind;
use medic_core::permit::Permit;
use medic_core::ports::{ArgoApi, ArgoError, ListQuery};
use reqwest::{Method, StatusCode, header};
use secrecy::ExposeSecret;
use serde::Deserialize;
use tokio::sync::OnceCell;

use crate::answer::{Answer, ChunkReader, ListedApps, whole_answers};
use crate::breaker::{BreakerSettings, CircuitBreaker};
use crate::config::{ArgoSettings, SettingsError};
use crate::token::TokenSource;

/// grpc-gateway's error body: `{"error": ..., "code": <grpc code>, "message": ...}`.
#[derive(Debug, Deserialize)]
struct GatewayError {
    #[serde(default)]
    code: i32,
    #[serde(default)]
    message: String,
    #[serde(default)]
    error: String,
}

/// `GET /api/version`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct ArgoVersion {
    #[serde(rename = "Version", default)]
    pub version: String,
    #[serde(rename = "BuildDate", default)]
    pub build_date: String,
    #[serde(rename = "GitCommit", default)]
    pub git_commit: String,
}

/// One sync window of an AppProject (`v1alpha1SyncWindow`), as `medic freeze list` shows it.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncWindow {
    /// `allow` or `deny`.
    pub kind: String,
    /// When it opens, in cron format.
    pub schedule: String,
    /// How long it stays open (`1h`).
    pub duration: String,
    pub time_zone: String,
    pub applications: Vec<String>,
    pub namespaces: Vec<String>,
    pub clusters: Vec<String>,
    /// Manual syncs, Argo Medic's included, pass it.
    pub manual_sync: bool,
    pub sync_overrun: bool,
    pub and_operator: bool,
    pub description: String,
}

/// An AppProject's sync windows, each with whether Argo CD says it is active now.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProjectSyncWindows {
    pub project: String,
    pub windows: Vec<(SyncWindow, bool)>,
}

/// What [`HttpArgoClient::project_sync_windows`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncWindowsOfProjects {
    /// How many AppProjects the token may `get` (Argo CD leaves the others out of its list).
    pub visible_projects: usize,
    /// Those with sync windows, by name.
    pub projects: Vec<ProjectSyncWindows>,
}

/// `GET /api/v1/projects`, as far as sync windows go.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ProjectList {
    items: Vec<ProjectItem>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ProjectItem {
    metadata: ProjectMeta,
    spec: ProjectSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ProjectMeta {
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ProjectSpec {
    sync_windows: Vec<SyncWindow>,
}

/// `GET /api/v1/projects/{name}/syncwindows`: the windows active now.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ActiveSyncWindows {
    windows: Vec<SyncWindow>,
}

// Read whole, as every small answer is.
whole_answers!(ArgoVersion, ProjectList, ActiveSyncWindows);

/// Client construction errors.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("building the HTTP client: {0}")]
    Http(#[from] reqwest::Error),
}

/// A client for one Argo CD instance. Cheap to clone; build it once at start-up.
#[derive(Clone)]
pub struct HttpArgoClient {
    http: reqwest::Client,
    base: url::Url,
    settings: Arc<ArgoSettings>,
    breaker: Arc<CircuitBreaker>,
    version: Arc<OnceCell<ArgoVersion>>,
    /// The token sent (initially `settings.token`), re-read after a 401.
    token: Arc<TokenSource>,
}

impl HttpArgoClient {
    pub fn new(settings: ArgoSettings) -> Result<Self, ClientError> {
        Self::with_breaker(settings, BreakerSettings::default())
    }

    pub fn with_breaker(settings: ArgoSettings, breaker: BreakerSettings) -> Result<Self, ClientError> {
        let token = TokenSource::fixed(settings.token.expose_secret());
        Self::with_token_source(settings, breaker, token)
    }

    /// A client whose token comes from `token` (re-read after a 401) instead of the settings.
    pub fn with_token_source(settings: ArgoSettings, breaker: BreakerSettings, token: TokenSource) -> Result<Self, ClientError> {
        let base = settings.base_url()?;
        let mut builder = reqwest::Client::builder();
        if let Some(pem) = settings.ca_bundle_pem()? {
            let certificates = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| SettingsError::CaBundle(e.to_string()))?;
            if certificates.is_empty() {
                return Err(SettingsError::CaBundle("no PEM certificate in it".into()).into());
            }
            // Added to the public roots, not instead of them.
            for certificate in certificates {
                builder = builder.add_root_certificate(certificate);
            }
        }
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &settings.headers {
            let bad = || SettingsError::BadHeader(name.clone());
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
            let mut value = reqwest::header::HeaderValue::from_str(value).map_err(|_| bad())?;
            value.set_sensitive(true);
            headers.append(name, value);
        }
        let http = builder
            .default_headers(headers)
            .use_rustls_tls()
            .danger_accept_invalid_certs(settings.insecure)
            .gzip(true)
            // Argo CD's API answers where it is asked. A redirect comes from something in front
            // of it (an SSO proxy, a missing root path) and is reported, never followed: the
            // token must not go to another host, and the error must say what is wrong.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(settings.request_timeout)
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("argo-medic/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self {
            http,
            base,
            settings: Arc::new(settings),
            breaker: Arc::new(CircuitBreaker::new(breaker)),
            version: Arc::new(OnceCell::new()),
            token: Arc::new(token),
        })
    }

    /// Where the token comes from.
    pub fn token_source(&self) -> &TokenSource {
        &self.token
    }

    pub fn breaker(&self) -> &CircuitBreaker {
        &self.breaker
    }

    /// `GET /api/version`, read once and remembered: the Argo CD version this client talks to.
    pub async fn version_info(&self) -> Result<ArgoVersion, ArgoError> {
        self.version
            .get_or_try_init(|| async {
                let version = self.call::<ArgoVersion>(Method::GET, "api/version", &[], None).await?;
                // Once per client (a container, a medic run): an Argo CD no profile covers.
                if let Some(note) = medic_core::versions::note(&version.version) {
                    tracing::warn!(version = %version.version, "{note}");
                }
                Ok(version)
            })
            .await
            .cloned()
    }

    /// Argo CD's own sync windows: `GET /api/v1/projects` (the projects this token may `get`),
    /// then `GET /api/v1/projects/{name}/syncwindows` for each one that has windows, which says
    /// which are active now (Argo CD evaluates the cron, in each window's time zone). Read-only;
    /// Argo Medic's functions never call it: their token needs no access to projects.
    pub async fn project_sync_windows(&self) -> Result<SyncWindowsOfProjects, ArgoError> {
        let list: ProjectList = self.call(Method::GET, "api/v1/projects", &[], None).await?;
        let visible_projects = list.items.len();
        let mut projects = Vec::new();
        for item in list.items.into_iter().filter(|p| !p.spec.sync_windows.is_empty()) {
            let path = format!("api/v1/projects/{}/syncwindows", seg(&item.metadata.name));
            let active: ActiveSyncWindows = self.call(Method::GET, &path, &[], None).await?;
            let windows = item
                .spec
                .sync_windows
                .into_iter()
                .map(|w| {
                    let on = active.windows.contains(&w);
                    (w, on)
                })
                .collect();
            projects.push(ProjectSyncWindows { project: item.metadata.name, windows });
        }
        projects.sort_by(|a, b| a.project.cmp(&b.project));
        Ok(SyncWindowsOfProjects { visible_projects, projects })
    }

    /// `GET /api/v1/account/can-i/{resource}/{action}/{subresource}`: whether this token may,
    /// as Argo CD's RBAC answers for it (`argocd account can-i`). The subresource is one path
    /// segment in Argo CD's spec, so its `/` (`<project>/<app>`) is sent escaped.
    pub async fn can_i(&self, resource: &str, action: &str, subresource: &str) -> Result<bool, ArgoError> {
        let object: String = subresource.split('/').map(seg_glob).collect::<Vec<_>>().join("%2F");
        let path = format!("api/v1/account/can-i/{}/{}/{object}", seg(resource), seg(action));
        let answer: serde_json::Value = self.call(Method::GET, &path, &[], None).await?;
        match answer["value"].as_str() {
            Some("yes") => Ok(true),
            Some("no") => Ok(false),
            _ => Err(ArgoError::Invalid(format!("can-i answered {answer}, not yes or no"))),
        }
    }

    /// `GET /api/v1/notifications/services` or `/triggers`: the names argocd-notifications-cm
    /// configures.
    pub async fn notification_names(&self, kind: NotificationNames) -> Result<Vec<String>, ArgoError> {
        let path = match kind {
            NotificationNames::Services => "api/v1/notifications/services",
            NotificationNames::Triggers => "api/v1/notifications/triggers",
        };
        let answer: serde_json::Value = self.call(Method::GET, path, &[], None).await?;
        Ok(answer["items"].as_array().into_iter().flatten().filter_map(|i| i["name"].as_str().map(str::to_owned)).collect())
    }

    /// One API call with retries (429, 5xx, timeouts) inside the deadline, behind the breaker.
    async fn call<T: Answer>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&serde_json::Value>,
    ) -> Result<T, ArgoError> {
        let effect = if method == Method::GET { Effect::Read } else { Effect::Acts };
        self.call_with(effect, method, path, query, body).await
    }

    /// A deferred token's first read ([`TokenSource::deferred`]): a call without a token is not
    /// made; it fails as unavailable, and the next call reads again.
    async fn token_ready(&self) -> Result<(), ArgoError> {
        self.token.ready().await.map_err(|e| ArgoError::Transient(format!("the Argo CD token could not be read: {e}")))
    }

    /// [`Self::retrying`], and once more with a new token when Argo CD rejected the one sent
    /// (401: nothing was done, even by a mutating call). Not on 403: Argo CD answers 403 for an
    /// app it does not show this account (a missing one queried without its project, too).
    async fn call_with<T: Answer>(
        &self,
        effect: Effect,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&serde_json::Value>,
    ) -> Result<T, ArgoError> {
        self.token_ready().await?;
        let used = self.token.get();
        match self.retrying(effect, method.clone(), path, query, body).await {
            Err(ArgoError::Unauthenticated(_)) if self.token.renew_after_rejection(&used).await => {
                self.retrying(effect, method, path, query, body).await
            }
            result => result,
        }
    }

    async fn retrying<T: Answer>(
        &self,
        effect: Effect,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&serde_json::Value>,
    ) -> Result<T, ArgoError> {
        let s = &self.settings;
        let backoff = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(200))
            .with_max_delay(Duration::from_secs(10))
            .with_max_times(s.max_attempts.saturating_sub(1))
            .with_total_delay(Some(s.retry_deadline))
            .with_jitter();
        let max_retry_after = s.max_retry_after;
        // A mutating call is retried only when Argo CD cannot have acted on it: it refused it
        // (429) or it was never sent (no connection). After a timeout or a 5xx the operation may
        // have started; the caller re-reads the app and looks for its idempotency key instead.
        let mutating = effect == Effect::Acts;
        let retry = (|| self.attempt::<T>(method.clone(), path, query, body))
            .retry(backoff)
            .sleep(tokio::time::sleep)
            .when(move |e: &ArgoError| match e {
                ArgoError::RateLimited { .. } => true,
                ArgoError::Transient(m) => !mutating || m.starts_with(NOT_SENT),
                _ => false,
            })
            .adjust(move |e, next| match e {
                // Honour Retry-After, but never wait longer in-process than the caller allows.
                ArgoError::RateLimited { retry_after: Some(after) } if *after > max_retry_after => None,
                ArgoError::RateLimited { retry_after: Some(after) } => next.map(|_| *after),
                _ => next,
            })
            .notify(|e, wait| tracing::warn!(error = %e, wait_ms = wait.as_millis() as u64, path, "retrying Argo CD call"));
        // backon's total delay caps only the sleeps; this caps the whole call, attempts included,
        // so one call cannot outlive the invocation that makes it.
        let deadline = s.retry_deadline + s.request_timeout;
        tokio::time::timeout(deadline, retry)
            .await
            .unwrap_or_else(|_| Err(ArgoError::Transient(format!("timeout: no answer within {}s, retries included", deadline.as_secs()))))
    }

    async fn attempt<T: Answer>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&serde_json::Value>,
    ) -> Result<T, ArgoError> {
        self.breaker.check().map_err(|retry_after| ArgoError::CircuitOpen { retry_after })?;
        let result = self.send::<T>(method, path, query, body).await;
        // Only the instance's own failures count against it; a 404 or 403 is a healthy answer.
        self.breaker.record(!matches!(result, Err(ArgoError::Transient(_) | ArgoError::RateLimited { .. })));
        result
    }

    async fn send<T: Answer>(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&serde_json::Value>,
    ) -> Result<T, ArgoError> {
        let url = self.base.join(path).map_err(|e| ArgoError::Invalid(format!("bad path `{path}`: {e}")))?;
        let mut req = self.http.request(method.clone(), url).bearer_auth(self.token.get().expose_secret()).query(query);
        if method != Method::GET {
            // Exactly this string: Argo CD compares it verbatim and answers 415 otherwise.
            req = req.header(header::CONTENT_TYPE, "application/json");
            let payload = body.map_or_else(|| b"{}".to_vec(), |b| serde_json::to_vec(b).unwrap_or_default());
            req = req.body(payload);
        }
        let response = req.send().await.map_err(|e| ArgoError::Transient(describe_reqwest(&e)))?;
        let status = response.status();
        let retry_after = crate::retry::retry_after(response.headers());
        let unexpected = |e: serde_json::Error| ArgoError::Invalid(format!("unexpected response body from {path}: {e}"));
        if status.is_success() && T::STREAMED {
            return streamed::<T>(response, path).await?.map_err(unexpected);
        }
        if status.is_redirection() {
            let location = response.headers().get(header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("nowhere").to_owned();
            return Err(ArgoError::Invalid(format!(
                "{path} answered HTTP {} redirecting to {location}, and Argo Medic follows no redirect (the token would go with it): ARGOCD_SERVER must name Argo CD's API server itself, not an SSO proxy in front of it; served under a path prefix, set ARGOCD_ROOT_PATH",
                status.as_u16()
            )));
        }
        let bytes = response.bytes().await.map_err(|e| ArgoError::Transient(describe_reqwest(&e)))?;
        if status.is_success() {
            return T::from_json(&bytes[..]).map_err(unexpected);
        }
        Err(map_error(status, retry_after, &bytes))
    }
}

/// Decodes the body on a blocking thread while it arrives, a few chunks in flight: the 31 MB list
/// of 50,000 apps is never held whole. A transport failure mid-body is transient, like one before it.
async fn streamed<T: Answer>(mut response: reqwest::Response, path: &str) -> Result<serde_json::Result<T>, ArgoError> {
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    let decoder = tokio::task::spawn_blocking(move || T::from_json(ChunkReader::new(rx)));
    let mut failed = None;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                // A send fails only when the decoder has stopped on malformed JSON, which it reports.
                if tx.send(chunk).await.is_err() {
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                failed = Some(ArgoError::Transient(describe_reqwest(&e)));
                break;
            }
        }
    }
    drop(tx);
    let decoded = decoder.await.map_err(|e| ArgoError::Invalid(format!("decoding the answer from {path}: {e}")))?;
    match failed {
        Some(e) => Err(e),
        None => Ok(decoded),
    }
}

/// Whether sending a request again could repeat an effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    /// A read: retried on 429, 5xx and timeouts.
    Read,
    /// A sync, a terminate, a refresh: retried only when Argo CD cannot have acted on it.
    Acts,
}

/// How a transient error begins when the request never reached Argo CD (no connection), so even
/// a mutating call may be sent again.
const NOT_SENT: &str = "connection failed";

/// Maps an Argo CD error response to what to do about it.
pub fn map_error(status: StatusCode, retry_after: Option<Duration>, body: &[u8]) -> ArgoError {
    let parsed: Option<GatewayError> = serde_json::from_slice(body).ok();
    let message = parsed
        .as_ref()
        .map(|g| if g.message.is_empty() { g.error.clone() } else { g.message.clone() })
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_owned());
    let code = parsed.as_ref().map_or(0, |g| g.code);
    match status.as_u16() {
        401 => ArgoError::Unauthenticated(message),
        // The refusals the catalogue knows by their messages (its single home of Argo CD's).
        403 if FailureMode::SyncWindowBlocked.signalled_by(&message) => ArgoError::SyncWindowBlocked(message),
        403 => ArgoError::PermissionDenied(message),
        404 => ArgoError::NotFound(message),
        400 if FailureMode::OperationInProgress.signalled_by(&message) => ArgoError::OperationInProgress,
        400 if FailureMode::AppDeleting.signalled_by(&message) => ArgoError::AppDeleting,
        429 => ArgoError::RateLimited { retry_after },
        // Bad selectors come back as 500 with gRPC code 2; retrying cannot fix them.
        500 if message.starts_with("error parsing the selector") => ArgoError::Invalid(message),
        408 | 500..=599 => ArgoError::Transient(format!("HTTP {}: {message}", status.as_u16())),
        _ if code == 14 => ArgoError::Transient(message),
        _ => ArgoError::Invalid(format!("HTTP {}: {message}", status.as_u16())),
    }
}

fn describe_reqwest(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timeout"
    } else if e.is_connect() {
        NOT_SENT
    } else if e.is_body() || e.is_decode() {
        "response interrupted"
    } else {
        "request failed"
    };
    let mut msg = format!("{kind}: {e}");
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        msg.push_str(&format!(": {s}"));
        source = s.source();
    }
    msg
}

/// What [`HttpArgoClient::notification_names`] lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotificationNames {
    Services,
    Triggers,
}

/// [`seg`], keeping `*` (an RBAC glob).
fn seg_glob(s: &str) -> String {
    s.split('*').map(seg).collect::<Vec<_>>().join("*")
}

/// A path segment: app names are DNS-1123, but never trust input into a URL path.
fn seg(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c.to_string() } else { format!("%{:02X}", c as u32) })
        .collect()
}

fn scope_query(app: &AppRef) -> Vec<(&'static str, String)> {
    let mut q = Vec::new();
    if let Some(p) = app.project.as_ref().filter(|p| !p.is_empty()) {
        q.push(("project", p.clone()));
    }
    if !app.namespace.is_empty() {
        q.push(("appNamespace", app.namespace.clone()));
    }
    q
}

impl ArgoApi for HttpArgoClient {
    async fn get_app(&self, app: &AppRef) -> Result<Application, ArgoError> {
        self.call_with(Effect::Read, Method::GET, &format!("api/v1/applications/{}", seg(&app.name)), &scope_query(app), None).await
    }

    async fn refresh(&self, _: &Permit, app: &AppRef, kind: RefreshKind) -> Result<Application, ArgoError> {
        let mut query = scope_query(app);
        query.push(("refresh", kind.as_str().to_owned()));
        // A refresh is an action even on GET: each request makes the controller reconcile (and a
        // hard one regenerates manifests), so it is sent again only when it cannot have arrived:
        // one budget token buys one refresh.
        self.call_with(Effect::Acts, Method::GET, &format!("api/v1/applications/{}", seg(&app.name)), &query, None).await
    }

    async fn list_apps(&self, q: &ListQuery) -> Result<Vec<Application>, ArgoError> {
        let mut query: Vec<(&str, String)> = q.projects.iter().map(|p| ("projects", p.clone())).collect();
        if !q.name.is_empty() {
            query.push(("name", q.name.clone()));
        }
        if !q.selector.is_empty() {
            query.push(("selector", q.selector.clone()));
        }
        if !q.repo.is_empty() {
            query.push(("repo", q.repo.clone()));
        }
        if !q.app_namespace.is_empty() {
            query.push(("appNamespace", q.app_namespace.clone()));
        }
        if !q.fields.is_empty() {
            // No token, no version read and no list: one read of a deferred token per call.
            self.token_ready().await?;
            // The mask this Argo CD honours (before 3.5 the whole spec for its parts): its version
            // read once per client, as every version-dependent behaviour takes it.
            let version = self.version_info().await.ok().and_then(|v| medic_core::versions::Version::parse(&v.version));
            query.push(("fields", medic_core::versions::list_fields(version, &q.fields).join(",")));
        }
        let list: ListedApps = self.call(Method::GET, "api/v1/applications", &query, None).await?;
        Ok(list.0)
    }

    async fn sync(&self, _: &Permit, app: &AppRef, request: &ApplicationSyncRequest) -> Result<Application, ArgoError> {
        let body = serde_json::to_value(request).map_err(|e| ArgoError::Invalid(e.to_string()))?;
        self.call(Method::POST, &format!("api/v1/applications/{}/sync", seg(&app.name)), &[], Some(&body)).await
    }

    async fn terminate_operation(&self, _: &Permit, app: &AppRef) -> Result<(), ArgoError> {
        let _: serde_json::Value =
            self.call(Method::DELETE, &format!("api/v1/applications/{}/operation", seg(&app.name)), &scope_query(app), None).await?;
        Ok(())
    }

    /// The `exp` of the token sent now. One that expires within [`ROTATION_WATCH`] is read again
    /// from its secret first (at most once a minute), so a rotation is seen without a 401.
    async fn credential_expiry(&self) -> Result<Option<chrono::DateTime<chrono::Utc>>, String> {
        self.token.ready().await.map_err(|e| format!("the Argo CD token could not be read: {e}"))?;
        let expiry = crate::token::jwt_expiry(self.token.get().expose_secret())?;
        let soon = |at: &chrono::DateTime<chrono::Utc>| *at - chrono::Utc::now() < ROTATION_WATCH;
        if expiry.as_ref().is_some_and(soon) && self.token.reread().await {
            return crate::token::jwt_expiry(self.token.get().expose_secret());
        }
        Ok(expiry)
    }

    async fn revision_metadata(
        &self,
        app: &AppRef,
        revision: &str,
        source_index: Option<usize>,
    ) -> Result<Option<medic_core::app::RevisionMetadata>, ArgoError> {
        let path = format!("api/v1/applications/{}/revisions/{}/metadata", seg(&app.name), seg(revision));
        let mut query = scope_query(app);
        if let Some(i) = source_index {
            query.push(("sourceIndex", i.to_string()));
        }
        match self.call(Method::GET, &path, &query, None).await {
            Ok(metadata) => Ok(Some(metadata)),
            // A revision the repository does not have (any more): nothing to compare.
            Err(ArgoError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }
    async fn version(&self) -> Result<String, ArgoError> {
        Ok(self.version_info().await?.version)
    }
}

/// A token expiring within this is read again from its secret before its expiry is told: longer
/// than any sensible warning (`MEDIC_TOKEN_EXPIRY_WARNING_DAYS`, 7), short enough that a 90-day
/// token costs no secret read for most of its life.
pub const ROTATION_WATCH: chrono::TimeDelta = chrono::TimeDelta::days(30);

#[cfg(test)]
mod tests {
    use super::*;

    fn err(status: u16, body: &str) -> ArgoError {
        map_error(StatusCode::from_u16(status).unwrap(), None, body.as_bytes())
    }

    /// A throwaway self-signed CA committed for these tests only (its key was discarded).
    fn test_only_ca() -> String {
        format!(
            "{}/tests/fixtures/test-only-ca.pem",
            std::path::Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test"))
                .display()
        )
    }

    fn with_ca(ca_bundle: &str) -> Result<HttpArgoClient, ClientError> {
        let mut settings = ArgoSettings::new("argocd.example.com", "t.o.k");
        settings.ca_bundle = Some(ca_bundle.to_owned());
        HttpArgoClient::new(settings)
    }

    #[test]
    fn a_private_ca_is_added_from_pem_text_a_file_or_an_escaped_line_and_a_bad_one_is_named() {
        let pem = std::fs::read_to_string(test_only_ca()).unwrap();
        with_ca(&test_only_ca()).expect("a PEM file");
        with_ca(&pem).expect("PEM text");
        with_ca(&pem.replace('\n', "\\n")).expect("PEM text on one line, `\\n` for the line breaks (a stack parameter)");
        let problem = |v: &str| with_ca(v).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(problem("/nonexistent/ca.pem").starts_with("`ARGOCD_CA_BUNDLE`: neither PEM text nor a readable file"));
        assert!(
            problem(&format!(
                "{}/Cargo.toml",
                std::path::Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test"))
                    .display()
            ))
            .contains("no PEM certificate")
        );
        // Valid PEM framing around bytes that are no certificate: rejected when the roots are built.
        let not_a_certificate = "-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n";
        assert!(with_ca(not_a_certificate).is_err(), "the certificate is parsed, not just framed");
    }

    #[test]
    fn grpc_gateway_errors_map_to_what_to_do() {
        assert_eq!(
            err(401, r#"{"error":"no session information","code":16,"message":"no session information"}"#),
            ArgoError::Unauthenticated("no session information".into())
        );
        assert_eq!(err(403, r#"{"code":7,"message":"permission denied"}"#), ArgoError::PermissionDenied("permission denied".into()));
        assert_eq!(
            err(403, r#"{"code":7,"message":"cannot sync: blocked by sync window"}"#),
            ArgoError::SyncWindowBlocked("cannot sync: blocked by sync window".into())
        );
        assert_eq!(
            err(404, r#"{"code":5,"message":"applications.argoproj.io \"x\" not found"}"#),
            ArgoError::NotFound("applications.argoproj.io \"x\" not found".into())
        );
        assert_eq!(err(400, r#"{"code":9,"message":"another operation is already in progress"}"#), ArgoError::OperationInProgress);
        assert_eq!(err(400, r#"{"code":9,"message":"application is deleting"}"#), ArgoError::AppDeleting);
        assert!(matches!(err(400, r#"{"code":3,"message":"bad"}"#), ArgoError::Invalid(_)));
        assert!(matches!(err(415, "Invalid content type"), ArgoError::Invalid(m) if m.contains("Invalid content type")));
        assert!(matches!(err(503, r#"{"code":14,"message":"unavailable"}"#), ArgoError::Transient(_)));
        assert!(matches!(err(500, r#"{"code":2,"message":"application refresh deadline exceeded"}"#), ArgoError::Transient(_)));
        assert!(matches!(err(500, r#"{"code":2,"message":"error parsing the selector: x"}"#), ArgoError::Invalid(_)));
        assert_eq!(
            map_error(StatusCode::TOO_MANY_REQUESTS, Some(Duration::from_secs(3)), b"slow down"),
            ArgoError::RateLimited { retry_after: Some(Duration::from_secs(3)) }
        );
    }

    #[test]
    fn only_throttling_and_outages_are_retryable() {
        assert!(ArgoError::Transient("x".into()).is_retryable());
        assert!(ArgoError::RateLimited { retry_after: None }.is_retryable());
        assert!(!ArgoError::Unauthenticated("x".into()).is_retryable());
        assert!(!ArgoError::PermissionDenied("x".into()).is_retryable());
        assert!(!ArgoError::OperationInProgress.is_retryable());
    }

    #[test]
    fn path_segments_are_escaped() {
        assert_eq!(seg("web-1.prod"), "web-1.prod");
        assert_eq!(seg("a/../b"), "a%2F..%2Fb");
    }

    /// An HTTP/1.1 server on 127.0.0.1 that answers `GET /api/v1/applications` first with a body
    /// cut off mid-list (the connection closed before the promised length), then whole.
    async fn list_server_cutting_the_first_answer(body: &'static str) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("127.0.0.1:{}", listener.local_addr().unwrap().port());
        let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = served.clone();
        tokio::spawn(async move {
            loop {
                let (mut conn, _) = listener.accept().await.unwrap();
                let mut request = vec![0u8; 4096];
                let _ = conn.read(&mut request).await;
                let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let sent = if n == 0 { &body[..body.len() / 2] } else { body };
                let _ = conn.write_all(head.as_bytes()).await;
                let _ = conn.write_all(sent.as_bytes()).await;
                let _ = conn.shutdown().await;
            }
        });
        (url, served)
    }

    /// The newcomer review's row 45: a 302 to an SSO host was followed off-host (a DNS error on
    /// the login host was all the person saw). Fails on 5c450c9: the error is a transient "dns
    /// error" and the call is retried.
    #[tokio::test]
    async fn a_redirect_is_reported_with_where_it_points_never_followed() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = format!("127.0.0.1:{}", listener.local_addr().unwrap().port());
        let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = served.clone();
        tokio::spawn(async move {
            loop {
                let (mut conn, _) = listener.accept().await.unwrap();
                let _ = conn.read(&mut [0u8; 4096]).await;
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let answer = "HTTP/1.1 302 Found\r\nlocation: https://sso.example.invalid/login?next=%2Fapi\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                let _ = conn.write_all(answer.as_bytes()).await;
                let _ = conn.shutdown().await;
            }
        });
        let mut settings = ArgoSettings::new(server, "t.o.k");
        settings.plaintext = true;
        let client = HttpArgoClient::new(settings).unwrap();
        let app = AppRef { name: "web".into(), namespace: "argocd".into(), project: None };
        let err = client.get_app(&app).await.unwrap_err();
        let ArgoError::Invalid(why) = &err else { panic!("not reported as a configuration problem: {err:?}") };
        assert!(why.contains("HTTP 302") && why.contains("https://sso.example.invalid/login") && why.contains("ARGOCD_SERVER"), "{why}");
        assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 1, "asked once: not retried, not followed");
    }

    /// The CLI's `-H` (argocd's): the headers go with every request, beside the token.
    #[tokio::test]
    async fn extra_headers_go_with_every_request_and_a_bad_one_is_named() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = format!("127.0.0.1:{}", listener.local_addr().unwrap().port());
        let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let (mut conn, _) = listener.accept().await.unwrap();
                let mut buf = vec![0u8; 8192];
                let n = conn.read(&mut buf).await.unwrap_or(0);
                let _ = tx.send(String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase());
                let body = r#"{"Version":"v3.5.1+abc"}"#;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(answer.as_bytes()).await;
                let _ = conn.shutdown().await;
            }
        });
        let mut settings = ArgoSettings::new(server, "t.o.k");
        settings.plaintext = true;
        settings.headers = vec![("CF-Access-Client-Id".into(), "id.access".into()), ("X-Team".into(), "platform".into())];
        let client = HttpArgoClient::new(settings.clone()).unwrap();
        client.version_info().await.expect("the version");
        let request = seen.recv().await.unwrap();
        assert!(request.contains("\r\ncf-access-client-id: id.access\r\n") && request.contains("\r\nx-team: platform\r\n"), "{request}");
        assert!(request.contains("\r\nauthorization: bearer t.o.k\r\n"), "{request}");

        settings.headers = vec![("bad name".into(), "x".into())];
        let err = HttpArgoClient::new(settings).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("header `bad name`"), "{err}");
    }

    #[tokio::test]
    async fn a_list_cut_off_mid_body_is_read_again_and_never_answered_short() {
        let body = r#"{"items":[{"metadata":{"name":"one","namespace":"argocd"}},{"metadata":{"name":"two","namespace":"argocd"}},{"metadata":{"name":"three","namespace":"argocd"}}]}"#;
        let (server, served) = list_server_cutting_the_first_answer(body).await;
        let mut settings = ArgoSettings::new(server, "t.o.k");
        settings.plaintext = true;
        let client = HttpArgoClient::new(settings).unwrap();
        let apps = client.list_apps(&ListQuery::default()).await.expect("read again after the cut");
        let names: Vec<&str> = apps.iter().map(|a| a.metadata.name.as_str()).collect();
        assert_eq!(names, ["one", "two", "three"]);
        assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 2, "the cut answer was retried, once");
    }
}
