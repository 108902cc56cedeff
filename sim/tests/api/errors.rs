//! Authentication, RBAC, project rules and request validation, each with Argo CD's exact answer.

use medic_sim::{Policy, SimConfig, TokenGrant, token_for};
use serde_json::json;

use crate::support::{Api, app, error_body};

fn config_with_viewer() -> SimConfig {
    let mut config = SimConfig::default();
    config.tokens.push(TokenGrant::for_subject("viewer"));
    config.tokens.push(TokenGrant { token: token_for("former"), subject: "former".into(), expired: true });
    config.policies.push(Policy::new("viewer", "get", "team-a"));
    config
}

#[tokio::test]
async fn requests_without_a_usable_bearer_token_get_401_no_session_information() {
    let api = Api::with_apps(SimConfig::default(), vec![app("web", "team-a")]).await;
    let url = api.url("/api/v1/applications/web");
    let cases = [
        api.http.get(&url),
        api.http.get(&url).header("Authorization", format!("bearer {}", api.token)),
        api.http.get(&url).header("Authorization", format!("Token {}", api.token)),
        api.http.get(&url).bearer_auth("sim-token"),
        api.http.get(&url).bearer_auth("aaa.bbb.ccc"),
    ];
    for request in cases {
        let answer = api.send(request).await;
        assert_eq!(answer.status, 401);
        assert_eq!(answer.body, error_body(16, "no session information"));
        assert_eq!(answer.content_type, "application/json");
    }
    assert_eq!(api.sim.counts().rejected, 5);
}

#[tokio::test]
async fn an_expired_token_gets_401_invalid_session_token_is_expired() {
    let api = Api::with_apps(config_with_viewer(), vec![app("web", "team-a")]).await;
    let answer = api.get_as("/api/v1/applications", Some(&token_for("former"))).await;
    assert_eq!(answer.status, 401);
    assert_eq!(answer.body, error_body(16, "invalid session: token has invalid claims: token is expired"));
}

#[tokio::test]
async fn version_without_a_token_reveals_only_the_version_and_with_one_every_build_field() {
    let api = Api::start(SimConfig::default()).await;
    let anonymous = api.get_as("/api/version", None).await;
    assert_eq!(anonymous.status, 200);
    assert_eq!(anonymous.body, json!({"Version": "v3.5.1+109ca7c"}));

    let full = api.get("/api/version").await;
    assert_eq!(full.status, 200);
    for key in [
        "Version",
        "BuildDate",
        "GitCommit",
        "GitTag",
        "GitTreeState",
        "GoVersion",
        "Compiler",
        "Platform",
        "KustomizeVersion",
        "HelmVersion",
        "KubectlVersion",
        "JsonnetVersion",
    ] {
        assert!(full.body[key].is_string(), "{key} missing in {}", full.body);
    }
    assert_eq!(full.body["GitTag"], "v3.5.1");
    assert_eq!(api.sim.counts().version, 2);
}

#[tokio::test]
async fn a_missing_app_is_403_without_a_project_and_404_with_an_allowed_one() {
    let api = Api::with_apps(config_with_viewer(), vec![app("web", "team-a"), app("db", "team-b")]).await;
    let missing = api.get("/api/v1/applications/nope").await;
    assert_eq!(missing.status, 403);
    assert_eq!(missing.body, error_body(7, "permission denied"));

    let with_project = api.get("/api/v1/applications/nope?project=team-a").await;
    assert_eq!(with_project.status, 404);
    assert_eq!(with_project.body, error_body(5, "applications.argoproj.io \"nope\" not found"));

    let other_project = api.get("/api/v1/applications/db?projects=team-a").await;
    assert_eq!(other_project.status, 404, "an app of another project is not found, as in the code");
    assert_eq!(other_project.body, error_body(5, "applications.argoproj.io \"db\" not found"));

    let right_project = api.get("/api/v1/applications/db?project=team-b").await;
    assert_eq!(right_project.status, 200);
    assert_eq!(right_project.body["metadata"]["name"], "db");
}

#[tokio::test]
async fn an_app_the_subject_may_not_get_is_403_whether_or_not_it_exists() {
    let api = Api::with_apps(config_with_viewer(), vec![app("web", "team-a"), app("db", "team-b")]).await;
    let viewer = token_for("viewer");
    let allowed = api.get_as("/api/v1/applications/web", Some(&viewer)).await;
    assert_eq!(allowed.status, 200);
    for path in ["/api/v1/applications/db", "/api/v1/applications/db?project=team-b", "/api/v1/applications/nope?project=team-b"] {
        let answer = api.get_as(path, Some(&viewer)).await;
        assert_eq!(answer.status, 403, "{path}");
        assert_eq!(answer.body, error_body(7, "permission denied"), "{path}");
    }
}

#[tokio::test]
async fn get_with_two_projects_is_400_invalid_argument() {
    let api = Api::with_apps(SimConfig::default(), vec![app("web", "team-a")]).await;
    let answer = api.get("/api/v1/applications/web?project=team-a&projects=team-b").await;
    assert_eq!(answer.status, 400);
    assert_eq!(answer.body, error_body(3, "multiple projects specified - the get endpoint accepts either zero or one project"));
}

#[tokio::test]
async fn non_get_requests_without_exactly_application_json_get_415_in_plain_text() {
    let api = Api::with_apps(SimConfig::default(), vec![app("web", "team-a")]).await;
    let sync_url = api.url("/api/v1/applications/web/sync");
    let op_url = api.url("/api/v1/applications/web/operation");
    let cases = [
        api.http.post(&sync_url).bearer_auth(&api.token).body("{}"),
        api.http.post(&sync_url).bearer_auth(&api.token).header("Content-Type", "application/json; charset=utf-8").body("{}"),
        api.http.post(&sync_url).bearer_auth(&api.token).header("Content-Type", "Application/JSON").body("{}"),
        api.http.delete(&op_url).bearer_auth(&api.token),
        // Even without a token: the content-type middleware runs before authentication.
        api.http.post(&sync_url).body("{}"),
    ];
    for request in cases {
        let answer = api.send(request).await;
        assert_eq!(answer.status, 415);
        assert_eq!(answer.body, json!("Invalid content type\n"));
        assert_eq!(answer.content_type, "text/plain; charset=utf-8");
    }
    assert!(api.app("web").get("operation").is_none(), "no sync was started");
    let logged = api.sim.requests();
    assert_eq!(logged[0].response, json!("Invalid content type\n"));
    assert_eq!(logged[0].content_type, None);
}

#[tokio::test]
async fn a_wrongly_typed_sync_body_gets_400_with_the_go_decode_message() {
    let api = Api::with_apps(SimConfig::default(), vec![app("web", "team-a")]).await;
    let answer = api.sync("web", json!({"prune": "true"})).await;
    assert_eq!(answer.status, 400);
    assert_eq!(answer.body, error_body(3, "json: cannot unmarshal string into Go struct field ApplicationSyncRequest.prune of type bool"));
    let nested = api.sync("web", json!({"retryStrategy": {"limit": "2"}})).await;
    assert_eq!(
        nested.body,
        error_body(3, "json: cannot unmarshal string into Go struct field RetryStrategy.retryStrategy.limit of type int64")
    );
    assert!(api.app("web").get("operation").is_none());
}

#[tokio::test]
async fn unknown_api_paths_are_404_and_known_paths_with_another_method_405() {
    let api = Api::with_apps(SimConfig::default(), vec![app("web", "team-a")]).await;
    let unknown = api.get("/api/v1/applicationsets").await;
    assert_eq!(unknown.status, 404);
    let wrong_method = api.get("/api/v1/applications/web/sync").await;
    assert_eq!(wrong_method.status, 405);
}
