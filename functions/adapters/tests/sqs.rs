//! `SqsWorkQueue` against a real moto_server: bodies, delays, batches, errors and the dead-letter
//! queue a redrive policy feeds.

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use aws_sdk_sqs::types::{Message, QueueAttributeName};
use chrono::{TimeZone, Utc};
use common::{moto, sqs, unique};
use medic_adapters::sqs::SqsWorkQueue;
use medic_core::Trigger;
use medic_core::event::{AppRef, WorkItem, WorkKind};
use medic_core::ports::WorkQueue;

fn item(name: &str) -> WorkItem {
    let app = AppRef { name: name.into(), namespace: "argocd".into(), project: Some("default".into()) };
    let now = Utc.with_ymd_and_hms(2026, 11, 1, 12, 0, 0).unwrap();
    WorkItem::for_app(WorkKind::Sweep, app, Trigger::sweep(), "2026-11-01T12:00", now)
}

async fn queue(client: &aws_sdk_sqs::Client, prefix: &str) -> String {
    client.create_queue().queue_name(unique(prefix)).send().await.unwrap().queue_url().unwrap().to_owned()
}

/// Receives what is visible now (no long polling), hiding it for `visibility` seconds.
async fn receive(client: &aws_sdk_sqs::Client, url: &str, visibility: i32) -> Vec<Message> {
    let out = client.receive_message().queue_url(url).max_number_of_messages(10).visibility_timeout(visibility).send().await.unwrap();
    out.messages.unwrap_or_default()
}

fn parse(message: &Message) -> WorkItem {
    WorkItem::parse(message.body().unwrap().as_bytes(), Utc::now()).unwrap()
}

#[tokio::test]
async fn an_enqueued_item_arrives_as_the_work_item_json_the_worker_parses() {
    let client = sqs().await;
    let url = queue(&client, "enqueue").await;
    let q = SqsWorkQueue::new(client.clone(), &url);
    let sent = item("web");
    q.enqueue(&sent, Duration::ZERO).await.unwrap();
    let got = receive(&client, &url, 30).await;
    assert_eq!(got.len(), 1);
    assert_eq!(parse(&got[0]), sent);
    assert_eq!(serde_json::from_str::<serde_json::Value>(got[0].body().unwrap()).unwrap()["kind"], "sweep");
}

#[tokio::test]
async fn a_delayed_item_is_not_visible_until_its_delay_has_passed() {
    let client = sqs().await;
    let url = queue(&client, "delay").await;
    let q = SqsWorkQueue::new(client.clone(), &url);
    let started = Instant::now();
    q.enqueue(&item("web"), Duration::from_secs(2)).await.unwrap();
    assert!(receive(&client, &url, 30).await.is_empty(), "a message delayed by 2 s was visible at once");
    let mut got = Vec::new();
    while got.is_empty() && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        got = receive(&client, &url, 30).await;
    }
    assert_eq!(got.len(), 1, "the delayed message never arrived");
    assert!(started.elapsed() >= Duration::from_millis(1900), "arrived after {:?}", started.elapsed());
    assert_eq!(parse(&got[0]).app.name, "web");
}

#[tokio::test]
async fn a_delay_beyond_fifteen_minutes_is_refused_and_nothing_is_sent() {
    let client = sqs().await;
    let url = queue(&client, "long-delay").await;
    let q = SqsWorkQueue::new(client.clone(), &url);
    let err = q.enqueue(&item("web"), Duration::from_secs(901)).await.unwrap_err();
    assert!(err.what().contains("901s") && err.what().contains("900s"), "{err}");
    q.enqueue(&item("web"), Duration::from_secs(900)).await.unwrap();
    let attrs = client
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .send()
        .await
        .unwrap();
    let count = |name: QueueAttributeName| attrs.attributes().and_then(|a| a.get(&name)).map(String::as_str).unwrap_or("?").to_owned();
    // Only the 900 s message, and it is delayed.
    assert_eq!(count(QueueAttributeName::ApproximateNumberOfMessagesDelayed), "1");
    assert_eq!(count(QueueAttributeName::ApproximateNumberOfMessages), "0");
}

#[tokio::test]
async fn send_batch_enqueues_every_item_in_chunks_of_ten() {
    let client = sqs().await;
    let url = queue(&client, "batch").await;
    let q = SqsWorkQueue::new(client.clone(), &url);
    let items: Vec<WorkItem> = (0..23).map(|i| item(&format!("app-{i}"))).collect();
    q.send_batch(&items).await.unwrap();
    q.send_batch(&[]).await.unwrap();
    let mut received = BTreeSet::new();
    for _ in 0..20 {
        let got = receive(&client, &url, 300).await;
        if got.is_empty() {
            break;
        }
        received.extend(got.iter().map(|m| parse(m).dedupe_key));
    }
    let expected: BTreeSet<String> = items.iter().map(|i| i.dedupe_key.clone()).collect();
    assert_eq!(received, expected);
}

#[tokio::test]
async fn send_batch_names_every_item_it_could_not_enqueue() {
    let client = sqs().await;
    let q = SqsWorkQueue::new(client, format!("{}/123456789012/{}", moto().url, unique("missing")));
    let items: Vec<WorkItem> = (0..12).map(|i| item(&format!("app-{i}"))).collect();
    let failures = q.send_batch_failures(&items).await;
    assert_eq!(failures.iter().map(|f| f.index).collect::<Vec<_>>(), (0..12).collect::<Vec<_>>());
    assert_eq!(failures[11].app, "argocd/app-11");
    let err = q.send_batch(&items).await.unwrap_err().to_string();
    assert!(err.contains("12 of 12 items not enqueued"), "{err}");
    for i in &items {
        assert!(err.contains(&i.dedupe_key), "{err}");
    }
    assert!(err.contains("SendMessageBatch: ") && err.contains("NonExistentQueue"), "{err}");
}

#[tokio::test]
async fn send_batch_keeps_going_after_a_failed_chunk_and_names_only_its_items() {
    let client = sqs().await;
    // Bodies over 1 KiB are refused by this queue: item 11 makes the second chunk (10 and 11) fail.
    let url = client
        .create_queue()
        .queue_name(unique("small"))
        .attributes(QueueAttributeName::MaximumMessageSize, "1024")
        .send()
        .await
        .unwrap()
        .queue_url()
        .unwrap()
        .to_owned();
    let q = SqsWorkQueue::new(client.clone(), &url);
    let mut items: Vec<WorkItem> = (0..12).map(|i| item(&format!("app-{i}"))).collect();
    items[11].requested_by = Some("x".repeat(2000));
    let failures = q.send_batch_failures(&items).await;
    assert_eq!(failures.iter().map(|f| f.index).collect::<Vec<_>>(), vec![10, 11]);
    assert!(failures.iter().all(|f| f.reason.starts_with("SendMessageBatch: ")), "{failures:?}");
    let mut received = BTreeSet::new();
    for _ in 0..5 {
        let got = receive(&client, &url, 300).await;
        if got.is_empty() {
            break;
        }
        received.extend(got.iter().map(|m| parse(m).dedupe_key));
    }
    let expected: BTreeSet<String> = items[..10].iter().map(|i| i.dedupe_key.clone()).collect();
    assert_eq!(received, expected);
}

#[tokio::test]
async fn queue_errors_carry_the_service_code_and_message_not_a_debug_dump() {
    let client = sqs().await;
    let q = SqsWorkQueue::new(client, format!("{}/123456789012/{}", moto().url, unique("missing")));
    let err = q.enqueue(&item("web"), Duration::ZERO).await.unwrap_err().to_string();
    assert!(err.starts_with("work queue: SendMessage: "), "{err}");
    assert!(err.contains("NonExistentQueue"), "{err}");
    assert!(!err.contains("ServiceError {") && !err.contains("raw:") && !err.contains("ErrorMetadata"), "{err}");
}

#[tokio::test]
async fn a_message_received_max_receive_count_times_moves_to_the_dead_letter_queue() {
    let client = sqs().await;
    let dlq = queue(&client, "dlq").await;
    let attrs = client.get_queue_attributes().queue_url(&dlq).attribute_names(QueueAttributeName::QueueArn).send().await.unwrap();
    let dlq_arn = attrs.attributes().and_then(|a| a.get(&QueueAttributeName::QueueArn)).unwrap().clone();
    let redrive = serde_json::json!({ "deadLetterTargetArn": dlq_arn, "maxReceiveCount": "2" }).to_string();
    let url = client
        .create_queue()
        .queue_name(unique("work"))
        .attributes(QueueAttributeName::RedrivePolicy, redrive)
        .send()
        .await
        .unwrap()
        .queue_url()
        .unwrap()
        .to_owned();

    let sent = item("poison");
    SqsWorkQueue::new(client.clone(), &url).enqueue(&sent, Duration::ZERO).await.unwrap();
    // Two failed deliveries: received and not deleted, visible again at once.
    for delivery in 1..=2 {
        let got = receive(&client, &url, 0).await;
        assert_eq!(got.len(), 1, "delivery {delivery}");
    }
    assert!(receive(&client, &url, 0).await.is_empty(), "the message was delivered a third time");
    let dead = receive(&client, &dlq, 30).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(parse(&dead[0]), sent);
}
