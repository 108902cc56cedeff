//! Argo Medic's adapters: every piece of I/O behind the core's ports.
//!
//! - [`argocd`]: the Argo CD REST client (reqwest + rustls), with retries and the circuit breaker;
//! - `answer`: how its JSON answers are decoded (the app list while it arrives);
//! - [`aws`]: the AWS SDK configuration shared by the AWS adapters, and error descriptions;
//! - [`breaker`]: the circuit breaker that stops calls while Argo CD is failing;
//! - [`budget`]: token buckets for refresh, hard refresh and sync, in-process or shared by the workers;
//! - [`config`]: the one reader of settings (one grammar for booleans and numbers) and Argo CD's connection settings;
//! - [`edge`]: secrets that rotate without a redeploy, compared in constant time, and HMACs (ingest, slack-actions);
//! - [`dynamodb`]: the incident store, the dedupe store, the per-app lock and the switch on one table;
//! - [`lambda_env`]: the functions' settings and secrets, read once at init (the composition root);
//! - [`logging`]: the functions' log subscriber (Lambda's log level and format, no regex engine);
//! - [`memory`]: in-memory twins of the store, queue and escalator ports, and the system clock;
//! - [`sdk_http`]: the AWS SDK's HTTP connector over reqwest (one HTTPS stack per function);
//! - [`settings`]: every environment variable, declared once (who sets it, its default, who reads it);
//! - [`slack`]: the Slack escalator (Web API client, post-once records, fleet incidents);
//! - [`sqs`]: the work queue on SQS;
//! - [`switch`]: the instant switch's cache (fresh for 30 s, fail closed after 2 minutes of errors);
//! - [`telemetry`]: CloudWatch Embedded Metric Format metrics;
//! - [`token`]: secrets re-read from Secrets Manager when a server rejects them (rotation).
//!
//! Settings are read through [`config::Settings`] only, by their declarations in [`settings`]: by
//! [`lambda_env`] for the functions, and by the CLI.

mod answer;
pub mod argocd;
pub mod audit;
pub mod aws;
pub mod breaker;
pub mod budget;
pub mod config;
pub mod dynamodb;
pub mod edge;
pub mod lambda_env;
pub mod logging;
pub mod memory;
pub mod retry;
pub mod sdk_http;
pub mod settings;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod sqs;
pub mod switch;
pub mod telemetry;
pub mod token;
