//! `medic serve`'s dedupe records in the state file: the DynamoDB store's contract on SQLite
//! (`tests/contracts.rs` holds the two, and the in-memory one, to one test). In memory they were
//! lost on a restart: a click pressed again after it was handled, an alert told once, a fleet
//! outage's first sighting (which times its escalation) all started over. Here they outlive the
//! process as the queue does.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use medic_core::ports::{Begun, DeliveryLeases, MarkerStore, Seen, StoreError};
use rusqlite::{OptionalExtension, params};

use super::store::{SqliteIncidentStore, err};

/// Dedupe markers, first sightings and work-item leases, on the state file of `store`.
#[derive(Clone)]
pub struct SqliteDedupe {
    store: Arc<SqliteIncidentStore>,
}

impl SqliteDedupe {
    pub fn new(store: Arc<SqliteIncidentStore>) -> Self {
        Self { store }
    }
}

fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

fn ms_after(d: Duration) -> i64 {
    now_ms().saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn time_of(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or_else(Utc::now)
}

impl MarkerStore for SqliteDedupe {
    async fn first_sighting(&self, marker: &medic_core::keys::Marker, ttl: Duration) -> Result<Seen, StoreError> {
        let dedupe_key = marker.as_str();
        // One statement: a live marker stays, an absent or expired one is (re)written.
        let changed = self
            .store
            .conn()
            .execute(
                "INSERT INTO dedupe (key, expires_ms) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET expires_ms = excluded.expires_ms WHERE dedupe.expires_ms <= ?3",
                params![dedupe_key, ms_after(ttl), now_ms()],
            )
            .map_err(err)?;
        Ok(if changed == 1 { Seen::New } else { Seen::Duplicate })
    }

    async fn forget(&self, marker: &medic_core::keys::Marker) -> Result<(), StoreError> {
        let dedupe_key = marker.as_str();
        let mut conn = self.store.conn();
        let tx = conn.transaction().map_err(err)?;
        tx.execute("DELETE FROM dedupe WHERE key = ?1", params![dedupe_key]).map_err(err)?;
        tx.execute("DELETE FROM sightings WHERE key = ?1", params![dedupe_key]).map_err(err)?;
        tx.commit().map_err(err)
    }

    async fn mark(&self, marker: &medic_core::keys::Marker, ttl: Duration) -> Result<(), StoreError> {
        let dedupe_key = marker.as_str();
        self.store
            .conn()
            .execute(
                "INSERT INTO dedupe (key, expires_ms) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET expires_ms = excluded.expires_ms",
                params![dedupe_key, ms_after(ttl)],
            )
            .map(drop)
            .map_err(err)
    }

    async fn marked(&self, keys: &[medic_core::keys::Marker]) -> Result<BTreeSet<medic_core::keys::Marker>, StoreError> {
        let now = now_ms();
        let conn = self.store.conn();
        let mut select = conn.prepare_cached("SELECT expires_ms FROM dedupe WHERE key = ?1").map_err(err)?;
        let mut found = BTreeSet::new();
        for key in keys {
            let expires: Option<i64> = select.query_row(params![key.as_str()], |r| r.get(0)).optional().map_err(err)?;
            if expires.is_some_and(|e| e > now) {
                found.insert(key.clone());
            }
        }
        Ok(found)
    }

    async fn sighted(&self, marker: &medic_core::keys::Marker, ttl: Duration) -> Result<DateTime<Utc>, StoreError> {
        let key = marker.as_str();
        let now = now_ms();
        let mut conn = self.store.conn();
        let tx = conn.transaction().map_err(err)?;
        let live: Option<i64> = tx
            .query_row("SELECT first_ms FROM sightings WHERE key = ?1 AND expires_ms > ?2", params![key, now], |r| r.get(0))
            .optional()
            .map_err(err)?;
        let first = live.unwrap_or(now);
        tx.execute(
            "INSERT INTO sightings (key, first_ms, expires_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (key) DO UPDATE SET first_ms = excluded.first_ms, expires_ms = excluded.expires_ms",
            params![key, first, ms_after(ttl)],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(time_of(first))
    }
}

impl DeliveryLeases for SqliteDedupe {
    async fn begin(&self, marker: &medic_core::keys::Marker, owner: &str, lease: Duration) -> Result<Begun, StoreError> {
        let dedupe_key = marker.as_str();
        let now = now_ms();
        let mut conn = self.store.conn();
        let tx = conn.transaction().map_err(err)?;
        let done: Option<i64> =
            tx.query_row("SELECT expires_ms FROM dedupe WHERE key = ?1", params![dedupe_key], |r| r.get(0)).optional().map_err(err)?;
        if done.is_some_and(|expires| expires > now) {
            return Ok(Begun::Done);
        }
        let held: Option<(String, i64)> = tx
            .query_row("SELECT owner, until_ms FROM leases WHERE key = ?1", params![dedupe_key], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(err)?;
        if let Some((holder, until)) = held
            && holder != owner
            && until > now
        {
            return Ok(Begun::InProgress { until: time_of(until) });
        }
        tx.execute(
            "INSERT INTO leases (key, owner, until_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, until_ms = excluded.until_ms",
            params![dedupe_key, owner, ms_after(lease)],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(Begun::Owned)
    }

    async fn end(&self, marker: &medic_core::keys::Marker, owner: &str, handled: bool, ttl: Duration) -> Result<(), StoreError> {
        let dedupe_key = marker.as_str();
        let mut conn = self.store.conn();
        let tx = conn.transaction().map_err(err)?;
        let holder: Option<String> =
            tx.query_row("SELECT owner FROM leases WHERE key = ?1", params![dedupe_key], |r| r.get(0)).optional().map_err(err)?;
        if holder.is_some_and(|h| h != owner) {
            // Another delivery took the record over: this late end changes nothing.
            return Ok(());
        }
        tx.execute("DELETE FROM leases WHERE key = ?1", params![dedupe_key]).map_err(err)?;
        if handled {
            tx.execute(
                "INSERT INTO dedupe (key, expires_ms) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET expires_ms = excluded.expires_ms",
                params![dedupe_key, ms_after(ttl)],
            )
            .map_err(err)?;
        }
        tx.commit().map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use medic_core::keys::Marker;

    /// What a restart of `medic serve` keeps: a second process on the same state file sees the
    /// markers, the handled items and the first sightings of the first.
    #[tokio::test]
    async fn a_restart_on_the_same_state_file_keeps_markers_handled_items_and_sightings() {
        let dir = std::env::temp_dir().join(format!("medic-dedupe-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.db");
        let hour = Duration::from_secs(3600);
        let first_seen = {
            let before = SqliteDedupe::new(Arc::new(SqliteIncidentStore::open(&path).unwrap()));
            assert_eq!(before.first_sighting(&Marker::for_tests("alert-once"), hour).await.unwrap(), Seen::New);
            assert_eq!(before.begin(&Marker::for_tests("click-1"), "m#1", hour).await.unwrap(), Begun::Owned);
            before.end(&Marker::for_tests("click-1"), "m#1", true, hour).await.unwrap();
            before.sighted(&Marker::for_tests("outage"), hour).await.unwrap()
        };
        let after = SqliteDedupe::new(Arc::new(SqliteIncidentStore::open(&path).unwrap()));
        assert_eq!(
            after.first_sighting(&Marker::for_tests("alert-once"), hour).await.unwrap(),
            Seen::Duplicate,
            "told once, across the restart"
        );
        assert_eq!(
            after.begin(&Marker::for_tests("click-1"), "m#2", hour).await.unwrap(),
            Begun::Done,
            "a handled click is not handled again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(after.sighted(&Marker::for_tests("outage"), hour).await.unwrap(), first_seen, "the outage keeps its first sighting");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
