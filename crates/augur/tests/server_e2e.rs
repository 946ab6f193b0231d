//! End-to-end tests of the server, started in-process on an ephemeral port and driven
//! with the `redis` crate (as applications would) and with raw sockets (for exact bytes
//! and malformed input).

mod common;

use augur_server::ServerConfig;
use common::{err, info_field, q, TestServer};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends raw bytes and reads until `want` bytes arrived, the peer closed, or 2 s passed.
async fn raw_exchange(s: &mut TcpStream, send: &[u8], want: usize) -> (Vec<u8>, bool) {
    s.write_all(send).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    loop {
        if got.len() >= want {
            return (got, false);
        }
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) => return (got, false),
            Ok(Ok(0)) | Ok(Err(_)) => return (got, true),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strings_counters_and_errors() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    assert_eq!(q::<String>(&mut c, &["PING"]).await.unwrap(), "PONG");
    assert_eq!(q::<String>(&mut c, &["SET", "k", "v"]).await.unwrap(), "OK");
    assert_eq!(q::<String>(&mut c, &["GET", "k"]).await.unwrap(), "v");
    assert_eq!(
        q::<Option<String>>(&mut c, &["GET", "missing"])
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        q::<Option<String>>(&mut c, &["SET", "k", "x", "NX"])
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        q::<String>(&mut c, &["SET", "k", "w", "XX", "GET"])
            .await
            .unwrap(),
        "v"
    );
    assert_eq!(q::<i64>(&mut c, &["APPEND", "k", "123"]).await.unwrap(), 4);
    assert_eq!(
        q::<String>(&mut c, &["GETRANGE", "k", "1", "-1"])
            .await
            .unwrap(),
        "123"
    );
    assert_eq!(
        q::<i64>(&mut c, &["SETRANGE", "k", "6", "zz"])
            .await
            .unwrap(),
        8
    );
    assert_eq!(
        q::<Vec<u8>>(&mut c, &["GET", "k"]).await.unwrap(),
        b"w123\0\0zz"
    );
    assert_eq!(q::<i64>(&mut c, &["INCR", "n"]).await.unwrap(), 1);
    assert_eq!(q::<i64>(&mut c, &["INCRBY", "n", "41"]).await.unwrap(), 42);
    assert_eq!(q::<i64>(&mut c, &["DECRBY", "n", "2"]).await.unwrap(), 40);
    assert_eq!(
        q::<String>(&mut c, &["INCRBYFLOAT", "n", "0.5"])
            .await
            .unwrap(),
        "40.5"
    );
    assert_eq!(
        q::<String>(&mut c, &["MSET", "a", "1", "b", "2"])
            .await
            .unwrap(),
        "OK"
    );
    assert_eq!(
        q::<Vec<Option<String>>>(&mut c, &["MGET", "a", "nope", "b"])
            .await
            .unwrap(),
        vec![Some("1".into()), None, Some("2".into())]
    );
    assert_eq!(
        q::<i64>(&mut c, &["MSETNX", "a", "9", "c", "3"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        q::<i64>(&mut c, &["EXISTS", "a", "a", "c"]).await.unwrap(),
        2
    );
    assert_eq!(q::<i64>(&mut c, &["DEL", "a", "b", "c"]).await.unwrap(), 2);
    assert_eq!(q::<String>(&mut c, &["TYPE", "k"]).await.unwrap(), "string");
    assert_eq!(q::<String>(&mut c, &["TYPE", "a"]).await.unwrap(), "none");
    assert_eq!(
        q::<String>(&mut c, &["GETDEL", "k"]).await.unwrap(),
        "w123\0\0zz"
    );
    assert_eq!(q::<i64>(&mut c, &["STRLEN", "k"]).await.unwrap(), 0);

    // Redis's exact error texts.
    assert_eq!(
        err(&mut c, &["GET"]).await,
        "ERR wrong number of arguments for 'get' command"
    );
    q::<()>(&mut c, &["SET", "s", "abc"]).await.unwrap();
    assert_eq!(
        err(&mut c, &["INCR", "s"]).await,
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["INCRBYFLOAT", "s", "1"]).await,
        "ERR value is not a valid float"
    );
    q::<()>(&mut c, &["SET", "big", "9223372036854775807"])
        .await
        .unwrap();
    assert_eq!(
        err(&mut c, &["INCR", "big"]).await,
        "ERR increment or decrement would overflow"
    );
    assert_eq!(
        err(&mut c, &["SET", "k", "v", "EX", "1", "PX", "2"]).await,
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["SET", "k", "v", "EX", "0"]).await,
        "ERR invalid expire time in 'set' command"
    );
    assert_eq!(
        err(&mut c, &["NOSUCHCMD", "l", "a", "b"]).await,
        "ERR unknown command 'NOSUCHCMD', with args beginning with: 'l' 'a' 'b'"
    );
    assert_eq!(
        err(&mut c, &["SETRANGE", "k", "-1", "x"]).await,
        "ERR offset is out of range"
    );
    assert_eq!(
        err(&mut c, &["SETRANGE", "k", "536870912", "x"]).await,
        "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
    );
    assert_eq!(
        err(&mut c, &["SELECT", "16"]).await,
        "ERR DB index is out of range"
    );
    // Nothing stored was lost by the errors.
    assert_eq!(q::<String>(&mut c, &["GET", "s"]).await.unwrap(), "abc");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttls_expire_lazily_and_actively() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    q::<()>(&mut c, &["SET", "short", "v", "PX", "150"])
        .await
        .unwrap();
    q::<()>(&mut c, &["SET", "long", "v", "EX", "100"])
        .await
        .unwrap();
    q::<()>(&mut c, &["SET", "forever", "v"]).await.unwrap();
    let pttl: i64 = q(&mut c, &["PTTL", "short"]).await.unwrap();
    assert!((1..=150).contains(&pttl), "{pttl}");
    assert_eq!(q::<i64>(&mut c, &["TTL", "long"]).await.unwrap(), 100);
    assert_eq!(q::<i64>(&mut c, &["TTL", "forever"]).await.unwrap(), -1);
    assert_eq!(q::<i64>(&mut c, &["TTL", "nothing"]).await.unwrap(), -2);
    // EXPIRE options (Redis 7).
    assert_eq!(
        q::<i64>(&mut c, &["EXPIRE", "forever", "50", "XX"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        q::<i64>(&mut c, &["EXPIRE", "long", "50", "GT"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        q::<i64>(&mut c, &["EXPIRE", "long", "50", "LT"])
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        q::<i64>(&mut c, &["EXPIRE", "long", "500", "NX"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        err(&mut c, &["EXPIRE", "long", "5", "NX", "GT"]).await,
        "ERR NX and XX, GT or LT options at the same time are not compatible"
    );
    assert_eq!(q::<i64>(&mut c, &["PERSIST", "long"]).await.unwrap(), 1);
    assert_eq!(q::<i64>(&mut c, &["TTL", "long"]).await.unwrap(), -1);
    // KEEPTTL keeps, plain SET clears.
    q::<()>(&mut c, &["SET", "kt", "v", "EX", "100"])
        .await
        .unwrap();
    q::<()>(&mut c, &["SET", "kt", "w", "KEEPTTL"])
        .await
        .unwrap();
    assert_eq!(q::<i64>(&mut c, &["TTL", "kt"]).await.unwrap(), 100);
    q::<()>(&mut c, &["SET", "kt", "w"]).await.unwrap();
    assert_eq!(q::<i64>(&mut c, &["TTL", "kt"]).await.unwrap(), -1);
    // A past EXPIREAT deletes at once.
    assert_eq!(q::<i64>(&mut c, &["EXPIREAT", "kt", "1"]).await.unwrap(), 1);
    assert_eq!(q::<i64>(&mut c, &["EXISTS", "kt"]).await.unwrap(), 0);
    // Keys never read again must be removed by active expiry (hz 10).
    for i in 0..50 {
        q::<()>(&mut c, &["SET", &format!("tmp:{i}"), "v", "PX", "100"])
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(
        q::<Option<String>>(&mut c, &["GET", "short"])
            .await
            .unwrap(),
        None
    );
    let mut dbsize = 0;
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        dbsize = q::<i64>(&mut c, &["DBSIZE"]).await.unwrap();
        if dbsize == 2 {
            break;
        }
    }
    assert_eq!(dbsize, 2, "only 'long' and 'forever' remain");
    let info: String = q(&mut c, &["INFO", "stats"]).await.unwrap();
    assert!(info_field(&info, "expired_keys") >= 51, "{info}");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelining_and_select_isolation() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    let mut p = redis::pipe();
    for i in 0..1000 {
        p.cmd("SET").arg(format!("p:{i}")).arg(i).ignore();
    }
    for i in 0..1000 {
        p.cmd("GET").arg(format!("p:{i}"));
    }
    let got: Vec<i64> = p.query_async(&mut c).await.unwrap();
    assert_eq!(got, (0..1000).collect::<Vec<i64>>());

    // A raw pipeline delivered in awkward pieces gets every reply, in order.
    let mut s = srv.raw().await;
    let stream = b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$5\r\nhello\r\n*2\r\n$3\r\nGET\r\n$1\r\nx\r\nPING\r\nECHO \"a b\"\r\n";
    for chunk in stream.chunks(7) {
        s.write_all(chunk).await.unwrap();
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let want = b"+OK\r\n$5\r\nhello\r\n+PONG\r\n$3\r\na b\r\n";
    let (got, _) = raw_exchange(&mut s, b"", want.len()).await;
    assert_eq!(got, want);

    // Databases are separate keyspaces.
    let mut s = srv.raw().await;
    let want = b"+OK\r\n+OK\r\n$3\r\ndb3\r\n:1\r\n+OK\r\n$5\r\nhello\r\n";
    let send = b"SELECT 3\r\nSET x db3\r\nGET x\r\nDBSIZE\r\nSELECT 0\r\nGET x\r\n";
    let (got, _) = raw_exchange(&mut s, send, want.len()).await;
    assert_eq!(got, want);
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]).await.unwrap(), 1001);
    q::<()>(&mut c, &["FLUSHDB"]).await.unwrap();
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]).await.unwrap(), 0);
    let (got, _) = raw_exchange(&mut s, b"SELECT 3\r\nGET x\r\n", 14).await;
    assert_eq!(got.len(), 14);
    assert_eq!(got, b"+OK\r\n$3\r\ndb3\r\n");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_and_hello3() {
    let cfg = ServerConfig {
        requirepass: Some("s3cret".into()),
        ..ServerConfig::default()
    };
    let srv = TestServer::start(cfg).await;
    let mut s = srv.raw().await;
    let want = "-NOAUTH Authentication required.\r\n\
                -WRONGPASS invalid username-password pair or user is disabled.\r\n\
                -WRONGPASS invalid username-password pair or user is disabled.\r\n";
    let (got, _) = raw_exchange(
        &mut s,
        b"GET k\r\nAUTH wrong\r\nAUTH default wrong\r\n",
        want.len(),
    )
    .await;
    assert_eq!(String::from_utf8(got).unwrap(), want);
    // HELLO 3 with AUTH and SETNAME: a 7-entry map ending with the empty modules array.
    let head = b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n";
    let (got, _) = raw_exchange(
        &mut s,
        b"HELLO 3 AUTH default s3cret SETNAME me\r\n",
        usize::MAX,
    )
    .await;
    assert!(got.starts_with(head), "{}", String::from_utf8_lossy(&got));
    assert!(
        got.ends_with(b"$7\r\nmodules\r\n*0\r\n"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    let want = b"_\r\n$2\r\nme\r\n$3\r\n1.5\r\n%1\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n";
    let send = b"GET nothing\r\nCLIENT GETNAME\r\nINCRBYFLOAT f 1.5\r\nCONFIG GET maxmemory\r\n";
    let (got, _) = raw_exchange(&mut s, send, want.len()).await;
    assert_eq!(got, want);

    // The redis crate authenticates through the URL.
    let client = redis::Client::open(format!("redis://:s3cret@{}/", srv.addr)).unwrap();
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    assert_eq!(q::<String>(&mut c, &["PING"]).await.unwrap(), "PONG");

    // Without a password configured, AUTH <password> is an error.
    let srv2 = TestServer::start(ServerConfig::default()).await;
    let mut c2 = srv2.con().await;
    assert_eq!(
        err(&mut c2, &["AUTH", "x"]).await,
        "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
    );
    srv.stop().await;
    srv2.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_errors_close_only_that_client() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    q::<()>(&mut c, &["SET", "keep", "me"]).await.unwrap();
    let cases: &[(&[u8], &str)] = &[
        (
            b"*1\r\n$-5\r\n",
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*x\r\n",
            "-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*1\r\n+PING\r\n",
            "-ERR Protocol error: expected '$', got '+'\r\n",
        ),
        (
            b"SET \"a b\r\n",
            "-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
        (
            b"PING\r\n*2\r\n$3\r\nGET\r\n$-1\r\n",
            "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n",
        ),
    ];
    for (send, want) in cases {
        let mut s = srv.raw().await;
        let (got, closed) = raw_exchange(&mut s, send, usize::MAX).await;
        assert_eq!(String::from_utf8_lossy(&got), *want);
        assert!(closed, "connection closed after {want}");
    }
    let mut s = srv.raw().await;
    let mut big = vec![b'a'; 70 * 1024];
    big.extend_from_slice(b"\r\n");
    let (got, closed) = raw_exchange(&mut s, &big, usize::MAX).await;
    assert_eq!(got, b"-ERR Protocol error: too big inline request\r\n");
    assert!(closed);
    // Arbitrary garbage never takes the server down.
    for seed in 0..50u64 {
        let bytes: Vec<u8> = (0..200u64)
            .map(|i| ((i * 7919 + seed * 104729) % 251) as u8)
            .collect();
        let mut s = srv.raw().await;
        let _ = s.write_all(&bytes).await;
        let mut sink = [0u8; 4096];
        let _ = tokio::time::timeout(Duration::from_millis(20), s.read(&mut sink)).await;
    }
    assert_eq!(q::<String>(&mut c, &["GET", "keep"]).await.unwrap(), "me");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maxmemory_allkeys_lru_evicts() {
    let cfg = ServerConfig {
        maxmemory: 2 * 1024 * 1024,
        maxmemory_policy: augur_store::EvictionPolicy::AllKeysLru,
        // Each shard may overshoot its share by one write (as Redis overshoots by one
        // write globally); few shards keep that slack small for this bound.
        shards: 4,
        ..ServerConfig::default()
    };
    let srv = TestServer::start(cfg).await;
    let mut c = srv.con().await;
    let value = "x".repeat(10_000);
    for i in 0..1000 {
        q::<()>(&mut c, &["SET", &format!("k:{i}"), &value])
            .await
            .unwrap();
    }
    let info: String = q(&mut c, &["INFO"]).await.unwrap();
    let evicted = info_field(&info, "evicted_keys");
    let used = info_field(&info, "used_memory");
    let keys: i64 = q(&mut c, &["DBSIZE"]).await.unwrap();
    assert!(evicted > 0, "{info}");
    assert_eq!(evicted + keys as u64, 1000);
    assert!(
        used <= 2 * 1024 * 1024 + 4 * 16 * 1024 + 64 * 1024,
        "used_memory {used}"
    );
    // The most recent key survived.
    assert_eq!(
        q::<String>(&mut c, &["GET", "k:999"]).await.unwrap().len(),
        10_000
    );
    // Lowering maxmemory at run time evicts on the next write.
    q::<()>(&mut c, &["CONFIG", "SET", "maxmemory", "1mb"])
        .await
        .unwrap();
    q::<()>(&mut c, &["SET", "trigger", "1"]).await.unwrap();
    let used: u64 = info_field(
        &q::<String>(&mut c, &["INFO", "memory"]).await.unwrap(),
        "used_memory",
    );
    assert!(
        used <= 1024 * 1024 + 4 * 16 * 1024 + 64 * 1024,
        "used_memory {used}"
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maxmemory_noeviction_refuses_writes() {
    let cfg = ServerConfig {
        maxmemory: 1024 * 1024,
        ..ServerConfig::default()
    };
    let srv = TestServer::start(cfg).await;
    let mut c = srv.con().await;
    let value = "y".repeat(10_000);
    let mut stored = 0;
    let mut oom = None;
    for i in 0..1000 {
        match q::<()>(&mut c, &["SET", &format!("k:{i}"), &value]).await {
            Ok(()) => stored += 1,
            Err(e) => {
                oom = Some(format!(
                    "{} {}",
                    e.code().unwrap_or(""),
                    e.detail().unwrap_or("")
                ));
                break;
            }
        }
    }
    assert_eq!(
        oom.as_deref(),
        Some("OOM command not allowed when used memory > 'maxmemory'.")
    );
    assert!(stored > 10);
    // Reads and deletes still work; nothing already stored was evicted.
    assert_eq!(q::<i64>(&mut c, &["DBSIZE"]).await.unwrap(), stored);
    assert_eq!(q::<String>(&mut c, &["GET", "k:0"]).await.unwrap(), value);
    // An APPEND that needs a larger block is refused (one that fits the block it
    // already has is done in place and needs no memory).
    assert_eq!(
        err(&mut c, &["APPEND", "k:0", &"z".repeat(5000)]).await,
        "OOM command not allowed when used memory > 'maxmemory'."
    );
    assert_eq!(
        q::<i64>(&mut c, &["DEL", "k:0", "k:1", "k:2"])
            .await
            .unwrap(),
        3
    );
    let info: String = q(&mut c, &["INFO", "stats"]).await.unwrap();
    assert_eq!(info_field(&info, "evicted_keys"), 0);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_clients_and_limits() {
    let cfg = ServerConfig {
        maxclients: 3,
        ..ServerConfig::default()
    };
    let srv = TestServer::start(cfg).await;
    let mut c = srv.con().await;
    let got: Vec<String> = q(&mut c, &["CONFIG", "GET", "maxmemory-*"]).await.unwrap();
    assert_eq!(
        got,
        vec![
            "maxmemory-policy",
            "noeviction",
            "maxmemory-samples",
            "5",
            "maxmemory-clients",
            "0"
        ]
    );
    q::<()>(
        &mut c,
        &[
            "CONFIG",
            "SET",
            "maxmemory",
            "10mb",
            "maxmemory-policy",
            "allkeys-lru",
        ],
    )
    .await
    .unwrap();
    let got: Vec<String> = q(&mut c, &["CONFIG", "GET", "maxmemory", "maxmemory-policy"])
        .await
        .unwrap();
    assert_eq!(
        got,
        vec!["maxmemory", "10485760", "maxmemory-policy", "allkeys-lru"]
    );
    assert_eq!(
        err(&mut c, &["CONFIG", "SET", "maxmemory-samples", "0"]).await,
        "ERR CONFIG SET failed (possibly related to argument 'maxmemory-samples') - argument must be between 1 and 64 inclusive"
    );
    let got: Vec<String> = q(&mut c, &["CONFIG", "GET", "save"]).await.unwrap();
    assert_eq!(got, vec!["save", ""]);
    q::<()>(&mut c, &["CLIENT", "SETNAME", "tester"])
        .await
        .unwrap();
    let list: String = q(&mut c, &["CLIENT", "LIST"]).await.unwrap();
    assert!(list.contains("name=tester"), "{list}");
    // maxclients 3: the multiplexed connection plus two raw ones fill it.
    let _a = srv.raw().await;
    let _b = srv.raw().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut d = srv.raw().await;
    let (got, closed) = raw_exchange(&mut d, b"", usize::MAX).await;
    assert_eq!(got, b"-ERR max number of clients reached\r\n");
    assert!(closed);

    // The query buffer limit closes a client whose unfinished command grows past it.
    drop(_a);
    tokio::time::sleep(Duration::from_millis(100)).await;
    q::<()>(
        &mut c,
        &["CONFIG", "SET", "client-query-buffer-limit", "1mb"],
    )
    .await
    .unwrap();
    let mut s = srv.raw().await;
    let mut req = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000000\r\n".to_vec();
    req.extend(std::iter::repeat_n(b'z', 1_500_000));
    let _ = s.write_all(&req).await;
    let (got, closed) = raw_exchange(&mut s, b"", usize::MAX).await;
    assert!(got.is_empty() && closed);
    assert_eq!(q::<String>(&mut c, &["PING"]).await.unwrap(), "PONG");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_timeout_and_shutdown() {
    let cfg = ServerConfig {
        timeout: 1,
        ..ServerConfig::default()
    };
    let srv = TestServer::start(cfg).await;
    let mut idle = srv.raw().await;
    let (got, _) = raw_exchange(&mut idle, b"PING\r\n", 7).await;
    assert_eq!(got, b"+PONG\r\n");
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(4), idle.read(&mut buf))
        .await
        .expect("closed within 4s");
    assert_eq!(n.unwrap_or(0), 0);
    // SHUTDOWN stops the server; run() returns.
    let mut s = srv.raw().await;
    let (_, closed) = raw_exchange(&mut s, b"SHUTDOWN NOSAVE\r\n", usize::MAX).await;
    assert!(closed);
    tokio::time::timeout(Duration::from_secs(5), srv.task)
        .await
        .expect("run returned")
        .unwrap()
        .unwrap();
}
