//! The integration tests: one binary (one link, shared simulators and moto), a module per concern.
//! Put a test where its subject is; a new concern gets a new module here with its line below.

/// The one actuator through its real callers: every gate mode × every caller that acts or posts.
mod actuator;
/// The map of the Application against Argo CD's swagger.
mod app_map;
/// The Argo CD client and the per-app step over HTTP against the simulator, swagger-checked.
mod argo;
/// `medic check`: each way a deploy day goes wrong, against the simulator.
mod check;
/// One contract per port, run against every implementation (twins, SQLite, DynamoDB, SQS, Slack).
mod contracts;
/// The operator's dashboard in template.yaml against the metrics the code emits.
mod dashboard;
/// Golden decisions: every scenario under events/scenarios/ decided and checked.
mod golden;
/// IAM: every AWS call a function makes is granted to its role, and nothing more.
mod iam;
/// `medic incidents` against DynamoDB: what the step leaves in the state table, read back.
mod incidents;
/// Golden layouts of the state table's items, so one release reads what the previous wrote.
mod item_layouts;
/// Leases and timeouts fit together for every worker timeout the template allows.
mod leases;
/// Fleet outages the morning after: the outage's identity, wave, buttons, markers and holds.
mod outage;
/// The serverless pipeline end to end on real wire protocols (SQS, DynamoDB, Argo CD).
mod pipeline;
/// `medic report`: the shadow report over a recorded history, in SQLite and DynamoDB.
mod report;
/// How long an incident's action records live, the same in every incident store.
mod retention;
/// Secrets rotated without a redeploy (the Argo CD token, the Slack token).
mod rotation;
/// Commands the docs tell an operator to run, executed as written.
mod runbooks;
/// `medic serve` through its real listener: the same flow as on Lambda.
mod serve;
/// The environment each function reads, held against template.yaml and the docs.
mod settings;
/// Slack escalation end to end: threads, buttons, signatures, allow-lists.
mod slack;
/// Builders shared by the modules: the stacks, the simulators, test clocks and decorators.
mod support;
/// `medic sweep` against the simulator: passes, budgets, dry runs, outages.
mod sweep;
/// The argocd-notifications configuration in infra/, rendered as argocd-notifications renders it.
mod template;
/// One timeline per incident: each event once through a kill and a redelivery, in every store.
mod timeline;
/// Trust levels (observe, propose, act) through the worker and both simulators.
mod trust;
