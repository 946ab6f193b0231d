//! Semantics of the keyspace relocation, bit and LCS commands (db.c, bitops.c,
//! t_string.c) without a network: inline commands in, RESP bytes out.

use super::tests::Harness;
use crate::config::ServerConfig;

const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";

#[test]
fn rename_renamenx_move_copy() {
    let mut h = Harness::new(ServerConfig::default());
    assert_eq!(h.run("RENAME nokey x"), "-ERR no such key\r\n");
    assert_eq!(h.run("RENAME nokey nokey"), "-ERR no such key\r\n");
    assert_eq!(h.run("SET a 1 EX 100"), "+OK\r\n");
    assert_eq!(h.run("RENAME a a"), "+OK\r\n");
    assert_eq!(h.run("RENAMENX a a"), ":0\r\n");
    assert_eq!(h.run("SET b 2"), "+OK\r\n");
    assert_eq!(h.run("RENAMENX a b"), ":0\r\n");
    // RENAME moves the TTL and drops the destination's.
    assert_eq!(h.run("EXPIRE b 500"), ":1\r\n");
    assert_eq!(h.run("RENAME a b"), "+OK\r\n");
    assert_eq!(h.run("TTL b"), ":100\r\n");
    assert_eq!(h.run("EXISTS a"), ":0\r\n");
    assert_eq!(h.run("RENAMENX b c"), ":1\r\n");
    assert_eq!(h.run("GET c"), "$1\r\n1\r\n");
    // MOVE
    assert_eq!(
        h.run("MOVE c 0"),
        "-ERR source and destination objects are the same\r\n"
    );
    assert_eq!(h.run("MOVE c 16"), "-ERR DB index is out of range\r\n");
    assert_eq!(h.run("MOVE c -1"), "-ERR DB index is out of range\r\n");
    assert_eq!(h.run("MOVE c x"), NOT_INT);
    assert_eq!(h.run("MOVE c 4294967296"), NOT_INT);
    assert_eq!(h.run("MOVE nokey 1"), ":0\r\n");
    assert_eq!(h.run("MOVE c 3"), ":1\r\n");
    assert_eq!(h.run("EXISTS c"), ":0\r\n");
    assert_eq!(h.run("SET c other"), "+OK\r\n");
    assert_eq!(h.run("SELECT 3"), "+OK\r\n");
    assert_eq!(h.run("TTL c"), ":100\r\n");
    assert_eq!(h.run("MOVE c 0"), ":0\r\n", "exists in the target");
    // COPY
    assert_eq!(
        h.run("COPY c c"),
        "-ERR source and destination objects are the same\r\n"
    );
    assert_eq!(h.run("COPY c c DB 0"), ":0\r\n");
    assert_eq!(h.run("COPY c c DB 0 REPLACE"), ":1\r\n");
    assert_eq!(h.run("COPY c d DB x"), NOT_INT);
    assert_eq!(h.run("COPY c d DB 99"), "-ERR DB index is out of range\r\n");
    assert_eq!(h.run("COPY c d FOO"), "-ERR syntax error\r\n");
    assert_eq!(h.run("COPY c d DB"), "-ERR syntax error\r\n");
    assert_eq!(h.run("COPY nokey d"), ":0\r\n");
    assert_eq!(h.run("COPY c d"), ":1\r\n");
    assert_eq!(h.run("TTL d"), ":100\r\n");
    assert_eq!(h.run("SET d changed"), "+OK\r\n");
    assert_eq!(h.run("GET c"), "$1\r\n1\r\n", "copies are independent");
    assert_eq!(h.run("SELECT 0"), "+OK\r\n");
    assert_eq!(h.run("GET c"), "$1\r\n1\r\n");
    assert_eq!(h.run("TTL c"), ":100\r\n");
}

#[test]
fn expiretime() {
    let mut h = Harness::new(ServerConfig::default());
    assert_eq!(h.run("EXPIRETIME k"), ":-2\r\n");
    assert_eq!(h.run("SET k v"), "+OK\r\n");
    assert_eq!(h.run("PEXPIRETIME k"), ":-1\r\n");
    assert_eq!(h.run("PEXPIREAT k 2000000123"), ":1\r\n");
    assert_eq!(h.run("PEXPIRETIME k"), ":2000000123\r\n");
    assert_eq!(h.run("EXPIRETIME k"), ":2000000\r\n");
    assert_eq!(h.run("PEXPIREAT k 2000000500"), ":1\r\n");
    assert_eq!(h.run("EXPIRETIME k"), ":2000001\r\n", "rounded as Redis");
}

#[test]
fn object_encoding_follows_redis() {
    let mut h = Harness::new(ServerConfig::default());
    let enc = |h: &mut Harness, k: &str| h.run(&format!("OBJECT ENCODING {k}"));
    h.run("SET i 1234");
    assert_eq!(enc(&mut h, "i"), "$3\r\nint\r\n");
    h.run("SET e 01234");
    assert_eq!(enc(&mut h, "e"), "$6\r\nembstr\r\n");
    h.run("SET big 92233720368547758070");
    assert_eq!(enc(&mut h, "big"), "$6\r\nembstr\r\n");
    h.run(&format!("SET r {}", "x".repeat(45)));
    assert_eq!(enc(&mut h, "r"), "$3\r\nraw\r\n");
    h.run(&format!("SET e44 {}", "x".repeat(44)));
    assert_eq!(enc(&mut h, "e44"), "$6\r\nembstr\r\n");
    // In-place edits leave raw strings; an empty SETRANGE changes nothing.
    assert_eq!(h.run("SETRANGE i 0 \"\""), ":4\r\n");
    assert_eq!(enc(&mut h, "i"), "$3\r\nint\r\n");
    assert_eq!(h.run("SETRANGE i 0 2"), ":4\r\n");
    assert_eq!(enc(&mut h, "i"), "$3\r\nraw\r\n");
    assert_eq!(h.run("GET i"), "$4\r\n2234\r\n");
    h.run("APPEND new 5");
    assert_eq!(
        enc(&mut h, "new"),
        "$3\r\nint\r\n",
        "APPEND creating a key: SET-like"
    );
    h.run("APPEND new 5");
    assert_eq!(enc(&mut h, "new"), "$3\r\nraw\r\n");
    h.run("SET new 55");
    assert_eq!(enc(&mut h, "new"), "$3\r\nint\r\n");
    h.run("SETBIT sb 1 1");
    assert_eq!(enc(&mut h, "sb"), "$3\r\nraw\r\n");
    // Encodings travel with RENAME and COPY; EXPIRE keeps them.
    h.run("EXPIRE sb 100");
    h.run("RENAME sb sb2");
    h.run("COPY sb2 sb3");
    assert_eq!(enc(&mut h, "sb3"), "$3\r\nraw\r\n");
    assert_eq!(enc(&mut h, "nokey"), "$-1\r\n");
    assert!(h
        .run("OBJECT FREQ sb3")
        .starts_with("-ERR An LFU maxmemory policy is not selected"));
    assert_eq!(h.run("OBJECT FREQ nokey"), "$-1\r\n");
}

#[test]
fn setbit_getbit() {
    let mut h = Harness::new(ServerConfig::default());
    assert_eq!(h.run("SETBIT k 1 1"), ":0\r\n");
    assert_eq!(h.run("GET k"), "$1\r\n@\r\n");
    assert_eq!(h.run("SETBIT k 1 0"), ":1\r\n");
    assert_eq!(h.run("SETBIT k 1 1"), ":0\r\n");
    assert_eq!(h.run("GETBIT k 1"), ":1\r\n");
    assert_eq!(h.run("GETBIT k 0"), ":0\r\n");
    assert_eq!(h.run("GETBIT k 100000"), ":0\r\n");
    assert_eq!(h.run("GETBIT nokey 3"), ":0\r\n");
    let off = "-ERR bit offset is not an integer or out of range\r\n";
    let bit = "-ERR bit is not an integer or out of range\r\n";
    assert_eq!(h.run("SETBIT k 4294967296 1"), off);
    assert_eq!(h.run("SETBIT k -1 1"), off);
    assert_eq!(h.run("GETBIT k -1"), off);
    assert_eq!(h.run("SETBIT k x 1"), off);
    assert_eq!(h.run("SETBIT k 0 2"), bit);
    assert_eq!(h.run("SETBIT k 0 -1"), bit);
    assert_eq!(h.run("SETBIT k 0 x"), bit);
    // The last bit proto-max-bulk-len allows.
    assert_eq!(h.run("CONFIG SET proto-max-bulk-len 1mb"), "+OK\r\n");
    assert_eq!(h.run("SETBIT big 8388607 1"), ":0\r\n");
    assert_eq!(h.run("STRLEN big"), ":1048576\r\n");
    assert_eq!(h.run("SETBIT big 8388608 1"), off);
    // The TTL survives SETBIT.
    h.run("EXPIRE k 50");
    h.run("SETBIT k 200 1");
    assert_eq!(h.run("TTL k"), ":50\r\n");
    assert_eq!(h.run("STRLEN k"), ":26\r\n");
}

#[test]
fn bitcount_bitpos() {
    let mut h = Harness::new(ServerConfig::default());
    assert_eq!(h.run("BITCOUNT nokey"), ":0\r\n");
    assert_eq!(
        h.run("BITCOUNT nokey 0"),
        ":0\r\n",
        "7.0 looks the key up first"
    );
    h.run("SET s foobar");
    assert_eq!(h.run("BITCOUNT s"), ":26\r\n");
    assert_eq!(h.run("BITCOUNT s 1 1"), ":6\r\n");
    assert_eq!(h.run("BITCOUNT s 5 30 BIT"), ":17\r\n");
    assert_eq!(h.run("BITCOUNT s 0"), "-ERR syntax error\r\n");
    assert_eq!(h.run("BITCOUNT s 0 1 hello"), "-ERR syntax error\r\n");
    assert_eq!(h.run("BITCOUNT s -1 -2 hello"), ":0\r\n");
    assert_eq!(h.run("BITCOUNT s a 1"), NOT_INT);
    assert_eq!(
        h.run("BITPOS s 2"),
        "-ERR The bit argument must be 1 or 0.\r\n"
    );
    assert_eq!(h.run("BITPOS s x"), NOT_INT);
    assert_eq!(h.run("BITPOS nokey 0"), ":0\r\n");
    assert_eq!(h.run("BITPOS nokey 1"), ":-1\r\n");
    h.run("SET p \"\\xff\\xf0\\x00\"");
    assert_eq!(h.run("BITPOS p 0"), ":12\r\n");
    assert_eq!(h.run("BITPOS p 1 2"), ":-1\r\n");
    h.run("SET p \"\\xff\\xff\\xff\"");
    assert_eq!(h.run("BITPOS p 0"), ":24\r\n");
    assert_eq!(h.run("BITPOS p 0 0"), ":24\r\n");
    assert_eq!(h.run("BITPOS p 0 0 -1"), ":-1\r\n");
    assert_eq!(h.run("BITPOS p 0 0 -1 bit"), ":-1\r\n");
    assert_eq!(h.run("BITPOS p 0 0 -1 foo"), "-ERR syntax error\r\n");
    h.run("SET p \"\\x00\\xff\\x00\"");
    assert_eq!(h.run("BITPOS p 1 7 15 BIT"), ":8\r\n");
    assert_eq!(h.run("BITPOS p 0 8 15 BIT"), ":-1\r\n");
    h.run("SET e \"\"");
    assert_eq!(h.run("BITPOS e 0"), ":-1\r\n", "empty range, as Redis 7.0");
}

#[test]
fn bitop() {
    let mut h = Harness::new(ServerConfig::default());
    h.run("SET a \"\\x01\\x02\\xff\\xff\"");
    h.run("SET b \"\\x01\\x02\\xff\"");
    assert_eq!(h.run("BITOP AND r a b"), ":4\r\n");
    assert_eq!(h.run("GET r"), "$4\r\n\x01\x02\u{fffd}\0\r\n");
    assert_eq!(h.run("BITOP XOR r b a nokey"), ":4\r\n");
    assert_eq!(h.run("GET r"), "$4\r\n\0\0\0\u{fffd}\r\n");
    assert_eq!(h.run("BITOP OR r nokey b"), ":3\r\n");
    assert_eq!(h.run("BITOP NOT r b"), ":3\r\n");
    assert_eq!(h.run("GET r"), "$3\r\n\u{fffd}\u{fffd}\0\r\n");
    assert_eq!(h.run("OBJECT ENCODING r"), "$3\r\nraw\r\n");
    assert_eq!(
        h.run("BITOP NOT r a b"),
        "-ERR BITOP NOT must be called with a single source key.\r\n"
    );
    assert_eq!(h.run("BITOP NAND r a b"), "-ERR syntax error\r\n");
    // An empty result deletes the destination (and its TTL with it).
    h.run("EXPIRE r 10");
    assert_eq!(h.run("BITOP OR r nokey"), ":0\r\n");
    assert_eq!(h.run("EXISTS r"), ":0\r\n");
    h.run("SET t x EX 10");
    h.run("BITOP OR t a");
    assert_eq!(h.run("TTL t"), ":-1\r\n");
}

#[test]
fn bitfield() {
    let mut h = Harness::new(ServerConfig::default());
    assert_eq!(
        h.run("BITFIELD bf SET i8 0 -100 GET i8 0"),
        "*2\r\n:0\r\n:-100\r\n"
    );
    assert_eq!(
        h.run("BITFIELD bf SET u8 0 255 GET u8 0"),
        "*2\r\n:156\r\n:255\r\n"
    );
    assert_eq!(
        h.run("BITFIELD bf INCRBY u2 100 1 OVERFLOW SAT INCRBY u2 102 1"),
        "*2\r\n:1\r\n:1\r\n"
    );
    assert_eq!(
        h.run("BITFIELD bf2 SET u8 #1 7 GET u8 8 GET u8 #1"),
        "*3\r\n:0\r\n:7\r\n:7\r\n"
    );
    // Overflow handling.
    h.run("DEL x");
    assert_eq!(
        h.run("BITFIELD x SET u8 0 255 INCRBY u8 0 10"),
        "*2\r\n:0\r\n:9\r\n"
    );
    assert_eq!(
        h.run("BITFIELD x OVERFLOW SAT INCRBY u8 0 1000"),
        "*1\r\n:255\r\n"
    );
    assert_eq!(
        h.run("BITFIELD x OVERFLOW FAIL INCRBY u8 0 1"),
        "*1\r\n$-1\r\n"
    );
    assert_eq!(
        h.run("BITFIELD x OVERFLOW SAT SET i8 0 -1000 GET i8 0"),
        "*2\r\n:-1\r\n:-128\r\n"
    );
    assert_eq!(
        h.run("BITFIELD x OVERFLOW WRAP INCRBY i8 0 -1"),
        "*1\r\n:127\r\n"
    );
    // 0x7F00.. + i64::MAX wraps around.
    assert_eq!(
        h.run("BITFIELD x INCRBY i64 0 9223372036854775807"),
        "*1\r\n:-72057594037927937\r\n"
    );
    // Only the key: an empty reply.
    assert_eq!(h.run("BITFIELD x"), "*0\r\n");
    assert_eq!(h.run("BITFIELD_RO x"), "*0\r\n");
    assert_eq!(h.run("BITFIELD_RO x GET u8 0"), "*1\r\n:254\r\n");
    assert_eq!(
        h.run("BITFIELD_RO x GET u8 0 SET u8 0 1"),
        "-ERR BITFIELD_RO only supports the GET subcommand\r\n"
    );
    // Errors, reported before anything is written.
    let ty = "-ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.\r\n";
    assert_eq!(h.run("BITFIELD y SET u64 0 1"), ty);
    assert_eq!(h.run("BITFIELD y SET i65 0 1"), ty);
    assert_eq!(
        h.run("BITFIELD y GET u8 -1"),
        "-ERR bit offset is not an integer or out of range\r\n"
    );
    assert_eq!(h.run("BITFIELD y SET u8 0 x"), NOT_INT);
    assert_eq!(
        h.run("BITFIELD y OVERFLOW FOO"),
        "-ERR Invalid OVERFLOW type specified\r\n"
    );
    assert_eq!(h.run("BITFIELD y GET u8"), "-ERR syntax error\r\n");
    assert_eq!(h.run("BITFIELD y SET u8 0 1 BAR"), "-ERR syntax error\r\n");
    assert_eq!(h.run("EXISTS y"), ":0\r\n");
    // GETs past the end read zeros without creating the key.
    assert_eq!(
        h.run("BITFIELD y GET u8 1000 GET i64 3"),
        "*2\r\n:0\r\n:0\r\n"
    );
    assert_eq!(h.run("EXISTS y"), ":0\r\n");
    assert_eq!(h.run("SET s \"\\x80\""), "+OK\r\n");
    assert_eq!(
        h.run("BITFIELD s GET i4 0 GET u4 0 GET u1 0 GET i1 0"),
        "*4\r\n:-8\r\n:8\r\n:1\r\n:-1\r\n"
    );
}

#[test]
fn lcs() {
    let mut h = Harness::new(ServerConfig::default());
    h.run("SET a ohmytext");
    h.run("SET b mynewtext");
    assert_eq!(h.run("LCS a b"), "$6\r\nmytext\r\n");
    assert_eq!(h.run("LCS a b LEN"), ":6\r\n");
    assert_eq!(h.run("LCS a nokey"), "$0\r\n\r\n");
    assert_eq!(
        h.run("LCS a b IDX"),
        "*4\r\n$7\r\nmatches\r\n*2\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n*2\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n$3\r\nlen\r\n:6\r\n"
    );
    assert_eq!(
        h.run("LCS a b IDX MINMATCHLEN 4 WITHMATCHLEN"),
        "*4\r\n$7\r\nmatches\r\n*1\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n$3\r\nlen\r\n:6\r\n"
    );
    assert_eq!(
        h.run("LCS a b LEN IDX"),
        "-ERR If you want both the length and indexes, please just use IDX.\r\n"
    );
    assert_eq!(h.run("LCS a b MINMATCHLEN x"), NOT_INT);
    assert_eq!(h.run("LCS a b FOO"), "-ERR syntax error\r\n");
    assert_eq!(h.run("CONFIG SET proto-max-bulk-len 1mb"), "+OK\r\n");
    h.run(&format!("SET big {}", "x".repeat(600)));
    assert_eq!(
        h.run("LCS big big"),
        "-ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len\r\n"
    );
}

#[test]
fn scan_pages_are_not_empty() {
    let mut h = Harness::new(ServerConfig::default());
    for i in 0..300 {
        h.run(&format!("SET key:{i} v"));
    }
    let mut cursor = "0".to_string();
    let mut calls = 0;
    loop {
        let r = h.run(&format!("SCAN {cursor} COUNT 10"));
        calls += 1;
        let mut lines = r.split("\r\n");
        lines.next();
        lines.next();
        cursor = lines.next().unwrap().to_string();
        let n: usize = lines.next().unwrap()[1..].parse().unwrap();
        assert!(n > 0 && n <= 10, "{r}");
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(calls, 30);
}

#[test]
fn dump_restore() {
    let mut h = Harness::new(ServerConfig::default());
    assert_eq!(h.run("DUMP nokey"), "$-1\r\n");
    h.run("SET k hello");
    let payload = super::dump::dump_string(b"hello");
    let reply = h.run("DUMP k");
    assert_eq!(reply.as_bytes()[..4], *b"$17\r");
    // Restore through the byte-exact RESP path (the payload is binary).
    let restore = |h: &mut Harness, args: &[&[u8]], now: u64| h.raw(args, now);
    assert_eq!(
        restore(&mut h, &[b"RESTORE", b"k", b"0", &payload], 1_000_000),
        "-BUSYKEY Target key name already exists.\r\n"
    );
    assert_eq!(
        restore(&mut h, &[b"RESTORE", b"k2", b"5000", &payload], 1_000_000),
        "+OK\r\n"
    );
    assert_eq!(h.run("GET k2"), "$5\r\nhello\r\n");
    assert_eq!(h.run("PTTL k2"), ":5000\r\n");
    assert_eq!(
        restore(
            &mut h,
            &[b"RESTORE", b"k2", b"2000000", &payload, b"REPLACE", b"ABSTTL"],
            1_000_000
        ),
        "+OK\r\n"
    );
    assert_eq!(h.run("PEXPIRETIME k2"), ":2000000\r\n");
    // An absolute time in the past: nothing is created.
    assert_eq!(
        restore(
            &mut h,
            &[b"RESTORE", b"k3", b"5", &payload, b"ABSTTL"],
            1_000_000
        ),
        "+OK\r\n"
    );
    assert_eq!(h.run("EXISTS k3"), ":0\r\n");
    assert_eq!(
        restore(&mut h, &[b"RESTORE", b"k4", b"-1", &payload], 1_000_000),
        "-ERR Invalid TTL value, must be >= 0\r\n"
    );
    assert_eq!(
        restore(
            &mut h,
            &[b"RESTORE", b"k4", b"0", b"garbage-payload"],
            1_000_000
        ),
        "-ERR DUMP payload version or checksum are wrong\r\n"
    );
    assert_eq!(
        restore(
            &mut h,
            &[b"RESTORE", b"k4", b"0", &payload, b"IDLETIME", b"-1"],
            1_000_000
        ),
        "-ERR Invalid IDLETIME value, must be >= 0\r\n"
    );
    assert_eq!(
        restore(
            &mut h,
            &[b"RESTORE", b"k4", b"0", &payload, b"FREQ", b"256"],
            1_000_000
        ),
        "-ERR Invalid FREQ value, must be >= 0 and <= 255\r\n"
    );
    assert_eq!(
        restore(
            &mut h,
            &[
                b"RESTORE",
                b"k4",
                b"0",
                &payload,
                b"FREQ",
                b"1",
                b"IDLETIME",
                b"1"
            ],
            1_000_000
        ),
        "-ERR syntax error\r\n"
    );
    assert_eq!(
        restore(
            &mut h,
            &[b"RESTORE", b"k4", b"0", &payload, b"IDLETIME", b"10"],
            1_000_000
        ),
        "+OK\r\n"
    );
}
