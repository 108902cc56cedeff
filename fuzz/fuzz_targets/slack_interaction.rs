//! A button click as Slack POSTs it to slack-actions: the form body (`payload=<JSON>`) is the
//! fuzzer's, signed by the harness with the signing secret and the current timestamp, so every
//! input gets past the signature and freshness checks into the form decoding, the payload's JSON,
//! the button id, the store lookup, the allow-list and the enqueue. slack-actions runs with
//! in-memory twins of its ports; the store knows the sample click's button
//! (events/lambda/slack-actions/block-actions-sync.json), for `U0ALICE001` on project `payments`.
//!
//! Properties: no panic, no hang, no unbounded allocation; never a 5xx; at most one work item per
//! request, and one only when slack-actions says it accepted the click.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use medic_slack::MemoryEscalationStore;
use medic_core::human_action::HumanActionRequest;
use medic_core::event::{AppRef, WorkItemKey};
use medic_core::ports::EscalationStore;
use medic_core::{FailureMode, HumanAction};
use medic_slack_actions::{ActionsConfig, AllowList, SIGNATURE_HEADER, SigningSecret, SlackActions, TIMESTAMP_HEADER};

const SIGNING_SECRET: &str = "a-slack-signing-secret-for-fuzzing";
const BUTTON: &str = "amact-5d0c6b7e2f9a41c8b3e6d1f0a7c2e94b";

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime"))
}

fn button() -> &'static serde_json::Value {
    static DOC: OnceLock<serde_json::Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let request = HumanActionRequest {
            id: BUTTON.into(),
            action: HumanAction::HardRefresh,
            incident_id: "inc-3f1c2a9b8d7e6f5a4b3c".into(),
            app: AppRef { name: "accounts".into(), namespace: "argocd".into(), project: Some("payments".into()) },
            failure_mode: FailureMode::HookFailed,
            sync: None,
            idempotency_key: medic_core::human_action::human_action_key(BUTTON),
            offered_at: chrono::DateTime::from_timestamp(1_793_536_201, 0).expect("a valid instant"),
            incident_began: None,
        };
        serde_json::to_value(request).expect("a request serialises")
    })
}

fuzz_target!(|data: &[u8]| {
    let rt = runtime();
    let config = ActionsConfig {
        work_item_key: WorkItemKey::new("a-work-item-key-of-at-least-32-bytes-for-fuzzing"),
        ..ActionsConfig::default()
    };
    let allow = AllowList::from_json(r#"{"payments": ["U0ALICE001"], "*": ["U0ADMIN001"]}"#).expect("a valid allow-list");
    let actions: SlackActions<_, _, _> = medic_stack::twins::MemoryState::default().adapters((), (), "fuzz").interactions(
        config,
        SigningSecret::new(SIGNING_SECRET, None),
        allow,
        MemoryEscalationStore::default(),
    );
    let stored = rt.block_on(actions.actions.store("action", BUTTON, button(), None, Duration::from_secs(3600)));
    assert_eq!(stored, Ok(true));

    let timestamp = chrono::Utc::now().timestamp().to_string();
    let signature = actions.secret.sign(&timestamp, data);
    let req = lambda_http::http::Request::builder()
        .method("POST")
        .uri("/")
        .header("content-type", "application/x-www-form-urlencoded")
        .header(TIMESTAMP_HEADER, &timestamp)
        .header(SIGNATURE_HEADER, &signature)
        .body(lambda_http::Body::from(data.to_vec()))
        .expect("a valid request");

    let response = rt.block_on(actions.handle(req));
    let status = response.status();
    assert!(!status.is_server_error(), "slack-actions answered {status}");
    let body: serde_json::Value = serde_json::from_str(response.body()).expect("a JSON answer");
    let accepted = status.as_u16() == 200 && body["accepted"] == true;
    if debug() {
        eprintln!("{status} {body}");
    }
    assert_eq!(actions.queue.len(), usize::from(accepted), "{status} {body}");
});

/// `FUZZ_DEBUG=1 <binary> <input>` prints each answer (to see how deep a seed gets).
fn debug() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("FUZZ_DEBUG").is_some())
}
