//! The Lua interpreter behind EVAL: a port of Redis 7.0's script_lua.c (the `redis` API,
//! RESP <-> Lua conversions, the count hook that notices slow scripts and kills them)
//! and of eval.c's luaCreateFunction / luaCallFunction, on Lua 5.1's C API.
//!
//! The C API is used directly (through mlua's FFI crate) because Redis's semantics live
//! there: errors are Lua *tables* raised with `lua_error`, the hook raises from inside
//! the VM, and replies are read with raw table access only. Rules kept throughout: no
//! Rust value that owns memory is alive across a Lua call that can raise (so a longjmp
//! never skips a destructor), every conversion of a script's return value uses raw
//! access and never calls into Lua code (it runs outside a protected call), and Rust
//! code called from Lua runs under `catch_unwind`.

use super::fmt::fmt_g;
use crate::resp::{Args, Out};
use mlua_sys as ffi;
use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a script's commands run against: implemented by the EVAL command.
pub trait ScriptHost {
    /// Runs one command of `redis.call` / `redis.pcall`. On success the RESP reply (RESP3
    /// when `resp3`) is in [`ScriptHost::reply`]; `Err` is the script layer refusing the
    /// command, with Redis's text (a leading `-CODE` sets the error code).
    fn call(&mut self, args: Args<'_>, resp3: bool) -> Result<(), String>;
    fn reply(&self) -> &[u8];
    /// `redis.acl_check_cmd`: None for an unknown command.
    fn acl_check(&self, args: Args<'_>) -> Option<bool>;
    /// Called every 100k instructions: notes a slow script; true = kill it now.
    fn interrupt(&mut self) -> bool;
}

/// One script run: the host and the state the `redis` functions change.
pub struct RunCtx<'a> {
    pub host: &'a mut dyn ScriptHost,
    /// redis.setresp(3).
    pub resp3: bool,
    args: Vec<u8>,
    ranges: Vec<(usize, usize)>,
    err: String,
}

impl<'a> RunCtx<'a> {
    pub fn new(host: &'a mut dyn ScriptHost) -> Self {
        RunCtx {
            host,
            resp3: false,
            args: Vec::new(),
            ranges: Vec::new(),
            err: String::new(),
        }
    }
}

const PRELUDE: &str = include_str!("prelude.lua");
const REDIS_VERSION: &str = crate::state::REDIS_COMPAT_VERSION;
const REDIS_VERSION_NUM: f64 = 0x0007_000f as f64;
/// Nesting at which a reply stops (Redis: "reached lua stack limit").
const MAX_REPLY_DEPTH: u32 = 1000;
/// Lua GC steps are run every this many scripts (eval.c's LUA_GC_CYCLE_PERIOD).
const GC_CYCLE_PERIOD: u32 = 50;

/// Registry key of the running script's `RunCtx` (a light userdata; nil between runs).
static CTX_KEY: u8 = 0;

/// A Lua interpreter, opened on first use: a server that never runs a script never
/// builds one. Redis opens its interpreters at start (scriptingInit, functionsInit);
/// here the two (EVAL's and the functions') with their libraries and prelude were
/// ~200 KB of the C heap and the pages of Lua's code that start-up touched, in every
/// server (`bench/memory.sh`).
pub struct LuaVm {
    /// None until [`LuaVm::state`] opens it.
    opened: Option<Opened>,
    /// FUNCTION's interpreter (`redis.register_function`), not EVAL's.
    functions: bool,
    calls: u32,
}

/// An open interpreter, closed when dropped.
struct Opened {
    l: *mut ffi::lua_State,
    /// redisLrand48's state, which math.random reaches through a light userdata (kept
    /// here so that it lives as long as the interpreter).
    _rand: Box<u64>,
}

// The state is only used by whoever holds the engine lock.
unsafe impl Send for Opened {}

impl Drop for Opened {
    fn drop(&mut self) {
        unsafe { ffi::lua_close(self.l) }
    }
}

impl Default for LuaVm {
    fn default() -> Self {
        Self::new()
    }
}

macro_rules! cstr {
    ($s:literal) => {
        concat!($s, "\0").as_ptr() as *const c_char
    };
}

unsafe fn set_fn(l: *mut ffi::lua_State, name: *const c_char, f: ffi::lua_CFunction) {
    ffi::lua_pushcfunction(l, f);
    ffi::lua_setfield(l, -2, name);
}

impl LuaVm {
    /// A fresh interpreter with Redis's libraries and sandbox (EVAL's).
    pub fn new() -> LuaVm {
        Self::unopened(false)
    }

    /// The interpreter of function libraries (function_lua.c): EVAL's sandbox plus
    /// `redis.register_function` while FUNCTION LOAD runs a library.
    pub fn new_functions() -> LuaVm {
        Self::unopened(true)
    }

    fn unopened(functions: bool) -> LuaVm {
        LuaVm {
            opened: None,
            functions,
            calls: 0,
        }
    }

    /// The interpreter, opened now if it was not.
    fn state(&mut self) -> *mut ffi::lua_State {
        let functions = self.functions;
        self.opened.get_or_insert_with(|| Self::open(functions)).l
    }

    fn open(functions: bool) -> Opened {
        let mut rand = Box::new(RAND48_DEFAULT);
        unsafe {
            let l = ffi::luaL_newstate();
            assert!(!l.is_null(), "cannot allocate a Lua state");
            let libs: [(ffi::lua_CFunction, *const c_char); 5] = [
                (ffi::luaopen_base, cstr!("")),
                (ffi::luaopen_table, cstr!("table")),
                (ffi::luaopen_string, cstr!("string")),
                (ffi::luaopen_math, cstr!("math")),
                (ffi::luaopen_debug, cstr!("debug")),
            ];
            for (f, name) in libs {
                ffi::lua_pushcfunction(l, f);
                ffi::lua_pushstring(l, name);
                ffi::lua_call(l, 1, 0);
            }
            // The prelude, called with the native functions and the debug library.
            let rc = ffi::luaL_loadbuffer(
                l,
                PRELUDE.as_ptr() as *const c_char,
                PRELUDE.len(),
                cstr!("=augur"),
            );
            assert!(rc == 0, "the scripting prelude does not compile");
            ffi::lua_createtable(l, 0, 24);
            set_fn(l, cstr!("call"), redis_call);
            set_fn(l, cstr!("pcall"), redis_pcall);
            set_fn(l, cstr!("sha1hex"), redis_sha1hex);
            set_fn(l, cstr!("error_reply"), redis_error_reply);
            set_fn(l, cstr!("status_reply"), redis_status_reply);
            set_fn(l, cstr!("log"), redis_log);
            set_fn(l, cstr!("setresp"), redis_setresp);
            set_fn(l, cstr!("set_repl"), redis_set_repl);
            set_fn(l, cstr!("acl_check_cmd"), redis_acl_check_cmd);
            set_fn(l, cstr!("make_guards"), make_guards);
            if functions {
                set_fn(l, cstr!("register_function"), redis_register_function);
            }
            // cjson's functions share its configuration table as their upvalue.
            ffi::lua_createtable(l, 0, 10);
            ffi::lua_pushvalue(l, -1);
            ffi::lua_pushcclosure(l, super::cjson::encode, 1);
            ffi::lua_setfield(l, -3, cstr!("cjson_encode"));
            ffi::lua_pushvalue(l, -1);
            ffi::lua_pushcclosure(l, super::cjson::decode, 1);
            ffi::lua_setfield(l, -3, cstr!("cjson_decode"));
            ffi::lua_setfield(l, -2, cstr!("cjson_cfg"));
            ffi::lua_pushlightuserdata(l, &mut *rand as *mut u64 as *mut c_void);
            ffi::lua_pushcclosure(l, math_random, 1);
            ffi::lua_setfield(l, -2, cstr!("random"));
            ffi::lua_pushlightuserdata(l, &mut *rand as *mut u64 as *mut c_void);
            ffi::lua_pushcclosure(l, math_randomseed, 1);
            ffi::lua_setfield(l, -2, cstr!("randomseed"));
            ffi::lua_pushlightuserdata(l, std::ptr::null_mut());
            ffi::lua_setfield(l, -2, cstr!("null"));
            push_bytes(l, REDIS_VERSION.as_bytes());
            ffi::lua_setfield(l, -2, cstr!("version"));
            ffi::lua_pushnumber(l, REDIS_VERSION_NUM);
            ffi::lua_setfield(l, -2, cstr!("version_num"));
            super::bit::push_library(l);
            ffi::lua_setfield(l, -2, cstr!("bit"));
            super::cmsgpack::push_library(l);
            ffi::lua_setfield(l, -2, cstr!("cmsgpack"));
            super::lstruct::push_library(l);
            ffi::lua_setfield(l, -2, cstr!("struct"));
            ffi::lua_getfield(l, ffi::LUA_GLOBALSINDEX, cstr!("debug"));
            let rc = ffi::lua_pcall(l, 2, 4, 0);
            if rc != 0 {
                let msg = String::from_utf8_lossy(to_bytes(l, -1)).into_owned();
                panic!("the scripting prelude failed: {msg}");
            }
            // Stack: P, V, handler, load_mode (nil for EVAL's interpreter).
            ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, cstr!("augur_loadmode"));
            ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, cstr!("augur_errh"));
            ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, cstr!("augur_globals"));
            ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, cstr!("augur_env"));
            // Only the error handler keeps the debug library.
            ffi::lua_pushnil(l);
            ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, cstr!("debug"));
            ffi::lua_settop(l, 0);
            Opened { l, _rand: rand }
        }
    }

    /// Bytes the interpreter holds (INFO used_memory_lua): 0 before it is opened.
    pub fn memory(&self) -> u64 {
        let Some(o) = &self.opened else {
            return 0;
        };
        unsafe {
            let kb = ffi::lua_gc(o.l, ffi::LUA_GCCOUNT, 0).max(0) as u64;
            let b = ffi::lua_gc(o.l, ffi::LUA_GCCOUNTB, 0).max(0) as u64;
            kb * 1024 + b
        }
    }

    /// Compiles `code` as the function `f_<sha>` (luaCreateFunction).
    pub fn create_function(&mut self, sha: &str, code: &[u8]) -> Result<(), String> {
        let l = self.state();
        let name = format!("f_{sha}\0");
        unsafe {
            let rc = ffi::luaL_loadbuffer(
                l,
                code.as_ptr() as *const c_char,
                code.len(),
                cstr!("@user_script"),
            );
            if rc != 0 {
                let msg = String::from_utf8_lossy(to_bytes(l, -1)).into_owned();
                ffi::lua_settop(l, 0);
                return Err(format!("ERR Error compiling script (new function): {msg}"));
            }
            ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, cstr!("augur_env"));
            ffi::lua_setfenv(l, -2);
            ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, name.as_ptr() as *const c_char);
        }
        Ok(())
    }

    /// Runs the cached script `sha` (luaCallFunction) and writes its reply, or its error,
    /// to `out`. `hook`: install the count hook (busy-reply-threshold > 0).
    pub fn run(
        &mut self,
        sha: &str,
        keys: Args<'_>,
        argv: Args<'_>,
        ctx: &mut RunCtx<'_>,
        hook: bool,
        out: &mut Out,
    ) {
        let l = self.state();
        let name = format!("f_{sha}\0");
        unsafe {
            ffi::lua_settop(l, 0);
            ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, cstr!("augur_errh"));
            ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, name.as_ptr() as *const c_char);
            if ffi::lua_type(l, -1) != ffi::LUA_TFUNCTION {
                ffi::lua_settop(l, 0);
                return out.error("NOSCRIPT No matching script. Please use EVAL.");
            }
            // On EVAL, keys and arguments are globals.
            ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, cstr!("augur_globals"));
            push_array(l, keys);
            ffi::lua_setfield(l, -2, cstr!("KEYS"));
            push_array(l, argv);
            ffi::lua_setfield(l, -2, cstr!("ARGV"));
            ffi::lua_pop(l, 1);
        }
        self.call_prepared(0, sha, ctx, hook, out);
    }

    /// Runs the library function registered as `lua_ref` (function_lua.c's
    /// luaEngineCall): keys and arguments are its two arguments, not globals. Errors
    /// name the function `name`.
    #[allow(clippy::too_many_arguments)]
    pub fn call_function(
        &mut self,
        lua_ref: c_int,
        name: &str,
        keys: Args<'_>,
        argv: Args<'_>,
        ctx: &mut RunCtx<'_>,
        hook: bool,
        out: &mut Out,
    ) {
        let l = self.state();
        unsafe {
            ffi::lua_settop(l, 0);
            ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, cstr!("augur_errh"));
            ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, lua_ref as ffi::lua_Integer);
            if ffi::lua_type(l, -1) != ffi::LUA_TFUNCTION {
                ffi::lua_settop(l, 0);
                return out.error("ERR Function not found");
            }
            push_array(l, keys);
            push_array(l, argv);
        }
        self.call_prepared(2, name, ctx, hook, out);
    }

    /// Calls the function under its `nargs` arguments (the error handler is at index
    /// 1), then writes the reply.
    fn call_prepared(
        &mut self,
        nargs: c_int,
        name: &str,
        ctx: &mut RunCtx<'_>,
        hook: bool,
        out: &mut Out,
    ) {
        let l = self.state();
        let rc;
        unsafe {
            set_ctx(l, ctx as *mut RunCtx<'_> as *mut c_void);
            if hook {
                ffi::lua_sethook(l, Some(count_hook), ffi::LUA_MASKCOUNT, 100_000);
            }
            rc = ffi::lua_pcall(l, nargs, 1, 1);
            self.calls += 1;
            if self.calls >= GC_CYCLE_PERIOD {
                ffi::lua_gc(l, ffi::LUA_GCSTEP, GC_CYCLE_PERIOD as c_int);
                self.calls = 0;
            }
            if hook {
                ffi::lua_sethook(l, None, 0, 0);
            }
            set_ctx(l, std::ptr::null_mut());
        }
        let script_resp3 = ctx.resp3;
        unsafe {
            if rc == 0 {
                write_reply(l, out, script_resp3, 0);
            } else {
                write_run_error(l, out, name);
            }
            ffi::lua_settop(l, 0);
        }
    }

    /// Compiles and runs a library's code (function_lua.c's luaEngineCreate) with the
    /// load-time globals, collecting what it registers. `timeout`: the run is stopped
    /// after it (FUNCTION LOAD's 500 ms; zero = none). On error, whatever it registered
    /// is released and the error text (without a code) is returned.
    pub fn load_library(
        &mut self,
        code: &[u8],
        timeout: std::time::Duration,
    ) -> Result<Vec<RegisteredFunction>, String> {
        let l = self.state();
        let mut load = LoadCtx {
            start: std::time::Instant::now(),
            timeout,
            functions: Vec::new(),
        };
        let err;
        unsafe {
            ffi::lua_settop(l, 0);
            let rc = ffi::luaL_loadbuffer(
                l,
                code.as_ptr() as *const c_char,
                code.len(),
                cstr!("@user_function"),
            );
            if rc != 0 {
                let msg = String::from_utf8_lossy(to_bytes(l, -1)).into_owned();
                ffi::lua_settop(l, 0);
                return Err(format!("Error compiling function: {msg}"));
            }
            ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, cstr!("augur_env"));
            ffi::lua_setfenv(l, -2);
            set_load_mode(l, true);
            set_load_ctx(l, &mut load as *mut LoadCtx as *mut c_void);
            ffi::lua_sethook(l, Some(load_hook), ffi::LUA_MASKCOUNT, 100_000);
            let rc = ffi::lua_pcall(l, 0, 0, 0);
            ffi::lua_sethook(l, None, 0, 0);
            set_load_ctx(l, std::ptr::null_mut());
            set_load_mode(l, false);
            err = if rc != 0 {
                let msg = if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
                    error_info(l).0
                } else {
                    let mut m = b"ERR ".to_vec();
                    m.extend_from_slice(to_bytes(l, -1));
                    m
                };
                Some(format!(
                    "Error registering functions: {}",
                    String::from_utf8_lossy(&msg)
                ))
            } else {
                None
            };
            ffi::lua_settop(l, 0);
        }
        match err {
            None => Ok(load.functions),
            Some(e) => {
                for f in &load.functions {
                    self.unref(f.lua_ref);
                }
                Err(e)
            }
        }
    }

    /// Releases a registered function (luaEngineFreeFunction).
    pub fn unref(&mut self, lua_ref: c_int) {
        if let Some(o) = &self.opened {
            unsafe { ffi::luaL_unref(o.l, ffi::LUA_REGISTRYINDEX, lua_ref) }
        }
    }
}

/// A function a library registered while loading.
pub struct RegisteredFunction {
    pub name: String,
    pub desc: Option<Vec<u8>>,
    pub flags: u32,
    pub lua_ref: c_int,
}

/// What `redis.register_function` adds to while FUNCTION LOAD runs (function_lua.c's
/// loadCtx).
struct LoadCtx {
    start: std::time::Instant,
    timeout: std::time::Duration,
    functions: Vec<RegisteredFunction>,
}

/// Registry key of the running load's `LoadCtx` (nil outside FUNCTION LOAD).
static LOAD_KEY: u8 = 0;

unsafe fn set_load_ctx(l: *mut ffi::lua_State, p: *mut c_void) {
    ffi::lua_pushlightuserdata(l, &LOAD_KEY as *const u8 as *mut c_void);
    if p.is_null() {
        ffi::lua_pushnil(l);
    } else {
        ffi::lua_pushlightuserdata(l, p);
    }
    ffi::lua_rawset(l, ffi::LUA_REGISTRYINDEX);
}

unsafe fn get_load_ctx(l: *mut ffi::lua_State) -> *mut LoadCtx {
    ffi::lua_pushlightuserdata(l, &LOAD_KEY as *const u8 as *mut c_void);
    ffi::lua_rawget(l, ffi::LUA_REGISTRYINDEX);
    let p = ffi::lua_touserdata(l, -1);
    ffi::lua_pop(l, 1);
    p as *mut LoadCtx
}

/// Switches the globals between the load-time API and the full one (the prelude's
/// load_mode; a no-op in EVAL's interpreter).
unsafe fn set_load_mode(l: *mut ffi::lua_State, on: bool) {
    ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, cstr!("augur_loadmode"));
    if ffi::lua_type(l, -1) != ffi::LUA_TFUNCTION {
        ffi::lua_pop(l, 1);
        return;
    }
    ffi::lua_pushboolean(l, on as c_int);
    if ffi::lua_pcall(l, 1, 0, 0) != 0 {
        ffi::lua_pop(l, 1);
    }
}

/// luaEngineLoadHook: a library's code that runs past the timeout is stopped.
unsafe extern "C-unwind" fn load_hook(l: *mut ffi::lua_State, _ar: *mut ffi::lua_Debug) {
    let load = get_load_ctx(l);
    if load.is_null() {
        return;
    }
    let (start, timeout) = ((*load).start, (*load).timeout);
    if !timeout.is_zero() && start.elapsed() > timeout {
        ffi::lua_sethook(l, Some(load_hook), ffi::LUA_MASKLINE, 0);
        push_error_buff(l, b"FUNCTION LOAD timeout");
        ffi::lua_error(l);
    }
}

/// Whether `name` is a valid function or library name (functionsVerifyName): letters,
/// digits and underscores, at least one.
pub fn verify_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A string argument as luaGetStringSds reads it (strings and numbers).
unsafe fn string_arg(l: *mut ffi::lua_State, idx: c_int) -> Option<Vec<u8>> {
    if ffi::lua_isstring(l, idx) == 0 {
        return None;
    }
    // A copy, so that a number key is not converted in place under lua_next.
    ffi::lua_pushvalue(l, idx);
    let v = to_bytes(l, -1).to_vec();
    ffi::lua_pop(l, 1);
    Some(v)
}

/// Reads the flags table at the top (luaRegisterFunctionReadFlags).
unsafe fn read_flags(l: *mut ffi::lua_State) -> Option<u32> {
    let mut flags = 0;
    let mut j = 1;
    loop {
        ffi::lua_rawgeti(l, -1, j);
        j += 1;
        let t = ffi::lua_type(l, -1);
        if t == ffi::LUA_TNIL {
            ffi::lua_pop(l, 1);
            return Some(flags);
        }
        let f = string_arg(l, -1);
        ffi::lua_pop(l, 1);
        let f = f?;
        flags |= super::flag_by_name(&f)?;
    }
}

/// luaRegisterFunctionReadArgs: the registered function, or the error text. The
/// callback is taken into the registry (luaL_ref) only when everything else is valid
/// enough to return it; on error it is released.
unsafe fn register_args(l: *mut ffi::lua_State) -> Result<RegisteredFunction, &'static str> {
    let argc = ffi::lua_gettop(l);
    if !(1..=2).contains(&argc) {
        return Err("wrong number of arguments to redis.register_function");
    }
    if argc == 2 {
        let Some(name) = string_arg(l, 1) else {
            return Err("first argument to redis.register_function must be a string");
        };
        if ffi::lua_type(l, 2) != ffi::LUA_TFUNCTION {
            return Err("second argument to redis.register_function must be a function");
        }
        ffi::lua_settop(l, 2);
        let lua_ref = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        return Ok(RegisteredFunction {
            name: String::from_utf8_lossy(&name).into_owned(),
            desc: None,
            flags: 0,
            lua_ref,
        });
    }
    if ffi::lua_type(l, 1) != ffi::LUA_TTABLE {
        return Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).");
    }
    let (mut name, mut desc, mut flags, mut lua_ref) = (None, None, 0, None);
    let mut err = None;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, 1) != 0 {
        // Stack: table, key, value.
        let Some(key) = string_arg(l, -2) else {
            err = Some("named argument key given to redis.register_function is not a string");
            ffi::lua_pop(l, 2);
            break;
        };
        let key = key.to_ascii_lowercase();
        let e = match key.as_slice() {
            b"function_name" => match string_arg(l, -1) {
                Some(v) => {
                    name = Some(v);
                    None
                }
                None => {
                    Some("function_name argument given to redis.register_function must be a string")
                }
            },
            b"description" => match string_arg(l, -1) {
                Some(v) => {
                    desc = Some(v);
                    None
                }
                None => {
                    Some("description argument given to redis.register_function must be a string")
                }
            },
            b"callback" => {
                if ffi::lua_type(l, -1) != ffi::LUA_TFUNCTION {
                    Some("callback argument given to redis.register_function must be a function")
                } else {
                    if let Some(r) = lua_ref.take() {
                        ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, r);
                    }
                    lua_ref = Some(ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX));
                    continue; // the value was popped by luaL_ref
                }
            }
            b"flags" => {
                if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
                    Some("flags argument to redis.register_function must be a table representing function flags")
                } else {
                    match read_flags(l) {
                        Some(f) => {
                            flags = f;
                            None
                        }
                        None => Some("unknown flag given"),
                    }
                }
            }
            _ => Some("unknown argument given to redis.register_function"),
        };
        if e.is_some() {
            err = e;
            ffi::lua_pop(l, 2);
            break;
        }
        ffi::lua_pop(l, 1);
    }
    if err.is_none() && name.is_none() {
        err = Some("redis.register_function must get a function name argument");
    }
    if err.is_none() && lua_ref.is_none() {
        err = Some("redis.register_function must get a callback argument");
    }
    match (err, name, lua_ref) {
        (None, Some(name), Some(lua_ref)) => Ok(RegisteredFunction {
            name: String::from_utf8_lossy(&name).into_owned(),
            desc,
            flags,
            lua_ref,
        }),
        (e, _, r) => {
            if let Some(r) = r {
                ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, r);
            }
            Err(e.unwrap_or("redis.register_function must get a callback argument"))
        }
    }
}

/// `redis.register_function` (luaRegisterFunction, functionLibCreateFunction).
unsafe extern "C-unwind" fn redis_register_function(l: *mut ffi::lua_State) -> c_int {
    let load = get_load_ctx(l);
    if load.is_null() {
        return raise(
            l,
            b"redis.register_function can only be called on FUNCTION LOAD command",
        );
    }
    let r = catch_unwind(AssertUnwindSafe(|| register_args(l)));
    let err: &'static str = match r {
        Ok(Ok(f)) => {
            let load = &mut *load;
            let e = if !verify_name(f.name.as_bytes()) {
                // functions.c reuses the library-name text for function names.
                Some("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
            } else if load.functions.iter().any(|g| g.name == f.name) {
                Some("Function already exists in the library")
            } else {
                None
            };
            match e {
                None => {
                    load.functions.push(f);
                    return 0;
                }
                Some(e) => {
                    ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, f.lua_ref);
                    drop(f);
                    e
                }
            }
        }
        Ok(Err(e)) => e,
        Err(_) => "internal error in redis.register_function",
    };
    raise(l, err.as_bytes())
}

unsafe fn set_ctx(l: *mut ffi::lua_State, p: *mut c_void) {
    ffi::lua_pushlightuserdata(l, &CTX_KEY as *const u8 as *mut c_void);
    if p.is_null() {
        ffi::lua_pushnil(l);
    } else {
        ffi::lua_pushlightuserdata(l, p);
    }
    ffi::lua_rawset(l, ffi::LUA_REGISTRYINDEX);
}

unsafe fn get_ctx(l: *mut ffi::lua_State) -> *mut RunCtx<'static> {
    ffi::lua_pushlightuserdata(l, &CTX_KEY as *const u8 as *mut c_void);
    ffi::lua_rawget(l, ffi::LUA_REGISTRYINDEX);
    let p = ffi::lua_touserdata(l, -1);
    ffi::lua_pop(l, 1);
    p as *mut RunCtx<'static>
}

/// The bytes of the string (or number, converted in place) at `idx`; empty otherwise.
/// Valid while the value stays on the stack.
pub(super) unsafe fn to_bytes<'a>(l: *mut ffi::lua_State, idx: c_int) -> &'a [u8] {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, idx, &mut len);
    if p.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(p as *const u8, len)
    }
}

pub(super) unsafe fn push_bytes(l: *mut ffi::lua_State, b: &[u8]) {
    ffi::lua_pushlstring(l, b.as_ptr() as *const c_char, b.len());
}

unsafe fn push_array(l: *mut ffi::lua_State, a: Args<'_>) {
    ffi::lua_createtable(l, a.len() as c_int, 0);
    for (i, v) in a.iter().enumerate() {
        push_bytes(l, v);
        ffi::lua_rawseti(l, -2, i as ffi::lua_Integer + 1);
    }
}

/// Like C's `%s` of a Lua string: stops at the first NUL.
fn c_str(b: &[u8]) -> &[u8] {
    match memchr::memchr(0, b) {
        Some(i) => &b[..i],
        None => b,
    }
}

/// Pushes `{err = "<code> <msg>"}` (luaPushErrorBuff): `buf` is `-CODE msg` or a bare
/// message (code ERR). The text is joined by Lua, so no Rust buffer is alive if it
/// raises.
pub(super) unsafe fn push_error_buff(l: *mut ffi::lua_State, buf: &[u8]) {
    let (code, msg): (&[u8], &[u8]) = match buf.strip_prefix(b"-") {
        Some(rest) => match memchr::memchr(b' ', rest) {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (b"ERR", rest),
        },
        None => (b"ERR", buf),
    };
    let msg = trim_crlf(msg);
    ffi::lua_createtable(l, 0, 2);
    push_bytes(l, code);
    push_bytes(l, b" ");
    push_bytes(l, msg);
    ffi::lua_concat(l, 3);
    ffi::lua_setfield(l, -2, cstr!("err"));
}

/// sdstrim(s, "\r\n").
fn trim_crlf(mut s: &[u8]) -> &[u8] {
    while let [b'\r' | b'\n', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b'\r' | b'\n'] = s {
        s = rest;
    }
    s
}

unsafe fn raise(l: *mut ffi::lua_State, msg: &[u8]) -> c_int {
    push_error_buff(l, msg);
    ffi::lua_error(l)
}

// ---------------------------------------------------------------------------------------
// redis.* functions
// ---------------------------------------------------------------------------------------

unsafe extern "C-unwind" fn redis_call(l: *mut ffi::lua_State) -> c_int {
    generic_call(l, true)
}

unsafe extern "C-unwind" fn redis_pcall(l: *mut ffi::lua_State) -> c_int {
    generic_call(l, false)
}

/// Copies the arguments (strings, or numbers as `%.17g`) into the context
/// (luaArgsToRedisArgv) and pops them. Pushes the error table and returns false if one
/// is of another type.
unsafe fn collect_args(l: *mut ffi::lua_State, ctx: &mut RunCtx<'_>) -> bool {
    let argc = ffi::lua_gettop(l);
    ctx.args.clear();
    ctx.ranges.clear();
    let mut ok = argc > 0;
    for j in 1..=argc {
        let start = ctx.args.len();
        if ffi::lua_type(l, j) == ffi::LUA_TNUMBER {
            let n = ffi::lua_tonumber(l, j);
            ctx.args.extend_from_slice(fmt_g(n, 17).as_bytes());
        } else if ffi::lua_type(l, j) == ffi::LUA_TSTRING {
            ctx.args.extend_from_slice(to_bytes(l, j));
        } else {
            ok = false;
            break;
        }
        ctx.ranges.push((start, ctx.args.len()));
    }
    ffi::lua_settop(l, 0);
    if argc == 0 {
        push_error_buff(
            l,
            b"Please specify at least one argument for this redis lib call",
        );
    } else if !ok {
        push_error_buff(
            l,
            b"Lua redis lib command arguments must be strings or integers",
        );
    }
    ok
}

unsafe fn generic_call(l: *mut ffi::lua_State, raise_error: bool) -> c_int {
    let ctx = get_ctx(l);
    if ctx.is_null() {
        return raise(
            l,
            b"redis.call/pcall can only be called inside a script invocation",
        );
    }
    let ctx = &mut *ctx;
    if !collect_args(l, ctx) {
        return if raise_error { ffi::lua_error(l) } else { 1 };
    }
    let result = {
        let (host, args, ranges, resp3) = (&mut ctx.host, &ctx.args, &ctx.ranges, ctx.resp3);
        catch_unwind(AssertUnwindSafe(|| {
            host.call(Args::from_parts(args, ranges), resp3)
        }))
    };
    let refused = match result {
        Ok(Ok(())) => false,
        Ok(Err(e)) => {
            ctx.err = e;
            true
        }
        Err(_) => {
            ctx.err = "ERR internal error while running the command".into();
            true
        }
    };
    if refused {
        push_error_buff(l, ctx.err.as_bytes());
        ffi::lua_pushboolean(l, 1);
        ffi::lua_setfield(l, -2, cstr!("ignore_error_stats_update"));
        return if raise_error { ffi::lua_error(l) } else { 1 };
    }
    let reply = ctx.host.reply();
    let is_err = reply.first() == Some(&b'-');
    let mut pos = 0;
    parse_reply(l, true, reply, &mut pos, 0);
    if raise_error && is_err {
        ffi::lua_error(l);
    }
    1
}

unsafe extern "C-unwind" fn redis_sha1hex(l: *mut ffi::lua_State) -> c_int {
    if ffi::lua_gettop(l) != 1 {
        return raise(l, b"wrong number of arguments");
    }
    let hex = super::sha1hex(to_bytes(l, 1));
    let mut buf = [0u8; 40];
    buf.copy_from_slice(&hex.as_bytes()[..40]);
    drop(hex);
    push_bytes(l, &buf);
    1
}

unsafe extern "C-unwind" fn redis_error_reply(l: *mut ffi::lua_State) -> c_int {
    if ffi::lua_gettop(l) != 1 || ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
        push_error_buff(l, b"wrong number or type of arguments");
        return 1;
    }
    let s = c_str(to_bytes(l, -1));
    if s.first() == Some(&b'-') {
        push_error_buff(l, s);
    } else {
        // "-" + s, without building it: the code is up to the first space.
        let (code, msg): (&[u8], &[u8]) = match memchr::memchr(b' ', s) {
            Some(i) => (&s[..i], &s[i + 1..]),
            None => (b"ERR", s),
        };
        let msg = trim_crlf(msg);
        ffi::lua_createtable(l, 0, 1);
        push_bytes(l, code);
        push_bytes(l, b" ");
        push_bytes(l, msg);
        ffi::lua_concat(l, 3);
        ffi::lua_setfield(l, -2, cstr!("err"));
    }
    1
}

unsafe extern "C-unwind" fn redis_status_reply(l: *mut ffi::lua_State) -> c_int {
    if ffi::lua_gettop(l) != 1 || ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
        push_error_buff(l, b"wrong number or type of arguments");
        return 1;
    }
    ffi::lua_createtable(l, 0, 1);
    ffi::lua_pushvalue(l, -2);
    ffi::lua_setfield(l, -2, cstr!("ok"));
    1
}

unsafe extern "C-unwind" fn redis_log(l: *mut ffi::lua_State) -> c_int {
    let argc = ffi::lua_gettop(l);
    if argc < 2 {
        return raise(l, b"redis.log() requires two arguments or more.");
    }
    if ffi::lua_isnumber(l, -argc) == 0 {
        return raise(l, b"First argument must be a number (log level).");
    }
    let level = ffi::lua_tonumber(l, -argc) as i32;
    if !(0..=3).contains(&level) {
        return raise(l, b"Invalid debug level.");
    }
    // Convert every argument in place first (this may allocate in Lua), then glue.
    for j in 1..argc {
        ffi::lua_tolstring(l, -argc + j, std::ptr::null_mut());
    }
    {
        let mut msg: Vec<u8> = Vec::new();
        for j in 1..argc {
            if ffi::lua_isstring(l, -argc + j) != 0 {
                if j != 1 {
                    msg.push(b' ');
                }
                msg.extend_from_slice(to_bytes(l, -argc + j));
            }
        }
        let text = String::from_utf8_lossy(&msg);
        match level {
            0 | 1 => tracing::debug!(target: "augur::script", "{text}"),
            2 => tracing::info!(target: "augur::script", "{text}"),
            _ => tracing::warn!(target: "augur::script", "{text}"),
        }
    }
    0
}

unsafe extern "C-unwind" fn redis_setresp(l: *mut ffi::lua_State) -> c_int {
    let ctx = get_ctx(l);
    if ctx.is_null() {
        return raise(
            l,
            b"redis.setresp can only be called inside a script invocation",
        );
    }
    let argc = ffi::lua_gettop(l);
    if argc != 1 {
        return raise(l, b"redis.setresp() requires one argument.");
    }
    let resp = ffi::lua_tonumber(l, -argc) as i32;
    if resp != 2 && resp != 3 {
        return raise(l, b"RESP version must be 2 or 3.");
    }
    (*ctx).resp3 = resp == 3;
    0
}

unsafe extern "C-unwind" fn redis_set_repl(l: *mut ffi::lua_State) -> c_int {
    if get_ctx(l).is_null() {
        return raise(
            l,
            b"redis.set_repl can only be called inside a script invocation",
        );
    }
    if ffi::lua_gettop(l) != 1 {
        return raise(l, b"redis.set_repl() requires two arguments.");
    }
    let flags = ffi::lua_tonumber(l, -1) as i32;
    if flags & !3 != 0 {
        return raise(
            l,
            b"Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
        );
    }
    // Augur does not replicate: where the effects would go changes nothing.
    0
}

unsafe extern "C-unwind" fn redis_acl_check_cmd(l: *mut ffi::lua_State) -> c_int {
    let ctx = get_ctx(l);
    if ctx.is_null() {
        return raise(
            l,
            b"redis.acl_check_cmd can only be called inside a script invocation",
        );
    }
    let ctx = &mut *ctx;
    if !collect_args(l, ctx) {
        ffi::lua_error(l);
    }
    let allowed = {
        let (host, args, ranges) = (&ctx.host, &ctx.args, &ctx.ranges);
        catch_unwind(AssertUnwindSafe(|| {
            host.acl_check(Args::from_parts(args, ranges))
        }))
        .unwrap_or(None)
    };
    match allowed {
        None => raise(l, b"Invalid command passed to redis.acl_check_cmd()"),
        Some(b) => {
            ffi::lua_pushboolean(l, b as c_int);
            1
        }
    }
}

// ---------------------------------------------------------------------------------------
// Sandbox guards (C functions, so that a tail call to them keeps the script's frame for
// error positions, as Redis's C builtins do). Upvalue 1: the table of protected proxies.
// ---------------------------------------------------------------------------------------

const READONLY: &[u8] = b"Attempt to modify a readonly table";

/// `make_guards(protected, next)` -> rawset, setmetatable, pairs.
unsafe extern "C-unwind" fn make_guards(l: *mut ffi::lua_State) -> c_int {
    ffi::lua_pushvalue(l, 1);
    ffi::lua_pushcclosure(l, guard_rawset, 1);
    ffi::lua_pushvalue(l, 1);
    ffi::lua_pushcclosure(l, guard_setmetatable, 1);
    ffi::lua_pushvalue(l, 2);
    ffi::lua_pushcclosure(l, guard_pairs, 1);
    3
}

unsafe fn is_protected(l: *mut ffi::lua_State, idx: c_int) -> bool {
    ffi::lua_pushvalue(l, idx);
    ffi::lua_rawget(l, ffi::lua_upvalueindex(1));
    let p = ffi::lua_type(l, -1) != ffi::LUA_TNIL;
    ffi::lua_pop(l, 1);
    p
}

unsafe fn raise_readonly(l: *mut ffi::lua_State) -> c_int {
    push_bytes(l, READONLY);
    ffi::lua_error(l)
}

unsafe extern "C-unwind" fn guard_rawset(l: *mut ffi::lua_State) -> c_int {
    if is_protected(l, 1) {
        return raise_readonly(l);
    }
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    ffi::luaL_checkany(l, 2);
    ffi::luaL_checkany(l, 3);
    ffi::lua_settop(l, 3);
    ffi::lua_rawset(l, 1);
    1
}

/// luaB_setmetatable, refusing protected tables.
unsafe extern "C-unwind" fn guard_setmetatable(l: *mut ffi::lua_State) -> c_int {
    if is_protected(l, 1) {
        return raise_readonly(l);
    }
    let t = ffi::lua_type(l, 2);
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    if t != ffi::LUA_TNIL && t != ffi::LUA_TTABLE {
        return ffi::luaL_argerror(l, 2, cstr!("nil or table expected"));
    }
    if ffi::lua_getmetatable(l, 1) != 0 {
        ffi::lua_pushstring(l, cstr!("__metatable"));
        ffi::lua_rawget(l, -2);
        if ffi::lua_type(l, -1) != ffi::LUA_TNIL {
            return ffi::luaL_error(l, cstr!("cannot change a protected metatable"));
        }
    }
    ffi::lua_settop(l, 2);
    ffi::lua_setmetatable(l, 1);
    1
}

/// pairs(t): the wrapped `next` (upvalue 1), which iterates a proxy's table.
unsafe extern "C-unwind" fn guard_pairs(l: *mut ffi::lua_State) -> c_int {
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
    ffi::lua_pushvalue(l, 1);
    ffi::lua_pushnil(l);
    3
}

// Redis's math.random: lrand48 (rand.c), the same sequence on every platform.
const RAND48_DEFAULT: u64 = 0x1234_ABCD_330E;

fn lrand48(x: &mut u64) -> i32 {
    *x = (x.wrapping_mul(0x5_DEEC_E66D).wrapping_add(0xB)) & ((1u64 << 48) - 1);
    (*x >> 17) as i32
}

unsafe extern "C-unwind" fn math_random(l: *mut ffi::lua_State) -> c_int {
    if get_ctx(l).is_null() {
        return ffi::luaL_error(
            l,
            cstr!("math.random can only be called inside a script invocation"),
        );
    }
    let state = ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *mut u64;
    let r = (lrand48(&mut *state) % i32::MAX) as f64 / i32::MAX as f64;
    match ffi::lua_gettop(l) {
        0 => ffi::lua_pushnumber(l, r),
        1 => {
            let u = ffi::luaL_checkinteger(l, 1) as i32;
            if u < 1 {
                return ffi::luaL_argerror(l, 1, cstr!("interval is empty"));
            }
            ffi::lua_pushnumber(l, (r * u as f64).floor() + 1.0);
        }
        2 => {
            let lo = ffi::luaL_checkinteger(l, 1) as i32;
            let up = ffi::luaL_checkinteger(l, 2) as i32;
            if lo > up {
                return ffi::luaL_argerror(l, 2, cstr!("interval is empty"));
            }
            let span = up as f64 - lo as f64 + 1.0;
            ffi::lua_pushnumber(l, (r * span).floor() + lo as f64);
        }
        _ => return ffi::luaL_error(l, cstr!("wrong number of arguments")),
    }
    1
}

unsafe extern "C-unwind" fn math_randomseed(l: *mut ffi::lua_State) -> c_int {
    if get_ctx(l).is_null() {
        return ffi::luaL_error(
            l,
            cstr!("math.randomseed can only be called inside a script invocation"),
        );
    }
    let state = ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *mut u64;
    let seed = ffi::luaL_checkinteger(l, 1) as i32 as u32 as u64;
    *state = (seed << 16) | 0x330E;
    0
}

/// The count hook (luaMaskCountHook): lets the host notice a slow script, and kills it
/// when asked. After a kill it fires on every line, so `pcall` cannot swallow the kill.
unsafe extern "C-unwind" fn count_hook(l: *mut ffi::lua_State, _ar: *mut ffi::lua_Debug) {
    let ctx = get_ctx(l);
    if ctx.is_null() {
        return;
    }
    let kill = catch_unwind(AssertUnwindSafe(|| (*ctx).host.interrupt())).unwrap_or(false);
    if kill {
        tracing::warn!("Lua script killed by user with SCRIPT KILL.");
        ffi::lua_sethook(l, Some(count_hook), ffi::LUA_MASKLINE, 0);
        push_error_buff(l, b"Script killed by user with SCRIPT KILL...");
        ffi::lua_error(l);
    }
}

// ---------------------------------------------------------------------------------------
// RESP -> Lua (redisProtocolToLuaType)
// ---------------------------------------------------------------------------------------

fn read_line<'a>(buf: &'a [u8], pos: &mut usize) -> Option<&'a [u8]> {
    let rest = buf.get(*pos..)?;
    let i = memchr::memchr(b'\r', rest)?;
    *pos += i + 2;
    Some(&rest[..i])
}

fn parse_len(line: &[u8]) -> Option<i64> {
    std::str::from_utf8(line).ok()?.parse().ok()
}

fn read_bulk<'a>(buf: &'a [u8], pos: &mut usize, len: usize) -> Option<&'a [u8]> {
    let s = buf.get(*pos..pos.checked_add(len)?)?;
    *pos += len + 2;
    Some(s)
}

/// Converts the reply at `pos` and pushes it (when `push`; attributes are parsed and
/// dropped). A malformed reply pushes nil and stops.
unsafe fn parse_reply(l: *mut ffi::lua_State, push: bool, buf: &[u8], pos: &mut usize, depth: u32) {
    macro_rules! bad {
        () => {{
            *pos = buf.len();
            if push {
                ffi::lua_pushnil(l);
            }
            return;
        }};
    }
    if depth > 64 || (push && ffi::lua_checkstack(l, 6) == 0) {
        bad!();
    }
    let Some(&t) = buf.get(*pos) else { bad!() };
    *pos += 1;
    let Some(line) = read_line(buf, pos) else {
        bad!()
    };
    match t {
        b':' => {
            let Some(n) = parse_len(line) else { bad!() };
            if push {
                ffi::lua_pushnumber(l, n as f64);
            }
        }
        b'+' => {
            if push {
                ffi::lua_createtable(l, 0, 1);
                push_bytes(l, line);
                ffi::lua_setfield(l, -2, cstr!("ok"));
            }
        }
        b'-' => {
            if push {
                // "-" + the text, as luaPushErrorBuff receives it.
                let (code, msg): (&[u8], &[u8]) = match memchr::memchr(b' ', line) {
                    Some(i) => (&line[..i], &line[i + 1..]),
                    None => (b"ERR", line),
                };
                ffi::lua_createtable(l, 0, 2);
                push_bytes(l, code);
                push_bytes(l, b" ");
                push_bytes(l, trim_crlf(msg));
                ffi::lua_concat(l, 3);
                ffi::lua_setfield(l, -2, cstr!("err"));
                ffi::lua_pushboolean(l, 1);
                ffi::lua_setfield(l, -2, cstr!("ignore_error_stats_update"));
            }
        }
        b'$' | b'=' => {
            let Some(n) = parse_len(line) else { bad!() };
            if n < 0 {
                if push {
                    ffi::lua_pushboolean(l, 0);
                }
                return;
            }
            let Some(s) = read_bulk(buf, pos, n as usize) else {
                bad!()
            };
            if !push {
                return;
            }
            if t == b'$' {
                push_bytes(l, s);
            } else {
                let (format, text) = if s.len() >= 4 {
                    (&s[..3], &s[4..])
                } else {
                    (s, &[][..])
                };
                ffi::lua_createtable(l, 0, 1);
                ffi::lua_createtable(l, 0, 2);
                push_bytes(l, text);
                ffi::lua_setfield(l, -2, cstr!("string"));
                push_bytes(l, format);
                ffi::lua_setfield(l, -2, cstr!("format"));
                ffi::lua_setfield(l, -2, cstr!("verbatim_string"));
            }
        }
        b'*' | b'>' => {
            let Some(n) = parse_len(line) else { bad!() };
            if n < 0 {
                if push {
                    ffi::lua_pushboolean(l, 0);
                }
                return;
            }
            if push {
                ffi::lua_createtable(l, n.min(1024) as c_int, 0);
            }
            for j in 0..n {
                parse_reply(l, push, buf, pos, depth + 1);
                if push {
                    ffi::lua_rawseti(l, -2, j as ffi::lua_Integer + 1);
                }
            }
        }
        b'%' | b'~' => {
            let Some(n) = parse_len(line) else { bad!() };
            let is_map = t == b'%';
            if push {
                ffi::lua_createtable(l, 0, 1);
                ffi::lua_createtable(l, 0, n.clamp(0, 1024) as c_int);
            }
            for _ in 0..n.max(0) {
                parse_reply(l, push, buf, pos, depth + 1);
                if is_map {
                    parse_reply(l, push, buf, pos, depth + 1);
                } else if push {
                    ffi::lua_pushboolean(l, 1);
                }
                if push {
                    ffi::lua_settable(l, -3);
                }
            }
            if push {
                ffi::lua_setfield(l, -2, if is_map { cstr!("map") } else { cstr!("set") });
            }
        }
        b'_' => {
            if push {
                ffi::lua_pushnil(l);
            }
        }
        b'#' => {
            if push {
                ffi::lua_pushboolean(l, (line == b"t") as c_int);
            }
        }
        b',' => {
            let d = match line {
                b"inf" => f64::INFINITY,
                b"-inf" => f64::NEG_INFINITY,
                b"nan" | b"-nan" => f64::NAN,
                _ => match std::str::from_utf8(line).ok().and_then(|s| s.parse().ok()) {
                    Some(d) => d,
                    None => bad!(),
                },
            };
            if push {
                ffi::lua_createtable(l, 0, 1);
                ffi::lua_pushnumber(l, d);
                ffi::lua_setfield(l, -2, cstr!("double"));
            }
        }
        b'(' => {
            if push {
                ffi::lua_createtable(l, 0, 1);
                push_bytes(l, line);
                ffi::lua_setfield(l, -2, cstr!("big_number"));
            }
        }
        b'|' => {
            let Some(n) = parse_len(line) else { bad!() };
            for _ in 0..n.max(0) {
                parse_reply(l, false, buf, pos, depth + 1);
                parse_reply(l, false, buf, pos, depth + 1);
            }
            parse_reply(l, push, buf, pos, depth + 1);
        }
        _ => bad!(),
    }
}

// ---------------------------------------------------------------------------------------
// Lua -> RESP (luaReplyToRedisReply). Raw access only: this runs outside a protected call.
// ---------------------------------------------------------------------------------------

/// Pushes `t[name]` (raw) for the table at the top; returns the value's type.
unsafe fn raw_field(l: *mut ffi::lua_State, name: *const c_char) -> c_int {
    ffi::lua_pushstring(l, name);
    ffi::lua_rawget(l, -2);
    ffi::lua_type(l, -1)
}

/// `(long long)` of a Lua number as x86 computes it: out of range and NaN give i64::MIN.
fn lua_number_to_i64(n: f64) -> i64 {
    if n.is_nan() || !(i64::MIN as f64..i64::MAX as f64).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

fn map_crlf(s: &[u8]) -> Vec<u8> {
    s.iter()
        .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b })
        .collect()
}

fn write_double(out: &mut Out, d: f64) {
    if d.is_infinite() {
        let s: &[u8] = if d > 0.0 { b"inf" } else { b"-inf" };
        if out.resp3 {
            out.buf.extend_from_slice(b",");
            out.buf.extend_from_slice(s);
            out.buf.extend_from_slice(b"\r\n");
        } else {
            out.bulk(s);
        }
        return;
    }
    let s = fmt_g(d, 17);
    if out.resp3 {
        out.buf.extend_from_slice(b",");
        out.buf.extend_from_slice(s.as_bytes());
        out.buf.extend_from_slice(b"\r\n");
    } else {
        out.bulk(s.as_bytes());
    }
}

/// Writes the value at the top of the stack to `out` and pops it.
unsafe fn write_reply(l: *mut ffi::lua_State, out: &mut Out, script_resp3: bool, depth: u32) {
    if depth >= MAX_REPLY_DEPTH || ffi::lua_checkstack(l, 4) == 0 {
        out.error("ERR reached lua stack limit");
        ffi::lua_pop(l, 1);
        return;
    }
    match ffi::lua_type(l, -1) {
        ffi::LUA_TSTRING => out.bulk(to_bytes(l, -1)),
        ffi::LUA_TBOOLEAN => {
            let b = ffi::lua_toboolean(l, -1) != 0;
            if !script_resp3 {
                if b {
                    out.int(1)
                } else {
                    out.null()
                }
            } else if out.resp3 {
                out.buf
                    .extend_from_slice(if b { b"#t\r\n" } else { b"#f\r\n" });
            } else {
                out.int(b as i64)
            }
        }
        ffi::LUA_TNUMBER => out.int(lua_number_to_i64(ffi::lua_tonumber(l, -1))),
        ffi::LUA_TTABLE => {
            write_table(l, out, script_resp3, depth);
            return; // write_table pops
        }
        _ => out.null(),
    }
    ffi::lua_pop(l, 1);
}

unsafe fn write_table(l: *mut ffi::lua_State, out: &mut Out, script_resp3: bool, depth: u32) {
    // Error reply.
    if raw_field(l, cstr!("err")) == ffi::LUA_TSTRING {
        ffi::lua_pop(l, 1);
        let msg = error_info(l).0;
        write_error(l, out, &String::from_utf8_lossy(&msg));
        ffi::lua_pop(l, 1);
        return;
    }
    ffi::lua_pop(l, 1);
    // Status reply.
    if raw_field(l, cstr!("ok")) == ffi::LUA_TSTRING {
        let s = map_crlf(c_str(to_bytes(l, -1)));
        out.buf.extend_from_slice(b"+");
        out.buf.extend_from_slice(&s);
        out.buf.extend_from_slice(b"\r\n");
        ffi::lua_pop(l, 2);
        return;
    }
    ffi::lua_pop(l, 1);
    // Double.
    if raw_field(l, cstr!("double")) == ffi::LUA_TNUMBER {
        write_double(out, ffi::lua_tonumber(l, -1));
        ffi::lua_pop(l, 2);
        return;
    }
    ffi::lua_pop(l, 1);
    // Big number.
    if raw_field(l, cstr!("big_number")) == ffi::LUA_TSTRING {
        let s = map_crlf(to_bytes(l, -1));
        if out.resp3 {
            out.buf.extend_from_slice(b"(");
            out.buf.extend_from_slice(&s);
            out.buf.extend_from_slice(b"\r\n");
        } else {
            out.bulk(&s);
        }
        ffi::lua_pop(l, 2);
        return;
    }
    ffi::lua_pop(l, 1);
    // Verbatim string.
    if raw_field(l, cstr!("verbatim_string")) == ffi::LUA_TTABLE {
        if raw_field(l, cstr!("format")) == ffi::LUA_TSTRING {
            ffi::lua_pushstring(l, cstr!("string"));
            ffi::lua_rawget(l, -3);
            if ffi::lua_type(l, -1) == ffi::LUA_TSTRING {
                let text = to_bytes(l, -1);
                let mut fmt = [b' '; 3];
                for (d, s) in fmt.iter_mut().zip(to_bytes(l, -2)) {
                    *d = *s;
                }
                if out.resp3 {
                    out.buf
                        .extend_from_slice(format!("={}\r\n", text.len() + 4).as_bytes());
                    out.buf.extend_from_slice(&fmt);
                    out.buf.extend_from_slice(b":");
                    out.buf.extend_from_slice(text);
                    out.buf.extend_from_slice(b"\r\n");
                } else {
                    out.bulk(text);
                }
                ffi::lua_pop(l, 4);
                return;
            }
            ffi::lua_pop(l, 1);
        }
        ffi::lua_pop(l, 1);
    }
    ffi::lua_pop(l, 1);
    // Map.
    if raw_field(l, cstr!("map")) == ffi::LUA_TTABLE {
        let mut n = 0;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            ffi::lua_pop(l, 1);
            n += 1;
        }
        out.map(n);
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            // Stack: map, key, value.
            ffi::lua_pushvalue(l, -2);
            write_reply(l, out, script_resp3, depth + 1); // key (a copy)
            write_reply(l, out, script_resp3, depth + 1); // value
        }
        ffi::lua_pop(l, 2);
        return;
    }
    ffi::lua_pop(l, 1);
    // Set.
    if raw_field(l, cstr!("set")) == ffi::LUA_TTABLE {
        let mut n = 0;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            ffi::lua_pop(l, 1);
            n += 1;
        }
        out.set(n);
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            ffi::lua_pop(l, 1);
            ffi::lua_pushvalue(l, -1);
            write_reply(l, out, script_resp3, depth + 1);
        }
        ffi::lua_pop(l, 2);
        return;
    }
    ffi::lua_pop(l, 1);
    // Array: up to the first nil.
    let mut n: usize = 0;
    loop {
        ffi::lua_rawgeti(l, -1, n as ffi::lua_Integer + 1);
        let nil = ffi::lua_type(l, -1) == ffi::LUA_TNIL;
        ffi::lua_pop(l, 1);
        if nil {
            break;
        }
        n += 1;
    }
    out.array(n);
    for j in 1..=n {
        ffi::lua_rawgeti(l, -1, j as ffi::lua_Integer);
        write_reply(l, out, script_resp3, depth + 1);
    }
    ffi::lua_pop(l, 1);
}

/// luaExtractErrorInformation for the error table at the top: (message, source, line).
unsafe fn error_info(l: *mut ffi::lua_State) -> (Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>) {
    let field = |name: *const c_char| -> Option<Vec<u8>> {
        let t = raw_field(l, name);
        let v = if t == ffi::LUA_TSTRING {
            Some(c_str(to_bytes(l, -1)).to_vec())
        } else if t == ffi::LUA_TNUMBER {
            Some(fmt_g(ffi::lua_tonumber(l, -1), 14).into_bytes())
        } else {
            None
        };
        ffi::lua_pop(l, 1);
        v
    };
    let msg = field(cstr!("err")).unwrap_or_else(|| b"ERR unknown error".to_vec());
    let source = field(cstr!("source"));
    let line = field(cstr!("line"));
    (msg, source, line)
}

/// The reply to a script that raised (luaCallFunction's error path).
unsafe fn write_run_error(l: *mut ffi::lua_State, out: &mut Out, sha: &str) {
    if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
        let msg = if ffi::lua_type(l, -1) == ffi::LUA_TSTRING
            || ffi::lua_type(l, -1) == ffi::LUA_TNUMBER
        {
            String::from_utf8_lossy(c_str(to_bytes(l, -1))).into_owned()
        } else {
            "execution failure".to_string()
        };
        let msg: String = msg.chars().take(100).collect();
        out.error(&format!(
            "ERR Error running script {sha}, {}",
            msg.trim_end()
        ));
        return;
    }
    let (msg, source, line) = error_info(l);
    let mut text = String::from_utf8_lossy(&msg).into_owned();
    if let (Some(source), Some(line)) = (source, line) {
        text.push_str(&format!(
            " script: {sha}, on {}:{}.",
            String::from_utf8_lossy(&source),
            String::from_utf8_lossy(&line)
        ));
    }
    write_error(l, out, &text);
}

/// Replies the error table at the top of the stack: an error a command replied inside
/// the script (`ignore_error_stats_update`) was counted in the error statistics then, so
/// it is not counted again (luaCallFunction's ERR_REPLY_FLAG_NO_STATS_UPDATE).
unsafe fn write_error(l: *mut ffi::lua_State, out: &mut Out, text: &str) {
    let counted = raw_field(l, cstr!("ignore_error_stats_update")) == ffi::LUA_TBOOLEAN
        && ffi::lua_toboolean(l, -1) != 0;
    ffi::lua_pop(l, 1);
    if counted {
        out.error_counted_before(text);
    } else {
        out.error(text);
    }
}
