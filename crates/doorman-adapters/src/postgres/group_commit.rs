//! Group commit: concurrent writes share one transaction.
//!
//! Callers [`GroupCommit::submit`] a request and wait for its answer, which comes only once
//! the transaction holding it has committed (or failed). A few workers take turns: one takes
//! whatever is queued (up to a cap) and writes it while the next gathers, so under load
//! batches grow on their own, and a lone request is written at once. There is no timer: no
//! request waits for company.
//!
//! A failed batch writes nothing (it is one transaction) and every request in it gets the
//! error. A worker that panics answers its batch with an error and keeps serving.
//!
//! A caller may bound its wait ([`GroupCommit::submit_within`]). One that gives up before its
//! request was taken into a batch withdraws it (it is never written: `Unavailable`); one that
//! gives up after cannot know whether it was (`Unconfirmed`). So the writer is told when the
//! first of its batch's callers stops waiting (a little before: [`ANSWER_LEAD`]), and answers
//! by then with what it knows: a batch the database refused is answered as refused, not left
//! to run out its callers' time and be called unconfirmed.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use doorman_domain::StorageError;
use futures_util::FutureExt;
use tokio::sync::{Mutex, mpsc, oneshot};
use tokio::time::Instant;

/// How long before its first caller stops waiting a writer is asked to have answered: time for
/// the answer to reach the caller before its wait ends.
pub(crate) const ANSWER_LEAD: Duration = Duration::from_millis(50);

/// How batches are formed.
///
/// One batch in flight is the default: the next batch gathers in the queue while the current
/// one commits, and on a 2-core machine a second writer measured 9% slower (more, smaller
/// batches competing for the same CPU; `docs/benchmarks.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupSettings {
    /// The most requests in one transaction.
    pub max_batch: usize,
    /// Batches being written at once.
    pub in_flight: usize,
}

impl Default for GroupSettings {
    fn default() -> Self {
        Self { max_batch: 256, in_flight: 1 }
    }
}

type Reply<A> = oneshot::Sender<Result<A, StorageError>>;
type Answer<A> = oneshot::Receiver<Result<A, StorageError>>;
/// The queue's receiving end, shared by the workers: whoever holds it gathers the next batch.
type SharedReceiver<R, A> = Arc<Mutex<mpsc::UnboundedReceiver<Queued<R, A>>>>;

/// A request in the queue, and where it stands: still queued, taken into a batch, or
/// withdrawn by a caller that stopped waiting first. Exactly one of the two moves out of
/// "queued" wins.
struct Queued<R, A> {
    request: R,
    reply: Reply<A>,
    stage: Arc<AtomicU8>,
    /// When its caller stops waiting, if it does.
    answer_by: Option<Instant>,
}

const QUEUED: u8 = 0;
const TAKEN: u8 = 1;
const WITHDRAWN: u8 = 2;
type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Writes one batch in one transaction; one answer per request, in the requests' order, by
/// the instant given (when one of the batch's callers stops waiting, less [`ANSWER_LEAD`]).
pub(crate) type Writer<R, A> =
    Arc<dyn Fn(Vec<R>, Option<Instant>) -> BoxFuture<Result<Vec<A>, StorageError>> + Send + Sync>;

pub(crate) struct GroupCommit<R, A> {
    queue: mpsc::UnboundedSender<Queued<R, A>>,
}

impl<R, A> Clone for GroupCommit<R, A> {
    fn clone(&self) -> Self {
        Self { queue: self.queue.clone() }
    }
}

impl<R: Send + 'static, A: Send + 'static> GroupCommit<R, A> {
    /// Starts the workers on the current runtime. They stop once every handle is dropped
    /// and the queue is empty.
    pub(crate) fn start(name: &'static str, settings: GroupSettings, writer: Writer<R, A>) -> Self {
        let (queue, receiver) = mpsc::unbounded_channel();
        let receiver = Arc::new(Mutex::new(receiver));
        for _ in 0..settings.in_flight.max(1) {
            tokio::spawn(work(name, settings.max_batch.max(1), receiver.clone(), writer.clone()));
        }
        Self { queue }
    }

    /// Queues `request` and waits until the transaction holding it has committed.
    pub(crate) async fn submit(&self, request: R) -> Result<A, StorageError> {
        let (answer, _) = self.enqueue(request, None)?;
        answered(answer.await)
    }

    /// Like [`GroupCommit::submit`], waiting at most `within`. Given up while still queued,
    /// the request is withdrawn and never written (`Unavailable`); given up once taken into
    /// a batch, it may or may not be written (`Unconfirmed`).
    pub(crate) async fn submit_within(&self, request: R, within: Duration) -> Result<A, StorageError> {
        let answer_by = Instant::now() + within;
        let (answer, stage) = self.enqueue(request, Some(answer_by - ANSWER_LEAD.min(within)))?;
        match tokio::time::timeout_at(answer_by, answer).await {
            Ok(answer) => answered(answer),
            Err(_)
                if stage.compare_exchange(QUEUED, WITHDRAWN, Ordering::AcqRel, Ordering::Acquire).is_ok() =>
            {
                Err(StorageError::Unavailable(format!("not written: no turn to write within {within:?}")))
            }
            Err(_) => Err(StorageError::Unconfirmed(format!("sent, but not confirmed within {within:?}"))),
        }
    }

    fn enqueue(
        &self,
        request: R,
        answer_by: Option<Instant>,
    ) -> Result<(Answer<A>, Arc<AtomicU8>), StorageError> {
        let (reply, answer) = oneshot::channel();
        let stage = Arc::new(AtomicU8::new(QUEUED));
        self.queue
            .send(Queued { request, reply, stage: stage.clone(), answer_by })
            .map_err(|_| StorageError::Unexpected("the batch writer has stopped".into()))?;
        Ok((answer, stage))
    }
}

fn answered<A>(
    answer: Result<Result<A, StorageError>, oneshot::error::RecvError>,
) -> Result<A, StorageError> {
    answer.unwrap_or_else(|_| Err(StorageError::Unexpected("the batch writer dropped a request".into())))
}

async fn work<R, A>(
    name: &'static str,
    max_batch: usize,
    receiver: SharedReceiver<R, A>,
    writer: Writer<R, A>,
) {
    loop {
        let batch = {
            let mut receiver = receiver.lock().await;
            let Some(first) = receiver.recv().await else { return };
            let mut batch = vec![first];
            while batch.len() < max_batch {
                match receiver.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            batch
        };
        // Whatever its caller withdrew is not written.
        let taken: Vec<Queued<R, A>> = batch
            .into_iter()
            .filter(|queued| {
                queued.stage.compare_exchange(QUEUED, TAKEN, Ordering::AcqRel, Ordering::Acquire).is_ok()
            })
            .collect();
        if taken.is_empty() {
            continue;
        }
        let answer_by = taken.iter().filter_map(|queued| queued.answer_by).min();
        let (requests, replies): (Vec<R>, Vec<Reply<A>>) =
            taken.into_iter().map(|queued| (queued.request, queued.reply)).unzip();
        let size = requests.len();
        let outcome = AssertUnwindSafe(writer(requests, answer_by))
            .catch_unwind()
            .await
            .unwrap_or_else(|_| Err(StorageError::Unexpected(format!("the {name} batch writer panicked"))));
        match outcome {
            Ok(answers) if answers.len() == size => {
                for (reply, answer) in replies.into_iter().zip(answers) {
                    // A caller that went away no longer needs its answer; the write stands.
                    let _ = reply.send(Ok(answer));
                }
            }
            Ok(answers) => {
                let error = StorageError::Unexpected(format!(
                    "the {name} batch writer answered {} of {size} requests",
                    answers.len()
                ));
                replies.into_iter().for_each(|reply| drop(reply.send(Err(error.clone()))));
            }
            Err(error) => {
                tracing::warn!(batch = name, size, error = %error, "batch failed; nothing in it was written");
                replies.into_iter().for_each(|reply| drop(reply.send(Err(error.clone()))));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn echo(batches: Arc<std::sync::Mutex<Vec<usize>>>) -> Writer<u32, u32> {
        Arc::new(move |requests: Vec<u32>, _answer_by| {
            let batches = batches.clone();
            Box::pin(async move {
                batches.lock().unwrap().push(requests.len());
                tokio::task::yield_now().await;
                Ok(requests.into_iter().map(|r| r * 10).collect())
            })
        })
    }

    #[tokio::test]
    async fn a_lone_request_is_written_at_once_and_answered_in_order() {
        let batches = Arc::default();
        let group = GroupCommit::start("test", GroupSettings::default(), echo(Arc::clone(&batches)));
        assert_eq!(group.submit(4).await, Ok(40));
        assert_eq!(*batches.lock().unwrap(), [1]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_requests_share_batches_up_to_the_cap() {
        let batches = Arc::new(std::sync::Mutex::new(Vec::new()));
        let settings = GroupSettings { max_batch: 8, in_flight: 1 };
        let group = GroupCommit::start("test", settings, echo(batches.clone()));
        let answers = futures_util::future::join_all((0..100).map(|i| {
            let g = group.clone();
            async move { g.submit(i).await }
        }))
        .await;
        assert_eq!(answers, (0..100).map(|i| Ok(i * 10)).collect::<Vec<_>>());
        let sizes = batches.lock().unwrap().clone();
        assert!(sizes.iter().all(|s| *s <= 8), "{sizes:?}");
        assert!(sizes.len() < 100, "requests were grouped: {sizes:?}");
    }

    #[tokio::test]
    async fn a_failed_or_panicking_batch_fails_every_request_in_it_and_the_writer_goes_on() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let writer: Writer<u32, u32> = Arc::new(move |requests: Vec<u32>, _answer_by| {
            let call = seen.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                match call {
                    0 => Err(StorageError::Unavailable("connection cut".into())),
                    1 => panic!("bug"),
                    _ => Ok(requests),
                }
            })
        });
        let group = GroupCommit::start("test", GroupSettings { max_batch: 8, in_flight: 1 }, writer);
        assert_eq!(group.submit(1).await, Err(StorageError::Unavailable("connection cut".into())));
        assert!(matches!(group.submit(2).await, Err(StorageError::Unexpected(_))));
        assert_eq!(group.submit(3).await, Ok(3));
    }

    /// The writer hears when its batch's caller stops waiting, less the lead its answer needs
    /// to arrive first; a caller that waits for ever sets no such time.
    #[tokio::test]
    async fn the_writer_is_told_when_its_caller_stops_waiting() {
        let told = Arc::new(std::sync::Mutex::new(Vec::new()));
        let heard = told.clone();
        let writer: Writer<u32, u32> = Arc::new(move |requests: Vec<u32>, answer_by| {
            heard.lock().unwrap().push(answer_by);
            Box::pin(async move { Ok(requests) })
        });
        let group = GroupCommit::start("test", GroupSettings::default(), writer);
        let within = Duration::from_secs(10);
        let before = Instant::now();
        assert_eq!(group.submit_within(1, within).await, Ok(1));
        let after = Instant::now();
        assert_eq!(group.submit(2).await, Ok(2));
        let told = told.lock().unwrap().clone();
        let answer_by = told[0].expect("a time to answer by");
        assert!(answer_by >= before + within - ANSWER_LEAD && answer_by <= after + within - ANSWER_LEAD);
        assert_eq!(told[1], None);
    }

    /// A writer that records what it writes and holds each batch until `gate` is notified.
    fn gated(gate: Arc<tokio::sync::Notify>, written: Arc<std::sync::Mutex<Vec<u32>>>) -> Writer<u32, u32> {
        Arc::new(move |requests: Vec<u32>, _answer_by| {
            let (gate, written) = (gate.clone(), written.clone());
            Box::pin(async move {
                gate.notified().await;
                written.lock().unwrap().extend(&requests);
                Ok(requests)
            })
        })
    }

    #[tokio::test]
    async fn a_caller_that_stops_waiting_withdraws_a_queued_request_and_cannot_know_about_a_taken_one() {
        let (gate, written) = (Arc::new(tokio::sync::Notify::new()), Arc::default());
        let group =
            GroupCommit::start("test", GroupSettings::default(), gated(gate.clone(), Arc::clone(&written)));
        let within = Duration::from_millis(50);
        // 1 is taken into the first batch, which the gate holds; 2 waits its turn behind it.
        let (first, second) = tokio::join!(group.submit_within(1, within), async {
            tokio::task::yield_now().await;
            group.submit_within(2, within).await
        });
        assert!(matches!(first, Err(StorageError::Unconfirmed(_))), "{first:?}");
        assert!(matches!(second, Err(StorageError::Unavailable(_))), "{second:?}");
        gate.notify_one(); // the first batch ends
        gate.notify_one(); // and the next may pass at once
        assert_eq!(group.submit(3).await, Ok(3));
        assert_eq!(*written.lock().unwrap(), [1, 3], "the withdrawn request was never written");
    }
}
