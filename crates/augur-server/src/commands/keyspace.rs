//! Keyspace commands: DEL, UNLINK, EXISTS, TOUCH, TYPE, KEYS, SCAN, RANDOMKEY, DBSIZE,
//! FLUSHDB, FLUSHALL, RENAME, RENAMENX, MOVE, COPY, MEMORY and OBJECT. Mirrors Redis's
//! db.c (MEMORY and OBJECT: object.c).

use super::{eq, help_reply, subcommand, write_error, Client, ERR_NOT_INT, ERR_SYNTAX};
use crate::cmdtable::{Cmd, CommandSpec};
use crate::notify::flags::{GENERIC, KEY_MISS};
use crate::notify::{notify, notify_db};
use crate::resp::{parse_i64, Args};
use crate::state::Shared;
use augur_store::{Relocated, Relocation};
use std::sync::atomic::Ordering;

const ERR_SAME_OBJECT: &str = "ERR source and destination objects are the same";
const ERR_DB_RANGE: &str = "ERR DB index is out of range";

/// RENAME and RENAMENX: the whole entry (value of any type, TTL) moves to the new name,
/// atomically even when the two names live in different shards (both are locked).
pub(super) fn rename_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let (key, newkey) = (args.get(1), args.get(2));
    let nx = spec.cmd == Cmd::RenameNx;
    let ns = c.ns();
    if key == newkey {
        // Nothing to do, but a missing key is still an error.
        if !shared.store.lock_key(key).exists(ns, key, now) {
            return c.out.error("ERR no such key");
        }
        return if nx { c.out.int(0) } else { c.out.ok() };
    }
    let how = if nx {
        Relocation::RenameNx
    } else {
        Relocation::Rename
    };
    let mut lock = shared.store.lock_keys(&[key, newkey]);
    let (src, dst) = lock.pair(key, newkey);
    let r = src.relocate(dst, ns, key, ns, newkey, how, now);
    if let Ok(Relocated::Done) = r {
        notify(shared, c, GENERIC, "rename_from", key);
        notify(shared, c, GENERIC, "rename_to", newkey);
        shared.blocking.signal(c.tenant, c.db, newkey);
    }
    match r {
        Ok(Relocated::Done) if nx => c.out.int(1),
        Ok(Relocated::Done) => c.out.ok(),
        Ok(Relocated::SourceMissing) => c.out.error("ERR no such key"),
        Ok(Relocated::DestinationExists) => c.out.int(0),
        Err(e) => write_error(&mut c.out, e),
    }
}

/// A database number argument (getIntFromObjectOrReply, then selectDb's range check);
/// replies and returns None on error.
fn db_arg(shared: &Shared, c: &mut Client, arg: &[u8]) -> Option<u8> {
    match parse_i64(arg) {
        Some(n) if (i32::MIN as i64..=i32::MAX as i64).contains(&n) => {
            if n < 0 || n as usize >= shared.store.databases() {
                c.out.error(ERR_DB_RANGE);
                None
            } else {
                Some(n as u8)
            }
        }
        _ => {
            c.out.error(ERR_NOT_INT);
            None
        }
    }
}

/// MOVE key db: to another database of the caller's tenant; 0 when the key is missing
/// or already exists there.
pub(super) fn move_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let Some(db) = db_arg(shared, c, args.get(2)) else {
        return;
    };
    if db == c.db {
        return c.out.error(ERR_SAME_OBJECT);
    }
    let key = args.get(1);
    let to = c.ns_of(db);
    let mut shard = shared.store.lock_key(key);
    match shard.relocate(None, c.ns(), key, to, key, Relocation::RenameNx, now) {
        Ok(Relocated::Done) => {
            notify(shared, c, GENERIC, "move_from", key);
            notify_db(shared, c, db, GENERIC, "move_to", key);
            shared.blocking.signal(c.tenant, db, key);
            c.out.int(1)
        }
        Ok(_) => c.out.int(0),
        Err(e) => write_error(&mut c.out, e),
    }
}

/// SWAPDB index1 index2 (db.c swapdbCommand): the two databases of the caller's tenant
/// exchange contents, for every connection of the tenant at once; connections stay on
/// the database numbers they selected. O(1) in the keys (see `Store::swap_dbs`: a map
/// exchange plus the two databases' WATCHes). The caller holds the gate exclusively.
pub(super) fn swapdb_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let parse = |a: &[u8]| parse_i64(a).filter(|n| (i32::MIN as i64..=i32::MAX as i64).contains(n));
    let Some(a) = parse(args.get(1)) else {
        return c.out.error("ERR invalid first DB index");
    };
    let Some(b) = parse(args.get(2)) else {
        return c.out.error("ERR invalid second DB index");
    };
    let dbs = shared.store.databases() as i64;
    if !(0..dbs).contains(&a) || !(0..dbs).contains(&b) {
        return c.out.error(ERR_DB_RANGE);
    }
    shared.store.swap_dbs(c.tenant, a as u8, b as u8, now);
    // Clients blocked in either database may now find their keys (swapdb's
    // scanDatabaseForReadyKeys).
    shared.blocking.signal_db(c.tenant, a as u8);
    shared.blocking.signal_db(c.tenant, b as u8);
    c.out.ok();
}

/// COPY source destination [DB db] [REPLACE]: an independent copy of the entry (value
/// and TTL) in the caller's tenant.
pub(super) fn copy_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let mut db = c.db;
    let mut replace = false;
    let mut j = 3;
    while j < args.len() {
        let opt = args.get(j);
        if eq(opt, "replace") {
            replace = true;
        } else if eq(opt, "db") && j + 1 < args.len() {
            let Some(d) = db_arg(shared, c, args.get(j + 1)) else {
                return;
            };
            db = d;
            j += 1;
        } else {
            return c.out.error(ERR_SYNTAX);
        }
        j += 1;
    }
    let (key, newkey) = (args.get(1), args.get(2));
    if db == c.db && key == newkey {
        return c.out.error(ERR_SAME_OBJECT);
    }
    let to = c.ns_of(db);
    let mut lock = shared.store.lock_keys(&[key, newkey]);
    let (src, dst) = lock.pair(key, newkey);
    match src.relocate(
        dst,
        c.ns(),
        key,
        to,
        newkey,
        Relocation::Copy { replace },
        now,
    ) {
        Ok(Relocated::Done) => {
            notify_db(shared, c, db, GENERIC, "copy_to", newkey);
            shared.blocking.signal(c.tenant, db, newkey);
            c.out.int(1)
        }
        Ok(_) => c.out.int(0),
        Err(e) => write_error(&mut c.out, e),
    }
}

/// DEL, UNLINK, EXISTS and TOUCH: the number of the given keys each one hits.
pub(super) fn del_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let mut n = 0;
    // UNLINK, and DEL under `lazyfree-lazy-user-del`, free large values in the
    // background (augur_store::lazyfree).
    let lazy = spec.cmd == Cmd::Unlink
        || (spec.cmd == Cmd::Del && shared.lazy_user_del.load(Ordering::Relaxed));
    for k in args.iter().skip(1) {
        let mut shard = shared.store.lock_key(k);
        let hit = match spec.cmd {
            Cmd::Exists => shard.exists(c.ns(), k, now),
            Cmd::Touch => shard.touch(c.ns(), k, now),
            _ if lazy => shard.unlink(c.ns(), k, now),
            _ => shard.delete(c.ns(), k, now),
        };
        if hit && matches!(spec.cmd, Cmd::Del | Cmd::Unlink) {
            notify(shared, c, GENERIC, "del", k);
        } else if !hit && spec.cmd == Cmd::Exists {
            // EXISTS looks keys up for reading (db.c lookupKeyReadWithFlags).
            notify(shared, c, KEY_MISS, "keymiss", k);
        }
        n += hit as i64;
    }
    c.out.int(n);
}

pub(super) fn type_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    match shared.store.lock_key(key).kind(c.ns(), key, now) {
        Some(kind) => c.out.simple(kind.name()),
        None => {
            notify(shared, c, KEY_MISS, "keymiss", key);
            c.out.simple("none")
        }
    }
}

pub(super) fn keys_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let keys = shared.store.keys(c.ns(), args.get(1), now);
    c.out.array(keys.len());
    for k in &keys {
        c.out.bulk(k);
    }
}

pub(super) fn randomkey_command(shared: &Shared, c: &mut Client, now: u64) {
    match shared.store.random_key(c.ns(), now) {
        Some(k) => c.out.bulk(&k),
        None => c.out.null(),
    }
}

pub(super) fn dbsize_command(shared: &Shared, c: &mut Client) {
    c.out.int(shared.store.dbsize(c.ns()) as i64)
}

/// FLUSHDB and FLUSHALL [ASYNC|SYNC]: the keys are gone when it replies either way;
/// ASYNC (or no argument under `lazyfree-lazy-user-flush`) frees the large values on
/// the background thread (augur_store::lazyfree) instead of before the reply.
pub(super) fn flush_command(shared: &Shared, c: &mut Client, spec: &CommandSpec, args: Args<'_>) {
    if args.len() > 2 || (args.len() == 2 && !eq(args.get(1), "async") && !eq(args.get(1), "sync"))
    {
        return c.out.error(ERR_SYNTAX);
    }
    let lazy = if args.len() == 2 {
        eq(args.get(1), "async")
    } else {
        shared.lazy_user_flush.load(Ordering::Relaxed)
    };
    // CLIENT TRACKING: one null invalidation ("everything") instead of one per key.
    crate::tracking::flushing(|| match (spec.cmd == Cmd::FlushDb, lazy) {
        (true, false) => shared.store.flushdb(c.ns()),
        (true, true) => shared.store.flushdb_lazily(c.ns()),
        (false, false) => shared.store.flushall(c.tenant),
        (false, true) => shared.store.flushall_lazily(c.tenant),
    });
    if shared.tracking.in_use() {
        shared.tracking.flushed(c.tenant);
    }
    c.out.ok();
}

pub(super) fn memory_command(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let Some(sub) = subcommand(&mut c.out, spec, args) else {
        return;
    };
    match sub {
        "usage" => {
            // Only `SAMPLES <count>` may follow (and is irrelevant for strings).
            if args.len() != 3 && !(args.len() == 5 && eq(args.get(3), "samples")) {
                return c.out.error(ERR_SYNTAX);
            }
            if args.len() == 5 && parse_i64(args.get(4)).is_none() {
                return c.out.error(ERR_NOT_INT);
            }
            let key = args.get(2);
            match shared.store.lock_key(key).info(c.ns(), key, now) {
                Some(info) => c.out.int(info.memory_bytes as i64),
                None => c.out.null(),
            }
        }
        // Their arity (no argument) is checked with the subcommand.
        "malloc-stats" => {
            c.out.bulk(crate::memstats::malloc_stats().as_bytes());
        }
        "purge" => {
            augur_store::defrag::purge_dirty_pages();
            c.out.ok();
        }
        "doctor" => {
            let report = crate::memstats::MemStats::now(shared).doctor_report();
            c.out.verbatim(report.as_bytes());
        }
        "stats" => {
            let keys = shared
                .store
                .stats(c.tenant)
                .keys_per_db
                .iter()
                .map(|k| k.0)
                .sum();
            crate::memstats::MemStats::now(shared).write_memory_stats(&mut c.out, keys);
        }
        _ => help_reply(
            &mut c.out,
            "MEMORY",
            &[
                "USAGE <key> [SAMPLES <count>]",
                "    Return memory in bytes used by <key> and its value.",
                "MALLOC-STATS",
                "    Return internal statistics report from the memory allocator.",
                "DOCTOR",
                "    Return memory problems reports.",
                "STATS",
                "    Return information about the memory usage of the server.",
                "PURGE",
                "    Attempt to purge dirty pages for reclamation by the allocator.",
            ],
        ),
    }
}

pub(super) fn object_command(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let Some(sub) = subcommand(&mut c.out, spec, args) else {
        return;
    };
    if sub == "help" {
        return help_reply(
            &mut c.out,
            "OBJECT",
            &[
                "ENCODING <key>",
                "FREQ <key>",
                "IDLETIME <key>",
                "REFCOUNT <key>",
            ],
        );
    }
    let key = args.get(2);
    let mut shard = shared.store.lock_key(key);
    let Some(info) = shard.object_info(c.ns(), key, now) else {
        return c.out.null();
    };
    match sub {
        "encoding" => {
            // A hash or set reports its own encoding; a string Redis's int/embstr/raw.
            if let Some(enc) = shard.info(c.ns(), key, now).and_then(|i| i.encoding) {
                return c.out.bulk(enc.as_bytes());
            }
            let v = shard.peek(c.ns(), key, now).ok().flatten().unwrap_or(b"");
            c.out.bulk(string_encoding(v, info.raw).as_bytes());
        }
        "refcount" => c.out.int(1),
        // Wall-clock seconds, as Redis; eviction itself ranks keys by logical time.
        // Under an LFU policy too (Redis answers an error there: its LFU keeps no access
        // time; Augur's LFU word keeps the last access's clock, see augur_store's lfu).
        "idletime" => c.out.int(info.idle_secs as i64),
        // The counter decayed to now (Redis's LFUDecrAndReturn), without touching it.
        _ if info.freq.is_some() => c.out.int(info.freq.unwrap_or(0) as i64),
        _ => c.out.error(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ),
    }
}

/// Redis's encoding of a string value (object.c): a value written by an in-place
/// update (APPEND, SETRANGE, SETBIT, BITFIELD, BITOP) stays `raw`; otherwise
/// tryObjectEncoding's choice: `int` for a canonical integer that fits 64 bits, `embstr`
/// up to 44 bytes, `raw` beyond.
pub(super) fn string_encoding(v: &[u8], raw: bool) -> &'static str {
    if raw {
        "raw"
    } else if v.len() <= 20 && parse_i64(v).is_some() {
        "int"
    } else if v.len() <= 44 {
        "embstr"
    } else {
        "raw"
    }
}
