//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH. Mirrors Redis 7.0's multi.c.
//!
//! - Between MULTI and EXEC, commands are checked (name, arity, authentication, OOM for
//!   `denyoom` ones) and queued; a command refused while queueing makes EXEC answer
//!   EXECABORT (`flagTransaction`). MULTI, EXEC, DISCARD, WATCH, QUIT and RESET are never
//!   queued.
//! - EXEC runs the queue holding the [`gate`](crate::gate) exclusively, so no other
//!   client's command interleaves, whichever shards the queued commands touch; errors of
//!   single commands are replies inside EXEC's array, as in Redis (no rollback).
//! - WATCH registers the key in its shard ([`augur_store::Shard::watch`]), which raises
//!   the connection's flag on any change of the key: a write by anyone (this connection
//!   included, before EXEC), a delete, a new TTL, eviction, expiry (lazy or active),
//!   FLUSHDB/FLUSHALL while the key exists. A key that was live at WATCH but has expired
//!   by EXEC also aborts it (7.0's `isWatchedKeyExpired`). EXEC, DISCARD, UNWATCH, RESET
//!   and disconnecting drop the connection's watches.

use super::{dispatch_call, Client, ERR_OOM};
use crate::cmdtable::{CommandSpec, DENYOOM};
use crate::resp::Args;
use crate::state::Shared;
use std::sync::atomic::Ordering::Relaxed;

/// A command queued between MULTI and EXEC: its arguments copied out of the read buffer.
pub struct Queued {
    spec: &'static CommandSpec,
    bytes: Vec<u8>,
    ranges: Vec<(usize, usize)>,
}

/// A connection's open transaction.
#[derive(Default)]
pub struct MultiState {
    queue: Vec<Queued>,
    /// A command was refused while queueing: EXEC must answer EXECABORT.
    aborted: bool,
    /// Union of the queued commands' flags (EXEC is refused under OOM if any is
    /// `denyoom`, as Redis does).
    flags: u32,
}

impl MultiState {
    /// Remembers that a command was refused while queueing (Redis's `flagTransaction`).
    pub fn flag_error(&mut self) {
        self.aborted = true;
    }

    /// Queued commands (CLIENT LIST `multi=`).
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Union of the queued commands' flags (CLIENT PAUSE WRITE holds an EXEC with a
    /// write).
    pub fn flags(&self) -> u32 {
        self.flags
    }

    /// Bytes the queued commands take (CLIENT LIST `multi-mem=`, as multi.c's
    /// multiStateMemOverhead: arguments plus per-command bookkeeping).
    pub fn mem(&self) -> usize {
        self.queue
            .iter()
            .map(|q| {
                q.bytes.len()
                    + q.ranges.len() * std::mem::size_of::<(usize, usize)>()
                    + std::mem::size_of::<Queued>()
            })
            .sum()
    }

    /// Queues a command; `flags` are its flags as getCommandFlags gives them
    /// (`client::command_flags`: a script's own).
    pub fn queue(&mut self, spec: &'static CommandSpec, args: Args<'_>, flags: u32) {
        let mut bytes = Vec::new();
        let mut ranges = Vec::with_capacity(args.len());
        for a in args.iter() {
            ranges.push((bytes.len(), bytes.len() + a.len()));
            bytes.extend_from_slice(a);
        }
        self.flags |= flags;
        self.queue.push(Queued {
            spec,
            bytes,
            ranges,
        });
    }
}

pub(super) fn multi_command(c: &mut Client) {
    if c.multi.is_some() {
        return c.out.error("ERR MULTI calls can not be nested");
    }
    c.multi = Some(MultiState::default());
    c.out.ok();
}

pub(super) fn discard_command(shared: &Shared, c: &mut Client) {
    if c.multi.take().is_none() {
        return c.out.error("ERR DISCARD without MULTI");
    }
    unwatch_all(shared, c);
    c.out.ok();
}

pub(super) fn exec_command(shared: &Shared, c: &mut Client, now: u64) {
    let Some(m) = c.multi.take() else {
        return c.out.error("ERR EXEC without MULTI");
    };
    if m.aborted {
        unwatch_all(shared, c);
        return c
            .out
            .error("EXECABORT Transaction discarded because of previous errors.");
    }
    if m.flags & DENYOOM != 0 && shared.store.over_limit_for_writes() {
        unwatch_all(shared, c);
        return c.out.error(&format!(
            "EXECABORT Transaction discarded because of: {}",
            ERR_OOM
        ));
    }
    let Some(_exclusive) = shared.gate.exclusive_unless(|| shared.scripting.busy()) else {
        // A script turned busy while EXEC waited for it: refused as processCommand
        // refuses EXEC during a busy script (execCommandAbort), the transaction is
        // discarded.
        unwatch_all(shared, c);
        return c.out.error(&format!(
            "EXECABORT Transaction discarded because of: {}",
            shared.scripting.busy_error()
        ));
    };
    // A watched key that was live at WATCH and has expired since is a change: looking it
    // up deletes it lazily, and the deletion raises the flag.
    for (ns, key) in &c.watched {
        shared
            .store
            .lock_key(key)
            .exists(shared.store.physical(*ns), key, now);
    }
    let dirty = c.watch_flag.load(Relaxed);
    unwatch_all(shared, c);
    if dirty {
        return c.out.null_array();
    }
    c.out.array(m.queue.len());
    for q in &m.queue {
        let args = Args::from_parts(&q.bytes, &q.ranges);
        c.commands += 1;
        // The rules may have changed since the command was queued (execCommand).
        if c.meta.acl_state.load(Relaxed) != 0 {
            if let Err((denied, _)) = super::tenant::check_request(shared, c, q.spec, args, "multi")
            {
                c.out.error(&denied.exec_error());
                continue;
            }
        }
        dispatch_call(shared, c, q.spec, args, now);
    }
}

pub(super) fn watch_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    if c.multi.is_some() {
        return c.out.error("ERR WATCH inside MULTI is not allowed");
    }
    // The connection remembers the logical database (a SWAPDB moves the registration in
    // the store along with it, see `Store::swap_dbs`); the store is told the physical one.
    let logical = augur_store::Ns::new(c.tenant, c.db);
    let ns = c.ns();
    for key in args.iter().skip(1) {
        if c.watched.iter().any(|(n, k)| *n == logical && k == key) {
            continue;
        }
        shared
            .store
            .lock_key(key)
            .watch(ns, key, &c.watch_flag, now);
        c.watched.push((logical, key.to_vec()));
    }
    c.out.ok();
}

pub(super) fn unwatch_command(shared: &Shared, c: &mut Client) {
    unwatch_all(shared, c);
    c.out.ok();
}

/// Drops every WATCH of the connection and clears its flag (unwatchAllKeys).
pub fn unwatch_all(shared: &Shared, c: &mut Client) {
    for (ns, key) in c.watched.drain(..) {
        let ns = shared.store.physical(ns);
        shared.store.lock_key(&key).unwatch(ns, &key, &c.watch_flag);
    }
    c.watch_flag.store(false, Relaxed);
}
