//! The process's memory: the binary allocates with mimalloc (`src/main.rs`).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many times [`release_freed`] was called.
static RELEASES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The [`RELEASES`] this thread has answered.
    static ANSWERED: Cell<u64> = const { Cell::new(0) };
}

/// Gives the memory freed so far back to the system, instead of keeping it for later
/// allocations: between the buckets of an analysis, so that what one bucket freed is not
/// held while the next one runs. mimalloc keeps a heap per thread, and a thread can only
/// give back its own: this thread does at once, the runtime's threads when they next go
/// idle ([`answer_release`]). With another allocator this does nothing.
pub fn release_freed() {
    RELEASES.fetch_add(1, Ordering::Relaxed);
    answer_release();
}

/// Gives back what this thread's heap freed if a release was asked for since it last did:
/// for the async runtime's threads, whenever they park.
pub fn answer_release() {
    let asked = RELEASES.load(Ordering::Relaxed);
    ANSWERED.with(|answered| {
        if answered.get() != asked {
            answered.set(asked);
            // SAFETY: mi_collect only walks mimalloc's own heaps; any thread may call it.
            unsafe { libmimalloc_sys::mi_collect(true) }
        }
    });
}
