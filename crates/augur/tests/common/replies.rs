//! Commands and their replies as the data-type tests (lists_e2e, zsets_e2e) compare
//! them: a connection of its own, the reply or the error text, reply builders, short
//! forms of long replies and arguments for messages, and Redis's index rules and
//! weighted draws the random-sequence models share.

use super::q;
use rand::Rng;
use redis::aio::MultiplexedConnection;
use redis::Value;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A reply as the tests compare it: the value, or the error as "CODE detail".
pub type Reply = Result<Value, String>;

/// A new connection (its own socket, no response timeout: redis 0.27's default) to the
/// server at `addr`.
pub async fn con(addr: SocketAddr) -> MultiplexedConnection {
    redis::Client::open(format!("redis://{addr}/"))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .expect("connect")
}

/// An error as "CODE detail".
pub fn error_text(e: &redis::RedisError) -> String {
    let code = e.code().unwrap_or("");
    let detail = e.detail().unwrap_or("");
    format!("{code} {detail}").trim().to_string()
}

/// Runs a command of binary arguments.
pub async fn qb(c: &mut MultiplexedConnection, args: &[Vec<u8>]) -> Reply {
    let mut cmd = redis::cmd(std::str::from_utf8(&args[0]).unwrap());
    for a in &args[1..] {
        cmd.arg(&a[..]);
    }
    cmd.query_async::<Value>(c)
        .await
        .map_err(|e| error_text(&e))
}

/// Runs a command; its reply.
pub async fn qr(c: &mut MultiplexedConnection, args: &[&str]) -> Reply {
    q::<Value>(c, args).await.map_err(|e| error_text(&e))
}

pub fn bulk(b: &[u8]) -> Value {
    Value::BulkString(b.to_vec())
}

pub fn bulks<T: AsRef<[u8]>>(items: &[T]) -> Value {
    Value::Array(items.iter().map(|i| bulk(i.as_ref())).collect())
}

/// A reply with long bulk strings and arrays shortened, for messages.
pub fn brief(r: &Reply) -> String {
    fn v(x: &Value) -> String {
        match x {
            Value::BulkString(b) if b.len() > 24 => {
                format!(
                    "{:?}..({} bytes)",
                    String::from_utf8_lossy(&b[..24]),
                    b.len()
                )
            }
            Value::BulkString(b) => format!("{:?}", String::from_utf8_lossy(b)),
            Value::Array(a) if a.len() > 16 => format!(
                "[{}, ... ({} items)]",
                a[..16].iter().map(v).collect::<Vec<_>>().join(", "),
                a.len()
            ),
            Value::Array(a) => format!("[{}]", a.iter().map(v).collect::<Vec<_>>().join(", ")),
            other => format!("{other:?}"),
        }
    }
    match r {
        Ok(x) => v(x),
        Err(e) => format!("error {e:?}"),
    }
}

/// A command's arguments with long ones shortened, for messages.
pub fn brief_args(args: &[Vec<u8>]) -> String {
    args.iter()
        .map(|a| {
            if a.len() > 24 {
                format!(
                    "{:?}..({} bytes)",
                    String::from_utf8_lossy(&a[..24]),
                    a.len()
                )
            } else {
                format!("{:?}", String::from_utf8_lossy(a))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Checks step `n` of seed `seed`'s random sequence: the server's reply `got` to `args`
/// is the model's `want`.
pub fn assert_step(seed: u64, n: usize, args: &[Vec<u8>], got: &Reply, want: &Reply) {
    assert!(
        got == want,
        "seed {seed} step {n}: {} answered {} but Redis answers {}",
        brief_args(args),
        brief(got),
        brief(want)
    );
}

/// Redis's rank range (LRANGE, LTRIM, ZRANGE, ZREMRANGEBYRANK): the inclusive
/// positions, None for an empty range.
pub fn resolve(len: usize, start: i64, end: i64) -> Option<(usize, usize)> {
    let len = len as i128;
    let (mut s, mut e) = (start as i128, end as i128);
    if s < 0 {
        s += len;
    }
    if e < 0 {
        e += len;
    }
    if s < 0 {
        s = 0;
    }
    if s > e || s >= len {
        return None;
    }
    if e >= len {
        e = len - 1;
    }
    Some((s as usize, e as usize))
}

/// An index into `weights` drawn with those weights (one draw of `rng`).
pub fn pick_weighted(rng: &mut impl Rng, weights: &[u32]) -> usize {
    let mut pick = rng.gen_range(0..weights.iter().sum::<u32>());
    let mut op = 0;
    while pick >= weights[op] {
        pick -= weights[op];
        op += 1;
    }
    op
}

/// Runs `cmds` in order; each must succeed.
pub async fn run_all(c: &mut MultiplexedConnection, cmds: &[&[&str]]) {
    for cmd in cmds {
        qr(c, cmd).await.unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    }
}

/// The length of the first complete RESP frame in `b`, None while incomplete.
pub fn frame_len(b: &[u8]) -> Option<usize> {
    let nl = b.windows(2).position(|w| w == b"\r\n")?;
    let line = std::str::from_utf8(&b[1..nl]).unwrap();
    let head = nl + 2;
    match b[0] {
        b'+' | b'-' | b':' | b',' | b'#' | b'_' | b'(' => Some(head),
        b'$' | b'=' | b'!' => {
            let n: i64 = line.parse().unwrap();
            if n < 0 {
                return Some(head);
            }
            let end = head + n as usize + 2;
            (b.len() >= end).then_some(end)
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n: i64 = line.parse().unwrap();
            if n < 0 {
                return Some(head);
            }
            let n = if matches!(b[0], b'%' | b'|') {
                2 * n
            } else {
                n
            };
            let mut at = head;
            for _ in 0..n {
                at += frame_len(&b[at..])?;
            }
            if b[0] == b'|' {
                at += frame_len(&b[at..])?; // an attribute precedes the reply
            }
            Some(at)
        }
        other => panic!("not RESP: {:?}", other as char),
    }
}

/// Sends `cmds` pipelined on `s`; their replies, concatenated, as text.
pub async fn raw_exchange(s: &mut TcpStream, cmds: &[&[&str]]) -> String {
    raw_frames(s, cmds, cmds.len()).await
}

/// Sends `cmds` pipelined on `s` (none is fine) and reads exactly `frames` complete
/// frames (replies and out-of-band pushes alike), as text.
pub async fn raw_frames(s: &mut TcpStream, cmds: &[&[&str]], frames: usize) -> String {
    let mut out = Vec::new();
    for cmd in cmds {
        out.extend(format!("*{}\r\n", cmd.len()).bytes());
        for a in *cmd {
            out.extend(format!("${}\r\n{a}\r\n", a.len()).bytes());
        }
    }
    if !out.is_empty() {
        s.write_all(&out).await.unwrap();
    }
    let mut buf = Vec::new();
    let mut replies = 0;
    let mut at = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while replies < frames {
        match frame_len(&buf[at..]) {
            Some(n) => {
                at += n;
                replies += 1;
            }
            None => {
                let mut chunk = [0u8; 65536];
                let n = tokio::time::timeout_at(
                    tokio::time::Instant::from_std(deadline),
                    s.read(&mut chunk),
                )
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "replies to {cmds:?} within 10 s; got {:?}",
                        String::from_utf8_lossy(&buf)
                    )
                })
                .unwrap();
                assert!(n > 0, "connection closed");
                buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
    assert_eq!(at, buf.len(), "more bytes than replies");
    String::from_utf8_lossy(&buf).into_owned()
}

/// The external redis-server named by AUGUR_E2E_REDIS (host:port or a port) for the
/// `on_redis` tests, FLUSHALL'd and with `reset`'s commands run, and the lock that keeps
/// those tests on it one at a time; None without the variable.
pub async fn external(
    reset: &[&[&str]],
) -> Option<(SocketAddr, tokio::sync::MutexGuard<'static, ()>)> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let v = std::env::var("AUGUR_E2E_REDIS").ok()?;
    let addr: SocketAddr = if v.chars().all(|ch| ch.is_ascii_digit()) {
        format!("127.0.0.1:{v}").parse().unwrap()
    } else {
        v.parse().expect("AUGUR_E2E_REDIS is host:port or a port")
    };
    let guard = LOCK.lock().await; // a tokio lock: a failed test does not poison it
    let mut c = con(addr).await;
    run_all(&mut c, &[&["FLUSHALL"]]).await;
    run_all(&mut c, reset).await;
    Some((addr, guard))
}

/// `on_both!(name, #[ignore = "why"] other, ...)`: each body (an `async fn(SocketAddr)` at
/// the test crate's root) as an `on_augur` test on a fresh in-process server and an
/// `on_redis` test on the external server the crate's own `external()` returns (ignored
/// unless run with `--ignored`); attributes before a name apply to its `on_augur` test.
#[allow(unused_macros)] // each test file uses its own subset of common
macro_rules! on_both {
    ($($(#[$augur:meta])* $name:ident),* $(,)?) => {
        mod on_augur {
            $(
                $(#[$augur])*
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let srv = $crate::common::TestServer::start(
                        augur_server::ServerConfig::default(),
                    )
                    .await;
                    $crate::$name(srv.addr).await;
                    srv.stop().await;
                }
            )*
        }

        mod on_redis {
            $(
                #[ignore = "runs on an external redis-server: set AUGUR_E2E_REDIS, pass --ignored"]
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some((addr, _turn)) = $crate::external().await else {
                        panic!("AUGUR_E2E_REDIS is not set");
                    };
                    $crate::$name(addr).await;
                }
            )*
        }
    };
}
#[allow(unused_imports)]
pub(crate) use on_both;
