//! Sync, terminate, sync windows and the resource tree.

use std::time::Duration;

use medic_sim::{Outcomes, Policy, SimConfig, SyncOutcome, SyncWindowRule, TokenGrant, token_for};
use serde_json::{Value, json};

use crate::support::{Api, REVISION, app, broken_app, error_body};

fn phase(app: &Value) -> &str {
    app["status"]["operationState"]["phase"].as_str().unwrap_or_default()
}

fn idempotent_sync() -> Value {
    json!({
        "prune": false,
        "strategy": {"hook": {"force": false}},
        "syncOptions": {"items": ["ApplyOutOfSyncOnly=true"]},
        "retryStrategy": {"limit": 2, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "2m"}},
        "infos": [{"name": "argo-medic.io/idempotency-key", "value": "am1-0123"}],
        "project": "team-a"
    })
}

#[tokio::test]
async fn a_sync_sets_the_operation_with_its_infos_and_succeeds_after_the_operation_duration() {
    let config = SimConfig { operation_duration: Duration::from_millis(400), ..SimConfig::default() };
    let api = Api::with_apps(config, vec![broken_app("web", "team-a")]).await;
    let answer = api.sync("web", idempotent_sync()).await;
    assert_eq!(answer.status, 200);
    let operation = &answer.body["operation"];
    assert_eq!(operation["info"], json!([{"name": "argo-medic.io/idempotency-key", "value": "am1-0123"}]));
    assert_eq!(operation["initiatedBy"], json!({"username": "argo-medic"}));
    assert_eq!(operation["sync"]["revision"], REVISION);
    assert_eq!(operation["sync"]["syncOptions"], json!(["ApplyOutOfSyncOnly=true"]));
    assert_eq!(operation["sync"]["syncStrategy"], json!({"hook": {}}), "Go re-encodes with omitempty");
    assert!(operation["sync"].get("prune").is_none());
    assert_eq!(operation["retry"]["limit"], 2);
    assert_eq!(phase(&answer.body), "Succeeded", "the answer predates the controller picking it up");

    let running = api.app("web");
    assert_eq!(phase(&running), "Running");
    assert_eq!(running["status"]["operationState"]["operation"]["info"], operation["info"]);

    let done = api.wait_for("web", "the sync to finish", |a| phase(a) == "Succeeded").await;
    let state = &done["status"]["operationState"];
    assert_eq!(state["message"], "successfully synced (all tasks run)");
    assert_eq!(state["syncResult"]["revision"], REVISION);
    assert!(state["finishedAt"].is_string());
    assert_eq!(state["operation"]["info"], operation["info"], "info survives completion");
    assert!(done.get("operation").is_none());
    assert_eq!(done["status"]["sync"]["status"], "Synced");
    assert_eq!(done["status"]["health"]["status"], "Healthy");
    assert!(done["status"].get("conditions").is_none());
    assert_ne!(done["status"]["reconciledAt"], broken_app("web", "team-a")["status"]["reconciledAt"]);
    assert_eq!(api.sim.counts().sync, 1);
}

#[tokio::test]
async fn a_second_sync_while_one_runs_gets_400_another_operation_in_progress() {
    let api = Api::with_apps(SimConfig::default(), vec![app("web", "team-a")]).await;
    api.sim.set_outcomes("web", Outcomes { sync: SyncOutcome::Hang, ..Outcomes::default() });
    assert_eq!(api.sync("web", json!({})).await.status, 200);
    let second = api.sync("web", idempotent_sync()).await;
    assert_eq!(second.status, 400);
    assert_eq!(second.body, error_body(9, "another operation is already in progress"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let app = api.app("web");
    assert_eq!(phase(&app), "Running", "a hanging sync keeps running");
    assert!(app["operation"].is_object());
    assert!(app["operation"].get("info").is_none(), "the first operation is the one kept");
}

#[tokio::test]
async fn a_failing_sync_ends_failed_with_its_message() {
    let api = Api::with_apps(SimConfig::default(), vec![broken_app("web", "team-a")]).await;
    let message = "one or more objects failed to apply, reason: Internal error occurred: failed calling webhook";
    api.sim.set_outcomes("web", Outcomes { sync: SyncOutcome::Fail { message: message.into() }, ..Outcomes::default() });
    assert_eq!(api.sync("web", json!({"prune": true})).await.status, 200);
    let done = api.wait_for("web", "the sync to fail", |a| phase(a) == "Failed").await;
    assert_eq!(done["status"]["operationState"]["message"], message);
    assert!(done.get("operation").is_none());
    assert_eq!(done["status"]["operationState"]["operation"]["sync"]["prune"], true);
    assert_eq!(done["status"]["health"]["status"], "Progressing", "a failed sync heals nothing");
}

#[tokio::test]
async fn a_hanging_sync_is_terminated_to_failed_operation_terminated() {
    let config = SimConfig { operation_duration: Duration::from_millis(600), ..SimConfig::default() };
    let api = Api::with_apps(config, vec![app("web", "team-a")]).await;
    api.sim.set_outcomes("web", Outcomes { sync: SyncOutcome::Hang, ..Outcomes::default() });
    assert_eq!(api.sync("web", json!({})).await.status, 200);
    let answer = api.terminate("web").await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body, json!({}));
    assert_eq!(phase(&api.app("web")), "Terminating");
    let done = api.wait_for("web", "the termination", |a| phase(a) == "Failed").await;
    assert_eq!(done["status"]["operationState"]["message"], "Operation terminated");
    assert!(done.get("operation").is_none());
    assert_eq!(api.sim.counts().terminate, 1);

    let again = api.terminate("web").await;
    assert_eq!(again.status, 400);
    assert_eq!(again.body, error_body(3, "Unable to terminate operation. No operation is in progress"));
}

#[tokio::test]
async fn terminating_needs_the_sync_permission() {
    let mut config = SimConfig::default();
    config.tokens.push(TokenGrant::for_subject("viewer"));
    config.policies.push(Policy::new("viewer", "get", "*"));
    let mut busy = app("web", "team-a");
    busy["operation"] = json!({"sync": {"revision": REVISION}, "initiatedBy": {"username": "someone"}});
    busy["status"]["operationState"]["phase"] = json!("Running");
    let api = Api::with_apps(config, vec![busy]).await;
    let url = api.url("/api/v1/applications/web/operation");
    let request = api.http.delete(url).bearer_auth(token_for("viewer")).header("Content-Type", "application/json");
    let answer = api.send(request).await;
    assert_eq!(answer.status, 403);
    assert_eq!(answer.body, error_body(7, "permission denied"));
    assert_eq!(phase(&api.app("web")), "Running");
}

#[tokio::test]
async fn a_subject_with_get_but_not_sync_gets_the_detailed_denial() {
    let mut config = SimConfig::default();
    config.tokens.push(TokenGrant::for_subject("viewer"));
    config.policies.push(Policy::new("viewer", "get", "team-*"));
    let api = Api::with_apps(config, vec![app("web", "team-a")]).await;
    let answer = api.sync_as("web", json!({}), &token_for("viewer")).await;
    assert_eq!(answer.status, 403);
    assert_eq!(answer.body, error_body(7, "permission denied: applications, sync, team-a/web, sub: viewer, iat: 2026-01-01T00:00:00Z"));
    let missing = api.sync_as("nope", json!({}), &token_for("viewer")).await;
    assert_eq!(missing.body, error_body(7, "permission denied"), "get is checked first, hiding existence");
}

#[tokio::test]
async fn a_sync_window_without_manual_sync_blocks_before_the_sync_permission_is_checked() {
    let mut config = SimConfig {
        sync_windows: vec![
            SyncWindowRule { project: "team-a".into(), manual_sync: false, sync_overrun: false, active: true },
            SyncWindowRule { project: "team-b".into(), manual_sync: true, sync_overrun: false, active: true },
        ],
        ..SimConfig::default()
    };
    config.tokens.push(TokenGrant::for_subject("viewer"));
    config.policies.push(Policy::new("viewer", "get", "*"));
    let api = Api::with_apps(config, vec![app("web", "team-a"), app("api", "team-b"), app("db", "team-c")]).await;

    let blocked = api.sync_as("web", json!({}), &token_for("viewer")).await;
    assert_eq!(blocked.status, 403);
    assert_eq!(blocked.body, error_body(7, "cannot sync: blocked by sync window"));
    assert_eq!(api.sync("web", json!({})).await.body, error_body(7, "cannot sync: blocked by sync window"));
    assert_eq!(api.sync("api", json!({})).await.status, 200, "manualSync windows let manual syncs through");

    let windows = api.get("/api/v1/applications/web/syncwindows").await;
    assert_eq!(windows.status, 200);
    assert_eq!(windows.body["canSync"], false);
    assert_eq!(windows.body["activeWindows"][0]["manualSync"], false);
    assert_eq!(windows.body["activeWindows"][0]["kind"], "deny");
    let manual = api.get("/api/v1/applications/api/syncwindows").await;
    assert_eq!(manual.body["canSync"], true);
    let open = api.get("/api/v1/applications/db/syncwindows").await;
    assert_eq!(open.body, json!({"canSync": true}));
    assert_eq!(api.sim.counts().sync_windows, 3);
}

/// `GET /api/v1/projects` and `/api/v1/projects/{name}/syncwindows`, as `medic freeze list`
/// reads them: every window of a visible project, the active ones apart; an inactive window holds
/// no sync; `projects, get` decides what a token sees.
#[tokio::test]
async fn projects_list_their_sync_windows_and_say_which_are_active_to_whoever_may_get_them() {
    let mut config = SimConfig {
        sync_windows: vec![
            SyncWindowRule::deny("team-a"),
            SyncWindowRule { project: "team-a".into(), manual_sync: true, sync_overrun: false, active: false },
            SyncWindowRule { project: "team-b".into(), manual_sync: false, sync_overrun: false, active: false },
        ],
        ..SimConfig::default()
    };
    config.tokens.push(TokenGrant::for_subject("alice"));
    config.policies.push(Policy::projects("alice", "get", "team-*"));
    let api = Api::with_apps(config, vec![app("web", "team-a"), app("api", "team-b"), app("db", "team-c")]).await;

    let alice = token_for("alice");
    let listed = api.get_as("/api/v1/projects", Some(&alice)).await;
    assert_eq!(listed.status, 200);
    let names: Vec<&str> = listed.body["items"].as_array().unwrap().iter().map(|p| p["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["team-a", "team-b", "team-c"], "`default` is not granted to alice");
    let team_a = &listed.body["items"][0]["spec"]["syncWindows"];
    assert_eq!(team_a.as_array().unwrap().len(), 2);
    assert_eq!(team_a[0]["schedule"], "* * * * *");
    assert_eq!(team_a[1]["schedule"], "0 22 * * *");
    assert!(listed.body["items"][2]["spec"].get("syncWindows").is_none(), "omitempty");

    let active = api.get_as("/api/v1/projects/team-a/syncwindows", Some(&alice)).await;
    assert_eq!(active.body["windows"], json!([team_a[0].clone()]));
    let none = api.get_as("/api/v1/projects/team-b/syncwindows", Some(&alice)).await;
    assert_eq!(none.body, json!({"windows": []}));
    assert_eq!(api.sync("api", json!({})).await.status, 200, "an inactive window holds nothing");

    // Argo Medic's own token may get applications, not projects: it sees none.
    assert_eq!(api.get("/api/v1/projects").await.body["items"], json!([]));
    let denied = api.get("/api/v1/projects/team-a/syncwindows").await;
    assert_eq!(denied.status, 403);
    assert!(denied.body["message"].as_str().unwrap().starts_with("permission denied: projects, get, team-a, sub: "), "{}", denied.body);
    let missing = api.get_as("/api/v1/projects/team-z/syncwindows", Some(&alice)).await;
    assert_eq!(missing.status, 404);
}

#[tokio::test]
async fn sync_with_a_project_in_the_body_gives_404_for_an_app_of_another_project() {
    let api = Api::with_apps(SimConfig::default(), vec![app("web", "team-a")]).await;
    let answer = api.sync("web", json!({"project": "team-b"})).await;
    assert_eq!(answer.status, 404);
    assert_eq!(answer.body, error_body(5, "applications.argoproj.io \"web\" not found"));
    let missing = api.sync("nope", json!({"project": "team-a"})).await;
    assert_eq!(missing.body, error_body(5, "applications.argoproj.io \"nope\" not found"));
}

#[tokio::test]
async fn syncing_a_deleting_app_is_400_application_is_deleting() {
    let mut deleting = app("web", "team-a");
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-02T00:00:00Z");
    let api = Api::with_apps(SimConfig::default(), vec![deleting]).await;
    let answer = api.sync("web", json!({})).await;
    assert_eq!(answer.status, 400);
    assert_eq!(answer.body, error_body(9, "application is deleting"));
}

#[tokio::test]
async fn syncing_another_revision_than_the_automated_target_is_400() {
    let api = Api::with_apps(SimConfig::default(), vec![app("web", "team-a")]).await;
    let answer = api.sync("web", json!({"revision": "release-1"})).await;
    assert_eq!(answer.status, 400);
    assert_eq!(answer.body, error_body(9, "Cannot sync to release-1: auto-sync currently set to main"));
    assert_eq!(api.sync("web", json!({"revision": "main", "dryRun": true})).await.status, 200);
}

#[tokio::test]
async fn the_resource_tree_has_a_node_per_resource_with_inline_refs_and_health() {
    let mut with_health = app("web", "team-a");
    with_health["status"]["resources"][1]["health"] = json!({"status": "Degraded", "message": "x"});
    let api = Api::with_apps(SimConfig::default(), vec![with_health]).await;
    let answer = api.get("/api/v1/applications/web/resource-tree").await;
    assert_eq!(answer.status, 200);
    let nodes = answer.body["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[0]["group"], "apps");
    assert_eq!(nodes[0]["kind"], "Deployment");
    assert_eq!(nodes[0]["name"], "web");
    assert_eq!(nodes[0]["namespace"], "web");
    assert_eq!(nodes[0]["version"], "v1");
    assert!(nodes[0]["uid"].as_str().is_some_and(|u| u.len() == 36));
    assert_eq!(nodes[0]["health"], json!({"status": "Healthy"}));
    assert!(nodes[1].get("group").is_none(), "the core group is omitted");
    assert_eq!(nodes[1]["health"], json!({"status": "Degraded", "message": "x"}));
    assert_eq!(api.sim.counts().resource_tree, 1);
    let hidden = api.get("/api/v1/applications/nope/resource-tree").await;
    assert_eq!(hidden.status, 403);
}
