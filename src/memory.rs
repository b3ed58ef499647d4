//! The process's memory. The library asks for freed memory to be reused or given back;
//! the binary, which chooses the allocator (mimalloc, `src/main.rs`), says how
//! ([`set_collector`]). Without a collector these requests do nothing.
//!
//! mimalloc keeps a heap per thread, and a thread can only tidy its own: the thread that
//! asks does at once, the runtime's threads when they next go idle ([`answer_requests`]).

use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Tidies the calling thread's heap: `true` gives freed memory back to the system,
/// `false` makes it reusable by every thread.
pub type Collector = fn(give_back: bool);

static COLLECTOR: OnceLock<Collector> = OnceLock::new();

/// Sets how heaps are tidied, once, before any work: the binary's allocator's hook.
pub fn set_collector(collector: Collector) {
    let _ = COLLECTOR.set(collector);
}

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
            if let Some(collect) = COLLECTOR.get() {
                collect(releases != asked.1);
            }
        }
    });
}
