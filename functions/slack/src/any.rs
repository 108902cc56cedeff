//! The escalator the functions wire in: Slack when configured, log lines otherwise.

use super::escalator::*;

use medic_core::AppId;
use medic_core::Application;
use medic_core::decision::Decision;
use medic_core::human_action::{HumanActionOutcome, HumanActionRequest};
use medic_core::permit::Permit;
use medic_core::ports::{EscalationError, EscalationStore, HumanActions, IncidentChannel, OutageBoard};

use medic_adapters::memory::LogEscalator;

/// The log escalator, or Slack when it is configured: what the functions wire in.
pub enum AnyEscalator<S> {
    Log(LogEscalator),
    Slack(Box<SlackEscalator<S>>),
}

impl<S: EscalationStore> IncidentChannel for AnyEscalator<S> {
    fn takes_approvals(&self) -> bool {
        matches!(self, AnyEscalator::Slack(_))
    }

    async fn escalate(&self, permit: &Permit, app: &Application, decision: &Decision) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.escalate(permit, app, decision).await,
            AnyEscalator::Slack(e) => e.escalate(permit, app, decision).await,
        }
    }

    async fn alert(&self, permit: &Permit, summary: &str) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.alert(permit, summary).await,
            AnyEscalator::Slack(e) => e.alert(permit, summary).await,
        }
    }

    async fn resolve(&self, permit: &Permit, app: &AppId, decision: &Decision) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.resolve(permit, app, decision).await,
            AnyEscalator::Slack(e) => e.resolve(permit, app, decision).await,
        }
    }

    async fn tell_timeline(&self, permit: &Permit, reply: &medic_core::timeline::ThreadReply<'_>) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.tell_timeline(permit, reply).await,
            AnyEscalator::Slack(e) => e.tell_timeline(permit, reply).await,
        }
    }

    async fn report(
        &self,
        permit: &Permit,
        report: &medic_core::report::Report,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.report(permit, report, now).await,
            AnyEscalator::Slack(e) => e.report(permit, report, now).await,
        }
    }
}

impl<S: EscalationStore> OutageBoard for AnyEscalator<S> {
    async fn outage(&self, permit: &Permit, view: &medic_core::fleet::OutageView) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.outage(permit, view).await,
            AnyEscalator::Slack(e) => e.outage(permit, view).await,
        }
    }

    async fn outages_ended(&self, permit: &Permit, current: &[String]) -> Result<usize, EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.outages_ended(permit, current).await,
            AnyEscalator::Slack(e) => e.outages_ended(permit, current).await,
        }
    }
}

impl<S: EscalationStore> HumanActions for AnyEscalator<S> {
    async fn human_action(&self, id: &str) -> Result<Option<HumanActionRequest>, EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.human_action(id).await,
            AnyEscalator::Slack(e) => e.human_action(id).await,
        }
    }

    async fn record_human_action(
        &self,
        permit: &Permit,
        request: &HumanActionRequest,
        by: &str,
        outcome: &HumanActionOutcome,
    ) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.record_human_action(permit, request, by, outcome).await,
            AnyEscalator::Slack(e) => e.record_human_action(permit, request, by, outcome).await,
        }
    }
}
