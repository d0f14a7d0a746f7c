//! Retries: every request is sent again after throttling, a server error, a timeout or a lost
//! connection, with exponential backoff, within one bounded [`RetryBudget`]; then it fails with
//! [`StorageErrorKind::Unavailable`].
//!
//! The SDK's own retries are off (`lib.rs` builds the client with `RetryConfig::disabled()`),
//! for two reasons. A write whose answer was lost may have been applied, and the SDK would send
//! it again blindly: a retry of a conditional write that committed fails its own condition, which
//! must be read as "committed", not as a failed condition (`write.rs` decides, by reading). And
//! the SDK's retry quota (a token bucket) is shared by every client in the process, so one table's
//! faults would stop another's retries. Here each request has its own attempts and deadline.
//!
//! A failure is one of four classes ([`Class`]): refused before anything was done (throttling,
//! a connection that could not be made), possibly done (a timeout, a reset connection, a 5xx or
//! an unreadable answer: the request may have reached the table), or rejected for good (a
//! validation error, a missing table, no permission: retrying cannot help).

use crate::Metrics;
use crate::paging::{AfterTimeout, PageSize};
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use pathdb_store::{StorageError, StorageErrorKind};
use std::future::Future;
use std::time::{Duration, Instant};

/// How long and how often the backend tries a request before it gives up (docs/dynamodb.md,
/// "Faults and retries"). Reads and writes share it.
///
/// A request is sent at most `max_attempts` times, pausing between attempts for a random time
/// up to `initial_backoff` × 2ⁿ (at most `max_backoff`: "full jitter"), and no attempt starts
/// after `operation_timeout`; an attempt that runs longer than `attempt_timeout` is abandoned.
/// So a request gives up after at most `operation_timeout` + `attempt_timeout`, except a `Scan`
/// or `Query` page that timed out: each time it is asked again for half as many items (down to
/// 16), it starts a budget of its own (paging.rs; docs/dynamodb.md, "Slow endpoints").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryBudget {
    /// Attempts per request, the first included (default 6). At least 1.
    pub max_attempts: u32,
    /// The upper bound of the first pause (default 50 ms); it doubles with each retry.
    pub initial_backoff: Duration,
    /// The largest pause between two attempts (default 2 s).
    pub max_backoff: Duration,
    /// How long opening a connection may take (default 2 s).
    pub connect_timeout: Duration,
    /// How long one attempt may take, from sending to the whole answer (default 3 s). A write
    /// that times out may still be applied; see docs/dynamodb.md.
    pub attempt_timeout: Duration,
    /// No attempt starts once this much time has passed since the first (default 10 s).
    pub operation_timeout: Duration,
}

impl Default for RetryBudget {
    fn default() -> Self {
        RetryBudget {
            max_attempts: 6,
            initial_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(2),
            attempt_timeout: Duration::from_secs(3),
            operation_timeout: Duration::from_secs(10),
        }
    }
}

impl RetryBudget {
    /// With `n` attempts per request, the first included (at least 1).
    pub fn with_max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }

    /// With this per-attempt timeout: a `Scan` or `Query` page that takes longer is asked again
    /// for fewer items, any other request is retried.
    pub fn with_attempt_timeout(mut self, timeout: Duration) -> Self {
        self.attempt_timeout = timeout;
        self
    }

    /// With no attempt starting later than `timeout` after a request's first.
    pub fn with_operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// With this timeout for opening a connection.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The pause before retry number `retry` (1 for the second attempt): full jitter.
    fn backoff(&self, retry: u32) -> Duration {
        let ceiling = self
            .initial_backoff
            .saturating_mul(1u32 << retry.saturating_sub(1).min(20))
            .min(self.max_backoff);
        let micros = u64::try_from(ceiling.as_micros()).unwrap_or(u64::MAX);
        if micros == 0 {
            return Duration::ZERO;
        }
        Duration::from_micros(random_u64() % (micros + 1))
    }
}

/// A random number for jitter (not for anything that must be unpredictable).
pub(crate) fn random_u64() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    // Each RandomState has fresh keys: hashing a counter with it spreads well enough.
    std::hash::BuildHasher::hash_one(
        &std::collections::hash_map::RandomState::new(),
        CALLS.fetch_add(1, Ordering::Relaxed),
    )
}

/// What a failed attempt says about the request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Class {
    /// Nothing was done and the same request may succeed later: throttling, a connection that
    /// could not be made.
    Refused,
    /// The request may have been applied: it was sent, and the answer timed out, the connection
    /// broke, the server answered 5xx, or the answer could not be read.
    MaybeApplied,
    /// Nothing was done and sending it again cannot help: a validation error, a missing table,
    /// an unknown operation, missing permissions.
    Rejected,
}

/// A failed attempt: its class, what to tell people, and the service's error code if it sent
/// one.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) class: Class,
    pub(crate) error: StorageError,
    pub(crate) code: Option<String>,
    /// No answer came within the attempt timeout (a [`Class::MaybeApplied`] failure): for a
    /// paged read, a sign that the page asked for more than the endpoint answers in time.
    pub(crate) timed_out: bool,
}

impl From<Failure> for StorageError {
    fn from(failure: Failure) -> StorageError {
        failure.error
    }
}

/// Error codes DynamoDB answers when it is overloaded: nothing was done, try later.
/// `TransactionInProgressException` is not here: it answers a retry whose first attempt is still
/// being applied, so that write may well commit.
const THROTTLING: &[&str] = &[
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "LimitExceededException",
];

/// Classifies an SDK error of request `what` (`"PutItem"`, …).
pub(crate) fn classify<E>(what: &str, error: SdkError<E, HttpResponse>) -> Failure
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let code = error
        .as_service_error()
        .and_then(|e| e.code())
        .map(str::to_owned);
    // No credentials is not a fault of the endpoint: asking again finds none again.
    let no_credentials =
        matches!(error, SdkError::DispatchFailure(_)) && missing_credentials(&error);
    let class = match &error {
        SdkError::ServiceError(service) => {
            if code.as_deref().is_some_and(|c| THROTTLING.contains(&c)) {
                Class::Refused
            } else if service.raw().status().is_server_error()
                || code.as_deref() == Some("TransactionInProgressException")
            {
                // DynamoDB does not promise that a 500 left nothing behind: a transaction may
                // have committed (that is what its ClientRequestToken is for).
                Class::MaybeApplied
            } else {
                Class::Rejected
            }
        }
        SdkError::DispatchFailure(failure) => {
            if failure.is_user() || no_credentials {
                Class::Rejected
            } else if never_connected(&error) {
                Class::Refused
            } else {
                Class::MaybeApplied
            }
        }
        SdkError::TimeoutError(_) | SdkError::ResponseError(_) => Class::MaybeApplied,
        // Not sent: the request could not even be built.
        _ => Class::Rejected,
    };
    let detail = match &error {
        _ if no_credentials => format!(
            "{what}: no AWS credentials: none in the environment (AWS_ACCESS_KEY_ID and \
             AWS_SECRET_ACCESS_KEY), the profile files or the instance metadata service. Set \
             them; a local endpoint (moto, DynamoDB Local) takes any pair, e.g. \
             AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x"
        ),
        SdkError::ServiceError(s) => format!("{what}: {}", s.err()),
        SdkError::TimeoutError(_) => format!("{what}: no answer within the attempt timeout"),
        other => format!("{what}: {other}"),
    };
    let timed_out = matches!(error, SdkError::TimeoutError(_));
    // StorageError::new marks an I/O error in the chain as kind Io; the class decides instead.
    let error = StorageError::new(detail, error).with_kind(StorageErrorKind::Other);
    Failure {
        class,
        error,
        code,
        timed_out,
    }
}

/// Whether the request failed before it was sent because the SDK found no credentials (its
/// chain ends at the instance metadata service, whose refusal is what a user sees otherwise).
fn missing_credentials(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if e.is::<aws_credential_types::provider::error::CredentialsError>() {
            return true;
        }
        cause = e.source();
    }
    false
}

/// Whether the connection was refused: then the request was certainly not sent. Every other
/// connection failure (a reset, an early close) may come after the request left.
fn never_connected(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::AddrNotAvailable
            )
        {
            return true;
        }
        cause = e.source();
    }
    false
}

/// The end of a request that ran out of attempts or time.
fn gave_up(error: StorageError, attempts: u32, started: Instant) -> StorageError {
    error.context(format!(
        "gave up after {attempts} attempt{} in {} ms",
        if attempts == 1 { "" } else { "s" },
        started.elapsed().as_millis()
    ))
}

/// Sends a request that changes nothing (a read, a describe, the start-up probe) until it
/// succeeds, is rejected, or the budget runs out (then the failure is [`Class::Refused`] or
/// [`Class::MaybeApplied`] with kind [`StorageErrorKind::Unavailable`]).
pub(crate) async fn read<T, F, Fut>(
    budget: &RetryBudget,
    metrics: &Metrics,
    what: &'static str,
    mut send: F,
) -> Result<T, Failure>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    read_with(budget, metrics, what, None, |_| send()).await
}

/// [`read`] for one page of a `Scan` or `Query` that wants `wanted` items: `send` makes one
/// attempt with the `Limit` it is given. A page that times out is asked again at once with half
/// the `Limit` (paging.rs), with a budget of its own, so an endpoint too slow for the first size
/// answers a smaller one instead of failing for good; at [`PageSize::FLOOR`] a timeout is
/// retried like any failure.
pub(crate) async fn read_page<T, F, Fut>(
    budget: &RetryBudget,
    metrics: &Metrics,
    what: &'static str,
    size: &PageSize,
    wanted: u32,
    send: F,
) -> Result<T, Failure>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    read_with(budget, metrics, what, Some((size, wanted)), send).await
}

/// The loop of [`read`] and [`read_page`]: `page` is the page size and the items wanted, for a
/// paged read (`send` is then given the `Limit`; otherwise 0).
async fn read_with<T, F, Fut>(
    budget: &RetryBudget,
    metrics: &Metrics,
    what: &'static str,
    page: Option<(&PageSize, u32)>,
    mut send: F,
) -> Result<T, Failure>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    // The Limit to ask now, at most `limit`: another caller may have shrunk the page meanwhile.
    let current = |limit: u32| page.map_or(0, |(size, wanted)| limit.min(size.limit(wanted)));
    let mut started = Instant::now();
    let mut attempts = 0;
    let mut limit = current(u32::MAX);
    loop {
        attempts += 1;
        let sent = Instant::now();
        let failure = match send(limit).await {
            Ok(out) => {
                if let Some((size, _)) = page {
                    size.answered(limit, sent.elapsed(), budget.attempt_timeout);
                }
                return Ok(out);
            }
            Err(f) if f.class == Class::Rejected => return Err(f),
            Err(f) => f,
        };
        if let Some((size, _)) = page
            && failure.timed_out
            && let AfterTimeout::Shrunk(smaller) = size.timed_out(limit)
        {
            tracing::warn!(
                request = what,
                from = limit,
                to = smaller,
                "a page timed out; asking for fewer items"
            );
            metrics.count_page_shrink(what);
            metrics.count_retry(what);
            limit = current(smaller);
            started = Instant::now();
            attempts = 0;
            continue;
        }
        if !pause(budget, attempts, started).await {
            return Err(Failure {
                error: gave_up(failure.error, attempts, started)
                    .with_kind(StorageErrorKind::Unavailable),
                ..failure
            });
        }
        metrics.count_retry(what);
        limit = current(limit);
    }
}

/// Waits before attempt `attempts + 1`, unless the budget is spent (then answers `false`).
async fn pause(budget: &RetryBudget, attempts: u32, started: Instant) -> bool {
    if attempts >= budget.max_attempts.max(1) {
        return false;
    }
    let wait = budget.backoff(attempts);
    if started.elapsed() + wait >= budget.operation_timeout {
        return false;
    }
    tokio::time::sleep(wait).await;
    true
}

/// One attempt of a write request.
pub(crate) enum Attempt {
    /// DynamoDB applied it.
    Applied,
    /// DynamoDB refused it: the condition of operation `index` did not hold.
    ConditionFailed(usize),
    /// DynamoDB cancelled the transaction: another transaction was changing operation `index`'s
    /// item at the same moment.
    Conflict(usize),
    /// The attempt failed.
    Failed(Failure),
}

/// How a write request ended after its attempts.
#[derive(Debug)]
pub(crate) enum Sent {
    /// Applied.
    Applied,
    /// The condition of operation `index` did not hold. After a lost answer
    /// (`after_lost_answer`), the attempt that lost it may be what made the condition fail:
    /// the caller reads to decide.
    ConditionFailed {
        index: usize,
        after_lost_answer: bool,
    },
    /// A concurrent transaction held operation `index`'s item (never after a lost answer: then
    /// the other transaction may be this write's own earlier attempt, and the write is retried).
    Conflict(usize),
    /// An attempt's answer was lost and no later attempt settled it: the write may or may not
    /// have been applied. The caller reads to decide.
    Lost(StorageError),
    /// Not applied: rejected (kind Other), or the budget ran out on failures that did nothing
    /// (kind [`StorageErrorKind::Unavailable`]).
    Failed(StorageError),
}

/// Sends a write request (the same request every time: same items, same ClientRequestToken)
/// until DynamoDB answers it or the budget runs out, remembering whether an answer was lost.
pub(crate) async fn write<F, Fut>(
    budget: &RetryBudget,
    metrics: &Metrics,
    what: &'static str,
    mut send: F,
) -> Sent
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Attempt>,
{
    let started = Instant::now();
    let mut attempts = 0;
    let mut lost_answer = false;
    loop {
        attempts += 1;
        let error = match send().await {
            Attempt::Applied => return Sent::Applied,
            Attempt::ConditionFailed(index) => {
                return Sent::ConditionFailed {
                    index,
                    after_lost_answer: lost_answer,
                };
            }
            Attempt::Conflict(index) if !lost_answer => return Sent::Conflict(index),
            Attempt::Conflict(index) => StorageError::msg(format!(
                "{what}: cancelled by a concurrent transaction on operation {index}"
            )),
            Attempt::Failed(failure) => match failure.class {
                Class::Rejected if lost_answer => return Sent::Lost(failure.error),
                Class::Rejected => return Sent::Failed(failure.error),
                Class::MaybeApplied => {
                    lost_answer = true;
                    failure.error
                }
                Class::Refused => failure.error,
            },
        };
        if !pause(budget, attempts, started).await {
            let error = gave_up(error, attempts, started);
            return if lost_answer {
                Sent::Lost(error)
            } else {
                Sent::Failed(error.with_kind(StorageErrorKind::Unavailable))
            };
        }
        metrics.count_retry(what);
    }
}

#[cfg(test)]
mod test;
