//! End-to-end tests of the connection commands of issue 11 item 6, over real sockets:
//! CLIENT LIST / INFO fields and filters, CLIENT KILL (both forms), CLIENT REPLY,
//! CLIENT PAUSE / UNPAUSE, CLIENT NO-EVICT and `maxmemory-clients`, MONITOR (format,
//! transactions, scripts, redaction, tenants), the query buffer's resizing, CONFIG SET
//! port / bind, and INFO memory's process figures.

mod common;

use augur_server::ServerConfig;
use common::{err, q, TestServer};
use futures_util::StreamExt;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// RESP encoding of one command.
fn cmd(args: &[&str]) -> Vec<u8> {
    let mut v = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        v.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    v
}

/// Reads until `want` bytes arrived or 3 s passed.
async fn read_n(s: &mut TcpStream, want: usize) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while got.len() < want {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) | Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
    got
}

/// Reads until the data ends with `end` (or 3 s pass).
async fn read_until(s: &mut TcpStream, end: &[u8]) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while !got.ends_with(end) {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) | Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

async fn expect(s: &mut TcpStream, send: &[u8], want: &str) {
    s.write_all(send).await.unwrap();
    let got = read_n(s, want.len()).await;
    assert_eq!(String::from_utf8_lossy(&got), want);
}

/// Nothing arrives within 200 ms.
async fn expect_silence(s: &mut TcpStream) {
    let mut buf = [0u8; 256];
    match tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf)).await {
        Err(_) => {}
        Ok(Ok(n)) => panic!("unexpected {:?}", String::from_utf8_lossy(&buf[..n])),
        Ok(Err(e)) => panic!("read error {e}"),
    }
}

/// The peer closes the connection within `within`.
async fn expect_closed(s: &mut TcpStream, within: Duration) {
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) => panic!("connection still open after {within:?}"),
            Ok(Ok(0)) | Ok(Err(_)) => return,
            Ok(Ok(_)) => continue,
        }
    }
}

/// One bulk reply's payload (CLIENT LIST / INFO in RESP2).
async fn bulk(s: &mut TcpStream, send: &[u8]) -> String {
    s.write_all(send).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    loop {
        if let Some(i) = got.windows(2).position(|w| w == b"\r\n") {
            let head = String::from_utf8_lossy(&got[..i]).into_owned();
            let len: usize = head
                .strip_prefix('$')
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("not a bulk: {head:?}"));
            if got.len() >= i + 2 + len + 2 {
                return String::from_utf8_lossy(&got[i + 2..i + 2 + len]).into_owned();
            }
        }
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) | Ok(Ok(0)) | Ok(Err(_)) => panic!("incomplete bulk: {got:?}"),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// `field=value` of one CLIENT LIST line.
fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split(' ')
        .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
}

fn line_named<'a>(list: &'a str, name: &str) -> &'a str {
    list.lines()
        .find(|l| field(l, "name") == name)
        .unwrap_or_else(|| panic!("no client named {name} in {list}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_info_and_list_report_true_fields_in_redis_order() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut a = srv.raw().await;
    let info = bulk(&mut a, &cmd(&["CLIENT", "INFO"])).await;
    let names: Vec<&str> = info
        .trim_end()
        .split(' ')
        .map(|kv| kv.split_once('=').unwrap().0)
        .collect();
    assert_eq!(
        names,
        [
            "id",
            "addr",
            "laddr",
            "fd",
            "name",
            "age",
            "idle",
            "flags",
            "db",
            "sub",
            "psub",
            "ssub",
            "multi",
            "qbuf",
            "qbuf-free",
            "argv-mem",
            "multi-mem",
            "rbs",
            "rbp",
            "obl",
            "oll",
            "omem",
            "tot-mem",
            "events",
            "cmd",
            "user",
            "redir",
            "resp",
            "lib-name",
            "lib-ver"
        ]
    );
    // The command being run is in the query buffer: 26 bytes of "CLIENT INFO".
    assert_eq!(field(&info, "qbuf"), "26");
    assert_eq!(field(&info, "cmd"), "client|info");
    assert_eq!(field(&info, "flags"), "N");
    assert_eq!(field(&info, "multi"), "-1");
    assert_eq!(field(&info, "argv-mem"), "10");
    assert_eq!(field(&info, "user"), "default");
    assert_eq!(field(&info, "resp"), "2");
    assert_eq!(field(&info, "laddr"), srv.addr.to_string());
    let fd: i32 = field(&info, "fd").parse().unwrap();
    assert!(fd > 2, "a real descriptor: {fd}");
    let qfree: u64 = field(&info, "qbuf-free").parse().unwrap();
    assert_eq!(26 + qfree, 16384, "a fresh 16 KB query buffer");
    assert!(field(&info, "tot-mem").parse::<u64>().unwrap() > 16384);

    // Another connection in MULTI with two queued commands and a WATCHed key touched.
    let mut b = srv.raw().await;
    expect(&mut b, &cmd(&["CLIENT", "SETNAME", "txn"]), "+OK\r\n").await;
    expect(&mut b, &cmd(&["WATCH", "k"]), "+OK\r\n").await;
    expect(&mut b, &cmd(&["MULTI"]), "+OK\r\n").await;
    expect(&mut b, &cmd(&["SET", "k", "1"]), "+QUEUED\r\n").await;
    expect(&mut b, &cmd(&["INCR", "k"]), "+QUEUED\r\n").await;
    expect(&mut a, &cmd(&["SET", "k", "touched"]), "+OK\r\n").await;
    let list = bulk(&mut a, &cmd(&["CLIENT", "LIST"])).await;
    let l = line_named(&list, "txn");
    assert_eq!(field(l, "flags"), "xd");
    assert_eq!(field(l, "multi"), "2");
    assert_eq!(field(l, "cmd"), "incr");
    assert!(field(l, "multi-mem").parse::<u64>().unwrap() >= 9);
    expect(&mut b, &cmd(&["EXEC"]), "*-1\r\n").await;
    let list = bulk(&mut a, &cmd(&["CLIENT", "LIST"])).await;
    assert_eq!(field(line_named(&list, "txn"), "flags"), "N");
    assert_eq!(field(line_named(&list, "txn"), "multi"), "-1");

    // A subscriber (P) and a monitor (O); TYPE and ID filters.
    let mut s = srv.raw().await;
    expect(&mut s, &cmd(&["CLIENT", "SETNAME", "sub"]), "+OK\r\n").await;
    expect(
        &mut s,
        &cmd(&["SUBSCRIBE", "ch"]),
        "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n",
    )
    .await;
    let mut m = srv.raw().await;
    expect(&mut m, &cmd(&["CLIENT", "SETNAME", "mon"]), "+OK\r\n").await;
    expect(&mut m, &cmd(&["MONITOR"]), "+OK\r\n").await;
    let list = bulk(&mut a, &cmd(&["CLIENT", "LIST"])).await;
    assert_eq!(field(line_named(&list, "sub"), "flags"), "P");
    assert_eq!(field(line_named(&list, "sub"), "sub"), "1");
    assert_eq!(field(line_named(&list, "mon"), "flags"), "O");
    let pubsub = bulk(&mut a, &cmd(&["CLIENT", "LIST", "TYPE", "pubsub"])).await;
    assert_eq!(pubsub.lines().count(), 1);
    assert_eq!(field(pubsub.lines().next().unwrap(), "name"), "sub");
    let normal = bulk(&mut a, &cmd(&["CLIENT", "LIST", "TYPE", "normal"])).await;
    assert_eq!(normal.lines().count(), 3, "{normal}");
    let sub_id = field(line_named(&list, "sub"), "id").to_string();
    let by_id = bulk(&mut a, &cmd(&["CLIENT", "LIST", "ID", &sub_id, "99999"])).await;
    assert_eq!(by_id.lines().count(), 1);
    assert_eq!(field(by_id.lines().next().unwrap(), "id"), sub_id);

    let mut c = srv.con().await;
    assert_eq!(
        err(&mut c, &["CLIENT", "LIST", "TYPE", "bogus"]).await,
        "ERR Unknown client type 'bogus'"
    );
    assert_eq!(
        err(&mut c, &["CLIENT", "LIST", "ID", "x"]).await,
        "ERR Invalid client ID"
    );
    assert_eq!(
        err(&mut c, &["CLIENT", "LIST", "foo"]).await,
        "ERR syntax error"
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_kill_forms_errors_and_prompt_close() {
    let srv = TestServer::start(ServerConfig {
        users: vec!["app on >pw ~* &* +@all".into()],
        ..ServerConfig::default()
    })
    .await;
    let mut c = srv.con().await;
    assert_eq!(
        err(&mut c, &["CLIENT", "KILL"]).await,
        "ERR wrong number of arguments for 'client|kill' command"
    );
    assert_eq!(
        err(&mut c, &["CLIENT", "KILL", "id", "10", "wrong_arg"]).await,
        "ERR syntax error"
    );
    for bad in ["str", "-1", "0"] {
        assert_eq!(
            err(&mut c, &["CLIENT", "KILL", "id", bad]).await,
            "ERR client-id should be greater than 0"
        );
    }
    assert_eq!(
        err(&mut c, &["CLIENT", "KILL", "type", "wrong_type"]).await,
        "ERR Unknown client type 'wrong_type'"
    );
    assert_eq!(
        err(&mut c, &["CLIENT", "KILL", "user", "wrong_user"]).await,
        "ERR No such user 'wrong_user'"
    );
    assert_eq!(
        err(&mut c, &["CLIENT", "KILL", "skipme", "yes_or_no"]).await,
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["CLIENT", "KILL", "127.0.0.1:1"]).await,
        "ERR No such client"
    );

    // Old form: ip:port; the victim is idle in a read and its socket closes at once.
    let mut v = srv.raw().await;
    // A reply means the server has registered the connection (connect() returns before
    // the accept loop sees it; on a loaded machine CLIENT KILL could run first).
    expect(&mut v, &cmd(&["PING"]), "+PONG\r\n").await;
    let addr = v.local_addr().unwrap().to_string();
    let t = Instant::now();
    assert_eq!(
        q::<String>(&mut c, &["CLIENT", "KILL", &addr])
            .await
            .unwrap(),
        "OK"
    );
    expect_closed(&mut v, Duration::from_secs(1)).await;
    assert!(t.elapsed() < Duration::from_secs(1));

    // A subscriber is killed by TYPE pubsub, and nobody else.
    let mut s = srv.raw().await;
    expect(
        &mut s,
        &cmd(&["SUBSCRIBE", "ch"]),
        "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n",
    )
    .await;
    let mut bystander = srv.raw().await;
    expect(&mut bystander, &cmd(&["PING"]), "+PONG\r\n").await;
    assert_eq!(
        q::<i64>(&mut c, &["CLIENT", "KILL", "TYPE", "pubsub"])
            .await
            .unwrap(),
        1
    );
    expect_closed(&mut s, Duration::from_secs(1)).await;
    expect(&mut bystander, &cmd(&["PING"]), "+PONG\r\n").await;

    // USER, ID and LADDR filters.
    let mut u = srv.raw().await;
    expect(&mut u, &cmd(&["AUTH", "app", "pw"]), "+OK\r\n").await;
    assert_eq!(
        q::<i64>(&mut c, &["CLIENT", "KILL", "USER", "app"])
            .await
            .unwrap(),
        1
    );
    expect_closed(&mut u, Duration::from_secs(1)).await;
    let mut i = srv.raw().await;
    let id = bulk(&mut i, &cmd(&["CLIENT", "INFO"])).await;
    let id = field(&id, "id").to_string();
    assert_eq!(
        q::<i64>(&mut c, &["CLIENT", "KILL", "ID", &id, "LADDR", "1.2.3.4:5"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        q::<i64>(
            &mut c,
            &["CLIENT", "KILL", "ID", &id, "LADDR", &srv.addr.to_string()]
        )
        .await
        .unwrap(),
        1
    );
    expect_closed(&mut i, Duration::from_secs(1)).await;

    // SKIPME yes spares the caller; the killed ones leave CLIENT LIST at once.
    let mut x = srv.raw().await;
    let mut y = srv.raw().await;
    expect(&mut x, &cmd(&["PING"]), "+PONG\r\n").await;
    expect(&mut y, &cmd(&["PING"]), "+PONG\r\n").await;
    let n: i64 = q(&mut c, &["CLIENT", "KILL", "SKIPME", "yes"])
        .await
        .unwrap();
    assert_eq!(n, 3, "bystander, x and y");
    let list: String = q(&mut c, &["CLIENT", "LIST"]).await.unwrap();
    assert_eq!(list.lines().count(), 1, "{list}");
    // SKIPME no kills the caller too, after its reply.
    let mut me = srv.raw().await;
    expect(&mut me, &cmd(&["CLIENT", "KILL", "SKIPME", "no"]), ":2\r\n").await;
    expect_closed(&mut me, Duration::from_secs(1)).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_reply_off_skip_on_and_pubsub_pushes() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut s = srv.raw().await;
    s.write_all(&cmd(&["CLIENT", "REPLY", "OFF"]))
        .await
        .unwrap();
    s.write_all(&cmd(&["PING", "a"])).await.unwrap();
    s.write_all(&cmd(&["GET", "nokey"])).await.unwrap();
    s.write_all(&cmd(&["NOSUCHCMD"])).await.unwrap();
    expect_silence(&mut s).await;
    expect(&mut s, &cmd(&["CLIENT", "REPLY", "ON"]), "+OK\r\n").await;
    expect(&mut s, &cmd(&["PING", "b"]), "$1\r\nb\r\n").await;

    // SKIP drops exactly the next reply.
    s.write_all(&cmd(&["CLIENT", "REPLY", "SKIP"]))
        .await
        .unwrap();
    s.write_all(&cmd(&["PING", "skipped"])).await.unwrap();
    expect(&mut s, &cmd(&["PING", "c"]), "$1\r\nc\r\n").await;
    // ON right after SKIP answers.
    s.write_all(&cmd(&["CLIENT", "REPLY", "SKIP"]))
        .await
        .unwrap();
    expect(&mut s, &cmd(&["CLIENT", "REPLY", "ON"]), "+OK\r\n").await;
    expect(
        &mut s,
        &cmd(&["CLIENT", "REPLY", "bad"]),
        "-ERR syntax error\r\n",
    )
    .await;

    // Pub/Sub confirmations and messages are pushes: REPLY OFF does not silence them.
    let mut p = srv.raw().await;
    let hello = cmd(&["HELLO", "3"]);
    p.write_all(&hello).await.unwrap();
    read_until(&mut p, b"*0\r\n").await;
    p.write_all(&cmd(&["CLIENT", "REPLY", "OFF"]))
        .await
        .unwrap();
    expect(
        &mut p,
        &cmd(&["SUBSCRIBE", "channel"]),
        ">3\r\n$9\r\nsubscribe\r\n$7\r\nchannel\r\n:1\r\n",
    )
    .await;
    let mut c = srv.con().await;
    assert_eq!(
        q::<i64>(&mut c, &["PUBLISH", "channel", "hi"])
            .await
            .unwrap(),
        1
    );
    let msg = ">3\r\n$7\r\nmessage\r\n$7\r\nchannel\r\n$2\r\nhi\r\n";
    assert_eq!(
        String::from_utf8_lossy(&read_n(&mut p, msg.len()).await),
        msg
    );
    p.write_all(&cmd(&["PING"])).await.unwrap();
    expect(
        &mut p,
        &cmd(&["UNSUBSCRIBE", "channel"]),
        ">3\r\n$11\r\nunsubscribe\r\n$7\r\nchannel\r\n:0\r\n",
    )
    .await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_pause_write_and_all_and_unpause() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut admin = srv.con().await;
    assert_eq!(
        err(&mut admin, &["CLIENT", "PAUSE", "abc"]).await,
        "ERR timeout is not an integer or out of range"
    );
    assert_eq!(
        err(&mut admin, &["CLIENT", "PAUSE", "-1"]).await,
        "ERR timeout is negative"
    );
    assert_eq!(
        err(&mut admin, &["CLIENT", "PAUSE", "10", "READ"]).await,
        "ERR CLIENT PAUSE mode must be WRITE or ALL"
    );

    // WRITE: reads answer at once, a write waits for the pause to run out.
    let mut s = srv.raw().await;
    expect(&mut s, &cmd(&["SET", "k", "v0"]), "+OK\r\n").await;
    assert_eq!(
        q::<String>(&mut admin, &["CLIENT", "PAUSE", "400", "WRITE"])
            .await
            .unwrap(),
        "OK"
    );
    let t = Instant::now();
    expect(&mut s, &cmd(&["GET", "k"]), "$2\r\nv0\r\n").await;
    assert!(t.elapsed() < Duration::from_millis(300));
    // A pipeline: the read before the write answers, the write and what follows wait.
    let mut pipe = cmd(&["GET", "k"]);
    pipe.extend(cmd(&["SET", "k", "v1"]));
    pipe.extend(cmd(&["GET", "k"]));
    s.write_all(&pipe).await.unwrap();
    let first = read_n(&mut s, 8).await;
    assert_eq!(first, b"$2\r\nv0\r\n");
    assert!(t.elapsed() < Duration::from_millis(300));
    let rest = read_n(&mut s, 13).await;
    assert_eq!(String::from_utf8_lossy(&rest), "+OK\r\n$2\r\nv1\r\n");
    assert!(
        t.elapsed() >= Duration::from_millis(380),
        "{:?}",
        t.elapsed()
    );

    // ALL holds reads too; CLIENT UNPAUSE (from WRITE mode) releases at once.
    assert_eq!(
        q::<String>(&mut admin, &["CLIENT", "PAUSE", "300", "ALL"])
            .await
            .unwrap(),
        "OK"
    );
    let t = Instant::now();
    expect(&mut s, &cmd(&["GET", "k"]), "$2\r\nv1\r\n").await;
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(
        q::<String>(&mut admin, &["CLIENT", "PAUSE", "10000", "WRITE"])
            .await
            .unwrap(),
        "OK"
    );
    s.write_all(&cmd(&["SET", "k", "v2"])).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let t = Instant::now();
    assert_eq!(
        q::<String>(&mut admin, &["CLIENT", "UNPAUSE"])
            .await
            .unwrap(),
        "OK"
    );
    assert_eq!(read_n(&mut s, 5).await, b"+OK\r\n");
    assert!(t.elapsed() < Duration::from_millis(500));
    srv.stop().await;
}

/// Reads one MONITOR line (without its CRLF).
async fn monitor_line(m: &mut TcpStream) -> String {
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while !line.ends_with(b"\r\n") {
        match tokio::time::timeout_at(deadline, m.read(&mut b)).await {
            Ok(Ok(1)) => line.push(b[0]),
            other => panic!(
                "no monitor line: {other:?} after {:?}",
                String::from_utf8_lossy(&line)
            ),
        }
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).unwrap()
}

/// The part of a MONITOR line after the timestamp: `[db origin] "args"...`.
fn after_time(line: &str) -> &str {
    let (time, rest) = line.split_once(' ').unwrap();
    let (secs, micros) = time.trim_start_matches('+').split_once('.').unwrap();
    assert!(time.starts_with('+'), "{line}");
    assert!(secs.parse::<u64>().unwrap() > 1_600_000_000, "{line}");
    assert_eq!(micros.len(), 6, "{line}");
    rest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_format_transactions_scripts_redaction_and_tenants() {
    let srv = TestServer::start(ServerConfig {
        users: vec![
            "app1 on >pw1 ~* &* +@all".into(),
            "app2 on >pw2 ~* &* +@all".into(),
        ],
        ..ServerConfig::default()
    })
    .await;
    let mut m = srv.raw().await;
    expect(&mut m, &cmd(&["MONITOR"]), "+OK\r\n").await;
    let mut s = srv.raw().await;
    let me = s.local_addr().unwrap();
    expect(&mut s, &cmd(&["SET", "foo", "a b\"\n\x01"]), "+OK\r\n").await;
    assert_eq!(
        after_time(&monitor_line(&mut m).await),
        format!("[0 {me}] \"SET\" \"foo\" \"a b\\\"\\n\\x01\"")
    );
    // Commands refused before running are not shown; admin commands never are.
    expect(
        &mut s,
        &cmd(&["GET"]),
        "-ERR wrong number of arguments for 'get' command\r\n",
    )
    .await;
    s.write_all(&cmd(&["CONFIG", "GET", "maxmemory"]))
        .await
        .unwrap();
    read_until(&mut s, b"\r\n0\r\n").await;
    expect(&mut s, &cmd(&["SELECT", "2"]), "+OK\r\n").await;
    assert_eq!(
        after_time(&monitor_line(&mut m).await),
        format!("[2 {me}] \"SELECT\" \"2\"")
    );
    expect(&mut s, &cmd(&["SELECT", "0"]), "+OK\r\n").await;
    monitor_line(&mut m).await;

    // MULTI / EXEC: multi, the queued commands when EXEC runs them, then exec.
    expect(&mut s, &cmd(&["MULTI"]), "+OK\r\n").await;
    expect(&mut s, &cmd(&["SET", "foo", "bar"]), "+QUEUED\r\n").await;
    expect(&mut s, &cmd(&["EXEC"]), "*1\r\n+OK\r\n").await;
    assert!(monitor_line(&mut m).await.ends_with("\"MULTI\""));
    assert!(monitor_line(&mut m)
        .await
        .ends_with("\"SET\" \"foo\" \"bar\""));
    assert!(monitor_line(&mut m).await.ends_with("\"EXEC\""));
    // An aborted transaction: multi and exec only.
    expect(&mut s, &cmd(&["MULTI"]), "+OK\r\n").await;
    s.write_all(&cmd(&["syntax", "error"])).await.unwrap();
    read_until(&mut s, b"\r\n").await;
    s.write_all(&cmd(&["EXEC"])).await.unwrap();
    read_until(&mut s, b"\r\n").await;
    assert!(monitor_line(&mut m).await.ends_with("\"MULTI\""));
    assert!(monitor_line(&mut m).await.ends_with("\"EXEC\""));

    // A script: EVAL first, then its commands as [0 lua].
    expect(
        &mut s,
        &cmd(&[
            "EVAL",
            "redis.call('set',KEYS[1],ARGV[1])",
            "1",
            "foo",
            "bar",
        ]),
        "$-1\r\n",
    )
    .await;
    assert!(monitor_line(&mut m).await.contains("\"EVAL\""));
    assert_eq!(
        after_time(&monitor_line(&mut m).await),
        "[0 lua] \"set\" \"foo\" \"bar\""
    );

    // Secrets are redacted, failed attempts included.
    s.write_all(&cmd(&["AUTH", "not-real"])).await.unwrap();
    read_until(&mut s, b"\r\n").await;
    s.write_all(&cmd(&["AUTH", "app1", "wrong"])).await.unwrap();
    read_until(&mut s, b"\r\n").await;
    s.write_all(&cmd(&["HELLO", "2", "AUTH", "app1", "pw1"]))
        .await
        .unwrap();
    read_until(&mut s, b"*0\r\n").await;
    assert!(monitor_line(&mut m)
        .await
        .ends_with("\"AUTH\" \"(redacted)\""));
    assert!(monitor_line(&mut m)
        .await
        .ends_with("\"AUTH\" \"(redacted)\" \"(redacted)\""));
    let hello = monitor_line(&mut m).await;
    assert!(
        hello.ends_with("\"HELLO\" \"2\" \"AUTH\" \"(redacted)\" \"(redacted)\""),
        "{hello}"
    );
    assert!(!hello.contains("pw1") && !hello.contains("app1"));

    // Tenants: app2's MONITOR sees app2's commands only; the default user's sees all.
    let mut m2 = srv.raw().await;
    expect(&mut m2, &cmd(&["AUTH", "app2", "pw2"]), "+OK\r\n").await;
    expect(&mut m2, &cmd(&["MONITOR"]), "+OK\r\n").await;
    let mut a2 = srv.raw().await;
    expect(&mut a2, &cmd(&["AUTH", "app2", "pw2"]), "+OK\r\n").await;
    // The default user's monitor saw both AUTHs (MONITOR itself is never shown); app2's
    // saw a2's, which ran as app2.
    for _ in 0..2 {
        assert!(monitor_line(&mut m)
            .await
            .ends_with("\"AUTH\" \"(redacted)\" \"(redacted)\""));
    }
    assert!(monitor_line(&mut m2)
        .await
        .ends_with("\"AUTH\" \"(redacted)\" \"(redacted)\""));
    // s is app1 now.
    expect(&mut s, &cmd(&["SET", "secret1", "x"]), "+OK\r\n").await;
    expect(&mut a2, &cmd(&["SET", "mine2", "y"]), "+OK\r\n").await;
    assert!(monitor_line(&mut m)
        .await
        .ends_with("\"SET\" \"secret1\" \"x\""));
    assert!(monitor_line(&mut m)
        .await
        .ends_with("\"SET\" \"mine2\" \"y\""));
    assert!(monitor_line(&mut m2)
        .await
        .ends_with("\"SET\" \"mine2\" \"y\""));
    expect_silence(&mut m2).await;

    // RESET ends MONITOR mode.
    expect(&mut m, &cmd(&["RESET"]), "+RESET\r\n").await;
    expect(&mut s, &cmd(&["PING"]), "+PONG\r\n").await;
    expect_silence(&mut m).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_buffer_is_released_when_idle_and_trimmed_after_a_big_command() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut admin = srv.con().await;
    let qbuf_total = |list: &str, name: &str| -> u64 {
        let l = line_named(list, name);
        field(l, "qbuf").parse::<u64>().unwrap() + field(l, "qbuf-free").parse::<u64>().unwrap()
    };
    let mut idle = srv.raw().await;
    expect(&mut idle, &cmd(&["CLIENT", "SETNAME", "idle"]), "+OK\r\n").await;
    let list: String = q(&mut admin, &["CLIENT", "LIST"]).await.unwrap();
    let orig = qbuf_total(&list, "idle");
    assert!((16384..32768).contains(&orig), "{orig}");
    let t = Instant::now();
    loop {
        let list: String = q(&mut admin, &["CLIENT", "LIST"]).await.unwrap();
        if qbuf_total(&list, "idle") == 0 {
            let idle_s: u64 = field(line_named(&list, "idle"), "idle").parse().unwrap();
            assert!(idle_s >= 3, "released only after 2 s idle: {idle_s}");
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(6), "not released: {list}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // It still works, with a fresh buffer.
    expect(&mut idle, &cmd(&["PING"]), "+PONG\r\n").await;

    let mut busy = srv.raw().await;
    expect(&mut busy, &cmd(&["CLIENT", "SETNAME", "busy"]), "+OK\r\n").await;
    let big = "A".repeat(400_000);
    expect(&mut busy, &cmd(&["SET", "x", &big]), "+OK\r\n").await;
    let list: String = q(&mut admin, &["CLIENT", "LIST"]).await.unwrap();
    let grown = qbuf_total(&list, "busy");
    assert!(grown > 32768, "{grown}");
    let t = Instant::now();
    let shrunk = loop {
        expect(&mut busy, &cmd(&["SET", "x", "small"]), "+OK\r\n").await;
        let list: String = q(&mut admin, &["CLIENT", "LIST"]).await.unwrap();
        let now = qbuf_total(&list, "busy");
        if now < grown {
            break now;
        }
        assert!(t.elapsed() < Duration::from_secs(1), "not trimmed: {now}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(shrunk > 0 && shrunk < grown, "{shrunk}");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_set_port_and_bind_rebind_live() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    // A port held by someone else: refused, and the server keeps its own.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_port = taken.local_addr().unwrap().port().to_string();
    assert_eq!(
        err(&mut c, &["CONFIG", "SET", "port", &taken_port]).await,
        "ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port"
    );
    expect(&mut srv.raw().await, &cmd(&["PING"]), "+PONG\r\n").await;

    let free = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    assert_eq!(
        q::<String>(&mut c, &["CONFIG", "SET", "port", &free.to_string()])
            .await
            .unwrap(),
        "OK"
    );
    let got: Vec<String> = q(&mut c, &["CONFIG", "GET", "port"]).await.unwrap();
    assert_eq!(got, ["port".to_string(), free.to_string()]);
    let mut n = TcpStream::connect(("127.0.0.1", free)).await.unwrap();
    expect(&mut n, &cmd(&["PING"]), "+PONG\r\n").await;
    // The old port stops accepting.
    let t = Instant::now();
    while TcpStream::connect(srv.addr).await.is_ok() {
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "old port still listening"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Existing connections are untouched; INFO tells the new port.
    let info: String = q(&mut c, &["INFO", "server"]).await.unwrap();
    assert!(info.contains(&format!("tcp_port:{free}")), "{info}");

    // bind: an address this host does not have is refused.
    assert_eq!(
        err(&mut c, &["CONFIG", "SET", "bind", "192.0.2.1"]).await,
        "ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses."
    );
    assert_eq!(
        q::<String>(&mut c, &["CONFIG", "SET", "bind", "127.0.0.1 -::1"])
            .await
            .unwrap(),
        "OK"
    );
    let mut n2 = TcpStream::connect(("127.0.0.1", free)).await.unwrap();
    expect(&mut n2, &cmd(&["PING"]), "+PONG\r\n").await;
    drop(taken);
    srv.stop().await;
}

/// Sends 3 MB of a 10 MB argument: the connection's query buffer holds them.
async fn send_partial_bulk(s: &mut TcpStream) {
    let mut v = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10000000\r\n".to_vec();
    v.extend(std::iter::repeat_n(b'x', 3 << 20));
    s.write_all(&v).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maxmemory_clients_evicts_the_largest_unless_no_evict() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    let get = |v: Vec<String>| v[1].clone();
    assert_eq!(
        get(q(&mut c, &["CONFIG", "GET", "maxmemory-clients"])
            .await
            .unwrap()),
        "0"
    );
    assert_eq!(
        err(&mut c, &["CONFIG", "SET", "maxmemory-clients", "200%"]).await,
        "ERR CONFIG SET failed (possibly related to argument 'maxmemory-clients') - percentage argument must be less or equal to 100"
    );
    assert_eq!(
        err(&mut c, &["CONFIG", "SET", "maxmemory-clients", "lots"]).await,
        "ERR CONFIG SET failed (possibly related to argument 'maxmemory-clients') - argument must be a memory or percent value"
    );
    let _: () = q(&mut c, &["CONFIG", "SET", "maxmemory-clients", "10%"])
        .await
        .unwrap();
    assert_eq!(
        get(q(&mut c, &["CONFIG", "GET", "maxmemory-clients"])
            .await
            .unwrap()),
        "10%"
    );
    let _: () = q(&mut c, &["CONFIG", "SET", "maxmemory-clients", "1mb"])
        .await
        .unwrap();
    assert_eq!(
        get(q(&mut c, &["CONFIG", "GET", "maxmemory-clients"])
            .await
            .unwrap()),
        "1048576"
    );

    // Two connections each hold a 3 MB half-read argument: over the 1 MB limit. The
    // NO-EVICT one stays, the other is closed.
    let mut keep = srv.raw().await;
    expect(&mut keep, &cmd(&["CLIENT", "NO-EVICT", "on"]), "+OK\r\n").await;
    let info = bulk(&mut keep, &cmd(&["CLIENT", "INFO"])).await;
    assert_eq!(field(&info, "flags"), "e");
    let mut hog = srv.raw().await;
    send_partial_bulk(&mut keep).await;
    send_partial_bulk(&mut hog).await;
    expect_closed(&mut hog, Duration::from_secs(4)).await;
    let info: String = q(&mut c, &["INFO", "stats"]).await.unwrap();
    assert!(info.contains("evicted_clients:1\r\n"), "{info}");
    let list: String = q(&mut c, &["CLIENT", "LIST"]).await.unwrap();
    assert_eq!(list.lines().count(), 2, "{list}");
    let _: () = q(&mut c, &["CONFIG", "SET", "maxmemory-clients", "0"])
        .await
        .unwrap();
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn info_memory_reports_process_figures() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut c = srv.con().await;
    let _: () = q(&mut c, &["SET", "k", &"v".repeat(100_000)])
        .await
        .unwrap();
    let info: String = q(&mut c, &["INFO", "memory"]).await.unwrap();
    let get = |k: &str| -> String {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}:")))
            .unwrap_or_else(|| panic!("no {k} in {info}"))
            .to_string()
    };
    let used: u64 = get("used_memory").parse().unwrap();
    let rss: u64 = get("used_memory_rss").parse().unwrap();
    let peak: u64 = get("used_memory_peak").parse().unwrap();
    let total: u64 = get("total_system_memory").parse().unwrap();
    assert!(used >= 100_000);
    assert!(
        rss > used,
        "the process holds more than its data: {rss} {used}"
    );
    assert!(peak >= used);
    assert!(total > rss);
    assert!(get("used_memory_peak_human").ends_with(['K', 'M', 'G', 'B']));
    assert!(get("used_memory_overhead").parse::<u64>().unwrap() > 0);
    let frag: f64 = get("mem_fragmentation_ratio").parse().unwrap();
    assert!((frag - rss as f64 / used as f64).abs() < 0.02);
    for k in [
        "used_memory_rss_human",
        "used_memory_peak_perc",
        "used_memory_dataset",
        "mem_clients_normal",
        "mem_not_counted_for_evict",
        "lazyfree_pending_objects",
    ] {
        get(k);
    }
    // Peak stays when used memory goes down.
    let _: () = q(&mut c, &["DEL", "k"]).await.unwrap();
    let info2: String = q(&mut c, &["INFO", "memory"]).await.unwrap();
    let peak2: u64 = info2
        .lines()
        .find_map(|l| l.strip_prefix("used_memory_peak:"))
        .unwrap()
        .parse()
        .unwrap();
    assert!(peak2 >= peak);
    srv.stop().await;
}

/// CLIENT PAUSE WRITE holds what may write by its flags as Redis's getCommandFlags gives
/// them: a script with no shebang (may replicate) and one with flags but no `no-writes`
/// wait; a `no-writes` script, an FCALL of a `no-writes` function and a transaction of
/// them run. (Held EXECs and blocked_clients of held clients: unit/pause in CI.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_pause_write_judges_scripts_by_their_flags() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut admin = s.con().await;
    let blocked = |info: String| common::info_field(&info, "blocked_clients");
    let _: String = q(
        &mut admin,
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=lib\nredis.register_function{function_name='ro', callback=function() return 'hello' end, flags={'no-writes'}}",
        ],
    )
    .await
    .unwrap();
    let _: String = q(&mut admin, &["CLIENT", "PAUSE", "60000", "WRITE"])
        .await
        .unwrap();
    // Not held.
    let mut rr = s.con().await;
    let v: String = q(
        &mut rr,
        &["EVAL", "#!lua flags=no-writes\nreturn 'ro'", "0"],
    )
    .await
    .unwrap();
    assert_eq!(v, "ro");
    let v: String = q(&mut rr, &["FCALL", "ro", "0"]).await.unwrap();
    assert_eq!(v, "hello");
    let mut pipe = redis::pipe();
    pipe.cmd("MULTI")
        .ignore()
        .cmd("EVAL")
        .arg("#!lua flags=no-writes\nreturn 12")
        .arg(0)
        .ignore()
        .cmd("EXEC");
    let v: (Vec<i64>,) = pipe.query_async(&mut rr).await.unwrap_or_else(|_| {
        panic!("the no-writes transaction did not run");
    });
    assert_eq!(v.0, [12]);
    assert_eq!(
        blocked(q(&mut admin, &["INFO", "clients"]).await.unwrap()),
        0
    );
    // Held: a script with no shebang, and one with a shebang but no no-writes.
    for script in ["return 1", "#!lua\nreturn 2"] {
        let mut c = s.con().await;
        let r = tokio::time::timeout(
            Duration::from_millis(300),
            q::<i64>(&mut c, &["EVAL", script, "0"]),
        )
        .await;
        assert!(r.is_err(), "{script:?} ran during the pause: {r:?}");
    }
    let _: String = q(&mut admin, &["CLIENT", "UNPAUSE"]).await.unwrap();
    s.stop().await;
}

/// During CLIENT PAUSE nothing expires (Redis 7.0 `expireIfNeeded`): a read sees an
/// expired key as missing but leaves it in place, so `expired_keys` and DBSIZE stay
/// put and no `expired` event is published until the pause ends; the first read after
/// CLIENT UNPAUSE deletes it. Checked the same way against redis-server 7.0.15.
#[tokio::test]
async fn client_pause_leaves_expired_keys_in_place_until_unpause() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut c = s.con().await;
    let expired = |info: String| common::info_field(&info, "expired_keys");
    let _: String = q(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Ex"])
        .await
        .unwrap();
    let client = redis::Client::open(format!("redis://{}/", s.addr)).unwrap();
    let mut ps = client.get_async_pubsub().await.unwrap();
    ps.subscribe("__keyevent@0__:expired").await.unwrap();
    let mut sub = Box::pin(ps.into_on_message());
    let before = expired(q(&mut c, &["INFO", "stats"]).await.unwrap());
    for k in ["a", "b", "c"] {
        let _: String = q(&mut c, &["SET", k, "v", "PX", "20"]).await.unwrap();
    }
    let _: String = q(&mut c, &["SET", "hash-kept", "v"]).await.unwrap();
    let _: i64 = q(&mut c, &["HSET", "h", "f", "v"]).await.unwrap();
    let _: i64 = q(&mut c, &["PEXPIRE", "h", "20"]).await.unwrap();
    let _: String = q(&mut c, &["CLIENT", "PAUSE", "60000", "WRITE"])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Every read reports the keys gone...
    let v: Option<String> = q(&mut c, &["GET", "a"]).await.unwrap();
    assert_eq!(v, None);
    let n: i64 = q(&mut c, &["EXISTS", "b"]).await.unwrap();
    assert_eq!(n, 0);
    let t: i64 = q(&mut c, &["PTTL", "c"]).await.unwrap();
    assert_eq!(t, -2);
    let t: String = q(&mut c, &["TYPE", "h"]).await.unwrap();
    assert_eq!(t, "none");
    let n: i64 = q(&mut c, &["HLEN", "h"]).await.unwrap();
    assert_eq!(n, 0);
    // ... and none was deleted.
    assert_eq!(
        expired(q(&mut c, &["INFO", "stats"]).await.unwrap()),
        before
    );
    let n: i64 = q(&mut c, &["DBSIZE"]).await.unwrap();
    assert_eq!(n, 5);
    let none = tokio::time::timeout(Duration::from_millis(300), sub.next()).await;
    assert!(none.is_err(), "an expired event during the pause: {none:?}");
    let _: String = q(&mut c, &["CLIENT", "UNPAUSE"]).await.unwrap();
    for k in ["a", "b", "c", "h"] {
        let n: i64 = q(&mut c, &["EXISTS", k]).await.unwrap();
        assert_eq!(n, 0);
    }
    assert_eq!(
        expired(q(&mut c, &["INFO", "stats"]).await.unwrap()),
        before + 4
    );
    let n: i64 = q(&mut c, &["DBSIZE"]).await.unwrap();
    assert_eq!(n, 1);
    let msg = tokio::time::timeout(Duration::from_secs(3), sub.next())
        .await
        .expect("an expired event after the unpause")
        .unwrap();
    assert_eq!(msg.get_channel_name(), "__keyevent@0__:expired");
    s.stop().await;
}

/// CLIENT PAUSE WRITE holds scripts that may write and an EXEC of a write on their own
/// connections, each counted in blocked_clients while it waits, and CLIENT UNPAUSE
/// releases them all with their replies.
#[tokio::test]
async fn client_pause_holds_concurrent_writers_and_unpause_releases_them() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut admin = s.con().await;
    let _: String = q(&mut admin, &["CLIENT", "PAUSE", "60000", "WRITE"])
        .await
        .unwrap();
    let mut held = Vec::new();
    for (script, want) in [("return 1", 1), ("#!lua\nreturn 2", 2)] {
        let mut c = s.con().await;
        held.push(tokio::spawn(async move {
            let v = q::<i64>(&mut c, &["EVAL", script, "0"]).await.unwrap();
            assert_eq!(v, want, "{script:?}");
        }));
    }
    let mut m = s.con().await;
    held.push(tokio::spawn(async move {
        let mut pipe = redis::pipe();
        pipe.cmd("MULTI")
            .ignore()
            .cmd("SET")
            .arg("k")
            .arg("v")
            .ignore()
            .cmd("EXEC");
        let (v,): (Vec<String>,) = pipe.query_async(&mut m).await.unwrap();
        assert_eq!(v, ["OK"]);
    }));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info: String = q(&mut admin, &["INFO", "clients"]).await.unwrap();
        if common::info_field(&info, "blocked_clients") == 3 {
            break;
        }
        assert!(Instant::now() < deadline, "not all three held: {info}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(held.iter().all(|t| !t.is_finished()));
    let v: Option<String> = q(&mut admin, &["GET", "k"]).await.unwrap();
    assert_eq!(v, None, "the EXEC ran during the pause");
    let _: String = q(&mut admin, &["CLIENT", "UNPAUSE"]).await.unwrap();
    for t in held {
        tokio::time::timeout(Duration::from_secs(5), t)
            .await
            .expect("released by the unpause")
            .unwrap();
    }
    let v: Option<String> = q(&mut admin, &["GET", "k"]).await.unwrap();
    assert_eq!(v.as_deref(), Some("v"));
    let info: String = q(&mut admin, &["INFO", "clients"]).await.unwrap();
    assert_eq!(common::info_field(&info, "blocked_clients"), 0);
    s.stop().await;
}

/// This machine's address on its default route's interface (no packet is sent), if it
/// has a non-loopback one.
fn non_loopback_ipv4() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("10.255.255.255:1").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// Protected mode (networking.c `clientAcceptHandler`): while the default user has no
/// password, a client from a non-loopback address gets Redis's DENIED error and is
/// closed, counted in rejected_connections; loopback clients are served; a password or
/// `protected-mode no` (live) lets it in.
#[tokio::test]
async fn protected_mode_refuses_non_loopback_clients_without_a_password() {
    let Some(ip) = non_loopback_ipv4() else {
        panic!("this test needs a non-loopback IPv4 address on the machine");
    };
    let cfg = ServerConfig {
        port: 0,
        bind: vec!["0.0.0.0".into()],
        ..ServerConfig::default()
    };
    let server = augur_server::Server::bind(cfg, None).await.expect("bind");
    let port = server.local_addrs()[0].port();
    let handle = server.handle();
    let task = tokio::spawn(server.run());
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let outside = std::net::SocketAddr::new(ip, port);
    let mut admin = TcpStream::connect(local).await.unwrap();
    expect(&mut admin, &cmd(&["PING"]), "+PONG\r\n").await;
    let denied = |s: String| {
        assert!(
            s.starts_with("-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user.")
                && s.ends_with("accepting connections from the outside.\r\n"),
            "{s:?}"
        )
    };
    let mut o = TcpStream::connect(outside).await.unwrap();
    o.write_all(&cmd(&["PING"])).await.unwrap();
    denied(read_until(&mut o, b"outside.\r\n").await);
    expect_closed(&mut o, Duration::from_secs(3)).await;
    let info = bulk(&mut admin, &cmd(&["INFO", "stats"])).await;
    assert_eq!(common::info_field(&info, "rejected_connections"), 1);
    // With a password for the default user, the outside client connects (and must
    // authenticate, as every client).
    expect(
        &mut admin,
        &cmd(&["CONFIG", "SET", "requirepass", "pw"]),
        "+OK\r\n",
    )
    .await;
    let mut o = TcpStream::connect(outside).await.unwrap();
    expect(&mut o, &cmd(&["AUTH", "pw"]), "+OK\r\n").await;
    expect(&mut o, &cmd(&["PING"]), "+PONG\r\n").await;
    expect(&mut admin, &cmd(&["AUTH", "pw"]), "+OK\r\n").await;
    expect(
        &mut admin,
        &cmd(&["CONFIG", "SET", "requirepass", ""]),
        "+OK\r\n",
    )
    .await;
    let mut o = TcpStream::connect(outside).await.unwrap();
    o.write_all(&cmd(&["PING"])).await.unwrap();
    denied(read_until(&mut o, b"outside.\r\n").await);
    // protected-mode no, live.
    expect(
        &mut admin,
        &cmd(&["CONFIG", "SET", "protected-mode", "no"]),
        "+OK\r\n",
    )
    .await;
    expect(
        &mut admin,
        &cmd(&["CONFIG", "GET", "protected-mode"]),
        "*2\r\n$14\r\nprotected-mode\r\n$2\r\nno\r\n",
    )
    .await;
    let mut o = TcpStream::connect(outside).await.unwrap();
    expect(&mut o, &cmd(&["PING"]), "+PONG\r\n").await;
    handle.shutdown();
    let _ = task.await;
}
