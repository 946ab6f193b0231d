//! SLOWLOG and LATENCY over real sockets (the redis crate): what is logged and when
//! (after the command; EXEC's commands and a script's, not EXEC; a blocked command when
//! it is served), the entry's fields, trimming and redaction, the limits and error
//! texts; the latency monitor's events (a slow command, an expiry cycle freeing a large
//! set), HISTORY / LATEST / GRAPH / DOCTOR / RESET, and LATENCY HISTOGRAM's
//! cumulative counts. Then, on Augur only, each tenant's own slow log.
//!
//! The shared bodies run against a real redis-server 7.0 too (where the expectations
//! were checked):
//!
//! ```text
//! redis-server --port 7653 --save "" --daemonize yes
//! AUGUR_E2E_REDIS=127.0.0.1:7653 cargo test -p augur --test diagnostics_e2e on_redis -- --ignored
//! ```

mod common;

use common::blocking::{spawn_q, wait_blocked};
use common::replies::{con, qr};
use common::{q, TestServer};
use redis::aio::MultiplexedConnection;
use redis::Value;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One SLOWLOG GET entry.
#[derive(Debug)]
struct Slow {
    id: i64,
    time: i64,
    micros: i64,
    args: Vec<String>,
    peer: String,
    name: String,
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::VerbatimString { text, .. } => text.clone(),
        other => panic!("not a string: {other:?}"),
    }
}

fn int(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        other => panic!("not an integer: {other:?}"),
    }
}

fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(a) => a,
        other => panic!("not an array: {other:?}"),
    }
}

async fn slowlog(c: &mut MultiplexedConnection, count: Option<&str>) -> Vec<Slow> {
    let mut cmd = vec!["SLOWLOG", "GET"];
    cmd.extend(count);
    let v = qr(c, &cmd).await.unwrap();
    items(&v)
        .iter()
        .map(|e| {
            let e = items(e);
            assert_eq!(e.len(), 6, "{e:?}");
            Slow {
                id: int(&e[0]),
                time: int(&e[1]),
                micros: int(&e[2]),
                args: items(&e[3]).iter().map(text).collect(),
                peer: text(&e[4]),
                name: text(&e[5]),
            }
        })
        .collect()
}

fn args_of(entries: &[Slow]) -> Vec<String> {
    entries.iter().map(|e| e.args.join(" ")).collect()
}

async fn run(c: &mut MultiplexedConnection, cmds: &[&[&str]]) {
    for cmd in cmds {
        qr(c, cmd).await.unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    }
}

/// This connection's `addr=` (CLIENT INFO), as a slow-log entry's peer.
async fn own_addr(c: &mut MultiplexedConnection) -> String {
    let info: String = q(c, &["CLIENT", "INFO"]).await.unwrap();
    info.split(' ')
        .find_map(|f| f.strip_prefix("addr="))
        .unwrap()
        .to_string()
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

async fn slowlog_records_each_command_after_it_ran(addr: SocketAddr) {
    let mut c = con(addr).await;
    run(
        &mut c,
        &[
            &["CONFIG", "SET", "slowlog-log-slower-than", "0"],
            &["SLOWLOG", "RESET"],
            &["CLIENT", "SETNAME", "tester"],
            &["SET", "k", "v"],
        ],
    )
    .await;
    let me = own_addr(&mut c).await;
    let e = slowlog(&mut c, None).await;
    // Newest first; SLOWLOG RESET is logged after it cleared the log; CLIENT INFO
    // came after the SET.
    assert_eq!(
        args_of(&e),
        [
            "CLIENT INFO",
            "SET k v",
            "CLIENT SETNAME tester",
            "SLOWLOG RESET"
        ]
    );
    for w in e.windows(2) {
        assert_eq!(w[0].id, w[1].id + 1, "{e:?}");
    }
    let now = unix_now();
    for x in &e {
        assert!((now - x.time).abs() <= 2, "{x:?}");
        assert!(x.micros >= 0 && x.micros < 1_000_000, "{x:?}");
        assert_eq!(x.peer, me);
    }
    // The name is the client's when the command was logged (after it ran).
    assert_eq!(e[1].name, "tester");
    assert_eq!(e[2].name, "tester");
    assert_eq!(e[3].name, "");
    // A threshold above every command: nothing more is logged.
    run(
        &mut c,
        &[&["CONFIG", "SET", "slowlog-log-slower-than", "10000000"]],
    )
    .await;
    let before = q::<i64>(&mut c, &["SLOWLOG", "LEN"]).await.unwrap();
    run(&mut c, &[&["SET", "k", "w"], &["GET", "k"]]).await;
    // The CONFIG SET raising the threshold was itself logged under the old one.
    assert_eq!(before, 5);
    assert_eq!(q::<i64>(&mut c, &["SLOWLOG", "LEN"]).await.unwrap(), 5);
    // -1 turns it off even for a command over any threshold.
    run(
        &mut c,
        &[
            &["CONFIG", "SET", "slowlog-log-slower-than", "-1"],
            &["SLOWLOG", "RESET"],
            &["SET", "k", "x"],
        ],
    )
    .await;
    assert_eq!(q::<i64>(&mut c, &["SLOWLOG", "LEN"]).await.unwrap(), 0);
}

async fn slowlog_limits_counts_and_trims(addr: SocketAddr) {
    let mut c = con(addr).await;
    run(
        &mut c,
        &[
            &["CONFIG", "SET", "slowlog-log-slower-than", "0"],
            &["CONFIG", "SET", "slowlog-max-len", "3"],
            &["SLOWLOG", "RESET"],
            &["SET", "a", "1"],
            &["INCR", "a"],
            &["SADD", "s", "x"],
            &["LPUSH", "l", "y"],
        ],
    )
    .await;
    assert_eq!(q::<i64>(&mut c, &["SLOWLOG", "LEN"]).await.unwrap(), 3);
    assert!(slowlog(&mut c, Some("0")).await.is_empty());
    assert_eq!(
        args_of(&slowlog(&mut c, Some("1")).await),
        ["SLOWLOG GET 0"]
    );
    assert_eq!(slowlog(&mut c, Some("-1")).await.len(), 3);
    assert_eq!(slowlog(&mut c, Some("100")).await.len(), 3);
    for bad in ["-2", "-222", "x", "+5", "1.5", "99999999999999999999"] {
        assert_eq!(
            qr(&mut c, &["SLOWLOG", "GET", bad]).await,
            Err("ERR count should be greater than or equal to -1".into()),
            "{bad}"
        );
    }
    assert_eq!(
        qr(&mut c, &["SLOWLOG", "GET", "1", "2"]).await,
        Err(
            "ERR unknown subcommand or wrong number of arguments for 'GET'. Try SLOWLOG HELP."
                .into()
        )
    );
    assert_eq!(
        qr(&mut c, &["SLOWLOG", "LEN", "1"]).await,
        Err("ERR wrong number of arguments for 'slowlog|len' command".into())
    );
    assert_eq!(
        qr(&mut c, &["SLOWLOG", "NOPE"]).await,
        Err("ERR unknown subcommand 'NOPE'. Try SLOWLOG HELP.".into())
    );
    // 33 arguments: 31 kept and a count of the rest; a 129-byte argument cut at 128.
    run(&mut c, &[&["CONFIG", "SET", "slowlog-max-len", "128"]]).await;
    let mut many = vec!["SADD".to_string(), "set".to_string()];
    many.extend((3..=33).map(|i| i.to_string()));
    let many_ref: Vec<&str> = many.iter().map(String::as_str).collect();
    run(&mut c, &[&many_ref]).await;
    let e = slowlog(&mut c, Some("1")).await;
    assert_eq!(e[0].args.len(), 32);
    assert_eq!(e[0].args[30], "31");
    assert_eq!(e[0].args[31], "... (2 more arguments)");
    let long = "A".repeat(129);
    run(&mut c, &[&["SADD", "set", "foo", &long]]).await;
    let e = slowlog(&mut c, Some("1")).await;
    assert_eq!(
        e[0].args[3],
        format!("{}... (1 more bytes)", "A".repeat(128))
    );
    // Values CONFIG GET shows, and the range errors.
    let got: Vec<String> = q(&mut c, &["CONFIG", "GET", "slowlog-max-len"])
        .await
        .unwrap();
    assert_eq!(got, ["slowlog-max-len", "128"]);
    for (name, bad, range) in [
        ("slowlog-max-len", "-1", "0 and 9223372036854775807"),
        (
            "slowlog-log-slower-than",
            "-2",
            "-1 and 9223372036854775807",
        ),
        (
            "latency-monitor-threshold",
            "-1",
            "0 and 9223372036854775807",
        ),
    ] {
        assert_eq!(
            qr(&mut c, &["CONFIG", "SET", name, bad]).await,
            Err(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - argument must be between {range} inclusive")),
        );
    }
}

async fn exec_and_scripts_log_the_commands_they_run(addr: SocketAddr) {
    let mut c = con(addr).await;
    run(
        &mut c,
        &[
            &["CONFIG", "SET", "slowlog-log-slower-than", "0"],
            &["CLIENT", "SETNAME", "txn"],
            &["SLOWLOG", "RESET"],
        ],
    )
    .await;
    let mut pipe = redis::pipe();
    pipe.cmd("MULTI")
        .cmd("SET")
        .arg("a")
        .arg("1")
        .cmd("INCR")
        .arg("a")
        .cmd("EXEC");
    let _: Value = pipe.query_async(&mut c).await.unwrap();
    run(
        &mut c,
        &[&["EVAL", "redis.call('set', 'b', '2') return 1", "0"]],
    )
    .await;
    let e = slowlog(&mut c, None).await;
    assert_eq!(
        args_of(&e),
        [
            "EVAL redis.call('set', 'b', '2') return 1 0",
            "set b 2",
            "INCR a",
            "SET a 1",
            "MULTI",
            "SLOWLOG RESET"
        ]
    );
    // The script's command is its script client's: no address, no name.
    assert_eq!((e[1].peer.as_str(), e[1].name.as_str()), ("?:0", ""));
    assert_eq!(e[2].name, "txn");
    assert_eq!(e[0].name, "txn");
}

async fn a_blocked_command_is_logged_when_served(addr: SocketAddr) {
    let mut c = con(addr).await;
    run(
        &mut c,
        &[
            &["CONFIG", "SET", "slowlog-log-slower-than", "0"],
            &["DEL", "l"],
            &["SLOWLOG", "RESET"],
        ],
    )
    .await;
    let waiter = spawn_q(con(addr).await, &["BLPOP", "l", "0"]);
    wait_blocked(&mut c, 1).await;
    // Blocked: not logged yet (the waiter's connection set-up and this connection's
    // INFO polls are).
    let so_far = args_of(&slowlog(&mut c, None).await);
    assert!(!so_far.iter().any(|a| a.starts_with("BLPOP")), "{so_far:?}");
    assert!(so_far.iter().any(|a| a == "INFO clients"), "{so_far:?}");
    run(&mut c, &[&["LPUSH", "l", "foo"]]).await;
    let (_, got) = waiter.await.unwrap();
    assert_eq!(
        got,
        Ok(Value::Array(vec![
            Value::BulkString(b"l".to_vec()),
            Value::BulkString(b"foo".to_vec())
        ]))
    );
    let e = slowlog(&mut c, Some("2")).await;
    assert_eq!(args_of(&e), ["BLPOP l 0", "LPUSH l foo"]);
    // Its duration is the time it ran, not the time it waited.
    assert!(e[0].micros < 100_000, "{:?}", e[0]);
}

async fn secrets_are_redacted(addr: SocketAddr) {
    let mut c = con(addr).await;
    run(
        &mut c,
        &[
            &["CONFIG", "SET", "slowlog-log-slower-than", "0"],
            &["SLOWLOG", "RESET"],
            &["ACL", "SETUSER", "slowlog-user", "on", ">secret", "+get"],
            &["CONFIG", "SET", "requirepass", ""],
            &["HELLO", "2", "AUTH", "default", "anything"],
        ],
    )
    .await;
    let _ = qr(&mut c, &["AUTH", "slowlog-user", "wrong"]).await;
    let _ = qr(&mut c, &["AUTH", "wrong"]).await;
    run(&mut c, &[&["ACL", "DELUSER", "slowlog-user"]]).await;
    let e = slowlog(&mut c, None).await;
    assert_eq!(
        args_of(&e),
        [
            "ACL DELUSER slowlog-user",
            "AUTH (redacted)",
            "AUTH (redacted) (redacted)",
            "HELLO 2 AUTH (redacted) (redacted)",
            "CONFIG SET requirepass (redacted)",
            "ACL SETUSER (redacted) (redacted) (redacted) (redacted)",
            "SLOWLOG RESET"
        ]
    );
}

/// LATENCY LATEST as (event, time, latency, max).
async fn latest(c: &mut MultiplexedConnection) -> Vec<(String, i64, i64, i64)> {
    let v = qr(c, &["LATENCY", "LATEST"]).await.unwrap();
    items(&v)
        .iter()
        .map(|e| {
            let e = items(e);
            (text(&e[0]), int(&e[1]), int(&e[2]), int(&e[3]))
        })
        .collect()
}

/// A script that runs for at least `ms` milliseconds.
fn busy_script(ms: u64) -> String {
    format!(
        "local s = redis.call('TIME') local t0 = s[1] * 1000000 + s[2] \
         repeat local n = redis.call('TIME') until n[1] * 1000000 + n[2] - t0 >= {} \
         return 1",
        ms * 1000
    )
}

async fn latency_monitor_records_slow_commands(addr: SocketAddr) {
    let mut c = con(addr).await;
    run(&mut c, &[&["LATENCY", "RESET"]]).await;
    let doctor: String = q(&mut c, &["LATENCY", "DOCTOR"]).await.unwrap();
    assert!(doctor.starts_with("I'm sorry, Dave"), "{doctor}");
    // Off (threshold 0): nothing is recorded.
    run(&mut c, &[&["EVAL", &busy_script(30), "0"]]).await;
    assert!(latest(&mut c).await.is_empty());
    run(
        &mut c,
        &[&["CONFIG", "SET", "latency-monitor-threshold", "20"]],
    )
    .await;
    let t0 = unix_now();
    run(&mut c, &[&["EVAL", &busy_script(40), "0"]]).await;
    let l = latest(&mut c).await;
    assert_eq!(l.len(), 1, "{l:?}");
    let (event, time, ms, max) = &l[0];
    assert_eq!(event, "command");
    assert!((*time - t0).abs() <= 2);
    assert!(*ms >= 40 && *ms < 1000 && max == ms, "{l:?}");
    let h = qr(&mut c, &["LATENCY", "HISTORY", "command"])
        .await
        .unwrap();
    let h = items(&h);
    assert_eq!(h.len(), 1);
    assert_eq!(int(&items(&h[0])[1]), *ms);
    assert_eq!(
        qr(&mut c, &["LATENCY", "HISTORY", "blabla"]).await,
        Ok(Value::Array(vec![]))
    );
    let graph: String = q(&mut c, &["LATENCY", "GRAPH", "command"]).await.unwrap();
    assert!(
        graph.starts_with(&format!(
            "command - high {ms} ms, low {ms} ms (all time high {ms} ms)\n{}\n",
            "-".repeat(80)
        )),
        "{graph}"
    );
    assert_eq!(
        qr(&mut c, &["LATENCY", "GRAPH", "blabla"]).await,
        Err("ERR No samples available for event 'blabla'".into())
    );
    let doctor: String = q(&mut c, &["LATENCY", "DOCTOR"]).await.unwrap();
    assert!(
        doctor.contains(&format!(
            "1. command: 1 latency spikes (average {ms}ms, mean deviation 0ms, period "
        )),
        "{doctor}"
    );
    assert!(
        doctor.contains("- Check your Slow Log to understand what are the commands"),
        "{doctor}"
    );
    assert_eq!(
        q::<i64>(&mut c, &["LATENCY", "RESET", "blabla"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(q::<i64>(&mut c, &["LATENCY", "RESET"]).await.unwrap(), 1);
    assert!(latest(&mut c).await.is_empty());
    assert_eq!(
        qr(&mut c, &["LATENCY", "HELP", "xxx"]).await,
        Err("ERR wrong number of arguments for 'latency|help' command".into())
    );
    run(
        &mut c,
        &[&["CONFIG", "SET", "latency-monitor-threshold", "0"]],
    )
    .await;
}

async fn an_expiring_large_set_is_an_expire_cycle_event(addr: SocketAddr) {
    let mut c = con(addr).await;
    run(
        &mut c,
        &[
            &["LATENCY", "RESET"],
            &["CONFIG", "SET", "latency-monitor-threshold", "1"],
        ],
    )
    .await;
    let fill = "for i = 1, tonumber(ARGV[1]) do redis.call('SADD', KEYS[1], i) end return 1";
    run(&mut c, &[&["EVAL", fill, "1", "bigset", "300000"]]).await;
    run(&mut c, &[&["PEXPIRE", "bigset", "50"]]).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while q::<i64>(&mut c, &["DBSIZE"]).await.unwrap() != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the set never expired"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let l = latest(&mut c).await;
    assert!(l.iter().any(|e| e.0 == "expire-cycle" && e.2 >= 1), "{l:?}");
    run(
        &mut c,
        &[&["CONFIG", "SET", "latency-monitor-threshold", "0"]],
    )
    .await;
}

/// LATENCY HISTOGRAM's entries as name -> (calls, [(usec, cumulative)]).
async fn histogram(
    c: &mut MultiplexedConnection,
    names: &[&str],
) -> Vec<(String, i64, Vec<(i64, i64)>)> {
    let mut cmd = vec!["LATENCY", "HISTOGRAM"];
    cmd.extend_from_slice(names);
    let v = qr(c, &cmd).await.unwrap();
    let flat = items(&v);
    flat.chunks(2)
        .map(|kv| {
            let inner = items(&kv[1]);
            assert_eq!(text(&inner[0]), "calls");
            assert_eq!(text(&inner[2]), "histogram_usec");
            let pairs = items(&inner[3])
                .chunks(2)
                .map(|p| (int(&p[0]), int(&p[1])))
                .collect();
            (text(&kv[0]), int(&inner[1]), pairs)
        })
        .collect()
}

async fn latency_histogram_counts_calls(addr: SocketAddr) {
    let mut c = con(addr).await;
    run(&mut c, &[&["CONFIG", "RESETSTAT"]]).await;
    // CONFIG RESETSTAT's own call is the only one recorded since.
    let h = histogram(&mut c, &[]).await;
    assert_eq!(h.len(), 1, "{h:?}");
    assert_eq!((h[0].0.as_str(), h[0].1), ("config|resetstat", 1));
    run(&mut c, &[&["CONFIG", "RESETSTAT"]]).await;
    for _ in 0..5 {
        run(&mut c, &[&["SET", "a", "b"]]).await;
    }
    run(
        &mut c,
        &[&["CLIENT", "ID"], &["CLIENT", "GETNAME"], &["GET", "a"]],
    )
    .await;
    let h = histogram(&mut c, &["set", "blabla", "client", "get", "client|id"]).await;
    let names: Vec<&str> = h.iter().map(|e| e.0.as_str()).collect();
    // In the order asked; a container stands for its subcommands; unknown skipped.
    assert_eq!(names[0], "set");
    let mut clients: Vec<&str> = names[1..3].to_vec();
    clients.sort_unstable();
    assert_eq!(clients, ["client|getname", "client|id"]);
    assert_eq!(&names[3..], ["get", "client|id"]);
    let (_, calls, pairs) = &h[0];
    assert_eq!(*calls, 5);
    // Cumulative: increasing buckets, increasing counts, ending at every call.
    assert!(!pairs.is_empty());
    for w in pairs.windows(2) {
        assert!(w[0].0 < w[1].0 && w[0].1 < w[1].1, "{pairs:?}");
    }
    assert_eq!(pairs.last().unwrap().1, 5);
    assert!(histogram(&mut c, &["blabla", "blabla2"]).await.is_empty());
}

/// The external server for the `on_redis` tests, reset for the next one.
async fn external() -> Option<(SocketAddr, tokio::sync::MutexGuard<'static, ()>)> {
    common::replies::external(&[
        &["CONFIG", "SET", "slowlog-log-slower-than", "10000"],
        &["CONFIG", "SET", "slowlog-max-len", "128"],
        &["CONFIG", "SET", "latency-monitor-threshold", "0"],
        &["SLOWLOG", "RESET"],
        &["LATENCY", "RESET"],
    ])
    .await
}

common::replies::on_both!(
    slowlog_records_each_command_after_it_ran,
    slowlog_limits_counts_and_trims,
    exec_and_scripts_log_the_commands_they_run,
    a_blocked_command_is_logged_when_served,
    secrets_are_redacted,
    latency_monitor_records_slow_commands,
    an_expiring_large_set_is_an_expire_cycle_event,
    latency_histogram_counts_calls,
);

/// Each tenant (ACL user) has its own slow log and sees only it; the default user sees
/// every tenant's entries, newest first, and its RESET clears them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tenant_sees_its_own_slow_log() {
    let s = TestServer::start(augur_server::ServerConfig {
        users: vec![
            "app1 on >pw1 ~* &* +@all".into(),
            "app2 on >pw2 ~* &* +@all".into(),
        ],
        slowlog_log_slower_than: 0,
        slowlog_max_len: 3,
        ..Default::default()
    })
    .await;
    let mut admin = s.con().await;
    let mut a = s.con_as("app1", "pw1").await;
    let mut b = s.con_as("app2", "pw2").await;
    run(&mut admin, &[&["SLOWLOG", "RESET"]]).await;
    run(&mut a, &[&["SET", "app1-secret", "v1"]]).await;
    run(&mut b, &[&["SET", "app2-secret", "v2"]]).await;
    run(&mut a, &[&["GET", "app1-secret"]]).await;
    let mine = args_of(&slowlog(&mut a, None).await);
    assert_eq!(mine, ["GET app1-secret", "SET app1-secret v1"]);
    assert!(!mine.iter().any(|m| m.contains("app2")));
    let theirs = args_of(&slowlog(&mut b, None).await);
    assert_eq!(theirs, ["SET app2-secret v2"]);
    // The default user: everything, merged by id.
    let all = args_of(&slowlog(&mut admin, None).await);
    assert_eq!(
        all,
        [
            "SLOWLOG GET",
            "SLOWLOG GET",
            "GET app1-secret",
            "SET app2-secret v2",
            "SET app1-secret v1",
            "SLOWLOG RESET"
        ]
    );
    // slowlog-max-len (3) bounds each tenant's log.
    run(&mut a, &[&["GET", "x"], &["GET", "y"]]).await;
    assert_eq!(q::<i64>(&mut a, &["SLOWLOG", "LEN"]).await.unwrap(), 3);
    assert_eq!(q::<i64>(&mut b, &["SLOWLOG", "LEN"]).await.unwrap(), 2);
    // A tenant's RESET clears its own log only; the default user's clears all.
    run(&mut b, &[&["SLOWLOG", "RESET"]]).await;
    assert_eq!(q::<i64>(&mut b, &["SLOWLOG", "LEN"]).await.unwrap(), 1);
    assert_eq!(q::<i64>(&mut a, &["SLOWLOG", "LEN"]).await.unwrap(), 3);
    run(&mut admin, &[&["SLOWLOG", "RESET"]]).await;
    assert_eq!(q::<i64>(&mut a, &["SLOWLOG", "LEN"]).await.unwrap(), 0);
    s.stop().await;
}
