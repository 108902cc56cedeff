//! The simulator's traffic against Argo CD's own Swagger spec, and the validator's teeth.

use std::path::PathBuf;
use std::time::Duration;

use medic_sim::swagger::SwaggerSpec;
use medic_sim::{Fault, FaultKind, LoggedRequest, Outcomes, SimConfig, SyncOutcome, SyncWindowRule};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{Api, app, broken_app};

fn sample_apps() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test")).join("../events/apps")
}

fn violations(spec: &SwaggerSpec, logged: &[LoggedRequest], requests_too: bool) -> Vec<String> {
    logged
        .iter()
        .flat_map(|r| {
            let mut v = spec.check_response(r);
            if requests_too {
                v.extend(spec.check_request(r));
            }
            v
        })
        .collect()
}

#[test]
fn the_reference_spec_is_argo_cds_unmodified_v3_5_1_swagger() {
    let Some(_spec) = medic_sim::swagger::reference_spec("the_reference_spec_is_argo_cds_unmodified_v3_5_1_swagger") else { return };
    let text = std::fs::read_to_string(medic_sim::swagger::argocd_swagger_path()).expect("the reference spec is readable");
    let hex = hex::encode(Sha256::digest(text.as_bytes()));
    assert_eq!(hex, medic_sim::swagger::ARGOCD_V3_5_1_SHA256);
    assert!(SwaggerSpec::argocd_v3_5_1().is_ok());
}

#[tokio::test]
async fn representative_traffic_passes_the_swagger_checks() {
    let Some(spec) = medic_sim::swagger::reference_spec("representative_traffic_passes_the_swagger_checks") else { return };
    let mut config = SimConfig::default();
    config.sync_windows.push(SyncWindowRule { project: "team-w".into(), manual_sync: false, sync_overrun: false, active: true });
    config.sync_windows.push(SyncWindowRule { project: "team-w".into(), manual_sync: true, sync_overrun: true, active: false });
    config.policies.push(medic_sim::Policy::projects(medic_sim::DEFAULT_SUBJECT, "get", "*"));
    let api = Api::with_apps(config, vec![broken_app("web", "team-a"), app("hang", "team-a"), app("blocked", "team-w")]).await;
    let loaded = api.sim.load_dir(&sample_apps(), None).expect("the sample apps load");
    assert!(loaded >= 20, "{loaded} sample apps");
    api.sim.set_outcomes("web", Outcomes { refresh: medic_sim::RefreshOutcome::Heal, ..Outcomes::default() });
    api.sim.set_outcomes("hang", Outcomes { sync: SyncOutcome::Hang, ..Outcomes::default() });

    // Well-formed requests, whatever the answer.
    api.get_as("/api/version", None).await;
    api.get("/api/version").await;
    api.get("/api/v1/applications").await;
    api.get("/api/v1/projects").await;
    api.get("/api/v1/projects/team-w/syncwindows").await;
    api.get("/api/v1/applications?projects=team-a&projects=payments&selector=env%3Dprod,!argo-medic.io%2Fopt-out").await;
    api.get("/api/v1/applications?fields=items.metadata.name,items.metadata.namespace,items.spec.project,items.status.sync.status,items.status.health,items.status.operationState.phase,items.status.operationState.finishedAt,items.metadata.annotations,items.status.resources").await;
    api.get("/api/v1/applications?fields=-items.spec").await;
    api.get("/api/v1/applications?name=web&appNamespace=argocd&repo=https%3A%2F%2Fgit.example.com%2Fapps.git").await;
    let all = api.get("/api/v1/applications").await;
    for item in all.body["items"].as_array().expect("items") {
        let name = item["metadata"]["name"].as_str().expect("name");
        api.get(&format!("/api/v1/applications/{name}")).await;
        api.get(&format!("/api/v1/applications/{name}/resource-tree")).await;
    }
    api.get("/api/v1/applications/web?refresh=normal&project=team-a").await;
    api.get("/api/v1/applications/web?refresh=hard&appNamespace=argocd&projects=team-a").await;
    api.get("/api/v1/applications/web/syncwindows?project=team-a").await;
    api.get("/api/v1/applications/blocked/syncwindows").await;
    api.get("/api/v1/applications/web/resource-tree?appNamespace=argocd&project=team-a").await;
    let full_sync = json!({
        "name": "web", "appNamespace": "argocd", "project": "team-a",
        "revision": "main", "prune": true, "dryRun": false,
        "strategy": {"hook": {"force": true}},
        "resources": [{"group": "apps", "kind": "Deployment", "name": "web", "namespace": "web"}, {"group": "", "kind": "Service", "name": "web", "namespace": "web"}],
        "syncOptions": {"items": ["ApplyOutOfSyncOnly=true", "ServerSideApply=true"]},
        "retryStrategy": {"limit": 2, "refresh": true, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "2m"}},
        "infos": [{"name": "argo-medic.io/idempotency-key", "value": "am1-0123456789abcdef0123456789abcdef"}],
    });
    assert_eq!(api.sync("web", full_sync).await.status, 200);
    assert_eq!(api.sync("hang", json!({"strategy": {"apply": {"force": false}}})).await.status, 200);
    assert_eq!(api.sync("hang", json!({})).await.status, 400);
    let terminate = api.url("/api/v1/applications/hang/operation?project=team-a&appNamespace=argocd");
    let answer = api.send(api.http.delete(terminate).bearer_auth(&api.token).header("Content-Type", "application/json")).await;
    assert_eq!(answer.status, 200);
    assert_eq!(api.sync("blocked", json!({})).await.status, 403);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(api.terminate("web").await.status, 400, "the sync of web has finished");
    api.get("/api/v1/applications/web").await;
    api.get("/api/v1/applications/hang").await;
    api.get_as("/api/v1/applications", None).await;
    api.get("/api/v1/applications/nope").await;
    api.get("/api/v1/applications/nope?project=team-a").await;
    api.get("/api/v1/applications?selector=a%3Db%3Dc").await;
    api.sim.inject(Fault {
        path_contains: Some("/web".into()),
        method: None,
        kind: FaultKind::Status { code: 429, retry_after_secs: Some(1) },
        times: 1,
    });
    api.sim.inject(Fault {
        path_contains: Some("/web".into()),
        method: None,
        kind: FaultKind::Status { code: 503, retry_after_secs: None },
        times: 1,
    });
    api.sim.inject(Fault { path_contains: Some("/web".into()), method: None, kind: FaultKind::Drop, times: 1 });
    api.get("/api/v1/applications/web").await;
    api.get("/api/v1/applications/web").await;
    assert!(api.http.get(api.url("/api/v1/applications/web")).bearer_auth(&api.token).send().await.is_err());

    let logged = api.sim.requests();
    assert!(logged.len() > 60, "{} requests checked", logged.len());
    let statuses: std::collections::BTreeSet<u16> = logged.iter().map(|r| r.status).collect();
    assert_eq!(statuses.into_iter().collect::<Vec<_>>(), [0, 200, 400, 401, 403, 404, 429, 500, 503]);
    let found = violations(&spec, &logged, true);
    assert!(found.is_empty(), "{found:#?}");

    // Malformed on purpose: the answers must still be what Argo CD answers.
    api.sim.clear_requests();
    let url = api.url("/api/v1/applications/web/sync");
    api.send(api.http.post(&url).bearer_auth(&api.token).body("{}")).await;
    api.sync("web", json!({"prune": "yes"})).await;
    api.sync("web", json!({"sourcePositions": ["1"]})).await;
    let logged = api.sim.requests();
    assert_eq!(logged.iter().map(|r| r.status).collect::<Vec<_>>(), [415, 400, 400]);
    let found = violations(&spec, &logged, false);
    assert!(found.is_empty(), "{found:#?}");
}

/// One request through the simulator, as logged.
async fn logged(api: &Api, request: reqwest::RequestBuilder) -> LoggedRequest {
    api.sim.clear_requests();
    let _ = request.send().await;
    api.sim.requests().pop().expect("the request was logged")
}

async fn api() -> Api {
    Api::with_apps(SimConfig::default(), vec![app("web", "team-a")]).await
}

#[tokio::test]
async fn the_validator_flags_an_undeclared_query_parameter() {
    let Some(spec) = medic_sim::swagger::reference_spec("the_validator_flags_an_undeclared_query_parameter") else { return };
    let api = api().await;
    let r = logged(&api, api.http.get(api.url("/api/v1/applications/web?refersh=hard")).bearer_auth(&api.token)).await;
    assert_eq!(r.status, 200, "the gateway ignores unknown parameters: exactly why it must be caught");
    let found = spec.check_request(&r);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].contains("`refersh`"), "{}", found[0]);
    let fields_on_get =
        logged(&api, api.http.get(api.url("/api/v1/applications/web?fields=items.metadata.name")).bearer_auth(&api.token)).await;
    assert_eq!(spec.check_request(&fields_on_get).len(), 1, "fields is honoured on List only");
}

#[tokio::test]
async fn the_validator_flags_a_wrongly_typed_body_field() {
    let Some(spec) = medic_sim::swagger::reference_spec("the_validator_flags_a_wrongly_typed_body_field") else { return };
    let api = api().await;
    let cases = [
        (json!({"prune": "true"}), "body.prune"),
        (json!({"retryStrategy": {"limit": "2"}}), "body.retryStrategy.limit"),
        (json!({"sourcePositions": ["1"]}), "body.sourcePositions[0]"),
        (json!({"infos": {"name": "k", "value": "v"}}), "body.infos"),
    ];
    for (body, at) in cases {
        let r = logged(&api, api.http.post(api.url("/api/v1/applications/web/sync")).bearer_auth(&api.token).json(&body)).await;
        let found = spec.check_request(&r);
        assert_eq!(found.len(), 1, "{body}: {found:#?}");
        assert!(found[0].contains(&format!("{at}:")), "{}", found[0]);
    }
}

#[tokio::test]
async fn the_validator_flags_an_unknown_body_field() {
    let Some(spec) = medic_sim::swagger::reference_spec("the_validator_flags_an_unknown_body_field") else { return };
    let api = api().await;
    let cases = [
        (json!({"dryrun": true}), "body.dryrun"),
        (json!({"strategy": {"hook": {"syncStrategyApply": {"force": true}}}}), "body.strategy.hook.syncStrategyApply"),
        (json!({"infos": [{"name": "k", "value": "v", "source": "medic"}]}), "body.infos[0].source"),
        (json!({"syncOptions": ["Validate=false"]}), "body.syncOptions"),
    ];
    for (body, at) in cases {
        let r = logged(&api, api.http.post(api.url("/api/v1/applications/web/sync")).bearer_auth(&api.token).json(&body)).await;
        let found = spec.check_request(&r);
        assert_eq!(found.len(), 1, "{body}: {found:#?}");
        assert!(found[0].contains(&format!("{at}:")), "{}", found[0]);
    }
    let flattened = logged(
        &api,
        api.http
            .post(api.url("/api/v1/applications/web/sync"))
            .bearer_auth(&api.token)
            .json(&json!({"strategy": {"hook": {"force": true}}})),
    )
    .await;
    assert_eq!(spec.check_request(&flattened), Vec::<String>::new(), "the wire form of hook is fine");
}

#[tokio::test]
async fn the_validator_flags_an_unknown_path_and_an_undeclared_method() {
    let Some(spec) = medic_sim::swagger::reference_spec("the_validator_flags_an_unknown_path_and_an_undeclared_method") else { return };
    let api = api().await;
    let r = logged(&api, api.http.get(api.url("/api/v1/applicationz")).bearer_auth(&api.token)).await;
    let found = spec.check_request(&r);
    assert_eq!(found.len(), 1);
    assert!(found[0].contains("no such path"), "{}", found[0]);
    assert_eq!(spec.check_response(&r).len(), 1);
    let wrong = logged(&api, api.http.get(api.url("/api/v1/applications/web/operation")).bearer_auth(&api.token)).await;
    assert!(spec.check_request(&wrong)[0].contains("method not declared"));
}

#[tokio::test]
async fn the_validator_flags_a_response_the_spec_does_not_allow() {
    let Some(spec) = medic_sim::swagger::reference_spec("the_validator_flags_a_response_the_spec_does_not_allow") else { return };
    let api = api().await;
    let mut r = logged(&api, api.http.get(api.url("/api/v1/applications/web")).bearer_auth(&api.token)).await;
    assert_eq!(spec.check_response(&r), Vec::<String>::new());
    r.response["status"]["bogus"] = json!(1);
    r.response["status"]["reconciledAt"] = json!("yesterday");
    r.response["status"]["history"] = json!([{"id": "41"}]);
    let found = spec.check_response(&r);
    assert_eq!(found.len(), 3, "{found:#?}");

    let mut error = r.clone();
    error.status = 412;
    error.response = json!({"error": "another operation is already in progress", "code": 9});
    assert_eq!(spec.check_response(&error).len(), 2, "message missing and 9 maps to 400");
    let _: Option<Value> = None;
}

/// Every Application of the decision-quality corpus (`events/corpus/`) has the shape Argo CD's API
/// returns: the `v1alpha1Application` schema of the v3.5.1 spec, with no member the spec lacks.
#[test]
fn every_corpus_application_matches_the_v1alpha1_application_schema() {
    let Some(spec) = medic_sim::swagger::reference_spec("every_corpus_application_matches_the_v1alpha1_application_schema") else { return };
    fn cases(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("events/corpus is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                cases(&path, out);
            } else if path.extension().is_some_and(|e| e == "json") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    cases(
        &PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test"))
            .join("../events/corpus"),
        &mut files,
    );
    assert!(files.len() >= 100, "{} corpus cases", files.len());
    let mut found = Vec::new();
    for file in &files {
        let case: Value = serde_json::from_str(&std::fs::read_to_string(file).expect("readable")).expect("JSON");
        let name = file.file_name().unwrap_or_default().to_string_lossy().into_owned();
        found.extend(spec.check_definition("v1alpha1Application", &case["app"], &name));
    }
    assert!(found.is_empty(), "{} violations:\n{}", found.len(), found.join("\n"));
    let mut bad = json!({"metadata": {"name": "x"}, "status": {"reconciledAt": "yesterday", "bogus": 1}});
    assert_eq!(spec.check_definition("v1alpha1Application", &bad, "bad").len(), 2, "the check has teeth");
    bad["status"] = json!({});
    assert!(spec.check_definition("v1alpha1Application", &bad, "ok").is_empty());
}
