//! Escalations practise what their diagnosis preaches, for every mode of the catalogue: on each
//! mode's sample app (`events/apps/<mode>.json`) the buttons offered and the one recommended are
//! pinned, the recommended button is the only one styled `primary`, a mode whose diagnosis says not
//! to sync offers no Sync at all, and the runbook's commands name the app's real objects.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use medic_core::AppId;
use medic_core::human_action::IncidentState;
use medic_core::policy::human_offer;
use medic_core::{
    Action, Application, Attempt, CATALOGUE, Decision, DecisionPolicy, Evidence, FailureMode, History, HumanAction, IncidentKey, Outcome,
    PolicyConfig, Rung, Trigger,
};
use medic_slack::blocks::{self as escalation, GroupSummary, IncidentFacts, RenderOptions, Rendered, Status};
use serde_json::Value;

fn now() -> DateTime<Utc> {
    "2026-11-01T12:30:00Z".parse().unwrap()
}

fn apps_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test"))
        .join("../../events/apps")
}

/// The mode's sample app; the healthy one for a mode without a sample (`out-of-scope`, which
/// depends on the configuration only).
fn sample(mode: FailureMode) -> (String, Application) {
    let file = apps_dir().join(format!("{}.json", mode.id()));
    let file = if file.is_file() { file } else { apps_dir().join("healthy.json") };
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    (file.file_name().unwrap().to_string_lossy().into_owned(), serde_json::from_str(&text).unwrap())
}

fn cfg() -> PolicyConfig {
    PolicyConfig { instance_id: "prod".into(), ..PolicyConfig::default() }
}

fn name(a: HumanAction) -> &'static str {
    a.as_str()
}

/// An escalation of `app` in `mode` as the policy would make it (buttons and recommendation from
/// [`human_offer`]).
fn escalation_in(app: &Application, mode: FailureMode, history: &History) -> Decision {
    let offer = human_offer(app, mode, &cfg(), history);
    Decision {
        app: app.id(),
        action: Action::Escalate,
        failure_mode: mode,
        rule: String::new(),
        reason: format!("{}: escalated for the test", mode.entry().title),
        evidence: vec![Evidence::new("trigger", "sweep")],
        retry_after_secs: None,
        incident: Some(IncidentKey { instance: "prod".into(), app: app.id(), revision: app.revision(), began_at: None }),
        idempotency_key: None,
        sync: None,
        human_actions: offer.actions,
        recommended: Some(offer.recommended),
        trust: None,
        route: None,
        resolves_incident: false,
        decided_at: now(),
    }
}

fn parent(facts: &IncidentFacts) -> Rendered {
    let status = Status { state: IncidentState::NeedsHuman, detail: String::new(), at: now(), snoozed_until: None };
    escalation::incident_parent(facts, &status, &escalation::buttons(facts, 0), 0, RenderOptions::default())
}

/// The buttons of a rendered message: (text, style).
fn buttons_of(r: &Rendered) -> Vec<(String, Option<String>)> {
    r.blocks
        .iter()
        .filter(|b| b["type"] == "actions")
        .flat_map(|b| b["elements"].as_array().unwrap().clone())
        .map(|e| (e["text"]["text"].as_str().unwrap().to_owned(), e["style"].as_str().map(str::to_owned)))
        .collect()
}

fn section_text(r: &Rendered, title: &str) -> String {
    r.blocks
        .iter()
        .filter_map(|b| b.pointer("/text/text").and_then(Value::as_str))
        .find(|t| t.starts_with(&format!("*{title}*")))
        .unwrap_or_default()
        .to_owned()
}

/// Per mode, on its sample app: the buttons an escalation offers, in order, and the recommended
/// one. A mode whose diagnosis says not to sync has no `sync`; an app with an operation running
/// gets `terminate_operation` and no `sync`; a deleting app gets neither `sync` nor `hard_refresh`.
const GOLDEN: &[(&str, &[&str], &str)] = &[
    ("healthy", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("out-of-scope", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("opted-out", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("out-of-sync-manual", &["sync", "hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("out-of-sync-awaiting-auto-sync", &["sync", "hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("rollout-progressing", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("stale-reconcile", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("stale-progressing", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("comparison-error-transient", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("source-rate-limited", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("cached-manifest-error", &["hard_refresh", "snooze", "acknowledge", "freeze"], "hard_refresh"),
    ("source-config-error", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("crd-not-established", &["sync", "hard_refresh", "snooze", "acknowledge", "freeze"], "sync"),
    ("api-not-served", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("webhook-unavailable", &["sync", "hard_refresh", "snooze", "acknowledge", "freeze"], "sync"),
    ("resource-rejected", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("hook-failed", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("hook-conflict", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("postsync-blocked-by-health", &["hard_refresh", "terminate_operation", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("custom-health-never-healthy", &["hard_refresh", "terminate_operation", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("health-degraded", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("prune-blast-radius", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("prune-confirm-pending", &["hard_refresh", "terminate_operation", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("deletion-stuck", &["snooze", "acknowledge", "freeze"], "acknowledge"),
    ("app-deleting", &["snooze", "acknowledge", "freeze"], "acknowledge"),
    ("permission-denied", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("appset-hand-edit", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("ownership-conflict", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("sync-window-blocked", &["hard_refresh", "terminate_operation", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("awaiting-promotion", &["hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("operation-in-progress", &["hard_refresh", "terminate_operation", "snooze", "acknowledge", "freeze"], "acknowledge"),
    ("operation-running-too-long", &["hard_refresh", "terminate_operation", "snooze", "acknowledge", "freeze"], "terminate_operation"),
    ("auto-sync-retries-exhausted", &["sync", "hard_refresh", "snooze", "acknowledge", "freeze"], "sync"),
    ("sync-failed-transient", &["sync", "hard_refresh", "snooze", "acknowledge", "freeze"], "sync"),
    ("sync-failed", &["sync", "hard_refresh", "snooze", "acknowledge", "freeze"], "acknowledge"),
];

/// The label of a button as rendered.
fn label(a: HumanAction) -> &'static str {
    match a {
        HumanAction::Sync => "Sync",
        HumanAction::Refresh => "Refresh",
        HumanAction::HardRefresh => "Hard refresh",
        HumanAction::TerminateOperation => "Terminate operation",
        HumanAction::Snooze => "Snooze 4h",
        HumanAction::Acknowledge => "Acknowledge",
        HumanAction::Freeze => "Freeze 4h",
    }
}

#[test]
fn every_catalogue_mode_offers_and_recommends_what_its_diagnosis_says() {
    let mut wrong = Vec::new();
    for entry in CATALOGUE {
        let mode = entry.id;
        let Some((_, want_actions, want_recommended)) = GOLDEN.iter().find(|(id, _, _)| *id == mode.id()) else {
            wrong.push(format!("{mode}: no golden row"));
            continue;
        };
        let (file, app) = sample(mode);
        let d = escalation_in(&app, mode, &History::default());
        let got: Vec<&str> = d.human_actions.iter().map(|a| name(*a)).collect();
        let recommended = d.recommended.unwrap();
        if got != *want_actions || name(recommended) != *want_recommended {
            wrong.push(format!("{mode} ({file}): offers {got:?} recommending {}", name(recommended)));
        }

        // The catalogue's own rules.
        assert!(d.human_actions.contains(&recommended), "{mode}: the recommended button is offered");
        assert_ne!(entry.recommends, HumanAction::Snooze, "{mode}: snoozing is never the remedy");
        if entry.recommends == HumanAction::Sync {
            assert!(entry.offers_sync, "{mode} recommends a sync it does not offer");
        }
        if !entry.offers_sync {
            assert!(!d.human_actions.contains(&HumanAction::Sync), "{mode}: Sync offered although its diagnosis says not to sync");
            if mode.is_trouble() {
                assert!(entry.diagnosis.to_lowercase().contains("sync"), "{mode}: the diagnosis does not say why there is no Sync");
            }
        }

        // The rendered parent and group reply: one `primary` button at most, the recommended one;
        // Terminate is `danger`; Sync is never `primary` unless a sync is the recommendation.
        let facts = IncidentFacts::new(&app, &d, Some("https://argocd.example.com"));
        let status = Status { state: IncidentState::NeedsHuman, detail: String::new(), at: now(), snoozed_until: None };
        let member = escalation::group_member(&facts, &status, &escalation::buttons(&facts, 0), 0, RenderOptions::default());
        for r in [parent(&facts), member] {
            assert!(escalation::violations(&r.text, &r.blocks).is_empty(), "{mode}: {:?}", escalation::violations(&r.text, &r.blocks));
            let buttons = buttons_of(&r);
            let labels: Vec<&str> = buttons.iter().map(|(t, _)| t.as_str()).collect();
            let want: Vec<&str> = d.human_actions.iter().map(|a| label(*a)).collect();
            assert_eq!(labels, want, "{mode}: one button per offered action");
            let primary: Vec<&str> = buttons.iter().filter(|(_, s)| s.as_deref() == Some("primary")).map(|(t, _)| t.as_str()).collect();
            let want_primary: Vec<&str> = if recommended == HumanAction::TerminateOperation { vec![] } else { vec![label(recommended)] };
            assert_eq!(primary, want_primary, "{mode}: the primary button is the recommended one");
            for (text, style) in &buttons {
                if text == "Terminate operation" {
                    assert_eq!(style.as_deref(), Some("danger"), "{mode}");
                }
                if text == "Sync" && entry.recommends != HumanAction::Sync {
                    assert_eq!(style, &None, "{mode}: Sync styled although the diagnosis does not recommend it");
                }
            }
        }

        // The runbook names the app's real objects: nothing the facts know stays a placeholder.
        let runbook = section_text(&parent(&facts), "Runbook");
        assert_eq!(runbook.is_empty(), entry.runbook.is_empty(), "{mode}: the runbook is shown");
        for placeholder in ["&lt;app&gt;", "&lt;project&gt;", "&lt;namespace&gt;"] {
            assert!(!runbook.contains(placeholder), "{mode}: {placeholder} left in {runbook}");
        }
        let has_failed_hook_job = !facts.failed_hooks.iter().all(|h| h.kind != "Job");
        if has_failed_hook_job {
            assert!(!runbook.contains("&lt;hook-job&gt;") && !runbook.contains("&lt;hook-namespace&gt;"), "{mode}: {runbook}");
        }
    }
    assert_eq!(GOLDEN.len(), CATALOGUE.len(), "one golden row per mode");
    assert!(wrong.is_empty(), "escalations differ from the golden table:\n  {}", wrong.join("\n  "));
}

#[test]
fn the_sample_hook_failure_offers_no_sync_recommends_acknowledging_and_names_the_hook_job() {
    let (_, app) = sample(FailureMode::HookFailed);
    let d = DecisionPolicy::new(cfg()).decide(&app, &Trigger::sweep(), &History::default(), now()).unwrap();
    assert_eq!((d.action, d.failure_mode), (Action::Escalate, FailureMode::HookFailed));
    assert!(!d.human_actions.contains(&HumanAction::Sync), "{:?}", d.human_actions);
    assert_eq!(d.recommended, Some(HumanAction::Acknowledge));
    let facts = IncidentFacts::new(&app, &d, None);
    let runbook = section_text(&parent(&facts), "Runbook");
    assert!(runbook.contains("`kubectl logs job/accounts-db-migrate -n accounts`"), "{runbook}");
    assert!(runbook.contains("`argocd app sync argocd/accounts`"), "{runbook}");
    assert!(buttons_of(&parent(&facts)).iter().all(|(t, _)| t != "Sync"));
}

#[test]
fn once_someone_took_the_incident_acknowledge_is_no_longer_singled_out() {
    let (_, app) = sample(FailureMode::HookFailed);
    let facts = IncidentFacts::new(&app, &escalation_in(&app, FailureMode::HookFailed, &History::default()), None);
    let primary = |state: IncidentState| -> Vec<String> {
        let status = Status { state, detail: String::new(), at: now(), snoozed_until: None };
        let r = escalation::incident_parent(&facts, &status, &escalation::buttons(&facts, 1), 1, RenderOptions::default());
        buttons_of(&r).into_iter().filter(|(_, s)| s.as_deref() == Some("primary")).map(|(t, _)| t).collect()
    };
    assert_eq!(primary(IncidentState::NeedsHuman), vec!["Acknowledge"]);
    assert!(primary(IncidentState::Investigating).is_empty());
    assert!(primary(IncidentState::Remediating).is_empty());
    // A remedy stays recommended while someone works on it.
    let (_, app) = sample(FailureMode::CrdNotEstablished);
    let facts = IncidentFacts::new(&app, &escalation_in(&app, FailureMode::CrdNotEstablished, &History::default()), None);
    let status = Status { state: IncidentState::Investigating, detail: String::new(), at: now(), snoozed_until: None };
    let r = escalation::incident_parent(&facts, &status, &escalation::buttons(&facts, 1), 1, RenderOptions::default());
    assert!(buttons_of(&r).contains(&("Sync".to_owned(), Some("primary".to_owned()))));
}

#[test]
fn unknown_names_stay_placeholders() {
    let (_, app) = sample(FailureMode::HookFailed);
    let d = escalation_in(&app, FailureMode::HookFailed, &History::default());
    let mut facts = IncidentFacts::new(&app, &d, None);
    facts.failed_hooks.clear();
    facts.destination_namespace.clear();
    let steps = escalation::runbook_steps(FailureMode::HookFailed, &facts);
    assert!(steps[0].contains("`kubectl logs job/<hook-job> -n <hook-namespace>`"), "{}", steps[0]);
    // The webhook's service is never known from the app.
    let (_, app) = sample(FailureMode::WebhookUnavailable);
    let d = escalation_in(&app, FailureMode::WebhookUnavailable, &History::default());
    let facts = IncidentFacts::new(&app, &d, None);
    let steps = escalation::runbook_steps(FailureMode::WebhookUnavailable, &facts);
    assert!(steps[0].contains("<webhook-namespace> <webhook-service>"), "{}", steps[0]);
    // A hook in another namespace than the destination's: the hook's own namespace.
    let (_, app) = sample(FailureMode::HookFailed);
    let mut facts = IncidentFacts::new(&app, &escalation_in(&app, FailureMode::HookFailed, &History::default()), None);
    facts.failed_hooks[0].namespace = "db-jobs".into();
    assert!(escalation::runbook_steps(FailureMode::HookFailed, &facts)[0].contains("job/accounts-db-migrate -n db-jobs"));
}

#[test]
fn a_recommended_sync_is_demoted_once_tried_or_when_hooks_are_not_marked_idempotent() {
    let (_, app) = sample(FailureMode::CrdNotEstablished);
    let offer = human_offer(&app, FailureMode::CrdNotEstablished, &cfg(), &History::default());
    assert_eq!(offer.recommended, HumanAction::Sync);
    // The incident's automatic sync already ran and the app is still failing: syncing again is not
    // what the diagnosis recommends any more (it is still offered).
    let d = DecisionPolicy::new(cfg()).decide(&app, &Trigger::sweep(), &History::default(), now()).unwrap();
    let incident = d.incident.clone().unwrap();
    let tried = History {
        incident: Some(incident.clone()),
        attempts: vec![Attempt {
            rung: Rung::Sync,
            at: now() - chrono::Duration::minutes(30),
            idempotency_key: Some(incident.key_for(Rung::Sync)),
            outcome: Outcome::Succeeded,
        }],
    };
    let offer = human_offer(&app, FailureMode::CrdNotEstablished, &cfg(), &tried);
    assert!(offer.actions.contains(&HumanAction::Sync));
    assert_eq!(offer.recommended, HumanAction::Acknowledge);
    // Hooks nobody declared safe to re-run: a person judges them before syncing.
    let text = std::fs::read_to_string(apps_dir().join("sync-failed-transient-with-hooks.json")).unwrap();
    let hooks: Application = serde_json::from_str(&text).unwrap();
    let offer = human_offer(&hooks, FailureMode::SyncFailedTransient, &cfg(), &History::default());
    assert!(offer.actions.contains(&HumanAction::Sync));
    assert_eq!(offer.recommended, HumanAction::Acknowledge);
    let marked = PolicyConfig { hooks_idempotent: true, ..cfg() };
    assert_eq!(human_offer(&hooks, FailureMode::SyncFailedTransient, &marked, &History::default()).recommended, HumanAction::Sync);
}

#[test]
fn a_group_parent_lists_the_most_affected_projects_and_clusters_first() {
    let group = GroupSummary {
        group_id: "flt-1".into(),
        instance: "prod".into(),
        failure_mode: FailureMode::ComparisonErrorTransient,
        apps: vec![AppId::new("argocd", "a"), AppId::new("argocd", "b")],
        total: 212,
        resolved: 0,
        projects: vec![("search".into(), 2), ("payments".into(), 180), ("ledger".into(), 30)],
        clusters: vec![("https://kubernetes.default.svc".into(), 12), ("prod-eu-1".into(), 200)],
        first_at: now(),
        last_at: now(),
    };
    let status = Status { state: IncidentState::NeedsHuman, detail: String::new(), at: now(), snoozed_until: None };
    let r = escalation::group_parent(&group, &status);
    assert!(escalation::violations(&r.text, &r.blocks).is_empty());
    let json = Value::Array(r.blocks.clone()).to_string();
    assert!(json.contains("*Most affected projects*\\npayments (180), ledger (30), search (2)"), "{json}");
    assert!(json.contains("*Most affected clusters*\\nprod-eu-1 (200), https://kubernetes.default.svc (12)"), "{json}");

    // Many: the top ones, most affected first, and how many more.
    let many: Vec<(String, usize)> = (1..=40).map(|i| (format!("project-with-a-long-name-{i:02}"), i)).collect();
    let line = escalation::most_affected(&many);
    assert!(line.starts_with("project-with-a-long-name-40 (40), project-with-a-long-name-39 (39)"), "{line}");
    assert!(line.ends_with(" more") && escalation::units(&line) <= 150, "{line}");
    assert_eq!(escalation::most_affected(&[]), "–");
}
