//! Earned autonomy end to end (issue 29): the worker and the sweeper over the Argo CD and Slack
//! simulators, with the policy's `trust` at `observe`, `propose` or `act`, counted where it lands
//! (the simulator's mutating calls, the Slack simulator's posts), and its `routing` sending an
//! incident's thread to its team's channel.

use std::time::Duration;

use chrono::Utc;
use medic_core::event::{AppRef, WorkItem, WorkKind};
use medic_core::ports::WorkQueue;
use medic_core::trust::{TrustConfig, TrustLevel, TrustRule};
use medic_core::{DecisionPolicy, Trigger};
use medic_sim::ArgoSim;
use medic_worker::{Worker, WorkerPolicy};

use crate::support::slack::{ALICE, SIGNING_SECRET, SlackWorker, Stack, button, click, parents, stack, text_of};

/// Bob is on the allow-list of `platform` (tests/support/slack.rs); Alice only on `payments`'.
const BOB: &str = "U0BOB00001";

fn mutations(sim: &ArgoSim) -> usize {
    let c = sim.counts();
    c.refresh + c.hard_refresh + c.sync + c.terminate
}

/// The stack's worker deciding with `trust`.
fn worker_trusting(stack: &Stack, trust: TrustConfig) -> SlackWorker {
    let w = stack.worker();
    let mut config = w.policy.base().config.clone();
    config.trust = trust;
    Worker::from(w.work.with_policy(WorkerPolicy::fixed(DecisionPolicy::new(config))))
}

async fn look(stack: &Stack, name: &str, project: &str, window: &str) {
    let app = AppRef { name: name.into(), namespace: "argocd".into(), project: Some(project.into()) };
    stack.queue().enqueue(&WorkItem::for_app(WorkKind::Sweep, app, Trigger::sweep(), window, Utc::now()), Duration::ZERO).await.unwrap();
}

/// `observe`: the ladder decides what it would do and records it, nothing changes in Argo CD and
/// no proposal is posted; an escalation still reaches people.
#[tokio::test]
async fn observe_changes_nothing_in_argo_cd_and_proposes_nothing_but_still_escalates() {
    let stack = stack().await;
    let w = worker_trusting(&stack, TrustConfig { default: TrustLevel::Observe, rules: Vec::new() });
    look(&stack, "inventory", "payments", "w1").await; // a refresh
    look(&stack, "observability", "platform", "w1").await; // a sync
    look(&stack, "storefront", "payments", "w1").await; // an escalation
    stack.poll(&w).await;
    assert_eq!(mutations(&stack.argo), 0, "observe makes no call that changes Argo CD");
    let told = parents(&stack.slack);
    assert_eq!(told.len(), 1, "only the escalation: {:?}", told.iter().map(text_of).collect::<Vec<_>>());
    assert!(text_of(&told[0]).contains("storefront"));
}

/// `propose`: the sync the ladder chose is posted to the incident's thread with Sync as its
/// primary button, and performed only when a person on the project's allow-list presses it.
/// The proposal is the incident's escalation: a later look posts nothing more.
#[tokio::test]
async fn propose_offers_the_action_as_the_primary_button_and_acts_only_on_an_allowed_click() {
    let stack = stack().await;
    let w = worker_trusting(&stack, TrustConfig { default: TrustLevel::Propose, rules: Vec::new() });
    look(&stack, "observability", "platform", "w1").await;
    stack.poll(&w).await;
    assert_eq!(mutations(&stack.argo), 0, "proposed, not performed");
    let proposals = parents(&stack.slack);
    assert_eq!(proposals.len(), 1);
    let text = text_of(&proposals[0]);
    assert!(text.contains("Proposed: Sync"), "{text}");
    let actions = proposals[0].blocks.as_array().unwrap().iter().find(|b| b["type"] == "actions").cloned().expect("buttons");
    let first = &actions["elements"][0];
    assert_eq!((first["text"]["text"].as_str(), first["style"].as_str()), (Some("Sync"), Some("primary")), "{actions}");

    // Alice may press buttons of payments, not of platform: refused, nothing performed.
    let sync = button(&proposals[0], "Sync");
    assert_eq!(stack.actions().handle(click(&sync, ALICE, Utc::now().timestamp(), SIGNING_SECRET)).await.status(), 403);
    stack.poll(&w).await;
    assert_eq!(mutations(&stack.argo), 0, "a user off the allow-list approves nothing");

    // Bob may: the sync is performed, once.
    assert_eq!(stack.actions().handle(click(&sync, BOB, Utc::now().timestamp(), SIGNING_SECRET)).await.status(), 200);
    stack.poll(&w).await;
    assert_eq!(stack.argo.counts().sync, 1, "the approved sync");

    // The incident is in people's hands: the next look posts no second proposal and syncs nothing.
    look(&stack, "observability", "platform", "w2").await;
    stack.poll(&w).await;
    assert_eq!(parents(&stack.slack).len(), 1);
    assert_eq!(stack.argo.counts().sync, 1);
}

/// Rules by action kind: refreshes `act`, syncs `propose`. The refresh is made; the sync that
/// would follow it on another app is proposed.
#[tokio::test]
async fn a_rule_per_action_kind_lets_refreshes_act_while_syncs_are_proposed() {
    let stack = stack().await;
    let trust = TrustConfig {
        default: TrustLevel::Observe,
        rules: vec![
            TrustRule { actions: vec![medic_core::actions::ActionKind::Refresh], level: TrustLevel::Act, ..Default::default() },
            TrustRule { projects: vec!["platform".into()], level: TrustLevel::Propose, ..Default::default() },
        ],
    };
    let w = worker_trusting(&stack, trust);
    look(&stack, "inventory", "payments", "w1").await;
    look(&stack, "observability", "platform", "w1").await;
    stack.poll(&w).await;
    let counts = stack.argo.counts();
    assert_eq!((counts.refresh, counts.sync), (1, 0), "{counts:?}");
    let told = parents(&stack.slack);
    assert_eq!(told.len(), 1);
    assert!(text_of(&told[0]).contains("observability") && text_of(&told[0]).contains("Proposed: Sync"));
}

/// The sweeper's canary probes of a fleet outage are refreshes of apps that cannot be compared
/// (`comparison-error-transient`): made at `act`, held at `observe` and at `propose` (a probe is
/// not proposed to people, who are told of the outage as a whole), while the outage is still told.
#[tokio::test]
async fn the_sweeper_probes_canaries_only_where_refreshes_of_unreachable_sources_may_act() {
    for (level, probes) in [(TrustLevel::Act, 3), (TrustLevel::Propose, 0), (TrustLevel::Observe, 0)] {
        let stack = stack().await;
        let sim = crate::support::outage_fleet(30, 20, "git.down.example.com", 20, None, |_, _| None).await;
        let mut sweeper = stack.sweeper(&sim, Duration::from_secs(300));
        sweeper.config.trust = TrustConfig {
            default: TrustLevel::Act,
            rules: vec![TrustRule { failure_modes: vec![medic_core::FailureMode::ComparisonErrorTransient], level, ..Default::default() }],
        };
        let run = sweeper.run().await.unwrap();
        assert_eq!(run.outages, 1, "{level}: {run:?}");
        assert_eq!((mutations(&sim), run.probed), (probes, probes), "{level}");
        assert!(!stack.slack.parents(crate::support::slack::CH).is_empty(), "{level}: the outage is told");
    }
}

/// `medic sweep` (no Slack): the same rule holds its canaries.
#[tokio::test]
async fn medic_sweep_probes_canaries_only_at_act() {
    for (level, probed) in [(TrustLevel::Act, true), (TrustLevel::Observe, false)] {
        let sim = crate::support::outage_fleet(30, 20, "git.down.example.com", 20, None, |_, _| None).await;
        let c = crate::support::client(&sim);
        let policy = medic_core::PolicyConfig { trust: TrustConfig { default: level, rules: Vec::new() }, ..Default::default() };
        let parts = crate::support::Parts::new(medic::store::SqliteIncidentStore::in_memory().unwrap(), policy);
        let r = parts.step(&c, false, Duration::from_secs(600));
        let summary = medic::sweep::sweep(&r, &medic::sweep::SweepOptions::default(), &(), &|| false).await.unwrap();
        assert_eq!(summary.outages.len(), 1, "{level}");
        assert_eq!(mutations(&sim) > 0, probed, "{level}: {} mutating calls", mutations(&sim));
    }
}

/// The stack with a Slack simulator that has the payments team's channel too.
async fn stack_with_team_channel(channel: &str) -> Stack {
    let slack = medic_sim::SlackSim::start(medic_sim::SlackSimConfig {
        channels: vec![crate::support::slack::CH.into(), channel.into()],
        ..Default::default()
    })
    .await
    .unwrap();
    let aws = crate::support::stack::AwsStack::new("slack-work", 1, 1000).await;
    let argo = crate::support::sim_with_samples(medic_sim::SimConfig::default()).await;
    Stack { aws, slack, argo }
}

/// Routing: an app whose project names a channel gets its thread there, its team mentioned; the
/// reply to a button in it is told in that thread; an app of another project stays in the
/// deployment's channel.
#[tokio::test]
async fn an_incident_of_a_routed_project_gets_its_thread_in_the_team_s_channel() {
    const PAYMENTS: &str = "C0PAYMENTS1";
    let stack = stack_with_team_channel(PAYMENTS).await;
    let w = stack.worker();
    let mut config = w.policy.base().config.clone();
    config.routing =
        serde_json::from_value(serde_json::json!({"projects": {"payments": {"channel": PAYMENTS, "mention": "S0PAYONCALL"}}})).unwrap();
    let w = Worker::from(w.work.with_policy(WorkerPolicy::fixed(DecisionPolicy::new(config))));
    look(&stack, "storefront", "payments", "w1").await; // escalated
    look(&stack, "legacy-batch", "sandbox", "w1").await; // escalated too (a deletion stuck on finalizers)
    stack.poll(&w).await;

    let team = stack.slack.parents(PAYMENTS);
    assert_eq!(team.len(), 1, "storefront's thread is in the team's channel");
    assert!(text_of(&team[0]).contains("storefront") && text_of(&team[0]).contains("<!subteam^S0PAYONCALL>"), "{}", text_of(&team[0]));
    let shared = parents(&stack.slack);
    assert!(shared.iter().all(|m| !text_of(m).contains("storefront")), "not in the deployment's channel too");
    assert!(shared.iter().any(|m| text_of(m).contains("legacy-batch")), "the other project's incident stays in the deployment's channel");

    // A person's button in the team's thread is answered there.
    let ack = button(&team[0], "Acknowledge");
    assert_eq!(stack.actions().handle(click(&ack, ALICE, Utc::now().timestamp(), SIGNING_SECRET)).await.status(), 200);
    stack.poll(&w).await;
    assert_eq!(stack.slack.replies(PAYMENTS, &team[0].ts).len(), 1, "the reply is in the team's thread");
}

/// A freeze of project payments for 4 hours, set now, in a switch store read as the functions
/// read it (`CachedSwitch`, on the test's clock).
async fn frozen_payments(
    clock: &std::sync::Arc<crate::support::TestClock>,
    hours: i64,
) -> (std::sync::Arc<medic_adapters::switch::MemorySwitchStore>, medic_core::freeze::Freeze) {
    use medic_core::ports::Clock;
    use medic_core::switch::SwitchStore;
    let store = std::sync::Arc::new(medic_adapters::switch::MemorySwitchStore::default());
    let freeze = medic_core::freeze::Freeze::new(
        medic_core::freeze::FreezeScope::Project("payments".into()),
        clock.now(),
        chrono::TimeDelta::hours(hours),
        "ledger migration",
        "medic freeze (alice)",
    );
    store.write_freeze(&freeze).await.unwrap();
    (store, freeze)
}

/// A freeze holds every automatic action on its scope (decided, recorded, not performed, and
/// the step says which freeze held it), leaves other projects alone, and lifts itself at its end:
/// the clock moved past it, the same look acts.
#[tokio::test]
async fn a_freeze_holds_automatic_actions_on_its_scope_and_lifts_itself_at_its_end() {
    let sim = crate::support::sim_with_samples(medic_sim::SimConfig::default()).await;
    let c = crate::support::client(&sim);
    let clock = crate::support::TestClock::now_real();
    let (store, _) = frozen_payments(&clock, 4).await;
    let switch = medic_adapters::switch::CachedSwitch::new(std::sync::Arc::clone(&store), std::sync::Arc::clone(&clock));
    let parts = crate::support::Parts::new(
        medic_adapters::memory::MemoryIncidentStore::default(),
        medic_core::PolicyConfig { instance_id: "test".into(), settle_secs: 0, ..Default::default() },
    );
    let step = parts.step_switched(&c, clock.as_ref(), &switch, Duration::from_secs(600));
    let inventory = crate::support::app("inventory", "payments"); // stale: the ladder refreshes it

    let held = step.run(&inventory, &Trigger::sweep(), None).await.unwrap();
    assert_eq!(held.result, medic_core::step::StepResult::DryRun, "{}", held.detail);
    assert!(held.detail.contains("project payments is frozen until") && held.detail.contains("ledger migration"), "{}", held.detail);
    assert_eq!(mutations(&sim), 0);

    let other = step.run(&crate::support::app("observability", "platform"), &Trigger::sweep(), None).await.unwrap();
    assert_eq!(other.result, medic_core::step::StepResult::Synced, "another project is not frozen: {}", other.detail);

    clock.advance(chrono::TimeDelta::hours(4) + chrono::TimeDelta::minutes(1));
    let after = step.run(&inventory, &Trigger::sweep(), None).await.unwrap();
    assert_eq!(after.result, medic_core::step::StepResult::Refreshed, "lifted by itself: {}", after.detail);
}

/// Half an hour before a freeze ends, the sweeper reminds the channel, once, whatever how many
/// sweeps run in that half hour; it ends on its own.
#[tokio::test]
async fn the_sweeper_reminds_of_a_freeze_ending_once() {
    let stack = stack().await;
    let clock = crate::support::TestClock::now_real();
    let (store, freeze) = frozen_payments(&clock, 1).await;
    let escalator = std::sync::Arc::new(medic_adapters::memory::LogEscalator::default());
    let config =
        medic_sweeper::SweeperConfig { work_item_key: Some(crate::support::work_item_key()), ..medic_sweeper::SweeperConfig::default() };
    let adapters = stack
        .on_table(&stack.argo)
        .with_escalator(std::sync::Arc::clone(&escalator))
        .with_clock(std::sync::Arc::clone(&clock))
        .with_switch(medic_adapters::switch::CachedSwitch::new(std::sync::Arc::clone(&store), std::sync::Arc::clone(&clock)));
    let sweeper = medic_sweeper::Sweeper::from(adapters.sweep(config));
    let reminders = |e: &medic_adapters::memory::LogEscalator| e.alerts().iter().filter(|a| a.contains("is frozen until")).count();
    sweeper.run().await.unwrap();
    assert_eq!(reminders(&escalator), 0, "an hour left: not yet");
    clock.advance(chrono::TimeDelta::minutes(35));
    sweeper.run().await.unwrap();
    clock.advance(chrono::TimeDelta::minutes(10));
    sweeper.run().await.unwrap();
    assert_eq!(reminders(&escalator), 1, "told once: {:?}", escalator.alerts());
    assert!(escalator.alerts().iter().any(|a| a.contains(&freeze.reason) && a.contains("resumes its automatic actions")));
}

/// A person's button still works in a frozen scope, and its reply in the thread says the scope is
/// frozen and until when.
#[tokio::test]
async fn a_button_works_in_a_frozen_scope_and_its_reply_says_so() {
    let stack = stack().await;
    let clock = crate::support::TestClock::now_real();
    let (store, _) = frozen_payments(&clock, 4).await;
    let w = stack.aws.worker_with(
        &stack.argo,
        stack.store(),
        crate::support::slack::slack_escalator(&stack.slack, crate::support::slack::settings(&stack.slack), stack.escalations()),
        medic_adapters::switch::CachedSwitch::new(store, medic_adapters::memory::SystemClock),
    );
    let parent = stack.escalated(&w, "storefront").await;
    let sync = button(&parent, "Sync");
    assert_eq!(stack.actions().handle(click(&sync, ALICE, Utc::now().timestamp(), SIGNING_SECRET)).await.status(), 200);
    stack.poll(&w).await;
    assert_eq!(stack.argo.counts().sync, 1, "the person's sync is performed");
    let replies = stack.slack.replies(crate::support::slack::CH, &parent.ts);
    assert_eq!(replies.len(), 1);
    assert!(text_of(&replies[0]).contains("project payments is frozen until"), "{}", text_of(&replies[0]));
}

/// "Freeze 4h" in an incident's thread: the app is frozen for four hours, by the person who
/// pressed it (the project's allow-list applies, as to every button), where `medic freeze list`
/// and every worker read freezes; the reply says until when, and that Argo CD's auto-sync runs on.
#[tokio::test]
async fn the_freeze_button_freezes_the_app_for_four_hours_by_whoever_pressed_it() {
    use medic_core::switch::SwitchStore;
    let stack = stack().await;
    let store = std::sync::Arc::new(medic_adapters::switch::MemorySwitchStore::default());
    let w = stack.aws.worker_with(
        &stack.argo,
        stack.store(),
        crate::support::slack::slack_escalator(&stack.slack, crate::support::slack::settings(&stack.slack), stack.escalations()),
        medic_adapters::switch::CachedSwitch::new(std::sync::Arc::clone(&store), medic_adapters::memory::SystemClock),
    );
    let parent = stack.escalated(&w, "storefront").await;
    let freeze = button(&parent, "Freeze 4h");
    assert_eq!(
        stack.actions().handle(click(&freeze, crate::support::slack::MALLORY, Utc::now().timestamp(), SIGNING_SECRET)).await.status(),
        403
    );
    assert_eq!(stack.actions().handle(click(&freeze, ALICE, Utc::now().timestamp(), SIGNING_SECRET)).await.status(), 200);
    stack.poll(&w).await;

    let freezes = store.read_freezes().await.unwrap();
    assert_eq!(freezes.len(), 1, "{freezes:?}");
    let f = &freezes[0];
    assert_eq!(f.scope, medic_core::freeze::FreezeScope::App(medic_core::AppId::new("argocd", "storefront")));
    assert!(f.by.contains(ALICE), "{}", f.by);
    assert_eq!((f.until - f.at).num_hours(), 4);
    let replies = stack.slack.replies(crate::support::slack::CH, &parent.ts);
    assert_eq!(replies.len(), 1);
    let reply = text_of(&replies[0]);
    assert!(reply.contains("no automatic action on argocd/storefront until") && reply.contains("auto-sync is not stopped"), "{reply}");
    assert_eq!(mutations(&stack.argo), 0);
}
