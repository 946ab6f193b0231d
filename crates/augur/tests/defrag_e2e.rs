//! End-to-end test of active defragmentation (`activedefrag`) over a real socket.
//!
//! Alone in its test binary: the short entries' slabs (`augur_store::slab`) are
//! process-wide, as one server has one process, and test servers running concurrently in
//! one process fill each other's freed slots (another test's keys of the same size took
//! the slots this test's evictions freed, so no slab stayed sparse and nothing moved).

mod common;

use augur_server::ServerConfig;
use common::{info_field, q, TestServer};
use std::time::Duration;

/// Active defragmentation (`activedefrag`): random evictions under a value-size drift
/// leave the first size class's slabs sparse; the cron moves entries out of them
/// (INFO active_defrag_hits), every key still reads back, and it can be switched off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn active_defrag_moves_entries_and_keeps_values() {
    let s = TestServer::start(ServerConfig::default()).await;
    let mut c = s.con().await;
    let on: Vec<String> = q(&mut c, &["CONFIG", "GET", "activedefrag"]).await.unwrap();
    assert_eq!(on, ["activedefrag", "yes"]);
    for (k, v) in [
        ("maxmemory", "16mb"),
        ("maxmemory-policy", "allkeys-random"),
        ("active-defrag-ignore-bytes", "512kb"),
        ("active-defrag-threshold-lower", "3"),
    ] {
        let _: () = q(&mut c, &["CONFIG", "SET", k, v]).await.unwrap();
    }
    // Two phases of value sizes: the second's writes evict the first's entries at
    // random, leaving their slabs part-empty.
    for (phase, len) in [(0, 100usize), (1, 150)] {
        for batch in 0..40 {
            let mut p = redis::pipe();
            for i in 0..5_000 {
                let n = batch * 5_000 + i;
                let v = format!("{phase}:{n}:").into_bytes();
                let mut v = v.clone();
                v.resize(len, b'x');
                p.cmd("SET").arg(format!("p{phase}:{n}")).arg(v).ignore();
            }
            let _: () = p.query_async(&mut c).await.unwrap();
        }
    }
    let mut hits = 0;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let info: String = q(&mut c, &["INFO", "stats"]).await.unwrap();
        hits = info_field(&info, "active_defrag_hits");
        if hits > 0 {
            break;
        }
    }
    assert!(hits > 0, "no entry moved");
    // What survived reads back whole.
    let keys: Vec<String> = q(&mut c, &["KEYS", "p0:*"]).await.unwrap();
    assert!(!keys.is_empty());
    for k in keys.iter().take(2_000) {
        let v: Vec<u8> = q(&mut c, &["GET", k]).await.unwrap();
        let n = &k[3..];
        assert!(v.starts_with(format!("0:{n}:").as_bytes()), "{k}");
        assert_eq!(v.len(), 100);
    }
    let _: () = q(&mut c, &["CONFIG", "SET", "activedefrag", "no"])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let info: String = q(&mut c, &["INFO", "memory"]).await.unwrap();
    assert_eq!(info_field(&info, "active_defrag_running"), 0);
    s.stop().await;
}
