//! A synthetic fleet for scale tests: many full Applications, some left stale by an outage.

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};
use serde_json::{Value, json};

use crate::ids;
use crate::outcomes::{Outcomes, RefreshOutcome};

const PROJECTS: [&str; 5] = ["team-a", "team-b", "team-c", "team-d", "team-e"];
const REPO: &str = "https://git.example.com/platform/deployments.git";

fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// `n` full Applications named `app-00001`… in namespace `argocd`, projects `team-a`..`team-e`
/// in turn, label `env` (`prod`, every third `staging`), automated sync on.
///
/// `stale` of them, spread evenly over the fleet, are stale after an outage: health Progressing,
/// last operation Succeeded 2 h ago, `status.reconciledAt` 2 h old, and scripted to heal on a
/// refresh (normal or hard). The rest are Synced and Healthy, reconciled a minute ago.
pub fn synthetic_fleet(n: usize, stale: usize, now: DateTime<Utc>) -> Vec<(Value, Outcomes)> {
    let stale = stale.min(n);
    (0..n)
        .map(|i| {
            // Evenly spaced: app i is stale when the running quota ticks over at i.
            let is_stale = stale > 0 && (i * stale) / n != ((i + 1) * stale) / n;
            let app = application(i, is_stale, now);
            let outcomes = match is_stale {
                true => Outcomes { refresh: RefreshOutcome::Heal, hard_refresh: RefreshOutcome::Heal, ..Outcomes::default() },
                false => Outcomes::default(),
            };
            (app, outcomes)
        })
        .collect()
}

fn application(i: usize, stale: bool, now: DateTime<Utc>) -> Value {
    let name = format!("app-{:05}", i + 1);
    let project = PROJECTS[i % PROJECTS.len()];
    let env = if i % 3 == 2 { "staging" } else { "prod" };
    let revision = ids::sha(&format!("{name}/revision"));
    let path = format!("apps/{name}/overlays/{env}");
    let source = json!({"repoURL": REPO, "path": path, "targetRevision": "main"});
    let destination = json!({"server": "https://kubernetes.default.svc", "namespace": name});
    let image = format!("registry.example.com/{project}/{name}:1.{}.0", i % 40);

    let (op_started, op_finished, health, health_since, reconciled) = match stale {
        true => {
            // Finished 2 h ago and reconciled then, never since.
            let finished = now - TimeDelta::hours(2);
            let started = finished - TimeDelta::seconds(41);
            (started, finished, "Progressing", started + TimeDelta::seconds(12), finished)
        }
        false => {
            let started = now - TimeDelta::days(1) - TimeDelta::minutes((i % 600) as i64);
            let finished = started + TimeDelta::seconds(38);
            (started, finished, "Healthy", finished, now - TimeDelta::minutes(1))
        }
    };
    let history_id = 10 + (i % 30) as i64;
    json!({
        "metadata": {
            "name": name,
            "namespace": "argocd",
            "uid": ids::uid(&format!("{name}/uid")),
            "resourceVersion": (48_000_000 + i as u64).to_string(),
            "generation": 20 + (i % 50) as i64,
            "creationTimestamp": ts(now - TimeDelta::days(90)),
            "labels": {"env": env, "team": project},
            "finalizers": ["resources-finalizer.argocd.argoproj.io"]
        },
        "spec": {
            "project": project,
            "source": source,
            "destination": destination,
            "syncPolicy": {
                "automated": {"prune": false, "selfHeal": true},
                "syncOptions": ["CreateNamespace=true"]
            }
        },
        "status": {
            "resources": [
                {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": name, "name": name, "status": "Synced"},
                {"version": "v1", "kind": "Service", "namespace": name, "name": name, "status": "Synced"},
                {"version": "v1", "kind": "ConfigMap", "namespace": name, "name": format!("{name}-config"), "status": "Synced"}
            ],
            "sync": {
                "status": "Synced",
                "comparedTo": {"source": source, "destination": destination},
                "revision": revision
            },
            "health": {"status": health, "lastTransitionTime": ts(health_since)},
            "history": [{
                "revision": revision,
                "deployedAt": ts(op_finished),
                "id": history_id,
                "source": source,
                "deployStartedAt": ts(op_started),
                "initiatedBy": {"automated": true}
            }],
            "reconciledAt": ts(reconciled),
            "sourceType": "Kustomize",
            "summary": {"images": [image]},
            "controllerNamespace": "argocd",
            "resourceHealthSource": "appTree",
            "operationState": {
                "operation": {
                    "sync": {"revision": revision, "syncStrategy": {"hook": {}}},
                    "initiatedBy": {"automated": true},
                    "retry": {"limit": 5}
                },
                "phase": "Succeeded",
                "message": "successfully synced (all tasks run)",
                "startedAt": ts(op_started),
                "finishedAt": ts(op_finished),
                "syncResult": {
                    "resources": [
                        {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": name, "name": name,
                         "status": "Synced", "message": format!("deployment.apps/{name} configured"), "syncPhase": "Sync"},
                        {"group": "", "version": "v1", "kind": "Service", "namespace": name, "name": name,
                         "status": "Synced", "message": format!("service/{name} unchanged"), "syncPhase": "Sync"}
                    ],
                    "revision": revision,
                    "source": source
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_apps_are_spread_evenly() {
        let now = Utc::now();
        let fleet = synthetic_fleet(10, 3, now);
        let stale: Vec<usize> =
            fleet.iter().enumerate().filter(|(_, (app, _))| app["status"]["health"]["status"] == "Progressing").map(|(i, _)| i).collect();
        assert_eq!(stale.len(), 3);
        assert!(stale.windows(2).all(|w| w[1] - w[0] >= 3), "{stale:?}");
        assert_eq!(synthetic_fleet(3, 5, now).len(), 3);
        assert!(synthetic_fleet(4, 0, now).iter().all(|(_, o)| o.refresh == RefreshOutcome::Noop));
    }
}
