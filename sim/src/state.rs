//! The simulated cluster: Applications as raw JSON, their scripted outcomes, and the
//! resourceVersion clock.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::json::{object_at, str_at};
use crate::outcomes::Outcomes;
use crate::rbac::CONTROL_PLANE_NAMESPACE;

/// Apps are keyed like Kubernetes objects: namespace, then name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct AppKey {
    pub(crate) namespace: String,
    pub(crate) name: String,
}

impl AppKey {
    pub(crate) fn new(namespace: &str, name: &str) -> Self {
        AppKey { namespace: namespace.to_string(), name: name.to_string() }
    }
}

/// Why an object cannot be stored as an Application.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum InsertError {
    #[error("the Application has no metadata.name")]
    NoName,
}

#[derive(Debug, Default)]
pub(crate) struct Store {
    apps: BTreeMap<AppKey, Value>,
    outcomes: HashMap<String, Outcomes>,
    /// Git revisions' metadata (`v1alpha1RevisionMetadata`), by revision.
    revisions: HashMap<String, Value>,
    /// Last resourceVersion handed out; every write takes the next one, as etcd's revision does.
    resource_version: u64,
    /// Identity of the operation (or termination) currently owning each app, so a background
    /// finisher never overwrites a newer operation's state.
    owners: HashMap<AppKey, u64>,
    next_owner: u64,
    /// Every change of an app between calm (Synced and Healthy) and in trouble, in order: what a
    /// harness holds a close against ("was the app still in trouble when it was closed?").
    trouble_log: Vec<TroubleMark>,
    last_trouble: HashMap<AppKey, bool>,
}

/// An app became calm or in trouble at `at` (by a write of the API, the controller or the test).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TroubleMark {
    pub namespace: String,
    pub name: String,
    pub at: chrono::DateTime<chrono::Utc>,
    /// True: not both Synced and Healthy from `at` on.
    pub in_trouble: bool,
}

/// True unless the app is both Synced and Healthy.
pub(crate) fn in_trouble(app: &Value) -> bool {
    !(str_at(app, "status.sync.status") == Some("Synced") && str_at(app, "status.health.status") == Some("Healthy"))
}

impl Store {
    /// Stores `app` under its `metadata.namespace` (default `argocd`) and `metadata.name`.
    pub(crate) fn insert(&mut self, mut app: Value) -> Result<AppKey, InsertError> {
        let name = str_at(&app, "metadata.name").filter(|n| !n.is_empty()).ok_or(InsertError::NoName)?;
        let name = name.to_string();
        let namespace = match str_at(&app, "metadata.namespace").filter(|n| !n.is_empty()) {
            Some(ns) => ns.to_string(),
            None => {
                object_at(&mut app, &["metadata"]).insert("namespace".into(), Value::String(CONTROL_PLANE_NAMESPACE.into()));
                CONTROL_PLANE_NAMESPACE.to_string()
            }
        };
        if let Some(rv) = str_at(&app, "metadata.resourceVersion").and_then(|v| v.parse::<u64>().ok()) {
            self.resource_version = self.resource_version.max(rv);
        }
        let key = AppKey { namespace, name };
        self.owners.remove(&key);
        self.apps.insert(key.clone(), app);
        self.mark(&key);
        Ok(key)
    }

    /// Logs `key`'s trouble when it differs from the last mark.
    fn mark(&mut self, key: &AppKey) {
        let Some(app) = self.apps.get(key) else { return };
        let now = in_trouble(app);
        if self.last_trouble.insert(key.clone(), now) != Some(now) {
            let mark = TroubleMark { namespace: key.namespace.clone(), name: key.name.clone(), at: chrono::Utc::now(), in_trouble: now };
            self.trouble_log.push(mark);
        }
    }

    pub(crate) fn trouble_log(&self) -> Vec<TroubleMark> {
        self.trouble_log.clone()
    }

    pub(crate) fn remove(&mut self, key: &AppKey) -> Option<Value> {
        self.apps.remove(key)
    }

    pub(crate) fn get(&self, key: &AppKey) -> Option<&Value> {
        self.apps.get(key)
    }

    pub(crate) fn get_mut(&mut self, key: &AppKey) -> Option<&mut Value> {
        self.apps.get_mut(key)
    }

    pub(crate) fn apps(&self) -> impl Iterator<Item = &Value> {
        self.apps.values()
    }

    pub(crate) fn set_outcomes(&mut self, name: &str, outcomes: Outcomes) {
        self.outcomes.insert(name.to_string(), outcomes);
    }

    pub(crate) fn outcomes(&self, name: &str) -> Outcomes {
        self.outcomes.get(name).cloned().unwrap_or_default()
    }

    pub(crate) fn revision_metadata(&self, revision: &str) -> Option<Value> {
        self.revisions.get(revision).cloned()
    }

    pub(crate) fn set_revision_metadata(&mut self, revision: &str, metadata: Value) {
        self.revisions.insert(revision.to_owned(), metadata);
    }

    /// True when the app's next sync is one to lose ([`Outcomes::lost_syncs`]), counting it.
    pub(crate) fn take_lost_sync(&mut self, name: &str) -> bool {
        match self.outcomes.get_mut(name) {
            Some(o) if o.lost_syncs > 0 => {
                o.lost_syncs -= 1;
                true
            }
            _ => false,
        }
    }

    /// The List `metadata.resourceVersion`: the latest write.
    pub(crate) fn list_version(&self) -> String {
        self.resource_version.to_string()
    }

    /// Records a write to `key`: the app gets a new `metadata.resourceVersion`.
    pub(crate) fn touch(&mut self, key: &AppKey) {
        self.resource_version += 1;
        let version = Value::String(self.resource_version.to_string());
        if let Some(app) = self.apps.get_mut(key) {
            object_at(app, &["metadata"]).insert("resourceVersion".into(), version);
        }
        self.mark(key);
    }

    /// Makes a new owner of `key`'s operation slot and returns its identity.
    pub(crate) fn claim(&mut self, key: &AppKey) -> u64 {
        self.next_owner += 1;
        self.owners.insert(key.clone(), self.next_owner);
        self.next_owner
    }

    /// Whether `owner` still owns `key`'s operation slot.
    pub(crate) fn owns(&self, key: &AppKey, owner: u64) -> bool {
        self.owners.get(key) == Some(&owner)
    }

    pub(crate) fn release(&mut self, key: &AppKey, owner: u64) {
        if self.owns(key, owner) {
            self.owners.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inserted_apps_default_to_the_argocd_namespace_and_writes_bump_the_version() {
        let mut store = Store::default();
        let key = store.insert(json!({"metadata": {"name": "web", "resourceVersion": "41"}})).expect("insert");
        assert_eq!(key, AppKey::new("argocd", "web"));
        store.touch(&key);
        let app = store.get(&key).expect("stored");
        assert_eq!(app["metadata"]["resourceVersion"], "42");
        assert_eq!(app["metadata"]["namespace"], "argocd");
        assert_eq!(store.list_version(), "42");
        assert_eq!(store.insert(json!({"spec": {}})), Err(InsertError::NoName));
    }

    #[test]
    fn the_trouble_log_marks_each_change_between_calm_and_trouble_once() {
        let mut store = Store::default();
        let calm = json!({"metadata": {"name": "web"}, "status": {"sync": {"status": "Synced"}, "health": {"status": "Healthy"}}});
        let mut down = calm.clone();
        down["status"]["sync"]["status"] = json!("Unknown");
        let key = store.insert(down.clone()).expect("insert");
        store.touch(&key);
        store.insert(calm.clone()).expect("insert");
        store.insert(calm).expect("insert");
        let marks: Vec<bool> = store.trouble_log().iter().map(|m| m.in_trouble).collect();
        assert_eq!(marks, vec![true, false]);
    }

    #[test]
    fn a_newer_claim_takes_the_slot_from_an_older_one() {
        let mut store = Store::default();
        let key = AppKey::new("argocd", "web");
        let first = store.claim(&key);
        let second = store.claim(&key);
        assert!(!store.owns(&key, first));
        store.release(&key, first);
        assert!(store.owns(&key, second));
    }
}
