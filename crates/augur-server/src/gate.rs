//! The atomicity gate: lets a transaction (EXEC) or a script run with no other command
//! interleaved, across all shards, while ordinary commands pay almost nothing.
//!
//! Redis gets atomicity for free from its single thread. Augur runs commands on several
//! threads and locks one shard (or a few, in order) per command, so a MULTI/EXEC block
//! that touches keys on different shards needs a second level: every ordinary command
//! holds the gate *shared*, and EXEC / EVAL hold it *exclusively* for their whole body.
//!
//! Why striped: one reader-writer lock would put every command's lock and unlock on the
//! same cache line, which two cores then pass back and forth on each request. Instead
//! the gate is a "big-reader" lock: one stripe per thread (round-robin over
//! [`STRIPES`] padded locks), taken shared by commands on that thread — uncontended and
//! core-local — and all stripes, in order, taken exclusively by the rare writer.
//! Writers all lock stripes in the same order, so they cannot deadlock each other, and a
//! writer never holds a shard lock while waiting for a stripe.

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How long a waiter sleeps between two looks at its cancel condition.
const WAIT_SLICE: std::time::Duration = std::time::Duration::from_millis(2);

/// Stripes: more than the worker threads of any machine we expect, so that each thread
/// usually owns one.
pub const STRIPES: usize = 32;

#[repr(align(128))]
#[derive(Default)]
struct Stripe(RwLock<()>);

pub struct ExecGate {
    stripes: Box<[Stripe]>,
}

/// Shared hold on the gate: ordinary commands run under it.
pub struct SharedHold<'a>(#[allow(dead_code)] RwLockReadGuard<'a, ()>);

/// Exclusive hold: nothing else runs a command while it lives.
pub struct ExclusiveHold<'a>(#[allow(dead_code)] Vec<RwLockWriteGuard<'a, ()>>);

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static MY_STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn my_stripe() -> usize {
    MY_STRIPE.with(|s| {
        let mut i = s.get();
        if i == usize::MAX {
            i = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
            s.set(i);
        }
        i
    })
}

impl Default for ExecGate {
    fn default() -> Self {
        Self {
            stripes: (0..STRIPES).map(|_| Stripe::default()).collect(),
        }
    }
}

impl ExecGate {
    /// Holds the gate shared for one ordinary command (or one batch of background work).
    /// Must not be called by a thread that holds it exclusively (it would wait on itself).
    #[inline]
    pub fn shared(&self) -> SharedHold<'_> {
        SharedHold(self.stripes[my_stripe()].0.read())
    }

    /// Like [`ExecGate::shared`], but gives up (None) if `cancel` turns true while
    /// waiting: a script that runs past busy-reply-threshold holds the gate, and the
    /// commands waiting for it must then answer BUSY instead.
    pub fn shared_unless(&self, cancel: impl Fn() -> bool) -> Option<SharedHold<'_>> {
        let lock = &self.stripes[my_stripe()].0;
        if let Some(g) = lock.try_read() {
            return Some(SharedHold(g));
        }
        loop {
            if cancel() {
                return None;
            }
            if let Some(g) = lock.try_read_for(WAIT_SLICE) {
                return Some(SharedHold(g));
            }
        }
    }

    /// Like [`ExecGate::exclusive`], giving up (None, nothing held) if `cancel` turns
    /// true while waiting.
    pub fn exclusive_unless(&self, cancel: impl Fn() -> bool) -> Option<ExclusiveHold<'_>> {
        let mut held = Vec::with_capacity(self.stripes.len());
        for s in self.stripes.iter() {
            loop {
                if let Some(g) = s.0.try_write_for(WAIT_SLICE) {
                    held.push(g);
                    break;
                }
                if cancel() {
                    return None;
                }
            }
        }
        Some(ExclusiveHold(held))
    }

    /// Waits until no command runs and holds off every other until dropped.
    pub fn exclusive(&self) -> ExclusiveHold<'_> {
        ExclusiveHold(self.stripes.iter().map(|s| s.0.write()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    /// Two counters that writers change together under the exclusive hold, while
    /// readers under the shared hold change them one at a time: an exclusive holder must
    /// never see them differ.
    #[test]
    fn exclusive_excludes_every_shared_holder() {
        let gate = Arc::new(ExecGate::default());
        let a = Arc::new(AtomicU64::new(0));
        let b = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        for _ in 0..4 {
            let (gate, a, b) = (gate.clone(), a.clone(), b.clone());
            threads.push(std::thread::spawn(move || {
                for _ in 0..20_000 {
                    let _h = gate.shared();
                    a.fetch_add(1, Ordering::SeqCst);
                    std::hint::spin_loop();
                    b.fetch_add(1, Ordering::SeqCst);
                }
            }));
        }
        let mut checks = 0;
        while threads.iter().any(|t| !t.is_finished()) {
            let _x = gate.exclusive();
            assert_eq!(a.load(Ordering::SeqCst), b.load(Ordering::SeqCst));
            checks += 1;
        }
        for t in threads {
            t.join().unwrap();
        }
        assert!(checks > 0);
        assert_eq!(a.load(Ordering::SeqCst), 80_000);
    }
}
