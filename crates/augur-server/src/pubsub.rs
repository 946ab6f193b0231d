//! Pub/Sub delivery: the server-wide subscription registry and each subscriber's mailbox.
//! Mirrors Redis 7.0's pubsub.c (the registry's maps are `server.pubsub_channels`,
//! `server.pubsub_patterns` and `server.pubsubshard_channels`; a connection's
//! [`Subscriptions`] is `c->pubsub_channels`, `c->pubsub_patterns` and
//! `c->pubsubshard_channels`).
//!
//! **Channels are per tenant.** Every map is kept per tenant (ACL user, see
//! `tenants.rs`): a tenant's PUBLISH reaches only subscribers that subscribed while
//! authenticated as the same tenant, and PUBSUB CHANNELS / NUMSUB / NUMPAT and INFO's
//! `pubsub_*` fields count only the caller's tenant, exactly as keys are per tenant. A
//! connection that re-authenticates as another tenant loses its subscriptions (silently,
//! as RESET drops them), so a subscription always belongs to the tenant that made it.
//!
//! **Delivery never blocks the publisher.** Redis appends a message to each
//! subscriber's output buffer inside PUBLISH; here the publisher instead hands each
//! subscriber's connection a [`Push`] through an unbounded channel (a few reference-
//! counted [`Bytes`] clones, no copy of the payload per subscriber) and returns. The
//! subscriber's connection task wakes on its channel even while its client is idle,
//! encodes the message in the protocol the client speaks at that moment (RESP2 array or
//! RESP3 push), and writes it. What a subscriber has not yet taken off its channel is
//! counted in bytes (with the CLIENT TRACKING invalidations queued for it, in the
//! connection's [`crate::obuf::Account`]) against `client-output-buffer-limit pubsub`
//! (Redis's default `32mb 8mb 60`): past the hard limit, or above the soft limit for
//! longer than its seconds, the subscriber is disconnected (Redis's "scheduled to be
//! closed ASAP for overcoming of output buffer limits"), so a stalled subscriber cannot
//! make the server hold unbounded memory.
//!
//! **Order.** Publishing holds the registry lock while it hands out a message, so every
//! subscriber receives the messages of all publishers in one global order, as with
//! Redis's single thread. A connection publishing to a channel it is itself subscribed to
//! gets its copy written straight into its own reply buffer, before PUBLISH's reply, as
//! in Redis.

use crate::obuf::{Class, LiveLimits};
use crate::resp::Out;
use crate::state::ClientMeta;
use augur_store::{glob_match, TenantId};
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The three kinds of subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// SUBSCRIBE / UNSUBSCRIBE / PUBLISH.
    Channel,
    /// PSUBSCRIBE / PUNSUBSCRIBE.
    Pattern,
    /// SSUBSCRIBE / SUNSUBSCRIBE / SPUBLISH (Redis 7.0's sharded Pub/Sub; Augur has one
    /// shard, so these are a second, separate channel namespace, as on a single Redis).
    Shard,
}

impl Kind {
    fn index(self) -> usize {
        self as usize
    }
    /// The confirmation's first element: `subscribe`, `psubscribe`, `ssubscribe`.
    pub fn subscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"subscribe",
            Kind::Pattern => b"psubscribe",
            Kind::Shard => b"ssubscribe",
        }
    }
    pub fn unsubscribe_word(self) -> &'static [u8] {
        match self {
            Kind::Channel => b"unsubscribe",
            Kind::Pattern => b"punsubscribe",
            Kind::Shard => b"sunsubscribe",
        }
    }
}

/// One message on its way to a subscriber.
#[derive(Debug, Clone)]
pub enum Push {
    /// `message` (PUBLISH) or `smessage` (SPUBLISH).
    Message {
        shard: bool,
        channel: Bytes,
        payload: Bytes,
    },
    /// `pmessage`: a PUBLISH that matched a pattern.
    PMessage {
        pattern: Bytes,
        channel: Bytes,
        payload: Bytes,
    },
}

impl Push {
    /// Bytes counted against the subscriber's output-buffer limit: what the encoded
    /// message takes in Redis's output buffer.
    fn cost(&self) -> usize {
        match self {
            Push::Message {
                channel, payload, ..
            } => 40 + channel.len() + payload.len(),
            Push::PMessage {
                pattern,
                channel,
                payload,
            } => 56 + pattern.len() + channel.len() + payload.len(),
        }
    }

    /// Encodes the message as Redis's addReplyPubsubMessage / addReplyPubsubPatMessage:
    /// an array in RESP2, a push (`>`) in RESP3.
    pub fn write(&self, out: &mut Out) {
        match self {
            Push::Message {
                shard,
                channel,
                payload,
            } => {
                out.push(3);
                out.bulk(if *shard { b"smessage" } else { b"message" });
                out.bulk(channel);
                out.bulk(payload);
            }
            Push::PMessage {
                pattern,
                channel,
                payload,
            } => {
                out.push(4);
                out.bulk(b"pmessage");
                out.bulk(pattern);
                out.bulk(channel);
                out.bulk(payload);
            }
        }
    }
}

/// A subscriber's end of the delivery channel, as the registry sees it.
pub struct Mailbox {
    id: u64,
    tx: mpsc::UnboundedSender<Push>,
    /// The server's `client-output-buffer-limit`; what is handed to the channel and not
    /// yet taken off by the connection is counted in `meta.obuf`.
    limits: Arc<LiveLimits>,
    meta: Arc<ClientMeta>,
}

impl Mailbox {
    /// Queues a message; disconnects the subscriber instead once it is too far behind
    /// (Redis's checkClientOutputBufferLimits for the pubsub class).
    fn deliver(&self, push: Push) {
        if self.meta.killed.load(Relaxed) {
            return;
        }
        if self
            .meta
            .obuf
            .add(push.cost(), self.limits.get(Class::Pubsub))
        {
            crate::obuf::close_for_limit(&self.meta);
            return;
        }
        let _ = self.tx.send(push);
    }
}

type Subscribers = HashMap<u64, Arc<Mailbox>>;

/// One tenant's subscriptions: name → subscribers, per [`Kind`].
#[derive(Default)]
struct Space {
    maps: [HashMap<Bytes, Subscribers>; 3],
}

/// The server-wide registry (one per server, in [`crate::state::Shared`]).
#[derive(Default)]
pub struct Registry {
    tenants: Mutex<HashMap<TenantId, Space>>,
    limits: Arc<LiveLimits>,
}

/// Counts for INFO: channels, patterns and shard channels with at least one subscriber.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub channels: usize,
    pub patterns: usize,
    pub shard_channels: usize,
}

impl Registry {
    /// A registry whose subscribers are held to `limits` (the server's
    /// `client-output-buffer-limit`).
    pub fn new(limits: Arc<LiveLimits>) -> Self {
        Registry {
            tenants: Mutex::default(),
            limits,
        }
    }

    /// Hands a message to every subscriber of `channel` in `tenant` (and, for
    /// [`Kind::Channel`], of every matching pattern) and returns how many receptions
    /// that made, counting a connection once per matching subscription as Redis does.
    /// Copies for connection `self_id` are appended to `own` instead of queued, so the
    /// caller can write them before its reply.
    pub fn publish(
        &self,
        tenant: TenantId,
        kind: Kind,
        channel: &[u8],
        payload: &[u8],
        self_id: u64,
        own: &mut Vec<Push>,
    ) -> i64 {
        let shard = kind == Kind::Shard;
        let g = self.tenants.lock();
        let Some(space) = g.get(&tenant) else {
            return 0;
        };
        let mut receivers = 0;
        let mut bytes: Option<(Bytes, Bytes)> = None;
        let mut copies = || {
            bytes
                .get_or_insert_with(|| {
                    (
                        Bytes::copy_from_slice(channel),
                        Bytes::copy_from_slice(payload),
                    )
                })
                .clone()
        };
        if let Some(subs) = space.maps[kind.index()].get(channel) {
            for mb in subs.values() {
                let (channel, payload) = copies();
                let push = Push::Message {
                    shard,
                    channel,
                    payload,
                };
                if mb.id == self_id {
                    own.push(push);
                } else {
                    mb.deliver(push);
                }
                receivers += 1;
            }
        }
        if kind == Kind::Channel {
            // Shard Pub/Sub ignores patterns (pubsubPublishMessageInternal).
            for (pattern, subs) in &space.maps[Kind::Pattern.index()] {
                if !glob_match(pattern, channel) {
                    continue;
                }
                for mb in subs.values() {
                    let (channel, payload) = copies();
                    let push = Push::PMessage {
                        pattern: pattern.clone(),
                        channel,
                        payload,
                    };
                    if mb.id == self_id {
                        own.push(push);
                    } else {
                        mb.deliver(push);
                    }
                    receivers += 1;
                }
            }
        }
        receivers
    }

    /// PUBSUB CHANNELS / SHARDCHANNELS: the active names of `kind` in `tenant` matching
    /// `pattern` (all when None).
    pub fn names(&self, tenant: TenantId, kind: Kind, pattern: Option<&[u8]>) -> Vec<Bytes> {
        let g = self.tenants.lock();
        let Some(space) = g.get(&tenant) else {
            return Vec::new();
        };
        space.maps[kind.index()]
            .keys()
            .filter(|n| pattern.is_none_or(|p| glob_match(p, n)))
            .cloned()
            .collect()
    }

    /// PUBSUB NUMSUB / SHARDNUMSUB: subscribers of one name (patterns not counted).
    pub fn subscriber_count(&self, tenant: TenantId, kind: Kind, name: &[u8]) -> usize {
        let g = self.tenants.lock();
        g.get(&tenant)
            .and_then(|s| s.maps[kind.index()].get(name))
            .map_or(0, HashMap::len)
    }

    /// INFO's `pubsub_channels`, `pubsub_patterns`, `pubsubshard_channels` for a tenant.
    pub fn counts(&self, tenant: TenantId) -> Counts {
        let g = self.tenants.lock();
        g.get(&tenant).map_or(Counts::default(), |s| Counts {
            channels: s.maps[0].len(),
            patterns: s.maps[1].len(),
            shard_channels: s.maps[2].len(),
        })
    }

    /// Every subscription of connection `id` in `tenant` (ACL changes check them).
    pub fn subscriptions_of(&self, tenant: TenantId, id: u64) -> Vec<(Kind, Bytes)> {
        let g = self.tenants.lock();
        let Some(space) = g.get(&tenant) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            for (name, subs) in &space.maps[kind.index()] {
                if subs.contains_key(&id) {
                    out.push((kind, name.clone()));
                }
            }
        }
        out
    }

    fn add(&self, tenant: TenantId, kind: Kind, name: &Bytes, mb: &Arc<Mailbox>) {
        let mut g = self.tenants.lock();
        g.entry(tenant).or_default().maps[kind.index()]
            .entry(name.clone())
            .or_default()
            .insert(mb.id, mb.clone());
    }

    fn remove(&self, tenant: TenantId, kind: Kind, name: &[u8], id: u64) {
        let mut g = self.tenants.lock();
        Self::remove_locked(&mut g, tenant, kind, name, id);
    }

    fn remove_locked(
        g: &mut HashMap<TenantId, Space>,
        tenant: TenantId,
        kind: Kind,
        name: &[u8],
        id: u64,
    ) {
        let Some(space) = g.get_mut(&tenant) else {
            return;
        };
        let map = &mut space.maps[kind.index()];
        if let Some(subs) = map.get_mut(name) {
            subs.remove(&id);
            if subs.is_empty() {
                // Drop the entry with its last subscriber, so that a client cannot make
                // the server keep millions of dead channels (as pubsub.c does).
                map.remove(name);
            }
        }
        if space.maps.iter().all(HashMap::is_empty) {
            g.remove(&tenant);
        }
    }
}

/// A connection's subscriptions (its CLIENT_PUBSUB state). Exists exactly while the
/// connection has at least one subscription; dropping it (last unsubscribe, RESET,
/// disconnect) removes every subscription from the registry.
pub struct Subscriptions {
    registry: Arc<Registry>,
    tenant: TenantId,
    mailbox: Arc<Mailbox>,
    rx: mpsc::UnboundedReceiver<Push>,
    /// Name → order of subscription, per [`Kind`] (unsubscribe-all goes in that order).
    names: [HashMap<Bytes, u64>; 3],
    seq: u64,
}

impl Subscriptions {
    pub fn new(registry: Arc<Registry>, tenant: TenantId, meta: Arc<ClientMeta>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let mailbox = Arc::new(Mailbox {
            id: meta.id,
            tx,
            limits: registry.limits.clone(),
            meta,
        });
        Self {
            registry,
            tenant,
            mailbox,
            rx,
            names: Default::default(),
            seq: 0,
        }
    }

    pub fn tenant(&self) -> TenantId {
        self.tenant
    }

    /// Subscribes; false if already subscribed to `name` as `kind`.
    pub fn subscribe(&mut self, kind: Kind, name: &[u8]) -> bool {
        if self.names[kind.index()].contains_key(name) {
            return false;
        }
        let name = Bytes::copy_from_slice(name);
        self.registry.add(self.tenant, kind, &name, &self.mailbox);
        self.seq += 1;
        self.names[kind.index()].insert(name, self.seq);
        self.publish_counts();
        true
    }

    /// Unsubscribes; false if not subscribed to `name` as `kind`.
    pub fn unsubscribe(&mut self, kind: Kind, name: &[u8]) -> bool {
        if self.names[kind.index()].remove(name).is_none() {
            return false;
        }
        self.registry
            .remove(self.tenant, kind, name, self.mailbox.id);
        self.publish_counts();
        true
    }

    /// The names subscribed as `kind`, in the order they were subscribed.
    pub fn list(&self, kind: Kind) -> Vec<Bytes> {
        let mut v: Vec<(&Bytes, &u64)> = self.names[kind.index()].iter().collect();
        v.sort_by_key(|(_, s)| **s);
        v.into_iter().map(|(n, _)| n.clone()).collect()
    }

    /// The count Redis puts in (un)subscribe confirmations: channels + patterns for the
    /// classic kinds (clientSubscriptionsCount), shard channels for the shard kind.
    pub fn count_for(&self, kind: Kind) -> usize {
        match kind {
            Kind::Channel | Kind::Pattern => self.names[0].len() + self.names[1].len(),
            Kind::Shard => self.names[2].len(),
        }
    }

    /// No subscription of any kind left (Redis clears CLIENT_PUBSUB).
    pub fn is_empty(&self) -> bool {
        self.names.iter().all(HashMap::is_empty)
    }

    fn publish_counts(&self) {
        let m = &self.mailbox.meta;
        m.sub.store(self.names[0].len() as u32, Relaxed);
        m.psub.store(self.names[1].len() as u32, Relaxed);
        m.ssub.store(self.names[2].len() as u32, Relaxed);
    }

    /// Moves queued messages into `out` (encoded for the client's current protocol)
    /// until `out` holds `budget` bytes or the queue is empty. Returns whether any
    /// message was written.
    pub fn drain(&mut self, out: &mut Out, budget: usize) -> bool {
        let mut any = false;
        while out.buf.len() < budget {
            match self.rx.try_recv() {
                Ok(p) => {
                    self.mailbox.meta.obuf.taken(p.cost());
                    p.write(out);
                    any = true;
                }
                Err(_) => break,
            }
        }
        any
    }

    /// Waits for the next queued message (the connection loop selects on this while
    /// its client is idle). Never completes with None while `self` lives, as `self`
    /// holds a sender.
    pub async fn recv(&mut self) -> Option<Push> {
        let p = self.rx.recv().await?;
        self.mailbox.meta.obuf.taken(p.cost());
        Some(p)
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        {
            let mut g = self.registry.tenants.lock();
            for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
                for name in self.names[kind.index()].keys() {
                    Registry::remove_locked(&mut g, self.tenant, kind, name, self.mailbox.id);
                }
            }
        }
        // Unregistered: nothing more arrives. What was queued and not written is
        // dropped with the channel; it no longer counts against the connection's limit.
        while let Ok(p) = self.rx.try_recv() {
            self.mailbox.meta.obuf.taken(p.cost());
        }
        for n in &mut self.names {
            n.clear();
        }
        self.publish_counts();
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

    #[test]
    fn publish_reaches_only_the_same_tenant() {
        let reg = Arc::new(Registry::default());
        let mut a = Subscriptions::new(reg.clone(), 1, meta(1));
        let mut b = Subscriptions::new(reg.clone(), 2, meta(2));
        assert!(a.subscribe(Kind::Channel, b"news"));
        assert!(!a.subscribe(Kind::Channel, b"news"));
        assert!(b.subscribe(Kind::Pattern, b"n*"));
        let mut own = Vec::new();
        assert_eq!(
            reg.publish(1, Kind::Channel, b"news", b"x", 99, &mut own),
            1
        );
        assert_eq!(
            reg.publish(2, Kind::Channel, b"news", b"y", 99, &mut own),
            1
        );
        assert_eq!(
            reg.publish(3, Kind::Channel, b"news", b"z", 99, &mut own),
            0
        );
        let mut out = Out::new();
        assert!(a.drain(&mut out, usize::MAX));
        assert_eq!(
            &out.buf[..],
            b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$1\r\nx\r\n"
        );
        let mut out = Out::new();
        out.resp3 = true;
        assert!(b.drain(&mut out, usize::MAX));
        assert_eq!(
            &out.buf[..],
            b">4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$1\r\ny\r\n"
        );
        assert_eq!(reg.counts(1).channels, 1);
        assert_eq!(reg.counts(2).patterns, 1);
        drop(a);
        assert_eq!(reg.counts(1), Counts::default());
        assert!(reg.tenants.lock().get(&1).is_none());
    }

    #[test]
    fn own_copies_are_returned_not_queued() {
        let reg = Arc::new(Registry::default());
        let mut a = Subscriptions::new(reg.clone(), 0, meta(7));
        a.subscribe(Kind::Shard, b"s");
        let mut own = Vec::new();
        assert_eq!(reg.publish(0, Kind::Shard, b"s", b"m", 7, &mut own), 1);
        assert_eq!(own.len(), 1);
        assert!(!a.drain(&mut Out::new(), usize::MAX));
        // Shard channels ignore patterns and the classic namespace.
        a.subscribe(Kind::Pattern, b"*");
        assert_eq!(reg.publish(0, Kind::Shard, b"s", b"m", 0, &mut own), 1);
        assert_eq!(reg.publish(0, Kind::Channel, b"s", b"m", 0, &mut own), 1);
        assert_eq!(a.count_for(Kind::Channel), 1);
        assert_eq!(a.count_for(Kind::Shard), 1);
    }

    #[test]
    fn a_subscriber_too_far_behind_is_disconnected() {
        let reg = Arc::new(Registry::default());
        let m = meta(3);
        let mut a = Subscriptions::new(reg.clone(), 0, m.clone());
        a.subscribe(Kind::Channel, b"c");
        let big = vec![b'x'; 1024 * 1024];
        let mut own = Vec::new();
        for _ in 0..31 {
            reg.publish(0, Kind::Channel, b"c", &big, 0, &mut own);
        }
        assert!(!m.killed.load(Relaxed), "under the hard limit");
        reg.publish(0, Kind::Channel, b"c", &big, 0, &mut own);
        assert!(m.killed.load(Relaxed), "over 32 MB queued");
        // Taking messages off lowers the backlog.
        let mut out = Out::new();
        a.drain(&mut out, 1);
        assert!(m.obuf.queued() < 31 * 1024 * 1024);
        drop(a);
        assert_eq!(m.obuf.queued(), 0, "dropped with the subscriptions");
    }
}
