//! LZ4 block compression through the reference C library (liblz4 1.10, built and linked
//! by the `lz4-sys` crate), for the Z-zone's frames.
//!
//! Why not the pure-Rust `lz4_flex` the zone first used: every demotion rewrites a
//! block against the zone's dictionary, and `lz4_flex` re-hashes the whole dictionary
//! on every call (a third of its compress time) and zero-fills its output. A server
//! profile of the skewed replay (`bench/zone_speed.sh`) had LZ4 at 40 % of the zone's
//! extra CPU. liblz4 prepares a dictionary once ([`PreparedDict`]: `LZ4_loadDictSlow`
//! into its own 16 KB stream state) and attaches it to a per-thread working stream for
//! each block (`LZ4_attach_dictionary`, no copy), and decodes with
//! `LZ4_decompress_safe_usingDict`, its bounds-checked decoder (a corrupt payload is an
//! error, never a read or write outside the buffers), reading the dictionary in place.
//!
//! The block format is LZ4's, identical to what `lz4_flex` wrote, so the frame codes in
//! [`super::block`] did not change.

use lz4_sys::LZ4StreamEncode;
use std::cell::RefCell;
use std::os::raw::{c_char, c_int};
use std::sync::OnceLock;

extern "C" {
    // Declared in lz4.h (1.10, stable API); lz4-sys declares only part of it, but links
    // the whole library.
    fn LZ4_createStream() -> *mut LZ4StreamEncode;
    fn LZ4_freeStream(stream: *mut LZ4StreamEncode) -> c_int;
    fn LZ4_loadDictSlow(stream: *mut LZ4StreamEncode, dict: *const c_char, size: c_int) -> c_int;
    fn LZ4_resetStream_fast(stream: *mut LZ4StreamEncode);
    fn LZ4_attach_dictionary(working: *mut LZ4StreamEncode, dict: *const LZ4StreamEncode);
    fn LZ4_compress_fast_continue(
        stream: *mut LZ4StreamEncode,
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
        acceleration: c_int,
    ) -> c_int;
    fn LZ4_decompress_safe_usingDict(
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
        dict: *const c_char,
        dict_size: c_int,
    ) -> c_int;
}

/// Bytes of one LZ4 stream state (`sizeof(LZ4_stream_t)` in 1.10: 16 KB + 32).
pub const STREAM_BYTES: usize = 16416;

/// Largest input liblz4 takes (`LZ4_MAX_INPUT_SIZE`).
const MAX_INPUT: usize = 0x7E00_0000;

/// Worst-case compressed size of `n` bytes (`LZ4_COMPRESSBOUND`).
fn bound(n: usize) -> usize {
    n + n / 255 + 16
}

/// An owned liblz4 stream state.
struct Stream(*mut LZ4StreamEncode);

impl Stream {
    fn new() -> Option<Stream> {
        // SAFETY: LZ4_createStream allocates and initialises a state, or returns null.
        let p = unsafe { LZ4_createStream() };
        (!p.is_null()).then_some(Stream(p))
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the pointer came from LZ4_createStream and is freed once.
        unsafe { LZ4_freeStream(self.0) };
    }
}

/// A dictionary with liblz4's prepared state for it: loaded (`LZ4_loadDictSlow`) on the
/// first LZ4 compression against it, then attached read-only to a working stream for
/// every block (zstd zones never pay for the state).
pub struct PreparedDict {
    bytes: Box<[u8]>,
    state: OnceLock<Option<LoadedDict>>,
}

/// A stream state holding a loaded dictionary.
struct LoadedDict(Stream);

// SAFETY: once loaded (inside the OnceLock's exclusive initialisation) the state is
// only read, by LZ4_attach_dictionary and the compressions after it, from any thread;
// the bytes it references are the PreparedDict's, heap memory never moved or changed.
unsafe impl Send for LoadedDict {}
unsafe impl Sync for LoadedDict {}

impl PreparedDict {
    /// `bytes`: only the last 64 KB count, as for any LZ4 dictionary.
    pub fn new(bytes: Box<[u8]>) -> PreparedDict {
        PreparedDict {
            bytes,
            state: OnceLock::new(),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The loaded state; None if liblz4 could not allocate one.
    fn state(&self) -> Option<&Stream> {
        self.state
            .get_or_init(|| {
                let stream = Stream::new()?;
                // SAFETY: a valid state; `self.bytes` outlives it (same owner) and is
                // never changed.
                unsafe {
                    LZ4_loadDictSlow(
                        stream.0,
                        self.bytes.as_ptr().cast(),
                        self.bytes.len() as c_int,
                    )
                };
                Some(LoadedDict(stream))
            })
            .as_ref()
            .map(|l| &l.0)
    }

    /// Bytes of liblz4's state, once loaded (the dictionary bytes are the owner's to
    /// count).
    pub fn state_bytes(&self) -> usize {
        match self.state.get() {
            Some(Some(_)) => STREAM_BYTES,
            _ => 0,
        }
    }
}

thread_local! {
    // One working stream per thread (a shard is used by one thread at a time), reset
    // for every block: compressions never depend on each other.
    static WORK: RefCell<Option<Stream>> = const { RefCell::new(None) };
}

/// Compresses `src` against `dict` (if given), appending the LZ4 block to `out` (room
/// for the worst case is reserved first). Returns the compressed length, or None
/// (nothing appended).
pub fn compress_append(
    src: &[u8],
    dict: Option<&PreparedDict>,
    out: &mut Vec<u8>,
) -> Option<usize> {
    if src.len() > MAX_INPUT {
        return None;
    }
    let cap = bound(src.len());
    out.reserve(cap);
    let dst = out.spare_capacity_mut();
    let dict_state = match dict {
        Some(d) => Some(d.state()?.0),
        None => None,
    };
    let n = WORK.with(|w| {
        let mut w = w.try_borrow_mut().ok()?;
        if w.is_none() {
            *w = Some(Stream::new()?);
        }
        let work = w.as_ref()?.0;
        // SAFETY: `work` is a valid, initialised state owned by this thread; `dst` has
        // `cap` writable bytes (reserved above), `src` `src.len()` readable ones; the
        // attached dictionary state and its bytes outlive the call.
        // A fast reset forgets the previous block (no history but the dictionary).
        let n = unsafe {
            LZ4_resetStream_fast(work);
            if let Some(d) = dict_state {
                LZ4_attach_dictionary(work, d);
            }
            LZ4_compress_fast_continue(
                work,
                src.as_ptr().cast(),
                dst.as_mut_ptr().cast(),
                src.len() as c_int,
                cap as c_int,
                1,
            )
        };
        Some(n)
    })?;
    if n <= 0 || n as usize > cap {
        return None;
    }
    // SAFETY: liblz4 wrote exactly `n` bytes at the start of the spare capacity.
    unsafe { out.set_len(out.len() + n as usize) };
    Some(n as usize)
}

/// Decodes LZ4 block `src`, which must expand to exactly `raw_len` bytes, appending them
/// to `out`, with `dict` (possibly empty) as the history before it. False (nothing
/// appended) for a malformed payload; liblz4's safe decoder never reads past `src` or
/// writes past `raw_len`.
pub fn decompress_append(src: &[u8], raw_len: usize, dict: &[u8], out: &mut Vec<u8>) -> bool {
    if src.len() > MAX_INPUT || raw_len > MAX_INPUT || dict.len() > MAX_INPUT {
        return false;
    }
    out.reserve(raw_len);
    let dst = out.spare_capacity_mut();
    // SAFETY: `dst` has at least `raw_len` writable bytes; `src` and `dict` are readable
    // for their lengths; the decoder is the bounds-checked one.
    let n = unsafe {
        LZ4_decompress_safe_usingDict(
            src.as_ptr().cast(),
            dst.as_mut_ptr().cast(),
            src.len() as c_int,
            raw_len as c_int,
            dict.as_ptr().cast(),
            dict.len() as c_int,
        )
    };
    if n < 0 || n as usize != raw_len {
        return false;
    }
    // SAFETY: the decoder wrote `raw_len` bytes at the start of the spare capacity.
    unsafe { out.set_len(out.len() + raw_len) };
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| {
                let pattern = br#"{"alpha_2":"DE","name":"Germany"}"#;
                pattern[i % pattern.len()] ^ ((i / 97) as u8 & 3)
            })
            .collect()
    }

    #[test]
    fn round_trips_with_and_without_a_dictionary_and_matches_lz4_flex() {
        let dict = sample(4096);
        let prepared = PreparedDict::new(dict.clone().into());
        for n in [0, 1, 15, 100, 2048, 70_000] {
            let src = sample(n + 7)[7..].to_vec();
            for d in [None, Some(&prepared)] {
                let mut frame = vec![9u8];
                let got = compress_append(&src, d, &mut frame).unwrap();
                assert_eq!(frame.len(), 1 + got);
                let dict_bytes: &[u8] = d.map_or(&[], |_| &dict);
                let mut out = b"xy".to_vec();
                assert!(decompress_append(
                    &frame[1..],
                    src.len(),
                    dict_bytes,
                    &mut out
                ));
                assert_eq!(&out[2..], &src[..]);
                // The other implementation of the same format reads it too.
                let mut flex = vec![0u8; src.len()];
                let m = if d.is_some() {
                    lz4_flex::block::decompress_into_with_dict(&frame[1..], &mut flex, &dict)
                } else {
                    lz4_flex::block::decompress_into(&frame[1..], &mut flex)
                };
                assert_eq!(m.unwrap(), src.len());
                assert_eq!(flex, src);
            }
        }
    }

    #[test]
    fn corrupt_or_mislabelled_payloads_are_errors() {
        let src = sample(2048);
        let dict = sample(1024);
        let prepared = PreparedDict::new(dict.clone().into());
        let mut frame = Vec::new();
        compress_append(&src, Some(&prepared), &mut frame).unwrap();
        let mut out = Vec::new();
        // Wrong length declared, either way.
        assert!(!decompress_append(&frame, src.len() - 1, &dict, &mut out));
        assert!(!decompress_append(&frame, src.len() + 1, &dict, &mut out));
        // Every truncation and a sweep of flipped bytes: error or some bytes, never UB
        // (the decoder is bounds-checked; miri is not available here, ASan-less checks).
        for cut in 0..frame.len() {
            out.clear();
            let _ = decompress_append(&frame[..cut], src.len(), &dict, &mut out);
            assert!(out.is_empty() || out.len() == src.len());
        }
        for i in 0..frame.len() {
            let mut bad = frame.clone();
            bad[i] ^= 0x5a;
            out.clear();
            let _ = decompress_append(&bad, src.len(), &dict, &mut out);
            assert!(out.is_empty() || out.len() == src.len());
        }
    }
}
