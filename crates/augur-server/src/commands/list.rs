//! List commands: LPUSH RPUSH LPUSHX RPUSHX LINSERT LLEN LINDEX LSET LRANGE LTRIM LPOP
//! RPOP LREM LPOS LMOVE RPOPLPUSH LMPOP and the blocking BLPOP BRPOP BLMOVE BRPOPLPUSH
//! BLMPOP. Mirrors Redis 7.0's t_list.c (argument order, error texts, notifications)
//! and blocked.c (serving blocked clients, see `crate::blocking`).
//!
//! A list is one object in the store (see `hash` for how reads and writes reach it). The
//! pops and moves are written once, against a [`Target`] (tenant, logical database and
//! namespace), so that a blocked client is served by exactly the code its command would
//! have run, from the connection whose push readied the key.

use super::{parse_long_in, Client, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use crate::blocking::{BlockOp, Outcome, Waiter};
use crate::cmdtable::{Cmd, CommandSpec};
use crate::notify::flags::{GENERIC, LIST};
use crate::notify::notify_in;
use crate::resp::{parse_i64, Args, Out};
use crate::state::Shared;
use augur_store::{End, Kind, List, Ns, Object, TenantId, WrongType};

/// The list inside an object `read_object`/`write_object` returned for `Kind::List`.
fn list(o: &Object) -> &List {
    o.as_list().expect("Kind::List lookups return lists")
}

fn list_mut(o: &mut Object) -> &mut List {
    o.as_list_mut().expect("Kind::List lookups return lists")
}

const POSITIVE: &str = "value is out of range, must be positive";

/// Where a list operation happens and whom its notifications name: the tenant, the
/// logical database (keyspace events, blocked keys) and the namespace it maps to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target {
    pub(super) tenant: TenantId,
    pub(super) db: u8,
    pub(super) ns: Ns,
}

impl Target {
    pub(super) fn of(c: &Client) -> Target {
        Target {
            tenant: c.tenant,
            db: c.db,
            ns: c.ns(),
        }
    }

    pub(super) fn notify(&self, shared: &Shared, class: u32, event: &str, key: &[u8]) {
        notify_in(shared, self.tenant, self.db, class, event, key);
    }

    /// A list may have appeared at `key`: blocked clients are served after the command.
    pub(super) fn signal(&self, shared: &Shared, key: &[u8]) {
        shared.blocking.signal(self.tenant, self.db, key);
    }
}

fn end_of(arg: &[u8]) -> Option<End> {
    if arg.eq_ignore_ascii_case(b"left") {
        Some(End::Head)
    } else if arg.eq_ignore_ascii_case(b"right") {
        Some(End::Tail)
    } else {
        None
    }
}

fn pop_event(end: End) -> &'static str {
    match end {
        End::Head => "lpop",
        End::Tail => "rpop",
    }
}

fn push_event(end: End) -> &'static str {
    match end {
        End::Head => "lpush",
        End::Tail => "rpush",
    }
}

/// getPositiveLongFromObjectOrReply: a range check whose message (Redis's default one
/// unless the command gives its own) also answers text that is not a number.
fn parse_positive(arg: &[u8], msg: Option<&str>) -> Result<i64, String> {
    parse_long_in(arg, 0, i64::MAX, Some(msg.unwrap_or(POSITIVE)))
}

/// getTimeoutFromObjectOrReply in seconds: the timeout in ms (0: forever), or the error.
fn parse_timeout(arg: &[u8]) -> Result<u64, &'static str> {
    let v = crate::long_double::LongDouble::parse(arg)
        .ok_or("ERR timeout is not a float or out of range")?;
    let ms = v.seconds_to_ms();
    if ms < 0 {
        return Err("ERR timeout is negative");
    }
    Ok(ms as u64)
}

// ----- pushes -----

/// LPUSH RPUSH LPUSHX RPUSHX.
pub(super) fn push_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let key = args.get(1);
    let end = match spec.cmd {
        Cmd::LPush | Cmd::LPushX => End::Head,
        _ => End::Tail,
    };
    let create = matches!(spec.cmd, Cmd::LPush | Cmd::RPush);
    let fill = shared.store.encoding_limits().list_shape();
    let t = Target::of(c);
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object(t.ns, key, Kind::List, create, now, |o| {
        let l = list_mut(o);
        for v in args.iter().skip(2) {
            l.push(end, v, fill);
        }
        l.len()
    });
    drop(shard);
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.int(0),
        Ok(Some(len)) => {
            c.out.int(len as i64);
            t.notify(shared, LIST, push_event(end), key);
            t.signal(shared, key);
        }
    }
}

/// LINSERT key BEFORE|AFTER pivot element.
pub(super) fn linsert_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let where_ = args.get(2);
    let after = if where_.eq_ignore_ascii_case(b"after") {
        true
    } else if where_.eq_ignore_ascii_case(b"before") {
        false
    } else {
        return c.out.error(ERR_SYNTAX);
    };
    let fill = shared.store.encoding_limits().list_shape();
    let t = Target::of(c);
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(t.ns, key, Kind::List, false, now, |o| {
        let l = list_mut(o);
        let done = l.insert(args.get(3), after, args.get(4), fill);
        (done.then_some(l.len()), done)
    });
    drop(shard);
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.int(0),
        Ok(Some(None)) => c.out.int(-1),
        Ok(Some(Some(len))) => {
            t.notify(shared, LIST, "linsert", key);
            c.out.int(len as i64)
        }
    }
}

// ----- reads -----

/// LLEN and LINDEX.
pub(super) fn list_read_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let l = match shard.read_object(c.ns(), key, Kind::List, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(o) => o.map(list),
    };
    if spec.cmd == Cmd::LLen {
        return c.out.int(l.map_or(0, List::len) as i64);
    }
    let Some(l) = l else {
        return c.out.null();
    };
    let Some(index) = parse_i64(args.get(2)) else {
        return c.out.error(ERR_NOT_INT);
    };
    match l.get(index) {
        Some(v) => c.out.bulk(&v),
        None => c.out.null(),
    }
}

/// addListRangeReply's index resolution (also ZRANGE's and ZREMRANGEBYRANK's, which
/// t_zset.c writes the same way): (first position, count), None if empty.
pub(super) fn resolve_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 {
        len.saturating_add(start)
    } else {
        start
    };
    let mut end = if end < 0 {
        len.saturating_add(end)
    } else {
        end
    };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= len {
        return None;
    }
    if end >= len {
        end = len - 1;
    }
    Some((start as usize, (end - start + 1) as usize))
}

/// LRANGE key start stop.
pub(super) fn lrange_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let (Some(start), Some(end)) = (parse_i64(args.get(2)), parse_i64(args.get(3))) else {
        return c.out.error(ERR_NOT_INT);
    };
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let l = match shard.read_object(c.ns(), key, Kind::List, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(None) => return c.out.array(0),
        Ok(Some(o)) => list(o),
    };
    match resolve_range(start, end, l.len()) {
        None => c.out.array(0),
        Some((from, n)) => {
            c.out.array(n);
            for v in l.iter_from(from).take(n) {
                c.out.bulk(&v);
            }
        }
    }
}

/// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len].
pub(super) fn lpos_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let (mut rank, mut count, mut maxlen) = (1i64, -1i64, 0i64);
    let mut j = 3;
    while j < args.len() {
        let opt = args.get(j);
        let more = j + 1 < args.len();
        let r = if opt.eq_ignore_ascii_case(b"RANK") && more {
            j += 1;
            // Redis 7.0.15 parses RANK as any long (7.2 bounds it at -LONG_MAX).
            parse_long_in(args.get(j), i64::MIN, i64::MAX, None).and_then(|r| {
                if r == 0 {
                    Err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list".to_string())
                } else {
                    rank = r;
                    Ok(())
                }
            })
        } else if opt.eq_ignore_ascii_case(b"COUNT") && more {
            j += 1;
            parse_positive(args.get(j), Some("COUNT can't be negative")).map(|v| count = v)
        } else if opt.eq_ignore_ascii_case(b"MAXLEN") && more {
            j += 1;
            parse_positive(args.get(j), Some("MAXLEN can't be negative")).map(|v| maxlen = v)
        } else {
            Err(ERR_SYNTAX.to_string())
        };
        if let Err(e) = r {
            return c.out.error(&e);
        }
        j += 1;
    }
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let l = match shard.read_object(c.ns(), key, Kind::List, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(None) if count != -1 => return c.out.array(0),
        Ok(None) => return c.out.null(),
        Ok(Some(o)) => list(o),
    };
    let ele = args.get(2);
    let len = l.len();
    let from_tail = rank < 0;
    // Redis negates a negative rank; LONG_MIN stays negative, so every match is at or
    // past it: the first match from the tail, as RANK -1.
    let rank = if rank == i64::MIN {
        1
    } else {
        rank.unsigned_abs()
    };
    let scan = if maxlen == 0 {
        len
    } else {
        (maxlen as usize).min(len)
    };
    let elems: Box<dyn Iterator<Item = std::borrow::Cow<'_, [u8]>>> = if from_tail {
        Box::new(l.iter_rev())
    } else {
        Box::new(l.iter())
    };
    let mut matches = 0u64;
    let mut found: Vec<i64> = Vec::new();
    for (index, e) in elems.take(scan).enumerate() {
        if *e != *ele {
            continue;
        }
        matches += 1;
        if matches >= rank {
            let at = if from_tail { len - index - 1 } else { index };
            found.push(at as i64);
            if count == -1 || (count > 0 && found.len() as i64 >= count) {
                break;
            }
        }
    }
    if count != -1 {
        c.out.array(found.len());
        for i in found {
            c.out.int(i);
        }
    } else {
        match found.first() {
            Some(&i) => c.out.int(i),
            None => c.out.null(),
        }
    }
}

// ----- in-place writes -----

/// LSET key index element.
pub(super) fn lset_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let fill = shared.store.encoding_limits().list_shape();
    let t = Target::of(c);
    let mut shard = shared.store.lock_key(key);
    // The type and existence first, then the index, as lsetCommand.
    match shard.peek_object(t.ns, key, Kind::List, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(None) => return c.out.error("ERR no such key"),
        Ok(Some(_)) => {}
    }
    let Some(index) = parse_i64(args.get(2)) else {
        return c.out.error(ERR_NOT_INT);
    };
    let r = shard.write_object_if(t.ns, key, Kind::List, false, now, |o| {
        let done = list_mut(o).set(index, args.get(3), fill);
        (done, done)
    });
    drop(shard);
    match r {
        Ok(Some(true)) => {
            c.out.ok();
            t.notify(shared, LIST, "lset", key);
        }
        Ok(Some(false)) => c.out.error("ERR index out of range"),
        Ok(None) => c.out.error("ERR no such key"),
        Err(_) => c.out.error(ERR_WRONGTYPE),
    }
}

/// LTRIM key start stop.
pub(super) fn ltrim_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let (Some(start), Some(end)) = (parse_i64(args.get(2)), parse_i64(args.get(3))) else {
        return c.out.error(ERR_NOT_INT);
    };
    let key = args.get(1);
    let t = Target::of(c);
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object(t.ns, key, Kind::List, false, now, |o| {
        let l = list_mut(o);
        match resolve_range(start, end, l.len()) {
            Some((from, n)) => l.trim(from, from + n - 1),
            None => l.trim(1, 0),
        }
        l.is_empty()
    });
    drop(shard);
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.ok(),
        Ok(Some(emptied)) => {
            t.notify(shared, LIST, "ltrim", key);
            if emptied {
                t.notify(shared, GENERIC, "del", key);
            }
            c.out.ok()
        }
    }
}

/// LREM key count element.
pub(super) fn lrem_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    // Any long, as Redis 7.0.15 parses it (i64::MIN removes every match from the tail).
    let Some(count) = parse_i64(args.get(2)) else {
        return c.out.error(ERR_NOT_INT);
    };
    let key = args.get(1);
    let fill = shared.store.encoding_limits().list_shape();
    let t = Target::of(c);
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(t.ns, key, Kind::List, false, now, |o| {
        let l = list_mut(o);
        let n = l.remove(args.get(3), count, fill);
        ((n, l.is_empty()), n > 0)
    });
    drop(shard);
    match r {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.int(0),
        Ok(Some((n, emptied))) => {
            if n > 0 {
                t.notify(shared, LIST, "lrem", key);
                if emptied {
                    t.notify(shared, GENERIC, "del", key);
                }
            }
            c.out.int(n as i64)
        }
    }
}

// ----- pops and moves (shared with the blocked clients' service) -----

/// Pops up to `count` elements at `end` of `key`: None if the key is missing (or the
/// list empty), the elements otherwise; notifies as listElementsRemoved.
fn pop_elements(
    shared: &Shared,
    t: Target,
    key: &[u8],
    end: End,
    count: usize,
    now: u64,
) -> Result<Option<Vec<Vec<u8>>>, WrongType> {
    let mut shard = shared.store.lock_key(key);
    let r = shard.write_object_if(t.ns, key, Kind::List, false, now, |o| {
        let l = list_mut(o);
        let mut out = Vec::with_capacity(count.min(l.len()));
        while out.len() < count {
            match l.pop(end) {
                Some(v) => out.push(v),
                None => break,
            }
        }
        let changed = !out.is_empty();
        ((out, l.is_empty()), changed)
    });
    drop(shard);
    match r? {
        Some((elems, emptied)) if !elems.is_empty() => {
            t.notify(shared, LIST, pop_event(end), key);
            if emptied {
                t.notify(shared, GENERIC, "del", key);
            }
            Ok(Some(elems))
        }
        _ => Ok(None),
    }
}

/// Moves one element from `src`'s `from` end to `dst`'s `to` end (lmoveGenericCommand):
/// None if `src` is missing; WRONGTYPE if either key holds another type (nothing moves).
fn move_element(
    shared: &Shared,
    t: Target,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
    now: u64,
) -> Result<Option<Vec<u8>>, WrongType> {
    let fill = shared.store.encoding_limits().list_shape();
    let mut lock = shared.store.lock_keys(&[src, dst]);
    match lock.shard_for(src).kind(t.ns, src, now) {
        None => return Ok(None),
        Some(Kind::List) => {}
        Some(_) => return Err(WrongType),
    }
    if src == dst {
        // One write: a one-element list rotates without ever being empty (deleted).
        let v = lock
            .shard_for(src)
            .write_object(t.ns, src, Kind::List, false, now, |o| {
                let l = list_mut(o);
                let v = l.pop(from);
                if let Some(v) = &v {
                    l.push(to, v, fill);
                }
                v
            })?
            .flatten();
        drop(lock);
        if v.is_some() {
            t.notify(shared, LIST, push_event(to), dst);
            t.notify(shared, LIST, pop_event(from), src);
        }
        return Ok(v);
    }
    if lock
        .shard_for(dst)
        .kind(t.ns, dst, now)
        .is_some_and(|k| k != Kind::List)
    {
        return Err(WrongType);
    }
    let popped = lock
        .shard_for(src)
        .write_object(t.ns, src, Kind::List, false, now, |o| {
            let l = list_mut(o);
            (l.pop(from), l.is_empty())
        })?;
    let Some((Some(v), emptied)) = popped else {
        return Ok(None);
    };
    lock.shard_for(dst)
        .write_object(t.ns, dst, Kind::List, true, now, |o| {
            list_mut(o).push(to, &v, fill)
        })?;
    drop(lock);
    t.notify(shared, LIST, push_event(to), dst);
    t.signal(shared, dst);
    t.notify(shared, LIST, pop_event(from), src);
    if emptied {
        t.notify(shared, GENERIC, "del", src);
    }
    Ok(Some(v))
}

/// LPOP / RPOP key [count].
pub(super) fn pop_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let end = if spec.cmd == Cmd::LPop {
        End::Head
    } else {
        End::Tail
    };
    if args.len() > 3 {
        return super::arity_error(&mut c.out, spec.name);
    }
    let count = if args.len() == 3 {
        match parse_positive(args.get(2), None) {
            Ok(n) => Some(n as usize),
            Err(e) => return c.out.error(&e),
        }
    } else {
        None
    };
    let key = args.get(1);
    let t = Target::of(c);
    if count == Some(0) {
        // The fast exit, after the lookup and type check.
        let mut shard = shared.store.lock_key(key);
        return match shard.read_object(t.ns, key, Kind::List, now) {
            Err(_) => c.out.error(ERR_WRONGTYPE),
            Ok(None) => c.out.null_array(),
            Ok(Some(_)) => c.out.array(0),
        };
    }
    match pop_elements(shared, t, key, end, count.unwrap_or(1), now) {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) if count.is_some() => c.out.null_array(),
        Ok(None) => c.out.null(),
        Ok(Some(elems)) if count.is_some() => {
            c.out.array(elems.len());
            for v in &elems {
                c.out.bulk(v);
            }
        }
        Ok(Some(elems)) => c.out.bulk(&elems[0]),
    }
}

/// LMOVE src dst LEFT|RIGHT LEFT|RIGHT, RPOPLPUSH src dst.
pub(super) fn lmove_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let (from, to) = if spec.cmd == Cmd::RPopLPush {
        (End::Tail, End::Head)
    } else {
        match (end_of(args.get(3)), end_of(args.get(4))) {
            (Some(f), Some(t)) => (f, t),
            _ => return c.out.error(ERR_SYNTAX),
        }
    };
    match move_element(
        shared,
        Target::of(c),
        args.get(1),
        args.get(2),
        from,
        to,
        now,
    ) {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.null(),
        Ok(Some(v)) => c.out.bulk(&v),
    }
}

/// LMPOP's and BLMPOP's arguments from `numkeys_idx`: (keys, end, count).
fn parse_mpop(args: Args<'_>, numkeys_idx: usize) -> Result<(Vec<&[u8]>, End, usize), String> {
    super::parse_mpop_args(args, numkeys_idx, end_of)
}

/// A key and the elements popped from it.
type KeyElements = (Vec<u8>, Vec<Vec<u8>>);

/// The first of `keys` that holds a list gives up to `count` elements (mpopGenericCommand
/// and blockingPopGenericCommand's scan): Ok(None) if none holds one; WRONGTYPE stops
/// the scan at the first key of another type.
fn pop_first(
    shared: &Shared,
    t: Target,
    keys: &[&[u8]],
    end: End,
    count: usize,
    now: u64,
) -> Result<Option<KeyElements>, WrongType> {
    for key in keys {
        if let Some(elems) = pop_elements(shared, t, key, end, count, now)? {
            return Ok(Some((key.to_vec(), elems)));
        }
    }
    Ok(None)
}

fn reply_key_elements(out: &mut Out, key: &[u8], elems: &[Vec<u8>]) {
    out.array(2);
    out.bulk(key);
    out.array(elems.len());
    for v in elems {
        out.bulk(v);
    }
}

/// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count].
pub(super) fn lmpop_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let (keys, end, count) = match parse_mpop(args, 1) {
        Ok(p) => p,
        Err(e) => return c.out.error(&e),
    };
    match pop_first(shared, Target::of(c), &keys, end, count, now) {
        Err(_) => c.out.error(ERR_WRONGTYPE),
        Ok(None) => c.out.null_array(),
        Ok(Some((key, elems))) => reply_key_elements(&mut c.out, &key, &elems),
    }
}

// ----- blocking -----

/// The commands that may block (and so run with `Client::may_block` at top level).
pub(super) fn is_blocking(cmd: Cmd) -> bool {
    matches!(
        cmd,
        Cmd::BLPop
            | Cmd::BRPop
            | Cmd::BLMove
            | Cmd::BRPopLPush
            | Cmd::BLMPop
            | Cmd::BZPopMin
            | Cmd::BZPopMax
            | Cmd::BZMPop
            | Cmd::XRead
            | Cmd::XReadGroup
    )
}

/// A blocking command's operation on `keys` (the first that has an element serves):
/// its reply written to `out` and true, or false with nothing written if no key has an
/// element. WRONGTYPE as the command's scan meets it (a source, or BLMOVE's destination).
fn run_block_op(
    shared: &Shared,
    t: Target,
    op: &BlockOp,
    keys: &[&[u8]],
    out: &mut Out,
    now: u64,
) -> Result<bool, WrongType> {
    match op {
        BlockOp::Pop { end, count } => {
            let Some((key, elems)) = pop_first(shared, t, keys, *end, count.unwrap_or(1), now)?
            else {
                return Ok(false);
            };
            match count {
                Some(_) => reply_key_elements(out, &key, &elems),
                None => {
                    out.array(2);
                    out.bulk(&key);
                    out.bulk(&elems[0]);
                }
            }
        }
        BlockOp::Move { dst, from, to } => {
            let Some(v) = move_element(shared, t, keys[0], dst, *from, *to, now)? else {
                return Ok(false);
            };
            out.bulk(&v);
        }
        BlockOp::Stream(_) => unreachable!("streams block in commands::stream"),
        BlockOp::ZPop { max, count } => {
            let Some((key, items)) =
                super::zset::pop_first(shared, t, keys, *max, count.unwrap_or(1), now)?
            else {
                return Ok(false);
            };
            let shape = match count {
                Some(_) => super::zset::PopReply::KeyPairs,
                None => super::zset::PopReply::KeyMemberScore,
            };
            super::zset::reply_pop(out, shape, &key, &items);
        }
    }
    Ok(true)
}

/// Runs a blocked client's operation on the one key that readied (serveClientBlockedOnList):
/// Ok(None) if the key has nothing for it (missing, empty, or not a list);
/// Err(WrongType) only for a BLMOVE whose destination holds another type, which ends
/// that client's wait with the error (as Redis answers it).
fn serve_one(
    shared: &Shared,
    w: &Waiter,
    key: &[u8],
    now: u64,
) -> Result<Option<Vec<u8>>, WrongType> {
    let t = Target {
        tenant: w.tenant,
        db: w.db,
        ns: shared.store.physical(Ns::new(w.tenant, w.db)),
    };
    // A key that holds another type now is not served (the waiter stays blocked).
    if shared.store.lock_key(key).kind(t.ns, key, now) != Some(w.op.kind()) {
        return Ok(None);
    }
    let mut out = Out::new();
    out.resp3 = w.resp3;
    match run_block_op(shared, t, &w.op, &[key], &mut out, now) {
        Ok(true) => Ok(Some(out.buf.to_vec())),
        Ok(false) => Ok(None),
        // A source whose type changed since the check above is not served either.
        Err(_) if !matches!(w.op, BlockOp::Move { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// handleClientsBlockedOnKeys: serves the waiters of every key signalled ready, first
/// blocked first, until each key has no element left for them or no waiter; keys
/// readied meanwhile (a BLMOVE's destination) are served in the same call.
pub(crate) fn serve_ready(shared: &Shared) {
    // Under the gate like any command; while a script is busy the keys stay ready for
    // the next command's end (a busy script may run for long).
    let Some(_hold) = shared.gate.shared_unless(|| shared.scripting.busy()) else {
        return;
    };
    loop {
        let ready = shared.blocking.take_ready();
        if ready.is_empty() {
            return;
        }
        let now = crate::state::now_ms();
        let mut reg = shared.blocking.lock();
        for (bk, signalled) in ready {
            for w in reg.waiters(&bk) {
                if let BlockOp::Stream(wait) = &w.op {
                    // A stream read takes nothing away from other readers: every waiter
                    // of the key is tried.
                    let r =
                        super::stream::serve_stream_waiter(shared, &w, wait, &bk.2, signalled, now);
                    match r {
                        Ok(Some(reply)) => {
                            shared.blocking.finish(&mut reg, &w, Outcome::Served(reply));
                        }
                        Ok(None) => {}
                        Err(e) => {
                            shared.blocking.finish(&mut reg, &w, Outcome::Failed(e));
                        }
                    }
                    continue;
                }
                if !signalled {
                    continue;
                }
                match serve_one(shared, &w, &bk.2, now) {
                    Ok(Some(reply)) => {
                        shared.blocking.finish(&mut reg, &w, Outcome::Served(reply));
                    }
                    // Nothing left (another waiter took it, or the key is gone / not a
                    // list any more): the rest of this key's waiters stay blocked.
                    Ok(None) => break,
                    Err(_) => {
                        shared
                            .blocking
                            .finish(&mut reg, &w, Outcome::Failed(ERR_WRONGTYPE.into()));
                    }
                }
            }
        }
        super::stream::unwatch_idle_group_keys(shared, &mut reg);
    }
}

/// BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP: served at once if a key has an element;
/// otherwise, at the top level of a connection, the client blocks (`c.blocked`, which
/// the connection loop waits on); inside MULTI/EXEC or a script it answers as a
/// timeout, as Redis does for CLIENT_DENY_BLOCKING.
pub(super) fn blocking_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    // Arguments, in the commands' own order.
    let (keys, op, timeout): (Vec<&[u8]>, BlockOp, &[u8]) = match spec.cmd {
        Cmd::BLPop | Cmd::BRPop => {
            let end = if spec.cmd == Cmd::BLPop {
                End::Head
            } else {
                End::Tail
            };
            let keys = (1..args.len() - 1).map(|i| args.get(i)).collect();
            (
                keys,
                BlockOp::Pop { end, count: None },
                args.get(args.len() - 1),
            )
        }
        Cmd::BLMove | Cmd::BRPopLPush => {
            let (from, to, timeout) = if spec.cmd == Cmd::BRPopLPush {
                (End::Tail, End::Head, args.get(3))
            } else {
                match (end_of(args.get(3)), end_of(args.get(4))) {
                    (Some(f), Some(t)) => (f, t, args.get(5)),
                    _ => return c.out.error(ERR_SYNTAX),
                }
            };
            let op = BlockOp::Move {
                dst: args.get(2).to_vec(),
                from,
                to,
            };
            (vec![args.get(1)], op, timeout)
        }
        Cmd::BZPopMin | Cmd::BZPopMax => {
            let keys = (1..args.len() - 1).map(|i| args.get(i)).collect();
            let op = BlockOp::ZPop {
                max: spec.cmd == Cmd::BZPopMax,
                count: None,
            };
            (keys, op, args.get(args.len() - 1))
        }
        Cmd::BZMPop => {
            // BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]
            let (keys, max, count) = match super::zset::parse_zmpop(args, 2) {
                Ok(p) => p,
                Err(e) => return c.out.error(&e),
            };
            let op = BlockOp::ZPop {
                max,
                count: Some(count),
            };
            (keys, op, args.get(1))
        }
        _ => {
            // BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]
            let (keys, end, count) = match parse_mpop(args, 2) {
                Ok(p) => p,
                Err(e) => return c.out.error(&e),
            };
            let op = BlockOp::Pop {
                end,
                count: Some(count),
            };
            (keys, op, args.get(1))
        }
    };
    let timeout_ms = match parse_timeout(timeout) {
        Ok(ms) => ms,
        Err(e) => return c.out.error(e),
    };
    let t = Target::of(c);
    let blocking = &shared.blocking;
    let mut reg = blocking.lock();
    blocking.begin_check();
    match run_block_op(shared, t, &op, &keys, &mut c.out, now) {
        Err(_) => {
            blocking.end_check();
            c.out.error(ERR_WRONGTYPE)
        }
        Ok(true) => blocking.end_check(),
        Ok(false) if !c.may_block => {
            blocking.end_check();
            // blmoveGenericCommand answers a null bulk, the pops a null array.
            match op {
                BlockOp::Move { .. } => c.out.null(),
                BlockOp::Pop { .. } | BlockOp::ZPop { .. } | BlockOp::Stream(_) => {
                    c.out.null_array()
                }
            }
        }
        Ok(false) => {
            let keys = keys.iter().map(|k| k.to_vec()).collect();
            let w = Waiter::new(c.meta.id, c.tenant, c.db, keys, op, c.out.resp3);
            blocking.block(&mut reg, w.clone());
            c.blocked = Some(crate::blocking::Blocked {
                waiter: w,
                deadline_ms: (timeout_ms > 0).then(|| now.saturating_add(timeout_ms)),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_resolve_as_redis() {
        assert_eq!(resolve_range(0, -1, 3), Some((0, 3)));
        assert_eq!(resolve_range(-100, 100, 3), Some((0, 3)));
        assert_eq!(resolve_range(2, 1, 3), None);
        assert_eq!(resolve_range(5, 10, 3), None);
        assert_eq!(resolve_range(-1, -1, 3), Some((2, 1)));
        assert_eq!(resolve_range(0, -4, 3), None);
        assert_eq!(resolve_range(i64::MIN, i64::MAX, 3), Some((0, 3)));
    }

    #[test]
    fn timeouts_parse_as_redis() {
        assert_eq!(parse_timeout(b"0"), Ok(0));
        assert_eq!(parse_timeout(b"0.1"), Ok(100));
        // redis-server 7.0.15 times out BLPOP k 0.0001 at once (not forever).
        assert_eq!(parse_timeout(b"0.001"), Ok(1));
        assert_eq!(parse_timeout(b"0.0001"), Ok(1));
        assert_eq!(parse_timeout(b"0x10"), Ok(16_000));
        assert_eq!(parse_timeout(b"-1"), Err("ERR timeout is negative"));
        assert_eq!(parse_timeout(b"inf"), Err("ERR timeout is negative"));
        assert_eq!(
            parse_timeout(b"abc"),
            Err("ERR timeout is not a float or out of range")
        );
        assert_eq!(
            parse_timeout(b""),
            Err("ERR timeout is not a float or out of range")
        );
    }
}
