//! How many committed files each table has, and how many bytes they take.

use std::collections::HashSet;

use super::remote::block_on;
use super::state::Manifest;
use super::{Lake, LakeError, Table};

/// One table's committed files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSize {
    pub table: Table,
    pub files: usize,
    pub bytes: u64,
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
        sizes.push(TableSize { table, files: files.len(), bytes });
    }
    Ok(sizes)
}
