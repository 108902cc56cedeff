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
//! | closed incident | `APP#<instance>#<app>` | `CLOSED#<incident id>` | `app`, `incident_id`, `incident`, `opened_at`, `last_decision` (as the open incident had them), `closed_at` (RFC 3339), `expires_at` (`closed_at` + 7 days). Written with the deletion of the open incident, in one transaction, so `medic incidents --closed` can list what closed recently; nothing in the pipeline reads it |
//! | action (idempotency record) | `APP#<instance>#<app>` | `ACTION#<incident id>#<idempotency key>` | `app`, `incident_id`, `idempotency_key`, `rung`, `at` (RFC 3339), `outcome` (serde names: `hard_refresh`, `no_effect`), `status` (`INPROGRESS` or `COMPLETED`), `in_progress_until` (epoch milliseconds, while in progress); `expires_at` only once the incident has closed (`closed_at` + 30 days): while the incident is open its actions are kept, however long it lasts |
//! | dedupe record | `DEDUPE#<instance>#<dedupe key>` | `-` | `seen_at` (RFC 3339), `expires_at`; a work item's record also `status` (`INPROGRESS` while a delivery handles it, then `COMPLETED`), `owner` (the delivery: message id and receive count) and `lease_until` (epoch milliseconds, while in progress). A record without `status` (markers, and releases before leases) is done |
//! | app lock | `LOCK#<instance>#<app>` | `-` | `owner`, `locked_at` (RFC 3339), `expires_at` |
//! | the switch | `SWITCH#<instance>` | `-` | `mode` (`act`, `dry-run` or `off`), `set_by`, `set_at` (RFC 3339). Written by `medic switch`, read by the worker (cached 30 s per container). No expiry |
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
use medic_core::catalogue::Rung;
use medic_core::idempotency::IdempotencyKey;
use medic_core::incident::{Attempt, DecisionNote, History, IncidentKey, IncidentRecord, Outcome};
use medic_core::ports::{AppLock, Begun, Claim, DedupeStore, IncidentLedger, IncidentStore, Seen, StoreError};

use crate::aws::describe;

/// The TTL attribute (epoch seconds).
pub const TTL_ATTRIBUTE: &str = "expires_at";

/// How long action records are kept after their incident closed (the core's rule).
pub const ACTION_RETENTION: Duration = medic_core::incident::ACTION_RETENTION;

/// How long the record of a closed incident is kept (for `medic incidents --closed`).
pub const CLOSED_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

const CLOSED_SK_PREFIX: &str = "CLOSED#";

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
}

impl DynamoDbStore {
    pub fn new(client: Client, table: impl Into<String>, instance: impl Into<String>) -> Self {
        Self { client, table: table.into(), instance: instance.into() }
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub fn instance(&self) -> &str {
        &self.instance
    }

    fn app_pk(&self, app: &str) -> String {
        format!("APP#{}#{app}", self.instance)
    }

    fn dedupe_pk(&self, key: &str) -> String {
        format!("DEDUPE#{}#{key}", self.instance)
    }

    fn lock_pk(&self, app: &str) -> String {
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
            Err(e) if !is_conditional_failure(&e) => Err(StoreError(describe(&self.op("DeleteItem"), &e))),
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
            .map_err(|e| StoreError(describe(&self.op("GetItem"), &e)))?;
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
            let out = q.send().await.map_err(|e| StoreError(describe(&self.op("Query"), &e)))?;
            items.extend(out.items.unwrap_or_default());
            match out.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(items),
            }
        }
    }

    /// The sort key of the action record of `key`, wherever its incident.
    async fn find_action(&self, app: &str, key: &IdempotencyKey) -> Result<Option<String>, StoreError> {
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
                at: get_s(&item, "at")?.parse::<DateTime<Utc>>().map_err(|e| StoreError(format!("{pk}: `at` is not a time: {e}")))?,
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
                .map_err(|e| StoreError(format!("{}: `{attribute}` is not a time: {e}", describe_item(item))))
        };
        let incident: IncidentKey = serde_json::from_str(get_s(item, "incident")?)
            .map_err(|e| StoreError(format!("{}: `incident` is not an incident: {e}", describe_item(item))))?;
        // A note this version cannot read is shown as absent rather than hiding the incident.
        let last_decision = match item.get("last_decision") {
            Some(AttributeValue::S(json)) => serde_json::from_str::<DecisionNote>(json).ok(),
            _ => None,
        };
        Ok(IncidentRecord {
            app: get_s(item, "app")?.to_owned(),
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
                        .ok_or_else(|| StoreError(format!("{pk} {sk}: in_progress_until {until_ms} is out of range")))?;
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
                Err(StoreError(describe(&self.op("TransactWriteItems"), &e)))
            }
            _ => Ok(()),
        }
    }

    /// The write that makes `incident` the app's open incident, given the item there now.
    fn incident_write(
        &self,
        app: &str,
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
        let json = serde_json::to_string(incident).map_err(|e| StoreError(format!("serialising the incident: {e}")))?;
        let put = Put::builder()
            .table_name(&self.table)
            .item("pk", s(pk))
            .item("sk", s(INCIDENT_SK))
            .item("app", s(app))
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

impl IncidentStore for DynamoDbStore {
    async fn history(&self, app: &str) -> Result<History, StoreError> {
        let pk = self.app_pk(app);
        let Some(item) = self.get(&pk, INCIDENT_SK).await? else { return Ok(History::default()) };
        let incident: IncidentKey = serde_json::from_str(get_s(&item, "incident")?)
            .map_err(|e| StoreError(format!("{pk} INCIDENT: `incident` is not an incident: {e}")))?;
        let items = self.action_items(&pk, &incident.id()).await?;
        // Actions of an open incident are kept for its life; a record written by an earlier
        // release still carries an expiry from its claim (M1), which is removed here, once.
        for item in items.iter().filter(|item| item.contains_key(TTL_ATTRIBUTE)) {
            self.set_expiry(&pk, get_s(item, "sk")?, None).await?;
        }
        let attempts = Self::to_attempts(items)?;
        Ok(History { incident: Some(incident), attempts })
    }

    async fn claim(&self, app: &str, incident: &IncidentKey, attempt: &Attempt, in_progress_for: Duration) -> Result<Claim, StoreError> {
        let key =
            attempt.idempotency_key.as_ref().ok_or_else(|| StoreError("an attempt without an idempotency key cannot be claimed".into()))?;
        let pk = self.app_pk(app);
        let sk = format!("ACTION#{}#{}", incident.id(), key.as_str());
        let now_ms = attempt.at.timestamp_millis();
        let until = attempt
            .at
            .checked_add_signed(TimeDelta::from_std(in_progress_for).unwrap_or(TimeDelta::MAX))
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        let action = Put::builder()
            .table_name(&self.table)
            .item("pk", s(&pk))
            .item("sk", s(&sk))
            .item("app", s(app))
            .item("incident_id", s(incident.id()))
            .item("idempotency_key", s(key.as_str()))
            .item("rung", s(name(&attempt.rung)?))
            .item("at", s(attempt.at.to_rfc3339()))
            .item("outcome", s(name(&Outcome::Requested)?))
            .item("status", s(IN_PROGRESS))
            .item("in_progress_until", n(until.timestamp_millis()))
            // Free, held by a claim whose in-progress time has run out (a crashed holder), or
            // expired and not yet deleted by TTL. `<=`: a claim made exactly at `until` may take
            // over, as in the other stores.
            .condition_expression(
                "attribute_not_exists(#pk) OR (#status = :in_progress AND #until <= :now) OR (attribute_exists(#expires) AND #expires <= :now_s)",
            )
            .expression_attribute_names("#pk", "pk")
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#until", "in_progress_until")
            .expression_attribute_names("#expires", TTL_ATTRIBUTE)
            .expression_attribute_values(":in_progress", s(IN_PROGRESS))
            .expression_attribute_values(":now", n(now_ms))
            .expression_attribute_values(":now_s", n(attempt.at.timestamp()))
            .build()
            .map_err(build_err)?;
        let action = TransactWriteItem::builder().put(action).build();

        for try_no in 0..CLAIM_TRIES {
            let current = self.get(&pk, INCIDENT_SK).await?;
            let open = self.incident_write(app, &pk, incident, attempt.at, current.as_ref())?;
            let mut transaction = self.client.transact_write_items().transact_items(action.clone()).transact_items(open);
            let opening = current.as_ref().map(|item| get_s(item, "incident_id")).transpose()? != Some(incident.id().as_str());
            if opening {
                // The same incident closed before and opens again: its earlier actions (which
                // closing gave an expiry) are kept for its life again.
                for item in self.query(&pk, &format!("ACTION#{}#", incident.id()), None).await? {
                    let item_sk = get_s(&item, "sk")?;
                    if item_sk == sk || !item.contains_key(TTL_ATTRIBUTE) || expired(&item, attempt.at.timestamp()) {
                        continue;
                    }
                    if transaction.get_transact_items().as_ref().map_or(0, Vec::len) < MAX_TRANSACTION_ITEMS {
                        transaction = transaction.transact_items(self.expiry_write(&pk, item_sk, None)?);
                    } else {
                        self.set_expiry(&pk, item_sk, None).await?;
                    }
                }
            }
            let result = transaction.send().await;
            match result {
                Ok(_) => return Ok(Claim::Granted),
                Err(e) if e.as_service_error().is_some_and(|e| e.is_transaction_canceled_exception()) => {
                    // Either the action record stands in the way (answer from it), or the
                    // incident item changed or a concurrent transaction conflicted (try again).
                    if let Some(answer) = self.blocking_claim(&pk, &sk, now_ms).await? {
                        return Ok(answer);
                    }
                    tracing::debug!(app, key = key.as_str(), try_no, reason = %describe("TransactWriteItems", &e), "claim cancelled; retrying");
                    let backoff = 20u64 << try_no.min(5);
                    tokio::time::sleep(Duration::from_millis(backoff + rand::random_range(0..backoff))).await;
                }
                Err(e) => return Err(StoreError(describe(&self.op("TransactWriteItems"), &e))),
            }
        }
        Err(StoreError(format!("claim of {key} for {app}: cancelled {CLAIM_TRIES} times by concurrent writes; try again later")))
    }

    async fn complete(&self, app: &str, key: &IdempotencyKey, outcome: Outcome) -> Result<(), StoreError> {
        let no_claim = || StoreError(format!("no claim for {key}"));
        let sk = self.find_action(app, key).await?.ok_or_else(no_claim)?;
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(self.app_pk(app)))
            .key("sk", s(sk))
            .update_expression("SET #outcome = :outcome, #status = :completed REMOVE #until")
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", "pk")
            .expression_attribute_names("#outcome", "outcome")
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#until", "in_progress_until")
            .expression_attribute_values(":outcome", s(name(&outcome)?))
            .expression_attribute_values(":completed", s(COMPLETED))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // Released between the lookup and the update.
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Err(no_claim()),
            Err(e) => Err(StoreError(describe(&self.op("UpdateItem"), &e))),
        }
    }

    async fn release(&self, app: &str, key: &IdempotencyKey) -> Result<(), StoreError> {
        let Some(sk) = self.find_action(app, key).await? else { return Ok(()) };
        // A completed record is kept: its action was taken.
        self.delete_if(&self.app_pk(app), &sk, ("status", s(IN_PROGRESS))).await
    }

    async fn close(&self, app: &str, at: DateTime<Utc>) -> Result<(), StoreError> {
        // The open incident becomes a closed record (kept `CLOSED_RETENTION`) in the same
        // transaction that deletes it, conditioned on it still being the incident read here.
        let pk = self.app_pk(app);
        for _ in 0..CLAIM_TRIES {
            let Some(item) = self.get(&pk, INCIDENT_SK).await? else { return Ok(()) };
            let id = get_s(&item, "incident_id")?.to_owned();
            let expires = at.checked_add_signed(TimeDelta::from_std(CLOSED_RETENTION).unwrap_or(TimeDelta::MAX)).unwrap_or(at);
            let mut closed = Put::builder()
                .table_name(&self.table)
                .item("pk", s(&pk))
                .item("sk", s(format!("{CLOSED_SK_PREFIX}{id}")))
                .item("app", s(app))
                .item("incident_id", s(&id))
                .item("incident", s(get_s(&item, "incident")?))
                .item("opened_at", s(get_s(&item, "opened_at")?))
                .item("closed_at", s(at.to_rfc3339()))
                .item(TTL_ATTRIBUTE, n(expires.timestamp()));
            if let Some(AttributeValue::S(note)) = item.get("last_decision") {
                closed = closed.item("last_decision", s(note));
            }
            let delete = Delete::builder()
                .table_name(&self.table)
                .key("pk", s(&pk))
                .key("sk", s(INCIDENT_SK))
                .condition_expression("#id = :id")
                .expression_attribute_names("#id", "incident_id")
                .expression_attribute_values(":id", s(&id))
                .build()
                .map_err(build_err)?;
            let mut transaction = self
                .client
                .transact_write_items()
                .transact_items(TransactWriteItem::builder().put(closed.build().map_err(build_err)?).build())
                .transact_items(TransactWriteItem::builder().delete(delete).build());
            // Its actions are kept `ACTION_RETENTION` from now on; with the closing itself, so
            // no crash leaves a closed incident's actions without an expiry (beyond a
            // transaction's 100 items, which no ladder reaches, they expire separately first).
            let retained = expiry_secs(at, ACTION_RETENTION);
            let actions = self.query(&pk, &format!("ACTION#{id}#"), None).await?;
            for (i, item) in actions.iter().enumerate() {
                let item_sk = get_s(item, "sk")?;
                if i + 2 < MAX_TRANSACTION_ITEMS {
                    transaction = transaction.transact_items(self.expiry_write(&pk, item_sk, Some(retained))?);
                } else {
                    self.set_expiry(&pk, item_sk, Some(retained)).await?;
                }
            }
            let result = transaction.send().await;
            match result {
                Ok(_) => return Ok(()),
                // Replaced or closed meanwhile, or a concurrent transaction: read it again.
                Err(e) if e.as_service_error().is_some_and(|e| e.is_transaction_canceled_exception()) => {
                    tokio::time::sleep(Duration::from_millis(20 + rand::random_range(0..40))).await;
                }
                Err(e) => return Err(StoreError(describe(&self.op("TransactWriteItems"), &e))),
            }
        }
        Err(StoreError(format!("closing the incident of {app}: cancelled {CLAIM_TRIES} times by concurrent writes; try again later")))
    }

    async fn note_decision(&self, app: &str, incident: &IncidentKey, note: &DecisionNote) -> Result<(), StoreError> {
        let json = serde_json::to_string(note).map_err(|e| StoreError(format!("serialising the decision note: {e}")))?;
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(self.app_pk(app)))
            .key("sk", s(INCIDENT_SK))
            .update_expression("SET #note = :note")
            // Only on this incident, and never creating one.
            .condition_expression("#id = :id")
            .expression_attribute_names("#note", "last_decision")
            .expression_attribute_names("#id", "incident_id")
            .expression_attribute_values(":note", s(json))
            .expression_attribute_values(":id", s(incident.id()))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if is_conditional_failure(&e) => Ok(()),
            Err(e) => Err(StoreError(describe(&self.op("UpdateItem"), &e))),
        }
    }

    async fn open_incidents(&self) -> Result<Vec<String>, StoreError> {
        // A Scan reads the whole table. At this size (one item per app with an incident, a few
        // actions each, dedupe records and locks) that is a few reads per sweep; a sparse GSI on
        // the INCIDENT items would replace it if the table ever grows large.
        let prefix = format!("APP#{}#", self.instance);
        let mut apps = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .filter_expression("#sk = :incident AND begins_with(#pk, :prefix)")
                .projection_expression("#pk, #app")
                .expression_attribute_names("#pk", "pk")
                .expression_attribute_names("#sk", "sk")
                .expression_attribute_names("#app", "app")
                .expression_attribute_values(":incident", s(INCIDENT_SK))
                .expression_attribute_values(":prefix", s(&prefix))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| StoreError(describe(&self.op("Scan"), &e)))?;
            for item in out.items.unwrap_or_default() {
                let app = get_s(&item, "app")?;
                // The prefix of instance `a` also matches instance `a#b`: keep exact matches.
                if get_s(&item, "pk")?.strip_prefix(&prefix) == Some(app) {
                    apps.push(app.to_owned());
                }
            }
            match out.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        apps.sort();
        apps.dedup();
        Ok(apps)
    }
}

/// The operator's read (`medic incidents`): a `Scan` of this instance's open and closed incident
/// items, then one `Query` per incident for its actions. The operator's principal needs
/// `dynamodb:Scan` and `dynamodb:Query` on the table; no function calls this.
impl IncidentLedger for DynamoDbStore {
    async fn incidents(&self, include_closed: bool) -> Result<Vec<IncidentRecord>, StoreError> {
        let prefix = format!("APP#{}#", self.instance);
        let now = Utc::now().timestamp();
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let mut scan = self
                .client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .expression_attribute_names("#pk", "pk")
                .expression_attribute_names("#sk", "sk")
                .expression_attribute_values(":incident", s(INCIDENT_SK))
                .expression_attribute_values(":prefix", s(&prefix))
                .set_exclusive_start_key(start.take());
            scan = if include_closed {
                scan.filter_expression("begins_with(#pk, :prefix) AND (#sk = :incident OR begins_with(#sk, :closed))")
                    .expression_attribute_values(":closed", s(CLOSED_SK_PREFIX))
            } else {
                scan.filter_expression("begins_with(#pk, :prefix) AND #sk = :incident")
            };
            let out = scan.send().await.map_err(|e| StoreError(describe(&self.op("Scan"), &e)))?;
            for item in out.items.unwrap_or_default() {
                // The prefix of instance `a` also matches instance `a#b`: keep exact matches.
                if get_s(&item, "pk")?.strip_prefix(&prefix) != Some(get_s(&item, "app")?) {
                    continue;
                }
                // TTL deletion lags: an expired closed record is gone as far as readers go.
                if item.contains_key(TTL_ATTRIBUTE) && get_n(&item, TTL_ATTRIBUTE)? <= now {
                    continue;
                }
                items.push(item);
            }
            match out.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => break,
            }
        }
        let mut records = Vec::with_capacity(items.len());
        for item in &items {
            records.push(self.record(item).await?);
        }
        records.sort_by(|a, b| (a.closed_at.is_some(), &a.app, a.opened_at).cmp(&(b.closed_at.is_some(), &b.app, b.opened_at)));
        Ok(records)
    }
}

/// The switch as stored, with who set it and when (`medic switch` shows it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchRecord {
    pub mode: medic_core::switch::Mode,
    pub set_by: String,
    pub set_at: String,
}

impl DynamoDbStore {
    fn switch_pk(&self) -> String {
        format!("SWITCH#{}", self.instance)
    }

    /// The switch item, if it was ever set.
    pub async fn switch_record(&self) -> Result<Option<SwitchRecord>, StoreError> {
        let Some(item) = self.get(&self.switch_pk(), SINGLETON_SK).await? else {
            return Ok(None);
        };
        let mode = get_s(&item, "mode")?;
        let mode = mode.parse().map_err(|e| StoreError(format!("the switch item of {}: {e}", self.table)))?;
        let text = |a: &str| item.get(a).and_then(|v| v.as_s().ok()).cloned().unwrap_or_default();
        Ok(Some(SwitchRecord { mode, set_by: text("set_by"), set_at: text("set_at") }))
    }
}

impl medic_core::switch::SwitchStore for DynamoDbStore {
    async fn read_mode(&self) -> Result<Option<medic_core::switch::Mode>, StoreError> {
        Ok(self.switch_record().await?.map(|r| r.mode))
    }

    async fn write_mode(&self, mode: medic_core::switch::Mode, by: &str) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(self.switch_pk()))
            .item("sk", s(SINGLETON_SK))
            .item("mode", s(mode.as_str()))
            .item("set_by", s(by))
            .item("set_at", s(Utc::now().to_rfc3339()))
            .send()
            .await
            .map_err(|e| StoreError(describe(&self.op("PutItem"), &e)))?;
        Ok(())
    }
}

impl DedupeStore for DynamoDbStore {
    async fn first_sighting(&self, dedupe_key: &str, ttl: Duration) -> Result<Seen, StoreError> {
        let now = Utc::now();
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(self.dedupe_pk(dedupe_key)))
            .item("sk", s(SINGLETON_SK))
            .item("seen_at", s(now.to_rfc3339()))
            .item(TTL_ATTRIBUTE, n(expiry_secs(now, ttl)))
            .condition_expression("attribute_not_exists(#pk) OR #expires <= :now")
            .expression_attribute_names("#pk", "pk")
            .expression_attribute_names("#expires", TTL_ATTRIBUTE)
            .expression_attribute_values(":now", n(now.timestamp()))
            .send()
            .await;
        match result {
            Ok(_) => Ok(Seen::New),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(Seen::Duplicate),
            Err(e) => Err(StoreError(describe(&self.op("PutItem"), &e))),
        }
    }

    async fn forget(&self, dedupe_key: &str) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(self.dedupe_pk(dedupe_key)))
            .key("sk", s(SINGLETON_SK))
            .send()
            .await
            .map_err(|e| StoreError(describe(&self.op("DeleteItem"), &e)))?;
        Ok(())
    }

    async fn begin(&self, dedupe_key: &str, owner: &str, lease: Duration) -> Result<Begun, StoreError> {
        let now = Utc::now();
        let lease_until = now + TimeDelta::from_std(lease).unwrap_or(TimeDelta::MAX);
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(self.dedupe_pk(dedupe_key)))
            .item("sk", s(SINGLETON_SK))
            .item("seen_at", s(now.to_rfc3339()))
            .item("status", s(IN_PROGRESS))
            .item("owner", s(owner))
            .item("lease_until", n(lease_until.timestamp_millis()))
            // Kept at least as long as the lease, so the record cannot vanish while held.
            .item(TTL_ATTRIBUTE, n(expiry_secs(now, lease.max(DEDUPE_MIN_TTL))))
            // New, expired, a dead holder's lease run out, or this delivery's own earlier write (an
            // SDK retry after a lost answer). A record without `status` was written by a release
            // before leases: it is done.
            .condition_expression(
                "attribute_not_exists(#pk) OR #expires <= :now OR (#status = :inprogress AND #lease <= :now_ms) OR #owner = :owner",
            )
            .expression_attribute_names("#pk", "pk")
            .expression_attribute_names("#expires", TTL_ATTRIBUTE)
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#lease", "lease_until")
            .expression_attribute_names("#owner", "owner")
            .expression_attribute_values(":now", n(now.timestamp()))
            .expression_attribute_values(":now_ms", n(now.timestamp_millis()))
            .expression_attribute_values(":inprogress", s(IN_PROGRESS))
            .expression_attribute_values(":owner", s(owner))
            .send()
            .await;
        match result {
            Ok(_) => Ok(Begun::Owned),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => {
                let Some(item) = self.get(&self.dedupe_pk(dedupe_key), SINGLETON_SK).await? else {
                    // Removed in between (its holder gave up): the next delivery takes it.
                    return Ok(Begun::InProgress { until: now });
                };
                if item.get("status").and_then(|v| v.as_s().ok()).map(String::as_str) == Some(IN_PROGRESS) {
                    let until = get_n(&item, "lease_until").ok().and_then(DateTime::from_timestamp_millis).unwrap_or(now);
                    Ok(Begun::InProgress { until })
                } else {
                    Ok(Begun::Done)
                }
            }
            Err(e) => Err(StoreError(describe(&self.op("PutItem"), &e))),
        }
    }

    async fn end(&self, dedupe_key: &str, owner: &str, handled: bool, ttl: Duration) -> Result<(), StoreError> {
        if handled {
            let now = Utc::now();
            let result = self
                .client
                .update_item()
                .table_name(&self.table)
                .key("pk", s(self.dedupe_pk(dedupe_key)))
                .key("sk", s(SINGLETON_SK))
                .update_expression("SET #status = :completed, #expires = :expires REMOVE #lease")
                .condition_expression("#owner = :owner")
                .expression_attribute_names("#status", "status")
                .expression_attribute_names("#expires", TTL_ATTRIBUTE)
                .expression_attribute_names("#lease", "lease_until")
                .expression_attribute_names("#owner", "owner")
                .expression_attribute_values(":completed", s(COMPLETED))
                .expression_attribute_values(":expires", n(expiry_secs(now, ttl)))
                .expression_attribute_values(":owner", s(owner))
                .send()
                .await;
            return match result {
                Err(e) if !is_conditional_failure(&e) => Err(StoreError(describe(&self.op("UpdateItem"), &e))),
                _ => Ok(()),
            };
        }
        self.delete_if(&self.dedupe_pk(dedupe_key), SINGLETON_SK, ("owner", s(owner))).await
    }
}

/// True when a write failed only because its condition did not hold.
fn is_conditional_failure<E: aws_sdk_dynamodb::error::ProvideErrorMetadata, R>(e: &aws_sdk_dynamodb::error::SdkError<E, R>) -> bool {
    e.as_service_error().and_then(|e| e.code()) == Some("ConditionalCheckFailedException")
}

impl AppLock for DynamoDbStore {
    async fn try_lock(&self, app: &str, owner: &str, ttl: Duration) -> Result<bool, StoreError> {
        let now = Utc::now();
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(self.lock_pk(app)))
            .item("sk", s(SINGLETON_SK))
            .item("owner", s(owner))
            .item("locked_at", s(now.to_rfc3339()))
            .item(TTL_ATTRIBUTE, n(expiry_secs(now, ttl)))
            // Free, expired (a crashed holder), or already ours (extended).
            .condition_expression("attribute_not_exists(#pk) OR #expires <= :now OR #owner = :owner")
            .expression_attribute_names("#pk", "pk")
            .expression_attribute_names("#expires", TTL_ATTRIBUTE)
            .expression_attribute_names("#owner", "owner")
            .expression_attribute_values(":now", n(now.timestamp()))
            .expression_attribute_values(":owner", s(owner))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(false),
            Err(e) => Err(StoreError(describe(&self.op("PutItem"), &e))),
        }
    }

    async fn unlock(&self, app: &str, owner: &str) -> Result<(), StoreError> {
        let result = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(self.lock_pk(app)))
            .key("sk", s(SINGLETON_SK))
            .condition_expression("#owner = :owner")
            .expression_attribute_names("#owner", "owner")
            .expression_attribute_values(":owner", s(owner))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            // Not ours (any more): it expired and someone else took it, or it is gone. Leave it.
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => {
                tracing::warn!(app, owner, "unlock: the lock is not held by this owner (it expired or was taken over); left as it is");
                Ok(())
            }
            Err(e) => Err(StoreError(describe(&self.op("DeleteItem"), &e))),
        }
    }
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
        Err(e) => return Err(StoreError(describe(&format!("DynamoDB CreateTable {name}"), &e))),
    }

    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let out = client
            .describe_table()
            .table_name(name)
            .send()
            .await
            .map_err(|e| StoreError(describe(&format!("DynamoDB DescribeTable {name}"), &e)))?;
        if out.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            return Err(StoreError(format!("table {name} did not become ACTIVE within 120 s")));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let ttl = client
        .describe_time_to_live()
        .table_name(name)
        .send()
        .await
        .map_err(|e| StoreError(describe(&format!("DynamoDB DescribeTimeToLive {name}"), &e)))?;
    let status = ttl.time_to_live_description().and_then(|d| d.time_to_live_status());
    if !matches!(status, Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)) {
        let spec = TimeToLiveSpecification::builder().enabled(true).attribute_name(TTL_ATTRIBUTE).build().map_err(build_err)?;
        client
            .update_time_to_live()
            .table_name(name)
            .time_to_live_specification(spec)
            .send()
            .await
            .map_err(|e| StoreError(describe(&format!("DynamoDB UpdateTimeToLive {name}"), &e)))?;
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

fn get_s<'a>(item: &'a Item, attribute: &str) -> Result<&'a str, StoreError> {
    match item.get(attribute) {
        Some(AttributeValue::S(v)) => Ok(v),
        Some(_) => Err(StoreError(format!("item {}: `{attribute}` is not a string", describe_item(item)))),
        None => Err(StoreError(format!("item {}: `{attribute}` is missing", describe_item(item)))),
    }
}

fn get_n(item: &Item, attribute: &str) -> Result<i64, StoreError> {
    match item.get(attribute) {
        Some(AttributeValue::N(v)) => {
            v.parse().map_err(|_| StoreError(format!("item {}: `{attribute}` is not an integer: {v}", describe_item(item))))
        }
        Some(_) => Err(StoreError(format!("item {}: `{attribute}` is not a number", describe_item(item)))),
        None => Err(StoreError(format!("item {}: `{attribute}` is missing", describe_item(item)))),
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
    StoreError(format!("building a DynamoDB request: {e}"))
}

/// Enum values as their serde names (`"hard_refresh"`, `"no_effect"`), as the SQLite store keeps them.
fn name<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => Ok(s),
        Ok(other) => Err(StoreError(format!("expected a name, got {other}"))),
        Err(e) => Err(StoreError(e.to_string())),
    }
}

fn parse_name<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_value(serde_json::Value::String(s.to_owned())).map_err(|e| StoreError(format!("`{s}`: {e}")))
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
        assert_eq!(get_s(&item, "missing").unwrap_err().0, "item APP#default#argocd/web INCIDENT: `missing` is missing");
        assert!(get_n(&item, "n").unwrap_err().0.contains("`n` is not a number"));
    }
}
