//! WATCH bookkeeping: which keys of a tenant's part some connection watches, and the
//! flag to raise when one of them changes (Redis's `watched_keys` dict and
//! `touchWatchedKey`, multi.c).
//!
//! Why here, in the store, and not in the command layer: a watched key can change
//! without any command naming it — evicted, expired (lazily or by the active cycle),
//! flushed — and only the shard sees those. Each tenant's part keeps its own table, so
//! a touch costs one `Option` check when nothing is watched (the common case) and one
//! hash lookup in the key's own shard when something is.

use hashbrown::{Equivalent, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The flag a connection's watches share: raised when any watched key is modified,
/// checked (and cleared) by EXEC. Redis's `CLIENT_DIRTY_CAS`.
pub type WatchFlag = Arc<AtomicBool>;

/// Watched keys of one part: (db, key) -> the flags of the connections watching it.
#[derive(Default)]
pub(crate) struct WatchTable {
    keys: HashMap<(u8, Box<[u8]>), Vec<WatchFlag>>,
}

impl WatchTable {
    pub(crate) fn add(&mut self, db: u8, key: &[u8], flag: &WatchFlag) {
        let flags = self.keys.entry((db, key.into())).or_default();
        if !flags.iter().any(|f| Arc::ptr_eq(f, flag)) {
            flags.push(flag.clone());
        }
    }

    /// Removes one connection's watch of a key; true if the table is now empty.
    pub(crate) fn remove(&mut self, db: u8, key: &[u8], flag: &WatchFlag) -> bool {
        let k = KeyRef(db, key);
        if let Some(flags) = self.keys.get_mut(&k) {
            flags.retain(|f| !Arc::ptr_eq(f, flag));
            if flags.is_empty() {
                self.keys.remove(&k);
            }
        }
        self.keys.is_empty()
    }

    /// Raises the flag of every connection watching (db, key).
    #[inline]
    pub(crate) fn touch(&self, db: u8, key: &[u8]) {
        if let Some(flags) = self.keys.get(&KeyRef(db, key)) {
            for f in flags {
                f.store(true, Ordering::Relaxed);
            }
        }
    }

    /// The same watches with databases `a` and `b` exchanged (SWAPDB: a watch follows
    /// the database number its client named).
    pub(crate) fn swap_dbs(self, a: u8, b: u8) -> WatchTable {
        let keys = self
            .keys
            .into_iter()
            .map(|((db, key), flags)| {
                let db = if db == a {
                    b
                } else if db == b {
                    a
                } else {
                    db
                };
                ((db, key), flags)
            })
            .collect();
        WatchTable { keys }
    }

    /// The watched (db, key) pairs (FLUSHALL touches the ones that exist).
    pub(crate) fn keys(&self) -> impl Iterator<Item = &(u8, Box<[u8]>)> {
        self.keys.keys()
    }
}

/// A borrowed (db, key) that looks up an owned one without allocating: it hashes as the
/// tuple `(u8, Box<[u8]>)` does (the byte, then the slice).
struct KeyRef<'a>(u8, &'a [u8]);

impl Hash for KeyRef<'_> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.hash(h);
        self.1.hash(h);
    }
}

impl Equivalent<(u8, Box<[u8]>)> for KeyRef<'_> {
    fn equivalent(&self, k: &(u8, Box<[u8]>)) -> bool {
        self.0 == k.0 && self.1 == &*k.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touch_raises_only_the_watchers_of_that_db_and_key() {
        let (a, b) = (WatchFlag::default(), WatchFlag::default());
        let mut t = WatchTable::default();
        t.add(0, b"x", &a);
        t.add(1, b"x", &b);
        t.touch(0, b"y");
        t.touch(2, b"x");
        assert!(!a.load(Ordering::Relaxed) && !b.load(Ordering::Relaxed));
        t.touch(0, b"x");
        assert!(a.load(Ordering::Relaxed) && !b.load(Ordering::Relaxed));
        assert!(!t.remove(0, b"x", &a));
        assert!(t.remove(1, b"x", &b));
        t.touch(1, b"x");
        assert!(!b.load(Ordering::Relaxed));
    }
}
