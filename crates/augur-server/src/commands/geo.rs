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
                // glibc's qsort is a merge sort here: equal distances keep their order.
                match sort {
                    Sort::Asc => points.sort_by(|a, b| a.dist.total_cmp(&b.dist)),
                    Sort::Desc => points.sort_by(|a, b| b.dist.total_cmp(&a.dist)),
                    Sort::None => {}
                }
                if q.count != 0 {
                    points.truncate(q.count);
                }
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
