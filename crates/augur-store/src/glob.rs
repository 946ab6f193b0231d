//! Redis-style glob matching for KEYS / SCAN MATCH / CONFIG GET, byte-wise, as Redis's
//! `stringmatchlen` (util.c): `*`, `?`, `[abc]`, `[^a-z]`, `[a-z]`, and `\x` escapes.

/// Whether `text` matches the glob `pattern` (case-sensitive).
pub fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    glob_match_opt(pattern, text, false)
}

/// Case-insensitive variant (CONFIG GET parameter names).
pub fn glob_match_nocase(pattern: &[u8], text: &[u8]) -> bool {
    glob_match_opt(pattern, text, true)
}

fn glob_match_opt(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    // Iterative matcher with single-star backtracking: O(|p| * |t|) worst case, no
    // recursion, so hostile patterns cannot blow the stack (Redis added a nesting limit
    // for the same reason).
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    let (mut p, mut t) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    star = Some((p, t));
                    continue;
                }
                b'?' => {
                    p += 1;
                    t += 1;
                    continue;
                }
                b'[' => {
                    if let Some((matched, next)) = class_match(pattern, p, text[t], nocase) {
                        if matched {
                            p = next;
                            t += 1;
                            continue;
                        }
                    } else if eq(b'[', text[t]) {
                        // Unterminated class: Redis treats the rest literally-ish; we
                        // treat '[' as a literal.
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if eq(pattern[p + 1], text[t]) {
                        p += 2;
                        t += 1;
                        continue;
                    }
                }
                c => {
                    if eq(c, text[t]) {
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
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

/// Matches `c` against the class starting at `pattern[start] == b'['`. Returns whether it
/// matched and the index after the closing `]`, or None if the class is unterminated.
fn class_match(pattern: &[u8], start: usize, c: u8, nocase: bool) -> Option<(bool, usize)> {
    let fold = |b: u8| if nocase { b.to_ascii_lowercase() } else { b };
    let c = fold(c);
    let mut i = start + 1;
    let negate = i < pattern.len() && pattern[i] == b'^';
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < pattern.len() {
        if pattern[i] == b']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        if pattern[i] == b'\\' && i + 1 < pattern.len() {
            if fold(pattern[i + 1]) == c {
                matched = true;
            }
            i += 2;
        } else if i + 2 < pattern.len() && pattern[i + 1] == b'-' && pattern[i + 2] != b']' {
            let (mut lo, mut hi) = (fold(pattern[i]), fold(pattern[i + 2]));
            if lo > hi {
                std::mem::swap(&mut lo, &mut hi);
            }
            if lo <= c && c <= hi {
                matched = true;
            }
            i += 3;
        } else {
            if fold(pattern[i]) == c {
                matched = true;
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_glob_cases() {
        let m = |p: &str, t: &str| glob_match(p.as_bytes(), t.as_bytes());
        assert!(m("*", ""));
        assert!(m("*", "anything"));
        assert!(m("h?llo", "hello"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("h*llo", "heeeello"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(m("key:*:x", "key:12:x"));
        assert!(!m("key:*:x", "key:12:y"));
        assert!(m("a\\*b", "a*b"));
        assert!(!m("a\\*b", "axb"));
        assert!(m("*a*b*c*", "xxaxxbxxcxx"));
        assert!(glob_match_nocase(b"MAXMEMORY*", b"maxmemory-policy"));
    }

    #[test]
    fn pathological_pattern_finishes() {
        let p = "*a".repeat(50) + "b";
        let t = "a".repeat(200);
        assert!(!glob_match(p.as_bytes(), t.as_bytes()));
    }
}
