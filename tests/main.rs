mod argo;
mod dashboard;
mod golden;
mod pipeline;
mod slack;
mod support;
mod sweep;
mod template;
