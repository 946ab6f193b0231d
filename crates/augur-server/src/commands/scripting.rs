//! Scripting commands. Mirrors Redis 7.0's functions.c for the FUNCTION container.
//!
//! Augur has no function libraries (FUNCTION LOAD is refused with an error that says
//! so), so the library set is always empty: FLUSH succeeds, LIST answers an empty list,
//! DELETE finds no library, STATS reports no running script. These answers are exactly
//! what Redis gives for a server without libraries, which is what clients and Redis's
//! own test harness (it sends FUNCTION FLUSH before every test file) rely on.

use super::{eq, help_reply, lossy, subcommand, Client};
use crate::cmdtable::CommandSpec;
use crate::resp::Args;
use crate::state::Shared;

pub(super) fn function_command(
    _shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
) {
    let Some(sub) = subcommand(&mut c.out, spec, args) else {
        return;
    };
    match sub {
        "flush" => {
            if args.len() > 3 {
                return c.out.error(&format!(
                    "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
                    lossy(args.get(1))
                ));
            }
            if args.len() == 3 && !eq(args.get(2), "sync") && !eq(args.get(2), "async") {
                return c
                    .out
                    .error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
            }
            c.out.ok();
        }
        "list" => {
            let (mut with_code, mut library) = (false, false);
            let mut i = 2;
            while i < args.len() {
                let a = args.get(i);
                if !with_code && eq(a, "withcode") {
                    with_code = true;
                } else if !library && eq(a, "libraryname") {
                    if i >= args.len() - 1 {
                        return c.out.error("ERR library name argument was not given");
                    }
                    library = true;
                    i += 1;
                } else {
                    return c.out.error(&format!("ERR Unknown argument {}", lossy(a)));
                }
                i += 1;
            }
            c.out.array(0);
        }
        "delete" => c.out.error("ERR Library not found"),
        // A running EVAL script is killed with SCRIPT KILL (scriptKill's slowevalerr).
        "kill"
            if _shared
                .scripting
                .running
                .load(std::sync::atomic::Ordering::Relaxed) =>
        {
            c.out.error(super::eval::ERR_BUSY)
        }
        "kill" => c.out.error("NOTBUSY No scripts in execution right now."),
        "stats" => {
            c.out.map(2);
            c.out.bulk(b"running_script");
            c.out.null();
            c.out.bulk(b"engines");
            c.out.map(1);
            c.out.bulk(b"LUA");
            c.out.map(2);
            c.out.bulk(b"libraries_count");
            c.out.int(0);
            c.out.bulk(b"functions_count");
            c.out.int(0);
        }
        "load" => c.out.error(
            "ERR Augur does not support function libraries (FUNCTION LOAD); use EVAL or EVALSHA",
        ),
        _ => help_reply(
            &mut c.out,
            "FUNCTION",
            &[
                "LOAD [REPLACE] <FUNCTION CODE>",
                "    Not supported by Augur.",
                "DELETE <LIBRARY NAME>",
                "    Delete the given library (Augur has none).",
                "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
                "    Return general information on all the libraries (none).",
                "FLUSH [ASYNC|SYNC]",
                "    Delete all the libraries (there are none).",
                "STATS",
                "    Return information about the current function running.",
                "KILL",
                "    Kill the current running function.",
            ],
        ),
    }
}
