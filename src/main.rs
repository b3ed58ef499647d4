mod cli;

use std::process::ExitCode;

// Analysis allocates and frees large Arrow buffers from several threads; mimalloc reuses
// or gives back freed memory when asked (`tracelake::memory`: reused between buckets,
// given back after the last).
// Built without transparent huge pages: with them a 1M-event analysis touched 30 % more
// memory and was no faster.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // A reader that stops early (`tracelake report | head`) ends the program quietly, as it
    // ends other Unix tools, instead of a failed write or a panic. Sockets are not
    // affected: Rust writes them with MSG_NOSIGNAL.
    // SAFETY: signal() is called before any other thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    tracelake::memory::set_collector(|give_back| {
        // SAFETY: mi_collect only walks mimalloc's own heaps; any thread may call it.
        unsafe { libmimalloc_sys::mi_collect(give_back) }
    });
    cli::run()
}
