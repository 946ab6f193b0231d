//! End-to-end tests of `augur replay` against Debian's `redis-server`.
//!
//! Each test starts its own server on an ephemeral port (no persistence). If
//! `redis-server` is not on PATH the tests print why and pass without checking
//! anything; install it with `apt-get install -y redis-server`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "../../../tests/support/traces.rs"]
mod traces;

fn trace(name: &str) -> PathBuf {
    traces::path(name)
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

/// `--pipeline 16`: windows of distinct keys keep each key's requests in trace order,
/// so the counts are exactly those of one request in flight, and every miss is filled
/// (after the penalty) by the window's batch of SETs.
#[test]
fn pipelined_replay_counts_exactly_like_one_in_flight() {
    let Some(redis) = Redis::start(&[]) else {
        return;
    };
    let cpp = trace("lirs_cpp");
    let cpp = cpp.to_str().unwrap();
    let addr = redis.addr();
    let args = |prefix: &'static str| {
        [
            cpp,
            "--addr",
            addr.as_str(),
            "--connections",
            "3",
            "--pipeline",
            "16",
            "--miss-penalty",
            "50us",
            "--key-prefix",
            prefix,
        ]
    };
    let g = replay_json(&args("p:"));
    assert_eq!(u(&g[0], "pipeline"), 16);
    assert_eq!(u(&g[0], "requests"), 9_047);
    assert_eq!(u(&g[0], "gets"), 9_047);
    assert_eq!(u(&g[0], "hits"), 9_047 - 1_223);
    assert_eq!(u(&g[0], "fills"), 1_223);
    assert_eq!(u(&g[0], "errors"), 0);
    // Every miss waited the penalty: at least 1,223 requests took 50 us or more.
    assert!(g[0]["latency_us"]["max"].as_f64().unwrap() >= 50.0);
    let keys = redis.command(None, &["KEYS", "p:*"]);
    assert!(
        keys.starts_with("*1223\r\n"),
        "{}",
        &keys[..keys.len().min(40)]
    );
    assert_eq!(redis.command(None, &["GET", "p:0"]), "$1\r\na");
    // A second pass hits everything.
    let g = replay_json(&args("p:"));
    assert_eq!(u(&g[0], "hits"), 9_047);
    assert_eq!(u(&g[0], "fills"), 0);
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
    // Once on two connections, once pipelined on one: windows end at a repeated key, so
    // GET, GET, DELETE, GET of one key still see each other's effects in order.
    let addr = redis.addr();
    let runs: [(&[&str], &str); 2] = [
        (&["--connections", "2", "--value-size-cap", "50"], "k:"),
        (
            &[
                "--connections",
                "1",
                "--pipeline",
                "8",
                "--key-prefix",
                "pl:",
            ],
            "pl:",
        ),
    ];
    for (extra, prefix) in runs {
        let mut args = vec![
            path.to_str().unwrap(),
            "--addr",
            &addr,
            "--format",
            "csv:op=0,key=1,size=2,header",
        ];
        args.extend_from_slice(extra);
        let g = replay_json(&args);
        let counts: Vec<u64> = [
            "requests", "gets", "hits", "fills", "sets", "deletes", "errors",
        ]
        .iter()
        .map(|f| u(&g[0], f))
        .collect();
        assert_eq!(counts, vec![7, 5, 2, 3, 1, 1, 0], "{extra:?}");
        let key = format!("{prefix}1");
        assert_eq!(redis.command(None, &["STRLEN", &key]).trim(), ":10");
    }
    assert_eq!(redis.command(None, &["STRLEN", "k:2"]).trim(), ":20");
    let hashed = format!("k:{}", augur_trace::key_hash(b"user:7"));
    assert_eq!(redis.command(None, &["STRLEN", &hashed]).trim(), ":50");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------
// Multi-tenant groups (the kRedis paper's §6.4 set-up)
// ---------------------------------------------------------------------------------

/// Misses of an exact LRU cache of `capacity` objects over `keys`.
fn lru_misses(keys: &[u64], capacity: usize) -> u64 {
    use std::collections::{BTreeMap, HashMap};
    let mut last_use: HashMap<u64, usize> = HashMap::new();
    let mut by_age: BTreeMap<usize, u64> = BTreeMap::new();
    let mut misses = 0;
    for (t, &k) in keys.iter().enumerate() {
        match last_use.insert(k, t) {
            Some(old) => {
                by_age.remove(&old);
            }
            None => {
                misses += 1;
                if last_use.len() > capacity {
                    let (_, victim) = by_age.pop_first().unwrap();
                    last_use.remove(&victim);
                }
            }
        }
        by_age.insert(t, k);
    }
    misses
}

fn trace_keys(name: &str, limit: usize) -> Vec<u64> {
    augur_trace::load_all(trace(name))
        .unwrap()
        .iter()
        .take(limit)
        .map(|r| r.key)
        .collect()
}

fn f(v: &Value, field: &str) -> f64 {
    v[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} in {v}"))
}

fn temp_json(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("augur-replay-{tag}-{}.json", std::process::id()))
}

/// Runs `augur replay ARGS --json FILE` and returns (stdout, the JSON document).
fn replay_json_file(args: &[&str], tag: &str) -> (String, Value) {
    let path = temp_json(tag);
    let mut all = args.to_vec();
    all.extend(["--json", path.to_str().unwrap()]);
    let out = replay(&all);
    assert!(
        out.status.success(),
        "augur replay failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).expect("JSON file");
    std::fs::remove_file(&path).unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), doc)
}

#[test]
fn exact_lru_simulation_sanity() {
    // The reference the tests compare against: cold misses only when everything fits,
    // more when it does not (a cyclic scan over 3 keys misses always at capacity 2).
    assert_eq!(lru_misses(&[1, 2, 1, 3, 1, 2], 3), 3);
    assert_eq!(lru_misses(&[1, 2, 3, 1, 2, 3], 2), 6);
    assert_eq!(lru_misses(&[1, 2, 1, 3, 1, 2], 2), 4);
}

#[test]
fn two_acl_tenants_with_user_pass_prefixes_and_json_file() {
    // Each user may only touch its own prefix: a key sent without (or with the other
    // tenant's) prefix is refused with -NOPERM and shows up as an error reply.
    let acl = [
        "--user", "t1", "on", ">pw1", "~t1:*", "+@all", "--user", "t2", "on", ">pw2", "~t2:*",
        "+@all",
    ];
    let Some(redis) = Redis::start(&acl) else {
        return;
    };
    let (cpp, cs) = (trace("lirs_cpp"), trace("lirs_cs"));
    let g1 = format!(
        "name=t1,trace={},user=t1,pass=pw1,prefix=t1:,penalty=100us,connections=2,limit=5000",
        cpp.display()
    );
    let g2 = format!(
        "name=t2,trace={},user=t2,pass=pw2,prefix=t2:,penalty=200us,connections=3",
        cs.display()
    );
    let (table, doc) = replay_json_file(
        &["--addr", &redis.addr(), "--group", &g1, "--group", &g2],
        "two",
    );
    let g = doc["groups"].as_array().unwrap();
    assert_eq!(g.len(), 2);
    let cpp_keys = trace_keys("lirs_cpp", 5000);
    let cs_keys = trace_keys("lirs_cs", usize::MAX);
    // 512 MB holds both working sets: each group's hits equal an exact LRU cache's of
    // any capacity above its distinct keys, i.e. everything but cold misses.
    for (grp, keys, user, prefix, penalty) in [
        (&g[0], &cpp_keys, "t1", "t1:", 100.0),
        (&g[1], &cs_keys, "t2", "t2:", 200.0),
    ] {
        let n = keys.len() as u64;
        let misses = lru_misses(keys, 1_000_000);
        assert_eq!(u(grp, "requests"), n, "{grp}");
        assert_eq!(u(grp, "hits"), n - misses, "{grp}");
        assert_eq!(u(grp, "fills"), misses, "{grp}");
        assert_eq!(u(grp, "errors"), 0, "{grp}");
        assert_eq!(grp["user"].as_str(), Some(user));
        assert_eq!(grp["prefix"].as_str(), Some(prefix));
        assert_eq!(grp["complete"].as_bool(), Some(true));
        assert!((f(grp, "miss_penalty_us") - penalty).abs() < 1e-6);
        // Every miss paid the penalty, so the mean is at least miss ratio x penalty.
        let mean = f(&grp["latency_us"], "mean");
        assert!(
            mean >= misses as f64 / n as f64 * penalty,
            "mean {mean} {grp}"
        );
        let hps = f(grp, "hits_per_sec");
        let expect = u(grp, "hits") as f64 / f(grp, "seconds");
        assert!((hps - expect).abs() <= 1e-6 * expect, "{hps} vs {expect}");
        // The keys landed under the prefix, one per distinct object.
        let count = redis.command(
            Some(&[user, &format!("pw{}", &user[1..])]),
            &[
                "EVAL",
                "return #redis.call('keys', ARGV[1])",
                "0",
                &format!("{prefix}*"),
            ],
        );
        assert_eq!(count.trim(), format!(":{misses}"), "{prefix}");
    }
    assert_eq!(
        redis.command(Some(&["t1", "pw1"]), &["GET", "t1:0"]),
        "$1\r\na"
    );
    assert_eq!(
        redis.command(Some(&["t1", "pw1"]), &["DBSIZE"]).trim(),
        format!(
            ":{}",
            lru_misses(&cpp_keys, 1 << 20) + lru_misses(&cs_keys, 1 << 20)
        )
    );

    // The overall numbers add up.
    let o = &doc["overall"];
    for field in ["requests", "gets", "hits", "fills", "errors"] {
        assert_eq!(
            u(o, field),
            u(&g[0], field) + u(&g[1], field),
            "overall {field}"
        );
    }
    assert_eq!(u(o, "groups"), 2);
    assert!((f(o, "hit_ratio") - u(o, "hits") as f64 / u(o, "gets") as f64).abs() < 1e-12);
    // Overall mean = request-weighted mean of the groups' (histograms keep 3 digits).
    let weighted = (f(&g[0]["latency_us"], "mean") * u(&g[0], "requests") as f64
        + f(&g[1]["latency_us"], "mean") * u(&g[1], "requests") as f64)
        / u(o, "requests") as f64;
    let mean = f(&o["latency_us"], "mean");
    assert!(
        (mean - weighted).abs() <= 0.002 * weighted,
        "{mean} vs {weighted}"
    );
    let unweighted = (f(&g[0]["latency_us"], "mean") + f(&g[1]["latency_us"], "mean")) / 2.0;
    assert!((f(o, "mean_of_group_means_us") - unweighted).abs() < 1e-9);
    let p99s = [f(&g[0]["latency_us"], "p99"), f(&g[1]["latency_us"], "p99")];
    let p99 = f(&o["latency_us"], "p99");
    assert!(
        p99 >= p99s[0].min(p99s[1]) * 0.999 && p99 <= p99s[0].max(p99s[1]) * 1.001,
        "{p99} {p99s:?}"
    );
    // The groups overlap in time: the run is shorter than the two in sequence.
    assert!(f(o, "seconds") < f(&g[0], "seconds") + f(&g[1], "seconds"));
    assert_eq!(doc["deadline_reached"].as_bool(), Some(false));
    assert!(doc["tenant_polls"].is_null());
    // With --json FILE the table still goes to stdout, with the overall row.
    assert!(table.contains("overall"), "{table}");
    assert!(table.lines().any(|l| l.starts_with("t2 ")), "{table}");

    // Without its prefix a tenant's keys are refused: errors, not silent misses.
    let g1_bad = g1
        .replace("prefix=t1:", "prefix=t2:")
        .replace("limit=5000", "limit=20");
    let (_, doc) = replay_json_file(&["--addr", &redis.addr(), "--group", &g1_bad], "noperm");
    let g = &doc["groups"][0];
    assert_eq!(u(g, "errors"), 20, "{g}");
    assert!(g["first_error"].as_str().unwrap().contains("NOPERM"), "{g}");
}

#[test]
fn json_file_must_not_be_a_trace() {
    let cpp = trace("lirs_cpp");
    let out = replay(&["--json", cpp.to_str().unwrap(), "--addr", "127.0.0.1:1"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(".json"), "{err}");
    assert!(cpp.exists());
}

#[test]
fn duration_bounds_the_run_and_loop_repeats_the_prefix() {
    let Some(redis) = Redis::start(&[]) else {
        return;
    };
    let cs = trace("lirs_cs");
    let cpp = trace("lirs_cpp");
    // `slow`: 1,409 misses at 20 ms on one connection would take 28 s; `fast`: 1,000
    // requests with no penalty, done well within the 1.5 s bound; `again`: the first
    // 100 requests of lirs_cpp over and over.
    let slow = format!(
        "name=slow,trace={},penalty=20ms,connections=1,prefix=s:",
        cs.display()
    );
    let fast = format!(
        "name=fast,trace={},limit=1000,connections=2,prefix=f:",
        cpp.display()
    );
    let again = format!(
        "name=again,trace={},limit=100,loop=1,connections=2,prefix=a:",
        cpp.display()
    );
    let t0 = Instant::now();
    let (_, doc) = replay_json_file(
        &[
            "--addr",
            &redis.addr(),
            "--group",
            &slow,
            "--group",
            &fast,
            "--group",
            &again,
            "--duration",
            "1500ms",
        ],
        "duration",
    );
    let wall = t0.elapsed().as_secs_f64();
    assert!(wall < 10.0, "took {wall} s");
    assert_eq!(doc["deadline_reached"].as_bool(), Some(true));
    assert!((f(&doc, "duration_s") - 1.5).abs() < 1e-9);
    let g = doc["groups"].as_array().unwrap();
    let (slow, fast, again) = (&g[0], &g[1], &g[2]);
    // Cut: some but not all requests; at most one fill per 20 ms of the bound (plus
    // the one in flight at the deadline).
    assert_eq!(slow["complete"].as_bool(), Some(false));
    assert!(
        u(slow, "requests") > 0 && u(slow, "requests") < 6_781,
        "{slow}"
    );
    assert!(u(slow, "fills") <= 1500 / 20 + 1, "{slow}");
    assert!(f(slow, "seconds") < 5.0, "{slow}");
    // Not cut.
    assert_eq!(fast["complete"].as_bool(), Some(true));
    assert_eq!(u(fast, "requests"), 1_000);
    // Looped: many passes over the prefix, and only its cold misses missed.
    let distinct = lru_misses(&trace_keys("lirs_cpp", 100), 1 << 20);
    assert_eq!(again["complete"].as_bool(), Some(false));
    assert!(u(again, "requests") > 300, "{again}");
    assert_eq!(u(again, "fills"), distinct, "{again}");
    assert_eq!(u(again, "hits"), u(again, "requests") - distinct);
    assert_eq!(
        u(&doc["overall"], "requests"),
        g.iter().map(|x| u(x, "requests")).sum::<u64>()
    );

    // --loop needs --duration.
    let out = replay(&[cpp.to_str().unwrap(), "--addr", &redis.addr(), "--loop"]);
    assert!(!out.status.success());
}

#[test]
fn open_loop_rate_offers_the_rate_and_charges_queueing() {
    let Some(redis) = Redis::start(&[]) else {
        return;
    };
    let cs = trace("lirs_cs");
    let cpp = trace("lirs_cpp");
    // `steady`: 400 req/s over 2 connections, no penalty: the server keeps up.
    // `behind`: 200 req/s offered to one connection whose every request is a cold miss
    // with a 20 ms penalty, so it serves ~50/s and falls further behind each request.
    let steady = format!(
        "name=steady,trace={},limit=100,loop=1,connections=2,prefix=s:,rate=400",
        cpp.display()
    );
    let behind = format!(
        "name=behind,trace={},penalty=20ms,connections=1,prefix=b:,rate=200",
        cs.display()
    );
    let (_, doc) = replay_json_file(
        &[
            "--addr",
            &redis.addr(),
            "--group",
            &steady,
            "--group",
            &behind,
            "--duration",
            "1500ms",
        ],
        "open-loop",
    );
    let g = doc["groups"].as_array().unwrap();
    let (steady, behind) = (&g[0], &g[1]);
    assert_eq!(f(steady, "offered_rps"), 400.0);
    // Never more than the schedule allows (each connection's first request is due at
    // once), and most of it on time on an idle machine.
    let n = u(steady, "requests");
    assert!(n <= 400 * 3 / 2 + 2, "{steady}");
    assert!(n >= 300, "{steady}");
    // Closed loop would have sent thousands in 1.5 s; sent on schedule, each request's
    // latency is just the round trip.
    assert!(f(&steady["latency_us"], "mean") < 20_000.0, "{steady}");
    // Behind: at most one miss per 20 ms was served, the rest waited. Their latency
    // counts from when they were due, so the mean is far above the 20 ms penalty (the
    // k-th request waits ~15 k ms), where closed loop would report ~20 ms.
    assert!(u(behind, "fills") <= 1500 / 20 + 1, "{behind}");
    assert!(u(behind, "late_requests") > 10, "{behind}");
    assert!(f(behind, "max_lag_ms") > 300.0, "{behind}");
    assert!(f(&behind["latency_us"], "mean") > 150_000.0, "{behind}");

    // A rate needs one request in flight per connection, and must be above 0.
    let addr = redis.addr();
    let cpp = cpp.to_str().unwrap();
    for bad in [
        vec![cpp, "--addr", &addr, "--rate", "100", "--pipeline", "2"],
        vec![cpp, "--addr", &addr, "--rate", "0"],
        vec![cpp, "--addr", &addr, "--rate", "fast"],
    ] {
        let out = replay(&bad);
        assert!(!out.status.success(), "{bad:?}");
    }
}

/// A minimal Redis-protocol server with tenants: AUTH and SET answer +OK, GET always
/// misses, `TENANT INFO name` answers `# name`, `target:<GETs so far>` and `k:5` as a
/// bulk string. One thread per connection; it lives until the test process exits.
fn fake_tenant_server() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let gets = Arc::new(AtomicU64::new(0));
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { return };
            let gets = gets.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut line = String::new();
                loop {
                    line.clear();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let n: usize = line.trim()[1..].parse().unwrap();
                    let mut args = Vec::with_capacity(n);
                    for _ in 0..n {
                        line.clear();
                        r.read_line(&mut line).unwrap();
                        let len: usize = line.trim()[1..].parse().unwrap();
                        let mut buf = vec![0; len + 2];
                        r.read_exact(&mut buf).unwrap();
                        buf.truncate(len);
                        args.push(String::from_utf8(buf).unwrap());
                    }
                    let reply = match args[0].to_ascii_uppercase().as_str() {
                        "GET" => {
                            gets.fetch_add(1, Ordering::Relaxed);
                            "$-1\r\n".to_owned()
                        }
                        "TENANT" if args.len() == 3 && args[1] == "INFO" => {
                            let body = format!(
                                "# {}\r\ntarget:{}\r\nk:5\r\n",
                                args[2],
                                gets.load(Ordering::Relaxed)
                            );
                            format!("${}\r\n{body}\r\n", body.len())
                        }
                        _ => "+OK\r\n".to_owned(),
                    };
                    if s.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn poll_tenants_records_tenant_info_over_time() {
    let addr = fake_tenant_server();
    let cs = trace("lirs_cs");
    // 300 misses at 2 ms on one connection: about 0.6 s, polled every 0.1 s.
    let a = format!(
        "name=A,trace={},user=alice,pass=x,penalty=2ms,connections=1,limit=300",
        cs.display()
    );
    let b = format!(
        "name=B,trace={},user=bob,pass=y,tenant=bobs,penalty=2ms,connections=1,limit=300",
        cs.display()
    );
    let anon = format!("name=C,trace={},limit=10", cs.display());
    let (table, doc) = replay_json_file(
        &[
            "--addr",
            &addr,
            "--group",
            &a,
            "--group",
            &b,
            "--group",
            &anon,
            "--poll-tenants",
            "0.1",
        ],
        "poll",
    );
    assert_eq!(u(&doc["groups"][0], "fills"), 300);
    let polls = &doc["tenant_polls"];
    assert!((f(polls, "interval_s") - 0.1).abs() < 1e-9);
    assert_eq!(u(polls, "errors"), 0, "{polls}");
    let samples = polls["samples"].as_array().unwrap();
    // Only groups with a user are polled, under the user name or tenant=.
    let of = |t: &str| -> Vec<&Value> {
        samples
            .iter()
            .filter(|s| s["tenant"].as_str() == Some(t))
            .collect()
    };
    let (alice, bobs) = (of("alice"), of("bobs"));
    assert_eq!(alice.len() + bobs.len(), samples.len(), "{polls}");
    assert!(alice.len() >= 3, "{} samples", alice.len());
    assert_eq!(alice[0]["group"].as_str(), Some("A"));
    assert_eq!(bobs[0]["group"].as_str(), Some("B"));
    assert_eq!(alice[0]["lines"][0].as_str(), Some("# alice"));
    assert_eq!(alice[0]["fields"]["k"].as_str(), Some("5"));
    // Over time: timestamps and the server's counter rise; the last sample is taken
    // after the replay, so it has seen every GET.
    let series: Vec<(f64, u64)> = alice
        .iter()
        .map(|s| {
            (
                f(s, "t_s"),
                s["fields"]["target"].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect();
    assert!(
        series
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
        "{series:?}"
    );
    assert!(series[0].1 < 600, "{series:?}");
    assert_eq!(series.last().unwrap().1, 610, "{series:?}");
    assert!(table.contains("TENANT INFO:"), "{table}");
}

#[test]
fn poll_tenants_ignores_servers_without_tenants() {
    let acl = ["--user", "t1", "on", ">pw1", "~*", "+@all"];
    let Some(redis) = Redis::start(&acl) else {
        return;
    };
    let cs = trace("lirs_cs");
    let g1 = format!("trace={},user=t1,pass=pw1,limit=2000", cs.display());
    let (_, doc) = replay_json_file(
        &[
            "--addr",
            &redis.addr(),
            "--group",
            &g1,
            "--poll-tenants",
            "0.05",
        ],
        "poll-redis",
    );
    assert_eq!(u(&doc["groups"][0], "requests"), 2_000);
    let polls = &doc["tenant_polls"];
    assert_eq!(polls["samples"].as_array().unwrap().len(), 0, "{polls}");
    assert!(u(polls, "errors") >= 1, "{polls}");
    let e = polls["first_error"].as_str().unwrap();
    assert!(e.contains("unknown command"), "{e}");
}

// ---------------------------------------------------------------------------------
// Against `augur serve` with tenants (ACL users, kRedis partitioning)
// ---------------------------------------------------------------------------------

/// An `augur serve` child process, killed on drop.
struct Augur {
    child: Child,
    port: u16,
}

impl Drop for Augur {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Augur {
    /// Starts `augur serve` with `flags` on a fresh port; ready when it reports this
    /// child's process id.
    fn start(flags: &[&str]) -> Augur {
        for _attempt in 0..5 {
            let port = fresh_port();
            let mut augur = Augur {
                child: Command::new(env!("CARGO_BIN_EXE_augur"))
                    .args(["serve", "--port", &port.to_string(), "--bind", "127.0.0.1"])
                    .args(flags)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("spawning augur serve"),
                port,
            };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if augur.child.try_wait().unwrap().is_some() {
                    break;
                }
                match server_pid(port, None) {
                    Some(pid) if pid == augur.child.id() => return augur,
                    Some(_) => break,
                    None => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        }
        panic!("augur serve did not start (5 ports tried); flags {flags:?}");
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// One command's reply through the same minimal client as [`Redis::command`].
    fn command(&self, auth: Option<&[&str]>, args: &[&str]) -> String {
        Redis::command_on(self.port, auth, args)
    }
}

impl Redis {
    fn command_on(port: u16, auth: Option<&[&str]>, args: &[&str]) -> String {
        // Borrow the client of `Redis::command` without a Redis child to own.
        let r = std::mem::ManuallyDrop::new(Redis {
            child: Command::new("true").spawn().unwrap(),
            port,
        });
        r.command(auth, args)
    }
}

#[test]
fn tenant_groups_against_augur_serve_with_kredis_and_polls() {
    // Two tenants with the same key names (no prefix): the server keeps them apart.
    let augur = Augur::start(&[
        "--user",
        "t1 on >pw1 ~* &* +@all",
        "--user",
        "t2 on >pw2 ~* &* +@all",
        "--maxmemory",
        "64mb",
        "--tenant-partitioning",
        "kredis",
        "--tenant-interval-ms",
        "100",
        "--tenant-sample-rate",
        "1",
    ]);
    let (cpp, cs) = (trace("lirs_cpp"), trace("lirs_cs"));
    let g1 = format!(
        "name=remote,trace={},user=t1,pass=pw1,penalty=500us,connections=2",
        cpp.display()
    );
    let g2 = format!(
        "name=local,trace={},user=t2,pass=pw2,penalty=50us,connections=2",
        cs.display()
    );
    let (_, doc) = replay_json_file(
        &[
            "--addr",
            &augur.addr(),
            "--group",
            &g1,
            "--group",
            &g2,
            "--poll-tenants",
            "0.1",
        ],
        "augur-tenants",
    );
    let g = doc["groups"].as_array().unwrap();
    let samples = doc["tenant_polls"]["samples"].as_array().unwrap();
    assert_eq!(
        u(&doc["tenant_polls"], "errors"),
        0,
        "{}",
        doc["tenant_polls"]
    );
    for (grp, name, user, pass, penalty) in [
        (&g[0], "lirs_cpp", "t1", "pw1", 500.0),
        (&g[1], "lirs_cs", "t2", "pw2", 50.0),
    ] {
        let keys = trace_keys(name, usize::MAX);
        let misses = lru_misses(&keys, 1 << 20);
        assert_eq!(u(grp, "requests"), keys.len() as u64, "{grp}");
        assert_eq!(u(grp, "hits"), keys.len() as u64 - misses, "{grp}");
        assert_eq!(u(grp, "errors"), 0, "{grp}");
        // The server's own per-tenant figures agree with the client's.
        assert_eq!(
            augur.command(Some(&[user, pass]), &["DBSIZE"]).trim(),
            format!(":{misses}")
        );
        let mine: Vec<&Value> = samples
            .iter()
            .filter(|s| s["tenant"].as_str() == Some(user))
            .collect();
        assert!(mine.len() >= 2, "{} samples of {user}", mine.len());
        let last = &mine.last().unwrap()["fields"];
        let num = |k: &str| -> f64 {
            last[k]
                .as_str()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{k} in {last}"))
        };
        assert_eq!(num("hits") as u64, u(grp, "hits"), "{last}");
        assert_eq!(num("misses") as u64, misses, "{last}");
        assert_eq!(num("keys") as u64, misses, "{last}");
        assert_eq!(last["name"].as_str(), Some(user));
        // The tuner ran and installed targets and Ks from the K set (`interval:target:K`
        // each interval; a tenant gone idle at the end gets its minimum, 0).
        assert!(num("intervals") >= 1.0, "{last}");
        let history: Vec<(u64, u64)> = last["target_history"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .map(|e| {
                let v: Vec<u64> = e.split(':').map(|x| x.parse().unwrap()).collect();
                (v[1], v[2])
            })
            .collect();
        assert!(history.iter().any(|&(t, _)| t > 0), "{last}");
        assert!(history
            .iter()
            .all(|&(t, k)| t <= 64 << 20 && [1, 2, 4, 8, 16].contains(&k)));
        assert!([1.0, 2.0, 4.0, 8.0, 16.0].contains(&num("k")), "{last}");
        // The refill delay the server measured is the replay's penalty (plus a round
        // trip), once an interval has folded it in.
        if let Some(lat) = last["miss_latency_us"]
            .as_str()
            .and_then(|v| v.parse::<f64>().ok())
        {
            assert!(
                lat >= penalty * 0.9,
                "{user}: measured {lat} us for {penalty} us"
            );
        }
    }
    // Both tenants hold "k:0", each its own.
    for (user, pass) in [("t1", "pw1"), ("t2", "pw2")] {
        assert_eq!(
            augur.command(Some(&[user, pass]), &["GET", "k:0"]),
            "$1\r\na"
        );
    }
    assert_eq!(augur.command(None, &["DBSIZE"]).trim(), ":0");

    // A wrong password fails the run with the server's error.
    let bad = g1.replace("pass=pw1", "pass=nope");
    let out = replay(&["--addr", &augur.addr(), "--group", &bad]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("WRONGPASS"), "{err}");
}

#[test]
fn split_divides_one_trace_between_tenants() {
    let augur = Augur::start(&[
        "--user",
        "a on >p ~* &* +@all",
        "--user",
        "b on >p ~* &* +@all",
        "--user",
        "c on >p ~* &* +@all",
        "--tenant-partitioning",
        "static",
    ]);
    let cpp = trace("lirs_cpp");
    let mut args = vec!["--addr".to_string(), augur.addr()];
    for (i, user) in ["a", "b", "c"].iter().enumerate() {
        args.push("--group".into());
        args.push(format!(
            "name={user},trace={},user={user},pass=p,split={i}/3,limit=6000",
            cpp.display()
        ));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_, doc) = replay_json_file(&args, "split");
    let g = doc["groups"].as_array().unwrap();
    let keys = trace_keys("lirs_cpp", 6000);
    // The parts partition the prefix: requests and distinct keys add up, no part is
    // empty, and each tenant holds exactly its part's keys.
    assert_eq!(
        g.iter().map(|x| u(x, "requests")).sum::<u64>(),
        keys.len() as u64
    );
    assert_eq!(
        g.iter().map(|x| u(x, "fills")).sum::<u64>(),
        lru_misses(&keys, 1 << 20)
    );
    for (x, user) in g.iter().zip(["a", "b", "c"]) {
        assert!(u(x, "requests") > 1000, "{x}");
        assert_eq!(
            x["split"].as_str().unwrap(),
            format!("{}/3", user.as_bytes()[0] - b'a')
        );
        assert_eq!(
            augur.command(Some(&[user, "p"]), &["DBSIZE"]).trim(),
            format!(":{}", u(x, "fills"))
        );
    }
}
