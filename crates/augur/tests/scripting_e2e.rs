//! End-to-end tests of Lua scripting (EVAL, EVALSHA, EVAL_RO, SCRIPT; issue 11 item 4)
//! over real sockets, with the `redis` crate (whose `Script` sends EVALSHA and falls
//! back to EVAL on NOSCRIPT) and raw RESP where the exact bytes matter.

mod common;

use augur_server::ServerConfig;
use common::{err, q, TestServer};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn sha1(s: &str) -> String {
    augur_server::scripting::sha1hex(s.as_bytes())
}

/// Sends `req` (inline commands) and expects exactly `want` back.
async fn exchange(raw: &mut TcpStream, req: &[u8], want: &[u8]) {
    raw.write_all(req).await.unwrap();
    let mut got = vec![0u8; want.len()];
    tokio::time::timeout(Duration::from_secs(5), raw.read_exact(&mut got))
        .await
        .expect("reply in time")
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(want),
        "reply to {}",
        String::from_utf8_lossy(req)
    );
}

/// Encodes one command as RESP.
fn cmd(args: &[&str]) -> Vec<u8> {
    let mut v = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        v.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    v
}

#[tokio::test]
async fn script_type_runs_evalsha_then_eval_and_caches_the_script() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut con = s.con().await;
    let script = redis::Script::new("return redis.call('incrby', KEYS[1], ARGV[1])");
    // First call: EVALSHA answers NOSCRIPT, the crate retries with EVAL.
    let n: i64 = script
        .key("counter")
        .arg(5)
        .invoke_async(&mut con)
        .await
        .unwrap();
    assert_eq!(n, 5);
    let exists: Vec<i64> = q(&mut con, &["SCRIPT", "EXISTS", script.get_hash(), "0000"])
        .await
        .unwrap();
    assert_eq!(exists, vec![1, 0]);
    // Second call: EVALSHA hits the cache.
    let n: i64 = script
        .key("counter")
        .arg(2)
        .invoke_async(&mut con)
        .await
        .unwrap();
    assert_eq!(n, 7);
    // SCRIPT LOAD / EVALSHA in upper case / FLUSH.
    let sha: String = q(&mut con, &["SCRIPT", "LOAD", "return 'loaded'"])
        .await
        .unwrap();
    assert_eq!(sha, sha1("return 'loaded'"));
    let v: String = q(&mut con, &["EVALSHA", &sha.to_uppercase(), "0"])
        .await
        .unwrap();
    assert_eq!(v, "loaded");
    let info: String = q(&mut con, &["INFO", "memory"]).await.unwrap();
    assert!(info.contains("number_of_cached_scripts:2"), "{info}");
    let ok: String = q(&mut con, &["SCRIPT", "FLUSH", "ASYNC"]).await.unwrap();
    assert_eq!(ok, "OK");
    assert_eq!(
        err(&mut con, &["EVALSHA", &sha, "0"]).await,
        "NOSCRIPT No matching script. Please use EVAL."
    );
    // The crate recovers by itself after a flush.
    let n: i64 = script
        .key("counter")
        .arg(1)
        .invoke_async(&mut con)
        .await
        .unwrap();
    assert_eq!(n, 8);
    s.stop().await;
}

#[tokio::test]
async fn lua_to_resp_conversions_follow_redis() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut raw = s.raw().await;
    let cases: &[(&str, &str)] = &[
        ("return 100.5", ":100\r\n"),
        ("return -3.9", ":-3\r\n"),
        ("return 'hello'", "$5\r\nhello\r\n"),
        ("return true", ":1\r\n"),
        ("return false", "$-1\r\n"),
        ("return nil", "$-1\r\n"),
        ("return {ok='fine'}", "+fine\r\n"),
        ("return {err='ERR this is an error'}", "-ERR this is an error\r\n"),
        ("return {err='My error'}", "-My error\r\n"),
        ("return redis.error_reply('MY_CODE custom')", "-MY_CODE custom\r\n"),
        ("return redis.error_reply('')", "-ERR \r\n"),
        ("return redis.status_reply('FINE')", "+FINE\r\n"),
        ("return {1,2,3,'ciao',{1,2}}", "*5\r\n:1\r\n:2\r\n:3\r\n$4\r\nciao\r\n*2\r\n:1\r\n:2\r\n"),
        // Arrays stop at the first nil.
        ("return {1,2,nil,4}", "*2\r\n:1\r\n:2\r\n"),
        ("return {double=3.14}", "$18\r\n3.1400000000000001\r\n"),
        ("return _G", "*0\r\n"),
        ("local a = {}; setmetatable(a,{__index=function() foo() end}) return a", "*0\r\n"),
        // Redis replies converted to Lua types and back.
        ("redis.call('set','k','v'); local r = redis.call('get','k'); return {type(r), r}", "*2\r\n$6\r\nstring\r\n$1\r\nv\r\n"),
        ("local r = redis.call('get','nokey'); return {type(r), r == false}", "*2\r\n$7\r\nboolean\r\n:1\r\n"),
        ("local r = redis.call('set','k','v'); return {type(r), r['ok']}", "*2\r\n$5\r\ntable\r\n$2\r\nOK\r\n"),
        ("local r = redis.call('incr','n'); return {type(r), r}", "*2\r\n$6\r\nnumber\r\n:1\r\n"),
        ("local r = redis.pcall('incr','k'); return {type(r), r['err']}", "*2\r\n$5\r\ntable\r\n$43\r\nERR value is not an integer or out of range\r\n"),
        ("return redis.pcall('incr','k')", "-ERR value is not an integer or out of range\r\n"),
        ("return redis.call('mget','k','nokey')", "*2\r\n$1\r\nv\r\n$-1\r\n"),
        // Numbers become arguments as %.17g.
        ("redis.call('set','f',9007199254740991); return redis.call('get','f')", "$16\r\n9007199254740991\r\n"),
        ("redis.call('set','f',0.1); return redis.call('get','f')", "$19\r\n0.10000000000000001\r\n"),
        ("return redis.sha1hex('')", "$40\r\nda39a3ee5e6b4b0d3255bfef95601890afd80709\r\n"),
        ("return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}", "*2\r\n$6\r\n7.0.15\r\n:458767\r\n"),
        ("return redis.replicate_commands()", ":1\r\n"),
        ("redis.set_repl(redis.REPL_ALL); return 1", ":1\r\n"),
        ("return cjson.encode({1,2,'x',true})", "$14\r\n[1,2,\"x\",true]\r\n"),
        ("return cjson.encode({a='b/c'})", "$12\r\n{\"a\":\"b\\/c\"}\r\n"),
        ("return table.concat(cjson.decode('[0.0, -5e3, -1, 0.3e-3, 1023.2, 0e10]'), ' ')", "$26\r\n0 -5000 -1 0.0003 1023.2 0\r\n"),
        ("local t = cjson.decode('{\"a\":[1,null,\"x\"]}'); return {t.a[1], t.a[2] == cjson.null, t.a[3]}", "*3\r\n:1\r\n:1\r\n$1\r\nx\r\n"),
        ("return {bit.band(0xff, 0x0f), bit.bor(1,2,4), bit.bxor(1,3), bit.lshift(1, 4), bit.tohex(255), bit.tobit(0xffffffff), bit.bnot(0)}", "*7\r\n:15\r\n:7\r\n:2\r\n:16\r\n$8\r\n000000ff\r\n:-1\r\n:-1\r\n"),
        ("return string.format('%d-%s', 5, 'x') .. ('ab'):upper()", "$5\r\n5-xAB\r\n"),
        ("local ok, e = pcall(function() return foo end); return tostring(ok) .. ' ' .. e", "$81\r\nfalse user_script:1: Script attempted to access nonexistent global variable 'foo'\r\n"),
        ("local ok, e = pcall(redis.call, 'incr', 'k'); return e", "$43\r\nERR value is not an integer or out of range\r\n"),
        ("return loadstring('return 1 + 1')()", ":2\r\n"),
    ];
    for (script, want) in cases {
        exchange(&mut raw, &cmd(&["EVAL", script, "0"]), want.as_bytes()).await;
    }
    s.stop().await;
}

#[tokio::test]
async fn resp3_conversions_with_setresp_and_hello_3() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut raw = s.raw().await;
    // A RESP2 client: whatever the script's protocol, it gets RESP2.
    let cases2: &[(&str, &str)] = &[
        ("redis.setresp(3); return true", ":1\r\n"),
        ("redis.setresp(3); return false", ":0\r\n"),
        ("return {map={a=1}}", "*2\r\n$1\r\na\r\n:1\r\n"),
        ("return {set={a=true}}", "*1\r\n$1\r\na\r\n"),
        ("return {big_number='123\\r\\n4'}", "$6\r\n123  4\r\n"),
        (
            "return {verbatim_string={format='txt', string='hi'}}",
            "$2\r\nhi\r\n",
        ),
        // RESP3 replies inside the script: maps, doubles, nulls.
        (
            "redis.setresp(3); local r = redis.call('command','docs','get'); return type(r['map'])",
            "$5\r\ntable\r\n",
        ),
        (
            "redis.setresp(3); local r = redis.call('get','nokey'); return r == nil",
            ":1\r\n",
        ),
        (
            "redis.setresp(2); local r = redis.call('get','nokey'); return r == false",
            ":1\r\n",
        ),
    ];
    for (script, want) in cases2 {
        exchange(&mut raw, &cmd(&["EVAL", script, "0"]), want.as_bytes()).await;
    }
    raw.write_all(&cmd(&["HELLO", "3"])).await.unwrap();
    // Drain HELLO's map (read until the reply settles).
    let mut buf = vec![0u8; 4096];
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _ = raw.read(&mut buf).await.unwrap();
    let cases3: &[(&str, &str)] = &[
        ("redis.setresp(3); return true", "#t\r\n"),
        ("redis.setresp(3); return false", "#f\r\n"),
        ("return true", ":1\r\n"),
        ("return false", "_\r\n"),
        ("return nil", "_\r\n"),
        ("return {double=3.5}", ",3.5\r\n"),
        ("return {map={a=1}}", "%1\r\n$1\r\na\r\n:1\r\n"),
        ("return {set={a=true}}", "~1\r\n$1\r\na\r\n"),
        ("return {big_number='123'}", "(123\r\n"),
        (
            "return {verbatim_string={format='txt', string='hi'}}",
            "=6\r\ntxt:hi\r\n",
        ),
    ];
    for (script, want) in cases3 {
        exchange(&mut raw, &cmd(&["EVAL", script, "0"]), want.as_bytes()).await;
    }
    s.stop().await;
}

#[tokio::test]
async fn errors_use_redis_texts() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut con = s.con().await;
    let at = |script: &str, line: u32| format!("script: {}, on @user_script:{line}.", sha1(script));
    assert_eq!(
        err(
            &mut con,
            &["EVALSHA", "ffd632c7d33e571e9f24556ebed26c3479a87130", "0"]
        )
        .await,
        "NOSCRIPT No matching script. Please use EVAL."
    );
    assert_eq!(
        err(&mut con, &["EVALSHA", "NotValidShaSUM", "0"]).await,
        "NOSCRIPT No matching script. Please use EVAL."
    );
    assert_eq!(
        err(&mut con, &["EVAL", "return 1", "2", "a"]).await,
        "ERR Number of keys can't be greater than number of args"
    );
    assert_eq!(
        err(&mut con, &["EVAL", "return 1", "-12"]).await,
        "ERR Number of keys can't be negative"
    );
    assert_eq!(
        err(&mut con, &["EVAL", "return 1", "x"]).await,
        "ERR value is not an integer or out of range"
    );
    let sc = "return redis.call('multi')";
    assert_eq!(
        err(&mut con, &["EVAL", sc, "0"]).await,
        format!(
            "ERR This Redis command is not allowed from script {}",
            at(sc, 1)
        )
    );
    let sc = "return redis.pcall('eval', 'return 1', 0)";
    assert_eq!(
        err(&mut con, &["EVAL", sc, "0"]).await,
        "ERR This Redis command is not allowed from script"
    );
    let sc = "redis.call('nosuchcommand')";
    assert_eq!(
        err(&mut con, &["EVAL", sc, "0"]).await,
        format!("ERR Unknown Redis command called from script {}", at(sc, 1))
    );
    let sc = "\nredis.call('get','a','b')";
    assert_eq!(
        err(&mut con, &["EVAL", sc, "0"]).await,
        format!(
            "ERR Wrong number of args calling Redis command from script {}",
            at(sc, 2)
        )
    );
    let sc = "return redis.call()";
    assert_eq!(
        err(&mut con, &["EVAL", sc, "0"]).await,
        format!(
            "ERR Please specify at least one argument for this redis lib call {}",
            at(sc, 1)
        )
    );
    let sc = "return redis.call('ping', {})";
    assert_eq!(
        err(&mut con, &["EVAL", sc, "0"]).await,
        format!(
            "ERR Lua redis lib command arguments must be strings or integers {}",
            at(sc, 1)
        )
    );
    let sc = "redis.call('set','s','x'); return redis.call('incr','s')";
    assert_eq!(
        err(&mut con, &["EVAL", sc, "0"]).await,
        format!("ERR value is not an integer or out of range {}", at(sc, 1))
    );
    let sc = "return redis.call('set', KEYS[1], 'y')";
    assert_eq!(
        err(&mut con, &["EVAL_RO", sc, "1", "x"]).await,
        format!(
            "ERR Write commands are not allowed from read-only scripts. {}",
            at(sc, 1)
        )
    );
    let sc = "return a";
    assert_eq!(
        err(&mut con, &["EVAL", sc, "0"]).await,
        format!(
            "ERR user_script:1: Script attempted to access nonexistent global variable 'a' {}",
            at(sc, 1)
        )
    );
    for sc in [
        "a = 10",
        "redis = function() return 1 end",
        "_G = {}",
        "redis.call = function() return 1 end",
        "cjson.encode = function() end",
        "bit.lshift = nil",
        "string.rep = nil",
        "local g = getmetatable(_G); g.__index = {}",
        "getmetatable('').__index.rep = nil",
        "rawset(_G, 'x', 1)",
        "setmetatable(_G, {})",
    ] {
        let e = err(&mut con, &["EVAL", sc, "0"]).await;
        assert!(e.starts_with("ERR "), "{sc}: {e}");
        assert!(
            e.contains("Attempt to modify a readonly table"),
            "{sc}: {e}"
        );
        assert!(e.ends_with(&at(sc, 1)), "{sc}: {e}");
    }
    for name in [
        "loadfile", "dofile", "print", "os", "io", "require", "debug",
    ] {
        let sc = format!("{name}('x')");
        let e = err(&mut con, &["EVAL", &sc, "0"]).await;
        assert!(
            e.contains(&format!(
                "Script attempted to access nonexistent global variable '{name}'"
            )),
            "{e}"
        );
    }
    assert!(err(
        &mut con,
        &[
            "EVAL",
            "return loadstring(string.dump(function() return 1 end))()",
            "0"
        ]
    )
    .await
    .contains("attempt to call a nil value"));
    let e = err(&mut con, &["EVAL", "return 'x' +", "0"]).await;
    assert!(
        e.starts_with("ERR Error compiling script (new function): user_script:1: "),
        "{e}"
    );
    assert_eq!(
        err(
            &mut con,
            &[
                "EVAL",
                "#!lua flags=no-writes\nredis.call('set','x',1)",
                "0"
            ]
        )
        .await,
        format!(
            "ERR Write commands are not allowed from read-only scripts. {}",
            at("#!lua flags=no-writes\nredis.call('set','x',1)", 2)
        )
    );
    assert_eq!(
        err(&mut con, &["EVAL_RO", "#!lua\nreturn 1", "0"]).await,
        "ERR Can not execute a script with write flag using *_ro command."
    );
    assert!(err(&mut con, &["EVAL", "#!not-lua\nreturn 1", "0"])
        .await
        .contains("Unexpected engine in script shebang"));
    assert!(err(&mut con, &["EVAL", "return redis.sha1hex()", "0"])
        .await
        .starts_with("ERR wrong number of arguments script:"));
    assert!(err(&mut con, &["EVAL", "return redis.setresp(4)", "0"])
        .await
        .starts_with("ERR RESP version must be 2 or 3."));
    assert!(err(&mut con, &["EVAL", "redis.set_repl(12345)", "0"])
        .await
        .starts_with("ERR Invalid replication flags."));
    assert!(err(&mut con, &["EVAL", "return cjson.decode('{')", "0"])
        .await
        .starts_with(
            "ERR user_script:1: Expected object key string but found T_END at character 2"
        ));
    assert!(
        err(&mut con, &["EVAL", "return cjson.encode({[true]=1})", "0"])
            .await
            .starts_with(
                "ERR user_script:1: Cannot serialise boolean: table key must be a number or string"
            )
    );
    // A script with an error keeps its earlier writes (no rollback, as in Redis).
    let sc = "redis.call('set','kept','1'); redis.call('nosuchcommand')";
    let _ = err(&mut con, &["EVAL", sc, "0"]).await;
    let kept: String = q(&mut con, &["GET", "kept"]).await.unwrap();
    assert_eq!(kept, "1");
    // A reply nested without end stops with an error instead of overflowing anything.
    let mut raw = s.raw().await;
    raw.write_all(&cmd(&[
        "EVAL",
        "local a = {}; local b = {a}; a[1] = b; return a",
        "0",
    ]))
    .await
    .unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    while !got.ends_with(b"-ERR reached lua stack limit\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(5), raw.read(&mut buf))
            .await
            .expect("the reply ends")
            .unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    assert!(got.starts_with(b"*1\r\n*1\r\n"));
    exchange(&mut raw, b"PING\r\n", b"+PONG\r\n").await;
    s.stop().await;
}

#[tokio::test]
async fn oom_refuses_the_first_write_only() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut con = s.con().await;
    let _: () = q(&mut con, &["SET", "x", "123"]).await.unwrap();
    let _: () = q(&mut con, &["CONFIG", "SET", "maxmemory", "1"])
        .await
        .unwrap();
    let sc = "redis.call('set','x',1)";
    assert_eq!(
        err(&mut con, &["EVAL", sc, "1", "x"]).await,
        format!(
            "OOM command not allowed when used memory > 'maxmemory'. script: {}, on @user_script:1.",
            sha1(sc)
        )
    );
    let v: String = q(
        &mut con,
        &["EVAL", "return redis.call('get','x')", "1", "x"],
    )
    .await
    .unwrap();
    assert_eq!(v, "123");
    // allow-oom lets the script start, but Augur's store enforces maxmemory on every
    // write (Redis checks it only before commands), so the SET itself is refused.
    let sc = "#!lua flags=allow-oom\nreturn redis.pcall('set','x',1)['err']";
    let v: String = q(&mut con, &["EVAL", sc, "1", "x"]).await.unwrap();
    assert_eq!(v, "OOM command not allowed when used memory > 'maxmemory'.");
    let v: i64 = q(&mut con, &["EVAL", "#!lua flags=allow-oom\nreturn 1", "0"])
        .await
        .unwrap();
    assert_eq!(v, 1);
    assert!(err(&mut con, &["EVAL", "#!lua\nreturn 1", "0"])
        .await
        .starts_with("OOM "));
    let _: () = q(&mut con, &["CONFIG", "SET", "maxmemory", "0"])
        .await
        .unwrap();
    s.stop().await;
}

#[tokio::test]
async fn scripts_run_as_the_caller_tenant_and_database() {
    let cfg = ServerConfig {
        users: vec![
            "app1 on >pw1 ~* &* +@all".into(),
            "app2 on >pw2 ~* &* +@all".into(),
        ],
        ..Default::default()
    };
    let s = TestServer::start(cfg).await;
    let mut a = s.con_as("app1", "pw1").await;
    let mut b = s.con_as("app2", "pw2").await;
    let _: () = q(&mut a, &["SET", "k", "a's"]).await.unwrap();
    let _: () = q(&mut b, &["SET", "k", "b's"]).await.unwrap();
    let script = redis::Script::new("return redis.call('get', KEYS[1])");
    let va: String = script.key("k").invoke_async(&mut a).await.unwrap();
    let vb: String = script.key("k").invoke_async(&mut b).await.unwrap();
    assert_eq!((va.as_str(), vb.as_str()), ("a's", "b's"));
    // SELECT inside a script changes only the script's database.
    let _: () = q(&mut a, &["SELECT", "9"]).await.unwrap();
    let _: () = q(&mut a, &["SET", "k", "db9"]).await.unwrap();
    let v: String = q(
        &mut a,
        &[
            "EVAL",
            "redis.call('select','10'); redis.call('set','k','db10'); return redis.call('get','k')",
            "0",
        ],
    )
    .await
    .unwrap();
    assert_eq!(v, "db10");
    let v: String = q(&mut a, &["GET", "k"]).await.unwrap();
    assert_eq!(v, "db9");
    s.stop().await;
}

#[tokio::test]
async fn eval_inside_multi_is_queued_and_run_by_exec() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut raw = s.raw().await;
    exchange(
        &mut raw,
        b"MULTI\r\nEVAL \"return redis.call('incr', KEYS[1])\" 1 m\r\nEVAL \"return redis.call('incrby', KEYS[1], 10)\" 1 m\r\nEXEC\r\n",
        b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:1\r\n:11\r\n",
    )
    .await;
    s.stop().await;
}

/// A script that INCRs two keys on different shards is atomic: a reader never sees one
/// incremented without the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn scripts_are_atomic_across_shards() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut setup = s.con().await;
    let (k1, k2) = ("acct:1", "acct:2");
    let _: () = q(&mut setup, &["MSET", k1, "0", k2, "0"]).await.unwrap();
    let writer = {
        let mut con = s.con().await;
        tokio::spawn(async move {
            let script = redis::Script::new(
                "redis.call('incr', KEYS[1]); redis.call('incr', KEYS[2]); return 1",
            );
            for _ in 0..2000 {
                let _: i64 = script.key(k1).key(k2).invoke_async(&mut con).await.unwrap();
            }
        })
    };
    let mut reader = s.con().await;
    let mut reads = 0;
    while !writer.is_finished() {
        let (a, b): (i64, i64) = q(&mut reader, &["MGET", k1, k2]).await.unwrap();
        assert_eq!(a, b, "MGET saw half a script");
        reads += 1;
    }
    writer.await.unwrap();
    assert!(reads > 10);
    let (a, b): (i64, i64) = q(&mut reader, &["MGET", k1, k2]).await.unwrap();
    assert_eq!((a, b), (2000, 2000));
    s.stop().await;
}

/// A runaway script: after busy-reply-threshold other clients get BUSY, SCRIPT KILL
/// stops it, and the server serves again. A script that wrote cannot be killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_scripts_answer_busy_and_die_on_script_kill() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut con = s.con().await;
    let _: () = q(&mut con, &["CONFIG", "SET", "lua-time-limit", "50"])
        .await
        .unwrap();
    let v: String = q(&mut con, &["CONFIG", "GET", "busy-reply-threshold"])
        .await
        .map(|m: Vec<String>| m[1].clone())
        .unwrap();
    assert_eq!(v, "50");
    assert_eq!(
        err(&mut con, &["SCRIPT", "KILL"]).await,
        "NOTBUSY No scripts in execution right now."
    );
    let mut runner = s.raw().await;
    runner
        .write_all(&cmd(&[
            "EVAL",
            "local f = function() while 1 do redis.call('ping') end end while 1 do pcall(f) end",
            "0",
        ]))
        .await
        .unwrap();
    let mut busy = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        match q::<String>(&mut con, &["PING"]).await {
            Err(e) if e.code() == Some("BUSY") => {
                busy = true;
                break;
            }
            _ => {}
        }
    }
    assert!(busy, "PING never answered BUSY");
    assert_eq!(
        err(&mut con, &["GET", "x"]).await,
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    );
    let ok: String = q(&mut con, &["SCRIPT", "KILL"]).await.unwrap();
    assert_eq!(ok, "OK");
    let mut got = Vec::new();
    while !got.ends_with(b"\r\n") {
        let mut b = [0u8; 1];
        tokio::time::timeout(Duration::from_secs(5), runner.read_exact(&mut b))
            .await
            .expect("the killed script answers")
            .unwrap();
        got.push(b[0]);
    }
    let text = String::from_utf8_lossy(&got).to_string();
    assert!(
        text.starts_with("-ERR Script killed by user with SCRIPT KILL..."),
        "{text}"
    );
    let pong: String = q(&mut con, &["PING"]).await.unwrap();
    assert_eq!(pong, "PONG");

    // A script that wrote is UNKILLABLE; it ends by itself.
    runner
        .write_all(&cmd(&[
            "EVAL",
            "redis.call('set','w','1'); local t = redis.call('time')[1]; while redis.call('time')[1] - t < 2 do end return 'done'",
            "0",
        ]))
        .await
        .unwrap();
    let mut unkillable = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        match q::<String>(&mut con, &["SCRIPT", "KILL"]).await {
            Err(e) if e.code() == Some("UNKILLABLE") => {
                unkillable = true;
                break;
            }
            _ => {}
        }
    }
    assert!(unkillable);
    let mut got = vec![0u8; 10];
    tokio::time::timeout(Duration::from_secs(10), runner.read_exact(&mut got))
        .await
        .expect("the script ends")
        .unwrap();
    assert_eq!(&got, b"$4\r\ndone\r\n");
    let pong: String = q(&mut con, &["PING"]).await.unwrap();
    assert_eq!(pong, "PONG");
    s.stop().await;
}
