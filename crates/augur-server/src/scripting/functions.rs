//! Function libraries (FUNCTION LOAD / FCALL): a port of Redis 7.0's functions.c (the
//! library contexts, load / replace / delete / flush, DUMP and RESTORE payloads) over
//! the functions interpreter of `vm.rs` (function_lua.c).
//!
//! **Per tenant.** Redis has one set of libraries per server. In Augur, libraries are
//! data of the tenant (ACL user) that loaded them, as keys are: each tenant has its own
//! library context, FCALL finds only the caller's tenant's functions, and FUNCTION
//! LIST / DELETE / FLUSH / DUMP / RESTORE / STATS see and change only that tenant's
//! libraries. Two tenants may load libraries and functions of the same names. All
//! tenants' libraries are compiled into one interpreter (as Redis has one for all
//! libraries): a library reaches only what it captured itself, since globals are
//! read-only and the registered callbacks live in the registry, out of reach of Lua
//! code.
//!
//! **Names.** Function names are case-insensitive (functions.c's functionDictType),
//! library names are case-sensitive, as in Redis 7.0.
//!
//! **DUMP format.** Redis's: per library RDB_OPCODE_FUNCTION2 (245) and the library
//! code as an RDB string, then the RDB version (10, two bytes little-endian) and the
//! CRC-64 of everything before (eight bytes little-endian). Augur writes the code
//! uncompressed (Redis LZF-compresses strings over 20 bytes, which RDB readers accept
//! either way), so Augur's payloads restore in Redis 7.0 and Redis's in Augur, but the
//! bytes can differ from Redis's DUMP of the same libraries.

use super::vm::{LuaVm, RegisteredFunction};
use augur_store::TenantId;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// functions.c's LOAD_TIMEOUT_MS.
pub const LOAD_TIMEOUT: Duration = Duration::from_millis(500);
/// rdb.h's RDB_OPCODE_FUNCTION (7.0-rc, with engine and name metadata) and
/// RDB_OPCODE_FUNCTION2 (the code only).
const RDB_OPCODE_FUNCTION: u8 = 246;
const RDB_OPCODE_FUNCTION2: u8 = 245;

/// A registered function (functionInfo).
pub struct FunctionInfo {
    pub name: String,
    pub desc: Option<Vec<u8>>,
    pub flags: u32,
    pub lua_ref: i32,
}

/// A library (functionLibInfo): its full code, as loaded, and its functions by
/// lower-cased name.
pub struct Library {
    pub name: String,
    pub code: Vec<u8>,
    pub functions: BTreeMap<String, FunctionInfo>,
}

/// One tenant's libraries (functionsLibCtx).
#[derive(Default)]
pub struct LibCtx {
    pub libraries: BTreeMap<String, Library>,
    /// Lower-cased function name -> its library's name.
    pub functions: HashMap<String, String>,
}

impl LibCtx {
    fn link(&mut self, lib: Library) {
        for k in lib.functions.keys() {
            self.functions.insert(k.clone(), lib.name.clone());
        }
        self.libraries.insert(lib.name.clone(), lib);
    }

    fn unlink(&mut self, name: &str) -> Option<Library> {
        let lib = self.libraries.remove(name)?;
        for k in lib.functions.keys() {
            self.functions.remove(k);
        }
        Some(lib)
    }

    pub fn function_count(&self) -> usize {
        self.functions.len()
    }
}

/// RESTORE's policy for libraries that exist already.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RestorePolicy {
    Append,
    Replace,
    Flush,
}

/// The functions interpreter and every tenant's libraries.
pub struct FunctionsEngine {
    pub vm: LuaVm,
    pub tenants: HashMap<TenantId, LibCtx>,
}

impl Default for FunctionsEngine {
    fn default() -> Self {
        FunctionsEngine {
            vm: LuaVm::new_functions(),
            tenants: HashMap::new(),
        }
    }
}

/// The parsed shebang of a library (functionExtractLibMetaData): engine, name, and the
/// offset where the code after the shebang line starts (at its newline, so that line
/// numbers stay right).
fn extract_metadata(code: &[u8]) -> Result<(Vec<u8>, Vec<u8>, usize), String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    let Some(end) = memchr::memchr(b'\n', code) else {
        return Err("Invalid library metadata".into());
    };
    let mut data = Vec::new();
    let mut ranges = Vec::new();
    if crate::resp::split_args(&code[..end], &mut data, &mut ranges).is_err() || ranges.is_empty() {
        return Err("Invalid library metadata".into());
    }
    let part = |i: usize| -> &[u8] {
        let (s, e) = ranges[i];
        &data[s..e]
    };
    let engine = part(0).get(2..).unwrap_or_default().to_vec();
    let mut name: Option<Vec<u8>> = None;
    for i in 1..ranges.len() {
        let p = part(i);
        if p.len() >= 5 && p[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(p[5..].to_vec());
            continue;
        }
        return Err(format!(
            "Invalid metadata value given: {}",
            String::from_utf8_lossy(p)
        ));
    }
    let Some(name) = name else {
        return Err("Library name was not given".into());
    };
    Ok((engine, name, end))
}

fn into_library(name: String, code: &[u8], fns: Vec<RegisteredFunction>) -> Library {
    let functions = fns
        .into_iter()
        .map(|f| {
            (
                f.name.to_ascii_lowercase(),
                FunctionInfo {
                    name: f.name,
                    desc: f.desc,
                    flags: f.flags,
                    lua_ref: f.lua_ref,
                },
            )
        })
        .collect();
    Library {
        name,
        code: code.to_vec(),
        functions,
    }
}

impl FunctionsEngine {
    pub fn ctx(&self, tenant: TenantId) -> Option<&LibCtx> {
        self.tenants.get(&tenant)
    }

    /// The function `name` (any case) of the tenant.
    pub fn find(&self, tenant: TenantId, name: &[u8]) -> Option<&FunctionInfo> {
        let ctx = self.tenants.get(&tenant)?;
        let key = String::from_utf8_lossy(name).to_ascii_lowercase();
        let lib = ctx.functions.get(&key)?;
        ctx.libraries.get(lib)?.functions.get(&key)
    }

    fn free_library(&mut self, lib: Library) {
        for f in lib.functions.values() {
            self.vm.unref(f.lua_ref);
        }
    }

    /// Compiles a library into a fresh one without linking it anywhere: its name and
    /// library, or the error text (functionsCreateWithLibraryCtx up to the engine's
    /// create).
    fn compile(&mut self, code: &[u8], timeout: Duration) -> Result<Library, String> {
        let (engine, name, body_at) = extract_metadata(code)?;
        if !super::verify_name(&name) {
            return Err("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
        }
        if !engine.eq_ignore_ascii_case(b"lua") {
            return Err(format!(
                "Engine '{}' not found",
                String::from_utf8_lossy(&engine)
            ));
        }
        let name = String::from_utf8_lossy(&name).into_owned();
        let fns = self.vm.load_library(&code[body_at..], timeout)?;
        Ok(into_library(name, code, fns))
    }

    /// FUNCTION LOAD (functionsCreateWithLibraryCtx): the library's name, or the error
    /// text (the reply adds the ERR code).
    pub fn create(
        &mut self,
        tenant: TenantId,
        code: &[u8],
        replace: bool,
        timeout: Duration,
    ) -> Result<String, String> {
        let mut ctx = self.tenants.remove(&tenant).unwrap_or_default();
        let r = self.create_in(&mut ctx, code, replace, timeout);
        if !ctx.libraries.is_empty() {
            self.tenants.insert(tenant, ctx);
        }
        r
    }

    fn create_in(
        &mut self,
        ctx: &mut LibCtx,
        code: &[u8],
        replace: bool,
        timeout: Duration,
    ) -> Result<String, String> {
        // The checks before compiling, so that a refused load runs no code.
        let name = self.compile_checks_only(code)?;
        if !replace && ctx.libraries.contains_key(&name) {
            return Err(format!("Library '{name}' already exists"));
        }
        let new = self.compile(code, timeout)?;
        if new.functions.is_empty() {
            self.free_library(new);
            return Err("No functions registered".into());
        }
        let old = ctx.unlink(&new.name);
        if let Some(f) = new
            .functions
            .iter()
            .find(|(k, _)| ctx.functions.contains_key(*k))
        {
            let e = format!("Function {} already exists", f.1.name);
            self.free_library(new);
            if let Some(old) = old {
                ctx.link(old);
            }
            return Err(e);
        }
        let name = new.name.clone();
        ctx.link(new);
        if let Some(old) = old {
            self.free_library(old);
        }
        Ok(name)
    }

    /// The name and engine checks of `compile`, without running anything: the name.
    fn compile_checks_only(&self, code: &[u8]) -> Result<String, String> {
        let (engine, name, _) = extract_metadata(code)?;
        if !super::verify_name(&name) {
            return Err("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
        }
        if !engine.eq_ignore_ascii_case(b"lua") {
            return Err(format!(
                "Engine '{}' not found",
                String::from_utf8_lossy(&engine)
            ));
        }
        Ok(String::from_utf8_lossy(&name).into_owned())
    }

    /// FUNCTION DELETE: whether the library existed.
    pub fn delete(&mut self, tenant: TenantId, name: &[u8]) -> bool {
        let Some(ctx) = self.tenants.get_mut(&tenant) else {
            return false;
        };
        let Some(lib) = ctx.unlink(&String::from_utf8_lossy(name)) else {
            return false;
        };
        if ctx.libraries.is_empty() {
            self.tenants.remove(&tenant);
        }
        self.free_library(lib);
        true
    }

    /// FUNCTION FLUSH: every library of the tenant.
    pub fn flush(&mut self, tenant: TenantId) {
        if let Some(ctx) = self.tenants.remove(&tenant) {
            for (_, lib) in ctx.libraries {
                self.free_library(lib);
            }
        }
    }

    /// FUNCTION DUMP (functionDumpCommand, rdbSaveFunctions).
    pub fn dump(&self, tenant: TenantId) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(ctx) = self.tenants.get(&tenant) {
            for lib in ctx.libraries.values() {
                out.push(RDB_OPCODE_FUNCTION2);
                crate::commands::dump::rdb_put_raw_string(&mut out, &lib.code);
            }
        }
        crate::commands::dump::rdb_seal_payload(&mut out);
        out
    }

    /// FUNCTION RESTORE (functionRestoreCommand): Ok, or the error text.
    pub fn restore(
        &mut self,
        tenant: TenantId,
        payload: &[u8],
        policy: RestorePolicy,
    ) -> Result<(), String> {
        let Some(body) = crate::commands::dump::rdb_verify_payload(payload) else {
            return Err("DUMP payload version or checksum are wrong".into());
        };
        // Load everything into a fresh context first (rdbFunctionLoad).
        let mut fresh = LibCtx::default();
        let mut pos = 0;
        let mut err = None;
        while pos < body.len() {
            let t = body[pos];
            pos += 1;
            if t != RDB_OPCODE_FUNCTION2 && t != RDB_OPCODE_FUNCTION {
                err = Some("given type is not a function".to_string());
                break;
            }
            if t == RDB_OPCODE_FUNCTION {
                err = Some("Pre-GA function format not supported".to_string());
                break;
            }
            let Some(code) = crate::commands::dump::rdb_read_string(body, &mut pos) else {
                err = Some("Failed loading library payload".to_string());
                break;
            };
            if let Err(e) = self.create_in(&mut fresh, &code, false, Duration::ZERO) {
                err = Some(e);
                break;
            }
        }
        if let Some(e) = err {
            self.free_ctx(fresh);
            return Err(e);
        }
        let mut ctx = self.tenants.remove(&tenant).unwrap_or_default();
        let r = if policy == RestorePolicy::Flush {
            std::mem::swap(&mut ctx, &mut fresh);
            self.free_ctx(fresh);
            Ok(())
        } else {
            self.join(&mut ctx, fresh, policy == RestorePolicy::Replace)
        };
        if !ctx.libraries.is_empty() {
            self.tenants.insert(tenant, ctx);
        }
        r
    }

    fn free_ctx(&mut self, ctx: LibCtx) {
        for (_, lib) in ctx.libraries {
            self.free_library(lib);
        }
    }

    /// libraryJoin: moves `src`'s libraries into `dst`; all or nothing.
    fn join(&mut self, dst: &mut LibCtx, src: LibCtx, replace: bool) -> Result<(), String> {
        let mut old_libs = Vec::new();
        let mut err = None;
        for name in src.libraries.keys() {
            if dst.libraries.contains_key(name) {
                if !replace {
                    err = Some(format!("Library {name} already exists"));
                    break;
                }
                old_libs.extend(dst.unlink(name));
            }
        }
        if err.is_none() {
            // Function name collisions with what stays.
            'outer: for lib in src.libraries.values() {
                for (k, f) in &lib.functions {
                    if dst.functions.contains_key(k) {
                        err = Some(format!("Function {} already exists", f.name));
                        break 'outer;
                    }
                }
            }
        }
        if let Some(e) = err {
            for lib in old_libs {
                dst.link(lib);
            }
            self.free_ctx(src);
            return Err(e);
        }
        for (_, lib) in src.libraries {
            dst.link(lib);
        }
        for lib in old_libs {
            self.free_library(lib);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata() {
        assert_eq!(
            extract_metadata(b"#!lua name=lib\nreturn").unwrap(),
            (b"lua".to_vec(), b"lib".to_vec(), 14)
        );
        assert_eq!(
            extract_metadata(b"return").unwrap_err(),
            "Missing library metadata"
        );
        assert_eq!(
            extract_metadata(b"#!lua name=a").unwrap_err(),
            "Invalid library metadata"
        );
        assert_eq!(
            extract_metadata(b"#!lua\n").unwrap_err(),
            "Library name was not given"
        );
        assert_eq!(
            extract_metadata(b"#!lua name=a name=b\n").unwrap_err(),
            "Invalid metadata value, name argument was given multiple times"
        );
        assert_eq!(
            extract_metadata(b"#!lua foo=bar\n").unwrap_err(),
            "Invalid metadata value given: foo=bar"
        );
    }

    #[test]
    fn load_call_replace_delete() {
        let mut e = FunctionsEngine::default();
        let code = b"#!lua name=lib\nredis.register_function('f', function() return 1 end)";
        assert_eq!(e.create(1, code, false, LOAD_TIMEOUT).unwrap(), "lib");
        assert!(e.find(1, b"F").is_some());
        assert!(e.find(2, b"f").is_none(), "libraries are per tenant");
        assert_eq!(
            e.create(1, code, false, LOAD_TIMEOUT).unwrap_err(),
            "Library 'lib' already exists"
        );
        assert_eq!(e.create(1, code, true, LOAD_TIMEOUT).unwrap(), "lib");
        let other = b"#!lua name=lib2\nredis.register_function('f', function() return 1 end)";
        assert_eq!(
            e.create(1, other, false, LOAD_TIMEOUT).unwrap_err(),
            "Function f already exists"
        );
        assert_eq!(e.create(2, other, false, LOAD_TIMEOUT).unwrap(), "lib2");
        let none = b"#!lua name=lib3\nlocal a = 1";
        assert_eq!(
            e.create(1, none, false, LOAD_TIMEOUT).unwrap_err(),
            "No functions registered"
        );
        let bad = b"#!lua name=lib3\nredis.call('ping')";
        assert!(e
            .create(1, bad, false, LOAD_TIMEOUT)
            .unwrap_err()
            .contains("attempted to access nonexistent global variable 'call'"));
        let dump = e.dump(1);
        assert!(e.delete(1, b"lib"));
        assert!(!e.delete(1, b"lib"));
        e.restore(1, &dump, RestorePolicy::Append).unwrap();
        assert!(e.find(1, b"f").is_some());
        assert_eq!(
            e.restore(1, &dump, RestorePolicy::Append).unwrap_err(),
            "Library lib already exists"
        );
        e.restore(1, &dump, RestorePolicy::Replace).unwrap();
        let mut broken = dump.clone();
        broken[3] ^= 1;
        assert_eq!(
            e.restore(1, &broken, RestorePolicy::Flush).unwrap_err(),
            "DUMP payload version or checksum are wrong"
        );
        e.flush(1);
        assert!(e.find(1, b"f").is_none());
        assert!(e.find(2, b"f").is_some());
    }
}
