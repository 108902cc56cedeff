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
