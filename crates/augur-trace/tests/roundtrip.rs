//! Writer/reader round trips (plain and zstd), including next_access_vtime, and
//! the CSV and text readers against the same requests.

use std::io::Write;

use augur_trace::{
    next_access_vtimes, open, write_oracle_general, write_oracle_general_file, OracleReader,
    OracleRecord, Request, TraceFormat,
};
use proptest::prelude::*;

fn requests() -> impl Strategy<Value = Vec<Request>> {
    // A small key range so keys repeat and next_access_vtime is exercised.
    proptest::collection::vec((any::<u32>(), 0u64..20, any::<u32>()), 0..300).prop_map(|v| {
        v.into_iter()
            .map(|(t, k, s)| Request::get(u64::from(t), k << 33 | k, s))
            .collect()
    })
}

/// The obvious quadratic definition of next_access_vtime.
fn naive_next(reqs: &[Request]) -> Vec<i64> {
    (0..reqs.len())
        .map(|i| {
            (i + 1..reqs.len())
                .find(|&j| reqs[j].key == reqs[i].key)
                .map_or(-1, |j| j as i64)
        })
        .collect()
}

fn tmpdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("augur-trace-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn oracle_roundtrip_in_memory(reqs in requests()) {
        let mut buf = Vec::new();
        write_oracle_general(&mut buf, &reqs).unwrap();
        prop_assert_eq!(buf.len(), reqs.len() * 24);
        let mut rd = OracleReader::new(&buf[..]);
        let recs: Vec<OracleRecord> =
            std::iter::from_fn(|| rd.next_record()).collect::<anyhow::Result<_>>().unwrap();
        let back: Vec<Request> = recs.iter().map(OracleRecord::request).collect();
        prop_assert_eq!(&back, &reqs);
        let next: Vec<i64> = recs.iter().map(|r| r.next_access_vtime).collect();
        prop_assert_eq!(&next, &naive_next(&reqs));
        prop_assert_eq!(next_access_vtimes(&reqs), next);
    }

    #[test]
    fn oracle_roundtrip_through_files(reqs in requests(), zst in any::<bool>()) {
        let dir = tmpdir("rt");
        let path = dir.join(if zst { "t.oracleGeneral.bin.zst" } else { "t.oracleGeneral.bin" });
        write_oracle_general_file(&path, &reqs).unwrap();
        let back = augur_trace::load_all(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        prop_assert_eq!(back, reqs);
    }
}

#[test]
fn csv_and_text_files_compressed_or_not() {
    let dir = tmpdir("csvtxt");
    let csv = "time;key;size;op\n5;alpha;10;GET\n6;7;20;set\n7;alpha;10;Delete\n";
    let expect = vec![
        Request {
            time: 5,
            key: augur_trace::key_hash(b"alpha"),
            size: 10,
            op: augur_trace::Op::Get,
        },
        Request {
            time: 6,
            key: 7,
            size: 20,
            op: augur_trace::Op::Set,
        },
        Request {
            time: 7,
            key: augur_trace::key_hash(b"alpha"),
            size: 10,
            op: augur_trace::Op::Delete,
        },
    ];
    let fmt: TraceFormat = "csv:time=0,key=1,size=2,op=3,header,delim=;"
        .parse()
        .unwrap();
    let plain = dir.join("a.csv");
    std::fs::write(&plain, csv).unwrap();
    assert_eq!(augur_trace::load(&plain, &fmt).unwrap(), expect);
    let zpath = dir.join("a.csv.zst");
    let mut enc =
        zstd::stream::write::Encoder::new(std::fs::File::create(&zpath).unwrap(), 1).unwrap();
    enc.write_all(csv.as_bytes()).unwrap();
    enc.finish().unwrap();
    assert_eq!(augur_trace::load(&zpath, &fmt).unwrap(), expect);

    let txt = dir.join("keys.txt");
    std::fs::write(&txt, "3\n4\n3\n").unwrap();
    let got: Vec<_> = open(&txt, &"txt:size=100".parse().unwrap())
        .unwrap()
        .collect::<anyhow::Result<_>>()
        .unwrap();
    assert_eq!(
        got,
        vec![
            Request::get(0, 3, 100),
            Request::get(1, 4, 100),
            Request::get(2, 3, 100)
        ]
    );
    // Auto-detection from the name, with the default size of 1.
    assert_eq!(
        augur_trace::load_all(&txt).unwrap()[1],
        Request::get(1, 4, 1)
    );

    // A file named .zst that is not zstd is reported, not misread.
    let fake = dir.join("fake.oracleGeneral.bin.zst");
    std::fs::write(&fake, [0u8; 48]).unwrap();
    assert!(augur_trace::load_all(&fake).is_err());
    // A zstd stream that is corrupt after its magic number is an error, not a panic.
    let corrupt = dir.join("corrupt.oracleGeneral.bin.zst");
    let mut bytes = zstd::encode_all(&[7u8; 24 * 100][..], 1).unwrap();
    let mid = bytes.len() / 2;
    bytes[4..mid].iter_mut().for_each(|b| *b = !*b);
    std::fs::write(&corrupt, &bytes).unwrap();
    assert!(augur_trace::load_all(&corrupt).is_err());
    // A zstd stream cut short is an error too.
    let cut = dir.join("cut.oracleGeneral.bin.zst");
    let full = zstd::encode_all(&[7u8; 24 * 1000][..], 1).unwrap();
    std::fs::write(&cut, &full[..full.len() - 3]).unwrap();
    assert!(augur_trace::load_all(&cut).is_err());
    // A missing file is an error.
    assert!(augur_trace::load_all(dir.join("missing.csv")).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn synthetic_trace_roundtrips_through_oracle_zst() {
    use augur_trace::synth::{generate, SizeSpec, SynthSpec};
    let spec = SynthSpec {
        workload: "zipfscan:n=5000,alpha=0.9,scan_n=2000,frac=0.1"
            .parse()
            .unwrap(),
        sizes: SizeSpec::PerKey { min: 64, max: 4096 },
        requests: 50_000,
        seed: 11,
    };
    let reqs: Vec<_> = generate(&spec).unwrap().collect();
    let dir = tmpdir("synth");
    let path = dir.join("s.oracleGeneral.bin.zst");
    write_oracle_general_file(&path, &reqs).unwrap();
    assert_eq!(augur_trace::load_all(&path).unwrap(), reqs);
    std::fs::remove_dir_all(&dir).unwrap();
}
