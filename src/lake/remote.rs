//! A lake on object storage: `s3://bucket/prefix`, `gs://…`, `az://…`.
//!
//! Writers work as on a local lake, in a staging directory of their own; a commit uploads
//! the files the new state names and then writes the events log's next version
//! create-if-absent ([`super::commit`]). Files uploaded by a writer that crashed or lost
//! are named by no version, so no reader ever sees them.

use std::collections::BTreeMap;
use std::path::Path as LocalPath;
use std::sync::{Arc, LazyLock};

use futures::TryStreamExt;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::path::Path;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use url::Url;

use super::LakeError;
use super::layout::Table;
use crate::temp_dirs::ProcessTempDir;

/// The URL schemes of lakes on object storage.
pub const SCHEMES: [&str; 7] = ["s3", "s3a", "gs", "az", "azure", "abfs", "abfss"];

/// The schemes as a user writes them: `s3://, s3a://, …`.
pub fn schemes_named() -> String {
    SCHEMES.map(|s| format!("{s}://")).join(", ")
}

/// A lake on object storage, and the local directory its writers stage files in.
#[derive(Debug)]
pub struct Remote {
    url: Url,
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    stage: ProcessTempDir,
}

impl Remote {
    /// Opens the lake at `url` ([`object_store_for`]).
    pub fn open(url: &Url, options: &BTreeMap<String, String>) -> Result<Self, LakeError> {
        let store = object_store_for(url, options)?;
        let prefix = Path::from_url_path(url.path()).map_err(|e| LakeError::ObjectPath {
            lake: url.to_string(),
            path: url.path().to_owned(),
            source: Box::new(e),
        })?;
        let stage = ProcessTempDir::new("stage")?;
        let mut url = url.clone();
        url.set_path(&format!("/{prefix}"));
        Ok(Self { url, store, prefix, stage })
    }

    /// The lake's URL, as the user named it (no trailing slash).
    pub fn url(&self) -> String {
        self.url.as_str().trim_end_matches('/').to_owned()
    }

    /// The URL of the bucket (or container) the lake is in, under which its store is
    /// registered with a query session.
    pub fn store_url(&self) -> String {
        format!("{}://{}/", self.url.scheme(), self.url.host_str().unwrap_or_default())
    }

    pub fn store(&self) -> Arc<dyn ObjectStore> {
        Arc::clone(&self.store)
    }

    /// The lake's prefix in its bucket.
    pub fn prefix(&self) -> &Path {
        &self.prefix
    }

    /// Where writers stage files before a commit uploads them.
    pub fn stage(&self) -> &LocalPath {
        self.stage.path()
    }

    /// The URL of a table's directory, for a listing table.
    pub fn table_url(&self, table: Table) -> String {
        format!("{}/{}/", self.url(), table.dir_name())
    }

    /// The object of a path relative to the lake root (`events/date=…/part-….parquet`).
    pub fn key(&self, relative: &str) -> Path {
        relative.split('/').filter(|p| !p.is_empty()).fold(self.prefix.clone(), deltalake_core::Path::join)
    }

    /// Deletes the object at `relative`; one that is gone already is no error.
    pub async fn delete(&self, relative: &str) -> Result<(), LakeError> {
        match self.store.delete(&self.key(relative)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.error(relative, e)),
        }
    }

    /// Moves the object at `relative` to `to`.
    pub async fn rename(&self, relative: &str, to: &str) -> Result<(), LakeError> {
        self.store.rename(&self.key(relative), &self.key(to)).await.map_err(|e| self.error(relative, e))
    }

    /// Uploads the staged file at `relative` to its place in the lake.
    pub async fn upload(&self, relative: &str) -> Result<(), LakeError> {
        let local = self.stage.path().join(relative);
        let mut file = tokio::fs::File::open(&local).await.map_err(|e| LakeError::io(&local, e))?;
        let mut writer = object_store::buffered::BufWriter::new(self.store(), self.key(relative));
        tokio::io::copy(&mut file, &mut writer).await.map_err(|e| LakeError::io(&local, e))?;
        tokio::io::AsyncWriteExt::shutdown(&mut writer).await.map_err(|e| LakeError::io(&local, e))
    }

    /// The objects under the directory `relative` (paths relative to the lake) and their sizes.
    pub async fn list_sizes(&self, relative: &str) -> Result<Vec<(String, u64)>, LakeError> {
        let listed: Vec<_> = self.store.list(Some(&self.key(relative))).try_collect().await.map_err(|e| self.error(relative, e))?;
        let prefix = format!("{}/", self.prefix.as_ref());
        Ok(listed
            .into_iter()
            .map(|meta| (meta.location.as_ref().strip_prefix(prefix.as_str()).unwrap_or(meta.location.as_ref()).to_owned(), meta.size))
            .collect())
    }

    /// Whether any object is under the directory `relative`.
    pub async fn any_under(&self, relative: &str) -> Result<bool, LakeError> {
        let first = self.store.list(Some(&self.key(relative))).try_next().await;
        Ok(first.map_err(|e| self.error(relative, e))?.is_some())
    }

    /// A small object by relative path, `None` when absent.
    pub async fn read(&self, relative: &str) -> Result<Option<Vec<u8>>, LakeError> {
        match self.store.get_opts(&self.key(relative), GetOptions::default()).await {
            Ok(got) => Ok(Some(got.bytes().await.map_err(|e| self.error(relative, e))?.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error(relative, e)),
        }
    }

    /// Writes a small object at `relative` unless one is there. Returns whether it wrote.
    pub async fn create(&self, relative: &str, bytes: Vec<u8>) -> Result<bool, LakeError> {
        let opts = PutOptions { mode: PutMode::Create, ..Default::default() };
        match self.store.put_opts(&self.key(relative), PutPayload::from(bytes), opts).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(object_store::Error::NotImplemented { .. }) => Err(LakeError::NoConditionalWrites { lake: self.url() }),
            Err(e) => Err(self.error(relative, e)),
        }
    }

    fn error(&self, relative: &str, e: object_store::Error) -> LakeError {
        LakeError::ObjectStore { lake: self.url(), key: relative.to_owned(), source: Box::new(e) }
    }
}

/// The object store of the bucket (or container) `url` is in. Credentials come from the
/// environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`, instance metadata), then `options`
/// (`storage.options`).
pub fn object_store_for(url: &Url, options: &BTreeMap<String, String>) -> Result<Arc<dyn ObjectStore>, LakeError> {
    let opening = |e| LakeError::OpenStore { lake: url.to_string(), source: Box::new(e) };
    // `options` read as the keys of the store's builder.
    fn keys<K: std::str::FromStr>(options: &BTreeMap<String, String>, url: &Url) -> Result<Vec<(K, String)>, LakeError> {
        options
            .iter()
            .map(|(key, value)| {
                let key =
                    key.parse().map_err(|_| LakeError::UnknownStorageOption { option: key.clone(), scheme: url.scheme().to_owned() })?;
                Ok((key, value.clone()))
            })
            .collect()
    }
    Ok(match url.scheme() {
        "s3" | "s3a" => {
            let builder = AmazonS3Builder::from_env().with_url(url.as_str());
            let builder = keys::<AmazonS3ConfigKey>(options, url)?.into_iter().fold(builder, |b, (k, v)| b.with_config(k, v));
            Arc::new(builder.build().map_err(opening)?)
        }
        "gs" => {
            let builder = GoogleCloudStorageBuilder::from_env().with_url(url.as_str());
            let builder = keys::<GoogleConfigKey>(options, url)?.into_iter().fold(builder, |b, (k, v)| b.with_config(k, v));
            Arc::new(builder.build().map_err(opening)?)
        }
        _ => {
            let builder = MicrosoftAzureBuilder::from_env().with_url(url.as_str());
            let builder = keys::<AzureConfigKey>(options, url)?.into_iter().fold(builder, |b, (k, v)| b.with_config(k, v));
            Arc::new(builder.build().map_err(opening)?)
        }
    })
}

/// Runs `future` (object store IO) to its end from synchronous code, inside or outside
/// an async runtime: on a thread of its own, driven by a runtime kept for this IO.
pub fn block_on<F>(future: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    static IO: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tracelake-io")
            .enable_all()
            .build()
            .expect("an IO runtime starts")
    });
    std::thread::scope(|scope| scope.spawn(|| IO.block_on(future)).join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
}
