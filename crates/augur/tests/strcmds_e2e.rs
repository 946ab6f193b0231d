//! End-to-end tests of the keyspace relocation commands (RENAME, RENAMENX, COPY, MOVE),
//! EXPIRETIME, OBJECT IDLETIME/ENCODING, the bit commands and LCS, over real sockets with
//! the `redis` crate, including tenants (relocation never crosses a tenant) and memory
//! limits (a refused relocation loses nothing).

mod common;

use augur_server::ServerConfig;
use common::{err, info_field, q, TestServer};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relocation_across_shards_and_databases_keeps_values_and_ttls() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut c = s.con().await;
    // Many names so that source and destination land in different shards.
    for i in 0..200 {
        let k = format!("k{i}");
        let _: () = q(&mut c, &["SET", &k, &format!("v{i}"), "EX", "1000"])
            .await
            .unwrap();
        let r: String = q(&mut c, &["RENAME", &k, &format!("r{i}")]).await.unwrap();
        assert_eq!(r, "OK");
    }
    for i in 0..200 {
        let v: Option<String> = q(&mut c, &["GET", &format!("r{i}")]).await.unwrap();
        assert_eq!(v.as_deref(), Some(format!("v{i}").as_str()));
        let ttl: i64 = q(&mut c, &["TTL", &format!("r{i}")]).await.unwrap();
        assert!((999..=1000).contains(&ttl), "{ttl}");
    }
    let n: i64 = q(&mut c, &["DBSIZE"]).await.unwrap();
    assert_eq!(n, 200);
    assert_eq!(err(&mut c, &["RENAME", "k0", "x"]).await, "ERR no such key");
    let copied: i64 = q(&mut c, &["COPY", "r1", "c1", "DB", "5"]).await.unwrap();
    assert_eq!(copied, 1);
    let moved: i64 = q(&mut c, &["MOVE", "r2", "5"]).await.unwrap();
    assert_eq!(moved, 1);
    let _: () = redis::cmd("SELECT")
        .arg(5)
        .query_async(&mut c)
        .await
        .unwrap();
    let (a, b): (String, String) = redis::pipe()
        .cmd("GET")
        .arg("c1")
        .cmd("GET")
        .arg("r2")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!((a.as_str(), b.as_str()), ("v1", "v2"));
    let t: i64 = q(&mut c, &["PEXPIRETIME", "r2"]).await.unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!(
        (now + 990_000..=now + 1_000_000).contains(&t),
        "{t} vs {now}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relocation_stays_inside_the_callers_tenant() {
    let cfg = ServerConfig {
        users: vec!["app on >pw ~* &* +@all".into()],
        ..Default::default()
    };
    let s = TestServer::start(cfg).await;
    let mut d = s.con().await;
    let mut app = s.con_as("app", "pw").await;
    let _: () = q(&mut d, &["SET", "shared", "default's"]).await.unwrap();
    let _: () = q(&mut app, &["SET", "mine", "app's"]).await.unwrap();
    // The app can neither see nor overwrite the default tenant's key.
    assert_eq!(
        err(&mut app, &["RENAME", "shared", "x"]).await,
        "ERR no such key"
    );
    let r: String = q(&mut app, &["RENAME", "mine", "shared"]).await.unwrap();
    assert_eq!(r, "OK");
    let v: String = q(&mut d, &["GET", "shared"]).await.unwrap();
    assert_eq!(v, "default's");
    let c: i64 = q(&mut app, &["COPY", "shared", "other", "DB", "3"])
        .await
        .unwrap();
    assert_eq!(c, 1);
    let _: () = redis::cmd("SELECT")
        .arg(3)
        .query_async(&mut d)
        .await
        .unwrap();
    let none: Option<String> = q(&mut d, &["GET", "other"]).await.unwrap();
    assert_eq!(none, None, "a tenant's DB 3 is its own");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_idletime_is_in_seconds() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut c = s.con().await;
    let _: () = q(&mut c, &["SET", "old", "x"]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2300)).await;
    let _: () = q(&mut c, &["SET", "new", "x"]).await.unwrap();
    // Plenty of accesses: a logical clock would call "new" idle by now.
    for _ in 0..500 {
        let _: Option<String> = q(&mut c, &["GET", "other"]).await.unwrap();
    }
    let old: i64 = q(&mut c, &["OBJECT", "IDLETIME", "old"]).await.unwrap();
    let new: i64 = q(&mut c, &["OBJECT", "IDLETIME", "new"]).await.unwrap();
    assert!((2..=3).contains(&old), "{old}");
    assert!(new <= 1, "{new}");
    let enc: String = q(&mut c, &["OBJECT", "ENCODING", "old"]).await.unwrap();
    assert_eq!(enc, "embstr");
    s.stop().await;
}

/// RESTORE ... IDLETIME (what MIGRATE and redis-cli --rdb style copies use to keep LRU
/// order): OBJECT IDLETIME answers the seconds given, and eviction ranks the key as
/// that old: under allkeys-lru, backdated keys go before keys written earlier than they
/// were restored but never backdated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_idletime_dates_the_key_for_object_idletime_and_eviction() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut c = s.con().await;
    let _: () = q(&mut c, &["SET", "src", "bar"]).await.unwrap();
    let payload: Vec<u8> = q(&mut c, &["DUMP", "src"]).await.unwrap();
    let restore = |key: &str, extra: &[&str]| {
        let mut cmd = redis::cmd("RESTORE");
        cmd.arg(key).arg(0).arg(&payload);
        for a in extra {
            cmd.arg(*a);
        }
        cmd
    };
    let ok: String = restore("foo", &["IDLETIME", "1000"])
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let idle: i64 = q(&mut c, &["OBJECT", "IDLETIME", "foo"]).await.unwrap();
    assert!((1000..=1001).contains(&idle), "{idle}");
    let v: String = q(&mut c, &["GET", "foo"]).await.unwrap();
    assert_eq!(v, "bar");
    // A read makes it recent again.
    let idle: i64 = q(&mut c, &["OBJECT", "IDLETIME", "foo"]).await.unwrap();
    assert!(idle <= 1, "{idle}");
    // An older key restored later is dated no earlier than asked (here: exactly).
    let _: String = restore("older", &["IDLETIME", "5000"])
        .query_async(&mut c)
        .await
        .unwrap();
    let idle: i64 = q(&mut c, &["OBJECT", "IDLETIME", "older"]).await.unwrap();
    assert!((4999..=5001).contains(&idle), "{idle}");
    let e = restore("bad", &["IDLETIME", "-1"])
        .query_async::<String>(&mut c)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("Invalid IDLETIME value"), "{e}");

    // Eviction: 300 plain keys written first, then 300 restored as 1000 s idle, then
    // memory is cut by an eighth and 200 new writes evict about 275 keys.
    let _: () = q(&mut c, &["FLUSHALL"]).await.unwrap();
    let value = "v".repeat(200);
    for i in 0..300 {
        let _: () = q(&mut c, &["SET", &format!("plain:{i}"), &value])
            .await
            .unwrap();
    }
    let _: () = q(&mut c, &["SET", "src", &value]).await.unwrap();
    let payload: Vec<u8> = q(&mut c, &["DUMP", "src"]).await.unwrap();
    let _: () = q(&mut c, &["DEL", "src"]).await.unwrap();
    for i in 0..300 {
        let _: String = redis::cmd("RESTORE")
            .arg(format!("idle:{i}"))
            .arg(0)
            .arg(&payload)
            .arg("IDLETIME")
            .arg(1000)
            .query_async(&mut c)
            .await
            .unwrap();
    }
    // Every restored key reads as 1000 s idle (1001 if a second passed), also on shards
    // whose first wall-clock observation came after the plain keys were written.
    for i in 0..300 {
        let n: i64 = q(&mut c, &["OBJECT", "IDLETIME", &format!("idle:{i}")])
            .await
            .unwrap();
        assert!((1000..=1001).contains(&n), "idle:{i} reads {n}");
    }
    let info: String = q(&mut c, &["INFO", "memory"]).await.unwrap();
    let used = info_field(&info, "used_memory");
    let _: () = q(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
    )
    .await
    .unwrap();
    let _: () = q(
        &mut c,
        &["CONFIG", "SET", "maxmemory", &(used * 7 / 8).to_string()],
    )
    .await
    .unwrap();
    for i in 0..200 {
        let _: () = q(&mut c, &["SET", &format!("new:{i}"), &value])
            .await
            .unwrap();
    }
    let mut left = [0, 0];
    for i in 0..300 {
        for (j, prefix) in ["plain", "idle"].iter().enumerate() {
            let n: i64 = q(&mut c, &["EXISTS", &format!("{prefix}:{i}")])
                .await
                .unwrap();
            left[j] += n;
        }
    }
    // Sampled LRU (K = 5) evicts the backdated keys first: most are gone, most plain
    // keys stay (by write order alone, the plain keys would go first).
    assert!(left[1] < 100, "backdated keys left: {left:?}");
    assert!(left[0] > 200, "plain keys left: {left:?}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bit_commands_and_lcs_through_the_redis_crate() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut c = s.con().await;
    use redis::AsyncCommands;
    let old: bool = c.setbit("b", 100, true).await.unwrap();
    assert!(!old);
    let bit: bool = c.getbit("b", 100).await.unwrap();
    assert!(bit);
    let n: i64 = c.bitcount("b").await.unwrap();
    assert_eq!(n, 1);
    let len: i64 = q(&mut c, &["STRLEN", "b"]).await.unwrap();
    assert_eq!(len, 13);
    let pos: i64 = q(&mut c, &["BITPOS", "b", "1"]).await.unwrap();
    assert_eq!(pos, 100);
    let _: () = c.set("x", "\u{0}\u{ff}").await.unwrap();
    let n: i64 = q(&mut c, &["BITOP", "XOR", "dst", "b", "x"]).await.unwrap();
    assert_eq!(n, 13);
    let r: Vec<Option<i64>> = q(
        &mut c,
        &[
            "BITFIELD", "f", "SET", "u8", "#1", "200", "OVERFLOW", "FAIL", "INCRBY", "u8", "#1",
            "100", "GET", "u8", "8",
        ],
    )
    .await
    .unwrap();
    assert_eq!(r, vec![Some(0), None, Some(200)]);
    let _: () = c.set("l1", "ohmytext").await.unwrap();
    let _: () = c.set("l2", "mynewtext").await.unwrap();
    let l: String = q(&mut c, &["LCS", "l1", "l2"]).await.unwrap();
    assert_eq!(l, "mytext");
    // A large value: SETBIT far past the end grows it once, then edits in place.
    let _: bool = c.setbit("big", 8 * (4 << 20) - 1, true).await.unwrap();
    let len: i64 = q(&mut c, &["STRLEN", "big"]).await.unwrap();
    assert_eq!(len, 4 << 20);
    let usage: i64 = q(&mut c, &["MEMORY", "USAGE", "big"]).await.unwrap();
    // One block: 4 MB plus the header rounds up to jemalloc's 5 MB size class.
    assert!(usage <= (5 << 20) + 4096, "{usage}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_copy_under_noeviction_keeps_everything() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut c = s.con().await;
    let value = "x".repeat(20_000);
    for i in 0..20 {
        let _: () = q(&mut c, &["SET", &format!("k{i}"), &value]).await.unwrap();
    }
    let used: i64 = {
        let info: String = q(&mut c, &["INFO", "memory"]).await.unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let _: () = q(
        &mut c,
        &["CONFIG", "SET", "maxmemory", &(used + 1000).to_string()],
    )
    .await
    .unwrap();
    let mut refused = 0;
    for i in 0..20 {
        match q::<i64>(&mut c, &["COPY", &format!("k{i}"), &format!("copy{i}")]).await {
            Ok(1) => {}
            Ok(other) => panic!("{other}"),
            Err(e) => {
                assert_eq!(e.code(), Some("OOM"));
                refused += 1;
            }
        }
    }
    assert!(refused > 0);
    for i in 0..20 {
        let v: String = q(&mut c, &["GET", &format!("k{i}")]).await.unwrap();
        assert_eq!(v.len(), 20_000);
    }
    s.stop().await;
}

/// MEMORY MALLOC-STATS is jemalloc's own report (where per-size-class fragmentation
/// shows), MEMORY PURGE answers OK, and the help lists both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_malloc_stats_and_purge() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut c = s.con().await;
    let _: () = q(&mut c, &["SET", "k", "v"]).await.unwrap();
    let report: String = q(&mut c, &["MEMORY", "MALLOC-STATS"]).await.unwrap();
    assert!(report.contains("jemalloc statistics"), "{report:.200}");
    assert!(report.contains("bins:"), "{report:.200}");
    let ok: String = q(&mut c, &["MEMORY", "PURGE"]).await.unwrap();
    assert_eq!(ok, "OK");
    let help: Vec<String> = q(&mut c, &["MEMORY", "HELP"]).await.unwrap();
    assert!(
        help.iter().any(|l| l.starts_with("MALLOC-STATS")),
        "{help:?}"
    );
    s.stop().await;
}
