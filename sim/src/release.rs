//! What differs between the Argo CD releases the simulator serves (`SimConfig::version`), each
//! difference cited at its tag in argoproj/argo-cd. docs/argo-cd-versions.md has the table, and
//! `medic_core::versions::PROFILES` the same rows as Argo Medic knows them. Everything the
//! simulator does that is not asked of a [`Behaviour`] is the same at every version.

use serde_json::Value;

use crate::json::{lookup, object_at};

/// `(major, minor, patch)` of an Argo CD release.
pub(crate) type Release = (u64, u64, u64);

/// `(major, minor, patch)` of a version string such as `v3.5.1+109ca7c` (the newest when it is
/// none).
pub(crate) fn release_of(version: &str) -> Release {
    let core = version.trim().trim_start_matches('v').split(['+', '-']).next().unwrap_or_default();
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    match (parts.next().flatten(), parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor), patch) => (major, minor, patch.unwrap_or(0)),
        _ => (u64::MAX, 0, 0),
    }
}

/// The patches that carried the #25290 change ("prevent automatic refreshes from informer resync
/// and status updates", `isStatusOnlyUpdate` in controller/appcontroller.go, e.g. :2472 and the
/// early returns :2597-2619 at v3.3.7), each reverted by the next patch for the regression
/// #27344 (v3.3.8: `fb727cf7c1`, #27400). Found by the function at every 3.x tag.
const RESYNC_SKIPPED: &[Release] = &[(3, 1, 14), (3, 2, 9), (3, 3, 7)];

/// How the served release behaves where releases differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Behaviour {
    release: Release,
}

impl Behaviour {
    pub(crate) fn of(version: &str) -> Self {
        Behaviour { release: release_of(version) }
    }

    /// `spec.syncPolicy.retry.refresh` exists (`RetryStrategy.Refresh`, types.go:1550 at v3.5.1;
    /// 5a8b427322, #23038, first in v3.2.0). An older API server decodes the app into a
    /// `RetryStrategy` without it (types.go:1449 at v2.14.21, :1462 at v3.1.16), so it is gone
    /// once stored, and a sync request's `retryStrategy.refresh` is dropped the same way.
    pub(crate) fn retry_refresh(self) -> bool {
        self.release >= (3, 2, 0)
    }

    /// A failed attempt that will be retried says `<msg>. Retrying attempt #N at 3:04PM.`, and the
    /// retry, when it starts, `Retrying operation[ with latest revisions]. Attempt #N`
    /// (controller/appcontroller.go:1631 and :1575 at v3.5.1, :1567 and :1511 at v3.3.7; from
    /// 65a082b12c, #24020, first in v3.2.0). Before, every failure to be retried said `<msg> due
    /// to application controller sync timeout. Retrying attempt #N at 3:04PM.` whatever failed,
    /// and the retry left the message as it was (:1479 and :1482 at v2.14.21, :1486 at v3.1.16).
    pub(crate) fn names_the_retry(self) -> bool {
        self.release >= (3, 2, 0)
    }

    /// `status.resources[].health` is kept in the Application: `--persist-resource-health`
    /// defaults to true in 2.x (cmd/argocd-application-controller/commands/
    /// argocd_application_controller.go:283 at v2.14.21) and to false from v3.0.0 (:290 at
    /// v3.1.16, :293 at v3.5.1), with `status.resourceHealthSource: appTree`. Then List has no
    /// resource health, and Get fills it from the resource tree
    /// (server/application/application.go `inferResourcesStatusHealth`, on Get, not on List).
    pub(crate) fn persists_resource_health(self) -> bool {
        self.release < (3, 0, 0)
    }

    /// The informer's resync (every `timeout.reconciliation`) makes the controller compare each
    /// app whose comparison has expired: the periodic Git poll (controller/appcontroller.go:2414
    /// at v2.14.21, :2699 at v3.5.1). Not in the patches of [`RESYNC_SKIPPED`].
    pub(crate) fn resync_compares(self) -> bool {
        !RESYNC_SKIPPED.contains(&self.release)
    }

    /// `one or more synchronization tasks are not valid` lists the invalid tasks' messages, sorted
    /// and de-duplicated after `: ` (gitops-engine pkg/sync/sync_context.go:494-499 at v3.5.1,
    /// #27750, first in v3.5.0); before, the bare sentence (:398 at v2.14.21's gitops-engine,
    /// :423 at v3.3.7).
    pub(crate) fn lists_invalid_tasks(self) -> bool {
        self.release >= (3, 5, 0)
    }

    /// A sync window carries `syncOverrun` (types.go:2949 at v3.5.1; 611fcb012c, #25510, first in
    /// v3.5.0): an operation that started while syncs were allowed may go on when a deny window
    /// opens, if every active deny window allows the overrun (`CanSync(isManual, opStart)`,
    /// :3181). Before, a window opening stops every running sync (types.go:2772 `CanSync(isManual)`
    /// at v2.14.21) with `Sync operation blocked by sync window` (controller/sync.go:180).
    pub(crate) fn sync_overrun(self) -> bool {
        self.release >= (3, 5, 0)
    }

    /// The Application as this release's API server stores it: fields its types lack are gone.
    pub(crate) fn stored(self, app: &mut Value) {
        if !self.retry_refresh() {
            forget_retry_refresh(app, &["spec", "syncPolicy", "retry"]);
            forget_retry_refresh(app, &["operation", "retry"]);
        }
    }

    /// The Application as List serves it: from 3.0 without the resources' health.
    pub(crate) fn listed(self, app: &Value) -> Value {
        let mut item = app.clone();
        if !self.persists_resource_health()
            && let Some(Value::Array(resources)) = item.get_mut("status").and_then(|s| s.get_mut("resources"))
        {
            for resource in resources.iter_mut().filter_map(Value::as_object_mut) {
                resource.remove("health");
            }
        }
        item
    }
}

fn forget_retry_refresh(app: &mut Value, path: &[&str]) {
    if lookup(app, &path.join(".")).is_some_and(Value::is_object) {
        object_at(app, path).remove("refresh");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_profile_behaves_as_its_tag() {
        let at = |v: &str| Behaviour::of(v);
        assert_eq!(at("v3.5.1+109ca7c"), Behaviour { release: (3, 5, 1) });
        assert!(!at("v2.14.21").retry_refresh() && !at("v3.1.16").retry_refresh() && at("v3.3.7").retry_refresh());
        assert!(at("v2.14.21").persists_resource_health() && !at("v3.1.16").persists_resource_health());
        assert!(!at("v3.3.7+035e855").resync_compares() && at("v3.3.8").resync_compares() && at("v3.1.16").resync_compares());
        assert!(!at("v3.1.14").resync_compares() && !at("v3.2.9").resync_compares() && at("v3.2.10").resync_compares());
        assert!(!at("v3.3.8").lists_invalid_tasks() && at("v3.5.1").lists_invalid_tasks());
        assert!(!at("v3.3.8").sync_overrun() && at("v3.5.0").sync_overrun());
        assert!(at("no version").sync_overrun(), "an unreadable version is the newest");
    }

    #[test]
    fn an_older_release_forgets_retry_refresh_and_lists_no_resource_health_from_3_0() {
        let app = json!({
            "spec": {"syncPolicy": {"retry": {"limit": -1, "refresh": true}}},
            "status": {"resources": [{"kind": "Deployment", "name": "web", "health": {"status": "Healthy"}}]}
        });
        let mut old = app.clone();
        Behaviour::of("v3.1.16").stored(&mut old);
        assert_eq!(old["spec"]["syncPolicy"]["retry"], json!({"limit": -1}));
        let mut new = app.clone();
        Behaviour::of("v3.3.7").stored(&mut new);
        assert_eq!(new, app);

        assert!(Behaviour::of("v3.1.16").listed(&app)["status"]["resources"][0].get("health").is_none());
        assert_eq!(Behaviour::of("v2.14.21").listed(&app), app);
    }
}
