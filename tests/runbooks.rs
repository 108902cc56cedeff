//! Commands the docs tell an operator to run, executed as written: the AWS CLI of the project's
//! virtualenv against moto. What a page tells a person to type in an emergency must work.

use std::path::PathBuf;
use std::process::Command;

use medic_adapters::dynamodb::{DynamoDbStore, create_table};
use medic_core::switch::Mode;
use medic_sim::moto::{moto, unique};

use crate::support::events_dir;

/// The shell block of `doc` that follows `marker`, as written.
fn block_after(doc: &str, marker: &str) -> String {
    let text = std::fs::read_to_string(events_dir().join("..").join(doc)).unwrap();
    let start = text.find(marker).unwrap_or_else(|| panic!("{doc} has no `{marker}`"));
    let mut lines = text[start..].lines().skip_while(|l| !l.trim_start().starts_with("```sh")).skip(1);
    let body: Vec<&str> = lines.by_ref().take_while(|l| !l.trim_start().starts_with("```")).map(str::trim_start).collect();
    assert!(!body.is_empty(), "{doc}: an empty block after `{marker}`");
    body.join("\n")
}

/// The virtualenv's `aws` (scripts/python-env.sh installs it with moto).
fn aws_cli_dir() -> PathBuf {
    let dir = medic_sim::workspace_root().join(".venv/bin");
    assert!(dir.join("aws").exists(), "the AWS CLI is not at {}: run `make venv` (scripts/python-env.sh)", dir.display());
    dir
}

/// Runs `script` with bash, the AWS CLI on the path and every AWS call sent to moto.
fn run(script: &str, stack_outputs: &[(&str, &str)]) -> std::process::Output {
    // `out NAME` is the runbook's helper for a stack output; here the outputs are moto's.
    let outputs: String = stack_outputs.iter().map(|(k, v)| format!("[[ \"$1\" == {k} ]] && echo {v}; ")).collect();
    let script = format!("set -euo pipefail\nout() {{ {outputs}true; }}\n{script}");
    let path = format!("{}:{}", aws_cli_dir().display(), std::env::var("PATH").unwrap_or_default());
    Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("PATH", path)
        .env("AWS_ENDPOINT_URL", &moto().url)
        .env("AWS_DEFAULT_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("USER", "ops-alice")
        .output()
        .expect("bash runs")
}

/// docs/operations.md's emergency stop with the AWS CLI: the functions' own reader sees `off`,
/// then `act`, with who set it.
#[tokio::test]
async fn the_switch_set_with_the_aws_cli_as_the_runbook_writes_it_is_the_one_the_functions_read() {
    let sdk = medic_adapters::aws::sdk_config(Some(&moto().url)).await;
    let ddb = aws_sdk_dynamodb::Client::new(&sdk);
    let table = unique("runbook-switch");
    create_table(&ddb, &table).await.unwrap();
    let store = DynamoDbStore::new(ddb, table.clone(), "default");

    let block = block_after("docs/operations.md", "<!-- executed: tests/runbooks.rs");
    let ran = run(&block, &[("StateTableName", &table)]);
    assert!(ran.status.success(), "the runbook's block failed:\n{}", String::from_utf8_lossy(&ran.stderr));
    let record = store.switch_record().await.unwrap().expect("the switch is set");
    assert_eq!(record.mode, Mode::Off);
    assert_eq!(record.set_by, "ops-alice (aws cli)");
    assert!(chrono::DateTime::parse_from_rfc3339(&record.set_at).is_ok(), "{}", record.set_at);

    // Its other modes, through the same function the block defines.
    for (mode, expected) in [("dry-run", Mode::DryRun), ("act", Mode::Act)] {
        let ran = run(
            &format!("{}\nswitch {mode}", block.lines().filter(|l| !l.starts_with("switch ")).collect::<Vec<_>>().join("\n")),
            &[("StateTableName", &table)],
        );
        assert!(ran.status.success(), "{mode}: {}", String::from_utf8_lossy(&ran.stderr));
        assert_eq!(store.switch_record().await.unwrap().unwrap().mode, expected);
    }
}
