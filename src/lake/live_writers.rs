//! Who writes to the lake, and which files a writer that is gone left behind.
//!
//! A writer registers a marker, `_state/writers/<id>`, before it writes its first data
//! file, and holds an exclusive lock on it for as long as it lives. A marker that nobody
//! holds belongs to a writer that is gone (it crashed, or ended without committing): of
//! its data files, those the lake's state names neither as committed nor as replaced
//! (kept for time travel until `tracelake vacuum`) are leftovers, and only those are deleted
//! here. A data file without a marker is never deleted: it is damage, for `tracelake
//! repair` to look at.

use std::collections::HashSet;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use super::LakeError;
use super::layout::{Lake, Table, WriterId};
use super::parquet_files::sync_dir;
use super::state::data_files;
use super::state_log;

const WRITERS: &str = "writers";

fn writers_dir(lake: &Lake) -> PathBuf {
    lake.state_dir().join(WRITERS)
}

/// A writer that is alive: its marker is locked until [`Self::finish`] or drop.
#[derive(Debug)]
pub struct RegisteredWriter {
    id: WriterId,
    marker: PathBuf,
    _lock: File,
}

impl RegisteredWriter {
    /// Registers a new writer. The marker is locked before it appears under its name, so
    /// no sweep can take a starting writer for a gone one.
    pub fn start(lake: &Lake) -> Result<Self, LakeError> {
        let dir = writers_dir(lake);
        fs::create_dir_all(&dir).map_err(|e| LakeError::io(&dir, e))?;
        let id = WriterId::random();
        let marker = dir.join(id.as_str());
        let tmp = dir.join(format!(".{}.tmp", id.as_str()));
        let file = File::create(&tmp).map_err(|e| LakeError::io(&tmp, e))?;
        file.lock().map_err(|e| LakeError::io(&tmp, e))?;
        fs::rename(&tmp, &marker).map_err(|e| LakeError::io(&marker, e))?;
        sync_dir(&dir)?;
        Ok(Self { id, marker, _lock: file })
    }

    pub fn id(&self) -> &WriterId {
        &self.id
    }

    /// Everything this writer wrote is committed: it leaves nothing to sweep.
    pub fn finish(self) -> Result<(), LakeError> {
        fs::remove_file(&self.marker).map_err(|e| LakeError::io(&self.marker, e))
    }
}

/// Deletes the data files (and temp files) of writers that are gone and that the lake's
/// state does not name (as committed or as kept), then their markers. Returns what was
/// deleted. The state is read once the gone writers are known: a writer commits only
/// while it lives, so what it committed is in the state read after it was gone.
pub fn sweep_uncommitted(lake: &Lake) -> Result<Vec<PathBuf>, LakeError> {
    let gone = gone_writers(lake)?;
    if gone.is_empty() {
        return Ok(Vec::new());
    }
    let gone_ids: HashSet<&str> = gone.iter().map(|(id, _)| id.as_str()).collect();
    let manifest = state_log::load_unchecked(lake)?;
    let kept = manifest.kept_files();
    let mut removed = Vec::new();
    for table in Table::ALL {
        for path in data_files(&lake.table_dir(table))? {
            let relative = lake.relative(&path);
            let of_gone = writer_of(&relative).is_some_and(|id| gone_ids.contains(id));
            if of_gone && !kept.contains(relative.as_str()) {
                fs::remove_file(&path).map_err(|e| LakeError::io(&path, e))?;
                removed.push(path);
            }
        }
    }
    for (_, marker) in gone {
        fs::remove_file(&marker.path).map_err(|e| LakeError::io(&marker.path, e))?;
    }
    Ok(removed)
}

/// A marker whose lock was free, held while its writer's files are swept.
struct GoneMarker {
    path: PathBuf,
    _lock: File,
}

/// The ids of the writers that are gone.
pub fn gone_writer_ids(lake: &Lake) -> Result<HashSet<String>, LakeError> {
    Ok(gone_writers(lake)?.into_iter().map(|(id, _)| id).collect())
}

/// The writers whose marker nobody holds, with the marker locked by this process.
fn gone_writers(lake: &Lake) -> Result<Vec<(String, GoneMarker)>, LakeError> {
    let dir = writers_dir(lake);
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(LakeError::io(&dir, e)),
    };
    let mut gone = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| LakeError::io(&dir, e))?.path();
        let Some(id) = file_name(&path).filter(|n| is_writer_id(n)).map(str::to_owned) else {
            continue;
        };
        let file = File::open(&path).map_err(|e| LakeError::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => gone.push((id, GoneMarker { path, _lock: file })),
            Err(fs::TryLockError::WouldBlock) => {}
            Err(fs::TryLockError::Error(e)) => return Err(LakeError::io(&path, e)),
        }
    }
    Ok(gone)
}

fn file_name(path: &Path) -> Option<&str> {
    path.file_name().and_then(|n| n.to_str())
}

fn is_writer_id(name: &str) -> bool {
    name.len() == 16 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The writer id in a data file's name (`part-<id>-00001.parquet`, or its temp file
/// `.part-<id>-00001.parquet.tmp`), from a name or a relative path.
pub fn writer_of(file: &str) -> Option<&str> {
    let name = file.rsplit('/').next()?;
    let rest = name.strip_prefix('.').unwrap_or(name).strip_prefix("part-")?;
    let id = rest.get(..16)?;
    (is_writer_id(id) && rest[16..].starts_with('-')).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_ids_come_from_data_and_temp_file_names_only() {
        assert_eq!(writer_of("events/date=2026-01-01/part-0123456789abcdef-00001.parquet"), Some("0123456789abcdef"));
        assert_eq!(writer_of(".part-0123456789abcdef-00002.parquet.tmp"), Some("0123456789abcdef"));
        assert_eq!(writer_of("part-xyz-00001.parquet"), None);
        assert_eq!(writer_of("notes.parquet"), None);
    }

    #[test]
    fn a_live_writer_is_not_gone_and_a_dropped_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::new(dir.path());
        let writer = RegisteredWriter::start(&lake).unwrap();
        assert!(gone_writers(&lake).unwrap().is_empty(), "a locked marker is a live writer");
        let id = writer.id().as_str().to_owned();
        drop(writer);
        assert_eq!(gone_writers(&lake).unwrap().len(), 1, "a dropped writer is gone");
        assert_eq!(writer_of(&format!("events/date=2026-01-01/part-{id}-00001.parquet")), Some(id.as_str()));
    }
}
