//! What differs between the Argo CD releases the simulator serves (`PROFILE_VERSIONS`): retries and
//! their messages, `retry.refresh`, resource health on List, the invalid-tasks message, sync
//! windows' `syncOverrun`, and the informer's resync (docs/argo-cd-versions.md).

use std::time::Duration;

use medic_sim::{InvalidTask, Outcomes, PROFILE_VERSIONS, RefreshOutcome, SimConfig, SyncOutcome, SyncWindowRule};
use serde_json::{Value, json};

use crate::support::{Api, REVISION, app};

/// The profile's release as `(major, minor)`.
fn minor_of(version: &str) -> (u64, u64) {
    let mut parts = version.trim_start_matches('v').split(['.', '+']);
    let major = parts.next().and_then(|p| p.parse().ok()).expect("a major");
    let minor = parts.next().and_then(|p| p.parse().ok()).expect("a minor");
    (major, minor)
}

async fn serving(version: &str, apps: Vec<Value>) -> Api {
    let mut config = SimConfig { version: version.to_owned(), operation_duration: Duration::from_millis(300), ..SimConfig::default() };
    // The projects' windows are read too (`syncOverrun` is a field of the AppProject's window).
    config.policies.push(medic_sim::Policy::projects(medic_sim::DEFAULT_SUBJECT, "get", "*"));
    Api::with_apps(config, apps).await
}

fn state(app: &Value) -> &Value {
    &app["status"]["operationState"]
}

/// An app no auto-sync owns (so a sync may name any revision), retried as `retry` says.
fn manual_app(name: &str, retry: Value) -> Value {
    let mut app = app(name, "team-a");
    app["spec"]["syncPolicy"] = json!({"retry": retry});
    app
}

#[tokio::test]
async fn a_failed_attempt_is_retried_and_each_release_words_the_retry_its_own_way() {
    for version in PROFILE_VERSIONS {
        let api = serving(version, vec![manual_app("web", json!({"limit": 1}))]).await;
        api.sim.set_outcomes("web", Outcomes { sync: SyncOutcome::Fail { message: "boom".into() }, ..Outcomes::default() });
        assert_eq!(api.sync("web", json!({})).await.status, 200);

        let scheduled = api.wait_for("web", "the retry to be scheduled", |a| state(a)["retryCount"] == 1).await;
        let message = state(&scheduled)["message"].as_str().unwrap_or_default().to_owned();
        assert_eq!(state(&scheduled)["phase"], "Running", "{version}: a retry is still the running operation");
        assert!(state(&scheduled)["finishedAt"].is_string(), "{version}: the failed attempt's end is kept");
        let blames_timeout = minor_of(version) < (3, 2);
        let expected = if blames_timeout {
            "boom due to application controller sync timeout. Retrying attempt #1 at "
        } else {
            "boom. Retrying attempt #1 at "
        };
        assert!(message.starts_with(expected), "{version}: {message}");
        assert!(message.ends_with("M."), "{version}: the time is Go's Kitchen: {message}");

        let retrying =
            api.wait_for("web", "the retry to start", |a| state(a)["retryCount"] == 1 && state(a).get("finishedAt").is_none()).await;
        let started = state(&retrying)["message"].as_str().unwrap_or_default();
        match blames_timeout {
            true => assert_eq!(started, message, "{version}: the retry leaves the message"),
            false => assert_eq!(started, "Retrying operation. Attempt #1", "{version}"),
        }

        let done = api.wait_for("web", "the retries to run out", |a| state(a)["phase"] == "Failed").await;
        let last = state(&done)["message"].as_str().unwrap_or_default();
        assert_eq!(last, "boom (retried 1 times).", "{version}");
        assert!(done.get("operation").is_none(), "{version}");
    }
}

#[tokio::test]
async fn a_retry_syncs_the_latest_revision_with_retry_refresh_which_releases_before_3_2_do_not_keep() {
    let bad = "badbadbadbadbadbadbadbadbadbadbadbadbad0";
    for version in PROFILE_VERSIONS {
        let mut web = manual_app("web", json!({"limit": 1, "refresh": true}));
        // Git has moved past the bad commit: the comparison holds the fix.
        web["status"]["sync"]["revision"] = json!(REVISION);
        let api = serving(version, vec![web]).await;
        let keeps_refresh = minor_of(version) >= (3, 2);
        let stored = api.app("web");
        assert_eq!(stored["spec"]["syncPolicy"]["retry"].get("refresh").is_some(), keeps_refresh, "{version}: {stored:#}");

        api.sim.set_outcomes(
            "web",
            Outcomes { sync: SyncOutcome::FailRevision { revision: bad.into(), message: "boom".into() }, ..Default::default() },
        );
        assert_eq!(api.sync("web", json!({"revision": bad})).await.status, 200);
        let retrying =
            api.wait_for("web", "the retry to start", |a| state(a)["retryCount"] == 1 && state(a).get("finishedAt").is_none()).await;
        let done = api.wait_for("web", "the operation to end", |a| a.get("operation").is_none() && state(a)["phase"] != "Running").await;
        if keeps_refresh {
            assert_eq!(state(&retrying)["message"], "Retrying operation with latest revisions. Attempt #1", "{version}");
            assert!(state(&retrying)["operation"]["sync"].get("revision").is_none(), "{version}: the pinned revision is dropped");
            assert_eq!(state(&done)["phase"], "Succeeded", "{version}");
            assert_eq!(state(&done)["syncResult"]["revision"], REVISION, "{version}: the retry synced the latest revision");
        } else {
            assert_eq!(state(&retrying)["operation"]["sync"]["revision"], bad, "{version}: every retry repeats the revision");
            assert_eq!(state(&done)["phase"], "Failed", "{version}");
            assert_eq!(state(&done)["message"], "boom (retried 1 times).", "{version}");
        }
    }
}

#[tokio::test]
async fn list_carries_the_resources_health_only_before_3_0_and_get_always_does() {
    for version in PROFILE_VERSIONS {
        let mut web = app("web", "team-a");
        web["status"]["resources"][0]["health"] = json!({"status": "Degraded", "message": "back-off"});
        let api = serving(version, vec![web]).await;
        let listed = api.get("/api/v1/applications").await.body;
        let masked = api.get("/api/v1/applications?fields=items.metadata.name,items.status.resources").await.body;
        let got = api.get("/api/v1/applications/web").await.body;
        let persisted = minor_of(version).0 < 3;
        for items in [&listed, &masked] {
            let health = &items["items"][0]["status"]["resources"][0]["health"];
            assert_eq!(health.is_object(), persisted, "{version}: {items:#}");
        }
        assert_eq!(got["status"]["resources"][0]["health"]["status"], "Degraded", "{version}: Get fills it from the tree");
    }
}

#[tokio::test]
async fn the_invalid_tasks_are_named_in_the_operation_message_from_3_5() {
    let task = |kind: &str, message: &str| InvalidTask {
        group: "monitoring.coreos.com".into(),
        version: "v1".into(),
        kind: kind.into(),
        namespace: "web".into(),
        name: "metrics".into(),
        message: message.into(),
    };
    let missing = "The Kubernetes API could not find monitoring.coreos.com/ServiceMonitor for requested resource web/metrics. Make sure the \"ServiceMonitor\" CRD is installed on the destination cluster.";
    let tasks = vec![task("ServiceMonitor", missing), task("PrometheusRule", "a"), task("ServiceMonitor", missing)];
    for version in PROFILE_VERSIONS {
        let api = serving(version, vec![manual_app("web", json!({}))]).await;
        api.sim.set_outcomes("web", Outcomes { sync: SyncOutcome::InvalidTasks { tasks: tasks.clone() }, ..Default::default() });
        assert_eq!(api.sync("web", json!({})).await.status, 200);
        let done = api.wait_for("web", "the sync to fail", |a| state(a)["phase"] == "Failed").await;
        let expected = match minor_of(version) >= (3, 5) {
            true => format!("one or more synchronization tasks are not valid: {missing}; a"),
            false => "one or more synchronization tasks are not valid".to_owned(),
        };
        assert_eq!(state(&done)["message"], json!(expected), "{version}");
        let results = state(&done)["syncResult"]["resources"].as_array().cloned().unwrap_or_default();
        assert_eq!(results.len(), 3, "{version}");
        assert!(results.iter().all(|r| r["status"] == "SyncFailed" && r["syncPhase"] == "Sync"), "{version}: {results:?}");
        assert_eq!(results[0]["message"], missing, "{version}: the cause is in the resource, on every release");
    }
}

#[tokio::test]
async fn a_deny_window_opening_holds_a_running_sync_unless_it_allows_the_overrun_from_3_5() {
    for version in PROFILE_VERSIONS {
        let api = serving(version, vec![manual_app("web", json!({}))]).await;
        assert_eq!(api.sync("web", json!({})).await.status, 200);
        api.sim.set_sync_windows(vec![SyncWindowRule { project: "team-a".into(), manual_sync: false, sync_overrun: true, active: true }]);
        let overrun = minor_of(version) >= (3, 5);
        let project = api.get("/api/v1/projects/team-a/syncwindows").await.body;
        assert_eq!(project["windows"][0].get("syncOverrun").is_some(), overrun, "{version}: {project}");
        // The app's own windows carry four fields on every release (application.go:2932 at v3.5.1).
        let windows = api.get("/api/v1/applications/web/syncwindows").await.body;
        assert!(windows["activeWindows"][0].get("syncOverrun").is_none(), "{version}: {windows}");
        if overrun {
            let done = api.wait_for("web", "the sync to go on", |a| state(a)["phase"] == "Succeeded").await;
            assert!(done.get("operation").is_none(), "{version}");
            continue;
        }
        let held = api.wait_for("web", "the window to hold it", |a| state(a)["message"] == "Sync operation blocked by sync window").await;
        assert_eq!(state(&held)["phase"], "Running", "{version}");
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert_eq!(state(&api.app("web"))["phase"], "Running", "{version}: held while the window is open");
        api.sim.set_sync_windows(Vec::new());
        api.wait_for("web", "the sync to end once the window closes", |a| state(a)["phase"] == "Succeeded").await;
    }
}

#[tokio::test]
async fn a_window_without_the_overrun_holds_a_running_sync_on_every_release() {
    let api = serving("v3.5.1+109ca7c", vec![manual_app("web", json!({}))]).await;
    assert_eq!(api.sync("web", json!({})).await.status, 200);
    api.sim.set_sync_windows(vec![SyncWindowRule { project: "team-a".into(), manual_sync: false, sync_overrun: false, active: true }]);
    let held = api.wait_for("web", "the window to hold it", |a| state(a)["message"] == "Sync operation blocked by sync window").await;
    assert_eq!(state(&held)["phase"], "Running");
    let refused = api.sync("web", json!({})).await;
    assert_eq!((refused.status, refused.body["message"].as_str()), (403, Some("cannot sync: blocked by sync window")));
}

#[tokio::test]
async fn the_resync_compares_expired_apps_except_at_the_releases_that_skipped_it() {
    for version in PROFILE_VERSIONS {
        let mut stale = app("stale", "team-a");
        stale["status"]["health"] = json!({"status": "Progressing", "lastTransitionTime": "2026-01-01T00:10:00Z"});
        let mut fresh = app("fresh", "team-a");
        fresh["status"]["reconciledAt"] = json!(chrono::Utc::now().to_rfc3339());
        let api = serving(version, vec![stale, fresh]).await;
        api.sim.set_outcomes("stale", Outcomes { refresh: RefreshOutcome::Heal, ..Default::default() });
        let compared = api.sim.resync();
        if version.starts_with("v3.3.7") {
            assert!(compared.is_empty(), "{version}: #25290 skipped resync events (#27344)");
            assert_eq!(api.app("stale")["status"]["health"]["status"], "Progressing", "{version}");
        } else {
            assert_eq!(compared, ["stale"], "{version}: only the expired comparison");
            assert_eq!(api.app("stale")["status"]["health"]["status"], "Healthy", "{version}");
        }
    }
}
