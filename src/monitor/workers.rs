//! The threads that run the checks' blocking parts (decode, build,
//! compare, judge, record): one per CPU, fed through one queue.
//!
//! `limits.concurrency` checks may be in flight at once, most of them
//! waiting on the network; their CPU-bound part cannot run faster than the
//! CPUs allow, so running more of them side by side only holds more pages'
//! DOMs and hierarchies in memory at once and contends for the store's
//! write lock. Dedicated threads also keep that memory in few allocator
//! arenas: glibc's malloc gives each thread an arena (up to 8 per CPU) and
//! every arena keeps what it freed, so the big allocations of a check
//! spread over tokio's many blocking threads held several times the memory
//! of the checks running at any moment (bench/daemon/BOARD.md).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};

use crate::sync::lock;

/// A job for a worker.
type Job = Box<dyn FnOnce() + Send + 'static>;

/// The worker threads, and the queue that feeds them. Dropping it lets the
/// threads end once the queue is empty.
#[derive(Debug)]
pub struct Workers {
    /// The queue; `None` when no thread could be started (the jobs then
    /// run on tokio's blocking threads).
    queue: Option<Sender<Job>>,
    threads: usize,
}

/// The worker running a job panicked (the job was lost; the worker goes
/// on with the next one).
#[derive(Debug, thiserror::Error)]
#[error("the worker thread panicked")]
pub struct WorkerPanicked;

impl Workers {
    /// Starts `threads` workers (at least one; fewer if the system refuses
    /// threads, none at worst).
    pub fn start(threads: usize) -> Workers {
        let (tx, rx) = channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let mut started = 0;
        for i in 0..threads.max(1) {
            let rx = Arc::clone(&rx);
            let spawned = std::thread::Builder::new()
                .name(format!("semclip-check-{i}"))
                .spawn(move || work(&rx));
            match spawned {
                Ok(_) => started += 1,
                Err(error) => {
                    tracing::warn!(error = %crate::ErrorChain(&error), "cannot start a check worker thread");
                    break;
                }
            }
        }
        Workers {
            queue: (started > 0).then_some(tx),
            threads: started,
        }
    }

    /// One worker per CPU this process may use.
    pub fn per_cpu() -> Workers {
        Workers::start(std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
    }

    /// The worker threads running.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `f` on a worker when one is free, in the order asked.
    pub async fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> Result<R, WorkerPanicked> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            // The receiver may be gone (the check was cancelled).
            let _ = tx.send(f());
        });
        let queued = match &self.queue {
            Some(queue) => queue.send(job).map_err(|unsent| unsent.0),
            None => Err(job),
        };
        if let Err(job) = queued {
            // No worker: a blocking thread of tokio's runs it.
            return match tokio::task::spawn_blocking(job).await {
                Ok(()) => rx.await.map_err(|_| WorkerPanicked),
                Err(_) => Err(WorkerPanicked),
            };
        }
        // A panicking job drops its sender unsent.
        rx.await.map_err(|_| WorkerPanicked)
    }
}

/// A worker: runs jobs until the queue is closed and empty.
fn work(rx: &Mutex<Receiver<Job>>) {
    loop {
        let job = lock(rx).recv();
        let Ok(job) = job else { return };
        // A panic is the job's (its caller sees its result missing); the
        // worker goes on.
        let _ = catch_unwind(AssertUnwindSafe(job));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn runs_every_job_at_most_threads_at_once() {
        let workers = Arc::new(Workers::start(2));
        assert_eq!(workers.threads(), 2);
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..12usize {
            let (workers, running, most) = (
                Arc::clone(&workers),
                Arc::clone(&running),
                Arc::clone(&most),
            );
            tasks.spawn(async move {
                workers
                    .run(move || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(5));
                        running.fetch_sub(1, Ordering::SeqCst);
                        let name = std::thread::current().name().map(str::to_owned);
                        (i * 2, name)
                    })
                    .await
            });
        }
        let mut doubled = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            let (value, thread) = joined.unwrap().unwrap();
            assert!(thread.unwrap().starts_with("semclip-check-"));
            doubled.push(value);
        }
        doubled.sort_unstable();
        assert_eq!(doubled, (0..12).map(|i| i * 2).collect::<Vec<_>>());
        let most = most.load(Ordering::SeqCst);
        assert!((1..=2).contains(&most), "{most} jobs ran at once");
    }

    #[tokio::test]
    async fn a_panicking_job_fails_alone_and_the_worker_goes_on() {
        let workers = Workers::start(1);
        let failed = workers.run(|| -> u32 { panic!("a page broke the build") });
        assert!(failed.await.is_err());
        assert_eq!(workers.run(|| 7).await.unwrap(), 7);
        assert_eq!(workers.run(|| 8).await.unwrap(), 8);
    }
}
