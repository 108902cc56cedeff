//! The escalator the functions wire in: Slack when configured, log lines otherwise.

use super::escalator::*;

use medic_core::AppId;
use medic_core::Application;
use medic_core::decision::Decision;
use medic_core::escalation::{HumanActionOutcome, HumanActionRequest};
use medic_core::ports::{EscalationError, EscalationStore, Escalator};

use crate::memory::LogEscalator;

/// The log escalator, or Slack when it is configured: what the functions wire in.
pub enum AnyEscalator<S> {
    Log(LogEscalator),
    Slack(Box<SlackEscalator<S>>),
}

impl<S: EscalationStore> Escalator for AnyEscalator<S> {
    async fn escalate(&self, app: &Application, decision: &Decision) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.escalate(app, decision).await,
            AnyEscalator::Slack(e) => e.escalate(app, decision).await,
        }
    }

    async fn alert(&self, summary: &str) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.alert(summary).await,
            AnyEscalator::Slack(e) => e.alert(summary).await,
        }
    }

    async fn outage(&self, view: &medic_core::fleet::OutageView) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.outage(view).await,
            AnyEscalator::Slack(e) => e.outage(view).await,
        }
    }

    async fn outages_ended(&self, current: &[String]) -> Result<usize, EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.outages_ended(current).await,
            AnyEscalator::Slack(e) => e.outages_ended(current).await,
        }
    }

    async fn resolve(&self, app: &AppId, decision: &Decision) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.resolve(app, decision).await,
            AnyEscalator::Slack(e) => e.resolve(app, decision).await,
        }
    }

    async fn human_action(&self, id: &str) -> Result<Option<HumanActionRequest>, EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.human_action(id).await,
            AnyEscalator::Slack(e) => e.human_action(id).await,
        }
    }

    async fn record_human_action(
        &self,
        request: &HumanActionRequest,
        by: &str,
        outcome: &HumanActionOutcome,
    ) -> Result<(), EscalationError> {
        match self {
            AnyEscalator::Log(e) => e.record_human_action(request, by, outcome).await,
            AnyEscalator::Slack(e) => e.record_human_action(request, by, outcome).await,
        }
    }
}
