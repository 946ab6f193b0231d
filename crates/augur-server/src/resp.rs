//! The Redis wire protocol: an incremental request parser (RESP multibulk and inline
//! commands) and a reply encoder for RESP2 and RESP3.
//!
//! The parser mirrors Redis's `processMultibulkBuffer` / `processInlineBuffer`
//! (networking.c): same limits, same error texts, same treatment of empty commands.
//! It is resumable: when a command is only partly in the buffer it remembers how far it
//! got, so a 500 MB value arriving in 16 KB reads is scanned once, not once per read.
//! Multibulk arguments are returned as ranges into the caller's buffer (zero-copy);
//! inline arguments, which need unquoting, are copied into a scratch buffer.

use bytes::{BufMut, BytesMut};

/// Longest inline request, or `*N` / `$N` header line, Redis accepts (PROTO_INLINE_MAX_SIZE).
pub const INLINE_MAX_SIZE: usize = 64 * 1024;
/// Largest multibulk count Redis accepts (INT_MAX).
const MAX_MULTIBULK_LEN: i64 = i32::MAX as i64;
/// Before authentication Redis refuses multibulk counts above 10 and bulks above 16 KiB,
/// so that an unauthenticated client cannot make the server allocate much.
const UNAUTH_MAX_MULTIBULK: i64 = 10;
const UNAUTH_MAX_BULK: i64 = 16384;

/// A protocol violation. The connection gets `-ERR Protocol error: <text>` and is closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    InvalidMultibulkLength,
    InvalidBulkLength,
    UnauthenticatedMultibulkLength,
    UnauthenticatedBulkLength,
    /// The byte found where a `$` was expected.
    ExpectedDollar(u8),
    UnbalancedQuotes,
    TooBigInline,
    TooBigMbulkCount,
    TooBigBulkCount,
}

impl ProtocolError {
    /// The text after `Protocol error: `, exactly as Redis words it.
    pub fn message(&self) -> String {
        match self {
            ProtocolError::InvalidMultibulkLength => "invalid multibulk length".into(),
            ProtocolError::InvalidBulkLength => "invalid bulk length".into(),
            ProtocolError::UnauthenticatedMultibulkLength => {
                "unauthenticated multibulk length".into()
            }
            ProtocolError::UnauthenticatedBulkLength => "unauthenticated bulk length".into(),
            ProtocolError::ExpectedDollar(b) => format!("expected '$', got '{}'", *b as char),
            ProtocolError::UnbalancedQuotes => "unbalanced quotes in request".into(),
            ProtocolError::TooBigInline => "too big inline request".into(),
            ProtocolError::TooBigMbulkCount => "too big mbulk count string".into(),
            ProtocolError::TooBigBulkCount => "too big bulk count string".into(),
        }
    }

    /// The full error reply line (without `-` and CRLF).
    pub fn reply(&self) -> String {
        format!("ERR Protocol error: {}", self.message())
    }
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for ProtocolError {}

/// What the parser found at the start of the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// A whole command occupying this many bytes; read it with [`Parser::args`].
    Command(usize),
    /// Not enough bytes yet. Nothing is consumed; call again with the same bytes plus more.
    Incomplete,
}

/// Where the arguments of the last parsed command live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Buffer,
    Inline,
}

/// Resumable request parser; one per connection.
#[derive(Debug)]
pub struct Parser {
    /// (start, end) of each argument, in the buffer or in `inline`.
    ranges: Vec<(usize, usize)>,
    inline: Vec<u8>,
    source: Source,
    /// Multibulk in progress: arguments still expected (0 = none in progress).
    remaining: usize,
    /// Bytes of the current command already parsed (headers and whole arguments).
    pos: usize,
    /// A `$len` header was parsed; waiting for `len` bytes plus CRLF at `pos`.
    pending_bulk: Option<usize>,
    /// Bytes skipped before the current command (empty commands such as `*0\r\n` or a
    /// blank inline line); they belong to the next [`Parsed::Command`]'s size.
    skipped: usize,
    max_bulk_len: usize,
    auth_required: bool,
}

/// The arguments of one command, borrowed from the read buffer or the parser.
#[derive(Debug, Clone, Copy)]
pub struct Args<'a> {
    base: &'a [u8],
    ranges: &'a [(usize, usize)],
}

impl<'a> Args<'a> {
    /// Arguments held elsewhere (a queued transaction, a script's call): `ranges` are
    /// (start, end) offsets into `base`.
    pub fn from_parts(base: &'a [u8], ranges: &'a [(usize, usize)]) -> Self {
        Args { base, ranges }
    }
    pub fn len(&self) -> usize {
        self.ranges.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
    /// Argument `i`; panics if out of range, so callers check arity first.
    pub fn get(&self, i: usize) -> &'a [u8] {
        let (s, e) = self.ranges[i];
        &self.base[s..e]
    }
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.ranges.iter().map(|&(s, e)| &self.base[s..e])
    }
    /// Arguments `start..end` (EVAL's keys and arguments).
    pub fn range(&self, start: usize, end: usize) -> Args<'a> {
        Args {
            base: self.base,
            ranges: &self.ranges[start.min(end)..end],
        }
    }
    /// Copies the arguments out (tests, logging).
    pub fn to_vec(&self) -> Vec<Vec<u8>> {
        self.iter().map(|a| a.to_vec()).collect()
    }
}

impl Default for Parser {
    fn default() -> Self {
        Self::new(512 * 1024 * 1024)
    }
}

impl Parser {
    pub fn new(max_bulk_len: usize) -> Self {
        Self {
            ranges: Vec::with_capacity(16),
            inline: Vec::new(),
            source: Source::Buffer,
            remaining: 0,
            pos: 0,
            pending_bulk: None,
            skipped: 0,
            max_bulk_len,
            auth_required: false,
        }
    }

    /// `proto-max-bulk-len`: the largest bulk argument accepted.
    pub fn set_max_bulk_len(&mut self, n: usize) {
        self.max_bulk_len = n;
    }

    /// Whether the client still has to authenticate (tightens the length limits).
    pub fn set_auth_required(&mut self, required: bool) {
        self.auth_required = required;
    }

    /// How many bytes the command in progress needs at least (a hint for growing the
    /// read buffer before a large bulk), or 0 if unknown.
    pub fn bytes_needed(&self) -> usize {
        match self.pending_bulk {
            Some(len) => self.skipped + self.pos + len + 2,
            None => 0,
        }
    }

    /// Parses one command from the start of `buf`. `buf` must start where the previous
    /// `Command` ended (or at the same place as the previous `Incomplete`, with the same
    /// bytes followed by more).
    pub fn parse(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        loop {
            let cmd = &buf[self.skipped..];
            if self.remaining == 0 && self.pos == 0 {
                // Start of a new command.
                self.ranges.clear();
                if cmd.is_empty() {
                    return Ok(Parsed::Incomplete);
                }
                if cmd[0] == b'*' {
                    match self.multibulk_header(cmd)? {
                        Header::Incomplete => return Ok(Parsed::Incomplete),
                        Header::Empty(n) => {
                            self.skipped += n;
                            continue;
                        }
                        Header::Count(count, n) => {
                            self.remaining = count;
                            self.pos = n;
                            self.source = Source::Buffer;
                        }
                    }
                } else {
                    match self.inline(cmd)? {
                        None => return Ok(Parsed::Incomplete),
                        Some(n) if self.ranges.is_empty() => {
                            self.skipped += n;
                            continue;
                        }
                        Some(n) => {
                            let total = self.skipped + n;
                            self.skipped = 0;
                            self.source = Source::Inline;
                            return Ok(Parsed::Command(total));
                        }
                    }
                }
            }
            return self.multibulk_args(buf);
        }
    }

    /// The arguments of the command just returned by [`Parser::parse`]; `buf` is the same
    /// buffer that was passed to `parse`.
    pub fn args<'a>(&'a self, buf: &'a [u8]) -> Args<'a> {
        let base = match self.source {
            Source::Buffer => buf,
            Source::Inline => &self.inline,
        };
        Args {
            base,
            ranges: &self.ranges,
        }
    }

    fn multibulk_header(&self, cmd: &[u8]) -> Result<Header, ProtocolError> {
        // The common case, a short count line, without memchr's set-up (see
        // `length_line`); anything else takes the general path.
        let (n, consumed) = match length_line(&cmd[1..]) {
            Some((n, used)) => (n as i64, used + 1),
            None => {
                let cr = match memchr::memchr(b'\r', cmd) {
                    Some(cr) if cr <= INLINE_MAX_SIZE => cr,
                    None if cmd.len() <= INLINE_MAX_SIZE => return Ok(Header::Incomplete),
                    _ => return Err(ProtocolError::TooBigMbulkCount),
                };
                if cr + 1 >= cmd.len() {
                    // Redis waits for the byte after '\r' before reading the count.
                    return Ok(Header::Incomplete);
                }
                let n = parse_i64(&cmd[1..cr]).ok_or(ProtocolError::InvalidMultibulkLength)?;
                // Redis skips "\r" plus one more byte, whatever it is.
                (n, cr + 2)
            }
        };
        if n > MAX_MULTIBULK_LEN {
            return Err(ProtocolError::InvalidMultibulkLength);
        }
        if n > UNAUTH_MAX_MULTIBULK && self.auth_required {
            return Err(ProtocolError::UnauthenticatedMultibulkLength);
        }
        if n <= 0 {
            return Ok(Header::Empty(consumed));
        }
        Ok(Header::Count(n as usize, consumed))
    }

    fn multibulk_args(&mut self, buf: &[u8]) -> Result<Parsed, ProtocolError> {
        let base = self.skipped;
        let cmd = &buf[base..];
        while self.remaining > 0 {
            let len = match self.pending_bulk {
                Some(len) => len,
                None => {
                    let rest = &cmd[self.pos..];
                    let fast = rest.strip_prefix(b"$").and_then(length_line);
                    let header = match fast {
                        Some((n, used)) => Some((n as i64, used + 1)),
                        None => Self::bulk_header_slow(rest)?,
                    };
                    let Some((n, header)) = header else {
                        return Ok(Parsed::Incomplete);
                    };
                    if n < 0 || n as u64 > self.max_bulk_len as u64 {
                        return Err(ProtocolError::InvalidBulkLength);
                    }
                    if n > UNAUTH_MAX_BULK && self.auth_required {
                        return Err(ProtocolError::UnauthenticatedBulkLength);
                    }
                    self.pos += header;
                    self.pending_bulk = Some(n as usize);
                    n as usize
                }
            };
            // The bulk plus its CRLF (Redis does not check that the two bytes are CRLF).
            if cmd.len() - self.pos < len + 2 {
                return Ok(Parsed::Incomplete);
            }
            self.ranges.push((base + self.pos, base + self.pos + len));
            self.pos += len + 2;
            self.pending_bulk = None;
            self.remaining -= 1;
        }
        let total = base + self.pos;
        self.pos = 0;
        self.skipped = 0;
        self.source = Source::Buffer;
        Ok(Parsed::Command(total))
    }

    /// A bulk header (`$len\r\n`) in general: its length and header size, None while
    /// it is incomplete.
    fn bulk_header_slow(rest: &[u8]) -> Result<Option<(i64, usize)>, ProtocolError> {
        let cr = match memchr::memchr(b'\r', rest) {
            Some(cr) if cr <= INLINE_MAX_SIZE => cr,
            None if rest.len() <= INLINE_MAX_SIZE => return Ok(None),
            _ => return Err(ProtocolError::TooBigBulkCount),
        };
        if cr + 1 >= rest.len() {
            return Ok(None);
        }
        if rest[0] != b'$' {
            return Err(ProtocolError::ExpectedDollar(rest[0]));
        }
        let n = parse_i64(&rest[1..cr]).ok_or(ProtocolError::InvalidBulkLength)?;
        Ok(Some((n, cr + 2)))
    }

    /// Parses an inline command line. Returns the bytes consumed; the arguments (possibly
    /// none, for a blank line) are in `ranges` over `inline`.
    fn inline(&mut self, cmd: &[u8]) -> Result<Option<usize>, ProtocolError> {
        // Redis reads 16 KB at a time and gives up once 64 KB hold no newline; a line
        // longer than the limit is refused however the reads happened to split it.
        let Some(nl) = memchr::memchr(b'\n', cmd) else {
            if cmd.len() > INLINE_MAX_SIZE {
                return Err(ProtocolError::TooBigInline);
            }
            return Ok(None);
        };
        if nl > INLINE_MAX_SIZE {
            return Err(ProtocolError::TooBigInline);
        }
        let mut line = &cmd[..nl];
        if let Some(stripped) = line.strip_suffix(b"\r") {
            line = stripped;
        }
        self.inline.clear();
        self.ranges.clear();
        split_args(line, &mut self.inline, &mut self.ranges)
            .map_err(|_| ProtocolError::UnbalancedQuotes)?;
        Ok(Some(nl + 1))
    }
}

/// The common form of a count or length line after its `*` or `$`: 1 to 18 decimal
/// digits in canonical form (no leading zero but "0" itself), `\r`, and one more byte
/// (which Redis skips unread). Returns the value and the bytes used, digits through that
/// byte; None for anything else, which the general path (memchr for the `\r`, then
/// `parse_i64`) parses or refuses with Redis's errors. On the lines it accepts, it gives
/// what that path gives: it exists because memchr's set-up costs more than a 3-digit line.
#[inline]
fn length_line(b: &[u8]) -> Option<(usize, usize)> {
    // Unrolled for one to three digits (commands' counts, keys' and most values'
    // lengths), with the byte after `\r` known to be there; the loop takes the rest.
    if let [c0, c1, c2, c3, _, ..] = *b {
        let (d0, d1, d2) = (
            c0.wrapping_sub(b'0') as usize,
            c1.wrapping_sub(b'0') as usize,
            c2.wrapping_sub(b'0') as usize,
        );
        if d0 <= 9 {
            if c1 == b'\r' {
                return Some((d0, 3));
            }
            if d0 != 0 && d1 <= 9 {
                if c2 == b'\r' {
                    return Some((d0 * 10 + d1, 4));
                }
                if d2 <= 9 && c3 == b'\r' {
                    return Some((d0 * 100 + d1 * 10 + d2, 5));
                }
            }
        }
    }
    let first = b.first()?.wrapping_sub(b'0');
    if first > 9 {
        return None;
    }
    let mut v = first as usize;
    let mut i = 1;
    loop {
        let d = b.get(i)?.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        if i == 18 || first == 0 {
            return None;
        }
        v = v * 10 + d as usize;
        i += 1;
    }
    (b[i] == b'\r' && i + 1 < b.len()).then_some((v, i + 2))
}

enum Header {
    Incomplete,
    /// `*0` or a negative count: nothing to run; skip this many bytes.
    Empty(usize),
    /// (argument count, header bytes)
    Count(usize, usize),
}

/// A quick look at the multibulk command at the start of `buf`, without parsing it for
/// real: the byte range of its second argument (the key, for most commands; None with
/// fewer than two arguments) and the command's length. None when `buf` does not start
/// with a complete multibulk command of at most 1024 arguments (inline commands,
/// incomplete reads, anything malformed: the parser proper deals with those). Only
/// prefetching uses it (`server`'s pipelined batches), so a wrong answer costs a wasted
/// memory fetch, never a wrong reply.
pub fn peek_key(buf: &[u8]) -> Option<(Option<std::ops::Range<usize>>, usize)> {
    // A length line after its type byte at `i`: (value, where the line's `\n` ends).
    fn length(buf: &[u8], i: usize) -> Option<(usize, usize)> {
        let (v, used) = length_line(buf.get(i..)?)?;
        (buf[i + used - 1] == b'\n').then_some((v, i + used))
    }
    if buf.first() != Some(&b'*') {
        return None;
    }
    let (n, mut pos) = length(buf, 1)?;
    if n == 0 || n > 1024 {
        return None;
    }
    let mut key = None;
    for i in 0..n {
        if buf.get(pos) != Some(&b'$') {
            return None;
        }
        let (len, start) = length(buf, pos + 1)?;
        let end = start.checked_add(len)?;
        if buf.get(end..end.checked_add(2)?)? != b"\r\n" {
            return None;
        }
        if i == 1 {
            key = Some(start..end);
        }
        pos = end + 2;
    }
    Some((key, pos))
}

/// Parses a decimal i64 the way Redis's `string2ll` does: optional `-`, no `+`, no
/// leading zeros (except "0"), no spaces, no overflow. The store parses intset members
/// by the same rule; this is that one function.
#[inline]
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    augur_store::parse_canonical_i64(s)
}

/// An inline line or config line whose quotes do not balance (or a closing quote not
/// followed by a space).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnbalancedQuotes;

/// Splits a line like Redis's `sdssplitargs`: whitespace-separated words, `"..."` with
/// C-like escapes (`\n`, `\xHH`, ...), `'...'` with only `\'` escaped. A closing quote
/// must be followed by whitespace or the end of the line. Arguments are appended to
/// `out`, with their ranges pushed to `ranges`.
pub fn split_args(
    line: &[u8],
    out: &mut Vec<u8>,
    ranges: &mut Vec<(usize, usize)>,
) -> Result<(), UnbalancedQuotes> {
    let mut i = 0;
    let n = line.len();
    // C's isspace: space, \t, \n, \v, \f, \r.
    let is_space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    loop {
        while i < n && is_space(line[i]) {
            i += 1;
        }
        if i >= n {
            return Ok(());
        }
        let start = out.len();
        let mut inq = false; // inside "double quotes"
        let mut insq = false; // inside 'single quotes'
        let mut done = false;
        while !done {
            if inq {
                if i >= n {
                    return Err(UnbalancedQuotes); // unterminated quotes
                }
                let c = line[i];
                if c == b'\\'
                    && i + 3 < n
                    && line[i + 1] == b'x'
                    && line[i + 2].is_ascii_hexdigit()
                    && line[i + 3].is_ascii_hexdigit()
                {
                    out.push(hex_val(line[i + 2]) * 16 + hex_val(line[i + 3]));
                    i += 3;
                } else if c == b'\\' && i + 1 < n {
                    i += 1;
                    out.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    // The closing quote must be followed by a space or nothing at all.
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return Err(UnbalancedQuotes);
                    }
                    done = true;
                } else {
                    out.push(c);
                }
            } else if insq {
                if i >= n {
                    return Err(UnbalancedQuotes);
                }
                let c = line[i];
                if c == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                    i += 1;
                    out.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < n && !is_space(line[i + 1]) {
                        return Err(UnbalancedQuotes);
                    }
                    done = true;
                } else {
                    out.push(c);
                }
            } else if i >= n {
                done = true;
            } else {
                match line[i] {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    c => out.push(c),
                }
            }
            if i < n {
                i += 1;
            }
        }
        ranges.push((start, out.len()));
    }
}

fn hex_val(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    }
}

// ---------------------------------------------------------------------------------------
// Reply encoding
// ---------------------------------------------------------------------------------------

/// Writes replies into a connection's output buffer, in the protocol version the client
/// chose with HELLO. Methods append; nothing is flushed here.
pub struct Out {
    pub buf: BytesMut,
    pub resp3: bool,
    /// The connection's command statistics since their last flush; error replies are
    /// counted here as they are written (server.c's afterErrorReply). See `stats`.
    pub stats: crate::stats::Pending,
}

impl Out {
    pub fn new() -> Self {
        Self {
            buf: BytesMut::with_capacity(16 * 1024),
            resp3: false,
            stats: Default::default(),
        }
    }

    #[inline]
    fn line(&mut self, prefix: u8, n: i64) {
        let mut b = itoa::Buffer::new();
        let s = b.format(n);
        self.buf.reserve(s.len() + 3);
        self.buf.put_u8(prefix);
        self.buf.put_slice(s.as_bytes());
        self.buf.put_slice(b"\r\n");
    }

    pub fn ok(&mut self) {
        self.buf.put_slice(b"+OK\r\n");
    }

    /// `+text`; the text must not contain CR or LF.
    pub fn simple(&mut self, s: &str) {
        self.buf.reserve(s.len() + 3);
        self.buf.put_u8(b'+');
        self.buf.put_slice(s.as_bytes());
        self.buf.put_slice(b"\r\n");
    }

    /// `-text`: text includes the code (`ERR ...`, `WRONGTYPE ...`). CR and LF are replaced
    /// by spaces, as Redis's addReplyErrorLength does, so client data cannot break framing.
    pub fn error(&mut self, s: &str) {
        self.stats.error(s.as_bytes());
        self.error_uncounted(s);
    }

    /// An error reply already counted in the error statistics: a script's error that a
    /// command inside it produced (Redis's ERR_REPLY_FLAG_NO_STATS_UPDATE). The command
    /// replying it still counts as failed.
    pub fn error_counted_before(&mut self, s: &str) {
        self.stats.failed_uncounted();
        self.error_uncounted(s);
    }

    fn error_uncounted(&mut self, s: &str) {
        self.buf.reserve(s.len() + 3);
        self.buf.put_u8(b'-');
        for &b in s.as_bytes() {
            self.buf
                .put_u8(if b == b'\r' || b == b'\n' { b' ' } else { b });
        }
        self.buf.put_slice(b"\r\n");
    }

    #[inline]
    pub fn int(&mut self, n: i64) {
        self.line(b':', n);
    }

    #[inline]
    pub fn bulk(&mut self, data: &[u8]) {
        self.buf.reserve(data.len() + 16);
        self.line(b'$', data.len() as i64);
        self.buf.put_slice(data);
        self.buf.put_slice(b"\r\n");
    }

    /// A missing value: `$-1` in RESP2, `_` in RESP3.
    #[inline]
    pub fn null(&mut self) {
        if self.resp3 {
            self.buf.put_slice(b"_\r\n");
        } else {
            self.buf.put_slice(b"$-1\r\n");
        }
    }

    /// A missing array: `*-1` in RESP2, `_` in RESP3.
    pub fn null_array(&mut self) {
        if self.resp3 {
            self.buf.put_slice(b"_\r\n");
        } else {
            self.buf.put_slice(b"*-1\r\n");
        }
    }

    pub fn array(&mut self, n: usize) {
        self.line(b'*', n as i64);
    }

    /// An out-of-band push of `n` elements (Pub/Sub messages): `>n` in RESP3, an array
    /// in RESP2.
    pub fn push(&mut self, n: usize) {
        self.line(if self.resp3 { b'>' } else { b'*' }, n as i64);
    }

    /// A map of `n` pairs: `%n` in RESP3, a flat array of 2n in RESP2.
    pub fn map(&mut self, n: usize) {
        if self.resp3 {
            self.line(b'%', n as i64);
        } else {
            self.line(b'*', 2 * n as i64);
        }
    }

    /// A set: `~n` in RESP3, an array in RESP2.
    pub fn set(&mut self, n: usize) {
        if self.resp3 {
            self.line(b'~', n as i64);
        } else {
            self.line(b'*', n as i64);
        }
    }

    /// A double: `,x` in RESP3, a bulk string in RESP2, formatted as Redis 7.0's
    /// addReplyDouble does (`%.17g`, so 1.1 is `1.1000000000000001`; `inf`, `-inf`).
    pub fn double(&mut self, d: f64) {
        let s = crate::scripting::fmt::fmt_g(d, 17);
        if self.resp3 {
            self.buf.put_u8(b',');
            self.buf.put_slice(s.as_bytes());
            self.buf.put_slice(b"\r\n");
        } else {
            self.bulk(s.as_bytes());
        }
    }

    /// A verbatim string (`=len\r\ntxt:...`) in RESP3, a bulk string in RESP2 (INFO).
    pub fn verbatim(&mut self, text: &[u8]) {
        if self.resp3 {
            self.line(b'=', text.len() as i64 + 4);
            self.buf.put_slice(b"txt:");
            self.buf.put_slice(text);
            self.buf.put_slice(b"\r\n");
        } else {
            self.bulk(text);
        }
    }

    pub fn bulk_str(&mut self, s: &str) {
        self.bulk(s.as_bytes());
    }
}

impl Default for Out {
    fn default() -> Self {
        Self::new()
    }
}

/// Formats a double the way Redis replies to RESP3 doubles: `inf`, `-inf`, `nan`,
/// otherwise the shortest representation that reads back to the same value.
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        "nan".into()
    } else if d.is_infinite() {
        if d > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        let mut b = ryu::Buffer::new();
        let s = b.format(d);
        s.strip_suffix(".0").unwrap_or(s).to_string()
    }
}

/// Encodes a command as a RESP multibulk request (tests, tools).
pub fn encode_request(args: &[&[u8]], out: &mut Vec<u8>) {
    out.push(b'*');
    out.extend_from_slice(args.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in args {
        out.push(b'$');
        out.extend_from_slice(a.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Parses every whole command in `buf`, returning them and the bytes consumed.
    type Commands = Vec<Vec<Vec<u8>>>;

    fn parse_all(p: &mut Parser, buf: &[u8]) -> Result<(Commands, usize), ProtocolError> {
        let mut cmds = Vec::new();
        let mut pos = 0;
        loop {
            match p.parse(&buf[pos..])? {
                Parsed::Command(n) => {
                    cmds.push(p.args(&buf[pos..]).to_vec());
                    pos += n;
                }
                Parsed::Incomplete => return Ok((cmds, pos)),
            }
        }
    }

    fn one(buf: &[u8]) -> Result<Vec<Vec<u8>>, ProtocolError> {
        let mut p = Parser::default();
        let (mut cmds, n) = parse_all(&mut p, buf)?;
        assert_eq!(n, buf.len(), "whole buffer consumed");
        assert_eq!(cmds.len(), 1);
        Ok(cmds.pop().unwrap())
    }

    fn v(args: &[&str]) -> Vec<Vec<u8>> {
        args.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn multibulk() {
        assert_eq!(
            one(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n").unwrap(),
            v(&["GET", "k"])
        );
        assert_eq!(one(b"*1\r\n$0\r\n\r\n").unwrap(), v(&[""]));
    }

    #[test]
    fn incomplete_consumes_nothing_then_completes() {
        let full = b"*2\r\n$3\r\nSET\r\n$5\r\nhello\r\n";
        let mut p = Parser::default();
        for cut in 0..full.len() {
            assert_eq!(
                p.parse(&full[..cut]).unwrap(),
                Parsed::Incomplete,
                "cut {cut}"
            );
        }
        assert_eq!(p.parse(full).unwrap(), Parsed::Command(full.len()));
        assert_eq!(p.args(full).to_vec(), v(&["SET", "hello"]));
    }

    #[test]
    fn bytes_needed_hint_for_big_bulk() {
        let mut p = Parser::default();
        let buf = b"*1\r\n$100000\r\nabc";
        assert_eq!(p.parse(buf).unwrap(), Parsed::Incomplete);
        assert_eq!(p.bytes_needed(), 4 + 9 + 100000 + 2);
    }

    #[test]
    fn empty_multibulk_and_blank_lines_are_skipped() {
        let mut p = Parser::default();
        let buf = b"*0\r\n*-1\r\n\r\n\n*1\r\n$4\r\nPING\r\n";
        let (cmds, n) = parse_all(&mut p, buf).unwrap();
        assert_eq!(cmds, vec![v(&["PING"])]);
        assert_eq!(n, buf.len());
    }

    #[test]
    fn inline_commands() {
        assert_eq!(one(b"PING\r\n").unwrap(), v(&["PING"]));
        assert_eq!(one(b"set  a   b\n").unwrap(), v(&["set", "a", "b"]));
        assert_eq!(
            one(b"set \"a b\" 'c d'\r\n").unwrap(),
            v(&["set", "a b", "c d"])
        );
        assert_eq!(
            one(b"echo \"\\x41\\n\\\"\"\r\n").unwrap(),
            vec![b"echo".to_vec(), b"A\n\"".to_vec()]
        );
        assert_eq!(one(b"echo 'it\\'s'\r\n").unwrap(), v(&["echo", "it's"]));
        assert_eq!(one(b"echo \"\"\r\n").unwrap(), v(&["echo", ""]));
        assert_eq!(one(b"a\"b c\"\r\n").unwrap(), v(&["ab c"]));
    }

    #[test]
    fn inline_unbalanced_quotes() {
        assert_eq!(one(b"set \"a b\r\n"), Err(ProtocolError::UnbalancedQuotes));
        assert_eq!(one(b"set 'a\r\n"), Err(ProtocolError::UnbalancedQuotes));
        assert_eq!(one(b"set \"a\"b\r\n"), Err(ProtocolError::UnbalancedQuotes));
    }

    #[test]
    fn errors_have_redis_wording() {
        let e = |b: &[u8]| {
            let mut p = Parser::default();
            parse_all(&mut p, b).unwrap_err().reply()
        };
        assert_eq!(e(b"*x\r\n"), "ERR Protocol error: invalid multibulk length");
        assert_eq!(
            e(b"*3000000000\r\n"),
            "ERR Protocol error: invalid multibulk length"
        );
        assert_eq!(
            e(b"*1\r\n$-1\r\n"),
            "ERR Protocol error: invalid bulk length"
        );
        assert_eq!(
            e(b"*1\r\n$abc\r\n"),
            "ERR Protocol error: invalid bulk length"
        );
        assert_eq!(
            e(b"*1\r\n:3\r\n"),
            "ERR Protocol error: expected '$', got ':'"
        );
        assert_eq!(
            e(&[b'x'; INLINE_MAX_SIZE + 1]),
            "ERR Protocol error: too big inline request"
        );
        let mut big = b"*".to_vec();
        big.extend(std::iter::repeat_n(b'1', INLINE_MAX_SIZE + 1));
        assert_eq!(e(&big), "ERR Protocol error: too big mbulk count string");
        let mut big = b"*1\r\n$".to_vec();
        big.extend(std::iter::repeat_n(b'1', INLINE_MAX_SIZE + 1));
        assert_eq!(e(&big), "ERR Protocol error: too big bulk count string");
    }

    #[test]
    fn max_bulk_len_enforced() {
        let mut p = Parser::new(10);
        assert!(parse_all(&mut p, b"*1\r\n$10\r\n0123456789\r\n").is_ok());
        let mut p = Parser::new(10);
        assert_eq!(
            parse_all(&mut p, b"*1\r\n$11\r\n").unwrap_err(),
            ProtocolError::InvalidBulkLength
        );
    }

    #[test]
    fn unauthenticated_limits() {
        let mut p = Parser::default();
        p.set_auth_required(true);
        assert_eq!(
            parse_all(&mut p, b"*11\r\n").unwrap_err(),
            ProtocolError::UnauthenticatedMultibulkLength
        );
        let mut p = Parser::default();
        p.set_auth_required(true);
        assert_eq!(
            parse_all(&mut p, b"*1\r\n$16385\r\n").unwrap_err(),
            ProtocolError::UnauthenticatedBulkLength
        );
    }

    #[test]
    fn parse_i64_like_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-5"), Some(-5));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        for bad in [&b""[..], b"-", b"01", b"+1", b" 1", b"1 ", b"-0", b"1.0"] {
            assert_eq!(parse_i64(bad), None, "{:?}", bad);
        }
    }

    #[test]
    fn encoder_resp2_and_resp3() {
        let mut o = Out::new();
        o.null();
        o.map(1);
        o.double(1.5);
        o.int(-3);
        o.error("ERR a\r\nb");
        assert_eq!(
            &o.buf[..],
            b"$-1\r\n*2\r\n$3\r\n1.5\r\n:-3\r\n-ERR a  b\r\n"
        );
        let mut o = Out::new();
        o.resp3 = true;
        o.null();
        o.map(1);
        o.double(3.0);
        o.verbatim(b"hi");
        assert_eq!(&o.buf[..], b"_\r\n%1\r\n,3\r\n=6\r\ntxt:hi\r\n");
    }

    proptest! {
        #[test]
        fn roundtrip_multibulk(args in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..8)) {
            let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
            let mut buf = Vec::new();
            encode_request(&refs, &mut buf);
            prop_assert_eq!(one(&buf).unwrap(), args);
        }

        #[test]
        fn arbitrary_splits_parse_the_same(
            cmds in proptest::collection::vec(proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 1..5), 1..6),
            cuts in proptest::collection::vec(any::<usize>(), 0..10),
        ) {
            let mut stream = Vec::new();
            for c in &cmds {
                let refs: Vec<&[u8]> = c.iter().map(|a| a.as_slice()).collect();
                encode_request(&refs, &mut stream);
            }
            stream.extend_from_slice(b"ping \"a b\"\r\n");
            let mut expected = cmds.clone();
            expected.push(v(&["ping", "a b"]));
            // Feed the stream in arbitrary pieces, as reads would deliver it.
            let mut cut_points: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
            cut_points.push(stream.len());
            cut_points.sort_unstable();
            let mut p = Parser::default();
            let mut got = Vec::new();
            let mut start = 0;
            for end in cut_points {
                let (cmds, n) = parse_all(&mut p, &stream[start..end]).unwrap();
                got.extend(cmds);
                start += n;
            }
            prop_assert_eq!(start, stream.len());
            prop_assert_eq!(got, expected);
        }

        /// The fast length line agrees with the general path (memchr for the `\r`,
        /// `parse_i64` of what precedes it, one byte after it) wherever it answers, and
        /// answers for every canonical count up to 18 digits.
        #[test]
        fn length_line_agrees_with_the_general_path(
            line in proptest::collection::vec(prop_oneof![
                8 => proptest::char::range('0', '9').prop_map(|c| c as u8),
                1 => Just(b'\r'),
                1 => Just(b'\n'),
                1 => Just(b'-'),
                1 => any::<u8>(),
            ], 0..24),
            n in 0u64..1_000_000_000_000_000_000,
        ) {
            if let Some((v, used)) = length_line(&line) {
                let cr = line.iter().position(|&b| b == b'\r').unwrap();
                prop_assert_eq!(used, cr + 2);
                prop_assert!(cr + 1 < line.len());
                prop_assert_eq!(parse_i64(&line[..cr]), Some(v as i64));
            }
            let canonical = format!("{n}\r\n");
            prop_assert_eq!(length_line(canonical.as_bytes()), Some((n as usize, canonical.len())));
        }

        /// `peek_key` agrees with the parser on well-formed multibulk streams: the same
        /// lengths, command after command, and the second argument's bytes.
        #[test]
        fn peek_key_agrees_with_the_parser(
            cmds in proptest::collection::vec(proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 1..5), 1..6),
            cut in any::<usize>(),
        ) {
            let mut stream = Vec::new();
            for c in &cmds {
                let refs: Vec<&[u8]> = c.iter().map(|a| a.as_slice()).collect();
                encode_request(&refs, &mut stream);
            }
            let mut at = 0;
            for c in &cmds {
                let (key, len) = peek_key(&stream[at..]).expect("a complete command");
                prop_assert_eq!(key.map(|k| stream[at + k.start..at + k.end].to_vec()), c.get(1).cloned());
                let mut p = Parser::default();
                prop_assert_eq!(p.parse(&stream[at..]).unwrap(), Parsed::Command(len));
                at += len;
            }
            prop_assert_eq!(at, stream.len());
            // A cut stream is never read past its end: the command that straddles the
            // cut is not reported.
            let end = cut % (stream.len() + 1);
            let mut at = 0;
            while let Some((_, len)) = peek_key(&stream[at..end]) {
                at += len;
                prop_assert!(at <= end);
            }
        }

        #[test]
        fn peek_key_never_panics_on_garbage(parts in proptest::collection::vec(prop_oneof![
            Just(b"*".to_vec()), Just(b"$".to_vec()), Just(b"\r\n".to_vec()), Just(b"\r".to_vec()),
            Just(b"-1".to_vec()), Just(b"3".to_vec()), Just(b"99999999999999999999".to_vec()),
            proptest::collection::vec(any::<u8>(), 0..4),
        ], 0..60)) {
            let data: Vec<u8> = parts.concat();
            if let Some((key, len)) = peek_key(&data) {
                prop_assert!(len <= data.len());
                if let Some(k) = key {
                    prop_assert!(k.start <= k.end && k.end <= len);
                }
            }
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300), auth in any::<bool>()) {
            let mut p = Parser::new(1000);
            p.set_auth_required(auth);
            let _ = parse_all(&mut p, &data);
        }

        #[test]
        fn resp_like_garbage_never_panics(parts in proptest::collection::vec(prop_oneof![
            Just(b"*".to_vec()), Just(b"$".to_vec()), Just(b"\r\n".to_vec()), Just(b"\r".to_vec()),
            Just(b"-1".to_vec()), Just(b"3".to_vec()), Just(b"\"".to_vec()), Just(b"'".to_vec()),
            Just(b" ".to_vec()), Just(b"\\x4".to_vec()), proptest::collection::vec(any::<u8>(), 0..4),
        ], 0..60)) {
            let data: Vec<u8> = parts.concat();
            let mut p = Parser::new(1000);
            let _ = parse_all(&mut p, &data);
        }
    }
}
