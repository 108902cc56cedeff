//! The `medic` binary end to end: arguments, files, stdin, output formats and error handling.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn root() -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR when it runs a test")).join("..")
}

fn medic(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_medic"))
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("medic starts");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

const NOW: &str = "2026-11-01T12:30:00Z";

/// The JSON values on stdout: the items of one array document (`-o json` of a list), the one
/// object, or one a line (`-o jsonl`).
fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    match serde_json::from_str::<serde_json::Value>(&stdout(o)) {
        Ok(serde_json::Value::Array(items)) => items,
        Ok(one) => vec![one],
        Err(_) => stdout(o).lines().map(|l| serde_json::from_str(l).expect("each line is JSON")).collect(),
    }
}

#[test]
fn decide_prints_one_json_decision_with_the_required_fields() {
    let o = medic(&["decide", "--app", "events/apps/stale-reconcile.json", "--now", NOW, "--trigger", "on-sync-running"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines = json_lines(&o);
    assert_eq!(lines.len(), 1);
    let d = &lines[0];
    assert_eq!(d["action"], "refresh");
    assert_eq!(d["failure_mode"], "stale-reconcile");
    assert!(d["reason"].as_str().unwrap().contains("last reconciled it 84 minutes ago"), "{}", d["reason"]);
    assert!(d["idempotency_key"].as_str().unwrap().starts_with("am1-"));
    assert_eq!(d["app"], "argocd/inventory");
}

#[test]
fn decide_reads_stdin_and_list_responses() {
    let a = std::fs::read_to_string(root().join("events/apps/healthy.json")).unwrap();
    let b = std::fs::read_to_string(root().join("events/apps/hook-failed.json")).unwrap();
    let list = format!(r#"{{"metadata":{{"resourceVersion":"1"}},"items":[{a},{b}]}}"#);
    let o = medic(&["decide", "--app", "-", "--now", NOW], Some(&list));
    assert!(o.status.success(), "{}", stderr(&o));
    let lines = json_lines(&o);
    let actions: Vec<_> = lines.iter().map(|d| (d["app"].as_str().unwrap(), d["action"].as_str().unwrap())).collect();
    assert_eq!(actions, [("argocd/checkout", "none"), ("argocd/accounts", "escalate")]);
    assert_eq!(lines[0]["idempotency_key"], serde_json::Value::Null);

    // What `argocd app list -o json | medic decide --app -` gives: a bare array (it was refused).
    let o = medic(&["decide", "--app", "-", "--now", NOW], Some(&format!("[{a},{b}]")));
    assert!(o.status.success(), "{}", stderr(&o));
    let from_array: Vec<_> = json_lines(&o).iter().map(|d| (d["app"].clone(), d["action"].clone())).collect();
    assert_eq!(from_array, lines.iter().map(|d| (d["app"].clone(), d["action"].clone())).collect::<Vec<_>>());
    let o = medic(&["decide", "--app", "-", "--now", NOW], Some(&format!("[{a}, 7]")));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("<stdin>#[1]: not an Application"), "{}", stderr(&o));
}

#[test]
fn decide_takes_a_directory_and_prints_a_table() {
    let o = medic(&["decide", "--app", "events/apps", "--now", NOW, "-o", "table"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let apps = std::fs::read_dir(root().join("events/apps")).unwrap().count();
    assert_eq!(out.lines().count(), apps + 1, "a header and one row per app:\n{out}");
    assert!(out.starts_with("APP"));
    assert!(out.contains("argocd/accounts") && out.contains("hook-failed"));
}

#[test]
fn history_and_config_files_change_the_decision() {
    let dir = std::env::temp_dir().join(format!("medic-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("events/scenarios/stale-reconcile-after-refresh.json")).unwrap())
            .unwrap();
    let history = dir.join("history.json");
    std::fs::write(&history, scenario["history"].to_string()).unwrap();
    let o = medic(&["decide", "--app", "events/apps/stale-reconcile.json", "--now", NOW, "--history", history.to_str().unwrap()], None);
    assert_eq!(json_lines(&o)[0]["action"], "hard_refresh", "{}", stderr(&o));

    let config = dir.join("config.json");
    std::fs::write(&config, r#"{"projects": ["platform"]}"#).unwrap();
    let o = medic(&["decide", "--app", "events/apps/stale-reconcile.json", "--now", NOW, "--config", config.to_str().unwrap()], None);
    assert_eq!(json_lines(&o)[0]["failure_mode"], "out-of-scope");
}

#[test]
fn text_output_explains_the_decision_for_humans() {
    let o = medic(&["decide", "--app", "events/apps/hook-failed.json", "--now", NOW, "-o", "text"], None);
    let out = stdout(&o);
    assert!(out.starts_with("argocd/accounts: escalate (hook-failed)"), "{out}");
    assert!(
        out.contains("a human may: hard_refresh, snooze, acknowledge, freeze (recommended: acknowledge)"),
        "no Sync after a hook failed: {out}"
    );
    assert!(out.contains("status.operationState.syncResult.resources[0]: PreSync hook Job/accounts-db-migrate"), "{out}");
}

#[test]
fn malformed_input_exits_non_zero_with_a_message_naming_the_problem() {
    let cases: &[(&str, &str)] = &[
        ("{not json", "invalid JSON"),
        // An array is `argocd app list -o json`: each item must be an Application.
        ("[1, 2]", "<stdin>#[0]: not an Application"),
        ("3", "expected an Application object"),
        (r#"{"kind": "Deployment"}"#, "has no `metadata`"),
        (r#"{"items": 3}"#, "`items` must be an array"),
        (r#"{"metadata": {"name": "a"}, "status": {"reconciledAt": "yesterday"}}"#, "at `status.reconciledAt`"),
    ];
    for (input, expected) in cases {
        let o = medic(&["decide", "--app", "-", "--now", NOW], Some(input));
        assert_eq!(o.status.code(), Some(2), "{input}: {}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{input}: stderr was {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{input}");
        assert!(stdout(&o).is_empty());
    }
    let o = medic(&["decide", "--app", "events/apps/healthy.json", "--now", "noon"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--now `noon` is not an RFC 3339 time"));
    let o = medic(&["decide", "--app", "events/apps/healthy.json", "--trigger", "On Sync"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("invalid value 'On Sync' for '--trigger"), "{}", stderr(&o));
    let o = medic(&["decide", "--app", "no/such/file.json"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no/such/file.json"));
}

#[test]
fn a_field_masked_list_item_is_refused_while_the_others_are_decided() {
    let full = std::fs::read_to_string(root().join("events/apps/healthy.json")).unwrap();
    let masked = r#"{"metadata":{"name":"masked","namespace":"argocd"},"spec":{"project":"payments"},"status":{"sync":{"status":"OutOfSync"},"health":{"status":"Progressing"}}}"#;
    let o = medic(&["decide", "--app", "-", "--now", NOW], Some(&format!(r#"{{"items":[{masked},{full}]}}"#)));
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("argocd/masked` is incomplete: metadata.resourceVersion is missing"), "{}", stderr(&o));
    assert_eq!(json_lines(&o).len(), 1, "the complete app is still decided");
}

#[test]
fn catalogue_prints_every_mode_as_a_table_and_as_json() {
    let table = stdout(&medic(&["catalogue"], None));
    let json = medic(&["catalogue", "-o", "json"], None);
    let entries = json_lines(&json);
    assert_eq!(table.lines().count(), entries.len() + 1);
    for e in &entries {
        let id = e["id"].as_str().unwrap();
        assert!(table.contains(id), "{id} missing from the table");
        assert!(!e["diagnosis"].as_str().unwrap().is_empty());
    }
    assert!(entries.iter().any(|e| e["id"] == "cached-manifest-error" && e["signals"][0] == "Manifest generation error (cached)"));
}

/// The text of docs/decisions.md between `<!-- {tag}:start -->` and `<!-- {tag}:end -->`.
fn decisions_doc_section(tag: &str) -> String {
    let doc = std::fs::read_to_string(root().join("docs/decisions.md")).unwrap();
    let open = format!("<!-- {tag}:start -->\n");
    let start = doc.find(&open).unwrap_or_else(|| panic!("no {open}")) + open.len();
    let end = doc.find(&format!("<!-- {tag}:end -->")).unwrap_or_else(|| panic!("no end marker of {tag}"));
    doc[start..end].to_owned()
}

#[test]
fn the_failure_mode_table_in_docs_is_the_catalogue() {
    let markdown = stdout(&medic(&["catalogue", "-o", "markdown"], None));
    assert_eq!(
        decisions_doc_section("catalogue"),
        markdown,
        "docs/decisions.md's table is stale: regenerate it with `medic catalogue -o markdown`"
    );
}

#[test]
fn the_map_of_the_application_in_docs_is_medic_map() {
    let markdown = stdout(&medic(&["map", "-o", "markdown"], None));
    assert_eq!(decisions_doc_section("app-map"), markdown, "docs/decisions.md's map is stale: regenerate it with `medic map -o markdown`");
    let lines = json_lines(&medic(&["map", "-o", "json"], None));
    assert_eq!(markdown.lines().count(), lines.len() + 2, "one Markdown row per map row");
    assert!(lines.iter().any(|l| l["key"] == "status.operationState.phase" && l["used"] == "rule"), "the phase decides");
}

#[test]
fn decide_names_the_map_rows_its_rule_read() {
    let app = root().join("events/apps/hook-failed.json");
    let o = medic(&["decide", "--app", app.to_str().unwrap(), "--now", "2026-11-01T12:30:00Z"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let d = &json_lines(&o)[0];
    let rule = d["rule"].as_str().unwrap();
    assert!(rule.starts_with("failed-operation/hook-failed"), "{rule}");
    let read: Vec<&str> = d["read"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert!(read.contains(&"field status.operationState.syncResult.resources[].hookPhase"), "{read:?}");
    assert!(read.contains(&"phase Failed"), "{read:?}");
    assert!(!read.iter().any(|r| r.starts_with("field metadata.managedFields")), "rows of other rules are not named: {read:?}");
    let text = stdout(&medic(&["decide", "--app", app.to_str().unwrap(), "--now", "2026-11-01T12:30:00Z", "-o", "text"], None));
    assert!(text.contains("  read: ") && text.contains("field status.operationState.syncResult.resources[].hookPhase"), "{text}");
}

#[test]
fn demo_decides_every_scenario() {
    let o = medic(&["demo"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let scenarios = std::fs::read_dir(root().join("events/scenarios")).unwrap().count();
    let out = stdout(&o);
    assert_eq!(out.lines().count(), scenarios + 1);
    assert!(out.lines().any(|l| l.starts_with("crd-not-established ") && l.contains(" sync ")), "{out}");
}

#[test]
fn sweep_simulate_remediates_the_sample_fleet_and_a_second_pass_changes_nothing() {
    let o = medic(&["sweep", "--simulate", "--passes", "2", "-o", "jsonl", "--sync-per-minute", "600"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let reports = json_lines(&o);
    let apps = std::fs::read_dir(root().join("events/apps")).unwrap().count();
    assert!(reports.len() > apps, "two passes of reports: {}", reports.len());
    let first_pass = &reports[..reports.len() / 2];
    let result =
        |app: &str| first_pass.iter().find(|r| r["app"] == format!("argocd/{app}")).map(|r| r["result"].as_str().unwrap().to_owned());
    assert_eq!(result("inventory").as_deref(), Some("refreshed"));
    assert_eq!(result("observability").as_deref(), Some("synced"));
    assert_eq!(result("accounts").as_deref(), Some("escalated"));
    let err = stderr(&o);
    let pass2 = err.lines().find(|l| l.starts_with("medic: pass 2: Argo CD calls")).expect("pass 2 call counts");
    assert!(pass2.contains("refresh 0, hard refresh 0, sync 0, terminate 0"), "{pass2}");
    assert!(!err.contains("\u{1b}["), "no terminal colours in a pipe");
}

#[test]
fn sweep_dry_run_acts_on_nothing() {
    let o = medic(&["sweep", "--simulate", "--dry-run"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("dry_run"));
    let calls = stderr(&o).lines().find(|l| l.contains("Argo CD calls")).unwrap().to_owned();
    assert!(calls.contains("refresh 0, hard refresh 0, sync 0, terminate 0"), "{calls}");
}

#[test]
fn sweep_without_an_argo_cd_says_what_to_set() {
    let o = Command::new(env!("CARGO_BIN_EXE_medic")).args(["sweep"]).env_remove("ARGOCD_SERVER").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("ARGOCD_SERVER"), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Sends one HTTP/1.1 POST over a plain TCP connection and returns the status code.
fn post(addr: &str, path: &str, headers: &[(&str, &str)], body: &str) -> u16 {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let mut request = format!("POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[test]
fn serve_runs_ingest_worker_and_sweeper_in_one_process() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_medic"))
        .args(["serve", "--simulate", "--listen", "127.0.0.1:0", "--run-for", "5", "--sweep-every", "600"])
        .current_dir(root())
        .env_remove("MEDIC_WEBHOOK_SECRET")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let (mut secret, mut addr) = (String::new(), String::new());
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(rest) = line.split("Bearer ").nth(1) {
            secret = rest.trim_end_matches('`').to_owned();
        }
        if let Some(rest) = line.strip_prefix("medic: ingest listening on http://") {
            addr = rest.split('/').next().unwrap().to_owned();
            break;
        }
    }
    assert!(secret.len() >= 32 && !addr.is_empty(), "secret {secret:?}, address {addr:?}");
    let body = std::fs::read_to_string(root().join("events/webhook/sync-failed-transient.json")).unwrap();
    let json = [("Content-Type", "application/json")];
    assert_eq!(post(&addr, "/v1/events", &json, &body), 401, "no credentials");
    let auth = format!("Bearer {secret}");
    assert_eq!(post(&addr, "/v1/events", &[("Content-Type", "application/json"), ("Authorization", &auth)], &body), 202);
    assert_eq!(post(&addr, "/v1/events", &[("Content-Type", "text/plain"), ("Authorization", &auth)], &body), 415);
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert!(child.wait().unwrap().success());
    let summary = rest.iter().find(|l| l.starts_with("medic: handled")).expect("a summary line");
    let handled: usize = summary.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!(handled >= 20, "the sweep's items and the webhook's were handled: {summary}");
    // One line per handled message at the default level (there were none: issue 26).
    let per_message = rest.iter().filter(|l| l.starts_with("medic: argocd/") && l.ends_with(": done")).count();
    assert_eq!(per_message, handled, "a line per message: {rest:#?}");
    assert!(rest.iter().any(|l| l == "medic: argocd/payouts: on-sync-failed: done"), "the webhook's message: {rest:#?}");
    let calls = rest.iter().find(|l| l.starts_with("medic: Argo CD calls")).unwrap();
    assert!(calls.contains("sync 4,"), "the four syncs the sample fleet needs, each once: {calls}");
}

#[test]
fn serve_can_escalate_to_the_slack_simulator_one_thread_per_incident() {
    let o = Command::new(env!("CARGO_BIN_EXE_medic"))
        .args(["serve", "--simulate", "--slack-simulate", "--listen", "127.0.0.1:0", "--run-for", "6", "--sweep-every", "600"])
        .current_dir(root())
        .env_remove("SLACK_TOKEN")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    let threads: Vec<&str> = err.lines().filter(|l| l.starts_with("medic: slack thread:")).collect();
    assert!(!threads.is_empty(), "{err}");
    let mut apps: Vec<&str> = threads.iter().filter_map(|l| l.split("argocd/").nth(1)?.split(' ').next()).collect();
    let total = apps.len();
    apps.sort();
    apps.dedup();
    assert_eq!(apps.len(), total, "one thread per incident: {threads:?}");
    assert!(apps.contains(&"accounts"), "the failed hook is escalated: {apps:?}");
}

/// A state file of its own for a test.
fn state_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("medic-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("state.db")
}

#[test]
fn incidents_lists_what_sweeps_left_open_and_closed_as_a_table_and_json_lines_with_filters() {
    let state = state_file("incidents");
    let state = state.to_str().unwrap();
    let o = medic(&["sweep", "--simulate", "--passes", "2", "--sync-per-minute", "600", "--state", state], None);
    assert!(o.status.success(), "{}", stderr(&o));

    let o = medic(&["incidents", "--state", state], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    let header = table.lines().next().unwrap();
    for column in ["APP", "STATUS", "MODE", "PROJECT", "SINCE", "RUNGS", "NEXT", "SLACK", "FLEET"] {
        assert!(header.contains(column), "{header}");
    }
    let accounts = table.lines().find(|l| l.starts_with("argocd/accounts ")).expect("the escalated hook failure is open");
    assert!(
        accounts.contains("hook-failed") && accounts.contains("escalate:succeeded") && accounts.contains("human owns it"),
        "{accounts}"
    );
    assert!(!table.contains("argocd/inventory"), "healed after its refresh: closed, not listed without --closed");

    let o = medic(&["incidents", "--state", state, "-o", "json"], None);
    let open = json_lines(&o);
    assert!(open.len() > 10 && open.iter().all(|v| v["status"] == "open" && v["closed_at"].is_null()), "{open:?}");
    let accounts = open.iter().find(|v| v["app"] == "argocd/accounts").unwrap();
    assert_eq!(accounts["rungs"][0]["rung"], "escalate");
    assert!(accounts["rungs"][0]["idempotency_key"].as_str().unwrap().starts_with("am1-"));
    assert_eq!(accounts["next"]["kind"], "human");
    assert_eq!(accounts["last_decision"]["failure_mode"], "hook-failed");
    let events_bus = open.iter().find(|v| v["app"] == "argocd/events-bus").unwrap();
    assert_eq!(events_bus["next"]["kind"], "look_again");
    assert_eq!(events_bus["next"]["rung"], "escalate", "after its refresh the ladder offers escalate: {events_bus}");
    assert!(events_bus["next"]["at"].is_string());

    let o = medic(&["incidents", "--state", state, "--closed", "-o", "json"], None);
    let all = json_lines(&o);
    let inventory = all.iter().find(|v| v["app"] == "argocd/inventory").expect("closed incidents with --closed");
    assert_eq!(inventory["status"], "closed");
    assert!(inventory["closed_at"].is_string());
    assert_eq!(inventory["rungs"][0]["rung"], "refresh");
    assert_eq!(all.len(), open.len() + all.iter().filter(|v| v["status"] == "closed").count());

    let only = |args: &[&str]| {
        let mut a = vec!["incidents", "--state", state, "-o", "json"];
        a.extend_from_slice(args);
        let o = medic(&a, None);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        json_lines(&o)
    };
    let hooks = only(&["--mode", "hook-failed"]);
    assert_eq!(hooks.iter().map(|v| v["app"].as_str().unwrap()).collect::<Vec<_>>(), ["argocd/accounts"]);
    let platform = only(&["--project", "platform"]);
    assert!(!platform.is_empty() && platform.iter().all(|v| v["project"] == "platform"), "{platform:?}");
    assert!(only(&["--older-than", "1000d"]).is_empty());
    assert_eq!(only(&["--older-than", "1s"]).len(), open.len());
    let o = medic(&["incidents", "--state", state, "--older-than", "1000d"], None);
    assert!(stdout(&o).contains("(no incidents)"));

    let o = medic(&["incidents", "--state", state, "show", "accounts"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let shown = stdout(&o);
    for expected in
        ["argocd/accounts (open)", "hook-failed", "escalate", "am1-", "evidence:", "PreSync hook Job/accounts-db-migrate", "trigger sweep"]
    {
        assert!(shown.contains(expected), "{expected} missing from {shown}");
    }

    // An app with no incident: said on stderr, with a status a script can test (it was rc 0).
    let o = medic(&["incidents", "--state", state, "show", "argocd/nope"], None);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("no open incidents of argocd/nope") && stdout(&o).is_empty(), "{}", stderr(&o));

    let o = medic(&["incidents", "--state", state, "--mode", "no-such-mode"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("medic catalogue"), "{}", stderr(&o));
    let o = medic(&["incidents", "--state", "/nonexistent/state.db"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no state file"), "{}", stderr(&o));
}

/// The newcomer review's row 7: with stderr closed early (`medic sweep 2>&1 | head -3`) the
/// sweep acted, then panicked writing its summary (rc 101) and never wrote its table. Now a note
/// that cannot be written is dropped and the run ends as usual.
#[test]
fn a_closed_stderr_neither_panics_nor_loses_the_table() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_medic"))
        .args(["sweep", "--simulate", "--sync-per-minute", "600"])
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("medic starts");
    drop(child.stderr.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let table = stdout(&o);
    assert!(table.contains("argocd/inventory") && table.contains("refreshed"), "{table}");
}

/// Row 10: `--refresh-per-minute 0` hung, `--passes 0` ran a live pass, `--concurrency 0` was
/// taken. Each is a usage error now, naming the flag.
#[test]
fn counts_and_rates_of_zero_are_usage_errors() {
    for flag in ["--refresh-per-minute", "--hard-refresh-per-minute", "--sync-per-minute", "--passes", "--concurrency"] {
        let o = medic(&["sweep", "--simulate", flag, "0"], None);
        assert_eq!(o.status.code(), Some(2), "{flag}: {}", stderr(&o));
        assert!(stderr(&o).contains(flag) && stdout(&o).is_empty(), "{flag}: {}", stderr(&o));
    }
}

/// Row 12: without `--now` an exported file is judged as of now, and 28 of 33 sample apps came
/// out stale with no word why. A warning names the time to give.
#[test]
fn decide_without_now_warns_when_the_apps_are_old() {
    let app = "events/apps/crd-not-established.json";
    let o = medic(&["decide", "--app", app], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("warning") && err.contains("--now 2026-"), "{err}");
    let o = medic(&["decide", "--app", app, "--now", NOW], None);
    assert!(o.status.success() && !stderr(&o).contains("warning"), "{}", stderr(&o));
    // Row 23: a --now before the app's own times is said.
    let o = medic(&["decide", "--app", app, "--now", "1970-01-01T00:00:00Z"], None);
    assert!(stderr(&o).contains("is before events/apps/crd-not-established.json's own time"), "{}", stderr(&o));
}

/// Row 37: SIGTERM (what systemd, Docker and Kubernetes stop a process with) killed `serve` at
/// once, rc 143, without a drain or its summary. It stops as Ctrl-C does now.
#[cfg(unix)]
#[test]
fn serve_stops_on_sigterm_as_on_ctrl_c_with_its_summary() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_medic"))
        .args(["serve", "--simulate", "--listen", "127.0.0.1:0", "--sweep-every", "600"])
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    assert!(lines.by_ref().map(|l| l.unwrap()).any(|l| l.starts_with("medic: ingest listening")), "serve started");
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{rest:?}");
    assert!(rest.iter().any(|l| l.starts_with("medic: handled")), "the summary: {rest:?}");
}

/// Row 39: `serve` refused to start while Argo CD was down (rc 2 after 4 s), the moment it exists
/// for. It starts, says so, accepts webhooks, and stops cleanly.
#[test]
fn serve_starts_while_argo_cd_is_down_and_says_so() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_medic"))
        .args(["serve", "--listen", "127.0.0.1:0", "--run-for", "3", "--sweep-every", "600", "--plaintext"])
        .current_dir(root())
        .env("ARGOCD_SERVER", "127.0.0.1:1")
        .env("ARGOCD_AUTH_TOKEN", "a.b.c")
        .env("XDG_STATE_HOME", state_file("argo-down").parent().unwrap())
        .env_remove("MEDIC_WEBHOOK_SECRET")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines: Vec<String> = BufReader::new(child.stderr.take().unwrap()).lines().map(|l| l.unwrap()).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{lines:#?}");
    assert!(lines.iter().any(|l| l.contains("Argo CD does not answer") && l.contains("serving anyway")), "{lines:#?}");
    assert!(lines.iter().any(|l| l.starts_with("medic: ingest listening")), "{lines:#?}");
}

/// A `medic sim` child: the simulator's address and token, and the process (killed on drop).
struct SimProcess {
    child: std::process::Child,
    server: String,
    token: String,
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sim_process() -> SimProcess {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_medic"))
        .arg("sim")
        .current_dir(root())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("medic sim starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut value = |name: &str| {
        let line = lines.next().expect("medic sim prints its settings").unwrap();
        line.strip_prefix(&format!("export {name}=")).unwrap_or_else(|| panic!("`{line}` is not export {name}=...")).to_owned()
    };
    let server = value("ARGOCD_SERVER");
    let token = value("ARGOCD_AUTH_TOKEN");
    SimProcess { child, server, token }
}

/// `medic sweep` against the simulator with `args` and the environment `env` (the ARGOCD_*
/// variables of the test process removed first).
fn sweep_with(args: &[&str], env: &[(&str, &str)], state: &str) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_medic"));
    command.args(["sweep", "--dry-run", "-o", "jsonl", "--state"]).arg(state_file(state)).args(args).current_dir(root());
    for var in
        ["ARGOCD_SERVER", "ARGOCD_AUTH_TOKEN", "ARGOCD_OPTS", "ARGOCD_PLAINTEXT", "ARGOCD_INSECURE", "ARGOCD_ROOT_PATH", "ARGOCD_CA_BUNDLE"]
    {
        command.env_remove(var);
    }
    command.envs(env.iter().copied()).output().unwrap()
}

/// Issue 26, argocd conventions: `--server` and `--auth-token` (clap suggested `--selector`),
/// and `ARGOCD_OPTS`, with argocd's precedence: the command line, then ARGOCD_OPTS, then the
/// ARGOCD_* variables. Each sweep below reaches the simulator only if the right one wins.
#[test]
fn argocd_s_connection_flags_and_argocd_opts_reach_argo_cd_in_argocd_s_order() {
    let sim = sim_process();
    let (server, token) = (sim.server.as_str(), sim.token.as_str());
    let unreachable = "127.0.0.1:1";
    let reached = |o: &Output| {
        assert!(o.status.success(), "rc {:?}: {}", o.status.code(), stderr(o));
        assert!(!json_lines(o).is_empty(), "rows: {}", stdout(o));
    };

    // Flags over the variables.
    let o = sweep_with(
        &["--server", server, "--auth-token", token],
        &[("ARGOCD_SERVER", unreachable), ("ARGOCD_AUTH_TOKEN", "wrong")],
        "flags",
    );
    reached(&o);
    // ARGOCD_OPTS over the variables, its argocd-only flags named and ignored.
    let opts = format!("--server {server} --auth-token={token} --grpc-web --port-forward-namespace argocd");
    let o = sweep_with(&[], &[("ARGOCD_OPTS", &opts), ("ARGOCD_SERVER", unreachable)], "opts");
    reached(&o);
    assert!(stderr(&o).contains("ARGOCD_OPTS: --grpc-web ignored"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--port-forward-namespace is not used"), "{}", stderr(&o));
    // The command line over ARGOCD_OPTS, flags given after the command as well.
    let opts = format!("--server {unreachable} --auth-token {token}");
    let o = sweep_with(&["--server", server], &[("ARGOCD_OPTS", &opts)], "line");
    reached(&o);
    // The variables alone still work.
    reached(&sweep_with(&[], &[("ARGOCD_SERVER", server), ("ARGOCD_AUTH_TOKEN", token)], "env"));

    // A malformed ARGOCD_OPTS or header is a usage error naming it.
    let o = sweep_with(&[], &[("ARGOCD_OPTS", "--server 'unclosed")], "bad-opts");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("ARGOCD_OPTS") && stderr(&o).contains("not shell words"), "{}", stderr(&o));
    let o = sweep_with(&["--server", server, "--auth-token", token, "-H", "no colon"], &[], "bad-header");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is not `Name: value`"), "{}", stderr(&o));
    // --help names the variables each flag stands for.
    let help = medic(&["sweep", "--help"], None);
    for var in ["ARGOCD_SERVER", "ARGOCD_AUTH_TOKEN", "ARGOCD_PLAINTEXT", "ARGOCD_INSECURE", "ARGOCD_ROOT_PATH", "ARGOCD_CA_BUNDLE"] {
        assert!(stdout(&help).contains(var), "--help names {var}");
    }
}

/// Issue 26: every failure exited 2, like a usage error. A script can now tell them apart:
/// 2 usage, 3 Argo CD unreachable, 4 the token refused (docs/cli.md, `medic::exit`).
#[test]
fn exit_statuses_tell_usage_from_connection_from_authentication() {
    let sim = sim_process();
    let o = sweep_with(&["--server", &sim.server, "--auth-token", "not.the.token"], &[], "exit-auth");
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stderr(&o).contains("rejected Argo Medic's token"), "{}", stderr(&o));
    let o = sweep_with(&["--server", "127.0.0.1:1", "--plaintext", "--auth-token", "a.b.c"], &[], "exit-connection");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let o = sweep_with(&["--server", &sim.server], &[], "exit-usage");
    assert_eq!(o.status.code(), Some(2), "no token: {}", stderr(&o));
    let o = sweep_with(&["--server", &sim.server, "--auth-token", &sim.token], &[], "exit-done");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// A server on 127.0.0.1 that answers every connection with an HTML page over plain HTTP, as an
/// ingress serving Argo CD's UI (or anything else) would; it stops when the test ends.
fn html_server() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = "<!doctype html><html><head><title>Argo CD</title></head><body></body></html>";
            let head = format!("HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    addr
}

/// Issue 26: `medic sweep`'s own errors said what failed, not what to change (`medic check` did).
/// Plain HTTP answered to TLS, and HTML answered to the API, now name the setting to change.
#[test]
fn sweep_says_what_to_change_when_argo_cd_answers_plain_http_or_html() {
    let server = html_server();
    let o = sweep_with(&["--server", &server, "--auth-token", "a.b.c"], &[], "remedy-tls");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("ARGOCD_PLAINTEXT=true"), "TLS to a plain-HTTP server: {}", stderr(&o));
    let o = sweep_with(&["--server", &server, "--plaintext", "--auth-token", "a.b.c"], &[], "remedy-html");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("not as Argo CD's API does (HTML"), "HTML: {}", stderr(&o));
    assert!(stderr(&o).contains("ARGOCD_ROOT_PATH"), "{}", stderr(&o));
}

/// Issue 26: the quick start worked only from the repository's root (`events/apps` not found).
/// The sample fleet is compiled in: elsewhere, `medic sweep --simulate` sweeps the same fleet.
#[test]
fn sweep_simulate_works_outside_the_repository_with_the_compiled_in_fleet() {
    let elsewhere = std::env::temp_dir().join(format!("medic-cli-elsewhere-{}", std::process::id()));
    std::fs::create_dir_all(&elsewhere).unwrap();
    let run = |dir: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_medic"))
            .args(["sweep", "--simulate", "--dry-run", "-o", "jsonl"])
            .current_dir(dir)
            .env("XDG_STATE_HOME", dir)
            .output()
            .unwrap()
    };
    let outside = run(&elsewhere);
    assert!(outside.status.success(), "{}", stderr(&outside));
    assert!(stderr(&outside).contains("the sample fleet compiled into medic"), "{}", stderr(&outside));
    let inside = run(&root());
    assert!(inside.status.success(), "{}", stderr(&inside));
    let rows = |o: &Output| {
        let mut rows: Vec<(String, String)> =
            json_lines(o).iter().map(|r| (r["app"].as_str().unwrap_or_default().to_owned(), r["result"].to_string())).collect();
        rows.sort();
        rows
    };
    assert!(!rows(&outside).is_empty());
    assert_eq!(rows(&outside), rows(&inside), "the same fleet, the same decisions");
    // The scenarios are fixtures of the repository: elsewhere demo says where to run it.
    let demo = Command::new(env!("CARGO_BIN_EXE_medic")).arg("demo").current_dir(&elsewhere).output().unwrap();
    assert_eq!(demo.status.code(), Some(2));
    assert!(stderr(&demo).contains("give --events <repository>/events"), "{}", stderr(&demo));
    // Apps given by path with no outcomes file beside: said, not skipped in silence.
    let apps = root().join("events/apps");
    let o = Command::new(env!("CARGO_BIN_EXE_medic"))
        .args(["sweep", "--simulate", "--dry-run", "--apps"])
        .arg(&apps)
        .current_dir(&elsewhere)
        .env("XDG_STATE_HOME", &elsewhere)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("no outcomes file at events/sim/outcomes.json"), "{}", stderr(&o));
}

/// A running `medic` whose stdout and stderr lines arrive on channels, each with when it came.
struct Streaming {
    child: std::process::Child,
    started: std::time::Instant,
    out: std::sync::mpsc::Receiver<(std::time::Duration, String)>,
    err: std::sync::mpsc::Receiver<(std::time::Duration, String)>,
}

impl Streaming {
    fn start(args: &[&str], state: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_medic"))
            .args(args)
            .arg("--state")
            .arg(state_file(state))
            .current_dir(root())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("medic starts");
        let started = std::time::Instant::now();
        let lines = |pipe: Box<dyn std::io::Read + Send>| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                for line in std::io::BufRead::lines(std::io::BufReader::new(pipe)).map_while(Result::ok) {
                    let _ = tx.send((started.elapsed(), line));
                }
            });
            rx
        };
        let out = lines(Box::new(child.stdout.take().unwrap()));
        let err = lines(Box::new(child.stderr.take().unwrap()));
        Self { child, started, out, err }
    }

    /// The first line on `rx` that `wanted` accepts, waiting at most `within` from the start.
    fn first(
        rx: &std::sync::mpsc::Receiver<(std::time::Duration, String)>,
        started: std::time::Instant,
        within: std::time::Duration,
        wanted: impl Fn(&str) -> bool,
        seen: &mut Vec<String>,
    ) -> Option<(std::time::Duration, String)> {
        loop {
            let left = within.checked_sub(started.elapsed())?;
            let (at, line) = rx.recv_timeout(left).ok()?;
            seen.push(line.clone());
            if wanted(&line) {
                return Some((at, line));
            }
        }
    }

    /// Sends SIGINT, as Ctrl-C does, and waits for the exit; the rest of both streams.
    fn interrupt(mut self) -> (Option<i32>, Vec<String>, Vec<String>) {
        let signalled = Command::new("kill").args(["-INT", &self.child.id().to_string()]).status().unwrap();
        assert!(signalled.success());
        let status = self.child.wait().unwrap();
        let rest = |rx: &std::sync::mpsc::Receiver<(std::time::Duration, String)>| {
            std::iter::from_fn(|| rx.recv_timeout(std::time::Duration::from_secs(10)).ok().map(|(_, l)| l)).collect::<Vec<_>>()
        };
        (status.code(), rest(&self.out), rest(&self.err))
    }
}

/// Issue 26 (newcomer review rows 8 and 9: 5,000 stale apps swept for 16 min 42 s with no word,
/// the rows all at the end, and Ctrl-C lost them): a sweep of 2,000 stale apps at the default
/// budgets (about 7 minutes of refreshes) says its plan and pace at once, shows a progress line
/// within 5 s and its first row long before the last app is done, and on SIGINT starts no new
/// app, prints the rows of the apps it finished and a summary, and exits 130.
#[test]
fn a_long_sweep_shows_progress_streams_its_rows_and_an_interrupt_keeps_what_is_done() {
    let args = ["sweep", "--simulate", "--synthetic", "2000", "--stale", "2000", "-o", "jsonl"];
    let run = Streaming::start(&args, "streaming");
    let mut err = Vec::new();
    let plan = Streaming::first(&run.err, run.started, std::time::Duration::from_secs(5), |l| l.contains("to look at"), &mut err)
        .unwrap_or_else(|| panic!("no plan within 5 s: {err:?}"));
    assert!(plan.1.contains("2000 to look at") && plan.1.contains("300 refreshes") && plan.1.contains("up to 6m 40s"), "{}", plan.1);
    let progress = Streaming::first(&run.err, run.started, std::time::Duration::from_secs(5), |l| l.contains("/2000 done"), &mut err)
        .unwrap_or_else(|| panic!("no progress line within 5 s: {err:?}"));
    assert!(progress.1.contains("waiting for budget") && progress.1.contains("left"), "{}", progress.1);
    let mut out = Vec::new();
    let (_, first_row) = Streaming::first(&run.out, run.started, std::time::Duration::from_secs(30), |l| l.contains("\"app\""), &mut out)
        .expect("a row while the sweep runs");
    let row: serde_json::Value = serde_json::from_str(&first_row).unwrap();
    assert_eq!(row["failure_mode"], "stale-reconcile", "{row}");
    let (code, rest, err) = run.interrupt();
    assert_eq!(code, Some(130), "{err:?}");
    let rows: Vec<serde_json::Value> = out.iter().chain(&rest).map(|l| serde_json::from_str(l).expect("each row is JSON")).collect();
    assert!(!rows.is_empty() && rows.len() < 2000, "the finished apps' rows, not all 2000: {}", rows.len());
    let summary = err.iter().find(|l| l.starts_with("medic: pass 1: 2000 listed")).unwrap_or_else(|| panic!("a summary: {err:?}"));
    let not_started: usize = summary.split(", ").find_map(|p| p.strip_suffix(" not started (interrupted)")?.parse().ok()).expect(summary);
    let looked_at: usize = summary.split(", ").find_map(|p| p.strip_suffix(" looked at")?.parse().ok()).expect(summary);
    assert_eq!(looked_at + not_started, 2000, "{summary}");
    assert_eq!(rows.len(), looked_at, "a row for every app looked at: {summary}");

    // `-o json`: the partial document, at the end, with its summary.
    let run = Streaming::start(&["sweep", "--simulate", "--synthetic", "2000", "--stale", "2000", "-o", "json"], "streaming-json");
    let mut err = Vec::new();
    Streaming::first(&run.err, run.started, std::time::Duration::from_secs(10), |l| l.contains("/2000 done"), &mut err)
        .unwrap_or_else(|| panic!("no progress line: {err:?}"));
    let (code, out, err) = run.interrupt();
    assert_eq!(code, Some(130), "{err:?}");
    let doc: serde_json::Value = serde_json::from_str(&out.join("\n")).expect("one JSON document");
    assert_eq!(doc["summary"]["interrupted"], true);
    let pass = &doc["summary"]["passes"][0];
    assert_eq!(pass["looked_at"].as_u64().unwrap() + pass["not_started"].as_u64().unwrap(), 2000, "{pass}");
    assert_eq!(doc["rows"].as_array().unwrap().len() as u64, pass["looked_at"].as_u64().unwrap());
}

/// Issue 26, argocd's `-o`: `json` and `yaml` are one document with a summary, `wide` the whole
/// detail with the idempotency key, `name` the apps; `jsonl` the rows a line. Every format
/// carries the same rows.
#[test]
fn sweep_prints_argocd_s_output_formats_with_the_same_rows() {
    let run = |format: &str| {
        let o = medic(&["sweep", "--simulate", "--dry-run", "-o", format], None);
        assert!(o.status.success(), "-o {format}: {}", stderr(&o));
        stdout(&o)
    };
    let results = |rows: &[serde_json::Value]| {
        let mut r: Vec<(String, String)> = rows.iter().map(|r| (r["app"].as_str().unwrap().to_owned(), r["result"].to_string())).collect();
        r.sort();
        r
    };
    let lines: Vec<serde_json::Value> = run("jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let doc: serde_json::Value = serde_json::from_str(&run("json")).expect("-o json is one document");
    let yaml: serde_json::Value = serde_norway::from_str(&run("yaml")).expect("-o yaml is one document");
    let pass = &doc["summary"]["passes"][0];
    assert_eq!(pass["listed"], 33, "{pass}");
    assert_eq!(pass["looked_at"].as_u64().unwrap() as usize, lines.len());
    assert_eq!(pass["results"]["dry_run"], 25, "{pass}");
    assert_eq!(doc["summary"]["interrupted"], false);
    assert_eq!(results(doc["rows"].as_array().unwrap()), results(&lines));
    assert_eq!(results(yaml["rows"].as_array().unwrap()), results(&lines));
    assert_eq!(yaml["summary"]["passes"][0]["results"], pass["results"]);

    let names: Vec<String> = run("name").lines().map(str::to_owned).collect();
    let mut expected: Vec<String> = lines.iter().map(|r| r["app"].as_str().unwrap().to_owned()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    expected.sort();
    assert_eq!(sorted, expected);

    let wide = run("wide");
    assert!(wide.lines().next().unwrap().contains("IDEMPOTENCY KEY"), "{wide}");
    // Details carry times of the run: compare one without digits.
    let whole =
        lines.iter().map(|r| r["detail"].as_str().unwrap()).filter(|d| !d.contains(char::is_numeric)).max_by_key(|d| d.len()).unwrap();
    assert!(whole.chars().count() > 100 && wide.contains(whole) && !wide.contains('…'), "wide keeps the detail whole: {whole}");
    let table = run("table");
    assert!(!table.contains(whole) && table.contains('…'), "the table cuts it");
    assert_eq!(table.lines().count(), lines.len() + 1, "a header and a row an app");
    for bad in ["text", "markdown"] {
        let o = medic(&["sweep", "--simulate", "--dry-run", "-o", bad], None);
        assert_eq!(o.status.code(), Some(2), "-o {bad} is not a sweep's format: {}", stderr(&o));
    }
}

/// Issue 26: `decide` on one app prints its decision object on one line; on a list `-o json` is
/// one array (argocd's one document), `jsonl` a decision a line, `yaml` one list, `name` the apps.
#[test]
fn decide_prints_one_object_for_one_app_and_one_document_for_a_list() {
    let one = medic(&["decide", "--app", "events/apps/hook-failed.json", "--now", NOW], None);
    assert_eq!(stdout(&one).lines().count(), 1, "{}", stdout(&one));
    assert!(serde_json::from_str::<serde_json::Value>(&stdout(&one)).unwrap().is_object());
    let dir = |format: &str| {
        let o = medic(&["decide", "--app", "events/apps", "--now", NOW, "-o", format], None);
        assert!(o.status.success(), "-o {format}: {}", stderr(&o));
        stdout(&o)
    };
    let apps = std::fs::read_dir(root().join("events/apps")).unwrap().count();
    let array: serde_json::Value = serde_json::from_str(&dir("json")).expect("one document");
    assert_eq!(array.as_array().map(Vec::len), Some(apps));
    let lines: Vec<serde_json::Value> = dir("jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(serde_json::Value::from(lines), array);
    let yaml: serde_json::Value = serde_norway::from_str(&dir("yaml")).unwrap();
    assert_eq!(yaml, array);
    assert_eq!(dir("name").lines().count(), apps);
    assert!(dir("wide").lines().next().unwrap().contains("RULE"));
}

/// Issue 26 (newcomer review row 35: pressing a button locally took the simulator's token and
/// channel from the source and an HMAC by hand): `medic serve --slack-simulate` prints the line
/// to run, and `medic slack click APP BUTTON` presses it as Slack would, through serve's
/// signature check and allow-list: the sync is started and its reply printed; a button the
/// escalation does not offer is named with those it does; a user off the allow-list is refused.
#[test]
fn slack_click_presses_an_escalation_s_button_through_serve_s_checks() {
    let run = Streaming::start(&["serve", "--simulate", "--slack-simulate", "--listen", "127.0.0.1:0", "--sweep-every", "600"], "click");
    let mut err = Vec::new();
    let (_, line) =
        Streaming::first(&run.err, run.started, std::time::Duration::from_secs(30), |l| l.contains("press a button:"), &mut err)
            .unwrap_or_else(|| panic!("serve prints how to press a button: {err:?}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let setting = |name: &str| words.iter().find_map(|w| w.strip_prefix(&format!("{name}="))).unwrap_or_else(|| panic!("{name} in {line}"));
    let (api, secret) = (setting("SLACK_API_URL").to_owned(), setting("SLACK_SIGNING_SECRET").to_owned());
    let to = words.iter().skip_while(|w| **w != "--to").nth(1).expect("--to URL").to_string();
    let click = |app: &str, button: &str, extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_medic"))
            .args(["slack", "click", app, button, "--to", &to, "--wait", "30s"])
            .args(extra)
            .env("SLACK_API_URL", &api)
            .env("SLACK_SIGNING_SECRET", &secret)
            .env_remove("SLACK_TOKEN")
            .env_remove("SLACK_CHANNEL")
            .output()
            .unwrap()
    };
    // Escalations are posted at Slack's pace: storefront's comes within a few seconds.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let pressed = loop {
        let o = click("storefront", "sync", &[]);
        if o.status.success() || std::time::Instant::now() > deadline {
            break o;
        }
        assert!(stderr(&o).contains("no escalation of storefront"), "{}", stderr(&o));
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    assert!(pressed.status.success(), "{}", stderr(&pressed));
    let out = stdout(&pressed);
    assert!(out.starts_with("200 {\"accepted\":true}"), "{out}");
    assert!(out.contains("reply in the thread: sync by ULOCALUSER: sync started"), "{out}");

    let unknown = click("argocd/storefront", "bogus", &[]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("offers no button `bogus`; it offers: Sync, Hard refresh"), "{}", stderr(&unknown));
    let refused = click("storefront", "hard refresh", &["--user", "U0MALLORY1"]);
    assert_eq!(refused.status.code(), Some(1), "{}", stdout(&refused));
    assert!(stdout(&refused).starts_with("403 "), "{}", stdout(&refused));
    let (code, _, _) = run.interrupt();
    assert_eq!(code, Some(0));
}

/// argocd v3.5.1's handling of a command it does not know, step by step (cmd/main.go:86-104,
/// cmd/argocd/commands/plugin.go:67-120): `exec.LookPath("argocd-" + os.Args[1])` on the PATH,
/// then the plugin is run with `os.Args[2:]`, the environment and stdio as they are, and argocd
/// exits with the plugin's status. (The argocd CLI itself cannot be installed here: no reachable
/// registry ships it, and building it needs a Go and a module proxy this machine lacks.)
fn argocd_plugin(path: &std::ffi::OsStr, argocd_args: &[&str]) -> Output {
    use std::os::unix::fs::PermissionsExt;
    let (name, rest) = argocd_args.split_first().expect("a command");
    let plugin = std::env::split_paths(path)
        .map(|dir| dir.join(format!("argocd-{name}")))
        .find(|p| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
        .unwrap_or_else(|| panic!("argocd: unknown command \"{name}\" for \"argocd\" (no argocd-{name} on the PATH)"));
    Command::new(plugin).args(rest).env("PATH", path).current_dir(root()).output().unwrap()
}

/// Issue 26: installed also as `argocd-medic`, `medic` is Argo CD's CLI plugin: `argocd medic
/// sweep --server ... --auth-token ...` sweeps, its status is medic's, and its help says `argocd
/// medic`.
#[test]
fn argocd_runs_medic_as_its_plugin_argocd_medic() {
    let sim = sim_process();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_argocd-medic")).parent().unwrap();
    let path = std::env::join_paths([bin, std::path::Path::new("/usr/bin"), std::path::Path::new("/bin")]).unwrap();
    let state = state_file("plugin");
    let state = state.to_str().unwrap();
    let sweep = |token: &str| {
        argocd_plugin(
            &path,
            &[
                "medic",
                "sweep",
                "--server",
                &sim.server,
                "--auth-token",
                token,
                "--plaintext",
                "--dry-run",
                "-o",
                "jsonl",
                "--state",
                state,
            ],
        )
    };
    let o = sweep(&sim.token);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = json_lines(&o);
    assert!(
        rows.len() > 20 && rows.iter().all(|r| r["result"] == "dry_run" || r["result"] == "waiting" || r["result"] == "no_action"),
        "{rows:?}"
    );
    assert_eq!(sweep("a.b.c").status.code(), Some(4), "a refused token: medic's status is argocd's");
    let help = argocd_plugin(&path, &["medic", "--help"]);
    assert!(stdout(&help).contains("Usage: argocd medic [OPTIONS] <COMMAND>"), "{}", stdout(&help));
}

/// Newcomer review row 42: a listener that accepts and never answers held a sweep 55-90 s, and
/// nothing said what bounds the wait. --request-timeout and --retry-for bound it, and the error
/// names them.
#[test]
fn a_silent_argo_cd_is_given_up_within_the_timeouts_given_and_the_error_names_them() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().take(16) {
            held.push(stream);
        }
    });
    let started = std::time::Instant::now();
    let o = sweep_with(
        &["--server", &addr, "--plaintext", "--auth-token", "a.b.c", "--request-timeout", "1s", "--retry-for", "0"],
        &[],
        "silent",
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "given up after {:?}", started.elapsed());
    assert!(stderr(&o).contains("--request-timeout (30s)") && stderr(&o).contains("--retry-for"), "{}", stderr(&o));
}

/// Newcomer review rows 1, 24, 33 and h10/h11, each a line of polish:
/// - an escalation is the table's row, not also a WARN line; `--loglevel info` shows it;
/// - hard refreshes are counted apart from refreshes;
/// - a --trigger Argo Medic does not know is a usage error naming those it knows;
/// - -p and -l are argocd's short forms;
/// - `incidents` without a state file says --simulate keeps state in memory.
#[test]
fn small_habits_of_a_sweep_decide_and_incidents() {
    let o = medic(&["sweep", "--simulate", "-p", "payments", "-p", "platform", "-p", "default", "-l", ""], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("escalation"), "no WARN line per escalated row: {}", stderr(&o));
    let summary = stderr(&o).lines().find(|l| l.contains(" looked at,")).unwrap().to_owned();
    let o = medic(&["sweep", "--simulate"], None);
    let all = stderr(&o).lines().find(|l| l.contains(" looked at,")).unwrap().to_owned();
    assert!(all.contains("4 refreshed, 1 hard refreshed"), "{all}");
    assert_ne!(summary, all, "-p narrows the sweep: {summary}");
    let o = medic(&["sweep", "--simulate", "--loglevel", "info"], None);
    assert!(stderr(&o).contains(" INFO ") && stderr(&o).contains("escalation"), "{}", stderr(&o));

    let o = medic(&["decide", "--app", "events/apps/hook-failed.json", "--trigger", "bogus-trigger"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not a trigger Argo Medic knows; one of on-sync-failed"), "{}", stderr(&o));

    let nowhere = state_file("no-state");
    let o = medic(&["incidents", "--state", nowhere.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("with --simulate they keep state in memory"), "{}", stderr(&o));
}

/// Newcomer review h13: as `argocd version`, medic's version and the server's.
#[test]
fn version_prints_medic_s_and_the_argo_cd_server_s() {
    let sim = sim_process();
    let o = Command::new(env!("CARGO_BIN_EXE_medic"))
        .args(["version", "--server", &sim.server, "--auth-token", &sim.token])
        .env_remove("ARGOCD_SERVER")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with(&format!("medic: {}\n", env!("CARGO_PKG_VERSION"))), "{out}");
    assert!(out.lines().nth(1).is_some_and(|l| l.starts_with("argocd-server: v3.5.1")), "{out}");
    let client = Command::new(env!("CARGO_BIN_EXE_medic")).args(["version", "--client", "--server", "127.0.0.1:1"]).output().unwrap();
    assert!(client.status.success() && stdout(&client).lines().count() == 1, "{}", stdout(&client));
}

/// Issue 29: `medic decide` says which trust level applies to the action and what set it; an
/// app's annotation makes it stricter, never looser.
#[test]
fn decide_says_which_trust_level_applies_and_what_set_it() {
    let dir = std::env::temp_dir().join(format!("medic-cli-trust-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("policy.json");
    std::fs::write(
        &config,
        r#"{"trust": {"default": "act", "rules": [{"projects": ["payments"], "actions": ["refresh"], "level": "propose"}]}}"#,
    )
    .unwrap();
    let args = ["decide", "--app", "events/apps/stale-reconcile.json", "--now", NOW, "--trigger", "on-sync-running", "--config"];
    let o = medic(&[&args[..], &[config.to_str().unwrap()]].concat(), None);
    assert!(o.status.success(), "{}", stderr(&o));
    let d = &json_lines(&o)[0];
    assert_eq!(d["action"], "refresh");
    assert_eq!(d["trust"]["level"], "propose");
    assert_eq!(d["trust"]["why"], "trust rule 1 of the policy");

    let text = medic(&[&args[..], &[config.to_str().unwrap(), "-o", "text"]].concat(), None);
    assert!(stdout(&text).contains("trust: propose (offered to a person in Slack"), "{}", stdout(&text));

    let mut app: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("events/apps/stale-reconcile.json")).unwrap()).unwrap();
    app["metadata"]["annotations"]["argo-medic.io/trust"] = "observe".into();
    let o = medic(&["decide", "--app", "-", "--now", NOW, "--config", config.to_str().unwrap()], Some(&app.to_string()));
    let d = &json_lines(&o)[0];
    assert_eq!((d["trust"]["level"].as_str(), d["action"].as_str()), (Some("observe"), Some("refresh")), "{d}");
    assert!(d["trust"]["why"].as_str().unwrap().contains("argo-medic.io/trust"));
}

/// Issue 29: `medic sweep` has no Slack, so nobody can approve a proposal: it says so at start,
/// and what the policy would propose is observed (recorded, not performed) while the refreshes a
/// rule lets act are made.
#[test]
fn sweep_without_slack_observes_what_it_would_propose_and_says_so() {
    let dir = std::env::temp_dir().join(format!("medic-cli-propose-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("policy.json");
    std::fs::write(&config, r#"{"trust": {"default": "propose", "rules": [{"actions": ["refresh"], "level": "act"}]}}"#).unwrap();
    let o = medic(&["sweep", "--simulate", "-o", "jsonl", "--config", config.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("`propose` needs Slack"), "{err}");
    let calls = err.lines().find(|l| l.contains("Argo CD calls")).unwrap().to_owned();
    assert!(calls.contains("sync 0"), "no sync without an approval: {calls}");
    assert!(!calls.contains(", refresh 0,"), "the refreshes act: {calls}");
    let reports = json_lines(&o);
    let result = |app: &str| reports.iter().find(|r| r["app"] == format!("argocd/{app}")).map(|r| r["result"].as_str().unwrap().to_owned());
    assert_eq!(result("inventory").as_deref(), Some("refreshed"));
    assert_eq!(result("observability").as_deref(), Some("dry_run"), "the sync is observed");
}

/// Issue 29: `medic freeze list` says why Argo CD's sync windows are missing, and a failed read
/// of them still prints the freezes, with the exit code of an unreachable Argo CD: no server named; Argo Medic's own token
/// (which may not get projects); an Argo CD that does not answer.
#[test]
fn freeze_list_says_why_argo_cds_sync_windows_are_missing() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let moto = medic_sim::moto::moto();
    let table = medic_sim::moto::unique("cli-freeze-windows");
    runtime.block_on(async {
        let sdk = medic_adapters::aws::sdk_config(Some(&moto.url)).await;
        medic_adapters::dynamodb::create_table(&aws_sdk_dynamodb::Client::new(&sdk), &table).await.unwrap();
    });
    let config = medic_sim::SimConfig { sync_windows: vec![medic_sim::SyncWindowRule::deny("payments")], ..Default::default() };
    let argo = runtime.block_on(medic_sim::ArgoSim::start(config)).unwrap();
    let list = |env: &[(&str, &str)]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_medic"));
        command
            .args(["freeze", "list", "--table", &table, "--endpoint-url", &moto.url, "--retry-for", "0"])
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test");
        for var in ["ARGOCD_SERVER", "ARGOCD_AUTH_TOKEN", "ARGOCD_OPTS"] {
            command.env_remove(var);
        }
        command.envs(env.iter().copied()).output().unwrap()
    };

    let unnamed = list(&[]);
    assert!(unnamed.status.success(), "{}", stderr(&unnamed));
    assert_eq!(String::from_utf8_lossy(&unnamed.stdout), "no freezes\n");
    assert!(stderr(&unnamed).contains("Argo CD's own sync windows are not shown: give --server"), "{}", stderr(&unnamed));

    let own_token = list(&[("ARGOCD_SERVER", &argo.base_url()), ("ARGOCD_AUTH_TOKEN", medic_sim::DEFAULT_TOKEN)]);
    assert!(own_token.status.success(), "{}", stderr(&own_token));
    assert!(stderr(&own_token).contains("this token may get no AppProject"), "{}", stderr(&own_token));

    let down = list(&[("ARGOCD_SERVER", "127.0.0.1:1"), ("ARGOCD_AUTH_TOKEN", medic_sim::DEFAULT_TOKEN), ("ARGOCD_PLAINTEXT", "true")]);
    assert_eq!(down.status.code(), Some(3), "unreachable, as `medic sweep` says it: {}", stderr(&down));
    assert_eq!(String::from_utf8_lossy(&down.stdout), "no freezes\n", "the freezes first, whatever Argo CD does");
    assert!(stderr(&down).contains("could not read Argo CD's sync windows"), "{}", stderr(&down));
}

/// Issue 29: docs/operations.md's freeze block, run as written against a stack table in moto:
/// the freezes it sets are the ones the functions read (`SwitchStore::read_freezes`), `list`
/// shows them, and `lift` ends the one it names.
#[test]
fn the_freeze_commands_of_the_operations_guide_set_list_and_lift_freezes() {
    use medic_core::freeze::FreezeScope;
    use medic_core::switch::SwitchStore;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let moto = medic_sim::moto::moto();
    let table = medic_sim::moto::unique("cli-freeze");
    let store = runtime.block_on(async {
        let sdk = medic_adapters::aws::sdk_config(Some(&moto.url)).await;
        let ddb = aws_sdk_dynamodb::Client::new(&sdk);
        medic_adapters::dynamodb::create_table(&ddb, &table).await.unwrap();
        medic_adapters::dynamodb::DynamoDbStore::new(ddb, table.clone(), "default")
    });
    // Argo CD, with a window of the payments project active now and one later; the operator's
    // token may get projects.
    let mut config = medic_sim::SimConfig {
        sync_windows: vec![
            medic_sim::SyncWindowRule::deny("payments"),
            medic_sim::SyncWindowRule { project: "payments".into(), manual_sync: true, sync_overrun: false, active: false },
        ],
        ..Default::default()
    };
    let operator = medic_sim::TokenGrant::for_subject("ops-alice");
    config.tokens.push(operator.clone());
    config.policies.push(medic_sim::Policy::projects("ops-alice", "get", "*"));
    let argo = runtime.block_on(medic_sim::ArgoSim::start(config)).unwrap();

    let doc = std::fs::read_to_string(root().join("docs/operations.md")).unwrap();
    let start = doc.find("<!-- executed: cli/tests/cli.rs").expect("the freeze block's marker");
    let block: Vec<&str> =
        doc[start..].lines().skip_while(|l| !l.starts_with("```sh")).skip(1).take_while(|l| !l.starts_with("```")).collect();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_medic"));
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let script = format!("set -euo pipefail\nout() {{ [[ \"$1\" == StateTableName ]] && echo {table}; }}\n{}", block.join("\n"));
    let ran = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(root())
        .env("PATH", path)
        .env("AWS_ENDPOINT_URL", &moto.url)
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("USER", "ops-alice")
        .env("ARGOCD_SERVER", argo.base_url())
        .env("ARGOCD_AUTH_TOKEN", &operator.token)
        .env_remove("ARGOCD_OPTS")
        .output()
        .unwrap();
    let (out, err) = (String::from_utf8_lossy(&ran.stdout).to_string(), String::from_utf8_lossy(&ran.stderr).to_string());
    assert!(ran.status.success(), "the guide's freeze block failed:\n{out}\n{err}");
    // Beside the freezes, Argo CD's own windows, with which is active now.
    let windows = out.split("Argo CD's own sync windows").nth(1).unwrap_or_else(|| panic!("no sync windows in the list:\n{out}"));
    let rows: Vec<Vec<&str>> = windows.lines().skip(2).map(|l| l.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect()).collect();
    assert_eq!(
        rows,
        [
            vec!["payments", "deny", "* * * * *", "24h", "UTC", "apps *", "no", "yes"],
            vec!["payments", "deny", "0 22 * * *", "8h", "UTC", "apps *", "yes", "no"],
        ],
        "{out}"
    );
    assert!(err.contains("stops Argo Medic, not Argo CD's auto-sync"), "{err}");

    let freezes = runtime.block_on(store.read_freezes()).unwrap();
    let scopes: Vec<_> = freezes.iter().map(|f| f.scope.clone()).collect();
    assert_eq!(freezes.len(), 2, "two set, a third set and lifted: {freezes:?}");
    assert!(scopes.contains(&FreezeScope::Project("payments".into())), "{scopes:?}");
    assert!(scopes.contains(&FreezeScope::App(medic_core::AppId::new("argocd", "checkout"))), "{scopes:?}");
    let payments = freezes.iter().find(|f| f.scope == FreezeScope::Project("payments".into())).unwrap();
    assert_eq!((payments.by.as_str(), payments.reason.as_str()), ("medic freeze (ops-alice)", "ledger migration, ask #payments"));
    assert_eq!((payments.until - payments.at).num_minutes(), 240);
    assert!(out.contains("project payments") && out.contains("frozen") && out.contains("watching the canary by hand"), "the list:\n{out}");

    // `medic incidents` of the stack says what is frozen.
    let listed = Command::new(&bin)
        .args(["incidents", "--table", &table, "--endpoint-url", &moto.url])
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&listed.stderr);
    assert!(listed.status.success() && said.contains("project payments is frozen until"), "{said}");

    // Refused: no scope, no reason, too long.
    let medic_on = |args: &[&str]| {
        Command::new(&bin)
            .args(args)
            .args(["--table", &table, "--endpoint-url", &moto.url])
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .output()
            .unwrap()
    };
    for (args, why) in [
        (&["freeze", "--for", "1h", "--reason", "x"][..], "name what to freeze"),
        (&["freeze", "web", "--for", "1h"][..], "say why"),
        (&["freeze", "web", "--for", "30d", "--reason", "x"][..], "at most 14 days"),
    ] {
        let o = medic_on(args);
        assert!(
            !o.status.success() && String::from_utf8_lossy(&o.stderr).contains(why),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
