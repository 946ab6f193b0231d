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
//! **Cost.** Off (no client ever turned tracking on) a change costs one relaxed load in
//! the store. On, every change takes this module's lock once; reads by tracking clients
//! take it once per command. Stale entries (a client that turned tracking off or left)
//! are dropped lazily when their key changes, as Redis does.

use crate::obuf::{self, LiveLimits};
use crate::resp::Out;
use crate::state::ClientMeta;
use augur_store::{KeyChangeSink, TenantId};
use bytes::Bytes;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

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

/// What one BCAST prefix gathered since its last broadcast.
#[derive(Default)]
struct Bcast {
    /// Changed keys, each with the client that changed it last (0: none, e.g. expiry).
    keys: BTreeMap<Box<[u8]>, u64>,
    clients: BTreeSet<u64>,
}

#[derive(Default)]
struct Inner {
    /// (tenant, key) -> ids of the clients that may hold it.
    table: HashMap<(TenantId, Box<[u8]>), Vec<u64>>,
    items: u64,
    prefixes: BTreeMap<(TenantId, Box<[u8]>), Bcast>,
    /// The connections with tracking on.
    clients: HashMap<u64, Arc<ClientMeta>>,
}

/// The server's tracking state (one, in [`crate::state::Shared`]).
pub struct Tracking {
    inner: Mutex<Inner>,
    registry: Arc<Mutex<HashMap<u64, Arc<ClientMeta>>>>,
    limits: Arc<LiveLimits>,
    /// `tracking-table-max-keys` (0: no limit).
    pub max_keys: AtomicU64,
    /// Rounds in a row the limit could not be met (trackingLimitUsedSlots's effort).
    over_limit_rounds: AtomicU32,
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
    });
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
            inner: Mutex::default(),
            registry,
            limits,
            max_keys: AtomicU64::new(DEFAULT_MAX_KEYS),
            over_limit_rounds: AtomicU32::new(0),
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
        let mut g = self.inner.lock();
        g.clients.insert(meta.id, meta.clone());
        t.flags.store(
            ON | (flags & (BCAST | OPTIN | OPTOUT | NOLOOP)) | (t.flags() & CACHING),
            Relaxed,
        );
        t.redirect.store(redirect, Relaxed);
        if flags & BCAST != 0 {
            let mut mine = t.prefixes.lock();
            let empty: [&[u8]; 1] = [b""];
            let list = if prefixes.is_empty() {
                &empty[..]
            } else {
                prefixes
            };
            for p in list {
                let b = g.prefixes.entry((tenant, (*p).into())).or_default();
                if b.clients.insert(meta.id) {
                    mine.push((*p).into());
                }
            }
        }
    }

    /// disableTracking: leaves the BCAST prefixes and clears the flags. The client's
    /// entries in the key table are left to be dropped when their keys change.
    pub fn disable(&self, meta: &ClientMeta, tenant: TenantId) {
        let t = &meta.tracking;
        if t.flags() & ON == 0 {
            return;
        }
        let mut g = self.inner.lock();
        for p in t.prefixes.lock().drain(..) {
            let k = (tenant, p);
            if let Some(b) = g.prefixes.get_mut(&k) {
                b.clients.remove(&meta.id);
                if b.clients.is_empty() {
                    g.prefixes.remove(&k);
                }
            }
        }
        g.clients.remove(&meta.id);
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
        let f = meta.tracking.flags();
        if f & ON == 0 || f & BCAST != 0 {
            return;
        }
        let caching = f & CACHING != 0;
        if (f & OPTIN != 0 && !caching) || (f & OPTOUT != 0 && caching) {
            return;
        }
        let mut g = self.inner.lock();
        for k in keys {
            let ids = g.table.entry((tenant, k.into())).or_default();
            if !ids.contains(&meta.id) {
                ids.push(meta.id);
                g.items += 1;
            }
        }
        let over = self.max_keys.load(Relaxed);
        if over > 0 && g.table.len() as u64 > over {
            drop(g);
            self.limit_table();
        }
    }

    /// trackingInvalidateKey: tells the clients that may hold `key` that it changed,
    /// and forgets them for it; with `bcast`, also gathers it for BCAST prefixes.
    fn invalidate(&self, tenant: TenantId, key: &[u8], bcast: bool) {
        let (cur, flushing) = CURRENT.with(|c| {
            let c = c.borrow();
            (c.id, c.flushing)
        });
        if flushing {
            return;
        }
        let ids = {
            let mut g = self.inner.lock();
            if bcast && !g.prefixes.is_empty() {
                let mut any = false;
                for ((t, p), b) in g.prefixes.iter_mut() {
                    if *t == tenant && key.starts_with(p) {
                        b.keys.insert(key.into(), cur);
                        any = true;
                    }
                }
                if any {
                    self.bcast_pending.store(true, Relaxed);
                }
            }
            let Some(ids) = g.table.remove(&(tenant, Box::<[u8]>::from(key))) else {
                return;
            };
            g.items -= ids.len() as u64;
            ids
        };
        let key = Bytes::copy_from_slice(key);
        for id in ids {
            let Some(target) = self.lookup(id) else {
                continue;
            };
            let f = target.tracking.flags();
            if f & ON == 0 || f & BCAST != 0 || (f & NOLOOP != 0 && id == cur) {
                continue;
            }
            if id == cur {
                CURRENT.with(|c| {
                    let mut c = c.borrow_mut();
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
    /// its clients (without the keys a NOLOOP client changed itself). The current
    /// connection's own copy goes into `own` (after its reply).
    pub fn broadcast(&self, own: Option<(&ClientMeta, &mut Out)>) {
        if !self.bcast_pending.swap(false, Relaxed) {
            return;
        }
        let mut sends: Vec<(Arc<ClientMeta>, Vec<Bytes>)> = Vec::new();
        {
            let mut g = self.inner.lock();
            let Inner {
                prefixes, clients, ..
            } = &mut *g;
            for b in prefixes.values_mut() {
                if b.keys.is_empty() {
                    continue;
                }
                let keys = std::mem::take(&mut b.keys);
                for id in &b.clients {
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
        let targets: Vec<Arc<ClientMeta>> = {
            let mut g = self.inner.lock();
            let before = g.table.len();
            let mut freed = 0u64;
            g.table.retain(|(t, _), ids| {
                let keep = *t != tenant;
                if !keep {
                    freed += ids.len() as u64;
                }
                keep
            });
            let _ = before;
            g.items -= freed;
            g.clients
                .values()
                .filter(|m| m.tenant.load(Relaxed) == tenant)
                .cloned()
                .collect()
        };
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
    /// round, then 200, ...). Run by the cron and after reads that grow the table.
    pub fn limit_table(&self) {
        let max = self.max_keys.load(Relaxed);
        if max == 0 {
            return;
        }
        let rounds = self.over_limit_rounds.load(Relaxed);
        let mut effort = 100 * (rounds as usize + 1);
        loop {
            let victims: Vec<(TenantId, Box<[u8]>)> = {
                let g = self.inner.lock();
                if g.table.len() as u64 <= max {
                    self.over_limit_rounds.store(0, Relaxed);
                    return;
                }
                let n = (g.table.len() - max as usize).min(effort);
                g.table.keys().take(n).cloned().collect()
            };
            if victims.is_empty() || effort == 0 {
                break;
            }
            effort -= victims.len();
            for (t, k) in victims {
                let saved = CURRENT.with(|c| std::mem::take(&mut c.borrow_mut().id));
                self.invalidate(t, &k, false);
                CURRENT.with(|c| c.borrow_mut().id = saved);
            }
        }
        let g = self.inner.lock();
        if g.table.len() as u64 > max {
            self.over_limit_rounds.fetch_add(1, Relaxed);
        } else {
            self.over_limit_rounds.store(0, Relaxed);
        }
    }

    /// INFO: (tracking_clients, tracking_total_keys, tracking_total_items,
    /// tracking_total_prefixes).
    pub fn info(&self) -> (usize, usize, u64, usize) {
        let g = self.inner.lock();
        (g.clients.len(), g.table.len(), g.items, g.prefixes.len())
    }
}

/// The store's [`KeyChangeSink`]: every change invalidates (and feeds BCAST).
pub struct StoreChanges(pub Arc<Tracking>);

impl KeyChangeSink for StoreChanges {
    fn key_changed(&self, tenant: TenantId, key: &[u8]) {
        self.0.invalidate(tenant, key, true);
    }
}
