//! GEO commands (geo.c): GEOADD, GEOPOS, GEOHASH, GEODIST, GEORADIUS,
//! GEORADIUSBYMEMBER and their _RO forms, GEOSEARCH, GEOSEARCHSTORE.
//!
//! A geo set is a sorted set whose scores are 52-bit geohashes (`crate::geohash` has the
//! arithmetic and why it is Redis's to the bit), so TYPE says `zset`, ZRANGE / ZREM /
//! DUMP work on it, and a search reads at most nine score intervals of the set instead of
//! every point. GEOADD is ZADD with the scores computed (its event is `zadd`, its
//! statistics GEOADD's, as in Redis 7.0). The searches parse their options in geo.c's
//! order with the source set already looked up (WRONGTYPE comes first; FROMMEMBER is
//! resolved where it appears), so every error a client can provoke is the one Redis
//! gives for the same arguments.

use super::list::Target;
use super::zset::{store_result, zadd_pairs, ZAddFlags};
use super::{eq, Client, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use crate::cmdtable::{Cmd, CommandSpec};
use crate::geohash::{self, Shape, ShapeKind};
use crate::long_double::{format_fixed, human_double, string2d};
use crate::resp::{parse_i64, Args, Out};
use crate::state::Shared;
use augur_store::{Kind, Object, ScoreRange, ZSet};

const ERR_NOT_FLOAT: &str = "ERR value is not a valid float";
const ERR_DECODE_MEMBER: &str = "ERR could not decode requested zset member";

fn zset(o: &Object) -> &ZSet {
    o.as_zset().expect("Kind::ZSet lookups return sorted sets")
}

/// extractLongLatOrReply: two doubles, within the stored-point limits.
fn parse_lon_lat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), String> {
    let lon = string2d(lon).ok_or(ERR_NOT_FLOAT)?;
    let lat = string2d(lat).ok_or(ERR_NOT_FLOAT)?;
    if !(geohash::LONG_MIN..=geohash::LONG_MAX).contains(&lon)
        || !(geohash::LAT_MIN..=geohash::LAT_MAX).contains(&lat)
    {
        return Err(format!(
            "ERR invalid longitude,latitude pair {},{}",
            format_fixed(lon, 6),
            format_fixed(lat, 6)
        ));
    }
    Ok((lon, lat))
}

/// extractUnitOrReply: metres per unit.
fn parse_unit(u: &[u8]) -> Result<f64, String> {
    match () {
        _ if eq(u, "m") => Ok(1.0),
        _ if eq(u, "km") => Ok(1000.0),
        _ if eq(u, "ft") => Ok(0.3048),
        _ if eq(u, "mi") => Ok(1609.34),
        _ => Err("ERR unsupported unit provided. please use M, KM, FT, MI".into()),
    }
}

/// extractDistanceOrReply: a radius and its unit, (radius, metres per unit).
fn parse_distance(r: &[u8], unit: &[u8]) -> Result<(f64, f64), String> {
    let radius = string2d(r).ok_or("ERR need numeric radius")?;
    if radius < 0.0 {
        return Err("ERR radius cannot be negative".into());
    }
    Ok((radius, parse_unit(unit)?))
}

/// extractBoxOrReply: width, height and their unit.
fn parse_box(w: &[u8], h: &[u8], unit: &[u8]) -> Result<(f64, f64, f64), String> {
    let width = string2d(w).ok_or("ERR need numeric width")?;
    let height = string2d(h).ok_or("ERR need numeric height")?;
    if height < 0.0 || width < 0.0 {
        return Err("ERR height or width cannot be negative".into());
    }
    Ok((width, height, parse_unit(unit)?))
}

/// A stored member's position (longLatFromMember).
fn member_position(z: &ZSet, member: &[u8]) -> Option<(f64, f64)> {
    z.score(member).and_then(geohash::decode_score)
}

/// addReplyHumanLongDouble: a bulk string in RESP2, a double in RESP3.
fn reply_coordinate(out: &mut Out, v: f64) {
    let text = human_double(v);
    if out.resp3 {
        out.buf.extend_from_slice(b",");
        out.buf.extend_from_slice(&text);
        out.buf.extend_from_slice(b"\r\n");
    } else {
        out.bulk(&text);
    }
}

/// addReplyDoubleDistance: four decimals, always a bulk string.
fn reply_distance(out: &mut Out, d: f64) {
    out.bulk(format_fixed(d, 4).as_bytes());
}

/// GEOADD key [NX|XX] [CH] longitude latitude member [...]: ZADD with geohash scores.
pub(super) fn geoadd_command(shared: &Shared, c: &mut Client, args: Args<'_>, now: u64) {
    let (mut nx, mut xx, mut ch) = (false, false, false);
    let mut idx = 2;
    while idx < args.len() {
        let a = args.get(idx);
        match () {
            _ if eq(a, "nx") => nx = true,
            _ if eq(a, "xx") => xx = true,
            _ if eq(a, "ch") => ch = true,
            _ => break,
        }
        idx += 1;
    }
    let triples = args.len() - idx;
    if !triples.is_multiple_of(3) || (xx && nx) {
        return c.out.error(ERR_SYNTAX);
    }
    if triples == 0 {
        // zaddGenericCommand refuses an empty score-member list the same way.
        return c.out.error(ERR_SYNTAX);
    }
    let mut pairs = Vec::with_capacity(triples / 3);
    for j in 0..triples / 3 {
        let at = idx + 3 * j;
        let (lon, lat) = match parse_lon_lat(args.get(at), args.get(at + 1)) {
            Ok(p) => p,
            Err(e) => return c.out.error(&e),
        };
        let score = geohash::encode_score(lon, lat).expect("checked within the limits");
        pairs.push((score as f64, args.get(at + 2)));
    }
    let flags = ZAddFlags {
        nx,
        xx,
        ch,
        ..ZAddFlags::default()
    };
    zadd_pairs(shared, c, args.get(1), flags, &pairs, now);
}

/// GEOPOS, GEOHASH and GEODIST: positions of stored members.
pub(super) fn geo_query_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let key = args.get(1);
    let mut to_meter = 1.0;
    if spec.cmd == Cmd::GeoDist {
        if args.len() == 5 {
            match parse_unit(args.get(4)) {
                Ok(u) => to_meter = u,
                Err(e) => return c.out.error(&e),
            }
        } else if args.len() > 5 {
            return c.out.error(ERR_SYNTAX);
        }
    }
    let mut shard = shared.store.lock_key(key);
    let z = match shard.read_object(c.ns(), key, Kind::ZSet, now) {
        Err(_) => return c.out.error(ERR_WRONGTYPE),
        Ok(o) => o.map(zset),
    };
    match spec.cmd {
        Cmd::GeoDist => {
            let Some(z) = z else {
                return c.out.null();
            };
            match (
                member_position(z, args.get(2)),
                member_position(z, args.get(3)),
            ) {
                (Some(a), Some(b)) => {
                    reply_distance(&mut c.out, geohash::distance(a.0, a.1, b.0, b.1) / to_meter)
                }
                _ => c.out.null(),
            }
        }
        Cmd::GeoHash => {
            c.out.array(args.len() - 2);
            for m in args.iter().skip(2) {
                match z.and_then(|z| z.score(m)).and_then(geohash::geohash_string) {
                    Some(text) => c.out.bulk(&text),
                    None => c.out.null(),
                }
            }
        }
        _ => {
            c.out.array(args.len() - 2);
            for m in args.iter().skip(2) {
                match z.and_then(|z| member_position(z, m)) {
                    Some((lon, lat)) => {
                        c.out.array(2);
                        reply_coordinate(&mut c.out, lon);
                        reply_coordinate(&mut c.out, lat);
                    }
                    None => c.out.null_array(),
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// What a search command is (georadiusGeneric's flags).
#[derive(Debug, Clone, Copy)]
struct Variant {
    /// GEORADIUS(_RO): the centre is given as coordinates, then radius and unit.
    coords: bool,
    /// GEORADIUSBYMEMBER(_RO): the centre is a member.
    member: bool,
    /// The _RO forms: no STORE / STOREDIST.
    nostore: bool,
    /// GEOSEARCH and GEOSEARCHSTORE: FROM* and BY* options.
    search: bool,
    /// GEOSEARCHSTORE: the destination first; STOREDIST takes no key.
    searchstore: bool,
}

impl Variant {
    fn of(cmd: Cmd) -> Variant {
        let v = Variant {
            coords: false,
            member: false,
            nostore: false,
            search: false,
            searchstore: false,
        };
        match cmd {
            Cmd::GeoRadius => Variant { coords: true, ..v },
            Cmd::GeoRadiusRo => Variant {
                coords: true,
                nostore: true,
                ..v
            },
            Cmd::GeoRadiusByMember => Variant { member: true, ..v },
            Cmd::GeoRadiusByMemberRo => Variant {
                member: true,
                nostore: true,
                ..v
            },
            Cmd::GeoSearch => Variant { search: true, ..v },
            _ => Variant {
                search: true,
                searchstore: true,
                ..v
            },
        }
    }

    /// Where the options start.
    fn base_args(&self) -> usize {
        match () {
            _ if self.coords => 6,
            _ if self.member => 5,
            _ if self.searchstore => 3,
            _ => 2,
        }
    }
}

/// The destination a search will write, found before any key is locked by reading the
/// options the way the parser below does (the last STORE / STOREDIST key wins); the
/// parser decides whether the command is valid.
fn destination<'a>(args: Args<'a>, v: Variant) -> Option<&'a [u8]> {
    if v.searchstore {
        return Some(args.get(1));
    }
    if v.search || v.nostore {
        return None;
    }
    let mut dst = None;
    let mut i = v.base_args();
    while i < args.len() {
        let a = args.get(i);
        if (eq(a, "store") || eq(a, "storedist")) && i + 1 < args.len() {
            dst = Some(args.get(i + 1));
            i += 1;
        } else if eq(a, "count") && i + 1 < args.len() {
            i += 1;
        }
        i += 1;
    }
    dst
}

/// A search's parsed request.
struct Query<'a> {
    /// None only when the source key is missing (the centre could not be resolved).
    shape: Option<Shape>,
    withdist: bool,
    withhash: bool,
    withcoords: bool,
    sort: Sort,
    any: bool,
    count: usize,
    store: Option<&'a [u8]>,
    storedist: bool,
}

/// georadiusGeneric's argument handling, in its order, with the source set `z` (None
/// when the key is missing) already looked up.
fn parse_query<'a>(args: Args<'a>, v: Variant, z: Option<&ZSet>) -> Result<Query<'a>, String> {
    let mut lonlat = None;
    let mut radius = None; // (radius, conversion)
    if v.coords {
        lonlat = Some(parse_lon_lat(args.get(2), args.get(3))?);
        radius = Some(parse_distance(args.get(4), args.get(5))?);
    } else if v.member {
        if let Some(z) = z {
            lonlat = Some(member_position(z, args.get(2)).ok_or(ERR_DECODE_MEMBER)?);
            radius = Some(parse_distance(args.get(3), args.get(4))?);
        }
    }
    let base = v.base_args();
    let mut q = Query {
        shape: None,
        withdist: false,
        withhash: false,
        withcoords: false,
        sort: Sort::None,
        any: false,
        count: 0,
        store: if v.searchstore {
            Some(args.get(1))
        } else {
            None
        },
        storedist: false,
    };
    let (mut frommember, mut fromloc) = (false, false);
    let mut bybox = None; // (width, height, conversion)
    let remaining = args.len().saturating_sub(base);
    let mut i = 0;
    while i < remaining {
        let arg = args.get(base + i);
        let next = |k: usize| args.get(base + i + k);
        match () {
            _ if eq(arg, "withdist") => q.withdist = true,
            _ if eq(arg, "withhash") => q.withhash = true,
            _ if eq(arg, "withcoord") => q.withcoords = true,
            _ if eq(arg, "any") => q.any = true,
            _ if eq(arg, "asc") => q.sort = Sort::Asc,
            _ if eq(arg, "desc") => q.sort = Sort::Desc,
            _ if eq(arg, "count") && i + 1 < remaining => {
                let n = parse_i64(next(1)).ok_or(ERR_NOT_INT)?;
                if n <= 0 {
                    return Err("ERR COUNT must be > 0".into());
                }
                q.count = n as usize;
                i += 1;
            }
            _ if (eq(arg, "store") || eq(arg, "storedist"))
                && i + 1 < remaining
                && !v.nostore
                && !v.search =>
            {
                q.store = Some(next(1));
                q.storedist = eq(arg, "storedist");
                i += 1;
            }
            _ if eq(arg, "storedist") && v.searchstore => q.storedist = true,
            _ if eq(arg, "frommember") && i + 1 < remaining && v.search && !fromloc => {
                if let Some(z) = z {
                    lonlat = Some(member_position(z, next(1)).ok_or(ERR_DECODE_MEMBER)?);
                }
                frommember = true;
                i += 1;
            }
            _ if eq(arg, "fromlonlat") && i + 2 < remaining && v.search && !frommember => {
                lonlat = Some(parse_lon_lat(next(1), next(2))?);
                fromloc = true;
                i += 2;
            }
            _ if eq(arg, "byradius") && i + 2 < remaining && v.search && bybox.is_none() => {
                radius = Some(parse_distance(next(1), next(2))?);
                i += 2;
            }
            _ if eq(arg, "bybox") && i + 3 < remaining && v.search && radius.is_none() => {
                bybox = Some(parse_box(next(1), next(2), next(3))?);
                i += 3;
            }
            _ => return Err(ERR_SYNTAX.into()),
        }
        i += 1;
    }
    if q.store.is_some() && (q.withdist || q.withhash || q.withcoords) {
        return Err(format!(
            "ERR {} is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            if v.searchstore {
                "GEOSEARCHSTORE"
            } else {
                "STORE option in GEORADIUS"
            }
        ));
    }
    let name = String::from_utf8_lossy(args.get(0));
    if v.search && !(frommember || fromloc) {
        return Err(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        ));
    }
    if v.search && radius.is_none() && bybox.is_none() {
        return Err(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
        ));
    }
    if q.any && q.count == 0 {
        return Err("ERR the ANY argument requires COUNT argument".into());
    }
    q.shape = lonlat.map(|(lon, lat)| match (radius, bybox) {
        (Some((radius, conversion)), _) => Shape {
            lon,
            lat,
            kind: ShapeKind::Circle { radius },
            conversion,
        },
        (None, Some((width, height, conversion))) => Shape {
            lon,
            lat,
            kind: ShapeKind::Box { width, height },
            conversion,
        },
        (None, None) => unreachable!("every variant requires a radius or a box"),
    });
    Ok(q)
}

/// One point found (geoPoint).
struct Point {
    member: Vec<u8>,
    lon: f64,
    lat: f64,
    /// Metres until the reply converts it to the request's unit.
    dist: f64,
    score: f64,
}

/// membersOfAllNeighbors: the points inside `shape`, cell by cell in Redis's order and
/// by score within a cell; with a `limit` (ANY), the first `limit` found.
fn points_within(z: &ZSet, shape: &Shape, limit: usize) -> Vec<Point> {
    /// Ranks visited at a time, so ANY stops soon after it has enough.
    const CHUNK: usize = 64;
    let mut out: Vec<Point> = Vec::new();
    let full = |out: &Vec<Point>| limit > 0 && out.len() >= limit;
    for cell in shape.cells() {
        if full(&out) {
            break;
        }
        let (min, max) = cell.score_interval();
        let ranks = z.score_ranks(&ScoreRange {
            min,
            max,
            min_exclusive: false,
            max_exclusive: true,
        });
        let mut start = ranks.start;
        while start < ranks.end && !full(&out) {
            let end = if limit > 0 {
                (start + CHUNK).min(ranks.end)
            } else {
                ranks.end
            };
            z.visit_ranks(start..end, false, |m, score| {
                if full(&out) {
                    return;
                }
                let Some((lon, lat)) = geohash::decode_score(score) else {
                    return;
                };
                if let Some(dist) = shape.distance_if_within(lon, lat) {
                    out.push(Point {
                        member: m.to_vec(),
                        lon,
                        lat,
                        dist,
                        score,
                    });
                }
            });
            start = end;
        }
    }
    out
}

/// sort_gp_asc: -1, 0 or 1.
fn dist_cmp(a: f64, b: f64) -> i32 {
    if a > b {
        1
    } else if a == b {
        0
    } else {
        -1
    }
}

/// Redis's pqsort (pqsort.c: NetBSD's qsort, Bentley and McIlroy's "Engineering a Sort
/// Function", modified to recurse only into partitions that overlap the places
/// `lrange..=rrange`): after it, those places hold what a full sort would put there, the
/// rest is in partition order. Element swaps and comparisons are the C code's, in its
/// order, so ties resolve as in Redis.
fn partial_qsort<T>(v: &mut [T], cmp: &impl Fn(&T, &T) -> i32, lrange: usize, rrange: usize) {
    fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> i32) -> usize {
        if cmp(&v[a], &v[b]) < 0 {
            if cmp(&v[b], &v[c]) < 0 {
                b
            } else if cmp(&v[a], &v[c]) < 0 {
                c
            } else {
                a
            }
        } else if cmp(&v[b], &v[c]) > 0 {
            b
        } else if cmp(&v[a], &v[c]) < 0 {
            a
        } else {
            c
        }
    }
    fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
        for i in 0..n {
            v.swap(a + i, b + i);
        }
    }
    let outside = |l: usize, r: usize| (lrange < l && rrange < l) || (lrange > r && rrange > r);
    let (mut lo, mut n) = (0usize, v.len());
    let mut stack: Vec<(usize, usize)> = Vec::new();
    loop {
        if n < 7 {
            for pm in lo + 1..lo + n {
                let mut pl = pm;
                while pl > lo && cmp(&v[pl - 1], &v[pl]) > 0 {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
        } else {
            let mut pm = lo + n / 2;
            if n > 7 {
                let mut pl = lo;
                let mut pn = lo + n - 1;
                if n > 40 {
                    let d = n / 8;
                    pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                    pm = med3(v, pm - d, pm, pm + d, cmp);
                    pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
                }
                pm = med3(v, pl, pm, pn, cmp);
            }
            v.swap(lo, pm);
            let (mut pa, mut pb) = (lo + 1, lo + 1);
            let (mut pc, mut pd) = (lo + n - 1, lo + n - 1);
            loop {
                while pb <= pc {
                    let r = cmp(&v[pb], &v[lo]);
                    if r > 0 {
                        break;
                    }
                    if r == 0 {
                        v.swap(pa, pb);
                        pa += 1;
                    }
                    pb += 1;
                }
                while pb <= pc {
                    let r = cmp(&v[pc], &v[lo]);
                    if r < 0 {
                        break;
                    }
                    if r == 0 {
                        v.swap(pc, pd);
                        pd -= 1;
                    }
                    pc -= 1;
                }
                if pb > pc {
                    break;
                }
                v.swap(pb, pc);
                pb += 1;
                pc -= 1;
            }
            let pn = lo + n;
            let r = (pa - lo).min(pb - pa);
            vecswap(v, lo, pb - r, r);
            let r = (pd - pc).min(pn - pd - 1);
            vecswap(v, pb, pn - r, r);
            // The C code recurses into the left part first, then loops on the right.
            let right = pd - pc;
            if right > 1 && !outside(pn - right, pn - 1) {
                stack.push((pn - right, right));
            }
            let left = pb - pa;
            if left > 1 && !outside(lo, lo + left - 1) {
                stack.push((lo, left));
            }
        }
        match stack.pop() {
            Some((l, m)) => (lo, n) = (l, m),
            None => return,
        }
    }
}

/// GEORADIUS GEORADIUS_RO GEORADIUSBYMEMBER GEORADIUSBYMEMBER_RO GEOSEARCH
/// GEOSEARCHSTORE (georadiusGeneric).
pub(super) fn geosearch_command(
    shared: &Shared,
    c: &mut Client,
    spec: &CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let v = Variant::of(spec.cmd);
    let src = args.get(if v.searchstore { 2 } else { 1 });
    let dst = destination(args, v);
    let t = Target::of(c);
    let mut keys = vec![src];
    keys.extend(dst);
    let mut lock = shared.store.lock_keys(&keys);
    let found = {
        let z = match lock.shard_for(src).read_object(t.ns, src, Kind::ZSet, now) {
            Err(_) => return c.out.error(ERR_WRONGTYPE),
            Ok(o) => o.map(zset),
        };
        let q = match parse_query(args, v, z) {
            Ok(q) => q,
            Err(e) => return c.out.error(&e),
        };
        match (z, q.shape) {
            (Some(z), Some(shape)) => {
                let mut sort = q.sort;
                // COUNT without an order means the nearest ones (not with ANY).
                if q.count != 0 && sort == Sort::None && !q.any {
                    sort = Sort::Asc;
                }
                let mut points = points_within(z, &shape, if q.any { q.count } else { 0 });
                let returned = if q.count == 0 {
                    points.len()
                } else {
                    q.count.min(points.len())
                };
                if sort != Sort::None {
                    let desc = sort == Sort::Desc;
                    let cmp = |a: &Point, b: &Point| {
                        let asc = dist_cmp(a.dist, b.dist);
                        if desc {
                            -asc
                        } else {
                            asc
                        }
                    };
                    if returned == points.len() {
                        // qsort: glibc's is a merge sort here (40-byte elements, sorted
                        // through pointers), so equal distances keep their order.
                        points.sort_by(|a, b| cmp(a, b).cmp(&0));
                    } else {
                        // With COUNT below the matches, Redis sorts only the first
                        // `returned` places (pqsort); which of several points at the same
                        // distance make the cut is that algorithm's, so it is reproduced.
                        partial_qsort(&mut points, &cmp, 0, returned - 1);
                    }
                }
                points.truncate(returned);
                for p in &mut points {
                    p.dist /= shape.conversion;
                }
                Some((q, points))
            }
            // A missing source: an empty result (and the destination deleted).
            _ => Some((q, Vec::new())),
        }
    };
    let Some((q, points)) = found else {
        return;
    };
    match q.store {
        None => {
            let options = q.withdist as usize + q.withhash as usize + q.withcoords as usize;
            c.out.array(points.len());
            for p in &points {
                if options > 0 {
                    c.out.array(options + 1);
                }
                c.out.bulk(&p.member);
                if q.withdist {
                    reply_distance(&mut c.out, p.dist);
                }
                if q.withhash {
                    c.out.int(p.score as i64);
                }
                if q.withcoords {
                    c.out.array(2);
                    reply_coordinate(&mut c.out, p.lon);
                    reply_coordinate(&mut c.out, p.lat);
                }
            }
        }
        Some(dst) => {
            let lim = shared.store.encoding_limits();
            let mut result = ZSet::new_skiplist();
            for p in &points {
                result.insert(&p.member, if q.storedist { p.dist } else { p.score }, &lim);
            }
            result.fit_encoding(&lim);
            let event = if v.search {
                "geosearchstore"
            } else {
                "georadiusstore"
            };
            store_result(shared, c, &mut lock, t, dst, result, event, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The places asked for hold what a full sort puts there (by key: ties may
        /// differ, as in Redis), and the slice is a permutation of its input.
        #[test]
        fn partial_qsort_sorts_the_places_asked_for(
            keys in proptest::collection::vec(0u8..12, 1..300),
            a in 0usize..300,
            b in 0usize..300,
        ) {
            let n = keys.len();
            let (l, r) = (a.min(b) % n, a.max(b) % n);
            let (l, r) = (l.min(r), l.max(r));
            let mut v: Vec<(u8, usize)> = keys.iter().copied().zip(0..).collect();
            let cmp = |x: &(u8, usize), y: &(u8, usize)| dist_cmp(x.0 as f64, y.0 as f64);
            partial_qsort(&mut v, &cmp, l, r);
            let mut sorted = keys.clone();
            sorted.sort();
            let got: Vec<u8> = v[l..=r].iter().map(|x| x.0).collect();
            prop_assert_eq!(&got[..], &sorted[l..=r]);
            let mut ids: Vec<usize> = v.iter().map(|x| x.1).collect();
            ids.sort();
            prop_assert_eq!(ids, (0..n).collect::<Vec<_>>());
        }
    }
}
