//! Argo Medic's application, between the pure core (vocabulary, policy, plans) and the handlers
//! (event plumbing, batch failures, who may call): what ingest accepts ([`intake`]), the per-app
//! step ([`remediate`]), one work item ([`work`]) and one sweep ([`sweep`]) with its outage state machine ([`outage`]), async over the
//! core's ports and generic over one set of them ([`Ports`]). The handlers of the Lambda
//! functions and of `medic` run this same code; none of it knows which adapters it runs on.

pub mod intake;
pub mod outage;
pub mod remediate;
pub mod report;
pub mod sweep;
pub mod work;

use medic_core::ports::{AppLock, ArgoApi, Budget, Clock, DeliveryLeases, Escalator, IncidentStore, MarkerStore, Telemetry, WorkQueue};
use medic_core::switch::Switch;

/// One set of adapters, named once: what the application is generic over. A composition root
/// defines one per environment (Lambda, `medic serve`, the tests' twins), instead of every
/// handler naming nine type parameters.
pub trait Ports {
    type Argo: ArgoApi;
    type Incidents: IncidentStore;
    /// Markers and once-only notes ([`MarkerStore`]), and the leases of work items being handled
    /// ([`DeliveryLeases`]): one table.
    type Markers: MarkerStore + DeliveryLeases;
    type Lock: AppLock;
    type Queue: WorkQueue;
    type Escalator: Escalator;
    type Budget: Budget;
    type Clock: Clock;
    /// The instant switch (`medic switch`).
    type Switch: Switch;
    type Telemetry: Telemetry;
}

/// The one actuator ([`medic_core::actuator`]) over a set of ports.
pub type ActuatorOf<'a, P> = medic_core::actuator::Actuator<
    'a,
    <P as Ports>::Argo,
    <P as Ports>::Incidents,
    <P as Ports>::Markers,
    <P as Ports>::Escalator,
    <P as Ports>::Budget,
    <P as Ports>::Clock,
    <P as Ports>::Switch,
>;

/// The outage state machine ([`outage::Outages`]) over a set of ports.
pub type OutagesOf<'a, P> = outage::Outages<
    'a,
    <P as Ports>::Argo,
    <P as Ports>::Incidents,
    <P as Ports>::Markers,
    <P as Ports>::Escalator,
    <P as Ports>::Budget,
    <P as Ports>::Clock,
    <P as Ports>::Switch,
>;
