//! Wall-clock seconds for the shard's logical clock, so OBJECT IDLETIME can answer in
//! seconds as Redis does (object.c: `estimateObjectIdleTime`) while eviction keeps
//! ranking keys by logical time (accesses), as DESIGN.md wants.
//!
//! Why not a timestamp per entry: the entry header is 12 bytes on purpose (a cache sells
//! memory per key); 4 more bytes would move many entries to a larger jemalloc size
//! class. Instead the shard keeps a short, ordered list of observations "by wall second
//! `s`, the clock had reached `c`", taken by the active expiry cycle (`hz` times a
//! second). An entry's `atime` is a clock value, so the first observation with
//! `c >= atime` names the second by which the access had happened: the access is dated
//! to within one cycle (100 ms at the default `hz` 10), like Redis's 1-second LRU clock.
//!
//! The list is bounded: when it is full, the observation whose loss blurs dates least
//! relative to their age is dropped, so recent accesses keep a one-second resolution
//! and old ones a resolution proportional to their age (a few percent). Dropping an
//! observation dates the accesses it covered to the next one kept, i.e. later: an idle
//! time is never overstated.

use std::collections::VecDeque;

/// Observations kept per shard (16 bytes each).
const MAX_POINTS: usize = 512;

#[derive(Debug)]
pub(crate) struct WallClock {
    /// (clock, unix second), both strictly increasing.
    points: VecDeque<(u64, u64)>,
    /// The lowest clock value an access can have; values below it are markers for keys
    /// backdated past every access (see [`clock_for_idle`](Self::clock_for_idle)).
    base: u64,
}

impl WallClock {
    /// A wall clock for a logical clock whose accesses are numbered from `base` up.
    pub(crate) fn new(base: u64) -> WallClock {
        WallClock {
            points: VecDeque::new(),
            base,
        }
    }

    /// Records that by second `sec` the clock had reached `clock`.
    pub(crate) fn note(&mut self, clock: u64, sec: u64) {
        // Below `base` no access happened yet: nothing to date.
        if clock < self.base {
            return;
        }
        match self.points.back_mut() {
            // Same second: the later clock value is the better bound for it.
            Some(last) if last.1 >= sec => last.0 = last.0.max(clock),
            // No access since the last observation: nothing new to date.
            Some(last) if last.0 >= clock => {}
            _ => self.points.push_back((clock, sec)),
        }
        if self.points.len() > MAX_POINTS {
            self.drop_one(sec);
        }
    }

    /// Drops the observation whose loss blurs dates least relative to their age:
    /// removing point i dates the accesses it covered to point i + 1, an error of at
    /// most `s[i+1] - s[i-1]` seconds on accesses at least `now - s[i-1]` old. The
    /// oldest and newest points are always kept. Runs at most once a second per shard, over 512
    /// points.
    fn drop_one(&mut self, now_sec: u64) {
        let p = &self.points;
        let mut best = (f64::INFINITY, 1);
        // The oldest point bounds every older access: its loss would have no bound.
        for i in 1..p.len() - 1 {
            let prev = p[i - 1].1;
            let blur = (p[i + 1].1 - prev) as f64;
            let age = (now_sec.saturating_sub(prev) + 1) as f64;
            if blur / age < best.0 {
                best = (blur / age, i);
            }
        }
        self.points.remove(best.1);
    }

    /// A clock value whose [`idle_secs`](Self::idle_secs) at `now_sec` is at most
    /// `idle` seconds and as close to it as the observations allow: what RESTORE ...
    /// IDLETIME gives a key (Redis's `objectSetLRUOrLFU`), so eviction ranks it among
    /// the keys last used then.
    ///
    /// - Within the observations (one before the target second): the first observation
    ///   made by second `now_sec - idle` or later names it (dated later than asked by
    ///   less than the observations' spacing).
    /// - Older than every access: a *marker*, a clock value below the first access
    ///   (`base`) between its neighbours' values, with an observation `(marker, target)`
    ///   that dates it exactly. Markers keep their order by second, so keys restored as
    ///   idle for different times rank among themselves by those times and all rank
    ///   older than every access, even on a fresh shard whose first observation came
    ///   after its first accesses. Bisecting `[0, base)` leaves room for ~log2(base)
    ///   insertions between two neighbours; when there is none, the next observation
    ///   dates the key (later than asked, never earlier).
    pub(crate) fn clock_for_idle(&mut self, idle: u64, now_sec: u64, clock_now: u64) -> u64 {
        let target = now_sec.saturating_sub(idle);
        if target >= now_sec {
            return clock_now;
        }
        let i = self.points.partition_point(|&(_, s)| s < target);
        let next = self.points.get(i).copied();
        if let Some((c, s)) = next {
            if s == target {
                return c;
            }
        }
        let prev = i.checked_sub(1).map(|j| self.points[j].0);
        if prev.is_some_and(|c| c >= self.base) {
            return self.first_observed_from(next, clock_now, now_sec);
        }
        let lo = prev.map_or(0, |c| c + 1);
        let hi = next.map_or(self.base, |(c, _)| c.min(self.base));
        if lo >= hi {
            return self.first_observed_from(next, clock_now, now_sec);
        }
        let marker = lo + (hi - lo) / 2;
        self.points.insert(i, (marker, target));
        marker
    }

    /// The clock of `next`, the first observation at or after a backdate's target
    /// second; with none (the target is later than every observation), `clock_now`,
    /// observed now, at `now_sec`. Why observed: a later backdate to an earlier second
    /// is dated by the first observation after its target, and without this one that
    /// would be the next cycle's, a clock value past `clock_now`: the key backdated
    /// further would rank newer than this one (found by
    /// `backdates_keep_order_and_never_overstate`).
    fn first_observed_from(
        &mut self,
        next: Option<(u64, u64)>,
        clock_now: u64,
        now_sec: u64,
    ) -> u64 {
        match next {
            Some((c, _)) => c,
            None => {
                self.note(clock_now, now_sec);
                clock_now
            }
        }
    }

    /// The last clock value accessed by second `sec` (0 if none was observed by then):
    /// LFU's decay marks (`crate::lfu::DecayMarks`).
    pub(crate) fn clock_by(&self, sec: u64) -> u64 {
        let i = self.points.partition_point(|&(_, s)| s <= sec);
        i.checked_sub(1).map_or(0, |j| self.points[j].0)
    }

    /// Whole seconds since the access at clock value `atime`, at `now_sec`. An access
    /// after the last observation happened within the last cycle: 0.
    pub(crate) fn idle_secs(&self, atime: u64, now_sec: u64) -> u64 {
        let i = self.points.partition_point(|&(c, _)| c < atime);
        match self.points.get(i) {
            Some(&(_, sec)) => now_sec.saturating_sub(sec),
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_are_dated_to_the_second_they_were_observed_by() {
        let mut w = WallClock::new(1);
        // Clock 0..=10 by second 100, 11..=30 by second 101, nothing until 105.
        w.note(10, 100);
        w.note(30, 101);
        w.note(30, 103);
        w.note(31, 105);
        assert_eq!(w.idle_secs(5, 110), 10);
        assert_eq!(w.idle_secs(10, 110), 10);
        assert_eq!(w.idle_secs(11, 110), 9);
        assert_eq!(w.idle_secs(31, 110), 5);
        // Not observed yet: within the last cycle.
        assert_eq!(w.idle_secs(32, 110), 0);
        // Same-second observations keep the latest clock.
        w.note(40, 105);
        assert_eq!(w.idle_secs(40, 106), 1);
    }

    #[test]
    fn a_clock_for_an_idle_time_dates_it_exactly_or_later() {
        // Nothing observed yet: 1000 s back gets clock 0, dated by a front observation.
        let mut w = WallClock::new(1);
        let c = w.clock_for_idle(1000, 5000, 7);
        assert_eq!(c, 0);
        assert_eq!(w.idle_secs(c, 5000), 1000);
        assert_eq!(w.idle_secs(5, 5000), 0, "earlier accesses are dated now");
        assert_eq!(w.idle_secs(c, 5010), 1010);
        // Within the observations: the first one at or after the target second.
        let mut w = WallClock::new(1);
        for s in 100..200u64 {
            w.note(s * 10, s);
        }
        let c = w.clock_for_idle(50, 200, 2000);
        assert_eq!(w.idle_secs(c, 200), 50);
        // Older than every observation: a front observation (0, second).
        let c = w.clock_for_idle(150, 200, 2000);
        assert_eq!((c, w.idle_secs(c, 200)), (0, 150));
        // Older still: dated by that observation, later than asked, never earlier.
        let c = w.clock_for_idle(190, 200, 2000);
        assert_eq!((c, w.idle_secs(c, 200)), (0, 150));
        // Later than every observation: now.
        let c = w.clock_for_idle(0, 200, 2000);
        assert_eq!(w.idle_secs(c, 200), 0);
        // Real accesses keep their dates.
        assert_eq!(w.idle_secs(1000, 200), 100);
        assert_eq!(w.idle_secs(1, 200), 100);
    }

    #[test]
    fn keys_backdated_past_every_access_keep_their_order_and_dates() {
        // A fresh shard: accesses 1001..=1300 happen before its first observation (as
        // when writes arrive before the first active expiry cycle), then keys are
        // restored as idle for 5000, 1000, 3000, 1000, 2000 and 4000 s over two seconds.
        let base = 1001;
        let mut w = WallClock::new(base);
        w.note(1300, 100_000);
        let mut got = Vec::new();
        for (idle, now) in [(5000, 100_000), (1000, 100_000), (3000, 100_001)] {
            got.push((idle + 100_001 - now, w.clock_for_idle(idle, now, 1300)));
        }
        for idle in [1000, 2000, 4000] {
            got.push((idle, w.clock_for_idle(idle, 100_001, 1300)));
        }
        for &(idle, c) in &got {
            assert!(c < base, "{c} ranks among the accesses");
            assert_eq!(w.idle_secs(c, 100_001), idle);
        }
        // Longer idle time, smaller clock value: eviction ranks them in that order.
        got.sort();
        assert!(got.windows(2).all(|p| p[0].1 >= p[1].1), "{got:?}");
        // The accesses' dates are untouched.
        assert_eq!(w.idle_secs(1001, 100_001), 1);
        // No room left between two markers: the later one dates the key (never earlier).
        let mut w = WallClock::new(2);
        assert_eq!(w.clock_for_idle(100, 1000, 5), 1);
        assert_eq!(w.clock_for_idle(200, 1000, 5), 0);
        assert_eq!(w.clock_for_idle(150, 1000, 5), 1);
        assert_eq!(w.idle_secs(1, 1000), 100);
    }

    /// The case `backdates_keep_order_and_never_overstate` found: a key backdated to
    /// a second after every observation is dated now; one backdated later to an earlier
    /// second (still after the last observation made before the first) must not be
    /// dated past it by an observation made in between.
    #[test]
    fn a_backdate_dated_now_stays_newer_than_later_backdates_further_back() {
        let mut w = WallClock::new(1000);
        w.note(1000, 1_000_000);
        let newer = w.clock_for_idle(1, 1_000_004, 1002);
        assert_eq!(newer, 1002);
        w.note(1059, 1_000_090);
        let older = w.clock_for_idle(109, 1_000_110, 1070);
        assert!(older <= newer, "{older} > {newer}");
        assert!(w.idle_secs(older, 1_000_110) <= 109);
        // The access before the first backdate is dated by the observation it made
        // (second 1_000_004), not by the next cycle's (1_000_090): never overstated.
        assert_eq!(w.idle_secs(1001, 1_000_110), 106);
    }

    #[test]
    fn bounded_and_never_overstates_idle_time() {
        let mut w = WallClock::new(1);
        for s in 0..10_000u64 {
            w.note(s * 10 + 10, s);
        }
        assert!(w.points.len() <= MAX_POINTS);
        for s in (0..10_000u64).step_by(37) {
            let atime = s * 10 + 5;
            let idle = w.idle_secs(atime, 10_000);
            let exact = 10_000 - s;
            assert!(idle <= exact, "{idle} > {exact}");
            // Recent accesses exact, old ones within a few percent of their age.
            if exact < 100 {
                assert_eq!(idle, exact);
            } else {
                assert!(idle * 100 >= exact * 95, "{idle} vs {exact}");
            }
        }
    }

    proptest::proptest! {
        /// Any interleaving of accesses, observations and RESTORE ... IDLETIME backdates:
        /// observations stay strictly increasing in clock and second; a backdated key is
        /// never dated earlier than asked; keys backdated further rank no newer; and
        /// backdates never move the dates of accesses.
        #[test]
        fn backdates_keep_order_and_never_overstate(
            ops in proptest::collection::vec((0u8..3, 0u64..5000, 0u64..3), 1..200)
        ) {
            let base = 1000;
            let mut w = WallClock::new(base);
            let (mut clock, mut sec) = (base - 1, 1_000_000u64);
            let mut accesses: Vec<u64> = Vec::new();
            // (absolute target second, clock given)
            let mut backdated: Vec<(u64, u64)> = Vec::new();
            for (op, x, dt) in ops {
                sec += dt;
                match op {
                    0 => {
                        clock += 1 + x % 7;
                        accesses.push(clock);
                    }
                    1 => w.note(clock, sec),
                    _ => {
                        // RESTORE writes the key first (an access), then dates it.
                        clock += 1;
                        let dates: Vec<u64> = accesses.iter().map(|&a| w.idle_secs(a, sec)).collect();
                        let c = w.clock_for_idle(x, sec, clock);
                        proptest::prop_assert!(w.idle_secs(c, sec) <= x, "dated earlier than asked");
                        let after: Vec<u64> = accesses.iter().map(|&a| w.idle_secs(a, sec)).collect();
                        proptest::prop_assert_eq!(dates, after);
                        if x > 0 {
                            backdated.push((sec - x, c));
                        }
                    }
                }
                let p = &w.points;
                proptest::prop_assert!(p.iter().zip(p.iter().skip(1)).all(|(a, b)| a.0 < b.0 && a.1 < b.1), "{:?}", p);
            }
            for &(t1, c1) in &backdated {
                for &(t2, c2) in &backdated {
                    if t1 < t2 {
                        proptest::prop_assert!(c1 <= c2, "{t1}->{c1} vs {t2}->{c2}");
                    }
                }
            }
        }
    }
}
