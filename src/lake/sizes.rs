//! How many committed files each table has, how many bytes they take, and the version
//! of its Delta log.

use std::collections::HashSet;

use super::delta;
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
        let bytes = match lake.remote() {
            Some(remote) => {
                let listed = block_on(remote.list_sizes(table.dir_name()))?;
                listed.iter().filter(|(path, _)| files.contains(path.as_str())).map(|(_, size)| size).sum()
            }
            None => files.iter().map(|f| std::fs::metadata(lake.root().join(f)).map_or(0, |m| m.len())).sum(),
        };
        sizes.push(TableSize { table, files: files.len(), bytes, version: delta::version(lake, table)? });
    }
    Ok(sizes)
}
