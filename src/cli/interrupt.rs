//! Ctrl-C: for a command that stops at it, for one that must say what it left, and for
//! the prompt, where it cancels the statement that runs.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context as _;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::Notify;

/// Completes on Ctrl-C. The handler is in place when this returns, so a Ctrl-C that
/// comes before the future is first polled is not lost (nor kills the process).
pub fn on_interrupt() -> anyhow::Result<impl Future<Output = ()>> {
    let mut interrupts = interrupts()?;
    Ok(async move {
        interrupts.recv().await;
    })
}

fn interrupts() -> anyhow::Result<Signal> {
    signal(SignalKind::interrupt()).context("installing the Ctrl-C handler")
}

/// Calls `each` on every Ctrl-C, on a thread of its own: it is heard while every thread
/// of the command's runtime is busy (a plan that never yields).
fn on_each_interrupt(mut each: impl FnMut() + Send + 'static) -> anyhow::Result<()> {
    let (ready, installed) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let listen = || -> anyhow::Result<_> {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let interrupts = {
                let _inside = runtime.enter();
                interrupts()?
            };
            Ok((runtime, interrupts))
        };
        match listen() {
            Ok((runtime, mut interrupts)) => {
                let _ = ready.send(Ok(()));
                while runtime.block_on(interrupts.recv()).is_some() {
                    each();
                }
            }
            Err(e) => drop(ready.send(Err(e))),
        }
    });
    installed.recv().context("installing the Ctrl-C handler")?
}

/// For a command that commits atomically, or only reads: on Ctrl-C, prints what
/// `what_is_left` says and [`exit_interrupted`].
pub fn exit_on_interrupt(what_is_left: impl Fn() -> String + Send + 'static) -> anyhow::Result<()> {
    on_each_interrupt(move || {
        eprintln!("\n{}", what_is_left());
        exit_interrupted();
    })
}

/// Ends the process as a shell reports an interrupt (130), first removing its temporary
/// directories (an analysis's spill files), which no destructor would remove.
pub fn exit_interrupted() -> ! {
    tracelake::temp_dirs::remove_this_process();
    std::process::exit(130);
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
            move || match running.load(Ordering::SeqCst) {
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
