//! The shared token buckets on the state table ([`medic_core::budget`]).

use medic_core::budget::BucketState;
use medic_core::ladder::BudgetKind;
use medic_core::ports::BucketStore;

use super::*;

impl DynamoDbStore {
    fn bucket_pk(&self, kind: BudgetKind) -> String {
        format!("BUDGET#{}#{}", self.instance, kind.as_str())
    }
}

fn get_u(item: &Item, attribute: &str) -> Result<u64, StoreError> {
    let v = get_n(item, attribute)?;
    u64::try_from(v).map_err(|_| StoreError::invalid(format!("item {}: `{attribute}` is negative: {v}", describe_item(item))))
}

impl BucketStore for DynamoDbStore {
    async fn read_bucket(&self, kind: BudgetKind) -> Result<Option<BucketState>, StoreError> {
        let Some(item) = self.get(&self.bucket_pk(kind), SINGLETON_SK).await? else {
            return Ok(None);
        };
        Ok(Some(BucketState {
            milli_tokens: get_u(&item, "milli_tokens")?,
            at_ms: get_n(&item, "at_ms")?,
            version: get_u(&item, "version")?,
        }))
    }

    async fn replace_bucket(&self, kind: BudgetKind, read: Option<&BucketState>, next: &BucketState) -> Result<bool, StoreError> {
        let count = |v: u64| AttributeValue::N(v.to_string());
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(self.bucket_pk(kind)))
            .item("sk", s(SINGLETON_SK))
            .item("milli_tokens", count(next.milli_tokens))
            .item("at_ms", n(next.at_ms))
            .item("version", count(next.version));
        // The version alone decides: every write bumps it, so equal versions mean nobody wrote.
        let put = match read {
            None => put.condition_expression("attribute_not_exists(#pk)").expression_attribute_names("#pk", "pk"),
            Some(r) => put
                .condition_expression("#version = :version")
                .expression_attribute_names("#version", "version")
                .expression_attribute_values(":version", count(r.version)),
        };
        match put.send().await {
            Ok(_) => Ok(true),
            Err(e) if is_conditional_failure(&e) => Ok(false),
            Err(e) => Err(crate::aws::store_error(&self.op("PutItem"), e)),
        }
    }
}
