//! What an escalation looks like in Slack: Block Kit messages rendered from an Application and its
//! decision, kept within every Block Kit limit, and the opaque ids of the buttons.
//!
//! Pure: no I/O, no clock. The Slack adapter (`medic_adapters::slack`) posts what this renders.
//!
//! # Messages
//!
//! - [`incident_parent`]: one incident's parent message: a header with the app and the failure
//!   mode; the state (needs a human, investigating, remediating, resolved); fields for project,
//!   destination, revision and sync/health/operation state; the reason; the catalogue's diagnosis
//!   and runbook; the evidence and failing resources (truncated); a link to the app in the Argo CD
//!   UI; and the buttons the policy allows.
//! - [`fleet_parent`] and [`fleet_member`]: many apps failing the same way at once get one parent
//!   and one short reply per app (with that app's buttons) in its thread.
//! - [`note`]: a thread reply (an action's outcome, the resolution).
//!
//! # Limits
//!
//! The rendering lives in `blocks.rs`, re-exported here. [`limits`] holds Slack's documented Block Kit limits and the budget for the whole message
//! (Slack rejects messages of about 13,000 characters of blocks with `msg_blocks_too_long`; the
//! budget is 10,000, measured on the serialised `blocks` JSON, a superset of the text). Lengths are
//! counted in UTF-16 code units, which is never less than the characters Slack counts. Text is cut
//! to fit (with `…`), optional sections shrink and then go, and the buttons, header and state
//! never do, so any input renders to a message Slack accepts. [`violations`] checks a message
//! against every limit; the property tests run it on arbitrary long inputs.
//!
//! # Buttons
//!
//! A button carries only an opaque id (`action_id` and `value` both), derived from the incident,
//! the action and a generation counter (bumped each time a human action is performed, so a stale
//! or double click on an old button acts at most once). What the id stands for (the app, the
//! incident, the sync plan, the idempotency key) is stored by the adapter as a
//! [`HumanActionRequest`], never sent to Slack.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::app::{Application, phase};
use crate::catalogue::FailureMode;
use crate::decision::{Decision, Evidence, HumanAction, SyncPlan};
use crate::event::AppRef;
use crate::keys::IdempotencyKey;
pub use crate::keys::{ACTION_ID_PREFIX, action_id, is_action_id};

/// Block Kit limits (Slack's reference pages; docs/argo-cd-behaviour.md §6.1).
pub mod limits {
    /// Blocks in one message.
    pub const MAX_BLOCKS: usize = 50;
    /// `section.text`.
    pub const MAX_SECTION_TEXT: usize = 3000;
    /// Items of `section.fields`.
    pub const MAX_FIELDS: usize = 10;
    /// One `section.fields` item.
    pub const MAX_FIELD_TEXT: usize = 2000;
    /// `header.text` (plain text only).
    pub const MAX_HEADER_TEXT: usize = 150;
    /// A button's text.
    pub const MAX_BUTTON_TEXT: usize = 75;
    /// A button's value.
    pub const MAX_BUTTON_VALUE: usize = 2000;
    /// `action_id` and `block_id`.
    pub const MAX_ID: usize = 255;
    /// A button's url.
    pub const MAX_URL: usize = 3000;
    /// Elements of an `actions` block.
    pub const MAX_ACTIONS_ELEMENTS: usize = 25;
    /// Elements of a `context` block.
    pub const MAX_CONTEXT_ELEMENTS: usize = 10;
    /// Confirm dialog: title, text, and the confirm/deny buttons.
    pub const MAX_CONFIRM_TITLE: usize = 100;
    pub const MAX_CONFIRM_TEXT: usize = 300;
    pub const MAX_CONFIRM_BUTTON: usize = 30;
    /// The notification (fallback) text. Slack truncates above 40,000; it is kept short.
    pub const MAX_FALLBACK_TEXT: usize = 3000;
    /// The whole message: the serialised `blocks` JSON. Slack answers `msg_blocks_too_long` at
    /// about 13,000 characters of blocks (slackapi/bolt-js#2509); this leaves room.
    pub const MESSAGE_BUDGET: usize = 10_000;
}

/// The `event_type` of the metadata on every message Argo Medic posts.
pub const METADATA_EVENT_TYPE: &str = "argo_medic_escalation";

/// How far an incident has come, as its parent message shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncidentState {
    /// Someone acknowledged it and is looking.
    Investigating,
    /// An action a person asked for is under way.
    Remediating,
    /// Argo Medic cannot or must not fix it: a person has to.
    NeedsHuman,
    /// The app is Synced and Healthy again.
    Resolved,
}

impl IncidentState {
    pub fn label(self) -> &'static str {
        match self {
            IncidentState::Investigating => "Investigating",
            IncidentState::Remediating => "Remediating",
            IncidentState::NeedsHuman => "Needs a human",
            IncidentState::Resolved => "Resolved",
        }
    }

    fn emoji(self) -> &'static str {
        match self {
            IncidentState::Investigating => ":eyes:",
            IncidentState::Remediating => ":hammer_and_wrench:",
            IncidentState::NeedsHuman => ":rotating_light:",
            IncidentState::Resolved => ":white_check_mark:",
        }
    }
}

/// The state line of a message: the state, what moved it there and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    pub state: IncidentState,
    /// E.g. "acknowledged by <@U0123>" (mrkdwn the adapter composed from ids it trusts), or empty.
    #[serde(default)]
    pub detail: String,
    pub at: DateTime<Utc>,
    /// New incidents of the app are not posted until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snoozed_until: Option<DateTime<Utc>>,
}

/// Everything a message about one incident shows, taken from the Application and the decision
/// when the incident is escalated. Kept (bounded) in the store so later updates re-render the
/// same facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IncidentFacts {
    pub instance: String,
    pub incident_id: String,
    pub name: String,
    pub namespace: String,
    pub project: String,
    pub failure_mode: FailureMode,
    #[serde(default)]
    pub destination_server: String,
    #[serde(default)]
    pub destination_name: String,
    #[serde(default)]
    pub destination_namespace: String,
    #[serde(default)]
    pub revision: String,
    #[serde(default)]
    pub target_revision: String,
    #[serde(default)]
    pub sync_status: String,
    #[serde(default)]
    pub health_status: String,
    #[serde(default)]
    pub operation_phase: String,
    #[serde(default)]
    pub operation_started_at: Option<DateTime<Utc>>,
    /// When the incident's episode began (the incident id hashes it): a person's sync carries it
    /// in `infos`, so the incident survives the operation that sync creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incident_began: Option<DateTime<Utc>>,
    pub reason: String,
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    /// Failed resources and hooks of the last operation: `Kind/name (hook PreSync, Failed): message`.
    #[serde(default)]
    pub failing: Vec<String>,
    #[serde(default)]
    pub human_actions: Vec<HumanAction>,
    pub decided_at: DateTime<Utc>,
    /// The app in the Argo CD UI, when the UI's address is known.
    #[serde(default)]
    pub app_url: Option<String>,
    /// What the Sync button syncs ([`human_sync_plan`]): a revision, or empty for the target
    /// revision; and whether it prunes. Shown in its confirmation.
    #[serde(default)]
    pub sync_revision: String,
    #[serde(default)]
    pub sync_prune: bool,
    /// The button the diagnosis recommends ([`Decision::recommended`]), styled `primary`.
    #[serde(default)]
    pub recommended: Option<HumanAction>,
    /// The hooks that failed in the last operation, for the runbook's commands.
    #[serde(default)]
    pub failed_hooks: Vec<FailedHook>,
    /// Who to tell in the incident's first message, as Slack writes it (`<!subteam^S0123>`):
    /// the owning team's, from the policy's routing or the app's annotation ([`crate::route`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mention: String,
}

/// A hook of the last operation that failed: what the runbook's `<hook-job>` and
/// `<hook-namespace>` stand for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedHook {
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

/// Most evidence items and failing resources kept per incident, and the longest value kept of
/// each (the message shows less; this only bounds the stored record).
const KEPT_ITEMS: usize = 40;
const KEPT_CHARS: usize = 2000;

impl IncidentFacts {
    /// The facts of `app`'s incident as `decision` saw it. `argocd_url` is the Argo CD UI's base
    /// URL (`https://argocd.example.com`, or with its root path).
    pub fn new(app: &Application, decision: &Decision, argocd_url: Option<&str>) -> Self {
        let op = app.status.operation_state.as_ref();
        let incident_id = decision.incident.as_ref().map(|i| i.id()).unwrap_or_default();
        let instance = decision.incident.as_ref().map(|i| i.instance.clone()).unwrap_or_default();
        let failing = app
            .result_resources()
            .iter()
            .filter(|r| {
                r.status == "SyncFailed" || (!r.hook_type.is_empty() && matches!(r.hook_phase.as_str(), phase::FAILED | phase::ERROR))
            })
            .map(|r| {
                let hook = if r.hook_type.is_empty() { String::new() } else { format!(" (hook {}, {})", r.hook_type, r.hook_phase) };
                let message = if r.message.is_empty() { String::new() } else { format!(": {}", r.message) };
                format!("{}/{}{hook}{message}", r.kind, r.name)
            })
            .take(KEPT_ITEMS)
            .map(|s| cut_chars(&s, KEPT_CHARS))
            .collect();
        let failed_hooks = app
            .result_resources()
            .iter()
            .filter(|r| !r.hook_type.is_empty() && matches!(r.hook_phase.as_str(), phase::FAILED | phase::ERROR))
            .take(KEPT_ITEMS)
            .map(|r| FailedHook { kind: r.kind.clone(), namespace: r.namespace.clone(), name: cut_chars(&r.name, 253) })
            .collect();
        let target_revision = app.spec.source.as_ref().or(app.spec.sources.first()).map(|s| s.target_revision.clone()).unwrap_or_default();
        let plan = human_sync_plan(app, decision);
        Self {
            instance,
            incident_id,
            incident_began: decision.incident.as_ref().and_then(|i| i.began_at),
            name: app.metadata.name.clone(),
            namespace: app.metadata.namespace.clone(),
            project: app.spec.project.clone(),
            failure_mode: decision.failure_mode,
            destination_server: app.spec.destination.server.clone(),
            destination_name: app.spec.destination.name.clone(),
            destination_namespace: app.spec.destination.namespace.clone(),
            revision: app.revision(),
            target_revision,
            sync_status: app.sync_status().to_owned(),
            health_status: app.health_status().to_owned(),
            operation_phase: op.map(|o| o.phase.clone()).unwrap_or_default(),
            operation_started_at: op.and_then(|o| o.started_at),
            reason: cut_chars(&decision.reason, KEPT_CHARS),
            evidence: decision
                .evidence
                .iter()
                .take(KEPT_ITEMS)
                .map(|e| Evidence::new(cut_chars(&e.field, 200), cut_chars(&e.value, KEPT_CHARS)))
                .collect(),
            failing,
            human_actions: decision.human_actions.clone(),
            decided_at: decision.decided_at,
            app_url: argocd_url.filter(|u| !u.trim().is_empty()).map(|base| app_url(base, &app.metadata.namespace, &app.metadata.name)),
            sync_revision: plan.revision,
            sync_prune: plan.prune,
            recommended: decision.recommended,
            failed_hooks,
            mention: decision.route.as_ref().map(|r| r.mention_markup()).unwrap_or_default(),
        }
    }

    /// `namespace/name`.
    pub fn app(&self) -> crate::app::AppId {
        crate::app::AppId::new(&self.namespace, &self.name)
    }

    /// The app as the work queue names it.
    pub fn app_ref(&self) -> AppRef {
        AppRef { name: self.name.clone(), namespace: self.namespace.clone(), project: Some(self.project.clone()).filter(|p| !p.is_empty()) }
    }

    fn destination(&self) -> String {
        let cluster = if !self.destination_name.is_empty() { &self.destination_name } else { &self.destination_server };
        match (cluster.is_empty(), self.destination_namespace.is_empty()) {
            (true, true) => "–".into(),
            (false, true) => cluster.clone(),
            (true, false) => format!("namespace {}", self.destination_namespace),
            (false, false) => format!("{cluster} / {}", self.destination_namespace),
        }
    }
}

/// The app's page in the Argo CD UI: `<base>/applications/<namespace>/<name>`.
pub fn app_url(base: &str, namespace: &str, name: &str) -> String {
    let base = base.trim().trim_end_matches('/');
    let base = if base.starts_with("http://") || base.starts_with("https://") { base.to_owned() } else { format!("https://{base}") };
    format!("{base}/applications/{namespace}/{name}")
}

/// The idempotency key of performing the action behind button `action_id` (derived, like every
/// key, in [`IdempotencyKey::for_human_action`]).
pub fn human_action_key(action_id: &str) -> IdempotencyKey {
    IdempotencyKey::for_human_action(action_id)
}

/// What a button stands for, stored under its id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HumanActionRequest {
    /// The button's opaque id.
    pub id: String,
    pub action: HumanAction,
    pub incident_id: String,
    pub app: AppRef,
    pub failure_mode: FailureMode,
    /// For `sync`: exactly what is requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncPlan>,
    /// Carried by the sync in Argo CD's `infos`.
    pub idempotency_key: IdempotencyKey,
    pub offered_at: DateTime<Utc>,
    /// When the incident's episode began (see [`IncidentFacts::incident_began`]); absent on
    /// buttons offered by earlier releases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incident_began: Option<DateTime<Utc>>,
}

/// How a human action turned out, for the incident's thread and state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HumanActionOutcome {
    /// The action took effect (its button is spent and new buttons are issued).
    pub performed: bool,
    /// The state the incident moves to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<IncidentState>,
    /// One or two sentences for the thread (plain text; escaped when rendered).
    pub summary: String,
    /// For snooze: until when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snoozed_until: Option<DateTime<Utc>>,
}

/// The sync a person asks for from an escalation: the decision's plan when it has one; otherwise
/// the compared revision (or, with automated sync on, the target revision, the only one Argo CD
/// accepts then), without pruning, with the app's own sync options.
pub fn human_sync_plan(app: &Application, decision: &Decision) -> SyncPlan {
    if let Some(plan) = &decision.sync {
        return plan.clone();
    }
    let options = app.spec.sync_policy.as_ref().map(|p| p.sync_options.clone()).unwrap_or_default();
    SyncPlan {
        revision: if app.auto_sync().is_some() { String::new() } else { app.revision() },
        prune: false,
        sync_options: options,
        intent: "a person asked for it from the Slack escalation".into(),
    }
}

/// A rendered message: the notification text and the blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rendered {
    pub text: String,
    pub blocks: Vec<Value>,
}

/// A button: the action and its opaque id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    pub action: HumanAction,
    pub id: String,
}

/// The buttons of `facts`' incident at `generation`.
pub fn buttons(facts: &IncidentFacts, generation: u32) -> Vec<Button> {
    facts.human_actions.iter().map(|a| Button { action: *a, id: action_id(&facts.incident_id, *a, generation) }).collect()
}

/// Many apps failing the same way: the fleet incident's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetSummary {
    pub fleet_id: String,
    pub instance: String,
    pub failure_mode: FailureMode,
    /// `namespace/name` of the apps, in the order they joined (possibly only the first of them).
    pub apps: Vec<crate::app::AppId>,
    /// How many apps the fleet incident has (at least `apps.len()`).
    #[serde(default)]
    pub total: usize,
    pub resolved: usize,
    /// Apps per Argo CD project, `(project, apps)`, in any order (the parent shows the most
    /// affected first).
    pub projects: Vec<(String, usize)>,
    /// Apps per destination cluster (its name, else its server URL), `(cluster, apps)`.
    pub clusters: Vec<(String, usize)>,
    pub first_at: DateTime<Utc>,
    pub last_at: DateTime<Utc>,
}

/// Cuts to `max` characters (for stored facts; no escaping).
fn cut_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max { s.to_owned() } else { s.chars().take(max.saturating_sub(1)).chain(['…']).collect() }
}

mod blocks;
pub use blocks::*;
