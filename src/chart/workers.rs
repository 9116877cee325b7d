//! Helper threads for rendering (template parsing, manifest heads): how
//! many are worth running, starting them so that they run at once on
//! another core, and keeping them for the next job.
//!
//! A new thread is queued on the core of the thread that starts it, and
//! Linux moves it to an idle core only at the next load-balancing tick or
//! when the parent blocks: measured here (2-core KVM guest, Linux 6.18),
//! a thread started beside a busy parent often began 1-3 ms later, on
//! the parent's core, after the render it was meant to share had ended.
//! [`spawn`] yields once after starting the thread, so that a child queued
//! on the parent's core runs at once, and the child's first act is to move
//! itself off that core by narrowing its CPU affinity (then widening it
//! again: a running thread stays where it is). The parent is back on its
//! core some 20-40 µs after the spawn, the child running on another; a
//! child the kernel placed elsewhere in the first place skips the move.
//!
//! Still, each start costs the starting thread 60-130 µs (the child's set-up
//! runs on its core before the move), and a render wants a helper twice:
//! to parse templates, then to parse manifest heads. So a helper that has
//! finished its job waits for the next one ([`spawn_detached`]), and only
//! a job that finds no helper free starts a thread.
//!
//! Waking a sleeping thread has the same trouble: it runs 15-25 µs later,
//! and the kernel often queues it on the waker's busy core. A helper that
//! runs out of work watches for more for a while before it sleeps
//! ([`spin_for_change`]).

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError, mpsc};
use std::thread::{Builder, JoinHandle, Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

/// At most this many threads in all; parsing stops scaling well before.
const MAX_THREADS: usize = 8;

/// Threads worth running on this machine (the cores this process may run
/// on, capped).
pub(crate) fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| allowed_cpus().unwrap_or(1).min(MAX_THREADS))
}

/// The CPUs in this process's affinity mask, as Go's `runtime.NumCPU`
/// counts them. Not `std::thread::available_parallelism`: on Linux that
/// also looks for a cgroup CPU quota, reading `/proc/self/cgroup`,
/// `/proc/self/mountinfo` and the quota files, some 140 µs, a few percent
/// of rendering a typical chart; and a quota limits CPU time over 100 ms
/// periods, not how many threads can usefully run for a few milliseconds.
fn allowed_cpus() -> Option<usize> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Ok(set) = rustix::thread::sched_getaffinity(None) {
        return usize::try_from(set.count()).ok().filter(|&n| n > 0);
    }
    std::thread::available_parallelism().ok().map(|n| n.get())
}

/// Start `f` on a new thread with a stack of `stack` bytes, running beside
/// this one from the start (see the module comment).
fn spawn<T, F>(stack: usize, f: F) -> std::io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let handle = Builder::new().stack_size(stack).spawn(off_this_core(f))?;
    std::thread::yield_now();
    Ok(handle)
}

/// `f`, run first moving off the core of the thread calling this (see
/// [`leave_cpu`]).
fn off_this_core<T>(f: impl FnOnce() -> T) -> impl FnOnce() -> T {
    let parent = current_cpu();
    move || {
        leave_cpu(parent);
        f()
    }
}

/// What a thread started by [`spawn_detached`] hands back.
pub(crate) struct Pending<T>(mpsc::Receiver<std::thread::Result<T>>);

impl<T> Pending<T> {
    /// Wait for the thread's result; `Err` carries its panic, as
    /// [`JoinHandle::join`] would.
    pub(crate) fn wait(self) -> std::thread::Result<T> {
        self.0
            .recv()
            .unwrap_or_else(|_| Err(Box::new("helper thread ended without a result")))
    }
}

/// How long a thread out of work watches for more before it sleeps.
const SPIN: Duration = Duration::from_micros(200);

/// Watch `posts` (a count another thread raises with each piece of work it
/// hands over) for a change from `seen`, for at most [`SPIN`]; whether it
/// changed. A thread that then finds nothing sleeps on a condition
/// variable, and only a sleeping thread is woken: on this VM waking one
/// cost the waker a system call and the sleeper 15-25 µs before it ran
/// (an idle core is halted), while the hand-overs of a render come every
/// few to a hundred microseconds, on cores that would idle anyway.
pub(crate) fn spin_for_change(posts: &AtomicU64, seen: u64) -> bool {
    let since = Instant::now();
    loop {
        if posts.load(Ordering::Acquire) != seen {
            return true;
        }
        if since.elapsed() >= SPIN {
            return false;
        }
        std::hint::spin_loop();
    }
}

/// Stack of every helper thread, kept or scoped: the YAML loader and the
/// values code recurse per nesting level, like the main thread (which has a
/// large stack); the size is address space, not memory.
const HELPER_STACK: usize = 256 << 20;

/// A job for a helper thread.
type Job = Box<dyn FnOnce() + Send>;

/// The helper threads kept between jobs, and the jobs waiting for them.
#[derive(Default)]
struct Helpers {
    state: Mutex<HelperState>,
    job_queued: Condvar,
}

#[derive(Default)]
struct HelperState {
    jobs: VecDeque<Job>,
    /// Helpers without a job and not yet promised one: each queued job is
    /// promised to a free helper, or to the busy ones for when their jobs
    /// end ([`spawn_detached_next`]), or else a new thread starts for it.
    free: usize,
    /// Helpers running a job.
    busy: usize,
    /// Jobs promised to busy helpers (possibly several to one): a helper
    /// whose job ends takes one of these before it counts as free.
    owed: usize,
}

impl Helpers {
    /// The process's helpers.
    fn get() -> &'static Helpers {
        static HELPERS: OnceLock<Helpers> = OnceLock::new();
        HELPERS.get_or_init(Helpers::default)
    }

    /// [`spawn_detached`] with these helpers; with `after_busy`, a job
    /// that finds no helper free waits for a busy one rather than starting
    /// a thread.
    fn run<T, F>(&'static self, after_busy: bool, f: F) -> std::io::Result<Pending<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            // Caught to be handed over; the panic hook has already reported it.
            let result = std::panic::catch_unwind(AssertUnwindSafe(f));
            // Free again before the result is seen, so that a job the caller
            // queues next finds this helper rather than starting another.
            let mut st = self.lock();
            st.busy -= 1;
            if st.owed > 0 {
                st.owed -= 1;
            } else {
                st.free += 1;
            }
            drop(st);
            let _ = tx.send(result);
        });
        let mut st = self.lock();
        let promised = if st.free > 0 {
            st.free -= 1;
            true
        } else if after_busy && st.busy > 0 {
            st.owed += 1;
            true
        } else {
            false
        };
        if promised {
            st.jobs.push_back(job);
            drop(st);
            self.job_queued.notify_one();
            return Ok(Pending(rx));
        }
        st.busy += 1;
        drop(st);
        // The handle is dropped at once: the thread is detached.
        if let Err(e) = spawn(HELPER_STACK, move || {
            job();
            self.serve()
        }) {
            self.lock().busy -= 1;
            return Err(e);
        }
        Ok(Pending(rx))
    }

    fn lock(&self) -> MutexGuard<'_, HelperState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run the jobs queued for this thread, forever.
    fn serve(&self) -> ! {
        loop {
            let job = {
                let mut st = self.lock();
                loop {
                    if let Some(job) = st.jobs.pop_front() {
                        st.busy += 1;
                        break job;
                    }
                    st = self
                        .job_queued
                        .wait(st)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            };
            job();
        }
    }
}

/// Run `f` on a helper thread, beside this one from the start (see the
/// module comment), and hand its result over through [`Pending::wait`]:
/// on a helper that is free, else on a new thread that stays for later
/// jobs. Helpers are never joined: joining a thread makes the joining
/// thread release its stack, and glibc unmaps stacks beyond its 40 MB
/// cache, tens of microseconds on the caller's path.
pub(crate) fn spawn_detached<T, F>(f: F) -> std::io::Result<Pending<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Helpers::get().run(false, f)
}

/// Whether a helper thread has been started: a job handed to one then
/// costs the caller a lock and a queue entry, not a thread start.
pub(crate) fn helpers_started() -> bool {
    let st = Helpers::get().lock();
    st.busy + st.free > 0
}

/// [`spawn_detached`], except that with no helper free but one busy, `f`
/// waits for the busy helpers rather than starting a thread, and runs on
/// the first to end its job once the jobs queued before `f` are taken:
/// for work that is not urgent while the other cores are busy anyway
/// (a schema check and manifest heads while templates are still being
/// parsed), where another thread would only take turns on the same cores.
pub(crate) fn spawn_detached_next<T, F>(f: F) -> std::io::Result<Pending<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Helpers::get().run(true, f)
}

/// [`spawn`] for a thread of `scope`.
pub(crate) fn spawn_scoped<'scope, T, F>(
    scope: &'scope Scope<'scope, '_>,
    f: F,
) -> std::io::Result<ScopedJoinHandle<'scope, T>>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    let handle = Builder::new()
        .stack_size(HELPER_STACK)
        .spawn_scoped(scope, off_this_core(f))?;
    std::thread::yield_now();
    Ok(handle)
}

/// The core this thread runs on (`None` where that cannot be asked).
fn current_cpu() -> Option<usize> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    return Some(rustix::thread::sched_getcpu());
    #[allow(unreachable_code)]
    None
}

/// Move this thread off core `parent` if it runs there and may run
/// elsewhere. Failing that (a seccomp filter, a one-core mask) it stays:
/// the scheduler moves it in time anyway. The mask is read afresh (the one
/// inherited from the parent), so a long-running process whose mask was
/// changed meanwhile gets that one back.
fn leave_cpu(parent: Option<usize>) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let Some(parent) = parent else { return };
        let Ok(all) = rustix::thread::sched_getaffinity(None) else {
            return;
        };
        if all.count() < 2 || !all.is_set(parent) || current_cpu() != Some(parent) {
            return;
        }
        let mut others = all;
        others.unset(parent);
        if rustix::thread::sched_setaffinity(None, &others).is_ok() {
            let _ = rustix::thread::sched_setaffinity(None, &all);
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = parent;
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
    use super::*;

    /// Each way of starting a thread runs it and returns its result; the
    /// child narrowed its mask only for the move: it ends with the
    /// process's mask again, so the scheduler may place it anywhere.
    #[test]
    fn threads_run_and_keep_the_whole_affinity_mask() {
        let whole = cpus_now();
        let joined = spawn(1 << 20, || (21 * 2, cpus_now())).unwrap().join();
        let scoped = std::thread::scope(|s| {
            let h = spawn_scoped(s, || (6 * 7, cpus_now())).unwrap();
            h.join().unwrap()
        });
        let detached = spawn_detached(|| (40 + 2, cpus_now())).unwrap().wait();
        for got in [joined.unwrap(), scoped, detached.unwrap()] {
            assert_eq!(got, (42, whole));
        }
    }

    /// A change made by another thread is seen; with none the watch ends
    /// after its time.
    #[test]
    fn a_watch_sees_a_change_or_gives_up() {
        let posts = std::sync::Arc::new(AtomicU64::new(7));
        let since = Instant::now();
        assert!(!spin_for_change(&posts, 7));
        assert!(since.elapsed() >= SPIN);
        assert!(spin_for_change(&posts, 6));
        let other = posts.clone();
        let bump = std::thread::spawn(move || other.store(8, Ordering::Release));
        let mut seen = false;
        while !seen {
            seen = spin_for_change(&posts, 7);
        }
        bump.join().unwrap();
    }

    #[test]
    fn detached_threads_hand_back_panics() {
        let p = spawn_detached(|| -> u8 { panic!("boom") }).unwrap();
        let panic = p.wait().unwrap_err();
        assert_eq!(panic.downcast_ref::<&str>(), Some(&"boom"));
    }

    /// A helper that finished a job (even by panicking) takes the next one:
    /// no thread is started for it. A job queued while every helper is busy
    /// does not wait for them: it gets a thread of its own.
    #[test]
    fn a_free_helper_takes_the_next_job() {
        let (helpers, first) = helpers_with_one(false);
        assert!(
            helpers
                .run(false, || panic!("boom"))
                .unwrap()
                .wait()
                .is_err()
        );
        assert_eq!(helpers.run(false, id).unwrap().wait().unwrap(), first);

        let (release, hold) = mpsc::channel::<()>();
        let busy = helpers.run(false, move || hold.recv().is_ok()).unwrap();
        // Done while the other job still blocks.
        assert_ne!(helpers.run(false, id).unwrap().wait().unwrap(), id());
        release.send(()).unwrap();
        assert!(busy.wait().unwrap());
    }

    /// Jobs that may wait for a busy helper run on it once its job ends, in
    /// the order they were queued, without a thread of their own; with a
    /// helper free such a job runs there, and with none at all it starts one.
    #[test]
    fn a_job_for_the_next_helper_waits_for_a_busy_one() {
        let (helpers, first) = helpers_with_one(true);

        let (release, hold) = mpsc::channel::<()>();
        let (started, running) = mpsc::channel::<()>();
        let busy = helpers
            .run(false, move || {
                started.send(()).unwrap();
                hold.recv().is_ok()
            })
            .unwrap();
        running.recv().unwrap();
        let next = helpers.run(true, id).unwrap();
        let (order_tx, order) = mpsc::channel();
        let (tx1, tx2) = (order_tx.clone(), order_tx);
        let second = helpers
            .run(true, move || tx1.send((1, id())).unwrap())
            .unwrap();
        let third = helpers
            .run(true, move || tx2.send((2, id())).unwrap())
            .unwrap();
        assert_eq!(
            helpers.lock().owed,
            3,
            "all three queued for the one busy helper"
        );
        release.send(()).unwrap();
        assert!(busy.wait().unwrap());
        assert_eq!(next.wait().unwrap(), first);
        second.wait().unwrap();
        third.wait().unwrap();
        assert_eq!(
            order.try_iter().collect::<Vec<_>>(),
            [(1, first), (2, first)]
        );
        let st = helpers.lock();
        assert_eq!((st.free, st.busy, st.owed), (1, 0, 0));
    }

    /// The running thread's id.
    fn id() -> std::thread::ThreadId {
        std::thread::current().id()
    }

    /// A set of helpers of its own whose first job (`after_busy` as given)
    /// started a thread, now free; and that thread's id.
    fn helpers_with_one(after_busy: bool) -> (&'static Helpers, std::thread::ThreadId) {
        let helpers: &'static Helpers = Box::leak(Box::default());
        let first = helpers.run(after_busy, id).unwrap().wait().unwrap();
        assert_ne!(first, id());
        (helpers, first)
    }

    /// How many CPUs this thread may run on.
    fn cpus_now() -> Option<u32> {
        rustix::thread::sched_getaffinity(None)
            .ok()
            .map(|m| m.count())
    }
}
