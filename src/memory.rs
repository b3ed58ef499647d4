//! The process's memory: the binary allocates with mimalloc (`src/main.rs`).

/// Gives the memory freed so far back to the system, instead of keeping it for later
/// allocations: between the buckets of an analysis, so that what one bucket freed is not
/// held while the next one runs. With another allocator this does nothing.
pub fn release_freed() {
    // SAFETY: mi_collect only walks mimalloc's own heaps; any thread may call it.
    unsafe { libmimalloc_sys::mi_collect(true) }
}
