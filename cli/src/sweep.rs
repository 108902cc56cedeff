//! `medic sweep`: one pass over a fleet. List the apps field-masked, plan the sweep
//! ([`medic_core::sweep::plan`], the sweeper function's plan too), and run the per-app step
//! (re-read in full → decide → act within budgets → record) on everything it looks at.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt};
use medic_core::Trigger;
use medic_core::alerts;
use medic_core::event::AppRef;
use medic_core::ports::{ArgoApi, ArgoError, Budget, Clock, Escalator, IncidentStore};
use medic_core::remediate::{Remediator, StepError, StepReport, StepResult};
use medic_core::sweep::{SweepScope, plan};
use serde::Serialize;

/// What to sweep and how.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// What the sweep covers (shared with the sweeper function).
    pub scope: SweepScope,
    /// Apps handled at once.
    pub concurrency: usize,
}

impl Default for SweepOptions {
    fn default() -> Self {
        Self { scope: SweepScope::default(), concurrency: 8 }
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
    pub outage: Option<String>,
    pub elapsed_ms: u128,
}

/// A sweep that had to stop.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("listing applications: {0}")]
    List(ArgoError),
    #[error("{0}")]
    Unauthenticated(ArgoError),
    #[error(transparent)]
    Store(#[from] medic_core::ports::StoreError),
}

/// Runs one sweep. `progress` is called once per finished app.
pub async fn sweep<A, S, E, B, C, W>(
    r: &Remediator<'_, A, S, E, B, C, W>,
    opts: &SweepOptions,
    progress: impl Fn(usize, usize),
) -> Result<SweepSummary, SweepError>
where
    A: ArgoApi,
    S: IncidentStore,
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
    if let Some(o) = &plan.outage {
        if !r.dry_run {
            r.escalator.alert(&alerts::outage(o)).await.ok();
        }
    }
    let candidates: Vec<AppRef> = plan.looks().cloned().collect();
    let total = candidates.len();
    let trigger = Trigger::sweep();
    let results: Vec<(AppRef, Result<StepReport, StepError>)> = stream::iter(candidates)
        .map(|app| {
            let trigger = &trigger;
            async move {
                let result = r.run(&app, trigger, None).await;
                (app, result)
            }
        })
        .buffer_unordered(opts.concurrency.max(1))
        .enumerate()
        .map(|(i, item)| {
            progress(i + 1, total);
            item
        })
        .collect()
        .await;

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
        outage: plan.outage.map(|o| format!("{} of {} apps Unknown", o.unknown, o.listed)),
        elapsed_ms: started.elapsed().as_millis(),
    })
}

/// A rejected token stops the sweep and raises exactly one alert: every further call would fail.
async fn unauthenticated<A, S, E: Escalator, B, C, W>(r: &Remediator<'_, A, S, E, B, C, W>, e: ArgoError) -> SweepError {
    r.escalator.alert(&alerts::unauthenticated(&e)).await.ok();
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

/// A sweep longer than this on the terminal gets a progress bar.
pub const PROGRESS_AFTER: Duration = Duration::from_millis(300);
