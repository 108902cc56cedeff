//! `medic check` against the Argo CD simulator: each way a deploy day goes wrong (an expired or
//! unknown token, missing RBAC, plain HTTP, something that is not Argo CD's API, argocd-notifications
//! without Argo Medic's service) is found, and its finding says what to do.

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use medic::check::{CheckOptions, Finding, Route, Status, check};
use medic_adapters::config::ArgoSettings;
use medic_sim::{ArgoSim, Notifications, Policy, SimConfig, TokenGrant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn options(server: String, token: &str, plaintext: bool) -> CheckOptions {
    let mut argo = ArgoSettings::new(server, token);
    argo.plaintext = plaintext;
    CheckOptions {
        argo,
        projects: Vec::new(),
        may_sync: true,
        route: Route::Any,
        expiry_warning: Duration::from_secs(7 * 86_400),
        now: Utc::now(),
    }
}

/// A simulator whose one token expires at `expires` (from now), and `config` otherwise.
async fn start_sim(expires: TimeDelta, config: SimConfig) -> (ArgoSim, String) {
    let grant = TokenGrant::expiring("argo-medic", Utc::now() + expires);
    let token = grant.token.clone();
    let sim = ArgoSim::start(SimConfig { tokens: vec![grant], ..config }).await.unwrap();
    (sim, token)
}

fn of<'a>(findings: &'a [Finding], check: &str, status: Status) -> Vec<&'a Finding> {
    findings.iter().filter(|f| f.check == check && f.status == status).collect()
}

fn failures(findings: &[Finding]) -> Vec<&Finding> {
    findings.iter().filter(|f| f.status == Status::Fail).collect()
}

#[tokio::test]
async fn a_good_token_with_its_rbac_and_notifications_passes_and_its_expiry_is_printed() {
    let (sim, token) = start_sim(TimeDelta::days(90), SimConfig::default()).await;
    let findings = check(&options(sim.base_url(), &token, true)).await;
    assert!(failures(&findings).is_empty(), "{findings:#?}");
    let token_ok = of(&findings, "token", Status::Ok);
    assert!(token_ok.len() == 1 && token_ok[0].detail.contains("expires at") && token_ok[0].detail.contains("in 89 days"), "{findings:#?}");
    assert_eq!(of(&findings, "rbac", Status::Ok).len(), 2, "get and sync: {findings:#?}");
    assert_eq!(of(&findings, "notifications", Status::Ok).len(), 2, "{findings:#?}");
    // The simulator speaks plain HTTP: allowed, and said.
    let plain = of(&findings, "argo-cd", Status::Warn);
    assert!(plain.len() == 1 && plain[0].detail.contains("v3.5.1") && plain[0].detail.contains("plain HTTP"), "{findings:#?}");
    // A token close to its end warns.
    let (soon, token) = start_sim(TimeDelta::days(3), SimConfig::default()).await;
    let findings = check(&options(soon.base_url(), &token, true)).await;
    assert_eq!(of(&findings, "token", Status::Warn).len(), 1, "{findings:#?}");
}

#[tokio::test]
async fn an_expired_token_fails_locally_and_at_argo_cd_with_how_to_mint_one() {
    let (sim, token) = start_sim(TimeDelta::days(-1), SimConfig::default()).await;
    let findings = check(&options(sim.base_url(), &token, true)).await;
    let token_fail = of(&findings, "token", Status::Fail);
    assert!(token_fail.len() == 1 && token_fail[0].detail.contains("expired at"), "{findings:#?}");
    assert!(token_fail[0].fix.as_deref().unwrap().contains("argocd account generate-token"));
    let rejected = of(&findings, "rbac", Status::Fail);
    assert!(rejected.len() == 1 && rejected[0].detail.contains("token is expired"), "{findings:#?}");
}

#[tokio::test]
async fn a_token_argo_cd_does_not_know_is_rejected() {
    let (sim, _) = start_sim(TimeDelta::days(90), SimConfig::default()).await;
    let stranger = medic_sim::token_for("someone-else");
    let findings = check(&options(sim.base_url(), &stranger, true)).await;
    let rejected = of(&findings, "rbac", Status::Fail);
    assert!(rejected.len() == 1 && rejected[0].detail.contains("rejected the token"), "{findings:#?}");
    // Not a JWT at all: said before any call.
    let findings = check(&options(sim.base_url(), "hunter2", true)).await;
    assert!(of(&findings, "token", Status::Fail)[0].detail.contains("not a JWT"), "{findings:#?}");
}

#[tokio::test]
async fn missing_rbac_names_the_policy_line_to_add_per_project() {
    let config = SimConfig { policies: vec![Policy::new("argo-medic", "get", "payments")], ..SimConfig::default() };
    let (sim, token) = start_sim(TimeDelta::days(90), config).await;
    let mut o = options(sim.base_url(), &token, true);
    o.projects = vec!["payments".into(), "checkout".into()];
    let findings = check(&o).await;
    let fails: Vec<&str> = of(&findings, "rbac", Status::Fail).iter().map(|f| f.detail.as_str()).collect();
    assert_eq!(
        fails,
        ["may not sync applications payments/*", "may not get applications checkout/*", "may not sync applications checkout/*"]
    );
    let fix = of(&findings, "rbac", Status::Fail)[0].fix.clone().unwrap();
    assert!(fix.contains("p, role:argo-medic, applications, sync, payments/*, allow"), "{fix}");
    assert_eq!(of(&findings, "rbac", Status::Ok)[0].detail, "may get applications payments/*");
    // A deployment that never syncs needs only get.
    o.projects = vec!["payments".into()];
    o.may_sync = false;
    assert!(failures(&check(&o).await).is_empty());
}

#[tokio::test]
async fn https_to_a_plain_http_server_says_to_set_argocd_plaintext() {
    let (sim, token) = start_sim(TimeDelta::days(90), SimConfig::default()).await;
    let server = sim.base_url().trim_start_matches("http://").trim_end_matches('/').to_owned();
    let findings = check(&options(server, &token, false)).await;
    let failed = of(&findings, "argo-cd", Status::Fail);
    assert!(failed.len() == 1, "{findings:#?}");
    assert!(failed[0].fix.as_deref().unwrap().contains("ARGOCD_PLAINTEXT=true"), "{findings:#?}");
    assert!(findings.iter().all(|f| f.check != "rbac"), "nothing asked of a server not reached: {findings:#?}");
}

#[tokio::test]
async fn a_server_answering_html_is_not_taken_for_argo_cd() {
    // An ingress that serves the UI's index.html for every path.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = vec![0u8; 4096];
            let _ = stream.read(&mut buf).await;
            let body = "<!doctype html><html><head><title>Argo CD</title></head><body></body></html>";
            let head = format!("HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
            let _ = stream.write_all(format!("{head}{body}").as_bytes()).await;
        }
    });
    let findings = check(&options(format!("http://{addr}"), &medic_sim::token_for("argo-medic"), true)).await;
    let failed = of(&findings, "argo-cd", Status::Fail);
    assert!(failed.len() == 1 && failed[0].detail.contains("not as Argo CD's API does"), "{findings:#?}");
    assert!(failed[0].fix.as_deref().unwrap().contains("ARGOCD_ROOT_PATH"));
}

#[tokio::test]
async fn argocd_notifications_without_argo_medic_s_service_or_triggers_fails_with_the_file_to_apply() {
    let config = SimConfig {
        notifications: Notifications { services: vec!["slack".into()], triggers: vec!["on-sync-failed".into()] },
        ..SimConfig::default()
    };
    let (sim, token) = start_sim(TimeDelta::days(90), config).await;
    let findings = check(&options(sim.base_url(), &token, true)).await;
    let failed = of(&findings, "notifications", Status::Fail);
    assert_eq!(failed.len(), 2, "{findings:#?}");
    assert!(failed[0].detail.contains("no service argo-medic or argo-medic-sqs (it has: slack)"), "{findings:#?}");
    assert!(failed[1].detail.contains("argo-medic-on-sync-failed"), "{findings:#?}");
    assert!(failed[0].fix.as_deref().unwrap().contains("argocd-notifications-cm.yaml"));
    // The awssqs route wants its own service.
    let config = SimConfig {
        notifications: Notifications { services: vec!["argo-medic".into()], ..Notifications::default() },
        ..SimConfig::default()
    };
    let (sim, token) = start_sim(TimeDelta::days(90), config).await;
    let mut o = options(sim.base_url(), &token, true);
    o.route = Route::Awssqs;
    assert_eq!(of(&check(&o).await, "notifications", Status::Fail).len(), 1);
}
