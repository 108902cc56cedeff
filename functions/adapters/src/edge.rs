//! What the two public endpoints (ingest and slack-actions) share at the edge:
//!
//! - a secret that rotates without a redeploy (the current one, and the previous one while a
//!   rotation is under way), read from its Secrets Manager value and compared in constant time,
//!   and HMAC-SHA256 signatures checked against every one of them;
//! - how a request is refused: a [`Rejection`] (status, a reason for the metric and the caller,
//!   a message saying what to fix) answered as JSON, and the media-type and size checks every
//!   body passes before anything reads it.

use hmac::{Hmac, KeyInit, Mac};
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use subtle::ConstantTimeEq;

/// A refused request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub status: StatusCode,
    /// A short name: the `Reason` dimension of the endpoint's metric and the answer's `reason`.
    pub reason: &'static str,
    /// What the caller should fix (never a secret, never the body).
    pub message: String,
}

impl Rejection {
    pub fn new(status: StatusCode, reason: &'static str, message: impl Into<String>) -> Self {
        Self { status, reason, message: message.into() }
    }

    /// `{"error": message, "reason": reason}` with the status; a 401 names the scheme wanted in
    /// `WWW-Authenticate` when `challenge` is given (RFC 9110 §11.6.1).
    pub fn response(&self, challenge: Option<&'static str>) -> Response<String> {
        let mut response = json_response(self.status, &serde_json::json!({"error": self.message, "reason": self.reason}));
        if let (StatusCode::UNAUTHORIZED, Some(scheme)) = (self.status, challenge) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(scheme));
        }
        response
    }
}

/// A JSON answer.
pub fn json_response(status: StatusCode, body: &serde_json::Value) -> Response<String> {
    let mut response = Response::new(body.to_string());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The credentials of an `Authorization: Bearer <token>` header. The scheme is matched without
/// regard to case and may be followed by several spaces (RFC 9110 §11.1: "auth-scheme is
/// case-insensitive"; `bearer x` is as valid as `Bearer x`); `None` for another scheme or no token.
pub fn bearer_token(authorization: &[u8]) -> Option<&[u8]> {
    let space = authorization.iter().position(|b| *b == b' ')?;
    let (scheme, rest) = authorization.split_at(space);
    let token = rest.trim_ascii();
    (scheme.eq_ignore_ascii_case(b"bearer") && !token.is_empty()).then_some(token)
}

/// The body, once its media type is `media` (parameters such as `; charset=utf-8` aside, any
/// case) and it is at most `max_bytes` long: 415 or 413 otherwise, before anything parses it.
pub fn checked_body<'b>(headers: &HeaderMap, body: &'b [u8], media: &str, max_bytes: usize) -> Result<&'b [u8], Rejection> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !content_type.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case(media) {
        return Err(Rejection::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "content_type",
            format!("Content-Type must be {media}, got `{content_type}`"),
        ));
    }
    if body.len() > max_bytes {
        return Err(Rejection::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "oversized",
            format!("the body is {} bytes; the limit is {max_bytes}", body.len()),
        ));
    }
    Ok(body)
}

/// A malformed secret value.
#[derive(Debug, thiserror::Error)]
#[error("{what} must be the secret itself, or JSON {{\"current\": \"...\", \"previous\": \"...\"}}, at least 16 characters: {why}")]
pub struct SecretFormatError {
    what: &'static str,
    why: String,
}

/// The current secret and, during a rotation, the previous one.
pub struct RotatingSecret {
    current: SecretString,
    previous: Option<SecretString>,
}

impl RotatingSecret {
    /// The shortest secret accepted.
    pub const MIN_LEN: usize = 16;

    pub fn new(current: impl Into<String>, previous: Option<String>) -> Self {
        Self { current: SecretString::from(current.into()), previous: previous.filter(|p| !p.is_empty()).map(SecretString::from) }
    }

    /// Reads a secret's value: the secret itself, or `{"current": "...", "previous": "..."}`
    /// while a rotation is under way. `what` names it in the error.
    pub fn parse(text: &str, what: &'static str) -> Result<Self, SecretFormatError> {
        #[derive(Deserialize)]
        struct Doc {
            current: String,
            #[serde(default)]
            previous: Option<String>,
        }
        let err = |why: String| SecretFormatError { what, why };
        let text = text.trim();
        let (current, previous) = if text.starts_with('{') {
            let doc: Doc = serde_json::from_str(text).map_err(|e| err(e.to_string()))?;
            (doc.current, doc.previous)
        } else {
            (text.to_owned(), None)
        };
        if current.len() < Self::MIN_LEN {
            return Err(err(format!("the current secret has {} characters", current.len())));
        }
        Ok(Self::new(current, previous))
    }

    fn all(&self) -> impl Iterator<Item = &SecretString> {
        std::iter::once(&self.current).chain(self.previous.iter())
    }

    /// True when `presented` equals one of the secrets. Compares in constant time and checks
    /// every secret, so timing reveals neither the secret nor which one matched.
    pub fn matches(&self, presented: &[u8]) -> bool {
        self.all().fold(false, |ok, s| ok | bool::from(s.expose_secret().as_bytes().ct_eq(presented)))
    }

    fn mac(secret: &SecretString, parts: &[&[u8]]) -> Hmac<sha2::Sha256> {
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.expose_secret().as_bytes()).expect("HMAC takes keys of any length");
        for p in parts {
            mac.update(p);
        }
        mac
    }

    /// True when `tag` is the HMAC-SHA256 of `parts` (concatenated) under one of the secrets.
    /// Every secret is tried and each comparison is constant time (`verify_slice`).
    pub fn verifies(&self, parts: &[&[u8]], tag: &[u8]) -> bool {
        self.all().fold(false, |ok, s| ok | Self::mac(s, parts).verify_slice(tag).is_ok())
    }

    /// The HMAC-SHA256 of `parts` under the current secret, hex (what a client sends).
    pub fn sign_hex(&self, parts: &[&[u8]]) -> String {
        hex::encode(Self::mac(&self.current, parts).finalize().into_bytes())
    }
}

/// Ingest's shared secret (or its refresh route's HMAC key), and the previous one while a
/// rotation is under way.
pub struct WebhookSecrets(RotatingSecret);

impl WebhookSecrets {
    pub fn new(current: impl Into<String>, previous: Option<String>) -> Self {
        Self(RotatingSecret::new(current, previous))
    }

    /// Reads the Secrets Manager value: the secret, or `{"current": "...", "previous": "..."}`.
    pub fn from_json(text: &str) -> Result<Self, SecretFormatError> {
        RotatingSecret::parse(text, "the webhook secret").map(Self)
    }

    /// True when `presented` equals one of the secrets (constant time, every secret checked).
    pub fn matches(&self, presented: &[u8]) -> bool {
        self.0.matches(presented)
    }

    /// True when `signature_hex` is the HMAC-SHA256 of `body` under one of the secrets.
    pub fn verify_hmac(&self, body: &[u8], signature_hex: &str) -> bool {
        hex::decode(signature_hex.trim()).is_ok_and(|tag| self.0.verifies(&[body], &tag))
    }

    /// The signature header value a client sends for `body` (used by tests and the docs).
    pub fn sign(&self, body: &[u8]) -> String {
        format!("sha256={}", self.0.sign_hex(&[body]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_plain_or_a_rotation_document_and_never_short() {
        let plain = RotatingSecret::parse("  0123456789abcdef  ", "the webhook secret").unwrap();
        assert!(plain.matches(b"0123456789abcdef") && !plain.matches(b"0123456789abcdeX"));
        let rotating = RotatingSecret::parse(r#"{"current": "new-secret-0123456", "previous": "old-secret-0123456"}"#, "x").unwrap();
        assert!(rotating.matches(b"new-secret-0123456") && rotating.matches(b"old-secret-0123456"));
        assert!(!rotating.matches(b"old-secret-012345"), "a prefix is no match");
        let short = RotatingSecret::parse("short", "the Slack signing secret").err().unwrap().to_string();
        assert!(short.starts_with("the Slack signing secret must be") && short.contains("5 characters"), "{short}");
        assert!(RotatingSecret::parse(r#"{"current": "x"}"#, "x").is_err());
        assert!(RotatingSecret::parse(r#"{"previous": "0123456789abcdef"}"#, "x").is_err(), "current is required");
    }

    #[test]
    fn a_signature_under_either_secret_verifies_and_nothing_else_does() {
        let old = RotatingSecret::new("old-secret-0123456", None);
        let both = RotatingSecret::new("new-secret-0123456", Some("old-secret-0123456".into()));
        let parts: [&[u8]; 2] = [b"v0:", b"body"];
        let tag = hex::decode(old.sign_hex(&parts)).unwrap();
        assert!(both.verifies(&parts, &tag), "signed with the previous secret during a rotation");
        assert!(!both.verifies(&[b"v0:", b"bodY"], &tag));
        assert!(!RotatingSecret::new("new-secret-0123456", None).verifies(&parts, &tag), "after the rotation ends");
    }

    #[test]
    fn a_body_passes_only_with_its_media_type_and_within_its_size() {
        let headers = |ct: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_str(ct).unwrap());
            h
        };
        let json = "application/json";
        assert_eq!(checked_body(&headers("Application/JSON; charset=utf-8"), b"{}", json, 2), Ok(&b"{}"[..]));
        assert_eq!(checked_body(&headers("text/plain"), b"{}", json, 2).unwrap_err().status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(checked_body(&HeaderMap::new(), b"{}", json, 2).unwrap_err().reason, "content_type");
        let big = checked_body(&headers(json), b"{ }", json, 2).unwrap_err();
        assert_eq!(
            (big.status, big.reason, big.message.as_str()),
            (StatusCode::PAYLOAD_TOO_LARGE, "oversized", "the body is 3 bytes; the limit is 2")
        );
    }

    #[test]
    fn a_rejection_answers_json_and_a_401_names_its_scheme() {
        let r = Rejection::new(StatusCode::UNAUTHORIZED, "unauthenticated", "missing `Authorization`");
        let response = r.response(Some("Bearer"));
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(response.headers()[header::WWW_AUTHENTICATE], "Bearer");
        let body: serde_json::Value = serde_json::from_str(response.body()).unwrap();
        assert_eq!(body, serde_json::json!({"error": "missing `Authorization`", "reason": "unauthenticated"}));
        let forbidden = Rejection::new(StatusCode::FORBIDDEN, "forbidden", "no").response(Some("Bearer"));
        assert!(forbidden.headers().get(header::WWW_AUTHENTICATE).is_none(), "only a 401 challenges");
    }
}
