//! End-to-end tests of ACL permissions (Redis 7.0's acl.c) over real sockets with the
//! `redis` crate: command, category, subcommand and first-arg rules; key patterns with
//! read/write permissions; channels; selectors; ACL LOG, DRYRUN, GETUSER, LIST, CAT,
//! GENPASS; permissions inside MULTI/EXEC and scripts; connections closed when their
//! user is deleted or loses a channel; and Augur's `tenant:NAME` rule. Expected texts are
//! Redis 7.0.15's, as Debian's redis-server answers them.

mod common;

use augur_server::ServerConfig;
use common::{err, q, TestServer};
use redis::Value;
use std::collections::HashMap;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn ok(con: &mut redis::aio::MultiplexedConnection, args: &[&str]) {
    let v: Value = q(con, args)
        .await
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(matches!(v, Value::Okay), "{args:?} answered {v:?}");
}

async fn getuser(
    con: &mut redis::aio::MultiplexedConnection,
    name: &str,
) -> HashMap<String, Value> {
    q(con, &["ACL", "GETUSER", name]).await.unwrap()
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        other => format!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_key_and_channel_permissions() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut d = s.con().await;
    assert_eq!(
        q::<String>(&mut d, &["ACL", "WHOAMI"]).await.unwrap(),
        "default"
    );
    // A new user is off and may do nothing.
    ok(&mut d, &["ACL", "SETUSER", "newuser", ">passwd1"]).await;
    let mut fresh = s.con().await;
    assert_eq!(
        err(&mut fresh, &["AUTH", "newuser", "passwd1"]).await,
        "WRONGPASS invalid username-password pair or user is disabled."
    );
    ok(&mut d, &["ACL", "SETUSER", "newuser", "on", "+acl"]).await;
    let mut u = s.con_as("newuser", "passwd1").await;
    assert_eq!(
        q::<String>(&mut u, &["ACL", "WHOAMI"]).await.unwrap(),
        "newuser"
    );
    assert_eq!(
        err(&mut u, &["SET", "foo", "bar"]).await,
        "NOPERM this user has no permissions to run the 'set' command"
    );
    ok(&mut d, &["ACL", "SETUSER", "newuser", "+set"]).await;
    assert_eq!(
        err(&mut u, &["SET", "foo", "bar"]).await,
        "NOPERM this user has no permissions to access one of the keys used as arguments"
    );
    ok(
        &mut d,
        &[
            "ACL",
            "SETUSER",
            "newuser",
            "allcommands",
            "~foo:*",
            "~bar:*",
        ],
    )
    .await;
    ok(&mut u, &["SET", "foo:1", "a"]).await;
    ok(&mut u, &["SET", "bar:2", "b"]).await;
    assert!(err(&mut u, &["SET", "zap:3", "c"]).await.contains("keys"));
    assert!(err(&mut u, &["MSET", "foo:1", "a", "zap", "b"])
        .await
        .contains("keys"));
    // Channels: none by default (acl-pubsub-default resetchannels), then a subset.
    assert_eq!(
        err(&mut u, &["PUBLISH", "foo", "bar"]).await,
        "NOPERM this user has no permissions to access one of the channels used as arguments"
    );
    ok(&mut d, &["ACL", "SETUSER", "newuser", "&foo:1", "&bar:*"]).await;
    assert_eq!(
        q::<i64>(&mut u, &["PUBLISH", "foo:1", "x"]).await.unwrap(),
        0
    );
    assert_eq!(
        q::<i64>(&mut u, &["PUBLISH", "bar:9", "x"]).await.unwrap(),
        0
    );
    assert!(err(&mut u, &["PUBLISH", "zap", "x"])
        .await
        .contains("channels"));
    // Single commands, categories, subcommands, first args.
    ok(&mut d, &["ACL", "SETUSER", "newuser", "-ping"]).await;
    assert_eq!(
        err(&mut u, &["PING"]).await,
        "NOPERM this user has no permissions to run the 'ping' command"
    );
    ok(
        &mut d,
        &["ACL", "SETUSER", "newuser", "allkeys", "+@all", "-@string"],
    )
    .await;
    assert_eq!(q::<i64>(&mut u, &["SADD", "myset", "a"]).await.unwrap(), 1);
    assert!(err(&mut u, &["SET", "foo", "bar"]).await.contains("'set'"));
    ok(
        &mut d,
        &[
            "ACL",
            "SETUSER",
            "newuser",
            "+@all",
            "-client",
            "+client|id",
        ],
    )
    .await;
    let _: i64 = q(&mut u, &["CLIENT", "ID"]).await.unwrap();
    assert_eq!(
        err(&mut u, &["CLIENT", "LIST"]).await,
        "NOPERM this user has no permissions to run the 'client|list' command"
    );
    ok(
        &mut d,
        &["ACL", "SETUSER", "newuser", "-@all", "+acl", "+select|0"],
    )
    .await;
    ok(&mut u, &["SELECT", "0"]).await;
    assert!(err(&mut u, &["SELECT", "1"]).await.contains("'select'"));
    let cmds = text(&getuser(&mut d, "newuser").await["commands"]);
    assert_eq!(cmds, "-@all +acl +select|0");
    // AUTH and HELLO always run.
    let _: Value = q(&mut u, &["HELLO", "2"]).await.unwrap();
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_permissions_and_selectors() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut d = s.con().await;
    ok(
        &mut d,
        &[
            "ACL",
            "SETUSER",
            "rw",
            "on",
            "nopass",
            "+@all",
            "%R~read*",
            "%W~write*",
            "%RW~rw*",
            "(",
            "+set",
            "~sel*",
            ")",
        ],
    )
    .await;
    let mut u = s.con_as("rw", "x").await;
    ok(&mut u, &["SET", "writestr", "v"]).await;
    assert!(err(&mut u, &["GET", "writestr"]).await.contains("keys"));
    assert!(err(&mut u, &["SET", "readstr", "v"]).await.contains("keys"));
    assert_eq!(
        q::<Option<String>>(&mut u, &["GET", "readstr"])
            .await
            .unwrap(),
        None
    );
    // SET ... GET reads too.
    assert!(err(&mut u, &["SET", "writestr", "v", "GET"])
        .await
        .contains("keys"));
    let _: Value = q(&mut u, &["SET", "rwstr", "v", "GET"]).await.unwrap();
    let _: Value = q(&mut u, &["BITFIELD", "readstr", "GET", "u4", "0"])
        .await
        .unwrap();
    assert!(err(&mut u, &["BITFIELD", "readstr", "SET", "u4", "0", "1"])
        .await
        .contains("keys"));
    // The selector allows SET on sel*, but not GET.
    ok(&mut u, &["SET", "sel1", "v"]).await;
    assert!(err(&mut u, &["GET", "sel1"]).await.contains("keys"));
    let user = getuser(&mut d, "rw").await;
    assert_eq!(text(&user["keys"]), "%R~read* %W~write* ~rw*");
    assert_eq!(text(&user["channels"]), "");
    assert_eq!(text(&user["commands"]), "+@all");
    let Value::Array(sels) = &user["selectors"] else {
        panic!("{user:?}")
    };
    assert_eq!(sels.len(), 1);
    let list: Vec<String> = q(&mut d, &["ACL", "LIST"]).await.unwrap();
    let line = list.iter().find(|l| l.starts_with("user rw ")).unwrap();
    assert_eq!(
        line,
        "user rw on nopass %R~read* %W~write* ~rw* resetchannels +@all (~sel* resetchannels -@all +set)"
    );
    // ACL LIST output loads back unchanged.
    let rules: Vec<&str> = line.split(' ').skip(2).collect();
    let mut args = vec!["ACL", "SETUSER", "rw2"];
    args.extend(rules);
    ok(&mut d, &args).await;
    let list: Vec<String> = q(&mut d, &["ACL", "LIST"]).await.unwrap();
    assert!(
        list.contains(&line.replace("user rw ", "user rw2 ")),
        "{list:?}"
    );
    // DRYRUN.
    assert_eq!(
        q::<String>(&mut d, &["ACL", "DRYRUN", "rw", "GET", "writestr"])
            .await
            .unwrap(),
        "This user has no permissions to access the 'writestr' key"
    );
    assert_eq!(
        q::<String>(&mut d, &["ACL", "DRYRUN", "rw", "GET", "readstr"])
            .await
            .unwrap(),
        "OK"
    );
    assert_eq!(
        err(&mut d, &["ACL", "DRYRUN", "nouser", "GET", "k"]).await,
        "ERR User 'nouser' not found"
    );
    assert_eq!(
        err(&mut d, &["ACL", "DRYRUN", "rw", "nosuch"]).await,
        "ERR Command 'nosuch' not found"
    );
    assert_eq!(
        err(&mut d, &["ACL", "DRYRUN", "rw", "GET"]).await,
        "ERR wrong number of arguments for 'get' command"
    );
    // Rule errors, Redis's texts.
    assert_eq!(
        err(&mut d, &["ACL", "SETUSER", "x", "~*", "~foo"]).await,
        "ERR Error in ACL SETUSER modifier '~foo': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
    );
    assert_eq!(
        err(&mut d, &["ACL", "SETUSER", "x", "+nosuch"]).await,
        "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"
    );
    assert_eq!(
        err(&mut d, &["ACL", "SETUSER", "x", "(~a"]).await,
        "ERR Unmatched parenthesis in acl selector starting at '(~a'."
    );
    assert_eq!(
        err(&mut d, &["ACL", "SETUSER", "a a"]).await,
        "ERR Usernames can't contain spaces or null characters"
    );
    assert!(q::<Value>(&mut d, &["ACL", "GETUSER", "x"]).await.unwrap() == Value::Nil);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_log_multi_exec_and_scripts() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut d = s.con().await;
    ok(
        &mut d,
        &[
            "ACL",
            "SETUSER",
            "pu",
            "on",
            ">pw",
            "~k*",
            "&ch",
            "+@all",
            "-flushall",
        ],
    )
    .await;
    let mut u = s.con_as("pu", "pw").await;
    ok(&mut d, &["ACL", "LOG", "RESET"]).await;
    assert!(err(&mut u, &["FLUSHALL"]).await.contains("'flushall'"));
    assert!(err(&mut u, &["GET", "zz"]).await.contains("keys"));
    assert_eq!(
        err(&mut u, &["EVAL", "return redis.pcall('flushall')", "0"]).await,
        "ERR The user executing the script can't run this command or subcommand"
    );
    let e = err(&mut u, &["EVAL", "return redis.call('get','zz')", "0"]).await;
    assert!(
        e.starts_with("ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"),
        "{e}"
    );
    let e = err(
        &mut u,
        &["EVAL", "return redis.call('publish','x','y')", "0"],
    )
    .await;
    assert!(e.contains("can't publish to the channel"), "{e}");
    assert_eq!(
        q::<Vec<Option<i64>>>(
            &mut u,
            &["EVAL", "return {redis.acl_check_cmd('flushall') and 1 or 0, redis.acl_check_cmd('get','k1') and 1 or 0}", "0"]
        )
        .await
        .unwrap(),
        vec![Some(0), Some(1)]
    );
    let _ = err(&mut fresh_con(&s).await, &["AUTH", "pu", "bad"]).await;
    let log: Vec<HashMap<String, Value>> = q(&mut d, &["ACL", "LOG"]).await.unwrap();
    let summary: Vec<(String, String, String, String)> = log
        .iter()
        .map(|e| {
            (
                text(&e["reason"]),
                text(&e["context"]),
                text(&e["object"]),
                text(&e["username"]),
            )
        })
        .collect();
    let want = [
        ("auth", "toplevel", "AUTH", "pu"),
        ("channel", "lua", "x", "pu"),
        ("key", "lua", "zz", "pu"),
        ("command", "lua", "flushall", "pu"),
        ("key", "toplevel", "zz", "pu"),
        ("command", "toplevel", "flushall", "pu"),
    ];
    let want: Vec<(String, String, String, String)> = want
        .iter()
        .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), d.to_string()))
        .collect();
    assert_eq!(summary, want);
    assert!(text(&log[0]["client-info"]).starts_with("id="));
    assert!(matches!(log[0]["count"], Value::Int(1)));
    // Repeats within 60 s are one entry with a count.
    let _ = err(&mut u, &["GET", "zz"]).await;
    let log: Vec<HashMap<String, Value>> = q(&mut d, &["ACL", "LOG", "1"]).await.unwrap();
    assert_eq!(log.len(), 1);
    assert!(matches!(log[0]["count"], Value::Int(2)), "{log:?}");
    assert_eq!(
        err(&mut d, &["ACL", "LOG", "x"]).await,
        "ERR value is not an integer or out of range"
    );

    // MULTI: refused while queueing -> EXECABORT; rules changed before EXEC -> per
    // command NOPERM inside EXEC's reply.
    let mut raw = s.raw().await;
    let script = b"*3\r\n$4\r\nAUTH\r\n$2\r\npu\r\n$2\r\npw\r\n*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$1\r\nv\r\n*3\r\n$7\r\nPUBLISH\r\n$2\r\nch\r\n$1\r\nx\r\n";
    raw.write_all(script).await.unwrap();
    let mut got = read_for(&mut raw, 31).await;
    assert_eq!(got, "+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n");
    ok(
        &mut d,
        &["ACL", "SETUSER", "pu", "resetkeys", "resetchannels"],
    )
    .await;
    raw.write_all(b"*1\r\n$4\r\nEXEC\r\n").await.unwrap();
    got = read_for(&mut raw, 400).await;
    assert_eq!(
        got,
        "*2\r\n-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to touch the specified keys\r\n-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to access one of the channels used as arguments\r\n"
    );
    raw.write_all(b"*1\r\n$5\r\nMULTI\r\n*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n*1\r\n$4\r\nEXEC\r\n")
        .await
        .unwrap();
    got = read_for(&mut raw, 200).await;
    assert_eq!(
        got,
        "+OK\r\n-NOPERM this user has no permissions to access one of the keys used as arguments\r\n-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    s.stop().await;
}

async fn fresh_con(s: &TestServer) -> redis::aio::MultiplexedConnection {
    s.con().await
}

/// Reads until `n` bytes arrived or 2 s passed.
async fn read_for(raw: &mut tokio::net::TcpStream, n: usize) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while got.len() < n {
        match tokio::time::timeout_at(deadline, raw.read(&mut buf)).await {
            Ok(Ok(k)) if k > 0 => got.extend_from_slice(&buf[..k]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_users_and_revoked_channels_close_connections() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut d = s.con().await;
    ok(
        &mut d,
        &[
            "ACL", "SETUSER", "psuser", "on", ">pspass", "+@all", "&foo", "&bar*",
        ],
    )
    .await;
    // A subscriber loses its channel: closed. Literal permissions kept: pardoned.
    let mut sub1 = s.raw().await;
    sub1.write_all(b"*3\r\n$4\r\nAUTH\r\n$6\r\npsuser\r\n$6\r\npspass\r\n*2\r\n$9\r\nSUBSCRIBE\r\n$3\r\nfoo\r\n")
        .await
        .unwrap();
    assert!(read_for(&mut sub1, 38).await.ends_with("foo\r\n:1\r\n"));
    let mut sub2 = s.raw().await;
    sub2.write_all(b"*3\r\n$4\r\nAUTH\r\n$6\r\npsuser\r\n$6\r\npspass\r\n*2\r\n$10\r\nPSUBSCRIBE\r\n$4\r\nbar*\r\n")
        .await
        .unwrap();
    assert!(read_for(&mut sub2, 40).await.ends_with("bar*\r\n:1\r\n"));
    ok(
        &mut d,
        &["ACL", "SETUSER", "psuser", "resetchannels", "&bar*"],
    )
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(2), sub1.read(&mut buf))
        .await
        .expect("closed in time")
        .unwrap_or(0);
    assert_eq!(n, 0, "the subscriber of a revoked channel must be closed");
    sub2.write_all(b"*1\r\n$4\r\nPING\r\n").await.unwrap();
    assert_eq!(
        read_for(&mut sub2, 20).await,
        "*2\r\n$4\r\npong\r\n$0\r\n\r\n"
    );

    // Deleting a user closes its connections; the deleting connection gets its reply.
    ok(
        &mut d,
        &["ACL", "SETUSER", "using", "on", ">passwd", "+acl"],
    )
    .await;
    let mut u = s.con_as("using", "passwd").await;
    let mut other = s.con_as("using", "passwd").await;
    assert_eq!(
        q::<i64>(&mut u, &["ACL", "DELUSER", "using"])
            .await
            .unwrap(),
        1
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(q::<String>(&mut u, &["PING"]).await.is_err());
    assert!(q::<String>(&mut other, &["PING"]).await.is_err());
    assert_eq!(
        err(&mut d, &["ACL", "DELUSER", "default"]).await,
        "ERR The 'default' user cannot be removed"
    );
    // Turning a user off keeps its authenticated connections (Redis's `off`).
    ok(&mut d, &["ACL", "SETUSER", "offu", "on", ">p", "+ping"]).await;
    let mut o = s.con_as("offu", "p").await;
    ok(&mut d, &["ACL", "SETUSER", "offu", "off"]).await;
    assert_eq!(q::<String>(&mut o, &["PING"]).await.unwrap(), "PONG");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_user_requirepass_and_introspection() {
    let cfg = ServerConfig {
        users: vec!["default on nopass ~* &* +@all -flushdb".into()],
        ..ServerConfig::default()
    };
    let s = TestServer::start(cfg).await;
    let mut d = s.con().await;
    assert!(err(&mut d, &["FLUSHDB"]).await.contains("'flushdb'"));
    let list: Vec<String> = q(&mut d, &["ACL", "LIST"]).await.unwrap();
    // As Redis 7.0.15 shows a config-file default user (reset first).
    assert_eq!(
        list,
        ["user default on nopass sanitize-payload ~* &* +@all -flushdb"]
    );
    ok(&mut d, &["ACL", "SETUSER", "default", "+flushdb"]).await;
    ok(&mut d, &["FLUSHDB"]).await;
    // AUTH <password> without a password configured.
    assert_eq!(
        err(&mut d, &["AUTH", "foo"]).await,
        "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
    );
    // Default user off: new connections are not authenticated.
    ok(
        &mut d,
        &["ACL", "SETUSER", "other", "on", ">x", "+@all", "~*"],
    )
    .await;
    ok(&mut d, &["ACL", "SETUSER", "default", "off"]).await;
    let mut fresh = s.raw().await;
    fresh.write_all(b"*1\r\n$4\r\nPING\r\n").await.unwrap();
    assert_eq!(
        read_for(&mut fresh, 30).await,
        "-NOAUTH Authentication required.\r\n"
    );
    let mut o = s.con_as("other", "x").await;
    ok(&mut o, &["ACL", "SETUSER", "default", "on"]).await;
    // requirepass is the default user's password.
    ok(&mut o, &["CONFIG", "SET", "requirepass", "foobar"]).await;
    let mut fresh = s.con().await;
    assert!(err(&mut fresh, &["SET", "a", "b"])
        .await
        .starts_with("NOAUTH"));
    assert!(err(&mut fresh, &["AUTH", "wrong"])
        .await
        .starts_with("WRONGPASS"));
    ok(&mut fresh, &["AUTH", "foobar"]).await;
    ok(&mut o, &["CONFIG", "SET", "requirepass", ""]).await;
    // CAT, GENPASS, HELP.
    let cats: Vec<String> = q(&mut d, &["ACL", "CAT"]).await.unwrap();
    assert_eq!(cats.len(), 21);
    assert_eq!(cats[0], "keyspace");
    let tx: Vec<String> = q(&mut d, &["ACL", "CAT", "transaction"]).await.unwrap();
    assert!(tx.contains(&"multi".to_string()));
    let ks: Vec<String> = q(&mut d, &["ACL", "CAT", "keyspace"]).await.unwrap();
    assert!(!ks.contains(&"set".to_string()) && ks.contains(&"del".to_string()));
    assert_eq!(
        err(&mut d, &["ACL", "CAT", "NON_EXISTS"]).await,
        "ERR Unknown category 'NON_EXISTS'"
    );
    assert_eq!(
        q::<String>(&mut d, &["ACL", "GENPASS"])
            .await
            .unwrap()
            .len(),
        64
    );
    assert_eq!(
        q::<String>(&mut d, &["ACL", "GENPASS", "5"])
            .await
            .unwrap()
            .len(),
        2
    );
    assert!(err(&mut d, &["ACL", "GENPASS", "5000"])
        .await
        .contains("ACL GENPASS argument"));
    assert_eq!(
        err(&mut d, &["ACL", "HELP", "xxx"]).await,
        "ERR wrong number of arguments for 'acl|help' command"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_rule_shares_a_keyspace() {
    let cfg = ServerConfig {
        users: vec![
            "app on >rw ~* &* +@all -@admin".into(),
            "app-ro on >ro %R~* &* +@read +@connection tenant:app".into(),
            "other on >o ~* &* +@all -@admin".into(),
        ],
        ..ServerConfig::default()
    };
    let s = TestServer::start(cfg).await;
    let mut rw = s.con_as("app", "rw").await;
    let mut ro = s.con_as("app-ro", "ro").await;
    let mut other = s.con_as("other", "o").await;
    ok(&mut rw, &["SET", "page:1", "<html>"]).await;
    // The read-only user reads the application's keys and may not write them.
    assert_eq!(
        q::<String>(&mut ro, &["GET", "page:1"]).await.unwrap(),
        "<html>"
    );
    assert!(err(&mut ro, &["SET", "page:1", "x"])
        .await
        .starts_with("NOPERM"));
    assert_eq!(q::<i64>(&mut ro, &["DBSIZE"]).await.unwrap(), 1);
    // Another tenant still sees nothing of it.
    assert_eq!(
        q::<Option<String>>(&mut other, &["GET", "page:1"])
            .await
            .unwrap(),
        None
    );
    let mut d = s.con().await;
    let user = getuser(&mut d, "app-ro").await;
    assert_eq!(text(&user["tenant"]), "app");
    assert!(err(&mut d, &["ACL", "DELUSER", "app"])
        .await
        .contains("tenant:app"));
    // Unbinding closes the user's other connections rather than switch their data.
    ok(&mut d, &["ACL", "SETUSER", "app-ro", "tenant:"]).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(q::<String>(&mut ro, &["PING"]).await.is_err());
    let mut ro = s.con_as("app-ro", "ro").await;
    assert_eq!(q::<i64>(&mut ro, &["DBSIZE"]).await.unwrap(), 0);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aclfile_load_and_save() {
    let dir = std::env::temp_dir().join(format!("augur-acl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("users.acl");
    std::fs::write(
        &file,
        "user alice on allcommands allkeys &* >alice\nuser bob on -@all +@set +acl ~set* &* >bob\n",
    )
    .unwrap();
    let cfg = ServerConfig {
        aclfile: file.to_string_lossy().into_owned(),
        ..ServerConfig::default()
    };
    let s = TestServer::start(cfg).await;
    let mut alice = s.con_as("alice", "alice").await;
    ok(&mut alice, &["SET", "key", "value"]).await;
    let list: Vec<String> = q(&mut alice, &["ACL", "LIST"]).await.unwrap();
    assert_eq!(list.len(), 3, "{list:?}");
    assert!(list[2].starts_with("user default on nopass ~* &* +@all"));
    // A bad file changes nothing and says why, in Redis's words.
    std::fs::write(
        &file,
        "user alice on allcommands allkeys &* >alice\nuser alice on nopass ~* -@all\n",
    )
    .unwrap();
    let e = err(&mut alice, &["ACL", "LOAD"]).await;
    assert!(
        e.contains("Duplicate user 'alice' found on line 2") && e.contains("no change"),
        "{e}"
    );
    assert_eq!(
        text(&getuser(&mut alice, "alice").await["commands"]),
        "+@all"
    );
    // SAVE writes ACL LIST; LOAD replaces every user and closes every connection.
    ok(
        &mut alice,
        &["ACL", "SETUSER", "eve", "+get", "allkeys", ">eve", "on"],
    )
    .await;
    ok(&mut alice, &["ACL", "SAVE"]).await;
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(
        saved.lines().any(|l| l.starts_with("user eve on #")),
        "{saved}"
    );
    ok(&mut alice, &["ACL", "LOAD"]).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(q::<String>(&mut alice, &["PING"]).await.is_err());
    // alice kept her keyspace across the reload; eve is a tenant of her own.
    let mut alice = s.con_as("alice", "alice").await;
    assert_eq!(
        q::<String>(&mut alice, &["GET", "key"]).await.unwrap(),
        "value"
    );
    let mut eve = s.con_as("eve", "eve").await;
    assert!(err(&mut eve, &["SET", "key", "value"])
        .await
        .contains("'set'"));
    s.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}
