//! How long one LHD reconfiguration takes (the pause the request that triggers it pays,
//! `augur_store::lhd`): a shard's model at several shard counts, and the simulator's
//! full-size model for scale. Histograms are filled with a few hundred thousand random
//! hits and evictions first, as a running model's would be.
//! Run: cargo run --release -p augur-store --example lhd_reconfigure

use augur_sim::lhd::{LhdModel, LhdTag};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::Instant;

fn main() {
    for shards in [1usize, 16, 64] {
        let cfg = augur_store::lhd_shard_config(shards);
        let (max_age, every) = (cfg.max_age, cfg.reconfigure_every);
        let mut m = LhdModel::new(cfg, 1 << 30);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut times = Vec::new();
        for round in 0..40 {
            for _ in 0..20_000 {
                let mut tag: LhdTag = m.on_insert(0, 100, &mut rng);
                tag.timestamp = m.now().saturating_sub(rng.gen_range(0..1 << 20));
                tag.last_hit_age = rng.gen_range(0..max_age as u16);
                if rng.gen_bool(0.5) {
                    m.on_hit(&mut tag, 100, &mut rng);
                } else {
                    m.on_evict(&tag, 100, 0.0);
                }
            }
            m.set_time(m.now() + 20_000);
            let t = Instant::now();
            m.reconfigure(10_000 + round * 1000);
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        println!(
            "shards {shards:>3}: max_age {max_age:>5}, every {every:>7} accesses: reconfiguration mean {mean:.0} us, median {:.0} us, max {:.0} us; {:.1} ns per access amortised",
            times[times.len() / 2],
            times[times.len() - 1],
            mean * 1000.0 / every as f64
        );
    }
}
