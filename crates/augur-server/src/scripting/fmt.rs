//! C's `%.<prec>g`, which Redis uses to turn Lua numbers into command arguments (`%.17g`)
//! and doubles into replies, and lua-cjson uses for JSON numbers (`%.14g`).

/// Formats `v` exactly as glibc's `printf("%.<prec>g", v)`.
pub fn fmt_g(v: f64, prec: usize) -> String {
    let prec = prec.max(1);
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // The exponent after rounding to `prec` significant digits decides the style.
    let sci = format!("{:.*e}", prec - 1, v);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= prec as i32 {
        let mant = strip_zeros(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.unsigned_abs())
    } else {
        let decimals = (prec as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{v:.decimals$}")).to_string()
    }
}

/// `%g` drops trailing zeros of the fraction, and the point if nothing is left.
fn strip_zeros(s: &str) -> &str {
    if !s.contains('.') {
        return s;
    }
    s.trim_end_matches('0').trim_end_matches('.')
}

#[cfg(test)]
mod tests {
    use super::fmt_g;

    #[test]
    fn matches_printf() {
        assert_eq!(fmt_g(100.5, 17), "100.5");
        assert_eq!(fmt_g(1.141, 17), "1.141");
        assert_eq!(fmt_g(2.14, 17), "2.1400000000000001");
        assert_eq!(fmt_g(0.1, 17), "0.10000000000000001");
        assert_eq!(fmt_g(9007199254740991.0, 17), "9007199254740991");
        assert_eq!(fmt_g(1e17, 17), "1e+17");
        assert_eq!(fmt_g(1.5e-5, 17), "1.5e-05");
        assert_eq!(fmt_g(1e-5, 17), "1.0000000000000001e-05");
        assert_eq!(fmt_g(0.0003, 14), "0.0003");
        assert_eq!(fmt_g(-5000.0, 14), "-5000");
        assert_eq!(fmt_g(1023.2, 14), "1023.2");
        assert_eq!(fmt_g(1e100, 14), "1e+100");
        assert_eq!(fmt_g(123456789012345.0, 14), "1.2345678901234e+14");
        assert_eq!(fmt_g(0.0, 17), "0");
        assert_eq!(fmt_g(-1.0, 17), "-1");
        assert_eq!(fmt_g(f64::INFINITY, 17), "inf");
    }
}
