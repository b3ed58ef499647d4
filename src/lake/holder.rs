//! Who holds a lake's lock: the holder writes itself into the lock file once it has the
//! lock, so that a run that finds the lock taken can say which process has it, and
//! whether that process is stopped (a writer suspended with Ctrl-Z or `kill -STOP` keeps
//! its lock).

use std::fmt;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};

/// The process that holds a lock, as read from its lock file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHolder {
    pub pid: u32,
    /// The holder's subcommand (`import`, `export`, …).
    pub command: String,
    /// When it took the lock (RFC 3339).
    pub since: String,
}

impl LockHolder {
    /// This process, now.
    pub fn this_process() -> Self {
        // Only the subcommand: other arguments may hold credentials (a NATS URL).
        let command = std::env::args().nth(1).filter(|a| !a.starts_with('-')).unwrap_or_else(|| "tracelake".to_owned());
        Self { pid: std::process::id(), command, since: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true) }
    }

    /// Writes the holder into the lock file it has just locked.
    pub fn write_to(&self, file: &mut File) -> std::io::Result<()> {
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        writeln!(file, "{} {} {}", self.pid, self.since, self.command)
    }

    /// The holder a lock file names; `None` when it names none (written by an older
    /// version, or not yet written) or a process that is gone.
    pub fn read_from(mut file: &File) -> Option<Self> {
        let mut text = String::new();
        file.seek(SeekFrom::Start(0)).ok()?;
        file.take(4096).read_to_string(&mut text).ok()?;
        let mut fields = text.trim().splitn(3, ' ');
        let pid = fields.next()?.parse().ok()?;
        let since = fields.next()?.to_owned();
        let command = fields.next()?.to_owned();
        let gone = std::path::Path::new("/proc/self").exists() && !std::path::Path::new(&format!("/proc/{pid}")).exists();
        (!gone).then_some(Self { pid, command, since })
    }

    /// Whether the holder is stopped (state `T` in `/proc`); `false` where that cannot be told.
    pub fn is_stopped(&self) -> bool {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) else { return false };
        // The state follows the command name, which is in parentheses and may hold spaces.
        stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()).is_some_and(|state| state == "T" || state == "t")
    }

    /// The process, without its command: `pid 12, since …`, and how to resume it when it
    /// is stopped.
    pub fn process(&self) -> String {
        let stopped =
            if self.is_stopped() { format!("; it is stopped: resume it with `kill -CONT {}` or end it", self.pid) } else { String::new() };
        format!("pid {}, since {}{stopped}", self.pid, self.since)
    }
}

/// A lock file this process has locked and written itself into; dropping it empties the
/// file, then closing it releases the lock, so that the file never names a past holder.
#[derive(Debug)]
pub struct HeldLock(pub File);

impl Drop for HeldLock {
    fn drop(&mut self) {
        let _ = self.0.set_len(0);
    }
}

impl fmt::Display for LockHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tracelake {} ({})", self.command, self.process())
    }
}

/// `" (pid 12, since …)"` for a lock whose holder is known, else nothing.
pub fn process_of(holder: &Option<LockHolder>) -> String {
    holder.as_ref().map(|h| format!(" ({})", h.process())).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_reads_back_as_written_and_this_process_is_not_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = File::options().create(true).truncate(false).read(true).write(true).open(dir.path().join("lock")).unwrap();
        let holder = LockHolder { pid: std::process::id(), command: "outcomes import".into(), since: "2026-11-26T18:00:00Z".into() };
        holder.write_to(&mut file).unwrap();
        assert_eq!(LockHolder::read_from(&file), Some(holder.clone()));
        assert!(!holder.is_stopped());
        assert_eq!(holder.to_string(), format!("tracelake outcomes import (pid {}, since 2026-11-26T18:00:00Z)", std::process::id()));
        file.set_len(0).unwrap();
        assert_eq!(LockHolder::read_from(&file), None, "an empty lock file names no holder");
        LockHolder { pid: u32::MAX, ..holder.clone() }.write_to(&mut file).unwrap();
        assert_eq!(LockHolder::read_from(&file), None, "a process that is gone holds nothing");
        holder.write_to(&mut file).unwrap();
        drop(HeldLock(file.try_clone().unwrap()));
        assert_eq!(LockHolder::read_from(&file), None, "a released lock names no holder");
    }
}
