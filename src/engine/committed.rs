//! The lake as queries see it: of the files under its table directories, only those of
//! each table's latest Delta version, read afresh at every listing, so a query never sees the rows of a
//! write still running or left by a crash. Nothing is written into the lake through a
//! query: its tables are written only by import, export and analyze, which commit.
//!
//! An object store wrapped around the one the lake is on (the local file system, or the
//! bucket of a lake on object storage): every path outside the lake passes through
//! unchanged (a user's `COPY … TO '/tmp/x.parquet'` still works).

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, Result,
};

use crate::lake::delta;
use crate::lake::{Lake, Table};

#[derive(Debug)]
pub struct CommittedFiles {
    inner: Arc<dyn ObjectStore>,
    lake: Lake,
    /// The lake's root as an object path (absolute, canonical).
    root: Path,
    /// The files of a past version (`--as-of`), read once, instead of the logs' latest.
    pinned: Option<Arc<HashSet<Path>>>,
}

impl CommittedFiles {
    pub fn new(inner: Arc<dyn ObjectStore>, lake: Lake, root: Path) -> Self {
        Self { inner, lake, root, pinned: None }
    }

    /// Shows the lake as it was: only `files` (relative to the lake), whatever is committed now.
    pub fn pinned_to<'a>(self, files: impl IntoIterator<Item = &'a str>) -> Self {
        let pinned = files.into_iter().map(|f| object_path(&self.root, f)).collect();
        Self { pinned: Some(Arc::new(pinned)), ..self }
    }

    fn in_tables(&self, location: &Path) -> bool {
        in_tables(&self.root, location)
    }

    fn in_lake(&self, location: &Path) -> bool {
        location.prefix_match(&self.root).is_some()
    }

    /// The committed files (or the pinned ones) under `prefix`, as object paths: a listing
    /// inside one table's directory reads only that table's log.
    async fn committed(lake: &Lake, root: &Path, pinned: Option<Arc<HashSet<Path>>>, prefix: Option<&Path>) -> Result<Arc<HashSet<Path>>> {
        if let Some(pinned) = pinned {
            return Ok(pinned);
        }
        let tables = prefix.and_then(|p| table_of(root, p)).map_or_else(|| Table::ALL.to_vec(), |table| vec![table]);
        let files =
            delta::committed_files(lake, &tables).await.map_err(|e| object_store::Error::Generic { store: "lake", source: Box::new(e) })?;
        Ok(Arc::new(files.iter().map(|f| object_path(root, f)).collect()))
    }

    fn read_only(&self, location: &Path) -> Result<()> {
        if self.in_lake(location) {
            return Err(object_store::Error::NotSupported {
                source: format!(
                    "{location}: the lake is written only by tracelake import, export and analyze; queries cannot write into it"
                )
                .into(),
            });
        }
        Ok(())
    }
}

impl fmt::Display for CommittedFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CommittedFiles({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for CommittedFiles {
    async fn put_opts(&self, location: &Path, payload: PutPayload, opts: PutOptions) -> Result<PutResult> {
        self.read_only(location)?;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(&self, location: &Path, opts: PutMultipartOptions) -> Result<Box<dyn MultipartUpload>> {
        self.read_only(location)?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(&self, locations: BoxStream<'static, Result<Path>>) -> BoxStream<'static, Result<Path>> {
        let root = self.root.clone();
        let refused = locations.map(move |l| {
            let l = l?;
            if l.prefix_match(&root).is_some() {
                return Err(object_store::Error::NotSupported { source: format!("{l}: the lake is not changed by queries").into() });
            }
            Ok(l)
        });
        self.inner.delete_stream(refused.boxed())
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let listed = self.inner.list(prefix);
        let wants_tables = prefix.is_none_or(|p| self.in_lake(p) || self.root.prefix_match(p).is_some());
        if !wants_tables {
            return listed;
        }
        let (lake, root, pinned, prefix) = (self.lake.clone(), self.root.clone(), self.pinned.clone(), prefix.cloned());
        stream::once(async move {
            match Self::committed(&lake, &root, pinned, prefix.as_ref()).await {
                Ok(committed) => listed
                    .filter(move |meta| {
                        let shown = meta.as_ref().map_or(true, |m| !in_tables(&root, &m.location) || committed.contains(&m.location));
                        std::future::ready(shown)
                    })
                    .boxed(),
                Err(e) => stream::once(async move { Err(e) }).boxed(),
            }
        })
        .flatten()
        .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let mut listed = self.inner.list_with_delimiter(prefix).await?;
        if listed.objects.iter().any(|m| self.in_tables(&m.location)) {
            let committed = Self::committed(&self.lake, &self.root, self.pinned.clone(), prefix).await?;
            listed.objects.retain(|m| !self.in_tables(&m.location) || committed.contains(&m.location));
        }
        Ok(listed)
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.read_only(to)?;
        self.inner.copy_opts(from, to, options).await
    }
}

/// The object path of `file`, relative to the lake at `root`.
fn object_path(root: &Path, file: &str) -> Path {
    file.split('/').fold(root.clone(), deltalake_core::Path::join)
}

/// Whether `location` is in one of the table directories of the lake at `root`.
fn in_tables(root: &Path, location: &Path) -> bool {
    table_of(root, location).is_some()
}

/// The table whose directory (in the lake at `root`) `location` is in, if any.
fn table_of(root: &Path, location: &Path) -> Option<Table> {
    let first = location.prefix_match(root)?.next()?;
    Table::ALL.into_iter().find(|t| t.dir_name() == first.as_ref())
}
