//! The instant switch on the state table.

use super::*;

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
        let mode = mode.parse().map_err(|e| StoreError::invalid(format!("the switch item of {}: {e}", self.table)))?;
        let text = |a: &str| item.get(a).and_then(|v| v.as_s().ok()).cloned().unwrap_or_default();
        Ok(Some(SwitchRecord { mode, set_by: text("set_by"), set_at: text("set_at") }))
    }
}

/// How long an ended freeze stays in the table (DynamoDB's TTL lets it go then): `medic freeze
/// list` shows what ended today.
const FREEZE_KEPT_AFTER_END: chrono::TimeDelta = chrono::TimeDelta::days(1);

impl DynamoDbStore {
    fn freeze_pk(&self) -> String {
        format!("FREEZE#{}", self.instance)
    }
}

impl medic_core::switch::SwitchStore for DynamoDbStore {
    async fn read_freezes(&self) -> Result<Vec<medic_core::freeze::Freeze>, StoreError> {
        // Every freeze id starts `frz-` (DynamoDB refuses an empty prefix).
        let items = self.query(&self.freeze_pk(), "frz-", None).await?;
        items
            .iter()
            .map(|item| {
                let doc = get_s(item, "doc")?;
                serde_json::from_str(doc).map_err(|e| StoreError::invalid(format!("a freeze item of {}: {e}", self.table)))
            })
            .collect()
    }

    async fn write_freeze(&self, freeze: &medic_core::freeze::Freeze) -> Result<(), StoreError> {
        let doc = serde_json::to_string(freeze).map_err(|e| StoreError::invalid(e.to_string()))?;
        let expires = (freeze.until + FREEZE_KEPT_AFTER_END).timestamp();
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(self.freeze_pk()))
            .item("sk", s(&freeze.id))
            .item("doc", s(doc))
            .item("expires_at", AttributeValue::N(expires.to_string()))
            .send()
            .await
            .map_err(|e| crate::aws::store_error(&self.op("PutItem"), e))?;
        Ok(())
    }

    async fn lift_freeze(&self, id: &str) -> Result<bool, StoreError> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(self.freeze_pk()))
            .key("sk", s(id))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| crate::aws::store_error(&self.op("DeleteItem"), e))?;
        Ok(out.attributes.is_some_and(|a| !a.is_empty()))
    }

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
            .map_err(|e| crate::aws::store_error(&self.op("PutItem"), e))?;
        Ok(())
    }
}
