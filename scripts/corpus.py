#!/usr/bin/env python3
"""Writes the decision-quality corpus, events/corpus/<class>/<id>.json.

Each case is one Application as `GET /api/v1/applications/{name}` returns it (Argo CD v3.5 shape,
checked against the v1alpha1Application schema of Argo CD's swagger by sim/tests/api/swagger.rs),
with the trigger, the time, the actions an experienced operator accepts, the actions that would be
unsafe, and one line of why that names its evidence: a path:line in argoproj/argo-cd (at v3.5.1,
commit 37ee0097 for the earlier cases, the tag's commit 109ca7ca for issue 23's) or a public issue. The messages are quoted literally from those sources; the
objects around them are written out here so every case is complete and reviewable.

The cases are data, not derived from the policy: the labels were written before the policy was
changed to agree with them (see the git history of events/corpus/ and functions/core/tests/corpus.rs).

Usage: python3 scripts/corpus.py   (rewrites events/corpus/; deterministic)
"""

import copy
import hashlib
import json
import os
import shutil
from datetime import datetime, timedelta, timezone

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "events", "corpus")
NOW = datetime(2026, 11, 1, 12, 30, 0, tzinfo=timezone.utc)
AC = "argoproj/argo-cd v3.5.1"


def ts(minutes_ago):
    return (NOW - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def sha(seed):
    return hashlib.sha1(seed.encode()).hexdigest()


def uid(seed):
    h = hashlib.md5(seed.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


# --- building blocks -----------------------------------------------------------------------------


def res(kind, name, group="", version="v1", ns=None, status="Synced", health="Healthy", hmsg=None, hook=False, prune=False, wave=None):
    r = {"group": group, "version": version, "kind": kind, "name": name, "status": status}
    if ns is not None:
        r["namespace"] = ns
    if health:
        r["health"] = {"status": health}
        if hmsg:
            r["health"]["message"] = hmsg
    if hook:
        r["hook"] = True
    if prune:
        r["requiresPruning"] = True
    if wave is not None:
        r["syncWave"] = wave
    return r


def result(kind, name, group="", version="v1", ns=None, status="Synced", message="", hook_type=None, hook_phase=None, phase="Sync"):
    r = {"group": group, "version": version, "kind": kind, "name": name, "status": status, "syncPhase": phase}
    if ns is not None:
        r["namespace"] = ns
    if message:
        r["message"] = message
    if hook_type:
        r["hookType"] = hook_type
        r["hookPhase"] = hook_phase
        r["syncPhase"] = hook_type if hook_type in ("PreSync", "PostSync", "SyncFail") else "Sync"
        r.pop("status", None)
    return r


def workload(ns, name, n_extra=0):
    """A realistic resource list: the Deployment, its Service, config and a few more."""
    out = [
        res("ConfigMap", f"{name}-config", ns=ns),
        res("Secret", f"{name}-env", ns=ns, health=None),
        res("Service", name, ns=ns),
        res("ServiceAccount", name, ns=ns, health=None),
        res("Deployment", name, group="apps", ns=ns),
        res("HorizontalPodAutoscaler", name, group="autoscaling", version="v2", ns=ns),
        res("PodDisruptionBudget", name, group="policy", ns=ns, health=None),
        res("Ingress", name, group="networking.k8s.io", ns=ns),
    ]
    for i in range(n_extra):
        out.append(res("ConfigMap", f"{name}-dashboard-{i}", ns=ns))
    return out


def managed(appset=None, edits=(), controller_minutes=2):
    """managedFields as the API server records them."""
    out = []
    if appset:
        manager, minutes = appset
        out.append({
            "manager": manager, "operation": "Update", "apiVersion": "argoproj.io/v1alpha1", "time": ts(minutes),
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app.kubernetes.io/part-of": {}}, "f:ownerReferences": {".": {}, "k:{\"uid\":\"" + uid("appset") + "\"}": {}}},
                         "f:spec": {".": {}, "f:destination": {".": {}, "f:namespace": {}, "f:server": {}}, "f:project": {}, "f:source": {".": {}, "f:path": {}, "f:repoURL": {}, "f:targetRevision": {}}, "f:syncPolicy": {".": {}, "f:automated": {".": {}, "f:prune": {}, "f:selfHeal": {}}}}},
        })
    out.append({
        "manager": "argocd-application-controller", "operation": "Update", "apiVersion": "argoproj.io/v1alpha1", "time": ts(controller_minutes),
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {".": {}, "f:health": {}, "f:operationState": {}, "f:reconciledAt": {}, "f:resources": {}, "f:sync": {}, "f:summary": {}}},
    })
    for manager, minutes, fields in edits:
        out.append({"manager": manager, "operation": "Update", "apiVersion": "argoproj.io/v1alpha1", "time": ts(minutes), "fieldsType": "FieldsV1", "fieldsV1": fields})
    return out


def app(name, ns="argocd", project="default", dest_ns=None, auto=True, self_heal=False, prune=False, sync="Synced", health="Healthy",
        health_since=95, reconciled=2, revision=None, resources=None, multi_source=False, labels=None, annotations=None, retry=None, n_extra=0,
        sync_options=("CreateNamespace=true",), created=60 * 24 * 30):
    dest_ns = dest_ns or name
    revision = revision or sha(name)
    repo = "https://git.example.com/platform/deploy.git"
    a = {
        "metadata": {
            "name": name, "namespace": ns, "uid": uid(name), "resourceVersion": str(int(sha(name)[:6], 16)), "generation": 41,
            "creationTimestamp": ts(created),
            "labels": {"team": dest_ns.split("-")[0], **(labels or {})},
            "finalizers": ["resources-finalizer.argocd.argoproj.io"],
            "managedFields": managed(),
        },
        "spec": {"project": project, "destination": {"server": "https://kubernetes.default.svc", "namespace": dest_ns}},
        "status": {
            "resources": resources if resources is not None else workload(dest_ns, name, n_extra),
            "sync": {"status": sync, "revision": revision,
                     "comparedTo": {"destination": {"server": "https://kubernetes.default.svc", "namespace": dest_ns}}},
            "health": {"status": health, "lastTransitionTime": ts(health_since)},
            "history": [{"id": 17, "revision": sha(name + "prev"), "deployedAt": ts(60 * 26), "deployStartedAt": ts(60 * 26 + 1),
                         "initiatedBy": {"automated": True}, "source": {"repoURL": repo, "path": f"apps/{name}", "targetRevision": "main"}}],
            "reconciledAt": ts(reconciled),
            "sourceType": "Kustomize",
            "summary": {"images": [f"registry.example.com/{name}:1.{len(name)}.3"]},
            "controllerNamespace": "argocd",
        },
    }
    if annotations:
        a["metadata"]["annotations"] = annotations
    if multi_source:
        a["spec"]["sources"] = [
            {"repoURL": "https://charts.example.com/stable", "chart": name, "targetRevision": "4.2.1", "helm": {"valueFiles": ["$values/values/" + name + ".yaml"]}},
            {"repoURL": repo, "targetRevision": "main", "ref": "values"},
        ]
        a["status"]["sync"]["revisions"] = ["4.2.1", revision]
        a["status"]["sync"]["comparedTo"]["sources"] = a["spec"]["sources"]
        a["status"]["sourceTypes"] = ["Helm", "Directory"]
        a["status"]["sourceType"] = "Helm"
    else:
        a["spec"]["source"] = {"repoURL": repo, "path": f"apps/{name}", "targetRevision": "main"}
        a["status"]["sync"]["comparedTo"]["source"] = a["spec"]["source"]
    policy = {}
    if auto:
        policy["automated"] = {"prune": prune, "selfHeal": self_heal}
    if sync_options:
        policy["syncOptions"] = list(sync_options)
    if retry is not None:
        policy["retry"] = retry
    if policy:
        a["spec"]["syncPolicy"] = policy
    return a


def op(a, phase, message, started, finished=None, resources=(), automated=None, user="jane@example.com", revision=None, retry_count=None,
       sync_options=None, retry=None, heal_attempts=None, prune=None):
    """A last operation (status.operationState)."""
    auto = automated if automated is not None else ("automated" in a["spec"].get("syncPolicy", {}))
    revision = revision or a["status"]["sync"]["revision"]
    sync = {"revision": revision}
    if prune if prune is not None else a["spec"].get("syncPolicy", {}).get("automated", {}).get("prune", False):
        sync["prune"] = True
    opts = sync_options if sync_options is not None else a["spec"].get("syncPolicy", {}).get("syncOptions")
    if opts:
        sync["syncOptions"] = list(opts)
    if heal_attempts:
        sync["autoHealAttemptsCount"] = heal_attempts
    state = {
        "operation": {"sync": sync, "initiatedBy": {"automated": True} if auto else {"username": user},
                      "retry": retry if retry is not None else ({"limit": 5} if auto else {})},
        "phase": phase, "message": message, "startedAt": ts(started),
    }
    if not state["operation"]["retry"]:
        del state["operation"]["retry"]
    if finished is not None:
        state["finishedAt"] = ts(finished)
    if resources or phase in ("Succeeded", "Failed", "Error"):
        src = a["spec"].get("source")
        state["syncResult"] = {"resources": list(resources), "revision": revision}
        if src:
            state["syncResult"]["source"] = src
        else:
            state["syncResult"]["sources"] = a["spec"]["sources"]
            state["syncResult"]["revisions"] = a["status"]["sync"].get("revisions", [revision])
    if retry_count is not None:
        state["retryCount"] = retry_count
    a["status"]["operationState"] = state
    return a


def cond(a, kind, message, minutes):
    a["status"].setdefault("conditions", []).append({"type": kind, "message": message, "lastTransitionTime": ts(minutes)})
    return a


def running(a, message, started, automated=None, revision=None, retry_count=None, retry=None, resources=()):
    op(a, "Running", message, started, None, resources, automated=automated, revision=revision, retry_count=retry_count, retry=retry)
    a["operation"] = copy.deepcopy(a["status"]["operationState"]["operation"])
    return a


def owned_by_appset(a, appset_name, manager, appset_minutes, edits=()):
    a["metadata"]["ownerReferences"] = [{"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "name": appset_name, "uid": uid("appset"),
                                         "controller": True, "blockOwnerDeletion": True}]
    a["metadata"]["labels"]["app.kubernetes.io/part-of"] = appset_name
    a["metadata"]["managedFields"] = managed(appset=(manager, appset_minutes), edits=edits)
    return a


CASES = []


def hydrated(n, dest_ns, reconciled=1, sync="Synced", hydrate_to=None):
    """An app whose source is the source hydrator's (spec.sourceHydrator, Argo CD >= 3.1): no spec.source,
    and the sync branch compared."""
    a = app(n, dest_ns=dest_ns, reconciled=reconciled, sync=sync)
    a["spec"].pop("source")
    a["spec"]["sourceHydrator"] = {"drySource": {"repoURL": "https://git.example.com/platform/dry.git", "path": f"apps/{n}", "targetRevision": "main"},
                                   "syncSource": {"targetBranch": "environments/prod", "path": f"apps/{n}"}}
    if hydrate_to:
        a["spec"]["sourceHydrator"]["hydrateTo"] = {"targetBranch": hydrate_to}
    a["status"]["sync"]["comparedTo"]["source"] = {"repoURL": "https://git.example.com/platform/dry.git", "path": f"apps/{n}", "targetRevision": "environments/prod"}
    return a


def multi_source_as_the_controller_writes(a, revisions, op_revisions=None):
    """A multi-source app as Argo CD v3.x writes it: only the revisions lists, never the single
    revision fields (controller/state.go:645-656, :1043-1047; controller/sync.go:152-153)."""
    a["status"]["sync"].pop("revision", None)
    a["status"]["sync"]["revisions"] = list(revisions)
    state = a["status"].get("operationState")
    if state:
        ops = list(op_revisions or revisions)
        sync = state["operation"]["sync"]
        sync.pop("revision", None)
        sync["revisions"] = ops
        if "syncResult" in state:
            state["syncResult"].pop("revision", None)
            state["syncResult"]["revisions"] = ops
        if "operation" in a:
            a["operation"] = copy.deepcopy(state["operation"])
    return a


def case(cls, cid, a, accept, why, trigger="sweep", mode=None, unsafe=None, history=None, config=None, version=None, pair=None, prune_risk=False,
         rows=(), known_failing=None, by_profile=None):
    """One case. `unsafe` defaults from the accepted actions: a sync nobody accepted, `none` where only escalation is accepted,
    and, for apps at prune risk, any call that could start pruning. `rows` names the rows of the map of the Application
    (functions/core/src/app_map/) the case was drawn from; `known_failing` says why the policy gets it wrong today (the mark
    leaves with the commit that fixes it: functions/core/tests/corpus.rs fails on a marked case that passes). `by_profile`
    maps each Argo CD profile (medic_core::versions::PROFILES) to the actions accepted there, for a case whose right answer
    depends on the version (functions/core/tests/profiles.rs decides it on every profile)."""
    if unsafe is None:
        unsafe = []
        if "sync" not in accept:
            unsafe.append("sync")
        if accept == ["escalate"]:
            unsafe.append("none")
        if prune_risk:
            unsafe = sorted(set(unsafe) | {"sync", "refresh", "hard_refresh"})
    c = {"id": cid, "class": cls, "why": why, "trigger": trigger, "now": ts(0), "accept": accept, "unsafe": unsafe}
    if mode:
        c["mode"] = mode
    if pair:
        c["near_miss_of"] = pair
    if version:
        c["argocd_version"] = version
    if config:
        c["config"] = config
    if history:
        c["history"] = history
    if rows:
        c["map_rows"] = list(rows)
    if known_failing:
        c["known_failing"] = known_failing
    if by_profile:
        c["by_profile"] = by_profile
    c["app"] = a
    CASES.append(c)


# --- literal messages, with where they come from -------------------------------------------------

TASKS_FAILED = "one or more synchronization tasks completed unsuccessfully"  # gitops-engine/pkg/sync/sync_context.go:656
TASKS_INVALID = "one or more synchronization tasks are not valid"  # gitops-engine/pkg/sync/sync_context.go:512
SYNCFAIL_FAILED = "one or more SyncFail hooks failed"  # gitops-engine/pkg/sync/sync_context.go:949
BACKOFF = "Job has reached the specified backoff limit"  # gitops-engine/pkg/health/testdata/job-failed.yaml:47
SRC_SYNC_CTX = f"{AC} gitops-engine/pkg/sync/sync_context.go:656"
SRC_CRD = f"{AC} util/argo/argo.go:51"
SRC_CRD_VERSION = f"{AC} util/argo/argo.go:53"
SRC_AUTOSYNC = f"{AC} controller/appcontroller.go:2598"
SRC_SHARED = f"{AC} controller/state.go:862"


def crd_msg(group, kind, ns, name):
    return f"The Kubernetes API could not find {group}/{kind} for requested resource {ns}/{name}. Make sure the \"{kind}\" CRD is installed on the destination cluster."


def no_match(kind, gv):
    return f"{TASKS_INVALID}: resource mapping not found for name: \"x\" namespace: \"\" from \"\": no matches for kind \"{kind}\" in version \"{gv}\"\nensure CRDs are installed first"


# === class 1: hook outcomes versus workload health ==============================================

def hooks():
    a = app("checkout", dest_ns="checkout")
    op(a, "Failed", f"{TASKS_FAILED}, reason: {BACKOFF}", 14, 9, [
        result("Deployment", "checkout", group="apps", ns="checkout", message="deployment.apps/checkout configured"),
        result("Job", "checkout-smoke-test", group="batch", ns="checkout", message=BACKOFF, hook_type="PostSync", hook_phase="Failed"),
    ])
    case("hooks", "postsync-smoke-test-failed-app-synced-healthy", a, ["escalate"], "A PostSync smoke test failed while the Deployment rolled out fine: the operation failed (sync_context.go:656) although the app reports Synced/Healthy; a human decides (issue text, class 1).",
         trigger="on-sync-failed", mode="hook-failed")

    a = app("ledger", dest_ns="ledger", auto=False)
    op(a, "Failed", f"{TASKS_FAILED}, reason: {BACKOFF}", 30, 26, [
        result("Job", "ledger-db-migrate", group="batch", ns="ledger", message=BACKOFF, hook_type="PreSync", hook_phase="Failed"),
    ])
    case("hooks", "presync-migration-failed-old-version-still-healthy", a, ["escalate"], f"The PreSync migration Job failed ({BACKOFF}, job-failed.yaml:47); the previous release keeps running Synced/Healthy, but the deployment failed: escalate, never re-run the migration.",
         trigger="on-sync-failed", mode="hook-failed")

    a = app("search-api", dest_ns="search", multi_source=True)
    op(a, "Failed", f"{TASKS_FAILED}, reason: {BACKOFF}", 40, 35, [
        result("Deployment", "search-api", group="apps", ns="search", message="deployment.apps/search-api configured"),
        result("Job", "search-reindex", group="batch", ns="search", message=BACKOFF, hook_type="PostSync", hook_phase="Failed"),
    ])
    case("hooks", "postsync-reindex-failed-multi-source-synced-healthy", a, ["escalate"], "Multi-source app whose PostSync reindex Job failed; workloads Healthy. A failed hook is a failed deployment (sync_context.go:656).",
         trigger="on-sync-failed", mode="hook-failed")

    a = app("payments", dest_ns="payments")
    op(a, "Failed", f"{TASKS_FAILED}, reason: {SYNCFAIL_FAILED}", 22, 18, [
        result("Deployment", "payments", group="apps", ns="payments", message="admission webhook \"validate.kyverno.svc\" denied the request: image tag latest is not allowed", status="SyncFailed"),
        result("Job", "payments-notify-failure", group="batch", ns="payments", message=BACKOFF, hook_type="SyncFail", hook_phase="Failed"),
    ])
    case("hooks", "syncfail-hook-failed-too", a, ["escalate"], f"`{SYNCFAIL_FAILED}` ({AC} gitops-engine/pkg/sync/sync_context.go:949): the failure handler itself failed.",
         trigger="on-sync-failed", mode="hook-failed")

    a = app("orders", dest_ns="orders", annotations={"argo-medic.io/hooks-idempotent": "true"})
    op(a, "Failed", f"{TASKS_FAILED}, reason: {BACKOFF}", 25, 20, [
        result("Job", "orders-smoke", group="batch", ns="orders", message=BACKOFF, hook_type="PostSync", hook_phase="Failed"),
    ])
    case("hooks", "failed-hook-marked-idempotent-still-escalates", a, ["escalate"], "Even idempotent hooks that FAILED need a human: the failure says something about the release (sync_context.go:656).",
         trigger="on-sync-failed", mode="hook-failed")

    a = app("inventory", dest_ns="inventory", auto=False)
    op(a, "Failed", f"{TASKS_FAILED}, reason: Pod \"inventory-seed-x7k2p\" failed: DeadlineExceeded", 50, 41, [
        result("Job", "inventory-seed", group="batch", ns="inventory", message="Job was active longer than specified deadline", hook_type="Sync", hook_phase="Error"),
    ])
    case("hooks", "sync-hook-error-deadline-exceeded", a, ["escalate"], "A Sync-phase hook ended in Error (Job activeDeadlineSeconds); `DeadlineExceeded` here is the Job's own deadline, not an API-server timeout.",
         trigger="on-sync-failed", mode="hook-failed")

    # Hooks ran and SUCCEEDED, then the operation failed on a transient error: never re-run unless declared idempotent.
    a = app("billing", dest_ns="billing", auto=False, sync="OutOfSync")
    op(a, "Failed", f"{TASKS_FAILED}, reason: etcdserver: leader changed", 12, 10, [
        result("Job", "billing-db-migrate", group="batch", ns="billing", message="Reached expected number of succeeded pods", hook_type="PreSync", hook_phase="Succeeded"),
        result("Deployment", "billing", group="apps", ns="billing", status="SyncFailed", message="Put \"https://10.96.0.1:443/apis/apps/v1/namespaces/billing/deployments/billing\": etcdserver: leader changed"),
    ], user="ops@example.com")
    case("hooks", "presync-ran-then-transient-failure-not-idempotent", a, ["escalate"], "The PreSync migration already ran in the failed operation; a re-sync runs it again (issue class 1). Transient cause or not, a human decides.",
         trigger="on-sync-failed", mode="sync-failed-transient", pair="presync-ran-then-transient-failure-idempotent")

    b = copy.deepcopy(a)
    b["metadata"]["name"] = "billing-v2"
    b["metadata"]["annotations"] = {"argo-medic.io/hooks-idempotent": "true"}
    case("hooks", "presync-ran-then-transient-failure-idempotent", b, ["sync"], "Same failure, but the owners declared the hooks idempotent (argo-medic.io/hooks-idempotent): one re-run of the person's sync is safe.",
         trigger="on-sync-failed", mode="sync-failed-transient", pair="presync-ran-then-transient-failure-not-idempotent")

    a = app("gateway", dest_ns="gateway")
    op(a, "Failed", f"{TASKS_FAILED}, reason: Internal error occurred: failed calling webhook \"webhook.cert-manager.io\": failed to call webhook: Post \"https://cert-manager-webhook.cert-manager.svc:443/validate?timeout=30s\": no endpoints available for service \"cert-manager-webhook\"", 15, 12, [
        result("Job", "gateway-schema", group="batch", ns="gateway", message="Reached expected number of succeeded pods", hook_type="PreSync", hook_phase="Succeeded"),
        result("Certificate", "gateway-tls", group="cert-manager.io", ns="gateway", status="SyncFailed", message="Internal error occurred: failed calling webhook \"webhook.cert-manager.io\": failed to call webhook: Post \"https://cert-manager-webhook.cert-manager.svc:443/validate?timeout=30s\": no endpoints available for service \"cert-manager-webhook\""),
    ], retry_count=5)
    a["status"]["sync"]["status"] = "OutOfSync"
    case("hooks", "webhook-unavailable-after-presync-ran", a, ["escalate"], "cert-manager's webhook was not ready, but the PreSync hook already ran in this operation: no automatic re-sync.",
         trigger="on-sync-failed", mode="webhook-unavailable")

    a = app("catalog", dest_ns="catalog")
    op(a, "Failed", f"{TASKS_FAILED}", 30, 28, [
        result("Deployment", "catalog", group="apps", ns="catalog", status="SyncFailed", message="Put \"https://10.96.0.1:443/apis/apps/v1/namespaces/catalog/deployments/catalog\": http2: client connection lost"),
    ])
    case("hooks", "no-hooks-transient-failure-self-healed-synced-healthy", a, ["none", "wait"], "Same operation message as the hook cases, but no hook ran and the app is Synced/Healthy afterwards: nothing left to fix (near miss of class 1).",
         trigger="on-sync-failed", mode="healthy", pair="postsync-smoke-test-failed-app-synced-healthy")

    a = app("accounts-api", dest_ns="accounts", sync="OutOfSync", health="Degraded", health_since=20)
    op(a, "Failed", f"{TASKS_FAILED}, reason: {BACKOFF}", 25, 20, [
        result("Job", "accounts-db-migrate", group="batch", ns="accounts", message=BACKOFF, hook_type="PreSync", hook_phase="Failed"),
    ])
    case("hooks", "presync-failed-app-degraded", a, ["escalate"], "The classic hook failure: PreSync Job failed, app OutOfSync (sync_context.go:656).", trigger="on-sync-failed", mode="hook-failed")

    a = app("notifier", dest_ns="notifier", sync="OutOfSync")
    op(a, "Failed", f"{TASKS_FAILED}, reason: jobs.batch \"notifier-migrate\" already exists", 10, 9, [
        result("Job", "notifier-migrate", group="batch", ns="notifier", message="jobs.batch \"notifier-migrate\" already exists", hook_type="PreSync", hook_phase="Failed"),
    ])
    case("hooks", "hook-job-already-exists", a, ["escalate"], "A fixed-name hook Job left from the last sync blocks the new one (`already exists`); argoproj/argo-cd#4979 describes hooks that loop.",
         trigger="on-sync-failed", mode="hook-conflict")


# === class 2: ApplicationSet hand edits on real objects ==========================================

APPSET_MGR = "argocd-applicationset-controller"  # cmd/argocd-applicationset-controller/commands/applicationset_controller.go:131
SRC_APPSET_UA = f"{AC} cmd/argocd-applicationset-controller/commands/applicationset_controller.go:131 (User-Agent `argocd-applicationset-controller/<version>`, the API server names the field manager after it)"
EDIT_REVISION = {"f:spec": {"f:source": {"f:targetRevision": {}}}}
EDIT_SYNCPOLICY = {"f:spec": {"f:syncPolicy": {"f:automated": {"f:selfHeal": {}}}}}


def appsets():
    def transient(a):
        op(a, "Failed", f"{TASKS_FAILED}", 12, 10, [
            result("Deployment", a["metadata"]["name"], group="apps", ns=a["spec"]["destination"]["namespace"], status="SyncFailed",
                   message="Put \"https://10.96.0.1:443/apis/apps/v1/deployments\": net/http: TLS handshake timeout"),
        ])
        a["status"]["sync"]["status"] = "OutOfSync"
        return a

    a = owned_by_appset(transient(app("web-eu1", ns="apps-team-a", dest_ns="web", project="team-a")), "web", APPSET_MGR, 300, [("argocd-server", 20, EDIT_REVISION)])
    case("appset", "ui-edit-real-manager-then-transient-failure", a, ["escalate"], f"`argocd-server` (every UI/CLI edit, {AC} cmd/argocd-server/commands/argocd_server.go:157) changed spec.source.targetRevision after `argocd-applicationset-controller` last wrote ({SRC_APPSET_UA}); a sync would deploy an edit the ApplicationSet reverts.",
         trigger="on-sync-failed", mode="appset-hand-edit")

    a = owned_by_appset(app("web-us1", dest_ns="web", auto=False, sync="OutOfSync"), "web", APPSET_MGR, 400, [("kubectl-edit", 30, EDIT_REVISION)])
    case("appset", "kubectl-edit-real-manager", a, ["escalate"], f"`kubectl edit` wrote spec after the real ApplicationSet manager ({SRC_APPSET_UA}).", mode="appset-hand-edit")

    a = owned_by_appset(app("web-ap1", dest_ns="web", auto=False, sync="OutOfSync"), "web", APPSET_MGR, 400, [("kubectl-client-side-apply", 45, {"f:spec": {"f:source": {"f:path": {}}}})])
    case("appset", "kubectl-apply-real-manager", a, ["escalate"], f"`kubectl apply` of a local copy changed spec.source.path ({SRC_APPSET_UA}).", mode="appset-hand-edit")

    a = owned_by_appset(app("metrics-prod", dest_ns="metrics", multi_source=True), "metrics", APPSET_MGR, 600, [("helm", 60, {"f:spec": {"f:sources": {}}})])
    case("appset", "helm-managed-edit-multi-source", a, ["escalate"], f"A Helm release that also templates the Application wrote spec.sources after the ApplicationSet ({SRC_APPSET_UA}).", mode="appset-hand-edit")

    a = owned_by_appset(transient(app("ingest-prod", dest_ns="ingest")), "ingest", APPSET_MGR, 500, [("argocd", 15, EDIT_REVISION)])
    case("appset", "argocd-core-mode-edit", a, ["escalate"], f"`argocd` in core mode talks to the API server directly (manager `argocd`) and changed targetRevision ({SRC_APPSET_UA}).",
         trigger="on-sync-failed", mode="appset-hand-edit")

    a = owned_by_appset(transient(app("docs-prod", dest_ns="docs")), "docs", "applicationset-controller", 500, [("kubectl-edit", 15, EDIT_REVISION)])
    case("appset", "legacy-manager-name", a, ["escalate"], "Objects written before the controller set its User-Agent carry the legacy manager name `applicationset-controller`; still a hand edit.",
         trigger="on-sync-failed", mode="appset-hand-edit")

    a = owned_by_appset(app("web-sa1", dest_ns="web", auto=False), "web", APPSET_MGR, 400, [("argocd-server", 30, EDIT_SYNCPOLICY)])
    case("appset", "syncpolicy-edit-not-ignored", a, ["escalate"], "spec.syncPolicy toggled in the UI while the ApplicationSet does not ignore it: it will be reverted.",
         mode="appset-hand-edit", pair="syncpolicy-edit-ignored-by-appset")

    a = owned_by_appset(app("web-sa2", dest_ns="web", auto=False), "web", APPSET_MGR, 400, [("argocd-server", 30, EDIT_SYNCPOLICY)])
    case("appset", "syncpolicy-edit-ignored-by-appset", a, ["none"], f"The same UI toggle of spec.syncPolicy, but the ApplicationSet lists /spec/syncPolicy in ignoreApplicationDifferences ({AC} docs/operator-manual/applicationset/Controlling-Resource-Modification.md:136, the documented way to toggle auto-sync): not a conflict.",
         mode="healthy", pair="syncpolicy-edit-not-ignored", config={"appset_ignored_fields": ["/spec/syncPolicy"]})

    a = owned_by_appset(transient(app("shop-eu1", ns="apps-team-b", dest_ns="shop", project="team-b")), "shop", APPSET_MGR, 400, [("argocd-server", 30, EDIT_REVISION)])
    case("appset", "targetrevision-edit-ignored-transient-failure", a, ["sync"], f"targetRevision pinned by hand is ignored by the ApplicationSet (ignoreApplicationDifferences /spec/source/targetRevision, Controlling-Resource-Modification.md:117); the auto-sync failed on a TLS handshake timeout: re-sync as automation would.",
         trigger="on-sync-failed", mode="sync-failed-transient", config={"appset_ignored_fields": ["/spec/source/targetRevision"]}, pair="ui-edit-real-manager-then-transient-failure")

    a = owned_by_appset(transient(app("shop-us1", dest_ns="shop")), "shop", APPSET_MGR, 20, [("argocd-server", 90, EDIT_REVISION)])
    case("appset", "edit-already-reverted", a, ["sync"], "The UI edit (90 min ago) predates the ApplicationSet's last write (20 min ago): it was reverted; the transient auto-sync failure can be retried.",
         trigger="on-sync-failed", mode="sync-failed-transient")

    a = owned_by_appset(transient(app("shop-ap1", dest_ns="shop")), "shop", APPSET_MGR, 300, [("argocd-server", 12, {"f:operation": {".": {}, "f:initiatedBy": {}, "f:sync": {}}})])
    case("appset", "ui-sync-sets-operation-not-spec", a, ["sync"], "`argocd-server` after the ApplicationSet wrote only `f:operation` (a sync from the UI), not `f:spec`: no hand edit.",
         trigger="on-sync-failed", mode="sync-failed-transient")

    a = owned_by_appset(app("shop-sa1", dest_ns="shop"), "shop", APPSET_MGR, 300, [("kubectl-edit", 25, {"f:metadata": {"f:annotations": {"f:notifications.argoproj.io/subscribe.on-sync-failed.slack": {}}}})])
    case("appset", "annotation-edit-not-spec", a, ["none"], "A hand edit of metadata.annotations (a notification subscription) is not a spec change.", mode="healthy")


# === class 3: kind not found — race versus API gone ==============================================

def kinds():
    a = app("kafka-events", dest_ns="kafka", sync="OutOfSync", health="Missing", resources=[
        res("CustomResourceDefinition", "kafkas.kafka.strimzi.io", group="apiextensions.k8s.io", wave=-2),
        res("Kafka", "events", group="kafka.strimzi.io", version="v1beta2", ns="kafka", status="OutOfSync", health="Missing", wave=1),
    ])
    op(a, "Failed", no_match("Kafka", "kafka.strimzi.io/v1beta2"), 12, 10, [
        result("CustomResourceDefinition", "kafkas.kafka.strimzi.io", group="apiextensions.k8s.io", message="customresourcedefinition.apiextensions.k8s.io/kafkas.kafka.strimzi.io created"),
        result("Kafka", "events", group="kafka.strimzi.io", version="v1beta2", ns="kafka", status="SyncFailed", message=crd_msg("kafka.strimzi.io", "Kafka", "kafka", "events")),
    ])
    case("kind-not-found", "crd-in-same-sync-race", a, ["sync"], f"The CRD kafkas.kafka.strimzi.io is part of this very sync and was created a moment before the CR ({SRC_CRD}): a race, one re-sync.",
         trigger="on-sync-failed", mode="crd-not-established", pair="kafka-crd-not-in-app-retried")

    a = app("kafka-events-b", dest_ns="kafka", sync="OutOfSync", health="Missing", resources=[
        res("Kafka", "events", group="kafka.strimzi.io", version="v1beta2", ns="kafka", status="OutOfSync", health="Missing"),
    ])
    op(a, "Failed", no_match("Kafka", "kafka.strimzi.io/v1beta2"), 40, 10, [
        result("Kafka", "events", group="kafka.strimzi.io", version="v1beta2", ns="kafka", status="SyncFailed", message=crd_msg("kafka.strimzi.io", "Kafka", "kafka", "events")),
    ], retry_count=5)
    cond(a, "SyncError", f"Failed last sync attempt to [{a['status']['sync']['revision']}]: " + no_match("Kafka", "kafka.strimzi.io/v1beta2"), 9)
    case("kind-not-found", "kafka-crd-not-in-app-retried", a, ["escalate"], f"The same message, but no CRD in the app and five automated retries over 30 minutes did not see it appear ({SRC_AUTOSYNC}): the operator is not installed; a sync cannot fix it.",
         trigger="on-sync-failed", mode="api-not-served", pair="crd-in-same-sync-race")

    for cid, kind, gv, issue in [
        ("psp-policy-v1beta1-removed", "PodSecurityPolicy", "policy/v1beta1", "cert-manager/cert-manager#5971 (`no matches for kind \"PodSecurityPolicy\" in version \"policy/v1beta1\"` on Kubernetes 1.25)"),
        ("ingress-extensions-v1beta1-removed", "Ingress", "extensions/v1beta1", "Kubernetes 1.22 removed extensions/v1beta1 Ingress (deprecation guide); message shape as in cert-manager/cert-manager#5971"),
        ("cronjob-batch-v1beta1-removed", "CronJob", "batch/v1beta1", "Kubernetes 1.25 removed batch/v1beta1 CronJob; message shape as in cert-manager/cert-manager#5971"),
        ("hpa-autoscaling-v2beta2-removed", "HorizontalPodAutoscaler", "autoscaling/v2beta2", "Kubernetes 1.26 removed autoscaling/v2beta2; message shape as in cert-manager/cert-manager#5971"),
        ("flowschema-v1beta2-removed", "FlowSchema", "flowcontrol.apiserver.k8s.io/v1beta2", "Kubernetes 1.29 removed flowcontrol.apiserver.k8s.io/v1beta2"),
    ]:
        name = cid.split("-")[0] + "-legacy"
        group, version = gv.split("/") if "/" in gv else ("", gv)
        a = app(name, dest_ns="legacy", sync="OutOfSync", health="Missing")
        a["status"]["resources"].append(res(kind, name, group=group, version=version, ns="legacy", status="OutOfSync", health="Missing"))
        op(a, "Failed", no_match(kind, gv), 9, 8, [
            result(kind, name, group=group, version=version, ns="legacy", status="SyncFailed", message=no_match(kind, gv).split(": ", 1)[1]),
        ])
        case("kind-not-found", cid, a, ["escalate"], f"A built-in API version the cluster no longer serves: {issue}. No retry can bring it back.",
             trigger="on-sync-failed", mode="api-not-served")

    a = app("certs", dest_ns="certs", sync="OutOfSync", auto=False, resources=[
        res("Certificate", "wildcard", group="cert-manager.io", version="v1alpha2", ns="certs", status="OutOfSync", health="Missing"),
    ])
    msg = 'The Kubernetes API could not find version "v1alpha2" of cert-manager.io/Certificate for requested resource certs/wildcard. Version "v1" of cert-manager.io/Certificate is installed on the destination cluster.'
    op(a, "Failed", f"{TASKS_INVALID}: {msg}", 10, 9, [result("Certificate", "wildcard", group="cert-manager.io", version="v1alpha2", ns="certs", status="SyncFailed", message=msg)], user="sre@example.com")
    case("kind-not-found", "crd-version-no-longer-served", a, ["escalate"], f"`could not find version \"v1alpha2\" ... Version \"v1\" ... is installed` ({SRC_CRD_VERSION}): the CRD exists but stopped serving that version; Git must change.",
         trigger="on-sync-failed", mode="api-not-served")

    a = app("monitoring-rules", dest_ns="monitoring", sync="OutOfSync", health="Missing", auto=False, resources=[
        res("PrometheusRule", "api-alerts", group="monitoring.coreos.com", ns="monitoring", status="OutOfSync", health=None),
    ])
    op(a, "Failed", f"{TASKS_INVALID}: {crd_msg('monitoring.coreos.com', 'PrometheusRule', 'monitoring', 'api-alerts')}", 6, 5, [
        result("PrometheusRule", "api-alerts", group="monitoring.coreos.com", ns="monitoring", status="SyncFailed", message=crd_msg("monitoring.coreos.com", "PrometheusRule", "monitoring", "api-alerts")),
    ], user="sre@example.com")
    case("kind-not-found", "operator-crd-first-attempt-person-synced", a, ["sync", "escalate"], f"First attempt of a person's sync; the CRD comes from the prometheus-operator app, which may be syncing right now ({SRC_CRD}). One re-run is reasonable; escalating is too.",
         trigger="on-sync-failed", mode="crd-not-established")

    a = app("kafka-topics", dest_ns="kafka", sync="OutOfSync", health="Missing", multi_source=True, resources=[
        res("CustomResourceDefinition", "kafkatopics.kafka.strimzi.io", group="apiextensions.k8s.io", wave=-1),
        res("KafkaTopic", "orders", group="kafka.strimzi.io", version="v1beta2", ns="kafka", status="OutOfSync", health="Missing"),
    ])
    op(a, "Failed", f"{TASKS_INVALID}: the server could not find the requested resource", 8, 7, [
        result("KafkaTopic", "orders", group="kafka.strimzi.io", version="v1beta2", ns="kafka", status="SyncFailed", message="the server could not find the requested resource"),
    ])
    case("kind-not-found", "crd-in-app-server-could-not-find", a, ["sync"], f"`the server could not find the requested resource` (the string {AC} util/argo/argo.go:45 rewrites) for a kind whose CRD the app ships: race.",
         trigger="on-sync-failed", mode="crd-not-established")

    a = app("kafka-users", dest_ns="kafka", sync="OutOfSync", health="Missing", resources=[
        res("CustomResourceDefinition", "kafkausers.kafka.strimzi.io", group="apiextensions.k8s.io", wave=-1),
        res("KafkaUser", "orders", group="kafka.strimzi.io", version="v1beta2", ns="kafka", status="OutOfSync", health="Missing"),
        res("Job", "kafka-users-acl-check", group="batch", ns="kafka", hook=True),
    ])
    op(a, "Failed", no_match("KafkaUser", "kafka.strimzi.io/v1beta2"), 8, 7, [
        result("Job", "kafka-users-acl-check", group="batch", ns="kafka", message="Reached expected number of succeeded pods", hook_type="PreSync", hook_phase="Succeeded"),
        result("KafkaUser", "orders", group="kafka.strimzi.io", version="v1beta2", ns="kafka", status="SyncFailed", message=crd_msg("kafka.strimzi.io", "KafkaUser", "kafka", "orders")),
    ])
    case("kind-not-found", "crd-race-but-presync-ran", a, ["escalate"], "A CRD race, but the PreSync hook already ran in the failed operation (class 1): no automatic re-sync.",
         trigger="on-sync-failed", mode="crd-not-established")

    a = app("observability", dest_ns="observability", sync="OutOfSync", health="Missing", resources=[
        res("CustomResourceDefinition", "servicemonitors.monitoring.coreos.com", group="apiextensions.k8s.io", wave=-2),
        res("ServiceMonitor", "api-metrics", group="monitoring.coreos.com", ns="observability", status="OutOfSync", health=None),
    ])
    op(a, "Failed", f"{TASKS_INVALID}: {crd_msg('monitoring.coreos.com', 'ServiceMonitor', 'observability', 'api-metrics')}", 30, 8, [
        result("ServiceMonitor", "api-metrics", group="monitoring.coreos.com", ns="observability", status="SyncFailed", message=crd_msg("monitoring.coreos.com", "ServiceMonitor", "observability", "api-metrics")),
    ], retry_count=5)
    cond(a, "SyncError", f"Failed last sync attempt to [{a['status']['sync']['revision']}]: {TASKS_INVALID}", 7)
    case("kind-not-found", "crd-in-app-retries-exhausted", a, ["sync"], f"The CRD is shipped in wave -2 of the same app; the automated retries gave up ({SRC_AUTOSYNC}) before it was established: one sync now.",
         trigger="on-sync-failed", mode="crd-not-established")


# === class 4: API-server transient errors ========================================================

TRANSIENTS = [
    ("server-timeout", "the server was unable to return a response in the time allotted, but may still be processing the request (put deployments.apps {name})", "Kubernetes ServerTimeout (apimachinery NewServerTimeout); seen by Argo CD in argoproj/argo-cd#1006"),
    ("request-timeout", "Timeout: request did not complete within requested timeout - context deadline exceeded", "kube-apiserver's request timeout (504), argoproj/argo-cd#3864 shows the same deadline"),
    ("etcd-leader-changed", "etcdserver: leader changed", "etcd leader election, etcd-io/etcd#3293"),
    ("etcd-request-timed-out", "etcdserver: request timed out, possibly due to previous leader failure", "argoproj/argo-workflows#14972 quotes it literally"),
    ("connection-reset", "Put \"https://10.96.0.1:443/apis/apps/v1/namespaces/{ns}/deployments/{name}\": read tcp 10.2.3.4:51234->10.96.0.1:443: read: connection reset by peer", "connection reset by the API server's load balancer"),
    ("http2-goaway", "Put \"https://10.96.0.1:443/apis/apps/v1/namespaces/{ns}/deployments/{name}\": http2: server sent GOAWAY and closed the connection; LastStreamID=1999, ErrCode=NO_ERROR, debug=\"\"", "API server restarts send GOAWAY; argoproj/argo-cd#12214 shows GOAWAY-closed connections"),
    ("broken-pipe", "Patch \"https://10.96.0.1:443/api/v1/namespaces/{ns}/services/{name}\": write tcp 10.2.3.4:40112->10.96.0.1:443: write: broken pipe", "connection dropped mid-request"),
    ("quota-evaluation-timeout", "Internal error occurred: resource quota evaluation timed out", "kube-apiserver ResourceQuota admission under load"),
    ("too-many-requests", "the server has received too many requests and has asked us to try again later (put deployments.apps {name})", "Kubernetes 429 (apimachinery NewTooManyRequests)"),
    ("client-timeout", "Get \"https://10.96.0.1:443/api?timeout=32s\": net/http: request canceled (Client.Timeout exceeded while awaiting headers)", "argoproj/argo-cd#1291 quotes it literally"),
    ("unavailable-503", "the server is currently unable to handle the request (put deployments.apps {name})", "Kubernetes 503 (apimachinery NewServiceUnavailable)"),
    ("tls-handshake-timeout", "Put \"https://10.96.0.1:443/apis/apps/v1/namespaces/{ns}/deployments/{name}\": net/http: TLS handshake timeout", "control plane under load"),
    ("object-modified-conflict", "Operation cannot be fulfilled on deployments.apps \"{name}\": the object has been modified; please apply your changes to the latest version and try again", "optimistic-concurrency conflict (409); retrying is what the message asks for"),
]


def transients():
    for cid, msg, src in TRANSIENTS:
        name = "svc-" + cid.split("-")[0]
        ns = "team-" + cid[:4]
        a = app(name + "-" + cid[-4:], dest_ns=ns, auto=False, sync="OutOfSync")
        m = msg.format(name=name, ns=ns)
        op(a, "Failed", f"{TASKS_FAILED}", 9, 8, [
            result("ConfigMap", f"{name}-config", ns=ns, message=f"configmap/{name}-config configured"),
            result("Deployment", name, group="apps", ns=ns, status="SyncFailed", message=m),
        ], user="dev@example.com")
        case("transient", cid, a, ["sync"], f"A person's sync failed only on `{m.split(': ')[-1][:80]}` ({src}); re-running it once at the same revision is what they asked for.",
             trigger="on-sync-failed", mode="sync-failed-transient")

    a = app("svc-timeout-auto-off", dest_ns="team-x", auto=False, sync="OutOfSync")
    op(a, "Failed", f"{TASKS_FAILED}", 9, 8, [
        result("Deployment", "svc", group="apps", ns="team-x", status="SyncFailed", message="the server was unable to return a response in the time allotted, but may still be processing the request (put deployments.apps svc)"),
    ], automated=True)
    case("transient", "transient-but-automation-since-disabled", a, ["escalate"], "The failed operation was automated, but automated sync has since been switched off: nobody asks for this sync (near miss of server-timeout).",
         trigger="on-sync-failed", mode="sync-failed-transient", pair="server-timeout")

    a = app("svc-etcd-hooks", dest_ns="team-y", auto=False, sync="OutOfSync")
    op(a, "Failed", f"{TASKS_FAILED}", 9, 8, [
        result("Job", "svc-etcd-hooks-migrate", group="batch", ns="team-y", message="Reached expected number of succeeded pods", hook_type="PreSync", hook_phase="Succeeded"),
        result("Deployment", "svc", group="apps", ns="team-y", status="SyncFailed", message="etcdserver: leader changed"),
    ], user="dev@example.com")
    case("transient", "etcd-leader-changed-after-hooks-ran", a, ["escalate"], "Same etcd leader change, but a PreSync hook ran in that operation: never re-run it automatically (class 1).",
         trigger="on-sync-failed", mode="sync-failed-transient", pair="etcd-leader-changed")

    a = app("svc-rejected", dest_ns="team-z", auto=False, sync="OutOfSync")
    op(a, "Failed", f"{TASKS_FAILED}", 9, 8, [
        result("Deployment", "svc", group="apps", ns="team-z", status="SyncFailed", message="Deployment.apps \"svc\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"svc-v2\"}}: field is immutable"),
    ], user="dev@example.com")
    case("transient", "immutable-selector-not-transient", a, ["escalate"], "A person's sync failed, but on an immutable field: retrying fails the same way (near miss).",
         trigger="on-sync-failed", mode="resource-rejected")


# === class 5: rate limiting by the source host ===================================================

RATE_LIMITS = [
    ("github-git-429", "Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = failed to list refs: unexpected client error: unexpected requesting \"https://github.com/acme/deploy.git/info/refs?service=git-upload-pack\" status code: 429", "argoproj/argo-cd#1895 (`unexpected requesting ... status code: 429`)"),
    ("codecommit-429", "rpc error: code = Unknown desc = unexpected client error: unexpected requesting \"https://git-codecommit.eu-west-1.amazonaws.com/v1/repos/deploy/info/refs?service=git-upload-pack\" status code: 429", "argoproj/argo-cd#1895 quotes it for AWS CodeCommit"),
    ("helm-repo-429", "Failed to load target state: failed to generate manifest for source 1 of 2: rpc error: code = Unknown desc = failed to fetch chart: failed to get command args to log: `helm pull --destination /tmp/x --version 4.2.1 --repo https://charts.example.com/stable metrics` failed exit status 1: Error: failed to fetch https://charts.example.com/stable/metrics-4.2.1.tgz : 429 Too Many Requests", "Helm repository throttling; argoproj/argo-cd#9413 shows `429 Too Many Requests` from a Git host"),
    ("dockerhub-oci-toomanyrequests", "rpc error: code = Unknown desc = failed to fetch chart: failed to pull registry-1.docker.io/bitnamicharts/redis:19.0.1: toomanyrequests: You have reached your pull rate limit. You may increase the limit by authenticating and upgrading", "Docker Hub's pull rate limit for OCI Helm charts"),
    ("github-api-rate-limit", "rpc error: code = Unknown desc = error fetching repository: GET https://api.github.com/repos/acme/deploy: 403 API rate limit exceeded for installation ID 1234567", "GitHub App API limit, argoproj/argo-cd#22961"),
    ("gitlab-retry-later", "rpc error: code = Unknown desc = failed to fetch: remote: Retry later\nfatal: unable to access 'https://gitlab.example.com/platform/deploy.git/': The requested URL returned error: 429", "GitLab's rate limit answer (429)"),
]


def rate_limits():
    for i, (cid, msg, src) in enumerate(RATE_LIMITS):
        a = app(f"fleet-{cid.split('-')[0]}-{i}", dest_ns=f"team-{i}", sync="Unknown", health="Healthy", multi_source="helm" in cid)
        cond(a, "ComparisonError", msg, 25 + 5 * i)
        case("rate-limit", cid, a, ["wait"], f"The source host throttles ({src}); the same error shows on many apps at once. Transient and shared: wait and re-check; never escalate it per app.",
             mode="source-rate-limited")

    a = app("fleet-long-throttle", dest_ns="team-l", sync="Unknown")
    cond(a, "ComparisonError", RATE_LIMITS[0][1], 130)
    case("rate-limit", "throttled-for-two-hours", a, ["escalate"], "Still throttled after two hours (argoproj/argo-cd#1895): throttling that long is no longer passing, and a person should know once. Relabelled by issue 23 from wait: many apps on the host are one fleet incident (the fleet hold leaves them to it), so a per-app escalation reaches only an app throttled alone.",
         mode="source-rate-limited")

    a = app("fleet-cached-429", dest_ns="team-c", sync="Unknown")
    cond(a, "ComparisonError", "rpc error: code = Unknown desc = Manifest generation error (cached): failed to list refs: unexpected client error: unexpected requesting \"https://github.com/acme/deploy.git/info/refs?service=git-upload-pack\" status code: 429", 40)
    case("rate-limit", "cached-generation-error-from-429", a, ["wait"], f"The repo-server paused generation after repeated failures ({AC} reposerver/repository/repository.go:79, :1059) and the cause is a 429: a hard refresh would only hit the throttled host again.",
         mode="source-rate-limited")

    a = app("fleet-auth-401", dest_ns="team-a", sync="Unknown")
    cond(a, "ComparisonError", "Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = failed to list refs: authentication required", 40)
    case("rate-limit", "authentication-required-not-throttling", a, ["escalate"], "Same condition and shape, but `authentication required`: the credentials are wrong, a person must fix them (near miss).",
         mode="source-config-error", pair="github-git-429")

    a = app("fleet-repo-404", dest_ns="team-b", sync="Unknown")
    cond(a, "ComparisonError", "rpc error: code = Unknown desc = failed to list refs: repository not found", 40)
    case("rate-limit", "repository-not-found-not-throttling", a, ["escalate"], "`repository not found` from the same host: a misconfiguration, not throttling.",
         mode="source-config-error", pair="codecommit-429")


# === class: the cause beneath the wrapper (issue 23) =============================================
# Labels come from the map of the Application (functions/core/src/app_map/) and the cause classes
# (functions/core/src/cause.rs), written before the policy read them. The repo-server caches a
# generation error under the manifest cache key of the revision (reposerver/repository/repository.go:76,
# :1059), so a hard refresh at the same revision renders again; it fixes what passed and repeats
# what is deterministic.

LOAD = "Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = "  # controller/state.go:698, :377
CACHED = "Manifest generation error (cached): "  # reposerver/repository/repository.go:76
HELM_T = "`helm template . --name-template {n} --namespace {ns} --kube-version 1.30 --values /tmp/_argocd-repo/values-prod.yaml --include-crds` failed exit status 1: "  # util/helm/cmd.go (template)
KUST = "`kustomize build /tmp/_argocd-repo/apps/{n}/overlays/prod` failed exit status 1: "  # util/kustomize/kustomize.go (Build)
BENEATH = {
    "helm-nil-pointer": (HELM_T + "Error: template: {n}/templates/deployment.yaml:34:28: executing \"{n}/templates/deployment.yaml\" at <.Values.image.tag>: nil pointer evaluating interface {{}}.tag", "configuration"),
    "helm-values-file-missing": (HELM_T + "Error: open /tmp/_argocd-repo/values-prod.yaml: no such file or directory", "configuration"),
    "helm-required-value": (HELM_T + "Error: execution error at ({n}/templates/secret.yaml:7:20): database.password is required", "configuration"),
    "helm-dependency-missing": (HELM_T + "Error: found in Chart.yaml, but missing in charts/ directory: postgresql", "configuration"),
    "kustomize-base-missing": (KUST + "Error: accumulating resources: accumulation err='accumulating resources from '../../base': evalsymlink failure on '/tmp/_argocd-repo/apps/{n}/base' : lstat /tmp/_argocd-repo/apps/{n}/base: no such file or directory': must build at directory: not a valid directory", "configuration"),
    "kustomize-patch-target-missing": (KUST + "Error: no matches for Id apps_v1_Deployment|~X|{n}-worker; failed to find unique target for patch apps_v1_Deployment|{n}-worker", "configuration"),
    "app-path-missing": ("apps/{n}: app path does not exist", "configuration"),
    "revision-unresolvable": ("unable to resolve 'release-2026.11' to a commit SHA", "configuration"),
    "yaml-invalid": ("failed to unmarshal \"apps/{n}/deploy.yaml\": error converting YAML to JSON: yaml: line 14: did not find expected key", "configuration"),
    "cmp-plugin-placeholders": ("plugin sidecar failed. error generating manifests in cmp: rpc error: code = Unknown desc = error generating manifests: `sh -c \"argocd-vault-plugin generate ./\"` failed exit status 1: Error: Replace: could not replace all placeholders in Template", "configuration"),
    "jsonnet-field-missing": ("failed to evaluate jsonnet \"apps/{n}/main.jsonnet\": RUNTIME ERROR: Field does not exist: replicas", "configuration"),
    "git-auth": ("failed to list refs: authentication required", "permission"),
    "git-ssh-auth": ("error creating SSH agent: ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey], no supported methods remain", "permission"),
    "repo-not-found": ("failed to list refs: repository not found", "configuration"),
    "git-timeout": ("failed to list refs: Get \"https://git.example.com/platform/deploy.git/info/refs?service=git-upload-pack\": dial tcp 10.20.0.15:443: i/o timeout", "transient"),
    "kustomize-remote-base-refused": (KUST + "Error: accumulating resources: accumulation err='accumulating resources from 'https://github.com/acme/bases//web?ref=v2': git cmd = '/usr/bin/git fetch --depth=1 origin v2': exit status 128; stderr: fatal: unable to access 'https://github.com/acme/bases/': Failed to connect to github.com port 443: Connection refused': must build at directory: not a valid directory", "transient"),
    "helm-repo-unreachable": (HELM_T.split(" failed")[0].replace("template", "dependency build") + " failed exit status 1: Error: Get \"https://charts.example.com/stable/index.yaml\": context deadline exceeded", "transient"),
}


def causes():
    cite = f"{AC} controller/state.go:698 and :377 wrap the repo-server's answer; reposerver/repository/repository.go:76 marks a cached one"
    # The cached wrapper over each cause: the cause decides, not the wrapper.
    for key, (text, klass) in BENEATH.items():
        n = f"cache-{key}"[:40].rstrip("-")
        a = app(n, dest_ns=f"shop-{len(key)}", sync="Unknown", health="Healthy", reconciled=3)
        cond(a, "ComparisonError", LOAD + CACHED + text.format(n=n, ns=f"shop-{len(key)}"), 35)
        if klass == "transient":
            accept, why = ["hard_refresh"], f"Beneath the cached wrapper is a failure that passes ({key}); a hard refresh renders again without the cache ({cite})."
            fail = None
        else:
            accept, why = ["escalate"], f"Beneath the cached wrapper is a {klass} error ({key}) that renders the same at this revision, so a hard refresh repeats it; a person must fix the source or its credentials ({cite})."
            fail = None
        case("causes", f"cached-{key}", a, accept, why, mode="cached-manifest-error" if klass == "transient" else "source-config-error",
             rows=("condition ComparisonError", "field status.conditions[].message"), known_failing=fail,
             pair="cached-helm-nil-pointer" if key == "git-timeout" else None)

    # The same causes without the cache: the plain ComparisonError path.
    for key in ("helm-nil-pointer", "kustomize-remote-base-refused", "git-timeout", "revision-unresolvable"):
        text, klass = BENEATH[key]
        n = f"plain-{key}"[:40].rstrip("-")
        a = app(n, dest_ns=f"web-{len(key)}", sync="Unknown", health="Healthy", reconciled=3)
        cond(a, "ComparisonError", LOAD + text.format(n=n, ns=f"web-{len(key)}"), 4)
        accept = ["wait", "refresh"] if klass == "transient" else ["escalate"]
        case("causes", f"uncached-{key}", a, accept,
             f"Not cached: a {klass} error beneath the load wrapper ({cite}). Transient ones clear within the repo error grace; deterministic ones need a person.",
             mode="comparison-error-transient" if klass == "transient" else "source-config-error", rows=("condition ComparisonError",))

    # Multi-source: the second source's render fails; the wrapper names the source.
    n = "multi-src-values-render"
    a = app(n, dest_ns="pay", sync="Unknown", multi_source=True, reconciled=3)
    cond(a, "ComparisonError", "Failed to load target state: failed to generate manifest for source 2 of 2: rpc error: code = Unknown desc = " + CACHED + BENEATH["helm-required-value"][0].format(n=n, ns="pay"), 50)
    case("causes", "multi-source-second-source-cached-render-error", a, ["escalate"],
         f"Source 2 of 2 fails to render (`{AC}` controller/state.go:377 names the source); cached or not, a required value is missing and a hard refresh repeats it.",
         mode="source-config-error", rows=("condition ComparisonError", "field spec.sources[].*"))

    # The cluster cache: RBAC against a transport failure beneath the same wrapper.
    n = "cluster-cache-rbac"
    a = app(n, dest_ns="ops-r", sync="Unknown", reconciled=3)
    cond(a, "ComparisonError", "Failed to load live state: failed to get cluster info for \"https://10.0.0.1:6443\": error synchronizing cache state : failed to sync cluster https://10.0.0.1:6443: failed to load initial state of resource Secret: secrets is forbidden: User \"system:serviceaccount:argocd:argocd-application-controller\" cannot list resource \"secrets\" in API group \"\" at the cluster scope", 40)
    case("causes", "cluster-cache-forbidden", a, ["escalate"],
         f"The controller's service account may not list Secrets in the destination ({AC} controller/state.go, `Failed to load live state`; controller/cache/cache.go syncs the cluster): only a person can grant the role.",
         mode="permission-denied", rows=("condition ComparisonError",))
    n = "cluster-cache-timeout"
    a = app(n, dest_ns="ops-t", sync="Unknown", reconciled=3)
    cond(a, "ComparisonError", "Failed to load live state: failed to get cluster info for \"https://10.0.0.2:6443\": error synchronizing cache state : failed to sync cluster https://10.0.0.2:6443: failed to load initial state of resource Deployment.apps: Get \"https://10.0.0.2:6443/apis/apps/v1/deployments?limit=500\": dial tcp 10.0.0.2:6443: i/o timeout", 4)
    case("causes", "cluster-cache-timeout", a, ["wait", "refresh"],
         f"The same wrapper over a timeout reaching the destination cluster: it passes (near miss of cluster-cache-forbidden; {AC} controller/cache/cache.go).",
         mode="comparison-error-transient", pair="cluster-cache-forbidden", rows=("condition ComparisonError",))

    # The source hydrator: its failure never reaches the app's sync status.
    for key, text, accept, fail in (
        ("render-error", "Failed to hydrate: failed to get manifests: rpc error: code = Unknown desc = " + BENEATH["helm-nil-pointer"][0].format(n="hydrated-web", ns="web"), ["escalate"], "deterministic"),
        ("push-refused", "Failed to hydrate: failed to commit and push: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp 10.20.5.9:8086: connect: connection refused\"", ["none", "wait"], None),
    ):
        n = f"hydrated-{key}"
        a = hydrated(n, "web-h")
        a["status"]["sourceHydrator"] = {
            "lastSuccessfulOperation": {"drySHA": sha(n + "dry-old"), "hydratedSHA": sha(n + "hyd-old"), "sourceHydrator": a["spec"]["sourceHydrator"]},
            "currentOperation": {"drySHA": sha(n + "dry-new"), "startedAt": ts(50), "finishedAt": ts(49), "phase": "Failed", "message": text, "sourceHydrator": a["spec"]["sourceHydrator"]},
        }
        case("causes", f"hydration-failed-{key}", a, accept,
             f"{AC} controller/hydrator/hydrator.go:324 records `Failed to hydrate: <err>` in status.sourceHydrator.currentOperation and retries after 2 minutes (:650); the app stays Synced at the old hydrated commit. "
             + ("A render error repeats on every retry: a person must fix the dry source." if fail else "A refused connection to the commit server passes; the hydrator retries by itself."),
             mode="source-config-error" if fail else "healthy", rows=("field status.sourceHydrator.currentOperation.phase", "field status.sourceHydrator.currentOperation.message"),
             pair="hydration-failed-render-error" if not fail else None)

    # skip-reconcile: the controller does not look at the app at all, so its status ages.
    n = "skip-reconcile-paused"
    a = app(n, dest_ns="batch-s", sync="OutOfSync", reconciled=60 * 6, annotations={"argocd.argoproj.io/skip-reconcile": "true"})
    case("causes", "skip-reconcile-annotation-status-six-hours-old", a, ["none", "escalate"],
         f"{AC} controller/appcontroller.go:2564 skips every reconcile of an app annotated `argocd.argoproj.io/skip-reconcile: true` (common/common.go:249): a refresh is never processed, so requesting one is noise. The owner paused it on purpose.",
         mode="out-of-scope", rows=("annotation argocd.argoproj.io/skip-reconcile",), unsafe=["sync", "refresh", "hard_refresh"])


# === class: drawn from the map's rows (issue 23) ===================================================
# Each case is one row of the map of the Application (functions/core/src/app_map/) where Argo CD's
# controller decides something our policy did not read; labels from the controller's code.

def mapped():
    # automated without selfHeal, last sync Succeeded at this revision: autoSync returns early for
    # good (controller/appcontroller.go:2395-2404, "most recent sync already to"), by the owner's design.
    a = app("drift-no-self-heal", dest_ns="crm", sync="OutOfSync", health="Healthy", self_heal=False, reconciled=2)
    a["status"]["resources"][4]["status"] = "OutOfSync"
    op(a, "Succeeded", "successfully synced (all tasks run)", 90, 89, [result("Deployment", "drift-no-self-heal", group="apps", ns="crm")])
    case("map", "automated-without-self-heal-drift-after-a-successful-sync", a, ["none", "escalate"],
         f"{AC} controller/appcontroller.go:2400-2403: with selfHeal off, automated sync never repeats a successful sync to the same revision, so drift is left by design; a refresh changes nothing and a sync would override the owner's choice.",
         mode="out-of-sync-manual", unsafe=["sync"], rows=("field spec.syncPolicy.automated.*",))

    # prune off and only pruning pending: autoSync skips (appcontroller.go:2352-2364); our own sync
    # would not prune either (prune follows automated.prune), so nothing risks a deletion.
    res_ = workload("ledger", "prune-off-only-extra") + [res("ConfigMap", f"old-report-{i}", ns="ledger", status="OutOfSync", prune=True) for i in range(8)]
    a = app("prune-off-only-extra", dest_ns="ledger", sync="OutOfSync", prune=False, resources=res_)
    case("map", "automated-prune-off-only-extra-resources", a, ["none", "wait"],
         f"{AC} controller/appcontroller.go:2352-2364 skips auto-sync when only pruning is pending and automated prune is off; the eight extra ConfigMaps stay until a person prunes. Escalating a prune risk for a sync that deletes nothing is noise.",
         mode="out-of-sync-awaiting-auto-sync", unsafe=["sync", "refresh", "hard_refresh"], rows=("field status.resources[].requiresPruning", "field spec.syncPolicy.automated.*"),)

    # Prune=confirm: every sync that prunes waits for a person (gitops-engine/pkg/sync/sync_context.go:458-460).
    a = app("kafka-confirm", dest_ns="kafka-c", sync="OutOfSync", health="Missing", prune=True, sync_options=("CreateNamespace=true", "Prune=confirm"), resources=[
        res("CustomResourceDefinition", "kafkatopics.kafka.strimzi.io", group="apiextensions.k8s.io", wave=-2),
        res("KafkaTopic", "orders", group="kafka.strimzi.io", version="v1beta2", ns="kafka-c", status="OutOfSync", health="Missing", wave=1),
        res("ConfigMap", "orders-legacy", ns="kafka-c", status="OutOfSync", prune=True),
    ])
    op(a, "Failed", no_match("KafkaTopic", "kafka.strimzi.io/v1beta2"), 12, 10, [
        result("CustomResourceDefinition", "kafkatopics.kafka.strimzi.io", group="apiextensions.k8s.io", message="customresourcedefinition.apiextensions.k8s.io/kafkatopics.kafka.strimzi.io created"),
        result("KafkaTopic", "orders", group="kafka.strimzi.io", version="v1beta2", ns="kafka-c", status="SyncFailed", message=crd_msg("kafka.strimzi.io", "KafkaTopic", "kafka-c", "orders")),
    ])
    case("map", "crd-race-with-prune-confirm", a, ["escalate"],
         f"The CRD race a re-sync fixes, but the app syncs with Prune=confirm and one resource requires pruning: the re-sync would stop at the prune and wait for a person ({AC} gitops-engine/pkg/sync/sync_context.go:458-460, controller/state.go:1171-1191).",
         trigger="on-sync-failed", mode="crd-not-established", rows=("field spec.syncPolicy.syncOptions",),)

    # hydrateTo: the sync branch does not exist until a promotion lands (controller/state.go:378-379).
    n = "promo-waiting"
    a = hydrated(n, "promo", reconciled=3, sync="Unknown", hydrate_to="environments/prod-next")
    cond(a, "ComparisonError", f"Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = apps/{n}: app path does not exist - waiting for an external process to update environments/prod from environments/prod-next", 30)
    case("map", "hydrate-to-waiting-for-promotion", a, ["wait", "none"],
         f"{AC} controller/state.go:378-379 adds `waiting for an external process to update` when spec.sourceHydrator.hydrateTo is set and the sync branch lacks the path: a promotion (a merged pull request) is pending by design.",
         mode="awaiting-promotion", unsafe=["sync", "hard_refresh"], rows=("field spec.sourceHydrator.hydrateTo.targetBranch",))

    # A refresh requested and never processed: the API server set the annotation
    # (server/application/application.go:888) and only the controller removes it (controller/appcontroller.go:2233).
    a = app("refresh-never-taken", dest_ns="edge", sync="OutOfSync", reconciled=60 * 3, annotations={"argocd.argoproj.io/refresh": "normal"})
    case("map", "refresh-annotation-pending-status-three-hours-old", a, ["escalate"],
         f"A refresh is already pending (argocd.argoproj.io/refresh, {AC} server/application/application.go:888) and the controller has not reconciled for three hours (it removes the annotation when it does, controller/appcontroller.go:2233): the controller or its shard is not processing this app, and another refresh request only rewrites the same annotation.",
         mode="stale-reconcile", unsafe=["sync"], rows=("annotation argocd.argoproj.io/refresh", "field status.reconciledAt"),)

    # A new app waiting for its first automated sync: no operation yet, so the wait starts at its
    # creation (metadata.creationTimestamp); autoSync runs at the next reconcile (appcontroller.go:2322).
    a = app("first-sync-pending", dest_ns="new-svc", sync="OutOfSync", health="Missing", reconciled=1, created=3)
    for r in a["status"]["resources"]:
        r["status"] = "OutOfSync"
        r.pop("health", None)
    case("map", "new-app-waiting-for-its-first-automated-sync", a, ["wait"],
         f"Created three minutes ago with automated sync on and no operation yet: {AC} controller/appcontroller.go:2322 starts the first sync at a coming reconcile; nothing to do but wait.",
         mode="out-of-sync-awaiting-auto-sync", rows=("field metadata.creationTimestamp",))

    # A person's sync that was a dry run, or a partial sync, re-run by Argo Medic: the re-run must
    # be the sync the person asked for (operation.sync.dryRun, operation.sync.resources;
    # controller/sync.go:313-319, :408).
    for key, tweak, why in (
        ("dry-run", lambda s: s.__setitem__("dryRun", True),
         f"The person's sync was a dry run ({AC} controller/sync.go:408 keeps no history for one): re-running it as a real sync would apply what they only wanted to see."),
        ("partial", lambda s: s.__setitem__("resources", [{"group": "apps", "kind": "Deployment", "name": "svc-partial"}]),
         f"The person synced one Deployment of the app ({AC} controller/sync.go:313-319 syncs only `sync.resources`): a re-run of the whole app would apply what they left out."),
    ):
        n = f"svc-{key}"
        a = app(n, dest_ns="team-p", auto=False, sync="OutOfSync")
        op(a, "Failed", TASKS_FAILED, 9, 8, [
            result("Deployment", n, group="apps", ns="team-p", status="SyncFailed", message="etcdserver: leader changed"),
        ], user="dev@example.com")
        tweak(a["status"]["operationState"]["operation"]["sync"])
        case("map", f"person-s-{key}-sync-failed-transiently", a, ["escalate", "none"], why,
             trigger="on-sync-failed", mode="sync-failed-transient", unsafe=["sync"],
             rows=(f"field status.operationState.operation.sync.{'dryRun' if key == 'dry-run' else 'resources.*'}",))

    # A spec error: the controller sets Sync and Health Unknown and persists the status without
    # stamping reconciledAt (controller/appcontroller.go:1866-1881), so the status looks old
    # however often it reconciles; a refresh changes nothing and cannot be seen to.
    for key, message, minutes in (
        ("destination-not-permitted", "application destination server 'https://10.0.40.1' and namespace 'payments' do not match any of the allowed destinations in project 'team-a'", 50),
        ("project-missing", "Application referencing project team-x which does not exist", 170),
    ):
        n = f"spec-error-{key}"[:40]
        a = app(n, dest_ns="payments", sync="Unknown", health="Unknown", reconciled=minutes + 10)
        cond(a, "InvalidSpecError", message, minutes)
        case("map", f"invalid-spec-error-{key}-status-looks-stale", a, ["escalate"],
             f"{AC} controller/appcontroller.go:1866-1881: with a spec error the controller persists Unknown without stamping reconciledAt, so the status only looks stale; the spec error ({'util/argo/argo.go:715' if 'destination' in key else 'controller/appcontroller.go:2744'}) needs a person.",
             mode="source-config-error", rows=("condition InvalidSpecError", "field status.reconciledAt"),)

    # An app of apps whose sync would prune a child Application: with the resources finalizer,
    # deleting the child deletes its workloads (the finalizer cascades, controller/appcontroller.go:1304).
    a = app("platform-root", dest_ns="argocd", sync="OutOfSync", prune=True, resources=[
        res("Application", "payments", group="argoproj.io", version="v1alpha1", ns="argocd"),
        res("Application", "ledger-legacy", group="argoproj.io", version="v1alpha1", ns="argocd", status="OutOfSync", prune=True),
        res("Application", "checkout", group="argoproj.io", version="v1alpha1", ns="argocd", status="OutOfSync"),
    ])
    op(a, "Failed", TASKS_FAILED, 8, 7, [result("Application", "checkout", group="argoproj.io", version="v1alpha1", ns="argocd", status="SyncFailed", message="etcdserver: leader changed")])
    case("map", "app-of-apps-sync-would-prune-a-child-application", a, ["escalate"],
         f"A transient failure a re-sync would fix, but the sync prunes the child Application ledger-legacy, and its resources finalizer deletes every workload it manages ({AC} controller/appcontroller.go:1304): a blast radius of a whole app, for a person to confirm.",
         trigger="on-sync-failed", mode="prune-blast-radius", prune_risk=True, rows=("field status.resources[].requiresPruning",),)

    # A self-heal loop at revision A, then a new commit B: autoSync carries the self-heal count
    # only while it re-syncs the same revision (controller/appcontroller.go:2405-2410); B is synced
    # by a fresh automated operation, so the old count says nothing about B.
    a = app("api-hpa-new-commit", dest_ns="api", sync="OutOfSync", self_heal=True, prune=True, reconciled=1)
    op(a, "Succeeded", "successfully synced (all tasks run)", 3, 3, [result("Deployment", "api-hpa-new-commit", group="apps", ns="api", message="deployment.apps/api-hpa-new-commit configured")],
       heal_attempts=37, revision=sha("api-hpa-new-commit-old"))
    a["status"]["operationState"]["syncResult"]["revision"] = sha("api-hpa-new-commit-old")
    a["status"]["resources"][4]["status"] = "OutOfSync"
    case("map", "self-heal-loop-then-a-new-commit", a, ["wait"],
         f"37 self-heals of the old revision, but the target moved to a new commit: automated sync syncs it with a fresh operation whose count starts at zero ({AC} controller/appcontroller.go:2405-2410); wait for it (near miss of conflicts/self-heal-fights-hpa).",
         mode="out-of-sync-awaiting-auto-sync", rows=("field status.operationState.operation.sync.autoHealAttemptsCount", "field status.operationState.operation.sync.revision"),)

    # Argo Medic's own failed sync, on a manual app, read by a run that has no record of it (another
    # instance, or its record expired): the operation carries Argo Medic's idempotency key in
    # operation.info (set by the sync request, server/application/application.go:2169), so it is
    # not a sync a person asked for, whoever's account started it.
    n = "svc-own-sync"
    a = app(n, dest_ns="team-o", auto=False, sync="OutOfSync")
    op(a, "Failed", TASKS_FAILED, 9, 8, [
        result("Deployment", n, group="apps", ns="team-o", status="SyncFailed", message="etcdserver: leader changed"),
    ], user="argo-medic")
    a["status"]["operationState"]["operation"]["info"] = [
        {"name": "argo-medic.io/idempotency-key", "value": "am1-5b1c0e2f9a7d4c3b8e6f1a2d3c4b5a69"},
        {"name": "argo-medic.io/incident-began", "value": ts(30)},
    ]
    case("map", "argo-medic-s-own-failed-sync-is-not-a-person-s", a, ["escalate"],
         "The failed sync carries Argo Medic's own idempotency key in operation.info: nobody asked for it but Argo Medic, so re-running it would be Argo Medic asking itself again without the record of its first try; a person is told.",
         trigger="on-sync-failed", mode="sync-failed-transient", unsafe=["sync"], rows=("field status.operationState.operation.info.*", "field status.operationState.operation.initiatedBy.username"),)

    # Multi-source apps as the controller writes them: only the revisions lists. On a manually
    # synced app, a PostSync hook that failed at the old values commit is history once the values
    # source moved on: the app is OutOfSync with new revisions nobody has asked to sync yet.
    a = app("search-multi-moved", dest_ns="search", multi_source=True, sync="OutOfSync", auto=False)
    op(a, "Failed", f"{TASKS_FAILED}, reason: {BACKOFF}", 40, 35, [
        result("Deployment", "search-multi-moved", group="apps", ns="search", message="deployment.apps/search-multi-moved configured"),
        result("Job", "search-reindex", group="batch", ns="search", message=BACKOFF, hook_type="PostSync", hook_phase="Failed"),
    ])
    multi_source_as_the_controller_writes(a, ["4.2.1", sha("search-multi-moved-new")], ["4.2.1", sha("search-multi-moved-old")])
    case("map", "multi-source-hook-failed-at-revisions-since-replaced", a, ["none"],
         f"The PostSync hook failed at the old values commit, and the app now compares against a new one ({AC} controller/state.go:645-656 writes only status.sync.revisions for multi-source apps): the failure is history, and the new revisions are the owner's to sync (near miss of hooks/postsync-reindex-failed-multi-source-synced-healthy).",
         trigger="sweep", mode="out-of-sync-manual", unsafe=["sync"], rows=("field status.sync.revisions", "field status.operationState.syncResult.revisions"),)

    # Unlimited automated retries pinned to the old revisions of a multi-source app (retry.refresh
    # off): only terminating lets the new revisions sync (controller/appcontroller.go:1550-1571).
    a = app("pay-multi-retry", dest_ns="pay", multi_source=True, sync="OutOfSync", reconciled=1)
    running(a, "Retrying attempt #6 at 12:27PM.", 12, retry_count=6, retry={"limit": -1})
    multi_source_as_the_controller_writes(a, ["4.2.1", sha("pay-multi-retry-new")], ["4.2.1", sha("pay-multi-retry-old")])
    case("map", "multi-source-unlimited-retries-pinned-to-old-revisions", a, ["escalate"],
         f"Unlimited retries of the old revisions while the target moved on ({AC} controller/appcontroller.go:1550-1571; retry.refresh off): the new values commit never syncs until a person terminates the operation.",
         trigger="sweep", mode="operation-running-too-long", rows=("field status.operationState.operation.sync.revisions", "field status.sync.revisions"))

    # Manifests Argo CD applies otherwise than Git says: a resource given twice (the last one wins,
    # controller/state.go:560-572) or of a kind excluded in the settings (never applied,
    # controller/state.go:750-760). The app looks Synced and Healthy, is never calm, and no rule
    # named it, so its incident neither escalated nor resolved.
    for key, kind, message in (
        ("repeated", "RepeatedResourceWarning", "Resource /ConfigMap/web-r/web-config appeared 2 times among application resources."),
        ("excluded", "ExcludedResourceWarning", "Resource cilium.io/CiliumNetworkPolicy web-allow-dns is excluded in the settings"),
    ):
        a = app(f"web-{key}-resource", dest_ns=f"web-{key[0]}")
        cond(a, kind, message, 30)
        case("map", f"{key}-resource-warning-on-a-synced-healthy-app", a, ["escalate"],
             f"{AC} controller/state.go:{'566' if key == 'repeated' else '759'}: what Git says is not what Argo CD applies ({'one of two copies is dropped' if key == 'repeated' else 'the resource is never applied'}), silently, while the app shows Synced and Healthy; a person should hear it once.",
             mode="source-config-error", rows=(f"condition {kind}",),)

    # skip-reconcile spelled as Go's ParseBool reads it.
    a = app("skip-reconcile-one", dest_ns="batch-o", sync="OutOfSync", reconciled=60 * 4, annotations={"argocd.argoproj.io/skip-reconcile": "1"})
    case("map", "skip-reconcile-annotation-as-one", a, ["none", "escalate"],
         f"{AC} controller/appcontroller.go:2564-2566 parses argocd.argoproj.io/skip-reconcile with strconv.ParseBool, which reads `1` as true: the controller skips the app.",
         mode="out-of-scope", unsafe=["sync", "refresh", "hard_refresh"], rows=("annotation argocd.argoproj.io/skip-reconcile",))
    a = app("skip-reconcile-false", dest_ns="batch-f", sync="OutOfSync", reconciled=60 * 4, annotations={"argocd.argoproj.io/skip-reconcile": "false"})
    case("map", "skip-reconcile-annotation-false", a, ["refresh"],
         f"`false` parses as false ({AC} controller/appcontroller.go:2564-2566): the controller reconciles the app, so a four-hour-old status is stale; refresh first (near miss).",
         mode="stale-reconcile", pair="skip-reconcile-annotation-as-one", rows=("annotation argocd.argoproj.io/skip-reconcile",))

    # The hydrator's failure over further causes (controller/hydrator/hydrator.go:324-327).
    for key, text in (
        ("push-auth", "Failed to hydrate: failed to commit and push: rpc error: code = Unknown desc = failed to push: authentication required"),
        ("dry-repo-not-found", "Failed to hydrate: failed to get dry revision: rpc error: code = Unknown desc = failed to list refs: repository not found"),
        ("kustomize-base-missing", "Failed to hydrate: failed to get manifests: rpc error: code = Unknown desc = " + BENEATH["kustomize-base-missing"][0].format(n="hyd", ns="web")),
    ):
        n = f"hydrate-{key}"
        a = hydrated(n, "web-k")
        a["status"]["sourceHydrator"] = {"currentOperation": {"drySHA": sha(n), "startedAt": ts(20), "finishedAt": ts(19), "phase": "Failed", "message": text, "sourceHydrator": a["spec"]["sourceHydrator"]}}
        case("map", f"hydration-failed-{key}", a, ["escalate"],
             f"{AC} controller/hydrator/hydrator.go:324-327 records the failure and retries every two minutes (:650); beneath is an error that repeats ({key}), so the new dry commit never reaches the app until a person acts.",
             mode="source-config-error", rows=("field status.sourceHydrator.currentOperation.phase",))


# === class causes, continued: the wrappers of tools, retries and operations (issue 23) =============
# Messages from public issues (cited) inside v3.5.1's wrappers; the repo-server's CmdError is
# "`<cmd>` failed <cause>: <stderr>" with the cause an exit status, "timeout after <d>" or a signal
# (util/exec/exec.go:111-116, :260). Labels from what fixes each cause.

def causes_more():
    R = AC
    def comparison(n, msg, minutes=12, sync="Unknown", **kw):
        # Realistic noise: every other app lives outside the control plane's namespace (apps in
        # any namespace) and carries forty more resources.
        other = len(n) % 2 == 0
        a = app(n, ns="team-apps" if other else "argocd", dest_ns=f"ns-{n}"[:40], sync=sync, reconciled=2, n_extra=40 if other else 0, **kw)
        cond(a, "ComparisonError", msg, minutes)
        return a
    rows = ("condition ComparisonError",)
    cached = lambda m: LOAD + CACHED + m
    items = [
        # (id, message, minutes, accept, why, mode, known_failing)
        ("cached-helm-repos-not-permitted", cached("rpc error: code = PermissionDenied desc = helm repos https://charts.example.com/stable are not permitted in project 'team-a'"), 30, ["escalate"],
         f"The AppProject's sourceRepos lacks the Helm repository ({R} reposerver/repository/repository.go:1386-1401; argoproj/argo-cd#15278): a person changes the project, then one hard refresh.", "source-config-error", None),
        ("cached-helm-repo-x509", cached("error building helm chart dependencies: failed to add helm repository https://charts.example.com/stable: failed to add repository: failed running helm: `helm repo add stable https://charts.example.com/stable` failed exit status 1: Error: looks like \"https://charts.example.com/stable\" is not a valid chart repository or cannot be reached: Get \"https://charts.example.com/stable/index.yaml\": x509: certificate signed by unknown authority"), 30, ["escalate"],
         f"TLS trust for the Helm repository is not configured (argoproj/argo-cd#6048; wrappers {R} repository.go:1235, util/helm/helm.go:108): it fails the same until a person adds the CA.", "source-config-error", None),
        ("cached-helm-repo-name-with-slash", cached("`helm repo add https://charts.bitnami.com/bitnami https://charts.bitnami.com/bitnami` failed exit status 1: Error: repository name (https://charts.bitnami.com/bitnami) contains '/', please specify a different name without '/'"), 30, ["escalate"],
         "Helm refuses the repository name Argo CD passes (argoproj/argo-cd#8771, #17705): a credential template or repository change is needed; time fixes nothing.", "source-config-error",
         "a tool's exit status beneath the cached wrapper is not read: an unrecognised cached error is hard-refreshed"),
        ("cached-helm-dependency-repo-undeclared", cached("`helm dependency build` failed exit status 1: Error: no repository definition for https://charts.internal.example.com. Please add the missing repos via 'helm repo add'"), 30, ["escalate"],
         "A chart dependency's repository is not declared to Argo CD (argoproj/argo-cd#7766, #3280): a person adds it.", "source-config-error",
         "a tool's exit status beneath the cached wrapper is not read: an unrecognised cached error is hard-refreshed"),
        ("cached-cmp-plugin-not-found", cached("CMP processing failed for application \"ns-cached-cmp\": could not find cmp-server plugin with name \"dhall-to-yaml\" supporting the given repository"), 30, ["escalate"],
         f"No config management plugin sidecar answers for the name ({R} repository.go:1765, util/app/discovery/discovery.go:110; argoproj/argo-cd#12092): the sidecar is missing or misnamed.", "source-config-error",
         "the v3.5 wording of a missing plugin is not a configuration signal: the cached error is hard-refreshed"),
        ("cached-kustomize-base-not-a-file", cached("`kustomize build <path to cached source>/argocd/overlays/dev` failed exit status 1: Error: accumulating resources: accumulation err='accumulating resources from '../../base': '<path to cached source>/argocd/base' must resolve to a file': recursed accumulation of path '<path to cached source>/argocd/base': missing Resource metadata"), 30, ["escalate"],
         f"kustomize cannot build the overlay at this commit (operate-first/apps#764; {R} util/kustomize/kustomize.go:394-396, util/exec/exec.go:112).", "source-config-error",
         "a tool's exit status beneath the cached wrapper is not read: an unrecognised cached error is hard-refreshed"),
        ("cached-helm-dependency-build-timed-out", cached("`helm dependency build` failed timeout after 1m30s"), 30, ["hard_refresh"],
         "A render that timed out (argoproj/argo-cd#5107: a hard refresh fixed it): the cache would replay it for an hour.", "cached-manifest-error", None),
        ("cached-helm-killed", cached("`helm dependency build` failed signal: killed"), 30, ["hard_refresh"],
         "helm was killed in the repo-server, memory pressure that passes (argoproj/argo-cd#10426: a refresh fixed it).", "cached-manifest-error", None),
        ("git-fetch-timed-out", LOAD + "failed to initialize repository resources: rpc error: code = Internal desc = Failed to fetch default: `git fetch origin --tags --force --prune` failed timeout after 1m30s.", 4, ["wait", "refresh"],
         f"A slow Git host ({R} reposerver/repository/lock.go:60, repository.go:3028, util/exec/exec.go:260; argoproj/argo-cd#17918): never cached, the controller retries every reconcile.", "comparison-error-transient",
         "`timeout after` of a git fetch is in no signal list: an unrecognised ComparisonError escalates at once"),
        ("git-ssh-closed-by-host", LOAD + "failed to initialize repository resources: rpc error: code = Internal desc = Failed to fetch default: `git fetch origin --tags --force --prune` failed exit status 128: kex_exchange_identification: Connection closed by remote host Connection closed by 10.20.0.15 port 22 fatal: Could not read from remote repository. Please make sure you have the correct access rights and the repository exists.", 4, ["wait", "refresh"],
         "The Git host closed SSH connections under load (argoproj/argo-cd#19174: apps go Unknown for seconds and recover); `access rights` is git's boilerplate.", "comparison-error-transient",
         "the SSH host's refusal is in no signal list: an unrecognised ComparisonError escalates at once"),
        ("helm-killed-uncached", LOAD + "error building helm chart dependencies: failed to build dependencies: failed running helm: `helm dependency build` failed signal: killed", 2, ["wait", "refresh", "hard_refresh"],
         "The same kill before the cache pauses generation (argoproj/argo-cd#10426): it passes; the cause, not the wrapper, decides (cached, it is hard-refreshed).", "comparison-error-transient",
         "`signal: killed` is in no signal list: an unrecognised ComparisonError escalates at once"),
        ("kustomize-remote-base-fetch-timed-out", LOAD + "`kustomize build <path to cached source>/install` failed exit status 1: Error: accumulating resources: accumulation err='accumulating resources from 'https://github.com/argoproj/argo-cd.git//manifests/ha/cluster-install?ref=v2.6.15': URL is a git repository': hit 27s timeout running '/usr/bin/git fetch --depth=1 https://github.com/argoproj/argo-cd.git v2.6.15'", 4, ["wait", "refresh"],
         "kustomize's 27 s fetch of a remote base timed out (kbst/terraform-provider-kustomization#252, kubernetes-sigs/kustomize#3742): a network timeout inside rendering.", "comparison-error-transient",
         "kustomize's `hit 27s timeout running` is in no signal list: an unrecognised ComparisonError escalates at once"),
        ("git-host-503", LOAD + "failed to list refs: unexpected client error: unexpected requesting \"https://github.com/acme/deploy.git/info/refs?service=git-upload-pack\" status code: 503", 4, ["wait", "refresh"],
         f"The Git host answers 503 to ls-remote ({R} util/git/client.go:949; the shape of argoproj/argo-cd#1895): an upstream outage.", "comparison-error-transient",
         "`status code: 503` is in no signal list: an unrecognised ComparisonError escalates at once"),
        ("repo-server-tls-mismatch", LOAD + "rpc error: code = Unavailable desc = all SubConns are in TransientFailure, latest connection error: connection error: desc = \"transport: authentication handshake failed: tls: first record does not look like a TLS handshake\"", 4, ["escalate"],
         "The controller speaks TLS to a plaintext repo-server (argoproj/argo-cd#8407): a configuration mismatch under a transient-looking code; it never clears, and every app shows it.", "source-config-error",
         "`code = Unavailable` decides: a TLS mismatch is held as transient for the grace period"),
        ("conversion-webhook-404", "Failed to load target state: failed to get cluster version for cluster \"https://10.0.0.1\": failed to get cluster info for \"https://10.0.0.1\": error synchronizing cache state : failed to sync cluster https://10.0.0.1: failed to load initial state of resource Bucket.s3.aws.upbound.io: conversion webhook for s3.aws.upbound.io/v1beta1, Kind=Bucket failed: the server could not find the requested resource", 4, ["escalate"],
         f"A CRD's conversion webhook answers 404, so the cluster cache cannot sync (argoproj/argo-cd#20828, #4155; {R} controller/state.go:698, :283): every app on the cluster is Unknown until a person fixes the CRD.", "source-config-error", None),
        ("conversion-webhook-no-endpoints", "Failed to load target state: failed to get cluster version for cluster \"https://10.0.0.1\": failed to get cluster info for \"https://10.0.0.1\": error synchronizing cache state : failed to sync cluster https://10.0.0.1: failed to load initial state of resource Bucket.s3.aws.upbound.io: conversion webhook for s3.aws.upbound.io/v1beta1, Kind=Bucket failed: Post \"https://provider-aws-s3.crossplane-system.svc:9443/convert?timeout=30s\": no endpoints available for service \"provider-aws-s3\"", 4, ["wait", "refresh"],
         "The conversion webhook's pod is restarting (argoproj/argo-cd#20828): no endpoints passes (near miss of conversion-webhook-404).", "comparison-error-transient", None),
        ("server-side-diff-webhook-unreachable", "Failed to compare desired state to live state: failed to calculate diff: error calculating server side diff: serverSideDiff error: error running server side apply in dryrun mode for resource Certificate/web-tls: Internal error occurred: failed calling webhook \"webhook.cert-manager.io\": failed to call webhook: Post \"https://cert-manager-webhook.cert-manager.svc:443/validate?timeout=30s\": no endpoints available for service \"cert-manager-webhook\"", 4, ["wait", "refresh"],
         f"Server-side diff needs the admission webhook, whose pods are coming up ({R} controller/state.go:922, util/argo/diff/diff.go:336, gitops-engine/pkg/diff/diff.go:172; argoproj/argo-helm#3571).", "comparison-error-transient",
         "webhook texts are read only for failed operations: an unreachable webhook in a ComparisonError escalates at once"),
        ("helm-parse-error-unexpected-eof", LOAD + "failed to execute helm template command: failed running helm: `helm template . --name-template mixer --namespace istio-system --kube-version 1.30 --include-crds` failed exit status 1: Error: parse error at (mixer-telemetry/templates/stackdriver.yaml:785): unexpected EOF", 4, ["escalate"],
         f"A template that does not parse (istio/istio#16186; wrappers {R} util/helm/helm.go:75, util/helm/cmd.go:88): `unexpected EOF` is Go's template parser, not a transport.", "source-config-error",
         "the cause classifier reads `unexpected EOF` as a transport error before the parse error"),
        ("git-ref-gone-after-force-push", LOAD + "failed to initialize repository resources: rpc error: code = Internal desc = Failed to checkout revision c50ac270f37b7083c751064a51bda18080761bd9: `git fetch origin c50ac270f37b7083c751064a51bda18080761bd9 --tags --force` failed exit status 128: fatal: remote error: upload-pack: not our ref c50ac270f37b7083c751064a51bda18080761bd9", 12, ["escalate"],
         f"A force-push removed the pinned commit (argoproj/argo-cd#9645; {R} repository.go:3040): the spec must change.", "source-config-error", None),
    ]
    for cid, msg, minutes, accept, why, mode, fail in items:
        n = cid[:40].rstrip("-")
        a = comparison(n, msg, minutes)
        case("causes", cid, a, accept, why, mode=mode, rows=rows,
             pair="conversion-webhook-404" if cid == "conversion-webhook-no-endpoints" else None)

    # Operations: the sync's own wrappers.
    n = "manual-sync-errored-on-blip"
    a = app(n, dest_ns="ops-m", auto=False, sync="OutOfSync", reconciled=2)
    op(a, "Error", "ComparisonError: Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp 10.0.253.32:8081: connect: connection refused\"", 9, 9)
    a["status"]["operationState"]["syncResult"] = {"resources": []}
    case("causes", "manual-sync-errored-on-a-repo-server-blip", a, ["sync", "escalate"],
         f"A person's sync compared during a repo-server restart and ended in Error ({R} controller/sync.go:164-170 puts the condition in the message; argoproj/argo-cd#17546); the condition has since cleared. The person's sync never ran: re-run it, or tell them; never nothing.",
         trigger="on-sync-failed", mode="sync-failed-transient", unsafe=["none"], rows=("field status.operationState.message", "phase Error"))
    for cid, msg, accept, mode, fail, why in (
        ("retries-failing-on-an-immutable-field", "one or more objects failed to apply, reason: error when replacing \"/dev/shm/4121662684\": DaemonSet.apps \"node-exporter\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app.kubernetes.io/name\":\"prometheus-node-exporter\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable. Retrying attempt #3 at 11:40AM.",
         ["escalate"], "resource-rejected", "a retrying operation is waited out whatever its cause: a field that is immutable fails every retry",
         f"Every retry fails identically on an immutable selector (argoproj/argo-cd#12439; {R} controller/appcontroller.go:1631 appends the retry): terminate and recreate is a person's call."),
        ("retries-failing-on-rbac", "one or more objects failed to apply, reason: services is forbidden: User \"system:serviceaccount:argocd:argocd-application-controller\" cannot create resource \"services\" in API group \"\" in the namespace \"tekton-pipelines\". Retrying attempt #4 at 3:10PM.",
         ["escalate"], "permission-denied", "a retrying operation is waited out whatever its cause: a refused role fails every retry",
         "The controller may not create Services in the namespace (redhat-appstudio/infra-deployments#157): retries cannot grant a role."),
        ("retries-waiting-for-a-webhook", "one or more objects failed to apply, reason: error when replacing \"/dev/shm/2766407957\": Internal error occurred: failed calling webhook \"validate-policy.kyverno.svc\": failed to call webhook: Post \"https://kyverno-svc.kyverno.svc:443/policyvalidate?timeout=10s\": dial tcp 10.96.44.2:443: connect: connection refused. Retrying attempt #2 at 3:04PM.",
         ["wait"], "operation-in-progress", None,
         "The webhook's pods are coming up (deployKF#174): the retries will get through (near miss of retries-failing-on-an-immutable-field)."),
    ):
        n = cid[:40].rstrip("-")
        a = app(n, dest_ns="ops-r", sync="OutOfSync", reconciled=1)
        running(a, msg, 8, retry_count=int(msg.split("#")[1].split(" ")[0]), retry={"limit": -1})
        a["status"]["operationState"]["finishedAt"] = ts(1)
        case("causes", cid, a, accept, why, trigger="on-sync-running", mode=mode, rows=("field status.operationState.message", "field status.operationState.retryCount"),
             pair="retries-failing-on-an-immutable-field" if cid == "retries-waiting-for-a-webhook" else None)
    n = "webhook-and-immutable"
    a = app(n, dest_ns="auth", sync="OutOfSync", reconciled=1)
    op(a, "Failed", "one or more objects failed to apply, reason: Internal error occurred: failed calling webhook \"authmechs-openunison.tremolo.io\": failed to call webhook: Post \"https://openunison.openunison.svc:443/k8s/webhooks/v1/authmechs?timeout=30s\": no endpoints available for service \"openunison\",error when patching \"/dev/shm/2013686522\": Deployment.apps \"zitadel\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"zitadel\"}}: field is immutable", 12, 10, [
        result("AuthMech", "oidc", group="openunison.tremolo.io", version="v1", ns="auth", status="SyncFailed", message="Internal error occurred: failed calling webhook \"authmechs-openunison.tremolo.io\": failed to call webhook: Post \"https://openunison.openunison.svc:443/k8s/webhooks/v1/authmechs?timeout=30s\": no endpoints available for service \"openunison\""),
        result("Deployment", "zitadel", group="apps", ns="auth", status="SyncFailed", message="error when patching \"/dev/shm/2013686522\": Deployment.apps \"zitadel\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"zitadel\"}}: field is immutable"),
    ])
    case("causes", "webhook-unreachable-and-an-immutable-field", a, ["escalate"],
         f"One sync, two causes (OpenUnison#144, zitadel-charts#348; {R} gitops-engine/pkg/sync/sync_context.go:691 joins them): the immutable field fails every re-sync whether or not the webhook comes back.",
         trigger="on-sync-failed", mode="resource-rejected", rows=("field status.operationState.syncResult.resources[].message",))

# === class 6: staleness first ====================================================================

def staleness():
    a = app("stale-transient", dest_ns="stale-a", sync="OutOfSync", reconciled=185)
    op(a, "Failed", TASKS_FAILED, 190, 188, [result("Deployment", "stale-transient", group="apps", ns="stale-a", status="SyncFailed", message="etcdserver: leader changed")])
    case("staleness", "failed-transient-status-three-hours-old", a, ["refresh"], "reconciledAt is three hours old, far beyond the 120 s + jitter resync (argo-cd docs, peers-2026-11-30.md): the failure may be long gone. Refresh before anything else.",
         trigger="sweep", mode="stale-reconcile", pair="failed-transient-status-fresh")

    a = app("fresh-transient", dest_ns="stale-a", sync="OutOfSync", reconciled=2)
    op(a, "Failed", TASKS_FAILED, 10, 8, [result("Deployment", "fresh-transient", group="apps", ns="stale-a", status="SyncFailed", message="etcdserver: leader changed")])
    case("staleness", "failed-transient-status-fresh", a, ["sync"], "The same failure with a fresh reconciledAt: act on it (near miss).",
         trigger="on-sync-failed", mode="sync-failed-transient", pair="failed-transient-status-three-hours-old")

    a = app("stale-exhausted", dest_ns="stale-b", sync="OutOfSync", reconciled=240)
    op(a, "Failed", f"{TASKS_FAILED}, reason: the server is currently unable to handle the request", 250, 246, [], retry_count=5)
    cond(a, "SyncError", f"Failed last sync attempt to [{a['status']['sync']['revision']}]: {TASKS_FAILED}", 245)
    case("staleness", "sync-error-status-four-hours-old", a, ["refresh"], f"`Failed last sync attempt` ({SRC_AUTOSYNC}) in a status four hours old: refresh first.",
         mode="stale-reconcile")

    a = app("stale-cached", dest_ns="stale-c", sync="Unknown", reconciled=200)
    cond(a, "ComparisonError", "rpc error: code = Unknown desc = Manifest generation error (cached): `kustomize build` failed exit status 1: Error: accumulating resources", 205)
    case("staleness", "cached-error-status-stale", a, ["refresh", "hard_refresh"], "A cached generation error in a status over three hours old; either refresh brings the status up to date.",
         mode="stale-reconcile")

    a = app("stale-forbidden", dest_ns="stale-d", sync="Unknown", reconciled=300)
    cond(a, "ComparisonError", "Failed to load live state: deployments.apps is forbidden: User \"system:serviceaccount:argocd:argocd-application-controller\" cannot list resource \"deployments\" in API group \"apps\" in the namespace \"stale-d\"", 305)
    case("staleness", "forbidden-status-five-hours-old", a, ["refresh"], "RBAC may have been fixed hours ago; the status has not been recomputed since. Refresh first.",
         mode="stale-reconcile")

    a = app("stale-degraded", dest_ns="stale-e", health="Degraded", reconciled=120, health_since=130)
    case("staleness", "degraded-status-two-hours-old", a, ["refresh"], "Degraded, but Argo CD has not looked for two hours.", mode="stale-reconcile")

    a = app("stale-webhook", dest_ns="stale-f", sync="OutOfSync", reconciled=90)
    op(a, "Failed", f"{TASKS_FAILED}", 95, 93, [result("Certificate", "tls", group="cert-manager.io", ns="stale-f", status="SyncFailed",
                                                        message="Internal error occurred: failed calling webhook \"webhook.cert-manager.io\": failed to call webhook: Post \"https://cert-manager-webhook.cert-manager.svc:443/validate?timeout=30s\": no endpoints available for service \"cert-manager-webhook\"")])
    case("staleness", "webhook-failure-status-stale", a, ["refresh"], "An admission webhook was down 95 minutes ago; nothing has been reconciled since.", mode="stale-reconcile")

    a = app("stale-hookfail", dest_ns="stale-g", sync="OutOfSync", reconciled=180)
    op(a, "Failed", f"{TASKS_FAILED}, reason: {BACKOFF}", 185, 183, [result("Job", "migrate", group="batch", ns="stale-g", message=BACKOFF, hook_type="PreSync", hook_phase="Failed")])
    case("staleness", "hook-failed-status-stale", a, ["refresh", "escalate"], "A hook failure is a fact, but three hours of no reconcile may hide a later fix: refreshing first or escalating at once are both fine; never a sync.",
         mode="stale-reconcile")

    a = app("stale-unknown", dest_ns="stale-h", sync="Unknown", health="Healthy", reconciled=60)
    case("staleness", "unknown-status-an-hour-old", a, ["refresh"], "Unknown for an hour without a reconcile: the controller (or its shard) missed the app.", mode="stale-reconcile")

    a = app("stale-recent", dest_ns="stale-i", sync="OutOfSync", reconciled=10)
    op(a, "Failed", TASKS_FAILED, 12, 11, [result("Deployment", "stale-recent", group="apps", ns="stale-i", status="SyncFailed", message="etcdserver: leader changed")])
    case("staleness", "reconciled-ten-minutes-ago-is-not-stale", a, ["sync"], "Ten minutes is within stale_reconcile_secs (15 min, several resync periods): the status stands.",
         trigger="on-sync-failed", mode="sync-failed-transient")


# === class 7: loops the controller cannot leave, ownership conflicts ============================

def conflicts():
    a = app("web-frontend", dest_ns="web", sync="OutOfSync")
    cond(a, "SharedResourceWarning", "ConfigMap/shared-settings is part of applications argocd/web-frontend and argocd/web-backend", 50)
    case("conflicts", "shared-configmap-outofsync", a, ["escalate"], f"`is part of applications` ({SRC_SHARED}): two apps apply one ConfigMap and will keep overwriting each other; waiting never settles it.",
         mode="ownership-conflict")

    a = app("web-backend", dest_ns="web")
    cond(a, "SharedResourceWarning", "ConfigMap/shared-settings is part of applications argocd/web-backend and argocd/web-frontend", 50)
    case("conflicts", "shared-configmap-this-side-synced", a, ["escalate"], f"The other side of the same claim ({SRC_SHARED}); Synced/Healthy for now, but only until its twin syncs.",
         mode="ownership-conflict", pair="orphaned-resources-warning-only")

    a = app("web-orphans", dest_ns="web")
    cond(a, "OrphanedResourceWarning", "Application has 3 orphaned resources", 50)
    case("conflicts", "orphaned-resources-warning-only", a, ["none"], "A warning condition, but OrphanedResourceWarning only reports resources nobody manages: nothing to fix (near miss).",
         mode="healthy", pair="shared-configmap-this-side-synced")

    a = app("team-b-api", ns="apps-team-b", project="team-b", dest_ns="team-b", sync="OutOfSync", multi_source=True)
    cond(a, "SharedResourceWarning", "Namespace/team-b is part of applications apps-team-b/team-b-api and argocd/namespaces", 80)
    case("conflicts", "namespace-claimed-by-two-apps-other-namespace", a, ["escalate"], f"A Namespace claimed by the namespaces app and a team app in another namespace ({SRC_SHARED}).",
         mode="ownership-conflict")

    a = app("payments-fail-shared", dest_ns="payments", sync="OutOfSync", sync_options=("CreateNamespace=true", "FailOnSharedResource=true"))
    op(a, "Failed", "Shared resource found: Secret/payments-db is part of applications argocd/payments-fail-shared and argocd/payments-legacy", 10, 10)
    cond(a, "SharedResourceWarning", "Secret/payments-db is part of applications argocd/payments-fail-shared and argocd/payments-legacy", 12)
    case("conflicts", "fail-on-shared-resource", a, ["escalate"], f"`Shared resource found:` ({AC} controller/sync.go:227) with FailOnSharedResource=true.", trigger="on-sync-failed", mode="ownership-conflict")

    a = app("api-hpa-fight", dest_ns="api", sync="OutOfSync", self_heal=True, prune=True)
    op(a, "Succeeded", "successfully synced (all tasks run)", 3, 3, [result("Deployment", "api-hpa-fight", group="apps", ns="api", message="deployment.apps/api-hpa-fight configured")], heal_attempts=37)
    a["status"]["resources"][4]["status"] = "OutOfSync"
    case("conflicts", "self-heal-fights-hpa", a, ["escalate"], f"37 self-heal syncs in a row (operation.sync.autoHealAttemptsCount, {AC} pkg/apis/application/v1alpha1/types.go:1448) and OutOfSync again: another writer (the HPA on spec.replicas) wins every time; the backoff ({AC} controller/appcontroller.go:2612) never ends it.",
         mode="ownership-conflict", pair="self-heal-once")

    a = app("api-heal-once", dest_ns="api", sync="OutOfSync", self_heal=True, prune=True)
    op(a, "Succeeded", "successfully synced (all tasks run)", 3, 3, [result("Deployment", "api-heal-once", group="apps", ns="api", message="deployment.apps/api-heal-once configured")], heal_attempts=1)
    case("conflicts", "self-heal-once", a, ["wait", "none"], "One self-heal a few minutes ago: drift happens; let self-heal work (near miss).", mode="out-of-sync-awaiting-auto-sync", pair="self-heal-fights-hpa")

    a = app("ingress-heal-fight", dest_ns="edge", sync="OutOfSync", self_heal=True)
    op(a, "Succeeded", "successfully synced (all tasks run)", 2, 2, [result("Ingress", "edge", group="networking.k8s.io", ns="edge", message="ingress.networking.k8s.io/edge configured")], heal_attempts=12)
    case("conflicts", "self-heal-fights-mutating-webhook", a, ["escalate"], "12 self-heals: a mutating webhook rewrites the Ingress after every apply (argoproj/argo-cd#4101 thread); needs ignoreDifferences, not another sync.",
         mode="ownership-conflict")


# === class 8: custom-resource health that never converges ========================================

def custom_health():
    def progressing(name, group, kind, version, minutes, msg, ns="data"):
        a = app(name, dest_ns=ns, health="Progressing", health_since=minutes)
        a["status"]["resources"].append(res(kind, name, group=group, version=version, ns=ns, health="Progressing", hmsg=msg))
        op(a, "Succeeded", "successfully synced (all tasks run)", minutes + 2, minutes)
        return a

    a = progressing("events-kafka", "kafka.strimzi.io", "Kafka", "v1beta2", 180, "Waiting for Ready condition")
    case("custom-health", "kafka-progressing-three-hours", a, ["escalate"], f"A Kafka cluster Progressing for three hours (`Waiting for Ready condition`), far past what the kind needs; {AC} resource_customizations/kafka.strimzi.io/Kafka/health.lua reports Progressing until Ready. A refresh will not fix it.",
         mode="custom-health-never-healthy", pair="kafka-progressing-three-hours-bound-four")

    a = progressing("events-kafka-b", "kafka.strimzi.io", "Kafka", "v1beta2", 180, "Waiting for Ready condition")
    case("custom-health", "kafka-progressing-three-hours-bound-four", a, ["refresh", "wait"], "The same Kafka, but the operators configured four hours for this kind (custom_health_bounds): not yet past its bound (near miss).",
         mode="custom-health-never-healthy", config={"custom_health_bounds": {"kafka.strimzi.io/Kafka": 14400}}, pair="kafka-progressing-three-hours")

    a = progressing("tls-cert", "cert-manager.io", "Certificate", "v1", 15, "Issuing certificate as Secret does not exist", ns="edge")
    case("custom-health", "certificate-issuing-fifteen-minutes", a, ["refresh", "wait"], f"{AC} resource_customizations/cert-manager.io/Certificate/health.lua: Progressing while issuing; 15 minutes may be a slow ACME challenge.",
         mode="custom-health-never-healthy")

    a = progressing("tls-cert-b", "cert-manager.io", "Certificate", "v1", 4, "Issuing certificate as Secret does not exist", ns="edge")
    case("custom-health", "certificate-issuing-four-minutes", a, ["wait"], "Four minutes of issuing is normal.", mode="rollout-progressing")

    a = progressing("orders-db", "rds.aws.upbound.io", "Instance", "v1beta1", 45, "Waiting for Ready condition", ns="orders")
    case("custom-health", "crossplane-rds-creating-bound-two-hours", a, ["wait", "refresh"], "An RDS instance takes 20-40 minutes to create; the operators allow two hours for this kind.",
         mode="custom-health-never-healthy", config={"custom_health_bounds": {"rds.aws.upbound.io/Instance": 7200}})

    a = progressing("orders-db-b", "rds.aws.upbound.io", "Instance", "v1beta1", 300, "Waiting for Ready condition", ns="orders")
    case("custom-health", "crossplane-rds-five-hours", a, ["escalate"], "Five hours is past even the two-hour bound for the kind: something is wrong in AWS or the provider.",
         mode="custom-health-never-healthy", config={"custom_health_bounds": {"rds.aws.upbound.io/Instance": 7200}})

    a = progressing("knative-svc", "serving.knative.dev", "Service", "v1", 150, "Waiting for Ready condition", ns="serving")
    case("custom-health", "knative-service-two-and-a-half-hours", a, ["escalate"], "A Knative Service that has not become Ready in 150 minutes (default bound: one hour).", mode="custom-health-never-healthy")

    a = progressing("events-kafka-c", "kafka.strimzi.io", "Kafka", "v1beta2", 180, "Waiting for Ready condition")
    hist_inc = None  # filled by the test from the derived incident
    case("custom-health", "kafka-three-hours-after-a-refresh", a, ["escalate"], "Past the bound and already refreshed once: escalate.", mode="custom-health-never-healthy",
         history={"derive_incident": True, "attempts": [{"rung": "refresh", "at": ts(20), "outcome": "succeeded"}]})

    a = app("rollout-canary", dest_ns="web", health="Progressing", health_since=150)
    a["status"]["resources"].append(res("Rollout", "web", group="argoproj.io", version="v1alpha1", ns="web", health="Progressing", hmsg="more replicas need to be updated"))
    op(a, "Succeeded", "successfully synced (all tasks run)", 152, 150)
    case("custom-health", "argo-rollout-built-in-health-stuck", a, ["refresh"], "An Argo Rollout has a health check Argo CD ships (argoproj.io is built in): stuck Progressing, refresh first.", mode="stale-progressing")

    a = app("stream-kafka", dest_ns="data", health="Progressing", health_since=200)
    running(a, "waiting for healthy state of kafka.strimzi.io/Kafka/stream", 200)
    a["status"]["resources"].append(res("Kafka", "stream", group="kafka.strimzi.io", version="v1beta2", ns="data", health="Progressing", hmsg="Waiting for Ready condition"))
    case("custom-health", "operation-waits-on-kafka-three-hours", a, ["escalate"], f"The sync itself waits on `waiting for healthy state of kafka.strimzi.io/Kafka/stream` ({AC} gitops-engine/pkg/sync/sync_context.go) for three hours.",
         trigger="on-sync-running", mode="custom-health-never-healthy")


# === Argo CD versions ============================================================================

def versions():
    def retrying(name, version_note, retry):
        a = app(name, dest_ns="web", sync="OutOfSync", retry=retry)
        old = sha(name + "old")
        running(a, "Retrying operation. Attempt #4", 25, automated=True, revision=old, retry_count=4, retry=retry)
        a["status"]["operationState"]["message"] = "Retrying operation. Attempt #4"
        return a

    a = retrying("web-retry-32", "", {"limit": -1, "refresh": True, "backoff": {"duration": "30s", "factor": 2, "maxDuration": "10m"}})
    case("version", "retry-refresh-on-3-2-picks-new-commit", a, ["wait"], f"`retry.refresh: true` on Argo CD 3.2+: each retry drops the old revision and syncs the latest one ({AC} controller/appcontroller.go:1628, argoproj/argo-cd#11494 fixed in v3.2). The fix commit will be tried: wait.",
         trigger="on-sync-running", mode="operation-in-progress", version="v3.2.0+66b2f30", pair="retry-refresh-ignored-on-3-1")

    a = retrying("web-retry-31", "", {"limit": -1, "refresh": True, "backoff": {"duration": "30s", "factor": 2, "maxDuration": "10m"}})
    case("version", "retry-refresh-ignored-on-3-1", a, ["escalate"], "The same spec on Argo CD 3.1: `retry.refresh` does not exist yet, retries keep syncing the old revision, and `limit: -1` retries forever (appcontroller.go:1678): a loop only a human (terminate) ends.",
         trigger="on-sync-running", mode="operation-running-too-long", version="v3.1.8+becb020", pair="retry-refresh-on-3-2-picks-new-commit")

    a = retrying("web-retry-35-norefresh", "", {"limit": -1, "backoff": {"duration": "30s", "factor": 2, "maxDuration": "10m"}})
    case("version", "unlimited-retries-without-refresh-on-3-5", a, ["escalate"], "Argo CD 3.5 but `retry.refresh` not set: unlimited retries of the old revision never reach the fix.",
         trigger="on-sync-running", mode="operation-running-too-long", version="v3.5.1")

    a = retrying("web-retry-31-limited", "", {"limit": 5, "backoff": {"duration": "5s", "factor": 2, "maxDuration": "3m"}})
    case("version", "limited-retries-on-3-1", a, ["wait"], "On 3.1 with `limit: 5`: the retries end soon and auto-sync then takes the new revision (appcontroller.go:2593, revisions differ).",
         trigger="on-sync-running", mode="operation-in-progress", version="v3.1.8+becb020")

    a = retrying("web-retry-unknown-version", "", {"limit": -1, "refresh": True})
    case("version", "unknown-version-assumes-oldest", a, ["escalate"], "The version could not be read: assume the behaviour before 3.2 (no refresh on retry). Read, it decides: before 3.2 retries repeat the old revision (escalate); from 3.2 `retry.refresh` picks the new commit (wait).",
         trigger="on-sync-running", mode="operation-running-too-long",
         by_profile={"v2.14.21": ["escalate"], "v3.1.16": ["escalate"], "v3.3.7": ["wait"], "v3.3.8": ["wait"], "v3.5.1": ["wait"]})

    # A commit the API server rejects, retried forever while Git already holds the fix. From 3.2 `retry.refresh` makes the
    # next retry resolve the latest revision (controller/appcontroller.go:1575@v3.5.1): the failure does not repeat.
    rejected = 'one or more objects failed to apply, reason: Deployment.apps "web" is invalid: spec.template.spec.containers[0].image: Required value'

    def retrying_rejected(name, retry):
        a = retrying(name, "", retry)
        a["status"]["operationState"]["message"] = f"{rejected}. Retrying attempt #4 at 3:04PM."
        return a

    a = retrying_rejected("web-rejected-refresh", {"limit": -1, "refresh": True, "backoff": {"duration": "5s", "factor": 2, "maxDuration": "3m"}})
    case("version", "retry-refresh-past-a-rejected-commit", a, ["wait"], f"Argo CD 3.3 retries a rejected commit with `retry.refresh: true` while the comparison holds a newer one: the next retry resolves the latest revision ({AC} controller/appcontroller.go:1575), so the rejection does not repeat: wait, do not tell a person that every retry fails the same way.",
         trigger="on-sync-running", mode="operation-in-progress", version="v3.3.8+7ae7d2c", pair="rejected-commit-retried-without-refresh")

    a = retrying_rejected("web-rejected-norefresh", {"limit": -1, "backoff": {"duration": "5s", "factor": 2, "maxDuration": "3m"}})
    case("version", "rejected-commit-retried-without-refresh", a, ["escalate"], "The same rejected commit on Argo CD 3.5 without `retry.refresh`: every retry repeats it and fails the same way: tell a person now.",
         trigger="on-sync-running", mode="resource-rejected", version="v3.5.1+109ca7c", pair="retry-refresh-past-a-rejected-commit")

    a = app("web-exhausted-old-format", dest_ns="web", sync="OutOfSync")
    op(a, "Failed", f"{TASKS_FAILED}, reason: etcdserver: request timed out", 20, 12, [result("Deployment", "web-exhausted-old-format", group="apps", ns="web", status="SyncFailed", message="etcdserver: request timed out")], retry_count=5)
    cond(a, "SyncError", f"Failed sync attempt to {a['status']['sync']['revision']}: {TASKS_FAILED}, reason: etcdserver: request timed out (retried 5 times).", 11)
    case("version", "retries-exhausted-message-before-3-2", a, ["sync"], "Argo CD ≤3.1 words the SyncError `Failed sync attempt to <sha>`; 3.2+ says `Failed last sync attempt to [<sha>]` (appcontroller.go:2598). Transient cause: one sync.",
         trigger="on-sync-failed", mode="auto-sync-retries-exhausted", version="v2.14.11")

    # argoproj/argo-cd#29716 (open, reported on v3.5.2; the code it names is in every profile): auto-sync synced the
    # revisions `status.sync.revision(s)` still held (appcontroller.go:2376@v3.5.1, `syncStatus.Revision(s)`), 3,401
    # commits old, and downgraded a self-managed Argo CD. Shaped here: the comparison's target is a revision deployed
    # before and replaced since (status.history, controller/state.go:1220), and the last sync failed for a transient cause.
    def moved_back(name, pinned=False, multi=False):
        a = app(name, dest_ns="web", sync="OutOfSync", multi_source=multi)
        old, new = sha(name + "-old"), sha(name + "-new")
        entry = lambda i, rev, minutes: dict({"id": i, "deployedAt": ts(minutes), "deployStartedAt": ts(minutes + 1), "initiatedBy": {"automated": True}},
                                             **({"revisions": ["4.2.1", rev]} if multi else {"revision": rev}))
        a["status"]["history"] = [entry(16, old, 60 * 24 * 70), entry(17, new, 60 * 2)]
        if not multi:
            a["status"]["sync"]["revision"] = old
        if pinned:
            if multi:
                a["spec"]["sources"][1]["targetRevision"] = old
            else:
                a["spec"]["source"]["targetRevision"] = old
        op(a, "Failed", f"{TASKS_FAILED}, reason: etcdserver: request timed out", 20, 12, [result("Deployment", name, group="apps", ns="web", status="SyncFailed", message="etcdserver: request timed out")], retry_count=5)
        if multi:
            multi_source_as_the_controller_writes(a, ["4.2.1", old])
        return a

    case("version", "target-older-than-the-last-deployment", moved_back("argocd-self-managed"), ["escalate"],
         "status.sync.revision holds a revision deployed 70 days ago and replaced 2 hours ago: an automatic sync would move the app back (argoproj/argo-cd#29716, auto-sync deployed a revision 3,401 commits old and downgraded Argo CD). A person decides.",
         trigger="on-sync-failed", mode="auto-sync-retries-exhausted", rows=("field status.history[].revision", "field status.sync.revision"))
    case("version", "target-older-than-the-last-deployment-multi-source", moved_back("argocd-self-managed-multi", multi=True), ["escalate"],
         "The same with two sources: status.sync.revisions name the Git source's old commit (the $values shape of argoproj/argo-cd#29716).",
         trigger="on-sync-failed", mode="auto-sync-retries-exhausted", rows=("field status.history[].revisions", "field status.sync.revisions"))
    case("version", "rollback-pinned-in-the-spec", moved_back("web-rolled-back", pinned=True), ["sync"],
         "A person rolled back: spec.source.targetRevision now names the older revision itself, so syncing it is what they asked for; the transient failure is re-synced once.",
         trigger="on-sync-failed", mode="auto-sync-retries-exhausted", pair="target-older-than-the-last-deployment",
         rows=("field spec.source.targetRevision",))

    a = app("web-exhausted-new-format", dest_ns="web", sync="OutOfSync")
    op(a, "Failed", f"{TASKS_FAILED}, reason: etcdserver: request timed out", 20, 12, [result("Deployment", "web-exhausted-new-format", group="apps", ns="web", status="SyncFailed", message="etcdserver: request timed out")], retry_count=5)
    cond(a, "SyncError", f"Failed last sync attempt to [{a['status']['sync']['revision']}]: {TASKS_FAILED}, reason: etcdserver: request timed out", 11)
    case("version", "retries-exhausted-message-3-5", a, ["sync"], f"{SRC_AUTOSYNC}: `Failed last sync attempt to [<sha>]`. Transient cause: one sync.",
         trigger="on-sync-failed", mode="auto-sync-retries-exhausted", version="v3.5.1")


# === every catalogue mode ========================================================================

def modes():
    case("modes", "healthy", app("healthy-web", dest_ns="web", n_extra=30), ["none"], "Synced and Healthy with 38 resources and a succeeded history: nothing to do.", mode="healthy")
    case("modes", "suspended-by-design", app("cron-suspended", dest_ns="batch", health="Suspended"), ["none"], "Suspended is a deliberate state (a suspended CronJob or Rollout).", mode="healthy")
    case("modes", "out-of-scope", app("legacy-crm", project="legacy", dest_ns="crm", sync="OutOfSync", health="Degraded"), ["none"], "spec.project `legacy` is outside the configured projects: Argo Medic leaves the app alone (docs/configuration.md).",
         mode="out-of-scope", config={"projects": ["team-a", "team-b"]})
    case("modes", "opted-out", app("experiments", dest_ns="lab", sync="OutOfSync", health="Degraded", annotations={"argo-medic.io/opt-out": "true"}), ["none"], "The owners set `argo-medic.io/opt-out: \"true\"`; even a Degraded app is theirs to handle.",
         mode="opted-out")
    case("modes", "out-of-sync-manual", app("manual-web", dest_ns="web", auto=False, sync="OutOfSync"), ["none"], "Manual sync policy, OutOfSync: nobody asked for a sync.",
         mode="out-of-sync-manual")
    a = app("auto-web-fresh", dest_ns="web", sync="OutOfSync")
    op(a, "Succeeded", "successfully synced (all tasks run)", 4, 3, [])
    case("modes", "out-of-sync-awaiting-auto-sync", a, ["wait"], f"Auto-sync skips while the comparison is fresh ({AC} controller/appcontroller.go:2548); three minutes is normal.", mode="out-of-sync-awaiting-auto-sync")
    a = app("rolling-web", dest_ns="web", health="Progressing", health_since=3)
    a["status"]["resources"][4]["health"] = {"status": "Progressing", "message": "Waiting for rollout to finish: 2 of 4 updated replicas are available..."}
    op(a, "Succeeded", "successfully synced (all tasks run)", 4, 3, [])
    case("modes", "rollout-progressing", a, ["wait"], f"`Waiting for rollout to finish` ({AC} gitops-engine/pkg/health/health_deployment.go:57), three minutes in.", mode="rollout-progressing")
    a = app("stuck-lb", dest_ns="edge", health="Progressing", health_since=40)
    a["status"]["resources"][2]["health"] = {"status": "Progressing"}
    op(a, "Succeeded", "successfully synced (all tasks run)", 42, 40, [])
    case("modes", "stale-progressing", a, ["refresh"], "LoadBalancer Service without an address for 40 minutes after a finished sync.", mode="stale-progressing")
    a = app("repo-blip", dest_ns="web", sync="Unknown")
    cond(a, "ComparisonError", "rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp 10.96.12.4:8081: connect: connection refused\"", 2)
    case("modes", "comparison-error-transient", a, ["wait"], "`transport: Error while dialing ... connection refused` to the repo-server two minutes ago: a restart, within the grace period.", mode="comparison-error-transient")
    a = app("render-cached", dest_ns="web", sync="Unknown")
    cond(a, "ComparisonError", "rpc error: code = Unknown desc = Manifest generation error (cached): `helm template . --name-template render-cached` failed exit status 1: Error: values.yaml: yaml: line 12: could not find expected ':'", 30)
    case("modes", "cached-manifest-error", a, ["escalate"], f"`Manifest generation error (cached)` ({AC} reposerver/repository/repository.go:79) over a YAML syntax error in values.yaml: the cache is keyed by the revision, so a hard refresh renders the same broken file again. Relabelled by issue 23: the label was the wrapper's (hard_refresh); the cause beneath decides, and the cached transient case is causes/cached-git-timeout.", mode="source-config-error")
    a = app("bad-path", dest_ns="web", sync="Unknown")
    cond(a, "ComparisonError", "Failed to load target state: failed to generate manifest for source 1 of 1: rpc error: code = Unknown desc = apps/bad-path: app path does not exist", 30)
    case("modes", "source-config-error", a, ["escalate"], "`app path does not exist`: the source path is not in Git; a person fixes the spec or the repo.", mode="source-config-error")
    a = app("webhook-early", dest_ns="web", sync="OutOfSync")
    op(a, "Failed", TASKS_FAILED, 3, 2, [result("Certificate", "tls", group="cert-manager.io", ns="web", status="SyncFailed",
                                                message="Internal error occurred: failed calling webhook \"webhook.cert-manager.io\": failed to call webhook: Post \"https://cert-manager-webhook.cert-manager.svc:443/validate?timeout=30s\": no endpoints available for service \"cert-manager-webhook\"")])
    case("modes", "webhook-unavailable-backing-off", a, ["wait"], "`no endpoints available for service \"cert-manager-webhook\"` two minutes ago: give the webhook pods time before one re-sync.", trigger="on-sync-failed", mode="webhook-unavailable")
    a = app("policy-denied", dest_ns="web", sync="OutOfSync")
    op(a, "Failed", TASKS_FAILED, 10, 9, [result("Deployment", "policy-denied", group="apps", ns="web", status="SyncFailed", message="admission webhook \"validation.gatekeeper.sh\" denied the request: [k8srequiredlabels] you must provide labels: {\"owner\"}")])
    case("modes", "resource-rejected", a, ["escalate"], "`admission webhook \"validation.gatekeeper.sh\" denied the request`: Gatekeeper rejects the manifests; they must change.", trigger="on-sync-failed", mode="resource-rejected")
    a = app("postsync-wait", dest_ns="web", health="Progressing", health_since=40)
    running(a, "waiting for healthy state of /Service/postsync-wait", 40)
    a["status"]["resources"].append(res("Job", "postsync-wait-smoke", group="batch", ns="web", hook=True, health=None))
    case("modes", "postsync-blocked-by-health", a, ["escalate"], "PostSync hooks wait for a Service that never turns Healthy.", trigger="on-sync-running", mode="postsync-blocked-by-health")
    a = app("degraded-crashloop", dest_ns="web", health="Degraded", health_since=20)
    a["status"]["resources"][4]["health"] = {"status": "Degraded", "message": "Deployment \"degraded-crashloop\" exceeded its progress deadline"}
    case("modes", "health-degraded", a, ["escalate"], f"`exceeded its progress deadline` ({AC} gitops-engine/pkg/health/health_deployment.go).", mode="health-degraded")
    a = app("mass-prune", dest_ns="web", sync="OutOfSync", prune=True, resources=[res("ConfigMap", f"cm-{i}", ns="web", prune=True) for i in range(9)] + [res("Deployment", "mass-prune", group="apps", ns="web")])
    case("modes", "prune-blast-radius", a, ["escalate"], "Nine resources would be pruned, above max_prune: a human checks the render.", mode="prune-blast-radius", prune_risk=True)
    a = app("prune-ns", dest_ns="web", sync="OutOfSync", prune=True)
    a["status"]["resources"].append(res("Namespace", "web-old", prune=True, health=None))
    op(a, "Failed", TASKS_FAILED, 8, 7, [result("Deployment", "prune-ns", group="apps", ns="web", status="SyncFailed", message="etcdserver: leader changed")])
    case("modes", "transient-failure-but-namespace-would-be-pruned", a, ["escalate"], "A transient failure, but a sync would prune a Namespace: any action risks the prune.", trigger="on-sync-failed", mode="sync-failed-transient", prune_risk=True)
    a = app("wipe-all", dest_ns="web", sync="OutOfSync", prune=True, resources=[res("ConfigMap", "a", ns="web", prune=True), res("Service", "b", ns="web", prune=True)])
    cond(a, "SyncError", f"Skipping sync attempt to [{a['status']['sync']['revision']}]: auto-sync will wipe out all resources", 10)
    case("modes", "auto-sync-will-wipe-out", a, ["escalate"], f"`auto-sync will wipe out all resources` ({AC} controller/appcontroller.go:2639).", mode="prune-blast-radius", prune_risk=True)
    a = app("confirm-prune", dest_ns="data", sync="OutOfSync")
    a["status"]["resources"].append(res("PersistentVolumeClaim", "data-old", ns="data", prune=True))
    a["status"]["resources"][-1]["requiresDeletionConfirmation"] = True
    running(a, "Waiting for deletion confirmation", 15)
    case("modes", "prune-confirm-pending", a, ["escalate"], "A PVC marked Prune=confirm waits for approval (requiresDeletionConfirmation): Argo Medic never approves deletions.", trigger="on-sync-running", mode="prune-confirm-pending", prune_risk=True)
    a = app("stuck-delete", dest_ns="old")
    a["metadata"]["deletionTimestamp"] = ts(60)
    case("modes", "deletion-stuck", a, ["escalate"], "Deletion requested an hour ago and the resources finalizer is still there: a finalizer's controller is stuck.", mode="deletion-stuck")
    a = app("deleting-now", dest_ns="old")
    a["metadata"]["deletionTimestamp"] = ts(2)
    case("modes", "app-deleting", a, ["wait"], "metadata.deletionTimestamp two minutes old with the resources finalizer: the cascade is running.", mode="app-deleting")
    a = app("forbidden-sync", dest_ns="secure", sync="OutOfSync")
    op(a, "Failed", TASKS_FAILED, 10, 9, [result("Role", "reader", group="rbac.authorization.k8s.io", ns="secure", status="SyncFailed", message="roles.rbac.authorization.k8s.io \"reader\" is forbidden: User \"system:serviceaccount:argocd:argocd-application-controller\" cannot patch resource \"roles\" in API group \"rbac.authorization.k8s.io\" in the namespace \"secure\"")])
    case("modes", "permission-denied", a, ["escalate"], "`is forbidden: User \"system:serviceaccount:argocd:argocd-application-controller\" cannot patch resource`: the controller lacks a verb on the destination.", trigger="on-sync-failed", mode="permission-denied")
    a = app("window-held", dest_ns="web", sync="OutOfSync")
    running(a, "Sync operation blocked by sync window", 5)
    case("modes", "sync-window-blocked", a, ["wait"], "`Sync operation blocked by sync window` (argoproj/argo-cd v3.5.1 controller/sync.go): a deny window holds the sync; wait for it.", trigger="on-sync-running", mode="sync-window-blocked")
    a = app("busy-web", dest_ns="web", sync="OutOfSync")
    running(a, "waiting for completion of hook batch/Job/busy-web-migrate", 3)
    case("modes", "operation-in-progress", a, ["wait"], "A sync started three minutes ago is waiting for its PreSync hook (`waiting for completion of hook`, gitops-engine sync_context.go).", trigger="on-sync-running", mode="operation-in-progress")
    a = app("hung-hook", dest_ns="web", sync="OutOfSync")
    running(a, "waiting for completion of hook batch/Job/hung-hook-migrate", 95)
    case("modes", "operation-running-too-long", a, ["escalate"], "95 minutes of `waiting for completion of hook`: terminating is a human's call (argoproj/argo-cd#15624, hooks that hang).", trigger="on-sync-running", mode="operation-running-too-long")
    a = app("web-sync-failed", dest_ns="web", sync="OutOfSync")
    op(a, "Failed", "one or more objects failed to apply, reason: error when patching \"/dev/shm/123\": creating patch with: original: ...", 10, 9, [])
    case("modes", "sync-failed", a, ["escalate"], "`one or more objects failed to apply` with a patch error nobody recognises as transient: a human reads it.", trigger="on-sync-failed", mode="sync-failed")


# === probes, written after the policy changed (commit f7e0bc3) ==================================
# Edges of the new rules, labelled from the same sources before running the policy on them.

def probes():
    a = app("cron-reports", dest_ns="reports", health="Suspended")
    op(a, "Failed", f"{TASKS_FAILED}, reason: {BACKOFF}", 30, 26, [
        result("Job", "reports-schema", group="batch", ns="reports", message=BACKOFF, hook_type="PreSync", hook_phase="Failed"),
    ])
    case("hooks", "presync-failed-app-suspended-by-design", a, ["escalate"], f"A suspended CronJob app is Synced/Suspended, but its PreSync Job failed ({BACKOFF}, job-failed.yaml:47): a failed deployment.",
         trigger="on-sync-failed", mode="hook-failed")

    both = {"f:spec": {"f:syncPolicy": {"f:automated": {"f:selfHeal": {}}}, "f:source": {"f:targetRevision": {}}}}
    a = owned_by_appset(app("web-mixed-edit", dest_ns="web", auto=False, sync="OutOfSync"), "web", APPSET_MGR, 400, [("argocd-server", 30, both)])
    case("appset", "edit-of-ignored-and-not-ignored-fields", a, ["escalate"], f"One UI save changed spec.syncPolicy (ignored) and spec.source.targetRevision (not ignored): the latter will be reverted ({SRC_APPSET_UA}).",
         mode="appset-hand-edit", config={"appset_ignored_fields": ["/spec/syncPolicy"]})

    a = app("certs-auto", dest_ns="certs", sync="OutOfSync", health="Missing", resources=[
        res("Certificate", "api", group="cert-manager.io", ns="certs", status="OutOfSync", health="Missing"),
    ])
    op(a, "Failed", no_match("Certificate", "cert-manager.io/v1"), 3, 2, [
        result("Certificate", "api", group="cert-manager.io", ns="certs", status="SyncFailed", message=crd_msg("cert-manager.io", "Certificate", "certs", "api")),
    ], retry_count=1)
    case("kind-not-found", "operator-crd-after-one-retry", a, ["sync", "escalate"], f"One retry has not seen cert-manager's CRD yet ({SRC_CRD}); the cert-manager app may still be installing it. A sync once is reasonable, so is asking.",
         trigger="on-sync-failed", mode="crd-not-established")

    a = app("svc-grpc-unavailable", dest_ns="team-g", auto=False, sync="OutOfSync")
    op(a, "Failed", "rpc error: code = Unavailable desc = error reading from server: EOF", 6, 5, [], user="dev@example.com")
    case("transient", "grpc-unavailable-eof", a, ["sync"], "`rpc error: code = Unavailable desc = error reading from server: EOF` (argoproj/argo-cd#12214 quotes it): the connection dropped; re-run the person's sync.",
         trigger="on-sync-failed", mode="sync-failed-transient")

    a = app("fleet-stale-429", dest_ns="team-s", sync="Unknown", reconciled=120)
    cond(a, "ComparisonError", RATE_LIMITS[0][1], 125)
    case("rate-limit", "throttled-and-status-stale", a, ["refresh", "wait"], "A 429 (argoproj/argo-cd#1895) two hours ago and no reconcile since: one refresh shows whether it still holds; waiting is fine too.",
         mode="stale-reconcile")

    a = app("shared-and-pruning", dest_ns="web", sync="OutOfSync", prune=True)
    a["status"]["resources"].append(res("Namespace", "web-legacy", prune=True, health=None))
    cond(a, "SharedResourceWarning", "ConfigMap/web-settings is part of applications argocd/shared-and-pruning and argocd/web-legacy", 30)
    case("conflicts", "shared-resource-and-namespace-prune", a, ["escalate"], f"A shared ConfigMap ({SRC_SHARED}) and a Namespace to prune: escalate, and touch nothing.",
         mode="prune-blast-radius", prune_risk=True)

    a = app("never-reconciled", dest_ns="new", sync="OutOfSync")
    del a["status"]["reconciledAt"]
    case("staleness", "never-reconciled", a, ["refresh"], "No reconciledAt at all: Argo CD has never compared the app (a new shard, a stuck controller); refresh first.", mode="stale-reconcile")

    a = app("web-retry-rc", dest_ns="web", sync="OutOfSync", retry={"limit": -1, "refresh": True})
    running(a, "Retrying operation. Attempt #2", 10, automated=True, revision=sha("rcold"), retry_count=2, retry={"limit": -1, "refresh": True})
    case("version", "release-candidate-version-string", a, ["wait"], f"`v3.2.0-rc3+abc` is a 3.2 build: retry.refresh applies ({AC} controller/appcontroller.go:1628).",
         trigger="on-sync-running", mode="operation-in-progress", version="v3.2.0-rc3+abc1234")


def main():
    hooks()
    appsets()
    kinds()
    transients()
    rate_limits()
    staleness()
    conflicts()
    custom_health()
    versions()
    modes()
    probes()
    causes()
    mapped()
    causes_more()
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)), "duplicate ids"
    names = [(c["app"]["metadata"]["namespace"], c["app"]["metadata"]["name"]) for c in CASES]
    if os.path.isdir(ROOT):
        for entry in os.listdir(ROOT):
            if os.path.isdir(os.path.join(ROOT, entry)):
                shutil.rmtree(os.path.join(ROOT, entry))
    for c in CASES:
        d = os.path.join(ROOT, c["class"])
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, c["id"] + ".json"), "w") as f:
            json.dump(c, f, indent=2, ensure_ascii=False)
            f.write("\n")
    print(f"{len(CASES)} cases, {len(set(names))} distinct apps")


if __name__ == "__main__":
    main()
