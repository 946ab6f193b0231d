//! End-to-end tests of Pub/Sub (issue 11 item 5): the `redis` crate's PubSub API, exact
//! RESP2 and RESP3 bytes over raw sockets, ordering, tenant isolation, clean-up on
//! disconnect, and the output-buffer limit that keeps a stalled subscriber from holding
//! memory or the publisher.

mod common;

use augur_server::ServerConfig;
use common::{err, q, TestServer};
use futures_util::StreamExt;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `send`, then reads until exactly `want` arrived (or 3 s pass) and returns it.
async fn exchange(s: &mut TcpStream, send: &[u8], want: &[u8]) -> Vec<u8> {
    s.write_all(send).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while got.len() < want.len() {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) | Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
    got
}

async fn expect(s: &mut TcpStream, send: &[u8], want: &str) {
    let got = exchange(s, send, want.as_bytes()).await;
    assert_eq!(
        String::from_utf8_lossy(&got),
        want,
        "after sending {:?}",
        String::from_utf8_lossy(send)
    );
}

/// Nothing more arrives within 200 ms.
async fn expect_silence(s: &mut TcpStream) {
    let mut buf = [0u8; 256];
    match tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf)).await {
        Err(_) => {}
        Ok(Ok(n)) => panic!("unexpected {:?}", String::from_utf8_lossy(&buf[..n])),
        Ok(Err(e)) => panic!("read error {e}"),
    }
}

async fn next_msg(
    stream: &mut (impl futures_util::Stream<Item = redis::Msg> + Unpin),
) -> redis::Msg {
    tokio::time::timeout(Duration::from_secs(3), stream.next())
        .await
        .expect("a message within 3 s")
        .expect("stream open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_crate_pubsub_channels_patterns_and_introspection() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let client = redis::Client::open(format!("redis://{}/", srv.addr)).unwrap();
    let mut ps = client.get_async_pubsub().await.unwrap();
    ps.subscribe("news").await.unwrap();
    ps.subscribe("sport").await.unwrap();
    ps.psubscribe("n*").await.unwrap();
    let mut c = srv.con().await;

    // A channel subscriber and a pattern subscriber on one connection: two receptions.
    assert_eq!(
        q::<i64>(&mut c, &["PUBLISH", "news", "hello"])
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        q::<i64>(&mut c, &["PUBLISH", "sport", "goal"])
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        q::<i64>(&mut c, &["PUBLISH", "nothing-here", "x"])
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        q::<i64>(&mut c, &["PUBLISH", "other", "x"]).await.unwrap(),
        0
    );
    {
        let mut stream = ps.on_message();
        let m = next_msg(&mut stream).await;
        assert_eq!(
            (m.get_channel_name(), m.get_payload_bytes()),
            ("news", &b"hello"[..])
        );
        assert!(!m.from_pattern());
        let m = next_msg(&mut stream).await;
        assert_eq!(
            (m.get_channel_name(), m.get_payload_bytes()),
            ("news", &b"hello"[..])
        );
        assert_eq!(m.get_pattern::<String>().unwrap(), "n*");
        let m = next_msg(&mut stream).await;
        assert_eq!(
            (m.get_channel_name(), m.get_payload_bytes()),
            ("sport", &b"goal"[..])
        );
        let m = next_msg(&mut stream).await;
        assert_eq!(m.get_channel_name(), "nothing-here");
    }

    let mut chans: Vec<String> = q(&mut c, &["PUBSUB", "CHANNELS"]).await.unwrap();
    chans.sort();
    assert_eq!(chans, ["news", "sport"]);
    let chans: Vec<String> = q(&mut c, &["PUBSUB", "CHANNELS", "s*"]).await.unwrap();
    assert_eq!(chans, ["sport"]);
    let numsub: Vec<redis::Value> = q(&mut c, &["PUBSUB", "NUMSUB", "news", "none"])
        .await
        .unwrap();
    assert_eq!(
        numsub,
        vec![
            redis::Value::BulkString(b"news".to_vec()),
            redis::Value::Int(1),
            redis::Value::BulkString(b"none".to_vec()),
            redis::Value::Int(0)
        ]
    );
    assert_eq!(q::<i64>(&mut c, &["PUBSUB", "NUMPAT"]).await.unwrap(), 1);
    let info: String = q(&mut c, &["INFO", "stats"]).await.unwrap();
    assert!(info.contains("pubsub_channels:2\r\n"), "{info}");
    assert!(info.contains("pubsub_patterns:1\r\n"), "{info}");
    assert!(info.contains("pubsubshard_channels:0\r\n"), "{info}");
    let list: String = q(&mut c, &["CLIENT", "LIST", "TYPE", "pubsub"])
        .await
        .unwrap();
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(
        list.contains(" flags=P ") && list.contains(" sub=2 psub=1 ssub=0 "),
        "{list}"
    );
    let list: String = q(&mut c, &["CLIENT", "LIST", "TYPE", "normal"])
        .await
        .unwrap();
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(
        list.contains(" flags=N ") && list.contains(" sub=0 psub=0 ssub=0 "),
        "{list}"
    );
    assert_eq!(
        err(&mut c, &["PUBSUB", "CHANNELS", "a", "b"]).await,
        "ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP."
    );
    assert_eq!(
        err(&mut c, &["PUBSUB", "NUMPAT", "x"]).await,
        "ERR wrong number of arguments for 'pubsub|numpat' command"
    );

    ps.unsubscribe("sport").await.unwrap();
    ps.punsubscribe("n*").await.unwrap();
    assert_eq!(
        q::<i64>(&mut c, &["PUBLISH", "sport", "x"]).await.unwrap(),
        0
    );
    assert_eq!(q::<i64>(&mut c, &["PUBSUB", "NUMPAT"]).await.unwrap(), 0);

    // Disconnecting removes every subscription.
    drop(ps);
    for _ in 0..100 {
        if q::<i64>(&mut c, &["PUBLISH", "news", "x"]).await.unwrap() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        q::<i64>(&mut c, &["PUBLISH", "news", "x"]).await.unwrap(),
        0
    );
    assert_eq!(
        q::<Vec<String>>(&mut c, &["PUBSUB", "CHANNELS"])
            .await
            .unwrap()
            .len(),
        0
    );
    let info: String = q(&mut c, &["INFO", "stats"]).await.unwrap();
    assert!(info.contains("pubsub_channels:0\r\n"), "{info}");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resp2_subscribed_context_exact_bytes() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut s = srv.raw().await;
    let mut c = srv.con().await;
    expect(
        &mut s,
        b"SUBSCRIBE a b a\r\n",
        "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n\
         *3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n\
         *3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:2\r\n",
    )
    .await;
    expect(
        &mut s,
        b"PSUBSCRIBE p*\r\nGET x\r\nCLIENT LIST\r\nCLIENT NOSUCH\r\nNOSUCH\r\nPING\r\nPING hi\r\n",
        "*3\r\n$10\r\npsubscribe\r\n$2\r\np*\r\n:3\r\n\
         -ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n\
         -ERR Can't execute 'client|list': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n\
         -ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP.\r\n\
         -ERR unknown command 'NOSUCH', with args beginning with: \r\n\
         *2\r\n$4\r\npong\r\n$0\r\n\r\n\
         *2\r\n$4\r\npong\r\n$2\r\nhi\r\n",
    )
    .await;
    // A message arrives while the subscriber is idle.
    assert_eq!(
        q::<i64>(&mut c, &["PUBLISH", "pig", "oink"]).await.unwrap(),
        1
    );
    expect(
        &mut s,
        b"",
        "*4\r\n$8\r\npmessage\r\n$2\r\np*\r\n$3\r\npig\r\n$4\r\noink\r\n",
    )
    .await;
    // Shard channels count separately.
    expect(
        &mut s,
        b"SSUBSCRIBE s\r\n",
        "*3\r\n$10\r\nssubscribe\r\n$1\r\ns\r\n:1\r\n",
    )
    .await;
    assert_eq!(q::<i64>(&mut c, &["SPUBLISH", "s", "m"]).await.unwrap(), 1);
    assert_eq!(q::<i64>(&mut c, &["PUBLISH", "s", "m"]).await.unwrap(), 0);
    expect(
        &mut s,
        b"",
        "*3\r\n$8\r\nsmessage\r\n$1\r\ns\r\n$1\r\nm\r\n",
    )
    .await;
    // Leaving: every kind, then a normal connection again.
    let got = exchange(
        &mut s,
        b"UNSUBSCRIBE\r\n",
        b"*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:2\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:1\r\n",
    )
    .await;
    assert_eq!(
        String::from_utf8_lossy(&got),
        "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:2\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:1\r\n"
    );
    expect(
        &mut s,
        b"UNSUBSCRIBE\r\nPUNSUBSCRIBE\r\nGET x\r\n",
        "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:1\r\n\
         *3\r\n$12\r\npunsubscribe\r\n$2\r\np*\r\n:0\r\n\
         -ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n",
    )
    .await;
    expect(
        &mut s,
        b"SUNSUBSCRIBE s\r\nGET x\r\nPING\r\nPUNSUBSCRIBE\r\n",
        "*3\r\n$12\r\nsunsubscribe\r\n$1\r\ns\r\n:0\r\n$-1\r\n+PONG\r\n*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n",
    )
    .await;
    assert_eq!(q::<i64>(&mut c, &["PUBLISH", "a", "m"]).await.unwrap(), 0);
    expect_silence(&mut s).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resp3_pushes_and_commands_while_subscribed() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let mut s = srv.raw().await;
    let mut c = srv.con().await;
    let hello = exchange(&mut s, b"HELLO 3\r\n", &[0u8; 10]).await;
    assert!(hello.starts_with(b"%7\r\n"));
    let mut rest = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_millis(100), s.read(&mut rest)).await;
    // Confirmations are pushes; normal commands run; PING is a plain PONG.
    expect(
        &mut s,
        b"SUBSCRIBE ch\r\nSET k v\r\nGET k\r\nPING\r\n",
        ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n+OK\r\n$1\r\nv\r\n+PONG\r\n",
    )
    .await;
    assert_eq!(q::<i64>(&mut c, &["PUBLISH", "ch", "hi"]).await.unwrap(), 1);
    expect(
        &mut s,
        b"",
        ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n",
    )
    .await;
    // Publishing to itself: the push comes before PUBLISH's reply, as in Redis.
    expect(
        &mut s,
        b"PUBLISH ch self\r\n",
        ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$4\r\nself\r\n:1\r\n",
    )
    .await;
    // Mass unsubscribe with nothing to drop names a null channel.
    expect(
        &mut s,
        b"PUNSUBSCRIBE\r\nUNSUBSCRIBE\r\nUNSUBSCRIBE\r\n",
        ">3\r\n$12\r\npunsubscribe\r\n_\r\n:1\r\n\
         >3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:0\r\n\
         >3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n",
    )
    .await;
    // HELLO 2 while subscribed switches the encoding of later messages.
    expect(
        &mut s,
        b"SUBSCRIBE ch\r\n",
        ">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n",
    )
    .await;
    let hello2 = exchange(&mut s, b"HELLO 2\r\n", &[0u8; 14]).await;
    assert!(hello2.starts_with(b"*14\r\n"));
    let _ = tokio::time::timeout(Duration::from_millis(100), s.read(&mut rest)).await;
    assert_eq!(
        q::<i64>(&mut c, &["PUBLISH", "ch", "two"]).await.unwrap(),
        1
    );
    expect(
        &mut s,
        b"",
        "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$3\r\ntwo\r\n",
    )
    .await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_leaves_pubsub_mode_and_restores_defaults() {
    let srv = TestServer::start(ServerConfig {
        users: vec!["app on >pw ~* &* +@all".into()],
        ..Default::default()
    })
    .await;
    let mut s = srv.raw().await;
    let mut c = srv.con().await;
    expect(
        &mut s,
        b"AUTH app pw\r\nSELECT 2\r\nCLIENT SETNAME n\r\n",
        "+OK\r\n+OK\r\n+OK\r\n",
    )
    .await;
    expect(
        &mut s,
        b"SUBSCRIBE x\r\n",
        "*3\r\n$9\r\nsubscribe\r\n$1\r\nx\r\n:1\r\n",
    )
    .await;
    expect(&mut s, b"RESET\r\n", "+RESET\r\n").await;
    // Back as `default`, db 0, no name, no subscriptions, normal commands allowed.
    expect(
        &mut s,
        b"ACL WHOAMI\r\nCLIENT GETNAME\r\nPING\r\n",
        "$7\r\ndefault\r\n$-1\r\n+PONG\r\n",
    )
    .await;
    let mut app = srv.con_as("app", "pw").await;
    assert_eq!(q::<i64>(&mut app, &["PUBLISH", "x", "m"]).await.unwrap(), 0);
    assert_eq!(q::<i64>(&mut c, &["PUBLISH", "x", "m"]).await.unwrap(), 0);
    expect_silence(&mut s).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channels_are_per_tenant() {
    let srv = TestServer::start(ServerConfig {
        users: vec![
            "app1 on >pw1 ~* &* +@all".into(),
            "app2 on >pw2 ~* &* +@all".into(),
        ],
        ..Default::default()
    })
    .await;
    let sub = |user: &'static str, pass: &'static str| {
        let url = format!("redis://{user}:{pass}@{}/", srv.addr);
        async move {
            let client = redis::Client::open(url).unwrap();
            let mut ps = client.get_async_pubsub().await.unwrap();
            ps.subscribe("inval").await.unwrap();
            ps.psubscribe("*").await.unwrap();
            ps
        }
    };
    let mut ps1 = sub("app1", "pw1").await;
    let mut ps2 = sub("app2", "pw2").await;
    let mut a1 = srv.con_as("app1", "pw1").await;
    let mut a2 = srv.con_as("app2", "pw2").await;
    let mut d = srv.con().await;

    // Each tenant's PUBLISH reaches only its own subscriber (channel + pattern = 2).
    assert_eq!(
        q::<i64>(&mut a1, &["PUBLISH", "inval", "from1"])
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        q::<i64>(&mut a2, &["PUBLISH", "inval", "from2"])
            .await
            .unwrap(),
        2
    );
    // The default tenant, even with its admin rights, has its own channels.
    assert_eq!(
        q::<i64>(&mut d, &["PUBLISH", "inval", "fromd"])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        q::<Vec<String>>(&mut d, &["PUBSUB", "CHANNELS"])
            .await
            .unwrap()
            .len(),
        0
    );
    assert_eq!(q::<i64>(&mut d, &["PUBSUB", "NUMPAT"]).await.unwrap(), 0);
    assert_eq!(
        q::<Vec<String>>(&mut a1, &["PUBSUB", "CHANNELS"])
            .await
            .unwrap(),
        ["inval"]
    );
    assert_eq!(q::<i64>(&mut a2, &["PUBSUB", "NUMPAT"]).await.unwrap(), 1);
    let n: Vec<redis::Value> = q(&mut a2, &["PUBSUB", "NUMSUB", "inval"]).await.unwrap();
    assert_eq!(n[1], redis::Value::Int(1));

    for (ps, want) in [(&mut ps1, "from1"), (&mut ps2, "from2")] {
        let mut stream = ps.on_message();
        for _ in 0..2 {
            let m = next_msg(&mut stream).await;
            assert_eq!(m.get_payload_bytes(), want.as_bytes());
        }
        // Nothing from the other tenant follows.
        assert!(
            tokio::time::timeout(Duration::from_millis(200), stream.next())
                .await
                .is_err(),
            "a message crossed tenants"
        );
    }
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_subscriber_sees_one_order() {
    let srv = TestServer::start(ServerConfig::default()).await;
    let client = redis::Client::open(format!("redis://{}/", srv.addr)).unwrap();
    let mut subs = Vec::new();
    for _ in 0..2 {
        let mut ps = client.get_async_pubsub().await.unwrap();
        ps.subscribe("seq").await.unwrap();
        subs.push(ps);
    }
    // Two publishers, pipelined, at the same time.
    const N: usize = 2000;
    let mut tasks = Vec::new();
    for p in 0..2 {
        let mut con = srv.con().await;
        tasks.push(tokio::spawn(async move {
            let mut pipe = redis::pipe();
            for i in 0..N {
                pipe.cmd("PUBLISH").arg("seq").arg(format!("{p}:{i}"));
            }
            let r: Vec<i64> = pipe.query_async(&mut con).await.unwrap();
            assert!(r.iter().all(|&n| n == 2));
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut orders = Vec::new();
    for ps in &mut subs {
        let mut stream = ps.on_message();
        let mut got = Vec::new();
        for _ in 0..2 * N {
            got.push(next_msg(&mut stream).await.get_payload::<String>().unwrap());
        }
        // Each publisher's messages arrive in the order it sent them.
        for p in 0..2 {
            let mine: Vec<usize> = got
                .iter()
                .filter_map(|m| m.strip_prefix(&format!("{p}:")))
                .map(|i| i.parse().unwrap())
                .collect();
            assert_eq!(mine, (0..N).collect::<Vec<_>>());
        }
        orders.push(got);
    }
    assert_eq!(
        orders[0], orders[1],
        "both subscribers see one global order"
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_subscriber_neither_blocks_the_publisher_nor_holds_memory() {
    let srv = TestServer::start(ServerConfig::default()).await;
    // A raw subscriber that never reads again.
    let mut s = srv.raw().await;
    expect(
        &mut s,
        b"SUBSCRIBE big\r\n",
        "*3\r\n$9\r\nsubscribe\r\n$3\r\nbig\r\n:1\r\n",
    )
    .await;
    let mut c = srv.con().await;
    let payload = "x".repeat(1 << 20);
    let started = std::time::Instant::now();
    // 96 MB: more than the socket buffers plus the 32 MB hard limit.
    let mut delivered = 0;
    for _ in 0..96 {
        delivered += q::<i64>(&mut c, &["PUBLISH", "big", &payload])
            .await
            .unwrap();
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "publishing took {:?}",
        started.elapsed()
    );
    assert!(delivered > 0);
    // The subscriber was disconnected: its subscription is gone.
    let mut gone = false;
    for _ in 0..100 {
        let n: Vec<redis::Value> = q(&mut c, &["PUBSUB", "NUMSUB", "big"]).await.unwrap();
        if n[1] == redis::Value::Int(0) {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "the stalled subscriber is still subscribed");
    assert_eq!(q::<i64>(&mut c, &["PUBLISH", "big", "x"]).await.unwrap(), 0);
    srv.stop().await;
}
