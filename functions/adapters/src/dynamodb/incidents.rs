//! The incident store and the incident ledger on the state table: open and closed incidents, and the
//! actions (claims) of each.

use super::*;

impl IncidentStore for DynamoDbStore {
    async fn history(&self, app: &AppId) -> Result<History, StoreError> {
        let pk = self.app_pk(app);
        let Some(item) = self.get(&pk, INCIDENT_SK).await? else { return Ok(History::default()) };
        let incident: IncidentKey = serde_json::from_str(get_s(&item, "incident")?)
            .map_err(|e| StoreError::invalid(format!("{pk} INCIDENT: `incident` is not an incident: {e}")))?;
        let items = self.action_items(&pk, &incident.id()).await?;
        // Actions of an open incident are kept for its life; a record written by an earlier
        // release still carries an expiry from its claim (M1), which is removed here, once.
        for item in items.iter().filter(|item| item.contains_key(TTL_ATTRIBUTE)) {
            self.set_expiry(&pk, get_s(item, "sk")?, None).await?;
        }
        let attempts = Self::to_attempts(items)?;
        Ok(History { incident: Some(incident), attempts })
    }

    async fn claim(&self, app: &AppId, incident: &IncidentKey, attempt: &Attempt, in_progress_for: Duration) -> Result<Claim, StoreError> {
        let key = attempt
            .idempotency_key
            .as_ref()
            .ok_or_else(|| StoreError::invalid("an attempt without an idempotency key cannot be claimed"))?;
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
            .item("app", s(app.as_str()))
            .item("incident_id", s(incident.id()))
            .item("idempotency_key", s(key.as_str()))
            .item("rung", s(name(&attempt.rung)?))
            .item("at", s(attempt.at.to_rfc3339()))
            .item("outcome", s(name(&attempt.outcome.while_claimed())?))
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

        let mut waits = crate::retry::store_backoff(Duration::from_millis(20), CLAIM_TRIES as usize);
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
                    tracing::debug!(app = %app, key = key.as_str(), try_no, reason = %describe("TransactWriteItems", &e), "claim cancelled; retrying");
                    if let Some(wait) = waits.next() {
                        tokio::time::sleep(wait).await;
                    }
                }
                Err(e) => return Err(crate::aws::store_error(&self.op("TransactWriteItems"), e)),
            }
        }
        Err(StoreError::unavailable(format!(
            "claim of {key} for {app}: cancelled {CLAIM_TRIES} times by concurrent writes; try again later"
        )))
    }

    async fn complete(&self, app: &AppId, key: &IdempotencyKey, outcome: Outcome) -> Result<(), StoreError> {
        self.set_outcome(app, key, outcome, true).await
    }

    async fn mark_reached(&self, app: &AppId, key: &IdempotencyKey) -> Result<(), StoreError> {
        self.set_outcome(app, key, Outcome::Reached, false).await
    }

    async fn release(&self, app: &AppId, key: &IdempotencyKey) -> Result<(), StoreError> {
        let Some(sk) = self.find_action(app, key).await? else { return Ok(()) };
        // A completed record is kept: its action was taken.
        self.delete_if(&self.app_pk(app), &sk, ("status", s(IN_PROGRESS))).await
    }

    async fn close(&self, app: &AppId, at: DateTime<Utc>) -> Result<(), StoreError> {
        // The open incident becomes a closed record (kept for the retention) in the same
        // transaction that deletes it, conditioned on it still being the incident read here.
        let pk = self.app_pk(app);
        for _ in 0..CLAIM_TRIES {
            let Some(item) = self.get(&pk, INCIDENT_SK).await? else { return Ok(()) };
            let id = get_s(&item, "incident_id")?.to_owned();
            let expires = at.checked_add_signed(TimeDelta::from_std(self.retention).unwrap_or(TimeDelta::MAX)).unwrap_or(at);
            let mut closed = Put::builder()
                .table_name(&self.table)
                .item("pk", s(&pk))
                .item("sk", s(format!("{CLOSED_SK_PREFIX}{id}")))
                .item("app", s(app.as_str()))
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
            let mut actions = self.query(&pk, &format!("ACTION#{id}#"), None).await?;
            // Its timeline too: each event kept at least as long after the close.
            actions.extend(self.query(&pk, &format!("{EVENT_SK_PREFIX}{id}#"), None).await?);
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
                Err(e) => return Err(crate::aws::store_error(&self.op("TransactWriteItems"), e)),
            }
        }
        Err(StoreError::unavailable(format!(
            "closing the incident of {app}: cancelled {CLAIM_TRIES} times by concurrent writes; try again later"
        )))
    }

    async fn record_decision(&self, record: &medic_core::record::DecisionRecord) -> Result<(), StoreError> {
        self.put_decision(record).await
    }

    async fn append_event(&self, event: &medic_core::timeline::TimelineEvent) -> Result<bool, StoreError> {
        let json = serde_json::to_string(event).map_err(|e| StoreError::invalid(format!("serialising the timeline event: {e}")))?;
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(self.app_pk(&event.app)))
            .item("sk", s(format!("{EVENT_SK_PREFIX}{}#{}", event.incident_id, event.id)))
            .item("at_us", n(event.at.timestamp_micros()))
            .item("event", s(json))
            .item(TTL_ATTRIBUTE, n(expiry_secs(event.at, ACTION_RETENTION)))
            .condition_expression("attribute_not_exists(#sk)")
            .expression_attribute_names("#sk", "sk")
            .send()
            .await;
        let written = match result {
            Ok(_) => Ok(true),
            Err(e) if is_conditional_failure(&e) => Ok(false),
            Err(e) => Err(crate::aws::store_error(&self.op("PutItem"), e)),
        };
        crate::audit::audit_event(event, &written);
        written
    }

    async fn note_decision(&self, app: &AppId, incident: &IncidentKey, note: &DecisionNote) -> Result<(), StoreError> {
        let json = serde_json::to_string(note).map_err(|e| StoreError::invalid(format!("serialising the decision note: {e}")))?;
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
            Err(e) => Err(crate::aws::store_error(&self.op("UpdateItem"), e)),
        }
    }

    async fn open_incidents(&self) -> Result<Vec<AppId>, StoreError> {
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
                .map_err(|e| crate::aws::store_error(&self.op("Scan"), e))?;
            for item in out.items.unwrap_or_default() {
                let app = get_app(&item)?;
                // The prefix of instance `a` also matches instance `a#b`: keep exact matches.
                if get_s(&item, "pk")?.strip_prefix(&prefix) == Some(app.as_str()) {
                    apps.push(app);
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

    async fn timeline(&self, app: &AppId, incident_id: &str) -> Result<Vec<medic_core::timeline::TimelineEvent>, StoreError> {
        let now = Utc::now().timestamp();
        let items = self.query(&self.app_pk(app), &format!("{EVENT_SK_PREFIX}{incident_id}#"), None).await?;
        let mut events = Vec::with_capacity(items.len());
        for item in items.iter().filter(|i| !expired(i, now)) {
            let event: medic_core::timeline::TimelineEvent =
                serde_json::from_str(get_s(item, "event")?).map_err(|e| StoreError::invalid(format!("reading a timeline event: {e}")))?;
            events.push(event);
        }
        events.sort_by_key(|e| (e.at, e.kind));
        Ok(events)
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
            let out = scan.send().await.map_err(|e| crate::aws::store_error(&self.op("Scan"), e))?;
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

    async fn decisions(&self, since: DateTime<Utc>) -> Result<Vec<medic_core::record::DecisionRecord>, StoreError> {
        self.query_decisions(since).await
    }
}

impl DynamoDbStore {
    /// Sets the outcome of the action claimed under `key`, completing it (`completing`) or
    /// leaving it in progress; an error when the claim is gone (released between the lookup and
    /// the update) or, when not completing, no longer in progress.
    async fn set_outcome(&self, app: &AppId, key: &IdempotencyKey, outcome: Outcome, completing: bool) -> Result<(), StoreError> {
        let no_claim = || StoreError::invalid(format!("no claim {}for {key}", if completing { "" } else { "in progress " }));
        let sk = self.find_action(app, key).await?.ok_or_else(no_claim)?;
        let update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(self.app_pk(app)))
            .key("sk", s(sk))
            .expression_attribute_names("#outcome", "outcome")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":outcome", s(name(&outcome)?));
        let update = if completing {
            update
                .update_expression("SET #outcome = :outcome, #status = :completed REMOVE #until")
                .condition_expression("attribute_exists(#pk)")
                .expression_attribute_names("#pk", "pk")
                .expression_attribute_names("#until", "in_progress_until")
                .expression_attribute_values(":completed", s(COMPLETED))
        } else {
            update
                .update_expression("SET #outcome = :outcome")
                .condition_expression("#status = :in_progress")
                .expression_attribute_values(":in_progress", s(IN_PROGRESS))
        };
        match update.send().await {
            Ok(_) => Ok(()),
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Err(no_claim()),
            Err(e) => Err(crate::aws::store_error(&self.op("UpdateItem"), e)),
        }
    }
}
