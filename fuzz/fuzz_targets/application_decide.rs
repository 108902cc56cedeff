//! An Application as Argo CD's API returns it (`GET /api/v1/applications/{name}`), read the way
//! the adapter reads it (JSON, nulls stripped, then the core's types), then judged by the pure
//! decision policy and, when it escalates, rendered as the Slack message the worker would post.
//!
//! Properties: no panic, no hang, no unbounded allocation, whatever the Application holds; the
//! policy either refuses the input (`PolicyError`) or returns a decision; the escalation message
//! stays within Block Kit's limits (Slack refuses it otherwise).
#![no_main]

use chrono::{DateTime, Duration, Utc};
use libfuzzer_sys::fuzz_target;
use medic_slack::blocks::{self as escalation, IncidentFacts, RenderOptions, Status};
use medic_core::human_action::IncidentState;
use medic_core::incident::{Attempt, History, Outcome};
use medic_core::{Action, Application, ApplicationList, DecisionPolicy, IdempotencyKey, PolicyConfig, Trigger};

fuzz_target!(|data: &[u8]| {
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    medic_core::app::strip_nulls(&mut value);
    // The sweeper's list responses go through the same types.
    if value.get("items").is_some() {
        let _ = serde_json::from_value::<ApplicationList>(value.clone());
    }
    let Ok(app) = serde_json::from_value::<Application>(value) else { return };

    for key in app.recorded_idempotency_keys() {
        let _ = IdempotencyKey::parse(key);
    }
    let _ = (app.revision(), app.is_calm(), app.has_hooks(), app.hooks_ran(), app.opted_out());

    // The capture time of events/apps/, and a fixed later moment: the policy reads no clock.
    let now: DateTime<Utc> = DateTime::from_timestamp(1_793_536_200, 0).expect("a valid instant");
    let policy = DecisionPolicy::new(PolicyConfig::default());
    for trigger in ["on-sync-failed", "sweep"] {
        let trigger: Trigger = trigger.parse().expect("a valid trigger");
        let Ok(first) = policy.decide(&app, &trigger, &History::default(), now) else { continue };
        render(&app, &first, now);
        // Look again with the first decision's rung on record, as the next delivery would: this
        // walks the ladder, the refusal back-off and the settling wait.
        let (Some(incident), Some(rung)) = (first.incident.clone(), rung_of(first.action)) else { continue };
        for (outcome, ago) in [(Outcome::NoEffect, 3600), (Outcome::OperationInProgress, 30), (Outcome::Failed, 600)] {
            let history = History {
                incident: Some(incident.clone()),
                attempts: vec![Attempt { rung, at: now - Duration::seconds(ago), idempotency_key: first.idempotency_key.clone(), outcome }],
            };
            if let Ok(next) = policy.decide(&app, &trigger, &history, now) {
                render(&app, &next, now);
            }
        }
    }
});

fn rung_of(action: Action) -> Option<medic_core::Rung> {
    use medic_core::Rung;
    match action {
        Action::Refresh => Some(Rung::Refresh),
        Action::HardRefresh => Some(Rung::HardRefresh),
        Action::Sync => Some(Rung::Sync),
        Action::Escalate => Some(Rung::Escalate),
        _ => None,
    }
}

/// The escalation's Slack message, as the worker renders it, must stay within Block Kit's limits.
fn render(app: &Application, decision: &medic_core::Decision, now: DateTime<Utc>) {
    if decision.action != Action::Escalate {
        return;
    }
    let facts = IncidentFacts::new(app, decision, Some("https://argocd.example.com"));
    let status = Status { state: IncidentState::NeedsHuman, detail: String::new(), at: now, snoozed_until: None };
    let buttons = escalation::buttons(&facts, 0);
    for r in [
        escalation::incident_parent(&facts, &status, &buttons, 0, RenderOptions::default()),
        escalation::group_member(&facts, &status, &buttons, 0, RenderOptions::default()),
    ] {
        let v = escalation::violations(&r.text, &r.blocks);
        assert!(v.is_empty(), "the escalation breaks Block Kit's limits: {v:?}");
    }
}
