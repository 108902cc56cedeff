//! The in-memory twins: one state (incidents, markers, locks, queue) that workers and a sweeper
//! share, as the stack's table and queue are shared on AWS. For `cargo test -p worker`, the storm
//! benchmark and any harness without moto.

use std::sync::Arc;

use medic_adapters::memory::{LogEscalator, MemoryDedupe, MemoryIncidentStore, MemoryLock, MemoryQueue, SystemClock};
use medic_adapters::telemetry::Metrics;
use medic_core::switch::FixedSwitch;
use medic_service::intake::{IngestConfig, Intake};

use crate::adapters::Adapters;

/// The twins' adapters over one [`MemoryState`], with the Argo CD client `A` and the budget `B`
/// given; escalations logged, the system clock, the switch at `act`, metrics kept quietly.
pub type MemoryPorts<A, B> = Adapters<
    A,
    Arc<MemoryIncidentStore>,
    Arc<MemoryDedupe>,
    Arc<MemoryLock>,
    Arc<MemoryQueue>,
    LogEscalator,
    B,
    SystemClock,
    FixedSwitch,
    Metrics,
>;

/// Ingest's intake over a [`MemoryState`]'s queue.
pub type MemoryIntake<A> = Intake<Arc<MemoryQueue>, A, SystemClock, Metrics>;

/// State kept in memory, shared by whatever is built over it.
#[derive(Default, Clone)]
pub struct MemoryState {
    pub store: Arc<MemoryIncidentStore>,
    pub dedupe: Arc<MemoryDedupe>,
    pub lock: Arc<MemoryLock>,
    pub queue: Arc<MemoryQueue>,
}

impl MemoryState {
    /// Adapters over this state (see [`MemoryPorts`]); `instance` names the metrics' instance.
    pub fn adapters<A, B>(&self, argo: A, budget: B, instance: &str) -> MemoryPorts<A, B> {
        Adapters {
            argo,
            store: Arc::clone(&self.store),
            dedupe: Arc::clone(&self.dedupe),
            lock: Arc::clone(&self.lock),
            queue: Arc::clone(&self.queue),
            escalator: LogEscalator::default(),
            budget,
            clock: SystemClock,
            switch: FixedSwitch::default(),
            metrics: Metrics::quiet(instance),
        }
    }

    /// Ingest's intake over this state's queue, reading `argo`; the system clock, metrics kept
    /// quietly.
    pub fn intake<A>(&self, argo: A, config: IngestConfig) -> MemoryIntake<A> {
        Intake { config, queue: Arc::clone(&self.queue), argo, clock: SystemClock, metrics: Metrics::quiet("test") }
    }
}
