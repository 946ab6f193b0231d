//! The in-process test server and query helpers the end-to-end test files share.
#![allow(dead_code)] // each test file uses its own subset

pub mod blocking;
pub mod replies;

use augur_server::{Server, ServerConfig, ServerHandle};
use redis::aio::MultiplexedConnection;
use redis::{FromRedisValue, RedisResult};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpStream;

pub struct TestServer {
    handle: ServerHandle,
    pub addr: SocketAddr,
    pub task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl TestServer {
    pub async fn start(mut cfg: ServerConfig) -> TestServer {
        cfg.port = 0;
        cfg.bind = vec!["127.0.0.1".into()];
        let server = Server::bind(cfg, None).await.expect("bind");
        let addr = server.local_addrs()[0];
        let handle = server.handle();
        let task = tokio::spawn(server.run());
        TestServer { handle, addr, task }
    }

    pub async fn con(&self) -> MultiplexedConnection {
        let client = redis::Client::open(format!("redis://{}/", self.addr)).unwrap();
        client
            .get_multiplexed_async_connection()
            .await
            .expect("connect")
    }

    pub async fn raw(&self) -> TcpStream {
        TcpStream::connect(self.addr).await.unwrap()
    }

    /// A connection logged in as `user` (the redis crate sends `AUTH user pass`).
    pub async fn con_as(&self, user: &str, pass: &str) -> MultiplexedConnection {
        let client = redis::Client::open(format!("redis://{user}:{pass}@{}/", self.addr)).unwrap();
        client
            .get_multiplexed_async_connection()
            .await
            .expect("connect as user")
    }

    pub async fn stop(self) {
        self.handle.shutdown();
        tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .expect("server stops")
            .unwrap()
            .unwrap();
    }
}

pub async fn q<T: FromRedisValue>(
    con: &mut MultiplexedConnection,
    args: &[&str],
) -> RedisResult<T> {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query_async(con).await
}

/// The error text as the server sent it (code plus message).
pub async fn err(con: &mut MultiplexedConnection, args: &[&str]) -> String {
    match q::<redis::Value>(con, args).await {
        Ok(v) => panic!("{args:?} succeeded with {v:?}"),
        Err(e) => {
            let code = e.code().unwrap_or("").to_string();
            let detail = e.detail().unwrap_or("").to_string();
            format!("{code} {detail}").trim().to_string()
        }
    }
}

/// A numeric `name:value` field of an INFO reply.
pub fn info_field(info: &str, name: &str) -> u64 {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in INFO"))
        .trim()
        .parse()
        .unwrap()
}

/// OBJECT ENCODING of `key`.
pub async fn encoding(con: &mut MultiplexedConnection, key: &str) -> String {
    q(con, &["OBJECT", "ENCODING", key]).await.unwrap()
}

/// The fields of INFO dlru's `dlru_keyspace:` line (DLRU's and `maxmemory-policy
/// auto`'s last decision for the keyspace), if there is one.
pub async fn dlru_decision(
    con: &mut MultiplexedConnection,
) -> Option<std::collections::HashMap<String, String>> {
    let info: String = q(con, &["INFO", "dlru"]).await.unwrap();
    let line = info
        .lines()
        .find_map(|l| l.strip_prefix("dlru_keyspace:"))?;
    Some(
        line.split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim().to_string()))
            .collect(),
    )
}

/// The interval number of a [`dlru_decision`] (0 for none).
pub fn dlru_interval(d: &Option<std::collections::HashMap<String, String>>) -> u64 {
    d.as_ref().map_or(0, |d| d["interval"].parse().unwrap())
}

/// Waits (up to a minute) until the keyspace's interval `n` has ended; its decision.
pub async fn wait_dlru_interval(
    con: &mut MultiplexedConnection,
    n: u64,
) -> std::collections::HashMap<String, String> {
    let t = std::time::Instant::now();
    loop {
        let d = dlru_decision(con).await;
        if dlru_interval(&d) >= n {
            return d.unwrap();
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no interval {n}: {d:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// GET, and SET on a miss (a cache-aside client); what the GET read.
pub async fn get_or_set(con: &mut MultiplexedConnection, key: &str, value: &str) -> Option<String> {
    let v: Option<String> = q(con, &["GET", key]).await.unwrap();
    if v.is_none() {
        let _: () = q(con, &["SET", key, value]).await.unwrap();
    }
    v
}

/// Replays `trace` as a cache-aside client (GET `k:KEY`, SET `value` on a miss) on one
/// connection; the misses.
pub async fn replay_misses(
    con: &mut MultiplexedConnection,
    trace: &[(u64, u32)],
    value: &str,
) -> u64 {
    let mut misses = 0;
    for &(key, _) in trace {
        if get_or_set(con, &format!("k:{key}"), value).await.is_none() {
            misses += 1;
        }
    }
    misses
}

/// A trace's references as (key, size) pairs.
pub fn load_refs(path: &std::path::Path) -> Vec<(u64, u32)> {
    augur_trace::load_all(path)
        .unwrap()
        .into_iter()
        .map(|r| (r.key, r.size))
        .collect()
}

/// The server half of a fidelity test: starts a server with `cfg`, replays `trace` into
/// it as a cache-aside client (GET, SET of 100 bytes on a miss, one connection), stops
/// it; returns the miss ratio and the keys it held at the end (the size to simulate at).
pub async fn replay_miss_ratio(cfg: ServerConfig, trace: &[(u64, u32)]) -> (f64, u64) {
    let srv = TestServer::start(cfg).await;
    let mut con = srv.con().await;
    let misses = replay_misses(&mut con, trace, &"x".repeat(100)).await;
    let keys: u64 = q(&mut con, &["DBSIZE"]).await.unwrap();
    srv.stop().await;
    (misses as f64 / trace.len() as f64, keys)
}

/// Sets `maxmemory` to what `n` keys of `value` are charged (measured: SET them, read
/// used_memory, FLUSHALL); returns it.
pub async fn limit_to_keys(con: &mut MultiplexedConnection, n: usize, value: &str) -> u64 {
    for i in 0..n {
        let _: () = q(con, &["SET", &format!("fill:{i}"), value]).await.unwrap();
    }
    let info: String = q(con, &["INFO", "memory"]).await.unwrap();
    let limit = info_field(&info, "used_memory");
    let _: () = q(con, &["FLUSHALL"]).await.unwrap();
    let ok: String = q(con, &["CONFIG", "SET", "maxmemory", &limit.to_string()])
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    limit
}

/// [`limit_to_keys`], then CONFIG SETs `name` to `auto` and checks it reads back.
pub async fn limit_to_keys_then_auto(
    con: &mut MultiplexedConnection,
    n: usize,
    value: &str,
    name: &str,
) {
    limit_to_keys(con, n, value).await;
    let _: () = q(con, &["CONFIG", "SET", name, "auto"]).await.unwrap();
    let got: Vec<String> = q(con, &["CONFIG", "GET", name]).await.unwrap();
    assert_eq!(got[1], "auto");
}

/// A Pub/Sub message stream (a redis crate `PubSub` turned into its messages).
pub type MsgStream = std::pin::Pin<Box<dyn futures_util::Stream<Item = redis::Msg> + Send>>;

/// The next `n` messages of `s` as "channel payload" (each within 3 s).
pub async fn take_messages(s: &mut MsgStream, n: usize) -> Vec<String> {
    use futures_util::StreamExt;
    let mut out = Vec::new();
    for _ in 0..n {
        let m = tokio::time::timeout(Duration::from_secs(3), s.next())
            .await
            .unwrap_or_else(|_| panic!("message {} of {n} within 3 s; got {out:?}", out.len()))
            .expect("stream open");
        out.push(format!(
            "{} {}",
            m.get_channel_name(),
            String::from_utf8_lossy(m.get_payload_bytes())
        ));
    }
    out
}

/// A connection to the server at `addr` subscribed to every pattern (`PSUBSCRIBE *`).
pub async fn psubscribe_all(addr: SocketAddr) -> MsgStream {
    let client = redis::Client::open(format!("redis://{addr}/")).unwrap();
    let mut ps = client.get_async_pubsub().await.unwrap();
    ps.psubscribe("*").await.unwrap();
    Box::pin(ps.into_on_message())
}

/// The keyspace and keyevent messages of `events` (event, key) in db 0, in order, as
/// [`take_messages`] gives them.
pub fn keyspace_messages(events: &[(&str, &str)]) -> Vec<String> {
    events
        .iter()
        .flat_map(|(e, k)| {
            [
                format!("__keyspace@0__:{k} {e}"),
                format!("__keyevent@0__:{e} {k}"),
            ]
        })
        .collect()
}
