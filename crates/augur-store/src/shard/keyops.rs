//! Entry-level key operations: moving and copying whole entries (RENAME, RENAMENX,
//! MOVE, COPY: Redis's db.c), in-place updates of a string value (SETRANGE, APPEND,
//! SETBIT, BITFIELD: t_string.c, bitops.c), OBJECT's view of an entry (object.c) and
//! the SCAN walk (db.c `scanGenericCommand`).
//!
//! Relocation works on entries, not on string values: the value bytes and the value
//! flags of the entry (the `raw` string encoding, and whatever tag a value type keeps
//! there) travel with the block, so these commands work for any value type the store
//! holds. A hash's or set's block holds a pointer to its object: a move hands the
//! pointer to the new block and frees only the old block; COPY deep-copies the object
//! ([`copied`]). In-place string updates refuse a hash or set (WRONGTYPE).

use super::{db_hash, entry_hash, Part, Shard};
use crate::entry::{Entry, MAX_LEN};
use crate::lfu::DecayMarks;
use crate::notify::KeyEvent;
use crate::store::key_hash;
use crate::tenant::{Ns, RefKind};
use crate::WriteError;
use std::sync::Arc;

/// Which of db.c's relocations to perform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relocation {
    /// RENAME: the destination is overwritten.
    Rename,
    /// RENAMENX, MOVE: nothing happens when the destination exists.
    RenameNx,
    /// COPY: the source stays; `replace` overwrites an existing destination.
    Copy { replace: bool },
}

/// What a relocation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relocated {
    Done,
    SourceMissing,
    DestinationExists,
}

/// What OBJECT reports about a key besides its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Wall-clock seconds since the key was last read or written (OBJECT IDLETIME).
    pub idle_secs: u64,
    /// The value was last written by an in-place string update: Redis's `raw` encoding.
    pub raw: bool,
    /// The key's decayed LFU counter (OBJECT FREQ) when its tenant's policy is LFU;
    /// None otherwise (Redis then answers OBJECT FREQ with an error).
    pub freq: Option<u8>,
}

impl Part {
    /// Takes the entry at `pos` out of the index, TTL list and counters without freeing
    /// it (the caller re-inserts, rebuilds or frees it).
    fn detach_at(&mut self, pos: usize) -> Entry {
        let e = self.table.remove(pos, &entry_hash);
        self.modified(e.db(), e.key());
        self.s3_small.leaving(e);
        if e.has_ttl() {
            self.unlist_volatile(e);
        }
        self.keys_per_db[e.db() as usize] -= 1;
        self.entry_bytes -= e.charge() as u64;
        e
    }

    /// Indexes a detached or freshly built entry (its key known to be absent).
    fn insert_entry(&mut self, e: Entry) {
        self.modified(e.db(), e.key());
        self.s3_small.arriving(e);
        if e.has_ttl() {
            e.set_volatile_index(self.volatile.len() as u32);
            self.volatile.push(e);
            self.expires_per_db[e.db() as usize] += 1;
        }
        self.keys_per_db[e.db() as usize] += 1;
        self.entry_bytes += e.charge() as u64;
        self.table.insert(entry_hash(e), e, &entry_hash);
    }

    fn live_pos(&mut self, db: u8, key: &[u8], now_ms: u64) -> Option<usize> {
        let h = db_hash(key_hash(key), db);
        self.find_live_pos(db, key, h, now_ms).ok()
    }
}

/// A new, independent block for `key` holding a copy of `e`'s value (COPY): a hash or
/// set is deep-copied, so the two entries never share an object.
fn copied(e: Entry, db: u8, key: &[u8], ttl: Option<(u64, u32)>) -> Entry {
    match e.object() {
        Some(obj) => {
            let c = Entry::new_object(db, key, Box::new(obj.clone()), ttl, e.atime());
            c.copy_recency_from(&e);
            c
        }
        None => e.rekeyed(db, key, ttl),
    }
}

impl Shard {
    /// RENAME / RENAMENX / MOVE / COPY of `key` in `from` to `newkey` in `to` (same
    /// tenant). `dst` is the shard holding `newkey` when it is not this one (the caller
    /// holds both locks, so the operation is atomic across shards).
    ///
    /// Order, so that no outcome loses data: the destination shard first makes room for
    /// the block it will receive (evicting per policy, as Redis evicts before running a
    /// command); an OOM then leaves everything as it was. Only after that are source and
    /// destination looked up (eviction may have removed either; then the command sees
    /// the keyspace after eviction, as in Redis). The source's TTL goes with it; an
    /// overwritten destination's TTL does not survive. MOVE changes the database byte of
    /// the same block and needs no memory; RENAME and COPY build a block for the new key.
    #[allow(clippy::too_many_arguments)]
    pub fn relocate(
        &mut self,
        dst: Option<&mut Shard>,
        from: Ns,
        key: &[u8],
        to: Ns,
        newkey: &[u8],
        how: Relocation,
        now_ms: u64,
    ) -> Result<Relocated, WriteError> {
        debug_assert_eq!(from.tenant, to.tenant, "relocation stays within a tenant");
        let mut same_block =
            key == newkey && matches!(how, Relocation::Rename | Relocation::RenameNx);
        let copy = matches!(how, Relocation::Copy { .. });
        let replace = matches!(how, Relocation::Rename | Relocation::Copy { replace: true });
        // Look before evicting, so a refusal evicts nothing.
        let (src_len, src_ttl, src_bytes, obj_bytes) = {
            let part = self.part(from.tenant);
            let Some(pos) = part.live_pos(from.db, key, now_ms) else {
                if copy {
                    part.misses += 1;
                    part.event(KeyEvent::KeyMiss, from.db, key);
                }
                self.publish();
                return Ok(Relocated::SourceMissing);
            };
            let e = part.entry(pos);
            // A short block of database 0 has no db byte: MOVE out of it builds a block.
            same_block &= e.can_set_db(to.db);
            let obj_bytes = e.object().map_or(0, |o| o.bytes()) as u64;
            (
                e.value_len(),
                e.has_ttl(),
                e.usable_size() as u64,
                obj_bytes,
            )
        };
        if let Some(dst) = dst {
            return relocate_across(
                self, dst, from, key, to, newkey, how, now_ms, src_len, src_ttl, obj_bytes,
            );
        }
        let exists = self
            .part(to.tenant)
            .live_pos(to.db, newkey, now_ms)
            .is_some();
        if exists && !replace {
            self.publish();
            return Ok(Relocated::DestinationExists);
        }
        if !same_block {
            // A rename in one shard frees the old block as it fills the new one: only
            // the difference needs room (Redis's RENAME allocates nothing).
            let block = Entry::block_size(to.db, newkey.len(), src_len, src_ttl) as u64;
            let incoming = if copy {
                block + obj_bytes
            } else {
                block.saturating_sub(src_bytes)
            };
            self.make_room(to.tenant, incoming)?;
        }
        self.tick();
        let clock = self.clock;
        let part = self.part(from.tenant);
        part.accessed(clock);
        let Some(pos) = part.live_pos(from.db, key, now_ms) else {
            self.publish();
            return Ok(Relocated::SourceMissing);
        };
        if copy {
            part.hits += 1;
        }
        let src = if copy {
            part.entry(pos)
        } else {
            part.detach_at(pos)
        };
        if let Some(dpos) = part.live_pos(to.db, newkey, now_ms) {
            if !replace {
                // Only reachable when eviction changed nothing about the destination
                // but it appeared: put the source back untouched.
                if !copy {
                    part.insert_entry(src);
                }
                self.publish();
                return Ok(Relocated::DestinationExists);
            }
            part.remove_at_lazily(dpos, part.cfg.lazyfree.on_server_del());
        }
        let moved = if same_block {
            src.set_db(to.db);
            src
        } else {
            let ttl = src.expire_at().map(|at| (at, 0));
            if copy {
                copied(src, to.db, newkey, ttl)
            } else {
                // The new block takes over the value (a hash's or set's object too):
                // release only the old block.
                let fresh = src.rekeyed(to.db, newkey, ttl);
                src.free_block();
                fresh
            }
        };
        part.event(KeyEvent::New, to.db, newkey);
        part.insert_entry(moved);
        // A copy is new to the model; a renamed or moved key keeps its history.
        if copy {
            part.admitted(moved, entry_hash(moved), clock);
        } else {
            part.referenced(moved, clock);
        }
        part.writes += 1;
        if !copy {
            self.sample(
                from.tenant,
                db_hash(key_hash(key), from.db),
                0,
                RefKind::Delete,
            );
        }
        self.sample_entry(
            to.tenant,
            db_hash(key_hash(newkey), to.db),
            moved,
            RefKind::Write,
        );
        self.publish();
        Ok(Relocated::Done)
    }
}

/// [`Shard::relocate`] when `newkey` lives in another shard: the new block is built in
/// `dst` (after `dst` made room for it), then the source is removed (RENAME) or kept
/// (COPY). MOVE never gets here (same key, same shard).
#[allow(clippy::too_many_arguments)]
fn relocate_across(
    src: &mut Shard,
    dst: &mut Shard,
    from: Ns,
    key: &[u8],
    to: Ns,
    newkey: &[u8],
    how: Relocation,
    now_ms: u64,
    src_len: usize,
    src_ttl: bool,
    obj_bytes: u64,
) -> Result<Relocated, WriteError> {
    let copy = matches!(how, Relocation::Copy { .. });
    let replace = matches!(how, Relocation::Rename | Relocation::Copy { replace: true });
    if dst
        .part(to.tenant)
        .live_pos(to.db, newkey, now_ms)
        .is_some()
        && !replace
    {
        dst.publish();
        src.publish();
        return Ok(Relocated::DestinationExists);
    }
    // The destination gains the block and, for a hash or set, its object's bytes too
    // (moved or copied, it is charged to the destination shard from now on).
    let block = Entry::block_size(to.db, newkey.len(), src_len, src_ttl) as u64 + obj_bytes;
    if let Err(e) = dst.make_room(to.tenant, block) {
        src.publish();
        return Err(e);
    }
    dst.tick();
    let clock = dst.clock;
    let spart = src.part(from.tenant);
    let Some(pos) = spart.live_pos(from.db, key, now_ms) else {
        src.publish();
        dst.publish();
        return Ok(Relocated::SourceMissing);
    };
    if copy {
        spart.hits += 1;
    }
    let e = spart.entry(pos);
    let ttl = e.expire_at().map(|at| (at, 0));
    let fresh = if copy {
        copied(e, to.db, newkey, ttl)
    } else {
        e.rekeyed(to.db, newkey, ttl)
    };
    if !copy {
        // `fresh` owns the value now (a hash's or set's object included).
        spart.detach_at(pos).free_block();
        src.sample(
            from.tenant,
            db_hash(key_hash(key), from.db),
            0,
            RefKind::Delete,
        );
    }
    src.publish();
    let dpart = dst.part(to.tenant);
    dpart.accessed(clock);
    if let Some(dpos) = dpart.live_pos(to.db, newkey, now_ms) {
        dpart.remove_at_lazily(dpos, dpart.cfg.lazyfree.on_server_del());
    }
    dpart.event(KeyEvent::New, to.db, newkey);
    dpart.insert_entry(fresh);
    // Its tag was of the source shard's clock: to this shard's model it is new.
    dpart.admitted(fresh, entry_hash(fresh), clock);
    dpart.writes += 1;
    let bytes = super::profiled_bytes(fresh);
    dst.sample(
        to.tenant,
        db_hash(key_hash(newkey), to.db),
        bytes,
        RefKind::Write,
    );
    dst.publish();
    Ok(Relocated::Done)
}

impl Shard {
    /// Rewrites a string value in place (SETRANGE, APPEND, SETBIT, BITFIELD), as
    /// Redis's commands modify an unshared sds: the value is first grown to
    /// `len_for(current length)` bytes (never shrunk; new bytes are zero; a missing key
    /// starts empty, without a TTL), then `f` edits it and its result is returned.
    /// Growth reuses the block when it has room and otherwise reallocates it, so the
    /// cost is that of the edit (plus at most one copy of the value when it grows), not
    /// of building a new value. The key keeps its TTL and becomes `raw` (see
    /// [`ObjectInfo::raw`]). `f` gets whether the key existed.
    pub fn update<T>(
        &mut self,
        ns: Ns,
        key: &[u8],
        now_ms: u64,
        len_for: impl Fn(usize) -> usize,
        f: impl FnOnce(&mut [u8], bool) -> T,
    ) -> Result<T, WriteError> {
        let current = {
            let part = self.part(ns.tenant);
            part.live_pos(ns.db, key, now_ms).map(|pos| part.entry(pos))
        };
        if current.is_some_and(|e| e.is_object()) {
            self.publish();
            return Err(WriteError::WrongType);
        }
        let old_len = current.map_or(0, |e| e.value_len());
        let target = len_for(old_len).max(old_len);
        if target > MAX_LEN || key.len() > MAX_LEN {
            self.publish();
            return Err(WriteError::TooLarge);
        }
        let needs_block = match current {
            None => true,
            Some(e) => target > old_len && !e.fits_in_place(target),
        };
        if needs_block {
            let ttl = current.is_some_and(|e| e.has_ttl());
            self.make_room(
                ns.tenant,
                Entry::block_size(ns.db, key.len(), target, ttl) as u64,
            )?;
        }
        let now = self.tick();
        let clock = self.clock;
        let h = db_hash(key_hash(key), ns.db);
        let part = self.part(ns.tenant);
        part.accessed(clock);
        let (e, existed) = match part.find_live_pos(ns.db, key, h, now_ms) {
            Ok(pos) => {
                let e = part.entry(pos);
                // Eviction may have removed other keys only: same length as peeked.
                let target = len_for(e.value_len()).max(e.value_len());
                let before = e.usable_size() as u64;
                let grown = if target > e.value_len() {
                    e.grow_value(target)
                } else {
                    e
                };
                if grown != e {
                    part.table.replace(pos, grown, &entry_hash);
                    if grown.has_ttl() {
                        part.volatile[grown.volatile_index() as usize] = grown;
                    }
                }
                part.entry_bytes += grown.usable_size() as u64;
                part.entry_bytes -= before;
                (grown, true)
            }
            Err(vacancy) => {
                part.event(KeyEvent::New, ns.db, key);
                let e = Entry::new(ns.db, key, b"", None, now).grow_value(len_for(0));
                part.entry_bytes += e.usable_size() as u64;
                part.keys_per_db[ns.db as usize] += 1;
                part.table.insert_at_vacancy(h, e, vacancy, &entry_hash);
                (e, false)
            }
        };
        part.modified(ns.db, key);
        e.set_raw(true);
        if existed {
            part.referenced(e, clock);
        } else {
            part.admitted(e, h, clock);
        }
        part.writes += 1;
        let out = f(e.value_mut(), existed);
        self.sample_entry(ns.tenant, h, e, RefKind::Write);
        self.publish();
        Ok(out)
    }

    /// Marks a key's string value as Redis's `raw` encoding (BITOP's result, which
    /// Redis stores without tryObjectEncoding).
    pub fn mark_raw(&mut self, ns: Ns, key: &[u8], now_ms: u64) {
        if let Some(e) = self.part(ns.tenant).find_live(ns.db, key, now_ms) {
            e.set_raw(true);
        }
    }

    /// OBJECT IDLETIME / ENCODING's view of a key, without touching it.
    pub fn object_info(&mut self, ns: Ns, key: &[u8], now_ms: u64) -> Option<ObjectInfo> {
        let clock = self.clock;
        let lfu = self.config.tenant_policy(ns.tenant).is_lfu();
        let part = self.part(ns.tenant);
        let e = part.find_readable(ns.db, key, now_ms)?;
        let freq = lfu.then(|| crate::lfu::counter(e, clock, &part.lfu_state_mut().marks));
        // The entry keeps the clock's low 32 bits; widen within the last 2^32 accesses.
        let atime = clock - e.idle(clock as u32) as u64;
        Some(ObjectInfo {
            idle_secs: self.wall.idle_secs(atime, now_ms / 1000),
            raw: e.is_raw(),
            freq,
        })
    }

    /// RESTORE ... IDLETIME / FREQ (Redis's `objectSetLRUOrLFU`): under an LFU policy
    /// (the tenant's) `freq` becomes the key's counter as of now and `idle_secs` is
    /// ignored; under any other, `idle_secs` makes the key look last used that many
    /// seconds ago, to OBJECT IDLETIME and to eviction alike (its access time becomes the
    /// clock value the shard had then, see `WallClock::clock_for_idle`), and `freq` is
    /// ignored. True if the key exists.
    pub fn set_recency(
        &mut self,
        ns: Ns,
        key: &[u8],
        idle_secs: Option<u64>,
        freq: Option<u8>,
        now_ms: u64,
    ) -> bool {
        let clock = self.clock;
        let lfu = self.config.tenant_policy(ns.tenant).is_lfu();
        let atime = match (lfu, idle_secs) {
            (false, Some(idle)) => Some(self.wall.clock_for_idle(idle, now_ms / 1000, clock)),
            _ => None,
        };
        let part = self.part(ns.tenant);
        let Some(e) = part.find_live(ns.db, key, now_ms) else {
            return false;
        };
        match (freq, atime) {
            (Some(f), _) if lfu => {
                part.s3_small.leaving(e);
                crate::lfu::set_frequency(e, clock, f)
            }
            (_, Some(t)) => {
                part.s3_small.leaving(e);
                e.set_atime(t as u32)
            }
            _ => {}
        }
        true
    }

    /// Dates the logical clock (see the `wallclock` module); the active expiry cycle
    /// calls it `hz` times a second.
    pub(crate) fn note_wall_clock(&mut self, now_ms: u64) {
        self.wall.note(self.clock, now_ms / 1000);
        if self.config.policy().is_lfu() || self.parts.iter().any(|p| p.lfu.is_some()) {
            let wall = &self.wall;
            let marks = Arc::new(DecayMarks::new(
                now_ms / 1000,
                self.config.lfu_decay_minutes(),
                |sec| wall.clock_by(sec),
            ));
            for lfu in self.parts.iter_mut().filter_map(|p| p.lfu.as_deref_mut()) {
                lfu.marks = Arc::clone(&marks);
            }
            self.lfu_marks = marks;
        }
    }

    /// One shard's part of a SCAN call: walks tenant `ns.tenant`'s positions from `top`
    /// (exclusive) downwards, collecting live keys of `ns.db` that match `pattern`, until
    /// `want` keys of the database were seen (matching or not: like Redis, COUNT bounds
    /// the keys examined, and MATCH filters them afterwards) or `max_positions` were
    /// examined. Having seen enough, it walks on to the next key of the database, so
    /// the next call does not start with an empty stretch. Returns (where to resume,
    /// 0 when the shard is done; keys of the database seen; positions examined).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn scan_walk(
        &self,
        ns: Ns,
        top: usize,
        want: usize,
        max_positions: usize,
        pattern: Option<&[u8]>,
        now_ms: u64,
        out: &mut Vec<Vec<u8>>,
    ) -> (usize, usize, usize) {
        let Some(part) = self.parts.get(ns.tenant as usize) else {
            return (0, 0, 0);
        };
        let mut pos = top.min(part.table.positions());
        let mut seen = 0;
        let mut examined = 0;
        while pos > 0 && examined < max_positions {
            let Some(e) = part.table.at(pos - 1) else {
                pos -= 1;
                examined += 1;
                continue;
            };
            if e.db() != ns.db {
                pos -= 1;
                examined += 1;
                continue;
            }
            if seen >= want {
                // The next call starts at this key.
                return (pos, seen, examined);
            }
            pos -= 1;
            examined += 1;
            seen += 1;
            if e.expire_at().is_some_and(|at| now_ms > at) {
                continue;
            }
            if pattern.is_none_or(|p| crate::glob::glob_match(p, e.key())) {
                out.push(e.key().to_vec());
            }
        }
        (pos, seen, examined)
    }
}
