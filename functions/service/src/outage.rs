//! The outage state machine: one turn per shared cause and sweep, the same for the sweeper
//! ([`crate::sweep`]) and `medic sweep`. A turn probes the cause's canaries, times the outage from
//! its first sighting, reads the people's buttons and the workers' relapse marker, holds the
//! cause's apps or releases their recovery wave, escalates an outage past its time bound once, and
//! tells its parent. Only the dispatch of a wave differs: the sweeper enqueues it for the workers,
//! `medic sweep` steps it inline; each marks it released once it is dispatched
//! ([`Release::released_marker`]).

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use medic_core::Application;
use medic_core::actions::ActionKind;
use medic_core::actuator::{Actuator, Once, Performed, Request};
use medic_core::alerts::{self, WhenUnsure};
use medic_core::event::AppRef;
use medic_core::fleet::{FleetCause, FleetRules, OutageView, WaveState};
use medic_core::keys::{Marker, fleet_control_marker, fleet_sighting_marker};
use medic_core::ladder::FleetControl;
use medic_core::ports::{ArgoApi, Budget, Clock, Escalator, IncidentStore, MarkerStore};
use medic_core::step::StepError;
use medic_core::switch::Switch;
use medic_core::trust::TrustConfig;

/// The outage state machine over one actuator, with the rules it turns by.
pub struct Outages<'a, A, S, D, E, B, C, W> {
    pub act: Actuator<'a, A, S, D, E, B, C, W>,
    pub rules: &'a FleetRules,
    /// The policy's trust levels: a canary's refresh is held where the level is not `act`.
    pub trust: &'a TrustConfig,
    /// The sweeps' interval: an outage lives (its sighting, hold and markers) for two of them, so
    /// one missed sweep does not end it.
    pub recheck_interval: Duration,
    /// The instance's refresh rate: the recovery wave's estimate.
    pub refresh_per_minute: u32,
}

/// What refreshing a cause's canaries found.
#[derive(Debug, Default)]
pub struct Probe {
    /// Canaries refreshed (a probe the gate held or the budget deferred is no probe: the next
    /// sweep tries again), and those Argo CD could compare again.
    pub probed: usize,
    pub healed: usize,
    /// Each probed canary as read, or why it could not be.
    pub reads: Vec<(AppRef, Result<Application, StepError>)>,
}

impl Probe {
    /// The canaries read.
    pub fn read(&self) -> Vec<Application> {
        self.reads.iter().filter_map(|(_, r)| r.as_ref().ok().cloned()).collect()
    }
}

/// One cause's turn: the parent as told, and the wave to dispatch if it is released now.
#[derive(Debug)]
pub struct Turn {
    pub view: OutageView,
    /// The cause, timed from its first sighting.
    pub cause: FleetCause,
    pub release: Option<Release>,
}

/// A recovery wave released this turn.
#[derive(Debug)]
pub struct Release {
    /// The outage's scope key and its first sighting: the wave's identity.
    pub scope: String,
    pub since: String,
    /// The covered apps, in priority order.
    pub apps: Vec<AppRef>,
}

impl Release {
    /// Marked, for two sweep intervals, once the wave is dispatched: an outage still seen is not
    /// released again by every later sweep (M3).
    pub fn released_marker(&self) -> Marker {
        medic_core::keys::fleet_released_marker(&self.scope, &self.since)
    }

    /// The marker that pauses the rest of this wave when most of a batch failed again: the
    /// workers write it from their tally, `medic sweep` from its inline batches. The cause is
    /// held again while it lasts.
    pub fn relapse_marker(&self) -> Marker {
        medic_core::keys::fleet_relapse_marker(&self.scope, &self.since)
    }

    /// Written when the release is decided, forgotten once the wave is on the queue
    /// ([`medic_core::keys::fleet_release_pending_marker`], [`Outages::lost_releases`]).
    pub fn pending_marker(&self) -> Marker {
        medic_core::keys::fleet_release_pending_marker(&self.scope)
    }
}

impl<A: ArgoApi, S: IncidentStore, D: MarkerStore, E: Escalator, B: Budget, C: Clock, W: Switch> Outages<'_, A, S, D, E, B, C, W> {
    /// Refreshes the canaries of `cause` through the actuator (within the refresh budget, unless
    /// the gate holds refreshes; hard, within its budget, after a normal refresh answered with a
    /// cached generation failure: [`medic_core::fleet::needs_hard_probe`]). A canary Argo CD can
    /// compare again has healed. A failed read counts as not healed: the next sweep probes again.
    pub async fn probe(&self, listed: &[Application], cause: &FleetCause) -> Probe {
        let (freezes, now) = (self.act.gate.switch.freezes().await, self.act.clock.now());
        let canaries: Vec<(AppRef, medic_core::trust::TrustLevel)> = listed
            .iter()
            .filter(|a| cause.canaries().contains(&a.id()))
            .map(|a| (AppRef::from(a), medic_core::freeze::canary_level(self.trust, &freezes, a, now)))
            .collect();
        let act = &self.act;
        let probes = futures::future::join_all(canaries.into_iter().map(|(app, trust)| async move {
            let probed = act.perform(Request::Canary { app: &app, trust }).await;
            (app, probed)
        }))
        .await;
        let mut probe = Probe::default();
        for (app, read) in probes {
            match read {
                Ok(Performed::Refreshed(read)) => {
                    probe.healed += usize::from(!medic_core::fleet::is_down(&read));
                    probe.reads.push((app, Ok(*read)));
                }
                Ok(_) => {}
                Err(e) => probe.reads.push((app, Err(e))),
            }
        }
        probe.probed = probe.reads.len();
        probe
    }

    /// One turn of `cause` after `probe`. `None` when the outage's sighting could not be kept:
    /// its apps stay held, and nothing is told or released this sweep.
    pub async fn turn(&self, listed: &[Application], cause: &FleetCause, probe: &Probe, now: DateTime<Utc>) -> Option<Turn> {
        let dedupe = self.act.dedupe;
        let lasts = self.recheck_interval * 2;
        let scope = cause.scope.key();
        let hold = medic_core::keys::fleet_hold_marker(&scope);
        // The outage's identity and clock: the first sighting of its cause, kept while sweeps
        // see it, never the list's health times, which a comparison error does not move (H3).
        let sighted = match dedupe.sighted(&fleet_sighting_marker(&scope), lasts).await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(cause = %cause.scope, error = %e, "could not keep the outage's sighting; its apps stay held, nothing is told or released this sweep");
                dedupe.mark(&hold, lasts).await.ok();
                return None;
            }
        };
        let cause = cause.clone().timed(sighted, &probe.read());
        let since = cause.since().unwrap_or_default();
        // A person's button (slack-actions) overrides the canaries: pause holds the wave even
        // after one healed; release lets it go without one (once). A wave whose batch mostly
        // failed again (the relapse marker) is not released again while the marker lasts: the
        // cause is probably back. All of them belong to this outage (M4); the previous release's
        // markers, of the scope, still count for the outage going on.
        let pause = fleet_control_marker(&scope, &since, FleetControl::Pause);
        let release = fleet_control_marker(&scope, &since, FleetControl::Release);
        let relapse = medic_core::keys::fleet_relapse_marker(&scope, &since);
        let released_marker = medic_core::keys::fleet_released_marker(&scope, &since);
        let recovering = medic_core::keys::fleet_recovering_marker(&scope);
        let [old_pause, old_release, old_relapse] = medic_core::keys::legacy_fleet_markers(&scope);
        let asked = [&pause, &release, &relapse, &released_marker, &recovering, &old_pause, &old_release, &old_relapse].map(|k| k.clone());
        let controls = dedupe.marked(&asked).await.unwrap_or_else(|e| {
            tracing::warn!(cause = %cause.scope, error = %e, "could not read the fleet buttons' markers; the canaries decide");
            Default::default()
        });
        let has = |k: &Marker| controls.contains(k);
        let (paused, released_by_person) = (has(&pause) || has(&old_pause), has(&release) || has(&old_release));
        let relapsed = (has(&relapse) || has(&old_relapse)) && !released_by_person;
        let release_wave = !paused && (released_by_person || (probe.healed > 0 && !relapsed));
        // Past its own time bound: the fleet incident is escalated, once per outage, for every
        // app it holds back (their own ladders would have escalated them by now).
        let overdue = !release_wave && cause.overdue(self.rules, now);
        if overdue {
            let (key, text) = (medic_core::keys::outage_overdue_marker(&scope, cause.sighted_at), alerts::outage_overdue(&cause, now));
            let once = Once { key: &key, ttl: Duration::from_secs(24 * 3600), unsure: WhenUnsure::Skip };
            if let Err(e) = self.act.perform(Request::Alert { kind: ActionKind::OutageOverdue, text: &text, once: Some(once) }).await {
                tracing::warn!(cause = %cause.scope, error = %e, "could not escalate the overdue outage; the next sweep tells it");
            }
        }
        let mut wave = None;
        if !release_wave {
            // The hold the workers read: every automatic item of a covered app is left to the
            // cause while it lasts. Renewed by every sweep that sees the cause.
            if let Err(e) = dedupe.mark(&hold, lasts).await {
                tracing::warn!(cause = %cause.scope, error = %e, "could not mark the fleet hold; workers will act on its apps");
            }
            // Held again: wave items met meanwhile were left to the cause, so the next release
            // sends the whole wave anew.
            for marker in [&released_marker, &recovering].into_iter().filter(|m| has(m)) {
                dedupe.forget(marker).await.ok();
            }
        } else {
            // The cause is over: its apps go in priority order, paced by the budgets. The hold
            // always (it is not read here); the rest only when set, so a wave already released
            // costs no deletes on every later sweep.
            dedupe.forget(&hold).await.ok();
            // While the wave is stepped the workers leave the scope's other items of down apps
            // to it, also after the cause drops under its threshold (the wave's time and two
            // windows from the last sweep that saw it released).
            let stepping = lasts + Duration::from_secs(2 * cause.wave_secs(self.refresh_per_minute));
            if let Err(e) = dedupe.mark(&recovering, stepping).await {
                tracing::warn!(cause = %cause.scope, error = %e, "could not mark the wave being stepped; looks may escalate apps before their wave step");
            }
            for marker in [&release, &relapse, &old_release, &old_relapse].into_iter().filter(|m| has(m)) {
                dedupe.forget(marker).await.ok();
            }
            if has(&released_marker) {
                // An earlier sweep released this wave and it is being stepped: released once,
                // not again by every sweep that still sees the cause (M3).
                dedupe.mark(&released_marker, lasts).await.ok();
            } else {
                let apps = medic_core::sweep::wave(listed, &cause);
                let release = Release { scope: scope.clone(), since: since.clone(), apps };
                // Until the wave is on the queue: a sweep that dies before leaves it for the next.
                if let Err(e) = dedupe.mark(&release.pending_marker(), lasts).await {
                    tracing::warn!(cause = %cause.scope, error = %e, "could not mark the wave's release pending; a sweep that dies before sending it loses it");
                }
                wave = Some(release);
            }
        }
        let view = OutageView {
            scope: scope.clone(),
            describe: cause.scope.describe(),
            began: cause.began_at.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
            since: Some(since),
            covered: cause.apps.len(),
            listed: cause.listed,
            canaries: cause.canaries,
            probed: probe.probed,
            healed: probe.healed,
            state: if paused {
                WaveState::Paused
            } else if relapsed {
                WaveState::Relapsed
            } else if release_wave {
                WaveState::Released
            } else {
                WaveState::Held
            },
            released: wave.as_ref().map_or(0, |w| w.apps.len()),
            eta_secs: cause.wave_secs(self.refresh_per_minute),
            by_person: paused || (released_by_person && probe.healed == 0),
            overdue,
            projects: medic_core::fleet::cause_projects(listed, &cause),
        };
        if let Err(e) = self.act.perform(Request::Outage { view: &view }).await {
            tracing::warn!(cause = %cause.scope, error = %e, "could not tell the fleet outage; the next sweep tells it again");
        }
        Some(Turn { view, cause, release: wave })
    }

    /// The recovery waves a sweep decided to release and did not dispatch: it died, or its
    /// queue refused the batch, after a canary's refresh showed the cause over. The canaries
    /// healed then, so the next sweep may find the cause under its threshold and no cause at
    /// all: the rest of its apps stayed `Unknown`, their own looks held by the scope's
    /// `recovering` marker for two windows more (chaos-smoke left 9 of 12 apps so in 2 runs of
    /// 7). A scope that is no cause now and whose release is still pending
    /// ([`Release::pending_marker`]) has its listed down apps released as that outage's wave;
    /// one whose wave is marked released after all only has the pending marker forgotten.
    pub async fn lost_releases(&self, listed: &[Application], causes: &[FleetCause]) -> Vec<Release> {
        let dedupe = self.act.dedupe;
        let current: BTreeSet<String> = causes.iter().map(|c| c.scope.key()).collect();
        let mut down: std::collections::BTreeMap<String, Vec<&Application>> = std::collections::BTreeMap::new();
        for app in listed.iter().filter(|a| medic_core::fleet::is_down(a)) {
            for scope in medic_core::fleet::scopes_of(app).iter().map(|s| s.key()).filter(|k| !current.contains(k)) {
                down.entry(scope).or_default().push(app);
            }
        }
        if down.is_empty() {
            return Vec::new();
        }
        let pending: Vec<Marker> = down.keys().map(|k| medic_core::keys::fleet_release_pending_marker(k)).collect();
        let Ok(marked) = dedupe.marked(&pending).await else { return Vec::new() };
        let lasts = self.recheck_interval * 2;
        let mut lost = Vec::new();
        for (scope, apps) in down.into_iter().filter(|(k, _)| marked.contains(&medic_core::keys::fleet_release_pending_marker(k))) {
            // Renewed by the turn that decided the release, the sighting outlives its pending
            // marker: this reads the outage's identity, it does not start a new one.
            let Ok(sighted) = dedupe.sighted(&fleet_sighting_marker(&scope), lasts).await else { continue };
            let since = sighted.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            let release = Release { scope, since, apps: apps.into_iter().map(AppRef::from).collect() };
            let released = release.released_marker();
            if dedupe.marked(std::slice::from_ref(&released)).await.is_ok_and(|m| m.contains(&released)) {
                dedupe.forget(&release.pending_marker()).await.ok();
                continue;
            }
            tracing::warn!(cause = %release.scope, apps = release.apps.len(), "a recovery wave decided by a sweep that did not send it is sent now");
            lost.push(release);
        }
        lost
    }

    /// After every cause's turn: the holds of scopes no cause holds now are lifted, and a cause
    /// told before and not among `told` is told over, once. Returns how many were told over.
    pub async fn conclude(&self, listed: &[Application], causes: &[FleetCause], told: &[String]) -> usize {
        self.forget_stale_holds(listed, causes).await;
        match self.act.perform(Request::OutagesEnded { current: told }).await {
            Ok(Performed::Posted(n)) => n,
            Ok(_) => 0,
            Err(e) => {
                tracing::warn!(error = %e, "could not tell which fleet outages are over; the next sweep tells them");
                0
            }
        }
    }

    /// Forgets the hold of every scope of the listed apps that no cause holds now (L11): a cause
    /// that disappears on its own (its apps healed, or too few are left down) held their
    /// notifications for up to two more windows. Best effort: a hold left behind lapses by itself.
    async fn forget_stale_holds(&self, listed: &[Application], causes: &[FleetCause]) {
        let current: BTreeSet<String> = causes.iter().map(|c| c.scope.key()).collect();
        let scopes: BTreeSet<String> = listed
            .iter()
            .flat_map(medic_core::fleet::scopes_of)
            .map(|s| s.key())
            .chain(std::iter::once(medic_core::fleet::CauseScope::Instance.key()))
            .filter(|k| !current.contains(k))
            .collect();
        let holds: Vec<Marker> = scopes.iter().map(|k| medic_core::keys::fleet_hold_marker(k)).collect();
        let Ok(held) = self.act.dedupe.marked(&holds).await else { return };
        for hold in held {
            tracing::info!(marker = %hold, "fleet outage over: its hold is lifted");
            self.act.dedupe.forget(&hold).await.ok();
        }
    }
}
