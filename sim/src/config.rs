//! What a simulated Argo CD instance is configured with: who may call it and what they may do.

use std::time::Duration;

use crate::jwt;

/// The default bearer token: a JWT-looking value (Argo CD ignores bearer values that are not
/// three dot-separated parts) for the subject `argo-medic`, issued 2026-01-01T00:00:00Z.
pub const DEFAULT_TOKEN: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJhcmdvY2QiLCJzdWIiOiJhcmdvLW1lZGljOmFwaUtleSIsIm5iZiI6MTc2NzIyNTYwMCwiaWF0IjoxNzY3MjI1NjAwLCJqdGkiOiJhcmdvLW1lZGljLXNpbSJ9.YXJnby1tZWRpYy1zaW11bGF0ZWQtc2lnbmF0dXJl";

/// The subject of [`DEFAULT_TOKEN`].
pub const DEFAULT_SUBJECT: &str = "argo-medic";

/// The Argo CD versions the simulator serves as Argo Medic's profiles
/// (`medic_core::versions::PROFILES`), as `GET /api/version` reports each: the release and its
/// commit. What differs between them here: List's `fields` whitelist (crate::fields) and the
/// behaviours of `crate::release::Behaviour` (retries and their messages, `retry.refresh`,
/// resource health on List, the invalid-tasks message, `syncOverrun`, the informer's resync).
pub const PROFILE_VERSIONS: &[&str] = &["v2.14.21+206a6ee", "v3.1.16+5d001b8", "v3.3.7+035e855", "v3.3.8+7ae7d2c", "v3.5.1+109ca7c"];

/// How a simulated Argo CD instance behaves.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// `""` or e.g. `"/argocd"` (Argo CD's `--rootpath`): every API path is served under it.
    pub root_path: String,
    /// Accepted bearer tokens.
    pub tokens: Vec<TokenGrant>,
    /// RBAC: which subject may do which action on which project glob.
    pub policies: Vec<Policy>,
    /// AppProjects' deny windows at start ([`crate::ArgoSim::set_sync_windows`] changes them).
    pub sync_windows: Vec<SyncWindowRule>,
    /// How long a sync operation runs before it finishes.
    pub operation_duration: Duration,
    /// What `GET /api/version` reports, e.g. `v3.5.1+109ca7c`.
    pub version: String,
    /// The names `GET /api/v1/notifications/services` and `/triggers` list: argocd-notifications'
    /// configuration (argocd-notifications-cm), Argo Medic's by default.
    pub notifications: Notifications,
}

/// What argocd-notifications-cm configures, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notifications {
    pub services: Vec<String>,
    pub triggers: Vec<String>,
}

impl Default for Notifications {
    /// The services and triggers of infra/argocd-notifications/argocd-notifications-cm.yaml
    /// (tests/template.rs holds the two together).
    fn default() -> Self {
        Notifications {
            services: vec!["argo-medic".into(), "argo-medic-sqs".into()],
            triggers: [
                "on-sync-failed",
                "on-health-degraded",
                "on-sync-status-unknown",
                "on-sync-running",
                "on-stale-progressing",
                "on-deleted",
                "on-deployed",
            ]
            .iter()
            .map(|t| format!("argo-medic-{t}"))
            .collect(),
        }
    }
}

impl Default for SimConfig {
    /// Root path `""`, [`DEFAULT_TOKEN`] for `argo-medic` with `get` and `sync` on every project,
    /// no sync windows, 150 ms operations, version `v3.5.1+109ca7c`.
    fn default() -> Self {
        SimConfig {
            root_path: String::new(),
            tokens: vec![TokenGrant { token: DEFAULT_TOKEN.to_string(), subject: DEFAULT_SUBJECT.to_string(), expired: false }],
            policies: vec![Policy::new(DEFAULT_SUBJECT, "get", "*"), Policy::new(DEFAULT_SUBJECT, "sync", "*")],
            sync_windows: Vec::new(),
            operation_duration: Duration::from_millis(150),
            version: "v3.5.1+109ca7c".to_string(),
            notifications: Notifications::default(),
        }
    }
}

/// A bearer token the instance accepts, and whom it authenticates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenGrant {
    /// The bearer value. Use three dot-separated parts, as Argo CD ignores anything else
    /// ([`crate::token_for`] makes one).
    pub token: String,
    /// The RBAC subject (Argo CD rewrites `sub: "<name>:apiKey"` to `<name>`).
    pub subject: String,
    /// An expired token is answered with `invalid session: token has invalid claims: token is expired`.
    pub expired: bool,
}

impl TokenGrant {
    /// A valid grant of a JWT-looking token for `subject`; returns the grant (its `token` field
    /// is what a client sends).
    pub fn for_subject(subject: &str) -> Self {
        TokenGrant { token: jwt::token_for(subject), subject: subject.to_string(), expired: false }
    }

    /// A grant of a token for `subject` whose `exp` claim is `expires` (`argocd account
    /// generate-token --expires-in`); expired when `expires` has passed.
    pub fn expiring(subject: &str, expires: chrono::DateTime<chrono::Utc>) -> Self {
        TokenGrant {
            token: jwt::token_expiring(subject, expires.timestamp()),
            subject: subject.to_string(),
            expired: expires <= chrono::Utc::now(),
        }
    }
}

/// One `p, <subject>, <resource>, <action>, <project>/*, allow` line of `policy.csv`: on
/// `applications` the object is the apps of a project glob, on `projects` the project glob itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Who: the token's subject.
    pub subject: String,
    /// `applications` or `projects`.
    pub resource: String,
    /// `get`, `sync` (or `override`, or `*`).
    pub action: String,
    /// Project glob; `*` matches every project.
    pub project: String,
}

impl Policy {
    /// A line on `applications` (`<project>/*`).
    pub fn new(subject: &str, action: &str, project: &str) -> Self {
        Policy { subject: subject.into(), resource: "applications".into(), action: action.into(), project: project.into() }
    }

    /// A line on `projects` (`p, <subject>, projects, get, *, allow` is in `role:readonly`).
    pub fn projects(subject: &str, action: &str, project: &str) -> Self {
        Policy { resource: "projects".into(), ..Policy::new(subject, action, project) }
    }
}

/// A deny sync window of `project`'s AppProject. `manual_sync: true` lets manual (API) syncs
/// through, as the AppProject field `manualSync` does; `sync_overrun: true` lets a sync that was
/// running when the window opened go on, from Argo CD 3.5 (the field `syncOverrun`).
///
/// The simulator evaluates no cron: the test says whether the window is `active` now. An active
/// one is served with schedule `* * * * *`, an inactive one with `0 22 * * *` (and 8h), and
/// only an active one holds syncs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncWindowRule {
    /// The AppProject the window belongs to.
    pub project: String,
    /// Whether manual syncs may run while the window is active.
    pub manual_sync: bool,
    /// Whether a sync already running when the window opened may go on (served from 3.5.0).
    pub sync_overrun: bool,
    /// Whether the window is active now.
    pub active: bool,
}

impl SyncWindowRule {
    /// An active deny window of `project` that holds manual syncs too, without overrun.
    pub fn deny(project: &str) -> Self {
        SyncWindowRule { project: project.into(), manual_sync: false, sync_overrun: false, active: true }
    }

    /// The window as the AppProject's `spec.syncWindows[]` holds it.
    pub(crate) fn to_json(&self, behaviour: &crate::release::Behaviour) -> serde_json::Value {
        let (schedule, duration) = if self.active { ("* * * * *", "24h") } else { ("0 22 * * *", "8h") };
        let mut window = serde_json::json!({"kind": "deny", "schedule": schedule, "duration": duration, "applications": ["*"], "manualSync": self.manual_sync});
        // `syncOverrun` is a field from 3.5.0 (`omitempty`).
        if self.sync_overrun && behaviour.sync_overrun() {
            window["syncOverrun"] = serde_json::json!(true);
        }
        window
    }
}
