//! What the two public endpoints (ingest and slack-actions) share at the edge: a secret that
//! rotates without a redeploy (the current one, and the previous one while a rotation is under
//! way), read from its Secrets Manager value and compared in constant time, and HMAC-SHA256
//! signatures checked against every one of them.

use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use subtle::ConstantTimeEq;

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
}
