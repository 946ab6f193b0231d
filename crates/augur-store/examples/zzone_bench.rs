//! Z-zone (zExpander) data-structure measurement on record-shaped data: the JSON records
//! of Debian's iso-codes package (/usr/share/iso-codes/json/*.json), minified, grouped
//! into values of at least ~90 bytes (one record, or a few consecutive short ones as a
//! JSON array), keyed `rec:%010d`. Loads N items (the record set cycled, each item its
//! own key) into a ZZone per codec and block size, then prints items, bytes(), bytes
//! per item, the N-zone's charge for the same items, insert / get-hit / get-miss ns per
//! op, hash + trie look-up ns (minus a loop that only fetches the key) and trie bytes per
//! item, without and with a 4 KB and an 8 KB sampled dictionary. Single-threaded; the zone's `bytes()` uses jemalloc's size classes (`nallocx`).
//!
//! `cargo run --release -p augur-store --example zzone_bench [N]` (default 500000);
//! `ZZ_ONLY=lz4:4096:2048` runs one configuration (codec:dict bytes:block bytes).

use augur_store::charged_bytes;
use augur_store::zzone::{block, Codec, ZConfig, ZMeta, ZZone};
use std::time::Instant;

/// The objects inside the top-level array of a JSON file (`{"key": [ {...}, {...} ]}`),
/// minified (whitespace outside strings removed).
fn records(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut in_str, mut esc) = (0i32, false, false);
    let mut cur = String::new();
    for c in text.chars() {
        let inside = depth >= 3;
        if in_str {
            if inside {
                cur.push(c);
            }
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                if inside {
                    cur.push(c);
                }
            }
            '{' | '[' => {
                depth += 1;
                if depth >= 3 {
                    cur.push(c);
                }
            }
            '}' | ']' => {
                if inside {
                    cur.push(c);
                }
                depth -= 1;
                if depth == 2 && !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c if c.is_whitespace() => {}
            c => {
                if inside {
                    cur.push(c);
                }
            }
        }
    }
    out
}

fn load_values() -> Vec<Vec<u8>> {
    let mut files: Vec<_> = std::fs::read_dir("/usr/share/iso-codes/json")
        .expect("Debian's iso-codes package (apt-get install iso-codes)")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            n.starts_with("iso_") && n.ends_with(".json")
        })
        .collect();
    files.sort();
    let mut values = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let mut group: Vec<String> = Vec::new();
        let mut len = 0;
        for r in records(&text) {
            len += r.len() + 1;
            group.push(r);
            if len >= 90 {
                let v = if group.len() == 1 {
                    group.pop().unwrap()
                } else {
                    format!("[{}]", group.join(","))
                };
                values.push(v.into_bytes());
                group.clear();
                len = 0;
            }
        }
    }
    values
}

fn key(i: usize) -> Vec<u8> {
    format!("rec:{i:010}").into_bytes()
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(500_000);
    let values = load_values();
    let raw: usize = values.iter().map(|v| v.len()).sum();
    let lz4: usize = values
        .iter()
        .map(|v| lz4_flex::block::compress(v).len())
        .sum();
    let zstd: usize = values
        .iter()
        .map(|v| zstd::bulk::compress(v, 3).unwrap().len())
        .sum();
    let mut all = Vec::new();
    for v in &values {
        all.extend_from_slice(v);
    }
    let whole = lz4_flex::block::compress(&all).len();
    println!(
        "data: {} values from iso-codes, mean {:.1} B (min {}, max {}); own compression \
         ratio individually: LZ4 {:.3}, zstd-3 {:.3}; whole set as one LZ4 block {:.2}",
        values.len(),
        raw as f64 / values.len() as f64,
        values.iter().map(|v| v.len()).min().unwrap(),
        values.iter().map(|v| v.len()).max().unwrap(),
        raw as f64 / lz4 as f64,
        raw as f64 / zstd as f64,
        raw as f64 / whole as f64,
    );
    let nzone: u64 = (0..n)
        .map(|i| charged_bytes(0, key(i).len(), values[i % values.len()].len(), false))
        .sum();
    let item_raw: usize = (0..n)
        .map(|i| key(i).len() + values[i % values.len()].len())
        .sum();
    println!(
        "{n} items, key+value {:.1} B/item; N-zone charge (entry block + index) {:.1} B/item",
        item_raw as f64 / n as f64,
        nzone as f64 / n as f64
    );
    println!(
        "| codec | dict | block | bytes() | B/item | frames B/item | vs N-zone | raw/bytes | blocks | items/block | \
         depth | trie B/item | insert ns | get hit ns | get miss ns | hash+trie ns |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let meta = ZMeta {
        expire_at_ms: None,
        flags: 0,
    };
    // A fixed pseudo-random order of look-ups.
    let order: Vec<usize> = {
        let mut x = 0x1234_5678u64;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % n as u64) as usize
            })
            .collect()
    };
    let keys: Vec<Vec<u8>> = (0..n).map(key).collect();
    let configs = [Codec::Lz4, Codec::Zstd { level: 3 }]
        .into_iter()
        .flat_map(|c| [0usize, 4096, 8192].map(move |d| (c, d)));
    // ZZ_ONLY=codec:dict:block (e.g. lz4:4096:2048) runs one configuration (for a profiler).
    let only = std::env::var("ZZ_ONLY").ok();
    for (codec, dict_size) in configs {
        for cap in [1024, 2048, 4096] {
            let cname = match codec {
                Codec::Lz4 => "lz4",
                Codec::Zstd { .. } => "zstd",
            };
            if only
                .as_deref()
                .is_some_and(|o| o != format!("{cname}:{dict_size}:{cap}"))
            {
                continue;
            }
            let mut z = ZZone::new(ZConfig {
                block_capacity: cap,
                codec,
                dict_size,
            });
            let t = Instant::now();
            for (i, k) in keys.iter().enumerate() {
                z.insert(0, k, &values[i % values.len()], meta);
            }
            let ins = t.elapsed().as_nanos() as f64 / n as f64;
            let mut out = Vec::with_capacity(4096);
            let t = Instant::now();
            let mut hits = 0;
            for &i in &order {
                out.clear();
                hits += z.get(0, &keys[i], 0, &mut out).is_some() as usize;
            }
            let get = t.elapsed().as_nanos() as f64 / n as f64;
            assert_eq!(hits, n);
            let t = Instant::now();
            let mut miss = 0;
            for &i in &order {
                out.clear();
                miss += z.get(1, &keys[i], 0, &mut out).is_none() as usize;
            }
            let getm = t.elapsed().as_nanos() as f64 / n as f64;
            assert_eq!(miss, n);
            let t = Instant::now();
            let mut acc = 0u64;
            for &i in &order {
                acc = acc.wrapping_add(z.locate(0, &keys[i]).unwrap());
            }
            let tri = t.elapsed().as_nanos() as f64 / n as f64;
            std::hint::black_box(acc);
            // The same loop touching only the key (its cache miss), to subtract.
            let t = Instant::now();
            for &i in &order {
                let k = &keys[i];
                acc = acc.wrapping_add(k[k.len() - 1] as u64);
            }
            let base = t.elapsed().as_nanos() as f64 / n as f64;
            std::hint::black_box(acc);
            let tri = tri - base;
            let s = z.stats();
            let name = match codec {
                Codec::Lz4 => "LZ4".to_string(),
                Codec::Zstd { level } => format!("zstd-{level}"),
            };
            println!(
                "| {name} | {} | {} KB | {} | {:.1} | {:.1} | {:.2}x | {:.2} | {} | {:.1} | {} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} |",
                dict_size,
                cap / 1024,
                s.bytes,
                s.bytes as f64 / n as f64,
                s.compressed_bytes as f64 / n as f64,
                nzone as f64 / s.bytes as f64,
                s.raw_bytes as f64 / s.bytes as f64,
                s.blocks,
                n as f64 / s.blocks as f64,
                s.trie_depth,
                s.trie_bytes as f64 / n as f64,
                ins,
                get,
                getm,
                tri
            );
            z.check().expect("consistent");
        }
    }
    let _ = block::MAX_RAW;
}
