//! The functions' log subscriber: Lambda's advanced logging controls, without a regex engine.
//!
//! `lambda_runtime`'s `init_default_subscriber` builds an `EnvFilter`, which links `regex-automata`
//! and `matchers` into every bootstrap for span-field filters nobody sets on a Lambda. This one
//! keeps what the functions use: the level from `AWS_LAMBDA_LOG_LEVEL` (template.yaml's
//! `ApplicationLogLevel`) or `RUST_LOG`, per-target directives (`medic_worker=debug,warn`), and
//! JSON lines when `AWS_LAMBDA_LOG_FORMAT` is `JSON`; like the default, no timestamp (CloudWatch
//! stamps each line) and no target.

use tracing_subscriber::filter::{LevelFilter, Targets};

/// Installs the subscriber for the process. Call once, first thing in `main`.
pub fn init() {
    use crate::settings::{AWS_LAMBDA_LOG_FORMAT, AWS_LAMBDA_LOG_LEVEL, RUST_LOG};
    let env = crate::config::Settings::from_env();
    let filter = log_filter(env.text(&AWS_LAMBDA_LOG_LEVEL).as_deref(), env.text(&RUST_LOG).as_deref());
    let json = env.text(&AWS_LAMBDA_LOG_FORMAT).is_some_and(|f| f.eq_ignore_ascii_case("json"));
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let registry = tracing_subscriber::registry().with(filter);
    let fmt = tracing_subscriber::fmt::layer().with_target(false).without_time().with_writer(std::io::stdout);
    // A second subscriber (a test harness's) is not an error worth failing a cold start for.
    let _ = if json { registry.with(fmt.json()).try_init() } else { registry.with(fmt).try_init() };
}

/// What is logged: `AWS_LAMBDA_LOG_LEVEL` sets the level for every target (Lambda's controls win,
/// as in `lambda_runtime`); `RUST_LOG` adds per-target directives, and its bare level is the
/// default when Lambda sets none; INFO otherwise. A directive that does not parse is ignored
/// rather than failing the cold start.
pub fn log_filter(lambda_level: Option<&str>, rust_log: Option<&str>) -> Targets {
    let directives: Option<Targets> = rust_log.and_then(|s| s.parse().ok());
    let lambda_level = lambda_level.and_then(lambda_log_level);
    let default = lambda_level.or_else(|| directives.as_ref().and_then(Targets::default_level)).unwrap_or(LevelFilter::INFO);
    let targets = Targets::new().with_default(default);
    match (directives, lambda_level) {
        (Some(d), None) => targets.with_targets(d),
        _ => targets,
    }
}

/// Lambda's application log levels: TRACE, DEBUG, INFO, WARN, ERROR, FATAL (`tracing` has no
/// fatal; its errors are the closest).
fn lambda_log_level(level: &str) -> Option<LevelFilter> {
    if level.eq_ignore_ascii_case("fatal") {
        return Some(LevelFilter::ERROR);
    }
    level.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    fn on(t: &Targets, target: &str, level: Level) -> bool {
        t.would_enable(target, &level)
    }

    #[test]
    fn info_by_default() {
        let t = log_filter(None, None);
        assert!(on(&t, "medic_worker", Level::INFO));
        assert!(!on(&t, "medic_worker", Level::DEBUG));
    }

    #[test]
    fn lambda_level_wins_over_rust_log() {
        let t = log_filter(Some("WARN"), Some("debug"));
        assert!(on(&t, "medic_worker", Level::WARN));
        assert!(!on(&t, "medic_worker", Level::INFO));
        let t = log_filter(Some("FATAL"), None);
        assert!(on(&t, "x", Level::ERROR));
        assert!(!on(&t, "x", Level::WARN));
        let t = log_filter(Some("trace"), None);
        assert!(on(&t, "x", Level::TRACE));
    }

    #[test]
    fn rust_log_directives_per_target() {
        let t = log_filter(None, Some("medic_worker=debug,warn"));
        assert!(on(&t, "medic_worker", Level::DEBUG));
        assert!(on(&t, "medic_worker::batch", Level::DEBUG));
        assert!(!on(&t, "aws_smithy_runtime", Level::INFO));
        assert!(on(&t, "aws_smithy_runtime", Level::WARN));
        // Without a bare level, the rest stays at INFO.
        let t = log_filter(None, Some("medic_worker=trace"));
        assert!(on(&t, "medic_worker", Level::TRACE));
        assert!(on(&t, "hyper", Level::INFO));
        assert!(!on(&t, "hyper", Level::DEBUG));
    }

    #[test]
    fn unknown_values_fall_back_to_info() {
        let t = log_filter(Some("loud"), Some("=[not a directive"));
        assert!(on(&t, "x", Level::INFO));
        assert!(!on(&t, "x", Level::DEBUG));
    }
}
