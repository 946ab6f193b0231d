//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST (Redis 7.0's
//! hyperloglog.c). An HLL is an ordinary string value in Redis's byte format
//! ([`crate::hll`]), so GET, SET, DUMP/RESTORE, SETRANGE and APPEND see and change it
//! like any string; these commands validate it before every use and answer Redis's
//! WRONGTYPE / INVALIDOBJ errors for a string that is not (or no longer) a valid one.
//!
//! Writes follow hyperloglog.c: a dense PFADD edits the registers in place under the
//! shard lock ([`augur_store::Shard::update`], the value keeps its length), a sparse one
//! rewrites the (at most `hll-sparse-max-bytes`) value. A single-key PFCOUNT stores
//! the cardinality it computed in the header, which is a modification of the key as in
//! Redis (WATCH sees it), although the command is flagged readonly (and MAY_REPLICATE).
//!
//! One difference: PFDEBUG GETREG / TODENSE store the converted value with the store's
//! ordinary write, which a WATCH of the key sees; Redis only bumps its dirty counter.

use super::{c_str, write_error, Client, ERR_WRONGTYPE};
use crate::hll::{self, DENSE, HDR_SIZE, REGISTERS, SPARSE};
use crate::notify::flags::STRING;
use crate::notify::notify;
use crate::resp::Args;
use crate::state::Shared;
use augur_store::SetTtl;
use std::sync::atomic::Ordering::Relaxed;

const ERR_NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const ERR_INVALID: &str = "INVALIDOBJ Corrupted HLL object detected";

fn max_bytes(shared: &Shared) -> u64 {
    shared.hll_sparse_max_bytes.load(Relaxed)
}

/// PFADD key [element ...]: 1 if the key was created or a register changed, else 0.
pub(super) fn pfadd_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let key = args.get(1);
    let max = max_bytes(shared);
    let elems = args.range(2, args.len());
    let ns = c.ns();
    let mut shard = shared.store.lock_key(key);
    // lookupKeyWrite: no hit/miss statistics.
    let existing = match shard.peek(ns, key, now) {
        Ok(v) => v,
        Err(_) => return c.out.error(ERR_WRONGTYPE),
    };
    let (value, ttl) = match existing {
        None => {
            let mut v = hll::new_sparse();
            let mut ghost = 0;
            for e in elems.iter() {
                // A fresh sparse value is never corrupt.
                let _ = hll::add(&mut v, e, max, &mut ghost);
            }
            hll::invalidate_cache(&mut v);
            (v, SetTtl::Clear)
        }
        Some(v) => match hll::validate(v) {
            None => return c.out.error(ERR_NOT_HLL),
            Some(DENSE) => {
                // Registers only grow: the elements that raise one now are all the
                // changes, and none means no write at all (Redis signals nothing).
                let regs = &v[HDR_SIZE..];
                let pending: Vec<(usize, u8)> = elems
                    .iter()
                    .map(hll::pat_len)
                    .filter(|&(i, n)| n > hll::dense_get(regs, i))
                    .collect();
                if pending.is_empty() {
                    return c.out.int(0);
                }
                let r = shard.update(
                    ns,
                    key,
                    now,
                    |len| len,
                    |buf, _| {
                        for (i, n) in pending {
                            hll::dense_set(&mut buf[HDR_SIZE..], i, n);
                        }
                        hll::invalidate_cache(buf);
                    },
                );
                drop(shard);
                return match r {
                    Ok(()) => {
                        notify(shared, c, STRING, "pfadd", key);
                        c.out.int(1)
                    }
                    Err(e) => write_error(&mut c.out, e),
                };
            }
            Some(_) => {
                let mut w = v.to_vec();
                let mut updated = false;
                let mut ghost = 0;
                for e in elems.iter() {
                    match hll::add(&mut w, e, max, &mut ghost) {
                        Ok(changed) => updated |= changed,
                        Err(hll::Invalid) => {
                            // Redis edits the value in place: the registers set before
                            // the corrupt part was met stay set, without a signal.
                            if updated {
                                let _ = shard.set(ns, key, &w, SetTtl::Keep, now);
                                shard.mark_raw(ns, key, now);
                            }
                            return c.out.error(ERR_INVALID);
                        }
                    }
                }
                if !updated {
                    return c.out.int(0);
                }
                hll::invalidate_cache(&mut w);
                (w, SetTtl::Keep)
            }
        },
    };
    let r = shard.set(ns, key, &value, ttl, now);
    if r.is_ok() {
        shard.mark_raw(ns, key, now);
    }
    drop(shard);
    match r {
        Ok(()) => {
            notify(shared, c, STRING, "pfadd", key);
            c.out.int(1)
        }
        Err(e) => write_error(&mut c.out, e),
    }
}

/// PFCOUNT key [key ...]: one key's estimate (cached in its header), or the estimate of
/// the union of several, which modifies none of them.
pub(super) fn pfcount_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let ns = c.ns();
    if args.len() > 2 {
        let keys: Vec<&[u8]> = args.range(1, args.len()).iter().collect();
        let mut max = Box::new([0u8; REGISTERS]);
        let mut lock = shared.store.lock_keys(&keys);
        for &k in &keys {
            match lock.shard_for(k).get(ns, k, now) {
                Err(_) => return c.out.error(ERR_WRONGTYPE),
                Ok(None) => {}
                Ok(Some(v)) => {
                    if hll::validate(v).is_none() {
                        return c.out.error(ERR_NOT_HLL);
                    }
                    if hll::merge_into(&mut max, v).is_err() {
                        return c.out.error(ERR_INVALID);
                    }
                }
            }
        }
        drop(lock);
        return c.out.int(hll::estimate(&hll::raw_histogram(&max)) as i64);
    }
    let key = args.get(1);
    let mut shard = shared.store.lock_key(key);
    let card = match shard.get(ns, key, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(None) => return c.out.int(0),
        Ok(Some(v)) => {
            if hll::validate(v).is_none() {
                return c.out.error(ERR_NOT_HLL);
            }
            if let Some(card) = hll::cached_card(v) {
                return c.out.int(card as i64);
            }
            match hll::count(v) {
                Ok(card) => card,
                Err(_) => return c.out.error(ERR_INVALID),
            }
        }
    };
    // Same length: an in-place write of the header's 8 cardinality bytes.
    let r = shard.update(
        ns,
        key,
        now,
        |len| len,
        |buf, _| hll::set_cached_card(buf, card),
    );
    drop(shard);
    match r {
        Ok(()) => c.out.int(card as i64),
        Err(e) => write_error(&mut c.out, e),
    }
}

/// PFMERGE destkey [sourcekey ...]: the registers' maximum over the destination and the
/// sources, stored in the destination (created sparse if absent; converted to dense
/// first when any input is dense, as 7.0's pfmergeCommand does).
pub(super) fn pfmerge_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let ns = c.ns();
    let keys: Vec<&[u8]> = args.range(1, args.len()).iter().collect();
    let dest = keys[0];
    let mut max = Box::new([0u8; REGISTERS]);
    let mut use_dense = false;
    let mut lock = shared.store.lock_keys(&keys);
    for &k in &keys {
        match lock.shard_for(k).get(ns, k, now) {
            Err(_) => return c.out.error(ERR_WRONGTYPE),
            Ok(None) => {}
            Ok(Some(v)) => {
                match hll::validate(v) {
                    None => return c.out.error(ERR_NOT_HLL),
                    Some(DENSE) => use_dense = true,
                    Some(_) => {}
                }
                if hll::merge_into(&mut max, v).is_err() {
                    return c.out.error(ERR_INVALID);
                }
            }
        }
    }
    let shard = lock.shard_for(dest);
    // The destination was validated as a source above.
    let (mut w, ttl) = match shard.peek(ns, dest, now) {
        Ok(Some(v)) => (v.to_vec(), SetTtl::Keep),
        _ => (hll::new_sparse(), SetTtl::Clear),
    };
    if use_dense && w[4] == SPARSE {
        match hll::sparse_to_dense(&w) {
            Ok(d) => w = d,
            Err(_) => return c.out.error(ERR_INVALID),
        }
    }
    let mb = max_bytes(shared);
    let mut ghost = 0;
    for (i, &m) in max.iter().enumerate() {
        if m != 0 {
            let _ = hll::set_register(&mut w, i, m, mb, &mut ghost);
        }
    }
    hll::invalidate_cache(&mut w);
    let r = shard.set(ns, dest, &w, ttl, now);
    if r.is_ok() {
        shard.mark_raw(ns, dest, now);
    }
    drop(lock);
    match r {
        Ok(()) => {
            // hyperloglog.c: a merge is a mass add, so its event is "pfadd".
            notify(shared, c, STRING, "pfadd", dest);
            c.out.ok()
        }
        Err(e) => write_error(&mut c.out, e),
    }
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key.
pub(super) fn pfdebug_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let sub = args.get(1);
    let key = args.get(2);
    let ns = c.ns();
    let mut shard = shared.store.lock_key(key);
    let v = match shard.peek(ns, key, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(None) => return c.out.error("ERR The specified key does not exist"),
        Ok(Some(v)) => v,
    };
    let Some(enc) = hll::validate(v) else {
        return c.out.error(ERR_NOT_HLL);
    };
    let lower = sub.to_ascii_lowercase();
    match &lower[..] {
        b"getreg" | b"todense" => {
            let converted = enc == SPARSE;
            let dense = if converted {
                match hll::sparse_to_dense(v) {
                    Ok(d) => d,
                    Err(_) => return c.out.error(ERR_INVALID),
                }
            } else {
                v.to_vec()
            };
            if converted {
                if let Err(e) = shard.set(ns, key, &dense, SetTtl::Keep, now) {
                    return write_error(&mut c.out, e);
                }
                shard.mark_raw(ns, key, now);
            }
            drop(shard);
            if lower == b"todense" {
                return c.out.int(converted as i64);
            }
            c.out.array(REGISTERS);
            let regs = &dense[HDR_SIZE..];
            for i in 0..REGISTERS {
                c.out.int(i64::from(hll::dense_get(regs, i)));
            }
        }
        b"decode" => {
            if enc != SPARSE {
                return c.out.error("ERR HLL encoding is not sparse");
            }
            let mut s = String::new();
            for op in hll::sparse_ops(v) {
                use std::fmt::Write;
                let _ = match op {
                    hll::Op::Zero { len, long: false } => write!(s, "z:{len} "),
                    hll::Op::Zero { len, long: true } => write!(s, "Z:{len} "),
                    hll::Op::Val { value, len } => write!(s, "v:{value},{len} "),
                };
            }
            drop(shard);
            c.out.bulk(s.trim_end_matches(' ').as_bytes());
        }
        b"encoding" => c.out.simple(if enc == DENSE { "dense" } else { "sparse" }),
        _ => {
            let name = String::from_utf8_lossy(c_str(sub));
            c.out
                .error(&format!("ERR Unknown PFDEBUG subcommand '{name}'"))
        }
    }
}

/// PFSELFTEST: pfselftestCommand's two checks, on values outside the keyspace (no lock
/// is held): random register writes read back without disturbing neighbours, and 10
/// million distinct elements added to a dense and a sparse HLL, whose estimates must
/// agree and stay within 6 standard errors at every power of ten.
pub(super) fn pfselftest_command(shared: &Shared, c: &mut Client) {
    match selftest(max_bytes(shared)) {
        Ok(()) => c.out.ok(),
        Err(e) => c.out.error(&e),
    }
}

fn selftest(max_bytes: u64) -> Result<(), String> {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    let mut regs = vec![0u8; hll::DENSE_SIZE - HDR_SIZE];
    let mut bytes = vec![0u8; REGISTERS];
    for _ in 0..1000 {
        for (i, b) in bytes.iter_mut().enumerate() {
            let r = rng.gen::<u8>() & 63;
            *b = r;
            hll::dense_put(&mut regs, i, r);
        }
        for (i, &b) in bytes.iter().enumerate() {
            let got = hll::dense_get(&regs, i);
            if got != b {
                return Err(format!(
                    "TESTFAILED Register {i} should be {b} but is {got}"
                ));
            }
        }
    }
    let mut dense = hll::sparse_to_dense(&hll::new_sparse()).expect("empty HLL");
    let mut sparse = hll::new_sparse();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint: u64 = 1;
    let seed: u64 = rng.gen();
    for j in 1..=10_000_000u64 {
        let ele = (j ^ seed).to_le_bytes();
        let _ = hll::add(&mut dense, &ele, max_bytes, &mut 0);
        let _ = hll::add(&mut sparse, &ele, max_bytes, &mut 0);
        if j != checkpoint {
            continue;
        }
        if j < max_bytes / 2 && sparse[4] != SPARSE {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let card = hll::count(&dense).unwrap_or(0);
        if hll::count(&sparse) != Ok(card) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = checkpoint.abs_diff(card);
        let mut maxerr = (relerr * 6.0 * checkpoint as f64).ceil() as u64;
        // As in Redis: at 10 a collision is statistically likely now and then.
        if j == 10 {
            maxerr = 1;
        }
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}
