//! SORT and SORT_RO over lists, sets and sorted sets, as Redis 7.0's sort.c: BY (a key
//! pattern, a hash field `pattern->field`, or a pattern without `*` for no sorting),
//! LIMIT, GET (`#` is the element itself), ASC/DESC, ALPHA and (SORT only) STORE. A
//! sorted set's elements are its members (its scores are not used), except that with no
//! sorting they come in score order.
//!
//! # Atomicity
//!
//! BY and GET read keys that are only known once the elements are, so the shards
//! cannot all be locked up front as the multi-key commands do. SORT therefore runs
//! with the command gate held exclusively (`commands::run`), as SWAPDB does: no other
//! command runs meanwhile, which is what Redis's single thread gives its SORT. SORT is
//! rare in a cache's traffic; the plain commands never pay for it.

use super::{Client, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use crate::cmdtable::{Cmd, CommandSpec};
use crate::notify::flags::{GENERIC, LIST};
use crate::notify::notify;
use crate::resp::{parse_i64, Args};
use crate::state::Shared;
use augur_store::{End, Kind, Ns, Object};
use std::borrow::Cow;
use std::cmp::Ordering;

const ERR_SCORES: &str = "ERR One or more scores can't be converted into double";

/// One element with what it is sorted by.
struct Sortable {
    elem: Vec<u8>,
    /// The numeric weight (numeric sorts).
    score: f64,
    /// The BY value of an ALPHA sort (None: no such key, sorts first).
    by: Option<Vec<u8>>,
}

/// lookupKeyByPattern: `#` is the element; otherwise the first `*` of the pattern is
/// replaced by the element, and `->field` after it names a hash field. None where
/// Redis answers nothing (no `*`, no key, another type, no field).
fn lookup_by_pattern(
    shared: &Shared,
    ns: Ns,
    pattern: &[u8],
    elem: &[u8],
    now: u64,
) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(elem.to_vec());
    }
    // C strings: the pattern ends at a NUL.
    let pattern = &pattern[..pattern
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(pattern.len())];
    let star = pattern.iter().position(|&b| b == b'*')?;
    let after = &pattern[star + 1..];
    let field = after
        .windows(2)
        .position(|w| w == b"->")
        .filter(|&i| i + 2 < after.len())
        .map(|i| (i, &after[i + 2..]));
    let postfix = match field {
        Some((i, _)) => &after[..i],
        None => after,
    };
    let mut key = Vec::with_capacity(pattern.len() + elem.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(elem);
    key.extend_from_slice(postfix);
    let mut shard = shared.store.lock_key(&key);
    match field {
        Some((_, f)) => match shard.read_object(ns, &key, Kind::Hash, now) {
            Ok(Some(o)) => o.as_hash().and_then(|h| h.get(f)).map(<[u8]>::to_vec),
            _ => None,
        },
        None => match shard.get(ns, &key, now) {
            Ok(Some(v)) => Some(v.to_vec()),
            _ => None,
        },
    }
}

/// sort.c's "destructively convert encoded sorted sets for SORT": the sorted set at
/// `key` becomes skiplist-encoded if it is a listpack, whether SORT or SORT_RO, and
/// before the command can fail (OBJECT ENCODING shows it). Not a change of the value:
/// WATCH is not told.
fn to_skiplist(shard: &mut augur_store::Shard, ns: Ns, key: &[u8], now: u64) {
    let _ = shard.write_object_if(ns, key, Kind::ZSet, false, now, |o| {
        if let Some(z) = o.as_zset_mut() {
            if z.encoding() == "listpack" {
                // A skiplist stays one as members are added.
                let lim = augur_store::EncodingLimits::default();
                let mut s = augur_store::ZSet::new_skiplist();
                for (m, score) in z.iter() {
                    s.insert(m, score, &lim);
                }
                *z = s;
            }
        }
        ((), false)
    });
}

/// SORT / SORT_RO.
pub(super) fn sort_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let readonly = spec.cmd == Cmd::SortRo;
    let (mut desc, mut alpha, mut dontsort) = (false, false, false);
    let (mut limit_start, mut limit_count) = (0i64, -1i64);
    let mut store: Option<&[u8]> = None;
    let mut sortby: Option<&[u8]> = None;
    let mut gets: Vec<&[u8]> = Vec::new();
    // BY with a pattern and GET read keys that no key spec names: only a user who may
    // read every key may use them (sort.c, user_has_full_key_access).
    let full_key_access = c.perms.unrestricted
        || crate::acl::request_id(spec.name, args)
            .is_some_and(|id| c.perms.reads_every_key(&crate::acl::Request { id, args }));
    let mut j = 2;
    while j < args.len() {
        let a = args.get(j);
        let left = args.len() - j - 1;
        if a.eq_ignore_ascii_case(b"asc") {
            desc = false;
        } else if a.eq_ignore_ascii_case(b"desc") {
            desc = true;
        } else if a.eq_ignore_ascii_case(b"alpha") {
            alpha = true;
        } else if a.eq_ignore_ascii_case(b"limit") && left >= 2 {
            let (Some(s), Some(n)) = (parse_i64(args.get(j + 1)), parse_i64(args.get(j + 2)))
            else {
                return c.out.error(ERR_NOT_INT);
            };
            (limit_start, limit_count) = (s, n);
            j += 2;
        } else if a.eq_ignore_ascii_case(b"store") && left >= 1 && !readonly {
            store = Some(args.get(j + 1));
            j += 1;
        } else if a.eq_ignore_ascii_case(b"by") && left >= 1 {
            let p = args.get(j + 1);
            // A pattern without '*' names one key for every element: nothing to sort by.
            if !p.contains(&b'*') {
                dontsort = true;
            } else if !full_key_access {
                return c
                    .out
                    .error("ERR BY option of SORT denied due to insufficient ACL permissions.");
            }
            sortby = Some(p);
            j += 1;
        } else if a.eq_ignore_ascii_case(b"get") && left >= 1 {
            if !full_key_access {
                return c
                    .out
                    .error("ERR GET option of SORT denied due to insufficient ACL permissions.");
            }
            gets.push(args.get(j + 1));
            j += 1;
        } else {
            return c.out.error(ERR_SYNTAX);
        }
        j += 1;
    }

    let ns = c.ns();
    let key = args.get(1);
    let (kind, mut elems) = {
        let mut shard = shared.store.lock_key(key);
        match shard.kind(ns, key, now) {
            None => {
                // Counted as the miss lookupKeyRead counts.
                let _ = shard.get(ns, key, now);
                (Kind::List, Vec::new())
            }
            Some(kind @ (Kind::List | Kind::Set | Kind::ZSet)) => {
                let elems = match shard.read_object(ns, key, kind, now) {
                    Ok(Some(Object::List(l))) => l.iter().map(Cow::into_owned).collect(),
                    Ok(Some(Object::Set(s))) => s.iter().map(Cow::into_owned).collect(),
                    Ok(Some(Object::ZSet(z))) => z.iter().map(|(m, _)| m.to_vec()).collect(),
                    _ => Vec::new(),
                };
                if kind == Kind::ZSet {
                    to_skiplist(&mut shard, ns, key, now);
                }
                (kind, elems)
            }
            Some(_) => return c.out.error(ERR_WRONGTYPE),
        }
    };
    // A set has no order of its own: unsorted output would differ between runs (and
    // between a script and its replicas), so with STORE or in a script it is sorted
    // alphabetically instead (sort.c).
    if dontsort && kind == Kind::Set && (store.is_some() || c.in_script) {
        dontsort = false;
        alpha = true;
        sortby = None;
    }

    let len = elems.len() as i64;
    let mut start = limit_start.max(0);
    let mut end = if limit_count < 0 {
        len - 1
    } else {
        start.saturating_add(limit_count).saturating_sub(1)
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }

    if (kind == Kind::List || kind == Kind::ZSet) && dontsort {
        // The list's own order, or the sorted set's by score, reversed by DESC (LIMIT's
        // range is cut below: sort.c reads the range from the head, or with DESC from
        // the tail, which is the same elements).
        if desc {
            elems.reverse();
        }
    }
    let mut vector: Vec<Sortable> = elems
        .into_iter()
        .map(|elem| Sortable {
            elem,
            score: 0.0,
            by: None,
        })
        .collect();

    if !dontsort {
        let mut conversion_error = false;
        for s in &mut vector {
            let byval = match sortby {
                Some(p) => match lookup_by_pattern(shared, ns, p, &s.elem, now) {
                    Some(v) => Some(v),
                    None => continue,
                },
                None => None,
            };
            if alpha {
                if sortby.is_some() {
                    s.by = byval;
                }
            } else {
                let text = byval.as_deref().unwrap_or(&s.elem);
                match crate::long_double::strtod_whole(text) {
                    Some(v) => s.score = v,
                    None => conversion_error = true,
                }
            }
        }
        if conversion_error {
            return c.out.error(ERR_SCORES);
        }
        let by_pattern = sortby.is_some();
        let cmp = |a: &Sortable, b: &Sortable| -> Ordering {
            let o = if !alpha {
                a.score
                    .partial_cmp(&b.score)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| a.elem.cmp(&b.elem))
            } else if by_pattern {
                match (&a.by, &b.by) {
                    (None, None) => Ordering::Equal,
                    (None, _) => Ordering::Less,
                    (_, None) => Ordering::Greater,
                    (Some(x), Some(y)) => x.cmp(y),
                }
            } else {
                a.elem.cmp(&b.elem)
            };
            if desc {
                o.reverse()
            } else {
                o
            }
        };
        vector.sort_by(cmp);
    }

    let range: &[Sortable] = if end >= start && start >= 0 {
        &vector[start as usize..=end as usize]
    } else {
        &[]
    };
    let per = gets.len().max(1);
    match store {
        None => {
            c.out.array(range.len() * per);
            for s in range {
                if gets.is_empty() {
                    c.out.bulk(&s.elem);
                }
                for g in &gets {
                    match lookup_by_pattern(shared, ns, g, &s.elem, now) {
                        Some(v) => c.out.bulk(&v),
                        None => c.out.null(),
                    }
                }
            }
        }
        Some(dst) => {
            let mut out: Vec<Vec<u8>> = Vec::with_capacity(range.len() * per);
            for s in range {
                if gets.is_empty() {
                    out.push(s.elem.clone());
                }
                for g in &gets {
                    // A GET of nothing stores the empty string.
                    out.push(lookup_by_pattern(shared, ns, g, &s.elem, now).unwrap_or_default());
                }
            }
            let fill = shared.store.encoding_limits().list_shape();
            let mut shard = shared.store.lock_key(dst);
            let existed = shard.delete(ns, dst, now);
            if out.is_empty() {
                drop(shard);
                if existed {
                    notify(shared, c, GENERIC, "del", dst);
                }
            } else {
                let _ = shard.write_object(ns, dst, Kind::List, true, now, |o| {
                    let l = o.as_list_mut().expect("a new list");
                    for v in &out {
                        l.push(End::Tail, v, fill);
                    }
                });
                drop(shard);
                notify(shared, c, LIST, "sortstore", dst);
                shared.blocking.signal(c.tenant, c.db, dst);
            }
            c.out.int(out.len() as i64);
        }
    }
}
