//! The morning after an outage (issue 22): the sweeper's outage identity and clock, the wave
//! released once, the outage's buttons and markers, and the holds it lifts. Each test is the
//! regression test of a finding of the reliability review of 0a3f9d5, through the sweeper, the
//! worker and slack-actions on moto, the Argo CD simulator and the Slack simulator. The outages
//! look as Argo CD shows them (`crate::support::outage_fleet`): sync `Unknown` and a
//! `ComparisonError` since the outage began, health left `Healthy` with a transition days old.

use std::time::Duration;

use chrono::Utc;
use medic_core::ports::DedupeStore;
use medic_sim::ArgoSim;

use crate::support::slack::{CH, SIGNING_SECRET, Stack, button, click, settings, slack_escalator, stack, text_of};
use crate::support::{GIT_UNREACHABLE, outage_fleet};

const HOST: &str = "git.down.example.com";
const SCOPE: &str = "repo:git.down.example.com";

/// Takes synthetic app `index` (1-based) down now, as a Git outage of [`HOST`] does.
fn take_down(sim: &ArgoSim, index: usize) {
    let name = format!("app-{index:05}");
    let mut app = sim.app("argocd", &name).expect("a synthetic app");
    app["spec"]["source"]["repoURL"] = format!("https://{HOST}/platform/deployments.git").into();
    app["status"]["sync"]["status"] = "Unknown".into();
    app["status"]["conditions"] =
        serde_json::json!([{"type": "ComparisonError", "lastTransitionTime": Utc::now().to_rfc3339(), "message": GIT_UNREACHABLE}]);
    sim.insert_app(app);
}

fn heal(sim: &ArgoSim, indices: impl IntoIterator<Item = usize>) {
    for i in indices {
        sim.set_outcomes(&format!("app-{i:05}"), medic_sim::Outcomes { refresh: medic_sim::RefreshOutcome::Heal, ..Default::default() });
    }
}

fn outage_parents(stack: &Stack) -> Vec<medic_sim::SimMessage> {
    stack.slack.parents(CH).into_iter().filter(|m| text_of(m).contains("Fleet outage")).collect()
}

fn overdue_alerts(stack: &Stack) -> usize {
    stack.slack.messages(CH).iter().filter(|m| format!("{}{}", m.text, m.blocks).contains("fleet outage past its time bound")).count()
}

/// H3: a cause's start was `max(health.lastTransitionTime, operationState.finishedAt)` of its
/// apps, which a comparison error does not move: an outage that began a minute ago was escalated
/// at once as a day old, and each app joining with an older transition moved the start, so a
/// new parent was posted and the old one told "Over" while nothing was over. Now the start is
/// the sweeper's first sighting (refined by a canary's condition), and apps joining move nothing.
/// Fails on 4b8d4db: the first sweep escalates, and later sweeps post new parents.
#[tokio::test]
async fn an_outage_apps_join_over_three_sweeps_has_one_parent_no_false_over_and_no_early_escalation() {
    let stack = stack().await;
    // 12 apps of 40 down since a minute ago; their health is Healthy since a day and more before.
    let sim = outage_fleet(40, 12, HOST, 1, None, |_, _| None).await;
    let sweeper = stack.sweeper(&sim, Duration::from_secs(900));
    let first = sweeper.run().await.unwrap();
    assert_eq!((first.outages, first.escalated), (1, 0), "a minute-old outage is not past its hour: {first:?}");
    // Apps join, each with a health transition older than any before (the synthetic fleet's
    // later apps finished their last sync earlier).
    for i in 13..=20 {
        take_down(&sim, i);
    }
    let second = sweeper.run().await.unwrap();
    for i in 21..=30 {
        take_down(&sim, i);
    }
    let third = sweeper.run().await.unwrap();
    assert_eq!((second.outages, second.escalated, third.outages, third.escalated), (1, 0, 1, 0), "{second:?} {third:?}");
    let parents = outage_parents(&stack);
    assert_eq!(parents.len(), 1, "one parent for one outage: {:?}", parents.iter().map(text_of).collect::<Vec<_>>());
    let shown = text_of(&stack.slack.message(CH, &parents[0].ts).unwrap());
    assert!(shown.contains("30 of 30 listed") && !shown.contains("Over"), "{shown}");
    assert_eq!(sweeper.metrics.total("OutagesEnded"), 0.0, "nothing told over while it lasts");
    assert_eq!(overdue_alerts(&stack), 0);
}

/// H3, the other half: the clock counts from when the outage began, not only from when the
/// sweeper first saw it: a canary's `ComparisonError` two hours old makes the first sweep escalate
/// (once), and a later sweep neither escalates again nor moves the parent.
#[tokio::test]
async fn an_outage_a_canary_shows_began_two_hours_ago_is_escalated_once_under_one_parent() {
    let stack = stack().await;
    let sim = outage_fleet(30, 20, HOST, 120, None, |_, _| None).await;
    let sweeper = stack.sweeper(&sim, Duration::from_secs(900));
    assert_eq!(sweeper.run().await.unwrap().escalated, 1);
    assert_eq!(sweeper.run().await.unwrap().escalated, 1, "still overdue");
    assert_eq!(overdue_alerts(&stack), 1, "told once per outage");
    assert_eq!(outage_parents(&stack).len(), 1);
}

/// M3: a released wave was enqueued again by every later sweep that still saw the cause (each
/// sweep a new window, so nothing deduplicated the second release). Released once now. Windows of
/// 2 s stand for the 300 s ones. Fails on 4b8d4db: the second sweep enqueues the wave again.
#[tokio::test]
async fn a_wave_is_released_once_not_again_by_every_sweep_that_still_sees_its_cause() {
    let stack = stack().await;
    let sim = outage_fleet(30, 20, HOST, 10, None, |_, _| None).await;
    heal(&sim, 1..=20);
    let sweeper = stack.sweeper(&sim, Duration::from_secs(2));
    let released = sweeper.run().await.unwrap();
    assert_eq!((released.healed, released.released, released.enqueued), (3, 17, 17), "{released:?}");
    // The workers have not stepped the wave yet: the next sweeps still see the cause.
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(2100)).await;
        let again = sweeper.run().await.unwrap();
        assert_eq!((again.outages, again.released, again.enqueued), (1, 0, 0), "{again:?}");
    }
    let shown = text_of(&stack.slack.message(CH, &outage_parents(&stack)[0].ts).unwrap());
    assert!(shown.contains("Released"), "{shown}");
}

/// M4: a fleet button was authorised against the projects of the sweep that first posted its
/// parent, so a person allowed on those could pause or release apps of projects that joined
/// later. It is checked against the outage's latest projects now. Fails on 4b8d4db: 200.
#[tokio::test]
async fn a_fleet_button_needs_the_projects_that_joined_the_outage_after_its_parent_was_posted() {
    let stack = stack().await;
    // All of it in `payments` (Alice's project) at first.
    let sim = outage_fleet(40, 12, HOST, 1, None, |i, app| {
        app["spec"]["project"] = if i < 12 { "payments" } else { "platform" }.into();
        None
    })
    .await;
    let sweeper = stack.sweeper(&sim, Duration::from_secs(900));
    sweeper.run().await.unwrap();
    let pause = button(&outage_parents(&stack)[0], "Pause wave");
    // Apps of `platform` join the outage.
    for i in 13..=24 {
        take_down(&sim, i);
    }
    sweeper.run().await.unwrap();
    let actions = stack.actions();
    let refused = actions.handle(click(&pause, crate::support::slack::ALICE, Utc::now().timestamp(), SIGNING_SECRET)).await;
    assert_eq!(refused.status(), 403, "Alice may not act on `platform`'s apps");
    assert!(String::from_utf8_lossy(refused.body().as_ref()).contains("project `platform`"));
}

/// M4 and L11: a pause belongs to its outage. Once the cause is gone, its hold is lifted at the
/// next sweep (L11: it was kept two more windows, holding notifications of apps failing for
/// their own reasons), and a later outage of the same scope is a new outage: new parent, not
/// paused (M4: the scope's pause marker outlived its outage by up to a day). Windows of 1 s.
/// Fails on 4b8d4db: the hold is still there, and the new outage shows "Paused".
#[tokio::test]
async fn a_pause_and_a_hold_end_with_their_outage_and_the_next_outage_of_the_scope_starts_afresh() {
    let stack = stack().await;
    let sim = outage_fleet(30, 20, HOST, 1, None, |_, _| None).await;
    let sweeper = stack.sweeper(&sim, Duration::from_secs(1));
    sweeper.run().await.unwrap();
    let pause = button(&outage_parents(&stack)[0], "Pause wave");
    let carol = medic_slack_actions::SlackActions {
        allow: medic_slack_actions::AllowList::from_json(r#"{"*": ["U0CAROL001"]}"#).unwrap(),
        ..stack.actions()
    };
    assert_eq!(carol.handle(click(&pause, "U0CAROL001", Utc::now().timestamp(), SIGNING_SECRET)).await.status(), 200);
    let hold = medic_core::keys::fleet_hold_marker(SCOPE);
    assert!(stack.store().marked(std::slice::from_ref(&hold)).await.unwrap().contains(&hold));
    // Git is back and every app of the host is compared again (a person refreshed them).
    let argo = crate::support::client(&sim);
    heal(&sim, 1..=20);
    for i in 1..=20 {
        let app = medic_core::event::AppRef { name: format!("app-{i:05}"), namespace: "argocd".into(), project: None };
        medic_core::ports::ArgoApi::refresh(&argo, medic_core::permit::Permit::for_tests(), &app, medic_core::ladder::RefreshKind::Normal)
            .await
            .unwrap();
    }
    let over = sweeper.run().await.unwrap();
    assert_eq!(over.outages, 0, "{over:?}");
    assert!(!stack.store().marked(std::slice::from_ref(&hold)).await.unwrap().contains(&hold), "the hold ends with its cause");
    // Past its sighting's two windows (the state table keeps expiries in whole seconds, rounded
    // up: 3.5 s), the host goes down again: another outage.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    for i in 1..=20 {
        sim.set_outcomes(&format!("app-{i:05}"), medic_sim::Outcomes::default());
        take_down(&sim, i);
    }
    let again = sweeper.run().await.unwrap();
    assert_eq!((again.outages, again.released), (1, 0), "{again:?}");
    let parents = outage_parents(&stack);
    assert_eq!(parents.len(), 2, "a parent of its own");
    let shown = text_of(&stack.slack.message(CH, &parents[1].ts).unwrap());
    assert!(shown.contains("Held back") && !shown.contains("Paused"), "the last outage's pause is not this one's: {shown}");
}

/// An upgrade mid-outage: the previous release keyed an outage by its start (no sighting) and
/// its markers by scope only. The new sweeper takes its parent over (rewritten in place, neither
/// told over nor posted twice), still honours the pause a person pressed before the upgrade
/// though a canary heals, and the new worker holds the previous release's wave items (no
/// sighting in their slot) by that pause too.
#[tokio::test]
async fn an_outage_the_previous_release_was_handling_is_taken_over_with_its_parent_and_its_pause() {
    use medic_core::fleet::{OutageView, WaveState};
    use medic_core::ladder::WaveSlot;
    let stack = stack().await;
    let sim = outage_fleet(30, 20, HOST, 10, None, |_, _| None).await;
    // What the previous release left: its parent, a person's pause, the hold.
    let began = (Utc::now() - chrono::TimeDelta::minutes(10)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let previous = OutageView {
        scope: SCOPE.into(),
        describe: format!("source host {HOST}"),
        began: Some(began),
        since: None,
        covered: 20,
        listed: 20,
        canaries: 3,
        probed: 3,
        healed: 0,
        state: WaveState::Held,
        released: 0,
        eta_secs: 4,
        by_person: false,
        overdue: false,
        projects: vec!["team-a".into()],
    };
    let escalator = slack_escalator(&stack.slack, settings(&stack.slack), stack.escalations());
    medic_core::ports::Escalator::outage(&escalator, medic_core::permit::Permit::for_tests(), &previous).await.unwrap();
    let [pause, _, _] = medic_core::keys::legacy_fleet_markers(SCOPE);
    assert_eq!(pause, "fleet-pause-repo:git.down.example.com", "the previous release's spelling");
    stack.store().first_sighting(&pause, Duration::from_secs(24 * 3600)).await.unwrap();
    stack.store().mark(&medic_core::keys::fleet_hold_marker(SCOPE), Duration::from_secs(1800)).await.unwrap();
    let posted = outage_parents(&stack);
    assert_eq!(posted.len(), 1);

    heal(&sim, 1..=20);
    let sweeper = stack.sweeper(&sim, Duration::from_secs(900));
    let run = sweeper.run().await.unwrap();
    assert_eq!((run.healed, run.released, run.enqueued), (3, 0, 0), "paused before the upgrade, still paused: {run:?}");
    assert_eq!(outage_parents(&stack).len(), 1, "its parent taken over, not a second one");
    let shown = text_of(&stack.slack.message(CH, &posted[0].ts).unwrap());
    assert!(shown.contains("Paused") && !shown.contains("Over"), "{shown}");
    assert_eq!(sweeper.metrics.total("OutagesEnded"), 0.0, "nothing told over");
    sweeper.run().await.unwrap();
    assert_eq!((outage_parents(&stack).len(), sweeper.metrics.total("OutagesEnded")), (1, 0.0), "and on the next sweep");

    // A wave item the previous release enqueued: unsigned, so its slot is not honoured (L12) and
    // it is a plain look. Its app healed meanwhile: the look closes it, and changes nothing.
    let worker = stack.worker();
    let app = medic_core::event::AppRef { name: "app-00010".into(), namespace: "argocd".into(), project: None };
    let slot = WaveSlot { scope: SCOPE.into(), since: String::new(), wave: "w0".into(), index: 9, len: 17 };
    let item = medic_core::event::WorkItem {
        wave: Some(slot),
        ..medic_core::event::WorkItem::for_app(medic_core::event::WorkKind::Sweep, app, medic_core::Trigger::recovery(), "w0", Utc::now())
    };
    let mut body = serde_json::to_value(&item).unwrap();
    body["wave"].as_object_mut().unwrap().remove("since");
    let mut record = aws_lambda_events::event::sqs::SqsMessage::default();
    (record.message_id, record.body) = (Some("old-wave-1".into()), Some(body.to_string()));
    let before = sim.counts().refresh;
    let handled = worker.handle_message(&record).await.unwrap();
    assert!(
        matches!(handled, medic_worker::Handled::Stepped(medic_core::step::StepResult::Resolved | medic_core::step::StepResult::NoAction)),
        "{handled:?}"
    );
    assert_eq!(sim.counts().refresh, before);
    assert_eq!(worker.metrics.total("RefusedFleetSlots"), 1.0);
}

/// Drains the work queue: every item on it (deleted), by app name.
async fn drain(stack: &Stack) -> Vec<(String, aws_lambda_events::event::sqs::SqsMessage)> {
    let mut items = Vec::new();
    loop {
        let got = stack.receive().await;
        if got.is_empty() {
            break;
        }
        for m in &got {
            stack.delete(m).await;
            let body: serde_json::Value = serde_json::from_str(m.body.as_deref().unwrap()).unwrap();
            items.push((body["app"]["name"].as_str().unwrap().to_owned(), crate::support::sqs_record(m)));
        }
    }
    items.sort_by(|a, b| a.0.cmp(&b.0));
    items
}

/// The wave heals most of its apps and the cause drops under `min_apps`: the sweep no longer
/// sees an outage, and its plain looks reach the apps the paced wave has not stepped yet. Their
/// last reconcile dates from the outage ("Argo CD reconciled it and the trouble remains"), so a
/// look escalated each before its wave step, which then found it escalated and left it broken
/// (the full chaos run: 3 of 80 outage apps never calm). A released wave now holds its scope's
/// other items while it lasts (`keys::fleet_recovering_marker`), and the wave step heals the app.
/// Fails on 74b5964: the look escalates.
#[tokio::test]
async fn a_look_after_the_cause_dropped_under_its_threshold_leaves_the_app_to_its_wave_step() {
    let stack = stack().await;
    // 20 of 30 down since 10 minutes ago; the controller reconciled them 5 minutes ago, mid-outage.
    let reconciled = (Utc::now() - chrono::TimeDelta::minutes(5)).to_rfc3339();
    let sim = outage_fleet(30, 20, HOST, 10, None, |i, app| {
        if i < 20 {
            app["status"]["reconciledAt"] = reconciled.clone().into();
        }
        None
    })
    .await;
    heal(&sim, 1..=20);
    let sweeper = stack.sweeper(&sim, Duration::from_secs(2));
    let released = sweeper.run().await.unwrap();
    assert_eq!((released.healed, released.released), (3, 17), "{released:?}");
    let wave = drain(&stack).await;
    assert_eq!(wave.len(), 17);
    let worker = stack.aws.worker_with(
        &sim,
        stack.store(),
        slack_escalator(&stack.slack, settings(&stack.slack), stack.escalations()),
        medic_core::switch::FixedSwitch::default(),
    );
    // Eight wave steps: 3 canaries and 8 apps healed, 9 left down, under the 10 a cause needs.
    for (_, record) in &wave[..8] {
        worker.handle_message(record).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let after = sweeper.run().await.unwrap();
    assert_eq!(after.outages, 0, "{after:?}");
    let looks = drain(&stack).await;
    let (name, look) = looks.iter().find(|(n, _)| n == &wave[8].0).expect("a plain look at an app the wave has not stepped");
    let handled = worker.handle_message(look).await.unwrap();
    assert!(matches!(handled, medic_worker::Handled::HeldByFleet(_)), "{name}: {handled:?}");
    assert!(stack.slack.parents(CH).iter().all(|m| !text_of(m).contains(name.as_str())), "{name} is not escalated");
    // Its wave step comes, and heals it.
    let handled = worker.handle_message(&wave[8].1).await.unwrap();
    assert_eq!(handled, medic_worker::Handled::Stepped(medic_core::step::StepResult::Refreshed), "{name}");
}
