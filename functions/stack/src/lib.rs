//! The composition roots: which adapters the application ([`medic_service`]) runs on, chosen in
//! one place per environment. The handler crates wrap what these build in their event plumbing;
//! no other code names a handler's collaborators one by one.

pub mod adapters;
pub mod lambda;
#[cfg(feature = "local")]
pub mod local;
pub mod twins;
