//! `medic serve`'s adapters (feature `local`): one SQLite state file for incidents, markers and
//! the work queue, shared by ingest, the worker and the sweeper of one process as the stack's
//! table and queue are on AWS; an in-memory app lock (one process), the system clock, the switch
//! at `act`.

use std::sync::Arc;

use medic_adapters::memory::{MemoryLock, SystemClock};
use medic_adapters::sqlite::dedupe::SqliteDedupe;
use medic_adapters::sqlite::queue::SqliteQueue;
use medic_adapters::sqlite::store::SqliteIncidentStore;
use medic_adapters::telemetry::Metrics;
use medic_core::switch::FixedSwitch;

use crate::adapters::Adapters;

/// The adapters over a [`LocalState`], with the Argo CD client `A`, the escalator `E` and the
/// budget `B` given (shared by the process's handlers: each an `Arc`).
pub type LocalPorts<A, E, B> =
    Adapters<A, Arc<SqliteIncidentStore>, Arc<SqliteDedupe>, MemoryLock, Arc<SqliteQueue>, E, B, SystemClock, FixedSwitch, Metrics>;

/// One state file: its incident store, and the dedupe records and work queue kept in it.
#[derive(Clone)]
pub struct LocalState {
    pub store: Arc<SqliteIncidentStore>,
    pub dedupe: Arc<SqliteDedupe>,
    pub queue: Arc<SqliteQueue>,
}

impl LocalState {
    /// The state kept in `store`'s file: the queue lives there, so a restart loses nothing
    /// accepted; so do the dedupe records, so a click handled before a restart is not handled
    /// again after it.
    pub fn over(store: Arc<SqliteIncidentStore>) -> Self {
        let queue = Arc::new(SqliteQueue::new(Arc::clone(&store)));
        let dedupe = Arc::new(SqliteDedupe::new(Arc::clone(&store)));
        Self { store, dedupe, queue }
    }

    /// Adapters over this state; `instance` names the metrics' instance (kept quietly: `medic
    /// serve` prints no EMF).
    pub fn adapters<A, E, B>(&self, argo: A, escalator: E, budget: B, instance: &str) -> LocalPorts<A, E, B> {
        Adapters {
            argo,
            store: Arc::clone(&self.store),
            dedupe: Arc::clone(&self.dedupe),
            lock: MemoryLock::default(),
            queue: Arc::clone(&self.queue),
            escalator,
            budget,
            clock: SystemClock,
            switch: FixedSwitch::default(),
            metrics: Metrics::quiet(instance),
        }
    }
}
