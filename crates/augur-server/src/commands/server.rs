//! Server commands: INFO, CONFIG, COMMAND, TIME and SHUTDOWN. Mirrors Redis's server.c
//! (CONFIG: config.c).

use super::{arity_error, eq, help_reply, lossy, subcommand, Client, ERR_SYNTAX};
use crate::cmdtable::{self, CommandSpec};
use crate::config::{ServerConfig, LIVE_PARAMS, PARAMS};
use crate::resp::{Args, Out};
use crate::state::Shared;
use augur_store::glob_match;
use std::sync::atomic::Ordering::Relaxed;

pub(super) fn time_command(c: &mut Client) {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    c.out.array(2);
    c.out.bulk(d.as_secs().to_string().as_bytes());
    c.out.bulk(d.subsec_micros().to_string().as_bytes());
}

pub(super) fn info_command(shared: &Shared, c: &mut Client, args: Args<'_>) {
    let text = crate::info::render(shared, c.tenant, args);
    c.out.verbatim(text.as_bytes());
}

pub(super) fn config_command(
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
            let cfg = shared.config.read();
            let mut pairs: Vec<(&str, String)> = Vec::new();
            for pat in args.iter().skip(2) {
                let pat = pat.to_ascii_lowercase();
                for name in PARAMS {
                    if glob_match(&pat, name.as_bytes()) && !pairs.iter().any(|(n, _)| n == name) {
                        pairs.push((name, cfg.get(name).unwrap_or_default()));
                    }
                }
            }
            drop(cfg);
            c.out.map(pairs.len());
            for (n, v) in pairs {
                c.out.bulk(n.as_bytes());
                c.out.bulk(v.as_bytes());
            }
        }
        "set" => {
            if !args.len().is_multiple_of(2) {
                return arity_error(&mut c.out, "config|set");
            }
            let mut new: ServerConfig = shared.config.read().clone();
            let mut seen: Vec<String> = Vec::new();
            for i in (2..args.len()).step_by(2) {
                let name = lossy(args.get(i)).to_ascii_lowercase();
                let value = lossy(args.get(i + 1)).into_owned();
                if !PARAMS.contains(&name.as_str()) {
                    return c.out.error(&format!(
                        "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                        lossy(args.get(i))
                    ));
                }
                if seen.contains(&name) {
                    return c.out.error(&format!(
                        "ERR CONFIG SET failed (possibly related to argument '{name}') - duplicate parameter"
                    ));
                }
                if !LIVE_PARAMS.contains(&name.as_str()) {
                    return c.out.error(&format!(
                        "ERR CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config"
                    ));
                }
                if let Err(e) = new.apply(&name, &value) {
                    return c.out.error(&format!(
                        "ERR CONFIG SET failed (possibly related to argument '{name}') - {e}"
                    ));
                }
                seen.push(name);
            }
            let (old_port, old_bind) = {
                let cfg = shared.config.read();
                (cfg.port, cfg.bind.clone())
            };
            if new.port != old_port || new.bind != old_bind {
                if let Err(e) = crate::server::change_listeners(shared, &new.bind, new.port) {
                    let name = if new.port != old_port { "port" } else { "bind" };
                    return c.out.error(&format!(
                        "ERR CONFIG SET failed (possibly related to argument '{name}') - {e}"
                    ));
                }
            }
            shared.install_config(new);
            c.out.ok();
        }
        "resetstat" => {
            shared.store.reset_stats();
            let k = &shared.counters;
            k.total_commands_processed.reset();
            k.total_connections_received.store(0, Relaxed);
            k.rejected_connections.store(0, Relaxed);
            k.net_input_bytes.reset();
            k.net_output_bytes.reset();
            c.out.ok();
        }
        "rewrite" => c
            .out
            .error("ERR The server is running without a config file"),
        _ => help_reply(
            &mut c.out,
            "CONFIG",
            &[
                "GET <pattern>",
                "SET <directive> <value> [<directive> <value> ...]",
                "RESETSTAT",
                "REWRITE",
            ],
        ),
    }
}

fn command_entry(out: &mut Out, spec: &CommandSpec) {
    out.array(10);
    out.bulk(spec.name.as_bytes());
    out.int(spec.arity as i64);
    let flags: Vec<&str> = cmdtable::flag_names(spec.flags).collect();
    out.set(flags.len());
    for f in flags {
        out.simple(f);
    }
    out.int(spec.first_key as i64);
    out.int(spec.last_key as i64);
    out.int(spec.step as i64);
    let cats = categories(spec.flags, spec.group);
    out.set(cats.len());
    for cat in cats {
        out.simple(cat);
    }
    out.set(0); // tips
    out.set(0); // key specs
    out.set(spec.subcommands.len());
    for s in spec.subcommands {
        out.array(10);
        out.bulk(s.name.as_bytes());
        out.int(s.arity as i64);
        let flags: Vec<&str> = cmdtable::flag_names(s.flags).collect();
        out.set(flags.len());
        for f in flags {
            out.simple(f);
        }
        out.int(0);
        out.int(0);
        out.int(0);
        out.set(0);
        out.set(0);
        out.set(0);
        out.set(0);
    }
}

fn categories(flags: u32, group: &str) -> Vec<&'static str> {
    let mut v = Vec::new();
    if flags & cmdtable::WRITE != 0 {
        v.push("@write");
    }
    if flags & cmdtable::READONLY != 0 {
        v.push("@read");
    }
    match group {
        "string" => v.push("@string"),
        "hash" => v.push("@hash"),
        "set" => v.push("@set"),
        "generic" => v.push("@keyspace"),
        "connection" => v.push("@connection"),
        _ => {}
    }
    if flags & cmdtable::ADMIN != 0 {
        v.push("@admin");
        v.push("@dangerous");
    }
    v.push(if flags & cmdtable::FAST != 0 {
        "@fast"
    } else {
        "@slow"
    });
    v
}

fn command_doc(out: &mut Out, summary: &str, group: &str, subs: &[cmdtable::SubSpec]) {
    out.map(if subs.is_empty() { 4 } else { 5 });
    out.bulk(b"summary");
    out.bulk(summary.as_bytes());
    out.bulk(b"since");
    out.bulk(b"1.0.0");
    out.bulk(b"group");
    out.bulk(group.as_bytes());
    out.bulk(b"complexity");
    out.bulk(b"O(1)");
    if !subs.is_empty() {
        out.bulk(b"subcommands");
        out.map(subs.len());
        for s in subs {
            out.bulk(s.name.as_bytes());
            command_doc(out, s.summary, group, &[]);
        }
    }
}

pub(super) fn command_command(c: &mut Client, spec: &'static CommandSpec, args: Args<'_>) {
    if args.len() == 1 {
        c.out.array(cmdtable::COMMANDS.len());
        for s in cmdtable::COMMANDS {
            command_entry(&mut c.out, s);
        }
        return;
    }
    let Some(sub) = subcommand(&mut c.out, spec, args) else {
        return;
    };
    let find = |name: &[u8]| {
        let mut b = [0u8; 16];
        cmdtable::upper(name, &mut b).and_then(cmdtable::lookup)
    };
    match sub {
        "count" => c.out.int(cmdtable::COMMANDS.len() as i64),
        "info" => {
            if args.len() == 2 {
                c.out.array(cmdtable::COMMANDS.len());
                for s in cmdtable::COMMANDS {
                    command_entry(&mut c.out, s);
                }
            } else {
                c.out.array(args.len() - 2);
                for name in args.iter().skip(2) {
                    match find(name) {
                        Some(s) => command_entry(&mut c.out, s),
                        None => c.out.null_array(),
                    }
                }
            }
        }
        "docs" => {
            let specs: Vec<&CommandSpec> = if args.len() == 2 {
                cmdtable::COMMANDS.iter().collect()
            } else {
                args.iter().skip(2).filter_map(find).collect()
            };
            c.out.map(specs.len());
            for s in specs {
                c.out.bulk(s.name.as_bytes());
                command_doc(&mut c.out, s.summary, s.group, s.subcommands);
            }
        }
        "list" => {
            c.out.array(cmdtable::COMMANDS.len());
            for s in cmdtable::COMMANDS {
                c.out.bulk(s.name.as_bytes());
            }
        }
        _ => help_reply(
            &mut c.out,
            "COMMAND",
            &[
                "(no subcommand)",
                "COUNT",
                "DOCS [<command-name> ...]",
                "INFO [<command-name> ...]",
                "LIST",
            ],
        ),
    }
}

pub(super) fn shutdown_command(shared: &Shared, c: &mut Client, args: Args<'_>) {
    for a in args.iter().skip(1) {
        if !["nosave", "save", "now", "force", "abort"]
            .iter()
            .any(|o| eq(a, o))
        {
            return c.out.error(ERR_SYNTAX);
        }
    }
    if args.iter().skip(1).any(|a| eq(a, "abort")) {
        return c.out.error("ERR No shutdown in progress.");
    }
    tracing::warn!("User requested shutdown...");
    // Like Redis, a successful SHUTDOWN sends no reply: the connection just closes.
    c.close_after_reply = true;
    shared.request_shutdown();
}
