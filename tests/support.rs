//! Shared helpers: the Argo CD simulator loaded with the sample apps, and clients pointed at it.

use std::path::PathBuf;
use std::time::Duration;

use chrono::Utc;
use medic_adapters::argocd::HttpArgoClient;
use medic_adapters::breaker::BreakerSettings;
use medic_adapters::config::ArgoSettings;
use medic_core::event::AppRef;
use medic_sim::{ArgoSim, Rebase, SimConfig};

pub fn events_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../events")
}

/// A simulator holding every sample app, its timestamps moved so the capture time is now.
pub async fn sim_with_samples(config: SimConfig) -> ArgoSim {
    let sim = ArgoSim::start(config).await.expect("simulator starts");
    let captured_at = medic::scenario::SAMPLES_CAPTURED_AT.parse().unwrap();
    sim.load_dir(&events_dir().join("apps"), Some(Rebase { captured_at, now: Utc::now() })).expect("sample apps load");
    sim.load_outcomes(&events_dir().join("sim/outcomes.json")).expect("outcomes load");
    sim
}

/// Settings for a test client: quick retries so backoff tests take seconds, not minutes.
pub fn settings(sim: &ArgoSim, token: &str) -> ArgoSettings {
    let mut s = ArgoSettings::new(sim.base_url(), token);
    s.request_timeout = Duration::from_secs(2);
    s.retry_deadline = Duration::from_secs(5);
    s.max_attempts = 4;
    s.max_retry_after = Duration::from_secs(2);
    s
}

pub fn client(sim: &ArgoSim) -> HttpArgoClient {
    HttpArgoClient::with_breaker(settings(sim, &default_token()), BreakerSettings { failure_threshold: 1000, ..Default::default() })
        .unwrap()
}

pub fn app(name: &str, project: &str) -> AppRef {
    AppRef { name: name.into(), namespace: "argocd".into(), project: Some(project.into()) }
}

pub fn default_token() -> String {
    SimConfig::default().tokens[0].token.clone()
}
