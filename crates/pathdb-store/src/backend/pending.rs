//! [`PendingWrite`]: the result of a batch queued with
//! [`Backend::write_queued`](super::Backend::write_queued), delivered from the backend's commit
//! thread to an async caller. A one-shot slot and a waker behind a mutex: no runtime needed.

use super::WriteError;
use crate::model::error::StorageError;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

#[derive(Default)]
struct Slot {
    result: Option<Result<(), WriteError>>,
    /// The completer is gone (it delivered a result, or was dropped without one).
    done: bool,
    waker: Option<Waker>,
}

/// Resolves to the queued batch's [`Backend::write`](super::Backend::write) result. Dropping it
/// does not cancel the write.
pub struct PendingWrite {
    slot: Arc<Mutex<Slot>>,
}

/// The backend's side of a [`PendingWrite`]: completes it once. Dropped without completing, it
/// resolves the write to a storage error (the commit thread stopped).
pub struct WriteCompleter {
    slot: Arc<Mutex<Slot>>,
}

impl PendingWrite {
    /// A pending write and the completer that resolves it.
    pub fn new() -> (PendingWrite, WriteCompleter) {
        let slot = Arc::new(Mutex::new(Slot::default()));
        (
            PendingWrite {
                slot: Arc::clone(&slot),
            },
            WriteCompleter { slot },
        )
    }

    /// A write already decided (refused, or empty).
    pub fn ready(result: Result<(), WriteError>) -> PendingWrite {
        let (pending, completer) = PendingWrite::new();
        completer.complete(result);
        pending
    }
}

impl Future for PendingWrite {
    type Output = Result<(), WriteError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Ok(mut slot) = self.slot.lock() else {
            return Poll::Ready(Err(StorageError::msg("commit reply poisoned").into()));
        };
        if let Some(result) = slot.result.take() {
            return Poll::Ready(result);
        }
        if slot.done {
            return Poll::Ready(Err(StorageError::msg("commit thread stopped").into()));
        }
        match &mut slot.waker {
            Some(waker) => waker.clone_from(cx.waker()),
            None => slot.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl WriteCompleter {
    /// Resolves the pending write.
    pub fn complete(self, result: Result<(), WriteError>) {
        if let Ok(mut slot) = self.slot.lock() {
            slot.result = Some(result);
        }
        // Drop wakes the waiting task.
    }
}

impl Drop for WriteCompleter {
    fn drop(&mut self) {
        let waker = match self.slot.lock() {
            Ok(mut slot) => {
                slot.done = true;
                slot.waker.take()
            }
            Err(_) => None,
        };
        // Woken outside the lock: the task may poll at once on another thread.
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}
