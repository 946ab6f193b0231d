//! Client-side caching: CLIENT TRACKING's key table and invalidation messages (Redis
//! 7.0's tracking.c and the tracking parts of networking.c and server.c).
//!
//! A client that turns tracking on keeps copies of what it reads; the server remembers,
//! per key, which clients read it (default mode), or which key prefixes a client wants
//! to hear about (BCAST mode), and tells those clients when the key changes: an
//! `invalidate` push in RESP3, or a Pub/Sub message on `__redis__:invalidate` to the
//! connection a RESP2 client redirects to. For a cache in front of a cache that is what
//! makes local copies safe, so operators running many application instances on one
//! Augur get far fewer round trips.
//!
//! **What changes a key** is every change the store sees (`augur_store::KeyChangeSink`:
//! written, deleted, evicted, expired, given a TTL: the same hook as WATCH), so eviction
//! and expiry invalidate as in Redis. FLUSHDB / FLUSHALL send one null invalidation
//! ("everything") instead of one message per key.
//!
//! **Per tenant.** The key table and the prefixes are kept per tenant: a tenant's client
//! is told about its own keyspace's keys only (Redis has one keyspace; its table is not
//! per database either, and neither is this one).
//!
//! **Order with replies.** A message for the connection whose command changed the key
//! goes out after that command's reply (after EXEC's or a script's whole reply), as in
//! Redis 7.0 (`tracking_pending_keys`); one caused before the command ran (the eviction
//! a write needs first) goes before it. Messages for other connections are queued on the
//! receiver ([`ClientTracking`]) and written by its own task, like Pub/Sub messages.
//!
//! **Output-buffer limits.** What is queued for a connection counts against its class's
//! `client-output-buffer-limit` (`crate::obuf`, shared with its Pub/Sub messages): a
//! RESP2 redirect target is a subscriber (the `pubsub` class), a RESP3 client that
//! receives its own pushes is `normal` (no limit by Redis's default; configurable). A
//! receiver past its limit is closed instead of being queued more, as Redis closes it.
//!
//! **Cost, and why the key table is sharded.** Off (no client ever turned tracking on)
//! a change costs one relaxed load in the store. On, every change of every key looks the
//! key up in the table (and feeds BCAST prefixes), from whichever thread changed it and
//! with that store shard's lock held; one table behind one lock made every writer
//! queue behind every other. So the table is split by key hash into [`SHARDS`] shards,
//! each with its own lock, and a change takes only its key's shard's: the BCAST prefixes
//! are copied into every shard, each gathering its own keys, and the key and item counts
//! are atomics. (On the 2-core VM of BENCHMARKS.md "CLIENT TRACKING" the gain was within
//! noise: two threads seldom waited for each other; what a change costs there is the
//! shard's cache lines coming from the other core, and the pushes.) A key always lives
//! in one shard, so what
//! Redis orders per key (a client is told once per read, in the order of changes) stays
//! ordered; what it does not order (two writers' changes of different keys) needs no
//! common lock. Reads by tracking clients lock a key's shard per key. Stale entries (a
//! client that turned tracking off or left) are dropped lazily when their key changes,
//! as Redis does.
//!
//! **A read races a write.** Redis remembers a read-only command's keys after it ran
//! (`call()`), with one thread around both. Here a write of the key by another
//! connection could land between the read and the remembering, find no entry and send
//! nothing, leaving the reader a stale copy. So a read registers its keys before it
//! reads as well as after ([`Tracking::remember_before`]): such a write then finds the
//! entry and invalidates the reader (at worst the reader gets an invalidation for the
//! value it is about to receive, which is safe). The read's own lazy expiry of a key it
//! did not hold before is not reported to it, as Redis would not.

use crate::obuf::{self, LiveLimits};
use crate::resp::Out;
use crate::state::ClientMeta;
use augur_store::{KeyChangeSink, TenantId};
use bytes::Bytes;
use hashbrown::hash_map::{DefaultHashBuilder, RawEntryMut};
use parking_lot::{Mutex, RwLock};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

/// CLIENT_TRACKING and its option flags (server.h).
pub const ON: u32 = 1;
pub const BCAST: u32 = 1 << 1;
pub const OPTIN: u32 = 1 << 2;
pub const OPTOUT: u32 = 1 << 3;
pub const NOLOOP: u32 = 1 << 4;
/// CLIENT CACHING yes (OPTIN) / no (OPTOUT) given for the next command.
pub const CACHING: u32 = 1 << 5;
pub const BROKEN_REDIR: u32 = 1 << 6;

/// Redis's default `tracking-table-max-keys`.
pub const DEFAULT_MAX_KEYS: u64 = 1_000_000;

/// Shards of the key table (a power of two). As many as the store has by default: with
/// the store's shard lock held by the writer, more would only spread the same writers
/// thinner.
pub const SHARDS: usize = 64;

/// One message on its way to a connection.
#[derive(Debug, Clone)]
pub enum Inval {
    /// Keys to drop (None: all of them, after a flush). `redirected`: sent on behalf of
    /// another client (RESP2 receivers get it as a `__redis__:invalidate` message, and
    /// only while subscribed). `null_resp3`: the tracking client speaks RESP3, whose
    /// null a flush sends (sendTrackingMessage uses the tracking client's protocol).
    Keys {
        keys: Option<Vec<Bytes>>,
        redirected: bool,
        null_resp3: bool,
    },
    /// The connection this client redirects to is gone (RESP3 receivers only).
    RedirBroken(u64),
}

impl Inval {
    /// Bytes counted against the receiver's output-buffer limit while the message is
    /// queued: what it takes encoded, at most (the longer RESP2 `message` header, and
    /// up to 21 digits of each length), so that the same figure is added when it is
    /// queued and taken off when it is written, whatever protocol the receiver speaks by
    /// then.
    fn cost(&self) -> usize {
        match self {
            Inval::Keys { keys: Some(k), .. } => 48 + k.iter().map(|k| k.len() + 26).sum::<usize>(),
            Inval::Keys { keys: None, .. } => 53,
            Inval::RedirBroken(_) => 64,
        }
    }

    /// Writes the message as Redis's sendTrackingMessage does for a receiver speaking
    /// RESP3 (`resp3`) or RESP2 (`subscribed`: in Pub/Sub mode); what such a receiver
    /// cannot be sent is dropped, as in Redis.
    pub fn write(&self, out: &mut Out, subscribed: bool) {
        match self {
            Inval::Keys {
                keys,
                redirected,
                null_resp3,
            } => {
                if out.resp3 {
                    out.buf.extend_from_slice(b">2\r\n$10\r\ninvalidate\r\n");
                } else if *redirected && subscribed {
                    out.buf.extend_from_slice(
                        b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n",
                    );
                } else {
                    return;
                }
                match keys {
                    Some(keys) => {
                        out.array(keys.len());
                        for k in keys {
                            out.bulk(k);
                        }
                    }
                    None if *null_resp3 => out.buf.extend_from_slice(b"_\r\n"),
                    None => out.buf.extend_from_slice(b"$-1\r\n"),
                }
            }
            Inval::RedirBroken(id) => {
                if out.resp3 {
                    out.buf
                        .extend_from_slice(b">2\r\n$21\r\ntracking-redir-broken\r\n");
                    out.int(*id as i64);
                }
            }
        }
    }
}

/// A connection's tracking state, in its [`ClientMeta`] so that other connections can
/// read its mode and queue messages for it.
#[derive(Default)]
pub struct ClientTracking {
    pub flags: AtomicU32,
    /// The client id invalidations go to (0: this connection).
    pub redirect: AtomicU64,
    /// BCAST prefixes (CLIENT TRACKINGINFO), in the order given.
    pub prefixes: Mutex<Vec<Box<[u8]>>>,
    queue: Mutex<VecDeque<Inval>>,
    queued: AtomicBool,
}

impl ClientTracking {
    pub fn flags(&self) -> u32 {
        self.flags.load(Relaxed)
    }

    /// Whether messages wait to be written.
    #[inline]
    pub fn has_queued(&self) -> bool {
        self.queued.load(Relaxed)
    }
}

/// Writes messages queued for `meta` (see [`Inval::write`]) until about `budget` bytes
/// are taken, and takes them off its output-buffer account. Returns whether more wait
/// (the connection writes those once the socket took these, so that a reader that
/// does not read holds them in the queue, where they are counted, not in its buffer).
pub fn drain(meta: &ClientMeta, out: &mut Out, subscribed: bool, budget: usize) -> bool {
    let t = &meta.tracking;
    if !t.queued.load(Relaxed) {
        return false;
    }
    let mut taken = 0;
    let batch: Vec<Inval> = {
        let mut q = t.queue.lock();
        let mut batch = Vec::new();
        while taken < budget {
            let Some(m) = q.pop_front() else { break };
            taken += m.cost();
            batch.push(m);
        }
        t.queued.store(!q.is_empty(), Relaxed);
        batch
    };
    meta.obuf.taken(taken);
    for m in &batch {
        m.write(out, subscribed);
    }
    t.queued.load(Relaxed)
}

/// (tenant, key): how the table and the prefixes name a key.
type TableKey = (TenantId, Box<[u8]>);

/// The hasher of every shard's table, one for all so that a key's hash, computed once,
/// both picks its shard and finds it there (ahash; fixed seeds, as the store's index:
/// `augur_store`'s `key_hash`).
fn hasher() -> &'static DefaultHashBuilder {
    static HASHER: OnceLock<DefaultHashBuilder> = OnceLock::new();
    HASHER.get_or_init(Default::default)
}

#[inline]
fn key_hash(tenant: TenantId, key: &[u8]) -> u64 {
    // Hashes as the table's `(TenantId, Box<[u8]>)` keys do (a slice hashes the same
    // behind a reference as in a box).
    hasher().hash_one((tenant, key))
}

/// The shard of a hash: bits 40..46, which hashbrown uses neither for a bucket (the low
/// bits, below 2^40 buckets) nor for its control tags (the top 7), so a shard's keys
/// still spread over its whole table.
#[inline]
fn shard_of(hash: u64) -> usize {
    (hash >> 40) as usize & (SHARDS - 1)
}

/// One shard of the key table.
struct KeyShard {
    /// (tenant, key) -> ids of the clients that may hold it.
    table: hashbrown::HashMap<TableKey, Vec<u64>, DefaultHashBuilder>,
    /// Every BCAST prefix (a copy in each shard, so that a change locks only its own
    /// shard), with the keys of this shard changed under it since the last broadcast,
    /// each with the client that changed it last (0: none, e.g. expiry).
    prefixes: BTreeMap<TableKey, BTreeMap<Box<[u8]>, u64>>,
}

impl Default for KeyShard {
    fn default() -> Self {
        KeyShard {
            table: hashbrown::HashMap::with_hasher(hasher().clone()),
            prefixes: BTreeMap::new(),
        }
    }
}

/// A shard and its lock, on cache lines of its own (writers on different cores lock
/// different shards; unpadded, neighbouring locks would share a line).
#[repr(align(128))]
#[derive(Default)]
struct Shard {
    m: Mutex<KeyShard>,
    /// Keys in `m`'s table, readable without the lock (the table limit picks shards by
    /// it).
    len: AtomicUsize,
}

/// The server's tracking state (one, in [`crate::state::Shared`]).
pub struct Tracking {
    shards: Box<[Shard]>,
    /// Keys in the table and (key, client) items, over all shards (INFO; the limit).
    keys: AtomicU64,
    items: AtomicU64,
    /// BCAST prefix -> its clients. Locked before any shard (enable, disable, broadcast
    /// change the shards' copies of the prefixes under it).
    bcast: Mutex<BTreeMap<TableKey, BTreeSet<u64>>>,
    /// The connections with tracking on.
    clients: RwLock<HashMap<u64, Arc<ClientMeta>>>,
    registry: Arc<Mutex<HashMap<u64, Arc<ClientMeta>>>>,
    limits: Arc<LiveLimits>,
    /// `tracking-table-max-keys` (0: no limit).
    pub max_keys: AtomicU64,
    /// Rounds in a row the limit could not be met (trackingLimitUsedSlots's effort).
    over_limit_rounds: AtomicU32,
    /// Held by the one thread bringing the table back under its limit (others skip).
    limiting: Mutex<()>,
    /// Some prefix gathered keys to broadcast.
    bcast_pending: AtomicBool,
    /// Some client has turned tracking on since the server started (the command
    /// layer's hooks run only then).
    in_use: AtomicBool,
}

/// The thread's view of the command running on it: which connection, whether its
/// command body is running (then its own messages wait for its reply), and those
/// messages. Set by the command layer around each top-level command.
#[derive(Default)]
struct Current {
    id: u64,
    executing: bool,
    flushing: bool,
    /// Keys (None: a flush) invalidated for the current connection, to send after its
    /// reply (`after`) or before it (`before`: changed before the command ran).
    after: Vec<Option<Bytes>>,
    before: Vec<Option<Bytes>>,
    /// Keys the running read-only command registered before it read them that the
    /// connection did not hold before: their invalidation by this command itself (a
    /// lazy expiry) is not sent, since Redis, which remembers a read's keys only after
    /// it, would not send it (see [`Tracking::remember_before`]).
    fresh: Vec<(TenantId, Box<[u8]>)>,
}

thread_local! {
    static CURRENT: RefCell<Current> = RefCell::default();
}

/// Marks `id`'s command as starting on this thread (not yet executing its body).
pub fn begin_command(id: u64) {
    CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        c.id = id;
        c.executing = false;
        c.fresh.clear();
    });
}

/// Forgets the keys [`Tracking::remember_before`] noted (the read has been remembered).
pub fn clear_fresh() {
    CURRENT.with(|c| c.borrow_mut().fresh.clear());
}

/// Marks the current command's body as running (`true`) or done (`false`).
pub fn set_executing(on: bool) {
    CURRENT.with(|c| c.borrow_mut().executing = on);
}

/// Ends the thread's current command (nothing is attributed to it afterwards).
pub fn end_command() {
    CURRENT.with(|c| {
        let mut c = c.borrow_mut();
        c.id = 0;
        c.executing = false;
    });
}

/// Runs `f` with per-key invalidations off (a flush sends one null message instead).
pub fn flushing<R>(f: impl FnOnce() -> R) -> R {
    CURRENT.with(|c| c.borrow_mut().flushing = true);
    let r = f();
    CURRENT.with(|c| c.borrow_mut().flushing = false);
    r
}

fn current_id() -> u64 {
    CURRENT.with(|c| c.borrow().id)
}

impl Tracking {
    pub fn new(
        registry: Arc<Mutex<HashMap<u64, Arc<ClientMeta>>>>,
        limits: Arc<LiveLimits>,
    ) -> Self {
        Tracking {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            keys: AtomicU64::new(0),
            items: AtomicU64::new(0),
            bcast: Mutex::default(),
            clients: RwLock::default(),
            registry,
            limits,
            max_keys: AtomicU64::new(DEFAULT_MAX_KEYS),
            over_limit_rounds: AtomicU32::new(0),
            limiting: Mutex::new(()),
            bcast_pending: AtomicBool::new(false),
            in_use: AtomicBool::new(false),
        }
    }

    /// Whether any client has turned tracking on (then commands run the hooks).
    #[inline]
    pub fn in_use(&self) -> bool {
        self.in_use.load(Relaxed)
    }

    fn lookup(&self, id: u64) -> Option<Arc<ClientMeta>> {
        self.registry
            .lock()
            .get(&id)
            .filter(|m| !m.killed.load(Relaxed))
            .cloned()
    }

    /// Whether a client with this id is connected (CLIENT TRACKING REDIRECT's check).
    pub fn client_exists(&self, id: u64) -> bool {
        self.lookup(id).is_some()
    }

    /// enableTracking: `flags` are the options (BCAST, OPTIN, OPTOUT, NOLOOP), checked
    /// by the caller; BCAST without prefixes tracks the empty prefix (every key).
    pub fn enable(
        &self,
        meta: &Arc<ClientMeta>,
        tenant: TenantId,
        redirect: u64,
        flags: u32,
        prefixes: &[&[u8]],
    ) {
        let t = &meta.tracking;
        self.in_use.store(true, Relaxed);
        self.clients.write().insert(meta.id, meta.clone());
        t.flags.store(
            ON | (flags & (BCAST | OPTIN | OPTOUT | NOLOOP)) | (t.flags() & CACHING),
            Relaxed,
        );
        t.redirect.store(redirect, Relaxed);
        if flags & BCAST != 0 {
            let mut bcast = self.bcast.lock();
            let mut mine = t.prefixes.lock();
            let empty: [&[u8]; 1] = [b""];
            let list = if prefixes.is_empty() {
                &empty[..]
            } else {
                prefixes
            };
            for p in list {
                let key: TableKey = (tenant, (*p).into());
                let clients = bcast.entry(key.clone()).or_default();
                if clients.is_empty() {
                    // A new prefix: every shard starts gathering its keys.
                    for s in self.shards.iter() {
                        s.m.lock().prefixes.insert(key.clone(), BTreeMap::new());
                    }
                }
                if clients.insert(meta.id) {
                    mine.push((*p).into());
                }
            }
        }
    }

    /// disableTracking: leaves the BCAST prefixes (a prefix left by its last client is
    /// dropped with the keys it gathered, as Redis frees its state) and clears the
    /// flags. The client's entries in the key table are left to be dropped when their
    /// keys change.
    pub fn disable(&self, meta: &ClientMeta, tenant: TenantId) {
        let t = &meta.tracking;
        if t.flags() & ON == 0 {
            return;
        }
        {
            let mut bcast = self.bcast.lock();
            for p in t.prefixes.lock().drain(..) {
                let k = (tenant, p);
                if let Some(clients) = bcast.get_mut(&k) {
                    clients.remove(&meta.id);
                    if clients.is_empty() {
                        bcast.remove(&k);
                        for s in self.shards.iter() {
                            s.m.lock().prefixes.remove(&k);
                        }
                    }
                }
            }
        }
        self.clients.write().remove(&meta.id);
        t.flags.store(0, Relaxed);
        t.redirect.store(0, Relaxed);
    }

    /// checkPrefixCollisionsOrReply: an error if two prefixes (given or the client's
    /// own) would both match some key.
    pub fn prefix_collision(&self, meta: &ClientMeta, prefixes: &[&[u8]]) -> Option<String> {
        let overlap = |a: &[u8], b: &[u8]| {
            let n = a.len().min(b.len());
            a[..n] == b[..n]
        };
        let own = meta.tracking.prefixes.lock();
        for (i, p) in prefixes.iter().enumerate() {
            if let Some(c) = own.iter().find(|c| overlap(c, p)) {
                return Some(format!(
                    "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                    String::from_utf8_lossy(p),
                    String::from_utf8_lossy(c)
                ));
            }
            if let Some(q) = prefixes[i + 1..].iter().find(|q| overlap(p, q)) {
                return Some(format!(
                    "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                    String::from_utf8_lossy(p),
                    String::from_utf8_lossy(q)
                ));
            }
        }
        None
    }

    /// trackingRememberKeys: after a read-only command of a client with tracking on
    /// (not BCAST), remember that it may hold `keys` (OPTIN: only after CLIENT CACHING
    /// yes; OPTOUT: unless CLIENT CACHING no).
    pub fn remember<'a>(
        &self,
        meta: &ClientMeta,
        tenant: TenantId,
        keys: impl Iterator<Item = &'a [u8]>,
    ) {
        self.remember_noting(meta, tenant, keys, None)
    }

    /// Registers a read-only command's keys *before* it reads them (and
    /// [`Tracking::remember`] registers them again after). Redis's single thread
    /// remembers them after the read only; here another connection's write can land
    /// between the read and that registration, and would then invalidate nobody while
    /// the reader caches the old value. Registered first, that write invalidates the
    /// reader. The keys it did not hold before are noted so that the command's own lazy
    /// expiry of them sends nothing, as in Redis.
    pub fn remember_before<'a>(
        &self,
        meta: &ClientMeta,
        tenant: TenantId,
        keys: impl Iterator<Item = &'a [u8]>,
    ) {
        let mut fresh = Vec::new();
        self.remember_noting(meta, tenant, keys, Some(&mut fresh));
        if !fresh.is_empty() {
            CURRENT.with(|c| {
                let mut c = c.borrow_mut();
                c.fresh.extend(fresh.into_iter().map(|k| (tenant, k)));
            });
        }
    }

    fn remember_noting<'a>(
        &self,
        meta: &ClientMeta,
        tenant: TenantId,
        keys: impl Iterator<Item = &'a [u8]>,
        mut fresh: Option<&mut Vec<Box<[u8]>>>,
    ) {
        let f = meta.tracking.flags();
        if f & ON == 0 || f & BCAST != 0 {
            return;
        }
        let caching = f & CACHING != 0;
        if (f & OPTIN != 0 && !caching) || (f & OPTOUT != 0 && caching) {
            return;
        }
        let mut new_keys = false;
        for k in keys {
            let h = key_hash(tenant, k);
            let shard = &self.shards[shard_of(h)];
            let mut g = shard.m.lock();
            match g
                .table
                .raw_entry_mut()
                .from_hash(h, |(t, key)| *t == tenant && **key == *k)
            {
                RawEntryMut::Occupied(mut e) => {
                    let ids = e.get_mut();
                    if !ids.contains(&meta.id) {
                        ids.push(meta.id);
                        self.items.fetch_add(1, Relaxed);
                        if let Some(f) = fresh.as_deref_mut() {
                            f.push(k.into());
                        }
                    }
                }
                RawEntryMut::Vacant(e) => {
                    if let Some(f) = fresh.as_deref_mut() {
                        f.push(k.into());
                    }
                    e.insert_hashed_nocheck(h, (tenant, k.into()), vec![meta.id]);
                    shard.len.store(g.table.len(), Relaxed);
                    // Counted under the shard's lock, as the removal is: the totals
                    // never run below what the shards hold.
                    self.keys.fetch_add(1, Relaxed);
                    self.items.fetch_add(1, Relaxed);
                    new_keys = true;
                }
            }
        }
        let max = self.max_keys.load(Relaxed);
        if new_keys && max > 0 && self.keys.load(Relaxed) > max {
            self.limit_table();
        }
    }

    /// trackingInvalidateKey: tells the clients that may hold `key` that it changed,
    /// and forgets them for it; with `bcast`, also gathers it for BCAST prefixes. Takes
    /// only the key's shard's lock (then, if some client held the key, the tracking
    /// clients' map, shared).
    fn invalidate(&self, tenant: TenantId, key: &[u8], bcast: bool) {
        let (cur, flushing) = CURRENT.with(|c| {
            let c = c.borrow();
            (c.id, c.flushing)
        });
        if flushing {
            return;
        }
        let h = key_hash(tenant, key);
        let shard = &self.shards[shard_of(h)];
        let ids = {
            let mut g = shard.m.lock();
            if bcast && !g.prefixes.is_empty() {
                let mut any = false;
                for ((t, p), keys) in g.prefixes.iter_mut() {
                    if *t == tenant && key.starts_with(p) {
                        keys.insert(key.into(), cur);
                        any = true;
                    }
                }
                if any && !self.bcast_pending.load(Relaxed) {
                    self.bcast_pending.store(true, Relaxed);
                }
            }
            let RawEntryMut::Occupied(e) = g
                .table
                .raw_entry_mut()
                .from_hash(h, |(t, k)| *t == tenant && **k == *key)
            else {
                return;
            };
            let (_, ids) = e.remove_entry();
            shard.len.store(g.table.len(), Relaxed);
            self.keys.fetch_sub(1, Relaxed);
            self.items.fetch_sub(ids.len() as u64, Relaxed);
            ids
        };
        let targets: Vec<Arc<ClientMeta>> = {
            let clients = self.clients.read();
            ids.iter()
                .filter_map(|id| clients.get(id).cloned())
                .collect()
        };
        let key = Bytes::copy_from_slice(key);
        for target in targets {
            let id = target.id;
            let f = target.tracking.flags();
            if f & ON == 0
                || f & BCAST != 0
                || (f & NOLOOP != 0 && id == cur)
                || target.killed.load(Relaxed)
            {
                continue;
            }
            if id == cur {
                CURRENT.with(|c| {
                    let mut c = c.borrow_mut();
                    if c.fresh.iter().any(|(t, k)| *t == tenant && **k == *key) {
                        // Registered by this very read (`remember_before`): Redis would
                        // not have held it yet.
                        return;
                    }
                    if c.executing {
                        c.after.push(Some(key.clone()));
                    } else {
                        c.before.push(Some(key.clone()));
                    }
                });
            } else {
                self.send(&target, Some(vec![key.clone()]), None);
            }
        }
    }

    /// Queues a message for connection `to` and wakes it (through its `kill` nudge,
    /// which a connection also takes for "look at your state"; it re-arms it when not
    /// killed). Past its output-buffer limit the connection is closed instead.
    fn queue(&self, to: &ClientMeta, m: Inval) {
        if to.killed.load(Relaxed) {
            return;
        }
        if to.obuf.add(m.cost(), self.limits.get(obuf::class_of(to))) {
            obuf::close_for_limit(to);
            return;
        }
        {
            let mut q = to.tracking.queue.lock();
            q.push_back(m);
            to.tracking.queued.store(true, Relaxed);
        }
        to.kill.notify_one();
    }

    /// sendTrackingMessage: `keys` (None: all) for tracking client `c`, to the client
    /// it redirects to, or to itself: into `own` when that is the caller's reply buffer,
    /// else queued.
    fn send(&self, c: &ClientMeta, keys: Option<Vec<Bytes>>, own: Option<&mut Out>) {
        let redirect = c.tracking.redirect.load(Relaxed);
        let null_resp3 = c.resp.load(Relaxed) >= 3;
        if redirect != 0 {
            let Some(to) = self.lookup(redirect) else {
                c.tracking.flags.fetch_or(BROKEN_REDIR, Relaxed);
                let m = Inval::RedirBroken(redirect);
                match own {
                    Some(out) => m.write(out, false),
                    None => self.queue(c, m),
                }
                return;
            };
            self.queue(
                &to,
                Inval::Keys {
                    keys,
                    redirected: true,
                    null_resp3,
                },
            );
            return;
        }
        let m = Inval::Keys {
            keys,
            redirected: false,
            null_resp3,
        };
        match own {
            Some(out) => m.write(out, false),
            None => self.queue(c, m),
        }
    }

    /// Writes what the current command's changes owe its own connection `meta` into
    /// its reply buffer: `before` the reply, or after it.
    pub fn flush_own(&self, meta: &ClientMeta, out: &mut Out, before: bool) {
        let keys = CURRENT.with(|c| {
            let mut c = c.borrow_mut();
            std::mem::take(if before { &mut c.before } else { &mut c.after })
        });
        for k in keys {
            self.send(meta, k.map(|k| vec![k]), Some(&mut *out));
        }
    }

    /// trackingBroadcastInvalidationMessages: sends each BCAST prefix's gathered keys to
    /// its clients (without the keys a NOLOOP client changed itself), the keys of all
    /// shards in one message per prefix and client, in key order (Redis's rax order).
    /// The current connection's own copy goes into `own` (after its reply).
    pub fn broadcast(&self, own: Option<(&ClientMeta, &mut Out)>) {
        // Every tracked command comes here: a load first, so that with nothing gathered
        // no thread writes the flag's line (a swap would, from every core, per command).
        if !self.bcast_pending.load(Relaxed) || !self.bcast_pending.swap(false, Relaxed) {
            return;
        }
        let mut sends: Vec<(Arc<ClientMeta>, Vec<Bytes>)> = Vec::new();
        {
            // Held while the shards are emptied, so that one broadcast takes a prefix's
            // keys from every shard before another can.
            let bcast = self.bcast.lock();
            let mut gathered: BTreeMap<TableKey, BTreeMap<Box<[u8]>, u64>> = BTreeMap::new();
            for s in self.shards.iter() {
                let mut g = s.m.lock();
                for (p, keys) in g.prefixes.iter_mut() {
                    if keys.is_empty() {
                        continue;
                    }
                    let keys = std::mem::take(keys);
                    match gathered.get_mut(p) {
                        Some(all) => all.extend(keys),
                        None => {
                            gathered.insert(p.clone(), keys);
                        }
                    }
                }
            }
            let clients = self.clients.read();
            for (p, keys) in &gathered {
                let Some(ids) = bcast.get(p) else {
                    continue;
                };
                for id in ids {
                    let Some(c) = clients.get(id) else {
                        continue;
                    };
                    let noloop = c.tracking.flags() & NOLOOP != 0;
                    let list: Vec<Bytes> = keys
                        .iter()
                        .filter(|(_, by)| !noloop || **by != *id)
                        .map(|(k, _)| Bytes::copy_from_slice(k))
                        .collect();
                    if !list.is_empty() {
                        sends.push((c.clone(), list));
                    }
                }
            }
        }
        let mut own = own;
        for (c, keys) in sends {
            match own.as_mut() {
                Some((me, out)) if me.id == c.id => self.send(&c, Some(keys), Some(&mut **out)),
                _ => self.send(&c, Some(keys), None),
            }
        }
    }

    /// trackingInvalidateKeysOnFlush: a null invalidation ("everything") to every
    /// tracking client of `tenant`, and the tenant's table dropped. The current
    /// connection's copy waits for its reply.
    pub fn flushed(&self, tenant: TenantId) {
        let cur = current_id();
        for s in self.shards.iter() {
            let (mut freed_keys, mut freed_items) = (0u64, 0u64);
            let mut g = s.m.lock();
            g.table.retain(|(t, _), ids| {
                let keep = *t != tenant;
                if !keep {
                    freed_keys += 1;
                    freed_items += ids.len() as u64;
                }
                keep
            });
            s.len.store(g.table.len(), Relaxed);
            self.keys.fetch_sub(freed_keys, Relaxed);
            self.items.fetch_sub(freed_items, Relaxed);
        }
        let targets: Vec<Arc<ClientMeta>> = self
            .clients
            .read()
            .values()
            .filter(|m| m.tenant.load(Relaxed) == tenant)
            .cloned()
            .collect();
        for c in targets {
            if c.tracking.flags() & ON == 0 {
                continue;
            }
            if c.id == cur {
                CURRENT.with(|x| x.borrow_mut().after.push(None));
            } else {
                self.send(&c, None, None);
            }
        }
    }

    /// trackingLimitUsedSlots: past `tracking-table-max-keys`, invalidates keys (as if
    /// they changed) until under it, trying harder each round it could not (100 keys a
    /// round, then 200, ...). Run by the cron and after reads that grow the table; one
    /// thread at a time (another finding it busy leaves the work to it).
    ///
    /// Redis picks each victim by a random walk of its one radix tree; here each victim's
    /// shard is drawn with probability proportional to its keys, and a shard gives up
    /// its quota of victims from a random position of its table, so every key is about
    /// equally likely to go whichever shard holds it.
    pub fn limit_table(&self) {
        use rand::Rng;
        let max = self.max_keys.load(Relaxed);
        if max == 0 {
            return;
        }
        let Some(_turn) = self.limiting.try_lock() else {
            return;
        };
        let rounds = self.over_limit_rounds.load(Relaxed);
        let mut effort = 100 * (rounds as usize + 1);
        let mut rng = rand::thread_rng();
        loop {
            let total = self.keys.load(Relaxed);
            if total <= max {
                self.over_limit_rounds.store(0, Relaxed);
                return;
            }
            let n = ((total - max) as usize).min(effort);
            if n == 0 {
                break;
            }
            // Victims per shard, drawn by the shards' sizes.
            let mut lens: Vec<usize> = self.shards.iter().map(|s| s.len.load(Relaxed)).collect();
            let mut left: usize = lens.iter().sum();
            let mut quota = [0usize; SHARDS];
            for _ in 0..n.min(left) {
                let mut x = rng.gen_range(0..left);
                let i = lens
                    .iter()
                    .position(|&l| {
                        if x < l {
                            true
                        } else {
                            x -= l;
                            false
                        }
                    })
                    .unwrap_or(0);
                quota[i] += 1;
                lens[i] -= 1;
                left -= 1;
            }
            let mut victims: Vec<TableKey> = Vec::with_capacity(n);
            for (s, &q) in self.shards.iter().zip(&quota) {
                if q == 0 {
                    continue;
                }
                let g = s.m.lock();
                let len = g.table.len();
                if len == 0 {
                    continue;
                }
                let start = rng.gen_range(0..len);
                victims.extend(
                    g.table
                        .keys()
                        .skip(start)
                        .chain(g.table.keys())
                        .take(q.min(len))
                        .cloned(),
                );
            }
            if victims.is_empty() {
                break;
            }
            effort = effort.saturating_sub(victims.len());
            let saved = CURRENT.with(|c| std::mem::take(&mut c.borrow_mut().id));
            for (t, k) in victims {
                self.invalidate(t, &k, false);
            }
            CURRENT.with(|c| c.borrow_mut().id = saved);
            if effort == 0 {
                break;
            }
        }
        if self.keys.load(Relaxed) > max {
            self.over_limit_rounds.fetch_add(1, Relaxed);
        } else {
            self.over_limit_rounds.store(0, Relaxed);
        }
    }

    /// INFO: (tracking_clients, tracking_total_keys, tracking_total_items,
    /// tracking_total_prefixes).
    pub fn info(&self) -> (usize, usize, u64, usize) {
        (
            self.clients.read().len(),
            self.keys.load(Relaxed) as usize,
            self.items.load(Relaxed),
            self.bcast.lock().len(),
        )
    }
}

/// The store's [`KeyChangeSink`]: every change invalidates (and feeds BCAST).
pub struct StoreChanges(pub Arc<Tracking>);

impl KeyChangeSink for StoreChanges {
    fn key_changed(&self, tenant: TenantId, key: &[u8]) {
        self.0.invalidate(tenant, key, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn meta(id: u64) -> Arc<ClientMeta> {
        let a: SocketAddr = "127.0.0.1:1".parse().unwrap();
        Arc::new(ClientMeta::new(id, a, a))
    }

    fn tracking() -> (Tracking, Arc<LiveLimits>) {
        let limits = Arc::new(LiveLimits::default());
        (Tracking::new(Arc::default(), limits.clone()), limits)
    }

    /// Every message queued for `m`, as a RESP3 client would read them.
    fn pushes(m: &ClientMeta) -> String {
        let mut out = Out::new();
        out.resp3 = true;
        drain(m, &mut out, false, usize::MAX);
        String::from_utf8_lossy(&out.buf).into_owned()
    }

    fn key(i: usize) -> Vec<u8> {
        format!("key:{i}").into_bytes()
    }

    fn shard_keys(t: &Tracking) -> Vec<usize> {
        t.shards.iter().map(|s| s.m.lock().table.len()).collect()
    }

    #[test]
    fn keys_spread_over_shards_and_the_totals_follow() {
        let (t, _) = tracking();
        let (a, b) = (meta(1), meta(2));
        t.enable(&a, 0, 0, 0, &[]);
        t.enable(&b, 0, 0, 0, &[]);
        let keys: Vec<Vec<u8>> = (0..1000).map(key).collect();
        t.remember(&a, 0, keys.iter().map(Vec::as_slice));
        t.remember(&b, 0, keys[..500].iter().map(Vec::as_slice));
        t.remember(&b, 0, keys[..10].iter().map(Vec::as_slice)); // already held
        assert_eq!(t.info(), (2, 1000, 1500, 0));
        let per_shard = shard_keys(&t);
        assert_eq!(per_shard.iter().sum::<usize>(), 1000);
        assert!(
            per_shard.iter().all(|&n| n > 0),
            "1000 keys reach every one of 64 shards: {per_shard:?}"
        );
        for (s, &n) in t.shards.iter().zip(&per_shard) {
            assert_eq!(s.len.load(Relaxed), n);
        }
        // A change tells each holder once and forgets the key; a key of another
        // tenant (same name) or never read tells nobody.
        t.invalidate(1, &keys[0], true);
        t.invalidate(0, b"never-read", true);
        assert_eq!(pushes(&a), "");
        t.invalidate(0, &keys[0], true);
        t.invalidate(0, &keys[999], true);
        t.invalidate(0, &keys[0], true);
        assert_eq!(
            pushes(&a),
            ">2\r\n$10\r\ninvalidate\r\n*1\r\n$5\r\nkey:0\r\n>2\r\n$10\r\ninvalidate\r\n*1\r\n$7\r\nkey:999\r\n"
        );
        assert_eq!(
            pushes(&b),
            ">2\r\n$10\r\ninvalidate\r\n*1\r\n$5\r\nkey:0\r\n"
        );
        assert_eq!(t.info(), (2, 998, 1497, 0));
        assert_eq!(a.obuf.queued(), 0, "taken off as written");
    }

    #[test]
    fn a_read_registers_first_and_its_own_expiry_of_a_new_key_tells_nobody() {
        let (t, _) = tracking();
        let a = meta(1);
        t.enable(&a, 0, 0, 0, &[]);
        // Connection 1 reads "k" (new to it) and "held" (remembered earlier).
        t.remember(&a, 0, [&b"held"[..]].into_iter());
        begin_command(1);
        set_executing(true);
        t.remember_before(&a, 0, [&b"k"[..], &b"held"[..]].into_iter());
        // Its own lazy expiry of "k" during the read: nothing (Redis had not remembered
        // it yet); of "held": queued after its reply, as before.
        t.invalidate(0, b"k", false);
        t.invalidate(0, b"held", false);
        let own = CURRENT.with(|c| c.borrow().after.len());
        assert_eq!(own, 1, "only the key it held before");
        set_executing(false);
        t.remember(&a, 0, [&b"k"[..], &b"held"[..]].into_iter());
        clear_fresh();
        end_command();
        CURRENT.with(|c| c.borrow_mut().after.clear());
        // A write by another connection after the read's registration, before its
        // remembering, reaches it (the race remembering after only would lose).
        begin_command(2);
        t.remember_before(&a, 0, [&b"r"[..]].into_iter());
        end_command();
        begin_command(3);
        t.invalidate(0, b"r", false);
        end_command();
        assert_eq!(pushes(&a), ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nr\r\n");
    }

    #[test]
    fn the_limit_evicts_from_every_shard_to_the_exact_count() {
        let (t, _) = tracking();
        let a = meta(1);
        t.enable(&a, 0, 0, 0, &[]);
        t.max_keys.store(100, Relaxed);
        let keys: Vec<Vec<u8>> = (0..1000).map(key).collect();
        // The read that grows the table past the limit starts bringing it back: 100
        // victims a round, 200 the next round it is still over, ...
        t.remember(&a, 0, keys.iter().map(Vec::as_slice));
        assert_eq!(t.info().1, 900, "one round of 100");
        for _ in 0..10 {
            t.limit_table();
        }
        assert_eq!(t.info().1, 100, "exactly down to the limit");
        assert_eq!(t.info().2, 100);
        assert_eq!(pushes(&a).matches("invalidate").count(), 900);
        let survivors = shard_keys(&t);
        assert!(
            survivors.iter().filter(|&&n| n > 0).count() > 40,
            "victims drawn across shards, survivors too: {survivors:?}"
        );
        assert_eq!(t.over_limit_rounds.load(Relaxed), 0);
    }

    #[test]
    fn bcast_gathers_every_shard_into_one_sorted_message_and_noloop() {
        let (t, _) = tracking();
        let (a, b) = (meta(1), meta(2));
        t.enable(&a, 0, 0, BCAST, &[b"p:"]);
        t.enable(&b, 0, 0, BCAST | NOLOOP, &[b"p:"]);
        assert_eq!(t.info().3, 1, "one prefix, two clients");
        for k in ["p:9", "p:1", "q:1", "p:5", "p:10"] {
            t.invalidate(0, k.as_bytes(), true);
        }
        t.invalidate(1, b"p:other-tenant", true);
        // b's own change: not to b (NOLOOP), to a.
        begin_command(2);
        t.invalidate(0, b"p:7", true);
        end_command();
        t.broadcast(None);
        let all = ">2\r\n$10\r\ninvalidate\r\n*5\r\n$3\r\np:1\r\n$4\r\np:10\r\n$3\r\np:5\r\n$3\r\np:7\r\n$3\r\np:9\r\n";
        assert_eq!(pushes(&a), all);
        assert_eq!(
            pushes(&b),
            ">2\r\n$10\r\ninvalidate\r\n*4\r\n$3\r\np:1\r\n$4\r\np:10\r\n$3\r\np:5\r\n$3\r\np:9\r\n"
        );
        t.broadcast(None);
        assert_eq!(pushes(&a), "", "gathered keys go once");
        // The prefix's last client leaves: what it gathered goes with it.
        t.invalidate(0, b"p:2", true);
        t.disable(&a, 0);
        t.disable(&b, 0);
        assert_eq!(t.info().3, 0);
        assert!(t.shards.iter().all(|s| s.m.lock().prefixes.is_empty()));
        t.enable(&a, 0, 0, BCAST, &[b"p:"]);
        t.broadcast(None);
        assert_eq!(pushes(&a), "", "nothing from before it subscribed");
    }

    #[test]
    fn a_flush_forgets_its_tenant_only() {
        let (t, _) = tracking();
        let (a, b) = (meta(1), meta(2));
        b.tenant.store(1, Relaxed);
        a.resp.store(3, Relaxed); // a flush's null, in the tracking client's protocol
        t.enable(&a, 0, 0, 0, &[]);
        t.enable(&b, 1, 0, 0, &[]);
        let keys: Vec<Vec<u8>> = (0..300).map(key).collect();
        t.remember(&a, 0, keys.iter().map(Vec::as_slice));
        t.remember(&b, 1, keys[..100].iter().map(Vec::as_slice));
        t.flushed(0);
        assert_eq!(t.info(), (2, 100, 100, 0));
        assert_eq!(pushes(&a), ">2\r\n$10\r\ninvalidate\r\n_\r\n");
        assert_eq!(pushes(&b), "");
        t.invalidate(1, &keys[3], true);
        assert_eq!(pushes(&b).matches("invalidate").count(), 1);
    }

    #[test]
    fn the_totals_hold_under_concurrent_readers_and_writers() {
        let (t, _) = tracking();
        let t = Arc::new(t);
        let readers: Vec<Arc<ClientMeta>> = (1..=4).map(meta).collect();
        for r in &readers {
            t.enable(r, 0, 0, 0, &[]);
        }
        let threads: Vec<_> = (0..4)
            .map(|n| {
                let t = t.clone();
                let r = readers[n].clone();
                std::thread::spawn(move || {
                    for round in 0..50 {
                        let keys: Vec<Vec<u8>> = (0..200).map(|i| key(i + round)).collect();
                        t.remember(&r, 0, keys.iter().map(Vec::as_slice));
                        for k in keys.iter().skip(n).step_by(4) {
                            t.invalidate(0, k, true);
                        }
                    }
                })
            })
            .collect();
        for h in threads {
            h.join().unwrap();
        }
        let held: u64 = t
            .shards
            .iter()
            .map(|s| {
                s.m.lock()
                    .table
                    .values()
                    .map(|v| v.len() as u64)
                    .sum::<u64>()
            })
            .sum();
        let (_, keys, items, _) = t.info();
        assert_eq!(keys, shard_keys(&t).iter().sum::<usize>());
        assert_eq!(items, held);
    }

    #[test]
    fn a_receiver_past_its_limit_is_closed_not_queued() {
        let (t, limits) = tracking();
        let a = meta(1);
        t.enable(&a, 0, 0, 0, &[]);
        let mut l = obuf::DEFAULTS;
        l[obuf::Class::Normal as usize].hard = 4096;
        limits.set(&l);
        let keys: Vec<Vec<u8>> = (0..200)
            .map(|i| vec![b'k' + (i % 3) as u8; 50 + i])
            .collect();
        t.remember(&a, 0, keys.iter().map(Vec::as_slice));
        for k in &keys {
            t.invalidate(0, k, true);
        }
        assert!(a.killed.load(Relaxed), "4 KB of invalidations and more");
        assert!(a.obuf.queued() < 4096);
        // A subscriber is held to the pubsub class instead (32 MB by default).
        let b = meta(2);
        b.sub.store(1, Relaxed);
        t.enable(&b, 0, 0, 0, &[]);
        t.remember(&b, 0, keys.iter().map(Vec::as_slice));
        for k in &keys {
            t.invalidate(0, k, true);
        }
        assert!(!b.killed.load(Relaxed));
        assert!(b.obuf.queued() > 4096);
    }
}
