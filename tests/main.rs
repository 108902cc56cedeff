mod actuator;
/// The map of the Application against Argo CD's swagger.
mod app_map;
mod argo;
mod check;
mod contracts;
mod dashboard;
mod golden;
mod iam;
mod incidents;
mod item_layouts;
mod leases;
mod outage;
mod pipeline;
mod retention;
mod rotation;
mod runbooks;
mod serve;
mod settings;
mod slack;
mod support;
mod sweep;
mod template;
/// Trust levels (observe, propose, act) through the worker and both simulators.
mod trust;
