//! Sampled eviction as Redis does it, generic over the candidate source.
//!
//! Redis approximates LRU (and TTL / LFU orderings) by sampling: each eviction round draws
//! `K` (`maxmemory-samples`) entries, offers them to a small *eviction pool* of the
//! best candidates seen so far (kept across rounds, 16 entries, sorted by score), and
//! evicts the best pooled candidate that still exists (Redis `src/evict.c`,
//! `evictionPoolPopulate` and `performEvictions`). The pool is what makes Redis's
//! approximation much better than "evict the oldest of K fresh samples" (the KRR paper's
//! Eq. 1 K-LRU, available here as [`select_victim_fresh`]).
//!
//! Scores are "higher = evict first": idle time in logical accesses for LRU, and
//! `u64::MAX - expire_at` for volatile-ttl (the soonest to expire is the best victim).
//!
//! Subtleties kept from Redis on purpose, because the simulator must reproduce the
//! server and the server must reproduce Redis:
//! - a pooled candidate keeps the score it had when sampled; if it is accessed later its
//!   score is stale and it can still be evicted (Redis does not re-check idle time);
//! - a pooled candidate that no longer exists is dropped and the next best is tried;
//! - the pool is not de-duplicated: a key sampled twice may sit in it twice.

use rand::Rng;

/// Number of entries in the eviction pool (Redis `EVPOOL_SIZE`).
pub const EVICTION_POOL_SIZE: usize = 16;

/// The best eviction candidates seen so far, ordered by ascending score
/// (the last entry is the best victim), as Redis's `evictionPoolEntry` array.
#[derive(Debug, Clone)]
pub struct EvictionPool<I> {
    /// Sorted ascending by score; at most [`EVICTION_POOL_SIZE`] entries.
    entries: Vec<(u64, I)>,
}

impl<I> Default for EvictionPool<I> {
    fn default() -> Self {
        Self::new()
    }
}

impl<I> EvictionPool<I> {
    pub fn new() -> Self {
        Self {
            entries: Vec::with_capacity(EVICTION_POOL_SIZE),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Offers a sampled candidate with its score, as `evictionPoolPopulate` does for
    /// each sampled key: when the pool is full and the candidate is worse than every
    /// pooled one it is ignored; otherwise it is inserted in order, pushing out the
    /// worst (lowest-score) entry if the pool is full.
    pub fn offer(&mut self, id: I, score: u64) {
        // First position whose score is >= the candidate's: insert before it, so equal
        // scores keep arrival order behind the newcomer (Redis inserts at the first
        // slot with idle >= candidate idle when scanning from the left).
        let pos = self.entries.partition_point(|(s, _)| *s < score);
        if self.entries.len() == EVICTION_POOL_SIZE {
            if pos == 0 {
                // Worse than (or equal to) every pooled candidate: Redis skips it.
                return;
            }
            // Drop the worst and shift left, inserting at pos - 1.
            self.entries.remove(0);
            self.entries.insert(pos - 1, (score, id));
        } else {
            self.entries.insert(pos, (score, id));
        }
    }

    /// Removes and returns the best (highest-score) pooled candidate.
    pub fn pop_best(&mut self) -> Option<(I, u64)> {
        self.entries.pop().map(|(s, id)| (id, s))
    }

    /// Drops every pooled candidate for which `keep` is false (used when a whole
    /// database is flushed, so the pool does not keep references to nothing).
    pub fn retain(&mut self, mut keep: impl FnMut(&I) -> bool) {
        self.entries.retain(|(_, id)| keep(id));
    }

    /// The pooled candidates, worst first.
    pub fn iter(&self) -> impl Iterator<Item = (&I, u64)> {
        self.entries.iter().map(|(s, id)| (id, *s))
    }
}

/// A population that eviction can sample from: the server's keyspace or a simulator's
/// cache. `sample` must be uniform over the current population and O(1).
pub trait Candidates {
    /// What identifies an entry across rounds (a key, an object id).
    type Id: Clone + PartialEq;

    /// How many entries can be sampled.
    fn population(&self) -> usize;

    /// One entry drawn uniformly at random, with its current score (higher evicts first).
    fn sample<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Option<(Self::Id, u64)>;

    /// Whether the entry still exists (pooled candidates may have been deleted since).
    fn contains(&self, id: &Self::Id) -> bool;

    /// `k` draws as [`Candidates::sample`] makes them, each handed to `out`. One by one
    /// here; a store whose entries are cache misses draws them in a batch so that the
    /// misses overlap (same distribution).
    fn sample_many<R: Rng + ?Sized>(
        &mut self,
        rng: &mut R,
        k: usize,
        out: &mut impl FnMut(Self::Id, u64),
    ) {
        for _ in 0..k {
            if let Some((id, score)) = self.sample(rng) {
                out(id, score);
            }
        }
    }
}

/// Redis's pooled sampled eviction: sample `k` candidates into `pool`, then return the
/// best pooled candidate that still exists, resampling while the pool yields none
/// (`performEvictions`' `while (!bestkey)` loop). Returns `None` only when the
/// population is empty. The caller removes the victim.
pub fn select_victim_pooled<C: Candidates, R: Rng + ?Sized>(
    pool: &mut EvictionPool<C::Id>,
    candidates: &mut C,
    k: usize,
    rng: &mut R,
) -> Option<C::Id> {
    loop {
        if candidates.population() == 0 {
            return None;
        }
        candidates.sample_many(rng, k.max(1), &mut |id, score| pool.offer(id, score));
        while let Some((id, _)) = pool.pop_best() {
            if candidates.contains(&id) {
                return Some(id);
            }
        }
    }
}

/// Plain K-LRU as modelled by KRR (the kRedis paper, Eq. 1): draw `k` fresh samples and
/// evict the one with the highest score; no state carries across evictions.
pub fn select_victim_fresh<C: Candidates, R: Rng + ?Sized>(
    candidates: &mut C,
    k: usize,
    rng: &mut R,
) -> Option<C::Id> {
    let mut best: Option<(C::Id, u64)> = None;
    for _ in 0..k.max(1) {
        match candidates.sample(rng) {
            Some((id, score)) => {
                if best.as_ref().is_none_or(|(_, b)| score > *b) {
                    best = Some((id, score));
                }
            }
            None => break,
        }
    }
    best.map(|(id, _)| id)
}

/// Random eviction (`allkeys-random` / `volatile-random`): one uniform sample.
pub fn select_victim_random<C: Candidates, R: Rng + ?Sized>(
    candidates: &mut C,
    rng: &mut R,
) -> Option<C::Id> {
    candidates.sample(rng).map(|(id, _)| id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn pool_keeps_the_sixteen_highest_scores_in_order() {
        let mut pool = EvictionPool::new();
        for s in 0..40u64 {
            // Interleave so insertions land in the middle as well as the ends.
            let score = (s * 7919) % 40;
            pool.offer(score, score);
        }
        let kept: Vec<u64> = pool.iter().map(|(_, s)| s).collect();
        assert_eq!(kept, (24..40).collect::<Vec<_>>());
        assert_eq!(pool.pop_best(), Some((39, 39)));
    }

    #[test]
    fn full_pool_ignores_a_candidate_no_better_than_its_worst() {
        let mut pool = EvictionPool::new();
        for s in 10..26u64 {
            pool.offer(s, s);
        }
        pool.offer(99, 10);
        pool.offer(98, 3);
        assert!(pool.iter().all(|(id, _)| *id != 99 && *id != 98));
        assert_eq!(pool.len(), EVICTION_POOL_SIZE);
    }

    struct Vector(Vec<(u32, u64)>);
    impl Candidates for Vector {
        type Id = u32;
        fn population(&self) -> usize {
            self.0.len()
        }
        fn sample<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Option<(u32, u64)> {
            if self.0.is_empty() {
                return None;
            }
            Some(self.0[rng.gen_range(0..self.0.len())])
        }
        fn contains(&self, id: &u32) -> bool {
            self.0.iter().any(|(i, _)| i == id)
        }
    }

    #[test]
    fn pooled_selection_skips_candidates_that_were_deleted() {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut pool = EvictionPool::new();
        let mut c = Vector((0..100).map(|i| (i, i as u64)).collect());
        let first = select_victim_pooled(&mut pool, &mut c, 5, &mut rng).unwrap();
        // Delete everything in the pool, then ask again: the answer must exist.
        let pooled: Vec<u32> = pool.iter().map(|(id, _)| *id).collect();
        c.0.retain(|(i, _)| *i != first && !pooled.contains(i));
        let second = select_victim_pooled(&mut pool, &mut c, 5, &mut rng).unwrap();
        assert!(c.contains(&second));
        c.0.clear();
        assert_eq!(select_victim_pooled(&mut pool, &mut c, 5, &mut rng), None);
    }

    #[test]
    fn fresh_selection_takes_the_highest_score_of_its_samples() {
        let mut rng = SmallRng::seed_from_u64(1);
        let mut c = Vector(vec![(1, 5), (2, 9), (3, 1)]);
        // With 64 samples out of three every entry is seen with near certainty.
        assert_eq!(select_victim_fresh(&mut c, 64, &mut rng), Some(2));
    }
}
