//! The one reader of settings, and Argo CD's connection settings.
//!
//! [`Settings`] is how every setting is read, by the functions ([`crate::lambda_env`]) and by the
//! CLI: one grammar for booleans and numbers, a blank value is an unset one, and a malformed value
//! is an error that names the variable (never silently the default). Argo CD's names follow the
//! argocd CLI where it has them (`ARGOCD_SERVER`, `ARGOCD_AUTH_TOKEN`, `--insecure`,
//! `--plaintext`, `--grpc-web-root-path`).

use std::collections::BTreeSet;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use secrecy::SecretString;
use thiserror::Error;

use crate::settings::{self as vars, Reader, Var, VarDefault};

/// How to reach one Argo CD instance.
#[derive(Debug, Clone)]
pub struct ArgoSettings {
    /// `host[:port]` as the argocd CLI takes it, or a full `http(s)://` URL.
    pub server: String,
    /// The API token of Argo Medic's account. Never logged (`SecretString` redacts `Debug`).
    pub token: SecretString,
    /// Skip TLS certificate verification. Off by default; for self-signed test instances only.
    pub insecure: bool,
    /// Plain HTTP (no TLS).
    pub plaintext: bool,
    /// CA certificates to trust besides the public roots (a private CA): PEM text, or the path
    /// of a PEM file (`ARGOCD_CA_BUNDLE`).
    pub ca_bundle: Option<String>,
    /// Root path when Argo CD is served under a prefix (`server.rootpath`), e.g. `/argocd`.
    pub root_path: String,
    /// Extra headers on every request (the CLI's `-H`, as argocd's): an access proxy's
    /// credentials, say. Their values are marked sensitive, so they are never logged.
    pub headers: Vec<(String, String)>,
    /// Timeout of one HTTP request. A refresh blocks until the controller has processed it, so
    /// this must cover a hard refresh of a large app.
    pub request_timeout: Duration,
    /// Total time one call may spend retrying (429, 5xx, timeouts) before giving up.
    pub retry_deadline: Duration,
    /// Most attempts of one call.
    pub max_attempts: usize,
    /// A `Retry-After` longer than this is not waited out in-process: the call fails as rate
    /// limited and the caller re-queues it.
    pub max_retry_after: Duration,
}

/// A missing or malformed setting.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SettingsError {
    #[error("environment variable `{0}` is required")]
    Missing(&'static str),
    #[error("environment variable `{name}`: {problem}")]
    Invalid { name: &'static str, problem: String },
    #[error("`{0}` is not a valid Argo CD server address")]
    BadServer(String),
    #[error("`ARGOCD_CA_BUNDLE`: {0}")]
    CaBundle(String),
    #[error("header `{0}`: not a valid HTTP header")]
    BadHeader(String),
}

/// The one boolean grammar of every setting read from the environment (the functions' and the
/// CLI's): `true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`, any case, around spaces. `None` for
/// anything else; an empty value is for the caller to treat as unset.
pub fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Looks one variable up.
type Lookup = dyn Fn(&str) -> Option<String> + Send + Sync;

/// Where settings are read from: the process environment, or a test's table. Cheap to clone.
///
/// Only a declared [`Var`] can be read. A `Settings` made `for_reader` a function checks that
/// the function's row declares the variable (a test build panics on one it does not: the code and
/// the table drifted apart), and every `Settings` remembers what was asked of it, so a test can
/// compare what a function read with what the template gives it.
#[derive(Clone)]
pub struct Settings {
    get: Arc<Lookup>,
    reader: Option<Reader>,
    asked: Arc<Mutex<BTreeSet<&'static str>>>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Settings {{ reader: {:?}, .. }}", self.reader)
    }
}

impl Settings {
    /// The process environment.
    pub fn from_env() -> Self {
        Self::from_fn(|name| std::env::var(name).ok())
    }

    /// Reads through `get` (tests pass a table).
    pub fn from_fn(get: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Self { get: Arc::new(get), reader: None, asked: Arc::default() }
    }

    /// The same settings, read by `reader`: each read is checked against its declarations.
    pub fn for_reader(self, reader: Reader) -> Self {
        Self { reader: Some(reader), ..self }
    }

    /// The names read so far, set or not (by this `Settings` and its clones).
    pub fn asked(&self) -> BTreeSet<&'static str> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The value of `var`; unset and blank are both `None` (its declared default is the caller's
    /// to apply: see [`Settings::text_or_default`]).
    pub fn text(&self, var: &Var) -> Option<String> {
        if let Some(reader) = self.reader {
            debug_assert!(var.read_by(reader), "{} reads `{}`, which its row in settings.rs does not declare", reader.as_str(), var.name);
        }
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).insert(var.name);
        (self.get)(var.name).filter(|v| !v.trim().is_empty())
    }

    /// The value of `var`, or its declared default value (`None` when it has none).
    pub fn text_or_default(&self, var: &Var) -> Option<String> {
        self.text(var).or_else(|| match var.default {
            VarDefault::Value(value) => Some(value.to_owned()),
            VarDefault::Required | VarDefault::Unset => None,
        })
    }

    pub fn required(&self, var: &Var) -> Result<String, SettingsError> {
        self.text(var).ok_or(SettingsError::Missing(var.name))
    }

    /// A boolean in the one grammar of [`parse_bool`]; its declared default when unset.
    pub fn flag(&self, var: &Var) -> Result<bool, SettingsError> {
        let name = var.name;
        match self.text_or_default(var) {
            None => Err(SettingsError::Missing(name)),
            Some(v) => parse_bool(&v)
                .ok_or_else(|| SettingsError::Invalid { name, problem: format!("`{v}` is not true/false (or 1/0, yes/no, on/off)") }),
        }
    }

    /// A number; its declared default when unset. `1s` or `ten` is an error, not the default.
    pub fn number<T: FromStr>(&self, var: &Var) -> Result<T, SettingsError> {
        let name = var.name;
        match self.text_or_default(var) {
            None => Err(SettingsError::Missing(name)),
            Some(v) => v.trim().parse().map_err(|_| SettingsError::Invalid { name, problem: format!("`{v}` is not a number") }),
        }
    }
}

impl ArgoSettings {
    pub fn new(server: impl Into<String>, token: impl Into<String>) -> Self {
        Self {
            server: server.into(),
            token: SecretString::from(token.into()),
            insecure: false,
            plaintext: false,
            ca_bundle: None,
            root_path: String::new(),
            headers: Vec::new(),
            request_timeout: Duration::from_secs(30),
            retry_deadline: Duration::from_secs(60),
            max_attempts: 5,
            max_retry_after: Duration::from_secs(30),
        }
    }

    /// Reads `ARGOCD_SERVER`, `ARGOCD_AUTH_TOKEN`, `ARGOCD_INSECURE`, `ARGOCD_PLAINTEXT`,
    /// `ARGOCD_ROOT_PATH` through `get` (the environment, or a test's map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Result<Self, SettingsError> {
        Self::from_settings(&Settings::from_fn(get))
    }

    /// [`ArgoSettings::connection`] with the server and the token both required.
    pub fn from_settings(settings: &Settings) -> Result<Self, SettingsError> {
        let server = settings.required(&vars::ARGOCD_SERVER)?;
        let token = settings.required(&vars::ARGOCD_AUTH_TOKEN)?;
        let connection = Self::connection(settings)?;
        Ok(Self { server, token: SecretString::from(token), ..connection })
    }

    /// How to reach Argo CD, without the token (the functions read it from Secrets Manager):
    /// `ARGOCD_SERVER` (empty when unset), `ARGOCD_INSECURE`, `ARGOCD_PLAINTEXT`,
    /// `ARGOCD_ROOT_PATH`, `ARGOCD_CA_BUNDLE`.
    pub fn connection(settings: &Settings) -> Result<Self, SettingsError> {
        let mut s = Self::new(settings.text(&vars::ARGOCD_SERVER).unwrap_or_default(), String::new());
        s.insecure = settings.flag(&vars::ARGOCD_INSECURE)?;
        s.plaintext = settings.flag(&vars::ARGOCD_PLAINTEXT)?;
        s.root_path = settings.text(&vars::ARGOCD_ROOT_PATH).unwrap_or_default();
        s.ca_bundle = settings.text(&vars::ARGOCD_CA_BUNDLE);
        Ok(s)
    }

    /// The CLI's connection: the process environment, read as the CLI.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_settings(&Settings::from_env().for_reader(Reader::Cli))
    }

    /// When the token expires (its JWT `exp`); `Ok(None)` when it never does.
    pub fn token_expiry(&self) -> Result<Option<chrono::DateTime<chrono::Utc>>, String> {
        crate::token::jwt_expiry(secrecy::ExposeSecret::expose_secret(&self.token))
    }

    /// The Argo CD UI's address for links: the API's base URL without its trailing slash.
    pub fn ui_url(&self) -> Option<String> {
        self.base_url().ok().map(|u| u.as_str().trim_end_matches('/').to_owned())
    }

    /// The PEM text of [`ArgoSettings::ca_bundle`]: the value itself when it holds a PEM block
    /// (a literal `\n` stands for a line break, for values that cannot hold one, like a stack
    /// parameter), otherwise the file it names.
    pub fn ca_bundle_pem(&self) -> Result<Option<Vec<u8>>, SettingsError> {
        let Some(value) = self.ca_bundle.as_deref().map(str::trim).filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        if value.contains("-----BEGIN") {
            return Ok(Some(value.replace("\\n", "\n").into_bytes()));
        }
        std::fs::read(value).map(Some).map_err(|e| SettingsError::CaBundle(format!("neither PEM text nor a readable file `{value}`: {e}")))
    }

    /// The base URL every API path is appended to, e.g. `https://argocd.example.com/argocd`.
    pub fn base_url(&self) -> Result<url::Url, SettingsError> {
        let server = self.server.trim().trim_end_matches('/');
        let with_scheme = if server.contains("://") {
            server.to_owned()
        } else {
            format!("{}://{server}", if self.plaintext { "http" } else { "https" })
        };
        let root = self.root_path.trim_matches('/');
        let full = if root.is_empty() { format!("{with_scheme}/") } else { format!("{with_scheme}/{root}/") };
        let url = url::Url::parse(&full).map_err(|_| SettingsError::BadServer(self.server.clone()))?;
        if url.host_str().is_none() || !matches!(url.scheme(), "http" | "https") {
            return Err(SettingsError::BadServer(self.server.clone()));
        }
        Ok(url)
    }
}

/// What kind of JSON value `v` is, without its content: for errors about a value that may be a
/// secret (a settings file, a Secrets Manager document).
pub fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;
    use std::collections::HashMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn settings_follow_the_argocd_cli_names() {
        let s = ArgoSettings::from_lookup(lookup(&[("ARGOCD_SERVER", "argocd.example.com:8443"), ("ARGOCD_AUTH_TOKEN", "t0k")])).unwrap();
        assert_eq!(s.base_url().unwrap().as_str(), "https://argocd.example.com:8443/");
        assert_eq!(s.token.expose_secret(), "t0k");
        assert!(!s.insecure, "TLS verification is on by default");
        let s = ArgoSettings::from_lookup(lookup(&[
            ("ARGOCD_SERVER", "127.0.0.1:8080"),
            ("ARGOCD_AUTH_TOKEN", "t"),
            ("ARGOCD_PLAINTEXT", "true"),
            ("ARGOCD_ROOT_PATH", "/argocd/"),
        ]))
        .unwrap();
        assert_eq!(s.base_url().unwrap().as_str(), "http://127.0.0.1:8080/argocd/");
    }

    #[test]
    fn missing_or_malformed_settings_are_named() {
        assert_eq!(ArgoSettings::from_lookup(lookup(&[])).unwrap_err(), SettingsError::Missing("ARGOCD_SERVER"));
        assert_eq!(ArgoSettings::from_lookup(lookup(&[("ARGOCD_SERVER", "x")])).unwrap_err(), SettingsError::Missing("ARGOCD_AUTH_TOKEN"));
        let err = ArgoSettings::from_lookup(lookup(&[("ARGOCD_SERVER", "x"), ("ARGOCD_AUTH_TOKEN", "t"), ("ARGOCD_INSECURE", "maybe")]))
            .unwrap_err();
        assert_eq!(err.to_string(), "environment variable `ARGOCD_INSECURE`: `maybe` is not true/false (or 1/0, yes/no, on/off)");
        assert!(ArgoSettings::new("ftp://x", "t").base_url().is_err());
        assert!(!format!("{:?}", ArgoSettings::new("x", "s3cr3t")).contains("s3cr3t"), "the token never shows in Debug output");
    }

    #[test]
    fn one_grammar_for_every_setting_blank_is_unset_and_malformed_is_named() {
        let s = Settings::from_fn(lookup(&[
            ("MEDIC_DRY_RUN", "  "),
            ("MEDIC_SYNC_PER_MINUTE", "  "),
            ("MEDIC_RECHECK_SECONDS", "1s"),
            ("MEDIC_MAX_RECEIVE_COUNT", " 42 "),
            ("MEDIC_KILL_SWITCH", "Yes"),
        ]));
        assert_eq!(s.text(&vars::MEDIC_DRY_RUN), None, "a blank value is an unset one");
        assert_eq!(s.flag(&vars::MEDIC_DRY_RUN), Ok(true), "and takes the declared default");
        assert_eq!(s.number(&vars::MEDIC_SYNC_PER_MINUTE), Ok(30u32));
        assert_eq!(s.number(&vars::MEDIC_MAX_RECEIVE_COUNT), Ok(42u32));
        assert_eq!(s.flag(&vars::MEDIC_KILL_SWITCH), Ok(true));
        assert_eq!(
            s.number::<u64>(&vars::MEDIC_RECHECK_SECONDS).unwrap_err().to_string(),
            "environment variable `MEDIC_RECHECK_SECONDS`: `1s` is not a number"
        );
        assert_eq!(s.required(&vars::QUEUE_URL), Err(SettingsError::Missing("QUEUE_URL")));
        assert!(s.asked().contains("QUEUE_URL") && s.asked().contains("MEDIC_KILL_SWITCH"), "what was asked is remembered");
    }

    #[test]
    #[should_panic(expected = "ingest reads `MEDIC_DRY_RUN`, which its row in settings.rs does not declare")]
    fn a_function_reading_a_variable_its_row_does_not_declare_fails_its_tests() {
        let s = Settings::from_fn(lookup(&[])).for_reader(Reader::Ingest);
        let _ = s.flag(&vars::MEDIC_DRY_RUN);
    }
}
