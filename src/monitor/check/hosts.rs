//! Replica host slots: `limits.host_spacing` and `limits.per_host` kept
//! across the replicas sharing a store, for the engine's host limiter
//! ([`super::Engine::new`]).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::page::fetch;
use crate::store::StoreError;
use crate::store::pool::PoolError;
use crate::store::replicas::{ReplicaPool, Replicas, SlotWaiter};
use crate::sync::lock;

/// `limits.host_spacing` and `limits.per_host` across the replicas
/// sharing the store: each request start is reserved in the database
/// ([`Replicas::reserve_host_start`]), and each request takes one of its
/// host's `per_host` slots there ([`Replicas::take_host_slot`]) for as long
/// as it runs. If the database cannot be reached for either, the replica
/// goes on with its own spacing and count, and says so.
#[derive(Debug)]
pub(super) struct StoreHosts {
    replicas: Arc<ReplicaPool>,
    /// The owner of this process's slots: its pid and a random part.
    owner: Arc<str>,
    /// The hosts (with the `per_host` they were made for) whose slot rows
    /// this process made sure of.
    ensured: std::sync::Mutex<std::collections::HashSet<(String, usize)>>,
}

impl StoreHosts {
    pub(super) fn new(replicas: Arc<ReplicaPool>) -> StoreHosts {
        StoreHosts {
            replicas,
            owner: Arc::from(format!(
                "{}/{:08x}",
                std::process::id(),
                rand::random::<u32>()
            )),
            ensured: std::sync::Mutex::default(),
        }
    }

    fn unavailable(host: &str, what: &str, error: PoolError) {
        tracing::warn!(host, error = %crate::ErrorChain(&error),
            "cannot {what} in the store; counting this replica's requests only");
    }
}

impl fetch::SharedHosts for StoreHosts {
    fn reserve<'a>(
        &'a self,
        host: &'a str,
        spacing: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<SystemTime>> + Send + 'a>> {
        Box::pin(async move {
            let owned = host.to_owned();
            let reserved = self
                .replicas
                .run(move |r| r.reserve_host_start(&owned, SystemTime::now(), spacing))
                .await;
            match reserved {
                Ok(at) => Some(at),
                Err(error) => {
                    tracing::warn!(host, error = %crate::ErrorChain(&error),
                        "cannot reserve a request start in the store; spacing this replica's only");
                    None
                }
            }
        })
    }

    fn take_slot<'a>(
        &'a self,
        host: &'a str,
        per_host: usize,
        until: SystemTime,
        waiter: &'a fetch::Waiter,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = fetch::SlotTake> + Send + 'a>> {
        Box::pin(async move {
            let key = (host.to_owned(), per_host);
            let ensured = lock(&self.ensured).contains(&key);
            if !ensured {
                let owned = host.to_owned();
                match self
                    .replicas
                    .run(move |r| r.ensure_host_slots(&owned, per_host))
                    .await
                {
                    Ok(()) => {
                        lock(&self.ensured).insert(key);
                    }
                    Err(error) => {
                        Self::unavailable(host, "make a host's request slots", error);
                        return fetch::SlotTake::Unavailable;
                    }
                }
            }
            let owned = host.to_owned();
            let owner = Arc::clone(&self.owner);
            let waiter = waiter.clone();
            let taken = self
                .replicas
                .run(move |r| {
                    let asking = SlotWaiter {
                        ticket: &waiter.ticket,
                        since: waiter.since,
                        queues: waiter.queued,
                    };
                    r.take_host_slot(&owned, per_host, &owner, SystemTime::now(), until, &asking)
                })
                .await;
            match taken {
                Ok(Some(slot)) => fetch::SlotTake::Taken(slot),
                Ok(None) => fetch::SlotTake::Full,
                Err(error) => {
                    Self::unavailable(host, "take a request slot", error);
                    fetch::SlotTake::Unavailable
                }
            }
        })
    }

    fn give_back(&self, host: &str, slot: i64) {
        // With the slots given back at the same moment, in one statement
        // (ReplicaPool::give_back_host_slot).
        self.replicas.give_back_host_slot(host, slot, &self.owner);
    }

    fn leave_queue(&self, host: &str, ticket: &str) {
        let ticket = ticket.to_owned();
        self.in_background(
            host,
            "cannot leave the queue for a request slot; the wait stops counting soon",
            move |r, host| r.leave_host_queue(host, &ticket, SystemTime::now()),
        );
    }
}

impl StoreHosts {
    /// Runs `write` on `host`'s rows from a task of its own (the caller,
    /// a guard being dropped, cannot wait), logging `failed` if it fails.
    /// Without a runtime (shutting down) nothing is written: a slot is free
    /// again when its lease ends, and a wait stops counting once it is not
    /// renewed.
    fn in_background(
        &self,
        host: &str,
        failed: &'static str,
        write: impl FnOnce(&mut Replicas<'_>, &str) -> Result<(), StoreError> + Send + 'static,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let replicas = Arc::clone(&self.replicas);
        let host = host.to_owned();
        runtime.spawn(async move {
            let owned = host.clone();
            if let Err(error) = replicas.run(move |r| write(r, &owned)).await {
                let error = format!("{:#}", anyhow::Error::from(error));
                tracing::warn!(host, error, "{failed}");
            }
        });
    }
}
