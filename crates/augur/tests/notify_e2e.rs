//! End-to-end tests of keyspace notifications (notify-keyspace-events, Redis's notify.c)
//! and SWAPDB (db.c), over real sockets with the `redis` crate: the events each command
//! publishes and their order, events from inside the store (expired, evicted, new),
//! tenant isolation, and SWAPDB's effect on keys, INFO keyspace, WATCH and event
//! database numbers.

mod common;

use augur_server::ServerConfig;
use common::{err, q, TestServer};
use futures_util::StreamExt;
use redis::aio::MultiplexedConnection;
use std::time::Duration;

use common::MsgStream as Stream;

/// A connection subscribed to every pattern (`PSUBSCRIBE *`) as `user`.
async fn subscriber(srv: &TestServer, user: Option<(&str, &str)>) -> Stream {
    let url = match user {
        Some((u, p)) => format!("redis://{u}:{p}@{}/", srv.addr),
        None => format!("redis://{}/", srv.addr),
    };
    let client = redis::Client::open(url).unwrap();
    let mut ps = client.get_async_pubsub().await.unwrap();
    ps.psubscribe("*").await.unwrap();
    Box::pin(ps.into_on_message())
}

async fn take(s: &mut Stream, n: usize) -> Vec<String> {
    common::take_messages(s, n).await
}

/// No message within 300 ms.
async fn silent(s: &mut Stream) {
    if let Ok(Some(m)) = tokio::time::timeout(Duration::from_millis(300), s.next()).await {
        panic!(
            "unexpected message {} {}",
            m.get_channel_name(),
            String::from_utf8_lossy(m.get_payload_bytes())
        );
    }
}

async fn ok(c: &mut MultiplexedConnection, args: &[&str]) {
    q::<redis::Value>(c, args)
        .await
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
}

/// Keyevent-only notifications: one message per event, "__keyevent@db__:event key".
fn ev(db: u8, event: &str, key: &str) -> String {
    format!("__keyevent@{db}__:{event} {key}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_round_trip_and_errors_as_redis() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    let get = |c: &mut MultiplexedConnection| {
        let mut c = c.clone();
        async move {
            q::<Vec<String>>(&mut c, &["CONFIG", "GET", "notify-keyspace-events"])
                .await
                .unwrap()[1]
                .clone()
        }
    };
    assert_eq!(get(&mut c).await, "");
    for (set, want) in [
        ("gKE", "gKE"),
        ("$lshzxeKE", "$lshzxeKE"),
        ("KA", "AK"),
        ("EA", "AE"),
        ("Kn", "nK"),
        ("AmE", "AEm"),
        ("", ""),
    ] {
        ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", set]).await;
        assert_eq!(get(&mut c).await, want, "after setting {set:?}");
    }
    assert_eq!(
        err(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEq"]).await,
        "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_published_by_default_and_classes_mask() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    let mut s = subscriber(&srv, None).await;
    ok(&mut c, &["SET", "foo", "bar"]).await;
    ok(&mut c, &["DEL", "foo"]).await;
    silent(&mut s).await;
    // A class without K or E publishes nothing; K or E without the class neither.
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "g$"]).await;
    ok(&mut c, &["SET", "foo", "bar"]).await;
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEh"]).await;
    ok(&mut c, &["SET", "foo", "bar"]).await;
    silent(&mut s).await;
    ok(&mut c, &["HSET", "h", "f", "v"]).await;
    assert_eq!(
        take(&mut s, 2).await,
        ["__keyspace@0__:h hset", "__keyevent@0__:hset h"]
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn string_and_keyspace_commands_publish_redis_events() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "E$g"]).await;
    let mut s = subscriber(&srv, None).await;
    ok(&mut c, &["SET", "k", "1"]).await;
    ok(&mut c, &["SET", "k", "2", "EX", "100"]).await;
    ok(&mut c, &["SET", "k", "3", "NX"]).await; // refused: no event
    ok(&mut c, &["INCR", "k"]).await;
    ok(&mut c, &["INCRBYFLOAT", "k", "1.5"]).await;
    ok(&mut c, &["APPEND", "k", "x"]).await;
    ok(&mut c, &["SETRANGE", "k", "0", "y"]).await;
    ok(&mut c, &["PERSIST", "k"]).await;
    ok(&mut c, &["PERSIST", "k"]).await; // no TTL: no event
    ok(&mut c, &["EXPIRE", "k", "100"]).await;
    ok(&mut c, &["EXPIRE", "k", "100", "NX"]).await; // refused: no event
    ok(&mut c, &["RENAME", "k", "k2"]).await;
    ok(&mut c, &["COPY", "k2", "k3", "DB", "2"]).await;
    ok(&mut c, &["MOVE", "k2", "1"]).await;
    ok(&mut c, &["MSET", "a", "1", "b", "2"]).await;
    ok(&mut c, &["DEL", "a", "b", "missing"]).await;
    ok(&mut c, &["SETEX", "e", "100", "v"]).await;
    ok(&mut c, &["GETDEL", "e"]).await;
    ok(&mut c, &["EXPIRE", "k3", "-1"]).await; // k3 is in db 2: nothing here
    ok(&mut c, &["SET", "z", "v"]).await;
    ok(&mut c, &["EXPIRE", "z", "-1"]).await; // a past time deletes
    ok(&mut c, &["SETBIT", "bits", "3", "1"]).await;
    ok(&mut c, &["SETBIT", "bits", "3", "1"]).await; // unchanged: no event
    ok(&mut c, &["BITOP", "NOT", "dest", "bits"]).await;
    assert_eq!(
        take(&mut s, 24).await,
        [
            ev(0, "set", "k"),
            ev(0, "set", "k"),
            ev(0, "expire", "k"),
            ev(0, "incrby", "k"),
            ev(0, "incrbyfloat", "k"),
            ev(0, "append", "k"),
            ev(0, "setrange", "k"),
            ev(0, "persist", "k"),
            ev(0, "expire", "k"),
            ev(0, "rename_from", "k"),
            ev(0, "rename_to", "k2"),
            ev(2, "copy_to", "k3"),
            ev(0, "move_from", "k2"),
            ev(1, "move_to", "k2"),
            ev(0, "set", "a"),
            ev(0, "set", "b"),
            ev(0, "del", "a"),
            ev(0, "del", "b"),
            ev(0, "set", "e"),
            ev(0, "expire", "e"),
            ev(0, "del", "e"),
            ev(0, "set", "z"),
            ev(0, "del", "z"),
            ev(0, "setbit", "bits"),
        ]
    );
    assert_eq!(take(&mut s, 1).await, [ev(0, "set", "dest")]);
    silent(&mut s).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hash_and_set_events_and_deletion_when_emptied() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Eshg"]).await;
    let mut s = subscriber(&srv, None).await;
    ok(&mut c, &["HSET", "h", "a", "1", "b", "2"]).await;
    ok(&mut c, &["HSETNX", "h", "a", "9"]).await; // exists: no event
    ok(&mut c, &["HINCRBY", "h", "a", "1"]).await;
    ok(&mut c, &["HINCRBYFLOAT", "h", "b", "0.5"]).await;
    ok(&mut c, &["HDEL", "h", "nope"]).await; // nothing removed: no event
    ok(&mut c, &["HDEL", "h", "a", "b"]).await;
    ok(&mut c, &["SADD", "s", "a", "b", "c"]).await;
    ok(&mut c, &["SADD", "s", "a"]).await; // nothing added: no event
    ok(&mut c, &["SREM", "s", "x"]).await; // nothing removed: no event
    ok(&mut c, &["SREM", "s", "c"]).await;
    ok(&mut c, &["SADD", "d", "a"]).await;
    ok(&mut c, &["SMOVE", "s", "d", "a"]).await; // already in d: only srem
    ok(&mut c, &["SMOVE", "s", "d", "b"]).await; // s emptied
    ok(&mut c, &["SINTERSTORE", "i", "d", "d"]).await;
    ok(&mut c, &["SINTERSTORE", "i", "d", "missing"]).await; // empty: deletes i
    ok(&mut c, &["SPOP", "d"]).await;
    ok(&mut c, &["SPOP", "d", "5"]).await; // pops the rest
    assert_eq!(
        take(&mut s, 17).await,
        [
            ev(0, "hset", "h"),
            ev(0, "hincrby", "h"),
            ev(0, "hincrbyfloat", "h"),
            ev(0, "hdel", "h"),
            ev(0, "del", "h"),
            ev(0, "sadd", "s"),
            ev(0, "srem", "s"),
            ev(0, "sadd", "d"),
            ev(0, "srem", "s"),
            ev(0, "srem", "s"),
            ev(0, "del", "s"),
            ev(0, "sadd", "d"),
            ev(0, "sinterstore", "i"),
            ev(0, "del", "i"),
            ev(0, "spop", "d"),
            ev(0, "spop", "d"),
            ev(0, "del", "d"),
        ]
    );
    silent(&mut s).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_events_expired_lazy_and_active_evicted_and_new() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Exen"]).await;
    let mut s = subscriber(&srv, None).await;
    // new: on creation only.
    ok(&mut c, &["SET", "foo", "bar"]).await;
    ok(&mut c, &["SET", "foo", "baz"]).await;
    ok(&mut c, &["SADD", "set", "m"]).await;
    assert_eq!(
        take(&mut s, 2).await,
        [ev(0, "new", "foo"), ev(0, "new", "set")]
    );
    // Lazy expiry: the lookup of a key past its time publishes "expired".
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Ex"]).await;
    ok(&mut c, &["SELECT", "3"]).await;
    ok(&mut c, &["PSETEX", "lazy", "20", "v"]).await;
    tokio::time::sleep(Duration::from_millis(40)).await;
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "lazy"]).await.unwrap(), 0);
    assert_eq!(take(&mut s, 1).await, [ev(3, "expired", "lazy")]);
    // Active expiry: nobody looks the key up.
    ok(&mut c, &["PSETEX", "bg", "50", "v"]).await;
    assert_eq!(take(&mut s, 1).await, [ev(3, "expired", "bg")]);
    // Eviction when maxmemory drops.
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Ee"]).await;
    ok(&mut c, &["FLUSHALL"]).await;
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    )
    .await;
    ok(&mut c, &["SET", "victim", "bar"]).await;
    ok(&mut c, &["CONFIG", "SET", "maxmemory", "1"]).await;
    assert_eq!(take(&mut s, 1).await, [ev(3, "evicted", "victim")]);
    ok(&mut c, &["CONFIG", "SET", "maxmemory", "0"]).await;
    silent(&mut s).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keymiss_events_for_read_misses() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Em"]).await;
    let mut s = subscriber(&srv, None).await;
    ok(&mut c, &["GET", "nope"]).await;
    ok(&mut c, &["HGET", "nohash", "f"]).await;
    ok(&mut c, &["SET", "here", "v"]).await;
    ok(&mut c, &["GET", "here"]).await;
    assert_eq!(
        take(&mut s, 2).await,
        [ev(0, "keymiss", "nope"), ev(0, "keymiss", "nohash")]
    );
    silent(&mut s).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_stay_within_their_tenant() {
    let srv = TestServer::start(ServerConfig {
        users: vec![
            "app1 on >pw1 ~* &* +@all".into(),
            "app2 on >pw2 ~* &* +@all".into(),
        ],
        notify_keyspace_events: augur_store::notify::parse_flags(b"KEA").unwrap(),
        ..Default::default()
    })
    .await;
    let mut s1 = subscriber(&srv, Some(("app1", "pw1"))).await;
    let mut s2 = subscriber(&srv, Some(("app2", "pw2"))).await;
    let mut sd = subscriber(&srv, None).await;
    let mut a1 = srv.con_as("app1", "pw1").await;
    ok(&mut a1, &["SET", "k", "v"]).await;
    ok(&mut a1, &["PSETEX", "t", "30", "v"]).await;
    assert_eq!(
        take(&mut s1, 6).await,
        [
            "__keyspace@0__:k set",
            "__keyevent@0__:set k",
            "__keyspace@0__:t set",
            "__keyevent@0__:set t",
            "__keyspace@0__:t expire",
            "__keyevent@0__:expire t",
        ]
    );
    // The store's own event (active expiry) also goes to the key's tenant only.
    assert_eq!(
        take(&mut s1, 2).await,
        ["__keyspace@0__:t expired", "__keyevent@0__:expired t"]
    );
    silent(&mut s2).await;
    silent(&mut sd).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapdb_swaps_contents_for_every_connection_of_the_tenant() {
    let srv = TestServer::start(ServerConfig {
        users: vec!["app on >pw ~* &* +@all".into()],
        ..Default::default()
    })
    .await;
    let mut c = srv.con().await;
    let mut other = srv.con().await;
    let mut app = srv.con_as("app", "pw").await;
    ok(&mut app, &["SET", "x", "app0"]).await;
    ok(&mut c, &["SET", "x", "zero"]).await;
    ok(&mut c, &["SET", "y", "zero", "EX", "100"]).await;
    ok(&mut c, &["SELECT", "1"]).await;
    ok(&mut c, &["SET", "x", "one"]).await;
    ok(&mut c, &["SELECT", "0"]).await;
    assert_eq!(
        err(&mut c, &["SWAPDB", "0", "x"]).await,
        "ERR invalid second DB index"
    );
    assert_eq!(
        err(&mut c, &["SWAPDB", "a", "0"]).await,
        "ERR invalid first DB index"
    );
    assert_eq!(
        err(&mut c, &["SWAPDB", "0", "16"]).await,
        "ERR DB index is out of range"
    );
    ok(&mut c, &["SWAPDB", "0", "0"]).await;
    ok(&mut c, &["SWAPDB", "0", "1"]).await;
    // Both connections stay on database 0, which now holds what 1 held.
    assert_eq!(q::<String>(&mut c, &["GET", "x"]).await.unwrap(), "one");
    assert_eq!(q::<String>(&mut other, &["GET", "x"]).await.unwrap(), "one");
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]).await.unwrap(), 1);
    ok(&mut c, &["SELECT", "1"]).await;
    assert_eq!(q::<String>(&mut c, &["GET", "x"]).await.unwrap(), "zero");
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]).await.unwrap(), 2);
    let info: String = q(&mut c, &["INFO", "keyspace"]).await.unwrap();
    assert!(info.contains("db0:keys=1,expires=0"), "{info}");
    assert!(info.contains("db1:keys=2,expires=1"), "{info}");
    // MOVE and COPY name logical databases.
    ok(&mut c, &["MOVE", "y", "0"]).await;
    ok(&mut c, &["SELECT", "0"]).await;
    assert!(q::<i64>(&mut c, &["TTL", "y"]).await.unwrap() > 0);
    ok(&mut c, &["COPY", "y", "y2", "DB", "1"]).await;
    ok(&mut c, &["SELECT", "1"]).await;
    assert!(q::<i64>(&mut c, &["EXISTS", "y2"]).await.unwrap() == 1);
    // SCAN and KEYS see the swapped database too.
    let mut keys: Vec<String> = q(&mut c, &["KEYS", "*"]).await.unwrap();
    keys.sort();
    assert_eq!(keys, ["x", "y2"]);
    // FLUSHDB empties the logical database selected.
    ok(&mut c, &["FLUSHDB"]).await;
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]).await.unwrap(), 0);
    assert_eq!(q::<i64>(&mut other, &["DBSIZE"]).await.unwrap(), 2);
    // Another tenant's databases are its own.
    assert_eq!(q::<String>(&mut app, &["GET", "x"]).await.unwrap(), "app0");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapdb_and_watch_as_redis() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    let mut w = srv.con().await;
    let exec_ok = |w: &MultiplexedConnection| {
        let mut w = w.clone();
        async move {
            ok(&mut w, &["MULTI"]).await;
            ok(&mut w, &["PING"]).await;
            !matches!(
                q::<redis::Value>(&mut w, &["EXEC"]).await.unwrap(),
                redis::Value::Nil
            )
        }
    };
    // A watched key that exists is touched by the swap (it "disappears").
    ok(&mut w, &["SET", "x", "30"]).await;
    ok(&mut w, &["WATCH", "x"]).await;
    ok(&mut c, &["SWAPDB", "0", "1"]).await;
    assert!(!exec_ok(&w).await, "EXEC must abort");
    // A missing watched key that the swap brings in is touched.
    ok(&mut c, &["FLUSHALL"]).await;
    ok(&mut c, &["SELECT", "1"]).await;
    ok(&mut c, &["SET", "x", "30"]).await;
    ok(&mut w, &["WATCH", "x"]).await;
    ok(&mut c, &["SWAPDB", "0", "1"]).await;
    assert!(!exec_ok(&w).await, "EXEC must abort");
    // A watched key missing from both is untouched, and the watch stays on logical
    // database 0: a write there after the swap aborts, one to database 1 does not.
    ok(&mut c, &["FLUSHALL"]).await;
    ok(&mut w, &["WATCH", "z"]).await;
    ok(&mut c, &["SWAPDB", "0", "1"]).await;
    ok(&mut c, &["SELECT", "1"]).await;
    ok(&mut c, &["SET", "z", "1"]).await;
    assert!(
        exec_ok(&w).await,
        "a write to another database must not abort"
    );
    ok(&mut w, &["WATCH", "z2"]).await;
    ok(&mut c, &["SWAPDB", "0", "1"]).await;
    ok(&mut c, &["SELECT", "0"]).await;
    ok(&mut c, &["SET", "z2", "1"]).await;
    assert!(
        !exec_ok(&w).await,
        "a write to the watched database must abort"
    );
    // SWAPDB inside a transaction.
    ok(&mut c, &["FLUSHALL"]).await;
    ok(&mut c, &["SET", "k", "in0"]).await;
    ok(&mut c, &["MULTI"]).await;
    ok(&mut c, &["SWAPDB", "0", "1"]).await;
    ok(&mut c, &["GET", "k"]).await;
    let r: Vec<redis::Value> = q(&mut c, &["EXEC"]).await.unwrap();
    assert_eq!(r[1], redis::Value::Nil);
    ok(&mut c, &["SELECT", "1"]).await;
    assert_eq!(q::<String>(&mut c, &["GET", "k"]).await.unwrap(), "in0");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_after_swapdb_name_the_logical_database() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Exg"]).await;
    let mut s = subscriber(&srv, None).await;
    ok(&mut c, &["SELECT", "2"]).await;
    ok(&mut c, &["PSETEX", "t", "80", "v"]).await;
    ok(&mut c, &["SWAPDB", "2", "5"]).await;
    // The key now lives in logical database 5; its expiry (active cycle) says so.
    assert_eq!(
        take(&mut s, 2).await,
        [ev(2, "expire", "t"), ev(5, "expired", "t")]
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_on_sets_and_hashes_is_touched_only_by_a_change() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    let mut w = srv.con().await;
    ok(&mut c, &["SADD", "src", "a", "b"]).await;
    ok(&mut c, &["SADD", "dst", "a"]).await;
    ok(&mut c, &["HSET", "h", "f", "v"]).await;
    ok(&mut w, &["WATCH", "dst", "h"]).await;
    // No change to dst or h: SMOVE of a member dst has, SADD of it, HSETNX of a field
    // that exists, HDEL of one that does not, SREM of a non-member.
    ok(&mut c, &["SMOVE", "src", "dst", "a"]).await;
    ok(&mut c, &["SADD", "dst", "a"]).await;
    ok(&mut c, &["SREM", "dst", "zz"]).await;
    ok(&mut c, &["HSETNX", "h", "f", "x"]).await;
    ok(&mut c, &["HDEL", "h", "nope"]).await;
    ok(&mut w, &["MULTI"]).await;
    ok(&mut w, &["SCARD", "dst"]).await;
    let r: Vec<i64> = q(&mut w, &["EXEC"]).await.unwrap();
    assert_eq!(r, [1]);
    // A real change aborts.
    ok(&mut w, &["WATCH", "dst"]).await;
    ok(&mut c, &["SMOVE", "src", "dst", "b"]).await;
    ok(&mut w, &["MULTI"]).await;
    ok(&mut w, &["PING"]).await;
    assert_eq!(
        q::<redis::Value>(&mut w, &["EXEC"]).await.unwrap(),
        redis::Value::Nil
    );
    srv.stop().await;
}
