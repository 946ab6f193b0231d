//! The in-process test server and query helpers the end-to-end test files share.
#![allow(dead_code)] // each test file uses its own subset

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
