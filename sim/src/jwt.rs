//! Just enough of the JWT format to look like Argo CD tokens.
//!
//! The simulator never verifies signatures: a token is accepted because it is listed in
//! [`crate::SimConfig::tokens`]. It only needs the shape (three dot-separated parts, which Argo CD
//! requires before it even looks at a bearer value) and the `iat` claim, which Argo CD prints in
//! its RBAC denial messages.

use chrono::{DateTime, TimeZone, Utc};
use serde_json::json;

/// `iat` used by [`token_for`] and the default token: 2026-01-01T00:00:00Z.
pub(crate) const DEFAULT_IAT: i64 = 1_767_225_600;

/// A JWT-looking bearer token for `subject`, shaped like the API keys Argo CD mints for local
/// accounts (`sub: "<name>:apiKey"`, `iss: "argocd"`), with a fake signature.
pub fn token_for(subject: &str) -> String {
    token_with(json!({
        "iss": "argocd",
        "sub": format!("{subject}:apiKey"),
        "nbf": DEFAULT_IAT,
        "iat": DEFAULT_IAT,
        "jti": format!("{subject}-sim"),
    }))
}

/// [`token_for`] with an `exp` claim (unix seconds), as `--expires-in` mints it.
pub fn token_expiring(subject: &str, exp: i64) -> String {
    token_with(json!({
        "iss": "argocd",
        "sub": format!("{subject}:apiKey"),
        "nbf": DEFAULT_IAT,
        "iat": DEFAULT_IAT,
        "exp": exp,
        "jti": format!("{subject}-sim-{exp}"),
    }))
}

fn token_with(payload: serde_json::Value) -> String {
    let header = json!({"alg": "HS256", "typ": "JWT"}).to_string();
    format!("{}.{}.{}", encode(header.as_bytes()), encode(payload.to_string().as_bytes()), encode(b"argo-medic-simulated-signature"))
}

/// Whether Argo CD would consider the bearer value at all (server/server.go `getToken`).
pub(crate) fn has_three_parts(token: &str) -> bool {
    token.split('.').count() == 3
}

/// The `iat` claim of a JWT-looking token, if its payload decodes.
pub(crate) fn issued_at(token: &str) -> Option<DateTime<Utc>> {
    let payload = token.split('.').nth(1)?;
    let bytes = decode(payload)?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let iat = claims.get("iat")?.as_i64()?;
    Utc.timestamp_opt(iat, 0).single()
}

/// base64url without padding, as JWTs are written (RFC 7519 §3).
fn encode(input: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(input)
}

fn decode(input: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(input.trim_end_matches('=')).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minted_token_has_three_parts_and_its_iat_decodes() {
        let token = token_for("argo-medic");
        assert!(has_three_parts(&token));
        assert_eq!(issued_at(&token).map(|t| t.timestamp()), Some(DEFAULT_IAT));
    }

    #[test]
    fn base64url_round_trips_every_length() {
        for len in 0..10 {
            let data: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            assert_eq!(decode(&encode(&data)), Some(data));
        }
    }
}
