//! End-to-end tests of CLIENT TRACKING (client-side caching) over raw sockets, so the
//! invalidation pushes and messages are checked byte for byte: default mode in RESP3
//! (another connection's write, the connection's own write after its reply, expiry),
//! RESP2 redirection to a `__redis__:invalidate` subscriber, BCAST with prefixes and
//! NOLOOP, OPTIN / OPTOUT with CLIENT CACHING, flushes, a redirect target that went
//! away, the table limit, INFO, CLIENT TRACKINGINFO / GETREDIR, CLIENT LIST's tracking
//! fields, and the error texts; and `client-output-buffer-limit` for what is queued for
//! a receiver that stops reading (a RESP3 reader under `normal`, hard and soft, none by
//! default; a RESP2 redirect target under `pubsub`), with its CONFIG SET / GET.
//!
//! The same bodies run against a real redis-server 7.0 (where the expected bytes were
//! checked):
//!
//! ```text
//! redis-server --port 7653 --save "" --daemonize yes
//! AUGUR_E2E_REDIS=127.0.0.1:7653 cargo test -p augur --test tracking_e2e on_redis -- --ignored
//! ```

mod common;

use common::replies::{raw_exchange, raw_frames};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpStream;

async fn conn(addr: SocketAddr) -> TcpStream {
    TcpStream::connect(addr).await.unwrap()
}

/// A RESP3 connection (HELLO 3 answered and discarded).
async fn resp3(addr: SocketAddr) -> TcpStream {
    let mut s = conn(addr).await;
    raw_exchange(&mut s, &[&["HELLO", "3"]]).await;
    s
}

/// The connection's client id.
async fn id_of(s: &mut TcpStream) -> String {
    let r = raw_exchange(s, &[&["CLIENT", "ID"]]).await;
    r.trim_start_matches(':').trim_end().to_string()
}

fn push(keys: &[&str]) -> String {
    let mut s = format!(">2\r\n$10\r\ninvalidate\r\n*{}\r\n", keys.len());
    for k in keys {
        s += &format!("${}\r\n{k}\r\n", k.len());
    }
    s
}

fn message(keys: &[&str]) -> String {
    let mut s = format!(
        "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*{}\r\n",
        keys.len()
    );
    for k in keys {
        s += &format!("${}\r\n{k}\r\n", k.len());
    }
    s
}

/// Default mode, RESP3: a key read is invalidated once when another connection writes
/// it (and not again until read again); the connection's own write gets its reply
/// first, then the push; a key never read is not reported; expiry invalidates.
async fn default_mode_resp3(addr: SocketAddr) {
    let mut t = resp3(addr).await;
    let mut w = conn(addr).await;
    raw_exchange(&mut w, &[&["SET", "a", "1"], &["SET", "b", "1"]]).await;
    assert_eq!(
        raw_exchange(&mut t, &[&["CLIENT", "TRACKING", "on"], &["GET", "a"]]).await,
        "+OK\r\n$1\r\n1\r\n"
    );
    raw_exchange(&mut w, &[&["INCR", "b"], &["INCR", "a"], &["INCR", "a"]]).await;
    assert_eq!(raw_frames(&mut t, &[], 1).await, push(&["a"]));
    // Read again: tracked again. Its own write: the reply, then the push.
    assert_eq!(
        raw_frames(&mut t, &[&["GET", "a"], &["SET", "a", "x"]], 3).await,
        format!("$1\r\n3\r\n+OK\r\n{}", push(&["a"]))
    );
    // MGET tracks every key; DEL of two reports each (a key that does not exist is
    // not changed by DEL, so it is not reported: "d").
    raw_exchange(&mut w, &[&["SET", "c", "1"]]).await;
    raw_exchange(&mut t, &[&["MGET", "a", "b", "c", "d"]]).await;
    raw_exchange(&mut w, &[&["DEL", "a", "c", "d"]]).await;
    let got = raw_frames(&mut t, &[], 2).await;
    assert!(
        got == push(&["a"]) + &push(&["c"]) || got == push(&["c"]) + &push(&["a"]),
        "{got:?}"
    );
    // Expiry (active or lazy) is a change too.
    raw_exchange(&mut w, &[&["SET", "e", "1", "PX", "30"]]).await;
    raw_exchange(&mut t, &[&["GET", "e"]]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    raw_exchange(&mut w, &[&["GET", "e"]]).await; // expires it if the cycle has not
    assert_eq!(raw_frames(&mut t, &[], 1).await, push(&["e"]));
    // Write commands do not track: SET then another write reports nothing.
    raw_exchange(&mut t, &[&["SET", "n", "1"]]).await;
    raw_exchange(&mut w, &[&["SET", "n", "2"]]).await;
    assert_eq!(
        raw_exchange(&mut t, &[&["PING"]]).await,
        "+PONG\r\n",
        "no push for a key only written"
    );
    raw_exchange(&mut t, &[&["CLIENT", "TRACKING", "off"]]).await;
}

/// RESP2 redirection: the invalidations go to a connection subscribed to
/// `__redis__:invalidate`, as Pub/Sub messages; CLIENT GETREDIR names it.
async fn redirect_resp2(addr: SocketAddr) {
    let mut sub = conn(addr).await;
    let sub_id = id_of(&mut sub).await;
    raw_exchange(&mut sub, &[&["SUBSCRIBE", "__redis__:invalidate"]]).await;
    let mut t = conn(addr).await;
    let mut w = conn(addr).await;
    assert_eq!(
        raw_exchange(
            &mut t,
            &[
                &["CLIENT", "TRACKING", "on", "REDIRECT", &sub_id],
                &["GET", "k"]
            ]
        )
        .await,
        "+OK\r\n$-1\r\n"
    );
    assert_eq!(
        raw_exchange(&mut t, &[&["CLIENT", "GETREDIR"]]).await,
        format!(":{sub_id}\r\n")
    );
    raw_exchange(&mut w, &[&["SET", "k", "v"]]).await;
    assert_eq!(raw_frames(&mut sub, &[], 1).await, message(&["k"]));
    // A flush: one null message for everything.
    raw_exchange(&mut t, &[&["GET", "k"]]).await;
    raw_exchange(&mut w, &[&["FLUSHALL"]]).await;
    assert_eq!(
        raw_frames(&mut sub, &[], 1).await,
        "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n$-1\r\n"
    );
    // The target goes away: a RESP3 tracking client is told, and TRACKINGINFO says so.
    raw_exchange(&mut t, &[&["HELLO", "3"], &["GET", "k"]]).await;
    raw_exchange(&mut sub, &[&["QUIT"]]).await;
    drop(sub);
    tokio::time::sleep(Duration::from_millis(100)).await;
    raw_exchange(&mut w, &[&["SET", "k", "2"]]).await;
    let broken = format!(">2\r\n$21\r\ntracking-redir-broken\r\n:{sub_id}\r\n");
    assert_eq!(raw_frames(&mut t, &[], 1).await, broken);
    let info = raw_exchange(&mut t, &[&["CLIENT", "TRACKINGINFO"]]).await;
    assert!(info.contains("broken_redirect"), "{info}");
}

/// BCAST: every change under a prefix, batched per command and prefix, NOLOOP leaving
/// out the connection's own changes; overlapping prefixes refused.
async fn bcast_prefixes_and_noloop(addr: SocketAddr) {
    let mut t = resp3(addr).await;
    let mut w = conn(addr).await;
    assert_eq!(
        raw_exchange(
            &mut t,
            &[&["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a:", "PREFIX", "b:", "NOLOOP"]]
        )
        .await,
        "+OK\r\n"
    );
    raw_exchange(&mut w, &[&["MSET", "a:1", "1", "a:2", "2", "c:1", "3"]]).await;
    assert_eq!(raw_frames(&mut t, &[], 1).await, push(&["a:1", "a:2"]));
    // Its own change is not reported (NOLOOP); another's is.
    assert_eq!(
        raw_frames(&mut t, &[&["SET", "b:mine", "1"]], 1).await,
        "+OK\r\n"
    );
    raw_exchange(&mut w, &[&["SET", "b:theirs", "1"]]).await;
    assert_eq!(raw_frames(&mut t, &[], 1).await, push(&["b:theirs"]));
    let errs: &[(&[&str], &str)] = &[
        (
            &["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a:x"],
            "-ERR Prefix 'a:x' overlaps with an existing prefix 'a:'. Prefixes for a single client must not overlap.\r\n",
        ),
        (
            &["CLIENT", "TRACKING", "on"],
            "-ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.\r\n",
        ),
    ];
    for (cmd, want) in errs {
        assert_eq!(raw_exchange(&mut t, &[cmd]).await, *want, "{cmd:?}");
    }
    let info = raw_exchange(&mut t, &[&["CLIENT", "TRACKINGINFO"]]).await;
    assert_eq!(
        info,
        "%3\r\n$5\r\nflags\r\n~3\r\n$2\r\non\r\n$5\r\nbcast\r\n$6\r\nnoloop\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*2\r\n$2\r\na:\r\n$2\r\nb:\r\n"
    );
    raw_exchange(&mut t, &[&["CLIENT", "TRACKING", "off"]]).await;
}

/// OPTIN: only keys read right after CLIENT CACHING yes; OPTOUT: all but those read
/// right after CLIENT CACHING no.
async fn optin_optout(addr: SocketAddr) {
    let mut t = resp3(addr).await;
    let mut w = conn(addr).await;
    raw_exchange(
        &mut t,
        &[
            &["CLIENT", "TRACKING", "on", "OPTIN"],
            &["GET", "x"],
            &["CLIENT", "CACHING", "yes"],
            &["GET", "y"],
        ],
    )
    .await;
    raw_exchange(&mut w, &[&["SET", "x", "1"], &["SET", "y", "1"]]).await;
    assert_eq!(raw_frames(&mut t, &[], 1).await, push(&["y"]));
    raw_exchange(
        &mut t,
        &[
            &["CLIENT", "TRACKING", "off"],
            &["CLIENT", "TRACKING", "on", "OPTOUT"],
            &["CLIENT", "CACHING", "no"],
            &["GET", "x"],
            &["GET", "y"],
        ],
    )
    .await;
    raw_exchange(&mut w, &[&["SET", "x", "2"], &["SET", "y", "2"]]).await;
    assert_eq!(raw_frames(&mut t, &[], 1).await, push(&["y"]));
    let errs: &[(&[&str], &str)] = &[
        (
            &["CLIENT", "CACHING", "yes"],
            "-ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.\r\n",
        ),
        (&["CLIENT", "CACHING", "maybe"], "-ERR syntax error\r\n"),
        (
            &["CLIENT", "TRACKING", "on", "OPTIN"],
            "-ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.\r\n",
        ),
    ];
    for (cmd, want) in errs {
        assert_eq!(raw_exchange(&mut t, &[cmd]).await, *want, "{cmd:?}");
    }
    raw_exchange(&mut t, &[&["CLIENT", "TRACKING", "off"]]).await;
}

/// Argument errors, in networking.c's order.
async fn errors_as_redis(addr: SocketAddr) {
    let mut c = conn(addr).await;
    let cases: &[(&[&str], &str)] = &[
        (&["CLIENT", "TRACKING", "maybe"], "-ERR syntax error\r\n"),
        (&["CLIENT", "TRACKING", "on", "FOO"], "-ERR syntax error\r\n"),
        (
            &["CLIENT", "TRACKING", "on", "REDIRECT", "999999"],
            "-ERR The client ID you want redirect to does not exist\r\n",
        ),
        (
            &["CLIENT", "TRACKING", "on", "REDIRECT", "x"],
            "-ERR value is not an integer or out of range\r\n",
        ),
        (
            &["CLIENT", "TRACKING", "on", "PREFIX", "a"],
            "-ERR PREFIX option requires BCAST mode to be enabled\r\n",
        ),
        (
            &["CLIENT", "TRACKING", "on", "BCAST", "OPTIN"],
            "-ERR OPTIN and OPTOUT are not compatible with BCAST\r\n",
        ),
        (
            &["CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"],
            "-ERR You can't specify both OPTIN mode and OPTOUT mode\r\n",
        ),
        (
            &["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "ab", "PREFIX", "a"],
            "-ERR Prefix 'ab' overlaps with another provided prefix 'a'. Prefixes for a single client must not overlap.\r\n",
        ),
        (
            &["CLIENT", "CACHING", "yes"],
            "-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled\r\n",
        ),
        (&["CLIENT", "GETREDIR"], ":-1\r\n"),
        (
            &["CLIENT", "TRACKINGINFO"],
            "*6\r\n$5\r\nflags\r\n*1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n$8\r\nprefixes\r\n*0\r\n",
        ),
    ];
    for (cmd, want) in cases {
        assert_eq!(raw_exchange(&mut c, &[cmd]).await, *want, "{cmd:?}");
    }
}

/// tracking-table-max-keys: past it, keys are invalidated (as if changed) until the
/// table is back under it; INFO counts keys, items, prefixes and clients.
async fn table_limit_and_info(addr: SocketAddr) {
    let mut t = resp3(addr).await;
    raw_exchange(&mut t, &[&["CLIENT", "TRACKING", "on"]]).await;
    for i in 0..20 {
        raw_exchange(&mut t, &[&["GET", &format!("lim{i}")]]).await;
    }
    let mut c = conn(addr).await;
    let info = raw_exchange(&mut c, &[&["INFO"]]).await;
    assert!(info.contains("tracking_total_keys:20\r\n"), "{info}");
    assert!(info.contains("tracking_total_items:20\r\n"), "{info}");
    assert!(info.contains("tracking_clients:1\r\n"), "{info}");
    raw_exchange(
        &mut c,
        &[&["CONFIG", "SET", "tracking-table-max-keys", "5"]],
    )
    .await;
    // 15 keys are dropped from the table, each with its invalidation.
    let got = raw_frames(&mut t, &[], 15).await;
    assert_eq!(got.matches("invalidate").count(), 15, "{got}");
    let info = raw_exchange(&mut c, &[&["INFO", "stats"]]).await;
    assert!(info.contains("tracking_total_keys:5\r\n"), "{info}");
    raw_exchange(
        &mut c,
        &[&["CONFIG", "SET", "tracking-table-max-keys", "1000000"]],
    )
    .await;
    raw_exchange(&mut t, &[&["CLIENT", "TRACKING", "off"]]).await;
}

/// Inside MULTI the connection's own invalidations follow EXEC's whole reply.
async fn transaction_order(addr: SocketAddr) {
    let mut t = resp3(addr).await;
    raw_exchange(
        &mut t,
        &[
            &["SET", "m", "1"],
            &["CLIENT", "TRACKING", "on"],
            &["GET", "m"],
        ],
    )
    .await;
    let got = raw_frames(
        &mut t,
        &[&["MULTI"], &["INCR", "m"], &["GET", "m"], &["EXEC"]],
        5,
    )
    .await;
    assert_eq!(
        got,
        format!(
            "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:2\r\n$1\r\n2\r\n{}",
            push(&["m"])
        )
    );
    raw_exchange(&mut t, &[&["CLIENT", "TRACKING", "off"]]).await;
}

/// Tenants (Augur's ACL users, each its own keyspace): a tenant's tracking client hears
/// of its own keyspace's changes only, though another tenant has a key of that name.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tenants_hear_only_their_own_keys() {
    let srv = common::TestServer::start(augur_server::ServerConfig::default()).await;
    let mut admin = conn(srv.addr).await;
    for u in ["app1", "app2"] {
        assert_eq!(
            raw_exchange(
                &mut admin,
                &[&["ACL", "SETUSER", u, "on", ">pw", "~*", "&*", "+@all"]]
            )
            .await,
            "+OK\r\n"
        );
    }
    let mut t = resp3(srv.addr).await;
    raw_exchange(
        &mut t,
        &[
            &["AUTH", "app1", "pw"],
            &["CLIENT", "TRACKING", "on"],
            &["GET", "k"],
        ],
    )
    .await;
    let mut other = conn(srv.addr).await;
    raw_exchange(
        &mut other,
        &[&["AUTH", "app2", "pw"], &["SET", "k", "theirs"]],
    )
    .await;
    let mut same = conn(srv.addr).await;
    raw_exchange(&mut same, &[&["AUTH", "app1", "pw"], &["SET", "k", "mine"]]).await;
    // Only app1's write is reported; a PING after it shows nothing else is queued.
    assert_eq!(
        raw_frames(&mut t, &[&["PING"]], 2).await,
        format!("{}+PONG\r\n", push(&["k"]))
    );
    srv.stop().await;
}

/// Redis 7.0's default `client-output-buffer-limit`, as CONFIG SET takes it.
const OBUF_DEFAULT: &str = "normal 0 0 0 replica 256mb 64mb 60 pubsub 32mb 8mb 60";
/// ... and as CONFIG GET answers it.
const OBUF_DEFAULT_GET: &str =
    "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60";

/// A connection whose receive buffer is fixed at 64 KB (no autotuning), so that what
/// the server sends a client that does not read piles up in the server (where the limit
/// applies) after a few MB in the kernel, not tens of MB.
async fn small_window(addr: SocketAddr) -> TcpStream {
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(64 * 1024).unwrap();
    sock.connect(addr).await.unwrap()
}

/// A 1001-byte key: every invalidation of it is about 1 KB.
fn big_key(i: usize) -> String {
    format!("{i:08}:{}", "x".repeat(992))
}

/// `t` reads (and so tracks, on its tracking connection) keys 0..n.
async fn read_keys(t: &mut TcpStream, n: usize) {
    let keys: Vec<String> = (0..n).map(big_key).collect();
    let gets: Vec<[&str; 2]> = keys.iter().map(|k| ["GET", k.as_str()]).collect();
    for chunk in gets.chunks(1000) {
        let cmds: Vec<&[&str]> = chunk.iter().map(|c| &c[..]).collect();
        raw_exchange(t, &cmds).await;
    }
}

/// Another connection writes keys 0..n, 500 to an MSET, in order.
async fn write_keys(addr: SocketAddr, n: usize) {
    let mut w = conn(addr).await;
    let keys: Vec<String> = (0..n).map(big_key).collect();
    for chunk in keys.chunks(500) {
        let mut cmd: Vec<&str> = vec!["MSET"];
        for k in chunk {
            cmd.extend([k.as_str(), "1"]);
        }
        assert_eq!(raw_exchange(&mut w, &[&cmd]).await, "+OK\r\n");
    }
}

/// Whether a client named `name` is connected, by CLIENT LIST.
async fn connected(c: &mut TcpStream, name: &str) -> bool {
    raw_exchange(c, &[&["CLIENT", "LIST"]])
        .await
        .contains(&format!(" name={name} "))
}

/// Waits up to `secs` for the client named `name` to be gone; whether it went.
async fn gone_within(c: &mut TcpStream, name: &str, secs: u64) -> bool {
    let end = std::time::Instant::now() + Duration::from_secs(secs);
    while std::time::Instant::now() < end {
        if !connected(c, name).await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// The connection was closed by the server: what it had been sent may still be read,
/// then EOF (or a reset).
async fn closed_by_server(s: &mut TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 1 << 20];
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(end, s.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

/// `client-output-buffer-limit normal`: a RESP3 tracking client that stops reading
/// while another client changes thousands of the keys it read is closed once what is
/// queued for it passes the hard limit; the writer is not held up.
async fn normal_hard_limit_closes_a_stalled_reader(addr: SocketAddr) {
    let mut c = conn(addr).await;
    assert_eq!(
        raw_exchange(
            &mut c,
            &[&[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "normal 1mb 0 0"
            ]]
        )
        .await,
        "+OK\r\n"
    );
    let mut t = small_window(addr).await;
    raw_exchange(
        &mut t,
        &[
            &["HELLO", "3"],
            &["CLIENT", "SETNAME", "stalled"],
            &["CLIENT", "TRACKING", "on"],
        ],
    )
    .await;
    read_keys(&mut t, 12_000).await;
    // ~12 MB of invalidations for a client that reads none: a few MB fit in the
    // sockets' buffers, the rest would stay queued in the server.
    write_keys(addr, 12_000).await;
    assert!(gone_within(&mut c, "stalled", 5).await, "closed past 1 MB");
    assert!(closed_by_server(&mut t).await);
    assert_eq!(raw_exchange(&mut c, &[&["PING"]]).await, "+PONG\r\n");
    raw_exchange(
        &mut c,
        &[&["CONFIG", "SET", "client-output-buffer-limit", OBUF_DEFAULT]],
    )
    .await;
}

/// With Redis's default `normal 0 0 0` (no limit) the same stalled reader is not
/// closed (a smaller volume: a few MB held for it), and once it reads it gets every
/// invalidation, in the order the keys were written.
async fn no_normal_limit_keeps_every_invalidation_in_order(addr: SocketAddr) {
    let mut c = conn(addr).await;
    let mut t = small_window(addr).await;
    raw_exchange(
        &mut t,
        &[
            &["HELLO", "3"],
            &["CLIENT", "SETNAME", "slow"],
            &["CLIENT", "TRACKING", "on"],
        ],
    )
    .await;
    read_keys(&mut t, 6_000).await;
    write_keys(addr, 6_000).await;
    tokio::time::sleep(Duration::from_millis(1500)).await; // a cron pass or more
    assert!(connected(&mut c, "slow").await, "no limit: not closed");
    let got = raw_frames(&mut t, &[], 6_000).await;
    let want: String = (0..6_000).map(|i| push(&[&big_key(i)])).collect();
    assert!(got == want, "6000 pushes, in write order");
}

/// `client-output-buffer-limit pubsub`: the RESP2 connection a tracking client
/// redirects to is a subscriber (of `__redis__:invalidate`), held to the pubsub class.
async fn pubsub_limit_closes_a_stalled_redirect_target(addr: SocketAddr) {
    let mut c = conn(addr).await;
    assert_eq!(
        raw_exchange(
            &mut c,
            &[&[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 1mb 0 0"
            ]]
        )
        .await,
        "+OK\r\n"
    );
    let mut sub = small_window(addr).await;
    let sub_id = id_of(&mut sub).await;
    raw_exchange(
        &mut sub,
        &[
            &["CLIENT", "SETNAME", "target"],
            &["SUBSCRIBE", "__redis__:invalidate"],
        ],
    )
    .await;
    let mut t = conn(addr).await;
    raw_exchange(
        &mut t,
        &[
            &["CLIENT", "SETNAME", "tracker"],
            &["CLIENT", "TRACKING", "on", "REDIRECT", &sub_id],
        ],
    )
    .await;
    read_keys(&mut t, 12_000).await;
    write_keys(addr, 12_000).await;
    assert!(gone_within(&mut c, "target", 5).await, "closed past 1 MB");
    assert!(closed_by_server(&mut sub).await);
    assert!(
        connected(&mut c, "tracker").await,
        "the tracking client stays"
    );
    raw_exchange(
        &mut c,
        &[&["CONFIG", "SET", "client-output-buffer-limit", OBUF_DEFAULT]],
    )
    .await;
}

/// A soft limit: above it for longer than its seconds closes the client, with no
/// traffic after the backlog built up (the cron checks), and not before.
async fn normal_soft_limit_after_its_seconds(addr: SocketAddr) {
    let mut c = conn(addr).await;
    raw_exchange(
        &mut c,
        &[&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 0 1mb 3",
        ]],
    )
    .await;
    let mut t = small_window(addr).await;
    raw_exchange(
        &mut t,
        &[
            &["HELLO", "3"],
            &["CLIENT", "SETNAME", "soft"],
            &["CLIENT", "TRACKING", "on"],
        ],
    )
    .await;
    read_keys(&mut t, 10_000).await;
    let start = std::time::Instant::now();
    write_keys(addr, 10_000).await;
    if start.elapsed() < Duration::from_millis(1500) {
        assert!(
            connected(&mut c, "soft").await,
            "not closed before its seconds"
        );
    }
    assert!(gone_within(&mut c, "soft", 8).await, "closed after them");
    assert!(
        start.elapsed() >= Duration::from_secs(3),
        "closed after {:?}",
        start.elapsed()
    );
    raw_exchange(
        &mut c,
        &[&["CONFIG", "SET", "client-output-buffer-limit", OBUF_DEFAULT]],
    )
    .await;
}

/// CONFIG SET / GET client-output-buffer-limit: Redis's syntax, errors (nothing
/// changes on an error, also beside another parameter) and CONFIG GET's form.
async fn output_buffer_limit_config(addr: SocketAddr) {
    let mut c = conn(addr).await;
    let get = |v: &str| {
        format!(
            "*2\r\n$26\r\nclient-output-buffer-limit\r\n${}\r\n{v}\r\n",
            v.len()
        )
    };
    let get_cmd: &[&str] = &["CONFIG", "GET", "client-output-buffer-limit"];
    assert_eq!(
        raw_exchange(&mut c, &[get_cmd]).await,
        get(OBUF_DEFAULT_GET)
    );
    let err = |e: &str| {
        format!("-ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - {e}\r\n")
    };
    let args = "Wrong number of arguments in buffer limit configuration.";
    let class = "Invalid client class specified in buffer limit configuration.";
    let value = "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
    let cases: &[(&str, &str)] = &[
        ("wrong number", args),
        ("normal 1 2 3 ", args),
        ("invalid_class 10mb 10mb 60", class),
        ("master 10mb 10mb 60", class),
        ("normal 10mbs 10mb 60", value),
        ("replica 10mb 10mbs 60", value),
        ("pubsub 10mb 10mb 60s", value),
        ("pubsub -1 0 0", value),
        ("pubsub 1.5mb 0 0", value),
        ("normal 1 2 2147483648", value),
        ("normal 1mb 2mb 60 pubsub 1 2 x", value),
    ];
    for (v, e) in cases {
        assert_eq!(
            raw_exchange(
                &mut c,
                &[&["CONFIG", "SET", "client-output-buffer-limit", v]]
            )
            .await,
            err(e),
            "{v:?}"
        );
    }
    assert_eq!(
        raw_exchange(&mut c, &[get_cmd]).await,
        get(OBUF_DEFAULT_GET)
    );
    // All or nothing with another parameter.
    assert_eq!(
        raw_exchange(
            &mut c,
            &[&[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "normal 1 2 3",
                "maxmemory",
                "1x"
            ]]
        )
        .await,
        "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value\r\n"
    );
    assert_eq!(
        raw_exchange(&mut c, &[get_cmd]).await,
        get(OBUF_DEFAULT_GET)
    );
    let ok: &[(&str, &str)] = &[
        (
            "normal 1mb 2mb 60 replica 3mb 4mb 70 pubsub 5mb 6mb 80",
            "normal 1048576 2097152 60 slave 3145728 4194304 70 pubsub 5242880 6291456 80",
        ),
        // One class changes, the others keep; the last of a class repeated wins; units
        // and case as memtoull; "slave" is "replica".
        (
            "SLAVE 1k 2KB 3 normal 1gb 0 0 normal 5 6 7",
            "normal 5 6 7 slave 1000 2048 3 pubsub 5242880 6291456 80",
        ),
        (
            "",
            "normal 5 6 7 slave 1000 2048 3 pubsub 5242880 6291456 80",
        ),
        (
            "pubsub 99999999999999999999 0 4294967296",
            "normal 5 6 7 slave 1000 2048 3 pubsub 18446744073709551615 0 0",
        ),
        (OBUF_DEFAULT, OBUF_DEFAULT_GET),
    ];
    for (v, want) in ok {
        assert_eq!(
            raw_exchange(
                &mut c,
                &[
                    &["CONFIG", "SET", "client-output-buffer-limit", v],
                    &["CONFIG", "GET", "client-output-buffe*"]
                ]
            )
            .await,
            format!("+OK\r\n{}", get(want)),
            "{v:?}"
        );
    }
}

/// CLIENT LIST shows tracking as Redis does: flag `t` (and `B` for BCAST), `redir=`
/// the redirect (0 for none, -1 with tracking off).
async fn client_list_shows_tracking(addr: SocketAddr) {
    let mut sub = conn(addr).await;
    let sub_id = id_of(&mut sub).await;
    let mut t = conn(addr).await;
    let line = |s: String| {
        let f = |name: &str| {
            s.split(' ')
                .find_map(|w| w.strip_prefix(name))
                .unwrap_or("?")
                .to_string()
        };
        (f("flags="), f("redir="))
    };
    let info = || -> &[&[&str]] { &[&["CLIENT", "INFO"]] };
    assert_eq!(
        line(raw_exchange(&mut t, info()).await),
        ("N".into(), "-1".into())
    );
    raw_exchange(
        &mut t,
        &[&["CLIENT", "TRACKING", "on", "REDIRECT", &sub_id]],
    )
    .await;
    assert_eq!(
        line(raw_exchange(&mut t, info()).await),
        ("t".into(), sub_id.clone())
    );
    raw_exchange(
        &mut t,
        &[
            &["CLIENT", "TRACKING", "off"],
            &["CLIENT", "TRACKING", "on", "BCAST"],
        ],
    )
    .await;
    assert_eq!(
        line(raw_exchange(&mut t, info()).await),
        ("tB".into(), "0".into())
    );
    raw_exchange(&mut t, &[&["CLIENT", "TRACKING", "off"]]).await;
}

/// The next frame (reply or push) on `t`, reading into `buf` for up to `secs`; None if
/// none came.
async fn next_frame(t: &mut TcpStream, buf: &mut Vec<u8>, secs: u64) -> Option<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    loop {
        if let Some(n) = common::replies::frame_len(buf) {
            return Some(buf.drain(..n).collect());
        }
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(secs), t.read(&mut chunk))
            .await
            .ok()?
            .unwrap();
        assert!(n > 0);
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A read and a concurrent write of the same key: whatever their interleaving, a
/// tracking client that read the value from before the write is told of the write, so
/// it never keeps a stale copy. Each round sends a GET (tracking connection) and an INCR
/// (another connection) at once; when the GET's reply is older than the INCR's, the
/// invalidation must follow (a write landing between the read and the remembering of
/// the key would be lost, and the copy stale for as long as the key does not change).
async fn a_write_racing_the_read_still_invalidates(addr: SocketAddr) {
    use tokio::io::AsyncWriteExt;
    let mut w = conn(addr).await;
    let mut t = resp3(addr).await;
    raw_exchange(&mut t, &[&["CLIENT", "TRACKING", "on"]]).await;
    let get = b"*2\r\n$3\r\nGET\r\n$4\r\nrace\r\n";
    let incr = b"*2\r\n$4\r\nINCR\r\n$4\r\nrace\r\n";
    let mut buf: Vec<u8> = Vec::new();
    let (mut behind, mut lost) = (0, 0);
    for _ in 0..3000 {
        let (a, b) = tokio::join!(t.write_all(get), w.write_all(incr));
        a.unwrap();
        b.unwrap();
        let n: i64 = raw_frames(&mut w, &[], 1).await[1..]
            .trim()
            .parse()
            .unwrap();
        let mut reply = next_frame(&mut t, &mut buf, 5).await.expect("GET's reply");
        let mut pushed = false;
        while reply.starts_with(b">") {
            pushed = true;
            reply = next_frame(&mut t, &mut buf, 5).await.expect("GET's reply");
        }
        let v: i64 = match &reply[..] {
            b"_\r\n" | b"$-1\r\n" => 0,
            r => String::from_utf8_lossy(r)
                .lines()
                .nth(1)
                .unwrap()
                .parse()
                .unwrap(),
        };
        if v < n {
            behind += 1;
            if !pushed && next_frame(&mut t, &mut buf, 1).await.is_none() {
                lost += 1;
            }
        } else {
            // Read after the write: tracked now; a push may still come for the write
            // if it was remembered before it. Take it so the next round starts clean.
            raw_exchange(&mut w, &[&["PING"]]).await;
            while let Some(f) = next_frame(&mut t, &mut buf, 0).await {
                assert!(f.starts_with(b">"), "only pushes are unread");
            }
        }
        // Invalidated or not, read it again next round (tracked again either way).
    }
    assert_eq!(lost, 0, "{lost} of {behind} stale reads never invalidated");
}

async fn external() -> Option<(SocketAddr, tokio::sync::MutexGuard<'static, ()>)> {
    common::replies::external(&[
        &["CONFIG", "SET", "tracking-table-max-keys", "1000000"],
        &["CONFIG", "SET", "client-output-buffer-limit", OBUF_DEFAULT],
    ])
    .await
}

common::replies::on_both!(
    default_mode_resp3,
    redirect_resp2,
    bcast_prefixes_and_noloop,
    optin_optout,
    errors_as_redis,
    table_limit_and_info,
    transaction_order,
    normal_hard_limit_closes_a_stalled_reader,
    no_normal_limit_keeps_every_invalidation_in_order,
    pubsub_limit_closes_a_stalled_redirect_target,
    normal_soft_limit_after_its_seconds,
    output_buffer_limit_config,
    client_list_shows_tracking,
    a_write_racing_the_read_still_invalidates,
);
