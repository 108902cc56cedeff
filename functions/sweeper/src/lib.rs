//! The sweeper function: on a schedule, one sweep ([`medic_service::sweep`]), the safety net
//! under argocd-notifications; on its report schedule, the weekly shadow report
//! ([`Sweep::weekly_report`]). The sweep's event payload is not read: EventBridge rules and
//! Scheduler send different shapes, and any of them means "sweep"; only the report schedule's
//! constant input, [`WEEKLY_REPORT_INPUT`], means the report.

use std::ops::{Deref, DerefMut};

use medic_service::Ports;
pub use medic_service::sweep::{Sweep, SweepRun, SweeperConfig, SweeperError, window};

/// The sweeper's handler over one [`Sweep`].
pub struct Sweeper<P: Ports> {
    pub sweep: Sweep<P>,
}

impl<P: Ports> From<Sweep<P>> for Sweeper<P> {
    fn from(sweep: Sweep<P>) -> Self {
        Self { sweep }
    }
}

/// The handler is its sweep: its collaborators are the sweep's.
impl<P: Ports> Deref for Sweeper<P> {
    type Target = Sweep<P>;
    fn deref(&self) -> &Sweep<P> {
        &self.sweep
    }
}

impl<P: Ports> DerefMut for Sweeper<P> {
    fn deref_mut(&mut self) -> &mut Sweep<P> {
        &mut self.sweep
    }
}

/// The report schedule's input in template.yaml (`WeeklyReport`'s `Input`): `{"medic": "weekly-report"}`.
pub const WEEKLY_REPORT_INPUT: &str = "weekly-report";

/// What an invocation asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invocation {
    /// One sweep: every scheduled event but the report's.
    Sweep,
    /// The weekly shadow report.
    WeeklyReport,
}

impl Invocation {
    /// What `event` asks for: the report when its `medic` field says so, a sweep otherwise.
    pub fn of(event: &serde_json::Value) -> Self {
        match event.get("medic").and_then(serde_json::Value::as_str) {
            Some(WEEKLY_REPORT_INPUT) => Invocation::WeeklyReport,
            _ => Invocation::Sweep,
        }
    }
}

/// What one invocation did: the sweep's run, or the report made.
#[derive(Debug, serde::Serialize)]
#[serde(untagged)]
pub enum Done {
    Sweep(SweepRun),
    Report(medic_core::report::Report),
}

impl<P: Ports> Sweeper<P>
where
    <P as Ports>::Incidents: medic_core::ports::IncidentLedger,
{
    /// Runs what `event` asks for ([`Invocation::of`]).
    pub async fn handle(&self, event: &serde_json::Value) -> Result<Done, SweeperError> {
        match Invocation::of(event) {
            Invocation::Sweep => {
                let run = self.run().await;
                // A weekly report whose own run failed is posted by the sweeps after it.
                if let Some(Err(e)) = self.weekly_report_if_due().await {
                    tracing::warn!(error = %e, "the weekly report is still due; the next sweep tries again");
                }
                run.map(Done::Sweep)
            }
            Invocation::WeeklyReport => self.weekly_report().await.map(Done::Report),
        }
    }
}

/// The sweeper as the Lambda runs it.
pub type LambdaSweeper = Sweeper<medic_stack::lambda::LambdaPorts>;

impl LambdaSweeper {
    /// Builds the sweeper from the function's settings (what `main` runs; tests build it the same way).
    pub async fn from_env(env: &medic_adapters::lambda_env::LambdaEnv) -> Result<Self, medic_adapters::lambda_env::EnvError> {
        Ok(Sweeper::from(medic_stack::lambda::sweep(env).await?))
    }
}
