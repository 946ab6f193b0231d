//! Feeds arbitrary bytes to the Z-zone's block decoder (augur_store::zzone::block): as a
//! frame or block data with a tail (codec byte, raw length, LZ4 / zstd / raw payload) and, wrapped in a raw frame,
//! as a block's records and offset index. Decoding must never panic nor allocate beyond
//! its caps; whatever it accepts must re-encode to a frame that decodes to the same bytes,
//! with and without a dictionary (frames compressed against dictionary 1, a fixed one).

#![no_main]

use augur_store::zzone::block::{self, Codec, Dict};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&ctl, data)) = input.split_first() else { return };
    let dicts = [Dict::new(
        1,
        (*b"\x00\x00\x00\x03rec:1{\"id\":1,\"src\":\"iso_3166-1\",\"name\":\"x\"}").into(),
    )];
    // As block data, possibly with a tail (a main frame and entries of one record each).
    if let Ok((_, Some(tail))) = block::split_tail(data) {
        let _ = block::tail_entries(tail).count();
        let _ = block::decompress_tail_append(tail, 1 << 20, &dicts, &mut Vec::new());
    }
    let _ = block::frame_raw_len(data);
    let _ = block::check_frame(data);
    let _ = block::check_frame_with(data, &dicts);
    let _ = block::check_raw(data);
    let mut framed = vec![0u8];
    block::put_varint(&mut framed, data.len() as u64);
    framed.extend_from_slice(data);
    let _ = block::check_frame(&framed);
    let mut raw = Vec::new();
    if block::decompress(data, &dicts, &mut raw).is_ok() {
        let codec = if ctl & 1 == 0 { Codec::Lz4 } else { Codec::Zstd { level: 1 } };
        let dict = (ctl & 2 != 0).then_some(&dicts[0]);
        let mut again = Vec::new();
        block::compress(codec, &raw, dict, &mut again);
        let mut back = Vec::new();
        block::decompress(&again, &dicts, &mut back).expect("own frame decodes");
        assert_eq!(back, raw);
    }
});
