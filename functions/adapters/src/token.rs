//! [`TokenSource`]: a secret a client sends (the Argo CD token, the Slack bot token) that can be
//! re-read without a redeploy. When the server rejects it (Argo CD: 401; Slack: `invalid_auth`,
//! `token_revoked`), the client asks for a fresh one and retries the call once: rotating the
//! secret in Secrets Manager is then enough. Re-reads are single flight and at most one per
//! [`TokenSource::min_interval`] (a minute) per container, so a token that is really revoked
//! costs one read a minute, not one per call.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use secrecy::{ExposeSecret, SecretString};

/// Reads the secret again (Secrets Manager by ARN on AWS); the error is a description.
pub type Refresher = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<String, String>> + Send>> + Send + Sync>;

/// The current value of a secret, and how to read it again.
pub struct TokenSource {
    current: RwLock<SecretString>,
    /// For a source made [`TokenSource::deferred`]: whether the first read has been made (it is
    /// made by the first call that needs the token, and a failed one is not kept).
    first_read: Option<tokio::sync::Mutex<bool>>,
    refresher: Option<Refresher>,
    min_interval: Duration,
    last_read: tokio::sync::Mutex<Option<Instant>>,
    reads: AtomicUsize,
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSource").field("refreshable", &self.refresher.is_some()).finish_non_exhaustive()
    }
}

impl TokenSource {
    /// A token that is never re-read (local runs, tests).
    pub fn fixed(token: impl Into<String>) -> Self {
        Self::build(token.into(), None)
    }

    /// A token re-read through `refresher` after a rejection.
    pub fn refreshing(token: impl Into<String>, refresher: Refresher) -> Self {
        Self::build(token.into(), Some(refresher))
    }

    /// A token read through `refresher` only when a call first needs it ([`TokenSource::ready`]),
    /// then re-read after a rejection like [`TokenSource::refreshing`]: a function that seldom
    /// calls (ingest: only a signed refresh by selector lists apps) does not read the secret at
    /// its cold start.
    pub fn deferred(refresher: Refresher) -> Self {
        Self { first_read: Some(tokio::sync::Mutex::new(false)), ..Self::build(String::new(), Some(refresher)) }
    }

    fn build(token: String, refresher: Option<Refresher>) -> Self {
        Self {
            current: RwLock::new(SecretString::from(token.trim().to_owned())),
            first_read: None,
            refresher,
            min_interval: Duration::from_secs(60),
            last_read: tokio::sync::Mutex::new(None),
            reads: AtomicUsize::new(0),
        }
    }

    /// The least time between two re-reads (a minute unless a test says otherwise).
    pub fn with_min_interval(mut self, min_interval: Duration) -> Self {
        self.min_interval = min_interval;
        self
    }

    /// Makes the first read of a deferred source, once (single flight): the caller's call then
    /// has a token to send. A read that fails is not kept, so the next call reads again; its
    /// error is the reason. Nothing to do for any other source.
    pub async fn ready(&self) -> Result<(), String> {
        let (Some(first_read), Some(refresher)) = (&self.first_read, &self.refresher) else { return Ok(()) };
        let mut done = first_read.lock().await;
        if *done {
            return Ok(());
        }
        self.reads.fetch_add(1, Ordering::SeqCst);
        let token = refresher().await?;
        if token.trim().is_empty() {
            return Err("the secret holds an empty token".to_owned());
        }
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = SecretString::from(token.trim().to_owned());
        *self.last_read.lock().await = Some(Instant::now());
        *done = true;
        Ok(())
    }

    /// True once a deferred source has made its first read (always for any other source).
    pub fn is_ready(&self) -> bool {
        self.first_read.as_ref().is_none_or(|m| m.try_lock().is_ok_and(|done| *done))
    }

    /// The token to send now.
    pub fn get(&self) -> SecretString {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How many times the secret was re-read.
    pub fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }

    /// `used` was rejected: true when there is now another token to retry with (read again here,
    /// or already by a concurrent caller). False without a refresher, within a minute of the last
    /// read, when the read fails, or when it gives the same token.
    pub async fn renew_after_rejection(&self, used: &SecretString) -> bool {
        self.read_again(used, "was rejected").await
    }

    /// Reads the secret again although the token still works (at most once a
    /// [`TokenSource::min_interval`]): true when it now holds another one. A token about to
    /// expire is rotated by writing the secret, and a warm container only reads it again after a
    /// rejection, which a token still valid never gets: without this, the stack would go on
    /// warning of the old token's expiry after the rotation.
    pub async fn reread(&self) -> bool {
        self.read_again(&self.get(), "expires soon").await
    }

    async fn read_again(&self, used: &SecretString, why: &str) -> bool {
        let Some(refresher) = &self.refresher else { return false };
        let mut last = self.last_read.lock().await;
        if self.get().expose_secret() != used.expose_secret() {
            return true;
        }
        if last.is_some_and(|t| t.elapsed() < self.min_interval) {
            return false;
        }
        *last = Some(Instant::now());
        self.reads.fetch_add(1, Ordering::SeqCst);
        match refresher().await {
            Ok(new) if new.trim() != used.expose_secret() && !new.trim().is_empty() => {
                *self.current.write().unwrap_or_else(|e| e.into_inner()) = SecretString::from(new.trim().to_owned());
                tracing::info!("the token {why}; a new one was read from its secret");
                true
            }
            Ok(_) => {
                tracing::warn!("the token {why} and its secret still holds the same one");
                false
            }
            Err(e) => {
                tracing::warn!(error = %e, "the token {why} and its secret could not be read again");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    fn source(values: Arc<Mutex<Vec<&'static str>>>) -> TokenSource {
        let refresher: Refresher = Arc::new(move || {
            let next = values.lock().unwrap().remove(0);
            Box::pin(async move { if next == "ERR" { Err("unreachable".to_owned()) } else { Ok(next.to_owned()) } })
        });
        TokenSource::refreshing("old", refresher)
    }

    /// A deferred source reads its secret on the first call that needs it, once; a failed read is
    /// not kept and the next call reads again.
    #[tokio::test]
    async fn a_deferred_token_is_read_once_on_first_use_and_a_failed_read_is_not_kept() {
        let values = Arc::new(Mutex::new(vec!["ERR", "first\n", "second"]));
        let refresher: Refresher = {
            let values = Arc::clone(&values);
            Arc::new(move || {
                let next = values.lock().unwrap().remove(0);
                Box::pin(async move { if next == "ERR" { Err("unreachable".to_owned()) } else { Ok(next.to_owned()) } })
            })
        };
        let s = TokenSource::deferred(refresher);
        assert!(!s.is_ready());
        assert_eq!(s.reads(), 0, "nothing is read before a call needs it");
        assert_eq!(s.ready().await, Err("unreachable".to_owned()));
        assert!(!s.is_ready(), "a failed read is not kept");
        assert_eq!(s.ready().await, Ok(()));
        assert_eq!(s.get().expose_secret(), "first");
        for _ in 0..3 {
            assert_eq!(s.ready().await, Ok(()));
        }
        assert_eq!((s.reads(), s.get().expose_secret().to_owned()), (2, "first".to_owned()), "read once it succeeded, not again");
        assert!(s.is_ready());
        let fixed = TokenSource::fixed("t");
        assert_eq!((fixed.ready().await, fixed.is_ready()), (Ok(()), true), "a fixed token is always ready");
    }

    #[tokio::test]
    async fn a_rejected_token_is_read_again_once_a_minute_at_most() {
        let values = Arc::new(Mutex::new(vec!["new\n", "newer"]));
        let s = source(Arc::clone(&values));
        let old = s.get();
        assert!(s.renew_after_rejection(&old).await, "a new token to retry with");
        assert_eq!(s.get().expose_secret(), "new", "trimmed");
        assert!(s.renew_after_rejection(&old).await, "a caller that used the old one retries with the new one, no read");
        assert_eq!(s.reads(), 1);
        let new = s.get();
        assert!(!s.renew_after_rejection(&new).await, "rejected again within a minute: not read again");
        assert_eq!((s.reads(), s.get().expose_secret().to_owned()), (1, "new".to_owned()));
    }

    #[tokio::test]
    async fn a_failed_or_unchanged_read_gives_nothing_to_retry_with() {
        let s = source(Arc::new(Mutex::new(vec!["ERR", "old"]))).with_min_interval(Duration::ZERO);
        let old = s.get();
        assert!(!s.renew_after_rejection(&old).await);
        assert!(!s.renew_after_rejection(&old).await, "the secret still holds the rejected token");
        assert_eq!(s.reads(), 2);
        assert!(!TokenSource::fixed("t").renew_after_rejection(&old).await, "a fixed token is never read again");
    }

    #[tokio::test]
    async fn a_token_still_valid_is_read_again_on_request_once_a_minute_at_most() {
        let s = source(Arc::new(Mutex::new(vec!["old", "rotated", "later"])));
        assert!(!s.reread().await, "the secret still holds the same token");
        assert!(!s.reread().await, "within a minute: not read again");
        assert_eq!((s.reads(), s.get().expose_secret().to_owned()), (1, "old".to_owned()));
        let s = source(Arc::new(Mutex::new(vec!["rotated"])));
        assert!(s.reread().await, "rotated in its secret");
        assert_eq!(s.get().expose_secret(), "rotated");
        assert!(!TokenSource::fixed("t").reread().await);
    }
}

/// When an Argo CD API token expires: the `exp` claim of its JWT payload (base64url, read without
/// checking the signature: only Argo CD can, and it will). `Ok(None)` for a token minted without
/// an expiry (`argocd account generate-token` without `--expires-in`).
pub fn jwt_expiry(token: &str) -> Result<Option<chrono::DateTime<chrono::Utc>>, String> {
    use base64::Engine;
    let parts: Vec<&str> = token.trim().split('.').collect();
    if parts.len() != 3 {
        return Err(format!("not a JWT: {} part(s), an Argo CD API token has 3", parts.len()));
    }
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(parts[1].trim_end_matches('='))
        .map_err(|e| format!("its payload is not base64url: {e}"))?;
    let claims: serde_json::Value = serde_json::from_slice(&payload).map_err(|e| format!("its payload is not JSON: {e}"))?;
    match &claims["exp"] {
        serde_json::Value::Null => Ok(None),
        exp => {
            let secs =
                exp.as_i64().or_else(|| exp.as_f64().map(|f| f as i64)).ok_or_else(|| format!("its exp claim is {exp}, not a time"))?;
            chrono::DateTime::from_timestamp(secs, 0).map(Some).ok_or_else(|| format!("its exp claim {secs} is out of range"))
        }
    }
}

#[cfg(test)]
mod jwt_tests {
    use super::jwt_expiry;

    #[test]
    fn the_expiry_of_an_argo_cd_token_is_its_exp_claim() {
        // {"alg":"HS256","typ":"JWT"} . {"iss":"argocd","sub":"argo-medic:apiKey","exp":1798761600} . sig
        let token =
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJhcmdvY2QiLCJzdWIiOiJhcmdvLW1lZGljOmFwaUtleSIsImV4cCI6MTc5ODc2MTYwMH0.c2ln";
        assert_eq!(jwt_expiry(token).unwrap().unwrap().to_rfc3339(), "2027-01-01T00:00:00+00:00");
        // No exp: a token that never expires.
        let forever = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhcmdvLW1lZGljOmFwaUtleSJ9.c2ln";
        assert_eq!(jwt_expiry(forever), Ok(None));
        assert!(jwt_expiry("not-a-jwt").unwrap_err().contains("3"));
        assert!(jwt_expiry("a.%%%.c").unwrap_err().contains("base64url"));
    }
}
