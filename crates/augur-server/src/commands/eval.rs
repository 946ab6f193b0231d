//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT. Mirrors Redis 7.0's eval.c
//! (evalGenericCommand, scriptCommand) and script.c (scriptPrepareForRun, the checks of
//! scriptCall, scriptInterrupt, scriptKill); the interpreter is `crate::scripting`.
//!
//! - A script runs atomically: `execute` takes the [gate](crate::gate) exclusively for
//!   the EVAL family, as EXEC does, and the script's `redis.call`s go straight to
//!   `dispatch` (never `execute`, which would take the gate again). Inside MULTI, EVAL is
//!   queued and EXEC's exclusive hold covers it.
//! - `redis.call` runs the command as the caller: its tenant and database (SELECT inside
//!   a script changes only the script's database, restored afterwards), with the reply
//!   written to a separate buffer, in the RESP version the script chose
//!   (`redis.setresp`), then converted to Lua.
//! - Like Redis, a script that fails keeps the writes it already made (no rollback).
//! - A script running longer than `busy-reply-threshold` (alias `lua-time-limit`,
//!   default 5000 ms) makes other clients' commands answer BUSY, except those Redis
//!   allows (SCRIPT KILL, SHUTDOWN, AUTH, HELLO, ...); SCRIPT KILL stops it unless it
//!   has written. Its worker thread hands its other connections to a new thread when the
//!   script turns busy, so one runaway script cannot starve them.

use super::{dispatch, help_reply, subcommand, Client, ERR_NOT_INT, ERR_OOM};
use crate::cmdtable::{self, Cmd, CommandSpec, DENYOOM, NOSCRIPT, WRITE};
use crate::resp::{parse_i64, Args, Out};
use crate::scripting::{RunCtx, ScriptHost, FLAG_ALLOW_OOM, FLAG_EVAL_COMPAT_MODE, FLAG_NO_WRITES};
use crate::state::Shared;
use bytes::BytesMut;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

pub const ERR_NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";
/// shared.slowevalerr.
pub const ERR_BUSY: &str = crate::scripting::ERR_BUSY_EVAL;

/// Runs EVAL / EVALSHA / EVAL_RO / EVALSHA_RO. The caller holds the gate exclusively.
pub(super) fn eval_command(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let evalsha = matches!(spec.cmd, Cmd::EvalSha | Cmd::EvalShaRo);
    let ro = matches!(spec.cmd, Cmd::EvalRo | Cmd::EvalShaRo);
    if evalsha && args.get(1).len() != 40 {
        return c.out.error(ERR_NOSCRIPT);
    }
    let Some(numkeys) = parse_i64(args.get(2)) else {
        return c.out.error(ERR_NOT_INT);
    };
    if numkeys > args.len() as i64 - 3 {
        return c
            .out
            .error("ERR Number of keys can't be greater than number of args");
    }
    if numkeys < 0 {
        return c.out.error("ERR Number of keys can't be negative");
    }
    let numkeys = numkeys as usize;
    let scripting = &shared.scripting;
    let mut engine = scripting.engine.lock();
    let sha = if evalsha {
        args.get(1).to_ascii_lowercase()
    } else {
        match engine.create(args.get(1)) {
            Ok(sha) => sha.into_bytes(),
            Err(e) => {
                scripting.publish_stats(&engine);
                return c.out.error(&e);
            }
        }
    };
    let sha = String::from_utf8_lossy(&sha).into_owned();
    let Some(flags) = engine.scripts.get(&sha).map(|s| s.flags) else {
        return c.out.error(ERR_NOSCRIPT);
    };
    if let Err(e) = check_flags(shared, flags, ro) {
        return c.out.error(e);
    }
    let keys = args.range(3, 3 + numkeys);
    let argv = args.range(3 + numkeys, args.len());
    let name = sha.clone();
    run_prepared(
        shared,
        c,
        args,
        flags,
        ro,
        now,
        false,
        &name,
        |ctx, hook, reply| engine.vm.run(&sha, keys, argv, ctx, hook, reply),
    );
    scripting.publish_stats(&engine);
}

/// The refusals before a script with declared flags runs (processCommand with
/// evalGetCommandFlags / fcallGetCommandFlags, then scriptPrepareForRun).
fn check_flags(shared: &Shared, flags: u32, ro: bool) -> Result<(), &'static str> {
    if flags & FLAG_EVAL_COMPAT_MODE != 0 {
        return Ok(());
    }
    if shared.store.over_limit_for_writes() && flags & (FLAG_ALLOW_OOM | FLAG_NO_WRITES) == 0 {
        return Err(ERR_OOM);
    }
    if ro && flags & FLAG_NO_WRITES == 0 {
        return Err("ERR Can not execute a script with write flag using *_ro command.");
    }
    Ok(())
}

/// FCALL / FCALL_RO (functions.c's fcallCommandGeneric). The caller holds the gate
/// exclusively. The function is looked up in the caller's tenant's libraries.
pub(super) fn fcall_command(
    shared: &Shared,
    c: &mut Client,
    spec: &'static CommandSpec,
    args: Args<'_>,
    now: u64,
) {
    let ro = spec.cmd == Cmd::FCallRo;
    let mut fe = shared.scripting.functions.lock();
    let Some(f) = fe.find(c.tenant, args.get(1)) else {
        return c.out.error("ERR Function not found");
    };
    let (lua_ref, name, flags) = (f.lua_ref, f.name.clone(), f.flags);
    let Some(numkeys) = parse_i64(args.get(2)) else {
        return c.out.error("ERR Bad number of keys provided");
    };
    if numkeys > args.len() as i64 - 3 {
        return c
            .out
            .error("ERR Number of keys can't be greater than number of args");
    }
    if numkeys < 0 {
        return c.out.error("ERR Number of keys can't be negative");
    }
    let numkeys = numkeys as usize;
    if let Err(e) = check_flags(shared, flags, ro) {
        return c.out.error(e);
    }
    let keys = args.range(3, 3 + numkeys);
    let argv = args.range(3 + numkeys, args.len());
    run_prepared(
        shared,
        c,
        args,
        flags,
        ro,
        now,
        true,
        &name,
        |ctx, hook, reply| {
            fe.vm
                .call_function(lua_ref, &name, keys, argv, ctx, hook, reply)
        },
    );
}

/// Runs a script or function through `run` (scriptPrepareForRun .. scriptResetRun):
/// publishes the running state other connections read, gives the script its run
/// context, restores the caller's database, and appends the reply.
#[allow(clippy::too_many_arguments)]
fn run_prepared(
    shared: &Shared,
    c: &mut Client,
    args: Args<'_>,
    flags: u32,
    ro: bool,
    now: u64,
    is_function: bool,
    name: &str,
    run: impl FnOnce(&mut RunCtx<'_>, bool, &mut Out),
) {
    let scripting = &shared.scripting;
    let compat = flags & FLAG_EVAL_COMPAT_MODE != 0;
    let oom = shared.store.over_limit_for_writes();
    let threshold = Duration::from_millis(shared.config.read().busy_reply_threshold);

    scripting.killed.store(false, Relaxed);
    scripting.busy.store(false, Relaxed);
    scripting.write_dirty.store(false, Relaxed);
    scripting.running_function.store(is_function, Relaxed);
    *scripting.running_info.lock() =
        Some((name.to_string(), args.iter().map(<[u8]>::to_vec).collect()));
    *scripting.started.lock() = Some(Instant::now());
    scripting.running.store(true, Relaxed);

    let saved_db = c.db;
    let mut reply = Out {
        buf: BytesMut::new(),
        resp3: c.out.resp3,
        stats: Default::default(),
    };
    {
        let mut host = Host {
            shared,
            c: &mut *c,
            now,
            readonly: ro || (!compat && flags & FLAG_NO_WRITES != 0),
            allow_oom: !compat && flags & FLAG_ALLOW_OOM != 0,
            oom_at_start: oom,
            write_dirty: false,
            out: Out {
                buf: BytesMut::new(),
                resp3: false,
                stats: Default::default(),
            },
            start: Instant::now(),
            threshold,
            sha: name,
            busy: false,
            next_hand_off: Duration::ZERO,
        };
        let allow_oom = host.allow_oom;
        if allow_oom {
            shared.store.set_oom_exempt(true);
        }
        let mut ctx = RunCtx::new(&mut host);
        run(&mut ctx, !threshold.is_zero(), &mut reply);
        if allow_oom {
            shared.store.set_oom_exempt(false);
        }
    }
    if c.db != saved_db {
        c.db = saved_db;
        c.meta.db.store(saved_db, Relaxed);
    }
    scripting.running.store(false, Relaxed);
    scripting.busy.store(false, Relaxed);
    scripting.killed.store(false, Relaxed);
    scripting.write_dirty.store(false, Relaxed);
    scripting.running_function.store(false, Relaxed);
    *scripting.running_info.lock() = None;
    *scripting.started.lock() = None;
    c.out.buf.extend_from_slice(&reply.buf);
    // The script's own reply: an error it raised counts as EVAL's (once: an error a
    // command inside it replied was counted then).
    c.out.stats.absorb_reply(&mut reply.stats);
}

/// What the running script's commands see (script.c's run context).
struct Host<'a> {
    shared: &'a Shared,
    c: &'a mut Client,
    now: u64,
    /// EVAL_RO, or a `no-writes` script.
    readonly: bool,
    allow_oom: bool,
    /// Memory was over the limit when the script started (pre_command_oom_state).
    oom_at_start: bool,
    write_dirty: bool,
    /// The script's reply buffer, swapped with the client's around each command.
    out: Out,
    start: Instant,
    threshold: Duration,
    sha: &'a str,
    busy: bool,
    /// Script time at which a busy script next offers its worker (see `interrupt`).
    next_hand_off: Duration,
}

/// The command `args` names, with its flags and arity (a container's subcommand
/// decides, as lookupCommand does); None if there is no such command.
fn resolve(args: Args<'_>) -> Option<(&'static CommandSpec, u32, i32)> {
    let mut buf = [0u8; crate::cmdtable::MAX_NAME_LEN];
    let spec = cmdtable::upper(args.get(0), &mut buf).and_then(cmdtable::lookup)?;
    if !spec.subcommands.is_empty() && args.len() >= 2 {
        let sub = spec.sub(args.get(1))?;
        return Some((spec, sub.flags, sub.arity));
    }
    Some((spec, spec.flags, spec.arity))
}

impl Host<'_> {
    /// A command the script may not run: like script.c's scriptCall error path, the
    /// error counts in errorstats now and the command (if any) as rejected; the error
    /// the script then raises is not counted again.
    fn refuse(&mut self, slot: Option<u16>, err: String) -> String {
        // "-CODE msg", or a bare message whose code is ERR (afterErrorReply).
        match err.strip_prefix('-') {
            Some(coded) => self.c.out.stats.error(coded.as_bytes()),
            None => self.c.out.stats.error(format!("ERR {err}").as_bytes()),
        }
        if let Some(slot) = slot {
            self.c.out.stats.reject(slot);
        }
        self.c
            .out
            .stats
            .absorb(&mut crate::stats::Pending::default());
        err
    }
}

impl ScriptHost for Host<'_> {
    fn call(&mut self, args: Args<'_>, resp3: bool) -> Result<(), String> {
        self.out.buf.clear();
        let Some((spec, flags, arity)) = resolve(args) else {
            return Err(self.refuse(None, "Unknown Redis command called from script".into()));
        };
        let slot = crate::stats::resolve(spec, (args.len() >= 2).then(|| args.get(1))).0;
        if !cmdtable::arity_ok(arity, args.len()) {
            return Err(self.refuse(
                Some(slot),
                "Wrong number of args calling Redis command from script".into(),
            ));
        }
        if flags & NOSCRIPT != 0 {
            return Err(self.refuse(
                Some(slot),
                "This Redis command is not allowed from script".into(),
            ));
        }
        // scriptVerifyACL: the caller's permissions apply inside the script.
        if self.c.meta.acl_state.load(Relaxed) != 0 {
            if let Err((denied, _)) =
                super::tenant::check_request(self.shared, self.c, spec, args, "lua")
            {
                return Err(denied.script_error().into());
            }
        }
        if self.readonly && flags & (WRITE | cmdtable::MAY_REPLICATE) != 0 {
            return Err(self.refuse(
                Some(slot),
                "Write commands are not allowed from read-only scripts.".into(),
            ));
        }
        // Only the first write may be refused for memory: after it the script cannot be
        // stopped half way.
        if !self.allow_oom && !self.write_dirty && self.oom_at_start && flags & DENYOOM != 0 {
            return Err(self.refuse(Some(slot), format!("-{ERR_OOM}")));
        }
        if flags & WRITE != 0 {
            self.write_dirty = true;
            self.shared.scripting.write_dirty.store(true, Relaxed);
        }
        self.out.resp3 = resp3;
        std::mem::swap(&mut self.c.out, &mut self.out);
        self.c.commands += 1;
        // A command a script runs is a call of its own (script.c's scriptCall -> call()).
        let t0 = Instant::now();
        self.c.out.stats.begin();
        self.c.in_script = true;
        dispatch(self.shared, self.c, spec, args, self.now);
        self.c.in_script = false;
        if flags & crate::cmdtable::READONLY != 0 {
            self.c.script_read = true;
        }
        let nanos = t0.elapsed().as_nanos() as u64;
        self.c.out.stats.call(slot, nanos);
        self.c.in_script = true;
        super::diagnostics::after_call(self.shared, self.c, spec, args, nanos);
        self.c.in_script = false;
        std::mem::swap(&mut self.c.out, &mut self.out);
        self.c.out.stats.absorb(&mut self.out.stats);
        if self.shared.monitors.active() {
            super::client::feed_script_monitors(self.shared, self.c, spec, args);
        }
        Ok(())
    }

    fn reply(&self) -> &[u8] {
        &self.out.buf
    }

    fn acl_check(&self, args: Args<'_>) -> Option<bool> {
        let (spec, _, _) = resolve(args)?;
        if self.c.perms.unrestricted {
            return Some(true);
        }
        let id = crate::acl::request_id(spec.name, args)?;
        Some(
            self.c
                .perms
                .check(&crate::acl::Request { id, args })
                .is_ok(),
        )
    }

    fn interrupt(&mut self) -> bool {
        let s = &self.shared.scripting;
        if s.killed.load(Relaxed) || self.shared.shutdown_requested.load(Relaxed) {
            return true;
        }
        if !self.threshold.is_zero() {
            let elapsed = self.start.elapsed();
            if !self.busy && elapsed >= self.threshold {
                self.busy = true;
                tracing::warn!(
                    "Slow script detected: still in execution after {} milliseconds. You can try killing the script using the SCRIPT KILL command. Script name is: {}.",
                    elapsed.as_millis(),
                    self.sha
                );
                s.busy.store(true, Relaxed);
            }
            // Not once but every HAND_OFF_EVERY: a hand-off can come back with the worker
            // (when the thread meant to take it over had not started yet, as on a loaded
            // machine), and the connections queued on it would then wait for the script.
            if self.busy && elapsed >= self.next_hand_off {
                self.next_hand_off = elapsed + HAND_OFF_EVERY;
                hand_off_worker();
            }
        }
        false
    }
}

/// How often a busy script hands its worker over again (each costs it about 1 ms).
const HAND_OFF_EVERY: Duration = Duration::from_millis(50);

/// The script keeps this thread for a while: on tokio's multi-thread runtime, let the
/// worker's other tasks (connections) move to another thread (`block_in_place` hands the
/// worker's queue over), so they get BUSY replies, and SCRIPT KILL can reach us, even
/// with a single worker thread.
fn hand_off_worker() {
    if let Ok(h) = tokio::runtime::Handle::try_current() {
        if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread {
            tokio::task::block_in_place(|| std::thread::sleep(Duration::from_millis(1)));
        }
    }
}

pub(super) fn script_command(
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
        "flush" => {
            let async_free = match args.len() {
                2 => false,
                3 if args.get(2).eq_ignore_ascii_case(b"sync") => false,
                3 if args.get(2).eq_ignore_ascii_case(b"async") => true,
                _ => {
                    return c
                        .out
                        .error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
                }
            };
            scripting.flush(async_free);
            c.out.ok();
        }
        "exists" => {
            let engine = scripting.engine.lock();
            c.out.array(args.len() - 2);
            for a in args.iter().skip(2) {
                let sha = String::from_utf8_lossy(&a.to_ascii_lowercase()).into_owned();
                c.out.int(engine.scripts.contains_key(&sha) as i64);
            }
        }
        "load" => {
            let mut engine = scripting.engine.lock();
            let r = engine.create(args.get(2));
            scripting.publish_stats(&engine);
            drop(engine);
            match r {
                Ok(sha) => c.out.bulk(sha.as_bytes()),
                Err(e) => c.out.error(&e),
            }
        }
        "kill" => {
            script_kill(shared, c, true)
        }
        "debug" => {
            let mode = args.get(2);
            if mode.eq_ignore_ascii_case(b"no") {
                c.out.ok()
            } else if mode.eq_ignore_ascii_case(b"yes") || mode.eq_ignore_ascii_case(b"sync") {
                c.out
                    .error("ERR Augur does not support the Lua debugger (SCRIPT DEBUG)")
            } else {
                c.out.error("ERR Use SCRIPT DEBUG YES/SYNC/NO")
            }
        }
        _ => help_reply(
            &mut c.out,
            "SCRIPT",
            &[
                "DEBUG (YES|SYNC|NO)",
                "    Set the debug mode for subsequent scripts executed.",
                "EXISTS <sha1> [<sha1> ...]",
                "    Return information about the existence of the scripts in the script cache.",
                "FLUSH [ASYNC|SYNC]",
                "    Flush the Lua scripts cache. Very dangerous on replicas.",
                "    When called without the optional mode argument, the behavior is determined by the",
                "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
                "    * ASYNC: Asynchronously flush the scripts cache.",
                "    * SYNC: Synchronously flush the scripts cache.",
                "KILL",
                "    Kill the currently executing Lua script.",
                "LOAD <script>",
                "    Load a script into the scripts cache without executing it.",
            ],
        ),
    }
}

/// SCRIPT KILL (`is_eval`) and FUNCTION KILL (script.c's scriptKill): each stops only
/// its own kind of script, and neither one that has written.
pub(super) fn script_kill(shared: &Shared, c: &mut Client, is_eval: bool) {
    let scripting = &shared.scripting;
    let function = scripting.running_function.load(Relaxed);
    if !scripting.running.load(Relaxed) {
        c.out.error("NOTBUSY No scripts in execution right now.")
    } else if scripting.write_dirty.load(Relaxed) {
        c.out.error("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
    } else if is_eval && function {
        c.out.error(crate::scripting::ERR_BUSY_FUNCTION)
    } else if !is_eval && !function {
        c.out.error(crate::scripting::ERR_BUSY_EVAL)
    } else {
        scripting.killed.store(true, Relaxed);
        c.out.ok();
    }
}

/// Whether `args` may run while a script is busy (CMD_ALLOW_BUSY; for a container, its
/// subcommand's flag).
pub(super) fn allow_busy(spec: &'static CommandSpec, args: Args<'_>) -> bool {
    if spec.flags & cmdtable::ALLOW_BUSY != 0 {
        return true;
    }
    !spec.subcommands.is_empty()
        && args.len() >= 2
        && spec
            .sub(args.get(1))
            .is_some_and(|s| s.flags & cmdtable::ALLOW_BUSY != 0)
}
