//! Golden decisions: every scenario under events/scenarios/ is decided and checked against its
//! expectation, and the fixtures themselves are checked for coverage and consistency.

use std::collections::BTreeSet;
use std::path::PathBuf;

use medic::input::{json_files, parse_apps, read};
use medic::scenario::{Scenario, load_all};
use medic_core::{Action, DecisionPolicy, FailureMode};

fn events_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test")).join("../events")
}

fn scenarios() -> Vec<Scenario> {
    let all = load_all(&events_dir()).expect("scenarios load");
    assert!(!all.is_empty(), "no scenarios found under events/scenarios");
    all
}

#[test]
fn every_scenario_gets_its_expected_decision() {
    let mut failures = Vec::new();
    for s in scenarios() {
        let d = DecisionPolicy::new(s.config.clone()).decide(&s.app, &s.file.trigger, &s.file.history, s.now).expect("full Application");
        let e = &s.file.expect;
        let mut wrong = Vec::new();
        if d.action != e.action {
            wrong.push(format!("action {} != expected {}", d.action, e.action));
        }
        if d.failure_mode != e.failure_mode {
            wrong.push(format!("failure mode {} != expected {}", d.failure_mode, e.failure_mode));
        }
        for fragment in &e.reason_contains {
            if !d.reason.contains(fragment.as_str()) {
                wrong.push(format!("reason lacks `{fragment}`"));
            }
        }
        if e.retry_after_secs.is_some() && d.retry_after_secs != e.retry_after_secs {
            wrong.push(format!("retry_after {:?} != expected {:?}", d.retry_after_secs, e.retry_after_secs));
        }
        if let Some(prune) = e.sync_prune
            && d.sync.as_ref().map(|p| p.prune) != Some(prune)
        {
            wrong.push(format!("sync plan {:?} does not have prune={prune}", d.sync));
        }
        if let Some(resolves) = e.resolves_incident
            && d.resolves_incident != resolves
        {
            wrong.push(format!("resolves_incident {} != expected {resolves}", d.resolves_incident));
        }
        if !wrong.is_empty() {
            failures.push(format!("{}: {}\n    reason: {}", s.name, wrong.join("; "), d.reason));
        }
    }
    assert!(failures.is_empty(), "{} scenario(s) decided wrongly:\n  {}", failures.len(), failures.join("\n  "));
}

#[test]
fn decisions_carry_keys_exactly_when_they_act_or_escalate_and_plans_only_for_sync() {
    for s in scenarios() {
        let d = DecisionPolicy::new(s.config.clone()).decide(&s.app, &s.file.trigger, &s.file.history, s.now).unwrap();
        let acts = d.action.mutates_argo() || d.action == Action::Escalate;
        assert_eq!(d.idempotency_key.is_some(), acts, "{}: key {:?} for {}", s.name, d.idempotency_key, d.action);
        assert_eq!(d.sync.is_some(), d.action == Action::Sync, "{}", s.name);
        assert_eq!(d.incident.is_some(), d.failure_mode.is_trouble(), "{}", s.name);
        if d.action == Action::Wait {
            assert!(d.retry_after_secs.is_some_and(|r| r > 0), "{}: wait without retry-after", s.name);
        }
        if d.action == Action::Escalate {
            assert!(!d.human_actions.is_empty(), "{}: escalation offers nothing", s.name);
        }
    }
}

#[test]
fn history_fixtures_name_the_incident_the_policy_derives() {
    // A history whose incident is at the app's revision must be the very incident the policy
    // derives from the app, or the fixture would test a new incident by accident.
    for s in scenarios() {
        let Some(open) = &s.file.history.incident else { continue };
        if open.revision != s.app.revision() {
            continue;
        }
        let fresh = DecisionPolicy::new(s.config.clone()).decide(&s.app, &s.file.trigger, &Default::default(), s.now).unwrap();
        if fresh.failure_mode.is_trouble() {
            assert_eq!(fresh.incident.as_ref(), Some(open), "{}: history incident differs from the derived one", s.name);
        }
    }
}

#[test]
fn the_samples_cover_every_failure_mode_of_the_catalogue() {
    let covered: BTreeSet<FailureMode> = scenarios().iter().map(|s| s.file.expect.failure_mode).collect();
    let missing: Vec<_> = FailureMode::ALL.iter().filter(|m| !covered.contains(m)).collect();
    assert!(missing.is_empty(), "failure modes without a golden scenario: {missing:?}");
    assert!(covered.len() >= 20);
}

#[test]
fn every_sample_app_is_a_full_application_and_used_by_a_scenario() {
    let used: BTreeSet<String> = scenarios().iter().map(|s| s.file.app.clone()).collect();
    for file in json_files(&events_dir().join("apps")).unwrap() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let apps = parse_apps(&read(&file).unwrap(), &name).unwrap();
        assert_eq!(apps.len(), 1, "{name}");
        assert_eq!(apps[0].app.incompleteness(), None, "{name}");
        assert!(used.contains(&name), "{name} is not used by any scenario");
    }
}

#[test]
fn deciding_the_same_observation_twice_gives_the_same_decision() {
    for s in scenarios() {
        let policy = DecisionPolicy::new(s.config.clone());
        let a = policy.decide(&s.app, &s.file.trigger, &s.file.history, s.now).unwrap();
        let b = policy.decide(&s.app.clone(), &s.file.trigger, &s.file.history.clone(), s.now).unwrap();
        assert_eq!(a, b, "{}", s.name);
    }
}

#[test]
fn every_sample_notification_parses_and_describes_its_sample_app() {
    let files = json_files(&events_dir().join("webhook")).unwrap();
    assert!(files.len() >= 10, "expected notification samples under events/webhook/");
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let event = medic_core::NotificationEvent::parse(read(&file).unwrap().as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let app = parse_apps(&read(&events_dir().join("apps").join(&name)).unwrap(), &name).unwrap().remove(0).app;
        assert_eq!(event.app_id(), app.id(), "{name}");
        assert_eq!(event.app.project.as_deref(), Some(app.spec.project.as_str()), "{name}");
        assert_eq!(event.sync.as_ref().and_then(|s| s.revision.clone()), Some(app.revision()), "{name}");
        assert_eq!(event.health.as_ref().and_then(|h| h.status.as_deref()), Some(app.health_status()), "{name}");
        assert_eq!(event.resource_version.as_deref(), Some(app.metadata.resource_version.as_str()), "{name}");
        let op = app.status.operation_state.as_ref();
        assert_eq!(event.operation.as_ref().and_then(|o| o.phase.clone()), op.map(|o| o.phase.clone()), "{name}");
        assert_eq!(event.operation.as_ref().and_then(|o| o.started_at), op.and_then(|o| o.started_at), "{name}");
        assert_eq!(event.reconciled_at, app.status.reconciled_at, "{name}");
    }
}
