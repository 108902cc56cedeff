//! One sweep: the safety net under argocd-notifications, which delivers at most once
//! (docs/argo-cd-behaviour.md §4.1). It lists the fleet field-masked and enqueues every app that
//! needs a look — stale, failed, stuck, or with an open incident — whether or not a notification
//! reported it; it holds the apps of a shared-cause outage, probes the cause's canaries and
//! releases a paced recovery wave. It enqueues an app at most once per re-check window, and an app
//! whose message ended in the DLQ is simply enqueued again in the next window, because it still
//! needs a look.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use medic_core::actions::ActionKind;
use medic_core::actuator::{Actuator, Once, Request};
use medic_core::alerts::{self, WhenUnsure};
use medic_core::event::AppRef;
use medic_core::event::{WorkItem, WorkKind};
use medic_core::gate::Gate;
use medic_core::keys::Marker;
use medic_core::ladder::WaveSlot;
use medic_core::ports::{ArgoApi, ArgoError, Clock, IncidentLedger, IncidentStore, MarkerStore, Seen, Telemetry, WorkQueue};
use medic_core::sweep::{SweepScope, plan};
use medic_core::switch::Switch;
use medic_core::{AppId, PolicyConfig, Trigger};
use serde::Serialize;

use crate::outage::Outages;
use crate::{ActuatorOf, OutagesOf, Ports};

/// Sweeper settings.
#[derive(Debug, Clone)]
pub struct SweeperConfig {
    /// What the sweep covers (shared with `medic sweep`).
    pub scope: SweepScope,
    /// One app is enqueued at most once per window of this length.
    pub recheck_interval: Duration,
    /// The stack's dry run and kill switch, for the gate (with the instant switch): in a dry run
    /// or with the switch not at `act` the canaries are not refreshed and a wave waits for the
    /// outage to clear in the list; with the switch `off` nothing is posted either.
    pub dry_run: bool,
    pub kill_switch: bool,
    /// The instance's refresh rate: the recovery wave's estimate in a cause's alert.
    pub refresh_per_minute: u32,
    /// The key a recovery wave's items are signed with, so the workers honour their slot and
    /// trigger (L12). Without it the wave's items reach the workers as plain looks.
    pub work_item_key: Option<medic_core::event::WorkItemKey>,
    /// How long before the Argo CD token expires the sweep warns (in Slack once a day, and the
    /// `ArgoTokenDaysLeft` metric its alarm watches is published every sweep anyway).
    pub token_expiry_warning: Duration,
    /// The policy's trust levels: a canary's refresh is held where the level is not `act`.
    pub trust: medic_core::trust::TrustConfig,
    /// The policy's settle time: in the weekly report, an app healthy again within it of a
    /// decision healed by itself.
    pub settle: Duration,
}

impl Default for SweeperConfig {
    fn default() -> Self {
        Self {
            scope: SweepScope::default(),
            recheck_interval: Duration::from_secs(900),
            dry_run: false,
            kill_switch: false,
            refresh_per_minute: medic_core::budget::DEFAULT_REFRESH_PER_MINUTE,
            work_item_key: None,
            token_expiry_warning: Duration::from_secs(7 * 86_400),
            trust: medic_core::trust::TrustConfig::default(),
            settle: Duration::from_secs(PolicyConfig::default().settle_secs.max(0) as u64),
        }
    }
}

/// The sweeper's collaborators, built once per container (by a composition root).
pub struct Sweep<P: Ports> {
    pub config: SweeperConfig,
    pub argo: P::Argo,
    pub store: P::Incidents,
    pub dedupe: P::Markers,
    pub queue: P::Queue,
    pub escalator: P::Escalator,
    /// The budgets the workers share: the canaries' refreshes take their tokens too.
    pub budget: P::Budget,
    pub clock: P::Clock,
    pub metrics: P::Telemetry,
    /// The instant switch, read by the gate before every canary refresh and every post.
    pub switch: P::Switch,
}

/// Marker writes in flight at once (one per app enqueued, one per app missed by notifications),
/// a chunk at a time.
const MARKER_WRITES: usize = 32;

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SweepRun {
    pub listed: usize,
    /// Apps the plan looks at ([`medic_core::sweep::SweepPlan::looks`]).
    pub candidates: usize,
    pub enqueued: usize,
    /// Candidates already enqueued in this window.
    pub skipped: usize,
    /// Candidates that are open incidents of apps the list no longer shows (enqueued to be closed).
    pub unlisted: usize,
    /// Apps in trouble, with no open incident, that no notification reported in the last hour or
    /// two: what the sweep exists to catch. Each app counts at most once a day.
    pub missed_notifications: usize,
    /// Shared causes found ([`medic_core::fleet`]), covered apps held back, canaries refreshed and
    /// healed, and covered apps released as a recovery wave.
    pub outages: usize,
    pub held: usize,
    pub probed: usize,
    pub healed: usize,
    pub released: usize,
    /// Causes past their time bound, escalated ([`medic_core::fleet::FleetCause::overdue`]).
    pub escalated: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum SweeperError {
    #[error("listing applications: {0}")]
    Argo(#[from] ArgoError),
    #[error(transparent)]
    Store(#[from] medic_core::ports::StoreError),
    #[error(transparent)]
    Queue(#[from] medic_core::ports::QueueError),
    #[error("reading the apps for the weekly report: {0}")]
    ReportRead(ArgoError),
    #[error("posting the weekly report: {0}")]
    ReportPost(medic_core::step::StepError),
}

/// The start of the window `now` falls in, as the dedupe key's window label.
pub fn window(now: DateTime<Utc>, interval: Duration) -> String {
    let secs = interval.as_secs().max(1) as i64;
    let start = now.timestamp().div_euclid(secs) * secs;
    DateTime::from_timestamp(start, 0).unwrap_or(now).to_rfc3339()
}

impl<P: Ports> Sweep<P> {
    /// The one actuator over this sweeper's collaborators.
    fn actuator(&self) -> ActuatorOf<'_, P> {
        Actuator {
            argo: &self.argo,
            store: &self.store,
            dedupe: &self.dedupe,
            escalator: &self.escalator,
            budget: &self.budget,
            clock: &self.clock,
            gate: Gate { dry_run: self.config.dry_run, kill_switch: self.config.kill_switch, switch: &self.switch },
            // The sweeper claims nothing.
            claim_timeout: Duration::ZERO,
        }
    }

    /// The outage state machine over this sweeper's actuator.
    fn outages(&self) -> OutagesOf<'_, P> {
        Outages {
            act: self.actuator(),
            rules: &self.config.scope.fleet,
            trust: &self.config.trust,
            recheck_interval: self.config.recheck_interval,
            refresh_per_minute: self.config.refresh_per_minute,
        }
    }

    /// [`MarkerStore::first_sighting`] of every key, [`MARKER_WRITES`] at a time, in order.
    async fn first_sightings(&self, keys: &[Marker], ttl: Duration) -> Vec<Result<Seen, medic_core::ports::StoreError>> {
        let mut seen = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(MARKER_WRITES) {
            seen.extend(futures::future::join_all(chunk.iter().map(|k| self.dedupe.first_sighting(k, ttl))).await);
        }
        seen
    }

    /// The weekly shadow report ([`medic_core::report`]) over the decisions recorded in the seven
    /// days before now, settled by the apps as Argo CD shows them now, posted through the
    /// actuator (the gate tells it in a dry run too, and nothing when the switch is off; the
    /// escalator tells it once per week). The sweeper runs it on its report schedule. Due until
    /// posted ([`medic_core::keys::weekly_report_due_marker`]): a run that fails leaves it to the
    /// sweeps that follow ([`Sweep::weekly_report_if_due`]).
    pub async fn weekly_report(&self) -> Result<medic_core::report::Report, SweeperError>
    where
        P::Incidents: IncidentLedger,
    {
        let now = self.clock.now();
        let due = medic_core::keys::weekly_report_due_marker(now);
        if let Err(e) = self.dedupe.mark(&due, Duration::from_secs(7 * 86_400)).await {
            tracing::warn!(error = %e, "could not mark the weekly report due; if this run fails, no sweep posts it");
        }
        let since = now - chrono::TimeDelta::days(7);
        let records = self.store.decisions(since).await?;
        let (apps, unread) = crate::report::apps_now(&self.argo, &records).await.map_err(SweeperError::ReportRead)?;
        for (app, e) in &unread {
            tracing::warn!(%app, error = %e, "the weekly report could not read the app now; its records alone say what happened");
        }
        let settle = chrono::TimeDelta::from_std(self.config.settle).unwrap_or(chrono::TimeDelta::zero());
        let report = medic_core::report::report_with_now(&records, since, settle, &apps);
        match self.actuator().perform(Request::Report { report: &report, now }).await.map_err(SweeperError::ReportPost)? {
            medic_core::actuator::Performed::Held(answer) => {
                tracing::info!(verdict = %answer.verdict, mode = answer.mode.as_str(), "the weekly report was not posted: {}", answer.why)
            }
            // A metric more would cost more a month than the report; its log line says it.
            _ => tracing::info!(decisions = report.decisions, rows = report.rows.len(), "weekly shadow report made"),
        }
        // Posted, or held by the gate as every post is while the switch is off: done this week.
        self.dedupe.forget(&due).await.ok();
        Ok(report)
    }

    /// The weekly report, when this week's is due and not posted: its scheduled run failed. One
    /// marker read a sweep; `None` when nothing is due.
    pub async fn weekly_report_if_due(&self) -> Option<Result<medic_core::report::Report, SweeperError>>
    where
        P::Incidents: IncidentLedger,
    {
        let due = medic_core::keys::weekly_report_due_marker(self.clock.now());
        match self.dedupe.marked(std::slice::from_ref(&due)).await {
            Ok(marked) if marked.contains(&due) => Some(self.weekly_report().await),
            _ => None,
        }
    }

    pub async fn run(&self) -> Result<SweepRun, SweeperError> {
        let now = self.clock.now();
        let window = window(now, self.config.recheck_interval);
        let listed = match self.argo.list_apps(&self.config.scope.list_query()).await {
            Ok(items) => items,
            Err(e @ ArgoError::Unauthenticated(_)) => {
                self.metrics.count("ArgoUnauthenticated", None, 1.0);
                let key = medic_core::keys::hourly_alert_marker("unauthenticated", now);
                let text = alerts::unauthenticated(&e);
                tracing::error!(service_alert = true, "{text}");
                let once = Once { key: &key, ttl: Duration::from_secs(3600), unsure: WhenUnsure::Skip };
                let _ = self.actuator().perform(Request::Alert { kind: ActionKind::ServiceAlert, text: &text, once: Some(once) }).await;
                return Err(e.into());
            }
            Err(e) => return Err(e.into()),
        };
        self.watch_token(now).await;
        self.remind_freezes(now).await;
        let open: BTreeSet<AppId> = self.store.open_incidents().await?.into_iter().collect();
        let plan = plan(&listed, &open, &self.config.scope);
        let trigger = Trigger::sweep();
        let mut run = SweepRun {
            listed: plan.listed,
            candidates: plan.looks().count(),
            unlisted: plan.unlisted.len(),
            outages: plan.causes.len(),
            held: plan.held,
            ..SweepRun::default()
        };
        // The canaries are probed here, not enqueued.
        let mut told: Vec<String> = Vec::new();
        let mut looks: Vec<(AppRef, Trigger, Option<WaveSlot>)> =
            plan.looks().filter(|a| plan.canary_of(&a.id()).is_none()).map(|a| (a.clone(), trigger.clone(), None)).collect();
        // Released markers to write once the wave items are on the queue, and the pending ones
        // to forget then.
        let mut releases: Vec<(Marker, Marker)> = Vec::new();
        let mut waves: Vec<crate::outage::Release> = Vec::new();
        let outages = self.outages();
        for cause in &plan.causes {
            self.metrics.count("Outages", None, 1.0);
            let probe = outages.probe(&listed, cause).await;
            self.metrics.count("CanariesHealed", None, probe.healed as f64);
            (run.probed, run.healed) = (run.probed + probe.probed, run.healed + probe.healed);
            let Some(turn) = outages.turn(&listed, cause, &probe, now).await else { continue };
            if turn.view.overdue {
                self.metrics.count("OutagesEscalated", None, 1.0);
                run.escalated += 1;
            }
            told.push(turn.view.key());
            waves.extend(turn.release);
        }
        // A wave an earlier sweep decided and did not dispatch, its cause under its threshold now:
        // sent now, instead of the plain looks its apps would have had (the scope's `recovering`
        // marker would hold those).
        let lost = outages.lost_releases(&listed, &plan.causes).await;
        let in_lost: BTreeSet<AppId> = lost.iter().flat_map(|r| r.apps.iter().map(AppRef::id)).collect();
        looks.retain(|(a, _, _)| !in_lost.contains(&a.id()));
        for release in waves.into_iter().chain(lost) {
            // The workers step the wave, each item signed with its slot.
            run.released += release.apps.len();
            releases.push((release.released_marker(), release.pending_marker()));
            let len = u32::try_from(release.apps.len()).unwrap_or(u32::MAX);
            looks.extend(release.apps.into_iter().enumerate().map(|(i, a)| {
                let index = u32::try_from(i).unwrap_or(u32::MAX);
                let slot = WaveSlot { scope: release.scope.clone(), since: release.since.clone(), wave: window.clone(), index, len };
                (a, Trigger::recovery(), Some(slot))
            }));
        }
        // A cause told before and not seen now is over: its parent says so, once.
        let ended = outages.conclude(&listed, &plan.causes, &told).await;
        if ended > 0 {
            self.metrics.count("OutagesEnded", None, ended as f64);
            tracing::info!(ended, "fleet outages over");
        }
        // The sweeper's own marker per item (the worker dedupes on the item's key itself), written
        // MARKER_WRITES at a time: one after another, 20,000 apps in trouble took longer than the
        // function's timeout (measured under moto; about 100 s of round trips on DynamoDB).
        let items: Vec<WorkItem> = looks
            .into_iter()
            .map(|(app, trigger, wave)| {
                let mut item = WorkItem { wave, ..WorkItem::for_app(WorkKind::Sweep, app, trigger, &window, now) };
                if let (true, Some(key)) = (item.fleet_privileged(), &self.config.work_item_key) {
                    key.sign(&mut item);
                }
                item
            })
            .collect();
        let keys: Vec<Marker> = items.iter().map(|item| medic_core::keys::sweep_enqueued_marker(&item.dedupe_key)).collect();
        let sightings = items.into_iter().zip(self.first_sightings(&keys, self.config.recheck_interval).await);
        let mut batch = Vec::new();
        let mut failure = None;
        for (item, seen) in sightings {
            match seen {
                Ok(Seen::New) => batch.push(item),
                Ok(Seen::Duplicate) => run.skipped += 1,
                Err(e) => failure = Some(e),
            }
        }
        if let Some(e) = failure {
            // Nothing is enqueued: the markers this run wrote are forgotten so the next run sends
            // their items, instead of skipping them for the rest of the window.
            for item in &batch {
                self.dedupe.forget(&medic_core::keys::sweep_enqueued_marker(&item.dedupe_key)).await.ok();
            }
            return Err(e.into());
        }
        run.missed_notifications = self.missed_notifications(&plan, &open, now).await;
        if let Err(e) = self.queue.enqueue_batch(&batch).await {
            // Some items may be on the queue; forgetting all markers lets the next run re-send
            // the rest, and the worker drops the duplicates.
            for item in &batch {
                self.dedupe.forget(&medic_core::keys::sweep_enqueued_marker(&item.dedupe_key)).await.ok();
            }
            return Err(e.into());
        }
        run.enqueued = batch.len();
        for (marker, pending) in &releases {
            if let Err(e) = self.dedupe.mark(marker, self.config.recheck_interval * 2).await {
                tracing::warn!(marker = %marker, error = %e, "could not mark the wave released; the next sweep may send it again (the workers' claims make that harmless)");
            }
            // The wave is on the queue: no later sweep takes its release for lost (a sweep that
            // dies in between finds it marked released, and forgets this then).
            self.dedupe.forget(pending).await.ok();
        }
        self.metrics.count("SweepEnqueued", None, run.enqueued as f64);
        tracing::info!(
            listed = run.listed,
            candidates = run.candidates,
            enqueued = run.enqueued,
            skipped = run.skipped,
            outages = run.outages,
            held = run.held,
            released = run.released,
            missed_notifications = run.missed_notifications,
            "sweep done"
        );
        Ok(run)
    }

    /// Publishes how many days the Argo CD token has left (`ArgoTokenDaysLeft`, the alarm's
    /// metric) and, within [`SweeperConfig::token_expiry_warning`], tells a person once a day:
    /// an automation token that expires during an outage leaves Argo Medic blind when it is
    /// needed most. A token without `exp` publishes nothing. Best effort: a sweep never fails for it.
    async fn watch_token(&self, now: chrono::DateTime<chrono::Utc>) {
        let expires = match self.argo.credential_expiry().await {
            Ok(Some(at)) => at,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read when the Argo CD token expires");
                return;
            }
        };
        let left = expires - now;
        self.metrics.gauge("ArgoTokenDaysLeft", None, left.num_seconds() as f64 / 86_400.0);
        if left.to_std().unwrap_or_default() >= self.config.token_expiry_warning {
            return;
        }
        let (key, text) = (medic_core::keys::daily_alert_marker("token-expiring", now), alerts::token_expiring(expires, now));
        tracing::warn!(service_alert = true, expires = %expires, "{text}");
        let once = Once { key: &key, ttl: Duration::from_secs(24 * 3600), unsure: WhenUnsure::Skip };
        if let Err(e) = self.actuator().perform(Request::Alert { kind: ActionKind::ServiceAlert, text: &text, once: Some(once) }).await {
            tracing::warn!(error = %e, "could not tell that the Argo CD token expires soon; the next sweep tells it");
        }
    }

    /// Tells the channel, once, of each freeze that ends within
    /// [`medic_core::freeze::REMINDER_LEAD`]: Argo Medic resumes on its scope then, by itself.
    async fn remind_freezes(&self, now: chrono::DateTime<chrono::Utc>) {
        let freezes = self.switch.freezes().await;
        // The dashboard shows how much is frozen; a freeze forgotten is autonomy silently lost.
        let frozen = freezes.iter().filter(|f| f.active(now)).count();
        self.metrics.gauge("FrozenScopes", None, frozen as f64);
        for freeze in medic_core::freeze::ending_soon(&freezes, now, medic_core::freeze::REMINDER_LEAD) {
            let key = medic_core::keys::freeze_reminder_marker(&freeze.id);
            let text = medic_core::freeze::reminder(freeze);
            let once = Once { key: &key, ttl: Duration::from_secs(2 * 86_400), unsure: WhenUnsure::Skip };
            if let Err(e) =
                self.actuator().perform(Request::Alert { kind: ActionKind::FreezeReminder, text: &text, once: Some(once) }).await
            {
                tracing::warn!(error = %e, freeze = %freeze.id, "could not remind of a freeze ending; the next sweep tries again");
            }
        }
    }

    /// Counts the apps in trouble that notifications did not report: the plan's listed candidates
    /// (so not calm, and not held back by an outage) without an open incident (an incident means
    /// Argo Medic already knows), and without a notification marker from this hour or the last.
    /// Each is counted once a day. Reading fails soft: the count is for people, the sweep's work
    /// does not depend on it.
    async fn missed_notifications(&self, plan: &medic_core::sweep::SweepPlan, open: &BTreeSet<AppId>, now: DateTime<Utc>) -> usize {
        use medic_core::keys::{missed_marker, notified_marker};
        let trouble: Vec<AppId> = plan.candidates.iter().map(AppRef::id).filter(|a| !open.contains(a)).collect();
        if trouble.is_empty() {
            return 0;
        }
        let hour_before = now - chrono::TimeDelta::hours(1);
        let markers: Vec<[Marker; 2]> = trouble.iter().map(|a| [notified_marker(a, now), notified_marker(a, hour_before)]).collect();
        let notified = match self.dedupe.marked(&markers.concat()).await {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the notification markers; MissedNotifications not counted");
                return 0;
            }
        };
        let unreported: Vec<&AppId> =
            trouble.iter().zip(&markers).filter(|(_, m)| !m.iter().any(|k| notified.contains(k))).map(|(app, _)| app).collect();
        let keys: Vec<Marker> = unreported.iter().map(|app| missed_marker(app, now)).collect();
        let seen = self.first_sightings(&keys, Duration::from_secs(24 * 3600)).await;
        let first: Vec<&AppId> = unreported.into_iter().zip(seen).filter(|(_, s)| matches!(s, Ok(Seen::New))).map(|(app, _)| app).collect();
        for app in &first {
            tracing::info!(app = %app, "in trouble and not reported by a notification");
        }
        let missed = first.len();
        self.metrics.count("MissedNotifications", None, missed as f64);
        missed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_start_on_interval_boundaries() {
        let t: DateTime<Utc> = "2026-11-01T12:07:30Z".parse().unwrap();
        assert_eq!(window(t, Duration::from_secs(900)), "2026-11-01T12:00:00+00:00");
        let later: DateTime<Utc> = "2026-11-01T12:14:59Z".parse().unwrap();
        assert_eq!(window(t, Duration::from_secs(900)), window(later, Duration::from_secs(900)));
        let next: DateTime<Utc> = "2026-11-01T12:15:00Z".parse().unwrap();
        assert_ne!(window(t, Duration::from_secs(900)), window(next, Duration::from_secs(900)));
    }
}
