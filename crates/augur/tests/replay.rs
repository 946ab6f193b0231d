//! End-to-end tests of `augur replay` against Debian's `redis-server`.
//!
//! Each test starts its own server on an ephemeral port (no persistence). If
//! `redis-server` is not on PATH the tests print why and pass without checking
//! anything; install it with `apt-get install -y redis-server`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn trace(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../../../shared/traces/{name}.oracleGeneral.bin.zst"
    ))
}

fn find_on_path(bin: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(bin))
            .find(|c| c.is_file())
    })
}

/// A redis-server child process, killed on drop.
struct Redis {
    child: Child,
    port: u16,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port for a new server: a free one from the kernel, never one this process has
/// handed out before. The tests of this file run concurrently, and the kernel may give
/// the same free port to two of them (it is free again once the probe socket closes):
/// the second redis-server then fails to bind while the first one answers for it.
fn fresh_port() -> u16 {
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut used = HANDED_OUT.lock().unwrap();
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if !used.contains(&port) {
            used.push(port);
            return port;
        }
    }
}

/// The `process_id` that the server on `port` reports in `INFO server` (after `AUTH
/// password` if given), if it answers.
fn server_pid(port: u16, password: Option<&str>) -> Option<u32> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    if let Some(pw) = password {
        s.write_all(format!("AUTH {pw}\r\n").as_bytes()).ok()?;
    }
    s.write_all(b"INFO server\r\n").ok()?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    while r.read_line(&mut line).ok()? > 0 {
        if let Some(pid) = line.trim().strip_prefix("process_id:") {
            return pid.parse().ok();
        }
        line.clear();
    }
    None
}

impl Redis {
    /// Starts a server with the given extra config arguments, or `None` (with a
    /// message) if redis-server is not installed. It is ready when the server on its
    /// port reports this child's process id (so not some other process that holds the
    /// port); if the port turns out to be taken, it starts again on another one.
    fn start(extra: &[&str]) -> Option<Redis> {
        let Some(bin) = find_on_path("redis-server") else {
            eprintln!("SKIPPED: redis-server is not on PATH (apt-get install -y redis-server)");
            return None;
        };
        let password = extra
            .iter()
            .position(|&a| a == "--requirepass")
            .and_then(|i| extra.get(i + 1).copied());
        for _attempt in 0..5 {
            let port = fresh_port();
            let mut cmd = Command::new(&bin);
            cmd.args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--maxmemory", "512mb", "--maxmemory-policy", "allkeys-lru"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
            let mut redis = Redis {
                child: cmd.spawn().expect("spawning redis-server"),
                port,
            };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if redis.child.try_wait().unwrap().is_some() {
                    break; // could not bind (or bad arguments): try another port
                }
                match server_pid(port, password) {
                    Some(pid) if pid == redis.child.id() => return Some(redis),
                    Some(_) => break, // another server holds this port
                    None => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        }
        panic!("redis-server did not start (5 ports tried); args {extra:?}");
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Sends one command (as the default user or after `auth`) and returns the raw
    /// first reply line plus, for bulk replies, the payload.
    fn command(&self, auth: Option<&[&str]>, args: &[&str]) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut send = |args: &[&str]| {
            let mut out = format!("*{}\r\n", args.len());
            for a in args {
                out += &format!("${}\r\n{a}\r\n", a.len());
            }
            s.write_all(out.as_bytes()).unwrap();
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            if let Some(n) = line
                .strip_prefix('$')
                .and_then(|n| n.trim().parse::<usize>().ok())
            {
                let mut payload = vec![0; n + 2];
                r.read_exact(&mut payload).unwrap();
                line += &String::from_utf8_lossy(&payload[..n]);
            }
            line
        };
        if let Some(a) = auth {
            let mut v = vec!["AUTH"];
            v.extend_from_slice(a);
            assert!(send(&v).starts_with("+OK"));
        }
        send(args)
    }
}

fn replay(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_augur"))
        .arg("replay")
        .args(args)
        .output()
        .expect("running augur replay")
}

fn replay_json(args: &[&str]) -> Vec<Value> {
    let mut all = args.to_vec();
    all.push("--json");
    let out = replay(&all);
    assert!(
        out.status.success(),
        "augur replay failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    v["groups"].as_array().unwrap().clone()
}

fn u(v: &Value, field: &str) -> u64 {
    v[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {v}"))
}

#[test]
fn compulsory_misses_only_then_all_hits() {
    let Some(redis) = Redis::start(&[]) else {
        return;
    };
    let cpp = trace("lirs_cpp");
    let cpp = cpp.to_str().unwrap();
    // lirs_cpp: 9,047 requests over 1,223 objects; 512 MB holds them all, and per-key
    // ordering on one connection makes the hit count exact despite 4 connections.
    let g = replay_json(&[cpp, "--addr", &redis.addr(), "--connections", "4"]);
    assert_eq!(g.len(), 1);
    assert_eq!(u(&g[0], "requests"), 9_047);
    assert_eq!(u(&g[0], "hits"), 9_047 - 1_223);
    assert_eq!(u(&g[0], "fills"), 1_223);
    assert_eq!(u(&g[0], "errors"), 0);
    let lat = &g[0]["latency_us"];
    let (p50, p99, p999) = (
        lat["p50"].as_f64().unwrap(),
        lat["p99"].as_f64().unwrap(),
        lat["p999"].as_f64().unwrap(),
    );
    assert!(0.0 < p50 && p50 <= p99 && p99 <= p999, "{lat}");
    assert!(g[0]["throughput_rps"].as_f64().unwrap() > 0.0);

    // The server holds exactly the trace's objects, under the documented key format,
    // with deterministic values of the trace's size (1 byte for LIRS traces).
    assert_eq!(redis.command(None, &["DBSIZE"]).trim(), ":1223");
    assert_eq!(redis.command(None, &["GET", "k:0"]), "$1\r\na");

    // A second pass finds everything; --limit cuts the trace.
    let g = replay_json(&[cpp, "--addr", &redis.addr(), "--connections", "3"]);
    assert_eq!(u(&g[0], "hits"), 9_047);
    let g = replay_json(&[
        cpp,
        "--addr",
        &redis.addr(),
        "--limit",
        "1000",
        "--key-prefix",
        "lim:",
    ]);
    assert_eq!(u(&g[0], "requests"), 1_000);
    let distinct_in_first_1000 = {
        let reqs = augur_trace::load_all(trace("lirs_cpp")).unwrap();
        reqs[..1000]
            .iter()
            .map(|r| r.key)
            .collect::<std::collections::HashSet<_>>()
            .len() as u64
    };
    assert_eq!(u(&g[0], "hits"), 1_000 - distinct_in_first_1000);
}

#[test]
fn concurrent_tenant_groups_with_auth_and_penalties() {
    // redis-server joins the words after `--user` into one ACL rule.
    let acl = [
        "--user", "t1", "on", ">pw1", "~*", "&*", "+@all", "--user", "t2", "on", ">pw2", "~*",
        "&*", "+@all",
    ];
    let Some(redis) = Redis::start(&acl) else {
        return;
    };
    let cpp = trace("lirs_cpp");
    let cs = trace("lirs_cs");
    let g1 = format!(
        "trace={},auth=t1:pw1,penalty=100us,connections=2,prefix=a:,name=one",
        cpp.display()
    );
    let g2 = format!(
        "trace={},auth=t2:pw2,penalty=1ms,connections=4,prefix=b:,name=two",
        cs.display()
    );
    let t0 = Instant::now();
    let g = replay_json(&["--addr", &redis.addr(), "--group", &g1, "--group", &g2]);
    let wall = t0.elapsed().as_secs_f64();
    assert_eq!(g.len(), 2);
    assert_eq!(
        (g[0]["name"].as_str(), g[1]["name"].as_str()),
        (Some("one"), Some("two"))
    );
    assert_eq!(
        (u(&g[0], "requests"), u(&g[0], "hits")),
        (9_047, 9_047 - 1_223)
    );
    assert_eq!(
        (u(&g[1], "requests"), u(&g[1], "hits")),
        (6_781, 6_781 - 1_409)
    );
    // Group two really waited: 1,409 misses x 1 ms spread over 4 connections takes at
    // least 1409/4 ms, and its mean access latency includes miss ratio x penalty.
    let two_secs = g[1]["seconds"].as_f64().unwrap();
    assert!(two_secs >= 1.409 / 4.0, "group two took {two_secs} s");
    let mean_two = g[1]["latency_us"]["mean"].as_f64().unwrap();
    assert!(mean_two >= 1_409.0 / 6_781.0 * 1000.0, "mean {mean_two} us");
    assert!((g[1]["miss_penalty_us"].as_f64().unwrap() - 1000.0).abs() < 1e-6);
    // The groups ran concurrently: the whole run is shorter than both in sequence
    // would be (with generous slack for process start on a busy machine).
    assert!(wall < two_secs + g[0]["seconds"].as_f64().unwrap() + 5.0);

    // Keys landed under each group's prefix.
    let dbsize = redis.command(Some(&["t1", "pw1"]), &["DBSIZE"]);
    assert_eq!(dbsize.trim(), format!(":{}", 1_223 + 1_409));

    // A password alone uses `AUTH pass`, i.e. the default user: refused here because
    // the default user has no password set, so `AUTH` errors and replay fails.
    let out = replay(&[
        cpp.to_str().unwrap(),
        "--addr",
        &redis.addr(),
        "--auth",
        "wrong",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("AUTH failed"), "{err}");
    // A wrong user password fails the same way.
    let out = replay(&[
        cpp.to_str().unwrap(),
        "--addr",
        &redis.addr(),
        "--auth",
        "t1:nope",
    ]);
    assert!(!out.status.success());
}

#[test]
fn password_only_auth() {
    let Some(redis) = Redis::start(&["--requirepass", "sekrit"]) else {
        return;
    };
    let cs = trace("lirs_cs");
    let g = replay_json(&[
        cs.to_str().unwrap(),
        "--addr",
        &redis.addr(),
        "--auth",
        "sekrit",
    ]);
    assert_eq!(u(&g[0], "hits"), 6_781 - 1_409);
    // Without credentials the server answers every GET with -NOAUTH: the replay
    // counts those error replies (and issues no SETs) instead of reporting misses.
    let g = replay_json(&[
        cs.to_str().unwrap(),
        "--addr",
        &redis.addr(),
        "--limit",
        "10",
    ]);
    assert_eq!(
        (u(&g[0], "errors"), u(&g[0], "hits"), u(&g[0], "fills")),
        (10, 0, 0)
    );
    assert!(
        g[0]["first_error"].as_str().unwrap().contains("NOAUTH"),
        "{}",
        g[0]
    );
}

#[test]
fn csv_trace_with_sets_and_deletes() {
    let Some(redis) = Redis::start(&[]) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("augur-replay-csv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ops.csv");
    // get a: miss+fill; get a: hit; delete a; get a: miss+fill; set b; get b: hit;
    // get user:7 (string key, hashed): miss+fill of 300 bytes, capped to 50.
    std::fs::write(&path, "op,key,size\nGET,1,10\nget,1,10\nDELETE,1,\nget,1,10\nset,2,20\nGet,2,20\nget,user:7,300\n")
        .unwrap();
    let g = replay_json(&[
        path.to_str().unwrap(),
        "--addr",
        &redis.addr(),
        "--format",
        "csv:op=0,key=1,size=2,header",
        "--connections",
        "2",
        "--value-size-cap",
        "50",
    ]);
    let counts: Vec<u64> = [
        "requests", "gets", "hits", "fills", "sets", "deletes", "errors",
    ]
    .iter()
    .map(|f| u(&g[0], f))
    .collect();
    assert_eq!(counts, vec![7, 5, 2, 3, 1, 1, 0]);
    assert_eq!(redis.command(None, &["STRLEN", "k:1"]).trim(), ":10");
    assert_eq!(redis.command(None, &["STRLEN", "k:2"]).trim(), ":20");
    let hashed = format!("k:{}", augur_trace::key_hash(b"user:7"));
    assert_eq!(redis.command(None, &["STRLEN", &hashed]).trim(), ":50");
    std::fs::remove_dir_all(&dir).unwrap();
}
