//! SLOWLOG: the commands that ran longer than `slowlog-log-slower-than` microseconds,
//! newest first, at most `slowlog-max-len` of them. Mirrors Redis 7.0's slowlog.c (the
//! entry: id, Unix time, duration in µs, arguments, peer address, client name) and
//! server.c `call()` (what is logged, and when):
//!
//! - a command is logged after it ran, with its duration (not the time a blocking
//!   command spent blocked: a served BLPOP is logged when it is served, with the time it
//!   ran before blocking, as `updateStatsOnUnblock` does);
//! - EXEC is not logged (CMD_SKIP_SLOWLOG), the commands it runs are, one entry each,
//!   and so are the commands a script runs (peer `?:0`, no name: Redis's script client);
//! - at most 32 arguments are kept (the 32nd says how many more there were) and each
//!   at most 128 bytes (`... (N more bytes)`);
//! - secrets are `(redacted)` as Redis's `redactClientCommandArgument` leaves them: AUTH's
//!   arguments, HELLO's AUTH pair, ACL SETUSER's, the values of sensitive parameters in
//!   CONFIG SET ([`redacted`], shared with MONITOR; Augur has no MIGRATE);
//! - a negative threshold turns the log off, 0 logs every command; `slowlog-max-len`
//!   is applied when the next entry is added, as in Redis.
//!
//! **Tenants.** An entry carries the arguments of a command, keys and values included,
//! so each tenant (ACL user) has its own log of at most `slowlog-max-len` entries and
//! sees only it; the `default` user (the administrator) sees every tenant's entries,
//! merged newest first, as a MONITOR run by it does (`crate::monitor`). Redis has one
//! log. Entry ids are the server's, so they stay unique and increasing in the merged
//! view.
//!
//! **The request path** reads one atomic (the threshold) per command and compares it
//! with the duration `call()` already measured; only a command over the threshold
//! takes the log's lock.

use crate::cmdtable::{Cmd, CommandSpec};
use crate::resp::Args;
use augur_store::TenantId;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::{SystemTime, UNIX_EPOCH};

/// SLOWLOG_ENTRY_MAX_ARGC and SLOWLOG_ENTRY_MAX_STRING.
const MAX_ARGC: usize = 32;
const MAX_STRING: usize = 128;

/// What a redacted argument reads as (Redis's `shared.redacted`).
pub const REDACTED: &[u8] = b"(redacted)";

/// One logged command.
#[derive(Debug, Clone)]
pub struct Entry {
    pub id: u64,
    /// Unix seconds when it was logged.
    pub time: u64,
    pub duration_us: u64,
    /// At most [`MAX_ARGC`], each trimmed to [`MAX_STRING`] bytes, secrets redacted.
    pub args: Vec<Bytes>,
    /// `ip:port` of the client (`?:0` for a script's commands).
    pub peer: String,
    pub name: Bytes,
}

/// A command's entry, built when it is known to be slow and added later (a blocked
/// command is logged when it is served).
#[derive(Debug, Clone)]
pub struct Draft {
    tenant: TenantId,
    duration_us: u64,
    args: Vec<Bytes>,
    peer: String,
    name: Bytes,
}

/// The server's slow log (one per [`crate::state::Shared`]).
pub struct SlowLog {
    /// `slowlog-log-slower-than` in µs (negative: off).
    threshold_us: AtomicI64,
    /// `slowlog-max-len`.
    max_len: AtomicU64,
    next_id: AtomicU64,
    logs: Mutex<HashMap<TenantId, VecDeque<Entry>>>,
}

impl Default for SlowLog {
    fn default() -> Self {
        SlowLog {
            threshold_us: AtomicI64::new(10_000),
            max_len: AtomicU64::new(128),
            next_id: AtomicU64::new(0),
            logs: Mutex::default(),
        }
    }
}

impl SlowLog {
    /// Applies `slowlog-log-slower-than` and `slowlog-max-len`.
    pub fn configure(&self, threshold_us: i64, max_len: u64) {
        self.threshold_us.store(threshold_us, Relaxed);
        self.max_len.store(max_len, Relaxed);
    }

    /// Whether a command that ran `duration_us` is logged (the request path's check).
    #[inline]
    pub fn is_slow(&self, duration_us: u64) -> bool {
        let t = self.threshold_us.load(Relaxed);
        t >= 0 && duration_us >= t as u64
    }

    /// The entry of a command `spec` with `args` that ran `duration_us`, or None when
    /// the command is never logged (EXEC).
    pub fn draft(
        spec: &CommandSpec,
        args: Args<'_>,
        tenant: TenantId,
        duration_us: u64,
        peer: String,
        name: Bytes,
    ) -> Option<Draft> {
        if spec.cmd == Cmd::Exec {
            return None;
        }
        let redact = redacted(spec, args);
        let argc = args.len();
        let kept = argc.min(MAX_ARGC);
        let mut out = Vec::with_capacity(kept);
        for (i, a) in args.iter().enumerate().take(kept) {
            if kept != argc && i == kept - 1 {
                out.push(Bytes::from(format!(
                    "... ({} more arguments)",
                    argc - kept + 1
                )));
            } else if redact(i) {
                out.push(Bytes::from_static(REDACTED));
            } else if a.len() > MAX_STRING {
                let mut s = a[..MAX_STRING].to_vec();
                s.extend_from_slice(
                    format!("... ({} more bytes)", a.len() - MAX_STRING).as_bytes(),
                );
                out.push(Bytes::from(s));
            } else {
                out.push(Bytes::copy_from_slice(a));
            }
        }
        Some(Draft {
            tenant,
            duration_us,
            args: out,
            peer,
            name,
        })
    }

    /// Adds an entry, dropping the tenant's oldest beyond `slowlog-max-len`.
    pub fn push(&self, d: Draft) {
        let time = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |t| t.as_secs());
        let max_len = self.max_len.load(Relaxed) as usize;
        let mut logs = self.logs.lock();
        let log = logs.entry(d.tenant).or_default();
        log.push_front(Entry {
            id: self.next_id.fetch_add(1, Relaxed),
            time,
            duration_us: d.duration_us,
            args: d.args,
            peer: d.peer,
            name: d.name,
        });
        log.truncate(max_len);
    }

    /// The newest `count` entries `viewer` may see (every tenant's for tenant 0, the
    /// default user), newest first; `None`: all of them.
    pub fn get(&self, viewer: TenantId, count: Option<usize>) -> Vec<Entry> {
        let logs = self.logs.lock();
        let limit = count.unwrap_or(usize::MAX);
        if viewer != 0 {
            return logs
                .get(&viewer)
                .map(|l| l.iter().take(limit).cloned().collect())
                .unwrap_or_default();
        }
        let mut all: Vec<&Entry> = logs.values().flatten().collect();
        all.sort_unstable_by_key(|e| std::cmp::Reverse(e.id));
        all.into_iter().take(limit).cloned().collect()
    }

    /// How many entries `viewer` sees.
    pub fn len(&self, viewer: TenantId) -> usize {
        let logs = self.logs.lock();
        if viewer != 0 {
            return logs.get(&viewer).map_or(0, VecDeque::len);
        }
        logs.values().map(VecDeque::len).sum()
    }

    /// SLOWLOG RESET: the entries `viewer` sees.
    pub fn reset(&self, viewer: TenantId) {
        let mut logs = self.logs.lock();
        if viewer == 0 {
            logs.clear();
        } else {
            logs.remove(&viewer);
        }
    }
}

/// Parameters whose CONFIG SET value is a secret (Redis's SENSITIVE_CONFIG).
const SENSITIVE_PARAMS: &[&str] = &["requirepass", "masterauth", "masteruser"];

/// Which arguments of a command line are secrets, shown as `(redacted)` by SLOWLOG and
/// MONITOR: those Redis 7.0's command implementations pass to
/// `redactClientCommandArgument`.
pub fn redacted<'a>(spec: &CommandSpec, args: Args<'a>) -> impl Fn(usize) -> bool + 'a {
    let eq = |a: &[u8], s: &str| a.eq_ignore_ascii_case(s.as_bytes());
    let mut secret: Vec<usize> = Vec::new();
    match spec.cmd {
        Cmd::Auth => secret.extend(1..args.len()),
        Cmd::Hello => {
            // HELLO [protover [AUTH username password] [SETNAME name]]
            // (helloCommand stops at the first option it does not take).
            let mut j = 2;
            while j < args.len() {
                let more = args.len() - j - 1;
                if eq(args.get(j), "auth") && more >= 2 {
                    secret.extend([j + 1, j + 2]);
                    j += 3;
                } else if eq(args.get(j), "setname") && more >= 1 {
                    j += 2;
                } else {
                    break;
                }
            }
        }
        Cmd::Acl if args.len() >= 3 && eq(args.get(1), "setuser") => {
            secret.extend(2..args.len());
        }
        Cmd::Config if args.len() >= 4 && eq(args.get(1), "set") => {
            let mut j = 2;
            while j + 1 < args.len() {
                let name = args.get(j);
                if SENSITIVE_PARAMS.iter().any(|p| eq(name, p)) {
                    secret.push(j + 1);
                }
                j += 2;
            }
        }
        _ => {}
    }
    move |i| secret.contains(&i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmdtable::lookup;

    fn args_of(words: &[&str]) -> (Vec<u8>, Vec<(usize, usize)>) {
        let mut base = Vec::new();
        let mut ranges = Vec::new();
        for w in words {
            let s = base.len();
            base.extend_from_slice(w.as_bytes());
            ranges.push((s, base.len()));
        }
        (base, ranges)
    }

    fn draft_of(words: &[&str]) -> Vec<String> {
        let (base, ranges) = args_of(words);
        let args = Args::from_parts(&base, &ranges);
        let spec = lookup(words[0].to_ascii_uppercase().as_bytes()).unwrap();
        SlowLog::draft(spec, args, 0, 1, "?:0".into(), Bytes::new())
            .unwrap()
            .args
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    }

    #[test]
    fn arguments_are_trimmed_as_redis_does() {
        let mut words = vec!["sadd", "set"];
        let nums: Vec<String> = (3..=33).map(|i| i.to_string()).collect();
        words.extend(nums.iter().map(String::as_str));
        let got = draft_of(&words);
        assert_eq!(got.len(), 32);
        assert_eq!(got[30], "31");
        assert_eq!(got[31], "... (2 more arguments)");
        let long = "A".repeat(129);
        let got = draft_of(&["sadd", "set", "foo", &long]);
        assert_eq!(got[3], format!("{}... (1 more bytes)", "A".repeat(128)));
        // Exactly 32 arguments are all kept; 128 bytes are not trimmed.
        let nums: Vec<String> = (0..31).map(|i| i.to_string()).collect();
        let mut words = vec!["sadd"];
        words.extend(nums.iter().map(String::as_str));
        assert_eq!(draft_of(&words).last().unwrap(), "30");
        let exact = "B".repeat(128);
        assert_eq!(draft_of(&["get", &exact])[1], exact);
    }

    #[test]
    fn secrets_are_redacted() {
        assert_eq!(
            draft_of(&["acl", "setuser", "u", "+get", ">pw"]),
            ["acl", "setuser", "(redacted)", "(redacted)", "(redacted)"]
        );
        assert_eq!(
            draft_of(&["config", "set", "maxmemory", "1", "requirepass", "x"]),
            [
                "config",
                "set",
                "maxmemory",
                "1",
                "requirepass",
                "(redacted)"
            ]
        );
        assert_eq!(
            draft_of(&["auth", "u", "p"]),
            ["auth", "(redacted)", "(redacted)"]
        );
        assert_eq!(
            draft_of(&["hello", "3", "AUTH", "u", "p", "SETNAME", "n"]),
            [
                "hello",
                "3",
                "AUTH",
                "(redacted)",
                "(redacted)",
                "SETNAME",
                "n"
            ]
        );
        assert_eq!(draft_of(&["get", "auth"]), ["get", "auth"]);
    }

    #[test]
    fn exec_is_never_logged() {
        let (base, ranges) = args_of(&["exec"]);
        let spec = lookup(b"EXEC").unwrap();
        assert!(SlowLog::draft(
            spec,
            Args::from_parts(&base, &ranges),
            0,
            5,
            "".into(),
            Bytes::new()
        )
        .is_none());
    }

    #[test]
    fn tenants_see_their_own_entries_and_the_default_user_all() {
        let log = SlowLog::default();
        log.configure(0, 2);
        assert!(log.is_slow(0));
        let spec = lookup(b"GET").unwrap();
        for (tenant, key) in [(1, "a"), (2, "b"), (1, "c"), (1, "d")] {
            let (base, ranges) = args_of(&["get", key]);
            let d = SlowLog::draft(
                spec,
                Args::from_parts(&base, &ranges),
                tenant,
                7,
                "1.2.3.4:5".into(),
                Bytes::new(),
            );
            log.push(d.unwrap());
        }
        // Tenant 1 keeps its newest two; tenant 2 its one.
        let t1: Vec<_> = log.get(1, None).iter().map(|e| e.args[1].clone()).collect();
        assert_eq!(t1, [Bytes::from("d"), Bytes::from("c")]);
        assert_eq!(log.len(2), 1);
        let all: Vec<_> = log.get(0, None).iter().map(|e| e.args[1].clone()).collect();
        assert_eq!(all, [Bytes::from("d"), Bytes::from("c"), Bytes::from("b")]);
        assert_eq!(log.get(0, Some(1)).len(), 1);
        log.reset(2);
        assert_eq!(log.len(0), 2);
        log.reset(0);
        assert_eq!(log.len(1), 0);
        log.configure(-1, 2);
        assert!(!log.is_slow(u64::MAX));
        log.configure(100, 2);
        assert!(!log.is_slow(99) && log.is_slow(100));
    }
}
