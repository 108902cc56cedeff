//! The argocd-notifications configuration in `infra/argocd-notifications/`, rendered the way
//! argocd-notifications renders it.
//!
//! Every template in the ConfigMap is executed by `gtmpl` (a Rust implementation of Go's
//! text/template) with the Sprig functions the templates call (`support/gotemplate.rs`, after
//! Sprig's Go source), against the sample Applications in `events/apps/` and against deliberately sparse ones.
//! A differential test executes the same templates with real Go and Sprig (`tests/go/notifications-render`,
//! the function map of notifications-engine) and requires the same bytes, so the Rust copy cannot
//! drift from Go unseen.
//! Each render must be an event that `NotificationEvent::parse` accepts and that repeats the app's
//! fields; for every sample body in `events/webhook/` the render must be exactly that body, so the
//! template and the fixtures cannot drift apart. The triggers, services, subscriptions and the
//! RBAC patch are checked for consistency too.
//!
//! [`render_event`] (with [`notifications_config`] and [`Route`]) is the reusable part: it turns an
//! Application JSON into the body a destination receives, for tests that feed bodies onward.
//!
//! YAML is read with `serde_norway`: `serde_yaml` is archived (its last release is 0.9.34), and
//! `serde_norway` is its maintained fork with the same API. Like the go-yaml stack Argo CD reads
//! ConfigMaps with (itself a port of libyaml), it parses with libyaml, so block scalars, folded
//! scalars and the anchor/alias pair that shares one body between the two routes are read the same
//! way Argo CD reads them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use medic_core::NotificationEvent;
use medic_core::event::MAX_EVENT_BYTES;
use serde::Deserialize;
use serde_json::{Value as Json, json};

use crate::support::gotemplate::{GoRenderer, render_go_template};

const NOTIFICATIONS_CM: &str = "infra/argocd-notifications/argocd-notifications-cm.yaml";
const NOTIFICATIONS_SECRET: &str = "infra/argocd-notifications/argocd-notifications-secret.example.yaml";
const ARGOCD_CM: &str = "infra/argocd-rbac/argocd-cm.yaml";
const RBAC_CM: &str = "infra/argocd-rbac/argocd-rbac-cm.yaml";

/// Our ConfigMap keys are `argo-medic-<trigger>`; the body's `trigger` field is `<trigger>`.
const PREFIX: &str = "argo-medic-";
/// The byte limit the templates cut the operation message to (`trunc 2000`).
const MESSAGE_LIMIT: usize = 2000;
/// What the samples in events/webhook/ were rendered with.
const ARGOCD_URL: &str = "https://argocd.example.com";

fn repo_path(rel: &str) -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test")).join("..").join(rel)
}

fn read(rel: &str) -> String {
    let path = repo_path(rel);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn read_json(path: &Path) -> Json {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `*.json` files of a folder under `events/`, by file stem, sorted.
fn json_files(folder: &str) -> BTreeMap<String, Json> {
    let dir = repo_path(folder);
    let mut files = BTreeMap::new();
    for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.extension().is_some_and(|e| e == "json") {
            let stem = path.file_stem().expect("file name").to_string_lossy().into_owned();
            files.insert(stem, read_json(&path));
        }
    }
    assert!(!files.is_empty(), "no JSON files in {folder}");
    files
}

fn sample_apps() -> BTreeMap<String, Json> {
    json_files("events/apps")
}

// ---------------------------------------------------------------------------------------------
// The ConfigMap, read as notifications-engine reads it (pkg/api/config.go).
// ---------------------------------------------------------------------------------------------

/// A Kubernetes object with string data (a ConfigMap, or a Secret written with `stringData`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KubeObject {
    api_version: String,
    kind: String,
    metadata: ObjectMeta,
    #[serde(default)]
    data: BTreeMap<String, String>,
    #[serde(default)]
    string_data: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct ObjectMeta {
    name: String,
}

fn kube_object(rel: &str) -> KubeObject {
    serde_norway::from_str(&read(rel)).unwrap_or_else(|e| panic!("{rel} is not a valid Kubernetes object: {e}"))
}

/// A `template.<name>` value: the parts of notifications-engine's `services.Notification` that
/// the webhook and awssqs services read. Unknown fields are refused, so a misspelt key fails here
/// instead of being ignored by Argo CD.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NotificationTemplate {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    webhook: BTreeMap<String, WebhookTemplate>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookTemplate {
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    path: Option<String>,
    body: String,
}

/// One condition of a `trigger.<name>` value (notifications-engine `triggers.Condition`); here
/// `description` is required as well.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Condition {
    when: String,
    #[serde(default)]
    once_per: Option<String>,
    send: Vec<String>,
    description: String,
}

/// An entry of the global `subscriptions` list.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Subscription {
    recipients: Vec<String>,
    #[serde(default)]
    triggers: Vec<String>,
    #[serde(default)]
    selector: Option<String>,
}

/// argocd-notifications-cm, split into its parts.
pub(crate) struct NotificationsConfig {
    /// The `context` key: template variable `.context`, before `notificationType` is added.
    context: serde_json::Map<String, Json>,
    templates: BTreeMap<String, NotificationTemplate>,
    triggers: BTreeMap<String, Vec<Condition>>,
    /// `service.<type>.<name>` by type, then name, with the options as JSON.
    services: BTreeMap<String, BTreeMap<String, Json>>,
    default_triggers: BTreeMap<String, Vec<String>>,
    subscriptions: Vec<Subscription>,
}

impl NotificationsConfig {
    fn services_of(&self, kind: &str) -> BTreeSet<&str> {
        self.services.get(kind).map(|s| s.keys().map(String::as_str).collect()).unwrap_or_default()
    }

    fn all_services(&self) -> BTreeSet<&str> {
        self.services.values().flat_map(|s| s.keys().map(String::as_str)).collect()
    }

    /// Every route a subscription can take: each configured webhook and awssqs service.
    pub(crate) fn routes(&self) -> Vec<Route<'_>> {
        let webhooks = self.services_of("webhook").into_iter().map(Route::Webhook);
        webhooks.chain(self.services_of("awssqs").into_iter().map(Route::AwsSqs)).collect()
    }
}

fn parse_value<T: for<'de> Deserialize<'de>>(key: &str, text: &str) -> T {
    serde_norway::from_str(text).unwrap_or_else(|e| panic!("{NOTIFICATIONS_CM}: `{key}` is not valid: {e}"))
}

fn parse_notifications_config() -> NotificationsConfig {
    let cm = kube_object(NOTIFICATIONS_CM);
    assert_eq!((cm.api_version.as_str(), cm.kind.as_str()), ("v1", "ConfigMap"));
    assert_eq!(cm.metadata.name, "argocd-notifications-cm");
    let mut cfg = NotificationsConfig {
        context: serde_json::Map::new(),
        templates: BTreeMap::new(),
        triggers: BTreeMap::new(),
        services: BTreeMap::new(),
        default_triggers: BTreeMap::new(),
        subscriptions: Vec::new(),
    };
    for (key, value) in &cm.data {
        if key == "context" {
            cfg.context = parse_value(key, value);
        } else if key == "subscriptions" {
            cfg.subscriptions = parse_value(key, value);
        } else if let Some(name) = key.strip_prefix("template.") {
            cfg.templates.insert(name.to_owned(), parse_value(key, value));
        } else if let Some(name) = key.strip_prefix("trigger.") {
            cfg.triggers.insert(name.to_owned(), parse_value(key, value));
        } else if let Some(name) = key.strip_prefix("defaultTriggers.") {
            cfg.default_triggers.insert(name.to_owned(), parse_value(key, value));
        } else if key.starts_with("service.") {
            // `service.<type>.<name>`, or `service.<type>` named after its type.
            let parts: Vec<&str> = key.split('.').collect();
            let (kind, name) = match parts[..] {
                [_, kind, name] => (kind, name),
                [_, kind] => (kind, kind),
                _ => panic!("invalid service key `{key}`"),
            };
            cfg.services.entry(kind.to_owned()).or_default().insert(name.to_owned(), parse_value(key, value));
        } else {
            panic!("{NOTIFICATIONS_CM}: `{key}` is not a key argocd-notifications reads");
        }
    }
    cfg
}

/// The parsed ConfigMap, read once per test run.
pub(crate) fn notifications_config() -> &'static NotificationsConfig {
    static CONFIG: OnceLock<NotificationsConfig> = OnceLock::new();
    CONFIG.get_or_init(parse_notifications_config)
}

// ---------------------------------------------------------------------------------------------
// Rendering.
// ---------------------------------------------------------------------------------------------

/// The service a notification goes to, which decides what of the template it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route<'a> {
    /// `service.webhook.<name>`: sends `webhook.<name>.body`, or `message` (with GET) if the
    /// template has no section for it.
    Webhook(&'a str),
    /// `service.awssqs.<name>`: sends `message`.
    AwsSqs(&'a str),
}

impl Route<'_> {
    pub(crate) fn service(&self) -> &str {
        match self {
            Route::Webhook(name) | Route::AwsSqs(name) => name,
        }
    }
}

/// The template variables argocd-notifications passes: `.app` and `.context` (the ConfigMap's
/// `context` plus `notificationType`, the destination's service name).
fn template_vars(cfg: &NotificationsConfig, service: &str, app: &Json) -> Json {
    let mut context = cfg.context.clone();
    context.insert("notificationType".into(), service.into());
    json!({ "app": app, "context": context })
}

/// Renders template `name` against `app` for a destination on `route`: the body that destination
/// receives.
pub(crate) fn render_event(cfg: &NotificationsConfig, name: &str, route: Route<'_>, app: &Json) -> Result<String, String> {
    let (text, vars) = render_input(cfg, name, route, app)?;
    render_go_template(text, &vars).map_err(|e| format!("template `{name}` on {route:?}: {e}"))
}

/// What argocd-notifications executes for template `name` on `route`: the template text the
/// service sends and the variables it executes it with.
fn render_input<'c>(cfg: &'c NotificationsConfig, name: &str, route: Route<'_>, app: &Json) -> Result<(&'c str, Json), String> {
    let template = cfg.templates.get(name).ok_or_else(|| format!("no template `{name}`"))?;
    let text = match route {
        Route::Webhook(service) => template.webhook.get(service).map(|w| w.body.as_str()).or(template.message.as_deref()),
        Route::AwsSqs(_) => template.message.as_deref(),
    };
    let text = text.ok_or_else(|| format!("template `{name}` has nothing to send on {route:?}"))?;
    Ok((text, template_vars(cfg, route.service(), app)))
}

// ---------------------------------------------------------------------------------------------
// Expectations derived from the app, independently of the template.
// ---------------------------------------------------------------------------------------------

fn time(value: &Json) -> Option<DateTime<Utc>> {
    value.as_str().map(|s| DateTime::parse_from_rfc3339(s).unwrap_or_else(|e| panic!("`{s}`: {e}")).with_timezone(&Utc))
}

fn string(value: &Json) -> Option<String> {
    value.as_str().map(str::to_owned)
}

/// The operation message the body should carry: cut to the limit, and null when absent or empty.
fn expected_message(app: &Json) -> Option<String> {
    let message = app["status"]["operationState"]["message"].as_str().filter(|m| !m.is_empty())?;
    let cut = &message.as_bytes()[..message.len().min(MESSAGE_LIMIT)];
    Some(String::from_utf8_lossy(cut).into_owned())
}

/// Where the event differs from what the app says, one line per field.
fn mismatches(event: &NotificationEvent, app: &Json, trigger: &str) -> Vec<String> {
    let (meta, status) = (&app["metadata"], &app["status"]);
    let op = &status["operationState"];
    let mut wrong = Vec::new();
    let mut check = |field: &str, got: String, want: String| {
        if got != want {
            wrong.push(format!("{field}: got {got}, want {want}"));
        }
    };
    check("schemaVersion", event.schema_version.to_string(), "1".into());
    check("trigger", event.trigger.to_string(), trigger.into());
    check("app.name", format!("{:?}", Some(&event.app.name)), format!("{:?}", meta["name"].as_str()));
    check("app.namespace", format!("{:?}", Some(&event.app.namespace)), format!("{:?}", meta["namespace"].as_str()));
    check("app.project", format!("{:?}", event.app.project), format!("{:?}", string(&app["spec"]["project"])));
    let sync = event.sync.as_ref().map(|s| (s.status.clone(), s.revision.clone()));
    check("sync", format!("{sync:?}"), format!("{:?}", Some((string(&status["sync"]["status"]), string(&status["sync"]["revision"])))));
    let health = event.health.as_ref().map(|h| h.status.clone());
    check("health", format!("{health:?}"), format!("{:?}", Some(string(&status["health"]["status"]))));
    let operation = event.operation.as_ref().map(|o| (o.phase.clone(), o.started_at, o.finished_at, o.message.clone()));
    let want_operation = op
        .as_object()
        .filter(|o| !o.is_empty())
        .map(|_| (string(&op["phase"]), time(&op["startedAt"]), time(&op["finishedAt"]), expected_message(app)));
    check("operation", format!("{operation:?}"), format!("{want_operation:?}"));
    check("reconciledAt", format!("{:?}", event.reconciled_at), format!("{:?}", time(&status["reconciledAt"])));
    check("resourceVersion", format!("{:?}", event.resource_version), format!("{:?}", string(&meta["resourceVersion"])));
    check("argocdUrl", format!("{:?}", event.argocd_url), format!("{:?}", Some(ARGOCD_URL)));
    // The sources' repoURLs (spec.sources, then spec.source: "" when there is none) and the
    // destination, which the worker reads a fleet outage's scopes from (`NotificationEvent::down_scopes`).
    let spec = &app["spec"];
    let mut urls: Vec<String> =
        spec["sources"].as_array().into_iter().flatten().map(|s| s["repoURL"].as_str().unwrap_or("").to_owned()).collect();
    urls.push(spec["source"]["repoURL"].as_str().unwrap_or("").to_owned());
    let dest = |k: &str| Some(spec["destination"][k].as_str().unwrap_or("").to_owned());
    let source = event.source.as_ref().map(|s| (s.repo_urls.clone(), s.destination.as_ref().map(|d| (d.server.clone(), d.name.clone()))));
    check("source", format!("{source:?}"), format!("{:?}", Some((urls, Some((dest("server"), dest("name")))))));
    wrong
}

/// The body trigger a template renders: its name without our prefix.
fn trigger_of(template: &str) -> &str {
    template.strip_prefix(PREFIX).unwrap_or_else(|| panic!("template `{template}` is not named {PREFIX}<trigger>"))
}

/// Renders every template on every route against `app`, parses each body and compares it with
/// the app; returns the failures.
fn check_all_renders(label: &str, app: &Json) -> Vec<String> {
    let cfg = notifications_config();
    let mut failures = Vec::new();
    for name in cfg.templates.keys() {
        for route in cfg.routes() {
            let body = match render_event(cfg, name, route, app) {
                Ok(body) => body,
                Err(e) => {
                    failures.push(format!("{label}: {e}"));
                    continue;
                }
            };
            match NotificationEvent::parse(body.as_bytes()) {
                Err(e) => failures.push(format!("{label}: {name} on {route:?} rendered an invalid event ({e}):\n{body}")),
                Ok(event) => {
                    let wrong = mismatches(&event, app, trigger_of(name));
                    if !wrong.is_empty() {
                        failures.push(format!("{label}: {name} on {route:?}: {}", wrong.join("; ")));
                    }
                }
            }
        }
    }
    failures
}

// ---------------------------------------------------------------------------------------------
// Tests.
// ---------------------------------------------------------------------------------------------

#[test]
fn every_template_renders_a_valid_event_carrying_the_apps_fields_for_every_sample_app() {
    let cfg = notifications_config();
    assert!(cfg.templates.len() >= 6, "expected a template per trigger, found {:?}", cfg.templates.keys());
    assert!(!cfg.services_of("webhook").is_empty() && !cfg.services_of("awssqs").is_empty(), "both routes are configured");
    let failures: Vec<String> = sample_apps().iter().flat_map(|(name, app)| check_all_renders(name, app)).collect();
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn each_webhook_sample_body_is_byte_for_byte_what_its_triggers_template_renders_for_the_app_of_the_same_name() {
    let cfg = notifications_config();
    let apps = sample_apps();
    let mut failures = Vec::new();
    for (name, sample) in json_files("events/webhook") {
        let trigger = sample["trigger"].as_str().unwrap_or_else(|| panic!("events/webhook/{name}.json has no trigger"));
        let template = format!("{PREFIX}{trigger}");
        let app = apps.get(&name).unwrap_or_else(|| panic!("events/webhook/{name}.json has no events/apps/{name}.json"));
        let file = read(&format!("events/webhook/{name}.json"));
        for route in cfg.routes() {
            match render_event(cfg, &template, route, app) {
                Err(e) => failures.push(format!("{name}: {e}")),
                // The sample is exactly what argocd-notifications sends (json.Marshal writes <, > and &
                // as \u003c, \u003e and \u0026; a sample must too).
                Ok(body) if body == file => {}
                Ok(body) => {
                    let same_json = serde_json::from_str::<Json>(&body).is_ok_and(|rendered| rendered == sample);
                    failures.push(format!(
                        "{name} on {route:?} (same JSON value: {same_json}): rendered\n{body}\nbut events/webhook/{name}.json is\n{file}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Applications missing what a template might walk through: a new app, an app that never synced,
/// an app whose health has no status, a running operation (no finishedAt, no message).
fn sparse_apps() -> Vec<(&'static str, Json)> {
    let meta = json!({"name": "fresh", "namespace": "argocd", "resourceVersion": "7"});
    vec![
        ("no status at all", json!({"metadata": meta, "spec": {"project": "default"}})),
        ("no spec and no status", json!({"metadata": meta})),
        (
            "status without operationState",
            json!({"metadata": meta, "spec": {"project": "default"}, "status": {"sync": {"status": "OutOfSync"}}}),
        ),
        (
            "health without status, operation without finishedAt or message",
            json!({"metadata": meta, "spec": {"project": "default"}, "status": {
                "health": {}, "sync": {"status": "Synced", "revision": "abc123"},
                "operationState": {"phase": "Running", "startedAt": "2026-11-01T12:00:00Z"}}}),
        ),
        ("empty operation message", json!({"metadata": meta, "status": {"operationState": {"phase": "Failed", "message": ""}}})),
        (
            "several sources, a destination by name",
            json!({"metadata": meta, "spec": {"project": "default", "destination": {"name": "prod-eu"}, "sources": [
                {"repoURL": "https://git.example.com/platform/values.git", "ref": "values"},
                {"repoURL": "oci://registry.example.com/charts", "chart": "web", "targetRevision": "1.2.3"},
                {"chart": "no-repo-url"}]},
                "status": {"sync": {"status": "Unknown"}}}),
        ),
    ]
}

#[test]
fn apps_without_status_operation_or_health_status_still_render_valid_events_with_nulls() {
    let failures: Vec<String> = sparse_apps().iter().flat_map(|(label, app)| check_all_renders(label, app)).collect();
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));

    // The nulls themselves, spelled out for the two extremes.
    let cfg = notifications_config();
    let apps = sparse_apps();
    let body = render_event(cfg, "argo-medic-on-sync-failed", Route::Webhook("argo-medic"), &apps[1].1).expect("renders");
    let rendered: Json = serde_json::from_str(&body).expect("JSON");
    assert_eq!(rendered["app"], json!({"name": "fresh", "namespace": "argocd", "project": null}));
    assert_eq!(rendered["sync"], json!({"status": null, "revision": null}));
    assert_eq!(rendered["health"], json!({"status": null}));
    assert_eq!((&rendered["operation"], &rendered["reconciledAt"]), (&Json::Null, &Json::Null));
    let body = render_event(cfg, "argo-medic-on-sync-running", Route::AwsSqs("argo-medic-sqs"), &apps[3].1).expect("renders");
    let rendered: Json = serde_json::from_str(&body).expect("JSON");
    assert_eq!(rendered["health"], json!({"status": null}));
    assert_eq!(
        rendered["operation"],
        json!({"phase": "Running", "startedAt": "2026-11-01T12:00:00Z", "finishedAt": null, "message": null})
    );
}

#[test]
fn a_huge_operation_message_is_cut_to_2000_bytes_and_keeps_the_body_far_below_the_event_cap() {
    let cfg = notifications_config();
    let mut app = sample_apps().remove("sync-failed").expect("events/apps/sync-failed.json");
    // 2-byte characters and characters Go's json.Marshal escapes, then control characters that
    // JSON escapes as 6 bytes each: the worst case for the body's size.
    let tricky = format!("{}{}", "é<&>\"\\".repeat(400), "\u{1}".repeat(100_000));
    for message in ["x".repeat(100_000), tricky] {
        app["status"]["operationState"]["message"] = Json::String(message.clone());
        for route in cfg.routes() {
            let body = render_event(cfg, "argo-medic-on-sync-failed", route, &app).expect("renders");
            assert!(body.len() < MAX_EVENT_BYTES / 4, "a {}-byte body is too close to the {MAX_EVENT_BYTES}-byte cap", body.len());
            let event = NotificationEvent::parse(body.as_bytes()).expect("a valid event");
            let sent = event.operation.and_then(|o| o.message).expect("a message");
            assert_eq!(sent.len(), MESSAGE_LIMIT, "cut to {MESSAGE_LIMIT} bytes");
            assert!(message.starts_with(&sent), "the cut keeps the start of the message");
        }
    }
}

#[test]
fn the_webhook_and_sqs_routes_of_every_template_render_the_same_body() {
    let cfg = notifications_config();
    let webhooks = cfg.services_of("webhook");
    let mut apps: Vec<(String, Json)> = sample_apps().into_iter().collect();
    apps.extend(sparse_apps().into_iter().map(|(label, app)| (label.to_owned(), app)));
    for (name, template) in &cfg.templates {
        // A section for every webhook service, sending with POST (the default would be GET).
        assert_eq!(template.webhook.keys().map(String::as_str).collect::<BTreeSet<_>>(), webhooks, "{name}: webhook sections");
        for (service, section) in &template.webhook {
            assert_eq!(section.method.as_deref(), Some("POST"), "{name}: webhook.{service}.method");
            assert_eq!(section.path, None, "{name}: the service URL is the full ingest URL");
        }
        assert!(template.message.is_some(), "{name}: the awssqs route sends `message`");
        for (app_name, app) in &apps {
            let bodies: BTreeSet<String> =
                cfg.routes().into_iter().map(|route| render_event(cfg, name, route, app).expect("renders")).collect();
            assert_eq!(bodies.len(), 1, "{name} renders different bodies per route for {app_name}: {bodies:#?}");
        }
    }
}

#[test]
fn templates_differ_only_in_the_trigger_they_name() {
    let cfg = notifications_config();
    let mut shapes = BTreeMap::new();
    for (name, template) in &cfg.templates {
        let text = template.message.as_deref().expect("a message");
        let field = format!("\"trigger\": \"{}\"", trigger_of(name));
        assert_eq!(text.matches(&field).count(), 1, "{name} names its trigger once, as {field}");
        assert_eq!(text.matches("\"trigger\"").count(), 1, "{name} has one trigger field");
        shapes.entry(text.replace(&field, "\"trigger\": \"…\"")).or_insert_with(Vec::new).push(name.as_str());
    }
    assert_eq!(shapes.len(), 1, "templates differ beyond their trigger: {:#?}", shapes.values().collect::<Vec<_>>());
    // The triggers the templates name are exactly those ingest accepts.
    let named: BTreeSet<String> = cfg.templates.keys().map(|name| trigger_of(name).to_string()).collect();
    let accepted: BTreeSet<String> = medic_core::Trigger::NOTIFICATIONS.iter().map(|t| t.to_string()).collect();
    assert_eq!(named, accepted);
}

#[test]
fn every_trigger_has_a_description_a_condition_and_sends_its_own_existing_template() {
    let cfg = notifications_config();
    assert!(!cfg.triggers.is_empty(), "no triggers");
    let mut sent = BTreeSet::new();
    for (name, conditions) in &cfg.triggers {
        assert!(name.starts_with(PREFIX), "{name}: our triggers are prefixed, so they never replace the catalogue's");
        assert!(!conditions.is_empty(), "{name}: no condition");
        for c in conditions {
            assert!(!c.when.trim().is_empty(), "{name}: empty `when`");
            assert!(c.description.split_whitespace().count() >= 5, "{name}: describe the condition");
            assert_eq!(c.when.matches('(').count(), c.when.matches(')').count(), "{name}: unbalanced parentheses in `when`");
            assert_eq!(c.send, std::slice::from_ref(name), "{name}: sends the template of the same name");
            for template in &c.send {
                assert!(cfg.templates.contains_key(template), "{name} sends `{template}`, which is not defined");
                sent.insert(template.as_str());
            }
            if let Some(once_per) = &c.once_per {
                assert!(!once_per.trim().is_empty(), "{name}: empty oncePer");
                // Once per revision would lose a second failure of the same revision.
                assert!(!once_per.contains("revision"), "{name}: oncePer `{once_per}` fires once per revision");
            }
        }
    }
    let unsent: Vec<&String> = cfg.templates.keys().filter(|t| !sent.contains(t.as_str())).collect();
    assert!(unsent.is_empty(), "templates no trigger sends: {unsent:?}");
    let failed = &cfg.triggers["argo-medic-on-sync-failed"][0];
    assert_eq!(failed.once_per.as_deref(), Some("app.status.operationState.startedAt"), "one notification per failed operation");
}

#[test]
fn services_read_their_settings_from_keys_the_example_secret_defines() {
    let cfg = notifications_config();
    assert_eq!(cfg.services.keys().map(String::as_str).collect::<Vec<_>>(), ["awssqs", "webhook"]);

    let webhook = &cfg.services["webhook"]["argo-medic"];
    assert_eq!(webhook["url"], "$argo-medic-ingest-url");
    let headers: BTreeMap<&str, &str> = webhook["headers"]
        .as_array()
        .expect("headers")
        .iter()
        .map(|h| (h["name"].as_str().expect("header name"), h["value"].as_str().expect("header value")))
        .collect();
    assert_eq!(headers.get("Content-Type"), Some(&"application/json"));
    assert_eq!(headers.get("Authorization"), Some(&"Bearer $argo-medic-webhook-token"));

    // notifications-engine pkg/services/awssqs.go, AwsSqsOptions.
    let sqs = cfg.services["awssqs"]["argo-medic-sqs"].as_object().expect("awssqs options");
    let known = ["queue", "account", "region", "endpointUrl", "key", "secret"];
    for key in sqs.keys() {
        assert!(known.contains(&key.as_str()), "awssqs has no option `{key}` (it has {known:?})");
    }
    assert!(sqs.contains_key("queue") && sqs.contains_key("region"));
    assert_eq!(sqs.contains_key("key"), sqs.contains_key("secret"), "static credentials need both key and secret");

    // Every `$name` (pkg/api/config.go: `[$][\w-_]+`) must be a key of the secret, else it is sent literally.
    let secret = kube_object(NOTIFICATIONS_SECRET);
    assert_eq!((secret.kind.as_str(), secret.metadata.name.as_str()), ("Secret", "argocd-notifications-secret"));
    assert!(secret.data.is_empty(), "the example uses stringData only");
    let services_text = serde_json::to_string(&cfg.services).expect("JSON");
    let references: BTreeSet<&str> = services_text
        .match_indices('$')
        .map(|(i, _)| {
            let rest = &services_text[i + 1..];
            &rest[..rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')).unwrap_or(rest.len())]
        })
        .collect();
    assert!(references.len() >= 4, "found only {references:?}");
    for name in references {
        assert!(secret.string_data.contains_key(name), "`${name}` is not a key of {NOTIFICATIONS_SECRET}");
    }
    let token = &secret.string_data["argo-medic-webhook-token"];
    assert!(token.contains("REPLACE"), "the example holds placeholders, not secrets: {token}");
}

#[test]
fn subscriptions_and_default_triggers_name_configured_services_and_triggers_within_annotation_limits() {
    let cfg = notifications_config();
    let services = cfg.all_services();
    assert!(!cfg.subscriptions.is_empty(), "a global subscription");
    for s in &cfg.subscriptions {
        for recipient in &s.recipients {
            let service = recipient.split(':').next().expect("a service");
            assert!(services.contains(service), "subscription recipient `{recipient}` names no configured service");
        }
        assert!(!s.triggers.is_empty(), "name the triggers: an empty list means the global defaultTriggers");
        for t in &s.triggers {
            assert!(cfg.triggers.contains_key(t), "subscription trigger `{t}` is not defined");
        }
        assert!(s.selector.as_deref().is_none_or(|sel| !sel.trim().is_empty()), "an empty selector: leave it out instead");
    }
    for (service, triggers) in &cfg.default_triggers {
        assert!(services.contains(service.as_str()), "defaultTriggers.{service}: no such service");
        for t in triggers {
            assert!(cfg.triggers.contains_key(t), "defaultTriggers.{service}: `{t}` is not defined");
        }
        let global: BTreeSet<&String> = cfg.subscriptions[0].triggers.iter().collect();
        assert_eq!(triggers.iter().collect::<BTreeSet<_>>(), global, "defaultTriggers.{service} and the global subscription agree");
    }
    // `notifications.argoproj.io/subscribe.<trigger>.<service>`: the name part of an annotation
    // key is at most 63 characters, and the engine splits it on dots.
    for trigger in cfg.triggers.keys() {
        for service in &services {
            let name = format!("subscribe.{trigger}.{service}");
            assert!(name.len() <= 63, "annotation `notifications.argoproj.io/{name}` is too long");
            assert!(!trigger.contains('.') && !service.contains('.'), "{name}: no dots in trigger or service names");
        }
    }
}

#[test]
fn the_argo_medic_account_has_api_keys_only_and_may_only_get_and_sync_applications() {
    let argocd_cm = kube_object(ARGOCD_CM);
    assert_eq!(argocd_cm.metadata.name, "argocd-cm");
    assert_eq!(argocd_cm.data.get("accounts.argo-medic").map(String::as_str), Some("apiKey"), "API keys, no login");

    let rbac = kube_object(RBAC_CM);
    assert_eq!(rbac.metadata.name, "argocd-rbac-cm");
    assert_eq!(rbac.data.keys().collect::<Vec<_>>(), ["policy.argo-medic.csv"], "leave policy.csv and policy.default to the site");
    let (mut get, mut sync, mut bound) = (BTreeSet::new(), BTreeSet::new(), false);
    for line in rbac.data["policy.argo-medic.csv"].lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        match fields[..] {
            ["p", "role:argo-medic", "applications", "get", object, "allow"] => get.insert(object),
            ["p", "role:argo-medic", "applications", "sync", object, "allow"] => sync.insert(object),
            ["g", "argo-medic", "role:argo-medic"] => {
                bound = true;
                true
            }
            _ => panic!("policy line grants more than get/sync on applications: `{line}`"),
        };
    }
    assert!(bound, "the account is bound to role:argo-medic");
    assert!(!get.is_empty() && get == sync, "get and sync on the same projects: get {get:?}, sync {sync:?}");
    assert!(get.iter().all(|o| o.ends_with("/*") && !o.starts_with('*')), "scoped per project: {get:?}");
}

/// What the engine and the Sprig functions the templates use do at their edges, as Go's
/// text/template with Sprig does it: `(template, app, Some(output))`, or `None` where Go fails.
/// Checked against Go itself by the differential test, and against gtmpl below, except where
/// gtmpl is known to differ ([`GTMPL_DIFFERS`]).
fn engine_cases() -> Vec<(&'static str, Json, Option<&'static str>)> {
    let app = json!({"status": {"sync": {"status": "Synced"}, "nothing": null}});
    vec![
        // Walking on from a missing key gives no value (text/template's exec.go, evalField: an
        // invalid receiver is "treated as missing map key"), which toJson writes as null; walking
        // on from a key that holds null fails ("nil pointer evaluating interface {}.phase").
        // The templates use `dig` for either.
        ("{{ toJson .app.status.operationState.phase }}", app.clone(), Some("null")),
        ("{{ toJson .app.status.nothing.phase }}", app.clone(), None),
        ("{{ toJson .app.status.operationState }}", app.clone(), Some("null")),
        // dig: default where a key is missing, the value (even null) where present, error through a non-map.
        (r#"{{ dig "status" "operationState" "phase" "dflt" .app }}"#, app.clone(), Some("dflt")),
        (r#"{{ dig "status" "sync" "status" "dflt" .app }}"#, app.clone(), Some("Synced")),
        (r#"{{ dig "status" "nothing" "dflt" .app | toJson }}"#, app.clone(), Some("null")),
        (r#"{{ dig "status" "nothing" "x" "dflt" .app }}"#, app.clone(), None),
        (r#"{{ dig "status" .app }}"#, app.clone(), None),
        // dict, and `with` on an empty map takes the else branch.
        (r#"{{ with dict }}full{{ else }}empty{{ end }}"#, app.clone(), Some("empty")),
        (r#"{{ dict "a" 1 "b" | toJson }}"#, app.clone(), Some(r#"{"a":1,"b":""}"#)),
        // trunc counts bytes; a negative count keeps the tail; a missing value is an error, not "".
        (r#"{{ trunc 3 "abcdef" }}"#, app.clone(), Some("abc")),
        (r#"{{ trunc -2 "abcdef" }}"#, app.clone(), Some("ef")),
        (r#"{{ trunc 10 "abc" }}"#, app.clone(), Some("abc")),
        // A cut through a character: Go keeps the invalid byte; `toJson` writes it as an escape.
        (r#"{{ trunc 3 "éé" | toJson }}"#, app.clone(), Some(r#""é\ufffd""#)),
        (r#"{{ trunc 2 "€" | toJson }}"#, app.clone(), Some(r#""\ufffd\ufffd""#)),
        (r#"{{ trunc -1 "é" | toJson }}"#, app.clone(), Some(r#""\ufffd""#)),
        (r#"{{ trunc 3 .app.missing }}"#, app.clone(), None),
        // toJson is json.Marshal: sorted keys, HTML characters escaped, integers stay integers.
        (r#"{{ toJson .app }}"#, json!({"b": "<&>", "a": [1, true, 2.5]}), Some(r#"{"a":[1,true,2.5],"b":"\u003c\u0026\u003e"}"#)),
        // A function argocd-notifications does not have is a parse error.
        (r#"{{ env "HOME" }}"#, app, None),
    ]
}

/// The engine cases gtmpl renders otherwise than Go, found by the differential test: gtmpl
/// fails walking on from a missing key, where Go gives no value. The templates do not depend on
/// it (they use `dig`); the test below holds the list to what gtmpl does today, so a gtmpl that
/// changes is seen.
const GTMPL_DIFFERS: &[&str] = &["{{ toJson .app.status.operationState.phase }}"];

#[test]
fn the_sprig_functions_and_the_engine_behave_as_argocd_notifications_does() {
    for (text, app, want) in engine_cases() {
        let got = render_go_template(text, &json!({"app": app, "context": {}}));
        if GTMPL_DIFFERS.contains(&text) {
            assert!(got.is_err() && want.is_some(), "{text}: listed as a case where gtmpl fails and Go renders, gtmpl gave {got:?}");
            continue;
        }
        match want {
            Some(want) => assert_eq!(got.as_deref(), Ok(want), "{text}"),
            None => assert!(got.is_err(), "{text}: Go fails, gtmpl rendered {got:?}"),
        }
    }
}

/// Every app the template tests render: the samples, the sparse ones, and sync-failed with the
/// huge messages of the cut test (2-byte characters cut mid-way, escaped characters, control characters).
fn every_test_app() -> Vec<(String, Json)> {
    let mut apps: Vec<(String, Json)> = sample_apps().into_iter().collect();
    apps.extend(sparse_apps().into_iter().map(|(label, app)| (label.to_owned(), app)));
    let failed = sample_apps().remove("sync-failed").expect("events/apps/sync-failed.json");
    let messages = [
        ("huge message", "x".repeat(100_000)),
        ("tricky message", format!("{}{}", "é<&>\"\\".repeat(400), "\u{1}".repeat(3000))),
        // The 2,000-byte cut goes through a character: one invalid byte, then two.
        ("a cut 2-byte character", format!("x{}", "é".repeat(1500))),
        ("a cut 3-byte character", "€".repeat(1000)),
    ];
    for (label, message) in messages {
        let mut app = failed.clone();
        app["status"]["operationState"]["message"] = Json::String(message);
        apps.push((label.into(), app));
    }
    apps
}

#[test]
fn go_s_text_template_and_sprig_render_every_template_byte_for_byte_as_the_tests_do() {
    const CHECK: &str = "template.rs: the Go differential test";
    let Some(go) = GoRenderer::get(CHECK) else { return };
    let cfg = notifications_config();

    // The engine's edges: Go gives what the table says.
    let cases = engine_cases();
    let inputs: Vec<(String, String, Json)> =
        cases.iter().map(|(text, app, _)| ("case".to_owned(), (*text).to_owned(), json!({"app": app, "context": {}}))).collect();
    for ((text, _, want), got) in cases.iter().zip(go.render_all(&inputs)) {
        match want {
            Some(want) => assert_eq!(got.as_deref().map(String::from_utf8_lossy), Ok(std::borrow::Cow::Borrowed(*want)), "Go on {text}"),
            None => assert!(got.is_err(), "{text}: the table says Go fails, Go rendered {got:?}"),
        }
    }

    // Every template on every route for every app: Go's bytes are gtmpl's bytes.
    let mut labels = Vec::new();
    let mut inputs = Vec::new();
    for (app_name, app) in every_test_app() {
        for name in cfg.templates.keys() {
            for route in cfg.routes() {
                let (text, vars) = render_input(cfg, name, route, &app).expect("a template for the route");
                labels.push((app_name.clone(), name.clone(), route, render_event(cfg, name, route, &app)));
                inputs.push((name.clone(), text.to_owned(), vars));
            }
        }
    }
    assert!(inputs.len() >= 6 * 2 * 10, "{} renders", inputs.len());
    let mut failures = Vec::new();
    for ((app_name, name, route, rust), go) in labels.into_iter().zip(go.render_all(&inputs)) {
        match (rust, go) {
            (Ok(rust), Ok(go)) if rust.as_bytes() == go => {}
            (rust, go) => failures.push(format!(
                "{name} on {route:?} for {app_name}:\n  gtmpl: {rust:?}\n  Go:    {:?}",
                go.map(|b| String::from_utf8_lossy(&b).into_owned())
            )),
        }
    }
    assert!(failures.is_empty(), "{} render(s) differ between gtmpl and Go:\n{}", failures.len(), failures.join("\n"));

    // The sample bodies are what Go renders, byte for byte.
    let apps = sample_apps();
    let samples = json_files("events/webhook");
    let mut inputs = Vec::new();
    for (name, sample) in &samples {
        let template = format!("{PREFIX}{}", sample["trigger"].as_str().expect("a trigger"));
        for route in cfg.routes() {
            let (text, vars) = render_input(cfg, &template, route, &apps[name]).expect("a template for the route");
            inputs.push((format!("{name} on {route:?}"), text.to_owned(), vars));
        }
    }
    let files: Vec<String> =
        samples.keys().flat_map(|name| cfg.routes().into_iter().map(move |_| read(&format!("events/webhook/{name}.json")))).collect();
    for (((label, _, _), file), go) in inputs.iter().zip(files).zip(go.render_all(&inputs)) {
        assert_eq!(go.as_deref().map(String::from_utf8_lossy), Ok(std::borrow::Cow::Owned(file)), "{label}: Go's render is not the sample");
    }
}

#[tokio::test]
async fn every_render_is_accepted_by_the_ingest_function_and_by_the_worker_from_the_queue() {
    use medic_adapters::argocd::HttpArgoClient;
    use medic_adapters::config::ArgoSettings;
    use medic_ingest::{Ingest, IngestConfig, WebhookSecrets};

    let secret = "template-test-secret-0123456789";
    // /v1/events never calls Argo CD.
    let argo = HttpArgoClient::new(ArgoSettings::new("127.0.0.1:9", "unused")).unwrap();
    let ingest =
        Ingest::new(medic_stack::twins::MemoryState::default().intake(argo, IngestConfig::default()), WebhookSecrets::new(secret, None));
    let cfg = notifications_config();
    let mut accepted = 0;
    for (label, app) in sample_apps() {
        for name in cfg.templates.keys() {
            for route in cfg.routes() {
                let body = render_event(cfg, name, route, &app).unwrap();
                match route {
                    Route::Webhook(_) => {
                        let request = lambda_http::http::Request::builder()
                            .method("POST")
                            .uri("/v1/events")
                            .header("content-type", "application/json")
                            .header("authorization", format!("Bearer {secret}"))
                            .body(lambda_http::Body::from(body.clone()))
                            .unwrap();
                        let response = ingest.handle(request).await;
                        assert_eq!(response.status(), 202, "{label}: {name}: {:?}", response.body());
                        accepted += 1;
                    }
                    Route::AwsSqs(_) => {
                        let item = medic_core::event::WorkItem::parse(body.as_bytes(), chrono::Utc::now())
                            .unwrap_or_else(|e| panic!("{label}: {name}: {e}"));
                        assert_eq!(item.app.name, app["metadata"]["name"].as_str().unwrap());
                    }
                }
            }
        }
    }
    assert_eq!(ingest.queue.len(), accepted, "every accepted webhook is on the queue");
    assert_eq!(ingest.metrics.total("WebhookRejected"), 0.0);
}

/// The Argo CD simulator's argocd-notifications (what `medic check` is tested against) is the
/// ConfigMap Argo Medic ships, and every trigger the ConfigMap defines is one ingest accepts.
#[test]
fn the_simulated_notifications_are_the_shipped_configmap_s() {
    let cfg = notifications_config();
    let sim = medic_sim::Notifications::default();
    let services: BTreeSet<&str> = sim.services.iter().map(String::as_str).collect();
    assert_eq!(services, cfg.all_services(), "the simulator's services");
    let triggers: BTreeSet<&str> = sim.triggers.iter().map(String::as_str).collect();
    assert_eq!(triggers, cfg.triggers.keys().map(String::as_str).collect::<BTreeSet<_>>(), "the simulator's triggers");
    let accepted: BTreeSet<String> = medic_core::trigger::Trigger::NOTIFICATIONS.iter().map(|t| format!("argo-medic-{t}")).collect();
    assert_eq!(triggers, accepted.iter().map(String::as_str).collect::<BTreeSet<_>>(), "the triggers medic check asks for");
}
