//! What the store tells the server about keys changing without a command naming them,
//! for keyspace notifications (Redis's notify.c), and each tenant's map from the
//! databases clients SELECT to the ones entries are stored under (SWAPDB, db.c).
//!
//! # Events from inside the store
//!
//! A key expires (lazily, on any lookup, or in the active cycle), is evicted, is
//! created, or is missed by a read inside a shard, where no command layer sees it. Redis
//! calls `notifyKeyspaceEvent` at those points (expire.c `deleteExpiredKeyAndPropagate`,
//! evict.c `performEvictions`, db.c `dbAdd` and `lookupKeyReadWithFlags`). Here the
//! shard checks the live `notify-keyspace-events` flags with one relaxed load of a word
//! every shard already reads (an untaken, predictable branch while they are empty, the
//! default) and only then calls the [`KeyEventSink`] the server installed, with the
//! shard still locked, so the event is published in the order the change happened.
//!
//! # Logical and physical databases
//!
//! Entries carry the database they are stored under. SWAPDB would have to rewrite every
//! entry of two databases if that were the number clients SELECT; instead each tenant has
//! a [`DbMap`] from the database a client names to the one its entries are stored under,
//! and SWAPDB exchanges two slots of it (and moves the two databases' WATCH
//! registrations, see `Store::swap_dbs`). Commands resolve their namespace through the
//! map (`Client::ns` in the server); what the store reports per database (events, INFO
//! keyspace) goes back through the inverse map, so the swap is visible only as Redis's
//! semantics.

use crate::tenant::TenantId;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// Redis's notify flags (server.h `NOTIFY_*`), the bits of `notify-keyspace-events`.
pub mod flags {
    /// `K`: publish on `__keyspace@<db>__:<key>`.
    pub const KEYSPACE: u32 = 1 << 0;
    /// `E`: publish on `__keyevent@<db>__:<event>`.
    pub const KEYEVENT: u32 = 1 << 1;
    /// `g`: generic commands (DEL, EXPIRE, RENAME, ...).
    pub const GENERIC: u32 = 1 << 2;
    /// `$`: string commands.
    pub const STRING: u32 = 1 << 3;
    /// `l`: list commands.
    pub const LIST: u32 = 1 << 4;
    /// `s`: set commands.
    pub const SET: u32 = 1 << 5;
    /// `h`: hash commands.
    pub const HASH: u32 = 1 << 6;
    /// `z`: sorted-set commands.
    pub const ZSET: u32 = 1 << 7;
    /// `x`: a key expired.
    pub const EXPIRED: u32 = 1 << 8;
    /// `e`: a key was evicted.
    pub const EVICTED: u32 = 1 << 9;
    /// `t`: stream commands.
    pub const STREAM: u32 = 1 << 10;
    /// `m`: a read missed (not part of `A`).
    pub const KEY_MISS: u32 = 1 << 11;
    /// `d`: module events.
    pub const MODULE: u32 = 1 << 13;
    /// `n`: a key was created (not part of `A`).
    pub const NEW: u32 = 1 << 14;
    /// `A`: `g$lshzxetd`.
    pub const ALL: u32 =
        GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// An event only the store sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyEvent {
    /// `new` (class `n`): a key was created.
    New,
    /// `expired` (class `x`).
    Expired,
    /// `evicted` (class `e`).
    Evicted,
    /// `keymiss` (class `m`): a read found no key.
    KeyMiss,
}

impl KeyEvent {
    /// The event's name, as Redis publishes it.
    pub fn name(self) -> &'static str {
        match self {
            KeyEvent::New => "new",
            KeyEvent::Expired => "expired",
            KeyEvent::Evicted => "evicted",
            KeyEvent::KeyMiss => "keymiss",
        }
    }

    /// The class flag that enables it.
    pub fn class(self) -> u32 {
        match self {
            KeyEvent::New => flags::NEW,
            KeyEvent::Expired => flags::EXPIRED,
            KeyEvent::Evicted => flags::EVICTED,
            KeyEvent::KeyMiss => flags::KEY_MISS,
        }
    }
}

/// Receives store events. Called with a shard locked: it must not lock a shard itself
/// and must not block (the server's publishes to subscribers' unbounded mailboxes).
pub trait KeyEventSink: Send + Sync {
    /// `flags` is the `notify-keyspace-events` word (the event's class and `K` or `E`
    /// are on); `db` is the database as the tenant's clients name it (after the inverse
    /// of its [`DbMap`]).
    fn key_event(&self, flags: u32, tenant: TenantId, db: u8, key: &[u8], event: KeyEvent);
}

/// Receives every change to a key (written, deleted, evicted, expired, given a TTL:
/// what WATCH sees) once [`crate::Store::set_key_change_sink`] installed it and
/// [`crate::Store::set_key_changes`] turned it on: the server's client-side caching
/// (CLIENT TRACKING) invalidates clients' copies from it. Called with a shard locked:
/// it must not lock a shard itself and must not block.
pub trait KeyChangeSink: Send + Sync {
    fn key_changed(&self, tenant: TenantId, key: &[u8]);
}

/// One tenant's map between the databases clients SELECT (logical) and the ones its
/// entries are stored under (physical): the identity until SWAPDB exchanges two.
///
/// Read with relaxed loads on every keyed command; written only by `Store::swap_dbs`,
/// which the server runs while no other command runs (its gate held exclusively) and
/// with every shard locked, so no command and no shard operation sees it half-swapped.
pub struct DbMap {
    phys: Box<[AtomicU8]>,
    logical: Box<[AtomicU8]>,
}

impl DbMap {
    pub fn identity(databases: usize) -> DbMap {
        let ids = || (0..databases).map(|i| AtomicU8::new(i as u8)).collect();
        DbMap {
            phys: ids(),
            logical: ids(),
        }
    }

    /// The database entries of logical database `db` are stored under.
    #[inline]
    pub fn phys(&self, db: u8) -> u8 {
        match self.phys.get(db as usize) {
            Some(p) => p.load(Relaxed),
            None => db,
        }
    }

    /// The logical database stored under physical database `db`.
    #[inline]
    pub fn logical(&self, db: u8) -> u8 {
        match self.logical.get(db as usize) {
            Some(l) => l.load(Relaxed),
            None => db,
        }
    }

    /// Exchanges logical databases `a` and `b`.
    pub(crate) fn swap(&self, a: u8, b: u8) {
        let (pa, pb) = (self.phys(a), self.phys(b));
        self.phys[a as usize].store(pb, Relaxed);
        self.phys[b as usize].store(pa, Relaxed);
        self.logical[pb as usize].store(a, Relaxed);
        self.logical[pa as usize].store(b, Relaxed);
    }

    /// Back to the identity (the tenant's slot is reused).
    pub(crate) fn reset(&self) {
        for (i, (p, l)) in self.phys.iter().zip(self.logical.iter()).enumerate() {
            p.store(i as u8, Relaxed);
            l.store(i as u8, Relaxed);
        }
    }
}

/// Parses a `notify-keyspace-events` value (notify.c `keyspaceEventsStringToFlags`);
/// None on a character that is not a class.
pub fn parse_flags(classes: &[u8]) -> Option<u32> {
    let mut f = 0;
    for &c in classes {
        f |= match c {
            b'A' => flags::ALL,
            b'g' => flags::GENERIC,
            b'$' => flags::STRING,
            b'l' => flags::LIST,
            b's' => flags::SET,
            b'h' => flags::HASH,
            b'z' => flags::ZSET,
            b'x' => flags::EXPIRED,
            b'e' => flags::EVICTED,
            b'K' => flags::KEYSPACE,
            b'E' => flags::KEYEVENT,
            b't' => flags::STREAM,
            b'm' => flags::KEY_MISS,
            b'd' => flags::MODULE,
            b'n' => flags::NEW,
            _ => return None,
        };
    }
    Some(f)
}

/// Prints flags as CONFIG GET does (notify.c `keyspaceEventsFlagsToString`): `A` for
/// all of `g$lshzxetd`, then `K`, `E`, `m`.
pub fn flags_to_string(f: u32) -> String {
    let mut s = String::new();
    if f & flags::ALL == flags::ALL {
        s.push('A');
    } else {
        for (bit, ch) in [
            (flags::GENERIC, 'g'),
            (flags::STRING, '$'),
            (flags::LIST, 'l'),
            (flags::SET, 's'),
            (flags::HASH, 'h'),
            (flags::ZSET, 'z'),
            (flags::EXPIRED, 'x'),
            (flags::EVICTED, 'e'),
            (flags::STREAM, 't'),
            (flags::MODULE, 'd'),
            (flags::NEW, 'n'),
        ] {
            if f & bit != 0 {
                s.push(ch);
            }
        }
    }
    for (bit, ch) in [
        (flags::KEYSPACE, 'K'),
        (flags::KEYEVENT, 'E'),
        (flags::KEY_MISS, 'm'),
    ] {
        if f & bit != 0 {
            s.push(ch);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip_as_redis_prints_them() {
        let rt = |s: &str| flags_to_string(parse_flags(s.as_bytes()).unwrap());
        assert_eq!(rt("gKE"), "gKE");
        assert_eq!(rt("$lshzxeKE"), "$lshzxeKE");
        assert_eq!(rt("KA"), "AK");
        assert_eq!(rt("EA"), "AE");
        // `n` and `m` are outside `A`; Redis prints `n` only without `A`.
        assert_eq!(rt("AnmKE"), "AKEm");
        assert_eq!(rt("nKE"), "nKE");
        assert_eq!(rt(""), "");
        assert_eq!(parse_flags(b"Kq"), None);
    }

    #[test]
    fn swap_exchanges_and_inverts() {
        let m = DbMap::identity(4);
        m.swap(0, 2);
        assert_eq!((m.phys(0), m.phys(2), m.phys(1)), (2, 0, 1));
        m.swap(2, 3);
        // logical 2 -> 3, logical 3 -> 0
        assert_eq!((m.phys(2), m.phys(3)), (3, 0));
        for l in 0..4 {
            assert_eq!(m.logical(m.phys(l)), l);
        }
        m.reset();
        assert_eq!(m.phys(3), 3);
    }
}
