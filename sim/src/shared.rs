//! The state the simulator's server tasks, its controller work and the [`crate::ArgoSim`] handle
//! share. Its own module, below the server and the API that read it and the handle that makes it,
//! so none of them imports another to reach it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::task::AbortHandle;

use crate::config::SimConfig;
use crate::controller::{self, Attempt};
use crate::faults::FaultQueue;
use crate::log::{CallCounts, LoggedRequest};
use crate::outcomes::SyncOutcome;
use crate::release::Behaviour;
use crate::state::{AppKey, Store};

/// State shared by the server's tasks and the [`crate::ArgoSim`] handle.
pub(crate) struct Shared {
    pub(crate) config: SimConfig,
    /// What the served release (`config.version`) does where releases differ.
    pub(crate) behaviour: Behaviour,
    pub(crate) store: Mutex<Store>,
    pub(crate) faults: Mutex<FaultQueue>,
    pub(crate) log: Mutex<Vec<LoggedRequest>>,
    /// `(method, path?query)` of every request as it arrives, before any fault or answer: a
    /// harness waits on it to kill a client while its request is held open.
    pub(crate) arrivals: Mutex<Vec<(String, String)>>,
    pub(crate) counts: Mutex<CallCounts>,
    /// The AppProjects' deny windows (`config.sync_windows` at start).
    pub(crate) sync_windows: Mutex<Vec<crate::config::SyncWindowRule>>,
    /// The bearer tokens accepted now (`config.tokens` at start; [`ArgoSim::set_tokens`] rotates them).
    pub(crate) tokens: Mutex<Vec<crate::config::TokenGrant>>,
    /// Stands in for a token's `iat` when the token carries none.
    pub(crate) started_at: DateTime<Utc>,
    /// Controller tasks (operations finishing), aborted at shutdown.
    pub(crate) tasks: Mutex<Vec<AbortHandle>>,
}

impl Shared {
    /// Controller work on `key` after `delay`, done only if `owner` still owns the app's
    /// operation slot (a termination or a replaced app takes it over). `work` says whether it
    /// finished the operation, which then writes the app and frees the slot.
    pub(crate) fn later(
        shared: &Arc<Shared>,
        delay: Duration,
        key: AppKey,
        owner: u64,
        work: impl FnOnce(&mut Value) -> bool + Send + 'static,
    ) {
        let task_shared = Arc::clone(shared);
        shared.spawn(async move {
            tokio::time::sleep(delay).await;
            let mut store = task_shared.store.lock();
            if !store.owns(&key, owner) {
                return;
            }
            if store.get_mut(&key).is_some_and(work) {
                store.touch(&key);
                store.release(&key, owner);
            }
        });
    }

    /// Whether an active deny window holds the running operation of `app` (controller/sync.go
    /// `syncWindowPreventsSync`, :624-640 at v3.5.1): a manual sync passes windows that allow
    /// manual syncs and, from 3.5, a sync passes when every window holding it allows the overrun.
    pub(crate) fn window_holds(&self, app: &Value) -> bool {
        let project = crate::json::str_at(app, "spec.project").unwrap_or("default");
        let manual =
            crate::json::lookup(app, "status.operationState.operation.initiatedBy.automated").and_then(Value::as_bool) != Some(true);
        let windows = self.sync_windows.lock();
        let holding: Vec<_> = windows.iter().filter(|w| w.active && w.project == project && !(manual && w.manual_sync)).collect();
        let overrun = self.behaviour.sync_overrun() && holding.iter().all(|w| w.sync_overrun);
        !holding.is_empty() && !overrun
    }

    /// Runs the sync operation just begun on `key` as the controller would: each attempt takes
    /// `operation_duration` and ends per `outcome`; a failed attempt with retries left waits as
    /// long again (the simulator's back-off: one operation's time, not `retry.backoff`) and the
    /// retry starts. Stops when the operation ends, hangs, or `owner` loses the app's operation
    /// slot (a termination takes it over).
    pub(crate) fn run_sync(shared: &Arc<Shared>, key: AppKey, owner: u64, outcome: SyncOutcome) {
        let task_shared = Arc::clone(shared);
        let pause = shared.config.operation_duration;
        let behaviour = shared.behaviour;
        shared.spawn(async move {
            loop {
                tokio::time::sleep(pause).await;
                {
                    let mut store = task_shared.store.lock();
                    if !store.owns(&key, owner) {
                        return;
                    }
                    if store.get(&key).is_some_and(|app| task_shared.window_holds(app)) {
                        // Held, not ended: the controller says why and tries again on its next pass.
                        if store.get_mut(&key).is_some_and(controller::hold_for_window) {
                            store.touch(&key);
                        }
                        continue;
                    }
                    let now = Utc::now();
                    let retry_at = now + chrono::TimeDelta::from_std(pause).unwrap_or_default();
                    let attempt = match store.get_mut(&key) {
                        Some(app) => controller::finish_sync(app, &outcome, behaviour, now, retry_at),
                        None => return,
                    };
                    match attempt {
                        Attempt::Running => return,
                        Attempt::Ended => {
                            store.touch(&key);
                            store.release(&key, owner);
                            return;
                        }
                        Attempt::RetryScheduled => store.touch(&key),
                    }
                }
                tokio::time::sleep(pause).await;
                let mut store = task_shared.store.lock();
                if !store.owns(&key, owner) {
                    return;
                }
                let Some(app) = store.get_mut(&key) else { return };
                controller::begin_retry(app, behaviour);
                store.touch(&key);
            }
        });
    }

    /// Spawns simulated controller work, remembered so shutdown can stop it.
    fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(work);
        let mut tasks = self.tasks.lock();
        tasks.retain(|t| !t.is_finished());
        tasks.push(handle.abort_handle());
    }
}
