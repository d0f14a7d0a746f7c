//! PathDB's continuous archive in S3: [`S3Target`] implements the store's
//! [`ArchiveTarget`] over a bucket, so `pathdb serve --archive s3://bucket/prefix` keeps base
//! backups under `prefix/base/`, segments under `prefix/segments/` and the archive's marker at
//! `prefix/pathdb-archive.json`. It lives in its own crate so the store never depends on a
//! cloud SDK.
//!
//! | trait method | S3 request |
//! | --- | --- |
//! | `put` | `PutObject` (atomic by itself: a reader sees the whole object or none) |
//! | `put_file` | `PutObject` streamed from the file; above the part size ([`DEFAULT_PART_SIZE`]) a multipart upload, which is atomic too (the object appears at `CompleteMultipartUpload`) and lifts `PutObject`'s 5 GB limit |
//! | `get`, `get_file` | `GetObject`, the body streamed; `NoSuchKey` is `not_found` |
//! | `list` | `ListObjectsV2`, every page, under the prefix (recursively: S3 has no directories) |
//! | `delete` | `DeleteObject` (S3 answers success for a missing key) |
//!
//! The target owns a small current-thread tokio runtime and blocks on it for every call: the
//! archiver calls the trait from a plain thread. Call it from plain threads or from
//! `tokio::task::spawn_blocking`, never from inside an async task (tokio panics when a runtime
//! is blocked on from async code).
//!
//! Credentials come from the standard AWS chain (environment, profile, instance role). A
//! missing object reads as `not_found` only when the credentials may list the bucket
//! (`s3:ListBucket`): without it S3 answers 403 for a missing key, to hide what exists. The
//! listing needs that permission anyway.
//!
//! No request hangs for ever on a dead endpoint: each has an operation timeout (30 s, plus time
//! for its body at [`MIN_TRANSFER_RATE`]), and a body download that stalls for
//! [`STALL_TIMEOUT`] fails.

#![deny(missing_docs)]

use aws_sdk_s3::Client;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::error::DisplayErrorContext;
use aws_sdk_s3::primitives::{ByteStream, Length};
use aws_sdk_s3::types::{ChecksumAlgorithm, CompletedMultipartUpload, CompletedPart};
use pathdb_store::backup::{ArchiveTarget, TargetError};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// Time for a request without a large body: long enough for a slow store, short enough that a
/// dead endpoint is reported rather than waited on.
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(30);

/// The slowest transfer (bytes per second) an upload is given time for, on top of
/// [`OPERATION_TIMEOUT`]: a 64 MiB part gets 30 s + 64 s.
pub const MIN_TRANSFER_RATE: u64 = 1024 * 1024;

/// How long a download may go without receiving a byte: the operation timeout ends when the
/// answer's headers arrive, not its body.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Files larger than this go up in parts of this size (a multipart upload).
pub const DEFAULT_PART_SIZE: u64 = 64 * 1024 * 1024;

/// S3's smallest part (except the last).
pub const MIN_PART_SIZE: u64 = 5 * 1024 * 1024;

/// S3's most parts in one upload: larger files get larger parts.
const MAX_PARTS: u64 = 10_000;

/// A URL that is not `s3://bucket` or `s3://bucket/prefix`, or a client that cannot start.
#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    /// The archive URL is malformed.
    #[error("bad S3 URL {url:?}: {reason} (expected s3://bucket or s3://bucket/prefix)")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The client's runtime could not start.
    #[error("cannot start the S3 client runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

/// Where the bucket is, beyond what the URL says.
#[derive(Clone, Debug, Default)]
pub struct S3Options {
    /// An endpoint URL other than AWS's (MinIO, moto, another S3-compatible store). Addressing
    /// is then path-style (`http://host/bucket/key`), which such stores serve without DNS for
    /// each bucket.
    pub endpoint: Option<String>,
    /// The region; otherwise the standard AWS chain decides (`us-east-1` when it says nothing).
    pub region: Option<String>,
}

impl S3Options {
    /// At an endpoint other than AWS's (path-style addressing).
    pub fn with_endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// In this region.
    pub fn with_region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }
}

/// Splits `s3://bucket/some/prefix` into the bucket and the key prefix (without slashes at
/// either end; empty for `s3://bucket`).
///
/// ```
/// assert_eq!(
///     pathdb_s3::parse_url("s3://backups/db/one/").unwrap(),
///     ("backups".to_string(), "db/one".to_string())
/// );
/// assert!(pathdb_s3::parse_url("https://backups/db").is_err());
/// ```
///
/// # Errors
/// Not `s3://`; no bucket, or a bucket name S3 would refuse (3 to 63 lowercase letters, digits,
/// dots and hyphens, starting and ending with a letter or digit); a prefix with an empty,
/// `.` or `..` segment; a `?` or `#` (a URL's query or fragment, which S3 URLs do not have).
pub fn parse_url(url: &str) -> Result<(String, String), S3Error> {
    let bad = |reason: &str| S3Error::Url {
        url: url.to_string(),
        reason: reason.to_string(),
    };
    let rest = url
        .get(..5)
        .filter(|scheme| scheme.eq_ignore_ascii_case("s3://"))
        .and_then(|_| url.get(5..))
        .ok_or_else(|| bad("not an s3:// URL"))?;
    if rest.contains(['?', '#']) {
        return Err(bad("a query or fragment (? or #) has no meaning here"));
    }
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() {
        return Err(bad("no bucket"));
    }
    let valid_bucket = (3..=63).contains(&bucket.len())
        && bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && bucket.starts_with(|c: char| c.is_ascii_alphanumeric())
        && bucket.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !valid_bucket {
        return Err(bad(
            "a bucket name is 3 to 63 lowercase letters, digits, dots and hyphens, starting and \
             ending with a letter or digit",
        ));
    }
    // One trailing slash is how people write a folder; anything else empty is a typo that
    // would put the archive somewhere unexpected.
    let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
    if !prefix.is_empty()
        && prefix
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(bad("the prefix has an empty, . or .. segment"));
    }
    Ok((bucket.to_string(), prefix.to_string()))
}

/// An archive in an S3 bucket, under a prefix; see the crate.
pub struct S3Target {
    client: Client,
    bucket: String,
    /// Without slashes at either end; empty for the bucket's root.
    prefix: String,
    /// `Option` only so that `Drop` can take it.
    runtime: Option<tokio::runtime::Runtime>,
    part_size: u64,
    list_page_size: Option<i32>,
}

impl std::fmt::Debug for S3Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Target")
            .field("url", &self.describe())
            .field("part_size", &self.part_size)
            .finish_non_exhaustive()
    }
}

impl S3Target {
    /// The archive at `url` (`s3://bucket` or `s3://bucket/prefix`). Sends no request: the
    /// first operation (or [`S3Target::check`]) finds out whether the bucket is there.
    ///
    /// # Errors
    /// The URL is malformed ([`parse_url`]); the runtime cannot start.
    pub fn connect(url: &str, options: S3Options) -> Result<S3Target, S3Error> {
        let (bucket, prefix) = parse_url(url)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(S3Error::Runtime)?;
        let client = runtime.block_on(client_for(&options));
        Ok(S3Target {
            client,
            bucket,
            prefix,
            runtime: Some(runtime),
            part_size: DEFAULT_PART_SIZE,
            list_page_size: None,
        })
    }

    /// Uploads files larger than `bytes` in parts of `bytes` (at least [`MIN_PART_SIZE`]).
    pub fn with_part_size(mut self, bytes: u64) -> Self {
        self.part_size = bytes.max(MIN_PART_SIZE);
        self
    }

    /// Lists at most `keys` names per `ListObjectsV2` (S3's default and maximum is 1000);
    /// small pages exercise the pagination in tests.
    pub fn with_list_page_size(mut self, keys: i32) -> Self {
        self.list_page_size = Some(keys.max(1));
        self
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The key prefix, without slashes at either end (empty for the bucket's root).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// One `HeadBucket`: the bucket exists and these credentials reach it. For a clear error at
    /// startup rather than at the first upload.
    ///
    /// # Errors
    /// The bucket is missing, forbidden or unreachable.
    pub fn check(&self) -> Result<(), TargetError> {
        self.block_on(self.client.head_bucket().bucket(&self.bucket).send())
            .map(drop)
            .map_err(|e| self.sdk_error("HeadBucket", "", &e, false))
    }

    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        let Some(runtime) = &self.runtime else {
            unreachable!("the runtime lives until the target is dropped")
        };
        runtime.block_on(f)
    }

    /// The object key of the archive's `name`.
    fn key(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.prefix)
        }
    }

    fn sdk_error(
        &self,
        operation: &'static str,
        name: &str,
        e: &dyn std::error::Error,
        not_found: bool,
    ) -> TargetError {
        TargetError {
            not_found,
            ..self.error(operation, name, &DisplayErrorContext(e))
        }
    }

    /// Reads the body of `name` into `sink`, failing when it stalls for [`STALL_TIMEOUT`].
    async fn download(
        &self,
        name: &str,
        sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) -> Result<(), TargetError> {
        let out = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(self.key(name))
            .send()
            .await
            .map_err(|e| {
                let missing = e.as_service_error().is_some_and(|s| s.is_no_such_key());
                self.sdk_error("GetObject", name, &e, missing)
            })?;
        let mut body = out.body;
        loop {
            let chunk = tokio::time::timeout(STALL_TIMEOUT, body.try_next())
                .await
                .map_err(|_| {
                    self.error(
                        "GetObject",
                        name,
                        &format!("no data for {} s", STALL_TIMEOUT.as_secs()),
                    )
                })?
                .map_err(|e| self.sdk_error("GetObject", name, &e, false))?;
            match chunk {
                Some(bytes) => sink(&bytes).map_err(|e| self.error("write", name, &e))?,
                None => return Ok(()),
            }
        }
    }

    /// A multipart upload of the file at `path` (`size` bytes), aborted if any part fails so
    /// that S3 does not keep (and bill) the parts.
    async fn put_parts(&self, name: &str, path: &Path, size: u64) -> Result<(), TargetError> {
        let key = self.key(name);
        let created = self
            .client
            .create_multipart_upload()
            .bucket(&self.bucket)
            .key(&key)
            .checksum_algorithm(ChecksumAlgorithm::Crc32)
            .send()
            .await
            .map_err(|e| self.sdk_error("CreateMultipartUpload", name, &e, false))?;
        let Some(upload_id) = created.upload_id else {
            return Err(self.error("CreateMultipartUpload", name, &"no upload id in the answer"));
        };
        let uploaded = self.upload_parts(name, &key, &upload_id, path, size).await;
        let completed = match uploaded {
            Ok(parts) => self
                .client
                .complete_multipart_upload()
                .bucket(&self.bucket)
                .key(&key)
                .upload_id(&upload_id)
                .multipart_upload(
                    CompletedMultipartUpload::builder()
                        .set_parts(Some(parts))
                        .build(),
                )
                .send()
                .await
                .map(drop)
                .map_err(|e| self.sdk_error("CompleteMultipartUpload", name, &e, false)),
            Err(e) => Err(e),
        };
        if completed.is_err() {
            let aborted = self
                .client
                .abort_multipart_upload()
                .bucket(&self.bucket)
                .key(&key)
                .upload_id(&upload_id)
                .send()
                .await;
            if let Err(e) = aborted {
                tracing::warn!(
                    target = %self.describe(),
                    name,
                    upload_id,
                    error = %DisplayErrorContext(&e),
                    "s3: cannot abort a failed multipart upload; its parts stay until a \
                     lifecycle rule removes them"
                );
            }
        }
        completed
    }

    async fn upload_parts(
        &self,
        name: &str,
        key: &str,
        upload_id: &str,
        path: &Path,
        size: u64,
    ) -> Result<Vec<CompletedPart>, TargetError> {
        let part_size = self.part_size.max(size.div_ceil(MAX_PARTS));
        let mut parts = Vec::new();
        let mut offset = 0;
        let mut number = 1;
        while offset < size {
            let length = part_size.min(size - offset);
            let body = ByteStream::read_from()
                .path(path)
                .offset(offset)
                .length(Length::Exact(length))
                .build()
                .await
                .map_err(|e| self.error("read", name, &e))?;
            let out = self
                .client
                .upload_part()
                .bucket(&self.bucket)
                .key(key)
                .upload_id(upload_id)
                .part_number(number)
                .checksum_algorithm(ChecksumAlgorithm::Crc32)
                .body(body)
                .customize()
                .config_override(transfer_timeout(length))
                .send()
                .await
                .map_err(|e| self.sdk_error("UploadPart", name, &e, false))?;
            // The completion names each part by its ETag and, since the upload declared
            // CRC32, its checksum.
            parts.push(
                CompletedPart::builder()
                    .part_number(number)
                    .set_e_tag(out.e_tag)
                    .set_checksum_crc32(out.checksum_crc32)
                    .build(),
            );
            offset += length;
            number += 1;
        }
        Ok(parts)
    }
}

impl ArchiveTarget for S3Target {
    fn describe(&self) -> String {
        if self.prefix.is_empty() {
            format!("s3://{}", self.bucket)
        } else {
            format!("s3://{}/{}", self.bucket, self.prefix)
        }
    }

    fn put(&self, name: &str, bytes: &[u8]) -> Result<(), TargetError> {
        let request = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(self.key(name))
            .body(ByteStream::from(bytes.to_vec()))
            .customize()
            .config_override(transfer_timeout(bytes.len() as u64));
        self.block_on(request.send())
            .map(drop)
            .map_err(|e| self.sdk_error("PutObject", name, &e, false))
    }

    fn put_file(&self, name: &str, path: &Path) -> Result<(), TargetError> {
        let size = std::fs::metadata(path)
            .map_err(|e| self.error("read", name, &e))?
            .len();
        self.block_on(async {
            if size > self.part_size {
                return self.put_parts(name, path, size).await;
            }
            let body = ByteStream::from_path(path)
                .await
                .map_err(|e| self.error("read", name, &e))?;
            self.client
                .put_object()
                .bucket(&self.bucket)
                .key(self.key(name))
                .body(body)
                .customize()
                .config_override(transfer_timeout(size))
                .send()
                .await
                .map(drop)
                .map_err(|e| self.sdk_error("PutObject", name, &e, false))
        })
    }

    fn get(&self, name: &str) -> Result<Vec<u8>, TargetError> {
        let mut out = Vec::new();
        self.block_on(self.download(name, &mut |bytes| {
            out.extend_from_slice(bytes);
            Ok(())
        }))?;
        Ok(out)
    }

    fn get_file(&self, name: &str, path: &Path) -> Result<(), TargetError> {
        let mut file = std::fs::File::create(path).map_err(|e| self.error("write", name, &e))?;
        let downloaded = self
            .block_on(self.download(name, &mut |bytes| file.write_all(bytes)))
            .and_then(|()| file.sync_all().map_err(|e| self.error("write", name, &e)));
        if downloaded.is_err() {
            // A partial file would pass for the object.
            drop(file);
            let _ = std::fs::remove_file(path);
        }
        downloaded
    }

    fn list(&self, prefix: &str) -> Result<Vec<(String, u64)>, TargetError> {
        let root = self.key("");
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(self.key(prefix))
            .set_max_keys(self.list_page_size)
            .into_paginator()
            .send();
        let mut out = Vec::new();
        self.block_on(async {
            while let Some(page) = pages.next().await {
                let page = page.map_err(|e| self.sdk_error("ListObjectsV2", prefix, &e, false))?;
                for object in page.contents() {
                    let Some(name) = object.key().and_then(|k| k.strip_prefix(root.as_str()))
                    else {
                        continue;
                    };
                    let size = object.size().and_then(|s| u64::try_from(s).ok());
                    out.push((name.to_string(), size.unwrap_or(0)));
                }
            }
            Ok::<_, TargetError>(())
        })?;
        out.sort();
        Ok(out)
    }

    fn delete(&self, name: &str) -> Result<(), TargetError> {
        let request = self
            .client
            .delete_object()
            .bucket(&self.bucket)
            .key(self.key(name));
        self.block_on(request.send())
            .map(drop)
            .map_err(|e| self.sdk_error("DeleteObject", name, &e, false))
    }
}

impl Drop for S3Target {
    fn drop(&mut self) {
        // Dropping a runtime inside async code panics; this never blocks.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A request carrying `bytes`: the usual timeout plus time to send them slowly.
fn transfer_timeout(bytes: u64) -> aws_sdk_s3::config::Builder {
    let timeout = OPERATION_TIMEOUT + Duration::from_secs(bytes / MIN_TRANSFER_RATE);
    aws_sdk_s3::config::Builder::default()
        .timeout_config(TimeoutConfig::builder().operation_timeout(timeout).build())
}

/// The SDK client: the standard AWS chain for credentials and region, the SDK's standard
/// retries, and an operation timeout so that a dead endpoint fails.
async fn client_for(options: &S3Options) -> Client {
    let timeouts = TimeoutConfig::builder()
        .operation_timeout(OPERATION_TIMEOUT)
        .build();
    let mut loader =
        aws_config::defaults(aws_config::BehaviorVersion::latest()).timeout_config(timeouts);
    if let Some(region) = &options.region {
        loader = loader.region(aws_config::Region::new(region.clone()));
    }
    if let Some(endpoint) = &options.endpoint {
        loader = loader.endpoint_url(endpoint);
    }
    let config = loader.load().await;
    let mut builder = aws_sdk_s3::config::Builder::from(&config);
    if config.region().is_none() {
        builder = builder.region(aws_config::Region::from_static("us-east-1"));
    }
    if options.endpoint.is_some() {
        builder = builder.force_path_style(true);
    }
    Client::from_conf(builder.build())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(url: &str) -> (String, String) {
        parse_url(url).unwrap_or_else(|e| panic!("{url}: {e}"))
    }

    #[test]
    fn good_urls() {
        let pair = |b: &str, p: &str| (b.to_string(), p.to_string());
        assert_eq!(parsed("s3://bucket"), pair("bucket", ""));
        assert_eq!(parsed("s3://bucket/"), pair("bucket", ""));
        assert_eq!(parsed("s3://bucket/db"), pair("bucket", "db"));
        assert_eq!(parsed("s3://bucket/db/"), pair("bucket", "db"));
        assert_eq!(
            parsed("s3://my.bucket-1/a/b/c"),
            pair("my.bucket-1", "a/b/c")
        );
        assert_eq!(parsed("S3://abc/x y"), pair("abc", "x y"));
    }

    #[test]
    fn bad_urls() {
        for (url, says) in [
            ("", "not an s3:// URL"),
            ("bucket/db", "not an s3:// URL"),
            ("https://bucket/db", "not an s3:// URL"),
            ("s3:/bucket", "not an s3:// URL"),
            ("s3://", "no bucket"),
            ("s3:///db", "no bucket"),
            ("s3://ab", "bucket name"),
            ("s3://Bucket", "bucket name"),
            ("s3://my_bucket", "bucket name"),
            ("s3://-bucket", "bucket name"),
            ("s3://bucket-", "bucket name"),
            ("s3://user@bucket", "bucket name"),
            ("s3://bucket:9000/db", "bucket name"),
            (&format!("s3://{}", "a".repeat(64)), "bucket name"),
            ("s3://bucket//db", "empty"),
            ("s3://bucket/a//b", "empty"),
            ("s3://bucket/db//", "empty"),
            ("s3://bucket/./db", "empty"),
            ("s3://bucket/a/../b", "empty"),
            ("s3://bucket/db?versionId=1", "query"),
            ("s3://bucket/db#x", "query"),
            ("s3://bücket/db", "bucket name"),
        ] {
            match parse_url(url) {
                Ok(parsed) => panic!("{url:?} parsed as {parsed:?}"),
                Err(e) => {
                    let text = e.to_string();
                    assert!(text.contains(says), "{url:?}: {text}");
                    assert!(text.contains("expected s3://bucket"), "{url:?}: {text}");
                }
            }
        }
    }

    #[test]
    fn keys_and_description() {
        let target = S3Target::connect("s3://bucket/db/", S3Options::default().with_region("x"))
            .expect("no request is sent");
        assert_eq!(target.describe(), "s3://bucket/db");
        assert_eq!(target.key("segments/a"), "db/segments/a");
        let root = S3Target::connect("s3://bucket", S3Options::default().with_region("x"))
            .expect("no request is sent");
        assert_eq!(root.describe(), "s3://bucket");
        assert_eq!(root.key("pathdb-archive.json"), "pathdb-archive.json");
        assert!(format!("{root:?}").contains("s3://bucket"));
    }
}
