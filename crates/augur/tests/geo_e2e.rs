//! End-to-end tests of the GEO commands over real sockets with the `redis` crate: searches
//! against a brute-force model (every stored point's distance computed in the test), the
//! replies and error texts redis-server 7.0.15 gives for geo.tcl's Sicily example, STORE /
//! STOREDIST results and their keyspace events, RESP3's shapes (raw bytes), transactions
//! and scripts.
//!
//! Every body takes the server's address, so the same bodies run against a real
//! redis-server 7.0 too (where the expected texts below come from):
//!
//! ```text
//! redis-server --port 7652 --save "" --daemonize yes
//! AUGUR_E2E_REDIS=127.0.0.1:7652 cargo test -p augur --test geo_e2e on_redis -- --ignored
//! ```

mod common;

use common::replies::{bulk, bulks, con, qr, raw_exchange, run_all, Reply};
use common::{encoding, keyspace_messages, psubscribe_all, q};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redis::aio::MultiplexedConnection;
use redis::Value;
use std::collections::HashMap;
use std::net::SocketAddr;
use tokio::net::TcpStream;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

async fn ok(c: &mut MultiplexedConnection, args: &[&str]) -> Value {
    qr(c, args)
        .await
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

fn items(v: Value) -> Vec<Value> {
    match v {
        Value::Array(a) => a,
        other => panic!("not an array: {other:?}"),
    }
}

/// The haversine distance in metres on Redis's sphere (the test's own model).
fn haversine(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    const R: f64 = 6372797.560856;
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dlat = (lat2 - lat1).to_radians();
    let dlon = (lon2 - lon1).to_radians();
    let a = (dlat / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dlon / 2.0).sin().powi(2);
    2.0 * R * a.sqrt().asin()
}

/// Random points added in batches around a few centres (latitudes within ±70, where
/// geo.tcl's fuzz test holds Redis to completeness), then random searches: every result
/// set is the brute-force one except points within a metre of the edge, distances match
/// to the reply's four decimals, ASC is ordered, COUNT keeps the nearest, ANY the right
/// number.
async fn searches_match_brute_force(addr: SocketAddr) {
    let mut c = con(addr).await;
    let mut rng = SmallRng::seed_from_u64(20261203);
    for round in 0..6 {
        let (clon, clat) = (rng.gen_range(-179.0..179.0), rng.gen_range(-65.0..65.0));
        let spread: f64 = [0.05, 0.5, 3.0][round % 3];
        ok(&mut c, &["DEL", "pts"]).await;
        let mut args = vec!["GEOADD".to_string(), "pts".into()];
        for i in 0..400 {
            let lon: f64 = (clon + rng.gen_range(-spread..spread)).clamp(-180.0, 180.0);
            let lat: f64 = (clat + rng.gen_range(-spread..spread)).clamp(-70.0, 70.0);
            args.extend([format!("{lon}"), format!("{lat}"), format!("p{i}")]);
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(ok(&mut c, &refs).await, Value::Int(400));
        // The stored positions (cell centres), as the model's points.
        let mut names = vec!["GEOPOS", "pts"];
        let members: Vec<String> = (0..400).map(|i| format!("p{i}")).collect();
        names.extend(members.iter().map(String::as_str));
        let pos: Vec<(f64, f64)> = items(ok(&mut c, &names).await)
            .into_iter()
            .map(|p| {
                let p = items(p);
                (text(&p[0]).parse().unwrap(), text(&p[1]).parse().unwrap())
            })
            .collect();
        for _ in 0..40 {
            let lon = clon + rng.gen_range(-spread..spread);
            let lat = clat + rng.gen_range(-spread..spread);
            let km: f64 = spread * 111.0 * rng.gen_range(0.05..1.5);
            let boxed = rng.gen_bool(0.4);
            let (w, h) = (km * rng.gen_range(0.5..2.0), km * rng.gen_range(0.5..2.0));
            // Which points the model says are in, out, or too near the edge to say.
            let mut inside = HashMap::new();
            let mut near_edge = 0;
            for (i, &(plon, plat)) in pos.iter().enumerate() {
                let d = haversine(lon, lat, plon, plat);
                let margin = if boxed {
                    let dx = haversine(plon, plat, lon, plat) - w * 500.0;
                    let dy = haversine(plon, plat, plon, lat) - h * 500.0;
                    dx.max(dy)
                } else {
                    d - km * 1000.0
                };
                if margin.abs() < 1.0 {
                    near_edge += 1;
                } else if margin < 0.0 {
                    inside.insert(format!("p{i}"), d);
                }
            }
            let (slon, slat, skm, sw, sh) = (
                format!("{lon}"),
                format!("{lat}"),
                format!("{km}"),
                format!("{w}"),
                format!("{h}"),
            );
            let mut cmd = vec!["GEOSEARCH", "pts", "FROMLONLAT", &slon, &slat];
            if boxed {
                cmd.extend(["BYBOX", &sw, &sh, "km"]);
            } else {
                cmd.extend(["BYRADIUS", &skm, "km"]);
            }
            cmd.extend(["WITHDIST", "ASC"]);
            let got: Vec<(String, f64)> = items(ok(&mut c, &cmd).await)
                .into_iter()
                .map(|e| {
                    let e = items(e);
                    (text(&e[0]), text(&e[1]).parse().unwrap())
                })
                .collect();
            for (m, d) in &got {
                if let Some(want) = inside.get(m) {
                    assert!(
                        (d - want / 1000.0).abs() < 1e-3,
                        "{cmd:?}: {m} at {d} km, model {want} m"
                    );
                }
            }
            for w in got.windows(2) {
                assert!(w[0].1 <= w[1].1, "{cmd:?}: not ascending: {w:?}");
            }
            let found: Vec<&String> = got.iter().map(|(m, _)| m).collect();
            for m in inside.keys() {
                assert!(found.contains(&m), "{cmd:?}: {m} is inside but missing");
            }
            assert!(
                got.len() <= inside.len() + near_edge,
                "{cmd:?}: {} results, model {} (+{near_edge} on the edge)",
                got.len(),
                inside.len()
            );
            // COUNT n: the n nearest (ties aside), ANY: n of them.
            if got.len() > 3 {
                let mut counted = cmd.clone();
                counted.extend(["COUNT", "3"]);
                let nearest = items(ok(&mut c, &counted).await);
                let want: Vec<Value> = got[..3]
                    .iter()
                    .map(|(m, d)| {
                        Value::Array(vec![bulk(m.as_bytes()), bulk(format!("{d:.4}").as_bytes())])
                    })
                    .collect();
                assert_eq!(nearest, want, "{counted:?}");
                counted.push("ANY");
                assert_eq!(items(ok(&mut c, &counted).await).len(), 3, "{counted:?}");
            }
        }
    }
}

/// geo.tcl's Sicily: every reply as redis-server 7.0.15 sends it.
async fn replies_as_redis(addr: SocketAddr) {
    let mut c = con(addr).await;
    let add = [
        "GEOADD",
        "Sicily",
        "13.361389",
        "38.115556",
        "Palermo",
        "15.087269",
        "37.502669",
        "Catania",
    ];
    assert_eq!(ok(&mut c, &add).await, Value::Int(2));
    assert_eq!(ok(&mut c, &add).await, Value::Int(0));
    let edges = [
        "GEOADD",
        "Sicily",
        "12.758489",
        "38.788135",
        "edge1",
        "17.241510",
        "38.788135",
        "edge2",
    ];
    assert_eq!(ok(&mut c, &edges).await, Value::Int(2));
    // Scores are the 52-bit geohashes.
    assert_eq!(
        ok(&mut c, &["ZSCORE", "Sicily", "Palermo"]).await,
        bulk(b"3479099956230698")
    );
    for (unit, want) in [
        ("km", "166.2742"),
        ("mi", "103.3182"),
        ("ft", "545518.8700"),
        ("M", "166274.1516"),
    ] {
        assert_eq!(
            ok(&mut c, &["GEODIST", "Sicily", "Palermo", "Catania", unit]).await,
            bulk(want.as_bytes()),
            "{unit}"
        );
    }
    assert_eq!(
        ok(&mut c, &["GEODIST", "Sicily", "Palermo", "nope"]).await,
        Value::Nil
    );
    assert_eq!(
        ok(&mut c, &["GEODIST", "nokey", "a", "b"]).await,
        Value::Nil
    );
    assert_eq!(
        ok(&mut c, &["GEOPOS", "Sicily", "Palermo", "nonex", "Catania"]).await,
        Value::Array(vec![
            bulks(&["13.36138933897018433", "38.11555639549629859"]),
            Value::Nil,
            bulks(&["15.08726745843887329", "37.50266842333162032"]),
        ])
    );
    assert_eq!(
        ok(
            &mut c,
            &["GEOHASH", "Sicily", "Palermo", "Catania", "nonex"]
        )
        .await,
        Value::Array(vec![bulk(b"sqc8b49rny0"), bulk(b"sqdtr74hyu0"), Value::Nil])
    );
    assert_eq!(
        ok(&mut c, &["GEOHASH", "nokey", "a", "b"]).await,
        Value::Array(vec![Value::Nil, Value::Nil])
    );
    let entry = |m: &str, d: &str, hash: Option<i64>, lon: &str, lat: &str| {
        let mut e = vec![bulk(m.as_bytes()), bulk(d.as_bytes())];
        e.extend(hash.map(Value::Int));
        e.push(bulks(&[lon, lat]));
        Value::Array(e)
    };
    assert_eq!(
        ok(
            &mut c,
            &[
                "GEORADIUS",
                "Sicily",
                "15",
                "37",
                "200",
                "km",
                "WITHDIST",
                "WITHCOORD",
                "WITHHASH",
                "ASC"
            ]
        )
        .await,
        Value::Array(vec![
            entry(
                "Catania",
                "56.4413",
                Some(3479447370796909),
                "15.08726745843887329",
                "37.50266842333162032"
            ),
            entry(
                "Palermo",
                "190.4424",
                Some(3479099956230698),
                "13.36138933897018433",
                "38.11555639549629859"
            ),
        ])
    );
    assert_eq!(
        ok(
            &mut c,
            &[
                "GEOSEARCH",
                "Sicily",
                "FROMLONLAT",
                "15",
                "37",
                "BYBOX",
                "400",
                "400",
                "km",
                "ASC",
                "WITHCOORD",
                "WITHDIST"
            ]
        )
        .await,
        Value::Array(vec![
            entry(
                "Catania",
                "56.4413",
                None,
                "15.08726745843887329",
                "37.50266842333162032"
            ),
            entry(
                "Palermo",
                "190.4424",
                None,
                "13.36138933897018433",
                "38.11555639549629859"
            ),
            entry(
                "edge2",
                "279.7403",
                None,
                "17.24151045083999634",
                "38.78813451624225195"
            ),
            entry(
                "edge1",
                "279.7405",
                None,
                "12.7584877610206604",
                "38.78813451624225195"
            ),
        ])
    );
    // Unsorted: the order the cells and scores give.
    assert_eq!(
        ok(
            &mut c,
            &[
                "GEOSEARCH",
                "Sicily",
                "FROMMEMBER",
                "Palermo",
                "BYRADIUS",
                "200",
                "km"
            ]
        )
        .await,
        bulks(&["Palermo", "edge1", "Catania"])
    );
    assert_eq!(
        ok(
            &mut c,
            &[
                "GEORADIUS",
                "Sicily",
                "15",
                "37",
                "200",
                "km",
                "COUNT",
                "1",
                "ANY"
            ]
        )
        .await,
        bulks(&["Palermo"])
    );
    assert_eq!(
        ok(
            &mut c,
            &[
                "GEORADIUSBYMEMBER_RO",
                "Sicily",
                "Catania",
                "200",
                "km",
                "DESC",
                "COUNT",
                "2"
            ]
        )
        .await,
        bulks(&["Palermo", "Catania"])
    );
    // A sorted set whose scores are not geohashes decodes as Redis's casts do.
    ok(&mut c, &["ZADD", "zs", "-1", "neg", "1e20", "huge"]).await;
    assert_eq!(
        ok(&mut c, &["GEOPOS", "zs", "neg", "huge"]).await,
        Value::Array(vec![
            bulks(&["180", "85.0511287799999991"]),
            bulks(&["-179.99999731779098511", "-85.05112751263942528"]),
        ])
    );
    assert_eq!(
        ok(&mut c, &["GEOHASH", "zs", "neg", "huge"]).await,
        bulks(&["bp05b5048p0", "00bh0hbj200"])
    );
    assert_eq!(
        ok(&mut c, &["TYPE", "Sicily"]).await,
        Value::SimpleString("zset".into())
    );
}

/// Error texts, in geo.c's order of checks (the source key is looked up first).
async fn errors_as_redis(addr: SocketAddr) {
    let mut c = con(addr).await;
    run_all(
        &mut c,
        &[
            &[
                "GEOADD",
                "Sicily",
                "13.361389",
                "38.115556",
                "Palermo",
                "15.087269",
                "37.502669",
                "Catania",
            ],
            &["SET", "str", "x"],
        ],
    )
    .await;
    let cases: &[(&[&str], &str)] = &[
        (&["GEOADD", "g", "1", "2"], "ERR wrong number of arguments for 'geoadd' command"),
        (&["GEOADD", "g", "NX", "XX", "1", "2", "m"], "ERR syntax error"),
        (&["GEOADD", "g", "GT", "1", "2", "m"], "ERR syntax error"),
        (&["GEOADD", "g", "200", "2", "m"], "ERR invalid longitude,latitude pair 200.000000,2.000000"),
        (&["GEOADD", "g", "1", "86", "m"], "ERR invalid longitude,latitude pair 1.000000,86.000000"),
        (&["GEOADD", "g", "abc", "2", "m"], "ERR value is not a valid float"),
        (&["GEOADD", "str", "1", "2", "m"], WRONGTYPE),
        (&["GEODIST", "Sicily", "Palermo", "Catania", "yd"], "ERR unsupported unit provided. please use M, KM, FT, MI"),
        (&["GEODIST", "Sicily", "Palermo", "Catania", "km", "x"], "ERR syntax error"),
        (&["GEODIST", "str", "a", "b"], WRONGTYPE),
        (&["GEOPOS", "str", "a"], WRONGTYPE),
        (&["GEOHASH", "str", "a"], WRONGTYPE),
        (&["GEORADIUS", "Sicily", "15", "37", "-1", "km"], "ERR radius cannot be negative"),
        (&["GEORADIUS", "Sicily", "15", "37", "x", "km"], "ERR need numeric radius"),
        (&["GEORADIUS", "Sicily", "15", "37", "1", "yd"], "ERR unsupported unit provided. please use M, KM, FT, MI"),
        (&["GEORADIUS", "Sicily", "15", "37", "1", "km", "COUNT", "0"], "ERR COUNT must be > 0"),
        (&["GEORADIUS", "Sicily", "15", "37", "1", "km", "COUNT", "x"], "ERR value is not an integer or out of range"),
        (&["GEORADIUS", "Sicily", "15", "37", "1", "km", "ANY"], "ERR the ANY argument requires COUNT argument"),
        (
            &["GEORADIUS", "Sicily", "15", "37", "1", "km", "STORE", "d", "WITHDIST"],
            "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
        ),
        (&["GEORADIUS", "Sicily", "15", "37", "1", "km", "COUNT"], "ERR syntax error"),
        (&["GEORADIUS", "Sicily", "15", "37", "1", "km", "BYBOX", "1", "1", "km"], "ERR syntax error"),
        (&["GEORADIUS_RO", "Sicily", "15", "37", "1", "km", "STORE", "d"], "ERR syntax error"),
        (&["GEORADIUSBYMEMBER", "Sicily", "nope", "1", "km"], "ERR could not decode requested zset member"),
        (&["GEORADIUSBYMEMBER", "str", "nope", "1", "km"], WRONGTYPE),
        (&["geosearch", "Sicily", "FROMLONLAT", "15", "37"], "ERR wrong number of arguments for 'geosearch' command"),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km"],
            "ERR syntax error",
        ),
        (&["GEOSEARCH", "Sicily", "FROMMEMBER", "nope", "BYRADIUS", "1", "km"], "ERR could not decode requested zset member"),
        (&["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "-1", "1", "km"], "ERR height or width cannot be negative"),
        (&["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "a", "1", "km"], "ERR need numeric width"),
        (&["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "1", "a", "km"], "ERR need numeric height"),
        (&["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "STORE", "d"], "ERR syntax error"),
        (&["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "STOREDIST"], "ERR syntax error"),
        (
            &["GEOSEARCHSTORE", "d", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "WITHCOORD"],
            "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
        ),
        (&["GEOSEARCH", "Sicily", "FROMLONLAT", "190", "37", "BYRADIUS", "1", "km"], "ERR invalid longitude,latitude pair 190.000000,37.000000"),
        (&["GEOSEARCH", "str", "FROMLONLAT", "190", "37", "BYRADIUS", "1", "km"], WRONGTYPE),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "BYBOX", "1", "1", "km"],
            "ERR syntax error",
        ),
        (
            &["gEoSeArCh", "Sicily", "FROMLONLAT", "15", "37", "COUNT", "1", "WITHDIST"],
            "ERR exactly one of BYRADIUS and BYBOX can be specified for gEoSeArCh",
        ),
        (
            &["GEOSEARCH", "Sicily", "BYRADIUS", "1", "km", "ASC", "WITHDIST"],
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH",
        ),
    ];
    for (cmd, want) in cases {
        assert_eq!(qr(&mut c, cmd).await, Err(want.to_string()), "{cmd:?}");
    }
    // Nothing was written by the refused commands.
    assert_eq!(ok(&mut c, &["EXISTS", "g", "d"]).await, Value::Int(0));
    // A missing source: an empty reply, or 0 with the destination deleted.
    ok(&mut c, &["SET", "d", "old"]).await;
    assert_eq!(
        ok(
            &mut c,
            &[
                "GEOSEARCHSTORE",
                "d",
                "missing",
                "FROMMEMBER",
                "x",
                "BYRADIUS",
                "1",
                "km"
            ]
        )
        .await,
        Value::Int(0)
    );
    assert_eq!(ok(&mut c, &["EXISTS", "d"]).await, Value::Int(0));
    assert_eq!(
        ok(
            &mut c,
            &[
                "GEOSEARCH",
                "missing",
                "FROMMEMBER",
                "x",
                "BYRADIUS",
                "1",
                "km"
            ]
        )
        .await,
        Value::Array(vec![])
    );
    assert_eq!(
        ok(
            &mut c,
            &["GEORADIUSBYMEMBER", "missing", "x", "bad", "unit"]
        )
        .await,
        Value::Array(vec![])
    );
}

/// STORE and STOREDIST: a sorted set of geohashes or distances, replacing the
/// destination (its TTL too), encoded by size; an empty result deletes it; the events.
async fn store_results_and_events(addr: SocketAddr) {
    let mut c = con(addr).await;
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]).await;
    let mut s = psubscribe_all(addr).await;
    run_all(
        &mut c,
        &[
            &[
                "GEOADD",
                "Sicily",
                "13.361389",
                "38.115556",
                "Palermo",
                "15.087269",
                "37.502669",
                "Catania",
            ],
            &["SET", "d", "x", "EX", "100"],
            &[
                "GEORADIUS",
                "Sicily",
                "15",
                "37",
                "200",
                "km",
                "ASC",
                "STORE",
                "d",
            ],
            &[
                "GEOSEARCHSTORE",
                "d2",
                "Sicily",
                "FROMLONLAT",
                "15",
                "37",
                "BYRADIUS",
                "200",
                "km",
                "ASC",
                "STOREDIST",
            ],
            &[
                "GEOSEARCHSTORE",
                "d2",
                "Sicily",
                "FROMLONLAT",
                "0",
                "0",
                "BYRADIUS",
                "1",
                "km",
            ],
        ],
    )
    .await;
    let want = keyspace_messages(&[
        ("zadd", "Sicily"),
        ("set", "d"),
        ("expire", "d"),
        ("georadiusstore", "d"),
        ("geosearchstore", "d2"),
        ("del", "d2"),
    ]);
    assert_eq!(common::take_messages(&mut s, want.len()).await, want);
    assert_eq!(ok(&mut c, &["TTL", "d"]).await, Value::Int(-1));
    assert_eq!(
        ok(&mut c, &["ZRANGE", "d", "0", "-1", "WITHSCORES"]).await,
        bulks(&["Palermo", "3479099956230698", "Catania", "3479447370796909"])
    );
    assert_eq!(encoding(&mut c, "d").await, "listpack");
    assert_eq!(ok(&mut c, &["EXISTS", "d2"]).await, Value::Int(0));
    ok(
        &mut c,
        &[
            "GEOSEARCHSTORE",
            "d2",
            "Sicily",
            "FROMLONLAT",
            "15",
            "37",
            "BYRADIUS",
            "200",
            "km",
            "ASC",
            "STOREDIST",
        ],
    )
    .await;
    assert_eq!(
        ok(&mut c, &["ZRANGE", "d2", "0", "-1", "WITHSCORES"]).await,
        bulks(&[
            "Catania",
            "56.441257870158204",
            "Palermo",
            "190.44242984775784"
        ])
    );
    // More results than zset-max-listpack-entries: a skiplist.
    ok(&mut c, &["CONFIG", "SET", "zset-max-listpack-entries", "1"]).await;
    ok(
        &mut c,
        &[
            "GEORADIUS",
            "Sicily",
            "15",
            "37",
            "200",
            "km",
            "STORE",
            "d3",
        ],
    )
    .await;
    assert_eq!(encoding(&mut c, "d3").await, "skiplist");
    ok(
        &mut c,
        &["CONFIG", "SET", "zset-max-listpack-entries", "128"],
    )
    .await;
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", ""]).await;
}

/// RESP3: coordinates are doubles (the long-double text), distances stay bulk strings,
/// a missing member's position is a null.
async fn resp3_shapes(addr: SocketAddr) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    raw_exchange(&mut s, &[&["HELLO", "3"]]).await;
    let cases: &[(&[&str], &str)] = &[
        (&["GEOADD", "S", "13.361389", "38.115556", "Palermo"], ":1\r\n"),
        (
            &["GEOPOS", "S", "Palermo", "nope"],
            "*2\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n_\r\n",
        ),
        (&["GEODIST", "S", "Palermo", "Palermo"], "$6\r\n0.0000\r\n"),
        (&["GEODIST", "S", "Palermo", "nope"], "_\r\n"),
        (&["GEOHASH", "S", "nope"], "*1\r\n_\r\n"),
        (
            &["GEOSEARCH", "S", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "m", "WITHCOORD", "WITHDIST"],
            "*1\r\n*3\r\n$7\r\nPalermo\r\n$6\r\n0.0000\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n",
        ),
    ];
    for (cmd, want) in cases {
        assert_eq!(raw_exchange(&mut s, &[cmd]).await, *want, "{cmd:?}");
    }
}

/// Inside MULTI and from scripts, as any sorted-set command.
async fn transactions_and_scripts(addr: SocketAddr) {
    let mut c = con(addr).await;
    let mut raw = TcpStream::connect(addr).await.unwrap();
    let got = raw_exchange(
        &mut raw,
        &[
            &["MULTI"],
            &["GEOADD", "S", "13.361389", "38.115556", "Palermo"],
            &["GEOHASH", "S", "Palermo"],
            &["GEOADD", "S", "500", "1", "x"],
            &["ZCARD", "S"],
            &["EXEC"],
        ],
    )
    .await;
    assert_eq!(
        got,
        "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n\
         *4\r\n:1\r\n*1\r\n$11\r\nsqc8b49rny0\r\n\
         -ERR invalid longitude,latitude pair 500.000000,1.000000\r\n:1\r\n"
    );
    let script = "return redis.call('GEOPOS', KEYS[1], 'Palermo')";
    assert_eq!(
        ok(&mut c, &["EVAL", script, "1", "S"]).await,
        Value::Array(vec![bulks(&[
            "13.36138933897018433",
            "38.11555639549629859"
        ])])
    );
    let store = "return redis.call('GEOSEARCHSTORE', KEYS[2], KEYS[1], 'FROMLONLAT', 13, 38, 'BYRADIUS', 50, 'km')";
    assert_eq!(
        ok(&mut c, &["EVAL", store, "2", "S", "D"]).await,
        Value::Int(1)
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["ZRANGE", "D", "0", "-1"])
            .await
            .unwrap(),
        vec!["Palermo".to_string()]
    );
    let _: Reply = qr(&mut c, &["DEL", "S", "D"]).await;
}

// ---------------------------------------------------------------------------------

/// The external server for the `on_redis` tests, reset for the next one.
async fn external() -> Option<(SocketAddr, tokio::sync::MutexGuard<'static, ()>)> {
    let ext = common::replies::external(&[
        &["CONFIG", "SET", "notify-keyspace-events", ""],
        &["CONFIG", "SET", "zset-max-listpack-entries", "128"],
    ])
    .await?;
    Some(ext)
}

common::replies::on_both!(
    searches_match_brute_force,
    replies_as_redis,
    errors_as_redis,
    store_results_and_events,
    resp3_shapes,
    transactions_and_scripts,
);
