//! `operation` and `status.operationState`: the operation asked of the controller, and the state of
//! the one it runs or last ran (its copy of the request, phase, retries and per-resource results).

use super::{Flip, MapRow, RowKind::Field, Use};

pub(super) const ROWS: &[MapRow] = &[
    MapRow {
        kind: Field,
        key: "operation.*",
        meaning: "The operation asked of the controller, written by the API server's sync or rollback (`server/application/application.go:2156`, `:2303`) or by auto-sync (`controller/appcontroller.go:2373`); its fields mean what they mean under `status.operationState.operation`, where the controller copies them.",
        controller: "`SetAppOperation` refuses a second one and clears `status.operationState` (`util/argo/argo.go:946`-`950`); the controller starts it as a new `operationState` (`controller/appcontroller.go:1584`), removes it when the operation completes (`:1683`-`1687`), and auto-sync waits while it is set (`:2336`).",
        modelled: "operation",
        used: Use::Rule {
            rules: &["running-operation", "prune-risk", "stale-status", "sync-gate:escalate"],
            flips: &[
                // why it changes: a sync a person just asked for (the API server wrote `operation`
                // and cleared `operationState`) is the busy signal: running-operation waits where the
                // app was merely OutOfSync by hand. Every corpus case with an `operation` also shows
                // phase Running, so this flip adds the member to a case without one.
                Flip {
                    case: "modes/out-of-sync-manual",
                    pointer: "/operation",
                    to: "{\"sync\": {\"revision\": \"main\"}, \"initiatedBy\": {\"username\": \"dev@example.com\"}}",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "operation.info.*",
        meaning: "`{name, value}` pairs from the sync request's `infos` (`server/application/application.go:2170`); Argo Medic's syncs carry their idempotency key, incident, failure mode and incident start here (`step::sync_request`).",
        controller: "Not read by the controller; copied into `status.operationState.operation.info` when the operation starts (`controller/sync.go:71`-`77`).",
        modelled: "operation.info",
        used: Use::Carried(
            "the actuator looks for its idempotency key here after a lost answer or a crash (`Application::recorded_idempotency_keys`)",
        ),
        probe: Some(Flip {
            case: "modes/operation-in-progress",
            pointer: "/operation/info",
            to: "[{\"name\":\"reason\",\"value\":\"release 42\"}]",
        }),
    },
    MapRow {
        kind: Field,
        key: "status.operationState.phase",
        meaning: "The operation's phase: `Running`, `Terminating`, `Failed`, `Error` or `Succeeded` (`gitops-engine/pkg/sync/common/types.go:77`-`81`); the phase rows say what each means.",
        controller: "`Running` when the operation starts (`controller/sync.go:73`), then the sync context's after each step (`controller/sync.go:366`); stays `Running`, with `finishedAt` set, while a retry waits (`controller/appcontroller.go:1628`); `Terminating` from the API server (`server/application/application.go:2520`) or the controller's sync timeout (`controller/appcontroller.go:1543`).",
        modelled: "status.operation_state.phase",
        used: Use::Rule {
            rules: &["running-operation", "failed-operation", "prune-risk", "stale-status", "health-and-sync"],
            flips: &[
                // why it changes: failed-operation reads only a Failed or Error phase; Succeeded
                // leaves the OutOfSync auto-synced app to health-and-sync, which holds.
                Flip { case: "modes/sync-failed", pointer: "/status/operationState/phase", to: "\"Succeeded\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.message",
        meaning: "The operation's last message: `waiting for completion of hook …`, `waiting for healthy state of …` (`gitops-engine/pkg/sync/sync_context.go:470`), `Sync operation blocked by sync window` (`controller/sync.go:126`), an error, or a retry's.",
        controller: "Written with the phase (`controller/sync.go:366`); a failed attempt that will be retried gets `. Retrying attempt #N at <time>.` (`controller/appcontroller.go:1631`), the retry `Retrying operation[ with latest revisions]. Attempt #N` (`:1575`), the last failure `(retried N times).` (`:1638`); auto-sync quotes it in SyncError `Failed last sync attempt to …` (`:2398`).",
        modelled: "status.operation_state.message",
        used: Use::Rule {
            rules: &["running-operation", "failed-operation"],
            flips: &[
                // why it changes: the sync-window text is what names a running operation
                // sync-window-blocked; without it the operation is merely in progress.
                Flip {
                    case: "modes/sync-window-blocked",
                    pointer: "/status/operationState/message",
                    to: "\"one or more tasks are running\"",
                },
                // why it changes: a transient cause in the message makes an unrecognised failure a
                // transient one, whose ladder re-syncs instead of escalating.
                Flip {
                    case: "modes/sync-failed",
                    pointer: "/status/operationState/message",
                    to: "\"one or more objects failed to apply, reason: Internal error occurred: etcdserver: leader changed\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.startedAt",
        meaning: "When the operation started; kept across its retries.",
        controller: "Set once when the operation starts (`controller/sync.go:75`); the sync timeout counts from it (`controller/appcontroller.go:1542`), a prune waiting for confirmation is approved only by a `deletion-approved` time at or after it (`controller/sync.go:332`), and a successful sync records it in history (`controller/sync.go:409`).",
        modelled: "status.operation_state.started_at",
        used: Use::Rule {
            rules: &["running-operation"],
            flips: &[
                // why it changes: an operation started a minute ago is not running too long.
                Flip {
                    case: "modes/operation-running-too-long",
                    pointer: "/status/operationState/startedAt",
                    to: "\"2026-11-01T12:29:00Z\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.finishedAt",
        meaning: "When the operation completed; on a `Running` operation, when the failed attempt ended and a retry waits (`controller/appcontroller.go:1626`-`1629`).",
        controller: "Set on completion (`controller/appcontroller.go:1674`-`1677`) and when a retry is scheduled (`:1629`), cleared when it starts (`:1576`, `:1697`-`1703`); the next retry is due `NextRetryAt(finishedAt, retryCount)` (`:1550`) and self-heal backs off from it (`:2517`).",
        modelled: "status.operation_state.finished_at",
        used: Use::Rule {
            rules: &["health-and-sync", "failed-operation/crd-race", "failed-operation/webhook-unavailable"],
            flips: &[
                // why it changes: Progressing for minutes after a sync is a rollout, not a stale
                // Progressing status worth a refresh.
                Flip { case: "modes/stale-progressing", pointer: "/status/operationState/finishedAt", to: "\"2026-11-01T12:29:00Z\"" },
                // why it changes: the webhook grace period counts from the failure; an hour and a
                // half ago it is over, so the ladder re-syncs instead of holding.
                Flip {
                    case: "modes/webhook-unavailable-backing-off",
                    pointer: "/status/operationState/finishedAt",
                    to: "\"2026-11-01T11:00:00Z\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.retryCount",
        meaning: "How many retries of the operation have been scheduled.",
        controller: "Incremented when a failed attempt schedules a retry (`controller/appcontroller.go:1630`) while `retryCount < retry.limit` or the limit is negative (`:1620`); the back-off's exponent (`pkg/apis/application/v1alpha1/types.go:1590`).",
        modelled: "status.operation_state.retry_count",
        used: Use::Rule {
            rules: &[
                "failed-operation/kind-not-served",
                "failed-operation/crd-race",
                "running-operation/retries-pinned-to-old-revision",
                "running-operation/retry-picks-latest-revision",
            ],
            flips: &[
                // why it changes: a kind missing after retries is not served; on the first attempt
                // it may be a CRD racing its resources, which one re-sync fixes.
                Flip { case: "kind-not-found/kafka-crd-not-in-app-retried", pointer: "/status/operationState/retryCount", to: "0" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.info.*",
        meaning: "The started operation's `info`, copied from `operation.info` (`controller/sync.go:71`-`77`).",
        controller: "Not read by the controller.",
        modelled: "status.operation_state.operation.info",
        used: Use::Rule {
            // The actuator finds its idempotency key here once the operation started; the
            // classifier reads `argo-medic.io/incident-began` so that a failed Argo Medic sync
            // continues its incident (`episode_start`); the sync gate refuses to re-run a sync
            // that carries Argo Medic's key as if a person had asked for it.
            rules: &["ladder:sync", "sync-gate:escalate"],
            flips: &[
                // why it changes: without Argo Medic's key, the failed sync is a person's to re-run
                Flip {
                    case: "map/argo-medic-s-own-failed-sync-is-not-a-person-s",
                    pointer: "/status/operationState/operation/info",
                    to: "[]",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.initiatedBy.username",
        meaning: "Who asked for the operation: the API caller (`server/application/application.go:2169`); empty for auto-sync.",
        controller: "Recorded in `status.history` by a successful sync (`controller/sync.go:409`); not otherwise read.",
        modelled: "status.operation_state.operation.initiated_by.username",
        used: Use::Rule {
            rules: &["ladder:sync", "sync-gate:escalate"],
            flips: &[
                // why it changes: with auto-sync off the sync gate re-runs only a failed sync a
                // person asked for; without a name nobody asked.
                Flip { case: "transient/connection-reset", pointer: "/status/operationState/operation/initiatedBy/username", to: "\"\"" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.initiatedBy.automated",
        meaning: "True for an operation auto-sync or self-heal started (`controller/appcontroller.go:2382`).",
        controller: "Chooses the refresh after a completed, non-dry-run operation: the latest compared revision for automated ones, a forced resolution otherwise (`controller/appcontroller.go:1650`-`1659`); recorded in history (`controller/sync.go:409`).",
        modelled: "status.operation_state.operation.initiated_by.automated",
        used: Use::Rule {
            rules: &["ladder:sync", "sync-gate:escalate"],
            flips: &[
                // why it changes: the sync gate never re-runs an automated operation on an app
                // whose automated sync is off. Go omits `automated: false`, so the flip rewrites
                // `initiatedBy` (keeping the user name) to set it.
                Flip {
                    case: "transient/connection-reset",
                    pointer: "/status/operationState/operation/initiatedBy",
                    to: "{\"username\": \"dev@example.com\", \"automated\": true}",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.retry.limit",
        meaning: "How often a failed attempt is retried: 0 never, negative without end. Auto-sync takes `spec.syncPolicy.retry` or else a limit of 5 (`controller/appcontroller.go:2383`-`2387`); a person's sync the request's or the spec's (`server/application/application.go:2121`-`2129`).",
        controller: "A Failed or Error attempt is retried while `retryCount < limit || limit < 0` (`controller/appcontroller.go:1620`), unless the operation is terminating.",
        modelled: "status.operation_state.operation.retry.limit",
        used: Use::Rule {
            rules: &["running-operation/retries-pinned-to-old-revision"],
            flips: &[
                // why it changes: limited retries to an old revision end by themselves; only
                // unlimited ones need a person to terminate them.
                Flip {
                    case: "version/unlimited-retries-without-refresh-on-3-5",
                    pointer: "/status/operationState/operation/retry/limit",
                    to: "5",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.retry.refresh",
        meaning: "Argo CD ≥3.2: retry with the target's latest revision instead of the one first requested (argoproj/argo-cd#23038).",
        controller: "When a retry starts, clears `operation.sync.revision` and `revisions` and says `with latest revisions` (`controller/appcontroller.go:1565`-`1571`); the field does not exist before v3.2.0.",
        modelled: "status.operation_state.operation.retry.refresh",
        used: Use::Rule {
            rules: &[
                "running-operation/retry-picks-latest-revision",
                "running-operation/retries-pinned-to-old-revision",
                "running-operation/retries-of-a-repeating-failure",
            ],
            flips: &[
                // why it changes: without refresh, unlimited retries keep syncing the old revision
                // and only terminating the operation ends them.
                Flip {
                    case: "version/retry-refresh-on-3-2-picks-new-commit",
                    pointer: "/status/operationState/operation/retry/refresh",
                    to: "false",
                },
                // why it changes: without refresh the rejected commit is retried again and fails
                // the same way; with it, the next retry resolves the newer revision.
                Flip {
                    case: "version/retry-refresh-past-a-rejected-commit",
                    pointer: "/status/operationState/operation/retry/refresh",
                    to: "false",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.retry.backoff.*",
        meaning: "The retry back-off: `duration` (default 5s), `factor` (default 2), `maxDuration` (default 3m) (`pkg/apis/application/v1alpha1/application_defaults.go:6`-`8`).",
        controller: "`NextRetryAt` waits `duration × factor^retryCount`, at most `maxDuration`, after `finishedAt` (`pkg/apis/application/v1alpha1/types.go:1567`-`1595`, called at `controller/appcontroller.go:1550`); an unparsable duration ends the operation in Error (`:1551`-`1555`).",
        modelled: "status.operation_state.operation.retry.backoff",
        used: Use::NotRelevant("the rules judge a retrying operation by its revision and its age, not by when its next attempt is due"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.sync.revision",
        meaning: "The revision the operation was asked to sync (auto-sync: the compared revision, `controller/appcontroller.go:2376`; empty for a multi-source app, whose `status.sync.revision` is unset, `controller/state.go:645`-`656`); the sync gate re-runs a person's failed sync at it.",
        controller: "Becomes `syncResult.revision`, resolved to a commit when the sync starts (`controller/sync.go:97`, `:152`); every retry syncs it again unless `retry.refresh` clears it (`controller/appcontroller.go:1567`-`1570`).",
        modelled: "status.operation_state.operation.sync.revision",
        used: Use::Rule {
            rules: &["running-operation/retries-pinned-to-old-revision", "running-operation/retry-picks-latest-revision"],
            flips: &[
                // why it changes: retries of the target revision itself are not pinned to an old one.
                Flip {
                    case: "version/unlimited-retries-without-refresh-on-3-5",
                    pointer: "/status/operationState/operation/sync/revision",
                    to: "\"2e738a83c6d0424adf35877f20a68c1b55e5b268\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.sync.revisions",
        meaning: "The per-source revisions of a multi-source app's operation (`pkg/apis/application/v1alpha1/types.go:1440`); auto-sync copies `status.sync.revisions` (`controller/appcontroller.go:2380`).",
        controller: "Become `syncResult.revisions` (`controller/sync.go:98`, `:153`); cleared with `revision` by `retry.refresh` (`controller/appcontroller.go:1570`).",
        modelled: "status.operation_state.operation.sync.revisions",
        used: Use::Rule {
            // The revisions a multi-source operation is pinned to: retries of old ones are told by it.
            rules: &["running-operation"],
            flips: &[
                // why it changes: retries of today's revisions are not pinned to old ones
                Flip {
                    case: "map/multi-source-unlimited-retries-pinned-to-old-revisions",
                    pointer: "/status/operationState/operation/sync/revisions",
                    to: "[\"4.2.1\", \"83deddb30c715f768cb7ea000f8ed1f289632094\"]",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.sync.autoHealAttemptsCount",
        meaning: "Self-heal syncs in a row at one revision (Go `SelfHealAttemptsCount`).",
        controller: "Auto-sync carries it over and adds one for each self-heal of an already synced revision (`controller/appcontroller.go:2408`-`2418`) and backs off by it (`:2412`, `:2511`); a new revision starts at 0. v2.14-v3.1 carried it into every automated sync, new revisions too, so there it counts self-heals since the last manual sync (v2.14.0 `controller/appcontroller.go:2106`-`2108`, v3.1.0 `:2166`-`2170`).",
        modelled: "status.operation_state.operation.sync.auto_heal_attempts_count",
        used: Use::Rule {
            rules: &["self-heal-loop"],
            flips: &[
                // why it changes: one self-heal is Argo CD doing its job, not another writer
                // fighting it.
                Flip {
                    case: "conflicts/self-heal-fights-hpa",
                    pointer: "/status/operationState/operation/sync/autoHealAttemptsCount",
                    to: "1",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.sync.prune",
        meaning: "Whether the operation may delete resources that are no longer in Git.",
        controller: "Passed to the sync context (`controller/sync.go:311`); without it, extra resources are left `PruneSkipped`.",
        modelled: "status.operation_state.operation.sync.prune",
        used: Use::Carried("copied into the plan when the sync gate re-runs a person's failed sync; whether to sync does not depend on it"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.sync.syncOptions",
        meaning: "The operation's sync options (`ServerSideApply=true`, `FailOnSharedResource=true`, `Prune=confirm`, …): the spec's, or the request's instead (`server/application/application.go:2121`-`2131`).",
        controller: "The sync reads them from the operation, not from the spec (`controller/sync.go:157`, `:218`-`338`).",
        modelled: "status.operation_state.operation.sync.sync_options",
        used: Use::Carried("copied into the plan when the sync gate re-runs a person's failed sync, like `prune`"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.sync.dryRun",
        meaning: "A dry run (`argocd app sync --dry-run`): applied with `--dry-run`, nothing changes.",
        controller: "Passed to the sync context (`controller/sync.go:311`); a dry run records no history (`:408`) and asks for no refresh when done (`controller/appcontroller.go:1645`).",
        modelled: "status.operation_state.operation.sync.dry_run",
        used: Use::Rule {
            // The sync gate does not turn a person's dry run into a real sync.
            rules: &["ladder:sync", "sync-gate:escalate"],
            flips: &[
                // why it changes: a real sync that failed transiently is re-run
                Flip {
                    case: "map/person-s-dry-run-sync-failed-transiently",
                    pointer: "/status/operationState/operation/sync/dryRun",
                    to: "false",
                },
                // why it changes: the same failure as a dry run is not re-run
                Flip { case: "transient/connection-reset", pointer: "/status/operationState/operation/sync/dryRun", to: "true" },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.sync.resources.*",
        meaning: "A partial sync's resources (`group`, `kind`, `name`, `namespace`); a self-heal lists the OutOfSync ones (`controller/appcontroller.go:2419`-`2427`).",
        controller: "Filter the sync's tasks (`controller/sync.go:313`-`319`); a partial sync records no history (`:408`) and is reported as `Partial sync operation` (`controller/appcontroller.go:1724`-`1725`).",
        modelled: "status.operation_state.operation.sync.resources",
        used: Use::Rule {
            // The sync gate does not widen a person's partial sync to the whole app.
            rules: &["ladder:sync", "sync-gate:escalate"],
            flips: &[
                // why it changes: a whole sync that failed transiently is re-run
                Flip {
                    case: "map/person-s-partial-sync-failed-transiently",
                    pointer: "/status/operationState/operation/sync/resources",
                    to: "null",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.sync.syncStrategy.*",
        meaning: "`hook` (the default) or `apply` (plain apply, hooks skipped), each with `force` to delete and recreate on conflict (`pkg/apis/application/v1alpha1/types.go:1644`-`1678`).",
        controller: "`force` and the apply strategy go to the sync context (`controller/sync.go:311`); a rollback uses `apply` (`server/application/application.go:2310`).",
        modelled: "status.operation_state.operation.sync.sync_strategy",
        used: Use::NotRelevant("not read today; a re-run by the sync gate uses the default hook strategy without force"),
        probe: Some(Flip {
            case: "transient/connection-reset",
            pointer: "/status/operationState/operation/sync/syncStrategy",
            to: "{\"hook\":{}}",
        }),
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.sync.manifests",
        meaning: "Local manifests synced instead of Git (`argocd app sync --local`).",
        controller: "Replace the rendered target state (`controller/sync.go:143`, `controller/state.go:685`-`725`); refused while auto-sync is on, except for a dry run (`server/application/application.go:2108`-`2110`).",
        modelled: "",
        used: Use::NotRelevant("not read today (a gap: the sync gate would re-run a person's failed local sync from Git)"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.sync.source.*",
        meaning: "The source a single-source operation renders: the spec's, or a rollback's from history (`server/application/application.go:2153`, `:2311`).",
        controller: "Becomes `syncResult.source`, the source the sync renders (`controller/sync.go:82`-`92`).",
        modelled: "",
        used: Use::NotRelevant("rendering input; Argo Medic never edits a source and never rolls back"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.operation.sync.sources.*",
        meaning: "The sources a multi-source operation renders (`server/application/application.go:2166`, `controller/appcontroller.go:2379`).",
        controller: "Become `syncResult.sources` (`controller/sync.go:82`-`92`).",
        modelled: "",
        used: Use::NotRelevant("rendering input; Argo Medic never edits a source and never rolls back"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.revision",
        meaning: "The commit (or chart version) the operation synced; empty for a multi-source app.",
        controller: "The requested revision, then the resolved one (`controller/sync.go:97`, `:152`); auto-sync does not sync the same revision and source again after a failure (SyncError `Failed last sync attempt to …`) nor after a success without self-heal (`controller/appcontroller.go:2393`-`2404`, `:2496`-`2508`).",
        modelled: "status.operation_state.sync_result.revision",
        used: Use::Rule {
            rules: &["failed-operation", "stale-status", "ladder:sync", "sync-gate:escalate"],
            flips: &[
                // why it changes: a failure at an older revision is history; the app is judged by
                // its current state (OutOfSync by hand: nothing to do).
                Flip {
                    case: "transient/connection-reset",
                    pointer: "/status/operationState/syncResult/revision",
                    to: "\"0000000000000000000000000000000000000000\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.revisions",
        meaning: "The per-source revisions a multi-source operation synced.",
        controller: "Set when the sync starts (`controller/sync.go:98`, `:153`); auto-sync compares them with `status.sync.revisions` to know it already tried (`controller/appcontroller.go:2491`-`2494`).",
        modelled: "status.operation_state.sync_result.revisions",
        used: Use::Rule {
            // A multi-source app's result revision: an old failure is history once it differs.
            rules: &["failed-operation"],
            flips: &[
                // why it changes: a result at today's revisions makes the failed hook current
                Flip {
                    case: "map/multi-source-hook-failed-at-revisions-since-replaced",
                    pointer: "/status/operationState/syncResult/revisions",
                    to: "[\"4.2.1\", \"b4ab379266e8203393931fd1cfe6b49e458e4f80\"]",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.source.*",
        meaning: "The source the operation rendered: the operation's own, else the spec's (`controller/sync.go:82`-`92`).",
        controller: "Auto-sync compares it with `spec.source`: a changed source is synced again at the same revision, even after a failure (`controller/appcontroller.go:2504`-`2508`).",
        modelled: "",
        used: Use::NotRelevant(
            "not read today: a failure whose source the spec has changed since is judged as current, though auto-sync will retry it",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.sources.*",
        meaning: "The sources a multi-source operation rendered (`controller/sync.go:82`-`92`).",
        controller: "Auto-sync compares them with `spec.sources` as it does `source` (`controller/appcontroller.go:2505`-`2506`).",
        modelled: "",
        used: Use::NotRelevant("not read today, as for `syncResult.source`"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.managedNamespaceMetadata.*",
        meaning: "The labels and annotations the sync gave a namespace it created (`CreateNamespace=true`).",
        controller: "Copied from `spec.syncPolicy.managedNamespaceMetadata` after each sync step (`controller/sync.go:369`-`371`); a spec that differs makes the app OutOfSync (`controller/state.go:1036`-`1037`).",
        modelled: "",
        used: Use::NotRelevant("its effect shows in `status.sync.status`, which the rules read"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.resources[].group",
        meaning: "The API group of a resource or hook the operation touched.",
        controller: "From the sync context's results (`controller/sync.go:391`-`403`); a `the server could not find the requested resource` message is rewritten with it (`util/argo/argo.go:44`-`52`).",
        modelled: "status.operation_state.sync_result.resources[].group",
        used: Use::Rule {
            rules: &["failed-operation/kind-not-served", "failed-operation/crd-race"],
            flips: &[
                // why it changes: the app ships the CRD of `monitoring.coreos.com`, so that group
                // missing is a race; a group whose CRD it does not ship, after 5 retries, is not
                // served.
                Flip {
                    case: "kind-not-found/crd-in-app-retries-exhausted",
                    pointer: "/status/operationState/syncResult/resources/0/group",
                    to: "\"example.io\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.resources[].version",
        meaning: "The API version of a resource or hook the operation touched.",
        controller: "From the sync context's results (`controller/sync.go:397`); names the missing version in the rewritten not-found message (`util/argo/argo.go:52`).",
        modelled: "status.operation_state.sync_result.resources[].version",
        used: Use::NotRelevant("the kind-not-served rule reads the group and version from the message text"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.resources[].kind",
        meaning: "The kind of a resource or hook the operation touched.",
        controller: "From the sync context's results (`controller/sync.go:391`-`403`).",
        modelled: "status.operation_state.sync_result.resources[].kind",
        used: Use::Carried(
            "named in the escalation; the kind-not-served rule also takes a `CustomResourceDefinition` of the group in the result as proof the app ships it, which no corpus case isolates (its CRD is always in `status.resources` too)",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.resources[].namespace",
        meaning: "The namespace of a resource or hook the operation touched.",
        controller: "From the sync context's results (`controller/sync.go:391`-`403`).",
        modelled: "status.operation_state.sync_result.resources[].namespace",
        used: Use::Carried("named in the escalation's failing resources and failed hooks"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.resources[].name",
        meaning: "The name of a resource or hook the operation touched.",
        controller: "From the sync context's results (`controller/sync.go:391`-`403`).",
        modelled: "status.operation_state.sync_result.resources[].name",
        used: Use::Carried(
            "named in the escalation; read with `kind` by the kind-not-served rule (a CRD named `<plural>.<group>`), which no corpus case isolates",
        ),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.resources[].status",
        meaning: "`Synced`, `SyncFailed`, `Pruned` or `PruneSkipped` (`gitops-engine/pkg/sync/common/types.go:107`-`110`); empty for hooks and for resources not applied yet (`pkg/apis/application/v1alpha1/types.go:1784`).",
        controller: "From the sync context's results (`controller/sync.go:400`); a `SyncFailed` task fails the operation and starts the SyncFail hooks (`gitops-engine/pkg/sync/sync_context.go:632`-`638`).",
        modelled: "status.operation_state.sync_result.resources[].status",
        used: Use::Carried("the escalation lists the `SyncFailed` resources; the rules read the message and hook phase instead"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.resources[].message",
        meaning: "The apply, prune or hook message of one resource: the API server's error, a hook's health message.",
        controller: "The latest message of the task (`gitops-engine/pkg/sync/sync_context.go:1738`-`1741`), augmented for missing kinds and oversized annotations (`controller/sync.go:375`-`389`, `util/argo/argo.go:43`-`60`).",
        modelled: "status.operation_state.sync_result.resources[].message",
        used: Use::Rule {
            rules: &["failed-operation"],
            flips: &[
                // why it changes: `already exists` on a hook is a leftover hook in the way; a Job
                // past its backoff limit is a hook that ran and failed.
                Flip {
                    case: "hooks/hook-job-already-exists",
                    pointer: "/status/operationState/syncResult/resources/0/message",
                    to: "\"Job has reached the specified backoff limit\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.resources[].hookType",
        meaning: "`PreSync`, `Sync`, `PostSync`, `SyncFail` or `Skip` for a hook (`gitops-engine/pkg/sync/common/types.go:116`-`120`); empty for other resources.",
        controller: "From the task's hook annotation (`gitops-engine/pkg/sync/sync_context.go:1753`).",
        modelled: "status.operation_state.sync_result.resources[].hook_type",
        used: Use::Rule {
            rules: &["failed-operation", "running-operation", "ladder:sync", "sync-gate:escalate"],
            flips: &[
                // why it changes: a PreSync hook that ran keeps the sync gate from re-running the
                // sync (hooks not marked idempotent); without it the transient failure is re-synced.
                Flip {
                    case: "hooks/presync-ran-then-transient-failure-not-idempotent",
                    pointer: "/status/operationState/syncResult/resources/0/hookType",
                    to: "\"\"",
                },
                // why it changes: `already exists` names a hook conflict only on a hook.
                Flip {
                    case: "hooks/hook-job-already-exists",
                    pointer: "/status/operationState/syncResult/resources/0/hookType",
                    to: "\"\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.resources[].hookPhase",
        meaning: "A hook's state: `Running`, `Succeeded`, `Failed` or `Error` (health Progressing, Healthy, Degraded or Unknown, `gitops-engine/pkg/sync/sync_context.go:349`-`371`); a hook cut short by termination is `Failed` with `Terminated` (`:843`). Non-hook resources carry it too (`:1568`-`1573`).",
        controller: "Updated while the hook runs (`gitops-engine/pkg/sync/sync_context.go:545`-`552`) and read back to resume (`controller/sync.go:202`-`216`).",
        modelled: "status.operation_state.sync_result.resources[].hook_phase",
        used: Use::Rule {
            rules: &["failed-operation", "running-operation", "stale-status", "ladder:sync", "sync-gate:escalate"],
            flips: &[
                // why it changes: the app is Synced and Healthy, so only a failed hook makes the
                // failed operation a failed deployment; a hook that succeeded leaves nothing to do.
                Flip {
                    case: "hooks/sync-hook-error-deadline-exceeded",
                    pointer: "/status/operationState/syncResult/resources/0/hookPhase",
                    to: "\"Succeeded\"",
                },
            ],
        },
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.resources[].syncPhase",
        meaning: "`PreSync`, `Sync`, `PostSync` or `SyncFail`: the phase the result was taken in (`gitops-engine/pkg/sync/common/types.go:68`-`71`).",
        controller: "From the task (`gitops-engine/pkg/sync/sync_context.go:1755`).",
        modelled: "status.operation_state.sync_result.resources[].sync_phase",
        used: Use::NotRelevant("the rules tell hooks apart by `hookType`"),
        probe: None,
    },
    MapRow {
        kind: Field,
        key: "status.operationState.syncResult.resources[].images",
        meaning: "The container images of the resource as synced.",
        controller: "From the task's object (`gitops-engine/pkg/sync/sync_context.go:1749`); shown by the UI.",
        modelled: "",
        used: Use::NotRelevant("not read"),
        probe: None,
    },
];
