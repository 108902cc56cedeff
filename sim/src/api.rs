//! The simulated API: routing and one handler per endpoint, with Argo CD's order of checks.
//!
//! Handlers are synchronous: they hold the store lock for the whole decision so that, like the
//! real server's compare-and-update, two concurrent syncs cannot both start an operation.
//! Work the controller would do later (finishing an operation) is spawned as a timed task.

use std::sync::Arc;

use bytes::Bytes;
use chrono::Utc;
use serde_json::{Map, Value, json};

use crate::controller;
use crate::error::{ApiError, GrpcCode};
use crate::fields::FieldSelection;
use crate::json::{lookup, str_at};
use crate::log::Endpoint;
use crate::rbac::{self, CONTROL_PLANE_NAMESPACE, Session};
use crate::selector;
use crate::shared::Shared;
use crate::state::{AppKey, Store};
use crate::sync_request;

/// A request, as the handlers see it.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) method: String,
    /// Without the root path.
    pub(crate) path: String,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) content_type: Option<String>,
    pub(crate) authorization: Option<String>,
    pub(crate) body: Bytes,
    /// Outside the root path: not an API call at all.
    pub(crate) outside_root: bool,
}

impl Call {
    /// The first value of a query parameter, as Go's `url.Values.Get`.
    fn param(&self, name: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn params<'a>(&'a self, names: &'a [&str]) -> impl Iterator<Item = &'a str> + 'a {
        self.query.iter().filter(move |(k, _)| names.contains(&k.as_str())).map(|(_, v)| v.as_str())
    }
}

/// An answer: status, body, and the optional `Retry-After`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: ReplyBody,
    pub(crate) retry_after: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ReplyBody {
    Json(Value),
    /// Plain text (Go's `http.Error`).
    Text(String),
}

impl Reply {
    fn ok(body: Value) -> Self {
        Reply { status: 200, body: ReplyBody::Json(body), retry_after: None }
    }

    pub(crate) fn text(status: u16, text: &str) -> Self {
        Reply { status, body: ReplyBody::Text(text.to_string()), retry_after: None }
    }

    /// An injected status with a body grpc-gateway could have produced.
    pub(crate) fn injected(status: u16, retry_after: Option<u64>) -> Self {
        let code = GrpcCode::for_injected_status(status);
        let message = match code {
            GrpcCode::ResourceExhausted => "the server has received too many requests and has asked us to try again later",
            GrpcCode::Unavailable => "the server is currently unable to handle the request",
            _ => "injected fault",
        };
        let error = ApiError::new(code, message);
        Reply { status, body: ReplyBody::Json(error.body()), retry_after }
    }
}

impl From<ApiError> for Reply {
    fn from(error: ApiError) -> Self {
        Reply { status: error.http_status(), body: ReplyBody::Json(error.body()), retry_after: None }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route<'a> {
    Version,
    List,
    App(&'a str),
    Sync(&'a str),
    Operation(&'a str),
    ResourceTree(&'a str),
    SyncWindows(&'a str),
    /// `GET /api/v1/projects`.
    Projects,
    /// `GET /api/v1/projects/{name}/syncwindows`.
    ProjectSyncWindows(&'a str),
    /// `GET /api/v1/applications/{name}/revisions/{revision}/metadata`.
    RevisionMetadata(&'a str, &'a str),
    /// `GET /api/v1/account/can-i/{resource}/{action}/{subresource}`; the subresource may hold
    /// slashes (`<project>/<app>`).
    CanI {
        resource: &'a str,
        action: &'a str,
        object: &'a str,
    },
    NotificationServices,
    NotificationTriggers,
}

impl Route<'_> {
    fn method(&self) -> &'static str {
        match self {
            Route::Sync(_) => "POST",
            Route::Operation(_) => "DELETE",
            _ => "GET",
        }
    }
}

fn route(path: &str) -> Option<Route<'_>> {
    if path == "/api/version" {
        return Some(Route::Version);
    }
    match path {
        "/api/v1/notifications/services" => return Some(Route::NotificationServices),
        "/api/v1/notifications/triggers" => return Some(Route::NotificationTriggers),
        "/api/v1/projects" => return Some(Route::Projects),
        _ => {}
    }
    if let Some(rest) = path.strip_prefix("/api/v1/projects/") {
        let (name, tail) = rest.split_once('/')?;
        return (!name.is_empty() && tail == "syncwindows").then_some(Route::ProjectSyncWindows(name));
    }
    if let Some(rest) = path.strip_prefix("/api/v1/account/can-i/") {
        let mut parts = rest.splitn(3, '/');
        let (resource, action, object) = (parts.next()?, parts.next()?, parts.next()?);
        return (!resource.is_empty() && !action.is_empty() && !object.is_empty()).then_some(Route::CanI { resource, action, object });
    }
    let rest = path.strip_prefix("/api/v1/applications")?;
    if rest.is_empty() {
        return Some(Route::List);
    }
    let mut parts = rest.strip_prefix('/')?.split('/');
    let name = parts.next().filter(|n| !n.is_empty())?;
    let route = match (parts.next(), parts.next()) {
        (Some("revisions"), Some(revision)) if !revision.is_empty() => {
            return (parts.next() == Some("metadata") && parts.next().is_none()).then_some(Route::RevisionMetadata(name, revision));
        }
        (None, _) => Route::App(name),
        (Some("sync"), None) => Route::Sync(name),
        (Some("operation"), None) => Route::Operation(name),
        (Some("resource-tree"), None) => Route::ResourceTree(name),
        (Some("syncwindows"), None) => Route::SyncWindows(name),
        _ => return None,
    };
    Some(route)
}

/// The endpoint a request addresses, for [`crate::CallCounts`]; whatever the answer.
pub(crate) fn endpoint(call: &Call) -> Endpoint {
    if call.outside_root {
        return Endpoint::Other;
    }
    let Some(route) = route(&call.path).filter(|r| r.method() == call.method) else {
        return Endpoint::Other;
    };
    match route {
        Route::Version => Endpoint::Version,
        Route::List => Endpoint::List,
        Route::App(_) => match call.param("refresh") {
            Some("hard") => Endpoint::HardRefresh,
            Some(r) if !r.is_empty() => Endpoint::Refresh,
            _ => Endpoint::Get,
        },
        Route::Sync(_) => Endpoint::Sync,
        Route::Operation(_) => Endpoint::Terminate,
        Route::ResourceTree(_) => Endpoint::ResourceTree,
        Route::SyncWindows(_) => Endpoint::SyncWindows,
        Route::RevisionMetadata(..)
        | Route::CanI { .. }
        | Route::NotificationServices
        | Route::NotificationTriggers
        | Route::Projects
        | Route::ProjectSyncWindows(_) => Endpoint::Other,
    }
}

/// Answers a request that no fault intercepted.
pub(crate) fn handle(shared: &Arc<Shared>, call: &Call) -> Reply {
    // server.go `enforceContentTypes` wraps the whole API handler: every non-GET request must
    // say exactly `application/json`, whatever its path and even without a body.
    if call.method != "GET" && call.content_type.as_deref() != Some("application/json") {
        return Reply::text(415, "Invalid content type\n");
    }
    let Some(route) = route(&call.path) else {
        return Reply::text(404, "Not Found\n");
    };
    if route.method() != call.method {
        return Reply::text(405, "Method Not Allowed\n");
    }
    let result = match route {
        Route::Version => Ok(version(shared, call)),
        Route::List => list(shared, call),
        Route::App(name) => get(shared, call, name),
        Route::Sync(name) => sync(shared, call, name),
        Route::Operation(name) => terminate(shared, call, name),
        Route::ResourceTree(name) => resource_tree(shared, call, name),
        Route::SyncWindows(name) => sync_windows(shared, call, name),
        Route::Projects => projects(shared, call),
        Route::ProjectSyncWindows(name) => project_sync_windows(shared, call, name),
        Route::RevisionMetadata(name, revision) => revision_metadata(shared, call, name, revision),
        Route::CanI { resource, action, object } => can_i(shared, call, resource, action, object),
        Route::NotificationServices => notification_names(shared, call, |n| &n.services),
        Route::NotificationTriggers => notification_names(shared, call, |n| &n.triggers),
    };
    result.map(Reply::ok).unwrap_or_else(Reply::from)
}

fn authenticate(shared: &Shared, call: &Call) -> Result<Session, ApiError> {
    let tokens = shared.tokens.lock().clone();
    rbac::authenticate(call.authorization.as_deref(), &tokens, shared.started_at)
}

fn app_project(app: &Value) -> &str {
    str_at(app, "spec.project").unwrap_or_default()
}

fn app_namespace(call: &Call) -> &str {
    call.param("appNamespace").filter(|ns| !ns.is_empty()).unwrap_or(CONTROL_PLANE_NAMESPACE)
}

/// `getAppEnforceRBAC` (docs/argo-cd-behaviour.md §1.5): without a project a missing app and a forbidden app
/// look the same (403); with a project, RBAC is checked on the project first and a missing app
/// or an app of another project is a real 404.
fn enforce_app(shared: &Shared, store: &Store, session: &Session, action: &str, project: &str, key: &AppKey) -> Result<(), ApiError> {
    let policies = &shared.config.policies;
    if project.is_empty() {
        let app = store.get(key).ok_or_else(ApiError::permission_denied)?;
        if !rbac::allowed(policies, &session.subject, action, app_project(app)) {
            return Err(ApiError::permission_denied());
        }
        return Ok(());
    }
    if !rbac::allowed(policies, &session.subject, action, project) {
        return Err(ApiError::permission_denied());
    }
    match store.get(key) {
        Some(app) if app_project(app) == project => Ok(()),
        _ => Err(ApiError::app_not_found(&key.name)),
    }
}

/// `GET /api/v1/account/can-i/...` (server/account/account.go `CanI`): `{"value": "yes"}` or
/// `"no"` for the caller's own RBAC; only `applications` is modelled (every other resource is no).
fn can_i(shared: &Shared, call: &Call, resource: &str, action: &str, object: &str) -> Result<Value, ApiError> {
    let session = authenticate(shared, call)?;
    // grpc-gateway unescapes path parameters: a client sends `<project>%2F<app>` as one segment.
    let object = object.replace("%2F", "/").replace("%2f", "/");
    let project = object.split('/').next().unwrap_or_default();
    let yes = resource == "applications" && rbac::allowed(&shared.config.policies, &session.subject, action, project);
    Ok(json!({ "value": if yes { "yes" } else { "no" } }))
}

/// `GET /api/v1/notifications/{services,triggers}`: the configured names (`{"items": [{"name"}]}`).
fn notification_names(shared: &Shared, call: &Call, which: fn(&crate::config::Notifications) -> &Vec<String>) -> Result<Value, ApiError> {
    authenticate(shared, call)?;
    let items: Vec<Value> = which(&shared.config.notifications).iter().map(|n| json!({ "name": n })).collect();
    Ok(json!({ "items": items }))
}

/// `GET /api/version`: unauthenticated callers learn only the version.
fn version(shared: &Shared, call: &Call) -> Value {
    let version = &shared.config.version;
    if authenticate(shared, call).is_err() {
        return json!({ "Version": version });
    }
    let tag = version.split('+').next().unwrap_or(version);
    json!({
        "Version": version,
        "BuildDate": "2026-08-12T10:14:37Z",
        "GitCommit": "109ca7ca71139e514114499d294a492e7910a965",
        "GitTag": tag,
        "GitTreeState": "clean",
        "GoVersion": "go1.25.0",
        "Compiler": "gc",
        "Platform": "linux/amd64",
        "KustomizeVersion": "v5.7.1 2025-07-23T12:45:29Z",
        "HelmVersion": "v3.18.4+gd80839c",
        "KubectlVersion": "v0.34.0",
        "JsonnetVersion": "v0.21.0"
    })
}

/// `GET /api/v1/applications` (docs/argo-cd-behaviour.md §1.6).
fn list(shared: &Shared, call: &Call) -> Result<Value, ApiError> {
    let session = authenticate(shared, call)?;
    let selector = selector::parse(call.param("selector").unwrap_or_default())
        .map_err(|e| ApiError::new(GrpcCode::Unknown, format!("error parsing the selector: {e}")))?;
    let name = call.param("name").filter(|n| !n.is_empty());
    let projects: Vec<&str> = call.params(&["projects", "project"]).collect();
    let repo = call.param("repo").filter(|r| !r.is_empty());
    let namespace = call.param("appNamespace").filter(|n| !n.is_empty());
    let fields = FieldSelection::parse(call.param("fields"), &shared.config.version);

    let store = shared.store.lock();
    let mut items: Vec<&Value> = store
        .apps()
        .filter(|app| selector.matches(lookup(app, "metadata.labels")))
        .filter(|app| namespace.is_none_or(|ns| str_at(app, "metadata.namespace") == Some(ns)))
        .filter(|app| name.is_none_or(|n| str_at(app, "metadata.name") == Some(n)))
        .filter(|app| projects.is_empty() || projects.contains(&app_project(app)))
        .filter(|app| repo.is_none_or(|r| uses_repo(app, r)))
        .filter(|app| rbac::allowed(&shared.config.policies, &session.subject, "get", app_project(app)))
        .collect();
    items.sort_by_key(|app| str_at(app, "metadata.name").unwrap_or_default());
    let behaviour = shared.behaviour;
    let items: Vec<Value> = match &fields {
        Some(selection) => items.into_iter().map(|app| selection.apply(&behaviour.listed(app))).collect(),
        None => items.into_iter().map(|app| behaviour.listed(app)).collect(),
    };
    Ok(json!({"metadata": {"resourceVersion": store.list_version()}, "items": items}))
}

fn uses_repo(app: &Value, repo: &str) -> bool {
    str_at(app, "spec.source.repoURL") == Some(repo)
        || lookup(app, "spec.sources").and_then(Value::as_array).is_some_and(|s| s.iter().any(|src| str_at(src, "repoURL") == Some(repo)))
}

/// `GET /api/v1/applications/{name}`, with `refresh` (docs/argo-cd-behaviour.md §1.5).
fn get(shared: &Shared, call: &Call, name: &str) -> Result<Value, ApiError> {
    let session = authenticate(shared, call)?;
    let projects: Vec<&str> = call.params(&["project", "projects"]).collect();
    if projects.len() > 1 {
        return Err(ApiError::new(
            GrpcCode::InvalidArgument,
            "multiple projects specified - the get endpoint accepts either zero or one project",
        ));
    }
    let project = projects.first().copied().unwrap_or_default();
    let key = AppKey::new(app_namespace(call), name);
    let mut store = shared.store.lock();
    enforce_app(shared, &store, &session, "get", project, &key)?;
    let refresh = match call.param("refresh") {
        Some("hard") => Some(store.outcomes(name).hard_refresh),
        Some(r) if !r.is_empty() => Some(store.outcomes(name).refresh),
        _ => None,
    };
    if let Some(outcome) = refresh {
        let error = store.outcomes(name).comparison_error;
        let changed = store.get_mut(&key).is_some_and(|app| controller::refresh(app, outcome, error.as_deref(), Utc::now()));
        if changed {
            store.touch(&key);
        }
    }
    store.get(&key).cloned().ok_or_else(|| ApiError::app_not_found(name))
}

/// `POST /api/v1/applications/{name}/sync`, checks in the order of docs/argo-cd-behaviour.md §1.7.
fn sync(shared: &Arc<Shared>, call: &Call, name: &str) -> Result<Value, ApiError> {
    // The gateway decodes the body before the gRPC auth interceptor runs.
    let request = sync_request::decode(&call.body)?;
    let session = authenticate(shared, call)?;
    let namespace = match request.app_namespace.as_str() {
        "" => CONTROL_PLANE_NAMESPACE,
        ns => ns,
    };
    let key = AppKey::new(namespace, name);
    let mut store = shared.store.lock();
    enforce_app(shared, &store, &session, "get", &request.project, &key)?;
    let app = store.get(&key).ok_or_else(|| ApiError::app_not_found(name))?;
    let project = app_project(app).to_string();
    let object = rbac::rbac_name(&project, namespace, name);
    let policies = &shared.config.policies;

    let blocked = shared.sync_windows.lock().iter().any(|w| w.active && w.project == project && !w.manual_sync);
    if blocked {
        return Err(ApiError::new(GrpcCode::PermissionDenied, "cannot sync: blocked by sync window"));
    }
    if !rbac::allowed(policies, &session.subject, "sync", &project) {
        return Err(rbac::enforce_err(&session, "sync", &object));
    }
    let automated = controller::is_automated(app);
    if request.manifests.is_some() {
        if !rbac::allowed(policies, &session.subject, "override", &project) {
            return Err(rbac::enforce_err(&session, "override", &object));
        }
        if automated && !request.dry_run {
            return Err(ApiError::new(
                GrpcCode::FailedPrecondition,
                "cannot use local sync when Automatic Sync Policy is enabled unless for dry run",
            ));
        }
    }
    if lookup(app, "metadata.deletionTimestamp").is_some_and(|t| !t.is_null()) {
        return Err(ApiError::new(GrpcCode::FailedPrecondition, "application is deleting"));
    }
    let target = controller::target_revision(app);
    if automated && !request.dry_run && !request.revision.is_empty() && request.revision != target {
        let declared = str_at(app, "spec.source.targetRevision").unwrap_or_default();
        return Err(ApiError::new(
            GrpcCode::FailedPrecondition,
            format!("Cannot sync to {}: auto-sync currently set to {declared}", request.revision),
        ));
    }
    if app.get("operation").is_some_and(|o| !o.is_null()) {
        return Err(ApiError::new(GrpcCode::FailedPrecondition, "another operation is already in progress"));
    }

    let operation = controller::build_operation(app, &request, &session.subject);
    let outcome = store.outcomes(name).sync;
    let now = Utc::now();
    let Some(app) = store.get_mut(&key) else { return Err(ApiError::app_not_found(name)) };
    if let Value::Object(map) = app {
        map.insert("operation".into(), operation);
    }
    // A retry strategy field this release's types lack is gone from the stored operation.
    shared.behaviour.stored(app);
    store.touch(&key);
    let answer = store.get(&key).cloned().unwrap_or(Value::Null);
    if store.take_lost_sync(name) {
        // Accepted and lost: the answer carries the operation, the app keeps none, and the
        // controller never starts it (argoproj/argo-cd#27133).
        if let Some(Value::Object(map)) = store.get_mut(&key) {
            map.remove("operation");
        }
        store.touch(&key);
        return Ok(answer);
    }

    // The controller picks the operation up at once; the answer above is the app as the API
    // server wrote it, before that (no Running operationState yet), as on the wire.
    if let Some(app) = store.get_mut(&key) {
        controller::begin_operation(app, now);
    }
    store.touch(&key);
    let owner = store.claim(&key);
    drop(store);

    Shared::run_sync(shared, key, owner, outcome);
    Ok(answer)
}

/// `DELETE /api/v1/applications/{name}/operation` (docs/argo-cd-behaviour.md §1.8).
fn terminate(shared: &Arc<Shared>, call: &Call, name: &str) -> Result<Value, ApiError> {
    let session = authenticate(shared, call)?;
    let key = AppKey::new(app_namespace(call), name);
    let project = call.param("project").unwrap_or_default();
    let mut store = shared.store.lock();
    enforce_app(shared, &store, &session, "sync", project, &key)?;
    let running = store.get(&key).is_some_and(controller::has_operation);
    if !running {
        return Err(ApiError::new(GrpcCode::InvalidArgument, "Unable to terminate operation. No operation is in progress"));
    }
    if let Some(app) = store.get_mut(&key) {
        controller::mark_terminating(app);
    }
    store.touch(&key);
    let owner = store.claim(&key);
    drop(store);

    // Terminating takes the controller a moment: a third of an operation's run.
    Shared::later(shared, shared.config.operation_duration / 3, key, owner, |app| {
        controller::finish_termination(app, Utc::now());
        true
    });
    Ok(json!({}))
}

/// Kinds with a health check built into Argo CD; other resources carry no health in the tree.
const KINDS_WITH_HEALTH: &[&str] = &[
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "Pod",
    "Service",
    "Ingress",
    "PersistentVolumeClaim",
    "Job",
    "APIService",
    "HorizontalPodAutoscaler",
    "Rollout",
    "Application",
];

/// `GET /api/v1/applications/{applicationName}/resource-tree`: one node per managed resource.
/// Nodes carry the ResourceRef fields inline, as Go's embedded struct puts them on the wire.
/// Health comes from the resource's own `health` or, as the tree keeps it when the app does not
/// (resourceHealthSource appTree), from the app's health for kinds that have a health check.
fn resource_tree(shared: &Shared, call: &Call, name: &str) -> Result<Value, ApiError> {
    let session = authenticate(shared, call)?;
    let key = AppKey::new(app_namespace(call), name);
    let project = call.param("project").unwrap_or_default();
    let store = shared.store.lock();
    enforce_app(shared, &store, &session, "get", project, &key)?;
    let app = store.get(&key).ok_or_else(|| ApiError::app_not_found(name))?;
    let app_health = str_at(app, "status.health.status");
    let resources = lookup(app, "status.resources").and_then(Value::as_array);
    let nodes: Vec<Value> = resources
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(|r| {
            let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
            let mut node = Map::new();
            for k in ["group", "version", "kind", "namespace", "name"] {
                if !text(k).is_empty() {
                    node.insert(k.into(), json!(text(k)));
                }
            }
            let seed = format!("{}/{}/{}/{}/{}", key.name, text("group"), text("kind"), text("namespace"), text("name"));
            node.insert("uid".into(), json!(crate::ids::uid(&seed)));
            let health = match (r.get("health"), app_health) {
                (Some(h), _) if h.is_object() => Some(h.clone()),
                (_, Some(status)) if KINDS_WITH_HEALTH.contains(&text("kind")) => Some(json!({"status": status})),
                _ => None,
            };
            if let Some(health) = health {
                node.insert("health".into(), health);
            }
            Value::Object(node)
        })
        .collect();
    let mut tree = Map::new();
    if !nodes.is_empty() {
        tree.insert("nodes".into(), Value::Array(nodes));
    }
    Ok(Value::Object(tree))
}

/// `GET /api/v1/applications/{name}/syncwindows`. Empty window lists are omitted (`omitempty`).
fn sync_windows(shared: &Shared, call: &Call, name: &str) -> Result<Value, ApiError> {
    let session = authenticate(shared, call)?;
    let key = AppKey::new(app_namespace(call), name);
    let project = call.param("project").unwrap_or_default();
    let store = shared.store.lock();
    enforce_app(shared, &store, &session, "get", project, &key)?;
    let app = store.get(&key).ok_or_else(|| ApiError::app_not_found(name))?;
    let rules: Vec<_> = shared.sync_windows.lock().iter().filter(|w| w.active && w.project == app_project(app)).cloned().collect();
    // server/application/application.go (:2932 at v3.5.1) copies four fields of each window.
    let windows: Vec<Value> = rules
        .iter()
        .map(|w| {
            let full = w.to_json(&shared.behaviour);
            json!({"kind": full["kind"], "schedule": full["schedule"], "duration": full["duration"], "manualSync": full["manualSync"]})
        })
        .collect();
    let mut answer = Map::new();
    if !windows.is_empty() {
        answer.insert("activeWindows".into(), Value::Array(windows.clone()));
        answer.insert("assignedWindows".into(), Value::Array(windows));
    }
    answer.insert("canSync".into(), json!(rules.iter().all(|w| w.manual_sync)));
    Ok(Value::Object(answer))
}

/// The AppProjects there are: every project an app names or a window belongs to, and `default`.
fn project_names(shared: &Shared) -> std::collections::BTreeSet<String> {
    let mut names: std::collections::BTreeSet<String> = shared.store.lock().apps().map(|app| app_project(app).to_owned()).collect();
    names.extend(shared.sync_windows.lock().iter().map(|w| w.project.clone()));
    names.insert("default".into());
    names.remove("");
    names
}

/// `GET /api/v1/projects` (server/project/project.go `List`, :287 at v3.2.0): the AppProjects the
/// caller may `get` (`projects, get, <name>`), the others silently left out. Beyond the name only
/// `spec.syncWindows` is modelled (`omitempty`).
fn projects(shared: &Shared, call: &Call) -> Result<Value, ApiError> {
    let session = authenticate(shared, call)?;
    let windows = shared.sync_windows.lock().clone();
    let items: Vec<Value> = project_names(shared)
        .into_iter()
        .filter(|name| rbac::allowed_on(&shared.config.policies, &session.subject, "projects", "get", name))
        .map(|name| {
            let mut spec = json!({"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}]});
            let own: Vec<Value> = windows.iter().filter(|w| w.project == name).map(|w| w.to_json(&shared.behaviour)).collect();
            if !own.is_empty() {
                spec["syncWindows"] = Value::Array(own);
            }
            json!({"metadata": {"name": name, "namespace": CONTROL_PLANE_NAMESPACE}, "spec": spec})
        })
        .collect();
    Ok(json!({"metadata": {}, "items": items}))
}

/// `GET /api/v1/projects/{name}/syncwindows` (server/project/project.go `GetSyncWindowsState`,
/// :520 at v3.2.0): the project's windows active now, `[]` when none. `projects, get` is
/// enforced first, with the detailed denial; then a missing project is a 404.
fn project_sync_windows(shared: &Shared, call: &Call, name: &str) -> Result<Value, ApiError> {
    let session = authenticate(shared, call)?;
    if !rbac::allowed_on(&shared.config.policies, &session.subject, "projects", "get", name) {
        return Err(ApiError::new(
            GrpcCode::PermissionDenied,
            format!(
                "permission denied: projects, get, {name}, sub: {}, iat: {}",
                session.subject,
                session.issued_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            ),
        ));
    }
    if !project_names(shared).contains(name) {
        return Err(ApiError::new(GrpcCode::NotFound, format!("appprojects.argoproj.io \"{name}\" not found")));
    }
    let active: Vec<Value> =
        shared.sync_windows.lock().iter().filter(|w| w.active && w.project == name).map(|w| w.to_json(&shared.behaviour)).collect();
    Ok(json!({ "windows": active }))
}

/// `GET /api/v1/applications/{name}/revisions/{revision}/metadata`: the commit's metadata as the
/// repo-server reads it (`util/git/client.go` `RevisionMetadata`), from what the test set
/// ([`crate::ArgoSim::set_revision_metadata`]); a revision the repository does not have is an
/// error (the simulator answers 404).
fn revision_metadata(shared: &Shared, call: &Call, name: &str, revision: &str) -> Result<Value, ApiError> {
    let session = authenticate(shared, call)?;
    let key = AppKey::new(app_namespace(call), name);
    let project = call.param("project").unwrap_or_default();
    let store = shared.store.lock();
    enforce_app(shared, &store, &session, "get", project, &key)?;
    store.get(&key).ok_or_else(|| ApiError::app_not_found(name))?;
    store
        .revision_metadata(revision)
        .ok_or_else(|| ApiError::new(GrpcCode::NotFound, format!("unable to resolve revision {revision}: not found")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_route_to_endpoints() {
        assert_eq!(route("/api/version"), Some(Route::Version));
        assert_eq!(route("/api/v1/applications"), Some(Route::List));
        assert_eq!(route("/api/v1/applications/web"), Some(Route::App("web")));
        assert_eq!(route("/api/v1/applications/web/sync"), Some(Route::Sync("web")));
        assert_eq!(route("/api/v1/applications/web/operation"), Some(Route::Operation("web")));
        assert_eq!(route("/api/v1/applications/web/resource-tree"), Some(Route::ResourceTree("web")));
        assert_eq!(route("/api/v1/applications/web/syncwindows"), Some(Route::SyncWindows("web")));
        assert_eq!(route("/api/v1/projects"), Some(Route::Projects));
        assert_eq!(route("/api/v1/projects/team-a/syncwindows"), Some(Route::ProjectSyncWindows("team-a")));
        assert_eq!(route("/api/v1/projects/team-a/events"), None);
        assert_eq!(route("/api/v1/projects//syncwindows"), None);
        assert_eq!(route("/api/v1/applications/"), None);
        assert_eq!(route("/api/v1/applications/web/sync/x"), None);
        assert_eq!(route("/api/v1/applicationsets"), None);
    }
}
