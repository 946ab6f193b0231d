//! Stream commands: XADD XTRIM XDEL XLEN XRANGE XREVRANGE XREAD XREADGROUP (both with
//! BLOCK, through `list`'s blocking service) XGROUP (CREATE SETID DESTROY CREATECONSUMER
//! DELCONSUMER HELP) XACK XPENDING XCLAIM XAUTOCLAIM XINFO (STREAM [FULL] GROUPS
//! CONSUMERS HELP) XSETID. Mirrors Redis 7.0's t_stream.c: the argument order (options
//! parsed before the key is looked up where Redis does so), the ID grammar
//! (`streamGenericParseIDOrReply`, with string2ull's strtoull fallback), error texts,
//! keyspace events and reply shapes (XREAD's keys as a map in RESP3).
//!
//! A stream is one object in the store (`augur_store::stream::Stream`); its entries,
//! trimming, groups and PELs are there. Replies are written after the shard lock is
//! released, from owned copies.

use super::list::Target;
use super::{eq, Client, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use crate::blocking::{BlockOp, Waiter};
use crate::cmdtable::{Cmd, CommandSpec};
use crate::notify::flags::STREAM;
use crate::resp::{parse_i64, Args, Out};
use crate::state::Shared;
use augur_store::stream::{
    AddId, AddIdError, Group, OwnedEntry, Stream, StreamId, Trim, INVALID_ENTRIES_READ,
    LISTPACK_MAX_SIZE,
};
use augur_store::{Kind, Ns, Object};

const ERR_INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";
const ERR_NO_SUCH_KEY: &str = "ERR no such key";

fn stream(o: &Object) -> &Stream {
    o.as_stream().expect("Kind::Stream lookups return streams")
}

fn stream_mut(o: &mut Object) -> &mut Stream {
    o.as_stream_mut()
        .expect("Kind::Stream lookups return streams")
}

// ----- IDs -----

/// util.c's string2ull: a canonical non-negative integer, else strtoull's reading
/// (leading spaces, a sign, decimal digits to the end; a minus negates modulo 2^64).
fn string2ull(s: &[u8]) -> Option<u64> {
    if let Some(v) = augur_store::parse_canonical_i64(s) {
        return (v >= 0).then_some(v as u64);
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// streamGenericParseIDOrReply: `-`, `+` (unless `strict`), `<ms>`, `<ms>-<seq>` and,
/// with `seq_star`, `<ms>-*`. Returns the ID and whether the sequence was given.
fn parse_id_full(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    seq_star: bool,
) -> Option<(StreamId, bool)> {
    if arg.len() > 127 {
        return None;
    }
    // The C code works on a NUL-terminated copy.
    let buf = match arg.iter().position(|&b| b == 0) {
        Some(n) => &arg[..n],
        None => arg,
    };
    if strict && (buf == b"-" || buf == b"+") {
        return None;
    }
    if buf == b"-" {
        return Some((StreamId::MIN, true));
    }
    if buf == b"+" {
        return Some((StreamId::MAX, true));
    }
    match buf.iter().position(|&b| b == b'-') {
        Some(dash) => {
            let ms = string2ull(&buf[..dash])?;
            let rest = &buf[dash + 1..];
            if seq_star && rest == b"*" {
                Some((StreamId::new(ms, 0), false))
            } else {
                Some((StreamId::new(ms, string2ull(rest)?), true))
            }
        }
        None => Some((StreamId::new(string2ull(buf)?, missing_seq), true)),
    }
}

/// streamParseIDOrReply.
fn parse_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, &'static str> {
    parse_id_full(arg, missing_seq, false, false)
        .map(|(id, _)| id)
        .ok_or(ERR_INVALID_ID)
}

/// streamParseStrictIDOrReply (no `-` / `+`).
fn parse_strict_id(arg: &[u8]) -> Result<StreamId, &'static str> {
    parse_id_full(arg, 0, true, false)
        .map(|(id, _)| id)
        .ok_or(ERR_INVALID_ID)
}

/// streamParseIntervalIDOrReply plus the exclusive bound's step: a range's start (`end`
/// false) or end, `(` making it exclusive.
fn parse_bound(arg: &[u8], end: bool) -> Result<StreamId, &'static str> {
    let missing_seq = if end { u64::MAX } else { 0 };
    if arg.len() > 1 && arg[0] == b'(' {
        let id = parse_id_full(&arg[1..], missing_seq, true, false)
            .map(|(id, _)| id)
            .ok_or(ERR_INVALID_ID)?;
        if end {
            id.prev().ok_or("ERR invalid end ID for the interval")
        } else {
            id.next().ok_or("ERR invalid start ID for the interval")
        }
    } else {
        parse_id(arg, missing_seq)
    }
}

// ----- replies -----

fn reply_id(out: &mut Out, id: StreamId) {
    out.bulk(&id.to_bytes());
}

/// One entry: [id, [field, value, ...]].
fn reply_entry(out: &mut Out, (id, pairs): &OwnedEntry) {
    out.array(2);
    reply_id(out, *id);
    out.array(pairs.len() * 2);
    for (f, v) in pairs {
        out.bulk(f);
        out.bulk(v);
    }
}

/// Entries straight from the stream (under its shard lock: no copies).
fn reply_borrowed(out: &mut Out, entries: &[augur_store::stream::StreamEntry<'_>]) {
    out.array(entries.len());
    for e in entries {
        out.array(2);
        reply_id(out, e.id);
        out.array(e.pairs.len() * 2);
        for (f, v) in &e.pairs {
            out.bulk(f);
            out.bulk(v);
        }
    }
}

fn reply_entries(out: &mut Out, entries: &[OwnedEntry]) {
    out.array(entries.len());
    for e in entries {
        reply_entry(out, e);
    }
}

/// A map in RESP3, a flat array of pairs in RESP2 (addReplyMapLen).
fn map_len(out: &mut Out, pairs: usize) {
    if out.resp3 {
        out.map(pairs);
    } else {
        out.array(pairs * 2);
    }
}

// ----- XADD / XTRIM -----

/// streamAddTrimArgs.
struct AddTrim {
    trim: Option<Trim>,
    approx: bool,
    limit: u64,
    nomkstream: bool,
    id: Option<AddId>,
    /// The argument after the options (XADD: the ID's position).
    next: usize,
}

/// streamParseAddOrTrimArgsOrReply.
fn parse_add_trim(args: Args<'_>, xadd: bool, node_max_entries: usize) -> Result<AddTrim, String> {
    let mut p = AddTrim {
        trim: None,
        approx: false,
        limit: 0,
        nomkstream: false,
        id: None,
        next: 2,
    };
    let mut limit_given = false;
    let mut i = 2;
    let argc = args.len();
    while i < argc {
        let more = argc - 1 - i;
        let opt = args.get(i);
        if xadd && opt == b"*" {
            p.id = Some(AddId::Auto);
            break;
        } else if (eq(opt, "maxlen") || eq(opt, "minid")) && more > 0 {
            if p.trim.is_some() {
                return Err("ERR syntax error, MAXLEN and MINID options at the same time are not compatible".into());
            }
            let maxlen = eq(opt, "maxlen");
            p.approx = false;
            let next = args.get(i + 1);
            if more >= 2 && next == b"~" {
                p.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let v = args.get(i + 1);
            if maxlen {
                let n = parse_i64(v).ok_or(ERR_NOT_INT)?;
                if n < 0 {
                    return Err("ERR The MAXLEN argument must be >= 0.".into());
                }
                p.trim = Some(Trim::MaxLen(n as u64));
            } else {
                p.trim = Some(Trim::MinId(parse_strict_id(v)?));
            }
            i += 1;
        } else if eq(opt, "limit") && more > 0 {
            let n = parse_i64(args.get(i + 1)).ok_or(ERR_NOT_INT)?;
            if n < 0 {
                return Err("ERR The LIMIT argument must be >= 0.".into());
            }
            p.limit = n as u64;
            limit_given = true;
            i += 1;
        } else if xadd && eq(opt, "nomkstream") {
            p.nomkstream = true;
        } else if xadd {
            let (id, seq_given) = parse_id_full(opt, 0, true, true).ok_or(ERR_INVALID_ID)?;
            p.id = Some(if seq_given {
                AddId::Explicit(id)
            } else {
                AddId::AutoSeq(id.ms)
            });
            break;
        } else {
            break;
        }
        i += 1;
    }
    p.next = i;
    if !xadd && i < argc {
        return Err(ERR_SYNTAX.into());
    }
    if p.limit != 0 && p.trim.is_none() {
        return Err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy".into(),
        );
    }
    if !xadd && p.trim.is_none() {
        return Err("ERR syntax error, XTRIM must be called with a trimming strategy".into());
    }
    if limit_given {
        if !p.approx {
            return Err(
                "ERR syntax error, LIMIT cannot be used without the special ~ option".into(),
            );
        }
    } else if p.approx {
        p.limit = (100 * node_max_entries as u64).min(i64::MAX as u64);
        if p.limit == 0 {
            p.limit = 10_000;
        }
    } else {
        p.limit = 0;
    }
    Ok(p)
}

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value ...
pub(super) fn xadd_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let lim = shared.store.encoding_limits().stream_node;
    let p = match parse_add_trim(args, true, lim.max_entries) {
        Ok(p) => p,
        Err(e) => return c.out.error(&e),
    };
    let field_pos = p.next + 1;
    let n = args.len().saturating_sub(field_pos);
    if p.next >= args.len() || n < 2 || n % 2 == 1 {
        return c
            .out
            .error("ERR wrong number of arguments for 'xadd' command");
    }
    let spec = p.id.unwrap_or(AddId::Auto);
    if spec == AddId::Explicit(StreamId::MIN) {
        return c
            .out
            .error("ERR The ID specified in XADD must be greater than 0-0");
    }
    let pairs: Vec<(&[u8], &[u8])> = (field_pos..args.len())
        .step_by(2)
        .map(|i| (args.get(i), args.get(i + 1)))
        .collect();
    let total: usize = pairs.iter().map(|(f, v)| f.len() + v.len()).sum();
    let key = args.get(1);
    let t = Target::of(c);
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(t.ns, key, Kind::Stream, !p.nomkstream, now, |o| {
        let s = stream_mut(o);
        let id = match s.next_add_id(spec, now) {
            Ok(id) => id,
            Err(AddIdError::Exhausted) => return (Err("ERR The stream has exhausted the last possible ID, unable to add more items"), false),
            Err(AddIdError::TooSmall) => return (Err("ERR The ID specified in XADD is equal or smaller than the target stream top item"), false),
            Err(AddIdError::SeqOverflow) => return (Err("ERR Elements are too large to be stored"), false),
        };
        if total > LISTPACK_MAX_SIZE {
            return (Err("ERR Elements are too large to be stored"), false);
        }
        s.append(id, &pairs, lim);
        let trimmed = p.trim.map_or(0, |to| s.trim(to, p.approx, p.limit));
        (Ok((id, trimmed)), true)
    });
    drop(shard);
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.null(),
        Ok(Some(Err(e))) => c.out.error(e),
        Ok(Some(Ok((id, trimmed)))) => {
            reply_id(&mut c.out, id);
            t.notify(shared, STREAM, "xadd", key);
            if trimmed > 0 {
                t.notify(shared, STREAM, "xtrim", key);
            }
            t.signal(shared, key);
        }
    }
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count].
pub(super) fn xtrim_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let lim = shared.store.encoding_limits().stream_node;
    let p = match parse_add_trim(args, false, lim.max_entries) {
        Ok(p) => p,
        Err(e) => return c.out.error(&e),
    };
    if p.next < args.len() {
        return c.out.error(ERR_SYNTAX);
    }
    let key = args.get(1);
    let t = Target::of(c);
    let to = p.trim.expect("XTRIM has a strategy");
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(t.ns, key, Kind::Stream, false, now, |o| {
        let n = stream_mut(o).trim(to, p.approx, p.limit);
        (n, n > 0)
    });
    drop(shard);
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.int(0),
        Ok(Some(n)) => {
            if n > 0 {
                t.notify(shared, STREAM, "xtrim", key);
            }
            c.out.int(n as i64)
        }
    }
}

/// XDEL key id [id ...].
pub(super) fn xdel_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let t = Target::of(c);
    let mut shard = shared.store.lock_key(key);
    // The key is looked up before the IDs are parsed, as xdelCommand does.
    match shard.kind(t.ns, key, now) {
        None => return c.out.int(0),
        Some(Kind::Stream) => {}
        Some(_) => return c.out.error(ERR_WRONGTYPE),
    }
    let mut ids = Vec::with_capacity(args.len() - 2);
    for a in args.iter().skip(2) {
        match parse_strict_id(a) {
            Ok(id) => ids.push(id),
            Err(e) => return c.out.error(e),
        }
    }
    let r = shard.write_object_if(t.ns, key, Kind::Stream, false, now, |o| {
        let n = stream_mut(o).delete(&ids);
        (n, n > 0)
    });
    drop(shard);
    let n = match r {
        Ok(Some(n)) => n,
        _ => 0,
    };
    if n > 0 {
        t.notify(shared, STREAM, "xdel", key);
    }
    c.out.int(n as i64)
}

/// XLEN key.
pub(super) fn xlen_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    match shard.read_object(c.ns(), key, Kind::Stream, now) {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.int(0),
        Ok(Some(o)) => c.out.int(stream(o).len() as i64),
    }
}

/// XRANGE key start end [COUNT count] and XREVRANGE key end start [COUNT count].
pub(super) fn xrange_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let rev = spec.cmd == Cmd::XRevRange;
    let (start_arg, end_arg) = if rev {
        (args.get(3), args.get(2))
    } else {
        (args.get(2), args.get(3))
    };
    let start = match parse_bound(start_arg, false) {
        Ok(id) => id,
        Err(e) => return c.out.error(e),
    };
    let end = match parse_bound(end_arg, true) {
        Ok(id) => id,
        Err(e) => return c.out.error(e),
    };
    let mut count: i64 = -1;
    let mut j = 4;
    while j < args.len() {
        if eq(args.get(j), "count") && j + 1 < args.len() {
            match parse_i64(args.get(j + 1)) {
                Some(n) => count = n.max(0),
                None => return c.out.error(ERR_NOT_INT),
            }
            j += 2;
        } else {
            return c.out.error(ERR_SYNTAX);
        }
    }
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    match shard.read_object(c.ns(), key, Kind::Stream, now) {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.array(0),
        Ok(Some(_)) if count == 0 => c.out.null_array(),
        Ok(Some(o)) => {
            let entries = stream(o).range(start, end, rev, count.max(0) as usize);
            reply_borrowed(&mut c.out, &entries);
        }
    }
}

// ----- XREAD / XREADGROUP -----

/// A consumer group read: group, consumer, NOACK.
#[derive(Debug, Clone)]
pub struct GroupRead {
    pub group: Vec<u8>,
    pub consumer: Vec<u8>,
    pub noack: bool,
}

/// What a blocked XREAD / XREADGROUP waits for: per key (in `Waiter::keys` order) the
/// ID after which entries are new (for `>` the group's last ID, read when served).
#[derive(Debug, Clone)]
pub struct StreamWait {
    pub ids: Vec<StreamId>,
    pub count: usize,
    pub group: Option<GroupRead>,
}

/// One key's part of an XREAD reply.
enum KeyReply {
    Entries(Vec<OwnedEntry>),
    /// Entries already encoded (arrays and bulks: the same in RESP2 and RESP3).
    Encoded(Vec<u8>),
    /// XREADGROUP history: entries, or None for a deleted one ([id, nil]).
    History(Vec<augur_store::stream::PendingRead>),
}

fn reply_key(out: &mut Out, key: &[u8], r: &KeyReply) {
    out.bulk(key);
    match r {
        KeyReply::Entries(e) => reply_entries(out, e),
        KeyReply::Encoded(b) => out.buf.extend_from_slice(b),
        KeyReply::History(h) => {
            out.array(h.len());
            for (id, pairs) in h {
                match pairs {
                    Some(p) => reply_entry(out, &(*id, p.clone())),
                    None => {
                        out.array(2);
                        reply_id(out, *id);
                        out.null_array();
                    }
                }
            }
        }
    }
}

/// The keys' replies as XREAD writes them: a map in RESP3, pairs in RESP2.
fn reply_keys(out: &mut Out, served: &[(Vec<u8>, KeyReply)]) {
    if out.resp3 {
        out.map(served.len());
        for (k, r) in served {
            reply_key(out, k, r);
        }
    } else {
        out.array(served.len());
        for (k, r) in served {
            out.array(2);
            reply_key(out, k, r);
        }
    }
}

/// Serves one key of a read: new entries after `after` (with a group: delivered to the
/// consumer), or for a group history read the consumer's PEL from `after`. None when a
/// new-entries read finds nothing.
#[allow(clippy::too_many_arguments)]
fn read_key(
    shared: &Shared,
    t: Target,
    key: &[u8],
    after: Option<StreamId>,
    count: usize,
    group: Option<&GroupRead>,
    history: bool,
    now: u64,
) -> Result<Option<KeyReply>, String> {
    let mut shard = shared.store.lock_key(key);
    match group {
        None => {
            let after = after.expect("XREAD has an ID per key");
            match shard.read_object(t.ns, key, Kind::Stream, now) {
                Err(_) => Err(ERR_WRONGTYPE.into()),
                Ok(None) => Ok(None),
                Ok(Some(o)) => {
                    let s = stream(o);
                    let Some(start) = after.next() else {
                        return Ok(None);
                    };
                    let e = s.range(start, StreamId::MAX, false, count);
                    if e.is_empty() {
                        return Ok(None);
                    }
                    // Encoded now, under the lock, instead of copied out.
                    let mut enc = Out::new();
                    reply_borrowed(&mut enc, &e);
                    Ok(Some(KeyReply::Encoded(enc.buf.to_vec())))
                }
            }
        }
        Some(g) => {
            let mut created = false;
            let r = shard.write_object_if(t.ns, key, Kind::Stream, false, now, |o| {
                let s = stream_mut(o);
                let Some(grp) = s.group_mut(&g.group) else {
                    return (Err(()), false);
                };
                // The consumer is created (and seen) when something is served: a
                // history read, or new entries (`read_group_new` decides); a read that
                // blocks creates none.
                if history {
                    created = grp.touch_consumer(&g.consumer, now);
                }
                if history {
                    // Like every XREAD ID, a history read's is exclusive.
                    let h = match after.unwrap_or(StreamId::MIN).next() {
                        Some(start) => {
                            s.read_group_history(&g.group, &g.consumer, start, count, now)
                        }
                        None => Vec::new(),
                    };
                    (Ok(Some(KeyReply::History(h))), true)
                } else {
                    let (e, made) = s.read_group_new(&g.group, &g.consumer, count, g.noack, now);
                    created = made;
                    let changed = !e.is_empty();
                    (Ok((!e.is_empty()).then_some(KeyReply::Entries(e))), changed)
                }
            });
            drop(shard);
            if created {
                t.notify(shared, STREAM, "xgroup-createconsumer", key);
            }
            match r {
                Err(_) => Err(ERR_WRONGTYPE.into()),
                Ok(None) | Ok(Some(Err(()))) => Err(format!(
                    "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                    String::from_utf8_lossy(key),
                    String::from_utf8_lossy(&g.group)
                )),
                Ok(Some(Ok(r))) => Ok(r),
            }
        }
    }
}

/// XREAD [COUNT count] [BLOCK ms] STREAMS key ... id ... and XREADGROUP GROUP group
/// consumer [COUNT count] [BLOCK ms] [NOACK] STREAMS key ... id ... (xreadCommand).
pub(super) fn xread_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let xreadgroup = spec.cmd == Cmd::XReadGroup;
    let mut timeout: Option<u64> = None;
    let mut count: usize = 0;
    let mut streams_arg = 0;
    let mut group: Option<GroupRead> = None;
    let mut noack = false;
    let argc = args.len();
    let mut i = 1;
    while i < argc {
        let more = argc - 1 - i;
        let o = args.get(i);
        if eq(o, "block") && more > 0 {
            if c.in_script {
                // Named as the script wrote it (c->argv[0]).
                return c.out.error(&format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    String::from_utf8_lossy(args.get(0))
                ));
            }
            i += 1;
            match parse_i64(args.get(i)) {
                None => return c.out.error("ERR timeout is not an integer or out of range"),
                Some(n) if n < 0 => return c.out.error("ERR timeout is negative"),
                Some(n) => timeout = Some(n as u64),
            }
        } else if eq(o, "count") && more > 0 {
            i += 1;
            match parse_i64(args.get(i)) {
                None => return c.out.error(ERR_NOT_INT),
                Some(n) => count = n.max(0) as usize,
            }
        } else if eq(o, "streams") && more > 0 {
            streams_arg = i + 1;
            let n = argc - streams_arg;
            if !n.is_multiple_of(2) {
                return c.out.error(
                    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                );
            }
            break;
        } else if eq(o, "group") && more >= 2 {
            if !xreadgroup {
                return c.out.error(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                );
            }
            group = Some(GroupRead {
                group: args.get(i + 1).to_vec(),
                consumer: args.get(i + 2).to_vec(),
                noack: false,
            });
            i += 2;
        } else if eq(o, "noack") {
            if !xreadgroup {
                return c
                    .out
                    .error("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.");
            }
            noack = true;
        } else {
            return c.out.error(ERR_SYNTAX);
        }
        i += 1;
    }
    if streams_arg == 0 {
        return c.out.error(ERR_SYNTAX);
    }
    if xreadgroup && group.is_none() {
        return c.out.error("ERR Missing GROUP option for XREADGROUP");
    }
    if let Some(g) = &mut group {
        g.noack = noack;
    }
    let nkeys = (argc - streams_arg) / 2;
    let keys: Vec<&[u8]> = (0..nkeys).map(|k| args.get(streams_arg + k)).collect();
    let t = Target::of(c);
    // The IDs, each checked against its key as Redis does (type, group, `$`, `>`).
    // None: `>`.
    let mut ids: Vec<Option<StreamId>> = Vec::with_capacity(nkeys);
    for (k, key) in keys.iter().enumerate() {
        let arg = args.get(streams_arg + nkeys + k);
        let mut shard = shared.store.lock_key(key);
        let (last, has_group) = match shard.peek_object(t.ns, key, Kind::Stream, now) {
            Err(_) => return c.out.error(ERR_WRONGTYPE),
            Ok(None) => (None, false),
            Ok(Some(o)) => {
                let s = stream(o);
                (
                    Some(s.last_id()),
                    group.as_ref().is_some_and(|g| s.group(&g.group).is_some()),
                )
            }
        };
        drop(shard);
        if let Some(g) = &group {
            if !has_group {
                return c.out.error(&format!(
                    "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                    String::from_utf8_lossy(key),
                    String::from_utf8_lossy(&g.group)
                ));
            }
        }
        if arg == b"$" {
            if xreadgroup {
                return c.out.error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.");
            }
            ids.push(Some(last.unwrap_or(StreamId::MIN)));
        } else if arg == b">" {
            if !xreadgroup {
                return c.out.error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.");
            }
            ids.push(None);
        } else {
            match parse_strict_id(arg) {
                // xreadCommand marks `>` as the largest ID, so that ID given explicitly
                // to XREADGROUP reads new entries too.
                Ok(StreamId::MAX) if xreadgroup => ids.push(None),
                Ok(id) => ids.push(Some(id)),
                Err(e) => return c.out.error(e),
            }
        }
    }
    // Serve what is there now.
    let mut served: Vec<(Vec<u8>, KeyReply)> = Vec::new();
    for (k, key) in keys.iter().enumerate() {
        let history = group.is_some() && ids[k].is_some();
        match read_key(shared, t, key, ids[k], count, group.as_ref(), history, now) {
            Err(e) => return c.out.error(&e),
            Ok(Some(r)) => served.push((key.to_vec(), r)),
            Ok(None) => {}
        }
    }
    if !served.is_empty() {
        return reply_keys(&mut c.out, &served);
    }
    let Some(timeout_ms) = timeout else {
        return c.out.null_array();
    };
    if !c.may_block {
        return c.out.null_array();
    }
    // Block: a `$` or explicit ID waits for entries after it; `>` for entries after the
    // group's last ID when served.
    let wait = StreamWait {
        ids: ids.iter().map(|id| id.unwrap_or(StreamId::MAX)).collect(),
        count,
        group,
    };
    let blocking = &shared.blocking;
    let mut reg = blocking.lock();
    blocking.begin_check();
    // Entries added between the read above and this registration would be missed:
    // check again under the registry lock (a signal needs it to be served).
    let mut again: Vec<(Vec<u8>, KeyReply)> = Vec::new();
    for (k, key) in keys.iter().enumerate() {
        let history = false;
        if let Ok(Some(r)) = read_key(
            shared,
            t,
            key,
            ids[k],
            count,
            wait.group.as_ref(),
            history,
            now,
        ) {
            again.push((key.to_vec(), r));
        }
    }
    if !again.is_empty() {
        blocking.end_check();
        drop(reg);
        return reply_keys(&mut c.out, &again);
    }
    if wait.group.is_some() {
        watch_group_keys(shared, &mut reg, t, &keys, now);
    }
    let keys_owned = keys.iter().map(|k| k.to_vec()).collect();
    let w = Waiter::new(
        c.meta.id,
        c.tenant,
        c.db,
        keys_owned,
        BlockOp::Stream(Box::new(wait)),
        c.out.resp3,
    );
    blocking.block(&mut reg, w.clone());
    c.blocked = Some(crate::blocking::Blocked {
        waiter: w,
        deadline_ms: (timeout_ms > 0).then(|| now.saturating_add(timeout_ms)),
    });
}

/// A blocked XREADGROUP must hear of its key being deleted, replaced or flushed (it is
/// then answered with an error, as Redis's signalDeletedKeyAsReady arranges): its keys
/// are WATCHed with the blocking service's shared flag.
fn watch_group_keys(
    shared: &Shared,
    reg: &mut crate::blocking::Registry,
    t: Target,
    keys: &[&[u8]],
    now: u64,
) {
    unwatch_idle_group_keys(shared, reg);
    for key in keys {
        if reg.watch_group_key((t.tenant, t.db, key.to_vec())) {
            shared
                .store
                .lock_key(key)
                .watch(t.ns, key, shared.blocking.group_flag(), now);
        }
    }
}

/// Drops the watches of keys no blocked XREADGROUP waits on any more.
pub(crate) fn unwatch_idle_group_keys(shared: &Shared, reg: &mut crate::blocking::Registry) {
    for (tenant, db, key) in reg.idle_group_keys() {
        let ns = shared.store.physical(Ns::new(tenant, db));
        shared
            .store
            .lock_key(&key)
            .unwatch(ns, &key, shared.blocking.group_flag());
    }
}

/// Serves a blocked XREAD / XREADGROUP on the one key that readied
/// (serveClientBlockedOnKey for streams): Ok(Some(reply)) when there are entries for it,
/// Ok(None) to keep waiting, Err(message) to end the wait with an error (an XREADGROUP
/// whose key or group is gone). A key that only changed under a group waiter's watch
/// (`signalled` false) is checked for that error but serves no entries.
pub(crate) fn serve_stream_waiter(
    shared: &Shared,
    w: &Waiter,
    wait: &StreamWait,
    key: &[u8],
    signalled: bool,
    now: u64,
) -> Result<Option<Vec<u8>>, String> {
    let t = Target {
        tenant: w.tenant,
        db: w.db,
        ns: shared.store.physical(Ns::new(w.tenant, w.db)),
    };
    let Some(k) = w.keys.iter().position(|x| x == key) else {
        return Ok(None);
    };
    // One look at the key: not a stream (or gone), or a stream with or without the group.
    let has_group: Option<bool> =
        match shared
            .store
            .lock_key(key)
            .peek_object(t.ns, key, Kind::Stream, now)
        {
            Ok(Some(o)) => Some(
                wait.group
                    .as_ref()
                    .is_none_or(|g| stream(o).group(&g.group).is_some()),
            ),
            _ => None,
        };
    match (has_group, wait.group.is_some()) {
        (None, true) => return Err("UNBLOCKED the stream key no longer exists".into()),
        (None, false) => return Ok(None),
        (Some(false), _) => {
            return Err(
                "NOGROUP the consumer group this client was blocked on no longer exists".into(),
            )
        }
        (Some(true), _) => {}
    }
    if !signalled {
        return Ok(None);
    }
    let after = wait.group.is_none().then_some(wait.ids[k]);
    match read_key(
        shared,
        t,
        key,
        after,
        wait.count,
        wait.group.as_ref(),
        false,
        now,
    ) {
        Ok(Some(r)) => {
            let mut out = Out::new();
            out.resp3 = w.resp3;
            reply_keys(&mut out, &[(key.to_vec(), r)]);
            Ok(Some(out.buf.to_vec()))
        }
        Ok(None) => Ok(None),
        Err(e) => Err(e.strip_prefix("-").unwrap_or(&e).to_string()),
    }
}

// ----- XGROUP -----

fn parse_entries_read(arg: &[u8]) -> Result<i64, String> {
    let n = parse_i64(arg).ok_or(ERR_NOT_INT)?;
    if n < 0 && n != INVALID_ENTRIES_READ {
        return Err("ERR value for ENTRIESREAD must be positive or -1".into());
    }
    Ok(n)
}

const XGROUP_HELP: &[&str] = &[
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
];

/// XGROUP CREATE | SETID | DESTROY | CREATECONSUMER | DELCONSUMER | HELP (xgroupCommand).
pub(super) fn xgroup_command(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let Some(sub) = super::subcommand(&mut c.out, spec, args) else {
        return;
    };
    if sub == "help" {
        return super::help_reply(&mut c.out, "XGROUP", XGROUP_HELP);
    }
    let argc = args.len();
    let mut mkstream = false;
    let mut entries_read = INVALID_ENTRIES_READ;
    if sub == "create" || sub == "setid" {
        let mut i = 5;
        while i < argc {
            let o = args.get(i);
            if sub == "create" && eq(o, "mkstream") {
                mkstream = true;
                i += 1;
            } else if eq(o, "entriesread") && i + 1 < argc {
                match parse_entries_read(args.get(i + 1)) {
                    Ok(n) => entries_read = n,
                    Err(e) => return c.out.error(&e),
                }
                i += 2;
            } else {
                return super::subcommand_syntax_error(&mut c.out, args);
            }
        }
    }
    let key = args.get(2);
    let group = args.get(3);
    let t = Target::of(c);
    let mut shard = shared.store.lock_key(key);
    let (exists, has_group, last) = match shard.peek_object(t.ns, key, Kind::Stream, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(None) => (false, false, StreamId::MIN),
        Ok(Some(o)) => {
            let s = stream(o);
            (true, s.group(group).is_some(), s.last_id())
        }
    };
    if !mkstream {
        if !exists {
            return c.out.error("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.");
        }
        if !has_group && matches!(sub, "setid" | "createconsumer" | "delconsumer") {
            return c.out.error(&format!(
                "NOGROUP No such consumer group '{}' for key name '{}'",
                String::from_utf8_lossy(group),
                String::from_utf8_lossy(key)
            ));
        }
    }
    match sub {
        "create" => {
            let id = if args.get(4) == b"$" {
                last
            } else {
                match parse_strict_id(args.get(4)) {
                    Ok(id) => id,
                    Err(e) => return c.out.error(e),
                }
            };
            let r = shard.write_object_if(t.ns, key, Kind::Stream, true, now, |o| {
                let made = stream_mut(o).create_group(group, id, entries_read);
                (made, made)
            });
            drop(shard);
            match r {
                Ok(Some(true)) => {
                    c.out.ok();
                    t.notify(shared, STREAM, "xgroup-create", key);
                }
                _ => c.out.error("BUSYGROUP Consumer Group name already exists"),
            }
        }
        "setid" => {
            let id = if args.get(4) == b"$" {
                last
            } else {
                match parse_id(args.get(4), 0) {
                    Ok(id) => id,
                    Err(e) => return c.out.error(e),
                }
            };
            let _ = shard.write_object(t.ns, key, Kind::Stream, false, now, |o| {
                if let Some(g) = stream_mut(o).group_mut(group) {
                    g.last_id = id;
                    g.entries_read = entries_read;
                }
            });
            drop(shard);
            c.out.ok();
            t.notify(shared, STREAM, "xgroup-setid", key);
        }
        "destroy" => {
            let r = shard.write_object_if(t.ns, key, Kind::Stream, false, now, |o| {
                let gone = stream_mut(o).destroy_group(group);
                (gone, gone)
            });
            drop(shard);
            if let Ok(Some(true)) = r {
                c.out.int(1);
                t.notify(shared, STREAM, "xgroup-destroy", key);
                // Blocked XREADGROUPs of this group get -NOGROUP.
                t.signal(shared, key);
            } else {
                c.out.int(0);
            }
        }
        "createconsumer" => {
            let consumer = args.get(4);
            let r = shard.write_object_if(t.ns, key, Kind::Stream, false, now, |o| {
                let made = stream_mut(o)
                    .group_mut(group)
                    .is_some_and(|g| g.create_consumer(consumer, now));
                (made, made)
            });
            drop(shard);
            let made = matches!(r, Ok(Some(true)));
            c.out.int(made as i64);
            if made {
                t.notify(shared, STREAM, "xgroup-createconsumer", key);
            }
        }
        _ => {
            // delconsumer
            let consumer = args.get(4);
            let r = shard.write_object_if(t.ns, key, Kind::Stream, false, now, |o| {
                let n = stream_mut(o)
                    .group_mut(group)
                    .and_then(|g| g.delete_consumer(consumer));
                (n, n.is_some())
            });
            drop(shard);
            match r {
                Ok(Some(Some(n))) => {
                    c.out.int(n as i64);
                    t.notify(shared, STREAM, "xgroup-delconsumer", key);
                }
                _ => c.out.int(0),
            }
        }
    }
}

// ----- XACK / XPENDING / XCLAIM / XAUTOCLAIM -----

fn nogroup(key: &[u8], group: &[u8]) -> String {
    format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    )
}

/// The key's stream and whether it has `group`: Err(reply) for another type.
fn group_state(
    shared: &Shared,
    ns: Ns,
    key: &[u8],
    group: &[u8],
    now: u64,
) -> Result<bool, &'static str> {
    let mut shard = shared.store.lock_key(key);
    match shard.read_object(ns, key, Kind::Stream, now) {
        Err(_) => Err(ERR_WRONGTYPE),
        Ok(None) => Ok(false),
        Ok(Some(o)) => Ok(stream(o).group(group).is_some()),
    }
}

/// XACK key group id [id ...].
pub(super) fn xack_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let group = args.get(2);
    let ns = c.ns();
    let has = match group_state(shared, ns, key, group, now) {
        Ok(h) => h,
        Err(e) => return c.out.error(e),
    };
    // No key or group: nothing to acknowledge, whatever the IDs (7.0 checks this first).
    if !has {
        return c.out.int(0);
    }
    let mut ids = Vec::with_capacity(args.len() - 3);
    for a in args.iter().skip(3) {
        match parse_strict_id(a) {
            Ok(id) => ids.push(id),
            Err(e) => return c.out.error(e),
        }
    }
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(ns, key, Kind::Stream, false, now, |o| {
        let n = stream_mut(o)
            .group_mut(group)
            .map_or(0, |g| ids.iter().filter(|&&id| g.ack(id)).count());
        (n, n > 0)
    });
    c.out.int(r.ok().flatten().unwrap_or(0) as i64);
}

/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]].
#[allow(clippy::type_complexity)]
pub(super) fn xpending_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let argc = args.len();
    if argc != 3 && !(6..=9).contains(&argc) {
        return c.out.error(ERR_SYNTAX);
    }
    let key = args.get(1);
    let group = args.get(2);
    let mut extended: Option<(StreamId, StreamId, usize, Option<&[u8]>, i64)> = None;
    if argc >= 6 {
        let mut start_idx = 3;
        let mut min_idle = 0;
        if eq(args.get(3), "idle") {
            match parse_i64(args.get(4)) {
                Some(n) => min_idle = n,
                None => return c.out.error(ERR_NOT_INT),
            }
            if argc < 8 {
                return c.out.error(ERR_SYNTAX);
            }
            start_idx += 2;
        }
        let count = match parse_i64(args.get(start_idx + 2)) {
            Some(n) => n.max(0) as usize,
            None => return c.out.error(ERR_NOT_INT),
        };
        let start = match parse_bound(args.get(start_idx), false) {
            Ok(id) => id,
            Err(e) => return c.out.error(e),
        };
        let end = match parse_bound(args.get(start_idx + 1), true) {
            Ok(id) => id,
            Err(e) => return c.out.error(e),
        };
        let consumer = (start_idx + 3 < argc).then(|| args.get(start_idx + 3));
        extended = Some((start, end, count, consumer, min_idle));
    }
    let mut shard = shared.store.lock_key(key);
    let g: Group = match shard.read_object(c.ns(), key, Kind::Stream, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(Some(o)) if stream(o).group(group).is_some() => stream(o).group(group).unwrap().clone(),
        _ => return c.out.error(&nogroup(key, group)),
    };
    drop(shard);
    match extended {
        None => {
            let pel = g.pel();
            if pel.is_empty() {
                c.out.array(4);
                c.out.int(0);
                c.out.null();
                c.out.null();
                c.out.null_array();
                return;
            }
            c.out.array(4);
            c.out.int(pel.len() as i64);
            reply_id(&mut c.out, *pel.keys().next().unwrap());
            reply_id(&mut c.out, *pel.keys().next_back().unwrap());
            let busy: Vec<(&Box<[u8]>, usize)> = g
                .consumers()
                .iter()
                .filter(|(_, cs)| !cs.pel.is_empty())
                .map(|(n, cs)| (n, cs.pel.len()))
                .collect();
            c.out.array(busy.len());
            for (name, n) in busy {
                c.out.array(2);
                c.out.bulk(name);
                c.out.bulk(n.to_string().as_bytes());
            }
        }
        Some((start, end, count, consumer, min_idle)) => {
            let mut rows: Vec<(StreamId, &[u8], u64, u64)> = Vec::new();
            if start <= end && count > 0 {
                let ids: Vec<StreamId> = match consumer {
                    Some(cn) => match g.consumer(cn) {
                        Some(cs) => cs.pel.range(start..=end).copied().collect(),
                        None => Vec::new(),
                    },
                    None => g.pel().range(start..=end).map(|(id, _)| *id).collect(),
                };
                for id in ids {
                    if rows.len() >= count {
                        break;
                    }
                    let n = &g.pel()[&id];
                    let idle = now.saturating_sub(n.delivery_time);
                    if min_idle > 0 && (idle as i64) < min_idle {
                        continue;
                    }
                    rows.push((id, &n.consumer, idle, n.delivery_count));
                }
            }
            c.out.array(rows.len());
            for (id, name, idle, cnt) in rows {
                c.out.array(4);
                reply_id(&mut c.out, id);
                c.out.bulk(name);
                c.out.int(idle as i64);
                c.out.int(cnt as i64);
            }
        }
    }
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME ms-unix-time]
/// [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid].
pub(super) fn xclaim_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let group = args.get(2);
    let consumer = args.get(3);
    let t = Target::of(c);
    match group_state(shared, t.ns, key, group, now) {
        Err(e) => return c.out.error(e),
        Ok(false) => return c.out.error(&nogroup(key, group)),
        Ok(true) => {}
    }
    let min_idle = match parse_i64(args.get(4)) {
        Some(n) => n.max(0) as u64,
        None => return c.out.error("ERR Invalid min-idle-time argument for XCLAIM"),
    };
    let mut j = 5;
    let mut ids = Vec::new();
    while j < args.len() {
        match parse_strict_id(args.get(j)) {
            Ok(id) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let (mut force, mut justid) = (false, false);
    let mut delivery: Option<i64> = None;
    let mut retry: Option<i64> = None;
    let mut last_id = StreamId::MIN;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let o = args.get(j);
        let num = |v: &[u8], what: &str| {
            parse_i64(v).ok_or_else(|| format!("ERR Invalid {what} option argument for XCLAIM"))
        };
        if eq(o, "force") {
            force = true;
        } else if eq(o, "justid") {
            justid = true;
        } else if eq(o, "idle") && more > 0 {
            j += 1;
            match num(args.get(j), "IDLE") {
                Ok(n) => delivery = Some((now as i64).wrapping_sub(n)),
                Err(e) => return c.out.error(&e),
            }
        } else if eq(o, "time") && more > 0 {
            j += 1;
            match num(args.get(j), "TIME") {
                Ok(n) => delivery = Some(n),
                Err(e) => return c.out.error(&e),
            }
        } else if eq(o, "retrycount") && more > 0 {
            j += 1;
            match num(args.get(j), "RETRYCOUNT") {
                Ok(n) => retry = Some(n),
                Err(e) => return c.out.error(&e),
            }
        } else if eq(o, "lastid") && more > 0 {
            j += 1;
            match parse_strict_id(args.get(j)) {
                Ok(id) => last_id = id,
                Err(e) => return c.out.error(e),
            }
        } else {
            return c.out.error(&format!(
                "ERR Unrecognized XCLAIM option '{}'",
                String::from_utf8_lossy(o)
            ));
        }
        j += 1;
    }
    let delivery_time = match delivery {
        Some(d) if d >= 0 && d as u64 <= now => d as u64,
        _ => now,
    };
    let retry = retry.filter(|&n| n >= 0).map(|n| n as u64);
    let mut created = false;
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(t.ns, key, Kind::Stream, false, now, |o| {
        let s = stream_mut(o);
        let mut changed = false;
        if let Some(g) = s.group_mut(group) {
            if last_id > g.last_id {
                g.last_id = last_id;
                changed = true;
            }
            created = g.consumer(consumer).is_none();
        }
        let before = s.group(group).map(|g| g.pel().len());
        let claimed = s.claim(
            group,
            consumer,
            &ids,
            min_idle,
            delivery_time,
            retry,
            force,
            justid,
            now,
        );
        created &= s
            .group(group)
            .is_some_and(|g| g.consumer(consumer).is_some());
        changed |= !claimed.is_empty() || before != s.group(group).map(|g| g.pel().len());
        (claimed, changed)
    });
    drop(shard);
    if created {
        t.notify(shared, STREAM, "xgroup-createconsumer", key);
    }
    let claimed = match r {
        Ok(Some(v)) => v,
        _ => Vec::new(),
    };
    c.out.array(claimed.len());
    for e in &claimed {
        if justid {
            reply_id(&mut c.out, e.0);
        } else {
            reply_entry(&mut c.out, e);
        }
    }
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID].
pub(super) fn xautoclaim_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let group = args.get(2);
    let consumer = args.get(3);
    let min_idle = match parse_i64(args.get(4)) {
        Some(n) => n.max(0) as u64,
        None => {
            return c
                .out
                .error("ERR Invalid min-idle-time argument for XAUTOCLAIM")
        }
    };
    let start = match parse_bound(args.get(5), false) {
        Ok(id) => id,
        Err(e) => return c.out.error(e),
    };
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    // LONG_MAX / max(sizeof(streamID), attempts_factor).
    let max_count = i64::MAX / 16;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let o = args.get(j);
        if eq(o, "count") && more > 0 {
            match super::parse_long_in(args.get(j + 1), 1, max_count, Some("COUNT must be > 0")) {
                Ok(n) => count = n,
                Err(e) => return c.out.error(&e),
            }
            j += 1;
        } else if eq(o, "justid") {
            justid = true;
        } else {
            return c.out.error(ERR_SYNTAX);
        }
        j += 1;
    }
    let t = Target::of(c);
    match group_state(shared, t.ns, key, group, now) {
        Err(e) => return c.out.error(e),
        Ok(false) => return c.out.error(&nogroup(key, group)),
        Ok(true) => {}
    }
    let mut created = false;
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(t.ns, key, Kind::Stream, false, now, |o| {
        let s = stream_mut(o);
        created = s
            .group(group)
            .is_some_and(|g| g.consumer(consumer).is_none());
        let r = s.autoclaim(group, consumer, start, count as u64, min_idle, justid, now);
        created &= s
            .group(group)
            .is_some_and(|g| g.consumer(consumer).is_some());
        let changed = !r.1.is_empty() || !r.2.is_empty();
        (r, changed)
    });
    drop(shard);
    if created {
        t.notify(shared, STREAM, "xgroup-createconsumer", key);
    }
    let (next, claimed, deleted) = match r {
        Ok(Some(v)) => v,
        _ => (StreamId::MIN, Vec::new(), Vec::new()),
    };
    c.out.array(3);
    reply_id(&mut c.out, next);
    c.out.array(claimed.len());
    for e in &claimed {
        if justid {
            reply_id(&mut c.out, e.0);
        } else {
            reply_entry(&mut c.out, e);
        }
    }
    c.out.array(deleted.len());
    for id in deleted {
        reply_id(&mut c.out, id);
    }
}

// ----- XINFO / XSETID -----

const XINFO_HELP: &[&str] = &[
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
];

fn reply_lag(out: &mut Out, s: &Stream, g: &Group) {
    match s.group_lag(g) {
        Some(n) => out.int(n),
        None => out.null(),
    }
}

fn reply_entries_read(out: &mut Out, g: &Group) {
    if g.entries_read != INVALID_ENTRIES_READ {
        out.int(g.entries_read);
    } else {
        out.null();
    }
}

/// Redis's rax node count for the stream's node keys (XINFO's radix-tree-nodes): the
/// nodes a radix tree of these 16-byte keys has, counted as rax.c builds them (a node
/// per branching point and per key end, chains of single children compressed).
fn rax_nodes(s: &Stream) -> usize {
    let keys: Vec<[u8; 16]> = s.node_keys().map(|id| id.encode()).collect();
    fn count(keys: &[[u8; 16]], depth: usize) -> usize {
        // One node at this point; then children grouped by next byte.
        if keys.is_empty() {
            return 0;
        }
        if depth == 16 {
            return 1;
        }
        // Compress the common prefix from depth.
        let mut d = depth;
        while d < 16 && keys.iter().all(|k| k[d] == keys[0][d]) {
            d += 1;
        }
        if d == 16 {
            // A compressed chain to the key's end: the chain node and the key's leaf.
            return if d > depth { 2 } else { 1 };
        }
        let mut n = if d > depth { 2 } else { 1 };
        let mut i = 0;
        while i < keys.len() {
            let mut j = i;
            while j < keys.len() && keys[j][d] == keys[i][d] {
                j += 1;
            }
            n += count(&keys[i..j], d + 1);
            i = j;
        }
        n
    }
    if keys.is_empty() {
        1
    } else {
        count(&keys, 0)
    }
}

/// XINFO STREAM key [FULL [COUNT count]] | GROUPS key | CONSUMERS key group | HELP.
pub(super) fn xinfo_command(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let Some(sub) = super::subcommand(&mut c.out, spec, args) else {
        return;
    };
    if sub == "help" {
        return super::help_reply(&mut c.out, "XINFO", XINFO_HELP);
    }
    let key = args.get(2);
    let mut shard = shared.store.lock_key(key);
    let s: Stream = match shard.read_object(c.ns(), key, Kind::Stream, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(None) => return c.out.error(ERR_NO_SUCH_KEY),
        Ok(Some(o)) => stream(o).clone(),
    };
    drop(shard);
    // The options are read after the key is looked up, as xinfoCommand does.
    let mut full = false;
    let mut count: i64 = 10;
    if sub == "stream" && args.len() > 3 {
        if args.len() != 4 && args.len() != 6 || !eq(args.get(3), "full") {
            return super::subcommand_syntax_error(&mut c.out, args);
        }
        full = true;
        if args.len() == 6 {
            if !eq(args.get(4), "count") {
                return super::subcommand_syntax_error(&mut c.out, args);
            }
            match parse_i64(args.get(5)) {
                // A negative COUNT is the default, 10.
                Some(n) => count = if n < 0 { 10 } else { n },
                None => return c.out.error(ERR_NOT_INT),
            }
        }
    }
    let out = &mut c.out;
    match sub {
        "consumers" => {
            let group = args.get(3);
            let Some(g) = s.group(group) else {
                return out.error(&format!(
                    "NOGROUP No such consumer group '{}' for key name '{}'",
                    String::from_utf8_lossy(group),
                    String::from_utf8_lossy(key)
                ));
            };
            out.array(g.consumers().len());
            for (name, cs) in g.consumers() {
                map_len(out, 3);
                out.bulk_str("name");
                out.bulk(name);
                out.bulk_str("pending");
                out.int(cs.pel.len() as i64);
                out.bulk_str("idle");
                out.int(now.saturating_sub(cs.seen_time) as i64);
            }
        }
        "groups" => {
            out.array(s.groups().len());
            for (name, g) in s.groups() {
                map_len(out, 6);
                out.bulk_str("name");
                out.bulk(name);
                out.bulk_str("consumers");
                out.int(g.consumers().len() as i64);
                out.bulk_str("pending");
                out.int(g.pel().len() as i64);
                out.bulk_str("last-delivered-id");
                reply_id(out, g.last_id);
                out.bulk_str("entries-read");
                reply_entries_read(out, g);
                out.bulk_str("lag");
                reply_lag(out, &s, g);
            }
        }
        _ => {
            // stream
            map_len(out, if full { 9 } else { 10 });
            out.bulk_str("length");
            out.int(s.len() as i64);
            out.bulk_str("radix-tree-keys");
            out.int(s.node_count() as i64);
            out.bulk_str("radix-tree-nodes");
            out.int(rax_nodes(&s) as i64);
            out.bulk_str("last-generated-id");
            reply_id(out, s.last_id());
            out.bulk_str("max-deleted-entry-id");
            reply_id(out, s.max_deleted_id());
            out.bulk_str("entries-added");
            out.int(s.entries_added() as i64);
            out.bulk_str("recorded-first-entry-id");
            reply_id(out, s.first_id());
            if !full {
                out.bulk_str("groups");
                out.int(s.groups().len() as i64);
                for (label, last) in [("first-entry", false), ("last-entry", true)] {
                    out.bulk_str(label);
                    match s.edge(last) {
                        Some(e) => reply_entry(out, &e.to_owned_entry()),
                        None => out.null(),
                    }
                }
                return;
            }
            out.bulk_str("entries");
            let entries: Vec<OwnedEntry> = s
                .range(StreamId::MIN, StreamId::MAX, false, count as usize)
                .iter()
                .map(|e| e.to_owned_entry())
                .collect();
            reply_entries(out, &entries);
            out.bulk_str("groups");
            out.array(s.groups().len());
            for (name, g) in s.groups() {
                map_len(out, 7);
                out.bulk_str("name");
                out.bulk(name);
                out.bulk_str("last-delivered-id");
                reply_id(out, g.last_id);
                out.bulk_str("entries-read");
                reply_entries_read(out, g);
                out.bulk_str("lag");
                reply_lag(out, &s, g);
                out.bulk_str("pel-count");
                out.int(g.pel().len() as i64);
                let limit = if count == 0 {
                    usize::MAX
                } else {
                    count as usize
                };
                let pel: Vec<_> = g.pel().iter().take(limit).collect();
                out.bulk_str("pending");
                out.array(pel.len());
                for (id, n) in pel {
                    out.array(4);
                    reply_id(out, *id);
                    out.bulk(&n.consumer);
                    out.int(n.delivery_time as i64);
                    out.int(n.delivery_count as i64);
                }
                out.bulk_str("consumers");
                out.array(g.consumers().len());
                for (cname, cs) in g.consumers() {
                    map_len(out, 4);
                    out.bulk_str("name");
                    out.bulk(cname);
                    out.bulk_str("seen-time");
                    out.int(cs.seen_time as i64);
                    out.bulk_str("pel-count");
                    out.int(cs.pel.len() as i64);
                    let ids: Vec<_> = cs.pel.iter().take(limit).collect();
                    out.bulk_str("pending");
                    out.array(ids.len());
                    for id in ids {
                        let n = &g.pel()[id];
                        out.array(3);
                        reply_id(out, *id);
                        out.int(n.delivery_time as i64);
                        out.int(n.delivery_count as i64);
                    }
                }
            }
        }
    }
}

/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id].
pub(super) fn xsetid_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let id = match parse_strict_id(args.get(2)) {
        Ok(id) => id,
        Err(e) => return c.out.error(e),
    };
    let mut entries_added: Option<u64> = None;
    let mut max_deleted: Option<StreamId> = None;
    let mut i = 3;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let o = args.get(i);
        if eq(o, "entriesadded") && more > 0 {
            match parse_i64(args.get(i + 1)) {
                None => return c.out.error(ERR_NOT_INT),
                Some(n) if n < 0 => return c.out.error("ERR entries_added must be positive"),
                Some(n) => entries_added = Some(n as u64),
            }
            i += 2;
        } else if eq(o, "maxdeletedid") && more > 0 {
            match parse_strict_id(args.get(i + 1)) {
                Err(e) => return c.out.error(e),
                Ok(m) if id < m => {
                    return c.out.error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
                }
                Ok(m) => max_deleted = Some(m),
            }
            i += 2;
        } else {
            return c.out.error(ERR_SYNTAX);
        }
    }
    let key = args.get(1);
    let t = Target::of(c);
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(t.ns, key, Kind::Stream, false, now, |o| {
        let s = stream_mut(o);
        // (Redis 7.0 has no check against the current max-deleted-entry-id; 7.2 added one.)
        if !s.is_empty() {
            if id < s.last_valid_id() {
                return (Err("ERR The ID specified in XSETID is smaller than the target stream top item"), false);
            }
            if entries_added.is_some_and(|n| s.len() > n) {
                return (Err("ERR The entries_added specified in XSETID is smaller than the target stream length"), false);
            }
        }
        s.set_ids(id, entries_added, max_deleted.filter(|&m| m != StreamId::MIN));
        (Ok(()), true)
    });
    drop(shard);
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.error(ERR_NO_SUCH_KEY),
        Ok(Some(Err(e))) => c.out.error(e),
        Ok(Some(Ok(()))) => {
            c.out.ok();
            t.notify(shared, STREAM, "xsetid", key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_redis() {
        let p = |s: &str| parse_id(s.as_bytes(), 0).ok();
        assert_eq!(p("1-2"), Some(StreamId::new(1, 2)));
        assert_eq!(p("5"), Some(StreamId::new(5, 0)));
        assert_eq!(p("-"), Some(StreamId::MIN));
        assert_eq!(p("+"), Some(StreamId::MAX));
        assert_eq!(p("007-1"), Some(StreamId::new(7, 1)));
        assert_eq!(p(" 5-1"), Some(StreamId::new(5, 1)));
        assert_eq!(p("-1"), None);
        assert_eq!(p("5-"), None);
        assert_eq!(p("a-1"), None);
        assert_eq!(p("18446744073709551616-0"), None);
        assert_eq!(
            p("18446744073709551615-18446744073709551615"),
            Some(StreamId::MAX)
        );
        assert_eq!(p("-01"), None, "a leading '-' splits into an empty ms part");
        assert_eq!(parse_strict_id(b"+"), Err(ERR_INVALID_ID));
        assert_eq!(
            parse_id_full(b"5-*", 0, true, true),
            Some((StreamId::new(5, 0), false))
        );
        assert_eq!(parse_id_full(b"5-*", 0, true, false), None);
        assert_eq!(parse_bound(b"(5-0", false), Ok(StreamId::new(5, 1)));
        assert_eq!(
            parse_bound(b"(0-0", true),
            Err("ERR invalid end ID for the interval")
        );
        assert_eq!(parse_bound(b"5", true), Ok(StreamId::new(5, u64::MAX)));
    }
}
