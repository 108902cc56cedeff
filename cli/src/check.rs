//! `medic check`: the preflight of a deploy, in the manner of `flux check`. Each check reads what
//! Argo Medic itself will need through Argo CD's own endpoints, and every failure says what to do.
//!
//! - the token: a JWT whose `exp` is read locally (an automation token that expires in an outage
//!   is the worst time to learn it);
//! - Argo CD: reachable, over TLS (or knowingly not), answering as its API does (`/api/version`);
//! - RBAC: `/api/v1/account/can-i/applications/get|sync/<project>/*` for every project in scope
//!   (sync only where the policy may sync);
//! - argocd-notifications: the service of the chosen route and Argo Medic's triggers are configured
//!   (`/api/v1/notifications/services`, `/triggers`).

use std::time::Duration;

use chrono::{DateTime, Utc};
use medic_adapters::argocd::{HttpArgoClient, NotificationNames};
use medic_adapters::config::ArgoSettings;
use medic_core::ports::ArgoError;
use serde::Serialize;

/// How one check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

/// One check's result: what was checked, what was found, and what to do about a problem.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub check: &'static str,
    pub status: Status,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Finding {
    pub(crate) fn ok(check: &'static str, detail: impl Into<String>) -> Self {
        Self { check, status: Status::Ok, detail: detail.into(), fix: None }
    }
    pub(crate) fn warn(check: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { check, status: Status::Warn, detail: detail.into(), fix: Some(fix.into()) }
    }
    pub(crate) fn fail(check: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { check, status: Status::Fail, detail: detail.into(), fix: Some(fix.into()) }
    }
}

/// Which argocd-notifications route the apps are subscribed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Route {
    /// The webhook service `argo-medic` (ingest's URL).
    Webhook,
    /// The `awssqs` service `argo-medic-sqs`.
    Awssqs,
    /// Either one.
    Any,
}

/// What to check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub argo: ArgoSettings,
    /// Projects in scope (`PolicyConfig.projects`); empty: every project.
    pub projects: Vec<String>,
    /// Whether the policy may sync (it needs `sync` then, not only `get`).
    pub may_sync: bool,
    pub route: Route,
    /// A token expiring within this is a warning.
    pub expiry_warning: Duration,
    pub now: DateTime<Utc>,
}

const TOKEN_FIX: &str = "mint a new token: `argocd account generate-token --account argo-medic --expires-in 90d`, then put it in the secret ArgoCdTokenSecretArn names (the functions re-read it on the next 401) or ARGOCD_AUTH_TOKEN";
const NOTIFICATIONS_FIX: &str = "apply infra/argocd-notifications/argocd-notifications-cm.yaml and the secret of argocd-notifications-secret.example.yaml (docs/deploy.md, Argo CD side)";

/// Runs every check; the findings in order. Nothing here changes anything.
pub async fn check(options: &CheckOptions) -> Vec<Finding> {
    let mut findings = vec![token_expiry(options)];
    // Fast answers: a preflight waits seconds, not the functions' minute of retries.
    let mut settings = options.argo.clone();
    settings.retry_deadline = Duration::from_secs(3);
    settings.request_timeout = Duration::from_secs(10);
    settings.max_attempts = 2;
    let client = match HttpArgoClient::new(settings.clone()) {
        Ok(c) => c,
        Err(e) => {
            findings.push(Finding::fail(
                "argo-cd",
                format!("cannot build a client for `{}`: {e}", settings.server),
                "check ARGOCD_SERVER, ARGOCD_ROOT_PATH and ARGOCD_CA_BUNDLE",
            ));
            return findings;
        }
    };
    let url = settings.base_url().map(|u| u.to_string()).unwrap_or_else(|_| settings.server.clone());
    match client.version_info().await {
        Ok(v) if settings.plaintext => findings.push(Finding::warn(
            "argo-cd",
            format!("Argo CD {} answers at {url} over plain HTTP", v.version),
            "the token crosses the network in clear: keep ARGOCD_PLAINTEXT for a server reached inside the VPC only",
        )),
        Ok(v) => findings.push(Finding::ok("argo-cd", format!("Argo CD {} answers at {url}", v.version))),
        Err(e) => {
            findings.push(unreachable(&url, &settings, &e));
            return findings;
        }
    }
    findings.extend(rbac(&client, options).await);
    findings.extend(notifications(&client, options.route).await);
    findings
}

fn token_expiry(options: &CheckOptions) -> Finding {
    match options.argo.token_expiry() {
        Err(problem) => Finding::fail("token", format!("the Argo CD token is {problem}"), TOKEN_FIX),
        Ok(None) => Finding::warn(
            "token",
            "the Argo CD token never expires",
            "fine for Argo CD, but a leaked token stays good: prefer `--expires-in` and a rotation (docs/deploy.md)",
        ),
        Ok(Some(at)) if at <= options.now => Finding::fail("token", format!("the Argo CD token expired at {}", at.to_rfc3339()), TOKEN_FIX),
        Ok(Some(at)) => {
            let left = at - options.now;
            let detail = format!("the Argo CD token expires at {} (in {} days)", at.to_rfc3339(), left.num_days());
            if left.to_std().unwrap_or_default() < options.expiry_warning {
                Finding::warn("token", detail, TOKEN_FIX)
            } else {
                Finding::ok("token", detail)
            }
        }
    }
}

/// Why `/api/version` did not answer, in the words of what to change.
fn unreachable(url: &str, settings: &ArgoSettings, e: &ArgoError) -> Finding {
    let (detail, fix) = remedy(url, settings.plaintext, e);
    Finding::fail("argo-cd", detail, fix)
}

/// What went wrong reaching Argo CD at `url`, and what to change: TLS against a plain-HTTP server
/// (or the reverse), an HTML or other non-API answer, a wrong root path, no route. `medic check`
/// and `medic sweep` say the same.
/// Argo CD not reached, or not answering as Argo CD: what happened and what to change, in
/// [`remedy`]'s words, with the error beneath (which decides the exit status). Its text is the
/// remedy's alone: the error is in it already, and a chain printed it twice.
#[derive(Debug, thiserror::Error)]
#[error("{detail}; {fix}")]
pub struct Unreached {
    pub detail: String,
    pub fix: String,
    pub error: ArgoError,
}

impl Unreached {
    pub fn new(url: &str, plaintext: bool, error: ArgoError) -> Self {
        let (detail, fix) = remedy(url, plaintext, &error);
        Self { detail, fix, error }
    }
}

pub fn remedy(url: &str, plaintext: bool, e: &ArgoError) -> (String, String) {
    let text = e.to_string();
    let lower = text.to_ascii_lowercase();
    // rustls' words: a plain-HTTP answer to a TLS hello is a "corrupt message of type
    // InvalidContentType"; a private CA's certificate is "invalid peer certificate: UnknownIssuer".
    let tls = ["certificate", "tls", "ssl", "handshake", "corrupt message", "invalidcontenttype", "unknownissuer"];
    if tls.iter().any(|w| lower.contains(w)) {
        let fix = if plaintext {
            "the server speaks TLS: unset ARGOCD_PLAINTEXT".to_owned()
        } else {
            "if Argo CD serves plain HTTP (argocd-server --insecure), set ARGOCD_PLAINTEXT=true; if its certificate comes from a private CA, give it as ARGOCD_CA_BUNDLE".to_owned()
        };
        (format!("TLS with {url} failed: {text}"), fix)
    } else if lower.contains("unexpected response body") {
        (
            format!("{url}api/version answered, but not as Argo CD's API does (HTML or another JSON): {text}"),
            "point ARGOCD_SERVER at argocd-server's API, and set ARGOCD_ROOT_PATH if Argo CD is served under a path (server.rootpath); an ingress that serves the UI for every path answers HTML".to_owned(),
        )
    } else if matches!(e, ArgoError::NotFound(_)) {
        (format!("{url}api/version is not found"), "check ARGOCD_ROOT_PATH (server.rootpath) and ARGOCD_SERVER".to_owned())
    } else if lower.contains("connection failed") || lower.contains("timeout") {
        (
            format!("cannot reach {url}: {text}"),
            "check ARGOCD_SERVER and the network path (VPC subnets, security groups, NAT); a server that never answers holds each call for --request-timeout (30s) and its retries for --retry-for (60s): shorten them to fail sooner".to_owned(),
        )
    } else {
        (format!("{url}api/version failed: {text}"), "check ARGOCD_SERVER, ARGOCD_ROOT_PATH and Argo CD's logs".to_owned())
    }
}

async fn rbac(client: &HttpArgoClient, options: &CheckOptions) -> Vec<Finding> {
    let projects: Vec<String> = if options.projects.is_empty() { vec!["*".to_owned()] } else { options.projects.clone() };
    let actions: &[&str] = if options.may_sync { &["get", "sync"] } else { &["get"] };
    let mut findings = Vec::new();
    for project in &projects {
        for action in actions {
            let object = format!("{project}/*");
            match client.can_i("applications", action, &object).await {
                Ok(true) => findings.push(Finding::ok("rbac", format!("may {action} applications {object}"))),
                Ok(false) => findings.push(Finding::fail(
                    "rbac",
                    format!("may not {action} applications {object}"),
                    format!("add `p, role:argo-medic, applications, {action}, {object}, allow` to argocd-rbac-cm's policy.csv (infra/argocd-rbac/)"),
                )),
                Err(ArgoError::Unauthenticated(m)) => {
                    findings.push(Finding::fail("rbac", format!("Argo CD rejected the token: {m}"), TOKEN_FIX));
                    return findings;
                }
                Err(e) => findings.push(Finding::warn(
                    "rbac",
                    format!("could not ask whether it may {action} applications {object}: {e}"),
                    "check by hand: `argocd account can-i ...` with the same token",
                )),
            }
        }
    }
    findings
}

async fn notifications(client: &HttpArgoClient, route: Route) -> Vec<Finding> {
    let mut findings = Vec::new();
    match client.notification_names(NotificationNames::Services).await {
        Ok(services) => {
            let wanted: &[&str] = match route {
                Route::Webhook => &["argo-medic"],
                Route::Awssqs => &["argo-medic-sqs"],
                Route::Any => &["argo-medic", "argo-medic-sqs"],
            };
            match wanted.iter().find(|w| services.iter().any(|s| s == *w)) {
                Some(found) => findings.push(Finding::ok("notifications", format!("argocd-notifications has the service `{found}`"))),
                None => findings.push(Finding::fail(
                    "notifications",
                    format!("argocd-notifications has no service {} (it has: {})", wanted.join(" or "), list(&services)),
                    NOTIFICATIONS_FIX,
                )),
            }
        }
        Err(e) => {
            findings.push(Finding::warn("notifications", format!("could not list argocd-notifications' services: {e}"), NOTIFICATIONS_FIX))
        }
    }
    match client.notification_names(NotificationNames::Triggers).await {
        Ok(triggers) => {
            let missing: Vec<String> = medic_core::trigger::Trigger::NOTIFICATIONS
                .iter()
                .map(|t| format!("argo-medic-{t}"))
                .filter(|t| !triggers.contains(t))
                .collect();
            if missing.is_empty() {
                findings.push(Finding::ok("notifications", "argocd-notifications has every trigger of Argo Medic's"));
            } else {
                findings.push(Finding::fail(
                    "notifications",
                    format!("argocd-notifications lacks the triggers {}", missing.join(", ")),
                    NOTIFICATIONS_FIX,
                ));
            }
        }
        Err(e) => {
            findings.push(Finding::warn("notifications", format!("could not list argocd-notifications' triggers: {e}"), NOTIFICATIONS_FIX))
        }
    }
    findings
}

fn list(names: &[String]) -> String {
    if names.is_empty() { "none".to_owned() } else { names.join(", ") }
}

/// The findings for a person: one line each, the fix under a problem.
pub fn render(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let mark = match f.status {
            Status::Ok => "ok  ",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        };
        out.push_str(&format!("{mark} {:<13} {}\n", f.check, f.detail));
        if let Some(fix) = &f.fix {
            out.push_str(&format!("     {:<13} fix: {fix}\n", ""));
        }
    }
    let failed = findings.iter().filter(|f| f.status == Status::Fail).count();
    let warned = findings.iter().filter(|f| f.status == Status::Warn).count();
    out.push_str(&format!("{} checks: {failed} failed, {warned} warnings\n", findings.len()));
    out
}
