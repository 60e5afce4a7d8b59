//! Delivering the outbox: due rows are sent through their notifier, deleted
//! once delivered, and otherwise retried with exponential backoff (5 s
//! doubling to at most a minute between attempts, or longer when the service
//! asked for it with `Retry-After`) until `give_up_after` has passed since
//! the alert was raised; then the row stays as `failed`.
//!
//! Permanent errors (a 4xx from a webhook or chat service such as a revoked
//! token, an SMTP 5xx) mark the rows `failed` at once and are logged as
//! errors: sending the same request again would be refused again, and
//! hammering a service with a revoked token can get the sender blocked. The
//! failed rows stay visible (`semclip_outbox_failed`, the status pages).
//!
//! Rows of a digest notifier for one watch that are due together go out as
//! one message.
//!
//! # Several replicas
//!
//! A round first *claims* the rows due ([`crate::store::Store::claim_alerts`]):
//! their next attempt moves to the end of a lease of [`LEASE`], so each row
//! is delivered by one replica; one killed mid-delivery leaves its rows to
//! be taken again after the lease, by any replica, with the same alert id
//! (the `X-Semclip-Delivery` header, the email `Message-ID`) so a receiver
//! can drop the rare second copy. A round stops starting deliveries once
//! half the lease is gone and gives the rest back at once, so a slow
//! notifier never lets a lease run out under rows still waiting their turn.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tracing::Instrument;

use crate::notify::{Alert, DeliveryError, Notifier};
use crate::page::fetch::backoff;
use crate::store::OutboxEntry;
use crate::store::pool::PoolError;
use crate::store::pool::StorePool;

/// Rows read per round.
const BATCH: usize = 256;

/// How long a round's claim on its rows lasts. Far above one delivery
/// (notifier timeouts are seconds): only a replica that died lets it run
/// out.
pub const LEASE: Duration = Duration::from_secs(120);

/// First retry delay.
const RETRY_BASE: Duration = Duration::from_secs(5);

/// What one delivery round did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Round {
    /// Rows delivered (and deleted).
    pub delivered: usize,
    /// Rows that failed and will be retried.
    pub retrying: usize,
    /// Rows given up on.
    pub given_up: usize,
}

/// Delivers every row due at `now`.
pub async fn deliver_due(
    stores: &Arc<StorePool>,
    notifiers: &HashMap<String, Notifier>,
    give_up_after: Duration,
    now: SystemTime,
) -> Result<Round, PoolError> {
    deliver_claimed(stores, notifiers, give_up_after, now, LEASE).await
}

/// [`deliver_due`] with a lease of `lease`.
pub async fn deliver_claimed(
    stores: &Arc<StorePool>,
    notifiers: &HashMap<String, Notifier>,
    give_up_after: Duration,
    now: SystemTime,
    lease: Duration,
) -> Result<Round, PoolError> {
    let due = stores
        .run(move |s| s.claim_alerts(now, BATCH, now + lease))
        .await?;
    let claimed = std::time::Instant::now();
    // One delivery per row, except digest rows: one per (notifier, watch).
    let mut groups: BTreeMap<(String, String, i64), Vec<OutboxEntry>> = BTreeMap::new();
    for row in due {
        let key = match row.digest {
            Some(_) => (row.notifier.clone(), row.watch.clone(), 0),
            None => (row.notifier.clone(), row.watch.clone(), row.id),
        };
        groups.entry(key).or_default().push(row);
    }
    let mut round = Round::default();
    let mut groups = groups.into_iter();
    while let Some(((notifier_name, watch, _), rows)) = groups.next() {
        if claimed.elapsed() > lease / 2 {
            // The rest go back now rather than when the lease runs out.
            let rest: Vec<i64> = std::iter::once(rows)
                .chain(groups.map(|(_, rows)| rows))
                .flatten()
                .map(|r| r.id)
                .collect();
            tracing::info!(
                rows = rest.len(),
                "outbox round out of time: giving rows back"
            );
            stores
                .run(move |s| s.release_alerts(&rest, SystemTime::now()))
                .await?;
            break;
        }
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let alerts: Vec<Alert> = rows
            .iter()
            .filter_map(|r| match serde_json::from_str(&r.body) {
                Ok(alert) => Some(alert),
                Err(error) => {
                    tracing::error!(id = r.id, error = %crate::ErrorChain(&error), "an outbox row does not decode");
                    None
                }
            })
            .collect();
        let result = match notifiers.get(&notifier_name) {
            _ if alerts.is_empty() => Err(DeliveryError::permanent("the alert does not decode")),
            // The delivery's own logs (a retried request, a service's
            // answer) carry whom it is for; the outcome lines below say it
            // in their fields.
            Some(notifier) => {
                let span = tracing::info_span!("delivery", notifier = %notifier_name, %watch, alert = ?ids);
                notifier.deliver(&alerts).instrument(span).await
            }
            None => Err(DeliveryError::permanent(format!(
                "no notifier `{notifier_name}` is configured any more"
            ))),
        };
        match result {
            Ok(()) => {
                tracing::info!(notifier = %notifier_name, %watch, alerts = ids.len(), "delivered");
                round.delivered += ids.len();
                stores
                    .run(move |s| s.alerts_delivered(&ids, SystemTime::now()))
                    .await?;
            }
            Err(DeliveryError {
                message,
                transient,
                retry_after,
            }) => {
                let oldest = rows.iter().map(|r| r.created_at).min().unwrap_or(now);
                let attempts = rows.iter().map(|r| r.attempts).max().unwrap_or(0) + 1;
                let expired = now.duration_since(oldest).unwrap_or_default() >= give_up_after;
                let give_up = expired || !transient;
                if expired {
                    tracing::error!(notifier = %notifier_name, %watch, error = %message, attempts,
                        "giving up on delivering alerts");
                    round.given_up += ids.len();
                } else if transient {
                    tracing::warn!(notifier = %notifier_name, %watch, error = %message, attempts,
                        ?retry_after, "delivery failed, will retry");
                    round.retrying += ids.len();
                } else {
                    tracing::error!(notifier = %notifier_name, %watch, error = %message, attempts,
                        "delivery refused, giving up");
                    round.given_up += ids.len();
                }
                let wait = backoff(attempts, RETRY_BASE).max(retry_after.unwrap_or_default());
                let next = now + wait;
                stores
                    .run(move |s| s.alerts_failed(&ids, &message, next, give_up))
                    .await?;
            }
        }
    }
    Ok(round)
}
