//! CSV (delimited text) traces, laid out by a [`CsvSpec`].

use std::io::Read;

use anyhow::{anyhow, Result};

use crate::format::CsvSpec;
use crate::{Op, Request};

/// Streaming CSV trace reader: an iterator of `Result<Request>` that stops after the
/// first error. Errors name the line (1-based, counting the header) and the column.
pub struct CsvReader<R> {
    rdr: csv::Reader<R>,
    spec: CsvSpec,
    record: csv::ByteRecord,
    index: u64,
    failed: bool,
    name: String,
}

impl<R: Read> CsvReader<R> {
    /// Wraps a (decompressed) CSV byte stream.
    pub fn new(inner: R, spec: CsvSpec) -> Self {
        let rdr = csv::ReaderBuilder::new()
            .has_headers(spec.has_header)
            .delimiter(spec.delimiter)
            // Traces often have trailing columns on some lines only; we index columns
            // explicitly, so ragged rows are fine as long as our columns exist.
            .flexible(true)
            .trim(csv::Trim::All)
            .comment(Some(b'#'))
            .from_reader(inner);
        CsvReader {
            rdr,
            spec,
            record: csv::ByteRecord::new(),
            index: 0,
            failed: false,
            name: "<stream>".into(),
        }
    }

    /// Names the stream in error messages (usually the file path).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    fn parse_current(&self) -> Result<Request, String> {
        let rec = &self.record;
        let field = |col: usize, what: &str| -> Result<&[u8], String> {
            rec.get(col).ok_or_else(|| {
                format!(
                    "no column {col} ({what}); the line has {} fields",
                    rec.len()
                )
            })
        };
        let text = |b: &[u8], what: &str| -> Result<String, String> {
            std::str::from_utf8(b)
                .map(str::to_owned)
                .map_err(|_| format!("{what} field is not UTF-8"))
        };
        let key = self
            .spec
            .key_mode
            .key_of(field(self.spec.key_col, "key")?)?;
        let size = match self.spec.size_col {
            None => self.spec.default_size,
            Some(c) => {
                let f = field(c, "size")?;
                if f.is_empty() {
                    self.spec.default_size
                } else {
                    let s = text(f, "size")?;
                    s.parse::<u32>()
                        .map_err(|_| format!("size {s:?} is not a u32"))?
                }
            }
        };
        let op = match self.spec.op_col {
            None => Op::Get,
            Some(c) => {
                let f = field(c, "op")?;
                if f.is_empty() {
                    Op::Get
                } else {
                    let s = text(f, "op")?;
                    Op::parse(&s).ok_or_else(|| {
                        format!("unknown operation {s:?} (expected get/set/delete)")
                    })?
                }
            }
        };
        let time = match self.spec.time_col {
            None => self.index,
            Some(c) => {
                let s = text(field(c, "time")?, "time")?;
                match s.parse::<u64>() {
                    Ok(t) => t,
                    Err(_) => match s.parse::<f64>() {
                        Ok(t) if t.is_finite() && t >= 0.0 => t as u64,
                        _ => return Err(format!("time {s:?} is not a non-negative number")),
                    },
                }
            }
        };
        Ok(Request {
            time,
            key,
            size,
            op,
        })
    }
}

impl<R: Read> Iterator for CsvReader<R> {
    type Item = Result<Request>;
    fn next(&mut self) -> Option<Result<Request>> {
        if self.failed {
            return None;
        }
        let res = match self.rdr.read_byte_record(&mut self.record) {
            Ok(false) => return None,
            Ok(true) => self.parse_current().map_err(|msg| {
                let line = self.record.position().map_or(0, |p| p.line());
                anyhow!("{} line {line}: {msg}", self.name)
            }),
            Err(e) => Err(anyhow::Error::new(e).context(format!("reading CSV {}", self.name))),
        };
        match res {
            Ok(r) => {
                self.index += 1;
                Some(Ok(r))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_hash;

    fn read(data: &str, spec: &str) -> Result<Vec<Request>> {
        CsvReader::new(data.as_bytes(), spec.parse().unwrap()).collect()
    }

    #[test]
    fn reads_columns_by_spec_with_header() {
        let data = "ts,key,size,op\n10,a,100,GET\n11,42,7,Set\n12,a,,delete\n";
        let got = read(data, "time=0,key=1,size=2,op=3,header").unwrap();
        assert_eq!(
            got,
            vec![
                Request {
                    time: 10,
                    key: key_hash(b"a"),
                    size: 100,
                    op: Op::Get
                },
                Request {
                    time: 11,
                    key: 42,
                    size: 7,
                    op: Op::Set
                },
                Request {
                    time: 12,
                    key: key_hash(b"a"),
                    size: 1,
                    op: Op::Delete
                },
            ]
        );
    }

    #[test]
    fn defaults_without_optional_columns() {
        let got = read("x;5\ny;6\n", "key=1,delim=;,default_size=64").unwrap();
        assert_eq!(got, vec![Request::get(0, 5, 64), Request::get(1, 6, 64)]);
    }

    #[test]
    fn float_times_are_truncated() {
        let got = read("1.75,3\n", "time=0,key=1").unwrap();
        assert_eq!(got[0].time, 1);
    }

    #[test]
    fn bad_input_is_an_error_with_the_line() {
        let err = read("1,a,10,get\n2,b,big,get\n3,c,1,get\n", "key=1,size=2,op=3")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2") && err.contains("big"), "{err}");
        let err = read("1,a,10,incr\n", "key=1,size=2,op=3")
            .unwrap_err()
            .to_string();
        assert!(err.contains("incr"), "{err}");
        let err = read("1,a\n", "key=1,size=2").unwrap_err().to_string();
        assert!(err.contains("no column 2"), "{err}");
        // The iterator stops after the first error.
        let n = CsvReader::new(
            "x\n1,a,oops\n1,b,2\n".as_bytes(),
            "key=1,size=2".parse().unwrap(),
        )
        .count();
        assert_eq!(n, 1);
    }
}
