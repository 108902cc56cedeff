//! An Argo CD API simulator: a real HTTP server on 127.0.0.1 that answers like Argo CD's API
//! server (v3.5.1 by default; each release of [`PROFILE_VERSIONS`] where releases differ, as
//! `SimConfig::version` says) for everything Argo Medic's client uses, plus a validator of the traffic against
//! Argo CD's own Swagger spec ([`swagger`]).
//!
//! It speaks raw JSON, as the wire does, and depends on nothing of Argo Medic's own: the client
//! is tested against the protocol, not against shared types. Behaviour follows
//! docs/argo-cd-behaviour.md: grpc-gateway v1 error bodies and status mapping, RBAC and the
//! project rules that decide 403 versus 404, refresh and sync semantics, the `fields` whitelist of
//! List, the 415 on a wrong content type. The controller runs operations with their retries and
//! the informer's resync ([`ArgoSim::resync`]); what it finds is scripted per app ([`Outcomes`]), and
//! faults an ingress or network could cause are injected on demand ([`Fault`]).
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use medic_sim::{ArgoSim, SimConfig, DEFAULT_TOKEN};
//! let sim = ArgoSim::start(SimConfig::default()).await?;
//! sim.insert_app(serde_json::json!({"metadata": {"name": "web"}, "spec": {"project": "default"}}));
//! // GET {base_url}/api/v1/applications/web with `Authorization: Bearer {DEFAULT_TOKEN}`
//! # let _ = (sim.base_url(), DEFAULT_TOKEN);
//! sim.shutdown().await;
//! # Ok(()) }
//! ```

mod api;
mod config;
mod controller;
mod error;
mod faults;
mod fields;
mod fleet;
mod ids;
mod json;
mod jwt;
mod log;
pub mod moto;
mod outcomes;
mod paths;
mod rbac;
mod rebase;
mod release;
mod selector;
mod server;
mod shared;
mod sim;
pub mod slack;
mod state;
pub mod swagger;
pub use paths::workspace_root;
mod sync_request;

pub use config::{DEFAULT_SUBJECT, DEFAULT_TOKEN, Notifications, PROFILE_VERSIONS, Policy, SimConfig, SyncWindowRule, TokenGrant};
pub use faults::{Fault, FaultKind};
pub use fleet::synthetic_fleet;
pub use jwt::token_for;
pub use log::{CallCounts, LoggedRequest};
pub use outcomes::{InvalidTask, Outcomes, RefreshOutcome, SyncOutcome};
pub use rebase::{Rebase, SAMPLES_CAPTURED_AT};
pub use sim::{ArgoSim, RECONCILIATION_TIMEOUT};
pub use slack::{
    DEFAULT_BOT_TOKEN as SLACK_BOT_TOKEN, DEFAULT_CHANNEL as SLACK_CHANNEL, PostRate, SimMessage, SlackFault, SlackFaultKind, SlackSim,
    SlackSimConfig,
};
pub use state::TroubleMark;
