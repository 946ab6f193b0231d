//! Redis-style glob matching for KEYS / SCAN MATCH / CONFIG GET / PSUBSCRIBE, byte-wise,
//! with exactly the semantics of Redis's `stringmatchlen` (util.c): `*`, `?`, `[abc]`,
//! `[^a-z]`, `[a-z]`, and `\x` escapes, including its corner cases:
//! - an empty text matches only an empty pattern (`*` does not match ""; KEYS and SCAN
//!   special-case a lone `*` before matching, as Redis does);
//! - a `]` right after `[` or `[^` closes the class (`[]` matches nothing, `[^]` any byte);
//! - an unterminated class runs to the end of the pattern (`[ab` matches "a");
//! - `x-]` inside a class is a range ending at `]`;
//! - a trailing lone `\` matches a backslash;
//! - inside a class an escaped byte compares case-sensitively even when matching nocase.
//!
//! Every non-star token consumes exactly one byte, so Redis's recursive backtracking over
//! stars gives the same answers as the iterative single-star backtracking used here, which
//! is O(|p| * |t|) and cannot overflow the stack on hostile patterns.

/// Whether `text` matches the glob `pattern` (case-sensitive).
pub fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    glob_match_opt(pattern, text, false)
}

/// Case-insensitive variant (CONFIG GET parameter names).
pub fn glob_match_nocase(pattern: &[u8], text: &[u8]) -> bool {
    glob_match_opt(pattern, text, true)
}

fn glob_match_opt(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    // stringmatchlen's loop runs only while both pattern and text remain.
    if text.is_empty() {
        return pattern.is_empty();
    }
    let (mut p, mut t) = (0usize, 0usize);
    // The last star: pattern index after it, and the text index it has eaten up to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            if pattern[p] == b'*' {
                while p < pattern.len() && pattern[p] == b'*' {
                    p += 1;
                }
                if p == pattern.len() {
                    return true;
                }
                star = Some((p, t));
                continue;
            }
            let (matched, next) = token_match(pattern, p, text[t], nocase);
            if matched {
                p = next;
                t += 1;
                continue;
            }
        }
        // Mismatch: backtrack to the last star, letting it eat one more byte.
        match star {
            Some((sp, st)) => {
                p = sp;
                t = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    while p < pattern.len() && pattern[p] == b'*' {
        p += 1;
    }
    p == pattern.len()
}

/// Matches byte `c` against the non-star token at `pattern[p]`; returns whether it
/// matched and where the next token starts. The token's extent never depends on `c`.
fn token_match(pattern: &[u8], p: usize, c: u8, nocase: bool) -> (bool, usize) {
    let len = pattern.len();
    let fold = |b: u8| if nocase { b.to_ascii_lowercase() } else { b };
    match pattern[p] {
        b'?' => (true, p + 1),
        b'[' => {
            let mut i = p + 1;
            let negate = i < len && pattern[i] == b'^';
            if negate {
                i += 1;
            }
            let mut matched = false;
            loop {
                if pattern.get(i) == Some(&b'\\') && len - i >= 2 {
                    i += 1;
                    if pattern[i] == c {
                        matched = true;
                    }
                } else if pattern.get(i) == Some(&b']') {
                    break;
                } else if i >= len {
                    // Unterminated: the class ends with the pattern.
                    i = len - 1;
                    break;
                } else if len - i >= 3 && pattern[i + 1] == b'-' {
                    let (mut lo, mut hi) = (pattern[i], pattern[i + 2]);
                    if lo > hi {
                        std::mem::swap(&mut lo, &mut hi);
                    }
                    let (lo, hi, cc) = (fold(lo), fold(hi), fold(c));
                    if lo <= cc && cc <= hi {
                        matched = true;
                    }
                    i += 2;
                } else if fold(pattern[i]) == fold(c) {
                    matched = true;
                }
                i += 1;
            }
            (matched != negate, i + 1)
        }
        b'\\' if len - p >= 2 => (fold(pattern[p + 1]) == fold(c), p + 2),
        b => (fold(b) == fold(c), p + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_glob_cases() {
        let m = |p: &str, t: &str| glob_match(p.as_bytes(), t.as_bytes());
        assert!(
            !m("*", ""),
            "stringmatchlen: an empty text matches only an empty pattern"
        );
        assert!(m("", ""));
        assert!(!m("", "a"));
        assert!(m("*", "anything"));
        assert!(m("h?llo", "hello"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("h*llo", "heeeello"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(m("h[b-a]llo", "hbllo"), "reversed ranges are swapped");
        assert!(m("key:*:x", "key:12:x"));
        assert!(!m("key:*:x", "key:12:y"));
        assert!(m("a\\*b", "a*b"));
        assert!(!m("a\\*b", "axb"));
        assert!(m("*a*b*c*", "xxaxxbxxcxx"));
        assert!(m("a*", "a"));
        assert!(m("a**", "a"));
        assert!(!m("a*?", "a"));
        assert!(glob_match_nocase(b"MAXMEMORY*", b"maxmemory-policy"));
    }

    #[test]
    fn stringmatchlen_corner_cases() {
        let m = |p: &[u8], t: &[u8]| glob_match(p, t);
        // `]` right after `[` closes an empty class.
        assert!(!m(b"[]", b"]"));
        assert!(!m(b"[]", b"a"));
        assert!(m(b"[^]", b"a"));
        assert!(m(b"[]a]", b"a]") == m(b"[]", b"a"));
        // Unterminated classes run to the end of the pattern.
        assert!(m(b"[ab", b"a"));
        assert!(m(b"[ab", b"b"));
        assert!(!m(b"[ab", b"c"));
        assert!(!m(b"[", b"["));
        assert!(m(b"[^", b"x"));
        assert!(m(b"x[^", b"xy"));
        // `a-]` is a range from ']' (93) to 'a' (97): matches '^' (94), then the class
        // continues past the `]` to the end of the pattern.
        assert!(m(b"[a-]", b"^"));
        assert!(!m(b"[a-]", b"b"));
        // Escapes inside and outside classes; a trailing lone backslash is literal.
        assert!(m(b"[\\]]", b"]"));
        assert!(m(b"a\\", b"a\\"));
        assert!(m(b"\\?", b"?"));
        assert!(!m(b"\\?", b"x"));
        // nocase: escaped bytes inside a class compare exactly.
        assert!(!glob_match_nocase(b"[\\A]", b"a"));
        assert!(glob_match_nocase(b"[A]", b"a"));
        assert!(glob_match_nocase(b"[A-C]", b"b"));
    }

    #[test]
    fn pathological_pattern_finishes() {
        let p = "*a".repeat(50) + "b";
        let t = "a".repeat(200);
        assert!(!glob_match(p.as_bytes(), t.as_bytes()));
        let p = "*?".repeat(50_000);
        assert!(glob_match(p.as_bytes(), "x".repeat(60_000).as_bytes()));
    }
}
