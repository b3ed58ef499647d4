//! The lake's pseudonym key (`_state/pii.key`): made at random the first time personal data
//! is pseudonymized, readable by its owner only, and kept with the lake so that the same
//! value gets the same pseudonym in every import into it. It never leaves the lake.

use std::fs;
use std::io::Write;

use rand::TryRngCore;

use super::LakeError;
use super::layout::Lake;
use super::remote::{Remote, block_on};

const KEY_FILE: &str = "pii.key";

/// The lake's pseudonym key, made if it has none.
pub fn pii_key(lake: &Lake) -> Result<Vec<u8>, LakeError> {
    if let Some(remote) = lake.remote() {
        return block_on(remote_pii_key(remote));
    }
    let dir = lake.state_dir();
    let path = dir.join(KEY_FILE);
    match fs::read_to_string(&path) {
        Ok(text) => return hex::decode(text.trim()).map_err(|_| LakeError::io(&path, std::io::Error::other("not a hex key"))),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(LakeError::io(&path, e)),
        Err(_) => {}
    }
    fs::create_dir_all(&dir).map_err(|e| LakeError::io(&dir, e))?;
    let key = new_key().map_err(|e| LakeError::io(&path, e))?;
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

/// The key of a lake on object storage, kept beside its manifest: of two writers making
/// one at once, the first create wins and both use its key.
async fn remote_pii_key(remote: &Remote) -> Result<Vec<u8>, LakeError> {
    let relative = format!("_state/{KEY_FILE}");
    let decode = |text: Option<Vec<u8>>| {
        let key = text.and_then(|text| hex::decode(String::from_utf8_lossy(&text).trim()).ok());
        key.ok_or_else(|| LakeError::NotAKey { lake: remote.url(), file: relative.clone() })
    };
    if let Some(text) = remote.read(&relative).await? {
        return decode(Some(text));
    }
    let key = new_key().map_err(|source| LakeError::NoRandomKey { lake: remote.url(), source })?;
    if remote.create(&relative, hex::encode(&key).into_bytes()).await? {
        return Ok(key);
    }
    decode(remote.read(&relative).await?)
}

fn new_key() -> std::io::Result<Vec<u8>> {
    let mut key = vec![0u8; 32];
    rand::rngs::OsRng.try_fill_bytes(&mut key).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(key)
}
