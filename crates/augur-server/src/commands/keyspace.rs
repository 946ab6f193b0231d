//! Keyspace commands: DEL, UNLINK, EXISTS, TOUCH, TYPE, KEYS, SCAN, RANDOMKEY, DBSIZE,
//! FLUSHDB, FLUSHALL, MEMORY and OBJECT. Mirrors Redis's db.c (MEMORY and OBJECT: object.c).

use super::{eq, help_reply, subcommand, Client, ERR_NOT_INT, ERR_SYNTAX};
use crate::cmdtable::{Cmd, CommandSpec};
use crate::resp::{parse_i64, Args};
use crate::state::Shared;

/// DEL, UNLINK, EXISTS and TOUCH: the number of the given keys each one hits.
pub(super) fn del_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let mut n = 0;
    for k in args.iter().skip(1) {
        let mut shard = shared.store.lock_key(k);
        let hit = match spec.cmd {
            Cmd::Exists => shard.exists(c.ns(), k, now),
            Cmd::Touch => shard.touch(c.ns(), k, now),
            _ => shard.delete(c.ns(), k, now),
        };
        n += hit as i64;
    }
    c.out.int(n);
}

pub(super) fn type_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    match shared.store.lock_key(key).kind(c.ns(), key, now) {
        Some(kind) => c.out.simple(kind.name()),
        None => c.out.simple("none"),
    }
}

pub(super) fn keys_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let keys = shared.store.keys(c.ns(), args.get(1), now);
    c.out.array(keys.len());
    for k in &keys {
        c.out.bulk(k);
    }
}

pub(super) fn scan_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let cursor = match std::str::from_utf8(args.get(1))
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        Some(v) => v,
        None => return c.out.error("ERR invalid cursor"),
    };
    let mut count = 10usize;
    let mut pattern: Option<&[u8]> = None;
    let mut type_filter: Option<&[u8]> = None;
    let mut i = 2;
    while i < args.len() {
        let opt = args.get(i);
        let has_value = i + 1 < args.len();
        if eq(opt, "count") && has_value {
            match parse_i64(args.get(i + 1)) {
                None => return c.out.error(ERR_NOT_INT),
                Some(n) if n < 1 => return c.out.error(ERR_SYNTAX),
                Some(n) => count = n.min(1 << 20) as usize,
            }
        } else if eq(opt, "match") && has_value {
            let p = args.get(i + 1);
            // "*" matches everything: skip the per-key matching.
            pattern = if p == b"*" { None } else { Some(p) };
        } else if eq(opt, "type") && has_value {
            type_filter = Some(args.get(i + 1));
        } else {
            return c.out.error(ERR_SYNTAX);
        }
        i += 2;
    }
    let mut page = shared.store.scan(c.ns(), cursor, count, pattern, now);
    if let Some(t) = type_filter {
        // As Redis (db.c scanGenericCommand), filtered after the page is collected; a
        // type name Redis does not know matches nothing.
        page.keys.retain(|k| {
            shared
                .store
                .lock_key(k)
                .kind(c.ns(), k, now)
                .is_some_and(|kind| eq(t, kind.name()))
        });
    }
    c.out.array(2);
    c.out.bulk(page.next_cursor.to_string().as_bytes());
    c.out.array(page.keys.len());
    for k in &page.keys {
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

/// FLUSHDB and FLUSHALL (ASYNC and SYNC are accepted; both flush at once).
pub(super) fn flush_command(shared: &Shared, c: &mut Client, spec: &CommandSpec, args: Args<'_>) {
    if args.len() > 2 || (args.len() == 2 && !eq(args.get(1), "async") && !eq(args.get(1), "sync"))
    {
        return c.out.error(ERR_SYNTAX);
    }
    if spec.cmd == Cmd::FlushDb {
        shared.store.flushdb(c.ns())
    } else {
        shared.store.flushall(c.tenant)
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
        _ => help_reply(&mut c.out, "MEMORY", &["USAGE <key> [SAMPLES <count>]"]),
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
    let Some(info) = shard.info(c.ns(), key, now) else {
        return c.out.null();
    };
    match sub {
        "encoding" => {
            if let Some(enc) = info.encoding {
                return c.out.bulk(enc.as_bytes());
            }
            let v = shard.peek(c.ns(), key, now).ok().flatten().unwrap_or(b"");
            let enc = if v.len() <= 20 && parse_i64(v).is_some() {
                "int"
            } else if v.len() <= 44 {
                "embstr"
            } else {
                "raw"
            };
            c.out.bulk(enc.as_bytes());
        }
        "refcount" => c.out.int(1),
        // Augur's recency clock is logical (accesses of the shard), not seconds: the
        // number reported is the key's idle age in accesses.
        "idletime" => c.out.int(info.idle_accesses as i64),
        _ => c.out.error(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ),
    }
}
