//! The lake's pseudonym key (`_state/pii.key`): made at random the first time personal data
//! is pseudonymized, readable by its owner only, and kept with the lake so that the same
//! value gets the same pseudonym in every import into it. It never leaves the lake.

use std::fs;
use std::io::Write;

use rand::TryRngCore;

use super::LakeError;
use super::layout::Lake;

const KEY_FILE: &str = "pii.key";

/// The lake's pseudonym key, made if it has none.
pub fn pii_key(lake: &Lake) -> Result<Vec<u8>, LakeError> {
    let dir = lake.state_dir();
    let path = dir.join(KEY_FILE);
    match fs::read_to_string(&path) {
        Ok(text) => return hex::decode(text.trim()).map_err(|_| LakeError::io(&path, std::io::Error::other("not a hex key"))),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(LakeError::io(&path, e)),
        Err(_) => {}
    }
    fs::create_dir_all(&dir).map_err(|e| LakeError::io(&dir, e))?;
    let mut key = vec![0u8; 32];
    rand::rngs::OsRng.try_fill_bytes(&mut key).map_err(|e| LakeError::io(&path, std::io::Error::other(e.to_string())))?;
    // Written aside, then linked into place: a reader never sees half a key, and of two
    // writers making one at once, the first link wins and both use its key.
    let aside = dir.join(format!("{KEY_FILE}.{}.tmp", std::process::id()));
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options
        .open(&aside)
        .and_then(|mut file| file.write_all(hex::encode(&key).as_bytes()).and_then(|()| file.sync_all()))
        .and_then(|()| fs::hard_link(&aside, &path));
    let _ = fs::remove_file(&aside);
    match written {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => pii_key(lake),
        Err(e) => Err(LakeError::io(&path, e)),
    }
}
