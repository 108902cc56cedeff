//! Property tests of the decision policy over generated Applications and histories.
//!
//! The generator mixes every status value, the catalogue's literal messages, hooks, prune sets,
//! ApplicationSet ownership, hand edits, opt-outs and deletions, so the safety rules are checked on
//! combinations no fixture spells out.

use chrono::{DateTime, Duration, TimeZone, Utc};
use medic_core::app::{
    ApplicationCondition, HealthStatus, ManagedFieldsEntry, OPT_OUT_KEY, Operation, OperationInitiator, OperationState, OwnerReference,
    ResourceResult, ResourceStatus, SyncOperation, SyncOperationResult, SyncPolicy, SyncPolicyAutomated, SyncStatus,
};
use medic_core::policy::classify::{appset_hand_edit, failed_hook, prune_risk};
use medic_core::policy::sync_plan;
use medic_core::{Action, Application, Attempt, DecisionPolicy, History, IdempotencyKey, Outcome, PolicyConfig, Rung, Trigger};
use proptest::prelude::*;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 1, 12, 30, 0).unwrap()
}

fn at(minutes_ago: i64) -> DateTime<Utc> {
    now() - Duration::minutes(minutes_ago)
}

const MESSAGES: &[&str] = &[
    "successfully synced (all tasks run)",
    "one or more synchronization tasks are not valid: no matches for kind \"Kafka\" in version \"kafka.strimzi.io/v1beta2\"",
    "one or more objects failed to apply, reason: Internal error occurred: failed calling webhook \"x\": no endpoints available for service \"y\"",
    "one or more objects failed to apply, reason: admission webhook \"gatekeeper\" denied the request: nope",
    "one or more objects failed to apply, reason: Put \"https://10.0.0.1/\": net/http: TLS handshake timeout",
    "one or more synchronization tasks completed unsuccessfully, reason: Job has reached the specified backoff limit",
    "jobs.batch \"smoke\" already exists",
    "waiting for healthy state of /Service/lb",
    "waiting for healthy state of kafka.strimzi.io/Kafka/events",
    "waiting for completion of hook batch/Job/migrate",
    "Sync operation blocked by sync window",
    "deployments.apps \"x\" is forbidden: User \"system:serviceaccount:argocd:argocd-application-controller\" cannot patch resource",
    "ComparisonError: rpc error: code = Unavailable desc = connection refused",
    "something nobody has seen before",
];

const CONDITIONS: &[(&str, &str)] = &[
    ("ComparisonError", "rpc error: code = Unavailable desc = connection error: connection refused"),
    ("ComparisonError", "rpc error: code = Unknown desc = Manifest generation error (cached): boom"),
    ("ComparisonError", "rpc error: code = Unknown desc = authentication required"),
    ("InvalidSpecError", "application repo x is not permitted in project 'p'"),
    ("SyncError", "Failed last sync attempt to [abc]: one or more objects failed to apply (retried 5 times)."),
    ("SyncError", "Skipping sync attempt to [abc]: auto-sync will wipe out all resources"),
    ("OrphanedResourceWarning", "Application has 3 orphaned resources"),
];

const KINDS: &[(&str, &str)] = &[
    ("", "ConfigMap"),
    ("apps", "Deployment"),
    ("", "Service"),
    ("", "Namespace"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("", "PersistentVolumeClaim"),
    ("kafka.strimzi.io", "Kafka"),
];

fn pick<T: Clone + std::fmt::Debug + 'static>(items: &'static [T]) -> impl Strategy<Value = T> {
    prop::sample::select(items)
}

prop_compose! {
    fn resource()(kind in pick(KINDS), prune in prop::bool::weighted(0.3), hook in prop::bool::weighted(0.1),
                   health in prop::option::of(pick(&["Healthy", "Progressing", "Degraded"])), n in 0u8..50) -> ResourceStatus {
        ResourceStatus {
            group: kind.0.into(), kind: kind.1.into(), name: format!("r{n}"), namespace: "ns".into(), requires_pruning: prune, hook,
            health: health.map(|h| HealthStatus { status: h.into(), ..Default::default() }), ..Default::default()
        }
    }
}

prop_compose! {
    fn result()(hook in prop::option::of(pick(&["PreSync", "Sync", "PostSync", "SyncFail"])),
                phase in pick(&["", "Running", "Succeeded", "Failed", "Error"]), msg in pick(MESSAGES), n in 0u8..9) -> ResourceResult {
        ResourceResult {
            kind: "Job".into(), group: "batch".into(), name: format!("j{n}"), message: msg.into(),
            hook_type: hook.unwrap_or("").into(), hook_phase: if hook.is_some() { phase.into() } else { String::new() },
            status: if hook.is_some() { String::new() } else { "SyncFailed".into() }, ..Default::default()
        }
    }
}

prop_compose! {
    fn operation_state()(phase in pick(&["Running", "Terminating", "Failed", "Error", "Succeeded"]), msg in pick(MESSAGES),
                         started in 0i64..240, took in 0i64..30, automated in any::<bool>(), prune in any::<bool>(),
                         same_revision in prop::bool::weighted(0.8), results in prop::collection::vec(result(), 0..4)) -> OperationState {
        let running = phase == "Running" || phase == "Terminating";
        OperationState {
            phase: phase.into(), message: msg.into(), started_at: Some(at(started)),
            finished_at: if running { None } else { Some(at(started) + Duration::minutes(took.min(started))) },
            operation: Some(Box::new(Operation {
                sync: Some(SyncOperation { revision: "rev1".into(), prune, ..Default::default() }),
                initiated_by: Some(OperationInitiator { automated, username: if automated { String::new() } else { "alice".into() } }),
                ..Default::default()
            })),
            sync_result: Some(Box::new(SyncOperationResult { revision: if same_revision { "rev1".into() } else { "rev0".into() }, resources: results, ..Default::default() })),
            ..Default::default()
        }
    }
}

prop_compose! {
    fn application()(
        sync in pick(&["Synced", "OutOfSync", "Unknown"]),
        health in pick(&["Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"]),
        auto in prop::option::of((any::<bool>(), prop::option::of(any::<bool>()))),
        op in prop::option::of(operation_state()),
        busy in prop::bool::weighted(0.15),
        conditions in prop::collection::vec((pick(CONDITIONS), 0i64..120), 0..2),
        resources in prop::collection::vec(resource(), 0..9),
        // Mostly fresh: a stale status is refreshed before anything else, which would hide the rest.
        reconciled in prop::option::of(prop_oneof![3 => 0i64..10, 1 => 0i64..200]),
        transition in 0i64..200,
        appset in prop::bool::weighted(0.3),
        hand_edit in prop::option::of(0i64..60),
        opt_out in prop::option::of((any::<bool>(), pick(&["true", "True", "false", "yes", ""]))),
        hooks_marked in prop::bool::weighted(0.2),
        deleting in prop::option::of(0i64..60),
    ) -> Application {
        let mut app = Application::default();
        app.metadata.name = "app".into();
        app.metadata.namespace = "argocd".into();
        app.metadata.resource_version = "42".into();
        app.spec.project = "default".into();
        app.status.sync = Some(SyncStatus { status: sync.into(), revision: "rev1".into(), ..Default::default() });
        app.status.health = Some(HealthStatus { status: health.into(), last_transition_time: Some(at(transition)), ..Default::default() });
        if let Some((prune, enabled)) = auto {
            app.spec.sync_policy = Some(Box::new(SyncPolicy { automated: Some(SyncPolicyAutomated { prune, self_heal: true, enabled, ..Default::default() }), ..Default::default() }));
        }
        if busy {
            app.operation = op.as_ref().and_then(|o| o.operation.clone()).or(Some(Box::default()));
        }
        app.status.operation_state = op.map(Box::new);
        app.status.conditions = conditions.into_iter().map(|((kind, msg), ago)| ApplicationCondition { kind: kind.into(), message: msg.into(), last_transition_time: Some(at(ago)) }).collect();
        app.status.resources = resources;
        app.status.reconciled_at = reconciled.map(at);
        if appset {
            app.metadata.owner_references.push(OwnerReference { kind: "ApplicationSet".into(), name: "set".into(), ..Default::default() });
            app.metadata.managed_fields.push(ManagedFieldsEntry { manager: "applicationset-controller".into(), operation: "Update".into(), time: Some(at(30)), fields_v1: serde_json::json!({"f:spec": {}}) });
        }
        if let Some(ago) = hand_edit {
            app.metadata.managed_fields.push(ManagedFieldsEntry { manager: "kubectl-edit".into(), operation: "Update".into(), time: Some(at(ago)), fields_v1: serde_json::json!({"f:spec": {"f:source": {}}}) });
        }
        if let Some((as_label, value)) = opt_out {
            let map = if as_label { &mut app.metadata.labels } else { &mut app.metadata.annotations };
            map.insert(OPT_OUT_KEY.into(), value.into());
        }
        if hooks_marked {
            app.metadata.annotations.insert("argo-medic.io/hooks-idempotent".into(), "true".into());
        }
        if let Some(ago) = deleting {
            app.metadata.deletion_timestamp = Some(at(ago));
            app.metadata.finalizers.push("resources-finalizer.argocd.argoproj.io".into());
        }
        app
    }
}

prop_compose! {
    fn attempts()(steps in prop::collection::vec((pick(&[Rung::Refresh, Rung::HardRefresh, Rung::Sync, Rung::Escalate]),
                                                  pick(&[Outcome::Requested, Outcome::Succeeded, Outcome::NoEffect, Outcome::Failed, Outcome::SyncWindowBlocked, Outcome::OperationInProgress]),
                                                  0i64..90), 0..4)) -> Vec<Attempt> {
        steps.into_iter().map(|(rung, outcome, ago)| Attempt { rung, outcome, at: at(ago), idempotency_key: None }).collect()
    }
}

prop_compose! {
    fn config()(max_prune in 0usize..6, hooks_idempotent in prop::bool::weighted(0.2), max_actions in 1usize..4) -> PolicyConfig {
        PolicyConfig { max_prune, hooks_idempotent, max_actions_per_incident: max_actions, ..PolicyConfig::default() }
    }
}

/// Decides with no history, then again with a history of `attempts` in the very incident derived.
fn decide_twice(app: &Application, cfg: &PolicyConfig, attempts: Vec<Attempt>) -> (medic_core::Decision, History, medic_core::Decision) {
    let policy = DecisionPolicy::new(cfg.clone());
    let fresh = policy.decide(app, &Trigger::sweep(), &History::default(), now()).expect("generated apps are complete");
    let history = History { incident: fresh.incident.clone(), attempts };
    let later = policy.decide(app, &Trigger::sweep(), &history, now()).expect("generated apps are complete");
    (fresh, history, later)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn never_syncs_when_pruning_exceeds_the_blast_radius(app in application(), cfg in config(), past in attempts()) {
        let (fresh, _, later) = decide_twice(&app, &cfg, past);
        if prune_risk(&app, &cfg).is_some() {
            prop_assert_ne!(fresh.action, Action::Sync, "{}", fresh.reason);
            prop_assert_ne!(later.action, Action::Sync, "{}", later.reason);
        }
    }

    #[test]
    fn never_acts_on_an_opted_out_app(app in application(), cfg in config(), past in attempts()) {
        let (fresh, _, later) = decide_twice(&app, &cfg, past);
        if app.opted_out() {
            prop_assert_eq!(fresh.action, Action::None);
            prop_assert_eq!(later.action, Action::None);
        }
    }

    #[test]
    fn never_syncs_an_applicationset_hand_edit(app in application(), cfg in config(), past in attempts()) {
        let (fresh, _, later) = decide_twice(&app, &cfg, past);
        if appset_hand_edit(&app, &PolicyConfig::default()).is_some() {
            prop_assert_ne!(fresh.action, Action::Sync);
            prop_assert_ne!(later.action, Action::Sync);
        }
    }

    #[test]
    fn a_sync_is_always_safe_and_on_record(app in application(), cfg in config(), past in attempts()) {
        let (fresh, _, later) = decide_twice(&app, &cfg, past);
        for d in [fresh, later] {
            if d.action == Action::Sync {
                prop_assert!(failed_hook(&app).is_none(), "synced after a failed hook");
                prop_assert!(!app.is_deleting() && app.operation.is_none());
                prop_assert!(!app.has_hooks() || cfg.hooks_idempotent || app.metadata.annotations.contains_key("argo-medic.io/hooks-idempotent"));
                let plan = sync_plan(&app, &cfg);
                prop_assert_eq!(plan.as_ref().ok(), d.sync.as_ref());
                let human = app.status.operation_state.as_ref().and_then(|s| s.operation.as_ref()).and_then(|o| o.initiated_by.as_ref()).is_some_and(|i| !i.automated);
                prop_assert!(app.auto_sync().is_some() || human, "sync without intent on record");
            }
        }
    }

    #[test]
    fn never_repeats_a_rung_nor_escalates_twice_in_one_incident(app in application(), cfg in config(), past in attempts()) {
        let (_, history, later) = decide_twice(&app, &cfg, past);
        if history.incident.is_some() {
            for rung in [Rung::Refresh, Rung::HardRefresh, Rung::Sync] {
                if history.has_taken(rung) {
                    prop_assert_ne!(later.action, rung.action(), "repeated {:?}: {}", rung, later.reason);
                }
            }
            if history.escalated_at().is_some() {
                prop_assert!(!later.action.mutates_argo() && later.action != Action::Escalate, "{}", later.reason);
            }
        }
    }

    #[test]
    fn keys_are_stable_and_derived_from_the_incident_and_rung(app in application(), cfg in config(), past in attempts()) {
        let (fresh, history, later) = decide_twice(&app, &cfg, past.clone());
        let (fresh2, _, later2) = decide_twice(&app.clone(), &cfg, past);
        prop_assert_eq!(&fresh, &fresh2);
        prop_assert_eq!(&later, &later2);
        prop_assert_eq!(&fresh.incident, &history.incident);
        for d in [&fresh, &later] {
            if let (Some(key), Some(incident)) = (&d.idempotency_key, &d.incident) {
                let rung = match d.action { Action::Refresh => Rung::Refresh, Action::HardRefresh => Rung::HardRefresh, Action::Sync => Rung::Sync, _ => Rung::Escalate };
                // The n-th try of a rung Argo CD refused n-1 times; the first try keeps `derive`'s key.
                let tries = if std::ptr::eq(d, &fresh) { 1 } else { history.refusals(rung) as u32 + 1 };
                prop_assert_eq!(key, &IdempotencyKey::derive_attempt(incident, rung, tries));
                prop_assert!(IdempotencyKey::parse(key.as_str()).is_some());
            }
        }
    }

    #[test]
    fn a_new_revision_is_a_new_incident_with_new_keys(app in application(), cfg in config()) {
        let policy = DecisionPolicy::new(cfg);
        let before = policy.decide(&app, &Trigger::sweep(), &History::default(), now()).unwrap();
        let mut moved = app.clone();
        moved.status.sync.as_mut().unwrap().revision = "rev2".into();
        if let Some(r) = moved.status.operation_state.as_mut().and_then(|s| s.sync_result.as_mut()) { r.revision = "rev2".into(); }
        let after = policy.decide(&moved, &Trigger::sweep(), &History { incident: before.incident.clone(), attempts: vec![] }, now()).unwrap();
        if let (Some(a), Some(b)) = (&before.incident, &after.incident) {
            prop_assert_ne!(a.id(), b.id());
            if let (Some(ka), Some(kb)) = (&before.idempotency_key, &after.idempotency_key) { prop_assert_ne!(ka, kb); }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// An escalation never offers a person the Sync the policy itself would refuse for safety
    /// (failed hook, prune risk, hand edit, deletion, running operation) or the mode's diagnosis
    /// rules out, and what it recommends is one of its buttons, never a Sync already tried.
    #[test]
    fn an_escalation_offers_no_unsafe_sync_and_recommends_one_of_its_buttons(app in application(), cfg in config(), past in attempts()) {
        let (fresh, history, later) = decide_twice(&app, &cfg, past);
        for (d, h) in [(&fresh, &History::default()), (&later, &history)] {
            if d.action != Action::Escalate {
                continue;
            }
            let offers_sync = d.human_actions.contains(&medic_core::HumanAction::Sync);
            if failed_hook(&app).is_some() || prune_risk(&app, &cfg).is_some() || appset_hand_edit(&app, &cfg).is_some()
                || app.is_deleting() || app.operation.is_some() || !d.failure_mode.entry().offers_sync
            {
                prop_assert!(!offers_sync, "{}: Sync offered: {}", d.failure_mode, d.reason);
            }
            let recommended = d.recommended.expect("an escalation recommends a button");
            prop_assert!(d.human_actions.contains(&recommended));
            if recommended == medic_core::HumanAction::Sync {
                prop_assert!(!h.has_taken(Rung::Sync) || h.incident != d.incident);
            }
        }
    }
}

/// The properties above only mean something if the generator reaches every action, including
/// syncs next to prune risks and hand edits; this checks that it does.
#[test]
fn the_generator_reaches_every_action() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use std::collections::BTreeMap;

    let mut runner = TestRunner::deterministic();
    let mut seen: BTreeMap<Action, usize> = BTreeMap::new();
    let mut risky_but_escalated = 0;
    for _ in 0..3000 {
        let app = application().new_tree(&mut runner).unwrap().current();
        let cfg = config().new_tree(&mut runner).unwrap().current();
        let past = attempts().new_tree(&mut runner).unwrap().current();
        let (fresh, _, later) = decide_twice(&app, &cfg, past);
        *seen.entry(fresh.action).or_default() += 1;
        *seen.entry(later.action).or_default() += 1;
        // An OutOfSync app at prune risk is stopped by the classifier's prune-risk stage before any
        // rung; any other app at prune risk by the sync gate. Both must be exercised.
        let stopped = fresh.rule.starts_with("prune-risk") || fresh.evidence.iter().any(|e| e.field == "sync_gate");
        if prune_risk(&app, &cfg).is_some() && stopped && fresh.action == Action::Escalate {
            risky_but_escalated += 1;
        }
    }
    for action in [Action::None, Action::Refresh, Action::HardRefresh, Action::Sync, Action::Escalate, Action::Wait] {
        assert!(seen.get(&action).copied().unwrap_or(0) >= 10, "{action} reached only {:?} times: {seen:?}", seen.get(&action));
    }
    assert!(risky_but_escalated >= 10, "the prune gate was exercised only {risky_but_escalated} times");
}

fn trust_level() -> impl Strategy<Value = medic_core::trust::TrustLevel> {
    use medic_core::trust::TrustLevel;
    prop_oneof![Just(TrustLevel::Act), Just(TrustLevel::Propose), Just(TrustLevel::Observe)]
}

prop_compose! {
    /// A trust configuration: a default and up to four rules by project and action kind, the
    /// scope of the policy (every project, or one the app is not in), and the app's project and
    /// trust annotation.
    fn trusted()(
        default in trust_level(),
        rules in prop::collection::vec((trust_level(), prop::option::of(pick(&["default", "payments"])),
                                        prop::option::of(pick(&["refresh", "hard_refresh", "sync"]))), 0..4),
        scoped_out in prop::bool::weighted(0.2),
        project in pick(&["default", "payments"]),
        annotation in prop::option::of(pick(&["act", "propose", "observe", "typo"])),
    ) -> (medic_core::trust::TrustConfig, bool, &'static str, Option<&'static str>) {
        let rules = rules
            .into_iter()
            .map(|(level, p, k)| medic_core::trust::TrustRule {
                projects: p.map(|p| vec![p.to_owned()]).unwrap_or_default(),
                actions: k.map(|k| vec![serde_json::from_value(serde_json::json!(k)).expect("an action kind")]).unwrap_or_default(),
                level,
                ..Default::default()
            })
            .collect();
        (medic_core::trust::TrustConfig { default, rules }, scoped_out, project, annotation)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Issue 29: whatever the scope, the failure mode, the opt-out, the app's annotation and the
    /// switch's mode, what the gate lets through is never looser than the level the configuration
    /// gives the action: no call at `observe`, none but a proposal at `propose`, and nothing at
    /// all for an app out of scope or opted out.
    #[test]
    fn no_combination_acts_beyond_the_configured_trust_level(
        mut app in application(), cfg in config(), past in attempts(), (trust, scoped_out, project, annotation) in trusted(),
        mode in pick(&[medic_core::switch::Mode::Act, medic_core::switch::Mode::DryRun, medic_core::switch::Mode::Off]),
        approvable in any::<bool>(),
    ) {
        use medic_core::gate::{Verdict, trusted_verdict};
        use medic_core::trust::TrustLevel;
        app.spec.project = project.into();
        if let Some(a) = annotation {
            app.metadata.annotations.insert(medic_core::trust::TRUST_ANNOTATION.into(), a.into());
        }
        let cfg = PolicyConfig { trust: trust.clone(), projects: if scoped_out { vec!["elsewhere".into()] } else { vec![] }, ..cfg };
        let (fresh, _, later) = decide_twice(&app, &cfg, past);
        for d in [fresh, later] {
            let Some(rung) = Rung::of(d.action).filter(|r| *r != Rung::Escalate) else {
                prop_assert!(d.trust.is_none(), "a decision that changes nothing carries no level");
                continue;
            };
            prop_assert!(!scoped_out && !app.opted_out(), "no action out of scope or opted out: {}", d.reason);
            let kind = medic_core::actions::ActionKind::of_rung(rung);
            let configured = trust.configured(&app, d.failure_mode, kind).level;
            let applied = d.trust.as_ref().expect("an action that changes Argo CD carries its level").level;
            prop_assert!(applied >= configured, "{applied} looser than the configured {configured}");
            let verdict = trusted_verdict(mode, kind, applied, approvable);
            match verdict {
                Verdict::Act => prop_assert!(configured == TrustLevel::Act && mode == medic_core::switch::Mode::Act),
                Verdict::Propose => prop_assert!(configured <= TrustLevel::Propose && mode == medic_core::switch::Mode::Act && approvable),
                Verdict::Report | Verdict::Silent => {}
            }
        }
    }
}
