//! `struct` for scripts: Roberto Ierusalimschy's struct library 0.2 as Redis 7.0 ships
//! it (deps/lua/src/lua_struct.c, with Redis's bounds fixes), ported to Rust on the C
//! API with its formats, alignment rules, number conversions and messages:
//! `struct.pack(fmt, ...)`, `struct.unpack(fmt, s [, pos])` (the values, then the next
//! position) and `struct.size(fmt)`.
//!
//! Formats: `>` `<` endianness, `![n]` alignment, `x` padding, `b/B h/H l/L T i/I[n]`
//! integers (sizes 1, 2, 8, 8, `n` up to 32; native sizes of x86-64), `cn` n chars
//! (`c0`: the whole string when packing, the previous number when unpacking), `s` a
//! zero-terminated string, `f` float, `d` double, ` ` ignored.
//!
//! The packed string is built in a Rust buffer only after every argument has been
//! checked (the checks are what raise), so no Lua error unwinds through it. Numbers
//! given as strings to `c`/`s` are converted in place by the first pass, so the second
//! reads the same bytes.

use super::vm::push_bytes;
use mlua_sys as ffi;
use std::ffi::{c_char, c_int};

const MAXINTSIZE: usize = 32;
/// MAXALIGN on x86-64 (the padding of `struct { char c; double d; }`).
const MAXALIGN: usize = 8;
const BIG: bool = false;
const LITTLE: bool = true;

struct Header {
    little: bool,
    align: usize,
}

fn isp2(x: usize) -> bool {
    x > 0 && x & (x - 1) == 0
}

/// Raises a formatted message with the caller's position (luaL_error); the text is
/// copied to a fixed buffer first so that nothing owned is alive when it unwinds.
unsafe fn raise(l: *mut ffi::lua_State, msg: String) -> c_int {
    let mut buf = [0u8; 160];
    let n = msg.len().min(159);
    buf[..n].copy_from_slice(&msg.as_bytes()[..n]);
    drop(msg);
    ffi::luaL_error(l, c"%s".as_ptr(), buf.as_ptr() as *const c_char)
}

unsafe fn arg_error(l: *mut ffi::lua_State, arg: c_int, msg: String) -> c_int {
    let mut buf = [0u8; 160];
    let n = msg.len().min(159);
    buf[..n].copy_from_slice(&msg.as_bytes()[..n]);
    drop(msg);
    ffi::luaL_argerror(l, arg, buf.as_ptr() as *const c_char)
}

/// getnum: a decimal number at `*i` of `fmt`, or `df`.
unsafe fn getnum(l: *mut ffi::lua_State, fmt: &[u8], i: &mut usize, df: usize) -> usize {
    if !fmt.get(*i).is_some_and(u8::is_ascii_digit) {
        return df;
    }
    let mut a: i32 = 0;
    while let Some(&d) = fmt.get(*i).filter(|d| d.is_ascii_digit()) {
        let d = (d - b'0') as i32;
        if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
            raise(l, "integral size overflow".into());
        }
        a = a * 10 + d;
        *i += 1;
    }
    a as usize
}

unsafe fn optsize(l: *mut ffi::lua_State, opt: u8, fmt: &[u8], i: &mut usize) -> usize {
    match opt {
        b'B' | b'b' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' | b'T' => 8,
        b'f' => 4,
        b'd' => 8,
        b'x' => 1,
        b'c' => getnum(l, fmt, i, 1),
        b'i' | b'I' => {
            let sz = getnum(l, fmt, i, 4);
            if sz > MAXINTSIZE {
                raise(
                    l,
                    format!("integral size {sz} is larger than limit of {MAXINTSIZE}"),
                );
            }
            sz
        }
        _ => 0,
    }
}

fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size.wrapping_sub(len & (size - 1))) & (size - 1)
}

unsafe fn controloptions(
    l: *mut ffi::lua_State,
    opt: u8,
    fmt: &[u8],
    i: &mut usize,
    h: &mut Header,
) {
    match opt {
        b' ' => {}
        b'>' => h.little = BIG,
        b'<' => h.little = LITTLE,
        b'!' => {
            let a = getnum(l, fmt, i, MAXALIGN);
            if !isp2(a) {
                raise(l, format!("alignment {a} is not a power of 2"));
            }
            h.align = a;
        }
        _ => {
            arg_error(l, 1, format!("invalid format option '{}'", opt as char));
        }
    }
}

/// The format string (argument 1) as bytes, up to a NUL as C reads it.
unsafe fn format_arg<'a>(l: *mut ffi::lua_State) -> &'a [u8] {
    let mut len = 0usize;
    let p = ffi::luaL_checklstring(l, 1, &mut len);
    let s = std::slice::from_raw_parts(p as *const u8, len);
    match memchr::memchr(0, s) {
        Some(n) => &s[..n],
        None => s,
    }
}

fn put_integer(out: &mut Vec<u8>, n: f64, little: bool, size: usize) {
    let mut value: u64 = if n < 0.0 { n as i64 as u64 } else { n as u64 };
    let mut b = [0u8; MAXINTSIZE];
    if little {
        for x in b.iter_mut().take(size) {
            *x = value as u8;
            value >>= 8;
        }
    } else {
        for x in b[..size].iter_mut().rev() {
            *x = value as u8;
            value >>= 8;
        }
    }
    out.extend_from_slice(&b[..size]);
}

/// b_pack's loop. Run twice: first with `out` None, where every check that can raise
/// runs (nothing owned is alive then); then with the buffer, over the same checked
/// arguments, where nothing raises.
unsafe fn pack_walk(l: *mut ffi::lua_State, fmt: &[u8], mut out: Option<&mut Vec<u8>>) {
    let mut h = Header {
        little: LITTLE,
        align: 1,
    };
    let mut arg: c_int = 2;
    let mut total = 0usize;
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(l, opt, fmt, &mut i);
        let toalign = gettoalign(total, &h, opt, size);
        total += toalign;
        if let Some(o) = out.as_deref_mut() {
            o.resize(o.len() + toalign, 0);
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = ffi::luaL_checknumber(l, arg);
                arg += 1;
                if let Some(o) = out.as_deref_mut() {
                    put_integer(o, n, h.little, size);
                }
            }
            b'x' => {
                if let Some(o) = out.as_deref_mut() {
                    o.push(0);
                }
            }
            b'f' => {
                let f = ffi::luaL_checknumber(l, arg) as f32;
                arg += 1;
                if let Some(o) = out.as_deref_mut() {
                    o.extend_from_slice(&if h.little {
                        f.to_le_bytes()
                    } else {
                        f.to_be_bytes()
                    });
                }
            }
            b'd' => {
                let d = ffi::luaL_checknumber(l, arg);
                arg += 1;
                if let Some(o) = out.as_deref_mut() {
                    o.extend_from_slice(&if h.little {
                        d.to_le_bytes()
                    } else {
                        d.to_be_bytes()
                    });
                }
            }
            b'c' | b's' => {
                let mut len = 0usize;
                let p = ffi::luaL_checklstring(l, arg, &mut len);
                arg += 1;
                if size == 0 {
                    size = len;
                }
                if len < size {
                    ffi::luaL_argerror(l, arg, c"string too short".as_ptr());
                }
                if let Some(o) = out.as_deref_mut() {
                    o.extend_from_slice(std::slice::from_raw_parts(p as *const u8, size));
                    if opt == b's' {
                        o.push(0);
                    }
                }
                if opt == b's' {
                    size += 1;
                }
            }
            _ => controloptions(l, opt, fmt, &mut i, &mut h),
        }
        total += size;
    }
}

/// `struct.pack(fmt, ...)`.
pub(super) unsafe extern "C-unwind" fn pack(l: *mut ffi::lua_State) -> c_int {
    let fmt = format_arg(l);
    pack_walk(l, fmt, None);
    let mut out = Vec::new();
    pack_walk(l, fmt, Some(&mut out));
    push_bytes(l, &out);
    1
}

fn get_integer(b: &[u8], little: bool, signed: bool, size: usize) -> f64 {
    let mut v: u64 = 0;
    if little {
        for &x in b[..size].iter().rev() {
            v = (v << 8) | x as u64;
        }
    } else {
        for &x in &b[..size] {
            v = (v << 8) | x as u64;
        }
    }
    if !signed {
        return v as f64;
    }
    // x86 masks the shift count to 6 bits.
    let shift = ((size * 8).wrapping_sub(1) & 63) as u32;
    let mask = (!0u64).wrapping_shl(shift);
    if v & mask != 0 {
        v |= mask;
    }
    v as i64 as f64
}

/// `struct.unpack(fmt, s [, pos])`.
pub(super) unsafe extern "C-unwind" fn unpack(l: *mut ffi::lua_State) -> c_int {
    let fmt = format_arg(l);
    let mut ld = 0usize;
    let dp = ffi::luaL_checklstring(l, 2, &mut ld);
    let data = std::slice::from_raw_parts(dp as *const u8, ld);
    let pos = ffi::luaL_optinteger(l, 3, 1);
    if pos <= 0 {
        return ffi::luaL_argerror(l, 3, c"offset must be 1 or greater".as_ptr());
    }
    let mut pos = (pos - 1) as usize;
    let mut n: c_int = 0;
    let mut h = Header {
        little: LITTLE,
        align: 1,
    };
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let mut size = optsize(l, opt, fmt, &mut i);
        pos += gettoalign(pos, &h, opt, size);
        if !(size <= ld && pos <= ld - size) {
            return ffi::luaL_argerror(l, 2, c"data string too short".as_ptr());
        }
        if ffi::lua_checkstack(l, 2) == 0 {
            return ffi::luaL_error(
                l,
                c"stack overflow (%s)".as_ptr(),
                c"too many results".as_ptr(),
            );
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let v = get_integer(&data[pos..], h.little, opt.is_ascii_lowercase(), size);
                ffi::lua_pushnumber(l, v);
                n += 1;
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = data[pos..pos + 4].try_into().unwrap_or_default();
                let f = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                ffi::lua_pushnumber(l, f as f64);
                n += 1;
            }
            b'd' => {
                let b: [u8; 8] = data[pos..pos + 8].try_into().unwrap_or_default();
                let d = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                ffi::lua_pushnumber(l, d);
                n += 1;
            }
            b'c' => {
                if size == 0 {
                    if n == 0 || ffi::lua_isnumber(l, -1) == 0 {
                        return ffi::luaL_error(l, c"format 'c0' needs a previous size".as_ptr());
                    }
                    let s = ffi::lua_tonumber(l, -1);
                    size = if s > 0.0 { s as usize } else { 0 };
                    ffi::lua_pop(l, 1);
                    n -= 1;
                    if !(size <= ld && pos <= ld - size) {
                        return ffi::luaL_argerror(l, 2, c"data string too short".as_ptr());
                    }
                }
                push_bytes(l, &data[pos..pos + size]);
                n += 1;
            }
            b's' => {
                let Some(e) = memchr::memchr(0, &data[pos..]) else {
                    return ffi::luaL_error(l, c"unfinished string in data".as_ptr());
                };
                size = e + 1;
                push_bytes(l, &data[pos..pos + e]);
                n += 1;
            }
            _ => controloptions(l, opt, fmt, &mut i, &mut h),
        }
        pos += size;
    }
    ffi::lua_pushnumber(l, (pos + 1) as f64);
    n + 1
}

/// `struct.size(fmt)`.
pub(super) unsafe extern "C-unwind" fn size(l: *mut ffi::lua_State) -> c_int {
    let fmt = format_arg(l);
    let mut h = Header {
        little: LITTLE,
        align: 1,
    };
    let mut pos = 0usize;
    let mut i = 0;
    while i < fmt.len() {
        let opt = fmt[i];
        i += 1;
        let size = optsize(l, opt, fmt, &mut i);
        pos += gettoalign(pos, &h, opt, size);
        if opt == b's' {
            return ffi::luaL_argerror(l, 1, c"options 's' has no fixed size".as_ptr());
        } else if opt == b'c' && size == 0 {
            return ffi::luaL_argerror(l, 1, c"options 'c0' has no fixed size".as_ptr());
        }
        if !opt.is_ascii_alphanumeric() {
            controloptions(l, opt, fmt, &mut i, &mut h);
        }
        pos += size;
    }
    ffi::lua_pushnumber(l, pos as f64);
    1
}

/// Pushes the `struct` table.
pub(super) unsafe fn push_library(l: *mut ffi::lua_State) {
    let fns: [(&std::ffi::CStr, ffi::lua_CFunction); 3] =
        [(c"pack", pack), (c"unpack", unpack), (c"size", size)];
    ffi::lua_createtable(l, 0, 3);
    for (name, f) in fns {
        ffi::lua_pushcfunction(l, f);
        ffi::lua_setfield(l, -2, name.as_ptr());
    }
}
