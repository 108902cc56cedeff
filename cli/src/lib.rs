//! The `medic` command's library: input loading, sample scenarios and output rendering, shared by
//! the binary and the integration tests.
// Notes go through `note!`: `eprintln!` panics when stderr is closed.
#![deny(clippy::print_stderr)]

pub mod app;
pub mod argocd_flags;
pub mod check;
pub mod check_stack;
pub mod incidents;
pub mod input;
pub mod output;
pub mod render;
pub mod report;
pub mod scenario;
pub mod serve;
pub mod slack_click;
pub mod sweep;
pub mod sweep_cmd;
pub mod sweep_out;

/// The sample fleet, compiled in (cli/build.rs).
pub mod samples {
    include!(concat!(env!("OUT_DIR"), "/samples.rs"));

    /// Where `--apps` and `--outcomes` point by default: the repository's own files, read when
    /// they are there (an edited sample counts), the compiled-in ones elsewhere.
    pub const DEFAULT_APPS: &str = "events/apps";
    pub const DEFAULT_OUTCOMES: &str = "events/sim/outcomes.json";
}

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

/// `medic`'s exit statuses beside 0 (done), every command (docs/cli.md).
pub mod exit {
    /// Done in part: an app whose step ended in an error (an escalation, a wait or a deferral is
    /// not one), an app that could not be decided, a `medic check` that found a failure.
    pub const PARTIAL: u8 = 1;
    /// A usage error or bad input, before any work: a flag out of range, an unreadable file, a
    /// missing setting.
    pub const USAGE: u8 = 2;
    /// Argo CD could not be reached or did not answer as Argo CD: refused, timed out, TLS, a
    /// redirect or an HTML page, a failing Argo CD.
    pub const CONNECTION: u8 = 3;
    /// Argo CD refused the token (invalid, expired) or its RBAC refused the account.
    pub const AUTHENTICATION: u8 = 4;
    /// Stopped by SIGINT or SIGTERM before the end (a shell's 128 + SIGINT): what was done is
    /// printed, the apps not looked at are the next run's.
    pub const INTERRUPTED: u8 = 130;

    /// The status of a command that failed with `error`: from the Argo CD error beneath it, if any.
    pub fn of(error: &anyhow::Error) -> u8 {
        use medic_core::ports::ArgoError;

        use crate::sweep::SweepError;
        let argo = error.chain().find_map(|e| {
            e.downcast_ref::<ArgoError>().or_else(|| e.downcast_ref::<crate::check::Unreached>().map(|u| &u.error)).or_else(|| {
                match e.downcast_ref::<SweepError>()? {
                    SweepError::List(argo) | SweepError::Unauthenticated(argo) => Some(argo),
                    SweepError::Store(_) => None,
                }
            })
        });
        match argo {
            Some(ArgoError::Unauthenticated(_) | ArgoError::PermissionDenied(_)) => AUTHENTICATION,
            Some(_) => CONNECTION,
            None => USAGE,
        }
    }
}

/// The SQLite state, under the names medic's modules had when it lived here.
pub use medic_adapters::sqlite::dedupe as local_dedupe;
pub use medic_adapters::sqlite::queue as local_queue;
pub use medic_adapters::sqlite::store;
