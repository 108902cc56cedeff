mod argo;
mod golden;
mod pipeline;
mod support;
mod sweep;
mod template;
