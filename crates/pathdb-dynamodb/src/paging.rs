//! Page sizes that adapt to a slow endpoint: a `Scan` or `Query` page whose answer does not
//! arrive within the attempt timeout is asked again for half as many items, down to
//! [`PageSize::FLOOR`], and the size grows back once answers come quickly again.
//!
//! Retrying a timed-out page with the same `Limit` would time out again on an endpoint that is
//! slow for that much work (DynamoDB Local, moto, a distant region, large items): the request
//! would fail for good however often it was retried (docs/dynamodb.md, "Slow endpoints"). An
//! answer's time grows with the items it carries, so fewer items is what can succeed.
//!
//! One [`PageSize`] per kind of request lives in the backend and is shared by every caller, so
//! an export's next page starts at the size that last worked instead of timing out again.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The largest `Limit` the next page of one kind of request may ask for.
#[derive(Debug)]
pub(crate) struct PageSize {
    /// The most items a page of this kind asks for.
    largest: u32,
    /// [`PageSize::UNCAPPED`] until a page times out.
    cap: AtomicU32,
    /// Quick answers in a row at the cap: growth waits for [`PageSize::QUICK_BEFORE_GROWING`].
    quick: AtomicU32,
}

/// What to do after a page timed out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AfterTimeout {
    /// Ask again with this smaller `Limit`.
    Shrunk(u32),
    /// The page was already at the floor: retry it as any other failure.
    AtFloor,
}

impl PageSize {
    /// The page size of requests that ask for at most `largest` items each.
    pub(crate) fn new(largest: u32) -> PageSize {
        PageSize {
            largest,
            cap: AtomicU32::new(Self::UNCAPPED),
            quick: AtomicU32::new(0),
        }
    }

    /// No page is asked for fewer items than this after timeouts: a page this small that still
    /// times out points at the endpoint, not at the work, and is retried as usual.
    pub(crate) const FLOOR: u32 = 16;
    const UNCAPPED: u32 = u32::MAX;
    /// Quick answers in a row before the cap doubles. One would let the size swing between a
    /// size that times out and half of it, paying a timeout every other page.
    const QUICK_BEFORE_GROWING: u32 = 4;

    /// The `Limit` for a page that wants `wanted` items (at least 1).
    pub(crate) fn limit(&self, wanted: u32) -> u32 {
        wanted.min(self.cap.load(Ordering::Relaxed)).max(1)
    }

    /// A page asked with `limit` timed out.
    pub(crate) fn timed_out(&self, limit: u32) -> AfterTimeout {
        self.quick.store(0, Ordering::Relaxed);
        if limit <= Self::FLOOR {
            return AfterTimeout::AtFloor;
        }
        let smaller = (limit / 2).max(Self::FLOOR);
        // Several callers may time out at once: the cap only ever goes down here.
        self.cap.fetch_min(smaller, Ordering::Relaxed);
        AfterTimeout::Shrunk(smaller)
    }

    /// A page asked with `limit` was answered after `took`; `attempt_timeout` is the budget's.
    /// An answer in under a quarter of the timeout from a page the cap held back counts towards
    /// doubling the cap; once it would reach the largest page of the kind, the cap is gone.
    pub(crate) fn answered(&self, limit: u32, took: Duration, attempt_timeout: Duration) {
        let cap = self.cap.load(Ordering::Relaxed);
        if cap == Self::UNCAPPED || limit < cap {
            return;
        }
        if took >= attempt_timeout / 4 {
            self.quick.store(0, Ordering::Relaxed);
            return;
        }
        if self.quick.fetch_add(1, Ordering::Relaxed) + 1 >= Self::QUICK_BEFORE_GROWING {
            self.quick.store(0, Ordering::Relaxed);
            let doubled = cap.saturating_mul(2);
            let grown = if doubled >= self.largest {
                Self::UNCAPPED
            } else {
                doubled
            };
            let _ = self
                .cap
                .compare_exchange(cap, grown, Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// The current cap, `None` when no page has timed out (or the size grew all the way back).
    #[cfg(test)]
    fn cap(&self) -> Option<u32> {
        let cap = self.cap.load(Ordering::Relaxed);
        (cap != Self::UNCAPPED).then_some(cap)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(3);
    const QUICK: Duration = Duration::from_millis(10);

    #[test]
    fn a_timeout_halves_the_page_down_to_the_floor() {
        let size = PageSize::new(1000);
        assert_eq!(size.limit(1000), 1000);
        assert_eq!(size.timed_out(1000), AfterTimeout::Shrunk(500));
        assert_eq!(size.limit(1000), 500);
        // A smaller want is not raised to the cap.
        assert_eq!(size.limit(100), 100);
        let mut limit = 500;
        while let AfterTimeout::Shrunk(next) = size.timed_out(limit) {
            assert!(next < limit && next >= PageSize::FLOOR);
            limit = next;
        }
        assert_eq!(limit, PageSize::FLOOR);
        assert_eq!(size.limit(1000), PageSize::FLOOR);
        assert_eq!(size.timed_out(PageSize::FLOOR), AfterTimeout::AtFloor);
        assert_eq!(size.cap(), Some(PageSize::FLOOR));
    }

    #[test]
    fn quick_answers_grow_the_page_back() {
        let size = PageSize::new(1000);
        size.timed_out(1000);
        size.timed_out(500);
        assert_eq!(size.cap(), Some(250));
        for _ in 0..PageSize::QUICK_BEFORE_GROWING - 1 {
            size.answered(250, QUICK, TIMEOUT);
        }
        assert_eq!(size.cap(), Some(250), "one quick answer is not enough");
        size.answered(250, QUICK, TIMEOUT);
        assert_eq!(size.cap(), Some(500));
        // A slow answer (over a quarter of the timeout) resets the count.
        for _ in 0..PageSize::QUICK_BEFORE_GROWING - 1 {
            size.answered(500, QUICK, TIMEOUT);
        }
        size.answered(500, TIMEOUT / 2, TIMEOUT);
        size.answered(500, QUICK, TIMEOUT);
        assert_eq!(size.cap(), Some(500));
        // Pages below the cap say nothing about it.
        for _ in 0..10 {
            size.answered(20, QUICK, TIMEOUT);
        }
        assert_eq!(size.cap(), Some(500));
        // Enough quick answers lift the cap altogether.
        for _ in 0..100 {
            size.answered(size.limit(1000), QUICK, TIMEOUT);
        }
        assert_eq!(size.cap(), None);
        assert_eq!(size.limit(1000), 1000);
    }
}

#[cfg(test)]
mod small_pages {
    use super::*;

    /// Quick small pages (a listing of 14 items while the cap is 16) do not lift the cap that
    /// the kind's large pages (an export's 1,000) still need.
    #[test]
    fn quick_small_pages_keep_the_cap_for_large_ones() {
        let size = PageSize::new(1000);
        let mut limit = 1000;
        while let AfterTimeout::Shrunk(next) = size.timed_out(limit) {
            limit = next;
        }
        for _ in 0..8 {
            size.answered(
                size.limit(16),
                Duration::from_millis(1),
                Duration::from_secs(3),
            );
        }
        // Doubled once (pages of 16 no longer reach the cap of 32), not lifted.
        assert_eq!(size.limit(1000), 32);
    }
}
