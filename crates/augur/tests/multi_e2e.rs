//! End-to-end tests of transactions (MULTI/EXEC/DISCARD/WATCH/UNWATCH, issue 11 item 1)
//! over real sockets with the `redis` crate, whose `pipe().atomic()` is how applications
//! send them.

mod common;

use augur_server::ServerConfig;
use common::{err, q, TestServer};
use redis::Value;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn atomic_pipeline_runs_every_command_and_returns_each_reply() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut con = s.con().await;
    let (a, b, n): (String, String, i64) = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg("a")
        .arg("1")
        .ignore()
        .cmd("SET")
        .arg("b")
        .arg("2")
        .ignore()
        .cmd("GET")
        .arg("a")
        .cmd("GET")
        .arg("b")
        .cmd("INCR")
        .arg("a")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!((a.as_str(), b.as_str(), n), ("1", "2", 2));
    // An error inside EXEC is one reply of the array; the other commands still ran.
    let mut raw = s.raw().await;
    raw.write_all(b"MULTI\r\nINCR b\r\nSET c x\r\nINCR c\r\nEXEC\r\n")
        .await
        .unwrap();
    let want: &[u8] = b"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n:3\r\n+OK\r\n-ERR value is not an integer or out of range\r\n";
    let mut got = vec![0u8; want.len()];
    raw.read_exact(&mut got).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want));
    let c: String = q(&mut con, &["GET", "c"]).await.unwrap();
    assert_eq!(c, "x");
    let b: i64 = q(&mut con, &["GET", "b"]).await.unwrap();
    assert_eq!(b, 3);
    s.stop().await;
}

#[tokio::test]
async fn errors_while_queueing_abort_exec_and_state_errors_use_redis_wording() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut con = s.con().await;
    assert_eq!(err(&mut con, &["EXEC"]).await, "ERR EXEC without MULTI");
    assert_eq!(
        err(&mut con, &["DISCARD"]).await,
        "ERR DISCARD without MULTI"
    );
    let ok: String = q(&mut con, &["MULTI"]).await.unwrap();
    assert_eq!(ok, "OK");
    assert_eq!(
        err(&mut con, &["MULTI"]).await,
        "ERR MULTI calls can not be nested"
    );
    assert_eq!(
        err(&mut con, &["WATCH", "x"]).await,
        "ERR WATCH inside MULTI is not allowed"
    );
    let queued: String = q(&mut con, &["SET", "k1", "v"]).await.unwrap();
    assert_eq!(queued, "QUEUED");
    assert!(err(&mut con, &["NO-SUCH-COMMAND"])
        .await
        .starts_with("ERR unknown command"));
    assert!(err(&mut con, &["GET"]).await.contains("wrong number"));
    let _: String = q(&mut con, &["SET", "k2", "v"]).await.unwrap();
    assert_eq!(
        err(&mut con, &["EXEC"]).await,
        "EXECABORT Transaction discarded because of previous errors."
    );
    let n: i64 = q(&mut con, &["EXISTS", "k1", "k2"]).await.unwrap();
    assert_eq!(n, 0, "nothing of an aborted transaction runs");
    // The state is cleared: the connection works normally again, and DISCARD drops a queue.
    let _: String = q(&mut con, &["MULTI"]).await.unwrap();
    let _: String = q(&mut con, &["SET", "k1", "v"]).await.unwrap();
    let _: String = q(&mut con, &["DISCARD"]).await.unwrap();
    let n: i64 = q(&mut con, &["EXISTS", "k1"]).await.unwrap();
    assert_eq!(n, 0);
    s.stop().await;
}

async fn exec_after_ping(con: &mut redis::aio::MultiplexedConnection) -> Value {
    let _: String = q(con, &["MULTI"]).await.unwrap();
    let _: String = q(con, &["PING"]).await.unwrap();
    q(con, &["EXEC"]).await.unwrap()
}

#[tokio::test]
async fn watch_aborts_exec_on_a_write_by_another_client_and_only_then() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut a = s.con().await;
    let mut b = s.con().await;
    let _: () = q(&mut a, &["SET", "x", "30"]).await.unwrap();
    let _: () = q(&mut a, &["WATCH", "x", "y", "z"]).await.unwrap();
    let _: () = q(&mut b, &["SET", "y", "1"]).await.unwrap();
    assert_eq!(exec_after_ping(&mut a).await, Value::Nil);
    // After EXEC nothing is watched any more.
    let _: () = q(&mut b, &["SET", "x", "2"]).await.unwrap();
    assert_ne!(exec_after_ping(&mut a).await, Value::Nil);
    // Untouched watched keys let EXEC run.
    let _: () = q(&mut a, &["WATCH", "x"]).await.unwrap();
    let _: () = q(&mut b, &["SET", "other", "1"]).await.unwrap();
    assert_ne!(exec_after_ping(&mut a).await, Value::Nil);
    // EXPIRE, DEL and a database's own key in another database.
    let _: () = q(&mut a, &["WATCH", "x"]).await.unwrap();
    let _: () = q(&mut b, &["EXPIRE", "x", "100"]).await.unwrap();
    assert_eq!(exec_after_ping(&mut a).await, Value::Nil);
    let _: () = q(&mut a, &["WATCH", "x"]).await.unwrap();
    let _: () = q(&mut b, &["SELECT", "3"]).await.unwrap();
    let _: () = q(&mut b, &["SET", "x", "elsewhere"]).await.unwrap();
    assert_ne!(exec_after_ping(&mut a).await, Value::Nil);
    // UNWATCH forgets; DISCARD too.
    let _: () = q(&mut a, &["WATCH", "x"]).await.unwrap();
    let _: () = q(&mut a, &["SET", "x", "mine"]).await.unwrap();
    let _: () = q(&mut a, &["UNWATCH"]).await.unwrap();
    assert_ne!(exec_after_ping(&mut a).await, Value::Nil);
    s.stop().await;
}

#[tokio::test]
async fn watch_sees_expiry_flush_and_eviction() {
    let cfg = ServerConfig {
        maxmemory_policy: augur_store::EvictionPolicy::AllKeysLru,
        ..ServerConfig::default()
    };
    let s = TestServer::start(cfg).await;
    let mut a = s.con().await;
    let mut b = s.con().await;
    // Expiry: live at WATCH, expired by EXEC.
    let _: () = q(&mut a, &["SET", "t", "1", "PX", "50"]).await.unwrap();
    let _: () = q(&mut a, &["WATCH", "t"]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(exec_after_ping(&mut a).await, Value::Nil);
    // Already expired at WATCH: its removal is not a change.
    let _: () = q(&mut a, &["SET", "t", "1", "PX", "1"]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let _: () = q(&mut a, &["WATCH", "t"]).await.unwrap();
    let _: i64 = q(&mut b, &["EXISTS", "t"]).await.unwrap();
    assert_ne!(exec_after_ping(&mut a).await, Value::Nil);
    // FLUSHALL touches the watched keys that exist, not the others.
    let _: () = q(&mut a, &["SET", "x", "1"]).await.unwrap();
    let _: () = q(&mut a, &["WATCH", "x"]).await.unwrap();
    let _: () = q(&mut b, &["FLUSHALL"]).await.unwrap();
    assert_eq!(exec_after_ping(&mut a).await, Value::Nil);
    let _: () = q(&mut a, &["WATCH", "absent"]).await.unwrap();
    let _: () = q(&mut b, &["FLUSHDB"]).await.unwrap();
    assert_ne!(exec_after_ping(&mut a).await, Value::Nil);
    // Eviction: fill far past a small maxmemory; the watched key is evicted eventually.
    let _: () = q(&mut a, &["SET", "w", "watched"]).await.unwrap();
    let _: () = q(&mut a, &["WATCH", "w"]).await.unwrap();
    let _: () = q(&mut b, &["CONFIG", "SET", "maxmemory", "2mb"])
        .await
        .unwrap();
    let value = "v".repeat(1000);
    for i in 0..20_000 {
        let _: () = q(&mut b, &["SET", &format!("fill{i}"), &value])
            .await
            .unwrap();
    }
    let gone: i64 = q(&mut b, &["EXISTS", "w"]).await.unwrap();
    assert_eq!(gone, 0, "the fill evicted the watched key");
    assert_eq!(exec_after_ping(&mut a).await, Value::Nil);
    s.stop().await;
}

/// EXEC is atomic across shards: a reader locking both keys' shards at once (MGET) never
/// sees one INCR of a transaction without the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exec_is_atomic_across_shards() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut setup = s.con().await;
    // Two keys on different shards.
    let (k1, k2) = ("acct:1", "acct:2");
    let _: () = q(&mut setup, &["MSET", k1, "0", k2, "0"]).await.unwrap();
    let writer = {
        let mut con = s.con().await;
        tokio::spawn(async move {
            for _ in 0..2000 {
                let _: (i64, i64) = redis::pipe()
                    .atomic()
                    .cmd("INCR")
                    .arg(k1)
                    .cmd("INCR")
                    .arg(k2)
                    .query_async(&mut con)
                    .await
                    .unwrap();
            }
        })
    };
    let mut reader = s.con().await;
    let mut reads = 0;
    while !writer.is_finished() {
        let (a, b): (i64, i64) = q(&mut reader, &["MGET", k1, k2]).await.unwrap();
        assert_eq!(a, b, "MGET saw half a transaction");
        reads += 1;
    }
    writer.await.unwrap();
    assert!(reads > 10);
    let (a, b): (i64, i64) = q(&mut reader, &["MGET", k1, k2]).await.unwrap();
    assert_eq!((a, b), (2000, 2000));
    s.stop().await;
}

#[tokio::test]
async fn watches_are_per_tenant() {
    let cfg = ServerConfig {
        users: vec![
            "alice on >pa ~* &* +@all".into(),
            "bob on >pb ~* &* +@all".into(),
        ],
        ..ServerConfig::default()
    };
    let s = TestServer::start(cfg).await;
    let mut alice = s.con_as("alice", "pa").await;
    let mut bob = s.con_as("bob", "pb").await;
    let _: () = q(&mut alice, &["WATCH", "shared-name"]).await.unwrap();
    let _: () = q(&mut bob, &["SET", "shared-name", "bob's"]).await.unwrap();
    assert_ne!(exec_after_ping(&mut alice).await, Value::Nil);
    let _: () = q(&mut alice, &["WATCH", "shared-name"]).await.unwrap();
    let _: () = q(&mut alice, &["SET", "shared-name", "alice's"])
        .await
        .unwrap();
    assert_eq!(exec_after_ping(&mut alice).await, Value::Nil);
    s.stop().await;
}

#[tokio::test]
async fn function_flush_and_list_answer_as_a_server_without_libraries() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut con = s.con().await;
    let ok: String = q(&mut con, &["FUNCTION", "FLUSH"]).await.unwrap();
    assert_eq!(ok, "OK");
    let ok: String = q(&mut con, &["FUNCTION", "FLUSH", "ASYNC"]).await.unwrap();
    assert_eq!(ok, "OK");
    assert_eq!(
        err(&mut con, &["FUNCTION", "FLUSH", "LATER"]).await,
        "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"
    );
    let list: Vec<Value> = q(&mut con, &["FUNCTION", "LIST", "WITHCODE"])
        .await
        .unwrap();
    assert!(list.is_empty());
    assert_eq!(
        err(&mut con, &["FUNCTION", "DELETE", "lib"]).await,
        "ERR Library not found"
    );
    let reset: String = q(&mut con, &["RESET"]).await.unwrap();
    assert_eq!(reset, "RESET");
    s.stop().await;
}
