//! Where things live in a lake directory. Paths are built only from values this module
//! makes (dates from timestamps, ids it generates): never from strings in events.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use url::Url;

use super::LakeError;
use super::remote::{Remote, SCHEMES, block_on};
use super::schema::PARTITION_COLUMN;

/// The Delta log of the events table, which holds the lake's commits, relative to the root.
pub const EVENTS_LOG: &str = "events/_delta_log";

/// Where lakes made before their state moved into [`EVENTS_LOG`] kept it.
pub const LEGACY_MANIFEST: &str = "_state/manifest.json";

/// The tables stored as hive-partitioned Parquet under the lake root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    Events,
    Quarantine,
    Findings,
    Failures,
    Classifications,
    Outputs,
    Outcomes,
    SessionRisk,
    CortexMessages,
}

impl Table {
    pub const ALL: [Table; 9] = [
        Table::Events,
        Table::Quarantine,
        Table::Findings,
        Table::Failures,
        Table::Classifications,
        Table::Outputs,
        Table::Outcomes,
        Table::SessionRisk,
        Table::CortexMessages,
    ];

    /// The table a name (its directory's, as SQL knows it) names.
    pub fn from_name(name: &str) -> Option<Table> {
        Table::ALL.into_iter().find(|t| t.dir_name() == name)
    }

    pub fn dir_name(self) -> &'static str {
        match self {
            Table::Events => "events",
            Table::Quarantine => "quarantine",
            Table::Findings => "findings",
            Table::Failures => "failures",
            Table::Classifications => "classifications",
            Table::Outputs => "outputs",
            Table::Outcomes => "outcomes",
            Table::SessionRisk => "session_risk",
            Table::CortexMessages => "cortex_messages",
        }
    }

    /// A file of this table (`events/date=…/part-….parquet`, relative to the lake root)
    /// relative to the table's directory; `None` for a file of another table.
    pub fn relative(self, file: &str) -> Option<&str> {
        file.strip_prefix(self.dir_name())?.strip_prefix('/')
    }

    /// Whether `file` (relative to the lake root) is one of this table's.
    pub fn holds(self, file: &str) -> bool {
        self.relative(file).is_some()
    }
}

/// A lake: a local directory, or a prefix on object storage ([`Remote`]) whose writers
/// stage their files in a local directory, the root here.
#[derive(Debug, Clone)]
pub struct Lake {
    root: PathBuf,
    remote: Option<Arc<Remote>>,
}

impl Lake {
    /// A lake in a local directory.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into(), remote: None }
    }

    /// The lake at `location`: a directory, a `file://` URL, or an object store URL
    /// (`s3://bucket/prefix`, `gs://…`, `az://…`) reached with `storage_options`.
    pub fn open(location: &str, storage_options: &BTreeMap<String, String>) -> Result<Self, LakeError> {
        let Some((scheme, _)) = location.split_once("://") else {
            return Ok(Self::new(location));
        };
        let url = Url::parse(location).map_err(|source| LakeError::NotAUrl { location: location.to_owned(), source })?;
        match scheme {
            "file" => Ok(Self::new(url.to_file_path().map_err(|()| LakeError::NotALocalPath { lake: location.to_owned() })?)),
            s if SCHEMES.contains(&s) => {
                let remote = Remote::open(&url, storage_options)?;
                Ok(Self { root: remote.stage().to_path_buf(), remote: Some(Arc::new(remote)) })
            }
            other => Err(LakeError::UnknownScheme { lake: location.to_owned(), scheme: other.to_owned() }),
        }
    }

    /// The object store the lake is on, if it is not a local directory.
    pub fn remote(&self) -> Option<&Arc<Remote>> {
        self.remote.as_ref()
    }

    /// The lake as the user names it: its directory or its URL.
    pub fn location(&self) -> String {
        match &self.remote {
            Some(remote) => remote.url(),
            None => self.root.display().to_string(),
        }
    }

    /// The local directory: the lake itself, or where the writers of a lake on object
    /// storage stage their files.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The local directory as the file system resolves it (no `.` or `..`, which object
    /// stores' paths cannot hold: `--lake ../lake`), or its absolute path while it is not
    /// made yet.
    pub fn resolved_root(&self) -> std::io::Result<PathBuf> {
        self.root.canonicalize().or_else(|_| std::path::absolute(&self.root))
    }

    pub fn table_dir(&self, table: Table) -> PathBuf {
        self.root.join(table.dir_name())
    }

    pub fn partition_dir(&self, table: Table, date: &PartitionDate) -> PathBuf {
        self.table_dir(table).join(format!("{PARTITION_COLUMN}={}", date.0))
    }

    pub fn state_dir(&self) -> PathBuf {
        self.root.join("_state")
    }

    /// Whether the directory holds a lake: its events table's log, its `_state`, or a table
    /// with a partition (a lake whose state is gone is damaged, not absent; a user's folder
    /// named `outcomes` is no table). Only `import` and `export` make one.
    pub fn exists(&self) -> Result<bool, LakeError> {
        if let Some(remote) = &self.remote {
            return block_on(async { Ok(remote.any_under(EVENTS_LOG).await? || remote.read(LEGACY_MANIFEST).await?.is_some()) });
        }
        Ok(self.root.join(EVENTS_LOG).is_dir()
            || self.state_dir().is_dir()
            || Table::ALL.iter().any(|t| has_partition(&self.table_dir(*t))))
    }

    /// A path relative to the lake root, as stored in state files.
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root).unwrap_or(path).to_string_lossy().into_owned()
    }
}

/// Whether `dir` holds a partition directory (`date=…`).
fn has_partition(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .is_ok_and(|entries| entries.flatten().any(|e| partition_value(&e.file_name().to_string_lossy()).is_some() && e.path().is_dir()))
}

/// The value in the name of a partition directory (`2026-01-01` of `date=2026-01-01`);
/// `None` for any other name (a table's `_delta_log`).
pub fn partition_value(name: &str) -> Option<&str> {
    name.strip_prefix(PARTITION_COLUMN)?.strip_prefix('=')
}

/// A partition value `YYYY-MM-DD`, made only from a timestamp.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PartitionDate(String);

impl PartitionDate {
    /// The UTC date of `ts_ms`; timestamps outside chrono's range fall back to 1970-01-01
    /// (the normalizer rejects them before they get here).
    pub fn from_millis(ts_ms: i64) -> Self {
        let date = DateTime::<Utc>::from_timestamp_millis(ts_ms).unwrap_or_default().date_naive();
        Self(date.format("%Y-%m-%d").to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// File name of the `n`th data file written by writer `writer_id`.
pub fn part_file_name(writer_id: &WriterId, n: usize) -> String {
    format!("part-{}-{n:05}.parquet", writer_id.0)
}

/// A random id that names the files of one writer (an import or an export run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterId(String);

impl WriterId {
    pub fn random() -> Self {
        let bytes: [u8; 8] = rand::random();
        Self(hex::encode(bytes))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_dates_come_from_utc_time() {
        assert_eq!(PartitionDate::from_millis(1_767_225_603_963).as_str(), "2026-01-01");
        assert_eq!(PartitionDate::from_millis(1_767_225_599_999).as_str(), "2025-12-31");
    }

    #[test]
    fn only_partition_directories_have_a_partition_value() {
        assert_eq!(partition_value("date=2026-01-01"), Some("2026-01-01"));
        assert_eq!(partition_value("_delta_log"), None);
        assert_eq!(partition_value("dates=2026-01-01"), None);
    }

    #[test]
    fn a_lake_is_a_directory_or_a_prefix_on_object_storage() {
        let none = BTreeMap::new();
        let local = Lake::open("/data/lake", &none).unwrap();
        assert!(local.remote().is_none() && local.root() == Path::new("/data/lake"));
        let file = Lake::open("file:///data/lake", &none).unwrap();
        assert!(file.remote().is_none() && file.root() == Path::new("/data/lake"));

        let s3 = Lake::open("s3://traces/teams/a/", &none).unwrap();
        let remote = s3.remote().expect("an s3:// lake is remote");
        assert_eq!(s3.location(), "s3://traces/teams/a");
        assert_eq!(remote.store_url(), "s3://traces/");
        assert_eq!(remote.table_url(Table::Events), "s3://traces/teams/a/events/");
        assert_eq!(
            remote.key("events/date=2026-01-01/part-0123456789abcdef-00001.parquet").as_ref(),
            "teams/a/events/date=2026-01-01/part-0123456789abcdef-00001.parquet"
        );
        assert!(s3.root().starts_with(std::env::temp_dir()), "writers stage files locally");

        let other = Lake::open("ftp://host/lake", &none).unwrap_err().to_string();
        assert!(other.contains("not on ftp://"), "{other}");
        let bad_option = BTreeMap::from([("aws_no_such_option".to_owned(), "1".to_owned())]);
        let said = Lake::open("s3://traces/a", &bad_option).unwrap_err().to_string();
        assert!(said.contains("aws_no_such_option"), "{said}");
    }

    #[test]
    fn part_names_are_made_of_hex_and_numbers_only() {
        let id = WriterId::random();
        let name = part_file_name(&id, 3);
        assert!(name.starts_with("part-") && name.ends_with("-00003.parquet"), "{name}");
        assert!(id.as_str().chars().all(|c| c.is_ascii_hexdigit()));
    }
}
