//! A cap on work running at once (change streams, imports): a slot is taken without waiting,
//! and a request beyond the cap is refused with 503 `unavailable` and `Retry-After`.

use crate::error::ApiError;
use axum::http::StatusCode;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// At most `max` at once. Clones share the cap.
#[derive(Clone, Debug)]
pub(crate) struct Slots {
    slots: Arc<Semaphore>,
    max: usize,
}

impl Slots {
    /// At most `max` at once (at least 1).
    pub(crate) fn new(max: usize) -> Slots {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Slots {
            slots: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// The cap.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// A slot, held until dropped; or the 503 that refuses one, its message `refused` (given
    /// the cap), with `Retry-After: retry_after` seconds.
    pub(crate) fn take(
        &self,
        retry_after: u64,
        refused: impl FnOnce(usize) -> String,
    ) -> Result<OwnedSemaphorePermit, ApiError> {
        Arc::clone(&self.slots).try_acquire_owned().map_err(|_| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                refused(self.max),
            )
            .retry_after(retry_after)
        })
    }
}
