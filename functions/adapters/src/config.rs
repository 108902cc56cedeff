//! Argo CD connection settings. Names follow the argocd CLI where it has them (`ARGOCD_SERVER`,
//! `ARGOCD_AUTH_TOKEN`, `--insecure`, `--plaintext`, `--grpc-web-root-path`).

use std::time::Duration;

use secrecy::SecretString;
use thiserror::Error;

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
    #[error("environment variable `{name}` is not a boolean: `{value}`")]
    NotBool { name: &'static str, value: String },
    #[error("`{0}` is not a valid Argo CD server address")]
    BadServer(String),
    #[error("`ARGOCD_CA_BUNDLE`: {0}")]
    CaBundle(String),
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

impl ArgoSettings {
    pub fn new(server: impl Into<String>, token: impl Into<String>) -> Self {
        Self {
            server: server.into(),
            token: SecretString::from(token.into()),
            insecure: false,
            plaintext: false,
            ca_bundle: None,
            root_path: String::new(),
            request_timeout: Duration::from_secs(30),
            retry_deadline: Duration::from_secs(60),
            max_attempts: 5,
            max_retry_after: Duration::from_secs(30),
        }
    }

    /// Reads `ARGOCD_SERVER`, `ARGOCD_AUTH_TOKEN`, `ARGOCD_INSECURE`, `ARGOCD_PLAINTEXT`,
    /// `ARGOCD_ROOT_PATH` through `get` (the environment, or a test's map).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let server = get("ARGOCD_SERVER").filter(|s| !s.is_empty()).ok_or(SettingsError::Missing("ARGOCD_SERVER"))?;
        let token = get("ARGOCD_AUTH_TOKEN").filter(|s| !s.is_empty()).ok_or(SettingsError::Missing("ARGOCD_AUTH_TOKEN"))?;
        let flag = |name: &'static str| -> Result<bool, SettingsError> {
            match get(name).as_deref().map(str::trim) {
                None | Some("") => Ok(false),
                Some(v) => parse_bool(v).ok_or_else(|| SettingsError::NotBool { name, value: v.to_owned() }),
            }
        };
        let mut s = Self::new(server, token);
        s.insecure = flag("ARGOCD_INSECURE")?;
        s.plaintext = flag("ARGOCD_PLAINTEXT")?;
        s.root_path = get("ARGOCD_ROOT_PATH").unwrap_or_default();
        s.ca_bundle = get("ARGOCD_CA_BUNDLE").filter(|v| !v.trim().is_empty());
        Ok(s)
    }

    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_lookup(|k| std::env::var(k).ok())
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
        assert_eq!(err.to_string(), "environment variable `ARGOCD_INSECURE` is not a boolean: `maybe`");
        assert!(ArgoSettings::new("ftp://x", "t").base_url().is_err());
        assert!(!format!("{:?}", ArgoSettings::new("x", "s3cr3t")).contains("s3cr3t"), "the token never shows in Debug output");
    }
}
