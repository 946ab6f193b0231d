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
    // PUBLISH and SPUBLISH are "may replicate" in Redis: refused the same way.
    for sc in [
        "return redis.call('publish', 'c', 'm')",
        "return redis.call('spublish', 'c', 'm')",
    ] {
        assert_eq!(
            err(&mut con, &["EVAL_RO", sc, "0"]).await,
            format!(
                "ERR Write commands are not allowed from read-only scripts. {}",
                at(sc, 1)
            )
        );
    }
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
    // allow-oom: the script starts and its writes go through past maxmemory, as in
    // Redis (the OOM check is made once, before the script runs).
    let sc = "#!lua flags=allow-oom\nreturn redis.call('set','x',1)";
    let v: String = q(&mut con, &["EVAL", sc, "1", "x"]).await.unwrap();
    assert_eq!(v, "OK");
    let v: String = q(&mut con, &["GET", "x"]).await.unwrap();
    assert_eq!(v, "1");
    // Plain writes are still refused afterwards (the exemption ends with the script).
    assert!(err(&mut con, &["SET", "y", "1"]).await.starts_with("OOM "));
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

const LIB: &str = "#!lua name=mylib\n\
redis.register_function('incr_by', function(keys, args) return redis.call('incrby', keys[1], args[1]) end)\n\
redis.register_function{function_name='get_ro', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads'}";

/// FUNCTION LOAD / FCALL / FCALL_RO / LIST / DELETE / FLUSH with Redis's replies and
/// errors (functions.c, function_lua.c).
#[tokio::test]
async fn functions_load_call_list_delete() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut con = s.con().await;
    let name: String = q(&mut con, &["FUNCTION", "LOAD", LIB]).await.unwrap();
    assert_eq!(name, "mylib");
    assert_eq!(
        err(&mut con, &["FUNCTION", "LOAD", LIB]).await,
        "ERR Library 'mylib' already exists"
    );
    let n: i64 = q(&mut con, &["FCALL", "incr_by", "1", "c", "5"])
        .await
        .unwrap();
    assert_eq!(n, 5);
    // Function names are case-insensitive.
    let n: i64 = q(&mut con, &["FCALL", "INCR_BY", "1", "c", "2"])
        .await
        .unwrap();
    assert_eq!(n, 7);
    let v: String = q(&mut con, &["FCALL_RO", "get_ro", "1", "c"])
        .await
        .unwrap();
    assert_eq!(v, "7");
    assert_eq!(
        err(&mut con, &["FCALL_RO", "incr_by", "1", "c", "1"]).await,
        "ERR Can not execute a script with write flag using *_ro command."
    );
    assert_eq!(
        err(&mut con, &["FCALL", "nosuch", "0"]).await,
        "ERR Function not found"
    );
    assert_eq!(
        err(&mut con, &["FCALL", "incr_by", "x"]).await,
        "ERR Bad number of keys provided"
    );
    assert_eq!(
        err(&mut con, &["FCALL", "incr_by", "3", "a"]).await,
        "ERR Number of keys can't be greater than number of args"
    );
    // LIST: library_name, engine, functions (name, description, flags), code on request.
    let list: redis::Value = q(&mut con, &["FUNCTION", "LIST", "WITHCODE"])
        .await
        .unwrap();
    let text = format!("{list:?}");
    for want in [
        "mylib",
        "LUA",
        "incr_by",
        "get_ro",
        "reads",
        "no-writes",
        "library_code",
    ] {
        assert!(text.contains(want), "{want} missing in {text}");
    }
    let none: Vec<redis::Value> = q(&mut con, &["FUNCTION", "LIST", "LIBRARYNAME", "other*"])
        .await
        .unwrap();
    assert!(none.is_empty());
    // Errors of LOAD.
    assert_eq!(
        err(&mut con, &["FUNCTION", "LOAD", "return 1"]).await,
        "ERR Missing library metadata"
    );
    assert_eq!(
        err(&mut con, &["FUNCTION", "LOAD", "#!lua name=x\nlocal a = 1"]).await,
        "ERR No functions registered"
    );
    assert_eq!(
        err(&mut con, &["FUNCTION", "LOAD", "#!lua name=bad-name\nx"]).await,
        "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
    );
    assert_eq!(
        err(&mut con, &["FUNCTION", "LOAD", "#!nolua name=x\nx"]).await,
        "ERR Engine 'nolua' not found"
    );
    let e = err(
        &mut con,
        &["FUNCTION", "LOAD", "#!lua name=x\nredis.call('ping')"],
    )
    .await;
    assert!(
        e.starts_with("ERR Error registering functions: ")
            && e.contains("Script attempted to access nonexistent global variable 'call'"),
        "{e}"
    );
    assert_eq!(
        err(
            &mut con,
            &[
                "FUNCTION",
                "LOAD",
                "#!lua name=x\nredis.register_function('incr_by', function() end)"
            ]
        )
        .await,
        "ERR Function incr_by already exists"
    );
    // A runaway load is stopped.
    let e = err(
        &mut con,
        &["FUNCTION", "LOAD", "#!lua name=x\nwhile true do end"],
    )
    .await;
    assert!(e.contains("FUNCTION LOAD timeout"), "{e}");
    // REPLACE swaps the library's functions.
    let _: String = q(
        &mut con,
        &[
            "FUNCTION",
            "LOAD",
            "REPLACE",
            "#!lua name=mylib\nredis.register_function('other', function() return 'new' end)",
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        err(&mut con, &["FCALL", "incr_by", "1", "c", "1"]).await,
        "ERR Function not found"
    );
    let v: String = q(&mut con, &["FCALL", "other", "0"]).await.unwrap();
    assert_eq!(v, "new");
    let ok: String = q(&mut con, &["FUNCTION", "DELETE", "mylib"]).await.unwrap();
    assert_eq!(ok, "OK");
    assert_eq!(
        err(&mut con, &["FUNCTION", "DELETE", "mylib"]).await,
        "ERR Library not found"
    );
    let _: String = q(&mut con, &["FUNCTION", "LOAD", LIB]).await.unwrap();
    let ok: String = q(&mut con, &["FUNCTION", "FLUSH", "SYNC"]).await.unwrap();
    assert_eq!(ok, "OK");
    let all: Vec<redis::Value> = q(&mut con, &["FUNCTION", "LIST"]).await.unwrap();
    assert!(all.is_empty());
    s.stop().await;
}

/// DUMP / RESTORE with the three policies, and a corrupted payload refused.
#[tokio::test]
async fn functions_dump_and_restore() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut con = s.con().await;
    let _: String = q(&mut con, &["FUNCTION", "LOAD", LIB]).await.unwrap();
    let payload: Vec<u8> = q(&mut con, &["FUNCTION", "DUMP"]).await.unwrap();
    // RDB_OPCODE_FUNCTION2, then the RDB version 10 and a CRC-64 at the end.
    assert_eq!(payload[0], 245);
    assert_eq!(&payload[payload.len() - 10..payload.len() - 8], &[10, 0]);
    let restore = |policy: Option<&'static str>| {
        let mut c = redis::cmd("FUNCTION");
        c.arg("RESTORE").arg(payload.clone());
        if let Some(p) = policy {
            c.arg(p);
        }
        c
    };
    let e: redis::RedisResult<String> = restore(None).query_async(&mut con).await;
    let e = e.unwrap_err().to_string();
    assert!(e.contains("Library mylib already exists"), "{e}");
    let ok: String = restore(Some("REPLACE"))
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let _: String = q(&mut con, &["FUNCTION", "FLUSH"]).await.unwrap();
    let ok: String = restore(None).query_async(&mut con).await.unwrap();
    assert_eq!(ok, "OK");
    let n: i64 = q(&mut con, &["FCALL", "incr_by", "1", "r", "3"])
        .await
        .unwrap();
    assert_eq!(n, 3);
    let ok: String = restore(Some("FLUSH")).query_async(&mut con).await.unwrap();
    assert_eq!(ok, "OK");
    let mut bad = payload.clone();
    bad[5] ^= 0xff;
    let e: redis::RedisResult<String> = redis::cmd("FUNCTION")
        .arg("RESTORE")
        .arg(bad)
        .query_async(&mut con)
        .await;
    assert!(e
        .unwrap_err()
        .to_string()
        .contains("payload version or checksum are wrong"));
    assert_eq!(
        err(&mut con, &["FUNCTION", "RESTORE", "x", "MERGE"]).await,
        "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
    );
    s.stop().await;
}

/// Libraries belong to the tenant that loaded them: another tenant neither sees nor
/// calls them, and may load its own of the same name.
#[tokio::test]
async fn functions_are_per_tenant() {
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
    let _: String = q(&mut a, &["FUNCTION", "LOAD", LIB]).await.unwrap();
    assert_eq!(
        err(&mut b, &["FCALL", "incr_by", "1", "k", "1"]).await,
        "ERR Function not found"
    );
    let none: Vec<redis::Value> = q(&mut b, &["FUNCTION", "LIST"]).await.unwrap();
    assert!(none.is_empty());
    let _: String = q(&mut b, &["FUNCTION", "LOAD", LIB]).await.unwrap();
    let _: () = q(&mut a, &["SET", "k", "10"]).await.unwrap();
    let na: i64 = q(&mut a, &["FCALL", "incr_by", "1", "k", "1"])
        .await
        .unwrap();
    let nb: i64 = q(&mut b, &["FCALL", "incr_by", "1", "k", "1"])
        .await
        .unwrap();
    assert_eq!((na, nb), (11, 1), "each runs in its own keyspace");
    let _: String = q(&mut b, &["FUNCTION", "FLUSH"]).await.unwrap();
    let na: i64 = q(&mut a, &["FCALL", "incr_by", "1", "k", "1"])
        .await
        .unwrap();
    assert_eq!(na, 12, "b's FLUSH left a's libraries");
    s.stop().await;
}

/// A busy function: BUSY names FUNCTION KILL, SCRIPT KILL refuses it, FUNCTION STATS
/// shows it, FUNCTION KILL stops it; EXEC meanwhile answers EXECABORT and leaves MULTI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_function_killed_by_function_kill_and_exec_aborts() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut con = s.con().await;
    let _: () = q(&mut con, &["CONFIG", "SET", "busy-reply-threshold", "50"])
        .await
        .unwrap();
    let _: String = q(
        &mut con,
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=spin\nredis.register_function('spin', function() while true do end end)",
        ],
    )
    .await
    .unwrap();
    let mut tx = s.raw().await;
    exchange(&mut tx, b"MULTI\r\nINCR xx\r\n", b"+OK\r\n+QUEUED\r\n").await;
    let mut runner = s.raw().await;
    runner
        .write_all(&cmd(&["FCALL", "spin", "0"]))
        .await
        .unwrap();
    let mut busy = String::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if let Err(e) = q::<String>(&mut con, &["PING"]).await {
            busy = e.to_string();
            break;
        }
    }
    assert!(busy.contains("FUNCTION KILL"), "{busy}");
    exchange(
        &mut tx,
        b"EXEC\r\n",
        b"-EXECABORT Transaction discarded because of: BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n",
    )
    .await;
    assert_eq!(
        err(&mut con, &["SCRIPT", "KILL"]).await,
        "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    );
    let stats: redis::Value = q(&mut con, &["FUNCTION", "STATS"]).await.unwrap();
    let text = format!("{stats:?}");
    assert!(
        text.contains("spin") && text.contains("duration_ms"),
        "{text}"
    );
    let ok: String = q(&mut con, &["FUNCTION", "KILL"]).await.unwrap();
    assert_eq!(ok, "OK");
    let mut got = Vec::new();
    while !got.ends_with(b"\r\n") {
        let mut b = [0u8; 1];
        tokio::time::timeout(Duration::from_secs(5), runner.read_exact(&mut b))
            .await
            .expect("the killed function answers")
            .unwrap();
        got.push(b[0]);
    }
    assert!(
        String::from_utf8_lossy(&got).contains("Script killed by user"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    // The transaction is gone: the connection is out of MULTI, nothing ran.
    exchange(&mut tx, b"GET xx\r\n", b"$-1\r\n").await;
    s.stop().await;
}

/// cmsgpack and struct give Redis's bytes.
#[tokio::test]
async fn cmsgpack_and_struct_match_redis() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut con = s.con().await;
    let hex = "local h = '' for i = 1, #e do h = h .. string.format('%02x', string.byte(e, i)) end return h";
    for (expr, want) in [
        ("cmsgpack.pack(0.1)", "cb3fb999999999999a"),
        ("cmsgpack.pack(-1099511627776)", "d3ffffff0000000000"),
        ("cmsgpack.pack({1, 2, 'a'}, true, nil)", "930102a161c3c0"),
        (
            "cmsgpack.pack(string.rep('x', 40))",
            &format!("d928{}", "78".repeat(40)),
        ),
        ("cmsgpack.pack(1.5, 300, -200)", "ca3fc00000cd012cd1ff38"),
        (
            "struct.pack('>i2<H!4id', -2, 513, 7, 0.5)",
            "fffe010207000000000000000000e03f",
        ),
        ("struct.pack('bBc0s', -1, 255, 'ab', 'z')", "ffff61627a00"),
    ] {
        let script = format!("local e = {expr} {hex}");
        let got: String = q(&mut con, &["EVAL", &script, "0"]).await.unwrap();
        assert_eq!(got, want, "{expr}");
    }
    let v: Vec<redis::Value> = q(
        &mut con,
        &[
            "EVAL",
            "local t = cmsgpack.unpack(cmsgpack.pack({a=1, b={2, 3}})) \
             local off, x = cmsgpack.unpack_one(cmsgpack.pack(7, 8), 0) \
             local a, b, c, nxt = struct.unpack('>hBs', struct.pack('>hBs', -300, 9, 'str')) \
             return {t.a, t.b[2], off, x, a, b, c, nxt, struct.size('!4bi')}",
            "0",
        ],
    )
    .await
    .unwrap();
    let ints: Vec<String> = v.iter().map(|x| format!("{x:?}")).collect();
    assert_eq!(ints.len(), 9, "{ints:?}");
    assert_eq!(
        format!("{v:?}"),
        format!(
            "{:?}",
            vec![
                redis::Value::Int(1),
                redis::Value::Int(3),
                redis::Value::Int(1),
                redis::Value::Int(7),
                redis::Value::Int(-300),
                redis::Value::Int(9),
                redis::Value::BulkString(b"str".to_vec()),
                redis::Value::Int(8),
                redis::Value::Int(8),
            ]
        )
    );
    assert!(err(&mut con, &["EVAL", "cmsgpack.pack = 1", "0"])
        .await
        .contains("Attempt to modify a readonly table"));
    assert!(
        err(&mut con, &["EVAL", "return cmsgpack.unpack('\\217')", "0"])
            .await
            .contains("Missing bytes in input.")
    );
    s.stop().await;
}

/// A payload of Redis 7.0.15's FUNCTION DUMP (its library code LZF-compressed)
/// restores in Augur, and Augur's own DUMP of it restores again.
#[tokio::test]
async fn function_restore_reads_redis_payloads() {
    const REDIS_DUMP: &[u8] = b"\xf5\xc3\x40\x6a\x40\x7b\x1f\x23\x21\x6c\x75\x61\x20\x6e\x61\x6d\x65\x3d\x6d\x79\x6c\x69\x62\x0a\x72\x65\x64\x69\x73\x2e\x72\x65\x67\x69\x73\x74\x65\x72\x5f\x13\x66\x75\x6e\x63\x74\x69\x6f\x6e\x28\x27\x69\x6e\x63\x72\x5f\x62\x79\x27\x2c\x20\xe0\x00\x13\x11\x6b\x65\x79\x73\x2c\x20\x61\x72\x67\x73\x29\x20\x72\x65\x74\x75\x72\x6e\x20\x06\x40\x3e\x03\x63\x61\x6c\x6c\x80\x31\x60\x30\x40\x27\x02\x5b\x31\x5d\x80\x2a\x20\x08\x05\x29\x20\x65\x6e\x64\x29\x0a\x00\xb4\x16\x72\x4c\xc8\x1c\x4a\xff";
    let s = TestServer::start(ServerConfig::default()).await;
    let mut con = s.con().await;
    let ok: String = redis::cmd("FUNCTION")
        .arg("RESTORE")
        .arg(REDIS_DUMP)
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let n: i64 = q(&mut con, &["FCALL", "incr_by", "1", "k", "4"])
        .await
        .unwrap();
    assert_eq!(n, 4);
    let mine: Vec<u8> = q(&mut con, &["FUNCTION", "DUMP"]).await.unwrap();
    let ok: String = redis::cmd("FUNCTION")
        .arg("RESTORE")
        .arg(mine)
        .arg("FLUSH")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(ok, "OK");
    let n: i64 = q(&mut con, &["FCALL", "incr_by", "1", "k", "1"])
        .await
        .unwrap();
    assert_eq!(n, 5);
    s.stop().await;
}
