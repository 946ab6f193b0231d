//! Server commands: INFO, CONFIG, COMMAND, TIME and SHUTDOWN. Mirrors Redis's server.c
//! (CONFIG: config.c).

use super::{arity_error, eq, help_reply, lossy, subcommand, Client, ERR_SYNTAX};
use crate::cmdtable::{self, CommandSpec};
use crate::config::{ServerConfig, HIDDEN_PARAMS, IMMUTABLE_PARAMS, LIVE_PARAMS, PARAMS};
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
    // What this connection ran earlier in its batch counts (a pipelined INFO sees it).
    shared.stats.flush(&mut c.out.stats);
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
        "get" => config_get(shared, c, args),
        "set" => config_set(shared, c, args),
        "resetstat" => {
            shared.store.reset_stats();
            let k = &shared.counters;
            k.total_commands_processed.reset();
            k.total_connections_received.store(0, Relaxed);
            k.rejected_connections.store(0, Relaxed);
            k.net_input_bytes.reset();
            k.net_output_bytes.reset();
            // This connection's unflushed records go too; CONFIG RESETSTAT itself is
            // then the first call counted, as in Redis.
            c.out.stats.clear();
            shared.stats.reset();
            c.out.ok();
        }
        "rewrite" => match shared.rewrite_config(false) {
            Ok(()) => c.out.ok(),
            Err(e) => c.out.error(&e),
        },
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

/// CONFIG GET with one or more names or glob patterns (config.c's configGetCommand):
/// each parameter once, hidden ones only by exact name.
fn config_get(shared: &Shared, c: &mut Client, args: Args<'_>) {
    let cfg = shared.config.read();
    let mut pairs: Vec<(&str, String)> = Vec::new();
    for pat in args.iter().skip(2) {
        let pat = pat.to_ascii_lowercase();
        let is_pattern = pat.iter().any(|b| matches!(b, b'*' | b'?' | b'['));
        for name in PARAMS {
            if pairs.iter().any(|(n, _)| n == name) {
                continue;
            }
            let hit = if is_pattern {
                !HIDDEN_PARAMS.contains(name) && glob_match(&pat, name.as_bytes())
            } else {
                pat == name.as_bytes()
            };
            if hit {
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

/// CONFIG SET with one or more parameter/value pairs, atomically (config.c's
/// configSetCommand): every name is checked first (unknown, immutable, duplicate), then
/// every value is set into a copy of the configuration, and the copy is installed only
/// if all of them succeed; on any error nothing changes and the error names the first
/// parameter that failed, in Redis's words.
fn config_set(shared: &Shared, c: &mut Client, args: Args<'_>) {
    if !args.len().is_multiple_of(2) {
        return arity_error(&mut c.out, "config|set");
    }
    let old: ServerConfig = shared.config.read().clone();
    let mut names: Vec<(String, String)> = Vec::new();
    // Phase 1: the names (the first unknown one wins over every other error).
    let mut failure: Option<String> = None;
    for i in (2..args.len()).step_by(2) {
        let typed = lossy(args.get(i));
        let name = typed.to_ascii_lowercase();
        if !PARAMS.contains(&name.as_str()) {
            return c.out.error(&format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{typed}'"
            ));
        }
        if failure.is_some() {
            continue;
        }
        let value = lossy(args.get(i + 1)).into_owned();
        let fixed = !LIVE_PARAMS.contains(&name.as_str());
        let same_value = old.get(&name).is_some_and(|v| v == value);
        if IMMUTABLE_PARAMS.contains(&name.as_str()) || (fixed && !same_value) {
            failure = Some(format!(
                "ERR CONFIG SET failed (possibly related to argument '{typed}') - can't set immutable config"
            ));
        } else if names.iter().any(|(n, _)| *n == name) {
            failure = Some(format!(
                "ERR CONFIG SET failed (possibly related to argument '{typed}') - duplicate parameter"
            ));
        }
        names.push((name, value));
    }
    if let Some(e) = failure {
        return c.out.error(&e);
    }
    // Phase 2: set every value into the copy.
    let mut new = old.clone();
    for (name, value) in &names {
        if let Err(e) = new.apply(name, value) {
            return c.out.error(&format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - {e}"
            ));
        }
    }
    // Phase 3: apply. Entering a new `dir` and re-binding the listeners (port / bind, as
    // Redis 7 does live) are the applies that can fail: they go first, and on failure
    // nothing has changed (the old `dir` is entered again if the listeners fail).
    // Installing then pushes the values to the store and the hot copies, which cannot fail.
    let mut left_cwd = None;
    if new.dir != old.dir {
        left_cwd = std::env::current_dir().ok();
        if let Err(e) = std::env::set_current_dir(&new.dir) {
            return c.out.error(&format!(
                "ERR CONFIG SET failed (possibly related to argument 'dir') - {}",
                crate::config::os_error_text(&e)
            ));
        }
    }
    if new.port != old.port || new.bind != old.bind {
        if let Err(e) = crate::server::change_listeners(shared, &new.bind, new.port) {
            if let Some(d) = &left_cwd {
                let _ = std::env::set_current_dir(d);
            }
            let name = if new.port != old.port { "port" } else { "bind" };
            return c.out.error(&format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - {e}"
            ));
        }
    }
    shared.install_config(new);
    c.out.ok();
}

/// One COMMAND INFO entry (server.c's addReplyCommandInfo) for a command or subcommand
/// Augur serves: Redis 7.0's metadata where Redis has the command (flags, key positions,
/// ACL categories, tips, key specs), else Augur's own table (TENANT).
fn served_entry(out: &mut Out, name: &str, arity: i32, flags: u32, subs: &[cmdtable::SubSpec]) {
    let meta = cmdtable::redis_command(name.as_bytes());
    out.array(10);
    out.bulk(name.as_bytes());
    out.int(arity as i64);
    match meta {
        Some(m) => {
            out.set(m.flags.len());
            for f in m.flags {
                out.simple(f);
            }
            out.int(m.first_key as i64);
            out.int(m.last_key as i64);
            out.int(m.step as i64);
        }
        None => {
            let names: Vec<&str> = cmdtable::flag_names(flags).collect();
            out.set(names.len());
            for f in names {
                out.simple(f);
            }
            out.int(0);
            out.int(0);
            out.int(0);
        }
    }
    let cats = cmdtable::acl_categories(name);
    out.set(cats.len());
    for cat in cats {
        out.simple(cat);
    }
    let (tips, specs): (&[&str], &[cmdtable::KeySpec]) =
        meta.map_or((&[], &[]), |m| (m.tips, m.key_specs));
    out.set(tips.len());
    for t in tips {
        out.simple(t);
    }
    key_specs(out, specs);
    out.array(subs.len());
    for s in subs {
        served_entry(out, s.name, s.arity, s.flags, &[]);
    }
}

/// A COMMAND INFO entry from Redis 7.0's metadata alone (a command Augur does not serve).
fn meta_entry(out: &mut Out, m: &cmdtable::RedisCommand) {
    out.array(10);
    out.bulk(m.name.as_bytes());
    out.int(m.arity as i64);
    out.set(m.flags.len());
    for f in m.flags {
        out.simple(f);
    }
    out.int(m.first_key as i64);
    out.int(m.last_key as i64);
    out.int(m.step as i64);
    out.set(m.acl_categories.len());
    for cat in m.acl_categories {
        out.simple(cat);
    }
    out.set(m.tips.len());
    for t in m.tips {
        out.simple(t);
    }
    key_specs(out, m.key_specs);
    out.array(m.subcommands.len());
    for s in m.subcommands {
        meta_entry(out, s);
    }
}

/// addReplyCommandKeySpecs.
fn key_specs(out: &mut Out, specs: &[cmdtable::KeySpec]) {
    use cmdtable::{Begin, Find};
    out.array(specs.len());
    for k in specs {
        out.map(if k.notes.is_empty() { 3 } else { 4 });
        if !k.notes.is_empty() {
            out.bulk(b"notes");
            out.bulk(k.notes.as_bytes());
        }
        out.bulk(b"flags");
        out.set(k.flags.len());
        for f in k.flags {
            out.simple(f);
        }
        out.bulk(b"begin_search");
        out.map(2);
        out.bulk(b"type");
        match k.begin {
            Begin::Index(i) => {
                out.bulk(b"index");
                out.bulk(b"spec");
                out.map(1);
                out.bulk(b"index");
                out.int(i as i64);
            }
            Begin::Keyword(word, from) => {
                out.bulk(b"keyword");
                out.bulk(b"spec");
                out.map(2);
                out.bulk(b"keyword");
                out.bulk(word.as_bytes());
                out.bulk(b"startfrom");
                out.int(from as i64);
            }
            Begin::Unknown => {
                out.bulk(b"unknown");
                out.bulk(b"spec");
                out.map(0);
            }
        }
        out.bulk(b"find_keys");
        out.map(2);
        out.bulk(b"type");
        match k.find {
            Find::Range {
                lastkey,
                keystep,
                limit,
            } => {
                out.bulk(b"range");
                out.bulk(b"spec");
                out.map(3);
                out.bulk(b"lastkey");
                out.int(lastkey as i64);
                out.bulk(b"keystep");
                out.int(keystep as i64);
                out.bulk(b"limit");
                out.int(limit as i64);
            }
            Find::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => {
                out.bulk(b"keynum");
                out.bulk(b"spec");
                out.map(3);
                out.bulk(b"keynumidx");
                out.int(keynumidx as i64);
                out.bulk(b"firstkey");
                out.int(firstkey as i64);
                out.bulk(b"keystep");
                out.int(keystep as i64);
            }
            Find::Unknown => {
                out.bulk(b"unknown");
                out.bulk(b"spec");
                out.map(0);
            }
        }
    }
}

fn command_entry(out: &mut Out, spec: &CommandSpec) {
    served_entry(out, spec.name, spec.arity, spec.flags, spec.subcommands);
}

/// One command's COMMAND DOCS map: Augur's summary and group; since, complexity, doc
/// flags, history and the argument grammar from Redis 7.0's documentation where Redis has
/// the command (`crate::redis_docs`), else Augur's own (TENANT: since 1.0.0, O(1)).
fn command_doc(out: &mut Out, name: &str, summary: &str, group: &str, subs: &[cmdtable::SubSpec]) {
    let redis = crate::redis_docs::find(name);
    let extra = redis.map_or(0, |d| d.extra_len());
    out.map(4 + extra + usize::from(!subs.is_empty()));
    out.bulk(b"summary");
    out.bulk(summary.as_bytes());
    out.bulk(b"since");
    out.bulk(
        redis
            .and_then(|d| d.since.as_deref())
            .unwrap_or("1.0.0")
            .as_bytes(),
    );
    out.bulk(b"group");
    out.bulk(group.as_bytes());
    out.bulk(b"complexity");
    out.bulk(
        redis
            .and_then(|d| d.complexity.as_deref())
            .unwrap_or("O(1)")
            .as_bytes(),
    );
    if let Some(d) = redis {
        d.write_extra(out);
    }
    if !subs.is_empty() {
        out.bulk(b"subcommands");
        out.map(subs.len());
        for s in subs {
            out.bulk(s.name.as_bytes());
            command_doc(out, s.name, s.summary, group, &[]);
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
        let mut b = [0u8; crate::cmdtable::MAX_NAME_LEN];
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
                    // A command Augur serves; else what Redis 7.0 says of it (key
                    // positions, for clients that route by them); else nil.
                    match (find(name), cmdtable::redis_command(name)) {
                        (Some(s), _) => command_entry(&mut c.out, s),
                        (None, Some(m)) => meta_entry(&mut c.out, m),
                        (None, None) => c.out.null_array(),
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
                command_doc(&mut c.out, s.name, s.summary, s.group, s.subcommands);
            }
        }
        "list" => command_list(c, args),
        "getkeys" | "getkeysandflags" => getkeys(c, args, sub == "getkeysandflags"),
        _ => help_reply(
            &mut c.out,
            "COMMAND",
            &[
                "(no subcommand)",
                "    Return details about all Redis commands.",
                "COUNT",
                "    Return the total number of commands in this Redis server.",
                "LIST",
                "    Return a list of all commands in this Redis server.",
                "INFO [<command-name> ...]",
                "    Return details about multiple Redis commands.",
                "    If no command names are given, documentation details for all",
                "    commands are returned.",
                "DOCS [<command-name> ...]",
                "    Return documentation details about multiple Redis commands.",
                "    If no command names are given, documentation details for all",
                "    commands are returned.",
                "GETKEYS <full-command>",
                "    Return the keys from a full Redis command.",
                "GETKEYSANDFLAGS <full-command>",
                "    Return the keys and the access flags from a full Redis command.",
            ],
        ),
    }
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]
/// (server.c's commandListCommand): commands and subcommands Augur serves, by full name.
fn command_list(c: &mut Client, args: Args<'_>) {
    enum Filter<'a> {
        All,
        Module,
        AclCat(&'a [u8]),
        Pattern(Vec<u8>),
    }
    let filter = match args.len() {
        2 => Filter::All,
        5 if eq(args.get(2), "filterby") => {
            let (kind, arg) = (args.get(3), args.get(4));
            if eq(kind, "module") {
                Filter::Module
            } else if eq(kind, "aclcat") {
                Filter::AclCat(arg)
            } else if eq(kind, "pattern") {
                Filter::Pattern(arg.to_ascii_lowercase())
            } else {
                return c.out.error(ERR_SYNTAX);
            }
        }
        _ => return c.out.error(ERR_SYNTAX),
    };
    let mut names: Vec<&str> = Vec::new();
    for spec in cmdtable::COMMANDS {
        let all = std::iter::once(spec.name).chain(spec.subcommands.iter().map(|s| s.name));
        for name in all {
            let keep = match &filter {
                Filter::All => true,
                // Augur loads no modules.
                Filter::Module => false,
                Filter::AclCat(cat) => cmdtable::acl_categories(name)
                    .iter()
                    .any(|c| c.as_bytes()[1..].eq_ignore_ascii_case(cat)),
                Filter::Pattern(p) => glob_match(p, name.as_bytes()),
            };
            if keep {
                names.push(name);
            }
        }
    }
    c.out.array(names.len());
    for n in names {
        c.out.bulk(n.as_bytes());
    }
}

/// COMMAND GETKEYS / GETKEYSANDFLAGS (server.c's getKeysSubcommandImpl): the keys of a
/// full command line, from Redis 7.0's key specs, for any Redis 7.0 command (Augur
/// serves it or not).
fn getkeys(c: &mut Client, args: Args<'_>, with_flags: bool) {
    let line: Vec<&[u8]> = args.iter().skip(2).collect();
    // lookupCommand: a container's subcommand when there is one more argument.
    let cmd = cmdtable::redis_command(line[0]).and_then(|m| {
        if m.subcommands.is_empty() || line.len() == 1 {
            Some(m)
        } else {
            m.sub(line[1])
        }
    });
    let Some(cmd) = cmd else {
        return c.out.error("ERR Invalid command specified");
    };
    let has_keys =
        cmd.has_flag("movablekeys") || cmd.key_specs.iter().any(|k| !k.flags.contains(&"not_key"));
    if !has_keys {
        return c.out.error("ERR The command has no key arguments");
    }
    let argc = line.len() as i32;
    if (cmd.arity > 0 && cmd.arity != argc) || argc < -cmd.arity {
        return c
            .out
            .error("ERR Invalid number of arguments specified for command");
    }
    match cmdtable::get_keys(cmd, &line) {
        Err(_) => c.out.error("ERR Invalid arguments specified for command"),
        Ok(keys) => {
            c.out.array(keys.len());
            for k in keys {
                if with_flags {
                    c.out.array(2);
                    c.out.bulk(line[k.pos]);
                    c.out.set(k.flags.len());
                    for f in k.flags {
                        c.out.simple(f);
                    }
                } else {
                    c.out.bulk(line[k.pos]);
                }
            }
        }
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
