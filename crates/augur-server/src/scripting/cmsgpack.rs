//! `cmsgpack` for scripts: lua-cmsgpack 0.4.0 (Redis's deps/lua/src/lua_cmsgpack.c)
//! ported to Rust on the C API, byte for byte: integers in the smallest MessagePack
//! form, other numbers as float 32 when exact, else float 64; strings as fixstr / str8 /
//! str16 / str32; a table whose keys are exactly 1..n is an array, any other a map (in
//! Lua's `next` order); nesting beyond 16 levels is encoded as nil (so circular tables
//! are cut). `pack(...)` concatenates its arguments' encodings; `unpack` decodes all
//! values, `unpack_one(s, offset)` and `unpack_limit(s, limit, offset)` some, returning
//! the next offset first (-1 at the end).
//!
//! Encoding never calls Lua code (arrays are read with raw access, which for a table
//! whose keys are exactly 1..n is what lua_gettable returns), so no Lua error can
//! unwind through the Rust buffer; decoding holds only borrowed bytes.

use super::vm::{push_bytes, to_bytes};
use mlua_sys as ffi;
use std::ffi::c_int;

const MAX_NESTING: u32 = 16;

/// `(int64_t)x == x` as x86 computes it (out of range and NaN convert to i64::MIN).
fn int64_equivalent(x: f64) -> bool {
    if x.is_infinite() || x.is_nan() {
        return false;
    }
    let i = if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&x) {
        x as i64
    } else {
        i64::MIN
    };
    i as f64 == x
}

fn encode_bytes(buf: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        buf.push(0xa0 | len as u8);
    } else if len <= 0xff {
        buf.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        buf.push(0xda);
        buf.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        buf.push(0xdb);
        buf.extend_from_slice(&(len as u32).to_be_bytes());
    }
    buf.extend_from_slice(s);
}

fn encode_double(buf: &mut Vec<u8>, d: f64) {
    let f = d as f32;
    if d == f as f64 {
        buf.push(0xca);
        buf.extend_from_slice(&f.to_be_bytes());
    } else {
        buf.push(0xcb);
        buf.extend_from_slice(&d.to_be_bytes());
    }
}

fn encode_int(buf: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            buf.push(n as u8);
        } else if n <= 0xff {
            buf.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            buf.push(0xcd);
            buf.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            buf.push(0xce);
            buf.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            buf.push(0xcf);
            buf.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        buf.push(n as i8 as u8);
    } else if n >= -128 {
        buf.extend_from_slice(&[0xd0, n as u8]);
    } else if n >= -32768 {
        buf.push(0xd1);
        buf.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        buf.push(0xd2);
        buf.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        buf.push(0xd3);
        buf.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_header(buf: &mut Vec<u8>, n: u64, fix: u8, b16: u8, b32: u8) {
    if n <= 15 {
        buf.push(fix | n as u8);
    } else if n <= 65535 {
        buf.push(b16);
        buf.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        buf.push(b32);
        buf.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// table_is_an_array for the table at the top: every key a number that is a positive
/// C int, and the largest equal to the count.
unsafe fn table_is_an_array(l: *mut ffi::lua_State) -> bool {
    let top = ffi::lua_gettop(l);
    let (mut count, mut max) = (0i64, 0i64);
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_pop(l, 1);
        if ffi::lua_type(l, -1) != ffi::LUA_TNUMBER {
            ffi::lua_settop(l, top);
            return false;
        }
        let n = ffi::lua_tonumber(l, -1);
        // (int)n == n, with x86's conversion (out of range gives INT_MIN).
        let as_int = if n > -2_147_483_649.0 && n < 2_147_483_648.0 {
            n as i32
        } else {
            i32::MIN
        };
        if n <= 0.0 || n.is_nan() || as_int as f64 != n {
            ffi::lua_settop(l, top);
            return false;
        }
        max = max.max(as_int as i64);
        count += 1;
    }
    ffi::lua_settop(l, top);
    max == count
}

/// mp_encode_lua_type: encodes the value at the top and pops it.
unsafe fn encode_value(l: *mut ffi::lua_State, buf: &mut Vec<u8>, level: u32) {
    let mut t = ffi::lua_type(l, -1);
    if t == ffi::LUA_TTABLE && (level == MAX_NESTING || ffi::lua_checkstack(l, 4) == 0) {
        t = ffi::LUA_TNIL;
    }
    match t {
        ffi::LUA_TSTRING => encode_bytes(buf, to_bytes(l, -1)),
        ffi::LUA_TBOOLEAN => buf.push(if ffi::lua_toboolean(l, -1) != 0 {
            0xc3
        } else {
            0xc2
        }),
        ffi::LUA_TNUMBER => {
            let n = ffi::lua_tonumber(l, -1);
            if int64_equivalent(n) {
                encode_int(buf, n as i64);
            } else {
                encode_double(buf, n);
            }
        }
        ffi::LUA_TTABLE => {
            if table_is_an_array(l) {
                let len = ffi::lua_objlen(l, -1);
                encode_header(buf, len as u64, 0x90, 0xdc, 0xdd);
                for j in 1..=len {
                    ffi::lua_rawgeti(l, -1, j as ffi::lua_Integer);
                    encode_value(l, buf, level + 1);
                }
            } else {
                let mut len = 0u64;
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, -2) != 0 {
                    ffi::lua_pop(l, 1);
                    len += 1;
                }
                encode_header(buf, len, 0x80, 0xde, 0xdf);
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, -2) != 0 {
                    ffi::lua_pushvalue(l, -2);
                    encode_value(l, buf, level + 1); // key
                    encode_value(l, buf, level + 1); // value
                }
            }
        }
        _ => buf.push(0xc0),
    }
    ffi::lua_pop(l, 1);
}

/// Raises `msg` with the caller's position (luaL_error); `msg` is static, so nothing
/// owned is alive when it unwinds.
unsafe fn raise(l: *mut ffi::lua_State, msg: &'static std::ffi::CStr) -> c_int {
    ffi::luaL_where(l, 1);
    ffi::lua_pushstring(l, msg.as_ptr());
    ffi::lua_concat(l, 2);
    ffi::lua_error(l)
}

/// `cmsgpack.pack(...)`.
pub(super) unsafe extern "C-unwind" fn pack(l: *mut ffi::lua_State) -> c_int {
    let nargs = ffi::lua_gettop(l);
    if nargs == 0 {
        return ffi::luaL_argerror(l, 0, c"MessagePack pack needs input.".as_ptr());
    }
    if ffi::lua_checkstack(l, 1) == 0 {
        return ffi::luaL_argerror(l, 0, c"Too many arguments for MessagePack pack.".as_ptr());
    }
    let mut buf = Vec::new();
    for i in 1..=nargs {
        ffi::lua_pushvalue(l, i);
        encode_value(l, &mut buf, 0);
    }
    push_bytes(l, &buf);
    1
}

#[derive(PartialEq)]
enum DecodeErr {
    Eof,
    BadFmt,
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn left(&self) -> usize {
        self.b.len() - self.at
    }
    fn need(&self, n: usize) -> Result<(), DecodeErr> {
        if self.left() < n {
            Err(DecodeErr::Eof)
        } else {
            Ok(())
        }
    }
    fn byte(&self, i: usize) -> u8 {
        self.b[self.at + i]
    }
    fn be(&self, from: usize, n: usize) -> u64 {
        (0..n).fold(0u64, |acc, i| (acc << 8) | self.byte(from + i) as u64)
    }
}

/// lua_pushinteger of an integer (lua_pushunsigned is lua_pushinteger on 64 bits).
unsafe fn push_int(l: *mut ffi::lua_State, n: i64) {
    ffi::lua_pushnumber(l, n as f64);
}

/// mp_decode_to_lua_type: pushes one value (on error, what was pushed may stay).
unsafe fn decode_value(l: *mut ffi::lua_State, c: &mut Cursor<'_>) -> Result<(), DecodeErr> {
    c.need(1)?;
    if ffi::lua_checkstack(l, 2) == 0 {
        return Err(DecodeErr::BadFmt);
    }
    let t = c.byte(0);
    match t {
        0xcc => {
            c.need(2)?;
            push_int(l, c.byte(1) as i64);
            c.at += 2;
        }
        0xd0 => {
            c.need(2)?;
            push_int(l, c.byte(1) as i8 as i64);
            c.at += 2;
        }
        0xcd => {
            c.need(3)?;
            push_int(l, c.be(1, 2) as i64);
            c.at += 3;
        }
        0xd1 => {
            c.need(3)?;
            // (int16_t)(p[1] << 8) | p[2]: the low byte is or-ed after the cast.
            let v = ((c.byte(1) as i32) << 8) as i16 as i32 | c.byte(2) as i32;
            push_int(l, v as i64);
            c.at += 3;
        }
        0xce => {
            c.need(5)?;
            push_int(l, c.be(1, 4) as i64);
            c.at += 5;
        }
        0xd2 => {
            c.need(5)?;
            push_int(l, c.be(1, 4) as u32 as i32 as i64);
            c.at += 5;
        }
        0xcf => {
            c.need(9)?;
            push_int(l, c.be(1, 8) as i64);
            c.at += 9;
        }
        0xd3 => {
            c.need(9)?;
            ffi::lua_pushnumber(l, c.be(1, 8) as i64 as f64);
            c.at += 9;
        }
        0xc0 => {
            ffi::lua_pushnil(l);
            c.at += 1;
        }
        0xc3 | 0xc2 => {
            ffi::lua_pushboolean(l, (t == 0xc3) as c_int);
            c.at += 1;
        }
        0xca => {
            c.need(5)?;
            ffi::lua_pushnumber(l, f32::from_bits(c.be(1, 4) as u32) as f64);
            c.at += 5;
        }
        0xcb => {
            c.need(9)?;
            ffi::lua_pushnumber(l, f64::from_bits(c.be(1, 8)));
            c.at += 9;
        }
        0xd9..=0xdb => {
            let hdr = match t {
                0xd9 => 1,
                0xda => 2,
                _ => 4,
            };
            c.need(1 + hdr)?;
            let n = c.be(1, hdr) as usize;
            c.at += 1 + hdr;
            c.need(n)?;
            push_bytes(l, &c.b[c.at..c.at + n]);
            c.at += n;
        }
        0xdc..=0xdf => {
            let hdr = if t == 0xdc || t == 0xde { 2 } else { 4 };
            c.need(1 + hdr)?;
            let n = c.be(1, hdr);
            c.at += 1 + hdr;
            if t <= 0xdd {
                decode_array(l, c, n)?;
            } else {
                decode_map(l, c, n)?;
            }
        }
        _ if t & 0x80 == 0 => {
            push_int(l, t as i64);
            c.at += 1;
        }
        _ if t & 0xe0 == 0xe0 => {
            push_int(l, t as i8 as i64);
            c.at += 1;
        }
        _ if t & 0xe0 == 0xa0 => {
            let n = (t & 0x1f) as usize;
            c.need(1 + n)?;
            push_bytes(l, &c.b[c.at + 1..c.at + 1 + n]);
            c.at += 1 + n;
        }
        _ if t & 0xf0 == 0x90 => {
            c.at += 1;
            decode_array(l, c, (t & 0xf) as u64)?;
        }
        _ if t & 0xf0 == 0x80 => {
            c.at += 1;
            decode_map(l, c, (t & 0xf) as u64)?;
        }
        _ => return Err(DecodeErr::BadFmt),
    }
    Ok(())
}

unsafe fn decode_array(
    l: *mut ffi::lua_State,
    c: &mut Cursor<'_>,
    n: u64,
) -> Result<(), DecodeErr> {
    ffi::lua_createtable(l, 0, 0);
    for i in 1..=n {
        ffi::lua_pushnumber(l, i as f64);
        decode_value(l, c)?;
        ffi::lua_settable(l, -3);
    }
    Ok(())
}

unsafe fn decode_map(l: *mut ffi::lua_State, c: &mut Cursor<'_>, n: u64) -> Result<(), DecodeErr> {
    ffi::lua_createtable(l, 0, 0);
    for _ in 0..n {
        decode_value(l, c)?;
        decode_value(l, c)?;
        // A nil or NaN key raises here, as lua_settable does in the C library.
        ffi::lua_settable(l, -3);
    }
    Ok(())
}

/// mp_unpack_full: argument 1 is the input, the only value on the stack.
unsafe fn unpack_full(l: *mut ffi::lua_State, limit: i64, offset: i64) -> c_int {
    let mut len = 0usize;
    let p = ffi::luaL_checklstring(l, 1, &mut len);
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        let msg = format!(
            "Invalid request to unpack with offset of {} and limit of {}.\0",
            offset as i32, len as i32
        );
        let mut cbuf = [0u8; 128];
        let n = msg.len().min(127);
        cbuf[..n].copy_from_slice(&msg.as_bytes()[..n]);
        drop(msg);
        return ffi::luaL_error(l, c"%s".as_ptr(), cbuf.as_ptr());
    } else if offset as usize > len {
        let msg = format!(
            "Start offset {} greater than input length {}.\0",
            offset as i32, len as i32
        );
        let mut cbuf = [0u8; 128];
        let n = msg.len().min(127);
        cbuf[..n].copy_from_slice(&msg.as_bytes()[..n]);
        drop(msg);
        return ffi::luaL_error(l, c"%s".as_ptr(), cbuf.as_ptr());
    }
    let limit = if decode_all { i32::MAX as i64 } else { limit };
    // The input string stays on the stack at index 1, so the bytes stay valid.
    let bytes = std::slice::from_raw_parts(p as *const u8, len);
    let mut c = Cursor {
        b: bytes,
        at: offset as usize,
    };
    let mut cnt: c_int = 0;
    while c.left() > 0 && (cnt as i64) < limit {
        match decode_value(l, &mut c) {
            Ok(()) => cnt += 1,
            Err(DecodeErr::Eof) => return raise(l, c"Missing bytes in input."),
            Err(DecodeErr::BadFmt) => return raise(l, c"Bad data format in input."),
        }
    }
    if !decode_all {
        let next = if c.left() == 0 { -1 } else { c.at as i64 };
        ffi::lua_pushnumber(l, next as f64);
        ffi::lua_insert(l, 2);
        cnt += 1;
    }
    cnt
}

/// `cmsgpack.unpack(s)`.
pub(super) unsafe extern "C-unwind" fn unpack(l: *mut ffi::lua_State) -> c_int {
    unpack_full(l, 0, 0)
}

/// `cmsgpack.unpack_one(s, offset)`.
pub(super) unsafe extern "C-unwind" fn unpack_one(l: *mut ffi::lua_State) -> c_int {
    let offset = ffi::luaL_optinteger(l, 2, 0) as i64;
    if ffi::lua_gettop(l) > 1 {
        ffi::lua_settop(l, 1);
    }
    unpack_full(l, 1, offset)
}

/// `cmsgpack.unpack_limit(s, limit, offset)`.
pub(super) unsafe extern "C-unwind" fn unpack_limit(l: *mut ffi::lua_State) -> c_int {
    let limit = ffi::luaL_checkinteger(l, 2) as i64;
    let offset = ffi::luaL_optinteger(l, 3, 0) as i64;
    if ffi::lua_gettop(l) > 1 {
        ffi::lua_settop(l, 1);
    }
    unpack_full(l, limit, offset)
}

/// Pushes the `cmsgpack` table (luaopen_create).
pub(super) unsafe fn push_library(l: *mut ffi::lua_State) {
    let fns: [(&std::ffi::CStr, ffi::lua_CFunction); 4] = [
        (c"pack", pack),
        (c"unpack", unpack),
        (c"unpack_one", unpack_one),
        (c"unpack_limit", unpack_limit),
    ];
    ffi::lua_createtable(l, 0, 8);
    for (name, f) in fns {
        ffi::lua_pushcfunction(l, f);
        ffi::lua_setfield(l, -2, name.as_ptr());
    }
    for (k, v) in [
        (c"_NAME", c"cmsgpack"),
        (c"_VERSION", c"lua-cmsgpack 0.4.0"),
        (c"_COPYRIGHT", c"Copyright (C) 2012, Salvatore Sanfilippo"),
        (c"_DESCRIPTION", c"MessagePack C implementation for Lua"),
    ] {
        ffi::lua_pushstring(l, v.as_ptr());
        ffi::lua_setfield(l, -2, k.as_ptr());
    }
}
