//! Argo Medic's pure core.
//!
//! - [`actions`]: every kind of action, one row each (rung, button, budget, effect, verification);
//! - [`gate`]: the one gate: the stack's parameters and the switch make one mode, and one verdict per action;
//! - [`actuator`]: the one actuator: every change to Argo CD and every Slack post, through `perform`;
//! - [`alerts`]: alerts about the service itself, worded once and told once;
//! - [`app`]: the Argo CD Application types we read (tolerant of absent and unknown fields);
//! - [`catalogue`]: the failure-mode catalogue, the single home of Argo CD's literal messages;
//! - [`policy`]: classification and the decision policy, a pure function of its inputs;
//! - [`ladder`]: actions, rungs, budgets and human actions, one name table each;
//! - [`budget`]: the token bucket the workers share;
//! - [`keys`]: every key derivation (incident ids, idempotency and dedupe keys, button ids);
//! - [`incident`]: incident history and outcomes;
//! - [`sweep`]: the one sweep plan;
//! - `config`: thresholds and safety limits with documented defaults, re-exported as [`PolicyConfig`];
//! - [`decision`]: what the policy returns;
//! - [`human_action`]: a person's action on an incident: what a button stands for, how it went.
//! - [`record`]: what a decision read, kept: the parts of the Application the policy reads, at most 16 KB.
//! - [`replay`]: recorded decisions decided again by the current or a candidate policy, and the differences;
//! - [`report`]: the shadow report: per failure mode and project, what each level would have done and what happened next.
//!
//! This crate does no I/O and reads no clock; its Cargo.toml admits no async, HTTP, AWS or Lambda
//! crate, so the compiler keeps it that way.

#![warn(missing_docs)]

pub mod actions;
pub mod actuator;
pub mod alerts;
pub mod app;
pub mod app_map;
pub mod budget;
pub mod catalogue;
pub(crate) mod cause;
pub(crate) mod config;
pub mod decision;
pub(crate) mod error;
pub mod event;
pub mod fleet;
pub mod freeze;
pub mod gate;
pub mod human_action;
pub mod incident;
pub mod keys;
pub mod ladder;
pub mod permit;
pub mod policy;
pub mod ports;
pub mod record;
pub mod replay;
pub mod report;
pub mod route;
pub mod step;
pub mod sweep;
pub mod switch;
pub mod timeline;
pub mod timeouts;
pub mod trigger;
pub mod trust;
pub mod versions;

pub use app::{AppId, Application, ApplicationList};
pub use catalogue::{CATALOGUE, CatalogueEntry, FailureMode};
pub use config::PolicyConfig;
pub use decision::{Decision, Evidence, SyncPlan};
pub use error::PolicyError;
pub use event::NotificationEvent;
pub use incident::{Attempt, DecisionNote, History, IncidentRecord, Outcome};
pub use keys::IdempotencyKey;
pub use keys::IncidentKey;
pub use ladder::{Action, HumanAction, Rung};
pub use policy::{DecisionPolicy, decide};
pub use trigger::Trigger;
