//! TEMPORARY STAND-IN for the lead's integration work on branch `zone`: a map with the
//! Z-zone's API and no compression, so the shard integration compiles and its semantics
//! can be tested. It is replaced by the real module (branch `zzone`) before any merge.
#![allow(dead_code, clippy::type_complexity, clippy::len_without_is_empty)]

use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Codec {
    Lz4,
    Zstd { level: i32 },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZConfig {
    pub block_capacity: usize,
    pub codec: Codec,
}

impl Default for ZConfig {
    fn default() -> Self {
        ZConfig {
            block_capacity: 2048,
            codec: Codec::Lz4,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZMeta {
    pub expire_at_ms: Option<u64>,
    pub flags: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gone {
    Evicted,
    Expired,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ZStats {
    pub raw_bytes: u64,
    pub compressed_bytes: u64,
}

pub struct ZZone {
    items: BTreeMap<(u8, Vec<u8>), (Vec<u8>, ZMeta, bool)>,
    bytes: u64,
    hand: Option<(u8, Vec<u8>)>,
}

/// Pretends a 2x compression (the stand-in stores plain copies).
fn cost(key: &[u8], value: &[u8]) -> u64 {
    ((key.len() + value.len()) / 2 + 16) as u64
}

impl ZZone {
    pub fn new(_cfg: ZConfig) -> Self {
        ZZone {
            items: BTreeMap::new(),
            bytes: 0,
            hand: None,
        }
    }
    pub fn insert(&mut self, db: u8, key: &[u8], value: &[u8], meta: ZMeta) {
        self.remove(db, key, 0);
        self.bytes += cost(key, value);
        self.items
            .insert((db, key.to_vec()), (value.to_vec(), meta, false));
    }
    pub fn get(&mut self, db: u8, key: &[u8], now_ms: u64, out: &mut Vec<u8>) -> Option<ZMeta> {
        let k = (db, key.to_vec());
        let (v, m, a) = self.items.get_mut(&k)?;
        if m.expire_at_ms.is_some_and(|at| at < now_ms) {
            self.remove(db, key, 0);
            return None;
        }
        *a = true;
        out.extend_from_slice(v);
        Some(*m)
    }
    pub fn contains(&self, db: u8, key: &[u8], now_ms: u64) -> bool {
        self.items
            .get(&(db, key.to_vec()))
            .is_some_and(|(_, m, _)| m.expire_at_ms.is_none_or(|at| at >= now_ms))
    }
    pub fn remove(&mut self, db: u8, key: &[u8], now_ms: u64) -> Option<(Vec<u8>, ZMeta)> {
        let (v, m, _) = self.items.remove(&(db, key.to_vec()))?;
        self.bytes -= cost(key, &v);
        if m.expire_at_ms.is_some_and(|at| at < now_ms) {
            return None;
        }
        Some((v, m))
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn len(&self) -> u64 {
        self.items.len() as u64
    }
    pub fn clock_ms(&self) -> u64 {
        0
    }
    pub fn sweep_to(
        &mut self,
        target_bytes: u64,
        _now_ms: u64,
        mut f: impl FnMut(u8, &[u8], ZMeta, Gone),
    ) {
        self.evict_to(target_bytes, |d, k, m| f(d, k, m, Gone::Evicted));
    }
    pub fn expire_cycle(
        &mut self,
        now_ms: u64,
        _blocks: usize,
        mut f: impl FnMut(u8, &[u8], ZMeta),
    ) -> usize {
        let gone: Vec<(u8, Vec<u8>)> = self
            .items
            .iter()
            .filter(|(_, (_, m, _))| m.expire_at_ms.is_some_and(|at| at <= now_ms))
            .map(|(k, _)| k.clone())
            .collect();
        for (d, k) in &gone {
            let (v, m, _) = self.items.remove(&(*d, k.clone())).expect("listed");
            self.bytes -= cost(k, &v);
            f(*d, k, m);
        }
        gone.len()
    }
    pub fn evict_to(&mut self, target_bytes: u64, mut on_evict: impl FnMut(u8, &[u8], ZMeta)) {
        while self.bytes > target_bytes && !self.items.is_empty() {
            let start = self.hand.clone().unwrap_or((0, Vec::new()));
            let next = self
                .items
                .range(start..)
                .next()
                .map(|(k, _)| k.clone())
                .or_else(|| self.items.keys().next().cloned())
                .expect("non-empty");
            let (v, m, a) = self.items.get_mut(&next).expect("exists");
            if *a {
                *a = false;
                let _ = v;
                let mut n = next.clone();
                n.1.push(0);
                self.hand = Some(n);
                continue;
            }
            let m = *m;
            self.remove(next.0, &next.1, 0);
            on_evict(next.0, &next.1, m);
            self.hand = Some(next);
        }
    }
    pub fn for_each(&self, mut f: impl FnMut(u8, &[u8], ZMeta)) {
        for ((db, k), (_, m, _)) in &self.items {
            f(*db, k, *m);
        }
    }
    /// Cursors are multiples of 2^25, like the real zone's hash positions of leaves.
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(u8, &[u8], ZMeta)) -> u64 {
        let mut i = (cursor >> 25) as usize;
        for ((db, k), (_, m, _)) in self.items.iter().skip(i).take(count) {
            f(*db, k, *m);
            i += 1;
        }
        if i >= self.items.len() {
            0
        } else {
            (i as u64) << 25
        }
    }
    pub fn random_key(&self, db: u8, rng: &mut impl rand::Rng) -> Option<Vec<u8>> {
        let keys: Vec<&Vec<u8>> = self
            .items
            .keys()
            .filter(|(d, _)| *d == db)
            .map(|(_, k)| k)
            .collect();
        if keys.is_empty() {
            None
        } else {
            Some(keys[rng.gen_range(0..keys.len())].clone())
        }
    }
    pub fn clear_db(&mut self, db: u8) {
        let gone: Vec<(u8, Vec<u8>)> = self
            .items
            .keys()
            .filter(|(d, _)| *d == db)
            .cloned()
            .collect();
        for (d, k) in gone {
            self.remove(d, &k, 0);
        }
    }
    pub fn stats(&self) -> ZStats {
        let raw: u64 = self
            .items
            .iter()
            .map(|((_, k), (v, _, _))| (k.len() + v.len()) as u64)
            .sum();
        ZStats {
            raw_bytes: raw,
            compressed_bytes: raw,
        }
    }
}
