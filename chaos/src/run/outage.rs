//! Fleet outages inside the run. Apps behind one Git host (or one destination cluster), calm at
//! first, go down together as Argo CD shows such an outage (docs/fleet.md, "When an outage
//! began": sync `Unknown`, a `ComparisonError` condition, health left as it was), are notified
//! once each as argocd-notifications' `on-sync-status-unknown` would, and come back: from then on
//! a refresh heals them, as on the morning after, when they sit `Unknown` until reconciled.

use super::*;

/// What the repo-server says when the Git host is unreachable (tests/support's `GIT_UNREACHABLE`).
const GIT_DOWN: &str = "Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = failed to list refs: dial tcp 10.20.30.40:443: connect: connection refused";

/// An outage's scope: the first of a run is a Git host, the next a destination cluster.
#[derive(Debug, Clone)]
pub(super) enum OutageScope {
    GitHost(String),
    Cluster(String),
}

pub(super) struct OutagePlan {
    pub(super) label: String,
    pub(super) scope: OutageScope,
    /// Name and project of each app behind it.
    pub(super) apps: Vec<(String, String)>,
}

impl OutagePlan {
    fn message(&self) -> String {
        match &self.scope {
            OutageScope::GitHost(_) => GIT_DOWN.to_owned(),
            OutageScope::Cluster(server) => format!(
                "Failed to load live state: failed to get cluster info for \"{server}\": error synchronizing cache state : failed to sync cluster {server}: failed to load initial state of resource Deployment.apps: Get \"{server}/apis/apps/v1/deployments?limit=500\": dial tcp 10.0.9.9:443: connect: connection refused"
            ),
        }
    }

    fn repo_url(&self) -> Option<String> {
        match &self.scope {
            OutageScope::GitHost(host) => Some(format!("https://{host}/platform/deployments.git")),
            OutageScope::Cluster(_) => None,
        }
    }

    fn server(&self) -> Option<&str> {
        match &self.scope {
            OutageScope::Cluster(server) => Some(server),
            OutageScope::GitHost(_) => None,
        }
    }
}

/// Loads outage `k`'s `n` apps, calm: copies of `events/apps/healthy.json` behind its own host
/// (even `k`) or cluster (odd `k`).
pub(super) fn plan_outage(argo: &ArgoSim, k: usize, n: usize) -> anyhow::Result<OutagePlan> {
    let scope = if k.is_multiple_of(2) {
        OutageScope::GitHost(format!("git.outage-{k}.example"))
    } else {
        OutageScope::Cluster(format!("https://cluster-{k}.outage.example"))
    };
    let label = match &scope {
        OutageScope::GitHost(h) => format!("Git host {h}"),
        OutageScope::Cluster(c) => format!("cluster {c}"),
    };
    let mut plan = OutagePlan { label, scope, apps: Vec::new() };
    let template: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(events_dir().join("apps").join("healthy.json"))?)?;
    let dir = std::env::temp_dir().join(unique("medic-chaos-outage"));
    std::fs::create_dir_all(&dir)?;
    for i in 0..n {
        let mut app = template.clone();
        let name = format!("{}-outage{k}-{i}", app["metadata"]["name"].as_str().unwrap_or("app"));
        app["metadata"]["name"] = name.clone().into();
        if let Some(url) = plan.repo_url() {
            app["spec"]["source"]["repoURL"] = url.into();
        }
        if let Some(server) = plan.server() {
            app["spec"]["destination"]["server"] = server.into();
        }
        std::fs::write(dir.join(format!("{name}.json")), serde_json::to_vec(&app)?)?;
        plan.apps.push((name, app["spec"]["project"].as_str().unwrap_or_default().to_owned()));
    }
    argo.load_dir(&dir, Some(Rebase::samples_to(Utc::now())))?;
    std::fs::remove_dir_all(&dir).ok();
    Ok(plan)
}

/// The outage begins: every app of it down at once (refreshes change nothing, a sync fails with
/// the same error), each notified once. Returns when it began.
///
/// The `ComparisonError` is dated now: at its start an outage is as young as in production.
pub(super) async fn begin_outage(
    argo: &ArgoSim,
    plan: &OutagePlan,
    ingest: &FunctionPool,
    tally: &Shared,
) -> anyhow::Result<chrono::DateTime<Utc>> {
    let began = Utc::now();
    let message = plan.message();
    let webhook: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(events_dir().join("webhook").join("comparison-error-transient.json"))?)?;
    let mut notifications = Vec::new();
    for (name, project) in &plan.apps {
        let Some(mut app) = argo.app("argocd", name) else { continue };
        app["status"]["sync"]["status"] = "Unknown".into();
        app["status"]["conditions"] =
            serde_json::json!([{"type": "ComparisonError", "message": message, "lastTransitionTime": began.to_rfc3339()}]);
        app["status"]["reconciledAt"] = began.to_rfc3339().into();
        // A write: a new resourceVersion, as the controller's status update makes.
        let rv: u64 = app["metadata"]["resourceVersion"].as_str().and_then(|v| v.parse().ok()).unwrap_or(0);
        app["metadata"]["resourceVersion"] = (rv + 1).to_string().into();
        argo.insert_app(app);
        argo.set_outcomes(
            name,
            Outcomes {
                refresh: RefreshOutcome::Noop,
                hard_refresh: RefreshOutcome::Noop,
                sync: SyncOutcome::Fail { message: message.clone() },
                lost_syncs: 0,
                comparison_error: None,
            },
        );
        let mut body = webhook.clone();
        body["app"]["name"] = name.clone().into();
        body["app"]["project"] = project.clone().into();
        if let Some(url) = plan.repo_url() {
            body["source"]["repoURLs"] = serde_json::json!([url]);
        }
        if let Some(server) = plan.server() {
            body["source"]["destination"]["server"] = server.into();
        }
        notifications.push(body.to_string());
    }
    tally.lock().unwrap().outages.push(OutageWindow {
        label: plan.label.clone(),
        apps: plan.apps.iter().map(|(n, _)| format!("argocd/{n}")).collect(),
        from: began,
        to: None,
    });
    eprintln!("chaos: outage of {} begins: {} apps down", plan.label, plan.apps.len());
    for body in notifications {
        send(ingest, Event::Webhook(body), tally).await?;
    }
    Ok(began)
}

/// The outage ends: the host or cluster is back, and a refresh of each app heals it.
///
/// The simulator's clock is not scaled, so the apps' `ComparisonError` is dated back to where
/// production would have it now: the outage lasted `span` of the run, `span × scale` in
/// production. Else the policy's 5-minute repo-error grace, read against the condition's time,
/// would hold the wave back for longer than a scaled run's whole outage.
pub(super) fn end_outage(argo: &ArgoSim, plan: &OutagePlan, tally: &Shared, span: Duration, scale: u64) {
    let aged = Utc::now() - chrono::TimeDelta::from_std(span * scale as u32).unwrap_or_default();
    for (name, _) in &plan.apps {
        if let Some(mut app) = argo.app("argocd", name)
            && let Some(c) = app["status"]["conditions"].as_array_mut().and_then(|c| c.first_mut())
        {
            c["lastTransitionTime"] = aged.to_rfc3339().into();
            let rv: u64 = app["metadata"]["resourceVersion"].as_str().and_then(|v| v.parse().ok()).unwrap_or(0);
            app["metadata"]["resourceVersion"] = (rv + 1).to_string().into();
            argo.insert_app(app);
        }
        argo.set_outcomes(
            name,
            Outcomes {
                refresh: RefreshOutcome::Heal,
                hard_refresh: RefreshOutcome::Heal,
                sync: SyncOutcome::Succeed,
                lost_syncs: 0,
                comparison_error: None,
            },
        );
    }
    let mut t = tally.lock().unwrap();
    if let Some(w) = t.outages.iter_mut().find(|w| w.label == plan.label) {
        w.to = Some(Utc::now());
    }
    eprintln!("chaos: outage of {} ends: a refresh heals its apps now", plan.label);
}
