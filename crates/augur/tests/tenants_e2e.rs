//! End-to-end tests of multi-tenancy (issue 8): tenants are ACL users, each with its own
//! keyspace, limits, online curves and measured miss cost. The server runs in-process on
//! an ephemeral port and is driven over real sockets with the `redis` crate, logged in
//! as each tenant the way applications would (`redis://user:pass@host/`).

mod common;

use augur_server::ServerConfig;
use common::{err, info_field, q, TestServer};
use redis::aio::MultiplexedConnection;
use std::collections::HashMap;
use std::time::Duration;

/// TENANT INFO as a map.
async fn tenant_info(con: &mut MultiplexedConnection, name: &str) -> HashMap<String, String> {
    q(con, &["TENANT", "INFO", name])
        .await
        .expect("TENANT INFO")
}

fn num(info: &HashMap<String, String>, field: &str) -> f64 {
    info.get(field)
        .unwrap_or_else(|| panic!("no {field} in {info:?}"))
        .parse()
        .unwrap_or_else(|_| panic!("{field} = {:?} is not a number", info[field]))
}

/// Waits until the profiler has completed `n` more intervals.
async fn wait_intervals(con: &mut MultiplexedConnection, tenant: &str, n: u64) {
    let start = num(&tenant_info(con, tenant).await, "intervals") as u64;
    for _ in 0..400 {
        tokio::time::sleep(Duration::from_millis(25)).await;
        if num(&tenant_info(con, tenant).await, "intervals") as u64 >= start + n {
            return;
        }
    }
    panic!("the profiler did not run {n} intervals");
}

fn two_tenants() -> ServerConfig {
    ServerConfig {
        maxmemory_policy: augur_store::EvictionPolicy::AllKeysLru,
        users: vec![
            "app1 on >pw1 ~* &* +@all -@admin".into(),
            "app2 on >pw2 ~* &* +@all -@admin".into(),
        ],
        ..Default::default()
    }
}

/// [`two_tenants`] profiled at the fixed sampling rate `rate` (not `auto`, which the CPU
/// budget may lower under a test's load) with intervals of `interval_ms`.
fn two_tenants_profiled(rate: f64, interval_ms: u64) -> ServerConfig {
    ServerConfig {
        tenant_sample_rate: rate,
        tenant_sample_rate_auto: false,
        tenant_interval_ms: interval_ms,
        ..two_tenants()
    }
}

#[tokio::test]
async fn every_keyspace_command_sees_only_the_callers_tenant() {
    let s = TestServer::start(two_tenants()).await;
    let mut a = s.con_as("app1", "pw1").await;
    let mut b = s.con_as("app2", "pw2").await;
    let mut d = s.con().await;

    assert_eq!(
        q::<String>(&mut a, &["ACL", "WHOAMI"]).await.unwrap(),
        "app1"
    );
    assert_eq!(
        q::<String>(&mut b, &["ACL", "WHOAMI"]).await.unwrap(),
        "app2"
    );
    assert_eq!(
        q::<String>(&mut d, &["ACL", "WHOAMI"]).await.unwrap(),
        "default"
    );

    // The same key name in three tenants: three keys.
    for (con, v) in [(&mut a, "A"), (&mut b, "B"), (&mut d, "D")] {
        let _: () = q(con, &["SET", "shared", v]).await.unwrap();
    }
    let _: () = q(&mut a, &["SET", "only-a", "1"]).await.unwrap();
    let _: () = q(&mut a, &["MSET", "a1", "x", "a2", "y"]).await.unwrap();
    assert_eq!(q::<String>(&mut a, &["GET", "shared"]).await.unwrap(), "A");
    assert_eq!(q::<String>(&mut b, &["GET", "shared"]).await.unwrap(), "B");
    assert_eq!(q::<String>(&mut d, &["GET", "shared"]).await.unwrap(), "D");
    assert_eq!(
        q::<Option<String>>(&mut b, &["GET", "only-a"])
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        q::<i64>(&mut b, &["EXISTS", "only-a", "a1", "shared"])
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        q::<i64>(&mut a, &["EXISTS", "only-a", "a1", "shared"])
            .await
            .unwrap(),
        3
    );

    // KEYS, SCAN, RANDOMKEY, DBSIZE.
    let mut keys: Vec<String> = q(&mut a, &["KEYS", "*"]).await.unwrap();
    keys.sort();
    assert_eq!(keys, ["a1", "a2", "only-a", "shared"]);
    let keys: Vec<String> = q(&mut b, &["KEYS", "*"]).await.unwrap();
    assert_eq!(keys, ["shared"]);
    let (cursor, page): (u64, Vec<String>) =
        q(&mut b, &["SCAN", "0", "COUNT", "1000"]).await.unwrap();
    assert_eq!((cursor, page), (0, vec!["shared".to_string()]));
    let mut scanned = Vec::new();
    let mut cursor = "0".to_string();
    loop {
        let (next, page): (String, Vec<String>) =
            q(&mut a, &["SCAN", &cursor, "COUNT", "2"]).await.unwrap();
        scanned.extend(page);
        if next == "0" {
            break;
        }
        cursor = next;
    }
    scanned.sort();
    assert_eq!(scanned, ["a1", "a2", "only-a", "shared"]);
    for _ in 0..20 {
        assert_eq!(q::<String>(&mut b, &["RANDOMKEY"]).await.unwrap(), "shared");
    }
    assert_eq!(q::<i64>(&mut a, &["DBSIZE"]).await.unwrap(), 4);
    assert_eq!(q::<i64>(&mut b, &["DBSIZE"]).await.unwrap(), 1);
    assert_eq!(q::<i64>(&mut d, &["DBSIZE"]).await.unwrap(), 1);

    // INFO keyspace counts the caller's keys only.
    let info: String = q(&mut a, &["INFO", "keyspace"]).await.unwrap();
    assert!(info.contains("db0:keys=4,"), "{info}");
    let info: String = q(&mut b, &["INFO", "keyspace"]).await.unwrap();
    assert!(info.contains("db0:keys=1,"), "{info}");

    // SELECT: a tenant's databases live inside its namespace.
    let _: () = q(&mut a, &["SELECT", "3"]).await.unwrap();
    let _: () = q(&mut a, &["SET", "in-db3", "1"]).await.unwrap();
    assert_eq!(q::<i64>(&mut a, &["DBSIZE"]).await.unwrap(), 1);
    let _: () = q(&mut b, &["SELECT", "3"]).await.unwrap();
    assert_eq!(q::<i64>(&mut b, &["DBSIZE"]).await.unwrap(), 0);
    assert_eq!(
        q::<Option<String>>(&mut b, &["GET", "in-db3"])
            .await
            .unwrap(),
        None
    );
    let _: () = q(&mut a, &["SELECT", "0"]).await.unwrap();
    let _: () = q(&mut b, &["SELECT", "0"]).await.unwrap();

    // DEL in one tenant leaves the others' key of the same name.
    assert_eq!(q::<i64>(&mut b, &["DEL", "shared", "a1"]).await.unwrap(), 1);
    assert_eq!(q::<String>(&mut a, &["GET", "shared"]).await.unwrap(), "A");
    assert_eq!(q::<String>(&mut d, &["GET", "shared"]).await.unwrap(), "D");

    // FLUSHDB and FLUSHALL empty the caller's tenant only.
    let _: () = q(&mut b, &["SET", "b-key", "1"]).await.unwrap();
    let _: () = q(&mut b, &["FLUSHALL"]).await.unwrap();
    assert_eq!(q::<i64>(&mut b, &["DBSIZE"]).await.unwrap(), 0);
    assert_eq!(q::<i64>(&mut a, &["DBSIZE"]).await.unwrap(), 4);
    let _: () = q(&mut a, &["SELECT", "3"]).await.unwrap();
    assert_eq!(q::<i64>(&mut a, &["DBSIZE"]).await.unwrap(), 1);
    let _: () = q(&mut a, &["SELECT", "0"]).await.unwrap();
    let _: () = q(&mut d, &["FLUSHDB"]).await.unwrap();
    assert_eq!(q::<i64>(&mut d, &["DBSIZE"]).await.unwrap(), 0);
    assert_eq!(q::<i64>(&mut a, &["DBSIZE"]).await.unwrap(), 4);
    let _: () = q(&mut a, &["FLUSHALL"]).await.unwrap();
    let _: () = q(&mut a, &["SELECT", "3"]).await.unwrap();
    assert_eq!(q::<i64>(&mut a, &["DBSIZE"]).await.unwrap(), 0);

    // Per-tenant memory adds up to used_memory.
    let _: () = q(&mut a, &["SET", "k", &"x".repeat(1000)]).await.unwrap();
    let _: () = q(&mut b, &["SET", "k", &"y".repeat(5000)]).await.unwrap();
    let ua = num(&tenant_info(&mut d, "app1").await, "used_memory");
    let ub = num(&tenant_info(&mut d, "app2").await, "used_memory");
    let ud = num(&tenant_info(&mut d, "default").await, "used_memory");
    assert!(ua >= 1000.0 && ub >= 5000.0 && ub > ua, "{ua} {ub}");
    let info: String = q(&mut d, &["INFO", "memory"]).await.unwrap();
    let used: f64 = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(ua + ub + ud, used, "tenants' bytes must sum to used_memory");
    s.stop().await;
}

#[tokio::test]
async fn hello_auth_and_bad_credentials() {
    let s = TestServer::start(two_tenants()).await;
    let mut d = s.con().await;
    // HELLO 3 AUTH user pass switches the connection to that tenant.
    let _: redis::Value = q(&mut d, &["HELLO", "3", "AUTH", "app2", "pw2"])
        .await
        .unwrap();
    assert_eq!(
        q::<String>(&mut d, &["ACL", "WHOAMI"]).await.unwrap(),
        "app2"
    );
    // A failed AUTH leaves the connection as it was.
    assert_eq!(
        err(&mut d, &["AUTH", "app1", "wrong"]).await,
        "WRONGPASS invalid username-password pair or user is disabled."
    );
    assert_eq!(
        err(&mut d, &["AUTH", "nosuchuser", "pw"]).await,
        "WRONGPASS invalid username-password pair or user is disabled."
    );
    assert_eq!(
        err(&mut d, &["HELLO", "3", "AUTH", "app1", "nope"]).await,
        "WRONGPASS invalid username-password pair or user is disabled."
    );
    assert_eq!(
        q::<String>(&mut d, &["ACL", "WHOAMI"]).await.unwrap(),
        "app2"
    );
    let _: () = q(&mut d, &["AUTH", "app1", "pw1"]).await.unwrap();
    assert_eq!(
        q::<String>(&mut d, &["ACL", "WHOAMI"]).await.unwrap(),
        "app1"
    );
    s.stop().await;
}

#[tokio::test]
async fn acl_and_tenant_administration_and_bad_input() {
    let s = TestServer::start(two_tenants()).await;
    let mut d = s.con().await;
    let mut a = s.con_as("app1", "pw1").await;

    // ACL USERS / GETUSER / LIST.
    let users: Vec<String> = q(&mut d, &["ACL", "USERS"]).await.unwrap();
    assert_eq!(users, ["app1", "app2", "default"]);
    let list: Vec<String> = q(&mut d, &["ACL", "LIST"]).await.unwrap();
    assert!(
        list.iter().any(|l| l.starts_with("user app1 on #")),
        "{list:?}"
    );
    let getuser: redis::Value = q(&mut d, &["ACL", "GETUSER", "app1"]).await.unwrap();
    assert!(format!("{getuser:?}").contains("flags"), "{getuser:?}");
    assert_eq!(
        q::<Option<String>>(&mut d, &["ACL", "GETUSER", "nobody"])
            .await
            .unwrap(),
        None
    );

    // Malformed ACL rules: Redis's wording.
    let e = err(&mut d, &["ACL", "SETUSER", "app3", "bogusrule"]).await;
    assert!(
        e.starts_with("ERR Error in ACL SETUSER modifier 'bogusrule'"),
        "{e}"
    );
    assert_eq!(
        err(&mut d, &["ACL", "DELUSER", "default"]).await,
        "ERR The 'default' user cannot be removed"
    );

    // TENANT SET / GET / LIST.
    let _: () = q(&mut d, &["CONFIG", "SET", "maxmemory", "100mb"])
        .await
        .unwrap();
    let _: () = q(
        &mut d,
        &[
            "TENANT",
            "SET",
            "app1",
            "maxmemory",
            "20mb",
            "min-memory",
            "5mb",
            "miss-penalty",
            "2ms",
        ],
    )
    .await
    .unwrap();
    let got: HashMap<String, String> = q(&mut d, &["TENANT", "GET", "app1"]).await.unwrap();
    assert_eq!(got["maxmemory"], (20u64 << 20).to_string());
    assert_eq!(got["min-memory"], (5u64 << 20).to_string());
    assert!(got["miss-penalty"].starts_with("2000"), "{got:?}");
    let names: Vec<String> = q(&mut d, &["TENANT", "LIST"]).await.unwrap();
    assert_eq!(names.len(), 3);
    assert_eq!(
        err(&mut d, &["TENANT", "INFO", "ghost"]).await,
        "ERR No such tenant 'ghost'"
    );
    assert_eq!(
        err(&mut d, &["TENANT", "SET", "ghost", "maxmemory", "1mb"]).await,
        "ERR No such tenant 'ghost'"
    );
    let e = err(&mut d, &["TENANT", "SET", "app1", "maxmemory", "lots"]).await;
    assert!(e.starts_with("ERR TENANT SET failed"), "{e}");
    let e = err(&mut d, &["TENANT", "SET", "app1", "colour", "blue"]).await;
    assert!(e.starts_with("ERR TENANT SET failed"), "{e}");
    assert_eq!(
        err(&mut d, &["TENANT", "SET", "app1", "maxmemory"]).await,
        "ERR wrong number of arguments for 'tenant|set' command"
    );
    // The sum of min-memory may not exceed maxmemory; nothing changes on refusal.
    let e = err(&mut d, &["TENANT", "SET", "app2", "min-memory", "96mb"]).await;
    assert!(e.contains("min-memory"), "{e}");
    let got: HashMap<String, String> = q(&mut d, &["TENANT", "GET", "app2"]).await.unwrap();
    assert_eq!(got["min-memory"], "0");

    // A tenant may read its own figures and nothing else, and may not administer.
    let e = err(&mut a, &["TENANT", "SET", "app1", "maxmemory", "1gb"]).await;
    assert!(e.starts_with("NOPERM"), "{e}");
    let e = err(&mut a, &["TENANT", "INFO", "app2"]).await;
    assert!(e.starts_with("NOPERM"), "{e}");
    let e = err(&mut a, &["ACL", "SETUSER", "app2", "off"]).await;
    assert!(e.starts_with("NOPERM"), "{e}");
    let own = tenant_info(&mut a, "app1").await;
    assert_eq!(own["name"], "app1");
    let visible: Vec<String> = q(&mut a, &["TENANT", "LIST"]).await.unwrap();
    assert_eq!(visible, ["app1"]);

    // A new user is a new, empty tenant; deleting it closes its connections and drops
    // its keys; a re-created user of the same name starts empty.
    let _: () = q(
        &mut d,
        &["ACL", "SETUSER", "app3", "on", ">pw3", "~*", "&*", "+@all"],
    )
    .await
    .unwrap();
    let mut c3 = s.con_as("app3", "pw3").await;
    let _: () = q(&mut c3, &["SET", "k3", "v"]).await.unwrap();
    assert_eq!(
        q::<i64>(&mut d, &["ACL", "DELUSER", "app3", "nobody"])
            .await
            .unwrap(),
        1
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        q::<String>(&mut c3, &["GET", "k3"]).await.is_err(),
        "a deleted tenant's connection must be closed"
    );
    let _: () = q(
        &mut d,
        &["ACL", "SETUSER", "app3", "on", ">pw3", "~*", "&*", "+@all"],
    )
    .await
    .unwrap();
    let mut c3 = s.con_as("app3", "pw3").await;
    assert_eq!(q::<i64>(&mut c3, &["DBSIZE"]).await.unwrap(), 0);

    // A disabled user cannot log in.
    let _: () = q(&mut d, &["ACL", "SETUSER", "app3", "off"]).await.unwrap();
    let mut fresh = s.con().await;
    assert_eq!(
        err(&mut fresh, &["AUTH", "app3", "pw3"]).await,
        "WRONGPASS invalid username-password pair or user is disabled."
    );

    // The other tenants' data survived all of it.
    assert_eq!(q::<i64>(&mut a, &["DBSIZE"]).await.unwrap(), 0);
    let _: () = q(&mut a, &["SET", "still", "here"]).await.unwrap();
    assert_eq!(
        q::<String>(&mut a, &["GET", "still"]).await.unwrap(),
        "here"
    );
    s.stop().await;
}

/// Fills `con` with `n` keys of `size` bytes named `prefix:i`.
async fn fill(con: &mut MultiplexedConnection, prefix: &str, n: usize, size: usize) {
    let v = "v".repeat(size);
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let mut p = redis::pipe();
        for i in chunk {
            p.cmd("SET").arg(format!("{prefix}:{i}")).arg(&v).ignore();
        }
        let _: () = p.query_async(con).await.unwrap();
    }
}

#[tokio::test]
async fn static_limits_keep_one_tenants_load_away_from_anothers_keys() {
    let mut cfg = two_tenants();
    cfg.maxmemory = 4 << 20;
    cfg.tenant_partitioning = augur_store::Partitioning::Static;
    cfg.tenant_lines = vec!["app1 maxmemory 2mb".into(), "app2 maxmemory 2mb".into()];
    let s = TestServer::start(cfg).await;
    let mut d = s.con().await;
    let mut a = s.con_as("app1", "pw1").await;
    let mut b = s.con_as("app2", "pw2").await;
    // app2 holds ~1 MB, under its 2 MB.
    fill(&mut b, "b", 1000, 1000).await;
    assert_eq!(q::<i64>(&mut b, &["DBSIZE"]).await.unwrap(), 1000);
    // app1 writes 10 MB: it evicts only its own keys.
    fill(&mut a, "a", 10_000, 1000).await;
    assert_eq!(q::<i64>(&mut b, &["DBSIZE"]).await.unwrap(), 1000);
    let ia = tenant_info(&mut d, "app1").await;
    let ib = tenant_info(&mut d, "app2").await;
    assert_eq!(num(&ib, "evicted_keys"), 0.0);
    assert!(num(&ia, "evicted_keys") > 5000.0, "{ia:?}");
    assert!(num(&ia, "used_memory") <= (2 << 20) as f64, "{ia:?}");

    // CONFIG SET tenant-partitioning off, live: free competition, like one Redis with
    // prefixed keys: app1's load now evicts app2's keys too.
    let _: () = q(&mut d, &["CONFIG", "SET", "tenant-partitioning", "off"])
        .await
        .unwrap();
    let _: () = q(&mut d, &["TENANT", "SET", "app1", "maxmemory", "0"])
        .await
        .unwrap();
    fill(&mut a, "a2", 10_000, 1000).await;
    let left = q::<i64>(&mut b, &["DBSIZE"]).await.unwrap();
    assert!(left < 1000, "off mode: app2 kept {left} of 1000 keys");
    s.stop().await;
}

#[tokio::test]
async fn miss_latency_is_the_refill_delay() {
    let cfg = two_tenants_profiled(1.0, 200);
    let s = TestServer::start(cfg).await;
    let mut d = s.con().await;
    let mut a = s.con_as("app1", "pw1").await;
    // 30 misses, each refilled 25 ms later (what an application does after reading its
    // database); and 10 misses never refilled (not timed).
    for i in 0..30 {
        let k = format!("m{i}");
        assert_eq!(
            q::<Option<String>>(&mut a, &["GET", &k]).await.unwrap(),
            None
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
        let _: () = q(&mut a, &["SET", &k, "refilled"]).await.unwrap();
    }
    for i in 0..10 {
        let _: Option<String> = q(&mut a, &["GET", &format!("never{i}")]).await.unwrap();
    }
    wait_intervals(&mut d, "app1", 2).await;
    let info = tenant_info(&mut d, "app1").await;
    let lat = num(&info, "miss_latency_us");
    assert_eq!(num(&info, "miss_latency_samples"), 30.0, "{info:?}");
    assert!(
        (25_000.0..40_000.0).contains(&lat),
        "measured {lat} us for a 25 ms refill"
    );
    assert_eq!(
        num(&info, "miss_penalty_us"),
        lat,
        "the tuner uses what it measured"
    );
    // app2 never refilled: its configured penalty applies.
    let _: () = q(&mut d, &["TENANT", "SET", "app2", "miss-penalty", "3ms"])
        .await
        .unwrap();
    wait_intervals(&mut d, "app1", 1).await;
    let info = tenant_info(&mut d, "app2").await;
    assert_eq!(info["miss_latency_us"], "");
    assert_eq!(num(&info, "miss_penalty_us"), 3000.0);
    s.stop().await;
}

/// A deterministic workload: Zipf-like keys, GET then SET on a miss (a refill), some
/// overwrites with a different size. Returns the reference stream as the profiler sees
/// it: (key, bytes charged) for every GET hit and every SET.
async fn cache_workload(con: &mut MultiplexedConnection, n: usize) -> Vec<(String, u64)> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let mut sizes: HashMap<String, usize> = HashMap::new();
    let mut refs = Vec::new();
    for _ in 0..n {
        // Zipf-ish: the square of a uniform over 2000 keys.
        let u: f64 = rng.gen();
        let key = format!("key:{}", (u * u * 2000.0) as u64);
        let overwrite = rng.gen_bool(0.05);
        let size = 10 + (rng.gen::<u32>() % 300) as usize;
        let charged = |len: usize| augur_store::charged_bytes(0, key.len(), len, false);
        if overwrite {
            let _: () = q(con, &["SET", &key, &"o".repeat(size)]).await.unwrap();
            sizes.insert(key.clone(), size);
            refs.push((key.clone(), charged(size)));
            continue;
        }
        let got: Option<Vec<u8>> = q(con, &["GET", &key]).await.unwrap();
        match got {
            Some(v) => {
                assert_eq!(v.len(), sizes[&key]);
                refs.push((key.clone(), charged(v.len())));
            }
            None => {
                let _: () = q(con, &["SET", &key, &"r".repeat(size)]).await.unwrap();
                sizes.insert(key.clone(), size);
                refs.push((key.clone(), charged(size)));
            }
        }
    }
    refs
}

#[tokio::test]
async fn online_curve_equals_offline_augur_mrc_on_the_same_references() {
    let mut cfg = two_tenants_profiled(1.0, 200);
    cfg.tenant_k_set = vec![1, 2, 4, 16];
    let s = TestServer::start(cfg).await;
    let mut d = s.con().await;
    let mut a = s.con_as("app1", "pw1").await;
    let refs = cache_workload(&mut a, 6000).await;
    wait_intervals(&mut d, "app1", 2).await;
    let info = tenant_info(&mut d, "app1").await;
    assert_eq!(
        num(&info, "sampled_references"),
        refs.len() as f64,
        "{info:?}"
    );
    assert_eq!(num(&info, "dropped_samples"), 0.0);

    // The same references, offline, with the profiler's seed (0x6b727221, KRR's
    // default).
    let dir = std::env::temp_dir().join(format!("augur-tenant-mrc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("refs.csv");
    let mut text = String::new();
    for (k, b) in &refs {
        text.push_str(&format!("{k},{b}\n"));
    }
    std::fs::write(&trace, text).unwrap();
    let out = dir.join("offline.csv");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_augur"))
        .args([
            "mrc",
            trace.to_str().unwrap(),
            "--format",
            "csv:key=0,size=1",
        ])
        .args([
            "--model",
            "krr",
            "--bytes",
            "--k",
            "1,2,4,16",
            "--k-exponent",
            "redis",
        ])
        .args([
            "--rate",
            "1",
            "--seed",
            "1802662433",
            "--out",
            out.to_str().unwrap(),
        ])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let offline = std::fs::read_to_string(&out).unwrap();
    let mut by_k: HashMap<u32, Vec<(String, f64)>> = HashMap::new();
    for line in offline.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        by_k.entry(f[1].parse().unwrap())
            .or_default()
            .push((f[2].to_string(), f[3].parse().unwrap()));
    }
    assert_eq!(by_k.len(), 4);
    for k in [1u32, 2, 4, 16] {
        let online: Vec<(String, String)> = q(&mut d, &["TENANT", "MRC", "app1", &k.to_string()])
            .await
            .unwrap();
        let want = &by_k[&k];
        assert!(want.len() > 10, "K={k}: {} points", want.len());
        assert_eq!(online.len(), want.len(), "K={k}: number of points");
        if std::env::var("AUGUR_DEBUG_MRC").is_ok() {
            for ((size, mr), (wsize, wmr)) in online.iter().zip(want) {
                eprintln!("K={k} {size} {mr} | {wsize} {wmr}");
            }
        }
        for ((size, mr), (wsize, wmr)) in online.iter().zip(want) {
            assert_eq!(size, wsize, "K={k}: sizes as augur mrc writes them");
            let mr: f64 = mr.parse().unwrap();
            assert!(
                (mr - wmr).abs() <= 1e-6,
                "K={k} at {size}: online {mr}, offline {wmr}"
            );
        }
    }
    // The merged curve is the minimum over K at every size.
    let merged: Vec<(String, String)> = q(&mut d, &["TENANT", "MRC", "app1"]).await.unwrap();
    assert!(!merged.is_empty());
    let e = err(&mut d, &["TENANT", "MRC", "app1", "8"]).await;
    assert!(e.contains("not profiled"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
    s.stop().await;
}

/// GETs `keys` in pipelined chunks and refills the misses; returns (hits, misses).
async fn get_or_refill(
    con: &mut MultiplexedConnection,
    keys: &[String],
    size: usize,
) -> (u64, u64) {
    let v = "v".repeat(size);
    let (mut hits, mut misses) = (0, 0);
    for chunk in keys.chunks(200) {
        let mut p = redis::pipe();
        for k in chunk {
            p.cmd("GET").arg(k);
        }
        let got: Vec<Option<Vec<u8>>> = p.query_async(con).await.unwrap();
        let mut p = redis::pipe();
        for (k, g) in chunk.iter().zip(&got) {
            if g.is_none() {
                misses += 1;
                p.cmd("SET").arg(k).arg(&v).ignore();
            } else {
                hits += 1;
            }
        }
        let _: () = p.query_async(con).await.unwrap();
    }
    (hits, misses)
}

/// TENANT INFO's `model_miss_ratio` is the model's figure for the interval just ended
/// (the curve of its own references at the memory the tenant held): it follows the miss
/// ratio the tenant observed in each interval, through a change of load. Uniform reads
/// over 8000 keys of ~1 KB with 2 MB of memory miss ~3/4 of the time; then reads of 600
/// of them, which fit, hardly miss. A model in the wrong unit (objects instead of
/// charged bytes) would be off in the first phase; one over every reference since the
/// start (the cumulative curve) or over the intervals before (the forecast) would still
/// say ~3/4 in the second.
#[tokio::test]
async fn the_model_describes_each_interval_it_measured() {
    use rand::{Rng, SeedableRng};
    let cfg = ServerConfig {
        maxmemory: 2 << 20,
        maxmemory_policy: augur_store::EvictionPolicy::AllKeysLru,
        tenant_sample_rate: 0.25,
        tenant_sample_rate_auto: false,
        // One interval's model is one interval's sample: at 300 ms, with this binary's
        // other tests on the same two cores, an interval's model came out more than
        // 0.05 off what was observed now and then (0.803 vs 0.749 in CI on 2026-11-29;
        // 0.703 vs 0.753 in CI on 2026-12-01, where 23 other runs that day passed); 1 s
        // intervals hold ~3x the references, for the same 0.05 bar.
        tenant_interval_ms: 1000,
        tenant_k_set: vec![1, 2, 4],
        ..Default::default()
    };
    let s = TestServer::start(cfg).await;
    let mut d = s.con().await;
    let mut rng = rand::rngs::SmallRng::seed_from_u64(5);
    let keys: Vec<String> = (0..8000).map(|i| format!("u:{i}")).collect();
    get_or_refill(&mut d, &keys, 1000).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    for (phase, span, miss_range) in [("uniform", 8000, 0.5..0.95), ("hot", 600, 0.0..0.05)] {
        // Intervals that began before this phase mix both loads: skip two.
        let mut last = num(&tenant_info(&mut d, "default").await, "intervals") + 2.0;
        let mut checked = 0;
        while checked < 3 {
            assert!(std::time::Instant::now() < deadline, "too few intervals");
            let round: Vec<String> = (0..2000)
                .map(|_| format!("u:{}", rng.gen_range(0..span)))
                .collect();
            get_or_refill(&mut d, &round, 1000).await;
            let info = tenant_info(&mut d, "default").await;
            let n = num(&info, "intervals");
            if n <= last {
                continue;
            }
            last = n;
            let observed = num(&info, "observed_miss_ratio");
            let model = num(&info, "model_miss_ratio");
            assert!(
                miss_range.contains(&observed),
                "{phase}: observed {observed}: {info:?}"
            );
            assert!(
                (observed - model).abs() < 0.05,
                "{phase}, interval {n}: observed {observed}, model {model}: {info:?}"
            );
            checked += 1;
        }
    }
    s.stop().await;
}

#[tokio::test]
async fn kredis_installs_targets_and_k_and_tenants_follow_them() {
    use rand::{Rng, SeedableRng};
    // A quarter of the keys (375 of app1's, 3000 of app2's): enough for the curves, and
    // a profiler that keeps up with this test's pipelined load on two busy cores.
    let mut cfg = two_tenants_profiled(0.25, 300);
    cfg.maxmemory = 6 << 20;
    cfg.tenant_partitioning = augur_store::Partitioning::Kredis;
    cfg.tenant_alloc_unit = 128 << 10;
    // K = 16 is K' = 256 swaps-per-level in KRR: too slow to keep up with this test's
    // unsampled load on two cores; the small set keeps the profiler current.
    cfg.tenant_k_set = vec![1, 2, 4];
    let s = TestServer::start(cfg).await;
    let mut d = s.con().await;
    let mut a = s.con_as("app1", "pw1").await;
    let mut b = s.con_as("app2", "pw2").await;
    // app1 loops over 1500 keys (~1.5 MB charged): it hits only once it holds them all.
    // app2 reads 12000 keys uniformly (~12 MB): each MB it holds buys it 1/12 of its
    // misses. Minimising total misses gives app1 its whole working set.
    let a_keys: Vec<String> = (0..1500).map(|i| format!("a:{i}")).collect();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    let mut b_round = || -> Vec<String> {
        (0..3000)
            .map(|_| format!("b:{}", rng.gen_range(0..12_000)))
            .collect()
    };
    let start = num(&tenant_info(&mut d, "app1").await, "intervals");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while num(&tenant_info(&mut d, "app1").await, "intervals") < start + 4.0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the tuner did not run"
        );
        get_or_refill(&mut a, &a_keys, 1000).await;
        let keys = b_round();
        get_or_refill(&mut b, &keys, 1000).await;
    }
    let ia = tenant_info(&mut d, "app1").await;
    let ib = tenant_info(&mut d, "app2").await;
    let (ta, tb) = (num(&ia, "target"), num(&ib, "target"));
    let ws_a = 1500.0 * augur_store::charged_bytes(0, 5, 1000, false) as f64;
    // The tuner sees app1's working set through a 25% sample of its keys (375 expected;
    // the count is binomial, sd 17): at least 85% of it, i.e. 3 sd.
    assert!(
        ta >= 0.85 * ws_a,
        "app1's target {ta} < its working set {ws_a}: {ia:?}"
    );
    assert!(ta + tb <= (6 << 20) as f64, "{ta} + {tb}");
    assert!(tb > 0.0, "{ib:?}");
    assert!(!ia["target_history"].is_empty());
    let k = num(&ia, "k");
    assert!([1.0, 2.0, 4.0].contains(&k), "K {k}");
    assert!(num(&ia, "predicted_miss_ratio_at_target") < 0.1, "{ia:?}");
    // Under those targets app1 keeps its loop cached while app2 churns: app1's next
    // passes hit, and each tenant's memory stays at its target (plus per-shard slack).
    let mut a_hits = 0;
    for _ in 0..3 {
        let keys = b_round();
        get_or_refill(&mut b, &keys, 1000).await;
        a_hits += get_or_refill(&mut a, &a_keys, 1000).await.0;
    }
    // Held at (most of) its working set, app1's loop mostly hits; the bound scales with
    // the share of the working set the sampled model granted it.
    let share = (ta / ws_a).min(1.0);
    assert!(
        a_hits as f64 >= 0.8 * share * 4500.0,
        "app1 hit {a_hits} of 4500 with {share:.2} of its working set"
    );
    let ia = tenant_info(&mut d, "app1").await;
    let ib = tenant_info(&mut d, "app2").await;
    let slack = (256 << 10) as f64;
    let (ta, tb) = (num(&ia, "target"), num(&ib, "target"));
    let (ua, ub) = (num(&ia, "used_memory"), num(&ib, "used_memory"));
    assert!(ub <= tb + slack, "app2 used {ub} target {tb}");
    assert!(ua <= ta + slack, "app1 used {ua} target {ta}");
    s.stop().await;
}

/// CONFIG GET of one parameter's value.
async fn config_get(con: &mut MultiplexedConnection, name: &str) -> String {
    let got: HashMap<String, String> = q(con, &["CONFIG", "GET", name]).await.unwrap();
    got[name].clone()
}

/// CONFIG SET of one parameter (it must succeed).
async fn config_set(con: &mut MultiplexedConnection, name: &str, value: &str) {
    let _: () = q(con, &["CONFIG", "SET", name, value]).await.unwrap();
}

#[tokio::test]
async fn tenant_parameters_change_live() {
    let cfg = two_tenants_profiled(1.0, 150);
    let s = TestServer::start(cfg).await;
    let mut d = s.con().await;
    let mut a = s.con_as("app1", "pw1").await;
    config_set(&mut d, "tenant-k-set", "1,8").await;
    assert_eq!(config_get(&mut d, "tenant-k-set").await, "1,8");
    let e = err(&mut d, &["CONFIG", "SET", "tenant-k-set", "0,3"]).await;
    assert!(e.starts_with("ERR"), "{e}");
    // The K-switch margin: 0 (kRedis's argmin) by default, up to 1, live.
    assert_eq!(config_get(&mut d, "tenant-k-switch-margin").await, "0");
    config_set(&mut d, "tenant-k-switch-margin", "0.005").await;
    assert_eq!(config_get(&mut d, "tenant-k-switch-margin").await, "0.005");
    let e = err(&mut d, &["CONFIG", "SET", "tenant-k-switch-margin", "1.5"]).await;
    assert!(e.contains("between 0 and 1"), "{e}");
    config_set(&mut d, "tenant-objective", "mean-latency").await;
    assert_eq!(config_get(&mut d, "tenant-objective").await, "mean-latency");
    let e = err(&mut d, &["CONFIG", "SET", "tenant-objective", "fairness"]).await;
    assert!(e.contains("latency, hits, mean-latency"), "{e}");
    // The profiler's estimator: distinct by default, any of the four, live.
    assert_eq!(config_get(&mut d, "tenant-sample-adjust").await, "distinct");
    config_set(&mut d, "tenant-sample-adjust", "shards").await;
    assert_eq!(config_get(&mut d, "tenant-sample-adjust").await, "shards");
    let e = err(&mut d, &["CONFIG", "SET", "tenant-sample-adjust", "magic"]).await;
    assert!(e.contains("distinct, shards, regression, none"), "{e}");
    let e = err(
        &mut d,
        &["CONFIG", "SET", "tenant-partitioning", "sometimes"],
    )
    .await;
    assert!(e.starts_with("ERR"), "{e}");
    for i in 0..300 {
        let _: () = q(&mut a, &["SET", &format!("k{}", i % 50), "v"])
            .await
            .unwrap();
    }
    wait_intervals(&mut d, "app1", 2).await;
    let eight: Vec<(String, String)> = q(&mut d, &["TENANT", "MRC", "app1", "8"]).await.unwrap();
    assert!(!eight.is_empty());
    let e = err(&mut d, &["TENANT", "MRC", "app1", "2"]).await;
    assert!(e.contains("not profiled"), "{e}");
    // INFO tenants lists every tenant.
    let info: String = q(&mut d, &["INFO", "tenants"]).await.unwrap();
    assert!(info.contains("# Tenants"), "{info}");
    for name in ["app1", "app2", "default"] {
        assert!(info.contains(name), "{name} missing from {info}");
    }
    s.stop().await;
}

/// One HTTP request over a raw socket; returns (status line, body).
async fn http_get(port: u16, path: &str) -> (String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

/// The value of one sample line `name{labels} value` in a Prometheus exposition.
fn sample(body: &str, series: &str) -> f64 {
    body.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|r| r.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("{series} missing from:\n{body}"))
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn prometheus_metrics_per_tenant() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cfg = two_tenants();
    cfg.metrics_port = port;
    cfg.tenant_lines = vec!["app2 maxmemory 5mb".into()];
    cfg.tenant_partitioning = augur_store::Partitioning::Static;
    let s = TestServer::start(cfg).await;
    let mut a = s.con_as("app1", "pw1").await;
    for i in 0..5 {
        let _: () = q(&mut a, &["SET", &format!("k{i}"), "v"]).await.unwrap();
    }
    for i in 0..8 {
        let _: Option<String> = q(&mut a, &["GET", &format!("k{i}")]).await.unwrap();
    }
    let (status, body) = http_get(port, "/metrics").await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(
        sample(&body, r#"augur_tenant_hits_total{tenant="app1"}"#),
        5.0
    );
    assert_eq!(
        sample(&body, r#"augur_tenant_misses_total{tenant="app1"}"#),
        3.0
    );
    assert_eq!(
        sample(&body, r#"augur_tenant_writes_total{tenant="app1"}"#),
        5.0
    );
    assert_eq!(sample(&body, r#"augur_tenant_keys{tenant="app1"}"#), 5.0);
    assert_eq!(
        sample(&body, r#"augur_tenant_hits_total{tenant="app2"}"#),
        0.0
    );
    assert_eq!(
        sample(&body, r#"augur_tenant_maxmemory_bytes{tenant="app2"}"#),
        (5 << 20) as f64
    );
    let used = sample(&body, r#"augur_tenant_used_bytes{tenant="app1"}"#);
    assert!(used > 0.0);
    // The default rate (kRedis §5: 0.01 under 8M keys), to the threshold's precision.
    let rate = sample(&body, r#"augur_tenant_sample_rate{tenant="app1"}"#);
    assert!((rate - 0.01).abs() < 1e-6, "{rate}");
    assert!(body.contains("augur_profiler_cpu_share "), "{body}");
    assert!(
        body.contains("# TYPE augur_tenant_used_bytes gauge"),
        "{body}"
    );
    assert!(body.contains("# TYPE augur_tenant_hits counter"), "{body}");
    assert!(body.trim_end().ends_with("# EOF"));
    let (status, _) = http_get(port, "/other").await;
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    s.stop().await;
}

#[tokio::test]
async fn augur_tenants_prints_the_table_and_writes_each_tenants_curves() {
    let mut cfg = two_tenants_profiled(1.0, 150);
    cfg.tenant_k_set = vec![1, 4];
    let s = TestServer::start(cfg).await;
    let mut d = s.con().await;
    let mut a = s.con_as("app1", "pw1").await;
    cache_workload(&mut a, 3000).await;
    wait_intervals(&mut d, "app1", 2).await;
    let dir = std::env::temp_dir().join(format!("augur-tenants-cli-{}", std::process::id()));
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_augur"))
        .args(["tenants", "--addr", &s.addr.to_string(), "--once"])
        .arg("--csv")
        .arg(&dir)
        .arg("--svg")
        .arg(&dir)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    let header = table.lines().nth(1).unwrap();
    assert!(
        header.starts_with("TENANT") && header.contains("HIT%"),
        "{table}"
    );
    for name in ["app1", "app2", "default"] {
        assert!(
            table.lines().any(|l| l.starts_with(name)),
            "{name} missing:\n{table}"
        );
    }
    // app1's CSV holds the K = 4 points TENANT MRC answers, in augur mrc's format.
    let csv = std::fs::read_to_string(dir.join("app1.csv")).unwrap();
    assert!(csv.starts_with("model,k,size,miss_ratio\n"), "{csv}");
    let online: Vec<(String, String)> = q(&mut d, &["TENANT", "MRC", "app1", "4"]).await.unwrap();
    let rows: Vec<&str> = csv.lines().filter(|l| l.starts_with("krr,4,")).collect();
    assert_eq!(rows.len(), online.len());
    for (row, (size, mr)) in rows.iter().zip(&online) {
        let f: Vec<&str> = row.split(',').collect();
        assert_eq!(f[2], size);
        assert!((f[3].parse::<f64>().unwrap() - mr.parse::<f64>().unwrap()).abs() < 1e-6);
    }
    assert!(csv.lines().any(|l| l.starts_with("krr-merged,,")));
    let svg = std::fs::read_to_string(dir.join("app1.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("polyline"),
        "{}",
        &svg[..200.min(svg.len())]
    );
    // A tenant with no references yet has no curve file.
    assert!(!dir.join("app2.csv").exists());
    std::fs::remove_dir_all(&dir).ok();
    s.stop().await;
}

/// `tenant-profiler-cpu` (crate::cpu_budget): over budget the busiest auto-rate tenant's
/// rate is cut (at least halved), an idle tenant's and an operator-set rate stay, and with the budget off
/// §5's rate comes back.
#[tokio::test]
async fn the_profiler_cpu_budget_lowers_the_busy_tenants_rate_and_gives_it_back() {
    let mut cfg = two_tenants();
    // Any sampled load is over 0.01 % of a core; rate 0.5 samples half the keys.
    cfg.tenant_profiler_cpu = 0.01;
    cfg.tenant_sample_rate = 0.5;
    cfg.tenant_interval_ms = 200;
    let s = TestServer::start(cfg).await;
    let mut d = s.con().await;
    let mut a = s.con_as("app1", "pw1").await;
    let rate = |info: &HashMap<String, String>| num(info, "sample_rate");
    assert_eq!(rate(&tenant_info(&mut d, "app1").await), 0.5);
    let info: String = redis::cmd("INFO")
        .arg("tenants")
        .query_async(&mut d)
        .await
        .unwrap();
    assert!(info.contains("tenant_profiler_cpu_budget:0.01"), "{info}");

    // Windows are 200 ms: load for up to 20 s until the first cut shows.
    let start = std::time::Instant::now();
    let mut lowered = 0.5;
    let mut round = 0;
    while lowered == 0.5 && start.elapsed() < Duration::from_secs(20) {
        fill(&mut a, &format!("r{round}:"), 2000, 32).await;
        round += 1;
        lowered = rate(&tenant_info(&mut d, "app1").await);
    }
    assert!(
        lowered <= 0.25 + 1e-6,
        "app1's rate was not lowered: {lowered}"
    );
    // Intervals ran (200 ms each) and INFO says how long the last and longest took.
    let info: String = redis::cmd("INFO")
        .arg("tenants")
        .query_async(&mut d)
        .await
        .unwrap();
    let field = |name: &str| info_field(&info, name);
    assert!(field("tenant_intervals") > 0, "{info}");
    let (last, max) = (
        field("tenant_interval_last_us"),
        field("tenant_interval_max_us"),
    );
    assert!(max > 0 && last <= max, "{info}");
    assert_eq!(
        rate(&tenant_info(&mut d, "app2").await),
        0.5,
        "an idle tenant keeps its rate"
    );

    // An operator-set rate is kept whatever the profiler costs.
    let _: () = redis::cmd("TENANT")
        .arg(&["SET", "app2", "sample-rate", "0.5"])
        .query_async(&mut d)
        .await
        .unwrap();
    let mut b = s.con_as("app2", "pw2").await;
    let start = std::time::Instant::now();
    let mut round = 0;
    while start.elapsed() < Duration::from_millis(1500) {
        fill(&mut b, &format!("s{round}:"), 2000, 32).await;
        round += 1;
    }
    assert_eq!(rate(&tenant_info(&mut d, "app2").await), 0.5);

    // Budget off: the next interval gives app1 §5's rate (here the configured 0.5) back.
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "tenant-profiler-cpu", "0"])
        .query_async(&mut d)
        .await
        .unwrap();
    let mut restored = 0.0;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        restored = rate(&tenant_info(&mut d, "app1").await);
        if restored == 0.5 {
            break;
        }
    }
    assert_eq!(restored, 0.5);
}

/// Writes `n` distinct keys `{prefix}{i}` and reads each twice (pipelined).
async fn touch_distinct(con: &mut MultiplexedConnection, prefix: &str, n: usize) {
    for start in (0..n).step_by(200) {
        let mut p = redis::pipe();
        for i in start..(start + 200).min(n) {
            let k = format!("{prefix}{i}");
            p.cmd("SET").arg(&k).arg("v").ignore();
            p.cmd("GET").arg(&k).ignore();
            p.cmd("GET").arg(&k).ignore();
        }
        let _: () = p.query_async(con).await.unwrap();
    }
}

/// The model's distinct-key estimator needs the whole stream's distinct keys `D`, and
/// the request path hands the profiler only the sampled ones: the store counts every key
/// a profiled tenant references in a HyperLogLog sketch. TENANT INFO's `distinct_keys`
/// is within 4 standard errors (4 x 0.81 %) of the true count although only ~5 % of the
/// keys are sampled, and a model restart (a new sampling rate) starts it again.
#[tokio::test]
async fn the_distinct_key_count_covers_unsampled_keys_and_restarts_with_the_model() {
    let cfg = two_tenants_profiled(0.05, 150);
    let s = TestServer::start(cfg).await;
    let mut d = s.con().await;
    let mut a = s.con_as("app1", "pw1").await;
    touch_distinct(&mut a, "key:", 6000).await;
    wait_intervals(&mut d, "app1", 2).await;
    let info = tenant_info(&mut d, "app1").await;
    let got = num(&info, "distinct_keys");
    assert!(
        (got - 6000.0).abs() <= 6000.0 * 4.0 * 0.0081,
        "{got}: {info:?}"
    );
    let sampled = num(&info, "sampled_references");
    assert!(sampled > 0.0 && sampled < 18_000.0 * 0.2, "{sampled}");
    // The other tenant referenced nothing.
    let other = tenant_info(&mut d, "app2").await;
    assert!(
        other["distinct_keys"].is_empty() || num(&other, "distinct_keys") == 0.0,
        "{other:?}"
    );

    let _: () = q(&mut d, &["TENANT", "SET", "app1", "sample-rate", "0.1"])
        .await
        .unwrap();
    wait_intervals(&mut d, "app1", 2).await;
    touch_distinct(&mut a, "new:", 500).await;
    wait_intervals(&mut d, "app1", 2).await;
    let got = num(&tenant_info(&mut d, "app1").await, "distinct_keys");
    assert!((got - 500.0).abs() <= 500.0 * 4.0 * 0.0081, "{got}");
    s.stop().await;
}
