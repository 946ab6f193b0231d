//! Feeds arbitrary bytes to RESTORE's payload decoder (RDB strings, LZF, sets, hashes,
//! intsets, lists, sorted sets, ziplists, listpacks), with a valid trailer appended half
//! of the time so the decoder itself is reached. It must never panic; a value it accepts
//! must survive a DUMP / RESTORE round trip unchanged (as a set of members, of
//! field-value pairs, of positioned list elements or of member-score pairs).

#![no_main]

use augur_server::commands::dump::{
    dump_hash, dump_list, dump_set, dump_string, dump_zset, load_value, rdb_seal_payload, zset_of,
    Restored,
};
use augur_store::{EncodingLimits, End, Hash, List, Set};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&ctl, data)) = input.split_first() else {
        return;
    };
    let mut payload = data.to_vec();
    if ctl & 1 == 1 {
        rdb_seal_payload(&mut payload);
    }
    let Ok(value) = load_value(&payload) else {
        return;
    };
    let lim = EncodingLimits::default();
    let again = match &value {
        Restored::String(s) => load_value(&dump_string(s)),
        Restored::Hash(pairs) => {
            let mut h = Hash::new();
            for (f, v) in pairs {
                h.set(f, v, &lim);
            }
            load_value(&dump_hash(&h))
        }
        Restored::Set(members) => {
            let mut s = Set::new();
            for m in members {
                s.insert(m, &lim);
            }
            load_value(&dump_set(&s))
        }
        Restored::List(elems) => {
            let mut l = List::new();
            for e in elems {
                l.push(End::Tail, e, lim.list_shape());
            }
            load_value(&dump_list(&l))
        }
        Restored::ZSet { elems, packed } => load_value(&dump_zset(&zset_of(elems, *packed, &lim))),
    }
    .expect("a DUMP of what RESTORE accepted restores");
    let sorted = |v: &Restored| -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut x: Vec<(Vec<u8>, Vec<u8>)> = match v {
            Restored::String(s) => vec![(s.clone(), Vec::new())],
            Restored::Hash(p) => p.clone(),
            Restored::Set(m) => m.iter().map(|m| (m.clone(), Vec::new())).collect(),
            Restored::List(e) => e
                .iter()
                .enumerate()
                .map(|(i, e)| ((i as u64).to_be_bytes().to_vec(), e.clone()))
                .collect(),
            // -0 as 0: a listpack stores a whole score as an integer.
            Restored::ZSet { elems, .. } => elems
                .iter()
                .map(|(m, s)| (m.clone(), (s + 0.0).to_bits().to_be_bytes().to_vec()))
                .collect(),
        };
        x.sort();
        x
    };
    assert_eq!(sorted(&value), sorted(&again));
});
