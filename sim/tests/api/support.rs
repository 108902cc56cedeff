//! Helpers: a started simulator, a reqwest client, and Applications to put in it.

use std::time::{Duration, Instant};

use medic_sim::{ArgoSim, DEFAULT_TOKEN, SimConfig};
use serde_json::{Value, json};

/// A running simulator and a client for it.
pub struct Api {
    pub sim: ArgoSim,
    pub http: reqwest::Client,
    pub token: String,
}

/// An HTTP answer: status, parsed body (JSON, else the text as a JSON string), content type.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub content_type: String,
    pub retry_after: Option<String>,
}

impl Api {
    pub async fn start(config: SimConfig) -> Api {
        let sim = ArgoSim::start(config).await.expect("the simulator starts");
        let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("client");
        Api { sim, http, token: DEFAULT_TOKEN.to_string() }
    }

    pub async fn with_apps(config: SimConfig, apps: Vec<Value>) -> Api {
        let api = Api::start(config).await;
        for app in apps {
            api.sim.insert_app(app);
        }
        api
    }

    pub fn url(&self, path: &str) -> String {
        self.sim.api_url(path)
    }

    pub async fn send(&self, request: reqwest::RequestBuilder) -> Answer {
        let response = request.send().await.expect("the simulator answers");
        let status = response.status().as_u16();
        let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        let content_type = header("content-type").unwrap_or_default();
        let retry_after = header("retry-after");
        let text = response.text().await.expect("a body");
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Answer { status, body, content_type, retry_after }
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.get_as(path, Some(&self.token)).await
    }

    pub async fn get_as(&self, path: &str, token: Option<&str>) -> Answer {
        let mut request = self.http.get(self.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        self.send(request).await
    }

    pub async fn sync(&self, name: &str, body: Value) -> Answer {
        self.sync_as(name, body, &self.token).await
    }

    pub async fn sync_as(&self, name: &str, body: Value, token: &str) -> Answer {
        let url = self.url(&format!("/api/v1/applications/{name}/sync"));
        self.send(self.http.post(url).bearer_auth(token).json(&body)).await
    }

    pub async fn terminate(&self, name: &str) -> Answer {
        let url = self.url(&format!("/api/v1/applications/{name}/operation"));
        let request = self.http.delete(url).bearer_auth(&self.token).header("Content-Type", "application/json");
        self.send(request).await
    }

    pub fn app(&self, name: &str) -> Value {
        self.sim.app("argocd", name).expect("the app is stored")
    }

    /// Polls the stored app until `done` holds, failing after 3 seconds.
    pub async fn wait_for(&self, name: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let app = self.app(name);
            if done(&app) {
                return app;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}: {app:#}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

pub fn error_body(code: i64, message: &str) -> Value {
    json!({"error": message, "code": code, "message": message})
}

pub const REVISION: &str = "4f1e0c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f";

/// A full, healthy Application of `project`, reconciled and synced long ago.
pub fn app(name: &str, project: &str) -> Value {
    json!({
        "metadata": {
            "name": name,
            "namespace": "argocd",
            "uid": format!("00000000-0000-4000-8000-{:012}", name.len()),
            "resourceVersion": "1000",
            "generation": 3,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"env": "prod", "team": project}
        },
        "spec": {
            "project": project,
            "source": {"repoURL": "https://git.example.com/apps.git", "path": format!("apps/{name}"), "targetRevision": "main"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": name},
            "syncPolicy": {"automated": {"prune": false, "selfHeal": true}, "syncOptions": ["CreateNamespace=true"]}
        },
        "status": {
            "resources": [
                {"group": "apps", "version": "v1", "kind": "Deployment", "namespace": name, "name": name, "status": "Synced"},
                {"version": "v1", "kind": "ConfigMap", "namespace": name, "name": format!("{name}-config"), "status": "Synced"}
            ],
            "sync": {"status": "Synced", "revision": REVISION},
            "health": {"status": "Healthy", "lastTransitionTime": "2026-01-01T00:10:00Z"},
            "reconciledAt": "2026-01-01T00:10:00Z",
            "operationState": {
                "operation": {"sync": {"revision": REVISION}, "initiatedBy": {"automated": true}},
                "phase": "Succeeded",
                "message": "successfully synced (all tasks run)",
                "startedAt": "2026-01-01T00:09:00Z",
                "finishedAt": "2026-01-01T00:09:30Z",
                "syncResult": {"revision": REVISION}
            }
        }
    })
}

/// `app`, but Progressing with a ComparisonError and stale.
pub fn broken_app(name: &str, project: &str) -> Value {
    let mut app = app(name, project);
    app["status"]["health"] = json!({"status": "Progressing", "lastTransitionTime": "2026-01-01T00:10:00Z"});
    app["status"]["sync"]["status"] = json!("OutOfSync");
    app["status"]["conditions"] = json!([
        {"type": "ComparisonError", "message": "rpc error: code = Unavailable desc = connection refused", "lastTransitionTime": "2026-01-01T00:10:00Z"}
    ]);
    app
}
