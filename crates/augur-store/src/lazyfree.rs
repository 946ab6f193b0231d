//! Freeing large values off the request path (Redis's lazyfree.c).
//!
//! Why: a key's removal happens under its shard's lock, and freeing a collection of a
//! million members takes tens of milliseconds (26 ms for a 1M-member set on the 2-core
//! machine we measure on), during which every other command on that shard waits.
//! UNLINK, FLUSHDB / FLUSHALL ASYNC and the `lazyfree-lazy-*` parameters instead take the
//! key out of the keyspace at once (it is gone for every later command, its bytes no
//! longer counted) and hand the value to a background thread that drops it.
//!
//! As in Redis, only a value whose free effort is over [`LAZYFREE_THRESHOLD`] goes to
//! the thread ([`free_effort`], lazyfree.c `lazyfreeGetFreeEffort`): sending a small one
//! costs more than freeing it. INFO's `lazyfree_pending_objects` counts values handed
//! over and not yet freed, `lazyfreed_objects` the ones freed (reset by CONFIG
//! RESETSTAT).

use crate::object::Object;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, OnceLock};

/// lazyfree.c's `LAZYFREE_THRESHOLD`: values of at most this effort are freed in place.
pub const LAZYFREE_THRESHOLD: usize = 64;

/// Roughly how many allocations freeing `obj` releases (lazyfree.c
/// `lazyfreeGetFreeEffort`): a list's nodes (Redis 7.0's lists are all quicklists), a
/// hash table's or skiplist's elements, a stream's nodes plus its groups times the
/// first group's PEL (Redis's own estimate, to stay O(1)); 1 for a compact encoding.
pub fn free_effort(obj: &Object) -> usize {
    match obj {
        Object::List(l) => l.node_count(),
        Object::Hash(_) | Object::Set(_) | Object::ZSet(_) => match obj.encoding() {
            "hashtable" | "skiplist" => obj.len(),
            _ => 1,
        },
        Object::Stream(s) => {
            let groups = s.groups();
            let pel = groups.values().next().map_or(0, |g| g.pel().len());
            s.node_count() + groups.len() * (1 + pel)
        }
    }
}

/// Which removals free their values lazily besides UNLINK and FLUSH ASYNC (the
/// `lazyfree-lazy-*` parameters the store applies itself; `lazyfree-lazy-user-del` and
/// `-user-flush` are the server's choice of command).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LazyFreeConfig {
    /// `lazyfree-lazy-expire`: keys removed by expiry, lazy or active.
    pub expire: bool,
    /// `lazyfree-lazy-eviction`: keys evicted under `maxmemory`.
    pub eviction: bool,
    /// `lazyfree-lazy-server-del`: a value a command replaces (SET over a key, RENAME,
    /// COPY or MOVE onto one, RESTORE REPLACE).
    pub server_del: bool,
}

/// The background freer: a thread started on first use, and its counters.
#[derive(Default)]
pub(crate) struct LazyFree {
    sender: OnceLock<Sender<Box<Object>>>,
    counters: Arc<Counters>,
    expire: AtomicBool,
    eviction: AtomicBool,
    server_del: AtomicBool,
}

#[derive(Default)]
struct Counters {
    pending: AtomicU64,
    freed: AtomicU64,
}

impl LazyFree {
    pub(crate) fn configure(&self, cfg: LazyFreeConfig) {
        self.expire.store(cfg.expire, Relaxed);
        self.eviction.store(cfg.eviction, Relaxed);
        self.server_del.store(cfg.server_del, Relaxed);
    }

    #[inline]
    pub(crate) fn on_server_del(&self) -> bool {
        self.server_del.load(Relaxed)
    }

    #[inline]
    pub(crate) fn on_expire(&self) -> bool {
        self.expire.load(Relaxed)
    }

    #[inline]
    pub(crate) fn on_eviction(&self) -> bool {
        self.eviction.load(Relaxed)
    }

    /// Frees `obj`: on the background thread if its effort is over the threshold,
    /// here otherwise (or if the thread cannot be started).
    pub(crate) fn free(&self, obj: Box<Object>) {
        if free_effort(&obj) <= LAZYFREE_THRESHOLD {
            return drop(obj);
        }
        let Some(sender) = self.sender() else {
            return drop(obj);
        };
        self.counters.pending.fetch_add(1, Relaxed);
        if let Err(returned) = sender.send(obj) {
            self.counters.pending.fetch_sub(1, Relaxed);
            drop(returned.0);
        }
    }

    fn sender(&self) -> Option<&Sender<Box<Object>>> {
        if let Some(s) = self.sender.get() {
            return Some(s);
        }
        let (tx, rx) = channel::<Box<Object>>();
        let counters = self.counters.clone();
        let started = std::thread::Builder::new()
            .name("augur-lazyfree".into())
            .spawn(move || {
                // Ends when the store (the sender's owner) is dropped.
                for obj in rx {
                    drop(obj);
                    counters.pending.fetch_sub(1, Relaxed);
                    counters.freed.fetch_add(1, Relaxed);
                }
            });
        if started.is_err() {
            return None;
        }
        // A racing first use may have installed its own sender: its thread serves it,
        // this one's ends as `tx` is dropped here.
        let _ = self.sender.set(tx);
        self.sender.get()
    }

    /// (values handed over and not yet freed, values freed since the last reset).
    pub(crate) fn stats(&self) -> (u64, u64) {
        (
            self.counters.pending.load(Relaxed),
            self.counters.freed.load(Relaxed),
        )
    }

    pub(crate) fn reset_stats(&self) {
        self.counters.freed.store(0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::Limits;

    fn big_set(n: usize) -> Box<Object> {
        let mut o = Object::new_set();
        let limits = Limits::default();
        if let Object::Set(s) = &mut o {
            for i in 0..n {
                s.insert(format!("m{i}").as_bytes(), &limits);
            }
        }
        Box::new(o)
    }

    #[test]
    fn only_values_over_the_threshold_go_to_the_thread() {
        let lf = LazyFree::default();
        let small = big_set(10);
        assert_eq!(free_effort(&small), 10, "a hash table's members");
        lf.free(small);
        assert_eq!(lf.stats(), (0, 0));
        assert!(lf.sender.get().is_none(), "no thread for small values");
        let big = big_set(1000);
        assert_eq!(free_effort(&big), 1000);
        lf.free(big);
        let t0 = std::time::Instant::now();
        while lf.stats() != (0, 1) {
            assert!(t0.elapsed().as_secs() < 10, "{:?}", lf.stats());
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        lf.reset_stats();
        assert_eq!(lf.stats(), (0, 0));
    }
}
