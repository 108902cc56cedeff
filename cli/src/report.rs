//! `medic report`: the shadow report over the decisions a state store recorded
//! ([`medic_core::report`]), as a table or JSON.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use medic_core::app::{AppId, Application};
use medic_core::ports::{ArgoApi, IncidentLedger, StoreError};
use medic_core::record::DecisionRecord;
use medic_core::report::{Next, Report};

/// The report over the decisions `ledger` recorded since `since`, with the apps as `argo` shows
/// them now when given; a healing within `settle` of a decision counts as "by itself".
pub async fn read<L: IncidentLedger, A: ArgoApi>(
    ledger: &L,
    since: DateTime<Utc>,
    settle: chrono::Duration,
    argo: Option<&A>,
) -> anyhow::Result<Report> {
    let records = ledger.decisions(since).await?;
    let now = match argo {
        Some(argo) => apps_now(argo, &records).await?,
        None => BTreeMap::new(),
    };
    Ok(medic_core::report::report_with_now(&records, since, settle, &now))
}

/// The apps of `records` that were in trouble, as Argo CD shows them now
/// ([`medic_service::report::apps_now`], the weekly report's read too); an app that could not be
/// read is said, and keeps what its records say; a token Argo CD refuses ends the report.
pub async fn apps_now<A: ArgoApi>(argo: &A, records: &[DecisionRecord]) -> anyhow::Result<BTreeMap<AppId, Application>> {
    let (now, unread) =
        medic_service::report::apps_now(argo, records).await.map_err(|e| anyhow::Error::from(e).context("reading the apps' state now"))?;
    for (id, e) in unread {
        crate::note!("medic: {id}: its state now is not read ({e}); its records alone say what happened");
    }
    Ok(now)
}

/// The report as aligned columns: a row per failure mode and project; then what the columns
/// mean, so a team reading it for the first time needs no manual.
pub fn table(report: &Report, now: DateTime<Utc>) -> String {
    let days = (now - report.since).num_hours() as f64 / 24.0;
    let mut out = format!(
        "{} decisions recorded since {} ({days:.1} days); {} rows of trouble\n\n",
        report.decisions,
        report.since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        report.rows.len()
    );
    if report.rows.is_empty() {
        out.push_str("nothing in trouble was decided in that time\n");
        return out;
    }
    let header = [
        "MODE",
        "PROJECT",
        "DECISIONS",
        "APPS",
        "LEVELS",
        "CHANGE",
        "ESCALATE",
        "WAIT",
        "MEDIC",
        "PERSON",
        "HEALED",
        "LATER",
        "BROKEN",
        "UNSEEN",
    ];
    let rows: Vec<Vec<String>> = report
        .rows
        .iter()
        .map(|r| {
            let levels = r.levels.iter().map(|(level, n)| format!("{level} {n}")).collect::<Vec<_>>().join(", ");
            let mut row = vec![
                r.failure_mode.clone(),
                r.project.clone(),
                r.decisions.to_string(),
                r.apps.to_string(),
                levels,
                r.would_change.to_string(),
                r.would_escalate.to_string(),
                r.would_wait.to_string(),
            ];
            row.extend(Next::ALL.iter().map(|n| r.next.get(n).copied().unwrap_or(0).to_string()));
            row
        })
        .collect();
    out.push_str(&crate::render::table(&header, &rows));
    out.push_str(
        "\nCHANGE: decisions that change Argo CD (refresh, hard refresh, sync): performed at act, offered to a person at propose, only recorded at observe.\n\
         ESCALATE: handed to a person (not at observe). WAIT: waited or did nothing.\n\
         What happened next, from the app's later records: MEDIC Argo Medic acted; PERSON a person started an operation; \
         HEALED healthy again within the settle time with nobody acting; LATER the same, after it; BROKEN still in trouble; \
         UNSEEN no later record (in a dry run and at observe a calm app is not looked at again).\n",
    );
    out
}

/// The records `ledger` kept since `since`, decided again by `policy`.
pub async fn replay<L: IncidentLedger>(
    ledger: &L,
    since: DateTime<Utc>,
    policy: &medic_core::DecisionPolicy,
) -> Result<medic_core::replay::Replay, StoreError> {
    Ok(medic_core::replay::replay(&ledger.decisions(since).await?, policy))
}

/// A replay as a summary line and a row per decision taken otherwise.
pub fn replay_table(replay: &medic_core::replay::Replay) -> String {
    use medic_core::replay::Outline;
    let mut out = format!(
        "{} decisions read, {} decided again, {} cut to their size bound and {} unreadable (not decided again); {} decided otherwise\n",
        replay.decisions,
        replay.replayed,
        replay.truncated,
        replay.unreadable,
        replay.differences.len()
    );
    if replay.differences.is_empty() {
        return out;
    }
    let outline = |o: &Outline| match o.level {
        Some(level) => format!("{} {} ({})", o.failure_mode, o.action, level.as_str()),
        None => format!("{} {}", o.failure_mode, o.action),
    };
    let rows: Vec<Vec<String>> = replay
        .differences
        .iter()
        .map(|d| {
            vec![
                d.decided_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                d.app.to_string(),
                d.project.clone(),
                outline(&d.recorded),
                outline(&d.replayed),
                d.replayed.rule.clone(),
            ]
        })
        .collect();
    out.push('\n');
    out.push_str(&crate::render::table(&["DECIDED", "APP", "PROJECT", "RECORDED", "REPLAYED", "RULE NOW"], &rows));
    out
}
