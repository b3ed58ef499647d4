//! Ctrl-C, and SIGTERM (`kill`, `docker stop`, systemd, `timeout`), which stops a command
//! as Ctrl-C does: for a command that stops at it, for one that must say what it left, and
//! for the prompt, where Ctrl-C cancels the statement that runs.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context as _;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::Notify;

/// What stops a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Interrupt,
    Terminate,
}

impl Stop {
    /// The exit status a shell reports for the signal: 128 and its number.
    fn status(self) -> i32 {
        match self {
            Stop::Interrupt => 130,
            Stop::Terminate => 143,
        }
    }
}

/// The handlers of both signals.
struct Stops {
    interrupts: Signal,
    terminations: Signal,
}

impl Stops {
    fn install() -> anyhow::Result<Self> {
        let interrupts = signal(SignalKind::interrupt()).context("installing the Ctrl-C handler")?;
        let terminations = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        Ok(Self { interrupts, terminations })
    }

    /// The next signal; `None` once the runtime's signal driver is gone.
    async fn next(&mut self) -> Option<Stop> {
        tokio::select! {
            Some(()) = self.interrupts.recv() => Some(Stop::Interrupt),
            Some(()) = self.terminations.recv() => Some(Stop::Terminate),
            else => None,
        }
    }
}

/// Completes on Ctrl-C or SIGTERM. The handlers are in place when this returns, so a
/// signal that comes before the future is first polled is not lost (nor kills the process).
pub fn on_interrupt() -> anyhow::Result<impl Future<Output = ()>> {
    let mut stops = Stops::install()?;
    Ok(async move {
        stops.next().await;
    })
}

/// Calls `each` on every Ctrl-C or SIGTERM, on a thread of its own: it is heard while
/// every thread of the command's runtime is busy (a plan that never yields).
fn on_each_interrupt(mut each: impl FnMut(Stop) + Send + 'static) -> anyhow::Result<()> {
    let (ready, installed) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let listen = || -> anyhow::Result<_> {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let stops = {
                let _inside = runtime.enter();
                Stops::install()?
            };
            Ok((runtime, stops))
        };
        match listen() {
            Ok((runtime, mut stops)) => {
                let _ = ready.send(Ok(()));
                while let Some(stop) = runtime.block_on(stops.next()) {
                    each(stop);
                }
            }
            Err(e) => drop(ready.send(Err(e))),
        }
    });
    installed.recv().context("installing the Ctrl-C and SIGTERM handlers")?
}

/// For a command that commits atomically, or only reads: on Ctrl-C or SIGTERM, prints
/// what `what_is_left` says and exits ([`exit_stopped`]).
pub fn exit_on_interrupt(what_is_left: impl Fn() -> String + Send + 'static) -> anyhow::Result<()> {
    on_each_interrupt(move |stop| {
        eprintln!("\n{}", what_is_left());
        exit_stopped(stop);
    })
}

/// Ends the process as a shell reports an interrupt (130).
pub fn exit_interrupted() -> ! {
    exit_stopped(Stop::Interrupt)
}

/// Ends the process as a shell reports `stop`, first removing its temporary directories
/// (an analysis's spill files), which no destructor would remove.
fn exit_stopped(stop: Stop) -> ! {
    tracelake::temp_dirs::remove_this_process();
    std::process::exit(stop.status());
}

/// Ctrl-C while the prompt runs a statement: the first press cancels it (its future is
/// dropped, and the tasks of its plan end at their next yield, as in datafusion-cli); a
/// second press on the same statement quits. A plan that never yields (a cross join
/// computed in one poll) keeps the engine's threads, which no later statement would get:
/// [`Statement::Stuck`] says so.
#[derive(Debug)]
pub enum Statement<T> {
    Done(T),
    Cancelled,
    /// Cancelled, but the plan's tasks still run.
    Stuck,
}

/// How long a cancelled plan's tasks have to end.
const TASKS_END_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

pub struct Cancel {
    /// The number of the statement running, 0 when none.
    running: Arc<AtomicU64>,
    started: AtomicU64,
    pressed: Arc<Notify>,
}

impl Cancel {
    pub fn install() -> anyhow::Result<Self> {
        let running = Arc::new(AtomicU64::new(0));
        let pressed = Arc::new(Notify::new());
        let mut cancelled = 0;
        on_each_interrupt({
            let (running, pressed) = (Arc::clone(&running), Arc::clone(&pressed));
            move |stop| match running.load(Ordering::SeqCst) {
                _ if stop == Stop::Terminate => exit_stopped(stop),
                0 => {}
                statement if statement == cancelled => {
                    eprintln!("\nThe query does not stop: quitting.");
                    exit_interrupted();
                }
                statement => {
                    cancelled = statement;
                    pressed.notify_waiters();
                }
            }
        })?;
        Ok(Self { running, started: AtomicU64::new(0), pressed })
    }

    /// Runs `work` until it ends or Ctrl-C cancels it.
    pub async fn run<T>(&self, work: impl Future<Output = T>) -> Statement<T> {
        let pressed = self.pressed.notified();
        tokio::pin!(pressed);
        // Registered before the statement counts as running, so no press is missed.
        pressed.as_mut().enable();
        let metrics = tokio::runtime::Handle::current().metrics();
        let tasks_before = metrics.num_alive_tasks();
        self.running.store(self.started.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
        let out = tokio::select! {
            out = work => Some(out),
            () = pressed => None,
        };
        let run = match out {
            Some(out) => Statement::Done(out),
            None => {
                // Waited for on this thread: with every worker busy, no timer would fire.
                let deadline = std::time::Instant::now() + TASKS_END_WITHIN;
                while metrics.num_alive_tasks() > tasks_before && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                if metrics.num_alive_tasks() > tasks_before { Statement::Stuck } else { Statement::Cancelled }
            }
        };
        self.running.store(0, Ordering::SeqCst);
        run
    }
}
