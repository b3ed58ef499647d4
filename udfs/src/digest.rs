//! Short content hashes for ids: the first 16 hex digits of a SHA-256.

use sha2::{Digest, Sha256};

/// The first 16 hex digits of the SHA-256 of `parts`, one after the other.
pub(crate) fn short_sha256(parts: &[&[u8]]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    let digest = hasher.finalize();
    digest[..8].iter().flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]).map(char::from).collect()
}
