//! Trace formats, their textual specs, auto-detection and opening files.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::str::FromStr;

use anyhow::{anyhow, bail, Context, Result};

use crate::csvfmt::CsvReader;
use crate::oracle::{OracleReader, ORACLE_RECORD_SIZE};
use crate::text::TextReader;
use crate::{key_hash, Request};

/// The zstd frame magic number (RFC 8878 §3.1.1), as it appears on disk.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// How a key field of a text or CSV trace becomes a `u64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum KeyMode {
    /// A field of only decimal digits that fits in `u64` is used as the id itself
    /// (so numeric traces keep their ids, which eases debugging); anything else is
    /// hashed with [`key_hash`].
    #[default]
    Auto,
    /// The field must be a decimal `u64`; anything else is an error.
    Numeric,
    /// Always hash the field's bytes with [`key_hash`], even if it looks numeric.
    Hash,
}

impl KeyMode {
    /// Converts one key field. `Err` carries a message without location; callers add it.
    pub(crate) fn key_of(self, field: &[u8]) -> std::result::Result<u64, String> {
        match self {
            KeyMode::Hash => Ok(key_hash(field)),
            KeyMode::Auto => Ok(parse_u64_digits(field).unwrap_or_else(|| key_hash(field))),
            KeyMode::Numeric => parse_u64_digits(field).ok_or_else(|| {
                format!(
                    "key {:?} is not a decimal u64",
                    String::from_utf8_lossy(field)
                )
            }),
        }
    }
}

impl FromStr for KeyMode {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(KeyMode::Auto),
            "numeric" | "num" | "u64" => Ok(KeyMode::Numeric),
            "hash" | "string" | "str" => Ok(KeyMode::Hash),
            _ => bail!("unknown key mode {s:?} (expected auto, numeric or hash)"),
        }
    }
}

/// Parses a non-empty all-digit field as `u64`; `None` if it is anything else or overflows.
fn parse_u64_digits(field: &[u8]) -> Option<u64> {
    if field.is_empty() || !field.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &b in field {
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(v)
}

/// Column layout of a CSV trace.
///
/// Textual form (used by `FromStr` and on command lines): comma-separated items,
/// `key=I` (required), `size=I`, `op=I`, `time=I` (0-based column indices),
/// `header` (skip the first line), `delim=C` (a single character, or `tab`,
/// `space`, `comma`, `semicolon`, `pipe`), `default_size=N`, `keys=auto|numeric|hash`.
/// Example: `key=1,size=2,op=3,time=0,header`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvSpec {
    /// Column of the key.
    pub key_col: usize,
    /// Column of the object size; without it every request has `default_size`.
    pub size_col: Option<usize>,
    /// Column of the operation (`get`/`set`/`delete`, see [`crate::Op::parse`]);
    /// without it every request is a `Get`.
    pub op_col: Option<usize>,
    /// Column of the timestamp (integer, or a float that is truncated); without it
    /// the time is the request index.
    pub time_col: Option<usize>,
    /// Whether the first line is a header to skip.
    pub has_header: bool,
    /// Field delimiter byte.
    pub delimiter: u8,
    /// Size used when there is no size column or the field is empty.
    pub default_size: u32,
    /// How key fields become ids.
    pub key_mode: KeyMode,
}

impl Default for CsvSpec {
    fn default() -> Self {
        CsvSpec {
            key_col: 0,
            size_col: None,
            op_col: None,
            time_col: None,
            has_header: false,
            delimiter: b',',
            default_size: 1,
            key_mode: KeyMode::Auto,
        }
    }
}

fn parse_delim(v: &str) -> Result<u8> {
    Ok(match v.to_ascii_lowercase().as_str() {
        "tab" | "\\t" => b'\t',
        "space" => b' ',
        "comma" => b',',
        "semicolon" => b';',
        "pipe" => b'|',
        _ if v.len() == 1 && v.is_ascii() => v.as_bytes()[0],
        _ => bail!("delimiter {v:?} must be one ASCII character or tab/space/comma/semicolon/pipe"),
    })
}

impl FromStr for CsvSpec {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        let mut spec = CsvSpec::default();
        let mut saw_key = false;
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (name, value) = match item.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim())),
                None => (item, None),
            };
            let need = || value.ok_or_else(|| anyhow!("CSV spec item {name:?} needs a value"));
            let col = || -> Result<usize> {
                let v = need()?;
                v.parse()
                    .with_context(|| format!("CSV spec: column index {v:?} for {name:?}"))
            };
            match name.to_ascii_lowercase().as_str() {
                "key" => {
                    spec.key_col = col()?;
                    saw_key = true;
                }
                "size" => spec.size_col = Some(col()?),
                "op" => spec.op_col = Some(col()?),
                "time" => spec.time_col = Some(col()?),
                "header" => {
                    spec.has_header = match value {
                        None => true,
                        Some(v) => v
                            .parse()
                            .with_context(|| format!("CSV spec: header={v:?}"))?,
                    }
                }
                "delim" | "delimiter" | "sep" => spec.delimiter = parse_delim(need()?)?,
                "default_size" => {
                    let v = need()?;
                    spec.default_size = v
                        .parse()
                        .with_context(|| format!("CSV spec: default_size={v:?}"))?;
                }
                "keys" => spec.key_mode = need()?.parse()?,
                other => bail!("unknown CSV spec item {other:?}"),
            }
        }
        if !saw_key && !s.trim().is_empty() {
            // An explicit spec without `key=` is almost certainly a mistake; an empty
            // spec means "all defaults" (key in column 0).
            bail!("CSV spec {s:?} has no key=COLUMN");
        }
        Ok(spec)
    }
}

/// Layout of a plain-text trace: one key per line. Blank lines and lines starting
/// with `#` are skipped; surrounding whitespace is trimmed. The time of a request is
/// its index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextSpec {
    /// Size of every object.
    pub default_size: u32,
    /// How key lines become ids.
    pub key_mode: KeyMode,
}

impl Default for TextSpec {
    fn default() -> Self {
        TextSpec {
            default_size: 1,
            key_mode: KeyMode::Auto,
        }
    }
}

impl FromStr for TextSpec {
    type Err = anyhow::Error;
    /// `size=N` (or `default_size=N`) and `keys=auto|numeric|hash`, comma-separated.
    fn from_str(s: &str) -> Result<Self> {
        let mut spec = TextSpec::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (name, v) = item
                .split_once('=')
                .ok_or_else(|| anyhow!("text spec item {item:?} must be NAME=VALUE"))?;
            match name.trim() {
                "size" | "default_size" => {
                    spec.default_size = v
                        .trim()
                        .parse()
                        .with_context(|| format!("text spec: size={v:?}"))?
                }
                "keys" => spec.key_mode = v.trim().parse()?,
                other => bail!("unknown text spec item {other:?}"),
            }
        }
        Ok(spec)
    }
}

/// The on-disk format of a trace (compression is handled separately and automatically).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// libCacheSim oracleGeneral: 24-byte little-endian records.
    OracleGeneral,
    /// Delimited text with the given column layout.
    Csv(CsvSpec),
    /// One key per line.
    Text(TextSpec),
}

impl TraceFormat {
    /// Chooses a format from the file name, ignoring a trailing `.zst`/`.zstd`:
    /// `*.oracleGeneral*` or `*.bin` → oracleGeneral; `*.csv` → CSV with the default
    /// spec (key in column 0); `*.tsv` → the same with tab delimiter; `*.txt`,
    /// `*.trace`, `*.keys` → text. Anything else is an error naming the options, rather
    /// than a guess that silently misreads the file.
    pub fn detect(path: &Path) -> Result<TraceFormat> {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| {
                anyhow!(
                    "cannot detect the format of {}: no UTF-8 file name",
                    path.display()
                )
            })?
            .to_ascii_lowercase();
        let base = name
            .strip_suffix(".zst")
            .or_else(|| name.strip_suffix(".zstd"))
            .unwrap_or(&name);
        if base.contains("oraclegeneral") || base.ends_with(".bin") {
            Ok(TraceFormat::OracleGeneral)
        } else if base.ends_with(".csv") {
            Ok(TraceFormat::Csv(CsvSpec::default()))
        } else if base.ends_with(".tsv") {
            Ok(TraceFormat::Csv(CsvSpec {
                delimiter: b'\t',
                ..CsvSpec::default()
            }))
        } else if base.ends_with(".txt") || base.ends_with(".trace") || base.ends_with(".keys") {
            Ok(TraceFormat::Text(TextSpec::default()))
        } else {
            bail!(
                "cannot detect the trace format of {} from its name; expected *.oracleGeneral[.bin][.zst], \
                 *.bin, *.csv, *.tsv, *.txt (optionally .zst), or pass the format explicitly",
                path.display()
            )
        }
    }
}

impl FromStr for TraceFormat {
    type Err = anyhow::Error;
    /// `oracle` / `oracleGeneral`, `csv` or `csv:SPEC` (see [`CsvSpec`]), `txt` /
    /// `text` or `txt:SPEC` (see [`TextSpec`]). Example: `csv:key=1,size=2,header`.
    fn from_str(s: &str) -> Result<Self> {
        let (kind, rest) = match s.split_once(':') {
            Some((k, r)) => (k, r),
            None => (s, ""),
        };
        match kind.trim().to_ascii_lowercase().as_str() {
            "oracle" | "oraclegeneral" => {
                if !rest.trim().is_empty() {
                    bail!("oracleGeneral takes no options, got {rest:?}");
                }
                Ok(TraceFormat::OracleGeneral)
            }
            "csv" => Ok(TraceFormat::Csv(rest.parse()?)),
            "tsv" => {
                let mut spec: CsvSpec = rest.parse()?;
                spec.delimiter = b'\t';
                Ok(TraceFormat::Csv(spec))
            }
            "txt" | "text" => Ok(TraceFormat::Text(rest.parse()?)),
            other => bail!("unknown trace format {other:?} (expected oracle, csv[:SPEC], tsv[:SPEC], txt[:SPEC])"),
        }
    }
}

/// A boxed byte stream: a file, or the zstd decoder over it.
pub(crate) type Input = Box<dyn Read + Send>;

/// An opened trace file: its bytes, decompressed, when they are small enough to hold,
/// or a stream of them.
enum Opened {
    /// The whole (decompressed) content.
    Whole(Vec<u8>),
    /// A stream, and the decompressed length when it is known without reading: the
    /// file's length, or for zstd the first frame's content size (the `zstd` tool
    /// records it when it compresses a file; a stream compressed from a pipe has none).
    Stream(Input, Option<u64>),
}

/// A zstd trace is decompressed in one call, and its records decoded where they lie,
/// when its file is at most this large ...
const WHOLE_FILE_MAX: u64 = 16 << 20;
/// ... and it is one single-segment frame declaring at most this much content. A
/// single-segment frame (RFC 8878 §3.1.1.1.2: what the `zstd` tool writes when the
/// content fits its window) makes a streaming decoder hold a window of the whole content
/// anyway; decompressing in one call instead saves the copy out of that window and the
/// reader's own buffer, i.e. fresh pages, each ~2 us to fault in on the VMs we measure
/// on, and on a short trace they weigh (lirs_sprite, 134k records: open and decode 6.6 ->
/// 6.1 ms). A frame with a smaller window (arc_oltp's 21 MB in an 8 MB window) streams:
/// holding it whole faulted in 2.3x the pages and ran slower.
const WHOLE_CONTENT_MAX: u64 = 64 << 20;

/// The largest zstd frame header: magic number (4), descriptor (1), window descriptor
/// (1), dictionary id (4) and content size (8) (RFC 8878 §3.1.1).
const ZSTD_FRAME_HEADER_MAX: u64 = 18;

/// Opens `path`, transparently decompressing zstd (recognised by its magic number).
fn open_input(path: &Path) -> Result<Opened> {
    let mut file = File::open(path).with_context(|| format!("opening trace {}", path.display()))?;
    let mut head = Vec::with_capacity(ZSTD_FRAME_HEADER_MAX as usize);
    (&mut file)
        .take(ZSTD_FRAME_HEADER_MAX)
        .read_to_end(&mut head)
        .with_context(|| format!("reading {}", path.display()))?;
    let file_len = file.metadata().ok().map(|m| m.len());
    let zstd = head.len() >= 5 && head[..4] == ZSTD_MAGIC;
    let content = if zstd {
        zstd::zstd_safe::get_frame_content_size(&head)
            .ok()
            .flatten()
    } else {
        None
    };
    // Frame_Header_Descriptor bit 5: Single_Segment_flag.
    let whole = content.filter(|&n| {
        head[4] & 0x20 != 0
            && n <= WHOLE_CONTENT_MAX
            && file_len.is_some_and(|len| len <= WHOLE_FILE_MAX)
    });
    if let Some(total) = whole {
        let total = total as usize;
        let file_len = file_len.unwrap_or(0) as usize;
        let reading = || format!("reading {}", path.display());
        // A file longer than zstd's in-place margin is read into the end of the buffer
        // its content will fill ([`decompress_in_place`]): its bytes then take no pages
        // of their own. A shorter one would lie in the margin anyway: it gets a buffer
        // of its own. The buffer is zeroed by the allocator, so pages nothing writes
        // are never faulted in.
        let margin = in_place_margin(total);
        let room = if file_len > margin && file_len <= total + margin {
            total + margin
        } else {
            file_len
        };
        let mut buf = vec![0u8; room];
        prefault(&mut buf);
        let start = room - file_len;
        buf.truncate(start);
        buf.extend_from_slice(&head);
        (&mut file)
            .take(file_len.saturating_sub(head.len()) as u64)
            .read_to_end(&mut buf)
            .with_context(reading)?;
        // What the file gained since its length was read, if it did.
        let mut grown = Vec::new();
        file.read_to_end(&mut grown).with_context(reading)?;
        if start > 0
            && grown.is_empty()
            && decompress_in_place(&mut buf, start, total)
                .with_context(|| format!("decompressing {}", path.display()))?
        {
            return Ok(Opened::Whole(buf));
        }
        buf.drain(..start);
        buf.extend_from_slice(&grown);
        let bytes = buf;
        if zstd::zstd_safe::find_frame_compressed_size(&bytes) == Ok(bytes.len()) {
            let content = zstd::bulk::decompress(&bytes, total)
                .with_context(|| format!("decompressing {}", path.display()))?;
            return Ok(Opened::Whole(content));
        }
        // Several frames, or a frame cut short: streamed (and a cut is reported where it
        // is met, after the requests before it).
        let dec = zstd::stream::read::Decoder::new(std::io::Cursor::new(bytes))
            .with_context(|| format!("starting zstd decoder for {}", path.display()))?;
        return Ok(Opened::Stream(Box::new(dec), content));
    }
    let rest = BufReader::with_capacity(1 << 20, std::io::Cursor::new(head).chain(file));
    if zstd {
        let dec = zstd::stream::read::Decoder::with_buffer(rest)
            .with_context(|| format!("starting zstd decoder for {}", path.display()))?;
        return Ok(Opened::Stream(Box::new(dec), content));
    }
    let name = path.to_string_lossy();
    if name.ends_with(".zst") || name.ends_with(".zstd") {
        bail!(
            "{} is named like a zstd file but has no zstd magic number",
            path.display()
        );
    }
    Ok(Opened::Stream(Box::new(rest), file_len))
}

/// Faults in the pages of a fresh, zeroed buffer that is about to be written whole, in
/// one call (Linux's `MADV_POPULATE_WRITE`, 5.14+) instead of one page fault per 4 KiB
/// page as it is written: on the VMs we measure on a fault costs ~2 us, and populating
/// ~1 us a page less (217 KB: 137 -> 80 us; 3.2 MB: 2.2 -> 1.2-1.7 ms, measured alone).
/// The contents are unchanged (the pages are populated, not written). Where the call
/// is not supported it fails and the pages fault in as they are written, as before.
fn prefault(buf: &mut [u8]) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let addr = buf.as_mut_ptr() as usize;
        let first = addr.next_multiple_of(PAGE);
        let end = (addr + buf.len()) & !(PAGE - 1);
        if end > first {
            // SAFETY: the range lies within `buf`, which this function borrows mutably;
            // MADV_POPULATE_WRITE only maps the pages, leaving their contents as they are.
            unsafe {
                libc::madvise(
                    first as *mut libc::c_void,
                    end - first,
                    libc::MADV_POPULATE_WRITE,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

/// The room past the content left for in-place decompression of a single frame:
/// `ZSTD_DECOMPRESSION_MARGIN(content, ZSTD_BLOCKSIZE_MAX)` (zstd.h; the frame header,
/// the checksum, 3 bytes per full-size block and one block) plus 4 KiB, since zstd's
/// block splitter cuts blocks short (3 bytes more per extra block: the shared LIRS
/// traces need 5 to 416 bytes past the formula). [`decompress_in_place`] checks the
/// frame's real margin against it.
fn in_place_margin(content: usize) -> usize {
    const BLOCK_SIZE_MAX: usize = 128 << 10;
    const SPLIT_BLOCKS_ALLOWANCE: usize = 4 << 10;
    ZSTD_FRAME_HEADER_MAX as usize
        + 4
        + 3 * content.div_ceil(BLOCK_SIZE_MAX)
        + BLOCK_SIZE_MAX
        + SPLIT_BLOCKS_ALLOWANCE
}

/// Decompresses the single zstd frame in `buf[start..]` into `buf[..content]`, in place
/// (zstd.h, `ZSTD_decompressionMargin`: the output may overlap the input when the input
/// ends the buffer and the buffer passes the content by the frame's margin), leaving
/// `buf` the content. Why: the compressed bytes then occupy pages the content fills
/// anyway; read into a buffer of their own they were fresh pages, each ~2 us to fault in
/// on the VMs we measure on (lirs_sprite: 158 of them, ~0.3 ms of a ~9 ms run). Returns
/// false, leaving `buf` as it was for the caller to decompress another way, when
/// `buf[start..]` is not exactly one frame or its margin exceeds the room; an error if
/// the frame does not decompress to exactly `content` bytes.
fn decompress_in_place(buf: &mut Vec<u8>, start: usize, content: usize) -> Result<bool> {
    use zstd::zstd_safe::{self, zstd_sys};
    let input = &buf[start..];
    if zstd_safe::find_frame_compressed_size(input) != Ok(input.len()) {
        return Ok(false);
    }
    match zstd_safe::decompression_margin(input) {
        Ok(margin) if content.checked_add(margin).is_some_and(|n| n <= buf.len()) => {}
        _ => return Ok(false),
    }
    let input_len = input.len();
    let base = buf.as_mut_ptr();
    // SAFETY: both pointers are into `buf`, which outlives the call and is not otherwise
    // borrowed during it: the output is its first `content` bytes, the input its last
    // `input_len`; zstd supports this overlap when the buffer passes the content by the
    // frame's margin, checked above.
    let written = unsafe {
        zstd_sys::ZSTD_decompress(
            base.cast(),
            content,
            base.add(start).cast_const().cast(),
            input_len,
        )
    };
    if unsafe { zstd_sys::ZSTD_isError(written) } != 0 {
        bail!("{}", zstd_safe::get_error_name(written));
    }
    if written != content {
        bail!("the frame holds {written} bytes, its header says {content}");
    }
    buf.truncate(content);
    Ok(true)
}

impl Opened {
    /// The decompressed length, when known without reading.
    fn len(&self) -> Option<u64> {
        match self {
            Opened::Whole(content) => Some(content.len() as u64),
            Opened::Stream(_, len) => *len,
        }
    }

    /// The content as a byte stream (a reader that can decode in place asks first).
    fn into_input(self) -> Input {
        match self {
            Opened::Whole(content) => Box::new(std::io::Cursor::new(content)),
            Opened::Stream(input, _) => input,
        }
    }
}

enum Inner {
    Oracle(OracleReader<Input>),
    Csv(CsvReader<Input>),
    Text(TextReader<Input>),
}

/// A streaming reader of any supported trace: an iterator of `Result<Request>`.
///
/// After the first error (I/O error, malformed line, truncated record) it yields
/// `None`, so `collect::<Result<Vec<_>>>()` and `for r in reader { r?; }` both stop
/// at the first problem.
pub struct TraceReader {
    inner: Inner,
    len_hint: Option<u64>,
    held_whole: bool,
}

impl TraceReader {
    /// Number of requests, when it is known without reading the trace (oracleGeneral:
    /// the plain or zstd frame content length / 24). Meant for progress bars.
    pub fn len_hint(&self) -> Option<u64> {
        self.len_hint
    }

    /// Whether the file was read and decompressed whole at opening (a zstd file of at
    /// most 16 MiB holding one single-segment frame of at most 64 MiB), rather than
    /// streamed.
    pub fn held_whole(&self) -> bool {
        self.held_whole
    }
}

/// Requests per batch handed from the decoding thread to the consumer (1.5 MB: big
/// enough that the hand-off costs nothing per request, small enough to stay in L2/L3).
const BATCH: usize = 64 * 1024;

impl TraceReader {
    /// Reads the whole trace, decoding (zstd, parsing) on a thread of its own while `f`
    /// consumes batches of requests on this one, so the models run in parallel with the
    /// decoding instead of after it. Batches keep the trace's order. Stops at the first
    /// error, the reader's or `f`'s.
    pub fn for_each_batch(self, mut f: impl FnMut(&[Request]) -> Result<()>) -> Result<()> {
        use std::sync::mpsc::{sync_channel, TrySendError};
        // Two full batches in flight and their buffers recycled: the decoder stays at
        // most two batches ahead and nothing is allocated per batch after the first few.
        let (full_tx, full_rx) = sync_channel::<Result<Vec<Request>>>(2);
        let (empty_tx, empty_rx) = sync_channel::<Vec<Request>>(4);
        std::thread::scope(|scope| {
            scope.spawn(move || {
                let mut reader = self;
                loop {
                    let mut batch = empty_rx
                        .try_recv()
                        .unwrap_or_else(|_| Vec::with_capacity(BATCH));
                    batch.clear();
                    let mut error = None;
                    while batch.len() < BATCH {
                        let room = BATCH - batch.len();
                        match reader.read_batch_with(&mut batch, room, |r| r) {
                            Ok(0) => break,
                            Ok(_) => {}
                            Err(e) => {
                                error = Some(e);
                                break;
                            }
                        }
                    }
                    let last = batch.len() < BATCH || error.is_some();
                    if !batch.is_empty() && full_tx.send(Ok(batch)).is_err() {
                        return; // the consumer stopped
                    }
                    if let Some(e) = error {
                        let _ = full_tx.send(Err(e));
                        return;
                    }
                    if last {
                        return;
                    }
                }
            });
            for batch in full_rx {
                let batch = batch?;
                f(&batch)?;
                if let Err(TrySendError::Disconnected(_)) = empty_tx.try_send(batch) {
                    // The decoder has finished; nothing to recycle for.
                }
            }
            Ok(())
        })
    }

    /// Appends up to `max` requests to `out`, each converted by `f` as it is read, and
    /// returns how many (0 only at the end): the iterator's requests, in batches
    /// (oracleGeneral decodes a buffer's records in one loop). Stops at the first error,
    /// as the iterator does.
    pub fn read_batch_with<T>(
        &mut self,
        out: &mut Vec<T>,
        max: usize,
        mut f: impl FnMut(Request) -> T,
    ) -> Result<usize> {
        if let Inner::Oracle(r) = &mut self.inner {
            return r.read_batch_with(out, max, f);
        }
        let start = out.len();
        while out.len() - start < max {
            match self.next() {
                Some(r) => out.push(f(r?)),
                None => break,
            }
        }
        Ok(out.len() - start)
    }
}

impl Iterator for TraceReader {
    type Item = Result<Request>;
    fn next(&mut self) -> Option<Result<Request>> {
        match &mut self.inner {
            Inner::Oracle(r) => r.next(),
            Inner::Csv(r) => r.next(),
            Inner::Text(r) => r.next(),
        }
    }
}

/// Opens a trace in the given format (zstd or not, detected from the content).
pub fn open(path: impl AsRef<Path>, format: &TraceFormat) -> Result<TraceReader> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let opened = open_input(path)?;
    let held_whole = matches!(opened, Opened::Whole(_));
    let (inner, len_hint) = match format {
        TraceFormat::OracleGeneral => {
            let hint = opened.len().map(|b| b / ORACLE_RECORD_SIZE as u64);
            let reader = match opened {
                // Records are decoded where they lie, not copied into a reader's buffer.
                Opened::Whole(content) => OracleReader::over(content),
                stream => OracleReader::new(stream.into_input()),
            };
            (Inner::Oracle(reader.with_name(name)), hint)
        }
        TraceFormat::Csv(spec) => (
            Inner::Csv(CsvReader::new(opened.into_input(), spec.clone()).with_name(name)),
            None,
        ),
        TraceFormat::Text(spec) => (
            Inner::Text(TextReader::new(opened.into_input(), spec.clone()).with_name(name)),
            None,
        ),
    };
    Ok(TraceReader {
        inner,
        len_hint,
        held_whole,
    })
}

/// Opens a trace, choosing the format with [`TraceFormat::detect`].
pub fn open_auto(path: impl AsRef<Path>) -> Result<TraceReader> {
    let path = path.as_ref();
    open(path, &TraceFormat::detect(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `content` compressed into one frame with a checksum, and the buffer
    /// [`decompress_in_place`] takes: `room` bytes, the frame at its end.
    fn framed_at_end(content: &[u8], room: usize) -> (Vec<u8>, usize) {
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        enc.include_checksum(true).unwrap();
        enc.set_pledged_src_size(Some(content.len() as u64))
            .unwrap();
        std::io::Write::write_all(&mut enc, content).unwrap();
        let frame = enc.finish().unwrap();
        let mut buf = vec![0u8; room];
        let start = room - frame.len();
        buf[start..].copy_from_slice(&frame);
        (buf, start)
    }

    /// Records-like content that compresses about 3:1, so that the frame is longer than
    /// the margin and overlaps the content's own bytes in place.
    fn content(len: usize) -> Vec<u8> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        (0..len)
            .map(|i| {
                if i % 24 < 10 {
                    rng.gen_range(0..64)
                } else {
                    (i / 24 % 7) as u8
                }
            })
            .collect()
    }

    /// In place, the content comes out whole and exact; a buffer one byte short of the
    /// frame's margin, or input that is not exactly one frame, is declined (the caller
    /// then decompresses from a copy); a corrupted frame is an error.
    /// [`decompress_in_place`] on a buffer of its own: the content, or None when it
    /// declines, which must leave the buffer as it was (the caller decompresses it
    /// another way).
    fn in_place(mut buf: Vec<u8>, start: usize, content: usize) -> Result<Option<Vec<u8>>> {
        let before = buf.clone();
        if decompress_in_place(&mut buf, start, content)? {
            return Ok(Some(buf));
        }
        assert!(buf == before, "a declined buffer was changed");
        Ok(None)
    }

    #[test]
    fn prefaulting_leaves_a_buffer_as_it_was() {
        // Fresh zeroed pages (the use) and pages already written, unaligned at both ends.
        let mut fresh = vec![0u8; (1 << 20) + 123];
        prefault(&mut fresh[7..]);
        assert!(fresh.iter().all(|&b| b == 0));
        let mut written: Vec<u8> = (0..(1 << 20) + 4099).map(|i| (i * 7 % 251) as u8).collect();
        let before = written.clone();
        prefault(&mut written[1..]);
        assert_eq!(written, before);
    }

    #[test]
    fn decompresses_in_place_or_declines() {
        let data = content(600_000);
        let room = data.len() + in_place_margin(data.len());
        let (buf, start) = framed_at_end(&data, room);
        let frame_len = room - start;
        assert!(
            frame_len > in_place_margin(data.len()),
            "the frame overlaps the content"
        );
        let margin = zstd::zstd_safe::decompression_margin(&buf[start..]).unwrap();
        assert!(margin <= in_place_margin(data.len()), "margin {margin}");
        let out = in_place(buf.clone(), start, data.len()).unwrap();
        assert!(
            out.as_deref() == Some(&data[..]),
            "in-place content differs"
        );

        // One byte too little room for this frame's margin: declined.
        let (tight, start) = framed_at_end(&data, data.len() + margin - 1);
        assert!(in_place(tight, start, data.len()).unwrap().is_none());
        // Exactly its margin: done.
        let (exact, start) = framed_at_end(&data, data.len() + margin);
        let out = in_place(exact, start, data.len()).unwrap();
        assert!(out.as_deref() == Some(&data[..]));

        // Two frames, or one cut short: declined.
        let (mut two, start) = framed_at_end(&data, room);
        let frame = two[start..].to_vec();
        two.extend_from_slice(&frame);
        assert!(in_place(two, start, data.len()).unwrap().is_none());
        let (cut, start) = framed_at_end(&data, room);
        assert!(in_place(cut[..room - 10].to_vec(), start, data.len())
            .unwrap()
            .is_none());

        // A flipped byte: an error, never wrong content.
        let (mut bad, start) = framed_at_end(&data, room);
        bad[start + frame_len / 2] ^= 0x5a;
        assert!(in_place(bad, start, data.len()).is_err());
        // A header that promises more than the frame holds: an error.
        let (short, start) = framed_at_end(&data, room);
        assert!(in_place(short, start, data.len() + 1).is_err());
    }

    #[test]
    fn detects_formats_from_names() {
        let d = |s: &str| TraceFormat::detect(Path::new(s)).ok();
        assert_eq!(
            d("x/cpp.oracleGeneral.bin.zst"),
            Some(TraceFormat::OracleGeneral)
        );
        assert_eq!(d("a.oracleGeneral"), Some(TraceFormat::OracleGeneral));
        assert_eq!(d("a.bin"), Some(TraceFormat::OracleGeneral));
        assert_eq!(d("a.csv.zst"), Some(TraceFormat::Csv(CsvSpec::default())));
        assert!(matches!(
            d("a.tsv"),
            Some(TraceFormat::Csv(CsvSpec {
                delimiter: b'\t',
                ..
            }))
        ));
        assert_eq!(d("keys.txt"), Some(TraceFormat::Text(TextSpec::default())));
        assert_eq!(d("mystery.dat"), None);
    }

    #[test]
    fn parses_format_strings() {
        assert_eq!(
            "oracleGeneral".parse::<TraceFormat>().unwrap(),
            TraceFormat::OracleGeneral
        );
        let f: TraceFormat = "csv:key=1,size=2,op=3,time=0,header,delim=tab,keys=hash"
            .parse()
            .unwrap();
        assert_eq!(
            f,
            TraceFormat::Csv(CsvSpec {
                key_col: 1,
                size_col: Some(2),
                op_col: Some(3),
                time_col: Some(0),
                has_header: true,
                delimiter: b'\t',
                default_size: 1,
                key_mode: KeyMode::Hash,
            })
        );
        let t: TraceFormat = "txt:size=4096".parse().unwrap();
        assert_eq!(
            t,
            TraceFormat::Text(TextSpec {
                default_size: 4096,
                key_mode: KeyMode::Auto
            })
        );
        assert!(
            "csv:size=2".parse::<TraceFormat>().is_err(),
            "spec without key"
        );
        assert!("csv:key=x".parse::<TraceFormat>().is_err());
        assert!("csv:bogus=1,key=0".parse::<TraceFormat>().is_err());
        assert!("parquet".parse::<TraceFormat>().is_err());
    }

    #[test]
    fn key_modes() {
        assert_eq!(KeyMode::Auto.key_of(b"123"), Ok(123));
        assert_eq!(KeyMode::Auto.key_of(b"abc"), Ok(key_hash(b"abc")));
        // Overflowing digits fall back to hashing rather than wrapping.
        assert_eq!(
            KeyMode::Auto.key_of(b"99999999999999999999"),
            Ok(key_hash(b"99999999999999999999"))
        );
        assert_eq!(KeyMode::Hash.key_of(b"123"), Ok(key_hash(b"123")));
        assert!(KeyMode::Numeric.key_of(b"12a").is_err());
        assert!(KeyMode::Numeric.key_of(b"").is_err());
    }
}
