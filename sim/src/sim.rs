//! [`ArgoSim`]: a running simulated Argo CD API server and the handles a test drives it with.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::SimConfig;
use crate::controller;
use crate::faults::{Fault, FaultQueue};
use crate::log::{CallCounts, LoggedRequest};
use crate::outcomes::{Outcomes, RefreshOutcome};

/// The default `timeout.reconciliation` (argocd-cm, 120 s): an app compared longer ago is due for
/// a comparison on the informer's resync (controller/appcontroller.go `needRefreshAppStatus`,
/// "comparison expired").
pub const RECONCILIATION_TIMEOUT: Duration = Duration::from_secs(120);
use crate::rebase::Rebase;
use crate::release::Behaviour;
use crate::server;
use crate::shared::Shared;
use crate::state::{AppKey, Store};

/// A simulated Argo CD API server listening on `127.0.0.1`.
///
/// Dropping it stops the server too; [`ArgoSim::shutdown`] also waits for the accept loop.
pub struct ArgoSim {
    shared: Arc<Shared>,
    addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    server: Option<JoinHandle<()>>,
}

impl ArgoSim {
    /// Binds `127.0.0.1:0` and starts serving.
    pub async fn start(config: SimConfig) -> io::Result<ArgoSim> {
        Self::start_on(config, 0).await
    }

    /// Binds `127.0.0.1:port` (0: any free port) and starts serving.
    pub async fn start_on(mut config: SimConfig, port: u16) -> io::Result<ArgoSim> {
        config.root_path = normalise_root(&config.root_path);
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            tokens: Mutex::new(config.tokens.clone()),
            behaviour: Behaviour::of(&config.version),
            sync_windows: Mutex::new(config.sync_windows.clone()),
            config,
            store: Mutex::new(Store::default()),
            faults: Mutex::new(FaultQueue::default()),
            arrivals: Mutex::new(Vec::new()),
            log: Mutex::new(Vec::new()),
            counts: Mutex::new(CallCounts::default()),
            started_at: Utc::now(),
            tasks: Mutex::new(Vec::new()),
        });
        let (shutdown, receiver) = watch::channel(false);
        let server = tokio::spawn(server::serve(listener, Arc::clone(&shared), receiver));
        Ok(ArgoSim { shared, addr, shutdown, server: Some(server) })
    }

    /// `http://127.0.0.1:PORT`, without the root path.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The URL of an API path under the root path, e.g. `api_url("/api/version")`.
    pub fn api_url(&self, path: &str) -> String {
        format!("{}{}{path}", self.base_url(), self.shared.config.root_path)
    }

    /// The configuration in effect (root path normalised to `""` or `/x` without a trailing `/`).
    pub fn config(&self) -> &SimConfig {
        &self.shared.config
    }

    /// Stores (or replaces) an Application, keyed by `metadata.namespace` (default `argocd`)
    /// and `metadata.name`.
    ///
    /// # Panics
    ///
    /// When the object has no `metadata.name`: that is a broken fixture, not a wire condition.
    pub fn insert_app(&self, mut app: Value) {
        self.shared.behaviour.stored(&mut app);
        if let Err(e) = self.shared.store.lock().insert(app) {
            panic!("ArgoSim::insert_app: {e}");
        }
    }

    /// The sample fleet of `events` (the repository's `events/`): every app of `apps/`, its
    /// timestamps moved so it was captured at `now`, and the outcomes of `sim/outcomes.json`.
    pub fn load_samples(&self, events: &Path, now: chrono::DateTime<chrono::Utc>) -> io::Result<usize> {
        let loaded = self.load_dir(&events.join("apps"), Some(Rebase::samples_to(now)))?;
        self.load_outcomes(&events.join("sim/outcomes.json"))?;
        Ok(loaded)
    }

    /// Loads every `*.json` file of `dir` (not recursive, in name order). Each holds one
    /// Application, or a list `{"items": [...]}`. Returns how many apps were stored.
    pub fn load_dir(&self, dir: &Path, rebase: Option<Rebase>) -> io::Result<usize> {
        let mut paths: Vec<_> = std::fs::read_dir(dir)?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
            .collect();
        paths.sort();
        let files = paths.iter().map(|path| Ok((path.clone(), std::fs::read_to_string(path)?))).collect::<io::Result<Vec<_>>>()?;
        self.load_files(&files, rebase)
    }

    /// [`ArgoSim::load_dir`] on files already read: `(name, text)`, in the order given (the
    /// sample fleet compiled into `medic`, say).
    pub fn load_files(&self, files: &[(std::path::PathBuf, String)], rebase: Option<Rebase>) -> io::Result<usize> {
        let mut apps = Vec::new();
        for (path, text) in files {
            let value: Value = serde_json::from_str(text).map_err(|e| invalid(path, &e))?;
            match value.get("items").and_then(Value::as_array) {
                Some(items) if !has_name(&value) => {
                    apps.extend(items.iter().map(|app| (path.clone(), app.clone())));
                }
                _ => apps.push((path.clone(), value)),
            }
        }
        // Validate everything before storing anything, so a bad file leaves the store as it was.
        if let Some((path, _)) = apps.iter().find(|(_, app)| !has_name(app)) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{}: an Application without metadata.name", path.display())));
        }
        let mut store = self.shared.store.lock();
        let count = apps.len();
        for (_, mut app) in apps {
            if let Some(rebase) = rebase {
                rebase.apply(&mut app);
            }
            self.shared.behaviour.stored(&mut app);
            store.insert(app).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        }
        Ok(count)
    }

    /// Removes an app, as a finished deletion does; true when it existed.
    pub fn remove_app(&self, namespace: &str, name: &str) -> bool {
        self.shared.store.lock().remove(&AppKey::new(namespace, name)).is_some()
    }

    /// The stored Application, as the controller has left it.
    pub fn app(&self, namespace: &str, name: &str) -> Option<Value> {
        self.shared.store.lock().get(&AppKey::new(namespace, name)).cloned()
    }

    /// Every change of an app between calm (Synced and Healthy) and in trouble so far, in order.
    pub fn trouble_log(&self) -> Vec<crate::state::TroubleMark> {
        self.shared.store.lock().trouble_log()
    }

    /// Scripts what refresh and sync do to the app called `name` (in any namespace).
    /// The metadata `GET .../revisions/{revision}/metadata` answers for a Git revision: its
    /// author date, author and message (a revision not set is unknown: 404).
    pub fn set_revision_metadata(&self, revision: &str, date: chrono::DateTime<chrono::Utc>, message: &str) {
        let metadata = serde_json::json!({
            "author": "Jane Doe <jane@example.com>",
            "date": date.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "message": message,
        });
        self.shared.store.lock().set_revision_metadata(revision, metadata);
    }

    pub fn set_outcomes(&self, name: &str, outcomes: Outcomes) {
        self.shared.store.lock().set_outcomes(name, outcomes);
    }

    /// Loads outcomes from a JSON file `{"<app name>": Outcomes}`. Returns how many.
    pub fn load_outcomes(&self, file: &Path) -> io::Result<usize> {
        self.load_outcomes_text(&std::fs::read_to_string(file)?, file)
    }

    /// [`ArgoSim::load_outcomes`] on a file already read; `file` names it in errors.
    pub fn load_outcomes_text(&self, text: &str, file: &Path) -> io::Result<usize> {
        let all: HashMap<String, Outcomes> = serde_json::from_str(text).map_err(|e| invalid(file, &e))?;
        let mut store = self.shared.store.lock();
        for (name, outcomes) in &all {
            store.set_outcomes(name, outcomes.clone());
        }
        Ok(all.len())
    }

    /// Queues a fault (see [`Fault`]).
    pub fn inject(&self, fault: Fault) {
        self.shared.faults.lock().push(fault);
    }

    /// `(method, path?query)` of every request so far, in the order they arrived (a held or
    /// dropped request too, before it is answered).
    pub fn arrivals(&self) -> Vec<(String, String)> {
        self.shared.arrivals.lock().clone()
    }

    /// Every request so far, in the order they were answered.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.shared.log.lock().clone()
    }

    /// Forgets the logged requests and resets [`ArgoSim::counts`], to start a new phase of a test.
    pub fn clear_requests(&self) {
        self.shared.log.lock().clear();
        *self.shared.counts.lock() = CallCounts::default();
    }

    /// Replaces the deny windows active now: a window opening holds the syncs running in its
    /// project (see [`crate::SyncWindowRule`]), and new syncs are refused.
    pub fn set_sync_windows(&self, windows: Vec<crate::config::SyncWindowRule>) {
        *self.shared.sync_windows.lock() = windows;
    }

    /// The application informer's resync, which the controller gets every
    /// `timeout.reconciliation`: each app compared longer ago than [`RECONCILIATION_TIMEOUT`] and
    /// with no operation is compared again, as its scripted `refresh` says (a `drop` is the refresh
    /// annotation's loss, so here it is a compare that finds nothing new). The releases that
    /// skipped resync events (v3.3.7 among the profiles, argoproj/argo-cd#27344) compare nothing.
    /// A source that cannot be compared (`Outcomes::comparison_error`) is recorded at once, as a
    /// compare past the repo error grace (180 s by default) records it.
    /// Returns the names of the apps compared.
    pub fn resync(&self) -> Vec<String> {
        if !self.shared.behaviour.resync_compares() {
            return Vec::new();
        }
        let now = Utc::now();
        let expired = now - chrono::TimeDelta::from_std(RECONCILIATION_TIMEOUT).unwrap_or_default();
        let mut store = self.shared.store.lock();
        let due: Vec<(AppKey, String)> = store
            .apps()
            .filter(|app| app.get("operation").is_none_or(Value::is_null))
            .filter(|app| {
                crate::json::str_at(app, "status.reconciledAt")
                    .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                    .is_none_or(|t| t.with_timezone(&Utc) < expired)
            })
            .filter_map(|app| {
                let name = crate::json::str_at(app, "metadata.name")?.to_string();
                let namespace = crate::json::str_at(app, "metadata.namespace").unwrap_or("argocd");
                Some((AppKey::new(namespace, &name), name))
            })
            .collect();
        for (key, name) in &due {
            let outcomes = store.outcomes(name);
            let outcome = match outcomes.refresh {
                RefreshOutcome::Drop => RefreshOutcome::Noop,
                other => other,
            };
            let error = outcomes.comparison_error.as_deref();
            if store.get_mut(key).is_some_and(|app| controller::refresh(app, outcome, error, now)) {
                store.touch(key);
            }
        }
        due.into_iter().map(|(_, name)| name).collect()
    }

    /// Replaces the accepted tokens, as rotating the account's token does: requests with a token
    /// not in `tokens` are answered 401 from now on.
    pub fn set_tokens(&self, tokens: Vec<crate::config::TokenGrant>) {
        *self.shared.tokens.lock() = tokens;
    }

    /// Calls per endpoint since start (or the last [`ArgoSim::clear_requests`]).
    pub fn counts(&self) -> CallCounts {
        *self.shared.counts.lock()
    }

    /// Stops accepting, closes open connections and stops controller tasks.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
        self.abort_tasks();
    }

    fn abort_tasks(&self) {
        for task in self.shared.tasks.lock().drain(..) {
            task.abort();
        }
    }
}

impl Drop for ArgoSim {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        self.abort_tasks();
    }
}

fn has_name(app: &Value) -> bool {
    app.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).is_some_and(|n| !n.is_empty())
}

fn invalid(path: &Path, error: &serde_json::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{}: {error}", path.display()))
}

/// `""` stays empty; `argocd/` becomes `/argocd`.
fn normalise_root(root: &str) -> String {
    let trimmed = root.trim_matches('/');
    match trimmed.is_empty() {
        true => String::new(),
        false => format!("/{trimmed}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_paths_are_normalised() {
        assert_eq!(normalise_root(""), "");
        assert_eq!(normalise_root("/"), "");
        assert_eq!(normalise_root("argocd/"), "/argocd");
        assert_eq!(normalise_root("/argocd"), "/argocd");
    }
}
