mod cli;

use std::process::ExitCode;

// Analysis allocates and frees many short-lived Arrow buffers from several threads;
// mimalloc is faster at that than the system allocator and gives freed memory back
// (`tracelake::memory`). Built without transparent huge pages: with them a run touched
// 30 % more memory and was no faster.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    cli::run()
}
