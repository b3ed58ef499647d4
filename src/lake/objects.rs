//! A lake's own small files (its state, the files a retention drops) by path relative to
//! the lake root: in the directory, or as objects under its prefix on object storage.

use super::LakeError;
use super::layout::Lake;
use super::state::write_atomic;

/// The file at `relative`, `None` when absent.
pub async fn read(lake: &Lake, relative: &str) -> Result<Option<Vec<u8>>, LakeError> {
    if let Some(remote) = lake.remote() {
        return remote.read(relative).await;
    }
    let path = lake.root().join(relative);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(LakeError::io(&path, e)),
    }
}

/// Writes the file at `relative` whole: a reader never sees part of it.
pub async fn write(lake: &Lake, relative: &str, bytes: Vec<u8>) -> Result<(), LakeError> {
    match lake.remote() {
        Some(remote) => remote.create(relative, bytes).await.map(drop),
        None => write_atomic(&lake.root().join(relative), &bytes),
    }
}

/// Deletes the file at `relative`; one that is gone already is no error.
pub async fn delete(lake: &Lake, relative: &str) -> Result<(), LakeError> {
    if let Some(remote) = lake.remote() {
        return remote.delete(relative).await;
    }
    let path = lake.root().join(relative);
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(LakeError::io(&path, e)),
        _ => Ok(()),
    }
}
