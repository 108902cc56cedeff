//! The `medic` command's library: input loading, sample scenarios and output rendering, shared by
//! the binary and the integration tests.
// Notes go through `note!`: `eprintln!` panics when stderr is closed.
#![deny(clippy::print_stderr)]

pub mod argocd_flags;
pub mod check;
pub mod check_stack;
pub mod incidents;
pub mod input;
pub mod local_queue;
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

/// `eprintln!` that never panics: with stderr closed (`medic sweep 2>&1 | head -3`, a log pipe
/// that died) `eprintln!` panics, and a sweep that had already acted ended with rc 101 and its
/// table unwritten. A note that cannot be written is dropped; the work and stdout go on.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
