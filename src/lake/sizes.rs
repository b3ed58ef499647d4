//! How many committed files each table has, how many bytes they take, and the version
//! of its Delta log.

use std::collections::HashSet;

use super::delta;
use super::history::TableAsOf;
use super::remote::block_on;
use super::state::Manifest;
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

/// Every table with files as of a point in the past.
pub fn table_sizes_as_of(lake: &Lake, tables: &[TableAsOf]) -> Result<Vec<TableSize>, LakeError> {
    let mut sizes = Vec::new();
    for t in tables.iter().filter(|t| !t.files.is_empty()) {
        let files: HashSet<&str> = t.files.iter().map(String::as_str).collect();
        sizes.push(TableSize { table: t.table, files: files.len(), bytes: bytes_of(lake, t.table, &files)?, version: t.version });
    }
    Ok(sizes)
}

/// The bytes `files` of `table` (relative to the lake) take.
fn bytes_of(lake: &Lake, table: Table, files: &HashSet<&str>) -> Result<u64, LakeError> {
    Ok(match lake.remote() {
        Some(remote) => {
            let listed = block_on(remote.list_sizes(table.dir_name()))?;
            listed.iter().filter(|(path, _)| files.contains(path.as_str())).map(|(_, size)| size).sum()
        }
        None => files.iter().map(|f| std::fs::metadata(lake.root().join(f)).map_or(0, |m| m.len())).sum(),
    })
}
