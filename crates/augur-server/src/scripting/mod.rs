//! Lua scripting (EVAL): the interpreter, the script cache, and the state other
//! connections see while a script runs (BUSY, SCRIPT KILL). Mirrors Redis 7.0's eval.c
//! (cache, SCRIPT), script.c (run context, busy scripts, kill) and script_lua.c (the
//! `redis` API, type conversions, the sandbox); the commands are in
//! `commands/eval.rs`.
//!
//! The script cache is per server and shared by all tenants: a script is code, not data.
//! Two tenants sending the same script share one compiled function; what the script
//! touches is always the calling connection's own keyspace (its tenant and database), so
//! sharing the code leaks nothing. Like Redis, the cache only shrinks on SCRIPT FLUSH
//! (which also starts a fresh interpreter).

mod bit;
mod cjson;
mod cmsgpack;
pub mod fmt;
pub mod functions;
mod lstruct;
mod vm;

pub use vm::{verify_name, LuaVm, RegisteredFunction, RunCtx, ScriptHost};

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

/// Shebang flags (script.c's scripts_flags_def).
pub const FLAG_NO_WRITES: u32 = 1;
pub const FLAG_ALLOW_OOM: u32 = 1 << 1;
pub const FLAG_ALLOW_STALE: u32 = 1 << 2;
pub const FLAG_NO_CLUSTER: u32 = 1 << 3;
pub const FLAG_ALLOW_CROSS_SLOT: u32 = 1 << 4;
/// No shebang: the pre-7.0 rules (SCRIPT_FLAG_EVAL_COMPAT_MODE).
pub const FLAG_EVAL_COMPAT_MODE: u32 = 1 << 5;

/// shared.slowevalerr.
pub const ERR_BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// shared.slowscripterr.
pub const ERR_BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

/// A flag by its name (script.c's scripts_flags_def; register_function compares
/// without case).
pub fn flag_by_name(name: &[u8]) -> Option<u32> {
    FLAG_NAMES
        .iter()
        .find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name))
        .map(|&(_, f)| f)
}

/// scripts_flags_def, in Redis's order (FUNCTION LIST shows flags in it).
pub const FLAG_NAMES: [(&str, u32); 5] = [
    ("no-writes", FLAG_NO_WRITES),
    ("allow-oom", FLAG_ALLOW_OOM),
    ("allow-stale", FLAG_ALLOW_STALE),
    ("no-cluster", FLAG_NO_CLUSTER),
    ("allow-cross-slot-keys", FLAG_ALLOW_CROSS_SLOT),
];

/// A cached script.
pub struct CachedScript {
    pub body: Vec<u8>,
    pub flags: u32,
}

/// The interpreter and the scripts compiled into it. Locked by EVAL (under the gate's
/// exclusive hold) and by SCRIPT LOAD / EXISTS / FLUSH.
pub struct Engine {
    pub vm: LuaVm,
    /// Lower-case hex SHA1 -> script.
    pub scripts: HashMap<String, CachedScript>,
    /// Bytes of the cached bodies (INFO used_memory_scripts_eval).
    pub scripts_bytes: u64,
}

impl Engine {
    fn new() -> Engine {
        Engine {
            vm: LuaVm::new(),
            scripts: HashMap::new(),
            scripts_bytes: 0,
        }
    }

    /// Compiles and caches `body` unless it is cached (luaCreateFunction). Returns its
    /// SHA1, or the error reply text.
    pub fn create(&mut self, body: &[u8]) -> Result<String, String> {
        let sha = sha1hex(body);
        if self.scripts.contains_key(&sha) {
            return Ok(sha);
        }
        let (flags, shebang_len) = extract_shebang_flags(body)?;
        self.vm.create_function(&sha, &body[shebang_len..])?;
        self.scripts_bytes += body.len() as u64 + 40;
        self.scripts.insert(
            sha.clone(),
            CachedScript {
                body: body.to_vec(),
                flags,
            },
        );
        Ok(sha)
    }
}

/// What the rest of the server sees of scripting. Everything another connection may read
/// while a script runs (INFO, SCRIPT KILL, the BUSY check) is an atomic, never the engine
/// lock, which the running script holds.
pub struct Scripting {
    pub engine: Mutex<Engine>,
    /// A script is running.
    pub running: AtomicBool,
    /// It has run longer than busy-reply-threshold: other clients get BUSY.
    pub busy: AtomicBool,
    /// SCRIPT KILL asked it to stop.
    pub killed: AtomicBool,
    /// It has run a write command (SCRIPT KILL is then refused).
    pub write_dirty: AtomicBool,
    /// INFO: cached scripts and interpreter memory, refreshed after each change.
    pub cached_scripts: AtomicU64,
    pub lua_memory: AtomicU64,
    pub scripts_memory: AtomicU64,
    /// When the running script started (for FUNCTION STATS-like reporting and logs).
    pub started: Mutex<Option<Instant>>,
    /// Function libraries and their interpreter (FUNCTION / FCALL).
    pub functions: Mutex<functions::FunctionsEngine>,
    /// The running script is a function (FCALL), not EVAL: decides the BUSY text and
    /// which of SCRIPT KILL / FUNCTION KILL may stop it.
    pub running_function: AtomicBool,
    /// FUNCTION STATS' running_script: the function's name and the calling command.
    pub running_info: Mutex<Option<(String, Vec<Vec<u8>>)>>,
    /// Libraries and functions per tenant, refreshed after each change, for FUNCTION
    /// STATS (which runs while a busy function holds the functions lock) and INFO.
    pub function_counts: Mutex<HashMap<augur_store::TenantId, (usize, usize)>>,
}

impl Default for Scripting {
    fn default() -> Self {
        let engine = Engine::new();
        let mem = engine.vm.memory();
        Scripting {
            engine: Mutex::new(engine),
            running: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            write_dirty: AtomicBool::new(false),
            cached_scripts: AtomicU64::new(0),
            lua_memory: AtomicU64::new(mem),
            scripts_memory: AtomicU64::new(0),
            started: Mutex::new(None),
            functions: Mutex::new(functions::FunctionsEngine::default()),
            running_function: AtomicBool::new(false),
            running_info: Mutex::new(None),
            function_counts: Mutex::new(HashMap::new()),
        }
    }
}

impl Scripting {
    /// Whether a script has run past busy-reply-threshold (other commands get BUSY).
    #[inline]
    pub fn busy(&self) -> bool {
        self.busy.load(Relaxed)
    }

    /// The BUSY reply for other clients while a script is busy (shared.slowevalerr or,
    /// for a function, shared.slowscripterr).
    pub fn busy_error(&self) -> &'static str {
        if self.running_function.load(Relaxed) {
            ERR_BUSY_FUNCTION
        } else {
            ERR_BUSY_EVAL
        }
    }

    /// Refreshes the library counts from the functions engine (called with it locked).
    pub fn publish_function_stats(&self, f: &functions::FunctionsEngine) {
        let counts = f
            .tenants
            .iter()
            .map(|(t, ctx)| (*t, (ctx.libraries.len(), ctx.function_count())))
            .collect();
        *self.function_counts.lock() = counts;
    }

    /// Drops a deleted tenant's libraries (ACL DELUSER).
    pub fn drop_tenant_functions(&self, tenant: augur_store::TenantId) {
        let mut f = self.functions.lock();
        f.flush(tenant);
        self.publish_function_stats(&f);
    }

    /// A tenant's (libraries, functions).
    pub fn function_counts(&self, tenant: augur_store::TenantId) -> (usize, usize) {
        self.function_counts
            .lock()
            .get(&tenant)
            .copied()
            .unwrap_or((0, 0))
    }

    /// Refreshes INFO's numbers from the engine (called with the engine locked).
    pub fn publish_stats(&self, e: &Engine) {
        self.cached_scripts.store(e.scripts.len() as u64, Relaxed);
        self.lua_memory.store(e.vm.memory(), Relaxed);
        self.scripts_memory.store(e.scripts_bytes, Relaxed);
    }

    /// SCRIPT FLUSH: a fresh interpreter and an empty cache. The old interpreter is
    /// closed on another thread when `async_free`.
    pub fn flush(&self, async_free: bool) {
        let mut e = self.engine.lock();
        let old = std::mem::replace(&mut *e, Engine::new());
        self.publish_stats(&e);
        drop(e);
        if async_free {
            let _ = std::thread::Builder::new()
                .name("augur-lua-free".into())
                .spawn(move || drop(old));
        } else {
            drop(old);
        }
    }
}

/// Lower-case hex SHA1 of `data` (eval.c's sha1hex).
pub fn sha1hex(data: &[u8]) -> String {
    use sha1::{Digest, Sha1};
    let d = Sha1::digest(data);
    let mut s = String::with_capacity(40);
    for b in d {
        s.push(char::from_digit((b >> 4) as u32, 16).unwrap_or('0'));
        s.push(char::from_digit((b & 15) as u32, 16).unwrap_or('0'));
    }
    s
}

/// Parses a `#!lua flags=...` first line (evalExtractShebangFlags). Returns the flags and
/// how many bytes the shebang takes (the newline is kept, so line numbers stay right).
pub fn extract_shebang_flags(body: &[u8]) -> Result<(u32, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((FLAG_EVAL_COMPAT_MODE, 0));
    }
    let Some(end) = memchr::memchr(b'\n', body) else {
        return Err("ERR Invalid script shebang".into());
    };
    let mut data = Vec::new();
    let mut ranges = Vec::new();
    if crate::resp::split_args(&body[..end], &mut data, &mut ranges).is_err() || ranges.is_empty() {
        return Err("ERR Invalid engine in script shebang".into());
    }
    let part = |i: usize| -> &[u8] {
        let (s, e) = ranges[i];
        &data[s..e]
    };
    if part(0) != b"#!lua" {
        return Err(format!(
            "ERR Unexpected engine in script shebang: {}",
            String::from_utf8_lossy(part(0))
        ));
    }
    let mut flags = 0;
    for i in 1..ranges.len() {
        let p = part(i);
        let Some(list) = p.strip_prefix(b"flags=") else {
            return Err(format!(
                "ERR Unknown lua shebang option: {}",
                String::from_utf8_lossy(p)
            ));
        };
        // sdssplitlen: an empty list is no flags; empty items are errors.
        if list.is_empty() {
            continue;
        }
        for f in list.split(|&b| b == b',') {
            flags |= match f {
                b"no-writes" => FLAG_NO_WRITES,
                b"allow-oom" => FLAG_ALLOW_OOM,
                b"allow-stale" => FLAG_ALLOW_STALE,
                b"no-cluster" => FLAG_NO_CLUSTER,
                b"allow-cross-slot-keys" => FLAG_ALLOW_CROSS_SLOT,
                _ => {
                    return Err(format!(
                        "ERR Unexpected flag in script shebang: {}",
                        String::from_utf8_lossy(f)
                    ))
                }
            };
        }
    }
    Ok((flags, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_of_known_strings() {
        assert_eq!(sha1hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(
            sha1hex(b"Pizza & Mandolino"),
            "74822d82031af7493c20eefa13bd07ec4fada82f"
        );
    }

    #[test]
    fn shebang() {
        assert_eq!(
            extract_shebang_flags(b"return 1").unwrap(),
            (FLAG_EVAL_COMPAT_MODE, 0)
        );
        assert_eq!(extract_shebang_flags(b"#!lua\nreturn 1").unwrap(), (0, 5));
        assert_eq!(
            extract_shebang_flags(b"#!lua flags=no-writes,allow-oom\nx").unwrap(),
            (FLAG_NO_WRITES | FLAG_ALLOW_OOM, 31)
        );
        assert_eq!(extract_shebang_flags(b"#!lua flags=\nx").unwrap(), (0, 12));
        assert!(extract_shebang_flags(b"#!lua")
            .unwrap_err()
            .contains("Invalid script shebang"));
        assert!(extract_shebang_flags(b"#!not-lua\n")
            .unwrap_err()
            .contains("Unexpected engine in script shebang: #!not-lua"));
        assert!(extract_shebang_flags(b"#!lua badger=data\n")
            .unwrap_err()
            .contains("Unknown lua shebang option: badger=data"));
        assert!(extract_shebang_flags(b"#!lua flags=allow-oom,what?\n")
            .unwrap_err()
            .contains("Unexpected flag in script shebang: what?"));
    }
}
