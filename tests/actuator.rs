//! The one actuator, through its real callers: every gate mode (the instant switch and the stack's
//! parameters) × every caller that changes Argo CD or posts (the ladder step, a person's button, a
//! signed refresh, the sweeper's canary probes, its outage parent and overdue alert, its weekly
//! report, `medic sweep`'s probes), counted where it lands: the Argo CD simulator's mutating calls and the Slack
//! simulator's posts.

use std::time::Duration;

use chrono::Utc;
use medic::store::SqliteIncidentStore;
use medic::sweep::{SweepOptions, sweep};
use medic_core::PolicyConfig;
use medic_core::Trigger;
use medic_core::event::{AppRef, WorkItem, WorkKind};
use medic_core::ladder::RefreshKind;
use medic_core::ports::WorkQueue;
use medic_core::switch::{FixedSwitch, Mode};
use medic_sim::{ArgoSim, SlackSim};
use medic_slack::{DynamoDbEscalationStore, SlackEscalator};
use medic_worker::Worker;

use crate::support::slack::{ALICE, SIGNING_SECRET, Stack, button, click, settings, slack_escalator, stack};
use crate::support::{Parts, client, outage_fleet};

/// How the gate is set: by the instant switch, or by the stack's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setting {
    Act,
    SwitchDryRun,
    SwitchOff,
    StackDryRun,
    KillSwitch,
}

const SETTINGS: [Setting; 5] = [Setting::Act, Setting::SwitchDryRun, Setting::SwitchOff, Setting::StackDryRun, Setting::KillSwitch];

impl Setting {
    fn switch(self) -> FixedSwitch {
        FixedSwitch(match self {
            Setting::SwitchDryRun => Mode::DryRun,
            Setting::SwitchOff => Mode::Off,
            _ => Mode::Act,
        })
    }
    fn dry_run(self) -> bool {
        self == Setting::StackDryRun
    }
    fn kill_switch(self) -> bool {
        self == Setting::KillSwitch
    }
    /// The one mode the gate makes of it.
    fn mode(self) -> Mode {
        match self {
            Setting::Act => Mode::Act,
            Setting::SwitchDryRun | Setting::StackDryRun => Mode::DryRun,
            Setting::SwitchOff | Setting::KillSwitch => Mode::Off,
        }
    }
}

fn mutations(sim: &ArgoSim) -> usize {
    let c = sim.counts();
    c.refresh + c.hard_refresh + c.sync + c.terminate
}

fn posts(slack: &SlackSim) -> usize {
    slack.calls_of("chat.postMessage").len() + slack.calls_of("chat.update").len()
}

type GatedWorker =
    crate::support::stack::TestWorker<medic_adapters::dynamodb::DynamoDbStore, SlackEscalator<DynamoDbEscalationStore>, FixedSwitch>;

fn worker(stack: &Stack, setting: Setting) -> GatedWorker {
    let w = stack.aws.worker_with(
        &stack.argo,
        stack.store(),
        slack_escalator(&stack.slack, settings(&stack.slack), stack.escalations()),
        setting.switch(),
    );
    Worker::from(w.work.with_config(|c| (c.dry_run, c.kill_switch) = (setting.dry_run(), setting.kill_switch())))
}

/// A sweeper over the stack's queue and table, with escalator `E` and budget `B`.
type GatedSweeper<E, B> = medic_sweeper::Sweeper<
    medic_stack::adapters::Adapters<
        medic_adapters::argocd::HttpArgoClient,
        medic_adapters::dynamodb::DynamoDbStore,
        medic_adapters::dynamodb::DynamoDbStore,
        medic_adapters::dynamodb::DynamoDbStore,
        medic_adapters::sqs::SqsWorkQueue,
        E,
        B,
        medic_adapters::memory::SystemClock,
        medic_core::switch::FixedSwitch,
        medic_adapters::telemetry::Metrics,
    >,
>;

/// The sweeper over `sim` and the stack's queue and table, set as `setting` says.
fn sweeper<E: medic_core::ports::Escalator, B: medic_core::ports::Budget>(
    stack: &Stack,
    sim: &ArgoSim,
    setting: Setting,
    escalator: E,
    budget: B,
) -> GatedSweeper<E, B> {
    let config = medic_sweeper::SweeperConfig {
        dry_run: setting.dry_run(),
        kill_switch: setting.kill_switch(),
        work_item_key: Some(crate::support::work_item_key()),
        ..medic_sweeper::SweeperConfig::default()
    };
    medic_sweeper::Sweeper::from(
        stack.on_table(sim).with_escalator(escalator).with_budget(budget).with_switch(setting.switch()).sweep(config),
    )
}

/// A sweep item for each of inventory (a refresh), observability (a sync) and storefront (an
/// escalation).
async fn enqueue_ladder_apps(stack: &Stack) {
    for (name, project) in [("inventory", "payments"), ("observability", "platform"), ("storefront", "payments")] {
        let app = AppRef { name: name.into(), namespace: "argocd".into(), project: Some(project.into()) };
        stack.queue().enqueue(&WorkItem::for_app(WorkKind::Sweep, app, Trigger::sweep(), "w1", Utc::now()), Duration::ZERO).await.unwrap();
    }
}

/// The ladder step: a refresh (inventory), a sync (observability) and an escalation (storefront).
#[tokio::test]
async fn the_ladder_step_acts_and_posts_only_when_the_gate_says_act() {
    for setting in SETTINGS {
        let stack = stack().await;
        let w = worker(&stack, setting);
        enqueue_ladder_apps(&stack).await;
        stack.poll(&w).await;
        let (m, p) = (mutations(&stack.argo), posts(&stack.slack));
        match setting.mode() {
            Mode::Act => assert!(m >= 2 && p >= 1, "{setting:?}: {m} mutations, {p} posts"),
            _ => assert_eq!((m, p), (0, 0), "{setting:?}"),
        }
    }
}

/// Issue 30: every decision is recorded in the state table whatever the gate says, a dry run
/// and `off` too (before, a dry run recorded nothing), with the mode it was taken in and the
/// parts of the app the policy read.
#[tokio::test]
async fn every_decision_is_recorded_whatever_the_gate_says() {
    use medic_core::ports::IncidentLedger;
    for setting in SETTINGS {
        let stack = stack().await;
        let since = Utc::now() - chrono::TimeDelta::seconds(1);
        let w = worker(&stack, setting);
        enqueue_ladder_apps(&stack).await;
        stack.poll(&w).await;
        let records = stack.store().decisions(since).await.unwrap();
        let mut seen: Vec<(String, &str, &str)> =
            records.iter().map(|r| (r.decision.app.to_string(), r.mode.as_str(), r.project.as_str())).collect();
        seen.sort();
        let mode = setting.mode().as_str();
        assert_eq!(
            seen,
            [
                ("argocd/inventory".to_owned(), mode, "payments"),
                ("argocd/observability".to_owned(), mode, "platform"),
                ("argocd/storefront".to_owned(), mode, "payments")
            ],
            "{setting:?}"
        );
        for r in &records {
            assert_eq!(r.fields.app["metadata"]["name"], r.decision.app.name(), "{setting:?}: the app's identity is kept");
            assert!(!r.fields.app["status"].is_null(), "{setting:?}: and what the policy read of its status");
            assert!(!r.fields.truncated);
        }
    }
}

/// A person's button on `app`'s escalation, clicked and handled at each gate setting: a button
/// that changes Argo CD is performed only in `act` (one mutating call) and answered "not
/// performed" in `dry-run`; nothing is posted in `off`.
async fn a_button_at_every_setting(app: &str, label: &str) {
    for setting in SETTINGS {
        let stack = stack().await;
        let parent = stack.escalated(&worker(&stack, Setting::Act), app).await;
        let id = button(&parent, label);
        assert_eq!(stack.actions().handle(click(&id, ALICE, Utc::now().timestamp(), SIGNING_SECRET)).await.status(), 200);
        let (m0, p0) = (mutations(&stack.argo), posts(&stack.slack));
        stack.poll(&worker(&stack, setting)).await;
        let (m, p) = (mutations(&stack.argo) - m0, posts(&stack.slack) - p0);
        let replies = stack.slack.replies(crate::support::slack::CH, &parent.ts);
        match setting.mode() {
            Mode::Act => assert!(m == 1 && p >= 1 && replies.len() == 1, "{label} {setting:?}: {m} mutations, {p} posts"),
            Mode::DryRun => {
                assert_eq!(m, 0, "{label} {setting:?}");
                assert_eq!(replies.len(), 1, "{label} {setting:?}: the click is answered");
                assert!(crate::support::slack::text_of(&replies[0]).contains("not performed"), "{label} {setting:?}");
            }
            Mode::Off => assert_eq!((m, p, replies.len()), (0, 0, 0), "{label} {setting:?}"),
        }
    }
}

#[tokio::test]
async fn a_sync_button_is_performed_only_when_the_gate_says_act_and_answered_unless_off() {
    a_button_at_every_setting("storefront", "Sync").await;
}

#[tokio::test]
async fn a_hard_refresh_button_is_performed_only_when_the_gate_says_act_and_answered_unless_off() {
    a_button_at_every_setting("storefront", "Hard refresh").await;
}

#[tokio::test]
async fn a_terminate_button_is_performed_only_when_the_gate_says_act_and_answered_unless_off() {
    a_button_at_every_setting("kyc", "Terminate operation").await;
}

/// A button that changes nothing in Argo CD (Acknowledge): recorded and answered in `act` and in
/// `dry-run`, neither in `off`.
#[tokio::test]
async fn an_acknowledge_is_answered_unless_off_and_calls_nothing() {
    for setting in SETTINGS {
        let stack = stack().await;
        let parent = stack.escalated(&worker(&stack, Setting::Act), "storefront").await;
        let ack = button(&parent, "Acknowledge");
        assert_eq!(stack.actions().handle(click(&ack, ALICE, Utc::now().timestamp(), SIGNING_SECRET)).await.status(), 200);
        let m0 = mutations(&stack.argo);
        stack.poll(&worker(&stack, setting)).await;
        let replies = stack.slack.replies(crate::support::slack::CH, &parent.ts);
        assert_eq!(mutations(&stack.argo), m0, "{setting:?}: an acknowledge calls nothing");
        match setting.mode() {
            Mode::Off => assert!(replies.is_empty(), "{setting:?}"),
            _ => {
                assert_eq!(replies.len(), 1, "{setting:?}");
                assert!(crate::support::slack::text_of(&replies[0]).contains("acknowledged"), "{setting:?}");
            }
        }
    }
}

/// A signed refresh (the refresh endpoint's work item).
#[tokio::test]
async fn a_signed_refresh_is_made_only_when_the_gate_says_act() {
    for setting in SETTINGS {
        let stack = stack().await;
        let app = AppRef { name: "inventory".into(), namespace: "argocd".into(), project: Some("payments".into()) };
        let mut item = WorkItem::for_app(WorkKind::Requested, app, "requested-refresh".parse().unwrap(), "r1", Utc::now());
        item.requested_action = Some(WorkItem::refresh_request(RefreshKind::Hard).into());
        item.requested_by = Some("ci-pipeline".into());
        crate::support::work_item_key().sign(&mut item);
        stack.queue().enqueue(&item, Duration::ZERO).await.unwrap();
        stack.poll(&worker(&stack, setting)).await;
        let expected = if setting.mode() == Mode::Act { 1 } else { 0 };
        assert_eq!(stack.argo.counts().hard_refresh, expected, "{setting:?}");
        assert_eq!(posts(&stack.slack), 0, "{setting:?}: a signed refresh posts nothing");
    }
}

/// The sweeper: its canary probes (refreshes, within the budget), the outage parent and, past the
/// cause's time bound, the overdue alert.
#[tokio::test]
async fn the_sweeper_probes_and_posts_only_when_the_gate_says_act() {
    for setting in SETTINGS {
        let stack = stack().await;
        // Down for two hours: past the one-hour bound, so the overdue alert is due too.
        let sim = outage_fleet(30, 20, "git.down.example.com", 120, None, |_, _| None).await;
        let sweeper = sweeper(
            &stack,
            &sim,
            setting,
            slack_escalator(&stack.slack, settings(&stack.slack), stack.escalations()),
            crate::support::generous_budget(),
        );
        let run = sweeper.run().await.unwrap();
        assert_eq!(run.outages, 1, "{setting:?}: {run:?}");
        let (m, p) = (mutations(&sim), posts(&stack.slack));
        match setting.mode() {
            Mode::Act => {
                assert_eq!(m, 3, "{setting:?}: one refresh per canary");
                assert!(p >= 2, "{setting:?}: the outage parent and the overdue alert ({p} posts)");
            }
            _ => assert_eq!((m, p, run.probed), (0, 0, 0), "{setting:?}"),
        }
    }
}

/// H2 (reliability review of 0a3f9d5): the sweeper refreshed canaries and posted whatever the
/// instant switch said, outside every budget. Its probes now take the workers' budget: at one
/// refresh a minute (a burst of one), one of the three canaries is refreshed this sweep. Fails on
/// 0a3f9d5 (three refreshes).
#[tokio::test]
async fn the_sweeper_s_canary_probes_take_the_refresh_budget() {
    let stack = stack().await;
    let sim = outage_fleet(30, 20, "git.down.example.com", 20, None, |_, _| None).await;
    let one_a_minute = medic_adapters::budget::LocalBudget::new(medic_adapters::budget::BudgetRates {
        refresh_per_minute: 1,
        hard_refresh_per_minute: 1,
        sync_per_minute: 1,
        max_wait: Duration::ZERO,
    });
    let sweeper = sweeper(&stack, &sim, Setting::Act, medic_adapters::memory::LogEscalator::default(), one_a_minute);
    let run = sweeper.run().await.unwrap();
    assert_eq!((run.outages, run.probed), (1, 1), "{run:?}");
    assert_eq!(mutations(&sim), 1, "one refresh for one budget token");
}

/// `medic sweep`: its canary probes and the outage's alert go through the same gate.
#[tokio::test]
async fn medic_sweep_probes_and_alerts_only_when_the_gate_says_act() {
    for setting in SETTINGS {
        let sim = outage_fleet(30, 20, "git.down.example.com", 20, None, |_, _| None).await;
        let c = client(&sim);
        let parts = Parts::new(SqliteIncidentStore::in_memory().unwrap(), PolicyConfig::default());
        let switch = setting.switch();
        let mut r = parts.step(&c, setting.dry_run(), Duration::from_secs(600));
        r.kill_switch = setting.kill_switch();
        r.switch = &switch;
        let summary = sweep(&r, &SweepOptions::default(), &(), &|| false).await.unwrap();
        assert_eq!(summary.outages.len(), 1, "{setting:?}");
        // The outage's parent, as the sweeper tells it (one state machine): not overdue yet, so
        // no alert besides it.
        let (parents, alerts) = (parts.escalator.outages().len(), parts.escalator.alerts().len());
        match setting.mode() {
            Mode::Act => assert!(
                mutations(&sim) >= 3 && (parents, alerts) == (1, 0),
                "{setting:?}: {} mutations, {parents} parents, {alerts} alerts",
                mutations(&sim)
            ),
            _ => assert_eq!((mutations(&sim), parents, alerts), (0, 0, 0), "{setting:?}"),
        }
    }
}

/// L1 (reliability review of 0a3f9d5): the overdue outage's marker was written before the alert
/// was told, and a failed post silenced the escalation for a day. The marker now goes when the
/// post fails, and the next sweep tells it. Fails on 0a3f9d5 (never told).
#[tokio::test]
async fn an_overdue_outage_whose_alert_could_not_be_posted_is_told_by_the_next_sweep() {
    let stack = stack().await;
    let sim = outage_fleet(30, 20, "git.down.example.com", 120, None, |_, _| None).await;
    let sweeper = sweeper(
        &stack,
        &sim,
        Setting::Act,
        slack_escalator(&stack.slack, settings(&stack.slack), stack.escalations()),
        crate::support::generous_budget(),
    );
    let overdue = |slack: &SlackSim| {
        slack
            .messages(crate::support::slack::CH)
            .iter()
            .filter(|m| {
                (m.text.contains("Escalation: fleet outage past its time bound")
                    || m.blocks.to_string().contains("Escalation: fleet outage past its time bound"))
                    && m.thread_ts.is_none()
            })
            .count()
    };
    stack.slack.inject(medic_sim::SlackFault {
        method: Some("chat.postMessage".into()),
        kind: medic_sim::SlackFaultKind::Status(500),
        times: 1000,
    });
    let first = sweeper.run().await.unwrap();
    assert_eq!((first.outages, first.escalated), (1, 1), "{first:?}");
    assert_eq!(overdue(&stack.slack), 0, "Slack is down: nothing told");
    stack.slack.clear_faults();
    sweeper.run().await.unwrap();
    assert_eq!(overdue(&stack.slack), 1, "told by the next sweep");
    sweeper.run().await.unwrap();
    assert_eq!(overdue(&stack.slack), 1, "and once");
}

/// The weekly shadow report: posted in `act` and in a dry run (when a team reads it most), not
/// with the switch off; once per week however often its schedule fires.
#[tokio::test]
async fn the_weekly_report_is_posted_unless_off_and_once_a_week() {
    let report = serde_json::json!({"medic": medic_sweeper::WEEKLY_REPORT_INPUT});
    for setting in SETTINGS {
        let stack = stack().await;
        let escalator = slack_escalator(&stack.slack, settings(&stack.slack), stack.escalations());
        let sweeper = sweeper(&stack, &stack.argo, setting, escalator, crate::support::generous_budget());
        let reports = |slack: &SlackSim| {
            slack.parents(crate::support::slack::CH).iter().filter(|m| m.payload("key").is_some_and(|k| k.starts_with("report-"))).count()
        };
        for _ in 0..2 {
            let done = sweeper.handle(&report).await.unwrap();
            assert!(matches!(done, medic_sweeper::Done::Report(_)), "{setting:?}: {done:?}");
        }
        match setting.mode() {
            Mode::Off => assert_eq!(posts(&stack.slack), 0, "{setting:?}"),
            _ => assert_eq!((reports(&stack.slack), posts(&stack.slack)), (1, 1), "{setting:?}: posted once"),
        }
        assert_eq!(mutations(&stack.argo), 0, "{setting:?}: a report changes nothing in Argo CD");
    }
}

/// The weekly report's one run is not retried (the sweeper's Lambda retries nothing, which suits
/// sweeps): when Slack fails it, the report stays due and the sweeps after it post it, once.
/// Before, that week's report was lost.
#[tokio::test]
async fn a_weekly_report_whose_run_failed_is_posted_by_the_sweeps_after_it_once() {
    let stack = stack().await;
    let escalator = slack_escalator(&stack.slack, settings(&stack.slack), stack.escalations());
    let sweeper = sweeper(&stack, &stack.argo, Setting::Act, escalator, crate::support::generous_budget());
    let reports = |slack: &SlackSim| {
        slack.parents(crate::support::slack::CH).iter().filter(|m| m.payload("key").is_some_and(|k| k.starts_with("report-"))).count()
    };
    stack.slack.inject(medic_sim::SlackFault {
        method: Some("chat.postMessage".into()),
        kind: medic_sim::SlackFaultKind::Status(500),
        times: 1000,
    });
    let failed = sweeper.handle(&serde_json::json!({"medic": medic_sweeper::WEEKLY_REPORT_INPUT})).await;
    assert!(failed.is_err(), "Slack is down: the report's run fails: {failed:?}");
    stack.slack.clear_faults();
    assert_eq!(reports(&stack.slack), 0);
    let scheduled = serde_json::json!({"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}});
    assert!(matches!(sweeper.handle(&scheduled).await.unwrap(), medic_sweeper::Done::Sweep(_)));
    assert_eq!(reports(&stack.slack), 1, "posted by the sweep after the failed run");
    sweeper.handle(&scheduled).await.unwrap();
    assert_eq!(reports(&stack.slack), 1, "and not again");
}

/// A resolution (an answer in a thread people have): told in `act` and `dry-run`, not in `off`.
#[tokio::test]
async fn a_resolution_is_told_unless_off() {
    for setting in SETTINGS {
        let stack = stack().await;
        let parent = stack.escalated(&worker(&stack, Setting::Act), "storefront").await;
        // The app heals: Synced and Healthy at its revision.
        let mut healed: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(crate::support::events_dir().join("apps/healthy.json")).unwrap()).unwrap();
        healed["metadata"]["name"] = "storefront".into();
        healed["spec"]["project"] = "payments".into();
        stack.argo.insert_app(healed);
        let p0 = posts(&stack.slack);
        stack.enqueue_look("storefront", "w2").await;
        stack.poll(&worker(&stack, setting)).await;
        let told = posts(&stack.slack) - p0;
        let replies = stack.slack.replies(crate::support::slack::CH, &parent.ts);
        match setting.mode() {
            Mode::Off => assert_eq!(told, 0, "{setting:?}"),
            _ => assert!(
                told >= 1 && replies.iter().any(|r| crate::support::slack::text_of(r).contains("Resolved")),
                "{setting:?}: {told} posts"
            ),
        }
    }
}

/// A fleet outage told over (an answer in a thread people have): in `act` and `dry-run`, not in `off`.
#[tokio::test]
async fn an_outage_is_told_over_unless_off() {
    for setting in SETTINGS {
        let stack = stack().await;
        let sim = outage_fleet(30, 20, "git.down.example.com", 20, None, |_, _| None).await;
        let escalator = || slack_escalator(&stack.slack, settings(&stack.slack), stack.escalations());
        sweeper(&stack, &sim, Setting::Act, escalator(), crate::support::generous_budget()).run().await.unwrap();
        // The outage ends: every covered app can be compared again, and is calm.
        for i in 0..20 {
            let mut app = sim.app("argocd", &format!("app-{:05}", i + 1)).expect("a covered app");
            app["status"]["sync"]["status"] = "Synced".into();
            app["status"]["health"] = serde_json::json!({"status": "Healthy"});
            sim.insert_app(app);
        }
        let p0 = posts(&stack.slack);
        let over = sweeper(&stack, &sim, setting, escalator(), crate::support::generous_budget()).run().await.unwrap();
        assert_eq!(over.outages, 0, "{setting:?}: {over:?}");
        let told = posts(&stack.slack) - p0;
        match setting.mode() {
            Mode::Off => assert_eq!(told, 0, "{setting:?}"),
            _ => assert!(told >= 1, "{setting:?}: the parent is rewritten as over"),
        }
    }
}

/// Issue 22 (found by the chaos run): a rung claimed by a run that died, redelivered while the
/// switch is off, was ended as a dry run. Its claim stayed unfinished and the action it stood for
/// was never performed: lost. Now the held item comes back, and the first look after `act`
/// resumes the claim and performs it, once. Fails on c2fa4a9.
#[tokio::test]
async fn a_claim_the_switch_holds_is_kept_and_resumed_after_act() {
    use medic_core::incident::{Attempt, Outcome};
    use medic_core::ports::{ArgoApi, IncidentStore};
    let stack = stack().await;
    let quick = |w: GatedWorker| Worker::from(w.work.with_config(|c| c.held_claim_delay = Duration::ZERO));
    let off = quick(worker(&stack, Setting::SwitchOff));
    let target = AppRef { name: "inventory".into(), namespace: "argocd".into(), project: Some("payments".into()) };
    let id = target.id();

    // The dead run: it decided the refresh ten minutes ago, claimed it, and was killed.
    let app = off.argo.get_app(&target).await.unwrap();
    let history = stack.store().history(&id).await.unwrap();
    let decided = off.policy.base().decide(&app, &Trigger::sweep(), &history, Utc::now()).unwrap();
    assert_eq!(decided.action, medic_core::Action::Refresh, "{}", decided.reason);
    let attempt = Attempt {
        rung: medic_core::Rung::Refresh,
        at: Utc::now() - chrono::Duration::minutes(10),
        idempotency_key: decided.idempotency_key.clone(),
        outcome: Outcome::Requested,
    };
    let claimed = stack.store().claim(&id, decided.incident.as_ref().unwrap(), &attempt, Duration::from_secs(1)).await.unwrap();
    assert_eq!(claimed, medic_core::ports::Claim::Granted);

    // Redelivered while the switch is off: nothing is done, and the item is not ended.
    stack.enqueue_look("inventory", "w1").await;
    let handled = stack.poll(&off).await;
    assert!(matches!(handled.as_slice(), [medic_worker::Handled::Requeued { .. }]), "{handled:?}");
    assert_eq!(mutations(&stack.argo), 0, "nothing reaches Argo CD while off");
    assert_eq!(stack.depth().await, 1, "the item waits for the switch");

    // `act` again (the dead run's claim has expired): the claim is resumed and performed once.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let act = quick(worker(&stack, Setting::Act));
    let handled = stack.poll(&act).await;
    assert!(matches!(handled.as_slice(), [medic_worker::Handled::Stepped(medic_core::step::StepResult::Refreshed)]), "{handled:?}");
    assert_eq!(stack.argo.counts().refresh, 1, "the claimed refresh reached Argo CD exactly once");
    let history = stack.store().history(&id).await.unwrap();
    assert!(history.attempts.iter().all(|a| a.outcome != Outcome::Requested), "no claim left unfinished: {history:?}");
    assert_eq!(stack.depth().await, 0, "nothing more to do");
}

/// A person's requests made while the switch is off (a Sync click, a signed refresh) are neither
/// performed nor dropped: they wait for the switch, and after `act` each is performed once and the
/// click answered in its thread. The full chaos run (seed 1) found 14 clicks and 8 signed
/// refreshes accepted during its minute of `off` that were never answered or never reached
/// Argo CD: the worker ended them as held.
#[tokio::test]
async fn a_person_s_requests_made_while_off_wait_for_the_switch_and_are_performed_after_act() {
    let stack = stack().await;
    let quick = |w: GatedWorker| Worker::from(w.work.with_config(|c| c.held_claim_delay = Duration::ZERO));
    let parent = stack.escalated(&worker(&stack, Setting::Act), "storefront").await;
    let sync = button(&parent, "Sync");
    assert_eq!(stack.actions().handle(click(&sync, ALICE, Utc::now().timestamp(), SIGNING_SECRET)).await.status(), 200);
    let app = AppRef { name: "inventory".into(), namespace: "argocd".into(), project: Some("payments".into()) };
    let mut refresh = WorkItem::for_app(WorkKind::Requested, app, "requested-refresh".parse().unwrap(), "r1", Utc::now());
    refresh.requested_action = Some(WorkItem::refresh_request(RefreshKind::Normal).into());
    refresh.requested_by = Some("ci-pipeline".into());
    crate::support::work_item_key().sign(&mut refresh);
    stack.queue().enqueue(&refresh, Duration::ZERO).await.unwrap();
    let (m0, r0) = (mutations(&stack.argo), stack.argo.counts().refresh);

    // Off: nothing reaches Argo CD or Slack, and both requests are still on the queue.
    for _ in 0..3 {
        let handled = stack.poll(&quick(worker(&stack, Setting::SwitchOff))).await;
        assert!(handled.iter().all(|h| matches!(h, medic_worker::Handled::Requeued { .. })), "{handled:?}");
    }
    assert_eq!(mutations(&stack.argo), m0, "nothing is changed while off");
    assert!(stack.slack.replies(crate::support::slack::CH, &parent.ts).is_empty(), "nothing is posted while off");
    assert_eq!(stack.depth().await, 2, "both requests wait for the switch");

    // Act: each performed once, the click answered.
    let handled = stack.poll(&quick(worker(&stack, Setting::Act))).await;
    assert_eq!(handled.len(), 2, "{handled:?}");
    assert_eq!(stack.argo.counts().refresh - r0, 1, "the signed refresh reached Argo CD once");
    assert_eq!(stack.argo.counts().sync, 1, "the clicked sync was started once");
    let replies = stack.slack.replies(crate::support::slack::CH, &parent.ts);
    assert_eq!(replies.len(), 1, "the click is answered in its thread");
}

/// Ports by capability (issue 28): the actuator needs markers only, not the delivery leases the
/// dedupe table also keeps. A store that keeps markers and nothing else (`MarkerStore` alone)
/// drives a once-alert: told once while its marker lives, told again after it is forgotten.
#[tokio::test]
async fn the_actuator_tells_a_once_alert_once_with_a_store_that_keeps_markers_only() {
    use medic_adapters::memory::{LogEscalator, MemoryDedupe, MemoryIncidentStore, SystemClock};
    use medic_core::actions::ActionKind;
    use medic_core::actuator::{Actuator, Once, Request};
    use medic_core::alerts::WhenUnsure;
    use medic_core::gate::Gate;
    use medic_core::ports::MarkerStore;

    /// Markers, and no `DeliveryLeases`: the actuator must not need them.
    struct MarkersOnly(MemoryDedupe);
    impl medic_core::ports::MarkerStoreDecorator for MarkersOnly {
        type Inner = MemoryDedupe;
        fn inner(&self) -> &MemoryDedupe {
            &self.0
        }
    }

    let sim = ArgoSim::start(medic_sim::SimConfig::default()).await.unwrap();
    let (argo, store, markers, escalator) =
        (client(&sim), MemoryIncidentStore::default(), MarkersOnly(MemoryDedupe::default()), LogEscalator::default());
    let budget = crate::support::generous_budget();
    let switch = FixedSwitch(Mode::Act);
    let act = Actuator {
        argo: &argo,
        store: &store,
        dedupe: &markers,
        escalator: &escalator,
        budget: &budget,
        clock: &SystemClock,
        gate: Gate { dry_run: false, kill_switch: false, switch: &switch },
        claim_timeout: Duration::from_secs(60),
    };
    let key = medic_core::keys::hourly_alert_marker("unauthenticated", Utc::now());
    let alert = || Request::Alert {
        kind: ActionKind::ServiceAlert,
        text: "Argo CD rejected the token",
        once: Some(Once { key: &key, ttl: Duration::from_secs(3600), unsure: WhenUnsure::Skip }),
    };
    act.perform(alert()).await.unwrap();
    act.perform(alert()).await.unwrap();
    assert_eq!(escalator.alerts().len(), 1, "told once while its marker lives: {:?}", escalator.alerts());
    markers.forget(&key).await.unwrap();
    act.perform(alert()).await.unwrap();
    assert_eq!(escalator.alerts().len(), 2, "and again once it is forgotten");
    assert_eq!(mutations(&sim), 0, "an alert changes nothing in Argo CD");
}
