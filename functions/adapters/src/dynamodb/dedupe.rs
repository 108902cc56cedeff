//! The dedupe store (in-progress leases and done records) and the per-app lock on the state table.

use super::*;

impl DynamoDbStore {
    /// The `PutItem` of a marker written at `now` that expires after `ttl` (the caller adds any
    /// condition).
    fn marker_put(
        &self,
        dedupe_key: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder {
        self.client
            .put_item()
            .table_name(&self.table)
            .item("pk", s(self.dedupe_pk(dedupe_key)))
            .item("sk", s(SINGLETON_SK))
            .item("seen_at", s(now.to_rfc3339()))
            .item(TTL_ATTRIBUTE, n(expiry_secs(now, ttl)))
    }
}

impl DynamoDbStore {
    /// A marker written at `now` unless a live one is there (a conditional `PutItem`): true when
    /// this call wrote it.
    async fn put_if_absent(&self, key: &str, now: DateTime<Utc>, ttl: Duration) -> Result<bool, StoreError> {
        let result = self
            .marker_put(key, now, ttl)
            .condition_expression("attribute_not_exists(#pk) OR #expires <= :now")
            .expression_attribute_names("#pk", "pk")
            .expression_attribute_names("#expires", TTL_ATTRIBUTE)
            .expression_attribute_values(":now", n(now.timestamp()))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) if is_conditional_failure(&e) => Ok(false),
            Err(e) => Err(crate::aws::store_error(&self.op("PutItem"), e)),
        }
    }
}

impl MarkerStore for DynamoDbStore {
    async fn first_sighting(&self, marker: &medic_core::keys::Marker, ttl: Duration) -> Result<Seen, StoreError> {
        let dedupe_key = marker.as_str();
        Ok(if self.put_if_absent(dedupe_key, Utc::now(), ttl).await? { Seen::New } else { Seen::Duplicate })
    }

    /// An unconditional `PutItem`: the marker and its expiry, whatever was there.
    async fn mark(&self, marker: &medic_core::keys::Marker, ttl: Duration) -> Result<(), StoreError> {
        let dedupe_key = marker.as_str();
        self.marker_put(dedupe_key, Utc::now(), ttl).send().await.map_err(|e| crate::aws::store_error(&self.op("PutItem"), e))?;
        Ok(())
    }

    /// `BatchGetItem` in chunks of 100 keys (DynamoDB's limit); keys DynamoDB leaves unprocessed
    /// (throttling) are asked again, a few times, then the read fails rather than answer wrongly.
    async fn marked(&self, keys: &[medic_core::keys::Marker]) -> Result<std::collections::BTreeSet<medic_core::keys::Marker>, StoreError> {
        use aws_sdk_dynamodb::types::KeysAndAttributes;
        let now = Utc::now().timestamp();
        let by_pk: HashMap<String, &medic_core::keys::Marker> = keys.iter().map(|k| (self.dedupe_pk(k.as_str()), k)).collect();
        let pks: Vec<&String> = by_pk.keys().collect();
        let mut found = std::collections::BTreeSet::new();
        for chunk in pks.chunks(100) {
            let key_items: Vec<Item> =
                chunk.iter().map(|pk| Item::from([("pk".to_owned(), s(*pk)), ("sk".to_owned(), s(SINGLETON_SK))])).collect();
            let mut request = KeysAndAttributes::builder()
                .set_keys(Some(key_items))
                .projection_expression("pk, #expires")
                .expression_attribute_names("#expires", TTL_ATTRIBUTE)
                .build()
                .map_err(build_err)?;
            let mut waits = crate::retry::store_backoff(Duration::from_millis(50), 5);
            loop {
                let out = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, request.clone())
                    .send()
                    .await
                    .map_err(|e| crate::aws::store_error(&self.op("BatchGetItem"), e))?;
                for item in out.responses.unwrap_or_default().remove(&self.table).unwrap_or_default() {
                    if !expired(&item, now)
                        && let Some(key) = item.get("pk").and_then(|v| v.as_s().ok()).and_then(|pk| by_pk.get(pk))
                    {
                        found.insert((*key).clone());
                    }
                }
                let Some(left) = out.unprocessed_keys.and_then(|mut u| u.remove(&self.table)).filter(|u| !u.keys.is_empty()) else {
                    break;
                };
                let Some(wait) = waits.next() else {
                    return Err(StoreError::unavailable(format!("{}: keys left unprocessed after 5 tries", self.op("BatchGetItem"))));
                };
                request = left;
                tokio::time::sleep(wait).await;
            }
        }
        Ok(found)
    }

    /// A conditional `PutItem` of a new sighting (absent or expired); when one is live, an
    /// `UpdateItem` that renews its expiry and returns its time. Both are idempotent, so the
    /// SDK's retry of either after a lost answer answers the same.
    async fn sighted(&self, marker: &medic_core::keys::Marker, ttl: Duration) -> Result<DateTime<Utc>, StoreError> {
        let key = marker.as_str();
        let now = Utc::now();
        if self.put_if_absent(key, now, ttl).await? {
            return Ok(now);
        }
        let out = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(self.dedupe_pk(key)))
            .key("sk", s(SINGLETON_SK))
            // A record that lapsed between the two calls is sighted now.
            .update_expression("SET #expires = :expires, #seen = if_not_exists(#seen, :seen)")
            .expression_attribute_names("#expires", TTL_ATTRIBUTE)
            .expression_attribute_names("#seen", "seen_at")
            .expression_attribute_values(":expires", n(expiry_secs(now, ttl)))
            .expression_attribute_values(":seen", s(now.to_rfc3339()))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
            .send()
            .await
            .map_err(|e| crate::aws::store_error(&self.op("UpdateItem"), e))?;
        let seen = out.attributes.as_ref().and_then(|a| a.get("seen_at")).and_then(|v| v.as_s().ok());
        seen.and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc))
            .ok_or_else(|| StoreError::invalid(format!("{}: sighting {key} has no readable seen_at", self.op("UpdateItem"))))
    }

    async fn forget(&self, marker: &medic_core::keys::Marker) -> Result<(), StoreError> {
        let dedupe_key = marker.as_str();
        self.client
            .delete_item()
            .table_name(&self.table)
            .key("pk", s(self.dedupe_pk(dedupe_key)))
            .key("sk", s(SINGLETON_SK))
            .send()
            .await
            .map_err(|e| crate::aws::store_error(&self.op("DeleteItem"), e))?;
        Ok(())
    }
}

impl DeliveryLeases for DynamoDbStore {
    async fn begin(&self, marker: &medic_core::keys::Marker, owner: &str, lease: Duration) -> Result<Begun, StoreError> {
        let dedupe_key = marker.as_str();
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
            Err(e) => Err(crate::aws::store_error(&self.op("PutItem"), e)),
        }
    }

    async fn end(&self, marker: &medic_core::keys::Marker, owner: &str, handled: bool, ttl: Duration) -> Result<(), StoreError> {
        let dedupe_key = marker.as_str();
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
                Err(e) if !is_conditional_failure(&e) => Err(crate::aws::store_error(&self.op("UpdateItem"), e)),
                _ => Ok(()),
            };
        }
        self.delete_if(&self.dedupe_pk(dedupe_key), SINGLETON_SK, ("owner", s(owner))).await
    }
}

impl AppLock for DynamoDbStore {
    async fn try_lock(&self, app: &AppId, owner: &str, ttl: Duration) -> Result<bool, StoreError> {
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
            Err(e) => Err(crate::aws::store_error(&self.op("PutItem"), e)),
        }
    }

    async fn unlock(&self, app: &AppId, owner: &str) -> Result<(), StoreError> {
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
                tracing::warn!(app = %app, owner, "unlock: the lock is not held by this owner (it expired or was taken over); left as it is");
                Ok(())
            }
            Err(e) => Err(crate::aws::store_error(&self.op("DeleteItem"), e)),
        }
    }
}
