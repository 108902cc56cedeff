//! The `medic` command's library: input loading, sample scenarios and output rendering, shared by
//! the binary and the integration tests.

pub mod check;
pub mod check_stack;
pub mod incidents;
pub mod input;
pub mod render;
pub mod scenario;
pub mod serve;
pub mod store;
pub mod sweep;
pub mod sweep_cmd;

/// Writes to stdout; a closed pipe (`medic ... | head`) is not an error.
pub fn emit(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
