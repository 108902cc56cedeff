//! The classes of the cause beneath an error (`crate::cause`): what each means, where Argo CD or the
//! tools it runs write its messages, and the rules that read it.

use super::{Flip, MapRow, RowKind::Cause, Use};

pub(super) const ROWS: &[MapRow] = &[
    MapRow {
        kind: Cause,
        key: "rate-limited",
        meaning: "The source host throttles Argo CD: HTTP 429 and its spellings (`status code: 429`, `toomanyrequests`, `rate limit exceeded`).",
        controller: "Git (util/git/client.go:949 wraps go-git's `status code: 429`), Helm and OCI registries; argoproj/argo-cd#1895.",
        modelled: "cause::CauseClass",
        used: Use::Rule {
            rules: &["conditions/source-rate-limited"],
            flips: &[
                // why it changes: refused credentials need a person, throttling does not
                Flip {
                    case: "rate-limit/github-git-429",
                    pointer: "/status/conditions/0/message",
                    to: "\"Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = failed to list refs: authentication required\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Cause,
        key: "access",
        meaning: "The source's credentials or the AppProject refuse: Git, Helm or OCI authentication, a repository or destination the project does not permit.",
        controller: "util/git/client.go (`authentication required`), util/argo/argo.go:676, :689, :715 (project restrictions), reposerver/repository/repository.go:1386-1401 (Helm repositories not permitted).",
        modelled: "cause::CauseClass",
        used: Use::Rule {
            rules: &["conditions/cause-access", "running-operation/retries-of-a-repeating-failure", "hydration/hydration-failed"],
            flips: &[
                // why it changes: a timeout beneath the cache is hard-refreshed
                Flip {
                    case: "causes/cached-git-auth",
                    pointer: "/status/conditions/0/message",
                    to: "\"Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = Manifest generation error (cached): failed to list refs: Get \\\"https://git.example.com/platform/deploy.git/info/refs?service=git-upload-pack\\\": dial tcp 10.20.0.15:443: i/o timeout\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Cause,
        key: "permission",
        meaning: "Kubernetes RBAC refuses Argo CD's service account (`is forbidden: User ... cannot list resource`).",
        controller: "apimachinery NewForbidden, surfaced by the cluster cache (controller/cache/cache.go) and the sync (gitops-engine/pkg/sync/sync_context.go).",
        modelled: "cause::CauseClass",
        used: Use::Rule {
            rules: &["conditions/cause-permission", "running-operation/retries-of-a-repeating-failure"],
            flips: &[
                // why it changes: a timeout passes, a refused role does not
                Flip {
                    case: "causes/cluster-cache-forbidden",
                    pointer: "/status/conditions/0/message",
                    to: "\"Failed to load live state: failed to get cluster info for \\\"https://10.0.0.1:6443\\\": error synchronizing cache state : failed to sync cluster https://10.0.0.1:6443: failed to load initial state of resource Secret: Get \\\"https://10.0.0.1:6443/api/v1/secrets?limit=500\\\": dial tcp 10.0.0.1:6443: i/o timeout\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Cause,
        key: "kind-not-found",
        meaning: "The API server does not serve a kind: a CRD not yet established, a removed API, a conversion webhook answering 404.",
        controller: "apimachinery NoKindMatchError; util/argo/argo.go:50-56 (`AugmentSyncMsg`); controller/state.go:283 (cluster info).",
        modelled: "cause::CauseClass",
        used: Use::Rule {
            rules: &["conditions/cause-deterministic"],
            flips: &[
                // why it changes: a webhook with no endpoints passes, a 404 does not
                Flip {
                    case: "causes/conversion-webhook-404",
                    pointer: "/status/conditions/0/message",
                    to: "\"Failed to load target state: failed to get cluster version for cluster \\\"https://10.0.0.1\\\": failed to get cluster info for \\\"https://10.0.0.1\\\": error synchronizing cache state : failed to sync cluster https://10.0.0.1: failed to load initial state of resource Bucket.s3.aws.upbound.io: conversion webhook for s3.aws.upbound.io/v1beta1, Kind=Bucket failed: Post \\\"https://provider-aws-s3.crossplane-system.svc:9443/convert?timeout=30s\\\": no endpoints available for service \\\"provider-aws-s3\\\"\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Cause,
        key: "configuration",
        meaning: "The source renders the same failure at every try: a template, values, kustomize or YAML error, a path, revision or chart that does not exist, a tool that exited on its input, a TLS or proxy mismatch.",
        controller: "util/exec/exec.go:111-116 (a tool's `failed exit status`), util/helm/cmd.go:88, util/kustomize/kustomize.go:394-396, util/app/path/path.go:27, util/git/client.go:1007.",
        modelled: "cause::CauseClass",
        used: Use::Rule {
            rules: &[
                "conditions/cached-deterministic",
                "conditions/cause-deterministic",
                "hydration/hydration-failed",
                "running-operation/retries-of-a-repeating-failure",
            ],
            flips: &[
                // why it changes: a timeout beneath the cache is hard-refreshed, a render error is escalated
                Flip {
                    case: "causes/cached-helm-nil-pointer",
                    pointer: "/status/conditions/0/message",
                    to: "\"Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = Manifest generation error (cached): failed to list refs: Get \\\"https://git.example.com/platform/deploy.git/info/refs?service=git-upload-pack\\\": dial tcp 10.20.0.15:443: i/o timeout\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Cause,
        key: "rejected",
        meaning: "The API server or an admission webhook rejects the object as it is: `denied the request`, `field is immutable`, `is invalid`.",
        controller: "apimachinery StatusReasonInvalid; admission webhooks; gitops-engine/pkg/sync/sync_context.go:691 joins the apply errors.",
        modelled: "cause::CauseClass",
        used: Use::Rule {
            rules: &["running-operation/retries-of-a-repeating-failure", "conditions/cause-deterministic"],
            flips: &[
                // why it changes: retries of an unreachable webhook are waited out, of a rejection are not
                Flip {
                    case: "causes/retries-failing-on-an-immutable-field",
                    pointer: "/status/operationState/message",
                    to: "\"one or more objects failed to apply, reason: error when replacing \\\"/dev/shm/2766407957\\\": Internal error occurred: failed calling webhook \\\"validate-policy.kyverno.svc\\\": failed to call webhook: Post \\\"https://kyverno-svc.kyverno.svc:443/policyvalidate?timeout=10s\\\": dial tcp 10.96.44.2:443: connect: connection refused. Retrying attempt #3 at 11:40AM.\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Cause,
        key: "transient",
        meaning: "A failure that passes: connection refused or reset, timeouts, `code = Unavailable`, etcd leader changes, optimistic-lock conflicts, a tool that timed out or was killed, a Git host's 5xx, a webhook with no endpoints.",
        controller: "functions/core/src/catalogue.rs TRANSIENT_SIGNALS (each sourced in the corpus); util/exec/exec.go:260 (`timeout after`); argoproj/argo-cd#17918, #19174, #10426.",
        modelled: "cause::CauseClass",
        used: Use::Rule {
            rules: &["conditions/cause-transient", "conditions/cached-transient", "failed-operation/comparison-passed"],
            flips: &[
                // why it changes: an unresolvable revision escalates, a fetch timeout waits
                Flip {
                    case: "causes/git-fetch-timed-out",
                    pointer: "/status/conditions/0/message",
                    to: "\"Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = unable to resolve 'release-2026.11' to a commit SHA\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Cause,
        key: "unknown",
        meaning: "Nothing recognised beneath the wrappers.",
        controller: "functions/core/src/cause.rs: the last resort after the gRPC code.",
        modelled: "cause::CauseClass",
        used: Use::Rule {
            rules: &["conditions/cached-unknown", "conditions/cause-deterministic"],
            flips: &[
                // why it changes: an unrecognised cached error is hard-refreshed once, a render error is not
                Flip {
                    case: "causes/cached-helm-nil-pointer",
                    pointer: "/status/conditions/0/message",
                    to: "\"Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = Manifest generation error (cached): something nobody wrote down\"",
                },
            ],
        },
        probe: None,
    },
];
