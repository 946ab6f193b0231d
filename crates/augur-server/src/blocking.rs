//! Clients blocked on lists (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP), sorted sets
//! (BZPOPMIN, BZPOPMAX, BZMPOP) and streams (XREAD, XREADGROUP with BLOCK), as Redis
//! 7.0's blocked.c serves them.
//!
//! # The model, and why it is Redis's
//!
//! A blocking pop that finds nothing registers a [`Waiter`] on each of its keys (in
//! arrival order per key) and its connection stops reading commands until the waiter
//! is served, times out or is unblocked (CLIENT UNBLOCK, the connection's end). A
//! command that makes a list key appear (a push creating it, LMOVE's destination,
//! RENAME, COPY, MOVE, RESTORE, SWAPDB) *signals* the key as ready; after the command
//! that signalled it has run (the whole EXEC or script, never half of one), the
//! connection that ran it serves the ready keys' waiters itself, first blocked first
//! served, doing each waiter's pop and writing its reply, as Redis's
//! handleClientsBlockedOnKeys does in the pusher's processCommand. So a client that
//! pushes and then reads sees the blocked clients' pops already done (the suite's
//! "Linked LMOVEs" relies on it), and no element is handed to two waiters.
//!
//! # Races
//!
//! A blocking command checks its keys and registers while holding the registry's lock,
//! having first raised `pending`; a push signals after its write, reading `pending`. If
//! the push's write came after the check, the signal sees the count and marks the key
//! ready, and the serve (which needs the same lock) runs after the registration; if it
//! came before, the check saw the element. Serving takes the registry lock, then shard
//! locks; a blocking command takes them in the same order; pushes hold no shard lock
//! when they signal, and the ready list has its own lock, so nothing waits in a cycle.

use augur_store::{End, TenantId};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};

/// A blocked key: tenant, logical database (the client's SELECTed index: after a
/// SWAPDB the waiter follows the index, as in Redis) and the key.
pub type BlockedKey = (TenantId, u8, Vec<u8>);

/// What a blocked client does once one of its keys has an element.
#[derive(Debug, Clone)]
pub enum BlockOp {
    /// BLPOP / BRPOP (`count` None: a [key, element] reply) or BLMPOP (`count` Some:
    /// [key, [elements]]).
    Pop { end: End, count: Option<usize> },
    /// BLMOVE / BRPOPLPUSH: the element is pushed to `dst` and replied alone.
    Move { dst: Vec<u8>, from: End, to: End },
    /// BZPOPMIN / BZPOPMAX (`count` None: a [key, member, score] reply) or BZMPOP
    /// (`count` Some: [key, [[member, score], ...]]), from the low end or with `max` the
    /// high end of a sorted set.
    ZPop { max: bool, count: Option<usize> },
    /// XREAD / XREADGROUP BLOCK: served when a key has entries after the waited-for ID
    /// (see `commands::stream`).
    Stream(Box<crate::commands::stream::StreamWait>),
}

impl BlockOp {
    /// The type of key that can serve this operation.
    pub fn kind(&self) -> augur_store::Kind {
        match self {
            BlockOp::ZPop { .. } => augur_store::Kind::ZSet,
            BlockOp::Stream(_) => augur_store::Kind::Stream,
            _ => augur_store::Kind::List,
        }
    }
}

/// How a wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Waiting,
    /// The reply the serving connection wrote (in the waiter's protocol).
    Served(Vec<u8>),
    /// The timeout passed or CLIENT UNBLOCK ... TIMEOUT: a null reply.
    TimedOut,
    /// CLIENT UNBLOCK ... ERROR, or an error met when served (BLMOVE's destination of
    /// another type): this error reply.
    Failed(String),
}

/// One blocked client.
#[derive(Debug)]
pub struct Waiter {
    pub client_id: u64,
    pub tenant: TenantId,
    pub db: u8,
    pub keys: Vec<Vec<u8>>,
    pub op: BlockOp,
    pub resp3: bool,
    outcome: Mutex<Outcome>,
    pub wake: tokio::sync::Notify,
}

impl Waiter {
    pub fn new(
        client_id: u64,
        tenant: TenantId,
        db: u8,
        keys: Vec<Vec<u8>>,
        op: BlockOp,
        resp3: bool,
    ) -> Arc<Waiter> {
        Arc::new(Waiter {
            client_id,
            tenant,
            db,
            keys,
            op,
            resp3,
            outcome: Mutex::new(Outcome::Waiting),
            wake: tokio::sync::Notify::new(),
        })
    }

    pub fn outcome(&self) -> Outcome {
        self.outcome.lock().unwrap().clone()
    }
}

/// A connection's wait: its waiter and when it times out (ms since the epoch; None:
/// never).
#[derive(Debug, Clone)]
pub struct Blocked {
    pub waiter: Arc<Waiter>,
    pub deadline_ms: Option<u64>,
}

/// Waiters by key and by client.
#[derive(Default)]
pub struct Registry {
    by_key: HashMap<BlockedKey, VecDeque<Arc<Waiter>>>,
    by_client: HashMap<u64, Arc<Waiter>>,
    /// Keys WATCHed with [`Blocking::group_flag`] for blocked XREADGROUPs.
    group_keys: HashSet<BlockedKey>,
}

impl Registry {
    /// Registers a waiter on each of its keys (a key named twice once).
    pub fn add(&mut self, w: Arc<Waiter>) {
        for k in &w.keys {
            let q = self.by_key.entry((w.tenant, w.db, k.clone())).or_default();
            if !q.iter().any(|o| Arc::ptr_eq(o, &w)) {
                q.push_back(w.clone());
            }
        }
        self.by_client.insert(w.client_id, w);
    }

    /// Ends a wait: the waiter leaves every queue with `outcome` (if it was still
    /// waiting) and its connection is woken. False if it had already ended.
    pub fn finish(&mut self, w: &Arc<Waiter>, outcome: Outcome) -> bool {
        {
            let mut o = w.outcome.lock().unwrap();
            if *o != Outcome::Waiting {
                return false;
            }
            *o = outcome;
        }
        for k in &w.keys {
            let bk = (w.tenant, w.db, k.clone());
            if let Some(q) = self.by_key.get_mut(&bk) {
                q.retain(|o| !Arc::ptr_eq(o, w));
                if q.is_empty() {
                    self.by_key.remove(&bk);
                }
            }
        }
        if self
            .by_client
            .get(&w.client_id)
            .is_some_and(|o| Arc::ptr_eq(o, w))
        {
            self.by_client.remove(&w.client_id);
        }
        w.wake.notify_one();
        true
    }

    /// The waiters of a key, first blocked first.
    pub fn waiters(&self, key: &BlockedKey) -> Vec<Arc<Waiter>> {
        self.by_key
            .get(key)
            .map(|q| q.iter().cloned().collect())
            .unwrap_or_default()
    }

    pub fn client(&self, id: u64) -> Option<Arc<Waiter>> {
        self.by_client.get(&id).cloned()
    }

    /// Records that a blocked XREADGROUP waits on `key`; true if the key is not yet
    /// watched (the caller then WATCHes it with the group flag).
    pub fn watch_group_key(&mut self, key: BlockedKey) -> bool {
        self.group_keys.insert(key)
    }

    /// Watched keys no blocked XREADGROUP waits on any more, forgotten here (the caller
    /// drops their watches).
    pub fn idle_group_keys(&mut self) -> Vec<BlockedKey> {
        let by_key = &self.by_key;
        let idle: Vec<BlockedKey> = self
            .group_keys
            .iter()
            .filter(|k| {
                !by_key.get(*k).is_some_and(|q| {
                    q.iter()
                        .any(|w| matches!(&w.op, BlockOp::Stream(s) if s.group.is_some()))
                })
            })
            .cloned()
            .collect();
        for k in &idle {
            self.group_keys.remove(k);
        }
        idle
    }

    /// Every blocked key of a tenant's logical database (SWAPDB readies them all).
    pub fn keys_of_db(&self, tenant: TenantId, db: u8) -> Vec<BlockedKey> {
        self.by_key
            .keys()
            .filter(|(t, d, _)| *t == tenant && *d == db)
            .cloned()
            .collect()
    }
}

/// The server's blocked clients and ready keys.
#[derive(Default)]
pub struct Blocking {
    registry: Mutex<Registry>,
    /// Blocked clients plus blocking commands checking their keys (see the module
    /// documentation): zero, the common case, makes a signal one atomic load.
    pending: AtomicUsize,
    ready: Mutex<Vec<BlockedKey>>,
    any_ready: AtomicBool,
    /// Raised by the store when a key a blocked XREADGROUP waits on changes in any way
    /// (written, deleted, replaced, flushed, expired: the WATCH hook), so that such a
    /// waiter learns its key or group is gone, as Redis's signalDeletedKeyAsReady
    /// arranges. One flag for all of them: a change readies every watched key.
    group_flag: augur_store::WatchFlag,
}

impl Blocking {
    /// The registry, for a blocking command's check-and-register or a serve.
    pub fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap()
    }

    /// A blocking command starts checking its keys (before it reads any).
    pub fn begin_check(&self) {
        self.pending.fetch_add(1, SeqCst);
    }

    /// The check found an element (or failed): no wait.
    pub fn end_check(&self) {
        self.pending.fetch_sub(1, SeqCst);
    }

    /// The check found nothing: the waiter is registered (its `pending` count stays
    /// until it is finished).
    pub fn block(&self, reg: &mut Registry, w: Arc<Waiter>) {
        reg.add(w);
    }

    /// Ends a wait (timeout, CLIENT UNBLOCK, a served reply). False if already ended.
    pub fn finish(&self, reg: &mut Registry, w: &Arc<Waiter>, outcome: Outcome) -> bool {
        let done = reg.finish(w, outcome);
        if done {
            self.pending.fetch_sub(1, SeqCst);
        }
        done
    }

    /// Clients blocked now (INFO's blocked_clients): one waiter each.
    pub fn blocked_clients(&self) -> usize {
        self.lock().by_client.len()
    }

    /// Redis's signalKeyAsReady: a list may have appeared at `key`.
    #[inline]
    pub fn signal(&self, tenant: TenantId, db: u8, key: &[u8]) {
        if self.pending.load(SeqCst) == 0 {
            return;
        }
        self.ready.lock().unwrap().push((tenant, db, key.to_vec()));
        self.any_ready.store(true, SeqCst);
    }

    /// Every blocked key of a logical database (SWAPDB).
    pub fn signal_db(&self, tenant: TenantId, db: u8) {
        if self.pending.load(SeqCst) == 0 {
            return;
        }
        let keys = self.lock().keys_of_db(tenant, db);
        if keys.is_empty() {
            return;
        }
        self.ready.lock().unwrap().extend(keys);
        self.any_ready.store(true, SeqCst);
    }

    #[inline]
    pub fn has_ready(&self) -> bool {
        self.any_ready.load(SeqCst) || self.group_flag.load(Relaxed)
    }

    /// The flag blocked XREADGROUPs' keys are watched with.
    pub fn group_flag(&self) -> &augur_store::WatchFlag {
        &self.group_flag
    }

    /// The keys signalled since the last call, each with whether it was signalled
    /// (true) or only changed under a blocked XREADGROUP's watch (false: the group flag
    /// was raised, which readies every such key for the check that its key and group
    /// still exist, but serves no data, as Redis serves stream readers only on a
    /// signal).
    pub fn take_ready(&self) -> Vec<(BlockedKey, bool)> {
        let watched: Vec<BlockedKey> = if self.group_flag.swap(false, SeqCst) {
            self.lock().group_keys.iter().cloned().collect()
        } else {
            Vec::new()
        };
        let mut r = self.ready.lock().unwrap();
        self.any_ready.store(false, SeqCst);
        let signalled = std::mem::take(&mut *r);
        drop(r);
        let mut keys: Vec<(BlockedKey, bool)> = Vec::with_capacity(signalled.len() + watched.len());
        for k in watched {
            if !signalled.contains(&k) {
                keys.push((k, false));
            }
        }
        keys.extend(signalled.into_iter().map(|k| (k, true)));
        keys
    }
}
