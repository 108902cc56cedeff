//! `medic sweep`: one pass over a fleet. List the apps field-masked, plan the sweep
//! ([`medic_core::sweep::plan`], the sweeper function's plan too), and run the per-app step
//! (re-read in full → decide → act within budgets → record) on everything it looks at.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt};
use medic_core::Trigger;
use medic_core::actions::ActionKind;
use medic_core::actuator::Request;
use medic_core::alerts;
use medic_core::event::AppRef;
use medic_core::fleet::{WaveState, is_down, should_pause};
use medic_core::ladder::WaveOutcome;
use medic_core::ports::{ArgoApi, ArgoError, Budget, Clock, Escalator, IncidentStore, MarkerStore};
use medic_core::step::{StepError, StepReport, StepResult};
use medic_core::sweep::{SweepScope, plan};
use medic_core::switch::Switch;
use medic_service::outage::{Outages, Release};
use medic_service::remediate::Remediator;
use serde::Serialize;

/// What to sweep and how.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// What the sweep covers (shared with the sweeper function).
    pub scope: SweepScope,
    /// Apps handled at once.
    pub concurrency: usize,
    /// The refresh budget's rate, for the recovery wave's estimate.
    pub refresh_per_minute: u32,
    /// How far apart sweeps run: an outage's markers (its sighting, hold and wave) last two of
    /// these, as the sweeper's do, so passes of one `medic sweep` turn one outage.
    pub recheck_interval: Duration,
}

impl Default for SweepOptions {
    fn default() -> Self {
        Self { scope: SweepScope::default(), concurrency: 8, refresh_per_minute: 600, recheck_interval: Duration::from_secs(900) }
    }
}

/// The outcome of one sweep.
#[derive(Debug, Clone, Serialize)]
pub struct SweepSummary {
    pub listed: usize,
    pub candidates: usize,
    pub reports: Vec<StepReport>,
    /// Apps whose step could not finish (Argo CD unavailable, store errors); retried next sweep.
    pub errors: Vec<(String, String)>,
    /// The shared causes found, and what was done about each.
    pub outages: Vec<OutageReport>,
    /// Apps the plan named but the sweep never started: it was asked to stop.
    pub interrupted: usize,
    pub elapsed_ms: u128,
}

/// What a sweep has done so far, as it goes: for rows that stream and a progress line. Every
/// method has a default that does nothing.
pub trait SweepObserver: Sync {
    /// The plan, once the canaries are probed: `apps` steps will run (the canaries' own rows
    /// follow at once), and the longest app name among all listed, for a table's first column.
    fn planned(&self, _plan: &Planned) {}
    /// An app's step began.
    fn started(&self, _app: &AppRef) {}
    /// An app's step ended (canaries included), in the order they end.
    fn finished(&self, _app: &AppRef, _result: &Result<StepReport, StepError>) {}
}

impl SweepObserver for () {}

/// What [`SweepObserver::planned`] is told.
#[derive(Debug, Clone, Copy)]
pub struct Planned {
    pub listed: usize,
    /// Steps to run: the apps looked at and the recovery waves (canaries excluded).
    pub apps: usize,
    /// Canaries probed already.
    pub canaries: usize,
    pub longest_name: usize,
}

/// One shared cause in a sweep ([`medic_core::fleet`]).
#[derive(Debug, Clone, Serialize)]
pub struct OutageReport {
    /// `repo:<host>`, `cluster:<server>` or `instance`.
    pub cause: String,
    /// Covered apps (down and of the cause's scope), and the scope's listed apps.
    pub apps: usize,
    pub of: usize,
    /// Canaries refreshed this sweep, and how many came back comparable.
    pub probed: usize,
    pub healed: usize,
    /// Covered apps released as the recovery wave, and whether it paused (most of a batch failed
    /// again: the cause is probably back).
    pub released: usize,
    pub paused: bool,
    /// Down longer than the fleet incident's time bound with no canary healed: escalated.
    pub overdue: bool,
}

/// A sweep that had to stop.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("listing applications: {0}")]
    List(ArgoError),
    #[error("{0}; give medic a valid API token of Argo Medic's account with --auth-token or ARGOCD_AUTH_TOKEN")]
    Unauthenticated(ArgoError),
    #[error(transparent)]
    Store(#[from] medic_core::ports::StoreError),
}

/// Runs one sweep, telling `observer` as apps finish. Once `stop` answers true no further app
/// is started (the steps under way finish), and the summary counts the rest as interrupted.
pub async fn sweep<A, S, D, E, B, C, W>(
    r: &Remediator<'_, A, S, D, E, B, C, W>,
    opts: &SweepOptions,
    observer: &impl SweepObserver,
    stop: &(impl Fn() -> bool + Sync),
) -> Result<SweepSummary, SweepError>
where
    A: ArgoApi,
    S: IncidentStore,
    D: MarkerStore,
    E: Escalator,
    B: Budget,
    C: Clock,
    W: medic_core::switch::Switch,
{
    let started = Instant::now();
    let listed = match r.argo.list_apps(&opts.scope.list_query()).await {
        Ok(items) => items,
        Err(e @ ArgoError::Unauthenticated(_)) => return Err(unauthenticated(r, e).await),
        Err(e) => return Err(SweepError::List(e)),
    };
    let open: BTreeSet<medic_core::AppId> = r.store.open_incidents().await?.into_iter().collect();
    let plan = plan(&listed, &open, &opts.scope);
    let trigger = Trigger::sweep();
    // The outage state machine the sweeper turns too; only the wave's dispatch differs: here it
    // is stepped inline, below, instead of enqueued for the workers.
    let machine = Outages {
        act: r.actuator(),
        rules: &opts.scope.fleet,
        trust: &r.policy.config.trust,
        recheck_interval: opts.recheck_interval,
        refresh_per_minute: opts.refresh_per_minute,
    };
    let now = r.clock.now();
    let mut outages = Vec::new();
    let mut told = Vec::new();
    let mut waves: Vec<(usize, Release)> = Vec::new();
    let mut results: Vec<(AppRef, Result<StepReport, StepError>)> = Vec::new();
    for cause in &plan.causes {
        let probe = machine.probe(&listed, cause).await;
        let turn = machine.turn(&listed, cause, &probe, now).await;
        outages.push(OutageReport {
            cause: cause.scope.key(),
            apps: cause.apps.len(),
            of: cause.listed,
            probed: probe.probed,
            healed: probe.healed,
            released: 0,
            paused: turn.as_ref().is_some_and(|t| t.view.state == WaveState::Paused),
            overdue: turn.as_ref().is_some_and(|t| t.view.overdue),
        });
        // A healed canary's step runs on the app just read (no second read), so an incident it
        // had is closed; the canaries get no other step, and no escalation of their own.
        for (app, read) in probe.reads {
            match read {
                Ok(read) if !is_down(&read) => {
                    let step = r.run(&app, &trigger, Some(read)).await;
                    results.push((app, step));
                }
                Ok(_) => {}
                Err(e) => results.push((app, Err(e))),
            }
        }
        if let Some(turn) = turn {
            told.push(turn.view.key());
            if let Some(release) = turn.release {
                waves.push((outages.len() - 1, release));
            }
        }
    }
    machine.conclude(&listed, &plan.causes, &told).await;
    // The canaries are probed, not put through the per-app ladder: a refresh each, no incident,
    // no escalation of their own (the cause has its parent).
    let candidates: Vec<AppRef> = plan.looks().filter(|a| plan.canary_of(&a.id()).is_none()).cloned().collect();
    // The steps need only the candidates' references: at 50,000 apps the listed ones held through
    // the steps added their size to the steps' own peak.
    let longest_name = listed.iter().map(|a| a.id().to_string().len()).max().unwrap_or(0);
    drop(listed);
    let total = candidates.len() + waves.iter().map(|(_, w)| w.apps.len()).sum::<usize>();
    observer.planned(&Planned { listed: plan.listed, apps: total, canaries: results.len(), longest_name });
    for (app, result) in &results {
        observer.finished(app, result);
    }
    let skipped = std::sync::atomic::AtomicUsize::new(0);
    let (trigger, skipped) = (&trigger, &skipped);
    let run_all = |apps: Vec<AppRef>, trigger: Trigger| {
        stream::iter(apps)
            .filter_map(move |app| {
                // Asked to stop: the apps not yet started are left for the next sweep.
                let go = !stop();
                if !go {
                    skipped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                futures::future::ready(go.then_some(app))
            })
            .map(move |app| {
                let trigger = trigger.clone();
                async move {
                    observer.started(&app);
                    let result = r.run(&app, &trigger, None).await;
                    observer.finished(&app, &result);
                    (app, result)
                }
            })
            .buffer_unordered(opts.concurrency.max(1))
            .collect::<Vec<_>>()
    };
    results.extend(run_all(candidates, trigger.clone()).await);
    // A canary healed: the cause is over. The rest of its apps go in priority order, batch by
    // batch, within the budgets; most of a batch failing again pauses the wave until next sweep.
    let recovery = Trigger::recovery();
    let lasts = opts.recheck_interval * 2;
    for (outage, release) in waves {
        let batch_size = opts.scope.fleet.wave_batch.max(1);
        let mut stepped = true;
        for (i, batch) in release.apps.chunks(batch_size).enumerate() {
            if stop() {
                skipped.fetch_add(release.apps.len() - i * batch_size, std::sync::atomic::Ordering::Relaxed);
                // Not marked released: the next sweep releases the wave again (the steps
                // already done find their claims).
                stepped = false;
                break;
            }
            let batch_results = run_all(batch.to_vec(), recovery.clone()).await;
            let (healed, failed) = batch_results.iter().fold((0, 0), |(h, f), (_, result)| match medic_core::step::wave_outcome(result) {
                WaveOutcome::Healed => (h + 1, f),
                WaveOutcome::Failed => (h, f + 1),
                WaveOutcome::Neither => (h, f),
            });
            outages[outage].released += batch.len();
            results.extend(batch_results);
            if should_pause(&opts.scope.fleet, healed + failed, healed) {
                // The cause is probably back: held again until the relapse marker lapses and a
                // canary heals, as the workers' tally does.
                outages[outage].paused = true;
                r.dedupe.mark(&release.relapse_marker(), lasts).await.ok();
                break;
            }
        }
        if stepped {
            r.dedupe.mark(&release.released_marker(), lasts).await.ok();
        }
    }

    let mut reports = Vec::new();
    let mut errors = Vec::new();
    for (app, result) in results {
        match result {
            Ok(report) => reports.push(report),
            Err(StepError::Argo(e @ ArgoError::Unauthenticated(_))) => return Err(unauthenticated(r, e).await),
            Err(e) => errors.push((app.id().to_string(), e.to_string())),
        }
    }
    reports.sort_by(|a, b| a.app.cmp(&b.app));
    errors.sort();
    Ok(SweepSummary {
        listed: plan.listed,
        candidates: total,
        reports,
        errors,
        outages,
        interrupted: skipped.load(std::sync::atomic::Ordering::Relaxed),
        elapsed_ms: started.elapsed().as_millis(),
    })
}

/// A rejected token stops the sweep and raises exactly one alert: every further call would fail.
async fn unauthenticated<A, S, D, E, B, C, W>(r: &Remediator<'_, A, S, D, E, B, C, W>, e: ArgoError) -> SweepError
where
    A: ArgoApi,
    S: IncidentStore,
    D: MarkerStore,
    E: Escalator,
    B: Budget,
    C: Clock,
    W: Switch,
{
    let text = alerts::unauthenticated(&e);
    r.actuator().perform(Request::Alert { kind: ActionKind::ServiceAlert, text: &text, once: None }).await.ok();
    SweepError::Unauthenticated(e)
}

impl SweepSummary {
    /// How many steps ended in each result.
    pub fn count(&self, result: StepResult) -> usize {
        self.reports.iter().filter(|r| r.result == result).count()
    }

    pub fn argo_calls(&self) -> u64 {
        self.reports.iter().map(|r| u64::from(r.argo_calls)).sum()
    }
}
