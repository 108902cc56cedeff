//! The shared AWS SDK configuration of the SQS and DynamoDB adapters, and how their errors are
//! described.
//!
//! The SDK crates are built without their default HTTPS clients (see the adapters' Cargo.toml),
//! so every configuration made here carries [`http_client`]: hyper 1 with rustls on `ring`, the TLS
//! stack the Argo CD client already uses.

use std::error::Error;

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_dynamodb::config::{Credentials, SharedHttpClient};
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};

/// The region used with an explicit endpoint (moto, local mode).
pub const LOCAL_REGION: &str = "us-east-1";

/// The HTTPS client of every SDK client made here: hyper 1 + rustls (ring), trusting the system's
/// root certificates.
pub fn http_client() -> SharedHttpClient {
    aws_smithy_http_client::Builder::new().tls_provider(tls::Provider::Rustls(CryptoMode::Ring)).build_https()
}

/// The SDK configuration.
///
/// With `endpoint_url` (tests against moto_server, local mode) every service is reached there, in
/// [`LOCAL_REGION`], with static test credentials; nothing is read from the environment.
/// Without it the default chains apply: region and credentials from the environment (what Lambda
/// sets), web identity, the shared config files or the container/instance metadata.
pub async fn sdk_config(endpoint_url: Option<&str>) -> SdkConfig {
    let loader = aws_config::defaults(BehaviorVersion::latest()).http_client(http_client());
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

/// An error and its sources, `: `-separated, each level once (SDK errors often repeat their
/// source's text in their own).
pub(crate) fn chain(err: &(dyn Error + 'static)) -> String {
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

    #[tokio::test]
    async fn an_explicit_endpoint_means_the_local_region_and_static_test_credentials() {
        let config = sdk_config(Some("http://127.0.0.1:1")).await;
        assert_eq!(config.region(), Some(&Region::new(LOCAL_REGION)));
        assert_eq!(config.endpoint_url(), Some("http://127.0.0.1:1"));
        assert!(config.credentials_provider().is_some());
        assert!(config.http_client().is_some());
    }
}
