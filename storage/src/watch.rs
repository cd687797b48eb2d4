//! Watch fan-out: the hub the committer publishes to, and the stream a watcher reads.
//!
//! Publishing never blocks: each watcher has a bounded buffer, and a watcher whose buffer is full
//! is cut off (its stream ends with `WatcherTooSlow` naming the last revision it got) so one slow
//! reader can never hold up writers or other watchers.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::mpsc;

use crate::{Error, Event, Result, Revision};

struct Watcher {
    prefix: String,
    tx: mpsc::Sender<Arc<Event>>,
    cut_off: Arc<AtomicBool>,
}

/// Live watchers plus the newest revision they have been sent; guarded by one mutex so that
/// registering a watcher and publishing a revision are ordered.
pub(crate) struct Hub {
    watchers: Vec<Watcher>,
    pub(crate) published: Revision,
    buffer: usize,
}

impl Hub {
    pub(crate) fn new(published: Revision, buffer: usize) -> Self {
        Hub {
            watchers: Vec::new(),
            published,
            buffer: buffer.max(1),
        }
    }

    /// Sends committed events (in revision order) to every matching watcher.
    pub(crate) fn publish(&mut self, events: &[Arc<Event>]) {
        for event in events {
            self.watchers.retain(|w| {
                if !event.key.starts_with(&w.prefix) {
                    return !w.tx.is_closed();
                }
                match w.tx.try_send(event.clone()) {
                    Ok(()) => true,
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        w.cut_off.store(true, Ordering::Release);
                        false
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => false,
                }
            });
            self.published = event.revision;
        }
    }

    /// Adds a live watcher; `replay` holds the history it must see first.
    pub(crate) fn register(
        &mut self,
        prefix: &str,
        replay: VecDeque<Arc<Event>>,
        after: Revision,
    ) -> WatchStream {
        let (tx, rx) = mpsc::channel(self.buffer);
        let cut_off = Arc::new(AtomicBool::new(false));
        self.watchers.push(Watcher {
            prefix: prefix.to_string(),
            tx,
            cut_off: cut_off.clone(),
        });
        WatchStream {
            replay,
            rx,
            cut_off,
            last_delivered: after,
            finished: false,
            feed: None,
        }
    }

    pub(crate) fn watcher_count(&self) -> usize {
        self.watchers.len()
    }

    /// Ends every watch (their streams finish) when the store closes.
    pub(crate) fn close(&mut self) {
        self.watchers.clear();
    }
}

/// What a watch fed by a task outside the hub (the etcd backend) shares with its stream: how
/// it ended, and how far it is known to be complete.
#[derive(Default)]
pub(crate) struct Feed {
    /// Set before the feeder drops its sender when the watch ends with an error (compaction).
    pub(crate) error: std::sync::OnceLock<Error>,
    /// Every matching event up to this revision has been sent (etcd progress).
    pub(crate) progress: AtomicU64,
    /// The store's newest known revision.
    pub(crate) current: Arc<AtomicU64>,
    /// Asks the feeder for a progress report.
    pub(crate) wake: tokio::sync::Notify,
}

impl WatchStream {
    /// A watch whose events come from a feeder task over `rx` (the etcd backend); `cut_off` is
    /// set by the feeder when the buffer overflowed.
    pub(crate) fn fed(
        rx: mpsc::Receiver<Arc<Event>>,
        cut_off: Arc<AtomicBool>,
        after: Revision,
        feed: Arc<Feed>,
    ) -> WatchStream {
        WatchStream {
            replay: VecDeque::new(),
            rx,
            cut_off,
            last_delivered: after,
            finished: false,
            feed: Some(feed),
        }
    }
}

/// The events of one watch, in revision order, each exactly once.
///
/// Ends with `None` when the store closes, or with one `Err(WatcherTooSlow)` if the watcher fell
/// behind; a new watch after that error's revision resumes without gaps.
pub struct WatchStream {
    replay: VecDeque<Arc<Event>>,
    rx: mpsc::Receiver<Arc<Event>>,
    cut_off: Arc<AtomicBool>,
    last_delivered: Revision,
    finished: bool,
    feed: Option<Arc<Feed>>,
}

impl WatchStream {
    /// The next event, or `None` once the watch has ended.
    pub async fn next(&mut self) -> Option<Result<Arc<Event>>> {
        futures::StreamExt::next(self).await
    }

    /// The revision of the last event handed out (or the watch's start revision).
    pub fn last_delivered(&self) -> Revision {
        self.last_delivered
    }

    /// True when no event is waiting to be read. Events are sent to watchers before the store
    /// publishes their revision, so a watch that is idle after the caller read the current
    /// revision P has delivered every matching event up to P (a progress notification).
    ///
    /// A watch fed from etcd is idle only once etcd reported progress up to the store's newest
    /// known revision; until then asking asks the feeder for a progress report.
    pub fn is_idle(&self) -> bool {
        // Progress first: the feeder raises it only after sending the events it covers.
        let complete = match &self.feed {
            None => true,
            Some(feed) => {
                let done =
                    feed.progress.load(Ordering::Acquire) >= feed.current.load(Ordering::Acquire);
                if !done {
                    feed.wake.notify_one();
                }
                done
            }
        };
        complete && self.replay.is_empty() && self.rx.is_empty()
    }
}

impl Stream for WatchStream {
    type Item = Result<Arc<Event>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.finished {
            return Poll::Ready(None);
        }
        if let Some(event) = self.replay.pop_front() {
            self.last_delivered = event.revision;
            return Poll::Ready(Some(Ok(event)));
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(event)) => {
                self.last_delivered = event.revision;
                Poll::Ready(Some(Ok(event)))
            }
            Poll::Ready(None) => {
                self.finished = true;
                if let Some(e) = self.feed.as_ref().and_then(|f| f.error.get()) {
                    return Poll::Ready(Some(Err(e.clone())));
                }
                if self.cut_off.load(Ordering::Acquire) {
                    Poll::Ready(Some(Err(Error::WatcherTooSlow {
                        last_delivered: self.last_delivered,
                    })))
                } else {
                    Poll::Ready(None)
                }
            }
            Poll::Pending => Poll::Pending,
        }
    }
}
