//! Where the escalator keeps its records (`EscalationStore`): the state table in DynamoDB, or memory
//! for `medic serve` and tests.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use aws_sdk_dynamodb::Client as DynamoClient;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, TimeDelta, Utc};
use medic_core::ports::{EscalationStore, StoreError, Versioned};
use serde_json::Value;

/// [`EscalationStore`] on the state table: `pk` = `ESC#<instance>#<group>`, `sk` = id, `doc` (the
/// JSON), `version` (a number), `expires_at` (the table's TTL attribute; reads check it too).
#[derive(Debug, Clone)]
pub struct DynamoDbEscalationStore {
    pub(super) client: DynamoClient,
    pub(super) table: String,
    pub(super) instance: String,
    /// What "expired" is measured against (the table's TTL deletes late, so reads check too).
    clock: medic_adapters::memory::SharedClock,
}

impl DynamoDbEscalationStore {
    pub fn new(client: DynamoClient, table: impl Into<String>, instance: impl Into<String>) -> Self {
        Self { client, table: table.into(), instance: instance.into(), clock: medic_adapters::memory::SharedClock::default() }
    }

    /// The same store, reading `clock` instead of the wall clock.
    pub fn with_clock(self, clock: impl medic_core::ports::Clock + 'static) -> Self {
        Self { clock: medic_adapters::memory::SharedClock::new(clock), ..self }
    }

    fn pk(&self, group: &str) -> String {
        format!("ESC#{}#{group}", self.instance)
    }

    fn err(&self, op: &str) -> String {
        format!("DynamoDB {op} on {}", self.table)
    }
}

pub(super) fn attr_s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

pub(super) fn attr_n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub(super) fn versioned(item: &HashMap<String, AttributeValue>, now: i64) -> Result<Option<Versioned>, StoreError> {
    let n = |name: &str| match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse::<i64>().map_err(|_| StoreError::invalid(format!("`{name}` is not an integer"))),
        _ => Err(StoreError::invalid(format!("`{name}` is missing"))),
    };
    if n(medic_adapters::dynamodb::TTL_ATTRIBUTE)? <= now {
        return Ok(None);
    }
    let doc = match item.get("doc") {
        Some(AttributeValue::S(s)) => serde_json::from_str(s).map_err(|e| StoreError::invalid(format!("`doc` is not JSON: {e}")))?,
        _ => return Err(StoreError::invalid("`doc` is missing")),
    };
    Ok(Some(Versioned { version: n("version")? as u64, doc }))
}

impl EscalationStore for DynamoDbEscalationStore {
    async fn load(&self, group: &str, id: &str) -> Result<Option<Versioned>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", attr_s(self.pk(group)))
            .key("sk", attr_s(id))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| medic_adapters::aws::store_error(&self.err("GetItem"), e))?;
        match out.item {
            Some(item) => versioned(&item, self.clock.now().timestamp()),
            None => Ok(None),
        }
    }

    async fn store(&self, group: &str, id: &str, doc: &Value, expected: Option<u64>, ttl: Duration) -> Result<bool, StoreError> {
        let now = self.clock.now();
        let expires = now.timestamp() + ttl.as_secs().min(10 * 365 * 24 * 3600) as i64;
        let next = expected.map_or(1, |v| v + 1);
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", attr_s(self.pk(group)))
            .item("sk", attr_s(id))
            .item("doc", attr_s(doc.to_string()))
            .item("version", attr_n(next as i64))
            .item(medic_adapters::dynamodb::TTL_ATTRIBUTE, attr_n(expires));
        let put = match expected {
            None => put
                .condition_expression("attribute_not_exists(#pk) OR #exp <= :now")
                .expression_attribute_names("#pk", "pk")
                .expression_attribute_names("#exp", medic_adapters::dynamodb::TTL_ATTRIBUTE)
                .expression_attribute_values(":now", attr_n(now.timestamp())),
            Some(v) => put
                .condition_expression("#version = :v")
                .expression_attribute_names("#version", "version")
                .expression_attribute_values(":v", attr_n(v as i64)),
        };
        match put.send().await {
            Ok(_) => Ok(true),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(false),
            Err(e) => Err(medic_adapters::aws::store_error(&self.err("PutItem"), e)),
        }
    }

    async fn list(&self, group: &str) -> Result<Vec<(String, Versioned)>, StoreError> {
        let now = self.clock.now().timestamp();
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .consistent_read(true)
                .key_condition_expression("#pk = :pk")
                .expression_attribute_names("#pk", "pk")
                .expression_attribute_values(":pk", attr_s(self.pk(group)))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| medic_adapters::aws::store_error(&self.err("Query"), e))?;
            for item in page.items.unwrap_or_default() {
                let id = match item.get("sk") {
                    Some(AttributeValue::S(s)) => s.clone(),
                    _ => return Err(StoreError::invalid("`sk` is missing")),
                };
                if let Some(v) = versioned(&item, now)? {
                    out.push((id, v));
                }
            }
            match page.last_evaluated_key {
                Some(key) if !key.is_empty() => start = Some(key),
                _ => return Ok(out),
            }
        }
    }
}

/// `(group, id)` → `(version, document, expiry)`.
pub(super) type MemoryRecords = HashMap<(String, String), (u64, Value, DateTime<Utc>)>;

/// [`EscalationStore`] in memory, with the same compare-and-set and expiry.
#[derive(Default)]
pub struct MemoryEscalationStore {
    pub(super) records: Mutex<MemoryRecords>,
    clock: medic_adapters::memory::SharedClock,
}

impl MemoryEscalationStore {
    /// A twin that reads `clock` instead of the wall clock.
    pub fn with_clock(clock: impl medic_core::ports::Clock + 'static) -> Self {
        Self { clock: medic_adapters::memory::SharedClock::new(clock), ..Self::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryRecords> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl EscalationStore for MemoryEscalationStore {
    async fn load(&self, group: &str, id: &str) -> Result<Option<Versioned>, StoreError> {
        let now = self.clock.now();
        Ok(self
            .lock()
            .get(&(group.to_owned(), id.to_owned()))
            .filter(|(_, _, exp)| *exp > now)
            .map(|(version, doc, _)| Versioned { version: *version, doc: doc.clone() }))
    }

    async fn store(&self, group: &str, id: &str, doc: &Value, expected: Option<u64>, ttl: Duration) -> Result<bool, StoreError> {
        let now = self.clock.now();
        let mut records = self.lock();
        let key = (group.to_owned(), id.to_owned());
        let current = records.get(&key).filter(|(_, _, exp)| *exp > now).map(|(v, _, _)| *v);
        if current != expected {
            return Ok(false);
        }
        let expires = now + TimeDelta::from_std(ttl).unwrap_or(TimeDelta::MAX / 2);
        records.insert(key, (expected.map_or(1, |v| v + 1), doc.clone(), expires));
        Ok(true)
    }

    async fn list(&self, group: &str) -> Result<Vec<(String, Versioned)>, StoreError> {
        let now = self.clock.now();
        let mut out: Vec<(String, Versioned)> = self
            .lock()
            .iter()
            .filter(|((g, _), (_, _, exp))| g == group && *exp > now)
            .map(|((_, id), (version, doc, _))| (id.clone(), Versioned { version: *version, doc: doc.clone() }))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}

// ------------------------------------------------------------------------------------------------
// Records
// ------------------------------------------------------------------------------------------------
