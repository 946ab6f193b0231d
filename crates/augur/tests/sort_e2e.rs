//! End-to-end tests of SORT / SORT_RO on sorted sets over real sockets (sort.c): the
//! members sorted as any SORT sorts them, BY nosort in score order (DESC from the top,
//! LIMIT taken from that order), and the listpack-to-skiplist conversion SORT does to a
//! sorted set as Redis 7.0 does, without touching WATCH.

mod common;

use augur_server::ServerConfig;
use common::{encoding, err, q, TestServer};

#[tokio::test]
async fn sort_sorted_sets() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut c = s.con().await;
    let _: i64 = q(
        &mut c,
        &[
            "ZADD", "z", "1", "30", "5", "4", "2", "-1", "10", "2.5", "3", "100",
        ],
    )
    .await
    .unwrap();
    // By member value, numerically (scores unused), or ALPHA.
    let v: Vec<String> = q(&mut c, &["SORT", "z"]).await.unwrap();
    assert_eq!(v, ["-1", "2.5", "4", "30", "100"]);
    let v: Vec<String> = q(&mut c, &["SORT", "z", "ALPHA", "DESC"]).await.unwrap();
    assert_eq!(v, ["4", "30", "2.5", "100", "-1"]);
    // BY nosort: score order; DESC from the highest; LIMIT over that order.
    let v: Vec<String> = q(&mut c, &["SORT", "z", "BY", "nosort"]).await.unwrap();
    assert_eq!(v, ["30", "-1", "100", "4", "2.5"]);
    let v: Vec<String> = q(
        &mut c,
        &["SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "2"],
    )
    .await
    .unwrap();
    assert_eq!(v, ["4", "100"]);
    let v: Vec<String> = q(
        &mut c,
        &["SORT_RO", "z", "BY", "nosort", "LIMIT", "3", "-1"],
    )
    .await
    .unwrap();
    assert_eq!(v, ["4", "2.5"]);
    let v: Vec<String> = q(&mut c, &["SORT", "z", "BY", "nosort", "LIMIT", "5", "1"])
        .await
        .unwrap();
    assert!(v.is_empty());
    // STORE keeps the score order (only a set is sorted ALPHA for STORE).
    let n: i64 = q(
        &mut c,
        &["SORT", "z", "BY", "nosort", "DESC", "STORE", "dst"],
    )
    .await
    .unwrap();
    assert_eq!(n, 5);
    let v: Vec<String> = q(&mut c, &["LRANGE", "dst", "0", "-1"]).await.unwrap();
    assert_eq!(v, ["2.5", "4", "100", "-1", "30"]);

    // A listpack-encoded sorted set is a skiplist after SORT_RO, even when the SORT
    // fails; a WATCHed key so converted does not abort the transaction.
    let _: i64 = q(&mut c, &["ZADD", "w", "1", "a", "2", "b"]).await.unwrap();
    assert_eq!(encoding(&mut c, "w").await, "listpack");
    let mut c2 = s.con().await;
    let _: () = q(&mut c2, &["WATCH", "w"]).await.unwrap();
    assert_eq!(
        err(&mut c, &["SORT_RO", "w"]).await,
        "ERR One or more scores can't be converted into double"
    );
    assert_eq!(encoding(&mut c, "w").await, "skiplist");
    let v: Vec<String> = q(&mut c, &["ZRANGE", "w", "0", "-1", "WITHSCORES"])
        .await
        .unwrap();
    assert_eq!(v, ["a", "1", "b", "2"]);
    let _: () = q(&mut c2, &["MULTI"]).await.unwrap();
    let _: () = q(&mut c2, &["SET", "x", "1"]).await.unwrap();
    let r: Option<Vec<String>> = q(&mut c2, &["EXEC"]).await.unwrap();
    assert_eq!(r, Some(vec!["OK".to_string()]));
    s.stop().await;
}
