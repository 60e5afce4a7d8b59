//! The scheduler: which watch is checked when.
//!
//! Takes the watches with their stored next runs, a limit on checks at
//! once, a clock and a *runner* (what one check of one watch is: in the
//! daemon, [`crate::monitor::check::check`] plus its logging and metrics).
//! Gives one task, [`Scheduler::run`], that keeps every watch's next run in
//! an ordered set, sleeps until the first one falls due (or until it is
//! told something), starts the runner for what is due and puts the watch
//! back in the set at its next run once the check finished.
//!
//! # Guarantees
//!
//! - A watch is never checked twice at once: while its check runs it is
//!   out of the set, and a check-now or a reload does not put it back.
//! - At most `concurrency` checks run at once; a due watch waits for a free
//!   slot in due order.
//! - A reload ([`Scheduler::replace`]) keeps the next run of every watch
//!   whose schedule did not change; a watch whose schedule changed gets
//!   its next run under the new schedule, a new watch runs at once, and a
//!   removed one is dropped (a check of it in flight finishes, and it is
//!   not put back).
//! - The next run is the schedule's next time after the check started
//!   (jitter included), unless the runner moved it (a page refused for its
//!   size backs off).
//!
//! # Decisions
//!
//! - The limit on checks at once is the size of the in-flight set, not a
//!   semaphore: the scheduler is the only one that starts checks, and a
//!   slot frees exactly when the check reports it is done, which is also
//!   when its watch goes back in the set.
//! - Checks are spawned on the daemon's [`TaskTracker`], so the daemon's
//!   drain waits for them after the scheduler itself stopped; a check never
//!   sees the shutdown token (a half-run check records nothing useful).
//! - Time is read from a [`Clock`]: schedules (cron in a time zone) need
//!   the wall clock, and tests need a clock that moves with tokio's paused
//!   time. Sleeping is always tokio's.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Watch;

/// The longest the scheduler sleeps with nothing due.
const IDLE: Duration = Duration::from_secs(3600);

/// Where the scheduler reads the time.
#[derive(Debug, Clone, Copy)]
pub enum Clock {
    /// The system's wall clock.
    Wall,
    /// `origin` plus the time tokio's clock advanced since `since`: with
    /// tokio's time paused (tests), a wall clock that `sleep` moves.
    Tokio {
        /// The wall time at `since`.
        origin: SystemTime,
        /// When, on tokio's clock, the wall time was `origin`.
        since: tokio::time::Instant,
    },
}

impl Clock {
    /// A clock that reads `origin` now and follows tokio's clock.
    pub fn tokio(origin: SystemTime) -> Clock {
        Clock::Tokio {
            origin,
            since: tokio::time::Instant::now(),
        }
    }

    /// The time now.
    pub fn now(&self) -> SystemTime {
        match self {
            Clock::Wall => SystemTime::now(),
            Clock::Tokio { origin, since } => *origin + since.elapsed(),
        }
    }
}

/// The next run of `watch` after `now`, with jitter; a day later when the
/// schedule has none (a cron pattern that never matches again).
pub fn next_run(watch: &Watch, now: SystemTime) -> SystemTime {
    watch
        .schedule
        .next_with_jitter(DateTime::<Utc>::from(now))
        .map_or(now + Duration::from_secs(86_400), SystemTime::from)
}

/// A finished check: its watch and when the watch runs next.
#[derive(Debug)]
struct Done {
    id: String,
    next: SystemTime,
}

/// Sends a check's [`Done`] when dropped, so that a check that panicked
/// (or was cancelled) frees its slot and keeps its watch scheduled.
struct Finish {
    id: String,
    next: SystemTime,
    done: mpsc::UnboundedSender<Done>,
}

impl Drop for Finish {
    fn drop(&mut self) {
        // The scheduler has stopped when nobody receives: nothing to free.
        let _ = self.done.send(Done {
            id: std::mem::take(&mut self.id),
            next: self.next,
        });
    }
}

/// The watches, when each runs next, and which are being checked.
pub struct Scheduler<F> {
    watches: HashMap<String, Arc<Watch>>,
    /// Next runs of the watches not in flight, in due order.
    queue: BTreeSet<(SystemTime, String)>,
    in_flight: HashSet<String>,
    concurrency: usize,
    clock: Clock,
    runner: F,
    tasks: TaskTracker,
    /// Finished checks. The scheduler owns both ends; each check holds a
    /// sender clone until it finishes, and the channel closes with the
    /// scheduler.
    done_tx: mpsc::UnboundedSender<Done>,
    done_rx: mpsc::UnboundedReceiver<Done>,
}

impl<F> std::fmt::Debug for Scheduler<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("queue", &self.queue)
            .field("in_flight", &self.in_flight)
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}

impl<F, Fut> Scheduler<F>
where
    F: Fn(Arc<Watch>, SystemTime, SystemTime) -> Fut,
    Fut: Future<Output = Option<SystemTime>> + Send + 'static,
{
    /// A scheduler of `watches`. A watch runs first at its `stored` next
    /// run, or at once when it has none (new, or never checked).
    /// `runner(watch, now, next)` is one check started at `now` whose
    /// schedule runs it next at `next`; it returns the next run when the
    /// check moved it. Checks are spawned on `tasks`.
    pub fn new(
        watches: impl IntoIterator<Item = Arc<Watch>>,
        stored: &HashMap<String, SystemTime>,
        concurrency: usize,
        clock: Clock,
        tasks: TaskTracker,
        runner: F,
    ) -> Scheduler<F> {
        let now = clock.now();
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let mut scheduler = Scheduler {
            watches: HashMap::new(),
            queue: BTreeSet::new(),
            in_flight: HashSet::new(),
            concurrency: concurrency.max(1),
            clock,
            runner,
            tasks,
            done_tx,
            done_rx,
        };
        for watch in watches {
            let due = stored.get(&watch.id).copied().unwrap_or(now);
            scheduler.queue.insert((due, watch.id.clone()));
            scheduler.watches.insert(watch.id.clone(), watch);
        }
        scheduler
    }

    /// When `id` runs next; `None` while it is being checked (or unknown).
    pub fn next_run_of(&self, id: &str) -> Option<SystemTime> {
        self.queue
            .iter()
            .find(|(_, queued)| queued == id)
            .map(|(due, _)| *due)
    }

    /// Whether a check of `id` is running.
    pub fn is_running(&self, id: &str) -> bool {
        self.in_flight.contains(id)
    }

    /// How many watches are scheduled.
    pub fn len(&self) -> usize {
        self.watches.len()
    }

    /// Whether no watch is scheduled.
    pub fn is_empty(&self) -> bool {
        self.watches.is_empty()
    }

    /// Starts the checks that are due, in due order, while slots are free.
    /// Returns how many it started.
    pub fn start_due(&mut self) -> usize {
        let now = self.clock.now();
        let mut started = 0;
        while self.in_flight.len() < self.concurrency {
            let Some((due, id)) = self.queue.first().cloned() else {
                break;
            };
            if due > now {
                break;
            }
            self.queue.pop_first();
            let Some(watch) = self.watches.get(&id).cloned() else {
                continue;
            };
            if !self.in_flight.insert(id.clone()) {
                continue;
            }
            let next = next_run(&watch, now);
            let check = (self.runner)(watch, now, next);
            let mut finish = Finish {
                id,
                next,
                done: self.done_tx.clone(),
            };
            self.tasks.spawn(async move {
                if let Some(moved) = check.await {
                    finish.next = moved;
                }
                drop(finish);
            });
            started += 1;
        }
        started
    }

    /// A check finished: its slot is free and its watch, if still
    /// scheduled, goes back in the set at its next run.
    fn finished(&mut self, done: Done) {
        self.in_flight.remove(&done.id);
        if self.watches.contains_key(&done.id) {
            self.queue.insert((done.next, done.id));
        }
    }

    /// Replaces the watches with a reloaded set (see the module's
    /// guarantees). Returns how many watches there were before.
    pub fn replace(&mut self, watches: impl IntoIterator<Item = Arc<Watch>>) -> usize {
        let before = self.watches.len();
        let now = self.clock.now();
        let mut next: HashMap<String, Arc<Watch>> = HashMap::new();
        for watch in watches {
            let old = self.watches.get(&watch.id);
            // Display names every setting of a schedule.
            let changed =
                old.is_none_or(|old| old.schedule.to_string() != watch.schedule.to_string());
            if changed {
                self.queue.retain(|(_, id)| id != &watch.id);
                if !self.in_flight.contains(&watch.id) {
                    let due = if old.is_some() {
                        next_run(&watch, now)
                    } else {
                        now
                    };
                    self.queue.insert((due, watch.id.clone()));
                }
            }
            next.insert(watch.id.clone(), watch);
        }
        self.queue.retain(|(_, id)| next.contains_key(id));
        self.watches = next;
        before
    }

    /// Runs `id` at once (as soon as a slot is free). False when it is
    /// unknown or being checked already.
    pub fn check_now(&mut self, id: &str) -> bool {
        if !self.watches.contains_key(id) || self.in_flight.contains(id) {
            return false;
        }
        self.queue.retain(|(_, queued)| queued != id);
        self.queue.insert((self.clock.now(), id.to_owned()));
        true
    }

    /// How long until the first watch falls due (zero when one is due),
    /// at most an hour. With every slot taken, only a finished check (or
    /// news) can start anything: no point waking for a due time.
    fn sleep(&self) -> Duration {
        if self.in_flight.len() >= self.concurrency {
            return IDLE;
        }
        self.queue.first().map_or(IDLE, |(due, _)| {
            due.duration_since(self.clock.now())
                .unwrap_or_default()
                .min(IDLE)
        })
    }

    /// Schedules until `shutdown` is cancelled: starts what is due, and
    /// takes reloaded watch sets from `reloads` and watch ids to check now
    /// from `check_now`. Checks in flight are left to finish on the task
    /// tracker.
    pub async fn run(
        mut self,
        mut reloads: mpsc::UnboundedReceiver<Vec<Arc<Watch>>>,
        mut check_now: mpsc::UnboundedReceiver<String>,
        shutdown: CancellationToken,
    ) {
        loop {
            self.start_due();
            let sleep = self.sleep();
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                Some(done) = self.done_rx.recv() => self.finished(done),
                Some(watches) = reloads.recv() => {
                    let before = self.replace(watches);
                    tracing::info!(before, after = self.len(), "watches reloaded");
                }
                Some(id) = check_now.recv() => {
                    if self.check_now(&id) {
                        tracing::info!(watch = %id, "check requested");
                    }
                }
                () = tokio::time::sleep(sleep) => {}
            }
        }
        tracing::info!(
            in_flight = self.in_flight.len(),
            "scheduler stopped: checks in flight finish"
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]
mod tests {
    use std::sync::Mutex;

    use tokio::sync::Semaphore;

    use super::*;
    use crate::config::schedule::{Schedule, parse_cron};
    use crate::sync::lock;

    /// 2026-01-05 10:20:00 UTC, a Monday.
    fn origin() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_608_400)
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    fn every(period: u64, jitter: u64) -> Schedule {
        Schedule::Every {
            every: secs(period),
            jitter: secs(jitter),
        }
    }

    /// A watch `id` on `schedule` (the rest from a loaded watch file).
    fn watch(id: &str, schedule: Schedule) -> Arc<Watch> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("w.yaml"),
            "url: https://example.com/\nschedule: {every: 1h}\n",
        )
        .unwrap();
        let loaded = crate::config::load_watches(dir.path(), &crate::config::daemon_defaults())
            .unwrap_or_else(|d| panic!("{d:?}"));
        let template = loaded.into_iter().next().unwrap();
        Arc::new(Watch {
            id: id.to_owned(),
            schedule,
            ..template
        })
    }

    /// The checks a test runner was asked for: watch and start time.
    type Runs = Arc<Mutex<Vec<(String, SystemTime)>>>;

    /// A runner that records each check and finishes at once.
    fn recording(
        runs: &Runs,
        clock: Clock,
    ) -> impl Fn(Arc<Watch>, SystemTime, SystemTime) -> std::future::Ready<Option<SystemTime>> + use<>
    {
        let runs = Arc::clone(runs);
        move |watch, now, _next| {
            assert_eq!(now, clock.now(), "a check starts at the time it is started");
            lock(&runs).push((watch.id.clone(), now));
            std::future::ready(None)
        }
    }

    fn ran(runs: &Runs) -> Vec<(String, u64)> {
        lock(runs)
            .iter()
            .map(|(id, at)| (id.clone(), at.duration_since(origin()).unwrap().as_secs()))
            .collect()
    }

    /// Channels the scheduler's `run` listens on, kept open by the test.
    struct Inputs {
        reloads: mpsc::UnboundedSender<Vec<Arc<Watch>>>,
        check_now: mpsc::UnboundedSender<String>,
        shutdown: CancellationToken,
        tasks: TaskTracker,
    }

    fn spawn<F, Fut>(scheduler: Scheduler<F>, tasks: TaskTracker) -> Inputs
    where
        F: Fn(Arc<Watch>, SystemTime, SystemTime) -> Fut + Send + 'static,
        Fut: Future<Output = Option<SystemTime>> + Send + 'static,
    {
        let (reloads, reloads_rx) = mpsc::unbounded_channel();
        let (check_now, check_now_rx) = mpsc::unbounded_channel();
        let shutdown = CancellationToken::new();
        tasks.spawn(scheduler.run(reloads_rx, check_now_rx, shutdown.clone()));
        Inputs {
            reloads,
            check_now,
            shutdown,
            tasks,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_runs_when_due_and_not_before_then_on_its_schedule() {
        let clock = Clock::tokio(origin());
        let runs = Runs::default();
        let stored = HashMap::from([("later".to_owned(), origin() + secs(30))]);
        let tasks = TaskTracker::new();
        let scheduler = Scheduler::new(
            [watch("later", every(60, 0)), watch("new", every(600, 0))],
            &stored,
            4,
            clock,
            tasks.clone(),
            recording(&runs, clock),
        );
        let _inputs = spawn(scheduler, tasks);
        tokio::time::sleep(secs(29)).await;
        assert_eq!(
            ran(&runs),
            [("new".to_owned(), 0)],
            "a new watch runs at once"
        );
        tokio::time::sleep(secs(2)).await;
        assert_eq!(ran(&runs)[1..], [("later".to_owned(), 30)]);
        tokio::time::sleep(secs(60)).await;
        assert_eq!(
            ran(&runs)[2..],
            [("later".to_owned(), 90)],
            "then every minute from the run"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_reload_keeps_unchanged_schedules_and_adds_and_removes_watches() {
        let clock = Clock::tokio(origin());
        let runs = Runs::default();
        let stored = HashMap::from([
            ("same".to_owned(), origin() + secs(500)),
            ("faster".to_owned(), origin() + secs(3000)),
            ("gone".to_owned(), origin() + secs(100)),
        ]);
        let mut scheduler = Scheduler::new(
            [
                watch("same", every(3600, 0)),
                watch("faster", every(3600, 0)),
                watch("gone", every(3600, 0)),
            ],
            &stored,
            4,
            clock,
            TaskTracker::new(),
            recording(&runs, clock),
        );
        tokio::time::sleep(secs(10)).await;
        let before = scheduler.replace([
            watch("same", every(3600, 0)),
            watch("faster", every(60, 0)),
            watch("added", every(3600, 0)),
        ]);
        assert_eq!(before, 3);
        assert_eq!(scheduler.len(), 3);
        assert_eq!(scheduler.next_run_of("same"), Some(origin() + secs(500)));
        assert_eq!(
            scheduler.next_run_of("faster"),
            Some(origin() + secs(70)),
            "a changed schedule counts from the reload"
        );
        assert_eq!(scheduler.next_run_of("added"), Some(origin() + secs(10)));
        assert_eq!(scheduler.next_run_of("gone"), None);
        assert_eq!(scheduler.start_due(), 1);
        tokio::task::yield_now().await;
        assert_eq!(ran(&runs), [("added".to_owned(), 10)]);
    }

    #[tokio::test(start_paused = true)]
    async fn check_now_runs_at_once_and_a_reload_through_run_is_applied() {
        let clock = Clock::tokio(origin());
        let runs = Runs::default();
        let stored = HashMap::from([("hourly".to_owned(), origin() + secs(3600))]);
        let tasks = TaskTracker::new();
        let scheduler = Scheduler::new(
            [watch("hourly", every(3600, 0))],
            &stored,
            4,
            clock,
            tasks.clone(),
            recording(&runs, clock),
        );
        let inputs = spawn(scheduler, tasks);
        tokio::time::sleep(secs(5)).await;
        assert!(ran(&runs).is_empty());
        inputs.check_now.send("hourly".to_owned()).unwrap();
        inputs.check_now.send("unknown".to_owned()).unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(ran(&runs), [("hourly".to_owned(), 5)]);
        // Its next run counts from the check: an hour after 5 s, not at 3600 s.
        inputs
            .reloads
            .send(vec![
                watch("hourly", every(3600, 0)),
                watch("fresh", every(7200, 0)),
            ])
            .unwrap();
        tokio::time::sleep(secs(3590)).await;
        assert_eq!(ran(&runs)[1..], [("fresh".to_owned(), 5)]);
        tokio::time::sleep(secs(20)).await;
        assert_eq!(ran(&runs)[2..], [("hourly".to_owned(), 3605)]);
    }

    /// A check that waits for its gate.
    type Gated = std::pin::Pin<Box<dyn Future<Output = Option<SystemTime>> + Send>>;

    /// A runner whose checks each wait for a permit of `gate`.
    fn gated(
        runs: &Runs,
        gate: &Arc<Semaphore>,
    ) -> impl Fn(Arc<Watch>, SystemTime, SystemTime) -> Gated + use<> {
        let runs = Arc::clone(runs);
        let gate = Arc::clone(gate);
        move |watch, now, _next| {
            lock(&runs).push((watch.id.clone(), now));
            let gate = Arc::clone(&gate);
            Box::pin(async move {
                gate.acquire().await.unwrap().forget();
                None
            })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_watch_in_flight_is_not_started_twice_and_slots_are_limited() {
        let clock = Clock::tokio(origin());
        let runs = Runs::default();
        let gate = Arc::new(Semaphore::new(0));
        let tasks = TaskTracker::new();
        let scheduler = Scheduler::new(
            [watch("a", every(1, 0)), watch("b", every(1, 0))],
            &HashMap::new(),
            1,
            clock,
            tasks.clone(),
            gated(&runs, &gate),
        );
        let inputs = spawn(scheduler, tasks);
        tokio::time::sleep(secs(10)).await;
        // Both due every second, one slot: `a` holds it, `b` waits.
        assert_eq!(ran(&runs), [("a".to_owned(), 0)]);
        inputs.check_now.send("a".to_owned()).unwrap();
        inputs
            .reloads
            .send(vec![watch("a", every(2, 0)), watch("b", every(1, 0))])
            .unwrap();
        tokio::time::sleep(secs(10)).await;
        assert_eq!(
            ran(&runs).len(),
            1,
            "neither check-now nor a reload restarts it"
        );
        gate.add_permits(1);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(
            ran(&runs)[1..],
            [("b".to_owned(), 20)],
            "the slot went to b"
        );
        gate.add_permits(1);
        tokio::time::sleep(Duration::from_millis(1)).await;
        // `a` went back at the next run computed when it started (1 s).
        assert_eq!(ran(&runs)[2..], [("a".to_owned(), 20)]);
        inputs.shutdown.cancel();
        gate.add_permits(100);
        inputs.tasks.close();
        inputs.tasks.wait().await;
    }

    #[tokio::test(start_paused = true)]
    async fn cron_and_jitter_set_the_next_run_and_a_runner_may_move_it() {
        let clock = Clock::tokio(origin());
        let hourly = Schedule::Cron {
            expr: "0 * * * *".to_owned(),
            cron: parse_cron("0 * * * *").unwrap(),
            tz: chrono_tz::UTC,
            jitter: Duration::ZERO,
        };
        let moved = origin() + secs(7 * 3600);
        let mut scheduler = Scheduler::new(
            [
                watch("cron", hourly),
                watch("jitter", every(60, 10)),
                watch("moved", every(60, 0)),
            ],
            &HashMap::new(),
            4,
            clock,
            TaskTracker::new(),
            move |watch: Arc<Watch>, _now, _next| {
                std::future::ready((watch.id == "moved").then_some(moved))
            },
        );
        assert_eq!(scheduler.start_due(), 3);
        for _ in 0..3 {
            let done = scheduler.done_rx.recv().await.unwrap();
            scheduler.finished(done);
        }
        // 10:20 -> the top of the next hour.
        assert_eq!(
            scheduler.next_run_of("cron"),
            Some(origin() + secs(40 * 60))
        );
        let jittered = scheduler.next_run_of("jitter").unwrap();
        assert!(
            (origin() + secs(60)..=origin() + secs(70)).contains(&jittered),
            "{jittered:?}"
        );
        assert_eq!(scheduler.next_run_of("moved"), Some(moved));
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_stops_scheduling_and_the_tracker_waits_for_the_check_in_flight() {
        let clock = Clock::tokio(origin());
        let runs = Runs::default();
        let gate = Arc::new(Semaphore::new(0));
        let tasks = TaskTracker::new();
        let scheduler = Scheduler::new(
            [watch("slow", every(1, 0))],
            &HashMap::new(),
            4,
            clock,
            tasks.clone(),
            gated(&runs, &gate),
        );
        let inputs = spawn(scheduler, tasks);
        tokio::time::sleep(secs(1)).await;
        inputs.shutdown.cancel();
        inputs.tasks.close();
        tokio::time::sleep(secs(5)).await;
        assert!(!inputs.tasks.is_empty(), "the check is still running");
        gate.add_permits(1);
        inputs.tasks.wait().await;
        assert_eq!(ran(&runs).len(), 1, "nothing started after the shutdown");
    }

    async fn explode(_: Arc<Watch>, _: SystemTime, _: SystemTime) -> Option<SystemTime> {
        panic!("a check panicked")
    }

    #[tokio::test]
    async fn a_check_that_panics_frees_its_slot_and_keeps_its_watch() {
        let mut scheduler = Scheduler::new(
            [watch("boom", every(60, 0))],
            &HashMap::new(),
            1,
            Clock::Wall,
            TaskTracker::new(),
            explode,
        );
        assert_eq!(scheduler.start_due(), 1);
        let done = scheduler.done_rx.recv().await.unwrap();
        scheduler.finished(done);
        assert!(!scheduler.is_running("boom"));
        assert!(scheduler.next_run_of("boom").is_some());
    }
}
