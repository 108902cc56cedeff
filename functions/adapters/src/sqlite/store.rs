//! `SqliteIncidentStore`: the incident-store port on an embedded SQLite file, so `medic sweep`
//! remembers incidents and idempotency records between runs (the ladder advances across runs, and
//! a rerun repeats no action). The same contract as the DynamoDB store: a claim is a conditional
//! write keyed by the idempotency key, with an in-progress expiry for crashed holders.
//!
//! The same file also keeps, for `medic incidents`, each open incident's last decision
//! (`open_incidents.last_decision`, a `DecisionNote` as JSON), a record of every incident closed in
//! the last [`CLOSED_RETENTION`] (`closed_incidents`), every decision taken in that time
//! (`decisions`: a `DecisionRecord` as JSON, what `medic report` and `medic replay` read), and
//! the Slack escalator's records
//! (`escalations`, the `EscalationStore` port: which message shows which incident, its buttons,
//! fleets), so `medic serve` remembers its Slack threads across restarts and `medic incidents`
//! can link them; and `medic serve`'s work queue (`work_queue`, [`super::queue`]) with the
//! key its work items are signed with (`local_keys`), so a restart loses nothing it accepted.

use medic_core::ports::PortError;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use medic_core::AppId;
use medic_core::incident::{ACTION_RETENTION, Attempt, DecisionNote, History, IncidentRecord, Outcome};
use medic_core::keys::IdempotencyKey;
use medic_core::keys::IncidentKey;
use medic_core::ladder::Rung;
use medic_core::ports::{Claim, EscalationStore, IncidentLedger, IncidentStore, StoreError, Versioned};
use medic_core::record::DecisionRecord;
use medic_core::timeline::TimelineEvent;
use rusqlite::{Connection, OptionalExtension, params};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS open_incidents (
    app TEXT PRIMARY KEY,
    incident TEXT NOT NULL,
    opened_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS actions (
    key TEXT PRIMARY KEY,
    app TEXT NOT NULL,
    incident_id TEXT NOT NULL,
    rung TEXT NOT NULL,
    at TEXT NOT NULL,
    outcome TEXT NOT NULL,
    done INTEGER NOT NULL,
    expires_at INTEGER
);
CREATE INDEX IF NOT EXISTS actions_by_incident ON actions (app, incident_id);
CREATE TABLE IF NOT EXISTS closed_incidents (
    app TEXT NOT NULL,
    incident_id TEXT NOT NULL,
    incident TEXT NOT NULL,
    opened_at TEXT NOT NULL,
    closed_at TEXT NOT NULL,
    last_decision TEXT,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (app, incident_id)
);
CREATE TABLE IF NOT EXISTS decisions (
    decided_at_us INTEGER NOT NULL,
    app TEXT NOT NULL,
    record TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (decided_at_us, app)
);
CREATE INDEX IF NOT EXISTS decisions_by_expiry ON decisions (expires_at);
CREATE TABLE IF NOT EXISTS timeline (
    incident_id TEXT NOT NULL,
    id TEXT NOT NULL,
    app TEXT NOT NULL,
    at_us INTEGER NOT NULL,
    event TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (incident_id, id)
);
CREATE TABLE IF NOT EXISTS work_queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    due_ms INTEGER NOT NULL,
    receives INTEGER NOT NULL DEFAULT 0,
    item TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS work_queue_by_due ON work_queue (due_ms);
CREATE TABLE IF NOT EXISTS local_keys (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS dead_letters (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms INTEGER NOT NULL,
    receives INTEGER NOT NULL,
    item TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS dedupe (
    key TEXT PRIMARY KEY,
    expires_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sightings (
    key TEXT PRIMARY KEY,
    first_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    until_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS escalations (
    grp TEXT NOT NULL,
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    doc TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (grp, id)
);
";

/// How long the record of a closed incident is kept unless [`SqliteIncidentStore::with_retention`]
/// says otherwise (as the DynamoDB store keeps it).
pub const CLOSED_RETENTION: Duration = medic_core::record::DEFAULT_RETENTION;

pub struct SqliteIncidentStore {
    conn: Mutex<Connection>,
    /// How long a closed incident and a decision are kept (`MEDIC_HISTORY_DAYS`).
    retention: Duration,
}

/// An app id kept as text in a row.
fn app_id(text: &str) -> Result<AppId, StoreError> {
    AppId::parse(text).ok_or_else(|| StoreError::invalid(format!("`{text}` is not namespace/name")))
}

/// A failure of the state file as the store port's: a busy or locked database, or a failed read
/// or write of the file, may pass; anything else (a constraint, a bad statement, a value that
/// does not parse) will not.
pub(crate) fn err<E: std::error::Error + Send + Sync + 'static>(e: E) -> StoreError {
    use rusqlite::ErrorCode::{CannotOpen, DatabaseBusy, DatabaseLocked, DiskFull, SystemIoFailure};
    let sqlite = (&e as &dyn std::any::Any).downcast_ref::<rusqlite::Error>();
    let passing = matches!(sqlite, Some(rusqlite::Error::SqliteFailure(f, _)) if matches!(f.code, DatabaseBusy | DatabaseLocked | SystemIoFailure | DiskFull | CannotOpen));
    StoreError::classified(passing, e.to_string()).caused_by(e)
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(err)
}

fn from_json<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(err)
}

/// Enum values as their serde names (`"hard_refresh"`, `"no_effect"`).
fn name<T: serde::Serialize>(v: &T) -> Result<String, StoreError> {
    Ok(to_json(v)?.trim_matches('"').to_owned())
}

fn parse_name<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    from_json(&format!("\"{s}\""))
}

impl SqliteIncidentStore {
    /// Opens (creating if needed) the state file; `:memory:` keeps state for this process only.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::invalid(format!("creating {}: {e}", dir.display())))?;
        }
        let conn = Connection::open(path).map_err(|e| StoreError::invalid(format!("opening {}: {e}", path.display())))?;
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA busy_timeout=5000;").map_err(err)?;
        conn.execute_batch(SCHEMA).map_err(err)?;
        // Files written before decision notes (NULL reads as "no note") and before actions
        // expired (M1; NULL: kept, its incident open) get the columns added.
        add_column(&conn, "open_incidents", "last_decision", "TEXT")?;
        add_column(&conn, "actions", "expires_at", "INTEGER")?;
        Ok(Self { conn: Mutex::new(conn), retention: CLOSED_RETENTION })
    }

    /// The store keeping closed incidents and decisions for `retention` instead of
    /// [`CLOSED_RETENTION`].
    pub fn with_retention(self, retention: Duration) -> Self {
        Self { retention, ..self }
    }

    pub fn in_memory() -> Result<Self, StoreError> {
        Self::open(Path::new(":memory:"))
    }

    pub(crate) fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Adds `column` to `table` in a file written by a release that did not have it.
fn add_column(conn: &Connection, table: &str, column: &str, decl: &str) -> Result<(), StoreError> {
    let present: i64 =
        conn.query_row("SELECT COUNT(*) FROM pragma_table_info(?1) WHERE name = ?2", params![table, column], |r| r.get(0)).map_err(err)?;
    if present == 0 {
        conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {decl}")).map_err(err)?;
    }
    Ok(())
}

/// The attempts of incident `incident_id` of `app`, oldest first.
fn attempts(conn: &Connection, app: &str, incident_id: &str) -> Result<Vec<Attempt>, StoreError> {
    let mut stmt =
        conn.prepare("SELECT key, rung, at, outcome FROM actions WHERE app = ?1 AND incident_id = ?2 AND (expires_at IS NULL OR expires_at > ?3) ORDER BY at").map_err(err)?;
    let rows = stmt
        .query_map(params![app, incident_id, Utc::now().timestamp()], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?))
        })
        .map_err(err)?;
    let mut attempts = Vec::new();
    for row in rows {
        let (key, rung, at, outcome) = row.map_err(err)?;
        attempts.push(Attempt {
            rung: parse_name::<Rung>(&rung)?,
            at: at.parse::<DateTime<Utc>>().map_err(err)?,
            idempotency_key: IdempotencyKey::parse(&key),
            outcome: parse_name::<Outcome>(&outcome)?,
        });
    }
    Ok(attempts)
}

/// A note this version cannot read is shown as absent rather than hiding the incident.
fn note(json: Option<String>) -> Option<DecisionNote> {
    json.and_then(|j| serde_json::from_str(&j).ok())
}

impl IncidentStore for SqliteIncidentStore {
    async fn history(&self, app: &AppId) -> Result<History, StoreError> {
        let conn = self.conn();
        let incident: Option<String> = conn
            .query_row("SELECT incident FROM open_incidents WHERE app = ?1", params![app.as_str()], |r| r.get(0))
            .optional()
            .map_err(err)?;
        let Some(incident) = incident else { return Ok(History::default()) };
        let incident: IncidentKey = from_json(&incident)?;
        let attempts = attempts(&conn, app.as_str(), &incident.id())?;
        Ok(History { incident: Some(incident), attempts })
    }

    async fn claim(&self, app: &AppId, incident: &IncidentKey, attempt: &Attempt, in_progress_for: Duration) -> Result<Claim, StoreError> {
        let key = attempt
            .idempotency_key
            .as_ref()
            .ok_or_else(|| StoreError::invalid("an attempt without an idempotency key cannot be claimed"))?;
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(err)?;
        let existing: Option<(String, String, bool)> = tx
            .query_row(
                "SELECT at, outcome, done FROM actions WHERE key = ?1 AND (expires_at IS NULL OR expires_at > ?2)",
                params![key.as_str(), attempt.at.timestamp()],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(err)?;
        if let Some((at, outcome, done)) = existing {
            if done {
                return Ok(Claim::AlreadyDone(parse_name(&outcome)?));
            }
            let until = at.parse::<DateTime<Utc>>().map_err(err)? + chrono::Duration::from_std(in_progress_for).unwrap_or_default();
            if attempt.at < until {
                return Ok(Claim::Held { until });
            }
        }
        tx.execute(
            "INSERT INTO actions (key, app, incident_id, rung, at, outcome, done) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0)
             ON CONFLICT(key) DO UPDATE SET at = excluded.at, outcome = excluded.outcome, done = 0, expires_at = NULL",
            params![
                key.as_str(),
                app.as_str(),
                incident.id(),
                name(&attempt.rung)?,
                attempt.at.to_rfc3339(),
                name(&attempt.outcome.while_claimed())?
            ],
        )
        .map_err(err)?;
        // Opening (again): the incident's earlier actions are kept for its life.
        tx.execute(
            "UPDATE actions SET expires_at = NULL WHERE app = ?1 AND incident_id = ?2 AND expires_at > ?3",
            params![app.as_str(), incident.id(), attempt.at.timestamp()],
        )
        .map_err(err)?;
        tx.execute(
            "INSERT INTO open_incidents (app, incident, opened_at) VALUES (?1, ?2, ?3)
             ON CONFLICT(app) DO UPDATE SET incident = excluded.incident, opened_at = CASE WHEN incident = excluded.incident THEN opened_at ELSE excluded.opened_at END",
            params![app.as_str(), to_json(incident)?, attempt.at.to_rfc3339()],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(Claim::Granted)
    }

    async fn complete(&self, _app: &AppId, key: &IdempotencyKey, outcome: Outcome) -> Result<(), StoreError> {
        let n = self
            .conn()
            .execute("UPDATE actions SET outcome = ?2, done = 1 WHERE key = ?1", params![key.as_str(), name(&outcome)?])
            .map_err(err)?;
        if n == 0 { Err(StoreError::invalid(format!("no claim for {key}"))) } else { Ok(()) }
    }

    async fn mark_reached(&self, _app: &AppId, key: &IdempotencyKey) -> Result<(), StoreError> {
        let n = self
            .conn()
            .execute("UPDATE actions SET outcome = ?2 WHERE key = ?1 AND done = 0", params![key.as_str(), name(&Outcome::Reached)?])
            .map_err(err)?;
        if n == 0 { Err(StoreError::invalid(format!("no claim in progress for {key}"))) } else { Ok(()) }
    }

    async fn release(&self, _app: &AppId, key: &IdempotencyKey) -> Result<(), StoreError> {
        self.conn().execute("DELETE FROM actions WHERE key = ?1 AND done = 0", params![key.as_str()]).map_err(err)?;
        Ok(())
    }

    async fn close(&self, app: &AppId, at: DateTime<Utc>) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(err)?;
        let open: Option<(String, String, Option<String>)> = tx
            .query_row("SELECT incident, opened_at, last_decision FROM open_incidents WHERE app = ?1", params![app.as_str()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
            .map_err(err)?;
        if let Some((incident, opened_at, last_decision)) = open {
            let id = from_json::<IncidentKey>(&incident)?.id();
            let expires = at + chrono::Duration::from_std(self.retention).unwrap_or_default();
            tx.execute(
                "INSERT OR REPLACE INTO closed_incidents (app, incident_id, incident, opened_at, closed_at, last_decision, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![app.as_str(), id, incident, opened_at, at.to_rfc3339(), last_decision, expires.timestamp()],
            )
            .map_err(err)?;
            tx.execute("DELETE FROM open_incidents WHERE app = ?1", params![app.as_str()]).map_err(err)?;
            let retained = at + chrono::Duration::from_std(ACTION_RETENTION).unwrap_or_default();
            tx.execute(
                "UPDATE actions SET expires_at = ?3 WHERE app = ?1 AND incident_id = ?2",
                params![app.as_str(), id, retained.timestamp()],
            )
            .map_err(err)?;
            tx.execute(
                "UPDATE timeline SET expires_at = MAX(expires_at, ?3) WHERE app = ?1 AND incident_id = ?2",
                params![app.as_str(), id, retained.timestamp()],
            )
            .map_err(err)?;
        }
        tx.execute("DELETE FROM timeline WHERE expires_at <= ?1", params![Utc::now().timestamp()]).map_err(err)?;
        tx.execute("DELETE FROM closed_incidents WHERE expires_at <= ?1", params![Utc::now().timestamp()]).map_err(err)?;
        // Expired actions go, as TTL deletes them in DynamoDB (against the closing's own time).
        tx.execute("DELETE FROM actions WHERE expires_at <= ?1", params![at.timestamp()]).map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(())
    }

    async fn note_decision(&self, app: &AppId, incident: &IncidentKey, note: &DecisionNote) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "UPDATE open_incidents SET last_decision = ?3 WHERE app = ?1 AND incident = ?2",
                params![app.as_str(), to_json(incident)?, to_json(note)?],
            )
            .map_err(err)?;
        Ok(())
    }

    async fn open_incidents(&self) -> Result<Vec<AppId>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn.prepare("SELECT app FROM open_incidents ORDER BY app").map_err(err)?;
        let apps = stmt.query_map([], |r| r.get(0)).map_err(err)?.collect::<Result<Vec<String>, _>>().map_err(err)?;
        apps.iter().map(|a| app_id(a)).collect()
    }

    /// One row per app and time (`INSERT OR IGNORE`: a second write of the same record keeps
    /// the first); rows past their expiry go with the write, as TTL deletes them in DynamoDB.
    async fn record_decision(&self, record: &DecisionRecord) -> Result<(), StoreError> {
        let at = record.decided_at();
        let expires = at + chrono::Duration::from_std(self.retention).unwrap_or_default();
        let conn = self.conn();
        conn.execute(
            "INSERT OR IGNORE INTO decisions (decided_at_us, app, record, expires_at) VALUES (?1, ?2, ?3, ?4)",
            params![at.timestamp_micros(), record.decision.app.as_str(), to_json(record)?, expires.timestamp()],
        )
        .map_err(err)?;
        conn.execute("DELETE FROM decisions WHERE expires_at <= ?1", params![Utc::now().timestamp()]).map_err(err)?;
        Ok(())
    }

    /// `INSERT OR IGNORE` on (incident, id): a second write of the same event keeps the first.
    async fn append_event(&self, event: &TimelineEvent) -> Result<bool, StoreError> {
        let conn = self.conn();
        let expires = (event.at + chrono::Duration::from_std(ACTION_RETENTION).unwrap_or_default()).timestamp();
        let written = conn
            .execute(
                "INSERT OR IGNORE INTO timeline (incident_id, id, app, at_us, event, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![event.incident_id, event.id, event.app.as_str(), event.at.timestamp_micros(), to_json(event)?, expires],
            )
            .map(|n| n == 1)
            .map_err(err);
        crate::audit::audit_event(event, &written);
        written
    }

    async fn timeline(&self, app: &AppId, incident_id: &str) -> Result<Vec<TimelineEvent>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT event FROM timeline WHERE app = ?1 AND incident_id = ?2 AND expires_at > ?3 ORDER BY at_us, id")
            .map_err(err)?;
        let rows = stmt
            .query_map(params![app.as_str(), incident_id, Utc::now().timestamp()], |r| r.get::<_, String>(0))
            .map_err(err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        let mut events: Vec<TimelineEvent> = rows.iter().map(|r| from_json(r)).collect::<Result<_, _>>()?;
        events.sort_by_key(|e| (e.at, e.kind));
        Ok(events)
    }
}

impl IncidentLedger for SqliteIncidentStore {
    async fn incidents(&self, include_closed: bool) -> Result<Vec<IncidentRecord>, StoreError> {
        let conn = self.conn();
        let mut records = Vec::new();
        let mut stmt = conn.prepare("SELECT app, incident, opened_at, last_decision FROM open_incidents ORDER BY app").map_err(err)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, Option<String>>(3)?)))
            .map_err(err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        for (app, incident, opened_at, last_decision) in rows {
            let incident: IncidentKey = from_json(&incident)?;
            records.push(IncidentRecord {
                attempts: attempts(&conn, &app, &incident.id())?,
                app: app_id(&app)?,
                incident,
                opened_at: opened_at.parse().map_err(err)?,
                closed_at: None,
                last_decision: note(last_decision),
            });
        }
        if include_closed {
            let mut stmt = conn
                .prepare(
                    "SELECT app, incident, opened_at, closed_at, last_decision FROM closed_incidents WHERE expires_at > ?1 ORDER BY app, opened_at",
                )
                .map_err(err)?;
            let rows = stmt
                .query_map(params![Utc::now().timestamp()], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, Option<String>>(4)?,
                    ))
                })
                .map_err(err)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(err)?;
            for (app, incident, opened_at, closed_at, last_decision) in rows {
                let incident: IncidentKey = from_json(&incident)?;
                records.push(IncidentRecord {
                    attempts: attempts(&conn, &app, &incident.id())?,
                    app: app_id(&app)?,
                    incident,
                    opened_at: opened_at.parse().map_err(err)?,
                    closed_at: Some(closed_at.parse().map_err(err)?),
                    last_decision: note(last_decision),
                });
            }
        }
        Ok(records)
    }

    async fn decisions(&self, since: DateTime<Utc>) -> Result<Vec<DecisionRecord>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare("SELECT record FROM decisions WHERE decided_at_us >= ?1 AND expires_at > ?2 ORDER BY decided_at_us, app")
            .map_err(err)?;
        let rows = stmt
            .query_map(params![since.timestamp_micros(), Utc::now().timestamp()], |r| r.get::<_, String>(0))
            .map_err(err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        rows.iter().map(|r| from_json(r)).collect()
    }
}

/// The Slack escalator's records in the state file, with the same compare-and-set and expiry as
/// the DynamoDB and memory stores.
impl EscalationStore for SqliteIncidentStore {
    async fn load(&self, group: &str, id: &str) -> Result<Option<Versioned>, StoreError> {
        let row: Option<(i64, String)> = self
            .conn()
            .query_row(
                "SELECT version, doc FROM escalations WHERE grp = ?1 AND id = ?2 AND expires_at > ?3",
                params![group, id, Utc::now().timestamp_millis()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(err)?;
        row.map(|(version, doc)| Ok(Versioned { version: version as u64, doc: from_json(&doc)? })).transpose()
    }

    async fn store(
        &self,
        group: &str,
        id: &str,
        doc: &serde_json::Value,
        expected: Option<u64>,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let now = Utc::now().timestamp_millis();
        let expires = now.saturating_add(ttl.as_millis().min(i64::MAX as u128) as i64);
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(err)?;
        let current: Option<i64> = tx
            .query_row("SELECT version FROM escalations WHERE grp = ?1 AND id = ?2 AND expires_at > ?3", params![group, id, now], |r| {
                r.get(0)
            })
            .optional()
            .map_err(err)?;
        if current.map(|v| v as u64) != expected {
            return Ok(false);
        }
        tx.execute(
            "INSERT OR REPLACE INTO escalations (grp, id, version, doc, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![group, id, expected.map_or(1, |v| v + 1) as i64, doc.to_string(), expires],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(true)
    }

    async fn list(&self, group: &str) -> Result<Vec<(String, Versioned)>, StoreError> {
        let conn = self.conn();
        let mut stmt =
            conn.prepare("SELECT id, version, doc FROM escalations WHERE grp = ?1 AND expires_at > ?2 ORDER BY id").map_err(err)?;
        let rows = stmt
            .query_map(params![group, Utc::now().timestamp_millis()], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?))
            })
            .map_err(err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        rows.into_iter().map(|(id, version, doc)| Ok((id, Versioned { version: version as u64, doc: from_json(&doc)? }))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn incident() -> IncidentKey {
        IncidentKey {
            instance: "default".into(),
            app: medic_core::AppId::new("argocd", "web"),
            revision: "abc".into(),
            began_at: Some(Utc.with_ymd_and_hms(2026, 11, 1, 12, 0, 0).unwrap()),
        }
    }

    fn attempt(rung: Rung, minute: u32) -> Attempt {
        Attempt {
            rung,
            at: Utc.with_ymd_and_hms(2026, 11, 1, 12, minute, 0).unwrap(),
            idempotency_key: Some(incident().key_for(rung)),
            outcome: Outcome::Requested,
        }
    }

    #[tokio::test]
    async fn claims_are_exclusive_survive_reopening_and_expire_for_crashed_holders() {
        let dir = std::env::temp_dir().join(format!("medic-store-{}", std::process::id()));
        let path = dir.join("state.db");
        let _ = std::fs::remove_file(&path);
        let ttl = Duration::from_secs(600);
        {
            let store = SqliteIncidentStore::open(&path).unwrap();
            assert_eq!(
                store.claim(&medic_core::AppId::new("argocd", "web"), &incident(), &attempt(Rung::Refresh, 0), ttl).await.unwrap(),
                Claim::Granted
            );
            assert!(matches!(
                store.claim(&medic_core::AppId::new("argocd", "web"), &incident(), &attempt(Rung::Refresh, 5), ttl).await.unwrap(),
                Claim::Held { .. }
            ));
            // The holder crashed: after the in-progress expiry another run may take over.
            assert_eq!(
                store.claim(&medic_core::AppId::new("argocd", "web"), &incident(), &attempt(Rung::Refresh, 11), ttl).await.unwrap(),
                Claim::Granted
            );
            store.complete(&medic_core::AppId::new("argocd", "web"), &incident().key_for(Rung::Refresh), Outcome::NoEffect).await.unwrap();
        }
        let store = SqliteIncidentStore::open(&path).unwrap();
        assert_eq!(
            store.claim(&medic_core::AppId::new("argocd", "web"), &incident(), &attempt(Rung::Refresh, 30), ttl).await.unwrap(),
            Claim::AlreadyDone(Outcome::NoEffect)
        );
        let history = store.history(&medic_core::AppId::new("argocd", "web")).await.unwrap();
        assert_eq!(history.incident, Some(incident()));
        assert_eq!(history.attempts.len(), 1);
        assert_eq!(history.attempts[0].outcome, Outcome::NoEffect);
        assert_eq!(store.open_incidents().await.unwrap(), vec![medic_core::AppId::new("argocd", "web")]);
        store.close(&medic_core::AppId::new("argocd", "web"), Utc::now()).await.unwrap();
        assert_eq!(store.history(&medic_core::AppId::new("argocd", "web")).await.unwrap(), History::default());
    }

    #[tokio::test]
    async fn a_released_claim_can_be_claimed_again_but_a_completed_one_cannot_be_released() {
        let store = SqliteIncidentStore::in_memory().unwrap();
        let ttl = Duration::from_secs(600);
        let key = incident().key_for(Rung::Sync);
        assert_eq!(
            store.claim(&medic_core::AppId::new("argocd", "web"), &incident(), &attempt(Rung::Sync, 0), ttl).await.unwrap(),
            Claim::Granted
        );
        store.release(&medic_core::AppId::new("argocd", "web"), &key).await.unwrap();
        assert_eq!(
            store.claim(&medic_core::AppId::new("argocd", "web"), &incident(), &attempt(Rung::Sync, 1), ttl).await.unwrap(),
            Claim::Granted
        );
        store.complete(&medic_core::AppId::new("argocd", "web"), &key, Outcome::Succeeded).await.unwrap();
        store.release(&medic_core::AppId::new("argocd", "web"), &key).await.unwrap();
        assert_eq!(
            store.claim(&medic_core::AppId::new("argocd", "web"), &incident(), &attempt(Rung::Sync, 2), ttl).await.unwrap(),
            Claim::AlreadyDone(Outcome::Succeeded)
        );
        assert!(
            store
                .complete(
                    &medic_core::AppId::new("argocd", "web"),
                    &IdempotencyKey::derive(&incident(), Rung::Escalate),
                    Outcome::Succeeded
                )
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_note_lands_on_its_open_incident_only_and_a_closed_incident_is_kept_with_it_for_a_week() {
        let store = SqliteIncidentStore::in_memory().unwrap();
        let ttl = Duration::from_secs(600);
        let note = DecisionNote { action: "refresh".into(), failure_mode: "stale-reconcile".into(), ..DecisionNote::default() };
        // No open incident: a note opens none.
        store.note_decision(&medic_core::AppId::new("argocd", "web"), &incident(), &note).await.unwrap();
        assert!(store.incidents(true).await.unwrap().is_empty());
        store.claim(&medic_core::AppId::new("argocd", "web"), &incident(), &attempt(Rung::Refresh, 0), ttl).await.unwrap();
        let other = IncidentKey { revision: "def".into(), ..incident() };
        store
            .note_decision(&medic_core::AppId::new("argocd", "web"), &other, &DecisionNote { action: "sync".into(), ..note.clone() })
            .await
            .unwrap();
        store.note_decision(&medic_core::AppId::new("argocd", "web"), &incident(), &note).await.unwrap();
        let open = store.incidents(false).await.unwrap();
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].last_decision.as_ref(), Some(&note), "the note of another incident is not kept");
        assert_eq!(open[0].attempts.len(), 1);

        let closed_at = Utc::now();
        store.close(&medic_core::AppId::new("argocd", "web"), closed_at).await.unwrap();
        assert!(store.incidents(false).await.unwrap().is_empty());
        let all = store.incidents(true).await.unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].closed_at, Some(closed_at));
        assert_eq!(all[0].last_decision.as_ref(), Some(&note));
        assert_eq!(all[0].attempts.len(), 1, "its rungs are still there");
        // A week later it is gone.
        store.conn().execute("UPDATE closed_incidents SET expires_at = ?1", params![Utc::now().timestamp() - 1]).unwrap();
        assert!(store.incidents(true).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_state_file_from_before_notes_and_expiry_gains_the_columns_and_reads() {
        let dir = std::env::temp_dir().join(format!("medic-store-old-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.db");
        let _ = std::fs::remove_file(&path);
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE open_incidents (app TEXT PRIMARY KEY, incident TEXT NOT NULL, opened_at TEXT NOT NULL);
                 CREATE TABLE actions (key TEXT PRIMARY KEY, app TEXT NOT NULL, incident_id TEXT NOT NULL, rung TEXT NOT NULL,
                     at TEXT NOT NULL, outcome TEXT NOT NULL, done INTEGER NOT NULL);",
            )
            .unwrap();
            conn.execute(
                "INSERT INTO open_incidents VALUES ('argocd/web', ?1, '2026-11-01T12:00:00+00:00')",
                params![serde_json::to_string(&incident()).unwrap()],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO actions VALUES (?1, 'argocd/web', ?2, 'refresh', '2026-11-01T12:00:00+00:00', 'no_effect', 1)",
                params![incident().key_for(Rung::Refresh).as_str(), incident().id()],
            )
            .unwrap();
        }
        let store = SqliteIncidentStore::open(&path).unwrap();
        let open = store.incidents(false).await.unwrap();
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].last_decision, None);
        let history = store.history(&medic_core::AppId::new("argocd", "web")).await.unwrap();
        assert_eq!(history.incident, Some(incident()));
        assert_eq!(history.attempts.len(), 1, "an action written before expiry existed is kept (its incident is open)");
    }

    #[tokio::test]
    async fn escalation_records_keep_the_compare_and_set_contract() {
        let store = SqliteIncidentStore::in_memory().unwrap();
        let ttl = Duration::from_secs(60);
        let doc = serde_json::json!({"a": 1});
        assert!(store.store("g", "1", &doc, None, ttl).await.unwrap());
        assert!(!store.store("g", "1", &doc, None, ttl).await.unwrap(), "exists");
        assert!(!store.store("g", "1", &doc, Some(7), ttl).await.unwrap(), "wrong version");
        assert!(store.store("g", "1", &serde_json::json!({"a": 2}), Some(1), ttl).await.unwrap());
        assert_eq!(store.load("g", "1").await.unwrap(), Some(Versioned { version: 2, doc: serde_json::json!({"a": 2}) }));
        assert!(store.store("g", "2", &doc, None, Duration::ZERO).await.unwrap());
        assert_eq!(store.load("g", "2").await.unwrap(), None, "expired");
        assert!(store.store("g", "2", &doc, None, ttl).await.unwrap(), "an expired record may be created again");
        assert_eq!(store.list("g").await.unwrap().iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["1", "2"]);
    }
}
