//! Temporary directories a run can clean up after another that was killed.
//!
//! Each is `tracelake-KIND-PID-…` in the system's temporary directory (`TMPDIR`) and holds
//! a lock file locked for as long as its process keeps it. A directory whose lock nobody
//! holds belongs to a process that ended without removing it (`kill -9`, a crash, the
//! machine's power) and is removed by the next run that makes one, as is one its process
//! was killed while making. A lock, not the process number, says so: it is right across
//! PID namespaces that share a `/tmp`, and after a number is reused.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The start of every such directory's name.
const PREFIX: &str = "tracelake-";

/// The file whose lock marks a directory as in use.
const LOCK_FILE: &str = ".lock";

/// The directories this process holds now, for [`remove_this_process`].
static HELD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A temporary directory of this process, removed when dropped.
#[derive(Debug)]
pub struct ProcessTempDir {
    // Declared first: dropped (the directory removed) before the lock is released.
    dir: tempfile::TempDir,
    _lock: File,
}

impl ProcessTempDir {
    /// A new directory `tracelake-{kind}-{pid}-…` in the system's temporary directory,
    /// after removing those that ended processes left there.
    pub fn new(kind: &str) -> Result<Self, TempDirError> {
        Self::new_in(&std::env::temp_dir(), kind)
    }

    fn new_in(parent: &Path, kind: &str) -> Result<Self, TempDirError> {
        remove_abandoned(parent);
        let error = |source| TempDirError { parent: parent.to_path_buf(), source };
        let dir = tempfile::Builder::new().prefix(&format!("{PREFIX}{kind}-{}-", std::process::id())).tempdir_in(parent).map_err(error)?;
        // Locked before it takes its name: another run never sees it unlocked.
        let unnamed = dir.path().join(format!("{LOCK_FILE}.new"));
        let lock = File::create(&unnamed).map_err(error)?;
        lock.lock().map_err(error)?;
        std::fs::rename(&unnamed, dir.path().join(LOCK_FILE)).map_err(error)?;
        HELD.lock().unwrap_or_else(PoisonError::into_inner).push(dir.path().to_path_buf());
        Ok(Self { dir, _lock: lock })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for ProcessTempDir {
    fn drop(&mut self) {
        HELD.lock().unwrap_or_else(PoisonError::into_inner).retain(|held| held != self.dir.path());
    }
}

/// Removes every directory this process holds, for a process about to exit without
/// dropping them (Ctrl-C): a large analysis's spill files are gigabytes, which would
/// otherwise stay until the next run. Threads still writing into one may make it fail:
/// what is left is removed by the next run, as after a crash.
pub fn remove_this_process() {
    for dir in HELD.lock().unwrap_or_else(PoisonError::into_inner).drain(..) {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// A temporary directory that could not be made.
#[derive(Debug, thiserror::Error)]
#[error("cannot make a temporary directory in {}: {source}; set TMPDIR to a writable directory with room", parent.display())]
pub struct TempDirError {
    parent: PathBuf,
    #[source]
    source: io::Error,
}

/// How old a directory without a lock file must be to be taken for one whose maker was
/// killed while making it, which takes microseconds.
const UNFINISHED_AFTER: Duration = Duration::from_secs(60);

/// Removes the directories in `parent` whose lock nobody holds, and those a run was killed
/// while making (nothing in them but an unheld `.lock.new`, made over a minute ago). Any
/// other directory without a lock file is left alone: it is being made, or is not ours.
fn remove_abandoned(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_name().to_str().is_some_and(|name| name.starts_with(PREFIX)) {
            continue;
        }
        let abandoned = match File::open(entry.path().join(LOCK_FILE)) {
            Ok(lock) => lock.try_lock().is_ok(),
            Err(_) => is_unfinished(&entry.path()),
        };
        if abandoned {
            // Another run may remove it at the same time: failing is fine.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether `dir` is one of ours whose maker was killed before it named its lock file: its
/// name as [`ProcessTempDir::new`] makes them, nothing in it but a `.lock.new` nobody
/// holds, and older than [`UNFINISHED_AFTER`].
fn is_unfinished(dir: &Path) -> bool {
    let name = dir.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix(PREFIX)).unwrap_or_default();
    let mut parts = name.splitn(3, '-');
    let mut part = |is: fn(&u8) -> bool| parts.next().is_some_and(|p| !p.is_empty() && p.bytes().all(|b| is(&b)));
    let ours = part(u8::is_ascii_lowercase) && part(u8::is_ascii_digit) && part(u8::is_ascii_alphanumeric);
    let old = || std::fs::metadata(dir).and_then(|m| m.modified()).is_ok_and(|t| t.elapsed().is_ok_and(|age| age > UNFINISHED_AFTER));
    if !ours || !old() {
        return false;
    }
    let unnamed = format!("{LOCK_FILE}.new");
    let only_unnamed_lock =
        std::fs::read_dir(dir).is_ok_and(|mut entries| entries.all(|e| e.is_ok_and(|e| e.file_name() == unnamed.as_str())));
    only_unnamed_lock && File::open(dir.join(&unnamed)).map_or(true, |lock| lock.try_lock().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_directories_nobody_holds_are_removed() {
        let parent = tempfile::tempdir().unwrap();
        let held = ProcessTempDir::new_in(parent.path(), "spill").unwrap();
        std::fs::write(held.path().join("part-0.arrow"), b"rows").unwrap();
        let abandoned = parent.path().join("tracelake-spill-99999999-abc");
        std::fs::create_dir_all(abandoned.join("datafusion-x")).unwrap();
        std::fs::write(abandoned.join(LOCK_FILE), b"").unwrap();
        std::fs::write(abandoned.join("datafusion-x/spill"), b"rows").unwrap();
        let unlocked_other = parent.path().join("something-else");
        std::fs::create_dir_all(&unlocked_other).unwrap();
        std::fs::write(unlocked_other.join(LOCK_FILE), b"").unwrap();
        let without_lock = parent.path().join("tracelake-buckets-abc123");
        std::fs::create_dir_all(&without_lock).unwrap();

        let next = ProcessTempDir::new_in(parent.path(), "buckets").unwrap();
        assert!(!abandoned.exists(), "a directory whose lock nobody holds is removed");
        assert!(held.path().join("part-0.arrow").exists(), "a held directory is kept");
        assert!(unlocked_other.exists() && without_lock.exists(), "what is not ours, or not yet locked, is kept");
        let name = next.path().file_name().unwrap().to_str().unwrap().to_owned();
        assert!(name.starts_with(&format!("tracelake-buckets-{}-", std::process::id())), "{name}");

        let held_path = held.path().to_path_buf();
        drop(held);
        assert!(!held_path.exists(), "dropped, it is removed");
    }

    #[test]
    fn a_directory_its_maker_was_killed_while_making_is_removed_once_it_is_a_minute_old() {
        let parent = tempfile::tempdir().unwrap();
        let made = |name: &str, files: &[&str], age: Duration| {
            let dir = parent.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            for file in files {
                std::fs::write(dir.join(file), b"").unwrap();
            }
            File::open(&dir).unwrap().set_modified(std::time::SystemTime::now() - age).unwrap();
            dir
        };
        let old = Duration::from_secs(120);
        let empty = made("tracelake-spill-4242-AbC123", &[], old);
        let unnamed_lock = made("tracelake-view-4242-xyz789", &[".lock.new"], old);
        let just_made = made("tracelake-spill-4243-def456", &[".lock.new"], Duration::ZERO);
        let not_ours = made("tracelake-notes", &[], old);
        let with_files = made("tracelake-spill-4244-ghi789", &["part-0.arrow"], old);

        let _next = ProcessTempDir::new_in(parent.path(), "spill").unwrap();
        assert!(!empty.exists() && !unnamed_lock.exists(), "killed while made, a minute ago");
        assert!(just_made.exists(), "it may be being made");
        assert!(not_ours.exists() && with_files.exists(), "not named or filled as ours");
    }
}
