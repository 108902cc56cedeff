//! Authentication and RBAC as Argo CD's API server applies them (docs/argo-cd-behaviour.md §1.2, §1.3).

use chrono::{DateTime, Utc};

use crate::config::{Policy, TokenGrant};
use crate::error::{ApiError, GrpcCode};
use crate::jwt;

/// The namespace Argo CD runs in; apps there have RBAC names without a namespace part.
pub(crate) const CONTROL_PLANE_NAMESPACE: &str = "argocd";

/// An authenticated caller.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) subject: String,
    /// The token's `iat`, printed in denial messages.
    pub(crate) issued_at: DateTime<Utc>,
}

/// Resolves the `Authorization` header. Only `Bearer <three-part value>` is considered (exact,
/// case-sensitive prefix); anything else is as if there were no header at all.
pub(crate) fn authenticate(header: Option<&str>, tokens: &[TokenGrant], fallback_iat: DateTime<Utc>) -> Result<Session, ApiError> {
    let token = header.and_then(|h| h.strip_prefix("Bearer ")).filter(|t| jwt::has_three_parts(t)).ok_or_else(ApiError::no_session)?;
    let grant = tokens.iter().find(|g| g.token == token).ok_or_else(ApiError::no_session)?;
    if grant.expired {
        return Err(ApiError::new(GrpcCode::Unauthenticated, "invalid session: token has invalid claims: token is expired"));
    }
    Ok(Session { subject: grant.subject.clone(), issued_at: jwt::issued_at(token).unwrap_or(fallback_iat) })
}

/// Whether `subject` may do `action` on apps of `project`.
pub(crate) fn allowed(policies: &[Policy], subject: &str, action: &str, project: &str) -> bool {
    allowed_on(policies, subject, "applications", action, project)
}

/// Whether `subject` may do `action` on `resource` (`applications`, `projects`) of `project`.
pub(crate) fn allowed_on(policies: &[Policy], subject: &str, resource: &str, action: &str, project: &str) -> bool {
    policies.iter().any(|p| {
        p.subject == subject && p.resource == resource && (p.action == action || p.action == "*") && glob_match(&p.project, project)
    })
}

/// The RBAC object of an app: `<project>/<app>`, or `<project>/<namespace>/<app>` outside the
/// control-plane namespace (apps in any namespace).
pub(crate) fn rbac_name(project: &str, namespace: &str, name: &str) -> String {
    if namespace.is_empty() || namespace == CONTROL_PLANE_NAMESPACE {
        format!("{project}/{name}")
    } else {
        format!("{project}/{namespace}/{name}")
    }
}

/// `util/rbac/rbac.go` `EnforceErr`'s detailed denial, used where Argo CD does not hide it.
pub(crate) fn enforce_err(session: &Session, action: &str, object: &str) -> ApiError {
    ApiError::new(
        GrpcCode::PermissionDenied,
        format!(
            "permission denied: applications, {action}, {object}, sub: {}, iat: {}",
            session.subject,
            session.issued_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ),
    )
}

/// Glob with `*` (any run, including none) and `?` (one character), as RBAC's default match mode.
pub(crate) fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn grants() -> Vec<TokenGrant> {
        vec![
            TokenGrant { token: "a.b.c".into(), subject: "bot".into(), expired: false },
            TokenGrant { token: "x.y.z".into(), subject: "old".into(), expired: true },
            TokenGrant { token: "plain".into(), subject: "plain".into(), expired: false },
        ]
    }

    fn epoch() -> DateTime<Utc> {
        Utc.timestamp_opt(0, 0).single().expect("epoch")
    }

    #[test]
    fn only_an_exact_bearer_prefix_with_three_parts_authenticates() {
        let ok = authenticate(Some("Bearer a.b.c"), &grants(), epoch()).expect("valid");
        assert_eq!(ok.subject, "bot");
        for header in [None, Some("bearer a.b.c"), Some("Bearer plain"), Some("Bearer q.r.s")] {
            let err = authenticate(header, &grants(), epoch()).expect_err("rejected");
            assert_eq!(err.message, "no session information");
        }
        let expired = authenticate(Some("Bearer x.y.z"), &grants(), epoch()).expect_err("expired");
        assert_eq!(expired.message, "invalid session: token has invalid claims: token is expired");
    }

    #[test]
    fn globs_match_like_rbac_objects() {
        assert!(glob_match("*", "payments"));
        assert!(glob_match("team-*", "team-a"));
        assert!(glob_match("t?am-a", "team-a"));
        assert!(!glob_match("team-*", "payments"));
        assert!(glob_match("*-a", "team-a"));
        assert!(!glob_match("team-a", "team-ab"));
    }

    #[test]
    fn rbac_names_include_the_namespace_only_outside_the_control_plane() {
        assert_eq!(rbac_name("p", "argocd", "web"), "p/web");
        assert_eq!(rbac_name("p", "team", "web"), "p/team/web");
    }
}
