//! `medic incidents`: the operator's view of the incidents in a state store (the SQLite file of
//! `medic sweep`/`medic serve`, or a deployed stack's DynamoDB table), joined with the Slack
//! records kept next to them. Reads only: nothing here calls Argo CD or Slack.
//!
//! The next step is a forecast from the store, not a decision: the policy decides on the live app
//! when it next looks. What is shown is when that look happens at the earliest, and which rung
//! the incident's ladder offers then if the app is still in trouble:
//!
//! - a human owns it (an escalation completed): Argo Medic acts only on its buttons until the app
//!   is Synced and Healthy again;
//! - the last decision was a wait: looked at again `retry_after_secs` after it;
//! - otherwise: the last action is judged `settle_secs` after it was taken;
//! - an action still claimed (outcome `requested`): it is under way, or its holder crashed and the
//!   claim is taken over when it expires.
//!
//! The sweeper also looks at every open incident on each of its windows.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use medic_core::AppId;
use medic_core::catalogue::FailureMode;
use medic_core::incident::{DecisionNote, History, IncidentRecord, Outcome};
use medic_core::ladder::Rung;
use medic_core::ports::{EscalationStore, IncidentLedger, IncidentStore};
use medic_core::timeline::TimelineEvent;
use medic_core::{PolicyConfig, catalogue};
use medic_slack::{SlackIncidentView, incident_view};
use serde::Serialize;

/// What to list and how.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Also incidents closed within the stores' retention (7 days).
    pub closed: bool,
    /// Only these projects (none: all).
    pub projects: Vec<String>,
    /// Only these failure modes (ids, `hook-failed`; none: all).
    pub modes: Vec<String>,
    /// Only incidents in trouble for longer than this.
    pub older_than: Option<Duration>,
    /// Only this app (`namespace/name`, or `name` when unambiguous): `medic incidents show`.
    pub app: Option<String>,
    /// `settle_secs` and `max_actions_per_incident` for the forecast.
    pub policy: PolicyConfig,
    /// The Slack workspace's URL (`https://acme.slack.com`) for thread links.
    pub slack_url: Option<String>,
}

/// One incident as `medic incidents` shows it (`-o json` prints these, one per line).
#[derive(Debug, Clone, Serialize)]
pub struct IncidentView {
    pub app: String,
    pub incident_id: String,
    pub instance: String,
    pub revision: String,
    /// `open` or `closed`.
    pub status: &'static str,
    /// The failure mode of the last decision (or of the escalation); `null` when unknown.
    pub failure_mode: Option<String>,
    pub project: Option<String>,
    /// When the trouble began (the incident's episode start), else when the store opened it.
    pub since: DateTime<Utc>,
    pub opened_at: DateTime<Utc>,
    pub closed_at: Option<DateTime<Utc>>,
    /// The ladder's rungs taken, oldest first.
    pub rungs: Vec<RungTaken>,
    pub next: NextStep,
    pub slack: Option<SlackThread>,
    /// The fleet incident it belongs to, if any.
    pub fleet: Option<FleetMembership>,
    pub last_decision: Option<DecisionNote>,
    /// The incident's timeline, oldest first: `medic incidents show` reads it; a listing does not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<TimelineEvent>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RungTaken {
    pub rung: Rung,
    pub at: DateTime<Utc>,
    pub outcome: Outcome,
    pub idempotency_key: Option<String>,
}

/// The forecast (see the module documentation).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NextStep {
    /// `human`, `look_again`, `in_progress`, `none`.
    pub kind: &'static str,
    /// The rung the ladder offers next if the app is still in trouble (`refresh`, ..., `escalate`).
    pub rung: Option<Rung>,
    /// The earliest time Argo Medic looks again; `null` when it does not plan to.
    pub at: Option<DateTime<Utc>>,
    pub why: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SlackThread {
    /// `needs_human`, `investigating`, `remediating`, `resolved`.
    pub state: medic_core::human_action::IncidentState,
    pub detail: String,
    pub channel: Option<String>,
    pub thread_ts: Option<String>,
    pub message_ts: Option<String>,
    /// `https://<workspace>/archives/<channel>/p<ts>` when the workspace URL is known.
    pub url: Option<String>,
    /// Snoozed when it escalated: nothing was posted.
    pub suppressed: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct FleetMembership {
    pub fleet_id: String,
    pub failure_mode: FailureMode,
    pub apps: usize,
    pub resolved: usize,
}

/// Reads, joins, filters and sorts (open first, then longest in trouble first).
pub async fn collect<L: IncidentLedger + IncidentStore, E: EscalationStore>(
    ledger: &L,
    slack: &E,
    query: &Query,
    now: DateTime<Utc>,
) -> Result<Vec<IncidentView>> {
    let records = ledger.incidents(query.closed || query.app.is_some()).await.context("reading the incidents")?;
    let wanted_app = match &query.app {
        Some(app) => Some(resolve_app(app, &records)?),
        None => None,
    };
    let mut views = Vec::new();
    for record in records {
        if wanted_app.as_ref().is_some_and(|a| a != &record.app) {
            continue;
        }
        let slack_view = incident_view(slack, &record.app, &record.incident.id()).await.context("reading the Slack records")?;
        let timeline = match wanted_app {
            Some(_) => ledger.timeline(&record.app, &record.incident.id()).await.context("reading the incident's timeline")?,
            None => Vec::new(),
        };
        let view = IncidentView { timeline, ..view(record, slack_view, query) };
        if !query.projects.is_empty() && !view.project.as_ref().is_some_and(|p| query.projects.contains(p)) {
            continue;
        }
        if !query.modes.is_empty() && !view.failure_mode.as_ref().is_some_and(|m| query.modes.contains(m)) {
            continue;
        }
        if let Some(d) = query.older_than
            && now - view.since < TimeDelta::from_std(d).unwrap_or(TimeDelta::MAX)
        {
            continue;
        }
        views.push(view);
    }
    views.sort_by(|a, b| (a.closed_at.is_some(), a.since, &a.app).cmp(&(b.closed_at.is_some(), b.since, &b.app)));
    Ok(views)
}

/// `namespace/name` of `app` among the records (a bare `name` matches one namespace).
fn resolve_app(app: &str, records: &[IncidentRecord]) -> Result<AppId> {
    if app.contains('/') {
        return AppId::parse(app).with_context(|| format!("`{app}` is not namespace/name"));
    }
    let mut found: Vec<&AppId> = records.iter().map(|r| &r.app).filter(|a| a.name() == app).collect();
    found.sort();
    found.dedup();
    match found.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Ok(AppId::new("argocd", app)),
        many => {
            bail!("`{app}` is ambiguous: {}; name it as namespace/name", many.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", "))
        }
    }
}

fn view(record: IncidentRecord, slack: Option<SlackIncidentView>, query: &Query) -> IncidentView {
    let note = record.last_decision.clone();
    let failure_mode = note
        .as_ref()
        .map(|n| n.failure_mode.clone())
        .filter(|m| !m.is_empty())
        .or_else(|| slack.as_ref().map(|s| s.failure_mode.id().to_owned()));
    let project = note.as_ref().map(|n| n.project.clone()).filter(|p| !p.is_empty()).or_else(|| slack.as_ref().map(|s| s.project.clone()));
    let next = next_step(&record, failure_mode.as_deref(), &query.policy);
    let thread = slack.as_ref().map(|s| SlackThread {
        state: s.state,
        detail: s.detail.clone(),
        channel: s.channel.clone(),
        thread_ts: s.thread_ts.clone(),
        message_ts: s.message_ts.clone(),
        url: query.slack_url.as_deref().and_then(|base| permalink(base, s)),
        suppressed: s.suppressed,
    });
    let fleet = slack.and_then(|s| s.group).map(|f| FleetMembership {
        fleet_id: f.group_id,
        failure_mode: f.failure_mode,
        apps: f.apps,
        resolved: f.resolved,
    });
    IncidentView {
        incident_id: record.incident.id(),
        instance: record.incident.instance.clone(),
        revision: record.incident.revision.clone(),
        status: if record.closed_at.is_some() { "closed" } else { "open" },
        failure_mode,
        project,
        since: record.incident.began_at.unwrap_or(record.opened_at).min(record.opened_at),
        opened_at: record.opened_at,
        closed_at: record.closed_at,
        rungs: record
            .attempts
            .iter()
            .map(|a| RungTaken {
                rung: a.rung,
                at: a.at,
                outcome: a.outcome,
                idempotency_key: a.idempotency_key.as_ref().map(|k| k.to_string()),
            })
            .collect(),
        next,
        slack: thread,
        fleet,
        last_decision: note,
        app: record.app.to_string(),
        timeline: Vec::new(),
    }
}

/// Slack's permalink form: `<workspace>/archives/<channel>/p<ts without the dot>`, with the
/// thread for a reply.
fn permalink(base: &str, s: &SlackIncidentView) -> Option<String> {
    let channel = s.channel.as_deref()?;
    let ts = s.message_ts.as_deref().or(s.thread_ts.as_deref())?;
    let mut url = format!("{}/archives/{channel}/p{}", base.trim_end_matches('/'), ts.replace('.', ""));
    if let Some(thread) = s.thread_ts.as_deref().filter(|t| *t != ts) {
        url.push_str(&format!("?thread_ts={thread}&cid={channel}"));
    }
    Some(url)
}

/// The forecast of what happens next (see the module documentation).
pub fn next_step(record: &IncidentRecord, failure_mode: Option<&str>, policy: &PolicyConfig) -> NextStep {
    if let Some(closed) = record.closed_at {
        return NextStep {
            kind: "none",
            rung: None,
            at: None,
            why: format!("closed {}: the app was Synced and Healthy again (or deleted)", time(closed)),
        };
    }
    let history = History { incident: Some(record.incident.clone()), attempts: record.attempts.clone() };
    if let Some(at) = history.escalated_at() {
        return NextStep {
            kind: "human",
            rung: None,
            at: None,
            why: format!(
                "escalated {}: a person owns it; Argo Medic performs only its buttons until the app is Synced and Healthy again",
                time(at)
            ),
        };
    }
    let mode = failure_mode.and_then(|m| m.parse::<FailureMode>().ok());
    let rung = mode.and_then(|m| next_rung(&history, m, policy));
    if let Some(last) = history.last().filter(|a| !a.outcome.is_complete()) {
        return NextStep {
            kind: "in_progress",
            rung: Some(last.rung),
            at: None,
            why: format!(
                "{} claimed {} and not recorded as done: under way, or its holder stopped and the claim is taken over when it expires",
                last.rung.as_str(),
                time(last.at)
            ),
        };
    }
    let settle = history.last().map(|a| (a.at + TimeDelta::seconds(policy.settle_secs), a.rung));
    let wait = record.last_decision.as_ref().and_then(|n| match (n.action.as_str(), n.retry_after_secs, n.decided_at) {
        ("wait", Some(secs), Some(at)) => Some(at + TimeDelta::seconds(secs)),
        _ => None,
    });
    let (at, why) = match (wait, settle) {
        (Some(w), _) => (Some(w), "the last decision was a wait; looked at again then".to_owned()),
        (None, Some((s, r))) => (Some(s), format!("the {} is judged settle_secs ({}) after it was taken", r.as_str(), policy.settle_secs)),
        (None, None) => (None, "nothing taken yet; looked at on the next notification or sweep".to_owned()),
    };
    let why = match (rung, mode) {
        (Some(r), _) => format!("{why}; if still in trouble the ladder offers {}", r.as_str()),
        (None, Some(m)) => format!("{why}; {} is waited out (its ladder is empty)", m.id()),
        (None, None) => format!("{why}; the failure mode is unknown (no decision noted), so the next rung is too"),
    };
    NextStep { kind: "look_again", rung, at, why }
}

/// The first rung of the mode's ladder not yet taken; escalate once the actions reach the limit;
/// `None` for a mode that is waited out (an empty ladder).
fn next_rung(history: &History, mode: FailureMode, policy: &PolicyConfig) -> Option<Rung> {
    let ladder = catalogue::CATALOGUE.iter().find(|e| e.id == mode).map(|e| e.ladder).unwrap_or_default();
    if ladder.is_empty() {
        return None;
    }
    if history.actions_taken() >= policy.max_actions_per_incident {
        return Some(Rung::Escalate);
    }
    Some(ladder.iter().copied().find(|r| !history.has_taken(*r)).unwrap_or(Rung::Escalate))
}

fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// `3d4h`, `2h5m`, `40s`.
fn age(d: TimeDelta) -> String {
    let s = d.num_seconds().max(0);
    let (days, hours, minutes) = (s / 86400, s % 86400 / 3600, s % 3600 / 60);
    match (days, hours, minutes) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, m) => format!("{m}m"),
        (0, h, m) => format!("{h}h{m}m"),
        (d, h, _) => format!("{d}d{h}h"),
    }
}

/// `90s`, `30m`, `2h`, `7d`, `1h30m` (humantime's grammar: also `2w`, `1h 30m`); a number
/// without a unit, and one too large for a duration, are errors.
pub fn parse_duration(text: &str) -> Result<Duration> {
    humantime::parse_duration(text.trim()).with_context(|| format!("`{text}` is not a duration such as 90s, 30m, 2h or 7d"))
}

fn rungs_short(v: &IncidentView) -> String {
    if v.rungs.is_empty() {
        return "-".into();
    }
    v.rungs
        .iter()
        .map(|r| {
            format!(
                "{}:{}",
                r.rung.as_str(),
                serde_json::to_value(r.outcome).ok().and_then(|o| o.as_str().map(str::to_owned)).unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn next_short(n: &NextStep, now: DateTime<Utc>) -> String {
    match (n.kind, n.rung, n.at) {
        ("human", ..) => "human owns it".into(),
        ("none", ..) => "-".into(),
        ("in_progress", Some(r), _) => format!("{} in progress", r.as_str()),
        (_, rung, Some(at)) => {
            let what = rung.map_or("look", Rung::as_str);
            if at <= now { format!("{what} now") } else { format!("{what} in {}", age(at - now)) }
        }
        (_, Some(r), None) => r.as_str().to_owned(),
        _ => "-".into(),
    }
}

/// One row per incident.
pub fn table(views: &[IncidentView], now: DateTime<Utc>) -> String {
    let mut rows = vec![["APP", "STATUS", "MODE", "PROJECT", "SINCE", "RUNGS", "NEXT", "SLACK", "FLEET"].map(str::to_owned).to_vec()];
    for v in views {
        rows.push(vec![
            v.app.clone(),
            v.status.to_owned(),
            v.failure_mode.clone().unwrap_or_else(|| "?".into()),
            v.project.clone().unwrap_or_else(|| "?".into()),
            format!("{} ago", age(now - v.since)),
            rungs_short(v),
            next_short(&v.next, now),
            v.slack
                .as_ref()
                .map_or("-".into(), |s| serde_json::to_value(s.state).ok().and_then(|x| x.as_str().map(str::to_owned)).unwrap_or_default()),
            v.fleet.as_ref().map_or("-".into(), |f| format!("{} ({} apps)", f.fleet_id, f.apps)),
        ]);
    }
    let widths: Vec<usize> = (0..rows[0].len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    if views.is_empty() {
        out.push_str("(no incidents)\n");
    }
    out
}

/// One JSON object per incident and line.
pub fn json_lines(views: &[IncidentView]) -> Result<String> {
    views.iter().map(|v| serde_json::to_string(v).map(|s| s + "\n").map_err(Into::into)).collect()
}

/// An incident's full history and the evidence of its last decision, for humans.
pub fn details(v: &IncidentView, now: DateTime<Utc>) -> String {
    let mut out = format!("{} ({}), incident {}\n", v.app, v.status, v.incident_id);
    let line = |out: &mut String, k: &str, val: String| out.push_str(&format!("  {k:<14}{val}\n"));
    line(&mut out, "failure mode", v.failure_mode.clone().unwrap_or_else(|| "unknown (no decision noted)".into()));
    line(&mut out, "project", v.project.clone().unwrap_or_else(|| "unknown".into()));
    line(&mut out, "instance", format!("{}, revision {}", v.instance, v.revision));
    line(
        &mut out,
        "in trouble",
        format!("since {} ({} ago); opened in the store {}", time(v.since), age(now - v.since), time(v.opened_at)),
    );
    if let Some(c) = v.closed_at {
        line(&mut out, "closed", time(c));
    }
    out.push_str("  rungs\n");
    if v.rungs.is_empty() {
        out.push_str("    (none taken)\n");
    }
    for r in &v.rungs {
        let outcome = serde_json::to_value(r.outcome).ok().and_then(|o| o.as_str().map(str::to_owned)).unwrap_or_default();
        out.push_str(&format!(
            "    {}  {:<12}  {:<20}  {}\n",
            time(r.at),
            r.rung.as_str(),
            outcome,
            r.idempotency_key.as_deref().unwrap_or("-")
        ));
    }
    let when = v.next.at.map(|t| format!(" at {}", time(t))).unwrap_or_default();
    line(&mut out, "next", format!("{}{when}: {}", next_short(&v.next, now), v.next.why));
    match &v.slack {
        Some(s) => {
            let place = match (&s.url, &s.channel, &s.thread_ts) {
                (Some(url), ..) => url.clone(),
                (None, Some(c), Some(t)) => format!("channel {c}, thread {t}"),
                _ if s.suppressed => "not posted (the app was snoozed)".into(),
                _ => "not posted yet".into(),
            };
            let state = serde_json::to_value(s.state).ok().and_then(|x| x.as_str().map(str::to_owned)).unwrap_or_default();
            let detail = if s.detail.is_empty() { String::new() } else { format!(" ({})", s.detail) };
            line(&mut out, "slack", format!("{state}{detail}: {place}"));
        }
        None => line(&mut out, "slack", "not escalated".into()),
    }
    if let Some(f) = &v.fleet {
        line(&mut out, "fleet", format!("{} ({}, {} apps, {} recovered)", f.fleet_id, f.failure_mode.id(), f.apps, f.resolved));
    }
    match &v.last_decision {
        Some(n) => {
            let at = n.decided_at.map(time).unwrap_or_else(|| "?".into());
            out.push_str(&format!("  last decision {} at {at} (trigger {})\n", n.action, n.trigger));
            out.push_str(&format!("    reason: {}\n", n.reason));
            if !n.trust.is_empty() {
                out.push_str(&format!("    trust: {}\n", n.trust));
            }
            if let Some(secs) = n.retry_after_secs {
                out.push_str(&format!("    retry after: {secs}s\n"));
            }
            out.push_str("    evidence:\n");
            for e in &n.evidence {
                out.push_str(&format!("      {}: {}\n", e.field, e.value));
            }
        }
        None => out.push_str("  last decision  not stored (recorded before this version kept decisions)\n"),
    }
    if !v.timeline.is_empty() {
        out.push_str("  timeline\n");
        for e in &v.timeline {
            let mut said = e.what.clone();
            if let Some(who) = &e.who {
                said = format!("{said} (by {who})");
            }
            if let Some(level) = &e.level {
                said = format!("{said} [{level}]");
            }
            out.push_str(&format!("    {}  {:<9}  {said}\n", time(e.at), e.kind.as_str()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_seconds_minutes_hours_and_days() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("7d").unwrap(), Duration::from_secs(7 * 86400));
        assert!(parse_duration("10").is_err());
        assert_eq!(parse_duration("1w").unwrap(), Duration::from_secs(7 * 86400));
        assert!(parse_duration("99999999999999999999d").is_err(), "too large: an error, not a wrapped number");
        assert!(parse_duration("1x").is_err());
        assert!(parse_duration("").is_err());
    }
}
