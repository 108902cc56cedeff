//! The shared AWS SDK configuration of the SQS and DynamoDB adapters, and how their errors are
//! described.
//!
//! The SDK crates are built without their default HTTPS clients (see the adapters' Cargo.toml),
//! so every configuration made here carries [`http_client`]: reqwest with rustls on `ring`
//! ([`crate::sdk_http`]), the HTTPS client the Argo CD client already uses.
//!
//! Its root certificates are the Amazon Trust Services roots, compiled in ([`Roots::CompiledIn`]),
//! unless the deployment names its own or runs where AWS uses other CAs ([`Roots::for_env`]):
//! reading the system's store took 2.7-3.5 ms of every cold start that called AWS (147 files on
//! Debian), and parsing all of Mozilla's roots compiled in was still the largest piece of CPU in
//! slack-actions' init (perf under the envelope), for five roots the endpoints chain to.

use std::error::Error;

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::{Credentials, SharedHttpClient};
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

use rustls::pki_types::TrustAnchor;

use crate::sdk_http::{ReqwestSdkClient, TlsSetup};

/// The region used with an explicit endpoint (moto, local mode).
pub const LOCAL_REGION: &str = "us-east-1";

/// Variables that name certificates to trust: with one set, the system's store is read
/// (rustls-native-certs honours `SSL_CERT_FILE` and `SSL_CERT_DIR`; `AWS_CA_BUNDLE` is the AWS
/// tools' name, which the Rust SDK does not read itself, so its certificates go in the system's).
pub const CA_BUNDLE_VARS: [&str; 3] = ["AWS_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR"];

/// The roots AWS's endpoint certificates chain to (Amazon Trust Services), by common name: the
/// trust store AWS documents for its endpoints. Found among Mozilla's (`webpki-roots`).
pub const AMAZON_TRUST_SERVICES: [&str; 5] =
    ["Amazon Root CA 1", "Amazon Root CA 2", "Amazon Root CA 3", "Amazon Root CA 4", "Starfield Services Root Certificate Authority - G2"];

/// Where the SDK's HTTPS client takes its root certificates from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Roots {
    /// The Amazon Trust Services roots ([`AMAZON_TRUST_SERVICES`]) compiled into the binary, as
    /// trust anchors (from `webpki-roots`, the copy of Mozilla's roots reqwest already carries):
    /// no file is read and nothing is parsed.
    CompiledIn,
    /// The system's store (`/etc/ssl/certs`, `SSL_CERT_FILE`, ...), read on the first request.
    Native,
}

impl Roots {
    /// The roots for this environment (`vars`: name and value of each variable) and explicit
    /// endpoint: the system's when a CA bundle variable ([`CA_BUNDLE_VARS`]) is set or an AWS
    /// endpoint is overridden over HTTPS (`endpoint_url`, `AWS_ENDPOINT_URL`,
    /// `AWS_ENDPOINT_URL_<SERVICE>`: a VPC endpoint or proxy may present a private CA installed
    /// there), or in a region of a partition whose endpoints other CAs sign (China `cn-*`, the
    /// isolated `*-iso*` ones); else the compiled-in ones. A plain `http://` override (moto,
    /// local mode) makes no TLS connection to that endpoint, so it changes nothing.
    pub fn for_env<I, K, V>(vars: I, endpoint_url: Option<&str>) -> Roots
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let https = |url: &str| !url.trim().to_ascii_lowercase().starts_with("http://");
        let mut native = endpoint_url.is_some_and(https);
        for (name, value) in vars {
            let (name, value) = (name.as_ref(), value.as_ref());
            if value.trim().is_empty() {
                continue;
            }
            native |= CA_BUNDLE_VARS.contains(&name);
            native |= (name == "AWS_ENDPOINT_URL" || name.starts_with("AWS_ENDPOINT_URL_")) && https(value);
            let region = value.trim().to_ascii_lowercase();
            native |= (name == "AWS_REGION" || name == "AWS_DEFAULT_REGION") && (region.starts_with("cn-") || region.contains("-iso"));
        }
        if native { Roots::Native } else { Roots::CompiledIn }
    }
}

/// The compiled-in roots: Mozilla's trust anchors whose subject names one of
/// [`AMAZON_TRUST_SERVICES`] (a subject's DER holds its common name as plain text), searched with
/// memchr's vectorised `memmem`. The anchors are the ones `webpki-roots` compiles in for reqwest:
/// one copy of Mozilla's roots in each bootstrap, already decoded.
fn amazon_trust_services() -> impl Iterator<Item = &'static TrustAnchor<'static>> {
    let finders: Vec<memchr::memmem::Finder<'static>> = AMAZON_TRUST_SERVICES.iter().map(memchr::memmem::Finder::new).collect();
    webpki_roots::TLS_SERVER_ROOTS.iter().filter(move |anchor| finders.iter().any(|f| f.find(anchor.subject.as_ref()).is_some()))
}

/// The roots a connector of the SDK trusts: `roots` only, never reqwest's built-in set.
fn root_store(roots: Roots) -> rustls::RootCertStore {
    match roots {
        Roots::CompiledIn => rustls::RootCertStore { roots: amazon_trust_services().cloned().collect() },
        Roots::Native => {
            let found = rustls_native_certs::load_native_certs();
            for e in &found.errors {
                tracing::warn!(error = %e, "a certificate of the system's store could not be read");
            }
            let mut store = rustls::RootCertStore::empty();
            let (_, ignored) = store.add_parsable_certificates(found.certs);
            if ignored > 0 {
                tracing::warn!(ignored, "certificates of the system's store are not usable roots");
            }
            store
        }
    }
}

/// How the SDK's reqwest clients trust servers: a rustls configuration (ring, TLS 1.2 and 1.3)
/// over [`root_store`], built with each connector (the system's store is read when the first SDK
/// connector is made, not at init).
pub fn tls_setup(roots: Roots) -> TlsSetup {
    tls_setup_over(move || root_store(roots))
}

/// [`tls_setup`] over the roots `store` gives.
fn tls_setup_over(store: impl Fn() -> rustls::RootCertStore + Send + Sync + 'static) -> TlsSetup {
    std::sync::Arc::new(move |builder: reqwest::ClientBuilder| {
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        match rustls::ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions() {
            Ok(config) => builder.use_preconfigured_tls(config.with_root_certificates(store()).with_no_client_auth()),
            // Not with ring's provider; should it happen, no root is trusted: every call fails.
            Err(e) => {
                tracing::error!(error = %e, "no TLS configuration for the AWS SDK");
                builder.tls_built_in_root_certs(false)
            }
        }
    })
}

/// The HTTPS client of every SDK client made here: reqwest + rustls (ring), trusting `roots`.
pub fn http_client_with(roots: Roots) -> SharedHttpClient {
    ReqwestSdkClient::shared(tls_setup(roots))
}

/// [`http_client_with`] the roots of this process's environment ([`Roots::for_env`]).
pub fn http_client() -> SharedHttpClient {
    http_client_with(Roots::for_env(env_vars(), None))
}

/// The process's variables (a name or value that is not UTF-8 read lossily, not a panic).
fn env_vars() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()))
}

/// The SDK configuration.
///
/// With `endpoint_url` (tests against moto_server, local mode) every service is reached there, in
/// [`LOCAL_REGION`], with static test credentials; nothing is read from the environment.
/// Without it the default chains apply: region and credentials from the environment (what Lambda
/// sets), web identity, the shared config files or the container/instance metadata.
pub async fn sdk_config(endpoint_url: Option<&str>) -> SdkConfig {
    let roots = Roots::for_env(env_vars(), endpoint_url);
    let loader = aws_config::defaults(BehaviorVersion::latest()).http_client(http_client_with(roots));
    match endpoint_url {
        Some(url) => {
            loader
                .endpoint_url(url)
                .region(Region::new(LOCAL_REGION))
                .credentials_provider(Credentials::new("test", "test", None, None, "static"))
                .load()
                .await
        }
        None => loader.load().await,
    }
}

/// Describes a failed SDK call for a log line or an error value: `operation: Code: message` for
/// an error the service returned, else the error and its causes (`dispatch failure: io error:
/// Connection refused`). Never the `Debug` dump, which carries the whole raw HTTP response.
pub fn describe<E, R>(operation: &str, err: &SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + Error + 'static,
    R: std::fmt::Debug + 'static,
{
    if let SdkError::ServiceError(service) = err {
        let e = service.err();
        match (e.code(), e.message()) {
            (Some(code), Some(message)) => return format!("{operation}: {code}: {message}"),
            (Some(code), None) => return format!("{operation}: {code}"),
            _ => {}
        }
    }
    format!("{operation}: {}", chain(err))
}

/// Whether a failed SDK call may succeed if tried again later: no answer (a timeout, a dropped
/// connection, a response that did not parse), throttling, a 5xx, a transaction that conflicted.
/// A request the service refused as it stands (validation, access, a missing resource) will not.
pub fn retryable<E, R>(err: &SdkError<E, R>) -> bool
where
    E: ProvideErrorMetadata,
{
    const LATER: [&str; 10] = [
        "ThrottlingException",
        "Throttling",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "LimitExceededException",
        "InternalServerError",
        "InternalFailure",
        "ServiceUnavailable",
        "TransactionConflictException",
        "TransactionInProgressException",
    ];
    match err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => true,
        SdkError::ServiceError(service) => service.err().code().is_some_and(|code| LATER.contains(&code)),
        _ => false,
    }
}

/// A failed SDK call as a port's error (a store's, the queue's): described as [`describe`]
/// does, classified by [`retryable`], with the SDK error as its cause.
pub fn port_error<P, E, R>(operation: &str, err: SdkError<E, R>) -> P
where
    P: medic_core::ports::PortError,
    E: ProvideErrorMetadata + Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    P::classified(retryable(&err), describe(operation, &err)).caused_by(err)
}

/// [`port_error`] as the stores' error.
pub fn store_error<E, R>(operation: &str, err: SdkError<E, R>) -> medic_core::ports::StoreError
where
    E: ProvideErrorMetadata + Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    port_error(operation, err)
}

/// An error and its sources, `: `-separated, each level once (SDK errors often repeat their
/// source's text in their own).
pub fn chain(err: &(dyn Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !text.is_empty() && !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What may pass and what will not, as the stores' errors classify a failed SDK call.
    #[test]
    fn a_failed_call_is_retryable_when_it_may_pass() {
        use aws_sdk_dynamodb::operation::get_item::GetItemError;
        use aws_smithy_types::error::ErrorMetadata;
        let refused = |code: &str| {
            let raw = aws_smithy_runtime_api::http::Response::new(
                aws_smithy_runtime_api::http::StatusCode::try_from(400).unwrap(),
                aws_smithy_types::body::SdkBody::empty(),
            );
            SdkError::service_error(GetItemError::generic(ErrorMetadata::builder().code(code).message("m").build()), raw)
        };
        assert!(retryable(&refused("ThrottlingException")));
        assert!(retryable(&refused("ProvisionedThroughputExceededException")));
        assert!(retryable(&refused("InternalServerError")));
        assert!(!retryable(&refused("ValidationException")));
        assert!(!retryable(&refused("ResourceNotFoundException")));
        assert!(!retryable(&refused("AccessDeniedException")));
        let timeout: SdkError<GetItemError, aws_smithy_runtime_api::http::Response> = SdkError::timeout_error("timed out");
        assert!(retryable(&timeout));
        let built: SdkError<GetItemError, aws_smithy_runtime_api::http::Response> = SdkError::construction_failure("no table name");
        assert!(!retryable(&built));
        let stored = store_error("DynamoDB GetItem t", refused("ThrottlingException"));
        assert!(stored.retryable() && stored.to_string().contains("ThrottlingException: m"), "{stored}");
        assert!(std::error::Error::source(&stored).is_some(), "the SDK error is the cause");
    }

    #[derive(Debug)]
    struct Outer(Inner);
    #[derive(Debug)]
    struct Inner;
    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("dispatch failure")
        }
    }
    impl std::fmt::Display for Inner {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("connection refused")
        }
    }
    impl Error for Inner {}
    impl Error for Outer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn an_error_chain_reads_as_one_line_of_display_texts() {
        assert_eq!(chain(&Outer(Inner)), "dispatch failure: connection refused");
    }

    #[test]
    fn the_compiled_in_roots_serve_unless_the_deployment_names_its_own_cas_or_an_https_endpoint() {
        let none: [(&str, &str); 0] = [];
        assert_eq!(Roots::for_env(none, None), Roots::CompiledIn, "Lambda's environment: AWS over HTTPS, public roots");
        assert_eq!(Roots::for_env([("AWS_REGION", "eu-west-1"), ("PATH", "/usr/bin")], None), Roots::CompiledIn);
        for var in CA_BUNDLE_VARS {
            assert_eq!(Roots::for_env([(var, "/etc/pki/private-ca.pem")], None), Roots::Native, "{var}");
            assert_eq!(Roots::for_env([(var, "  ")], None), Roots::CompiledIn, "a blank {var} is an unset one");
        }
        // An endpoint over HTTPS may present a private CA installed in the system's store.
        assert_eq!(Roots::for_env(none, Some("https://vpce-0123.sqs.us-east-1.vpce.amazonaws.com")), Roots::Native);
        assert_eq!(Roots::for_env([("AWS_ENDPOINT_URL", "https://proxy.internal")], None), Roots::Native);
        assert_eq!(Roots::for_env([("AWS_ENDPOINT_URL_SECRETS_MANAGER", "https://proxy.internal")], None), Roots::Native);
        // Plain HTTP (moto, local mode) opens no TLS connection to it.
        assert_eq!(Roots::for_env(none, Some("http://127.0.0.1:5000")), Roots::CompiledIn);
        // Partitions whose endpoints other CAs sign: the system's store.
        assert_eq!(Roots::for_env([("AWS_REGION", "cn-north-1")], None), Roots::Native);
        assert_eq!(Roots::for_env([("AWS_DEFAULT_REGION", "us-iso-east-1")], None), Roots::Native);
        assert_eq!(Roots::for_env([("AWS_REGION", "us-gov-west-1")], None), Roots::CompiledIn);
        assert_eq!(Roots::for_env([("AWS_ENDPOINT_URL_SQS", "HTTP://127.0.0.1:5000")], None), Roots::CompiledIn);
    }

    #[test]
    fn the_compiled_in_store_holds_the_five_amazon_trust_services_roots() {
        let roots: Vec<_> = amazon_trust_services().collect();
        assert_eq!(roots.len(), AMAZON_TRUST_SERVICES.len(), "each named root found once among Mozilla's");
        for name in AMAZON_TRUST_SERVICES {
            let holding = roots.iter().filter(|r| r.subject.as_ref().windows(name.len()).any(|w| w == name.as_bytes())).count();
            assert_eq!(holding, 1, "{name}");
        }
        assert_eq!(root_store(Roots::CompiledIn).len(), AMAZON_TRUST_SERVICES.len(), "those five and no other");
    }

    /// The roots are loaded when the SDK makes its first connector, so a call is made: it must
    /// fail on the network, nothing earlier.
    #[tokio::test]
    async fn a_call_through_the_compiled_in_roots_reaches_the_network() {
        for roots in [Roots::CompiledIn, Roots::Native] {
            let config = aws_sdk_sqs::config::Builder::new()
                .behavior_version(BehaviorVersion::latest())
                .region(Region::new(LOCAL_REGION))
                .credentials_provider(Credentials::new("test", "test", None, None, "static"))
                .endpoint_url("https://127.0.0.1:1")
                .retry_config(aws_config::retry::RetryConfig::disabled())
                .http_client(http_client_with(roots))
                .build();
            let err = aws_sdk_sqs::Client::from_conf(config).list_queues().send().await.unwrap_err();
            // A connector whose TLS configuration reqwest refused fails every call as a user
            // error before any connection: this one got as far as the refused connect.
            let SdkError::DispatchFailure(d) = &err else { panic!("{roots:?}: {}", chain(&err)) };
            assert!(d.is_io(), "{roots:?}: {}", chain(&err));
        }
    }

    /// A TLS server on 127.0.0.1 whose certificate (for the IP) a fresh CA signed; it answers
    /// every request on one connection with an empty SQS JSON response. Gives its URL and the CA.
    async fn tls_server() -> (String, rustls::pki_types::CertificateDer<'static>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name.push(rcgen::DnType::CommonName, "Argo Medic test CA");
        let ca = ca.self_signed(&ca_key).unwrap();
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap().signed_by(&leaf_key, &ca, &ca_key).unwrap();
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![leaf.der().clone()], rustls::pki_types::PrivatePkcs8KeyDer::from(leaf_key.serialize_der()).into())
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // A client that refuses the certificate ends the handshake here.
                    let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                    let mut buf = vec![0u8; 16 * 1024];
                    while let Ok(n) = tls.read(&mut buf).await {
                        if n == 0 {
                            return;
                        }
                        let body = "{}";
                        let answer = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\nx-amzn-requestid: r-1\r\ncontent-length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if tls.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (url, ca.der().clone())
    }

    fn sqs_over(url: &str, http: SharedHttpClient) -> aws_sdk_sqs::Client {
        let config = aws_sdk_sqs::config::Builder::new()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(LOCAL_REGION))
            .credentials_provider(Credentials::new("test", "test", None, None, "static"))
            .endpoint_url(url)
            .retry_config(aws_config::retry::RetryConfig::disabled())
            .http_client(http)
            .build();
        aws_sdk_sqs::Client::from_conf(config)
    }

    /// The TLS configuration handed to reqwest completes a handshake with a server its roots
    /// vouch for, and the compiled-in roots refuse one that does not chain to Amazon's.
    #[tokio::test]
    async fn tls_reaches_a_server_its_roots_vouch_for_and_refuses_another() {
        let (url, ca) = tls_server().await;
        let trusting = crate::sdk_http::ReqwestSdkClient::shared(tls_setup_over(move || {
            let mut store = rustls::RootCertStore::empty();
            store.add(ca.clone()).unwrap();
            store
        }));
        let listed = sqs_over(&url, trusting).list_queues().send().await;
        assert!(listed.is_ok(), "over TLS to a server the roots vouch for: {}", listed.err().map(|e| chain(&e)).unwrap_or_default());

        let err = sqs_over(&url, http_client_with(Roots::CompiledIn)).list_queues().send().await.unwrap_err();
        let text = chain(&err);
        assert!(matches!(err, SdkError::DispatchFailure(_)), "{text}");
        assert!(text.contains("certificate"), "refused for its certificate: {text}");
    }

    #[tokio::test]
    async fn an_explicit_endpoint_means_the_local_region_and_static_test_credentials() {
        let config = sdk_config(Some("http://127.0.0.1:1")).await;
        assert_eq!(config.region(), Some(&Region::new(LOCAL_REGION)));
        assert_eq!(config.endpoint_url(), Some("http://127.0.0.1:1"));
        assert!(config.credentials_provider().is_some());
        assert!(config.http_client().is_some());
    }
}
