//! Alerts about the service itself and about fleet outages (not about an app): what they say, and
//! the markers that tell each once across every container. The worker, the sweeper and `medic
//! sweep` raise them through the actuator (`Request::Alert`), which tells them; this is the only
//! place that words them.

use chrono::{DateTime, Utc};

use crate::fleet::FleetCause;
use crate::ports::ArgoError;

/// A token Argo CD rejects: every further call would fail until someone replaces it.
pub fn unauthenticated(e: &ArgoError) -> String {
    format!(
        "Argo Medic cannot act: {e}. Mint a new token for its account (argocd account generate-token --account argo-medic) and give it to Argo Medic: the stack's token secret, or ARGOCD_AUTH_TOKEN (--auth-token) for medic."
    )
}

/// A cause past its time bound ([`FleetCause::overdue`]): the escalation of its fleet incident,
/// for the apps it holds back.
pub fn outage_overdue(cause: &FleetCause, now: DateTime<Utc>) -> String {
    let began = cause.began_at.unwrap_or(now);
    format!(
        "Escalation: fleet outage past its time bound ({} min since it began at {}): {} of {} apps of {} cannot be compared and no canary has healed. Their own actions stay held back and Argo Medic keeps probing, releasing the wave when one heals; the cause needs a person.",
        (now - began).num_minutes(),
        began.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        cause.apps.len(),
        cause.listed,
        cause.scope.describe()
    )
}

/// The Argo CD token expires soon: told once a day from `MEDIC_TOKEN_EXPIRY_WARNING_DAYS` before,
/// so nobody meets an expired automation token in the middle of an outage.
pub fn token_expiring(expires: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let left = expires - now;
    let when = if left.num_hours() < 48 { format!("in {} hours", left.num_hours().max(0)) } else { format!("in {} days", left.num_days()) };
    format!(
        "Argo Medic's Argo CD token expires {when} ({}). After that Argo Medic can neither read nor fix anything. Mint a new one (`argocd account generate-token --account argo-medic --expires-in 90d`) and put it in the secret ArgoCdTokenSecretArn names: the functions read it again, no redeploy (docs/operations.md, \"ArgoTokenExpiringAlarm\").",
        expires.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    )
}

/// What to do when the marker cannot be written (the store is down).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenUnsure {
    /// Tell anyway: the alert is about the store itself, and silence would be worse than a repeat.
    Tell,
    /// Stay silent: a repeat is likely, since every message meeting the problem would tell.
    Skip,
}
