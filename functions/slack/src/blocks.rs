//! What an escalation looks like in Slack: Block Kit messages rendered from an Application and its
//! decision, kept within every Block Kit limit, and the opaque ids of the buttons.
//!
//! Pure: no I/O, no clock. The escalator ([`crate::SlackEscalator`]) posts what this renders.
//!
//! # Messages
//!
//! - [`incident_parent`]: one incident's parent message: a header with the app and the failure
//!   mode; the state (needs a human, investigating, remediating, resolved); fields for project,
//!   destination, revision and sync/health/operation state; the reason; the catalogue's diagnosis
//!   and runbook; the evidence and failing resources (truncated); a link to the app in the Argo CD
//!   UI; and the buttons the policy allows.
//! - [`group_parent`] and [`group_member`]: many apps failing the same way at once get one parent
//!   and one short reply per app (with that app's buttons) in its thread.
//! - [`note`]: a thread reply (an action's outcome, the resolution).
//!
//! # Limits
//!
//! [`limits`] holds Slack's documented Block Kit limits and the budget for the whole message
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

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use medic_core::app::{Application, phase};
use medic_core::catalogue::FailureMode;
use medic_core::decision::{Decision, Evidence, SyncPlan};
use medic_core::event::AppRef;
use medic_core::human_action::IncidentState;
pub use medic_core::human_action::rfc3339;
use medic_core::keys::action_id;
use medic_core::ladder::HumanAction;

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
    pub fn app(&self) -> medic_core::app::AppId {
        medic_core::app::AppId::new(&self.namespace, &self.name)
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

/// Many apps failing the same way: the incident group's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    pub group_id: String,
    pub instance: String,
    pub failure_mode: FailureMode,
    /// `namespace/name` of the apps, in the order they joined (possibly only the first of them).
    pub apps: Vec<medic_core::app::AppId>,
    /// How many apps the incident group has (at least `apps.len()`).
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

/// The emoji of an incident's state line.
fn state_emoji(state: IncidentState) -> &'static str {
    match state {
        IncidentState::Investigating => ":eyes:",
        IncidentState::Remediating => ":hammer_and_wrench:",
        IncidentState::NeedsHuman => ":rotating_light:",
        IncidentState::Resolved => ":white_check_mark:",
    }
}

// Block Kit rendering of escalations and fitting every message within Slack's limits.

// --- text helpers ---------------------------------------------------------------------------

/// Length as Slack is assumed to count it: UTF-16 code units (never less than characters).
pub fn units(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Escapes the three characters Slack's text formatting reserves.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        push_escaped(&mut out, c);
    }
    out
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        // Control characters would grow sixfold in JSON (`\u0001`); they carry nothing here.
        c if c.is_control() && c != '\n' => out.push(' '),
        c => out.push(c),
    }
}

/// `s` escaped and cut to at most `max` UTF-16 units, ending in `…` when cut. Never cuts inside
/// an escape.
pub fn fit(s: &str, max: usize) -> String {
    if max == 0 {
        return String::new();
    }
    let escaped = escape(s);
    if units(&escaped) <= max {
        return escaped;
    }
    let mut out = String::new();
    let mut used = 0;
    let mut piece = String::new();
    for c in s.chars() {
        piece.clear();
        push_escaped(&mut piece, c);
        let n = units(&piece);
        if used + n + 1 > max {
            break;
        }
        out.push_str(&piece);
        used += n;
    }
    out.push('…');
    out
}

/// Plain text (no escaping: `plain_text` objects are not parsed) cut to `max` units.
fn fit_plain(s: &str, max: usize) -> String {
    if units(s) <= max && !s.chars().any(char::is_control) {
        return s.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars().map(|c| if c.is_control() { ' ' } else { c }) {
        let n = c.len_utf16();
        if used + n + 1 > max {
            break;
        }
        out.push(c);
        used += n;
    }
    out.push('…');
    out
}

/// Text for inside a code block: no triple backticks that would end it early.
fn code_safe(s: &str) -> String {
    s.replace("```", "`\u{200b}``")
}

fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

fn short_revision(rev: &str) -> String {
    if rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit()) { rev[..10].to_owned() } else { rev.to_owned() }
}

// --- blocks ---------------------------------------------------------------------------------

fn header(text: &str) -> Value {
    json!({"type": "header", "text": {"type": "plain_text", "text": fit_plain(text, limits::MAX_HEADER_TEXT), "emoji": true}})
}

fn section(mrkdwn: String) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn}})
}

fn fields(items: &[(&str, String)]) -> Value {
    let fields: Vec<Value> = items
        .iter()
        .take(limits::MAX_FIELDS)
        .map(|(label, value)| json!({"type": "mrkdwn", "text": format!("*{label}*\n{}", fit(value, FIELD_VALUE))}))
        .collect();
    json!({"type": "section", "fields": fields})
}

fn context(mrkdwn: String) -> Value {
    json!({"type": "context", "elements": [{"type": "mrkdwn", "text": mrkdwn}]})
}

/// A field's value, bounded so the fixed part of a message stays small.
const FIELD_VALUE: usize = 150;

fn button(facts: &IncidentFacts, b: &Button, recommended: Option<HumanAction>, snooze_hours: u32) -> Value {
    let (text, style, confirm): (String, Option<&str>, Option<(String, String)>) = match b.action {
        HumanAction::Sync => {
            let rev = match (facts.sync_revision.is_empty(), facts.target_revision.is_empty()) {
                (false, _) => fit_plain(&short_revision(&facts.sync_revision), 60),
                (true, false) => format!("its target revision ({})", fit_plain(&facts.target_revision, 60)),
                (true, true) => "its target revision".to_owned(),
            };
            let prune = if facts.sync_prune { "with pruning" } else { "without pruning" };
            let button = HumanAction::Sync.button();
            (
                button.label.into(),
                button.style,
                Some((
                    button.confirm.unwrap_or_default().into(),
                    format!("Sync to {rev} {prune}. Argo Medic runs it with its own Argo CD rights; your click is audited."),
                )),
            )
        }
        HumanAction::Refresh => (HumanAction::Refresh.button().label.into(), HumanAction::Refresh.button().style, None),
        HumanAction::HardRefresh => (
            HumanAction::HardRefresh.button().label.into(),
            HumanAction::HardRefresh.button().style,
            Some((
                HumanAction::HardRefresh.button().confirm.unwrap_or_default().into(),
                "Regenerate the app's manifests, bypassing the repo-server cache.".into(),
            )),
        ),
        HumanAction::TerminateOperation => (
            HumanAction::TerminateOperation.button().label.into(),
            HumanAction::TerminateOperation.button().style,
            Some((
                HumanAction::TerminateOperation.button().confirm.unwrap_or_default().into(),
                "Stop the app's running operation. Hooks already started keep running.".into(),
            )),
        ),
        HumanAction::Snooze => (format!("{} {snooze_hours}h", HumanAction::Snooze.button().label), None, None),
        HumanAction::Acknowledge => (HumanAction::Acknowledge.button().label.into(), None, None),
        HumanAction::Freeze => (
            HumanAction::Freeze.button().label.into(),
            None,
            Some((
                HumanAction::Freeze.button().confirm.unwrap_or_default().into(),
                "Argo Medic takes no automatic action on this app for 4 hours, then resumes by itself. It does not stop Argo CD's own auto-sync.".into(),
            )),
        ),
    };
    let mut v = json!({
        "type": "button",
        "text": {"type": "plain_text", "text": fit_plain(&text, limits::MAX_BUTTON_TEXT), "emoji": true},
        "action_id": b.id,
        "value": b.id,
    });
    // One button at most is `primary`: the one the diagnosis recommends. Terminate is always
    // `danger` (it stops hooks midway), recommended or not.
    let style = style.or((recommended == Some(b.action)).then_some("primary"));
    if let Some(style) = style {
        v["style"] = style.into();
    }
    if let Some((title, text)) = confirm {
        v["confirm"] = json!({
            "title": {"type": "plain_text", "text": fit_plain(&title, limits::MAX_CONFIRM_TITLE)},
            "text": {"type": "plain_text", "text": fit_plain(&text, limits::MAX_CONFIRM_TEXT)},
            "confirm": {"type": "plain_text", "text": "Yes, do it"},
            "deny": {"type": "plain_text", "text": "Cancel"},
        });
    }
    v
}

/// The recommended button while `state` lasts: once someone has taken the incident
/// (investigating, remediating), "Acknowledge" is no longer what anyone should press first.
fn recommended_in(facts: &IncidentFacts, state: IncidentState) -> Option<HumanAction> {
    facts.recommended.filter(|a| *a != HumanAction::Acknowledge || state == IncidentState::NeedsHuman)
}

/// The buttons while `state` lasts: "Acknowledge" only while nobody has taken the incident (after
/// it, the message offered it again and a second click posted a second "acknowledged").
fn actions(facts: &IncidentFacts, buttons: &[Button], state: IncidentState, block_id: &str, snooze_hours: u32) -> Option<Value> {
    let recommended = recommended_in(facts, state);
    let elements: Vec<Value> = buttons
        .iter()
        .filter(|b| b.action != HumanAction::Acknowledge || state == IncidentState::NeedsHuman)
        .take(limits::MAX_ACTIONS_ELEMENTS)
        .map(|b| button(facts, b, recommended, snooze_hours))
        .collect();
    (!elements.is_empty()).then(|| json!({"type": "actions", "block_id": fit_plain(block_id, limits::MAX_ID), "elements": elements}))
}

fn status_line(status: &Status, facts: &IncidentFacts) -> String {
    let mut line = format!("{} *{}*", state_emoji(status.state), status.state.label());
    if !status.detail.is_empty() {
        line.push_str(" · ");
        line.push_str(&status.detail);
    }
    line.push_str(&format!(" · {}", when(status.at)));
    if let Some(until) = status.snoozed_until {
        line.push_str(&format!("\n:zzz: New incidents of this app are not posted until {}", when(until)));
    }
    if let Some(url) = &facts.app_url {
        line.push_str(&format!("\n<{}|Open {} in Argo CD>", fit(url, limits::MAX_URL / 2), escape(facts.app().as_str())));
    }
    // The detail comes from the adapter; bound the whole line anyway.
    cut_units_escaped(&line, 600)
}

/// Cuts already-escaped mrkdwn to `max` units without splitting an escape or a `<...>` link: it
/// cuts at the last line break that fits.
fn cut_units_escaped(s: &str, max: usize) -> String {
    if units(s) <= max {
        return s.to_owned();
    }
    let mut out = String::new();
    for line in s.split('\n') {
        let extra = if out.is_empty() { units(line) } else { units(line) + 1 };
        if units(&out) + extra > max {
            break;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(line);
    }
    if out.is_empty() { fit(&s.replace(['<', '>', '&'], " "), max) } else { out }
}

/// The serialised size of blocks, as [`limits::MESSAGE_BUDGET`] measures it.
pub fn blocks_size(blocks: &[Value]) -> usize {
    units(&Value::Array(blocks.to_vec()).to_string())
}

/// Successively smaller sizes of the optional sections; the last drops them all.
const SCALES: [f64; 7] = [1.0, 0.7, 0.5, 0.35, 0.2, 0.1, 0.0];

fn scaled(cap: usize, scale: f64) -> usize {
    ((cap as f64) * scale) as usize
}

fn titled(title: &str, body: String) -> String {
    format!("*{title}*\n{body}")
}

/// A titled section whose body is cut so the whole text is at most `cap` units; `None` when the
/// cap leaves no room for the body or the body is empty.
fn capped_section(title: &str, body_raw: &str, cap: usize) -> Option<Value> {
    let overhead = units(title) + 3;
    if body_raw.trim().is_empty() || cap <= overhead + 8 {
        return None;
    }
    let cap = cap.min(limits::MAX_SECTION_TEXT);
    Some(section(titled(title, fit(body_raw, cap - overhead))))
}

/// A titled section with a code block body.
fn code_section(title: &str, lines: &[String], cap: usize) -> Option<Value> {
    let overhead = units(title) + 3 + 8;
    if lines.is_empty() || cap <= overhead + 8 {
        return None;
    }
    let cap = cap.min(limits::MAX_SECTION_TEXT);
    let body = code_safe(&lines.join("\n"));
    Some(section(format!("*{title}*\n```{}```", fit(&body, cap - overhead))))
}

/// An optional section: given a scale in 0..=1, the block at that size, if any.
type Optional<'a> = Box<dyn Fn(f64) -> Option<Value> + 'a>;

/// `head`, the optional sections at the largest scale that keeps the message within the budget,
/// and `tail`; `minimal` when not even the smallest fits (the fixed parts are bounded so that
/// this does not happen; it keeps the guarantee unconditional).
fn assemble(head: &[Value], optional: &[Optional<'_>], tail: &[Value], minimal: impl Fn() -> Vec<Value>) -> Vec<Value> {
    for scale in SCALES {
        let mut blocks = head.to_vec();
        blocks.extend(optional.iter().filter_map(|f| f(scale)));
        blocks.extend(tail.iter().cloned());
        if blocks_size(&blocks) <= limits::MESSAGE_BUDGET {
            return blocks;
        }
    }
    minimal()
}

/// The runbook of `mode` with the placeholders filled in from `facts` where they are known:
/// `<app>` (as the argocd CLI names it, `namespace/name`), `<project>`, `<namespace>` (the
/// destination namespace), `<hook-job>` and `<hook-namespace>` (the first failed hook Job, its
/// namespace or else the destination namespace). Unknown ones stay placeholders.
pub fn runbook_steps(mode: FailureMode, facts: &IncidentFacts) -> Vec<String> {
    let known = |s: &str| Some(s.to_owned()).filter(|s| !s.is_empty());
    let hook = facts.failed_hooks.iter().find(|h| h.kind == "Job" && !h.name.is_empty());
    let values = [
        ("<app>", known(&facts.name).map(|_| facts.app().to_string())),
        ("<project>", known(&facts.project)),
        ("<namespace>", known(&facts.destination_namespace)),
        ("<hook-job>", hook.map(|h| h.name.clone())),
        ("<hook-namespace>", hook.and_then(|h| known(&h.namespace)).or_else(|| hook.and_then(|_| known(&facts.destination_namespace)))),
    ];
    mode.entry()
        .runbook
        .iter()
        .map(|step| {
            values.iter().fold((*step).to_owned(), |s, (placeholder, v)| match v {
                Some(v) => s.replace(placeholder, v),
                None => s,
            })
        })
        .collect()
}

fn runbook_text(mode: FailureMode, facts: Option<&IncidentFacts>) -> String {
    let steps: Vec<String> = match facts {
        Some(f) => runbook_steps(mode, f),
        None => mode.entry().runbook.iter().map(|s| (*s).to_owned()).collect(),
    };
    steps.iter().enumerate().map(|(i, step)| format!("{}. {step}", i + 1)).collect::<Vec<_>>().join("\n")
}

fn incident_fields(facts: &IncidentFacts) -> Value {
    let revision = match (facts.revision.is_empty(), facts.target_revision.is_empty()) {
        (false, false) if facts.target_revision != facts.revision => {
            format!("{} (target {})", short_revision(&facts.revision), facts.target_revision)
        }
        (false, _) => short_revision(&facts.revision),
        (true, false) => facts.target_revision.clone(),
        (true, true) => "–".into(),
    };
    let operation = match (facts.operation_phase.is_empty(), facts.operation_started_at) {
        (true, _) => "none".to_owned(),
        (false, Some(at)) => format!("{} (started {})", facts.operation_phase, when(at)),
        (false, None) => facts.operation_phase.clone(),
    };
    let or_dash = |s: &str| if s.is_empty() { "–".to_owned() } else { s.to_owned() };
    fields(&[
        ("Project", or_dash(&facts.project)),
        ("Destination", facts.destination()),
        ("Revision", revision),
        ("Failure mode", facts.failure_mode.id().to_owned()),
        ("Sync / health", format!("{} / {}", or_dash(&facts.sync_status), or_dash(&facts.health_status))),
        ("Operation", operation),
    ])
}

fn evidence_lines(facts: &IncidentFacts) -> Vec<String> {
    facts.evidence.iter().filter(|e| e.field != "trigger").map(|e| format!("{}: {}", e.field, e.value)).collect()
}

/// The top-level `text` of a message: what notifications and screen readers show. Slack parses
/// it as mrkdwn (`mrkdwn` is on by default for `chat.postMessage`), where `&`, `<` and `>` are
/// control characters, so text from Argo CD (a reason, a repo host) is escaped like the sections
/// are: a `<!channel>` in an error message must not notify the channel (L8).
fn fallback(text: String) -> String {
    fit(&text, limits::MAX_FALLBACK_TEXT)
}

/// Options of the rendering that come from configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    /// Shown on the snooze button.
    pub snooze_hours: u32,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self { snooze_hours: 4 }
    }
}

fn short_status(status: &Status) -> Value {
    section(format!("{} *{}*", state_emoji(status.state), status.state.label()))
}

/// One incident's parent message. `buttons` are shown unless the incident is resolved;
/// `revision` makes the actions block's id new on every update, as Slack asks.
pub fn incident_parent(facts: &IncidentFacts, status: &Status, buttons: &[Button], revision: u32, options: RenderOptions) -> Rendered {
    let title = facts.failure_mode.entry().title;
    let head_text = format!("{} {} · {}", if status.state == IncidentState::Resolved { "✅" } else { "🚨" }, facts.app(), title);
    let text = fallback(format!("{}: {} ({}) – {}", status.state.label(), facts.app(), facts.failure_mode, facts.reason));
    let evidence = evidence_lines(facts);
    let runbook = runbook_text(facts.failure_mode, Some(facts));
    let block_id = format!("am-actions-{}-r{revision}", facts.incident_id);
    let shown: &[Button] = if status.state == IncidentState::Resolved { &[] } else { buttons };
    let mut head = vec![header(&head_text), section(status_line(status, facts)), incident_fields(facts)];
    // The owning team's mention, markup as Slack writes it (made by `Route::mention_markup`
    // from an id, never from free text, so it cannot be `@channel`).
    if !facts.mention.is_empty() && status.state != IncidentState::Resolved {
        head.insert(1, section(format!("cc {}", facts.mention)));
    }
    let optional: Vec<Optional<'_>> = vec![
        Box::new(|s| capped_section("Why", &facts.reason, scaled(1200, s))),
        Box::new(|s| capped_section("Diagnosis", facts.failure_mode.entry().diagnosis, scaled(1200, s))),
        Box::new(|s| capped_section("Runbook", &runbook, scaled(1500, s))),
        Box::new(|s| code_section("Evidence", &evidence, scaled(2400, s))),
        Box::new(|s| code_section("Failing resources and hooks", &facts.failing, scaled(1500, s))),
    ];
    let mut tail: Vec<Value> = actions(facts, shown, status.state, &block_id, options.snooze_hours).into_iter().collect();
    tail.push(context(fit(
        &format!("Argo Medic · {} · incident {} · decided {}", facts.instance, facts.incident_id, when(facts.decided_at)),
        300,
    )));
    let blocks = assemble(&head, &optional, &tail, || {
        let mut minimal = vec![header(&head_text), short_status(status)];
        minimal.extend(tail.iter().cloned());
        minimal
    });
    Rendered { text, blocks }
}

/// A group member's reply in the group thread: the app, its state, why, and its buttons.
pub fn group_member(facts: &IncidentFacts, status: &Status, buttons: &[Button], revision: u32, options: RenderOptions) -> Rendered {
    let text = fallback(format!("{}: {} – {}", status.state.label(), facts.app(), facts.reason));
    let dash = |s: &str| if s.is_empty() { "–".to_owned() } else { fit(s, 120) };
    let mut line = format!(
        "*{}* · project {} · {} / {} · {} {}",
        fit(facts.app().as_str(), 320),
        dash(&facts.project),
        dash(&facts.sync_status),
        dash(&facts.health_status),
        state_emoji(status.state),
        status.state.label(),
    );
    if !status.detail.is_empty() {
        line.push_str(&format!(" · {}", status.detail));
    }
    if let Some(url) = &facts.app_url {
        line.push_str(&format!("\n<{}|Open in Argo CD>", fit(url, 600)));
    }
    let line = cut_units_escaped(&line, 1200);
    let block_id = format!("am-actions-{}-r{revision}", facts.incident_id);
    let shown: &[Button] = if status.state == IncidentState::Resolved { &[] } else { buttons };
    let evidence = evidence_lines(facts);
    let head = [section(line)];
    let optional: Vec<Optional<'_>> = vec![
        Box::new(|s| capped_section("Why", &facts.reason, scaled(1200, s))),
        Box::new(|s| code_section("Evidence", &evidence, scaled(1500, s))),
    ];
    let tail: Vec<Value> = actions(facts, shown, status.state, &block_id, options.snooze_hours).into_iter().collect();
    let blocks = assemble(&head, &optional, &tail, || {
        let mut minimal = vec![section(format!("*{}* · {}", fit(facts.app().as_str(), 320), status.state.label()))];
        minimal.extend(tail.iter().cloned());
        minimal
    });
    Rendered { text, blocks }
}

/// What an individual parent becomes when its incident joins an incident group: one line
/// pointing at the group thread (no buttons: they are in the thread now).
pub fn folded(facts: &IncidentFacts, group_mode: FailureMode) -> Rendered {
    let line = format!(
        ":link: {} is part of an incident group ({}): its details and buttons are in that incident's thread.",
        fit(facts.app().as_str(), 320),
        group_mode.entry().title
    );
    Rendered { text: fallback(format!("{} joined an incident group", facts.app())), blocks: vec![section(line)] }
}

/// The incident group's parent: how many apps, since when, the diagnosis and runbook, and a
/// sample of the apps (each has its own reply in the thread).
pub fn group_parent(group: &GroupSummary, status: &Status) -> Rendered {
    let entry = group.failure_mode.entry();
    let n = group.total.max(group.apps.len());
    let head_text =
        format!("{} Incident group · {n} apps · {}", if status.state == IncidentState::Resolved { "✅" } else { "🚨" }, entry.title);
    let text = fallback(format!("{}: {n} apps failing the same way ({})", status.state.label(), group.failure_mode));
    let mut state = format!("{} *{}*", state_emoji(status.state), status.state.label());
    if !status.detail.is_empty() {
        state.push_str(&format!(" · {}", status.detail));
    }
    state.push_str(&format!(
        " · {n} apps failing the same way since {}; {} recovered. One reply per app, with its buttons, is in the thread.",
        when(group.first_at),
        group.resolved
    ));
    let apps_text = |cap: usize| -> Option<Value> {
        let mut out = String::new();
        let mut shown = 0;
        for app in &group.apps {
            let item = format!("`{}`", fit(app.as_str(), 320));
            if units(&out) + units(&item) + 40 > cap {
                break;
            }
            if !out.is_empty() {
                out.push_str(", ");
            }
            out.push_str(&item);
            shown += 1;
        }
        if shown == 0 {
            return None;
        }
        if shown < n {
            out.push_str(&format!(" and {} more", n - shown));
        }
        Some(section(titled("Apps", out)))
    };
    let head = [
        header(&head_text),
        section(cut_units_escaped(&state, 600)),
        fields(&[
            ("Failure mode", group.failure_mode.id().to_owned()),
            ("Apps", n.to_string()),
            ("First seen", when(group.first_at)),
            ("Last seen", when(group.last_at)),
            ("Most affected projects", most_affected(&group.projects)),
            ("Most affected clusters", most_affected(&group.clusters)),
        ]),
    ];
    let runbook = runbook_text(group.failure_mode, None);
    let optional: Vec<Optional<'_>> = vec![
        Box::new(|s| capped_section("Diagnosis", entry.diagnosis, scaled(1200, s))),
        Box::new(|s| capped_section("Runbook", &runbook, scaled(1500, s))),
        Box::new(|s| apps_text(scaled(1500, s))),
    ];
    let tail = [context(fit(&format!("Argo Medic · {} · incident group {}", group.instance, group.group_id), 300))];
    let blocks = assemble(&head, &optional, &tail, || vec![header(&head_text), short_status(status), tail[0].clone()]);
    Rendered { text, blocks }
}

/// `name (apps)` for the most affected first (ties by name), as many as fit in a field, and how
/// many more there are; `–` for none.
pub fn most_affected(counts: &[(String, usize)]) -> String {
    let mut sorted: Vec<&(String, usize)> = counts.iter().filter(|(_, n)| *n > 0).collect();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    if sorted.is_empty() {
        return "–".into();
    }
    // Room for the field (escaped later, so measured escaped) and for " and N more".
    let room = FIELD_VALUE - 16;
    let mut out = String::new();
    let mut shown = 0;
    for (name, n) in &sorted {
        let name = if name.is_empty() { "–" } else { name.as_str() };
        let item = format!("{} ({n})", cut_chars(name, 60));
        let sep = if out.is_empty() { 0 } else { 2 };
        if shown > 0 && units(&escape(&out)) + sep + units(&escape(&item)) > room {
            break;
        }
        if sep > 0 {
            out.push_str(", ");
        }
        out.push_str(&item);
        shown += 1;
        if shown == 5 {
            break;
        }
    }
    if shown < sorted.len() {
        out.push_str(&format!(" and {} more", sorted.len() - shown));
    }
    out
}

/// A thread reply: plain text (escaped), with an optional emoji in front.
pub fn note(emoji: &str, text: &str) -> Rendered {
    let body = if emoji.is_empty() { fit(text, 2900) } else { format!("{emoji} {}", fit(text, 2900)) };
    Rendered { text: fallback(text.to_owned()), blocks: vec![section(body)] }
}

/// A fleet outage's parent, rewritten in place each sweep: the cause, how many apps it holds,
/// the canaries, where the wave stands with its ETA at the refresh budget, and two buttons, pause
/// and release, while the wave has not gone (a person must be allowed on every project of the
/// cause to press them: slack-actions checks).
pub fn outage_parent(view: &medic_core::fleet::OutageView) -> Rendered {
    use medic_core::fleet::WaveState;
    use medic_core::ladder::FleetControl;
    let icon = match view.state {
        WaveState::Released => "🌊",
        WaveState::Recovered => "✅",
        _ => "🛑",
    };
    let head = format!("{icon} Fleet outage · {}", view.describe);
    let state = match view.state {
        WaveState::Held if view.overdue => "*Held back, past its time bound*: no canary has healed; the cause needs a person.".to_owned(),
        WaveState::Held => "*Held back*: no canary has healed yet; they are probed each sweep.".to_owned(),
        WaveState::Paused => {
            "*Paused* by a person: the wave waits even if a canary heals; press Release when the cause is fixed.".to_owned()
        }
        WaveState::Relapsed => "*Paused by the wave*: most of a released batch failed again, so the cause is probably back; \
             the rest is held and the canaries are probed again. Press Release to send it anyway."
            .to_owned(),
        WaveState::Recovered => "*Over*: the sweep no longer finds this cause; its apps can be compared again, and any still in \
             trouble have their own handling."
            .to_owned(),
        WaveState::Released => format!(
            "*Released*{}: {} apps handed to the workers in priority order, about {} s at the refresh budget.",
            if view.by_person { " by a person" } else { " (a canary healed)" },
            view.released,
            view.eta_secs
        ),
    };
    let fields = json!({"type": "section", "fields": [
        {"type": "mrkdwn", "text": format!("*Apps held*\n{} of {} listed", view.covered, view.listed)},
        {"type": "mrkdwn", "text": format!("*Canaries*\n{} healed of {} probed ({} kept)", view.healed, view.probed, view.canaries)},
        {"type": "mrkdwn", "text": format!("*Since*\n{}", view.began.as_deref().unwrap_or("unknown"))},
        {"type": "mrkdwn", "text": format!("*Projects*\n{}", fit(&escape(&view.projects.join(", ")), 1900))},
    ]});
    let mut blocks = vec![header(&head), section(state), fields];
    if !matches!(view.state, WaveState::Released | WaveState::Recovered) {
        let button = |control: FleetControl, label: &str, style: &str| {
            json!({"type": "button", "text": {"type": "plain_text", "text": label, "emoji": true},
                   "action_id": view.button(control), "value": view.button(control), "style": style})
        };
        let elements = match view.state {
            WaveState::Paused | WaveState::Relapsed => vec![button(FleetControl::Release, "Release wave", "primary")],
            _ => vec![button(FleetControl::Pause, "Pause wave", "danger"), button(FleetControl::Release, "Release wave now", "primary")],
        };
        blocks.push(json!({"type": "actions", "block_id": fit_plain(&format!("am-fleet-{}", view.button(FleetControl::Pause)), limits::MAX_ID), "elements": elements}));
    }
    let text = fallback(format!("Fleet outage of {}: {} of {} apps held ({:?})", view.describe, view.covered, view.listed, view.state));
    Rendered { text, blocks }
}

/// A thread reply about a person's action: who (a mention), what, and how it turned out.
pub fn action_note(user_id: &str, verb: &str, summary: &str) -> Rendered {
    let body = format!("{} · *{}* · {}", mention(user_id), escape(verb), fit(summary, 2500));
    Rendered { text: fallback(format!("{verb} by {user_id}: {summary}")), blocks: vec![section(body)] }
}

/// The timeline lines a thread reply shows at most: the latest; the earlier are counted.
const TIMELINE_LINES: usize = 25;

/// Timeline events as one compact thread reply ([`medic_core::timeline::ThreadReply`]): a line
/// per event, `HH:MM:SS kind what`, the person or the rule where there is one, the latest
/// [`TIMELINE_LINES`] of them, pointing at `medic incidents show` for the whole timeline.
pub fn timeline_reply(app: &medic_core::app::AppId, events: &[medic_core::timeline::TimelineEvent]) -> Rendered {
    let line_of = |e: &medic_core::timeline::TimelineEvent| {
        let mut line = format!("`{}` *{}* {}", e.at.format("%H:%M:%S"), e.kind.as_str(), escape(&cut_chars(&e.what, 140)));
        if let Some(who) = &e.who {
            line.push_str(&format!(" · {}", mention(who)));
        }
        if let (Some(rule), Some(level)) = (&e.rule, &e.level) {
            line.push_str(&format!(" · `{}` at {}", escape(&cut_chars(rule, 60)), escape(level)));
        }
        line
    };
    // The latest first, as many as fit in a section with room for the count of the rest.
    let room = limits::MAX_SECTION_TEXT - 100;
    let mut shown: Vec<String> = Vec::new();
    let mut used = 0;
    for e in events.iter().rev().take(TIMELINE_LINES) {
        let line = line_of(e);
        if used + units(&line) + 1 > room {
            break;
        }
        used += units(&line) + 1;
        shown.push(line);
    }
    shown.reverse();
    let earlier = events.len() - shown.len();
    let mut body = String::from(":spiral_note_pad: ");
    if earlier > 0 {
        body.push_str(&format!("… {earlier} earlier events\n"));
    }
    body.push_str(&shown.join("\n"));
    let text = fallback(format!("{} timeline events of {app}", events.len()));
    Rendered { text, blocks: vec![section(body), context(format!("the whole timeline: `medic incidents show {}`", escape(app.as_str())))] }
}

/// The rows of trouble a weekly report shows, most decisions first; the rest are counted in one
/// line that points at `medic report`.
const REPORT_ROWS: usize = 20;

/// The weekly shadow report of `instance` ([`medic_core::report`]), made at `now`: what was
/// decided in the week, what each trust level would have done with it, and what happened next,
/// totalled and per failure mode and project (most decisions first). The same counts as
/// `medic report --since 7d`, whose table it points at for the rest.
pub fn weekly_report(report: &medic_core::report::Report, instance: &str, now: DateTime<Utc>) -> Rendered {
    use medic_core::report::Next;
    let week = chrono::Datelike::iso_week(&now);
    let head_text = format!("📊 Argo Medic weekly report · {instance} · {}-W{:02}", week.year(), week.week());
    let rows = &report.rows;
    let sum = |f: &dyn Fn(&medic_core::report::ReportRow) -> usize| rows.iter().map(f).sum::<usize>();
    let next = |n: Next| sum(&|r| r.next.get(&n).copied().unwrap_or(0));
    let trouble = sum(&|r| r.decisions);
    let text = fallback(format!(
        "Argo Medic weekly report ({instance}): {} decisions since {}, {trouble} about apps in trouble, in {} rows",
        report.decisions,
        when(report.since),
        rows.len()
    ));
    let mut blocks = vec![
        header(&head_text),
        section(format!(
            "*{} decisions* recorded since {}; *{trouble}* about apps in trouble, in {} rows of failure mode and project. \
             What each trust level would have done with them, and what happened next, from the apps' later records.",
            report.decisions,
            when(report.since),
            rows.len()
        )),
    ];
    if rows.is_empty() {
        blocks.push(section("Nothing in trouble was decided this week.".to_owned()));
    } else {
        blocks.push(fields(&[
            ("Would change Argo CD", sum(&|r| r.would_change).to_string()),
            ("Would hand to a person", sum(&|r| r.would_escalate).to_string()),
            ("Argo Medic acted", next(Next::ArgoMedicActed).to_string()),
            ("A person acted", next(Next::PersonActed).to_string()),
            ("Healed by itself", next(Next::HealedByItself).to_string()),
            ("Healed later", next(Next::HealedLater).to_string()),
            ("Still broken", next(Next::StillBroken).to_string()),
            ("Not seen since", next(Next::NotSeenSince).to_string()),
        ]));
        blocks.push(json!({"type": "divider"}));
        let mut ordered: Vec<&medic_core::report::ReportRow> = rows.iter().collect();
        ordered
            .sort_by(|a, b| b.decisions.cmp(&a.decisions).then_with(|| (&a.failure_mode, &a.project).cmp(&(&b.failure_mode, &b.project))));
        for r in ordered.iter().take(REPORT_ROWS) {
            let levels = r.levels.iter().map(|(level, n)| format!("{} {n}", escape(level))).collect::<Vec<_>>().join(", ");
            let outcomes = Next::ALL
                .iter()
                .map(|n| (n, r.next.get(n).copied().unwrap_or(0)))
                .filter(|(_, k)| *k > 0)
                .map(|(n, k)| format!("{} {k}", n.as_str().replace('_', " ")))
                .collect::<Vec<_>>()
                .join(" · ");
            blocks.push(section(format!(
                "*{}* · project `{}` · {} decisions on {} apps · levels: {levels}\nwould: change {} · escalate {} · wait {}\nnext: {}",
                escape(&cut_chars(&r.failure_mode, 80)),
                escape(&cut_chars(if r.project.is_empty() { "–" } else { &r.project }, 80)),
                r.decisions,
                r.apps,
                r.would_change,
                r.would_escalate,
                r.would_wait,
                if outcomes.is_empty() { "–".to_owned() } else { outcomes }
            )));
        }
        if ordered.len() > REPORT_ROWS {
            blocks.push(context(format!("and {} more rows: `medic report --since 7d` shows them all", ordered.len() - REPORT_ROWS)));
        }
    }
    blocks.push(context(fit(&format!("Argo Medic · {instance} · made {} · the whole table: `medic report --since 7d`", when(now)), 300)));
    Rendered { text, blocks }
}

/// A `<@U…>` mention of a Slack user id, or the id itself escaped when it does not look like one.
pub fn mention(user_id: &str) -> String {
    let ok = !user_id.is_empty() && user_id.len() <= 32 && user_id.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
    if ok { format!("<@{user_id}>") } else { escape(user_id) }
}

/// Every Block Kit limit `blocks` and `text` break, as readable strings (empty when valid).
pub fn violations(text: &str, blocks: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    if units(text) > limits::MAX_FALLBACK_TEXT {
        out.push(format!("fallback text is {} units (max {})", units(text), limits::MAX_FALLBACK_TEXT));
    }
    if blocks.len() > limits::MAX_BLOCKS {
        out.push(format!("{} blocks (max {})", blocks.len(), limits::MAX_BLOCKS));
    }
    let size = blocks_size(blocks);
    if size > limits::MESSAGE_BUDGET {
        out.push(format!("blocks are {size} units (budget {})", limits::MESSAGE_BUDGET));
    }
    let mut ids = std::collections::HashSet::new();
    let len = |v: &Value, pointer: &str| v.pointer(pointer).and_then(Value::as_str).map(units);
    let mut check = |what: String, n: Option<usize>, max: usize, min: usize| match n {
        Some(n) if n > max || n < min => out.push(format!("{what} is {n} units (allowed {min}..={max})")),
        _ => {}
    };
    let mut extra = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        if let Some(id) = b.get("block_id").and_then(Value::as_str) {
            check(format!("blocks[{i}].block_id"), Some(units(id)), limits::MAX_ID, 1);
            if !ids.insert(id.to_owned()) {
                extra.push(format!("blocks[{i}].block_id `{id}` is not unique"));
            }
        }
        match b.get("type").and_then(Value::as_str) {
            Some("header") => {
                check(format!("blocks[{i}] header text"), len(b, "/text/text").or(Some(0)), limits::MAX_HEADER_TEXT, 1);
                if b.pointer("/text/type").and_then(Value::as_str) != Some("plain_text") {
                    extra.push(format!("blocks[{i}] header text is not plain_text"));
                }
            }
            Some("section") => {
                let has_fields = b.get("fields").is_some();
                if b.get("text").is_some() || !has_fields {
                    check(format!("blocks[{i}] section text"), len(b, "/text/text").or(Some(0)), limits::MAX_SECTION_TEXT, 1);
                }
                if let Some(fields) = b.get("fields").and_then(Value::as_array) {
                    if fields.len() > limits::MAX_FIELDS || fields.is_empty() {
                        extra.push(format!("blocks[{i}] has {} fields (1..={})", fields.len(), limits::MAX_FIELDS));
                    }
                    for (j, f) in fields.iter().enumerate() {
                        check(format!("blocks[{i}].fields[{j}]"), len(f, "/text").or(Some(0)), limits::MAX_FIELD_TEXT, 1);
                    }
                }
            }
            Some("actions") => {
                let elements = b.get("elements").and_then(Value::as_array).cloned().unwrap_or_default();
                if elements.is_empty() || elements.len() > limits::MAX_ACTIONS_ELEMENTS {
                    extra.push(format!("blocks[{i}] has {} elements (1..={})", elements.len(), limits::MAX_ACTIONS_ELEMENTS));
                }
                let mut action_ids = std::collections::HashSet::new();
                for (j, e) in elements.iter().enumerate() {
                    let at = format!("blocks[{i}].elements[{j}]");
                    check(format!("{at}.text"), len(e, "/text/text").or(Some(0)), limits::MAX_BUTTON_TEXT, 1);
                    check(format!("{at}.value"), len(e, "/value"), limits::MAX_BUTTON_VALUE, 1);
                    check(format!("{at}.action_id"), len(e, "/action_id"), limits::MAX_ID, 1);
                    check(format!("{at}.url"), len(e, "/url"), limits::MAX_URL, 1);
                    if let Some(id) = e.get("action_id").and_then(Value::as_str)
                        && !action_ids.insert(id.to_owned())
                    {
                        extra.push(format!("{at}.action_id is not unique in its block"));
                    }
                    if e.get("confirm").is_some() {
                        check(format!("{at}.confirm.title"), len(e, "/confirm/title/text"), limits::MAX_CONFIRM_TITLE, 1);
                        check(format!("{at}.confirm.text"), len(e, "/confirm/text/text"), limits::MAX_CONFIRM_TEXT, 1);
                        check(format!("{at}.confirm.confirm"), len(e, "/confirm/confirm/text"), limits::MAX_CONFIRM_BUTTON, 1);
                        check(format!("{at}.confirm.deny"), len(e, "/confirm/deny/text"), limits::MAX_CONFIRM_BUTTON, 1);
                    }
                }
            }
            Some("context") => {
                let elements = b.get("elements").and_then(Value::as_array).map_or(0, Vec::len);
                if elements == 0 || elements > limits::MAX_CONTEXT_ELEMENTS {
                    extra.push(format!("blocks[{i}] context has {elements} elements (1..={})", limits::MAX_CONTEXT_ELEMENTS));
                }
            }
            Some("divider") => {}
            other => extra.push(format!("blocks[{i}] has an unexpected type {other:?}")),
        }
    }
    out.extend(extra);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use medic_core::human_action::human_action_key;
    use medic_core::keys::IncidentKey;
    use medic_core::keys::is_action_id;
    use proptest::prelude::*;

    fn facts(evidence: Vec<Evidence>, reason: &str) -> IncidentFacts {
        IncidentFacts {
            instance: "prod".into(),
            incident_id: "inc-0123456789abcdef0123".into(),
            incident_began: None,
            name: "payments".into(),
            namespace: "argocd".into(),
            project: "payments".into(),
            failure_mode: FailureMode::HookFailed,
            destination_server: "https://kubernetes.default.svc".into(),
            destination_name: String::new(),
            destination_namespace: "payments".into(),
            revision: "34a1021526089c57744ab3e25ec2f81ca02d37c5".into(),
            target_revision: "main".into(),
            sync_status: "OutOfSync".into(),
            health_status: "Degraded".into(),
            operation_phase: "Failed".into(),
            operation_started_at: Some("2026-11-01T12:00:00Z".parse().unwrap()),
            reason: reason.into(),
            evidence,
            failing: vec!["Job/db-migrate (hook PreSync, Failed): Job has reached the specified backoff limit".into()],
            human_actions: vec![HumanAction::Sync, HumanAction::HardRefresh, HumanAction::Snooze, HumanAction::Acknowledge],
            decided_at: "2026-11-01T12:30:00Z".parse().unwrap(),
            app_url: Some(app_url("argocd.example.com", "argocd", "payments")),
            sync_revision: String::new(),
            sync_prune: false,
            recommended: Some(HumanAction::Acknowledge),
            failed_hooks: vec![FailedHook { kind: "Job".into(), namespace: "payments".into(), name: "db-migrate".into() }],
            mention: String::new(),
        }
    }

    fn t0() -> DateTime<Utc> {
        "2026-11-01T12:30:00Z".parse().unwrap()
    }

    fn status(state: IncidentState) -> Status {
        Status { state, detail: String::new(), at: "2026-11-01T12:30:00Z".parse().unwrap(), snoozed_until: None }
    }

    #[test]
    fn a_parent_shows_the_app_the_mode_the_link_the_runbook_and_one_button_per_allowed_action() {
        let f = facts(vec![Evidence::new("status.operationState.message", "hook failed <boom> & more")], "The PreSync hook failed.");
        let r = incident_parent(&f, &status(IncidentState::NeedsHuman), &buttons(&f, 0), 0, RenderOptions::default());
        assert!(violations(&r.text, &r.blocks).is_empty(), "{:?}", violations(&r.text, &r.blocks));
        let json = Value::Array(r.blocks.clone()).to_string();
        assert_eq!(r.blocks[0]["type"], "header");
        assert!(r.blocks[0]["text"]["text"].as_str().unwrap().contains("argocd/payments · Sync hook failed"));
        assert!(json.contains("https://argocd.example.com/applications/argocd/payments"), "{json}");
        assert!(json.contains("*Runbook*\\n1. "), "{json}");
        assert!(json.contains("&lt;boom&gt; &amp; more"), "evidence is escaped: {json}");
        let actions = r.blocks.iter().find(|b| b["type"] == "actions").unwrap();
        let elements = actions["elements"].as_array().unwrap();
        assert_eq!(elements.len(), 4);
        for e in elements {
            assert!(is_action_id(e["value"].as_str().unwrap()));
            assert_eq!(e["value"], e["action_id"], "a button carries only its opaque id");
        }
    }

    /// L8 (reliability review of 0a3f9d5): the fallback `text` carried Argo CD's words raw, so a
    /// reason holding `<!channel>` or a `<url|label>` link was parsed by Slack. Fails on 4b8d4db.
    #[test]
    fn the_fallback_text_escapes_what_argo_cd_wrote_as_the_sections_do() {
        let reply = note("", "sync failed: <!channel> see <https://evil.example.com|the docs> & retry");
        assert_eq!(reply.text, "sync failed: &lt;!channel&gt; see &lt;https://evil.example.com|the docs&gt; &amp; retry");
        assert!(!reply.text.contains('<') && !reply.text.contains('>'));
        assert!(violations(&reply.text, &reply.blocks).is_empty());
        let long = note("", &"<".repeat(10_000));
        assert!(units(&long.text) <= limits::MAX_FALLBACK_TEXT && !long.text.contains('<'), "cut, never inside an escape");
    }

    #[test]
    fn an_outage_parent_offers_pause_and_release_while_the_wave_waits_and_nothing_once_it_went() {
        use medic_core::fleet::{OutageView, WaveState};
        use medic_core::ladder::FleetControl;
        let view = OutageView {
            scope: "repo:git.example.com".into(),
            describe: "source host git.example.com".into(),
            began: Some("2026-11-01T07:58:00Z".into()),
            since: Some("2026-11-01T08:00:00Z".into()),
            covered: 1_990,
            listed: 2_000,
            canaries: 3,
            probed: 3,
            healed: 0,
            state: WaveState::Held,
            released: 0,
            eta_secs: 398,
            by_person: false,
            overdue: false,
            // Many long project names still fit the field.
            projects: (0..400).map(|i| format!("team-with-a-long-project-name-{i:03}")).collect(),
        };
        let ids = |r: &Rendered| -> Vec<String> {
            r.blocks
                .iter()
                .filter(|b| b["type"] == "actions")
                .flat_map(|b| b["elements"].as_array().unwrap().iter().map(|e| e["value"].as_str().unwrap().to_owned()))
                .collect()
        };
        let held = outage_parent(&view);
        assert!(violations(&held.text, &held.blocks).is_empty(), "{:?}", violations(&held.text, &held.blocks));
        assert_eq!(ids(&held), [view.button(FleetControl::Pause), view.button(FleetControl::Release)]);
        let paused = outage_parent(&OutageView { state: WaveState::Paused, by_person: true, ..view.clone() });
        assert_eq!(ids(&paused), [view.button(FleetControl::Release)], "paused: only release");
        let relapsed = outage_parent(&OutageView { state: WaveState::Relapsed, ..view.clone() });
        assert_eq!(ids(&relapsed), [view.button(FleetControl::Release)], "paused by the wave: only release");
        assert!(relapsed.blocks.iter().any(|b| b.to_string().contains("Paused by the wave")), "{:?}", relapsed.blocks);
        assert!(violations(&relapsed.text, &relapsed.blocks).is_empty());
        let gone = outage_parent(&OutageView { state: WaveState::Released, released: 1_987, ..view.clone() });
        assert!(ids(&gone).is_empty());
        assert!(gone.blocks.iter().any(|b| b.to_string().contains("1987 apps handed to the workers")), "{:?}", gone.blocks);
        let later = OutageView { since: Some("2026-11-02T08:00:00Z".into()), ..view.clone() };
        assert_ne!(later.button(FleetControl::Pause), view.button(FleetControl::Pause), "a later outage of the scope has its own buttons");
        assert_ne!(later.key(), view.key(), "and its own parent");
        // A start refined by a canary's condition moves neither (H3): the sighting is the identity.
        let refined = OutageView { began: Some("2026-11-01T07:30:00Z".into()), ..view.clone() };
        assert_eq!((refined.key(), refined.button(FleetControl::Pause)), (view.key(), view.button(FleetControl::Pause)));
        // A view the previous release stored (no sighting) keeps the key it was posted under.
        let previous = OutageView { since: None, ..view.clone() };
        assert_eq!(previous.key(), "outage:repo:git.example.com:2026-11-01T07:58:00Z");
    }

    #[test]
    fn a_resolved_parent_has_no_buttons_and_every_update_gets_a_new_actions_block_id() {
        let f = facts(vec![], "x");
        let resolved = incident_parent(&f, &status(IncidentState::Resolved), &buttons(&f, 0), 3, RenderOptions::default());
        assert!(resolved.blocks.iter().all(|b| b["type"] != "actions"));
        let a = incident_parent(&f, &status(IncidentState::NeedsHuman), &buttons(&f, 0), 1, RenderOptions::default());
        let b = incident_parent(&f, &status(IncidentState::Investigating), &buttons(&f, 0), 2, RenderOptions::default());
        let id = |r: &Rendered| r.blocks.iter().find(|b| b["type"] == "actions").unwrap()["block_id"].clone();
        assert_ne!(id(&a), id(&b));
    }

    /// The newcomer review's row 35: after Acknowledge the message still offered Acknowledge, and
    /// a second click posted a second "acknowledged". Once someone has taken the incident, the
    /// parent and the group reply offer the other actions only.
    #[test]
    fn acknowledge_is_offered_only_until_someone_has_taken_the_incident() {
        let f = facts(vec![], "x");
        let offered = |r: &Rendered| -> Vec<String> {
            r.blocks
                .iter()
                .filter(|b| b["type"] == "actions")
                .flat_map(|b| b["elements"].as_array().unwrap().iter().map(|e| e["text"]["text"].as_str().unwrap().to_owned()))
                .collect()
        };
        let ack = HumanAction::Acknowledge.button().label;
        let open = incident_parent(&f, &status(IncidentState::NeedsHuman), &buttons(&f, 0), 1, RenderOptions::default());
        assert!(offered(&open).iter().any(|l| l == ack), "{:?}", offered(&open));
        for state in [IncidentState::Investigating, IncidentState::Remediating] {
            for r in [
                incident_parent(&f, &status(state), &buttons(&f, 0), 2, RenderOptions::default()),
                group_member(&f, &status(state), &buttons(&f, 0), 2, RenderOptions::default()),
            ] {
                let labels = offered(&r);
                assert!(!labels.iter().any(|l| l == ack) && labels.len() == 3, "{state:?}: {labels:?}");
            }
        }
    }

    #[test]
    fn action_ids_are_opaque_distinct_per_action_and_generation_and_keys_follow_them() {
        let a = action_id("inc-1", HumanAction::Sync, 0);
        assert!(is_action_id(&a) && !a.contains("sync") && !a.contains("inc-1"));
        assert_ne!(a, action_id("inc-1", HumanAction::Sync, 1));
        assert_ne!(a, action_id("inc-1", HumanAction::HardRefresh, 0));
        assert_ne!(a, action_id("inc-2", HumanAction::Sync, 0));
        assert_eq!(human_action_key(&a), human_action_key(&a));
        assert_ne!(human_action_key(&a), human_action_key(&action_id("inc-1", HumanAction::Sync, 1)));
        assert!(!is_action_id("amact-xyz") && !is_action_id("sync"));
    }

    #[test]
    fn fit_cuts_within_the_limit_and_never_inside_an_escape() {
        assert_eq!(fit("a<b", 10), "a&lt;b");
        let cut = fit("<<<<<<<<", 10);
        assert!(units(&cut) <= 10 && cut.ends_with('…') && !cut.contains("&l…"), "{cut}");
        assert_eq!(fit("😀😀😀", 3), "😀…");
        assert_eq!(fit("abc", 0), "");
    }

    #[test]
    fn the_human_sync_plan_never_prunes_and_uses_the_target_revision_under_automated_sync() {
        let mut app = Application::default();
        app.status.sync = Some(medic_core::app::SyncStatus { status: "OutOfSync".into(), revision: "abc".into(), revisions: vec![] });
        let d = Decision {
            app: medic_core::AppId::new("argocd", "x"),
            action: medic_core::ladder::Action::Escalate,
            failure_mode: FailureMode::SyncFailed,
            rule: String::new(),
            reason: String::new(),
            evidence: vec![],
            retry_after_secs: None,
            incident: Some(IncidentKey {
                instance: "i".into(),
                app: medic_core::AppId::new("argocd", "x"),
                revision: "abc".into(),
                began_at: None,
            }),
            idempotency_key: None,
            sync: None,
            human_actions: vec![HumanAction::Sync],
            recommended: None,
            trust: None,
            route: None,
            resolves_incident: false,
            decided_at: t0(),
        };
        let plan = human_sync_plan(&app, &d);
        assert_eq!((plan.revision.as_str(), plan.prune), ("abc", false));
        app.spec.sync_policy = Some(Box::new(medic_core::app::SyncPolicy {
            automated: Some(medic_core::app::SyncPolicyAutomated { prune: true, ..Default::default() }),
            ..Default::default()
        }));
        let plan = human_sync_plan(&app, &d);
        assert_eq!((plan.revision.as_str(), plan.prune), ("", false));
    }

    fn long_text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[ -~]{0,200}",
            proptest::collection::vec(
                prop_oneof![Just("<".to_owned()), Just("&".to_owned()), Just("```".to_owned()), Just("😀".to_owned()), "[a-z ]{1,40}"],
                0..2000
            )
            .prop_map(|v| v.concat()),
            (1usize..20_000).prop_map(|n| "é<".repeat(n / 2)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_long_evidence_never_breaks_a_block_kit_limit(
            items in proptest::collection::vec((long_text(), long_text()), 0..60),
            reason in long_text(),
            failing in proptest::collection::vec(long_text(), 0..60),
            name in "[a-z0-9]([-a-z0-9]{0,250}[a-z0-9])?",
            project in "[a-z0-9-]{1,253}",
            server in long_text(),
            detail in long_text(),
            state in prop_oneof![Just(IncidentState::NeedsHuman), Just(IncidentState::Investigating), Just(IncidentState::Remediating), Just(IncidentState::Resolved)],
            all_actions in any::<bool>(),
        ) {
            let mut f = facts(items.into_iter().map(|(a, b)| Evidence::new(a, b)).collect(), &reason);
            f.name = name;
            f.project = project.clone();
            f.destination_server = server;
            f.failing = failing;
            f.app_url = Some(app_url("argocd.example.com", &f.namespace, &f.name));
            if all_actions {
                f.human_actions = vec![HumanAction::Sync, HumanAction::HardRefresh, HumanAction::TerminateOperation, HumanAction::Snooze, HumanAction::Acknowledge];
            }
            let st = Status { state, detail: escape(&detail), at: t0(), snoozed_until: Some(t0()) };
            let b = buttons(&f, 7);
            for r in [
                incident_parent(&f, &st, &b, 9, RenderOptions::default()),
                group_member(&f, &st, &b, 9, RenderOptions { snooze_hours: 4000 }),
                folded(&f, FailureMode::ComparisonErrorTransient),
                note(":white_check_mark:", &reason),
            ] {
                let v = violations(&r.text, &r.blocks);
                prop_assert!(v.is_empty(), "{:?}", v);
            }
            let group = GroupSummary {
                group_id: "flt-1".into(),
                instance: "prod".into(),
                failure_mode: FailureMode::ComparisonErrorTransient,
                apps: (0..300).map(|i| medic_core::AppId::new("argocd", &format!("{}-{i}", f.name))).collect(),
                total: 5000,
                resolved: 3,
                projects: (0..20).map(|i| (format!("{project}{i}"), i)).collect(),
                clusters: vec![(f.destination_server.clone(), 5000)],
                first_at: t0(),
                last_at: t0(),
            };
            let r = group_parent(&group, &st);
            let v = violations(&r.text, &r.blocks);
            prop_assert!(v.is_empty(), "{:?}", v);
        }
    }

    /// A busy week: more rows than a message shows, long names. The message stays within Slack's
    /// limits, shows the rows with most decisions, and counts the rest.
    #[test]
    fn a_weekly_report_of_a_busy_week_fits_and_counts_the_rows_it_leaves_out() {
        use medic_core::report::{Next, Report, ReportRow};
        let rows: Vec<ReportRow> = (0..30)
            .map(|i| ReportRow {
                failure_mode: format!("mode-{i:02}-{}", "x".repeat(200)),
                project: format!("project-{i}"),
                decisions: i + 1,
                apps: 1,
                levels: [("act".to_owned(), i + 1)].into_iter().collect(),
                would_change: i,
                would_escalate: 1,
                would_wait: 0,
                next: [(Next::HealedByItself, i + 1)].into_iter().collect(),
            })
            .collect();
        let now: DateTime<Utc> = "2026-12-07T09:00:00Z".parse().unwrap();
        let report = Report { since: now - chrono::TimeDelta::days(7), decisions: 600, rows };
        let r = weekly_report(&report, "prod", now);
        assert!(violations(&r.text, &r.blocks).is_empty(), "{:?}", violations(&r.text, &r.blocks));
        let shown: Vec<&str> =
            r.blocks.iter().filter_map(|b| b.pointer("/text/text").and_then(Value::as_str)).filter(|t| t.starts_with("*mode-")).collect();
        assert_eq!(shown.len(), REPORT_ROWS);
        assert!(shown[0].starts_with("*mode-29-"), "most decisions first: {}", shown[0]);
        assert!(Value::Array(r.blocks.clone()).to_string().contains("and 10 more rows"), "the rest counted");
        assert!(r.blocks[0].to_string().contains("2026-W50"), "the header names the week: {}", r.blocks[0]);
        let empty = weekly_report(&Report { since: report.since, decisions: 0, rows: vec![] }, "prod", now);
        assert!(Value::Array(empty.blocks).to_string().contains("Nothing in trouble was decided this week"));
    }

    /// A long timeline: the latest events, the earlier counted, within a section's limit.
    #[test]
    fn a_timeline_reply_shows_the_latest_events_within_slack_s_limits() {
        use medic_core::timeline::{EventKind, TimelineEvent};
        let app = medic_core::app::AppId::new("argocd", "payouts");
        let at: DateTime<Utc> = "2026-12-07T09:00:00Z".parse().unwrap();
        let events: Vec<TimelineEvent> = (0..40)
            .map(|i| {
                let e = TimelineEvent::of(
                    &app,
                    "inc-1",
                    EventKind::Decided,
                    &i.to_string(),
                    at + chrono::TimeDelta::seconds(i),
                    "y".repeat(300),
                );
                e.decided_by("stale_reconcile", Some("act".into()))
            })
            .collect();
        let r = timeline_reply(&app, &events);
        assert!(violations(&r.text, &r.blocks).is_empty(), "{:?}", violations(&r.text, &r.blocks));
        let body = r.blocks[0].pointer("/text/text").and_then(Value::as_str).unwrap();
        let shown = body.matches("*decided*").count();
        assert!((10..=25).contains(&shown), "as many as fit, 25 at most: {shown}");
        assert!(body.contains(&format!("… {} earlier events", 40 - shown)), "{body}");
        assert!(body.contains("`09:00:39` *decided*"), "the latest is shown: {body}");
        assert!(!body.contains(&format!("`09:00:{:02}`", 39 - shown)), "the earlier are counted, not shown");
        assert!(r.blocks[1].to_string().contains("medic incidents show argocd/payouts"));
    }
}
