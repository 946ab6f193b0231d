//! `augur serve` as a process: config file plus overriding flags, logging to a file,
//! and SHUTDOWN ending the process cleanly.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Sends an inline command and reads one reply line (enough for these replies).
fn send(port: u16, line: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(format!("{line}\r\n").as_bytes()).unwrap();
    let mut buf = vec![0u8; 4096];
    let mut got = Vec::new();
    while !got.ends_with(b"\r\n")
        || (got.starts_with(b"*") && got.split(|&b| b == b'\n').count() < 6)
    {
        let n = s.read(&mut buf).unwrap_or(0);
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// PING's reply line, or None if the connection fails.
fn try_ping(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"PING\r\n").ok()?;
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}

#[test]
fn serve_binary_config_file_flags_and_shutdown() {
    let dir = std::env::temp_dir().join(format!("augur-bin-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("augur.conf");
    let log = dir.join("augur.log");
    let port = free_port();
    std::fs::write(
        &conf,
        format!(
            "# test config\nport 1\nmaxmemory 10mb\nmaxmemory-policy allkeys-lru\nlogfile \"{}\"\nsave \"\"\n",
            log.display()
        ),
    )
    .unwrap();
    let mut child = spawn_serving(&conf, port, &["--maxmemory", "20mb"]);
    // The flag overrides the file; the file's other settings hold.
    assert_eq!(
        send(port, "CONFIG GET maxmemory"),
        "*2\r\n$9\r\nmaxmemory\r\n$8\r\n20971520\r\n"
    );
    assert_eq!(
        send(port, "CONFIG GET maxmemory-policy"),
        "*2\r\n$16\r\nmaxmemory-policy\r\n$11\r\nallkeys-lru\r\n"
    );
    // INFO server names the file (absolute) and the binary, as Redis does.
    let mut info = send(port, "INFO server");
    let start = Instant::now();
    while !info.contains("io_threads_active") && start.elapsed() < Duration::from_secs(5) {
        info = send(port, "INFO server");
    }
    let canonical = std::fs::canonicalize(&conf).unwrap();
    let config_file = info
        .lines()
        .find_map(|l| l.strip_prefix("config_file:"))
        .expect("config_file in INFO server");
    assert_eq!(
        std::fs::canonicalize(config_file).unwrap(),
        canonical,
        "{info}"
    );
    let exe = info
        .lines()
        .find_map(|l| l.strip_prefix("executable:"))
        .expect("executable in INFO server");
    assert_eq!(
        std::fs::canonicalize(exe).unwrap(),
        std::fs::canonicalize(env!("CARGO_BIN_EXE_augur")).unwrap()
    );
    assert_eq!(send(port, "SHUTDOWN NOSAVE"), "");
    let status = wait_exit(&mut child);
    assert!(status.success(), "{status}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("ready to accept connections"), "{logged}");
    assert!(logged.contains("ready to exit"), "{logged}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn serve_binary_rejects_bad_config() {
    let out = Command::new(env!("CARGO_BIN_EXE_augur"))
        .args(["serve", "--port", "0", "--maxmemory-policy", "sometimes"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("maxmemory-policy"), "{err}");
}

/// Starts `augur serve CONF --port PORT EXTRA...` and waits for it to answer PING
/// (or NOAUTH, when the file sets a password). Up once a PING is answered, not once a
/// connect succeeds: in one CI run the connect after a successful probe was reset
/// (ECONNRESET; cause not established; a probe from an ephemeral port equal to `port`
/// can connect to itself before the server binds).
fn spawn_serving(conf: &std::path::Path, port: u16, extra: &[&str]) -> std::process::Child {
    let port_arg = port.to_string();
    let mut args = vec!["serve", conf.to_str().unwrap(), "--port", &port_arg];
    args.extend_from_slice(extra);
    let mut child = Command::new(env!("CARGO_BIN_EXE_augur"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn augur");
    let start = Instant::now();
    loop {
        match try_ping(port).as_deref() {
            Some("+PONG\r\n") | Some("-NOAUTH Authentication required.\r\n") => break,
            _ => {}
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "server did not start"
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!("augur exited early: {status}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

/// Waits (10 s at most) for the server to exit, and returns how it did.
fn wait_exit(child: &mut std::process::Child) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "server did not exit"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn config_get(con: &mut redis::Connection, name: &str) -> String {
    let pair: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg(name)
        .query(con)
        .unwrap();
    pair.get(1).cloned().unwrap_or_default()
}

/// CONFIG REWRITE writes what CONFIG SET, ACL SETUSER and TENANT SET changed into the
/// file, keeping its comments and folding alias lines; a restart from that file alone
/// comes back with the same configuration, users and tenant settings; a second rewrite
/// changes nothing; a file that cannot be written gives Redis's error.
#[test]
fn config_rewrite_survives_a_restart() {
    let dir = std::env::temp_dir().join(format!("augur-rewrite-e2e-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("augur.conf");
    let port = free_port();
    std::fs::write(
        &conf,
        format!(
            "# operator's notes: keep me\nport {port}\nmaxmemory 10mb\n\n# listpack limit, old name\nhash-max-ziplist-entries 20\nhz 10\n"
        ),
    )
    .unwrap();
    let mut child = spawn_serving(&conf, port, &[]);
    let url = format!("redis://127.0.0.1:{port}/");
    let mut con = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let ok: String = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("30mb")
        .arg("maxmemory-policy")
        .arg("allkeys-lfu")
        .arg("hash-max-listpack-entries")
        .arg("100")
        .query(&mut con)
        .unwrap();
    assert_eq!(ok, "OK");
    let _: String = redis::cmd("ACL")
        .arg(&["SETUSER", "app", "on", ">app pw", "~*", "&*", "+@all"])
        .query(&mut con)
        .unwrap();
    let _: String = redis::cmd("TENANT")
        .arg(&["SET", "app", "maxmemory", "5mb", "miss-penalty", "2ms"])
        .query(&mut con)
        .unwrap();
    let _: String = redis::cmd("CONFIG")
        .arg(&["SET", "requirepass", "s3cret \"quoted\""])
        .query(&mut con)
        .unwrap();
    // `dir`: the working directory, absolute; a missing one is refused with strerror.
    let _: String = redis::cmd("CONFIG")
        .arg(&["SET", "dir", dir.to_str().unwrap()])
        .query(&mut con)
        .unwrap();
    let canonical_dir = std::fs::canonicalize(&dir).unwrap().display().to_string();
    assert_eq!(config_get(&mut con, "dir"), canonical_dir);
    let err = redis::cmd("CONFIG")
        .arg(&["SET", "dir", "/nonexistent/augur"])
        .query::<String>(&mut con)
        .unwrap_err();
    assert_eq!(
        err.detail(),
        Some("CONFIG SET failed (possibly related to argument 'dir') - No such file or directory")
    );
    let ok: String = redis::cmd("CONFIG").arg("REWRITE").query(&mut con).unwrap();
    assert_eq!(ok, "OK");
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(
        text.contains(&format!("\ndir \"{canonical_dir}\"\n")),
        "{text}"
    );
    // Rewriting again at once changes nothing (no second signature, same order).
    let ok: String = redis::cmd("CONFIG").arg("REWRITE").query(&mut con).unwrap();
    assert_eq!(ok, "OK");
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), text);
    assert!(text.starts_with("# operator's notes: keep me\n"), "{text}");
    assert!(text.contains("\n# listpack limit, old name\n"), "{text}");
    assert!(text.contains("\nmaxmemory 31457280\n"), "{text}");
    assert!(text.contains("\nhash-max-listpack-entries 100\n"), "{text}");
    assert!(!text.contains("ziplist"), "{text}");
    assert!(text.contains("\nhz 10\n"), "{text}");
    assert!(text.contains("\n# Generated by CONFIG REWRITE\n"), "{text}");
    assert!(text.contains("\nmaxmemory-policy allkeys-lfu\n"), "{text}");
    assert!(
        text.contains("\nrequirepass \"s3cret \\\"quoted\\\"\"\n"),
        "{text}"
    );
    assert!(text.contains("\nuser app on #"), "{text}");
    assert!(
        text.contains("\ntenant app maxmemory 5242880 miss-penalty 2000us\n"),
        "{text}"
    );
    let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").arg("NOSAVE").query(&mut con);
    wait_exit(&mut child);

    // From the file alone.
    let mut child = spawn_serving(&conf, port, &[]);
    let url = format!("redis://:s3cret%20%22quoted%22@127.0.0.1:{port}/");
    let mut con = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    assert_eq!(config_get(&mut con, "maxmemory"), "31457280");
    assert_eq!(config_get(&mut con, "maxmemory-policy"), "allkeys-lfu");
    assert_eq!(config_get(&mut con, "hash-max-listpack-entries"), "100");
    assert_eq!(config_get(&mut con, "hz"), "10");
    assert_eq!(config_get(&mut con, "dir"), canonical_dir);
    let tenant: Vec<String> = redis::cmd("TENANT")
        .arg(&["GET", "app", "maxmemory"])
        .query(&mut con)
        .unwrap();
    assert_eq!(tenant, vec!["maxmemory".to_string(), "5242880".to_string()]);
    let url = format!("redis://app:app%20pw@127.0.0.1:{port}/");
    let mut app = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let pong: String = redis::cmd("PING").query(&mut app).unwrap();
    assert_eq!(pong, "PONG");
    // A rewrite of the restarted server writes the same file, but for one flag: a
    // config file's `user default` line is applied after a `reset` (as Redis's
    // ACLLoadConfiguredUsers does), and `reset` sets sanitize-payload.
    let ok: String = redis::cmd("CONFIG").arg("REWRITE").query(&mut con).unwrap();
    assert_eq!(ok, "OK");
    assert_eq!(
        std::fs::read_to_string(&conf).unwrap(),
        text.replace(
            "\nuser default on #",
            "\nuser default on sanitize-payload #"
        )
    );
    // The file's directory gone: Redis's error text, and the server goes on.
    let moved = dir.with_extension("moved");
    let _ = std::fs::remove_dir_all(&moved);
    std::fs::rename(&dir, &moved).unwrap();
    let err = redis::cmd("CONFIG")
        .arg("REWRITE")
        .query::<String>(&mut con)
        .unwrap_err();
    assert_eq!(err.code(), Some("ERR"), "{err:?}");
    assert_eq!(
        err.detail(),
        Some("Rewriting config file: No such file or directory"),
        "{err:?}"
    );
    assert_eq!(config_get(&mut con, "hz"), "10");
    // `bind ""` listens nowhere (Redis's networking test): new connections are refused,
    // this one goes on, and binding again restores the listener.
    let _: String = redis::cmd("CONFIG")
        .arg(&["SET", "bind", ""])
        .query(&mut con)
        .unwrap();
    assert_eq!(config_get(&mut con, "bind"), "");
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    let _: String = redis::cmd("CONFIG")
        .arg(&["SET", "bind", "127.0.0.1"])
        .query(&mut con)
        .unwrap();
    assert!(try_ping(port).is_some());
    let _: redis::RedisResult<()> = redis::cmd("SHUTDOWN").arg("NOSAVE").query(&mut con);
    wait_exit(&mut child);
    let _ = std::fs::remove_dir_all(&moved);
}
