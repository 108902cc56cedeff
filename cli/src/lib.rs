//! The `medic` command's library: input loading, sample scenarios and output rendering, shared by
//! the binary and the integration tests.

pub mod input;
pub mod render;
pub mod scenario;
