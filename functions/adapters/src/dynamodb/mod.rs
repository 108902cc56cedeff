//! [`DynamoDbStore`]: the incident store, the dedupe store and the per-app lock on one DynamoDB
//! table. The same contracts as `MemoryIncidentStore` and the CLI's SQLite store.
//!
//! # The table
//!
//! One table, on demand (pay per request), created by [`create_table`] or the SAM template:
//! partition key `pk` (string), sort key `sk` (string), TTL on `expires_at` (epoch seconds).
//! `<instance>` is the Argo CD instance id and `<app>` is `namespace/name`.
//!
//! | item | `pk` | `sk` | other attributes |
//! | --- | --- | --- | --- |
//! | open incident | `APP#<instance>#<app>` | `INCIDENT` | `app`, `incident_id`, `incident` (the `IncidentKey` as JSON), `opened_at` (RFC 3339), optionally `last_decision` (the step's last `DecisionNote` as JSON: action, failure mode, project, reason, evidence, retry time, trigger, time; written by the worker after each step, read only by `medic incidents`). No expiry: deleted when the incident closes |
//! | closed incident | `APP#<instance>#<app>` | `CLOSED#<incident id>` | `app`, `incident_id`, `incident`, `opened_at`, `last_decision` (as the open incident had them), `closed_at` (RFC 3339), `expires_at` (`closed_at` + the retention, 7 days unless `MEDIC_HISTORY_DAYS` says otherwise). Written with the deletion of the open incident, in one transaction, so `medic incidents --closed` can list what closed recently; nothing in the pipeline reads it |
//! | action (idempotency record) | `APP#<instance>#<app>` | `ACTION#<incident id>#<idempotency key>` | `app`, `incident_id`, `idempotency_key`, `rung`, `at` (RFC 3339), `outcome` (serde names: `hard_refresh`, `no_effect`), `status` (`INPROGRESS` or `COMPLETED`), `in_progress_until` (epoch milliseconds, while in progress); `expires_at` only once the incident has closed (`closed_at` + 30 days): while the incident is open its actions are kept, however long it lasts |
//! | dedupe record | `DEDUPE#<instance>#<dedupe key>` | `-` | `seen_at` (RFC 3339), `expires_at`; a work item's record also `status` (`INPROGRESS` while a delivery handles it, then `COMPLETED`), `owner` (the delivery: message id and receive count) and `lease_until` (epoch milliseconds, while in progress). A record without `status` (markers, and releases before leases) is done |
//! | a decision | `DECISION#<instance>#<UTC day: YYYY-MM-DD>` | `<decided_at, RFC 3339 to the microsecond>#<app>` | `app`, `record` (the `DecisionRecord` as JSON: the decision, project, trigger, mode, the history decided on, and the fields of the Application the policy read, at most 16 KB), `expires_at` (`decided_at` + the retention, 7 days unless `MEDIC_HISTORY_DAYS` says otherwise). Written by the worker for every decision, at every trust level and in a dry run; read by `medic report` and `medic replay` with one `Query` per day |
//! | app lock | `LOCK#<instance>#<app>` | `-` | `owner`, `locked_at` (RFC 3339), `expires_at` |
//! | a shared budget | `BUDGET#<instance>#<kind>` (`refresh`, `hard_refresh`, `sync`) | `-` | `milli_tokens`, `at_ms` (epoch milliseconds), `version` (bumped by every write; each write is conditional on the version read). The token bucket the workers draw from (`medic_core::budget`). No expiry |
//! | the switch | `SWITCH#<instance>` | `-` | `mode` (`act`, `dry-run` or `off`), `set_by`, `set_at` (RFC 3339). Written by `medic switch`, read by the worker (cached 30 s per container). No expiry |
//! | a freeze | `FREEZE#<instance>` | `<freeze id>` (`frz-…`) | `doc` (the freeze as JSON: scope, until, reason, by, at), `expires_at` (`until` + 1 day). Written and lifted by `medic freeze`, read with the switch (cached 30 s per container); ended ones are ignored |
//!
//! An app's incident and its actions share a partition, so `history` is one `GetItem` and one
//! `Query` (`begins_with(sk, "ACTION#<incident id>#")`).
//!
//! # Claims
//!
//! As in Powertools' idempotency utility, a claim is a conditional write that succeeds when the
//! record does not exist, or is `INPROGRESS` and its `in_progress_until` has passed (a crashed
//! holder). The time compared is the attempt's own `at`, like the other stores. When the condition
//! fails the record is read back to answer `AlreadyDone(outcome)` or `Held { until }`.
//!
//! The action record and the open-incident item are written in one `TransactWriteItems`, so there
//! is never an action without its open incident nor an incident opened by a refused claim (the
//! SQLite store's transaction gives the same). Two separate writes would leave one of those states
//! behind after a crash between them, and a retry would then find its own claim `Held`. The price
//! is two write units per item and a retry when a concurrent transaction touches the same
//! incident item (`TransactionConflict`), which the claim does by itself a few times.
//!
//! TTL deletion is lazy (it can lag by a day or two), so every condition and read compares
//! `expires_at` or `in_progress_until` with the current time itself rather than trusting that an
//! expired item is gone.
//!
//! # How long actions are kept
//!
//! An incident's actions are its ladder: lose them while it is open and the ladder starts again
//! (a second escalation, a second Slack parent). So an action record carries no `expires_at`
//! while its incident is open; closing the incident sets `closed_at + ACTION_RETENTION` on its
//! actions in the same transaction, and reopening the same incident clears it again. Records
//! written by releases before this one carry `at + 30 days` from the claim; `history` clears that
//! on the open incident's actions when it meets it. The SQLite and memory stores keep the same
//! rules.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, ConditionCheck, Delete, KeySchemaElement, KeyType, Put, ScalarAttributeType,
    TableStatus, TimeToLiveSpecification, TimeToLiveStatus, TransactWriteItem,
};
use chrono::{DateTime, TimeDelta, Utc};
use medic_core::AppId;
use medic_core::incident::{Attempt, DecisionNote, History, IncidentRecord, Outcome};
use medic_core::keys::IdempotencyKey;
use medic_core::keys::IncidentKey;
use medic_core::ladder::Rung;
use medic_core::ports::{AppLock, Begun, Claim, DeliveryLeases, IncidentLedger, IncidentStore, MarkerStore, Seen, StoreError};

use crate::aws::describe;

mod budget;
mod decisions;
mod dedupe;
mod incidents;
mod switch;

pub use switch::SwitchRecord;

/// The TTL attribute (epoch seconds).
pub const TTL_ATTRIBUTE: &str = "expires_at";

/// How long action records are kept after their incident closed (the core's rule).
pub const ACTION_RETENTION: Duration = medic_core::incident::ACTION_RETENTION;

/// How long the record of a closed incident and a decision are kept unless
/// [`DynamoDbStore::with_retention`] says otherwise (for `medic incidents --closed` and
/// `medic report`).
pub const CLOSED_RETENTION: Duration = medic_core::record::DEFAULT_RETENTION;

const CLOSED_SK_PREFIX: &str = "CLOSED#";
/// The sort key prefix of an incident's timeline events: `EVENT#<incident id>#<event id>`.
const EVENT_SK_PREFIX: &str = "EVENT#";

/// Items per `TransactWriteItems` (DynamoDB's limit).
const MAX_TRANSACTION_ITEMS: usize = 100;

/// The least time a work item's dedupe record is kept, whatever its lease.
const DEDUPE_MIN_TTL: Duration = Duration::from_secs(3600);

const INCIDENT_SK: &str = "INCIDENT";
const SINGLETON_SK: &str = "-";
const IN_PROGRESS: &str = "INPROGRESS";
const COMPLETED: &str = "COMPLETED";

/// How often a claim is tried when its transaction is cancelled without an answer (a concurrent
/// transaction on the same items, an incident closed or replaced meanwhile).
const CLAIM_TRIES: u32 = 6;

type Item = HashMap<String, AttributeValue>;

/// Incidents, idempotency records, dedupe records and app locks of one Argo CD instance in one
/// DynamoDB table (see the module documentation for the layout).
#[derive(Debug, Clone)]
pub struct DynamoDbStore {
    client: Client,
    table: String,
    instance: String,
    /// How long a closed incident and a decision are kept (`MEDIC_HISTORY_DAYS`).
    retention: Duration,
}

impl DynamoDbStore {
    pub fn new(client: Client, table: impl Into<String>, instance: impl Into<String>) -> Self {
        Self { client, table: table.into(), instance: instance.into(), retention: CLOSED_RETENTION }
    }

    /// The store keeping closed incidents and decisions for `retention` instead of
    /// [`CLOSED_RETENTION`].
    pub fn with_retention(self, retention: Duration) -> Self {
        Self { retention, ..self }
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub fn instance(&self) -> &str {
        &self.instance
    }

    fn app_pk(&self, app: &AppId) -> String {
        format!("APP#{}#{app}", self.instance)
    }

    fn dedupe_pk(&self, key: &str) -> String {
        format!("DEDUPE#{}#{key}", self.instance)
    }

    fn lock_pk(&self, app: &AppId) -> String {
        format!("LOCK#{}#{app}", self.instance)
    }

    fn op(&self, operation: &str) -> String {
        format!("DynamoDB {operation} on {}", self.table)
    }

    /// Deletes the item when `attribute` still holds `value`; otherwise (someone else's now, or
    /// gone) leaves it, without an error.
    async fn delete_if(&self, pk: &str, sk: &str, (attribute, value): (&str, AttributeValue)) -> Result<(), StoreError> {
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(pk))
            .key("sk", s(sk))
            .condition_expression("#a = :v")
            .expression_attribute_names("#a", attribute)
            .expression_attribute_values(":v", value)
            .send()
            .await;
        match result {
            Err(e) if !is_conditional_failure(&e) => Err(crate::aws::store_error(&self.op("DeleteItem"), e)),
            _ => Ok(()),
        }
    }

    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(pk))
            .key("sk", s(sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| crate::aws::store_error(&self.op("GetItem"), e))?;
        Ok(out.item)
    }

    /// Every item of partition `pk` whose sort key starts with `prefix`, optionally filtered.
    async fn query(&self, pk: &str, prefix: &str, filter: Option<(&str, &str, AttributeValue)>) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let mut q = self
                .client
                .query()
                .table_name(&self.table)
                .consistent_read(true)
                .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
                .expression_attribute_names("#pk", "pk")
                .expression_attribute_names("#sk", "sk")
                .expression_attribute_values(":pk", s(pk))
                .expression_attribute_values(":prefix", s(prefix))
                .set_exclusive_start_key(start.take());
            if let Some((attribute, placeholder, value)) = &filter {
                q = q
                    .filter_expression(format!("#f = {placeholder}"))
                    .expression_attribute_names("#f", *attribute)
                    .expression_attribute_values(*placeholder, value.clone());
            }
            let out = q.send().await.map_err(|e| crate::aws::store_error(&self.op("Query"), e))?;
            items.extend(out.items.unwrap_or_default());
            match out.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(items),
            }
        }
    }

    /// The sort key of the action record of `key`, wherever its incident.
    async fn find_action(&self, app: &AppId, key: &IdempotencyKey) -> Result<Option<String>, StoreError> {
        let items = self.query(&self.app_pk(app), "ACTION#", Some(("idempotency_key", ":key", s(key.as_str())))).await?;
        items.first().map(|item| get_s(item, "sk").map(str::to_owned)).transpose()
    }

    /// The live action items of incident `incident_id` in partition `pk` (expired ones, which TTL
    /// has not deleted yet, left out).
    async fn action_items(&self, pk: &str, incident_id: &str) -> Result<Vec<Item>, StoreError> {
        let now = Utc::now().timestamp();
        let mut items = self.query(pk, &format!("ACTION#{incident_id}#"), None).await?;
        items.retain(|item| !expired(item, now));
        Ok(items)
    }

    /// The attempts of incident `incident_id` in partition `pk`, oldest first.
    async fn attempts(&self, pk: &str, incident_id: &str) -> Result<Vec<Attempt>, StoreError> {
        Self::to_attempts(self.action_items(pk, incident_id).await?)
    }

    fn to_attempts(items: Vec<Item>) -> Result<Vec<Attempt>, StoreError> {
        let mut attempts = Vec::new();
        for item in items {
            let pk = get_s(&item, "pk")?;
            attempts.push(Attempt {
                rung: parse_name::<Rung>(get_s(&item, "rung")?)?,
                at: get_s(&item, "at")?
                    .parse::<DateTime<Utc>>()
                    .map_err(|e| StoreError::invalid(format!("{pk}: `at` is not a time: {e}")))?,
                idempotency_key: IdempotencyKey::parse(get_s(&item, "idempotency_key")?),
                outcome: parse_name::<Outcome>(get_s(&item, "outcome")?)?,
            });
        }
        // Sort keys order by idempotency key; the history is ordered by time (stable for ties).
        attempts.sort_by_key(|a| a.at);
        Ok(attempts)
    }

    /// An open (`INCIDENT`) or closed (`CLOSED#…`) incident item as a record, with its attempts.
    async fn record(&self, item: &Item) -> Result<IncidentRecord, StoreError> {
        let pk = get_s(item, "pk")?;
        let time = |attribute: &str| -> Result<DateTime<Utc>, StoreError> {
            get_s(item, attribute)?
                .parse::<DateTime<Utc>>()
                .map_err(|e| StoreError::invalid(format!("{}: `{attribute}` is not a time: {e}", describe_item(item))))
        };
        let incident: IncidentKey = serde_json::from_str(get_s(item, "incident")?)
            .map_err(|e| StoreError::invalid(format!("{}: `incident` is not an incident: {e}", describe_item(item))))?;
        // A note this version cannot read is shown as absent rather than hiding the incident.
        let last_decision = match item.get("last_decision") {
            Some(AttributeValue::S(json)) => serde_json::from_str::<DecisionNote>(json).ok(),
            _ => None,
        };
        Ok(IncidentRecord {
            app: get_app(item)?,
            opened_at: time("opened_at")?,
            closed_at: if item.contains_key("closed_at") { Some(time("closed_at")?) } else { None },
            attempts: self.attempts(pk, &incident.id()).await?,
            incident,
            last_decision,
        })
    }

    /// The answer a record gives a claim made at `now_ms`, or `None` when it does not stand in
    /// the way (gone, or in progress past its expiry).
    async fn blocking_claim(&self, pk: &str, sk: &str, now_ms: i64) -> Result<Option<Claim>, StoreError> {
        let Some(item) = self.get(pk, sk).await? else { return Ok(None) };
        if expired(&item, now_ms.div_euclid(1000)) {
            return Ok(None);
        }
        match get_s(&item, "status")? {
            COMPLETED => Ok(Some(Claim::AlreadyDone(parse_name(get_s(&item, "outcome")?)?))),
            _ => {
                let until_ms = get_n(&item, "in_progress_until")?;
                if now_ms < until_ms {
                    let until = DateTime::from_timestamp_millis(until_ms)
                        .ok_or_else(|| StoreError::invalid(format!("{pk} {sk}: in_progress_until {until_ms} is out of range")))?;
                    Ok(Some(Claim::Held { until }))
                } else {
                    Ok(None)
                }
            }
        }
    }

    /// The update that sets an action record's expiry (`Some`: its incident closed) or removes it
    /// (`None`: its incident is open), if the record exists.
    fn expiry_write(&self, pk: &str, sk: &str, expires: Option<i64>) -> Result<TransactWriteItem, StoreError> {
        let update = aws_sdk_dynamodb::types::Update::builder()
            .table_name(&self.table)
            .key("pk", s(pk))
            .key("sk", s(sk))
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", "pk")
            .expression_attribute_names("#expires", TTL_ATTRIBUTE);
        let update = match expires {
            Some(at) => update.update_expression("SET #expires = :expires").expression_attribute_values(":expires", n(at)),
            None => update.update_expression("REMOVE #expires"),
        };
        Ok(TransactWriteItem::builder().update(update.build().map_err(build_err)?).build())
    }

    /// [`Self::expiry_write`] on its own, where a transaction has no room left for it. A record
    /// gone meanwhile is left gone.
    async fn set_expiry(&self, pk: &str, sk: &str, expires: Option<i64>) -> Result<(), StoreError> {
        let result = self.client.transact_write_items().transact_items(self.expiry_write(pk, sk, expires)?).send().await;
        match result {
            Err(e) if !e.as_service_error().is_some_and(|e| e.is_transaction_canceled_exception()) => {
                Err(crate::aws::store_error(&self.op("TransactWriteItems"), e))
            }
            _ => Ok(()),
        }
    }

    /// The write that makes `incident` the app's open incident, given the item there now.
    fn incident_write(
        &self,
        app: &AppId,
        pk: &str,
        incident: &IncidentKey,
        at: DateTime<Utc>,
        current: Option<&Item>,
    ) -> Result<TransactWriteItem, StoreError> {
        let id = incident.id();
        let current_id = current.map(|item| get_s(item, "incident_id")).transpose()?;
        if current_id == Some(id.as_str()) {
            // Already open: only check it is still there when the action is written.
            let check = ConditionCheck::builder()
                .table_name(&self.table)
                .key("pk", s(pk))
                .key("sk", s(INCIDENT_SK))
                .condition_expression("#id = :id")
                .expression_attribute_names("#id", "incident_id")
                .expression_attribute_values(":id", s(&id))
                .build()
                .map_err(build_err)?;
            return Ok(TransactWriteItem::builder().condition_check(check).build());
        }
        let json = serde_json::to_string(incident).map_err(|e| StoreError::invalid(format!("serialising the incident: {e}")))?;
        let put = Put::builder()
            .table_name(&self.table)
            .item("pk", s(pk))
            .item("sk", s(INCIDENT_SK))
            .item("app", s(app.as_str()))
            .item("incident_id", s(&id))
            .item("incident", s(json))
            .item("opened_at", s(at.to_rfc3339()));
        // Open it, or replace the incident read above (a new episode) but nothing newer.
        let put = match current_id {
            None => put.condition_expression("attribute_not_exists(#pk)").expression_attribute_names("#pk", "pk"),
            Some(old) => put
                .condition_expression("#id = :old")
                .expression_attribute_names("#id", "incident_id")
                .expression_attribute_values(":old", s(old)),
        };
        Ok(TransactWriteItem::builder().put(put.build().map_err(build_err)?).build())
    }
}

/// True when a write failed only because its condition did not hold.
fn is_conditional_failure<E: aws_sdk_dynamodb::error::ProvideErrorMetadata, R>(e: &aws_sdk_dynamodb::error::SdkError<E, R>) -> bool {
    e.as_service_error().and_then(|e| e.code()) == Some("ConditionalCheckFailedException")
}

/// Creates the table (on demand, `pk`/`sk` strings, TTL on `expires_at`) unless it exists, waits
/// until it is active and makes sure its TTL is on. For tests and local mode; on AWS the SAM
/// template owns the table.
pub async fn create_table(client: &Client, name: &str) -> Result<(), StoreError> {
    let attr = |n: &str| AttributeDefinition::builder().attribute_name(n).attribute_type(ScalarAttributeType::S).build().map_err(build_err);
    let key = |n: &str, t: KeyType| KeySchemaElement::builder().attribute_name(n).key_type(t).build().map_err(build_err);
    let created = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attr("pk")?)
        .attribute_definitions(attr("sk")?)
        .key_schema(key("pk", KeyType::Hash)?)
        .key_schema(key("sk", KeyType::Range)?)
        .send()
        .await;
    match created {
        Ok(_) => {}
        Err(e) if e.as_service_error().is_some_and(|e| e.is_resource_in_use_exception()) => {}
        Err(e) => return Err(crate::aws::store_error(&format!("DynamoDB CreateTable {name}"), e)),
    }

    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let out = client
            .describe_table()
            .table_name(name)
            .send()
            .await
            .map_err(|e| crate::aws::store_error(&format!("DynamoDB DescribeTable {name}"), e))?;
        if out.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            return Err(StoreError::unavailable(format!("table {name} did not become ACTIVE within 120 s")));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let ttl = client
        .describe_time_to_live()
        .table_name(name)
        .send()
        .await
        .map_err(|e| crate::aws::store_error(&format!("DynamoDB DescribeTimeToLive {name}"), e))?;
    let status = ttl.time_to_live_description().and_then(|d| d.time_to_live_status());
    if !matches!(status, Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)) {
        let spec = TimeToLiveSpecification::builder().enabled(true).attribute_name(TTL_ATTRIBUTE).build().map_err(build_err)?;
        client
            .update_time_to_live()
            .table_name(name)
            .time_to_live_specification(spec)
            .send()
            .await
            .map_err(|e| crate::aws::store_error(&format!("DynamoDB UpdateTimeToLive {name}"), e))?;
    }
    Ok(())
}

/// `now + ttl` in epoch seconds, rounded up, so a record lives at least `ttl`.
fn expiry_secs(now: DateTime<Utc>, ttl: Duration) -> i64 {
    let end = now.checked_add_signed(TimeDelta::from_std(ttl).unwrap_or(TimeDelta::MAX)).unwrap_or(DateTime::<Utc>::MAX_UTC);
    end.timestamp() + i64::from(end.timestamp_subsec_nanos() > 0)
}

/// Whether an item's `expires_at` (epoch seconds) has passed at `now` (epoch seconds). An item
/// without one does not expire.
fn expired(item: &Item, now: i64) -> bool {
    matches!(item.get(TTL_ATTRIBUTE), Some(AttributeValue::N(v)) if v.parse::<i64>().is_ok_and(|at| at <= now))
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// The `app` attribute: the `namespace/name` every record of an app carries.
fn get_app(item: &Item) -> Result<AppId, StoreError> {
    let text = get_s(item, "app")?;
    AppId::parse(text).ok_or_else(|| StoreError::invalid(format!("item {}: `app` is not `namespace/name`: `{text}`", describe_item(item))))
}

fn get_s<'a>(item: &'a Item, attribute: &str) -> Result<&'a str, StoreError> {
    match item.get(attribute) {
        Some(AttributeValue::S(v)) => Ok(v),
        Some(_) => Err(StoreError::invalid(format!("item {}: `{attribute}` is not a string", describe_item(item)))),
        None => Err(StoreError::invalid(format!("item {}: `{attribute}` is missing", describe_item(item)))),
    }
}

fn get_n(item: &Item, attribute: &str) -> Result<i64, StoreError> {
    match item.get(attribute) {
        Some(AttributeValue::N(v)) => {
            v.parse().map_err(|_| StoreError::invalid(format!("item {}: `{attribute}` is not an integer: {v}", describe_item(item))))
        }
        Some(_) => Err(StoreError::invalid(format!("item {}: `{attribute}` is not a number", describe_item(item)))),
        None => Err(StoreError::invalid(format!("item {}: `{attribute}` is missing", describe_item(item)))),
    }
}

fn describe_item(item: &Item) -> String {
    let key = |a: &str| match item.get(a) {
        Some(AttributeValue::S(v)) => v.as_str(),
        _ => "?",
    };
    format!("{} {}", key("pk"), key("sk"))
}

fn build_err(e: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::invalid(format!("building a DynamoDB request: {e}"))
}

/// Enum values as their serde names (`"hard_refresh"`, `"no_effect"`), as the SQLite store keeps them.
fn name<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => Ok(s),
        Ok(other) => Err(StoreError::invalid(format!("expected a name, got {other}"))),
        Err(e) => Err(StoreError::invalid(e.to_string())),
    }
}

fn parse_name<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_value(serde_json::Value::String(s.to_owned())).map_err(|e| StoreError::invalid(format!("`{s}`: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiries_round_up_to_the_next_whole_second() {
        let at: DateTime<Utc> = "2026-11-01T12:00:00Z".parse().unwrap();
        assert_eq!(expiry_secs(at, Duration::from_secs(60)), at.timestamp() + 60);
        assert_eq!(expiry_secs(at, Duration::from_millis(1500)), at.timestamp() + 2);
        assert_eq!(expiry_secs(at + TimeDelta::milliseconds(1), Duration::from_secs(1)), at.timestamp() + 2);
    }

    #[test]
    fn rungs_and_outcomes_are_stored_by_their_serde_names() {
        assert_eq!(name(&Rung::HardRefresh).unwrap(), "hard_refresh");
        assert_eq!(parse_name::<Outcome>("no_effect").unwrap(), Outcome::NoEffect);
        assert!(parse_name::<Outcome>("bogus").is_err());
    }

    #[test]
    fn malformed_items_are_named_in_the_error() {
        let item: Item =
            [("pk".to_owned(), s("APP#default#argocd/web")), ("sk".to_owned(), s("INCIDENT")), ("n".to_owned(), s("x"))].into();
        assert_eq!(get_s(&item, "missing").unwrap_err().what(), "item APP#default#argocd/web INCIDENT: `missing` is missing");
        assert!(get_n(&item, "n").unwrap_err().what().contains("`n` is not a number"));
    }
}
