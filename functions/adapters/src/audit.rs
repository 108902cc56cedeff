//! The audit log line of an incident's timeline event: every store writes it when it appends a
//! new event, so the audit log carries the same events as the timeline, once each (a second
//! write of the same event is not new, and logs nothing).

use medic_core::ports::StoreError;
use medic_core::timeline::TimelineEvent;

/// Logs `event` as an audit line when `written` says it was new; an event that could not be
/// written is logged as lost from the timeline.
pub fn audit_event(event: &TimelineEvent, written: &Result<bool, StoreError>) {
    match written {
        Ok(true) => tracing::info!(
            audit = true,
            app = %event.app,
            incident = %event.incident_id,
            event = event.kind.as_str(),
            event_id = %event.id,
            at = %event.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            who = event.who.as_deref(),
            key = event.key.as_deref(),
            rule = event.rule.as_deref(),
            level = event.level.as_deref(),
            "{}",
            event.what
        ),
        Ok(false) => {}
        Err(e) => tracing::warn!(
            app = %event.app,
            event = event.kind.as_str(),
            error = %e,
            "could not append to the incident's timeline: {}",
            event.what
        ),
    }
}
