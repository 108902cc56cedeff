//! Decision records on the state table: one item per decision, partitioned by the UTC day it was
//! taken, so `medic report --since 7d` reads seven partitions in time order with `Query` and
//! never scans the table.

use super::*;
use medic_core::record::DecisionRecord;

const DECISION_PK_PREFIX: &str = "DECISION#";

impl DynamoDbStore {
    /// The partition of the decisions of the UTC day `at` falls in.
    fn decision_pk(&self, at: DateTime<Utc>) -> String {
        format!("{DECISION_PK_PREFIX}{}#{}", self.instance, at.format("%Y-%m-%d"))
    }

    /// The sort key of a decision: its time to the microsecond, then its app, so a day's items
    /// sort by time and two apps decided in the same microsecond do not collide.
    fn decision_sk(at: DateTime<Utc>, app: &AppId) -> String {
        format!("{}#{app}", at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
    }

    /// A conditional `PutItem`: a record already there (an SDK retry after a lost answer) stays.
    pub(super) async fn put_decision(&self, record: &DecisionRecord) -> Result<(), StoreError> {
        let at = record.decided_at();
        let json =
            serde_json::to_string(record).map_err(|e| StoreError::invalid(format!("serialising a decision record: {e}")).caused_by(e))?;
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(self.decision_pk(at)))
            .item("sk", s(Self::decision_sk(at, &record.decision.app)))
            .item("app", s(record.decision.app.as_str()))
            .item("record", s(json))
            .item(TTL_ATTRIBUTE, n(expiry_secs(at, self.retention)))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", "pk")
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if is_conditional_failure(&e) => Ok(()),
            Err(e) => Err(crate::aws::store_error(&self.op("PutItem"), e)),
        }
    }

    /// One `Query` (paginated) per day from `since`'s to today's, oldest first.
    pub(super) async fn query_decisions(&self, since: DateTime<Utc>) -> Result<Vec<DecisionRecord>, StoreError> {
        let now = Utc::now();
        let mut records = Vec::new();
        let mut day = since.date_naive();
        while day <= now.date_naive() {
            let pk = format!("{DECISION_PK_PREFIX}{}#{}", self.instance, day.format("%Y-%m-%d"));
            let mut start: Option<Item> = None;
            loop {
                let out = self
                    .client
                    .query()
                    .table_name(&self.table)
                    .key_condition_expression("#pk = :pk AND #sk >= :since")
                    .expression_attribute_names("#pk", "pk")
                    .expression_attribute_names("#sk", "sk")
                    .expression_attribute_values(":pk", s(&pk))
                    .expression_attribute_values(":since", s(since.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)))
                    .set_exclusive_start_key(start.take())
                    .send()
                    .await
                    .map_err(|e| crate::aws::store_error(&self.op("Query"), e))?;
                for item in out.items.unwrap_or_default() {
                    // TTL deletion lags: an expired record is gone as far as readers go.
                    if get_n(&item, TTL_ATTRIBUTE)? <= now.timestamp() {
                        continue;
                    }
                    let json = get_s(&item, "record")?;
                    let record: DecisionRecord = serde_json::from_str(json).map_err(|e| {
                        StoreError::invalid(format!("decision {}: unreadable record: {e}", get_s(&item, "sk").unwrap_or("?"))).caused_by(e)
                    })?;
                    records.push(record);
                }
                match out.last_evaluated_key {
                    Some(key) if !key.is_empty() => start = Some(key),
                    _ => break,
                }
            }
            let Some(next) = day.succ_opt() else { break };
            day = next;
        }
        Ok(records)
    }
}
