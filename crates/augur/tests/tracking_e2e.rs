//! End-to-end tests of CLIENT TRACKING (client-side caching) over raw sockets, so the
//! invalidation pushes and messages are checked byte for byte: default mode in RESP3
//! (another connection's write, the connection's own write after its reply, expiry),
//! RESP2 redirection to a `__redis__:invalidate` subscriber, BCAST with prefixes and
//! NOLOOP, OPTIN / OPTOUT with CLIENT CACHING, flushes, a redirect target that went
//! away, the table limit, INFO, CLIENT TRACKINGINFO / GETREDIR, and the error texts.
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

async fn external() -> Option<(SocketAddr, tokio::sync::MutexGuard<'static, ()>)> {
    common::replies::external(&[&["CONFIG", "SET", "tracking-table-max-keys", "1000000"]]).await
}

common::replies::on_both!(
    default_mode_resp3,
    redirect_resp2,
    bcast_prefixes_and_noloop,
    optin_optout,
    errors_as_redis,
    table_limit_and_info,
    transaction_order,
);
