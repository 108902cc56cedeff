//! `GET /api/v1/applications`: filters, RBAC and the `fields` whitelist.

use medic_sim::{Policy, SimConfig, TokenGrant, token_for};
use serde_json::{Value, json};

use crate::support::{Api, app, error_body};

fn names(body: &Value) -> Vec<String> {
    body["items"].as_array().expect("items").iter().map(|i| i["metadata"]["name"].as_str().unwrap_or_default().to_string()).collect()
}

async fn fleet() -> Api {
    let mut staging = app("checkout", "team-b");
    staging["metadata"]["labels"]["env"] = json!("staging");
    let mut other_repo = app("billing", "team-c");
    other_repo["spec"]["source"]["repoURL"] = json!("https://git.example.com/billing.git");
    let mut unlabelled = app("zeta", "team-a");
    unlabelled["metadata"].as_object_mut().expect("metadata").remove("labels");
    let mut elsewhere = app("web", "team-a");
    elsewhere["metadata"]["namespace"] = json!("tenants");
    let mut config = SimConfig::default();
    config.tokens.push(TokenGrant::for_subject("team-a-bot"));
    config.policies.push(Policy::new("team-a-bot", "get", "team-a"));
    Api::with_apps(config, vec![app("web", "team-a"), staging, other_repo, unlabelled, app("api", "team-b"), elsewhere]).await
}

#[tokio::test]
async fn list_returns_every_app_sorted_by_name_with_a_list_resource_version() {
    let api = fleet().await;
    let answer = api.get("/api/v1/applications").await;
    assert_eq!(answer.status, 200);
    assert_eq!(names(&answer.body), ["api", "billing", "checkout", "web", "web", "zeta"]);
    let version = answer.body["metadata"]["resourceVersion"].as_str().expect("resourceVersion");
    assert!(version.parse::<u64>().is_ok_and(|v| v >= 1000), "{version}");
    assert_eq!(answer.body["items"][0]["spec"], app("api", "team-b")["spec"], "items are full objects");
    assert_eq!(api.sim.counts().list, 1);
}

#[tokio::test]
async fn list_filters_by_project_name_repo_and_namespace() {
    let api = fleet().await;
    let by_projects = api.get("/api/v1/applications?projects=team-b&project=team-c").await;
    assert_eq!(names(&by_projects.body), ["api", "billing", "checkout"]);
    let by_name = api.get("/api/v1/applications?name=web").await;
    assert_eq!(names(&by_name.body), ["web", "web"]);
    let by_namespace = api.get("/api/v1/applications?name=web&appNamespace=tenants").await;
    assert_eq!(by_namespace.body["items"][0]["metadata"]["namespace"], "tenants");
    assert_eq!(names(&by_namespace.body), ["web"]);
    let repo = "https%3A%2F%2Fgit.example.com%2Fbilling.git";
    let by_repo = api.get(&format!("/api/v1/applications?repo={repo}")).await;
    assert_eq!(names(&by_repo.body), ["billing"]);
    let nothing = api.get("/api/v1/applications?projects=nobody").await;
    assert_eq!(nothing.body["items"], json!([]));
}

#[tokio::test]
async fn list_filters_by_label_selector_and_rejects_a_malformed_one_with_500() {
    let api = fleet().await;
    let prod = api.get("/api/v1/applications?selector=env%3Dprod").await;
    assert_eq!(names(&prod.body), ["api", "billing", "web", "web"]);
    let not_prod = api.get("/api/v1/applications?selector=env!%3Dprod").await;
    assert_eq!(names(&not_prod.body), ["checkout", "zeta"]);
    let no_env = api.get("/api/v1/applications?selector=!env").await;
    assert_eq!(names(&no_env.body), ["zeta"]);
    let both = api.get("/api/v1/applications?selector=env%3D%3Dprod,team%3Dteam-b").await;
    assert_eq!(names(&both.body), ["api"]);
    let has_env = api.get("/api/v1/applications?selector=env").await;
    assert_eq!(names(&has_env.body).len(), 5);

    let malformed = api.get("/api/v1/applications?selector=env%3Dprod%3Dx").await;
    assert_eq!(malformed.status, 500);
    assert_eq!(malformed.body, error_body(2, "error parsing the selector: found '=', expected: ',' or 'end of string'"));
}

#[tokio::test]
async fn list_silently_omits_apps_the_subject_may_not_get() {
    let api = fleet().await;
    let answer = api.get_as("/api/v1/applications", Some(&token_for("team-a-bot"))).await;
    assert_eq!(answer.status, 200);
    assert_eq!(names(&answer.body), ["web", "web", "zeta"]);
    let forbidden_project = api.get_as("/api/v1/applications?projects=team-b", Some(&token_for("team-a-bot"))).await;
    assert_eq!(forbidden_project.status, 200);
    assert_eq!(forbidden_project.body["items"], json!([]));
}

#[tokio::test]
async fn list_fields_keep_only_whitelisted_item_paths() {
    let api = fleet().await;
    let fields = "items.metadata.name,items.status.sync.status,items.status.health,items.metadata.resourceVersion,metadata.labels";
    let answer = api.get(&format!("/api/v1/applications?projects=team-b&fields={fields}")).await;
    assert_eq!(answer.status, 200);
    let health = app("api", "team-b")["status"]["health"].clone();
    assert_eq!(
        answer.body["items"][0],
        json!({"metadata": {"name": "api"}, "status": {"sync": {"status": "Synced"}, "health": health}}),
        "resourceVersion is not whitelisted and the un-prefixed name is ignored"
    );
    assert!(answer.body["metadata"]["resourceVersion"].is_string());

    let sync_result = api.get("/api/v1/applications?name=api&fields=items.status.operationState.operation.sync").await;
    assert_eq!(
        sync_result.body["items"][0]["status"]["operationState"]["operation"]["sync"],
        app("api", "team-b")["status"]["operationState"]["syncResult"],
        "this key returns the syncResult"
    );

    let excluded = api.get("/api/v1/applications?name=api&fields=-items.spec,items.status").await;
    let item = &excluded.body["items"][0];
    assert_eq!(item["metadata"]["name"], "api");
    assert!(item["metadata"].get("resourceVersion").is_none(), "exclusion keeps whitelisted fields only");
    assert_eq!(item["metadata"]["annotations"], Value::Null, "absent maps come back as Go's null");
    assert_eq!(item["spec"]["project"], "team-b", "spec.project is its own whitelist entry");
    assert_eq!(item["status"]["operationState"]["phase"], "Succeeded");
}
