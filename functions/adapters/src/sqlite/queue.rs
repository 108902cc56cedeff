//! `medic serve`'s work queue in the state file: SQS's contract on SQLite, so a restart (a
//! SIGTERM, a crash, a reboot) loses nothing `serve` accepted — a webhook, a person's click, a
//! wait the worker set. An item received is hidden for a visibility timeout and deleted only once
//! handled; one that failed comes back after a delay; one never answered (the process died with
//! it) comes back when its visibility ends, as on SQS.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use medic_core::event::{WorkItem, WorkItemKey};
use medic_core::ports::{QueueError, StoreError, WorkQueue};
use rusqlite::{OptionalExtension, params};

use super::store::{SqliteIncidentStore, err as store_error};

/// SQS's longest delay, which the ports' contract keeps.
const MAX_DELAY: Duration = Duration::from_secs(900);

/// The queue, on the state file of `store`.
#[derive(Clone)]
pub struct SqliteQueue {
    store: Arc<SqliteIncidentStore>,
}

/// An item taken from the queue: delete it when handled, release it when it failed.
#[derive(Debug)]
pub struct Received {
    pub id: i64,
    /// How many times it has been received, this time included (SQS's `ApproximateReceiveCount`).
    pub receives: u32,
    pub item: WorkItem,
}

fn millis_from_now(delay: Duration) -> i64 {
    Utc::now().timestamp_millis().saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX))
}

impl SqliteQueue {
    pub fn new(store: Arc<SqliteIncidentStore>) -> Self {
        Self { store }
    }

    fn push(&self, items: &[WorkItem], delay: Duration) -> Result<(), StoreError> {
        let mut conn = self.store.conn();
        let tx = conn.transaction().map_err(store_error)?;
        for item in items {
            let text = serde_json::to_string(item).map_err(store_error)?;
            tx.execute("INSERT INTO work_queue (due_ms, item) VALUES (?1, ?2)", params![millis_from_now(delay), text])
                .map_err(store_error)?;
        }
        tx.commit().map_err(store_error)
    }

    /// Up to `max` items that are due, each hidden for `visibility` and counted as received. An
    /// item that no longer reads as a work item (a file from another release) is dropped with a
    /// warning rather than blocking the queue.
    pub fn receive(&self, max: usize, visibility: Duration) -> Result<Vec<Received>, StoreError> {
        let now = Utc::now().timestamp_millis();
        let mut conn = self.store.conn();
        let tx = conn.transaction().map_err(store_error)?;
        let rows: Vec<(i64, u32, String)> = {
            let mut select = tx
                .prepare("SELECT id, receives, item FROM work_queue WHERE due_ms <= ?1 ORDER BY due_ms, id LIMIT ?2")
                .map_err(store_error)?;
            let limit = i64::try_from(max).unwrap_or(i64::MAX);
            select
                .query_map(params![now, limit], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .map_err(store_error)?
                .collect::<Result<_, _>>()
                .map_err(store_error)?
        };
        let mut received = Vec::with_capacity(rows.len());
        for (id, receives, text) in rows {
            match serde_json::from_str::<WorkItem>(&text) {
                Ok(item) => {
                    tx.execute(
                        "UPDATE work_queue SET due_ms = ?1, receives = receives + 1 WHERE id = ?2",
                        params![millis_from_now(visibility), id],
                    )
                    .map_err(store_error)?;
                    received.push(Received { id, receives: receives + 1, item });
                }
                Err(e) => {
                    tracing::warn!(id, error = %e, "a queued item of the state file is not a work item; dropped");
                    tx.execute("DELETE FROM work_queue WHERE id = ?1", params![id]).map_err(store_error)?;
                }
            }
        }
        tx.commit().map_err(store_error)?;
        Ok(received)
    }

    /// Handled: gone.
    pub fn delete(&self, id: i64) -> Result<(), StoreError> {
        self.store.conn().execute("DELETE FROM work_queue WHERE id = ?1", params![id]).map(drop).map_err(store_error)
    }

    /// Failed for the last time: moved to the dead letters, in one transaction (kept in the state
    /// file, as SQS keeps them in the dead-letter queue: a restart loses none).
    pub fn dead_letter(&self, id: i64) -> Result<(), StoreError> {
        let mut conn = self.store.conn();
        let tx = conn.transaction().map_err(store_error)?;
        tx.execute(
            "INSERT INTO dead_letters (at_ms, receives, item) SELECT ?1, receives, item FROM work_queue WHERE id = ?2",
            params![Utc::now().timestamp_millis(), id],
        )
        .map_err(store_error)?;
        tx.execute("DELETE FROM work_queue WHERE id = ?1", params![id]).map_err(store_error)?;
        tx.commit().map_err(store_error)
    }

    /// The dead letters kept in the state file, oldest first.
    pub fn dead_letters(&self) -> Result<Vec<WorkItem>, StoreError> {
        let conn = self.store.conn();
        let mut select = conn.prepare("SELECT item FROM dead_letters ORDER BY id").map_err(store_error)?;
        let texts: Vec<String> = select.query_map([], |r| r.get(0)).map_err(store_error)?.collect::<Result<_, _>>().map_err(store_error)?;
        Ok(texts.iter().filter_map(|t| serde_json::from_str(t).ok()).collect())
    }

    /// Failed: due again after `delay`, its receive count kept.
    pub fn release(&self, id: i64, delay: Duration) -> Result<(), StoreError> {
        self.store
            .conn()
            .execute("UPDATE work_queue SET due_ms = ?1 WHERE id = ?2", params![millis_from_now(delay), id])
            .map(drop)
            .map_err(store_error)
    }

    /// Items on the queue, due or not, in flight or not.
    pub fn len(&self) -> Result<usize, StoreError> {
        let n: i64 = self.store.conn().query_row("SELECT COUNT(*) FROM work_queue", [], |r| r.get(0)).map_err(store_error)?;
        Ok(usize::try_from(n).unwrap_or_default())
    }

    pub fn is_empty(&self) -> Result<bool, StoreError> {
        Ok(self.len()? == 0)
    }

    /// Every queued item, in the order they are due (for inspection).
    pub fn items(&self) -> Result<Vec<WorkItem>, StoreError> {
        let conn = self.store.conn();
        let mut select = conn.prepare("SELECT item FROM work_queue ORDER BY due_ms, id").map_err(store_error)?;
        let texts: Vec<String> = select.query_map([], |r| r.get(0)).map_err(store_error)?.collect::<Result<_, _>>().map_err(store_error)?;
        texts.iter().map(|t| serde_json::from_str(t).map_err(store_error)).collect()
    }

    /// The key this state file's work items are signed with, made on first use: items queued by
    /// one `serve` process must verify in the next.
    pub fn work_item_key(&self) -> Result<WorkItemKey, StoreError> {
        const NAME: &str = "work-item-key";
        let conn = self.store.conn();
        let existing: Option<String> =
            conn.query_row("SELECT value FROM local_keys WHERE name = ?1", params![NAME], |r| r.get(0)).optional().map_err(store_error)?;
        let secret = match existing {
            Some(secret) => secret,
            None => {
                let secret = format!("{:032x}{:032x}", rand::random::<u128>(), rand::random::<u128>());
                conn.execute("INSERT OR IGNORE INTO local_keys (name, value) VALUES (?1, ?2)", params![NAME, secret])
                    .map_err(store_error)?;
                conn.query_row("SELECT value FROM local_keys WHERE name = ?1", params![NAME], |r| r.get(0)).map_err(store_error)?
            }
        };
        WorkItemKey::new(&secret).ok_or_else(|| StoreError::invalid("the state file's work-item key is too short"))
    }
}

impl WorkQueue for SqliteQueue {
    async fn enqueue(&self, item: &WorkItem, delay: Duration) -> Result<(), QueueError> {
        if delay > MAX_DELAY {
            return Err(QueueError::invalid(format!("delay {}s exceeds the 900 s SQS allows", delay.as_secs())));
        }
        self.push(std::slice::from_ref(item), delay).map_err(medic_core::ports::pass_on)
    }

    async fn enqueue_batch(&self, items: &[WorkItem]) -> Result<(), QueueError> {
        self.push(items, Duration::ZERO).map_err(medic_core::ports::pass_on)
    }
}

#[cfg(test)]
mod tests {
    use medic_core::event::WorkKind;

    use super::*;

    fn item(name: &str) -> WorkItem {
        let app = medic_core::event::AppRef { name: name.into(), namespace: "argocd".into(), project: None };
        WorkItem::for_app(WorkKind::Recheck, app, medic_core::Trigger::sweep(), "w", Utc::now())
    }

    fn state_file(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("medic-queue-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("state.db")
    }

    /// A dead letter leaves the queue and stays in the state file: a restart loses none (they
    /// were kept in memory, and lost with the process).
    #[tokio::test]
    async fn a_dead_letter_leaves_the_queue_and_outlives_the_process() {
        let path = state_file("dead");
        let queue = SqliteQueue::new(Arc::new(SqliteIncidentStore::open(&path).unwrap()));
        queue.enqueue(&item("poison"), Duration::ZERO).await.unwrap();
        let got = queue.receive(10, Duration::from_secs(60)).unwrap();
        queue.dead_letter(got[0].id).unwrap();
        assert!(queue.is_empty().unwrap());
        drop(queue);
        let queue = SqliteQueue::new(Arc::new(SqliteIncidentStore::open(&path).unwrap()));
        let dead = queue.dead_letters().unwrap();
        assert_eq!(dead.iter().map(|i| i.app.name.as_str()).collect::<Vec<_>>(), ["poison"]);
        assert!(queue.receive(10, Duration::from_secs(60)).unwrap().is_empty(), "never delivered again");
    }

    #[tokio::test]
    async fn a_received_item_is_hidden_until_handled_or_its_visibility_ends_and_survives_a_reopen() {
        let path = state_file("visibility");
        let queue = SqliteQueue::new(Arc::new(SqliteIncidentStore::open(&path).unwrap()));
        queue.enqueue(&item("a"), Duration::ZERO).await.unwrap();
        queue.enqueue(&item("later"), Duration::from_secs(600)).await.unwrap();
        let got = queue.receive(10, Duration::from_millis(200)).unwrap();
        assert_eq!((got.len(), got[0].receives, got[0].item.app.name.as_str()), (1, 1, "a"), "only the due one");
        assert!(queue.receive(10, Duration::from_millis(200)).unwrap().is_empty(), "hidden while in flight");

        // The process dies with it in flight: another opens the file, and it comes back.
        drop(queue);
        let queue = SqliteQueue::new(Arc::new(SqliteIncidentStore::open(&path).unwrap()));
        assert_eq!(queue.len().unwrap(), 2, "nothing accepted is lost");
        tokio::time::sleep(Duration::from_millis(250)).await;
        let again = queue.receive(10, Duration::from_secs(60)).unwrap();
        assert_eq!((again.len(), again[0].receives), (1, 2), "back after its visibility, counted");
        queue.release(again[0].id, Duration::ZERO).unwrap();
        let third = queue.receive(10, Duration::from_secs(60)).unwrap();
        assert_eq!(third[0].receives, 3);
        queue.delete(third[0].id).unwrap();
        assert_eq!(queue.items().unwrap().iter().map(|i| i.app.name.as_str()).collect::<Vec<_>>(), ["later"]);
        assert!(queue.enqueue(&item("b"), Duration::from_secs(901)).await.is_err(), "SQS's 15 minutes");
    }

    #[test]
    fn the_work_item_key_is_made_once_per_state_file() {
        let path = state_file("key");
        let first = SqliteQueue::new(Arc::new(SqliteIncidentStore::open(&path).unwrap()));
        let mut signed = item("a");
        first.work_item_key().unwrap().sign(&mut signed);
        let reopened = SqliteQueue::new(Arc::new(SqliteIncidentStore::open(&path).unwrap()));
        assert!(reopened.work_item_key().unwrap().verifies(&signed), "verifies in the next process");
        let other = SqliteQueue::new(Arc::new(SqliteIncidentStore::open(&state_file("key-other")).unwrap()));
        assert!(!other.work_item_key().unwrap().verifies(&signed), "another state file, another key");
    }
}
