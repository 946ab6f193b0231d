//! The `bit` library Redis gives scripts: Lua BitOp 1.0.2 (Redis's deps/lua/src/lua_bit.c),
//! ported to Rust on the C API. Numbers are normalised to signed 32-bit integers the way
//! BitOp does (adding 2^52 + 2^51 and keeping the low word), so results, including
//! wrap-around, are the ones Redis returns.

use mlua_sys as ffi;
use std::ffi::{c_char, c_int};

unsafe fn barg(l: *mut ffi::lua_State, idx: c_int) -> u32 {
    let n = ffi::luaL_checknumber(l, idx) + 6_755_399_441_055_744.0;
    n.to_bits() as u32
}

unsafe fn bret(l: *mut ffi::lua_State, b: u32) -> c_int {
    ffi::lua_pushnumber(l, b as i32 as f64);
    1
}

unsafe extern "C-unwind" fn tobit(l: *mut ffi::lua_State) -> c_int {
    bret(l, barg(l, 1))
}

unsafe extern "C-unwind" fn bnot(l: *mut ffi::lua_State) -> c_int {
    bret(l, !barg(l, 1))
}

unsafe fn fold(l: *mut ffi::lua_State, op: fn(u32, u32) -> u32) -> c_int {
    let mut b = barg(l, 1);
    let mut i = ffi::lua_gettop(l);
    while i > 1 {
        b = op(b, barg(l, i));
        i -= 1;
    }
    bret(l, b)
}

unsafe extern "C-unwind" fn band(l: *mut ffi::lua_State) -> c_int {
    fold(l, |a, b| a & b)
}

unsafe extern "C-unwind" fn bor(l: *mut ffi::lua_State) -> c_int {
    fold(l, |a, b| a | b)
}

unsafe extern "C-unwind" fn bxor(l: *mut ffi::lua_State) -> c_int {
    fold(l, |a, b| a ^ b)
}

unsafe fn shift(l: *mut ffi::lua_State, op: fn(u32, u32) -> u32) -> c_int {
    let b = barg(l, 1);
    let n = barg(l, 2) & 31;
    bret(l, op(b, n))
}

unsafe extern "C-unwind" fn lshift(l: *mut ffi::lua_State) -> c_int {
    shift(l, |b, n| b << n)
}

unsafe extern "C-unwind" fn rshift(l: *mut ffi::lua_State) -> c_int {
    shift(l, |b, n| b >> n)
}

unsafe extern "C-unwind" fn arshift(l: *mut ffi::lua_State) -> c_int {
    shift(l, |b, n| ((b as i32) >> n) as u32)
}

unsafe extern "C-unwind" fn rol(l: *mut ffi::lua_State) -> c_int {
    shift(l, |b, n| b.rotate_left(n))
}

unsafe extern "C-unwind" fn ror(l: *mut ffi::lua_State) -> c_int {
    shift(l, |b, n| b.rotate_right(n))
}

unsafe extern "C-unwind" fn bswap(l: *mut ffi::lua_State) -> c_int {
    bret(l, barg(l, 1).swap_bytes())
}

unsafe extern "C-unwind" fn tohex(l: *mut ffi::lua_State) -> c_int {
    let mut b = barg(l, 1);
    let mut n: i32 = if ffi::lua_type(l, 2) == ffi::LUA_TNONE {
        8
    } else {
        barg(l, 2) as i32
    };
    let digits: &[u8; 16] = if n < 0 {
        n = n.wrapping_neg();
        b"0123456789ABCDEF"
    } else {
        b"0123456789abcdef"
    };
    let n = n.clamp(0, 8) as usize;
    let mut buf = [0u8; 8];
    for i in (0..n).rev() {
        buf[i] = digits[(b & 15) as usize];
        b >>= 4;
    }
    ffi::lua_pushlstring(l, buf.as_ptr() as *const c_char, n);
    1
}

/// Pushes the `bit` table.
pub(super) unsafe fn push_library(l: *mut ffi::lua_State) {
    let fns: [(&std::ffi::CStr, ffi::lua_CFunction); 12] = [
        (c"tobit", tobit),
        (c"bnot", bnot),
        (c"band", band),
        (c"bor", bor),
        (c"bxor", bxor),
        (c"lshift", lshift),
        (c"rshift", rshift),
        (c"arshift", arshift),
        (c"rol", rol),
        (c"ror", ror),
        (c"bswap", bswap),
        (c"tohex", tohex),
    ];
    ffi::lua_createtable(l, 0, fns.len() as c_int);
    for (name, f) in fns {
        ffi::lua_pushcfunction(l, f);
        ffi::lua_setfield(l, -2, name.as_ptr());
    }
}
