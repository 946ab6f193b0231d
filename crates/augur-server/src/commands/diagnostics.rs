//! SLOWLOG and LATENCY (Redis 7.0's slowlog.c and latency.c commands), and the
//! after-call hook that feeds them (server.c `call()`'s slowlog and latency-monitor
//! steps). The logs themselves are crate::slowlog and crate::latency.

use super::{help_reply, subcommand, Client};
use crate::cmdtable::{CommandSpec, FAST};
use crate::resp::{parse_i64, Args};
use crate::slowlog::{Draft, SlowLog};
use crate::state::Shared;
use bytes::Bytes;

/// After a command ran for `nanos` (server.c `call()`): a latency-monitor sample
/// (`command`, or `fast-command` for a `fast` command) and, if it was slow, a slow-log
/// entry. A command that left its client blocked is logged when it is served
/// ([`Client::blocked_slow`], `updateStatsOnUnblock`).
#[inline]
pub(super) fn after_call(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
    nanos: u64,
) {
    let us = nanos / 1000;
    let event = if spec.flags & FAST != 0 {
        "fast-command"
    } else {
        "command"
    };
    shared.latency.add_if_needed(event, us / 1000);
    if shared.slowlog.is_slow(us) {
        let draft = draft_of(c, spec, args, us);
        if c.blocked.is_some() {
            c.blocked_slow = draft;
        } else if let Some(d) = draft {
            shared.slowlog.push(d);
        }
    }
}

/// The slow-log entry of a command `c` ran (a script's commands: Redis's script
/// client, peer `?:0` and no name).
#[cold]
fn draft_of(c: &Client, spec: &'static CommandSpec, args: Args<'_>, us: u64) -> Option<Draft> {
    let (peer, name) = if c.in_script {
        ("?:0".to_string(), Bytes::new())
    } else {
        (
            c.meta.addr.to_string(),
            Bytes::copy_from_slice(&c.meta.name.lock()),
        )
    };
    SlowLog::draft(spec, args, c.tenant, us, peer, name)
}

/// SLOWLOG GET [count] | LEN | RESET | HELP. A tenant sees its own entries, the
/// default user every tenant's (crate::slowlog).
pub(super) fn slowlog_command(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
) {
    let Some(sub) = subcommand(&mut c.out, spec, args) else {
        return;
    };
    match sub {
        "get" => {
            const COUNT_ERR: &str = "ERR count should be greater than or equal to -1";
            let count = if args.len() == 3 {
                // getRangeLongFromObjectOrReply(-1, LONG_MAX): a non-number gets the
                // range text too.
                match parse_i64(args.get(2)) {
                    Some(-1) => None,
                    Some(n) if n >= 0 => Some(n as usize),
                    _ => return c.out.error(COUNT_ERR),
                }
            } else if args.len() == 2 {
                Some(10)
            } else {
                return super::subcommand_syntax_error(&mut c.out, args);
            };
            let entries = shared.slowlog.get(c.tenant, count);
            c.out.array(entries.len());
            for e in entries {
                c.out.array(6);
                c.out.int(e.id as i64);
                c.out.int(e.time as i64);
                c.out.int(e.duration_us as i64);
                c.out.array(e.args.len());
                for a in &e.args {
                    c.out.bulk(a);
                }
                c.out.bulk(e.peer.as_bytes());
                c.out.bulk(&e.name);
            }
        }
        "len" => c.out.int(shared.slowlog.len(c.tenant) as i64),
        "reset" => {
            shared.slowlog.reset(c.tenant);
            c.out.ok();
        }
        _ => help_reply(
            &mut c.out,
            "SLOWLOG",
            &[
                "GET [<count>]",
                "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
                "    Entries are made of:",
                "    id, timestamp, time in microseconds, arguments array, client IP and port,",
                "    client name",
                "LEN",
                "    Return the length of the slowlog.",
                "RESET",
                "    Reset the slowlog.",
            ],
        ),
    }
}

/// LATENCY LATEST | HISTORY event | RESET [event ...] | GRAPH event | DOCTOR |
/// HISTOGRAM [command ...] | HELP.
pub(super) fn latency_command(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
) {
    let Some(sub) = subcommand(&mut c.out, spec, args) else {
        return;
    };
    match sub {
        "latest" => {
            let latest = shared.latency.latest();
            c.out.array(latest.len());
            for (name, time, latency, max) in latest {
                c.out.array(4);
                c.out.bulk(name.as_bytes());
                c.out.int(time as i64);
                c.out.int(latency as i64);
                c.out.int(max as i64);
            }
        }
        "history" => {
            let samples = shared.latency.history(args.get(2));
            c.out.array(samples.len());
            for (time, latency) in samples {
                c.out.array(2);
                c.out.int(time as i64);
                c.out.int(latency as i64);
            }
        }
        "reset" => {
            let n = if args.len() == 2 {
                shared.latency.reset(None)
            } else {
                args.iter()
                    .skip(2)
                    .map(|e| shared.latency.reset(Some(e)))
                    .sum()
            };
            c.out.int(n as i64);
        }
        "graph" => match shared.latency.graph(args.get(2)) {
            Some(text) => c.out.verbatim(text.as_bytes()),
            None => c.out.error(&format!(
                "ERR No samples available for event '{}'",
                super::lossy(args.get(2))
            )),
        },
        "doctor" => {
            let ctx = {
                let cfg = shared.config.read();
                crate::latency::DoctorContext {
                    slowlog_slower_than_us: cfg.slowlog_log_slower_than,
                    hz: cfg.hz,
                }
            };
            let report = shared.latency.doctor(&ctx);
            c.out.verbatim(report.as_bytes());
        }
        "histogram" => {
            // What this connection ran earlier in its batch counts (CONFIG RESETSTAT's
            // own call is in the histogram that follows it, as in Redis).
            shared.stats.flush(&mut c.out.stats);
            let names: Vec<&[u8]> = args.iter().skip(2).collect();
            let cdfs = shared
                .stats
                .latency_histogram((args.len() > 2).then_some(names.as_slice()));
            c.out.map(cdfs.len());
            for (name, calls, pairs) in cdfs {
                c.out.bulk(name.as_bytes());
                c.out.map(2);
                c.out.bulk(b"calls");
                c.out.int(calls as i64);
                c.out.bulk(b"histogram_usec");
                c.out.map(pairs.len());
                for (usec, count) in pairs {
                    c.out.int(usec as i64);
                    c.out.int(count as i64);
                }
            }
        }
        _ => help_reply(
            &mut c.out,
            "LATENCY",
            &[
                "DOCTOR",
                "    Return a human readable latency analysis report.",
                "GRAPH <event>",
                "    Return an ASCII latency graph for the <event> class.",
                "HISTORY <event>",
                "    Return time-latency samples for the <event> class.",
                "LATEST",
                "    Return the latest latency samples for all events.",
                "RESET [<event> ...]",
                "    Reset latency data of one or more <event> classes.",
                "    (default: reset all data for all event classes)",
                "HISTOGRAM [COMMAND ...]",
                "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
                "    If no commands are specified then all histograms are replied.",
            ],
        ),
    }
}
