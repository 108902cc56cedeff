//! The argocd CLI's connection flags, so its users' habits carry over: `--server`, `--auth-token`,
//! `--plaintext`, `--insecure`, `--grpc-web-root-path`, `--server-crt`, `-H/--header`, and
//! `ARGOCD_OPTS`.
//!
//! Precedence is argocd's (`util/config/env.go`, `cmd/argocd/commands/root.go`): a flag on the
//! command line, then the same flag in `ARGOCD_OPTS`, then the environment variable
//! (`ARGOCD_SERVER`, ...). `ARGOCD_OPTS` is split as argocd splits it (shell words) and its flags
//! are put before the command line's, where clap keeps the last of each.
//!
//! [`ARGOCD_FLAGS`] holds one row per argocd flag Argo Medic knows: the ones it uses and the ones
//! it accepts from `ARGOCD_OPTS` and ignores, each with why.

use std::ffi::OsString;

use medic_adapters::config::{ArgoSettings, Settings, SettingsError};

/// What Argo Medic does with an argocd flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagUse {
    /// The flag sets this environment variable's setting (`None`: a setting without one).
    Sets(Option<&'static str>),
    /// Accepted in `ARGOCD_OPTS` and ignored, for this reason.
    Ignored(&'static str),
}

/// One argocd flag.
#[derive(Debug, Clone, Copy)]
pub struct ArgocdFlag {
    /// The long name, without `--`.
    pub long: &'static str,
    pub short: Option<char>,
    /// Takes a value (`--server X`); otherwise a switch (`--plaintext`).
    pub takes_value: bool,
    pub r#use: FlagUse,
}

const fn flag(long: &'static str, short: Option<char>, takes_value: bool, r#use: FlagUse) -> ArgocdFlag {
    ArgocdFlag { long, short, takes_value, r#use }
}

/// The argocd flags Argo Medic knows, one row each.
pub const ARGOCD_FLAGS: &[ArgocdFlag] = &[
    flag("server", None, true, FlagUse::Sets(Some("ARGOCD_SERVER"))),
    flag("auth-token", None, true, FlagUse::Sets(Some("ARGOCD_AUTH_TOKEN"))),
    flag("plaintext", None, false, FlagUse::Sets(Some("ARGOCD_PLAINTEXT"))),
    flag("insecure", None, false, FlagUse::Sets(Some("ARGOCD_INSECURE"))),
    flag("grpc-web-root-path", None, true, FlagUse::Sets(Some("ARGOCD_ROOT_PATH"))),
    flag("server-crt", None, true, FlagUse::Sets(Some("ARGOCD_CA_BUNDLE"))),
    flag("header", Some('H'), true, FlagUse::Sets(None)),
    flag("grpc-web", None, false, FlagUse::Ignored("Argo Medic speaks Argo CD's REST API, which needs no gRPC-Web")),
    flag(
        "http-retry-max",
        None,
        true,
        FlagUse::Ignored("Argo Medic retries reads with its own backoff and never retries a change blindly"),
    ),
    flag("config", None, true, FlagUse::Ignored("the argocd CLI's login contexts are not read: give --server and --auth-token")),
    flag("loglevel", None, true, FlagUse::Sets(None)),
    flag("logformat", None, true, FlagUse::Ignored("Argo Medic logs JSON on Lambda and text on a terminal")),
];

/// The connection flags as `medic`'s commands take them (global: before or after the command).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ArgoFlags {
    /// Argo CD's API server, host[:port] or a URL [env: ARGOCD_SERVER].
    #[arg(long, global = true, value_name = "ADDRESS")]
    pub server: Option<String>,
    /// The API token of Argo Medic's account [env: ARGOCD_AUTH_TOKEN].
    #[arg(long, global = true, value_name = "TOKEN")]
    pub auth_token: Option<String>,
    /// Plain HTTP, no TLS [env: ARGOCD_PLAINTEXT].
    #[arg(long, global = true)]
    pub plaintext: bool,
    /// Skip verifying the server's certificate [env: ARGOCD_INSECURE].
    #[arg(long, global = true)]
    pub insecure: bool,
    /// The path Argo CD is served under, server.rootpath [env: ARGOCD_ROOT_PATH].
    #[arg(long, global = true, value_name = "PATH")]
    pub grpc_web_root_path: Option<String>,
    /// A PEM file of the CA (or certificate) the server's certificate chains to [env: ARGOCD_CA_BUNDLE].
    #[arg(long, global = true, value_name = "FILE")]
    pub server_crt: Option<String>,
    /// An extra header on every request to Argo CD, `Name: value` (repeat it), e.g. for an access proxy.
    #[arg(short = 'H', long = "header", global = true, value_name = "HEADER", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// How long one request to Argo CD may take, connecting included (connecting: at most 10s):
    /// 30s (the default), 2m.
    #[arg(long, global = true, value_name = "DURATION", value_parser = duration_arg)]
    pub request_timeout: Option<std::time::Duration>,
    /// How long a read that failed for a passing reason (refused, timed out, 429, 5xx) is retried
    /// with backoff before it is given up: 60s (the default), 5m; 0 retries nothing. A call waits
    /// at most this plus --request-timeout.
    #[arg(long, global = true, value_name = "DURATION", value_parser = duration_arg)]
    pub retry_for: Option<std::time::Duration>,
    /// Log level: debug, info, warn or error [env: MEDIC_LOG, which also takes per-target
    /// directives such as medic_worker=debug,warn; default warn].
    #[arg(long, global = true, value_name = "LEVEL", value_parser = ["debug", "info", "warn", "error"])]
    pub loglevel: Option<String>,
    /// Accepted from ARGOCD_OPTS and ignored (REST needs no gRPC-Web).
    #[arg(long, global = true, hide = true)]
    pub grpc_web: bool,
}

fn parse_header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text.split_once(':').ok_or_else(|| format!("`{text}` is not `Name: value`"))?;
    let name = name.trim();
    hyper::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| format!("`{name}` is not a header name"))?;
    let value = value.trim();
    hyper::header::HeaderValue::from_str(value).map_err(|_| format!("the value of `{name}` is not a valid header value"))?;
    Ok((name.to_owned(), value.to_owned()))
}

impl ArgoFlags {
    /// The flag's value for environment variable `var`, if the flag was given.
    fn value_for(&self, var: &str) -> Option<String> {
        match var {
            "ARGOCD_SERVER" => self.server.clone(),
            "ARGOCD_AUTH_TOKEN" => self.auth_token.clone(),
            "ARGOCD_PLAINTEXT" => self.plaintext.then(|| "true".to_owned()),
            "ARGOCD_INSECURE" => self.insecure.then(|| "true".to_owned()),
            "ARGOCD_ROOT_PATH" => self.grpc_web_root_path.clone(),
            "ARGOCD_CA_BUNDLE" => self.server_crt.clone(),
            _ => None,
        }
    }

    /// Whether an Argo CD server is named, by `--server` (or ARGOCD_OPTS) or ARGOCD_SERVER.
    pub fn server_given(&self) -> bool {
        self.value_for("ARGOCD_SERVER").or_else(|| std::env::var("ARGOCD_SERVER").ok()).is_some_and(|s| !s.trim().is_empty())
    }

    /// Argo CD's settings: each flag given over its environment variable, the rest from the
    /// environment, validated as the functions validate theirs.
    pub fn settings(&self) -> Result<ArgoSettings, SettingsError> {
        let flags = self.clone();
        let settings = Settings::from_fn(move |var| flags.value_for(var).or_else(|| std::env::var(var).ok()))
            .for_reader(medic_adapters::settings::Reader::Cli);
        let mut argo = ArgoSettings::from_settings(&settings)?;
        argo.headers.clone_from(&self.headers);
        argo.request_timeout = self.request_timeout.unwrap_or(argo.request_timeout);
        argo.retry_deadline = self.retry_for.unwrap_or(argo.retry_deadline);
        Ok(argo)
    }
}

/// A duration flag: 90s, 5m, or a bare number of seconds.
pub fn duration_arg(text: &str) -> Result<std::time::Duration, String> {
    match text.trim().parse::<u64>() {
        Ok(secs) => Ok(std::time::Duration::from_secs(secs)),
        Err(_) => humantime::parse_duration(text.trim()).map_err(|e| format!("`{text}` is not a duration such as 90s or 5m: {e}")),
    }
}

/// The command line with `ARGOCD_OPTS`'s flags put first (after the program name), so a flag the
/// command line gives again wins; and a note per flag of it that is dropped. `opts` is the
/// variable's value.
pub fn with_argocd_opts(args: Vec<OsString>, opts: Option<&str>) -> Result<(Vec<OsString>, Vec<String>), String> {
    let Some(opts) = opts.filter(|o| !o.trim().is_empty()) else { return Ok((args, Vec::new())) };
    let words = shlex::split(opts).ok_or_else(|| format!("ARGOCD_OPTS `{opts}` is not shell words (an unclosed quote?)"))?;
    let mut kept = Vec::new();
    let mut notes = Vec::new();
    let mut words = words.into_iter().peekable();
    while let Some(word) = words.next() {
        let (name, inline) = match word.strip_prefix("--") {
            Some(rest) => match rest.split_once('=') {
                Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
                None => (rest.to_owned(), None),
            },
            None => match word.strip_prefix('-').and_then(|s| s.chars().next().map(|c| (c, s[c.len_utf8()..].to_owned()))) {
                Some((short, rest)) => match ARGOCD_FLAGS.iter().find(|f| f.short == Some(short)) {
                    Some(f) => (f.long.to_owned(), Some(rest.trim_start_matches('=').to_owned()).filter(|r| !r.is_empty())),
                    None => return Err(format!("ARGOCD_OPTS: `{word}` is not an argocd flag Argo Medic knows")),
                },
                None => return Err(format!("ARGOCD_OPTS: `{word}` is not a flag")),
            },
        };
        let Some(flag) = ARGOCD_FLAGS.iter().find(|f| f.long == name) else {
            // argocd has more global flags than these; an unknown one may take a value, which
            // cannot be told from here: say so and drop a following word that is not a flag.
            if inline.is_none() && words.peek().is_some_and(|next| !next.starts_with('-')) {
                words.next();
            }
            notes.push(format!("medic: ARGOCD_OPTS: --{name} is not used by Argo Medic; ignored"));
            continue;
        };
        let value = match (flag.takes_value, inline) {
            (true, Some(value)) => Some(value),
            (true, None) => Some(words.next().ok_or_else(|| format!("ARGOCD_OPTS: --{name} needs a value"))?),
            // argocd's switches take `--plaintext=false` too.
            (false, Some(value)) => match medic_adapters::config::parse_bool(&value) {
                Some(true) => None,
                Some(false) => continue,
                None => return Err(format!("ARGOCD_OPTS: --{name}={value} is not true or false")),
            },
            (false, None) => None,
        };
        match flag.r#use {
            FlagUse::Ignored(why) => notes.push(format!("medic: ARGOCD_OPTS: --{name} ignored: {why}")),
            FlagUse::Sets(_) => {
                kept.push(OsString::from(format!("--{name}")));
                kept.extend(value.map(OsString::from));
            }
        }
    }
    let mut args = args.into_iter();
    let mut spliced: Vec<OsString> = args.next().into_iter().collect();
    spliced.extend(kept);
    spliced.extend(args);
    Ok((spliced, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn argocd_opts_go_first_so_the_command_line_wins_and_unused_flags_are_named() {
        let (args, notes) = with_argocd_opts(
            os(&["medic", "sweep", "--server", "mine:443"]),
            Some(r#"--server=theirs:443 --grpc-web --auth-token "a b" --port-forward-namespace argocd -H 'X-A: 1' --plaintext=false"#),
        )
        .unwrap();
        assert_eq!(
            args,
            os(&["medic", "--server", "theirs:443", "--auth-token", "a b", "--header", "X-A: 1", "sweep", "--server", "mine:443"])
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("--grpc-web ignored") && notes[1].contains("--port-forward-namespace is not used"), "{notes:?}");
    }

    #[test]
    fn malformed_argocd_opts_are_errors_that_name_the_word() {
        assert!(with_argocd_opts(os(&["medic"]), Some("--server")).unwrap_err().contains("--server needs a value"));
        assert!(with_argocd_opts(os(&["medic"]), Some("--server 'x")).unwrap_err().contains("not shell words"));
        assert!(with_argocd_opts(os(&["medic"]), Some("server")).unwrap_err().contains("`server` is not a flag"));
        assert!(with_argocd_opts(os(&["medic"]), Some("--insecure=maybe")).unwrap_err().contains("not true or false"));
        assert_eq!(with_argocd_opts(os(&["medic", "x"]), Some("  ")).unwrap(), (os(&["medic", "x"]), Vec::new()));
    }

    #[test]
    fn a_header_is_name_colon_value() {
        assert_eq!(parse_header("CF-Access-Client-Id: abc.def "), Ok(("CF-Access-Client-Id".into(), "abc.def".into())));
        assert!(parse_header("no colon").is_err());
        assert!(parse_header("bad name: x").is_err());
    }

    #[test]
    fn flags_go_over_the_environment_variables_they_stand_for() {
        let every = ArgoFlags {
            server: Some("flag:443".into()),
            auth_token: Some("a.b.c".into()),
            plaintext: false,
            insecure: true,
            grpc_web_root_path: Some("/argocd".into()),
            server_crt: Some("/ca.pem".into()),
            headers: vec![("X-A".into(), "1".into())],
            request_timeout: Some(std::time::Duration::from_secs(5)),
            retry_for: Some(std::time::Duration::ZERO),
            loglevel: None,
            grpc_web: true,
        };
        // Every row that stands for a variable is read from its flag (--plaintext is off here).
        for row in ARGOCD_FLAGS {
            if let FlagUse::Sets(Some(var)) = row.r#use {
                assert_eq!(every.value_for(var).is_some(), row.long != "plaintext", "--{} stands for {var}", row.long);
                assert_eq!(ArgoFlags::default().value_for(var), None);
            }
        }
        let settings = ArgoFlags { server_crt: None, ..every }.settings().unwrap();
        assert_eq!((settings.server.as_str(), settings.insecure, settings.root_path.as_str()), ("flag:443", true, "/argocd"));
        assert_eq!(settings.headers, vec![("X-A".to_owned(), "1".to_owned())]);
        assert_eq!((settings.request_timeout.as_secs(), settings.retry_deadline.as_secs()), (5, 0));
        let defaults = ArgoFlags { server: Some("x".into()), auth_token: Some("a.b.c".into()), ..ArgoFlags::default() }.settings().unwrap();
        assert_eq!((defaults.request_timeout.as_secs(), defaults.retry_deadline.as_secs()), (30, 60), "the help's defaults");
    }
}
