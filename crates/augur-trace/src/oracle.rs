//! libCacheSim oracleGeneral traces: reader and writer.
//!
//! A record is 24 bytes, little-endian: `u32` timestamp, `u64` object id, `u32` object
//! size, `i64` next-access virtual time (the index of the next request for the same
//! object, `-1` if there is none). A file is a bare sequence of records.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, ErrorKind, Read, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::{Op, Request};

/// Bytes per oracleGeneral record.
pub const ORACLE_RECORD_SIZE: usize = 24;

/// Records decoded per refill of the reader's buffer.
const RECORDS_PER_CHUNK: usize = 16 * 1024;

/// One oracleGeneral record, with the next-access field that [`Request`] drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OracleRecord {
    /// Request time (seconds in most libCacheSim traces, or the request index).
    pub timestamp: u32,
    /// Object id.
    pub obj_id: u64,
    /// Object size in bytes.
    pub obj_size: u32,
    /// Index of the next request for `obj_id`, or -1.
    pub next_access_vtime: i64,
}

impl OracleRecord {
    fn decode(b: &[u8]) -> OracleRecord {
        // The slice is exactly 24 bytes; the conversions below cannot fail.
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[o..o + 8]);
            a
        };
        OracleRecord {
            timestamp: u32_at(0),
            obj_id: u64::from_le_bytes(u64_at(4)),
            obj_size: u32_at(12),
            next_access_vtime: i64::from_le_bytes(u64_at(16)),
        }
    }

    fn encode(&self) -> [u8; ORACLE_RECORD_SIZE] {
        let mut b = [0u8; ORACLE_RECORD_SIZE];
        b[0..4].copy_from_slice(&self.timestamp.to_le_bytes());
        b[4..12].copy_from_slice(&self.obj_id.to_le_bytes());
        b[12..16].copy_from_slice(&self.obj_size.to_le_bytes());
        b[16..24].copy_from_slice(&self.next_access_vtime.to_le_bytes());
        b
    }

    /// The record as a `Get` request.
    pub fn request(&self) -> Request {
        Request::get(u64::from(self.timestamp), self.obj_id, self.obj_size)
    }
}

/// Streaming oracleGeneral reader over any byte stream (decompress first; see
/// [`crate::open`] which does that automatically).
///
/// It decodes records from its own large buffer rather than calling `read_exact` per
/// record, which both avoids a dynamic call per request and lets it tell a clean EOF
/// (between records) from a truncated last record, which is reported as an error.
pub struct OracleReader<R> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    records: u64,
    eof: bool,
    failed: bool,
    name: String,
}

impl OracleReader<Box<dyn Read + Send>> {
    /// A reader of `content`, the whole (decompressed) trace held in memory: records are
    /// decoded where they lie, with no copy into a buffer of the reader's own.
    pub fn over(content: Vec<u8>) -> Self {
        let end = content.len();
        OracleReader {
            inner: Box::new(std::io::empty()),
            buf: content,
            pos: 0,
            end,
            records: 0,
            eof: true,
            failed: false,
            name: "<memory>".into(),
        }
    }
}

impl<R: Read> OracleReader<R> {
    /// Wraps a (decompressed) oracleGeneral byte stream.
    pub fn new(inner: R) -> Self {
        OracleReader {
            inner,
            buf: vec![0; RECORDS_PER_CHUNK * ORACLE_RECORD_SIZE],
            pos: 0,
            end: 0,
            records: 0,
            eof: false,
            failed: false,
            name: "<stream>".into(),
        }
    }

    /// Names the stream in error messages (usually the file path).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Moves the unread tail to the front and reads until the buffer is full or EOF.
    fn refill(&mut self) -> std::io::Result<()> {
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        while self.end < self.buf.len() {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The next full record, `None` at a clean end, or an error (I/O, truncation).
    pub fn next_record(&mut self) -> Option<Result<OracleRecord>> {
        if self.failed {
            return None;
        }
        if self.end - self.pos < ORACLE_RECORD_SIZE && !self.eof {
            if let Err(e) = self.refill() {
                self.failed = true;
                return Some(Err(anyhow::Error::new(e).context(format!(
                    "reading {} after record {}",
                    self.name, self.records
                ))));
            }
        }
        let avail = self.end - self.pos;
        if avail >= ORACLE_RECORD_SIZE {
            let rec = OracleRecord::decode(&self.buf[self.pos..self.pos + ORACLE_RECORD_SIZE]);
            self.pos += ORACLE_RECORD_SIZE;
            self.records += 1;
            Some(Ok(rec))
        } else if avail == 0 {
            None
        } else {
            self.failed = true;
            Some(Err(anyhow::anyhow!(
                "{}: truncated oracleGeneral record at the end: {} trailing bytes after {} complete records \
                 (records are {} bytes)",
                self.name,
                avail,
                self.records,
                ORACLE_RECORD_SIZE
            )))
        }
    }

    /// Appends up to `max` requests to `out`, each converted by `f` as it is decoded (a
    /// caller that wants another form writes it once, not a `Request` and then its own),
    /// and returns how many: 0 only at a clean end. Decodes every whole record the buffer
    /// holds in one loop (the per-record iterator re-checked the buffer and built a
    /// `Result` for each: ~40 instructions a record beside the decoding). Errors as
    /// [`OracleReader::next_record`].
    pub fn read_batch_with<T>(
        &mut self,
        out: &mut Vec<T>,
        max: usize,
        mut f: impl FnMut(Request) -> T,
    ) -> Result<usize> {
        let start = out.len();
        while out.len() - start < max {
            let whole = (self.end - self.pos) / ORACLE_RECORD_SIZE;
            if whole == 0 {
                // One record through the checked path: refills, and tells a clean end
                // from a truncated record.
                match self.next_record() {
                    Some(Ok(rec)) => out.push(f(rec.request())),
                    Some(Err(e)) => return Err(e),
                    None => break,
                }
                continue;
            }
            let take = whole.min(max - (out.len() - start));
            let bytes = &self.buf[self.pos..self.pos + take * ORACLE_RECORD_SIZE];
            out.extend(
                bytes
                    .chunks_exact(ORACLE_RECORD_SIZE)
                    .map(|b| f(OracleRecord::decode(b).request())),
            );
            self.pos += take * ORACLE_RECORD_SIZE;
            self.records += take as u64;
        }
        Ok(out.len() - start)
    }
}

impl<R: Read> Iterator for OracleReader<R> {
    type Item = Result<Request>;
    fn next(&mut self) -> Option<Result<Request>> {
        self.next_record().map(|r| r.map(|rec| rec.request()))
    }
}

/// For each request, the index of the next request with the same key, or -1: the
/// oracleGeneral `next_access_vtime` field. One backward pass with a hash map.
pub fn next_access_vtimes(reqs: &[Request]) -> Vec<i64> {
    let mut next = vec![-1i64; reqs.len()];
    let mut seen: HashMap<u64, i64> = HashMap::with_capacity(reqs.len() / 4 + 16);
    for (i, r) in reqs.iter().enumerate().rev() {
        if let Some(j) = seen.insert(r.key, i as i64) {
            next[i] = j;
        }
    }
    next
}

/// Writes `reqs` as oracleGeneral records to `w`, computing `next_access_vtime`.
///
/// oracleGeneral cannot represent operations other than `Get` nor times above
/// `u32::MAX`; such requests are an error rather than being silently changed.
pub fn write_oracle_general<W: Write>(mut w: W, reqs: &[Request]) -> Result<()> {
    let next = next_access_vtimes(reqs);
    for (i, (r, &n)) in reqs.iter().zip(&next).enumerate() {
        if r.op != Op::Get {
            bail!(
                "request {i} is a {}; oracleGeneral can only hold gets",
                r.op
            );
        }
        let Ok(timestamp) = u32::try_from(r.time) else {
            bail!(
                "request {i} has time {} which does not fit oracleGeneral's u32 timestamp",
                r.time
            );
        };
        let rec = OracleRecord {
            timestamp,
            obj_id: r.key,
            obj_size: r.size,
            next_access_vtime: n,
        };
        w.write_all(&rec.encode())?;
    }
    w.flush()?;
    Ok(())
}

/// Writes `reqs` to the file `path` as oracleGeneral, zstd-compressed (level 3) if
/// the name ends in `.zst`.
pub fn write_oracle_general_file(path: impl AsRef<Path>, reqs: &[Request]) -> Result<()> {
    let path = path.as_ref();
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let out = BufWriter::with_capacity(1 << 20, file);
    let res = if path.to_string_lossy().ends_with(".zst") {
        let mut enc = zstd::stream::write::Encoder::new(out, 3)?;
        write_oracle_general(&mut enc, reqs).and_then(|()| {
            enc.finish()?.flush()?;
            Ok(())
        })
    } else {
        write_oracle_general(out, reqs)
    };
    res.with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of(recs: &[OracleRecord]) -> Vec<u8> {
        recs.iter().flat_map(|r| r.encode()).collect()
    }

    /// A reader that hands out at most `chunk` bytes per call, to exercise refills
    /// that split records.
    struct Dribble<'a> {
        data: &'a [u8],
        chunk: usize,
    }
    impl Read for Dribble<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.chunk.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn decodes_fields_little_endian() {
        let mut b = vec![];
        b.extend_from_slice(&7u32.to_le_bytes());
        b.extend_from_slice(&0x0102_0304_0506_0708u64.to_le_bytes());
        b.extend_from_slice(&4096u32.to_le_bytes());
        b.extend_from_slice(&(-1i64).to_le_bytes());
        let mut r = OracleReader::new(&b[..]);
        let rec = r.next_record().unwrap().unwrap();
        assert_eq!(
            rec,
            OracleRecord {
                timestamp: 7,
                obj_id: 0x0102_0304_0506_0708,
                obj_size: 4096,
                next_access_vtime: -1
            }
        );
        assert!(r.next_record().is_none());
    }

    #[test]
    fn truncated_record_is_an_error_not_a_panic() {
        let recs: Vec<_> = (0..3)
            .map(|i| OracleRecord {
                timestamp: i,
                obj_id: u64::from(i),
                obj_size: 1,
                next_access_vtime: -1,
            })
            .collect();
        let mut b = bytes_of(&recs);
        b.truncate(b.len() - 5);
        let out: Vec<_> = OracleReader::new(Dribble { data: &b, chunk: 7 }).collect();
        assert_eq!(out.len(), 3);
        assert!(out[0].is_ok() && out[1].is_ok());
        let err = out[2].as_ref().unwrap_err().to_string();
        assert!(
            err.contains("truncated") && err.contains("19 trailing bytes"),
            "{err}"
        );
    }

    #[test]
    fn records_split_across_reads_decode_correctly() {
        let recs: Vec<_> = (0..1000u32)
            .map(|i| OracleRecord {
                timestamp: i,
                obj_id: u64::from(i % 17) << 40,
                obj_size: i * 3,
                next_access_vtime: i64::from(i) - 5,
            })
            .collect();
        let b = bytes_of(&recs);
        let got: Vec<_> = std::iter::from_fn({
            let mut r = OracleReader::new(Dribble {
                data: &b,
                chunk: 13,
            });
            move || r.next_record()
        })
        .collect::<Result<_>>()
        .unwrap();
        assert_eq!(got, recs);
    }

    /// Batches hold the iterator's requests in order, whatever the batch size and however
    /// the stream splits records (more records than one buffer, so refills happen
    /// mid-batch); a truncated last record is an error after the whole records.
    #[test]
    fn batches_equal_the_iterator_and_report_truncation() {
        let recs: Vec<_> = (0..40_000u32)
            .map(|i| OracleRecord {
                timestamp: i,
                obj_id: u64::from(i % 977) << 33 | u64::from(i),
                obj_size: i % 5000,
                next_access_vtime: -1,
            })
            .collect();
        let b = bytes_of(&recs);
        let want: Vec<Request> = recs.iter().map(OracleRecord::request).collect();
        for (max, chunk) in [
            (1, 24),
            (7, 13),
            (1000, 4096),
            (16 * 1024, 100_000),
            (50_000, 1 << 20),
        ] {
            let mut r = OracleReader::new(Dribble { data: &b, chunk });
            let mut got = Vec::new();
            loop {
                let n = r.read_batch_with(&mut got, max, |q| q).unwrap();
                assert!(n <= max);
                if n == 0 {
                    break;
                }
            }
            assert_eq!(got, want, "max {max}, chunk {chunk}");
        }
        let mut cut = b.clone();
        cut.truncate(b.len() - 5);
        let mut r = OracleReader::new(Dribble {
            data: &cut,
            chunk: 999,
        });
        let mut got = Vec::new();
        let err = loop {
            match r.read_batch_with(&mut got, 3000, |q| q) {
                Ok(0) => panic!("a truncated trace ended cleanly"),
                Ok(_) => {}
                Err(e) => break e.to_string(),
            }
        };
        // Every whole record before the cut was handed out.
        assert_eq!(got[..], want[..want.len() - 1]);
        assert!(
            err.contains("truncated") && err.contains("19 trailing bytes"),
            "{err}"
        );
    }

    #[test]
    fn next_access_vtimes_point_to_the_next_same_key() {
        let reqs: Vec<_> = [5u64, 6, 5, 7, 6, 5]
            .iter()
            .map(|&k| Request::get(0, k, 1))
            .collect();
        assert_eq!(next_access_vtimes(&reqs), vec![2, 4, 5, -1, -1, -1]);
    }

    #[test]
    fn writer_rejects_what_the_format_cannot_hold() {
        let mut out = vec![];
        let set = Request {
            time: 0,
            key: 1,
            size: 1,
            op: Op::Set,
        };
        assert!(write_oracle_general(&mut out, &[set]).is_err());
        let late = Request::get(u64::from(u32::MAX) + 1, 1, 1);
        assert!(write_oracle_general(&mut out, &[late]).is_err());
    }
}
