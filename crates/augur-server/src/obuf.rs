//! Output-buffer limits: Redis's `client-output-buffer-limit` (config.c's
//! setConfigClientOutputBufferLimitOption, networking.c's checkClientOutputBufferLimits
//! and closeClientOnOutputBufferLimitReached).
//!
//! **Why.** Redis appends what it owes a client to that client's output buffer; a
//! client that stops reading makes it grow, so Redis closes a client whose buffer passes
//! its class's hard limit, or stays above the soft limit for more than the soft seconds.
//! Augur hands messages for other connections (Pub/Sub messages, CLIENT TRACKING
//! invalidations) to the receiving connection's queues instead, and the receiving task
//! encodes and writes them; a queue whose receiver does not read grows just the same.
//! What those queues hold is counted per connection here ([`Account`], in
//! [`crate::state::ClientMeta`]), against the same limits with the same rules, so that a
//! stalled receiver cannot make the server hold unbounded memory.
//!
//! **Classes.** As in Redis 7.0's getClientType: a connection with at least one
//! subscription (of either protocol) is `pubsub`, any other `normal` (masters count as
//! normal; Augur has none). `replica` is parsed and reported (`slave` in CONFIG GET, as
//! Redis) for tools and configs that set it; Augur has no replicas.
//!
//! **What counts** is what is queued and not yet taken off by the connection's task
//! (which encodes it into its write buffer in batches while the socket takes it): that
//! is the memory a stalled reader makes the server hold. Redis also counts the replies
//! to the client's own commands; a client that does not read stops sending commands
//! too, so those stay bounded by its read buffer and the kernel's socket buffers.
//!
//! **When.** Each message queued checks its receiver's account (Redis checks on every
//! reply added), and the server cron checks every connection with something queued once
//! a second (clientsCron), so a soft limit's seconds run out without further traffic.

use crate::state::ClientMeta;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Redis's client classes for output-buffer limits (CLIENT_TYPE_NORMAL, _SLAVE, _PUBSUB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Normal = 0,
    Replica = 1,
    Pubsub = 2,
}

/// One class's limit: bytes (0: none), and seconds above the soft limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limit {
    pub hard: u64,
    pub soft: u64,
    pub soft_seconds: u64,
}

/// The three classes' limits, in [`Class`] order.
pub type Limits = [Limit; 3];

/// Redis 7.0's defaults (clientBufferLimitsDefaults): `normal 0 0 0 replica 256mb 64mb
/// 60 pubsub 32mb 8mb 60`.
pub const DEFAULTS: Limits = [
    Limit {
        hard: 0,
        soft: 0,
        soft_seconds: 0,
    },
    Limit {
        hard: 256 << 20,
        soft: 64 << 20,
        soft_seconds: 60,
    },
    Limit {
        hard: 32 << 20,
        soft: 8 << 20,
        soft_seconds: 60,
    },
];

const ERR_ARGS: &str = "Wrong number of arguments in buffer limit configuration.";
const ERR_CLASS: &str = "Invalid client class specified in buffer limit configuration.";
const ERR_VALUE: &str =
    "Error in hard, soft or soft_seconds setting in buffer limit configuration.";

/// Parses `<class> <hard> <soft> <soft_seconds>` groups into `limits`, all or nothing,
/// exactly as config.c does: the value is split at every single space (so doubled or
/// trailing spaces make empty words, as in Redis, where "normal  1 2" is `normal`, hard
/// "", soft 1, seconds 2), classes are `normal`, `replica` / `slave` and `pubsub` in any
/// case (`master` is refused), sizes are memtoull's (see [`memtoull`]) and seconds
/// strtoll's read into a C int, refused when negative. An empty value changes nothing.
pub fn parse(value: &str, limits: &mut Limits) -> Result<(), &'static str> {
    let words: Vec<&str> = if value.is_empty() {
        Vec::new()
    } else {
        value.split(' ').collect()
    };
    if !words.len().is_multiple_of(4) {
        return Err(ERR_ARGS);
    }
    let mut new = *limits;
    for w in words.chunks(4) {
        let class = match w[0].to_ascii_lowercase().as_str() {
            "normal" => Class::Normal,
            "replica" | "slave" => Class::Replica,
            "pubsub" => Class::Pubsub,
            _ => return Err(ERR_CLASS),
        };
        let (Some(hard), Some(soft), Some(secs)) =
            (memtoull(w[1]), memtoull(w[2]), strtoll_as_int(w[3]))
        else {
            return Err(ERR_VALUE);
        };
        if secs < 0 {
            return Err(ERR_VALUE);
        }
        new[class as usize] = Limit {
            hard,
            soft,
            soft_seconds: secs as u64,
        };
    }
    *limits = new;
    Ok(())
}

/// CONFIG GET's form: `normal H S s slave H S s pubsub H S s` in bytes (Redis names the
/// replica class `slave` here).
pub fn format(limits: &Limits) -> String {
    let mut s = String::new();
    for (name, l) in ["normal", "slave", "pubsub"].iter().zip(limits) {
        if !s.is_empty() {
            s.push(' ');
        }
        s += &format!("{name} {} {} {}", l.hard, l.soft, l.soft_seconds);
    }
    s
}

/// util.c's memtoull: digits then an optional unit (b, k, kb, m, mb, g, gb, any case; k
/// = 1000, kb = 1024). As in C: no digits read as 0 ("" and "mb" are 0), a value past
/// u64 saturates (strtoull), the product wraps; a leading `-`, any other unit or 128 or
/// more digits are errors.
pub fn memtoull(s: &str) -> Option<u64> {
    if s.starts_with('-') {
        return None;
    }
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let mul = crate::config::memory_unit(&s[digits..])?;
    if digits >= 128 {
        return None;
    }
    let val = s[..digits].bytes().fold(0u64, |v, d| {
        v.checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .unwrap_or(u64::MAX)
    });
    Some(val.wrapping_mul(mul))
}

/// `(int) strtoll(s, &end, 10)` with `*end == '\0'` required: leading C whitespace and a
/// sign are allowed, no digits at all is an error unless `s` is empty (C's end pointer
/// then stays on the terminator), overflow saturates to i64 and the cast to int keeps the
/// low 32 bits (so Redis reads 4294967296 as 0 and 2147483648 as negative).
fn strtoll_as_int(s: &str) -> Option<i32> {
    if s.is_empty() {
        return Some(0);
    }
    let b = s.as_bytes();
    let mut i = b
        .iter()
        .take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
        .count();
    let neg = match b.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || i + digits != b.len() {
        return None;
    }
    let mut v: i64 = 0;
    for &d in &b[i..] {
        let d = i64::from(d - b'0');
        v = if neg {
            v.checked_mul(10)
                .and_then(|v| v.checked_sub(d))
                .unwrap_or(i64::MIN)
        } else {
            v.checked_mul(10)
                .and_then(|v| v.checked_add(d))
                .unwrap_or(i64::MAX)
        };
    }
    Some(v as i32)
}

/// The server's limits as the delivery paths read them (lock-free; CONFIG SET stores).
pub struct LiveLimits {
    cells: [[AtomicU64; 3]; 3],
}

impl Default for LiveLimits {
    fn default() -> Self {
        let l = LiveLimits {
            cells: Default::default(),
        };
        l.set(&DEFAULTS);
        l
    }
}

impl LiveLimits {
    pub fn set(&self, limits: &Limits) {
        for (cell, l) in self.cells.iter().zip(limits) {
            cell[0].store(l.hard, Relaxed);
            cell[1].store(l.soft, Relaxed);
            cell[2].store(l.soft_seconds, Relaxed);
        }
    }

    pub fn get(&self, class: Class) -> Limit {
        let c = &self.cells[class as usize];
        Limit {
            hard: c[0].load(Relaxed),
            soft: c[1].load(Relaxed),
            soft_seconds: c[2].load(Relaxed),
        }
    }
}

/// What is queued for one connection and not yet taken off by its task, in bytes, and
/// since when it has been above its soft limit.
#[derive(Default)]
pub struct Account {
    queued: AtomicUsize,
    /// Unix seconds the backlog was first seen above the soft limit, 0 while below
    /// (Redis's obuf_soft_limit_reached_time, in the same whole seconds).
    soft_since: AtomicU64,
}

impl Account {
    /// Bytes queued (CLIENT LIST's `omem=` counts them).
    pub fn queued(&self) -> usize {
        self.queued.load(Relaxed)
    }

    /// Counts `n` bytes queued; true when that puts the connection over `limit` (the
    /// caller then closes it and does not queue the message).
    pub fn add(&self, n: usize, limit: Limit) -> bool {
        let backlog = self.queued.fetch_add(n, Relaxed) + n;
        if self.over(backlog, limit) {
            self.queued.fetch_sub(n, Relaxed);
            return true;
        }
        false
    }

    /// `n` queued bytes were taken off (encoded for writing, or dropped).
    pub fn taken(&self, n: usize) {
        self.queued.fetch_sub(n, Relaxed);
    }

    /// Whether the backlog as it is now breaks `limit` (the cron's check).
    pub fn check(&self, limit: Limit) -> bool {
        self.over(self.queued(), limit)
    }

    /// checkClientOutputBufferLimits: at or past the hard limit, or at or past the soft
    /// limit continuously for more than its seconds; below the soft limit the clock
    /// restarts.
    fn over(&self, backlog: usize, limit: Limit) -> bool {
        let used = backlog as u64;
        let hard = limit.hard != 0 && used >= limit.hard;
        let mut soft = limit.soft != 0 && used >= limit.soft;
        if soft {
            let now = crate::state::now_ms() / 1000;
            match self.soft_since.load(Relaxed) {
                0 => {
                    self.soft_since.store(now.max(1), Relaxed);
                    soft = false;
                }
                since => soft = now.saturating_sub(since) > limit.soft_seconds,
            }
        } else if self.soft_since.load(Relaxed) != 0 {
            self.soft_since.store(0, Relaxed);
        }
        hard || soft
    }
}

/// The class whose limits apply to `meta` now (getClientType): `pubsub` while it has a
/// subscription, else `normal`.
pub fn class_of(meta: &ClientMeta) -> Class {
    let subs = meta.sub.load(Relaxed) | meta.psub.load(Relaxed) | meta.ssub.load(Relaxed);
    if subs != 0 {
        Class::Pubsub
    } else {
        Class::Normal
    }
}

/// Closes a connection that broke its output-buffer limit, with Redis's log line (a
/// warning; Redis prints its whole CLIENT LIST entry, this its id and address).
pub fn close_for_limit(meta: &ClientMeta) {
    if meta.killed.load(Relaxed) {
        return;
    }
    tracing::warn!(
        "Client id={} addr={} laddr={} scheduled to be closed ASAP for overcoming of output buffer limits.",
        meta.id,
        meta.addr,
        meta.laddr
    );
    meta.close();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_config_c() {
        let mut l = DEFAULTS;
        parse(
            "normal 1mb 2mb 60 replica 3mb 4mb 70 pubsub 5mb 6mb 80",
            &mut l,
        )
        .unwrap();
        assert_eq!(
            format(&l),
            "normal 1048576 2097152 60 slave 3145728 4194304 70 pubsub 5242880 6291456 80"
        );
        assert_eq!(
            format(&DEFAULTS),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        );
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("wrong number", Err(ERR_ARGS)),
            ("invalid_class 10mb 10mb 60", Err(ERR_CLASS)),
            ("master 10mb 10mb 60", Err(ERR_CLASS)),
            ("normal 10mbs 10mb 60", Err(ERR_VALUE)),
            ("replica 10mb 10mbs 60", Err(ERR_VALUE)),
            ("pubsub 10mb 10mb 60s", Err(ERR_VALUE)),
            ("normal 1 2 3 ", Err(ERR_ARGS)),
            ("  normal   1 2 3  ", Err(ERR_ARGS)),
            ("pubsub -1 0 0", Err(ERR_VALUE)),
            ("pubsub 1 0 -1", Err(ERR_VALUE)),
            ("pubsub 1.5mb 0 0", Err(ERR_VALUE)),
            ("pubsub 0x10 0 0", Err(ERR_VALUE)),
            ("normal +1 2 3", Err(ERR_VALUE)),
            ("normal 1 2 0x1", Err(ERR_VALUE)),
            ("normal 1 2 3\t", Err(ERR_VALUE)),
            ("normal 1 2 2147483648", Err(ERR_VALUE)),
            ("pubsub 0 0 9223372036854775808", Err(ERR_VALUE)),
            // Redis 7.0.15's replies, as measured.
            ("normal  1 2", Ok("normal 0 1 2")),
            ("normal kb b 0", Ok("normal 0 0 0")),
            ("normal 1 2 4294967296", Ok("normal 1 2 0")),
            ("normal 1 2 2147483647", Ok("normal 1 2 2147483647")),
            ("normal 1 2 +5", Ok("normal 1 2 5")),
            ("normal 1 2 007", Ok("normal 1 2 7")),
            ("normal 1 2 ", Ok("normal 1 2 0")),
            ("NORMAL 1GB 0 0", Ok("normal 1073741824 0 0")),
            ("slave 1k 2K 3", Ok("normal 0 0 0 slave 1000 2000 3")),
            ("normal 1mb 2mb 60 normal 5 5 5", Ok("normal 5 5 5")),
            (
                "pubsub 99999999999999999999 0 0",
                Ok("pubsub 18446744073709551615 0 0"),
            ),
        ];
        for (v, want) in cases {
            let mut l = DEFAULTS;
            let got = parse(v, &mut l).map(|()| format(&l));
            match want {
                Err(e) => {
                    assert_eq!(got, Err(*e), "{v:?}");
                    assert_eq!(l, DEFAULTS, "{v:?} changed nothing");
                }
                Ok(part) => {
                    let got = got.unwrap();
                    assert!(got.contains(part), "{v:?}: {got}");
                }
            }
        }
        let mut l = DEFAULTS;
        parse("", &mut l).unwrap();
        assert_eq!(l, DEFAULTS);
    }

    #[test]
    fn hard_and_soft_limits() {
        let a = Account::default();
        let hard = Limit {
            hard: 100,
            soft: 0,
            soft_seconds: 0,
        };
        assert!(!a.add(99, hard));
        assert!(a.add(1, hard), "at the hard limit");
        assert_eq!(a.queued(), 99, "the refused message is not counted");
        a.taken(99);
        let soft = Limit {
            hard: 0,
            soft: 10,
            soft_seconds: 1000,
        };
        assert!(
            !a.add(20, soft),
            "the first time above the soft limit starts its clock"
        );
        assert!(!a.add(20, soft), "not for long enough yet");
        a.soft_since.store(1, Relaxed);
        assert!(a.check(soft), "above it for longer than its seconds");
        a.taken(40);
        assert!(!a.check(soft));
        assert_eq!(
            a.soft_since.load(Relaxed),
            0,
            "below it, the clock restarts"
        );
        assert!(!a.add(1 << 40, Limit::default()), "0 0 0: no limit");
    }
}
