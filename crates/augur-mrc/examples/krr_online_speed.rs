//! Per-reference cost of the online profiler's KRR (augur serve's configuration:
//! K = 1, 2, 4, 8 with Redis's exponent, byte sizes, already-sampled references):
//! uniform references over a fixed set of keys, first touches then re-references.
//! Prints ns per reference; asserts nothing.
//!
//! Run: `cargo run --release -p augur-mrc --example krr_online_speed -- [KEYS] [REFS]`
use augur_mrc::curve::SizeUnit;
use augur_mrc::krr::{Krr, KrrConfig};
use augur_mrc::MrcModel;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::Instant;

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let keys = args.first().copied().unwrap_or(10_000);
    let refs = args.get(1).copied().unwrap_or(1_000_000);
    for ks in [vec![1u32, 2, 4, 8], vec![1], vec![8]] {
        let mut krr = Krr::new(KrrConfig {
            ks: ks.clone(),
            k_exponent: Some(Krr::REDIS_K_EXPONENT),
            rate: 1.0,
            unit: SizeUnit::Bytes,
            ..KrrConfig::default()
        });
        let mut rng = SmallRng::seed_from_u64(7);
        let t = Instant::now();
        for k in 0..keys {
            krr.access(k.wrapping_mul(0x9E37_79B9_7F4A_7C15), 180);
        }
        let cold = t.elapsed().as_secs_f64() / keys as f64;
        let t = Instant::now();
        for _ in 0..refs {
            let k = rng.gen_range(0..keys);
            krr.access(k.wrapping_mul(0x9E37_79B9_7F4A_7C15), 180);
        }
        let warm = t.elapsed().as_secs_f64() / refs as f64;
        let swaps: u64 = krr.stacks().iter().map(|s| s.swaps()).sum();
        let per_ref = swaps as f64 / (keys + refs) as f64;
        println!(
            "K {:?} keys {keys}: first touch {:.0} ns, re-reference {:.0} ns, {:.0} swaps a reference ({:.1} ns a swap)",
            ks,
            cold * 1e9,
            warm * 1e9,
            per_ref,
            warm * 1e9 / per_ref
        );
    }
}
