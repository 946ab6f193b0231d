//! INCRBYFLOAT's and HINCRBYFLOAT's numbers, as Redis computes them: C `long double`.
//!
//! Redis 7.0 parses the stored value and the increment with `string2ld` (strtold: hex
//! floats, `inf`; no leading space, no NaN), adds them as `long double` (80-bit x87
//! extended precision on x86-64) and stores `ld2string(.., LD_STR_HUMAN)`: `%.17Lf`
//! with the trailing zeros cut (util.c). The extra precision is what users see: ten
//! `INCRBYFLOAT k 0.1` are `1` in Redis and `0.9999999999999999` in `f64`, three
//! `HINCRBYFLOAT h f 0.3` `0.9` against `0.8999999999999999`. Rust has no `long double`,
//! so the three operations are C (`csrc/long_double.c`, built by `build.rs` with the
//! platform's C compiler, so the type is the platform's, as Redis's is) and the value
//! lives in an opaque 16-byte buffer that is only ever passed by pointer.

use std::os::raw::c_int;

/// A C `long double`, opaque to Rust (16 bytes holds it on every platform Rust and
/// Redis build for; checked by a test against the C compiler's `sizeof`).
#[repr(C, align(16))]
#[derive(Clone, Copy)]
pub struct LongDouble([u8; 16]);

extern "C" {
    fn augur_ld_parse(s: *const u8, len: usize, out: *mut LongDouble) -> c_int;
    fn augur_ld_add(acc: *mut LongDouble, incr: *const LongDouble) -> c_int;
    fn augur_ld_format_human(v: *const LongDouble, buf: *mut u8, cap: usize) -> usize;
    fn augur_ld_isinf(v: *const LongDouble) -> c_int;
    fn augur_ld_seconds_to_ms(v: *const LongDouble) -> i64;
    fn augur_sort_strtod(s: *const u8, len: usize, out: *mut f64) -> c_int;
    fn augur_string2d(s: *const u8, len: usize, out: *mut f64) -> c_int;
    fn augur_range_strtod(s: *const u8, len: usize, out: *mut f64) -> c_int;
    fn augur_double_format_human(v: f64, buf: *mut u8, cap: usize) -> usize;
    fn augur_format_fixed(v: f64, prec: c_int, buf: *mut u8, cap: usize) -> usize;
    #[cfg(test)]
    fn augur_ld_size() -> usize;
}

/// Redis's `MAX_LONG_DOUBLE_CHARS`: the longest text parsed, and the formatting buffer.
const MAX_LONG_DOUBLE_CHARS: usize = 5 * 1024;

impl LongDouble {
    /// `string2ld`: the whole of `text` as a finite or infinite long double, not NaN.
    pub fn parse(text: &[u8]) -> Option<LongDouble> {
        let mut out = LongDouble([0; 16]);
        // SAFETY: `text` is valid for its length (the C side copies at most
        // MAX_LONG_DOUBLE_CHARS - 1 bytes of it and refuses longer); `out` is a
        // 16-byte, 16-aligned buffer, which holds a long double (`size_fits` test).
        let ok = unsafe { augur_ld_parse(text.as_ptr(), text.len(), &mut out) };
        (ok != 0).then_some(out)
    }

    /// Zero (a missing key's value): all bits clear is +0 in every IEEE and x87
    /// format, so no C call is needed.
    pub const ZERO: LongDouble = LongDouble([0; 16]);

    /// Whether it is an infinity (`inf` parses; HINCRBYFLOAT refuses it as an increment).
    /// A timeout in seconds as milliseconds, rounded up as redis-server's
    /// getTimeoutFromObjectOrReply behaves (i64::MIN where that does not fit, as on
    /// x86-64, so Redis's "timeout is negative" follows).
    pub fn seconds_to_ms(&self) -> i64 {
        // SAFETY: `self` is a long double this module wrote.
        unsafe { augur_ld_seconds_to_ms(self) }
    }

    pub fn is_infinite(&self) -> bool {
        // SAFETY: a buffer written by `parse` or `augur_ld_add`.
        unsafe { augur_ld_isinf(self) != 0 }
    }

    /// `self + incr`, or `None` when the sum is NaN or infinite (Redis's "increment
    /// would produce NaN or Infinity").
    pub fn checked_add(mut self, incr: &LongDouble) -> Option<LongDouble> {
        // SAFETY: both are buffers written by `parse` or `augur_ld_add`.
        let ok = unsafe { augur_ld_add(&mut self, incr) };
        (ok != 0).then_some(self)
    }

    /// `ld2string(LD_STR_HUMAN)`: the stored text (empty if it did not fit Redis's
    /// buffer, as Redis stores it then; no finite x87 long double is that long).
    pub fn to_human(&self) -> Vec<u8> {
        let mut buf = [0u8; MAX_LONG_DOUBLE_CHARS];
        // SAFETY: `buf` is writable for its length, which is passed as the capacity.
        let n = unsafe { augur_ld_format_human(self, buf.as_mut_ptr(), buf.len()) };
        buf[..n].to_vec()
    }
}

/// C's strtod over the whole of `s` as SORT scores its elements (sort.c): the text ends
/// at a NUL as a C string does, leading spaces are skipped, and trailing text, ERANGE
/// or NaN refuse it.
pub fn strtod_whole(s: &[u8]) -> Option<f64> {
    let mut v = 0f64;
    // SAFETY: the C side reads `len` bytes of `s` and writes one f64.
    (unsafe { augur_sort_strtod(s.as_ptr(), s.len(), &mut v) } == 1).then_some(v)
}

/// Redis's string2d (getDoubleFromObject): a sorted set's score, increment or weight.
/// The whole text must be a number C's strtod reads (so `inf`, `-Infinity`, `0x1p3`
/// and `1e400`'s refusal are glibc's); no leading space, no NaN.
pub fn string2d(s: &[u8]) -> Option<f64> {
    let mut v = 0f64;
    // SAFETY: the C side reads `len` bytes of `s` and writes one f64.
    (unsafe { augur_string2d(s.as_ptr(), s.len(), &mut v) } == 1).then_some(v)
}

/// One bound of a ZRANGEBYSCORE range after its `(` (zslParseRange): strtod up to the
/// first NUL, NaN refused.
pub fn range_strtod(s: &[u8]) -> Option<f64> {
    let mut v = 0f64;
    // SAFETY: as above.
    (unsafe { augur_range_strtod(s.as_ptr(), s.len(), &mut v) } == 1).then_some(v)
}

/// addReplyHumanLongDouble's text of a double (GEOPOS, WITHCOORD): the value widened
/// to long double and printed as `ld2string(LD_STR_HUMAN)` does, `%.17Lf` with the
/// trailing zeros cut (13.361389 is stored as its geohash cell's centre and replied
/// `13.36138933897018433`).
pub fn human_double(v: f64) -> Vec<u8> {
    let mut buf = [0u8; 1024];
    // SAFETY: `buf` is writable for its length, which is passed as the capacity.
    let n = unsafe { augur_double_format_human(v, buf.as_mut_ptr(), buf.len()) };
    buf[..n].to_vec()
}

/// printf's `%.<prec>f` (geo.c's `%.4f` distances and the `%f` of its coordinate
/// error), from the C library so ties round as Redis's do.
pub fn format_fixed(v: f64, prec: u8) -> String {
    let mut buf = [0u8; 1024];
    // SAFETY: as above; `prec` is at most 255, so the text of a finite double fits.
    let n = unsafe { augur_format_fixed(v, prec as c_int, buf.as_mut_ptr(), buf.len()) };
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(a: &str, b: &str) -> Option<String> {
        let a = LongDouble::parse(a.as_bytes())?;
        let b = LongDouble::parse(b.as_bytes())?;
        Some(String::from_utf8(a.checked_add(&b)?.to_human()).unwrap())
    }

    #[test]
    fn zset_scores_parse_as_redis() {
        assert_eq!(string2d(b"1.5"), Some(1.5));
        assert_eq!(string2d(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(string2d(b"+inf"), Some(f64::INFINITY));
        assert_eq!(string2d(b"0x10"), Some(16.0));
        for bad in [
            &b""[..],
            b" 1",
            b"1 ",
            b"nan",
            b"1e400",
            b"1e-400",
            b"abc",
            b"1\x001",
        ] {
            assert_eq!(string2d(bad), None, "{bad:?}");
        }
        assert_eq!(range_strtod(b""), Some(0.0));
        assert_eq!(range_strtod(b" 2"), Some(2.0));
        assert_eq!(range_strtod(b"1e400"), Some(f64::INFINITY));
        assert_eq!(range_strtod(b"3\0x"), Some(3.0));
        assert_eq!(range_strtod(b"nan"), None);
        assert_eq!(range_strtod(b"1x"), None);
    }

    #[test]
    fn size_fits() {
        // SAFETY: a pure function of the C compiler's type.
        assert!(unsafe { augur_ld_size() } <= std::mem::size_of::<LongDouble>());
    }

    #[test]
    fn redis_answers() {
        // What Debian's redis-server 7.0.15 answers on x86-64 (`SET k A`, `INCRBYFLOAT
        // k B`).
        assert_eq!(sum("0", "1").as_deref(), Some("1"));
        assert_eq!(sum("1", "0.25").as_deref(), Some("1.25"));
        assert_eq!(sum("1.25", "-1.1").as_deref(), Some("0.15"));
        assert_eq!(sum("0", "5.0e3").as_deref(), Some("5000"));
        assert_eq!(sum("10.5", "-10.5").as_deref(), Some("0"));
        assert_eq!(sum("-0", "0").as_deref(), Some("0"));
        assert_eq!(sum("1.1e-5", "0").as_deref(), Some("0.000011"));
        assert_eq!(sum("0x10", "0").as_deref(), Some("16"));
        let mut v = LongDouble::ZERO;
        for _ in 0..10 {
            v = v.checked_add(&LongDouble::parse(b"0.1").unwrap()).unwrap();
        }
        assert_eq!(v.to_human(), b"1");
    }

    #[test]
    fn refusals() {
        for bad in [
            "", " 1", "1 ", "nan", "abc", "1e", "--1", "1\u{0}2", "1\u{0}",
        ] {
            assert!(LongDouble::parse(bad.as_bytes()).is_none(), "{bad:?}");
        }
        assert!(LongDouble::parse("1".repeat(MAX_LONG_DOUBLE_CHARS).as_bytes()).is_none());
        // inf parses, but no sum may be infinite.
        assert!(LongDouble::parse(b"-inf").unwrap().is_infinite());
        assert!(!LongDouble::parse(b"1e4932").unwrap().is_infinite());
        assert_eq!(sum("inf", "0"), None);
        assert_eq!(sum("1e4932", "1e4932"), None);
        // The largest finite values still fit Redis's 5 KB buffer: 4,901 digits here,
        // as redis-server answers (starting 1000000000000000000027083122306903498332).
        let big = sum("1e4900", "0").unwrap();
        assert_eq!(big.len(), 4901);
        assert!(big.starts_with("1000000000000000000027083122306903498332"));
    }

    #[test]
    fn scores_parse_as_strtod() {
        assert_eq!(strtod_whole(b"1.5"), Some(1.5));
        assert_eq!(strtod_whole(b" 2"), Some(2.0));
        assert_eq!(strtod_whole(b"0x10"), Some(16.0));
        assert_eq!(strtod_whole(b"-inf"), Some(f64::NEG_INFINITY));
        // strtod of "" consumes nothing and stops at the NUL: 0, as sort.c accepts it.
        assert_eq!(strtod_whole(b""), Some(0.0));
        assert_eq!(strtod_whole(b"1\x002"), Some(1.0));
        assert_eq!(strtod_whole(b"abc"), None);
        assert_eq!(strtod_whole(b"1 "), None);
        assert_eq!(strtod_whole(b"nan"), None);
        assert_eq!(strtod_whole(b"1e400"), None);
    }
}
