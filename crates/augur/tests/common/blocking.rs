//! Blocking commands as the data-type tests (lists_e2e, zsets_e2e) drive them: clients
//! blocked from tasks, waits on INFO's blocked_clients, and the many producers and
//! consumers test's producers and checks.

use super::info_field;
use super::q;
use super::replies::{con, qr, Reply};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use redis::aio::MultiplexedConnection;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// INFO clients' blocked_clients.
pub async fn blocked_clients(c: &mut MultiplexedConnection) -> u64 {
    let info: String = q(c, &["INFO", "clients"]).await.unwrap();
    info_field(&info, "blocked_clients")
}

/// Waits (up to 10 s) until `n` clients are blocked.
pub async fn wait_blocked(c: &mut MultiplexedConnection, n: u64) {
    let t = Instant::now();
    loop {
        let b = blocked_clients(c).await;
        if b == n {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "blocked_clients is {b}, not {n}, after 10 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Sends `args` on `c` from a task (a command that blocks); the task gives the
/// connection back with the reply.
pub fn spawn_q(
    mut c: MultiplexedConnection,
    args: &[&str],
) -> JoinHandle<(MultiplexedConnection, Reply)> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::spawn(async move {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = qr(&mut c, &a).await;
        (c, r)
    })
}

/// Blocks a client of its own on each of `cmds` in turn, each blocked (INFO's count
/// on `c`, which starts from none) before the next is sent; their tasks, in order.
pub async fn block_in_turn(
    addr: SocketAddr,
    c: &mut MultiplexedConnection,
    cmds: &[&[&str]],
) -> Vec<JoinHandle<(MultiplexedConnection, Reply)>> {
    let mut waiting = Vec::new();
    for (i, cmd) in cmds.iter().enumerate() {
        waiting.push(spawn_q(con(addr).await, cmd));
        wait_blocked(c, i as u64 + 1).await;
    }
    waiting
}

/// The reply of a blocked client's task, which must come within 10 s.
pub async fn reply_of(
    h: JoinHandle<(MultiplexedConnection, Reply)>,
) -> (MultiplexedConnection, Reply) {
    tokio::time::timeout(Duration::from_secs(10), h)
        .await
        .expect("the blocked client was answered within 10 s")
        .unwrap()
}

/// The replies of blocked clients' tasks, in order ([`reply_of`] each).
pub async fn replies_of(hs: Vec<JoinHandle<(MultiplexedConnection, Reply)>>) -> Vec<Reply> {
    let mut got = Vec::new();
    for h in hs {
        got.push(reply_of(h).await.1);
    }
    got
}

/// Runs `producers` producers, each on a connection of its own, and waits (up to 60 s
/// each) until they are done. Producer `p` adds `p{p}:{j}` for j in 0..`each` to key
/// `q` in batches of 1 to 16 (the sizes drawn from seed `p`), one `cmd q ...` a batch:
/// `add(cmd, j, element)` puts an element's arguments and `check(reply, batch size)`
/// checks the command's integer reply.
pub async fn produce(
    addr: SocketAddr,
    producers: usize,
    each: usize,
    cmd: &'static str,
    add: fn(&mut redis::Cmd, usize, String),
    check: fn(i64, usize),
) {
    let mut handles = Vec::new();
    for p in 0..producers {
        let mut b = con(addr).await;
        handles.push(tokio::spawn(async move {
            let mut rng = SmallRng::seed_from_u64(p as u64);
            let mut i = 0;
            while i < each {
                let n = rng.gen_range(1..=16).min(each - i);
                let mut c = redis::cmd(cmd);
                c.arg("q");
                for j in i..i + n {
                    add(&mut c, j, format!("p{p}:{j}"));
                }
                let reply: i64 = c.query_async(&mut b).await.unwrap();
                check(reply, n);
                i += n;
            }
        }));
    }
    for h in handles {
        tokio::time::timeout(Duration::from_secs(60), h)
            .await
            .expect("producer done within 60 s")
            .unwrap();
    }
}

/// Checks that one consumer's `got` (of [`produce`]'s elements) has each of the
/// `producers` producers' elements in the order they were added.
pub fn check_producer_order(got: &[String], producers: usize) {
    let mut last = vec![None; producers];
    for e in got {
        let (p, j) = e[1..].split_once(':').unwrap();
        let (p, j): (usize, usize) = (p.parse().unwrap(), j.parse().unwrap());
        assert!(last[p] < Some(j), "{e} after p{p}:{:?}", last[p]);
        last[p] = Some(j);
    }
}

/// Checks that the consumers together (`all`) got each of [`produce`]'s elements once
/// (`what`, "element" or "member", for the message).
pub fn check_each_once(all: &[String], producers: usize, each: usize, what: &str) {
    let set: HashSet<&String> = all.iter().collect();
    assert_eq!(all.len(), producers * each);
    assert_eq!(set.len(), producers * each, "some {what} came twice");
    for p in 0..producers {
        for j in 0..each {
            assert!(set.contains(&format!("p{p}:{j}")), "p{p}:{j} never came");
        }
    }
}
