//! Argo Medic's adapters: every piece of I/O behind the core's ports.
//!
//! - [`argocd`]: the Argo CD REST client (reqwest + rustls), with retries and the circuit breaker;
//! - [`breaker`]: the circuit breaker that stops calls while Argo CD is failing;
//! - [`budget`]: per-instance token buckets for refresh, hard refresh and sync;
//! - [`memory`]: in-memory twins of the store and escalator ports, and the system clock;
//! - [`config`]: Argo CD connection settings, the only place that reads the environment;
//! - [`slack`]: the Slack escalator (Web API client, post-once records, fleet incidents);
//! - [`token`]: secrets re-read from Secrets Manager when a server rejects them (rotation);
//! - [`switch`]: the instant switch's cache (fresh for 30 s, fail closed after 2 minutes of errors).

pub mod argocd;
pub mod aws;
pub mod breaker;
pub mod budget;
pub mod config;
pub mod dynamodb;
pub mod lambda_env;
pub mod memory;
pub mod slack;
pub mod sqs;
pub mod switch;
pub mod telemetry;
pub mod token;
