//! The process's memory: the binary allocates with mimalloc (`src/main.rs`).
//!
//! mimalloc keeps a heap per thread, and a thread can only tidy its own: the thread that
//! asks does at once, the runtime's threads when they next go idle ([`answer_requests`]).
//! With another allocator these do nothing.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many times [`reuse_freed`] or [`release_freed`] was called.
static REUSES: AtomicU64 = AtomicU64::new(0);
/// How many times [`release_freed`] was called.
static RELEASES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The ([`REUSES`], [`RELEASES`]) this thread has answered.
    static ANSWERED: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// Makes the memory freed so far reusable by every thread, without giving it back to the
/// system: between the buckets of an analysis, whose next bucket needs as much again (its
/// pages are then not faulted in anew).
pub fn reuse_freed() {
    REUSES.fetch_add(1, Ordering::Relaxed);
    answer_requests();
}

/// Gives the memory freed so far back to the system, instead of keeping it for later
/// allocations: after the buckets of an analysis, so that what they freed is not held
/// while the results are put together.
pub fn release_freed() {
    RELEASES.fetch_add(1, Ordering::Relaxed);
    reuse_freed();
}

/// Tidies this thread's heap if asked to since it last did: for the async runtime's
/// threads, whenever they park.
pub fn answer_requests() {
    let asked = (REUSES.load(Ordering::Relaxed), RELEASES.load(Ordering::Relaxed));
    ANSWERED.with(|answered| {
        let (reuses, releases) = answered.get();
        if (reuses, releases) != asked {
            answered.set(asked);
            // SAFETY: mi_collect only walks mimalloc's own heaps; any thread may call it.
            unsafe { libmimalloc_sys::mi_collect(releases != asked.1) }
        }
    });
}
