//! SCAN, HSCAN and SSCAN: one cursor parser, one option parser and one reply, as Redis
//! keeps them in db.c's scanGenericCommand for the keyspace and for every collection.

use super::{eq, Client, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use crate::resp::{parse_i64, Args, Out};
use crate::state::Shared;
use augur_store::{glob_match, Kind};
use std::borrow::Cow;

/// `[MATCH pattern] [COUNT count] [TYPE type]` of a scan.
struct ScanOptions<'a> {
    /// None for no MATCH or `MATCH *` (nothing to test per item).
    pattern: Option<&'a [u8]>,
    count: usize,
    /// SCAN's TYPE filter; HSCAN and SSCAN have none.
    type_filter: Option<&'a [u8]>,
}

impl ScanOptions<'_> {
    fn matches(&self, item: &[u8]) -> bool {
        self.pattern.is_none_or(|p| glob_match(p, item))
    }
}

/// Parses a cursor (db.c parseScanCursorOrReply).
fn parse_cursor(out: &mut Out, arg: &[u8]) -> Option<u64> {
    let c = strtoul_cursor(arg);
    if c.is_none() {
        out.error("ERR invalid cursor");
    }
    c
}

/// parseScanCursorOrReply: C's `strtoul(s, &end, 10)` over the text as a C string (up
/// to a NUL), refused if it starts with a space, stops before the end or overflows. So
/// "" is 0, "+5" is 5 and "-1" is 2^64 - 1 (strtoul negates), as in Redis.
fn strtoul_cursor(arg: &[u8]) -> Option<u64> {
    let s = arg.split(|&b| b == 0).next().unwrap_or_default();
    if s.first().is_some_and(|b| b" \t\n\x0b\x0c\r".contains(b)) {
        return None;
    }
    if s.is_empty() {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Parses the options from `args[from..]`; TYPE only where `with_type` (SCAN: Redis
/// answers a syntax error to TYPE on a collection's scan).
fn parse_options<'a>(
    out: &mut Out,
    args: Args<'a>,
    from: usize,
    with_type: bool,
) -> Option<ScanOptions<'a>> {
    let mut opts = ScanOptions {
        pattern: None,
        count: 10,
        type_filter: None,
    };
    let mut i = from;
    while i < args.len() {
        let opt = args.get(i);
        let has_value = i + 1 < args.len();
        if eq(opt, "count") && has_value {
            match parse_i64(args.get(i + 1)) {
                None => {
                    out.error(ERR_NOT_INT);
                    return None;
                }
                Some(n) if n < 1 => {
                    out.error(ERR_SYNTAX);
                    return None;
                }
                Some(n) => opts.count = n.min(1 << 20) as usize,
            }
        } else if eq(opt, "match") && has_value {
            let p = args.get(i + 1);
            // "*" matches everything: skip the per-item matching.
            opts.pattern = if p == b"*" { None } else { Some(p) };
        } else if with_type && eq(opt, "type") && has_value {
            opts.type_filter = Some(args.get(i + 1));
        } else {
            out.error(ERR_SYNTAX);
            return None;
        }
        i += 2;
    }
    Some(opts)
}

/// Writes a scan reply: the next cursor, then the items.
fn scan_reply<T: AsRef<[u8]>>(out: &mut Out, cursor: u64, items: &[T]) {
    out.array(2);
    out.bulk(cursor.to_string().as_bytes());
    out.array(items.len());
    for i in items {
        out.bulk(i.as_ref());
    }
}

/// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type] over the caller's database.
pub(super) fn scan_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let Some(cursor) = parse_cursor(&mut c.out, args.get(1)) else {
        return;
    };
    let Some(opts) = parse_options(&mut c.out, args, 2, true) else {
        return;
    };
    let mut page = shared
        .store
        .scan(c.ns(), cursor, opts.count, opts.pattern, now);
    if let Some(t) = opts.type_filter {
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
    scan_reply(&mut c.out, page.next_cursor, &page.keys);
}

/// HSCAN and SSCAN key cursor [MATCH pattern] [COUNT count]: the cursor is checked
/// first, then the key's type, then the options, in Redis's order. MATCH applies to a
/// hash's fields (each reported with its value) and to a set's members.
pub(super) fn collection_scan_command(
    shared: &Shared,
    c: &mut Client,
    args: Args<'_>,
    kind: Kind,
    now: u64,
) {
    let Some(cursor) = parse_cursor(&mut c.out, args.get(2)) else {
        return;
    };
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let o = match shard.read_object(c.ns(), key, kind, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(None) => return scan_reply::<&[u8]>(&mut c.out, 0, &[]),
        Ok(Some(o)) => o,
    };
    let Some(opts) = parse_options(&mut c.out, args, 3, false) else {
        return;
    };
    let mut items: Vec<Cow<'_, [u8]>> = Vec::new();
    let next = match (o.as_hash(), o.as_zset()) {
        (Some(h), _) => h.scan(cursor, opts.count, |f, v| {
            if opts.matches(f) {
                items.push(Cow::Borrowed(f));
                items.push(Cow::Borrowed(v));
            }
        }),
        // Scores as Redis's scan gives them: the listpack's text or `%.17Lg`, which for
        // a double are both `%.17g`.
        (_, Some(z)) => z.scan(cursor, opts.count, |m, score| {
            if opts.matches(m) {
                items.push(Cow::Borrowed(m));
                items.push(Cow::Owned(
                    crate::scripting::fmt::fmt_g(score, 17).into_bytes(),
                ));
            }
        }),
        _ => {
            let s = o.as_set().expect("Kind::Set lookups return sets");
            s.scan(cursor, opts.count, |m| {
                if opts.matches(&m) {
                    items.push(m);
                }
            })
        }
    };
    scan_reply(&mut c.out, next, &items);
}

#[cfg(test)]
mod tests {
    use super::strtoul_cursor;

    #[test]
    fn cursors_parse_as_strtoul() {
        assert_eq!(strtoul_cursor(b"0"), Some(0));
        assert_eq!(strtoul_cursor(b""), Some(0));
        assert_eq!(strtoul_cursor(b"-0"), Some(0));
        assert_eq!(strtoul_cursor(b"+7"), Some(7));
        assert_eq!(strtoul_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(strtoul_cursor(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(strtoul_cursor(b"3\x001"), Some(3));
        for bad in [
            &b" 1"[..],
            b"1 ",
            b"-",
            b"+",
            b"0x1",
            b"18446744073709551616",
            b"a",
        ] {
            assert_eq!(strtoul_cursor(bad), None, "{bad:?}");
        }
    }
}
