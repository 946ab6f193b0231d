//! The geohash arithmetic behind the GEO commands, as Redis 7.0 computes it (geohash.c
//! and geohash_helper.c, themselves from the ardb project).
//!
//! A geo set is a sorted set whose scores are 52-bit geohashes: longitude and latitude
//! are each scaled to 26 bits over [-180, 180] and [-85.05112878, 85.05112878] (the Web
//! Mercator limits, EPSG:3785) and interleaved, latitude in the even bits. A score is an
//! integer below 2^52, so a double holds it exactly, and nearby points have nearby
//! scores: a geohash cell of `step` bits per axis is one contiguous score interval.
//!
//! A radius or box search therefore never scans the set: it picks a cell size from the
//! radius (`estimate_steps_by_radius`), takes the cell holding the centre and its eight
//! neighbours (`areas_by_shape`, which also drops neighbours the shape's bounding box
//! cannot reach), reads each cell's score interval, and keeps the points whose
//! haversine distance (or per-axis distances, for a box) is within the shape. Every
//! formula and its order of floating-point operations is Redis's, because users see the
//! results: GEOPOS replies a point as its cell's centre, GEODIST prints four decimals,
//! and a point on a search's edge is in or out exactly as in Redis.

/// Bits per axis of a stored point (GEO_STEP_MAX).
pub const STEP_MAX: u8 = 26;
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;

/// geohash_helper.c's D_R: degrees to radians.
const D_R: f64 = std::f64::consts::PI / 180.0;
/// Earth's quadratic mean radius for WGS-84, in metres.
const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;

fn deg_rad(ang: f64) -> f64 {
    ang * D_R
}

fn rad_deg(ang: f64) -> f64 {
    ang / D_R
}

/// A geohash of `step` bits per axis (GeoHashBits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HashBits {
    pub bits: u64,
    pub step: u8,
}

impl HashBits {
    /// HASHISZERO: a neighbour excluded from the search.
    fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// geohashAlign52Bits: the cell's first score.
    pub fn align52(&self) -> u64 {
        self.bits << (52 - self.step as u32 * 2)
    }

    /// scoresOfGeoHashBox: the score interval [min, max) of the cell's points.
    pub fn score_interval(&self) -> (f64, f64) {
        let next = HashBits {
            bits: self.bits + 1,
            step: self.step,
        };
        (self.align52() as f64, next.align52() as f64)
    }
}

/// An interval of one coordinate (GeoHashRange).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

impl Range {
    fn is_zero(&self) -> bool {
        self.min == 0.0 && self.max == 0.0
    }
}

/// A geohash cell's extent (GeoHashArea).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Area {
    pub longitude: Range,
    pub latitude: Range,
}

/// geohashGetCoordRange: the ranges stored points are scaled over.
pub const GEO_LONG_RANGE: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
pub const GEO_LAT_RANGE: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// Interleaves the low 32 bits of `x` (even positions) and `y` (odd positions).
fn interleave64(xlo: u32, ylo: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let (mut x, mut y) = (xlo as u64, ylo as u64);
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

/// The inverse of `interleave64`: even bits in the low half, odd bits in the high half.
fn deinterleave64(interleaved: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
        0x00000000FFFFFFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let (mut x, mut y) = (interleaved, interleaved >> 1);
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// geohashEncode: the cell of `step` bits per axis holding (longitude, latitude) over
/// the given ranges; None outside them or the stored-point limits.
pub fn encode(
    long_range: Range,
    lat_range: Range,
    longitude: f64,
    latitude: f64,
    step: u8,
) -> Option<HashBits> {
    if step > 32 || step == 0 || lat_range.is_zero() || long_range.is_zero() {
        return None;
    }
    if !(LONG_MIN..=LONG_MAX).contains(&longitude) || !(LAT_MIN..=LAT_MAX).contains(&latitude) {
        return None;
    }
    if latitude < lat_range.min
        || latitude > lat_range.max
        || longitude < long_range.min
        || longitude > long_range.max
    {
        return None;
    }
    let mut lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min);
    let mut long_offset = (longitude - long_range.min) / (long_range.max - long_range.min);
    lat_offset *= (1u64 << step) as f64;
    long_offset *= (1u64 << step) as f64;
    // C converts the doubles to uint32_t by truncation; both are in [0, 2^step].
    Some(HashBits {
        bits: interleave64(lat_offset as u32, long_offset as u32),
        step,
    })
}

/// The score GEOADD stores for a point (already checked to be within the limits).
pub fn encode_score(longitude: f64, latitude: f64) -> Option<u64> {
    encode(GEO_LONG_RANGE, GEO_LAT_RANGE, longitude, latitude, STEP_MAX).map(|h| h.align52())
}

/// geohashDecode: the extent of a cell.
pub fn decode(long_range: Range, lat_range: Range, hash: HashBits) -> Option<Area> {
    if hash.is_zero() || lat_range.is_zero() || long_range.is_zero() {
        return None;
    }
    let step = hash.step;
    let hash_sep = deinterleave64(hash.bits);
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    let ilato = hash_sep as u32;
    let ilono = (hash_sep >> 32) as u32;
    let cells = (1u64 << step) as f64;
    Some(Area {
        latitude: Range {
            min: lat_range.min + (ilato as f64 * 1.0 / cells) * lat_scale,
            max: lat_range.min + (ilato.wrapping_add(1) as f64 * 1.0 / cells) * lat_scale,
        },
        longitude: Range {
            min: long_range.min + (ilono as f64 * 1.0 / cells) * long_scale,
            max: long_range.min + (ilono.wrapping_add(1) as f64 * 1.0 / cells) * long_scale,
        },
    })
}

/// How x86-64 C converts a double to uint64_t (geo.c's `(uint64_t)score`), so a score
/// that is not a geohash (a negative or huge one, in a set not built by GEOADD) decodes
/// to the position Redis replies: cvttsd2si, with 2^63 subtracted first at or above it,
/// and the "integer indefinite" 0x8000000000000000 where the result does not fit.
pub fn score_bits(score: f64) -> u64 {
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    fn cvttsd2si(x: f64) -> u64 {
        if (-TWO63..TWO63).contains(&x) {
            x as i64 as u64
        } else {
            1 << 63
        }
    }
    if score < TWO63 {
        cvttsd2si(score)
    } else {
        cvttsd2si(score - TWO63) ^ (1 << 63)
    }
}

/// decodeGeohash: the (longitude, latitude) GEOPOS replies for a stored score, the
/// centre of its 26-bit cell clamped to the limits.
pub fn decode_score(score: f64) -> Option<(f64, f64)> {
    let hash = HashBits {
        bits: score_bits(score),
        step: STEP_MAX,
    };
    let area = decode(GEO_LONG_RANGE, GEO_LAT_RANGE, hash)?;
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    Some((lon, lat))
}

/// GEOHASH's 11-character text of a stored score: the point re-encoded over the
/// standard ranges ([-90, 90] latitude, not Mercator's) in base 32, the eleventh
/// character always '0' (52 bits fill ten).
pub fn geohash_string(score: f64) -> Option<[u8; 11]> {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = decode_score(score)?;
    let bits = encode(
        Range {
            min: -180.0,
            max: 180.0,
        },
        Range {
            min: -90.0,
            max: 90.0,
        },
        lon,
        lat,
        26,
    )
    .map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    Some(out)
}

/// geohash_move_x / geohash_move_y: the cell `d` steps (+1 or -1, 0 for none) along
/// the axis whose bits `own` masks (longitude: the odd bits, latitude: the even ones),
/// wrapping around; `other` is the other axis's mask. Filling the other axis's bits with
/// ones before adding carries the increment across them.
fn move_axis(hash: &mut HashBits, d: i8, own: u64, other: u64) {
    if d == 0 {
        return;
    }
    let mut mine = hash.bits & own;
    let rest = hash.bits & other;
    let shift = 64 - hash.step as u32 * 2;
    let zz = other >> shift;
    if d > 0 {
        mine = mine.wrapping_add(zz + 1);
    } else {
        mine |= zz;
        mine = mine.wrapping_sub(zz + 1);
    }
    mine &= own >> shift;
    hash.bits = mine | rest;
}

const ODD_BITS: u64 = 0xaaaaaaaaaaaaaaaa;
const EVEN_BITS: u64 = 0x5555555555555555;

fn move_x(hash: &mut HashBits, d: i8) {
    move_axis(hash, d, ODD_BITS, EVEN_BITS);
}

fn move_y(hash: &mut HashBits, d: i8) {
    move_axis(hash, d, EVEN_BITS, ODD_BITS);
}

/// The eight neighbours of a cell (GeoHashNeighbors), wrapping around at the edges.
#[derive(Debug, Clone, Copy, Default)]
pub struct Neighbors {
    pub north: HashBits,
    pub east: HashBits,
    pub west: HashBits,
    pub south: HashBits,
    pub north_east: HashBits,
    pub south_east: HashBits,
    pub north_west: HashBits,
    pub south_west: HashBits,
}

fn neighbors(hash: &HashBits) -> Neighbors {
    let moved = |dx: i8, dy: i8| {
        let mut h = *hash;
        move_x(&mut h, dx);
        move_y(&mut h, dy);
        h
    };
    Neighbors {
        east: moved(1, 0),
        west: moved(-1, 0),
        south: moved(0, -1),
        north: moved(0, 1),
        north_west: moved(-1, 1),
        north_east: moved(1, 1),
        south_east: moved(1, -1),
        south_west: moved(-1, -1),
    }
}

/// geohashEstimateStepsByRadius: bits per axis of the cells a search of this radius
/// (metres) around this latitude reads: about the largest cell the radius fits in.
pub fn estimate_steps_by_radius(range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut range_meters = range_meters;
    let mut step: i32 = 1;
    while range_meters < MERCATOR_MAX {
        range_meters *= 2.0;
        step += 1;
    }
    step -= 2; // Make sure the range is included in most of the base cases.
               // Wider cells towards the poles (the distance between meridians shrinks).
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// A search's shape (GeoShape): the centre, a circle's radius or a box's width and
/// height in the request's unit, and that unit in metres.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub lon: f64,
    pub lat: f64,
    pub kind: ShapeKind,
    pub conversion: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ShapeKind {
    Circle { radius: f64 },
    Box { width: f64, height: f64 },
}

impl Shape {
    /// geohashBoundingBox: [min lon, min lat, max lon, max lat] around the shape (the
    /// longitude span measured at the latitude edge nearer the pole, where it is wider).
    pub fn bounding_box(&self) -> [f64; 4] {
        let (half_height, half_width) = match self.kind {
            ShapeKind::Circle { radius } => (radius, radius),
            ShapeKind::Box { width, height } => (height / 2.0, width / 2.0),
        };
        let height = self.conversion * half_height;
        let width = self.conversion * half_width;
        let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
        let long_delta_top =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.lat + lat_delta).cos());
        let long_delta_bottom =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.lat - lat_delta).cos());
        let delta = if self.lat < 0.0 {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [
            self.lon - delta,
            self.lat - lat_delta,
            self.lon + delta,
            self.lat + lat_delta,
        ]
    }

    /// The distance (metres) from the centre to the farthest point of the shape: the
    /// radius, or half the box's diagonal.
    fn radius_meters(&self) -> f64 {
        let r = match self.kind {
            ShapeKind::Circle { radius } => radius,
            ShapeKind::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        };
        r * self.conversion
    }

    /// geoAppendIfWithinShape's test: the point's distance from the centre (metres)
    /// when it is inside the shape.
    pub fn distance_if_within(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.kind {
            ShapeKind::Circle { radius } => {
                let d = distance(self.lon, self.lat, lon, lat);
                (d <= radius * self.conversion).then_some(d)
            }
            ShapeKind::Box { width, height } => distance_if_in_rectangle(
                width * self.conversion,
                height * self.conversion,
                self.lon,
                self.lat,
                lon,
                lat,
            ),
        }
    }

    /// geohashCalculateAreasByShapeWGS84: the cells to read, in the order Redis reads
    /// them (centre, N, S, E, W, NE, NW, SE, SW); excluded neighbours are left out, and
    /// a neighbour equal to the last one read is read once (very large radii make
    /// neighbours coincide).
    pub fn cells(&self) -> Vec<HashBits> {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounding_box();
        let mut steps = estimate_steps_by_radius(self.radius_meters(), self.lat);
        let cell = |steps| {
            let hash = encode(GEO_LONG_RANGE, GEO_LAT_RANGE, self.lon, self.lat, steps).unwrap_or(
                HashBits {
                    bits: 0,
                    step: steps,
                },
            );
            let area = decode(GEO_LONG_RANGE, GEO_LAT_RANGE, hash).unwrap_or_default();
            (hash, neighbors(&hash), area)
        };
        let (mut hash, mut n, mut area) = cell(steps);
        // The estimated step may be too fine where the shape nears a neighbour's far
        // edge: then one step coarser.
        let extent = |h: HashBits| decode(GEO_LONG_RANGE, GEO_LAT_RANGE, h).unwrap_or_default();
        let decrease_step = extent(n.north).latitude.max < max_lat
            || extent(n.south).latitude.min > min_lat
            || extent(n.east).longitude.max < max_lon
            || extent(n.west).longitude.min > min_lon;
        if steps > 1 && decrease_step {
            steps -= 1;
            (hash, n, area) = cell(steps);
        }
        // Exclude the neighbours the bounding box does not reach.
        if steps >= 2 {
            let zero = HashBits::default();
            if area.latitude.min < min_lat {
                (n.south, n.south_west, n.south_east) = (zero, zero, zero);
            }
            if area.latitude.max > max_lat {
                (n.north, n.north_east, n.north_west) = (zero, zero, zero);
            }
            if area.longitude.min < min_lon {
                (n.west, n.south_west, n.north_west) = (zero, zero, zero);
            }
            if area.longitude.max > max_lon {
                (n.east, n.south_east, n.north_east) = (zero, zero, zero);
            }
        }
        let all = [
            hash,
            n.north,
            n.south,
            n.east,
            n.west,
            n.north_east,
            n.north_west,
            n.south_east,
            n.south_west,
        ];
        // membersOfAllNeighbors: skip zeroed cells, and a cell equal to the last one
        // read once a neighbour has been read (not compared with the centre).
        let mut out = Vec::with_capacity(9);
        let mut last_processed = 0;
        for (i, h) in all.iter().enumerate() {
            if h.is_zero() {
                continue;
            }
            if last_processed != 0 && *h == all[last_processed] {
                continue;
            }
            out.push(*h);
            last_processed = i;
        }
        out
    }
}

/// geohashGetLatDistance: the distance in metres between two latitudes on one meridian
/// (the haversine reduced: asin(sin(x)) is x over a latitude's range).
fn lat_distance(lat1d: f64, lat2d: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2d) - deg_rad(lat1d)).abs()
}

/// geohashGetDistance: the haversine great-circle distance in metres, or the meridian
/// distance when the longitudes' half-difference has a zero sine. Redis 7.0.15 has that
/// shortcut (a STOREDIST between two points of one longitude differs from the plain
/// haversine in the last bits, measured against redis-server).
pub fn distance(lon1d: f64, lat1d: f64, lon2d: f64, lat2d: f64) -> f64 {
    let lon1r = deg_rad(lon1d);
    let lon2r = deg_rad(lon2d);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1d, lat2d);
    }
    let lat1r = deg_rad(lat1d);
    let lat2r = deg_rad(lat2d);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// geohashGetDistanceIfInRectangle: a point is in the axis-aligned box around
/// (x1, y1) when its north-south distance from the centre and its east-west distance
/// (along its own latitude) are within half the height and half the width.
fn distance_if_in_rectangle(
    width_m: f64,
    height_m: f64,
    x1: f64,
    y1: f64,
    x2: f64,
    y2: f64,
) -> Option<f64> {
    if lat_distance(y2, y1) > height_m / 2.0 {
        return None;
    }
    if distance(x2, y2, x1, y2) > width_m / 2.0 {
        return None;
    }
    Some(distance(x1, y1, x2, y2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Scores and positions redis-server 7.0.15 gives (GEOADD then ZSCORE / GEOPOS /
    /// GEOHASH, measured): Palermo and Catania from geo.tcl.
    #[test]
    fn palermo_and_catania_as_redis_stores_them() {
        assert_eq!(encode_score(13.361389, 38.115556), Some(3479099956230698));
        assert_eq!(encode_score(15.087269, 37.502669), Some(3479447370796909));
        let (lon, lat) = decode_score(3479099956230698.0).unwrap();
        assert!((lon - 13.361389).abs() < 1e-5 && (lat - 38.115556).abs() < 1e-5);
        assert_eq!(&geohash_string(3479099956230698.0).unwrap(), b"sqc8b49rny0");
        assert_eq!(&geohash_string(3479447370796909.0).unwrap(), b"sqdtr74hyu0");
        let (a, b) = (
            decode_score(3479099956230698.0).unwrap(),
            decode_score(3479447370796909.0).unwrap(),
        );
        // GEODIST Sicily Palermo Catania: "166274.1516".
        assert_eq!(
            crate::long_double::format_fixed(distance(a.0, a.1, b.0, b.1), 4),
            "166274.1516"
        );
    }

    #[test]
    fn steps_shrink_with_the_radius_and_towards_the_poles() {
        assert_eq!(estimate_steps_by_radius(0.0, 0.0), 26);
        let mut last = 0;
        for r in [5e6, 5e5, 5e4, 5e3, 500.0, 50.0] {
            let s = estimate_steps_by_radius(r, 10.0);
            assert!(s > last, "{r}: {s}");
            last = s;
        }
        assert_eq!(
            estimate_steps_by_radius(1000.0, 70.0) + 1,
            estimate_steps_by_radius(1000.0, 10.0)
        );
        assert_eq!(
            estimate_steps_by_radius(1000.0, -81.0) + 2,
            estimate_steps_by_radius(1000.0, 10.0)
        );
    }

    #[test]
    fn score_bits_follow_x86_64_conversion() {
        assert_eq!(score_bits(5.0), 5);
        assert_eq!(score_bits(-1.0), u64::MAX);
        assert_eq!(score_bits(1e19), 10_000_000_000_000_000_000);
        assert_eq!(score_bits(1e30), 0);
        assert_eq!(score_bits(-1e30), 1 << 63);
    }

    proptest! {
        /// Every stored point decodes to a position inside its own cell (within half
        /// a cell of where it was added), re-encodes to the same score, and lies in
        /// one of the cells a search around it reads.
        #[test]
        fn encode_decode_round_trips(lon in -180.0f64..=180.0, lat in LAT_MIN..=LAT_MAX) {
            let score = encode_score(lon, lat).unwrap();
            prop_assert!(score < 1 << 52);
            let (dlon, dlat) = decode_score(score as f64).unwrap();
            prop_assert!((dlon - lon).abs() <= 360.0 / (1u64 << 26) as f64);
            prop_assert!((dlat - lat).abs() <= 171.0 / (1u64 << 26) as f64);
            prop_assert_eq!(encode_score(dlon, dlat), Some(score));
            let shape = Shape { lon, lat, kind: ShapeKind::Circle { radius: 1.0 }, conversion: 1000.0 };
            let found = shape.cells().iter().any(|c| {
                let (min, max) = c.score_interval();
                (score as f64) >= min && (score as f64) < max
            });
            prop_assert!(found);
        }

        /// A neighbour moved back the other way is the cell itself.
        #[test]
        fn neighbours_invert(bits in 0u64..(1 << 40), step in 1u8..=20) {
            let h = HashBits { bits: bits & ((1u64 << (2 * step as u32)) - 1), step };
            let mut e = neighbors(&h).east;
            move_x(&mut e, -1);
            prop_assert_eq!(e, h);
            let mut n = neighbors(&h).north;
            move_y(&mut n, -1);
            prop_assert_eq!(n, h);
        }
    }
}
