mod argo;
mod golden;
mod support;
mod sweep;
mod template;
