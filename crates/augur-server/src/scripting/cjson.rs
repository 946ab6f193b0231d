//! `cjson.encode` / `cjson.decode` for scripts: lua-cjson 2.1.0 (Redis's deps/lua/src/
//! lua_cjson.c) reimplemented in Rust on the C API, with its rules and messages: arrays
//! are tables whose keys are all positive integers (excessively sparse ones refused),
//! numbers as `%.14g`, `/` escaped, `cjson.null` a NULL light userdata, nesting limits,
//! and errors such as "Expected value but found invalid token at character 1". Strings
//! are bytes (no UTF-8 check), as in lua-cjson.
//!
//! Both are C functions whose upvalue is the configuration table (`cjson.encode_max_depth`
//! and friends, in prelude.lua, write it); errors are raised as luaL_error does, naming
//! the caller's line.

use super::fmt::fmt_g;
use super::vm::{push_bytes, to_bytes};
use mlua_sys as ffi;
use std::ffi::c_int;

#[derive(Clone, Copy, PartialEq)]
enum Invalid {
    Refuse,
    Allow,
    Null,
}

struct EncodeCfg {
    max_depth: i64,
    invalid: Invalid,
    precision: usize,
    sparse_convert: bool,
    sparse_ratio: i64,
    sparse_safe: i64,
}

unsafe fn type_name(l: *mut ffi::lua_State, idx: c_int) -> &'static str {
    match ffi::lua_type(l, idx) {
        ffi::LUA_TNIL => "nil",
        ffi::LUA_TBOOLEAN => "boolean",
        ffi::LUA_TLIGHTUSERDATA | ffi::LUA_TUSERDATA => "userdata",
        ffi::LUA_TNUMBER => "number",
        ffi::LUA_TSTRING => "string",
        ffi::LUA_TTABLE => "table",
        ffi::LUA_TFUNCTION => "function",
        ffi::LUA_TTHREAD => "thread",
        _ => "no value",
    }
}

/// A number of the configuration table (the upvalue), or `default`.
unsafe fn cfg_num(l: *mut ffi::lua_State, name: &std::ffi::CStr, default: f64) -> f64 {
    ffi::lua_getfield(l, ffi::lua_upvalueindex(1), name.as_ptr());
    let v = if ffi::lua_type(l, -1) == ffi::LUA_TNUMBER {
        ffi::lua_tonumber(l, -1)
    } else {
        default
    };
    ffi::lua_pop(l, 1);
    v
}

/// Raises `msg` prefixed with the caller's position (luaL_error).
unsafe fn raise_here(l: *mut ffi::lua_State, msg: String) -> c_int {
    ffi::luaL_where(l, 1);
    push_bytes(l, msg.as_bytes());
    drop(msg);
    ffi::lua_concat(l, 2);
    ffi::lua_error(l)
}

/// `cjson.encode(value)`.
pub(super) unsafe extern "C-unwind" fn encode(l: *mut ffi::lua_State) -> c_int {
    if ffi::lua_gettop(l) != 1 {
        return ffi::luaL_argerror(l, 1, c"expected 1 argument".as_ptr());
    }
    ffi::lua_getfield(
        l,
        ffi::lua_upvalueindex(1),
        c"encode_invalid_numbers".as_ptr(),
    );
    let invalid = match ffi::lua_type(l, -1) {
        ffi::LUA_TSTRING if to_bytes(l, -1) == b"null" => Invalid::Null,
        ffi::LUA_TBOOLEAN if ffi::lua_toboolean(l, -1) != 0 => Invalid::Allow,
        _ => Invalid::Refuse,
    };
    ffi::lua_pop(l, 1);
    ffi::lua_getfield(l, ffi::lua_upvalueindex(1), c"sparse_convert".as_ptr());
    let sparse_convert = ffi::lua_toboolean(l, -1) != 0;
    ffi::lua_pop(l, 1);
    let cfg = EncodeCfg {
        max_depth: cfg_num(l, c"encode_max_depth", 1000.0) as i64,
        invalid,
        precision: (cfg_num(l, c"encode_number_precision", 14.0) as i64).clamp(1, 14) as usize,
        sparse_convert,
        sparse_ratio: cfg_num(l, c"sparse_ratio", 2.0) as i64,
        sparse_safe: cfg_num(l, c"sparse_safe", 10.0) as i64,
    };
    let result = {
        let mut out = Vec::new();
        encode_value(l, 1, &cfg, 0, &mut out).map(|()| {
            push_bytes(l, &out);
        })
    };
    match result {
        Ok(()) => 1,
        Err(msg) => raise_here(l, msg),
    }
}

unsafe fn encode_value(
    l: *mut ffi::lua_State,
    idx: c_int,
    cfg: &EncodeCfg,
    depth: i64,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    match ffi::lua_type(l, idx) {
        ffi::LUA_TSTRING => encode_string(to_bytes(l, idx), out),
        ffi::LUA_TNUMBER => encode_number(ffi::lua_tonumber(l, idx), cfg, out)?,
        ffi::LUA_TBOOLEAN => out.extend_from_slice(if ffi::lua_toboolean(l, idx) != 0 {
            b"true"
        } else {
            b"false"
        }),
        ffi::LUA_TNIL => out.extend_from_slice(b"null"),
        ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, idx).is_null() => {
            out.extend_from_slice(b"null")
        }
        ffi::LUA_TTABLE => {
            let depth = depth + 1;
            if depth > cfg.max_depth || ffi::lua_checkstack(l, 3) == 0 {
                return Err(format!("Cannot serialise, excessive nesting ({depth})"));
            }
            let len = array_length(l, idx, cfg)?;
            if len > 0 {
                out.push(b'[');
                for i in 1..=len {
                    if i > 1 {
                        out.push(b',');
                    }
                    ffi::lua_rawgeti(l, idx, i as ffi::lua_Integer);
                    let top = ffi::lua_gettop(l);
                    let r = encode_value(l, top, cfg, depth, out);
                    ffi::lua_pop(l, 1);
                    r?;
                }
                out.push(b']');
            } else {
                out.push(b'{');
                let mut first = true;
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, idx) != 0 {
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    let top = ffi::lua_gettop(l);
                    let key_ok = match ffi::lua_type(l, top - 1) {
                        ffi::LUA_TNUMBER => {
                            out.push(b'"');
                            let r = encode_number(ffi::lua_tonumber(l, top - 1), cfg, out);
                            out.extend_from_slice(b"\":");
                            r
                        }
                        ffi::LUA_TSTRING => {
                            encode_string(to_bytes(l, top - 1), out);
                            out.push(b':');
                            Ok(())
                        }
                        _ => Err(format!(
                            "Cannot serialise {}: table key must be a number or string",
                            type_name(l, top - 1)
                        )),
                    };
                    let r = key_ok.and_then(|()| encode_value(l, top, cfg, depth, out));
                    if let Err(e) = r {
                        ffi::lua_pop(l, 2);
                        return Err(e);
                    }
                    ffi::lua_pop(l, 1);
                }
                out.push(b'}');
            }
        }
        _ => {
            return Err(format!(
                "Cannot serialise {}: type not supported",
                type_name(l, idx)
            ))
        }
    }
    Ok(())
}

/// lua_array_length: the largest index if every key is a positive integer (0 for an
/// empty table, which encodes as an object), -1 for an object.
unsafe fn array_length(l: *mut ffi::lua_State, idx: c_int, cfg: &EncodeCfg) -> Result<i64, String> {
    let (mut max, mut items) = (0i64, 0i64);
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, idx) != 0 {
        let top = ffi::lua_gettop(l);
        if ffi::lua_type(l, top - 1) == ffi::LUA_TNUMBER {
            let k = ffi::lua_tonumber(l, top - 1);
            if k != 0.0 && k.floor() == k && k >= 1.0 {
                max = max.max(k.min(i64::MAX as f64) as i64);
                items += 1;
                ffi::lua_pop(l, 1);
                continue;
            }
        }
        ffi::lua_pop(l, 2);
        return Ok(-1);
    }
    if cfg.sparse_ratio > 0 && max > items.saturating_mul(cfg.sparse_ratio) && max > cfg.sparse_safe
    {
        if !cfg.sparse_convert {
            return Err("Cannot serialise table: excessively sparse array".into());
        }
        return Ok(-1);
    }
    Ok(max)
}

fn encode_number(n: f64, cfg: &EncodeCfg, out: &mut Vec<u8>) -> Result<(), String> {
    let invalid = n.is_nan() || n.is_infinite();
    match cfg.invalid {
        Invalid::Refuse if invalid => {
            return Err("Cannot serialise number: must not be NaN or Inf".into())
        }
        Invalid::Allow if n.is_nan() => {
            out.extend_from_slice(b"nan");
            return Ok(());
        }
        Invalid::Null if invalid => {
            out.extend_from_slice(b"null");
            return Ok(());
        }
        _ => {}
    }
    out.extend_from_slice(fmt_g(n, cfg.precision).as_bytes());
    Ok(())
}

fn encode_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            8 => out.extend_from_slice(b"\\b"),
            9 => out.extend_from_slice(b"\\t"),
            10 => out.extend_from_slice(b"\\n"),
            12 => out.extend_from_slice(b"\\f"),
            13 => out.extend_from_slice(b"\\r"),
            0..=31 | 127 => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

// ---------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Debug)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Num,
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Tok {
    fn name(self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str => "T_STRING",
            Tok::Num => "T_NUMBER",
            Tok::Bool(_) => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Error(m) => m,
        }
    }
}

struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
    depth: i64,
    max_depth: i64,
    invalid_numbers: bool,
    /// The last string or number token's value.
    text: Vec<u8>,
    num: f64,
}

impl Decoder<'_> {
    /// The next token and its index.
    fn next(&mut self) -> (Tok, usize) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.data.get(self.pos) {
            self.pos += 1;
        }
        let start = self.pos;
        let Some(&c) = self.data.get(self.pos) else {
            return (Tok::End, start);
        };
        let single = match c {
            b'{' => Some(Tok::ObjBegin),
            b'}' => Some(Tok::ObjEnd),
            b'[' => Some(Tok::ArrBegin),
            b']' => Some(Tok::ArrEnd),
            b':' => Some(Tok::Colon),
            b',' => Some(Tok::Comma),
            _ => None,
        };
        if let Some(t) = single {
            self.pos += 1;
            return (t, start);
        }
        let tok = match c {
            b'"' => self.string(),
            b'-' | b'0'..=b'9' => self.number(),
            b'i' | b'I' | b'n' | b'N'
                if self.data[start..].len() >= 3
                    && (self.data[start..start + 3].eq_ignore_ascii_case(b"inf")
                        || self.data[start..start + 3].eq_ignore_ascii_case(b"nan"))
                    && !self.data[start..].starts_with(b"null") =>
            {
                self.number()
            }
            b't' if self.data[start..].starts_with(b"true") => {
                self.pos += 4;
                Tok::Bool(true)
            }
            b'f' if self.data[start..].starts_with(b"false") => {
                self.pos += 5;
                Tok::Bool(false)
            }
            b'n' if self.data[start..].starts_with(b"null") => {
                self.pos += 4;
                Tok::Null
            }
            _ => Tok::Error("invalid token"),
        };
        (tok, start)
    }

    fn number(&mut self) -> Tok {
        let d = &self.data[self.pos..];
        // json_is_invalid_number
        let mut p = 0;
        if d.first() == Some(&b'-') {
            p = 1;
        }
        let invalid = match d.get(p) {
            Some(b'0') => matches!(d.get(p + 1), Some(b'x' | b'X' | b'0'..=b'9')),
            Some(c) if *c <= b'9' => false,
            _ => {
                let rest = &d[p..];
                rest.len() >= 3
                    && (rest[..3].eq_ignore_ascii_case(b"inf")
                        || rest[..3].eq_ignore_ascii_case(b"nan"))
            }
        };
        if invalid && !self.invalid_numbers {
            return Tok::Error("invalid number");
        }
        // strtod's grammar (decimal, inf, infinity, nan).
        let mut i = p;
        let rest = &d[p..];
        let value;
        if rest.len() >= 3 && rest[..3].eq_ignore_ascii_case(b"inf") {
            i += if rest.len() >= 8 && rest[..8].eq_ignore_ascii_case(b"infinity") {
                8
            } else {
                3
            };
            value = f64::INFINITY;
        } else if rest.len() >= 3 && rest[..3].eq_ignore_ascii_case(b"nan") {
            i += 3;
            value = f64::NAN;
        } else {
            let digits = |d: &[u8], mut i: usize| {
                while d.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
                i
            };
            let int_end = digits(d, i);
            let mut end = int_end;
            let mut any = int_end > i;
            if d.get(end) == Some(&b'.') {
                let frac_end = digits(d, end + 1);
                any |= frac_end > end + 1;
                end = frac_end;
            }
            if !any {
                return Tok::Error("invalid number");
            }
            if matches!(d.get(end), Some(b'e' | b'E')) {
                let mut e = end + 1;
                if matches!(d.get(e), Some(b'+' | b'-')) {
                    e += 1;
                }
                let exp_end = digits(d, e);
                if exp_end > e {
                    end = exp_end;
                }
            }
            i = end;
            let s = std::str::from_utf8(&d[p..i]).unwrap_or("0");
            let s = s.strip_suffix('.').unwrap_or(s);
            value = s.parse::<f64>().unwrap_or(0.0);
        }
        self.num = if p == 1 { -value } else { value };
        self.pos += i;
        Tok::Num
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let h = self.data.get(at..at + 4)?;
        let s = std::str::from_utf8(h).ok()?;
        if !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(s, 16).ok()
    }

    fn string(&mut self) -> Tok {
        self.pos += 1;
        self.text.clear();
        loop {
            let Some(&c) = self.data.get(self.pos) else {
                return Tok::Error("unexpected end of string");
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    return Tok::Str;
                }
                b'\\' => {
                    let Some(&e) = self.data.get(self.pos + 1) else {
                        return Tok::Error("unexpected end of string");
                    };
                    let ch = match e {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            let Some(mut cp) = self.hex4(self.pos + 2) else {
                                return Tok::Error("invalid unicode escape code");
                            };
                            let mut len = 6;
                            if (0xDC00..=0xDFFF).contains(&cp) {
                                return Tok::Error("invalid unicode escape code");
                            }
                            if (0xD800..=0xDBFF).contains(&cp) {
                                let low =
                                    if self.data.get(self.pos + 6..self.pos + 8) == Some(b"\\u") {
                                        self.hex4(self.pos + 8)
                                    } else {
                                        None
                                    };
                                match low {
                                    Some(lo) if (0xDC00..=0xDFFF).contains(&lo) => {
                                        cp = (((cp & 0x3FF) << 10) | (lo & 0x3FF)) + 0x10000;
                                        len = 12;
                                    }
                                    _ => return Tok::Error("invalid unicode escape code"),
                                }
                            }
                            let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
                            let mut b = [0u8; 4];
                            self.text
                                .extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
                            self.pos += len;
                            continue;
                        }
                        _ => return Tok::Error("invalid escape code"),
                    };
                    self.text.push(ch);
                    self.pos += 2;
                }
                _ => {
                    self.text.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn error(&self, expected: &str, tok: Tok, at: usize) -> String {
        format!(
            "Expected {expected} but found {} at character {}",
            tok.name(),
            at + 1
        )
    }

    unsafe fn descend(&mut self, l: *mut ffi::lua_State) -> Result<(), String> {
        self.depth += 1;
        if self.depth <= self.max_depth && ffi::lua_checkstack(l, 3) != 0 {
            return Ok(());
        }
        Err(format!(
            "Found too many nested data structures ({}) at character {}",
            self.depth, self.pos
        ))
    }

    /// Pushes the value that starts with `tok`.
    unsafe fn value(&mut self, l: *mut ffi::lua_State, tok: Tok, at: usize) -> Result<(), String> {
        match tok {
            Tok::Str => push_bytes(l, &self.text),
            Tok::Num => ffi::lua_pushnumber(l, self.num),
            Tok::Bool(b) => ffi::lua_pushboolean(l, b as c_int),
            Tok::Null => ffi::lua_pushlightuserdata(l, std::ptr::null_mut()),
            Tok::ObjBegin => {
                self.descend(l)?;
                ffi::lua_createtable(l, 0, 0);
                let (mut t, mut at) = self.next();
                if t != Tok::ObjEnd {
                    loop {
                        if t != Tok::Str {
                            return Err(self.error("object key string", t, at));
                        }
                        push_bytes(l, &self.text);
                        let (c, cat) = self.next();
                        if c != Tok::Colon {
                            return Err(self.error("colon", c, cat));
                        }
                        let (v, vat) = self.next();
                        self.value(l, v, vat)?;
                        ffi::lua_rawset(l, -3);
                        (t, at) = self.next();
                        match t {
                            Tok::ObjEnd => break,
                            Tok::Comma => (t, at) = self.next(),
                            _ => return Err(self.error("comma or object end", t, at)),
                        }
                    }
                }
                self.depth -= 1;
            }
            Tok::ArrBegin => {
                self.descend(l)?;
                ffi::lua_createtable(l, 0, 0);
                let (mut t, mut at) = self.next();
                if t != Tok::ArrEnd {
                    let mut i: ffi::lua_Integer = 1;
                    loop {
                        self.value(l, t, at)?;
                        ffi::lua_rawseti(l, -2, i);
                        i += 1;
                        (t, at) = self.next();
                        match t {
                            Tok::ArrEnd => break,
                            Tok::Comma => (t, at) = self.next(),
                            _ => return Err(self.error("comma or array end", t, at)),
                        }
                    }
                }
                self.depth -= 1;
            }
            _ => return Err(self.error("value", tok, at)),
        }
        Ok(())
    }
}

/// `cjson.decode(text)`.
pub(super) unsafe extern "C-unwind" fn decode(l: *mut ffi::lua_State) -> c_int {
    if ffi::lua_gettop(l) != 1 {
        return ffi::luaL_argerror(l, 1, c"expected 1 argument".as_ptr());
    }
    ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
    let max_depth = cfg_num(l, c"decode_max_depth", 1000.0) as i64;
    ffi::lua_getfield(
        l,
        ffi::lua_upvalueindex(1),
        c"decode_invalid_numbers".as_ptr(),
    );
    let invalid_numbers = ffi::lua_toboolean(l, -1) != 0;
    ffi::lua_settop(l, 1);
    // lua-cjson reads a C string: an embedded NUL ends the text.
    let all = to_bytes(l, 1);
    let data = match memchr::memchr(0, all) {
        Some(i) => &all[..i],
        None => all,
    };
    let result = {
        let mut d = Decoder {
            data,
            pos: 0,
            depth: 0,
            max_depth,
            invalid_numbers,
            text: Vec::new(),
            num: 0.0,
        };
        let (t, at) = d.next();
        d.value(l, t, at).and_then(|()| {
            let (t, at) = d.next();
            if t == Tok::End {
                Ok(())
            } else {
                Err(d.error("the end", t, at))
            }
        })
    };
    match result {
        Ok(()) => 1,
        Err(msg) => {
            ffi::lua_settop(l, 1);
            raise_here(l, msg)
        }
    }
}
