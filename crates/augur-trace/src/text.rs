//! Plain-text traces: one key per line.

use std::io::{BufRead, BufReader, Read};

use anyhow::{anyhow, Result};

use crate::format::TextSpec;
use crate::{Op, Request};

/// Streaming text trace reader (see [`TextSpec`] for the rules). Stops after the
/// first error.
pub struct TextReader<R> {
    rdr: BufReader<R>,
    spec: TextSpec,
    line: Vec<u8>,
    line_no: u64,
    index: u64,
    failed: bool,
    name: String,
}

impl<R: Read> TextReader<R> {
    /// Wraps a (decompressed) text byte stream.
    pub fn new(inner: R, spec: TextSpec) -> Self {
        TextReader {
            rdr: BufReader::with_capacity(1 << 16, inner),
            spec,
            line: Vec::with_capacity(64),
            line_no: 0,
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
}

impl<R: Read> Iterator for TextReader<R> {
    type Item = Result<Request>;
    fn next(&mut self) -> Option<Result<Request>> {
        if self.failed {
            return None;
        }
        loop {
            self.line.clear();
            match self.rdr.read_until(b'\n', &mut self.line) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => {
                    self.failed = true;
                    return Some(Err(
                        anyhow::Error::new(e).context(format!("reading {}", self.name))
                    ));
                }
            }
            self.line_no += 1;
            let key = self.line.trim_ascii();
            if key.is_empty() || key.starts_with(b"#") {
                continue;
            }
            return match self.spec.key_mode.key_of(key) {
                Ok(key) => {
                    let r = Request {
                        time: self.index,
                        key,
                        size: self.spec.default_size,
                        op: Op::Get,
                    };
                    self.index += 1;
                    Some(Ok(r))
                }
                Err(msg) => {
                    self.failed = true;
                    Some(Err(anyhow!("{} line {}: {msg}", self.name, self.line_no)))
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{key_hash, KeyMode};

    #[test]
    fn one_key_per_line_skipping_blanks_and_comments() {
        let data = "# header comment\n17\n\n  user:9 \r\n17";
        let spec = TextSpec {
            default_size: 512,
            key_mode: KeyMode::Auto,
        };
        let got: Vec<_> = TextReader::new(data.as_bytes(), spec)
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(
            got,
            vec![
                Request::get(0, 17, 512),
                Request::get(1, key_hash(b"user:9"), 512),
                Request::get(2, 17, 512)
            ]
        );
    }

    #[test]
    fn numeric_mode_reports_the_line() {
        let spec = TextSpec {
            default_size: 1,
            key_mode: KeyMode::Numeric,
        };
        let got: Vec<_> = TextReader::new("1\n2\nthree\n4\n".as_bytes(), spec).collect();
        assert_eq!(got.len(), 3);
        let err = got[2].as_ref().unwrap_err().to_string();
        assert!(err.contains("line 3"), "{err}");
    }
}
