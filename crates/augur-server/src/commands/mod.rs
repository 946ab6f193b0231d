//! Command execution. Each command writes its reply straight into the connection's
//! output buffer; keyed commands lock the key's shard once. Error texts are Redis 7.0's
//! (t_string.c, expire.c, db.c, server.c, networking.c, config.c).
//!
//! This module holds what server.c's processCommand does before a command runs (lookup,
//! arity, authentication, the OOM check), the dispatch, and the error helpers every group
//! shares. The commands themselves live in one file per group, as in Redis: `strings`
//! (t_string.c), `bits` (bitops.c), `hll` (hyperloglog.c), `keyspace` (db.c, object.c), `expire` (expire.c),
//! `connection` (networking.c), `server` (server.c, config.c), `hash` (t_hash.c), `set`
//! (t_set.c), `geo` (geo.c), `multi` (multi.c), `scripting` (eval.c, functions.c) and `pubsub` (pubsub.c).

mod bits;
mod client;
mod connection;
mod diagnostics;
pub mod dump;
pub mod eval;
mod expire;
mod geo;
mod hash;
mod hll;
mod keyspace;
mod list;
pub mod multi;
mod pubsub;
mod scan;
mod scripting;
mod server;
mod set;
mod sort;
pub(crate) mod stream;
mod strings;
mod tenant;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_strcmds;
mod zset;

use crate::cmdtable::{self, Cmd, CommandSpec, DENYOOM, NO_AUTH, NO_MULTI};
use crate::pubsub::Kind as PsKind;
use crate::resp::{Args, Out};
use crate::state::{ClientMeta, Shared};
use crate::stats;
use augur_store::WatchFlag;
use augur_store::{Ns, TenantId, WriteError};
pub use client::{client_eviction_limit, evict_clients, paused_for};
/// The command clock: quanta's TSC read, a few nanoseconds, where `std::time::Instant`
/// (the vDSO's clock_gettime) cost ~40 ns a read on this project's VMs, 2 % of a
/// pipelined SET's CPU time.
use quanta::Instant;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
pub use tenant::{merged_curve, tenant_info_fields};

const ERR_SYNTAX: &str = "ERR syntax error";
const ERR_NOT_INT: &str = "ERR value is not an integer or out of range";
const ERR_NOT_FLOAT: &str = "ERR value is not a valid float";
const ERR_OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
const ERR_TOO_BIG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
const ERR_NOAUTH: &str = "NOAUTH Authentication required.";
const ERR_WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const ERR_WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// The arguments LMPOP, ZMPOP and their blocking forms share from `numkeys_idx`:
/// `numkeys key [key ...] <side> [COUNT count]`, the side read by `side` (LEFT|RIGHT,
/// MIN|MAX): (keys, side, count), or the error text in t_list.c's / t_zset.c's order.
pub(super) fn parse_mpop_args<'a, T>(
    args: Args<'a>,
    numkeys_idx: usize,
    side: impl Fn(&[u8]) -> Option<T>,
) -> Result<(Vec<&'a [u8]>, T, usize), String> {
    let numkeys = parse_long_in(
        args.get(numkeys_idx),
        1,
        i64::MAX,
        Some("numkeys should be greater than 0"),
    )? as u64;
    let where_idx = (numkeys_idx as u64)
        .checked_add(numkeys)
        .and_then(|v| v.checked_add(1))
        .filter(|&i| i < args.len() as u64)
        .ok_or_else(|| ERR_SYNTAX.to_string())? as usize;
    let side = side(args.get(where_idx)).ok_or_else(|| ERR_SYNTAX.to_string())?;
    let mut count = None;
    let mut j = where_idx + 1;
    while j < args.len() {
        if count.is_none() && eq(args.get(j), "count") && j + 1 < args.len() {
            j += 1;
            count = Some(parse_long_in(
                args.get(j),
                1,
                i64::MAX,
                Some("count should be greater than 0"),
            )? as usize);
        } else {
            return Err(ERR_SYNTAX.to_string());
        }
        j += 1;
    }
    let keys = (numkeys_idx + 1..where_idx).map(|i| args.get(i)).collect();
    Ok((keys, side, count.unwrap_or(1)))
}

/// getRangeLongFromObjectOrReply: an integer argument within `min..=max`. With a
/// message, Redis answers it (`ERR <msg>`) for text that is not a number as well as for
/// a number out of range; without one, its two default texts.
pub(super) fn parse_long_in(
    arg: &[u8],
    min: i64,
    max: i64,
    msg: Option<&str>,
) -> Result<i64, String> {
    let error = |default: String| msg.map_or(default, |m| format!("ERR {m}"));
    let v = crate::resp::parse_i64(arg).ok_or_else(|| error(ERR_NOT_INT.to_string()))?;
    if v < min || v > max {
        return Err(error(format!(
            "ERR value is out of range, value must between {min} and {max}"
        )));
    }
    Ok(v)
}

/// One connection's command-level state.
pub struct Client {
    pub meta: Arc<ClientMeta>,
    pub db: u8,
    /// The tenant (ACL user) the connection works as; its keyspace is the only one the
    /// connection sees.
    pub tenant: TenantId,
    pub user: String,
    pub authenticated: bool,
    pub out: Out,
    /// QUIT: close once the replies so far are written.
    pub close_after_reply: bool,
    /// Commands run since the connection last reported to the shared counters.
    pub commands: u64,
    /// The open transaction (between MULTI and EXEC/DISCARD).
    pub multi: Option<multi::MultiState>,
    /// Keys this connection WATCHes (with their *logical* database), and the flag their
    /// shards raise on a change.
    pub watched: Vec<(Ns, Vec<u8>)>,
    pub watch_flag: WatchFlag,
    /// Pub/Sub subscriptions; Some exactly while the connection has one (Redis's
    /// CLIENT_PUBSUB flag). The connection loop also waits on it for messages.
    pub pubsub: Option<Box<crate::pubsub::Subscriptions>>,
    /// A script running for this connection has called a read-only command (CLIENT
    /// TRACKING then remembers the script's declared keys).
    pub script_read: bool,
    /// A blocked command's statistics slot and run time so far: its call is counted
    /// when the wait ends (failed if it ends with an error), as Redis's
    /// updateStatsOnUnblock does.
    pub blocked_call: Option<(u16, u64)>,
    /// The slow-log entry of that command, added when it is served (server.c logs a
    /// blocked command at unblock).
    pub blocked_slow: Option<crate::slowlog::Draft>,
    /// CLIENT REPLY state: [`client::REPLY_OFF`], [`client::REPLY_SKIP`],
    /// [`client::REPLY_SKIP_NEXT`] bits; 0 (the common case) costs one compare per
    /// command.
    pub reply: u8,
    /// MONITOR mode: the channel the server's command lines arrive on.
    pub monitor: Option<Box<crate::monitor::MonitorRx>>,
    /// The tenant's logical -> physical database map (SWAPDB), shared with the store:
    /// set with the tenant (`Shared::attach_db_map`), read on every keyed command.
    pub db_map: Arc<augur_store::DbMap>,
    /// The user's permissions as of its last refresh (see `tenant::refresh_perms`).
    pub perms: Arc<crate::acl::Perms>,
    /// When the previous command of this read batch ended: the next one's start, so a
    /// pipelined command costs one clock read, not two (on this project's VMs a read is
    /// ~100 ns under load). The connection loop clears it after each batch.
    pub clock: Option<Instant>,
    /// Set while a blocking command runs at the connection's top level (see `list`).
    pub may_block: bool,
    /// Set while a script's command runs (SORT orders a set it would leave unsorted).
    pub in_script: bool,
    /// The wait a blocking command left: the connection loop waits on it before it
    /// runs the next command.
    pub blocked: Option<crate::blocking::Blocked>,
}

impl Client {
    pub fn new(meta: Arc<ClientMeta>, authenticated: bool) -> Self {
        let watch_flag = meta.dirty_cas.clone();
        Self {
            meta,
            db: 0,
            tenant: 0,
            user: "default".to_string(),
            authenticated,
            out: Out::new(),
            close_after_reply: false,
            commands: 0,
            multi: None,
            watched: Vec::new(),
            watch_flag,
            pubsub: None,
            script_read: false,
            blocked_call: None,
            blocked_slow: None,
            reply: 0,
            monitor: None,
            db_map: Arc::new(augur_store::DbMap::identity(0)),
            perms: Arc::new(crate::acl::Perms::new(false)),
            clock: None,
            may_block: false,
            in_script: false,
            blocked: None,
        }
    }

    /// Releases what the connection holds in shared structures (its WATCHes); called
    /// when the connection ends.
    pub fn disconnect(&mut self, shared: &Shared) {
        multi::unwatch_all(shared, self);
    }

    /// The namespace the connection's keyed commands work in: its tenant's selected
    /// database.
    #[inline]
    pub fn ns(&self) -> Ns {
        self.ns_of(self.db)
    }

    /// The namespace of the connection's tenant's logical database `db`: where its
    /// entries are stored after any SWAPDB.
    #[inline]
    pub fn ns_of(&self, db: u8) -> Ns {
        Ns::new(self.tenant, self.db_map.phys(db))
    }

    /// Points the connection at its tenant's database map; called whenever `tenant` is
    /// set (connect, AUTH, HELLO AUTH, RESET).
    pub fn attach_db_map(&mut self, shared: &Shared) {
        self.db_map = shared.store.db_map(self.tenant);
    }

    /// Whether the connection must still authenticate before running commands.
    pub fn auth_required(&self, shared: &Shared) -> bool {
        !self.authenticated && shared.pass_required.load(Relaxed)
    }
}

/// Runs one command. `now` is the Unix time in ms used for all TTL decisions of this
/// command. Inside MULTI, queues it instead (after the same checks Redis makes before
/// queueing, any failure of which aborts the transaction). Under CLIENT REPLY OFF / SKIP
/// the reply is dropped afterwards (networking.c `prepareClientToWrite`).
pub fn execute(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let quiet = c.reply != 0;
    let mark = c.out.buf.len();
    let tracking = shared.tracking.in_use();
    if tracking {
        crate::tracking::begin_command(c.meta.id);
    }
    execute_command(shared, c, args, now);
    if quiet || c.reply != 0 {
        client::filter_reply(c, mark, args);
    }
    // Clients blocked on keys this command readied are served now, before this
    // connection's next command and before its reply is written (see `blocking`).
    if shared.blocking.has_ready() {
        list::serve_ready(shared);
    }
    if tracking {
        after_tracked_command(shared, c, args);
    }
}

/// CLIENT TRACKING's work after a command (server.c's afterCommand and beforeSleep):
/// invalidations the command owes its own connection go after its reply, BCAST
/// prefixes' gathered keys go out, and CLIENT CACHING's one-command flag ends (unless
/// this was CLIENT CACHING).
#[cold]
fn after_tracked_command(shared: &Shared, c: &mut Client, args: Args<'_>) {
    shared.tracking.flush_own(&c.meta, &mut c.out, false);
    shared.tracking.broadcast(Some((&c.meta, &mut c.out)));
    crate::tracking::end_command();
    let t = &c.meta.tracking;
    if t.flags() & crate::tracking::CACHING != 0
        && !(args.len() >= 2 && eq(args.get(0), "client") && eq(args.get(1), "caching"))
    {
        t.flags.fetch_and(!crate::tracking::CACHING, Relaxed);
    }
}

fn execute_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    c.commands += 1;
    // Only a command that runs starts where the previous one ended (see `clock`).
    let prev_end = c.clock.take();
    let name = args.get(0);
    let mut buf = [0u8; crate::cmdtable::MAX_NAME_LEN];
    let spec = match cmdtable::upper(name, &mut buf).and_then(cmdtable::lookup) {
        Some(s) => s,
        None => {
            flag_transaction(c);
            return unknown_command(&mut c.out, args);
        }
    };
    // The statistics slot (a container's subcommand has its own) and the arity that
    // applies; an unknown subcommand has neither and is answered by its container.
    let (slot, sub_arity) = stats::resolve(spec, (args.len() >= 2).then(|| args.get(1)));
    if !spec.arity_ok(args.len()) {
        return reject(c, slot, |out| arity_error(out, spec.name));
    }
    if let Some(arity) = sub_arity.filter(|_| !spec.subcommands.is_empty()) {
        if !cmdtable::arity_ok(arity, args.len()) {
            let sub = spec.sub(args.get(1)).map_or(spec.name, |s| s.name);
            return reject(c, slot, |out| arity_error(out, sub));
        }
    }
    if spec.flags & NO_AUTH == 0 && c.auth_required(shared) {
        return reject(c, slot, |out| out.error(ERR_NOAUTH));
    }
    // ACL: one load and branch unless the user is restricted or its rules changed.
    if c.meta.acl_state.load(Relaxed) != 0 {
        let context = if c.multi.is_some() {
            "multi"
        } else {
            "toplevel"
        };
        if let Err((denied, fullname)) = tenant::check_request(shared, c, spec, args, context) {
            return reject(c, slot, |out| out.error(&denied.error(fullname)));
        }
    }
    if spec.flags & DENYOOM != 0 {
        if shared.store.over_limit_for_writes() {
            return reject(c, slot, |out| out.error(ERR_OOM));
        }
    } else {
        // processCommand's performEvictions runs before every command, not only the
        // ones it may refuse: a read after a write that took the store over its limit
        // evicts first (and CLIENT TRACKING tells of it before the read's reply).
        if shared.latency.enabled() {
            // The latency monitor's `eviction-cycle` (evict.c performEvictions).
            let t0 = Instant::now();
            shared.store.evict_before_command();
            shared
                .latency
                .add_if_needed("eviction-cycle", t0.elapsed().as_millis() as u64);
        } else {
            shared.store.evict_before_command();
        }
    }
    if c.pubsub.is_some() && !c.out.resp3 && !pubsub::resp2_context_allows(c, spec, args) {
        c.out.stats.reject(slot);
        return;
    }
    c.meta.last_cmd.store(client::cmd_code(spec, args), Relaxed);
    // While a script has run past busy-reply-threshold, only what Redis allows runs.
    if shared.scripting.busy() && !eval::allow_busy(spec, args) {
        c.out.stats.reject(slot);
        return reject_busy(shared, c, spec);
    }
    if let Some(m) = &mut c.multi {
        if spec.flags & NO_MULTI != 0 {
            return reject(c, slot, |out| {
                out.error("ERR Command not allowed inside a transaction")
            });
        }
        if !matches!(
            spec.cmd,
            Cmd::Exec | Cmd::Discard | Cmd::Multi | Cmd::Watch | Cmd::Quit | Cmd::Reset
        ) {
            let flags = client::command_flags(shared, c.tenant, spec, args);
            m.queue(spec, args, flags);
            return c.out.simple("QUEUED");
        }
    }
    // From here the command runs: it is a call (server.c's call()), timed, and failed if
    // it replied an error that no command nested in it (EXEC, scripts) accounted for.
    // The duration starts where the previous command of the batch ended (it includes
    // parsing this one, tens of nanoseconds).
    let t0 = prev_end.unwrap_or_else(Instant::now);
    c.out.stats.begin();
    // Only a blocking command run by the connection itself may block (not one queued
    // in MULTI or called by a script: CLIENT_DENY_BLOCKING).
    c.may_block = list::is_blocking(spec.cmd);
    let tracking = shared.tracking.in_use();
    if tracking {
        // What changed before the command ran (the eviction a write needed) is told
        // before its reply; what its body changes, after.
        shared.tracking.flush_own(&c.meta, &mut c.out, true);
        crate::tracking::set_executing(true);
    }
    run(shared, c, spec, args, now);
    if tracking {
        crate::tracking::set_executing(false);
    }
    c.may_block = false;
    let t1 = Instant::now();
    c.clock = Some(t1);
    if sub_arity.is_some() {
        let nanos = t1.saturating_duration_since(t0).as_nanos() as u64;
        if c.blocked.is_some() {
            c.blocked_call = Some((slot, nanos));
        } else {
            c.out.stats.call(slot, nanos);
        }
        diagnostics::after_call(shared, c, spec, args, nanos);
    }
}

/// A command refused before it runs (processCommand's rejectCommand): its error, a
/// rejected call in the statistics, and a failed transaction if one is open.
fn reject(c: &mut Client, slot: u16, reply: impl FnOnce(&mut Out)) {
    flag_transaction(c);
    c.out.stats.reject(slot);
    reply(&mut c.out);
}

/// Runs a command that passed the checks: under the gate (see `gate`).
fn run(shared: &Shared, c: &mut Client, spec: &'static CommandSpec, args: Args<'_>, now: u64) {
    if spec.cmd == Cmd::Exec {
        // Takes the gate exclusively itself.
        multi::exec_command(shared, c, now);
        return client::feed_monitors(shared, c, spec, args);
    }
    let busy = || shared.scripting.busy();
    if matches!(
        spec.cmd,
        Cmd::Eval | Cmd::EvalSha | Cmd::EvalRo | Cmd::EvalShaRo | Cmd::FCall | Cmd::FCallRo
    ) {
        // A script runs atomically, like EXEC: the gate exclusively for its whole run.
        let Some(_exclusive) = shared.gate.exclusive_unless(busy) else {
            return c.out.error(shared.scripting.busy_error());
        };
        return call(shared, c, spec, args, now);
    }
    if matches!(spec.cmd, Cmd::SwapDb | Cmd::Sort | Cmd::SortRo) {
        // SWAPDB exchanges two databases' maps for every connection; SORT reads keys it
        // learns as it goes (see `sort`): no other command may be running.
        let Some(_exclusive) = shared.gate.exclusive_unless(busy) else {
            return reject_busy(shared, c, spec);
        };
        return call(shared, c, spec, args, now);
    }
    match shared.gate.shared_unless(busy) {
        Some(_shared_hold) => call(shared, c, spec, args, now),
        // A busy script holds the gate; what may run meanwhile does not touch keys.
        None if eval::allow_busy(spec, args) => call(shared, c, spec, args, now),
        None => reject_busy(shared, c, spec),
    }
}

/// The BUSY refusal (processCommand's rejectCommand while a script is busy): inside a
/// transaction it aborts it (flagTransaction), and an EXEC refused this way discards
/// the transaction and answers EXECABORT with the reason (execCommandAbort), so the
/// connection never stays in MULTI.
fn reject_busy(shared: &Shared, c: &mut Client, spec: &'static CommandSpec) {
    let msg = shared.scripting.busy_error();
    if spec.cmd == Cmd::Exec {
        c.multi = None;
        multi::unwatch_all(shared, c);
        return c.out.error(&format!(
            "EXECABORT Transaction discarded because of: {msg}"
        ));
    }
    flag_transaction(c);
    c.out.error(msg)
}

/// Runs a queued command inside EXEC as a call of its own (multi.c's execCommand calls
/// call() for each): timed and counted like a command run directly.
fn dispatch_call(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let (slot, sub_arity) = stats::resolve(spec, (args.len() >= 2).then(|| args.get(1)));
    let t0 = Instant::now();
    c.out.stats.begin();
    call(shared, c, spec, args, now);
    if sub_arity.is_some() {
        let nanos = t0.elapsed().as_nanos() as u64;
        c.out.stats.call(slot, nanos);
        diagnostics::after_call(shared, c, spec, args, nanos);
    }
}

/// A command refused while a transaction is open makes its EXEC fail.
fn flag_transaction(c: &mut Client) {
    if let Some(m) = &mut c.multi {
        m.flag_error();
    }
}

/// Runs a checked command and shows it to MONITORs (server.c `call()`): after it ran,
/// except EVAL/EVALSHA, shown before the commands of their script.
pub(crate) fn call(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let tracked = c.meta.tracking.flags() & crate::tracking::ON != 0;
    if !shared.monitors.active() && !tracked {
        return dispatch(shared, c, spec, args, now);
    }
    let script = matches!(
        spec.cmd,
        Cmd::Eval | Cmd::EvalSha | Cmd::EvalRo | Cmd::EvalShaRo | Cmd::FCall | Cmd::FCallRo
    );
    let monitors = shared.monitors.active();
    if script && monitors {
        client::feed_monitors(shared, c, spec, args);
    }
    if script {
        c.script_read = false;
    }
    let read = tracked && !script && spec.flags & cmdtable::READONLY != 0;
    if read {
        // Registered before the read too, so a write racing it on another thread
        // invalidates this client (see `Tracking::remember_before`).
        remember_keys(shared, c, spec, args, true);
    }
    dispatch(shared, c, spec, args, now);
    if !script && monitors {
        client::feed_monitors(shared, c, spec, args);
    }
    // CLIENT TRACKING remembers what a read-only command read; a script's declared keys
    // once it has called a read-only command (its own READONLY flag does not count).
    if read || (tracked && script && c.script_read) {
        remember_keys(shared, c, spec, args, false);
        crate::tracking::clear_fresh();
    }
}

/// The keys of `args` (the command's key specs), remembered for the client's tracking.
#[cold]
fn remember_keys(
    shared: &Shared,
    c: &Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
    before: bool,
) {
    if spec.flags & cmdtable::PUBSUB != 0 {
        return;
    }
    let Some(rc) = cmdtable::redis_command(spec.name.as_bytes()) else {
        return;
    };
    let list: Vec<&[u8]> = args.iter().collect();
    if let Ok(keys) = cmdtable::get_keys(rc, &list) {
        let keys = keys.iter().map(|k| list[k.pos]);
        if before {
            shared.tracking.remember_before(&c.meta, c.tenant, keys);
        } else {
            shared.tracking.remember(&c.meta, c.tenant, keys);
        }
    }
}

/// Runs a checked command. The caller holds the [gate](crate::gate), shared or (EXEC,
/// scripts) exclusively.
fn dispatch(shared: &Shared, c: &mut Client, spec: &'static CommandSpec, args: Args<'_>, now: u64) {
    match spec.cmd {
        Cmd::Get => strings::get_command(shared, c, args, now),
        Cmd::Set => strings::set_command(shared, c, args, now),
        Cmd::SetNx => strings::setnx_command(shared, c, args, now),
        Cmd::SetEx | Cmd::PSetEx => strings::setex_command(shared, c, spec, args, now),
        Cmd::GetSet => strings::getset_command(shared, c, args, now),
        Cmd::GetDel => strings::getdel_command(shared, c, args, now),
        Cmd::GetEx => strings::getex_command(shared, c, args, now),
        Cmd::MGet => strings::mget_command(shared, c, args, now),
        Cmd::MSet | Cmd::MSetNx => strings::mset_command(shared, c, spec, args, now),
        Cmd::Del | Cmd::Unlink | Cmd::Exists | Cmd::Touch => {
            keyspace::del_command(shared, c, spec, args, now)
        }
        Cmd::Expire | Cmd::PExpire | Cmd::ExpireAt | Cmd::PExpireAt => {
            expire::expire_command(shared, c, spec, args, now)
        }
        Cmd::Ttl | Cmd::PTtl => expire::ttl_command(shared, c, spec, args, now),
        Cmd::Persist => expire::persist_command(shared, c, args, now),
        Cmd::Type => keyspace::type_command(shared, c, args, now),
        Cmd::Incr => strings::incr_by(shared, c, args.get(1), 1, now),
        Cmd::Decr => strings::incr_by(shared, c, args.get(1), -1, now),
        Cmd::IncrBy => strings::incrby_command(shared, c, args, now),
        Cmd::DecrBy => strings::decrby_command(shared, c, args, now),
        Cmd::IncrByFloat => strings::incr_by_float(shared, c, args, now),
        Cmd::Append => strings::append_command(shared, c, args, now),
        Cmd::StrLen => strings::strlen_command(shared, c, args, now),
        Cmd::GetRange => strings::getrange_command(shared, c, args, now),
        Cmd::SetRange => strings::setrange_command(shared, c, args, now),
        Cmd::PfAdd => hll::pfadd_command(shared, c, args, now),
        Cmd::PfCount => hll::pfcount_command(shared, c, args, now),
        Cmd::PfMerge => hll::pfmerge_command(shared, c, args, now),
        Cmd::PfDebug => hll::pfdebug_command(shared, c, args, now),
        Cmd::PfSelfTest => hll::pfselftest_command(shared, c),
        Cmd::Keys => keyspace::keys_command(shared, c, args, now),
        Cmd::Scan => scan::scan_command(shared, c, args, now),
        Cmd::RandomKey => keyspace::randomkey_command(shared, c, now),
        Cmd::DbSize => keyspace::dbsize_command(shared, c),
        Cmd::FlushDb | Cmd::FlushAll => keyspace::flush_command(shared, c, spec, args),
        Cmd::Acl => tenant::acl_command(shared, c, spec, args),
        Cmd::Tenant => tenant::tenant_command(shared, c, spec, args),
        Cmd::Ping => connection::ping_command(c, args),
        Cmd::Echo => connection::echo_command(c, args),
        Cmd::Hello => connection::hello_command(shared, c, args),
        Cmd::Auth => connection::auth_command(shared, c, args),
        Cmd::Quit => connection::quit_command(c),
        Cmd::Select => connection::select_command(shared, c, args),
        Cmd::Time => server::time_command(c),
        Cmd::Info => server::info_command(shared, c, args),
        Cmd::Config => server::config_command(shared, c, spec, args),
        Cmd::Command => server::command_command(c, spec, args),
        Cmd::Client => client::client_command(shared, c, spec, args),
        Cmd::Memory => keyspace::memory_command(shared, c, spec, args, now),
        Cmd::SlowLog => diagnostics::slowlog_command(shared, c, spec, args),
        Cmd::Latency => diagnostics::latency_command(shared, c, spec, args),
        Cmd::Object => keyspace::object_command(shared, c, spec, args, now),
        Cmd::Shutdown => server::shutdown_command(shared, c, args),
        Cmd::Multi => multi::multi_command(c),
        // Only reached from inside a transaction, where EXEC is never queued.
        Cmd::Exec => c.out.error("ERR EXEC without MULTI"),
        Cmd::Discard => multi::discard_command(shared, c),
        Cmd::Watch => multi::watch_command(shared, c, args, now),
        Cmd::Unwatch => multi::unwatch_command(shared, c),
        Cmd::Reset => connection::reset_command(shared, c),
        Cmd::Function => scripting::function_command(shared, c, spec, args),
        Cmd::HSet | Cmd::HMSet => hash::hset_command(shared, c, spec, args, now),
        Cmd::HSetNx => hash::hsetnx_command(shared, c, args, now),
        Cmd::HGet => hash::hget_command(shared, c, args, now),
        Cmd::HMGet => hash::hmget_command(shared, c, args, now),
        Cmd::HIncrBy => hash::hincrby_command(shared, c, args, now),
        Cmd::HIncrByFloat => hash::hincrbyfloat_command(shared, c, args, now),
        Cmd::HDel => hash::hdel_command(shared, c, args, now),
        Cmd::HLen | Cmd::HStrLen | Cmd::HExists => {
            hash::hash_int_command(shared, c, spec, args, now)
        }
        Cmd::HKeys | Cmd::HVals | Cmd::HGetAll => hash::hgetall_command(shared, c, spec, args, now),
        Cmd::HScan => scan::collection_scan_command(shared, c, args, augur_store::Kind::Hash, now),
        Cmd::HRandField => hash::hrandfield_command(shared, c, args, now),
        Cmd::SAdd => set::sadd_command(shared, c, args, now),
        Cmd::SRem => set::srem_command(shared, c, args, now),
        Cmd::SMove => set::smove_command(shared, c, args, now),
        Cmd::SIsMember | Cmd::SMIsMember | Cmd::SCard => {
            set::set_query_command(shared, c, spec, args, now)
        }
        Cmd::SMembers => set::smembers_command(shared, c, args, now),
        Cmd::SPop => set::spop_command(shared, c, args, now),
        Cmd::SRandMember => set::srandmember_command(shared, c, args, now),
        Cmd::SInter
        | Cmd::SInterCard
        | Cmd::SInterStore
        | Cmd::SUnion
        | Cmd::SUnionStore
        | Cmd::SDiff
        | Cmd::SDiffStore => set::setop_command(shared, c, spec, args, now),
        Cmd::SScan => scan::collection_scan_command(shared, c, args, augur_store::Kind::Set, now),
        Cmd::LPush | Cmd::RPush | Cmd::LPushX | Cmd::RPushX => {
            list::push_command(shared, c, spec, args, now)
        }
        Cmd::LInsert => list::linsert_command(shared, c, args, now),
        Cmd::Sort | Cmd::SortRo => sort::sort_command(shared, c, spec, args, now),
        Cmd::LLen | Cmd::LIndex => list::list_read_command(shared, c, spec, args, now),
        Cmd::LSet => list::lset_command(shared, c, args, now),
        Cmd::LRange => list::lrange_command(shared, c, args, now),
        Cmd::LTrim => list::ltrim_command(shared, c, args, now),
        Cmd::LPop | Cmd::RPop => list::pop_command(shared, c, spec, args, now),
        Cmd::LRem => list::lrem_command(shared, c, args, now),
        Cmd::LPos => list::lpos_command(shared, c, args, now),
        Cmd::LMove | Cmd::RPopLPush => list::lmove_command(shared, c, spec, args, now),
        Cmd::LMPop => list::lmpop_command(shared, c, args, now),
        Cmd::BLPop
        | Cmd::BRPop
        | Cmd::BLMove
        | Cmd::BRPopLPush
        | Cmd::BLMPop
        | Cmd::BZPopMin
        | Cmd::BZPopMax
        | Cmd::BZMPop => list::blocking_command(shared, c, spec, args, now),
        Cmd::ZAdd | Cmd::ZIncrBy => zset::zadd_command(shared, c, spec, args, now),
        Cmd::ZRem => zset::zrem_command(shared, c, args, now),
        Cmd::ZCard
        | Cmd::ZScore
        | Cmd::ZMScore
        | Cmd::ZRank
        | Cmd::ZRevRank
        | Cmd::ZCount
        | Cmd::ZLexCount => zset::zset_query_command(shared, c, spec, args, now),
        Cmd::ZRange
        | Cmd::ZRangeStore
        | Cmd::ZRevRange
        | Cmd::ZRangeByScore
        | Cmd::ZRevRangeByScore
        | Cmd::ZRangeByLex
        | Cmd::ZRevRangeByLex => zset::zrange_command(shared, c, spec, args, now),
        Cmd::ZRemRangeByRank | Cmd::ZRemRangeByScore | Cmd::ZRemRangeByLex => {
            zset::zremrange_command(shared, c, spec, args, now)
        }
        Cmd::ZPopMin | Cmd::ZPopMax => zset::zpop_command(shared, c, spec, args, now),
        Cmd::ZMPop => zset::zmpop_command(shared, c, args, now),
        Cmd::ZRandMember => zset::zrandmember_command(shared, c, args, now),
        Cmd::ZUnion
        | Cmd::ZInter
        | Cmd::ZDiff
        | Cmd::ZUnionStore
        | Cmd::ZInterStore
        | Cmd::ZDiffStore
        | Cmd::ZInterCard => zset::zsetop_command(shared, c, spec, args, now),
        Cmd::ZScan => scan::collection_scan_command(shared, c, args, augur_store::Kind::ZSet, now),
        Cmd::XAdd => stream::xadd_command(shared, c, args, now),
        Cmd::XTrim => stream::xtrim_command(shared, c, args, now),
        Cmd::XDel => stream::xdel_command(shared, c, args, now),
        Cmd::XLen => stream::xlen_command(shared, c, args, now),
        Cmd::XRange | Cmd::XRevRange => stream::xrange_command(shared, c, spec, args, now),
        Cmd::XRead | Cmd::XReadGroup => stream::xread_command(shared, c, spec, args, now),
        Cmd::XGroup => stream::xgroup_command(shared, c, spec, args, now),
        Cmd::XAck => stream::xack_command(shared, c, args, now),
        Cmd::XPending => stream::xpending_command(shared, c, args, now),
        Cmd::XClaim => stream::xclaim_command(shared, c, args, now),
        Cmd::XAutoClaim => stream::xautoclaim_command(shared, c, args, now),
        Cmd::XInfo => stream::xinfo_command(shared, c, spec, args, now),
        Cmd::XSetId => stream::xsetid_command(shared, c, args, now),
        Cmd::GeoAdd => geo::geoadd_command(shared, c, args, now),
        Cmd::GeoDist | Cmd::GeoHash | Cmd::GeoPos => {
            geo::geo_query_command(shared, c, spec, args, now)
        }
        Cmd::GeoRadius
        | Cmd::GeoRadiusRo
        | Cmd::GeoRadiusByMember
        | Cmd::GeoRadiusByMemberRo
        | Cmd::GeoSearch
        | Cmd::GeoSearchStore => geo::geosearch_command(shared, c, spec, args, now),
        Cmd::Subscribe => pubsub::subscribe_command(shared, c, PsKind::Channel, args),
        Cmd::PSubscribe => pubsub::subscribe_command(shared, c, PsKind::Pattern, args),
        Cmd::SSubscribe => pubsub::subscribe_command(shared, c, PsKind::Shard, args),
        Cmd::Unsubscribe => pubsub::unsubscribe_command(c, PsKind::Channel, args),
        Cmd::PUnsubscribe => pubsub::unsubscribe_command(c, PsKind::Pattern, args),
        Cmd::SUnsubscribe => pubsub::unsubscribe_command(c, PsKind::Shard, args),
        Cmd::Publish => pubsub::publish_command(shared, c, PsKind::Channel, args),
        Cmd::SPublish => pubsub::publish_command(shared, c, PsKind::Shard, args),
        Cmd::PubSub => pubsub::pubsub_command(shared, c, spec, args),
        Cmd::Rename | Cmd::RenameNx => keyspace::rename_command(shared, c, spec, args, now),
        Cmd::Copy => keyspace::copy_command(shared, c, args, now),
        Cmd::Move => keyspace::move_command(shared, c, args, now),
        Cmd::SwapDb => keyspace::swapdb_command(shared, c, args, now),
        Cmd::ExpireTime | Cmd::PExpireTime => expire::ttl_command(shared, c, spec, args, now),
        Cmd::SetBit => bits::setbit_command(shared, c, args, now),
        Cmd::GetBit => bits::getbit_command(shared, c, args, now),
        Cmd::BitCount => bits::bitcount_command(shared, c, args, now),
        Cmd::BitPos => bits::bitpos_command(shared, c, args, now),
        Cmd::BitOp => bits::bitop_command(shared, c, args, now),
        Cmd::BitField | Cmd::BitFieldRo => bits::bitfield_command(shared, c, spec, args, now),
        Cmd::Lcs => strings::lcs_command(shared, c, args, now),
        Cmd::Dump => dump::dump_command(shared, c, args, now),
        Cmd::Restore => dump::restore_command(shared, c, args, now),
        Cmd::FCall | Cmd::FCallRo => eval::fcall_command(shared, c, spec, args, now),
        Cmd::Eval | Cmd::EvalSha | Cmd::EvalRo | Cmd::EvalShaRo => {
            eval::eval_command(shared, c, spec, args, now)
        }
        Cmd::Script => eval::script_command(shared, c, spec, args),
        // cluster.c's clusterCommand with cluster-enabled no.
        Cmd::Cluster => {
            if subcommand(&mut c.out, spec, args).is_some() {
                c.out
                    .error("ERR This instance has cluster support disabled")
            }
        }
        Cmd::Monitor => client::monitor_command(shared, c),
    }
}

#[inline]
fn eq(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

fn arity_error(out: &mut Out, name: &str) {
    out.error(&format!(
        "ERR wrong number of arguments for '{name}' command"
    ));
}

fn write_error(out: &mut Out, e: WriteError) {
    match e {
        WriteError::OutOfMemory => out.error(ERR_OOM),
        WriteError::TooLarge => out.error(ERR_TOO_BIG),
        WriteError::WrongType => out.error(ERR_WRONGTYPE),
    }
}

/// Like C's `%s`: a client string stops at its first NUL byte.
fn c_str(b: &[u8]) -> &[u8] {
    match memchr::memchr(0, b) {
        Some(i) => &b[..i],
        None => b,
    }
}

/// Redis 7's exact unknown-command error: the name (at most 128 bytes), then arguments in
/// quotes, each followed by a space, while the list is shorter than 128 bytes.
fn unknown_command(out: &mut Out, args: Args<'_>) {
    let name = c_str(args.get(0));
    let name = &name[..name.len().min(128)];
    let mut list: Vec<u8> = Vec::new();
    for a in args.iter().skip(1) {
        if list.len() >= 128 {
            break;
        }
        let a = c_str(a);
        let room = 128 - list.len();
        list.push(b'\'');
        list.extend_from_slice(&a[..a.len().min(room)]);
        list.extend_from_slice(b"' ");
    }
    out.error(&format!(
        "ERR unknown command '{}', with args beginning with: {}",
        lossy(name),
        lossy(&list)
    ));
}

fn unknown_subcommand(out: &mut Out, args: Args<'_>) {
    let sub = c_str(args.get(1));
    out.error(&format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        lossy(&sub[..sub.len().min(128)]),
        lossy(args.get(0)).to_uppercase()
    ));
}

/// Redis's addReplySubcommandSyntaxError: a container's subcommand with arguments its
/// implementation does not take.
fn subcommand_syntax_error(out: &mut Out, args: Args<'_>) {
    let sub = c_str(args.get(1));
    out.error(&format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        lossy(&sub[..sub.len().min(128)]),
        lossy(args.get(0)).to_uppercase()
    ));
}

/// Resolves a container command's subcommand and checks its arity; replies and returns
/// None on error.
fn subcommand(out: &mut Out, spec: &'static CommandSpec, args: Args<'_>) -> Option<&'static str> {
    match spec.sub(args.get(1)) {
        None => {
            unknown_subcommand(out, args);
            None
        }
        Some(sub) if !cmdtable::arity_ok(sub.arity, args.len()) => {
            arity_error(out, sub.name);
            None
        }
        Some(sub) => Some(sub.short()),
    }
}

fn help_reply(out: &mut Out, container: &str, lines: &[&str]) {
    out.array(lines.len() + 3);
    out.simple(&format!(
        "{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ));
    for l in lines {
        out.simple(l);
    }
    out.simple("HELP");
    out.simple("    Prints this help.");
}
