//! Feeds arbitrary bytes to the request parser, whole and in chunks, and checks that it
//! never panics, never claims more bytes than it was given, and that the chunked parse
//! yields the same commands (or the same error) as the one-shot parse. Also feeds them
//! to `peek_key` (the pipelining prefetch's quick look), which must never panic, stay
//! within the bytes, and, where it reports a command, agree with the parser's length.

#![no_main]

use augur_server::resp::{peek_key, Parsed, Parser, ProtocolError};
use libfuzzer_sys::fuzz_target;

type Outcome = (Vec<Vec<Vec<u8>>>, Option<ProtocolError>);

/// Parses `data` delivered in pieces ending at `cuts` (as successive reads would).
fn parse_in_pieces(data: &[u8], cuts: &[usize], auth_required: bool) -> Outcome {
    let mut p = Parser::new(1 << 20);
    p.set_auth_required(auth_required);
    let mut cmds = Vec::new();
    let mut start = 0;
    for &end in cuts.iter().chain(std::iter::once(&data.len())) {
        let end = end.clamp(start, data.len());
        loop {
            match p.parse(&data[start..end]) {
                Ok(Parsed::Command(n)) => {
                    assert!(n > 0 && start + n <= end, "consumed {n} of {}", end - start);
                    cmds.push(p.args(&data[start..end]).to_vec());
                    start += n;
                }
                Ok(Parsed::Incomplete) => break,
                Err(e) => return (cmds, Some(e)),
            }
        }
    }
    (cmds, None)
}

fuzz_target!(|input: &[u8]| {
    // The first byte chooses the chunking and the auth mode; the rest is the stream.
    let Some((&ctl, data)) = input.split_first() else { return };
    let auth = ctl & 1 == 1;
    let step = (ctl >> 1) as usize + 1;
    if let Some((key, len)) = peek_key(data) {
        assert!(len <= data.len());
        if let Some(k) = key {
            assert!(k.start <= k.end && k.end <= len);
        }
        let mut p = Parser::new(1 << 20);
        p.set_auth_required(auth);
        if let Ok(Parsed::Command(n)) = p.parse(data) {
            assert_eq!(n, len);
        }
    }
    let whole = parse_in_pieces(data, &[], auth);
    let cuts: Vec<usize> = (step..data.len()).step_by(step).collect();
    let chunked = parse_in_pieces(data, &cuts, auth);
    // The parser keeps unconsumed bytes and its limits look at whole lines, so how the
    // stream was split must not change the outcome.
    assert_eq!(whole, chunked);
});
