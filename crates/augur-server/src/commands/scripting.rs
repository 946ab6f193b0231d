//! The FUNCTION container. Mirrors Redis 7.0's functions.c (functionLoadCommand,
//! functionListCommand, functionDeleteCommand, functionFlushCommand, functionDumpCommand,
//! functionRestoreCommand, functionStatsCommand, functionKillCommand); the libraries and
//! their interpreter are `crate::scripting::functions`, FCALL is in `eval.rs`.
//!
//! Libraries belong to the tenant (ACL user) of the connection that loads them, as keys
//! do: every subcommand sees and changes only the caller's tenant's libraries.

use super::{eq, help_reply, lossy, subcommand, Client};
use crate::cmdtable::CommandSpec;
use crate::resp::Args;
use crate::scripting::functions::{RestorePolicy, LOAD_TIMEOUT};
use crate::scripting::FLAG_NAMES;
use crate::state::Shared;
use std::sync::atomic::Ordering::Relaxed;

fn syntax_error(c: &mut Client, args: Args<'_>) {
    c.out.error(&format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
        lossy(args.get(1))
    ));
}

pub(super) fn function_command(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
) {
    let Some(sub) = subcommand(&mut c.out, spec, args) else {
        return;
    };
    let scripting = &shared.scripting;
    match sub {
        "load" => {
            let mut replace = false;
            let mut i = 2;
            while i < args.len() - 1 {
                let a = args.get(i);
                i += 1;
                if eq(a, "replace") {
                    replace = true;
                    continue;
                }
                return c
                    .out
                    .error(&format!("ERR Unknown option given: {}", lossy(a)));
            }
            if i >= args.len() {
                return c.out.error("ERR Function code is missing");
            }
            let mut fe = scripting.functions.lock();
            let r = fe.create(c.tenant, args.get(i), replace, LOAD_TIMEOUT);
            scripting.publish_function_stats(&fe);
            drop(fe);
            match r {
                Ok(name) => c.out.bulk(name.as_bytes()),
                Err(e) => c.out.error(&format!("ERR {e}")),
            }
        }
        "flush" => {
            if args.len() > 3 {
                return syntax_error(c, args);
            }
            if args.len() == 3 && !eq(args.get(2), "sync") && !eq(args.get(2), "async") {
                return c
                    .out
                    .error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
            }
            let mut fe = scripting.functions.lock();
            fe.flush(c.tenant);
            scripting.publish_function_stats(&fe);
            c.out.ok();
        }
        "list" => {
            let mut with_code = false;
            let mut pattern: Option<&[u8]> = None;
            let mut i = 2;
            while i < args.len() {
                let a = args.get(i);
                if !with_code && eq(a, "withcode") {
                    with_code = true;
                } else if pattern.is_none() && eq(a, "libraryname") {
                    if i >= args.len() - 1 {
                        return c.out.error("ERR library name argument was not given");
                    }
                    pattern = Some(args.get(i + 1));
                    i += 1;
                } else {
                    return c.out.error(&format!("ERR Unknown argument {}", lossy(a)));
                }
                i += 1;
            }
            let fe = scripting.functions.lock();
            let Some(ctx) = fe.ctx(c.tenant) else {
                return c.out.array(0);
            };
            let libs: Vec<_> = ctx
                .libraries
                .values()
                .filter(|l| {
                    pattern.is_none_or(|p| augur_store::glob_match_nocase(p, l.name.as_bytes()))
                })
                .collect();
            c.out.array(libs.len());
            for lib in libs {
                c.out.map(if with_code { 4 } else { 3 });
                c.out.bulk(b"library_name");
                c.out.bulk(lib.name.as_bytes());
                c.out.bulk(b"engine");
                c.out.bulk(b"LUA");
                c.out.bulk(b"functions");
                c.out.array(lib.functions.len());
                for f in lib.functions.values() {
                    c.out.map(3);
                    c.out.bulk(b"name");
                    c.out.bulk(f.name.as_bytes());
                    c.out.bulk(b"description");
                    match &f.desc {
                        Some(d) => c.out.bulk(d),
                        None => c.out.null(),
                    }
                    c.out.bulk(b"flags");
                    let names: Vec<_> = FLAG_NAMES
                        .iter()
                        .filter(|(_, fl)| f.flags & fl != 0)
                        .collect();
                    c.out.set(names.len());
                    for (n, _) in names {
                        c.out.bulk(n.as_bytes());
                    }
                }
                if with_code {
                    c.out.bulk(b"library_code");
                    c.out.bulk(&lib.code);
                }
            }
        }
        "delete" => {
            let mut fe = scripting.functions.lock();
            let found = fe.delete(c.tenant, args.get(2));
            scripting.publish_function_stats(&fe);
            if found {
                c.out.ok()
            } else {
                c.out.error("ERR Library not found")
            }
        }
        "dump" => {
            let payload = scripting.functions.lock().dump(c.tenant);
            c.out.bulk(&payload);
        }
        "restore" => {
            if args.len() > 4 {
                return syntax_error(c, args);
            }
            let policy = if args.len() == 4 {
                let p = args.get(3);
                if eq(p, "append") {
                    RestorePolicy::Append
                } else if eq(p, "replace") {
                    RestorePolicy::Replace
                } else if eq(p, "flush") {
                    RestorePolicy::Flush
                } else {
                    return c.out.error(
                        "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
                    );
                }
            } else {
                RestorePolicy::Append
            };
            let mut fe = scripting.functions.lock();
            let r = fe.restore(c.tenant, args.get(2), policy);
            scripting.publish_function_stats(&fe);
            match r {
                Ok(()) => c.out.ok(),
                Err(e) => c.out.error(&format!("ERR {e}")),
            }
        }
        "kill" => super::eval::script_kill(shared, c, false),
        "stats" => {
            // Runs while a script is busy: reads only what the running script does
            // not lock.
            let running = scripting.running.load(Relaxed);
            if running && !scripting.running_function.load(Relaxed) {
                return c.out.error(crate::scripting::ERR_BUSY_EVAL);
            }
            let (libs, fns) = scripting.function_counts(c.tenant);
            c.out.map(2);
            c.out.bulk(b"running_script");
            let info = if running {
                scripting.running_info.lock().clone()
            } else {
                None
            };
            match info {
                None => c.out.null(),
                Some((name, argv)) => {
                    let ms = scripting
                        .started
                        .lock()
                        .map_or(0, |t| t.elapsed().as_millis() as i64);
                    c.out.map(3);
                    c.out.bulk(b"name");
                    c.out.bulk(name.as_bytes());
                    c.out.bulk(b"command");
                    c.out.array(argv.len());
                    for a in &argv {
                        c.out.bulk(a);
                    }
                    c.out.bulk(b"duration_ms");
                    c.out.int(ms);
                }
            }
            c.out.bulk(b"engines");
            c.out.map(1);
            c.out.bulk(b"LUA");
            c.out.map(2);
            c.out.bulk(b"libraries_count");
            c.out.int(libs as i64);
            c.out.bulk(b"functions_count");
            c.out.int(fns as i64);
        }
        _ => help_reply(
            &mut c.out,
            "FUNCTION",
            &[
                "LOAD [REPLACE] <FUNCTION CODE>",
                "    Create a new library with the given library name and code.",
                "DELETE <LIBRARY NAME>",
                "    Delete the given library.",
                "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
                "    Return general information on all the libraries:",
                "    * Library name",
                "    * The engine used to run the Library",
                "    * Library description",
                "    * Functions list",
                "    * Library code (if WITHCODE is given)",
                "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
                "STATS",
                "    Return information about the current function running:",
                "    * Function name",
                "    * Command used to run the function",
                "    * Duration in MS that the function is running",
                "    If no function is running, return nil",
                "    In addition, returns a list of available engines.",
                "KILL",
                "    Kill the current running function.",
                "FLUSH [ASYNC|SYNC]",
                "    Delete all the libraries.",
                "    When called without the optional mode argument, the behavior is determined by the",
                "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
                "    * ASYNC: Asynchronously flush the libraries.",
                "    * SYNC: Synchronously flush the libraries.",
                "DUMP",
                "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
                "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
                "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
                "    control how to handle existing libraries (default APPEND):",
                "    * FLUSH: delete all existing libraries.",
                "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
                "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
                "      libraries with the new libraries (notice that even on this option there is a chance of failure",
                "      in case of functions name collision with another library).",
            ],
        ),
    }
}
