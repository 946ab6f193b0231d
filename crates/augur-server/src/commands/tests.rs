//! Command semantics without a network: inline commands in, RESP bytes out.

use super::*;
use crate::config::ServerConfig;
use crate::resp::{Parsed, Parser};

/// A server state and one client, no network (shared with `tests_strcmds`).
pub(super) struct Harness {
    pub(super) shared: Shared,
    pub(super) client: Client,
}

impl Harness {
    pub(super) fn new(cfg: ServerConfig) -> Self {
        let shared = Shared::new(cfg, None);
        let addr = "127.0.0.1:1".parse().unwrap();
        let authenticated = !shared.pass_required.load(Relaxed);
        let mut client = Client::new(Arc::new(ClientMeta::new(1, addr, addr)), authenticated);
        client.attach_db_map(&shared);
        Harness { shared, client }
    }

    /// Runs one inline command line at time `now`; returns the reply bytes as text.
    pub(super) fn at(&mut self, line: &str, now: u64) -> String {
        self.exec(format!("{line}\r\n").as_bytes(), now)
    }

    /// Runs one command given as binary arguments (RESP-encoded, so any byte passes).
    pub(super) fn raw(&mut self, args: &[&[u8]], now: u64) -> String {
        let mut req = Vec::new();
        crate::resp::encode_request(args, &mut req);
        self.exec(&req, now)
    }

    fn exec(&mut self, req: &[u8], now: u64) -> String {
        let mut p = Parser::default();
        let Ok(Parsed::Command(_)) = p.parse(req) else {
            panic!("parse {}", String::from_utf8_lossy(req))
        };
        execute(&self.shared, &mut self.client, p.args(req), now);
        let out = String::from_utf8_lossy(&self.client.out.buf).into_owned();
        self.client.out.buf.clear();
        out
    }

    pub(super) fn run(&mut self, line: &str) -> String {
        self.at(line, 1_000_000)
    }
}

#[test]
fn set_options() {
    let mut h = Harness::new(ServerConfig::default());
    assert_eq!(h.run("SET k v"), "+OK\r\n");
    assert_eq!(h.run("SET k w NX"), "$-1\r\n");
    assert_eq!(h.run("SET k w XX GET"), "$1\r\nv\r\n");
    assert_eq!(h.run("SET k w NX XX"), "-ERR syntax error\r\n");
    assert_eq!(h.run("SET k w EX 1 PX 5"), "-ERR syntax error\r\n");
    assert_eq!(h.run("SET k w EX 1 EX 5"), "+OK\r\n");
    assert_eq!(h.run("SET k w KEEPTTL EX 5"), "-ERR syntax error\r\n");
    assert_eq!(h.run("SET k w EX"), "-ERR syntax error\r\n");
    assert_eq!(
        h.run("SET k w EX x"),
        "-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(
        h.run("SET k w PX 0"),
        "-ERR invalid expire time in 'set' command\r\n"
    );
    assert_eq!(
        h.run("SET k w EX 9223372036854775807"),
        "-ERR invalid expire time in 'set' command\r\n"
    );
    assert_eq!(
        h.run("SETEX k 0 v"),
        "-ERR invalid expire time in 'setex' command\r\n"
    );
    assert_eq!(
        h.run("GETEX k EX 0"),
        "-ERR invalid expire time in 'getex' command\r\n"
    );
    assert_eq!(h.run("GETEX k PERSIST EX 1"), "-ERR syntax error\r\n");
    // Redis reads GETEX's expire time only for a string key: a missing key is nil and
    // another type WRONGTYPE whatever the number, and a bad number leaves the TTL.
    for (command, reply) in [
        ("GETEX missing EX -3", "$-1\r\n"),
        ("GETEX missing PX x", "$-1\r\n"),
        ("GETEX missing EX", "-ERR syntax error\r\n"),
        ("HSET hk f v", ":1\r\n"),
        (
            "GETEX hk EX x",
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        ),
        ("SET g v EX 100", "+OK\r\n"),
        (
            "GETEX g EX x",
            "-ERR value is not an integer or out of range\r\n",
        ),
    ] {
        assert_eq!(h.run(command), reply, "{command}");
    }
    assert_eq!(h.run("TTL g"), ":100\r\n");
    // Time-driven: PX 100 at t=1_000_000 lives through t=1_000_100 (Redis expires when
    // now > at), gone after.
    assert_eq!(h.at("SET t v PX 100", 1_000_000), "+OK\r\n");
    assert_eq!(h.at("PTTL t", 1_000_040), ":60\r\n");
    assert_eq!(h.at("TTL t", 1_000_040), ":0\r\n");
    assert_eq!(h.at("GET t", 1_000_100), "$1\r\nv\r\n");
    assert_eq!(h.at("GET t", 1_000_101), "$-1\r\n");
    assert_eq!(h.at("SET t v PXAT 999999", 1_000_000), "+OK\r\n");
    assert_eq!(h.at("EXISTS t", 1_000_000), ":0\r\n");
}

#[test]
fn counters() {
    let mut h = Harness::new(ServerConfig::default());
    assert_eq!(h.run("INCR n"), ":1\r\n");
    assert_eq!(h.run("DECRBY n 11"), ":-10\r\n");
    assert_eq!(
        h.run("DECRBY n -9223372036854775808"),
        "-ERR decrement would overflow\r\n"
    );
    assert_eq!(
        h.run("INCRBY n 01"),
        "-ERR value is not an integer or out of range\r\n"
    );
    assert_eq!(h.run("SET n 9223372036854775807"), "+OK\r\n");
    assert_eq!(
        h.run("INCR n"),
        "-ERR increment or decrement would overflow\r\n"
    );
    assert_eq!(h.run("GET n"), "$19\r\n9223372036854775807\r\n");
    assert_eq!(h.run("INCRBYFLOAT f 10.5"), "$4\r\n10.5\r\n");
    assert_eq!(h.run("INCRBYFLOAT f 0.1"), "$4\r\n10.6\r\n");
    // Redis's own answer: 1010.6 is not a long double, and %.17Lf shows it.
    assert_eq!(
        h.run("INCRBYFLOAT f 1e3"),
        "$22\r\n1010.59999999999999998\r\n"
    );
    assert_eq!(
        h.run("INCRBYFLOAT f nan"),
        "-ERR value is not a valid float\r\n"
    );
    assert_eq!(
        h.run("INCRBYFLOAT f inf"),
        "-ERR increment would produce NaN or Infinity\r\n"
    );
    assert_eq!(
        h.run("INCRBYFLOAT f \" 1\""),
        "-ERR value is not a valid float\r\n"
    );
    // Redis adds in long double: ten 0.1s are 1 (0.9999999999999999 in f64), hex
    // floats parse, and HINCRBYFLOAT is the same arithmetic (redis-server 7.0.15's
    // answers).
    for _ in 0..9 {
        h.run("INCRBYFLOAT tenth 0.1");
    }
    assert_eq!(h.run("INCRBYFLOAT tenth 0.1"), "$1\r\n1\r\n");
    assert_eq!(h.run("INCRBYFLOAT hex 0x10"), "$2\r\n16\r\n");
    assert_eq!(h.run("SET big 1e308"), "+OK\r\n");
    // 2e308 overflows a double, not a long double: 309 digits.
    let big = h.run("INCRBYFLOAT big 1e308");
    assert!(
        big.starts_with("$309\r\n19999999999999999999337175931"),
        "{}",
        &big[..30]
    );
    h.run("HINCRBYFLOAT hf a 0.3");
    h.run("HINCRBYFLOAT hf a 0.3");
    assert_eq!(h.run("HINCRBYFLOAT hf a 0.3"), "$3\r\n0.9\r\n");
    assert_eq!(h.run("HGET hf a"), "$3\r\n0.9\r\n");
    assert_eq!(
        h.run("HINCRBYFLOAT hf a -inf"),
        "-ERR value is NaN or Infinity\r\n"
    );
    // INCR keeps the TTL.
    assert_eq!(h.run("SET t 1 EX 100"), "+OK\r\n");
    assert_eq!(h.run("INCR t"), ":2\r\n");
    assert_eq!(h.run("TTL t"), ":100\r\n");
}

#[test]
fn ranges_and_append() {
    let mut h = Harness::new(ServerConfig::default());
    assert_eq!(h.run("APPEND s Hello"), ":5\r\n");
    assert_eq!(h.run("APPEND s World"), ":10\r\n");
    assert_eq!(h.run("GETRANGE s -5 -1"), "$5\r\nWorld\r\n");
    assert_eq!(h.run("GETRANGE s -1 -5"), "$0\r\n\r\n");
    assert_eq!(h.run("GETRANGE s 3 100"), "$7\r\nloWorld\r\n");
    assert_eq!(h.run("SETRANGE s 12 !"), ":13\r\n");
    assert_eq!(h.run("GET s"), "$13\r\nHelloWorld\0\0!\r\n");
    assert_eq!(h.run("SETRANGE s 0 \"\""), ":13\r\n");
    assert_eq!(h.run("SETRANGE e 3 \"\""), ":0\r\n");
    assert_eq!(h.run("EXISTS e"), ":0\r\n");
    assert_eq!(h.run("SETRANGE s -1 x"), "-ERR offset is out of range\r\n");
    assert_eq!(
        h.run("SETRANGE s 536870911 xx"),
        "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"
    );
    assert_eq!(h.run("STRLEN s"), ":13\r\n");
}

#[test]
fn expire_options() {
    let mut h = Harness::new(ServerConfig::default());
    h.run("SET k v");
    assert_eq!(h.run("EXPIRE k 10 XX"), ":0\r\n");
    assert_eq!(h.run("EXPIRE k 10 GT"), ":0\r\n");
    assert_eq!(h.run("EXPIRE k 10 LT"), ":1\r\n");
    assert_eq!(h.run("EXPIRE k 20 LT"), ":0\r\n");
    assert_eq!(h.run("EXPIRE k 20 GT"), ":1\r\n");
    assert_eq!(h.run("EXPIRE k 5 NX"), ":0\r\n");
    assert_eq!(h.run("EXPIRE k 5 FOO"), "-ERR Unsupported option FOO\r\n");
    assert_eq!(
        h.run("EXPIRE k 5 GT LT"),
        "-ERR GT and LT options at the same time are not compatible\r\n"
    );
    assert_eq!(
        h.run("PEXPIRE k 9223372036854775807"),
        "-ERR invalid expire time in 'pexpire' command\r\n"
    );
    assert_eq!(h.run("EXPIRE k -1"), ":1\r\n");
    assert_eq!(h.run("EXISTS k"), ":0\r\n");
    assert_eq!(h.run("EXPIRE k 5"), ":0\r\n");
}

#[test]
fn connection_and_server_commands() {
    let mut h = Harness::new(ServerConfig {
        requirepass: Some("pw".into()),
        ..ServerConfig::default()
    });
    assert_eq!(h.run("GET k"), "-NOAUTH Authentication required.\r\n");
    assert_eq!(
        h.run("FOO bar"),
        "-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n"
    );
    assert_eq!(h.run("AUTH a b c"), "-ERR syntax error\r\n");
    assert_eq!(
        h.run("AUTH nope"),
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(h.run("AUTH pw"), "+OK\r\n");
    assert_eq!(h.run("SELECT 15"), "+OK\r\n");
    assert_eq!(h.run("SELECT 16"), "-ERR DB index is out of range\r\n");
    assert_eq!(
        h.run("PING a b"),
        "-ERR wrong number of arguments for 'ping' command\r\n"
    );
    assert_eq!(
        h.run("CONFIG GETX"),
        "-ERR unknown subcommand 'GETX'. Try CONFIG HELP.\r\n"
    );
    assert_eq!(
        h.run("CONFIG GET"),
        "-ERR wrong number of arguments for 'config|get' command\r\n"
    );
    assert_eq!(
        h.run("CONFIG SET maxmemory 1 hz"),
        "-ERR wrong number of arguments for 'config|set' command\r\n"
    );
    assert_eq!(
        h.run("CONFIG SET databases 4"),
        "-ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config\r\n"
    );
    assert_eq!(h.run("CONFIG SET maxmemory 5mb hz 20"), "+OK\r\n");
    assert_eq!(h.shared.store.maxmemory(), 5 * 1024 * 1024);
    assert_eq!(h.run("CONFIG GET hz"), "*2\r\n$2\r\nhz\r\n$2\r\n20\r\n");
    assert_eq!(h.run("FLUSHALL LAZY"), "-ERR syntax error\r\n");
    assert_eq!(
        h.run("CLIENT SETNAME \"a b\""),
        "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"
    );
    assert_eq!(
        h.run("HELLO 4"),
        "-NOPROTO unsupported protocol version\r\n"
    );
    assert_eq!(
        h.run("HELLO 3 FOO"),
        "-ERR Syntax error in HELLO option 'FOO'\r\n"
    );
    assert!(h.run("HELLO 3").starts_with("%7\r\n"));
    assert_eq!(h.run("GET missing"), "_\r\n");
    assert_eq!(h.run("CONFIG GET hz"), "%1\r\n$2\r\nhz\r\n$2\r\n20\r\n");
    assert!(h.run("INFO keyspace").starts_with("="));
    assert_eq!(
        h.run("COMMAND COUNT"),
        format!(":{}\r\n", cmdtable::COMMANDS.len())
    );
    assert_eq!(h.run("QUIT"), "+OK\r\n");
    assert!(h.client.close_after_reply);
}

#[test]
fn noeviction_oom_keeps_data() {
    let mut h = Harness::new(ServerConfig {
        maxmemory: 100_000,
        shards: 1,
        ..ServerConfig::default()
    });
    let value = "x".repeat(1000);
    let mut n = 0;
    loop {
        let r = h.run(&format!("SET k{n} {value}"));
        if r.starts_with("-OOM") {
            assert_eq!(
                r,
                "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
            );
            break;
        }
        assert_eq!(r, "+OK\r\n");
        n += 1;
        assert!(n < 1000, "never refused");
    }
    assert_eq!(h.run("DBSIZE"), format!(":{n}\r\n"));
    assert_eq!(h.run("GET k0"), format!("$1000\r\n{value}\r\n"));
}

#[test]
fn command_docs_carry_redis_documentation() {
    let mut h = Harness::new(ServerConfig::default());
    // GET as redis-server 7.0.15 documents it, past Augur's own summary: its one key
    // argument with its key spec (an integer).
    let get = h.run("COMMAND DOCS get");
    assert!(
        get.starts_with("*2\r\n$3\r\nget\r\n*10\r\n$7\r\nsummary\r\n"),
        "{get}"
    );
    assert!(get.ends_with(
        "$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$6\r\nstring\r\n$10\r\ncomplexity\r\n\
         $4\r\nO(1)\r\n$9\r\narguments\r\n*1\r\n*6\r\n$4\r\nname\r\n$3\r\nkey\r\n\
         $4\r\ntype\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n"
    ));
    // Redis's complexity, not a blanket O(1); a subcommand's history and arguments.
    assert!(h
        .run("COMMAND DOCS keys")
        .contains("O(N) with N being the number of keys"));
    let config = h.run("COMMAND DOCS config");
    assert!(config.contains("$10\r\nconfig|get\r\n"));
    assert!(config.contains("Added the ability to pass multiple pattern parameters"));
    // RESP3: flags are a set of simple strings, as Redis sends them.
    assert!(h.run("HELLO 3").starts_with("%7\r\n"));
    let set = h.run("COMMAND DOCS set");
    assert!(set.contains("$5\r\nflags\r\n~1\r\n+optional\r\n"), "{set}");
    assert!(set.contains("$5\r\ntoken\r\n$7\r\nKEEPTTL\r\n"));
    // An Augur command Redis does not have keeps Augur's own fields.
    assert!(h.run("COMMAND DOCS tenant").contains("$6\r\ntenant\r\n"));
}
