//! A connection's header-read and idle timeouts (issue 22): a new connection must send a
//! request's complete headers within the header timeout; after an answer, a kept-alive
//! connection may wait for the idle timeout for its next request, and once that request's first
//! byte arrives, its headers are due within the header timeout. A connection that misses either
//! is closed. Without them, silent sockets, slowloris clients (a header byte a second) and idle
//! keep-alive connections stayed open for good, until the server ran out of file descriptors.
//!
//! hyper has one such deadline, `header_read_timeout`: its timer runs while the connection
//! waits for a request head, from the connection's start or the end of the previous answer until
//! the head is complete, and never while a request is being answered (so a long poll or an
//! event stream is not cut). [`HeadTimer`] is the timer it runs on, one per connection: it gives
//! the first wait the header timeout and later ones the idle timeout, moved to the header
//! timeout after the first byte, which [`Watched`] (the connection's socket) reports.

use hyper::rt::{Sleep, Timer};
use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The two timeouts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timeouts {
    /// For a request's headers, from the connection's start or the request's first byte.
    pub(crate) header: Duration,
    /// For the next request on a kept-alive connection, from the end of the previous answer.
    pub(crate) idle: Duration,
}

/// What a connection's socket tells its timer, and the accept loop at its cap (eviction.rs).
#[derive(Default)]
pub(crate) struct Activity {
    /// Reads that returned data, so far.
    reads: AtomicU64,
    /// When the connection last began waiting for a request head: microseconds since
    /// [`epoch`], plus one (0: it has not begun its first).
    head_wait_since: AtomicU64,
    /// `reads` when that wait began.
    reads_at_wait: AtomicU64,
}

impl Activity {
    /// When the connection began waiting for its next request, if not a byte of that request
    /// has come since (in microseconds on a clock private to the process); `None` while a
    /// request is read or answered, or once its first byte came.
    pub(crate) fn idle_since(&self) -> Option<u64> {
        let since = self.head_wait_since.load(Ordering::Acquire);
        let quiet =
            self.reads.load(Ordering::Acquire) == self.reads_at_wait.load(Ordering::Acquire);
        (since != 0 && quiet).then_some(since)
    }

    /// hyper began waiting for a request head.
    fn head_wait_began(&self) {
        self.reads_at_wait
            .store(self.reads.load(Ordering::Acquire), Ordering::Release);
        let micros = u64::try_from(epoch().elapsed().as_micros()).unwrap_or(u64::MAX - 1);
        self.head_wait_since.store(micros + 1, Ordering::Release);
    }
}

/// The start of the clock of [`Activity::idle_since`].
fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// A connection's socket and its timer, for hyper (set the timer with
/// `header_read_timeout(timeouts.header)`).
pub(crate) fn watch<T>(io: T, timeouts: Timeouts) -> (Watched<T>, HeadTimer) {
    let activity = Arc::new(Activity::default());
    let timer = HeadTimer {
        activity: Arc::clone(&activity),
        timeouts,
        started: AtomicBool::new(false),
        alarm: Alarm::default(),
    };
    (Watched { io, activity }, timer)
}

/// hyper's timer for one connection (see the module's docs).
///
/// hyper asks for a new head deadline before every request of a kept-alive connection and drops
/// it when the head is read. A tokio sleep per wait was registered in the runtime's timer wheel
/// and taken out again for every request (a lock each way, and an allocation). Instead each
/// connection has one [`Alarm`], armed no later than the deadline of the wait in progress and
/// left armed between waits: a wait moves it only when it would ring too late, and when it rang
/// too early (for an earlier wait), so a busy connection moves it about once per timeout rather
/// than twice per request. A ring with no wait in progress only wakes the connection's task.
pub(crate) struct HeadTimer {
    activity: Arc<Activity>,
    timeouts: Timeouts,
    /// Whether the connection's first wait for a head has begun (later ones are keep-alive).
    started: AtomicBool,
    alarm: Alarm,
}

/// A connection's one timer registration, shared by its head waits; made at the first wait.
type Alarm = Arc<Mutex<Option<Pin<Box<tokio::time::Sleep>>>>>;

impl HeadTimer {
    /// What the connection's socket and timer have seen, for the accept loop at its cap.
    pub(crate) fn activity(&self) -> Arc<Activity> {
        Arc::clone(&self.activity)
    }
}

impl Timer for HeadTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        // Not a head's deadline (hyper's HTTP/1 server asks for none of these): a plain sleep.
        Box::pin(PlainSleep {
            sleep: tokio::time::sleep(duration),
        })
    }

    /// hyper asks for `deadline` (now + the header timeout) when it starts waiting for a
    /// request head.
    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        self.activity.head_wait_began();
        if !self.started.swap(true, Ordering::Relaxed) {
            return Box::pin(HeadWait {
                alarm: Arc::clone(&self.alarm),
                deadline: deadline.into(),
                rearm: None,
            });
        }
        let reads = self.activity.reads.load(Ordering::Relaxed);
        Box::pin(HeadWait {
            alarm: Arc::clone(&self.alarm),
            deadline: tokio::time::Instant::now() + self.timeouts.idle,
            rearm: Some(Rearm {
                activity: Arc::clone(&self.activity),
                reads,
                header: self.timeouts.header,
            }),
        })
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn Sleep>>, new_deadline: Instant) {
        // hyper resets a head's deadline only to begin another wait for a head.
        *sleep = self.sleep_until(new_deadline);
    }

    fn now(&self) -> Instant {
        tokio::time::Instant::now().into()
    }
}

/// When an idle wait turns into a header wait.
struct Rearm {
    activity: Arc<Activity>,
    /// The socket's reads when the wait began.
    reads: u64,
    header: Duration,
}

/// A wait for a request head: until its deadline, or, for a keep-alive wait, until the idle
/// deadline or the header timeout after the first byte. Woken by the connection's [`Alarm`].
struct HeadWait {
    alarm: Alarm,
    deadline: tokio::time::Instant,
    rearm: Option<Rearm>,
}

impl Sleep for HeadWait {}

impl Future for HeadWait {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let now = tokio::time::Instant::now();
        // hyper polls the deadline each time a read leaves the head incomplete, so the first
        // byte is seen here as soon as it is read.
        if let Some(rearm) = &self.rearm
            && rearm.activity.reads.load(Ordering::Relaxed) != rearm.reads
        {
            self.deadline = now + rearm.header;
            self.rearm = None;
        }
        if now >= self.deadline {
            return Poll::Ready(());
        }
        let deadline = self.deadline;
        let mut alarm = self.alarm.lock().unwrap_or_else(PoisonError::into_inner);
        let alarm = alarm.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if alarm.deadline() > deadline {
            // It would ring too late for this wait.
            alarm.as_mut().reset(deadline);
        }
        if alarm.as_mut().poll(cx).is_ready() {
            // It rang for an earlier deadline: aim it at this one (not yet reached).
            alarm.as_mut().reset(deadline);
            if alarm.as_mut().poll(cx).is_ready() {
                return Poll::Ready(());
            }
        }
        Poll::Pending
    }
}

pin_project! {
    /// [`Timer::sleep`]'s sleep.
    struct PlainSleep {
        #[pin]
        sleep: tokio::time::Sleep,
    }
}

impl Sleep for PlainSleep {}

impl Future for PlainSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.project().sleep.poll(cx)
    }
}

pin_project! {
    /// A connection's socket, counting the reads that return data for its [`HeadTimer`].
    pub(crate) struct Watched<T> {
        #[pin]
        io: T,
        activity: Arc<Activity>,
    }
}

impl<T: AsyncRead> AsyncRead for Watched<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.project();
        let before = buf.filled().len();
        let read = this.io.poll_read(cx, buf);
        if buf.filled().len() > before {
            this.activity.reads.fetch_add(1, Ordering::Release);
        }
        read
    }
}

impl<T: AsyncWrite> AsyncWrite for Watched<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.project().io.poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.project().io.poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.project().io.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.project().io.poll_shutdown(cx)
    }
}
