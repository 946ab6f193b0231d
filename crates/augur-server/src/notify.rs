//! Keyspace notifications (Redis 7.0's notify.c): with `notify-keyspace-events` on, a
//! change to a key is published as Pub/Sub messages on `__keyspace@<db>__:<key>`
//! (payload: the event name; class `K`) and `__keyevent@<db>__:<event>` (payload: the
//! key; class `E`), for the event classes the flags select.
//!
//! **Per tenant.** Messages go through the tenant's own Pub/Sub space
//! ([`crate::pubsub::Registry`]): a tenant's notifications reach only subscribers of the
//! same tenant, as its keys are visible to it alone. `<db>` is the database as the
//! tenant's clients name it (after SWAPDB, the logical number).
//!
//! **Cost when off.** Commands call [`notify`] after a change, as Redis's commands call
//! `notifyKeyspaceEvent`; it loads the flags word (relaxed) and tests the event's class:
//! with the flags empty (the default) that is one predictable, untaken branch, and the
//! slow path that formats channel names is out of line. Events only the store sees
//! (`expired`, `evicted`, `new`, `keymiss`) come through [`StoreEvents`], which the store
//! calls behind the same kind of check (see `augur_store::notify`).

use crate::commands::Client;
use crate::pubsub::{Kind, Registry};
use crate::state::Shared;
use augur_store::notify::flags::{KEYEVENT, KEYSPACE};
use augur_store::{KeyEvent, KeyEventSink, TenantId};
use std::sync::Arc;

pub use augur_store::notify::flags;

/// Publishes event `event` of class `class` for `key` in the client's selected
/// database, if that class is on (notify.c `notifyKeyspaceEvent`).
#[inline]
pub fn notify(shared: &Shared, c: &Client, class: u32, event: &str, key: &[u8]) {
    notify_in(shared, c.tenant, c.db, class, event, key);
}

/// As [`notify`], for a tenant's logical database named outright (the one [`notify`]
/// and [`notify_db`] are; a blocked client is served from another connection).
#[inline]
pub fn notify_in(shared: &Shared, tenant: TenantId, db: u8, class: u32, event: &str, key: &[u8]) {
    if shared.store.notify_flags() & class != 0 {
        publish(
            &shared.pubsub,
            shared.store.notify_flags(),
            tenant,
            db,
            event,
            key,
        );
    }
}

/// As [`notify`], for logical database `db` (MOVE's and COPY's destination).
#[inline]
pub fn notify_db(shared: &Shared, c: &Client, db: u8, class: u32, event: &str, key: &[u8]) {
    notify_in(shared, c.tenant, db, class, event, key);
}

/// The slow path: the `K` and `E` messages.
#[cold]
fn publish(reg: &Registry, flags: u32, tenant: TenantId, db: u8, event: &str, key: &[u8]) {
    // No connection gets its copy ahead of its reply: id 0 is never a client's.
    let mut own = Vec::new();
    if flags & KEYSPACE != 0 {
        let mut chan = format!("__keyspace@{db}__:").into_bytes();
        chan.extend_from_slice(key);
        reg.publish(tenant, Kind::Channel, &chan, event.as_bytes(), 0, &mut own);
    }
    if flags & KEYEVENT != 0 {
        let chan = format!("__keyevent@{db}__:{event}");
        reg.publish(tenant, Kind::Channel, chan.as_bytes(), key, 0, &mut own);
    }
}

/// The store's [`KeyEventSink`]: `expired`, `evicted`, `new` and `keymiss` events,
/// published like the commands' (the store has checked the class is on).
pub struct StoreEvents(pub Arc<Registry>);

impl KeyEventSink for StoreEvents {
    fn key_event(&self, flags: u32, tenant: TenantId, db: u8, key: &[u8], event: KeyEvent) {
        publish(&self.0, flags, tenant, db, event.name(), key);
    }
}
