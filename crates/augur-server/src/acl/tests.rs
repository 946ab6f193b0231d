use super::*;
use crate::resp::Args;

fn build(argv: &[&[u8]]) -> (Vec<u8>, Vec<(usize, usize)>) {
    let mut buf = Vec::new();
    let mut ranges = Vec::new();
    for a in argv {
        ranges.push((buf.len(), buf.len() + a.len()));
        buf.extend_from_slice(a);
    }
    (buf, ranges)
}

fn sel(rules: &[&str]) -> Result<Selector, RuleError> {
    let mut s = Selector::new(true, false);
    for r in rules {
        s.apply(r.as_bytes())?;
    }
    Ok(s)
}

fn perms(rules: &[&str]) -> Perms {
    let mut p = Perms::new(false);
    for r in rules {
        if r.starts_with('(') {
            p.add_selector(r.as_bytes(), false).unwrap();
        } else {
            p.root().apply(r.as_bytes()).unwrap();
        }
    }
    p.refresh();
    p
}

fn check(p: &Perms, argv: &[&str]) -> Result<(), Denied> {
    let bytes: Vec<&[u8]> = argv.iter().map(|s| s.as_bytes()).collect();
    let (buf, ranges) = build(&bytes);
    let args = Args::from_parts(&buf, &ranges);
    let id = request_id(argv[0], args).expect("known command");
    p.check(&Request { id, args })
}

#[test]
fn table_is_sorted_and_complete() {
    assert!(rcmds().windows(2).all(|w| w[0].name < w[1].name));
    for c in crate::cmdtable::COMMANDS {
        assert!(
            lookup(c.name).is_some(),
            "{} missing from the ACL table",
            c.name
        );
        for s in c.subcommands {
            assert!(
                lookup(s.name).is_some(),
                "{} missing from the ACL table",
                s.name
            );
        }
    }
    assert_eq!(lookup("GET"), lookup("get"));
    assert!(lookup("nosuch").is_none());
}

#[test]
fn describe_matches_redis() {
    // Outputs of Redis 7.0.15 for the same rules.
    assert_eq!(sel(&[]).unwrap().describe_commands(), "-@all");
    assert_eq!(sel(&["+@all"]).unwrap().describe_commands(), "+@all");
    assert_eq!(
        sel(&["+@all", "-client|kill"]).unwrap().describe_commands(),
        "+@all -client|kill"
    );
    assert_eq!(
        sel(&["+get", "+select|0", "-@string", "+@hash"])
            .unwrap()
            .describe_commands(),
        "-@all +@hash +select|0"
    );
    assert_eq!(
        sel(&["+memory|doctor"]).unwrap().describe_commands(),
        "-@all +memory|doctor"
    );
    assert_eq!(
        sel(&["+memory|doctor", "+memory"])
            .unwrap()
            .describe_commands(),
        "-@all +memory"
    );
    assert_eq!(
        sel(&["+@all", "-memory"]).unwrap().describe_commands(),
        "+@all -memory"
    );
    let d = sel(&["+@all", "-@string", "+incr", "-debug", "+debug|digest"])
        .unwrap()
        .describe_commands();
    assert!(d.starts_with("+@all") && d.contains("-@string") && d.contains("+incr"));
    assert!(d.contains("-debug +debug|digest"), "{d}");
    // Every category alone describes as itself, both ways (acl.tcl "reasonable results").
    for c in CATEGORIES {
        let minus = format!("-@{c}");
        let plus = format!("+@{c}");
        assert_eq!(
            sel(&["+@all", &minus]).unwrap().describe_commands(),
            format!("+@all {minus}")
        );
        assert_eq!(
            sel(&["-@all", &plus]).unwrap().describe_commands(),
            format!("-@all {plus}")
        );
    }
}

#[test]
fn rule_errors() {
    assert_eq!(sel(&["~*", "~foo"]).unwrap_err(), RuleError::KeyAfterAll);
    assert_eq!(
        sel(&["&*", "&foo"]).unwrap_err(),
        RuleError::ChannelAfterAll
    );
    assert_eq!(sel(&["+nosuch"]).unwrap_err(), RuleError::Unknown);
    assert_eq!(sel(&["+@nosuch"]).unwrap_err(), RuleError::Unknown);
    assert_eq!(sel(&["-get|x"]).unwrap_err(), RuleError::Unknown);
    assert_eq!(sel(&["+config|asdf"]).unwrap_err(), RuleError::Unknown);
    assert_eq!(sel(&["+get|key1|key2"]).unwrap_err(), RuleError::Unknown);
    assert_eq!(
        sel(&["+acl|setuser|x"]).unwrap_err(),
        RuleError::SubcommandFirstArg
    );
    assert_eq!(sel(&["+debug|"]).unwrap_err(), RuleError::Syntax);
    assert_eq!(sel(&["%X~a"]).unwrap_err(), RuleError::Syntax);
    assert_eq!(sel(&["%~a"]).unwrap_err(), RuleError::Syntax);
    assert_eq!(sel(&["%R"]).unwrap_err(), RuleError::Syntax);
    assert_eq!(sel(&["bogus"]).unwrap_err(), RuleError::Syntax);
    assert!(sel(&["+get|x"]).is_ok());
}

#[test]
fn keys_describe_and_merge() {
    let s = sel(&["%R~r*", "%W~w*", "%RW~x*", "~y*", "%W~r*"]).unwrap();
    assert_eq!(s.describe_keys(), "~r* %W~w* ~x* ~y*");
    let s = sel(&["%RW~*"]).unwrap();
    assert_eq!(s.describe_keys(), "~*");
    let s = sel(&["&ch*", "&ch*"]).unwrap();
    assert_eq!(s.describe(), "resetchannels &ch* -@all");
}

#[test]
fn command_key_and_channel_checks() {
    let p = perms(&["+@all", "~foo:*", "&news.*"]);
    assert!(!p.unrestricted);
    assert_eq!(check(&p, &["SET", "foo:1", "v"]), Ok(()));
    assert_eq!(check(&p, &["SET", "zap", "v"]), Err(Denied::Key(1)));
    assert_eq!(
        check(&p, &["MSET", "foo:1", "a", "zap", "b"]),
        Err(Denied::Key(3))
    );
    assert_eq!(check(&p, &["PUBLISH", "news.a", "x"]), Ok(()));
    assert_eq!(
        check(&p, &["PUBLISH", "other", "x"]),
        Err(Denied::Channel(1))
    );
    // Patterns must match a permitted pattern literally.
    assert_eq!(check(&p, &["PSUBSCRIBE", "news.*"]), Ok(()));
    assert_eq!(
        check(&p, &["PSUBSCRIBE", "news.a*"]),
        Err(Denied::Channel(1))
    );
    assert_eq!(check(&p, &["PING"]), Ok(()));

    let p = perms(&["-@all", "+get", "+client|id", "+select|0", "~*"]);
    assert_eq!(check(&p, &["GET", "a"]), Ok(()));
    assert_eq!(check(&p, &["SET", "a", "b"]), Err(Denied::Command));
    assert_eq!(check(&p, &["CLIENT", "ID"]), Ok(()));
    assert_eq!(check(&p, &["CLIENT", "KILL", "x"]), Err(Denied::Command));
    assert_eq!(check(&p, &["SELECT", "0"]), Ok(()));
    assert_eq!(check(&p, &["SELECT", "1"]), Err(Denied::Command));
    // AUTH and HELLO are never refused (no_auth).
    assert_eq!(check(&p, &["AUTH", "x", "y"]), Ok(()));
    assert!(perms(&["+@all", "~*", "&*"]).unrestricted);
}

#[test]
fn read_write_key_permissions() {
    let p = perms(&["+@all", "%R~read*", "%W~write*", "%RW~rw*"]);
    assert_eq!(check(&p, &["GET", "readstr"]), Ok(()));
    assert_eq!(check(&p, &["GET", "writestr"]), Err(Denied::Key(1)));
    assert_eq!(check(&p, &["SET", "writestr", "v"]), Ok(()));
    assert_eq!(check(&p, &["SET", "readstr", "v"]), Err(Denied::Key(1)));
    // SET ... GET reads as well.
    assert_eq!(
        check(&p, &["SET", "writestr", "v", "GET"]),
        Err(Denied::Key(1))
    );
    assert_eq!(check(&p, &["SET", "rwstr", "v", "GET"]), Ok(()));
    assert_eq!(
        check(&p, &["BITFIELD", "readstr", "GET", "u4", "0"]),
        Ok(())
    );
    assert_eq!(
        check(&p, &["BITFIELD", "readstr", "SET", "u4", "0", "1"]),
        Err(Denied::Key(1))
    );
    // EXISTS needs neither read nor write, but some permission on the key.
    assert_eq!(check(&p, &["EXISTS", "readx", "writex"]), Ok(()));
    assert_eq!(check(&p, &["EXISTS", "other"]), Err(Denied::Key(1)));
    // COPY reads its source and writes its destination.
    assert_eq!(check(&p, &["COPY", "read1", "write1"]), Ok(()));
    assert_eq!(check(&p, &["COPY", "write1", "read1"]), Err(Denied::Key(1)));
    assert_eq!(check(&p, &["COPY", "read1", "read2"]), Err(Denied::Key(2)));
    // EVAL's keys are numkeys-counted and need both.
    assert_eq!(check(&p, &["EVAL", "s", "2", "rw1", "rw2", "read"]), Ok(()));
    assert_eq!(check(&p, &["EVAL", "s", "1", "read1"]), Err(Denied::Key(3)));
}

#[test]
fn selectors_are_alternatives() {
    let p = perms(&["+get", "~a*", "(+set ~b*)"]);
    assert_eq!(check(&p, &["GET", "a1"]), Ok(()));
    assert_eq!(check(&p, &["SET", "b1", "v"]), Ok(()));
    // Neither selector allows SET on a1: the key failure is the more relevant one.
    assert_eq!(check(&p, &["SET", "a1", "v"]), Err(Denied::Key(1)));
    assert_eq!(check(&p, &["DEL", "a1"]), Err(Denied::Command));
    assert_eq!(
        p.describe(),
        "~a* resetchannels -@all +get (~b* resetchannels -@all +set)"
    );
}

#[test]
fn split_and_merge() {
    assert_eq!(
        split_args(b"+set \"~a b\" 'x'").unwrap(),
        vec![b"+set".to_vec(), b"~a b".to_vec(), b"x".to_vec()]
    );
    assert!(split_args(b"\"open").is_none());
    let args: Vec<&[u8]> = vec![b"on", b"(+get", b"~a*)", b"(+set)"];
    assert_eq!(
        merge_selector_args(&args).unwrap(),
        vec![b"on".to_vec(), b"(+get ~a*)".to_vec(), b"(+set)".to_vec()]
    );
    let args: Vec<&[u8]> = vec![b"on", b"(~a"];
    assert_eq!(merge_selector_args(&args), Err(1));
}

#[test]
fn acl_log_groups_and_limits() {
    let log = AclLog::default();
    let e = |obj: &str, t: u64| LogEntry {
        count: 1,
        reason: "key",
        context: "toplevel",
        object: obj.as_bytes().to_vec(),
        username: "u".into(),
        ctime_ms: t,
        client_info: String::new(),
    };
    log.add(e("a", 0), 128);
    log.add(e("b", 1), 128);
    log.add(e("a", 2), 128);
    let got = log.entries(10);
    assert_eq!(got.len(), 2);
    assert_eq!((got[0].object.as_slice(), got[0].count), (&b"a"[..], 2));
    log.add(e("a", 100_000), 128);
    assert_eq!(log.entries(10).len(), 3);
    for i in 0..10 {
        log.add(e(&i.to_string(), 0), 5);
    }
    assert_eq!(log.entries(100).len(), 5);
}

#[test]
fn genpass_lengths() {
    assert_eq!(genpass(256).len(), 64);
    assert_eq!(genpass(5).len(), 2);
    assert_eq!(genpass(1).len(), 1);
    assert!(genpass(128).bytes().all(|b| b.is_ascii_hexdigit()));
}

proptest::proptest! {
    /// ACL rules are client input: no rule, selector or argument list panics, and what
    /// a selector describes parses back to the same command bitmap.
    #[test]
    fn rules_never_panic(rules in proptest::collection::vec(
        proptest::prop_oneof![
            proptest::string::string_regex("[-+~%&()#<>!@|a-zA-Z*?RW ]{0,12}").unwrap(),
            proptest::sample::select(vec![
                "+@all".to_string(), "-@all".to_string(), "+get".to_string(), "-client".to_string(),
                "+client|id".to_string(), "+select|0".to_string(), "-@string".to_string(),
                "+@hash".to_string(), "~*".to_string(), "%R~a*".to_string(), "&*".to_string(),
                "resetkeys".to_string(), "resetchannels".to_string(), "(+set ~b*)".to_string(),
            ]),
        ], 0..8),
        argv in proptest::collection::vec(proptest::string::string_regex("[a-zA-Z0-9*|]{0,6}").unwrap(), 1..6)
    ) {
        let mut p = Perms::new(false);
        let mut plain = Selector::new(true, false);
        for r in &rules {
            let b = r.as_bytes();
            if b.first() == Some(&b'(') && b.last() == Some(&b')') && b.len() >= 2 {
                let _ = p.add_selector(b, false);
            } else {
                let _ = p.root().apply(b);
            }
            let _ = plain.apply(b);
        }
        p.refresh();
        let _ = p.describe();
        // Round trip: the description rebuilds the same bitmap.
        let described = plain.describe_commands();
        let mut again = Selector::new(true, false);
        for r in described.split(' ') {
            again.apply(r.as_bytes()).unwrap();
        }
        proptest::prop_assert_eq!(again.allowed, plain.allowed);
        let _ = merge_selector_args(&rules.iter().map(|r| r.as_bytes()).collect::<Vec<_>>());
        let _ = split_args(rules.join(" ").as_bytes());
        let bytes: Vec<&[u8]> = argv.iter().map(|s| s.as_bytes()).collect();
        let (buf, ranges) = build(&bytes);
        let args = Args::from_parts(&buf, &ranges);
        if let Some(id) = request_id(&argv[0], args) {
            let _ = p.check(&Request { id, args });
        }
    }
}

#[test]
fn native_getkeys_for_sort_and_migrate() {
    let p = perms(&["+@all", "%R~read*", "%W~write*", "%RW~rw*"]);
    assert_eq!(check(&p, &["SORT", "read", "STORE", "write"]), Ok(()));
    assert_eq!(
        check(&p, &["SORT", "read", "STORE", "read"]),
        Err(Denied::Key(3))
    );
    assert_eq!(
        check(&p, &["SORT", "write", "STORE", "write"]),
        Err(Denied::Key(1))
    );
    assert_eq!(check(&p, &["MIGRATE", "h", "p", "rw", "0", "500"]), Ok(()));
    assert_eq!(
        check(&p, &["MIGRATE", "h", "p", "read", "0", "500"]),
        Err(Denied::Key(3))
    );
    let keys = [
        "MIGRATE", "h", "p", "", "0", "5000", "AUTH2", "KEYS", "123", "KEYS", "write",
    ];
    assert_eq!(check(&p, &keys), Err(Denied::Key(10)));
    // GEORADIUS's STORE / STOREDIST are keyword key specs.
    let g = [
        "GEORADIUS",
        "read",
        "1",
        "2",
        "3",
        "M",
        "STOREDIST",
        "write",
    ];
    assert_eq!(check(&p, &g), Ok(()));
    let g = ["GEORADIUS", "read1", "1", "2", "3", "M", "STORE", "read2"];
    assert_eq!(check(&p, &g), Err(Denied::Key(7)));
}
