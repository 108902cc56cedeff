//! The cause beneath an error. Argo CD wraps the error that happened in the words of every layer
//! it passed through — `Failed to load target state: failed to generate manifest for source 1 of
//! 2: rpc error: code = Unknown desc = Manifest generation error (cached): <the error>` — and only
//! the error beneath says what can fix it: a render failure needs a person whatever wraps it, a
//! Git timeout passes, a throttled host needs nothing but time. [`cause_of`] peels the wrappers
//! (each a literal of Argo CD's, cited) and names the class of what is left; the policy reads
//! conditions, operation messages and resource results through it alone, so a wrapper never
//! decides an action.
//!
//! Sources are `path:line` in argoproj/argo-cd v3.5.1 (gitops-engine in-tree) unless noted.

use crate::catalogue::{RATE_LIMIT_SIGNALS, TRANSIENT_SIGNALS};

/// What kind of error sits beneath the wrappers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CauseClass {
    /// The source host throttles Argo CD (HTTP 429 and its spellings): shared, passes by itself.
    RateLimited,
    /// The source's credentials or the AppProject refuse (Git, Helm or OCI authentication, a
    /// repository or destination the project does not permit): a person changes a secret or the
    /// project.
    Access,
    /// Kubernetes RBAC refuses Argo CD's service account: a person grants a role.
    Permission,
    /// The source renders the same failure every time: a template or build error, a path,
    /// revision or chart that does not exist, invalid YAML. Neither a refresh nor a sync helps.
    Configuration,
    /// The API server does not serve the kind (a CRD not yet established, or an API removed).
    KindNotFound,
    /// The API server or an admission webhook rejected the object as it is.
    Rejected,
    /// A transport or control-plane failure that passes: connection refused or reset, timeouts,
    /// `Unavailable`, etcd leader changes, optimistic-lock conflicts.
    Transient,
    /// Nothing recognised beneath the wrappers.
    Unknown,
}

impl CauseClass {
    pub fn as_str(self) -> &'static str {
        match self {
            CauseClass::RateLimited => "rate-limited",
            CauseClass::Access => "access",
            CauseClass::Permission => "permission",
            CauseClass::Configuration => "configuration",
            CauseClass::KindNotFound => "kind-not-found",
            CauseClass::Rejected => "rejected",
            CauseClass::Transient => "transient",
            CauseClass::Unknown => "unknown",
        }
    }

    /// True when waiting, refreshing or re-syncing can help once the cause has passed.
    pub fn passes(self) -> bool {
        matches!(self, CauseClass::RateLimited | CauseClass::Transient)
    }
}

impl std::fmt::Display for CauseClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A wrapper Argo CD puts around the error beneath: the literal prefix, and where it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wrapper {
    /// The text up to the error beneath; `%` stands for a value (a number, a revision) that runs
    /// up to the next `: `.
    pub prefix: &'static str,
    pub source: &'static str,
}

/// Every wrapper [`cause_of`] peels, outermost first as they are usually nested.
pub const WRAPPERS: &[Wrapper] = &[
    Wrapper { prefix: "ComparisonError: ", source: "controller/appcontroller.go (operation message of a sync that could not compare)" },
    Wrapper { prefix: "Failed to load target state: ", source: "controller/state.go:698" },
    Wrapper { prefix: "failed to generate manifest for source %: ", source: "controller/state.go:377" },
    Wrapper { prefix: "Failed last sync attempt to %: ", source: "controller/appcontroller.go:2398 (3.2+, SyncError condition)" },
    Wrapper { prefix: "Failed sync attempt to %: ", source: "controller/appcontroller.go (≤3.1, SyncError condition)" },
    Wrapper { prefix: "rpc error: code = % desc = ", source: "google.golang.org/grpc/status (Status.Error), every repo-server answer" },
    Wrapper {
        prefix: "Manifest generation error (cached): ",
        source: "reposerver/repository/repository.go:76 (cachedManifestGenerationPrefix)",
    },
    Wrapper {
        prefix: "one or more objects failed to apply, reason: ",
        source: "gitops-engine/pkg/sync/sync_context.go (applyObject failures)",
    },
    Wrapper {
        prefix: "one or more synchronization tasks completed unsuccessfully, reason: ",
        source: "gitops-engine/pkg/sync/sync_context.go:638",
    },
    Wrapper { prefix: "error getting manifests: ", source: "reposerver/repository/repository.go" },
    Wrapper { prefix: "failed to get git client for repo %: ", source: "reposerver/repository/repository.go" },
];

/// The literal texts of each class, matched case-insensitively in the error beneath, in the
/// order [`cause_of`] tries the classes: throttling and permission first (a 429 is also "too many
/// requests", which the transient list holds for the API server), the kind not served, the
/// decisive render and TLS failures, then transient before the rest of configuration and
/// rejection (a remote kustomize base that timed out is reported inside kustomize's own words and
/// its exit status), so the configuration list holds only what failed, never the tool's name.
const ACCESS_SIGNALS: &[&str] = &[
    // Git, Helm and OCI credentials (util/git/client.go, go-git, Helm's own texts)
    "authentication required",
    "authentication failed",
    "invalid username or password",
    "status code: 401",
    "status code: 403",
    "could not read username",
    "unable to authenticate",
    // the AppProject's restrictions (util/argo/argo.go:676, :689, :715; repository.go:1386-1401)
    "are not permitted in project",
    "is not permitted in project",
    "do not match any of the allowed destinations",
    "not permitted to manage",
];

/// Kubernetes RBAC refusing Argo CD's service account (apimachinery `NewForbidden`).
const PERMISSION_SIGNALS: &[&str] = &[
    "permission denied",
    "is forbidden: user",
    "cannot get resource",
    "cannot list resource",
    "cannot create resource",
    "cannot patch resource",
    "cannot update resource",
    "cannot delete resource",
];
/// Render failures whose text may also hold a transport word (a template parse error ends in
/// `unexpected EOF`, istio/istio#16186), and transport failures that are configuration (a TLS or
/// proxy mismatch never passes, argoproj/argo-cd#8407, #6048, #17772): these decide before the
/// transient list.
const DECISIVE_CONFIGURATION_SIGNALS: &[&str] = &[
    "parse error at",
    "error: template: ",
    "execution error at",
    "error converting yaml to json",
    "first record does not look like a tls handshake",
    "x509: certificate signed by unknown authority",
    "proxy authentication required",
];

/// Transport failures of the tools the repo-server runs, beside the control plane's
/// ([`TRANSIENT_SIGNALS`]): the CmdError of a tool that timed out or was killed
/// (util/exec/exec.go:111-116, :260), kustomize's own fetch timeout, an SSH host shedding
/// connections, a Git host's 5xx, an admission or conversion webhook with no endpoints.
const TOOL_TRANSIENT_SIGNALS: &[&str] = &[
    "failed timeout after",
    "fatal timeout after",
    "signal: killed",
    "timeout running '",
    "kex_exchange_identification",
    "connection closed by remote host",
    "status code: 502",
    "status code: 503",
    "status code: 504",
    "no endpoints available for service",
    "failed calling webhook",
];

const CONFIGURATION_SIGNALS: &[&str] = &[
    // A tool that ran and failed on what it was given (util/exec/exec.go:112): after the transient
    // lists, an exit status is the commit's or the settings' doing.
    "failed exit status",
    "could not find cmp-server plugin",
    "no repository definition for",
    "must resolve to a file",
    // Helm's own errors beneath `helm template ... failed exit status 1: ` (util/helm/cmd.go);
    // the tool's name is not a signal, what it failed on is
    "error: template: ",
    "template: no template",
    "execution error at",
    "error converting yaml to json",
    "yaml: line",
    "yaml: unmarshal errors",
    "unable to parse",
    "no such file or directory",
    "values.yaml",
    "not found in helm repo",
    "chart not found",
    "found in chart.yaml, but missing in charts/ directory",
    // kustomize's errors beneath `kustomize build ... failed exit status 1: ` (util/kustomize/kustomize.go);
    // `accumulating resources` only says where it was, and a remote base can time out
    "must build at directory",
    "no matches for id",
    "missing metadata.name",
    // the source itself (reposerver/repository/repository.go, util/git/client.go)
    "app path does not exist",
    "does not exist",
    "unable to resolve",
    "couldn't find remote ref",
    "repository not found",
    "invalid revision",
    "plugin sidecar failed",
    "is not a valid",
    "invalid spec",
];

/// Kubernetes' texts for an API it does not serve (apimachinery `NoKindMatchError`, discovery).
const KIND_NOT_FOUND_SIGNALS: &[&str] = crate::catalogue::KIND_NOT_FOUND_SIGNALS;

/// Admission and validation refusals (apimachinery `StatusReasonInvalid`, admission webhooks).
const REJECTED_SIGNALS: &[&str] =
    &["denied the request", "field is immutable", "invalid value", "is invalid", "error validating data", "exceeded quota"];

/// The cause beneath an error: its class, the text left after the wrappers, and what was peeled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause<'a> {
    pub class: CauseClass,
    /// The error beneath every wrapper.
    pub beneath: &'a str,
    /// The wrappers peeled, outermost first.
    pub wrappers: Vec<&'static str>,
    /// The repo-server replayed this error from its cache (`Manifest generation error (cached)`).
    pub cached: bool,
    /// The gRPC status code of a repo-server answer (`Unavailable`), if one was peeled.
    pub grpc_code: Option<&'a str>,
    /// The literal that named the class.
    pub signal: Option<&'static str>,
    /// The controller says the path waits for a promotion to the hydrator's sync branch: it
    /// appends ` - waiting for an external process to update <sync> from <hydrateTo>` to `app path
    /// does not exist` when `spec.sourceHydrator.hydrateTo` is set (controller/state.go:378-379).
    pub awaiting_promotion: bool,
}

/// The suffix of [`Cause::awaiting_promotion`].
pub const AWAITING_PROMOTION_SUFFIX: &str = " - waiting for an external process to update ";

/// Peels one wrapper off `text`, if it starts with one: the rest, the wrapper, and the value a
/// `%` stood for.
fn peel(text: &str) -> Option<(&str, &'static Wrapper, Option<&str>)> {
    for w in WRAPPERS {
        match w.prefix.split_once('%') {
            None => {
                if text.len() >= w.prefix.len()
                    && text.is_char_boundary(w.prefix.len())
                    && text[..w.prefix.len()].eq_ignore_ascii_case(w.prefix)
                {
                    return Some((&text[w.prefix.len()..], w, None));
                }
            }
            Some((head, tail)) => {
                let starts = text.len() >= head.len() && text.is_char_boundary(head.len()) && text[..head.len()].eq_ignore_ascii_case(head);
                if !starts {
                    continue;
                }
                let rest = &text[head.len()..];
                if let Some(at) = rest.find(tail) {
                    return Some((&rest[at + tail.len()..], w, Some(&rest[..at])));
                }
            }
        }
    }
    None
}

fn first_signal(lower: &str, signals: &[&'static str]) -> Option<&'static str> {
    signals.iter().copied().find(|s| lower.contains(&s.to_ascii_lowercase()))
}

/// The cause beneath `text`: wrappers peeled, then the first class whose literal the rest holds.
pub fn cause_of(text: &str) -> Cause<'_> {
    let mut beneath = text.trim();
    let mut wrappers = Vec::new();
    let mut cached = false;
    let mut grpc_code = None;
    while let Some((rest, w, value)) = peel(beneath) {
        wrappers.push(w.prefix);
        cached |= w.prefix.starts_with("Manifest generation error (cached)");
        if w.prefix.starts_with("rpc error") {
            grpc_code = value;
        }
        beneath = rest.trim_start();
    }
    let lower = beneath.to_ascii_lowercase();
    let classes: [(CauseClass, &[&'static str]); 9] = [
        (CauseClass::RateLimited, RATE_LIMIT_SIGNALS),
        (CauseClass::Access, ACCESS_SIGNALS),
        (CauseClass::Permission, PERMISSION_SIGNALS),
        (CauseClass::KindNotFound, KIND_NOT_FOUND_SIGNALS),
        (CauseClass::Configuration, DECISIVE_CONFIGURATION_SIGNALS),
        (CauseClass::Transient, TRANSIENT_SIGNALS),
        (CauseClass::Transient, TOOL_TRANSIENT_SIGNALS),
        (CauseClass::Configuration, CONFIGURATION_SIGNALS),
        (CauseClass::Rejected, REJECTED_SIGNALS),
    ];
    let found = classes.iter().find_map(|(class, signals)| first_signal(&lower, signals).map(|s| (*class, Some(s))));
    // A repo-server that could not be reached answers with the code alone.
    let by_code = || match grpc_code {
        Some("Unavailable" | "DeadlineExceeded" | "ResourceExhausted" | "Aborted") => (CauseClass::Transient, None),
        Some("PermissionDenied" | "Unauthenticated") => (CauseClass::Access, None),
        Some("NotFound" | "InvalidArgument" | "FailedPrecondition") => (CauseClass::Configuration, None),
        _ => (CauseClass::Unknown, None),
    };
    let (class, signal) = found.unwrap_or_else(by_code);
    let awaiting_promotion = beneath.contains(AWAITING_PROMOTION_SUFFIX);
    Cause { class, beneath, wrappers, cached, grpc_code, signal, awaiting_promotion }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_are_peeled_to_the_error_beneath() {
        let c = cause_of(
            "Failed to load target state: failed to generate manifest for source 1 of 2: rpc error: code = Unknown desc = Manifest generation error (cached): `helm template . --name-template api` failed exit status 1: Error: template: api/templates/deployment.yaml:12:20: executing \"api/templates/deployment.yaml\" at <.Values.image.tag>: nil pointer evaluating interface {}.tag",
        );
        assert_eq!(c.class, CauseClass::Configuration);
        assert!(c.cached);
        assert_eq!(c.grpc_code, Some("Unknown"));
        assert_eq!(c.wrappers.len(), 4, "{:?}", c.wrappers);
        assert!(c.beneath.starts_with("`helm template"), "{}", c.beneath);
    }

    #[test]
    fn the_same_wrapper_over_a_timeout_is_transient_and_over_a_429_is_throttling() {
        let timeout = cause_of(
            "rpc error: code = Unknown desc = Manifest generation error (cached): failed to list refs: dial tcp 140.82.112.3:443: i/o timeout",
        );
        assert_eq!((timeout.class, timeout.cached), (CauseClass::Transient, true));
        let throttled = cause_of(
            "rpc error: code = Unknown desc = Manifest generation error (cached): failed to list refs: unexpected client error: status code: 429",
        );
        assert_eq!(throttled.class, CauseClass::RateLimited);
        let auth = cause_of(
            "Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = failed to list refs: authentication required",
        );
        assert_eq!(auth.class, CauseClass::Access);
    }

    #[test]
    fn a_render_error_mentioning_a_timeout_is_still_a_render_error() {
        let c = cause_of(
            "rpc error: code = Unknown desc = `helm template .` failed exit status 1: Error: execution error at (api/templates/check.yaml:3:4): timeout must be set",
        );
        assert_eq!(c.class, CauseClass::Configuration);
    }

    #[test]
    fn a_remote_kustomize_base_that_timed_out_is_transient_inside_kustomize_s_words() {
        let c = cause_of(
            "rpc error: code = Unknown desc = `kustomize build /tmp/_argocd-repo/overlays/prod` failed exit status 1: Error: accumulating resources: accumulation err='accumulating resources from 'https://github.com/acme/bases//web?ref=v2': git cmd = '/usr/bin/git fetch --depth=1 origin v2': exit status 128; stderr: fatal: unable to access 'https://github.com/acme/bases/': Failed to connect to github.com port 443: Connection refused': must build at directory: not a valid directory",
        );
        assert_eq!(c.class, CauseClass::Transient, "{:?}", c.signal);
        let missing = cause_of(
            "rpc error: code = Unknown desc = `kustomize build /tmp/x/overlays/prod` failed exit status 1: Error: accumulating resources: accumulation err='accumulating resources from '../base': evalsymlink failure on '/tmp/x/base' : lstat /tmp/x/base: no such file or directory': must build at directory: not a valid directory",
        );
        assert_eq!(missing.class, CauseClass::Configuration);
    }

    #[test]
    fn a_parse_error_ending_in_unexpected_eof_is_the_template_s_and_a_tls_mismatch_is_configuration() {
        let parse = cause_of(
            "rpc error: code = Unknown desc = `helm template .` failed exit status 1: Error: parse error at (x/templates/a.yaml:785): unexpected EOF",
        );
        assert_eq!(parse.class, CauseClass::Configuration);
        let eof = cause_of("rpc error: code = Unavailable desc = error reading from server: unexpected EOF");
        assert_eq!(eof.class, CauseClass::Transient, "a transport EOF is still one");
        let tls = cause_of(
            "rpc error: code = Unavailable desc = connection error: desc = \"transport: authentication handshake failed: tls: first record does not look like a TLS handshake\"",
        );
        assert_eq!(tls.class, CauseClass::Configuration);
    }

    #[test]
    fn a_tool_that_timed_out_or_was_killed_passes_and_one_that_exited_is_the_input_s() {
        assert_eq!(cause_of("`helm dependency build` failed timeout after 1m30s").class, CauseClass::Transient);
        assert_eq!(cause_of("`helm dependency build` failed signal: killed").class, CauseClass::Transient);
        assert_eq!(
            cause_of("`helm repo add a b` failed exit status 1: Error: repository name (b) contains '/'").class,
            CauseClass::Configuration
        );
        assert_eq!(
            cause_of("`git fetch origin` failed exit status 128: kex_exchange_identification: Connection closed by remote host").class,
            CauseClass::Transient
        );
    }

    #[test]
    fn a_bare_grpc_code_names_the_class_when_nothing_else_does() {
        assert_eq!(cause_of("rpc error: code = Unavailable desc = ").class, CauseClass::Transient);
        assert_eq!(
            cause_of("rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing\"").class,
            CauseClass::Transient
        );
        assert_eq!(cause_of("something nobody wrote down").class, CauseClass::Unknown);
        assert_eq!(cause_of("").class, CauseClass::Unknown);
    }

    #[test]
    fn peeling_is_safe_on_any_text() {
        for text in ["rpc error: code = ", "Failed sync attempt to ", "é", "rpc error: code = Unknown desc"] {
            let _ = cause_of(text);
        }
    }
}
