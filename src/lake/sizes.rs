//! How many committed files each table has, how many bytes they take, and the version
//! of its Delta log.

use std::collections::{HashMap, HashSet};

use super::delta;
use super::remote::block_on;
use super::state::{Manifest, data_files};
use super::{Lake, LakeError, Table};

/// One table's committed files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSize {
    pub table: Table,
    pub files: usize,
    pub bytes: u64,
    /// The version of the table's Delta log.
    pub version: Option<u64>,
}

/// Every table with committed files, in [`Table::ALL`]'s order. On object storage, one
/// listing per table.
pub fn table_sizes(lake: &Lake, manifest: &Manifest) -> Result<Vec<TableSize>, LakeError> {
    let mut sizes = Vec::new();
    for table in Table::ALL {
        let files: HashSet<&str> = manifest.table_files(table).into_iter().collect();
        if files.is_empty() {
            continue;
        }
        sizes.push(TableSize { table, files: files.len(), bytes: bytes_of(lake, table, &files)?, version: delta::version(lake, table)? });
    }
    Ok(sizes)
}

/// The bytes `files` of `table` (relative to the lake) take.
pub fn bytes_of(lake: &Lake, table: Table, files: &HashSet<&str>) -> Result<u64, LakeError> {
    Ok(stored_files(lake, table)?.iter().filter(|(path, _)| files.contains(path.as_str())).map(|(_, size)| size).sum())
}

/// The size of every data file of `table` on the lake's store, by path relative to the
/// lake: one listing (of the store, on object storage).
pub fn stored_files(lake: &Lake, table: Table) -> Result<HashMap<String, u64>, LakeError> {
    if let Some(remote) = lake.remote() {
        return Ok(block_on(remote.list_sizes(table.dir_name()))?.into_iter().collect());
    }
    // A file renamed or deleted since the listing is not there.
    Ok(data_files(&lake.table_dir(table))?
        .into_iter()
        .filter_map(|path| std::fs::metadata(&path).ok().map(|m| (lake.relative(&path), m.len())))
        .collect())
}
